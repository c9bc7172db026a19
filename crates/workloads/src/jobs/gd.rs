//! `job.kind = "gd"`: synchronous (stochastic) gradient descent of a model (`[data]`,
//! `[model]`): a linear model, least squares on C outputs, or a softmax network ([`Net`]).
//!
//! Every node computes `Σ c·∇ℓ(θ; x)` and the loss over each of its parts — over the part's
//! rows in the iteration's mini-batch ([`Batches`]) when `model.batch` is set; the delivered
//! total (the P gradient sums and the loss) is one optimizer step ([`Optimizer`]). The engine
//! holds one rank's rows, the simulator's arithmetic every rank's. The logging rank reports
//! ‖θ − θ*‖²/‖θ*‖² on synthetic linear data, and the accuracy and mean loss on `data.test_path`.
//!
//! `job.kind = "python"` is this job with the model in the user's module ([`PyNet`]): its
//! gradients, θ₀ and held-out metrics come from the module, the rest is unchanged.

use std::collections::HashMap;
use std::sync::Arc;

use outrun_codes::domain;
use outrun_config::{DataKind, GdConfig, Generator, Labels};
use outrun_plan::{Plan, PythonModel, Shape};
use outrun_proto::roles::Vector as _;
use outrun_proto::Frame;

use super::{Applied, Job, JobError, Labeled, Metrics, Prelude, Resumable};
use crate::batch::Batches;
use crate::blas::{gemm, Op};
use crate::data::{self, DataError, Rows};
use crate::features::FeatureMap;
use crate::metrics::{normalized_error, Optimizer};
use crate::model::Model;
use crate::net::{Net, BLOCK};
use crate::pymodel::{described, PyNet};

/// The model that computes: the user's module once imported, else the built-in network.
pub(super) fn model<'a>(python: &'a mut Option<PyNet>, net: &'a mut Net) -> &'a mut dyn Model {
    match python {
        Some(py) => py,
        None => net,
    }
}

/// One part of a node: its rows, their indices in the data set and their coefficients.
pub(super) struct Part {
    pub(super) rows: Rows,
    pub(super) coef: Vec<f64>,
    /// With mini-batches: each data row's positions in the part (a row may appear twice), so an
    /// iteration finds its batch's rows in O(b), not by scanning the part.
    pub(super) at: HashMap<usize, Vec<usize>>,
}

/// Gradient descent of a model.
pub struct GradientDescent {
    pub(super) config: GdConfig,
    pub(super) seed: u64,
    pub(super) samples: usize,
    pub(super) p: usize,
    pub(super) net: Net,
    pub(super) iterations: u64,
    pub(super) theta: Vec<f64>,
    optimizer: Optimizer,
    batches: Option<Batches>,
    /// The feature map (`[features]`) and the model's input width (q, or p without one).
    map: Option<FeatureMap>,
    /// `data.standardize`'s statistics, computed on first use.
    standard: std::sync::OnceLock<data::Standardizer>,
    pub(super) inputs: usize,
    /// The file row of each row (`data.order = "by-label"`), read by [`Job::load`].
    order: Option<Vec<usize>>,
    pub(super) parts: HashMap<usize, Vec<Part>>,
    pub(super) pace: usize,
    /// θ* (synthetic linear data) and the held-out set, on the logging rank.
    star: Option<Vec<f64>>,
    test: Option<Rows>,
    /// The last iteration applied is one to evaluate on the held-out set (`data.test_every`).
    pub(super) evaluate: bool,
    /// The parts' labels are flipped (a label-flip fault).
    flipped: bool,
    /// A Python model's size, as the plan recorded it, and its module once imported.
    py_model: Option<PythonModel>,
    pub(super) python: Option<PyNet>,
    /// The model's held-out metrics of the last iteration applied (when it was evaluated).
    eval: Option<outrun_python::Evaluation>,
    /// The first rank this job loaded (who a Python error names).
    rank: usize,
    /// CodedFedL's parity allocation (the plan's prelude uploads the clients' encodings).
    parity: Option<outrun_plan::Parity>,
    /// CodedFedL with global mini-batches: each batch's points, the clients' and its parity
    /// rows (`Parity::batch_points`), and each node's rows in each batch of its load.
    parity_batches: Vec<Vec<usize>>,
    node_share: Vec<Vec<f64>>,
}

impl GradientDescent {
    /// The job of `plan`, with no rows loaded; θ₀ is the seeded initialisation (`model.init_path`
    /// is read by [`Job::load`]).
    pub fn new(plan: &Plan, config: &GdConfig) -> Self {
        let p = plan.job.features;
        let map = config.features.as_ref().map(|f| FeatureMap::new(f, p, plan.run.seed));
        let inputs = map.as_ref().map_or(p, FeatureMap::len);
        let net = Net::new(&config.model, inputs);
        let py_model = plan.job.python;
        let batch_points = parity_batches(plan);
        GradientDescent {
            config: config.clone(),
            seed: plan.run.seed,
            samples: plan.samples,
            p,
            // a Python model's θ₀ is its module's, read by `load`
            theta: match py_model {
                Some(m) => vec![0.0; m.params],
                None => net.init(config.model.init, plan.run.seed, inputs),
            },
            net,
            map,
            standard: std::sync::OnceLock::new(),
            inputs,
            order: None,
            iterations: plan.run.iterations,
            optimizer: Optimizer::default(),
            batches: config.model.batch.map(|b| Batches::new(plan.samples, b.min(plan.samples), plan.run.seed)),
            parts: HashMap::new(),
            pace: usize::MAX,
            flipped: false,
            star: None,
            test: None,
            evaluate: false,
            py_model,
            python: None,
            eval: None,
            rank: 0,
            parity: plan.parity().cloned(),
            node_share: node_share(plan, &batch_points),
            parity_batches: batch_points,
        }
    }

