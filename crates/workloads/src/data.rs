//! Data sets.
//!
//! A data set is a matrix of d rows (features) and a label per row, held as `ndarray` arrays.
//! Synthetic sets are generated row by row from `(seed, row)`, so any rank can produce any
//! subset of rows without the others, and every rank gets identical values (see
//! `outrun_codes::Rng`). A LIBSVM file is read the same way: every rank streams the file and
//! keeps only its own rows, densified, so no rank ever holds the text and the dense matrix of
//! the whole file.
//!
//! - `linear-synthetic` (CR paper eq. 10): x ~ N(0, I_p), θ* ~ N(0, I_p), y = xᵀθ* + noise·z,
//!   z ~ N(0, 1).
//! - `logistic-synthetic`: x ~ N(0, I_p), θ* ~ N(0, I_p / p), y = 1 with probability σ(xᵀθ*).
//! - `softmax-synthetic`: x ~ N(0, I_p), W* ~ N(0, I/p) (C × p), y = argmax_c (W*x + noise·z)_c,
//!   z ~ N(0, I_C): C classes.
//! - `csv` (`csv.rs`): the label then the features per line; `idx` (`idx.rs`): MNIST's format.
//! - `libsvm`: `label index:value ...` per line, 1-based indices, read dense. For the logistic
//!   loss, labels must be 0/1 (−1 is read as 0); for C classes, integers 0..C−1.

use std::path::Path;

use outrun_codes::{domain, Rng};
use outrun_config::{DataConfig, DataKind, DataOrder, Labels};

pub use crate::libsvm::{libsvm_rows, libsvm_shape, parse_libsvm, LibsvmFormat, MAX_WIDTH};
use crate::libsvm::{libsvm_scan, open};
pub use crate::rows::{DataError, Rows, Shape};

/// The true model θ* of a synthetic data set.
pub fn theta_star(kind: DataKind, seed: u64, p: usize) -> Option<Vec<f64>> {
    let mut rng = Rng::from_key(&[seed, domain::THETA_STAR, p as u64]);
    match kind {
        DataKind::LinearSynthetic => Some((0..p).map(|_| rng.normal()).collect()),
        DataKind::LogisticSynthetic => {
            let scale = 1.0 / (p as f64).sqrt();
            Some((0..p).map(|_| rng.normal() * scale).collect())
        }
        DataKind::SoftmaxSynthetic | DataKind::Libsvm | DataKind::Idx | DataKind::Csv => None,
    }
}

/// W* (C × p, row-major) of `softmax-synthetic`.
fn class_weights(seed: u64, p: usize, classes: usize) -> Vec<f64> {
    let mut rng = Rng::from_key(&[seed, domain::THETA_STAR, p as u64, classes as u64]);
    let scale = 1.0 / (p as f64).sqrt();
    (0..p * classes).map(|_| rng.normal() * scale).collect()
}

/// Generate the synthetic rows with the given indices (`labels`: the classes of
/// `softmax-synthetic`).
pub fn synthetic_rows(
    kind: DataKind,
    seed: u64,
    p: usize,
    noise: f64,
    labels: Labels,
    idx: impl IntoIterator<Item = usize>,
) -> Rows {
    if let (DataKind::SoftmaxSynthetic, Labels::Classes(c)) = (kind, labels) {
        return class_rows(seed, p, c, noise, idx);
    }
    let theta = theta_star(kind, seed, p).expect("synthetic kind");
    let (mut xs, mut ys) = (vec![], vec![]);
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
            DataKind::SoftmaxSynthetic | DataKind::Libsvm | DataKind::Idx | DataKind::Csv => {
                unreachable!("not a linear synthetic set")
            }
        };
        xs.extend_from_slice(&x);
        ys.push(y);
    }
    Rows::from_vecs(p, xs, ys)
}

/// Rows of `softmax-synthetic` with `classes` classes.
fn class_rows(seed: u64, p: usize, classes: usize, noise: f64, idx: impl IntoIterator<Item = usize>) -> Rows {
    let w = class_weights(seed, p, classes);
    let (mut xs, mut ys) = (vec![], vec![]);
    let mut x = vec![0.0; p];
    for i in idx {
        let mut rng = Rng::from_key(&[seed, domain::FEATURES, i as u64]);
        for v in x.iter_mut() {
            *v = rng.normal();
        }
        let mut nr = Rng::from_key(&[seed, domain::NOISE, i as u64]);
        let mut best = (f64::NEG_INFINITY, 0);
        for c in 0..classes {
            let z: f64 = x.iter().zip(&w[c * p..(c + 1) * p]).map(|(a, b)| a * b).sum::<f64>() + noise * nr.normal();
            if z > best.0 {
                best = (z, c);
            }
        }
        xs.extend_from_slice(&x);
        ys.push(best.1 as f64);
    }
    Rows::from_vecs(p, xs, ys)
}

