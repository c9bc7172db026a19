//! Straggler and fault injection, as a pure function of `(seed, worker, iteration)` — and, for
//! stateful processes, of the worker's own history, itself a function of the same keys.
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
//! | `shifted-exp` | a_w·load + (load/μ_w)·E, E ~ Exp(1) (CR paper eq. 6) |
//! | `weibull` | a_w·load + (load/μ_w)·W, W ~ Weibull(shape k_w, scale 1) (HCMM's Weibull study) |
//! | `fail-stop` | the listed workers never answer from `from_iteration` on |
//! | `markov` | load·(a_w + E/μ_{w,state}); the state (fast/slow) switches with probability p at the start of every iteration |
//!
//! The *base* time is the measured compute time (`[timing] compute = "real"`) or `timing.a ×
//! load` (`"modelled"`). In modelled mode the worker computes the real gradient and then sleeps
//! until the modelled finish time; if the real compute was slower, the engine logs an overrun.
//!
//! Stateful processes (`markov`) are evaluated by an [`Injector`], which keeps each worker's
//! state and the iteration it belongs to and steps forward on demand (one uniform draw per
//! worker and iteration, keyed like every other draw), so memory stays one state per worker and
//! the engine (one worker per rank) and the simulator (every worker) compute the same sequence.

use outrun_codes::{domain, Rng};
use serde::{Deserialize, Serialize};

use outrun_config::ComputeMode;
use outrun_config::{BernoulliMode, Config, StragglerConfig, TraceTimes};

/// Default extra-delay factor (the thesis's 3× sleep).
pub const DEFAULT_FACTOR: f64 = 3.0;

/// The time law or fault of a run, with per-worker parameters resolved (index 0 = worker 1).
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(tag = "model", rename_all = "kebab-case")]
pub enum Law {
    /// No injected delay.
    None,
    /// Listed workers are slower by `factor` × the base time from iteration `from` on.
    Fixed {
        /// Worker ids.
        workers: Vec<usize>,
        /// Extra delay factor.
        factor: f64,
        /// First iteration.
        from: u64,
    },
    /// Each worker is slower by `factor` × the base time with probability `p`.
    Bernoulli {
        /// Probability.
        p: f64,
        /// Extra delay factor.
        factor: f64,
        /// Per iteration or once.
        mode: BernoulliMode,
        /// First iteration.
        from: u64,
    },
    /// `a·load + (load/μ)·E`.
    ShiftedExp {
        /// Shift per point, per worker.
        a: Vec<f64>,
        /// Rate, per worker.
        mu: Vec<f64>,
    },
    /// `a·load + (load/μ)·W`, W Weibull.
    Weibull {
        /// Shift per point, per worker.
        a: Vec<f64>,
        /// Rate, per worker.
        mu: Vec<f64>,
        /// Weibull shape, per worker.
        shape: Vec<f64>,
    },
    /// Listed workers never answer from iteration `from` on.
    FailStop {
        /// Worker ids.
        workers: Vec<usize>,
        /// First iteration.
        from: u64,
    },
    /// Two-state Markov process per worker.
    Markov {
        /// Switching probability per iteration.
        p: f64,
        /// Shift per point, per worker.
        a: Vec<f64>,
        /// Slow-state rate, per worker.
        mu_slow: Vec<f64>,
        /// Fast-state rate, per worker.
        mu_fast: Vec<f64>,
        /// Workers slow in the initial state S⁰ (before iteration 0's transition).
        initial: Vec<usize>,
        /// The initial set was drawn at random (`initial_slow`): trials redraw it with their seed.
        #[serde(default)]
        drawn: bool,
        /// Heterogeneous workers: the fast rates were drawn uniformly in [0, max] and the slow
        /// ones are a factor lower (`(max, factor)`); trials redraw them with their seed.
        #[serde(default, skip_serializing_if = "Option::is_none")]
        drawn_rates: Option<(f64, f64)>,
    },
    /// Time-varying rates: each worker's rate is redrawn uniformly in [0, mu_max] with
    /// probability p at the start of every iteration; straggler while below tau.
    Rates {
        /// Redraw probability per iteration.
        p: f64,
        /// Shift per point, per worker.
        a: Vec<f64>,
        /// Largest rate.
        mu_max: f64,
        /// Straggler threshold.
        tau: f64,
        /// Workers starting below tau.
        initial: Vec<usize>,
        /// The initial set was drawn (`initial_slow`).
        #[serde(default)]
        drawn: bool,
    },
    /// A recorded trace: worker w's value at iteration t is `times[w − 1][t]` (modulo its
    /// length with `cycle`), a compute time or a delay added to the base time.
    Trace {
        /// Per worker, one value per iteration (seconds).
        times: Vec<Vec<f64>>,
        /// The values are delays added to the base time (false: compute times).
        delay: bool,
        /// Replay from the start past the trace's end.
        cycle: bool,
    },
}

