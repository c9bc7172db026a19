//! A bound on MPI's own collective in the loop: the `allreduce` scheme's iterations wait in a
//! blocking `MPI_Allreduce`, which has no timeout and cannot say which rank is late, so a
//! stopped or stuck rank would hold every other in it until the launcher's bound. A thread of
//! each rank watches the call (it makes no MPI call itself): past its bound it says so in one
//! line and ends this process, which ends the MPI job (the launcher passes the line and drops
//! mpirun's report of the exit).
//!
//! The bound is `run.deadline`, a shutdown grace more per rank above 0: the lowest rank still
//! running speaks, and the job has ended before any other would. The blocking call is kept
//! (not `MPI_Iallreduce` polled): it is the baseline the schemes are measured against, and the
//! library's non-blocking collectives use other algorithms.
//!
//! [`StallWatch`] notes the other waits in MPI's own calls, without ending anything: rank 0's
//! (and, later, rank 1's) in `MPI_Init`, rank 0's in the coded Shuffle's communicator creation
//! and the benchmarks' loops of collectives; and rank 1's for rank 0 after the loop, when rank
//! 0 answers nothing.

use std::sync::atomic::{AtomicBool, AtomicU64, Ordering::SeqCst};
use std::sync::Arc;
use std::time::{Duration, Instant};

/// What the watching thread reads: the iteration in the collective (+ 1; 0: none; [`SETUP`]:
/// setup's) and when this rank entered it (ns since `base`).
struct Armed {
    iteration: AtomicU64,
    since: AtomicU64,
    stop: AtomicBool,
}

/// A rank's watch over its collective calls; dropping it ends the thread.
pub(crate) struct CollectiveWatch {
    armed: Arc<Armed>,
    base: Instant,
    thread: Option<std::thread::JoinHandle<()>>,
}

/// The collective of setup (the first contact, before the loop), as the watch records it.
const SETUP: u64 = u64::MAX;

/// The bound of `rank`'s wait: `deadline`, and `grace` more per rank above 0.
pub(crate) fn bound(rank: usize, deadline: f64, grace: f64) -> f64 {
    deadline + rank as f64 * grace
}

/// The line a rank that waited `bound` s in iteration `t`'s collective (None: setup's) says.
pub(crate) fn line(rank: usize, t: Option<u64>, bound: f64, dir: &str) -> String {
    let before = match rank {
        0 => String::new(),
        1 => "; rank 0 would have said so first: it is the late one, or is late too".into(),
        r => format!("; ranks 0 to {} would have said so first: the late ones are among them", r - 1),
    };
    let call = match t {
        Some(t) => format!("MPI_Allreduce of iteration {t}"),
        None => "setup's first MPI_Allreduce (the links' first contact, before the loop)".into(),
    };
    format!(
        "error: rank {rank} waited {bound} s in {call} (the `allreduce` scheme: MPI's own collective, which has no bound and does not say which rank is late): a rank is still computing, stopped, stuck or dead{before}; raise run.deadline if an iteration may take that long; the MPI job is ended (logs are in {dir})"
    )
}

impl CollectiveWatch {
    /// Watch `rank`'s collectives with [`bound`]; past it, say [`line`] and end the process.
    pub(crate) fn start(rank: usize, deadline: f64, grace: f64, dir: String) -> Self {
        let armed =
            Arc::new(Armed { iteration: AtomicU64::new(0), since: AtomicU64::new(0), stop: AtomicBool::new(false) });
        let base = Instant::now();
        let bound = bound(rank, deadline, grace);
        let watched = armed.clone();
        let thread = std::thread::spawn(move || {
            // The thread sleeps until the call it saw would be due, not at a fixed rate: about
            // one wake-up per bound, however many ranks share the host. With no call in
            // progress, any call entered meanwhile is due no sooner than a bound from now.
            let span = Duration::from_secs_f64(bound);
            while !watched.stop.load(SeqCst) {
                let t = watched.iteration.load(SeqCst);
                let now = base.elapsed();
                let due = if t == 0 { now + span } else { Duration::from_nanos(watched.since.load(SeqCst)) + span };
                if due > now {
                    std::thread::park_timeout(due - now);
                    continue;
                }
                if watched.iteration.load(SeqCst) != t {
                    continue; // the call returned meanwhile
                }
                use std::io::Write;
                let t = (t != SETUP).then(|| t - 1);
                let _ = std::io::stderr().lock().write_all(format!("{}\n", line(rank, t, bound, &dir)).as_bytes());
                // no MPI call from this thread (the main one is inside MPI_Allreduce), no exit
                // handlers: the process ends here, and mpirun ends the job
                // SAFETY: _exit(2) ends the process; nothing of it is used after
                unsafe { libc::_exit(1) };
            }
        });
        CollectiveWatch { armed, base, thread: Some(thread) }
    }

