//! Matrices and vectors of mat-vec jobs: generated from the run's seed (entry (i, j) is a pure
//! function of `(seed, i, j)`, so any rank generates any row), or read from a Matrix Market
//! file (`coordinate` or `array`, `real` or `integer`, `general` or `symmetric`) and a vector
//! file (one value per line). Errors name the file and line.

use std::io::BufRead;
use std::path::Path;

use outrun_codes::splitmix64;
use outrun_config::{MatrixConfig, MatrixDist, VectorConfig};

use crate::data::{DataError, Shape};

/// Largest matrix held (entries): 2²⁷ doubles = 1 GiB per rank.
pub const MAX_ENTRIES: usize = 1 << 27;

/// A dense row-major matrix.
#[derive(Clone, Debug, PartialEq)]
pub struct Dense {
    /// Rows r.
    pub rows: usize,
    /// Columns m.
    pub cols: usize,
    /// Row-major values.
    pub data: Vec<f64>,
}

impl Dense {
    /// Row `i`.
    pub fn row(&self, i: usize) -> &[f64] {
        &self.data[i * self.cols..(i + 1) * self.cols]
    }

    /// A·x, plainly (the reference of exactness tests).
    pub fn times(&self, x: &[f64]) -> Vec<f64> {
        (0..self.rows).map(|i| self.row(i).iter().zip(x).map(|(a, b)| a * b).sum()).collect()
    }
}

const MATRIX: u64 = 0x6d61_7472_6978_0001;
const VECTOR: u64 = 0x7665_6374_6f72_0001;

/// Uniform in [0, 1) from a key (53 bits of a SplitMix64 chain).
fn unit(key: &[u64]) -> f64 {
    let mut s = 0u64;
    let mut z = 0;
    for &k in key {
        s ^= k;
        z = splitmix64(&mut s);
        s = z;
    }
    (z >> 11) as f64 / (1u64 << 53) as f64
}

/// Entry (i, j) of the generated matrix.
pub fn entry(m: &MatrixConfig, seed: u64, i: usize, j: usize) -> f64 {
    let (i, j) = if m.symmetric { (i.min(j), i.max(j)) } else { (i, j) };
    let key = [seed, MATRIX, i as u64, j as u64];
    match m.dist {
        MatrixDist::Uniform => unit(&key),
        MatrixDist::Normal => {
            // Box–Muller with libm (the same bits on every host)
            let u1 = 1.0 - unit(&key);
            let u2 = unit(&[seed, MATRIX ^ 1, i as u64, j as u64]);
            libm::sqrt(-2.0 * libm::log(u1)) * libm::cos(std::f64::consts::TAU * u2)
        }
    }
}

fn mm_err(path: &str, line: usize, what: impl std::fmt::Display) -> DataError {
    DataError::line(path, line, what.to_string())
}

fn open(field: &str, path: &Path) -> Result<Box<dyn BufRead>, DataError> {
    crate::input::open_decompressed(path).map_err(|e| DataError::read(field, path.display(), e))
}

/// A Matrix Market header and size line.
struct Header {
    coordinate: bool,
    /// `pattern`: coordinates without values, each entry 1 (as scipy reads them).
    pattern: bool,
    symmetry: Symmetry,
    rows: usize,
    cols: usize,
    entries: usize,
}

/// What a file's lower triangle stands for.
#[derive(Clone, Copy, PartialEq)]
enum Symmetry {
    General,
    /// A(j, i) = A(i, j): the lower triangle with its diagonal is given.
    Symmetric,
    /// A(j, i) = −A(i, j), a zero diagonal: the strict lower triangle is given.
    Skew,
}

/// A Matrix Market file's header and its numbered lines after it.
fn open_mm(p: &str) -> Result<(Header, impl Iterator<Item = (usize, std::io::Result<String>)>), DataError> {
    let mut lines = open("matrix.path", Path::new(p))?.lines().enumerate().map(|(i, l)| (i + 1, l));
    let h = header(&mut lines, p)?;
    Ok((h, lines))
}