/// A traced value is a straggler's when it exceeds this multiple of the iteration's median
/// over the workers.
pub const TRACE_STRAGGLER: f64 = 2.0;

/// The straggler model of a run (built from `[stragglers]` and `[timing]`).
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct StragglerModel {
    /// Seed of every draw.
    pub seed: u64,
    /// The law.
    pub law: Law,
    /// Real or modelled base time.
    pub compute: ComputeMode,
    /// Seconds per point of the modelled base time.
    pub base_a: f64,
    /// Seconds per point of a computing master's modelled time (`timing.master_a`; None:
    /// `base_a`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub master_a: Option<f64>,
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

impl StragglerModel {
    /// The model of `cfg` (per-worker parameters must be resolved: no parameter file left).
    pub fn from_config(cfg: &Config) -> Self {
        let n = cfg.workers();
        let law = match &cfg.stragglers {
            StragglerConfig::None => Law::None,
            StragglerConfig::Fixed(l) => Law::Fixed {
                workers: l.workers.clone(),
                factor: l.factor.unwrap_or(DEFAULT_FACTOR),
                from: l.from_iteration,
            },
            StragglerConfig::FailStop(l) => Law::FailStop { workers: l.workers.clone(), from: l.from_iteration },
            StragglerConfig::Bernoulli(b) => Law::Bernoulli {
                p: b.p,
                factor: b.factor.unwrap_or(DEFAULT_FACTOR),
                mode: b.mode,
                from: b.from_iteration,
            },
            StragglerConfig::ShiftedExp(l) => Law::ShiftedExp { a: values(&l.a, n), mu: values(&l.mu, n) },
            StragglerConfig::Weibull(l) => {
                Law::Weibull { a: values(&l.a, n), mu: values(&l.mu, n), shape: values(&l.shape, n) }
            }
            StragglerConfig::Markov(m) => {
                let initial = match (&m.initial, m.initial_slow) {
                    (Some(list), _) => list.clone(),
                    (None, Some(k)) => initial_slow(cfg.run.seed, n, k),
                    (None, None) => vec![],
                };
                let drawn = m.initial.is_none() && m.initial_slow.is_some();
                let drawn_rates = m.mu_fast_max.map(|max| (max, m.slow_factor.unwrap_or(1.0)));
                let (mu_slow, mu_fast) = match drawn_rates {
                    Some((max, factor)) => drawn_markov_rates(cfg.run.seed, n, max, factor),
                    None => (
                        m.mu_slow.as_ref().map_or_else(|| vec![1.0; n], |v| v.values(n)),
                        m.mu_fast.as_ref().map_or_else(|| vec![1.0; n], |v| v.values(n)),
                    ),
                };
                Law::Markov { p: m.p, a: m.a.values(n), mu_slow, mu_fast, initial, drawn, drawn_rates }
            }
            StragglerConfig::Trace(t) => {
                Law::Trace { times: t.delays.clone(), delay: t.times == TraceTimes::Delay, cycle: t.cycle }
            }
            StragglerConfig::Rates(m) => {
                let initial = match (&m.initial, m.initial_slow) {
                    (Some(list), _) => list.clone(),
                    (None, Some(k)) => initial_slow(cfg.run.seed, n, k),
                    (None, None) => vec![],
                };
                Law::Rates {
                    p: m.p,
                    a: m.a.values(n),
                    mu_max: m.mu_max,
                    tau: m.tau,
                    initial,
                    drawn: m.initial.is_none() && m.initial_slow.is_some(),
                }
            }
        };
        StragglerModel {
            seed: cfg.run.seed,
            law,
            compute: cfg.timing.compute,
            base_a: cfg.timing.a,
            master_a: cfg.timing.master_a,
        }
    }

    /// The same model with another seed (the simulator's independent trials).
    pub fn reseeded(&self, seed: u64) -> Self {
        let mut m = self.clone();
        m.seed = seed;
        match &mut m.law {
            Law::Markov { initial, drawn, a, drawn_rates, mu_slow, mu_fast, .. } => {
                let n = a.len();
                if *drawn {
                    *initial = initial_slow(seed, n, initial.len());
                }
                if let Some((max, factor)) = *drawn_rates {
                    (*mu_slow, *mu_fast) = drawn_markov_rates(seed, n, max, factor);
                }
            }
            Law::Rates { initial, drawn: true, a, .. } => *initial = initial_slow(seed, a.len(), initial.len()),
            _ => {}
        }
        m
    }

    /// The config spelling of the law.
    pub fn name(&self) -> &'static str {
        match self.law {
            Law::None => "none",
            Law::Fixed { .. } => "fixed",
            Law::Bernoulli { .. } => "bernoulli",
            Law::ShiftedExp { .. } => "shifted-exp",
            Law::Weibull { .. } => "weibull",
            Law::FailStop { .. } => "fail-stop",
            Law::Markov { .. } => "markov",
            Law::Rates { .. } => "rates",
            Law::Trace { .. } => "trace",
        }
    }

    /// A trace's value of `worker` at `iteration`, and whether it is a straggler's (above
    /// [`TRACE_STRAGGLER`] × the iteration's median over the workers); None for other laws.
    pub fn traced(&self, worker: usize, iteration: u64) -> Option<(f64, bool)> {
        let Law::Trace { times, cycle, .. } = &self.law else { return None };
        let len = times.first().map_or(0, Vec::len) as u64;
        let t = if *cycle { iteration % len.max(1) } else { iteration.min(len.saturating_sub(1)) } as usize;
        let v = times[worker.saturating_sub(1)][t];
        let mut row: Vec<f64> = times.iter().map(|w| w[t]).collect();
        row.sort_by(f64::total_cmp);
        let median = row[row.len() / 2];
        Some((v, v > 0.0 && v > TRACE_STRAGGLER * median))
    }

    fn stream(&self, worker: usize, iteration: u64) -> Rng {
        Rng::from_key(&[self.seed, domain::STRAGGLER, worker as u64, iteration])
    }

    /// Whether worker `w` never answers iteration `t` (fail-stop).
    pub fn is_dead(&self, worker: usize, iteration: u64) -> bool {
        matches!(&self.law, Law::FailStop { workers, from } if iteration >= *from && workers.contains(&worker))
    }

    /// A stateful evaluator of this model.
    pub fn injector(&self) -> Injector {
        Injector { model: self.clone(), cursors: Default::default() }
    }

    /// Mean compute time of worker `w` with `load` points under this model when the base time
    /// is `base` seconds (for plans and reports).
    pub fn mean_time(&self, worker: usize, load: usize, base: f64) -> f64 {
        let l = load as f64;
        let i = worker.saturating_sub(1);
        match &self.law {
            Law::ShiftedExp { a, mu } => a[i] * l + l / mu[i],
            Law::Weibull { a, mu, shape } => a[i] * l + l / mu[i] * libm::tgamma(1.0 + 1.0 / shape[i]),
            Law::Bernoulli { p, factor, .. } => base * (1.0 + p * factor),
            Law::Markov { a, mu_slow, mu_fast, .. } => l * (a[i] + 0.5 / mu_slow[i] + 0.5 / mu_fast[i]),
            // E[1/μ] is infinite for μ uniform from 0: the mean is unbounded; this is the time at
            // the median rate
            Law::Rates { a, mu_max, .. } => l * (a[i] + 2.0 / mu_max),
            Law::Trace { times, delay, .. } => {
                let w = &times[i];
                let mean = w.iter().sum::<f64>() / w.len().max(1) as f64;
                if *delay {
                    base + mean
                } else {
                    mean
                }
            }
            _ => base,
        }
    }

    /// Whether a worker's compute time starts from the base time (`timing.a` per point when
    /// modelled, the measured time when real): false where the law gives the whole time itself
    /// (shifted-exp, weibull, markov, rates, a trace that replaces the time).
    pub fn uses_base_time(&self) -> bool {
        !matches!(
            self.law,
            Law::ShiftedExp { .. }
                | Law::Weibull { .. }
                | Law::Markov { .. }
                | Law::Rates { .. }
                | Law::Trace { delay: false, .. }
        )
    }

    /// One line for `outrun plan`.
    pub fn describe(&self) -> String {
        let from = |f: u64| if f > 0 { format!(" from iteration {f}") } else { String::new() };
        let per = |v: &[f64]| match v.first() {
            Some(&x) if v.iter().all(|&y| y == x) => format!("{x}"),
            _ => format!("{v:?}"),
        };
        let text = match &self.law {
            Law::None => "none".into(),
            Law::Fixed { workers, factor, from: f } => format!("fixed: workers {workers:?} add {factor}× their compute time{}", from(*f)),
            Law::Bernoulli { p, factor, mode, from: f } => format!(
                "bernoulli: each worker with p = {p} ({}) adds {factor}× its compute time{}",
                if *mode == BernoulliMode::Once { "once per run" } else { "per iteration" },
                from(*f)
            ),
            Law::ShiftedExp { a, mu } => format!("shifted-exp: time = {}·load + Exp(rate {}/load) seconds", per(a), per(mu)),
            Law::Weibull { a, mu, shape } => format!("weibull: time = {}·load + (load/{})·Weibull(shape {}) seconds", per(a), per(mu), per(shape)),
            Law::FailStop { workers, from: f } => format!("fail-stop: workers {workers:?} never answer{}", from(*f)),
            Law::Markov { p, a, mu_slow, mu_fast, initial, .. } => format!(
                "markov: each worker switches fast/slow with p = {p} per iteration; time = load·({} + Exp/μ), μ = {} slow, {} fast; initially slow: {initial:?}",
                per(a),
                per(mu_slow),
                per(mu_fast)
            ),
            Law::Rates { p, a, mu_max, tau, initial, .. } => format!(
                "rates: each worker's rate μ is redrawn uniformly in [0, {mu_max}] with p = {p} per iteration; time = load·({} + Exp/μ); straggler while μ < {tau}; initially below: {initial:?}",
                per(a)
            ),
            Law::Trace { times, delay, cycle } => format!(
                "trace: recorded {} of {} workers over {} iterations{}",
                if *delay { "delays added to the compute times" } else { "compute times" },
                times.len(),
                times.first().map_or(0, Vec::len),
                if *cycle { ", replayed cyclically" } else { "" }
            ),
        };
        format!("{text} [{}; seed {}]", self.name(), self.seed)
    }
}

