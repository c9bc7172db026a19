//! The driver of the shuffle pattern (PageRank): K servers, no master. The pattern is
//! bulk-synchronous and tolerates no straggler, so its protocol is a fixed schedule — Map,
//! Encode, one turn per (multicast group, sender) in the same order on every server, Decode,
//! Reduce, all-gather of the new ranks — computed by `outrun_codes::ShuffleNode`; this module
//! moves its bytes with MPI and times every phase.
//!
//! - Multicast groups are communicators created once, by their members only
//!   (`MPI_Comm_create_group`, in the groups' lexicographic order), C(K−1, r) per server.
//! - Coded: a sender's turn is one `MPI_Ibcast` of its XOR message on the group's communicator.
//!   Uncoded: the sender sends each member its segment (`MPI_Isend`), each member receives its
//!   own (`MPI_Irecv` of the length the graph implies). Every transfer of an iteration is started
//!   at once, in the turns' order (which MPI requires for the broadcasts of one communicator),
//!   and waited for together: no deadlock, no global barrier, and groups with different members
//!   share the links concurrently (blocking turns taken one after the other were twice as slow
//!   at r = 1: docs/performance.md section 9).
//! - The new ranks reach every server by `MPI_Allgatherv` (at most n values each; not part of
//!   the thesis's load L, logged separately), so every server can test convergence itself and
//!   they all stop after the same iteration without another collective.
//! - Each server logs its phases per iteration in `rank-<k>.jsonl` (flushed line by line); after
//!   the loop rank 0 gathers them once and writes `phases.csv` (per iteration: each phase's
//!   maximum over servers, bytes summed over servers).

use std::time::Instant;

use mpi::datatype::PartitionMut;
use mpi::topology::SimpleCommunicator;
use mpi::traits::*;
use outrun_codes::{ShuffleAllocation, ShuffleNode};
use outrun_driver::{write_header, Core};
use outrun_plan::Pattern;
use outrun_proto::{Delivered, Frame, Histogram, Input};
use outrun_runlog::event::{Event, Phases, Setup, Shutdown, Traffic};
use outrun_runlog::{Lines, Summary};
use outrun_workloads::Job;

use crate::clock::Clock;
use crate::error::EngineError;
use crate::transport::Comm;
use crate::{agree, io_error, keep_book, setup_record, Progress, Shared};

/// Phases per iteration, in `phases.csv` order.
const PHASES: [&str; 6] = ["map_s", "encode_s", "shuffle_s", "decode_s", "reduce_s", "redistribute_s"];
/// Per-iteration numbers gathered to rank 0: the phases, then L-bytes, wire bytes, values mapped.
const FIELDS: usize = PHASES.len() + 3;

/// One transfer of an iteration: in this server's `group`-th group, a message from this server
/// (`peer`: itself for a multicast, else the member it goes to) or to it (`peer`: the sender).
struct Op {
    group: usize,
    peer: usize,
    receive: bool,
}

/// Start every transfer of the iteration at once — `MPI_Ibcast` on the group's communicator
/// (coded), `MPI_Isend` / `MPI_Irecv` (uncoded) — and wait for all of them: groups with
/// different members proceed concurrently, limited only by the links. Each member posts its
/// groups' broadcasts in the turns' order (the order MPI requires per communicator).
fn transfer(node: &ShuffleNode, comms: &[SimpleCommunicator], ops: &mut [(Op, Vec<u8>)], coded: bool, rank: usize) {
    let count = ops.len();
    mpi::request::multiple_scope(count, |scope, requests| {
        for (op, buf) in ops.iter_mut() {
            let (members, _) = node.group(op.group);
            let index = |k: usize| members.iter().position(|&m| m == k).expect("a member") as i32;
            let c = &comms[op.group];
            if coded {
                let root = if op.receive { op.peer } else { rank };
                requests.add(c.process_at_rank(index(root)).immediate_broadcast_into(scope, &mut buf[..]));
            } else if op.receive {
                requests.add(c.process_at_rank(index(op.peer)).immediate_receive_into(scope, &mut buf[..]));
            } else {
                requests.add(c.process_at_rank(index(op.peer)).immediate_send(scope, &buf[..]));
            }
        }
        let mut done = Vec::with_capacity(count);
        requests.wait_all(&mut done);
    });
}

