//! Straggler laws fitted to a run's compute times (`outrun fit`).
//!
//! Every worker's iteration record holds its compute time (`target`: the modelled or measured
//! time until its result may be used, injected delay included) and the load the straggler model
//! scaled by (`load`). Per point, `x = target / load`, and the laws of `[stragglers]` read:
//!
//! - **shifted exponential**: `x = a + E/μ`, E ~ Exp(1). Unbiased estimates from the minimum
//!   and the mean: scale `σ = n/(n−1)·(mean − min)`, `a = min − σ/n`, `μ = 1/σ`;
//! - **Weibull**: `x = a + W/μ`, W ~ Weibull(k, 1), with the same shift; k by maximum likelihood
//!   (bisection on the score), then `1/μ = (mean (x − a)^k)^(1/k)`;
//! - **two-state Markov** (GC-DC's model (A)): each worker fast or slow, switching with one
//!   probability p per iteration, `x = a + E/μ_state`: a hidden Markov model fitted by
//!   expectation–maximisation (Baum–Welch with scaled forward–backward passes; p pooled over the
//!   workers, the rates per worker, the shift at the worker's minimum).
//!
//! Each fit's Kolmogorov–Smirnov distance (sup |F_empirical − F_fit|) says how well it describes
//! the times (the Markov model's marginal is its two states' mixture); [`section`] writes the
//! `[stragglers]` section of a law for a config to paste.

use std::collections::{BTreeMap, HashMap};

use outrun_runlog::event::Event;
use serde::Serialize;

/// A law's parameters fitted to one worker's per-point times.
#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct Law {
    /// Shift a, seconds per point.
    pub a: f64,
    /// Rate μ, points per second.
    pub mu: f64,
    /// Weibull shape k (1 for the exponential).
    pub shape: f64,
    /// Kolmogorov–Smirnov distance to the worker's times.
    pub ks: f64,
}

/// One worker's two-state fit (the switching probability is the run's).
#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct States {
    /// Shift a, seconds per point.
    pub a: f64,
    /// Fast-state rate.
    pub mu_fast: f64,
    /// Slow-state rate.
    pub mu_slow: f64,
    /// The worker was more likely slow than fast in its first iteration.
    pub slow_first: bool,
    /// Fraction of iterations spent slow.
    pub slow_share: f64,
    /// Kolmogorov–Smirnov distance of the two states' mixture.
    pub ks: f64,
}

/// One worker's fits.
#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct WorkerFit {
    /// Worker id.
    pub worker: usize,
    /// Compute times used.
    pub n: usize,
    /// Shifted exponential.
    pub shifted_exp: Law,
    /// Weibull.
    pub weibull: Law,
    /// Two-state Markov.
    pub markov: States,
    /// Every time the same, to round-off: the laws are a point mass at it (each rate
    /// [`CONSTANT_RATE`], no random part; distance 0).
    pub constant: bool,
}

/// A run's fits.
#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct Fit {
    /// Per worker, by id.
    pub workers: Vec<WorkerFit>,
    /// The Markov model's switching probability per iteration (pooled over the workers).
    pub p: f64,
}

/// The laws `outrun fit` can print a section for.
pub const LAWS: &[&str] = &["shifted-exp", "weibull", "markov"];

/// Fewest compute times per worker a fit is made from.
pub const MIN_SAMPLES: usize = 20;

/// The rate written for a worker whose times are all the same: `[stragglers]` takes finite
/// rates, and `E/μ` at this one is nothing beside any shift.
pub const CONSTANT_RATE: f64 = 1e300;

/// Whether `x` holds one value, to round-off (a spread of at most 1e−9 of its largest): the
/// modelled times of a deterministic straggler model (`fixed`, none, a `bernoulli` worker never
/// slow).
fn is_constant(x: &[f64]) -> bool {
    let (min, max) = x.iter().fold((f64::INFINITY, f64::NEG_INFINITY), |(lo, hi), &v| (lo.min(v), hi.max(v)));
    max - min <= 1e-9 * max.abs()
}

