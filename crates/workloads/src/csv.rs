//! CSV data: one sample per line, fields separated by `data.delimiter` (default `,`), the label
//! in `data.label_column` (default the first) and the features in the other columns, in order; a
//! first line whose features (or, with numeric labels, its label) are not numbers is a header; `#`
//! outside double quotes starts a comment. With `data.labels = "auto"` any label values —
//! strings, classes from 1 — become 0..C−1 in sorted order ([`label_values`]). Every rank
//! streams the file and keeps only its own rows, like a LIBSVM file.

use std::borrow::Cow;
use std::collections::BTreeSet;
use std::io::BufRead;

use outrun_config::{DataConfig, LabelColumn, LabelValues, Labels, Missing};

use crate::lines::{check_label, DataLines};
use crate::rowcache::RowLog;
use crate::rows::{DataError, Rows, Shape};

/// Most distinct label values `data.labels = "auto"` maps (more is not a column of classes).
pub const MAX_LABEL_VALUES: usize = 10_000;

/// How a CSV file is laid out: its delimiter, its label column, and (`data.labels = "auto"`)
/// the label values in class order.
#[derive(Clone, Debug, PartialEq)]
pub struct CsvFormat {
    /// Between fields.
    pub delimiter: char,
    /// Where the label is.
    pub label: LabelColumn,
    /// The label values in class order (value k is class k), when they are mapped.
    pub names: Option<Vec<String>>,
    /// What a missing feature value becomes.
    pub missing: Fill,
}

/// What a missing feature value (an empty field, `NA`, `N/A`, `NaN`, `null`, `?`) becomes.
#[derive(Clone, Debug, PartialEq, Default)]
pub enum Fill {
    /// Refused.
    #[default]
    Refuse,
    /// This value.
    Zero,
    /// Each feature's value (its column's mean), by feature.
    Means(Vec<f64>),
    /// NaN: the pass that computes the means.
    Nan,
}

/// `t` without its leading spaces, but not a delimiter `d` that is one (a tab, a space).
fn lead(t: &str, d: char) -> &str {
    t.trim_start_matches(|c: char| c.is_whitespace() && c != d)
}

/// A line's fields, each trimmed: RFC 4180's quoting (`"a, b"` is one field, `""` inside a quoted
/// field is one `"`), so a file a spreadsheet or `pandas` quoted reads as its values. A quoted
/// field must end on its line, and nothing but spaces may follow its closing quote.
fn fields(line: &str, d: char) -> Result<Vec<Cow<'_, str>>, String> {
    if !line.contains('"') {
        return Ok(line.split(d).map(|f| Cow::Borrowed(f.trim())).collect());
    }
    let mut out = Vec::new();
    let mut rest = line;
    loop {
        let field = lead(rest, d);
        let Some(quoted) = field.strip_prefix('"') else {
            let (f, after) = field.split_once(d).map_or((field, None), |(f, a)| (f, Some(a)));
            if f.contains('"') {
                return Err(format!("column {}: a quote inside an unquoted field `{}`", out.len() + 1, f.trim()));
            }
            out.push(Cow::Borrowed(f.trim()));
            match after {
                Some(a) => rest = a,
                None => return Ok(out),
            }
            continue;
        };
        let mut value = String::new();
        let mut chars = quoted.char_indices();
        let end = loop {
            match chars.next() {
                None => return Err(format!("column {}: a quoted field that does not end on its line", out.len() + 1)),
                Some((i, '"')) if quoted[i + 1..].starts_with('"') => {
                    value.push('"');
                    chars.next();
                }
                Some((i, '"')) => break i + 1,
                Some((_, c)) => value.push(c),
            }
        };
        out.push(Cow::Owned(value.trim().to_string()));
        let after = lead(&quoted[end..], d);
        if after.is_empty() {
            return Ok(out);
        }
        match after.strip_prefix(d) {
            Some(a) => rest = a,
            None => return Err(format!("column {}: `{}` after a quoted field's closing quote", out.len(), after)),
        }
    }
}

