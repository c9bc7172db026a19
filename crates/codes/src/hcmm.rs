//! Heterogeneous coded matrix multiplication (HCMM, Reisizadeh et al.; thesis chapter 3,
//! engineering note `seed-004-ch3-hcmm-ch6-hier.md` part A): load allocation for workers of
//! different speeds, the baselines it is compared with, the expected completion time, and the
//! budget-constrained variant.
//!
//! Worker i computes its ℓ_i coded rows in time T_i = a_i·ℓ_i + (ℓ_i/μ_i)·W, W ~ Weibull(α_i, 1)
//! (α = 1: the shifted exponential), and returns them all at once; the master needs r of them.
//! HCMM gives worker i the load ℓ_i = ⌈τ*/λ_i⌉ where λ_i maximises the worker's expected return
//! and τ* = r / s, s = Σ_i E[return rate].

/// A worker's run-time law per row: shift `a` (seconds per row), straggling parameter `mu`
/// (rows per second of the random part) and Weibull shape `alpha` (1: exponential).
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct RowLaw {
    /// Shift per row.
    pub a: f64,
    /// Rate of the random part.
    pub mu: f64,
    /// Weibull shape (1 = exponential).
    pub alpha: f64,
}

impl RowLaw {
    /// The shifted-exponential law.
    pub fn exp(a: f64, mu: f64) -> Self {
        RowLaw { a, mu, alpha: 1.0 }
    }

    /// The shifted-Weibull law.
    pub fn weibull(a: f64, mu: f64, alpha: f64) -> Self {
        RowLaw { a, mu, alpha }
    }

    /// P[T ≤ t] for a load of `l` rows.
    pub fn cdf(&self, t: f64, l: usize) -> f64 {
        if l == 0 {
            return 1.0;
        }
        let l = l as f64;
        let x = t - self.a * l;
        if x <= 0.0 {
            return 0.0;
        }
        -libm::expm1(-libm::pow(self.mu / l * x, self.alpha))
    }

    /// E\[T\] for a load of `l` rows.
    pub fn mean(&self, l: usize) -> f64 {
        let l = l as f64;
        self.a * l + l / self.mu * libm::tgamma(1.0 + 1.0 / self.alpha)
    }

    /// A time far in the tail (P[T > t] < e^-60) for a load of `l` rows.
    fn tail(&self, l: usize) -> f64 {
        let l = l as f64;
        self.a * l + l / self.mu * libm::pow(60.0, 1.0 / self.alpha)
    }
}

/// The root x > 1 of x − ln x = 1 + ξ (x = −W₋₁(−e^{−1−ξ}), computed by Newton from above, so
/// it never underflows for large ξ).
pub fn x_of_xi(xi: f64) -> f64 {
    let c = 1.0 + xi;
    let mut x = 1.0 + c + libm::log(c);
    for _ in 0..100 {
        let step = (x - libm::log(x) - c) / (1.0 - 1.0 / x);
        x -= step;
        if step.abs() <= 1e-15 * x {
            break;
        }
    }
    x
}

/// λ_i: the per-row time at which the worker's expected return is largest (ℓ*_i(t) = t/λ_i).
/// Exponential: λ = (x − 1)/μ with x = x_of_xi(aμ); Weibull: the root λ > a of
/// exp((μ(λ − a))^α) = 1 + αμ^α λ (λ − a)^{α−1}, found in u = μ(λ − a) by bisection.
pub fn lambda(w: &RowLaw) -> f64 {
    if w.alpha == 1.0 {
        return (x_of_xi(w.a * w.mu) - 1.0) / w.mu;
    }
    let (al, amu) = (w.alpha, w.a * w.mu);
    // g(u) = u^α − ln(1 + α u^{α−1} (u + aμ)): negative near 0+, +∞ at ∞, one sign change
    let g = |u: f64| libm::pow(u, al) - libm::log1p(al * libm::pow(u, al - 1.0) * (u + amu));
    let (mut lo, mut hi) = (1e-12, 1.0);
    while g(hi) < 0.0 {
        hi *= 2.0;
    }
    for _ in 0..200 {
        let mid = 0.5 * (lo + hi);
        if g(mid) < 0.0 {
            lo = mid;
        } else {
            hi = mid;
        }
        if hi - lo <= 1e-15 * hi {
            break;
        }
    }
    w.a + 0.5 * (lo + hi) / w.mu
}

