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

/// Markdown table comparing runs; speedups are relative to `baseline` (or the slowest run).
pub fn table(paths: &[PathBuf], baseline: Option<&Path>) -> Result<String, String> {
    let dirs = find_runs(paths)?;
    let runs: Vec<Summary> = dirs.iter().map(|d| load(d)).collect::<Result<_, _>>()?;
    let base_total = match baseline {
        Some(b) => load(b)?.total_s,
        None => runs.iter().map(|r| r.total_s).fold(0.0, f64::max),
    };
    let mut o = String::new();
    o.push_str("| run | scheme | N | s | iterations | mean ms/it | p95 ms/it | total s | final error | exact | late discarded | speedup |\n");
    o.push_str("|---|---|---|---|---|---|---|---|---|---|---|---|\n");
    for r in &runs {
        let err = r.final_error.map_or_else(|| format!("loss {:.4e}", r.final_loss), |e| format!("{e:.4e}"));
        let exact = if r.all_exact() { "yes".to_string() } else { format!("no ({}/{})", r.exact_iterations, r.iterations) };
        o.push_str(&format!(
            "| {} | {} | {} | {} | {} | {:.2} | {:.2} | {:.3} | {} | {} | {} | {:.2}× |\n",
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
