//! The simulator's driver: every rank's node machine (the same `outrun_proto` machines the MPI
//! engine drives) on one event queue in virtual time. Like the engine's driver it knows
//! messages, computations, timers and deliveries, never schemes:
//!
//! - `Send` → the message crosses the [`Network`] (latency + bytes / rate, single-port nodes)
//!   with its exact wire size (`Msg::frame_bytes`);
//! - `Compute` → the job computes now (real arithmetic, or lengths only), and the result is fed
//!   back at now + the modelled compute time from the same straggler model and seed a real run
//!   uses (base time `timing.a × load`);
//! - `Timer` → an event at its time; `Deliver` → apply, record, start the next iteration.
//!
//! Decoding and the update take no virtual time. A ring plan that asks for the library's
//! collective runs as our ring (the model of `MPI_Allreduce`). The papers' latency model, where
//! late results cost nothing, is what `engine.upload = "granted"` does in both drivers: the
//! machines themselves send only the results their parents grant.

use outrun_plan::roles::Vector;
use outrun_plan::{Config, Plan, StragglerModel};
use outrun_proto::{At, Failure, Histogram, Input, Job, Kind, Machine, Msg, Output};
use outrun_runlog::{Book, IterationRecord};
use serde_json::{json, Value};

use crate::network::{NetEvent, Network};
use crate::queue::Queue;

/// A simulated run that failed: the message a real run would print (a deadline, a failed
/// subtree, divergence).
#[derive(Clone, Debug, PartialEq, thiserror::Error)]
#[error("{0}")]
pub struct RunFailed(pub String);

/// What one simulated run produced.
#[derive(Debug, Default)]
pub struct Run {
    /// End time of each iteration at the logging rank.
    pub ends: Vec<f64>,
    /// Late messages discarded at the logging rank.
    pub late: u64,
    /// Bytes each rank sent and received.
    pub sent_bytes: Vec<u64>,
    /// Bytes each rank received.
    pub recv_bytes: Vec<u64>,
    /// The last applied model (when the job computes one).
    pub state: Option<Vec<f64>>,
    /// Model send→receive latencies (merged at the root).
    pub latency: Histogram,
}

enum Ev<P> {
    Arrive { from: usize, to: usize, msg: Msg<P> },
    Computed { rank: usize, t: u64, parts: Vec<P> },
    Timer { rank: usize, id: u64 },
    Sent { rank: usize, track: u64 },
    Free,
}

struct Sim<'a, P: Vector, J: Job<P>> {
    plan: &'a Plan,
    cfg: &'a Config,
    /// One job per rank, as in the engine (each ring rank applies its own update).
    jobs: Vec<J>,
    injector: outrun_plan::Injector,
    machines: Vec<Box<dyn Machine<P>>>,
    net: Network<Ev<P>>,
    q: Queue<Ev<P>>,
    book: Option<&'a mut Book>,
    events: Option<&'a mut Vec<Vec<Value>>>,
    done: Vec<bool>,
    failure: Option<String>,
    run: Run,
}

fn is_down(kind: Kind) -> bool {
    matches!(kind, Kind::Model | Kind::Assign | Kind::Stop | Kind::Abort | Kind::Grant | Kind::Refuse)
}

impl<P: Vector + 'static, J: Job<P>> Sim<'_, P, J> {
    fn schedule(&mut self, evs: Vec<(f64, NetEvent<Ev<P>>)>) {
        for (when, e) in evs {
            match e {
                NetEvent::Deliver(ev) => self.q.push(when, ev),
                NetEvent::Free => self.q.push(when, Ev::Free),
            }
        }
    }

