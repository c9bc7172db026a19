//! Linear codes over the reals for communication-efficient gradient coding (CommFR-GC; Kadhe,
//! Koyluoglu, Ramchandran; notes `seed-001-cegc.md`).
//!
//! A group of N workers holds the same data; each computes the group's gradient g, pads it to
//! K·r values (r = ⌈len/K⌉), cuts it into K contiguous chunks (column-major: chunk c holds
//! values c·r .. (c+1)·r), and sends the combination of the chunks with the coefficients of
//! column j of the K×N generator G: ⌈len/K⌉ values instead of len. Any set T of arrivals with
//! rank(G[:, T]) = K decodes the chunks: g_mat = R·G_T⁺ (a solve when |T| = K).
//!
//! - [`LinearCode::gaussian`]: i.i.d. N(0, 1) entries (MDS with probability 1);
//! - [`LinearCode::systematic`]: G = [I_K | P] with a Cauchy parity block (every square
//!   submatrix of a Cauchy matrix is invertible, so the code is MDS); when the K systematic
//!   workers arrive, decoding is concatenation (no solve);
//! - [`LinearCode::repetition`]: G = [1 … 1], K = 1 (Tandon et al.'s fractional repetition);
//! - [`LinearCode::ldpc`]: a (3,6)-regular parity-check matrix H (rate 1/2), a systematic
//!   generator computed from it, and a peeling decoder ([`LinearCode::peel`]) for large groups.

use ndarray::{Array2, Axis};
use rand::Rng as _;
use serde::{Deserialize, Serialize};

use crate::linalg::{pinv, Matrix, RANK_TOL};
use crate::rng::{domain, Rng};

/// Random (3,6) graphs tried per requested draw before [`LinearCode::ldpc`] gives up.
pub(crate) const LDPC_REDRAWS: usize = 200;

/// Which construction produced a linear code.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum LinearKind {
    /// Random Gaussian generator (MDS with probability 1).
    Gaussian,
    /// Systematic MDS, Cauchy parity.
    Systematic,
    /// The [N, 1, N] repetition code.
    Repetition,
    /// (3,6)-regular LDPC with a peeling decoder.
    Ldpc,
    /// Given explicitly.
    Explicit,
}

/// An [N, K] linear code over the reals: generator (K × N) and, for LDPC, the parity checks.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct LinearCode {
    /// Construction.
    pub kind: LinearKind,
    /// Block length N (workers per group).
    pub len: usize,
    /// Dimension K (chunks; the communication saving m).
    pub dim: usize,
    /// Generator, K × N.
    pub g: Matrix,
    /// Parity checks (LDPC): for each check, its (position, coefficient) pairs.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub checks: Vec<Vec<(usize, f64)>>,
    /// Positions whose values are the K chunks themselves (systematic codes; empty otherwise).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub systematic: Vec<usize>,
}

/// Why a linear code could not be built.
#[derive(Clone, Debug, PartialEq, thiserror::Error)]
pub enum LinearError {
    /// K must be in 1..=N.
    #[error("the code dimension K = {dim} must be between 1 and the block length N = {len}")]
    Dimension {
        /// Block length.
        len: usize,
        /// Dimension.
        dim: usize,
    },
    /// The LDPC ensemble needs N even, at least 10, and K = N/2.
    #[error("an LDPC code here is (3,6)-regular of rate 1/2: N must be even and at least 10, and K = N/2 (s = m); got N = {len}, K = {dim}")]
    Ldpc {
        /// Block length.
        len: usize,
        /// Dimension.
        dim: usize,
    },
    /// No draw gave a usable LDPC code.
    #[error("no (3,6)-regular parity-check matrix of full rank without small stopping sets found for N = {len} in {draws} draws")]
    LdpcDraws {
        /// Block length.
        len: usize,
        /// Draws tried.
        draws: usize,
    },
}