/// The CSV layout of `data`: its delimiter, its label column, and its label map when
/// `data.labels = "auto"` and, given `seed` (`run.seed`), the training rows' column means when
/// `data.missing = "mean"` (a pass over `data.path`, two with `data.test_fraction`; every rank
/// computes the same). Without `seed` missing values read as NaN: for the shape, the labels and
/// the row cache, which do not depend on the fill. A process makes the pass once per version of
/// the file: the shape, each part's rows, the labels and the held-out file all ask for it.
pub fn csv_format(data: &DataConfig, seed: Option<u64>) -> Result<crate::csv::CsvFormat, DataError> {
    use outrun_config::{LabelValues, Missing};
    use std::sync::Mutex;
    let path = Path::new(data.path.as_deref().expect("validated"));
    let held = |n: usize| seed.and_then(|seed| split(data, seed, n)).map(|(_, held)| held).unwrap_or_default();
    let make = || {
        let held: Option<&dyn Fn(usize) -> Vec<usize>> = seed.map(|_| &held as _);
        crate::csv::format_of(data, held, || open(path), &path.display().to_string())
    };
    if data.labels == LabelValues::Numeric && (data.missing != Missing::Mean || seed.is_none()) {
        return make(); // no pass to keep
    }
    // the means depend on the seed only through data.test_fraction's split
    let seed = seed.filter(|_| data.missing == Missing::Mean).map(|s| if data.test_fraction.is_some() { s } else { 0 });
    // the file (its version) and the keys the format depends on
    let meta = std::fs::metadata(path).ok();
    let key = format!(
        "{}|{:?}|{:?}|{:?}|{:?}|{:?}|{:?}|{:?}|{seed:?}",
        path.display(),
        meta.as_ref().map(|m| m.len()),
        meta.as_ref().and_then(|m| m.modified().ok()),
        data.delimiter,
        data.label_column,
        data.labels,
        data.missing,
        data.test_fraction
    );
    static FORMATS: Mutex<Vec<(String, crate::csv::CsvFormat)>> = Mutex::new(Vec::new());
    if let Some((_, f)) = FORMATS.lock().expect("no panic holds it").iter().find(|(k, _)| *k == key) {
        return Ok(f.clone());
    }
    let fmt = make()?;
    FORMATS.lock().expect("no panic holds it").push((key, fmt.clone()));
    Ok(fmt)
}

/// Shape of the configured data set (streams a LIBSVM or CSV file once, reads IDX files to
/// their ends and checks them).
pub fn shape(data: &DataConfig, labels: Labels) -> Result<Shape, DataError> {
    match data.kind {
        DataKind::Idx => {
            let (images, lab) = idx_paths(data);
            crate::idx::idx_check(images, lab, labels, crate::idx::TRAIN)
        }
        DataKind::Csv => {
            let path = Path::new(data.path.as_deref().expect("validated"));
            let fmt = csv_format(data, None)?;
            crate::shapes::cached(data, labels, path, |log| {
                let s =
                    crate::csv::csv_scan(open(path)?, &path.display().to_string(), &fmt, data.samples, labels, log)?;
                match data.features {
                    Some(f) if f != s.features => Err(DataError::file(
                        path.display(),
                        format!("{} feature columns, but data.features = {f}", s.features),
                    )),
                    _ => Ok(s),
                }
            })
        }
        DataKind::Libsvm => {
            let path = Path::new(data.path.as_deref().expect("validated"));
            crate::shapes::cached(data, labels, path, |log| {
                let fmt = LibsvmFormat::of(data);
                libsvm_scan(open(path)?, &path.display().to_string(), &fmt, data.samples, data.features, labels, log)
            })
        }
        _ => Ok(Shape { samples: data.samples.expect("validated"), features: data.features.expect("validated") }),
    }
}

