//! # outrun-report: comparing runs
//!
//! Reads run directories (from the MPI engine or the simulator: the format is the same) and
//! writes what `outrun report` prints or saves:
//!
//! - [`table`]: one Markdown table per comparison (runs of the same problem): iteration times,
//!   totals, time to a target error, speedups over a baseline, exactness, late results, and the
//!   traffic of the busiest node;
//! - [`plots`]: error versus wall-clock time, mean (and p95) iteration time per run, and a
//!   per-rank timeline of chosen iterations (compute, injected delay, waiting, decoding,
//!   sending; stragglers marked), and for clustered schemes the partition over time, each as
//!   PNG and SVG;
//! - [`sweep`]: a sweep's variants with medians and spread over repetitions, and one table per
//!   axis;
//! - [`blame`]: who the run waited for, worker by worker (`outrun blame`);
//! - [`fit`]: straggler laws fitted to a run's compute times (`outrun fit`);
//! - [`trace`]: a run as a Chrome trace-event file for Perfetto (`outrun trace`).

#![deny(missing_docs)]

pub mod blame;
pub mod fit;
pub mod plots;
mod segments;
pub mod sweep;
pub mod table;
pub mod trace;

use std::collections::HashMap;
use std::path::{Path, PathBuf};

use outrun_runlog::event::{Event, Shutdown};
use outrun_runlog::read::{self, IterationRow, ReadError};
use outrun_runlog::Summary;

/// Why a report could not be made.
#[derive(Debug, thiserror::Error)]
pub enum ReportError {
    /// A run directory could not be read.
    #[error("{0}")]
    Read(#[from] ReadError),
    /// A plot could not be drawn.
    #[error("{0}")]
    Plot(String),
    /// The report could not be written.
    #[error("{path}: {source}")]
    Io {
        /// The file or directory.
        path: String,
        /// The error.
        source: std::io::Error,
    },
    /// An option is invalid (e.g. a baseline that is not among the runs).
    #[error("{0}")]
    Option(String),
}

fn io(path: &Path) -> impl FnOnce(std::io::Error) -> ReportError + '_ {
    move |source| ReportError::Io { path: path.display().to_string(), source }
}

/// Write `path` whole or not at all ([`outrun_runlog::write_whole`], unsynced: a report is
/// written again from its runs); a failure (a full disk) names `path`.
pub fn write_whole(
    path: &Path,
    fill: impl FnOnce(&mut dyn std::io::Write) -> std::io::Result<()>,
) -> Result<(), ReportError> {
    outrun_runlog::write_whole(path, false, fill).map_err(io(path))
}

/// A finished run, loaded.
pub struct Run {
    /// The run directory.
    pub dir: PathBuf,
    /// Its summary.
    pub summary: Summary,
    /// Its iterations.
    pub iterations: Vec<IterationRow>,
    /// Comparison key: runs with the same data and loss are compared together.
    pub problem: String,
    /// The busiest rank and its bytes sent + received per iteration (None when not measured,
    /// e.g. `MPI_Allreduce`, whose traffic is inside the MPI library).
    pub busiest: Option<(usize, f64)>,
    /// Bytes uploaded per iteration, all ranks together: the frames nodes sent toward the
    /// aggregate (results, coded combinations, rounds, partial sums; a ring's chunks), not the
    /// model going down. None when not measured (`MPI_Allreduce`).
    pub uploaded: Option<f64>,
    /// A ring's bus bandwidth, bytes/s (None for other patterns): see [`busbw`].
    pub busbw: Option<f64>,
}

impl Run {
    /// Load a run directory.
    pub fn load(dir: &Path) -> Result<Self, ReportError> {
        let summary = read::summary(dir)?;
        let iterations = read::iterations(dir)?;
        // format 1 (before the summary named its problem): compared by size only
        let problem = match summary.problem.as_str() {
            "" => format!("d = {}, p = {}", summary.samples, summary.features),
            p => p.to_string(),
        };
        let iters = summary.iterations.max(1) as f64;
        let events = read::rank_events(dir)?;
        let busiest = events
            .iter()
            .filter_map(|(&r, evs)| {
                // None when the traffic was inside MPI (MPI_Allreduce): not measured
                let t = last_shutdown(evs)?.traffic;
                Some((r, (t.sent_bytes? + t.recv_bytes?) as f64 / iters))
            })
            .max_by(|a, b| a.1.total_cmp(&b.1).then(b.0.cmp(&a.0)));
        let (uploaded, busbw) = (uploaded(&events, iters), busbw(&events, &summary));
        Ok(Run { dir: dir.to_path_buf(), summary, iterations, problem, busiest, uploaded, busbw })
    }

