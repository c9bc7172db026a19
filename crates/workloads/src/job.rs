//! Jobs: what the drivers compute and apply, behind `outrun_proto::Job`.
//!
//! - [`GradientDescent`]: every node computes `Σ c·∇ℓ(θ; x)` (and the loss) over each of its
//!   parts; the delivered total updates θ ← θ − η_t·(g/d + λθ). The engine holds one rank's
//!   rows; the simulator's arithmetic holds every rank's.
//! - [`Matvec`]: every worker multiplies its coded rows of Ã = G·A with x; the delivered
//!   (decoded) y is the product, and with power iteration x ← y/‖y‖.
//! - [`Timing`]: nothing is computed, vectors are lengths (timing-only simulations).

use std::collections::HashMap;
use std::sync::Arc;

use outrun_plan::config::{Config, ModelConfig};
use outrun_plan::{Plan, PlanCode};
use outrun_proto::{Applied, Frame, Job, JobError, Len};

use crate::data::{rows, DataError, Rows};
use crate::kernel::gradient_paced;
use crate::metrics::{gd_step, norm_sq};

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
                    Ok(Part {
                        rows: rows(cfg.data(), cfg.run.seed, cfg.model().loss, p, &idx)?,
                        coef: set.points().map(|(_, c)| c).collect(),
                    })
                })
                .collect::<Result<Vec<_>, DataError>>()?;
            parts.insert(rank, mine);
        }
        Ok(GradientDescent {
            model: cfg.model().clone(),
            samples: plan.samples,
            p,
            theta: vec![0.0; p],
            parts,
            pace: usize::MAX,
        })
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
    fn len(&self, _rank: usize) -> usize {
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
        gd_step(&mut self.theta, g, self.samples as f64, &self.model, t);
        if !self.theta.iter().all(|v| v.is_finite()) || !loss.is_finite() {
            return Err(JobError(format!(
                "iteration {t}: the model diverged (non-finite θ or loss); lower model.lr (now {})",
                self.model.lr
            )));
        }
        Ok(Applied { loss, state: Some(self.theta.clone()), error: None })
    }
}

/// Nothing computed: vectors of the right length, for timing-only simulations.
pub struct Timing {
    len: usize,
    lens: Vec<usize>,
    parts: Vec<usize>,
}

impl Timing {
    /// For `plan`'s nodes and payloads of `len` values.
    pub fn new(plan: &Plan, len: usize) -> Self {
        Timing { len, lens: vec![], parts: plan.nodes.iter().map(|n| n.parts.len()).collect() }
    }

    /// For `plan`'s nodes with one payload length per rank (a mat-vec: each worker's rows, the
    /// master's r) and models of `model` values.
    pub fn per_rank(plan: &Plan, model: usize, lens: Vec<usize>) -> Self {
        Timing { len: model, lens, parts: plan.nodes.iter().map(|n| n.parts.len()).collect() }
    }
}

impl Job<Len> for Timing {
    fn len(&self, rank: usize) -> usize {
        self.lens.get(rank).copied().unwrap_or(self.len)
    }
    fn model(&mut self) -> Arc<Len> {
        Arc::new(Len(self.len))
    }
    fn compute(&mut self, rank: usize, _t: u64, _model: &Len, select: Option<&[usize]>) -> Vec<Len> {
        vec![Len(self.len(rank)); select.map_or(self.parts[rank], <[usize]>::len)]
    }
    fn apply(&mut self, _t: u64, _total: Len) -> Result<Applied, JobError> {
        Ok(Applied { loss: f64::NAN, state: None, error: None })
    }
}

/// y = A·x by coded rows: each rank holds its rows of Ã = G·A (encoded once, at set-up) and
/// multiplies them with the model x every iteration; the delivering rank applies the decoded y.
pub struct Matvec {
    r: usize,
    m: usize,
    power: bool,
    x: Vec<f64>,
    /// Per rank: its coded rows (ℓ × m, row-major).
    coded: HashMap<usize, Vec<f64>>,
    lens: Vec<usize>,
    pace: usize,
}

