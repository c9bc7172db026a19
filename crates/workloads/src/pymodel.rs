//! A model written in Python (`[job] kind = "python"`): gradient descent's model when the config
//! names a module. The job, the batches, the optimizer and the metrics are gradient descent's
//! (`jobs/gd.rs`); this is what the module is asked for — θ₀, a part's weighted gradient sum
//! and loss, the held-out metrics — through `outrun-python`, which holds the interpreter.

use std::collections::HashMap;

use outrun_config::PythonConfig;
use outrun_plan::PythonModel;
use outrun_python::{Matrix, Module};

use crate::data::{DataError, Rows};

/// The user's module, imported on this rank, and its arrays of rows.
pub(crate) struct PyNet {
    module: Module,
    /// A part's rows as an array the module reads in place, by (rank, part), built at its first
    /// full-batch computation and kept (a mini-batch's rows are new every iteration).
    parts: HashMap<(usize, usize), Matrix>,
    /// The held-out rows, as an array (the logging rank).
    test: Option<Matrix>,
}

impl PyNet {
    /// Import `config.module` and call its `init`: the model and θ₀, whose length and bits
    /// must be those the plan recorded (`expect`) when it has them. `rank` names who failed.
    pub(crate) fn open(
        config: &PythonConfig,
        seed: u64,
        inputs: usize,
        expect: Option<PythonModel>,
        rank: Option<usize>,
    ) -> Result<(PyNet, Vec<f64>), DataError> {
        let path = std::path::Path::new(&config.module);
        let who = |e: outrun_python::PyError| match rank {
            Some(r) => DataError::Model(e.on_rank(r)),
            None => DataError::Model(e.to_string()),
        };
        let (module, theta) = Module::open(path, &config.options, seed, inputs).map_err(who)?;
        if let Some(want) = expect.filter(|&want| want != described(&theta)) {
            let rank = rank.map_or(String::new(), |r| format!(" on rank {r}"));
            return Err(DataError::Model(format!(
                "python module {}: init(){rank} returned θ₀ of {} values (fingerprint {:016x}), but the planning process's had {} (fingerprint {:016x}): init must be a function of (options, seed, features) alone",
                config.module,
                theta.len(),
                fingerprint(&theta),
                want.params,
                want.init
            )));
        }
        Ok((PyNet { module, parts: HashMap::new(), test: None }, theta))
    }

    /// Whether the module defines `evaluate` (needed for `data.test_path`).
    pub(crate) fn has_evaluate(&self) -> bool {
        self.module.has_evaluate()
    }

    /// `Σ c·∇ℓ` over `rows` into `g` and the weighted loss (returned). `part`: the (rank,
    /// part) whose whole rows these are, kept as an array for the next iterations; None for
    /// rows of this iteration only.
    pub(crate) fn gradient(
        &mut self,
        part: Option<(usize, usize)>,
        rows: &Rows,
        coef: &[f64],
        theta: &[f64],
        g: &mut [f64],
    ) -> Result<f64, outrun_python::PyError> {
        let fresh;
        let x = match part {
            Some(key) => {
                let module = &self.module;
                self.parts.entry(key).or_insert_with(|| module.matrix(rows.features().to_vec(), rows.p()))
            }
            None => {
                fresh = self.module.matrix(rows.features().to_vec(), rows.p());
                &fresh
            }
        };
        self.module.grad(theta, x, rows.labels(), coef, g)
    }

    /// The module's accuracy and mean loss of θ on the held-out `rows`.
    pub(crate) fn evaluate(
        &mut self,
        rows: &Rows,
        theta: &[f64],
    ) -> Result<outrun_python::Evaluation, outrun_python::PyError> {
        let module = &self.module;
        let x = self.test.get_or_insert_with(|| module.matrix(rows.features().to_vec(), rows.p()));
        self.module.evaluate(theta, x, rows.labels())
    }
}

/// θ₀'s length and fingerprint, as the plan records them.
pub(crate) fn described(theta: &[f64]) -> PythonModel {
    PythonModel { params: theta.len(), init: fingerprint(theta) }
}

/// FNV-1a over the bits of `v` (equal vectors, bit for bit, have equal fingerprints).
fn fingerprint(v: &[f64]) -> u64 {
    v.iter()
        .flat_map(|x| x.to_bits().to_le_bytes())
        .fold(0xcbf2_9ce4_8422_2325, |h, b| (h ^ u64::from(b)).wrapping_mul(0x0000_0100_0000_01b3))
}
