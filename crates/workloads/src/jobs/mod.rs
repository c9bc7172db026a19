//! Jobs: what is computed, behind one trait. One module per job; [`job`] returns the plan's and
//! [`shape`] reads a config's problem size, the only two places that ask which job a config
//! names. The drivers (the MPI engine, the simulator), the log and the report call [`Job`].
//!
//! | `job.kind` | module | state file | pattern |
//! |---|---|---|---|
//! | `gd` | `gd.rs`: (stochastic) gradient descent of a linear model or a network | `theta.txt` | collect tree, ring |
//! | `fl` | `fl.rs`: federated rounds of local SGD (gradient descent's data and models) | `theta.txt` | star |
//! | `matvec` | `matvec.rs`: y = A·x by coded rows, or power iteration | `y.txt` | collect tree |
//! | `pagerank` | `pagerank.rs`: PageRank on a graph | `ranks.txt` | shuffle |

mod fl;
mod gd;
mod matvec;
mod pagerank;

use std::sync::Arc;

use outrun_codes::{Graph, ShuffleNode};
use outrun_config::Config;
use outrun_config::JobConfig;
use outrun_plan::{Plan, Shape};
use outrun_proto::Frame;

pub use fl::Federated;
pub use gd::GradientDescent;
pub use matvec::Matvec;
pub use pagerank::Pagerank;

use crate::data::DataError;

/// Why a job cannot go on (the run stops with its one line).
#[derive(Clone, Debug, PartialEq, thiserror::Error)]
pub enum JobError {
    /// The result of iteration (round) `iteration` cannot be applied: the model diverged, a
    /// decoded vector is not finite, a power iteration met A·x = 0.
    #[error("{message}")]
    Diverged {
        /// The iteration.
        iteration: u64,
        /// The line.
        message: String,
    },
    /// The user's model raised or returned what the protocol refuses: its line names the module,
    /// the function, the rank and the iteration.
    #[error("{0}")]
    Model(String),
    /// The job's data could not be read or used.
    #[error(transparent)]
    Data(#[from] DataError),
    /// A checkpoint does not fit the job (its line names what is missing or of another size).
    #[error("{0}")]
    Checkpoint(String),
    /// The job cannot do what the plan asks of it (resume, take part in a prelude).
    #[error("{0}")]
    Unsupported(String),
}

/// What applying a delivered result gave.
#[derive(Clone, Debug)]
pub struct Applied {
    /// The loss at the model the result was computed on (NaN when the job has none); a power
    /// iteration's eigenvalue estimate.
    pub loss: f64,
    /// The new state, when there is one to record (for the trajectory, the metrics and the
    /// state file).
    pub state: Option<Vec<f64>>,
    /// The job's own error of the iteration, when applying computes one (a power iteration's
    /// residual ‖y − λx‖/‖y‖, PageRank's change ‖Π_k − Π_{k−1}‖₁).
    pub error: Option<f64>,
    /// The job is finished after this iteration (PageRank's change reached `job.tol`).
    pub done: bool,
}

impl Default for Applied {
    fn default() -> Self {
        Applied { loss: f64::NAN, state: None, error: None, done: false }
    }
}

/// What the logging rank records of an iteration besides its timing and decode.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct Metrics {
    /// The `normalized_error` column (what it holds: [`Job::error_label`]).
    pub error: Option<f64>,
    /// Accuracy on the held-out set (`test_accuracy`).
    pub accuracy: Option<f64>,
    /// The values of the job's own columns ([`Job::columns`]), in that order.
    pub columns: Vec<Option<f64>>,
}