/// The worker's expected return rate at its optimum: (1/λ)·P[T ≤ λ per row].
pub fn rate(w: &RowLaw) -> f64 {
    let l = lambda(w);
    -libm::expm1(-libm::pow(w.mu * (l - w.a), w.alpha)) / l
}

/// An HCMM allocation.
#[derive(Clone, Debug, PartialEq)]
pub struct Allocation {
    /// λ_i per worker.
    pub lambdas: Vec<f64>,
    /// s = Σ_i rate_i (rows per second expected back).
    pub s: f64,
    /// τ* = r/s.
    pub tau: f64,
    /// Real-valued loads τ*/λ_i.
    pub real: Vec<f64>,
    /// Integer loads ⌈τ*/λ_i⌉.
    pub loads: Vec<usize>,
}

impl Allocation {
    /// Σ ℓ_i / r.
    pub fn redundancy(&self, r: usize) -> f64 {
        self.loads.iter().sum::<usize>() as f64 / r as f64
    }
}

/// HCMM's loads for `r` rows (use r' = r(1 + ε) for LT codes).
pub fn hcmm(workers: &[RowLaw], r: usize) -> Allocation {
    let lambdas: Vec<f64> = workers.iter().map(lambda).collect();
    let s: f64 = workers.iter().map(rate).sum();
    let tau = r as f64 / s;
    let real: Vec<f64> = lambdas.iter().map(|l| tau / l).collect();
    // ceil, forgiving round-off just above an integer
    let loads = real.iter().map(|&x| (x - 1e-9 * x.max(1.0)).ceil().max(0.0) as usize).collect();
    Allocation { lambdas, s, tau, real, loads }
}

/// Rounding of uncoded loads.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Rounding {
    /// Every load rounded up (the thesis's numerical study; Σ may exceed r).
    Ceil,
    /// Largest remainder: an exact partition of the r rows (what a runtime must use).
    Exact,
}

/// Loads proportional to `weights`, summing to r (Exact) or rounded up (Ceil).
pub fn proportional(weights: &[f64], r: usize, rounding: Rounding) -> Vec<usize> {
    let total: f64 = weights.iter().sum();
    let real: Vec<f64> = weights.iter().map(|w| r as f64 * w / total).collect();
    match rounding {
        Rounding::Ceil => real.iter().map(|&x| (x - 1e-9 * x.max(1.0)).ceil() as usize).collect(),
        Rounding::Exact => {
            let mut loads: Vec<usize> = real.iter().map(|x| x.floor() as usize).collect();
            let mut order: Vec<usize> = (0..real.len()).collect();
            order.sort_by(|&i, &j| (real[j] - real[j].floor()).total_cmp(&(real[i] - real[i].floor())).then(i.cmp(&j)));
            let short = r - loads.iter().sum::<usize>();
            for &i in order.iter().take(short) {
                loads[i] += 1;
            }
            loads
        }
    }
}

/// Uniform uncoded loads r/n.
pub fn uniform_uncoded(n: usize, r: usize, rounding: Rounding) -> Vec<usize> {
    proportional(&vec![1.0; n], r, rounding)
}

/// Load-balanced uncoded loads ∝ 1/E[time per row] = μ/(aμ + Γ(1 + 1/α)).
pub fn load_balanced(workers: &[RowLaw], r: usize, rounding: Rounding) -> Vec<usize> {
    let w: Vec<f64> = workers.iter().map(|w| w.mu / (w.a * w.mu + libm::tgamma(1.0 + 1.0 / w.alpha))).collect();
    proportional(&w, r, rounding)
}

/// Uniform coded: equal loads ⌈r/k⌉, k = 1..n chosen for the smallest expected time. Returns
/// (k, the loads, the expected time).
pub fn uniform_coded(workers: &[RowLaw], r: usize) -> (usize, Vec<usize>, f64) {
    let (k, t) =
        uniform_coded_curve(workers, r).into_iter().min_by(|a, b| a.1.total_cmp(&b.1)).expect("at least one worker");
    (k, vec![r.div_ceil(k); workers.len()], t)
}

