//! Run directories, their files, and the run summary.
//!
//! ```text
//! runs/<name>-<UTC timestamp>/
//!   config.toml        the resolved configuration
//!   plan.json          the plan every rank executed
//!   rank-<r>.jsonl     per-rank events, one JSON object per line
//!   iterations.csv     per-iteration results at the master (rank 0 for rings)
//!   theta.txt          the final model, one value per line
//!   trajectory.csv     θ after every iteration (with run.trajectory = true)
//!   summary.json       totals and statistics of the run
//! ```
//!
//! Every line is flushed as it is written, so a killed run leaves usable logs.

use std::fs::{File, OpenOptions};
use std::io::{LineWriter, Write};
use std::path::{Path, PathBuf};

use serde::{Deserialize, Serialize};

/// JSON has no NaN: serde_json writes it as null; read null back as NaN.
fn nan_if_null<'de, D: serde::Deserializer<'de>>(d: D) -> Result<f64, D::Error> {
    Ok(Option::<f64>::deserialize(d)?.unwrap_or(f64::NAN))
}

/// Seconds since the Unix epoch as `YYYYmmdd-HHMMSS` (UTC).
pub fn utc_stamp(secs: u64) -> String {
    let days = (secs / 86_400) as i64;
    let rem = secs % 86_400;
    // civil-from-days (Howard Hinnant's algorithm)
    let z = days + 719_468;
    let era = z.div_euclid(146_097);
    let doe = z - era * 146_097;
    let yoe = (doe - doe / 1460 + doe / 36_524 - doe / 146_096) / 365;
    let y = yoe + era * 400;
    let doy = doe - (365 * yoe + yoe / 4 - yoe / 100);
    let mp = (5 * doy + 2) / 153;
    let d = doy - (153 * mp + 2) / 5 + 1;
    let m = if mp < 10 { mp + 3 } else { mp - 9 };
    let y = if m <= 2 { y + 1 } else { y };
    format!("{y:04}{m:02}{d:02}-{:02}{:02}{:02}", rem / 3600, rem % 3600 / 60, rem % 60)
}

/// Bytes an unprivileged process may still write on the file system holding `path` (`statvfs`'s
/// available blocks), or `None` where it cannot be asked.
pub fn free_bytes(path: &Path) -> Option<u64> {
    use std::os::unix::ffi::OsStrExt;
    let c = std::ffi::CString::new(path.as_os_str().as_bytes()).ok()?;
    let mut st = std::mem::MaybeUninit::<libc::statvfs>::uninit();
    // SAFETY: `c` is a NUL-terminated path and `st` points to writable memory of the right size;
    // statvfs only writes it.
    let rc = unsafe { libc::statvfs(c.as_ptr(), st.as_mut_ptr()) };
    if rc != 0 {
        return None;
    }
    // SAFETY: statvfs returned 0, so it filled the struct.
    let st = unsafe { st.assume_init() };
    // the fields are u64 on Linux x86-64 but narrower elsewhere
    #[allow(clippy::unnecessary_cast)]
    Some((st.f_bavail as u64).saturating_mul(st.f_frsize as u64))
}

/// Bytes of the plain files directly in `dir` (a run directory's logs).
pub fn dir_bytes(dir: &Path) -> u64 {
    std::fs::read_dir(dir)
        .map(|it| it.flatten().filter_map(|e| e.metadata().ok()).filter(|m| m.is_file()).map(|m| m.len()).sum())
        .unwrap_or(0)
}

/// A run directory that grew by `grown` bytes over `done` iterations and has `left` to go, at
/// that pace: `(bytes it would grow by more, bytes free on its disk)` when the first exceeds the
/// second; `None` when it fits (or the disk cannot be asked, or nothing is done yet).
///
/// ```
/// // 1 KB per iteration for 1000 more iterations needs 1 MB
/// let dir = std::env::temp_dir();
/// assert!(outrun_runlog::outgrows(&dir, 16_000, 16, 1000).is_none());
/// assert_eq!(outrun_runlog::outgrows(&dir, 16_000, 16, u64::MAX / 1000).map(|(more, _)| more), Some(u64::MAX));
/// ```
pub fn outgrows(dir: &Path, grown: u64, done: u64, left: u64) -> Option<(u64, u64)> {
    if done == 0 {
        return None;
    }
    let more = (grown as f64 / done as f64 * left as f64).min(u64::MAX as f64) as u64;
    free_bytes(dir).filter(|&free| more > free).map(|free| (more, free))
}

