//! The driver of the shuffle pattern (PageRank): K servers, no master. The pattern is
//! bulk-synchronous and tolerates no straggler, so its protocol is a fixed schedule — Map,
//! Encode, one turn per (multicast group, sender) in the same order on every server, Decode,
//! Reduce, all-gather of the new ranks — computed by `outrun_codes::ShuffleNode`; this module
//! moves its bytes with MPI and times every phase.
//!
//! - Coded: multicast groups are communicators created once, by their members only
//!   (`MPI_Comm_create_group`, in rounds of disjoint groups: `creation_order`), C(K−1, r) per
//!   server, and a sender's turn is one `MPI_Ibcast` of its XOR message on the group's
//!   communicator, whose rank order rotates the members by their sum (`comm_order`: the
//!   broadcast's schedule then places every server alike, not the highest-ranked last in every
//!   group). The library's creation has no bound: rank 0 notes one of its own that has not
//!   returned after 10 s, and the servers then meet in a step named for it, so rank 0 names
//!   those still creating. With `scheme.multicast = "unicasts"` the sender sends its XOR message
//!   to each other member point to point instead, as below: no communicators.
//!   Uncoded: the sender sends each member its segment (`MPI_Isend`, in `ShuffleNode::encode`'s
//!   order: each member last as often as any other), each member receives its own (`MPI_Irecv`
//!   of the length the graph implies), on the world communicator with a tag of the group: no
//!   communicators to create (at K = 15, r = 5 creating them is most of a run's setup:
//!   docs/performance.md section 9). Every transfer of an iteration is started at once, in the
//!   turns' order (which MPI requires for the broadcasts of one communicator), and waited for
//!   together: no deadlock, no global barrier, and groups with different members share the
//!   links concurrently (blocking turns taken one after the other were twice as slow at r = 1:
//!   docs/performance.md section 9).
//! - `scheme.shuffle = "turns"` takes the same transfers one turn at a time, as the thesis's EC2
//!   runs did (§2.7: only one server uses the network at a time): before every turn of every
//!   group (all C(K, r+1) groups, lexicographic, each member in order) every server enters an
//!   `MPI_Ibarrier` of all servers, and the turn's members then move its bytes as above.
//! - A straggler of `[stragglers]` (`fixed`, `bernoulli`, `trace`; server k is the model's
//!   worker k + 1) sleeps after its Map what the model adds, logged as `injected_s`: the
//!   Shuffle, which needs every server, waits for it.
//! - The new ranks reach every server from every other point to point (`MPI_Isend` /
//!   `MPI_Irecv`, at most n values each; not part of the thesis's load L, logged separately), so
//!   every server can test convergence itself and they all stop after the same iteration without
//!   another collective — and a server waiting for a row knows whose.
//! - Every wait (the transfers, the new ranks) polls as `engine.idle` resolves on the host and
//!   is bounded: a server that stopped, hangs or died is named in one line by a server that
//!   waited for it, and the job ends, instead of holding every other server in the library's
//!   wait until the launcher's bound. The logging server says it at `run.deadline`; the others
//!   wait longer (one of them speaks only where the logging server is the silent one), so the
//!   line is one.
//! - Each server logs its phases per iteration in `rank-<k>.jsonl` (flushed line by line), and
//!   per other server when the last message that did not pass through it arrived (its
//!   transfers are waited for with `MPI_Testsome`, noting each as it completes: `outrun blame`
//!   finds a slow link by them); after the loop rank 0 gathers the phases once (through its
//!   named wait) and writes `phases.csv` (per iteration: each phase's maximum over servers,
//!   bytes summed over servers).

use std::collections::BTreeSet;
use std::path::Path;
use std::time::{Duration, Instant};

use mpi::request::RequestCollection;
use mpi::topology::SimpleCommunicator;
use mpi::traits::*;
use outrun_codes::{ShuffleAllocation, ShuffleNode};
use outrun_config::ShuffleSchedule;
use outrun_driver::{write_header, Core};
use outrun_plan::Pattern;
use outrun_proto::{Contacts, Delivered, Frame, Histogram, Input};
use outrun_runlog::event::{Arrival, Event, Phases, Setup, Shutdown, Traffic};
use outrun_runlog::{Lines, Summary};
use outrun_workloads::Job;

use crate::clock::Clock;
use crate::error::EngineError;
use crate::transport::{Answers, Backoff, Comm, AWAY};
use crate::{agree, io_error, keep_book, open_contacts, setup_record, Progress, Shared};

