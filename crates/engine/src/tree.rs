//! Execution of tree plans: master–worker stars (depth 1) and CodedReduce trees.
//!
//! Every iteration t:
//! 1. the master sends `[MODEL, t, θ]` to its children (point-to-point, non-blocking);
//! 2. a node that receives a model forwards it to its own children first, then computes its
//!    local coded gradient (and sleeps until its modelled finish time, if timing is modelled);
//! 3. a parent collects its children's results for t until its wait rule is met (the *first*
//!    `need` arrivals), combines them (sum, decode, or rescale), adds its own gradient and sends
//!    `[GRADIENT, t, g, loss]` up;
//! 4. the master updates θ.
//!
//! A result that arrives after its parent has moved on is received, counted as *late* and
//! discarded by its iteration header; it can never be mixed into another iteration. A node that
//! sees a newer model (or stop) from its parent while still working on t abandons t and sends
//! `[ABANDONED, t]`, so every model it acted on gets exactly one answer. At the end, STOP flows
//! down, every node drains its children until their BYE (which carries how many results they
//! sent) and flushes its own sends, so nothing is pending at `MPI_Finalize`.

use std::collections::VecDeque;
use std::sync::Arc;
use std::time::{Duration, Instant};

use outrun_codes::{Decoder, EXACT_RESIDUAL};
use outrun_plan::config::ComputeMode;
use outrun_plan::wait::{combination, decoder_for, wait_budget, Collector, Offer, Taken};
use outrun_plan::{Combine, Node};
use outrun_runlog::{Book, IterationRecord, Summary};
use outrun_workloads::kernel::gradient;
use outrun_workloads::metrics::gd_step;
use serde_json::json;

use crate::error::EngineError;
use crate::protocol::{self, header, message, up_tag, with_header, Kind, BYE, DOWN, HEADER};
use crate::setup::LocalData;
use crate::transport::Backoff;
use crate::{Env, Progress};

/// What waiting ended with.
#[derive(Debug, PartialEq)]
enum Waited {
    Ready,
    /// A newer message from the parent arrived: give up on this iteration.
    Superseded,
    TimedOut,
    Hopeless,
}

/// Result of combining children (and the node's own gradient).
struct Combined {
    residual: f64,
    exact: bool,
    coverage: f64,
    used: Vec<usize>,
    decode_s: f64,
}

pub(crate) struct TreeNode<'a> {
    env: Env<'a>,
    me: &'a Node,
    layer: usize,
    layers: usize,
    first_child: usize,
    child_recv: Vec<u64>,
    child_bye: Vec<Option<u64>>,
    down: VecDeque<Vec<f64>>,
    late: u64,
    up_sent: u64,
    /// Children's results (whole received messages) for the iteration being collected.
    col: Collector<Vec<f64>>,
    decoder: Option<Decoder>,
    data: LocalData,
    p: usize,
}

impl<'a> TreeNode<'a> {
    pub(crate) fn new(env: Env<'a>, data: LocalData) -> Self {
        let plan = &env.shared.plan;
        let me = &plan.nodes[env.comm.rank];
        let (layer, layers) = (plan.depth(me.rank), plan.layers());
        let k = me.children.len();
        let need = me.wait.map_or(0, |w| w.need);
        let decoder = decoder_for(plan, me);
        TreeNode {
            p: env.shared.features,
            me,
            layer,
            layers,
            first_child: me.children.first().copied().unwrap_or(0),
            child_recv: vec![0; k],
            child_bye: vec![None; k],
            down: VecDeque::new(),
            late: 0,
            up_sent: 0,
            col: Collector::new(k, need),
            decoder,
            data,
            env,
        }
    }

    fn now(&self) -> f64 {
        self.env.clock.now()
    }

    /// Seconds this node may wait for its children, from receiving the model: deeper nodes give
    /// up earlier so their parents hear about a failed subtree before their own deadline.
    fn budget(&self) -> Duration {
        Duration::from_secs_f64(wait_budget(self.env.shared.config.run.deadline, self.layers, self.layer))
    }

    /// Receive and dispatch everything that has arrived; true if anything did.
    fn pump(&mut self) -> bool {
        let mut any = false;
        while let Some(m) = self.env.comm.try_recv() {
            any = true;
            self.dispatch(m.source, m.tag, m.data);
        }
        self.env.comm.progress();
        any
    }