/// Write `path` whole or not at all: into `<name>.tmp` beside it (synced first where `sync`:
/// a checkpoint must survive a crash), renamed over it once every byte is written. A failure
/// (a full disk) removes the temporary file and leaves an earlier `path` as it was.
pub fn write_whole(
    path: &Path,
    sync: bool,
    fill: impl FnOnce(&mut dyn Write) -> std::io::Result<()>,
) -> std::io::Result<()> {
    let name = path.file_name().map_or_else(|| "out".into(), |n| n.to_string_lossy().into_owned());
    let tmp = path.with_file_name(format!("{name}.tmp"));
    let written = (|| {
        let mut w = std::io::BufWriter::new(File::create(&tmp)?);
        fill(&mut w)?;
        let f = w.into_inner().map_err(std::io::IntoInnerError::into_error)?;
        if sync {
            f.sync_all()?;
        }
        std::fs::rename(&tmp, path)
    })();
    if written.is_err() {
        let _ = std::fs::remove_file(&tmp);
    }
    written
}

/// Create a fresh run directory `<out_dir>/<name>-<stamp>[-k]`.
pub fn create_run_dir(out_dir: &Path, name: &str) -> std::io::Result<PathBuf> {
    std::fs::create_dir_all(out_dir)?;
    let secs = std::time::SystemTime::now().duration_since(std::time::UNIX_EPOCH).map(|d| d.as_secs()).unwrap_or(0);
    let base = format!("{name}-{}", utc_stamp(secs));
    for k in 0..10_000 {
        let dir = if k == 0 { out_dir.join(&base) } else { out_dir.join(format!("{base}-{k}")) };
        match std::fs::create_dir(&dir) {
            Ok(()) => return Ok(dir),
            Err(e) if e.kind() == std::io::ErrorKind::AlreadyExists => continue,
            Err(e) => return Err(e),
        }
    }
    Err(std::io::Error::other("could not find a free run directory name"))
}

/// A line-buffered text file (each line reaches the OS when written).
pub struct Lines {
    w: Option<LineWriter<File>>,
    path: PathBuf,
    /// Report a failed write through [`Lines::failure`] instead of a warning (the engine's rank
    /// logs: the master reports every rank's in one line).
    quiet: bool,
    failure: Option<String>,
}

impl Lines {
    /// Create (truncate) the file.
    pub fn create(path: &Path) -> std::io::Result<Self> {
        let f = OpenOptions::new().create(true).truncate(true).write(true).open(path)?;
        Ok(Lines { w: Some(LineWriter::new(f)), path: path.to_path_buf(), quiet: false, failure: None })
    }

    /// A sink that discards everything.
    pub fn none() -> Self {
        Lines { w: None, path: PathBuf::new(), quiet: false, failure: None }
    }

    /// Record a failed write (see [`Lines::failure`]) instead of warning.
    pub fn quiet(mut self) -> Self {
        self.quiet = true;
        self
    }

    /// The error that made this file drop its lines, if one did.
    pub fn failure(&self) -> Option<&str> {
        self.failure.as_deref()
    }

    /// Whether lines go anywhere (callers skip building lines nobody will read).
    pub fn is_active(&self) -> bool {
        self.w.is_some()
    }

    /// Write one line (a full disk must not kill a running experiment: the log is dropped,
    /// with one warning naming the file and the error).
    pub fn line(&mut self, s: &str) {
        if let Some(w) = &mut self.w {
            if let Err(e) = writeln!(w, "{s}") {
                if !self.quiet {
                    tracing::warn!("cannot write {}: {e}; further lines to it are dropped", self.path.display());
                }
                self.failure = Some(e.to_string());
                self.w = None;
            }
        }
    }

    /// Write one log record as a line.
    pub fn event(&mut self, e: &crate::Event) {
        if self.is_active() {
            self.line(&serde_json::to_string(e).expect("records serialize"));
        }
    }
}