/// The rows with the given indices of the configured data set, `p` wide.
pub fn rows(data: &DataConfig, seed: u64, labels: Labels, p: usize, idx: &[usize]) -> Result<Rows, DataError> {
    match data.kind {
        DataKind::Idx => {
            let (images, lab) = idx_paths(data);
            crate::idx::idx_rows(images, lab, data.scale, labels, idx, crate::idx::TRAIN)
        }
        DataKind::Csv | DataKind::Libsvm => {
            let path = Path::new(data.path.as_deref().expect("validated"));
            if let Some(mut rows) = crate::shapes::cached_rows(data, labels, path, p, idx) {
                if data.kind == DataKind::Csv {
                    crate::csv::fill_missing(
                        &csv_format(data, Some(seed))?,
                        rows.x.as_slice_mut().expect("standard layout"),
                        p,
                    );
                }
                return Ok(rows);
            }
            let origin = path.display().to_string();
            match data.kind {
                DataKind::Csv => {
                    crate::csv::csv_rows(open(path)?, &origin, &csv_format(data, Some(seed))?, p, labels, idx)
                }
                _ => libsvm_rows(open(path)?, &origin, &LibsvmFormat::of(data), p, labels, idx),
            }
        }
        kind => Ok(synthetic_rows(kind, seed, p, data.noise, labels, idx.iter().copied())),
    }
}

/// The labels of every row, in file order (one pass over a file; a synthetic set is generated).
fn all_labels(data: &DataConfig, seed: u64, labels: Labels, shape: Shape) -> Result<Vec<f64>, DataError> {
    match data.kind {
        DataKind::Libsvm => {
            let path = Path::new(data.path.as_deref().expect("validated"));
            crate::libsvm::libsvm_labels(
                open(path)?,
                &path.display().to_string(),
                &LibsvmFormat::of(data),
                shape,
                labels,
            )
        }
        DataKind::Idx => {
            let (images, lab) = idx_paths(data);
            crate::idx::idx_labels(images, lab, labels, crate::idx::TRAIN)
        }
        DataKind::Csv => {
            let path = Path::new(data.path.as_deref().expect("validated"));
            crate::csv::csv_labels(
                open(path)?,
                &path.display().to_string(),
                &csv_format(data, None)?,
                shape.samples,
                labels,
            )
        }
        kind => Ok(synthetic_rows(kind, seed, shape.features, data.noise, labels, 0..shape.samples).y.to_vec()),
    }
}

/// `data.test_fraction`'s split of a file of `n` rows: (training rows, held-out rows), file row
/// numbers in file order; which rows are held out is drawn from `seed` alone (at least one of
/// each).
pub fn split(data: &DataConfig, seed: u64, n: usize) -> Option<(Vec<usize>, Vec<usize>)> {
    let f = data.test_fraction?;
    let held = ((n as f64 * f).round() as usize).clamp(1, n.saturating_sub(1).max(1));
    let perm = outrun_codes::Rng::from_key(&[seed, outrun_codes::domain::SPLIT]).permutation(n);
    let (mut test, mut train) = (perm[..held].to_vec(), perm[held..].to_vec());
    test.sort_unstable();
    train.sort_unstable();
    Some((train, test))
}

/// The shape of the training rows: the file's, less `data.test_fraction`'s held-out rows.
pub fn training_shape(data: &DataConfig, seed: u64, file: Shape) -> Shape {
    match split(data, seed, file.samples) {
        Some((train, _)) => Shape { samples: train.len(), features: file.features },
        None => file,
    }
}

/// The file's shape and, with `data.test_fraction`, the file rows it trains on (`shape`: the
/// training rows' shape).
fn training_rows(
    data: &DataConfig,
    seed: u64,
    labels: Labels,
    shape: Shape,
) -> Result<(Shape, Option<Vec<usize>>), DataError> {
    let file = match data.test_fraction {
        Some(_) => self::shape(data, labels)?,
        None => shape,
    };
    Ok((file, split(data, seed, file.samples).map(|(train, _)| train)))
}

/// The rows in the order `data.order` asks for: `order[i]` is the file row that is row i
/// (`None` in file order). By label: a stable sort, so each class keeps its file order.
/// Shuffled: a permutation drawn from `seed` alone, the same on every rank and host. Shards:
/// the label-sorted rows cut into `data.shards` blocks (block b: sorted rows
/// ⌊b·d/S⌋..⌊(b+1)·d/S⌋), the blocks in an order drawn from `seed` alone. With
/// `data.test_fraction` only the training rows are ordered (`shape` is theirs).
pub fn row_order(data: &DataConfig, seed: u64, labels: Labels, shape: Shape) -> Result<Option<Vec<usize>>, DataError> {
    let (file, rows) = training_rows(data, seed, labels, shape)?;
    let base = |i: usize| rows.as_ref().map_or(i, |r| r[i]);
    match data.order {
        DataOrder::File => Ok(rows),
        DataOrder::ByLabel | DataOrder::Shards => {
            let y = all_labels(data, seed, labels, file)?;
            let mut order: Vec<usize> = (0..shape.samples).map(base).collect();
            order.sort_by(|&a, &b| y[a].total_cmp(&y[b]));
            match data.order {
                // one shard (the config requires a count) is the sort by label
                DataOrder::Shards => shards(&order, data.shards.unwrap_or(1), seed).map(Some),
                _ => Ok(Some(order)),
            }
        }
        DataOrder::Shuffle => {
            let perm = outrun_codes::Rng::from_key(&[seed, outrun_codes::domain::SHUFFLE]).permutation(shape.samples);
            Ok(Some(perm.into_iter().map(base).collect()))
        }
    }
}