    fn dispatch(&mut self, source: usize, tag: i32, data: Vec<f64>) {
        if Some(source) == self.me.parent && tag == DOWN {
            self.down.push_back(data);
            return;
        }
        let idx = source.wrapping_sub(self.first_child);
        if idx >= self.me.children.len() || self.me.children[idx] != source {
            tracing::warn!(source, tag, "rank {}: unexpected message ignored", self.me.rank);
            return;
        }
        if tag == BYE {
            self.child_bye[idx] = Some(data.get(1).copied().unwrap_or(0.0) as u64);
            return;
        }
        if !protocol::is_up_tag(tag) {
            tracing::warn!(source, tag, "rank {}: unexpected tag ignored", self.me.rank);
            return;
        }
        self.child_recv[idx] += 1;
        let Some((kind, t)) = header(&data) else {
            tracing::warn!(source, "rank {}: malformed header ignored", self.me.rank);
            return;
        };
        let at = self.now();
        let offer = match kind {
            Kind::Gradient => Offer::Result(data),
            Kind::Failed => Offer::Failed(data[HEADER..].iter().map(|&v| v as usize).collect()),
            _ => Offer::Other,
        };
        if self.col.offer(idx, t, offer, at) == Taken::Late {
            // An earlier iteration, or beyond what the wait rule needed: drain and discard.
            self.late += 1;
            self.env.log.json(&json!({"ev": "late", "t": self.col.t, "child": source, "msg_t": t, "kind": kind.name(), "at": at}));
        }
    }

    /// Wait for the children's results for the current iteration.
    fn wait_children(&mut self, until: Instant, watch_parent: bool) -> Waited {
        let mut backoff = Backoff::new(self.env.shared.config.engine.poll_us);
        loop {
            if self.pump() {
                backoff.reset();
            }
            if self.col.satisfied() {
                return Waited::Ready;
            }
            if watch_parent && !self.down.is_empty() {
                return Waited::Superseded;
            }
            if self.col.hopeless() {
                return Waited::Hopeless;
            }
            if Instant::now() >= until {
                return Waited::TimedOut;
            }
            backoff.idle_until(until);
        }
    }

    /// Combine the accepted children's results into `out` (a message whose body holds this
    /// node's own gradient, or zeros at the master).
    fn combine(&mut self, out: &mut [f64]) -> Combined {
        let t0 = Instant::now();
        let comb = combination(&self.env.shared.plan, self.me, self.col.order(), self.decoder.as_mut());
        let body = &mut out[HEADER..];
        for (i, &a) in comb.coeffs.iter().enumerate() {
            if a != 0.0 {
                let m = &self.col.got(i).expect("accepted child has a result").1[HEADER..];
                for (b, v) in body.iter_mut().zip(m) {
                    *b += a * v;
                }
            }
        }
        let used = self.col.order().iter().map(|&i| self.me.children[i]).collect();
        Combined { residual: comb.residual, exact: comb.exact, coverage: comb.coverage, used, decode_s: t0.elapsed().as_secs_f64() }
    }

    fn arrivals_json(&self) -> serde_json::Value {
        let arr: Vec<_> = (0..self.me.children.len()).filter_map(|i| self.col.got(i).map(|(at, _)| json!([self.me.children[i], at]))).collect();
        json!(arr)
    }

    /// Send `kind` down, drain children until they said goodbye, say goodbye upward, flush.
    /// Returns false if the children did not all finish within `grace`.
    fn shutdown(&mut self, kind: Kind, grace: Duration) -> bool {
        self.col.close();
        let msg = Arc::new(with_header(kind, 0, &[]));
        for &c in &self.me.children {
            self.env.comm.isend(c, DOWN, msg.clone());
        }
        let until = Instant::now() + grace;
        let mut backoff = Backoff::new(self.env.shared.config.engine.poll_us);
        let done = |s: &Self| s.child_bye.iter().zip(&s.child_recv).all(|(b, r)| *b == Some(*r));
        let mut clean = true;
        while !done(self) {
            if self.pump() {
                backoff.reset();
            }
            if Instant::now() >= until {
                tracing::warn!("rank {}: children did not finish within {:?}", self.me.rank, grace);
                clean = false;
                break;
            }
            backoff.idle_until(until);
        }
        if let Some(parent) = self.me.parent {
            self.env.comm.isend(parent, BYE, Arc::new(vec![Kind::Bye as i64 as f64, self.up_sent as f64]));
        }
        let mut parked = Vec::new();
        let flushed = self.env.comm.flush_sends(grace, |c| {
            // keep receiving so peers' sends to us complete; nothing more is expected
            while let Some(m) = c.try_recv() {
                parked.push(m);
            }
        });
        for m in parked {
            self.dispatch(m.source, m.tag, m.data);
        }
        self.env.log.json(&json!({"ev": "shutdown", "kind": kind.name(), "at": self.now(), "late_discarded": self.late,
            "up_sent": self.up_sent, "sent_msgs": self.env.comm.sent_msgs, "sent_bytes": self.env.comm.sent_bytes,
            "recv_msgs": self.env.comm.recv_msgs, "recv_bytes": self.env.comm.recv_bytes, "clean": clean && flushed}));
        clean && flushed
    }

