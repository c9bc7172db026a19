//! Point-to-point messaging over MPI with owned buffers.
//!
//! - Every message is one frame of bytes (`outrun_proto::wire`), sent as `MPI_UINT8_T` from an
//!   8-byte-aligned buffer, so a received body is used in place.
//! - **Receive** is probe-based: [`Comm::try_recv`] matches whatever protocol message has arrived
//!   (`MPI_Improbe`) and starts its receive into a fresh buffer (`MPI_Imrecv`); it hands over a
//!   message once its receive has completed and every message matched before it from the same
//!   sender has been handed over (a pair's messages stay in order). Several matched messages
//!   are received at once: a message above the library's eager limit moves only once it is
//!   matched, so receiving one at a time (`MPI_Mrecv`) made a master take its workers' uploads
//!   one after another over links that could carry them together (docs/performance.md §24),
//!   and `MPI_Mrecv` returns only with the whole message, so a sender stopped after its message
//!   was matched could hold the receiver inside the call. Nothing is pre-posted, so a late
//!   straggler message is simply received later and discarded by its header; there is no
//!   receive to cancel. [`Comm::flush_sends`] also waits for the receives in progress, and a
//!   receive still incomplete when the communicator goes keeps its buffer.
//! - **Send** is non-blocking: the buffer (shared: one model frame serves every child) is kept
//!   until the request completes; [`Comm::progress`] retires completed sends and
//!   [`Comm::flush_sends`] waits for all of them, so no request is pending at `MPI_Finalize`.
//!   Sends are kept per destination in the order they were posted and tested from the oldest:
//!   a rank that takes nothing (stopped, stuck) costs one test per poll, however many messages
//!   wait for it; and once [`MAX_BEHIND`] (a ring: [`behind_cap`]) wait for it, further messages to it are dropped (and
//!   counted) until it takes them, so its backlog neither grows without bound nor slows the
//!   others.
//! - Sub-communicators ([`Comm::split`]) and broadcast within them ([`Comm::broadcast`]) serve
//!   patterns that talk in groups.

use std::collections::BTreeSet;
use std::os::raw::c_int;
use std::sync::Arc;
use std::time::{Duration, Instant};

use mpi::ffi;
use mpi::raw::AsRaw;
use mpi::topology::SimpleCommunicator;
use mpi::traits::Communicator;
use outrun_proto::Frame;

/// A gap between two polls this long, beyond any sleep or computation between them, means the
/// rank itself was away (stopped and resumed, swapped out): its waits do not blame the others
/// for that time.
pub(crate) const AWAY: std::time::Duration = std::time::Duration::from_secs(1);

/// Tag of every protocol message (one tag: MPI delivers a pair's messages in order).
pub const PROTO: i32 = 7;
/// Tag of clock synchronisation.
pub const CLOCK: i32 = 3;
/// Tag of the setup and teardown exchanges through rank 0 ([`Comm::star_exchange`]).
const STAR: i32 = 5;
/// Tag of the contact exchange before the loop ([`Comm::contact`]).
const CONTACT: i32 = 9;
/// Tag of rank 1's question to rank 0 in setup, whether it is there ([`RootWatch`]).
const STAR_PROBE: i32 = 11;
/// Tag of rank 0's answer to a [`STAR_PROBE`].
const STAR_ALIVE: i32 = 13;
/// How long rank 1 hears nothing from rank 0 in setup before it asks whether rank 0 is there
/// (and again that long after each answer).
const PROBE_AFTER: Duration = Duration::from_secs(2);
/// How long rank 0 waits in a [`Comm::star_exchange`] before it says which ranks it waits for
/// (then again after three times as long, and so on): a rank stuck in its setup — a data file
/// on a slow disk, a Python module that never returns — holds every other rank until the
/// launch's bound, and the line names it meanwhile.
pub const SAY_WAITING_AFTER: Duration = Duration::from_secs(10);
/// Longest sleep between polls while waiting in a [`Comm::star_exchange`], µs.
const STAR_SLEEP_US: u64 = 1000;

/// A received message.
#[derive(Debug)]
pub struct Received {
    /// Sender rank.
    pub source: usize,
    /// The frame, in 8-byte words.
    pub words: Vec<f64>,
    /// Its length in bytes.
    pub bytes: usize,
}

/// What keeps a send buffer alive (held, never read).
#[allow(dead_code)]
enum Keep {
    Words(Arc<Vec<f64>>),
    Frame(Arc<Frame>),
}

struct InFlight {
    req: ffi::MPI_Request,
    _keep: Keep,
    track: Option<u64>,
}

/// A matched message being received (`MPI_Imrecv` into `words`).
struct Receiving {
    req: ffi::MPI_Request,
    source: usize,
    words: Vec<f64>,
    bytes: usize,
    complete: bool,
}

impl Receiving {
    /// Whether the receive has completed (tested once more if it had not).
    fn test(&mut self) -> bool {
        if !self.complete {
            let mut flag: c_int = 0;
            let rc = unsafe { ffi::MPI_Test(&mut self.req, &mut flag, ffi::RSMPI_STATUS_IGNORE) };
            check(rc, "MPI_Test");
            self.complete = flag != 0;
        }
        self.complete
    }

    fn into_received(self) -> Received {
        Received { source: self.source, words: self.words, bytes: self.bytes }
    }
}

/// Most sends a destination may leave incomplete: beyond it, new messages to it are dropped
/// until it takes the oldest. A live peer takes a message within an iteration or two; this many
/// outstanding means it has stopped (or is stuck), and the protocol treats it as silent. A ring
/// allows more ([`behind_cap`]).
pub const MAX_BEHIND: usize = 64;

/// The most sends a destination may leave incomplete in a pattern of `ranks` ranks: a ring's
/// rank may run up to N − 1 steps ahead of its right neighbour (the rest of the ring is the
/// path by which it depends on it), and a peer may be an iteration ahead besides, so a ring
/// allows 2N per lane (at N = 156 on 2 cores a live neighbour fell 64 behind, its messages were
/// dropped and the ring stalled for `run.deadline`); a long vector's lanes
/// ([`outrun_proto::MAX_LANES`]) each run their own steps, and their messages are as much
/// shorter; other patterns [`MAX_BEHIND`].
pub fn behind_cap(ring: bool, ranks: usize) -> usize {
    if ring {
        MAX_BEHIND.max(2 * ranks * outrun_proto::MAX_LANES)
    } else {
        MAX_BEHIND
    }
}

