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

/// A rank log's records, and the lines before its last that are not records: (line number,
/// why), each skipped. The last line is skipped without a word where it does not parse (a
/// run killed mid-line leaves only its last line cut); a line that is not UTF-8 is one that
/// does not parse.
pub fn parse_log(bytes: &[u8]) -> (Vec<Event>, Vec<(usize, String)>) {
    let mut lines: Vec<&[u8]> = bytes.split(|&b| b == b'\n').collect();
    if lines.last().is_some_and(|l| l.is_empty()) {
        lines.pop();
    }
    let last = lines.len();
    let (mut events, mut skipped) = (Vec::with_capacity(lines.len()), vec![]);
    for (i, line) in lines.into_iter().enumerate() {
        let parsed = std::str::from_utf8(line)
            .map_err(|e| e.to_string())
            .and_then(|l| serde_json::from_str::<Event>(l).map_err(|e| e.to_string()));
        match parsed {
            Ok(ev) => events.push(ev),
            Err(why) if i + 1 < last => skipped.push((i + 1, why)),
            Err(_) => {}
        }
    }
    (events, skipped)
}

/// Every rank's records (`rank-<r>.jsonl`), by rank. Lines that do not parse are skipped: a
/// file's last (a run killed mid-line) without a word, any other with a warning naming the
/// file, how many and the first ([`parse_log`]), since what is computed from the rest may
/// then miss records.
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
        let bytes = std::fs::read(entry.path()).map_err(|e| err(&entry.path(), e))?;
        let (events, skipped) = parse_log(&bytes);
        if let Some((line, why)) = skipped.first() {
            tracing::warn!(
                "{}: {} line(s) that are not records of a run log were skipped, the first at line {line} ({why}); what is computed from this log may miss records",
                entry.path().display(),
                skipped.len()
            );
        }
        out.insert(r, events);
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

#[cfg(test)]
mod tests {
    use super::*;

    /// A log's records are read; its last line, cut by a killed run, is skipped without a
    /// word; a damaged line before it (not JSON, not UTF-8) is skipped and named.
    #[test]
    fn a_logs_damaged_lines_are_skipped_and_named_but_its_cut_last_line_is_not() {
        let good = r#"{"ev":"warn","at":1.0,"message":"x"}"#;
        let (events, skipped) = parse_log(format!("{good}\n{good}\n").as_bytes());
        assert_eq!((events.len(), skipped.len()), (2, 0));
        let cut = format!("{good}\n{good}\n{}", &good[..10]);
        let (events, skipped) = parse_log(cut.as_bytes());
        assert_eq!((events.len(), skipped.len()), (2, 0));
        let mut damaged = format!("{good}\n{{garbage\n").into_bytes();
        damaged.extend(b"\xff\xfe\n");
        damaged.extend(format!("{good}\n{}", &good[..10]).bytes());
        let (events, skipped) = parse_log(&damaged);
        assert_eq!(events.len(), 2);
        assert_eq!(skipped.iter().map(|s| s.0).collect::<Vec<_>>(), vec![2, 3], "{skipped:?}");
        assert!(skipped[1].1.contains("utf-8"), "{skipped:?}");
    }
}