fn header(lines: &mut impl Iterator<Item = (usize, std::io::Result<String>)>, path: &str) -> Result<Header, DataError> {
    let read = |r: std::io::Result<String>, ln: usize| r.map_err(|e| mm_err(path, ln, format!("cannot read: {e}")));
    let (ln, first) =
        lines.next().ok_or_else(|| mm_err(path, 1, "empty file: expected a `%%MatrixMarket matrix ...` header"))?;
    let first = read(first, ln)?;
    let words: Vec<String> = first.split_whitespace().map(str::to_lowercase).collect();
    if words.len() != 5 || words[0] != "%%matrixmarket" || words[1] != "matrix" {
        return Err(mm_err(
            path,
            ln,
            "expected the header `%%MatrixMarket matrix <coordinate|array> <real|integer|pattern> <general|symmetric|skew-symmetric>`",
        ));
    }
    let coordinate = match words[2].as_str() {
        "coordinate" => true,
        "array" => false,
        other => return Err(mm_err(path, ln, format!("format `{other}` is not supported (coordinate or array)"))),
    };
    let pattern = match words[3].as_str() {
        "real" | "integer" | "double" => false,
        "pattern" if coordinate => true,
        "pattern" => return Err(mm_err(path, ln, "field `pattern` goes with the coordinate format, not array")),
        other => return Err(mm_err(path, ln, format!("field `{other}` is not supported (real, integer or pattern)"))),
    };
    let symmetry = match words[4].as_str() {
        "general" => Symmetry::General,
        "symmetric" => Symmetry::Symmetric,
        "skew-symmetric" => Symmetry::Skew,
        other => {
            return Err(mm_err(
                path,
                ln,
                format!("symmetry `{other}` is not supported (general, symmetric or skew-symmetric)"),
            ))
        }
    };
    for (ln, l) in lines.by_ref() {
        let l = read(l, ln)?;
        let t = l.trim();
        if t.is_empty() || t.starts_with('%') {
            continue;
        }
        let nums: Vec<&str> = t.split_whitespace().collect();
        let want = if coordinate { 3 } else { 2 };
        let parsed: Option<Vec<usize>> = nums.iter().map(|w| w.parse().ok()).collect();
        let Some(v) = parsed.filter(|v| v.len() == want) else {
            return Err(mm_err(
                path,
                ln,
                format!("expected the size line `rows cols{}`, found `{t}`", if coordinate { " entries" } else { "" }),
            ));
        };
        let (rows, cols) = (v[0], v[1]);
        if rows == 0 || cols == 0 {
            return Err(mm_err(path, ln, "the matrix has no rows or no columns"));
        }
        if symmetry != Symmetry::General && rows != cols {
            return Err(mm_err(path, ln, format!("a {} matrix must be square, not {rows} × {cols}", words[4])));
        }
        if rows.saturating_mul(cols) > MAX_ENTRIES {
            return Err(mm_err(
                path,
                ln,
                format!("{rows} × {cols} is more than the {MAX_ENTRIES} entries a rank holds densely"),
            ));
        }
        let entries = match (coordinate, symmetry) {
            (true, _) => v[2],
            (false, Symmetry::General) => rows * cols,
            (false, Symmetry::Symmetric) => rows * (rows + 1) / 2,
            (false, Symmetry::Skew) => rows * (rows - 1) / 2,
        };
        return Ok(Header { coordinate, pattern, symmetry, rows, cols, entries });
    }
    Err(mm_err(path, 1, "no size line after the header"))
}

