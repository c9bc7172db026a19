//! Gradient codes: the `n × n` encoding matrix `B` of a group of `n` siblings.
//!
//! Row `i` of `B` says which data partitions child `i` holds and with which coefficients; child
//! `i` sends `Σ_κ B[i,κ]·g_κ`. A code tolerates `s` stragglers when the all-ones vector lies in
//! the row span of every `n − s` rows (Tandon, Lei, Dimakis, Karampatziakis, ICML 2017; restated
//! in `../shared/spec/seed-004-ch4-ch5-ch7.md` §1.3).
//!
//! - [`GradientCode::identity`]: `B = I`, no redundancy (uncoded master–worker, s = 0).
//! - [`GradientCode::cyclic_draw`]: Tandon's cyclic-repetition code with random construction:
//!   row `i` is supported on `{i, …, i+s} mod n` and lies in the null space of a random `s × n`
//!   matrix `H` with `H·1 = 0`.
//! - [`GradientCode::cyclic`]: best of several draws, screened by worst-case decoding
//!   coefficient (the random construction is often badly conditioned; notes §1.10).
//! - [`GradientCode::fractional`]: fractional repetition, needs `(s+1) | n`; integer
//!   coefficients, exact decoding.

use ndarray::{Array1, Array2};
use rand::Rng as _;
use serde::{Deserialize, Serialize};

use crate::combin::{binomial, combinations};
use crate::decode::{Decoder, EXACT_RESIDUAL};
use crate::linalg::{lstsq, Matrix};
use crate::rng::{domain, Rng};

/// Which construction produced a code.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum CodeKind {
    /// `B = I`.
    Identity,
    /// Tandon et al.'s cyclic repetition (random construction).
    Cyclic,
    /// Fractional repetition.
    Fractional,
    /// Given explicitly (e.g. the thesis's worked example).
    Explicit,
}

/// An encoding matrix and the straggler tolerance it was built for.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct GradientCode {
    /// The construction.
    pub kind: CodeKind,
    /// Children in the group (rows of `B`).
    pub n: usize,
    /// Stragglers tolerated.
    pub s: usize,
    /// The encoding matrix, n × n.
    pub b: Matrix,
}

/// Why a code could not be built.
#[derive(Clone, Debug, PartialEq, thiserror::Error)]
pub enum CodeError {
    /// `s` must satisfy `0 ≤ s < n`.
    #[error("s = {s} must be less than the group size n = {n}")]
    TooManyStragglers {
        /// Group size.
        n: usize,
        /// Stragglers asked for.
        s: usize,
    },
    /// Fractional repetition needs `(s+1) | n`.
    #[error("fractional repetition needs s+1 to divide n, but s+1 = {} does not divide n = {n}", s + 1)]
    NotDivisible {
        /// Group size.
        n: usize,
        /// Stragglers asked for.
        s: usize,
    },
    /// No random draw gave a code that decodes every survivor set exactly.
    #[error("no well-conditioned cyclic code found for n = {n}, s = {s} in {draws} draws")]
    IllConditioned {
        /// Group size.
        n: usize,
        /// Stragglers asked for.
        s: usize,
        /// Draws tried.
        draws: usize,
    },
}

/// Worst-case decoding quality of a code over survivor sets of size `n − s`.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct Screening {
    /// Largest |a_i| over the sets checked.
    pub worst_abs_coef: f64,
    /// Largest residual ‖aB − 1‖₂ over the sets checked.
    pub worst_residual: f64,
    /// How many survivor sets were checked.
    pub sets_checked: u64,
    /// Whether every survivor set of size n − s was checked.
    pub exhaustive: bool,
}

impl GradientCode {
    /// No redundancy: child i holds partition i.
    pub fn identity(n: usize) -> Self {
        GradientCode { kind: CodeKind::Identity, n, s: 0, b: Array2::eye(n) }
    }

    /// A code given by its matrix (rows = children).
    pub fn explicit(b: Matrix, s: usize) -> Self {
        assert_eq!(b.nrows(), b.ncols(), "B must be square");
        GradientCode { kind: CodeKind::Explicit, n: b.nrows(), s, b }
    }

