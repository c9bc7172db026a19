//! `[job]`: what is computed. Gradient descent (the default, `kind = "gd"`) reads `[data]` and
//! `[model]`; the matrix–vector product (`kind = "matvec"`, optionally `power = true`) reads
//! `[matrix]` and `[vector]`; PageRank (`kind = "pagerank"`, with `damping`, `tol` and
//! `dangling`) reads `[graph]`.

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
    /// x ~ N(0, I_p), W* ~ N(0, I/p) (C × p), y = argmax_c (W*x + noise·z)_c, z ~ N(0, I_C):
    /// class labels 0..C−1 (C = `model.classes` or `model.outputs`).
    SoftmaxSynthetic,
    /// A LIBSVM-format file (`label index:value ...`, 1-based indices).
    Libsvm,
    /// IDX files (MNIST, Fashion-MNIST; plain or gzip): images at `path`, labels at
    /// `labels_path`.
    Idx,
    /// A CSV file: the label, then the features, per line (a header line is skipped).
    Csv,
}

impl DataKind {
    /// The config spelling.
    pub fn name(self) -> &'static str {
        match self {
            DataKind::LinearSynthetic => "linear-synthetic",
            DataKind::LogisticSynthetic => "logistic-synthetic",
            DataKind::SoftmaxSynthetic => "softmax-synthetic",
            DataKind::Libsvm => "libsvm",
            DataKind::Idx => "idx",
            DataKind::Csv => "csv",
        }
    }
}

/// The order of a data set's rows, which the schemes' contiguous allocations cut into parts.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize, Default)]
#[serde(rename_all = "kebab-case")]
pub enum DataOrder {
    /// As generated or as in the file (parts are IID samples of a shuffled file).
    #[default]
    File,
    /// Sorted by label (stable): each part holds few classes — non-IID data, as the thesis's
    /// federated experiments cut it.
    ByLabel,
    /// A seeded permutation (`run.seed`): parts are IID samples of a file that is sorted or
    /// grouped (by class, by time, by source).
    Shuffle,
    /// Sorted by label (stable), cut into `data.shards` near-equal blocks, the blocks in a
    /// seeded order (`run.seed`): with 2N shards each of N clients holds two random shards —
    /// the non-IID split of McMahan et al. and of the thesis's DiverseFL ablation.
    Shards,
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
    /// Evaluate θ on the held-out set every this many iterations (and after the last): the
    /// logging rank does it inside the timed loop.
    #[serde(default = "default_test_every")]
    pub test_every: u64,
    /// The rows' order (what the allocation cuts).
    #[serde(default, skip_serializing_if = "is_file_order")]
    pub order: DataOrder,
    /// `order = "shards"`: how many label-sorted blocks the rows are cut into.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub shards: Option<usize>,
    /// The labels file of `idx` data.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub labels_path: Option<String>,
    /// The held-out labels file of `idx` data.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub test_labels_path: Option<String>,
    /// Every value of `idx` data is multiplied by this (1/255 maps pixels to [0, 1]).
    #[serde(default = "default_scale")]
    pub scale: f64,
    /// A held-out LIBSVM file (logistic loss): the logging rank reports the model's accuracy on
    /// it after every iteration (`test_accuracy` in `iterations.csv` and the summary).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub test_path: Option<String>,
    /// CSV: the character between fields (default `,`; `"tab"` for a tab).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub delimiter: Option<String>,
    /// CSV: which column holds the label — a 0-based index, `"first"` (default), `"last"`, or
    /// a name from the header line.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub label_column: Option<LabelColumn>,
    /// CSV: `"auto"` maps whatever the labels are (strings, 1-based classes) to 0..C−1 in sorted
    /// order (numeric when every label is a number); `"numeric"` (default) takes them as numbers.
    #[serde(default, skip_serializing_if = "LabelValues::is_numeric")]
    pub labels: LabelValues,
    /// LIBSVM: the index of the first feature, 1 (default, the format's convention) or 0.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub index_base: Option<u8>,
    /// Standardise every feature to mean 0 and standard deviation 1 with the training rows'
    /// statistics (the held-out rows are mapped with the same ones).
    #[serde(default, skip_serializing_if = "is_false")]
    pub standardize: bool,
    /// CSV: what a feature field with no value (empty, `NA`, `N/A`, `NaN`, `null`, `?`)
    /// becomes: refused (default), 0, or the column's mean.
    #[serde(default, skip_serializing_if = "Missing::is_refuse")]
    pub missing: Missing,
    /// Hold out this fraction of the rows (drawn from `run.seed`) as the test set, when there
    /// is no held-out file.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub test_fraction: Option<f64>,
}

fn is_false(b: &bool) -> bool {
    !*b
}

/// `data.label_column`: where a CSV line's label is.
#[derive(Clone, Debug, PartialEq, Eq, Serialize)]
#[serde(untagged)]
pub enum LabelColumn {
    /// A 0-based column index.
    Index(usize),
    /// `"first"`, `"last"`, or a header's column name.
    Name(String),
}

impl<'de> Deserialize<'de> for LabelColumn {
    fn deserialize<D: serde::Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        struct Column;
        impl serde::de::Visitor<'_> for Column {
            type Value = LabelColumn;
            fn expecting(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
                f.write_str("a 0-based column index, \"first\", \"last\" or a header's column name")
            }
            fn visit_u64<E: serde::de::Error>(self, v: u64) -> Result<LabelColumn, E> {
                usize::try_from(v).map(LabelColumn::Index).map_err(|_| E::custom(format!("{v}: too large an index")))
            }
            fn visit_i64<E: serde::de::Error>(self, v: i64) -> Result<LabelColumn, E> {
                match u64::try_from(v) {
                    Ok(v) => self.visit_u64(v),
                    Err(_) => Err(E::custom(format!(
                        "= {v}: a 0-based column index, \"first\", \"last\" or a header's column name"
                    ))),
                }
            }
            fn visit_str<E: serde::de::Error>(self, v: &str) -> Result<LabelColumn, E> {
                Ok(LabelColumn::Name(v.to_string()))
            }
        }
        d.deserialize_any(Column)
    }
}

/// `data.missing`: what a CSV feature field that holds no value becomes.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize, Default)]
#[serde(rename_all = "kebab-case")]
pub enum Missing {
    /// Refused, naming the line and column.
    #[default]
    Refuse,
    /// 0.
    Zero,
    /// The column's mean over the training file's values.
    Mean,
}

impl Missing {
    fn is_refuse(&self) -> bool {
        *self == Missing::Refuse
    }
}

/// `data.labels`: how a CSV file's label values become labels.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize, Default)]
#[serde(rename_all = "kebab-case")]
pub enum LabelValues {
    /// Numbers, taken as they are.
    #[default]
    Numeric,
    /// Any values, mapped to 0..C−1 in sorted order.
    Auto,
}