/// How a group decodes a set of arrivals.
#[derive(Clone, Debug, PartialEq)]
pub enum GroupDecoding {
    /// Chunk c = Σ_j coef\[j\]\[c\] · (arrival j's vector): one coefficient per (arrival, chunk).
    Solve {
        /// `coef[j][c]`, j indexes the arrivals given, c the chunks.
        coef: Vec<Vec<f64>>,
        /// Condition number of G_T (σ_max/σ_min).
        cond: f64,
        /// max |G_T·coef − I|: how far the coefficients are from recovering the chunks.
        residual: f64,
    },
    /// Peeling (LDPC): recover erased positions one check at a time, in this order:
    /// `(erased position, [(known position, coefficient)])`, then read the chunks from the
    /// systematic positions.
    Peel(Vec<PeelStep>),
}

/// [`LinearCode::profile`]: decodability and conditioning with a number of positions erased.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct LinearProfile {
    /// Positions erased.
    pub erased: usize,
    /// Sets of surviving positions checked.
    pub sets: usize,
    /// Whether those were all of them.
    pub exhaustive: bool,
    /// How many decode.
    pub decodable: usize,
    /// Worst condition number of G_T over the sets solved by least squares (1 when every one
    /// took the systematic path or peeled).
    pub worst_cond: f64,
}

/// One peeling step: the erased position recovered, from known positions with coefficients.
pub type PeelStep = (usize, Vec<(usize, f64)>);

impl LinearCode {
    fn check_dims(len: usize, dim: usize) -> Result<(), LinearError> {
        if dim == 0 || dim > len {
            return Err(LinearError::Dimension { len, dim });
        }
        Ok(())
    }

    /// A random Gaussian generator, seeded (drawn once, on rank 0, and broadcast).
    pub fn gaussian(len: usize, dim: usize, seed: u64) -> Result<Self, LinearError> {
        Self::check_dims(len, dim)?;
        let mut rng = Rng::from_key(&[seed, domain::CODE, 0xce9c, len as u64, dim as u64]);
        let g = Array2::from_shape_fn((dim, len), |_| rng.sample::<f64, _>(rand_distr::StandardNormal));
        Ok(LinearCode { kind: LinearKind::Gaussian, len, dim, g, checks: vec![], systematic: vec![] })
    }

    /// G = [I_K | P], P\[a\]\[b\] = 1/(x_a − y_b) with interlaced nodes x_a = a and y_b = b + 1/2:
    /// a Cauchy matrix, every square submatrix invertible, so any K columns of G are
    /// independent. (The textbook choice x_a = a + 1/2, y_b = −(b + 1/2) is the Hilbert matrix:
    /// worst κ(G_T) 2e12 at N = 48 with a quarter erased, against 1.4e2 interlaced.)
    pub fn systematic(len: usize, dim: usize) -> Result<Self, LinearError> {
        Self::check_dims(len, dim)?;
        let mut g = Array2::zeros((dim, len));
        for a in 0..dim {
            g[(a, a)] = 1.0;
            for b in 0..len - dim {
                g[(a, dim + b)] = 1.0 / (a as f64 - b as f64 - 0.5);
            }
        }
        Ok(LinearCode { kind: LinearKind::Systematic, len, dim, g, checks: vec![], systematic: (0..dim).collect() })
    }

    /// The [N, 1, N] repetition code: every worker sends the group's whole gradient.
    pub fn repetition(len: usize) -> Self {
        LinearCode {
            kind: LinearKind::Repetition,
            len,
            dim: 1,
            g: Array2::ones((1, len)),
            checks: vec![],
            systematic: vec![0],
        }
    }

    /// A code given by its generator (K × N).
    pub fn explicit(g: Matrix) -> Self {
        let (dim, len) = g.dim();
        LinearCode { kind: LinearKind::Explicit, len, dim, g, checks: vec![], systematic: vec![] }
    }

