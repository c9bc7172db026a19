//! # outrun-sim: plans in virtual time
//!
//! Executes the same [`outrun_plan::Plan`] as the MPI engine, with the same straggler model
//! and seeds, on a model of the network (see `docs/simulator.md`):
//!
//! - [`Network`]: per-message latency + bytes/rate, single-port nodes, queues at busy receivers;
//! - [`execute`]: the driver — every rank's node machine (`outrun_proto`, the same machines the
//!   engine drives) on one event queue; with real payloads it also does the arithmetic, so a
//!   simulated run's θ comes out of the same protocol and decoders as a real run's;
//! - [`simulate`]: trials, statistics, and a run directory in the engine's format (so
//!   `outrun report` works on it); [`tune`]: sweep a config key and predict the best value.
#![deny(missing_docs)]

mod exec;
mod network;
mod queue;

use std::path::PathBuf;

use outrun_codes::splitmix64;
use outrun_plan::{Config, ConfigError, Plan};
use outrun_runlog::{create_run_dir, quantile, Book, Latency, Lines, RunInfo, Summary};
use outrun_workloads::{frame_job, timing_jobs, DataError};
use serde::Serialize;

pub use exec::{execute, Run, RunFailed};
pub use network::{NetEvent, Network};

/// Whether to compute the θ trajectory of trial 0.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Math {
    /// When it costs at most 2·10⁹ multiply-adds.
    Auto,
    /// Always.
    On,
    /// Never (timing only).
    Off,
}

/// Options of [`simulate`].
#[derive(Clone, Debug)]
pub struct Options {
    /// Independent trials (trial 0 uses the run's seed).
    pub trials: usize,
    /// Whether trial 0 computes θ.
    pub math: Math,
    /// Write a run directory for trial 0 (in `run.out_dir`).
    pub write: bool,
}

/// Per-iteration time statistics over all trials (virtual seconds).
#[derive(Clone, Debug, Serialize)]
pub struct Stats {
    /// Trials run.
    pub trials: usize,
    /// Iterations per trial.
    pub iterations: u64,
    /// Mean, 5th and 95th percentile of the per-iteration time, pooled over trials.
    pub mean_s: f64,
    /// 5th percentile.
    pub p5_s: f64,
    /// 95th percentile.
    pub p95_s: f64,
    /// Mean per-iteration time of each trial.
    pub trial_means: Vec<f64>,
}

/// What [`simulate`] produced.
pub struct Simulated {
    /// Time statistics over all trials.
    pub stats: Stats,
    /// Trial 0's summary (when written).
    pub summary: Option<Summary>,
    /// Trial 0's run directory (when written).
    pub run_dir: Option<PathBuf>,
    /// Per-iteration times of trial 0 (its straggler draws are the ones a real run with
    /// `run.seed` sees).
    pub trial0: Vec<f64>,
    /// Why θ was not computed, if it was not.
    pub math_note: Option<String>,
}

/// The straggler model of trial `k`: trial 0 uses `run.seed` (the delays a real run sees);
/// other trials reseed it.
fn trial_model(plan: &Plan, k: usize) -> outrun_plan::StragglerModel {
    let m = &plan.stragglers;
    if k == 0 {
        return m.clone();
    }
    let mut x = m.seed ^ (k as u64).wrapping_mul(0x9e37_79b9_7f4a_7c15);
    m.reseeded(splitmix64(&mut x))
}

fn walls(ends: &[f64]) -> Vec<f64> {
    let mut prev = 0.0;
    ends.iter()
        .map(|&e| {
            let w = e - prev;
            prev = e;
            w
        })
        .collect()
}