/// `data.shards = s` fits `d` training rows: 1 ≤ s ≤ d (checked before MPI from the data's
/// shape, and where the rows are dealt).
pub fn check_shards(s: usize, d: usize) -> Result<(), DataError> {
    if s == 0 || s > d {
        return Err(DataError::field("data.shards", format!("= {s}: between 1 and the {d} training rows")));
    }
    Ok(())
}

/// `sorted` cut into `s` near-equal blocks, the blocks in the order a permutation drawn from
/// `seed` gives.
fn shards(sorted: &[usize], s: usize, seed: u64) -> Result<Vec<usize>, DataError> {
    let d = sorted.len();
    check_shards(s, d)?;
    let perm = outrun_codes::Rng::from_key(&[seed, outrun_codes::domain::SHARDS]).permutation(s);
    Ok(perm.into_iter().flat_map(|b| sorted[b * d / s..(b + 1) * d / s].iter().copied()).collect())
}

/// Per-feature statistics of the training rows (`data.standardize`).
#[derive(Clone, Debug, PartialEq)]
pub struct Standardizer {
    /// Each feature's mean.
    pub mean: Vec<f64>,
    /// 1 / its standard deviation (1 for a constant feature, which is only centred).
    pub inv_std: Vec<f64>,
}

impl Standardizer {
    /// The statistics of the training rows of `data` (`shape`: theirs), `p` wide, read in
    /// chunks (one more pass over the file, or over the row cache when `outrun check` wrote it).
    pub fn of(data: &DataConfig, seed: u64, labels: Labels, shape: Shape) -> Result<Self, DataError> {
        const CHUNK: usize = 1 << 16;
        let p = shape.features;
        // the training rows: all of them, or those data.test_fraction keeps
        let train = training_rows(data, seed, labels, shape)?.1.unwrap_or_else(|| (0..shape.samples).collect());
        let (mut n, mut mean, mut m2) = (0usize, vec![0.0; p], vec![0.0; p]);
        for idx in train.chunks(CHUNK) {
            let rows = rows(data, seed, labels, p, idx)?;
            // Welford, feature by feature
            for i in 0..rows.len() {
                n += 1;
                for (j, &x) in rows.row(i).iter().enumerate() {
                    let d = x - mean[j];
                    mean[j] += d / n as f64;
                    m2[j] += d * (x - mean[j]);
                }
            }
        }
        let inv_std = m2
            .iter()
            .map(|&m| {
                let sd = (m / n.max(1) as f64).sqrt();
                if sd > 1e-12 * (1.0 + sd) && sd.is_finite() {
                    1.0 / sd
                } else {
                    1.0
                }
            })
            .collect();
        Ok(Standardizer { mean, inv_std })
    }

    /// `rows` with every feature standardised.
    pub fn apply(&self, mut rows: Rows) -> Rows {
        for mut row in rows.x.rows_mut() {
            for ((x, m), s) in row.iter_mut().zip(&self.mean).zip(&self.inv_std) {
                *x = (*x - m) * s;
            }
        }
        rows
    }
}

/// The images and labels files of `idx` data.
fn idx_paths(data: &DataConfig) -> (&Path, &Path) {
    (Path::new(data.path.as_deref().expect("validated")), Path::new(data.labels_path.as_deref().expect("validated")))
}

