//! A build without the `embed` feature: no module can be opened, so no other call is reached.

use std::path::Path;

use crate::{Evaluation, PyError};

/// No interpreter to start.
pub(crate) fn start() {}

pub(crate) enum Module {}

pub(crate) enum Matrix {}

impl Module {
    pub(crate) fn import(path: &Path) -> Result<Module, PyError> {
        Err(PyError::new(
            path,
            "import",
            "cannot run: this outrun was built without Python (the binary's `python` feature, on by default)",
        ))
    }

    pub(crate) fn has_evaluate(&self) -> bool {
        match *self {}
    }

    pub(crate) fn init(&self, _: &Path, _: &toml::Table, _: u64, _: usize) -> Result<Vec<f64>, PyError> {
        match *self {}
    }

    pub(crate) fn matrix(&self, _: Vec<f64>, _: usize) -> Matrix {
        match *self {}
    }

    pub(crate) fn grad(
        &self,
        _: &Path,
        _: &[f64],
        _: &Matrix,
        _: &[f64],
        _: &[f64],
        _: &mut [f64],
    ) -> Result<f64, PyError> {
        match *self {}
    }

    pub(crate) fn evaluate(&self, _: &Path, _: &[f64], _: &Matrix, _: &[f64]) -> Result<Evaluation, PyError> {
        match *self {}
    }
}
