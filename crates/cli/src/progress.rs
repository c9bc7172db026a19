//! Progress of a training run on the master (rank 0's stderr): the iteration, iterations per
//! second, the time left, and the rank the run waited for most so far (its result was the last
//! one needed most often; by how much it trailed the one before). A bar when stderr is a
//! terminal, otherwise a line every few seconds (`OUTRUN_PROGRESS_EVERY`, default 5 s) so that
//! long runs under CI or nohup show life; nothing with `--quiet`. The run's account is printed
//! when its summary is written, quiet or not.

use std::collections::BTreeMap;
use std::io::IsTerminal;
use std::time::{Duration, Instant};

use indicatif::{ProgressBar, ProgressStyle};
use outrun_engine::Progress;
use outrun_runlog::event::Event;

pub(crate) struct Bar {
    bar: Option<ProgressBar>,
    quiet: bool,
    total: u64,
    done: u64,
    started: Instant,
    last_line: Instant,
    every: Duration,
    /// Per child rank: iterations its result came last, seconds it trailed the one before.
    last: BTreeMap<usize, (u64, f64)>,
    collected: u64,
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
            done: 0,
            started: Instant::now(),
            last_line: Instant::now(),
            every,
            last: BTreeMap::new(),
            collected: 0,
        }
    }

    /// Iterations per second and seconds left, at the current pace.
    fn pace(&self) -> (f64, f64) {
        let rate = self.done as f64 / self.started.elapsed().as_secs_f64().max(1e-9);
        (rate, self.total.saturating_sub(self.done) as f64 / rate.max(1e-9))
    }

    /// "waiting most on rank r: …", once the master has collected something.
    fn slowest(&self) -> Option<String> {
        let (rank, (n, gap)) = self.last.iter().max_by(|a, b| a.1 .0.cmp(&b.1 .0).then(a.1 .1.total_cmp(&b.1 .1)))?;
        Some(format!(
            "waiting most on rank {rank}: its result came last in {n} of {} iterations, {:.1} ms after the one before (mean)",
            self.collected,
            gap / *n as f64 * 1e3
        ))
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
    fn begin(&mut self, iterations: u64) {
        self.total = iterations;
        self.started = Instant::now();
        self.last_line = Instant::now();
        if !self.quiet && std::io::stderr().is_terminal() {
            let bar = ProgressBar::new(iterations);
            bar.set_style(
                ProgressStyle::with_template(
                    "{spinner} [{elapsed_precise}] {bar:30} {pos}/{len} it, {per_sec}, {eta} left {msg}",
                )
                .expect("valid template"),
            );
            self.bar = Some(bar);
        }
    }

    fn tick(&mut self, t: u64, wall_s: f64, loss: f64) {
        self.done = t + 1;
        if self.quiet {
            return;
        }
        let slow = self.slowest().map_or(String::new(), |s| format!("; {s}"));
        match &self.bar {
            Some(bar) => {
                bar.set_position(t + 1);
                bar.set_message(format!("· {:.1} ms/it, loss {loss:.4e}{slow}", wall_s * 1e3));
            }
            None => {
                if self.last_line.elapsed() >= self.every {
                    self.last_line = Instant::now();
                    let (rate, left) = self.pace();
                    eprintln!(
                        "outrun: iteration {}/{} after {}, {rate:.1} it/s, {} left, loss {loss:.4e}{slow}",
                        t + 1,
                        self.total,
                        short(self.started.elapsed().as_secs_f64()),
                        short(left)
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
    }
}

#[cfg(test)]
mod tests {
    use super::short;

    #[test]
    fn durations_read_like_a_clock() {
        assert_eq!(short(12.4), "12s");
        assert_eq!(short(185.0), "3m05s");
        assert_eq!(short(3720.0), "1h02m");
    }
}
