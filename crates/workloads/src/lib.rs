//! # outrun-workloads: what is computed
//!
//! - [`data`]: synthetic linear and logistic data sets generated row by row from the seed (so a
//!   worker generates exactly its rows), and the LIBSVM reader (every rank streams the file and
//!   keeps its own rows).
//! - [`kernel`]: the weighted gradient-and-loss kernel of a linear model:
//!   `Σ c·∇ℓ(θ; x)` over a node's points, fused so the data is read once.
//! - [`net`]: the models (linear, least squares on C outputs, softmax networks with ReLU hidden
//!   layers through BLAS), their flat parameter layout and initialisation.
//! - [`batch`]: mini-batches every rank, scheme and the reference draw alike.
//! - [`features`]: random Fourier features, drawn alike by every rank from the seed.
//! - [`graph`]: PageRank graphs (SNAP edge lists, seeded generators).
//! - [`matrix`]: mat-vec matrices (generated from the seed, or Matrix Market files) and vectors.
//! - [`Job`]: what is computed, one implementation per job ([`GradientDescent`], [`Federated`], [`Matvec`],
//!   [`Pagerank`], each in its module under `jobs/`); [`job`] gives the plan's, [`resolve`] turns
//!   a config into its plan (the problem's size read by [`shape`]).
//! - [`reference`](mod@reference): plain serial gradient descent on the whole data set — the independent
//!   computation exactness tests compare against.
//! - [`metrics`]: normalised error, relative change, step sizes, the optimizer step.
//! - [`load_config`]: read a config file (and the straggler parameter file it names).
//! - [`input`]: opening input files, refusing what is not a regular file (a FIFO would block).
#![deny(missing_docs)]

pub mod batch;
pub mod bench;
mod blas;
pub mod csv;
pub mod data;
pub mod features;
pub mod graph;
pub mod idx;
pub mod input;
mod jobs;
pub mod kernel;
mod libsvm;
mod lines;
pub mod matrix;
pub mod memory;
pub mod metrics;
mod model;
pub mod net;
mod pymodel;
pub mod reference;
mod rowcache;
mod rows;
mod shapes;

pub use data::{DataError, Rows, Shape};
pub use jobs::{
    job, model_fits, restore, shape, Applied, Federated, GradientDescent, GraphJob, Job, JobError, Labeled, Matvec,
    Metrics, Pagerank, Prelude, Resumable,
};
pub use shapes::keep_parsed_rows;

/// Rows between pauses when the host is oversubscribed (why this many: docs/performance.md
/// §17).
pub const PACE_ROWS: usize = 64;

use std::path::Path;

use outrun_config::{Config, ConfigError};
use outrun_plan::Plan;

/// Why a config cannot become a plan: its data set, matrix or graph cannot be read, or the
/// scheme cannot be built for the problem's size.
#[derive(Debug, thiserror::Error)]
pub enum ResolveError {
    /// The data could not be read.
    #[error("{0}")]
    Data(#[from] DataError),
    /// The plan could not be built.
    #[error("{0}")]
    Config(#[from] ConfigError),
}

/// The plan of `cfg`: the problem's shape read from its data (and the held-out set checked),
/// then the scheme built for it.
pub fn resolve(cfg: &Config) -> Result<Plan, ResolveError> {
    let shape = shape(cfg)?;
    plan(cfg, shape)
}

/// The plan of `cfg` for a problem of `shape` (read by [`shape`]): the scheme built for it
/// (`outrun_plan::build`), and what only the job's own code can tell — a Python model's size,
/// from its module's `init`, so that no other process needs to import it to know the payloads.
/// A model larger than this machine's available memory (or 2^40 bytes) is refused
/// ([`model_fits`]): the job that holds it is made here, and by every command that plans.
pub fn plan(cfg: &Config, shape: Shape) -> Result<Plan, ResolveError> {
    let mut plan = outrun_plan::build(cfg, shape)?;
    // before anything makes the job (a Python model's probe does, here): a model this machine
    // cannot hold is refused in one line, not aborted on (and again once the module has said
    // how large its θ₀ is)
    jobs::model_fits(&plan, memory::available())?;
    plan.job.python = jobs::python_model(&plan)?;
    if plan.job.python.is_some() {
        jobs::model_fits(&plan, memory::available())?;
    }
    // the label map, and the column means data.missing = "mean" fills with: computed here, so a
    // column with no value to take the mean of is refused before MPI starts
    let csv = cfg.job.train().map(|t| &t.data).filter(|d| d.kind == outrun_config::DataKind::Csv);
    if let Some(data) =
        csv.filter(|d| d.labels == outrun_config::LabelValues::Auto || d.missing == outrun_config::Missing::Mean)
    {
        plan.job.label_names = data::csv_format(data, Some(cfg.run.seed))?.names.unwrap_or_default();
    }
    Ok(plan)
}

/// Why a config could not be loaded.
#[derive(Debug, thiserror::Error)]
pub enum LoadError {
    /// The file could not be read.
    #[error("cannot read config `{path}`: {source}")]
    Read {
        /// The path.
        path: String,
        /// The error.
        source: std::io::Error,
    },
    /// The config is invalid.
    #[error("{path}: {source}")]
    Config {
        /// The path.
        path: String,
        /// The error.
        source: ConfigError,
    },
}

/// The directory of the config file at `path`, which the paths inside it are relative to.
pub fn config_dir(path: &Path) -> std::path::PathBuf {
    path.parent().filter(|d| !d.as_os_str().is_empty()).unwrap_or(Path::new(".")).to_path_buf()
}

/// Largest config file read (a config is a few kilobytes; `/dev/zero` must not be read forever).
pub const MAX_CONFIG_BYTES: u64 = 1 << 20;

fn read_bounded(path: &Path) -> std::io::Result<String> {
    use std::io::Read;
    let f = input::open(path)?;
    let mut text = String::new();
    f.take(MAX_CONFIG_BYTES + 1).read_to_string(&mut text)?;
    if text.len() as u64 > MAX_CONFIG_BYTES {
        return Err(std::io::Error::other(format!("larger than {MAX_CONFIG_BYTES} bytes: not a config file")));
    }
    Ok(text)
}

/// Read and validate the config at `path` with `overrides`, resolving a straggler parameter
/// file (`stragglers.file`) into per-worker lists. Paths inside the file are relative to its
/// directory; paths given in `overrides` to the current directory.
pub fn load_config(path: &Path, overrides: &[String]) -> Result<Config, LoadError> {
    let shown = path.display().to_string();
    let text = read_bounded(path).map_err(|e| LoadError::Read { path: shown.clone(), source: e })?;
    let wrap = |e: ConfigError| LoadError::Config { path: shown.clone(), source: e };
    let mut cfg = outrun_config::parse_in(&text, &config_dir(path), overrides).map_err(wrap)?;
    let workers = cfg.workers();
    let read = |file: &str, field: &str| {
        read_bounded(Path::new(file)).map_err(|e| wrap(ConfigError::new(field, format!("cannot read `{file}`: {e}"))))
    };
    if let Some(file) = cfg.stragglers.params_file().map(str::to_string) {
        let body = read(&file, "stragglers.file")?;
        cfg.stragglers.resolve_file(&body, &file, workers).map_err(wrap)?;
        cfg.validate().map_err(wrap)?;
    }
    if let Some(file) = cfg.links.params_file().map(str::to_string) {
        let body = read(&file, "links.file")?;
        cfg.links.resolve_file(&body, &file, workers).map_err(wrap)?;
        cfg.validate().map_err(wrap)?;
    }
    Ok(cfg)
}
