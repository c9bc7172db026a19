//! The restart model of adaptive gradient coding (seed 003, Sec. VII-A, eqs. 81–92): the
//! average execution time (AET) of CGC, AGC and their group versions when stragglers are
//! restarted epoch by epoch. Note: `seed-003-agc.md` §5.1–5.2.
//!
//! Time runs in epochs of length t = t_cp + t_cm. In every epoch each (re)started worker
//! straggles independently with probability p. At the end of an epoch the master decodes if the
//! stragglers are at most s_max (per group for group schemes) and otherwise restarts them (all of
//! them, or those of the groups that failed). Decoding from s stragglers costs c_s·t_cm.
//!
//! # Example: Fig. 3 at p = 0.1
//!
//! n = 20 workers, d = 3 parts each, t_cp = 3, t_cm = 13: AGC beats the best CGC, and G-AGC the
//! best G-CGC (the notes' values to three decimals):
//!
//! ```
//! use outrun_codes::restart::{Model, Scheme};
//!
//! let fig3 = Model { n: 20, d: 3, t_cp: 3.0, t_cm: 13.0 };
//! let at = |s| fig3.aet(s, 0.1);
//! assert!((at(Scheme::Cgc { s_max: 1 }) - 19.505).abs() < 1e-3);
//! assert!((at(Scheme::Agc) - 15.877).abs() < 1e-3);
//! assert!((at(Scheme::GroupAgc) - 10.666).abs() < 1e-3);
//! ```

use crate::agc::groups;
use crate::Rng;

/// A scheme of the comparison.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Scheme {
    /// Ye–Abbe's communication-computation efficient GC built for `s_max` stragglers: cost
    /// 1/(d − s_max) whatever the stragglers.
    Cgc {
        /// Stragglers it is built for (< d).
        s_max: usize,
    },
    /// Adaptive GC: tolerates d − 1, costs 1/(d − s) with s stragglers.
    Agc,
    /// CGC inside G-AGC's groups (eq. 66); a group decodes on its own.
    GroupCgc {
        /// Stragglers per group it is built for (< d).
        s_max: usize,
    },
    /// AGC inside the groups: the cost follows the largest group's stragglers.
    GroupAgc,
}

impl Scheme {
    /// The stragglers it tolerates (per group for group schemes).
    pub fn s_max(self, d: usize) -> usize {
        match self {
            Scheme::Cgc { s_max } | Scheme::GroupCgc { s_max } => s_max,
            Scheme::Agc | Scheme::GroupAgc => d - 1,
        }
    }

    /// The communication cost, in units of t_cm, of decoding with `s` stragglers.
    pub fn cost(self, d: usize, s: usize) -> f64 {
        match self {
            Scheme::Cgc { s_max } | Scheme::GroupCgc { s_max } => 1.0 / (d - s_max) as f64,
            Scheme::Agc | Scheme::GroupAgc => 1.0 / (d - s) as f64,
        }
    }

    /// Whether the workers form G-AGC's groups.
    pub fn grouped(self) -> bool {
        matches!(self, Scheme::GroupCgc { .. } | Scheme::GroupAgc)
    }

    /// Its name in the paper's figure.
    pub fn name(self) -> String {
        match self {
            Scheme::Cgc { s_max } => format!("CGC (s_max = {s_max})"),
            Scheme::Agc => "AGC".into(),
            Scheme::GroupCgc { s_max } => format!("G-CGC (s_max = {s_max})"),
            Scheme::GroupAgc => "G-AGC".into(),
        }
    }
}

/// Epochs after which the tail probability is below 1e-15 is not assumed: the chain is followed
/// until the unfinished mass is below this.
const TAIL: f64 = 1e-15;

/// Bin(n, p)'s probabilities of 0..=n.
pub fn binomial_pmf(n: usize, p: f64) -> Vec<f64> {
    // by the recurrence over k, stable for the sizes used here (n ≤ a few thousand)
    let mut v = vec![0.0; n + 1];
    let q = 1.0 - p;
    if p == 0.0 {
        v[0] = 1.0;
        return v;
    }
    if q == 0.0 {
        v[n] = 1.0;
        return v;
    }
    let mut ln = n as f64 * q.ln();
    v[0] = ln.exp();
    for (k, x) in v.iter_mut().enumerate().skip(1) {
        ln += ((n - k + 1) as f64).ln() - (k as f64).ln() + p.ln() - q.ln();
        *x = ln.exp();
    }
    v
}

