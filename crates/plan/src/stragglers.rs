//! Straggler and fault injection, as a pure function of `(seed, worker, iteration)`.
//!
//! Every decision is drawn from a stream keyed by the run seed, the worker id (1-based, the same
//! for every scheme) and the iteration, so every scheme in a comparison sees the same slow
//! machines at the same iterations, and a simulator sees the same delays as a real run.
//!
//! | model | compute time of worker w at iteration t |
//! |---|---|
//! | `none` | the base time |
//! | `fixed` | base × (1 + factor) for the listed workers from `from_iteration` on |
//! | `bernoulli` | base × (1 + factor) with probability p (per iteration, or once per run) |
//! | `shifted-exp` | a·load + (load/μ)·E, E ~ Exp(1) (CR paper eq. 6) |
//! | `weibull` | a·load + (load/μ)·W, W ~ Weibull(shape k, scale 1) (HCMM's Weibull study) |
//! | `fail-stop` | the listed workers never answer from `from_iteration` on |
//!
//! The *base* time is the measured compute time (`[timing] compute = "real"`) or `timing.a ×
//! load` (`"modelled"`). In modelled mode the worker computes the real gradient and then sleeps
//! until the modelled finish time; if the real compute was slower, the engine logs an overrun.

use outrun_codes::rng::{domain, Rng};
use serde::{Deserialize, Serialize};

use crate::config::{BernoulliMode, ComputeMode, Config, StragglerKind};

/// The straggler model of a run (built from `[stragglers]` and `[timing]`).
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct StragglerModel {
    pub kind: StragglerKind,
    pub seed: u64,
    pub workers: Vec<usize>,
    pub factor: f64,
    pub p: f64,
    pub mode: BernoulliMode,
    pub a: f64,
    pub mu: f64,
    /// Weibull shape k.
    #[serde(default)]
    pub shape: f64,
    pub from_iteration: u64,
    pub compute: ComputeMode,
    /// Seconds per point of the modelled base time.
    pub base_a: f64,
}

/// Timing decision for one worker in one iteration.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct ComputeTime {
    /// Seconds from compute start until the result may be sent.
    pub target: f64,
    /// Part of `target` that is injected delay beyond the base compute time.
    pub injected: f64,
    /// Whether the model made this worker a straggler this iteration.
    pub straggler: bool,
}

/// Default extra-delay factor (the thesis's 3× sleep).
pub const DEFAULT_FACTOR: f64 = 3.0;

impl StragglerModel {
    pub fn from_config(cfg: &Config) -> Self {
        let st = &cfg.stragglers;
        StragglerModel {
            kind: st.model,
            seed: cfg.run.seed,
            workers: st.workers.clone(),
            factor: st.factor.unwrap_or(DEFAULT_FACTOR),
            p: st.p.unwrap_or(0.0),
            mode: st.mode.unwrap_or_default(),
            a: st.a.unwrap_or(0.0),
            mu: st.mu.unwrap_or(0.0),
            shape: st.shape.unwrap_or(0.0),
            from_iteration: st.from_iteration,
            compute: cfg.timing.compute,
            base_a: cfg.timing.a,
        }
    }

    fn stream(&self, worker: usize, iteration: u64) -> Rng {
        Rng::from_key(&[self.seed, domain::STRAGGLER, worker as u64, iteration])
    }

    fn active(&self, iteration: u64) -> bool {
        iteration >= self.from_iteration
    }

    /// Whether worker `w` never answers iteration `t` (fail-stop).
    pub fn is_dead(&self, worker: usize, iteration: u64) -> bool {
        self.kind == StragglerKind::FailStop && self.active(iteration) && self.workers.contains(&worker)
    }

    /// Whether worker `w` is made slow at iteration `t` (fixed and bernoulli models).
    pub fn is_straggler(&self, worker: usize, iteration: u64) -> bool {
        match self.kind {
            StragglerKind::Fixed => self.active(iteration) && self.workers.contains(&worker),
            StragglerKind::Bernoulli => {
                let key = match self.mode {
                    BernoulliMode::PerIteration => iteration,
                    BernoulliMode::Once => u64::MAX,
                };
                self.active(iteration) && self.stream(worker, key).uniform() < self.p
            }
            _ => false,
        }
    }

    /// Compute time of worker `w` at iteration `t` with `load` points, given the measured time
    /// of the real computation.
    pub fn compute_time(&self, worker: usize, iteration: u64, load: usize, measured: f64) -> ComputeTime {
        if matches!(self.kind, StragglerKind::ShiftedExp | StragglerKind::Weibull) {
            let shift = self.a * load as f64;
            // one Exp(1) draw per (worker, iteration); Weibull(k, 1) = Exp(1)^(1/k)
            let e = self.stream(worker, iteration).exp1();
            let w = if self.kind == StragglerKind::Weibull { libm::pow(e, 1.0 / self.shape) } else { e };
            let tail = if load == 0 { 0.0 } else { load as f64 / self.mu * w };
            return ComputeTime { target: shift + tail, injected: tail, straggler: false };
        }
        let base = match self.compute {
            ComputeMode::Real => measured,
            ComputeMode::Modelled => self.base_a * load as f64,
        };
        let straggler = self.is_straggler(worker, iteration);
        let injected = if straggler { self.factor * base } else { 0.0 };
        ComputeTime { target: base + injected, injected, straggler }
    }

