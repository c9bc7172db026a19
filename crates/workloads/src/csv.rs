//! CSV data: one sample per line, the label in the first column and the features after it,
//! separated by commas; a first line that does not start with a number is a header; `#` starts a
//! comment. Every rank streams the file and keeps only its own rows, like a LIBSVM file.

use std::io::BufRead;

use outrun_config::Labels;

use crate::lines::{check_label, DataLines};
use crate::rowcache::RowLog;
use crate::rows::{DataError, Rows, Shape};

/// Streams the data lines of a CSV text: (label, features) per line, checked.
struct Reader<'a, R: BufRead> {
    text: DataLines<'a, R>,
    width: Option<usize>,
    labels: Labels,
}

impl<R: BufRead> Reader<'_, R> {
    fn bad(&self, what: String) -> DataError {
        self.text.bad(what)
    }

    fn next_line(&mut self) -> Result<Option<(f64, Vec<f64>)>, DataError> {
        loop {
            let Some(line) = self.text.next_data()? else { return Ok(None) };
            let mut fields = line.split(',').map(str::trim);
            let lab = fields.next().expect("a non-empty line has a field");
            let y: f64 = match lab.parse() {
                Ok(y) => y,
                Err(_) if self.text.ln == 1 => continue, // a header
                Err(_) => return Err(self.bad(format!("label `{lab}` is not a number"))),
            };
            let y = check_label(y, lab, self.labels).map_err(|e| self.bad(e))?;
            let x = fields
                .enumerate()
                .map(|(k, v)| {
                    v.parse::<f64>()
                        .ok()
                        .filter(|v| v.is_finite())
                        .ok_or_else(|| self.bad(format!("column {}: `{v}` is not a finite number", k + 2)))
                })
                .collect::<Result<Vec<f64>, _>>()?;
            match self.width {
                Some(w) if w != x.len() => {
                    return Err(self.bad(format!("{} features, but the lines before have {w}", x.len())))
                }
                _ => self.width = Some(x.len()),
            }
            return Ok(Some((y, x)));
        }
    }
}

/// Samples and features of a CSV text (one streaming pass; the first `max_samples` lines).
pub fn csv_shape(
    text: impl BufRead,
    origin: &str,
    max_samples: Option<usize>,
    labels: Labels,
) -> Result<Shape, DataError> {
    csv_scan(text, origin, max_samples, labels, None)
}

/// [`csv_shape`], giving every row read to `log`.
pub(crate) fn csv_scan(
    text: impl BufRead,
    origin: &str,
    max_samples: Option<usize>,
    labels: Labels,
    mut log: Option<&mut RowLog>,
) -> Result<Shape, DataError> {
    let mut r = Reader { text: DataLines::new(text, origin), width: None, labels };
    let mut n = 0;
    while max_samples.is_none_or(|m| n < m) {
        let Some((y, x)) = r.next_line()? else { break };
        if let Some(log) = log.as_deref_mut() {
            log.push(y, x.iter().copied().enumerate());
        }
        n += 1;
    }
    match (n, r.width) {
        (0, _) => Err(DataError::file(origin, "no data lines")),
        (_, Some(0)) => Err(DataError::file(origin, "a label but no feature column")),
        (n, _) if max_samples.is_some_and(|m| n < m) => Err(DataError::file(
            origin,
            format!("data.samples = {} but the file has only {n} lines of data", max_samples.unwrap_or(0)),
        )),
        (n, w) => Ok(Shape { samples: n, features: w.unwrap_or(0) }),
    }
}

/// The labels of the first `samples` rows of a CSV text (the features read and dropped line by
/// line: a rank never holds the whole file).
pub fn csv_labels(text: impl BufRead, origin: &str, samples: usize, labels: Labels) -> Result<Vec<f64>, DataError> {
    let mut r = Reader { text: DataLines::new(text, origin), width: None, labels };
    let mut y = Vec::with_capacity(samples);
    while y.len() < samples {
        let Some((label, _)) = r.next_line()? else { break };
        y.push(label);
    }
    Ok(y)
}

/// The rows with the given indices (any order, repeats allowed) of a CSV text, `p` wide.
pub fn csv_rows(text: impl BufRead, origin: &str, p: usize, labels: Labels, idx: &[usize]) -> Result<Rows, DataError> {
    let mut wanted: Vec<(usize, usize)> = idx.iter().copied().enumerate().map(|(k, i)| (i, k)).collect();
    wanted.sort_unstable();
    let (mut x, mut y) = (vec![0.0; idx.len() * p], vec![0.0; idx.len()]);
    let mut r = Reader { text: DataLines::new(text, origin), width: Some(p), labels };
    let (mut row, mut next) = (0, 0);
    while next < wanted.len() {
        let Some((label, feats)) = r.next_line()? else {
            return Err(DataError::file(
                origin,
                format!("row {} asked for but the file has only {row} lines of data", wanted[next].0 + 1),
            ));
        };
        while next < wanted.len() && wanted[next].0 == row {
            let k = wanted[next].1;
            y[k] = label;
            x[k * p..(k + 1) * p].copy_from_slice(&feats);
            next += 1;
        }
        row += 1;
    }
    Ok(Rows::from_vecs(p, x, y))
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A byte-order mark before the first line (editors write one) is no header: the first row
    /// stays (it was taken for a header, silently: 39 rows of 40).
    #[test]
    fn a_byte_order_mark_is_not_a_header() {
        let text = "\u{feff}1,0.5,2\n0,1,3\n";
        assert_eq!(csv_shape(text.as_bytes(), "f", None, Labels::Binary).unwrap(), Shape { samples: 2, features: 2 });
        let with_header = "\u{feff}label,a,b\n1,0.5,2\n";
        assert_eq!(csv_shape(with_header.as_bytes(), "f", None, Labels::Binary).unwrap().samples, 1);
    }

    #[test]
    fn reads_a_header_comments_and_refuses_bad_lines() {
        let text = "label,a,b\n2,0.5,1\n# note\n0, 3 ,4\n1,5,6 # trailing\n";
        let s = csv_shape(text.as_bytes(), "f", None, Labels::Classes(3)).unwrap();
        assert_eq!(s, Shape { samples: 3, features: 2 });
        let r = csv_rows(text.as_bytes(), "f", 2, Labels::Classes(3), &[2, 0]).unwrap();
        assert_eq!(csv_labels(text.as_bytes(), "f", 3, Labels::Classes(3)).unwrap(), [2.0, 0.0, 1.0]);
        assert_eq!((r.row(0), r.row(1), r.labels()), (&[5.0, 6.0][..], &[0.5, 1.0][..], &[1.0, 2.0][..]));
        let e = |t: &str| csv_shape(t.as_bytes(), "f", None, Labels::Classes(3)).unwrap_err().to_string();
        assert_eq!(e("1,2,3\n0,1\n"), "f:2: 1 features, but the lines before have 2");
        assert_eq!(e("1,2,x\n"), "f:1: column 3: `x` is not a finite number");
        assert_eq!(e("1,2\nx,3\n"), "f:2: label `x` is not a number");
        assert!(e("3,1\n").starts_with("f:1: label `3` is not a class 0..2"), "{}", e("3,1\n"));
        assert_eq!(e("1\n"), "f: a label but no feature column");
        assert_eq!(e("# nothing\n"), "f: no data lines");
    }
}
