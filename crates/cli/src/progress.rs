//! Progress of a training run on the master: the iteration, iterations per second, the time
//! left, and the rank the run waited for most so far (its result was the last one needed most
//! often; by how much it trailed the one before). A bar on a terminal, otherwise a line on
//! stderr every few seconds (`OUTRUN_PROGRESS_EVERY`, default 5 s) so that long runs under CI or
//! nohup show life; nothing with `--quiet`. The run's account is printed when its summary is
//! written, quiet or not.
//!
//! Under mpirun no rank has a terminal: a launcher whose stdout is one says so
//! (`OUTRUN_TERMINAL=<columns>`), and rank 0 draws the bar on stdout, which mpirun relays as it
//! comes (its stderr goes through the launcher's line filter, which would hold a bar back).

use std::collections::BTreeMap;
use std::io::IsTerminal;
use std::path::{Path, PathBuf};
use std::time::{Duration, Instant};

use indicatif::{ProgressBar, ProgressDrawTarget, ProgressStyle, TermLike};
use outrun_engine::Progress;
use outrun_runlog::event::Event;

pub(crate) struct Bar {
    bar: Option<ProgressBar>,
    quiet: bool,
    total: u64,
    /// The first iteration of this run (a resumed run's checkpoint's), and the iterations done.
    first: u64,
    done: u64,
    started: Instant,
    last_line: Instant,
    every: Duration,
    /// Per child rank: iterations its result came last, seconds it trailed the one before.
    last: BTreeMap<usize, (u64, f64)>,
    collected: u64,
    /// The first finite loss (its iteration) and the last loss: a loss that grew tenfold or
    /// more, or to infinity, gets a warning at the end.
    first_loss: Option<(u64, f64)>,
    last_loss: f64,
    /// The run directory, its size when the loop began, and whether its disk was found too
    /// small for the rest of the run (warned once).
    dir: Option<(PathBuf, u64)>,
    disk_warned: bool,
}

impl Bar {
    pub(crate) fn new(quiet: bool) -> Self {
        let every = std::env::var("OUTRUN_PROGRESS_EVERY")
            .ok()
            .and_then(|v| v.parse::<f64>().ok())
            .filter(|s| s.is_finite() && *s > 0.0)
            .map_or(Duration::from_secs(5), Duration::from_secs_f64);
        Bar {
            bar: None,
            quiet,
            total: 0,
            first: 0,
            done: 0,
            started: Instant::now(),
            last_line: Instant::now(),
            every,
            last: BTreeMap::new(),
            collected: 0,
            first_loss: None,
            last_loss: f64::NAN,
            dir: None,
            disk_warned: false,
        }
    }

    /// After 16 and 1024 iterations of the loop, and every 65 536 after: would the run
    /// directory, growing as it has since the loop began, outgrow the free space on its disk
    /// before the last iteration? One warning line if so (the run goes on: a log that cannot be
    /// written later ends it with its own line).
    fn watch_disk(&mut self) {
        let done = self.done.saturating_sub(self.first);
        let Some((dir, start)) = self.dir.as_ref().filter(|_| !self.disk_warned) else { return };
        if !(done == 16 || done == 1024 || done.is_multiple_of(65_536)) {
            return;
        }
        let grown = outrun_runlog::dir_bytes(dir).saturating_sub(*start);
        if let Some((more, free)) = outrun_runlog::outgrows(dir, grown, done, self.total.saturating_sub(self.done)) {
            use outrun_workloads::memory::human;
            eprintln!(
                "warning: {}: the run directory would grow by {} more ({} per iteration) by iteration {}, more than the {} free on its disk; the run goes on until a log cannot be written — run fewer iterations or set run.out_dir to a larger disk",
                dir.display(),
                human(more),
                human(grown / done),
                self.total,
                human(free)
            );
            self.disk_warned = true;
        }
    }

    /// Iterations per second and seconds left, at the current pace.
    fn pace(&self) -> (f64, f64) {
        let rate = self.done.saturating_sub(self.first) as f64 / self.started.elapsed().as_secs_f64().max(1e-9);
        (rate, self.total.saturating_sub(self.done) as f64 / rate.max(1e-9))
    }