    /// This rank enters iteration `t`'s collective.
    pub(crate) fn enter(&self, t: u64) {
        self.arm(t + 1);
    }

    /// This rank enters setup's collective (the first contact).
    pub(crate) fn enter_setup(&self) {
        self.arm(SETUP);
    }

    /// A collective starts now: `code` is what [`Armed::iteration`] records of it.
    fn arm(&self, code: u64) {
        let since = u64::try_from(self.base.elapsed().as_nanos()).unwrap_or(u64::MAX);
        self.armed.since.store(since, SeqCst);
        self.armed.iteration.store(code, SeqCst);
    }

    /// The collective returned.
    pub(crate) fn leave(&self) {
        self.armed.iteration.store(0, SeqCst);
    }
}

impl Drop for CollectiveWatch {
    fn drop(&mut self) {
        self.armed.stop.store(true, SeqCst);
        if let Some(t) = self.thread.take() {
            t.thread().unpark();
            let _ = t.join();
        }
    }
}

/// This process's rank as its launcher set it in the environment, before `MPI_Init` (Open MPI,
/// PMIx, MPICH's PMI); None outside a launcher.
fn launcher_rank() -> Option<usize> {
    ["OMPI_COMM_WORLD_RANK", "PMIX_RANK", "PMI_RANK"].iter().find_map(|v| std::env::var(v).ok()?.parse().ok())
}

/// The line rank `rank` (0 or 1) says when `MPI_Init` has not returned after `waited`.
fn init_line(rank: usize, waited: Duration) -> String {
    let rank_0 = if rank == 0 {
        ""
    } else {
        "; rank 0 says so from 10 s on, so without its line rank 0 is the late one (or one of them)"
    };
    format!(
        "note: rank {rank} has waited {} s in MPI_Init, which returns once every rank of the job has started: a rank is slow to start (its binary or libraries on a slow disk, a loaded host), stopped, or its host unreachable; MPI does not say which{rank_0} (still waiting)",
        waited.as_secs()
    )
}

/// The line the logging rank `rank` says when its step after iteration `t`'s delivery has run
/// for `waited`.
fn apply_line(rank: usize, t: u64, waited: Duration) -> String {
    format!(
        "note: rank {rank} has spent {} s on iteration {t}'s result since it arrived — the update, and where due the held-out set's metrics (a Python model's evaluate()) and a checkpoint; the other ranks wait for its next model (still in it)",
        waited.as_secs()
    )
}

/// The line rank 1 says when it has waited `waited` for rank 0 after the run's loop.
fn end_line(waited: Duration, grace: f64) -> String {
    let goodbyes =
        if grace > 0.0 { format!("waits up to {grace} s for the others' goodbyes and then ") } else { String::new() };
    format!(
        "note: rank 1 has waited {} s for rank 0 at the run's end; rank 0 has ended its loop too, {goodbyes}writes the run's summary and state: it is still writing (a large state file, a slow disk), stuck or stopped (still waiting)",
        waited.as_secs()
    )
}

/// A thread that notes a wait without progress: while the waiter's count of what it has done
/// ([`StallWatch::done`]) stays the same for as long as [`crate::transport::Tripling`] says (10
/// s, then every tripling), it prints `say(waited, done)` on stderr. For waits in MPI's own
/// calls, which have no bound and do not say which rank is late (`MPI_Init`, the benchmarks'
/// collectives): one rank watches, so a run gets one line; the thread makes no MPI call, and
/// dropping the watch ends it at once.
pub(crate) struct StallWatch {
    done: Arc<AtomicU64>,
    stop: Arc<AtomicBool>,
    thread: Option<std::thread::JoinHandle<()>>,
}

