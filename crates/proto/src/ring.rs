//! The ring node: every rank computes its result, the ranks all-reduce, every rank delivers the
//! same total (and its driver applies the same update).
//!
//! Our ring is the bandwidth-optimal one: the vector is cut into N segments; in reduce-scatter
//! step k (k = 0..N−2) rank r sends segment (r − k) mod N to its right neighbour and adds the
//! segment (r − k − 1) mod N received from its left one; after N − 1 steps rank r owns the full
//! sum of segment (r + 1) mod N; the N − 1 all-gather steps pass the finished segments around.
//! Each rank sends 2(N − 1)/N of the vector. A neighbour may be one iteration ahead: its early
//! segments are kept until this rank gets there. With `collective`, the driver's library
//! all-reduce replaces the steps.

use std::collections::{BTreeMap, VecDeque};
use std::sync::Arc;

use outrun_plan::alloc::split_sizes;
use outrun_plan::roles::Vector;
use outrun_plan::{Pattern, Plan};
use outrun_runlog::event::{Ending, Event, Iter, Shutdown};

use crate::hist::Histogram;
use crate::machine::{Clock, Delivered, Failure, Input, Machine, Outcome, Output};
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
    offs: Vec<usize>,
    workers: Vec<usize>,
    cur: Option<u64>,
    buf: Option<P>,
    sent: usize,
    received: usize,
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
        assert!(matches!(plan.pattern, Pattern::Ring { .. }), "a ring plan");
        let mut node = Self::standalone(rank, plan.ranks, len, plan.run.deadline, collective);
        node.worker = plan.nodes[rank].worker.expect("ring ranks are workers");
        node.workers = plan.nodes.iter().filter_map(|n| n.worker).collect();
        node
    }

    /// Rank `rank` of a ring of `n` ranks, outside any plan (benchmarks of the all-reduce).
    pub fn standalone(rank: usize, n: usize, len: usize, deadline: f64, collective: bool) -> Self {
        let sizes = split_sizes(len, n);
        let mut offs = vec![0; n + 1];
        for i in 0..n {
            offs[i + 1] = offs[i] + sizes[i];
        }
        RingNode {
            rank,
            n,
            worker: rank + 1,
            collective,
            deadline,
            offs,
            workers: (1..=n).collect(),
            cur: None,
            buf: None,
            sent: 0,
            received: 0,
            early: BTreeMap::new(),
            record: None,
            step_at: None,
            done: false,
            dropped: vec![],
            out: VecDeque::new(),
        }
    }

    fn steps(&self) -> usize {
        2 * (self.n - 1)
    }

    fn seg(&self, i: usize) -> (usize, usize) {
        (self.offs[i], self.offs[i + 1] - self.offs[i])
    }

    /// Segment sent at step k and segment received at step k.
    fn segments(&self, k: usize) -> (usize, usize) {
        let (n, r) = (self.n, self.rank);
        if k < n - 1 {
            ((r + n - k) % n, (r + 2 * n - k - 1) % n)
        } else {
            let k = k - (n - 1);
            ((r + 1 + n - k) % n, (r + n - k) % n)
        }
    }

    /// (Re)arm the step timer (one id: re-arming replaces the pending one).
    fn arm(&mut self, now: f64) {
        let at = now + self.deadline;
        self.step_at = Some(at);
        self.out.push_back(Output::Timer { id: STEP, at });
    }

    /// Send every step that can be sent, apply early segments, deliver when complete.
    fn advance(&mut self, clock: &dyn Clock) {
        let Some(t) = self.cur else { return };
        if self.buf.is_none() {
            return;
        }
        loop {
            // apply a segment that arrived early, if it is the next one
            if let Some(seg) = self.early.remove(&(t, self.received as u32)) {
                self.apply(seg);
                continue;
            }
            if self.sent < self.steps() && self.received >= self.sent {
                let k = self.sent;
                let (s, _) = self.segments(k);
                let (off, len) = self.seg(s);
                let body = P::range(self.buf.as_ref().expect("checked"), off, len);
                let right = (self.rank + 1) % self.n;
                let head = Header { round: k as u32, ..Header::new(Kind::Segment, t) };
                self.out.push_back(Output::Send {
                    to: vec![right],
                    msg: Msg { head, body: Some(Arc::new(body)) },
                    track: None,
                });
                self.sent += 1;
                continue;
            }
            break;
        }
        let now = clock.now();
        if self.received == self.steps() && self.sent == self.steps() {
            self.step_at = None;
            let total = self.buf.take().expect("checked");
            self.deliver(now, t, total);
        } else if self.step_at.is_none() {
            // one deadline for the whole exchange of this iteration (as MPI_Allreduce has)
            self.arm(now);
        }
    }

    fn apply(&mut self, seg: P) {
        let k = self.received;
        let (_, rv) = self.segments(k);
        let (off, len) = self.seg(rv);
        let buf = self.buf.as_mut().expect("computing");
        if k < self.n - 1 {
            buf.add_scaled(off, &seg, 0, len, 1.0);
        } else {
            // all-gather: the received segment is final; replace ours
            buf.copy_range(off, &seg, 0, len);
        }
        self.received += 1;
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

impl<P: Vector> Machine<P> for RingNode<P> {
    fn handle(&mut self, clock: &dyn Clock, input: Input<P>) {
        if self.done {
            return;
        }
        let now = clock.now();
        match input {
            Input::Start { t, model } => {
                self.cur = Some(t);
                self.buf = None;
                self.step_at = None;
                self.sent = 0;
                self.received = 0;
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
            Input::Reduced { t, total } => self.deliver(now, t, total),
            Input::LogDropped { error } => self.dropped = vec![(self.rank as u32, error)],
            Input::Recv { from, msg } => {
                let left = (self.rank + self.n - 1) % self.n;
                let head = msg.head;
                if from != left || head.kind != Kind::Segment {
                    let why = format!("unexpected {} from rank {from}", head.kind.name());
                    self.out.push_back(Output::Log(Event::warn(now, why)));
                    return;
                }
                let body = crate::wire::owned_body(msg.body, 0);
                self.early.insert((head.t, head.round), body);
                self.advance(clock);
            }
            Input::Timer { id } => {
                if id != STEP || !self.step_at.is_some_and(|a| now >= a) {
                    return;
                }
                let t = self.cur.unwrap_or(0);
                let left = (self.rank + self.n - 1) % self.n;
                let phase = if self.received < self.n - 1 { "reduce-scatter" } else { "all-gather" };
                let detail = format!(
                    "ring all-reduce: rank {} (worker {}) was still in {phase} step {} of iteration {t} after run.deadline = {} s, waiting for its left neighbour rank {left} (worker {})",
                    self.rank,
                    self.worker,
                    self.received,
                    self.deadline,
                    left + 1
                );
                if self.received == 0 {
                    // the left neighbour never started the exchange: it is the straggler (still
                    // computing, stopped) or dead; only this rank knows it, so only this rank
                    // says it, and ends unclean (the neighbour may never finish the MPI job)
                    let why = format!(
                        "ring all-reduce: worker {} (rank {left}) sent nothing of iteration {t} within run.deadline = {} s (still computing, or dead); a ring needs every worker in every iteration: raise run.deadline or use a master-worker scheme",
                        left + 1,
                        self.deadline
                    );
                    self.finish(now, Err(Failure::Run(why)), false);
                } else {
                    // stalled behind the straggler, further along the ring: log, stay quiet
                    self.out.push_back(Output::Log(Event::error(now, detail)));
                    self.finish(now, Err(Failure::Aborted), true);
                }
            }
            Input::Finish { failure } => self.finish(now, failure.map_or(Ok(()), |f| Err(Failure::Run(f))), true),
            Input::Sent { .. } => {}
        }
    }

    fn poll(&mut self) -> Option<Output<P>> {
        self.out.pop_front()
    }

    fn eager(&self) -> bool {
        self.buf.is_some() && self.received < self.steps()
    }
}