/// The run-directory format this version writes: 2 added the summary's `format`, `job`,
/// `problem` and `error_label` (a run directory without them is format 1 and still read).
pub const FORMAT: u32 = 2;

fn format_1() -> u32 {
    1
}

fn is_zero(n: &u64) -> bool {
    *n == 0
}

fn normalized_error() -> String {
    "normalized error".into()
}

/// Statistics of a finished run (`summary.json`).
#[derive(Clone, Debug, Serialize, Deserialize, PartialEq)]
pub struct Summary {
    /// The run-directory format ([`FORMAT`]; 1 when absent).
    #[serde(default = "format_1")]
    pub format: u32,
    /// `run.name`.
    pub name: String,
    /// `scheme.kind`.
    pub scheme: String,
    /// The plan's one-line description.
    pub title: String,
    /// The job's config spelling (`gd`, `matvec`, `pagerank`; empty in format 1).
    #[serde(default)]
    pub job: String,
    /// One line naming the problem: runs of the same problem are compared together (empty in
    /// format 1).
    #[serde(default)]
    pub problem: String,
    /// What `final_error` and the `normalized_error` column hold.
    #[serde(default = "normalized_error")]
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
    /// Values a result carries (the payload every node sends up, or a ring all-reduces; 0 in
    /// format 1).
    #[serde(default)]
    pub payload_values: usize,
    /// Iterations completed.
    pub iterations: u64,
    /// The iteration the run started at: a resumed run's checkpoint's (its `iterations` are
    /// those it ran itself), 0 otherwise.
    #[serde(default)]
    pub first_iteration: u64,
    /// Seconds from start to the first iteration.
    pub setup_s: f64,
    /// Seconds of CodedFedL's one-time parity upload before the first iteration (counted in
    /// `cumulative_s`); absent for other schemes.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub parity_s: Option<f64>,
    /// Seconds of the timed loop.
    pub total_s: f64,
    /// Mean seconds per iteration.
    pub mean_s: f64,
    /// Seconds of the loop's first iteration (absent with no iteration, and in runs of builds
    /// before this field).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub first_s: Option<f64>,
    /// Mean seconds per iteration after the first (the first's alone when the run has one): the
    /// figure a short run's comparison should use, since its first iteration can cost more than
    /// the others (docs/logs.md). Absent with no iteration, and in runs of builds before this
    /// field.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub steady_mean_s: Option<f64>,
    /// Median seconds per iteration.
    pub median_s: f64,
    /// 95th percentile of seconds per iteration.
    pub p95_s: f64,
    /// Slowest iteration, seconds.
    pub max_s: f64,
    /// Loss at the last iteration's model (NaN when the job has none — a mat-vec, PageRank —
    /// written as null).
    #[serde(deserialize_with = "nan_if_null")]
    pub final_loss: f64,
    /// Normalised error of the final model (synthetic data).
    pub final_error: Option<f64>,
    /// Accuracy of the final model on `data.test_path` (logistic regression with a test set).
    #[serde(default)]
    pub final_test_accuracy: Option<f64>,
    /// Mean loss of the final model on the held-out rows (`iterations.csv`'s `test_loss`:
    /// a Python regression's held-out metric), where the job logs one.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub final_test_loss: Option<f64>,
    /// Iterations whose gradient was exact (decoded or complete).
    pub exact_iterations: u64,
    /// Mean over the iterations of `coverage`, the fraction of the data the gradient covered
    /// (below 1 only where a scheme estimates: `ignore`, CodedFedL).
    #[serde(default = "one")]
    pub mean_coverage: f64,
    /// Results rejected as corrupted at the master (robust decoding), over the run.
    #[serde(default)]
    pub rejected_results: u64,
    /// Iterations whose result used no worker: federated rounds whose rule accepted no upload
    /// (θ stayed where it was, and the round has no loss).
    #[serde(default, skip_serializing_if = "is_zero")]
    pub empty_iterations: u64,
    /// Results of workers `[faults]` corrupted that the master used anyway, over the run, and
    /// the iterations with at least one.
    #[serde(default)]
    pub faulty_results_used: u64,
    /// See `faulty_results_used`.
    #[serde(default)]
    pub faulty_iterations: u64,
    /// Late messages discarded at the master (rank 0 of a ring).
    pub late_discarded: u64,
    /// Bytes received by the master (rank 0) per iteration, on average.
    pub master_bytes_per_iter: f64,
    /// `stragglers.model`.
    pub stragglers: String,
    /// How compute time was obtained: real, modelled, simulated.
    pub compute: String,
    /// The run directory.
    pub run_dir: String,
    /// Model send→receive latency at the workers, median (seconds).
    #[serde(default)]
    pub model_latency_p50_s: Option<f64>,
    /// Model send→receive latency at the workers, 95th percentile (seconds).
    #[serde(default)]
    pub model_latency_p95_s: Option<f64>,
    /// Model send→receive latency at the workers, largest (seconds).
    #[serde(default)]
    pub model_latency_max_s: Option<f64>,
    /// Models the workers received.
    #[serde(default)]
    pub models_received: u64,
}

