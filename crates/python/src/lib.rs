//! # outrun-python: a user's model in Python
//!
//! The one crate that talks to Python, as `outrun-engine` is the one that talks MPI. A rank of a
//! `[job] kind = "python"` run embeds one interpreter, imports the module the config names once,
//! and asks it for the gradient of its rows; everything else (the plan, coding, aggregation,
//! injection, the optimizer, logs, checkpoints) stays outrun's. The module's protocol
//! (docs/python.md has it with examples):
//!
//! - `init(options, seed, features) -> θ₀`: called before the other functions, each time the
//!   model is opened (by a rank; by the planning process);
//!   `options` is the config's `[job.options]` table as a dict, `features` the width of a row;
//!   the length of θ₀ is the model's parameter count P. It must be a function of its arguments:
//!   every rank calls it, and the ranks compare what they got.
//! - `grad(theta, X, y, w) -> (g, loss)`: `theta` (P,), `X` (ℓ, features), `y` (ℓ,) and `w` (ℓ,)
//!   float64 NumPy arrays; `g = Σₖ wₖ·∇ℓ(θ; xₖ, yₖ)` (length P) and `loss = Σₖ wₖ·ℓ(θ; xₖ, yₖ)`.
//!   Every scheme combines these weighted sums linearly, so any model the module can
//!   differentiate is decoded exactly.
//! - `evaluate(theta, X, y) -> {"accuracy": a, "loss": l}` (optional; either key may be absent,
//!   not both): the held-out set's metrics, means over its rows.
//!
//! Arrays cross without copies where the data stays put: a part's rows become a NumPy array
//! once (kept between iterations, [`Matrix`]); θ, the labels and weights (ℓ + P values against
//! the ℓ·P of the gradient) are copied per call; what the module returns (a NumPy array, a CPU
//! `torch` tensor, a list) is read in place when it already is contiguous float64.
//!
//! Without the `embed` feature (on by default) [`Module::open`] refuses with one line.
#![deny(missing_docs)]

#[cfg(feature = "embed")]
mod embed;
#[cfg(feature = "embed")]
use embed as imp;
#[cfg(not(feature = "embed"))]
mod absent;
#[cfg(not(feature = "embed"))]
use absent as imp;

use std::path::Path;

/// What went wrong in (or with) the user's module: which function, and Python's last line.
#[derive(Clone, Debug, PartialEq, thiserror::Error)]
#[error("python module {module}: {function}() {what}")]
pub struct PyError {
    /// The module's path.
    pub module: String,
    /// The protocol's function (`import` for the import itself).
    pub function: &'static str,
    /// What happened: the exception's last line (`ValueError: ...`), or what was wrong with
    /// what the function returned.
    pub what: String,
}

impl PyError {
    fn new(module: &Path, function: &'static str, what: impl Into<String>) -> Self {
        PyError { module: module.display().to_string(), function, what: what.into() }
    }

    /// The one line a rank prints: the module, the function, the rank and what happened.
    pub fn on_rank(&self, rank: usize) -> String {
        format!("python module {}: {}() on rank {rank} {}", self.module, self.function, self.what)
    }
}

/// A user's module, imported into this process's interpreter.
pub struct Module {
    inner: imp::Module,
    path: std::path::PathBuf,
}

impl std::fmt::Debug for Module {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Module").field("path", &self.path).field("evaluate", &self.has_evaluate()).finish()
    }
}

/// Rows kept as a NumPy array between calls (a part's rows in full-batch training).
pub struct Matrix(imp::Matrix);

/// The held-out metrics `evaluate` returned.
#[derive(Clone, Copy, Debug, Default, PartialEq)]
pub struct Evaluation {
    /// `accuracy`, if the module gave it.
    pub accuracy: Option<f64>,
    /// `loss`, if the module gave it.
    pub loss: Option<f64>,
}

/// Start the embedded interpreter on the calling thread, which Python then takes for its main
/// thread (the only one where a module may call `signal.signal`). The planning process's probe
/// imports the module on a thread of its own (so that a stuck module is bounded) and a rank
/// imports it on its main thread: started by whichever came first, a module that calls
/// `signal.signal` at import passed `outrun check` and failed on rank 0 of the run. Called from
/// the main thread before the probe, it fails both alike. Idempotent; nothing without `embed`.
pub fn start() {
    imp::start();
}

impl Module {
    /// Import the module at `path` (its directory joins `sys.path`, so it may import its
    /// neighbours) and call its `init(options, seed, features)`: the module and θ₀ (finite,
    /// not empty). Importing the same file again in this process reuses the loaded module.
    pub fn open(path: &Path, options: &toml::Table, seed: u64, features: usize) -> Result<(Module, Vec<f64>), PyError> {
        match std::fs::metadata(path) {
            Err(e) => return Err(PyError::new(path, "import", format!("cannot read the file: {e}"))),
            // a FIFO, socket or device: importing would open it (a FIFO blocks until written to)
            Ok(meta) if !meta.is_file() => {
                return Err(PyError::new(path, "import", "cannot read the file: not a regular file"))
            }
            Ok(_) => {}
        }
        let module = Module { inner: imp::Module::import(path)?, path: path.to_path_buf() };
        let theta = module.inner.init(&module.path, options, seed, features)?;
        if theta.is_empty() {
            return Err(PyError::new(path, "init", "returned no parameters: θ₀ must have at least one value"));
        }
        check_finite(path, "init", "θ₀", &theta)?;
        Ok((module, theta))
    }

    /// Whether the module defines `evaluate`.
    pub fn has_evaluate(&self) -> bool {
        self.inner.has_evaluate()
    }

    /// `x` (row-major, `cols` wide) as an array the module reads in place call after call.
    pub fn matrix(&self, x: Vec<f64>, cols: usize) -> Matrix {
        Matrix(self.inner.matrix(x, cols))
    }

    /// `grad(theta, X, y, w)` into `g` (overwritten; its length is the model's P); returns the
    /// loss. Refuses a result of the wrong length, or with a value that is not finite.
    pub fn grad(&self, theta: &[f64], x: &Matrix, y: &[f64], w: &[f64], g: &mut [f64]) -> Result<f64, PyError> {
        let loss = self.inner.grad(&self.path, theta, &x.0, y, w, g)?;
        check_finite(&self.path, "grad", "the gradient", g)?;
        if !loss.is_finite() {
            return Err(PyError::new(&self.path, "grad", format!("returned a loss of {loss}: not finite")));
        }
        Ok(loss)
    }

    /// `evaluate(theta, X, y)` on held-out rows.
    pub fn evaluate(&self, theta: &[f64], x: &Matrix, y: &[f64]) -> Result<Evaluation, PyError> {
        self.inner.evaluate(&self.path, theta, &x.0, y)
    }
}

/// A refusal naming the first value of `v` that is not finite.
fn check_finite(module: &Path, function: &'static str, what: &str, v: &[f64]) -> Result<(), PyError> {
    match v.iter().position(|x| !x.is_finite()) {
        None => Ok(()),
        Some(k) => Err(PyError::new(module, function, format!("returned {what} with {} at index {k}", v[k]))),
    }
}
