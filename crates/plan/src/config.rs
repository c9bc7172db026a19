//! Experiment configuration: one TOML file per experiment, any key overridable with
//! `--set section.key=value`, validated before MPI starts.
//!
//! Every error names the field it is about (`scheme.s = 9: must be less than scheme.workers =
//! 9`), in one line, so `outrun check` and every rank of a run can print it as is.

use serde::{Deserialize, Serialize};

/// A configuration error: the field it concerns (dotted path) and what is wrong.
#[derive(Clone, Debug, PartialEq)]
pub struct ConfigError {
    pub field: String,
    pub message: String,
}

impl ConfigError {
    pub fn new(field: impl Into<String>, message: impl Into<String>) -> Self {
        ConfigError { field: field.into(), message: message.into() }
    }
}

impl std::fmt::Display for ConfigError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        if self.field.is_empty() {
            write!(f, "{}", self.message)
        } else if self.message.starts_with("= ") {
            write!(f, "{} {}", self.field, self.message)
        } else {
            write!(f, "{}: {}", self.field, self.message)
        }
    }
}

impl std::error::Error for ConfigError {}

fn err<T>(field: &str, message: impl Into<String>) -> Result<T, ConfigError> {
    Err(ConfigError::new(field, message))
}

/// The whole experiment.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Config {
    pub run: RunConfig,
    pub data: DataConfig,
    pub model: ModelConfig,
    pub scheme: SchemeConfig,
    #[serde(default)]
    pub stragglers: StragglerConfig,
    #[serde(default)]
    pub timing: TimingConfig,
    #[serde(default)]
    pub engine: EngineConfig,
    #[serde(default)]
    pub network: NetworkConfig,
}

/// `[run]`
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct RunConfig {
    /// Name of the run; the run directory is `<out_dir>/<name>-<timestamp>`.
    pub name: String,
    /// Seed of every random choice (data, codes, stragglers).
    #[serde(default = "default_seed")]
    pub seed: u64,
    /// Gradient-descent iterations.
    pub iterations: u64,
    /// Parent directory of run directories.
    #[serde(default = "default_out_dir")]
    pub out_dir: String,
    /// Seconds an iteration may wait for the results it needs before the run fails.
    #[serde(default = "default_deadline")]
    pub deadline: f64,
    /// Write θ after every iteration to `trajectory.csv` (for small models and tests).
    #[serde(default)]
    pub trajectory: bool,
}

fn default_seed() -> u64 {
    1
}
fn default_out_dir() -> String {
    "runs".into()
}
fn default_deadline() -> f64 {
    60.0
}

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

/// `[data]`
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct DataConfig {
    pub kind: DataKind,
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
    pub loss: Loss,
    pub lr: f64,
    #[serde(default)]
    pub l2: f64,
    #[serde(default)]
    pub schedule: Schedule,
    #[serde(default = "default_c")]
    pub c: f64,
}

fn default_c() -> f64 {
    1.0
}

/// Aggregation scheme.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize, Hash)]
#[serde(rename_all = "kebab-case")]
pub enum SchemeKind {
    /// Uncoded master–worker: the master waits for all N workers.
    Umw,
    /// Ignore stragglers (backup workers): the master uses the first N − s results, rescaled.
    Ignore,
    /// Gradient coding, Tandon et al.'s cyclic repetition code.
    GcCyclic,
    /// Gradient coding, fractional repetition ((s+1) | N).
    GcFrac,
    /// Our ring all-reduce among the workers (reduce-scatter + all-gather).
    Rar,
    /// The same training with `MPI_Allreduce`, as the reference.
    Allreduce,
    /// CodedReduce on an (n, L)-regular tree.
    Cr,
}

impl SchemeKind {
    pub fn name(self) -> &'static str {
        match self {
            SchemeKind::Umw => "umw",
            SchemeKind::Ignore => "ignore",
            SchemeKind::GcCyclic => "gc-cyclic",
            SchemeKind::GcFrac => "gc-frac",
            SchemeKind::Rar => "rar",
            SchemeKind::Allreduce => "allreduce",
            SchemeKind::Cr => "cr",
        }
    }

    /// Schemes whose workers form a ring with no master.
    pub fn is_ring(self) -> bool {
        matches!(self, SchemeKind::Rar | SchemeKind::Allreduce)
    }
}