/// A communicator plus the engine's outstanding sends and traffic counters.
pub struct Comm {
    raw: ffi::MPI_Comm,
    /// This process's rank.
    pub rank: usize,
    /// Number of ranks.
    pub size: usize,
    /// Sends in flight per destination, oldest first (a pair's messages are matched in order).
    sends: Vec<std::collections::VecDeque<InFlight>>,
    /// Most sends in flight per destination before new ones are dropped ([`behind_cap`]).
    max_behind: usize,
    /// Messages dropped per destination since it fell [`Comm::max_behind`] behind (reported once
    /// per stall by [`Comm::stalled`]).
    dropped: Vec<u64>,
    /// Destinations that fell behind since the last [`Comm::stalled`].
    newly_stalled: Vec<usize>,
    /// Tracked sends that completed since the last [`Comm::completed`].
    done: Vec<u64>,
    /// Protocol messages matched and being received (or received and not yet handed over),
    /// in the order they were matched.
    receiving: std::collections::VecDeque<Receiving>,
    /// Per source, whether a scan of `receiving` has passed a message of it (reused).
    passed: Vec<bool>,
    /// Messages sent.
    pub sent_msgs: u64,
    /// Bytes sent.
    pub sent_bytes: u64,
    /// Messages received.
    pub recv_msgs: u64,
    /// Bytes received.
    pub recv_bytes: u64,
    /// Whether the run is still in setup (before the loop): rank 0 answers rank 1's questions
    /// whether it is there ([`RootWatch`]) while it waits.
    in_setup: bool,
}

fn check(code: c_int, what: &str) {
    // MPI_ERRORS_ARE_FATAL is the default handler: a failing call aborts before returning, so a
    // non-zero code here means the handler was changed; treat it as a bug.
    assert_eq!(code, 0, "{what} failed with MPI error code {code}");
}

fn bytes_type() -> ffi::MPI_Datatype {
    // SAFETY: reading an MPI constant after MPI_Init.
    unsafe { ffi::RSMPI_UINT8_T }
}

impl Comm {
    /// The world communicator.
    pub fn new(world: &SimpleCommunicator) -> Self {
        Self::from_raw(world.as_raw(), world.rank() as usize, world.size() as usize)
    }

    /// The world communicator for a run's setup: until [`Comm::end_setup`], rank 1 asks rank 0
    /// whether it is there when it waits for it, and rank 0 answers (`RootWatch`).
    pub fn for_setup(world: &SimpleCommunicator) -> Self {
        let mut comm = Self::new(world);
        comm.in_setup = true;
        comm
    }

    /// The loop starts: from now on rank 0 drives the run and answers no questions whether it
    /// is there, and rank 1 asks none (call on every rank, after the last exchange of setup).
    pub fn end_setup(&mut self) {
        self.in_setup = false;
    }

    fn from_raw(raw: ffi::MPI_Comm, rank: usize, size: usize) -> Self {
        Comm {
            raw,
            rank,
            size,
            sends: (0..size).map(|_| std::collections::VecDeque::new()).collect(),
            max_behind: MAX_BEHIND,
            dropped: vec![0; size],
            newly_stalled: vec![],
            done: Vec::new(),
            receiving: std::collections::VecDeque::new(),
            passed: vec![false; size],
            sent_msgs: 0,
            sent_bytes: 0,
            recv_msgs: 0,
            recv_bytes: 0,
            in_setup: false,
        }
    }

    fn isend_raw(&mut self, dest: usize, tag: i32, ptr: *const f64, nbytes: usize, keep: Keep, track: Option<u64>) {
        // at the cap, first retire what has completed: a full count must mean untaken messages,
        // not a sender that has not tested its sends lately
        if self.sends[dest].len() >= self.max_behind && self.retire(dest) >= self.max_behind {
            // the destination takes nothing: drop the message (the protocol has it as silent)
            if self.dropped[dest] == 0 {
                self.newly_stalled.push(dest);
            }
            self.dropped[dest] += 1;
            return;
        }
        self.dropped[dest] = 0;
        let mut req: ffi::MPI_Request = unsafe { ffi::RSMPI_REQUEST_NULL };
        let count = c_int::try_from(nbytes).expect("message larger than 2 GiB");
        // A tracked send is synchronous (MPI_Issend): it completes once the receiver has matched
        // it, not when the bytes reach a socket buffer, so a node that sends its next round only
        // then has at most one round on the way and hears a stop before pushing more (with
        // MPI_Isend, eager sends complete at once and every round would be queued on the link).
        // SAFETY: the buffer is kept alive by `keep` in `self.sends` until MPI reports completion.
        let rc = unsafe {
            if track.is_some() {
                ffi::MPI_Issend(ptr as *const _, count, bytes_type(), dest as c_int, tag, self.raw, &mut req)
            } else {
                ffi::MPI_Isend(ptr as *const _, count, bytes_type(), dest as c_int, tag, self.raw, &mut req)
            }
        };
        check(rc, "MPI_Isend");
        self.sent_msgs += 1;
        self.sent_bytes += nbytes as u64;
        self.sends[dest].push_back(InFlight { req, _keep: keep, track });
    }

    /// Start sending the first `nbytes` bytes of `words` to `dest`.
    pub fn isend_words(&mut self, dest: usize, tag: i32, words: Arc<Vec<f64>>, nbytes: usize) {
        assert!(nbytes <= words.len() * 8);
        let ptr = words.as_ptr();
        self.isend_raw(dest, tag, ptr, nbytes, Keep::Words(words), None);
    }