    /// Short label: the run name, marked when the run was simulated (virtual time) or resumed
    /// from a checkpoint (its times and iterations are its own part only).
    pub fn label(&self) -> String {
        let s = &self.summary;
        let mut l = s.name.clone();
        if s.compute == "simulated" {
            l.push_str(" [simulated]");
        }
        if s.first_iteration > 0 {
            l.push_str(&format!(" [resumed at iteration {}]", s.first_iteration));
        }
        l
    }

    /// When the run first reached `target`.
    pub fn time_to(&self, target: Target) -> Reach {
        if !self.iterations.iter().any(|r| target.value(r).is_some()) {
            return Reach::NoMetric;
        }
        let first = self.iterations.first().map_or(0, |r| r.iteration);
        self.iterations
            .iter()
            .find(|r| target.value(r).is_some_and(|v| target.reached(v)))
            .map_or(Reach::Never, |r| Reach::At { secs: r.cumulative_s, iterations: r.iteration + 1 - first })
    }
}

/// Whether and when a run reached a [`Target`].
#[derive(Clone, Copy, Debug, PartialEq)]
pub enum Reach {
    /// Seconds from the loop start, and the iterations it took (counted from the run's first).
    At {
        /// Seconds.
        secs: f64,
        /// Iterations.
        iterations: u64,
    },
    /// The run has the metric and never reached the level.
    Never,
    /// The run has no such metric (no θ*, no test set, no loss).
    NoMetric,
}

/// A level a run may reach; the report gives the time and iterations each run took to reach it.
#[derive(Clone, Copy, Debug, PartialEq)]
pub enum Target {
    /// Normalized error at most this (synthetic data: `--target-error`).
    Error(f64),
    /// Held-out accuracy at least this fraction (`data.test_path`: `--target-accuracy`).
    Accuracy(f64),
    /// The `loss` column at most this (`--target-loss`).
    Loss(f64),
}

impl Target {
    /// The iteration's value of this target's metric, when it has one.
    fn value(self, r: &IterationRow) -> Option<f64> {
        match self {
            Target::Error(_) => r.normalized_error,
            Target::Accuracy(_) => r.test_accuracy,
            Target::Loss(_) => Some(r.loss).filter(|l| l.is_finite()),
        }
    }

    fn reached(self, v: f64) -> bool {
        match self {
            Target::Error(t) | Target::Loss(t) => v <= t,
            Target::Accuracy(t) => v >= t,
        }
    }

    /// The column's words: `error ≤ 1e-3`.
    pub fn describe(self) -> String {
        match self {
            Target::Error(t) => format!("error ≤ {t:e}"),
            Target::Accuracy(t) => format!("test accuracy ≥ {:.1} %", 100.0 * t),
            Target::Loss(t) => format!("loss ≤ {t:e}"),
        }
    }

    /// What a run without the metric lacks.
    fn missing(self) -> &'static str {
        match self {
            Target::Error(_) => "n/a (no θ*: real data)",
            Target::Accuracy(_) => "n/a (no test set)",
            Target::Loss(_) => "n/a (no loss)",
        }
    }

    /// The option that sets it.
    fn flag(self) -> &'static str {
        match self {
            Target::Error(_) => "--target-error",
            Target::Accuracy(_) => "--target-accuracy",
            Target::Loss(_) => "--target-loss",
        }
    }
}

/// A rank's last shutdown record.
fn last_shutdown(evs: &[Event]) -> Option<&Shutdown> {
    evs.iter().rev().find_map(|e| if let Event::Shutdown(s) = e { Some(s) } else { None })
}

/// Uploaded bytes per iteration: the `up_bytes` of every rank's iteration records; in a ring
/// (whose records have none, every byte it sends is reduction traffic) the ranks' bytes sent.
fn uploaded(events: &HashMap<usize, Vec<Event>>, iters: f64) -> Option<f64> {
    let ups: Vec<u64> = events
        .values()
        .flat_map(|evs| evs.iter().filter_map(|e| if let Event::Iter(i) = e { i.up_bytes } else { None }))
        .collect();
    if !ups.is_empty() {
        return Some(ups.iter().sum::<u64>() as f64 / iters);
    }
    let sent: Option<Vec<u64>> = events.values().map(|evs| last_shutdown(evs)?.traffic.sent_bytes).collect();
    sent.map(|s| s.iter().sum::<u64>() as f64 / iters)
}