/// Heterogeneous two-state rates: μ_fast uniform in [0, max] per worker, μ_slow = μ_fast / factor
/// (bounded below by 1e-9 so a draw of 0 is not an infinite time).
fn drawn_markov_rates(seed: u64, n: usize, max: f64, factor: f64) -> (Vec<f64>, Vec<f64>) {
    let fast: Vec<f64> = (1..=n)
        .map(|w| (max * Rng::from_key(&[seed, domain::PROCESS, w as u64, u64::MAX - 1]).uniform()).max(1e-9))
        .collect();
    (fast.iter().map(|f| (f / factor).max(1e-9)).collect(), fast)
}

/// `k` of the `n` workers (1-based), drawn from `seed`: the initially slow ones.
fn initial_slow(seed: u64, n: usize, k: usize) -> Vec<usize> {
    Rng::from_key(&[seed, domain::PROCESS, u64::MAX]).choose(n, k).into_iter().map(|i| i + 1).collect()
}

fn values(v: &Option<outrun_config::PerWorker>, n: usize) -> Vec<f64> {
    v.as_ref().map_or_else(|| vec![0.0; n], |p| p.values(n))
}

/// A worker's state in a stateful process: slow or fast (`markov`), or its rate (`rates`).
#[derive(Clone, Copy, Debug)]
enum State {
    Slow(bool),
    Rate(f64),
}

