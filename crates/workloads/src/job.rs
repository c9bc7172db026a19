//! Jobs: what the drivers compute and apply, behind `outrun_proto::Job`.
//!
//! - [`GradientDescent`]: every node computes `Σ c·∇ℓ(θ; x)` (and the loss) over each of its
//!   parts; the delivered total updates θ ← θ − η_t·(g/d + λθ). The engine holds one rank's
//!   rows; the simulator's arithmetic holds every rank's.
//! - [`Timing`]: nothing is computed, vectors are lengths (timing-only simulations).

use std::collections::HashMap;
use std::sync::Arc;

use outrun_plan::config::{Config, ModelConfig};
use outrun_plan::Plan;
use outrun_proto::{Applied, Frame, Job, JobError, Len};

use crate::data::{rows, DataError, Rows};
use crate::kernel::gradient_paced;
use crate::metrics::gd_step;

/// One part of a node: its rows and their coefficients.
struct Part {
    rows: Rows,
    coef: Vec<f64>,
}

/// Gradient descent of a linear model.
pub struct GradientDescent {
    model: ModelConfig,
    samples: usize,
    p: usize,
    theta: Vec<f64>,
    parts: HashMap<usize, Vec<Part>>,
    pace: usize,
}

/// Rows between pauses when the host is oversubscribed (measured: the model-latency p95 of
/// `make demo` falls from 2.9 ms unpaced to 0.55 ms; docs/performance.md).
pub const PACE_ROWS: usize = 64;

impl GradientDescent {
    /// The job for `ranks` (their rows are loaded: generated, or read from the file) of `plan`,
    /// with `p` features.
    pub fn new(cfg: &Config, plan: &Plan, p: usize, ranks: impl IntoIterator<Item = usize>) -> Result<Self, DataError> {
        let mut parts = HashMap::new();
        for rank in ranks {
            let node = &plan.nodes[rank];
            let mine = node
                .parts
                .iter()
                .map(|set| {
                    let idx: Vec<usize> = set.points().map(|(i, _)| i).collect();
                    Ok(Part { rows: rows(cfg.data(), cfg.run.seed, cfg.model().loss, p, &idx)?, coef: set.points().map(|(_, c)| c).collect() })
                })
                .collect::<Result<Vec<_>, DataError>>()?;
            parts.insert(rank, mine);
        }
        Ok(GradientDescent { model: cfg.model().clone(), samples: plan.samples, p, theta: vec![0.0; p], parts, pace: usize::MAX })
    }

    /// Yield the core every `rows` rows of computation (for hosts with more ranks than cores).
    pub fn paced(mut self, rows: usize) -> Self {
        self.pace = rows;
        self
    }

    /// The current model θ.
    pub fn theta(&self) -> &[f64] {
        &self.theta
    }
}

impl Job<Frame> for GradientDescent {
    fn len(&self) -> usize {
        self.p + 1
    }

    fn model(&mut self) -> Arc<Frame> {
        Arc::new(Frame::from_vec(self.theta.clone()))
    }

    fn compute(&mut self, rank: usize, _t: u64, model: &Frame, select: Option<&[usize]>) -> Vec<Frame> {
        let p = self.p;
        let loss = self.model.loss;
        let all = &self.parts[&rank];
        let chosen: Vec<_> = match select {
            Some(idx) => idx.iter().map(|&i| &all[i]).collect(),
            None => all.iter().collect(),
        };
        chosen
            .into_iter()
            .map(|part| {
                let mut out = vec![0.0; p + 1];
                out[p] = gradient_paced(&part.rows, &part.coef, model.as_slice(), loss, &mut out[..p], self.pace, &mut std::thread::yield_now);
                Frame::from_vec(out)
            })
            .collect()
    }

    fn apply(&mut self, t: u64, total: Frame) -> Result<Applied, JobError> {
        let total = total.as_slice();
        let (g, loss) = (&total[..self.p], total[self.p]);
        gd_step(&mut self.theta, g, self.samples as f64, &self.model, t);
        if !self.theta.iter().all(|v| v.is_finite()) || !loss.is_finite() {
            return Err(JobError(format!("iteration {t}: the model diverged (non-finite θ or loss); lower model.lr (now {})", self.model.lr)));
        }
        Ok(Applied { loss, state: Some(self.theta.clone()) })
    }
}

/// Nothing computed: vectors of the right length, for timing-only simulations.
pub struct Timing {
    len: usize,
    parts: Vec<usize>,
}

impl Timing {
    /// For `plan`'s nodes and payloads of `len` values.
    pub fn new(plan: &Plan, len: usize) -> Self {
        Timing { len, parts: plan.nodes.iter().map(|n| n.parts.len()).collect() }
    }
}

impl Job<Len> for Timing {
    fn len(&self) -> usize {
        self.len
    }
    fn model(&mut self) -> Arc<Len> {
        Arc::new(Len(self.len))
    }
    fn compute(&mut self, rank: usize, _t: u64, _model: &Len, select: Option<&[usize]>) -> Vec<Len> {
        vec![Len(self.len); select.map_or(self.parts[rank], <[usize]>::len)]
    }
    fn apply(&mut self, _t: u64, _total: Len) -> Result<Applied, JobError> {
        Ok(Applied { loss: f64::NAN, state: None })
    }
}
