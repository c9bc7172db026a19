//! The gradient kernel: `g = Σ_j c_j·∇ℓ(θ; x_j)` and `L = Σ_j c_j·ℓ(θ; x_j)` over a node's
//! weighted rows, in one pass over the data (each row is read from memory once: the dot product
//! brings it into L1, the update reuses it).
//!
//! The loss is carried beside the gradient so that decoding, which is linear, recovers the exact
//! full-data loss at the master for free.

use outrun_config::Loss;

use crate::data::Rows;

/// Dot product with eight independent accumulators (vectorises without `-ffast-math`).
#[inline(always)]
pub fn dot(a: &[f64], b: &[f64]) -> f64 {
    assert_eq!(a.len(), b.len());
    let mut acc = [0.0f64; 8];
    let ca = a.chunks_exact(8);
    let cb = b.chunks_exact(8);
    let (ra, rb) = (ca.remainder(), cb.remainder());
    for (x, y) in ca.zip(cb) {
        for l in 0..8 {
            acc[l] += x[l] * y[l];
        }
    }
    let mut tail = 0.0;
    for (x, y) in ra.iter().zip(rb) {
        tail += x * y;
    }
    ((acc[0] + acc[4]) + (acc[1] + acc[5])) + ((acc[2] + acc[6]) + (acc[3] + acc[7])) + tail
}

/// `y += alpha·x`.
#[inline(always)]
pub fn axpy(y: &mut [f64], alpha: f64, x: &[f64]) {
    assert_eq!(x.len(), y.len());
    for (yi, xi) in y.iter_mut().zip(x) {
        *yi += alpha * xi;
    }
}

/// `log(1 + e^z)` without overflow.
#[inline]
pub fn softplus(z: f64) -> f64 {
    if z > 0.0 {
        z + libm::log1p(libm::exp(-z))
    } else {
        libm::log1p(libm::exp(z))
    }
}

/// Loss and its derivative with respect to the margin z = xᵀθ.
#[inline]
pub fn loss_and_slope(loss: Loss, z: f64, y: f64) -> (f64, f64) {
    match loss {
        Loss::LeastSquares => {
            let r = z - y;
            (0.5 * r * r, r)
        }
        Loss::Logistic => {
            let sigma = if z >= 0.0 {
                1.0 / (1.0 + libm::exp(-z))
            } else {
                let e = libm::exp(z);
                e / (1.0 + e)
            };
            (softplus(z) - y * z, sigma - y)
        }
        Loss::Softmax => unreachable!("a softmax is a network (net::Net), not a linear model"),
    }
}

/// Rows handled together: one pass over θ computes their four margins, one pass over g applies
/// their four updates, so θ and g are streamed through the cache once per block instead of once
/// per row, while each row is still read from memory once.
const BLOCK: usize = 4;

/// Four dot products `x_j·θ` in one pass over θ.
#[inline(always)]
fn dot4(x: [&[f64]; BLOCK], theta: &[f64]) -> [f64; BLOCK] {
    let p = theta.len();
    let mut acc = [[0.0f64; 4]; BLOCK];
    let whole = p / 4 * 4;
    let mut k = 0;
    while k < whole {
        let t = &theta[k..k + 4];
        for j in 0..BLOCK {
            let xj = &x[j][k..k + 4];
            for l in 0..4 {
                acc[j][l] += xj[l] * t[l];
            }
        }
        k += 4;
    }
    finish4(acc, x, theta, whole)
}

/// Each row's four lane sums, in the order every build adds them, plus the row's tail past
/// `whole`.
#[inline(always)]
fn finish4(acc: [[f64; 4]; BLOCK], x: [&[f64]; BLOCK], theta: &[f64], whole: usize) -> [f64; BLOCK] {
    std::array::from_fn(|j| {
        let tail: f64 = (whole..theta.len()).map(|k| x[j][k] * theta[k]).sum();
        (acc[j][0] + acc[j][2]) + (acc[j][1] + acc[j][3]) + tail
    })
}

