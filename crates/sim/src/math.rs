//! The arithmetic of a simulated run: every node's coded gradient on its real rows, combined
//! bottom-up with the coefficients of the survivors the simulation chose (the same
//! `outrun_plan::wait::combination` the engine uses), then the update. For exact schemes this
//! reproduces serial gradient descent; for ignore-stragglers it shows the inexact trajectory the
//! simulated arrivals would give.

use std::collections::HashMap;

use outrun_plan::config::{Config, DataKind};
use outrun_plan::wait::{combination, decoder_for};
use outrun_plan::{Plan, Shape};
use outrun_workloads::data::{load_all, synthetic_rows};
use outrun_workloads::kernel::gradient;
use outrun_workloads::metrics::gd_step;
use outrun_workloads::Rows;

/// Per iteration: θ after the update, the loss at θ_t, exactness, residual and coverage of the
/// master's combination.
pub struct Step {
    pub theta: Vec<f64>,
    pub loss: f64,
    pub exact: bool,
    pub residual: f64,
    pub coverage: f64,
}

/// Multiply-adds the math pass would do (to decide whether it is affordable).
pub fn cost(plan: &Plan, p: usize, iterations: u64) -> f64 {
    plan.nodes.iter().map(|n| n.load() as f64).sum::<f64>() * p as f64 * iterations as f64
}

/// Run the arithmetic of `iterations` iterations with the survivors in `used`.
pub fn trajectory(cfg: &Config, plan: &Plan, p: usize, used: &HashMap<(usize, u64), Vec<usize>>) -> Result<Vec<Step>, String> {
    let all = match cfg.data.kind {
        DataKind::Libsvm => Some(load_all(cfg).map_err(|e| e.to_string())?),
        _ => None,
    };
    let rows: Vec<(Rows, Vec<f64>)> = plan
        .nodes
        .iter()
        .map(|n| {
            let idx = n.data.points().map(|(i, _)| i);
            let r = match &all {
                Some(a) => a.select(idx),
                None => synthetic_rows(cfg.data.kind, cfg.run.seed, p, cfg.data.noise, idx),
            };
            (r, n.data.points().map(|(_, c)| c).collect())
        })
        .collect();
    let mut decoders: Vec<_> = plan.nodes.iter().map(|n| decoder_for(plan, n)).collect();
    let mut theta = vec![0.0; p];
    let mut out = Vec::new();
    let d = plan.samples as f64;
    for t in 0..cfg.run.iterations {
        let mut body: Vec<Vec<f64>> = rows
            .iter()
            .map(|(r, c)| {
                let mut b = vec![0.0; p + 1];
                b[p] = gradient(r, c, &theta, cfg.model.loss, &mut b[..p]);
                b
            })
            .collect();
        let (mut exact, mut residual, mut coverage) = (true, 0.0, 1.0);
        let total = match plan.shape {
            Shape::Ring { .. } => {
                let mut sum = vec![0.0; p + 1];
                for b in &body {
                    sum.iter_mut().zip(b).for_each(|(s, v)| *s += v);
                }
                sum
            }
            Shape::Tree { .. } => {
                for n in plan.nodes.iter().rev().filter(|n| !n.children.is_empty()) {
                    let Some(surv) = used.get(&(n.rank, t)) else { continue };
                    let comb = combination(plan, n, surv, decoders[n.rank].as_mut());
                    if n.rank == 0 {
                        exact = comb.exact;
                        residual = comb.residual;
                        coverage = comb.coverage;
                    } else {
                        exact &= comb.exact || !used.get(&(0, t)).is_some_and(|u| u.iter().any(|&i| plan.nodes[0].children[i] == n.rank));
                    }
                    let mut acc = std::mem::take(&mut body[n.rank]);
                    for (i, &a) in comb.coeffs.iter().enumerate() {
                        if a != 0.0 {
                            acc.iter_mut().zip(&body[n.children[i]]).for_each(|(s, v)| *s += a * v);
                        }
                    }
                    body[n.rank] = acc;
                }
                std::mem::take(&mut body[0])
            }
        };
        gd_step(&mut theta, &total[..p], d, &cfg.model, t);
        out.push(Step { theta: theta.clone(), loss: total[p], exact, residual, coverage });
    }
    Ok(out)
}