/// Where `text` holds another separator than the delimiter `d` (a file in `;` read with `,`):
/// the delimiter that reads it, as a clause to add to an error; else nothing.
fn separated(text: &str, d: char) -> String {
    // `label index:value …`: a LIBSVM line
    let mut words = text.split_whitespace().skip(1).peekable();
    let pair = |w: &str| w.split_once(':').is_some_and(|(i, v)| i.parse::<u64>().is_ok() && v.parse::<f64>().is_ok());
    if words.peek().is_some() && words.all(pair) {
        return "; it reads as LIBSVM (index:value pairs): set data.kind = \"libsvm\"".into();
    }
    [(';', "\";\""), ('\t', "\"tab\""), ('|', "\"|\""), (',', "\",\"")]
        .into_iter()
        .find(|(c, _)| *c != d && text.contains(*c))
        .map_or(String::new(), |(c, name)| format!("; its values are separated by {c:?}: set data.delimiter = {name}"))
}

/// Whether a field holds no value.
fn is_missing(field: &str) -> bool {
    matches!(field, "" | "NA" | "N/A" | "NaN" | "nan" | "null" | "NULL" | "?")
}

impl Default for CsvFormat {
    fn default() -> Self {
        CsvFormat { delimiter: ',', label: LabelColumn::Index(0), names: None, missing: Fill::Refuse }
    }
}

impl CsvFormat {
    /// The format `data` describes, before [`format_of`]'s pass: without the label map, and
    /// with missing values read as NaN where `data.missing = "mean"` (the pass's own reading).
    fn of(data: &DataConfig) -> CsvFormat {
        CsvFormat {
            delimiter: data.csv_delimiter(),
            label: data.label_column.clone().unwrap_or(LabelColumn::Index(0)),
            names: None,
            missing: match data.missing {
                Missing::Refuse => Fill::Refuse,
                Missing::Zero => Fill::Zero,
                // computed by `format_of`
                Missing::Mean => Fill::Nan,
            },
        }
    }

    fn maps(&self) -> bool {
        self.names.is_some()
    }
}

/// The distinct label values of a CSV text in class order: numeric order when every value is a
/// number, else byte order (one streaming pass).
pub fn label_values(text: impl BufRead, origin: &str, fmt: &CsvFormat) -> Result<Vec<String>, DataError> {
    survey(text, origin, fmt, &[]).map(|s| s.labels)
}

/// What one pass over a training file finds: its label values in class order, its rows, and
/// each feature column's sum and count of the values it has (a missing one reads as NaN with
/// [`Fill::Nan`]) over the rows not `held` out.
struct Survey {
    labels: Vec<String>,
    rows: usize,
    sums: Vec<f64>,
    counts: Vec<usize>,
}

/// [`Survey`] of `text`; `held`: file rows (sorted) whose values the sums leave out.
fn survey(text: impl BufRead, origin: &str, fmt: &CsvFormat, held: &[usize]) -> Result<Survey, DataError> {
    let mut r = Reader::new(text, origin, fmt, Labels::Real);
    r.collect = Some(BTreeSet::new());
    let (mut sums, mut counts): (Vec<f64>, Vec<usize>) = (vec![], vec![]);
    let (mut rows, mut next_held) = (0, held.iter().peekable());
    while let Some((_, x)) = r.next_line()? {
        rows += 1;
        if next_held.next_if_eq(&&(rows - 1)).is_some() {
            continue;
        }
        if sums.len() < x.len() {
            sums.resize(x.len(), 0.0);
            counts.resize(x.len(), 0);
        }
        for (j, v) in x.iter().enumerate().filter(|(_, v)| !v.is_nan()) {
            sums[j] += v;
            counts[j] += 1;
        }
    }
    Ok(Survey { labels: sorted_values(r.collect.take().unwrap_or_default()), rows, sums, counts })
}