    /// A (3,6)-regular LDPC code of length N (K = N/2): random socket graph without multi-edges
    /// and without two positions sharing all their checks (a stopping set of size 2), ±1
    /// coefficients, full rank over the reals; the generator is systematic on K positions found
    /// by elimination. Seeded; graphs that fail a condition are redrawn, up to
    /// `LDPC_REDRAWS × draws` times (at N = 10 most random graphs put two positions on the same
    /// three checks, so rejection needs many tries there).
    pub fn ldpc(len: usize, dim: usize, seed: u64, draws: usize) -> Result<Self, LinearError> {
        if len < 10 || !len.is_multiple_of(2) || dim * 2 != len {
            return Err(LinearError::Ldpc { len, dim });
        }
        let m = len / 2; // checks
        for draw in 0..draws.max(1) * LDPC_REDRAWS {
            let mut rng = Rng::from_key(&[seed, domain::CODE, 0x1d9c, len as u64, draw as u64]);
            // socket k of check k/6 is wired to position sockets[k]/3; repair multi-edges by
            // swapping a conflicting socket with a random one until none is left
            let mut sockets = rng.permutation(3 * len);
            let conflict = |sk: &[usize], k: usize| {
                let c = k / 6;
                (c * 6..c * 6 + 6).any(|o| o != k && sk[o] / 3 == sk[k] / 3)
            };
            let mut repairs = 0;
            while let Some(k) = (0..3 * len).find(|&k| conflict(&sockets, k)) {
                let other = rng.below(3 * len);
                sockets.swap(k, other);
                repairs += 1;
                if repairs > 100 * len {
                    break;
                }
            }
            if (0..3 * len).any(|k| conflict(&sockets, k)) {
                continue;
            }
            let mut checks: Vec<Vec<(usize, f64)>> = vec![vec![]; m];
            for (k, &sock) in sockets.iter().enumerate() {
                let sign = if rng.below(2) == 0 { 1.0 } else { -1.0 };
                checks[k / 6].push((sock / 3, sign));
            }
            let mut neigh: Vec<Vec<usize>> = vec![vec![]; len];
            for (c, ch) in checks.iter().enumerate() {
                for &(v, _) in ch {
                    neigh[v].push(c);
                }
            }
            let mut sorted: Vec<Vec<usize>> = neigh
                .iter()
                .map(|n| {
                    let mut n = n.clone();
                    n.sort_unstable();
                    n
                })
                .collect();
            sorted.sort();
            if sorted.windows(2).any(|w| w[0] == w[1]) {
                continue;
            }
            let mut h = Array2::zeros((m, len));
            for (c, ch) in checks.iter().enumerate() {
                for &(v, coef) in ch {
                    h[(c, v)] = coef;
                }
            }
            let Some((g, systematic)) = systematic_generator(&h) else { continue };
            return Ok(LinearCode { kind: LinearKind::Ldpc, len, dim, g, checks, systematic });
        }
        Err(LinearError::LdpcDraws { len, draws: draws.max(1) * LDPC_REDRAWS })
    }

    /// Whether the arrivals at positions `t` determine the chunks: rank(G[:, T]) = K (a rank
    /// test, not a count).
    pub fn decodable(&self, t: &[usize]) -> bool {
        if t.len() < self.dim {
            return false;
        }
        if self.kind == LinearKind::Ldpc {
            return self.peel(t).is_some();
        }
        rank(&self.g.select(Axis(1), t)) == self.dim
    }

    /// How the code behaves with `erased` positions missing: over every set of N − `erased`
    /// positions (or `max_sets` random ones when there are more), how many decode and the worst
    /// condition number of G_T among those solved by least squares. Seeded.
    pub fn profile(&self, erased: usize, max_sets: usize, seed: u64) -> LinearProfile {
        let keep = self.len.saturating_sub(erased);
        let total = crate::combin::binomial(self.len, keep);
        let exhaustive = total <= max_sets as u64;
        let sets: Vec<Vec<usize>> = if exhaustive {
            crate::combin::combinations(self.len, keep).collect()
        } else {
            let mut rng = Rng::from_key(&[seed, domain::SCREEN, 0x11e, self.len as u64, keep as u64]);
            (0..max_sets)
                .map(|_| {
                    let mut t = rng.choose(self.len, keep);
                    t.sort_unstable();
                    t
                })
                .collect()
        };
        let (mut decodable, mut worst_cond) = (0, 0.0f64);
        for t in &sets {
            match self.decoding(t) {
                Some(GroupDecoding::Solve { cond, .. }) => {
                    decodable += 1;
                    worst_cond = worst_cond.max(cond);
                }
                Some(GroupDecoding::Peel(_)) => decodable += 1,
                None => {}
            }
        }
        LinearProfile { erased, sets: sets.len(), exhaustive, decodable, worst_cond }
    }

