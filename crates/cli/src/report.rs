//! Comparison tables of finished runs (from their `summary.json`).

use std::path::{Path, PathBuf};

use outrun_engine::Summary;

/// One-line account of a run.
pub fn one_line(s: &Summary) -> String {
    let err = s.final_error.map_or(String::new(), |e| format!(", normalized error {e:.3e}"));
    format!(
        "outrun: {} finished {} iterations in {:.3} s (mean {:.2} ms, p95 {:.2} ms per iteration); final loss {:.4e}{err}; exact {}/{}; {} late results discarded",
        s.scheme,
        s.iterations,
        s.total_s,
        s.mean_s * 1e3,
        s.p95_s * 1e3,
        s.final_loss,
        s.exact_iterations,
        s.iterations,
        s.late_discarded
    )
}

fn load(dir: &Path) -> Result<Summary, String> {
    let path = dir.join("summary.json");
    let text = std::fs::read_to_string(&path).map_err(|e| format!("{}: {e} (is it a finished run directory?)", path.display()))?;
    serde_json::from_str(&text).map_err(|e| format!("{}: malformed summary: {e}", path.display()))
}

/// Run directories among `paths` (a path is a run directory if it holds summary.json;
/// otherwise its subdirectories that do are taken, in the order they finished).
pub fn find_runs(paths: &[PathBuf]) -> Result<Vec<PathBuf>, String> {
    let mut out = Vec::new();
    for p in paths {
        if p.join("summary.json").is_file() {
            out.push(p.clone());
            continue;
        }
        let rd = std::fs::read_dir(p).map_err(|e| format!("{}: {e}", p.display()))?;
        let mut subs: Vec<PathBuf> = rd.filter_map(|e| e.ok().map(|e| e.path())).filter(|d| d.join("summary.json").is_file()).collect();
        if subs.is_empty() {
            return Err(format!("{}: no finished run (summary.json) here", p.display()));
        }
        let finished = |d: &PathBuf| std::fs::metadata(d.join("summary.json")).and_then(|m| m.modified()).ok();
        subs.sort_by_key(|d| (finished(d), d.clone()));
        out.extend(subs);
    }
    Ok(out)
}

/// Seconds from the start of the loop until the normalized error first reached `target`.
pub fn time_to_error(dir: &Path, target: f64) -> Result<Option<f64>, String> {
    let path = dir.join("iterations.csv");
    let text = std::fs::read_to_string(&path).map_err(|e| format!("{}: {e}", path.display()))?;
    let mut lines = text.lines();
    let head: Vec<&str> = lines.next().unwrap_or("").split(',').collect();
    let col = |name: &str| head.iter().position(|h| *h == name).ok_or_else(|| format!("{}: no column {name}", path.display()));
    let (ce, ct) = (col("normalized_error")?, col("cumulative_s")?);
    for l in lines {
        let f: Vec<&str> = l.split(',').collect();
        if let (Some(Ok(e)), Some(Ok(t))) = (f.get(ce).map(|v| v.parse::<f64>()), f.get(ct).map(|v| v.parse::<f64>())) {
            if e <= target {
                return Ok(Some(t));
            }
        }
    }
    Ok(None)
}

/// Markdown table comparing runs. `speedup` is the baseline's total time over the run's
/// (baseline: `baseline`, or the slowest run); with `target_error`, also the time to reach it
/// and the speedup on that time.
pub fn table(paths: &[PathBuf], baseline: Option<&Path>, target_error: Option<f64>) -> Result<String, String> {
    let dirs = find_runs(paths)?;
    let runs: Vec<Summary> = dirs.iter().map(|d| load(d)).collect::<Result<_, _>>()?;
    let base = match baseline {
        Some(b) => Some(b.to_path_buf()),
        None => None,
    };
    let base_total = match &base {
        Some(b) => load(b)?.total_s,
        None => runs.iter().map(|r| r.total_s).fold(0.0, f64::max),
    };
    let to_target: Vec<Option<f64>> = match target_error {
        Some(e) => dirs.iter().map(|d| time_to_error(d, e)).collect::<Result<_, _>>()?,
        None => vec![None; runs.len()],
    };
    let base_target = match (&base, target_error) {
        (Some(b), Some(e)) => time_to_error(b, e)?,
        (None, Some(_)) => to_target.iter().flatten().cloned().fold(None, |m: Option<f64>, v| Some(m.map_or(v, |m| m.max(v)))),
        _ => None,
    };
    let mut o = String::new();
    let extra = target_error.map_or(String::new(), |e| format!(" time to error ≤ {e:e} (s) | speedup to error |"));
    o.push_str(&format!("| run | scheme | N | s | iterations | mean ms/it | p95 ms/it | total s | final error | exact | late discarded | speedup |{extra}\n"));
    o.push_str(&format!("|---|---|---|---|---|---|---|---|---|---|---|---|{}\n", if target_error.is_some() { "---|---|" } else { "" }));
    for (r, tt) in runs.iter().zip(&to_target) {
        let err = r.final_error.map_or_else(|| format!("loss {:.4e}", r.final_loss), |e| format!("{e:.4e}"));
        let exact = if r.all_exact() { "yes".to_string() } else { format!("no ({}/{})", r.exact_iterations, r.iterations) };
        let extra = match target_error {
            None => String::new(),
            Some(_) => match (tt, base_target) {
                (Some(t), Some(b)) => format!(" {t:.3} | {:.2}× |", b / t),
                (Some(t), None) => format!(" {t:.3} | - |"),
                (None, _) => " not reached | - |".into(),
            },
        };
        o.push_str(&format!(
            "| {} | {} | {} | {} | {} | {:.2} | {:.2} | {:.3} | {} | {} | {} | {:.2}× |{extra}\n",
            r.name,
            r.scheme,
            r.workers,
            r.s,
            r.iterations,
            r.mean_s * 1e3,
            r.p95_s * 1e3,
            r.total_s,
            err,
            exact,
            r.late_discarded,
            base_total / r.total_s
        ));
    }
    Ok(o)
}