    /// The current model θ.
    pub fn theta(&self) -> &[f64] {
        &self.theta
    }

    pub(super) fn rows(&self, idx: &[usize]) -> Result<Rows, DataError> {
        let file_rows: Vec<usize>;
        let idx = match &self.order {
            Some(order) => {
                file_rows = idx.iter().map(|&i| order[i]).collect();
                &file_rows[..]
            }
            None => idx,
        };
        let rows = data::rows(&self.config.data, self.seed, self.config.model.labels(), self.p, idx)?;
        self.mapped(rows)
    }

    /// `rows` standardised (`data.standardize`) and through the feature map, if there is one.
    fn mapped(&self, rows: Rows) -> Result<Rows, DataError> {
        let rows = if self.config.data.standardize {
            let st = match self.standard.get() {
                Some(st) => st,
                None => {
                    let shape = Shape { samples: self.samples, features: self.p };
                    let st = data::Standardizer::of(&self.config.data, self.seed, self.config.model.labels(), shape)?;
                    self.standard.get_or_init(|| st)
                }
            };
            st.apply(rows)
        } else {
            rows
        };
        Ok(match &self.map {
            Some(map) => map.map(&rows),
            None => rows,
        })
    }

    /// The parameters' count P.
    pub(super) fn params(&self) -> usize {
        self.py_model.map_or_else(|| self.net.len(self.inputs), |m| m.params)
    }

    /// What the model is: the built-in network's description, or the module.
    fn describe(&self) -> String {
        match &self.config.python {
            Some(py) => format!("python module {} (P = {})", py.module, self.params()),
            None => self.net.describe(),
        }
    }

    /// Initial parameters from `model.init_path` (one value per line, the model's layout).
    fn read_init(&self, path: &str) -> Result<Vec<f64>, DataError> {
        crate::net::read_values(path, self.params(), &self.describe())
    }

    /// Import a Python model's module and call its `init`: the model and θ₀ (`model.init_path`
    /// replaces θ₀ when set). None for a built-in model.
    fn open_python(&self, rank: Option<usize>) -> Result<Option<(PyNet, Vec<f64>)>, DataError> {
        let Some(py) = &self.config.python else { return Ok(None) };
        let (net, theta) = PyNet::open(py, self.seed, self.inputs, self.py_model, rank)?;
        if self.config.data.test_path.is_some() && !net.has_evaluate() {
            return Err(DataError::field(
                "data.test_path",
                format!("is set, but the python module {} defines no evaluate(theta, X, y) to report on it", py.module),
            ));
        }
        Ok(Some((net, theta)))
    }

    /// A Python model's size as the plan records it (the planning process imports the module
    /// and asks it for one gradient of the first rows, and with `data.test_path` for its
    /// metrics on them, so that a module that cannot give them fails here, before MPI, in one
    /// line); None for a built-in model.
    ///
    /// The module runs on a thread of its own, waited for at most `bound` seconds (`run.deadline`):
    /// a module whose import, `init` or `grad` never returns fails the planning in one line
    /// instead of hanging it (the thread is left behind; the process ends with the error).
    pub(super) fn python_model(&self, bound: f64) -> Result<Option<PythonModel>, DataError> {
        let Some(py) = self.config.python.clone() else { return Ok(None) };
        let probe = self.rows(&(0..self.samples.min(2)).collect::<Vec<_>>())?;
        let (seed, inputs, rows) = (self.seed, self.inputs, probe.len());
        let held_out = self.config.data.test_path.is_some();
        // Python's main thread is this one (a rank imports on its main thread too), not the probe's
        outrun_python::start();
        let (tx, rx) = std::sync::mpsc::channel();
        let module = py.module.clone();
        std::thread::spawn(move || {
            let probed = (|| {
                let (mut net, theta) = PyNet::open(&py, seed, inputs, None, None)?;
                let mut g = vec![0.0; theta.len()];
                let ones = vec![1.0; probe.len()];
                net.gradient(None, &probe, &ones, &theta, &mut g).map_err(|e| DataError::Model(e.to_string()))?;
                // what the logging rank will record: its metrics on the same rows
                if held_out && net.has_evaluate() {
                    net.evaluate(&probe, &theta).map_err(|e| DataError::Model(e.to_string()))?;
                }
                Ok((theta, net.has_evaluate()))
            })();
            let _ = tx.send(probed);
        });
        let (theta, evaluates) = match rx.recv_timeout(std::time::Duration::from_secs_f64(bound)) {
            Ok(probed) => probed?,
            Err(_) => {
                let calls = if held_out { "init(), one grad() and evaluate()" } else { "init() and one grad()" };
                return Err(DataError::Model(format!(
                    "python module {module}: import, {calls} on the first {rows} rows did not return within run.deadline = {bound} s (the planning process's probe): the module is stuck, or slower than a run would wait"
                )));
            }
        };
        if held_out && !evaluates {
            return Err(DataError::field(
                "data.test_path",
                format!("is set, but the python module {module} defines no evaluate(theta, X, y) to report on it"),
            ));
        }
        if let Some(path) = self.config.model.init_path.as_deref() {
            crate::net::read_values(path, theta.len(), &format!("{} defined by init", self.describe()))?;
        }
        Ok(Some(described(&theta)))
    }