impl LabelValues {
    fn is_numeric(&self) -> bool {
        *self == LabelValues::Numeric
    }
}

impl DataConfig {
    /// The first feature's index in a LIBSVM file (validated: 0 or 1).
    pub fn libsvm_index_base(&self) -> usize {
        self.index_base.map_or(1, usize::from)
    }

    /// The CSV delimiter (validated: one character).
    pub fn csv_delimiter(&self) -> char {
        match self.delimiter.as_deref() {
            None => ',',
            Some("tab") => '\t',
            Some(d) => d.chars().next().unwrap_or(','),
        }
    }
}

fn default_noise() -> f64 {
    1.0
}

fn default_scale() -> f64 {
    1.0
}

fn default_test_every() -> u64 {
    1
}

fn is_file_order(o: &DataOrder) -> bool {
    *o == DataOrder::File
}

/// Loss function.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum Loss {
    /// ½(xᵀθ − y)²
    LeastSquares,
    /// log(1 + e^{xᵀθ}) − y·xᵀθ, labels in {0, 1}
    Logistic,
    /// Cross-entropy of a softmax over `model.classes` outputs (after `model.hidden` ReLU
    /// layers), labels in 0..C−1.
    Softmax,
}

impl Loss {
    /// The config spelling.
    pub fn name(self) -> &'static str {
        match self {
            Loss::LeastSquares => "least-squares",
            Loss::Logistic => "logistic",
            Loss::Softmax => "softmax",
        }
    }
}

/// What a data set's labels must be, by the model that reads them.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Labels {
    /// Any finite number (least squares, one output).
    Real,
    /// 0 or 1 (−1 is read as 0): binary logistic regression.
    Binary,
    /// An integer class 0..C−1 (softmax, or least squares on C one-hot outputs).
    Classes(usize),
}

/// Initial parameters of a network.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum Init {
    /// Every parameter 0 (what a linear model starts from).
    Zero,
    /// W ~ N(0, 2/inputs) (He et al. 2015, for ReLU layers), b = 0.
    He,
    /// W ~ U(±√(6/(inputs + outputs))) (Glorot and Bengio 2010), b = 0.
    Xavier,
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

/// `model.optimizer`: how the decoded gradient moves θ (PyTorch's definitions).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize, Default)]
#[serde(rename_all = "kebab-case")]
pub enum OptimizerKind {
    /// SGD, with `model.momentum` and `model.nesterov` (torch.optim.SGD).
    #[default]
    Sgd,
    /// Adam: `model.l2` is added to the gradient (torch.optim.Adam's weight_decay).
    Adam,
    /// AdamW: `model.weight_decay` shrinks θ before the step, decoupled from the gradient
    /// (torch.optim.AdamW).
    Adamw,
}

impl OptimizerKind {
    /// The config spelling.
    pub fn name(self) -> &'static str {
        match self {
            OptimizerKind::Sgd => "sgd",
            OptimizerKind::Adam => "adam",
            OptimizerKind::Adamw => "adamw",
        }
    }

    fn is_sgd(&self) -> bool {
        *self == OptimizerKind::Sgd
    }
}

/// Adam's defaults (torch.optim.Adam and AdamW).
pub(crate) const ADAM_BETA1: f64 = 0.9;
/// β₂'s default.
pub(crate) const ADAM_BETA2: f64 = 0.999;
/// ε's default.
pub(crate) const ADAM_EPS: f64 = 1e-8;
/// AdamW's default decoupled weight decay (torch.optim.AdamW).
pub(crate) const ADAMW_WEIGHT_DECAY: f64 = 0.01;

/// `[model]`: θ ← θ − η_t·(g/b + λθ) (with momentum: through the velocity), g the gradient
/// *sum* over the b samples of the iteration (every sample, b = d, in full batch).
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
    /// Classes C of a softmax model.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub classes: Option<usize>,
    /// Outputs C of a least-squares model (θ is p × C, labels one-hot); 1 when absent.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub outputs: Option<usize>,
    /// Widths of a softmax model's ReLU hidden layers, input side first (empty: softmax
    /// regression).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub hidden: Vec<usize>,
    /// Initial parameters (default: zero without hidden layers, He with).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub init: Option<Init>,
    /// A file of initial parameters, one per line, in the model's layout (overrides `init`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub init_path: Option<String>,
    /// Samples per iteration (mini-batch SGD); every sample when absent.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub batch: Option<usize>,
    /// Momentum μ (0: plain gradient descent).
    #[serde(default)]
    pub momentum: f64,
    /// Nesterov's momentum instead of the heavy ball.
    #[serde(default)]
    pub nesterov: bool,
    /// Iterations at which η is multiplied by `decay` (step decay).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub decay_at: Vec<u64>,
    /// Factor of each step decay.
    #[serde(default = "default_decay")]
    pub decay: f64,
    /// Iterations of linear warm-up: η_t scaled by (t + 1)/warmup while t < warmup.
    #[serde(default)]
    pub warmup: u64,
    /// The optimizer: sgd (default), adam or adamw.
    #[serde(default, skip_serializing_if = "OptimizerKind::is_sgd")]
    pub optimizer: OptimizerKind,
    /// Adam's β₁ (default 0.9).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub beta1: Option<f64>,
    /// Adam's β₂ (default 0.999).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub beta2: Option<f64>,
    /// Adam's ε (default 1e-8).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub eps: Option<f64>,
    /// AdamW's decoupled weight decay (default 0.01).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub weight_decay: Option<f64>,
}

fn default_c() -> f64 {
    1.0
}

fn default_decay() -> f64 {
    0.1
}

impl ModelConfig {
    /// A linear model of `loss` at learning rate `lr`, every other key at its default.
    pub fn linear(loss: Loss, lr: f64) -> Self {
        ModelConfig {
            loss,
            lr,
            l2: 0.0,
            schedule: Schedule::Constant,
            c: 1.0,
            classes: None,
            outputs: None,
            hidden: vec![],
            init: None,
            init_path: None,
            batch: None,
            momentum: 0.0,
            nesterov: false,
            decay_at: vec![],
            decay: default_decay(),
            warmup: 0,
            optimizer: OptimizerKind::Sgd,
            beta1: None,
            beta2: None,
            eps: None,
            weight_decay: None,
        }
    }

    /// Adam's (β₁, β₂, ε), defaults filled in.
    pub fn adam(&self) -> (f64, f64, f64) {
        (self.beta1.unwrap_or(ADAM_BETA1), self.beta2.unwrap_or(ADAM_BETA2), self.eps.unwrap_or(ADAM_EPS))
    }

