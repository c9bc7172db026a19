//! The MPI driver: carries out a node machine's outputs in real time. One loop for every
//! pattern and scheme — it knows messages, computations, timers and deliveries, never schemes.
//!
//! - `Send` → encode the frame once (or relay a received frame as it is) and `MPI_Isend` it to
//!   every destination;
//! - `Compute` → run the job's computation now (measured), then hold the parts until the
//!   modelled or injected finish time the core decides (`[timing]`, `[stragglers]`), still
//!   receiving: a newer model supersedes it;
//! - `Timer` → fire at its time on the run's clock;
//! - `Deliver` → the core applies the result (its book records it on the logging rank) and
//!   says whether the next iteration starts or the run finishes;
//! - `Collective` → `MPI_Allreduce`;
//! - `Log` → one JSON line in `rank-<r>.jsonl` (traffic counters added to the shutdown record).
//!
//! Idle ranks wait as `engine.idle` says: where each rank has a core of its own (`auto`'s
//! test), they poll without pause, as MPI's own progress does; where ranks
//! outnumber cores, they poll with a short yield window and then sleep with back-off (bounded
//! by `engine.poll_us`), never past the next timer or finish time, leaving the cores to ranks
//! that compute.

use std::sync::Arc;
use std::time::Duration;

use outrun_driver::Core;
use outrun_proto::{wire, Failure, Frame, Histogram, Input, Machine, Msg, Outcome, Output};
use outrun_runlog::event::{ComputeTiming, Event, Traffic};
use outrun_runlog::Lines;

use crate::clock::Clock;
use crate::transport::{Backoff, Comm, AWAY, PROTO};
use crate::watch::{CollectiveWatch, StallWatch};

/// A computation whose result is held until its finish time.
struct Pending {
    t: u64,
    parts: Vec<Frame>,
    ready_at: f64,
}

/// A message held back on a slow link (`[links] model = "delay"`) until `at`.
struct Held {
    at: f64,
    dest: usize,
    body: HeldBody,
    track: Option<u64>,
}

enum HeldBody {
    Frame(Arc<Frame>),
    Words(Arc<Vec<f64>>, usize),
}

/// What a rank drives with.
pub(crate) struct Driver<'a> {
    pub comm: Comm,
    pub clock: Clock,
    pub log: Lines,
    /// The job, compute times, and (logging rank) the book.
    pub core: Core<'a>,
    poll_us: u64,
    /// How it waits between polls (`engine.idle`, resolved for this host).
    idle: outrun_config::Idle,
    /// The rank's log failure was reported to the machine.
    log_dropped: bool,
    /// A library collective moved data this rank's counters cannot see.
    collective: bool,
    timers: Vec<(u64, f64)>,
    pending: Option<Pending>,
    /// Messages waiting on slow links, in the order they were sent (a link's messages leave in
    /// order: MPI's non-overtaking rule must still see the protocol's order).
    held: Vec<Held>,
    /// Events the machine logged while its outputs were carried out: written after them, so
    /// that what it sends (the next model) leaves before this rank writes.
    logged: Vec<Event>,
    done: Option<Outcome>,
    /// The bound on the library collective's wait (`allreduce`), if this rank's loop has one.
    watch: Option<CollectiveWatch>,
    /// The logging rank's note of a long step after a delivery (`StallWatch::applying`).
    applying: Option<StallWatch>,
    /// Seconds computed since the clock's last reading in the loop (not time away).
    computing: f64,
}

impl<'a> Driver<'a> {
    /// A driver of `core` over `comm`, on `clock`, logging to `log`, waiting between polls as
    /// `idle` says (resolved for this host: [`outrun_config::Idle::resolve`]), sleeping at most
    /// `poll_us` µs where it sleeps.
    pub(crate) fn new(
        comm: Comm,
        clock: Clock,
        log: Lines,
        core: Core<'a>,
        poll_us: u64,
        idle: outrun_config::Idle,
    ) -> Self {
        Driver {
            comm,
            clock,
            log,
            core,
            poll_us,
            idle,
            log_dropped: false,
            collective: false,
            timers: vec![],
            pending: None,
            held: vec![],
            logged: vec![],
            done: None,
            watch: None,
            applying: None,
            computing: 0.0,
        }
    }

    /// Bound this rank's waits in the library collective of its loop (`Output::Collective`)
    /// with `watch` (`crate::watch`).
    pub(crate) fn watch_collectives(&mut self, watch: Option<CollectiveWatch>) {
        self.watch = watch;
    }

