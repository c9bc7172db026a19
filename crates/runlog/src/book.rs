//! The logging rank's book-keeping: per-iteration metrics into `iterations.csv`, the optional
//! trajectory, the final model, and the run summary.

use std::path::PathBuf;

use crate::files::{quantile, Lines, Summary, FORMAT};

/// Model send→receive latency statistics, seconds (p50, p95, max over every worker and iteration).
#[derive(Clone, Copy, Debug, Default)]
pub struct Latency {
    /// Number of models received.
    pub count: u64,
    /// Median.
    pub p50: Option<f64>,
    /// 95th percentile.
    pub p95: Option<f64>,
    /// Largest.
    pub max: Option<f64>,
}

/// What the book writes besides the iterations: the run's identity (the summary's fields) and
/// the job's columns. The drivers fill it from the plan and the job.
#[derive(Clone, Debug)]
pub struct RunInfo {
    /// The run directory.
    pub dir: PathBuf,
    /// `run.name`.
    pub name: String,
    /// `scheme.kind`.
    pub scheme: String,
    /// The plan's one-line description.
    pub title: String,
    /// The job's config spelling.
    pub job: String,
    /// One line naming the problem (runs of the same problem are compared together).
    pub problem: String,
    /// What the `normalized_error` column holds.
    pub error_label: String,
    /// Workers.
    pub workers: usize,
    /// MPI ranks.
    pub ranks: usize,
    /// Stragglers tolerated.
    pub s: usize,
    /// Data points d.
    pub samples: usize,
    /// Model dimension p.
    pub features: usize,
    /// Values a result carries.
    pub payload_values: usize,
    /// `stragglers.model`.
    pub stragglers: String,
    /// How compute time was obtained: "real", "modelled" or "simulated".
    pub compute: String,
    /// Write the state after every iteration (`trajectory.csv`).
    pub trajectory: bool,
    /// The state before the first iteration, where the job has one (θ₀, or a resumed run's
    /// checkpoint): `trajectory.csv`'s first row and the first `relative_change`'s reference;
    /// None: zeros.
    pub initial: Option<Vec<f64>>,
    /// The job's own `iterations.csv` columns, after the common ones.
    pub columns: Vec<String>,
    /// The final state's file name.
    pub state_file: String,
}

/// One iteration's outcome at the master.
pub struct IterationRecord<'a> {
    /// Iteration.
    pub t: u64,
    /// When the result was applied (run timeline, seconds).
    pub end: f64,
    /// The state after the update (None when it was not computed, e.g. a timing-only
    /// simulation: the metrics are then left empty).
    pub state: Option<&'a [f64]>,
    /// Loss at θ_t (NaN when not computed).
    pub loss: f64,
    /// The `normalized_error` column: the job's error of the iteration.
    pub error: Option<f64>,
    /// Accuracy on the held-out set.
    pub accuracy: Option<f64>,
    /// Values of the job's own columns.
    pub columns: &'a [Option<f64>],
    /// Worker ids whose results were used.
    pub used: &'a [usize],
    /// Fraction of the data the gradient covered (1 for exact schemes).
    pub coverage: f64,
    /// Whether the result was exact.
    pub exact: bool,
    /// Decode residual ‖aB − 1‖ (0 when nothing was decoded).
    pub residual: f64,
    /// Late messages discarded so far.
    pub late_total: u64,
    /// Worker ids whose results were rejected as corrupted (robust decoding).
    pub rejected: &'a [usize],
    /// Worker ids among `used` that `[faults]` corrupted this iteration (a fault that got
    /// through; empty without faults).
    pub faulty_used: &'a [usize],
}

/// The logging rank's per-iteration records and the run summary.
pub struct Book {
    csv: Lines,
    traj: Lines,
    prev_theta: Vec<f64>,
    last_end: f64,
    /// Start of the timed loop (run timeline, seconds).
    pub loop_start: f64,
    walls: Vec<f64>,
    exact: u64,
    rejected: u64,
    empty: u64,
    faulty_used: (u64, u64),
    /// Σ of the iterations' `coverage`.
    coverage: f64,
    last_loss: f64,
    last_error: Option<f64>,
    last_accuracy: Option<f64>,
    /// Where the job's columns hold `test_loss`, and its last value.
    test_loss: (Option<usize>, Option<f64>),
    /// Seconds of a one-time phase before the loop that `cumulative_s` counts (CodedFedL's
    /// parity upload).
    prelude: Option<f64>,
    /// The first iteration recorded (a resumed run's checkpoint's; 0 otherwise).
    first: Option<u64>,
}

