//! Point-to-point messaging over MPI with owned buffers.
//!
//! - **Receive** is probe-based: [`Comm::try_recv`] matches whatever message has arrived
//!   (`MPI_Improbe` + `MPI_Mrecv`) into a fresh buffer. Nothing is pre-posted, so a late
//!   straggler message is simply received later and discarded by its iteration header; there is
//!   no receive to cancel and no buffer that an old receive could still write into.
//! - **Send** is non-blocking: [`Comm::isend`] keeps the buffer (shared, so one θ buffer serves
//!   every child) alive until the request completes; [`Comm::progress`] retires completed sends
//!   and [`Comm::flush_sends`] waits for all of them before shutdown, so no request is pending at
//!   `MPI_Finalize`.
//!
//! Every message is a vector of `f64` (`MPI_DOUBLE`).

use std::os::raw::c_int;
use std::sync::Arc;
use std::time::{Duration, Instant};

use mpi::ffi;
use mpi::raw::AsRaw;
use mpi::topology::SimpleCommunicator;
use mpi::traits::Communicator;

/// A received message.
#[derive(Debug)]
pub struct Msg {
    pub source: usize,
    pub tag: i32,
    pub data: Vec<f64>,
}

struct InFlight {
    req: ffi::MPI_Request,
    _buf: Arc<Vec<f64>>,
}

/// The world communicator plus the engine's outstanding sends.
pub struct Comm {
    raw: ffi::MPI_Comm,
    pub rank: usize,
    pub size: usize,
    sends: Vec<InFlight>,
    /// Messages and bytes sent, for the logs.
    pub sent_msgs: u64,
    pub sent_bytes: u64,
    pub recv_msgs: u64,
    pub recv_bytes: u64,
}

fn check(code: c_int, what: &str) {
    // MPI_ERRORS_ARE_FATAL is the default handler: a failing call aborts before returning, so a
    // non-zero code here means the handler was changed; treat it as a bug.
    assert_eq!(code, 0, "{what} failed with MPI error code {code}");
}

impl Comm {
    pub fn new(world: &SimpleCommunicator) -> Self {
        Comm {
            raw: world.as_raw(),
            rank: world.rank() as usize,
            size: world.size() as usize,
            sends: Vec::new(),
            sent_msgs: 0,
            sent_bytes: 0,
            recv_msgs: 0,
            recv_bytes: 0,
        }
    }

    /// Raw communicator handle (for collectives in benchmarks).
    pub fn raw(&self) -> ffi::MPI_Comm {
        self.raw
    }

    /// Start sending `buf` to `dest`; the buffer is kept until the send completes.
    pub fn isend(&mut self, dest: usize, tag: i32, buf: Arc<Vec<f64>>) {
        let mut req: ffi::MPI_Request = unsafe { ffi::RSMPI_REQUEST_NULL };
        let count = c_int::try_from(buf.len()).expect("message too large");
        // SAFETY: the buffer lives in `self.sends` (via the Arc) until MPI reports completion.
        let rc = unsafe {
            ffi::MPI_Isend(buf.as_ptr() as *const _, count, ffi::RSMPI_DOUBLE, dest as c_int, tag, self.raw, &mut req)
        };
        check(rc, "MPI_Isend");
        self.sent_msgs += 1;
        self.sent_bytes += 8 * buf.len() as u64;
        self.sends.push(InFlight { req, _buf: buf });
    }

    /// Retire completed sends; returns how many are still in flight.
    pub fn progress(&mut self) -> usize {
        self.sends.retain_mut(|s| {
            let mut flag: c_int = 0;
            let rc = unsafe { ffi::MPI_Test(&mut s.req, &mut flag, ffi::RSMPI_STATUS_IGNORE) };
            check(rc, "MPI_Test");
            flag == 0
        });
        self.sends.len()
    }

    /// Number of sends not yet known to be complete.
    pub fn sends_in_flight(&self) -> usize {
        self.sends.len()
    }

