//! Step sizes and the per-iteration metrics of the papers.

use outrun_config::{ModelConfig, Schedule};

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
/// samples: u = g/b + λθ; without momentum θ ← θ − η_t·u; with momentum μ the velocity
/// v ← μv + u and θ ← θ − η_t·v (Nesterov: θ ← θ − η_t·(u + μv)), v₀ = 0 — PyTorch's SGD.
/// (The serial reference in `reference.rs` writes it out on its own, on purpose.)
#[derive(Clone, Debug, Default, PartialEq)]
pub struct Optimizer {
    /// The velocity v (empty without momentum).
    pub velocity: Vec<f64>,
}

impl Optimizer {
    /// One step of iteration `t` on θ.
    pub fn step(&mut self, theta: &mut [f64], g: &[f64], b: f64, model: &ModelConfig, t: u64) {
        let eta = step_size(model, t);
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
}

/// ‖a‖²
pub fn norm_sq(a: &[f64]) -> f64 {
    a.iter().map(|x| x * x).sum()
}

/// ‖a − b‖²
pub fn dist_sq(a: &[f64], b: &[f64]) -> f64 {
    a.iter().zip(b).map(|(x, y)| (x - y) * (x - y)).sum()
}

/// Normalised error ‖θ − θ*‖² / ‖θ*‖² (thesis eq. 4.11).
pub fn normalized_error(theta: &[f64], star: &[f64]) -> f64 {
    dist_sq(theta, star) / norm_sq(star)
}

/// Relative difference ‖a − b‖ / max(‖b‖, tiny), used by exactness checks.
pub fn relative_diff(a: &[f64], b: &[f64]) -> f64 {
    dist_sq(a, b).sqrt() / norm_sq(b).sqrt().max(f64::MIN_POSITIVE)
}
