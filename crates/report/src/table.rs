//! The comparison table.

use crate::{Options, Reach, ReportError, Run};

/// Markdown table of one comparison. Speedup = the baseline's mean iteration time / the run's
/// (the ratio of total times where the runs are equally long; runs of other lengths — a resumed
/// run's rest, a shorter repetition — compare by the iteration, not by how many they ran), and
/// on the time to a target, the baseline's time to it / the run's; baseline: `opts.baseline` if
/// it is in this comparison, else the run slowest by the iteration.
pub fn markdown(runs: &[&Run], opts: &Options) -> Result<String, ReportError> {
    let base =
        opts.baseline.as_ref().and_then(|b| runs.iter().find(|r| same_dir(&r.dir, b))).copied().unwrap_or_else(|| {
            *runs.iter().max_by(|a, b| a.summary.mean_s.total_cmp(&b.summary.mean_s)).expect("non-empty comparison")
        });
    let mut o = String::new();
    let tcols: String = opts
        .targets
        .iter()
        .map(|t| format!(" time to {} (s) | iterations to it | speedup to it |", t.describe()))
        .collect();
    // rings all-reduce: their bus bandwidth, as nccl-tests reports it
    let rings = runs.iter().any(|r| r.busbw.is_some());
    o.push_str(&format!(
        "| run | scheme | N | s | iterations | mean ms/it | first ms | mean of the rest ms/it | median ms/it | p95 ms/it | uploaded KB/it | total s | speedup |{tcols} final error | exact | late discarded | busiest node: KB/it (rank) |{}\n",
        if rings { " all-reduce busbw MB/s |" } else { "" }
    ));
    o.push_str(&format!(
        "|---|---|---|---|---|---|---|---|---|---|---|---|---|{}---|---|---|---|{}\n",
        "---|---|---|".repeat(opts.targets.len()),
        if rings { "---|" } else { "" }
    ));
    for r in runs {
        let s = &r.summary;
        let tvals: String = opts
            .targets
            .iter()
            .map(|&t| match (r.time_to(t), base.time_to(t)) {
                (Reach::At { secs: x, iterations: k }, Reach::At { secs: b, .. }) => {
                    format!(" {x:.3} | {k} | {:.2}× |", b / x)
                }
                (Reach::At { secs: x, iterations: k }, _) => format!(" {x:.3} | {k} | - |"),
                (Reach::Never, _) => " not reached | - | - |".into(),
                (Reach::NoMetric, _) => format!(" {} | - | - |", t.missing()),
            })
            .collect();
        let err = match (s.final_error, s.final_loss.is_finite()) {
            (Some(e), _) => format!("{e:.4e}"),
            (None, true) => format!("loss {:.4e}", s.final_loss),
            (None, false) => "n/a".into(),
        };
        // real data with a held-out set: the training loss beside the test accuracy
        let err = match (s.final_test_accuracy, s.final_test_loss) {
            (Some(a), _) => format!("{err}, test accuracy {:.1} %", 100.0 * a),
            // a regression's held-out metric (a Python model's evaluate)
            (None, Some(l)) => format!("{err}, test loss {l:.4e}"),
            (None, None) => err,
        };
        // a federated rule's average is not a decode: say how many rounds it accepted nothing
        let exact = match (s.job.as_str(), s.empty_iterations) {
            ("fl", 0) => "n/a".to_string(),
            ("fl", n) => format!("n/a ({n} rounds accepted no upload)"),
            _ if s.estimates() => format!("n/a (estimate, coverage {:.0} %)", 100.0 * s.mean_coverage),
            _ if s.all_exact() => "yes".to_string(),
            _ => format!("no ({}/{})", s.exact_iterations, s.iterations),
        };
        let up = r.uploaded.map_or("n/a".into(), |b| format!("{:.2}", b / 1e3));
        let busy = r.busiest.map_or("n/a".into(), |(rank, b)| format!("{:.1} ({rank})", b / 1e3));
        let bw = match (rings, r.busbw) {
            (false, _) => String::new(),
            // three significant digits at least: a small vector's bandwidth under load is not 0.0
            (true, Some(b)) if b < 1e7 => format!(" {:.3} |", b / 1e6),
            (true, Some(b)) => format!(" {:.1} |", b / 1e6),
            (true, None) => " - |".into(),
        };
        // the first iteration apart (a run's first contacts, caches, a slow start), and the mean
        // of the others; runs of builds before the fields: "n/a"
        let ms = |x: Option<f64>| x.map_or("n/a".into(), |x| format!("{:.2}", x * 1e3));
        let (first, steady) = (ms(s.first_s), ms(s.steady_mean_s));
        o.push_str(&format!(
            "| {}{} | {} | {} | {} | {} | {:.2} | {first} | {steady} | {:.2} | {:.2} | {up} | {:.3} | {:.2}× |{tvals} {err} | {exact} | {} | {busy} |{bw}\n",
            r.label(),
            if std::ptr::eq(*r, base) { " (baseline)" } else { "" },
            s.scheme,
            s.workers,
            s.s,
            s.iterations,
            s.mean_s * 1e3,
            s.median_s * 1e3,
            s.p95_s * 1e3,
            s.total_s,
            base.summary.mean_s / s.mean_s,
            s.late_discarded
        ));
    }
    Ok(o)
}

pub(crate) fn same_dir(a: &std::path::Path, b: &std::path::Path) -> bool {
    match (a.canonicalize(), b.canonicalize()) {
        (Ok(x), Ok(y)) => x == y,
        _ => a == b,
    }
}
