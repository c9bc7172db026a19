//! The collect-tree node: masters, parents and workers of every master–worker and CodedReduce
//! scheme (a star is a tree of depth 1).
//!
//! Every iteration t:
//! 1. the root sends the model `[Model, t]` to its children (preceded by per-child `Assign`
//!    messages when its aggregator re-assigns work);
//! 2. a node that receives a model forwards it to its own children first, then computes its parts;
//! 3. a parent offers its children's results for t to its [`Aggregator`] until the rule is met,
//!    combines them, and its [`Encoder`] forms the message(s) it sends up (the root delivers);
//! 4. the root's driver applies the result and starts t + 1.
//!
//! A result that arrives after its parent has moved on is received, counted as *late* and
//! discarded by its iteration header; it can never be mixed into another iteration. A node that
//! sees a newer model (or the stop) while still working on t abandons t and sends
//! `[Abandoned, t]`, so every model it acted on gets an answer. A parent that cannot meet its
//! rule within its wait budget reports `[Failed, t]` with the children it misses (the root fails
//! the run at `run.deadline`, naming them). At the end, `Stop` (or `Abort`) flows down, every node
//! drains its children until their `Bye` (which carries how many up messages they sent) and says
//! goodbye upward, so nothing is in flight when the drivers finish.
//!
//! With `engine.upload = "granted"` step 3 goes through grants (see `grant.rs`): a child sends a
//! ready notice, the parent offers it to the same rule and answers `Grant` (upload it) or
//! `Refuse`; only granted results cross the link, and the parent combines when the rule is met
//! and every granted result arrived.
//!
//! The node is made of parts that each own their state: the parent's side ([`Collection`]:
//! the rule, what arrived, grants, the children's accounting), the child's side ([`Uplink`]:
//! rounds, notices, what went up), and the timers ([`Timers`]); this file is the iteration's
//! flow between them and the shutdown. A new wait rule touches the plan's aggregators only, a
//! new upload mode the uplink and the collection.

mod collect;
mod grant;
mod timers;
mod uplink;

use std::collections::VecDeque;
use std::sync::Arc;

use crate::roles::{encoder, Combination, Encoder, Src, Term, Vector};
use outrun_codes::EXACT_RESIDUAL;
use outrun_config::Upload;
use outrun_plan::budget::{patience, shutdown_grace, wait_budget};
use outrun_plan::{Plan, StragglerModel};
use outrun_runlog::event::{Ending, Event, Iter, Late, Regrant, Regranted, RoundsStopped, Shutdown, Status};

use crate::hist::Histogram;
use crate::machine::{Clock, Contacts, Delivered, Failure, Input, Machine, Outcome, Output};
use crate::wire::{Header, Kind, Meta, Msg};
use collect::{send, Collection, Decoded};
use timers::{Timer, Timers};
use uplink::Uplink;

#[derive(Debug, PartialEq)]
enum Phase {
    Running,
    /// Stop or abort sent down; waiting for the children's goodbyes.
    Draining {
        abort: bool,
    },
    Finished,
}

/// How long the node waits, from the run's deadline.
struct Limits {
    /// `run.deadline`: the root's wait.
    deadline: f64,
    /// A parent's wait for its children (deeper nodes give up earlier).
    budget: f64,
    /// The shutdown grace for the children's goodbyes.
    grace: f64,
    /// A worker's patience with a silent parent ([`patience`]: a grace more for a child of the
    /// root other than its first, so that a silent root is named by one child).
    silence: f64,
}

/// One node of a collect tree.
pub struct TreeNode<P: Vector> {
    rank: usize,
    worker: Option<usize>,
    /// Points of each of the node's parts (the load of a selection); empty: it computes nothing.
    part_loads: Vec<usize>,
    len: usize,
    enc: Box<dyn Encoder>,
    faults: StragglerModel,
    scheme: String,
    limits: Limits,
    /// The parent's side (a node with children).
    below: Option<Collection<P>>,
    /// The child's side (a node with a parent).
    above: Option<Uplink<P>>,
    /// The root's rank.
    root: usize,
    /// Whether this node asked the root if the run goes on (its parent silent for its
    /// patience) and the answer is outstanding.
    probed: bool,
    /// Whether the root answered a probe: the parent alone is silent (logged once).
    orphaned: bool,
    /// When the parent's last message came.
    heard: f64,
    timers: Timers,
    // the iteration in progress
    cur: Option<u64>,
    answered: bool,
    own: Option<Vec<P>>,
    model: Option<Arc<P>>,
    /// The iteration's log record, while it is open.
    record: Option<Iter>,
    // the run
    late: u64,
    latency: Histogram,
    /// Ranks of the subtree whose logs dropped lines (this one and its children's reports).
    dropped: Vec<(u32, String)>,
    /// Ranks of the subtree that never said goodbye (its children's, and its children's
    /// reports), with the last iteration each answered.
    silent: Vec<(u32, Option<u64>)>,
    failure: Option<Failure>,
    phase: Phase,
    out: VecDeque<Output<P>>,
}

