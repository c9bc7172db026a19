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

use std::collections::VecDeque;
use std::sync::Arc;

use outrun_codes::EXACT_RESIDUAL;
use outrun_plan::budget::{parent_silence, shutdown_grace, wait_budget};
use outrun_plan::roles::{aggregator, encoder, Aggregator, Combination, Encoder, Src, Term, Vector};
use outrun_plan::{Plan, StragglerModel, Upload};
use serde_json::{json, Value};

use crate::grant::Grants;
use crate::hist::Histogram;
use crate::machine::{Clock, Delivered, Failure, Input, Machine, Outcome, Output};
use crate::wire::{Header, Kind, Meta, Msg};

/// Timer ids: one per purpose; re-arming replaces.
const WAIT: u64 = 1;
const GRACE: u64 = 2;
const SILENCE: u64 = 3;
const REGRANT: u64 = 4;

#[derive(Debug, PartialEq)]
enum Phase {
    Running,
    /// Stop or abort sent down; waiting for the children's goodbyes.
    Draining {
        abort: bool,
    },
    Finished,
}

/// One node of a collect tree.
pub struct TreeNode<P: Vector> {
    rank: usize,
    worker: Option<usize>,
    parent: Option<usize>,
    children: Vec<usize>,
    computes: bool,
    /// Points of each of the node's parts (the load of a selection).
    part_loads: Vec<usize>,
    len: usize,
    agg: Option<Box<dyn Aggregator>>,
    enc: Box<dyn Encoder>,
    faults: StragglerModel,
    scheme: String,
    deadline: f64,
    budget: f64,
    grace: f64,
    silence: f64,
    // the iteration in progress
    cur: Option<u64>,
    answered: bool,
    collecting: bool,
    own: Option<Vec<P>>,
    model: Option<Arc<P>>,
    arrivals: Vec<P>,
    arrived: Vec<(usize, f64, u32)>,
    failed: Vec<(usize, Vec<u32>)>,
    assignment: Option<(u64, Vec<u8>)>,
    record: Value,
    // accounting
    recv: Vec<u64>,
    bye: Vec<Option<u64>>,
    up_sent: u64,
    up_bytes: u64,
    iter_bytes_start: u64,
    /// Rounds of the current iteration not yet sent, and how many were.
    rounds: VecDeque<(u32, P)>,
    rounds_sent: u32,
    late: u64,
    latency: Histogram,
    /// Ranks of the subtree whose logs dropped lines (this one and its children's reports).
    dropped: Vec<(u32, String)>,
    failure: Option<String>,
    phase: Phase,
    /// When each timer is due (None: disarmed); a firing before that is stale.
    wait_at: Option<f64>,
    grace_at: Option<f64>,
    silence_at: Option<f64>,
    out: VecDeque<Output<P>>,
    /// Uploads by grant (`engine.upload = "granted"`).
    granted: bool,
    grants: Grants<P>,
    regrant_at: Option<f64>,
    /// Bytes received from children for the current iteration while collecting it: all
    /// frames, and results.
    it_bytes: (u64, u64),
    /// Bytes received from children over the run: all frames, and results discarded as late.
    bytes: (u64, u64),
    /// The iteration whose result the parent refused before this node announced it.
    refused: Option<u64>,
}

