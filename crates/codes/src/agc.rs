//! Adaptive Gradient Coding (AGC) and Group AGC (Cao, Yan, Tang, Han; notes `seed-003-agc.md`).
//!
//! n workers, n data parts; worker j holds parts j, j+1, …, j+d−1 (mod n) and computes their
//! partial gradients g_i. Every g_i is cut into L contiguous sub-vectors g_i(m) of ⌈w/L⌉ values
//! (zero-padded). Worker j sends, round after round r = 0, 1, …, the combination
//! `X_{j,r} = Σ_{i held, m} B[r·n+j, m·n+i]·g_i(m)` with B = E·M (nL × nL): E a random block
//! staircase (round r sees only its first L + (r+1)(n−d) columns), M = [M^U; M^D] with M^U
//! summing the parts of each sub-vector and M^D solved so that B is zero wherever a worker lacks
//! a part. With s stragglers the master stops after r_s = ⌈L/(d−s)⌉ rounds of the n − s active
//! workers and solves an N × N system (N = L + (n−d)·r_s) for the L sub-vectors of the full
//! gradient; it need not know s: it counts arrivals per round ([`AgcCode::select`], the notes'
//! greedy capped rule, §2.7).
//!
//! G-AGC ([`groups`]): workers in groups of d (each holds its group's d parts: an AGC code with
//! n = d) plus a last group of n − md workers with AGC's cyclic placement inside; each group
//! decodes its own sum and the master adds them.
//!
//! **CGC** (Ye and Abbe's communication-computation efficient gradient coding, the baseline of
//! the AGC paper; notes `seed-003-agc.md` §1, `seed-001-cegc.md` §6.5) is AGC's first round
//! alone ([`AgcCode::one_round`]): L = m sub-vectors, d = s_max + m parts per worker, one message
//! of ⌈w/m⌉ values, and any n − s_max workers decode (E is n × (n − s_max), M solved from the
//! workers that lack a part, as the notes' reference `cgc_build`). G-CGC is CGC inside G-AGC's
//! groups (Remark 5).

use ndarray::{Array1, Array2, Axis};
use rand::Rng as _;
use serde::{Deserialize, Serialize};

use ndarray_linalg::{FactorizeInto, Solve};

use crate::linalg::Matrix;
use crate::linear::condition;
use crate::rng::{domain, Rng};

/// ⌈a/b⌉.
fn cdiv(a: usize, b: usize) -> usize {
    a.div_ceil(b)
}

/// Rounds needed with s stragglers: r_s = ⌈L/(d − s)⌉ (eq. 51), s < d.
pub fn rounds_needed(d: usize, l: usize, s: usize) -> usize {
    cdiv(l, d - s)
}

/// Values each active worker sends with s stragglers, s = 0..d−1: q_s = r_s·⌈w/L⌉ (eq. 58).
pub fn q_agc(d: usize, w: usize, l: usize) -> Vec<usize> {
    (0..d).map(|s| rounds_needed(d, l, s) * cdiv(w, l)).collect()
}

/// The optimal communication vector c* (Theorem 1): q_s = ⌈w/(d − s)⌉.
pub fn q_star(d: usize, w: usize) -> Vec<usize> {
    (0..d).map(|s| cdiv(w, d - s)).collect()
}

/// G-AGC's groups of workers (0-based): ⌊n/d⌋ − 1 groups of d, then one of the rest (eq. 66).
pub fn groups(n: usize, d: usize) -> Vec<Vec<usize>> {
    let m = (n / d).saturating_sub(1);
    let mut g: Vec<Vec<usize>> = (0..m).map(|j| (j * d..(j + 1) * d).collect()).collect();
    g.push((m * d..n).collect());
    g
}

/// An AGC code for n workers, d parts each, L sub-vectors.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct AgcCode {
    /// Workers (= parts).
    pub n: usize,
    /// Parts per worker.
    pub d: usize,
    /// Sub-vectors per gradient (and most rounds).
    pub l: usize,
    /// E, nL × (n−d+1)L (n × (n − d + L) for one round).
    pub e: Matrix,
    /// Rounds a worker sends at most: L (AGC), or 1 (CGC: one message of ⌈w/L⌉ values, any
    /// d − L stragglers tolerated).
    pub rounds: usize,
    /// B = E·M, nL × nL: row r·n + j is round r of worker j, column m·n + i is g_i(m).
    pub b: Matrix,
    /// max |M| (a cheap proxy of numerical trouble).
    pub max_m: f64,
    /// Worst relative decode error over the patterns checked when the code was chosen.
    pub worst_error: f64,
    /// Worst condition number of the decoding matrices checked.
    pub worst_cond: f64,
    /// Patterns (straggler sets) checked, and whether that was all of them.
    pub patterns_checked: u64,
    /// Whether every straggler set with s < d was checked.
    pub exhaustive: bool,
}