impl<P: Vector> TreeNode<P> {
    /// The node of `rank` in `plan`, for payloads of `len` values.
    pub fn new(plan: &Plan, rank: usize, len: usize) -> Self {
        let node = &plan.nodes[rank];
        let deadline = plan.run.deadline;
        let layer = plan.depth(rank);
        let root = plan.master().expect("a tree has a master");
        let first = node.parent != Some(root) || plan.nodes[root].children.first() == Some(&rank);
        TreeNode {
            rank,
            worker: node.worker,
            part_loads: node.parts.iter().map(|p| p.len()).collect(),
            len,
            enc: encoder(plan, rank, len),
            faults: plan.stragglers.clone(),
            scheme: plan.scheme.clone(),
            limits: Limits {
                deadline,
                budget: wait_budget(deadline, plan.layers(), layer),
                grace: shutdown_grace(deadline),
                silence: patience(deadline, plan.layers(), first),
            },
            below: (!node.children.is_empty()).then(|| Collection::new(plan, rank, len)),
            above: node.parent.map(|p| Uplink::new(p, plan.upload == Upload::Granted)),
            root,
            probed: false,
            orphaned: false,
            heard: 0.0,
            timers: Timers::default(),
            cur: None,
            answered: true,
            own: None,
            model: None,
            record: None,
            late: 0,
            latency: Histogram::default(),
            dropped: vec![],
            silent: vec![],
            failure: None,
            phase: Phase::Running,
            out: VecDeque::new(),
        }
    }

    /// The model this node last computed on (for drivers that need it, e.g. logs).
    pub fn model(&self) -> Option<&Arc<P>> {
        self.model.as_ref()
    }

    fn log(&mut self, ev: Event) {
        self.out.push_back(Output::Log(ev));
    }

    fn arm(&mut self, timer: Timer, at: f64) {
        let o = self.timers.arm(timer, at);
        self.out.push_back(o);
    }

    /// The iteration being collected is over (its rule met, failed or abandoned).
    fn stop_collecting(&mut self) {
        if let Some(k) = self.below.as_mut() {
            k.active = false;
        }
    }

    /// Send the next held round of the current iteration (multi-round encoders send one round
    /// at a time: the next one when the previous has left).
    fn send_next_round(&mut self) {
        let (Some(t), Some(up)) = (self.cur, self.above.as_mut()) else { return };
        if up.next_round(t, &mut self.out) {
            if let Some(r) = self.record.as_mut() {
                r.rounds = Some(up.rounds_sent);
                r.up_bytes = Some(up.iteration_bytes());
            }
        }
    }

    /// Close the iteration's record; a multi-round sender keeps it open (its rounds are
    /// counted in it) until the last round leaves or the next model arrives.
    fn close_record_keep(&mut self, status: Status, at: f64) {
        if !self.above.as_ref().is_some_and(Uplink::holding) {
            return self.close_record(status, at);
        }
        let arrived = self.below.as_ref().map(Collection::arrived);
        if let Some(r) = self.record.as_mut() {
            r.status = Some(status);
            if status == Status::Sent {
                r.send = Some(at);
            }
            r.ready.get_or_insert(at);
            if arrived.is_some() {
                r.collect.arrivals = arrived;
            }
        }
    }

    /// Emit a record kept open by [`Self::close_record_keep`].
    fn flush_record(&mut self) {
        if self.record.as_ref().is_some_and(|r| r.status.is_some()) {
            let r = self.record.take().expect("checked");
            self.log(Event::iter(r));
        }
    }