    /// Samples of iteration `t` (b, or d in full batch; CodedFedL's: its global mini-batch's).
    fn batch_size(&self, t: u64) -> usize {
        match (&self.batches, &self.parity) {
            (Some(b), _) => b.size(t),
            (None, Some(parity)) if parity.batches > 1 => parity.batch_size(parity.batch_of(t)),
            _ => self.samples,
        }
    }
}

/// Iteration `t`'s rows when it computes on a batch: `model.batch`'s (drawn), or CodedFedL's
/// global mini-batch (with more than one: its points, borrowed from `parity_batches`). Fields
/// apart, so that the rows stay borrowed while the job's model computes.
fn batch_rows<'a>(
    batches: &mut Option<Batches>,
    parity: Option<&outrun_plan::Parity>,
    parity_batches: &'a [Vec<usize>],
    t: u64,
) -> Option<std::borrow::Cow<'a, [usize]>> {
    if let Some(b) = batches.as_mut() {
        return Some(std::borrow::Cow::Owned(b.rows(t)));
    }
    let parity = parity.filter(|p| p.batches > 1)?;
    Some(std::borrow::Cow::Borrowed(&parity_batches[parity.batch_of(t)]))
}

/// CodedFedL's points of each global mini-batch (none with one batch).
fn parity_batches(plan: &Plan) -> Vec<Vec<usize>> {
    match plan.parity() {
        Some(p) if p.batches > 1 => (0..p.batches).map(|b| p.batch_points(b, plan.samples)).collect(),
        _ => vec![],
    }
}

/// CodedFedL with global mini-batches (`points`: each batch's, [`parity_batches`]): the
/// fraction of each node's load in each batch (its modelled compute is that fraction of its
/// load; none with one batch).
fn node_share(plan: &Plan, points: &[Vec<usize>]) -> Vec<Vec<f64>> {
    if points.is_empty() {
        return vec![];
    }
    let batches: Vec<std::collections::HashSet<usize>> = points.iter().map(|b| b.iter().copied().collect()).collect();
    plan.nodes
        .iter()
        .map(|n| {
            let load = n.load().max(1) as f64;
            batches.iter().map(|set| n.points().filter(|(i, _)| set.contains(i)).count() as f64 / load).collect()
        })
        .collect()
}

/// CodedFedL's parity data (`plan.parity()`; the scheme: `outrun_plan`'s `schemes/codedfedl.rs`).
impl GradientDescent {
    /// The model's outputs C (1 for a linear model).
    fn outputs(&self) -> usize {
        match self.net {
            Net::MultiOutput { outputs, .. } => outputs,
            _ => 1,
        }
    }

    /// The server's parity part before the upload: u rows of zeros with coefficients `coef`.
    fn parity_part(&self, coef: Vec<f64>) -> Part {
        let u = coef.len();
        let mut rows = Rows::from_vecs(self.inputs, vec![0.0; u * self.inputs], vec![0.0; u]);
        if matches!(self.net, Net::MultiOutput { .. }) {
            rows.targets = Some(vec![0.0; u * self.outputs()]);
        }
        Part { rows, coef, at: HashMap::new() }
    }

    /// Client `worker`'s G_j·W_j·[X̂_j Y_j] of each global mini-batch, one after the other
    /// (u rows each): its rows weighted as the plan says, through the feature map, Y one-hot on
    /// C outputs, and G_j (u × its rows in the batch) drawn from its private key.
    fn encode_client(&self, parity: &outrun_plan::Parity, worker: usize) -> Result<Vec<f64>, DataError> {
        let (q, c, u) = (self.inputs, self.outputs(), parity.u);
        let width = q + c;
        let mut out = vec![0.0; parity.batches * u * width];
        for (b, enc) in out.chunks_exact_mut(u * width).enumerate() {
            let points: Vec<(usize, f64)> = parity.client_batch(worker - 1, b).collect();
            let rows = self.rows(&points.iter().map(|&(i, _)| i).collect::<Vec<_>>())?;
            let l = points.len();
            let mut wxy = vec![0.0; l * width];
            for (k, &(_, w)) in points.iter().enumerate() {
                let row = &mut wxy[k * width..(k + 1) * width];
                row[..q].iter_mut().zip(rows.row(k)).for_each(|(o, x)| *o = w * x);
                match self.net {
                    Net::MultiOutput { .. } => row[q + rows.y[k] as usize] = w,
                    _ => row[q] = w * rows.y[k],
                }
            }
            let mut rng = outrun_plan::batch_rng(&[self.seed, domain::PARITY, worker as u64, 1], b, parity.batches);
            let g: Vec<f64> = (0..u * l)
                .map(|_| match parity.generator {
                    Generator::Gaussian => rng.normal(),
                    Generator::Bernoulli if rng.uniform() < 0.5 => -1.0,
                    Generator::Bernoulli => 1.0,
                })
                .collect();
            if l > 0 {
                gemm(1.0, Op::n(&g, u, l), Op::n(&wxy, l, width), 0.0, enc);
            }
        }
        Ok(out)
    }
}

impl GradientDescent {
    /// Every row, in the allocation's order and through the feature map, and θ₀ (what a serial
    /// reference starts from).
    pub(super) fn whole(&self) -> Result<(Rows, Vec<f64>), DataError> {
        let rows = self.all_rows()?;
        let theta0 = match self.config.model.init_path.as_deref() {
            Some(path) => self.read_init(path)?,
            None => self.net.init(self.config.model.init, self.seed, self.inputs),
        };
        Ok((rows, theta0))
    }