    /// How to decode from the arrivals at positions `t` (in that order), if they suffice.
    pub fn decoding(&self, t: &[usize]) -> Option<GroupDecoding> {
        if self.kind == LinearKind::Ldpc {
            return self.peel(t).map(GroupDecoding::Peel);
        }
        if t.len() < self.dim {
            return None;
        }
        let k = self.dim;
        // systematic fast path: the K systematic positions arrived → concatenation, no solve
        if !self.systematic.is_empty() && self.systematic.iter().all(|s| t.contains(s)) {
            let coef = t
                .iter()
                .map(|&p| (0..k).map(|c| if self.systematic.get(c) == Some(&p) { 1.0 } else { 0.0 }).collect())
                .collect();
            return Some(GroupDecoding::Solve { coef, cond: 1.0, residual: 0.0 });
        }
        // R = g_mat·G_T (r × |T|), so g_mat = R·G_T⁺: chunk c = Σ_j (G_T⁺)[j, c]·R_j (one SVD)
        let gt = self.g.select(Axis(1), t); // K × |T|
        let (inv, rank, cond) = pinv(gt.view());
        if rank < k {
            return None;
        }
        let coef: Vec<Vec<f64>> = inv.outer_iter().map(|row| row.to_vec()).collect();
        let mut residual = 0.0f64;
        for r in 0..k {
            for c in 0..k {
                let v: f64 = coef.iter().enumerate().map(|(j, row)| gt[(r, j)] * row[c]).sum();
                residual = residual.max((v - if r == c { 1.0 } else { 0.0 }).abs());
            }
        }
        Some(GroupDecoding::Solve { coef, cond, residual })
    }

    /// Peeling over the parity checks with the positions `known` received: the order in which
    /// erased positions are recovered, each from one check; None if peeling stalls before every
    /// systematic position is known.
    pub fn peel(&self, known: &[usize]) -> Option<Vec<PeelStep>> {
        let mut have = vec![false; self.len];
        for &k in known {
            have[k] = true;
        }
        let mut erased_in: Vec<usize> =
            self.checks.iter().map(|c| c.iter().filter(|(v, _)| !have[*v]).count()).collect();
        let mut by_pos: Vec<Vec<usize>> = vec![vec![]; self.len];
        for (ci, c) in self.checks.iter().enumerate() {
            for &(v, _) in c {
                by_pos[v].push(ci);
            }
        }
        let mut stack: Vec<usize> = (0..self.checks.len()).filter(|&c| erased_in[c] == 1).collect();
        let mut steps = vec![];
        while let Some(c) = stack.pop() {
            if erased_in[c] != 1 {
                continue;
            }
            let check = &self.checks[c];
            let &(e, he) = check.iter().find(|(v, _)| !have[*v]).expect("one erased position");
            let combo: Vec<(usize, f64)> = check.iter().filter(|(v, _)| *v != e).map(|&(v, h)| (v, -h / he)).collect();
            steps.push((e, combo));
            have[e] = true;
            for &c2 in &by_pos[e] {
                erased_in[c2] -= 1;
                if erased_in[c2] == 1 {
                    stack.push(c2);
                }
            }
        }
        self.systematic.iter().all(|&s| have[s]).then_some(steps)
    }

    /// Minimum distance δ (small codes, by enumeration): N − (the largest set T of positions with
    /// rank(G_T) < K); any N − δ + 1 positions decode.
    pub fn min_distance(&self) -> usize {
        let n = self.len;
        let mut largest_bad = 0;
        for size in (0..=n).rev() {
            if crate::combin::combinations(n, size).any(|t| rank(&self.g.select(Axis(1), &t)) < self.dim) {
                largest_bad = size;
                break;
            }
        }
        n - largest_bad
    }
}

