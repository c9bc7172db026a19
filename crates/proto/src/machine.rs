//! The interface between node machines and their drivers.
//!
//! A machine is fed [`Input`]s (a message arrived, a computation finished, a timer fired, the
//! root starts or finishes an iteration) and produces [`Output`]s (send, compute, set a timer,
//! deliver a result, log, done) that the driver carries out: the MPI engine in real time, the
//! simulator in virtual time. Time is injected through [`Clock`]; a machine never reads a
//! system clock, never sleeps, never touches MPI or files.

use std::sync::Arc;

use outrun_runlog::event::{ComputeTiming, Event};

use crate::hist::Histogram;
use crate::wire::Msg;

/// The time source a driver lends a machine: seconds on the run's timeline (the master's clock
/// in the engine, virtual time in the simulator).
pub trait Clock {
    /// Now.
    fn now(&self) -> f64;
}

/// A fixed instant (the simulator: virtual time does not move while a machine runs).
#[derive(Clone, Copy, Debug)]
pub struct At(pub f64);

impl Clock for At {
    fn now(&self) -> f64 {
        self.0
    }
}

/// What happened to a node.
#[derive(Debug)]
pub enum Input<P> {
    /// A message from rank `from`.
    Recv {
        /// Sender rank.
        from: usize,
        /// The message.
        msg: Msg<P>,
    },
    /// The computation asked for by [`Output::Compute`] for iteration `t` finished, with the
    /// node's parts.
    Computed {
        /// Iteration.
        t: u64,
        /// One vector per part of the node.
        parts: Vec<P>,
        /// When the parts became ready (the modelled finish time).
        ready: f64,
    },
    /// The driver ran the computation of iteration `t`: its timing record (compute start and
    /// end, modelled target, injected delay…), merged into the node's log record of the
    /// iteration (also when the result is never used, e.g. abandoned).
    Timing {
        /// Iteration.
        t: u64,
        /// Its timing fields.
        timing: ComputeTiming,
    },
    /// The message sent with `track` (see [`Output::Send`]) has left this node.
    Sent {
        /// The tracking id given with the send.
        track: u64,
    },
    /// The timer `id` set by [`Output::Timer`] fired.
    Timer {
        /// Timer id.
        id: u64,
    },
    /// Start iteration `t` with `model` (the root of a tree; every rank of a ring).
    Start {
        /// Iteration.
        t: u64,
        /// The model to broadcast / compute on.
        model: Arc<P>,
    },
    /// End the run: stop cleanly (`None`) or abort with the reason (the rank delivering
    /// results: the root of a tree, every rank of a ring).
    Finish {
        /// Why the run failed, if it did.
        failure: Option<String>,
    },
    /// The driver could not write this node's log (e.g. a full disk): later records are
    /// dropped. The node reports it with its goodbye, so the master says it once for the run.
    LogDropped {
        /// The error.
        error: String,
    },
    /// This rank's contribution to the prelude's sum, asked for by [`Output::Contribute`].
    Contribution {
        /// The values (zeros at the root, whose contribution gives the sum's length).
        value: P,
    },
    /// The collective all-reduce asked for by [`Output::Collective`] completed.
    Reduced {
        /// Iteration.
        t: u64,
        /// The sum over all ranks.
        total: P,
    },
}

/// What a node asks its driver to do.
#[derive(Debug)]
pub enum Output<P> {
    /// Send `msg` to each of `to`.
    Send {
        /// Destination ranks.
        to: Vec<usize>,
        /// The message (one body shared by every destination).
        msg: Msg<P>,
        /// Feed [`Input::Sent`] with this id when the message has left (its send completed; in
        /// the simulator, when its last byte left the sender's port). Multi-round senders pace
        /// their rounds with it.
        track: Option<u64>,
    },
    /// Compute this node's parts for iteration `t` on `model`, then feed [`Input::Computed`]
    /// (when the modelled or injected compute time has passed).
    Compute {
        /// Iteration.
        t: u64,
        /// The model.
        model: Arc<P>,
        /// Only these of the node's parts, in this order (None: all of them).
        parts: Option<Vec<usize>>,
        /// The load (points) of the selected parts, when not the node's whole load: the
        /// modelled and injected compute time scale with it.
        load: Option<usize>,
    },
    /// (Re)arm timer `id`: feed [`Input::Timer`] with `id` at time `at`, replacing any pending
    /// timer with the same id (a machine uses one id per purpose, so drivers hold a few timers;
    /// a firing the machine no longer expects is ignored by it).
    Timer {
        /// Timer id.
        id: u64,
        /// When, on the clock's timeline.
        at: f64,
    },
    /// The result of iteration `t` (the root of a tree; every rank of a ring): apply it, then
    /// feed [`Input::Start`] or [`Input::Finish`].
    Deliver {
        /// Iteration.
        t: u64,
        /// The decoded total.
        total: P,
        /// How it was obtained.
        info: Delivered,
    },
    /// All-reduce (sum) `buf` over every rank with the communication library's collective,
    /// then feed [`Input::Reduced`].
    Collective {
        /// Iteration.
        t: u64,
        /// This rank's contribution.
        buf: P,
    },
    /// A log record (the driver writes it; to a shutdown record it adds its traffic counters).
    Log(Event),
    /// The prelude (a one-time phase before the loop): compute this rank's contribution, then
    /// feed [`Input::Contribution`].
    Contribute,
    /// The prelude's sum of every rank's contribution (the root), gathered `secs` after the
    /// root's own contribution: hand it to the job, and count the seconds in the run's times.
    Gathered {
        /// The sum.
        total: P,
        /// Seconds the phase took at the root.
        secs: f64,
    },
    /// The node is finished; the driver flushes its sends and stops driving it.
    Done(Outcome),
}