    /// Every row, in the allocation's order and through the feature map.
    fn all_rows(&self) -> Result<Rows, DataError> {
        let labels = self.config.model.labels();
        let mut rows = data::load_all(&self.config.data, self.seed, labels)?;
        let shape = Shape { samples: self.samples, features: self.p };
        if let Some(order) = data::row_order(&self.config.data, self.seed, labels, shape)? {
            rows = rows.select(order);
        }
        self.mapped(rows)
    }
}

/// The data set's shape; its held-out set and initial parameters, if any, are read and checked
/// here, before MPI.
pub(super) fn shape(c: &GdConfig, seed: u64) -> Result<Shape, DataError> {
    let file = data::shape(&c.data, c.model.labels())?;
    if let Some(f) = c.data.test_fraction.filter(|_| file.samples < 2) {
        return Err(DataError::field(
            "data.test_fraction",
            format!(
                "= {f}: the file has {} row(s); a split needs at least 2 (one to train on, one to hold out)",
                file.samples
            ),
        ));
    }
    let shape = data::training_shape(&c.data, seed, file);
    test_set(c, seed, shape.features)?;
    if let Some(s) = c.data.shards {
        data::check_shards(s, shape.samples)?;
    }
    if let Some(b) = c.model.batch.filter(|&b| b > shape.samples) {
        return Err(DataError::field(
            "model.batch",
            format!("= {b} is larger than the {} samples of the data set", shape.samples),
        ));
    }
    if let Some(path) = c.model.init_path.as_deref().filter(|_| c.python.is_none()) {
        let inputs = c.features.as_ref().map_or(shape.features, |f| f.q);
        Net::new(&c.model, inputs).read_init(path, inputs)?;
    }
    Ok(shape)
}

/// The held-out set of `data.test_path` (as wide as the training set, `p`), or the rows
/// `data.test_fraction` holds out, if there is one.
fn test_set(c: &GdConfig, seed: u64, p: usize) -> Result<Option<Rows>, DataError> {
    if c.data.test_fraction.is_some() {
        let labels = c.model.labels();
        let file = data::shape(&c.data, labels)?;
        let (_, held) = data::split(&c.data, seed, file.samples).expect("a test fraction");
        held_fits(c, held.len(), p, "data.test_fraction")?;
        return data::rows(&c.data, seed, labels, p, &held).map(Some);
    }
    let Some(path) = c.data.test_path.as_deref() else { return Ok(None) };
    if let Some(labels) = c.data.test_labels_path.as_deref() {
        let (images, labels) = (std::path::Path::new(path), std::path::Path::new(labels));
        let shape = crate::idx::idx_check(images, labels, c.model.labels(), crate::idx::TEST)?;
        if shape.features != p {
            return Err(DataError::file(
                path,
                format!("{} pixels per image, the training images have {p}", shape.features),
            ));
        }
        held_fits(c, shape.samples, p, "data.test_path")?;
        let all: Vec<usize> = (0..shape.samples).collect();
        return crate::idx::idx_rows(images, labels, c.data.scale, c.model.labels(), &all, crate::idx::TEST).map(Some);
    }
    let text = crate::input::read_to_string(std::path::Path::new(path))
        .map_err(|e| DataError::read("data.test_path", path, e))?;
    if c.data.kind == DataKind::Csv {
        // the training file's layout and label map
        let fmt = data::csv_format(&c.data, Some(seed))?;
        let shape = crate::csv::csv_shape(text.as_bytes(), path, &fmt, None, c.model.labels())?;
        if shape.features != p {
            return Err(DataError::file(
                path,
                format!("{} feature columns, the training file has {p}", shape.features),
            ));
        }
        held_fits(c, shape.samples, p, "data.test_path")?;
        let all: Vec<usize> = (0..shape.samples).collect();
        return crate::csv::csv_rows(text.as_bytes(), path, &fmt, p, c.model.labels(), &all).map(Some);
    }
    let fmt = data::LibsvmFormat::of(&c.data);
    let shape = data::libsvm_shape(text.as_bytes(), path, &fmt, None, Some(p), c.model.labels())?;
    held_fits(c, shape.samples, p, "data.test_path")?;
    let all: Vec<usize> = (0..shape.samples).collect();
    data::libsvm_rows(text.as_bytes(), path, &fmt, shape.features, c.model.labels(), &all).map(Some)
}

/// Bytes as people read them (u128 counts, which the config's products need).
fn size(bytes: u128) -> String {
    crate::memory::human(u64::try_from(bytes).unwrap_or(u64::MAX))
}

/// Where `bytes` exceed [`MAX_MODEL_BYTES`] or `have` (the memory available, if known): how
/// the refusal ends (`but 1.1 GB are available …`); None where they fit.
fn beyond(bytes: u128, have: Option<u64>) -> Option<String> {
    let limit = have.map_or(MAX_MODEL_BYTES, |h| MAX_MODEL_BYTES.min(h as u128));
    (bytes > limit).then(|| match have {
        Some(h) if (h as u128) < MAX_MODEL_BYTES => {
            format!("but {} are available (MemAvailable, or OUTRUN_MEMORY_LIMIT)", size(h as u128))
        }
        _ => format!("more than the {} any run may hold", size(MAX_MODEL_BYTES)),
    })
}

