//! CodedFedL's load allocation (thesis ch. 5, §5.3.3–5.4, App. L–O; engineering note
//! `seed-004-ch4-ch5-ch7.md` §3.3): how many points each client processes per round, the
//! server's parity size, and the deadline t* at which the server stops waiting.
//!
//! Node j (a client, or the server's computing unit) processing ℓ points takes
//! T = A·τ_down + B·τ_up + ℓ/μ + Exp(rate αμ/ℓ): a download and an upload, each repeated a
//! Geometric(1 − p) number of times (A, B ≥ 1, P(A = a, B = b) = (1−p)²p^{a+b−2}), a
//! deterministic ℓ/μ of computation and an exponential tail of mean ℓ/(αμ). Its expected return
//! by t is E\[R(t; ℓ)\] = ℓ·P(T ≤ t) = Σ_{a,b} P(a, b)·ℓ·(1 − e^{−(αμ/ℓ)(t − ℓ/μ − aτ_down − bτ_up)})⁺
//! (Theorem 11, [`expected_return`]; with τ_down = τ_up = τ the pairs of a total ν = a + b add up
//! to its h_ν = (ν−1)(1−p)²p^{ν−2}), piecewise concave in ℓ between the points where a term
//! switches on; [`best_load`] maximises it per piece. The optimised total Σ_j max_ℓ E\[R_j(t)\]
//! grows with t, so [`allocate`] bisects t until it equals the m points a round needs (Claim 2:
//! the two steps are optimal).
//!
//! Without retransmissions (p = 0) the optimum is linear in t: ℓ*(t) = s·(t − τ_down − τ_up),
//! s = αμ/(x − 1) with x = −W₋₁(−e^{−(1+α)}), returning s̃·(t − τ_down − τ_up), s̃ = s(1 − e^{−α(μ/s − 1)})
//! (eqs. 5.34–5.36; [`awgn_slopes`]) — HCMM's 1/λ and rate for the law a = 1/μ, μ_H = αμ
//! (`crate::lambda`, `crate::rate`; tested).

use crate::hcmm::x_of_xi;

/// One node's statistics: compute speed, memory-access ratio, links and capacity.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct Node {
    /// μ: points per second of the deterministic part.
    pub mu: f64,
    /// α: the compute-to-memory-access ratio (the tail's mean is ℓ/(αμ)).
    pub alpha: f64,
    /// τ_down: seconds per transmission of the model down to the node.
    pub tau_down: f64,
    /// τ_up: seconds per transmission of the result up (the thesis: τ both ways).
    pub tau_up: f64,
    /// p: probability that a transmission fails (and is repeated).
    pub p: f64,
    /// The most points the node can process (a client's ℓ_j; the server's u_max).
    pub cap: f64,
}

impl Node {
    /// A node whose links take `tau` seconds per transmission each way (the thesis's model).
    pub fn symmetric(mu: f64, alpha: f64, tau: f64, p: f64, cap: f64) -> Self {
        Node { mu, alpha, tau_down: tau, tau_up: tau, p, cap }
    }

    /// E\[T\] for `l` points: (ℓ/μ)(1 + 1/α) + (τ_down + τ_up)/(1 − p) (eq. 5.15).
    pub fn mean_time(&self, l: f64) -> f64 {
        l / self.mu * (1.0 + 1.0 / self.alpha) + (self.tau_down + self.tau_up) / (1.0 - self.p)
    }

    /// The link's delays with their probabilities by `t`: (P, a·τ_down + b·τ_up) for a
    /// transmissions down and b up (a, b ≥ 1, P = (1 − p)²p^{a+b−2}), those that leave time
    /// before `t` and whose total probability is not negligible (< 1e-16 left out). Without
    /// failures or without link time, one term of weight 1.
    fn delays(&self, t: f64) -> Vec<(f64, f64)> {
        let both = self.tau_down + self.tau_up;
        if self.p == 0.0 || both == 0.0 {
            return if both < t { vec![(1.0, both)] } else { vec![] };
        }
        let q = (1.0 - self.p) * (1.0 - self.p);
        let mut out = vec![];
        // P(a + b > ν) ≤ (ν + 1)p^{ν−1}: stop where that is negligible
        let mut nu = 2u32;
        loop {
            let weight = q * self.p.powi(nu as i32 - 2);
            let mut any = false;
            for a in 1..nu {
                let delay = f64::from(a) * self.tau_down + f64::from(nu - a) * self.tau_up;
                if delay < t {
                    out.push((weight, delay));
                    any = true;
                }
            }
            if !any || (f64::from(nu) + 1.0) * self.p.powi(nu as i32 - 1) <= 1e-16 {
                return out;
            }
            nu += 1;
        }
    }
}

