//! The logging rank's book-keeping: per-iteration metrics into `iterations.csv`, the optional
//! trajectory, the final model, and the run summary.

use std::path::PathBuf;

use outrun_plan::config::DataKind;
use outrun_plan::{Config, Plan};

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
use outrun_workloads::data::theta_star;
use outrun_workloads::metrics::{normalized_error, relative_change};

use crate::files::{quantile, Lines, Summary};

/// What the book needs to know about the run.
pub struct RunInfo<'a> {
    /// The resolved config.
    pub config: &'a Config,
    /// The plan.
    pub plan: &'a Plan,
    /// Model dimension p.
    pub features: usize,
    /// The run directory.
    pub run_dir: PathBuf,
    /// How compute time was obtained: "real", "modelled" or "simulated".
    pub compute: &'a str,
}

/// One iteration's outcome at the master.
pub struct IterationRecord<'a> {
    /// Iteration.
    pub t: u64,
    /// When the result was applied (run timeline, seconds).
    pub end: f64,
    /// θ after the update (None when the model was not computed, e.g. a timing-only
    /// simulation: the metrics are then left empty).
    pub theta: Option<&'a [f64]>,
    /// Loss at θ_t (NaN when not computed).
    pub loss: f64,
    /// The job's own error of the iteration (a power iteration's residual), used for the
    /// `normalized_error` column when there is no θ* to compare with.
    pub error: Option<f64>,
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
}

/// The logging rank's per-iteration records and the run summary.
pub struct Book {
    csv: Lines,
    traj: Lines,
    star: Option<Vec<f64>>,
    prev_theta: Vec<f64>,
    last_end: f64,
    /// Start of the timed loop (run timeline, seconds).
    pub loop_start: f64,
    walls: Vec<f64>,
    exact: u64,
    last_loss: f64,
    last_error: Option<f64>,
    test: Option<outrun_workloads::Rows>,
    last_accuracy: Option<f64>,
}

impl Book {
    /// Open `iterations.csv` (and `trajectory.csv`) in the run directory.
    pub fn new(shared: &RunInfo, loop_start: f64) -> std::io::Result<Self> {
        let dir = &shared.run_dir;
        // a write that fails here fails the run's summary later, with one line (no warning)
        let mut csv = Lines::create(&dir.join("iterations.csv"))?.quiet();
        csv.line("iteration,wall_s,cumulative_s,loss,normalized_error,relative_change,used,survivors,coverage,exact,residual,late_discarded,test_accuracy");
        let traj = if shared.config.run.trajectory {
            Lines::create(&dir.join("trajectory.csv"))?.quiet()
        } else {
            Lines::none()
        };
        let star = match (shared.config.matvec(), shared.config.pagerank()) {
            (Some(_), _) | (_, Some(_)) => None,
            _ => match shared.config.data().kind {
                DataKind::Libsvm => None,
                kind => theta_star(kind, shared.config.run.seed, shared.features),
            },
        };
        let mut book = Book {
            csv,
            traj,
            star,
            prev_theta: vec![0.0; shared.features],
            last_end: loop_start,
            loop_start,
            walls: Vec::new(),
            exact: 0,
            last_loss: f64::NAN,
            last_error: None,
            test: None,
            last_accuracy: None,
        };
        book.trajectory(0, &vec![0.0; shared.features]);
        Ok(book)
    }

    /// Report the accuracy of every θ on this held-out set (`data.test_path`).
    pub fn with_test(mut self, rows: Option<outrun_workloads::Rows>) -> Self {
        self.test = rows;
        self
    }

    fn trajectory(&mut self, t: u64, theta: &[f64]) {
        if !self.traj.is_active() {
            return;
        }
        let vals: Vec<String> = theta.iter().map(|v| v.to_string()).collect();
        self.traj.line(&format!("{t},{}", vals.join(",")));
    }

