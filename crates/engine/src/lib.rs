//! # outrun-engine: executing plans over MPI
//!
//! The only crate that talks MPI. [`train`] is what `outrun train` runs on every rank:
//!
//! 1. `setup`: rank 0 reads the config and the data's shape, checks the world size, builds the
//!    plan and the run directory, and broadcasts them; each rank loads its own rows and syncs
//!    its clock with the master's.
//! 2. The rank's node machine (`outrun_proto`: collect tree or ring, chosen by the plan's
//!    pattern) is driven by the one driver loop (`driver`), which carries out its outputs over
//!    MPI in real time. Nothing here knows which scheme runs.
//! 3. Every rank logs its events to `rank-<r>.jsonl`; the logging rank writes `iterations.csv`,
//!    the final state (`theta.txt`; `y.txt` for a mat-vec) and `summary.json` (format and
//!    writers: `outrun-runlog`).
//!
//! Messaging ([`transport`]): frames of bytes with bincode headers, probe-based receives (late
//! messages are drained and discarded by header), non-blocking sends with owned buffers, one
//! tag so each pair's messages stay in order, and a goodbye handshake so no request is pending
//! at `MPI_Finalize`. There is no per-iteration barrier and no blocking collective in the
//! collect-tree loop.
#![deny(missing_docs)]

pub mod bench;
mod clock;
mod driver;
mod error;
mod setup;
mod shuffle;
pub mod transport;

use std::path::Path;
use std::time::Instant;

use mpi::traits::*;
use outrun_proto::{Failure, Frame, Job, Machine};
use outrun_runlog::{Book, Latency, Lines};
use serde_json::json;

pub use error::EngineError;
pub use outrun_runlog::Summary;
pub use setup::Shared;

use clock::Clock;
use driver::Driver;
use transport::Comm;

/// Progress reporting hooks (the CLI draws a progress bar with them).
pub trait Progress {
    /// The timed loop starts.
    fn begin(&mut self, _iterations: u64) {}
    /// Iteration `t` finished after `wall_s` seconds with `loss`.
    fn tick(&mut self, _t: u64, _wall_s: f64, _loss: f64) {}
    /// The timed loop ended.
    fn end(&mut self) {}
}

/// No progress reporting.
pub struct NoProgress;
impl Progress for NoProgress {}

/// How a rank's run ended. An error has already been printed (once, by the rank that should).
pub struct Finished {
    /// This rank.
    pub rank: usize,
    /// The run summary on the logging rank of a successful run.
    pub result: Result<Option<Summary>, EngineError>,
}

/// Keep freed memory for reuse: message buffers of up to 32 MB come from the heap instead of
/// fresh `mmap`s, whose pages the kernel faults in and zeroes on every use (measured: the 64 MB
/// ring all-reduce on 8 ranks took 1.1 s with fresh pages; see docs/performance.md).
fn keep_freed_memory() {
    #[cfg(all(target_os = "linux", target_env = "gnu"))]
    // SAFETY: mallopt only sets allocator parameters; called once at start-up.
    unsafe {
        libc::mallopt(libc::M_MMAP_THRESHOLD, 32 << 20);
        libc::mallopt(libc::M_TRIM_THRESHOLD, 1 << 30);
    }
}