/// E\[R(t; ℓ)\] = ℓ·P(T ≤ t) for node `n` processing `l` points (Theorem 11, with the down and
/// up transmissions counted apart: with τ_down = τ_up the pairs of a total ν are its
/// (ν − 1)(1 − p)²p^{ν−2}).
pub fn expected_return(n: &Node, t: f64, l: f64) -> f64 {
    if l <= 0.0 {
        return 0.0;
    }
    return_of(n, &n.delays(t), t, l)
}

fn return_of(n: &Node, delays: &[(f64, f64)], t: f64, l: f64) -> f64 {
    let rate = n.alpha * n.mu / l;
    delays
        .iter()
        .map(|&(w, delay)| {
            let slack = t - l / n.mu - delay;
            if slack <= 0.0 {
                0.0
            } else {
                w * l * -(-rate * slack).exp_m1()
            }
        })
        .sum()
}

/// The load in \[0, cap\] that maximises E\[R(t; ℓ)\], and that maximum. The objective is concave
/// between consecutive breakpoints ℓ = μ(t − delay) (where term ν switches off), so each piece
/// is searched by golden section and the best piece wins.
pub fn best_load(n: &Node, t: f64) -> (f64, f64) {
    let delays = n.delays(t);
    let mut cuts: Vec<f64> = delays.iter().map(|&(_, d)| n.mu * (t - d)).filter(|&l| l > 0.0 && l < n.cap).collect();
    cuts.extend([0.0, n.cap]);
    cuts.sort_by(f64::total_cmp);
    cuts.dedup();
    let f = |l: f64| if l <= 0.0 { 0.0 } else { return_of(n, &delays, t, l) };
    let mut best = (0.0, 0.0);
    for w in cuts.windows(2) {
        let l = golden(f, w[0], w[1]);
        for cand in [l, w[1]] {
            let r = f(cand);
            if r > best.1 {
                best = (cand, r);
            }
        }
    }
    best
}

/// The maximiser of a function concave on [a, b] (golden-section search to 1e-12 relative).
fn golden(f: impl Fn(f64) -> f64, mut a: f64, mut b: f64) -> f64 {
    let g = (5f64.sqrt() - 1.0) / 2.0;
    let (mut c, mut d) = (b - g * (b - a), a + g * (b - a));
    let (mut fc, mut fd) = (f(c), f(d));
    while (b - a) > 1e-12 * b.abs().max(1e-300) {
        if fc > fd {
            (b, d, fd) = (d, c, fc);
            c = b - g * (b - a);
            fc = f(c);
        } else {
            (a, c, fc) = (c, d, fd);
            d = a + g * (b - a);
            fd = f(d);
        }
    }
    0.5 * (a + b)
}

/// Without retransmissions (p = 0): the optimal load per second of slack t − τ_down − τ_up,
/// s = αμ/(x − 1), and the return per second, s̃ = s(1 − e^{−α(μ/s − 1)}) (eqs. 5.34–5.36, where
/// the slack is t − 2τ), x = −W₋₁(−e^{−(1+α)}).
pub fn awgn_slopes(n: &Node) -> (f64, f64) {
    let x = x_of_xi(n.alpha);
    let s = n.alpha * n.mu / (x - 1.0);
    (s, s * -(-n.alpha * (n.mu / s - 1.0)).exp_m1())
}

/// CodedFedL's allocation: the deadline t*, each client's load ℓ*_j and expected return, and
/// the server's parity size u* with its expected return.
#[derive(Clone, Debug, PartialEq)]
pub struct Allocation {
    /// t*: the server waits this long every round.
    pub t: f64,
    /// ℓ*_j per client.
    pub loads: Vec<f64>,
    /// E\[R_j(t*)\] per client.
    pub returns: Vec<f64>,
    /// u*: the parity rows the server processes.
    pub u: f64,
    /// E\[R_C(t*)\] (u* for a reliable server).
    pub server_return: f64,
}

/// Why no allocation exists.
#[derive(Clone, Debug, PartialEq, thiserror::Error)]
pub enum AllocError {
    /// Even with every client at full load and the whole parity, the expected return never
    /// reaches m.
    #[error("the clients and the server can return at most {most} of the {m} points a round needs in expectation; more parity (u_max) or fewer points")]
    Unreachable {
        /// The most they return.
        most: f64,
        /// The points needed.
        m: f64,
    },
}