/// How the master combines the arrivals it selected: sub-vector m of the total
/// = Σ_k coef\[m\]\[k\]·X_k, k over the selected arrivals (in the order given).
#[derive(Clone, Debug, PartialEq)]
pub struct AgcDecoding {
    /// Indices (into the arrivals offered) of the rows used.
    pub used: Vec<usize>,
    /// `coef[m][k]`.
    pub coef: Vec<Vec<f64>>,
    /// Rounds the decode needed (the largest round used + 1).
    pub rounds: usize,
    /// Condition number of Ê.
    pub cond: f64,
    /// max |coef·Ê − [I_L 0]|: how far the coefficients are from recovering the L parts.
    pub residual: f64,
}

impl AgcCode {
    /// Whether worker j holds part i.
    pub fn holds(&self, j: usize, i: usize) -> bool {
        (i + self.n - j) % self.n < self.d
    }

    /// The parts worker j holds, in order j, j+1, … (mod n).
    pub fn parts_of(&self, j: usize) -> Vec<usize> {
        (0..self.d).map(|t| (j + t) % self.n).collect()
    }

    /// Build from a given E (Example 3 of the notes).
    pub fn from_e(n: usize, d: usize, l: usize, e: Matrix) -> Self {
        let cols = (n - d + 1) * l;
        assert_eq!(e.dim(), (n * l, cols), "E is nL × (n−d+1)L");
        let holds = |j: usize, i: usize| (i + n - j) % n < d;
        let mut m = Array2::zeros((cols, n * l));
        for mm in 0..l {
            for i in 0..n {
                m[(mm, mm * n + i)] = 1.0;
            }
        }
        if n > d {
            crate::linalg::single_threaded_blas();
            // A_i depends on the part only: one LU factorization (exact, no rank cutoff: A_i is
            // square and invertible with probability 1, but can be badly conditioned), L solves
            for i in 0..n {
                let q: Vec<usize> =
                    (0..l).flat_map(|r| (0..n).filter(move |&j| !holds(j, i)).map(move |j| r * n + j)).collect();
                let a = e.select(Axis(0), &q).slice(ndarray::s![.., l..cols]).to_owned();
                let lu = a.factorize_into().expect("A_i is square");
                for mm in 0..l {
                    let rhs: Array1<f64> = q.iter().map(|&row| -e[(row, mm)]).collect();
                    let x = lu.solve(&rhs).expect("A_i is invertible with probability 1");
                    for (k, v2) in x.iter().enumerate() {
                        m[(l + k, mm * n + i)] = *v2;
                    }
                }
            }
        }
        let b = e.dot(&m);
        let max_m = m.iter().fold(0.0f64, |a, v| a.max(v.abs()));
        AgcCode {
            n,
            d,
            l,
            e,
            rounds: l,
            b,
            max_m,
            worst_error: 0.0,
            worst_cond: 0.0,
            patterns_checked: 0,
            exhaustive: false,
        }
    }

    /// A random E (staircase of i.i.d. N(0, 1) blocks) from `seed`, draw `draw`.
    pub fn random(n: usize, d: usize, l: usize, seed: u64, draw: u64) -> Self {
        let mut rng = Rng::from_key(&[seed, domain::CODE, 0xa9c, n as u64, d as u64, l as u64, draw]);
        let cols = (n - d + 1) * l;
        let mut e = Array2::zeros((n * l, cols));
        for r in 0..l {
            let c = l + (r + 1) * (n - d);
            for j in 0..n {
                for k in 0..c.min(cols) {
                    e[(r * n + j, k)] = rng.sample::<f64, _>(rand_distr::StandardNormal);
                }
            }
        }
        Self::from_e(n, d, l, e)
    }

