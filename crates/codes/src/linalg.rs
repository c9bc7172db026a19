//! Dense linear algebra over `ndarray`, with LAPACK (through `ndarray-linalg` and the system
//! OpenBLAS) for the factorizations.
//!
//! Decoding a gradient code means solving `a·B_F = 1` for the rows `F` of the survivors. With
//! exactly `n − s` survivors of a cyclic code the system has a unique solution; with more
//! survivors, or with a fractional-repetition code, `B_F` is rank-deficient and any exact
//! solution will do. [`lstsq`] uses the singular value decomposition (LAPACK `gesdd`) with an
//! explicit relative threshold, so it reports the numerical rank and returns the minimum-norm
//! solution on the well-conditioned part.

use ndarray::{Array1, Array2, ArrayView1, ArrayView2, Axis};
use ndarray_linalg::{JobSvd, SVDDC};

extern "C" {
    fn openblas_set_num_threads(n: std::os::raw::c_int);
}

/// One OpenBLAS thread per process, set once before the first LAPACK call. The systems solved
/// here are small (decoding, code construction), and with its default thread count Debian's
/// OpenBLAS 0.3.21 crashed (SIGSEGV) in `dgetrf` on this project's AGC decoding systems, while one
/// thread was also faster on them (docs/performance.md §17). The MPI engine runs many ranks per
/// host anyway, one thread each.
pub fn single_threaded_blas() {
    static ONCE: std::sync::Once = std::sync::Once::new();
    // SAFETY: a plain setter of OpenBLAS's thread count.
    ONCE.call_once(|| unsafe { openblas_set_num_threads(1) });
}

/// Keep freed memory for reuse: buffers of up to 32 MB (messages, models, a layer's
/// activations) come back from the heap instead of fresh `mmap`s, whose pages the kernel faults
/// in and zeroes on every use. glibc raises its threshold only past a freed block, so
/// same-sized blocks freed and allocated again every iteration stay `mmap`ed. Called by the MPI
/// engine and the simulator before they start (docs/performance.md §17); a no-op elsewhere.
pub fn keep_freed_memory() {
    #[cfg(all(target_os = "linux", target_env = "gnu"))]
    {
        static ONCE: std::sync::Once = std::sync::Once::new();
        // SAFETY: mallopt only sets allocator parameters.
        ONCE.call_once(|| unsafe {
            libc::mallopt(libc::M_MMAP_THRESHOLD, 32 << 20);
            libc::mallopt(libc::M_TRIM_THRESHOLD, 1 << 30);
        });
    }
}

/// A dense `f64` matrix (row-major, standard layout).
pub type Matrix = Array2<f64>;

/// Singular values below this fraction of the largest are treated as zero.
pub const RANK_TOL: f64 = 1e-10;

/// A least-squares solution.
#[derive(Clone, Debug)]
pub struct LeastSquares {
    /// Minimum-norm solution on the numerical range.
    pub x: Array1<f64>,
    /// Numerical rank.
    pub rank: usize,
    /// Smallest kept singular value over the largest (1 for an empty system).
    pub rcond: f64,
}

/// A thin SVD `a = U Σ Vᵀ` with the numerical rank at [`RANK_TOL`] (the kept singular values are
/// `s[..rank]`, largest first).
struct Svd {
    u: Matrix,
    s: Array1<f64>,
    vt: Matrix,
    rank: usize,
}

/// The thin SVD of a non-empty `a` (LAPACK `gesdd`, one BLAS thread); None for a zero or
/// non-finite matrix.
fn svd(a: ArrayView2<f64>) -> Option<Svd> {
    single_threaded_blas();
    let owned = a.as_standard_layout().into_owned();
    let (u, s, vt) = owned.svddc(JobSvd::Some).expect("LAPACK gesdd failed (non-finite input?)");
    let smax = s.first().copied().unwrap_or(0.0);
    if smax == 0.0 || !smax.is_finite() {
        return None;
    }
    let rank = s.iter().take_while(|&&v| v > RANK_TOL * smax).count();
    Some(Svd { u: u.expect("U requested"), s, vt: vt.expect("Vᵀ requested"), rank })
}