/// Refuse a held-out set of `n` rows, `p` wide, that would not fit in this machine's memory
/// held densely (it is read whole here, before MPI, and by the rank that evaluates it): one
/// line naming `data.features` where the config sets the width, else `field` (a failed
/// allocation aborted `outrun check` with a backtrace).
fn held_fits(c: &GdConfig, n: usize, p: usize, field: &str) -> Result<(), DataError> {
    let bytes = n as u128 * p as u128 * 8;
    let Some(room) = beyond(bytes, crate::memory::available()) else { return Ok(()) };
    let what = format!("the held-out set's {n} rows × {p} features take {} held densely, {room}", size(bytes));
    match c.data.features {
        Some(_) => Err(DataError::field("data.features", format!("= {p}: memory: {what}"))),
        None => {
            let fewer = if field == "data.test_fraction" { "hold out fewer rows" } else { "use a shorter test file" };
            Err(DataError::field(field, format!("memory: {what}; {fewer}")))
        }
    }
}

/// Model-sized vectors a rank keeps at once (θ, parts' results, received frames, the total).
const VECTORS: u64 = 8;

/// The largest model anything makes: 2^40 bytes (2^37 parameters).
pub(super) const MAX_MODEL_BYTES: u128 = 1 << 40;

/// `super::model_fits` for a gradient job of `config`: θ₀ and the feature map's weights, counted
/// without overflow (the config bounds each width, not their products), against
/// [`MAX_MODEL_BYTES`] and `have`.
pub(super) fn model_fits(plan: &Plan, config: &GdConfig, have: Option<u64>) -> Result<(), DataError> {
    let p = plan.job.features;
    let q = config.features.as_ref().map(|f| f.q);
    let inputs = q.unwrap_or(p);
    let net = Net::new(&config.model, inputs);
    let params = match plan.job.python {
        Some(m) => m.params as u128,
        None => net.len_wide(inputs),
    };
    let map = q.map_or(0, |q| p as u128 * q as u128 + q as u128);
    let bytes = (params + map) * 8;
    let Some(room) = beyond(bytes, have) else { return Ok(()) };
    let model = match plan.job.python {
        Some(_) => format!("the Python model's {params} parameters (its θ₀)"),
        // before the module is asked: the job's first θ₀ is as wide as the data
        None if config.python.is_some() => format!("the {params} values of the job's first θ₀"),
        None => format!("the model's {params} parameters ({})", net.describe()),
    };
    let field = match q {
        Some(q) if map >= params => ("features.q", q.to_string()),
        _ if plan.job.python.is_none() && !config.model.hidden.is_empty() => {
            ("model.hidden", format!("{:?}", config.model.hidden))
        }
        Some(q) => ("features.q", q.to_string()),
        None => ("data.features", p.to_string()),
    };
    let what = match q {
        Some(q) => format!("the feature map's {p} × {q} weights and {model} take"),
        None => format!("{model} take"),
    };
    Err(DataError::field(
        field.0,
        format!(
            "= {}: memory: {what} {} before any data is read, {room}; use fewer features or a smaller model",
            field.1,
            size(bytes)
        ),
    ))
}