/// The shape (r = samples, m = features) of the configured matrix. A file is read whole (and
/// not kept), so a malformed line is reported before MPI starts (rank 0 calls this at set-up).
pub fn shape(m: &MatrixConfig) -> Result<Shape, DataError> {
    match &m.path {
        None => Ok(Shape { samples: m.rows.expect("validated"), features: m.cols.expect("validated") }),
        Some(_) => {
            let (rows, cols) = entries(m, 0, |_, _, _| {})?;
            Ok(Shape { samples: rows, features: cols })
        }
    }
}

/// The configured matrix, whole (the dense reference; a worker keeps only its coded rows,
/// fed by [`entries`]).
pub fn load(m: &MatrixConfig, seed: u64) -> Result<Dense, DataError> {
    if m.path.is_none() {
        let (rows, cols) = (m.rows.expect("validated"), m.cols.expect("validated"));
        if rows.saturating_mul(cols) > MAX_ENTRIES {
            return Err(DataError::field(
                "matrix",
                format!("{rows} × {cols} is more than the {MAX_ENTRIES} entries a rank holds densely"),
            ));
        }
    }
    let (rows, cols) = dims(m)?;
    let mut data = vec![0.0; rows * cols];
    entries(m, seed, |i, j, v| data[i * cols + j] += v)?;
    Ok(Dense { rows, cols, data })
}

/// The configured matrix's (rows, cols): a file's size line (nothing else is read).
pub fn dims(m: &MatrixConfig) -> Result<(usize, usize), DataError> {
    let Some(p) = &m.path else { return Ok((m.rows.expect("validated"), m.cols.expect("validated"))) };
    let (h, _) = open_mm(p)?;
    Ok((h.rows, h.cols))
}

/// Every entry (i, j, v) of the configured matrix to `f`, in the file's order (a symmetric
/// file's off-diagonal entries twice: (i, j) and (j, i); an entry given twice, twice) or row by
/// row for a generated one. Returns the shape (rows, cols).
pub fn entries(m: &MatrixConfig, seed: u64, mut f: impl FnMut(usize, usize, f64)) -> Result<(usize, usize), DataError> {
    let Some(p) = &m.path else {
        let (rows, cols) = (m.rows.expect("validated"), m.cols.expect("validated"));
        for i in 0..rows {
            (0..cols).for_each(|j| f(i, j, entry(m, seed, i, j)));
        }
        return Ok((rows, cols));
    };
    let (h, lines) = open_mm(p)?;
    let mut seen = 0usize;
    let mut last = 0;
    for (ln, l) in lines {
        last = ln;
        let l = l.map_err(|e| mm_err(p, ln, format!("cannot read: {e}")))?;
        let t = l.trim();
        if t.is_empty() || t.starts_with('%') {
            continue;
        }
        if seen == h.entries {
            return Err(mm_err(p, ln, format!("more entries than the {} the size line announces", h.entries)));
        }
        let words: Vec<&str> = t.split_whitespace().collect();
        let value = |w: &str| -> Result<f64, DataError> {
            match w.parse::<f64>() {
                Ok(v) if v.is_finite() => Ok(v),
                _ => Err(mm_err(p, ln, format!("`{w}` is not a finite number"))),
            }
        };
        let (i, j, v) = if h.coordinate {
            if words.len() != 3 - usize::from(h.pattern) {
                let want = if h.pattern { "row col" } else { "row col value" };
                return Err(mm_err(p, ln, format!("expected `{want}`, found `{t}`")));
            }
            let idx = |w: &str, n: usize, what: &str| -> Result<usize, DataError> {
                match w.parse::<usize>() {
                    Ok(k) if (1..=n).contains(&k) => Ok(k - 1),
                    _ => Err(mm_err(p, ln, format!("{what} index `{w}` is not in 1..={n}"))),
                }
            };
            let (i, j) = (idx(words[0], h.rows, "row")?, idx(words[1], h.cols, "column")?);
            if h.symmetry != Symmetry::General && j > i {
                return Err(mm_err(
                    p,
                    ln,
                    format!(
                        "entry ({}, {}) is above the diagonal of a symmetric matrix (give the lower triangle)",
                        i + 1,
                        j + 1
                    ),
                ));
            }
            if h.symmetry == Symmetry::Skew && i == j {
                return Err(mm_err(
                    p,
                    ln,
                    format!("entry ({0}, {0}) is on the diagonal of a skew-symmetric matrix, which is zero", i + 1),
                ));
            }
            (i, j, if h.pattern { 1.0 } else { value(words[2])? })
        } else {
            if words.len() != 1 {
                return Err(mm_err(p, ln, format!("expected one value per line (array format), found `{t}`")));
            }
            // column-major; the lower triangle of a symmetric matrix (without its diagonal for a
            // skew-symmetric one)
            let (i, j) = if h.symmetry == Symmetry::General {
                (seen % h.rows, seen / h.rows)
            } else {
                let skip = usize::from(h.symmetry == Symmetry::Skew);
                let (mut j, mut k) = (0, seen);
                while k >= h.rows - j - skip {
                    k -= h.rows - j - skip;
                    j += 1;
                }
                (j + skip + k, j)
            };
            (i, j, value(words[0])?)
        };
        f(i, j, v);
        match h.symmetry {
            Symmetry::Symmetric if i != j => f(j, i, v),
            Symmetry::Skew => f(j, i, -v),
            _ => {}
        }
        seen += 1;
    }
    if seen < h.entries {
        return Err(mm_err(
            p,
            last.max(1),
            format!("only {seen} of the {} entries the size line announces", h.entries),
        ));
    }
    Ok((h.rows, h.cols))
}

