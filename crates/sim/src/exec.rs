//! Executing a plan in virtual time, on one event loop for trees (stars and CodedReduce) and
//! rings. The semantics follow the MPI engine (`outrun-engine`):
//!
//! - the master sends θ to its children; a node forwards θ to its children, then computes (the
//!   compute time comes from the same straggler model and seed as a real run);
//! - a parent accepts the first `need` results of its children (the shared
//!   `outrun_plan::wait::Collector`), then sends its result up; later results are late;
//! - a node that receives a newer model before it sent its result abandons the old iteration
//!   (sends a header-only message); a parent that cannot meet its rule within its wait budget
//!   reports its subtree failed; the master fails the run at `run.deadline`;
//! - a ring rank sends its 2(N − 1) segments as soon as it has computed and received the
//!   previous step's segment; `MPI_Allreduce` is modelled as the same ring.
//!
//! Decoding and the update take no virtual time. Every message crosses the [`Network`].

use std::collections::HashMap;

use outrun_plan::alloc::split_sizes;
use outrun_plan::config::Config;
use outrun_plan::wait::{wait_budget, Collector, Offer, Taken};
use outrun_plan::{Plan, Shape, StragglerModel};
use serde_json::{json, Value};

use crate::network::{NetEvent, Network};
use crate::queue::Queue;

/// Header words of every message (as in the engine's protocol).
const HEADER: usize = 2;

/// What one simulated run produced.
pub struct Outcome {
    /// Master-side (rank 0 for rings) end time of each iteration.
    pub ends: Vec<f64>,
    /// The child indices each parent used, by (rank, iteration): the survivors of its decode.
    pub used: HashMap<(usize, u64), Vec<usize>>,
    /// Late results discarded so far, at the end of each iteration.
    pub late_at_end: Vec<u64>,
    pub late: u64,
    /// Per-rank events in the engine's log format (when asked for).
    pub events: Option<Vec<Vec<Value>>>,
    /// Bytes and messages each rank sent and received.
    pub sent_bytes: Vec<u64>,
    pub recv_bytes: Vec<u64>,
}

enum Up {
    Gradient,
    Abandoned,
    Failed(Vec<usize>),
}

enum Ev {
    Model { node: usize, t: u64 },
    Done { node: usize, t: u64 },
    Up { parent: usize, child: usize, t: u64, msg: Up },
    Timeout { node: usize, t: u64 },
    Deadline { t: u64 },
    /// Ring: segment of step `k` of iteration `t` arrived at `node`.
    Segment { node: usize, t: u64, k: usize },
    /// A network port became free.
    Free,
}

#[derive(Default)]
struct NodeSt {
    cur: Option<u64>,
    sent: bool,
    own_done: Option<f64>,
    col: Option<Collector<()>>,
    ev: Value,
    // ring
    ring_received: usize,
    /// Segments of the next iteration that arrived before this rank finished the current one
    /// (the left neighbour is at most one iteration ahead).
    ring_early: usize,
    ring_sent: usize,
    ring_done: bool,
}

struct Sim<'a> {
    plan: &'a Plan,
    cfg: &'a Config,
    model: &'a StragglerModel,
    p: usize,
    net: Network<Ev>,
    q: Queue<Ev>,
    nodes: Vec<NodeSt>,
    layer: Vec<usize>,
    layers: usize,
    out: Outcome,
    failure: Option<String>,
    iterations: u64,
}

impl<'a> Sim<'a> {
    fn emit(&mut self, rank: usize, v: Value) {
        if let Some(ev) = self.out.events.as_mut() {
            ev[rank].push(v);
        }
    }

    /// Send a message carrying `ev` (delivered on arrival).
    fn send(&mut self, from: usize, to: usize, bytes: usize, at: f64, down: bool, ev: Ev) {
        for (when, e) in self.net.submit(from, to, bytes, at, down, ev) {
            self.schedule(when, e);
        }
    }

    fn schedule(&mut self, when: f64, e: NetEvent<Ev>) {
        match e {
            NetEvent::Deliver(ev) => self.q.push(when, ev),
            NetEvent::Free => self.q.push(when, Ev::Free),
        }
    }

    /// In the papers' model a parent that has what it needs never receives late uploads.
    fn cancel_late_to(&mut self, parent: usize, t: u64) {
        if self.cfg.network.cancel_late {
            self.net.cancel(|e| matches!(e, Ev::Up { parent: p, t: tt, .. } if *p == parent && *tt <= t));
        }
    }

    fn base_compute(&self, load: usize) -> f64 {
        // real runs measure this; the simulator uses the modelled base time
        self.cfg.timing.a * load as f64
    }