impl Job for GradientDescent {
    fn name(&self) -> &'static str {
        "gd"
    }

    fn problem(&self) -> String {
        let d = &self.config.data;
        let model = match (&self.net, &self.config.python) {
            (_, Some(py)) if !py.options.is_empty() => {
                // inline (`{ classes = 10, hidden = [128] }`): the problem is one line
                format!("{}, options {}", self.describe(), toml::Value::Table(py.options.clone()))
            }
            (_, Some(_)) => self.describe(),
            (crate::net::Net::Linear(loss), None) => format!("{} loss", loss.name()),
            (net, None) => net.describe(),
        };
        let features = self.config.features.as_ref().map_or(String::new(), |f| {
            format!(", RFF q = {} σ = {} seed {}", f.q, f.sigma, f.seed.unwrap_or(self.seed))
        });
        format!(
            "{} data, d = {}, p = {}, seed {}{}{features}, {model}{}",
            d.kind.name(),
            self.samples,
            self.p,
            self.seed,
            d.path.as_ref().map_or(String::new(), |p| format!(", file {p}")),
            self.config.model.batch.map_or(String::new(), |b| format!(", batch {b}"))
        )
    }

    fn state_file(&self) -> &'static str {
        "theta.txt"
    }

    fn simulates_values(&self) -> bool {
        self.config.python.is_none()
    }

    fn sources(&self) -> Vec<std::path::PathBuf> {
        self.config.python.iter().map(|py| py.module.clone().into()).collect()
    }

    fn columns(&self) -> &'static [&'static str] {
        // a held-out set from a file or from data.test_fraction's rows: both log its loss
        if self.config.data.test_path.is_some() || self.config.data.test_fraction.is_some() {
            &["test_loss"]
        } else {
            &[]
        }
    }

    fn len(&self, _rank: usize) -> usize {
        self.params() + 1
    }

    fn model_len(&self) -> usize {
        self.params()
    }

    fn work(&self, rank: usize, t: u64) -> f64 {
        let cost = self.params() as f64 / self.p.max(1) as f64;
        match &self.parity {
            // the node's own rows in the round's global mini-batch
            Some(parity) if parity.batches > 1 => cost * self.node_share[rank][parity.batch_of(t)],
            _ => cost * self.batch_size(t) as f64 / self.samples.max(1) as f64,
        }
    }

    /// Each rank holds its rows densely (load × p values, one copy per part; a Python model's
    /// another, as the arrays it reads), a few model-sized vectors, one per part and child, and
    /// a block of a network's activations (a Python model's own memory is not counted).
    fn memory(&mut self, plan: &Plan) -> Result<Vec<u64>, DataError> {
        let p = self.inputs as u64;
        let widths = match &self.net {
            _ if self.config.python.is_some() => 0,
            Net::Softmax { sizes } => sizes.iter().sum::<usize>() as u64,
            Net::MultiOutput { outputs, .. } => *outputs as u64,
            Net::Linear(_) => 0,
        };
        let copies = if self.config.python.is_some() { 2 } else { 1 };
        let acts = (BLOCK as u64) * widths * 3 * 8;
        let vec_bytes = (self.params() as u64 + 1).saturating_mul(8);
        // CodedFedL: a client holds its G_j (u × ℓ_j, one batch at a time), its weighted rows
        // and its encodings (B·u rows); the server the sum and its parity rows
        let parity = |n: &outrun_plan::Node| -> u64 {
            let Some(parity) = plan.parity() else { return 0 };
            let (u, width, b) = (parity.u as u64, (self.inputs + self.outputs()) as u64, parity.batches as u64);
            let (rows, most) = n.worker.map_or((0, 0), |w| {
                let c = &parity.clients[w - 1];
                (c.rows.len() as u64, c.batch_len.iter().max().copied().unwrap_or(0) as u64)
            });
            (u * most + rows * width + 2 * b * u * width).saturating_mul(8)
        };
        Ok(plan
            .nodes
            .iter()
            .map(|n| {
                let rows = n.load() as u64;
                let parts = (n.parts.len() as u64).max(1) + n.children.len() as u64;
                rows.saturating_mul(p)
                    .saturating_mul(8 * copies)
                    .saturating_add(vec_bytes.saturating_mul(VECTORS + parts))
                    .saturating_add(acts)
                    .saturating_add(parity(n))
            })
            .collect())
    }

    fn load(&mut self, plan: &Plan, ranks: &[usize]) -> Result<(), DataError> {
        let shape = Shape { samples: self.samples, features: self.p };
        self.order = data::row_order(&self.config.data, self.seed, self.config.model.labels(), shape)?;
        for &rank in ranks {
            let mine = plan.nodes[rank]
                .parts
                .iter()
                .map(|set| {
                    let idx: Vec<usize> = set.points().map(|(i, _)| i).collect();
                    let mut at: HashMap<usize, Vec<usize>> = HashMap::new();
                    if self.batches.is_some() || !self.parity_batches.is_empty() {
                        idx.iter().enumerate().for_each(|(k, &i)| at.entry(i).or_default().push(k));
                    }
                    if idx.first().is_some_and(|&i| i >= self.samples) {
                        // the server's parity rows: known once the clients have uploaded them
                        return Ok(Part { at, ..self.parity_part(set.points().map(|(_, c)| c).collect()) });
                    }
                    Ok(Part { rows: self.rows(&idx)?, coef: set.points().map(|(_, c)| c).collect(), at })
                })
                .collect::<Result<Vec<_>, DataError>>()?;
            self.parts.insert(rank, mine);
        }
        self.rank = ranks.first().copied().unwrap_or(0);
        if let Some((net, theta)) = self.open_python(Some(self.rank))? {
            self.python = Some(net);
            self.theta = theta;
        }
        if let Some(path) = self.config.model.init_path.as_deref() {
            self.theta = self.read_init(path)?;
        }
        Ok(())
    }

    fn prelude(&mut self) -> Option<&mut dyn Prelude> {
        if self.parity.is_some() {
            Some(self)
        } else {
            None
        }
    }

    fn resumable(&mut self) -> Option<&mut dyn Resumable> {
        Some(self)
    }

    fn labeled(&mut self) -> Option<&mut dyn Labeled> {
        Some(self)
    }

    fn load_metrics(&mut self) -> Result<(), DataError> {
        let kind = self.config.data.kind;
        let linear = matches!(self.net, Net::Linear(_)) && self.map.is_none();
        self.star = (linear && !matches!(kind, DataKind::Libsvm | DataKind::Idx))
            .then(|| data::theta_star(kind, self.seed, self.p))
            .flatten();
        self.test = match test_set(&self.config, self.seed, self.p)? {
            Some(t) => Some(self.mapped(t)?),
            None => None,
        };
        Ok(())
    }

    fn pace(&mut self, rows: usize) {
        self.pace = rows;
    }

    fn model(&mut self) -> Arc<Frame> {
        Arc::new(Frame::copy_of(&self.theta))
    }

    fn state(&self) -> Option<Vec<f64>> {
        Some(self.theta.clone())
    }

    fn compute(
        &mut self,
        rank: usize,
        t: u64,
        model: &Frame,
        select: Option<&[usize]>,
    ) -> Result<Vec<Frame>, JobError> {
        let params = self.params();
        let batch_rows = batch_rows(&mut self.batches, self.parity.as_ref(), &self.parity_batches, t);
        let all = &self.parts[&rank];
        let chosen: Vec<(usize, &Part)> = match select {
            Some(idx) => idx.iter().map(|&i| (i, &all[i])).collect(),
            None => all.iter().enumerate().collect(),
        };
        let mut frames = Vec::with_capacity(chosen.len());
        for (k, part) in chosen {
            // with header room: the result is sent from where it is computed
            let mut frame = Frame::zeros(params + 1);
            let out = frame.as_mut_slice();
            let batch;
            let (rows, coef, whole) = match &batch_rows {
                None => (&part.rows, &part.coef[..], true),
                Some(rows_t) => {
                    // the part's positions of the batch's rows, in the part's order
                    let mut mine: Vec<usize> =
                        rows_t.iter().filter_map(|i| part.at.get(i)).flatten().copied().collect();
                    mine.sort_unstable();
                    batch = (
                        part.rows.select(mine.iter().copied()),
                        mine.iter().map(|&k| part.coef[k]).collect::<Vec<_>>(),
                    );
                    (&batch.0, &batch.1[..], false)
                }
            };
            let theta = model.as_slice();
            out[params] = self::model(&mut self.python, &mut self.net)
                .gradient(whole.then_some((rank, k)), rows, coef, theta, &mut out[..params], self.pace)
                .map_err(|e| JobError::Model(format!("{} (iteration {t})", e.on_rank(rank))))?;
            frames.push(frame);
        }
        Ok(frames)
    }

    fn apply(&mut self, t: u64, total: Frame) -> Result<Applied, JobError> {
        let total = total.as_slice();
        let params = self.params();
        let (g, loss_sum) = (&total[..params], total[params]);
        let model = &self.config.model;
        let b = self.batch_size(t) as f64;
        // logged as the mean per sample of the iteration's batch, like the gradient's step
        let loss = loss_sum / b;
        self.optimizer.step(&mut self.theta, g, b, model, t);
        if !self.theta.iter().all(|v| v.is_finite()) || !loss.is_finite() {
            return Err(JobError::Diverged {
                iteration: t,
                message: format!(
                    "iteration {t}: the model diverged (non-finite θ or loss); lower model.lr (now {})",
                    model.lr
                ),
            });
        }
        self.held_out(t)?;
        Ok(Applied { loss, state: Some(self.theta.clone()), error: None, done: false })
    }

    fn metrics(&self, applied: &Applied) -> super::Metrics {
        let theta = applied.state.as_deref();
        // the model's held-out metrics, asked for by `apply`
        let (accuracy, loss) = self.eval.map_or((None, None), |e| (e.accuracy, e.loss));
        Metrics {
            error: theta.zip(self.star.as_deref()).map(|(th, star)| normalized_error(th, star)),
            accuracy,
            columns: if self.test.is_some() { vec![loss] } else { vec![] },
        }
    }

    /// Serial gradient descent on every row (`reference::serial_gd`; a Python model's: its
    /// gradient of each iteration's batch, in one call).
    fn reference(&mut self, _plan: &Plan) -> Result<Vec<f64>, DataError> {
        if self.config.python.is_some() {
            return self.python_reference();
        }
        let (rows, theta0) = self.whole()?;
        let traj = crate::reference::serial_train(&rows, &self.config.model, theta0, self.seed, self.iterations);
        Ok(traj.into_iter().last().expect("θ_0 at least"))
    }
}