impl Summary {
    /// Whether every iteration was exact.
    pub fn all_exact(&self) -> bool {
        self.exact_iterations == self.iterations
    }

    /// Whether the scheme estimates the gradient by design (`ignore` rescales the parts that
    /// arrived, CodedFedL adds a parity estimate): "exact" does not apply to it, its coverage
    /// does.
    pub fn estimates(&self) -> bool {
        matches!(self.scheme.as_str(), "ignore" | "codedfedl")
    }
}

fn one() -> f64 {
    1.0
}

/// `q`-quantile (0..=1) of unsorted values, by linear interpolation.
pub fn quantile(values: &[f64], q: f64) -> f64 {
    if values.is_empty() {
        return f64::NAN;
    }
    let mut v = values.to_vec();
    v.sort_by(f64::total_cmp);
    let pos = q.clamp(0.0, 1.0) * (v.len() - 1) as f64;
    let (lo, hi) = (pos.floor() as usize, pos.ceil() as usize);
    v[lo] + (v[hi] - v[lo]) * (pos - lo as f64)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn utc_stamps() {
        assert_eq!(utc_stamp(0), "19700101-000000");
        assert_eq!(utc_stamp(951_782_400), "20000229-000000");
        assert_eq!(utc_stamp(1_795_312_245), "20261122-015045");
    }

    #[test]
    fn quantiles() {
        let v = [3.0, 1.0, 2.0, 4.0, 5.0];
        assert_eq!(quantile(&v, 0.5), 3.0);
        assert_eq!(quantile(&v, 0.0), 1.0);
        assert_eq!(quantile(&v, 1.0), 5.0);
        assert!((quantile(&v, 0.95) - 4.8).abs() < 1e-12);
    }

    /// A job without a loss (mat-vec, PageRank) writes NaN as null; the summary reads back.
    #[test]
    fn a_summary_without_loss_round_trips() {
        let json = r#"{"name":"m","scheme":"hcmm","title":"t","workers":2,"ranks":3,"s":0,"samples":4,"features":2,"iterations":1,"setup_s":0.1,"total_s":1.0,"mean_s":1.0,"median_s":1.0,"p95_s":1.0,"max_s":1.0,"final_loss":null,"final_error":null,"exact_iterations":1,"late_discarded":0,"master_bytes_per_iter":0.0,"stragglers":"none","compute":"real","run_dir":"x"}"#;
        let s: Summary = serde_json::from_str(json).unwrap();
        assert!(s.final_loss.is_nan());
        let again: Summary = serde_json::from_str(&serde_json::to_string(&s).unwrap()).unwrap();
        assert!(again.final_loss.is_nan() && again.final_test_accuracy.is_none());
    }

    #[test]
    fn run_dirs_are_unique() {
        let tmp = std::env::temp_dir().join(format!("outrun-runlog-{}", std::process::id()));
        let a = create_run_dir(&tmp, "x").unwrap();
        let b = create_run_dir(&tmp, "x").unwrap();
        assert_ne!(a, b);
        std::fs::remove_dir_all(&tmp).unwrap();
    }
}
