//! Serial gradient descent on the whole data set: the independent computation that every
//! scheme's θ trajectory is compared against. Deliberately plain: one loop over all rows, no
//! coefficients, no partitions, no codes.

use outrun_config::{Loss, ModelConfig, OptimizerKind};

use crate::batch::Batches;
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
            Loss::Softmax => unreachable!("a softmax's reference is naive_gradient"),
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
    serial_train(rows, model, vec![0.0; rows.p()], 0, iterations)
}

/// The gradient sum and loss sum of any model over `rows`, one sample at a time with plain
/// loops (no BLAS, no blocks, no coefficients).
pub fn naive_gradient(rows: &Rows, model: &ModelConfig, theta: &[f64]) -> (Vec<f64>, f64) {
    match (model.loss, model.outputs) {
        (Loss::Softmax, _) => {
            let mut sizes = vec![rows.p()];
            sizes.extend(&model.hidden);
            sizes.push(model.classes.expect("validated"));
            mlp_gradient(rows, &sizes, theta)
        }
        (Loss::LeastSquares, Some(c)) if c > 1 => {
            let p = rows.p();
            let (mut g, mut total) = (vec![0.0; p * c], 0.0);
            for j in 0..rows.len() {
                let x = rows.row(j);
                for o in 0..c {
                    let mut z = 0.0;
                    for k in 0..p {
                        z += x[k] * theta[k * c + o];
                    }
                    let r = z - f64::from(rows.y[j] as usize == o);
                    total += 0.5 * r * r;
                    for k in 0..p {
                        g[k * c + o] += r * x[k];
                    }
                }
            }
            (g, total)
        }
        (loss, _) => full_gradient(rows, theta, loss),
    }
}

/// A ReLU network with a softmax output, layer widths `sizes`, each layer W (out × in) then b.
fn mlp_gradient(rows: &Rows, sizes: &[usize], theta: &[f64]) -> (Vec<f64>, f64) {
    let mut offsets = vec![0];
    for w in sizes.windows(2) {
        offsets.push(offsets.last().unwrap() + w[1] * (w[0] + 1));
    }
    let layers = sizes.len() - 1;
    let (mut g, mut total) = (vec![0.0; *offsets.last().unwrap()], 0.0);
    for j in 0..rows.len() {
        // forward: a[0] = x, a[l+1] = relu(W_l a[l] + b_l) (no relu on the last)
        let mut a = vec![rows.row(j).to_vec()];
        for l in 0..layers {
            let (inp, out, at) = (sizes[l], sizes[l + 1], offsets[l]);
            let mut z = vec![0.0; out];
            for o in 0..out {
                z[o] = theta[at + out * inp + o];
                for i in 0..inp {
                    z[o] += theta[at + o * inp + i] * a[l][i];
                }
                if l + 1 < layers && z[o] < 0.0 {
                    z[o] = 0.0;
                }
            }
            a.push(z);
        }
        let logits = &a[layers];
        let y = rows.y[j] as usize;
        let max = logits.iter().cloned().fold(f64::NEG_INFINITY, f64::max);
        let sum: f64 = logits.iter().map(|v| (v - max).exp()).sum();
        total += sum.ln() + max - logits[y];
        let mut delta: Vec<f64> =
            logits.iter().enumerate().map(|(k, v)| (v - max).exp() / sum - if k == y { 1.0 } else { 0.0 }).collect();
        for l in (0..layers).rev() {
            let (inp, out, at) = (sizes[l], sizes[l + 1], offsets[l]);
            let mut back = vec![0.0; inp];
            for o in 0..out {
                g[at + out * inp + o] += delta[o];
                for i in 0..inp {
                    g[at + o * inp + i] += delta[o] * a[l][i];
                    back[i] += delta[o] * theta[at + o * inp + i];
                }
            }
            for i in 0..inp {
                if l > 0 && a[l][i] <= 0.0 {
                    back[i] = 0.0;
                }
            }
            delta = back;
        }
    }
    (g, total)
}

/// Serial training of `model` from its seeded θ₀ ([`crate::net::Net::init`] under `seed`, which
/// also draws the mini-batches): θ₀ … θ_T.
pub fn serial_model(rows: &Rows, model: &ModelConfig, seed: u64, iterations: u64) -> Vec<Vec<f64>> {
    let p = rows.p();
    serial_train(rows, model, crate::net::Net::new(model, p).init(model.init, seed, p), seed, iterations)
}

