//! The ring node: every rank computes its result, the ranks all-reduce, every rank delivers the
//! same total (and its driver applies the same update).
//!
//! The all-reduce follows a schedule of steps ([`crate::steps`]); by default the
//! bandwidth-optimal ring: the vector is cut into N segments; in reduce-scatter step k
//! (k = 0..N−2) rank r sends segment (r − k) mod N to its right neighbour and adds the segment
//! (r − k − 1) mod N received from its left one; after N − 1 steps rank r owns the full sum of
//! segment (r + 1) mod N; the N − 1 all-gather steps pass the finished segments around. Each
//! rank sends 2(N − 1)/N of the vector. `scheme.algorithm` swaps in recursive doubling or
//! halving-doubling: the same machine, fewer steps. At each step a rank sends first, then waits
//! for that step's message; a peer may be one iteration ahead: its early messages are kept until
//! this rank gets there. A range that the next step sends on goes in the frame it arrived in (a
//! sum is formed there, a final sum copied from it), so of the ring's 2(N − 1) sends only the
//! first copies out of the vector. A vector whose ring segments would exceed [`LANE_BYTES`]
//! is cut into lanes, contiguous blocks that each run the schedule on their own with their
//! messages in flight together (a message's round names its lane and step); every value's sum
//! is still formed on one rank and copied to the others. With `collective`, the driver's
//! library all-reduce replaces the steps.

use std::collections::{BTreeMap, VecDeque};
use std::sync::Arc;

use crate::roles::Vector;
use outrun_config::RingAlgorithm;
use outrun_plan::{Pattern, Plan};
use outrun_runlog::event::{Ending, Event, Iter, Shutdown};

use crate::hist::Histogram;
use crate::machine::{Clock, Contacts, Delivered, Failure, Input, Machine, Outcome, Output};
use crate::steps::{schedule, Op, Step};
use crate::wire::{Header, Kind, Msg};

/// The ring's one timer: waiting for the next segment.
const STEP: u64 = 1;

/// The most bytes one message of a ring step carries: a longer vector is cut into lanes (at
/// most [`MAX_LANES`]), contiguous blocks that each run the whole schedule on their own, their
/// messages in flight together, so that a rank adds one lane's segment while the next ones
/// arrive (docs/performance.md §23).
pub(crate) const LANE_BYTES: usize = 1 << 20;

/// The most lanes a vector is cut into.
pub const MAX_LANES: usize = 8;

/// How many lanes `len` values take under the resolved schedule `alg` among `n` ranks: enough
/// that a step's message (a ring segment, len/N values) carries at most [`LANE_BYTES`].
pub(crate) fn lanes(alg: RingAlgorithm, n: usize, len: usize) -> usize {
    let largest = match alg.resolve(len) {
        RingAlgorithm::Ring if n > 1 => len.div_ceil(n),
        // the doubling schedules are chosen for short vectors (`auto`) or by hand; they keep
        // one lane, as does a ring of one rank (it sends nothing)
        _ => return 1,
    };
    (8 * largest).div_ceil(LANE_BYTES).clamp(1, MAX_LANES)
}

/// One lane: a contiguous block of the vector and this rank's steps over it.
struct Lane<P> {
    steps: Vec<Step>,
    /// Per step: the received range need not be written into the vector, because the next
    /// step sends exactly it and a later step copies its final sum over it (the ring's
    /// reduce-scatter but its last step).
    forward_only: Vec<bool>,
    /// The range received at the previous step as it arrived (a frame with room for a
    /// header): when this step sends the same range, it goes on as it is, without a copy.
    carry: Option<(std::ops::Range<usize>, P)>,
    /// The current step, and whether its send has gone.
    step: usize,
    sent: bool,
}

impl<P: Vector> Lane<P> {
    /// The lane over `block` of the vector: the schedule of its length, shifted to its start.
    fn new(alg: RingAlgorithm, rank: usize, n: usize, block: std::ops::Range<usize>) -> Self {
        let shift = |r: &std::ops::Range<usize>| r.start + block.start..r.end + block.start;
        let steps: Vec<Step> = schedule(alg, rank, n, block.len())
            .into_iter()
            .map(|s| Step {
                send: s.send.map(|(to, r)| (to, shift(&r))),
                recv: s.recv.map(|(from, r, op)| (from, shift(&r), op)),
            })
            .collect();
        Lane { forward_only: forward_only(&steps), steps, carry: None, step: 0, sent: false }
    }