/// [`dot4`] with explicit AVX2 vectors, one per row, lane for lane the same arithmetic (a
/// multiply then an add, no FMA): left to itself the compiler interleaves the four rows into
/// 128-bit halves and shuffles, which ran the kernel at 60 % of the memory's read bandwidth.
#[cfg(target_arch = "x86_64")]
#[target_feature(enable = "avx2")]
unsafe fn dot4_avx2(x: [&[f64]; BLOCK], theta: &[f64]) -> [f64; BLOCK] {
    use std::arch::x86_64::{_mm256_add_pd, _mm256_loadu_pd, _mm256_mul_pd, _mm256_setzero_pd, _mm256_storeu_pd};
    let p = theta.len();
    for row in x {
        assert!(row.len() >= p);
    }
    let whole = p / 4 * 4;
    let mut acc = [_mm256_setzero_pd(); BLOCK];
    let mut k = 0;
    while k < whole {
        // SAFETY: k + 4 <= whole <= p <= every row's length (asserted above).
        let t = unsafe { _mm256_loadu_pd(theta.as_ptr().add(k)) };
        for j in 0..BLOCK {
            let xj = unsafe { _mm256_loadu_pd(x[j].as_ptr().add(k)) };
            acc[j] = _mm256_add_pd(acc[j], _mm256_mul_pd(xj, t));
        }
        k += 4;
    }
    let mut lanes = [[0.0f64; 4]; BLOCK];
    for j in 0..BLOCK {
        // SAFETY: lanes[j] holds four doubles.
        unsafe { _mm256_storeu_pd(lanes[j].as_mut_ptr(), acc[j]) };
    }
    finish4(lanes, x, theta, whole)
}

/// `g += Σ_j a_j·x_j` for four rows in one pass over g.
#[inline(always)]
fn axpy4(g: &mut [f64], a: [f64; BLOCK], x: [&[f64]; BLOCK]) {
    for (k, gk) in g.iter_mut().enumerate() {
        *gk += (a[0] * x[0][k] + a[1] * x[1][k]) + (a[2] * x[2][k] + a[3] * x[3][k]);
    }
}

/// Weighted gradient sum into `g` (overwritten) and the weighted loss sum (returned).
///
/// On x86-64 CPUs with AVX2 the same code runs compiled for AVX2 (chosen at run time, so one
/// binary serves every host). No FMA contraction is enabled, so each lane's arithmetic, and
/// hence the result, is the same either way.
pub fn gradient(rows: &Rows, coef: &[f64], theta: &[f64], loss: Loss, g: &mut [f64]) -> f64 {
    gradient_paced(rows, coef, theta, loss, g, usize::MAX, &mut || {})
}

/// [`gradient`], calling `pause` after every `every` rows (the arithmetic is the same). On a
/// host with more ranks than cores the engine yields the core there, so a rank woken by a
/// message gets the CPU within microseconds instead of after a peer's whole computation.
pub fn gradient_paced(
    rows: &Rows,
    coef: &[f64],
    theta: &[f64],
    loss: Loss,
    g: &mut [f64],
    every: usize,
    pause: &mut dyn FnMut(),
) -> f64 {
    #[cfg(target_arch = "x86_64")]
    {
        if std::is_x86_feature_detected!("avx2") {
            // SAFETY: the CPU supports AVX2 (checked above).
            return unsafe { gradient_avx2(rows, coef, theta, loss, g, every, pause) };
        }
    }
    gradient_generic(rows, coef, theta, loss, g, every, pause, dot4)
}

#[cfg(target_arch = "x86_64")]
#[target_feature(enable = "avx2")]
unsafe fn gradient_avx2(
    rows: &Rows,
    coef: &[f64],
    theta: &[f64],
    loss: Loss,
    g: &mut [f64],
    every: usize,
    pause: &mut dyn FnMut(),
) -> f64 {
    // SAFETY: this function runs only where AVX2 is available.
    let dot = |x: [&[f64]; BLOCK], t: &[f64]| unsafe { dot4_avx2(x, t) };
    gradient_generic(rows, coef, theta, loss, g, every, pause, dot)
}