    /// AdamW's decoupled weight decay (0 for the other optimizers).
    pub fn decoupled_decay(&self) -> f64 {
        match self.optimizer {
            OptimizerKind::Adamw => self.weight_decay.unwrap_or(ADAMW_WEIGHT_DECAY),
            _ => 0.0,
        }
    }

    /// What the labels must be.
    pub fn labels(&self) -> Labels {
        match (self.loss, self.classes, self.outputs) {
            (Loss::Softmax, c, _) => Labels::Classes(c.unwrap_or(0)),
            (Loss::LeastSquares, _, Some(c)) if c > 1 => Labels::Classes(c),
            (Loss::LeastSquares, _, _) => Labels::Real,
            (Loss::Logistic, _, _) => Labels::Binary,
        }
    }

    /// Classes of the labels, when they are classes (softmax, or least squares on C outputs).
    pub fn classes(&self) -> Option<usize> {
        match self.labels() {
            Labels::Classes(c) => Some(c),
            Labels::Real | Labels::Binary => None,
        }
    }
}

/// A feature map applied to every row before the model sees it.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum FeatureKind {
    /// Random Fourier features (Rahimi and Recht 2007) of the RBF kernel
    /// exp(−‖x − x'‖²/(2σ²)): x ↦ √(2/q)·cos(xΩ + δ), Ω ~ N(0, σ⁻²) (p × q), δ ~ U[0, 2π).
    Rff,
}

/// `[features]`: a seeded feature map (every rank draws the same one).
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct FeatureConfig {
    /// The map.
    pub kind: FeatureKind,
    /// Features out, q.
    pub q: usize,
    /// The kernel's width σ.
    pub sigma: f64,
    /// Seed of Ω and δ (default: `run.seed`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub seed: Option<u64>,
}

/// What a training job (gradient descent, federated learning) trains on and with: `[data]`,
/// `[model]` and optionally `[features]`; the model is a built-in network, or the user's Python
/// module (`job.kind = "python"`: `job.module`).
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct GdConfig {
    /// `[data]`
    pub data: DataConfig,
    /// `[model]`
    pub model: ModelConfig,
    /// `[features]`
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub features: Option<FeatureConfig>,
    /// The model is the user's Python module (`job.kind = "python"`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub python: Option<PythonConfig>,
}

/// `[job] kind = "fl"`: federated learning of a training job's model by rounds of local SGD.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct FlConfig {
    /// The data and the model (gradient descent's sections).
    pub train: GdConfig,
    /// The rounds' local steps and the clients sampled.
    pub local: LocalConfig,
}

/// `[job] kind = "python"`: gradient descent whose gradients come from the user's module
/// (`outrun-python` has its protocol); `[data]` and `[model]` as for `gd`, where `model.loss`
/// only says how the labels are read (real values, 0/1, or `classes` class indices).
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct PythonConfig {
    /// The module's file (relative to the config).
    pub module: String,
    /// `[job.options]`: the module's own options, given to its `init` as a dict.
    #[serde(default, skip_serializing_if = "toml::Table::is_empty")]
    pub options: toml::Table,
}

/// `[job] kind = "fl"`: federated learning. Every round each client starts from the server's θ,
/// takes `local_steps` SGD steps on batches of `local_batch` of its own rows and uploads
/// Δ = θ − θ_local; the scheme turns the uploads into the server's step θ ← θ − Δ̄.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct LocalConfig {
    /// Local SGD steps E per round.
    pub local_steps: u64,
    /// Fraction of its rows a client's local batch holds (1: full-batch local steps).
    pub local_batch: f64,
    /// Clients sampled per round from `run.seed` (None: every client).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub clients_per_round: Option<usize>,
}

impl LocalConfig {
    fn validate(&self, model: &ModelConfig, workers: usize) -> Result<(), ConfigError> {
        if let Some(c) = self.clients_per_round.filter(|&c| c == 0 || c > workers) {
            return err(
                "job.clients_per_round",
                format!("= {c}: a round samples 1 to scheme.workers = {workers} clients"),
            );
        }
        if self.local_steps == 0 {
            return err("job.local_steps", "must be at least 1 (E local SGD steps per round)");
        }
        if !(self.local_batch > 0.0 && self.local_batch <= 1.0) {
            return err(
                "job.local_batch",
                format!("= {}: the fraction of a client's rows in a local batch must be in (0, 1]", self.local_batch),
            );
        }
        if model.momentum != 0.0 {
            return err("model.momentum", "federated clients take plain SGD steps: remove model.momentum");
        }
        if model.optimizer != OptimizerKind::Sgd {
            return err(
                "model.optimizer",
                format!(
                    "= \"{}\": federated clients take plain SGD steps (the server averages their models)",
                    model.optimizer.name()
                ),
            );
        }
        if model.batch.is_some() {
            return err(
                "model.batch",
                "a federated job's batches are job.local_batch (a fraction of each client's rows): remove model.batch",
            );
        }
        Ok(())
    }
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
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct MatvecConfig {
    /// `[matrix]`
    pub matrix: MatrixConfig,
    /// `[vector]`
    pub vector: VectorConfig,
    /// Power iteration.
    pub power: bool,
}

/// A generated graph's model.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum GraphKind {
    /// Erdős–Rényi G(n, p) from the run's ChaCha stream.
    Er,
    /// The note's portable Erdős–Rényi (SplitMix64, one draw per pair: the note's test tables).
    DetEr,
    /// Chung–Lu power law: expected degrees Pareto(γ) (x ≥ 1), edge {i, j} with probability
    /// min(1, d_i d_j / Σd).
    PowerLaw,
    /// Stochastic block model: two clusters (n1 and n − n1 vertices), p inside, q across.
    Sbm,
    /// Random bipartite: two sides (n1 and n − n1), each cross pair with probability q.
    Bipartite,
}

impl GraphKind {
    /// The config spelling.
    pub fn name(self) -> &'static str {
        match self {
            GraphKind::Er => "er",
            GraphKind::DetEr => "det-er",
            GraphKind::PowerLaw => "power-law",
            GraphKind::Sbm => "sbm",
            GraphKind::Bipartite => "bipartite",
        }
    }
}