/// Where a worker's process is: its state during `iteration`.
#[derive(Clone, Copy, Debug)]
struct Cursor {
    iteration: u64,
    state: State,
}

/// Evaluates a [`StragglerModel`], stepping stateful processes forward as iterations are asked
/// for (asking for an earlier iteration restarts that worker's chain from its initial state).
#[derive(Clone, Debug)]
pub struct Injector {
    model: StragglerModel,
    cursors: std::collections::HashMap<usize, Cursor>,
}

impl Injector {
    /// The model evaluated.
    pub fn model(&self) -> &StragglerModel {
        &self.model
    }

    /// Whether worker `w` is in the slow state during iteration `t` (`markov`): the initial
    /// state S⁰ followed by t + 1 transitions, one at the start of every iteration.
    pub fn is_slow(&mut self, worker: usize, t: u64) -> bool {
        let Law::Markov { p, initial, .. } = &self.model.law else { return false };
        let (p, seed, slow0) = (*p, self.model.seed, initial.contains(&worker));
        let step = |s: State, i: u64| match s {
            State::Slow(slow) => State::Slow(flip(slow, seed, worker, i, p)),
            rate => rate,
        };
        matches!(self.walk(worker, t, State::Slow(slow0), step), State::Slow(true))
    }

    /// Worker `worker`'s state at iteration `t`: from its cursor if it is not past `t`, else
    /// from `initial` (the state before iteration 0), stepping `step(state, i)` for every
    /// iteration i up to t (iteration 0 included).
    fn walk(&mut self, worker: usize, t: u64, initial: State, step: impl Fn(State, u64) -> State) -> State {
        let mut c = match self.cursors.get(&worker) {
            Some(c) if c.iteration <= t => *c,
            _ => Cursor { iteration: 0, state: step(initial, 0) },
        };
        while c.iteration < t {
            c.iteration += 1;
            c.state = step(c.state, c.iteration);
        }
        self.cursors.insert(worker, c);
        c.state
    }