/// Uniform coded's expected time for every k = 1..n (any k of the n workers decode, each
/// holding ⌈r/k⌉ rows): (k, E\[T\]), the curve [`uniform_coded`] takes the minimum of.
pub fn uniform_coded_curve(workers: &[RowLaw], r: usize) -> Vec<(usize, f64)> {
    let n = workers.len();
    (1..=n).map(|k| (k, expected_time(workers, &vec![r.div_ceil(k); n], r))).collect()
}

fn gcd(a: usize, b: usize) -> usize {
    if b == 0 {
        a
    } else {
        gcd(b, a % b)
    }
}

/// P[X(t) ≥ r], X(t) = Σ ℓ_i 1{T_i ≤ t}: a dynamic programme over the received rows, capped at
/// r, in units of the loads' greatest common divisor.
fn p_done(workers: &[RowLaw], units: &[usize], need: usize, loads: &[usize], t: f64, dist: &mut Vec<f64>) -> f64 {
    dist.clear();
    dist.resize(need + 1, 0.0);
    dist[0] = 1.0;
    for ((w, &u), &l) in workers.iter().zip(units).zip(loads) {
        if u == 0 {
            continue;
        }
        let f = w.cdf(t, l);
        if f == 0.0 {
            continue;
        }
        // in place, from the top: new[j] = (1−F)·old[j] + F·old[j−u] (capped at need)
        // every mass from need − u up lands at the cap
        let capped: f64 = dist[need.saturating_sub(u)..=need].iter().sum();
        for j in (0..=need).rev() {
            let from = if j == need {
                capped
            } else if j >= u {
                dist[j - u]
            } else {
                0.0
            };
            dist[j] = (1.0 - f) * dist[j] + f * from;
        }
    }
    dist[need]
}

/// Adaptive Simpson on [a, b].
fn simpson(f: &mut dyn FnMut(f64) -> f64, a: f64, b: f64, eps: f64) -> f64 {
    /// An interval with its end and middle values and its Simpson estimate.
    #[derive(Clone, Copy)]
    struct Piece {
        a: f64,
        b: f64,
        fa: f64,
        fm: f64,
        fb: f64,
        whole: f64,
    }
    fn rec(f: &mut dyn FnMut(f64) -> f64, p: Piece, eps: f64, depth: u32) -> f64 {
        let m = 0.5 * (p.a + p.b);
        let (flm, frm) = (f(0.5 * (p.a + m)), f(0.5 * (m + p.b)));
        let left =
            Piece { a: p.a, b: m, fa: p.fa, fm: flm, fb: p.fm, whole: (m - p.a) / 6.0 * (p.fa + 4.0 * flm + p.fm) };
        let right =
            Piece { a: m, b: p.b, fa: p.fm, fm: frm, fb: p.fb, whole: (p.b - m) / 6.0 * (p.fm + 4.0 * frm + p.fb) };
        let both = left.whole + right.whole;
        if depth == 0 || (both - p.whole).abs() <= 15.0 * eps {
            return both + (both - p.whole) / 15.0;
        }
        rec(f, left, eps / 2.0, depth - 1) + rec(f, right, eps / 2.0, depth - 1)
    }
    let (fa, fb, fm) = (f(a), f(b), f(0.5 * (a + b)));
    rec(f, Piece { a, b, fa, fm, fb, whole: (b - a) / 6.0 * (fa + 4.0 * fm + fb) }, eps, 40)
}