    fn restart(&mut self) {
        self.carry = None;
        self.step = 0;
        self.sent = false;
    }

    fn done(&self) -> bool {
        self.step == self.steps.len()
    }

    /// Take every step of lane `lane` whose message is here (sending first).
    fn advance(
        &mut self,
        lane: usize,
        t: u64,
        buf: &mut P,
        early: &mut BTreeMap<(u64, u32), P>,
        out: &mut VecDeque<Output<P>>,
    ) {
        let nsteps = self.steps.len();
        let round = |step: usize| (lane * nsteps + step) as u32;
        while let Some(step) = self.steps.get(self.step) {
            if let (Some((to, range)), false) = (&step.send, self.sent) {
                let body = match self.carry.take() {
                    Some((got, seg)) if got == *range => seg,
                    _ => P::range(buf, range.start, range.len()),
                };
                let head = Header { round: round(self.step), ..Header::new(Kind::Segment, t) };
                let msg = Msg { head, body: Some(Arc::new(body)) };
                out.push_back(Output::Send { to: vec![*to], msg, track: None });
                self.sent = true;
            }
            if let Some((_, range, op)) = &step.recv {
                let Some(mut seg) = early.remove(&(t, round(self.step))) else { break };
                let (at, len) = (range.start, range.len());
                let sends_it =
                    self.steps.get(self.step + 1).and_then(|s| s.send.as_ref()).is_some_and(|s| s.1 == *range);
                match op {
                    // a sum the next step sends on is formed in the received frame (a + b =
                    // b + a: the same bits), which goes on as it is; a partial sum's range in
                    // the vector waits for the final sum a later step copies in, a final sum
                    // is copied in now
                    Op::Add if self.forward_only[self.step] => seg.add_scaled(0, buf, at, len, 1.0),
                    Op::Add if sends_it => {
                        seg.add_scaled(0, buf, at, len, 1.0);
                        buf.copy_range(at, &seg, 0, len);
                    }
                    Op::Add => buf.add_scaled(at, &seg, 0, len, 1.0),
                    Op::Copy => buf.copy_range(at, &seg, 0, len),
                }
                if sends_it {
                    self.carry = Some((range.clone(), seg));
                }
            }
            self.step += 1;
            self.sent = false;
        }
    }
}

/// One rank of a ring.
pub struct RingNode<P: Vector> {
    rank: usize,
    n: usize,
    worker: usize,
    collective: bool,
    deadline: f64,
    /// The all-reduce's schedule as configured (each lane runs it as resolved for the whole
    /// vector) and this rank's lanes.
    alg: RingAlgorithm,
    len: usize,
    lanes: Vec<Lane<P>>,
    workers: Vec<usize>,
    cur: Option<u64>,
    buf: Option<P>,
    early: BTreeMap<(u64, u32), P>,
    record: Option<Iter>,
    /// When the step timer is due (None: disarmed).
    step_at: Option<f64>,
    done: bool,
    /// This rank's log dropped lines (a ring has no goodbye: each rank reports its own).
    dropped: Vec<(u32, String)>,
    out: VecDeque<Output<P>>,
}

impl<P: Vector> RingNode<P> {
    /// Rank `rank` of the ring of `plan`, for vectors of `len` values. `collective`: all-reduce
    /// with the library instead of our steps (the engine follows the plan; the simulator models
    /// the library's all-reduce as our ring).
    pub fn new(plan: &Plan, rank: usize, len: usize, collective: bool) -> Self {
        let Pattern::Ring { steps, .. } = plan.pattern else { panic!("a ring plan") };
        let mut node = Self::standalone(rank, plan.ranks, len, plan.run.deadline, collective, steps);
        node.worker = plan.nodes[rank].worker.expect("ring ranks are workers");
        node.workers = plan.nodes.iter().filter_map(|n| n.worker).collect();
        node
    }

    /// Rank `rank` of a ring of `n` ranks, outside any plan (benchmarks of the all-reduce).
    pub fn standalone(rank: usize, n: usize, len: usize, deadline: f64, collective: bool, alg: RingAlgorithm) -> Self {
        Self::with_lanes(rank, n, len, deadline, collective, alg, lanes(alg, n, len))
    }