/// The whole data set (reference computations).
pub fn load_all(data: &DataConfig, seed: u64, labels: Labels) -> Result<Rows, DataError> {
    let s = shape(data, labels)?;
    rows(data, seed, labels, s.features, &(0..s.samples).collect::<Vec<_>>())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn synthetic_rows_are_reproducible_by_index() {
        let all = synthetic_rows(DataKind::LinearSynthetic, 3, 5, 1.0, Labels::Real, 0..10);
        let some = synthetic_rows(DataKind::LinearSynthetic, 3, 5, 1.0, Labels::Real, [7, 2]);
        assert_eq!(some.row(0), all.row(7));
        assert_eq!(some.y[1], all.y[2]);
        let other_seed = synthetic_rows(DataKind::LinearSynthetic, 4, 5, 1.0, Labels::Real, 0..1);
        assert_ne!(other_seed.row(0), all.row(0));
    }

    /// Golden values: the first synthetic row (a change of generator is a visible change).
    #[test]
    fn synthetic_golden_values() {
        let r = synthetic_rows(DataKind::LinearSynthetic, 1, 3, 1.0, Labels::Real, [0]);
        assert_eq!(r.row(0), GOLDEN_ROW0, "synthetic data generation changed");
        assert_eq!(r.y[0], GOLDEN_Y0);
    }
    const GOLDEN_ROW0: &[f64] = &[-0.23012746120826177, 0.5948969805753771, 1.373145706822536];
    const GOLDEN_Y0: f64 = -1.3567229510374494;

    #[test]
    fn linear_labels_follow_the_model() {
        let p = 8;
        let rows = synthetic_rows(DataKind::LinearSynthetic, 1, p, 0.0, Labels::Real, 0..50);
        let th = theta_star(DataKind::LinearSynthetic, 1, p).unwrap();
        for i in 0..50 {
            let z: f64 = rows.row(i).iter().zip(&th).map(|(a, b)| a * b).sum();
            assert!((z - rows.y[i]).abs() < 1e-12);
        }
        let lg = synthetic_rows(DataKind::LogisticSynthetic, 1, p, 0.0, Labels::Real, 0..2000);
        assert!(lg.y.iter().all(|&y| y == 0.0 || y == 1.0));
        let frac = lg.y.sum() / 2000.0;
        assert!((0.35..0.65).contains(&frac), "{frac}");
    }

    #[test]
    fn libsvm_parsing_and_errors() {
        let text = "+1 1:0.5 3:2\n-1 2:1 # comment\n\n0 1:1\n";
        let r = parse_libsvm(text, "f", &LibsvmFormat::default(), None, None, Labels::Binary).unwrap();
        assert_eq!(r.p(), 3);
        assert_eq!(r.len(), 3);
        assert_eq!(r.row(0), &[0.5, 0.0, 2.0]);
        assert_eq!(r.labels(), &[1.0, 0.0, 0.0]);
        let r = parse_libsvm(text, "f", &LibsvmFormat::default(), Some(2), Some(5), Labels::Real).unwrap();
        assert_eq!((r.len(), r.p()), (2, 5));
        assert_eq!(r.labels(), &[1.0, -1.0]);
        let e = |t: &str| {
            parse_libsvm(t, "f", &LibsvmFormat::default(), None, None, Labels::Binary).unwrap_err().to_string()
        };
        assert_eq!(
            e("1 1:1\n1 0:3\n"),
            "f:2: index 0 in `0:3`: LIBSVM indices start at 1 (set data.index_base = 0 for a file that counts from 0)"
        );
        let line =
            parse_libsvm("1 1:1\n1 0:3\n", "f", &LibsvmFormat::default(), None, None, Labels::Binary).unwrap_err();
        assert!(matches!(line, DataError::Line { line: 2, .. }), "{line:?}");
        assert!(e("1 1:x\n").starts_with("f:1: value"));
        assert!(e("abc 1:1\n").starts_with("f:1: label"));
        // a CSV file read as LIBSVM; a binary one
        assert_eq!(
            e("1,0.5,2\n"),
            "f:1: label `1,0.5,2` is not a number; its values are separated by ',': a CSV file? set data.kind = \"csv\""
        );
        let bytes: &[u8] = &[0, 0, 8, 3, 0xff, 0xfe, b'\n'];
        let binary = crate::libsvm::libsvm_shape(bytes, "f", &LibsvmFormat::default(), None, None, Labels::Binary)
            .unwrap_err()
            .to_string();
        assert!(binary.starts_with("f:1: not UTF-8 text (") && binary.contains("data.kind = \"idx\""), "{binary}");
        assert!(e("2 1:1\n").contains("not 0, 1 or -1"));
        assert!(e("1 a\n").contains("index:value"));
        assert!(e("\n# only comments\n").contains("no data lines"));
        assert_eq!(e("1 1:1\n0 2:1 2:3\n"), "f:2: index 2 appears twice on the line");
        assert_eq!(e("1 qid:3 1:1\n"), "f:1: `qid:3`: a ranking file's query id is not read (remove the qid: fields)");
        assert_eq!(e("1 -3:1\n"), "f:1: index in `-3:1` is not a non-negative integer");
        assert!(
            e("1 4000000000:1\n").starts_with("f:1: index 4000000000 exceeds 1048576"),
            "{}",
            e("1 4000000000:1\n")
        );
        assert!(parse_libsvm("1 1:1\n", "f", &LibsvmFormat::default(), Some(4), None, Labels::Binary)
            .unwrap_err()
            .to_string()
            .contains("only 1 lines"));
    }

    #[test]
    fn class_labels_are_integers_below_the_classes() {
        let r = parse_libsvm("0 1:1\n9 2:1\n", "f", &LibsvmFormat::default(), None, None, Labels::Classes(10)).unwrap();
        assert_eq!(r.labels(), &[0.0, 9.0]);
        let e = |t: &str| {
            parse_libsvm(t, "f", &LibsvmFormat::default(), None, None, Labels::Classes(10)).unwrap_err().to_string()
        };
        assert_eq!(e("0 1:1\n10 1:1\n"), "f:2: label `10` is not a class 0..9 (10 classes in [model])");
        assert!(e("1.5 1:1\n").starts_with("f:1: label `1.5`"));
        assert!(e("-1 1:1\n").starts_with("f:1: label `-1`"));
        let s = synthetic_rows(DataKind::SoftmaxSynthetic, 5, 4, 0.1, Labels::Classes(3), 0..600);
        let mut counts = [0; 3];
        s.labels().iter().for_each(|&y| counts[y as usize] += 1);
        assert!(counts.iter().all(|&c| c > 100), "every class drawn: {counts:?}");
        assert_eq!(synthetic_rows(DataKind::SoftmaxSynthetic, 5, 4, 0.1, Labels::Classes(3), [7]), s.select([7]));
    }

    #[test]
    fn rows_by_label_are_a_stable_sort() {
        let dir = std::env::temp_dir().join(format!("outrun-order-{}", std::process::id()));
        std::fs::create_dir_all(&dir).unwrap();
        let path = dir.join("d.libsvm");
        std::fs::write(&path, "2 1:1\n0 1:2\n1 1:3\n0 1:4\n2 1:5\n").unwrap();
        let data = DataConfig {
            kind: DataKind::Libsvm,
            path: Some(path.display().to_string()),
            order: DataOrder::ByLabel,
            ..synthetic_config()
        };
        let shape = Shape { samples: 5, features: 1 };
        assert_eq!(row_order(&data, 0, Labels::Classes(3), shape).unwrap(), Some(vec![1, 3, 2, 0, 4]));
        // shuffled: a permutation of the rows from the seed alone
        let shuffled = |seed| {
            row_order(&DataConfig { order: DataOrder::Shuffle, ..data.clone() }, seed, Labels::Classes(3), shape)
        };
        let a = shuffled(1).unwrap().unwrap();
        let mut sorted = a.clone();
        sorted.sort_unstable();
        assert_eq!(sorted, (0..5).collect::<Vec<_>>());
        assert_eq!(shuffled(1).unwrap().unwrap(), a);
        assert!((2..20).any(|s| shuffled(s).unwrap().unwrap() != a), "another seed, another order");
        assert_eq!(
            row_order(&DataConfig { order: DataOrder::File, ..data }, 0, Labels::Classes(3), shape).unwrap(),
            None
        );
        std::fs::remove_dir_all(&dir).unwrap();
    }

    /// `data.order = "shards"`: the label-sorted rows cut into S blocks of ⌊b·d/S⌋..⌊(b+1)·d/S⌋,
    /// whole blocks in a seeded order; one shard is the sort by label; more shards than rows
    /// are refused naming the field.
    #[test]
    fn shards_are_whole_label_sorted_blocks_in_a_seeded_order() {
        let dir = std::env::temp_dir().join(format!("outrun-shards-{}", std::process::id()));
        std::fs::create_dir_all(&dir).unwrap();
        let path = dir.join("d.libsvm");
        let labels = [3, 1, 0, 2, 1, 3, 0, 2, 2, 0, 1, 3, 0, 1];
        std::fs::write(&path, labels.iter().map(|y| format!("{y} 1:1\n")).collect::<String>()).unwrap();
        let data = DataConfig {
            kind: DataKind::Libsvm,
            path: Some(path.display().to_string()),
            order: DataOrder::Shards,
            ..synthetic_config()
        };
        let shape = Shape { samples: labels.len(), features: 1 };
        let by_label =
            row_order(&DataConfig { order: DataOrder::ByLabel, ..data.clone() }, 0, Labels::Classes(4), shape)
                .unwrap()
                .unwrap();
        let cut = |s: usize, seed: u64| {
            row_order(&DataConfig { shards: Some(s), ..data.clone() }, seed, Labels::Classes(4), shape)
        };
        assert_eq!(cut(1, 5).unwrap().unwrap(), by_label);
        // 14 rows in 4 shards: 3, 4, 3, 4 rows (⌊14b/4⌋ = 0, 3, 7, 10, 14)
        let bounds = [0, 3, 7, 10, 14];
        let got = cut(4, 5).unwrap().unwrap();
        let mut at = 0;
        let mut seen = Vec::new();
        while at < got.len() {
            let b = (0..4).find(|&b| by_label[bounds[b]] == got[at]).expect("a shard starts here");
            let len = bounds[b + 1] - bounds[b];
            assert_eq!(got[at..at + len], by_label[bounds[b]..bounds[b + 1]], "shard {b} whole, in order");
            seen.push(b);
            at += len;
        }
        seen.sort_unstable();
        assert_eq!(seen, [0, 1, 2, 3], "every shard once");
        assert_eq!(cut(4, 5).unwrap(), Some(got.clone()), "the seed decides");
        assert!((6..30).any(|seed| cut(4, seed).unwrap().unwrap() != got), "another seed, another order");
        let e = cut(15, 5).unwrap_err().to_string();
        assert!(e.starts_with("data.shards = 15: between 1 and the 14"), "{e}");
        std::fs::remove_dir_all(&dir).unwrap();
    }

    fn synthetic_config() -> DataConfig {
        DataConfig {
            kind: DataKind::LinearSynthetic,
            path: None,
            samples: Some(5),
            features: Some(1),
            noise: 1.0,
            test_path: None,
            test_every: 1,
            order: DataOrder::File,
            shards: None,
            labels_path: None,
            test_labels_path: None,
            scale: 1.0,
            delimiter: None,
            label_column: None,
            labels: outrun_config::LabelValues::Numeric,
            index_base: None,
            standardize: false,
            missing: outrun_config::Missing::Refuse,
            test_fraction: None,
        }
    }

    /// `data.test_fraction`: a seeded split into training and held-out rows (both in file
    /// order, disjoint, covering the file); the orders apply to the training rows only.
    #[test]
    fn a_test_fraction_splits_the_rows_from_the_seed() {
        let data = DataConfig { test_fraction: Some(0.25), ..synthetic_config() };
        let (train, test) = split(&data, 3, 10).unwrap();
        assert_eq!((train.len(), test.len()), (7, 3), "round(2.5) = 3 held out");
        let mut all: Vec<usize> = train.iter().chain(&test).copied().collect();
        all.sort_unstable();
        assert_eq!(all, (0..10).collect::<Vec<_>>());
        assert!(train.windows(2).all(|w| w[0] < w[1]) && test.windows(2).all(|w| w[0] < w[1]));
        assert_eq!(split(&data, 3, 10).unwrap(), (train.clone(), test.clone()));
        assert!((4..30).any(|s| split(&data, s, 10).unwrap().1 != test), "another seed, other rows");
        assert_eq!(split(&DataConfig { test_fraction: Some(0.01), ..data.clone() }, 3, 10).unwrap().1.len(), 1);
        assert_eq!(split(&DataConfig { test_fraction: Some(0.99), ..data.clone() }, 3, 10).unwrap().0.len(), 1);
        let file = Shape { samples: 10, features: 1 };
        let shape = training_shape(&data, 3, file);
        assert_eq!(shape.samples, 7);
        // every order is over the training rows only
        for order in [DataOrder::File, DataOrder::ByLabel, DataOrder::Shuffle, DataOrder::Shards] {
            let d = DataConfig { order, samples: Some(10), shards: Some(3), ..data.clone() };
            let got = row_order(&d, 3, Labels::Real, shape).unwrap().unwrap();
            let mut sorted = got.clone();
            sorted.sort_unstable();
            assert_eq!(sorted, train, "{order:?}");
        }
        assert_eq!(split(&synthetic_config(), 3, 10), None);
    }

    /// `data.standardize`: mean 0 and variance 1 per feature over the training rows, a
    /// constant feature only centred; the held-out rows use the training statistics.
    #[test]
    fn standardizing_uses_the_training_rows_statistics() {
        let dir = std::env::temp_dir().join(format!("outrun-std-{}", std::process::id()));
        std::fs::create_dir_all(&dir).unwrap();
        let path = dir.join("d.svm");
        std::fs::write(&path, "1 1:1 2:1000 3:5\n0 1:3 2:5000 3:5\n1 1:5 2:3000 3:5\n").unwrap();
        let data = DataConfig {
            kind: DataKind::Libsvm,
            path: Some(path.display().to_string()),
            samples: None,
            features: None,
            ..synthetic_config()
        };
        let shape = Shape { samples: 3, features: 3 };
        let st = Standardizer::of(&data, 0, Labels::Binary, shape).unwrap();
        assert_eq!(st.mean, vec![3.0, 3000.0, 5.0]);
        let sd = (8.0f64 / 3.0).sqrt();
        assert!((st.inv_std[0] - 1.0 / sd).abs() < 1e-12 && (st.inv_std[1] - 1.0 / (1000.0 * sd)).abs() < 1e-15);
        assert_eq!(st.inv_std[2], 1.0, "a constant feature is only centred");
        let all = st.apply(rows(&data, 0, Labels::Binary, 3, &[0, 1, 2]).unwrap());
        for j in 0..3 {
            let col: Vec<f64> = (0..3).map(|i| all.row(i)[j]).collect();
            let m = col.iter().sum::<f64>() / 3.0;
            let v = col.iter().map(|x| (x - m) * (x - m)).sum::<f64>() / 3.0;
            assert!(m.abs() < 1e-12, "feature {j}: mean {m}");
            assert!((v - if j == 2 { 0.0 } else { 1.0 }).abs() < 1e-12, "feature {j}: variance {v}");
        }
        // a held-out row, with the training statistics
        let held = st.apply(Rows::from_vecs(3, vec![3.0, 1000.0, 6.0], vec![1.0]));
        assert!(held.row(0)[0].abs() < 1e-12 && (held.row(0)[1] + 2.0 / sd).abs() < 1e-12 && held.row(0)[2] == 1.0);
        std::fs::remove_dir_all(&dir).unwrap();
    }

    /// `data.index_base = 0`: a file that counts features from 0 reads as the same rows as its
    /// 1-based twin; the 1-based reader refuses index 0 and says which key reads it; errors name
    /// the index as the file writes it.
    #[test]
    fn zero_based_libsvm_reads_as_its_one_based_twin() {
        let one = "1 1:0.5 3:2
0 2:-1
1 4:7 1:1
";
        let zero = "1 0:0.5 2:2
0 1:-1
1 3:7 0:1
";
        let base0 = LibsvmFormat { index_base: 0 };
        let a = parse_libsvm(one, "f", &LibsvmFormat::default(), None, None, Labels::Binary).unwrap();
        let b = parse_libsvm(zero, "f", &base0, None, None, Labels::Binary).unwrap();
        assert_eq!((a.features(), a.labels()), (b.features(), b.labels()));
        assert_eq!(b.features().len(), 3 * 4, "4 features: the largest index 3 is the fourth");
        let e = parse_libsvm(zero, "f", &LibsvmFormat::default(), None, None, Labels::Binary).unwrap_err().to_string();
        assert!(e.contains("f:1:") && e.contains("data.index_base = 0"), "{e}");
        let e = parse_libsvm("1 4:1\n", "f", &base0, None, Some(4), Labels::Binary).unwrap_err().to_string();
        assert!(e.contains("index 4 exceeds data.features = 4"), "{e}");
        let e = parse_libsvm("1 2:1 2:3\n", "f", &base0, None, None, Labels::Binary).unwrap_err().to_string();
        assert!(e.contains("index 2 appears twice"), "{e}");
    }

    #[test]
    fn a_rank_reads_only_its_rows_in_its_order() {
        let text = "1 1:1\n0 2:2\n1 3:3\n0 1:4 3:5\n";
        let all = parse_libsvm(text, "f", &LibsvmFormat::default(), None, None, Labels::Binary).unwrap();
        let some = libsvm_rows(text.as_bytes(), "f", &LibsvmFormat::default(), 3, Labels::Binary, &[3, 1, 3]).unwrap();
        assert_eq!(some, all.select([3, 1, 3]));
        // rows this rank does not compute on are counted, not parsed (the file was checked whole
        // before MPI started)
        let bad_elsewhere = "1 1:1\n0 2:x\n1 3:3\n";
        assert_eq!(
            libsvm_rows(bad_elsewhere.as_bytes(), "f", &LibsvmFormat::default(), 3, Labels::Binary, &[2])
                .unwrap()
                .row(0),
            &[0.0, 0.0, 3.0]
        );
        assert!(libsvm_rows(bad_elsewhere.as_bytes(), "f", &LibsvmFormat::default(), 3, Labels::Binary, &[1]).is_err());
        let e = libsvm_rows(text.as_bytes(), "f", &LibsvmFormat::default(), 3, Labels::Binary, &[9]).unwrap_err();
        assert!(matches!(&e, DataError::File { file, .. } if file == "f"), "{e:?}");
        assert_eq!(e.to_string(), "f: row 10 asked for but the file has only 4 lines of data");
    }
}