    /// A child that never said goodbye (a crashed or hung process) leaves sends or receives
    /// that MPI_Finalize could wait for forever: end the whole job instead, with one line.
    fn abort_unclean(&self, why: &str) -> ! {
        eprintln!(
            "error: rank {}: {why}; its children did not finish within {:?}, so the MPI job is aborted (logs are in the run directory)",
            self.me.rank,
            self.grace()
        );
        self.env.comm.abort(1)
    }

    fn grace(&self) -> Duration {
        Duration::from_secs_f64(self.env.shared.config.run.deadline.clamp(5.0, 60.0))
    }

    /// A result message for iteration t holding the local coded gradient and loss.
    fn local_gradient(&self, t: u64, theta: &[f64]) -> Vec<f64> {
        let mut msg = message(Kind::Gradient, t, self.p + 1);
        let body = &mut msg[HEADER..];
        let loss = gradient(&self.data.rows, &self.data.coef, theta, self.env.shared.config.model.loss, &mut body[..self.p]);
        body[self.p] = loss;
        msg
    }

    // ------------------------------------------------------------------ master

    pub(crate) fn run_master(mut self, progress: &mut dyn Progress, setup_s: f64) -> Result<Option<Summary>, EngineError> {
        let shared = self.env.shared;
        let cfg = &shared.config;
        let p = self.p;
        let mut theta = vec![0.0; p];
        let io = |e: std::io::Error| EngineError::Run(format!("cannot write to the run directory: {e}"));
        let mut book = Book::new(&shared.run_info(), self.now()).map_err(io)?;
        progress.begin(cfg.run.iterations);
        let deadline = Duration::from_secs_f64(cfg.run.deadline);
        let mut failure = None;
        for t in 0..cfg.run.iterations {
            let start_i = Instant::now();
            let start = self.now();
            let msg = Arc::new(with_header(Kind::Model, t, &theta));
            for &c in &self.me.children {
                self.env.comm.isend(c, DOWN, msg.clone());
            }
            let sent = self.now();
            self.col.begin(t);
            match self.wait_children(start_i + deadline, false) {
                Waited::Ready => {}
                _ => {
                    failure = Some(self.col.deadline_error(self.me, shared.plan.scheme.name(), cfg.run.deadline));
                    break;
                }
            }
            self.col.close();
            let mut total = message(Kind::Gradient, t, p + 1);
            let c = self.combine(&mut total);
            if !c.exact && self.me.wait.map(|w| w.combine) == Some(Combine::Decode) {
                failure = Some(format!(
                    "iteration {t}: decoding with survivors {:?} left residual ‖aB−1‖ = {:.3e} > {EXACT_RESIDUAL:e}: the gradient would be inexact; the code is ill-conditioned for this survivor set (try more scheme.draws or code = \"frac\")",
                    c.used, c.residual
                ));
                break;
            }
            let loss = total[HEADER + p];
            gd_step(&mut theta, &total[HEADER..HEADER + p], shared.plan.samples as f64, &cfg.model, t);
            if !theta.iter().all(|v| v.is_finite()) || !loss.is_finite() {
                failure = Some(format!(
                    "iteration {t}: the model diverged (non-finite θ or loss); lower model.lr (now {})",
                    cfg.model.lr
                ));
                break;
            }
            let end = self.now();
            self.env.log.json(&json!({"ev": "iter", "t": t, "start": start, "sent": sent, "arrivals": self.arrivals_json(),
                "used": c.used, "decode_s": c.decode_s, "residual": c.residual, "exact": c.exact, "end": end}));
            let wall = book.record(IterationRecord {
                t,
                end,
                theta: Some(&theta),
                loss,
                used: &c.used,
                coverage: c.coverage,
                exact: c.exact,
                residual: c.residual,
                late_total: self.late,
            });
            progress.tick(t, wall, loss);
        }
        progress.end();
        if let Some(f) = failure {
            self.env.log.json(&json!({"ev": "error", "at": self.now(), "message": f}));
            let grace = self.grace();
            if !self.shutdown(Kind::Abort, grace) {
                self.abort_unclean(&f);
            }
            return Err(EngineError::Run(f));
        }
        let grace = self.grace();
        let clean = self.shutdown(Kind::Stop, grace);
        let summary = book
            .finish(&shared.run_info(), &theta, setup_s, self.late, self.env.comm.recv_bytes)
            .map_err(io)?;
        if !clean {
            self.abort_unclean("the run finished, but not every worker said goodbye");
        }
        Ok(Some(summary))
    }

    // ------------------------------------------------------------------ workers

    fn next_down(&mut self) -> Vec<f64> {
        let mut backoff = Backoff::new(self.env.shared.config.engine.poll_us);
        loop {
            if let Some(m) = self.down.pop_front() {
                return m;
            }
            if self.pump() {
                backoff.reset();
            } else {
                backoff.idle();
            }
        }
    }