/// Phases per iteration, in `phases.csv` order.
const PHASES: [&str; 6] = ["map_s", "encode_s", "shuffle_s", "decode_s", "reduce_s", "redistribute_s"];
/// Per-iteration numbers gathered to rank 0: the phases, then L-bytes, wire bytes, values mapped
/// and the seconds in the turns' barriers.
const FIELDS: usize = PHASES.len() + 4;

/// The tag of the new ranks' messages on the world communicator.
const NEW_RANKS: i32 = 0x5eed;
/// Point to point, the Shuffle tags a message with `GROUPS` + its group's number: above the
/// transport's own tags (setup, contacts, the finish), below `NEW_RANKS`.
const GROUPS: i32 = 0x100;
// group numbers are below MAX_SUBSETS; MPI allows tags up to at least 32 767
const _: () = assert!(GROUPS as u64 + outrun_codes::MAX_SUBSETS <= NEW_RANKS as u64 && NEW_RANKS < 32_767);

/// A multicast group's communicator, and its members in the communicator's rank order
/// ([`comm_order`]): a broadcast's root is named by its place there.
struct Multicast {
    comm: SimpleCommunicator,
    ranks: Vec<usize>,
}

impl Multicast {
    /// `server`'s rank in the group's communicator.
    fn rank_of(&self, server: usize) -> i32 {
        self.ranks.iter().position(|&m| m == server).expect("a member") as i32
    }
}

/// This server's multicast groups' communicators, created by their members only
/// (`MPI_Comm_create_group`, which returns once every member has called it) in `order` (every
/// group's number, as `ShuffleAllocation::creation_order`: rounds of disjoint groups, created
/// at once by different servers). Rank 0 notes a creation that has not returned after 10 s (and
/// at every tripling): with a member stopped or gone, every server of its groups would
/// otherwise wait there in the library without a word until the launcher's bound. One rank
/// watches, so the run gets one line; the servers outside rank 0's stalled groups are named by
/// rank 0's wait in the step that follows.
fn create_groups(world: &SimpleCommunicator, node: &ShuffleNode, rank: usize, order: &[usize]) -> Vec<Multicast> {
    let count = node.group_count();
    // this server's groups (by its own index) in the order they are created
    let mut place = vec![usize::MAX; order.iter().max().map_or(0, |&m| m + 1)];
    order.iter().enumerate().for_each(|(i, &g)| place[g] = i);
    let mut mine: Vec<usize> = (0..count).collect();
    mine.sort_by_key(|&x| place[node.group(x).1]);
    let groups: Vec<(Vec<usize>, usize)> = mine.iter().map(|&x| (node.group(x).0.to_vec(), node.group(x).1)).collect();
    let watch = crate::watch::StallWatch::start(rank == 0 && count > 0, move |waited, done| {
        let (members, id) = &groups[(done as usize).min(count - 1)];
        group_line(waited, done as usize, count, *id, members)
    });
    let mut comms: Vec<Option<Multicast>> = (0..count).map(|_| None).collect();
    for (done, &x) in mine.iter().enumerate() {
        let (members, id) = node.group(x);
        let ranks = comm_order(members);
        let include: Vec<i32> = ranks.iter().map(|&m| m as i32).collect();
        let comm = world
            .split_by_subgroup_with_tag(&world.group().include(&include), id as i32)
            .expect("a member gets the group's communicator");
        watch.done(done as u64 + 1);
        comms[x] = Some(Multicast { comm, ranks });
    }
    comms.into_iter().map(|c| c.expect("every group created")).collect()
}

/// A group's members in its communicator's rank order: rotated by the sum of their numbers, so
/// that the positions `MPI_Ibcast`'s schedule gives a group's members fall on every server
/// alike over the groups, not on the highest-ranked in all of them.
fn comm_order(members: &[usize]) -> Vec<usize> {
    let mut order = members.to_vec();
    if !order.is_empty() {
        order.rotate_left(members.iter().sum::<usize>() % members.len());
    }
    order
}

/// Rank 0's note when creating its `done`-th (from 0) of `count` groups' communicators, group
/// `id` of `members`, has not returned after `waited`.
fn group_line(waited: Duration, done: usize, count: usize, id: usize, members: &[usize]) -> String {
    let ranks: Vec<String> = members.iter().map(|m| m.to_string()).collect();
    format!(
        "note: rank 0 has waited {} s to create multicast group {id}'s communicator (ranks {}; its group {} of {count}): MPI_Comm_create_group returns once every member has called it, and each server creates its groups in the same order, so a member is still creating an earlier group of its own, is slow, stopped, or its host unreachable; MPI does not say which (still waiting)",
        waited.as_secs(),
        ranks.join(", "),
        done + 1,
    )
}