    /// Fractional repetition: children in groups of s+1; each child of group g holds the s+1
    /// partitions of group g with coefficient 1.
    pub fn fractional(n: usize, s: usize) -> Result<Self, CodeError> {
        if s >= n {
            return Err(CodeError::TooManyStragglers { n, s });
        }
        if !n.is_multiple_of(s + 1) {
            return Err(CodeError::NotDivisible { n, s });
        }
        let g = s + 1;
        let mut b = Matrix::zeros((n, n));
        for i in 0..n {
            let grp = i / g;
            for j in grp * g..(grp + 1) * g {
                b[(i, j)] = 1.0;
            }
        }
        Ok(GradientCode { kind: CodeKind::Fractional, n, s, b })
    }

    /// One random draw of Tandon's cyclic-repetition code. `None` when an `s × s` block of the
    /// random `H` is numerically singular (the caller draws again).
    pub fn cyclic_draw(n: usize, s: usize, rng: &mut Rng) -> Result<Option<Self>, CodeError> {
        if s >= n {
            return Err(CodeError::TooManyStragglers { n, s });
        }
        if s == 0 {
            return Ok(Some(GradientCode { kind: CodeKind::Cyclic, ..Self::identity(n) }));
        }
        // H: s × n, i.i.d. N(0,1) in the first n−1 columns, last column = −(sum of the others).
        // Drawn once, on rank 0, and broadcast: rand_distr's sampler is fine here.
        let mut h = Matrix::zeros((s, n));
        for r in 0..s {
            let mut sum = 0.0;
            for c in 0..n - 1 {
                let v: f64 = rng.sample(rand_distr::StandardNormal);
                h[(r, c)] = v;
                sum += v;
            }
            h[(r, n - 1)] = -sum;
        }
        let mut b = Matrix::zeros((n, n));
        for i in 0..n {
            let others: Vec<usize> = (1..=s).map(|j| (i + j) % n).collect();
            // Solve H[:, others]·x = −H[:, i]  (s × s).
            let m = h.select(ndarray::Axis(1), &others);
            let rhs: Array1<f64> = h.column(i).mapv(|v| -v);
            let ls = lstsq(m.view(), rhs.view());
            if ls.rank < s || ls.rcond < 1e-8 {
                return Ok(None);
            }
            b[(i, i)] = 1.0;
            for (c, &col) in others.iter().enumerate() {
                b[(i, col)] = ls.x[c];
            }
        }
        Ok(Some(GradientCode { kind: CodeKind::Cyclic, n, s, b }))
    }

    /// Best of `draws` random cyclic codes by worst-case decoding coefficient, among those whose
    /// every checked survivor set decodes exactly. Deterministic in `seed`.
    pub fn cyclic(n: usize, s: usize, seed: u64, draws: usize) -> Result<(Self, Screening), CodeError> {
        if s >= n {
            return Err(CodeError::TooManyStragglers { n, s });
        }
        let mut best: Option<(Self, Screening)> = None;
        for d in 0..draws.max(1) {
            let mut rng = Rng::from_key(&[seed, domain::CODE, n as u64, s as u64, d as u64]);
            let Some(code) = Self::cyclic_draw(n, s, &mut rng)? else { continue };
            let scr = code.screen(seed);
            if scr.worst_residual > EXACT_RESIDUAL {
                continue;
            }
            if best.as_ref().is_none_or(|(_, b)| scr.worst_abs_coef < b.worst_abs_coef) {
                best = Some((code, scr));
            }
        }
        best.ok_or(CodeError::IllConditioned { n, s, draws })
    }

