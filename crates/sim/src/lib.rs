//! # outrun-sim: plans in virtual time
//!
//! Executes the same [`outrun_plan::Plan`] as the MPI engine, with the same straggler model
//! and seeds, on a model of the network (see `docs/simulator.md`); the plan is all it reads:
//!
//! - [`Network`]: per-message latency + bytes/rate, single-port nodes, queues at busy receivers;
//! - [`execute`]: the driver — every rank's node machine (`outrun_proto`, the same machines the
//!   engine drives) on one event queue; with real payloads it also does the arithmetic, so a
//!   simulated run's θ comes out of the same protocol and decoders as a real run's;
//! - [`simulate`]: trials, statistics, and a run directory in the engine's format (so
//!   `outrun report` works on it); [`tune`]: compare plans (a config key's values) and predict
//!   the best.
#![deny(missing_docs)]

mod exec;
mod network;
mod queue;

use std::path::PathBuf;

use outrun_codes::splitmix64;
use outrun_driver::{create_run_dir, run_info, write_header};
use outrun_plan::{Pattern, Plan};
use outrun_proto::{Frame, Len};
use outrun_runlog::event::{Event, Setup};
use outrun_runlog::{quantile, Book, Lines, Summary};
use outrun_workloads::{DataError, Job};
use serde::Serialize;