impl Fit {
    /// Mean Kolmogorov–Smirnov distance of `law` over the workers.
    pub fn mean_ks(&self, law: &str) -> f64 {
        let ks = |w: &WorkerFit| match law {
            "shifted-exp" => w.shifted_exp.ks,
            "weibull" => w.weibull.ks,
            _ => w.markov.ks,
        };
        self.workers.iter().map(ks).sum::<f64>() / self.workers.len() as f64
    }

    /// The simplest law the times do not reject: the first of [`LAWS`] (fewest parameters
    /// first) whose mean distance is within the Kolmogorov–Smirnov test's 5 % critical value
    /// 1.36/√n (averaged over the workers); if every law is rejected, the closest.
    pub fn best(&self) -> &'static str {
        self.accepted().unwrap_or_else(|| {
            LAWS.iter().copied().min_by(|a, b| self.mean_ks(a).total_cmp(&self.mean_ks(b))).expect("laws")
        })
    }

    /// The simplest law within the critical value, if any is.
    pub fn accepted(&self) -> Option<&'static str> {
        let critical = self.critical();
        LAWS.iter().copied().find(|l| self.mean_ks(l) <= critical)
    }

    /// The Kolmogorov–Smirnov test's 5 % critical value 1.36/√n, averaged over the workers.
    pub fn critical(&self) -> f64 {
        self.workers.iter().map(|w| 1.36 / (w.n as f64).sqrt()).sum::<f64>() / self.workers.len() as f64
    }
}

/// Why a run's logs hold nothing to fit, where they say so themselves: a PageRank run's servers
/// log their phases' times, not compute times with the load a straggler law scales by.
pub fn unfittable(events: &HashMap<usize, Vec<Event>>) -> Option<&'static str> {
    events.values().flatten().any(|e| matches!(e, Event::Iteration(_))).then_some(
        "a PageRank run: its servers log their phases' times (phases.csv), not compute times with a load, which is what outrun fit fits (the workers of every other job); `outrun blame` names the server the others waited for",
    )
}

/// Each worker's per-point compute times (`target / load`) in iteration order, from a run's
/// rank logs.
pub fn samples(events: &HashMap<usize, Vec<Event>>) -> BTreeMap<usize, Vec<f64>> {
    compute_times(events)
        .into_iter()
        .map(|(w, by_t)| {
            let x = by_t.into_values().filter_map(|(t, l)| l.filter(|&l| l > 0.0 && t.is_finite()).map(|l| t / l));
            (w, x.collect())
        })
        .collect()
}

/// Each worker's compute time (`target`) and load per iteration, from its iteration records
/// (the first record of an iteration, if it logged several).
fn compute_times(events: &HashMap<usize, Vec<Event>>) -> BTreeMap<usize, BTreeMap<u64, (f64, Option<f64>)>> {
    let mut by: BTreeMap<usize, BTreeMap<u64, (f64, Option<f64>)>> = BTreeMap::new();
    for e in events.values().flatten() {
        if let Event::Iter(i) = e {
            if let (Some(w), Some(t)) = (i.worker, i.compute.target) {
                by.entry(w).or_default().entry(i.t).or_insert((t, i.compute.load));
            }
        }
    }
    by
}

/// The run's compute times as a trace (`worker,iteration,seconds` lines, the format of
/// `[stragglers] model = "trace"` with `times = "compute"`): every worker's `target` per
/// iteration, for the iterations every worker logged. Replayed, each worker takes the seconds it
/// took in this run, whatever its load in the replaying scheme.
pub fn trace_csv(events: &HashMap<usize, Vec<Event>>) -> Result<String, String> {
    let by = compute_times(events);
    // the iterations 0..T that every worker logged
    let len = (0..).take_while(|t| by.values().all(|m| m.contains_key(t))).count() as u64;
    if by.is_empty() || len == 0 {
        return Err("no worker logged a compute time for iteration 0".into());
    }
    let mut out = String::from("worker,iteration,seconds\n");
    for t in 0..len {
        for (w, m) in &by {
            out += &format!("{w},{t},{:e}\n", m[&t].0);
        }
    }
    Ok(out)
}

