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
//! first copies out of the vector. With `collective`, the driver's library
//! all-reduce replaces the steps.

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

/// One rank of a ring.
pub struct RingNode<P: Vector> {
    rank: usize,
    n: usize,
    worker: usize,
    collective: bool,
    deadline: f64,
    /// The all-reduce's schedule and this rank's steps in it.
    alg: RingAlgorithm,
    len: usize,
    steps: Vec<Step>,
    /// Per step: the received range need not be written into the vector, because the next
    /// step sends exactly it and a later step copies its final sum over it (the ring's
    /// reduce-scatter but its last step).
    forward_only: Vec<bool>,
    /// The range received at the previous step as it arrived (a frame with room for a
    /// header): when this step sends the same range, it goes on as it is, without a copy.
    carry: Option<(std::ops::Range<usize>, P)>,
    workers: Vec<usize>,
    cur: Option<u64>,
    buf: Option<P>,
    /// The current step, and whether its send has gone.
    step: usize,
    sent: bool,
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
        let steps = schedule(alg, rank, n, len);
        RingNode {
            rank,
            n,
            worker: rank + 1,
            collective,
            deadline,
            alg,
            len,
            forward_only: forward_only(&steps),
            steps,
            carry: None,
            workers: (1..=n).collect(),
            cur: None,
            buf: None,
            step: 0,
            sent: false,
            early: BTreeMap::new(),
            record: None,
            step_at: None,
            done: false,
            dropped: vec![],
            out: VecDeque::new(),
        }
    }

    /// (Re)arm the step timer (one id: re-arming replaces the pending one).
    fn arm(&mut self, now: f64) {
        let at = now + self.deadline;
        self.step_at = Some(at);
        self.out.push_back(Output::Timer { id: STEP, at });
    }

    /// Take every step whose message is here (sending first), deliver when complete.
    fn advance(&mut self, clock: &dyn Clock) {
        let Some(t) = self.cur else { return };
        if self.buf.is_none() {
            return;
        }
        while let Some(step) = self.steps.get(self.step) {
            if let (Some((to, range)), false) = (&step.send, self.sent) {
                let body = match self.carry.take() {
                    Some((got, seg)) if got == *range => seg,
                    _ => P::range(self.buf.as_ref().expect("checked"), range.start, range.len()),
                };
                let head = Header { round: self.step as u32, ..Header::new(Kind::Segment, t) };
                let msg = Msg { head, body: Some(Arc::new(body)) };
                self.out.push_back(Output::Send { to: vec![*to], msg, track: None });
                self.sent = true;
            }
            if let Some((_, range, op)) = &step.recv {
                let Some(mut seg) = self.early.remove(&(t, self.step as u32)) else { break };
                let buf = self.buf.as_mut().expect("computing");
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
        let now = clock.now();
        if self.step == self.steps.len() {
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
                self.carry = None;
                self.step_at = None;
                self.step = 0;
                self.sent = false;
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
                let expected = self.steps.get(head.round as usize).and_then(|s| s.recv.as_ref()).map(|r| r.0);
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
                let k = self.step;
                let Some((from, _, op)) = self.steps.get(k).and_then(|s| s.recv.clone()) else { return };
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
        self.buf.is_some() && self.step < self.steps.len()
    }

    fn contacts(&self) -> Contacts {
        if self.collective {
            return Contacts { peers: vec![], collective: Some(self.len) };
        }
        let sends = self.steps.iter().filter_map(|s| s.send.as_ref().map(|(to, _)| *to));
        let recvs = self.steps.iter().filter_map(|s| s.recv.as_ref().map(|(from, _, _)| *from));
        Contacts::peers(self.rank, sends.chain(recvs))
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::machine::At;
    use crate::Frame;

    /// `n` standalone ring nodes on frames, one iteration, messages delivered in the order they
    /// were sent: each rank's total, and how many of its sends went on in the frame it had
    /// received at the step before (each received frame is marked in its header room, which
    /// a node never writes; a frame copied out of the vector has a zeroed one).
    fn ring_once(alg: RingAlgorithm, n: usize, len: usize) -> (Vec<Vec<f64>>, usize) {
        let clock = At(0.0);
        let mut nodes: Vec<RingNode<Frame>> =
            (0..n).map(|r| RingNode::standalone(r, n, len, 10.0, false, alg)).collect();
        let mut totals = vec![vec![]; n];
        // per rank: the mark of the frame it received last
        let mut received: Vec<Option<u64>> = vec![None; n];
        let mut marks = 0u64;
        let mut forwarded = 0;
        let mut mail = VecDeque::new();
        let mark = |f: &Frame| u64::from_le_bytes(f.head_bytes()[..8].try_into().expect("room for a header"));
        let mut route = |r: usize, node: &mut RingNode<Frame>, mail: &mut VecDeque<_>, got: Option<u64>| {
            while let Some(o) = node.poll() {
                match o {
                    Output::Send { to, msg, .. } => {
                        forwarded += usize::from(got == Some(mark(msg.body.as_ref().expect("a segment"))));
                        mail.extend(to.into_iter().map(|to| (r, to, msg.clone())));
                    }
                    Output::Deliver { total, .. } => totals[r] = total.as_slice().to_vec(),
                    _ => {}
                }
            }
        };
        for (r, node) in nodes.iter_mut().enumerate() {
            node.handle(&clock, Input::Start { t: 0, model: Arc::new(Frame::zeros(0)) });
            let own: Vec<f64> = (0..len).map(|j| 1.0 / (1 + r * 7 + j) as f64 + (r as f64) * 1e-3).collect();
            node.handle(&clock, Input::Computed { t: 0, parts: vec![Frame::copy_of(&own)], ready: 0.0 });
            route(r, node, &mut mail, None);
        }
        while let Some((from, to, mut msg)) = mail.pop_front() {
            marks += 1;
            let body = Arc::get_mut(msg.body.as_mut().expect("a segment")).expect("one destination");
            body.head_mut()[..8].copy_from_slice(&marks.to_le_bytes());
            received[to] = Some(marks);
            nodes[to].handle(&clock, Input::Recv { from, msg });
            route(to, &mut nodes[to], &mut mail, received[to]);
        }
        (totals, forwarded)
    }

    #[test]
    fn the_ring_sends_received_segments_on_as_they_arrived_and_sums_the_same_bits() {
        for n in [2, 3, 5, 8] {
            let len = 10 * n + 3;
            let (totals, forwarded) = ring_once(RingAlgorithm::Ring, n, len);
            let reference = crate::steps::tests::run(RingAlgorithm::Ring, n, len);
            for (r, total) in totals.iter().enumerate() {
                assert_eq!(total.len(), len, "n={n} rank {r} delivered");
                let same = total.iter().zip(&reference[r]).all(|(a, b)| a.to_bits() == b.to_bits());
                assert!(same, "n={n} rank {r}: the bits of the unfused schedule");
            }
            // 2(n − 1) sends per rank; all but the first go on in the frame the step before
            // received (a partial sum, or a final one), without a copy
            assert_eq!(forwarded, n * (2 * n - 3), "n={n}");
        }
        // the other schedules' sums are formed in received frames too, with the same bits
        for alg in [RingAlgorithm::RecursiveDoubling, RingAlgorithm::HalvingDoubling] {
            for n in [2, 3, 4, 6, 8] {
                let len = 10 * n + 3;
                let (totals, _) = ring_once(alg, n, len);
                let reference = crate::steps::tests::run(alg, n, len);
                for (r, total) in totals.iter().enumerate() {
                    let same =
                        total.len() == len && total.iter().zip(&reference[r]).all(|(a, b)| a.to_bits() == b.to_bits());
                    assert!(same, "{alg:?} n={n} rank {r}: the bits of the unfused schedule");
                }
            }
        }
    }
}
