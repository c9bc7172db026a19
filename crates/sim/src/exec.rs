//! The simulator's driver: every rank's node machine (the same `outrun_proto` machines the MPI
//! engine drives) on one event queue in virtual time. Like the engine's driver it knows
//! messages, computations, timers and deliveries, never schemes or jobs, and leaves what does
//! not depend on time to the driver core (`outrun_driver::Core`):
//!
//! - `Send` → the message crosses the [`Network`] (latency + bytes / rate, single-port nodes)
//!   with its exact wire size (`Msg::frame_bytes`);
//! - `Compute` → the core computes now (real arithmetic, or lengths only), and the result is
//!   fed back at now + the modelled compute time from the same straggler model and seed a real
//!   run uses (base time `timing.a × load`);
//! - `Timer` → an event at its time; `Deliver` → the core applies, records, and starts the next
//!   iteration.
//!
//! Decoding and the update take no virtual time. A ring plan that asks for the library's
//! collective runs as our ring (the model of `MPI_Allreduce`). The papers' latency model, where
//! late results cost nothing, is what `engine.upload = "granted"` does in both drivers: the
//! machines themselves send only the results their parents grant.

use outrun_driver::{Core, Payload, Seat};
use outrun_plan::{Plan, StragglerModel};
use outrun_proto::{At, Failure, Histogram, Input, Machine, Msg, Output};
use outrun_runlog::event::{Event, Traffic};
use outrun_runlog::{Book, Lines, RunInfo, Summary};
use outrun_workloads::Job;

use crate::network::{NetEvent, Network};
use crate::queue::Queue;
use crate::SimError;

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
    /// The last state the logging rank applied (when the job computes one).
    pub state: Option<Vec<f64>>,
    /// Model send→receive latencies (merged at the root).
    pub latency: Histogram,
    /// The summary, when the logging rank's core keeps a book.
    pub summary: Option<Summary>,
}

enum Ev<P> {
    Arrive { from: usize, to: usize, msg: Msg<P> },
    Computed { rank: usize, t: u64, parts: Vec<P> },
    Timer { rank: usize, id: u64 },
    Sent { rank: usize, track: u64 },
    Free,
}

struct Sim<'a, P: Payload> {
    plan: &'a Plan,
    /// One core per rank, as in the engine (each ring rank applies its own update).
    cores: Vec<Core<'static>>,
    machines: Vec<Box<dyn Machine<P>>>,
    net: Network<Ev<P>>,
    q: Queue<Ev<P>>,
    /// Every rank's log, written as the records come (a written trial).
    logs: Option<&'a mut [Lines]>,
    done: Vec<bool>,
    failure: Option<String>,
    run: Run,
    /// Per link (from, to): when the last message held on it leaves (`[links] model = "delay"`).
    held: std::collections::HashMap<(usize, usize), f64>,
    /// Told the iterations done every [`WATCH_EVERY`]; its error stops the run.
    watch: &'a mut dyn FnMut(u64) -> Result<(), String>,
    /// Why the watcher stopped the run.
    stopped: Option<String>,
}

/// How many iterations pass between two calls of a run's watcher.
pub const WATCH_EVERY: u64 = 1024;