    /// Note a step after a delivery that runs long (the logging rank: `StallWatch::applying`).
    pub(crate) fn watch_applying(&mut self, watch: Option<StallWatch>) {
        self.applying = watch;
    }

    /// Feed one input and carry out everything the machine asks for.
    pub(crate) fn feed(&mut self, m: &mut dyn Machine<Frame>, input: Input<Frame>) {
        m.handle(&self.clock, input);
        self.carry_out(m);
    }

    /// Carry out every output the machine has queued (feeding back what they produce), then
    /// write what it logged and the iteration it delivered: a master's next model is on the
    /// wire before its run log is written.
    fn carry_out(&mut self, m: &mut dyn Machine<Frame>) {
        self.carry_out_queued(m);
        for ev in std::mem::take(&mut self.logged) {
            self.core.observe(&ev);
            self.log.event(&ev);
        }
        self.core.settle();
    }

    fn carry_out_queued(&mut self, m: &mut dyn Machine<Frame>) {
        while let Some(o) = m.poll() {
            match o {
                Output::Send { to, msg, track } => self.send(&to, msg, track),
                Output::Compute { t, model, parts, load } => match self.compute(t, &model, parts.as_deref(), load) {
                    Ok(timing) => m.handle(&self.clock, Input::Timing { t, timing }),
                    Err(why) => {
                        // the job cannot compute (a Python model raised): this rank says why
                        // and the job ends, as after any unclean end
                        self.done = Some(failed(why.to_string()));
                        return;
                    }
                },
                Output::Timer { id, at } => {
                    // re-arming replaces: a machine has one timer per purpose
                    self.timers.retain(|&(i, _)| i != id);
                    self.timers.push((id, at));
                }
                Output::Deliver { t, total, info } => {
                    if let Some(w) = &self.applying {
                        w.applying_iteration(t, true);
                    }
                    let next = self.core.deliver(t, total, info, self.clock.now());
                    if let Some(w) = &self.applying {
                        w.applying_iteration(t, false);
                    }
                    m.handle(&self.clock, next);
                }
                Output::Collective { t, buf } => {
                    self.collective = true;
                    let mut total = vec![0.0; buf.as_slice().len()];
                    if let Some(w) = &self.watch {
                        w.enter(t);
                    }
                    self.comm.allreduce_sum(buf.as_slice(), &mut total);
                    if let Some(w) = &self.watch {
                        w.leave();
                    }
                    m.handle(&self.clock, Input::Reduced { t, total: Frame::from_vec(total) });
                }
                Output::Log(mut ev) => {
                    if let Event::Shutdown(s) = &mut ev {
                        // MPI_Allreduce moves its data inside the library: not measured (None)
                        let c = &self.comm;
                        let counted = |x: u64| (!self.collective).then_some(x);
                        s.traffic = Traffic {
                            sent_msgs: counted(c.sent_msgs),
                            sent_bytes: counted(c.sent_bytes),
                            recv_msgs: counted(c.recv_msgs),
                            recv_bytes: counted(c.recv_bytes),
                        };
                    }
                    self.logged.push(ev);
                }
                Output::Contribute => match self.core.contribute() {
                    Ok(input) => m.handle(&self.clock, input),
                    Err(why) => {
                        self.done = Some(failed(why.to_string()));
                        return;
                    }
                },
                Output::Gathered { total, secs } => self.core.gathered(total, secs),
                Output::Done(o) => self.done = Some(o),
            }
        }
    }

    /// Drive a machine that starts on its own (its first outputs are queued: the prelude's)
    /// until it is done. Returns its outcome.
    pub(crate) fn drive(&mut self, m: &mut dyn Machine<Frame>) -> Outcome {
        self.carry_out(m);
        self.run(m)
    }

