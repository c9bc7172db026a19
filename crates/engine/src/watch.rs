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
        let since = u64::try_from(self.base.elapsed().as_nanos()).unwrap_or(u64::MAX);
        self.armed.since.store(since, SeqCst);
        self.armed.iteration.store(t + 1, SeqCst);
    }

    /// This rank enters setup's collective (the first contact).
    pub(crate) fn enter_setup(&self) {
        self.enter(SETUP - 1);
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

/// The line rank 0 says when `MPI_Init` has not returned after `waited`.
fn init_line(waited: Duration) -> String {
    format!(
        "note: rank 0 has waited {} s in MPI_Init, which returns once every rank of the job has started: a rank is slow to start (its binary or libraries on a slow disk, a loaded host), stopped, or its host unreachable; MPI does not say which (still waiting)",
        waited.as_secs()
    )
}

/// Rank 0's watch over `MPI_Init`, which waits for every rank of the job without a bound and
/// without saying for which: a rank stopped or slow to start held the others there with nothing
/// said until the launcher's bound. Past [`crate::transport::SAY_WAITING_AFTER`], then at every
/// tripling, rank 0 (by its launcher's environment; no other rank, so a run gets one line)
/// says so. The thread makes no MPI call; dropping the watch (once `MPI_Init` returned) ends it.
pub(crate) struct InitWatch {
    done: Arc<AtomicBool>,
    thread: Option<std::thread::JoinHandle<()>>,
}

impl InitWatch {
    /// Start watching, on rank 0 only (elsewhere nothing runs).
    pub(crate) fn start() -> Self {
        let done = Arc::new(AtomicBool::new(false));
        let thread = (launcher_rank() == Some(0)).then(|| {
            let done = done.clone();
            std::thread::spawn(move || {
                let started = Instant::now();
                let mut due = crate::transport::Tripling::default();
                while !done.load(SeqCst) {
                    // a second between looks: a note at 10 s comes at most a second late
                    std::thread::park_timeout(Duration::from_secs(1));
                    let waited = started.elapsed();
                    if !done.load(SeqCst) && due.due(waited) {
                        eprintln!("{}", init_line(waited));
                    }
                }
            })
        });
        InitWatch { done, thread }
    }
}

impl Drop for InitWatch {
    fn drop(&mut self) {
        self.done.store(true, SeqCst);
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
        assert!(init_line(Duration::from_secs(10)).starts_with("note: rank 0 has waited 10 s in MPI_Init, "));
        // (the test process has no launcher's rank unless a launcher ran the tests)
        let w = InitWatch::start();
        assert_eq!(w.thread.is_some(), launcher_rank() == Some(0));
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
