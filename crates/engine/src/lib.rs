//! # outrun-engine: executing plans over MPI
//!
//! The only crate that talks MPI. [`train`] is what `outrun train` runs on every rank:
//!
//! 1. `setup`: rank 0 resolves the run into its plan (the caller's `prepare`), checks the world
//!    size, creates the run directory, and broadcasts them; each rank opens the plan's job
//!    (`outrun_workloads::job`), loads its own share of it and syncs its clock with the
//!    master's.
//! 2. The rank's node machine (`outrun_proto`: collect tree or ring, chosen by the plan's
//!    pattern) is driven by the one driver loop (`driver`), which carries out its outputs over
//!    MPI in real time with the driver core (`outrun_driver::Core`: computations, compute
//!    times, applying and recording results). Nothing here knows which scheme or job runs. The
//!    shuffle pattern has its own driver (`shuffle`), which runs graph jobs.
//! 3. Every rank logs its events to `rank-<r>.jsonl`; the logging rank writes `iterations.csv`,
//!    the job's state file and `summary.json` (format and writers: `outrun-runlog`).
//!
//! Messaging ([`transport`]): frames of bytes with bincode headers, probe-based receives (late
//! messages are drained and discarded by header), non-blocking sends with owned buffers, one
//! tag so each pair's messages stay in order, and a goodbye handshake so no request is pending
//! at `MPI_Finalize`. There is no per-iteration barrier and no blocking collective in the
//! collect-tree loop; the `allreduce` scheme's `MPI_Allreduce` is bounded by a watching thread
//! (`watch`).
#![deny(missing_docs)]

pub mod bench;
mod clock;
mod driver;
mod error;
mod setup;
mod shuffle;
pub mod transport;
mod watch;

use std::path::Path;
use std::time::Instant;

use mpi::traits::*;
use outrun_driver::{run_info, write_header, Core};
use outrun_plan::Pattern;
use outrun_proto::{Contacts, Failure, Frame, Machine};
use outrun_runlog::event::{Event, Setup};
use outrun_runlog::{Book, Lines};
use outrun_workloads::Job;

pub use error::EngineError;
pub use outrun_driver::{NoProgress, Progress};
pub use outrun_runlog::Summary;
pub use setup::{Prepared, Shared};

use clock::Clock;
use driver::Driver;
use transport::Comm;

/// How a rank's run ended. An error has already been printed (once, by the rank that should).
pub struct Finished {
    /// This rank.
    pub rank: usize,
    /// The run summary on the logging rank of a successful run.
    pub result: Result<Option<Summary>, EngineError>,
}

/// Run the experiment that `prepare` resolves (called on rank 0 only) on this rank. Call on
/// every rank of an `mpirun` job. MPI is initialised and finalised inside.
pub fn train(prepare: &dyn Fn() -> Result<Prepared, String>, progress: &mut dyn Progress) -> Finished {
    let started = Instant::now();
    // The cores are shared by many ranks already: one BLAS thread each.
    outrun_codes::single_threaded_blas();
    outrun_codes::keep_freed_memory();
    let init = watch::StallWatch::mpi_init();
    let Some(universe) = mpi::initialize() else {
        return Finished { rank: 0, result: Err(EngineError::Setup("MPI was already initialised".into())) };
    };
    drop(init);
    let world = universe.world();
    let rank = world.rank() as usize;
    let mut comm = Comm::for_setup(&world);
    // how long rank 0 may wait for goodbyes after its loop, once the plan is known (rank 1's
    // watch at the end)
    let mut grace = 0.0;
    let result = setup::setup(&mut comm, prepare).and_then(|shared| {
        let plan = &shared.plan;
        let mut job = outrun_workloads::job(plan);
        // More ranks than cores on this host, with modelled compute times: computations yield
        // the core now and then, so a rank woken by a message is not queued behind a peer's
        // whole computation (the modelled time sets the iteration, not the measured one). With
        // real compute times the pauses would stretch every measured computation: not paced
        // (docs/architecture.md, "Model delivery on oversubscribed hosts").
        let (local, cores) = comm.host_share(&machine());
        let paced = local > cores && plan.stragglers.compute == outrun_config::ComputeMode::Modelled;
        if paced {
            job.pace(outrun_workloads::PACE_ROWS);
        }
        // Every rank loads its own share (rows, coded rows, the graph); a rank that cannot tells
        // everybody (collectively).
        agree(&mut comm, "load its share of the job", job.load(plan, &[rank]))?;
        if let Some(c) = &shared.resume {
            agree(&mut comm, "restore the checkpoint", outrun_workloads::restore(job.as_mut(), &c.vectors))?;
        }
        let idle = plan.run.idle.resolve(local, cores);
        match plan.pattern {
            // the shuffle's servers end together and say no goodbyes: rank 0 goes straight to
            // its summary (grace 0)
            Pattern::Shuffle { .. } => shuffle::run(&world, comm, &shared, job, progress, started, idle),
            Pattern::Tree { .. } | Pattern::Ring { .. } | Pattern::Hier { .. } => {
                grace = outrun_plan::budget::shutdown_grace(plan.run.deadline);
                run(comm, &shared, job, progress, started, Host { local, cores, paced, idle })
            }
        }
    });
    // Print before MPI_Finalize: finalize synchronises the ranks, so the line is out before any
    // rank exits non-zero and mpirun starts killing the others.
    if let Err(e) = &result {
        if e.printed_by(rank) {
            eprintln!("error: {e}");
        }
    }
    // every rank waits for the others here, not in MPI_Finalize (see Comm::barrier); rank 1,
    // its loop ended cleanly, notes a rank 0 that does not come
    let end = watch::StallWatch::run_end(rank == 1 && result.is_ok(), grace);
    Comm::new(&world).barrier("finish");
    drop(end);
    drop(universe);
    Finished { rank, result }
}