    fn send(&mut self, to: &[usize], msg: Msg<Frame>, track: Option<u64>) {
        let mut body = msg.body;
        // a vector this node owns: its header goes into the room before its values; a received
        // frame with the same header (a model relayed to the children) is sent as it is
        let framed = body.as_mut().is_some_and(|b| match Arc::get_mut(b) {
            Some(f) => wire::encode_in_place(f, &msg.head).is_some(),
            None => wire::starts_with(b, &msg.head),
        });
        let body = match body {
            Some(body) if framed => HeldBody::Frame(body),
            body => {
                let (words, n) = wire::encode(&msg.head, body.as_deref().map(Frame::as_slice));
                HeldBody::Words(Arc::new(words), n)
            }
        };
        // the clock is read only where a link holds messages (a read costs as much as a small
        // message's bookkeeping)
        let mut now = None;
        for &dest in to {
            let delay = self.core.link_delay(dest, &msg.head);
            let body = match &body {
                HeldBody::Frame(f) => HeldBody::Frame(f.clone()),
                HeldBody::Words(w, n) => HeldBody::Words(w.clone(), *n),
            };
            // behind a message still held on the same link, in order
            let behind = self.held.iter().filter(|h| h.dest == dest).map(|h| h.at).fold(f64::NEG_INFINITY, f64::max);
            if delay <= 0.0 && behind == f64::NEG_INFINITY {
                self.isend(Held { at: 0.0, dest, body, track });
                continue;
            }
            let now = *now.get_or_insert_with(|| self.clock.now());
            let at = (now + delay).max(behind);
            let held = Held { at, dest, body, track };
            if at > now {
                self.held.push(held);
            } else {
                self.isend(held);
            }
        }
    }

    fn isend(&mut self, h: Held) {
        match h.body {
            HeldBody::Frame(f) => self.comm.isend_frame(h.dest, PROTO, f, h.track),
            HeldBody::Words(w, n) => self.comm.isend_words_tracked(h.dest, PROTO, w, n, h.track),
        }
    }

    /// Send the held messages whose time has come (all of them with `all`), in order.
    fn release(&mut self, all: bool, now: f64) -> bool {
        if self.held.is_empty() {
            return false;
        }
        let (due, wait): (Vec<Held>, Vec<Held>) =
            std::mem::take(&mut self.held).into_iter().partition(|h| all || h.at <= now);
        self.held = wait;
        let any = !due.is_empty();
        due.into_iter().for_each(|h| self.isend(h));
        any
    }

    /// Run the computation now; hold its parts until the finish time. Returns the timing record,
    /// or why the job could not compute.
    fn compute(
        &mut self,
        t: u64,
        model: &Frame,
        select: Option<&[usize]>,
        load: Option<usize>,
    ) -> Result<ComputeTiming, outrun_workloads::JobError> {
        let c0 = self.clock.now();
        let parts = self.core.compute(t, model, select)?;
        let c1 = self.clock.now();
        self.computing += c1 - c0;
        let timed = self.core.timing(t, load, c0, c1, Some(c1 - c0));
        self.pending = Some(Pending { t, parts, ready_at: timed.ready_at });
        Ok(timed.record)
    }

    /// Whether the log's failure was given to the machine (so it travelled with the goodbye).
    pub(crate) fn log_reported(&self) -> bool {
        self.log_dropped
    }

