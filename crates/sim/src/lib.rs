//! # outrun-sim: plans in virtual time
//!
//! Executes the same [`outrun_plan::Plan`] as the MPI engine, with the same straggler model
//! and seeds, on a model of the network (see `docs/simulator.md`):
//!
//! - [`network`]: per-message latency + bytes/rate, single-port nodes, queues at busy receivers;
//! - [`exec`]: the event loop for trees (stars, CodedReduce) and rings;
//! - [`math`]: the arithmetic of a simulated run (θ trajectory) with the simulated survivors;
//! - [`simulate`]: trials, statistics, and a run directory in the engine's format (so
//!   `outrun report` works on it); [`tune`]: sweep a config key and predict the best value.

pub mod exec;
pub mod math;
pub mod network;
pub mod queue;

use std::path::PathBuf;

use outrun_codes::rng::splitmix64;
use outrun_plan::{Config, Plan};
use outrun_runlog::{create_run_dir, quantile, Book, IterationRecord, Lines, RunInfo, Summary};
use serde::Serialize;

/// Whether to compute the θ trajectory of trial 0.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Math {
    /// When it costs at most 2·10⁹ multiply-adds.
    Auto,
    On,
    Off,
}

/// Options of [`simulate`].
#[derive(Clone, Debug)]
pub struct Options {
    pub trials: usize,
    pub math: Math,
    /// Write a run directory for trial 0 (in `run.out_dir`).
    pub write: bool,
}

/// Per-iteration time statistics over all trials (virtual seconds).
#[derive(Clone, Debug, Serialize)]
pub struct Stats {
    pub trials: usize,
    pub iterations: u64,
    /// Mean, 5th and 95th percentile of the per-iteration time, pooled over trials.
    pub mean_s: f64,
    pub p5_s: f64,
    pub p95_s: f64,
    /// Mean per-iteration time of each trial.
    pub trial_means: Vec<f64>,
}

/// What [`simulate`] produced.
pub struct Simulated {
    pub stats: Stats,
    pub summary: Option<Summary>,
    pub run_dir: Option<PathBuf>,
    /// Per-iteration times of trial 0 (its straggler draws are the ones a real run with
    /// `run.seed` sees).
    pub trial0: Vec<f64>,
    pub math_note: Option<String>,
}

/// The straggler model of trial `k`: trial 0 uses `run.seed` (the delays a real run sees);
/// other trials reseed it.
fn trial_model(plan: &Plan, k: usize) -> outrun_plan::StragglerModel {
    let mut m = plan.stragglers.clone();
    if k > 0 {
        let mut x = m.seed ^ (k as u64).wrapping_mul(0x9e37_79b9_7f4a_7c15);
        m.seed = splitmix64(&mut x);
    }
    m
}

fn walls(o: &exec::Outcome) -> Vec<f64> {
    let mut prev = 0.0;
    o.ends
        .iter()
        .map(|&e| {
            let w = e - prev;
            prev = e;
            w
        })
        .collect()
}