/// `[graph]`: an edge-list file (`path`) or a generated graph (`kind`, `n`, and the model's
/// parameters).
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize, Default)]
#[serde(deny_unknown_fields)]
pub struct GraphConfig {
    /// A SNAP-style edge list: one `a b` pair per line (tabs or spaces; `#` or `%` comments;
    /// arbitrary non-negative integer ids; further columns ignored).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub path: Option<String>,
    /// The generator.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub kind: Option<GraphKind>,
    /// Vertices (generated graphs).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub n: Option<usize>,
    /// First cluster or side (sbm, bipartite; default n/2).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub n1: Option<usize>,
    /// Edge probability (er, det-er; inside a cluster for sbm).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub p: Option<f64>,
    /// Edge probability across clusters or sides (sbm, bipartite).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub q: Option<f64>,
    /// Power-law exponent γ > 2.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub gamma: Option<f64>,
    /// Seed of a generated graph (default `run.seed`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub seed: Option<u64>,
    /// Generated graphs draw self-loops too (each with the pair's probability).
    #[serde(default)]
    pub self_loops: bool,
    /// The file's edges are directed (a b: a sends its rank to b); otherwise undirected.
    #[serde(default)]
    pub directed: bool,
    /// Relabel the vertices by a seeded permutation before allocating them (A_C assumes ids
    /// carry no structure: note §5.8).
    #[serde(default)]
    pub permute: bool,
}

/// Most vertices of a graph (ids are 32-bit inside the runtime).
pub const MAX_GRAPH_VERTICES: usize = 1 << 31;

impl GraphConfig {
    fn validate(&self, servers: usize) -> Result<(), ConfigError> {
        let gen_keys = [
            ("n", self.n.is_some()),
            ("n1", self.n1.is_some()),
            ("p", self.p.is_some()),
            ("q", self.q.is_some()),
            ("gamma", self.gamma.is_some()),
            ("seed", self.seed.is_some()),
            ("self_loops", self.self_loops),
        ];
        match (&self.path, self.kind) {
            (Some(_), Some(k)) => {
                return err(
                    "graph.kind",
                    format!("= \"{}\" generates a graph, but graph.path names a file; keep one", k.name()),
                )
            }
            (None, None) => {
                return err(
                    "graph",
                    "needs either path (an edge-list file) or kind (er, det-er, power-law, sbm, bipartite) with n",
                )
            }
            (Some(p), None) => {
                if p.is_empty() {
                    return err("graph.path", "is empty");
                }
                if let Some((key, _)) = gen_keys.iter().find(|(_, set)| *set) {
                    return err(
                        &format!("graph.{key}"),
                        "is for generated graphs (graph.kind); a file's graph is what the file says",
                    );
                }
                return Ok(());
            }
            (None, Some(_)) => {}
        }
        let kind = self.kind.expect("checked");
        if self.directed {
            return err(
                "graph.directed",
                format!(
                    "= true is for edge-list files; graph.kind = \"{}\" generates an undirected graph",
                    kind.name()
                ),
            );
        }
        let n = match self.n {
            None => {
                return err(
                    "graph.n",
                    format!("missing: graph.kind = \"{}\" needs the number of vertices n", kind.name()),
                )
            }
            Some(n) if n > MAX_GRAPH_VERTICES => return err("graph.n", format!("= {n}: at most {MAX_GRAPH_VERTICES}")),
            Some(n) if n < servers.max(1) => {
                return err(
                    "graph.n",
                    format!("= {n} is smaller than the {servers} servers: each Reduces n/K vertices"),
                )
            }
            Some(n) => n,
        };
        let prob = |key: &str, v: Option<f64>, needed: bool| -> Result<(), ConfigError> {
            match v {
                None if needed => err(
                    &format!("graph.{key}"),
                    format!("missing: graph.kind = \"{}\" needs the edge probability {key}", kind.name()),
                ),
                Some(_) if !needed => {
                    err(&format!("graph.{key}"), format!("is not a parameter of graph.kind = \"{}\"", kind.name()))
                }
                Some(x) if !(0.0..=1.0).contains(&x) => {
                    err(&format!("graph.{key}"), format!("= {x}: a probability must be in [0, 1]"))
                }
                _ => Ok(()),
            }
        };
        let (p, q, gamma, two) = match kind {
            GraphKind::Er | GraphKind::DetEr => (true, false, false, false),
            GraphKind::PowerLaw => (false, false, true, false),
            GraphKind::Sbm => (true, true, false, true),
            GraphKind::Bipartite => (false, true, false, true),
        };
        prob("p", self.p, p)?;
        prob("q", self.q, q)?;
        match (self.gamma, gamma) {
            (None, true) => {
                return err("graph.gamma", "missing: graph.kind = \"power-law\" needs the exponent gamma (> 2)")
            }
            (Some(_), false) => {
                return err("graph.gamma", format!("is not a parameter of graph.kind = \"{}\"", kind.name()))
            }
            (Some(g), true) if !(g.is_finite() && g > 2.0) => {
                return err("graph.gamma", format!("= {g}: must be greater than 2 (finite mean degree)"))
            }
            _ => {}
        }
        match (self.n1, two) {
            (Some(_), false) => err("graph.n1", format!("is not a parameter of graph.kind = \"{}\"", kind.name())),
            (Some(n1), true) if n1 == 0 || n1 >= n => {
                err("graph.n1", format!("= {n1}: must be between 1 and graph.n − 1 = {}", n.saturating_sub(1)))
            }
            _ => Ok(()),
        }
    }
}

/// PageRank: Π_k(i) = (1−α)/n + α·Σ_{j∈N(i)} Π_{k−1}(j)/deg⁺(j), Π_0 = 1/n, on `[graph]`.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct PagerankConfig {
    /// `[graph]`
    pub graph: GraphConfig,
    /// α (`job.damping`, default 0.85).
    pub damping: f64,
    /// Stop once ‖Π_k − Π_{k−1}‖₁ ≤ tol (`job.tol`; otherwise after `run.iterations`).
    pub tol: Option<f64>,
    /// Dangling vertices' mass (`job.dangling`, default uniform).
    pub dangling: outrun_codes::Dangling,
}