/// Gradient code used inside each sibling group of a CodedReduce tree.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize, Default)]
#[serde(rename_all = "kebab-case")]
pub enum CodeChoice {
    #[default]
    Cyclic,
    Frac,
}

/// `[scheme]`
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct SchemeConfig {
    pub kind: SchemeKind,
    /// Number of workers N (for `cr` it follows from n and layers and may be omitted).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub workers: Option<usize>,
    /// Stragglers tolerated (per parent for `cr`); results ignored for `ignore`.
    #[serde(default)]
    pub s: usize,
    /// Random draws of a cyclic code; the best-conditioned one is used.
    #[serde(default = "default_draws")]
    pub draws: usize,
    /// `cr`: children per parent.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub n: Option<usize>,
    /// `cr`: layers of workers below the master.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub layers: Option<usize>,
    /// `cr`: code of each sibling group.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub code: Option<CodeChoice>,
}

fn default_draws() -> usize {
    10
}

/// Straggler and fault models.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize, Default)]
#[serde(rename_all = "kebab-case")]
pub enum StragglerKind {
    #[default]
    None,
    /// Listed workers add `factor` × their compute time (thesis: 3× sleep).
    Fixed,
    /// Each worker straggles with probability p (per iteration, or once for the run).
    Bernoulli,
    /// Compute time a·load + Exp(rate μ/load) (CR paper eq. 6); needs modelled timing.
    ShiftedExp,
    /// Compute time a·load + (load/μ)·W, W ~ Weibull(shape, 1) (HCMM); needs modelled timing.
    Weibull,
    /// Listed workers never answer from `from_iteration` on.
    FailStop,
}

/// When a Bernoulli straggler is drawn.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize, Default)]
#[serde(rename_all = "kebab-case")]
pub enum BernoulliMode {
    #[default]
    PerIteration,
    Once,
}

/// `[stragglers]`
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize, Default)]
#[serde(deny_unknown_fields)]
pub struct StragglerConfig {
    #[serde(default)]
    pub model: StragglerKind,
    /// Worker ids (1-based) for `fixed` and `fail-stop`.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub workers: Vec<usize>,
    /// Extra delay as a multiple of the compute time (`fixed`, `bernoulli`); default 3.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub factor: Option<f64>,
    /// Straggling probability (`bernoulli`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub p: Option<f64>,
    /// `bernoulli`: draw per iteration or once for the run.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub mode: Option<BernoulliMode>,
    /// `shifted-exp`: seconds per data point (the shift).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub a: Option<f64>,
    /// `shifted-exp`, `weibull`: rate parameter μ in points per second (tail scale load/μ).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub mu: Option<f64>,
    /// `weibull`: shape k of the tail (1 is exponential).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub shape: Option<f64>,
    /// First iteration (0-based) at which the model applies (`fixed`, `bernoulli`, `fail-stop`).
    #[serde(default)]
    pub from_iteration: u64,
}

/// How compute time is obtained.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize, Default)]
#[serde(rename_all = "kebab-case")]
pub enum ComputeMode {
    /// The measured time of the real gradient computation.
    #[default]
    Real,
    /// A modelled time: the worker computes the real gradient, then sleeps until the modelled
    /// finish time (for many ranks on few cores).
    Modelled,
}

/// `[timing]`
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct TimingConfig {
    #[serde(default)]
    pub compute: ComputeMode,
    /// Modelled mode, models without their own time law: seconds of compute per data point.
    #[serde(default = "default_timing_a")]
    pub a: f64,
}

fn default_timing_a() -> f64 {
    1e-5
}

impl Default for TimingConfig {
    fn default() -> Self {
        TimingConfig { compute: ComputeMode::Real, a: default_timing_a() }
    }
}

/// `[engine]`: knobs of the MPI engine.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct EngineConfig {
    /// Longest sleep (µs) between polls of the network while waiting; the poll backs off from 0
    /// to this. Smaller is more precise and burns more CPU.
    #[serde(default = "default_poll_us")]
    pub poll_us: u64,
}

fn default_poll_us() -> u64 {
    200
}

impl Default for EngineConfig {
    fn default() -> Self {
        EngineConfig { poll_us: default_poll_us() }
    }
}

/// A link rate: bytes per second, or a string with a unit (`"100mbit"`, `"1gbit"`, `"500kbit"`).
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(untagged)]
pub enum Rate {
    BytesPerSecond(f64),
    Text(String),
}

