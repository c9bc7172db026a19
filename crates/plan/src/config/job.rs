//! `[job]`: what is computed. Gradient descent (the default, `kind = "gd"`) reads `[data]` and
//! `[model]`.

use serde::{Deserialize, Serialize};

use super::tagged::de;
use super::{err, section, ConfigError};

/// Source of the data set.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum DataKind {
    /// x ~ N(0, I_p), θ* ~ N(0, I_p), y = xᵀθ* + N(0, noise²) (CR paper eq. 10).
    LinearSynthetic,
    /// x ~ N(0, I_p), θ* ~ N(0, I_p/p), y ~ Bernoulli(σ(xᵀθ*)).
    LogisticSynthetic,
    /// A LIBSVM-format file (`label index:value ...`, 1-based indices).
    Libsvm,
}

impl DataKind {
    /// The config spelling.
    pub fn name(self) -> &'static str {
        match self {
            DataKind::LinearSynthetic => "linear-synthetic",
            DataKind::LogisticSynthetic => "logistic-synthetic",
            DataKind::Libsvm => "libsvm",
        }
    }
}

/// `[data]`
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct DataConfig {
    /// Synthetic generator or file format.
    pub kind: DataKind,
    /// Path of the data file (`libsvm`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub path: Option<String>,
    /// Number of samples d (synthetic), or the first d lines of the file (libsvm, optional).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub samples: Option<usize>,
    /// Number of features p (synthetic), or the dense width (libsvm, optional: default is the
    /// largest index in the file).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub features: Option<usize>,
    /// Standard deviation of the label noise of `linear-synthetic`.
    #[serde(default = "default_noise")]
    pub noise: f64,
}

fn default_noise() -> f64 {
    1.0
}

/// Loss function.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum Loss {
    /// ½(xᵀθ − y)²
    LeastSquares,
    /// log(1 + e^{xᵀθ}) − y·xᵀθ, labels in {0, 1}
    Logistic,
}

/// Step-size schedule.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize, Default)]
#[serde(rename_all = "kebab-case")]
pub enum Schedule {
    /// η_t = lr
    #[default]
    Constant,
    /// η_t = lr / (t + c)
    Inverse,
}

/// `[model]`: θ ← θ − η_t·(g/d + λθ), θ₀ = 0, g the gradient *sum* over the d samples.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct ModelConfig {
    /// The loss.
    pub loss: Loss,
    /// Learning rate (η_t's scale).
    pub lr: f64,
    /// L2 regularisation λ.
    #[serde(default)]
    pub l2: f64,
    /// Step-size schedule.
    #[serde(default)]
    pub schedule: Schedule,
    /// Offset c of the inverse schedule.
    #[serde(default = "default_c")]
    pub c: f64,
}

fn default_c() -> f64 {
    1.0
}

/// Gradient descent of a linear model: `[data]` and `[model]`.
#[derive(Clone, Debug, PartialEq)]
pub struct GdConfig {
    /// `[data]`
    pub data: DataConfig,
    /// `[model]`
    pub model: ModelConfig,
}

/// `[job]`: what is computed, with the sections the job reads.
#[derive(Clone, Debug, PartialEq)]
pub enum JobConfig {
    /// `kind = "gd"` (the default): synchronous gradient descent.
    Gd(GdConfig),
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct JobSection {
    #[serde(default = "default_job")]
    kind: String,
}

fn default_job() -> String {
    "gd".into()
}

impl JobConfig {
    /// Build from the top-level sections.
    pub(super) fn from_sections(t: &toml::Table) -> Result<Self, ConfigError> {
        let job: JobSection = match section(t, "job")? {
            None => JobSection { kind: default_job() },
            Some(s) => de(toml::Value::Table(s), "job")?,
        };
        match job.kind.as_str() {
            "gd" | "gradient-descent" => {
                let data = match section(t, "data")? {
                    None => return err("data", "missing: gradient descent needs a [data] section (kind, samples, features)"),
                    Some(s) => de(toml::Value::Table(s), "data")?,
                };
                let model = match section(t, "model")? {
                    None => return err("model", "missing: gradient descent needs a [model] section (loss, lr)"),
                    Some(s) => de(toml::Value::Table(s), "model")?,
                };
                Ok(JobConfig::Gd(GdConfig { data, model }))
            }
            other => err("job.kind", format!("= \"{other}\" is not known; use \"gd\"")),
        }
    }

    /// Write this job's sections into a config table.
    pub(super) fn to_sections(&self, t: &mut toml::Table) {
        match self {
            JobConfig::Gd(g) => {
                let mut job = toml::Table::new();
                job.insert("kind".into(), toml::Value::String("gd".into()));
                t.insert("job".into(), toml::Value::Table(job));
                t.insert("data".into(), toml::Value::try_from(&g.data).expect("serializes"));
                t.insert("model".into(), toml::Value::try_from(&g.model).expect("serializes"));
            }
        }
    }

    /// The config spelling of the job.
    pub fn name(&self) -> &'static str {
        match self {
            JobConfig::Gd(_) => "gd",
        }
    }

    pub(super) fn validate(&self, workers: usize) -> Result<(), ConfigError> {
        match self {
            JobConfig::Gd(g) => g.validate(workers),
        }
    }
}

impl GdConfig {
    fn validate(&self, workers: usize) -> Result<(), ConfigError> {
        let d = &self.data;
        match d.kind {
            DataKind::LinearSynthetic | DataKind::LogisticSynthetic => {
                if d.path.is_some() {
                    return err("data.path", format!("is only used with data.kind = \"libsvm\", not \"{}\"", d.kind.name()));
                }
                match d.samples {
                    None => return err("data.samples", "missing: synthetic data needs a number of samples"),
                    Some(0) => return err("data.samples", "must be at least 1"),
                    _ => {}
                }
                match d.features {
                    None => return err("data.features", "missing: synthetic data needs a number of features"),
                    Some(0) => return err("data.features", "must be at least 1"),
                    _ => {}
                }
            }
            DataKind::Libsvm => {
                if d.path.as_deref().is_none_or(str::is_empty) {
                    return err("data.path", "missing: data.kind = \"libsvm\" needs the path of a LIBSVM file");
                }
                if d.samples == Some(0) || d.features == Some(0) {
                    return err(if d.samples == Some(0) { "data.samples" } else { "data.features" }, "must be at least 1");
                }
            }
        }
        if !(d.noise.is_finite() && d.noise >= 0.0) {
            return err("data.noise", format!("= {}: must be ≥ 0", d.noise));
        }
        if d.kind == DataKind::LinearSynthetic && self.model.loss == Loss::Logistic {
            return err("model.loss", "= \"logistic\" needs 0/1 labels, but data.kind = \"linear-synthetic\" has real-valued labels");
        }
        if let Some(samples) = d.samples {
            if workers > 0 && samples < workers {
                return err("data.samples", format!("= {samples} is smaller than the {workers} workers: some would hold no data"));
            }
        }
        let m = &self.model;
        if !(m.lr.is_finite() && m.lr > 0.0) {
            return err("model.lr", format!("= {}: must be a positive number", m.lr));
        }
        if !(m.l2.is_finite() && m.l2 >= 0.0) {
            return err("model.l2", format!("= {}: must be ≥ 0", m.l2));
        }
        if !(m.c.is_finite() && m.c > 0.0) {
            return err("model.c", format!("= {}: must be positive (η_t = lr/(t + c))", m.c));
        }
        Ok(())
    }
}