    /// The rate worker `worker` starts from (`rates`), before iteration 0's redraw chance: below
    /// tau for the initially slow workers, at least tau for the others (not yet floored at 1e-9).
    fn initial_rate(&self, worker: usize) -> f64 {
        let Law::Rates { mu_max, tau, initial, .. } = &self.model.law else { return f64::NAN };
        let u = Rng::from_key(&[self.model.seed, domain::PROCESS, worker as u64, u64::MAX - 2]).uniform();
        if initial.contains(&worker) {
            tau * u
        } else {
            tau + (mu_max - tau) * u
        }
    }

    /// Worker `worker`'s rate during iteration `t` (`rates`): the initial rate (below tau for the
    /// initially slow workers) followed by t + 1 chances to be redrawn, one at the start of every
    /// iteration.
    pub fn rate(&mut self, worker: usize, t: u64) -> f64 {
        let Law::Rates { p, mu_max, .. } = &self.model.law else { return f64::NAN };
        let (p, max, seed, r0) = (*p, *mu_max, self.model.seed, self.initial_rate(worker).max(1e-9));
        let step = |s: State, i: u64| {
            let mut rng = Rng::from_key(&[seed, domain::PROCESS, worker as u64, i]);
            let redraw = rng.uniform() < p;
            let u = rng.uniform();
            match s {
                State::Rate(_) if redraw => State::Rate((max * u).max(1e-9)),
                other => other,
            }
        };
        match self.walk(worker, t, State::Rate(r0), step) {
            State::Rate(r) => r,
            State::Slow(_) => f64::NAN,
        }
    }

    /// Worker `worker`'s state at iteration `t`: whether it straggles, and its current rate μ
    /// (the two-state process's μ_slow or μ_fast; NaN for laws without a rate).
    pub fn state(&mut self, worker: usize, t: u64) -> (bool, f64) {
        if let Law::Markov { mu_slow, mu_fast, .. } = &self.model.law {
            let i = worker.saturating_sub(1);
            let (s, f) = (mu_slow[i], mu_fast[i]);
            let slow = self.is_slow(worker, t);
            return (slow, if slow { s } else { f });
        }
        if let Law::Rates { tau, .. } = self.model.law {
            let r = self.rate(worker, t);
            return (r < tau, r);
        }
        (self.is_straggler(worker, t) || self.model.is_dead(worker, t), f64::NAN)
    }

    /// Worker `worker`'s state before the first iteration (S⁰: the two-state process's initial
    /// state; not a straggler for other laws).
    pub fn initial_state(&self, worker: usize) -> (bool, f64) {
        match &self.model.law {
            Law::Markov { mu_slow, mu_fast, initial, .. } => {
                let i = worker.saturating_sub(1);
                let slow = initial.contains(&worker);
                (slow, if slow { mu_slow[i] } else { mu_fast[i] })
            }
            Law::Rates { tau, .. } => {
                let r = self.initial_rate(worker);
                (r < *tau, r.max(1e-9))
            }
            _ => (false, f64::NAN),
        }
    }

