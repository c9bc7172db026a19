//! Value faults at run time: which worker misbehaves in which iteration, and what it does to
//! its result — a pure function of (seed, worker, iteration), so the engine and the simulator,
//! and every scheme compared under the same seed, see the same faults.

use outrun_codes::{domain, Rng};
use serde::{Deserialize, Serialize};

use outrun_config::{Config, FaultConfig};
use outrun_config::{DEFAULT_SIGMA, DEFAULT_VALUE};

/// What a faulty worker does.
#[derive(Clone, Copy, Debug, PartialEq, Serialize, Deserialize)]
#[serde(tag = "kind", rename_all = "kebab-case")]
pub enum FaultKind {
    /// Its result is replaced by N(0, σ²) noise.
    Gaussian {
        /// Standard deviation.
        sigma: f64,
    },
    /// Its result is negated.
    SignFlip,
    /// Every entry of its result is `value`.
    SameValue {
        /// The value.
        value: f64,
    },
    /// It computes on labels c ↦ `top` − c (`top` = C − 1; binary labels: 1).
    LabelFlip,
}

impl FaultKind {
    /// The config's name (`sign-flip`).
    pub fn name(&self) -> &'static str {
        match self {
            FaultKind::Gaussian { .. } => "gaussian",
            FaultKind::SignFlip => "sign-flip",
            FaultKind::SameValue { .. } => "same-value",
            FaultKind::LabelFlip => "label-flip",
        }
    }
}

/// The run's value faults (none by default).
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
pub struct Faults {
    /// What the faulty workers do (None: no faults).
    pub kind: Option<FaultKind>,
    /// The faulty workers (1-based, ascending).
    pub workers: Vec<usize>,
    /// First iteration at which they misbehave.
    pub from: u64,
    /// Probability that a faulty worker misbehaves in an iteration.
    pub p: f64,
    /// Seed of the draws.
    pub seed: u64,
}

impl Faults {
    /// The faults of `cfg` (its `count` drawn from `run.seed`).
    pub fn from_config(cfg: &Config) -> Self {
        let Some(f) = cfg.faults.faulty() else { return Faults::default() };
        let seed = cfg.run.seed;
        let workers = match f.count {
            Some(c) => {
                Rng::from_key(&[seed, domain::FAULT]).choose(cfg.workers(), c).into_iter().map(|w| w + 1).collect()
            }
            None => {
                let mut w = f.workers.clone();
                w.sort_unstable();
                w.dedup();
                w
            }
        };
        let kind = match &cfg.faults {
            FaultConfig::None => None,
            FaultConfig::Gaussian(f) => Some(FaultKind::Gaussian { sigma: f.sigma.unwrap_or(DEFAULT_SIGMA) }),
            FaultConfig::SignFlip(_) => Some(FaultKind::SignFlip),
            FaultConfig::SameValue(f) => Some(FaultKind::SameValue { value: f.value.unwrap_or(DEFAULT_VALUE) }),
            FaultConfig::LabelFlip(_) => Some(FaultKind::LabelFlip),
        };
        Faults { kind, workers, from: f.from, p: f.p, seed }
    }

    /// What `worker` does wrong in iteration `t`, if anything.
    pub fn at(&self, worker: usize, t: u64) -> Option<FaultKind> {
        let kind = self.kind?;
        if t < self.from || self.workers.binary_search(&worker).is_err() {
            return None;
        }
        let drawn = self.p >= 1.0 || Rng::from_key(&[self.seed, domain::FAULT, worker as u64, t]).uniform() < self.p;
        drawn.then_some(kind)
    }

    /// Apply `worker`'s fault of iteration `t` to the values of its result's part `part`
    /// (nothing for a label flip, which acts on the labels before computing).
    pub fn corrupt(&self, worker: usize, t: u64, part: usize, values: &mut [f64]) {
        match self.at(worker, t) {
            Some(FaultKind::Gaussian { sigma }) => {
                let mut rng = Rng::from_key(&[self.seed, domain::FAULT, worker as u64, t, part as u64 + 1]);
                values.iter_mut().for_each(|v| *v = sigma * rng.normal());
            }
            Some(FaultKind::SignFlip) => values.iter_mut().for_each(|v| *v = -*v),
            Some(FaultKind::SameValue { value }) => values.fill(value),
            Some(FaultKind::LabelFlip) | None => {}
        }
    }

    /// `sign-flip on workers 3, 5 from iteration 10 with p = 0.5`, or None without faults.
    pub fn describe(&self) -> Option<String> {
        let kind = self.kind?;
        let what = match kind {
            FaultKind::Gaussian { sigma } => format!("gaussian (σ = {sigma})"),
            FaultKind::SameValue { value } => format!("same-value ({value})"),
            k => k.name().to_string(),
        };
        let workers: Vec<String> = self.workers.iter().map(|w| w.to_string()).collect();
        let from = if self.from > 0 { format!(" from iteration {}", self.from) } else { String::new() };
        let p = if self.p < 1.0 { format!(", each iteration with p = {}", self.p) } else { String::new() };
        Some(format!("{what} on worker(s) {}{from}{p}", workers.join(", ")))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn faults(kind: FaultKind, p: f64) -> Faults {
        Faults { kind: Some(kind), workers: vec![2, 4], from: 3, p, seed: 7 }
    }

    #[test]
    fn only_the_listed_workers_from_the_first_iteration_misbehave() {
        let f = faults(FaultKind::SignFlip, 1.0);
        assert_eq!(f.at(2, 2), None);
        assert_eq!(f.at(2, 3), Some(FaultKind::SignFlip));
        assert_eq!(f.at(3, 9), None);
        let mut v = [1.0, -2.0];
        f.corrupt(4, 5, 0, &mut v);
        assert_eq!(v, [-1.0, 2.0]);
        f.corrupt(1, 5, 0, &mut v);
        assert_eq!(v, [-1.0, 2.0]);
    }

    #[test]
    fn draws_are_a_function_of_seed_worker_and_iteration() {
        let f = faults(FaultKind::Gaussian { sigma: 10.0 }, 0.5);
        let hits: Vec<bool> = (3..403).map(|t| f.at(2, t).is_some()).collect();
        let again: Vec<bool> = (3..403).map(|t| f.at(2, t).is_some()).collect();
        assert_eq!(hits, again);
        let rate = hits.iter().filter(|&&h| h).count() as f64 / 400.0;
        assert!((0.4..0.6).contains(&rate), "{rate}");
        let t = (3..).find(|&t| f.at(2, t).is_some()).unwrap();
        let (mut a, mut b) = (vec![0.0; 2000], vec![0.0; 2000]);
        f.corrupt(2, t, 0, &mut a);
        f.corrupt(2, t, 0, &mut b);
        assert_eq!(a, b);
        let sd = (a.iter().map(|v| v * v).sum::<f64>() / a.len() as f64).sqrt();
        assert!((9.0..11.0).contains(&sd), "{sd}");
    }

    #[test]
    fn same_value_fills_every_entry() {
        let f = faults(FaultKind::SameValue { value: 10.0 }, 1.0);
        let mut v = [1.0, 2.0, 3.0];
        f.corrupt(2, 3, 0, &mut v);
        assert_eq!(v, [10.0; 3]);
        assert_eq!(f.describe().unwrap(), "same-value (10) on worker(s) 2, 4 from iteration 3");
    }
}