    /// Start sending a whole frame (header written in place, or a received frame relayed);
    /// with `track`, the send is synchronous and [`Comm::completed`] reports it once the
    /// receiver has matched it.
    pub fn isend_frame(&mut self, dest: usize, tag: i32, frame: Arc<Frame>, track: Option<u64>) {
        let w = frame.words();
        let (ptr, nbytes) = (w.as_ptr(), w.len() * 8);
        self.isend_raw(dest, tag, ptr, nbytes, Keep::Frame(frame), track);
    }

    /// Start sending the first `nbytes` bytes of `words`, reported by [`Comm::completed`] when done.
    pub fn isend_words_tracked(
        &mut self,
        dest: usize,
        tag: i32,
        words: Arc<Vec<f64>>,
        nbytes: usize,
        track: Option<u64>,
    ) {
        assert!(nbytes <= words.len() * 8);
        let ptr = words.as_ptr();
        self.isend_raw(dest, tag, ptr, nbytes, Keep::Words(words), track);
    }

    /// Tracked sends that completed since the last call.
    pub fn completed(&mut self) -> Vec<u64> {
        std::mem::take(&mut self.done)
    }

    /// Retire completed sends, each destination's from its oldest; returns how many are still
    /// in flight.
    pub fn progress(&mut self) -> usize {
        (0..self.sends.len()).map(|dest| self.retire(dest)).sum()
    }

    /// Retire `dest`'s completed sends from its oldest; returns how many are still in flight.
    fn retire(&mut self, dest: usize) -> usize {
        let queue = &mut self.sends[dest];
        while let Some(s) = queue.front_mut() {
            let mut flag: c_int = 0;
            let rc = unsafe { ffi::MPI_Test(&mut s.req, &mut flag, ffi::RSMPI_STATUS_IGNORE) };
            check(rc, "MPI_Test");
            if flag == 0 {
                break;
            }
            self.done.extend(s.track);
            queue.pop_front();
        }
        queue.len()
    }

    /// Allow `cap` incomplete sends per destination before dropping ([`behind_cap`]).
    pub fn set_max_behind(&mut self, cap: usize) {
        self.max_behind = cap.max(1);
    }

    /// The incomplete sends a destination may leave before new ones are dropped.
    pub fn max_behind(&self) -> usize {
        self.max_behind
    }

    /// Destinations that fell [`Comm::max_behind`] messages behind since the last call (their
    /// newer messages are being dropped), once per stall.
    pub fn stalled(&mut self) -> Vec<usize> {
        std::mem::take(&mut self.newly_stalled)
    }

    /// Messages dropped for `dest` since it fell behind.
    pub fn dropped(&self, dest: usize) -> u64 {
        self.dropped[dest]
    }

    /// Receive one protocol message that has arrived, if any (any source). Messages of other
    /// tags stay for their own receives: a rank that finished early may already be in the
    /// closing exchange through rank 0 while rank 0 still drives its run.
    pub fn try_recv(&mut self) -> Option<Received> {
        // match what has arrived, at most one message per rank in a call (a stream that never
        // pauses cannot keep this here); each matched message's receive proceeds from then on
        for _ in 0..self.size.max(1) {
            let Some(mut r) = self.start_recv(unsafe { ffi::RSMPI_ANY_SOURCE }, PROTO) else { break };
            // the common case (a message that was already whole, nothing else in progress)
            // is handed over at once
            if self.receiving.is_empty() && r.test() {
                return Some(r.into_received());
            }
            self.receiving.push_back(r);
        }
        self.take_received()
    }

    /// The oldest received message that no earlier message of its sender precedes; tests every
    /// receive in progress (which moves them all on).
    fn take_received(&mut self) -> Option<Received> {
        let mut found = None;
        let mut passed = std::mem::take(&mut self.passed);
        for (i, r) in self.receiving.iter_mut().enumerate() {
            let first = !std::mem::replace(&mut passed[r.source], true);
            if r.test() && first && found.is_none() {
                found = Some(i);
            }
        }
        for r in &self.receiving {
            passed[r.source] = false;
        }
        self.passed = passed;
        found.and_then(|i| self.receiving.remove(i)).map(Receiving::into_received)
    }

    /// Receives in progress that have not completed (tested now).
    fn incomplete_receives(&mut self) -> usize {
        self.receiving.iter_mut().map(|r| usize::from(!r.test())).sum()
    }

    /// Match one arrived message of `tag` from `source` (or any) and start receiving it.
    fn start_recv(&mut self, source: c_int, tag: c_int) -> Option<Receiving> {
        let mut flag: c_int = 0;
        let mut message: ffi::MPI_Message = unsafe { ffi::RSMPI_MESSAGE_NULL };
        let mut status = std::mem::MaybeUninit::<ffi::MPI_Status>::uninit();
        let rc = unsafe { ffi::MPI_Improbe(source, tag, self.raw, &mut flag, &mut message, status.as_mut_ptr()) };
        check(rc, "MPI_Improbe");
        if flag == 0 {
            return None;
        }
        let status = unsafe { status.assume_init() };
        let mut count: c_int = 0;
        let rc = unsafe { ffi::MPI_Get_count(&status, bytes_type(), &mut count) };
        check(rc, "MPI_Get_count");
        let nbytes = count as usize;
        let n = nbytes.div_ceil(8);
        let mut words: Vec<f64> = outrun_proto::Frame::storage(n);
        let mut req: ffi::MPI_Request = unsafe { ffi::RSMPI_REQUEST_NULL };
        // SAFETY: MPI writes exactly `count` bytes into the buffer by the time the request
        // completes; the length is set now and the last word zeroed first, so a partial word has
        // no uninitialised bytes and nothing reads the rest before completion (the buffer's heap
        // storage does not move with the Vec, and is kept until the request completes).
        let rc = unsafe {
            if n > 0 {
                words.as_mut_ptr().add(n - 1).write(0.0);
            }
            words.set_len(n);
            ffi::MPI_Imrecv(words.as_mut_ptr() as *mut _, count, bytes_type(), &mut message, &mut req)
        };
        check(rc, "MPI_Imrecv");
        self.recv_msgs += 1;
        self.recv_bytes += nbytes as u64;
        Some(Receiving { req, source: status.MPI_SOURCE as usize, words, bytes: nbytes, complete: false })
    }

