//! `job.kind = "gd"`: synchronous gradient descent of a linear model (`[data]`, `[model]`).
//!
//! Every node computes `Σ c·∇ℓ(θ; x)` and the loss over each of its parts (the fused kernel);
//! the delivered total (p gradient sums and the loss) updates θ ← θ − η_t·(g/d + λθ). The engine
//! holds one rank's rows, the simulator's arithmetic every rank's. The logging rank reports
//! ‖θ − θ*‖²/‖θ*‖² on synthetic data and the accuracy on `data.test_path`.

use std::collections::HashMap;
use std::sync::Arc;

use outrun_plan::config::{DataKind, GdConfig};
use outrun_plan::{Plan, Shape};
use outrun_proto::Frame;

use super::{Applied, Job, JobError, Metrics};
use crate::data::{self, DataError, Rows};
use crate::kernel::gradient_paced;
use crate::metrics::{accuracy, gd_step, normalized_error};

/// One part of a node: its rows and their coefficients.
struct Part {
    rows: Rows,
    coef: Vec<f64>,
}

/// Gradient descent of a linear model.
pub struct GradientDescent {
    config: GdConfig,
    seed: u64,
    samples: usize,
    p: usize,
    iterations: u64,
    theta: Vec<f64>,
    parts: HashMap<usize, Vec<Part>>,
    pace: usize,
    /// θ* (synthetic data) and the held-out set, on the logging rank.
    star: Option<Vec<f64>>,
    test: Option<Rows>,
}

impl GradientDescent {
    /// The job of `plan`, with no rows loaded.
    pub fn new(plan: &Plan, config: &GdConfig) -> Self {
        let p = plan.job.features;
        GradientDescent {
            config: config.clone(),
            seed: plan.run.seed,
            samples: plan.samples,
            p,
            iterations: plan.run.iterations,
            theta: vec![0.0; p],
            parts: HashMap::new(),
            pace: usize::MAX,
            star: None,
            test: None,
        }
    }

    /// The current model θ.
    pub fn theta(&self) -> &[f64] {
        &self.theta
    }

    fn rows(&self, idx: &[usize]) -> Result<Rows, DataError> {
        data::rows(&self.config.data, self.seed, self.config.model.loss, self.p, idx)
    }
}

/// The data set's shape; its held-out set, if any, is read and checked here, before MPI.
pub(super) fn shape(c: &GdConfig) -> Result<Shape, DataError> {
    let shape = data::shape(&c.data, c.model.loss)?;
    test_set(c, shape.features)?;
    Ok(shape)
}

/// The held-out set of `data.test_path` (as wide as the training set, `p`), if there is one.
fn test_set(c: &GdConfig, p: usize) -> Result<Option<Rows>, DataError> {
    let Some(path) = c.data.test_path.as_deref() else { return Ok(None) };
    let text = crate::input::read_to_string(std::path::Path::new(path))
        .map_err(|e| DataError(format!("data.test_path: cannot read `{path}`: {e}")))?;
    data::parse_libsvm(&text, path, None, Some(p), c.model.loss).map(Some)
}

/// Model-sized vectors a rank keeps at once (θ, parts' results, received frames, the total).
const VECTORS: u64 = 8;