/// Label values in class order: numeric order when every value is a number, else byte order.
fn sorted_values(set: BTreeSet<String>) -> Vec<String> {
    let mut v: Vec<String> = set.into_iter().collect();
    let numbers: Option<Vec<f64>> = v.iter().map(|s| s.parse::<f64>().ok().filter(|x| x.is_finite())).collect();
    if let Some(mut keyed) = numbers.map(|n| n.into_iter().zip(v.clone()).collect::<Vec<_>>()) {
        keyed.sort_by(|a, b| a.0.total_cmp(&b.0));
        v = keyed.into_iter().map(|(_, s)| s).collect();
    }
    v
}

/// The format of `data` with its label map when `data.labels = "auto"` (a pass over `text`, the
/// training file: a held-out file is read with the training file's map), and with
/// `data.missing = "mean"` the means its missing values are filled with: each column's mean over
/// the training rows — without the rows `held(n)` names for a file of n rows (sorted; those
/// `data.test_fraction` holds out: a second pass, once the first has counted the rows). `held`
/// None: a layout that reads missing values as NaN, for what does not depend on the fill (the
/// shape, the labels, the label map).
pub fn format_of<R: BufRead>(
    data: &DataConfig,
    held: Option<&dyn Fn(usize) -> Vec<usize>>,
    text: impl Fn() -> Result<R, DataError>,
    origin: &str,
) -> Result<CsvFormat, DataError> {
    let mut fmt = CsvFormat::of(data);
    let held = held.filter(|_| data.missing == Missing::Mean);
    if data.labels == LabelValues::Auto || held.is_some() {
        let first = survey(text()?, origin, &fmt, &[])?;
        if data.labels == LabelValues::Auto {
            fmt.names = Some(first.labels.clone());
        }
        if let Some(held) = held {
            let held = held(first.rows);
            let Survey { sums, counts, .. } =
                if held.is_empty() { first } else { survey(text()?, origin, &fmt, &held)? };
            if let Some(j) = counts.iter().position(|&c| c == 0) {
                return Err(DataError::file(
                    origin,
                    format!("column of feature {}: no value to take the mean of (data.missing = \"mean\")", j + 1),
                ));
            }
            fmt.missing = Fill::Means(sums.iter().zip(&counts).map(|(s, &c)| s / c as f64).collect());
        }
    }
    Ok(fmt)
}

/// Fill the missing values (NaN, as [`format_of`]'s layout reads them) of `rows` with
/// `fmt`'s means (rows read through the row cache, which keeps them unfilled).
pub fn fill_missing(fmt: &CsvFormat, rows: &mut [f64], p: usize) {
    if let Fill::Means(means) = &fmt.missing {
        for row in rows.chunks_mut(p.max(1)) {
            for (v, m) in row.iter_mut().zip(means).filter(|(v, _)| v.is_nan()) {
                *v = *m;
            }
        }
    }
}

/// Streams the data lines of a CSV text: (label, features) per line, checked.
struct Reader<'a, R: BufRead> {
    text: DataLines<'a, R>,
    fmt: &'a CsvFormat,
    width: Option<usize>,
    labels: Labels,
    /// The label's column, once the first line said how many there are.
    at: Option<usize>,
    /// Collecting the label values ([`label_values`]) instead of reading labels.
    collect: Option<BTreeSet<String>>,
}

impl<'a, R: BufRead> Reader<'a, R> {
    fn new(text: R, origin: &'a str, fmt: &'a CsvFormat, labels: Labels) -> Self {
        Reader { text: DataLines::quoted(text, origin), fmt, width: None, labels, at: None, collect: None }
    }

    fn bad(&self, what: String) -> DataError {
        self.text.bad(what)
    }