/// Run the shuffle plan of `shared` on this rank, with its graph job (whose graph every rank
/// loaded).
pub(crate) fn run(
    world: &SimpleCommunicator,
    mut comm: Comm,
    shared: &Shared,
    mut job: Box<dyn Job>,
    progress: &mut dyn Progress,
    started: Instant,
) -> Result<Option<Summary>, EngineError> {
    let rank = comm.rank;
    let plan = &shared.plan;
    let Pattern::Shuffle { servers, r, coded, reduce } = plan.pattern else { unreachable!("a shuffle plan") };
    let dir = &shared.run_dir;
    let io = |e| io_error(dir, e);
    let graph_job = job.graph().ok_or_else(|| {
        EngineError::Setup(format!("scheme.kind = \"{}\": the shuffle pattern runs jobs on a graph", plan.scheme))
    })?;
    let g = graph_job.graph();
    let n = g.vertices();
    // every server derives the messages' lengths from its own copy of the graph: they must agree
    let print = g.fingerprint();
    let (mut lo, mut hi) = (0u64, 0u64);
    world.all_reduce_into(&print, &mut lo, mpi::collective::SystemOperation::min());
    world.all_reduce_into(&print, &mut hi, mpi::collective::SystemOperation::max());
    if lo != hi {
        let why = format!("the servers built different graphs (rank {rank}: {n} vertices, fingerprint {print:016x}): is the graph file the same on every host?");
        return Err(if rank == 0 { EngineError::Run(why) } else { EngineError::Aborted });
    }
    let alloc =
        ShuffleAllocation::new(n, servers, r, reduce).map_err(|e| EngineError::Setup(format!("scheme: {e}")))?;
    let mut node = ShuffleNode::new(g, &alloc, rank, coded);
    // one communicator per group this server is in, created by the members only, in order
    let comms: Vec<SimpleCommunicator> = (0..node.group_count())
        .map(|x| {
            let (members, id) = node.group(x);
            let ranks: Vec<i32> = members.iter().map(|&m| m as i32).collect();
            world
                .split_by_subgroup_with_tag(&world.group().include(&ranks), id as i32)
                .expect("a member gets the group's communicator")
        })
        .collect();
    // a server holds the out-lists of the vertices it Maps; each vertex is Mapped r times
    let mine = node.mapped().iter().map(|&j| g.targets(j as usize).len() as u64).sum::<u64>();
    let mut values = 0u64;
    world.all_reduce_into(&mine, &mut values, mpi::collective::SystemOperation::sum());
    let values = values / r as u64;
    let mut clock = Clock::start();
    clock.sync(&mut comm);
    // what can fail on one rank is agreed by all (a rank stopping alone would leave the others
    // in a collective)
    let mut log = agree(&mut comm, Lines::create(&dir.join(format!("rank-{rank}.jsonl"))).map_err(io))?.quiet();
    let logs = rank == plan.log_rank();
    let header = if logs { write_header(dir, plan, &shared.config_toml, job.as_ref()).map_err(io) } else { Ok(()) };
    agree(&mut comm, header)?;
    if logs {
        tracing::info!(
            "{}: {} servers, n = {n} vertices, {values} values per iteration; run directory {}",
            plan.scheme,
            servers,
            dir.display()
        );
    }
    log.event(&Event::Setup(Setup {
        server: Some(rank),
        mapped: Some(node.mapped().len()),
        reduced: Some(node.reduced().len()),
        groups: Some(node.group_count()),
        ..setup_record(rank, &clock)
    }));
    // where each server's reduced vertices land in the all-gathered vector
    let owned: Vec<Vec<u32>> = (0..servers).map(|k| alloc.reduced(k)).collect();
    let counts: Vec<i32> = owned.iter().map(|o| o.len() as i32).collect();
    let displs: Vec<i32> = counts
        .iter()
        .scan(0, |acc, &c| {
            let d = *acc;
            *acc += c;
            Some(d)
        })
        .collect();
    let turns = node.turns();
    let mut core = Core::of(plan, rank, job);
    let book = if logs { keep_book(&mut core, shared, &clock) } else { Ok(()) };
    agree(&mut comm, book)?;
    world.barrier();
    let setup_s = started.elapsed().as_secs_f64();
    if logs {
        tracing::info!("setup took {setup_s:.3} s; starting at most {} iterations", plan.run.iterations);
        core.start_loop(clock.now());
        core.report_to(progress);
    }
    let delivered = Delivered {
        used: (1..=servers).collect(),
        residual: 0.0,
        exact: true,
        coverage: 1.0,
        late_total: 0,
        rejected: vec![],
    };
    let mut gathered = vec![0.0; n];
    let mut rows: Vec<f64> = Vec::new();
    let mut recv_bytes_total = 0u64;
    let mut stats: Vec<f64> = Vec::new();
    let mut next = core.start::<Frame>();
    while let Input::Start { t, model } = next {
        let pi = model.as_slice();
        let graph_job = core.job.graph().expect("checked: a graph job");
        let g = graph_job.graph();
        let mut mark = clock.now();
        let mut lap = |clock: &Clock| {
            let now = clock.now();
            let d = now - mark;
            mark = now;
            d
        };
        let mapped = node.map(g, pi);
        let map_s = lap(&clock);
        let mut out: Vec<Vec<(Option<usize>, Vec<u8>)>> = (0..node.group_count()).map(|x| node.encode(x)).collect();
        let encode_s = lap(&clock);
        let (mut l_bytes, mut wire_bytes, mut recv_bytes) = (0u64, 0u64, 0u64);
        // every transfer of the iteration, in the turns' order; empty messages are not sent
        // (their receivers know their length is 0 too)
        let mut ops: Vec<(Op, Vec<u8>)> = Vec::with_capacity(turns.len() * 2);
        for turn in &turns {
            let (members, _) = node.group(turn.group);
            if turn.sender == rank {
                for (to, bytes) in std::mem::take(&mut out[turn.group]) {
                    if bytes.is_empty() {
                        continue;
                    }
                    l_bytes += bytes.len() as u64;
                    wire_bytes += (bytes.len() * if to.is_some() { 1 } else { members.len() - 1 }) as u64;
                    ops.push((Op { group: turn.group, peer: to.unwrap_or(rank), receive: false }, bytes));
                }
            } else {
                let want = node.expected_len(turn.group, turn.sender);
                if want > 0 {
                    recv_bytes += want as u64;
                    ops.push((Op { group: turn.group, peer: turn.sender, receive: true }, vec![0u8; want]));
                }
            }
        }
        transfer(&node, &comms, &mut ops, coded, rank);
        let shuffle_s = lap(&clock);
        let received = ops.into_iter().filter(|(op, _)| op.receive).map(|(op, bytes)| (op.group, op.peer, bytes));
        for (group, sender, bytes) in received {
            // lengths come from the same graph on every server (fingerprints compared at setup)
            node.decode(group, sender, bytes).expect("a message of the length the graph implies");
        }
        node.unpack();
        let decode_s = lap(&clock);
        rows.clear();
        rows.extend(graph_job.reduce(&node, pi));
        let reduce_s = lap(&clock);
        {
            let mut part = PartitionMut::new(&mut gathered[..], &counts[..], &displs[..]);
            world.all_gather_varcount_into(&rows[..], &mut part);
        }
        // the new state in vertex order: every vertex is Reduced by exactly one server
        let mut state = pi.to_vec();
        for (k, o) in owned.iter().enumerate() {
            for (x, &v) in o.iter().enumerate() {
                state[v as usize] = gathered[displs[k] as usize + x];
            }
        }
        let redistribute_s = lap(&clock);
        recv_bytes_total += recv_bytes;
        let end = clock.now();
        let phases = [map_s, encode_s, shuffle_s, decode_s, reduce_s, redistribute_s];
        log.event(&Event::Iteration(Phases {
            t,
            end,
            map_s,
            encode_s,
            shuffle_s,
            decode_s,
            reduce_s,
            redistribute_s,
            values_mapped: mapped,
            l_bytes,
            wire_bytes,
            recv_bytes,
            redistribute_bytes: 8 * (n - rows.len()),
            change_l1: state.iter().zip(pi).map(|(a, b)| (a - b).abs()).sum(),
        }));
        stats.extend(phases.iter().copied().chain([l_bytes as f64, wire_bytes as f64, mapped as f64]));
        // every server applies the same new state and stops after the same iteration
        next = core.deliver(t, Frame::from_vec(state), delivered.clone(), end);
    }
    core.end();
    if let Input::Finish { failure: Some(why) } = next {
        return Err(EngineError::Run(why));
    }
    let traffic = Traffic { recv_bytes: Some(recv_bytes_total), ..Traffic::default() };
    log.event(&Event::Shutdown(Shutdown { at: clock.now(), clean: true, traffic, ..Shutdown::default() }));
    // once, after the timed loop: every server's phases to rank 0 (all ran the same iterations)
    let root = world.process_at_rank(0);
    if !logs {
        root.gather_into(&stats[..]);
        return Ok(None);
    }
    let mut all = vec![0.0; stats.len() * servers];
    root.gather_into_root(&stats[..], &mut all[..]);
    let iterations = stats.len() / FIELDS;
    let mut csv = Lines::create(&dir.join("phases.csv")).map_err(io)?.quiet();
    csv.line(&format!("iteration,{},l_bytes,wire_bytes,load_l,values_mapped", PHASES.join(",")));
    for t in 0..iterations {
        let at = |k: usize, f: usize| all[k * stats.len() + t * FIELDS + f];
        let max: Vec<String> =
            (0..PHASES.len()).map(|f| format!("{:.6}", (0..servers).map(|k| at(k, f)).fold(0.0, f64::max))).collect();
        let sum = |f: usize| (0..servers).map(|k| at(k, f)).sum::<f64>();
        let l = sum(PHASES.len());
        csv.line(&format!(
            "{t},{},{},{},{:e},{}",
            max.join(","),
            l,
            sum(PHASES.len() + 1),
            l / (8.0 * n as f64 * n as f64),
            sum(PHASES.len() + 2)
        ));
    }
    if let Some(e) = csv.failure() {
        return Err(io(std::io::Error::other(format!("phases.csv dropped lines ({e})"))));
    }
    core.finish(setup_s, 0, recv_bytes_total, &Histogram::default()).map_err(io)
}