    /// As [`RingNode::standalone`], the vector cut into `lanes` lanes.
    fn with_lanes(
        rank: usize,
        n: usize,
        len: usize,
        deadline: f64,
        collective: bool,
        alg: RingAlgorithm,
        lanes: usize,
    ) -> Self {
        // the schedule is chosen for the whole vector, then run on each lane
        let resolved = alg.resolve(len);
        let lanes: Vec<Lane<P>> =
            crate::steps::blocks(len, lanes.max(1)).into_iter().map(|b| Lane::new(resolved, rank, n, b)).collect();
        RingNode {
            rank,
            n,
            worker: rank + 1,
            collective,
            deadline,
            alg,
            len,
            lanes,
            workers: (1..=n).collect(),
            cur: None,
            buf: None,
            early: BTreeMap::new(),
            record: None,
            step_at: None,
            done: false,
            dropped: vec![],
            out: VecDeque::new(),
        }
    }

    /// Steps per lane (every lane, every rank: the same; a vector has at least one lane).
    fn nsteps(&self) -> usize {
        self.lanes[0].steps.len()
    }

    /// Whether every lane has taken its last step.
    fn exchanged(&self) -> bool {
        self.lanes.iter().all(Lane::done)
    }

    /// The step the lane furthest behind is at.
    fn step(&self) -> usize {
        self.lanes.iter().map(|l| l.step).min().unwrap_or(0)
    }

    /// (Re)arm the step timer (one id: re-arming replaces the pending one).
    fn arm(&mut self, now: f64) {
        let at = now + self.deadline;
        self.step_at = Some(at);
        self.out.push_back(Output::Timer { id: STEP, at });
    }

    /// Take every step whose message is here (sending first) in every lane, deliver when
    /// complete.
    fn advance(&mut self, clock: &dyn Clock) {
        let Some(t) = self.cur else { return };
        let Some(buf) = self.buf.as_mut() else { return };
        for (l, lane) in self.lanes.iter_mut().enumerate() {
            lane.advance(l, t, buf, &mut self.early, &mut self.out);
        }
        let now = clock.now();
        if self.exchanged() {
            self.step_at = None;
            let total = self.buf.take().expect("checked");
            self.deliver(now, t, total);
        } else if self.step_at.is_none() {
            // one deadline for the whole exchange of this iteration (as MPI_Allreduce has)
            self.arm(now);
        }
    }

    fn deliver(&mut self, now: f64, t: u64, total: P) {
        if let Some(mut r) = self.record.take() {
            r.reduced = Some(now);
            self.out.push_back(Output::Log(Event::iter(r)));
        }
        self.cur = None;
        let info = Delivered {
            used: self.workers.clone(),
            residual: 0.0,
            exact: true,
            coverage: 1.0,
            late_total: 0,
            rejected: vec![],
        };
        self.out.push_back(Output::Deliver { t, total, info });
    }

    /// The rank is finished; `clean`: nothing it sent or expects is left in flight (false when a
    /// neighbour went silent: its process may never finish the MPI job).
    fn finish(&mut self, now: f64, result: Result<(), Failure>, clean: bool) {
        self.done = true;
        let kind = Some(if result.is_ok() { Ending::Stop } else { Ending::Abort });
        self.out.push_back(Output::Log(Event::Shutdown(Shutdown { kind, at: now, clean, ..Shutdown::default() })));
        self.out.push_back(Output::Done(Outcome {
            result,
            clean,
            late: 0,
            up_sent: 0,
            latency: Histogram::default(),
            dropped: self.dropped.clone(),
            silent: vec![],
        }));
    }
}

/// Per step of `steps`: whether what it receives (a partial sum) is only sent on — the next
/// step sends exactly that range and a later step copies the range's final sum over it — so
/// it need not be written into the rank's vector.
fn forward_only(steps: &[Step]) -> Vec<bool> {
    (0..steps.len())
        .map(|k| {
            let Some((_, range, Op::Add)) = &steps[k].recv else { return false };
            let sent_next = steps.get(k + 1).and_then(|s| s.send.as_ref()).is_some_and(|s| s.1 == *range);
            let overwritten = steps[k + 1..].iter().any(|s| matches!(&s.recv, Some((_, r, Op::Copy)) if r == range));
            sent_next && overwritten
        })
        .collect()
}