/// Run the experiment of `config` (with `overrides`) on this rank. Call on every rank of an
/// `mpirun` job. MPI is initialised and finalised inside.
pub fn train(config: &Path, overrides: &[String], progress: &mut dyn Progress) -> Finished {
    let started = Instant::now();
    // The cores are shared by many ranks already: one BLAS thread each.
    outrun_codes::single_threaded_blas();
    keep_freed_memory();
    let Some(universe) = mpi::initialize() else {
        return Finished { rank: 0, result: Err(EngineError::Setup("MPI was already initialised".into())) };
    };
    let world = universe.world();
    let rank = world.rank() as usize;
    let mut comm = Comm::new(&world);
    let result = setup::setup(&world, config, overrides).and_then(|shared| {
        if let Some(pr) = shared.config.pagerank() {
            // every rank builds the whole graph (generated, or read from the file)
            let graph = agree(&mut comm, outrun_workloads::graph::load(&pr.graph, shared.config.run.seed))?;
            return shuffle::run(&world, comm, &shared, graph, progress, started);
        }
        // More ranks than cores on this host: computations yield the core now and then, so a
        // rank woken by a message is not queued behind a peer's whole computation.
        let (local, cores) = (comm.local_size(), std::thread::available_parallelism().map_or(1, |c| c.get()));
        let paced = local > cores;
        // Every rank loads its own rows; a rank that cannot tells everybody (collectively).
        let job = agree(
            &mut comm,
            outrun_workloads::frame_job(
                &shared.config,
                &shared.plan,
                shared.features,
                [rank],
                paced.then_some(outrun_workloads::PACE_ROWS),
            ),
        )?;
        run(&world, comm, &shared, job, progress, started, Host { local, cores, paced })
    });
    // Print before MPI_Finalize: finalize synchronises the ranks, so the line is out before any
    // rank exits non-zero and mpirun starts killing the others.
    if let Err(e) = &result {
        if e.printed_by(rank) {
            eprintln!("error: {e}");
        }
    }
    drop(universe);
    Finished { rank, result }
}

/// One line for the run about log files that dropped lines (a full disk): the master prints
/// every rank's that reached it with the goodbyes; a rank whose report could not travel (a ring,
/// an unclean shutdown) prints its own.
fn report_dropped_logs(
    rank: usize,
    plan: &outrun_plan::Plan,
    outcome: &outrun_proto::Outcome,
    dir: &Path,
    own: Option<&str>,
    told_machine: bool,
) {
    // a failure after the goodbye left (the shutdown record) never reached the master
    let reported_up = plan.nodes[rank].parent.is_some() && outcome.clean && (own.is_none() || told_machine);
    let mut dropped = outcome.dropped.clone();
    if let Some(e) = own {
        if !dropped.iter().any(|(r, _)| *r == rank as u32) {
            dropped.push((rank as u32, e.to_string()));
        }
    }
    if dropped.is_empty() || reported_up {
        return;
    }
    dropped.sort();
    let files: Vec<String> = dropped.iter().map(|(r, _)| format!("rank-{r}.jsonl")).collect();
    eprintln!(
        "warning: {} in {} refused log lines ({}); their later lines were dropped, the run went on",
        files.join(", "),
        dir.display(),
        dropped[0].1
    );
}

/// Collective: every rank learns whether every rank succeeded in a local step (loading its
/// rows, building the graph). A rank that failed reports its own error (it prints it); the
/// others stop without a line.
fn agree<T, E: std::fmt::Display>(comm: &mut Comm, local: Result<T, E>) -> Result<T, EngineError> {
    let failed = comm.allreduce_max(i32::from(local.is_err()));
    match (local, failed) {
        (Ok(v), 0) => Ok(v),
        (Err(e), _) => Err(EngineError::Local(format!("rank {} ({}): {e}", comm.rank, hostname()))),
        (Ok(_), _) => Err(EngineError::PeerSetup),
    }
}

fn hostname() -> String {
    std::fs::read_to_string("/proc/sys/kernel/hostname").map(|h| h.trim().to_string()).unwrap_or_default()
}

/// This rank's host: ranks on it, its cores, and whether computations yield.
struct Host {
    local: usize,
    cores: usize,
    paced: bool,
}

