//! Step sizes and the per-iteration metrics of the papers.

use outrun_plan::config::{ModelConfig, Schedule};

/// η_t: `lr` (constant) or `lr / (t + c)` (inverse), t the 0-based iteration.
pub fn step_size(model: &ModelConfig, t: u64) -> f64 {
    match model.schedule {
        Schedule::Constant => model.lr,
        Schedule::Inverse => model.lr / (t as f64 + model.c),
    }
}

/// The update every executor applies: θ ← θ − η_t·(g/d + λθ), with g the gradient *sum* over
/// the d samples (the serial reference in `reference.rs` writes it out on its own, on purpose).
pub fn gd_step(theta: &mut [f64], g: &[f64], d: f64, model: &ModelConfig, t: u64) {
    let eta = step_size(model, t);
    for (th, gk) in theta.iter_mut().zip(g) {
        *th -= eta * (gk / d + model.l2 * *th);
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

/// Classification accuracy of a logistic model on `rows` (0/1 labels): the fraction of rows
/// where xᵀθ > 0 predicts label 1 correctly.
pub fn accuracy(rows: &crate::Rows, theta: &[f64]) -> f64 {
    if rows.is_empty() {
        return f64::NAN;
    }
    let right = (0..rows.len())
        .filter(|&i| {
            (rows.row(i).iter().zip(theta).map(|(a, b)| a * b).sum::<f64>() > 0.0) == (rows.labels()[i] == 1.0)
        })
        .count();
    right as f64 / rows.len() as f64
}