/// One transfer of an iteration: in this server's `group`-th group, a message from this server
/// (`peer`: itself for a multicast, else the member it goes to) or to it (`peer`: the sender).
struct Op {
    group: usize,
    peer: usize,
    receive: bool,
    /// When it completed (the server's clock; set by [`transfer`]).
    done: f64,
}

/// How a server waits for its transfers and the new ranks: polling as `engine.idle` resolves
/// on this host, for at most [`Patience::bound`]; then one line (and the rank's log) says whom
/// it waited for, and the job ends.
struct Patience<'a> {
    /// `run.deadline` and the shutdown grace, in seconds.
    deadline: f64,
    grace: f64,
    /// This server's rank, and the logging server's.
    rank: usize,
    logging: usize,
    idle: outrun_config::Idle,
    poll_us: u64,
    comm: &'a Comm,
    dir: &'a Path,
}

impl Patience<'_> {
    /// Wait for every request of `requests`, the i-th of which waits for the servers `peers[i].0`
    /// (a receive when `peers[i].1`); with `when`, note in `when[i]` when (`at.clock`) the i-th
    /// completed. Past the bound, give up (`at`) naming the servers it still waits for, as
    /// "server 2 (rank 2) to send" (or, when every receive is in, "… to take what it sent"): the
    /// job ends there, inside the requests' scope (whose requests may not be dropped
    /// incomplete).
    fn wait_for<D: ?Sized>(
        &self,
        requests: &mut RequestCollection<'_, D>,
        peers: &[(Vec<usize>, bool)],
        mut when: Option<&mut [f64]>,
        at: Where<'_>,
    ) {
        let (mut t0, mut last) = (Instant::now(), Instant::now());
        let mut excused = Duration::ZERO;
        // a lockstep exchange, as the ring's steps: poll for a while before sleeping
        let mut backoff = Backoff::of(self.idle, self.poll_us, true);
        let mut done = Vec::with_capacity(peers.len());
        let mut finished = vec![false; peers.len()];
        let clock = at.clock;
        loop {
            // timed: MPI_Testsome, noting each request as it completes (it may not be called
            // once every request is: it would answer MPI_UNDEFINED); else MPI_Testall, one call
            // per poll, no request touched until all are complete
            let all = match when.as_deref_mut() {
                Some(_) if requests.incomplete() == 0 => true,
                Some(times) => {
                    requests.test_some(&mut done);
                    let now = if done.is_empty() { 0.0 } else { clock.now() };
                    for &(i, _, _) in &done {
                        times[i] = now;
                        finished[i] = true;
                    }
                    requests.incomplete() == 0
                }
                None => requests.test_all(&mut done),
            };
            if all {
                break;
            }
            // a server that was away itself (stopped and resumed: the job's teardown resumes a
            // stopped rank before it ends it) does not blame the others for that time, up to one
            // bound's worth (a host so loaded that it is away every poll still gives up); one
            // reading of the clock decides
            let now = Instant::now();
            let gap = now - last;
            last = now;
            if gap > AWAY && excused.as_secs_f64() < self.bound() {
                t0 += gap;
                excused += gap;
            }
            if (now - t0).as_secs_f64() > self.bound() {
                requests.test_some(&mut done);
                if requests.incomplete() == 0 {
                    return; // all came in at the last moment
                }
                done.iter().for_each(|(i, _, _)| finished[*i] = true);
                // the servers of the unfinished transfers, less those that finished another one
                // this iteration (live, and past posting theirs: a multicast to them and a silent
                // one waits for the silent one)
                let open = |receive: bool| -> Vec<usize> {
                    let (mut open, mut heard) = (BTreeSet::new(), BTreeSet::new());
                    for (i, (servers, _)) in peers.iter().enumerate().filter(|(_, p)| p.1 == receive) {
                        if finished[i] { &mut heard } else { &mut open }.extend(servers.iter().copied());
                    }
                    let silent: Vec<usize> = open.difference(&heard).copied().collect();
                    if silent.is_empty() {
                        open.into_iter().collect()
                    } else {
                        silent
                    }
                };
                let (from, to) = (open(true), open(false));
                let (servers, what) = match at.phase {
                    // a barrier does not say who has not entered it
                    Phase::Turn => (&from, "reach it"),
                    _ if from.is_empty() => (&to, "take what it sent"),
                    _ => (&from, "send"),
                };
                let why = if servers.len() == 1 {
                    "stopped, stuck or dead"
                } else {
                    "one is stopped, stuck or dead; the others may be waiting for it"
                };
                self.give_up(at, format!("{} to {what} ({why})", servers_named(servers)));
            }
            backoff.idle();
        }
    }

    /// Seconds this server waits: `run.deadline` at the logging server; at server r, r + 1
    /// shutdown graces more, so that the logging server speaks (every other server waits,
    /// directly or through a live one held by it, for the silent one) and the lowest live
    /// server where the logging one is the silent one.
    fn bound(&self) -> f64 {
        let after = if self.rank == self.logging { 0.0 } else { (self.rank + 1) as f64 };
        self.deadline + after * self.grace
    }

    /// Say that this server waited for `whom` where `at` says, on stderr and in its log, and end
    /// the job.
    fn give_up(&self, Where { log, clock, t, phase }: Where<'_>, whom: String) -> ! {
        let why = format!(
            "pagerank: server {} waited {} s in iteration {t}'s {} for {whom}; if the network is that slow, raise run.deadline",
            self.rank,
            self.bound(),
            phase.name()
        );
        log.event(&Event::error(clock.now(), why.clone()));
        self.comm.abort_saying(1, &format!("error: {why}; the MPI job is aborted (logs are in {})", self.dir.display()))
    }
}