    /// Close the iteration's record with a status and emit it.
    fn close_record(&mut self, status: Status, at: f64) {
        let Some(mut r) = self.record.take() else { return };
        r.status = Some(status);
        r.send = Some(at);
        r.ready.get_or_insert(at);
        if let Some(k) = self.below.as_ref() {
            r.collect.arrivals = Some(k.arrived());
        }
        self.log(Event::iter(r));
    }

    /// Start iteration `t`: forward the model, begin collecting, start computing.
    fn begin(&mut self, now: f64, t: u64, model: Arc<P>, sent_at: f64) {
        self.cur = Some(t);
        self.answered = false;
        self.own = None;
        if let Some(up) = self.above.as_mut() {
            up.begin();
        }
        if let Some(k) = self.below.as_mut() {
            k.assign(t, &mut self.out);
            // Forward first, so the children start while this node computes.
            let head = Header { sent_at, ..Header::new(Kind::Model, t) };
            self.out.push_back(Output::Send {
                to: k.ranks.clone(),
                msg: Msg { head, body: Some(model.clone()) },
                track: None,
            });
            k.start(t);
            let wait = if self.above.is_none() { self.limits.deadline } else { self.limits.budget };
            let granted = k.granted();
            self.arm(Timer::Wait, now + wait);
            if granted {
                // a granted upload missing at half the wait is given up on (see grant.rs)
                self.arm(Timer::Regrant, now + wait / 2.0);
            }
            if let Some(by) = self.below.as_ref().and_then(Collection::deadline) {
                self.arm(Timer::Deadline, now + by);
            }
        }
        let assignment = self.above.as_mut().and_then(|up| up.assignment(t));
        self.enc.begin(t, assignment.as_deref());
        if let (Some(note), Some(r)) = (self.enc.note(), self.record.as_mut()) {
            r.assigned = Some(note);
        }
        if self.part_loads.is_empty() {
            self.own = Some(vec![]);
        } else {
            let parts = self.enc.select();
            let load = parts.as_ref().map(|p| p.iter().map(|&i| self.part_loads[i]).sum());
            self.out.push_back(Output::Compute { t, model: model.clone(), parts, load });
        }
        self.model = Some(model);
    }

    fn on_model(&mut self, clock: &dyn Clock, t: u64, model: Arc<P>, sent_at: f64) {
        let now = clock.now();
        self.stop_rounds(now);
        self.flush_record();
        if let Some(prev) = self.cur {
            if !self.answered && prev < t {
                self.abandon(prev, now);
            }
        }
        let latency = now - sent_at;
        self.latency.record(latency);
        let worker = self.worker.expect("workers have ids");
        let record = Iter { t, worker: Some(worker), model: Some(now), latency: Some(latency), ..Iter::default() };
        if self.faults.is_dead(worker, t) {
            self.cur = None;
            self.answered = true;
            self.stop_collecting();
            return self.log(Event::iter(Iter { status: Some(Status::Dead), ..record }));
        }
        self.record = Some(record);
        self.begin(now, t, model, sent_at);
        self.try_finish(clock);
    }

    fn abandon(&mut self, t: u64, now: f64) {
        self.answered = true;
        self.stop_collecting();
        if let Some(up) = self.above.as_mut() {
            if up.refused != Some(t) {
                // (a refused node's parent expects nothing more of it)
                up.send(Header::new(Kind::Abandoned, t), None, None, &mut self.out);
            }
        }
        self.close_record(Status::Abandoned, now);
    }

    /// A newer model or the stop arrived: a multi-round sender that has sent some rounds of t
    /// stops there (its remaining rounds are dropped; what it sent answers the model).
    fn stop_rounds(&mut self, now: f64) {
        let Some(up) = self.above.as_mut().filter(|up| up.holding()) else { return };
        up.drop_rounds();
        if up.granted {
            return; // a held result the parent did not grant (the record says so)
        }
        if let Some(t) = self.cur {
            let sent = up.rounds_sent;
            self.log(Event::RoundsStopped(RoundsStopped { t, sent, at: now }));
        }
    }

