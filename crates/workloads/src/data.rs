//! Data sets.
//!
//! A data set is a matrix of d rows (features) and a label per row. Synthetic sets are
//! generated row by row from `(seed, row)`, so any rank can produce any subset of rows without
//! the others, and every rank gets identical values (see `outrun_codes::rng`).
//!
//! - `linear-synthetic` (CR paper eq. 10): x ~ N(0, I_p), θ* ~ N(0, I_p), y = xᵀθ* + noise·z,
//!   z ~ N(0, 1).
//! - `logistic-synthetic`: x ~ N(0, I_p), θ* ~ N(0, I_p / p), y = 1 with probability σ(xᵀθ*).
//! - `libsvm`: `label index:value ...` per line, 1-based indices, read dense. For the logistic
//!   loss, labels must be 0/1 (−1 is read as 0).

use std::path::Path;

use outrun_codes::rng::{domain, Rng};
use outrun_plan::config::{Config, DataKind, Loss};

/// Rows of a data set (row-major features, labels), optionally with one coefficient per row.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct Rows {
    /// Features per row.
    pub p: usize,
    /// `len × p`, row-major.
    pub x: Vec<f64>,
    pub y: Vec<f64>,
}

impl Rows {
    pub fn new(p: usize) -> Self {
        Rows { p, x: Vec::new(), y: Vec::new() }
    }

    pub fn len(&self) -> usize {
        self.y.len()
    }

    pub fn is_empty(&self) -> bool {
        self.y.is_empty()
    }

    pub fn row(&self, i: usize) -> &[f64] {
        &self.x[i * self.p..(i + 1) * self.p]
    }

    pub fn push(&mut self, x: &[f64], y: f64) {
        assert_eq!(x.len(), self.p);
        self.x.extend_from_slice(x);
        self.y.push(y);
    }

    /// The rows with the given indices, in that order.
    pub fn select(&self, idx: impl IntoIterator<Item = usize>) -> Rows {
        let mut out = Rows::new(self.p);
        for i in idx {
            out.push(self.row(i), self.y[i]);
        }
        out
    }
}

/// A data problem, with the line or field it concerns.
#[derive(Clone, Debug, PartialEq)]
pub struct DataError(pub String);

impl std::fmt::Display for DataError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(&self.0)
    }
}

impl std::error::Error for DataError {}

/// The true model θ* of a synthetic data set.
pub fn theta_star(kind: DataKind, seed: u64, p: usize) -> Option<Vec<f64>> {
    let mut rng = Rng::from_key(&[seed, domain::THETA_STAR, p as u64]);
    match kind {
        DataKind::LinearSynthetic => Some((0..p).map(|_| rng.normal()).collect()),
        DataKind::LogisticSynthetic => {
            let scale = 1.0 / (p as f64).sqrt();
            Some((0..p).map(|_| rng.normal() * scale).collect())
        }
        DataKind::Libsvm => None,
    }
}

/// Generate the synthetic rows with the given indices.
pub fn synthetic_rows(kind: DataKind, seed: u64, p: usize, noise: f64, idx: impl IntoIterator<Item = usize>) -> Rows {
    let theta = theta_star(kind, seed, p).expect("synthetic kind");
    let mut out = Rows::new(p);
    let mut x = vec![0.0; p];
    for i in idx {
        let mut rng = Rng::from_key(&[seed, domain::FEATURES, i as u64]);
        for v in x.iter_mut() {
            *v = rng.normal();
        }
        let z: f64 = x.iter().zip(&theta).map(|(a, b)| a * b).sum();
        let mut nr = Rng::from_key(&[seed, domain::NOISE, i as u64]);
        let y = match kind {
            DataKind::LinearSynthetic => z + noise * nr.normal(),
            DataKind::LogisticSynthetic => f64::from(nr.uniform() < 1.0 / (1.0 + libm::exp(-z))),
            DataKind::Libsvm => unreachable!(),
        };
        out.push(&x, y);
    }
    out
}

/// Parse LIBSVM text. `max_samples` keeps the first lines only; `features` fixes the dense
/// width (otherwise the largest index). Errors name the line.
pub fn parse_libsvm(text: &str, origin: &str, max_samples: Option<usize>, features: Option<usize>, loss: Loss) -> Result<Rows, DataError> {
    let mut entries: Vec<(f64, Vec<(usize, f64)>)> = Vec::new();
    let mut maxidx = 0usize;
    for (ln, line) in text.lines().enumerate() {
        let ln = ln + 1;
        let line = line.split('#').next().unwrap_or("").trim();
        if line.is_empty() {
            continue;
        }
        if max_samples.is_some_and(|m| entries.len() >= m) {
            break;
        }
        let bad = |what: String| DataError(format!("{origin}:{ln}: {what}"));
        let mut it = line.split_whitespace();
        let lab = it.next().unwrap();
        let mut y: f64 = lab.parse().map_err(|_| bad(format!("label `{lab}` is not a number")))?;
        if !y.is_finite() {
            return Err(bad(format!("label `{lab}` is not finite")));
        }
        if loss == Loss::Logistic {
            y = match y {
                v if v == 1.0 => 1.0,
                v if v == 0.0 || v == -1.0 => 0.0,
                _ => return Err(bad(format!("label `{lab}` is not 0, 1 or -1 (model.loss = \"logistic\")"))),
            };
        }
        let mut feats = Vec::new();
        for tok in it {
            let (i, v) = tok.split_once(':').ok_or_else(|| bad(format!("`{tok}` is not index:value")))?;
            let i: usize = i.parse().map_err(|_| bad(format!("index in `{tok}` is not a positive integer")))?;
            if i == 0 {
                return Err(bad(format!("index 0 in `{tok}`: LIBSVM indices start at 1")));
            }
            let v: f64 = v.parse().map_err(|_| bad(format!("value in `{tok}` is not a number")))?;
            if !v.is_finite() {
                return Err(bad(format!("value in `{tok}` is not finite")));
            }
            if let Some(f) = features {
                if i > f {
                    return Err(bad(format!("index {i} exceeds data.features = {f}")));
                }
            }
            maxidx = maxidx.max(i);
            feats.push((i - 1, v));
        }
        entries.push((y, feats));
    }
    if entries.is_empty() {
        return Err(DataError(format!("{origin}: no data lines")));
    }
    if let Some(m) = max_samples {
        if entries.len() < m {
            return Err(DataError(format!("{origin}: data.samples = {m} but the file has only {} lines of data", entries.len())));
        }
    }
    let p = features.unwrap_or(maxidx).max(1);
    let mut rows = Rows::new(p);
    let mut x = vec![0.0; p];
    for (y, feats) in entries {
        x.iter_mut().for_each(|v| *v = 0.0);
        for (i, v) in feats {
            x[i] = v;
        }
        rows.push(&x, y);
    }
    Ok(rows)
}