    /// Receive one arrived message of `tag` from `source` (or any), waiting for its transfer
    /// (setup and teardown exchanges: small messages of their own tags).
    fn recv_matching(&mut self, source: c_int, tag: c_int) -> Option<Received> {
        let mut r = self.start_recv(source, tag)?;
        let rc = unsafe { ffi::MPI_Wait(&mut r.req, ffi::RSMPI_STATUS_IGNORE) };
        check(rc, "MPI_Wait");
        r.complete = true;
        Some(r.into_received())
    }

    /// Exchange one small message with each of `peers` (each of them calls this with this rank
    /// among its own), waiting at most `bound` for theirs: every link the loop will use carries
    /// a message before the loop starts, so its first iteration does not pay for first contacts
    /// (Open MPI's TCP transport connects a pair on its first message). Returns the peers not
    /// heard from within the bound (the loop waits for them as for any straggler).
    pub fn contact(&mut self, peers: &[usize], bound: Duration) -> Vec<usize> {
        let end = Instant::now() + bound;
        let one = Arc::new(vec![0.0]);
        for &p in peers {
            self.isend_words(p, CONTACT, one.clone(), 8);
        }
        let missing = self.receive_from_each(
            CONTACT,
            peers.iter().copied().collect(),
            Some(end),
            STAR_SLEEP_US,
            |_| {},
            |_, _| {},
            None,
        );
        self.flush_sends(end.saturating_duration_since(Instant::now()), |_| {});
        missing.into_iter().collect()
    }

    /// Blocking receive of one message of `tag` from `source`, sleeping up to `max_us` µs
    /// between polls (setup and teardown only), while the ranks do `step` (the step `source`
    /// has not done). Rank 0 names `source` and the step on stderr after [`SAY_WAITING_AFTER`]
    /// and at every tripling of the wait, as in [`Comm::star_exchange`]; rank 1, waiting for
    /// rank 0 in setup, says when rank 0 stops answering (`RootWatch`).
    pub fn recv_blocking(&mut self, source: usize, tag: i32, max_us: u64, step: &str) -> Received {
        let mut m = None;
        let mut say = (self.rank == 0).then(|| say_waiting(self.size, step));
        let waiting = |waited, missing: &BTreeSet<usize>| {
            if let Some(say) = say.as_mut() {
                say(waited, missing)
            }
        };
        let mut watch = (self.rank == 1 && source == 0 && self.in_setup).then(|| RootWatch::new(step));
        self.receive_from_each(tag, [source].into(), None, max_us, |r| m = Some(r), waiting, watch.as_mut());
        m.expect("an unbounded wait ends with the message")
    }

    /// Receive one message of `tag` from each rank of `from`, sleeping up to `max_us` µs
    /// between polls, until all came or `end` (if any) passed: each goes to `got`; `waiting`
    /// hears, at every poll that found nothing, how long this has waited and who is missing;
    /// so does `watch`. In setup, those polls also answer rank 1's questions whether this rank
    /// (rank 0) is there. Returns who is missing.
    #[allow(clippy::too_many_arguments)]
    fn receive_from_each(
        &mut self,
        tag: i32,
        mut from: BTreeSet<usize>,
        end: Option<Instant>,
        max_us: u64,
        mut got: impl FnMut(Received),
        mut waiting: impl FnMut(Duration, &BTreeSet<usize>),
        mut watch: Option<&mut RootWatch<'_>>,
    ) -> BTreeSet<usize> {
        let started = Instant::now();
        let mut backoff = Backoff::new(max_us);
        while !from.is_empty() {
            let left = end.map(|e| e.saturating_duration_since(Instant::now()));
            if left == Some(Duration::ZERO) {
                break;
            }
            // one rank: receive only its message (others of `tag` stay queued for their turn)
            let source = match from.first() {
                Some(&only) if from.len() == 1 => only as c_int,
                _ => unsafe { ffi::RSMPI_ANY_SOURCE },
            };
            if let Some(m) = self.recv_matching(source, tag) {
                if from.remove(&m.source) {
                    got(m);
                }
                backoff.reset();
                continue;
            }
            self.progress();
            waiting(started.elapsed(), &from);
            if self.in_setup {
                self.answer_probes();
            }
            if let Some(w) = watch.as_deref_mut() {
                w.poll(self);
            }
            match left {
                Some(left) => backoff.idle_for(left),
                None => backoff.idle(),
            }
        }
        from
    }

    /// Answer every question whether this rank is there that has come ([`RootWatch`]).
    fn answer_probes(&mut self) {
        while let Some(m) = self.recv_matching(unsafe { ffi::RSMPI_ANY_SOURCE }, STAR_PROBE) {
            self.isend_words(m.source, STAR_ALIVE, Arc::new(vec![0.0]), 8);
        }
    }

    /// Wait until every send and every receive in progress has completed, polling `on_idle`
    /// (which should keep receiving, so that peers' sends to us complete too). Returns false on
    /// timeout.
    pub fn flush_sends(&mut self, timeout: Duration, mut on_idle: impl FnMut(&mut Comm)) -> bool {
        let end = Instant::now() + timeout;
        let mut backoff = Backoff::new(200);
        while self.progress() + self.incomplete_receives() > 0 {
            if Instant::now() > end {
                return false;
            }
            on_idle(self);
            backoff.idle();
        }
        true
    }

    /// Wait, sleeping between polls, until every rank has called this too
    /// ([`Comm::star_exchange`]). Also the end of every run: ranks that are done wait here rather
    /// than in `MPI_Finalize`. When a rank is alive but silent (stopped, stuck) the run ends by
    /// `MPI_Abort` from the rank that noticed; Open MPI's `mpirun` (4.1) then tears the job down
    /// reliably only if no rank is inside `MPI_Finalize`'s fence (measured: with ranks in the
    /// fence it crashed in `PMIx_server_finalize` in 2 of 6 such ends, or hung; with ranks in a
    /// barrier, 10 of 10 ended cleanly).
    pub fn barrier(&mut self, what: &str) {
        self.star_exchange(what, &[], |_| Answers::All(Vec::new()));
    }