    /// Send the result (or deliver it, at the root) once the node's parts and its children's
    /// rule are both ready.
    fn try_finish(&mut self, clock: &dyn Clock) {
        // a screening rule's collection ends when its screening passes (`after_arrival`)
        let pending = |k: &Collection<P>| !k.collected() || (k.screens() && k.active);
        if self.answered || self.own.is_none() || self.below.as_ref().is_some_and(pending) {
            return;
        }
        let t = self.cur.expect("an iteration in progress");
        let t0 = clock.now();
        let Decoded { mut comb, mut arrivals, used, rejected } = match self.below.as_mut() {
            Some(k) => {
                let r = self.record.get_or_insert_with(|| Iter { t, ..Iter::default() });
                k.combine(&mut r.collect, &mut r.notes)
            }
            None => {
                Decoded { comb: Combination::exact(self.len, vec![]), arrivals: vec![], used: vec![], rejected: vec![] }
            }
        };
        if comb.residual > EXACT_RESIDUAL {
            let why = format!(
                "iteration {t}: decoding with survivors {used:?} left residual {:.3e} > {EXACT_RESIDUAL:e}: the result would be inexact; the code is ill-conditioned for this survivor set (try more scheme.draws, or a better-conditioned code)",
                comb.residual
            );
            return self.fail_iteration(clock.now(), t, why, vec![]);
        }
        let mut own = self.own.take().expect("checked");
        // a decoder that is not a sum of ranges: gather, map, and use the result as one arrival
        if let Some(v) = comb.mapped(&own, &arrivals) {
            arrivals.push(v);
            comb.terms = vec![Term::whole(Src::Arrival(arrivals.len() - 1), comb.len, 1.0)];
            comb.post = None;
        }
        let rounds = self.enc.rounds();
        let bodies: Vec<P> = (0..rounds)
            .map(|r| {
                let terms = self.enc.round(r).substitute_agg(&comb);
                let len = self.enc.round(r).len;
                if rounds == 1 {
                    // the sources serve this one evaluation: take one instead of copying it
                    Combination::evaluate_taking(len, &terms, &mut own, &mut arrivals)
                } else {
                    Combination::evaluate(len, &terms, &own, &arrivals)
                }
            })
            .collect();
        let now = clock.now();
        self.answered = true;
        if let (Some(_), Some(r)) = (self.below.as_ref(), self.record.as_mut()) {
            r.collect.decode_s = Some(now - t0);
        }
        let Some(up) = self.above.as_mut() else {
            // the root delivers
            if let Some(mut r) = self.record.take() {
                r.collect.exact = Some(comb.exact);
                r.collect.end = Some(now);
                r.collect.arrivals = self.below.as_ref().map(Collection::arrived);
                self.log(Event::iter(r));
            }
            let total = bodies.into_iter().next().expect("the root delivers one vector");
            let info = Delivered {
                used,
                residual: comb.residual,
                exact: comb.exact,
                coverage: comb.coverage,
                late_total: self.late,
                rejected,
            };
            return self.out.push_back(Output::Deliver { t, total, info });
        };
        up.hold(bodies);
        if up.granted && up.refused == Some(t) {
            // the parent has enough already: nothing to announce
            up.drop_rounds();
            self.close_record(Status::Refused, now);
        } else if up.granted {
            // announce; the result waits for the parent's grant (or refusal)
            let rounds = up.held();
            up.send(Header { round: rounds, ..Header::new(Kind::Ready, t) }, None, None, &mut self.out);
            let bytes = up.iteration_bytes();
            if let Some(r) = self.record.as_mut() {
                r.up_bytes = Some(bytes);
            }
            self.close_record_keep(Status::Ready, now);
        } else {
            self.send_next_round();
            self.close_record_keep(Status::Sent, now);
        }
    }

    /// This node cannot produce iteration `t`: report it up, or fail the run at the root.
    fn fail_iteration(&mut self, now: f64, t: u64, why: String, missing: Vec<u32>) {
        self.answered = true;
        if let Some(k) = self.below.as_mut() {
            k.abandon();
        }
        match self.above.as_mut() {
            None => {
                if let Some(mut r) = self.record.take() {
                    r.collect.end = Some(now);
                    self.log(Event::iter(r));
                }
                self.start_drain(now, Some(Failure::Iteration { iteration: t, missing, message: why }));
            }
            Some(up) => {
                up.send(
                    Header { meta: Meta::missing(missing), ..Header::new(Kind::Failed, t) },
                    None,
                    None,
                    &mut self.out,
                );
                self.close_record(Status::Failed, now);
            }
        }
    }

