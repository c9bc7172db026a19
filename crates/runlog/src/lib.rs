//! # outrun-runlog: the timing log format
//!
//! A run directory is what execution leaves behind and what reports read; the MPI engine and
//! the simulator write the same format. See `docs/logs.md`.
//!
//! - [`create_run_dir`], [`Lines`] (line-flushed writers), [`Summary`], [`quantile`].
//! - [`Book`]: the logging rank's per-iteration book-keeping (`iterations.csv`, trajectory,
//!   `theta.txt`, `summary.json`).
//! - [`event`]: the typed records of the rank logs ([`Event`]), written by both drivers and
//!   read back by the report.
//! - [`read`]: loading a run directory back (summary, iterations, rank events).
//! - [`Checkpoint`]: `checkpoint.json`, a run's state to go on from.
#![deny(missing_docs)]

mod book;
mod checkpoint;
pub mod event;
mod files;
pub mod read;

pub use book::{steady_mean, Book, IterationRecord, Latency, RunInfo, COLUMNS};
pub use checkpoint::{same_problem, Checkpoint, CHECKPOINT, CHECKPOINT_FORMAT};
pub use event::Event;
pub use files::{
    create_run_dir, dir_bytes, free_bytes, outgrows, quantile, utc_stamp, write_whole, Lines, Summary, FORMAT,
};