impl Matvec {
    /// The job for `ranks` of `plan` (a mat-vec plan): the matrix and x are loaded (generated or
    /// read) and each rank's coded rows encoded.
    pub fn new(cfg: &Config, plan: &Plan, ranks: impl IntoIterator<Item = usize>) -> Result<Self, DataError> {
        let mv = cfg.matvec().expect("a mat-vec config");
        let a = crate::matrix::load(&mv.matrix, cfg.run.seed)?;
        if a.rows != plan.samples {
            return Err(DataError(format!("matrix: {} rows, but the plan was made for {}", a.rows, plan.samples)));
        }
        if mv.power && a.rows != a.cols {
            return Err(DataError(format!(
                "job.power: power iteration needs a square matrix; this one is {} × {}",
                a.rows, a.cols
            )));
        }
        let mut x = crate::matrix::vector(&mv.vector, cfg.run.seed, a.cols)?;
        if mv.power {
            let norm = norm_sq(&x).sqrt();
            if norm == 0.0 {
                return Err(DataError("vector: x = 0 cannot start a power iteration".into()));
            }
            x.iter_mut().for_each(|v| *v /= norm);
        }
        let code = plan
            .codes
            .iter()
            .find_map(|c| if let PlanCode::Rows { code, .. } = c { Some(code.build()) } else { None })
            .expect("a mat-vec plan has a rows code");
        let mut coded = HashMap::new();
        for rank in ranks {
            if let Some(rows) = plan.nodes[rank].coded_rows() {
                coded.insert(rank, code.encode(&a.data, a.cols, rows));
            }
        }
        let lens = matvec_lens(plan);
        Ok(Matvec { r: a.rows, m: a.cols, power: mv.power, x, coded, lens, pace: usize::MAX })
    }

    /// Yield the core every `rows` rows of computation (for hosts with more ranks than cores).
    pub fn paced(mut self, rows: usize) -> Self {
        self.pace = rows;
        self
    }
}

impl Job<Frame> for Matvec {
    fn len(&self, rank: usize) -> usize {
        self.lens[rank]
    }

    fn model(&mut self) -> Arc<Frame> {
        Arc::new(Frame::from_vec(self.x.clone()))
    }

    fn compute(&mut self, rank: usize, _t: u64, model: &Frame, _select: Option<&[usize]>) -> Vec<Frame> {
        let x = model.as_slice();
        let rows = self.coded.get(&rank).map_or(&[][..], Vec::as_slice);
        let mut out = Vec::with_capacity(rows.len() / self.m.max(1));
        for (k, row) in rows.chunks(self.m.max(1)).enumerate() {
            out.push(row.iter().zip(x).map(|(a, b)| a * b).sum());
            if (k + 1) % self.pace == 0 {
                std::thread::yield_now();
            }
        }
        vec![Frame::from_vec(out)]
    }

    fn apply(&mut self, t: u64, total: Frame) -> Result<Applied, JobError> {
        let y = total.into_vec();
        debug_assert_eq!(y.len(), self.r);
        if !y.iter().all(|v| v.is_finite()) {
            return Err(JobError(format!("iteration {t}: the decoded y has non-finite entries")));
        }
        if !self.power {
            return Ok(Applied { loss: f64::NAN, state: Some(y), error: None });
        }
        // x is a unit vector: λ = xᵀy is the Rayleigh quotient, the residual says how far x is
        // from an eigenvector
        let lambda: f64 = self.x.iter().zip(&y).map(|(a, b)| a * b).sum();
        let norm = norm_sq(&y).sqrt();
        if norm == 0.0 {
            return Err(JobError(format!("iteration {t}: A·x = 0, the power iteration cannot continue")));
        }
        let resid = y.iter().zip(&self.x).map(|(a, b)| (a - lambda * b).powi(2)).sum::<f64>().sqrt() / norm;
        self.x = y.iter().map(|v| v / norm).collect();
        Ok(Applied { loss: lambda, state: Some(y), error: Some(resid) })
    }
}

/// Payload lengths of a mat-vec plan's ranks: a worker sends its coded rows' values, the master
/// delivers y (r values).
fn matvec_lens(plan: &Plan) -> Vec<usize> {
    plan.nodes.iter().map(|n| if n.parts.is_empty() { plan.samples } else { n.load() }).collect()
}

/// The job of `cfg` on real values for `ranks` (the engine: its own rank; the simulator's
/// arithmetic: every rank), with `p` features for gradient descent.
pub fn frame_job(
    cfg: &Config,
    plan: &Plan,
    p: usize,
    ranks: impl IntoIterator<Item = usize>,
    pace: Option<usize>,
) -> Result<Box<dyn Job<Frame>>, DataError> {
    let pace = pace.unwrap_or(usize::MAX);
    Ok(match cfg.matvec() {
        Some(_) => Box::new(Matvec::new(cfg, plan, ranks)?.paced(pace)),
        None => Box::new(GradientDescent::new(cfg, plan, p, ranks)?.paced(pace)),
    })
}

/// Timing-only jobs (lengths) of `cfg`, one per rank: payloads of p + 1 values for gradient
/// descent; a worker's rows and the master's r for a mat-vec (models of m = `p` values).
pub fn timing_jobs(cfg: &Config, plan: &Plan, p: usize) -> Vec<Timing> {
    let lens: Option<Vec<usize>> = cfg.matvec().map(|_| matvec_lens(plan));
    (0..plan.ranks)
        .map(|_| match &lens {
            Some(l) => Timing::per_rank(plan, p, l.clone()),
            None => Timing::new(plan, p + 1),
        })
        .collect()
}