/// Fit every law to every worker's times (each worker needs [`MIN_SAMPLES`]).
pub fn fit(samples: &BTreeMap<usize, Vec<f64>>) -> Result<Fit, String> {
    if samples.is_empty() {
        return Err(
            "no worker logged compute times with their load (runs before outrun fit existed do not log the load)"
                .into(),
        );
    }
    if let Some((w, v)) = samples.iter().find(|(_, v)| v.len() < MIN_SAMPLES) {
        return Err(format!(
            "worker {w} logged {} compute times; a fit needs at least {MIN_SAMPLES} per worker (run more iterations)",
            v.len()
        ));
    }
    // a worker with one time has no random part to fit: a point mass, outside the Markov
    // model's pooled switching probability
    let varying: BTreeMap<usize, Vec<f64>> =
        samples.iter().filter(|(_, x)| !is_constant(x)).map(|(&w, x)| (w, x.clone())).collect();
    let (p, states) = if varying.is_empty() { (0.0, Vec::new()) } else { markov(&varying) };
    let mut states: BTreeMap<usize, States> = varying.keys().copied().zip(states).collect();
    let workers = samples
        .iter()
        .map(|(&worker, x)| match states.remove(&worker) {
            Some(markov) => WorkerFit {
                worker,
                n: x.len(),
                shifted_exp: shifted_exp(x),
                weibull: weibull(x),
                markov,
                constant: false,
            },
            None => {
                let a = x.iter().sum::<f64>() / x.len() as f64;
                let law = |shape| Law { a, mu: CONSTANT_RATE, shape, ks: 0.0 };
                WorkerFit {
                    worker,
                    n: x.len(),
                    shifted_exp: law(1.0),
                    weibull: law(1.0),
                    markov: States {
                        a,
                        mu_fast: CONSTANT_RATE,
                        mu_slow: CONSTANT_RATE,
                        slow_first: false,
                        slow_share: 0.0,
                        ks: 0.0,
                    },
                    constant: true,
                }
            }
        })
        .collect();
    Ok(Fit { workers, p })
}

fn shifted_exp(x: &[f64]) -> Law {
    let (a, scale) = shift_and_scale(x);
    let mu = 1.0 / scale;
    Law { a, mu, shape: 1.0, ks: ks(x, |v| exp_cdf(v - a, mu)) }
}

/// The unbiased shifted-exponential shift and scale.
fn shift_and_scale(x: &[f64]) -> (f64, f64) {
    let n = x.len() as f64;
    let min = x.iter().copied().fold(f64::INFINITY, f64::min);
    let mean = x.iter().sum::<f64>() / n;
    let scale = (n / (n - 1.0) * (mean - min)).max(f64::MIN_POSITIVE);
    ((min - scale / n).max(0.0), scale)
}

fn weibull(x: &[f64]) -> Law {
    let (a, _) = shift_and_scale(x);
    let y: Vec<f64> = x.iter().map(|v| (v - a).max(f64::MIN_POSITIVE)).collect();
    let mean_ln = y.iter().map(|v| v.ln()).sum::<f64>() / y.len() as f64;
    // the shape's score Σ y^k ln y / Σ y^k − 1/k − mean ln y is increasing in k
    let score = |k: f64| {
        let (mut s, mut sl) = (0.0, 0.0);
        for v in &y {
            let p = (k * (v.ln() - mean_ln)).exp(); // scaled to avoid overflow
            s += p;
            sl += p * v.ln();
        }
        sl / s - 1.0 / k - mean_ln
    };
    let (mut lo, mut hi) = (0.05_f64, 50.0_f64);
    for _ in 0..100 {
        let mid = (lo * hi).sqrt();
        if score(mid) > 0.0 {
            hi = mid;
        } else {
            lo = mid;
        }
    }
    let k = (lo * hi).sqrt();
    let scale =
        (y.iter().map(|v| ((v.ln() - mean_ln) * k).exp()).sum::<f64>() / y.len() as f64).powf(1.0 / k) * mean_ln.exp();
    let cdf = |v: f64| if v <= a { 0.0 } else { 1.0 - (-((v - a) / scale).powf(k)).exp() };
    Law { a, mu: 1.0 / scale, shape: k, ks: ks(x, cdf) }
}

