//! `job.kind = "matvec"`: y = A·x by coded rows (`[matrix]`, `[vector]`), once per iteration, or
//! power iteration (`job.power = true`: x ← y/‖y‖).
//!
//! Every worker holds its rows of Ã = G·A (encoded once, when loaded) and multiplies them with
//! the model x every iteration; the master's decoder (`Rule::Rows`) delivers y. Payloads differ
//! per rank: worker i sends ℓ_i values, the master delivers r.

use std::collections::HashMap;
use std::sync::Arc;

use outrun_codes::{RowCodeKind, RowEncoder};
use outrun_config::MatvecConfig;
use outrun_plan::{Plan, PlanCode, RowsSpec, Shape};
use outrun_proto::roles::Vector as _;
use outrun_proto::Frame;

use super::{Applied, Job, JobError};
use crate::data::DataError;
use crate::matrix::{self, Dense};
use crate::metrics::norm_sq;

/// y = A·x by coded rows.
pub struct Matvec {
    config: MatvecConfig,
    seed: u64,
    iterations: u64,
    r: usize,
    m: usize,
    x: Vec<f64>,
    code: Option<RowsSpec>,
    /// Per rank: its coded rows (ℓ × m, row-major).
    coded: HashMap<usize, Vec<f64>>,
    lens: Vec<usize>,
    pace: usize,
}

impl Matvec {
    /// The job of `plan` (a mat-vec plan), with nothing loaded.
    pub fn new(plan: &Plan, config: &MatvecConfig) -> Self {
        let code =
            plan.codes.iter().find_map(|c| if let PlanCode::Rows { code, .. } = c { Some(code.clone()) } else { None });
        // a worker sends its coded rows' values, the master delivers y (r values)
        let lens = plan.nodes.iter().map(|n| if n.parts.is_empty() { plan.samples } else { n.load() }).collect();
        Matvec {
            config: config.clone(),
            seed: plan.run.seed,
            iterations: plan.run.iterations,
            r: plan.samples,
            m: plan.job.features,
            x: vec![],
            code,
            coded: HashMap::new(),
            lens,
            pace: usize::MAX,
        }
    }

    /// A and x, checked against the plan; x normalised for a power iteration.
    fn operands(&self) -> Result<(Dense, Vec<f64>), DataError> {
        let a = matrix::load(&self.config.matrix, self.seed)?;
        let x = self.x0(a.rows, a.cols)?;
        Ok((a, x))
    }

    /// x for an r × m matrix, checked against the plan; normalised for a power iteration.
    fn x0(&self, r: usize, m: usize) -> Result<Vec<f64>, DataError> {
        if r != self.r {
            return Err(DataError::field("matrix", format!("{r} rows, but the plan was made for {}", self.r)));
        }
        if self.config.power && r != m {
            return Err(DataError::field(
                "job.power",
                format!("power iteration needs a square matrix; this one is {r} × {m}"),
            ));
        }
        let mut x = matrix::vector(&self.config.vector, self.seed, m)?;
        if self.config.power {
            let norm = norm_sq(&x).sqrt();
            if norm == 0.0 {
                return Err(DataError::field("vector", "x = 0 cannot start a power iteration"));
            }
            x.iter_mut().for_each(|v| *v /= norm);
        }
        Ok(x)
    }
}

/// The matrix's shape, with what a run would refuse later checked now (before MPI): power
/// iteration on a non-square matrix, a vector file of the wrong length or with a value that is
/// not a finite number.
pub(super) fn shape(c: &MatvecConfig, seed: u64) -> Result<Shape, DataError> {
    let shape = matrix::shape(&c.matrix)?;
    if c.power && shape.samples != shape.features {
        return Err(DataError::field(
            "job.power",
            format!("power iteration needs a square matrix; this one is {} × {}", shape.samples, shape.features),
        ));
    }
    if c.vector.path.is_some() {
        matrix::vector(&c.vector, seed, shape.features)?;
    }
    Ok(shape)
}

/// Model-sized vectors a rank keeps at once.
const VECTORS: u64 = 8;