/// Bisect t until Σ_j max E\[R_j(t)\] + E\[R_C(t)\] = `m`. The server is `server` (a node whose cap
/// is u_max), or reliable (`None`: it returns all `u_max` parity rows by any t > 0, the thesis's
/// experiments).
pub fn allocate(clients: &[Node], server: Option<&Node>, u_max: f64, m: f64) -> Result<Allocation, AllocError> {
    let total = |t: f64| -> f64 {
        let c: f64 = clients.iter().map(|n| best_load(n, t).1).sum();
        c + server.map_or(u_max, |s| best_load(s, t).1)
    };
    // every node at full load with a long tail of time
    let most = clients.iter().map(|n| n.cap).sum::<f64>() + server.map_or(u_max, |s| s.cap);
    if most < m {
        return Err(AllocError::Unreachable { most, m });
    }
    let mut hi = clients.iter().chain(server).map(|n| n.mean_time(n.cap)).fold(1e-9, f64::max);
    for _ in 0..200 {
        if total(hi) >= m * (1.0 - 1e-12) {
            break;
        }
        hi *= 2.0;
    }
    if total(hi) < m * (1.0 - 1e-12) {
        return Err(AllocError::Unreachable { most: total(hi), m });
    }
    let mut lo = 0.0;
    for _ in 0..200 {
        let mid = 0.5 * (lo + hi);
        if total(mid) >= m {
            hi = mid;
        } else {
            lo = mid;
        }
        if hi - lo <= 1e-12 * hi {
            break;
        }
    }
    let t = hi;
    let (loads, returns) = clients.iter().map(|n| best_load(n, t)).unzip();
    let (u, server_return) = server.map_or((u_max, u_max), |s| best_load(s, t));
    Ok(Allocation { t, loads, returns, u, server_return })
}

/// The privacy of a client's parity upload (App. Q, ε-MI-DP of a Gaussian projection with
/// W = I): ε = ½·log₂(1 + u/f²), f = min over features k of √(Σ_i x_ik² − max_i x_ik²), for the
/// client's rows `x` (each a row of features).
pub fn privacy_epsilon(u: f64, x: &[Vec<f64>]) -> f64 {
    let q = x.first().map_or(0, Vec::len);
    let f = (0..q)
        .map(|k| {
            let sq: Vec<f64> = x.iter().map(|r| r[k] * r[k]).collect();
            (sq.iter().sum::<f64>() - sq.iter().cloned().fold(0.0, f64::max)).sqrt()
        })
        .fold(f64::INFINITY, f64::min);
    0.5 * (1.0 + u / (f * f)).log2()
}

/// The thesis's simulated network (§5.5): client k's uplink rate is 216 kbps × 0.95^{π(k)} and
/// its compute rate 3.072·10⁶ MAC/s × 0.8^{π'(k)}, for two permutations π, π' of 0..n (from
/// `perm_rate`, `perm_mac`); a model of q × c 32-bit values with 10 % overhead per
/// transmission, 2·q·c MACs per point, p = 0.1, α = 2, `cap` points per client.
pub fn thesis_clients(n: usize, q: usize, c: usize, cap: f64, perm_rate: &[usize], perm_mac: &[usize]) -> Vec<Node> {
    let bits = (q * c) as f64 * 32.0 * 1.1;
    let macs = 2.0 * (q * c) as f64;
    (0..n)
        .map(|k| {
            let tau = bits / (216e3 * 0.95f64.powi(perm_rate[k] as i32));
            Node::symmetric(3.072e6 * 0.8f64.powi(perm_mac[k] as i32) / macs, 2.0, tau, 0.1, cap)
        })
        .collect()
}