fn run(
    world: &mpi::topology::SimpleCommunicator,
    mut comm: Comm,
    shared: &Shared,
    mut job: Box<dyn Job<Frame>>,
    progress: &mut dyn Progress,
    started: Instant,
    host: Host,
) -> Result<Option<Summary>, EngineError> {
    let rank = comm.rank;
    let plan = &shared.plan;
    let cfg = &shared.config;
    let dir = &shared.run_dir;
    let io = |e: std::io::Error| EngineError::Run(format!("cannot write to the run directory {}: {e}", dir.display()));
    let mut clock = Clock::start();
    clock.sync(&mut comm);
    let mut log = Lines::create(&dir.join(format!("rank-{rank}.jsonl"))).map_err(io)?.quiet();
    if rank == plan.log_rank() {
        std::fs::write(dir.join("config.toml"), cfg.to_toml()).map_err(io)?;
        std::fs::write(dir.join("plan.json"), serde_json::to_string(plan).expect("plan serializes")).map_err(io)?;
        tracing::info!(
            "{}: {} ranks, {} workers, d = {}, p = {}; run directory {}",
            plan.scheme,
            plan.ranks,
            plan.workers,
            plan.samples,
            shared.features,
            dir.display()
        );
    }
    let me = &plan.nodes[rank];
    log.json(&json!({"ev": "setup", "rank": rank, "worker": me.worker, "host": hostname(), "pid": std::process::id(),
        "clock_offset": clock.offset, "clock_rtt": clock.rtt, "load": me.load(), "parent": me.parent, "children": me.children,
        "local_ranks": host.local, "cores": host.cores, "paced": host.paced, "at": clock.now()}));
    let mut machine: Box<dyn Machine<Frame>> = outrun_proto::machine(plan, rank, job.len(rank), false);
    // One barrier before the timed loop so every rank starts ready; none inside the loop.
    world.barrier();
    let setup_s = started.elapsed().as_secs_f64();
    let logs = rank == plan.log_rank();
    let book = if logs {
        tracing::info!("setup took {setup_s:.3} s; starting {} iterations", cfg.run.iterations);
        progress.begin(cfg.run.iterations);
        let test =
            outrun_workloads::data::test_set(cfg, shared.features).map_err(|e| EngineError::Run(e.to_string()))?;
        Some(Book::new(&shared.run_info(), clock.now()).map_err(io)?.with_test(test))
    } else {
        None
    };
    let model = job.model();
    let starts = plan.delivers(rank);
    let modelled = cfg.timing.compute == outrun_plan::config::ComputeMode::Modelled;
    let mut d = Driver::new(
        comm,
        clock,
        log,
        job,
        plan.stragglers.injector(),
        rank,
        me.worker,
        me.load(),
        modelled,
        cfg.engine.poll_us,
        cfg.run.iterations,
        book,
        progress,
    );
    if starts {
        d.feed(machine.as_mut(), outrun_proto::Input::Start { t: 0, model });
    }
    let outcome = d.run(machine.as_mut());
    if logs {
        d.progress.end();
    }
    report_dropped_logs(rank, plan, &outcome, dir, d.log.failure(), d.log_reported());
    let failure = match outcome.result {
        Ok(()) => None,
        Err(Failure::Run(_)) if d.quiet_failure => Some(EngineError::Aborted),
        Err(Failure::Run(m)) => Some(EngineError::Run(m)),
        Err(Failure::Aborted) => Some(EngineError::Aborted),
    };
    if !outcome.clean {
        // A child (or the parent) never finished: requests may still be pending, and
        // MPI_Finalize could wait forever. End the whole job, with one line.
        let why = match &failure {
            Some(EngineError::Run(m)) => m.clone(),
            _ => "the shutdown was not clean".into(),
        };
        eprintln!("error: {why}; the MPI job is aborted (logs are in {})", dir.display());
        d.comm.abort(1);
    }
    if let Some(f) = failure {
        return Err(f);
    }
    let Some(book) = d.book.take() else { return Ok(None) };
    let h = &outcome.latency;
    let latency = Latency {
        count: h.count(),
        p50: h.quantile(0.5),
        p95: h.quantile(0.95),
        max: (h.count() > 0).then(|| h.max()),
    };
    let theta = d.state.clone().unwrap_or_default();
    Ok(Some(book.finish(&shared.run_info(), &theta, setup_s, outcome.late, d.comm.recv_bytes, latency).map_err(io)?))
}