/// A ring's bus bandwidth, as nccl-tests reports it: the bytes all-reduced ÷ the all-reduce's
/// time × 2(N − 1)/N (what each rank's link carries), in bytes/s, the median over iterations.
/// An iteration's all-reduce runs from the moment the last rank's result is ready to the moment
/// the last rank has the sum. None for runs that all-reduce nothing (a collect tree), or whose
/// summary does not say the payload (format 1).
pub fn busbw(events: &HashMap<usize, Vec<Event>>, s: &Summary) -> Option<f64> {
    let mut by_t: std::collections::BTreeMap<u64, (f64, f64)> = Default::default();
    for e in events.values().flatten() {
        if let Event::Iter(i) = e {
            if let (Some(ready), Some(reduced)) = (i.ready, i.reduced) {
                let slot = by_t.entry(i.t).or_insert((f64::MIN, f64::MIN));
                *slot = (slot.0.max(ready), slot.1.max(reduced));
            }
        }
    }
    let times: Vec<f64> = by_t.values().map(|(ready, reduced)| reduced - ready).filter(|d| *d > 0.0).collect();
    if times.is_empty() || s.payload_values == 0 {
        return None;
    }
    let n = s.workers as f64;
    let t = outrun_runlog::quantile(&times, 0.5);
    Some(8.0 * s.payload_values as f64 / t * 2.0 * (n - 1.0) / n)
}

/// Load the runs among `paths` (run directories, or directories of run directories).
pub fn load_runs(paths: &[PathBuf]) -> Result<Vec<Run>, ReportError> {
    read::find_runs(paths)?.iter().map(|d| Run::load(d)).collect()
}

/// Check the options against the loaded runs: a baseline must be one of them, a target error a
/// positive number.
pub fn check_options(runs: &[Run], opts: &Options) -> Result<(), ReportError> {
    if let Some(b) = &opts.baseline {
        if !runs.iter().any(|r| table::same_dir(&r.dir, b)) {
            return Err(ReportError::Option(format!(
                "--baseline {}: not one of the runs reported (give a finished run directory among them)",
                b.display()
            )));
        }
    }
    for &t in &opts.targets {
        let bad = match t {
            Target::Error(v) if !(v.is_finite() && v > 0.0) => Some((v, "must be a positive number")),
            Target::Accuracy(v) if !(v > 0.0 && v <= 1.0) => Some((v, "must be a fraction in (0, 1]: 0.9 for 90 %")),
            Target::Loss(v) if !v.is_finite() => Some((v, "must be a number")),
            _ => None,
        };
        if let Some((v, why)) = bad {
            return Err(ReportError::Option(format!("{} {v}: {why}", t.flag())));
        }
    }
    Ok(())
}

/// Group runs by problem, keeping the input order within and across groups.
pub fn comparisons(runs: &[Run]) -> Vec<Vec<&Run>> {
    let mut groups: Vec<Vec<&Run>> = Vec::new();
    for r in runs {
        match groups.iter_mut().find(|g| outrun_runlog::same_problem(&g[0].problem, &r.problem)) {
            Some(g) => g.push(r),
            None => groups.push(vec![r]),
        }
    }
    groups
}

/// Options of a report.
#[derive(Clone, Debug, Default)]
pub struct Options {
    /// Run directory whose times are the baseline for speedups (default: the run of each
    /// comparison slowest by its mean iteration time).
    pub baseline: Option<PathBuf>,
    /// Levels whose time and iterations to reach each run reports (columns, in this order).
    pub targets: Vec<Target>,
    /// Iterations shown in each timeline (a window around the slowest iteration); 0: no
    /// timeline plots.
    pub timeline_iterations: usize,
}