impl Book {
    /// Open `iterations.csv` (and `trajectory.csv`) in the run directory.
    pub fn new(info: &RunInfo, loop_start: f64) -> std::io::Result<Self> {
        let dir = &info.dir;
        // a write that fails here fails the run's summary later, with one line (no warning)
        let mut csv = Lines::create(&dir.join("iterations.csv"))?.quiet();
        let extra: String = info.columns.iter().map(|c| format!(",{c}")).collect();
        csv.line(&format!("{COLUMNS}{extra}"));
        let traj = if info.trajectory { Lines::create(&dir.join("trajectory.csv"))?.quiet() } else { Lines::none() };
        let initial = info.initial.clone().unwrap_or_else(|| vec![0.0; info.features]);
        Ok(Book {
            csv,
            traj,
            prev_theta: initial,
            last_end: loop_start,
            loop_start,
            walls: Vec::new(),
            exact: 0,
            rejected: 0,
            empty: 0,
            faulty_used: (0, 0),
            coverage: 0.0,
            last_loss: f64::NAN,
            last_error: None,
            last_accuracy: None,
            test_loss: (info.columns.iter().position(|c| c == "test_loss"), None),
            prelude: None,
            first: None,
        })
    }

    /// The timed loop starts at `at` (when the book was opened before it).
    pub fn start_loop(&mut self, at: f64) {
        self.loop_start = at;
        self.last_end = at;
    }

    /// Count `secs` of a one-time phase before the loop (CodedFedL's parity upload) in every
    /// iteration's `cumulative_s`, and record them in the summary (`parity_s`).
    pub fn prelude(&mut self, secs: f64) {
        self.prelude = Some(secs);
    }

    fn trajectory(&mut self, t: u64, theta: &[f64]) {
        if !self.traj.is_active() {
            return;
        }
        let vals: Vec<String> = theta.iter().map(|v| v.to_string()).collect();
        self.traj.line(&format!("{t},{}", vals.join(",")));
    }

    /// Record iteration t (the state is θ_{t+1}, the loss is at θ_t). Returns the wall time.
    pub fn record(&mut self, r: IterationRecord) -> f64 {
        if self.first.is_none() && r.state.is_some() {
            // the state the first recorded iteration started from (θ₀, or the checkpoint's)
            let before = std::mem::take(&mut self.prev_theta);
            self.trajectory(r.t, &before);
            self.prev_theta = before;
        }
        self.first.get_or_insert(r.t);
        let wall = r.end - self.last_end;
        self.last_end = r.end;
        self.walls.push(wall);
        if let Some(th) = r.state {
            // a state of another length than the model (a mat-vec's y)
            self.prev_theta.resize(th.len(), 0.0);
        }
        let rel = r.state.and_then(|th| relative_change(th, &self.prev_theta));
        let opt = |v: Option<f64>| v.map_or(String::new(), |x| format!("{x:e}"));
        let survivors: Vec<String> = r.used.iter().map(|w| w.to_string()).collect();
        let extra: String = r.columns.iter().map(|v| format!(",{}", opt(*v))).collect();
        let rejected: Vec<String> = r.rejected.iter().map(|w| w.to_string()).collect();
        self.rejected += r.rejected.len() as u64;
        let faulty: Vec<String> = r.faulty_used.iter().map(|w| w.to_string()).collect();
        self.faulty_used.0 += r.faulty_used.len() as u64;
        self.faulty_used.1 += u64::from(!r.faulty_used.is_empty());
        self.csv.line(&format!(
            "{},{:.6},{:.6},{},{},{},{},{},{:.6},{},{:e},{},{},{},{}{extra}",
            r.t,
            wall,
            r.end - self.loop_start + self.prelude.unwrap_or(0.0),
            if r.loss.is_finite() { format!("{:e}", r.loss) } else { String::new() },
            opt(r.error),
            opt(rel),
            r.used.len(),
            survivors.join(" "),
            r.coverage,
            r.exact,
            r.residual,
            r.late_total,
            r.accuracy.map_or(String::new(), |a| format!("{a:.6}")),
            rejected.join(" "),
            faulty.join(" ")
        ));
        if r.accuracy.is_some() {
            self.last_accuracy = r.accuracy;
        }
        if let Some(v) = self.test_loss.0.and_then(|i| r.columns.get(i).copied().flatten()) {
            self.test_loss.1 = Some(v);
        }
        if let Some(th) = r.state {
            self.trajectory(r.t + 1, th);
            self.prev_theta.copy_from_slice(th);
        }
        self.exact += u64::from(r.exact);
        self.coverage += r.coverage;
        self.empty += u64::from(r.used.is_empty());
        // a round without clients has no loss: the final loss is the last round's that had one
        if !r.used.is_empty() {
            self.last_loss = r.loss;
        }
        self.last_error = r.error;
        wall
    }