impl<P: Payload> Sim<'_, P> {
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
        self.carry_out(rank, at);
    }

    /// Carry out every output rank `rank`'s machine has queued, at `at`.
    fn carry_out(&mut self, rank: usize, at: f64) {
        while let Some(o) = self.machines[rank].poll() {
            match o {
                Output::Send { to, msg, track } => {
                    let bytes = msg.frame_bytes();
                    let down = msg.head.kind.is_down();
                    for d in to {
                        let sent = track.map(|track| Ev::Sent { rank, track });
                        let arrive = Ev::Arrive { from: rank, to: d, msg: msg.clone() };
                        // a slow link holds the message, behind any it still holds (in order)
                        let delay = self.cores[rank].link_delay(d, &msg.head);
                        let last = self.held.get(&(rank, d)).copied().unwrap_or(f64::NEG_INFINITY);
                        let ready = (at + delay).max(last);
                        if ready > at {
                            self.held.insert((rank, d), ready);
                        }
                        let evs = self.net.submit_held(rank, d, bytes, at, ready.max(at), down, arrive, sent);
                        self.schedule(evs);
                    }
                }
                Output::Compute { t, model, parts, load } => {
                    let core = &mut self.cores[rank];
                    let parts = match core.compute(t, &*model, parts.as_deref()) {
                        Ok(parts) => parts,
                        Err(why) => {
                            self.failure = Some(why.to_string());
                            return;
                        }
                    };
                    let timed = core.timing(t, load, at, at, None);
                    self.q.push(timed.ready_at, Ev::Computed { rank, t, parts });
                    self.machines[rank].handle(&At(at), Input::Timing { t, timing: timed.record });
                }
                Output::Timer { id, at: when } => self.q.push(when, Ev::Timer { rank, id }),
                Output::Deliver { t, total, info } => {
                    if rank == self.plan.log_rank() {
                        self.run.ends.push(at);
                        let done = self.run.ends.len() as u64;
                        if done.is_multiple_of(WATCH_EVERY) {
                            if let Err(e) = (self.watch)(done) {
                                self.stopped = Some(e);
                                return;
                            }
                        }
                    }
                    let next = self.cores[rank].deliver(t, total, info, at);
                    self.machines[rank].handle(&At(at), next);
                }
                Output::Collective { .. } => unreachable!("the simulator runs collectives as rings"),
                Output::Log(mut ev) => {
                    if let Some(logs) = self.logs.as_deref_mut() {
                        if let Event::Shutdown(s) = &mut ev {
                            let n = &self.net;
                            s.traffic = Traffic {
                                sent_msgs: Some(n.sent_msgs[rank]),
                                sent_bytes: Some(n.sent_bytes[rank]),
                                recv_msgs: Some(n.recv_msgs[rank]),
                                recv_bytes: Some(n.recv_bytes[rank]),
                            };
                        }
                        logs[rank].event(&ev);
                    }
                }
                Output::Contribute => match self.cores[rank].contribute() {
                    Ok(input) => self.machines[rank].handle(&At(at), input),
                    Err(why) => {
                        self.failure = Some(why.to_string());
                        return;
                    }
                },
                Output::Gathered { total, secs } => self.cores[rank].gathered(total, secs),
                Output::Done(o) => {
                    self.done[rank] = true;
                    if rank == self.plan.log_rank() {
                        self.run.late = o.late;
                        self.run.latency = o.latency.clone();
                    }
                    if let Some(f) = o.result.as_ref().err().filter(|f| **f != Failure::Aborted) {
                        self.failure.get_or_insert(f.to_string());
                    }
                }
            }
        }
    }

    /// The plan's prelude, from virtual time 0 on a network of its own: every rank's prelude
    /// machine, until all are done. The root's core keeps its seconds for the book.
    fn prelude(&mut self, lens: &[usize]) -> Result<(), SimError> {
        let plan = self.plan;
        let machines: Option<Vec<_>> = (0..plan.ranks).map(|r| outrun_proto::prelude::<P>(plan, r, lens[r])).collect();
        let Some(machines) = machines else { return Ok(()) };
        let loop_machines = std::mem::replace(&mut self.machines, machines);
        for r in 0..plan.ranks {
            self.carry_out(r, 0.0);
        }
        self.events_until_done()?;
        self.machines = loop_machines;
        self.done = vec![false; plan.ranks];
        self.net = Network::of(&plan.network, plan.ranks);
        self.q = Queue::new();
        self.held.clear();
        Ok(())
    }

    /// Process events until every machine is done (or nothing is left to happen).
    fn events_until_done(&mut self) -> Result<(), SimError> {
        if let Some(f) = self.failure.take() {
            return Err(RunFailed(f).into());
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
                return Err(RunFailed(f).into());
            }
            if let Some(why) = self.stopped.take() {
                return Err(SimError::Stopped(why));
            }
            if self.done.iter().all(|&d| d) {
                break;
            }
        }
        Ok(())
    }

    fn execute(mut self) -> Result<Run, SimError> {
        for r in 0..self.plan.ranks {
            if self.plan.delivers(r) {
                let start = self.cores[r].start();
                self.feed(r, 0.0, start);
            }
        }
        self.events_until_done()?;
        let iterations = self.plan.run.iterations;
        if (self.run.ends.len() as u64) < iterations {
            let got = self.run.ends.len();
            let why = format!("simulation stopped after {got} of {iterations} iterations with nothing left to happen");
            return Err(RunFailed(why).into());
        }
        self.run.sent_bytes = self.net.sent_bytes.clone();
        self.run.recv_bytes = self.net.recv_bytes.clone();
        let log = &mut self.cores[self.plan.log_rank()];
        self.run.state = log.state().map(<[f64]>::to_vec);
        let master_bytes = self.run.recv_bytes[self.plan.log_rank()];
        self.run.summary = log
            .finish(0.0, self.run.late, master_bytes, &self.run.latency)
            .map_err(|e| SimError::Io(format!("cannot write the run directory: {e}")))?;
        Ok(self.run)
    }
}

/// Execute `plan` in virtual time with the straggler model `stragglers` (the plan's, or a
/// trial's reseeded copy) and one job per rank (real arithmetic or lengths: `P`). With a `book`
/// the logging rank records every iteration and the run's summary is written; with `logs`,
/// every rank's log records are written to its log in the engine's format as they come.
pub fn execute<P: Payload>(
    plan: &Plan,
    stragglers: &StragglerModel,
    jobs: Vec<Box<dyn Job>>,
    book: Option<(Book, RunInfo)>,
    logs: Option<&mut [Lines]>,
) -> Result<Run, SimError> {
    execute_watched::<P>(plan, stragglers, jobs, book, logs, &mut |_| Ok(()))
}

/// [`execute`], telling `watch` the iterations done every [`WATCH_EVERY`] of them; an error
/// from it stops the run ([`SimError::Stopped`] with its line): how a long simulation shows
/// progress, and is refused once its pace says it would take too long.
pub fn execute_watched<P: Payload>(
    plan: &Plan,
    stragglers: &StragglerModel,
    jobs: Vec<Box<dyn Job>>,
    book: Option<(Book, RunInfo)>,
    logs: Option<&mut [Lines]>,
    watch: &mut dyn FnMut(u64) -> Result<(), String>,
) -> Result<Run, SimError> {
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
    let lens: Vec<usize> = (0..ranks).map(|r| jobs[r].len(r)).collect();
    let machines = (0..ranks).map(|r| outrun_proto::machine::<P>(for_machines, r, lens[r], true)).collect();
    let mut book = book;
    let cores = jobs
        .into_iter()
        .enumerate()
        .map(|(r, job)| {
            let core = Core::new(job, Seat::of(plan, r), stragglers.injector()).with_faults(plan);
            match book.take_if(|_| r == plan.log_rank()) {
                Some((book, info)) => core.with_book(book, info),
                None => core,
            }
        })
        .collect();
    let mut sim = Sim {
        plan,
        cores,
        machines,
        net: Network::of(&plan.network, ranks),
        q: Queue::new(),
        logs,
        done: vec![false; ranks],
        failure: None,
        run: Run::default(),
        held: Default::default(),
        watch,
        stopped: None,
    };
    sim.prelude(&lens)?;
    sim.execute()
}