    // ---------------------------------------------------------------- trees

    fn start_iteration(&mut self, t: u64, at: f64) {
        let master = &self.plan.nodes[0];
        self.nodes[0].col.as_mut().expect("the master has children").begin(t);
        self.nodes[0].ev = json!({"ev": "iter", "t": t, "start": at, "sent": at});
        for &c in &master.children {
            self.send(0, c, 8 * (HEADER + self.p), at, true, Ev::Model { node: c, t });
        }
        self.q.push(at + self.cfg.run.deadline, Ev::Deadline { t });
    }

    fn arrivals(&self, node: usize) -> Value {
        let n = &self.plan.nodes[node];
        let col = self.nodes[node].col.as_ref().expect("a parent");
        json!((0..n.children.len()).filter_map(|i| col.got(i).map(|(at, _)| json!([n.children[i], at]))).collect::<Vec<_>>())
    }

    fn send_up(&mut self, node: usize, t: u64, msg: Up, at: f64) {
        let parent = self.plan.nodes[node].parent.expect("a worker has a parent");
        let words = match &msg {
            Up::Gradient => HEADER + self.p + 1,
            Up::Abandoned => HEADER,
            Up::Failed(m) => HEADER + m.len(),
        };
        self.send(node, parent, 8 * words, at, false, Ev::Up { parent, child: node, t, msg });
        if let Some(col) = self.nodes[node].col.as_mut() {
            col.close();
        }
        self.nodes[node].sent = true;
    }

    fn finish_record(&mut self, node: usize, status: &str, at: f64) {
        let mut ev = std::mem::take(&mut self.nodes[node].ev);
        if ev.is_object() {
            ev["status"] = json!(status);
            ev["send"] = json!(at);
            if ev.get("ready").is_none() {
                ev["ready"] = json!(at);
            }
            self.emit(node, ev);
        }
    }

    fn on_model(&mut self, node: usize, t: u64, at: f64) {
        if let Some(prev) = self.nodes[node].cur {
            if !self.nodes[node].sent && prev < t {
                self.send_up(node, prev, Up::Abandoned, at);
                self.finish_record(node, "abandoned", at);
            }
        }
        self.nodes[node].cur = None;
        let me = &self.plan.nodes[node];
        let worker = me.worker.expect("workers have ids");
        if self.model.is_dead(worker, t) {
            self.emit(node, json!({"ev": "iter", "t": t, "worker": worker, "model": at, "status": "dead"}));
            return;
        }
        let st = &mut self.nodes[node];
        st.cur = Some(t);
        st.sent = false;
        st.own_done = None;
        for &c in &me.children {
            self.send(node, c, 8 * (HEADER + self.p), at, true, Ev::Model { node: c, t });
        }
        if !me.children.is_empty() {
            self.nodes[node].col.as_mut().expect("a parent").begin(t);
            let budget = wait_budget(self.cfg.run.deadline, self.layers, self.layer[node]);
            self.q.push(at + budget, Ev::Timeout { node, t });
        }
        let timing = self.model.compute_time(worker, t, me.load(), self.base_compute(me.load()));
        self.nodes[node].ev = json!({"ev": "iter", "t": t, "worker": worker, "model": at, "compute_start": at, "compute_end": at,
            "target": timing.target, "injected": timing.injected, "straggler": timing.straggler, "overrun": false});
        self.q.push(at + timing.target, Ev::Done { node, t });
    }

    fn try_finish(&mut self, node: usize, t: u64, at: f64) {
        let st = &self.nodes[node];
        if st.own_done.is_none() || st.sent || st.cur != Some(t) {
            return;
        }
        let ready = st.col.as_ref().map_or(true, |c| c.satisfied());
        if !ready {
            return;
        }
        if let Some(col) = st.col.as_ref() {
            let used = col.order().to_vec();
            let ranks: Vec<usize> = used.iter().map(|&i| self.plan.nodes[node].children[i]).collect();
            let arrivals = self.arrivals(node);
            let ev = &mut self.nodes[node].ev;
            ev["arrivals"] = arrivals;
            ev["used"] = json!(ranks);
            ev["decode_s"] = json!(0.0);
            self.out.used.insert((node, t), used);
            self.cancel_late_to(node, t);
        }
        self.send_up(node, t, Up::Gradient, at);
        self.finish_record(node, "sent", at);
    }