impl Job for GradientDescent {
    fn name(&self) -> &'static str {
        "gd"
    }

    fn problem(&self) -> String {
        let d = &self.config.data;
        format!(
            "{} data, d = {}, p = {}, seed {}{}, {} loss",
            d.kind.name(),
            self.samples,
            self.p,
            self.seed,
            d.path.as_ref().map_or(String::new(), |p| format!(", file {p}")),
            self.config.model.loss.name()
        )
    }

    fn state_file(&self) -> &'static str {
        "theta.txt"
    }

    fn len(&self, _rank: usize) -> usize {
        self.p + 1
    }

    fn model_len(&self) -> usize {
        self.p
    }

    /// Each rank holds its rows densely (load × p values, one copy per part), a few model-sized
    /// vectors, and one per part and child.
    fn memory(&mut self, plan: &Plan) -> Result<Vec<u64>, DataError> {
        let p = self.p as u64;
        let vec_bytes = (p + 1).saturating_mul(8);
        Ok(plan
            .nodes
            .iter()
            .map(|n| {
                let rows = n.load() as u64;
                let parts = (n.parts.len() as u64).max(1) + n.children.len() as u64;
                rows.saturating_mul(p).saturating_mul(8).saturating_add(vec_bytes.saturating_mul(VECTORS + parts))
            })
            .collect())
    }

    fn load(&mut self, plan: &Plan, ranks: &[usize]) -> Result<(), DataError> {
        for &rank in ranks {
            let mine = plan.nodes[rank]
                .parts
                .iter()
                .map(|set| {
                    let idx: Vec<usize> = set.points().map(|(i, _)| i).collect();
                    Ok(Part { rows: self.rows(&idx)?, coef: set.points().map(|(_, c)| c).collect() })
                })
                .collect::<Result<Vec<_>, DataError>>()?;
            self.parts.insert(rank, mine);
        }
        Ok(())
    }

    fn load_metrics(&mut self) -> Result<(), DataError> {
        let kind = self.config.data.kind;
        self.star = (kind != DataKind::Libsvm).then(|| data::theta_star(kind, self.seed, self.p)).flatten();
        self.test = test_set(&self.config, self.p)?;
        Ok(())
    }

    fn pace(&mut self, rows: usize) {
        self.pace = rows;
    }

    fn model(&mut self) -> Arc<Frame> {
        Arc::new(Frame::from_vec(self.theta.clone()))
    }

    fn compute(&mut self, rank: usize, _t: u64, model: &Frame, select: Option<&[usize]>) -> Vec<Frame> {
        let p = self.p;
        let loss = self.config.model.loss;
        let all = &self.parts[&rank];
        let chosen: Vec<_> = match select {
            Some(idx) => idx.iter().map(|&i| &all[i]).collect(),
            None => all.iter().collect(),
        };
        chosen
            .into_iter()
            .map(|part| {
                let mut out = vec![0.0; p + 1];
                out[p] = gradient_paced(
                    &part.rows,
                    &part.coef,
                    model.as_slice(),
                    loss,
                    &mut out[..p],
                    self.pace,
                    &mut std::thread::yield_now,
                );
                Frame::from_vec(out)
            })
            .collect()
    }

    fn apply(&mut self, t: u64, total: Frame) -> Result<Applied, JobError> {
        let total = total.as_slice();
        let (g, loss) = (&total[..self.p], total[self.p]);
        let model = &self.config.model;
        gd_step(&mut self.theta, g, self.samples as f64, model, t);
        if !self.theta.iter().all(|v| v.is_finite()) || !loss.is_finite() {
            return Err(JobError(format!(
                "iteration {t}: the model diverged (non-finite θ or loss); lower model.lr (now {})",
                model.lr
            )));
        }
        Ok(Applied { loss, state: Some(self.theta.clone()), error: None, done: false })
    }

    fn metrics(&self, applied: &Applied) -> super::Metrics {
        let theta = applied.state.as_deref();
        Metrics {
            error: theta.zip(self.star.as_deref()).map(|(th, star)| normalized_error(th, star)),
            accuracy: theta.zip(self.test.as_ref()).map(|(th, test)| accuracy(test, th)),
            columns: vec![],
        }
    }

    /// Serial gradient descent on every row (`reference::serial_gd`).
    fn reference(&mut self, _plan: &Plan) -> Result<Vec<f64>, DataError> {
        let rows = data::load_all(&self.config.data, self.seed, self.config.model.loss)?;
        Ok(crate::reference::serial_gd(&rows, &self.config.model, self.iterations).pop().expect("θ_0 at least"))
    }
}