/// Where a server waits: its log and clock, the iteration and the phase.
struct Where<'a> {
    log: &'a mut Lines,
    clock: &'a Clock,
    t: u64,
    phase: Phase,
}

/// The phases of an iteration that wait for other servers.
#[derive(Clone, Copy)]
enum Phase {
    Shuffle,
    /// The barrier before a turn of the turn-taking Shuffle.
    Turn,
    NewRanks,
}

impl Phase {
    fn name(self) -> &'static str {
        match self {
            Phase::Shuffle => "shuffle",
            Phase::Turn => "shuffle (at the barrier before a turn)",
            Phase::NewRanks => "exchange of the new ranks",
        }
    }
}

/// "server 2 (rank 2)", "servers 1 and 3 (ranks 1 and 3)".
fn servers_named(ranks: &[usize]) -> String {
    let list = match ranks {
        [one] => one.to_string(),
        [init @ .., last] => format!("{} and {last}", init.iter().map(usize::to_string).collect::<Vec<_>>().join(", ")),
        [] => String::new(),
    };
    let s = if ranks.len() == 1 { "" } else { "s" };
    format!("server{s} {list} (rank{s} {list})")
}

/// How a server's coded messages reach their groups.
#[derive(Clone, Copy, PartialEq, Eq)]
enum Route {
    /// Uncoded: each segment to its one member.
    Segments,
    /// Coded, `MPI_Ibcast` on the group's communicator.
    Broadcast,
    /// Coded, `MPI_Isend` to each other member of the group.
    Unicasts,
}

/// Start every transfer of the iteration at once — `MPI_Ibcast` on the group's communicator
/// (coded, [`Route::Broadcast`]: `comms`), else `MPI_Isend` / `MPI_Irecv` on `world` tagged by
/// the group ([`GROUPS`]; a coded message [`Route::Unicasts`] once to each other member) — and
/// wait for all of them: groups with different members proceed concurrently, limited only by
/// the links. Each member posts its groups' broadcasts in the turns' order (the order MPI
/// requires per communicator). Each transfer's `Op::done` is set to when it completed (a coded
/// unicast's: its last copy).
fn transfer(
    node: &ShuffleNode,
    world: &SimpleCommunicator,
    comms: &[Multicast],
    ops: &mut [(Op, Vec<u8>)],
    route: Route,
    wait: &Patience<'_>,
    at: Where<'_>,
) {
    let rank = wait.rank;
    let others = |op: &Op| node.group(op.group).0.iter().copied().filter(move |&m| m != rank);
    // per request: its transfer, and whom it waits for (the sender of a receive, the members a
    // send goes to)
    let mut owner = Vec::with_capacity(ops.len());
    let mut peers: Vec<(Vec<usize>, bool)> = Vec::with_capacity(ops.len());
    for (i, (op, _)) in ops.iter().enumerate() {
        match (op.receive, route) {
            (true, _) | (false, Route::Segments) => peers.push((vec![op.peer], op.receive)),
            (false, Route::Broadcast) => peers.push((others(op).collect(), false)),
            (false, Route::Unicasts) => peers.extend(others(op).map(|m| (vec![m], false))),
        }
        owner.resize(peers.len(), i);
    }
    let count = peers.len();
    let mut when = vec![0.0; count];
    mpi::request::multiple_scope(count, |scope, requests| {
        for (op, buf) in ops.iter_mut() {
            let id = node.group(op.group).1;
            let tag = GROUPS + id as i32;
            match (op.receive, route) {
                (_, Route::Broadcast) => {
                    let (group, root) = (&comms[op.group], if op.receive { op.peer } else { rank });
                    let root = group.comm.process_at_rank(group.rank_of(root));
                    requests.add(root.immediate_broadcast_into(scope, &mut buf[..]));
                }
                // servers are the world's ranks; a pair's messages of one group keep their order
                (true, _) => {
                    let peer = world.process_at_rank(op.peer as i32);
                    requests.add(peer.immediate_receive_into_with_tag(scope, &mut buf[..], tag));
                }
                (false, Route::Segments) => {
                    let peer = world.process_at_rank(op.peer as i32);
                    requests.add(peer.immediate_send_with_tag(scope, &buf[..], tag));
                }
                (false, Route::Unicasts) => {
                    let buf: &[u8] = buf;
                    for m in others(op) {
                        requests.add(world.process_at_rank(m as i32).immediate_send_with_tag(scope, buf, tag));
                    }
                }
            }
        }
        wait.wait_for(requests, &peers, Some(&mut when), at)
    });
    for (op, _) in ops.iter_mut() {
        op.done = f64::NEG_INFINITY;
    }
    for (&i, done) in owner.iter().zip(when) {
        ops[i].0.done = ops[i].0.done.max(done);
    }
}