/// E\[T_CMP\]: the expected time until the master holds r rows, ∫₀^∞ P[X(t) < r] dt, integrated
/// piecewise between the shifts a_iℓ_i (where the distribution has kinks). Uncoded schemes are
/// the case r = Σℓ_i (every worker needed).
pub fn expected_time(workers: &[RowLaw], loads: &[usize], r: usize) -> f64 {
    assert!(loads.iter().sum::<usize>() >= r, "the loads cannot cover r rows");
    let g = loads.iter().fold(0, |acc, &l| gcd(acc, l)).max(1);
    let units: Vec<usize> = loads.iter().map(|l| l / g).collect();
    let need = r.div_ceil(g);
    let mut points: Vec<f64> = vec![0.0];
    points.extend(workers.iter().zip(loads).filter(|(_, &l)| l > 0).map(|(w, &l)| w.a * l as f64));
    let tmax = workers.iter().zip(loads).filter(|(_, &l)| l > 0).map(|(w, &l)| w.tail(l)).fold(0.0, f64::max);
    points.push(tmax);
    points.sort_by(f64::total_cmp);
    points.dedup();
    let mut dist = Vec::with_capacity(need + 1);
    let mut f = |t: f64| 1.0 - p_done(workers, &units, need, loads, t, &mut dist);
    let eps = 1e-10 * tmax;
    points.windows(2).map(|w| simpson(&mut f, w[0], w[1], eps * (w[1] - w[0]) / tmax)).sum()
}

/// Monte Carlo estimate of E\[T_CMP\] (mean, standard error) with `trials` seeded draws.
pub fn monte_carlo(workers: &[RowLaw], loads: &[usize], r: usize, trials: usize, seed: u64) -> (f64, f64) {
    let mut rng = crate::Rng::from_key(&[seed, crate::domain::STRAGGLER, u64::MAX]);
    let (mut sum, mut sq) = (0.0, 0.0);
    let mut times: Vec<(f64, usize)> = Vec::with_capacity(workers.len());
    for _ in 0..trials {
        times.clear();
        for (w, &l) in workers.iter().zip(loads) {
            if l == 0 {
                continue;
            }
            let e = rng.exp1();
            let wv = if w.alpha == 1.0 { e } else { libm::pow(e, 1.0 / w.alpha) };
            times.push((w.a * l as f64 + l as f64 / w.mu * wv, l));
        }
        times.sort_by(|a, b| a.0.total_cmp(&b.0));
        let mut got = 0;
        let t = times.iter().find(|&&(_, l)| {
            got += l;
            got >= r
        });
        let t = t.expect("loads cover r").0;
        sum += t;
        sq += t * t;
    }
    let m = sum / trials as f64;
    (m, ((sq / trials as f64 - m * m).max(0.0) / trials as f64).sqrt())
}

/// One machine type of the budget-constrained problem: its law and how many are available.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct MachineType {
    /// Per-row law (exponential).
    pub law: RowLaw,
    /// Machines available.
    pub available: usize,
}

/// The expected cost and time of HCMM on `counts` machines of each type, each machine paid
/// κμ^γ per unit time for the whole expected job time τ*: (cost, τ*).
pub fn budget_cost(types: &[MachineType], counts: &[usize], r: usize, kappa: f64, gamma: f64) -> (f64, f64) {
    let s: f64 = types.iter().zip(counts).map(|(t, &n)| n as f64 * rate(&t.law)).sum();
    let tau = r as f64 / s;
    (tau * types.iter().zip(counts).map(|(t, &n)| n as f64 * kappa * libm::pow(t.law.mu, gamma)).sum::<f64>(), tau)
}

/// The result of the budget heuristic.
#[derive(Clone, Debug, PartialEq)]
pub struct BudgetChoice {
    /// Machines used per type.
    pub counts: Vec<usize>,
    /// Expected cost.
    pub cost: f64,
    /// Expected time τ*.
    pub time: f64,
    /// Configurations evaluated.
    pub evaluations: usize,
}