    /// Receive one message that has arrived, if any (any source, any tag).
    pub fn try_recv(&mut self) -> Option<Msg> {
        self.recv_matching(unsafe { ffi::RSMPI_ANY_SOURCE }, unsafe { ffi::RSMPI_ANY_TAG })
    }

    /// Receive one message from `source` with `tag` that has arrived, if any.
    pub fn try_recv_from(&mut self, source: usize, tag: i32) -> Option<Msg> {
        self.recv_matching(source as c_int, tag)
    }

    fn recv_matching(&mut self, source: c_int, tag: c_int) -> Option<Msg> {
        let mut flag: c_int = 0;
        let mut message: ffi::MPI_Message = unsafe { ffi::RSMPI_MESSAGE_NULL };
        let mut status = std::mem::MaybeUninit::<ffi::MPI_Status>::uninit();
        let rc = unsafe { ffi::MPI_Improbe(source, tag, self.raw, &mut flag, &mut message, status.as_mut_ptr()) };
        check(rc, "MPI_Improbe");
        if flag == 0 {
            return None;
        }
        let mut status = unsafe { status.assume_init() };
        let mut count: c_int = 0;
        let rc = unsafe { ffi::MPI_Get_count(&status, ffi::RSMPI_DOUBLE, &mut count) };
        check(rc, "MPI_Get_count");
        let mut data: Vec<f64> = Vec::with_capacity(count as usize);
        // SAFETY: MPI_Mrecv writes exactly `count` doubles (the matched message's size) before
        // the length is set; no zero-fill needed.
        let rc = unsafe { ffi::MPI_Mrecv(data.as_mut_ptr() as *mut _, count, ffi::RSMPI_DOUBLE, &mut message, &mut status) };
        check(rc, "MPI_Mrecv");
        unsafe { data.set_len(count as usize) };
        self.recv_msgs += 1;
        self.recv_bytes += 8 * data.len() as u64;
        Some(Msg { source: status.MPI_SOURCE as usize, tag: status.MPI_TAG, data })
    }

    /// Blocking receive of a message from `source` with `tag` (setup phase only).
    pub fn recv_blocking(&mut self, source: usize, tag: i32) -> Msg {
        let mut backoff = Backoff::new(200);
        loop {
            if let Some(m) = self.try_recv_from(source, tag) {
                return m;
            }
            self.progress();
            backoff.idle();
        }
    }

    /// Wait until every send has completed, polling `on_idle` (which should keep receiving, so
    /// that peers' sends to us complete too). Returns false on timeout.
    pub fn flush_sends(&mut self, timeout: Duration, mut on_idle: impl FnMut(&mut Comm)) -> bool {
        let end = Instant::now() + timeout;
        let mut backoff = Backoff::new(200);
        while self.progress() > 0 {
            if Instant::now() > end {
                return false;
            }
            on_idle(self);
            backoff.idle();
        }
        true
    }

    /// Terminate every rank of the job (last resort when a clean shutdown is impossible).
    pub fn abort(&self, code: i32) -> ! {
        unsafe { ffi::MPI_Abort(self.raw, code) };
        std::process::exit(code)
    }
}

/// Yield the CPU for a short window, then sleep with exponential back-off up to `max_us`
/// between polls. Sleeping matters when many ranks share few cores: an idle rank that spins
/// steals time from ranks that compute. How long to keep yielding depends on how soon the next
/// message is expected: master–worker waits use a short window, ring steps (lockstep with the
/// neighbours) a long one.
pub struct Backoff {
    started: Instant,
    spin: Duration,
    sleep_us: u64,
    max_us: u64,
}

impl Backoff {
    /// Yield for 20 µs, then back off to sleeps of at most `max_us` µs (0 = never sleep).
    pub fn new(max_us: u64) -> Self {
        Self::with_spin(max_us, Duration::from_micros(20))
    }