/// h(u, i, s, s_max) = Pr(Y = i, S_i = s) for one system of `u` workers (eq. 81), by the chain:
/// rows i = 0.. until the unfinished mass is negligible, columns s = 0..=s_max.
pub fn h_table(u: usize, p: f64, s_max: usize) -> Vec<Vec<f64>> {
    let pmf: Vec<Vec<f64>> = (0..=u).map(|a| binomial_pmf(a, p)).collect();
    let mut dist = pmf[u].clone(); // S_0 ~ Bin(u, p)
    let mut rows = vec![];
    loop {
        rows.push(
            (0..=s_max.min(u)).map(|s| dist[s]).chain(std::iter::repeat_n(0.0, s_max.saturating_sub(u))).collect(),
        );
        let mut next = vec![0.0; u + 1];
        let mut left = 0.0;
        for a in (s_max + 1)..=u {
            if dist[a] == 0.0 {
                continue;
            }
            left += dist[a];
            for (b, pb) in pmf[a].iter().enumerate() {
                next[b] += dist[a] * pb;
            }
        }
        if left < TAIL || rows.len() > 100_000 {
            return rows;
        }
        dist = next;
    }
}

/// Pr(Y = i, S_i = s) of the whole system (eq. 83, or eq. 90 corrected for group schemes):
/// rows i = 0.., columns s = 0..=s_max.
pub fn stop_table(scheme: Scheme, n: usize, d: usize, p: f64) -> Vec<Vec<f64>> {
    let s_max = scheme.s_max(d);
    if !scheme.grouped() {
        return h_table(n, p, s_max);
    }
    let sizes: Vec<usize> = groups(n, d).iter().map(Vec::len).collect();
    let tables: Vec<Vec<Vec<f64>>> = sizes.iter().map(|&u| h_table(u, p, s_max)).collect();
    let epochs = tables.iter().map(Vec::len).max().unwrap_or(0);
    let at = |t: &Vec<Vec<f64>>, i: usize, s: usize| t.get(i).map_or(0.0, |r| r[s]);
    // A_u(i): the group has stopped before epoch i
    let mut before: Vec<f64> = vec![0.0; tables.len()];
    let mut rows = Vec::with_capacity(epochs);
    for i in 0..epochs {
        // Φ(s) = Π_j (A_j + Σ_{a ≤ s} h_j(i, a))
        let phi = |s: Option<usize>| {
            tables
                .iter()
                .zip(&before)
                .map(|(t, &a)| a + s.map_or(0.0, |s| (0..=s).map(|x| at(t, i, x)).sum::<f64>()))
                .product::<f64>()
        };
        let row: Vec<f64> = (0..=s_max).map(|s| phi(Some(s)) - phi(s.checked_sub(1))).collect();
        rows.push(row);
        for (a, t) in before.iter_mut().zip(&tables) {
            *a += (0..=s_max).map(|x| at(t, i, x)).sum::<f64>();
        }
    }
    rows
}

/// The model's constants: n workers with d parts each, the phases' lengths.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct Model {
    /// Workers n.
    pub n: usize,
    /// Parts per worker d (at most d − 1 stragglers are tolerated).
    pub d: usize,
    /// The computation phase t_cp.
    pub t_cp: f64,
    /// The time t_cm to send a whole (length-w) vector.
    pub t_cm: f64,
}

impl Model {
    /// The average execution time E\[T\] = t_cp + Σ_i Σ_s Pr(Y = i, S_i = s)·(c_s·t_cm + i·t),
    /// with t = t_cp + t_cm (eqs. 83–84).
    pub fn aet(&self, scheme: Scheme, p: f64) -> f64 {
        let Model { n, d, t_cp, t_cm } = *self;
        let t = t_cp + t_cm;
        t_cp + expectation(scheme, n, d, p, |i, s| scheme.cost(d, s) * t_cm + i as f64 * t)
    }

    /// Monte Carlo of the same model, drawn independently of the chain: (mean, standard error)
    /// of T over `trials` seeded runs.
    pub fn monte_carlo(&self, scheme: Scheme, p: f64, trials: usize, seed: u64) -> (f64, f64) {
        let Model { n, d, t_cp, t_cm } = *self;
        let t = t_cp + t_cm;
        mean_and_error(
            draws(scheme, n, d, p, trials, seed).map(|(i, s)| t_cp + scheme.cost(d, s) * t_cm + i as f64 * t),
            trials,
        )
    }