/// Algorithm 2 (thesis §3.6), literally: start with every machine; while the cost exceeds the
/// budget, remove one machine of the fastest type still used. Types must be ordered by
/// increasing μ. None when even the cheapest configuration exceeds the budget.
pub fn budget_heuristic(types: &[MachineType], r: usize, kappa: f64, gamma: f64, budget: f64) -> Option<BudgetChoice> {
    let mut counts: Vec<usize> = types.iter().map(|t| t.available).collect();
    let mut evaluations = 0;
    loop {
        evaluations += 1;
        if counts.iter().all(|&n| n == 0) {
            return None;
        }
        let (cost, time) = budget_cost(types, &counts, r, kappa, gamma);
        if cost <= budget {
            return Some(BudgetChoice { counts, cost, time, evaluations });
        }
        let j = (0..counts.len()).rev().find(|&k| counts[k] > 0).expect("some machine left");
        counts[j] -= 1;
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn close(a: f64, b: f64, rel: f64) -> bool {
        (a - b).abs() <= rel * b.abs().max(1e-300)
    }

    /// Acceptance tests 1 and 2: λ for the exponential and Weibull laws.
    #[test]
    fn lambdas_of_the_note() {
        for (a, mu, want) in
            [(1.0, 1.0, 2.1461932206), (4.0, 0.5, 7.0104829916), (12.0, 0.25, 18.9961255441), (4.0, 2.0, 5.2184198488)]
        {
            assert!((lambda(&RowLaw::exp(a, mu)) - want).abs() < 1e-9, "({a}, {mu})");
        }
        assert!(close(x_of_xi(166.0606), 172.20932, 1e-7));
        assert!(x_of_xi(1000.0).is_finite() && x_of_xi(1e6).is_finite());
        for (a, mu, al, want) in [
            (1.0, 1.0, 1.2, 2.29171852),
            (4.0, 0.5, 0.8, 6.66353750),
            (1.0, 0.5, 0.9, 2.49020456),
            (4.0, 2.0, 1.2, 5.16218520),
            (12.0, 0.25, 1.5, 19.07577159),
        ] {
            assert!(
                (lambda(&RowLaw::weibull(a, mu, al)) - want).abs() < 1e-7,
                "({a}, {mu}, {al}): {}",
                lambda(&RowLaw::weibull(a, mu, al))
            );
        }
        // α = 1 through the Weibull path equals the exponential closed form
        let w = RowLaw::weibull(2.0, 1.0, 1.0 + 1e-12);
        assert!((lambda(&w) - lambda(&RowLaw::exp(2.0, 1.0))).abs() < 1e-6);
        assert!((rate(&RowLaw::exp(1.0, 1.0)) - 0.3178444329).abs() < 1e-9);
        assert!((rate(&RowLaw::weibull(1.0, 1.0, 1.2)) - 0.32431066).abs() < 1e-7);
    }

    fn ex(v: &[(f64, f64)]) -> Vec<RowLaw> {
        v.iter().map(|&(a, mu)| RowLaw::exp(a, mu)).collect()
    }

    /// Acceptance tests 3 and 4: allocations and expected times of Examples A–E.
    #[test]
    fn worked_examples_a_to_e() {
        let a = ex(&[(1.0, 1.0), (2.0, 1.0), (1.0, 2.0)]);
        let h = hcmm(&a, 300);
        assert!(close(h.s, 0.98373549, 1e-7) && close(h.tau, 304.960027, 1e-8));
        assert!(h.real.iter().zip([142.0935, 87.0011, 174.0023]).all(|(x, y)| (x - y).abs() < 1e-4));
        assert_eq!(h.loads, vec![143, 88, 175]);
        assert!(close(expected_time(&a, &h.loads, 300), 333.427780, 1e-6));
        assert!(close(expected_time(&a, &[100, 100, 100], 300), 320.234668, 1e-6));
        assert_eq!(load_balanced(&a, 300, Rounding::Ceil), vec![100, 67, 134]);
        assert!(close(expected_time(&a, &[100, 67, 134], 301), 266.425826, 1e-6));
        assert_eq!(load_balanced(&a, 300, Rounding::Exact).iter().sum::<usize>(), 300);

        let b = ex(&[(0.5, 2.0), (0.5, 2.0), (1.0, 1.0), (4.0, 0.5)]);
        let h = hcmm(&b, 1000);
        assert!(close(h.s, 1.70020401, 1e-7) && close(h.tau, 588.164712, 1e-8));
        assert_eq!(h.loads, vec![549, 549, 275, 84]);
        assert!(close(expected_time(&b, &h.loads, 1000), 686.25, 1e-6));
        assert!(close(expected_time(&b, &[250; 4], 1000), 1504.193430, 1e-6));

        let c = ex(&[(1.0, 1.0); 10]);
        let h = hcmm(&c, 1000);
        assert_eq!(h.loads, vec![147; 10]);
        assert!(close(expected_time(&c, &h.loads, 1000), 308.058333, 1e-6));
        assert!(close(expected_time(&c, &[100; 10], 1000), 392.896825, 1e-6));

        let d = vec![RowLaw::weibull(1.0, 1.0, 1.2), RowLaw::weibull(4.0, 0.5, 0.8), RowLaw::weibull(1.0, 0.5, 0.9)];
        let h = hcmm(&d, 300);
        assert!(close(h.s, 0.64685737, 1e-7) && close(h.tau, 463.780757, 1e-8));
        assert_eq!(h.loads, vec![203, 70, 187]);
        assert!(close(expected_time(&d, &h.loads, 300), 648.967908, 1e-6));
        let (mc, se) = monte_carlo(&d, &h.loads, 300, 400_000, 3);
        assert!((mc - 648.967908).abs() < 4.0 * se, "Monte Carlo {mc} ± {se}");
        assert_eq!(load_balanced(&d, 300, Rounding::Ceil), vec![156, 49, 97]);
        assert!(close(expected_time(&d, &[156, 49, 97], 302), 440.210376, 1e-6));

        let e = ex(&[(1.0, 1.0), (1.0, 1.0), (1.0, 1.0), (4.0, 0.5), (4.0, 0.5), (4.0, 0.5)]);
        let h = hcmm(&e, 600);
        assert!(close(h.s, 1.28647882, 1e-7) && close(h.tau, 466.389332, 1e-8));
        assert_eq!(h.loads, vec![218, 218, 218, 67, 67, 67]);
        assert!(close(expected_time(&e, &h.loads, 600), 482.283150, 1e-6));
        assert!(close(expected_time(&e, &[100; 6], 600), 768.149704, 1e-6));
        assert!(close(expected_time(&e, &[150, 150, 150, 50, 50, 50], 600), 483.324046, 1e-6));
    }

    /// Acceptance test 5: the n = 100 studies (deterministic scenarios S1 and S2 of both laws):
    /// reductions of HCMM against uniform uncoded, load-balanced uncoded and uniform coded within
    /// one percentage point of the note, redundancies exact, E[T_HCMM] ∈ [τ*, 1.03 τ*].
    #[test]
    fn n100_studies() {
        let rep =
            |v: &[(RowLaw, usize)]| -> Vec<RowLaw> { v.iter().flat_map(|&(w, k)| std::iter::repeat_n(w, k)).collect() };
        let cases = [
            ("exp S1", rep(&[(RowLaw::exp(1.0, 1.0), 50), (RowLaw::exp(4.0, 0.5), 50)]), [64.0, 44.9, 25.0], 1.425),
            (
                "exp S2",
                rep(&[(RowLaw::exp(1.0, 0.5), 25), (RowLaw::exp(4.0, 2.0), 25), (RowLaw::exp(12.0, 0.25), 50)]),
                [71.5, 50.0, 25.7],
                1.4075,
            ),
            (
                "wei S1",
                rep(&[(RowLaw::weibull(1.0, 1.0, 1.2), 50), (RowLaw::weibull(4.0, 0.5, 0.8), 50)]),
                [73.1, 46.5, 24.1],
                1.365,
            ),
            (
                "wei S2",
                rep(&[
                    (RowLaw::weibull(1.0, 0.5, 0.9), 25),
                    (RowLaw::weibull(4.0, 2.0, 1.2), 25),
                    (RowLaw::weibull(12.0, 0.25, 1.5), 50),
                ]),
                [63.5, 56.2, 27.2],
                1.4275,
            ),
        ];
        let r = 10_000;
        for (name, w, want, red) in cases {
            let h = hcmm(&w, r);
            assert!((h.redundancy(r) - red).abs() < 1e-12, "{name}: redundancy {}", h.redundancy(r));
            let t_h = expected_time(&w, &h.loads, r);
            assert!(t_h >= h.tau && t_h <= 1.03 * h.tau, "{name}: E[T] {t_h} vs τ* {}", h.tau);
            let uu = uniform_uncoded(100, r, Rounding::Ceil);
            let lb = load_balanced(&w, r, Rounding::Ceil);
            let t_uu = expected_time(&w, &uu, uu.iter().sum());
            let t_lb = expected_time(&w, &lb, lb.iter().sum());
            let (_, _, t_uc) = uniform_coded(&w, r);
            let got = [t_uu, t_lb, t_uc].map(|b| 100.0 * (b - t_h) / b);
            eprintln!("{name}: E[T] UU {t_uu:.2}, LB {t_lb:.2}, UC {t_uc:.2}, HCMM {t_h:.2} (τ* {:.3}); reductions {:.1} / {:.1} / {:.1} %", h.tau, got[0], got[1], got[2]);
            for (g, w) in got.iter().zip(want) {
                assert!((g - w).abs() <= 1.0, "{name}: reductions {got:?}, note {want:?}");
            }
        }
        let s1 = hcmm(&rep(&[(RowLaw::exp(1.0, 1.0), 50), (RowLaw::exp(4.0, 0.5), 50)]), r);
        assert!(close(s1.tau, 466.3893, 1e-6) && s1.loads.iter().sum::<usize>() == 14250);
        let s2 =
            hcmm(&rep(&[(RowLaw::exp(1.0, 0.5), 25), (RowLaw::exp(4.0, 2.0), 25), (RowLaw::exp(12.0, 0.25), 50)]), r);
        assert_eq!((s2.loads[0], s2.loads[25], s2.loads[50], s2.loads.iter().sum::<usize>()), (311, 162, 45, 14075));
    }

    /// Acceptance test 6: the budget heuristic's two scenarios (γ = 2, κ = 1, r = 100).
    #[test]
    fn budget_scenarios() {
        let t = |v: &[(f64, f64)]| {
            v.iter().map(|&(a, mu)| MachineType { law: RowLaw::exp(a, mu), available: 10 }).collect::<Vec<_>>()
        };
        let s1 = t(&[(0.5, 2.0), (0.25, 4.0)]);
        assert!(close(budget_cost(&s1, &[10, 0], 100, 1.0, 2.0).0, 629.24, 1e-4));
        assert!(close(budget_cost(&s1, &[0, 10], 100, 1.0, 2.0).0, 1258.48, 1e-4));
        let c = budget_heuristic(&s1, 100, 1.0, 2.0, 860.0).unwrap();
        assert_eq!((c.counts.clone(), c.evaluations), (vec![10, 2], 9));
        assert!(close(c.cost, 809.02, 1e-4) && close(c.time, 11.236, 1e-4));
        let s2 = t(&[(1.0, 1.0), (0.5, 2.0), (0.125, 8.0)]);
        assert!(close(budget_cost(&s2, &[10, 0, 0], 100, 1.0, 2.0).0, 314.62, 1e-4));
        assert!(close(budget_cost(&s2, &[0, 0, 10], 100, 1.0, 2.0).0, 2516.95, 1e-4));
        let c = budget_heuristic(&s2, 100, 1.0, 2.0, 475.0).unwrap();
        assert_eq!(
            (c.counts.clone(), c.evaluations),
            (vec![10, 5, 0], 16),
            "the thesis's (10,6,0) exceeds its own budget"
        );
        assert!(close(c.cost, 471.93, 1e-4) && close(c.time, 15.731, 1e-4));
        assert!(close(budget_cost(&s2, &[10, 6, 0], 100, 1.0, 2.0).0, 486.23, 1e-4));
        assert!(budget_heuristic(&s2, 100, 1.0, 2.0, 300.0).is_none());
    }

    /// Acceptance test 7: HCMM loads designed for r' = 11300 on the EC2 fits match Table 3.1.
    #[test]
    fn ec2_consistency() {
        let (fa, fb) = (RowLaw::exp(1.37e-3, 1.0 / 8.25e-6), RowLaw::exp(2.00e-3, 1.0 / 8.72e-6));
        let mut w = vec![fa; 4];
        w.extend(vec![fb; 6]);
        let h = hcmm(&w, 11_300);
        assert_eq!((h.loads[0], h.loads[4], h.loads.iter().sum::<usize>()), (1396, 963, 11362));
        let mut w = vec![fa; 6];
        w.extend(vec![fb; 9]);
        let h = hcmm(&w, 11_300);
        assert_eq!((h.loads[0], h.loads[6], h.loads.iter().sum::<usize>()), (931, 642, 11364));
        assert!((11364.0f64 / 11402.0 - 1.0).abs() < 0.005);
    }
}