    /// Decoding quality over survivor sets of size `n − s`: all of them when there are at most
    /// 2000, otherwise a seeded sample (200 sets when n ≤ 32, 20 above).
    pub fn screen(&self, seed: u64) -> Screening {
        let (n, k) = (self.n, self.n - self.s);
        let total = binomial(n, k);
        let mut scr =
            Screening { worst_abs_coef: 0.0, worst_residual: 0.0, sets_checked: 0, exhaustive: total <= 2000 };
        let mut dec = Decoder::new(self.clone());
        let mut visit = |set: &[usize]| {
            let d = dec.decode(&crate::combin::SurvivorSet::from_indices(n, set));
            scr.worst_abs_coef = scr.worst_abs_coef.max(d.max_abs);
            scr.worst_residual = scr.worst_residual.max(d.residual);
            scr.sets_checked += 1;
        };
        if total <= 2000 {
            combinations(n, k).for_each(|c| visit(&c));
        } else {
            // each sampled set is an (n−s)×n least-squares solve, O(n³); fewer than 20 per draw
            // let ill-conditioned draws through (3 per draw chose a code that failed at N = 156)
            let samples = if n <= 32 { 200 } else { 20 };
            let mut rng = Rng::from_key(&[seed, domain::SCREEN, n as u64, self.s as u64]);
            for _ in 0..samples {
                visit(&rng.choose(n, k));
            }
        }
        scr
    }