    /// CGC's code (AGC's first round alone): n workers, d = `s` + `m` parts each, L = `m`
    /// sub-vectors, one message per worker; any n − `s` workers decode. E (n × (n − s)) is i.i.d.
    /// N(0, 1) from `seed`, draw `draw`; M = [M^U; M^D], M^D solved so that worker j's row of
    /// B = E·M is zero on the parts it lacks (the notes' reference `cgc_build`).
    pub fn one_round(n: usize, s: usize, m: usize, seed: u64, draw: u64) -> Self {
        let d = s + m;
        assert!(m >= 1 && d <= n, "1 ≤ m and s + m ≤ n");
        let cols = n - s;
        let mut rng = Rng::from_key(&[seed, domain::CODE, 0xc9c, n as u64, d as u64, m as u64, draw]);
        let e = Array2::from_shape_fn((n, cols), |_| rng.sample::<f64, _>(rand_distr::StandardNormal));
        let holds = |j: usize, i: usize| (i + n - j) % n < d;
        let mut mm = Array2::zeros((cols, n * m));
        for u in 0..m {
            for i in 0..n {
                mm[(u, u * n + i)] = 1.0;
            }
        }
        if n > d {
            crate::linalg::single_threaded_blas();
            for i in 0..n {
                let q: Vec<usize> = (0..n).filter(|&j| !holds(j, i)).collect();
                // built in standard layout (a 1 × 1 slice of a selection keeps zero strides)
                let a = Array2::from_shape_fn((q.len(), cols - m), |(r, c)| e[(q[r], m + c)]);
                let lu = a.factorize_into().expect("A_i is square");
                for u in 0..m {
                    let rhs: Array1<f64> = q.iter().map(|&row| -e[(row, u)]).collect();
                    let x = lu.solve(&rhs).expect("A_i is invertible with probability 1");
                    for (k, v) in x.iter().enumerate() {
                        mm[(m + k, u * n + i)] = *v;
                    }
                }
            }
        }
        let b = e.dot(&mm);
        let max_m = mm.iter().fold(0.0f64, |a, v| a.max(v.abs()));
        AgcCode {
            n,
            d,
            l: m,
            e,
            rounds: 1,
            b,
            max_m,
            worst_error: 0.0,
            worst_cond: 0.0,
            patterns_checked: 0,
            exhaustive: false,
        }
    }

    /// The most stragglers the code decodes with: the largest s < d whose rounds needed,
    /// ⌈L/(d − s)⌉, it sends (d − 1 for AGC; d − L, its s_max, for CGC).
    pub fn tolerates(&self) -> usize {
        (0..self.d).rev().find(|&s| rounds_needed(self.d, self.l, s) <= self.rounds).unwrap_or(0)
    }

    /// The best of `draws` random codes by worst relative decode error over straggler sets (all
    /// of them when there are at most `max_patterns`, else a seeded sample), checked by decoding a
    /// random gradient (the notes' §7.5 seed search; §8.H).
    pub fn search(n: usize, d: usize, l: usize, seed: u64, draws: usize, max_patterns: usize) -> Self {
        Self::best_of(draws, seed, max_patterns, |draw| Self::random(n, d, l, seed, draw))
    }

    /// [`AgcCode::search`] among CGC codes ([`AgcCode::one_round`]).
    pub fn search_one_round(n: usize, s: usize, m: usize, seed: u64, draws: usize, max_patterns: usize) -> Self {
        Self::best_of(draws, seed, max_patterns, |draw| Self::one_round(n, s, m, seed, draw))
    }

    fn best_of(draws: usize, seed: u64, max_patterns: usize, make: impl Fn(u64) -> Self) -> Self {
        let mut best: Option<AgcCode> = None;
        for draw in 0..draws.max(1) as u64 {
            let mut code = make(draw);
            code.screen(seed, max_patterns);
            if best.as_ref().is_none_or(|b| code.worst_error < b.worst_error) {
                best = Some(code);
            }
        }
        best.expect("at least one draw")
    }