impl Rate {
    /// Bytes per second, or an error naming the problem.
    pub fn bytes_per_second(&self) -> Result<f64, String> {
        let v = match self {
            Rate::BytesPerSecond(v) => *v,
            Rate::Text(t) => {
                let t = t.trim();
                let split = t.find(|c: char| c.is_ascii_alphabetic()).unwrap_or(t.len());
                let (num, unit) = t.split_at(split);
                let n: f64 = num.trim().parse().map_err(|_| format!("`{t}` is not a rate like 100mbit"))?;
                n * match unit {
                    "bit" => 1.0 / 8.0,
                    "kbit" => 1e3 / 8.0,
                    "mbit" => 1e6 / 8.0,
                    "gbit" => 1e9 / 8.0,
                    _ => return Err(format!("`{t}`: use a number of bytes per second or kbit, mbit, gbit")),
                }
            }
        };
        if v.is_finite() && v > 0.0 {
            Ok(v)
        } else {
            Err(format!("{v}: must be a positive rate"))
        }
    }
}

/// `[network]`: the network model of the simulator (`outrun simulate`, `outrun tune`). Real runs
/// ignore it: their network is the real one (or the emulated cluster's shaped links).
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct NetworkConfig {
    /// Every node's NIC rate in each direction (bytes/s or e.g. "100mbit"); absent: infinite.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub bandwidth: Option<Rate>,
    /// Seconds added to every message.
    #[serde(default)]
    pub latency: f64,
    /// Per-rank NIC rates overriding `bandwidth` (one per rank).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub node_bandwidth: Vec<Rate>,
    /// Whether model messages down the tree cost time (the papers' model counts only uploads).
    #[serde(default = "default_true")]
    pub downlink: bool,
    /// Whether a parent that has what it needs cancels the late uploads still queued for it
    /// (the papers' model); by default they cross the link, as in the MPI engine.
    #[serde(default)]
    pub cancel_late: bool,
}

fn default_true() -> bool {
    true
}

impl Default for NetworkConfig {
    fn default() -> Self {
        NetworkConfig { bandwidth: None, latency: 0.0, node_bandwidth: vec![], downlink: true, cancel_late: false }
    }
}

/// Parse a TOML document, apply `key=value` overrides, deserialize and validate.
pub fn parse(text: &str, overrides: &[String]) -> Result<Config, ConfigError> {
    let mut table: toml::Table = toml::from_str(text).map_err(|e| {
        let line = e.span().map(|s| text[..s.start].matches('\n').count() + 1);
        let msg = e.message().replace('\n', "; ");
        match line {
            Some(l) => ConfigError::new("", format!("TOML syntax error at line {l}: {msg}")),
            None => ConfigError::new("", format!("TOML syntax error: {msg}")),
        }
    })?;
    for o in overrides {
        apply_override(&mut table, o)?;
    }
    let cfg: Config = serde_path_to_error::deserialize(toml::Value::Table(table)).map_err(|e| {
        let path = e.path().to_string();
        let path = if path == "." { String::new() } else { path };
        ConfigError::new(path, e.inner().message().replace('\n', "; "))
    })?;
    cfg.validate()?;
    Ok(cfg)
}

/// Apply one `section.key=value` override; the value is read as a TOML value when it parses
/// as one (number, boolean, array, quoted string) and as a bare string otherwise. An empty
/// value (`section.key=`) removes the key.
pub fn apply_override(table: &mut toml::Table, spec: &str) -> Result<(), ConfigError> {
    let Some((key, raw)) = spec.split_once('=') else {
        return err("--set", format!("`{spec}` is not of the form section.key=value"));
    };
    let key = key.trim();
    let path: Vec<&str> = key.split('.').collect();
    if path.len() < 2 || path.iter().any(|p| p.is_empty()) {
        return err("--set", format!("`{key}` is not of the form section.key"));
    }
    let last = path[path.len() - 1];
    if raw.trim().is_empty() {
        let mut cur = &mut *table;
        for sect in &path[..path.len() - 1] {
            match cur.get_mut(*sect) {
                Some(toml::Value::Table(t)) => cur = t,
                _ => return Ok(()),
            }
        }
        cur.remove(last);
        return Ok(());
    }
    let value = match toml::from_str::<toml::Table>(&format!("v = {}", raw.trim())) {
        Ok(mut t) => t.remove("v").expect("parsed key"),
        Err(_) => toml::Value::String(raw.trim().to_string()),
    };
    let mut cur = table;
    for sect in &path[..path.len() - 1] {
        let entry = cur.entry(sect.to_string()).or_insert_with(|| toml::Value::Table(Default::default()));
        cur = match entry {
            toml::Value::Table(t) => t,
            _ => return err(key, "cannot set a key inside a value that is not a table"),
        };
    }
    cur.insert(last.to_string(), value);
    Ok(())
}