fn exp_cdf(d: f64, mu: f64) -> f64 {
    if d <= 0.0 {
        0.0
    } else {
        1.0 - (-mu * d).exp()
    }
}

/// sup |F_n − F| over the sample.
fn ks(x: &[f64], cdf: impl Fn(f64) -> f64) -> f64 {
    let mut s = x.to_vec();
    s.sort_by(f64::total_cmp);
    let n = s.len() as f64;
    s.iter()
        .enumerate()
        .map(|(i, &v)| {
            let f = cdf(v);
            (f - i as f64 / n).abs().max(((i + 1) as f64 / n - f).abs())
        })
        .fold(0.0, f64::max)
}

/// One worker's two-state model during EM.
struct Hmm {
    a: f64,
    /// Rates of state 0 (fast) and 1 (slow).
    mu: [f64; 2],
    /// Posterior state probabilities per iteration.
    gamma: Vec<[f64; 2]>,
}

/// Baum–Welch for every worker at once, p shared: (p, each worker's states).
fn markov(samples: &BTreeMap<usize, Vec<f64>>) -> (f64, Vec<States>) {
    let mut models: Vec<Hmm> = samples.values().map(|x| init(x)).collect();
    let mut p = 0.1;
    for _ in 0..200 {
        let (mut switches, mut steps) = (0.0, 0.0);
        for (m, x) in models.iter_mut().zip(samples.values()) {
            let (s, n) = expect(m, x, p);
            switches += s;
            steps += n;
            // M-step: each state's rate from its expected time beyond the shift
            for k in 0..2 {
                let w: f64 = m.gamma.iter().map(|g| g[k]).sum();
                let d: f64 = m.gamma.iter().zip(x).map(|(g, v)| g[k] * (v - m.a)).sum();
                if w > 1e-9 && d > 0.0 {
                    m.mu[k] = w / d;
                }
            }
        }
        let next = (switches / steps.max(1.0)).clamp(1e-6, 0.5);
        let done = (next - p).abs() < 1e-9;
        p = next;
        if done {
            break;
        }
    }
    let states = models
        .into_iter()
        .zip(samples.values())
        .map(|(m, x)| {
            // state 0 is the faster one
            let (f, s) = if m.mu[0] >= m.mu[1] { (0, 1) } else { (1, 0) };
            let share = m.gamma.iter().map(|g| g[s]).sum::<f64>() / m.gamma.len() as f64;
            let cdf = |v: f64| (1.0 - share) * exp_cdf(v - m.a, m.mu[f]) + share * exp_cdf(v - m.a, m.mu[s]);
            States {
                a: m.a,
                mu_fast: m.mu[f],
                mu_slow: m.mu[s],
                slow_first: m.gamma[0][s] > 0.5,
                slow_share: share,
                ks: ks(x, cdf),
            }
        })
        .collect();
    (p, states)
}

