//! Step sizes and the per-iteration metrics of the papers.

use outrun_config::{ModelConfig, OptimizerKind, Schedule};

/// η_t: `lr` (constant) or `lr / (t + c)` (inverse), t the 0-based iteration; multiplied by
/// `decay` at each iteration of `decay_at` that t has reached, and by (t + 1)/`warmup` while
/// t < `warmup`.
pub fn step_size(model: &ModelConfig, t: u64) -> f64 {
    let base = match model.schedule {
        Schedule::Constant => model.lr,
        Schedule::Inverse => model.lr / (t as f64 + model.c),
    };
    let decays = model.decay_at.iter().filter(|&&at| t >= at).count();
    let warm = if t < model.warmup { (t + 1) as f64 / model.warmup as f64 } else { 1.0 };
    base * libm::pow(model.decay, decays as f64) * warm
}

/// The update every executor applies, given g, the gradient *sum* over the iteration's b
/// samples, and u = g/b + λθ (λ = `model.l2`), η_t from [`step_size`] — PyTorch's optimizers,
/// step for step:
///
/// - **sgd** (torch.optim.SGD): without momentum θ ← θ − η_t·u; with momentum μ the velocity
///   v ← μv + u and θ ← θ − η_t·v (Nesterov: θ ← θ − η_t·(u + μv)), v₀ = 0.
/// - **adam** (torch.optim.Adam, λ its weight_decay): with step k = t + 1, m ← β₁m + (1 − β₁)u,
///   v ← β₂v + (1 − β₂)u², θ ← θ − (η_t / (1 − β₁ᵏ))·m / (√v / √(1 − β₂ᵏ) + ε), m₀ = v₀ = 0.
/// - **adamw** (torch.optim.AdamW): θ ← θ·(1 − η_t·w) first (w = `model.weight_decay`), then
///   Adam's step on u.
///
/// Every rank that applies it (the master, each ring rank) applies the same arithmetic in the
/// same order, so an exact scheme stays exact. (The serial reference in `reference.rs` writes
/// it out on its own, on purpose.)
///
/// ```
/// use outrun_config::{Loss, ModelConfig, OptimizerKind};
/// use outrun_workloads::metrics::Optimizer;
/// // Adam's first step moves every coordinate by about η, whatever the gradient's scale
/// let model = ModelConfig { optimizer: OptimizerKind::Adam, ..ModelConfig::linear(Loss::LeastSquares, 0.1) };
/// let mut theta = vec![1.0, 1.0];
/// Optimizer::default().step(&mut theta, &[1e6, -1e-3], 1.0, &model, 0);
/// assert!((theta[0] - 0.9).abs() < 1e-6 && (theta[1] - 1.1).abs() < 1e-4);
/// ```
#[derive(Clone, Debug, Default, PartialEq)]
pub struct Optimizer {
    /// SGD's velocity v, or Adam's first moment m (empty until the first step that needs it).
    pub velocity: Vec<f64>,
    /// Adam's second moment v (empty for SGD).
    pub second: Vec<f64>,
}

impl Optimizer {
    /// One step of iteration `t` on θ.
    pub fn step(&mut self, theta: &mut [f64], g: &[f64], b: f64, model: &ModelConfig, t: u64) {
        let eta = step_size(model, t);
        if model.optimizer != OptimizerKind::Sgd {
            return self.adam(theta, g, b, model, t, eta);
        }
        let mu = model.momentum;
        if mu == 0.0 {
            for (th, gk) in theta.iter_mut().zip(g) {
                *th -= eta * (gk / b + model.l2 * *th);
            }
            return;
        }
        self.velocity.resize(theta.len(), 0.0);
        for ((th, gk), v) in theta.iter_mut().zip(g).zip(&mut self.velocity) {
            let u = gk / b + model.l2 * *th;
            *v = mu * *v + u;
            *th -= eta * if model.nesterov { u + mu * *v } else { *v };
        }
    }

    fn adam(&mut self, theta: &mut [f64], g: &[f64], b: f64, model: &ModelConfig, t: u64, eta: f64) {
        let (beta1, beta2, eps) = model.adam();
        let decay = model.decoupled_decay();
        let k = i32::try_from(t + 1).unwrap_or(i32::MAX);
        let step = eta / (1.0 - beta1.powi(k));
        let root2 = (1.0 - beta2.powi(k)).sqrt();
        self.velocity.resize(theta.len(), 0.0);
        self.second.resize(theta.len(), 0.0);
        for (((th, gk), m), v) in theta.iter_mut().zip(g).zip(&mut self.velocity).zip(&mut self.second) {
            if decay != 0.0 {
                *th *= 1.0 - eta * decay;
            }
            let u = gk / b + model.l2 * *th;
            *m = beta1 * *m + (1.0 - beta1) * u;
            *v = beta2 * *v + (1.0 - beta2) * u * u;
            *th -= step * *m / (v.sqrt() / root2 + eps);
        }
    }
}

/// ‖a‖²
pub fn norm_sq(a: &[f64]) -> f64 {
    outrun_codes::sum_sq(a)
}

/// ‖a − b‖²
pub fn dist_sq(a: &[f64], b: &[f64]) -> f64 {
    outrun_codes::sum_sq_diff(a, b)
}

/// Normalised error ‖θ − θ*‖² / ‖θ*‖² (thesis eq. 4.11).
pub fn normalized_error(theta: &[f64], star: &[f64]) -> f64 {
    dist_sq(theta, star) / norm_sq(star)
}

/// Relative difference ‖a − b‖ / max(‖b‖, tiny), used by exactness checks.
pub fn relative_diff(a: &[f64], b: &[f64]) -> f64 {
    dist_sq(a, b).sqrt() / norm_sq(b).sqrt().max(f64::MIN_POSITIVE)
}