/// `[job]`: what is computed, with the sections the job reads. Serialized (in the plan) tagged by
/// its `kind`.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(tag = "kind", rename_all = "kebab-case")]
pub enum JobConfig {
    /// `kind = "gd"` (the default; `"python"` for a model in Python): synchronous gradient
    /// descent.
    Gd(Box<GdConfig>),
    /// `kind = "fl"`: federated learning.
    Fl(Box<FlConfig>),
    /// `kind = "matvec"`: y = A·x, once per iteration (power iteration with `power = true`).
    Matvec(MatvecConfig),
    /// `kind = "pagerank"`: PageRank iterations on `[graph]`.
    Pagerank(PagerankConfig),
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct JobSection {
    #[serde(default = "default_job")]
    kind: String,
    #[serde(default)]
    power: Option<bool>,
    #[serde(default)]
    damping: Option<f64>,
    #[serde(default)]
    tol: Option<f64>,
    #[serde(default)]
    dangling: Option<outrun_codes::Dangling>,
    #[serde(default)]
    local_steps: Option<u64>,
    #[serde(default)]
    local_batch: Option<f64>,
    #[serde(default)]
    clients_per_round: Option<usize>,
    #[serde(default)]
    module: Option<String>,
    #[serde(default)]
    options: Option<toml::Table>,
}

fn default_job() -> String {
    "gd".into()
}

impl JobConfig {
    /// Build from the top-level sections.
    pub(super) fn from_sections(t: &toml::Table) -> Result<Self, ConfigError> {
        let job: JobSection = match section(t, "job")? {
            None => JobSection {
                kind: default_job(),
                power: None,
                damping: None,
                tol: None,
                dangling: None,
                local_steps: None,
                local_batch: None,
                clients_per_round: None,
                module: None,
                options: None,
            },
            Some(s) => de(toml::Value::Table(s), "job")?,
        };
        let reader = |kind: &str| match kind {
            "matvec" => "matvec",
            "pagerank" => "pagerank",
            _ => "gd",
        };
        for (name, used, by) in [
            ("data", "gradient descent", "gd"),
            ("model", "gradient descent", "gd"),
            ("features", "gradient descent", "gd"),
            ("matrix", "job.kind = \"matvec\"", "matvec"),
            ("vector", "job.kind = \"matvec\"", "matvec"),
            ("graph", "job.kind = \"pagerank\"", "pagerank"),
        ] {
            if t.contains_key(name)
                && reader(&job.kind) != by
                && matches!(job.kind.as_str(), "gd" | "gradient-descent" | "fl" | "python" | "matvec" | "pagerank")
            {
                return err(name, format!("is only read by {used}, not job.kind = \"{}\"", job.kind));
            }
        }
        if job.kind != "pagerank" {
            for (key, set) in
                [("damping", job.damping.is_some()), ("tol", job.tol.is_some()), ("dangling", job.dangling.is_some())]
            {
                if set {
                    return err(
                        &format!("job.{key}"),
                        format!("is only used by job.kind = \"pagerank\", not \"{}\"", job.kind),
                    );
                }
            }
        }
        if job.kind != "fl" {
            for (key, set) in [
                ("local_steps", job.local_steps.is_some()),
                ("local_batch", job.local_batch.is_some()),
                ("clients_per_round", job.clients_per_round.is_some()),
            ] {
                if set {
                    return err(
                        &format!("job.{key}"),
                        format!("is only used by job.kind = \"fl\" (federated learning), not \"{}\"", job.kind),
                    );
                }
            }
        }
        if job.kind != "python" && job.kind != "fl" {
            for (key, set) in [("module", job.module.is_some()), ("options", job.options.is_some())] {
                if set {
                    return err(
                        &format!("job.{key}"),
                        format!(
                            "is only used by job.kind = \"python\" (a model in Python) and \"fl\" (federated learning of one), not \"{}\"",
                            job.kind
                        ),
                    );
                }
            }
        }
        if job.kind == "fl" && job.options.is_some() && job.module.is_none() {
            return err("job.options", "are the options of a Python module: set job.module too (or drop them)");
        }
        match job.kind.as_str() {
            "matvec" => {
                let matrix = match section(t, "matrix")? {
                    None => {
                        return err(
                            "matrix",
                            "missing: a mat-vec job needs a [matrix] section (rows and cols, or path)",
                        )
                    }
                    Some(s) => de(toml::Value::Table(s), "matrix")?,
                };
                let vector = match section(t, "vector")? {
                    None => VectorConfig::default(),
                    Some(s) => de(toml::Value::Table(s), "vector")?,
                };
                Ok(JobConfig::Matvec(MatvecConfig { matrix, vector, power: job.power.unwrap_or(false) }))
            }
            "pagerank" if job.power.is_none() => {
                let graph = match section(t, "graph")? {
                    None => {
                        return err("graph", "missing: a PageRank job needs a [graph] section (path, or kind and n)")
                    }
                    Some(s) => de(toml::Value::Table(s), "graph")?,
                };
                Ok(JobConfig::Pagerank(PagerankConfig {
                    graph,
                    damping: job.damping.unwrap_or(0.85),
                    tol: job.tol,
                    dangling: job.dangling.unwrap_or(outrun_codes::Dangling::Uniform),
                }))
            }
            _ if job.power.is_some() => {
                err("job.power", format!("is only used by job.kind = \"matvec\", not \"{}\"", job.kind))
            }
            "gd" | "gradient-descent" | "fl" | "python" => {
                let data = match section(t, "data")? {
                    None => {
                        return err(
                            "data",
                            "missing: gradient descent needs a [data] section (kind, samples, features)",
                        )
                    }
                    Some(s) => de(toml::Value::Table(s), "data")?,
                };
                let model: ModelConfig = match section(t, "model")? {
                    None => return err("model", "missing: gradient descent needs a [model] section (loss, lr)"),
                    Some(s) => de(toml::Value::Table(s), "model")?,
                };
                let features = match section(t, "features")? {
                    None => None,
                    Some(s) => Some(de(toml::Value::Table(s), "features")?),
                };
                let python = match (job.kind.as_str(), job.module) {
                    ("python", None) => {
                        return err("job.module", "missing: job.kind = \"python\" needs the path of the model's module")
                    }
                    ("python" | "fl", Some(module)) => {
                        // the module learns the classes from [model] (given once): init's
                        // options get model.classes unless they say it themselves
                        let mut options = job.options.unwrap_or_default();
                        if let Some(c) = model.classes().filter(|_| !options.contains_key("classes")) {
                            options.insert("classes".into(), toml::Value::Integer(c as i64));
                        }
                        Some(PythonConfig { module, options })
                    }
                    _ => None,
                };
                let train = GdConfig { data, model, features, python };
                if job.kind != "fl" {
                    return Ok(JobConfig::Gd(Box::new(train)));
                }
                let local = LocalConfig {
                    local_steps: job.local_steps.unwrap_or(1),
                    local_batch: job.local_batch.unwrap_or(1.0),
                    clients_per_round: job.clients_per_round,
                };
                Ok(JobConfig::Fl(Box::new(FlConfig { train, local })))
            }
            other => err(
                "job.kind",
                format!("= \"{other}\" is not known; use \"gd\", \"fl\", \"python\", \"matvec\" or \"pagerank\""),
            ),
        }
    }