pub use exec::{execute, execute_watched, Run, RunFailed, WATCH_EVERY};
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
    /// The job's data could not be read.
    #[error("{0}")]
    Data(#[from] DataError),
    /// A command-line value is invalid, or the plan cannot be simulated.
    #[error("{0}")]
    Input(String),
    /// The simulated run failed (a deadline, a subtree failure): the message a real run prints.
    #[error("{0}")]
    Run(#[from] RunFailed),
    /// The run directory could not be written.
    #[error("{0}")]
    Io(String),
    /// The caller's watcher stopped the simulation (its line: the work would take too long).
    #[error("{0}")]
    Stopped(String),
}

/// The plan's job, once per rank: loaded with each rank's share (real arithmetic) or not
/// (timing only: the jobs tell lengths). `loaded` is told each loaded rank (how many, of all).
fn jobs(plan: &Plan, load: bool, loaded: &mut dyn FnMut(usize, usize)) -> Result<Vec<Box<dyn Job>>, DataError> {
    let jobs = (0..plan.ranks)
        .map(|r| {
            let mut job = outrun_workloads::job(plan);
            if load {
                job.load(plan, &[r])?;
                loaded(r + 1, plan.ranks);
            }
            Ok(job)
        })
        .collect::<Result<Vec<_>, DataError>>()?;
    Ok(jobs)
}

/// Simulate `plan`; a written trial's run directory gets `config_toml` (the resolved config) as
/// its `config.toml`.
pub fn simulate(plan: &Plan, config_toml: &str, opts: &Options) -> Result<Simulated, SimError> {
    simulate_with(plan, config_toml, opts, &mut |_, _| Ok(()), &mut |_, _| {})
}

/// Bytes the statistics of `trials` trials of `plan` keep (every iteration's time).
pub fn stats_bytes(plan: &Plan, trials: usize) -> u64 {
    (trials as u64).saturating_mul(plan.run.iterations).saturating_mul(8)
}

/// How the simulation timed the computations, in one line: the modelled base time per point, or
/// the straggler law that gives the whole time; with `real` the config's `timing.compute =
/// "real"`, which a simulation cannot honour (it names what it used instead, and how to do
/// better).
pub fn timing_line(plan: &Plan) -> (String, bool) {
    let m = &plan.stragglers;
    let real = m.compute == outrun_config::ComputeMode::Real;
    let line = if m.uses_base_time() {
        format!("compute modelled at timing.a = {:e} s per point, then the straggler law ({})", m.base_a, m.name())
    } else {
        format!("compute times drawn from the straggler law ({}), which gives the whole time", m.name())
    };
    (line, real && m.uses_base_time())
}

/// [`simulate`], calling `watch` with the iterations simulated so far and their total (trials ×
/// iterations) every [`WATCH_EVERY`] iterations and after every trial; a watcher's error stops
/// the simulation (refused: [`SimError::Input`]) — the CLI shows progress and refuses a
/// simulation whose estimated time is absurd. `loaded` is told each rank whose share of the data
/// (and its code's rows) trial 0 has loaded, of all ranks, before its first iteration: a coded
/// mat-vec's encoding can take seconds.
pub fn simulate_with(
    plan: &Plan,
    config_toml: &str,
    opts: &Options,
    watch: &mut dyn FnMut(u64, u64) -> Result<(), String>,
    loaded: &mut dyn FnMut(usize, usize),
) -> Result<Simulated, SimError> {
    if opts.trials == 0 {
        return Err(SimError::Input("--trials must be at least 1".into()));
    }
    outrun_codes::keep_freed_memory();
    if matches!(plan.pattern, Pattern::Shuffle { .. }) {
        return Err(SimError::Input(format!(
            "scheme.kind = \"{}\": the simulator does not model the shuffle pattern: its Map, Shuffle and Reduce are a fixed schedule the MPI driver runs, not node machines the simulator could drive, and its default multicasts are MPI_Ibcast trees inside groups of r + 1 servers, which the single-port point-to-point network model cannot time (its times would be made up); run it with launch/local.sh (phases.csv times every phase), and see its loads, exactly, with outrun pagerank-load",
            plan.scheme
        )));
    }
    let cost =
        plan.nodes.iter().map(|n| n.load() as f64).sum::<f64>() * plan.job.features as f64 * plan.run.iterations as f64;
    // a job whose values only its own code computes (a Python model) is timed without them
    let values = outrun_workloads::job(plan).simulates_values();
    if !values && opts.math == Math::On {
        return Err(SimError::Input(
            "--math on: this job's gradients come from its Python module, which the simulator never runs; it times the run without them (--math auto)".into(),
        ));
    }
    let math = opts.write
        && values
        && match opts.math {
            Math::Off => false,
            Math::Auto => cost <= 2e9,
            Math::On => true,
        };
    let math_note = match opts.math {
        _ if !opts.write || math => None,
        _ if !values => Some("θ not computed: the gradients are the Python module's, which the simulator never runs (it uses the modelled compute time)".to_string()),
        Math::Off => Some("θ not computed (--math off): loss and error columns are empty".to_string()),
        _ => Some(format!("θ not computed: it would take {cost:.1e} multiply-adds (use --math on)")),
    };
    let mut all = Vec::new();
    let mut trial_means = Vec::new();
    let mut trial0 = vec![];
    let mut written = None;
    let iterations = plan.run.iterations;
    let total = iterations.saturating_mul(opts.trials as u64);
    for k in 0..opts.trials {
        let model = trial_model(plan, k);
        let before = iterations.saturating_mul(k as u64);
        let mut within = |done: u64| watch(before + done, total);
        let run = if k == 0 && opts.write {
            let (run, dir) = write_trial(plan, config_toml, &model, math, &mut within, loaded)?;
            written = Some((run.summary.clone().expect("a written trial keeps a book"), dir));
            run
        } else {
            exec::execute_watched::<Len>(plan, &model, jobs(plan, false, &mut |_, _| {})?, None, None, &mut within)?
        };
        let w = walls(&run.ends);
        trial_means.push(w.iter().sum::<f64>() / w.len().max(1) as f64);
        all.extend_from_slice(&w);
        if k == 0 {
            trial0 = w;
        }
        watch(before + iterations, total).map_err(SimError::Stopped)?;
    }
    let stats = Stats {
        trials: opts.trials,
        iterations: plan.run.iterations,
        mean_s: all.iter().sum::<f64>() / all.len().max(1) as f64,
        p5_s: quantile(&all, 0.05),
        p95_s: quantile(&all, 0.95),
        trial_means,
    };
    let (summary, run_dir) = match written {
        Some((summary, dir)) => {
            let n = &plan.network;
            let (timing, guessed) = timing_line(plan);
            let sim = serde_json::json!({"stats": stats, "timing": {"line": timing, "config_compute_real_not_measured": guessed}, "network": {
                "bandwidth_bytes_per_s": n.bandwidth, "latency_s": n.latency, "downlink": n.downlink}, "math": math_note});
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
    plan: &Plan,
    config_toml: &str,
    model: &outrun_plan::StragglerModel,
    math: bool,
    watch: &mut dyn FnMut(u64) -> Result<(), String>,
    loaded: &mut dyn FnMut(usize, usize),
) -> Result<(exec::Run, PathBuf), SimError> {
    let dir = create_run_dir(plan, "-sim").map_err(SimError::Io)?;
    let io = |e: std::io::Error| SimError::Io(format!("{}: {e}", dir.display()));
    let mut jobs = jobs(plan, math, loaded)?;
    write_header(&dir, plan, config_toml, &*jobs[plan.log_rank()]).map_err(io)?;
    let log = &mut jobs[plan.log_rank()];
    // the metrics need the state: only when trial 0 computes it
    if math {
        log.load_metrics()?;
    }
    let info = run_info(plan, &**log, &dir, "simulated");
    let book = Book::new(&info, 0.0).map_err(io)?;
    // every rank's log, written as the run goes (a long simulation's records never all sit in
    // memory)
    let mut logs = (0..plan.ranks)
        .map(|r| {
            let mut l = Lines::create(&dir.join(format!("rank-{r}.jsonl")))?;
            let node = &plan.nodes[r];
            l.event(&Event::Setup(Setup {
                rank: r,
                worker: node.worker,
                host: "simulated".into(),
                load: Some(node.load()),
                parent: node.parent,
                children: Some(node.children.clone()),
                ..Setup::default()
            }));
            Ok(l)
        })
        .collect::<std::io::Result<Vec<Lines>>>()
        .map_err(io)?;
    // the logs grow with every iteration: once their size per iteration is known, a run whose
    // directory would not fit on its disk stops with the sizes, before it fills the disk
    let iterations = plan.run.iterations;
    let mut guarded = |done: u64| {
        if done == exec::WATCH_EVERY || done.is_multiple_of(64 * exec::WATCH_EVERY) {
            let now = outrun_runlog::dir_bytes(&dir);
            if let Some((more, free)) = outrun_runlog::outgrows(&dir, now, done, iterations.saturating_sub(done)) {
                return Err(format!(
                    "{}: the run directory would grow by {} more ({} per iteration), more than the {} free on its disk; simulate fewer iterations or set run.out_dir to a larger disk",
                    dir.display(),
                    outrun_workloads::memory::human(more),
                    outrun_workloads::memory::human(now / done),
                    outrun_workloads::memory::human(free)
                ));
            }
        }
        watch(done)
    };
    let run = if math {
        exec::execute_watched::<Frame>(plan, model, jobs, Some((book, info)), Some(&mut logs), &mut guarded)
    } else {
        exec::execute_watched::<Len>(plan, model, jobs, Some((book, info)), Some(&mut logs), &mut guarded)
    };
    // a simulation refused part-way leaves no half-written run directory to be reported
    if let Err(SimError::Stopped(_)) = &run {
        let _ = std::fs::remove_dir_all(&dir);
    }
    let run = run?;
    if let Some(e) = logs.iter().find_map(Lines::failure) {
        return Err(SimError::Io(format!("{}: a rank's log refused lines: {e}", dir.display())));
    }
    Ok((run, dir))
}

/// One value of a [`tune`] sweep.
#[derive(Debug)]
pub struct TuneRow {
    /// The value.
    pub value: String,
    /// The statistics and whether the scheme is exact by design, or why the value is not
    /// runnable.
    pub result: Result<(Stats, bool), String>,
}

/// Simulate each value's plan (or carry why it has none), timing only, one after the other (a
/// lazy `plans` builds each when its turn comes). Each row's result is the statistics and whether
/// the scheme is exact by design, or why the value is not runnable. `watch` is told the index of
/// the value being simulated and its progress as [`simulate_with`] tells it; its error stops the
/// sweep (`Err` with its line).
pub fn tune(
    plans: impl IntoIterator<Item = (String, Result<Plan, String>)>,
    trials: usize,
    watch: &mut dyn FnMut(usize, u64, u64) -> Result<(), String>,
) -> Result<Vec<TuneRow>, String> {
    let mut rows = Vec::new();
    for (i, (value, plan)) in plans.into_iter().enumerate() {
        let result = match plan {
            Ok(plan) => {
                let opts = Options { trials, math: Math::Off, write: false };
                match simulate_with(&plan, "", &opts, &mut |done, total| watch(i, done, total), &mut |_, _| {}) {
                    Ok(s) => Ok((s.stats, plan.exact_by_design())),
                    // the watcher's refusal ends the sweep
                    Err(SimError::Stopped(e)) => return Err(e),
                    Err(e) => Err(e.to_string()),
                }
            }
            Err(e) => Err(e),
        };
        rows.push(TuneRow { value, result });
    }
    Ok(rows)
}
/// Whether the trials cannot tell two settings apart: the mean of the paired differences of
/// their trial means (trial k of every setting draws its stragglers from the same seed, unless
/// the seed is what varies; the pairs are independent of each other either way) is within two
/// standard errors of zero. One trial has no spread to judge by: `false`.
///
/// ```
/// // the second setting is 0.1 ms slower in every trial: told apart however small
/// assert!(!outrun_sim::within_spread(&[1.0, 2.0, 3.0], &[1.1, 2.1, 3.1]));
/// // the trials disagree on which is faster: not told apart
/// assert!(outrun_sim::within_spread(&[1.0, 2.0, 3.0], &[1.2, 1.9, 2.95]));
/// ```
pub fn within_spread(a: &[f64], b: &[f64]) -> bool {
    let d: Vec<f64> = a.iter().zip(b).map(|(x, y)| y - x).collect();
    let n = d.len() as f64;
    if d.len() < 2 {
        return false;
    }
    let mean = d.iter().sum::<f64>() / n;
    let var = d.iter().map(|x| (x - mean).powi(2)).sum::<f64>() / (n - 1.0);
    mean.abs() < 2.0 * (var / n).sqrt()
}

/// Values of a sweep: `a..b` (integers, inclusive) or a comma-separated list, each once (a
/// value listed twice would be simulated twice and shown as two rows).
///
/// ```
/// assert_eq!(outrun_sim::sweep_values("1..3").unwrap(), ["1", "2", "3"]);
/// assert!(outrun_sim::sweep_values("1, 2, 1").unwrap_err().to_string().contains("`1` is listed twice"));
/// ```
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
    if let Some(twice) = v.iter().enumerate().find_map(|(i, x)| v[..i].contains(x).then_some(x)) {
        return Err(bad(format!("`{twice}` is listed twice")));
    }
    Ok(v)
}