    /// The p in [lo, hi] where two schemes' AETs cross (bisection on the sign of the
    /// difference), or None when the sign is the same at both ends.
    pub fn crossover(&self, a: Scheme, b: Scheme, lo: f64, hi: f64) -> Option<f64> {
        let f = |p: f64| self.aet(a, p) - self.aet(b, p);
        let (mut lo, mut hi) = (lo, hi);
        let flo = f(lo);
        if flo.signum() == f(hi).signum() {
            return None;
        }
        for _ in 0..60 {
            let mid = 0.5 * (lo + hi);
            if f(mid).signum() == flo.signum() {
                lo = mid;
            } else {
                hi = mid;
            }
        }
        Some(0.5 * (lo + hi))
    }
}

/// E[f(Y, S)] under the restart model: Σ_i Σ_s Pr(Y = i, S_i = s)·f(i, s), Y the epoch the
/// master decodes in and S its stragglers (eq. 83, or eq. 90 corrected for group schemes).
pub fn expectation(scheme: Scheme, n: usize, d: usize, p: f64, f: impl Fn(usize, usize) -> f64) -> f64 {
    assert!(d >= 1 && d <= n && scheme.s_max(d) < d, "the restart model needs 1 ≤ d ≤ n and s_max < d");
    stop_table(scheme, n, d, p)
        .iter()
        .enumerate()
        .map(|(i, row)| row.iter().enumerate().map(|(s, &pr)| pr * f(i, s)).sum::<f64>())
        .sum()
}

/// `trials` seeded draws of (Y, S), by restarting simulated workers epoch by epoch (independent
/// of the chain [`stop_table`] follows).
pub fn draws(
    scheme: Scheme,
    n: usize,
    d: usize,
    p: f64,
    trials: usize,
    seed: u64,
) -> impl Iterator<Item = (usize, usize)> {
    let s_max = scheme.s_max(d);
    let sizes: Vec<usize> = if scheme.grouped() { groups(n, d).iter().map(Vec::len).collect() } else { vec![n] };
    let mut rng = Rng::from_key(&[seed, 0x5245_5354]);
    (0..trials).map(move |_| {
        // each system: the epoch its stragglers are ≤ s_max, and that count
        let finals: Vec<(usize, usize)> = sizes
            .iter()
            .map(|&u| {
                let (mut running, mut epoch) = (u, 0usize);
                loop {
                    let s = (0..running).filter(|_| rng.uniform() < p).count();
                    if s <= s_max {
                        return (epoch, s);
                    }
                    running = s;
                    epoch += 1;
                }
            })
            .collect();
        let last = finals.iter().map(|f| f.0).max().unwrap_or(0);
        // S^G: the largest final count among the systems that stop in the last epoch
        let worst = finals.iter().filter(|f| f.0 == last).map(|f| f.1).max().unwrap_or(0);
        (last, worst)
    })
}

/// (mean, standard error) of `trials` values.
fn mean_and_error(values: impl Iterator<Item = f64>, trials: usize) -> (f64, f64) {
    let (mut sum, mut sq) = (0.0, 0.0);
    for v in values {
        sum += v;
        sq += v * v;
    }
    let m = sum / trials as f64;
    let var = (sq / trials as f64 - m * m).max(0.0);
    (m, (var / trials as f64).sqrt())
}

/// The restart model with an experiment's measured phase times (eqs. 91–92, the EC2 run of
/// Sec. VIII): E\[T\] = t_cp + t_ov + Σ_i Σ_s Pr(Y = i, S_i = s)·(c_s·t_cm^(i) + t_ed(s) + D(i)),
/// where the first epoch's communication (everyone talks to the master at once) takes
/// `t_cm_first` and later ones `t_cm_later`, and D(i), the time the i failed epochs took, is
/// `first_epoch` + (i − 1)·`later_epoch` for i ≥ 1 (the notes' reading of "i·t_i", which
/// reproduces the paper's uncoded and CGC rows). Uncoded is `Cgc { s_max: 0 }` with d = 1.
///
/// ```
/// use outrun_codes::restart::{Measured, Scheme};
///
/// // Table VI's uncoded row at p = 0.05 (the paper: 18.39)
/// let uncoded = Measured { n: 20, d: 1, t_cp: 0.82, t_ov: 1.19, t_cm_first: 13.0, t_cm_later: 1.0,
///                          first_epoch: 16.0, later_epoch: 4.0, t_ed: vec![0.15 + 0.47] };
/// assert!((uncoded.aet(Scheme::Cgc { s_max: 0 }, 0.05) - 18.39).abs() < 0.02);
/// ```
#[derive(Clone, Debug, PartialEq)]
pub struct Measured {
    /// Workers n.
    pub n: usize,
    /// Parts per worker d.
    pub d: usize,
    /// The computation phase.
    pub t_cp: f64,
    /// Overhead of every iteration (broadcast and update).
    pub t_ov: f64,
    /// Sending a whole vector in the first epoch.
    pub t_cm_first: f64,
    /// Sending a whole vector in a later epoch.
    pub t_cm_later: f64,
    /// The first epoch's length (the restart period).
    pub first_epoch: f64,
    /// A later epoch's length.
    pub later_epoch: f64,
    /// Encoding and decoding with s stragglers, s = 0..=s_max (the last value serves larger s).
    pub t_ed: Vec<f64>,
}