/// The starting point: the shift at the minimum, the times split at their log-scale midpoint
/// (two means), each half's rate.
fn init(x: &[f64]) -> Hmm {
    let a = x.iter().copied().fold(f64::INFINITY, f64::min);
    let d: Vec<f64> = x.iter().map(|v| (v - a).max(f64::MIN_POSITIVE).ln()).collect();
    let (mut lo, mut hi) =
        (d.iter().copied().fold(f64::INFINITY, f64::min), d.iter().copied().fold(f64::NEG_INFINITY, f64::max));
    for _ in 0..50 {
        let cut = (lo + hi) / 2.0;
        let (l, h): (Vec<f64>, Vec<f64>) = d.iter().partition(|&&v| v < cut);
        if l.is_empty() || h.is_empty() {
            break;
        }
        (lo, hi) = (l.iter().sum::<f64>() / l.len() as f64, h.iter().sum::<f64>() / h.len() as f64);
    }
    let cut = (lo + hi) / 2.0;
    let rate = |slow: bool| {
        let sel: Vec<f64> = x.iter().zip(&d).filter(|(_, &l)| (l >= cut) == slow).map(|(v, _)| v - a).collect();
        let mean = sel.iter().sum::<f64>() / sel.len().max(1) as f64;
        if mean > 0.0 {
            1.0 / mean
        } else {
            1.0
        }
    };
    Hmm { a, mu: [rate(false), rate(true)], gamma: vec![[0.5, 0.5]; x.len()] }
}

/// E-step: posterior states (into `m.gamma`) by scaled forward–backward passes; returns the
/// expected switches and the transitions counted.
fn expect(m: &mut Hmm, x: &[f64], p: f64) -> (f64, f64) {
    let n = x.len();
    let emit = |v: f64| {
        let d = (v - m.a).max(0.0);
        [m.mu[0] * (-m.mu[0] * d).exp(), m.mu[1] * (-m.mu[1] * d).exp()]
    };
    let e: Vec<[f64; 2]> = x.iter().map(|&v| emit(v)).collect();
    let trans = |i: usize, j: usize| if i == j { 1.0 - p } else { p };
    let mut alpha = vec![[0.0; 2]; n];
    let mut scale = vec![0.0; n];
    for t in 0..n {
        for j in 0..2 {
            let prior = if t == 0 { 0.5 } else { (0..2).map(|i| alpha[t - 1][i] * trans(i, j)).sum() };
            alpha[t][j] = prior * e[t][j];
        }
        scale[t] = (alpha[t][0] + alpha[t][1]).max(f64::MIN_POSITIVE);
        alpha[t].iter_mut().for_each(|v| *v /= scale[t]);
    }
    let mut beta = vec![[1.0; 2]; n];
    for t in (0..n - 1).rev() {
        for i in 0..2 {
            beta[t][i] = (0..2).map(|j| trans(i, j) * e[t + 1][j] * beta[t + 1][j]).sum::<f64>() / scale[t + 1];
        }
    }
    let mut switches = 0.0;
    for t in 0..n {
        let g = [alpha[t][0] * beta[t][0], alpha[t][1] * beta[t][1]];
        let z = (g[0] + g[1]).max(f64::MIN_POSITIVE);
        m.gamma[t] = [g[0] / z, g[1] / z];
        if t + 1 < n {
            for (i, j) in [(0, 1), (1, 0)] {
                switches += alpha[t][i] * trans(i, j) * e[t + 1][j] * beta[t + 1][j] / scale[t + 1];
            }
        }
    }
    (switches, (n - 1) as f64)
}

/// The `[stragglers]` section of `law` with the fitted parameters (per-worker lists).
pub fn section(fit: &Fit, law: &str) -> String {
    let list = |f: &dyn Fn(&WorkerFit) -> f64| {
        let v: Vec<String> = fit.workers.iter().map(|w| format!("{:.6e}", f(w))).collect();
        format!("[{}]", v.join(", "))
    };
    match law {
        "shifted-exp" => format!(
            "[stragglers]\nmodel = \"shifted-exp\"\na = {}\nmu = {}\n",
            list(&|w| w.shifted_exp.a),
            list(&|w| w.shifted_exp.mu)
        ),
        "weibull" => format!(
            "[stragglers]\nmodel = \"weibull\"\na = {}\nmu = {}\nshape = {}\n",
            list(&|w| w.weibull.a),
            list(&|w| w.weibull.mu),
            list(&|w| w.weibull.shape)
        ),
        _ => {
            let initial: Vec<String> =
                fit.workers.iter().filter(|w| w.markov.slow_first).map(|w| w.worker.to_string()).collect();
            format!(
                "[stragglers]\nmodel = \"markov\"\np = {:.6}\na = {}\nmu_fast = {}\nmu_slow = {}\ninitial = [{}]\n",
                fit.p,
                list(&|w| w.markov.a),
                list(&|w| w.markov.mu_fast),
                list(&|w| w.markov.mu_slow),
                initial.join(", ")
            )
        }
    }
}