    /// Yield for `spin`, then back off to sleeps of at most `max_us` µs (0 = never sleep).
    pub fn with_spin(max_us: u64, spin: Duration) -> Self {
        Backoff { started: Instant::now(), spin, sleep_us: 1, max_us }
    }

    /// Something happened: poll eagerly again.
    pub fn reset(&mut self) {
        self.started = Instant::now();
        self.sleep_us = 1;
    }

    fn spinning(&self) -> bool {
        self.max_us == 0 || self.started.elapsed() < self.spin
    }

    /// Nothing happened: wait a little before the next poll.
    pub fn idle(&mut self) {
        if self.spinning() {
            std::thread::yield_now();
        } else {
            std::thread::sleep(Duration::from_micros(self.sleep_us));
            self.sleep_us = (self.sleep_us * 2).min(self.max_us);
        }
    }

    /// Like [`Backoff::idle`] but never sleeps past `until`.
    pub fn idle_until(&mut self, until: Instant) {
        let now = Instant::now();
        if now >= until {
            return;
        }
        let left = until - now;
        if !self.spinning() && Duration::from_micros(self.sleep_us) > left {
            std::thread::sleep(left);
        } else {
            self.idle();
        }
    }
}

impl Comm {
    /// Send `send` to `dest` while receiving exactly `recv.len()` values from `source` into
    /// `recv` (both with `tag`), polling until both complete (yielding for up to `spin` before
    /// sleeping). If `until` passes first, prints `what` and aborts the job: a stuck exchange
    /// cannot be unwound safely.
    #[allow(clippy::too_many_arguments)]
    pub fn sendrecv(&mut self, send: &[f64], dest: usize, recv: &mut [f64], source: usize, tag: i32, poll_us: u64, spin: Duration, until: Option<Instant>, what: &dyn Fn() -> String) {
        let mut reqs: [ffi::MPI_Request; 2] = unsafe { [ffi::RSMPI_REQUEST_NULL, ffi::RSMPI_REQUEST_NULL] };
        let (rc_n, sc_n) = (c_int::try_from(recv.len()).expect("segment too large"), c_int::try_from(send.len()).expect("segment too large"));
        // SAFETY: both buffers are borrowed for the whole call and the requests complete (or the
        // process aborts) before it returns.
        unsafe {
            check(ffi::MPI_Irecv(recv.as_mut_ptr() as *mut _, rc_n, ffi::RSMPI_DOUBLE, source as c_int, tag, self.raw, &mut reqs[0]), "MPI_Irecv");
            check(ffi::MPI_Isend(send.as_ptr() as *const _, sc_n, ffi::RSMPI_DOUBLE, dest as c_int, tag, self.raw, &mut reqs[1]), "MPI_Isend");
        }
        self.sent_msgs += 1;
        self.sent_bytes += 8 * send.len() as u64;
        self.recv_msgs += 1;
        self.recv_bytes += 8 * recv.len() as u64;
        let mut backoff = Backoff::with_spin(poll_us, spin);
        loop {
            let mut flag: c_int = 0;
            let rc = unsafe { ffi::MPI_Testall(2, reqs.as_mut_ptr(), &mut flag, ffi::RSMPI_STATUSES_IGNORE) };
            check(rc, "MPI_Testall");
            if flag != 0 {
                return;
            }
            if until.is_some_and(|u| Instant::now() >= u) {
                eprintln!("error: {}", what());
                self.abort(1);
            }
            backoff.idle();
        }
    }

    /// `MPI_Allreduce` (sum) of `send` into `recv` (same length).
    pub fn allreduce_sum(&mut self, send: &[f64], recv: &mut [f64]) {
        assert_eq!(send.len(), recv.len());
        let n = c_int::try_from(send.len()).expect("vector too large");
        let rc = unsafe {
            ffi::MPI_Allreduce(send.as_ptr() as *const _, recv.as_mut_ptr() as *mut _, n, ffi::RSMPI_DOUBLE, ffi::RSMPI_SUM, self.raw)
        };
        check(rc, "MPI_Allreduce");
    }
}
