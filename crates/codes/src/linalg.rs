//! A small dense row-major matrix and a rank-revealing least-squares solver.
//!
//! Decoding a gradient code means solving `a·B_F = 1` for the rows `F` of the survivors. With
//! exactly `n − s` survivors of a cyclic code the system has a unique solution; with more
//! survivors, or with a fractional-repetition code, `B_F` is rank-deficient and any exact
//! solution will do. Householder QR with column pivoting handles both: it finds the numerical
//! rank `k`, and the *basic* solution uses `k` well-conditioned columns (survivors) and gives the
//! others coefficient zero.

use serde::{Deserialize, Serialize};

/// Row-major dense matrix of `f64`.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct Matrix {
    rows: usize,
    cols: usize,
    data: Vec<f64>,
}

impl Matrix {
    /// All-zero `rows × cols` matrix.
    pub fn zeros(rows: usize, cols: usize) -> Self {
        Matrix { rows, cols, data: vec![0.0; rows * cols] }
    }

    /// Identity of size `n`.
    pub fn identity(n: usize) -> Self {
        let mut m = Self::zeros(n, n);
        for i in 0..n {
            m[(i, i)] = 1.0;
        }
        m
    }

    /// From nested rows; all rows must have the same length.
    pub fn from_rows(rows: &[Vec<f64>]) -> Self {
        let r = rows.len();
        let c = rows.first().map_or(0, |x| x.len());
        assert!(rows.iter().all(|x| x.len() == c), "ragged rows");
        Matrix { rows: r, cols: c, data: rows.iter().flatten().copied().collect() }
    }

    pub fn rows(&self) -> usize {
        self.rows
    }

    pub fn cols(&self) -> usize {
        self.cols
    }

    /// Row `i` as a slice.
    pub fn row(&self, i: usize) -> &[f64] {
        &self.data[i * self.cols..(i + 1) * self.cols]
    }

    /// The transpose of the sub-matrix made of the rows in `rows` (in that order):
    /// a `cols × rows.len()` matrix.
    pub fn rows_transposed(&self, rows: &[usize]) -> Matrix {
        let mut t = Matrix::zeros(self.cols, rows.len());
        for (j, &r) in rows.iter().enumerate() {
            for (i, &v) in self.row(r).iter().enumerate() {
                t[(i, j)] = v;
            }
        }
        t
    }

    /// `x·M` for a row vector `x` of length `rows`.
    pub fn left_mul(&self, x: &[f64]) -> Vec<f64> {
        assert_eq!(x.len(), self.rows);
        let mut out = vec![0.0; self.cols];
        for (i, &xi) in x.iter().enumerate() {
            if xi != 0.0 {
                for (o, &v) in out.iter_mut().zip(self.row(i)) {
                    *o += xi * v;
                }
            }
        }
        out
    }

    /// `M·x` for a column vector `x` of length `cols`.
    pub fn mul_vec(&self, x: &[f64]) -> Vec<f64> {
        assert_eq!(x.len(), self.cols);
        (0..self.rows).map(|i| self.row(i).iter().zip(x).map(|(a, b)| a * b).sum()).collect()
    }

    /// Number of non-zero entries in row `i`.
    pub fn row_nnz(&self, i: usize) -> usize {
        self.row(i).iter().filter(|v| **v != 0.0).count()
    }

    /// Number of non-zero entries in column `j`.
    pub fn col_nnz(&self, j: usize) -> usize {
        (0..self.rows).filter(|&i| self[(i, j)] != 0.0).count()
    }
}

impl std::ops::Index<(usize, usize)> for Matrix {
    type Output = f64;
    fn index(&self, (i, j): (usize, usize)) -> &f64 {
        debug_assert!(i < self.rows && j < self.cols);
        &self.data[i * self.cols + j]
    }
}

impl std::ops::IndexMut<(usize, usize)> for Matrix {
    fn index_mut(&mut self, (i, j): (usize, usize)) -> &mut f64 {
        debug_assert!(i < self.rows && j < self.cols);
        &mut self.data[i * self.cols + j]
    }
}

/// Result of [`lstsq`].
#[derive(Clone, Debug)]
pub struct LeastSquares {
    /// The basic solution: zero outside the `rank` pivot columns.
    pub x: Vec<f64>,
    /// Numerical rank found by the pivoted QR.
    pub rank: usize,
    /// `|R[rank−1, rank−1]| / |R[0, 0]|`: a cheap reciprocal condition estimate of the columns
    /// used (1 is perfect, tiny is ill-conditioned).
    pub rcond: f64,
}

/// Relative threshold on the diagonal of R below which a column is treated as dependent.
pub const RANK_RTOL: f64 = 1e-10;