    /// Partitions (columns) that child `i` holds.
    pub fn support(&self, i: usize) -> Vec<usize> {
        (0..self.n).filter(|&j| self.b[(i, j)] != 0.0).collect()
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::decode::decode;
    use crate::linalg::{col_nnz, row_nnz};
    use ndarray::array;

    fn thesis_b() -> Matrix {
        array![[0.5, 1.0, 0.0], [0.0, 1.0, -1.0], [0.5, 0.0, 1.0]]
    }

    /// AT-1: for every n ≤ 12 and s < n, one seeded draw has the cyclic support, s+1 non-zeros
    /// per row and column, and decodes *every* survivor set of size n − s with residual ≤ 1e-9.
    #[test]
    fn cyclic_codes_decode_every_survivor_set() {
        let mut worst = 0.0f64;
        for n in 2..=12 {
            for s in 0..n {
                let mut rng = Rng::from_key(&[42, n as u64, s as u64]);
                let code = loop {
                    if let Some(c) = GradientCode::cyclic_draw(n, s, &mut rng).unwrap() {
                        break c;
                    }
                };
                for i in 0..n {
                    let sup: Vec<usize> = {
                        let mut v: Vec<usize> = (0..=s).map(|j| (i + j) % n).collect();
                        v.sort_unstable();
                        v
                    };
                    assert_eq!(code.support(i), sup, "n={n} s={s} row {i}");
                    assert_eq!(code.b[(i, i)], 1.0);
                    assert_eq!(col_nnz(&code.b, i), s + 1);
                }
                for set in combinations(n, n - s) {
                    let d = decode(&code.b, &set);
                    worst = worst.max(d.residual);
                    assert!(d.residual <= 1e-9, "n={n} s={s} survivors {set:?}: residual {}", d.residual);
                    assert!(set.iter().all(|&i| i < n));
                    for j in 0..n {
                        if !set.contains(&j) {
                            assert_eq!(d.coeffs[j], 0.0);
                        }
                    }
                }
            }
        }
        assert!(worst < 1e-9);
        eprintln!("AT-1 single draws: worst residual over all (n ≤ 12, s, survivor set) = {worst:.2e}");
    }

    /// AT-1 for the screened construction the runtime uses (best of 5 draws).
    #[test]
    fn screened_cyclic_codes_decode_every_survivor_set() {
        for n in 2..=12 {
            for s in 0..n {
                let (code, scr) = GradientCode::cyclic(n, s, 7, 5).unwrap();
                assert!(scr.exhaustive);
                assert_eq!(scr.sets_checked, binomial(n, n - s));
                assert!(scr.worst_residual <= 1e-9, "n={n} s={s}: {}", scr.worst_residual);
                for set in combinations(n, n - s) {
                    assert!(decode(&code.b, &set).residual <= 1e-9);
                }
            }
        }
    }

    #[test]
    fn extreme_tolerances_are_identity_and_replication() {
        assert_eq!(GradientCode::cyclic(5, 0, 1, 3).unwrap().0.b, Array2::<f64>::eye(5));
        for n in [3, 5, 8] {
            let (c, _) = GradientCode::cyclic(n, n - 1, 1, 3).unwrap();
            for i in 0..n {
                assert_eq!(row_nnz(&c.b, i), n, "full replication row {i}");
            }
            // any single survivor decodes
            for i in 0..n {
                assert!(decode(&c.b, &[i]).is_exact());
            }
        }
    }

    /// AT-2: the thesis's 3-worker example (T eq. 4.4, P eq. 4).
    #[test]
    fn thesis_example_decoding_rows() {
        let b = thesis_b();
        let cases: [(&[usize], [f64; 3]); 3] =
            [(&[0, 1], [2.0, -1.0, 0.0]), (&[0, 2], [1.0, 0.0, 1.0]), (&[1, 2], [0.0, 1.0, 2.0])];
        for (surv, expect) in cases {
            let d = decode(&b, surv);
            for (a, e) in d.coeffs.iter().zip(expect) {
                assert!((a - e).abs() < 1e-12, "survivors {surv:?}: {:?}", d.coeffs);
            }
            assert!(d.residual < 1e-12);
        }
        // A·B = ones(3,3), with A's rows ordered by which child straggles
        let a = array![[0.0, 1.0, 2.0], [1.0, 0.0, 1.0], [2.0, -1.0, 0.0]];
        assert_eq!(a.dot(&b), Array2::<f64>::ones((3, 3)));
        // The example rows lie in null([2, −1, −1]).
        for r in 0..3 {
            let row = b.row(r);
            assert_eq!(2.0 * row[0] - row[1] - row[2], 0.0);
        }
        // More than s stragglers: only child 1 alive cannot decode, and the residual says so.
        let d = decode(&b, &[0]);
        assert!(!d.is_exact());
        assert!((d.residual - 1.095).abs() < 1e-3, "residual {}", d.residual);
    }

    #[test]
    fn fractional_repetition_decodes_with_one_survivor_per_group() {
        let c = GradientCode::fractional(12, 5).unwrap();
        let mut dec = Decoder::new(c.clone());
        for set in combinations(12, 7) {
            // the fast path: one survivor per group, coefficient 1, no solve
            let d = dec.decode(&crate::combin::SurvivorSet::from_indices(12, &set));
            assert_eq!(d.residual, 0.0, "{set:?}");
            assert!(d.coeffs.iter().all(|&a| a == 0.0 || a == 1.0));
            assert_eq!(d.coeffs.iter().sum::<f64>(), 2.0);
            // least squares agrees that the set decodes (min-norm: spread over the group)
            assert!(decode(&c.b, &set).residual < 1e-12, "{set:?}");
        }
        let two_dead_groups = dec.decode(&crate::combin::SurvivorSet::from_indices(12, &[0, 1, 2]));
        assert!(!two_dead_groups.is_exact());
        assert_eq!(GradientCode::fractional(9, 1), Err(CodeError::NotDivisible { n: 9, s: 1 }));
        assert_eq!(GradientCode::fractional(4, 4), Err(CodeError::TooManyStragglers { n: 4, s: 4 }));
    }

    #[test]
    fn screening_picks_a_better_conditioned_draw() {
        let (one, s1) = GradientCode::cyclic(12, 3, 5, 1).unwrap();
        let (best, s20) = GradientCode::cyclic(12, 3, 5, 20).unwrap();
        assert!(s1.exhaustive && s20.exhaustive);
        assert_eq!(s20.sets_checked, binomial(12, 9));
        assert!(s20.worst_abs_coef <= s1.worst_abs_coef);
        assert!(s20.worst_residual <= 1e-9);
        // deterministic in the seed
        assert_eq!(GradientCode::cyclic(12, 3, 5, 20).unwrap().0, best);
        assert_eq!(one.kind, CodeKind::Cyclic);
    }

    #[test]
    fn every_survivor_superset_also_decodes() {
        let (c, _) = GradientCode::cyclic(7, 2, 3, 5).unwrap();
        for k in 5..=7 {
            for set in combinations(7, k) {
                assert!(decode(&c.b, &set).is_exact(), "{set:?}");
            }
        }
    }
}