/// How a delivered result was obtained.
#[derive(Clone, Debug, PartialEq)]
pub struct Delivered {
    /// Worker ids whose results were used.
    pub used: Vec<usize>,
    /// Decode residual (0 when nothing was decoded).
    pub residual: f64,
    /// Whether the result is exact.
    pub exact: bool,
    /// Fraction of the data covered.
    pub coverage: f64,
    /// Late messages discarded so far by this node.
    pub late_total: u64,
    /// Results received and rejected as corrupted (robust decoding), by the ids `used` has.
    pub rejected: Vec<usize>,
}

/// Why a node stopped with a failure. Every variant but [`Failure::Aborted`] was detected by this
/// node, which prints its one line ([`std::fmt::Display`]).
#[derive(Clone, Debug, PartialEq, thiserror::Error)]
pub enum Failure {
    /// Iteration `iteration` could not be produced: what a parent's rule needed did not arrive
    /// within `run.deadline` (or never can: failed subtrees, results no exclusion makes
    /// consistent, more failed links than tolerated), or its decode would be inexact. `missing`:
    /// the ranks the parent waited for in vain (empty when none is to blame).
    #[error("{message}")]
    Iteration {
        /// The iteration.
        iteration: u64,
        /// Ranks whose results did not come.
        missing: Vec<u32>,
        /// The line.
        message: String,
    },
    /// This rank heard nothing from above (its parent, the master, a helper) for `secs`.
    #[error("{message}")]
    Silent {
        /// This rank.
        rank: usize,
        /// Seconds it waited.
        secs: f64,
        /// The line.
        message: String,
    },
    /// A ring's peer (`worker`) sent nothing of iteration `iteration` within `run.deadline`.
    #[error("{message}")]
    Ring {
        /// The iteration.
        iteration: u64,
        /// The silent worker.
        worker: usize,
        /// The line.
        message: String,
    },
    /// The prelude's contributions of `missing` workers did not arrive (or did not fit).
    #[error("{message}")]
    Prelude {
        /// The workers.
        missing: Vec<usize>,
        /// The line.
        message: String,
    },
    /// The job failed where results are applied (the model diverged, a model's module raised):
    /// the job's line.
    #[error("{0}")]
    Job(String),
    /// Another node detected it and told this one to stop; it printed why.
    #[error("stopped by the master after a failure")]
    Aborted,
}

/// How a node ended.
#[derive(Clone, Debug)]
pub struct Outcome {
    /// Success, or the failure.
    pub result: Result<(), Failure>,
    /// Whether every child said goodbye with every message accounted for (false: the driver
    /// must end the whole job, since a child may still hold requests).
    pub clean: bool,
    /// Late messages received and discarded.
    pub late: u64,
    /// Up messages sent.
    pub up_sent: u64,
    /// Model send→receive latencies of this node's subtree (merged from the children).
    pub latency: Histogram,
    /// Ranks of this node's subtree (itself included) whose logs dropped lines, with the error.
    pub dropped: Vec<(u32, String)>,
    /// Ranks of this node's subtree that never said goodbye (alive but silent: stopped, or stuck),
    /// each with the last iteration it answered (None: none). Their processes cannot end the
    /// MPI job cleanly; the run's results may still be complete.
    pub silent: Vec<(u32, Option<u64>)>,
}

/// Whom a node's loop exchanges messages with: what a driver may open before the timed loop,
/// so that the first iteration does not pay for every pair's first contact (Open MPI's TCP
/// transport connects a pair on its first message; docs/performance.md §21).
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct Contacts {
    /// The ranks this node sends to or receives from in the loop, ascending. The relation is
    /// symmetric: each of them lists this node among its own.
    pub peers: Vec<usize>,
    /// The length of the library all-reduce every rank calls in each iteration, if the loop
    /// has one ([`Output::Collective`]).
    pub collective: Option<usize>,
}

impl Contacts {
    /// Point-to-point peers (sorted, duplicates and `me` removed).
    pub fn peers(me: usize, peers: impl IntoIterator<Item = usize>) -> Self {
        let mut peers: Vec<usize> = peers.into_iter().filter(|&p| p != me).collect();
        peers.sort_unstable();
        peers.dedup();
        Contacts { peers, collective: None }
    }
}

/// A node state machine.
pub trait Machine<P> {
    /// Feed one input; outputs are queued.
    fn handle(&mut self, clock: &dyn Clock, input: Input<P>);
    /// The next queued output.
    fn poll(&mut self) -> Option<Output<P>>;
    /// Whether the node is in a lockstep exchange and expects its next message within
    /// microseconds (drivers may poll eagerly instead of sleeping).
    fn eager(&self) -> bool {
        false
    }
    /// Whom the loop will exchange messages with (nobody, by default).
    fn contacts(&self) -> Contacts {
        Contacts::default()
    }
}