    /// Drive `m` until it is done. Returns its outcome.
    pub(crate) fn run(&mut self, m: &mut dyn Machine<Frame>) -> Outcome {
        let (idle, poll_us) = (self.idle, self.poll_us);
        let backoff_of = move |eager: bool| Backoff::of(idle, poll_us, eager);
        let mut backoff = backoff_of(false);
        let mut eager = false;
        // the clock's last reading in the loop, and how long the rank meant to sleep since
        let (mut read, mut sleep) = (self.clock.now(), 0.0);
        loop {
            if let Some(o) = self.done.take() {
                // an unclean end has a silent peer, whose receives may never complete our sends:
                // the job ends by abort, so there is nothing to wait for
                self.flush(if o.clean { Duration::from_secs(30) } else { Duration::from_secs(2) });
                return o;
            }
            // the log file refused a line (a full disk): the machine reports it with its goodbye
            if !self.log_dropped {
                if let Some(e) = self.log.failure() {
                    self.log_dropped = true;
                    let error = e.to_string();
                    self.feed(m, Input::LogDropped { error });
                }
            }
            // timers that fell due while this rank was not polling (descheduled, or computing)
            // fire before what was received meanwhile: a deadline lets in what this rank had
            // taken by then, and the arrival times its log records agree with what it used. A
            // rank that was away itself (stopped and resumed, as the job's teardown resumes a
            // stopped rank before it ends it, or swapped out) does not blame the others for that
            // time: its timers move on by it (a parent whose models wait in the queue is not
            // silent). Away is more than `AWAY` between two readings of the clock beyond the
            // sleep meant and the computation between them
            let start = self.clock.now();
            self.excuse(start - read - sleep);
            let mut progressed = self.fire_timers(m, start);
            if self.done.is_some() {
                continue;
            }
            // at most one message per rank of the communicator in a pass: a stream that never
            // pauses (the results of a scheme that waits for one of many, at one rank per core)
            // would otherwise keep this loop from the rest of the pass, where sends are retired
            // (past `MAX_BEHIND` unretired sends to a peer its messages are dropped, and the job
            // stalled for its deadline), timers fire and a finished computation is delivered
            let mut budget = self.comm.size.max(1);
            while budget > 0 {
                let Some(r) = self.comm.try_recv() else { break };
                budget -= 1;
                progressed = true;
                match wire::decode(r.words, r.bytes) {
                    Ok((head, body)) => {
                        self.feed(m, Input::Recv { from: r.source, msg: Msg { head, body: body.map(Arc::new) } })
                    }
                    Err(e) => {
                        let why = format!("unreadable frame from rank {}: {e}", r.source);
                        self.log.event(&Event::warn(self.clock.now(), why));
                    }
                }
                if self.done.is_some() {
                    break;
                }
            }
            // one reading of the clock serves the rest of the pass (a read costs as much as a
            // small message's bookkeeping; nothing below waits)
            let now = self.clock.now();
            self.excuse(now - start);
            (read, sleep) = (now, 0.0);
            progressed |= self.release(false, now);
            self.comm.progress();
            for dest in self.comm.stalled() {
                let why = format!(
                    "rank {dest} has not taken the last {} messages sent to it (stopped or stuck): further messages to it are dropped until it takes them",
                    self.comm.max_behind()
                );
                self.log.event(&Event::warn(self.clock.now(), why));
            }
            for track in self.comm.completed() {
                self.feed(m, Input::Sent { track });
                progressed = true;
            }
            if self.pending.as_ref().is_some_and(|p| now >= p.ready_at) {
                let p = self.pending.take().expect("checked");
                self.feed(m, Input::Computed { t: p.t, parts: p.parts, ready: now });
                progressed = true;
            }
            // (after progress, the next pass's first step fires the timers)
            if progressed || self.fire_timers(m, now) {
                backoff.reset();
                continue;
            }
            if m.eager() != eager {
                eager = m.eager();
                backoff = backoff_of(eager);
            }
            let next = self
                .pending
                .as_ref()
                .map(|p| p.ready_at)
                .into_iter()
                .chain(self.timers.first().map(|t| t.1))
                .chain(self.held.iter().map(|h| h.at))
                .fold(f64::INFINITY, f64::min);
            let left = (next - now).clamp(0.0, 1.0);
            sleep = left;
            backoff.idle_for(Duration::from_secs_f64(left));
        }
    }

    /// `gap` seconds passed since the loop's last reading of the clock, less the sleep it
    /// meant: beyond the computation between them and [`AWAY`], the rank was away, and its
    /// timers move on by that time.
    fn excuse(&mut self, gap: f64) {
        let away = gap - std::mem::take(&mut self.computing);
        if away > AWAY.as_secs_f64() {
            self.timers.iter_mut().for_each(|t| t.1 += away);
        }
    }

    /// Feed the machine every timer due at `now`, earliest first; whether one fired.
    fn fire_timers(&mut self, m: &mut dyn Machine<Frame>, now: f64) -> bool {
        self.timers.sort_by(|a, b| a.1.total_cmp(&b.1));
        let mut fired = false;
        while self.done.is_none() && self.timers.first().is_some_and(|&(_, at)| at <= now) {
            let (id, _) = self.timers.remove(0);
            self.feed(m, Input::Timer { id });
            fired = true;
        }
        fired
    }

    /// Wait for this rank's sends, still receiving (peers' sends to us must complete too).
    fn flush(&mut self, bound: Duration) {
        // messages still held on slow links leave at their times (a goodbye among them)
        while let Some(at) = self.held.iter().map(|h| h.at).reduce(f64::min) {
            let left = at - self.clock.now();
            if left > 0.0 {
                std::thread::sleep(Duration::from_secs_f64(left.min(bound.as_secs_f64())));
            }
            self.release(left > bound.as_secs_f64(), self.clock.now());
        }
        let mut stray = 0;
        let ok = self.comm.flush_sends(bound, |c| {
            while c.try_recv().is_some() {
                stray += 1;
            }
        });
        if stray > 0 || !ok {
            let why = format!("shutdown: {stray} stray messages received; sends completed: {ok}");
            self.log.event(&Event::warn(self.clock.now(), why));
        }
    }
}

/// The end of a node that failed on its own: it prints `why`, and the unclean end aborts the job.
fn failed(why: String) -> Outcome {
    Outcome {
        result: Err(Failure::Job(why)),
        clean: false,
        late: 0,
        up_sent: 0,
        latency: Histogram::default(),
        dropped: vec![],
        silent: vec![],
    }
}
