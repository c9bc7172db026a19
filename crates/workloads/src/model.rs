//! What a training job differentiates: one interface for the built-in networks ([`Net`]) and
//! the user's Python module ([`PyNet`]). Gradient descent and federated learning ask a model
//! for a block of rows' weighted gradient sum and for its held-out metrics, and never which
//! model it is; every scheme sums those per-part gradients linearly, so any model stays exact.

use outrun_python::{Evaluation, PyError};

use crate::data::Rows;
use crate::net::Net;
use crate::pymodel::PyNet;

/// A model a training job differentiates.
pub(crate) trait Model {
    /// `Σ c·∇ℓ(θ; x)` over `rows` into `g` (overwritten), returning `Σ c·ℓ`. `part`: the (rank,
    /// part) whose whole rows these are, which a model may keep between calls (None: rows of
    /// this call only); `pace`: rows between yields of the core (hosts with more ranks than
    /// cores).
    fn gradient(
        &mut self,
        part: Option<(usize, usize)>,
        rows: &Rows,
        coef: &[f64],
        theta: &[f64],
        g: &mut [f64],
        pace: usize,
    ) -> Result<f64, PyError>;

    /// The accuracy and mean loss of θ on the held-out `rows`.
    fn evaluate(&mut self, rows: &Rows, theta: &[f64]) -> Result<Evaluation, PyError>;
}

impl Model for Net {
    fn gradient(
        &mut self,
        _part: Option<(usize, usize)>,
        rows: &Rows,
        coef: &[f64],
        theta: &[f64],
        g: &mut [f64],
        pace: usize,
    ) -> Result<f64, PyError> {
        Ok(Net::gradient(self, rows, coef, theta, g, pace, &mut std::thread::yield_now))
    }

    fn evaluate(&mut self, rows: &Rows, theta: &[f64]) -> Result<Evaluation, PyError> {
        let (accuracy, loss) = Net::evaluate(self, rows, theta);
        Ok(Evaluation { accuracy: Some(accuracy), loss: Some(loss) })
    }
}

impl Model for PyNet {
    fn gradient(
        &mut self,
        part: Option<(usize, usize)>,
        rows: &Rows,
        coef: &[f64],
        theta: &[f64],
        g: &mut [f64],
        _pace: usize,
    ) -> Result<f64, PyError> {
        PyNet::gradient(self, part, rows, coef, theta, g)
    }

    fn evaluate(&mut self, rows: &Rows, theta: &[f64]) -> Result<Evaluation, PyError> {
        PyNet::evaluate(self, rows, theta)
    }
}