impl Config {
    /// The resolved configuration as TOML (written to every run directory).
    pub fn to_toml(&self) -> String {
        toml::to_string(self).expect("config serializes")
    }

    /// Number of workers N.
    pub fn workers(&self) -> usize {
        match self.scheme.kind {
            SchemeKind::Cr => {
                let n = self.scheme.n.unwrap_or(0);
                (1..=self.scheme.layers.unwrap_or(0)).map(|l| n.pow(l as u32)).sum()
            }
            _ => self.scheme.workers.unwrap_or(0),
        }
    }

    /// Number of MPI ranks a run needs: the workers, plus a master unless the workers form a
    /// ring.
    pub fn ranks(&self) -> usize {
        self.workers() + usize::from(!self.scheme.kind.is_ring())
    }

    /// Cross-field checks. Data-dependent checks (a file's sample count) happen when the data
    /// is read.
    pub fn validate(&self) -> Result<(), ConfigError> {
        let r = &self.run;
        if r.name.is_empty() || !r.name.chars().all(|c| c.is_ascii_alphanumeric() || "-_.".contains(c)) {
            return err("run.name", format!("`{}` must be non-empty and use only letters, digits, '-', '_', '.'", r.name));
        }
        if r.iterations == 0 {
            return err("run.iterations", "must be at least 1");
        }
        if !(r.deadline.is_finite() && r.deadline > 0.0) {
            return err("run.deadline", format!("= {}: must be a positive number of seconds", r.deadline));
        }
        self.validate_data()?;
        self.validate_model()?;
        self.validate_scheme()?;
        self.validate_stragglers()?;
        if !(self.timing.a.is_finite() && self.timing.a >= 0.0) {
            return err("timing.a", format!("= {}: must be ≥ 0 seconds per point", self.timing.a));
        }
        self.validate_network()
    }

    fn validate_network(&self) -> Result<(), ConfigError> {
        let n = &self.network;
        if let Some(b) = &n.bandwidth {
            b.bytes_per_second().map_err(|e| ConfigError::new("network.bandwidth", e))?;
        }
        if !(n.latency.is_finite() && n.latency >= 0.0) {
            return err("network.latency", format!("= {}: must be ≥ 0 seconds", n.latency));
        }
        if !n.node_bandwidth.is_empty() && n.node_bandwidth.len() != self.ranks() {
            return err("network.node_bandwidth", format!("has {} entries but the run has {} ranks", n.node_bandwidth.len(), self.ranks()));
        }
        for b in &n.node_bandwidth {
            b.bytes_per_second().map_err(|e| ConfigError::new("network.node_bandwidth", e))?;
        }
        Ok(())
    }