    /// The iteration `t` cannot be collected in time (or ever): fail it, naming who is missing.
    fn fail_collection(&mut self, now: f64, t: u64) {
        let k = self.below.as_ref().expect("a parent collects");
        let why = k.deadline_error(t, &self.scheme, self.limits.deadline);
        let missing = k.missing();
        if self.above.is_some() && k.verdict().is_some() {
            // only the master prints why a run fails: a parent below says it in its log
            self.log(Event::warn(now, why.clone()));
        }
        self.fail_iteration(now, t, why, missing);
    }

    fn on_child(&mut self, clock: &dyn Clock, idx: usize, msg: Msg<P>) {
        let now = clock.now();
        let bytes = msg.frame_bytes() as u64;
        let k = self.below.as_mut().expect("a parent hears its children");
        let from = k.ranks[idx];
        k.frame(bytes);
        let head = msg.head;
        if head.kind == Kind::Bye {
            let Meta::Bye { count, latency, dropped, silent } = head.meta else {
                return self.log(Event::warn(now, format!("goodbye from rank {from} without a count")));
            };
            k.bye(idx, count);
            self.latency.merge(&Histogram::from_sparse(&latency));
            self.dropped.extend(dropped);
            self.silent.extend(silent);
            return self.check_drained(now);
        }
        let t = head.t;
        let current = k.active && self.cur == Some(t);
        k.count(idx, t, head.kind, bytes, current);
        if k.lost(idx, t, head.kind, bytes, current) {
            return self.check_drained(now);
        }
        if head.kind == Kind::Ready {
            if self.cur == Some(t) && self.phase == Phase::Running {
                return k.notice(idx, t, head.round, current, &mut self.out);
            }
            // a notice that crossed its refusal and arrived after the iteration ended: no
            // result came with it, nothing to answer
            k.stale_notice();
            return self.check_drained(now);
        }
        let taken = current
            && match head.kind {
                Kind::Result => k.result(idx, t, head.round, msg.body, now, &mut self.out),
                Kind::Failed => {
                    k.failed(idx, if let Meta::Missing(m) = head.meta { m } else { vec![] });
                    true
                }
                _ => false,
            };
        if !taken {
            // An earlier iteration, beyond what the rule needed, or an abandonment: drain and
            // discard.
            k.discard(head.kind, bytes);
            self.late += 1;
            let late = Late { t: self.cur.unwrap_or(t), child: from, msg_t: t, kind: head.kind.name().into(), at: now };
            self.log(Event::Late(late));
            // the goodbye may have overtaken this message's accounting: re-check
            return self.check_drained(now);
        }
        self.after_arrival(clock, now, t);
    }

    /// Something arrived for the iteration being collected: finish it, or fail it when the
    /// rule can no longer be met.
    fn after_arrival(&mut self, clock: &dyn Clock, now: f64, t: u64) {
        let k = self.below.as_ref().expect("a parent");
        if k.collected() {
            if k.screens() && self.own.is_none() {
                return; // screened once the node's own parts are computed too (`Input::Computed`)
            }
            if self.screen(clock, t) {
                self.stop_collecting();
                return self.try_finish(clock);
            }
        }
        if self.below.as_ref().expect("a parent").hopeless() {
            self.fail_collection(now, t);
        }
    }

    /// A rule that looks at the values (robust decoding, federated rules) screens the
    /// collected results and the node's own parts: whether to combine now. The time it takes
    /// goes into the iteration's record (`screen_s`).
    fn screen(&mut self, clock: &dyn Clock, t: u64) -> bool {
        let k = self.below.as_mut().expect("a parent");
        if !k.screens() {
            return true;
        }
        let t0 = clock.now();
        let ok = k.screen(self.own.as_deref().unwrap_or(&[]));
        let r = self.record.get_or_insert_with(|| Iter { t, ..Iter::default() });
        *r.collect.screen_s.get_or_insert(0.0) += clock.now() - t0;
        ok
    }