/// The barrier of all servers before a turn of the turn-taking Shuffle (`MPI_Ibarrier`, waited
/// for as the transfers are; `others`: every other server, as a receive from them all).
fn turn_barrier(world: &SimpleCommunicator, wait: &Patience<'_>, others: &[(Vec<usize>, bool)], at: Where<'_>) {
    mpi::request::multiple_scope(1, |_, requests| {
        requests.add(world.immediate_barrier());
        wait.wait_for(requests, others, None, at)
    })
}

/// Every server's new ranks (`rows`, its reduced vertices') to every other, point to point,
/// into `gathered`: server k's `counts[k]` values after those of the servers below k.
fn new_ranks(
    world: &SimpleCommunicator,
    rows: &[f64],
    gathered: &mut [f64],
    counts: &[i32],
    wait: &Patience<'_>,
    at: Where<'_>,
) {
    let rank = wait.rank;
    let mut parts: Vec<&mut [f64]> = Vec::with_capacity(counts.len());
    let mut rest = gathered;
    for &c in counts {
        let (part, tail) = rest.split_at_mut(c as usize);
        parts.push(part);
        rest = tail;
    }
    parts[rank].copy_from_slice(rows);
    let others = counts.len() - 1;
    mpi::request::multiple_scope(2 * others, |scope, requests| {
        let mut peers = Vec::with_capacity(2 * others);
        for (k, part) in parts.into_iter().enumerate().filter(|(k, _)| *k != rank) {
            requests.add(world.process_at_rank(k as i32).immediate_receive_into_with_tag(scope, part, NEW_RANKS));
            peers.push((vec![k], true));
        }
        for k in (0..counts.len()).filter(|&k| k != rank) {
            requests.add(world.process_at_rank(k as i32).immediate_send_with_tag(scope, rows, NEW_RANKS));
            peers.push((vec![k], false));
        }
        wait.wait_for(requests, &peers, None, at)
    })
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
    idle: outrun_config::Idle,
) -> Result<Option<Summary>, EngineError> {
    let rank = comm.rank;
    let plan = &shared.plan;
    let Pattern::Shuffle { servers, r, coded, reduce, schedule, multicast } = plan.pattern else {
        unreachable!("a shuffle plan")
    };
    let route = match (coded, multicast) {
        (false, _) => Route::Segments,
        (true, outrun_config::Multicast::Broadcast) => Route::Broadcast,
        (true, outrun_config::Multicast::Unicasts) => Route::Unicasts,
    };
    let dir = &shared.run_dir;
    let io = |e| io_error(dir, e);
    let graph_job = job.graph().ok_or_else(|| {
        EngineError::Setup(format!("scheme.kind = \"{}\": the shuffle pattern runs jobs on a graph", plan.scheme))
    })?;
    let g = graph_job.graph();
    let n = g.vertices();
    // every server derives the messages' lengths from its own copy of the graph: they must agree
    // (through rank 0, which names a rank that does not come, as every exchange of setup)
    let print = g.fingerprint();
    let prints = comm.star_gather_u64("build its graph", print);
    if prints.iter().any(|&p| p != print) {
        let why = format!("the servers built different graphs (rank {rank}: {n} vertices, fingerprint {print:016x}): is the graph file the same on every host?");
        return Err(if rank == 0 { EngineError::Run(why) } else { EngineError::Aborted });
    }
    let alloc =
        ShuffleAllocation::new(n, servers, r, reduce).map_err(|e| EngineError::Setup(format!("scheme: {e}")))?;
    let mut node = ShuffleNode::new(g, &alloc, rank, coded);
    // the pages the loop writes in place, mapped now rather than in the first iteration
    node.touch(g);
    // a server holds the out-lists of the vertices it Maps; each vertex is Mapped r times
    let mine = node.mapped().iter().map(|&j| g.targets(j as usize).len() as u64).sum::<u64>();
    let values = comm.star_gather_u64("count the values it Maps", mine).iter().sum::<u64>() / r as u64;
    // coded broadcasts: one communicator per group this server is in, created by the members
    // only, in order (unicasts, coded or not, go point to point on the world communicator)
    let broadcast = route == Route::Broadcast;
    let creating = Instant::now();
    let comms = if broadcast { create_groups(world, &node, rank, &alloc.creation_order()) } else { Vec::new() };
    let groups_s = broadcast.then(|| creating.elapsed().as_secs_f64());
    if broadcast {
        // a step of its own: a server still creating its groups (those whose last groups come
        // last in the order finish last) is named as such by rank 0, not as late for the clock
        // synchronisation
        comm.barrier(&format!(
            "create its {} multicast groups' communicators (MPI_Comm_create_group)",
            node.group_count()
        ));
    }
    let mut clock = Clock::start();
    clock.sync(&mut comm);
    // what can fail on one rank is agreed by all (a rank stopping alone would leave the others
    // in a collective)
    let mut log =
        agree(&mut comm, "open its log", Lines::create(&dir.join(format!("rank-{rank}.jsonl"))).map_err(io))?.quiet();
    let logs = rank == plan.log_rank();
    let header = if logs { write_header(dir, plan, &shared.config_toml, job.as_ref()).map_err(io) } else { Ok(()) };
    agree(&mut comm, "finish setting up the run directory", header)?;
    if logs {
        tracing::info!(
            "{}: {} servers, n = {n} vertices, {values} values per iteration; run directory {}",
            plan.scheme,
            servers,
            dir.display()
        );
    }
    // every server sends every other its new ranks each iteration
    let everyone = Contacts::peers(rank, 0..servers);
    let (contact_s, unanswered) = open_contacts(&mut comm, &everyone, plan.run.deadline, None);
    log.event(&Event::Setup(Setup {
        server: Some(rank),
        contact_s: Some(contact_s),
        unanswered,
        mapped: Some(node.mapped().len()),
        reduced: Some(node.reduced().len()),
        groups: Some(node.group_count()),
        groups_s,
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
    // the turn-taking Shuffle walks every group's turns, a barrier of all servers before each;
    // the other servers' groups too
    let others = [((0..servers).filter(|&k| k != rank).collect::<Vec<_>>(), true)];
    let all_turns: Vec<(usize, usize)> = match schedule {
        ShuffleSchedule::Parallel => vec![],
        ShuffleSchedule::Turns => {
            alloc.groups().into_iter().enumerate().flat_map(|(id, m)| m.into_iter().map(move |s| (id, s))).collect()
        }
    };
    let mut injector = (plan.stragglers.law != outrun_plan::Law::None).then(|| plan.stragglers.injector());
    let mut core = Core::of(plan, rank, job);
    let book = if logs { keep_book(&mut core, shared, &clock) } else { Ok(()) };
    agree(&mut comm, "finish setting up", book)?;
    comm.barrier("start the loop");
    comm.end_setup();
    let setup_s = started.elapsed().as_secs_f64();
    let patience = Patience {
        deadline: plan.run.deadline,
        grace: outrun_plan::budget::shutdown_grace(plan.run.deadline),
        rank,
        logging: plan.log_rank(),
        idle,
        poll_us: plan.run.poll_us,
        comm: &comm,
        dir,
    };
    if logs {
        let of_which = groups_s.map_or(String::new(), |s| {
            format!(
                " ({s:.3} s of it creating this server's {} groups' communicators; scheme.multicast = \"unicasts\" creates none)",
                node.group_count()
            )
        });
        tracing::info!("setup took {setup_s:.3} s{of_which}; starting at most {} iterations", plan.run.iterations);
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
        let mut map_s = lap(&clock);
        // a straggler of `[stragglers]` (server k is the model's worker k + 1, as in a ring)
        // finishes its Map when the model says, the measured Map its base time
        let injected_s = injector.as_mut().map(|inj| {
            let time = inj.compute_time(rank + 1, t, mapped as f64, map_s);
            if time.target > map_s {
                std::thread::sleep(Duration::from_secs_f64(time.target - map_s));
            }
            map_s += lap(&clock);
            time.injected
        });
        let mut out: Vec<Vec<(Option<usize>, Vec<u8>)>> = (0..node.group_count()).map(|x| node.encode(x)).collect();
        let encode_s = lap(&clock);
        let (mut l_bytes, mut wire_bytes, mut recv_bytes) = (0u64, 0u64, 0u64);
        // of the Shuffle's seconds, those in the barriers before its turns
        let mut barrier_s = 0.0;
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
                    ops.push((Op { group: turn.group, peer: to.unwrap_or(rank), receive: false, done: 0.0 }, bytes));
                }
            } else {
                let want = node.expected_len(turn.group, turn.sender);
                if want > 0 {
                    recv_bytes += want as u64;
                    ops.push((Op { group: turn.group, peer: turn.sender, receive: true, done: 0.0 }, vec![0u8; want]));
                }
            }
        }
        match schedule {
            ShuffleSchedule::Parallel => {
                let at = Where { log: &mut log, clock: &clock, t, phase: Phase::Shuffle };
                transfer(&node, world, &comms, &mut ops, route, &patience, at);
            }
            ShuffleSchedule::Turns => {
                // this server's transfers are in the turns' order, as `all_turns`
                let turn_of = |op: &Op| (node.group(op.group).1, if op.receive { op.peer } else { rank });
                let mut next = 0;
                for &turn in &all_turns {
                    let at = Where { log: &mut log, clock: &clock, t, phase: Phase::Turn };
                    let entered = clock.now();
                    turn_barrier(world, &patience, &others, at);
                    barrier_s += clock.now() - entered;
                    let first = next;
                    while next < ops.len() && turn_of(&ops[next].0) == turn {
                        next += 1;
                    }
                    if next > first {
                        let at = Where { log: &mut log, clock: &clock, t, phase: Phase::Shuffle };
                        transfer(&node, world, &comms, &mut ops[first..next], route, &patience, at);
                    }
                }
                debug_assert_eq!(next, ops.len(), "every transfer has its turn");
            }
        }
        let shuffle_s = lap(&clock);
        // per other server, when the last message here that did not pass through it arrived
        let mut without = vec![f64::NEG_INFINITY; servers];
        let mut through = vec![false; servers];
        for (op, bytes) in ops.into_iter().filter(|(op, _)| op.receive) {
            // point to point its sender and this server; a broadcast every member of its group
            through.fill(false);
            if broadcast {
                node.group(op.group).0.iter().for_each(|&m| through[m] = true);
            } else {
                (through[op.peer], through[rank]) = (true, true);
            }
            for (w, _) in without.iter_mut().zip(&through).filter(|(_, &t)| !t) {
                *w = w.max(op.done);
            }
            // lengths come from the same graph on every server (fingerprints compared at setup)
            node.decode(op.group, op.peer, bytes).expect("a message of the length the graph implies");
        }
        let without = without.into_iter().enumerate().filter(|(_, at)| at.is_finite());
        node.unpack();
        let decode_s = lap(&clock);
        rows.clear();
        rows.extend(graph_job.reduce(&node, pi));
        let reduce_s = lap(&clock);
        let at = Where { log: &mut log, clock: &clock, t, phase: Phase::NewRanks };
        new_ranks(world, &rows, &mut gathered, &counts, &patience, at);
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
        let record = Phases {
            t,
            end,
            map_s,
            encode_s,
            shuffle_s,
            barrier_s,
            decode_s,
            reduce_s,
            redistribute_s,
            values_mapped: mapped,
            l_bytes,
            wire_bytes,
            recv_bytes,
            redistribute_bytes: 8 * (n - rows.len()),
            change_l1: state.iter().zip(pi).map(|(a, b)| (a - b).abs()).sum(),
            last_without: Some(without.map(|(s, at)| Arrival { rank: s, at, round: 0 }).collect()),
            injected_s,
        };
        // in PHASES' order, as `Phases::times` gives them
        stats.extend(record.times().into_iter().chain([l_bytes as f64, wire_bytes as f64, mapped as f64, barrier_s]));
        log.event(&Event::Iteration(record));
        // every server applies the same new state and stops after the same iteration
        next = core.deliver(t, Frame::from_vec(state), delivered.clone(), end);
    }
    core.end();
    if let Input::Finish { failure: Some(why) } = next {
        return Err(EngineError::Run(why));
    }
    let traffic = Traffic { recv_bytes: Some(recv_bytes_total), ..Traffic::default() };
    log.event(&Event::Shutdown(Shutdown { at: clock.now(), clean: true, traffic, ..Shutdown::default() }));
    // once, after the timed loop: every server's phases to rank 0 (all ran the same iterations),
    // through rank 0's named wait (MPI_Gather held every server silently behind one stopped after
    // the loop)
    let mine: Vec<u8> = stats.iter().flat_map(|v| v.to_le_bytes()).collect();
    let mut each = Vec::new();
    // rank 0 gathers at once (no goodbyes to wait for): rank 1 notes it after 10 s
    let end = crate::watch::StallWatch::run_end(rank == 1, 0.0);
    comm.star_exchange("end its last iteration (its phases' times for phases.csv)", &mine, |all| {
        each = all;
        Answers::Each(vec![Vec::new(); servers])
    });
    drop(end);
    if !logs {
        return Ok(None);
    }
    let all: Vec<f64> =
        each.concat().chunks_exact(8).map(|b| f64::from_le_bytes(b.try_into().expect("8 bytes"))).collect();
    if all.len() != stats.len() * servers {
        return Err(EngineError::Run(format!(
            "the servers sent {} phase times, {} expected: they ran different numbers of iterations",
            all.len(),
            stats.len() * servers
        )));
    }
    let iterations = stats.len() / FIELDS;
    let mut csv = Lines::create(&dir.join("phases.csv")).map_err(io)?.quiet();
    csv.line(&format!(
        "iteration,{},l_bytes,wire_bytes,load_l,values_mapped,barrier_min_s,barrier_max_s",
        PHASES.join(",")
    ));
    for t in 0..iterations {
        let at = |k: usize, f: usize| all[k * stats.len() + t * FIELDS + f];
        let max: Vec<String> =
            (0..PHASES.len()).map(|f| format!("{:.6}", (0..servers).map(|k| at(k, f)).fold(0.0, f64::max))).collect();
        let sum = |f: usize| (0..servers).map(|k| at(k, f)).sum::<f64>();
        let l = sum(PHASES.len());
        let barriers = (0..servers).map(|k| at(k, PHASES.len() + 3));
        csv.line(&format!(
            "{t},{},{},{},{:e},{},{:.6},{:.6}",
            max.join(","),
            l,
            sum(PHASES.len() + 1),
            l / (8.0 * n as f64 * n as f64),
            sum(PHASES.len() + 2),
            barriers.clone().fold(f64::INFINITY, f64::min),
            barriers.fold(0.0, f64::max)
        ));
    }
    if let Some(e) = csv.failure() {
        return Err(io(std::io::Error::other(format!("phases.csv dropped lines ({e})"))));
    }
    core.finish(setup_s, 0, recv_bytes_total, &Histogram::default()).map_err(io)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_group_creation_note_names_the_group_its_members_and_how_far_rank_0_got() {
        let l = group_line(Duration::from_secs(10), 0, 2002, 0, &[0, 1, 2, 3, 4, 5]);
        assert!(
            l.starts_with(
                "note: rank 0 has waited 10 s to create multicast group 0's communicator (ranks 0, 1, 2, 3, 4, 5; its group 1 of 2002)"
            ),
            "{l}"
        );
        assert!(l.ends_with("(still waiting)"), "{l}");
        let l = group_line(Duration::from_secs(30), 7, 35, 64, &[0, 2, 5, 7]);
        assert!(l.contains("group 64's communicator (ranks 0, 2, 5, 7; its group 8 of 35)"), "{l}");
    }

    /// A group's communicator order is its members rotated by their sum: over the C(5, 3)
    /// groups of K = 5, r = 2 (each server in 6) and the C(10, 5) of K = 10, r = 4 (each in
    /// 126) every server holds each position in as many groups as any other, give or take one
    /// (in members' order server 0 was first and server K − 1 last in every group of theirs).
    #[test]
    fn the_groups_communicators_rotate_their_members() {
        assert_eq!(comm_order(&[1, 3, 4]), [4, 1, 3]);
        assert_eq!(comm_order(&[1, 2, 3]), [1, 2, 3]);
        for (k, r) in [(5, 2), (10, 4)] {
            let a = outrun_codes::ShuffleAllocation::new(2520, k, r, outrun_codes::ReducePolicy::Contiguous).unwrap();
            let mut at = vec![vec![0usize; r + 1]; k];
            for members in a.groups() {
                for (position, &m) in comm_order(&members).iter().enumerate() {
                    at[m][position] += 1;
                }
            }
            let counts = at.iter().flatten();
            let (lo, hi) = (counts.clone().min().unwrap(), counts.max().unwrap());
            assert!(hi - lo <= 1, "K = {k}, r = {r}: {at:?}");
        }
    }
}