/// One line for the run about log files that dropped lines (a full disk): the master prints
/// every rank's that reached it with the goodbyes; a rank whose report could not travel (a ring,
/// an unclean shutdown) prints its own, unless the failed run stopped it (its root's error says
/// why the run ended).
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
    // a rank the failed run stopped leaves the account to the rank that says why it failed (one
    // line for the run, not one warning per rank interleaved before it)
    let stopped = matches!(outcome.result, Err(outrun_proto::Failure::Aborted)) && plan.nodes[rank].parent.is_some();
    if dropped.is_empty() || reported_up || stopped {
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
/// share of the job). The lowest rank that failed reports its error (it prints it: one line for
/// the run, when every rank fails alike); the others stop without a line.
fn agree<T, E: std::fmt::Display>(comm: &mut Comm, what: &str, local: Result<T, E>) -> Result<T, EngineError> {
    let size = i32::try_from(comm.size).expect("an MPI size is an int");
    let me = i32::try_from(comm.rank).expect("an MPI rank is an int");
    // the lowest failing rank, as the maximum of the negated ranks (size: none failed)
    let first = -comm.star_max(what, -if local.is_err() { me } else { size });
    match local {
        Ok(v) if first == size => Ok(v),
        Err(e) if first == me => Err(EngineError::Local { rank: comm.rank, host: hostname(), error: e.to_string() }),
        _ => Err(EngineError::PeerSetup),
    }
}

/// Open the links the loop will use (`contacts`, from its node machine) before it starts: one
/// small message to and from each peer, and under `MPI_Allreduce` one all-reduce of the loop's
/// length, so that the first iteration is not the one that pays for every pair's first contact
/// (docs/performance.md §21). Waits at most `bound` seconds for the peers; returns the seconds
/// it took and the peers not heard from.
fn open_contacts(
    comm: &mut Comm,
    contacts: &Contacts,
    bound: f64,
    watch: Option<&watch::CollectiveWatch>,
) -> (f64, Vec<usize>) {
    let started = Instant::now();
    if let Some(len) = contacts.collective {
        let zeros = vec![0.0; len];
        let mut sum = vec![0.0; len];
        watch.inspect(|w| w.enter_setup());
        comm.allreduce_sum(&zeros, &mut sum);
        watch.inspect(|w| w.leave());
    }
    let unanswered = comm.contact(&contacts.peers, std::time::Duration::from_secs_f64(bound));
    if !unanswered.is_empty() {
        tracing::warn!(
            "rank {}: no first message from rank(s) {unanswered:?} within {bound} s; the loop waits for them as for any straggler",
            comm.rank
        );
    }
    (started.elapsed().as_secs_f64(), unanswered)
}

/// The setup record's fields every rank of every pattern has.
fn setup_record(rank: usize, clock: &Clock) -> Setup {
    Setup {
        rank,
        host: hostname(),
        pid: Some(std::process::id()),
        clock_offset: Some(clock.offset),
        clock_rtt: Some(clock.rtt),
        at: clock.now(),
        ..Setup::default()
    }
}

pub(crate) fn hostname() -> String {
    std::fs::read_to_string("/proc/sys/kernel/hostname").map(|h| h.trim().to_string()).unwrap_or_default()
}

/// What tells this rank's machine from the others' when ranks count who shares their cores: the
/// running kernel's boot id, the same in every namespace and container of one machine (an
/// emulated cluster's hosts differ by name and network only and share its cores); the host
/// name where the kernel does not say.
pub(crate) fn machine() -> String {
    std::fs::read_to_string("/proc/sys/kernel/random/boot_id")
        .map(|b| b.trim().to_string())
        .ok()
        .filter(|b| !b.is_empty())
        .unwrap_or_else(hostname)
}

/// The logging rank's core keeps the run's book (the job's metrics loaded, `iterations.csv`
/// opened; the timed loop's start is set when it starts), or why it cannot.
fn keep_book(core: &mut Core<'_>, shared: &Shared, clock: &Clock) -> Result<(), String> {
    let (plan, dir) = (&shared.plan, &shared.run_dir);
    core.job.load_metrics().map_err(|e| e.to_string())?;
    let info = run_info(plan, &*core.job, dir, plan.stragglers.compute.name());
    let book = Book::new(&info, clock.now()).map_err(|e| io_error(dir, e).to_string())?;
    core.keep_book(book, info);
    Ok(())
}

/// A failed write to the run directory.
fn io_error(dir: &Path, e: std::io::Error) -> EngineError {
    EngineError::RunDir { dir: dir.display().to_string(), error: e.to_string() }
}

/// This rank's host: ranks on it, its cores, and whether computations yield.
struct Host {
    local: usize,
    cores: usize,
    paced: bool,
    /// `engine.idle` for this host: `auto` resolved by `local` and `cores`.
    idle: outrun_config::Idle,
}

fn run(
    mut comm: Comm,
    shared: &Shared,
    job: Box<dyn Job>,
    progress: &mut dyn Progress,
    started: Instant,
    host: Host,
) -> Result<Option<Summary>, EngineError> {
    let rank = comm.rank;
    let plan = &shared.plan;
    comm.set_max_behind(transport::behind_cap(matches!(plan.pattern, Pattern::Ring { .. }), plan.ranks));
    let dir = &shared.run_dir;
    let io = |e| io_error(dir, e);
    let mut clock = Clock::start();
    clock.sync(&mut comm);
    // Every step that can fail on one rank (a full disk, an unwritable directory) is agreed by
    // all before anyone goes on: a rank stopping alone would leave the others in a barrier.
    let mut log =
        agree(&mut comm, "open its log", Lines::create(&dir.join(format!("rank-{rank}.jsonl"))).map_err(io))?.quiet();
    let logs = rank == plan.log_rank();
    let header = if logs { write_header(dir, plan, &shared.config_toml, job.as_ref()).map_err(io) } else { Ok(()) };
    agree(&mut comm, "finish setting up the run directory", header)?;
    if logs {
        tracing::info!(
            "{}: {} ranks, {} workers, d = {}, p = {}; run directory {}",
            plan.scheme,
            plan.ranks,
            plan.workers,
            plan.samples,
            plan.job.features,
            dir.display()
        );
    }
    let len = job.len(rank);
    let mut machine: Box<dyn Machine<Frame>> = outrun_proto::machine(plan, rank, len, false);
    let contacts = machine.contacts();
    // the `allreduce` scheme's MPI_Allreduce (setup's first one included) is bounded by a
    // watching thread: a stopped rank would hold the others in it without a word
    let watch = contacts.collective.map(|_| {
        let grace = outrun_plan::budget::shutdown_grace(plan.run.deadline);
        watch::CollectiveWatch::start(rank, plan.run.deadline, grace, dir.display().to_string())
    });
    let (contact_s, unanswered) = open_contacts(&mut comm, &contacts, plan.run.deadline, watch.as_ref());
    let me = &plan.nodes[rank];
    log.event(&Event::Setup(Setup {
        worker: me.worker,
        load: Some(me.load()),
        parent: me.parent,
        children: Some(me.children.clone()),
        local_ranks: Some(host.local),
        cores: Some(host.cores),
        paced: Some(host.paced),
        idle: Some(host.idle.name().into()),
        contact_s: Some(contact_s),
        unanswered,
        ..setup_record(rank, &clock)
    }));
    let mut d = Driver::new(comm, clock, log, Core::of(plan, rank, job), plan.run.poll_us, host.idle);
    d.watch_collectives(watch);
    d.watch_applying(logs.then(|| watch::StallWatch::applying(rank)));
    // The plan's prelude (a one-time phase before the loop), from a barrier so every rank
    // starts it together; a failure there ends the job as one in the loop does.
    if let Some(mut prelude) = outrun_proto::prelude::<Frame>(plan, rank, len) {
        d.comm.barrier("start the prelude");
        let outcome = d.drive(prelude.as_mut());
        if let Err(why) = outcome.result {
            d.comm.abort_saying(1, &format!("error: {why}; the MPI job is aborted (logs are in {})", dir.display()));
        }
        if let Some(secs) = d.core.prelude_s() {
            tracing::info!("the prelude took {secs:.3} s");
        }
    }
    let book = if logs { keep_book(&mut d.core, shared, &d.clock) } else { Ok(()) };
    agree(&mut d.comm, "finish setting up", book)?;
    // One barrier before the timed loop so every rank starts ready; none inside the loop.
    d.comm.barrier("start the loop");
    d.comm.end_setup();
    // the traffic counters are the loop's (the summary's bytes per iteration): not the setup's
    // exchanges, the first contacts or a prelude
    let c = &mut d.comm;
    (c.sent_msgs, c.sent_bytes, c.recv_msgs, c.recv_bytes) = (0, 0, 0, 0);
    let setup_s = started.elapsed().as_secs_f64();
    if logs {
        tracing::info!("setup took {setup_s:.3} s; starting {} iterations", plan.run.iterations);
        d.core.start_loop(d.clock.now());
        d.core.report_to(progress);
    }
    if plan.delivers(rank) {
        let start = d.core.start();
        d.feed(machine.as_mut(), start);
    }
    let outcome = d.run(machine.as_mut());
    d.core.end();
    report_dropped_logs(rank, plan, &outcome, dir, d.log.failure(), d.log_reported());
    let failure = match outcome.result {
        Ok(()) => None,
        Err(Failure::Aborted) => Some(EngineError::Aborted),
        Err(_) if d.core.quiet_failure => Some(EngineError::Aborted),
        Err(f) => Some(EngineError::Run(f.to_string())),
    };
    if failure.is_none() && !outcome.silent.is_empty() && logs {
        // Complete, but ranks below never said goodbye: alive and silent (stopped, stuck), they
        // will never finish the MPI job. Keep the results, name them, end the job (exit 0).
        let summary = d.core.finish(setup_s, outcome.late, d.comm.recv_bytes, &outcome.latency).map_err(io)?;
        let complete = summary.map_or(String::new(), |s| format!("its {} iterations are complete", s.iterations));
        let line = format!(
            "warning: {} did not say goodbye within {} s of the run's end: alive but silent (stopped, or stuck); {complete} (run directory {}); the MPI job was ended with them",
            describe_silent(plan, &outcome.silent),
            outrun_plan::budget::shutdown_grace(plan.run.deadline),
            dir.display()
        );
        d.comm.abort_saying(0, &line);
    }
    if failure.is_some() && !outcome.silent.is_empty() && logs {
        // Failed, and ranks below are alive but silent: MPI_Finalize would wait for them
        // forever. One line, then end the job.
        let why = match &failure {
            Some(EngineError::Run(m)) => m.clone(),
            _ => "the run failed".into(),
        };
        d.comm.abort_saying(1, &format!("error: {why}; the MPI job is aborted (logs are in {})", dir.display()));
    }
    if matches!(failure, None | Some(EngineError::Aborted)) && !outcome.clean && !logs {
        // A parent whose children went silent: its goodbye told the root, which names them (and
        // the failure, if the root aborted the run) and ends the job.
        return match failure {
            Some(f) => Err(f),
            None => Ok(None),
        };
    }
    if !outcome.clean {
        // A child (or the parent, or a ring neighbour) never finished: requests may still be
        // pending, and MPI_Finalize could wait forever. End the whole job, with one line.
        let why = match &failure {
            Some(EngineError::Run(m)) => m.clone(),
            _ => "the shutdown was not clean".into(),
        };
        d.comm.abort_saying(1, &format!("error: {why}; the MPI job is aborted (logs are in {})", dir.display()));
    }
    if let Some(f) = failure {
        return Err(f);
    }
    d.core.finish(setup_s, outcome.late, d.comm.recv_bytes, &outcome.latency).map_err(io)
}

/// `worker 2 (rank 2, last answered iteration 245)`, for each silent rank.
fn describe_silent(plan: &outrun_plan::Plan, silent: &[(u32, Option<u64>)]) -> String {
    let one = |&(rank, last): &(u32, Option<u64>)| {
        let who = match plan.nodes.get(rank as usize).and_then(|n| n.worker) {
            Some(w) => format!("worker {w} (rank {rank}"),
            None => format!("rank {rank} ("),
        };
        let last = last.map_or("answered no iteration".into(), |t| format!("last answered iteration {t}"));
        format!("{who}, {last})").replace("(, ", "(")
    };
    let all: Vec<String> = silent.iter().map(one).collect();
    all.join(", ")
}