    /// A collective through rank 0 over point-to-point messages, waited for by sleeping polls:
    /// every rank sends `mine` to rank 0, which answers each rank `reply(all)[rank]` (`all` in
    /// rank order); returns this rank's answer. Setup and teardown use it instead of the
    /// library's blocking collectives, for two reasons measured with 85 ranks on 2 cores (the
    /// emulated cluster, docs/clusters.md): a rank blocked in an Open MPI collective spins
    /// (`sched_yield` in a loop), so 84 idle ranks starved the one doing the work (rank 0's clock
    /// synchronisation took 36 s); and the library's tree and dissemination algorithms open TCP
    /// connections between every pair they pair up, where this uses only each rank's link to
    /// rank 0, which every pattern opens anyway.
    ///
    /// `what` is the step every rank does before it calls this ("load its share of the job"):
    /// rank 0 names it, and the ranks it still waits for, after [`SAY_WAITING_AFTER`] and at
    /// every tripling of the wait, on stderr.
    pub fn star_exchange(&mut self, what: &str, mine: &[u8], reply: impl FnOnce(Vec<Vec<u8>>) -> Answers) -> Vec<u8> {
        if self.rank != 0 {
            let (words, n) = to_words(mine);
            self.isend_words(0, STAR, Arc::new(words), n);
            let m = self.recv_blocking(0, STAR, STAR_SLEEP_US, what);
            self.flush_sends(Duration::from_secs(30), |_| {});
            return from_words(&m);
        }
        let mut all = vec![Vec::new(); self.size];
        all[0] = mine.to_vec();
        let say = say_waiting(self.size, what);
        self.receive_from_each(
            STAR,
            (1..self.size).collect(),
            None,
            STAR_SLEEP_US,
            |m| all[m.source] = from_words(&m),
            say,
            None,
        );
        let own = match reply(all) {
            Answers::All(bytes) => {
                // one buffer serves every rank
                let (words, n) = to_words(&bytes);
                let words = Arc::new(words);
                for r in 1..self.size {
                    self.isend_words(r, STAR, words.clone(), n);
                }
                bytes
            }
            Answers::Each(mut each) => {
                assert_eq!(each.len(), self.size, "one answer per rank");
                for (r, a) in each.iter().enumerate().skip(1) {
                    let (words, n) = to_words(a);
                    self.isend_words(r, STAR, Arc::new(words), n);
                }
                std::mem::take(&mut each[0])
            }
        };
        self.flush_sends(Duration::from_secs(30), |_| {});
        own
    }

    /// The largest of every rank's `v` ([`Comm::star_exchange`], after `what`).
    pub fn star_max(&mut self, what: &str, v: i32) -> i32 {
        let out = self.star_exchange(what, &v.to_le_bytes(), |all| {
            let max = all.iter().map(|b| i32::from_le_bytes(b[..4].try_into().expect("4 bytes"))).max();
            Answers::All(max.expect("rank 0 at least").to_le_bytes().to_vec())
        });
        i32::from_le_bytes(out[..4].try_into().expect("4 bytes"))
    }

    /// Every rank's `v`, in rank order, on every rank ([`Comm::star_exchange`], after `what`).
    pub fn star_gather_u64(&mut self, what: &str, v: u64) -> Vec<u64> {
        let out = self.star_exchange(what, &v.to_le_bytes(), |all| Answers::All(all.concat()));
        out.chunks_exact(8).map(|b| u64::from_le_bytes(b.try_into().expect("8 bytes"))).collect()
    }

    /// Rank 0's `bytes` on every rank ([`Comm::star_exchange`], after `what`; the others pass
    /// None).
    pub fn star_broadcast(&mut self, what: &str, bytes: Option<Vec<u8>>) -> Vec<u8> {
        self.star_exchange(what, &[], |_| Answers::All(bytes.unwrap_or_default()))
    }

    /// Print `line` on stderr, then terminate every rank of the job. The line goes out in one
    /// write: printed piece by piece (as `eprintln!` formats), mpirun's own abort banner could
    /// land inside it.
    pub fn abort_saying(&self, code: i32, line: &str) -> ! {
        use std::io::Write;
        let _ = std::io::stderr().lock().write_all(format!("{line}\n").as_bytes());
        self.abort(code)
    }

    /// Terminate every rank of the job (last resort when a clean shutdown is impossible).
    pub fn abort(&self, code: i32) -> ! {
        unsafe { ffi::MPI_Abort(self.raw, code) };
        std::process::exit(code)
    }

    /// `MPI_Allreduce` (sum) of `send` into `recv` (same length).
    pub fn allreduce_sum(&mut self, send: &[f64], recv: &mut [f64]) {
        assert_eq!(send.len(), recv.len());
        let n = c_int::try_from(send.len()).expect("vector too large");
        let rc = unsafe {
            ffi::MPI_Allreduce(
                send.as_ptr() as *const _,
                recv.as_mut_ptr() as *mut _,
                n,
                ffi::RSMPI_DOUBLE,
                ffi::RSMPI_SUM,
                self.raw,
            )
        };
        check(rc, "MPI_Allreduce");
    }

    /// Collective over this communicator: the sub-communicator of the ranks that gave the same
    /// `color` (None: not a member of any), ordered by `key`.
    pub fn split(&self, color: Option<i32>, key: i32) -> Option<Comm> {
        let mut out: ffi::MPI_Comm = unsafe { ffi::RSMPI_COMM_NULL };
        let c = color.unwrap_or(unsafe { ffi::RSMPI_UNDEFINED });
        let rc = unsafe { ffi::MPI_Comm_split(self.raw, c, key, &mut out) };
        check(rc, "MPI_Comm_split");
        color?;
        let (mut rank, mut size): (c_int, c_int) = (0, 0);
        unsafe {
            check(ffi::MPI_Comm_rank(out, &mut rank), "MPI_Comm_rank");
            check(ffi::MPI_Comm_size(out, &mut size), "MPI_Comm_size");
        }
        Some(Comm::from_raw(out, rank as usize, size as usize))
    }

