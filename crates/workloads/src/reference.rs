//! Serial gradient descent on the whole data set: the independent computation that every
//! scheme's θ trajectory is compared against. Deliberately plain: one loop over all rows, no
//! coefficients, no partitions, no codes.

use outrun_plan::config::{Loss, ModelConfig};

use crate::data::Rows;
use crate::metrics::step_size;

/// Full gradient sum Σ_j ∇ℓ(θ; x_j) and loss sum, computed naively.
pub fn full_gradient(rows: &Rows, theta: &[f64], loss: Loss) -> (Vec<f64>, f64) {
    let p = rows.p();
    let mut g = vec![0.0; p];
    let mut total = 0.0;
    for j in 0..rows.len() {
        let x = rows.row(j);
        let mut z = 0.0;
        for k in 0..p {
            z += x[k] * theta[k];
        }
        let y = rows.y[j];
        let (l, r) = match loss {
            Loss::LeastSquares => (0.5 * (z - y) * (z - y), z - y),
            Loss::Logistic => {
                let sigma = 1.0 / (1.0 + (-z).exp());
                let softplus = if z > 0.0 { z + (-z).exp().ln_1p() } else { z.exp().ln_1p() };
                (softplus - y * z, sigma - y)
            }
        };
        total += l;
        for k in 0..p {
            g[k] += r * x[k];
        }
    }
    (g, total)
}

/// θ_0 = 0, θ_{t+1} = θ_t − η_t·(g_t/d + λ·θ_t). Returns θ_0 … θ_T.
pub fn serial_gd(rows: &Rows, model: &ModelConfig, iterations: u64) -> Vec<Vec<f64>> {
    let d = rows.len() as f64;
    let p = rows.p();
    let mut theta = vec![0.0; p];
    let mut out = vec![theta.clone()];
    for t in 0..iterations {
        let (g, _) = full_gradient(rows, &theta, model.loss);
        let eta = step_size(model, t);
        for k in 0..p {
            theta[k] -= eta * (g[k] / d + model.l2 * theta[k]);
        }
        out.push(theta.clone());
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::data::{synthetic_rows, theta_star};
    use crate::kernel::gradient;
    use crate::metrics::{normalized_error, relative_diff};
    use outrun_plan::config::{DataKind, Schedule};

    #[test]
    fn kernel_agrees_with_the_naive_gradient() {
        // row counts and widths around the kernel's block of 4 rows and 4 lanes
        for (d, p) in [(57, 13), (3, 2), (8, 4), (9, 1), (1, 9), (12, 8)] {
            let rows = synthetic_rows(DataKind::LogisticSynthetic, 2, p, 1.0, 0..d);
            let theta: Vec<f64> = (0..p).map(|k| 0.1 * k as f64 - 0.5).collect();
            for loss in [Loss::LeastSquares, Loss::Logistic] {
                let (g_ref, l_ref) = full_gradient(&rows, &theta, loss);
                let mut g = vec![0.0; p];
                let l = gradient(&rows, &vec![1.0; d], &theta, loss, &mut g);
                assert!(relative_diff(&g, &g_ref) < 1e-13, "d={d} p={p} {loss:?}");
                assert!((l - l_ref).abs() / l_ref.abs() < 1e-13, "d={d} p={p} {loss:?}");
            }
        }
    }

    #[test]
    fn gradient_descent_converges_on_linear_data() {
        let (p, d) = (5, 400);
        let rows = synthetic_rows(DataKind::LinearSynthetic, 9, p, 0.1, 0..d);
        let model = ModelConfig { loss: Loss::LeastSquares, lr: 0.5, l2: 0.0, schedule: Schedule::Constant, c: 1.0 };
        let traj = serial_gd(&rows, &model, 100);
        let star = theta_star(DataKind::LinearSynthetic, 9, p).unwrap();
        assert!(normalized_error(&traj[100], &star) < 1e-3);
        assert!(normalized_error(&traj[10], &star) < normalized_error(&traj[1], &star));
    }
}