/// The fits as a Markdown table, the distances per law, and the section of `law`.
pub fn markdown(fit: &Fit, law: &str) -> String {
    let mut o = String::from(
        "| worker | n | shifted-exp a | μ | KS | weibull a | μ | k | KS | markov a | μ fast | μ slow | slow share | KS |\n|---|---|---|---|---|---|---|---|---|---|---|---|---|---|\n",
    );
    for w in &fit.workers {
        let (e, b, m) = (&w.shifted_exp, &w.weibull, &w.markov);
        o += &format!(
            "| {} | {} | {:.4e} | {:.4e} | {:.3} | {:.4e} | {:.4e} | {:.3} | {:.3} | {:.4e} | {:.4e} | {:.4e} | {:.2} | {:.3} |\n",
            w.worker, w.n, e.a, e.mu, e.ks, b.a, b.mu, b.shape, b.ks, m.a, m.mu_fast, m.mu_slow, m.slow_share, m.ks
        );
    }
    let constant: Vec<String> = fit.workers.iter().filter(|w| w.constant).map(|w| w.worker.to_string()).collect();
    if constant.len() == fit.workers.len() {
        o += "\nevery worker's time per point is the same in every iteration (to round-off): nothing random to fit — the times of a deterministic straggler model (`fixed`, none) under `[timing] compute = \"modelled\"`; each law below is a point mass at the worker's time (μ = 1e300: no random part), which replays them\n";
    } else {
        if !constant.is_empty() {
            o += &format!(
                "\nworker{} {}: the same time per point in every iteration (to round-off), fitted as a point mass (μ = 1e300: no random part; distance 0)\n",
                if constant.len() > 1 { "s" } else { "" },
                constant.join(", ")
            );
        }
        o += &format!("\nmarkov: switching probability p = {:.4} per iteration (pooled over the workers)\n", fit.p);
    }
    let ranked: Vec<String> = LAWS.iter().map(|l| format!("{l} {:.3}", fit.mean_ks(l))).collect();
    o += &format!(
        "mean Kolmogorov–Smirnov distance: {} (smaller fits better; the 5 % critical value is {:.3}; {})\n",
        ranked.join(", "),
        fit.critical(),
        match fit.accepted() {
            Some(l) => format!("best: the simplest law within it, {l}"),
            None => format!("no law is within it: the closest, {}, describes these times poorly", fit.best()),
        }
    );
    o += &format!(
        "\n# times are per point (seconds per unit of load); use with [timing] compute = \"modelled\"\n{}",
        section(fit, law)
    );
    o
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Deterministic Exp(1) draws (a 64-bit LCG; enough for these tests).
    fn exp_draws(seed: u64, n: usize) -> Vec<f64> {
        let mut s = seed;
        (0..n)
            .map(|_| {
                s = s.wrapping_mul(6364136223846793005).wrapping_add(1442695040888963407);
                let u = ((s >> 11) as f64 + 0.5) / (1u64 << 53) as f64;
                -u.ln()
            })
            .collect()
    }

    #[test]
    fn shifted_exponential_and_weibull_recover_their_parameters() {
        let x: Vec<f64> = exp_draws(1, 4000).iter().map(|e| 2e-6 + e / 5e4).collect();
        let e = shifted_exp(&x);
        assert!((e.a / 2e-6 - 1.0).abs() < 0.01 && (e.mu / 5e4 - 1.0).abs() < 0.05, "{e:?}");
        assert!(e.ks < 0.03, "{e:?}");
        // W = E^(1/k) is Weibull(k, 1)
        let w: Vec<f64> = exp_draws(2, 4000).iter().map(|e| 1e-3 + e.powf(1.0 / 2.0) / 100.0).collect();
        let b = weibull(&w);
        assert!((b.shape / 2.0 - 1.0).abs() < 0.1 && (b.mu / 100.0 - 1.0).abs() < 0.05, "{b:?}");
        assert!(b.ks < shifted_exp(&w).ks, "Weibull fits its own draws better");
    }

    #[test]
    fn baum_welch_recovers_a_two_state_process() {
        // p = 0.15, fast 1e6, slow 2e4 points per second, shift 2e-6
        let mut samples = BTreeMap::new();
        for w in 1..=4usize {
            let (e, u) = (exp_draws(10 + w as u64, 3000), exp_draws(20 + w as u64, 3000));
            let mut slow = w % 2 == 0;
            let x: Vec<f64> = e
                .iter()
                .zip(&u)
                .map(|(e, u)| {
                    // Exp(1) > −ln(1 − p) with probability 1 − p: switch otherwise
                    if *u < -(1.0_f64 - 0.15).ln() {
                        slow = !slow;
                    }
                    2e-6 + e / if slow { 2e4 } else { 1e6 }
                })
                .collect();
            samples.insert(w, x);
        }
        let f = fit(&samples).unwrap();
        assert!((f.p / 0.15 - 1.0).abs() < 0.1, "p = {}", f.p);
        for w in &f.workers {
            let m = &w.markov;
            assert!((m.mu_slow / 2e4 - 1.0).abs() < 0.1 && (m.mu_fast / 1e6 - 1.0).abs() < 0.1, "{m:?}");
        }
        assert_eq!(f.best(), "markov");
        assert!(section(&f, "markov").starts_with("[stragglers]\nmodel = \"markov\"\np = 0.1"));
    }

    #[test]
    fn constant_times_are_a_point_mass_and_no_rejected_law_is_called_best() {
        // modelled times of a fixed straggler model: one value a worker, to round-off
        let mut s =
            BTreeMap::from([(1, vec![2e-5; 20]), (2, (0..20).map(|i| 1e-4 * (1.0 + i as f64 * 1e-15)).collect())]);
        let f = fit(&s).unwrap();
        for w in &f.workers {
            assert!(w.constant && w.shifted_exp.ks == 0.0 && w.markov.ks == 0.0, "{w:?}");
            assert_eq!(w.shifted_exp.mu, CONSTANT_RATE);
        }
        assert!((f.workers[1].shifted_exp.a / 1e-4 - 1.0).abs() < 1e-12);
        let text = markdown(&f, f.best());
        assert!(
            text.contains("nothing random to fit") && text.contains("best: the simplest law within it, shifted-exp")
        );
        // beside a varying worker, the constant one is named and kept out of the pooled p
        s.insert(3, exp_draws(5, 400).iter().map(|e| 1e-5 + e / 1e5).collect());
        let f = fit(&s).unwrap();
        assert!(!f.workers[2].constant && (f.workers[2].shifted_exp.mu / 1e5 - 1.0).abs() < 0.15);
        assert!(markdown(&f, "shifted-exp").contains("workers 1, 2: the same time per point"));
        // times no law describes: two values, far apart, alternating
        let two = BTreeMap::from([(1, (0..40).map(|i| if i % 2 == 0 { 1.0 } else { 100.0 }).collect())]);
        let f = fit(&two).unwrap();
        assert_eq!(f.accepted(), None);
        assert!(markdown(&f, f.best()).contains("no law is within it"), "{}", markdown(&f, f.best()));
    }

    #[test]
    fn too_few_times_are_refused() {
        let s = BTreeMap::from([(1, vec![1.0; 5])]);
        assert!(fit(&s).unwrap_err().contains("at least 20"));
    }
}
