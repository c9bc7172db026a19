//! Feature maps applied to a rank's rows when they are read (`[features]`).
//!
//! Random Fourier features (Rahimi and Recht 2007) approximate the RBF kernel
//! k(x, x') = exp(−‖x − x'‖²/(2σ²)) by φ(x)ᵀφ(x'), φ(x) = √(2/q)·cos(xΩ + δ), with the columns
//! of Ω (p × q) drawn from N(0, σ⁻²·I) and δ uniform in [0, 2π). This is scikit-learn's
//! `RBFSampler` with γ = 1/(2σ²). (The CodedFedL chapter writes the variance as 1/(2σ²), which
//! gives the kernel exp(−‖x − x'‖²/(4σ²)), i.e. σ scaled by √2; see the spec's item 9.) Every
//! rank draws Ω and δ from `features.seed` (default `run.seed`), so all map alike.

use outrun_codes::{domain, Rng};
use outrun_config::{FeatureConfig, FeatureKind};

use crate::blas::{gemm, Op};
use crate::data::Rows;

/// A drawn feature map from p inputs to q features.
#[derive(Clone, Debug)]
pub struct FeatureMap {
    p: usize,
    q: usize,
    omega: Vec<f64>,
    delta: Vec<f64>,
}

impl FeatureMap {
    /// The map `config` describes on `p` inputs (`seed`: `run.seed`, unless the config names one).
    pub fn new(config: &FeatureConfig, p: usize, seed: u64) -> Self {
        let FeatureKind::Rff = config.kind;
        let (q, seed) = (config.q, config.seed.unwrap_or(seed));
        let mut omega = vec![0.0; p * q];
        for (i, row) in omega.chunks_exact_mut(q).enumerate() {
            let mut rng = Rng::from_key(&[seed, domain::RFF, i as u64]);
            row.iter_mut().for_each(|w| *w = rng.normal() / config.sigma);
        }
        let mut rng = Rng::from_key(&[seed, domain::RFF, u64::MAX]);
        let delta = (0..q).map(|_| rng.uniform() * std::f64::consts::TAU).collect();
        FeatureMap { p, q, omega, delta }
    }

    /// Features out.
    pub fn len(&self) -> usize {
        self.q
    }

    /// Whether the map has no output (never: q ≥ 1 is validated).
    pub fn is_empty(&self) -> bool {
        self.q == 0
    }

    /// The mapped rows (labels kept).
    pub fn map(&self, rows: &Rows) -> Rows {
        assert_eq!(rows.p(), self.p);
        let n = rows.len();
        let mut z = vec![0.0; n * self.q];
        gemm(1.0, Op::n(rows.features(), n, self.p), Op::n(&self.omega, self.p, self.q), 0.0, &mut z);
        let scale = (2.0 / self.q as f64).sqrt();
        for row in z.chunks_exact_mut(self.q) {
            for (v, d) in row.iter_mut().zip(&self.delta) {
                *v = scale * libm::cos(*v + d);
            }
        }
        Rows::from_vecs(self.q, z, rows.labels().to_vec())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// φ(x)ᵀφ(x') approaches exp(−‖x − x'‖²/(2σ²)) as q grows.
    #[test]
    fn inner_products_approximate_the_rbf_kernel() {
        let cfg = FeatureConfig { kind: FeatureKind::Rff, q: 20_000, sigma: 1.5, seed: None };
        let map = FeatureMap::new(&cfg, 3, 7);
        let rows = Rows::from_vecs(3, vec![0.0, 0.0, 0.0, 1.0, 0.5, -0.5, 3.0, 0.0, 1.0], vec![0.0; 3]);
        let phi = map.map(&rows);
        for (i, j) in [(0, 0), (0, 1), (0, 2), (1, 2)] {
            let got: f64 = phi.row(i).iter().zip(phi.row(j)).map(|(a, b)| a * b).sum();
            let d2: f64 = rows.row(i).iter().zip(rows.row(j)).map(|(a, b)| (a - b) * (a - b)).sum();
            let want = (-d2 / (2.0 * 1.5 * 1.5)).exp();
            assert!((got - want).abs() < 0.03, "({i},{j}): {got} vs {want}");
        }
        let again = FeatureMap::new(&cfg, 3, 7).map(&rows);
        assert_eq!(again, phi, "a function of the seed");
    }
}