impl Measured {
    /// The time of an iteration that decodes in epoch `i` with `s` stragglers.
    pub fn time(&self, scheme: Scheme, i: usize, s: usize) -> f64 {
        let t_cm = if i == 0 { self.t_cm_first } else { self.t_cm_later };
        let delay = if i == 0 { 0.0 } else { self.first_epoch + (i - 1) as f64 * self.later_epoch };
        let ed = self.t_ed.get(s).or(self.t_ed.last()).copied().unwrap_or(0.0);
        self.t_cp + self.t_ov + scheme.cost(self.d, s) * t_cm + ed + delay
    }

    /// The average execution time (eq. 91, or eq. 92 for group schemes).
    pub fn aet(&self, scheme: Scheme, p: f64) -> f64 {
        expectation(scheme, self.n, self.d, p, |i, s| self.time(scheme, i, s))
    }

    /// Monte Carlo of the same, independent of the chain: (mean, standard error).
    pub fn monte_carlo(&self, scheme: Scheme, p: f64, trials: usize, seed: u64) -> (f64, f64) {
        let values = draws(scheme, self.n, self.d, p, trials, seed).map(|(i, s)| self.time(scheme, i, s));
        mean_and_error(values, trials)
    }
}

/// Sec. VIII's EC2 run (n = 20 m4.2xlarge workers, d = 3): the phase times of Tables IV and V
/// (broadcast 1.15 s, update 0.04 s, computation 2.45 s — uncoded 0.82 s —, the first epoch's
/// communication 13 s, later ones 1 s, restarts after 16 s and then every 4 s) as the model of
/// `scheme`, or of uncoded for None; with the scheme to evaluate it with (uncoded: CGC with d = 1).
pub fn sec8(scheme: Option<Scheme>) -> (Measured, Scheme) {
    let base = Measured {
        n: 20,
        d: 3,
        t_cp: 2.45,
        t_ov: 1.15 + 0.04,
        t_cm_first: 13.0,
        t_cm_later: 1.0,
        first_epoch: 16.0,
        later_epoch: 4.0,
        t_ed: vec![],
    };
    // Enc + Dec per scheme (Table IV) and, for AGC, per stragglers s (Table V)
    let cgc_ed = [0.33 + 0.79, 0.43 + 0.95, 0.44 + 1.58];
    match scheme {
        None => (Measured { d: 1, t_cp: 0.82, t_ed: vec![0.15 + 0.47], ..base }, Scheme::Cgc { s_max: 0 }),
        Some(s @ (Scheme::Cgc { s_max } | Scheme::GroupCgc { s_max })) => {
            (Measured { t_ed: vec![cgc_ed[s_max.min(2)]], ..base }, s)
        }
        Some(s @ (Scheme::Agc | Scheme::GroupAgc)) => {
            (Measured { t_ed: vec![0.37 + 0.63, 0.47 + 0.87, 0.92 + 1.67], ..base }, s)
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Table VI (eqs. 91–92 with Tables IV–V): the seven rows the notes reproduce within 0.02 of
    /// the paper, the other three at the notes' own values (both within the notes' ±0.02), and a Monte Carlo
    /// of the same model within 1 %.
    #[test]
    fn table6_rows() {
        let cases: [(Option<Scheme>, [f64; 2]); 9] = [
            (None, [18.39, 19.95]),
            (Some(Scheme::Cgc { s_max: 0 }), [17.00, 20.45]),
            (Some(Scheme::GroupCgc { s_max: 0 }), [17.00, 20.45]),
            (Some(Scheme::Cgc { s_max: 1 }), [14.18, 17.68]),
            (Some(Scheme::GroupCgc { s_max: 1 }), [12.10, 13.56]),
            (Some(Scheme::Cgc { s_max: 2 }), [18.96, 19.96]),
            (Some(Scheme::GroupCgc { s_max: 2 }), [18.67, 18.70]),
            (Some(Scheme::Agc), [12.77, 16.53]),
            (Some(Scheme::GroupAgc), [11.03, 12.78]),
        ];
        for (which, want) in cases {
            let (m, scheme) = sec8(which);
            for (p, w) in [0.05, 0.1].into_iter().zip(want) {
                let got = m.aet(scheme, p);
                assert!((got - w).abs() <= 0.02, "{which:?} at p = {p}: {got} vs {w}");
            }
            let (mc, _) = m.monte_carlo(scheme, 0.1, 40_000, 3);
            assert!((mc / m.aet(scheme, 0.1) - 1.0).abs() < 0.01, "{which:?}: Monte Carlo {mc}");
        }
    }

    const FIG3: Model = Model { n: 20, d: 3, t_cp: 3.0, t_cm: 13.0 };

    const SCHEMES: [Scheme; 8] = [
        Scheme::Cgc { s_max: 0 },
        Scheme::Cgc { s_max: 1 },
        Scheme::Cgc { s_max: 2 },
        Scheme::Agc,
        Scheme::GroupCgc { s_max: 0 },
        Scheme::GroupCgc { s_max: 1 },
        Scheme::GroupCgc { s_max: 2 },
        Scheme::GroupAgc,
    ];

    /// The notes' table of Fig. 3 (§5.2), every cell to three decimals.
    #[test]
    fn fig3_table() {
        let table = [
            (0.001, [7.651, 9.503, 16.000, 7.377, 7.651, 9.500, 16.000, 7.376]),
            (0.01, [10.279, 9.770, 16.016, 7.845, 10.279, 9.539, 16.000, 7.744]),
            (0.05, [18.421, 13.745, 17.208, 11.023, 18.421, 10.423, 16.029, 9.111]),
            (0.1, [24.654, 19.505, 21.185, 15.877, 24.654, 12.789, 16.216, 10.666]),
            (0.2, [35.083, 27.613, 29.413, 24.030, 35.083, 19.315, 17.535, 14.086]),
            (0.3, [47.133, 35.961, 35.961, 31.393, 47.133, 26.012, 20.486, 17.908]),
            (0.4, [62.158, 46.857, 44.577, 40.753, 62.158, 33.491, 25.040, 22.485]),
            (0.5, [82.380, 61.465, 56.426, 53.229, 82.380, 43.681, 31.112, 28.617]),
        ];
        for (p, want) in table {
            for (s, w) in SCHEMES.iter().zip(want) {
                let got = FIG3.aet(*s, p);
                assert!((got - w).abs() < 1.5e-3, "p = {p}, {}: {got} vs {w}", s.name());
            }
        }
    }

    /// The probabilities of every scheme sum to 1 (the corrected eq. 90; the printed one sums
    /// to 60–120).
    #[test]
    fn stop_tables_are_distributions() {
        for p in [0.01, 0.2, 0.5] {
            for s in SCHEMES {
                let total: f64 = stop_table(s, 20, 3, p).iter().flatten().sum();
                assert!((total - 1.0).abs() < 1e-9, "{} at p = {p}: {total}", s.name());
            }
        }
    }

    /// An independent Monte Carlo of the model agrees with the chain, for n and d beyond the
    /// paper's figure too.
    #[test]
    fn monte_carlo_agrees() {
        for (n, d, p) in [(20, 3, 0.2), (12, 4, 0.3), (31, 5, 0.15)] {
            for s in [Scheme::Cgc { s_max: 1 }, Scheme::Agc, Scheme::GroupCgc { s_max: 1 }, Scheme::GroupAgc] {
                let model = Model { n, d, ..FIG3 };
                let want = model.aet(s, p);
                let (m, se) = model.monte_carlo(s, p, 40_000, 7);
                assert!(
                    (m - want).abs() < 4.0 * se + 1e-9,
                    "{} n={n} d={d} p={p}: MC {m} ± {se}, chain {want}",
                    s.name()
                );
            }
        }
    }

    /// The notes' crossovers: CGC0 = CGC1 at 0.0078, CGC1 = CGC2 at 0.3000, G-CGC0 = G-CGC1 at
    /// 0.0073, G-CGC1 = G-CGC2 at 0.1643.
    #[test]
    fn crossovers() {
        let x = |a, b| FIG3.crossover(a, b, 1e-4, 0.6).unwrap();
        assert!((x(Scheme::Cgc { s_max: 0 }, Scheme::Cgc { s_max: 1 }) - 0.0078).abs() < 1e-4);
        assert!((x(Scheme::Cgc { s_max: 1 }, Scheme::Cgc { s_max: 2 }) - 0.3000).abs() < 1e-4);
        assert!((x(Scheme::GroupCgc { s_max: 0 }, Scheme::GroupCgc { s_max: 1 }) - 0.0073).abs() < 1e-4);
        assert!((x(Scheme::GroupCgc { s_max: 1 }, Scheme::GroupCgc { s_max: 2 }) - 0.1643).abs() < 1e-4);
    }
}