impl GradientDescent {
    /// After iteration `t` is applied: whether it is one to evaluate on the held-out set
    /// (`data.test_every`, and the last), and if so (on the rank that holds the set) the
    /// model's metrics of θ; or why the model could not say (a Python model's `evaluate` raised).
    pub(super) fn held_out(&mut self, t: u64) -> Result<(), JobError> {
        self.evaluate = (t + 1).is_multiple_of(self.config.data.test_every) || t + 1 == self.iterations;
        self.eval = None;
        if let (Some(test), true) = (self.test.as_ref(), self.evaluate) {
            let eval = model(&mut self.python, &mut self.net).evaluate(test, &self.theta);
            self.eval = Some(eval.map_err(|e| JobError::Model(format!("{} (iteration {t})", e.on_rank(self.rank))))?);
        }
        Ok(())
    }

    /// Serial gradient descent of a Python model: every iteration's batch (every row, or the
    /// rows of [`Batches`]) in one `grad` call with unit weights, then the optimizer's step.
    fn python_reference(&mut self) -> Result<Vec<f64>, DataError> {
        let (mut net, mut theta) = self.open_python(None)?.expect("a Python model");
        if let Some(path) = self.config.model.init_path.as_deref() {
            theta = self.read_init(path)?;
        }
        let rows = self.all_rows()?;
        let mut batches = self.config.model.batch.map(|b| Batches::new(self.samples, b.min(self.samples), self.seed));
        let mut optimizer = Optimizer::default();
        let mut g = vec![0.0; theta.len()];
        for t in 0..self.iterations {
            let batch = batches.as_mut().map(|b| rows.select(b.rows(t).iter().copied()));
            let rows_t = batch.as_ref().unwrap_or(&rows);
            let ones = vec![1.0; rows_t.len()];
            net.gradient(None, rows_t, &ones, &theta, &mut g).map_err(|e| DataError::Model(e.to_string()))?;
            optimizer.step(&mut theta, &g, self.batch_size(t) as f64, &self.config.model, t);
        }
        Ok(theta)
    }
}

/// The prelude of CodedFedL: each client contributes its encoding G_j·W_j·[X̂_j Y_j], the
/// server (whose part is the u parity rows, points d..d + u) receives their sum as its rows.
impl Prelude for GradientDescent {
    fn contribution(&mut self, _rank: usize, worker: Option<usize>) -> Result<Vec<f64>, JobError> {
        let parity =
            self.parity.as_ref().ok_or_else(|| JobError::Unsupported("the plan has no parity allocation".into()))?;
        match worker {
            Some(w) => Ok(self.encode_client(parity, w)?),
            None => Ok(vec![0.0; self.contribution_len()]),
        }
    }

    fn contribution_len(&self) -> usize {
        self.parity.as_ref().map_or(0, |p| p.upload_len(self.inputs, self.outputs()))
    }

