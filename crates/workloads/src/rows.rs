//! Rows of a data set, and what goes wrong reading them.

use ndarray::{Array1, Array2};

pub use outrun_plan::Shape;

/// Rows of a data set: row-major features and a label per row.
#[derive(Clone, Debug, PartialEq)]
pub struct Rows {
    /// `len × p` features.
    pub x: Array2<f64>,
    /// Labels.
    pub y: Array1<f64>,
    /// Real-valued targets, `len × C` row-major, that a model of C outputs fits in place of the
    /// one-hot labels: CodedFedL's parity rows, whose targets G·W·Y are no class labels.
    pub targets: Option<Vec<f64>>,
}

impl Rows {
    /// From row-major values (`y.len() × p`).
    pub fn from_vecs(p: usize, x: Vec<f64>, y: Vec<f64>) -> Self {
        let n = y.len();
        Rows {
            x: Array2::from_shape_vec((n, p), x).expect("x has len × p values"),
            y: Array1::from_vec(y),
            targets: None,
        }
    }

    /// Number of features p.
    pub fn p(&self) -> usize {
        self.x.ncols()
    }

    /// Number of rows.
    pub fn len(&self) -> usize {
        self.y.len()
    }

    /// Whether there is no row.
    pub fn is_empty(&self) -> bool {
        self.y.is_empty()
    }

    /// Row `i`'s features.
    pub fn row(&self, i: usize) -> &[f64] {
        let p = self.p();
        &self.features()[i * p..(i + 1) * p]
    }

    /// All features, row-major.
    pub fn features(&self) -> &[f64] {
        self.x.as_slice().expect("rows are in standard layout")
    }

    /// Labels as a slice.
    pub fn labels(&self) -> &[f64] {
        self.y.as_slice().expect("labels are contiguous")
    }

    /// The rows with the given indices, in that order.
    pub fn select(&self, idx: impl IntoIterator<Item = usize>) -> Rows {
        let p = self.p();
        let (mut x, mut y, mut t) = (vec![], vec![], vec![]);
        for i in idx {
            x.extend_from_slice(self.row(i));
            y.push(self.y[i]);
            if let Some(targets) = &self.targets {
                let c = targets.len() / self.len();
                t.extend_from_slice(&targets[i * c..(i + 1) * c]);
            }
        }
        Rows { targets: self.targets.as_ref().map(|_| t), ..Rows::from_vecs(p, x, y) }
    }
}

/// A data problem, naming the file line, the file or the field it concerns, in one line.
#[derive(Clone, Debug, PartialEq, thiserror::Error)]
pub enum DataError {
    /// A line of a file is wrong: `file:line: what`.
    #[error("{file}:{line}: {what}")]
    Line {
        /// The file.
        file: String,
        /// Its line, 1-based.
        line: usize,
        /// What is wrong with it.
        what: String,
    },
    /// A file the config names cannot be read: ``field: cannot read `path`: error``.
    #[error("{field}: cannot read `{path}`: {error}")]
    Read {
        /// The config field that names it (`data.path`).
        field: String,
        /// The path.
        path: String,
        /// The system's error.
        error: String,
    },
    /// A whole file is wrong (no data lines, fewer rows than asked for, another width):
    /// `file: what`.
    #[error("{file}: {what}")]
    File {
        /// The file.
        file: String,
        /// What is wrong with it.
        what: String,
    },
    /// A config field (or the plan) does not fit the data: `field: what`, or `field = value …` /
    /// `field is …` when `what` goes on from the field's name (it starts with `= ` or `is `).
    #[error("{}", if what.starts_with("= ") || what.starts_with("is ") { format!("{field} {what}") } else { format!("{field}: {what}") })]
    Field {
        /// The field (`model.batch`, `matrix`).
        field: String,
        /// What is wrong.
        what: String,
    },
    /// The user's model refused (a Python module): its one line, naming the module and the
    /// function.
    #[error("{0}")]
    Model(String),
}

impl DataError {
    /// `file:line: what`.
    pub fn line(file: impl Into<String>, line: usize, what: impl Into<String>) -> Self {
        DataError::Line { file: file.into(), line, what: what.into() }
    }

    /// `field: cannot read `path`: error`.
    pub fn read(field: impl Into<String>, path: impl std::fmt::Display, error: impl std::fmt::Display) -> Self {
        DataError::Read { field: field.into(), path: path.to_string(), error: error.to_string() }
    }

    /// `file: what`.
    pub fn file(file: impl std::fmt::Display, what: impl Into<String>) -> Self {
        DataError::File { file: file.to_string(), what: what.into() }
    }

    /// `field: what`.
    pub fn field(field: impl Into<String>, what: impl Into<String>) -> Self {
        DataError::Field { field: field.into(), what: what.into() }
    }
}