impl<P: Vector> Machine<P> for RingNode<P> {
    fn handle(&mut self, clock: &dyn Clock, input: Input<P>) {
        if self.done {
            return;
        }
        // the clock is read where an input needs it (a read costs as much as a small message's
        // bookkeeping): a step's send and add read it once, in `advance`
        match input {
            Input::Start { t, model } => {
                let now = clock.now();
                self.cur = Some(t);
                self.buf = None;
                self.step_at = None;
                self.lanes.iter_mut().for_each(Lane::restart);
                self.record = Some(Iter { t, worker: Some(self.worker), start: Some(now), ..Iter::default() });
                self.out.push_back(Output::Compute { t, model, parts: None, load: None });
            }
            Input::Timing { t, timing } => {
                if let (true, Some(r)) = (self.cur == Some(t), self.record.as_mut()) {
                    r.compute = timing;
                }
            }
            Input::Computed { t, mut parts, ready } => {
                if self.cur != Some(t) {
                    return;
                }
                if let Some(r) = self.record.as_mut() {
                    r.ready = Some(ready);
                }
                let own = parts.pop().expect("a ring rank computes one part");
                if self.collective {
                    self.out.push_back(Output::Collective { t, buf: own });
                } else {
                    self.buf = Some(own);
                    self.advance(clock);
                }
            }
            Input::Reduced { t, total } => self.deliver(clock.now(), t, total),
            Input::Contribution { .. } => {}
            Input::LogDropped { error } => self.dropped = vec![(self.rank as u32, error)],
            Input::Recv { from, msg } => {
                let head = msg.head;
                // round = lane × steps + step; every lane has the same peers at a step
                let nsteps = self.nsteps();
                let step = (head.round as usize).checked_rem(nsteps);
                let known = (head.round as usize) < self.lanes.len() * nsteps;
                let expected = step.filter(|_| known).and_then(|k| self.lanes[0].steps[k].recv.as_ref()).map(|r| r.0);
                if expected != Some(from) || head.kind != Kind::Segment {
                    let why = format!("unexpected {} from rank {from}", head.kind.name());
                    self.out.push_back(Output::Log(Event::warn(clock.now(), why)));
                    return;
                }
                let body = crate::wire::owned_body(msg.body, 0);
                self.early.insert((head.t, head.round), body);
                self.advance(clock);
            }
            Input::Timer { id } => {
                let now = clock.now();
                if id != STEP || !self.step_at.is_some_and(|a| now >= a) {
                    return;
                }
                let t = self.cur.unwrap_or(0);
                let k = self.step();
                let Some((from, _, op)) = self.lanes[0].steps.get(k).and_then(|s| s.recv.clone()) else { return };
                let phase = if op == Op::Add { "reduce" } else { "gather" };
                let detail = format!(
                    "all-reduce ({}): rank {} (worker {}) was still in {phase} step {k} of iteration {t} after run.deadline = {} s, waiting for rank {from} (worker {})",
                    self.alg.name(),
                    self.rank,
                    self.worker,
                    self.deadline,
                    from + 1
                );
                // a peer that sends this step as soon as it has computed (it receives nothing
                // before) never started the exchange: it is the straggler (still computing,
                // stopped) or dead; only this rank knows it, so only this rank says it, and
                // ends unclean (the peer may never finish the MPI job)
                let theirs = schedule(self.alg, from, self.n, self.len);
                if theirs[..k].iter().all(|s| s.recv.is_none()) {
                    let why = format!(
                        "ring all-reduce: worker {} (rank {from}) sent nothing of iteration {t} within run.deadline = {} s (still computing, or dead); a ring needs every worker in every iteration: raise run.deadline or use a master-worker scheme",
                        from + 1,
                        self.deadline
                    );
                    self.finish(now, Err(Failure::Ring { iteration: t, worker: from + 1, message: why }), false);
                } else {
                    // stalled behind the straggler, further along: log, stay quiet
                    self.out.push_back(Output::Log(Event::error(now, detail)));
                    self.finish(now, Err(Failure::Aborted), true);
                }
            }
            Input::Finish { failure } => {
                self.finish(clock.now(), failure.map_or(Ok(()), |f| Err(Failure::Job(f))), true)
            }
            Input::Sent { .. } => {}
        }
    }