    fn on_up(&mut self, parent: usize, child: usize, t: u64, msg: Up, at: f64) {
        let pn = &self.plan.nodes[parent];
        let idx = child - pn.children[0];
        let kind = match &msg {
            Up::Gradient => "gradient",
            Up::Abandoned => "abandoned",
            Up::Failed(_) => "failed",
        };
        let offer = match msg {
            Up::Gradient => Offer::Result(()),
            Up::Failed(m) => Offer::Failed(m),
            Up::Abandoned => Offer::Other,
        };
        let col = self.nodes[parent].col.as_mut().expect("a parent");
        let cur_t = col.t;
        if col.offer(idx, t, offer, at) == Taken::Late {
            self.out.late += 1;
            self.emit(parent, json!({"ev": "late", "t": cur_t, "child": child, "msg_t": t, "kind": kind, "at": at}));
            return;
        }
        let (satisfied, hopeless) = (col.satisfied(), col.hopeless());
        if parent == 0 {
            if satisfied {
                self.finish_iteration(t, at);
            } else if hopeless {
                let col = self.nodes[0].col.as_ref().expect("master");
                self.failure = Some(col.deadline_error(&self.plan.nodes[0], self.plan.scheme.name(), self.cfg.run.deadline));
            }
        } else if satisfied {
            self.try_finish(parent, t, at);
        } else if hopeless && self.nodes[parent].cur == Some(t) && !self.nodes[parent].sent {
            self.report_failed(parent, t, at);
        }
    }

    fn report_failed(&mut self, node: usize, t: u64, at: f64) {
        let n = &self.plan.nodes[node];
        let col = self.nodes[node].col.as_ref().expect("a parent");
        let missing: Vec<usize> = (0..n.children.len()).filter(|&i| col.got(i).is_none()).map(|i| n.children[i]).collect();
        self.nodes[node].ev["arrivals"] = self.arrivals(node);
        self.send_up(node, t, Up::Failed(missing), at);
        self.finish_record(node, "failed", at);
    }

    fn finish_iteration(&mut self, t: u64, at: f64) {
        self.cancel_late_to(0, t);
        let col = self.nodes[0].col.as_mut().expect("master");
        col.close();
        let used = col.order().to_vec();
        let ranks: Vec<usize> = used.iter().map(|&i| self.plan.nodes[0].children[i]).collect();
        self.out.used.insert((0, t), used);
        let arrivals = self.arrivals(0);
        let mut ev = std::mem::take(&mut self.nodes[0].ev);
        ev["arrivals"] = arrivals;
        ev["used"] = json!(ranks);
        ev["decode_s"] = json!(0.0);
        ev["end"] = json!(at);
        self.emit(0, ev);
        self.out.ends.push(at);
        self.out.late_at_end.push(self.out.late);
        if t + 1 < self.iterations {
            self.start_iteration(t + 1, at);
        }
    }

    // ---------------------------------------------------------------- rings

    fn ring_start(&mut self, r: usize, t: u64, at: f64) {
        let me = &self.plan.nodes[r];
        let worker = me.worker.expect("ring ranks are workers");
        let st = &mut self.nodes[r];
        st.cur = Some(t);
        st.own_done = None;
        st.ring_received = std::mem::take(&mut st.ring_early);
        st.ring_sent = 0;
        st.ring_done = false;
        let timing = self.model.compute_time(worker, t, me.load(), self.base_compute(me.load()));
        self.nodes[r].ev = json!({"ev": "iter", "t": t, "worker": worker, "start": at, "compute_start": at, "compute_end": at,
            "target": timing.target, "injected": timing.injected, "straggler": timing.straggler});
        self.q.push(at + timing.target, Ev::Done { node: r, t });
    }

    /// Send every ring step rank `r` can send now.
    fn ring_advance(&mut self, r: usize, t: u64, at: f64) {
        let n = self.plan.ranks;
        let steps = 2 * (n - 1);
        let sizes = split_sizes(self.p + 1, n);
        loop {
            let st = &self.nodes[r];
            let k = st.ring_sent;
            if st.own_done.is_none() || k >= steps || st.ring_received < k {
                break;
            }
            let seg = if k < n - 1 { (r + n - k) % n } else { (r + 1 + n - (k - (n - 1))) % n };
            let right = (r + 1) % n;
            self.send(r, right, 8 * sizes[seg], at, false, Ev::Segment { node: right, t, k });
            self.nodes[r].ring_sent += 1;
        }
        let st = &self.nodes[r];
        if !st.ring_done && st.ring_received == steps && st.ring_sent == steps {
            self.nodes[r].ring_done = true;
            let mut ev = std::mem::take(&mut self.nodes[r].ev);
            ev["reduced"] = json!(at);
            self.emit(r, ev);
            if r == 0 {
                self.out.ends.push(at);
                self.out.late_at_end.push(0);
            }
            if t + 1 < self.iterations {
                self.ring_start(r, t + 1, at);
            }
        }
    }