    /// Mean compute time of a worker with `load` points under this model when the base time is
    /// `base` seconds (for plans and the simulator).
    pub fn mean_time(&self, load: usize, base: f64) -> f64 {
        match self.kind {
            StragglerKind::ShiftedExp => self.a * load as f64 + load as f64 / self.mu,
            StragglerKind::Weibull => self.a * load as f64 + load as f64 / self.mu * libm::tgamma(1.0 + 1.0 / self.shape),
            StragglerKind::Bernoulli => base * (1.0 + self.p * self.factor),
            _ => base,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::config::parse;

    fn model(extra: &[&str]) -> StragglerModel {
        let base = "[run]\nname='t'\niterations=3\n[data]\nkind='linear-synthetic'\nsamples=90\nfeatures=3\n[model]\nloss='least-squares'\nlr=0.1\n[scheme]\nkind='ignore'\nworkers=9\ns=2\n";
        let cfg = parse(base, &extra.iter().map(|s| s.to_string()).collect::<Vec<_>>()).unwrap();
        StragglerModel::from_config(&cfg)
    }

    #[test]
    fn fixed_stragglers_are_listed_workers_from_an_iteration() {
        let m = model(&["stragglers.model=fixed", "stragglers.workers=[2, 5]", "stragglers.factor=4", "stragglers.from_iteration=1"]);
        assert!(!m.is_straggler(2, 0));
        assert!(m.is_straggler(2, 1) && m.is_straggler(5, 7));
        assert!(!m.is_straggler(3, 7));
        let t = m.compute_time(5, 3, 100, 0.01);
        assert!((t.target - 0.05).abs() < 1e-12 && (t.injected - 0.04).abs() < 1e-12 && t.straggler);
    }

    #[test]
    fn bernoulli_is_reproducible_and_has_rate_p() {
        let m = model(&["stragglers.model=bernoulli", "stragglers.p=0.3"]);
        let m2 = m.clone();
        let mut hits = 0;
        for t in 0..2000 {
            for w in 1..=9 {
                assert_eq!(m.is_straggler(w, t), m2.is_straggler(w, t));
                hits += usize::from(m.is_straggler(w, t));
            }
        }
        let rate = hits as f64 / 18000.0;
        assert!((rate - 0.3).abs() < 0.02, "rate {rate}");
        let once = model(&["stragglers.model=bernoulli", "stragglers.p=0.5", "stragglers.mode=once"]);
        for w in 1..=9 {
            let first = once.is_straggler(w, 0);
            assert!((0..50).all(|t| once.is_straggler(w, t) == first));
        }
    }

    #[test]
    fn shifted_exponential_has_the_papers_mean_and_shares_draws_across_loads() {
        let m = model(&["timing.compute=modelled", "stragglers.model=shifted-exp", "stragglers.a=1e-4", "stragglers.mu=2e4"]);
        let (load, trials) = (100usize, 20_000u64);
        let mean = (0..trials).map(|t| m.compute_time(1, t, load, 0.0).target).sum::<f64>() / trials as f64;
        let expect = 1e-4 * 100.0 + 100.0 / 2e4;
        assert!((mean - expect).abs() / expect < 0.02, "{mean} vs {expect}");
        assert!((m.mean_time(load, 0.0) - expect).abs() < 1e-15);
        // the same Exp(1) draw, scaled by load: schemes with different loads see coupled delays
        let t1 = m.compute_time(4, 9, 100, 0.0).injected;
        let t2 = m.compute_time(4, 9, 300, 0.0).injected;
        assert!((t2 - 3.0 * t1).abs() < 1e-15);
    }

    #[test]
    fn weibull_has_the_right_mean() {
        let m = model(&["timing.compute=modelled", "stragglers.model=weibull", "stragglers.a=1e-4", "stragglers.mu=2e4", "stragglers.shape=0.5"]);
        let trials = 200_000u64;
        let mean = (0..trials).map(|t| m.compute_time(2, t, 100, 0.0).target).sum::<f64>() / trials as f64;
        let expect = m.mean_time(100, 0.0); // 0.01 + 0.005·Γ(3) = 0.02
        assert!((expect - 0.02).abs() < 1e-12);
        assert!((mean - expect).abs() / expect < 0.03, "{mean} vs {expect}");
    }

    #[test]
    fn fail_stop_and_modelled_base() {
        let m = model(&["stragglers.model=fail-stop", "stragglers.workers=[3]", "stragglers.from_iteration=2"]);
        assert!(!m.is_dead(3, 1) && m.is_dead(3, 2) && !m.is_dead(4, 2));
        let m = model(&["timing.compute=modelled", "timing.a=2e-3"]);
        let t = m.compute_time(1, 0, 10, 0.5);
        assert!((t.target - 0.02).abs() < 1e-15 && t.injected == 0.0);
    }
}
