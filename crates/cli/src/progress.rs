//! Progress of a training run on the master: a bar when stderr is a terminal, otherwise a
//! status line at most every 10 seconds (so long runs under CI or nohup still show life), and
//! the run's account when its summary is written.

use std::io::IsTerminal;
use std::time::{Duration, Instant};

use indicatif::{ProgressBar, ProgressStyle};
use outrun_engine::Progress;

pub(crate) struct Bar {
    bar: Option<ProgressBar>,
    total: u64,
    started: Instant,
    last_line: Instant,
}

impl Bar {
    pub(crate) fn new() -> Self {
        Bar { bar: None, total: 0, started: Instant::now(), last_line: Instant::now() }
    }
}

impl Progress for Bar {
    fn begin(&mut self, iterations: u64) {
        self.total = iterations;
        self.started = Instant::now();
        self.last_line = Instant::now();
        if std::io::stderr().is_terminal() {
            let bar = ProgressBar::new(iterations);
            bar.set_style(
                ProgressStyle::with_template("{spinner} [{elapsed_precise}] {bar:40} {pos}/{len} iterations {msg}")
                    .expect("valid template"),
            );
            self.bar = Some(bar);
        }
    }

    fn tick(&mut self, t: u64, wall_s: f64, loss: f64) {
        match &self.bar {
            Some(bar) => {
                bar.set_position(t + 1);
                bar.set_message(format!("{:.1} ms/it, loss {loss:.4e}", wall_s * 1e3));
            }
            None => {
                if self.last_line.elapsed() >= Duration::from_secs(10) {
                    self.last_line = Instant::now();
                    eprintln!(
                        "outrun: iteration {}/{} after {:.1} s, loss {loss:.4e}",
                        t + 1,
                        self.total,
                        self.started.elapsed().as_secs_f64()
                    );
                }
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