/// Why a simulation could not run.
#[derive(Debug, thiserror::Error)]
pub enum SimError {
    /// The config or the plan is invalid.
    #[error("{0}")]
    Config(#[from] ConfigError),
    /// The data set could not be read.
    #[error("{0}")]
    Data(#[from] DataError),
    /// A command-line value is invalid.
    #[error("{0}")]
    Input(String),
    /// The simulated run failed (a deadline, a subtree failure): the message a real run prints.
    #[error("{0}")]
    Run(#[from] RunFailed),
    /// The run directory could not be written.
    #[error("{0}")]
    Io(String),
}

/// Simulate `plan` (built from `cfg`) with model dimension `p`.
pub fn simulate(cfg: &Config, plan: &Plan, p: usize, opts: &Options) -> Result<Simulated, SimError> {
    if opts.trials == 0 {
        return Err(SimError::Input("--trials must be at least 1".into()));
    }
    if matches!(plan.pattern, outrun_plan::Pattern::Shuffle { .. }) {
        return Err(SimError::Input(format!(
            "scheme.kind = \"{}\": the simulator does not model the shuffle pattern (PageRank) yet; run it with launch/local.sh, and see its loads with outrun pagerank-load",
            plan.scheme
        )));
    }
    let cost = plan.nodes.iter().map(|n| n.load() as f64).sum::<f64>() * p as f64 * cfg.run.iterations as f64;
    let math = opts.write
        && match opts.math {
            Math::Off => false,
            Math::Auto => cost <= 2e9,
            Math::On => true,
        };
    let math_note = match opts.math {
        _ if !opts.write || math => None,
        Math::Off => Some("θ not computed (--math off): loss and error columns are empty".to_string()),
        _ => Some(format!("θ not computed: it would take {cost:.1e} multiply-adds (use --math on)")),
    };
    let mut all = Vec::new();
    let mut trial_means = Vec::new();
    let mut trial0 = vec![];
    let mut written = None;
    for k in 0..opts.trials {
        let model = trial_model(plan, k);
        let run = if k == 0 && opts.write {
            let (run, w) = write_trial(cfg, plan, p, &model, math)?;
            written = Some(w);
            run
        } else {
            exec::execute(plan, cfg, &model, timing_jobs(cfg, plan, p), None, None)?
        };
        let w = walls(&run.ends);
        trial_means.push(w.iter().sum::<f64>() / w.len().max(1) as f64);
        all.extend_from_slice(&w);
        if k == 0 {
            trial0 = w;
        }
    }
    let stats = Stats {
        trials: opts.trials,
        iterations: cfg.run.iterations,
        mean_s: all.iter().sum::<f64>() / all.len().max(1) as f64,
        p5_s: quantile(&all, 0.05),
        p95_s: quantile(&all, 0.95),
        trial_means,
    };
    let (summary, run_dir) = match written {
        Some((summary, dir)) => {
            let sim = serde_json::json!({"stats": stats, "network": {
                "bandwidth_bytes_per_s": cfg.network.bandwidth.as_ref().map(|b| b.bytes_per_second().ok()),
                "latency_s": cfg.network.latency, "downlink": cfg.network.downlink}, "math": math_note});
            std::fs::write(dir.join("simulate.json"), serde_json::to_string_pretty(&sim).expect("serializes") + "\n")
                .map_err(|e| SimError::Io(format!("{}: {e}", dir.display())))?;
            (Some(summary), Some(dir))
        }
        None => (None, None),
    };
    Ok(Simulated { stats, summary, run_dir, trial0, math_note })
}

/// Trial 0 with a run directory in the engine's format: real arithmetic through the protocol
/// (when `math`), every rank's log records, the book.
fn write_trial(
    cfg: &Config,
    plan: &Plan,
    p: usize,
    model: &outrun_plan::StragglerModel,
    math: bool,
) -> Result<(exec::Run, (Summary, PathBuf)), SimError> {
    let dir =
        create_run_dir(std::path::Path::new(&cfg.run.out_dir), &format!("{}-sim", cfg.run.name)).map_err(|e| {
            SimError::Io(format!("run.out_dir: cannot create a run directory in `{}`: {e}", cfg.run.out_dir))
        })?;
    let io = |e: std::io::Error| SimError::Io(format!("{}: {e}", dir.display()));
    std::fs::write(dir.join("config.toml"), cfg.to_toml()).map_err(io)?;
    std::fs::write(dir.join("plan.json"), serde_json::to_string(plan).expect("plan serializes")).map_err(io)?;
    let info = RunInfo { config: cfg, plan, features: p, run_dir: dir.clone(), compute: "simulated" };
    // accuracy needs θ: only when trial 0 computes it
    let test = if math { outrun_workloads::data::test_set(cfg, p)? } else { None };
    let mut book = Book::new(&info, 0.0).map_err(io)?.with_test(test);
    let mut events = vec![vec![]; plan.ranks];
    let run = if math {
        let jobs = (0..plan.ranks).map(|r| frame_job(cfg, plan, p, [r], None)).collect::<Result<Vec<_>, _>>()?;
        exec::execute(plan, cfg, model, jobs, Some(&mut book), Some(&mut events))
    } else {
        exec::execute(plan, cfg, model, timing_jobs(cfg, plan, p), Some(&mut book), Some(&mut events))
    }?;
    for (r, evs) in events.iter().enumerate() {
        let mut l = Lines::create(&dir.join(format!("rank-{r}.jsonl"))).map_err(io)?;
        l.json(&serde_json::json!({"ev": "setup", "rank": r, "worker": plan.nodes[r].worker, "host": "simulated",
            "load": plan.nodes[r].load(), "parent": plan.nodes[r].parent, "children": plan.nodes[r].children, "at": 0.0}));
        evs.iter().for_each(|e| l.json(e));
    }
    let theta =
        run.state.clone().unwrap_or_else(|| vec![f64::NAN; if cfg.matvec().is_some() { plan.samples } else { p }]);
    let h = &run.latency;
    let latency = Latency {
        count: h.count(),
        p50: h.quantile(0.5),
        p95: h.quantile(0.95),
        max: (h.count() > 0).then(|| h.max()),
    };
    let summary = book.finish(&info, &theta, 0.0, run.late, run.recv_bytes[plan.log_rank()], latency).map_err(io)?;
    Ok((run, (summary, dir)))
}

/// One value of a [`tune`] sweep.
#[derive(Debug)]
pub struct TuneRow {
    /// The value.
    pub value: String,
    /// The statistics and whether the scheme is exact by design, or why the value is not
    /// runnable.
    pub result: Result<(Stats, bool), SimError>,
}

/// Simulate `text` (a config) once per value of `key` (each with `overrides`), timing only.
/// Each row's result is the statistics and whether the scheme is exact by design, or why the
/// value is not runnable.
pub fn tune(text: &str, overrides: &[String], key: &str, values: &[String], trials: usize) -> Vec<TuneRow> {
    values
        .iter()
        .map(|v| {
            let mut sets = overrides.to_vec();
            sets.push(format!("{key}={v}"));
            let result = (|| {
                let cfg = outrun_plan::config::parse(text, &sets)?;
                let shape = outrun_workloads::job_shape(&cfg)?;
                let plan = outrun_plan::build(&cfg, shape)?;
                let s = simulate(&cfg, &plan, shape.features, &Options { trials, math: Math::Off, write: false })?;
                Ok((s.stats, plan.exact_by_design()))
            })();
            TuneRow { value: v.clone(), result }
        })
        .collect()
}

/// Values of a sweep: `a..b` (integers, inclusive) or a comma-separated list.
pub fn sweep_values(spec: &str) -> Result<Vec<String>, SimError> {
    let bad = |m: String| SimError::Input(format!("`{spec}`: {m}"));
    if let Some((a, b)) = spec.split_once("..") {
        let parse = |x: &str| x.trim().parse::<i64>().map_err(|_| bad("range bounds must be integers".into()));
        let (a, b) = (parse(a)?, parse(b)?);
        if b < a {
            return Err(bad("empty range".into()));
        }
        if b - a >= 10_000 {
            return Err(bad("more than 10000 values".into()));
        }
        return Ok((a..=b).map(|v| v.to_string()).collect());
    }
    let v: Vec<String> = spec.split(',').map(|s| s.trim().to_string()).collect();
    if v.iter().any(String::is_empty) {
        return Err(bad("an empty value in the list".into()));
    }
    Ok(v)
}
