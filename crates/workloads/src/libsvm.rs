//! LIBSVM files: `label index:value ...` per line, 1-based indices (0-based with
//! `data.index_base = 0`), read dense. Every rank streams the file and keeps only its own rows.

use std::io::BufRead;
use std::path::Path;

use outrun_config::Labels;

use crate::lines::{check_label, DataLines};
use crate::rowcache::RowLog;
use crate::rows::{DataError, Rows, Shape};

/// Widest LIBSVM file read without `data.features` (indices above it are refused: a stray huge
/// index must not make every rank allocate a huge dense matrix).
pub const MAX_WIDTH: usize = 1 << 20;

/// How a LIBSVM file numbers its features.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct LibsvmFormat {
    /// The first feature's index: 1 (the format's convention) or 0.
    pub index_base: usize,
}

impl Default for LibsvmFormat {
    fn default() -> Self {
        LibsvmFormat { index_base: 1 }
    }
}

impl LibsvmFormat {
    /// The format `data` asks for.
    pub fn of(data: &outrun_config::DataConfig) -> Self {
        LibsvmFormat { index_base: data.libsvm_index_base() }
    }
}

/// One parsed LIBSVM line.
struct Line {
    y: f64,
    feats: Vec<(usize, f64)>,
}

/// Streams the data lines of a LIBSVM text, checking each.
struct Reader<'a, R: BufRead> {
    text: DataLines<'a, R>,
    features: Option<usize>,
    labels: Labels,
    base: usize,
}

impl<R: BufRead> Reader<'_, R> {
    fn bad(&self, what: String) -> DataError {
        self.text.bad(what)
    }

    fn next_line(&mut self) -> Result<Option<Line>, DataError> {
        let Some(line) = self.text.next_data()? else { return Ok(None) };
        let mut it = line.split_whitespace();
        let lab = it.next().expect("non-empty line");
        let y: f64 = lab.parse().map_err(|_| {
            // a CSV line is one token whose "label" holds the other values
            let csv = [',', ';'].into_iter().find(|&c| lab.contains(c));
            let hint = csv.map_or(String::new(), |c| {
                format!("; its values are separated by {c:?}: a CSV file? set data.kind = \"csv\"")
            });
            self.bad(format!("label `{lab}` is not a number{hint}"))
        })?;
        let y = check_label(y, lab, self.labels).map_err(|e| self.bad(e))?;
        let mut feats: Vec<(usize, f64)> = Vec::new();
        for tok in it {
            let (i, v) = tok.split_once(':').ok_or_else(|| self.bad(format!("`{tok}` is not index:value")))?;
            let i: usize = i.parse().map_err(|_| {
                self.bad(if i == "qid" {
                    format!("`{tok}`: a ranking file's query id is not read (remove the qid: fields)")
                } else {
                    format!("index in `{tok}` is not a non-negative integer")
                })
            })?;
            if i < self.base {
                return Err(self.bad(format!(
                    "index 0 in `{tok}`: LIBSVM indices start at 1 (set data.index_base = 0 for a file that counts from 0)"
                )));
            }
            // from here on, i is 1-based
            let i = i + 1 - self.base;
            let v: f64 = v.parse().map_err(|_| self.bad(format!("value in `{tok}` is not a number")))?;
            if !v.is_finite() {
                return Err(self.bad(format!("value in `{tok}` is not finite")));
            }
            match self.features {
                Some(f) if i > f => {
                    return Err(self.bad(format!("index {} exceeds data.features = {f}", i - 1 + self.base)))
                }
                None if i > MAX_WIDTH => {
                    return Err(self.bad(format!("index {i} exceeds {MAX_WIDTH}, the widest file read without data.features; set data.features if the data really is that wide")))
                }
                _ => {}
            }
            if feats.iter().any(|&(j, _)| j == i - 1) {
                return Err(self.bad(format!("index {} appears twice on the line", i - 1 + self.base)));
            }
            feats.push((i - 1, v));
        }
        Ok(Some(Line { y, feats }))
    }
}

/// A LIBSVM or CSV file, as text (gzip decompressed).
pub(crate) fn open(path: &Path) -> Result<Box<dyn BufRead>, DataError> {
    crate::input::open_decompressed(path).map_err(|e| DataError::read("data.path", path.display(), e))
}