    fn feed(&mut self, rank: usize, at: f64, input: Input<P>) {
        self.machines[rank].handle(&At(at), input);
        while let Some(o) = self.machines[rank].poll() {
            match o {
                Output::Send { to, msg, track } => {
                    let bytes = msg.frame_bytes();
                    let down = is_down(msg.head.kind);
                    for d in to {
                        let sent = track.map(|track| Ev::Sent { rank, track });
                        let evs = self.net.submit_notify(
                            rank,
                            d,
                            bytes,
                            at,
                            down,
                            Ev::Arrive { from: rank, to: d, msg: msg.clone() },
                            sent,
                        );
                        self.schedule(evs);
                    }
                }
                Output::Compute { t, model, parts, load } => {
                    let node = &self.plan.nodes[rank];
                    let parts = self.jobs[rank].compute(rank, t, &model, parts.as_deref());
                    let load = load.unwrap_or_else(|| node.load());
                    let base = self.cfg.timing.a * load as f64;
                    let ct = self.injector.compute_time(node.worker.unwrap_or(0), t, load, base);
                    let timing = json!({"compute_start": at, "compute_end": at, "target": ct.target, "injected": ct.injected,
                        "straggler": ct.straggler, "overrun": false});
                    self.q.push(at + ct.target, Ev::Computed { rank, t, parts });
                    self.machines[rank].handle(&At(at), Input::Timing { t, timing });
                }
                Output::Timer { id, at: when } => self.q.push(when, Ev::Timer { rank, id }),
                Output::Deliver { t, total, info } => {
                    let next = match self.jobs[rank].apply(t, total) {
                        Ok(applied) => {
                            if rank == self.plan.log_rank() {
                                self.run.ends.push(at);
                                if let Some(book) = self.book.as_deref_mut() {
                                    book.record(IterationRecord {
                                        t,
                                        end: at,
                                        theta: applied.state.as_deref(),
                                        loss: applied.loss,
                                        error: applied.error,
                                        used: &info.used,
                                        coverage: info.coverage,
                                        exact: info.exact,
                                        residual: info.residual,
                                        late_total: info.late_total,
                                    });
                                }
                                self.run.state = applied.state;
                            }
                            if t + 1 < self.cfg.run.iterations {
                                Input::Start { t: t + 1, model: self.jobs[rank].model() }
                            } else {
                                Input::Finish { failure: None }
                            }
                        }
                        Err(why) => Input::Finish { failure: Some(why.0) },
                    };
                    self.machines[rank].handle(&At(at), next);
                }
                Output::Collective { .. } => unreachable!("the simulator runs collectives as rings"),
                Output::Log(mut v) => {
                    if let Some(ev) = self.events.as_deref_mut() {
                        if v["ev"] == "shutdown" {
                            v["sent_msgs"] = json!(self.net.sent_msgs[rank]);
                            v["sent_bytes"] = json!(self.net.sent_bytes[rank]);
                            v["recv_msgs"] = json!(self.net.recv_msgs[rank]);
                            v["recv_bytes"] = json!(self.net.recv_bytes[rank]);
                        }
                        ev[rank].push(v);
                    }
                }
                Output::Done(o) => {
                    self.done[rank] = true;
                    if rank == self.plan.log_rank() {
                        self.run.late = o.late;
                        self.run.latency = o.latency.clone();
                    }
                    if let Err(Failure::Run(m)) = o.result {
                        self.failure.get_or_insert(m);
                    }
                }
            }
        }
    }

    fn execute(mut self) -> Result<Run, RunFailed> {
        for r in 0..self.plan.ranks {
            if self.plan.delivers(r) {
                let model = self.jobs[r].model();
                self.feed(r, 0.0, Input::Start { t: 0, model });
            }
        }
        while let Some((at, ev)) = self.q.pop() {
            match ev {
                Ev::Arrive { from, to, msg } => self.feed(to, at, Input::Recv { from, msg }),
                Ev::Computed { rank, t, parts } => self.feed(rank, at, Input::Computed { t, parts, ready: at }),
                Ev::Timer { rank, id } => self.feed(rank, at, Input::Timer { id }),
                Ev::Sent { rank, track } => self.feed(rank, at, Input::Sent { track }),
                Ev::Free => {
                    let evs = self.net.pump(at);
                    self.schedule(evs);
                }
            }
            if let Some(f) = self.failure.take() {
                return Err(RunFailed(f));
            }
            if self.done.iter().all(|&d| d) {
                break;
            }
        }
        if (self.run.ends.len() as u64) < self.cfg.run.iterations {
            return Err(RunFailed(format!(
                "simulation stopped after {} of {} iterations with nothing left to happen",
                self.run.ends.len(),
                self.cfg.run.iterations
            )));
        }
        self.run.sent_bytes = self.net.sent_bytes.clone();
        self.run.recv_bytes = self.net.recv_bytes.clone();
        Ok(self.run)
    }
}

/// Execute `plan` for `cfg.run.iterations` iterations in virtual time with the straggler model
/// `stragglers` (the plan's, or a trial's reseeded copy) and one job per rank (real arithmetic
/// or lengths). With a `book`, the logging rank records every iteration; with `events`, every
/// rank's log records are kept in the engine's format.
pub fn execute<P: Vector + 'static, J: Job<P>>(
    plan: &Plan,
    cfg: &Config,
    stragglers: &StragglerModel,
    jobs: Vec<J>,
    book: Option<&mut Book>,
    events: Option<&mut Vec<Vec<Value>>>,
) -> Result<Run, RunFailed> {
    let ranks = plan.ranks;
    assert_eq!(jobs.len(), ranks, "one job per rank");
    // the machines see the trial's straggler process (a GC-DC master clusters with its states)
    let trial;
    let for_machines = if *stragglers == plan.stragglers {
        plan
    } else {
        trial = Plan { stragglers: stragglers.clone(), ..plan.clone() };
        &trial
    };
    let machines = (0..ranks).map(|r| outrun_proto::machine::<P>(for_machines, r, jobs[r].len(r), true)).collect();
    let sim = Sim {
        plan,
        cfg,
        jobs,
        injector: stragglers.injector(),
        machines,
        net: Network::from_config(cfg, ranks),
        q: Queue::new(),
        book,
        events,
        done: vec![false; ranks],
        failure: None,
        run: Run::default(),
    };
    sim.execute()
}