    /// Write this job's sections into a config table.
    pub(super) fn to_sections(&self, t: &mut toml::Table) {
        match self {
            JobConfig::Gd(_) | JobConfig::Fl(_) => {
                let g = self.train().expect("a training job");
                let mut job = toml::Table::new();
                job.insert("kind".into(), toml::Value::String(self.name().into()));
                if let JobConfig::Fl(f) = self {
                    let l = &f.local;
                    job.insert("local_steps".into(), toml::Value::Integer(l.local_steps as i64));
                    job.insert("local_batch".into(), toml::Value::Float(l.local_batch));
                    if let Some(c) = l.clients_per_round {
                        job.insert("clients_per_round".into(), toml::Value::Integer(c as i64));
                    }
                }
                if let Some(py) = &g.python {
                    job.insert("module".into(), toml::Value::String(py.module.clone()));
                    if !py.options.is_empty() {
                        job.insert("options".into(), toml::Value::Table(py.options.clone()));
                    }
                }
                t.insert("job".into(), toml::Value::Table(job));
                t.insert("data".into(), toml::Value::try_from(&g.data).expect("serializes"));
                t.insert("model".into(), toml::Value::try_from(&g.model).expect("serializes"));
                if let Some(f) = &g.features {
                    t.insert("features".into(), toml::Value::try_from(f).expect("serializes"));
                }
            }
            JobConfig::Matvec(m) => {
                let mut job = toml::Table::new();
                job.insert("kind".into(), toml::Value::String("matvec".into()));
                job.insert("power".into(), toml::Value::Boolean(m.power));
                t.insert("job".into(), toml::Value::Table(job));
                t.insert("matrix".into(), toml::Value::try_from(&m.matrix).expect("serializes"));
                t.insert("vector".into(), toml::Value::try_from(&m.vector).expect("serializes"));
            }
            JobConfig::Pagerank(p) => {
                let mut job = toml::Table::new();
                job.insert("kind".into(), toml::Value::String("pagerank".into()));
                job.insert("damping".into(), toml::Value::Float(p.damping));
                if let Some(tol) = p.tol {
                    job.insert("tol".into(), toml::Value::Float(tol));
                }
                job.insert("dangling".into(), toml::Value::try_from(p.dangling).expect("serializes"));
                t.insert("job".into(), toml::Value::Table(job));
                t.insert("graph".into(), toml::Value::try_from(&p.graph).expect("serializes"));
            }
        }
    }

    /// The config spelling of the job.
    pub fn name(&self) -> &'static str {
        match self {
            JobConfig::Gd(g) if g.python.is_some() => "python",
            JobConfig::Gd(_) => "gd",
            JobConfig::Fl(_) => "fl",
            JobConfig::Matvec(_) => "matvec",
            JobConfig::Pagerank(_) => "pagerank",
        }
    }

    /// The sections a training job (gradient descent, federated learning) trains with.
    pub fn train(&self) -> Option<&GdConfig> {
        match self {
            JobConfig::Gd(g) => Some(g),
            JobConfig::Fl(f) => Some(&f.train),
            JobConfig::Matvec(_) | JobConfig::Pagerank(_) => None,
        }
    }

    pub(super) fn validate(&self, workers: usize) -> Result<(), ConfigError> {
        match self {
            JobConfig::Gd(g) => g.validate(workers),
            JobConfig::Fl(f) => {
                f.train.validate(workers)?;
                f.local.validate(&f.train.model, workers)
            }
            JobConfig::Matvec(m) => m.validate(workers),
            JobConfig::Pagerank(p) => p.validate(workers),
        }
    }

    /// The field that sets the problem's size (named when it is smaller than the workers), and
    /// what the size counts where a file sets it (`rows` of `data.path`; None where the field
    /// is the count itself).
    pub fn size_field(&self) -> (&'static str, Option<&'static str>) {
        let data = |d: &DataConfig| match (d.samples, &d.path) {
            (None, Some(_)) => ("data.path", Some("rows")),
            _ => ("data.samples", None),
        };
        match self {
            JobConfig::Gd(g) => data(&g.data),
            JobConfig::Fl(f) => data(&f.train.data),
            JobConfig::Matvec(m) if m.matrix.path.is_some() => ("matrix.path", Some("rows")),
            JobConfig::Matvec(_) => ("matrix.rows", None),
            JobConfig::Pagerank(p) if p.graph.path.is_some() => ("graph.path", Some("vertices")),
            JobConfig::Pagerank(_) => ("graph.n", None),
        }
    }
}

