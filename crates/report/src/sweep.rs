//! The report of a sweep: one row per variant (medians and spread over its repetitions), then
//! one table per axis (every run with that value, across the other axes).

use outrun_runlog::Summary;

/// A variant's labels (axis key, value) and the summaries of its finished repetitions.
pub struct SweepRow {
    /// The variant's id.
    pub id: String,
    /// Axis key and value.
    pub labels: Vec<(String, String)>,
    /// Its finished runs.
    pub runs: Vec<Summary>,
}

/// The median (NaN for none).
fn median(v: Vec<f64>) -> f64 {
    outrun_runlog::quantile(&v, 0.5)
}

/// `v` with `digits` decimals, or `-` when there is none (a variant without a finished run).
fn shown(v: f64, digits: usize) -> String {
    if v.is_nan() {
        "-".into()
    } else {
        format!("{v:.digits$}")
    }
}

fn spread(v: &[f64]) -> String {
    let lo = v.iter().cloned().fold(f64::INFINITY, f64::min);
    let hi = v.iter().cloned().fold(f64::NEG_INFINITY, f64::max);
    if v.is_empty() {
        "-".into()
    } else {
        format!("{:.2}–{:.2}", lo * 1e3, hi * 1e3)
    }
}

fn error_of(s: &Summary) -> Option<f64> {
    s.final_error.or(s.final_loss.is_finite().then_some(s.final_loss))
}

/// The Markdown report.
pub fn markdown(rows: &[SweepRow]) -> String {
    let mut o = String::new();
    let Some(first) = rows.first() else { return "no variants\n".into() };
    let keys: Vec<&str> = first.labels.iter().map(|(k, _)| k.as_str()).collect();
    let any_accuracy = rows.iter().any(|r| r.runs.iter().any(|s| s.final_test_accuracy.is_some()));
    o.push_str("### Variants (median over repetitions; spread = min–max)\n\n");
    o.push_str(&format!(
        "| variant | {} | runs | mean ms/it | spread ms/it | total s | final error (or loss) | exact |{}\n",
        keys.join(" | "),
        if any_accuracy { " test accuracy |" } else { "" }
    ));
    o.push_str(&format!(
        "|---|{}---|---|---|---|---|---|{}\n",
        "---|".repeat(keys.len()),
        if any_accuracy { "---|" } else { "" }
    ));
    for r in rows {
        let means: Vec<f64> = r.runs.iter().map(|s| s.mean_s).collect();
        let errors: Vec<f64> = r.runs.iter().filter_map(error_of).collect();
        let exact = r.runs.iter().filter(|s| s.all_exact()).count();
        let acc = if any_accuracy {
            format!(
                " {} |",
                r.runs
                    .iter()
                    .filter_map(|s| s.final_test_accuracy)
                    .map(|a| format!("{:.1} %", 100.0 * a))
                    .next()
                    .unwrap_or("-".into())
            )
        } else {
            String::new()
        };
        o.push_str(&format!(
            "| {} | {} | {} | {} | {} | {} | {} | {}/{} |{acc}\n",
            r.id,
            r.labels.iter().map(|(_, v)| v.trim_matches('"').to_string()).collect::<Vec<_>>().join(" | "),
            r.runs.len(),
            shown(median(means.clone()) * 1e3, 2),
            spread(&means),
            shown(median(r.runs.iter().map(|s| s.total_s).collect()), 3),
            if errors.is_empty() { "-".into() } else { format!("{:.4e}", median(errors)) },
            exact,
            r.runs.len()
        ));
    }
    // with one axis the variants are its values already
    for (a, key) in keys.iter().enumerate().filter(|_| keys.len() > 1) {
        let mut values: Vec<&str> = Vec::new();
        for r in rows {
            if !values.contains(&r.labels[a].1.as_str()) {
                values.push(&r.labels[a].1);
            }
        }
        if values.len() < 2 {
            continue;
        }
        o.push_str(&format!("\n### By `{key}` (every run with the value, across the other axes)\n\n| {key} | runs | median ms/it | spread ms/it |\n|---|---|---|---|\n"));
        for v in values {
            let means: Vec<f64> =
                rows.iter().filter(|r| r.labels[a].1 == v).flat_map(|r| r.runs.iter().map(|s| s.mean_s)).collect();
            o.push_str(&format!(
                "| {} | {} | {} | {} |\n",
                v.trim_matches('"'),
                means.len(),
                shown(median(means.clone()) * 1e3, 2),
                spread(&means)
            ));
        }
    }
    o
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn medians_and_spread() {
        assert_eq!(median(vec![3.0, 1.0, 2.0]), 2.0);
        assert_eq!(median(vec![4.0, 1.0, 2.0, 3.0]), 2.5);
        assert!(median(vec![]).is_nan());
        assert_eq!(spread(&[0.001, 0.003]), "1.00–3.00");
    }
}