    /// Whether worker `w` is made slow at iteration `t` (fixed, bernoulli and markov models).
    pub fn is_straggler(&mut self, worker: usize, iteration: u64) -> bool {
        match &self.model.law {
            Law::Fixed { workers, from, .. } => iteration >= *from && workers.contains(&worker),
            Law::Bernoulli { p, mode, from, .. } => {
                let key = match mode {
                    BernoulliMode::PerIteration => iteration,
                    BernoulliMode::Once => u64::MAX,
                };
                iteration >= *from && self.model.stream(worker, key).uniform() < *p
            }
            Law::Markov { .. } => self.is_slow(worker, iteration),
            Law::Rates { tau, .. } => {
                let tau = *tau;
                self.rate(worker, iteration) < tau
            }
            Law::Trace { .. } => self.model.traced(worker, iteration).is_some_and(|(_, slow)| slow),
            _ => false,
        }
    }

    /// Compute time of worker `w` at iteration `t` with `load` points (in units of a point of a
    /// full-batch linear model: `Job::work`), given the measured time of the real computation.
    /// Worker 0, a master that computes (a federated server's guiding updates), is not a worker
    /// of the straggler model: it takes its base time (measured, or `timing.master_a` — by default
    /// `timing.a` — per unit).
    pub fn compute_time(&mut self, worker: usize, iteration: u64, load: f64, measured: f64) -> ComputeTime {
        if worker == 0 {
            let base = match self.model.compute {
                ComputeMode::Real => measured,
                ComputeMode::Modelled => self.model.master_a.unwrap_or(self.model.base_a) * load,
            };
            return ComputeTime { target: base, injected: 0.0, straggler: false };
        }
        let i = worker - 1;
        let l = load;
        let laws = match &self.model.law {
            Law::ShiftedExp { a, mu } => Some((a[i], mu[i], 1.0)),
            Law::Weibull { a, mu, shape } => Some((a[i], mu[i], shape[i])),
            _ => None,
        };
        if let Some((a, mu, k)) = laws {
            // one Exp(1) draw per (worker, iteration); Weibull(k, 1) = Exp(1)^(1/k)
            let e = self.model.stream(worker, iteration).exp1();
            let w = if k == 1.0 { e } else { libm::pow(e, 1.0 / k) };
            let tail = if load == 0.0 { 0.0 } else { l / mu * w };
            return ComputeTime { target: a * l + tail, injected: tail, straggler: false };
        }
        if let Law::Markov { a, mu_slow, mu_fast, .. } = &self.model.law {
            let (a, slow_mu, fast_mu) = (a[i], mu_slow[i], mu_fast[i]);
            let slow = self.is_slow(worker, iteration);
            let e = self.model.stream(worker, iteration).exp1();
            let tail = l * e / if slow { slow_mu } else { fast_mu };
            return ComputeTime { target: a * l + tail, injected: tail, straggler: slow };
        }
        if let Law::Rates { a, tau, .. } = &self.model.law {
            let (a, tau) = (a[i], *tau);
            let mu = self.rate(worker, iteration);
            let e = self.model.stream(worker, iteration).exp1();
            let tail = l * e / mu;
            return ComputeTime { target: a * l + tail, injected: tail, straggler: mu < tau };
        }
        let base = match self.model.compute {
            ComputeMode::Real => measured,
            ComputeMode::Modelled => self.model.base_a * l,
        };
        if let (Some((v, straggler)), Law::Trace { delay, .. }) =
            (self.model.traced(worker, iteration), &self.model.law)
        {
            return match delay {
                true => ComputeTime { target: base + v, injected: v, straggler },
                false => ComputeTime { target: v, injected: (v - base).max(0.0), straggler },
            };
        }
        let straggler = self.is_straggler(worker, iteration);
        let factor = match &self.model.law {
            Law::Fixed { factor, .. } | Law::Bernoulli { factor, .. } => *factor,
            _ => 0.0,
        };
        let injected = if straggler { factor * base } else { 0.0 };
        ComputeTime { target: base + injected, injected, straggler }
    }
}