    /// The ranks on this rank's host and the cores they may run on between them, `host` being
    /// what identifies the machine (`machine()`: its kernel's boot id; collective, through rank 0). The cores are the union of those ranks' CPU
    /// affinity masks, so ranks bound one per core count as many cores as ranks, and unbound
    /// ranks as many as the host lets them use; a cgroup CPU quota below that caps it.
    pub fn host_share(&mut self, host: &str) -> (usize, usize) {
        let cpus = affinity();
        let quota = std::thread::available_parallelism().map_or(1, |c| c.get());
        // the host name's length, the name, this rank's quota where it is below its mask
        // (0: none), then its CPUs
        let mut mine = (host.len() as u32).to_le_bytes().to_vec();
        mine.extend_from_slice(host.as_bytes());
        let capped = if quota < cpus.len() { quota as u32 } else { 0 };
        mine.extend_from_slice(&capped.to_le_bytes());
        cpus.iter().for_each(|c| mine.extend_from_slice(&c.to_le_bytes()));
        let out = self.star_exchange("count the ranks on its host", &mine, |all| {
            Answers::Each(
                host_shares(&all)
                    .into_iter()
                    .map(|(local, cores)| [(local as u64).to_le_bytes(), (cores as u64).to_le_bytes()].concat())
                    .collect(),
            )
        });
        let word = |i: usize| u64::from_le_bytes(out[8 * i..8 * i + 8].try_into().expect("8 bytes")) as usize;
        (word(0), word(1))
    }

    /// Broadcast `buf` from `root` to every rank of this communicator (collective).
    pub fn broadcast(&mut self, root: usize, buf: &mut [f64]) {
        let n = c_int::try_from(buf.len()).expect("vector too large");
        let rc = unsafe { ffi::MPI_Bcast(buf.as_mut_ptr() as *mut _, n, ffi::RSMPI_DOUBLE, root as c_int, self.raw) };
        check(rc, "MPI_Bcast");
        if root == self.rank {
            self.sent_bytes += 8 * buf.len() as u64;
        } else {
            self.recv_bytes += 8 * buf.len() as u64;
        }
    }

    /// Release a sub-communicator (collective over its members).
    pub fn free(mut self) {
        let _ = self.flush_sends(Duration::from_secs(60), |_| {});
        let rc = unsafe { ffi::MPI_Comm_free(&mut self.raw) };
        check(rc, "MPI_Comm_free");
    }
}

impl Drop for Comm {
    fn drop(&mut self) {
        // a receive still in progress may yet write into its buffer: keep the buffer (the
        // process is ending; a flushed communicator has none)
        for r in self.receiving.drain(..) {
            if !r.complete {
                std::mem::forget(r.words);
            }
        }
    }
}

/// What rank 0 answers in a [`Comm::star_exchange`].
pub enum Answers {
    /// The same bytes to every rank.
    All(Vec<u8>),
    /// Bytes for each rank, in rank order.
    Each(Vec<Vec<u8>>),
}

/// `bytes` in 8-byte words (the last one zero-padded) and their count in bytes.
fn to_words(bytes: &[u8]) -> (Vec<f64>, usize) {
    let mut words = vec![0.0f64; bytes.len().div_ceil(8)];
    for (w, chunk) in words.iter_mut().zip(bytes.chunks(8)) {
        let mut b = [0u8; 8];
        b[..chunk.len()].copy_from_slice(chunk);
        *w = f64::from_ne_bytes(b);
    }
    (words, bytes.len())
}

/// What rank 0 does while it waits for ranks to do `what` in setup or teardown: after
/// [`SAY_WAITING_AFTER`] and at every tripling of the wait, say which of the `size` ranks it
/// still waits for.
fn say_waiting(size: usize, what: &str) -> impl FnMut(Duration, &BTreeSet<usize>) + '_ {
    let mut due = Tripling::default();
    move |waited, missing| {
        if due.due(waited) {
            eprintln!("{}", waiting_line(waited, missing, size, what));
        }
    }
}

/// How rank 1 tells, while it waits for rank 0 in setup, a rank 0 that is stopped or busy in a
/// step of its own from one that waits for other ranks (and names them): rank 0 answers
/// questions whether it is there ([`STAR_PROBE`]) from every wait of setup, so rank 1 asks
/// after [`PROBE_AFTER`] without word, and once it has heard nothing for [`SAY_WAITING_AFTER`]
/// says so, then at every tripling of the silence. Without it a stopped rank 0 held every rank
/// silently until the launch's bound (120 s + iterations × run.deadline). One rank asks, so the
/// run gets one line.
struct RootWatch<'a> {
    step: &'a str,
    /// When rank 0 was last heard from (the wait's start, or an answer), moved on by any time
    /// this rank was itself away ([`AWAY`]).
    heard: Instant,
    last_poll: Instant,
    asked: bool,
    due: Tripling,
}

impl<'a> RootWatch<'a> {
    fn new(step: &'a str) -> Self {
        let now = Instant::now();
        RootWatch { step, heard: now, last_poll: now, asked: false, due: Tripling::default() }
    }

    /// One poll of a wait for rank 0 that found nothing: take rank 0's answers, ask again or
    /// say so when due.
    fn poll(&mut self, comm: &mut Comm) {
        let now = Instant::now();
        let gap = now.saturating_duration_since(self.last_poll);
        self.last_poll = now;
        if gap > AWAY {
            // this rank was stopped or swapped out: rank 0 is not to blame for that time
            self.heard += gap;
        }
        while comm.recv_matching(0, STAR_ALIVE).is_some() {
            (self.heard, self.asked, self.due) = (now, false, Tripling::default());
        }
        let silent = now.saturating_duration_since(self.heard);
        if !self.asked && silent >= PROBE_AFTER {
            comm.isend_words(0, STAR_PROBE, Arc::new(vec![0.0]), 8);
            self.asked = true;
        }
        if self.due.due(silent) {
            eprintln!("{}", silent_root_line(silent, self.step));
        }
    }
}

/// Rank 1's line about a rank 0 that has not answered in setup for `silent`, the ranks being to
/// do `step`.
fn silent_root_line(silent: Duration, step: &str) -> String {
    format!(
        "note: rank 1 has heard nothing from rank 0 for {} s in setup (step: {step}); rank 0 answers while it waits for other ranks, so it is busy with a step of its own or stopped (still waiting)",
        silent.as_secs()
    )
}