    fn validate_data(&self) -> Result<(), ConfigError> {
        let d = &self.data;
        match d.kind {
            DataKind::LinearSynthetic | DataKind::LogisticSynthetic => {
                if d.path.is_some() {
                    return err("data.path", format!("is only used with data.kind = \"libsvm\", not {:?}", kind_name(d.kind)));
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
                if d.path.as_deref().map_or(true, str::is_empty) {
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
            let w = self.workers();
            if w > 0 && samples < w {
                return err("data.samples", format!("= {samples} is smaller than the {w} workers: some would hold no data"));
            }
        }
        Ok(())
    }

    fn validate_model(&self) -> Result<(), ConfigError> {
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

    fn validate_scheme(&self) -> Result<(), ConfigError> {
        let sc = &self.scheme;
        let k = sc.kind;
        if k == SchemeKind::Cr {
            return self.validate_cr();
        }
        for (name, v) in [("scheme.n", sc.n.is_some()), ("scheme.layers", sc.layers.is_some()), ("scheme.code", sc.code.is_some())] {
            if v {
                return err(name, format!("is only used by scheme.kind = \"cr\", not \"{}\"", k.name()));
            }
        }
        let n = match sc.workers {
            None => return err("scheme.workers", "missing: the number of workers N"),
            Some(0) => return err("scheme.workers", "must be at least 1"),
            Some(n) => n,
        };
        if k.is_ring() && n < 2 {
            return err("scheme.workers", format!("= {n}: a ring needs at least 2 workers"));
        }
        match k {
            SchemeKind::Umw | SchemeKind::Rar | SchemeKind::Allreduce if sc.s != 0 => err(
                "scheme.s",
                format!("= {}: \"{}\" tolerates no stragglers (it waits for every worker); remove scheme.s or use ignore / gc-cyclic", sc.s, k.name()),
            ),
            _ if sc.s >= n => err("scheme.s", format!("= {}: must be less than scheme.workers = {n}", sc.s)),
            SchemeKind::GcFrac if n % (sc.s + 1) != 0 => err(
                "scheme.s",
                format!("= {}: gc-frac needs s+1 = {} to divide scheme.workers = {n}; pick s+1 among the divisors of {n}, or use gc-cyclic", sc.s, sc.s + 1),
            ),
            SchemeKind::GcCyclic if sc.draws == 0 => err("scheme.draws", "must be at least 1"),
            _ => Ok(()),
        }
    }

    fn validate_cr(&self) -> Result<(), ConfigError> {
        let sc = &self.scheme;
        let n = match sc.n {
            None => return err("scheme.n", "missing: cr needs the number of children per parent n"),
            Some(n) if n < 2 => return err("scheme.n", format!("= {n}: must be at least 2")),
            Some(n) => n,
        };
        let layers = match sc.layers {
            None => return err("scheme.layers", "missing: cr needs the number of layers L"),
            Some(0) => return err("scheme.layers", "must be at least 1"),
            Some(l) if l > 8 => return err("scheme.layers", format!("= {l}: at most 8 layers are supported")),
            Some(l) => l,
        };
        if sc.s >= n {
            return err("scheme.s", format!("= {}: must be less than scheme.n = {n} (s stragglers per parent)", sc.s));
        }
        let total = self.workers();
        if let Some(w) = sc.workers {
            if w != total {
                return err("scheme.workers", format!("= {w}, but an ({n},{layers}) tree has {total} workers; omit scheme.workers or set it to {total}"));
            }
        }
        if sc.code == Some(CodeChoice::Frac) && n % (sc.s + 1) != 0 {
            return err("scheme.code", format!("= \"frac\" needs s+1 = {} to divide scheme.n = {n}; use code = \"cyclic\"", sc.s + 1));
        }
        if sc.draws == 0 {
            return err("scheme.draws", "must be at least 1");
        }
        Ok(())
    }

    fn validate_stragglers(&self) -> Result<(), ConfigError> {
        let st = &self.stragglers;
        let n = self.workers();
        let used: &[&str] = match st.model {
            StragglerKind::None => &[],
            StragglerKind::Fixed => &["workers", "factor", "from_iteration"],
            StragglerKind::Bernoulli => &["p", "factor", "mode", "from_iteration"],
            StragglerKind::ShiftedExp => &["a", "mu"],
            StragglerKind::Weibull => &["a", "mu", "shape"],
            StragglerKind::FailStop => &["workers", "from_iteration"],
        };
        let given = [
            ("workers", !st.workers.is_empty()),
            ("factor", st.factor.is_some()),
            ("p", st.p.is_some()),
            ("mode", st.mode.is_some()),
            ("a", st.a.is_some()),
            ("mu", st.mu.is_some()),
            ("shape", st.shape.is_some()),
            ("from_iteration", st.from_iteration != 0),
        ];
        let model = model_name(st.model);
        // `model = "none"` is an off switch: other parameters may stay for later.
        for (name, is_given) in given {
            if is_given && st.model != StragglerKind::None && !used.contains(&name) {
                return err(&format!("stragglers.{name}"), format!("is not used by stragglers.model = \"{model}\""));
            }
        }
        if matches!(st.model, StragglerKind::Fixed | StragglerKind::FailStop) {
            if st.workers.is_empty() {
                return err("stragglers.workers", format!("missing: model \"{model}\" needs the list of worker ids (1..={n})"));
            }
            if let Some(&w) = st.workers.iter().find(|&&w| w == 0 || w > n) {
                return err("stragglers.workers", format!("contains {w}, but workers are numbered 1..={n}"));
            }
        }
        if let Some(f) = st.factor {
            if !(f.is_finite() && f >= 0.0) {
                return err("stragglers.factor", format!("= {f}: must be ≥ 0"));
            }
        }
        match st.model {
            StragglerKind::Bernoulli => match st.p {
                None => return err("stragglers.p", "missing: model \"bernoulli\" needs a probability p"),
                Some(p) if !(0.0..=1.0).contains(&p) => return err("stragglers.p", format!("= {p}: must be in [0, 1]")),
                _ => {}
            },
            StragglerKind::ShiftedExp | StragglerKind::Weibull => {
                if self.timing.compute != ComputeMode::Modelled {
                    return err("timing.compute", format!("must be \"modelled\" with stragglers.model = \"{model}\" (the model replaces the measured compute time)"));
                }
                match st.a {
                    None => return err("stragglers.a", format!("missing: {model} needs the shift a (seconds per point)")),
                    Some(a) if !(a.is_finite() && a >= 0.0) => return err("stragglers.a", format!("= {a}: must be ≥ 0")),
                    _ => {}
                }
                match st.mu {
                    None => return err("stragglers.mu", format!("missing: {model} needs the rate μ (points per second)")),
                    Some(m) if !(m.is_finite() && m > 0.0) => return err("stragglers.mu", format!("= {m}: must be positive")),
                    _ => {}
                }
                if st.model == StragglerKind::Weibull {
                    match st.shape {
                        None => return err("stragglers.shape", "missing: weibull needs the shape k of the tail"),
                        Some(k) if !(k.is_finite() && k > 0.0) => return err("stragglers.shape", format!("= {k}: must be positive")),
                        _ => {}
                    }
                }
            }
            StragglerKind::FailStop if self.scheme.kind.is_ring() => {
                return err(
                    "stragglers.model",
                    format!("= \"fail-stop\" cannot run with scheme.kind = \"{}\": a ring needs every worker in every iteration (it tolerates no failures) and would stall; use a master-worker scheme", self.scheme.kind.name()),
                );
            }
            _ => {}
        }
        Ok(())
    }
}

fn kind_name(k: DataKind) -> &'static str {
    match k {
        DataKind::LinearSynthetic => "linear-synthetic",
        DataKind::LogisticSynthetic => "logistic-synthetic",
        DataKind::Libsvm => "libsvm",
    }
}

/// The config spelling of a straggler model.
pub fn model_name(k: StragglerKind) -> &'static str {
    match k {
        StragglerKind::None => "none",
        StragglerKind::Fixed => "fixed",
        StragglerKind::Bernoulli => "bernoulli",
        StragglerKind::ShiftedExp => "shifted-exp",
        StragglerKind::Weibull => "weibull",
        StragglerKind::FailStop => "fail-stop",
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const BASE: &str = r#"
[run]
name = "t"
iterations = 5
[data]
kind = "linear-synthetic"
samples = 100
features = 4
[model]
loss = "least-squares"
lr = 0.1
[scheme]
kind = "gc-cyclic"
workers = 6
s = 2
"#;

    fn parse_with(sets: &[&str]) -> Result<Config, ConfigError> {
        parse(BASE, &sets.iter().map(|s| s.to_string()).collect::<Vec<_>>())
    }

    #[test]
    fn parses_defaults_and_ranks() {
        let c = parse_with(&[]).unwrap();
        assert_eq!(c.run.out_dir, "runs");
        assert_eq!(c.run.seed, 1);
        assert_eq!(c.ranks(), 7);
        assert_eq!(c.stragglers.model, StragglerKind::None);
        let ring = parse_with(&["scheme.kind=rar", "scheme.s=0"]).unwrap();
        assert_eq!(ring.ranks(), 6);
        // round trip through the resolved TOML
        assert_eq!(parse(&c.to_toml(), &[]).unwrap(), c);
    }

    #[test]
    fn overrides_are_typed() {
        let c = parse_with(&["scheme.s=1", "run.out_dir=/tmp/x y", "model.lr=1e-3", "run.trajectory=true"]).unwrap();
        assert_eq!(c.scheme.s, 1);
        assert_eq!(c.run.out_dir, "/tmp/x y");
        assert_eq!(c.model.lr, 1e-3);
        assert!(c.run.trajectory);
        let c = parse_with(&["stragglers.model=fixed", "stragglers.workers=[1, 3]"]).unwrap();
        assert_eq!(c.stragglers.workers, vec![1, 3]);
        // an empty value removes a key; model = none keeps other parameters without complaint
        let c = parse_with(&["stragglers.model=fixed", "stragglers.workers=[1]", "stragglers.factor=2", "stragglers.model=fail-stop", "stragglers.factor="]).unwrap();
        assert_eq!(c.stragglers.factor, None);
        assert!(parse_with(&["stragglers.model=none", "stragglers.factor=2"]).is_ok());
        assert_eq!(parse_with(&["run.trajectory="]).unwrap().run.trajectory, false);
    }

    fn field_of(sets: &[&str]) -> String {
        parse_with(sets).unwrap_err().field
    }

    #[test]
    fn errors_name_the_field() {
        assert_eq!(field_of(&["scheme.s=6"]), "scheme.s");
        assert_eq!(field_of(&["scheme.sx=1"]), "scheme.sx");
        assert_eq!(field_of(&["scheme.kind=gc-frac", "scheme.s=3"]), "scheme.s");
        assert_eq!(field_of(&["scheme.kind=umw"]), "scheme.s");
        assert_eq!(field_of(&["model.lr=-1"]), "model.lr");
        assert_eq!(field_of(&["run.iterations=0"]), "run.iterations");
        assert_eq!(field_of(&["data.kind=libsvm"]), "data.path");
        assert_eq!(field_of(&["stragglers.model=shifted-exp", "stragglers.a=1e-4", "stragglers.mu=1e4"]), "timing.compute");
        assert_eq!(field_of(&["stragglers.model=fixed", "stragglers.workers=[7]"]), "stragglers.workers");
        assert_eq!(field_of(&["stragglers.model=fixed", "stragglers.workers=[1]", "stragglers.p=0.5"]), "stragglers.p");
        assert_eq!(field_of(&["stragglers.model=fail-stop", "stragglers.workers=[1]", "scheme.kind=rar", "scheme.s=0"]), "stragglers.model");
        assert_eq!(field_of(&["bogus.key=1"]), "bogus");
        assert_eq!(field_of(&["network.bandwidth=fast"]), "network.bandwidth");
        assert_eq!(field_of(&["network.node_bandwidth=[1, 2]"]), "network.node_bandwidth");
        assert_eq!(field_of(&["timing.compute=modelled", "stragglers.model=weibull", "stragglers.a=1e-4", "stragglers.mu=1e4"]), "stragglers.shape");
        assert_eq!(field_of(&["data.samples=3"]), "data.samples");
        let e = parse_with(&["scheme.s=6"]).unwrap_err();
        assert_eq!(e.to_string(), "scheme.s = 6: must be less than scheme.workers = 6");
        assert!(!e.to_string().contains('\n'));
    }

    #[test]
    fn rates_parse_with_units() {
        assert_eq!(Rate::Text("100mbit".into()).bytes_per_second(), Ok(12.5e6));
        assert_eq!(Rate::Text("1gbit".into()).bytes_per_second(), Ok(125e6));
        assert_eq!(Rate::BytesPerSecond(5.0).bytes_per_second(), Ok(5.0));
        assert!(Rate::Text("12 parsecs".into()).bytes_per_second().is_err());
        let c = parse_with(&["network.bandwidth=\"20mbit\"", "network.latency=1e-4"]).unwrap();
        assert_eq!(c.network.bandwidth.unwrap().bytes_per_second(), Ok(2.5e6));
        assert!(c.network.downlink);
    }

    #[test]
    fn syntax_errors_give_the_line() {
        let e = parse("[run]\nname = \n", &[]).unwrap_err();
        assert!(e.message.contains("line 2"), "{e}");
        assert!(!e.to_string().contains('\n'));
        assert_eq!(parse_with(&["noequals"]).unwrap_err().field, "--set");
    }

    #[test]
    fn cr_workers_follow_from_the_tree() {
        let c = parse_with(&["scheme.kind=cr", "scheme.n=3", "scheme.layers=2", "scheme.s=1"]).unwrap_err();
        // scheme.workers = 6 is inconsistent with a (3,2) tree of 12 workers
        assert_eq!(c.field, "scheme.workers");
        let mut t: toml::Table = toml::from_str(BASE).unwrap();
        t["scheme"].as_table_mut().unwrap().remove("workers");
        let text = toml::to_string(&t).unwrap();
        let c = parse(&text, &["scheme.kind=cr".into(), "scheme.n=3".into(), "scheme.layers=2".into(), "scheme.s=1".into()]).unwrap();
        assert_eq!(c.workers(), 12);
        assert_eq!(c.ranks(), 13);
    }
}