    /// Send a message built with [`message`] up to the parent.
    fn send_up(&mut self, t: u64, msg: Vec<f64>) -> f64 {
        let parent = self.me.parent.expect("a worker has a parent");
        self.env.comm.isend(parent, up_tag(t), Arc::new(msg));
        self.up_sent += 1;
        self.now()
    }

    pub(crate) fn run_worker(mut self) -> Result<Option<Summary>, EngineError> {
        loop {
            let m = self.next_down();
            let Some((kind, t)) = header(&m) else {
                return Err(EngineError::Run(format!("rank {}: malformed message from the parent", self.me.rank)));
            };
            match kind {
                Kind::Model => {
                    self.iteration(t, &m[HEADER..]);
                    // Whatever happened, results for t that arrive from now on are late.
                    self.col.close();
                }
                Kind::Stop | Kind::Abort => {
                    let grace = self.grace();
                    if !self.shutdown(kind, grace) {
                        self.abort_unclean("shutdown incomplete");
                    }
                    return if kind == Kind::Stop { Ok(None) } else { Err(EngineError::Aborted) };
                }
                other => return Err(EngineError::Run(format!("rank {}: unexpected {} message from the parent", self.me.rank, other.name()))),
            }
        }
    }

    fn iteration(&mut self, t: u64, theta: &[f64]) {
        let shared = self.env.shared;
        let model_at = self.now();
        let model_i = Instant::now();
        let worker = self.me.worker.expect("workers have ids");
        let strag = &shared.plan.stragglers;
        if strag.is_dead(worker, t) {
            self.env.log.json(&json!({"ev": "iter", "t": t, "worker": worker, "model": model_at, "status": "dead"}));
            return;
        }
        // Forward the model first so the children start while this node computes.
        if !self.me.children.is_empty() {
            let msg = Arc::new(with_header(Kind::Model, t, theta));
            for &c in &self.me.children {
                self.env.comm.isend(c, DOWN, msg.clone());
            }
            self.col.begin(t);
        }
        let c0_i = Instant::now();
        let c0 = self.now();
        let mut own = self.local_gradient(t, theta);
        let measured = c0_i.elapsed().as_secs_f64();
        let c1 = self.now();
        let timing = strag.compute_time(worker, t, self.me.load(), measured);
        let overrun = shared.config.timing.compute == ComputeMode::Modelled && measured > timing.target;
        let ready_i = c0_i + Duration::from_secs_f64(timing.target.max(measured));
        let mut ev = json!({"ev": "iter", "t": t, "worker": worker, "model": model_at, "compute_start": c0, "compute_end": c1,
            "target": timing.target, "injected": timing.injected, "straggler": timing.straggler, "overrun": overrun});
        // Sleep until the modelled / injected finish time, watching for a newer model.
        let mut backoff = Backoff::new(shared.config.engine.poll_us);
        let mut superseded = false;
        loop {
            if self.pump() {
                backoff.reset();
            }
            if !self.down.is_empty() {
                superseded = true;
                break;
            }
            if Instant::now() >= ready_i {
                break;
            }
            backoff.idle_until(ready_i);
        }
        ev["ready"] = json!(self.now());
        if !superseded && !self.me.children.is_empty() {
            let waited = self.wait_children(model_i + self.budget(), true);
            ev["arrivals"] = self.arrivals_json();
            match waited {
                Waited::Ready => {
                    let c = self.combine(&mut own);
                    ev["used"] = json!(c.used);
                    ev["decode_s"] = json!(c.decode_s);
                    ev["residual"] = json!(c.residual);
                    if !c.exact {
                        ev["status"] = json!("failed");
                        ev["send"] = json!(self.send_up(t, message(Kind::Failed, t, 0)));
                        self.env.log.json(&ev);
                        return;
                    }
                }
                Waited::Superseded => superseded = true,
                Waited::TimedOut | Waited::Hopeless => {
                    let missing: Vec<f64> = self
                        .me
                        .children
                        .iter()
                        .enumerate()
                        .filter(|(i, _)| self.col.got(*i).is_none())
                        .map(|(_, &c)| c as f64)
                        .collect();
                    ev["status"] = json!("failed");
                    ev["send"] = json!(self.send_up(t, with_header(Kind::Failed, t, &missing)));
                    self.env.log.json(&ev);
                    return;
                }
            }
        }
        if superseded {
            ev["status"] = json!("abandoned");
            ev["send"] = json!(self.send_up(t, message(Kind::Abandoned, t, 0)));
        } else {
            ev["status"] = json!("sent");
            ev["send"] = json!(self.send_up(t, own));
        }
        self.env.log.json(&ev);
    }
}
