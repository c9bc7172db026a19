//! The gradient kernel: `g = Σ_j c_j·∇ℓ(θ; x_j)` and `L = Σ_j c_j·ℓ(θ; x_j)` over a node's
//! weighted rows, in one pass over the data (each row is read from memory once: the dot product
//! brings it into L1, the update reuses it).
//!
//! The loss is carried beside the gradient so that decoding, which is linear, recovers the exact
//! full-data loss at the master for free.

use outrun_plan::config::Loss;

use crate::data::Rows;

/// Dot product with eight independent accumulators (vectorises without `-ffast-math`).
#[inline]
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
#[inline]
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
            let sigma = if z >= 0.0 { 1.0 / (1.0 + libm::exp(-z)) } else { let e = libm::exp(z); e / (1.0 + e) };
            (softplus(z) - y * z, sigma - y)
        }
    }
}

/// Weighted gradient sum into `g` (overwritten) and the weighted loss sum (returned).
pub fn gradient(rows: &Rows, coef: &[f64], theta: &[f64], loss: Loss, g: &mut [f64]) -> f64 {
    assert_eq!(coef.len(), rows.len());
    assert_eq!(theta.len(), rows.p);
    assert_eq!(g.len(), rows.p);
    g.iter_mut().for_each(|v| *v = 0.0);
    let mut total = 0.0;
    if rows.p == 0 {
        return 0.0;
    }
    for ((x, &y), &c) in rows.x.chunks_exact(rows.p).zip(&rows.y).zip(coef) {
        let z = dot(x, theta);
        let (l, slope) = loss_and_slope(loss, z, y);
        total += c * l;
        axpy(g, c * slope, x);
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
        let mut rows = Rows::new(3);
        rows.push(&[1.0, -2.0, 0.5], 1.0);
        rows.push(&[0.3, 0.1, -1.0], 0.0);
        rows.push(&[-0.7, 0.4, 2.0], 1.0);
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
                let fd = (gradient(&rows, &coef, &tp, loss, &mut scratch) - gradient(&rows, &coef, &tm, loss, &mut scratch)) / (2.0 * h);
                assert!((fd - g[k]).abs() < 1e-7, "{loss:?} k={k}: {fd} vs {}", g[k]);
            }
            assert!(l0.is_finite());
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