/// When a wait is worth a line: once it reaches [`SAY_WAITING_AFTER`], then at every tripling
/// of that (10, 30, 90, … s). A new wait starts from a new schedule.
pub(crate) struct Tripling(Duration);

impl Default for Tripling {
    fn default() -> Self {
        Tripling(SAY_WAITING_AFTER)
    }
}

impl From<Duration> for Tripling {
    /// A schedule whose first line is due at `first`.
    fn from(first: Duration) -> Self {
        Tripling(first)
    }
}

impl Tripling {
    /// Whether a wait of `waited` is due a line (if so, the next is due at three times as long).
    pub(crate) fn due(&mut self, waited: Duration) -> bool {
        let due = waited >= self.0;
        if due {
            self.0 *= 3;
        }
        due
    }
}

/// Rank 0's line about a setup or teardown step it has waited `waited` for: which of the
/// `size` ranks have not done `what` yet (the first ten of them).
fn waiting_line(waited: Duration, missing: &BTreeSet<usize>, size: usize, what: &str) -> String {
    let shown: Vec<String> = missing.iter().take(10).map(|r| r.to_string()).collect();
    let more = missing.len().saturating_sub(shown.len());
    let more = if more > 0 { format!(" and {more} more") } else { String::new() };
    let ranks = if missing.len() == 1 { "rank" } else { "ranks" };
    format!(
        "note: rank 0 has waited {} s for {} of the {} ranks to {what}: {ranks} {}{more} (still waiting)",
        waited.as_secs(),
        missing.len(),
        size - 1,
        shown.join(", ")
    )
}

/// The bytes a message carried.
fn from_words(m: &Received) -> Vec<u8> {
    let mut out: Vec<u8> = m.words.iter().flat_map(|w| w.to_ne_bytes()).collect();
    out.truncate(m.bytes);
    out
}

/// Poll eagerly for a short window (yielding the CPU, or with a CPU spin hint in a lockstep
/// exchange), then sleep with exponential back-off up to `max_us` between polls. Sleeping
/// matters when many ranks share few cores: an idle rank that spins steals time from ranks that
/// compute.
pub struct Backoff {
    started: Instant,
    spin: Duration,
    sleep_us: u64,
    max_us: u64,
    /// Within the window, a CPU spin hint between polls instead of a yield (`engine.idle =
    /// "spin"`, whose window never ends, and a lockstep exchange's window).
    hint: bool,
}

impl Backoff {
    /// Yield for 20 µs, then back off to sleeps of at most `max_us` µs (0 = never sleep).
    pub fn new(max_us: u64) -> Self {
        Self::with_spin(max_us, Duration::from_micros(20))
    }

    /// Yield for `spin`, then back off to sleeps of at most `max_us` µs (0 = never sleep).
    pub fn with_spin(max_us: u64, spin: Duration) -> Self {
        Backoff { started: Instant::now(), spin, sleep_us: 1, max_us, hint: false }
    }

    /// The wait of `idle` (resolved for the host; `auto` waits as `sleep`): `spin` polls with a
    /// CPU spin hint, `yield` yields and never sleeps, `sleep` is [`Backoff::with_spin`] with
    /// `poll_us` — in a `lockstep` exchange polling with a spin hint for
    /// [`outrun_config::Idle::LOCKSTEP_WINDOW`] before it sleeps (where ranks outnumber cores,
    /// yielding there cost more than spinning: docs/performance.md §20), otherwise yielding for
    /// 20 µs.
    pub fn of(idle: outrun_config::Idle, poll_us: u64, lockstep: bool) -> Self {
        use outrun_config::Idle;
        match idle {
            Idle::Spin => Backoff { hint: true, ..Self::with_spin(0, Duration::ZERO) },
            Idle::Yield => Self::with_spin(0, Duration::ZERO),
            Idle::Sleep | Idle::Auto if lockstep => {
                Backoff { hint: true, ..Self::with_spin(poll_us, Idle::LOCKSTEP_WINDOW) }
            }
            Idle::Sleep | Idle::Auto => Self::new(poll_us),
        }
    }

    /// Something happened: poll eagerly again.
    pub fn reset(&mut self) {
        // a wait that never sleeps has no window to restart (and reading the clock costs)
        if self.max_us != 0 {
            self.started = Instant::now();
        }
        self.sleep_us = 1;
    }

    fn spinning(&self) -> bool {
        self.max_us == 0 || self.started.elapsed() < self.spin
    }

    /// Nothing happened: wait a little before the next poll.
    pub fn idle(&mut self) {
        if self.spinning() {
            if self.hint {
                std::hint::spin_loop();
            } else {
                std::thread::yield_now();
            }
        } else {
            std::thread::sleep(Duration::from_micros(self.sleep_us));
            self.sleep_us = (self.sleep_us * 2).min(self.max_us.max(1));
        }
    }

    /// Like [`Backoff::idle`] but never sleeps longer than `left`.
    pub fn idle_for(&mut self, left: Duration) {
        if !self.spinning() && Duration::from_micros(self.sleep_us) > left {
            std::thread::sleep(left);
        } else {
            self.idle();
        }
    }
}

/// This process's CPU affinity mask as CPU numbers (every CPU `available_parallelism` counts
/// where the mask cannot be read).
fn affinity() -> Vec<u32> {
    // SAFETY: a zeroed cpu_set_t is a valid empty set; sched_getaffinity writes at most its size.
    unsafe {
        let mut set: libc::cpu_set_t = std::mem::zeroed();
        if libc::sched_getaffinity(0, std::mem::size_of::<libc::cpu_set_t>(), &mut set) == 0 {
            let cpus: Vec<u32> =
                (0..libc::CPU_SETSIZE as usize).filter(|&c| libc::CPU_ISSET(c, &set)).map(|c| c as u32).collect();
            if !cpus.is_empty() {
                return cpus;
            }
        }
    }
    (0..std::thread::available_parallelism().map_or(1, |c| c.get()) as u32).collect()
}