    /// The rank waited for most, once the master has collected something: its rank, the
    /// iterations its result came last in, and its mean lead (s) over the result before it.
    fn slowest(&self) -> Option<(usize, u64, f64)> {
        let (&rank, &(n, gap)) = self.last.iter().max_by(|a, b| a.1 .0.cmp(&b.1 .0).then(a.1 .1.total_cmp(&b.1 .1)))?;
        Some((rank, n, gap / n as f64))
    }
}

/// The width of the terminal a launcher relays rank 0's stdout to (`OUTRUN_TERMINAL`).
fn relayed_terminal() -> Option<u16> {
    std::env::var("OUTRUN_TERMINAL").ok()?.trim().parse::<u16>().ok().filter(|w| *w >= 40)
}

/// A terminal reached through mpirun's relay of stdout: ANSI sequences, written as they come.
#[derive(Debug)]
struct Relayed {
    width: u16,
}

impl Relayed {
    fn out(&self, s: &str) -> std::io::Result<()> {
        use std::io::Write;
        let mut o = std::io::stdout().lock();
        o.write_all(s.as_bytes())?;
        o.flush()
    }

    /// Move the cursor `n` cells (`dir`: ANSI A up, B down, C right, D left); nothing for 0.
    fn cursor(&self, n: usize, dir: char) -> std::io::Result<()> {
        if n > 0 {
            self.out(&format!("\x1b[{n}{dir}"))
        } else {
            Ok(())
        }
    }
}

impl TermLike for Relayed {
    fn width(&self) -> u16 {
        self.width
    }
    fn move_cursor_up(&self, n: usize) -> std::io::Result<()> {
        self.cursor(n, 'A')
    }
    fn move_cursor_down(&self, n: usize) -> std::io::Result<()> {
        self.cursor(n, 'B')
    }
    fn move_cursor_right(&self, n: usize) -> std::io::Result<()> {
        self.cursor(n, 'C')
    }
    fn move_cursor_left(&self, n: usize) -> std::io::Result<()> {
        self.cursor(n, 'D')
    }
    fn write_line(&self, s: &str) -> std::io::Result<()> {
        self.out(&format!("{s}\n"))
    }
    fn write_str(&self, s: &str) -> std::io::Result<()> {
        self.out(s)
    }
    fn clear_line(&self) -> std::io::Result<()> {
        self.out("\r\x1b[2K")
    }
    fn flush(&self) -> std::io::Result<()> {
        Ok(())
    }
}

/// Seconds as `1h02m`, `3m05s` or `12s`.
fn short(s: f64) -> String {
    let s = s.round().min(1e9) as u64;
    match (s / 3600, s % 3600 / 60, s % 60) {
        (0, 0, sec) => format!("{sec}s"),
        (0, m, sec) => format!("{m}m{sec:02}s"),
        (h, m, _) => format!("{h}h{m:02}m"),
    }
}

impl Progress for Bar {
    fn run_dir(&mut self, dir: &Path) {
        self.dir = Some((dir.to_path_buf(), outrun_runlog::dir_bytes(dir)));
    }

    fn begin(&mut self, first: u64, iterations: u64) {
        self.total = iterations;
        (self.first, self.done) = (first, first);
        self.started = Instant::now();
        self.last_line = Instant::now();
        let target = match relayed_terminal() {
            _ if self.quiet => None,
            _ if std::io::stderr().is_terminal() => Some(ProgressDrawTarget::stderr()),
            Some(width) => Some(ProgressDrawTarget::term_like_with_hz(Box::new(Relayed { width }), 4)),
            None => None,
        };
        if let Some(target) = target {
            let bar = ProgressBar::with_draw_target(Some(iterations), target);
            bar.set_position(first);
            bar.set_style(
                ProgressStyle::with_template("{spinner} [{elapsed_precise}] {bar:25} {pos}/{len} {wide_msg}")
                    .expect("valid template"),
            );
            self.bar = Some(bar);
        }
    }

