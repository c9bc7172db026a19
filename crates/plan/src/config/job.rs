//! `[job]`: what is computed. Gradient descent (the default, `kind = "gd"`) reads `[data]` and
//! `[model]`; the matrix–vector product (`kind = "matvec"`, optionally `power = true`) reads
//! `[matrix]` and `[vector]`.

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

/// Entries of a generated matrix.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize, Default)]
#[serde(rename_all = "kebab-case")]
pub enum MatrixDist {
    /// Uniform in [0, 1) (a non-negative matrix: power iteration converges fast to its
    /// Perron root).
    #[default]
    Uniform,
    /// Standard normal.
    Normal,
}

/// `[matrix]`: the r × m matrix A, generated from `run.seed` or read from a Matrix Market file.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct MatrixConfig {
    /// Rows r (generated).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub rows: Option<usize>,
    /// Columns m (generated).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub cols: Option<usize>,
    /// A Matrix Market file (`%%MatrixMarket matrix coordinate|array real general|symmetric`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub path: Option<String>,
    /// Generate a symmetric matrix (needs rows = cols).
    #[serde(default)]
    pub symmetric: bool,
    /// Distribution of generated entries.
    #[serde(default)]
    pub dist: MatrixDist,
}

/// `[vector]`: x, read from a file (one value per line) or generated from `run.seed` (uniform in
/// [0, 1)).
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize, Default)]
#[serde(deny_unknown_fields)]
pub struct VectorConfig {
    /// A file with one value per line.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub path: Option<String>,
}

/// Matrix–vector products y = A·x: `[matrix]`, `[vector]`, and power iteration (x ← y/‖y‖
/// every iteration) or the same x every iteration.
#[derive(Clone, Debug, PartialEq)]
pub struct MatvecConfig {
    /// `[matrix]`
    pub matrix: MatrixConfig,
    /// `[vector]`
    pub vector: VectorConfig,
    /// Power iteration.
    pub power: bool,
}

/// `[job]`: what is computed, with the sections the job reads.
#[derive(Clone, Debug, PartialEq)]
pub enum JobConfig {
    /// `kind = "gd"` (the default): synchronous gradient descent.
    Gd(GdConfig),
    /// `kind = "matvec"`: y = A·x, once per iteration (power iteration with `power = true`).
    Matvec(MatvecConfig),
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct JobSection {
    #[serde(default = "default_job")]
    kind: String,
    #[serde(default)]
    power: Option<bool>,
}

fn default_job() -> String {
    "gd".into()
}

impl JobConfig {
    /// Build from the top-level sections.
    pub(super) fn from_sections(t: &toml::Table) -> Result<Self, ConfigError> {
        let job: JobSection = match section(t, "job")? {
            None => JobSection { kind: default_job(), power: None },
            Some(s) => de(toml::Value::Table(s), "job")?,
        };
        let is_matvec = job.kind == "matvec";
        for (name, used) in [("data", "gradient descent"), ("model", "gradient descent"), ("matrix", "job.kind = \"matvec\""), ("vector", "job.kind = \"matvec\"")] {
            if t.contains_key(name) && (matches!(name, "matrix" | "vector") != is_matvec) && matches!(job.kind.as_str(), "gd" | "gradient-descent" | "matvec") {
                return err(name, format!("is only read by {used}, not job.kind = \"{}\"", job.kind));
            }
        }
        match job.kind.as_str() {
            "matvec" => {
                let matrix = match section(t, "matrix")? {
                    None => return err("matrix", "missing: a mat-vec job needs a [matrix] section (rows and cols, or path)"),
                    Some(s) => de(toml::Value::Table(s), "matrix")?,
                };
                let vector = match section(t, "vector")? {
                    None => VectorConfig::default(),
                    Some(s) => de(toml::Value::Table(s), "vector")?,
                };
                Ok(JobConfig::Matvec(MatvecConfig { matrix, vector, power: job.power.unwrap_or(false) }))
            }
            _ if job.power.is_some() => err("job.power", format!("is only used by job.kind = \"matvec\", not \"{}\"", job.kind)),
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
            other => err("job.kind", format!("= \"{other}\" is not known; use \"gd\" or \"matvec\"")),
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
            JobConfig::Matvec(m) => {
                let mut job = toml::Table::new();
                job.insert("kind".into(), toml::Value::String("matvec".into()));
                job.insert("power".into(), toml::Value::Boolean(m.power));
                t.insert("job".into(), toml::Value::Table(job));
                t.insert("matrix".into(), toml::Value::try_from(&m.matrix).expect("serializes"));
                t.insert("vector".into(), toml::Value::try_from(&m.vector).expect("serializes"));
            }
        }
    }

    /// The config spelling of the job.
    pub fn name(&self) -> &'static str {
        match self {
            JobConfig::Gd(_) => "gd",
            JobConfig::Matvec(_) => "matvec",
        }
    }

    pub(super) fn validate(&self, workers: usize) -> Result<(), ConfigError> {
        match self {
            JobConfig::Gd(g) => g.validate(workers),
            JobConfig::Matvec(m) => m.validate(workers),
        }
    }

    /// The file the final state is written to in the run directory (`theta.txt`: the model;
    /// `y.txt`: the last product).
    pub fn state_file(&self) -> &'static str {
        match self {
            JobConfig::Gd(_) => "theta.txt",
            JobConfig::Matvec(_) => "y.txt",
        }
    }
}

impl MatvecConfig {
    fn validate(&self, workers: usize) -> Result<(), ConfigError> {
        let m = &self.matrix;
        match &m.path {
            Some(p) if p.is_empty() => return err("matrix.path", "is empty"),
            Some(_) => {
                for (key, v) in [("rows", m.rows), ("cols", m.cols)] {
                    if v.is_some() {
                        return err(&format!("matrix.{key}"), "comes from the Matrix Market file's size line when matrix.path is given; remove it");
                    }
                }
                if m.symmetric {
                    return err("matrix.symmetric", "is for generated matrices; a Matrix Market file says `symmetric` in its header");
                }
            }
            None => {
                for (key, v) in [("rows", m.rows), ("cols", m.cols)] {
                    match v {
                        None => return err(&format!("matrix.{key}"), "missing: a generated matrix needs rows and cols (or give matrix.path)"),
                        Some(0) => return err(&format!("matrix.{key}"), "must be at least 1"),
                        Some(n) if n > MAX_MATRIX_SIDE => return err(&format!("matrix.{key}"), format!("= {n}: at most {MAX_MATRIX_SIDE}")),
                        _ => {}
                    }
                }
                if (m.symmetric || self.power) && m.rows != m.cols {
                    let why = if m.symmetric { "matrix.symmetric = true" } else { "power iteration (job.power = true)" };
                    return err("matrix.cols", format!("= {}: {why} needs a square matrix, but matrix.rows = {}", m.cols.unwrap_or(0), m.rows.unwrap_or(0)));
                }
                if let Some(r) = m.rows {
                    if r < workers {
                        return err("matrix.rows", format!("= {r} is smaller than the {workers} workers: some would hold no row"));
                    }
                }
            }
        }
        if self.vector.path.as_deref() == Some("") {
            return err("vector.path", "is empty");
        }
        Ok(())
    }
}

/// Largest side of a generated matrix.
pub const MAX_MATRIX_SIDE: usize = 1 << 24;

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