/// A job: what is computed, how a delivered result is applied, and what a run records of it.
/// Built cheaply from the plan ([`job`]); [`Job::load`] reads what a rank computes on.
pub trait Job {
    /// The config spelling (`gd`, `matvec`, `pagerank`).
    fn name(&self) -> &'static str;
    /// One line naming the problem: runs of the same problem are compared together.
    fn problem(&self) -> String;
    /// What the `normalized_error` column holds.
    fn error_label(&self) -> &'static str {
        "normalized error"
    }
    /// Columns this job adds to `iterations.csv`, after the common ones.
    fn columns(&self) -> &'static [&'static str] {
        &[]
    }
    /// The final state's file in the run directory.
    fn state_file(&self) -> &'static str;
    /// Length of `rank`'s parts and messages (at a delivering rank: of the total).
    fn len(&self, rank: usize) -> usize;
    /// Length of the model the root broadcasts (and a ring starts from).
    fn model_len(&self) -> usize;
    /// The cost of `rank`'s computation in iteration `t` per point it holds, in units of one
    /// point of a full-batch linear model (the modelled compute time's factor: a mini-batch
    /// computes on b of d points, a network costs more per point, a federated client takes E
    /// local steps).
    fn work(&self, _rank: usize, _t: u64) -> f64 {
        1.0
    }
    /// The state before the next iteration, where it is what `apply` returns (gradient
    /// descent's and federated learning's θ, PageRank's ranks): `trajectory.csv`'s first row and
    /// the first iteration's `relative_change` start from it. None: the state has no value before
    /// the first iteration (a mat-vec product).
    fn state(&self) -> Option<Vec<f64>> {
        None
    }
    /// Length of the state `apply` returns (the state file's values).
    fn state_len(&self) -> usize {
        self.model_len()
    }
    /// Estimated peak bytes of every rank of `plan` (`outrun check`).
    fn memory(&mut self, plan: &Plan) -> Result<Vec<u64>, DataError>;
    /// Read what `ranks` of `plan` compute on (their rows, their coded rows, the graph).
    fn load(&mut self, plan: &Plan, ranks: &[usize]) -> Result<(), DataError>;
    /// Read what the logging rank's metrics need (θ*, a held-out set), before the timed loop.
    fn load_metrics(&mut self) -> Result<(), DataError> {
        Ok(())
    }
    /// Yield the core every `rows` rows of computation (hosts with more ranks than cores).
    fn pace(&mut self, _rows: usize) {}
    /// The model of the next iteration.
    fn model(&mut self) -> Arc<Frame>;
    /// Rank `rank`'s parts for iteration `t`, computed on `model`: all of them, or the `parts`
    /// selected (in that order); or why the run must stop (a Python model's `grad` raised).
    fn compute(&mut self, rank: usize, t: u64, model: &Frame, parts: Option<&[usize]>) -> Result<Vec<Frame>, JobError>;
    /// Files the run directory keeps a copy of, beside `config.toml` (a Python model's module:
    /// the code that computed the run, as it was).
    fn sources(&self) -> Vec<std::path::PathBuf> {
        vec![]
    }
    /// Whether the simulator may compute this job's values (a Python model's gradients are its
    /// module's, which the simulator never runs: it times such a job without its values).
    fn simulates_values(&self) -> bool {
        true
    }
    /// Apply the delivered total of iteration `t` (the job may keep the vector); what it gave,
    /// or why the run must stop (e.g. the model diverged).
    fn apply(&mut self, t: u64, total: Frame) -> Result<Applied, JobError>;
    /// The job's part in the plan's prelude (a one-time phase before the loop: CodedFedL's
    /// parity upload), if it has one.
    fn prelude(&mut self) -> Option<&mut dyn Prelude> {
        None
    }
    /// The logging rank's metrics of what `apply` gave.
    fn metrics(&self, applied: &Applied) -> Metrics {
        Metrics { error: applied.error, ..Metrics::default() }
    }
    /// The final state file's text for `state`.
    fn state_text(&self, state: &[f64]) -> String {
        state.iter().map(|v| format!("{v:e}\n")).collect()
    }
    /// The state a serial computation on the whole problem reaches after the plan's
    /// iterations (what exactness is checked against).
    fn reference(&mut self, plan: &Plan) -> Result<Vec<f64>, DataError>;
    /// The job as the shuffle pattern runs it, if it is a job on a graph.
    fn graph(&mut self) -> Option<&mut dyn GraphJob> {
        None
    }
    /// Its checkpoints, if a run of it can be resumed.
    fn resumable(&mut self) -> Option<&mut dyn Resumable> {
        None
    }
    /// Its class labels, if a label-flip fault (`[faults]`) can corrupt them.
    fn labeled(&mut self) -> Option<&mut dyn Labeled> {
        None
    }
}

/// A job whose run can be checkpointed and resumed (`run.checkpoint_every`, `--resume`).
pub trait Resumable {
    /// The state a checkpoint keeps, by name (the model, the optimizer's velocity).
    fn save(&self) -> Vec<(String, Vec<f64>)>;
    /// Go on from a checkpoint's state (every rank, before the first iteration).
    fn restore(&mut self, vectors: &[(String, Vec<f64>)]) -> Result<(), JobError>;
}