    /// The label's column in a line of `fields` (the first data line decides; a named column
    /// needs the header), and whether this line is the header: line 1, when its label (numeric
    /// labels) or one of its features (mapped labels, which may be words) is not a number, or
    /// when it names the label's column.
    fn label_at(&mut self, fields: &[Cow<'_, str>]) -> Result<(usize, bool), DataError> {
        if let Some(at) = self.at {
            return Ok((at, false));
        }
        let n = fields.len();
        let number = |f: &str| f.parse::<f64>().is_ok();
        let (at, named) = match &self.fmt.label {
            LabelColumn::Index(i) if *i < n => (*i, false),
            LabelColumn::Index(i) => {
                return Err(self.bad(format!("data.label_column = {i}, but the line has {n} columns (0..{})", n - 1)))
            }
            LabelColumn::Name(s) if s == "first" => (0, false),
            LabelColumn::Name(s) if s == "last" => (n - 1, false),
            LabelColumn::Name(s) => match fields.iter().position(|f| f == s) {
                Some(i) => (i, true),
                None => {
                    return Err(self.bad(format!(
                        "data.label_column = \"{s}\": no such column in the header line ({})",
                        fields.join(", ")
                    )))
                }
            },
        };
        let words = self.fmt.maps() || self.collect.is_some();
        let header = named
            || match words {
                // a missing value is no word: a first data line with one is data
                true => fields.iter().enumerate().any(|(k, f)| k != at && !number(f) && !is_missing(f)),
                false => !number(&fields[at]),
            };
        self.at = Some(at);
        Ok((at, header && self.text.ln == 1))
    }

    fn next_line(&mut self) -> Result<Option<(f64, Vec<f64>)>, DataError> {
        loop {
            let Some(line) = self.text.next_data()? else { return Ok(None) };
            let fields = fields(&line, self.fmt.delimiter).map_err(|e| self.bad(e))?;
            if fields.len() < 2 {
                let d = self.fmt.delimiter;
                let what = if d == ',' { String::new() } else { format!(" (data.delimiter = {d:?})") };
                return Err(self.bad(format!("a label but no feature column{what}{}", separated(&line, d))));
            }
            let (at, header) = self.label_at(&fields)?;
            if header {
                continue;
            }
            let lab: &str = &fields[at];
            let y = match (&mut self.collect, &self.fmt.names) {
                (Some(set), _) => {
                    if !set.contains(lab) {
                        if set.len() == MAX_LABEL_VALUES {
                            return Err(self.bad(format!(
                                "label `{lab}`: more than {MAX_LABEL_VALUES} distinct labels; is data.label_column the label's column?"
                            )));
                        }
                        set.insert(lab.to_string());
                    }
                    0.0
                }
                (None, Some(names)) => match names.iter().position(|n| n == lab) {
                    // more values than the model has classes: say so, not "not a class"
                    Some(_)
                        if matches!(self.labels, Labels::Classes(c) if names.len() > c)
                            || (self.labels == Labels::Binary && names.len() > 2) =>
                    {
                        let want = match self.labels {
                            Labels::Classes(c) => format!("model.classes = {c}"),
                            _ => "model.loss = \"logistic\" takes 2".to_string(),
                        };
                        let shown: Vec<&str> = names.iter().take(10).map(String::as_str).collect();
                        return Err(self.bad(format!(
                            "data.labels = \"auto\" found {} label values ({}{}), but {want}",
                            names.len(),
                            shown.join(", "),
                            if names.len() > 10 { ", …" } else { "" }
                        )));
                    }
                    Some(k) => k as f64,
                    None => {
                        return Err(self.bad(format!(
                            "label `{lab}` is not one of the {} labels data.labels = \"auto\" mapped from data.path",
                            names.len()
                        )))
                    }
                },
                (None, None) => match lab.parse() {
                    Ok(y) => y,
                    Err(_) => {
                        // a label holding another separator: the file's values are not split
                        let other = separated(lab, self.fmt.delimiter);
                        return Err(self.bad(if other.is_empty() {
                            format!("label `{lab}` is not a number (data.labels = \"auto\" maps labels that are not)")
                        } else {
                            format!("label `{lab}` is not a number{other}")
                        }));
                    }
                },
            };
            let y =
                if self.collect.is_some() { y } else { check_label(y, lab, self.labels).map_err(|e| self.bad(e))? };
            let x = fields
                .iter()
                .enumerate()
                .filter(|&(k, _)| k != at)
                .enumerate()
                .map(|(j, (k, v))| {
                    if let Some(x) = v.parse::<f64>().ok().filter(|v| v.is_finite()) {
                        return Ok(x);
                    }
                    match (&self.fmt.missing, is_missing(v)) {
                        (Fill::Zero, true) => Ok(0.0),
                        (Fill::Nan, true) => Ok(f64::NAN),
                        (Fill::Means(m), true) => m.get(j).copied().ok_or_else(|| {
                            self.bad(format!(
                                "column {}: a missing value past the training file's {} features",
                                k + 1,
                                m.len()
                            ))
                        }),
                        (Fill::Refuse, true) => Err(self.bad(format!(
                            "column {}: `{v}` holds no value (data.missing = \"zero\" or \"mean\" fills it)",
                            k + 1
                        ))),
                        _ => Err(self.bad(format!("column {}: `{v}` is not a finite number", k + 1))),
                    }
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
    fmt: &CsvFormat,
    max_samples: Option<usize>,
    labels: Labels,
) -> Result<Shape, DataError> {
    csv_scan(text, origin, fmt, max_samples, labels, None)
}

/// [`csv_shape`], giving every row read to `log`.
pub(crate) fn csv_scan(
    text: impl BufRead,
    origin: &str,
    fmt: &CsvFormat,
    max_samples: Option<usize>,
    labels: Labels,
    mut log: Option<&mut RowLog>,
) -> Result<Shape, DataError> {
    let mut r = Reader::new(text, origin, fmt, labels);
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
pub fn csv_labels(
    text: impl BufRead,
    origin: &str,
    fmt: &CsvFormat,
    samples: usize,
    labels: Labels,
) -> Result<Vec<f64>, DataError> {
    let mut r = Reader::new(text, origin, fmt, labels);
    let mut y = Vec::with_capacity(samples);
    while y.len() < samples {
        let Some((label, _)) = r.next_line()? else { break };
        y.push(label);
    }
    Ok(y)
}

/// The rows with the given indices (any order, repeats allowed) of a CSV text, `p` wide.
pub fn csv_rows(
    text: impl BufRead,
    origin: &str,
    fmt: &CsvFormat,
    p: usize,
    labels: Labels,
    idx: &[usize],
) -> Result<Rows, DataError> {
    let mut wanted: Vec<(usize, usize)> = idx.iter().copied().enumerate().map(|(k, i)| (i, k)).collect();
    wanted.sort_unstable();
    let (mut x, mut y) = (vec![0.0; idx.len() * p], vec![0.0; idx.len()]);
    let mut r = Reader::new(text, origin, fmt, labels);
    r.width = Some(p);
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

    /// `data.missing`: empty and NA-like fields refused with their line and the key that fills
    /// them, or filled with 0 or the column's mean over the file's values (computed in the
    /// format's pass); a first data line with a missing value stays data; a missing label is
    /// never filled.
    #[test]
    fn missing_values_are_refused_or_filled() {
        let text = "y,a,b,c\n1,1,,NA\n0,3,4,?\n1,NaN,8,6\n";
        let e = csv_shape(text.as_bytes(), "f", &CsvFormat::default(), None, Labels::Binary).unwrap_err().to_string();
        assert_eq!(e, "f:2: column 3: `` holds no value (data.missing = \"zero\" or \"mean\" fills it)");
        let zero = CsvFormat { missing: Fill::Zero, ..Default::default() };
        let r = csv_rows(text.as_bytes(), "f", &zero, 3, Labels::Binary, &[0, 1, 2]).unwrap();
        assert_eq!(r.features(), &[1.0, 0.0, 0.0, 3.0, 4.0, 0.0, 0.0, 8.0, 6.0]);
        let data = |missing: &str, labels: &str| -> DataConfig {
            let c = outrun_config::parse(
                &format!("[run]\nname='m'\niterations=1\n[data]\nkind='csv'\npath='f.csv'\nmissing='{missing}'\nlabels='{labels}'\n[model]\nloss='logistic'\nlr=0.1\n[scheme]\nkind='umw'\nworkers=2\n"),
                &[],
            )
            .unwrap();
            c.gd().data.clone()
        };
        let fmt = format_of(&data("mean", "numeric"), Some(&|_| vec![]), || Ok(text.as_bytes()), "f").unwrap();
        assert_eq!(fmt.missing, Fill::Means(vec![2.0, 6.0, 6.0]));
        let r = csv_rows(text.as_bytes(), "f", &fmt, 3, Labels::Binary, &[0, 1, 2]).unwrap();
        assert_eq!(r.features(), &[1.0, 6.0, 6.0, 3.0, 4.0, 6.0, 2.0, 8.0, 6.0]);
        // the mapped-labels pass and the means' pass are one pass
        let both = format_of(&data("mean", "auto"), Some(&|_| vec![]), || Ok(text.as_bytes()), "f").unwrap();
        assert_eq!(
            (both.names.as_deref(), &both.missing),
            (Some(&["0".to_string(), "1".to_string()][..]), &fmt.missing)
        );
        // no header: a first line with a missing value is a row, with words for labels too
        let words = "cat,1,NA\ndog,2,3\n";
        let named =
            CsvFormat { names: Some(vec!["cat".into(), "dog".into()]), missing: Fill::Zero, ..Default::default() };
        assert_eq!(csv_shape(words.as_bytes(), "f", &named, None, Labels::Binary).unwrap().samples, 2);
        let e = format_of(&data("mean", "numeric"), Some(&|_| vec![]), || Ok("1,NA\n0,?\n".as_bytes()), "f")
            .unwrap_err()
            .to_string();
        assert!(e.contains("column of feature 1: no value to take the mean of"), "{e}");
        let e = csv_shape("1,2\nNA,1\n".as_bytes(), "f", &zero, None, Labels::Binary).unwrap_err().to_string();
        assert!(e.contains("label `NA`"), "{e}");
    }

    /// A byte-order mark before the first line (editors write one) is no header: the first row
    /// stays (it was taken for a header, silently: 39 rows of 40).
    #[test]
    fn a_byte_order_mark_is_not_a_header() {
        let text = "\u{feff}1,0.5,2\n0,1,3\n";
        assert_eq!(
            csv_shape(text.as_bytes(), "f", &CsvFormat::default(), None, Labels::Binary).unwrap(),
            Shape { samples: 2, features: 2 }
        );
        let with_header = "\u{feff}label,a,b\n1,0.5,2\n";
        assert_eq!(
            csv_shape(with_header.as_bytes(), "f", &CsvFormat::default(), None, Labels::Binary).unwrap().samples,
            1
        );
    }

    #[test]
    fn reads_a_header_comments_and_refuses_bad_lines() {
        let text = "label,a,b\n2,0.5,1\n# note\n0, 3 ,4\n1,5,6 # trailing\n";
        let s = csv_shape(text.as_bytes(), "f", &CsvFormat::default(), None, Labels::Classes(3)).unwrap();
        assert_eq!(s, Shape { samples: 3, features: 2 });
        let r = csv_rows(text.as_bytes(), "f", &CsvFormat::default(), 2, Labels::Classes(3), &[2, 0]).unwrap();
        assert_eq!(
            csv_labels(text.as_bytes(), "f", &CsvFormat::default(), 3, Labels::Classes(3)).unwrap(),
            [2.0, 0.0, 1.0]
        );
        assert_eq!((r.row(0), r.row(1), r.labels()), (&[5.0, 6.0][..], &[0.5, 1.0][..], &[1.0, 2.0][..]));
        let e = |t: &str| {
            csv_shape(t.as_bytes(), "f", &CsvFormat::default(), None, Labels::Classes(3)).unwrap_err().to_string()
        };
        assert_eq!(e("1,2,3\n0,1\n"), "f:2: 1 features, but the lines before have 2");
        assert_eq!(e("1,2,x\n"), "f:1: column 3: `x` is not a finite number");
        assert_eq!(e("1,2\nx,3\n"), "f:2: label `x` is not a number (data.labels = \"auto\" maps labels that are not)");
        assert!(e("3,1\n").starts_with("f:1: label `3` is not a class 0..2"), "{}", e("3,1\n"));
        assert_eq!(e("1\n"), "f:1: a label but no feature column");
        assert_eq!(e("# nothing\n"), "f: no data lines");
    }

    /// The user's file as it came: `;` between fields, string labels in the last column, a
    /// header; and classes counted from 1 mapped in numeric order (10 after 9, not after 1).
    #[test]
    fn delimiters_label_columns_and_mapped_labels() {
        let text = "a;b;kind\n0.5;1;cat\n2;3;dog\n4;5;cat\n6;7;bird\n";
        let fmt = CsvFormat { delimiter: ';', label: LabelColumn::Name("kind".into()), ..Default::default() };
        let names = label_values(text.as_bytes(), "f", &fmt).unwrap();
        assert_eq!(names, ["bird", "cat", "dog"]);
        let fmt = CsvFormat { names: Some(names), ..fmt };
        let c3 = Labels::Classes(3);
        assert_eq!(csv_shape(text.as_bytes(), "f", &fmt, None, c3).unwrap(), Shape { samples: 4, features: 2 });
        assert_eq!(csv_labels(text.as_bytes(), "f", &fmt, 4, c3).unwrap(), [1.0, 2.0, 1.0, 0.0]);
        let r = csv_rows(text.as_bytes(), "f", &fmt, 2, c3, &[3, 1]).unwrap();
        assert_eq!((r.row(0), r.row(1), r.labels()), (&[6.0, 7.0][..], &[2.0, 3.0][..], &[0.0, 2.0][..]));
        // "last" finds the same column without a name; no header: every line is data
        let last = CsvFormat { label: LabelColumn::Name("last".into()), ..fmt.clone() };
        assert_eq!(csv_labels(&text.as_bytes()[11..], "f", &last, 4, c3).unwrap(), [1.0, 2.0, 1.0, 0.0]);
        let ones = "1\t0.5\n10\t2\n9\t1\n";
        let tab = CsvFormat { delimiter: '\t', ..CsvFormat::default() };
        let names = label_values(ones.as_bytes(), "f", &tab).unwrap();
        assert_eq!(names, ["1", "9", "10"]);
        let tab = CsvFormat { names: Some(names), ..tab };
        assert_eq!(csv_labels(ones.as_bytes(), "f", &tab, 3, c3).unwrap(), [0.0, 2.0, 1.0]);
        let e = |t: &str, f: &CsvFormat| csv_shape(t.as_bytes(), "f", f, None, c3).unwrap_err().to_string();
        let named = CsvFormat { label: LabelColumn::Name("y".into()), ..CsvFormat::default() };
        assert_eq!(e("a,b\n1,2\n", &named), "f:1: data.label_column = \"y\": no such column in the header line (a, b)");
        let far = CsvFormat { label: LabelColumn::Index(5), ..CsvFormat::default() };
        assert_eq!(e("1,2\n", &far), "f:1: data.label_column = 5, but the line has 2 columns (0..1)");
        let semi = CsvFormat { delimiter: ';', ..CsvFormat::default() };
        assert_eq!(
            e("1,2\n", &semi),
            "f:1: a label but no feature column (data.delimiter = ';'); its values are separated by ',': set data.delimiter = \",\""
        );
        assert_eq!(e("1\n", &semi), "f:1: a label but no feature column (data.delimiter = ';')");
        assert!(e("1,2\ncat,3\n", &CsvFormat::default()).contains("data.labels = \"auto\" maps labels"));
        // a file in another separator names the delimiter that reads it
        assert_eq!(
            e("1;2\n", &CsvFormat::default()),
            "f:1: a label but no feature column; its values are separated by ';': set data.delimiter = \";\""
        );
        assert!(e("1\t2\n", &CsvFormat::default()).ends_with("set data.delimiter = \"tab\""));
        // a LIBSVM file read as CSV
        assert_eq!(
            e("1 3:0.5 7:1\n", &CsvFormat::default()),
            "f:1: a label but no feature column; it reads as LIBSVM (index:value pairs): set data.kind = \"libsvm\""
        );
        // decimal commas and ';' between the values: the first line reads as a header, the
        // second's label holds the separator
        assert_eq!(
            e("0;1,5;2\n1;0,5;3\n", &CsvFormat::default()),
            "f:2: label `1;0` is not a number; its values are separated by ';': set data.delimiter = \";\""
        );
    }

    /// Quoted fields (RFC 4180, as spreadsheets and `pandas` write them) read as their values:
    /// a delimiter or a doubled quote inside quotes; a quote that does not close is refused.
    #[test]
    fn quoted_fields_read_as_their_values() {
        let f = |l: &str| fields(l, ',').map(|v| v.into_iter().map(|x| x.into_owned()).collect::<Vec<_>>());
        assert_eq!(f("1, 2 ,3").unwrap(), ["1", "2", "3"]);
        assert_eq!(f("\"1\", \"2.5\" ,3").unwrap(), ["1", "2.5", "3"]);
        assert_eq!(f("\"a, b\",\"say \"\"hi\"\"\",").unwrap(), ["a, b", "say \"hi\"", ""]);
        assert_eq!(f("\"\",1").unwrap(), ["", "1"]);
        assert_eq!(f("1,\"2").unwrap_err(), "column 2: a quoted field that does not end on its line");
        assert_eq!(f("1,\"2\"x,3").unwrap_err(), "column 2: `x,3` after a quoted field's closing quote");
        assert_eq!(f("1,2\"x").unwrap_err(), "column 2: a quote inside an unquoted field `2\"x`");
        // a tab (or space) delimiter is not taken for the spaces around a quoted field
        let tab = |l: &str| fields(l, '\t').map(|v| v.into_iter().map(|x| x.into_owned()).collect::<Vec<_>>());
        assert_eq!(tab("\"1\"\t\"a b\"\t3").unwrap(), ["1", "a b", "3"]);
        assert_eq!(tab("\"1\"\t\t3").unwrap(), ["1", "", "3"]);
        assert_eq!(fields("\"1\" \"2\"", ' ').unwrap(), ["1", "2"]);
        // a quoted file reads as its unquoted twin, label names and all
        let quoted = "\"y\",\"a\",\"b\"\n\"1\",\"0.5\",\"2\"\n\"0\",\"1.5\",\"3\"\n";
        let plain = "y,a,b\n1,0.5,2\n0,1.5,3\n";
        let rows = |t: &str| {
            let r = csv_rows(t.as_bytes(), "f", &CsvFormat::default(), 2, Labels::Binary, &[0, 1]).unwrap();
            (r.row(0).to_vec(), r.row(1).to_vec(), r.labels().to_vec())
        };
        assert_eq!(rows(quoted), rows(plain));
        // a quoted missing value is missing (the quotes are gone before it is looked at)
        let zero = CsvFormat { missing: Fill::Zero, ..CsvFormat::default() };
        let r = csv_rows("\"1\",\"NA\",\"2\"\n".as_bytes(), "f", &zero, 2, Labels::Binary, &[0]).unwrap();
        assert_eq!(r.row(0), &[0.0, 2.0][..]);
        let named = CsvFormat { label: LabelColumn::Name("y".into()), ..CsvFormat::default() };
        assert_eq!(
            csv_shape(quoted.as_bytes(), "f", &named, None, Labels::Binary).unwrap(),
            Shape { samples: 2, features: 2 }
        );
        // a `#` inside quotes is text (a label, a header name), one outside them a comment
        let hashes = "\"id #\",a\n\"ward #2\",1 # first\n\"ward #10\",2\n# \"a comment\"\n";
        let auto = CsvFormat { label: LabelColumn::Name("id #".into()), ..CsvFormat::default() };
        let names = label_values(hashes.as_bytes(), "f", &auto).unwrap();
        assert_eq!(names, ["ward #10", "ward #2"]);
        let auto = CsvFormat { names: Some(names), ..auto };
        let r = csv_rows(hashes.as_bytes(), "f", &auto, 1, Labels::Classes(2), &[0, 1]).unwrap();
        assert_eq!((r.row(0), r.row(1), r.labels()), (&[1.0][..], &[2.0][..], &[1.0, 0.0][..]));
    }
}