impl PagerankConfig {
    fn validate(&self, servers: usize) -> Result<(), ConfigError> {
        if !(self.damping.is_finite() && (0.0..=1.0).contains(&self.damping)) {
            return err(
                "job.damping",
                format!("= {}: must be in [0, 1] (the probability of following an edge; 0.85 is usual)", self.damping),
            );
        }
        if let Some(tol) = self.tol {
            if !(tol.is_finite() && tol >= 0.0) {
                return err("job.tol", format!("= {tol}: must be ≥ 0"));
            }
        }
        self.graph.validate(servers)
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
                        return err(
                            &format!("matrix.{key}"),
                            "comes from the Matrix Market file's size line when matrix.path is given; remove it",
                        );
                    }
                }
                if m.symmetric {
                    return err(
                        "matrix.symmetric",
                        "is for generated matrices; a Matrix Market file says `symmetric` in its header",
                    );
                }
            }
            None => {
                for (key, v) in [("rows", m.rows), ("cols", m.cols)] {
                    match v {
                        None => {
                            return err(
                                &format!("matrix.{key}"),
                                "missing: a generated matrix needs rows and cols (or give matrix.path)",
                            )
                        }
                        Some(0) => return err(&format!("matrix.{key}"), "must be at least 1"),
                        Some(n) if n > MAX_MATRIX_SIDE => {
                            return err(&format!("matrix.{key}"), format!("= {n}: at most {MAX_MATRIX_SIDE}"))
                        }
                        _ => {}
                    }
                }
                if (m.symmetric || self.power) && m.rows != m.cols {
                    let why =
                        if m.symmetric { "matrix.symmetric = true" } else { "power iteration (job.power = true)" };
                    return err(
                        "matrix.cols",
                        format!(
                            "= {}: {why} needs a square matrix, but matrix.rows = {}",
                            m.cols.unwrap_or(0),
                            m.rows.unwrap_or(0)
                        ),
                    );
                }
                if let Some(r) = m.rows {
                    if r < workers {
                        return err(
                            "matrix.rows",
                            format!("= {r} is smaller than the {workers} workers: some would hold no row"),
                        );
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
            DataKind::LinearSynthetic | DataKind::LogisticSynthetic | DataKind::SoftmaxSynthetic => {
                if d.path.is_some() {
                    return err(
                        "data.path",
                        format!("is only used with data.kind = \"libsvm\", not \"{}\"", d.kind.name()),
                    );
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
            DataKind::Idx => {
                if d.path.as_deref().is_none_or(str::is_empty) {
                    return err("data.path", "missing: data.kind = \"idx\" needs the images file (IDX, plain or gzip)");
                }
                if d.labels_path.as_deref().is_none_or(str::is_empty) {
                    return err("data.labels_path", "missing: data.kind = \"idx\" needs the labels file (IDX)");
                }
                if d.test_path.is_some() != d.test_labels_path.is_some() {
                    return err(
                        "data.test_labels_path",
                        "IDX held-out data needs both data.test_path (images) and data.test_labels_path",
                    );
                }
                if d.samples.is_some() || d.features.is_some() {
                    return err(
                        if d.samples.is_some() { "data.samples" } else { "data.features" },
                        "IDX files give their own size",
                    );
                }
            }
            DataKind::Libsvm | DataKind::Csv => {
                if d.path.as_deref().is_none_or(str::is_empty) {
                    return err(
                        "data.path",
                        format!("missing: data.kind = \"{}\" needs the path of a file", d.kind.name()),
                    );
                }
                if d.samples == Some(0) || d.features == Some(0) {
                    return err(
                        if d.samples == Some(0) { "data.samples" } else { "data.features" },
                        "must be at least 1",
                    );
                }
            }
        }
        if d.kind != DataKind::Csv {
            for (key, set) in [
                ("data.delimiter", d.delimiter.is_some()),
                ("data.label_column", d.label_column.is_some()),
                ("data.labels", d.labels != LabelValues::Numeric),
                ("data.missing", d.missing != Missing::Refuse),
            ] {
                if set {
                    return err(key, format!("is for data.kind = \"csv\", not \"{}\"", d.kind.name()));
                }
            }
        }
        if let Some(b) = d.index_base {
            if d.kind != DataKind::Libsvm {
                return err("data.index_base", format!("is for data.kind = \"libsvm\", not \"{}\"", d.kind.name()));
            }
            if b > 1 {
                return err("data.index_base", format!("= {b}: 1 (the first feature is 1:, the default) or 0"));
            }
        }
        if let Some(del) = d.delimiter.as_deref() {
            let mut chars = del.chars();
            let one = chars.next().filter(|_| chars.next().is_none());
            if del != "tab" && !one.is_some_and(|c| c != '"' && c != '#' && c != '\n' && c != '\r') {
                return err(
                    "data.delimiter",
                    format!("= {del:?}: one character (\",\", \";\", \"|\", \" \"), or \"tab\"; not a quote, `#` or a line break"),
                );
            }
        }
        if let Some(LabelColumn::Name(n)) = &d.label_column {
            if n.trim().is_empty() {
                return err(
                    "data.label_column",
                    "is empty: a 0-based index, \"first\", \"last\" or a header's column name",
                );
            }
        }
        if d.labels == LabelValues::Auto && self.model.labels() == Labels::Real {
            return err(
                "data.labels",
                "= \"auto\" maps label values to classes 0..C−1: it needs class labels (model.loss = \"logistic\" or \"softmax\", or least squares with model.outputs = C)",
            );
        }
        if d.kind != DataKind::Idx && (d.labels_path.is_some() || d.test_labels_path.is_some()) {
            let key = if d.labels_path.is_some() { "data.labels_path" } else { "data.test_labels_path" };
            return err(key, format!("is for data.kind = \"idx\", not \"{}\"", d.kind.name()));
        }
        if d.test_every == 0 {
            return err("data.test_every", "must be at least 1");
        }
        if !(d.scale.is_finite() && d.scale > 0.0) {
            return err("data.scale", format!("= {}: must be a positive factor", d.scale));
        }
        match (d.order, d.shards) {
            (DataOrder::Shards, None) => {
                return err(
                    "data.order",
                    "= \"shards\" needs data.shards: how many label-sorted blocks, e.g. 2 per worker",
                )
            }
            (DataOrder::Shards, Some(0)) => return err("data.shards", "= 0: at least 1"),
            (DataOrder::Shards, Some(s)) if d.samples.is_some_and(|n| s > n) => {
                return err(
                    "data.shards",
                    format!("= {s}: more shards than data.samples = {}", d.samples.unwrap_or_default()),
                )
            }
            (DataOrder::Shards, Some(_)) | (_, None) => {}
            (_, Some(_)) => return err("data.shards", "is for data.order = \"shards\""),
        }
        if let Some(f) = d.test_fraction {
            if !(f > 0.0 && f < 1.0) {
                return err("data.test_fraction", format!("= {f}: a fraction of the rows in (0, 1), e.g. 0.2"));
            }
            if d.test_path.is_some() {
                return err("data.test_fraction", "and data.test_path both give a held-out set: keep one");
            }
            // as data.test_path: a Python model's evaluate reports a regression's held-out loss
            if self.model.labels() == Labels::Real && self.python.is_none() {
                return err(
                    "data.test_fraction",
                    "holds rows out to report classification accuracy: it needs class labels (model.loss = \"logistic\" or \"softmax\", or least squares with model.outputs = C; or a Python model, whose evaluate reports a loss)",
                );
            }
        }
        match &d.test_path {
            Some(_) if !matches!(d.kind, DataKind::Libsvm | DataKind::Idx | DataKind::Csv) => {
                return err(
                    "data.test_path",
                    format!(
                        "is for data.kind = \"libsvm\" (a held-out file of the same features), not \"{}\"",
                        d.kind.name()
                    ),
                )
            }
            // a Python model reports what its evaluate says: a regression's held-out loss too
            Some(_) if self.model.labels() == Labels::Real && self.python.is_none() => {
                return err(
                    "data.test_path",
                    "reports classification accuracy: it needs class labels (model.loss = \"logistic\" or \"softmax\", or least squares with model.outputs = C; or a Python model, whose evaluate reports a loss)",
                )
            }
            Some(p) if p.is_empty() => return err("data.test_path", "is empty"),
            _ => {}
        }
        if !(d.noise.is_finite() && d.noise >= 0.0) {
            return err("data.noise", format!("= {}: must be ≥ 0", d.noise));
        }
        if d.kind == DataKind::LinearSynthetic && self.model.loss == Loss::Logistic {
            return err(
                "model.loss",
                "= \"logistic\" needs 0/1 labels, but data.kind = \"linear-synthetic\" has real-valued labels",
            );
        }
        self.model.validate()?;
        if let Some(py) = &self.python {
            self.model.validate_for_python()?;
            if let (Some(given), Some(c)) = (py.options.get("classes"), self.model.classes()) {
                if given.as_integer() != Some(c as i64) {
                    return err(
                        "job.options.classes",
                        format!("= {given}, but model.classes = {c}: the module and the labels must agree (leave job.options.classes out: init receives model.classes)"),
                    );
                }
            }
        }
        if let Some(f) = &self.features {
            if f.q == 0 || f.q > MAX_LAYER {
                return err("features.q", format!("= {}: 1 to {MAX_LAYER} features", f.q));
            }
            if !(f.sigma.is_finite() && f.sigma > 0.0) {
                return err("features.sigma", format!("= {}: must be a positive width", f.sigma));
            }
        }
        let classes = self.model.classes();
        match (d.kind, classes) {
            (DataKind::SoftmaxSynthetic, None) => {
                return err(
                    "data.kind",
                    "= \"softmax-synthetic\" has class labels: it needs model.loss = \"softmax\" (or least squares with model.outputs ≥ 2)",
                )
            }
            (DataKind::LinearSynthetic | DataKind::LogisticSynthetic, Some(_)) => {
                return err(
                    "data.kind",
                    format!("= \"{}\" has no class labels: use \"softmax-synthetic\" or a LIBSVM file for model.loss = \"{}\"", d.kind.name(), self.model.loss.name()),
                )
            }
            _ => {}
        }
        if let (Some(b), Some(samples)) = (self.model.batch, d.samples) {
            if b > samples {
                return err("model.batch", format!("= {b} is larger than the {samples} samples (data.samples)"));
            }
        }
        if let Some(samples) = d.samples {
            if workers > 0 && samples < workers {
                return err(
                    "data.samples",
                    format!("= {samples} is smaller than the {workers} workers: some would hold no data"),
                );
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

/// Largest number of classes, outputs or hidden units of a layer.
const MAX_LAYER: usize = 1 << 20;

impl ModelConfig {
    /// A Python model's `[model]`: the built-in networks' keys do not apply (the module defines
    /// its own model), and the loss names only how the labels are read.
    fn validate_for_python(&self) -> Result<(), ConfigError> {
        for (key, set) in
            [("hidden", !self.hidden.is_empty()), ("outputs", self.outputs.is_some()), ("init", self.init.is_some())]
        {
            if set {
                return err(
                    &format!("model.{key}"),
                    "is for the built-in models: with job.kind = \"python\" the module defines its own (its init gives θ₀; model.init_path may replace it)",
                );
            }
        }
        Ok(())
    }

    /// `model.optimizer` and the keys that belong to one optimizer only.
    fn validate_optimizer(&self) -> Result<(), ConfigError> {
        let kind = self.optimizer;
        if kind.is_sgd() {
            for (key, set) in [
                ("beta1", self.beta1.is_some()),
                ("beta2", self.beta2.is_some()),
                ("eps", self.eps.is_some()),
                ("weight_decay", self.weight_decay.is_some()),
            ] {
                if set {
                    return err(&format!("model.{key}"), "is for model.optimizer = \"adam\" or \"adamw\", not \"sgd\"");
                }
            }
            return Ok(());
        }
        if self.momentum != 0.0 || self.nesterov {
            let key = if self.nesterov { "model.nesterov" } else { "model.momentum" };
            return err(
                key,
                format!("is for model.optimizer = \"sgd\"; {} keeps its own moments (model.beta1)", kind.name()),
            );
        }
        for (key, v) in [("beta1", self.beta1), ("beta2", self.beta2)] {
            if let Some(b) = v.filter(|b| !(b.is_finite() && (0.0..1.0).contains(b))) {
                return err(&format!("model.{key}"), format!("= {b}: must be in [0, 1)"));
            }
        }
        if let Some(e) = self.eps.filter(|e| !(e.is_finite() && *e > 0.0)) {
            return err("model.eps", format!("= {e}: must be positive"));
        }
        match (kind, self.weight_decay) {
            (OptimizerKind::Adam, Some(_)) => err(
                "model.weight_decay",
                "is AdamW's decoupled decay; Adam's weight decay is model.l2 (added to the gradient, as torch.optim.Adam's weight_decay)",
            ),
            (_, Some(w)) if !(w.is_finite() && w >= 0.0) => {
                err("model.weight_decay", format!("= {w}: must be at least 0"))
            }
            _ => Ok(()),
        }
    }

    /// The network's keys: classes, outputs, hidden layers, initialisation, batch, momentum and
    /// the step's decay and warm-up.
    fn validate(&self) -> Result<(), ConfigError> {
        match (self.loss, self.classes) {
            (Loss::Softmax, None) => {
                return err("model.classes", "missing: model.loss = \"softmax\" needs the number of classes")
            }
            (Loss::Softmax, Some(c)) if c < 2 => {
                return err("model.classes", format!("= {c}: a softmax needs at least 2 classes"))
            }
            (Loss::Softmax, Some(c)) if c > MAX_LAYER => {
                return err("model.classes", format!("= {c}: at most {MAX_LAYER}"))
            }
            (loss, Some(_)) if loss != Loss::Softmax => {
                return err(
                    "model.classes",
                    format!(
                        "is for model.loss = \"softmax\", not \"{}\" (least squares on C outputs: model.outputs)",
                        loss.name()
                    ),
                )
            }
            _ => {}
        }
        match (self.loss, self.outputs) {
            (Loss::LeastSquares, Some(0)) => return err("model.outputs", "must be at least 1"),
            (Loss::LeastSquares, Some(c)) if c > MAX_LAYER => {
                return err("model.outputs", format!("= {c}: at most {MAX_LAYER}"))
            }
            (loss, Some(_)) if loss != Loss::LeastSquares => {
                return err(
                    "model.outputs",
                    format!(
                        "is for model.loss = \"least-squares\", not \"{}\" (a softmax's outputs: model.classes)",
                        loss.name()
                    ),
                )
            }
            _ => {}
        }
        if !self.hidden.is_empty() && self.loss != Loss::Softmax {
            return err(
                "model.hidden",
                format!("hidden layers are for model.loss = \"softmax\", not \"{}\"", self.loss.name()),
            );
        }
        if let Some(i) = self.hidden.iter().position(|&h| h == 0 || h > MAX_LAYER) {
            return err(
                &format!("model.hidden[{i}]"),
                format!("= {}: a layer has 1 to {MAX_LAYER} units", self.hidden[i]),
            );
        }
        if self.init_path.as_deref() == Some("") {
            return err("model.init_path", "is empty");
        }
        if self.batch == Some(0) {
            return err("model.batch", "must be at least 1 (leave it out for full batch)");
        }
        if !(self.momentum.is_finite() && (0.0..1.0).contains(&self.momentum)) {
            return err("model.momentum", format!("= {}: must be in [0, 1)", self.momentum));
        }
        if self.nesterov && self.momentum == 0.0 {
            return err("model.nesterov", "= true needs model.momentum > 0");
        }
        self.validate_optimizer()?;
        if !(self.decay.is_finite() && self.decay > 0.0) {
            return err("model.decay", format!("= {}: must be a positive factor", self.decay));
        }
        if let Some(w) = self.decay_at.windows(2).position(|w| w[0] >= w[1]) {
            return err(&format!("model.decay_at[{}]", w + 1), "the iterations must be increasing");
        }
        Ok(())
    }
}