/// The state after one transition: switch with probability `p`.
fn flip(slow: bool, seed: u64, worker: usize, iteration: u64, p: f64) -> bool {
    let switch = Rng::from_key(&[seed, domain::PROCESS, worker as u64, iteration]).uniform() < p;
    slow ^ switch
}

#[cfg(test)]
mod tests {
    use super::*;
    use outrun_config::parse;

    fn model(extra: &[&str]) -> StragglerModel {
        let base = "[run]\nname='t'\niterations=3\n[data]\nkind='linear-synthetic'\nsamples=90\nfeatures=3\n[model]\nloss='least-squares'\nlr=0.1\n[scheme]\nkind='ignore'\nworkers=9\ns=2\n";
        StragglerModel::from_config(&parse(base, &extra.iter().map(|s| s.to_string()).collect::<Vec<_>>()).unwrap())
    }

    #[test]
    fn a_trace_gives_its_values_cycles_and_marks_stragglers_by_the_median() {
        let mut m = model(&[]);
        m.law = Law::Trace { times: vec![vec![1.0, 2.0], vec![1.0, 2.0], vec![5.0, 2.1]], delay: false, cycle: true };
        let mut inj = m.injector();
        let c = inj.compute_time(3, 0, 10.0, 0.0);
        assert_eq!((c.target, c.straggler), (5.0, true));
        assert_eq!(inj.compute_time(3, 3, 10.0, 0.0).target, 2.1);
        assert!(!inj.compute_time(3, 3, 10.0, 0.0).straggler);
        assert_eq!(inj.compute_time(1, 2, 10.0, 0.0).target, 1.0);
        m.law = Law::Trace { times: vec![vec![0.5], vec![0.0], vec![0.0]], delay: true, cycle: false };
        let c = m.injector().compute_time(1, 0, 10.0, 0.25);
        assert_eq!((c.target, c.injected, c.straggler), (0.25 + 0.5, 0.5, true));
        // real timing: measured + delay
    }

    #[test]
    fn fixed_and_fail_stop_follow_the_lists() {
        let mut m = model(&[
            "stragglers.model=fixed",
            "stragglers.workers=[2, 5]",
            "stragglers.factor=4",
            "stragglers.from_iteration=1",
        ])
        .injector();
        assert!(!m.is_straggler(2, 0));
        assert!(m.is_straggler(2, 1) && m.is_straggler(5, 7) && !m.is_straggler(3, 7));
        let t = m.compute_time(5, 3, 10.0, 0.5);
        assert_eq!((t.target, t.injected, t.straggler), (2.5, 2.0, true));
        let d = model(&["stragglers.model=fail-stop", "stragglers.workers=[9]", "stragglers.from_iteration=2"]);
        assert!(!d.is_dead(9, 1) && d.is_dead(9, 2) && !d.is_dead(8, 2));
    }

    #[test]
    fn bernoulli_is_reproducible_and_has_the_right_rate() {
        let m = model(&["stragglers.model=bernoulli", "stragglers.p=0.3"]);
        let (mut a, mut b) = (m.injector(), m.injector());
        let n = (0..2000u64).filter(|&t| a.is_straggler(3, t)).count();
        assert!((500..700).contains(&n), "{n}");
        assert!((0..100u64).all(|t| a.is_straggler(4, t) == b.is_straggler(4, t)));
        let mut once = model(&["stragglers.model=bernoulli", "stragglers.p=0.5", "stragglers.mode=once"]).injector();
        for w in 1..=9 {
            let first = once.is_straggler(w, 0);
            assert!((0..50u64).all(|t| once.is_straggler(w, t) == first));
        }
    }

    #[test]
    fn shifted_exponential_mean_and_per_worker_rates() {
        let m = model(&[
            "timing.compute=modelled",
            "stragglers.model=shifted-exp",
            "stragglers.a=1e-3",
            "stragglers.mu=[1e3, 1e3, 1e3, 1e3, 1e3, 1e3, 1e3, 1e3, 1e2]",
        ]);
        let mut inj = m.injector();
        let n = 20_000;
        let mean = |inj: &mut Injector, w: usize| {
            (0..n).map(|t| inj.compute_time(w, t, 10.0, 0.0).target).sum::<f64>() / n as f64
        };
        let (fast, slow) = (mean(&mut inj, 1), mean(&mut inj, 9));
        assert!((fast - m.mean_time(1, 10, 0.0)).abs() < 0.03 * m.mean_time(1, 10, 0.0), "{fast}");
        assert!((slow - m.mean_time(9, 10, 0.0)).abs() < 0.03 * m.mean_time(9, 10, 0.0), "{slow}");
        assert!((m.mean_time(9, 10, 0.0) - (0.01 + 0.1)).abs() < 1e-12);
    }