    /// Write the final state file (its text given: θ one value per line, a mat-vec's y,
    /// PageRank's `id rank` lines) and `summary.json`; returns the summary.
    pub fn finish(
        &self,
        info: &RunInfo,
        state: &str,
        setup_s: f64,
        late: u64,
        master_bytes: u64,
        latency: Latency,
    ) -> std::io::Result<Summary> {
        let dir = &info.dir;
        for (name, lines) in [("iterations.csv", &self.csv), ("trajectory.csv", &self.traj)] {
            if let Some(e) = lines.failure() {
                return Err(std::io::Error::other(format!("{name} dropped lines ({e})")));
            }
        }
        std::fs::write(dir.join(&info.state_file), state)?;
        let total = self.last_end - self.loop_start;
        let n = self.walls.len().max(1) as f64;
        let summary = Summary {
            format: FORMAT,
            name: info.name.clone(),
            scheme: info.scheme.clone(),
            title: info.title.clone(),
            job: info.job.clone(),
            problem: info.problem.clone(),
            error_label: info.error_label.clone(),
            workers: info.workers,
            ranks: info.ranks,
            s: info.s,
            samples: info.samples,
            features: info.features,
            payload_values: info.payload_values,
            iterations: self.walls.len() as u64,
            first_iteration: self.first.unwrap_or(0),
            setup_s,
            parity_s: self.prelude,
            total_s: total,
            mean_s: self.walls.iter().sum::<f64>() / n,
            first_s: self.walls.first().copied(),
            steady_mean_s: steady_mean(&self.walls),
            median_s: quantile(&self.walls, 0.5),
            p95_s: quantile(&self.walls, 0.95),
            max_s: self.walls.iter().cloned().fold(0.0, f64::max),
            final_loss: self.last_loss,
            final_error: self.last_error,
            final_test_accuracy: self.last_accuracy,
            final_test_loss: self.test_loss.1,
            exact_iterations: self.exact,
            mean_coverage: if self.walls.is_empty() { 1.0 } else { self.coverage / n },
            rejected_results: self.rejected,
            empty_iterations: self.empty,
            faulty_results_used: self.faulty_used.0,
            faulty_iterations: self.faulty_used.1,
            late_discarded: late,
            master_bytes_per_iter: master_bytes as f64 / n,
            stragglers: info.stragglers.clone(),
            model_latency_p50_s: latency.p50,
            model_latency_p95_s: latency.p95,
            model_latency_max_s: latency.max,
            models_received: latency.count,
            compute: info.compute.clone(),
            run_dir: dir.display().to_string(),
        };
        std::fs::write(
            dir.join("summary.json"),
            serde_json::to_string_pretty(&summary).expect("summary serializes") + "\n",
        )?;
        Ok(summary)
    }
}

/// The columns every `iterations.csv` starts with (a job adds its own after them).
pub const COLUMNS: &str = "iteration,wall_s,cumulative_s,loss,normalized_error,relative_change,used,survivors,coverage,exact,residual,late_discarded,test_accuracy,rejected,faulty_used";

/// The mean of `walls` after the first (the first alone when it is the only one; `None` when
/// there is none).
///
/// ```
/// # use outrun_runlog::steady_mean;
/// assert_eq!(steady_mean(&[9.0, 1.0, 3.0]), Some(2.0));
/// assert_eq!(steady_mean(&[9.0]), Some(9.0));
/// assert_eq!(steady_mean(&[]), None);
/// ```
pub fn steady_mean(walls: &[f64]) -> Option<f64> {
    match walls {
        [] => None,
        [only] => Some(*only),
        [_, rest @ ..] => Some(rest.iter().sum::<f64>() / rest.len() as f64),
    }
}

/// Relative change ‖θ_t − θ_{t−1}‖² / ‖θ_{t−1}‖² (thesis eq. 4.9); `None` when θ_{t−1} = 0.
fn relative_change(theta: &[f64], prev: &[f64]) -> Option<f64> {
    let n = outrun_codes::sum_sq(prev);
    (n > 0.0).then(|| outrun_codes::sum_sq_diff(theta, prev) / n)
}