/// Read a LIBSVM file.
pub fn read_libsvm(path: &Path, max_samples: Option<usize>, features: Option<usize>, loss: Loss) -> Result<Rows, DataError> {
    let text = std::fs::read_to_string(path).map_err(|e| DataError(format!("data.path: cannot read `{}`: {e}", path.display())))?;
    parse_libsvm(&text, &path.display().to_string(), max_samples, features, loss)
}

/// Number of samples and features of the configured data set (reads a LIBSVM file).
pub fn shape(cfg: &Config) -> Result<(usize, usize), DataError> {
    match cfg.data.kind {
        DataKind::Libsvm => {
            let rows = load_all(cfg)?;
            Ok((rows.len(), rows.p))
        }
        _ => Ok((cfg.data.samples.expect("validated"), cfg.data.features.expect("validated"))),
    }
}

/// The whole data set (for the master of a LIBSVM run, and for reference computations).
pub fn load_all(cfg: &Config) -> Result<Rows, DataError> {
    let d = &cfg.data;
    match d.kind {
        DataKind::Libsvm => read_libsvm(Path::new(d.path.as_deref().expect("validated")), d.samples, d.features, cfg.model.loss),
        kind => {
            let (n, p) = (d.samples.expect("validated"), d.features.expect("validated"));
            Ok(synthetic_rows(kind, cfg.run.seed, p, d.noise, 0..n))
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn synthetic_rows_are_reproducible_by_index() {
        let all = synthetic_rows(DataKind::LinearSynthetic, 3, 5, 1.0, 0..10);
        let some = synthetic_rows(DataKind::LinearSynthetic, 3, 5, 1.0, [7, 2]);
        assert_eq!(some.row(0), all.row(7));
        assert_eq!(some.y[1], all.y[2]);
        let other_seed = synthetic_rows(DataKind::LinearSynthetic, 4, 5, 1.0, 0..1);
        assert_ne!(other_seed.row(0), all.row(0));
    }

    #[test]
    fn linear_labels_follow_the_model() {
        let p = 8;
        let rows = synthetic_rows(DataKind::LinearSynthetic, 1, p, 0.0, 0..50);
        let th = theta_star(DataKind::LinearSynthetic, 1, p).unwrap();
        for i in 0..50 {
            let z: f64 = rows.row(i).iter().zip(&th).map(|(a, b)| a * b).sum();
            assert!((z - rows.y[i]).abs() < 1e-12);
        }
        let lg = synthetic_rows(DataKind::LogisticSynthetic, 1, p, 0.0, 0..2000);
        assert!(lg.y.iter().all(|&y| y == 0.0 || y == 1.0));
        let frac = lg.y.iter().sum::<f64>() / 2000.0;
        assert!((0.35..0.65).contains(&frac), "{frac}");
    }

    #[test]
    fn libsvm_parsing_and_errors() {
        let text = "+1 1:0.5 3:2\n-1 2:1 # comment\n\n0 1:1\n";
        let r = parse_libsvm(text, "f", None, None, Loss::Logistic).unwrap();
        assert_eq!(r.p, 3);
        assert_eq!(r.len(), 3);
        assert_eq!(r.row(0), &[0.5, 0.0, 2.0]);
        assert_eq!(r.y, vec![1.0, 0.0, 0.0]);
        let r = parse_libsvm(text, "f", Some(2), Some(5), Loss::LeastSquares).unwrap();
        assert_eq!((r.len(), r.p), (2, 5));
        assert_eq!(r.y, vec![1.0, -1.0]);
        let e = |t: &str| parse_libsvm(t, "f", None, None, Loss::Logistic).unwrap_err().0;
        assert_eq!(e("1 1:1\n1 0:3\n"), "f:2: index 0 in `0:3`: LIBSVM indices start at 1");
        assert!(e("1 1:x\n").starts_with("f:1: value"));
        assert!(e("abc 1:1\n").starts_with("f:1: label"));
        assert!(e("2 1:1\n").contains("not 0, 1 or -1"));
        assert!(e("1 a\n").contains("index:value"));
        assert!(e("\n# only comments\n").contains("no data lines"));
        assert!(parse_libsvm("1 1:1\n", "f", Some(4), None, Loss::Logistic).unwrap_err().0.contains("only 1 lines"));
    }
}