/// Least-squares solution of `a·x ≈ b` (`a` is m × n, any shape, any rank).
pub fn lstsq(a: ArrayView2<f64>, b: ArrayView1<f64>) -> LeastSquares {
    let (m, n) = a.dim();
    assert_eq!(b.len(), m, "lstsq: right-hand side length");
    if m == 0 || n == 0 {
        return LeastSquares { x: Array1::zeros(n), rank: 0, rcond: 1.0 };
    }
    let Some(Svd { u, s, vt, rank }) = svd(a) else {
        return LeastSquares { x: Array1::zeros(n), rank: 0, rcond: 0.0 };
    };
    let smax = s[0];
    // x = V_k Σ_k⁻¹ U_kᵀ b
    let mut x = Array1::zeros(n);
    for k in 0..rank {
        let coef = u.column(k).dot(&b) / s[k];
        x.scaled_add(coef, &vt.row(k));
    }
    LeastSquares { x, rank, rcond: s[rank - 1] / smax }
}

/// The Moore–Penrose pseudo-inverse of `a` (m × n) from one SVD: `(a⁺ (n × m), rank, cond)`,
/// with the numerical rank at [`RANK_TOL`] and cond = σ_max/σ_min of the kept spectrum
/// (infinite for a zero matrix).
pub fn pinv(a: ArrayView2<f64>) -> (Matrix, usize, f64) {
    let (m, n) = a.dim();
    if m == 0 || n == 0 {
        return (Matrix::zeros((n, m)), 0, 1.0);
    }
    let Some(Svd { u, s, vt, rank }) = svd(a) else {
        return (Matrix::zeros((n, m)), 0, f64::INFINITY);
    };
    let smax = s[0];
    // a⁺ = V_k Σ_k⁻¹ U_kᵀ
    let mut out = Matrix::zeros((n, m));
    for k in 0..rank {
        let scaled = vt.row(k).mapv(|v| v / s[k]);
        for (i, &vi) in scaled.iter().enumerate() {
            out.row_mut(i).scaled_add(vi, &u.column(k));
        }
    }
    (out, rank, smax / s[rank - 1])
}

/// Euclidean norm.
pub fn norm2(v: ArrayView1<f64>) -> f64 {
    v.dot(&v).sqrt()
}

/// Σ (aᵢ − bᵢ)² over the common length, in eight interleaved partial sums: one running sum is a
/// chain of dependent additions (one per four cycles or so), eight let the compiler keep them in
/// vector registers. The run log takes two of these per iteration over the whole model.
///
/// ```
/// use outrun_codes::sum_sq_diff;
/// let a: Vec<f64> = (0..19).map(|i| i as f64).collect();
/// let b = vec![1.0; 19];
/// // Σ (i − 1)² for i = 0..18 = 1 + Σ k² for k = 1..17
/// assert_eq!(sum_sq_diff(&a, &b), 1.0 + 17.0 * 18.0 * 35.0 / 6.0);
/// assert_eq!(sum_sq_diff(&a, &[0.0; 0]), 0.0);
/// ```
pub fn sum_sq_diff(a: &[f64], b: &[f64]) -> f64 {
    const LANES: usize = 8;
    let n = a.len().min(b.len());
    let (a, b) = (&a[..n], &b[..n]);
    let mut acc = [0.0; LANES];
    let (ca, cb) = (a.chunks_exact(LANES), b.chunks_exact(LANES));
    let tail: f64 = ca.remainder().iter().zip(cb.remainder()).map(|(x, y)| (x - y) * (x - y)).sum();
    for (x, y) in ca.zip(cb) {
        for k in 0..LANES {
            let d = x[k] - y[k];
            acc[k] += d * d;
        }
    }
    acc.iter().sum::<f64>() + tail
}

/// Σ aᵢ², as [`sum_sq_diff`] sums.
///
/// ```
/// assert_eq!(outrun_codes::sum_sq(&[3.0, 4.0]), 25.0);
/// ```
pub fn sum_sq(a: &[f64]) -> f64 {
    const LANES: usize = 8;
    let mut acc = [0.0; LANES];
    let c = a.chunks_exact(LANES);
    let tail: f64 = c.remainder().iter().map(|x| x * x).sum();
    for x in c {
        for k in 0..LANES {
            acc[k] += x[k] * x[k];
        }
    }
    acc.iter().sum::<f64>() + tail
}