    /// Check decoding on every straggler set it tolerates (s ≤ [`AgcCode::tolerates`]; or a
    /// sample): worst relative error of a random gradient, worst condition number.
    pub fn screen(&mut self, seed: u64, max_patterns: usize) {
        let (n, d, l) = (self.n, self.d, self.l);
        let most = self.tolerates();
        let mut rng = Rng::from_key(&[seed, domain::SCREEN, 0xa9c, n as u64, d as u64]);
        let w = 3 * l + 1;
        let g: Vec<Vec<f64>> = (0..n).map(|_| (0..w).map(|_| rng.normal()).collect()).collect();
        let total: Vec<f64> = (0..w).map(|k| g.iter().map(|gi| gi[k]).sum()).collect();
        let scale = total.iter().fold(0.0f64, |a, v| a.max(v.abs()));
        let all: u64 = (0..=most).map(|s| crate::combin::binomial(n, s)).sum();
        let exhaustive = all as usize <= max_patterns;
        let mut sets: Vec<Vec<usize>> = vec![];
        if exhaustive {
            for s in 0..=most {
                sets.extend(crate::combin::combinations(n, s));
            }
        } else {
            for _ in 0..max_patterns {
                let s = rng.below(most + 1);
                sets.push(rng.choose(n, s));
            }
        }
        let (mut worst, mut worst_cond) = (0.0f64, 0.0f64);
        for dead in &sets {
            let active: Vec<usize> = (0..n).filter(|j| !dead.contains(j)).collect();
            let arrivals: Vec<(usize, usize)> =
                (0..self.rounds).flat_map(|r| active.iter().map(move |&j| (j, r))).collect();
            let Some(dec) = self.select(&arrivals) else {
                worst = f64::INFINITY;
                continue;
            };
            let sub = w.div_ceil(l);
            let mut out = vec![0.0; l * sub];
            for (k, &a) in dec.used.iter().enumerate() {
                let x = self.message(&g, arrivals[a].0, arrivals[a].1, w);
                for (m, row) in dec.coef.iter().enumerate() {
                    for i in 0..sub {
                        out[m * sub + i] += row[k] * x[i];
                    }
                }
            }
            let err = out[..w].iter().zip(&total).fold(0.0f64, |a, (x, y)| a.max((x - y).abs())) / scale;
            worst = worst.max(err);
            worst_cond = worst_cond.max(dec.cond);
        }
        self.worst_error = worst;
        self.worst_cond = worst_cond;
        self.patterns_checked = sets.len() as u64;
        self.exhaustive = exhaustive;
    }

    /// X_{j,r} for partial gradients `g` (one per part, w values each): ⌈w/L⌉ values.
    pub fn message(&self, g: &[Vec<f64>], j: usize, r: usize, w: usize) -> Vec<f64> {
        let (n, l) = (self.n, self.l);
        let sub = w.div_ceil(l);
        let mut x = vec![0.0; sub];
        for i in self.parts_of(j) {
            for m in 0..l {
                let c = self.b[(r * n + j, m * n + i)];
                for (k, xk) in x.iter_mut().enumerate() {
                    if let Some(v) = g[i].get(m * sub + k) {
                        *xk += c * v;
                    }
                }
            }
        }
        x
    }

    /// Whether `(worker, round)` arrivals (in arrival order) decode, and how: rows are taken
    /// round by round up to each round's cap L + (i+1)(n−d); the first round whose cap is
    /// reached decides (the notes' greedy capped rule, §2.7, exact against a rank oracle).
    pub fn select(&self, arrivals: &[(usize, usize)]) -> Option<AgcDecoding> {
        let (n, d, l) = (self.n, self.d, self.l);
        let mut chosen: Vec<usize> = vec![];
        let mut count = 0;
        for i in 0..l.min(self.rounds) {
            let cap = l + (i + 1) * (n - d);
            for (k, &(_, r)) in arrivals.iter().enumerate() {
                if r == i && count < cap {
                    chosen.push(k);
                    count += 1;
                }
            }
            if count == cap {
                return self.solve(arrivals, chosen, i + 1);
            }
        }
        None
    }