/// Numerical rank (SVD, relative threshold [`RANK_TOL`]).
pub fn rank(m: &Matrix) -> usize {
    let s = singular_values(m);
    let top = s.first().copied().unwrap_or(0.0);
    s.iter().filter(|&&v| v > RANK_TOL * top).count()
}

fn singular_values(m: &Matrix) -> Vec<f64> {
    use ndarray_linalg::SVD;
    crate::linalg::single_threaded_blas();
    m.svd(false, false).map(|(_, s, _)| s.to_vec()).unwrap_or_default()
}

/// 2-norm condition number σ_max/σ_min of the nonzero spectrum.
pub fn condition(m: &Matrix) -> f64 {
    let s = singular_values(m);
    match (s.first(), s.last()) {
        (Some(&a), Some(&b)) if b > 0.0 => a / b,
        _ => f64::INFINITY,
    }
}

/// A systematic generator for the null space of `h` (m × N, full rank m): reduce h to
/// [I on pivot columns | A], the free columns carry the data: G[:, free] = I, G[:, pivot] = −Aᵀ.
/// Returns None if h is rank-deficient.
fn systematic_generator(h: &Matrix) -> Option<(Matrix, Vec<usize>)> {
    let (m, n) = h.dim();
    let mut a = h.clone();
    let mut pivots = vec![];
    let mut row = 0;
    for col in 0..n {
        if row == m {
            break;
        }
        let (best, val) =
            (row..m).map(|r| (r, a[(r, col)].abs())).fold((row, 0.0), |acc, x| if x.1 > acc.1 { x } else { acc });
        if val < 1e-9 {
            continue;
        }
        for c in 0..n {
            a.swap((row, c), (best, c));
        }
        let p = a[(row, col)];
        a.row_mut(row).mapv_inplace(|x| x / p);
        for r in 0..m {
            if r != row && a[(r, col)] != 0.0 {
                let f = a[(r, col)];
                let pr = a.row(row).to_owned();
                a.row_mut(r).scaled_add(-f, &pr);
            }
        }
        pivots.push(col);
        row += 1;
    }
    if pivots.len() < m {
        return None;
    }
    let free: Vec<usize> = (0..n).filter(|c| !pivots.contains(c)).collect();
    let k = free.len();
    let mut g = Array2::zeros((k, n));
    for (i, &f) in free.iter().enumerate() {
        g[(i, f)] = 1.0;
        for (r, &p) in pivots.iter().enumerate() {
            g[(i, p)] = -a[(r, f)];
        }
    }
    Some((g, free))
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::combin::combinations;
    use ndarray::array;

    /// The paper's example (Fig. 1): n = 8 workers, k = 4 parts, [4, 2, 3] code.
    fn example() -> LinearCode {
        LinearCode::explicit(array![[1.0, 0.0, 1.0, 1.0], [0.0, 1.0, 1.0, 2.0]])
    }

    /// chunks of g (padded to K·r, column-major) combined with column j of G
    fn encode(code: &LinearCode, g: &[f64], j: usize) -> Vec<f64> {
        let k = code.dim;
        let r = g.len().div_ceil(k);
        (0..r).map(|i| (0..k).map(|c| code.g[(c, j)] * g.get(c * r + i).copied().unwrap_or(0.0)).sum()).collect()
    }

    fn decode(code: &LinearCode, g_len: usize, t: &[usize], recv: &[Vec<f64>]) -> Option<Vec<f64>> {
        let k = code.dim;
        let r = g_len.div_ceil(k);
        let mut out = vec![0.0; k * r];
        match code.decoding(t)? {
            GroupDecoding::Solve { coef, .. } => {
                for (j, row) in coef.iter().enumerate() {
                    for c in 0..k {
                        for i in 0..r {
                            out[c * r + i] += row[c] * recv[j][i];
                        }
                    }
                }
            }
            GroupDecoding::Peel(steps) => {
                let mut x: Vec<Option<Vec<f64>>> = vec![None; code.len];
                for (j, &p) in t.iter().enumerate() {
                    x[p] = Some(recv[j].clone());
                }
                for (e, combo) in steps {
                    let mut v = vec![0.0; r];
                    for (p, c) in combo {
                        v.iter_mut().zip(x[p].as_ref().unwrap()).for_each(|(a, b)| *a += c * b);
                    }
                    x[e] = Some(v);
                }
                for (c, &s) in code.systematic.iter().enumerate() {
                    out[c * r..(c + 1) * r].copy_from_slice(x[s].as_ref().unwrap());
                }
            }
        }
        out.truncate(g_len);
        Some(out)
    }

    /// A4, A5, A6: the paper's example, encoding and every two-per-group survivor pair.
    #[test]
    fn paper_example_encodes_and_decodes_every_pattern() {
        let code = example();
        assert_eq!(code.min_distance(), 3);
        let g1 = [6.0, 8.0, 10.0, 12.0]; // g1 + g2 of the example
        let g2 = [2.0, -2.0, 2.0, 6.0];
        let sends1: Vec<Vec<f64>> = (0..4).map(|j| encode(&code, &g1, j)).collect();
        assert_eq!(sends1, vec![vec![6.0, 8.0], vec![10.0, 12.0], vec![16.0, 20.0], vec![26.0, 32.0]]);
        let sends2: Vec<Vec<f64>> = (0..4).map(|j| encode(&code, &g2, j)).collect();
        assert_eq!(sends2, vec![vec![2.0, -2.0], vec![2.0, 6.0], vec![4.0, 4.0], vec![6.0, 10.0]]);
        let mut patterns = 0;
        for a in combinations(4, 2) {
            for b in combinations(4, 2) {
                let d1 = decode(&code, 4, &a, &a.iter().map(|&j| sends1[j].clone()).collect::<Vec<_>>()).unwrap();
                let d2 = decode(&code, 4, &b, &b.iter().map(|&j| sends2[j].clone()).collect::<Vec<_>>()).unwrap();
                let total: Vec<f64> = d1.iter().zip(&d2).map(|(x, y)| x + y).collect();
                assert!(
                    total.iter().zip([8.0, 6.0, 12.0, 18.0]).all(|(x, y)| (x - y).abs() <= 1e-12),
                    "{a:?} {b:?}: {total:?}"
                );
                patterns += 1;
            }
        }
        assert_eq!(patterns, 36);
        // A7: three and four arrivals per group (least squares)
        for t in [vec![0, 1, 2], vec![3, 1, 0, 2]] {
            let d = decode(&code, 4, &t, &t.iter().map(|&j| sends1[j].clone()).collect::<Vec<_>>()).unwrap();
            assert!(d.iter().zip(g1).all(|(x, y)| (x - y).abs() <= 1e-12));
        }
        // A8: padding, d = 5, K = 2
        let g = [1.0, 2.0, 3.0, 4.0, 5.0];
        let sends: Vec<Vec<f64>> = (0..4).map(|j| encode(&code, &g, j)).collect();
        assert_eq!(sends, vec![vec![1.0, 2.0, 3.0], vec![4.0, 5.0, 0.0], vec![5.0, 7.0, 3.0], vec![9.0, 12.0, 3.0]]);
        let d = decode(&code, 5, &[2, 3], &[sends[2].clone(), sends[3].clone()]).unwrap();
        assert_eq!(d.len(), 5);
        assert!(d.iter().zip(g).all(|(x, y)| (x - y).abs() <= 1e-12));
    }

    /// A10: decodability is a rank test, not a count (a non-MDS [6, 2, 3] code).
    #[test]
    fn decodability_is_a_rank_test() {
        let c = LinearCode::explicit(array![[1.0, 0.0, 1.0, 0.0, 1.0, 0.0], [0.0, 1.0, 0.0, 1.0, 0.0, 1.0]]);
        assert_eq!(c.min_distance(), 3);
        assert!(!c.decodable(&[0, 2, 4]), "three arrivals, rank 1");
        assert!(c.decodable(&[0, 1]), "two arrivals, rank 2");
        assert!(!c.decodable(&[0]));
        // A11: three stragglers in group 1 of the example: only one arrival, not decodable
        assert!(example().decoding(&[3]).is_none());
    }

    /// A9 (vector B), A13 (systematic fast path), A14 (repetition).
    #[test]
    fn systematic_fast_path_repetition_and_derived_vector_b() {
        // vector B: n = k = 6, s = 1, m = 2, G = [[1,0,1],[0,1,1]], d = 5, g_u(x) = 10u + x
        let code = LinearCode::explicit(array![[1.0, 0.0, 1.0], [0.0, 1.0, 1.0]]);
        let gu = |u: usize| (1..=5).map(|x| (10 * u + x) as f64).collect::<Vec<f64>>();
        let gi = |i: usize| {
            (3 * i + 1..=3 * i + 3).map(gu).fold(vec![0.0; 5], |a, b| a.iter().zip(&b).map(|(x, y)| x + y).collect())
        };
        for t in combinations(3, 2) {
            let mut total = vec![0.0; 5];
            for i in 0..2 {
                let g = gi(i);
                let recv: Vec<Vec<f64>> = t.iter().map(|&j| encode(&code, &g, j)).collect();
                let d = decode(&code, 5, &t, &recv).unwrap();
                total.iter_mut().zip(&d).for_each(|(a, b)| *a += b);
            }
            assert!(
                total.iter().zip([216.0, 222.0, 228.0, 234.0, 240.0]).all(|(x, y)| (x - y).abs() <= 1e-12),
                "{t:?}: {total:?}"
            );
        }
        let sys = LinearCode::systematic(5, 3).unwrap();
        let g: Vec<f64> = (0..10).map(|i| i as f64 * 0.37 - 1.0).collect();
        let t = [4, 0, 2, 1];
        let recv: Vec<Vec<f64>> = t.iter().map(|&j| encode(&sys, &g, j)).collect();
        match sys.decoding(&t).unwrap() {
            GroupDecoding::Solve { coef, cond, .. } => {
                assert_eq!(cond, 1.0, "no solve");
                assert!(coef.iter().flatten().all(|&c| c == 0.0 || c == 1.0));
            }
            _ => panic!("systematic codes solve"),
        }
        assert_eq!(decode(&sys, 10, &t, &recv).unwrap(), g, "concatenation, bit for bit");
        for t in combinations(5, 3) {
            let recv: Vec<Vec<f64>> = t.iter().map(|&j| encode(&sys, &g, j)).collect();
            let d = decode(&sys, 10, &t, &recv).unwrap();
            assert!(d.iter().zip(&g).all(|(x, y)| (x - y).abs() <= 1e-12), "{t:?}");
        }
        let rep = LinearCode::repetition(3);
        for j in 0..3 {
            assert_eq!(decode(&rep, 4, &[j], &[g[..4].to_vec()]).unwrap(), g[..4].to_vec());
        }
    }

    /// A15 (property, reduced): Gaussian codes decode every K-subset within the tolerance.
    #[test]
    fn gaussian_codes_decode_random_subsets() {
        let mut rng = Rng::from_key(&[15]);
        for trial in 0..200u64 {
            let k = 1 + rng.below(8);
            let n = k + rng.below(6);
            let code = LinearCode::gaussian(n, k, trial).unwrap();
            let d = 1 + rng.below(50);
            let g: Vec<f64> = (0..d).map(|_| rng.normal()).collect();
            let t_len = k + rng.below(n - k + 1);
            let t = rng.choose(n, t_len);
            let recv: Vec<Vec<f64>> = t.iter().map(|&j| encode(&code, &g, j)).collect();
            let cond = match code.decoding(&t).unwrap() {
                GroupDecoding::Solve { cond, .. } => cond,
                _ => unreachable!(),
            };
            let out = decode(&code, d, &t, &recv).unwrap();
            let gmax = g.iter().fold(0.0f64, |m, x| m.max(x.abs()));
            let tol = 10.0 * cond * 2f64.powi(-52) * gmax * d as f64;
            let err = out.iter().zip(&g).fold(0.0f64, |m, (x, y)| m.max((x - y).abs()));
            assert!(err <= tol.max(1e-12), "trial {trial}: n={n} k={k} |T|={t_len}: err {err:e} > {tol:e}");
        }
    }

    /// A16: for each group, every subset of s stragglers inside that group decodes (MDS).
    #[test]
    fn adversarial_stragglers_inside_one_group() {
        for (n, k) in [(4, 2), (6, 2), (7, 3)] {
            let code = LinearCode::gaussian(n, k, 5).unwrap();
            let s = n - k;
            for dead in combinations(n, s) {
                let alive: Vec<usize> = (0..n).filter(|j| !dead.contains(j)).collect();
                assert!(code.decodable(&alive), "n={n} k={k} dead {dead:?}");
            }
        }
    }

    /// A21: LDPC peeling at about 20 % erasures recovers the systematic positions exactly; a
    /// stalled peel reports failure.
    #[test]
    fn ldpc_peeling_recovers_or_reports_failure() {
        let code = LinearCode::ldpc(200, 100, 3, 20).unwrap();
        assert_eq!(code.systematic.len(), 100);
        // the generator satisfies every check: H·Gᵀ = 0
        for check in &code.checks {
            for row in 0..code.dim {
                let v: f64 = check.iter().map(|&(p, h)| h * code.g[(row, p)]).sum();
                assert!(v.abs() < 1e-9, "{v}");
            }
        }
        let mut rng = Rng::from_key(&[21]);
        let g: Vec<f64> = (0..300).map(|_| rng.normal()).collect();
        let (mut ok, mut stalled) = (0, 0);
        for _ in 0..20 {
            let known: Vec<usize> = (0..200).filter(|_| rng.uniform() >= 0.2).collect();
            let recv: Vec<Vec<f64>> = known.iter().map(|&j| encode(&code, &g, j)).collect();
            match decode(&code, 300, &known, &recv) {
                Some(out) => {
                    let gmax = g.iter().fold(0.0f64, |m, x| m.max(x.abs()));
                    let err = out.iter().zip(&g).fold(0.0f64, |m, (x, y)| m.max((x - y).abs()));
                    assert!(err <= 1e-12 * gmax * 100.0, "{err:e}");
                    ok += 1;
                }
                None => stalled += 1,
            }
        }
        assert!(ok >= 15, "peeling at 20 % erasures: {ok} recovered, {stalled} stalled");
        assert!(!code.decodable(&(0..90).collect::<Vec<_>>()), "too few positions");
    }

    /// Small groups (N = 10, 12, 16) get a code for every seed: rejection redraws until no two
    /// positions share all three checks.
    #[test]
    fn ldpc_small_groups_are_found_for_every_seed() {
        for len in [10, 12, 16] {
            for seed in 0..20 {
                let code =
                    LinearCode::ldpc(len, len / 2, seed, 1).unwrap_or_else(|e| panic!("N = {len}, seed {seed}: {e}"));
                assert_eq!(code.systematic.len(), len / 2);
            }
        }
        assert!(matches!(LinearCode::ldpc(8, 4, 0, 1), Err(LinearError::Ldpc { len: 8, dim: 4 })));
    }

    /// The systematic code's Cauchy block uses interlaced nodes: its decoding systems stay
    /// conditioned where the Hilbert-matrix choice (x_a = a + 1/2, y_b = −(b + 1/2)) does not.
    #[test]
    fn systematic_cauchy_nodes_are_interlaced() {
        let code = LinearCode::systematic(24, 12).unwrap();
        let mut hilbert = code.g.clone();
        for a in 0..12 {
            for b in 0..12 {
                hilbert[(a, 12 + b)] = 1.0 / ((a as f64 + 0.5) + (b as f64 + 0.5));
            }
        }
        let hilbert = LinearCode::explicit(hilbert);
        let ours = code.profile(6, 100, 1);
        let theirs = hilbert.profile(6, 100, 1);
        assert_eq!(ours.decodable, ours.sets);
        assert!(
            ours.worst_cond < 1e3 && theirs.worst_cond > 1e5,
            "interlaced {:.1e}, Hilbert {:.1e}",
            ours.worst_cond,
            theirs.worst_cond
        );
    }
}