    /// The re-grant check (half the wait budget): give up on granted uploads that did not
    /// come and grant refused children instead, where the rule allows it.
    fn regrant(&mut self, clock: &dyn Clock) {
        let now = clock.now();
        let (Some(t), Some(k)) = (self.cur, self.below.as_mut()) else { return };
        if !k.active || self.answered {
            return;
        }
        let Some((gave_up, granted)) = k.regrant(t) else { return };
        self.log(Event::Regrant(Regrant { t, at: now, gave_up, granted: granted.clone() }));
        self.below.as_mut().expect("checked").grant(t, &granted, &mut self.out);
        self.after_arrival(clock, now, t);
    }

    /// The parent granted round `round` of this node's result for `t`: upload it.
    fn on_grant(&mut self, now: f64, t: u64, round: u32) {
        let up = self.above.as_mut().expect("a child");
        if self.cur != Some(t) || !up.granted_round(t, round, &mut self.out) {
            let why = format!("grant of round {round} of iteration {t}, which this node does not hold");
            return self.log(Event::warn(now, why));
        }
        let (sent, bytes, holding) = (up.rounds_sent, up.iteration_bytes(), up.holding());
        match self.record.as_mut() {
            Some(r) => {
                r.status = Some(Status::Sent);
                r.send = Some(now);
                r.rounds = Some(sent);
                r.up_bytes = Some(bytes);
                if !holding {
                    self.flush_record();
                }
            }
            // granted after a refusal (a granted sibling failed): the record is out already
            None => self.log(Event::Regranted(Regranted { t, round, at: now })),
        }
    }

    /// The parent refused this node's result for `t` (it has what it needs).
    fn on_refuse(&mut self, now: f64, t: u64) {
        if self.cur != Some(t) {
            return;
        }
        let Some(r) = self.record.as_mut() else { return };
        r.refused = Some(now);
        if self.answered {
            // announced and held: the result stays until the next model
            r.status = Some(Status::Refused);
            self.flush_record();
        } else if let Some(up) = self.above.as_mut() {
            // refused before its notice: it will not announce
            up.refused = Some(t);
        }
    }

    fn on_parent(&mut self, clock: &dyn Clock, msg: Msg<P>) {
        let now = clock.now();
        let running = self.phase == Phase::Running;
        if running {
            self.arm(Timer::Silence, now + self.limits.silence);
            self.probed = false;
        }
        self.heard = now;
        let head = msg.head;
        match head.kind {
            Kind::Model if running => match msg.body {
                Some(body) => self.on_model(clock, head.t, body, head.sent_at),
                None => self.log(Event::warn(now, "model without a body")),
            },
            Kind::Assign => {
                if let (Meta::Assignment(a), Some(up)) = (head.meta, self.above.as_mut()) {
                    up.assigned(head.t, a);
                }
            }
            Kind::Grant if running => self.on_grant(now, head.t, head.round),
            Kind::Refuse if running => self.on_refuse(now, head.t),
            Kind::Stop | Kind::Abort if running => {
                self.stop_rounds(now);
                self.flush_record();
                if let Some(t) = self.cur {
                    if !self.answered {
                        self.abandon(t, now);
                    }
                }
                self.start_drain(now, None);
                if head.kind == Kind::Abort {
                    self.phase = Phase::Draining { abort: true };
                }
                self.check_drained(now);
            }
            other => self.log(Event::warn(now, format!("unexpected {} from the parent", other.name()))),
        }
    }

    /// Send stop (or abort, with the reason) down and wait for the goodbyes.
    fn start_drain(&mut self, now: f64, failure: Option<Failure>) {
        if matches!(self.phase, Phase::Draining { .. } | Phase::Finished) {
            return;
        }
        self.stop_collecting();
        let abort = failure.is_some();
        if let Some(f) = failure {
            self.log(Event::error(now, f.to_string()));
            self.failure = Some(f);
        }
        self.phase = Phase::Draining { abort };
        self.timers.disarm(Timer::Silence);
        if let Some(k) = self.below.as_ref() {
            self.out.push_back(send(k.ranks.clone(), Header::new(if abort { Kind::Abort } else { Kind::Stop }, 0)));
        }
        self.arm(Timer::Grace, now + self.limits.grace);
        self.check_drained(now);
    }

    fn check_drained(&mut self, now: f64) {
        let Phase::Draining { .. } = self.phase else { return };
        if self.below.as_ref().is_none_or(Collection::drained) {
            self.finish(now, true);
        }
    }