    fn tick(&mut self, t: u64, wall_s: f64, loss: f64) {
        self.done = t + 1;
        if self.first_loss.is_none() && loss.is_finite() {
            self.first_loss = Some((t, loss));
        }
        self.last_loss = loss;
        self.watch_disk();
        if self.quiet {
            return;
        }
        let (rate, left) = self.pace();
        // a mat-vec has no loss, nor a federated round whose rule accepted no upload
        let loss = if loss.is_finite() { format!(" · loss {loss:.3e}") } else { String::new() };
        match &self.bar {
            Some(bar) => {
                let slow = self.slowest().map_or(String::new(), |(rank, n, gap)| {
                    format!(" · slowest rank {rank} (last {n}/{}, +{:.1} ms)", self.collected, gap * 1e3)
                });
                bar.set_position(t + 1);
                bar.set_message(format!("· {rate:.1} it/s, {} left{loss}{slow}", short(left)));
            }
            None => {
                if self.last_line.elapsed() >= self.every {
                    self.last_line = Instant::now();
                    let slow = self.slowest().map_or(String::new(), |(rank, n, gap)| {
                        format!(
                            "; waiting most on rank {rank}: its result came last in {n} of {} iterations, {:.1} ms after the one before (mean)",
                            self.collected,
                            gap * 1e3
                        )
                    });
                    let loss = loss.replace(" · ", ", ");
                    eprintln!(
                        "outrun: iteration {}/{} after {}, {rate:.1} it/s, {} left, {:.1} ms/it{loss}{slow}",
                        t + 1,
                        self.total,
                        short(self.started.elapsed().as_secs_f64()),
                        short(left),
                        wall_s * 1e3
                    );
                }
            }
        }
    }

    fn observe(&mut self, event: &Event) {
        if let Event::Iter(i) = event {
            if let Some((rank, gap)) = outrun_report::blame::last_needed(i) {
                let e = self.last.entry(rank).or_insert((0, 0.0));
                *e = (e.0 + 1, e.1 + gap);
                self.collected += 1;
            }
        }
    }

    fn end(&mut self) {
        if let Some(bar) = self.bar.take() {
            bar.finish_and_clear();
        }
    }

    /// The run's one-line account and its directory (printed as soon as they are written: a
    /// run that must then end its MPI job by abort still shows them).
    fn finished(&mut self, s: &outrun_engine::Summary) {
        println!("{}", outrun_report::one_line(s));
        println!("run directory: {}", s.run_dir);
        if let Some(line) = diverged(self.first_loss, self.last_loss) {
            eprintln!("{line}");
        }
    }
}

/// The warning for a loss that grew tenfold or more, or to infinity, from its first value (a
/// loss that is NaN at the end says nothing: a federated round with no accepted upload has none).
fn diverged(first: Option<(u64, f64)>, last: f64) -> Option<String> {
    let (t, first) = first?;
    let grew = last.is_infinite() || (last.is_finite() && first > 0.0 && last >= 10.0 * first);
    grew.then(|| {
        format!(
            "warning: the loss diverged: {first:.3e} at iteration {} and {last:.3e} at the end; the step (model.lr) is too large for these features — with features on different scales, data.standardize = true puts each on one; else lower model.lr",
            t + 1
        )
    })
}

#[cfg(test)]
mod tests {
    use super::{diverged, short};

    #[test]
    fn a_loss_that_grew_tenfold_is_a_divergence() {
        assert!(diverged(Some((0, 2.3)), 1.5e10).is_some_and(|l| l.contains("2.300e0 at iteration 1")));
        assert!(diverged(Some((4, 2.3)), f64::INFINITY).is_some());
        assert_eq!(diverged(Some((0, 2.3)), 0.4), None);
        assert_eq!(diverged(Some((0, 2.3)), 20.0), None, "less than tenfold");
        assert_eq!(diverged(Some((0, 2.3)), f64::NAN), None);
        assert_eq!(diverged(None, 1e10), None, "no loss (a mat-vec)");
    }

    #[test]
    fn durations_read_like_a_clock() {
        assert_eq!(short(12.4), "12s");
        assert_eq!(short(185.0), "3m05s");
        assert_eq!(short(3720.0), "1h02m");
    }
}
