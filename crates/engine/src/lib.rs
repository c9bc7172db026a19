//! # outrun-engine: executing plans over MPI
//!
//! The only crate that talks MPI. [`train`] is what `outrun train` runs on every rank:
//!
//! 1. [`setup`]: rank 0 reads the config and data shape, builds the plan and the run directory,
//!    and broadcasts them; each rank checks the world size, gets its rows, and syncs its
//!    [`clock`] with the master's.
//! 2. The plan is executed: [`tree`] for master–worker stars and CodedReduce trees, [`ring`] for
//!    ring all-reduce and the `MPI_Allreduce` reference.
//! 3. Every rank logs its events to `rank-<r>.jsonl`; the master (rank 0) writes
//!    `iterations.csv`, `theta.txt` and `summary.json` (format and writers: `outrun-runlog`).
//!
//! Messaging ([`transport`], [`protocol`]): probe-based receives (late messages are drained and
//! discarded by iteration header), non-blocking sends with owned buffers, tags by iteration and
//! kind, and a goodbye handshake so no request is pending at `MPI_Finalize`. There is no
//! per-iteration barrier and no blocking collective in the master–worker loops.

pub mod bench;
pub mod clock;
pub mod error;
pub mod protocol;
pub mod ring;
pub mod setup;
pub mod transport;
pub mod tree;

use std::path::Path;
use std::time::Instant;

use mpi::traits::*;
use serde_json::json;

pub use error::EngineError;
pub use outrun_runlog::Summary;

use clock::Clock;
use outrun_runlog::Lines;
use setup::Shared;
use transport::Comm;

/// Progress reporting hooks (the CLI draws a progress bar with them).
pub trait Progress {
    fn begin(&mut self, _iterations: u64) {}
    fn tick(&mut self, _t: u64, _wall_s: f64, _loss: f64) {}
    fn end(&mut self) {}
}

/// No progress reporting.
pub struct NoProgress;
impl Progress for NoProgress {}

/// What a rank works with while executing a plan.
pub(crate) struct Env<'a> {
    pub comm: Comm,
    pub shared: &'a Shared,
    pub clock: Clock,
    pub log: Lines,
}

/// How a rank's run ended. An error has already been printed (once, by the rank that should).
pub struct Finished {
    pub rank: usize,
    /// The run summary on the logging rank (rank 0) of a successful run.
    pub result: Result<Option<Summary>, EngineError>,
}

/// Run the experiment of `config` (with `overrides`) on this rank. Call on every rank of an
/// `mpirun` job. MPI is initialised and finalised inside.
pub fn train(config: &Path, overrides: &[String], progress: &mut dyn Progress) -> Finished {
    let started = Instant::now();
    let Some(universe) = mpi::initialize() else {
        return Finished { rank: 0, result: Err(EngineError::Setup("MPI was already initialised".into())) };
    };
    let world = universe.world();
    let rank = world.rank() as usize;
    let result = (|| {
        let (shared, all) = setup::setup(&world, config, overrides)?;
        let mut comm = Comm::new(&world);
        let mut clock = Clock::start();
        clock.sync(&mut comm);
        let data = setup::local_data(&mut comm, &shared, all.as_ref());
        drop(all);
        let dir = &shared.run_dir;
        let io = |e: std::io::Error| EngineError::Setup(format!("cannot write to the run directory {}: {e}", dir.display()));
        let mut log = Lines::create(&dir.join(format!("rank-{rank}.jsonl"))).map_err(io)?;
        if rank == 0 {
            std::fs::write(dir.join("config.toml"), shared.config.to_toml()).map_err(io)?;
            std::fs::write(dir.join("plan.json"), serde_json::to_string(&shared.plan).expect("plan serializes")).map_err(io)?;
        }
        if rank == 0 {
            let p = &shared.plan;
            tracing::info!("{}: {} ranks, {} workers, d = {}, p = {}; run directory {}", p.scheme.name(), p.ranks, p.workers, p.samples, shared.features, dir.display());
        }
        let me = &shared.plan.nodes[rank];
        tracing::debug!("rank {rank}: load {}, parent {:?}, children {:?}, clock offset {:.6} s (rtt {:.6} s)", me.load(), me.parent, me.children, clock.offset, clock.rtt);
        let host = std::fs::read_to_string("/proc/sys/kernel/hostname").map(|h| h.trim().to_string()).unwrap_or_default();
        log.json(&json!({"ev": "setup", "rank": rank, "worker": me.worker, "host": host, "pid": std::process::id(),
            "clock_offset": clock.offset, "clock_rtt": clock.rtt, "load": me.load(), "parent": me.parent, "children": me.children,
            "at": clock.now()}));
        // One barrier before the timed loop so every rank starts ready; none inside the loop.
        world.barrier();
        let setup_s = started.elapsed().as_secs_f64();
        if rank == 0 {
            tracing::info!("setup took {setup_s:.3} s; starting {} iterations", shared.config.run.iterations);
        }
        let env = Env { comm, shared: &shared, clock, log };
        let res = match shared.plan.shape {
            outrun_plan::Shape::Tree { .. } => {
                let node = tree::TreeNode::new(env, data);
                if rank == 0 {
                    node.run_master(progress, setup_s)
                } else {
                    node.run_worker()
                }
            }
            outrun_plan::Shape::Ring { .. } => ring::run_ring(env, data, progress, setup_s),
        };
        res
    })();
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