    /// Each client's ε_j = ½·log₂(1 + u/f²(X̂_j)) (App. Q, with W = I: the worst case; with
    /// global mini-batches, its largest over the batches it encodes).
    fn notes(&mut self, plan: &Plan) -> Result<Vec<String>, DataError> {
        let Some(parity) = plan.parity() else { return Ok(vec![]) };
        let eps = (0..parity.clients.len())
            .map(|k| {
                let mut most = f64::NEG_INFINITY;
                for b in 0..parity.batches {
                    let rows = self.rows(&parity.client_batch(k, b).map(|(i, _)| i).collect::<Vec<_>>())?;
                    let x: Vec<Vec<f64>> = (0..rows.len()).map(|k| rows.row(k).to_vec()).collect();
                    most = most.max(outrun_codes::codedfedl::privacy_epsilon(parity.u as f64, &x));
                }
                Ok(format!("{most:.3}"))
            })
            .collect::<Result<Vec<_>, DataError>>()?;
        Ok(vec![format!(
            "  privacy of each client's parity upload (App. Q, ε = ½·log₂(1 + u/f²), W = I{}), bits: {}",
            if parity.batches > 1 { "; the largest of its batches'" } else { "" },
            eps.join(", ")
        )])
    }

    fn gathered(&mut self, rank: usize, sum: Vec<f64>) {
        let (q, c) = (self.inputs, self.outputs());
        let multi = matches!(self.net, Net::MultiOutput { .. });
        let Some(part) = self.parts.get_mut(&rank).and_then(|p| p.first_mut()) else { return };
        let u = sum.len() / (q + c);
        let (mut x, mut t) = (Vec::with_capacity(u * q), Vec::with_capacity(u * c));
        for row in sum.chunks_exact(q + c) {
            x.extend_from_slice(&row[..q]);
            t.extend_from_slice(&row[q..]);
        }
        part.rows = if multi {
            Rows { targets: Some(t), ..Rows::from_vecs(q, x, vec![0.0; u]) }
        } else {
            Rows::from_vecs(q, x, t)
        };
    }
}

impl Resumable for GradientDescent {
    fn save(&self) -> Vec<(String, Vec<f64>)> {
        let mut v = vec![("theta".into(), self.theta.clone()), ("velocity".into(), self.optimizer.velocity.clone())];
        if !self.optimizer.second.is_empty() {
            v.push(("second_moment".into(), self.optimizer.second.clone()));
        }
        v
    }

    fn restore(&mut self, vectors: &[(String, Vec<f64>)]) -> Result<(), JobError> {
        for (i, (name, _)) in vectors.iter().enumerate() {
            if vectors[..i].iter().any(|(n, _)| n == name) {
                return Err(JobError::Checkpoint(format!("the checkpoint has `{name}` twice")));
            }
        }
        let find = |name: &str| vectors.iter().find(|(n, _)| n == name).map(|(_, v)| v.clone());
        let theta = find("theta").ok_or_else(|| JobError::Checkpoint("the checkpoint has no `theta`".into()))?;
        if theta.len() != self.params() {
            return Err(JobError::Checkpoint(format!(
                "the checkpoint's θ has {} values, the model ({}) {}",
                theta.len(),
                self.describe(),
                self.params()
            )));
        }
        let mut moments = vec![];
        for name in ["velocity", "second_moment"] {
            let v = find(name).unwrap_or_default();
            if !v.is_empty() && v.len() != self.params() {
                return Err(JobError::Checkpoint(format!(
                    "the checkpoint's {name} has {} values, not {}",
                    v.len(),
                    self.params()
                )));
            }
            moments.push(v);
        }
        let (second, velocity) = (moments.pop().unwrap_or_default(), moments.pop().unwrap_or_default());
        // the optimizer goes on as it was: Adam's moments are not SGD's velocity, and Adam from a
        // zero second moment at step t is no run's continuation
        let kind = self.config.model.optimizer;
        let adam = kind != outrun_config::OptimizerKind::Sgd;
        if adam == second.is_empty() {
            let wrote = if adam { "\"sgd\"" } else { "\"adam\" or \"adamw\"" };
            return Err(JobError::Checkpoint(format!(
                "the checkpoint was written with model.optimizer = {wrote}, this config has \"{}\": --resume goes \
                 on with the optimizer that wrote it (to start this one from its θ, give model.init_path = \
                 <run directory>/theta.txt instead)",
                kind.name()
            )));
        }
        if let Some((k, v)) = second.iter().enumerate().find(|(_, v)| !(**v >= 0.0 && v.is_finite())) {
            return Err(JobError::Checkpoint(format!(
                "the checkpoint's second_moment[{k}] = {v}: Adam's second moment is a finite number ≥ 0"
            )));
        }
        self.theta = theta;
        self.optimizer.velocity = velocity;
        self.optimizer.second = second;
        Ok(())
    }
}

impl Labeled for GradientDescent {
    /// Labels c ↦ top − c in place, top = C − 1 (binary: 1): its own inverse, exact on the
    /// integer labels, so flipping back restores them.
    fn flip_labels(&mut self, on: bool) {
        if on == self.flipped {
            return;
        }
        self.flipped = on;
        let top = match self.config.model.labels() {
            Labels::Classes(c) => (c - 1) as f64,
            Labels::Binary => 1.0,
            Labels::Real => return,
        };
        for part in self.parts.values_mut().flatten() {
            part.rows.y.mapv_inplace(|c| top - c);
        }
    }
}