// the public signature's seven plus the dot products this build computes with
#[allow(clippy::too_many_arguments)]
#[inline(always)]
fn gradient_generic(
    rows: &Rows,
    coef: &[f64],
    theta: &[f64],
    loss: Loss,
    g: &mut [f64],
    every: usize,
    pause: &mut dyn FnMut(),
    dot4: impl Fn([&[f64]; BLOCK], &[f64]) -> [f64; BLOCK],
) -> f64 {
    let p = rows.p();
    assert_eq!(coef.len(), rows.len());
    assert_eq!(theta.len(), p);
    assert_eq!(g.len(), p);
    g.iter_mut().for_each(|v| *v = 0.0);
    let mut total = 0.0;
    if p == 0 {
        return 0.0;
    }
    let n = rows.len();
    let (xs, ys) = (rows.features(), rows.labels());
    let blocks = n / BLOCK;
    let blocks_per_pause = (every / BLOCK).max(1);
    for b in 0..blocks {
        if b > 0 && b % blocks_per_pause == 0 && every != usize::MAX {
            pause();
        }
        let r0 = b * BLOCK;
        let x: [&[f64]; BLOCK] = std::array::from_fn(|j| &xs[(r0 + j) * p..(r0 + j + 1) * p]);
        let z = dot4(x, theta);
        let mut a = [0.0; BLOCK];
        for j in 0..BLOCK {
            let (l, slope) = loss_and_slope(loss, z[j], ys[r0 + j]);
            total += coef[r0 + j] * l;
            a[j] = coef[r0 + j] * slope;
        }
        axpy4(g, a, x);
    }
    for r in blocks * BLOCK..n {
        let x = &xs[r * p..(r + 1) * p];
        let (l, slope) = loss_and_slope(loss, dot(x, theta), ys[r]);
        total += coef[r] * l;
        axpy(g, coef[r] * slope, x);
    }
    total
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn dot_matches_naive_for_all_tail_lengths() {
        for n in 0..40 {
            let a: Vec<f64> = (0..n).map(|i| (i as f64 * 0.37).sin()).collect();
            let b: Vec<f64> = (0..n).map(|i| (i as f64 * 0.11).cos()).collect();
            let naive: f64 = a.iter().zip(&b).map(|(x, y)| x * y).sum();
            assert!((dot(&a, &b) - naive).abs() < 1e-12);
        }
    }

    #[test]
    fn gradient_matches_finite_differences() {
        let rows = Rows::from_vecs(3, vec![1.0, -2.0, 0.5, 0.3, 0.1, -1.0, -0.7, 0.4, 2.0], vec![1.0, 0.0, 1.0]);
        let coef = [0.5, -1.0, 2.0];
        let theta = [0.2, -0.1, 0.3];
        for loss in [Loss::LeastSquares, Loss::Logistic] {
            let mut g = vec![0.0; 3];
            let l0 = gradient(&rows, &coef, &theta, loss, &mut g);
            for k in 0..3 {
                let h = 1e-6;
                let mut tp = theta;
                tp[k] += h;
                let mut tm = theta;
                tm[k] -= h;
                let mut scratch = vec![0.0; 3];
                let fd = (gradient(&rows, &coef, &tp, loss, &mut scratch)
                    - gradient(&rows, &coef, &tm, loss, &mut scratch))
                    / (2.0 * h);
                assert!((fd - g[k]).abs() < 1e-7, "{loss:?} k={k}: {fd} vs {}", g[k]);
            }
            assert!(l0.is_finite());
        }
    }

    /// The AVX2 path and the baseline path give bit-identical results.
    #[test]
    fn dispatch_paths_agree_bitwise() {
        let x: Vec<f64> = (0..23 * 37).map(|ik| (ik as f64 * 0.713).sin()).collect();
        let rows = Rows::from_vecs(37, x, (0..23).map(|i| (i % 2) as f64).collect());
        let coef: Vec<f64> = (0..23).map(|i| 1.0 + 0.1 * i as f64).collect();
        let theta: Vec<f64> = (0..37).map(|k| (k as f64 * 0.3).cos() * 0.1).collect();
        for loss in [Loss::LeastSquares, Loss::Logistic] {
            let (mut a, mut b) = (vec![0.0; 37], vec![0.0; 37]);
            let la = gradient(&rows, &coef, &theta, loss, &mut a);
            let lb = gradient_generic(&rows, &coef, &theta, loss, &mut b, usize::MAX, &mut || {}, dot4);
            assert_eq!(a, b);
            assert_eq!(la, lb);
            // pausing changes nothing in the arithmetic
            let mut pauses = 0;
            let mut c = vec![0.0; 37];
            let lc = gradient_paced(&rows, &coef, &theta, loss, &mut c, 8, &mut || pauses += 1);
            assert_eq!((c, lc), (a, la));
            assert_eq!(pauses, 2, "23 rows: 5 blocks of 4, a pause after blocks 2 and 4");
        }
    }

    #[test]
    fn logistic_is_stable_for_large_margins() {
        for z in [-800.0, -40.0, 0.0, 40.0, 800.0] {
            let (l, s) = loss_and_slope(Loss::Logistic, z, 1.0);
            assert!(l.is_finite() && s.is_finite(), "z={z}");
        }
        assert!((softplus(800.0) - 800.0).abs() < 1e-12);
    }
}