    fn solve(&self, arrivals: &[(usize, usize)], used: Vec<usize>, rounds: usize) -> Option<AgcDecoding> {
        let (n, l) = (self.n, self.l);
        let size = used.len();
        let rows: Vec<usize> = used.iter().map(|&k| arrivals[k].1 * n + arrivals[k].0).collect();
        let ehat = self.e.select(Axis(0), &rows).slice(ndarray::s![.., ..size]).to_owned(); // size × size
                                                                                            // Ê·Z = X, so the first L unknowns are rows of Ê⁻¹: coef[m] = e_mᵀ Ê⁻¹ = (Ê⁻ᵀ e_m)ᵀ:
                                                                                            // one LU factorization of Êᵀ (LAPACK getrf), L solves
        let cond = condition(&ehat);
        if !cond.is_finite() || cond > 1e15 {
            return None;
        }
        crate::linalg::single_threaded_blas();
        let lu = ehat.t().to_owned().factorize_into().ok()?;
        let mut coef = vec![vec![0.0; size]; l];
        for (m, row) in coef.iter_mut().enumerate() {
            let e_m: Array1<f64> = Array1::from_shape_fn(size, |i| if i == m { 1.0 } else { 0.0 });
            let x = lu.solve(&e_m).ok()?;
            row.copy_from_slice(x.as_slice().expect("contiguous"));
        }
        let mut residual = 0.0f64;
        for (m, row) in coef.iter().enumerate() {
            for c in 0..size {
                let v: f64 = row.iter().enumerate().map(|(k, a)| a * ehat[(k, c)]).sum();
                residual = residual.max((v - if c == m { 1.0 } else { 0.0 }).abs());
            }
        }
        Some(AgcDecoding { used, coef, rounds, cond, residual })
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::combin::combinations;
    use ndarray::array;

    /// A.8–A.11: communication vectors and rounds (exact integers).
    #[test]
    fn trade_off_tables() {
        assert_eq!(q_star(2, 2), vec![1, 2]);
        assert_eq!(q_star(4, 12), vec![3, 4, 6, 12]);
        assert_eq!(q_star(3, 11_173_962), vec![3_724_654, 5_586_981, 11_173_962]);
        for (l, want) in
            [(1, vec![12, 12, 12, 12]), (4, vec![3, 6, 6, 12]), (6, vec![4, 4, 6, 12]), (12, vec![3, 4, 6, 12])]
        {
            assert_eq!(q_agc(4, 12, l), want, "L = {l}");
        }
        assert_eq!(q_agc(3, 11_173_962, 6), vec![3_724_654, 5_586_981, 11_173_962]);
        assert_eq!(q_agc(4, 13, 12), vec![6, 8, 12, 24]);
        assert_eq!((0..3).map(|s| rounds_needed(3, 6, s)).collect::<Vec<_>>(), vec![2, 3, 6]);
        let sizes: Vec<usize> = (0..3).map(|s| 6 + (20 - 3) * rounds_needed(3, 6, s)).collect();
        assert_eq!(sizes, vec![40, 57, 108]);
    }

    fn example3() -> AgcCode {
        let e = array![
            [3.0, 2.0, 1.0, 0.0],
            [3.0, 1.0, 1.0, 0.0],
            [1.0, 3.0, 2.0, 0.0],
            [2.0, 1.0, 3.0, 3.0],
            [2.0, 3.0, 2.0, 3.0],
            [2.0, 1.0, 1.0, 3.0]
        ];
        AgcCode::from_e(3, 2, 2, e)
    }

    /// B: Example 3's M, B's structural zeros, the messages and the decoding coefficients.
    #[test]
    fn example_3_golden_vectors() {
        let c = example3();
        let close = |a: f64, b: f64| (a - b).abs() <= 1e-12;
        // X[0,0] = 5/2 g1(0) + g0(1) + 1/2 g1(1): columns m·n + i
        let row = |r: usize, j: usize| (0..6).map(|v| c.b[(r * 3 + j, v)]).collect::<Vec<f64>>();
        let want =
            [[0.0, 2.5, 0.0, 1.0, 0.5, 0.0], [0.0, 2.5, 0.0, 0.0, -0.5, -1.0], [-5.0, 0.0, -5.0, 1.0, 0.0, -1.0]];
        for (j, w) in want.iter().enumerate() {
            assert!(row(0, j).iter().zip(w).all(|(a, b)| close(*a, *b)), "round 0 worker {j}: {:?}", row(0, j));
        }
        let want1 =
            [[-3.0, -1.0, 0.0, -3.0, -3.0, 0.0], [0.0, -0.5, 3.0, 0.0, 0.5, 4.0], [3.0, 0.0, 6.0, -1.0, 0.0, 4.0]];
        for (j, w) in want1.iter().enumerate() {
            assert!(row(1, j).iter().zip(w).all(|(a, b)| close(*a, *b)), "round 1 worker {j}: {:?}", row(1, j));
        }
        // structural zeros: worker j lacks part (j+2) mod 3
        for r in 0..2 {
            for j in 0..3 {
                for m in 0..2 {
                    let i = (j + 2) % 3;
                    assert!(c.b[(r * 3 + j, m * 3 + i)].abs() <= 1e-12);
                }
            }
        }
        // F = {0,1}: g(0) = −X00 + 4/3·X10 − 1/3·X01 + 1/3·X11, g(1) = X00 − X10
        let arrivals = [(0, 0), (1, 0), (0, 1), (1, 1)];
        let dec = c.select(&arrivals).unwrap();
        assert_eq!(dec.rounds, 2);
        let g0 = [-1.0, 4.0 / 3.0, -1.0 / 3.0, 1.0 / 3.0];
        let g1 = [1.0, -1.0, 0.0, 0.0];
        for k in 0..4 {
            let a = dec.used[k];
            let idx = [0, 1, 2, 3].iter().position(|&x| x == a).unwrap();
            assert!(close(dec.coef[0][k], g0[idx]) && close(dec.coef[1][k], g1[idx]), "{:?}", dec.coef);
        }
        // F = {0,1,2}: one round: g(0) = (X00 + X10 − X20)/5, g(1) = X00 − X10
        let dec = c.select(&[(0, 0), (1, 0), (2, 0)]).unwrap();
        assert_eq!(dec.rounds, 1);
        assert!(close(dec.coef[0][0], 0.2) && close(dec.coef[0][1], 0.2) && close(dec.coef[0][2], -0.2));
        assert!(close(dec.coef[1][0], 1.0) && close(dec.coef[1][1], -1.0) && close(dec.coef[1][2], 0.0));
        // F.: round 0 from {0,1} and round 1 from {0} is not decodable (needs 4 rows, ≤ 3 in round 0)
        assert!(c.select(&[(0, 0), (1, 0), (0, 1)]).is_none());
    }

    fn worst_error(c: &AgcCode, w: usize, seed: u64) -> f64 {
        let (n, d, l) = (c.n, c.d, c.l);
        let mut rng = Rng::from_key(&[seed]);
        let g: Vec<Vec<f64>> = (0..n).map(|_| (0..w).map(|_| rng.normal()).collect()).collect();
        let total: Vec<f64> = (0..w).map(|k| g.iter().map(|gi| gi[k]).sum()).collect();
        let scale = total.iter().fold(0.0f64, |a, v| a.max(v.abs()));
        let sub = w.div_ceil(l);
        let mut worst = 0.0f64;
        for s in 0..d {
            for dead in combinations(n, s) {
                let active: Vec<usize> = (0..n).filter(|j| !dead.contains(j)).collect();
                let arrivals: Vec<(usize, usize)> = (0..l).flat_map(|r| active.iter().map(move |&j| (j, r))).collect();
                let dec = c.select(&arrivals).expect("decodable with s < d");
                assert_eq!(dec.rounds, rounds_needed(d, l, s), "rounds consumed = r_s exactly");
                assert!(dec.residual <= 1e-6, "residual {:e} (κ = {:.1e})", dec.residual, dec.cond);
                let mut out = vec![0.0; l * sub];
                for (k, &a) in dec.used.iter().enumerate() {
                    let x = c.message(&g, arrivals[a].0, arrivals[a].1, w);
                    for (m, row) in dec.coef.iter().enumerate() {
                        for i in 0..sub {
                            out[m * sub + i] += row[k] * x[i];
                        }
                    }
                }
                worst = worst.max(out[..w].iter().zip(&total).fold(0.0f64, |a, (x, y)| a.max((x - y).abs())) / scale);
                // one round fewer is not enough
                let fewer: Vec<(usize, usize)> =
                    arrivals.iter().copied().filter(|&(_, r)| r + 1 < dec.rounds).collect();
                assert!(c.select(&fewer).is_none(), "decoded with r_s − 1 rounds");
            }
        }
        worst
    }

    /// C: the property grid (random E with fixed seeds, all patterns, w divisible by L and not).
    #[test]
    fn property_grid() {
        for (n, d, l, tol) in [
            (3, 2, 2, 1e-9),
            (4, 2, 4, 1e-9),
            (5, 3, 6, 1e-9),
            (5, 4, 12, 1e-9),
            (6, 3, 6, 1e-9),
            (7, 3, 6, 1e-9),
            (10, 3, 6, 1e-6),
        ] {
            let c = AgcCode::search(n, d, l, 1, 5, 1000);
            let scale = c.b.iter().fold(0.0f64, |a, v| a.max(v.abs()));
            for j in 0..n {
                for i in 0..n {
                    if !c.holds(j, i) {
                        for r in 0..l {
                            for m in 0..l {
                                assert!(
                                    c.b[(r * n + j, m * n + i)].abs() <= 1e-9 * scale,
                                    "structural zero ({n},{d},{l})"
                                );
                            }
                        }
                    }
                }
            }
            for w in [3 * l, 3 * l + 1] {
                let e = worst_error(&c, w, 7);
                assert!(e <= tol, "({n},{d},{l}) w={w}: worst relative error {e:e}");
            }
        }
    }

    /// D: degenerate cases: d = n (M = M^U, any L messages decode), L = 1, d = 1.
    #[test]
    fn degenerate_cases() {
        let full = AgcCode::random(4, 4, 3, 1, 0);
        assert_eq!(full.max_m, 1.0, "M = M^U");
        assert!(full.select(&[(2, 0), (0, 0), (3, 0)]).is_some(), "any L = 3 round-0 messages");
        assert!(worst_error(&full, 9, 2) <= 1e-9);
        let gc = AgcCode::search(5, 3, 1, 1, 5, 1000);
        assert!(worst_error(&gc, 7, 3) <= 1e-9);
        let uncoded = AgcCode::random(4, 1, 1, 1, 0);
        assert!(uncoded.select(&[(0, 0), (1, 0), (2, 0)]).is_none(), "d = 1 needs every worker");
        assert!(worst_error(&uncoded, 5, 4) <= 1e-9);
    }

    /// E: G-AGC groups and Example 4.
    #[test]
    fn g_agc_groups_and_example_4() {
        assert_eq!(groups(7, 2), vec![vec![0, 1], vec![2, 3], vec![4, 5, 6]]);
        let g20 = groups(20, 3);
        assert_eq!(g20.len(), 6);
        assert!(g20[..5].iter().all(|g| g.len() == 3));
        assert_eq!(g20[5], (15..20).collect::<Vec<_>>());
        let g40 = groups(40, 3);
        assert_eq!((g40.len(), g40[12].clone()), (13, (36..40).collect::<Vec<_>>()));
        // Example 4 (7, 2/7, 2), L = 2: every pattern with ≤ 1 straggler per group decodes,
        // in 1 round with none, 2 otherwise
        let codes: Vec<AgcCode> = groups(7, 2).iter().map(|g| AgcCode::search(g.len(), 2, 2, 4, 5, 1000)).collect();
        let mut patterns = 0;
        for a in 0..=2 {
            for b in 0..=2 {
                for c in 0..=3 {
                    let dead = [a, b, c];
                    let mut rounds = 0;
                    for (gi, code) in codes.iter().enumerate() {
                        let n = code.n;
                        let active: Vec<usize> = (0..n).filter(|&j| dead[gi] != j + 1).collect();
                        let arrivals: Vec<(usize, usize)> =
                            (0..2).flat_map(|r| active.iter().map(move |&j| (j, r))).collect();
                        rounds = rounds.max(code.select(&arrivals).expect("≤ 1 straggler per group decodes").rounds);
                    }
                    assert_eq!(rounds, if dead.iter().all(|&x| x == 0) { 1 } else { 2 }, "{dead:?}");
                    patterns += 1;
                }
            }
        }
        assert_eq!(patterns, 36);
    }

    /// H: numerical-stability regression: n = 20, d = 3, L = 6, all 211 patterns, E by seed
    /// search: worst relative error ≤ 1e-6.
    #[test]
    fn stability_regression_n20() {
        let c = AgcCode::search(20, 3, 6, 1, 10, 1000);
        assert!(c.exhaustive);
        assert_eq!(c.patterns_checked, 211);
        assert!(
            c.worst_error <= 1e-6,
            "worst relative error {:e} (max|M| {:e}, worst κ {:e})",
            c.worst_error,
            c.max_m,
            c.worst_cond
        );
        eprintln!(
            "AGC n=20 d=3 L=6: worst relative error {:.1e}, max|M| {:.1e}, worst κ(Ê) {:.1e}",
            c.worst_error, c.max_m, c.worst_cond
        );
    }

    /// CGC is AGC's first round: the support of B (a worker's message combines only the parts it
    /// holds), any n − s_max workers decode the sum exactly, fewer do not; the reference's cases
    /// (`seed-003-agc-ref.py`: n = 5, d = 4, s_max = 0, 1, 3; n = 20, d = 3, s_max = 0, 1, 2), every
    /// survivor set.
    #[test]
    fn cgc_decodes_from_any_n_minus_s_max_workers() {
        for (n, d, s) in [(5, 4, 0), (5, 4, 1), (5, 4, 3), (20, 3, 0), (20, 3, 1), (20, 3, 2), (8, 4, 2)] {
            let m = d - s;
            let code = AgcCode::search_one_round(n, s, m, 7, 5, 20_000);
            assert_eq!((code.d, code.l, code.rounds, code.tolerates()), (d, m, 1, s));
            assert_eq!(code.b.dim(), (n, n * m), "one round: n rows");
            for j in 0..n {
                for i in (0..n).filter(|&i| !code.holds(j, i)) {
                    for u in 0..m {
                        assert!(code.b[(j, u * n + i)].abs() < 1e-9, "n={n} d={d}: worker {j} lacks part {i}");
                    }
                }
            }
            assert!(code.exhaustive, "every straggler set checked");
            assert!(code.worst_error < 1e-9, "n={n} d={d} s={s}: worst relative error {:e}", code.worst_error);
            // w = 4m values per part; any n − s workers, one message each, decode the total
            let w = 4 * m;
            let mut rng = Rng::from_key(&[3, n as u64, s as u64]);
            let g: Vec<Vec<f64>> = (0..n).map(|_| (0..w).map(|_| rng.normal()).collect()).collect();
            let total: Vec<f64> = (0..w).map(|k| g.iter().map(|gi| gi[k]).sum()).collect();
            for f in combinations(n, n - s) {
                let arrivals: Vec<(usize, usize)> = f.iter().map(|&j| (j, 0)).collect();
                let dec = code.select(&arrivals).expect("n − s_max workers decode");
                assert_eq!(dec.rounds, 1);
                let sub = w / m;
                let mut out = vec![0.0; w];
                for (k, &a) in dec.used.iter().enumerate() {
                    let x = code.message(&g, arrivals[a].0, 0, w);
                    assert_eq!(x.len(), sub, "a message is w/m values");
                    for (u, row) in dec.coef.iter().enumerate() {
                        for i in 0..sub {
                            out[u * sub + i] += row[k] * x[i];
                        }
                    }
                }
                let err = out.iter().zip(&total).fold(0.0f64, |a, (x, y)| a.max((x - y).abs()));
                assert!(err < 1e-8, "n={n} d={d} s={s} F={f:?}: error {err:e}");
            }
            // one straggler more than s_max: never decodes (it would need a second round)
            if s + 1 < n {
                let fewer: Vec<(usize, usize)> = (0..n - s - 1).map(|j| (j, 0)).collect();
                assert!(code.select(&fewer).is_none());
            }
        }
    }

    /// Table I of the AGC paper (n = 5, μ = 4/5, w = 12, so d = 4): CGC with q = w/m values per
    /// message survives s_max = d − m stragglers (q = 12: 3, q = 6: 2, q = 4: 1, q = 3: 0), and
    /// its message is q values whatever s ≤ s_max is.
    #[test]
    fn cgc_table_one() {
        let (n, d, w) = (5, 4, 12);
        for (q, s_max) in [(12, 3), (6, 2), (4, 1), (3, 0)] {
            let m = w / q;
            let code = AgcCode::one_round(n, d - m, m, 1, 0);
            assert_eq!(code.tolerates(), s_max, "q = {q}");
            let g: Vec<Vec<f64>> = (0..n).map(|i| vec![i as f64; w]).collect();
            assert_eq!(code.message(&g, 0, 0, w).len(), q);
        }
    }
}