/// Simulate `plan` (built from `cfg`) with model dimension `p`.
pub fn simulate(cfg: &Config, plan: &Plan, p: usize, opts: &Options) -> Result<Simulated, String> {
    let trials = opts.trials.max(1);
    let mut all = Vec::new();
    let mut trial_means = Vec::new();
    let mut first = None;
    for k in 0..trials {
        let o = exec::execute(plan, cfg, &trial_model(plan, k), p, k == 0 && opts.write)?;
        let w = walls(&o);
        trial_means.push(w.iter().sum::<f64>() / w.len().max(1) as f64);
        all.extend_from_slice(&w);
        if k == 0 {
            first = Some(o);
        }
    }
    let first = first.expect("at least one trial");
    let trial0 = walls(&first);
    let stats = Stats {
        trials,
        iterations: cfg.run.iterations,
        mean_s: all.iter().sum::<f64>() / all.len().max(1) as f64,
        p5_s: quantile(&all, 0.05),
        p95_s: quantile(&all, 0.95),
        trial_means,
    };
    if !opts.write {
        return Ok(Simulated { stats, summary: None, run_dir: None, trial0, math_note: None });
    }
    let cost = math::cost(plan, p, cfg.run.iterations);
    let (steps, math_note) = match opts.math {
        Math::Off => (None, Some("θ not computed (--math off): loss and error columns are empty".to_string())),
        Math::Auto if cost > 2e9 => (None, Some(format!("θ not computed: it would take {cost:.1e} multiply-adds (use --math on)"))),
        _ => (Some(math::trajectory(cfg, plan, p, &first.used)?), None),
    };
    let dir = create_run_dir(std::path::Path::new(&cfg.run.out_dir), &format!("{}-sim", cfg.run.name))
        .map_err(|e| format!("run.out_dir: cannot create a run directory in `{}`: {e}", cfg.run.out_dir))?;
    let io = |e: std::io::Error| format!("{}: {e}", dir.display());
    std::fs::write(dir.join("config.toml"), cfg.to_toml()).map_err(io)?;
    std::fs::write(dir.join("plan.json"), serde_json::to_string(plan).expect("plan serializes")).map_err(io)?;
    if let Some(events) = &first.events {
        for (r, evs) in events.iter().enumerate() {
            let mut l = Lines::create(&dir.join(format!("rank-{r}.jsonl"))).map_err(io)?;
            l.json(&serde_json::json!({"ev": "setup", "rank": r, "worker": plan.nodes[r].worker, "host": "simulated",
                "load": plan.nodes[r].load(), "parent": plan.nodes[r].parent, "children": plan.nodes[r].children, "at": 0.0}));
            evs.iter().for_each(|e| l.json(e));
        }
    }
    let info = RunInfo { config: cfg, plan, features: p, run_dir: dir.clone(), compute: "simulated" };
    let mut book = Book::new(&info, 0.0).map_err(io)?;
    for (t, &end) in first.ends.iter().enumerate() {
        let step = steps.as_ref().map(|s| &s[t]);
        let used: Vec<usize> = match plan.shape {
            outrun_plan::Shape::Ring { .. } => (1..=plan.workers).collect(),
            _ => first.used.get(&(0, t as u64)).map_or(vec![], |u| u.iter().map(|&i| plan.nodes[0].children[i]).collect()),
        };
        book.record(IterationRecord {
            t: t as u64,
            end,
            theta: step.map(|s| s.theta.as_slice()),
            loss: step.map_or(f64::NAN, |s| s.loss),
            used: &used,
            coverage: step.map_or(1.0, |s| s.coverage),
            exact: step.map_or(plan.exact_by_design(), |s| s.exact),
            residual: step.map_or(0.0, |s| s.residual),
            late_total: first.late_at_end[t],
        });
    }
    let theta = steps.as_ref().and_then(|s| s.last()).map_or(vec![f64::NAN; p], |s| s.theta.clone());
    let summary = book.finish(&info, &theta, 0.0, first.late, first.recv_bytes[0]).map_err(io)?;
    let sim = serde_json::json!({"stats": stats, "network": {
        "bandwidth_bytes_per_s": cfg.network.bandwidth.as_ref().map(|b| b.bytes_per_second().ok()),
        "latency_s": cfg.network.latency, "downlink": cfg.network.downlink}, "math": math_note});
    std::fs::write(dir.join("simulate.json"), serde_json::to_string_pretty(&sim).expect("serializes") + "\n").map_err(io)?;
    Ok(Simulated { stats, summary: Some(summary), run_dir: Some(dir), trial0, math_note })
}

/// One value of a [`tune`] sweep.
#[derive(Clone, Debug)]
pub struct TuneRow {
    pub value: String,
    pub result: Result<(Stats, bool), String>,
}

/// Simulate `text` (a config) once per value of `key` (each with `overrides`), timing only.
/// Each row's result is the statistics and whether the scheme is exact by design, or why the
/// value is not runnable.
pub fn tune(text: &str, overrides: &[String], key: &str, values: &[String], trials: usize, p_of: impl Fn(&Config) -> Result<(usize, usize), String>) -> Vec<TuneRow> {
    values
        .iter()
        .map(|v| {
            let mut sets = overrides.to_vec();
            sets.push(format!("{key}={v}"));
            let result = (|| {
                let cfg = outrun_plan::config::parse(text, &sets).map_err(|e| e.to_string())?;
                let (samples, p) = p_of(&cfg)?;
                let plan = outrun_plan::build(&cfg, samples).map_err(|e| e.to_string())?;
                let s = simulate(&cfg, &plan, p, &Options { trials, math: Math::Off, write: false })?;
                Ok((s.stats, plan.exact_by_design()))
            })();
            TuneRow { value: v.clone(), result }
        })
        .collect()
}

/// Values of a sweep: `a..b` (integers, inclusive) or a comma-separated list.
pub fn sweep_values(spec: &str) -> Result<Vec<String>, String> {
    if let Some((a, b)) = spec.split_once("..") {
        let (a, b): (i64, i64) = (a.trim().parse().map_err(|_| format!("`{spec}`: range bounds must be integers"))?, b.trim().parse().map_err(|_| format!("`{spec}`: range bounds must be integers"))?);
        if b < a {
            return Err(format!("`{spec}`: empty range"));
        }
        return Ok((a..=b).map(|v| v.to_string()).collect());
    }
    let v: Vec<String> = spec.split(',').map(|s| s.trim().to_string()).filter(|s| !s.is_empty()).collect();
    if v.is_empty() {
        Err(format!("`{spec}`: no values"))
    } else {
        Ok(v)
    }
}