/// Each rank's ranks on its host and cores between them, from every rank's
/// [`Comm::host_share`] message.
fn host_shares(all: &[Vec<u8>]) -> Vec<(usize, usize)> {
    let parsed: Vec<(&[u8], u32, Vec<u32>)> = all.iter().map(|b| parse_share(b)).collect();
    parsed
        .iter()
        .map(|(h, _, _)| {
            let here: Vec<_> = parsed.iter().filter(|(o, _, _)| o == h).collect();
            let mut union: Vec<u32> = here.iter().flat_map(|(_, _, c)| c.iter().copied()).collect();
            union.sort_unstable();
            union.dedup();
            let cap = here.iter().map(|(_, q, _)| *q).filter(|&q| q > 0).max();
            (here.len(), cap.map_or(union.len(), |q| union.len().min(q as usize)).max(1))
        })
        .collect()
}

/// One rank's [`Comm::host_share`] message: its host, its quota (0: none) and its CPUs.
fn parse_share(b: &[u8]) -> (&[u8], u32, Vec<u32>) {
    let word = |at: usize| b.get(at..at + 4).map_or(0, |w| u32::from_le_bytes(w.try_into().expect("4 bytes")));
    let n = (word(0) as usize).min(b.len().saturating_sub(4));
    let host = &b[4..4 + n];
    let quota = word(4 + n);
    let cpus = (8 + n..b.len()).step_by(4).filter(|&at| at + 4 <= b.len()).map(word).collect();
    (host, quota, cpus)
}

#[cfg(test)]
mod tests {
    use super::{behind_cap, host_shares, waiting_line, Backoff, MAX_BEHIND};
    use outrun_config::Idle;
    use std::time::Duration;

    /// Rank 0's line names the step and the ranks it waits for, ten at most.
    #[test]
    fn the_waiting_line_names_the_ranks_and_the_step() {
        let one = waiting_line(Duration::from_millis(10_400), &[2].into(), 9, "load its share of the job");
        assert_eq!(
            one,
            "note: rank 0 has waited 10 s for 1 of the 8 ranks to load its share of the job: rank 2 (still waiting)"
        );
        let many = waiting_line(Duration::from_secs(30), &(1..=14).collect(), 157, "start the loop");
        assert_eq!(
            many,
            "note: rank 0 has waited 30 s for 14 of the 156 ranks to start the loop: ranks 1, 2, 3, 4, 5, 6, 7, 8, 9, 10 and 4 more (still waiting)"
        );
    }

    /// Rank 0's waits are said at 10, 30 and 90 s (polled once a second here).
    #[test]
    fn a_wait_is_said_at_10_30_90_seconds() {
        let mut due = super::Tripling::default();
        let said: Vec<u64> = (0..200).filter(|&s| due.due(Duration::from_secs(s))).collect();
        assert_eq!(said, [10, 30, 90]);
    }

    /// Each mode's wait: `spin` and `yield` never sleep (spin hint, yield); `sleep` (and `auto`,
    /// resolved to it where ranks outnumber cores) yields for 20 µs before sleeping, except in a
    /// lockstep exchange, which polls with a spin hint for the whole window first.
    #[test]
    fn a_lockstep_exchange_spins_for_its_window_before_it_sleeps() {
        for lockstep in [false, true] {
            let b = Backoff::of(Idle::Spin, 200, lockstep);
            assert!(b.hint && b.max_us == 0 && b.spinning());
            let b = Backoff::of(Idle::Yield, 200, lockstep);
            assert!(!b.hint && b.max_us == 0 && b.spinning());
        }
        for idle in [Idle::Sleep, Idle::Auto] {
            let b = Backoff::of(idle, 200, false);
            assert!(!b.hint && b.max_us == 200 && b.spin == Duration::from_micros(20));
            let mut b = Backoff::of(idle, 200, true);
            assert!(b.hint && b.max_us == 200 && b.spin == Idle::LOCKSTEP_WINDOW && b.spinning());
            // past the window it sleeps, backing off
            b.started -= Idle::LOCKSTEP_WINDOW;
            assert!(!b.spinning());
            b.idle();
            assert_eq!(b.sleep_us, 2);
        }
    }

    /// A ring's sender may run N − 1 steps ahead of its right neighbour (and a peer an iteration
    /// ahead) in each of a long vector's lanes: its cap covers that at every N; a star's stays
    /// the fixed one.
    #[test]
    fn a_ring_allows_a_neighbour_to_fall_the_ring_behind() {
        for n in [2, 4, 65, 84, 156, 1000] {
            let lanes = outrun_proto::MAX_LANES;
            assert!(behind_cap(true, n) >= 2 * n * lanes && behind_cap(true, n) >= MAX_BEHIND, "N = {n}");
            assert_eq!(behind_cap(false, n), MAX_BEHIND);
        }
    }

    fn share(host: &str, quota: u32, cpus: &[u32]) -> Vec<u8> {
        let mut b = (host.len() as u32).to_le_bytes().to_vec();
        b.extend_from_slice(host.as_bytes());
        b.extend_from_slice(&quota.to_le_bytes());
        cpus.iter().for_each(|c| b.extend_from_slice(&c.to_le_bytes()));
        b
    }

    #[test]
    fn bound_ranks_count_a_core_each_and_unbound_ones_share_the_host() {
        // two ranks bound to a core each on "a"; three unbound ranks on two cores of "b"
        let all = [
            share("a", 0, &[0]),
            share("a", 0, &[1]),
            share("b", 0, &[0, 1]),
            share("b", 0, &[0, 1]),
            share("b", 0, &[0, 1]),
        ];
        assert_eq!(host_shares(&all), vec![(2, 2), (2, 2), (3, 2), (3, 2), (3, 2)]);
        // two ranks bound to the same core share it; a quota of 2 CPUs over a 64-CPU mask
        let all = [share("c", 0, &[3]), share("c", 0, &[3]), share("d", 2, &(0..64).collect::<Vec<_>>())];
        assert_eq!(host_shares(&all), vec![(2, 1), (2, 1), (1, 2)]);
    }
}