impl<P: Vector> TreeNode<P> {
    /// The node of `rank` in `plan`, for payloads of `len` values.
    pub fn new(plan: &Plan, rank: usize, len: usize) -> Self {
        let deadline = plan.run.deadline;
        let node = &plan.nodes[rank];
        let k = node.children.len();
        let layer = plan.depth(rank);
        TreeNode {
            rank,
            worker: node.worker,
            parent: node.parent,
            children: node.children.clone(),
            computes: !node.parts.is_empty(),
            part_loads: node.parts.iter().map(|p| p.len()).collect(),
            len,
            agg: (k > 0).then(|| {
                let mut a = aggregator(plan, rank, len);
                if !P::VALUES {
                    a.lengths_only();
                }
                a
            }),
            enc: encoder(plan, rank, len),
            faults: plan.stragglers.clone(),
            scheme: plan.scheme.clone(),
            deadline,
            budget: wait_budget(deadline, plan.layers(), layer),
            grace: shutdown_grace(deadline),
            silence: parent_silence(deadline, plan.layers()),
            cur: None,
            answered: true,
            collecting: false,
            own: None,
            model: None,
            arrivals: vec![],
            arrived: vec![],
            failed: vec![],
            assignment: None,
            record: Value::Null,
            recv: vec![0; k],
            bye: vec![None; k],
            up_sent: 0,
            up_bytes: 0,
            iter_bytes_start: 0,
            rounds: VecDeque::new(),
            rounds_sent: 0,
            late: 0,
            latency: Histogram::default(),
            dropped: vec![],
            failure: None,
            phase: Phase::Running,
            wait_at: None,
            grace_at: None,
            silence_at: None,
            out: VecDeque::new(),
            granted: plan.upload == Upload::Granted,
            grants: Grants::new(k),
            regrant_at: None,
            it_bytes: (0, 0),
            bytes: (0, 0),
            refused: None,
        }
    }

    /// (Re)arm timer `id` at `at`; returns the due time to remember.
    fn arm(&mut self, id: u64, at: f64) -> Option<f64> {
        self.out.push_back(Output::Timer { id, at });
        Some(at)
    }

    fn send(&mut self, to: Vec<usize>, head: Header, body: Option<Arc<P>>) {
        self.out.push_back(Output::Send { to, msg: Msg { head, body }, track: None });
    }

    fn send_up(&mut self, head: Header, body: Option<Arc<P>>) {
        self.send_up_tracked(head, body, None);
    }

    fn send_up_tracked(&mut self, head: Header, body: Option<Arc<P>>, track: Option<u64>) {
        let parent = self.parent.expect("a worker has a parent");
        self.up_sent += 1;
        let msg = Msg { head, body };
        self.up_bytes += msg.frame_bytes() as u64;
        self.out.push_back(Output::Send { to: vec![parent], msg, track });
    }

    /// Send the next queued round of the current iteration (multi-round encoders send one round
    /// at a time: the next one when the previous has left).
    fn send_next_round(&mut self) {
        let Some(t) = self.cur else { return };
        let Some((r, body)) = self.rounds.pop_front() else { return };
        let track = (!self.rounds.is_empty()).then_some(t.wrapping_mul(1 << 16) + r as u64);
        self.rounds_sent += 1;
        self.send_up_tracked(Header { round: r, ..Header::new(Kind::Result, t) }, Some(Arc::new(body)), track);
        self.record["rounds"] = json!(self.rounds_sent);
        self.record["up_bytes"] = json!(self.up_bytes - self.iter_bytes_start);
    }

    fn log(&mut self, v: Value) {
        self.out.push_back(Output::Log(v));
    }

    fn child_index(&self, rank: usize) -> Option<usize> {
        self.children.iter().position(|&c| c == rank)
    }

    /// Close the iteration's record; a multi-round sender keeps it open (its rounds are
    /// counted in it) until the last round leaves or the next model arrives.
    fn close_record_keep(&mut self, status: &str, at: f64) {
        if self.rounds.is_empty() {
            self.close_record(status, at);
        } else {
            self.record["status"] = json!(status);
            if status == "sent" {
                self.record["send"] = json!(at);
            }
            if self.record.get("ready").is_none() {
                self.record["ready"] = json!(at);
            }
            if self.agg.is_some() {
                self.record["arrivals"] = self.arrivals_json();
            }
        }
    }

    /// Emit a record kept open by [`Self::close_record_keep`].
    fn flush_record(&mut self) {
        if self.record.is_object() && self.record.get("status").is_some() {
            let ev = std::mem::take(&mut self.record);
            self.log(ev);
        }
    }

    /// Close the iteration's record with a status and emit it.
    fn close_record(&mut self, status: &str, at: f64) {
        let mut ev = std::mem::take(&mut self.record);
        if ev.is_object() {
            ev["status"] = json!(status);
            ev["send"] = json!(at);
            if ev.get("ready").is_none() {
                ev["ready"] = json!(at);
            }
            if self.agg.is_some() {
                ev["arrivals"] = self.arrivals_json();
            }
            self.log(ev);
        }
    }