/// The clients in the order the thesis hands out its non-IID shards (§5.5): by E\[T\] at
/// `points` points each (eq. 5.15, [`Node::mean_time`]), fastest first. With the data sorted by
/// label and cut into one block per client, the slowest clients then hold whole classes — the
/// setting in which greedy uncoded, which drops the slowest, never sees them. Ties keep their
/// order.
pub fn by_expected_time(mut clients: Vec<Node>, points: f64) -> Vec<Node> {
    clients.sort_by(|a, b| a.mean_time(points).total_cmp(&b.mean_time(points)));
    clients
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::{lambda, rate, Rng, RowLaw};

    fn node(p: f64) -> Node {
        Node::symmetric(50.0, 2.0, 0.3, p, 400.0)
    }

    #[test]
    fn without_retransmissions_the_optimum_is_the_closed_form() {
        let n = node(0.0);
        let (s, s_tilde) = awgn_slopes(&n);
        for t in [1.0, 2.5, 5.0] {
            let (l, r) = best_load(&n, t);
            let want = (s * (t - 2.0 * n.tau_up)).min(n.cap);
            assert!((l - want).abs() <= 1e-6 * want, "t = {t}: ℓ* = {l}, closed form {want}");
            assert!((r - s_tilde * (t - 2.0 * n.tau_up)).abs() <= 1e-9 * r, "t = {t}: {r}");
        }
        assert_eq!(best_load(&n, 0.5).1, 0.0, "t ≤ 2τ: nothing returns");
        // past ζ = ℓ/s + 2τ the whole load is best
        let zeta = n.cap / s + 2.0 * n.tau_up;
        assert!((best_load(&n, zeta * 1.5).0 - n.cap).abs() < 1e-9);
    }

    #[test]
    fn the_closed_form_is_hcmms_optimum_for_the_same_law() {
        // CodedFedL's T = ℓ/μ + Exp(αμ/ℓ) is HCMM's a·ℓ + (ℓ/μ_H)·Exp(1) with a = 1/μ, μ_H = αμ
        for (mu, alpha) in [(50.0, 2.0), (0.12, 2.0), (7.0, 0.5), (3.0, 10.0)] {
            let n = Node::symmetric(mu, alpha, 0.0, 0.0, f64::INFINITY);
            let (s, s_tilde) = awgn_slopes(&n);
            let law = RowLaw::exp(1.0 / mu, alpha * mu);
            assert!((s - 1.0 / lambda(&law)).abs() <= 1e-12 * s, "μ = {mu}, α = {alpha}");
            assert!((s_tilde - rate(&law)).abs() <= 1e-12 * s_tilde, "μ = {mu}, α = {alpha}");
        }
    }

    #[test]
    fn the_expected_return_matches_monte_carlo() {
        // the thesis's symmetric link, and one three times as slow up as down
        for n in [node(0.3), Node { tau_down: 0.1, tau_up: 0.3, ..node(0.3) }] {
            let (t, l) = (6.0, 150.0);
            let mut rng = Rng::from_key(&[5, 27]);
            let draws = 200_000;
            let mut hits = 0u64;
            for _ in 0..draws {
                let mut link = 0.0;
                for tau in [n.tau_down, n.tau_up] {
                    link += tau;
                    while rng.uniform() < n.p {
                        link += tau;
                    }
                }
                let time = link + l / n.mu + rng.exp1() * l / (n.alpha * n.mu);
                hits += u64::from(time <= t);
            }
            let prob = hits as f64 / draws as f64;
            let sd = (prob * (1.0 - prob) / draws as f64).sqrt();
            let want = expected_return(&n, t, l) / l;
            assert!((prob - want).abs() < 4.0 * sd, "{n:?}: Monte Carlo {prob} ± {sd}, formula {want}");
            // the transmission counts' probabilities sum to one: a long time returns everything
            assert!((expected_return(&n, 1e4, l) - l).abs() < 1e-9 * l);
        }
    }

    #[test]
    fn with_instant_links_failures_cost_nothing() {
        let n = Node { tau_down: 0.0, tau_up: 0.0, ..node(0.5) };
        let l = 100.0;
        let want = l * -(-(n.alpha * n.mu / l) * (3.0 - l / n.mu)).exp_m1();
        assert!((expected_return(&n, 3.0, l) - want).abs() < 1e-12 * want);
    }

    #[test]
    fn best_load_beats_a_fine_grid() {
        let n = node(0.2);
        for t in [1.5, 3.0, 8.0, 20.0] {
            let (l, r) = best_load(&n, t);
            let grid = (0..=4000).map(|i| expected_return(&n, t, n.cap * i as f64 / 4000.0)).fold(0.0, f64::max);
            assert!(r >= grid * (1.0 - 1e-9), "t = {t}: {r} at ℓ = {l}, grid {grid}");
            assert!((expected_return(&n, t, l) - r).abs() < 1e-12 * r.max(1.0));
        }
    }

    /// Step 2's bisection needs the optimised return to grow with t (Claim 2), for symmetric and
    /// asymmetric lossy links and without losses.
    #[test]
    fn the_optimised_return_grows_with_the_deadline() {
        for n in [node(0.2), node(0.0), Node { tau_down: 0.05, tau_up: 0.4, ..node(0.3) }] {
            let returns: Vec<f64> = (1..=100).map(|i| best_load(&n, 0.2 * i as f64).1).collect();
            assert!(returns.windows(2).all(|w| w[1] >= w[0] * (1.0 - 1e-12)), "{n:?}");
            // a long deadline returns every point
            assert!((best_load(&n, 500.0).1 - n.cap).abs() < 1e-6 * n.cap, "{n:?}");
        }
    }

    #[test]
    fn the_allocation_meets_m_at_the_smallest_deadline() {
        let clients: Vec<Node> =
            (0..6).map(|k| Node::symmetric(20.0 + 10.0 * k as f64, 2.0, 0.05 * (k + 1) as f64, 0.1, 400.0)).collect();
        let m = 2400.0;
        let a = allocate(&clients, None, 0.1 * m, m).unwrap();
        let got: f64 = a.returns.iter().sum::<f64>() + a.server_return;
        assert!((got - m).abs() < 1e-6 * m, "Σ E[R] = {got}");
        assert_eq!((a.u, a.server_return), (0.1 * m, 0.1 * m));
        // a slightly earlier deadline returns less than m
        let earlier: f64 = clients.iter().map(|n| best_load(n, a.t * (1.0 - 1e-6)).1).sum::<f64>() + a.u;
        assert!(earlier < m);
        for (n, (&l, &r)) in clients.iter().zip(a.loads.iter().zip(&a.returns)) {
            assert!((0.0..=n.cap).contains(&l) && (r - expected_return(n, a.t, l)).abs() < 1e-9 * r.max(1.0));
        }
        // more parity, an earlier deadline
        assert!(allocate(&clients, None, 0.2 * m, m).unwrap().t < a.t);
        // a server like a client, with a cap of u_max
        let server = Node::symmetric(1e3, 2.0, 0.0, 0.0, 240.0);
        let b = allocate(&clients, Some(&server), 240.0, m).unwrap();
        assert!(b.u <= 240.0 && b.server_return <= b.u);
        assert!(matches!(allocate(&clients, None, 0.0, 1e5), Err(AllocError::Unreachable { .. })));
    }

    #[test]
    fn the_thesis_network_has_its_slowest_client_at_about_1_4_hours_per_round() {
        // 2·q·c = 40 000 MACs per point (q = 2000, c = 10); 400 points at 3.072·10⁶·0.8²⁹ MAC/s
        let id: Vec<usize> = (0..30).collect();
        let clients = thesis_clients(30, 2000, 10, 400.0, &id, &id);
        let slowest = clients.iter().map(|n| n.mean_time(400.0)).fold(0.0, f64::max);
        assert!((slowest / 3600.0 - 1.4).abs() < 0.05, "{} h", slowest / 3600.0);
        // δ = 0.1 of m = 12 000 as parity: the deadline is well before the slowest client's mean
        let a = allocate(&clients, None, 1200.0, 12_000.0).unwrap();
        assert!(a.t < 0.5 * slowest, "t* = {} h", a.t / 3600.0);
        eprintln!("t* = {:.3} h, slowest client {:.3} h", a.t / 3600.0, slowest / 3600.0);
        // a model of 2000 × 10 values at 216 kbps·0.95^29 takes τ ≈ 14.6 s per transmission
        assert!((clients[29].tau_up - 2000.0 * 10.0 * 32.0 * 1.1 / (216e3 * 0.95f64.powi(29))).abs() < 1e-9);
    }

    #[test]
    fn clients_by_expected_time_are_fastest_first_and_the_same_clients() {
        let perm = |id: u64| Rng::from_key(&[1, crate::domain::SAMPLE, id]).permutation(30);
        let clients = thesis_clients(30, 2000, 10, 400.0, &perm(2), &perm(3));
        let sorted = by_expected_time(clients.clone(), 400.0);
        let t: Vec<f64> = sorted.iter().map(|n| n.mean_time(400.0)).collect();
        assert!(t.windows(2).all(|w| w[0] <= w[1]), "{t:?}");
        // a permutation of the same clients: every client appears as often as before
        for n in &clients {
            let count = |v: &[Node]| v.iter().filter(|m| *m == n).count();
            assert_eq!(count(&sorted), count(&clients));
        }
        // the permuted network is not already sorted (the test would show nothing)
        assert!(clients.windows(2).any(|w| w[0].mean_time(400.0) > w[1].mean_time(400.0)));
    }

    #[test]
    fn privacy_follows_the_smallest_column_energy() {
        // columns: [3, 4] → √(9 + 16 − 16) = 3; [1, 1] → 1: f = 1
        let x = vec![vec![3.0, 1.0], vec![4.0, 1.0]];
        assert!((privacy_epsilon(3.0, &x) - 0.5 * 4f64.log2()).abs() < 1e-15);
    }
}