    fn poll(&mut self) -> Option<Output<P>> {
        self.out.pop_front()
    }

    fn eager(&self) -> bool {
        self.buf.is_some() && !self.exchanged()
    }

    fn contacts(&self) -> Contacts {
        if self.collective {
            return Contacts { peers: vec![], collective: Some(self.len) };
        }
        let steps = &self.lanes[0].steps;
        let sends = steps.iter().filter_map(|s| s.send.as_ref().map(|(to, _)| *to));
        let recvs = steps.iter().filter_map(|s| s.recv.as_ref().map(|(from, _, _)| *from));
        Contacts::peers(self.rank, sends.chain(recvs))
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::machine::At;
    use crate::Frame;

    /// `n` standalone ring nodes on frames, `lanes` lanes, one iteration, messages delivered
    /// in the order they were sent (`lifo`: the latest first): each rank's total, and how many
    /// of its sends went on in the frame it had received at the step before (each received
    /// frame is marked in its header room, which a node never writes; a frame copied out of the
    /// vector has a zeroed one).
    fn ring_once(alg: RingAlgorithm, n: usize, len: usize, lanes: usize, lifo: bool) -> (Vec<Vec<f64>>, usize) {
        let clock = At(0.0);
        let mut nodes: Vec<RingNode<Frame>> =
            (0..n).map(|r| RingNode::with_lanes(r, n, len, 10.0, false, alg, lanes)).collect();
        let mut totals = vec![vec![]; n];
        // per rank: the marks of the frames it has received
        let mut received: Vec<Vec<u64>> = vec![vec![]; n];
        let mut marks = 0u64;
        let mut forwarded = 0;
        let mut mail = VecDeque::new();
        let mark = |f: &Frame| u64::from_le_bytes(f.head_bytes()[..8].try_into().expect("room for a header"));
        let mut route = |r: usize, node: &mut RingNode<Frame>, mail: &mut VecDeque<_>, got: &[u64]| {
            while let Some(o) = node.poll() {
                match o {
                    Output::Send { to, msg, .. } => {
                        forwarded += usize::from(got.contains(&mark(msg.body.as_ref().expect("a segment"))));
                        mail.extend(to.into_iter().map(|to| (r, to, msg.clone())));
                    }
                    Output::Deliver { total, .. } => totals[r] = total.as_slice().to_vec(),
                    _ => {}
                }
            }
        };
        for (r, node) in nodes.iter_mut().enumerate() {
            node.handle(&clock, Input::Start { t: 0, model: Arc::new(Frame::zeros(0)) });
            let own: Vec<f64> = (0..len).map(|j| crate::steps::tests::value(r, j)).collect();
            node.handle(&clock, Input::Computed { t: 0, parts: vec![Frame::copy_of(&own)], ready: 0.0 });
            route(r, node, &mut mail, &[]);
        }
        while let Some((from, to, mut msg)) = if lifo { mail.pop_back() } else { mail.pop_front() } {
            marks += 1;
            let body = Arc::get_mut(msg.body.as_mut().expect("a segment")).expect("one destination");
            body.head_mut()[..8].copy_from_slice(&marks.to_le_bytes());
            received[to].push(marks);
            nodes[to].handle(&clock, Input::Recv { from, msg });
            route(to, &mut nodes[to], &mut mail, &received[to]);
        }
        (totals, forwarded)
    }

    /// The ranks' totals of the unfused schedule run on each lane's block on its own.
    fn reference(alg: RingAlgorithm, n: usize, len: usize, lanes: usize) -> Vec<Vec<f64>> {
        let alg = alg.resolve(len);
        let mut totals = vec![vec![]; n];
        for b in crate::steps::blocks(len, lanes) {
            let v = (0..n).map(|r| b.clone().map(|j| crate::steps::tests::value(r, j)).collect()).collect();
            for (r, part) in crate::steps::tests::run_on(alg, v).into_iter().enumerate() {
                totals[r].extend(part);
            }
        }
        totals
    }

    fn same_bits(a: &[f64], b: &[f64]) -> bool {
        a.len() == b.len() && a.iter().zip(b).all(|(x, y)| x.to_bits() == y.to_bits())
    }

    #[test]
    fn the_ring_sends_received_segments_on_as_they_arrived_and_sums_the_same_bits() {
        for n in [2, 3, 5, 8] {
            let len = 10 * n + 3;
            let (totals, forwarded) = ring_once(RingAlgorithm::Ring, n, len, 1, false);
            let reference = crate::steps::tests::run(RingAlgorithm::Ring, n, len);
            for (r, total) in totals.iter().enumerate() {
                assert_eq!(total.len(), len, "n={n} rank {r} delivered");
                assert!(same_bits(total, &reference[r]), "n={n} rank {r}: the bits of the unfused schedule");
            }
            // 2(n − 1) sends per rank; all but the first go on in the frame the step before
            // received (a partial sum, or a final one), without a copy
            assert_eq!(forwarded, n * (2 * n - 3), "n={n}");
        }
        // the other schedules' sums are formed in received frames too, with the same bits
        for alg in [RingAlgorithm::RecursiveDoubling, RingAlgorithm::HalvingDoubling] {
            for n in [2, 3, 4, 6, 8] {
                let len = 10 * n + 3;
                let (totals, _) = ring_once(alg, n, len, 1, false);
                let reference = crate::steps::tests::run(alg, n, len);
                for (r, total) in totals.iter().enumerate() {
                    assert!(
                        same_bits(total, &reference[r]),
                        "{alg:?} n={n} rank {r}: the bits of the unfused schedule"
                    );
                }
            }
        }
    }

    #[test]
    fn lanes_run_the_schedule_on_their_blocks_in_any_order_of_arrival() {
        for alg in RingAlgorithm::ALL {
            for n in [2, 3, 5, 8] {
                for lanes in [2, 3, 8] {
                    let len = 10 * n * lanes + 7;
                    let reference = reference(alg, n, len, lanes);
                    for lifo in [false, true] {
                        let (totals, forwarded) = ring_once(alg, n, len, lanes, lifo);
                        for (r, total) in totals.iter().enumerate() {
                            assert!(
                                same_bits(total, &reference[r]),
                                "{alg:?} n={n} lanes={lanes} lifo={lifo} rank {r}: each lane's schedule, bit for bit"
                            );
                            // every rank ends with the same bits, and the sum is the sum
                            assert!(same_bits(total, &totals[0]));
                            for (j, got) in total.iter().enumerate() {
                                let exact: f64 = (0..n).map(|r| crate::steps::tests::value(r, j)).sum();
                                assert!((got - exact).abs() <= 1e-12 * exact, "{alg:?} n={n} [{j}]");
                            }
                        }
                        if alg.resolve(len) == RingAlgorithm::Ring {
                            // each lane's sends but its first go on in received frames
                            assert_eq!(forwarded, lanes * n * (2 * n - 3), "n={n} lanes={lanes}");
                        }
                    }
                }
            }
        }
    }

    #[test]
    fn a_long_vector_takes_lanes_of_at_most_lane_bytes() {
        let mib = (1 << 20) / 8;
        // a ring segment (len / N values) is cut to LANE_BYTES, at most MAX_LANES lanes
        assert_eq!(lanes(RingAlgorithm::Ring, 2, 2 * mib), 1);
        assert_eq!(lanes(RingAlgorithm::Ring, 2, 2 * mib + 2), 2);
        assert_eq!(lanes(RingAlgorithm::Ring, 8, 8 * mib), 1);
        assert_eq!(lanes(RingAlgorithm::Auto, 2, 16 * mib), MAX_LANES.min(8 * (1 << 20) / LANE_BYTES));
        assert_eq!(lanes(RingAlgorithm::Ring, 2, 1000 * mib), MAX_LANES);
        // the doubling schedules keep one lane
        assert_eq!(lanes(RingAlgorithm::HalvingDoubling, 2, 16 * mib), 1);
        assert_eq!(lanes(RingAlgorithm::RecursiveDoubling, 2, 16 * mib), 1);
        assert_eq!(lanes(RingAlgorithm::Ring, 1, 16 * mib), 1, "one rank sends nothing");
    }
}