/// Serial training from θ_0: each iteration's batch (every row, or the rows of
/// [`Batches`] under `seed`), g_t its gradient sum over b_t rows, u = g_t/b_t + λθ,
/// then θ ← θ − η_t·u, or with momentum μ v ← μv + u and θ ← θ − η_t·v (Nesterov:
/// θ ← θ − η_t·(u + μv)). Returns θ_0 … θ_T.
pub fn serial_train(rows: &Rows, model: &ModelConfig, theta0: Vec<f64>, seed: u64, iterations: u64) -> Vec<Vec<f64>> {
    let d = rows.len();
    let mut batches = model.batch.map(|b| Batches::new(d, b, seed));
    let mut theta = theta0;
    let mut v = vec![0.0; theta.len()];
    let mut second = vec![0.0; theta.len()];
    let mut out = vec![theta.clone()];
    for t in 0..iterations {
        let (g, b) = match batches.as_mut() {
            Some(batches) => {
                let idx = batches.rows(t);
                (naive_gradient(&rows.select(idx.iter().copied()), model, &theta).0, idx.len())
            }
            None => (naive_gradient(rows, model, &theta).0, d),
        };
        let eta = step_size(model, t);
        if model.optimizer != OptimizerKind::Sgd {
            // Adam (AdamW: decoupled decay first), written out as torch.optim.Adam documents it
            let (beta1, beta2, eps) = model.adam();
            let n = (t + 1) as f64;
            for k in 0..theta.len() {
                theta[k] -= eta * model.decoupled_decay() * theta[k];
                let u = g[k] / b as f64 + model.l2 * theta[k];
                v[k] = beta1 * v[k] + (1.0 - beta1) * u;
                second[k] = beta2 * second[k] + (1.0 - beta2) * u * u;
                let m_hat = v[k] / (1.0 - beta1.powf(n));
                let v_hat = second[k] / (1.0 - beta2.powf(n));
                theta[k] -= eta * m_hat / (v_hat.sqrt() + eps);
            }
            out.push(theta.clone());
            continue;
        }
        for k in 0..theta.len() {
            let u = g[k] / b as f64 + model.l2 * theta[k];
            v[k] = model.momentum * v[k] + u;
            let step = if model.momentum == 0.0 {
                u
            } else if model.nesterov {
                u + model.momentum * v[k]
            } else {
                v[k]
            };
            theta[k] -= eta * step;
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
    use outrun_config::{DataKind, Labels};

    #[test]
    fn kernel_agrees_with_the_naive_gradient() {
        // row counts and widths around the kernel's block of 4 rows and 4 lanes
        for (d, p) in [(57, 13), (3, 2), (8, 4), (9, 1), (1, 9), (12, 8)] {
            let rows = synthetic_rows(DataKind::LogisticSynthetic, 2, p, 1.0, Labels::Binary, 0..d);
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
        let rows = synthetic_rows(DataKind::LinearSynthetic, 9, p, 0.1, Labels::Real, 0..d);
        let model = ModelConfig::linear(Loss::LeastSquares, 0.5);
        let traj = serial_gd(&rows, &model, 100);
        let star = theta_star(DataKind::LinearSynthetic, 9, p).unwrap();
        assert!(normalized_error(&traj[100], &star) < 1e-3);
        assert!(normalized_error(&traj[10], &star) < normalized_error(&traj[1], &star));
    }

    /// The reference's Adam and AdamW (the textbook form) and the optimizer every rank applies
    /// (torch's form: the bias corrections folded into the step) agree to round-off; both train,
    /// and neither is SGD.
    #[test]
    fn adam_written_out_matches_the_optimizer_and_trains() {
        use crate::metrics::Optimizer;
        use outrun_config::OptimizerKind;
        let (p, d) = (5, 400);
        let rows = synthetic_rows(DataKind::LinearSynthetic, 9, p, 0.1, Labels::Real, 0..d);
        let star = theta_star(DataKind::LinearSynthetic, 9, p).unwrap();
        let sgd = serial_gd(&rows, &ModelConfig::linear(Loss::LeastSquares, 0.05), 60);
        for (kind, wd) in [(OptimizerKind::Adam, None), (OptimizerKind::Adamw, Some(0.05))] {
            let model = ModelConfig {
                optimizer: kind,
                weight_decay: wd,
                l2: 1e-3,
                ..ModelConfig::linear(Loss::LeastSquares, 0.05)
            };
            let traj = serial_gd(&rows, &model, 60);
            let mut theta = vec![0.0; p];
            let mut opt = Optimizer::default();
            for t in 0..60 {
                let (g, _) = full_gradient(&rows, &theta, Loss::LeastSquares);
                opt.step(&mut theta, &g, d as f64, &model, t);
                assert!(relative_diff(&theta, &traj[t as usize + 1]) < 1e-12, "{kind:?} at {t}");
            }
            assert!(normalized_error(&traj[60], &star) < 0.05 * normalized_error(&traj[0], &star), "{kind:?}");
            assert!(relative_diff(&traj[60], &sgd[60]) > 1e-3, "{kind:?} is not SGD");
        }
    }
}
