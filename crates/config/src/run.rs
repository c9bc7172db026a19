//! `[run]`: name, seed, iterations, output directory, deadline.

use serde::{Deserialize, Serialize};

use super::exec::check_seconds;
use super::{err, ConfigError};

/// `[run]`
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct RunConfig {
    /// Name of the run; the run directory is `<out_dir>/<name>-<timestamp>`.
    pub name: String,
    /// Seed of every random choice (data, codes, stragglers).
    #[serde(default = "default_seed")]
    pub seed: u64,
    /// Iterations (gradient-descent steps).
    pub iterations: u64,
    /// Parent directory of run directories.
    #[serde(default = "default_out_dir")]
    pub out_dir: String,
    /// Seconds an iteration may wait for the results it needs before the run fails.
    #[serde(default = "default_deadline")]
    pub deadline: f64,
    /// Write the model after every iteration to `trajectory.csv` (for small models and tests).
    #[serde(default)]
    pub trajectory: bool,
    /// Write a checkpoint (the model, the optimizer's state, the iteration) every this many
    /// iterations, to `checkpoint.json` in the run directory (`outrun train --resume` goes on
    /// from it).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub checkpoint_every: Option<u64>,
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

/// Longest run name: a run directory's name is `<name>-<YYYYmmdd-HHMMSS>[-k]`, and file
/// systems allow 255 bytes per name.
pub const MAX_NAME: usize = 200;

/// Whether `c` may be part of a name that names a directory (`run.name`, a sweep's name).
pub(crate) fn name_char(c: char) -> bool {
    c.is_ascii_alphanumeric() || "-_.".contains(c)
}

/// Most iterations a run may ask for (the logs and the straggler processes are sized by it).
pub(super) const MAX_ITERATIONS: u64 = 100_000_000;

impl RunConfig {
    pub(super) fn validate(&self) -> Result<(), ConfigError> {
        if self.name.is_empty() || !self.name.chars().all(name_char) {
            return err(
                "run.name",
                format!("`{}` must be non-empty and use only letters, digits, '-', '_', '.'", self.name),
            );
        }
        if self.name.len() > MAX_NAME {
            return err(
                "run.name",
                format!(
                    "is {} characters long: at most {MAX_NAME} (it names the run directory, with a time stamp)",
                    self.name.len()
                ),
            );
        }
        if self.iterations == 0 {
            return err("run.iterations", "must be at least 1");
        }
        if self.iterations > MAX_ITERATIONS {
            return err("run.iterations", format!("= {}: at most {MAX_ITERATIONS}", self.iterations));
        }
        if self.checkpoint_every == Some(0) {
            return err("run.checkpoint_every", "must be at least 1 (leave it out for no checkpoints)");
        }
        check_seconds("run.deadline", self.deadline, false)
    }
}