/// Least squares `min ‖A·x − b‖₂` by Householder QR with column pivoting; returns the basic
/// solution (see the module docs). Works for any shape of `A`.
pub fn lstsq(a: &Matrix, b: &[f64]) -> LeastSquares {
    let (m, n) = (a.rows, a.cols);
    assert_eq!(b.len(), m, "lstsq: b has the wrong length");
    let mut r = a.clone();
    let mut qtb = b.to_vec();
    let mut perm: Vec<usize> = (0..n).collect();
    let kmax = m.min(n);
    let mut rank = 0;
    let mut r00 = 0.0f64;
    for k in 0..kmax {
        // Pivot: the remaining column with the largest norm below row k.
        let col_norm2 = |r: &Matrix, j: usize| (k..m).map(|i| r[(i, j)] * r[(i, j)]).sum::<f64>();
        let (p, best) = (k..n)
            .map(|j| (j, col_norm2(&r, j)))
            .fold((k, -1.0), |acc, (j, v)| if v > acc.1 { (j, v) } else { acc });
        let norm = best.max(0.0).sqrt();
        if k == 0 {
            r00 = norm;
        }
        if norm == 0.0 || norm <= RANK_RTOL * r00 {
            break;
        }
        if p != k {
            for i in 0..m {
                let (x, y) = (r[(i, k)], r[(i, p)]);
                r[(i, k)] = y;
                r[(i, p)] = x;
            }
            perm.swap(k, p);
        }
        // Householder vector v for column k, rows k..m: H = I − 2vvᵀ/(vᵀv), H·x = alpha·e₁.
        let x0 = r[(k, k)];
        let alpha = if x0 >= 0.0 { -norm } else { norm };
        let mut v: Vec<f64> = (k..m).map(|i| r[(i, k)]).collect();
        v[0] -= alpha;
        let vtv: f64 = v.iter().map(|t| t * t).sum();
        if vtv > 0.0 {
            for j in k..n {
                let dot: f64 = (k..m).map(|i| v[i - k] * r[(i, j)]).sum();
                let f = 2.0 * dot / vtv;
                for i in k..m {
                    r[(i, j)] -= f * v[i - k];
                }
            }
            let dot: f64 = (k..m).map(|i| v[i - k] * qtb[i]).sum();
            let f = 2.0 * dot / vtv;
            for i in k..m {
                qtb[i] -= f * v[i - k];
            }
        }
        r[(k, k)] = alpha;
        for i in (k + 1)..m {
            r[(i, k)] = 0.0;
        }
        rank = k + 1;
    }
    // Back substitution on the leading rank × rank block.
    let mut y = vec![0.0; rank];
    for i in (0..rank).rev() {
        let mut acc = qtb[i];
        for j in (i + 1)..rank {
            acc -= r[(i, j)] * y[j];
        }
        y[i] = acc / r[(i, i)];
    }
    let mut x = vec![0.0; n];
    for i in 0..rank {
        x[perm[i]] = y[i];
    }
    let rcond = if rank == 0 { 0.0 } else { r[(rank - 1, rank - 1)].abs() / r00 };
    LeastSquares { x, rank, rcond }
}

/// Euclidean norm.
pub fn norm2(v: &[f64]) -> f64 {
    v.iter().map(|x| x * x).sum::<f64>().sqrt()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn solves_square_full_rank_system() {
        let a = Matrix::from_rows(&[vec![2.0, 1.0, 0.0], vec![1.0, 3.0, 1.0], vec![0.0, 1.0, 4.0]]);
        let x_true = [1.0, -2.0, 0.5];
        let b = a.mul_vec(&x_true);
        let ls = lstsq(&a, &b);
        assert_eq!(ls.rank, 3);
        for (x, t) in ls.x.iter().zip(x_true) {
            assert!((x - t).abs() < 1e-12);
        }
    }

    #[test]
    fn overdetermined_least_squares_matches_normal_equations() {
        // fit y = c0 + c1 t to four points
        let ts = [0.0, 1.0, 2.0, 3.0];
        let ys = [1.0, 2.9, 5.2, 7.1];
        let a = Matrix::from_rows(&ts.iter().map(|&t| vec![1.0, t]).collect::<Vec<_>>());
        let ls = lstsq(&a, &ys);
        // closed form
        let n = 4.0;
        let st: f64 = ts.iter().sum();
        let stt: f64 = ts.iter().map(|t| t * t).sum();
        let sy: f64 = ys.iter().sum();
        let sty: f64 = ts.iter().zip(&ys).map(|(t, y)| t * y).sum();
        let c1 = (n * sty - st * sy) / (n * stt - st * st);
        let c0 = (sy - c1 * st) / n;
        assert!((ls.x[0] - c0).abs() < 1e-12 && (ls.x[1] - c1).abs() < 1e-12);
    }

    #[test]
    fn rank_deficient_consistent_system_gets_exact_basic_solution() {
        // Columns 0 and 2 are equal: rank 2.
        let a = Matrix::from_rows(&[vec![1.0, 0.0, 1.0], vec![1.0, 1.0, 1.0], vec![0.0, 1.0, 0.0]]);
        let b = [2.0, 3.0, 1.0];
        let ls = lstsq(&a, &b);
        assert_eq!(ls.rank, 2);
        let r = a.mul_vec(&ls.x);
        for (ri, bi) in r.iter().zip(b) {
            assert!((ri - bi).abs() < 1e-12);
        }
        assert_eq!(ls.x.iter().filter(|v| **v == 0.0).count(), 1);
    }

    #[test]
    fn transpose_of_selected_rows() {
        let m = Matrix::from_rows(&[vec![1.0, 2.0], vec![3.0, 4.0], vec![5.0, 6.0]]);
        let t = m.rows_transposed(&[2, 0]);
        assert_eq!(t, Matrix::from_rows(&[vec![5.0, 1.0], vec![6.0, 2.0]]));
        assert_eq!(m.left_mul(&[1.0, 0.0, 1.0]), vec![6.0, 8.0]);
    }
}
