//! Reading a run directory back.

use std::collections::HashMap;
use std::path::{Path, PathBuf};

use crate::event::Event;
use crate::files::{Summary, FORMAT};

/// One row of `iterations.csv`.
#[derive(Clone, Debug, PartialEq)]
pub struct IterationRow {
    /// Iteration.
    pub iteration: u64,
    /// Seconds of this iteration.
    pub wall_s: f64,
    /// Seconds since the loop started.
    pub cumulative_s: f64,
    /// NaN when not computed (timing-only simulations).
    pub loss: f64,
    /// Normalised error (synthetic data).
    pub normalized_error: Option<f64>,
    /// Whether the iteration's result was exact.
    pub exact: bool,
    /// Fraction of the data covered.
    pub coverage: f64,
    /// Accuracy on the held-out set (`data.test_path`).
    pub test_accuracy: Option<f64>,
}

/// A run directory that cannot be read: the path and what is wrong.
#[derive(Clone, Debug, PartialEq, thiserror::Error)]
#[error("{path}: {message}")]
pub struct ReadError {
    /// The file or directory.
    pub path: String,
    /// What is wrong.
    pub message: String,
}

fn err(path: &Path, e: impl std::fmt::Display) -> ReadError {
    ReadError { path: path.display().to_string(), message: e.to_string() }
}

/// `summary.json` of a run directory.
pub fn summary(dir: &Path) -> Result<Summary, ReadError> {
    let path = dir.join("summary.json");
    let text =
        std::fs::read_to_string(&path).map_err(|e| err(&path, format!("{e} (is it a finished run directory?)")))?;
    let summary: Summary = serde_json::from_str(&text).map_err(|e| err(&path, format!("malformed summary: {e}")))?;
    if summary.format > FORMAT {
        return Err(err(
            &path,
            format!(
                "run-directory format {} is newer than this outrun reads (up to {FORMAT}); use a newer outrun",
                summary.format
            ),
        ));
    }
    Ok(summary)
}

/// `iterations.csv` of a run directory.
pub fn iterations(dir: &Path) -> Result<Vec<IterationRow>, ReadError> {
    let path = dir.join("iterations.csv");
    let text = std::fs::read_to_string(&path).map_err(|e| err(&path, e))?;
    let mut lines = text.lines();
    let head: Vec<&str> = lines.next().unwrap_or("").split(',').collect();
    let col = |name: &str| head.iter().position(|h| *h == name).ok_or_else(|| err(&path, format!("no column {name}")));
    let (ci, cw, cc, cl, ce, cx, cv) = (
        col("iteration")?,
        col("wall_s")?,
        col("cumulative_s")?,
        col("loss")?,
        col("normalized_error")?,
        col("exact")?,
        col("coverage")?,
    );
    let ca = head.iter().position(|h| *h == "test_accuracy");
    let mut out = Vec::new();
    for (n, l) in lines.enumerate() {
        let f: Vec<&str> = l.split(',').collect();
        let bad = |c: usize| err(&path, format!("line {}: bad value in column {}", n + 2, head[c]));
        let num = |c: usize| f.get(c).and_then(|v| v.parse::<f64>().ok()).ok_or_else(|| bad(c));
        out.push(IterationRow {
            iteration: f.get(ci).and_then(|v| v.parse().ok()).ok_or_else(|| bad(ci))?,
            wall_s: num(cw)?,
            cumulative_s: num(cc)?,
            loss: f.get(cl).and_then(|v| v.parse::<f64>().ok()).unwrap_or(f64::NAN),
            normalized_error: f.get(ce).and_then(|v| v.parse().ok()),
            exact: f.get(cx) == Some(&"true"),
            coverage: num(cv)?,
            test_accuracy: ca.and_then(|c| f.get(c)?.parse().ok()),
        });
    }
    Ok(out)
}

/// Every rank's records (`rank-<r>.jsonl`), by rank. Lines that do not parse (a run killed
/// mid-line) are skipped.
pub fn rank_events(dir: &Path) -> Result<HashMap<usize, Vec<Event>>, ReadError> {
    let mut out = HashMap::new();
    let rd = std::fs::read_dir(dir).map_err(|e| err(dir, e))?;
    for entry in rd.flatten() {
        let name = entry.file_name().to_string_lossy().to_string();
        let Some(r) =
            name.strip_prefix("rank-").and_then(|n| n.strip_suffix(".jsonl")).and_then(|n| n.parse::<usize>().ok())
        else {
            continue;
        };
        let text = std::fs::read_to_string(entry.path()).map_err(|e| err(&entry.path(), e))?;
        out.insert(r, text.lines().filter_map(|l| serde_json::from_str(l).ok()).collect());
    }
    Ok(out)
}

/// Run directories among `paths`: a path holding `summary.json` is one; otherwise the run
/// directories below it, at any depth (a sweep's `runs/`, a directory of sweeps), are taken in
/// the order they finished. A sweep's `incomplete/` (runs it set aside) is not searched.
pub fn find_runs(paths: &[PathBuf]) -> Result<Vec<PathBuf>, ReadError> {
    let mut out = Vec::new();
    for p in paths {
        if p.join("summary.json").is_file() {
            out.push(p.clone());
            continue;
        }
        let mut subs = Vec::new();
        runs_below(p, 0, &mut subs).map_err(|e| err(p, e))?;
        if subs.is_empty() {
            return Err(err(p, "no finished run (summary.json) here or below"));
        }
        let finished = |d: &PathBuf| std::fs::metadata(d.join("summary.json")).and_then(|m| m.modified()).ok();
        subs.sort_by_key(|d| (finished(d), d.clone()));
        out.extend(subs);
    }
    Ok(out)
}

/// Directories searched below a path given to [`find_runs`] (a sweep's runs are 2 levels down).
const MAX_DEPTH: usize = 6;

/// The run directories below `dir` (not itself), into `out`.
fn runs_below(dir: &Path, depth: usize, out: &mut Vec<PathBuf>) -> std::io::Result<()> {
    for entry in std::fs::read_dir(dir)?.flatten() {
        let d = entry.path();
        if !d.is_dir() || entry.file_name() == "incomplete" {
            continue;
        }
        if d.join("summary.json").is_file() {
            out.push(d);
        } else if depth + 1 < MAX_DEPTH {
            runs_below(&d, depth + 1, out)?;
        }
    }
    Ok(())
}