/// One-line account of a run (what `outrun train` prints at the end).
pub fn one_line(s: &Summary) -> String {
    let err = s.final_error.map_or(String::new(), |e| format!(", {} {e:.3e}", s.error_label));
    // a mat-vec has no loss (a power iteration's is its eigenvalue estimate)
    let loss = if s.final_loss.is_finite() { format!("; final loss {:.4e}", s.final_loss) } else { String::new() };
    let loss = match (s.final_test_accuracy, s.final_test_loss) {
        (Some(a), _) => format!("{loss}, test accuracy {:.1} %", 100.0 * a),
        // a regression's held-out metric (a Python model's evaluate)
        (None, Some(l)) => format!("{loss}, test loss {l:.4e}"),
        (None, None) => loss,
    };
    let rejected = match (s.rejected_results, s.job.as_str()) {
        (0, _) => String::new(),
        // a federated rule leaves out uploads it distrusts, honest or not
        (n, "fl") => format!("; {n} uploads left out by the rule"),
        (n, _) => format!("; {n} corrupted results rejected"),
    };
    // a federated rule's average is what the rule says, not a decode that may be inexact: say
    // instead how many rounds it accepted nothing
    let exact = match (s.job.as_str(), s.empty_iterations) {
        ("fl", 0) => String::new(),
        ("fl", n) => format!("; {n} of {} rounds accepted no upload (θ unchanged)", s.iterations),
        // ignore and CodedFedL estimate by design: what they covered, not "exact 0/n"
        _ if s.estimates() => format!("; an estimate by design, mean coverage {:.1} %", 100.0 * s.mean_coverage),
        _ => format!("; exact {}/{}", s.exact_iterations, s.iterations),
    };
    let faulty = match s.faulty_results_used {
        0 => String::new(),
        n => format!("; {n} faulty results used (in {} iterations)", s.faulty_iterations),
    };
    // the start-up (loading, the first contacts, a prelude) apart from the loop's time
    let setup = if s.compute == "simulated" { String::new() } else { format!(" after {:.1} s of setup", s.setup_s) };
    // a first iteration that took more than twice the others' mean moves a short run's mean:
    // say so, with the others' mean beside it
    let first = match (s.first_s, s.steady_mean_s) {
        (Some(f), Some(m)) if s.iterations > 1 && f > 2.0 * m => {
            format!("; the first took {:.2} ms, the others {:.2} ms on average", f * 1e3, m * 1e3)
        }
        _ => String::new(),
    };
    format!(
        "outrun: {} finished {} iterations in {:.3} s{setup} (mean {:.2} ms, p95 {:.2} ms per iteration{first}){loss}{err}{exact}; {} late results discarded{rejected}{faulty}",
        s.scheme,
        s.iterations,
        s.total_s,
        s.mean_s * 1e3,
        s.p95_s * 1e3,
        s.late_discarded
    )
}

/// Write `report.md` and the plots into `out`; returns the Markdown.
pub fn write_report(paths: &[PathBuf], opts: &Options, out: &Path) -> Result<String, ReportError> {
    let runs = load_runs(paths)?;
    check_options(&runs, opts)?;
    std::fs::create_dir_all(out).map_err(io(out))?;
    let mut md = String::from("# outrun report\n\n");
    for (k, group) in comparisons(&runs).iter().enumerate() {
        md.push_str(&format!("## Comparison {}: {}\n\n", k + 1, group[0].problem));
        md.push_str(&table::markdown(group, opts)?);
        let stem = format!("c{}", k + 1);
        match plots::error_vs_time(group, &out.join(format!("{stem}-error-vs-time")))? {
            Some(errs) => md.push_str(&format!("\n![{errs}]({stem}-error-vs-time.png)\n")),
            None => md.push_str("\nNo run has an error or a loss to plot (no round used a result).\n"),
        }
        plots::iteration_times(group, &out.join(format!("{stem}-iteration-time")))?;
        md.push_str(&format!("\n![mean iteration time]({stem}-iteration-time.png)\n\n"));
        if let Some(caption) = plots::accuracy(group, &out.join(format!("{stem}-accuracy")))? {
            md.push_str(&format!("![{caption}]({stem}-accuracy.png)\n\n"));
        }
        for r in group {
            blame_section(r, &mut md)?;
            let name = format!("{stem}-timeline-{}", sanitize(&r.label()));
            if opts.timeline_iterations > 0 {
                if let Some(caption) = plots::timeline(r, opts.timeline_iterations, &out.join(&name))? {
                    md.push_str(&format!("![{caption}]({name}.png)\n\n"));
                }
            }
            let name = format!("{stem}-partition-{}", sanitize(&r.label()));
            if let Some(caption) = plots::partition(r, &out.join(&name))? {
                md.push_str(&format!("![{caption}]({name}.png)\n\n"));
            }
        }
    }
    md.push_str("PNG and SVG versions of every plot are in this directory.\n");
    write_whole(&out.join("report.md"), |w| w.write_all(md.as_bytes()))?;
    Ok(md)
}

/// The five workers (a PageRank run's servers) a run waited for most (nothing where it waited
/// for no one).
fn blame_section(r: &Run, md: &mut String) -> Result<(), ReportError> {
    let rows = blame::blame(&read::rank_events(&r.dir)?);
    if rows.iter().any(|b| b.waited_s > 0.0) {
        md.push_str(&format!("Who {} waited for (`outrun blame`):\n\n{}\n", r.label(), blame::markdown(&rows, 5)));
    }
    Ok(())
}