    fn on_segment(&mut self, node: usize, t: u64, k: usize, at: f64) {
        let st = &mut self.nodes[node];
        if st.cur == Some(t) && !st.ring_done {
            debug_assert_eq!(st.ring_received, k, "segments arrive in order on a link");
            st.ring_received += 1;
            self.ring_advance(node, t, at);
        } else {
            // the left neighbour already started iteration t = cur + 1
            debug_assert_eq!(Some(t), st.cur.map(|c| c + 1));
            debug_assert_eq!(st.ring_early, k);
            st.ring_early += 1;
        }
    }

    fn run(mut self) -> Result<Outcome, String> {
        let ring = matches!(self.plan.shape, Shape::Ring { .. });
        if ring {
            for r in 0..self.plan.ranks {
                self.ring_start(r, 0, 0.0);
            }
        } else {
            self.start_iteration(0, 0.0);
        }
        while let Some((at, ev)) = self.q.pop() {
            match ev {
                Ev::Model { node, t } => self.on_model(node, t, at),
                Ev::Done { node, t } => {
                    if self.nodes[node].cur == Some(t) && !self.nodes[node].sent {
                        self.nodes[node].own_done = Some(at);
                        self.nodes[node].ev["ready"] = json!(at);
                        if ring {
                            self.ring_advance(node, t, at);
                        } else {
                            self.try_finish(node, t, at);
                        }
                    }
                }
                Ev::Up { parent, child, t, msg } => self.on_up(parent, child, t, msg, at),
                Ev::Timeout { node, t } => {
                    if self.nodes[node].cur == Some(t) && !self.nodes[node].sent {
                        self.report_failed(node, t, at);
                    }
                }
                Ev::Deadline { t } => {
                    let col = self.nodes[0].col.as_ref().expect("master");
                    if self.out.ends.len() as u64 == t && self.failure.is_none() {
                        self.failure = Some(col.deadline_error(&self.plan.nodes[0], self.plan.scheme.name(), self.cfg.run.deadline));
                    }
                }
                Ev::Segment { node, t, k } => self.on_segment(node, t, k, at),
                Ev::Free => {
                    for (when, e) in self.net.pump(at) {
                        self.schedule(when, e);
                    }
                }
            }
            if let Some(f) = self.failure.take() {
                return Err(f);
            }
        }
        if (self.out.ends.len() as u64) < self.iterations {
            return Err(format!("simulation stopped after {} of {} iterations with nothing left to happen", self.out.ends.len(), self.iterations));
        }
        // shutdown events with the traffic each rank saw
        for r in 0..self.plan.ranks {
            let v = json!({"ev": "shutdown", "kind": "stop", "sent_msgs": self.net.sent_msgs[r], "sent_bytes": self.net.sent_bytes[r],
                "recv_msgs": self.net.recv_msgs[r], "recv_bytes": self.net.recv_bytes[r], "late_discarded": if r == 0 { self.out.late } else { 0 }, "clean": true});
            self.emit(r, v);
        }
        self.out.sent_bytes = self.net.sent_bytes.clone();
        self.out.recv_bytes = self.net.recv_bytes.clone();
        Ok(self.out)
    }
}

/// Execute `plan` for `cfg.run.iterations` iterations in virtual time, with straggler `model`
/// (the plan's, or a trial's reseeded copy) and model dimension `p`. With `log`, the per-rank
/// events are kept in the engine's format.
pub fn execute(plan: &Plan, cfg: &Config, model: &StragglerModel, p: usize, log: bool) -> Result<Outcome, String> {
    let ranks = plan.ranks;
    let layer = (0..ranks).map(|r| plan.depth(r)).collect();
    let layers = plan.layers();
    let nodes = plan
        .nodes
        .iter()
        .map(|n| NodeSt { col: n.wait.map(|w| Collector::new(n.children.len(), w.need)), ..NodeSt::default() })
        .collect();
    let sim = Sim {
        plan,
        cfg,
        model,
        p,
        net: Network::from_config(cfg, ranks),
        q: Queue::new(),
        nodes,
        layer,
        layers,
        out: Outcome {
            ends: vec![],
            used: HashMap::new(),
            late_at_end: vec![],
            late: 0,
            events: log.then(|| vec![Vec::new(); ranks]),
            sent_bytes: vec![],
            recv_bytes: vec![],
        },
        failure: None,
        iterations: cfg.run.iterations,
    };
    sim.run()
}