    /// Up messages sent over the run.
    fn up_sent(&self) -> u64 {
        self.above.as_ref().map_or(0, |up| up.sent)
    }

    fn finish(&mut self, now: f64, clean: bool) {
        let Phase::Draining { abort } = self.phase else { return };
        if let Some(up) = self.above.as_ref() {
            let meta = Meta::bye(up.sent, self.latency.sparse(), &self.dropped, &self.silent);
            self.out.push_back(send(vec![up.parent()], Header { meta, ..Header::new(Kind::Bye, 0) }));
        }
        self.phase = Phase::Finished;
        let mut s = Shutdown {
            kind: Some(if abort { Ending::Abort } else { Ending::Stop }),
            at: now,
            late_discarded: Some(self.late),
            up_sent: Some(self.up_sent()),
            clean,
            ..Shutdown::default()
        };
        if let Some(k) = self.below.as_ref() {
            k.shutdown(&mut s);
        }
        self.log(Event::Shutdown(s));
        let result = match (self.failure.take(), abort) {
            (Some(f), _) => Err(f),
            (None, true) => Err(Failure::Aborted),
            (None, false) => Ok(()),
        };
        self.done(result, clean);
    }

    fn done(&mut self, result: Result<(), Failure>, clean: bool) {
        let outcome = Outcome {
            result,
            clean,
            late: self.late,
            up_sent: self.up_sent(),
            latency: self.latency.clone(),
            dropped: self.dropped.clone(),
            silent: self.silent.clone(),
        };
        self.out.push_back(Output::Done(outcome));
    }

    /// The parent has sent nothing for the node's patience. Below a child of the root, the
    /// parent may be alone in its silence (stopped, stuck) while the run goes on without its
    /// subtree, which the scheme may tolerate: the node asks the root, and waits on while the
    /// root answers (the run's end ends it). A child of the root, or a node whose probe went
    /// unanswered for another patience, gives up: the tree above it is gone or stuck.
    fn parent_silent(&mut self, now: f64) {
        let parent = self.above.as_ref().map_or(self.root, Uplink::parent);
        let patience = self.limits.silence;
        let silent = (now - self.heard).max(patience);
        let why = match self.probed {
            false if parent != self.root => {
                let t = self.cur.unwrap_or(0);
                self.out.push_back(send(vec![self.root], Header::new(Kind::Probe, t)));
                self.probed = true;
                return self.arm(Timer::Silence, now + patience);
            }
            false => format!(
                "rank {}: no message from its parent rank {parent} for {silent:.0} s (the parent's process is gone or stuck); giving up",
                self.rank
            ),
            true => format!(
                "rank {}: no message from its parent rank {parent} for {silent:.0} s, nor an answer from the root (rank {}) within {patience:.0} s of asking it (the processes above are gone or stuck); giving up",
                self.rank, self.root
            ),
        };
        self.log(Event::error(now, why.clone()));
        self.phase = Phase::Finished;
        let failure = Failure::Silent { rank: self.rank, secs: silent, message: why };
        self.done(Err(failure), false);
    }

    /// A message from neither the parent nor a child: a probe (at the root) or the root's
    /// answer to one.
    fn on_other(&mut self, now: f64, from: usize, head: &Header) {
        match head.kind {
            Kind::Probe if self.above.is_none() => {
                // the run goes on (or drains: its end is near); tell the iteration
                let t = self.cur.unwrap_or(0);
                self.out.push_back(send(vec![from], Header::new(Kind::Alive, t)));
            }
            Kind::Alive if from == self.root && self.phase == Phase::Running && self.probed => {
                self.probed = false;
                if !self.orphaned {
                    self.orphaned = true;
                    let parent = self.above.as_ref().map_or(self.root, Uplink::parent);
                    let why = format!(
                        "rank {}: no message from its parent rank {parent} for {:.0} s, but the root (rank {}) answers, at iteration {}: rank {parent} is alive but silent (stopped, or stuck), and this node waits for the run's end without it",
                        self.rank, now - self.heard, self.root, head.t
                    );
                    self.log(Event::warn(now, why));
                }
            }
            Kind::Alive => {}
            other => self.log(Event::warn(now, format!("unexpected {} from rank {from}", other.name()))),
        }
    }