    /// Record iteration t (θ is θ_{t+1}, the loss is at θ_t). Returns the wall time.
    pub fn record(&mut self, r: IterationRecord) -> f64 {
        let wall = r.end - self.last_end;
        self.last_end = r.end;
        self.walls.push(wall);
        let err = r.theta.and_then(|th| self.star.as_ref().map(|s| normalized_error(th, s))).or(r.error);
        if let Some(th) = r.theta {
            // a state of another length than the model (a mat-vec's y)
            self.prev_theta.resize(th.len(), 0.0);
        }
        let rel = r.theta.and_then(|th| relative_change(th, &self.prev_theta));
        let opt = |v: Option<f64>| v.map_or(String::new(), |x| format!("{x:e}"));
        let survivors: Vec<String> = r.used.iter().map(|w| w.to_string()).collect();
        let accuracy = match (&self.test, r.theta) {
            (Some(test), Some(th)) => Some(outrun_workloads::metrics::accuracy(test, th)),
            _ => None,
        };
        self.csv.line(&format!(
            "{},{:.6},{:.6},{},{},{},{},{},{:.6},{},{:e},{},{}",
            r.t,
            wall,
            r.end - self.loop_start,
            if r.loss.is_finite() { format!("{:e}", r.loss) } else { String::new() },
            opt(err),
            opt(rel),
            r.used.len(),
            survivors.join(" "),
            r.coverage,
            r.exact,
            r.residual,
            r.late_total,
            accuracy.map_or(String::new(), |a| format!("{a:.6}"))
        ));
        if accuracy.is_some() {
            self.last_accuracy = accuracy;
        }
        if let Some(th) = r.theta {
            self.trajectory(r.t + 1, th);
            self.prev_theta.copy_from_slice(th);
        }
        self.exact += u64::from(r.exact);
        self.last_loss = r.loss;
        self.last_error = err;
        wall
    }

    /// Write the final state (`theta.txt`, or a mat-vec's `y.txt`) and `summary.json`; returns
    /// the summary.
    pub fn finish(
        &self,
        shared: &RunInfo,
        theta: &[f64],
        setup_s: f64,
        late: u64,
        master_bytes: u64,
        latency: Latency,
    ) -> std::io::Result<Summary> {
        let text: String = theta.iter().map(|v| format!("{v:e}\n")).collect();
        self.finish_with_state(shared, &text, setup_s, late, master_bytes, latency)
    }

    /// [`Book::finish`] with the state file's text given (PageRank's `ranks.txt`: `id rank`
    /// lines).
    pub fn finish_with_state(
        &self,
        shared: &RunInfo,
        state: &str,
        setup_s: f64,
        late: u64,
        master_bytes: u64,
        latency: Latency,
    ) -> std::io::Result<Summary> {
        let dir = &shared.run_dir;
        for (name, lines) in [("iterations.csv", &self.csv), ("trajectory.csv", &self.traj)] {
            if let Some(e) = lines.failure() {
                return Err(std::io::Error::other(format!("{name} dropped lines ({e})")));
            }
        }
        std::fs::write(dir.join(shared.config.job.state_file()), state)?;
        let plan = &shared.plan;
        let total = self.last_end - self.loop_start;
        let n = self.walls.len().max(1) as f64;
        let summary = Summary {
            name: shared.config.run.name.clone(),
            scheme: plan.scheme.clone(),
            title: plan.title.clone(),
            workers: plan.workers,
            ranks: plan.ranks,
            s: plan.s,
            samples: plan.samples,
            features: shared.features,
            iterations: self.walls.len() as u64,
            setup_s,
            total_s: total,
            mean_s: self.walls.iter().sum::<f64>() / n,
            median_s: quantile(&self.walls, 0.5),
            p95_s: quantile(&self.walls, 0.95),
            max_s: self.walls.iter().cloned().fold(0.0, f64::max),
            final_loss: self.last_loss,
            final_error: self.last_error,
            final_test_accuracy: self.last_accuracy,
            exact_iterations: self.exact,
            late_discarded: late,
            master_bytes_per_iter: master_bytes as f64 / n,
            stragglers: plan.stragglers.name().into(),
            model_latency_p50_s: latency.p50,
            model_latency_p95_s: latency.p95,
            model_latency_max_s: latency.max,
            models_received: latency.count,
            compute: shared.compute.to_string(),
            run_dir: dir.display().to_string(),
        };
        std::fs::write(
            dir.join("summary.json"),
            serde_json::to_string_pretty(&summary).expect("summary serializes") + "\n",
        )?;
        Ok(summary)
    }
}