/// Go on from a checkpoint's state, or say that the job cannot.
pub fn restore(job: &mut dyn Job, vectors: &[(String, Vec<f64>)]) -> Result<(), JobError> {
    let name = job.name();
    match job.resumable() {
        Some(r) => r.restore(vectors),
        None => Err(JobError::Unsupported(format!("job.kind = \"{name}\" cannot resume from a checkpoint"))),
    }
}

/// A job with class labels that a label-flip fault (`[faults] kind = "label-flip"`) corrupts.
pub trait Labeled {
    /// Compute on flipped labels (c ↦ C − 1 − c) until told otherwise.
    fn flip_labels(&mut self, on: bool);
}

/// A job's part in the plan's prelude (`outrun_plan::Plan::prelude`): what each rank
/// contributes to the sum its root receives, and what the root does with it.
pub trait Prelude {
    /// Rank `rank`'s contribution (worker `worker`'s; None: the root, whose zeros give the
    /// sum's length).
    fn contribution(&mut self, rank: usize, worker: Option<usize>) -> Result<Vec<f64>, JobError>;
    /// The contribution's length, without computing it (timing simulations).
    fn contribution_len(&self) -> usize;
    /// The root (`rank`) receives the sum of every rank's contribution.
    fn gathered(&mut self, rank: usize, sum: Vec<f64>);
    /// Lines `outrun plan` adds about the prelude that need the data (CodedFedL: each client's
    /// privacy budget).
    fn notes(&mut self, _plan: &Plan) -> Result<Vec<String>, DataError> {
        Ok(vec![])
    }
}

/// A job on a graph, run by the shuffle pattern's driver: every server Maps its vertices'
/// values along their out-edges, the values are shuffled, and each Reduces its own vertices.
pub trait GraphJob {
    /// The graph (loaded by [`Job::load`]).
    fn graph(&self) -> &Graph;
    /// The new values of `node`'s reduced vertices from its decoded sums and the state `x`.
    fn reduce(&self, node: &ShuffleNode, x: &[f64]) -> Vec<f64>;
}

/// The job of `plan`.
pub fn job(plan: &Plan) -> Box<dyn Job> {
    match &plan.job.config {
        JobConfig::Gd(c) => Box::new(GradientDescent::new(plan, c)),
        JobConfig::Fl(c) => Box::new(Federated::new(plan, c)),
        JobConfig::Matvec(c) => Box::new(Matvec::new(plan, c)),
        JobConfig::Pagerank(c) => Box::new(Pagerank::new(plan, c)),
    }
}

/// Refuse, in one line naming the field that sizes it, a job that making would fail to
/// allocate: a gradient job's θ₀ and, with `[features]`, the random map's p × q weights are
/// allocated when the job is made (by `outrun check`, `plan`, `simulate` and every rank of a
/// run), before any data is read, and a failed allocation aborts the process; the other jobs
/// allocate by sizes their configs bound. The limit is 2^40 bytes and `have` (this machine's
/// available memory), if known.
pub fn model_fits(plan: &Plan, have: Option<u64>) -> Result<(), DataError> {
    match plan.job.config.train() {
        Some(c) => gd::model_fits(plan, c, have),
        None => Ok(()),
    }
}

/// What the plan records of the model that only its own code can tell: a Python model's size,
/// from its module's `init` (None for every other job).
pub(crate) fn python_model(plan: &Plan) -> Result<Option<outrun_plan::PythonModel>, DataError> {
    match plan.job.config.train() {
        Some(c) if c.python.is_some() => GradientDescent::new(plan, c).python_model(plan.run.deadline),
        _ => Ok(None),
    }
}

/// The problem size of `cfg`: the data set's samples and features (gradient descent; its
/// held-out set, if any, is read and checked too), the matrix's rows and columns (mat-vec), or
/// the graph's vertices (PageRank).
pub fn shape(cfg: &Config) -> Result<Shape, DataError> {
    match &cfg.job {
        JobConfig::Gd(_) | JobConfig::Fl(_) => gd::shape(cfg.gd(), cfg.run.seed),
        JobConfig::Matvec(c) => matvec::shape(c, cfg.run.seed),
        JobConfig::Pagerank(c) => pagerank::shape(c, cfg.run.seed),
    }
}