impl StallWatch {
    /// Watch when `on` (elsewhere nothing runs), saying `say(waited, done)` when due.
    pub(crate) fn start(on: bool, say: impl Fn(Duration, u64) -> String + Send + 'static) -> Self {
        Self::start_after(on, crate::transport::SAY_WAITING_AFTER, say)
    }

    /// [`StallWatch::start`] with the first note due after `first` (then at every tripling).
    pub(crate) fn start_after(
        on: bool,
        first: Duration,
        say: impl Fn(Duration, u64) -> String + Send + 'static,
    ) -> Self {
        let done = Arc::new(AtomicU64::new(0));
        let stop = Arc::new(AtomicBool::new(false));
        let thread = on.then(|| {
            let (done, stop) = (done.clone(), stop.clone());
            std::thread::spawn(move || {
                let (mut seen, mut since) = (done.load(SeqCst), Instant::now());
                let mut due = crate::transport::Tripling::from(first);
                while !stop.load(SeqCst) {
                    // a tenth of a second between looks: a note comes at most that late
                    std::thread::park_timeout(Duration::from_millis(100));
                    let now = done.load(SeqCst);
                    if now != seen {
                        (seen, since, due) = (now, Instant::now(), crate::transport::Tripling::from(first));
                        continue;
                    }
                    let waited = since.elapsed();
                    if !stop.load(SeqCst) && due.due(waited) {
                        // an empty note: this count is not a wait to speak of
                        let note = say(waited, seen);
                        if !note.is_empty() {
                            eprintln!("{note}");
                        }
                    }
                }
            })
        });
        StallWatch { done, stop, thread }
    }

    /// The waiter has done `k` of its units (a new count starts a new wait).
    pub(crate) fn done(&self, k: u64) {
        self.done.store(k, SeqCst);
    }

    /// Rank 1's watch over its last waits for rank 0, `on` once its own loop ended cleanly (so
    /// rank 0's has ended too: a tree's stop comes from it, a ring's or the shuffle's
    /// iterations end together). Rank 0 still collects the others' goodbyes for up to `grace`
    /// s and writes the run's summary, and answers nothing meanwhile, so rank 1 notes a wait
    /// longer than that and 10 s more (then at every tripling) instead of holding every rank
    /// silently until the launcher's bound behind a rank 0 stuck or stopped.
    pub(crate) fn run_end(on: bool, grace: f64) -> Self {
        let first = Duration::from_secs_f64(grace) + crate::transport::SAY_WAITING_AFTER;
        Self::start_after(on, first, move |waited, _| end_line(waited, grace))
    }

    /// The logging rank's watch over its own step after a delivery (the update, the held-out
    /// set's metrics where due — a Python model's `evaluate()` — and a checkpoint): the other
    /// ranks wait for its next model and, were the step stuck, would only say after
    /// 3 × `run.deadline` that rank 0 is gone or stuck. Inside iteration `t`'s step the count is
    /// `2t + 1` ([`StallWatch::applying_iteration`]), after it `2t + 2`; only an odd count is
    /// spoken of, after 10 s and at every tripling.
    pub(crate) fn applying(rank: usize) -> Self {
        Self::start(
            true,
            move |waited, seen| if seen % 2 == 1 { apply_line(rank, seen / 2, waited) } else { String::new() },
        )
    }

    /// The rank starts (`true`) or ends its step after iteration `t`'s delivery.
    pub(crate) fn applying_iteration(&self, t: u64, inside: bool) {
        self.done(2 * t + if inside { 1 } else { 2 });
    }

    /// Rank 0's and rank 1's watch over `MPI_Init`, which waits for every rank of the job: a
    /// rank stopped or slow to start held the others there with nothing said until the
    /// launcher's bound. Rank 0 speaks after 10 s; rank 1 after 20 s, for the case rank 0 is
    /// the one not started (a stopped rank's watch is stopped with it). The ranks are known
    /// from the launcher's environment (MPI is not started yet).
    pub(crate) fn mpi_init() -> Self {
        match launcher_rank() {
            Some(rank @ (0 | 1)) => {
                let first = crate::transport::SAY_WAITING_AFTER * (rank as u32 + 1);
                Self::start_after(true, first, move |waited, _| init_line(rank, waited))
            }
            _ => Self::start(false, |_, _| String::new()),
        }
    }
}