fn sanitize(s: &str) -> String {
    s.chars().map(|c| if c.is_ascii_alphanumeric() || c == '-' || c == '_' { c } else { '_' }).collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Runs of other lengths (a resumed run's rest beside the run it continued) compare by the
    /// iteration: 5 iterations of 3 ms are slower than 20 of 2 ms, though done sooner.
    #[test]
    fn the_speedup_compares_iterations_not_run_lengths() {
        let run = |name: &str, iterations: u64, mean: f64| {
            let mut summary = summary(iterations, mean, None, None);
            summary.name = name.into();
            summary.total_s = iterations as f64 * mean;
            Run {
                dir: PathBuf::from(name),
                summary,
                iterations: vec![],
                problem: "p".into(),
                busiest: None,
                uploaded: None,
                busbw: None,
            }
        };
        let (long, rest) = (run("long", 20, 0.002), run("rest", 5, 0.003));
        let opts = Options { baseline: None, targets: vec![], timeline_iterations: 1 };
        let md = table::markdown(&[&long, &rest], &opts).unwrap();
        let speedup = |name: &str| {
            let row = md.lines().find(|l| l.starts_with(&format!("| {name}"))).unwrap();
            row.split('|').find_map(|c| c.trim().strip_suffix('×')).unwrap().to_string()
        };
        assert_eq!((speedup("rest (baseline)"), speedup("long")), ("1.00".to_string(), "1.50".to_string()), "{md}");
    }

    /// A write that fails part-way (a full disk) leaves the earlier file as it was and no
    /// partial file beside it, and names the file; one that succeeds replaces it.
    #[test]
    fn a_file_is_written_whole_or_not_at_all() {
        let dir = std::env::temp_dir().join(format!("outrun-report-whole-{}", std::process::id()));
        std::fs::create_dir_all(&dir).unwrap();
        let path = dir.join("trace.json");
        std::fs::write(&path, "earlier").unwrap();
        let full = write_whole(&path, |w| {
            w.write_all(b"half of it")?;
            Err(std::io::Error::from_raw_os_error(28))
        })
        .unwrap_err()
        .to_string();
        assert!(full.starts_with(&format!("{}: No space left on device", path.display())), "{full}");
        assert_eq!(std::fs::read_to_string(&path).unwrap(), "earlier");
        let names: Vec<_> = std::fs::read_dir(&dir).unwrap().map(|e| e.unwrap().file_name()).collect();
        assert_eq!(names, ["trace.json"]);
        write_whole(&path, |w| w.write_all(b"new")).unwrap();
        assert_eq!(std::fs::read_to_string(&path).unwrap(), "new");
        std::fs::remove_dir_all(&dir).unwrap();
    }

    fn summary(iterations: u64, mean: f64, first: Option<f64>, steady: Option<f64>) -> Summary {
        let mut s: Summary = serde_json::from_str(&format!(
            r#"{{"name":"m","scheme":"umw","title":"t","workers":2,"ranks":3,"s":0,"samples":4,"features":2,"iterations":{iterations},"setup_s":0.1,"total_s":1.0,"mean_s":{mean},"median_s":{mean},"p95_s":{mean},"max_s":{mean},"final_loss":null,"final_error":null,"exact_iterations":{iterations},"late_discarded":0,"master_bytes_per_iter":0.0,"stragglers":"none","compute":"real","run_dir":"x"}}"#
        ))
        .unwrap();
        (s.first_s, s.steady_mean_s) = (first, steady);
        s
    }

    /// The run's last line names a first iteration that took more than twice the others' mean,
    /// with that mean, and says nothing of one like the others (or of a summary without the
    /// fields, or of a run of one iteration).
    #[test]
    fn the_last_line_sets_a_slow_first_iteration_apart() {
        let slow = one_line(&summary(10, 0.0028, Some(0.01), Some(0.002)));
        assert!(
            slow.contains("p95 2.80 ms per iteration; the first took 10.00 ms, the others 2.00 ms on average)"),
            "{slow}"
        );
        for s in [
            summary(10, 0.0021, Some(0.003), Some(0.002)),
            summary(10, 0.0021, None, None),
            summary(1, 0.01, Some(0.01), Some(0.01)),
        ] {
            let line = one_line(&s);
            assert!(line.contains("p95 ") && !line.contains("the first took"), "{line}");
        }
    }
}
