//! The CBLAS calls of the system OpenBLAS (linked through ndarray-linalg's `openblas-src`),
//! behind safe functions that check every dimension against its buffer.

#[allow(non_camel_case_types)]
type blasint = std::os::raw::c_int;

extern "C" {
    fn cblas_dgemv(
        layout: blasint,
        trans: blasint,
        m: blasint,
        n: blasint,
        alpha: f64,
        a: *const f64,
        lda: blasint,
        x: *const f64,
        incx: blasint,
        beta: f64,
        y: *mut f64,
        incy: blasint,
    );
    fn cblas_dgemm(
        layout: blasint,
        transa: blasint,
        transb: blasint,
        m: blasint,
        n: blasint,
        k: blasint,
        alpha: f64,
        a: *const f64,
        lda: blasint,
        b: *const f64,
        ldb: blasint,
        beta: f64,
        c: *mut f64,
        ldc: blasint,
    );
}

const ROW_MAJOR: blasint = 101;
const NO_TRANS: blasint = 111;
const TRANS: blasint = 112;

/// A row-major matrix operand: its values, rows and columns as stored, and whether it is used
/// transposed.
#[derive(Clone, Copy)]
pub(crate) struct Op<'a> {
    /// The values, `rows × cols`, row-major.
    pub(crate) v: &'a [f64],
    /// Rows as stored.
    pub(crate) rows: usize,
    /// Columns as stored.
    pub(crate) cols: usize,
    /// Used transposed.
    pub(crate) t: bool,
}

impl<'a> Op<'a> {
    /// `v` as a `rows × cols` matrix.
    pub(crate) fn n(v: &'a [f64], rows: usize, cols: usize) -> Self {
        Op { v, rows, cols, t: false }
    }

    /// `v` (stored `rows × cols`) transposed.
    pub(crate) fn t(v: &'a [f64], rows: usize, cols: usize) -> Self {
        Op { v, rows, cols, t: true }
    }

    /// Rows and columns of the operand as used.
    fn shape(&self) -> (usize, usize) {
        if self.t {
            (self.cols, self.rows)
        } else {
            (self.rows, self.cols)
        }
    }
}

fn int(n: usize) -> blasint {
    blasint::try_from(n).expect("a matrix side fits BLAS's int")
}

/// `C ← alpha·A·B + beta·C` (`dgemm`), C `m × n` row-major, one thread.
pub(crate) fn gemm(alpha: f64, a: Op<'_>, b: Op<'_>, beta: f64, c: &mut [f64]) {
    let ((m, k), (kb, n)) = (a.shape(), b.shape());
    assert_eq!(k, kb, "inner dimensions");
    assert_eq!(a.v.len(), a.rows * a.cols);
    assert_eq!(b.v.len(), b.rows * b.cols);
    assert_eq!(c.len(), m * n);
    if m == 0 || n == 0 {
        return;
    }
    if k == 0 {
        c.iter_mut().for_each(|x| *x *= beta);
        return;
    }
    outrun_codes::single_threaded_blas();
    let tr = |t: bool| if t { TRANS } else { NO_TRANS };
    // SAFETY: every buffer holds the matrix its dimensions describe (checked above); the leading
    // dimensions are the stored column counts of row-major matrices (at least 1: no side is 0).
    unsafe {
        cblas_dgemm(
            ROW_MAJOR,
            tr(a.t),
            tr(b.t),
            int(m),
            int(n),
            int(k),
            alpha,
            a.v.as_ptr(),
            int(a.cols),
            b.v.as_ptr(),
            int(b.cols),
            beta,
            c.as_mut_ptr(),
            int(n),
        )
    }
}

/// `y ← A·x` (`dgemv`; `A` used as [`Op`] says), one thread.
pub(crate) fn gemv(a: Op<'_>, x: &[f64], y: &mut [f64]) {
    let (m, n) = a.shape();
    assert_eq!(a.v.len(), a.rows * a.cols);
    assert_eq!((x.len(), y.len()), (n, m), "x and y match A");
    if a.rows == 0 || a.cols == 0 {
        y.iter_mut().for_each(|v| *v = 0.0);
        return;
    }
    outrun_codes::single_threaded_blas();
    let trans = if a.t { TRANS } else { NO_TRANS };
    // SAFETY: A holds rows × cols values (checked), x and y the lengths its use needs (checked).
    unsafe {
        cblas_dgemv(
            ROW_MAJOR,
            trans,
            int(a.rows),
            int(a.cols),
            1.0,
            a.v.as_ptr(),
            int(a.cols),
            x.as_ptr(),
            1,
            0.0,
            y.as_mut_ptr(),
            1,
        )
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn naive(a: &[f64], b: &[f64], m: usize, k: usize, n: usize) -> Vec<f64> {
        let mut c = vec![0.0; m * n];
        for i in 0..m {
            for j in 0..n {
                c[i * n + j] = (0..k).map(|l| a[i * k + l] * b[l * n + j]).sum();
            }
        }
        c
    }

    fn transpose(a: &[f64], rows: usize, cols: usize) -> Vec<f64> {
        (0..cols).flat_map(|j| (0..rows).map(move |i| a[i * cols + j])).collect()
    }

    #[test]
    fn gemm_agrees_with_a_naive_product_in_every_transposition() {
        let (m, k, n) = (5, 7, 3);
        let a: Vec<f64> = (0..m * k).map(|i| (i as f64 * 0.37).sin()).collect();
        let b: Vec<f64> = (0..k * n).map(|i| (i as f64 * 0.11).cos()).collect();
        let want = naive(&a, &b, m, k, n);
        let (at, bt) = (transpose(&a, m, k), transpose(&b, k, n));
        for (oa, ob) in [
            (Op::n(&a, m, k), Op::n(&b, k, n)),
            (Op::t(&at, k, m), Op::n(&b, k, n)),
            (Op::n(&a, m, k), Op::t(&bt, n, k)),
            (Op::t(&at, k, m), Op::t(&bt, n, k)),
        ] {
            let mut c = vec![1.0; m * n];
            gemm(2.0, oa, ob, 0.5, &mut c);
            for (x, w) in c.iter().zip(&want) {
                assert!((x - (2.0 * w + 0.5)).abs() < 1e-12);
            }
        }
    }

    #[test]
    fn gemv_agrees_with_a_naive_product_both_ways() {
        let (m, n) = (4, 3);
        let a: Vec<f64> = (0..m * n).map(|i| (i as f64 * 0.3).cos()).collect();
        let x: Vec<f64> = (0..n).map(|i| i as f64 - 1.0).collect();
        let mut y = vec![9.0; m];
        gemv(Op::n(&a, m, n), &x, &mut y);
        let want = naive(&a, &x, m, n, 1);
        assert!(y.iter().zip(&want).all(|(p, q)| (p - q).abs() < 1e-12));
        let z: Vec<f64> = (0..m).map(|i| 0.5 * i as f64).collect();
        let mut w = vec![9.0; n];
        gemv(Op::t(&a, m, n), &z, &mut w);
        let want: Vec<f64> = (0..n).map(|j| (0..m).map(|i| a[i * n + j] * z[i]).sum()).collect();
        assert!(w.iter().zip(&want).all(|(p, q)| (p - q).abs() < 1e-12));
    }
}