/// Shape of a LIBSVM text (one streaming pass; nothing is kept).
pub fn libsvm_shape(
    text: impl BufRead,
    origin: &str,
    fmt: &LibsvmFormat,
    max_samples: Option<usize>,
    features: Option<usize>,
    labels: Labels,
) -> Result<Shape, DataError> {
    libsvm_scan(text, origin, fmt, max_samples, features, labels, None)
}

/// [`libsvm_shape`], giving every row read to `log`.
pub(crate) fn libsvm_scan(
    text: impl BufRead,
    origin: &str,
    fmt: &LibsvmFormat,
    max_samples: Option<usize>,
    features: Option<usize>,
    labels: Labels,
    mut log: Option<&mut RowLog>,
) -> Result<Shape, DataError> {
    let mut r = Reader { text: DataLines::new(text, origin), features, labels, base: fmt.index_base };
    let (mut n, mut width) = (0usize, 0usize);
    while max_samples.is_none_or(|m| n < m) {
        let Some(line) = r.next_line()? else { break };
        width = width.max(line.feats.iter().map(|&(i, _)| i + 1).max().unwrap_or(0));
        if let Some(log) = log.as_deref_mut() {
            log.push(line.y, line.feats.iter().copied());
        }
        n += 1;
    }
    if n == 0 {
        return Err(DataError::file(origin, "no data lines"));
    }
    if let Some(m) = max_samples {
        if n < m {
            return Err(DataError::file(origin, format!("data.samples = {m} but the file has only {n} lines of data")));
        }
    }
    Ok(Shape { samples: n, features: features.unwrap_or(width).max(1) })
}

/// The rows with the given indices (any order, repeats allowed) of a LIBSVM text, `p` wide.
pub fn libsvm_rows(
    text: impl BufRead,
    origin: &str,
    fmt: &LibsvmFormat,
    p: usize,
    labels: Labels,
    idx: &[usize],
) -> Result<Rows, DataError> {
    let mut wanted: Vec<(usize, usize)> = idx.iter().copied().enumerate().map(|(k, i)| (i, k)).collect();
    wanted.sort_unstable();
    let mut x = vec![0.0; idx.len() * p];
    let mut y = vec![0.0; idx.len()];
    let mut r = Reader { text: DataLines::new(text, origin), features: Some(p), labels, base: fmt.index_base };
    let mut row = 0usize;
    let mut next = 0usize;
    let short = |row: usize, next: usize| {
        DataError::file(
            origin,
            format!("row {} asked for but the file has only {row} lines of data", wanted[next].0 + 1),
        )
    };
    while next < wanted.len() {
        // a row nobody here computes on is only counted, not parsed: the whole file was checked
        // before MPI started (`outrun check`, rank 0's plan), and a rank parses its own rows only
        if wanted[next].0 != row {
            r.text.next_data()?.ok_or_else(|| short(row, next))?;
            row += 1;
            continue;
        }
        let line = r.next_line()?.ok_or_else(|| short(row, next))?;
        while next < wanted.len() && wanted[next].0 == row {
            let k = wanted[next].1;
            y[k] = line.y;
            for &(i, v) in &line.feats {
                x[k * p + i] = v;
            }
            next += 1;
        }
        row += 1;
    }
    Ok(Rows::from_vecs(p, x, y))
}

/// The labels of the first `shape.samples` rows of a LIBSVM text, in file order.
pub(crate) fn libsvm_labels(
    text: impl BufRead,
    origin: &str,
    fmt: &LibsvmFormat,
    shape: Shape,
    labels: Labels,
) -> Result<Vec<f64>, DataError> {
    let mut r =
        Reader { text: DataLines::new(text, origin), features: Some(shape.features), labels, base: fmt.index_base };
    let mut out = Vec::with_capacity(shape.samples);
    while out.len() < shape.samples {
        let Some(line) = r.next_line()? else { break };
        out.push(line.y);
    }
    Ok(out)
}

/// Parse a whole LIBSVM text (tests and references).
pub fn parse_libsvm(
    text: &str,
    origin: &str,
    fmt: &LibsvmFormat,
    max_samples: Option<usize>,
    features: Option<usize>,
    labels: Labels,
) -> Result<Rows, DataError> {
    let shape = libsvm_shape(text.as_bytes(), origin, fmt, max_samples, features, labels)?;
    libsvm_rows(text.as_bytes(), origin, fmt, shape.features, labels, &(0..shape.samples).collect::<Vec<_>>())
}