/// Number of non-zero entries of row `i`.
pub fn row_nnz(m: &Matrix, i: usize) -> usize {
    m.row(i).iter().filter(|v| **v != 0.0).count()
}

/// Number of non-zero entries of column `j`.
pub fn col_nnz(m: &Matrix, j: usize) -> usize {
    m.column(j).iter().filter(|v| **v != 0.0).count()
}

/// The rows of `m` listed in `rows`, in that order, transposed: a `cols × rows.len()` matrix.
pub fn rows_transposed(m: &Matrix, rows: &[usize]) -> Matrix {
    m.select(Axis(0), rows).reversed_axes().as_standard_layout().into_owned()
}

#[cfg(test)]
mod tests {
    use super::*;
    use ndarray::array;

    /// The pseudo-inverse satisfies the Penrose conditions A·A⁺·A = A and A⁺·A·A⁺ = A⁺, for a
    /// wide full-rank matrix (a decoding system G_T) and a rank-deficient one.
    #[test]
    fn pseudo_inverse_penrose_conditions() {
        let wide = array![[1.0, 0.0, 2.0, -1.0], [0.5, 3.0, 1.0, 1.0]];
        let defic = array![[1.0, 2.0, 3.0], [2.0, 4.0, 6.0], [0.0, 1.0, 1.0]];
        for (a, want_rank) in [(wide, 2), (defic, 2)] {
            let (p, rank, cond) = pinv(a.view());
            assert_eq!(rank, want_rank);
            assert!(cond.is_finite() && cond >= 1.0);
            let apa = a.dot(&p).dot(&a);
            let pap = p.dot(&a).dot(&p);
            assert!((&apa - &a).iter().all(|v| v.abs() < 1e-12), "{apa}");
            assert!((&pap - &p).iter().all(|v| v.abs() < 1e-12), "{pap}");
        }
        let (_, rank, cond) = pinv(Matrix::zeros((2, 3)).view());
        assert_eq!((rank, cond), (0, f64::INFINITY));
    }

    #[test]
    fn full_rank_overdetermined_and_square() {
        let a = array![[3.0, 1.0], [1.0, 2.0], [0.0, 1.0]];
        let b = array![9.0, 8.0, 1.0];
        let ls = lstsq(a.view(), b.view());
        assert_eq!(ls.rank, 2);
        // normal equations: AᵀA x = Aᵀb
        let lhs = a.t().dot(&a).dot(&ls.x);
        let rhs = a.t().dot(&b);
        assert!((&lhs - &rhs).iter().all(|v| v.abs() < 1e-12), "{lhs} vs {rhs}");
        let sq = array![[2.0, 0.0], [0.0, 4.0]];
        let ls = lstsq(sq.view(), array![1.0, 1.0].view());
        assert!((ls.x[0] - 0.5).abs() < 1e-15 && (ls.x[1] - 0.25).abs() < 1e-15);
        assert!((ls.rcond - 0.5).abs() < 1e-12);
    }

    #[test]
    fn rank_deficient_gives_the_minimum_norm_exact_solution() {
        // two identical columns: x0 + x1 = 2 has the minimum-norm solution (1, 1)
        let a = array![[1.0, 1.0], [1.0, 1.0]];
        let ls = lstsq(a.view(), array![2.0, 2.0].view());
        assert_eq!(ls.rank, 1);
        assert!((ls.x[0] - 1.0).abs() < 1e-12 && (ls.x[1] - 1.0).abs() < 1e-12, "{}", ls.x);
        let z = Matrix::zeros((3, 2));
        assert_eq!(lstsq(z.view(), array![1.0, 1.0, 1.0].view()).rank, 0);
        assert_eq!(lstsq(Matrix::zeros((0, 0)).view(), Array1::zeros(0).view()).rank, 0);
    }

    #[test]
    fn helpers() {
        let m = array![[1.0, 0.0, 2.0], [0.0, 0.0, 3.0]];
        assert_eq!(row_nnz(&m, 0), 2);
        assert_eq!(col_nnz(&m, 2), 2);
        assert_eq!(rows_transposed(&m, &[1, 0]), array![[0.0, 1.0], [0.0, 0.0], [3.0, 2.0]]);
        assert_eq!(norm2(array![3.0, 4.0].view()), 5.0);
    }
}