impl Job for Matvec {
    fn name(&self) -> &'static str {
        "matvec"
    }

    fn problem(&self) -> String {
        let path = self.config.matrix.path.as_ref().map_or(String::new(), |p| format!(" from {p}"));
        format!("mat-vec, {} × {} matrix{path}, seed {}", self.r, self.m, self.seed)
    }

    fn state_file(&self) -> &'static str {
        "y.txt"
    }

    fn len(&self, rank: usize) -> usize {
        self.lens[rank]
    }

    fn model_len(&self) -> usize {
        self.m
    }

    fn state_len(&self) -> usize {
        self.r
    }

    /// A worker streams A and keeps only its ℓ coded rows (and, while encoding, each
    /// dense-coded row's r coefficients and a block of A's rows), the master the decoder (the dense coded rows and an r × r
    /// factorization for the Gaussian code, the parity rows and at most their square for the
    /// systematic one, the neighbour lists for LT); no rank holds A.
    fn memory(&mut self, plan: &Plan) -> Result<Vec<u64>, DataError> {
        let (r, m) = (self.r as u64, self.m as u64);
        let coefficients = |n: &outrun_plan::Node| match &self.code {
            Some(c) if matches!(c.kind, RowCodeKind::Gaussian | RowCodeKind::Systematic) => {
                // the coded rows past the systematic ones (all of them for the Gaussian code),
                // counted without walking them
                let first_dense = if c.kind == RowCodeKind::Gaussian { 0 } else { self.r };
                let dense = n.coded_rows().map_or(0, |rows| rows.end.saturating_sub(rows.start.max(first_dense)));
                // and the block of A's rows gathered for their product
                let block = if dense > 0 { RowEncoder::block_bytes(self.r, self.m) } else { 0 };
                (dense as u64).saturating_mul(r).saturating_mul(8).saturating_add(block)
            }
            _ => 0,
        };
        let decoder = self.code.as_ref().map_or(0, |c| {
            let n = c.n as u64;
            match c.kind {
                RowCodeKind::Identity => 0,
                RowCodeKind::Gaussian => n.saturating_mul(r).saturating_add(r.saturating_mul(r)),
                RowCodeKind::Systematic => {
                    let parity = n.saturating_sub(r);
                    parity.saturating_mul(r).saturating_add(parity.min(r).saturating_mul(r))
                }
                RowCodeKind::Lt { .. } => n.saturating_mul(20),
            }
        });
        Ok(plan
            .nodes
            .iter()
            .map(|n| {
                let own = (n.load() as u64).saturating_mul(m).saturating_mul(8);
                let decode = if n.children.is_empty() { 0 } else { decoder.saturating_mul(8) };
                coefficients(n)
                    .saturating_add(own)
                    .saturating_add(decode)
                    .saturating_add((r + m).saturating_mul(8).saturating_mul(VECTORS))
            })
            .collect())
    }

    /// Streams A once into each rank's coded rows (A itself is never held) and reads x.
    fn load(&mut self, plan: &Plan, ranks: &[usize]) -> Result<(), DataError> {
        let code = self.code.as_ref().expect("a mat-vec plan has a rows code").build();
        let mut encoders: Vec<(usize, RowEncoder)> = ranks
            .iter()
            .filter_map(|&rank| Some((rank, code.encoder(self.m, plan.nodes[rank].coded_rows()?))))
            .collect();
        let (r, m) = matrix::dims(&self.config.matrix)?;
        self.x = self.x0(r, m)?;
        if m != self.m {
            return Err(DataError::field("matrix", format!("{m} columns, but the plan was made for {}", self.m)));
        }
        matrix::entries(&self.config.matrix, self.seed, |i, j, v| {
            encoders.iter_mut().for_each(|(_, e)| e.add(i, j, v));
        })?;
        self.coded.extend(encoders.into_iter().map(|(rank, e)| (rank, e.finish())));
        Ok(())
    }

    fn pace(&mut self, rows: usize) {
        self.pace = rows;
    }

    fn model(&mut self) -> Arc<Frame> {
        Arc::new(Frame::copy_of(&self.x))
    }

    fn compute(
        &mut self,
        rank: usize,
        _t: u64,
        model: &Frame,
        _select: Option<&[usize]>,
    ) -> Result<Vec<Frame>, JobError> {
        let x = model.as_slice();
        let rows = self.coded.get(&rank).map_or(&[][..], Vec::as_slice);
        // with header room: the result is sent from where it is computed
        let mut frame = Frame::zeros(rows.len().div_ceil(self.m.max(1)));
        for (k, (row, y)) in rows.chunks(self.m.max(1)).zip(frame.as_mut_slice()).enumerate() {
            *y = row.iter().zip(x).map(|(a, b)| a * b).sum();
            if (k + 1) % self.pace == 0 {
                std::thread::yield_now();
            }
        }
        Ok(vec![frame])
    }

    fn apply(&mut self, t: u64, total: Frame) -> Result<Applied, JobError> {
        let y = total.into_vec();
        debug_assert_eq!(y.len(), self.r);
        if !y.iter().all(|v| v.is_finite()) {
            return Err(JobError::Diverged {
                iteration: t,
                message: format!("iteration {t}: the decoded y has non-finite entries"),
            });
        }
        if !self.config.power {
            return Ok(Applied { state: Some(y), ..Applied::default() });
        }
        let (lambda, resid, next) = power_step(&self.x, &y).ok_or_else(|| JobError::Diverged {
            iteration: t,
            message: format!("iteration {t}: A·x = 0, the power iteration cannot continue"),
        })?;
        self.x = next;
        Ok(Applied { loss: lambda, state: Some(y), error: Some(resid), done: false })
    }

    /// The dense product A·x (repeated on x ← y/‖y‖ for a power iteration).
    fn reference(&mut self, _plan: &Plan) -> Result<Vec<f64>, DataError> {
        let (a, mut x) = self.operands()?;
        let mut y = a.times(&x);
        for _ in 1..if self.config.power { self.iterations } else { 1 } {
            x = power_step(&x, &y).ok_or_else(|| DataError::field("vector", "A·x = 0: the power iteration stops"))?.2;
            y = a.times(&x);
        }
        Ok(y)
    }
}

/// One power step from the unit vector x and y = A·x: the Rayleigh quotient λ = xᵀy (the
/// eigenvalue estimate), the residual ‖y − λx‖/‖y‖ (how far x is from an eigenvector) and the
/// next x = y/‖y‖; None when y = 0.
fn power_step(x: &[f64], y: &[f64]) -> Option<(f64, f64, Vec<f64>)> {
    let lambda: f64 = x.iter().zip(y).map(|(a, b)| a * b).sum();
    let norm = norm_sq(y).sqrt();
    if norm == 0.0 {
        return None;
    }
    let resid = y.iter().zip(x).map(|(a, b)| (a - lambda * b).powi(2)).sum::<f64>().sqrt() / norm;
    Some((lambda, resid, y.iter().map(|v| v / norm).collect()))
}