impl Drop for StallWatch {
    fn drop(&mut self) {
        self.stop.store(true, SeqCst);
        if let Some(t) = self.thread.take() {
            t.thread().unpark();
            let _ = t.join();
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_lowest_running_rank_speaks_first_and_names_whom_it_follows() {
        assert_eq!(bound(0, 5.0, 5.0), 5.0);
        assert_eq!(bound(3, 5.0, 5.0), 20.0);
        let l0 = line(0, Some(57), 5.0, "runs/x");
        assert!(l0.starts_with("error: rank 0 waited 5 s in MPI_Allreduce of iteration 57"), "{l0}");
        assert!(!l0.contains("would have said"), "{l0}");
        assert!(line(1, Some(57), 10.0, "runs/x").contains("rank 0 would have said so first"));
        assert!(line(3, Some(57), 20.0, "runs/x").contains("ranks 0 to 2 would have said so first"));
        assert!(line(0, None, 5.0, "runs/x").starts_with("error: rank 0 waited 5 s in setup's first MPI_Allreduce"));
    }

    #[test]
    fn the_end_note_says_what_rank_0_does_after_its_loop() {
        let l = end_line(Duration::from_secs(15), 5.0);
        assert!(l.starts_with("note: rank 1 has waited 15 s for rank 0 at the run's end"), "{l}");
        assert!(l.contains("waits up to 5 s for the others' goodbyes and then writes"), "{l}");
        assert!(end_line(Duration::from_secs(10), 0.0).contains("ended its loop too, writes the run's summary"));
        // the first note is due after the grace and 10 s more, then at every tripling
        let mut due = crate::transport::Tripling::from(Duration::from_secs(15));
        assert!(!due.due(Duration::from_secs(14)) && due.due(Duration::from_secs(15)));
        assert!(!due.due(Duration::from_secs(44)) && due.due(Duration::from_secs(45)));
    }

    #[test]
    fn the_logging_rank_names_a_long_step_after_a_delivery() {
        let l = apply_line(0, 9, Duration::from_secs(10));
        assert!(l.starts_with("note: rank 0 has spent 10 s on iteration 9's result since it arrived"), "{l}");
        assert!(l.contains("a Python model's evaluate()"), "{l}");
        // the watch is quiet between steps (an even count) and ends at once when dropped
        let w = StallWatch::applying(0);
        w.applying_iteration(3, true);
        w.applying_iteration(3, false);
        let dropped = Instant::now();
        drop(w);
        assert!(dropped.elapsed() < Duration::from_millis(500), "{:?}", dropped.elapsed());
    }

    #[test]
    fn a_watch_that_is_left_in_time_stays_quiet() {
        let w = CollectiveWatch::start(0, 0.05, 0.05, "runs/x".into());
        for t in 0..3 {
            w.enter(t);
            w.leave();
        }
        std::thread::sleep(Duration::from_millis(250));
        drop(w);
    }

    #[test]
    fn mpi_init_is_watched_by_rank_0_alone_and_the_watch_ends_at_once() {
        assert!(init_line(0, Duration::from_secs(10)).starts_with("note: rank 0 has waited 10 s in MPI_Init, "));
        assert!(!init_line(0, Duration::from_secs(10)).contains("rank 0 says so"));
        assert!(init_line(1, Duration::from_secs(20)).starts_with("note: rank 1 has waited 20 s in MPI_Init, "));
        assert!(init_line(1, Duration::from_secs(20)).contains("without its line rank 0 is the late one"));
        // (the test process has no launcher's rank unless a launcher ran the tests)
        let w = StallWatch::mpi_init();
        assert_eq!(w.thread.is_some(), matches!(launcher_rank(), Some(0 | 1)));
        let dropped = Instant::now();
        drop(w);
        assert!(dropped.elapsed() < Duration::from_millis(500), "{:?}", dropped.elapsed());
    }

    #[test]
    fn a_watch_ends_at_once_though_it_sleeps_until_a_call_would_be_due() {
        let w = CollectiveWatch::start(0, 30.0, 5.0, "runs/x".into());
        w.enter(0);
        std::thread::sleep(Duration::from_millis(20));
        w.leave();
        let dropped = Instant::now();
        drop(w);
        assert!(dropped.elapsed() < Duration::from_secs(1), "{:?}", dropped.elapsed());
    }
}