    /// The Markov chain: the stationary fraction of slow workers is 1/2, sojourns last 1/p on
    /// average, and two injectors (engine rank and simulator) see the same sequence whatever
    /// order they ask in.
    #[test]
    fn markov_chain_statistics_and_reproducibility() {
        let m = model(&[
            "timing.compute=modelled",
            "stragglers.model=markov",
            "stragglers.p=0.05",
            "stragglers.a=1e-4",
            "stragglers.mu_slow=10",
            "stragglers.mu_fast=1000",
            "stragglers.initial_slow=4",
        ]);
        let Law::Markov { initial, .. } = &m.law else { panic!() };
        assert_eq!(initial.len(), 4);
        let mut a = m.injector();
        let t_max = 20_000u64;
        let seq: Vec<bool> = (0..t_max).map(|t| a.is_slow(3, t)).collect();
        let frac = seq.iter().filter(|&&s| s).count() as f64 / t_max as f64;
        assert!((frac - 0.5).abs() < 0.08, "slow fraction {frac}");
        let switches = seq.windows(2).filter(|w| w[0] != w[1]).count() as f64;
        assert!((switches / t_max as f64 - 0.05).abs() < 0.01, "switch rate {}", switches / t_max as f64);
        let mut b = m.injector();
        assert_eq!(b.is_slow(3, 777), seq[777], "jumping ahead gives the same state");
        assert_eq!(b.is_slow(3, 10), seq[10], "going back restarts the chain");
        let ct = b.compute_time(3, 10, 100.0, 0.0);
        assert_eq!(ct.straggler, seq[10]);
        assert!(ct.target >= 1e-2);
    }

    /// Heterogeneous two-state rates are drawn per worker from the seed (a trial redraws them);
    /// time-varying rates are redrawn with probability p and spend τ/μ_max of the time below τ.
    #[test]
    fn drawn_and_time_varying_rates() {
        let het = model(&[
            "timing.compute=modelled",
            "stragglers.model=markov",
            "stragglers.p=0.05",
            "stragglers.a=1e-4",
            "stragglers.mu_fast_max=5",
            "stragglers.slow_factor=10",
        ]);
        let Law::Markov { mu_slow, mu_fast, .. } = &het.law else { panic!() };
        assert!(
            mu_fast.iter().all(|&f| (0.0..=5.0).contains(&f))
                && mu_fast.iter().zip(mu_slow).all(|(f, s)| (f / s - 10.0).abs() < 1e-9)
        );
        let Law::Markov { mu_fast: other, .. } = &het.reseeded(99).law else { panic!() };
        assert_ne!(mu_fast, other, "a trial redraws the rates");

        let m = model(&[
            "timing.compute=modelled",
            "stragglers.model=rates",
            "stragglers.p=0.05",
            "stragglers.a=1e-4",
            "stragglers.mu_max=5",
            "stragglers.tau=1",
            "stragglers.initial_slow=9",
        ]);
        let mut inj = m.injector();
        let t_max = 20_000u64;
        let seq: Vec<f64> = (0..t_max).map(|t| inj.rate(2, t)).collect();
        assert!(inj.initial_state(2).0, "every worker starts below tau");
        let below = seq.iter().filter(|&&r| r < 1.0).count() as f64 / t_max as f64;
        assert!((below - 0.2).abs() < 0.05, "fraction below tau {below}");
        let changes = seq.windows(2).filter(|w| w[0] != w[1]).count() as f64 / t_max as f64;
        assert!((changes - 0.05).abs() < 0.01, "redraw rate {changes}");
        let mut again = m.injector();
        assert_eq!(again.rate(2, 5000), seq[5000]);
        assert_eq!(again.state(2, 10), (seq[10] < 1.0, seq[10]));
        let ct = again.compute_time(2, 10, 100.0, 0.0);
        assert_eq!(ct.straggler, seq[10] < 1.0);
    }
}