/// x: read from `[vector] path` (m values, one per line; `#` comments; or a Matrix Market file
/// of m × 1 or 1 × m, as collections ship right-hand sides) or generated uniform in [0, 1).
pub fn vector(v: &VectorConfig, seed: u64, m: usize) -> Result<Vec<f64>, DataError> {
    let Some(p) = &v.path else {
        return Ok((0..m).map(|j| unit(&[seed, VECTOR, j as u64])).collect());
    };
    let mut first = String::new();
    open("vector.path", Path::new(p))?.read_line(&mut first).map_err(|e| mm_err(p, 1, format!("cannot read: {e}")))?;
    if first.trim_start().to_ascii_lowercase().starts_with("%%matrixmarket") {
        let file =
            MatrixConfig { path: Some(p.clone()), rows: None, cols: None, symmetric: false, dist: MatrixDist::Uniform };
        let (rows, cols) = dims(&file)?;
        if !(cols == 1 && rows == m || rows == 1 && cols == m) {
            return Err(DataError::field(
                "vector.path",
                format!(
                    "{p}: a {rows} × {cols} matrix; x is a vector of the matrix's {m} columns ({m} × 1 or 1 × {m})"
                ),
            ));
        }
        let mut x = vec![0.0; m];
        entries(&file, 0, |i, j, v| x[i + j] += v)?;
        return Ok(x);
    }
    let mut x = Vec::with_capacity(m);
    let mut last = 0;
    for (i, l) in open("vector.path", Path::new(p))?.lines().enumerate() {
        let ln = i + 1;
        last = ln;
        let l = l.map_err(|e| mm_err(p, ln, format!("cannot read: {e}")))?;
        let t = l.trim();
        if t.is_empty() || t.starts_with('#') {
            continue;
        }
        if x.len() == m {
            return Err(mm_err(p, ln, format!("more than the {m} values of the matrix's columns")));
        }
        match t.parse::<f64>() {
            Ok(v) if v.is_finite() => x.push(v),
            _ => return Err(mm_err(p, ln, format!("`{t}` is not a finite number (one value per line)"))),
        }
    }
    if x.len() < m {
        return Err(mm_err(
            p,
            last.max(1),
            format!("only {} value{}; the matrix has {m} columns", x.len(), if x.len() == 1 { "" } else { "s" }),
        ));
    }
    Ok(x)
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A file unique to this process and `name` (tests run in parallel threads: every test
    /// uses its own names).
    fn write(name: &str, text: &str) -> String {
        let p = std::env::temp_dir().join(format!("outrun-mm-{}-{name}", std::process::id()));
        std::fs::write(&p, text).unwrap();
        p.display().to_string()
    }

    fn cfg(path: &str) -> MatrixConfig {
        MatrixConfig { rows: None, cols: None, path: Some(path.into()), symmetric: false, dist: MatrixDist::Uniform }
    }

    #[test]
    fn reads_every_supported_layout() {
        let coord = write(
            "layout-c",
            "%%MatrixMarket matrix coordinate real general\n% comment\n2 3 3\n1 1 1.5\n2 3 -2\n1 3 4e0\n",
        );
        let a = load(&cfg(&coord), 0).unwrap();
        assert_eq!(a.data, vec![1.5, 0.0, 4.0, 0.0, 0.0, -2.0]);
        let sym = write("layout-s", "%%MatrixMarket matrix coordinate real symmetric\n3 3 2\n2 1 5\n3 3 1\n");
        assert_eq!(load(&cfg(&sym), 0).unwrap().data, vec![0.0, 5.0, 0.0, 5.0, 0.0, 0.0, 0.0, 0.0, 1.0]);
        let arr = write("layout-a", "%%MatrixMarket matrix array real general\n2 2\n1\n2\n3\n4\n");
        assert_eq!(load(&cfg(&arr), 0).unwrap().data, vec![1.0, 3.0, 2.0, 4.0]);
        let arrs = write("layout-as", "%%MatrixMarket matrix array integer symmetric\n2 2\n1\n2\n3\n");
        assert_eq!(load(&cfg(&arrs), 0).unwrap().data, vec![1.0, 2.0, 2.0, 3.0]);
        assert_eq!(shape(&cfg(&coord)).unwrap(), Shape { samples: 2, features: 3 });
        // pattern: each listed entry is 1 (SuiteSparse's graphs); skew-symmetric: A(j, i) = −A(i, j)
        let pat = write("layout-p", "%%MatrixMarket matrix coordinate pattern general\n2 3 2\n1 2\n2 3\n");
        assert_eq!(load(&cfg(&pat), 0).unwrap().data, vec![0.0, 1.0, 0.0, 0.0, 0.0, 1.0]);
        let psym = write("layout-ps", "%%MatrixMarket matrix coordinate pattern symmetric\n2 2 2\n2 1\n1 1\n");
        assert_eq!(load(&cfg(&psym), 0).unwrap().data, vec![1.0, 1.0, 1.0, 0.0]);
        let skew = write("layout-k", "%%MatrixMarket matrix coordinate real skew-symmetric\n3 3 2\n2 1 5\n3 2 -1\n");
        assert_eq!(load(&cfg(&skew), 0).unwrap().data, vec![0.0, -5.0, 0.0, 5.0, 0.0, 1.0, 0.0, -1.0, 0.0]);
        let askew = write("layout-ak", "%%MatrixMarket matrix array real skew-symmetric\n3 3\n1\n2\n3\n");
        assert_eq!(load(&cfg(&askew), 0).unwrap().data, vec![0.0, -1.0, -2.0, 1.0, 0.0, -3.0, 2.0, 3.0, 0.0]);
        for p in [coord, sym, arr, arrs, pat, psym, skew, askew] {
            std::fs::remove_file(p).unwrap();
        }
    }

    /// x as a Matrix Market file of one column or one row (a collection's right-hand side),
    /// dense or coordinate; one of another shape is refused naming both.
    #[test]
    fn a_vector_reads_from_a_matrix_market_file() {
        let vc = |p: &str| VectorConfig { path: Some(p.into()) };
        let col = write("vec-col", "%%MatrixMarket matrix array real general\n% b\n3 1\n1\n-2\n3.5\n");
        assert_eq!(vector(&vc(&col), 0, 3).unwrap(), [1.0, -2.0, 3.5]);
        let row = write("vec-row", "%%MatrixMarket matrix coordinate real general\n1 3 1\n1 2 4\n");
        assert_eq!(vector(&vc(&row), 0, 3).unwrap(), [0.0, 4.0, 0.0]);
        let e = vector(&vc(&col), 0, 4).unwrap_err().to_string();
        assert!(e.contains("a 3 × 1 matrix; x is a vector of the matrix's 4 columns (4 × 1 or 1 × 4)"), "{e}");
        for p in [col, row] {
            std::fs::remove_file(p).unwrap();
        }
    }

    #[test]
    fn malformed_files_name_the_line() {
        let cases = [
            ("h", "%%MatrixMarket matrix coordinate complex general\n1 1 1\n1 1 1\n", ":1: field `complex`"),
            ("r", "%%MatrixMarket matrix coordinate real general\n2 2 1\n3 1 1\n", ":3: row index `3` is not in 1..=2"),
            (
                "n",
                "%%MatrixMarket matrix coordinate real general\n2 2 2\n1 1 1\n2 2 nan\n",
                ":4: `nan` is not a finite number",
            ),
            ("f", "%%MatrixMarket matrix coordinate real general\n2 2 3\n1 1 1\n", ":3: only 1 of the 3 entries"),
            (
                "u",
                "%%MatrixMarket matrix coordinate real symmetric\n2 2 1\n1 2 1\n",
                ":3: entry (1, 2) is above the diagonal",
            ),
            ("s", "%%MatrixMarket matrix coordinate real general\n2 x 1\n", ":2: expected the size line"),
            ("p", "%%MatrixMarket matrix coordinate pattern general\n2 2 1\n1 1 1\n", ":3: expected `row col`, found"),
            (
                "pa",
                "%%MatrixMarket matrix array pattern general\n2 2\n",
                ":1: field `pattern` goes with the coordinate",
            ),
            (
                "k",
                "%%MatrixMarket matrix coordinate real skew-symmetric\n2 2 1\n2 2 1\n",
                ":3: entry (2, 2) is on the diagonal",
            ),
            (
                "ks",
                "%%MatrixMarket matrix coordinate real skew-symmetric\n2 3 1\n",
                ":2: a skew-symmetric matrix must be square",
            ),
        ];
        for (name, text, want) in cases {
            let p = write(&format!("bad-{name}"), text);
            let e = load(&cfg(&p), 0).unwrap_err().to_string();
            assert!(e.contains(want), "{name}: {e}");
            std::fs::remove_file(p).unwrap();
        }
        let v = write("bad-v", "1\n# c\n2\nx\n");
        let e = vector(&VectorConfig { path: Some(v.clone()) }, 0, 3).unwrap_err().to_string();
        assert!(e.contains(":4: `x` is not a finite number"), "{e}");
        let e = vector(&VectorConfig { path: Some(v.clone()) }, 0, 1).unwrap_err().to_string();
        assert!(e.contains(":3: more than the 1 values"), "{e}");
        std::fs::remove_file(v).unwrap();
    }

    #[test]
    fn generated_entries_are_pure_and_symmetric_when_asked() {
        let mut m =
            MatrixConfig { rows: Some(4), cols: Some(4), path: None, symmetric: true, dist: MatrixDist::Normal };
        let a = load(&m, 3).unwrap();
        for i in 0..4 {
            for j in 0..4 {
                assert_eq!(a.data[i * 4 + j], a.data[j * 4 + i]);
                assert_eq!(a.data[i * 4 + j], entry(&m, 3, i, j));
            }
        }
        m.symmetric = false;
        m.dist = MatrixDist::Uniform;
        let b = load(&m, 3).unwrap();
        assert!(b.data.iter().all(|v| (0.0..1.0).contains(v)));
        assert_ne!(b.data[1], b.data[4]);
    }
}