    fn on_timer(&mut self, clock: &dyn Clock, id: u64) {
        let now = clock.now();
        match self.timers.fired(id, now) {
            Some(Timer::Wait) => {
                let Some(t) = self.cur else { return };
                if !self.answered && self.phase == Phase::Running {
                    self.fail_collection(now, t);
                }
            }
            Some(Timer::Regrant) if self.phase == Phase::Running => self.regrant(clock),
            Some(Timer::Deadline) if self.phase == Phase::Running => {
                // a deadline wait rule: what has arrived meets it (the first arrival, if none has)
                let (Some(t), Some(k)) = (self.cur, self.below.as_mut()) else { return };
                if k.active && !self.answered {
                    k.expire();
                    self.after_arrival(clock, now, t);
                }
            }
            Some(Timer::Grace) if matches!(self.phase, Phase::Draining { .. }) => {
                // alive but silent children (stopped, stuck): the run's results stand, its end is
                // unclean (their processes cannot finish the MPI job)
                let waiting = self.below.as_ref().map_or(vec![], Collection::waiting);
                let ranks: Vec<String> = waiting.iter().map(|(c, _)| c.to_string()).collect();
                let why = format!(
                    "rank {}: children {} did not say goodbye within {} s",
                    self.rank,
                    ranks.join(", "),
                    self.limits.grace
                );
                self.log(Event::warn(now, why));
                self.silent.extend(waiting);
                self.finish(now, false);
            }
            Some(Timer::Silence) if self.phase == Phase::Running => self.parent_silent(now),
            _ => {}
        }
    }
}

impl<P: Vector> Machine<P> for TreeNode<P> {
    fn handle(&mut self, clock: &dyn Clock, input: Input<P>) {
        if self.phase == Phase::Finished {
            return;
        }
        match input {
            Input::Recv { from, msg } => {
                if self.above.as_ref().is_some_and(|up| up.parent() == from) {
                    self.on_parent(clock, msg);
                } else if let Some(idx) = self.below.as_ref().and_then(|k| k.index(from)) {
                    self.on_child(clock, idx, msg);
                } else {
                    self.on_other(clock.now(), from, &msg.head);
                }
            }
            Input::Timing { t, timing } => {
                if let (true, Some(r)) = (self.cur == Some(t) && !self.answered, self.record.as_mut()) {
                    r.compute = timing;
                }
            }
            Input::Computed { t, parts, ready } => {
                if self.cur == Some(t) && !self.answered {
                    if let Some(r) = self.record.as_mut() {
                        r.ready = Some(ready);
                    }
                    self.own = Some(parts);
                    match self.below.as_ref() {
                        Some(k) if k.screens() && k.active && k.collected() => {
                            self.after_arrival(clock, clock.now(), t)
                        }
                        _ => self.try_finish(clock),
                    }
                }
            }
            Input::Timer { id } => self.on_timer(clock, id),
            Input::Sent { track } => {
                // the round tracked has left: send the next one of the same iteration
                if self.cur.is_some_and(|t| track >> 16 == t) && self.phase == Phase::Running {
                    self.send_next_round();
                    if !self.above.as_ref().is_some_and(Uplink::holding) {
                        self.flush_record();
                    }
                }
            }
            Input::Start { t, model } => {
                assert!(self.above.is_none(), "only the root starts iterations");
                if self.phase != Phase::Running {
                    return;
                }
                let now = clock.now();
                self.record = Some(Iter { t, start: Some(now), sent: Some(now), ..Iter::default() });
                self.begin(now, t, model, now);
                self.try_finish(clock);
            }
            Input::Finish { failure } => self.start_drain(clock.now(), failure.map(Failure::Job)),
            Input::Reduced { .. } | Input::Contribution { .. } => {}
            Input::LogDropped { error } => {
                if !self.dropped.iter().any(|(r, _)| *r == self.rank as u32) {
                    self.dropped.push((self.rank as u32, error));
                }
            }
        }
    }

    fn poll(&mut self) -> Option<Output<P>> {
        self.out.pop_front()
    }

    /// The parent and the children.
    fn contacts(&self) -> Contacts {
        let parent = self.above.as_ref().map(Uplink::parent);
        Contacts::peers(self.rank, parent.into_iter().chain(self.below.iter().flat_map(|k| k.ranks.iter().copied())))
    }
}
