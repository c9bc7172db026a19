//! # outrun-runlog: the timing log format
//!
//! A run directory is what execution leaves behind and what reports read; the MPI engine and
//! the simulator write the same format. See `docs/logs.md`.
//!
//! - [`files`]: creating run directories, line-flushed writers, the [`Summary`], quantiles.
//! - [`book`]: the logging rank's per-iteration book-keeping (`iterations.csv`, trajectory,
//!   `theta.txt`, `summary.json`).
//! - [`read`]: loading a run directory back (summary, iterations, rank events).

pub mod book;
pub mod files;
pub mod read;

pub use book::{Book, IterationRecord, RunInfo};
pub use files::{create_run_dir, quantile, Lines, Summary};