    fn arrivals_json(&self) -> Value {
        json!(self
            .arrived
            .iter()
            .map(|(r, at, round)| if *round == 0 { json!([r, at]) } else { json!([r, at, round]) })
            .collect::<Vec<_>>())
    }

    /// Start iteration `t`: forward the model, begin collecting, start computing.
    fn begin(&mut self, now: f64, t: u64, model: Arc<P>, sent_at: f64) {
        self.cur = Some(t);
        self.answered = false;
        self.rounds.clear();
        self.rounds_sent = 0;
        self.iter_bytes_start = self.up_bytes;
        self.own = None;
        self.arrivals.clear();
        self.arrived.clear();
        self.failed.clear();
        self.grants.clear();
        self.it_bytes = (0, 0);
        if !self.children.is_empty() {
            if let Some(assign) = self.agg.as_mut().and_then(|a| a.assignments(t)) {
                for (&c, a) in self.children.clone().iter().zip(assign) {
                    self.send(vec![c], Header { meta: Meta::Assignment(a), ..Header::new(Kind::Assign, t) }, None);
                }
            }
            // Forward first, so the children start while this node computes.
            self.send(self.children.clone(), Header { sent_at, ..Header::new(Kind::Model, t) }, Some(model.clone()));
            self.agg.as_mut().expect("a parent").begin(t);
            self.collecting = true;
            let wait = if self.parent.is_none() { self.deadline } else { self.budget };
            self.wait_at = self.arm(WAIT, now + wait);
            if self.granted {
                // a granted upload missing at half the wait is given up on (see grant.rs)
                self.regrant_at = self.arm(REGRANT, now + wait / 2.0);
            }
        }
        let assignment = self.assignment.take().filter(|(at, _)| *at == t).map(|(_, a)| a);
        self.enc.begin(t, assignment.as_deref());
        if let Some(note) = self.enc.note() {
            self.record["assigned"] = note;
        }
        if self.computes {
            let parts = self.enc.select();
            let load = parts.as_ref().map(|p| p.iter().map(|&i| self.part_loads[i]).sum());
            self.out.push_back(Output::Compute { t, model: model.clone(), parts, load });
        } else {
            self.own = Some(vec![]);
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
        if self.faults.is_dead(worker, t) {
            self.cur = None;
            self.answered = true;
            self.collecting = false;
            self.log(
                json!({"ev": "iter", "t": t, "worker": worker, "model": now, "latency": latency, "status": "dead"}),
            );
            return;
        }
        self.record = json!({"ev": "iter", "t": t, "worker": worker, "model": now, "latency": latency});
        self.begin(now, t, model, sent_at);
        self.try_finish(clock);
    }

    fn abandon(&mut self, t: u64, now: f64) {
        self.answered = true;
        self.collecting = false;
        if self.refused != Some(t) {
            // (a refused node's parent expects nothing more of it)
            self.send_up(Header::new(Kind::Abandoned, t), None);
        }
        self.close_record("abandoned", now);
    }

    /// A newer model or the stop arrived: a multi-round sender that has sent some rounds of t
    /// stops there (its remaining rounds are dropped; what it sent answers the model).
    fn stop_rounds(&mut self, now: f64) {
        if !self.rounds.is_empty() {
            self.rounds.clear();
            if self.granted {
                return; // a held result the parent did not grant (the record says so)
            }
            if let Some(t) = self.cur {
                self.log(json!({"ev": "rounds-stopped", "t": t, "sent": self.rounds_sent, "at": now}));
            }
        }
    }

    /// Send the result (or deliver it, at the root) once the node's parts and its children's
    /// rule are both ready.
    fn try_finish(&mut self, clock: &dyn Clock) {
        if self.answered || self.own.is_none() || (self.agg.is_some() && !self.collected()) {
            return;
        }
        let t = self.cur.expect("an iteration in progress");
        self.collecting = false;
        let t0 = clock.now();
        if self.granted && self.agg.is_some() {
            self.arrivals = self.grants.take();
        }
        let mut comb = match self.agg.as_mut() {
            Some(a) => a.combine(),
            None => Combination::exact(self.len, vec![]),
        };
        let used: Vec<usize> = comb.used.iter().map(|&i| self.children[i]).collect();
        if self.agg.is_some() {
            self.record["used"] = json!(used);
            self.record["residual"] = json!(comb.residual);
            if comb.cond > 0.0 {
                self.record["cond"] = json!(comb.cond);
            }
            for (k, v) in &comb.notes {
                self.record[k.as_str()] = v.clone();
            }
            self.record["recv_bytes"] = json!(self.it_bytes.0);
            self.record["result_bytes"] = json!(self.it_bytes.1);
            if self.granted {
                let (notices, grants, refusals) = self.grants.iteration;
                self.record["notices"] = json!(notices);
                self.record["grants"] = json!(grants);
                self.record["refusals"] = json!(refusals);
            }
            if comb.rounds > 0 {
                self.record["rounds_used"] = json!(comb.rounds);
                self.record["uses"] =
                    json!(comb.uses.iter().map(|&(i, k)| json!([self.children[i], k])).collect::<Vec<_>>());
            }
        }
        if comb.residual > EXACT_RESIDUAL {
            let why = format!(
                "iteration {t}: decoding with survivors {used:?} left residual {:.3e} > {EXACT_RESIDUAL:e}: the result would be inexact; the code is ill-conditioned for this survivor set (try more scheme.draws, or a better-conditioned code)",
                comb.residual
            );
            return self.fail_iteration(clock.now(), t, why, vec![]);
        }
        let own = self.own.take().expect("checked");
        // a decoder that is not a sum of ranges: gather, map, and use the result as one arrival
        if let Some(v) = comb.mapped(&own, &self.arrivals) {
            self.arrivals.push(v);
            comb.terms = vec![Term::whole(Src::Arrival(self.arrivals.len() - 1), comb.len, 1.0)];
            comb.post = None;
        }
        let rounds = self.enc.rounds();
        let bodies: Vec<P> = (0..rounds)
            .map(|r| {
                let terms = self.enc.round(r).substitute_agg(&comb);
                Combination::evaluate(self.enc.round(r).len, &terms, &own, &self.arrivals)
            })
            .collect();
        let now = clock.now();
        self.answered = true;
        self.arrivals.clear();
        if self.agg.is_some() {
            self.record["decode_s"] = json!(now - t0);
        }
        if self.parent.is_none() {
            self.record["exact"] = json!(comb.exact);
            self.record["end"] = json!(now);
            self.record["arrivals"] = self.arrivals_json();
            let ev = std::mem::take(&mut self.record);
            self.log(ev);
            let workers = used.clone();
            let total = bodies.into_iter().next().expect("the root delivers one vector");
            let info = Delivered {
                used: workers,
                residual: comb.residual,
                exact: comb.exact,
                coverage: comb.coverage,
                late_total: self.late,
            };
            self.out.push_back(Output::Deliver { t, total, info });
        } else {
            self.rounds = bodies.into_iter().enumerate().map(|(r, b)| (r as u32, b)).collect();
            if self.granted && self.refused == Some(t) {
                // the parent has enough already: nothing to announce
                self.rounds.clear();
                self.close_record("refused", now);
            } else if self.granted {
                // announce; the result waits for the parent's grant (or refusal)
                let rounds = self.rounds.len() as u32;
                self.send_up(Header { round: rounds, ..Header::new(Kind::Ready, t) }, None);
                self.record["up_bytes"] = json!(self.up_bytes - self.iter_bytes_start);
                self.close_record_keep("ready", now);
            } else {
                self.send_next_round();
                self.close_record_keep("sent", now);
            }
        }
    }

    /// This node cannot produce iteration `t`: report it up, or fail the run at the root.
    fn fail_iteration(&mut self, now: f64, t: u64, why: String, missing: Vec<u32>) {
        self.answered = true;
        self.collecting = false;
        self.arrivals.clear();
        if self.parent.is_none() {
            self.record["end"] = json!(now);
            let ev = std::mem::take(&mut self.record);
            self.log(ev);
            self.start_drain(now, Some(why));
        } else {
            self.send_up(Header { meta: Meta::Missing(missing), ..Header::new(Kind::Failed, t) }, None);
            self.close_record("failed", now);
        }
    }

    /// The children that gave nothing usable, with what failed subtrees reported.
    fn describe_missing(&self) -> String {
        let got: Vec<usize> = self.arrived.iter().map(|(r, _, _)| *r).collect();
        let mut parts = vec![];
        for (i, &c) in self.children.iter().enumerate() {
            if got.contains(&c) {
                continue;
            }
            match self.failed.iter().find(|(j, _)| *j == i) {
                Some((_, miss)) => parts.push(format!(
                    "{c} (its subtree failed: rank {c} is missing children {})",
                    miss.iter().map(|m| m.to_string()).collect::<Vec<_>>().join(", ")
                )),
                None => parts.push(c.to_string()),
            }
        }
        parts.join(", ")
    }

    fn missing_children(&self) -> Vec<u32> {
        let got: Vec<usize> = self.arrived.iter().map(|(r, _, _)| *r).collect();
        self.children.iter().filter(|c| !got.contains(c)).map(|&c| c as u32).collect()
    }

    fn deadline_error(&self, t: u64) -> String {
        let hopeless = self.agg.as_ref().is_some_and(|a| a.hopeless());
        format!(
            "iteration {t}: {} needs {} at the master but {} within run.deadline = {} s; missing: workers {}",
            self.scheme,
            self.agg.as_ref().map_or(String::new(), |a| a.needs()),
            if hopeless {
                format!("{} children reported failed subtrees", self.failed.len())
            } else {
                format!("only {} arrived", self.arrived.len())
            },
            self.deadline,
            self.describe_missing()
        )
    }

    fn on_child(&mut self, clock: &dyn Clock, idx: usize, msg: Msg<P>) {
        let now = clock.now();
        let from = self.children[idx];
        let bytes = msg.frame_bytes() as u64;
        self.bytes.0 += bytes;
        let head = msg.head;
        if head.kind == Kind::Bye {
            let Meta::Bye { count, latency, dropped } = head.meta else {
                return self.log(
                    json!({"ev": "warn", "at": now, "message": format!("goodbye from rank {from} without a count")}),
                );
            };
            self.bye[idx] = Some(count);
            self.latency.merge(&Histogram::from_sparse(&latency));
            self.dropped.extend(dropped);
            return self.check_drained(now);
        }
        self.recv[idx] += 1;
        let t = head.t;
        let current = self.collecting && self.cur == Some(t);
        if current {
            self.it_bytes.0 += bytes;
            if head.kind == Kind::Result {
                self.it_bytes.1 += bytes;
            }
        }
        if head.kind == Kind::Ready {
            if self.cur == Some(t) && self.phase == Phase::Running {
                return self.on_notice(idx, t, head.round, current);
            }
            // a notice that crossed its refusal and arrived after the iteration ended: no
            // result came with it, nothing to answer
            self.grants.total[0] += 1;
            return self.check_drained(now);
        }
        let taken = current
            && match head.kind {
                Kind::Result if self.granted => {
                    let body = crate::wire::owned_body(msg.body, self.len);
                    if self.grants.fill(idx, head.round, body) {
                        self.arrived.push((from, now, head.round));
                        let agg = self.agg.as_deref_mut().expect("a parent");
                        if let Some(r) = self.grants.next_round(agg, idx, head.round) {
                            self.send(vec![from], Header { round: r, ..Header::new(Kind::Grant, t) }, None);
                            self.refuse_rest(t);
                        }
                        true
                    } else {
                        false
                    }
                }
                Kind::Result => {
                    let agg = self.agg.as_mut().expect("a parent");
                    if agg.offer(idx, head.round) {
                        let body = crate::wire::owned_body(msg.body, self.len);
                        self.arrivals.push(body);
                        self.arrived.push((from, now, head.round));
                        true
                    } else {
                        false
                    }
                }
                Kind::Failed => {
                    let missing = match head.meta {
                        Meta::Missing(m) => m,
                        _ => vec![],
                    };
                    self.failed.push((idx, missing));
                    self.agg.as_mut().expect("a parent").fail(idx);
                    true
                }
                _ => false,
            };
        if !taken {
            // An earlier iteration, beyond what the rule needed, or an abandonment: drain and
            // discard.
            self.late += 1;
            if head.kind == Kind::Result {
                self.bytes.1 += bytes;
            }
            let cur = self.cur.unwrap_or(t);
            self.log(json!({"ev": "late", "t": cur, "child": from, "msg_t": t, "kind": head.kind.name(), "at": now}));
            // the goodbye may have overtaken this message's accounting: re-check
            return self.check_drained(now);
        }
        self.after_arrival(clock, now, t);
    }

    /// Whether the iteration's results are all in: the rule is met (and, with grants, every
    /// granted upload arrived).
    fn collected(&self) -> bool {
        self.agg.as_ref().is_some_and(|a| a.satisfied()) && (!self.granted || self.grants.complete())
    }

    /// Something arrived for the iteration being collected: finish it, or fail it when the
    /// rule can no longer be met.
    fn after_arrival(&mut self, clock: &dyn Clock, now: f64, t: u64) {
        let agg = self.agg.as_ref().expect("a parent");
        if self.collected() {
            self.collecting = false;
            self.try_finish(clock);
        } else if agg.hopeless() {
            let why = self.deadline_error(t);
            let missing = self.missing_children();
            self.fail_iteration(now, t, why, missing);
        }
    }

    /// A ready notice of child `idx` for the current iteration `t` (with `rounds` rounds):
    /// grant its upload if the rule takes it while collecting, refuse it otherwise.
    fn on_notice(&mut self, idx: usize, t: u64, rounds: u32, collecting: bool) {
        let to = vec![self.children[idx]];
        let grant = if collecting {
            let agg = self.agg.as_deref_mut().expect("a parent");
            match self.grants.notice(agg, idx, rounds) {
                Some(g) => g,
                None => return, // refused before its notice came
            }
        } else if self.grants.notice_after(idx) {
            None
        } else {
            return;
        };
        let head = match grant {
            Some(r) => Header { round: r, ..Header::new(Kind::Grant, t) },
            None => Header::new(Kind::Refuse, t),
        };
        self.send(to, head, None);
        if grant.is_some() {
            self.refuse_rest(t);
        }
    }

    /// Once the grants meet the rule, the children that have not announced need not: refuse
    /// them now (one small message each).
    fn refuse_rest(&mut self, t: u64) {
        if self.agg.as_ref().is_some_and(|a| a.satisfied()) {
            let failed: Vec<usize> = self.failed.iter().map(|f| f.0).collect();
            let rest: Vec<usize> = self.grants.refuse_rest(&failed).into_iter().map(|i| self.children[i]).collect();
            if !rest.is_empty() {
                self.send(rest, Header::new(Kind::Refuse, t), None);
            }
        }
    }

    /// The re-grant check (half the wait budget): give up on granted uploads that did not
    /// come and grant refused children instead, where the rule allows it.
    fn regrant(&mut self, clock: &dyn Clock) {
        let now = clock.now();
        let Some(t) = self.cur else { return };
        if !self.collecting || self.answered || self.grants.outstanding().is_empty() {
            return;
        }
        let agg = self.agg.as_deref_mut().expect("a parent");
        let (gone, granted) = self.grants.regrant(agg, t);
        let gone: Vec<usize> = gone.into_iter().map(|i| self.children[i]).collect();
        let granted: Vec<usize> = granted.into_iter().map(|i| self.children[i]).collect();
        self.arrived.retain(|(r, _, _)| !gone.contains(r));
        self.log(json!({"ev": "regrant", "t": t, "at": now, "gave_up": gone, "granted": granted}));
        for &c in &granted {
            self.send(vec![c], Header::new(Kind::Grant, t), None);
        }
        if !granted.is_empty() {
            self.refuse_rest(t);
        }
        self.after_arrival(clock, now, t);
    }

    /// The parent granted round `round` of this node's result for `t`: upload it.
    fn on_grant(&mut self, now: f64, t: u64, round: u32) {
        let pos = self.rounds.iter().position(|(r, _)| *r == round);
        let (Some(pos), true) = (pos, self.cur == Some(t)) else {
            return self.log(json!({"ev": "warn", "at": now, "message": format!("grant of round {round} of iteration {t}, which this node does not hold")}));
        };
        let (r, body) = self.rounds.remove(pos).expect("found");
        self.rounds_sent += 1;
        self.send_up(Header { round: r, ..Header::new(Kind::Result, t) }, Some(Arc::new(body)));
        if self.record.is_object() {
            self.record["status"] = json!("sent");
            self.record["send"] = json!(now);
            self.record["rounds"] = json!(self.rounds_sent);
            self.record["up_bytes"] = json!(self.up_bytes - self.iter_bytes_start);
            if self.rounds.is_empty() {
                self.flush_record();
            }
        } else {
            // granted after a refusal (a granted sibling failed): the record is out already
            self.log(json!({"ev": "regranted", "t": t, "round": r, "at": now}));
        }
    }

    fn on_parent(&mut self, clock: &dyn Clock, msg: Msg<P>) {
        let now = clock.now();
        if self.phase == Phase::Running {
            self.silence_at = self.arm(SILENCE, now + self.silence);
        }
        let head = msg.head;
        match head.kind {
            Kind::Model if self.phase == Phase::Running => match msg.body {
                Some(body) => self.on_model(clock, head.t, body, head.sent_at),
                None => self.log(json!({"ev": "warn", "at": now, "message": "model without a body"})),
            },
            Kind::Assign => {
                if let Meta::Assignment(a) = head.meta {
                    self.assignment = Some((head.t, a));
                }
            }
            Kind::Grant if self.phase == Phase::Running => self.on_grant(now, head.t, head.round),
            Kind::Refuse if self.phase == Phase::Running => {
                if self.cur == Some(head.t) && self.record.is_object() {
                    self.record["refused"] = json!(now);
                    if self.answered {
                        // announced and held: the result stays until the next model
                        self.record["status"] = json!("refused");
                        self.flush_record();
                    } else {
                        // refused before its notice: it will not announce
                        self.refused = Some(head.t);
                    }
                }
            }
            Kind::Stop | Kind::Abort if self.phase == Phase::Running => {
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
            other => self.log(
                json!({"ev": "warn", "at": now, "message": format!("unexpected {} from the parent", other.name())}),
            ),
        }
    }

    /// Send stop (or abort, with the reason) down and wait for the goodbyes.
    fn start_drain(&mut self, now: f64, failure: Option<String>) {
        if matches!(self.phase, Phase::Draining { .. } | Phase::Finished) {
            return;
        }
        self.collecting = false;
        let abort = failure.is_some();
        if let Some(f) = failure {
            self.log(json!({"ev": "error", "at": now, "message": f}));
            self.failure = Some(f);
        }
        self.phase = Phase::Draining { abort };
        self.silence_at = None;
        if !self.children.is_empty() {
            self.send(self.children.clone(), Header::new(if abort { Kind::Abort } else { Kind::Stop }, 0), None);
        }
        self.grace_at = self.arm(GRACE, now + self.grace);
        self.check_drained(now);
    }

    fn check_drained(&mut self, now: f64) {
        let Phase::Draining { .. } = self.phase else { return };
        let done = self.bye.iter().zip(&self.recv).all(|(b, r)| *b == Some(*r));
        if done {
            self.finish(now, true);
        }
    }

    fn finish(&mut self, now: f64, clean: bool) {
        let Phase::Draining { abort } = self.phase else { return };
        if let Some(parent) = self.parent {
            let meta = Meta::Bye { count: self.up_sent, latency: self.latency.sparse(), dropped: self.dropped.clone() };
            self.send(vec![parent], Header { meta, ..Header::new(Kind::Bye, 0) }, None);
        }
        self.phase = Phase::Finished;
        let mut ev = json!({"ev": "shutdown", "kind": if abort { "abort" } else { "stop" }, "at": now, "late_discarded": self.late, "up_sent": self.up_sent, "clean": clean});
        if !self.children.is_empty() {
            ev["children_bytes"] = json!(self.bytes.0);
            ev["late_result_bytes"] = json!(self.bytes.1);
            if self.granted {
                let [notices, grants, refusals, regrants] = self.grants.total;
                ev["upload"] =
                    json!({"notices": notices, "grants": grants, "refusals": refusals, "regrants": regrants});
            }
        }
        self.log(ev);
        let result = match (self.failure.take(), abort) {
            (Some(f), _) => Err(Failure::Run(f)),
            (None, true) => Err(Failure::Aborted),
            (None, false) => Ok(()),
        };
        let outcome = Outcome {
            result,
            clean,
            late: self.late,
            up_sent: self.up_sent,
            latency: self.latency.clone(),
            dropped: self.dropped.clone(),
        };
        self.out.push_back(Output::Done(outcome));
    }

    fn on_timer(&mut self, clock: &dyn Clock, id: u64) {
        let now = clock.now();
        let due = |at: Option<f64>| at.is_some_and(|a| now >= a);
        if id == WAIT && due(self.wait_at) {
            self.wait_at = None;
            let Some(t) = self.cur else { return };
            if self.answered || self.phase != Phase::Running {
                return;
            }
            let why = self.deadline_error(t);
            let missing = self.missing_children();
            self.fail_iteration(now, t, why, missing);
        } else if id == REGRANT && due(self.regrant_at) {
            self.regrant_at = None;
            if self.phase == Phase::Running {
                self.regrant(clock);
            }
        } else if id == GRACE && due(self.grace_at) && matches!(self.phase, Phase::Draining { .. }) {
            let waiting: Vec<String> = self
                .children
                .iter()
                .enumerate()
                .filter(|(i, _)| self.bye[*i] != Some(self.recv[*i]))
                .map(|(_, c)| c.to_string())
                .collect();
            let why = format!(
                "rank {}: children {} did not say goodbye within {} s",
                self.rank,
                waiting.join(", "),
                self.grace
            );
            self.log(json!({"ev": "warn", "at": now, "message": why}));
            if self.failure.is_none() {
                self.failure = Some(why);
            }
            self.finish(now, false);
        } else if id == SILENCE && due(self.silence_at) && self.phase == Phase::Running {
            let why = format!(
                "rank {}: no message from its parent rank {} for {} s (the parent's process is gone or stuck); giving up",
                self.rank,
                self.parent.unwrap_or(0),
                self.silence
            );
            self.log(json!({"ev": "error", "at": now, "message": why.clone()}));
            self.phase = Phase::Finished;
            let outcome = Outcome {
                result: Err(Failure::Run(why)),
                clean: false,
                late: self.late,
                up_sent: self.up_sent,
                latency: self.latency.clone(),
                dropped: self.dropped.clone(),
            };
            self.out.push_back(Output::Done(outcome));
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
                if Some(from) == self.parent {
                    self.on_parent(clock, msg);
                } else if let Some(idx) = self.child_index(from) {
                    self.on_child(clock, idx, msg);
                } else {
                    self.log(json!({"ev": "warn", "at": clock.now(), "message": format!("unexpected {} from rank {from}", msg.head.kind.name())}));
                }
            }
            Input::Timing { t, timing } => {
                if self.cur == Some(t) && !self.answered {
                    if let (Value::Object(rec), Value::Object(tm)) = (&mut self.record, timing) {
                        rec.extend(tm);
                    }
                }
            }
            Input::Computed { t, parts, ready } => {
                if self.cur == Some(t) && !self.answered {
                    self.record["ready"] = json!(ready);
                    self.own = Some(parts);
                    self.try_finish(clock);
                }
            }
            Input::Timer { id } => self.on_timer(clock, id),
            Input::Sent { track } => {
                // the round tracked has left: send the next one of the same iteration
                if self.cur.is_some_and(|t| track >> 16 == t) && self.phase == Phase::Running {
                    self.send_next_round();
                    if self.rounds.is_empty() {
                        self.flush_record();
                    }
                }
            }
            Input::Start { t, model } => {
                assert!(self.parent.is_none(), "only the root starts iterations");
                if self.phase != Phase::Running {
                    return;
                }
                let now = clock.now();
                self.record = json!({"ev": "iter", "t": t, "start": now, "sent": now});
                self.begin(now, t, model, now);
                self.try_finish(clock);
            }
            Input::Finish { failure } => self.start_drain(clock.now(), failure),
            Input::Reduced { .. } => {}
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
}

impl<P: Vector> TreeNode<P> {
    /// The model this node last computed on (for drivers that need it, e.g. logs).
    pub fn model(&self) -> Option<&Arc<P>> {
        self.model.as_ref()
    }
}
