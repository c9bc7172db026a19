//! Data allocation: which points each node holds, with which coefficients.
//!
//! A node's data is a [`WeightedSet`]: a list of contiguous runs of point indices, each with one
//! coefficient. A node computes `Σ c·∇ℓ(θ; x)` over its set — a *sum*, never a mean, so uneven
//! partitions never break exactness (notes §1.1, §1.9).
//!
//! [`compalloc`] is COMPALLOC(D, B) (thesis App. H, Alg. 3): split D into n parts; child i gets
//! `∪_κ B[i,κ]·D_κ`. [`tree_allocate`] is CR.ALLOCATE (thesis App. I, Alg. 4): COMPALLOC at the
//! master, every non-leaf keeps its share and passes the rest down, coefficients multiplying
//! along the path, leaves keep all they get. A star is the depth-1 tree: the master keeps
//! nothing and the workers are leaves, which is exactly gradient coding's placement.

use outrun_codes::Matrix;
use serde::{Deserialize, Serialize};

use crate::topology::Tree;

/// A run of consecutive points `start .. start + len`, all with coefficient `coef`.
#[derive(Clone, Copy, Debug, PartialEq, Serialize, Deserialize)]
pub struct Segment {
    /// First point.
    pub start: usize,
    /// Number of points.
    pub len: usize,
    /// Coefficient of every point of the run.
    pub coef: f64,
}

/// A weighted multiset of data points, as runs.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
pub struct WeightedSet {
    /// The runs, in order.
    pub segments: Vec<Segment>,
}

/// Sizes of `k` near-equal parts of `m` (larger parts first, like `np.array_split`).
pub fn split_sizes(m: usize, k: usize) -> Vec<usize> {
    let (q, r) = (m / k, m % k);
    (0..k).map(|j| q + usize::from(j < r)).collect()
}

impl WeightedSet {
    /// Points `0..d`, coefficient 1.
    pub fn full(d: usize) -> Self {
        let mut s = WeightedSet::default();
        s.push(Segment { start: 0, len: d, coef: 1.0 });
        s
    }

    /// Number of points (counted with multiplicity).
    pub fn len(&self) -> usize {
        self.segments.iter().map(|s| s.len).sum()
    }

    /// Whether the set has no point.
    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }

    /// Append a run, merging it with the last one when contiguous with the same coefficient.
    pub fn push(&mut self, seg: Segment) {
        if seg.len == 0 {
            return;
        }
        if let Some(last) = self.segments.last_mut() {
            if last.coef == seg.coef && last.start + last.len == seg.start {
                last.len += seg.len;
                return;
            }
        }
        self.segments.push(seg);
    }

    /// The first `m` points and the rest.
    pub fn split_at(&self, m: usize) -> (WeightedSet, WeightedSet) {
        let (mut a, mut b) = (WeightedSet::default(), WeightedSet::default());
        let mut left = m;
        for s in &self.segments {
            let take = left.min(s.len);
            a.push(Segment { len: take, ..*s });
            b.push(Segment { start: s.start + take, len: s.len - take, coef: s.coef });
            left -= take;
        }
        (a, b)
    }

    /// `k` consecutive near-equal parts (see [`split_sizes`]).
    pub fn split_even(&self, k: usize) -> Vec<WeightedSet> {
        let mut rest = self.clone();
        split_sizes(self.len(), k)
            .into_iter()
            .map(|sz| {
                let (head, tail) = rest.split_at(sz);
                rest = tail;
                head
            })
            .collect()
    }

    /// Every coefficient multiplied by `c`.
    pub fn scaled(&self, c: f64) -> WeightedSet {
        WeightedSet { segments: self.segments.iter().map(|s| Segment { coef: s.coef * c, ..*s }).collect() }
    }

    /// This set followed by `other`.
    pub fn extend(&mut self, other: &WeightedSet) {
        for s in &other.segments {
            self.push(*s);
        }
    }

    /// `(point, coefficient)` pairs in order.
    pub fn points(&self) -> impl Iterator<Item = (usize, f64)> + '_ {
        self.segments.iter().flat_map(|s| (s.start..s.start + s.len).map(move |i| (i, s.coef)))
    }

    /// Compact human form, 0-based: `0-4@0.5, 5@1`.
    pub fn describe(&self) -> String {
        if self.segments.is_empty() {
            return "-".into();
        }
        self.segments
            .iter()
            .map(|s| {
                let c = fmt_coef(s.coef);
                if s.len == 1 {
                    format!("{}@{c}", s.start)
                } else {
                    format!("{}-{}@{c}", s.start, s.start + s.len - 1)
                }
            })
            .collect::<Vec<_>>()
            .join(", ")
    }
}

/// Short form of a coefficient for display.
pub fn fmt_coef(c: f64) -> String {
    if c == c.round() && c.abs() < 1e6 {
        format!("{}", c as i64)
    } else {
        let s = format!("{c:.4}");
        s.trim_end_matches('0').trim_end_matches('.').to_string()
    }
}

/// COMPALLOC(D, B): split `data` into n near-equal parts; child i gets `∪_κ B[i,κ]·D_κ`.
pub fn compalloc(data: &WeightedSet, b: &Matrix) -> Vec<WeightedSet> {
    let n = b.nrows();
    let parts = data.split_even(n);
    (0..n)
        .map(|i| {
            let mut out = WeightedSet::default();
            for (k, part) in parts.iter().enumerate() {
                let c = b[(i, k)];
                if c != 0.0 {
                    out.extend(&part.scaled(c));
                }
            }
            out
        })
        .collect()
}

/// Exact load fraction r_CR = 1 / Σ_{l=1..L} (n/(s+1))^l as a reduced fraction (num, den).
/// For a star (L = 1) this is (s+1)/n, gradient coding's load.
pub fn r_cr(n: usize, layers: usize, s: usize) -> (u128, u128) {
    let (n, s1) = (n as u128, (s + 1) as u128);
    let num = s1.pow(layers as u32);
    let den: u128 = (1..=layers).map(|l| n.pow(l as u32) * s1.pow((layers - l) as u32)).sum();
    let g = gcd(num, den);
    (num / g, den / g)
}

/// Smallest d for which every CR set size is an integer (notes §1.9): the "modulus" M.
pub fn cr_modulus(n: usize, layers: usize, s: usize) -> u128 {
    let (n, s1) = (n as u128, (s + 1) as u128);
    let big_d: u128 = (1..=layers).map(|j| n.pow(j as u32) * s1.pow((layers - j) as u32)).sum();
    let mut g = gcd(big_d, s1.pow(layers as u32));
    g = gcd(g, big_d / n);
    for l in 1..layers {
        let part: u128 = (1..=layers - l).map(|j| n.pow(j as u32 - 1) * s1.pow((layers - j) as u32)).sum();
        g = gcd(g, part);
    }
    big_d / g
}

fn gcd(a: u128, b: u128) -> u128 {
    if b == 0 {
        a
    } else {
        gcd(b, a % b)
    }
}

/// Round `num/den` to the nearest integer, ties to even (Python's `round`, used by the notes).
fn round_ratio(num: u128, den: u128) -> usize {
    let q = num / den;
    let r = num % den;
    let up = match (2 * r).cmp(&den) {
        std::cmp::Ordering::Greater => true,
        std::cmp::Ordering::Less => false,
        std::cmp::Ordering::Equal => q % 2 == 1,
    };
    (q + u128::from(up)) as usize
}

/// CR.ALLOCATE over an (n, L)-regular tree with one code `b` (n × n) for every sibling group.
/// Returns the local set of every rank (index = rank; the master's is empty).
///
/// A non-leaf node at layer l keeps `round(|D^T| / Σ_{j=0..L−l} ρ^j)` of the points it
/// receives (ρ = n/(s+1)), the first ones, and passes the rest down; a leaf keeps all.
pub fn tree_allocate(d: usize, tree: Tree, s: usize, b: &Matrix) -> Vec<WeightedSet> {
    assert_eq!(b.nrows(), tree.n);
    let mut alloc = vec![WeightedSet::default(); tree.ranks()];
    let (n, s1) = (tree.n as u128, (s + 1) as u128);
    let mut pending: Vec<(usize, WeightedSet)> = vec![(0, WeightedSet::full(d))];
    for layer in 1..=tree.layers {
        let mut next = Vec::new();
        let m = (tree.layers - layer) as u32; // layers below this one
                                              // keep fraction 1/Σ_{j=0..m} ρ^j = (s+1)^m / Σ_j n^j (s+1)^{m−j}
        let num = s1.pow(m);
        let den: u128 = (0..=m).map(|j| n.pow(j) * s1.pow(m - j)).sum();
        for (parent, data) in pending {
            for (j, set) in compalloc(&data, b).into_iter().enumerate() {
                let child = tree.children(parent)[j];
                if layer < tree.layers {
                    let keep = round_ratio(set.len() as u128 * num, den);
                    let (mine, rest) = set.split_at(keep);
                    alloc[child] = mine;
                    next.push((child, rest));
                } else {
                    alloc[child] = set;
                }
            }
        }
        pending = next;
    }
    alloc
}

#[cfg(test)]
mod tests {
    use super::*;
    use ndarray::array;
    use outrun_codes::decode;

    fn thesis_b() -> Matrix {
        array![[0.5, 1.0, 0.0], [0.0, 1.0, -1.0], [0.5, 0.0, 1.0]]
    }

    #[test]
    fn split_and_merge() {
        assert_eq!(split_sizes(10, 3), vec![4, 3, 3]);
        let s = WeightedSet::full(10);
        let parts = s.split_even(3);
        assert_eq!(parts.iter().map(|p| p.len()).collect::<Vec<_>>(), vec![4, 3, 3]);
        assert_eq!(parts[1].segments, vec![Segment { start: 4, len: 3, coef: 1.0 }]);
        let mut joined = parts[0].clone();
        joined.extend(&parts[1]);
        assert_eq!(joined.segments.len(), 1);
        assert_eq!(joined.describe(), "0-6@1");
    }

    /// AT-3: r_CR and the modulus, exact.
    #[test]
    fn r_cr_values() {
        assert_eq!(r_cr(3, 2, 1), (4, 15));
        assert_eq!(r_cr(4, 3, 1), (1, 14));
        assert_eq!(r_cr(12, 2, 1), (1, 42));
        assert_eq!(r_cr(12, 2, 2), (1, 20));
        assert_eq!(r_cr(12, 2, 3), (1, 12));
        assert_eq!(r_cr(12, 2, 5), (1, 6));
        assert_eq!(r_cr(4, 3, 2), (27, 148));
        assert_eq!(r_cr(5, 2, 4), (1, 2));
        assert_eq!(r_cr(3, 2, 0), (1, 12));
        assert_eq!(r_cr(9, 1, 2), (1, 3)); // a star: (s+1)/N
        let m: Vec<u128> = [(3, 2, 1), (4, 3, 1), (12, 2, 1), (12, 2, 2), (12, 2, 3), (12, 2, 5)]
            .iter()
            .map(|&(n, l, s)| cr_modulus(n, l, s))
            .collect();
        assert_eq!(m, vec![15, 28, 84, 60, 48, 36]);
    }

    /// AT-5: the (3,2), s = 1 example with d = 15 reproduces the notes' table (1-based there).
    #[test]
    fn thesis_allocation_table() {
        let alloc = tree_allocate(15, Tree::new(3, 2), 1, &thesis_b());
        let one_based = |r: usize| -> Vec<(usize, f64)> { alloc[r].points().map(|(i, c)| (i + 1, c)).collect() };
        let expect: [(usize, &[(usize, f64)]); 12] = [
            (1, &[(1, 0.5), (2, 0.5), (3, 0.5), (4, 0.5)]),
            (2, &[(6, 1.0), (7, 1.0), (8, 1.0), (9, 1.0)]),
            (3, &[(1, 0.5), (2, 0.5), (3, 0.5), (4, 0.5)]),
            (4, &[(5, 0.25), (6, 0.5), (7, 1.0), (8, 1.0)]),
            (5, &[(7, 1.0), (8, 1.0), (9, -1.0), (10, -1.0)]),
            (6, &[(5, 0.25), (6, 0.5), (9, 1.0), (10, 1.0)]),
            (7, &[(10, 0.5), (11, -0.5), (12, -1.0), (13, -1.0)]),
            (8, &[(12, -1.0), (13, -1.0), (14, 1.0), (15, 1.0)]),
            (9, &[(10, 0.5), (11, -0.5), (14, -1.0), (15, -1.0)]),
            (10, &[(5, 0.25), (11, 0.5), (12, 1.0), (13, 1.0)]),
            (11, &[(12, 1.0), (13, 1.0), (14, -1.0), (15, -1.0)]),
            (12, &[(5, 0.25), (11, 0.5), (14, 1.0), (15, 1.0)]),
        ];
        for (r, want) in expect {
            assert_eq!(one_based(r), want.to_vec(), "rank {r}");
        }
        assert!(alloc[0].is_empty());
    }

    /// AT-6: load balance, exact for multiples of the modulus, within ±2 otherwise.
    #[test]
    fn loads_match_r_cr() {
        for (n, l, s, d, want) in [
            (4, 3, 1, 6552, 468),
            (12, 2, 1, 6552, 156),
            (12, 2, 5, 4968, 828),
            (12, 2, 3, 7632, 636),
            (12, 2, 2, 6540, 327),
        ] {
            let b = outrun_codes::GradientCode::identity(n).b; // loads do not depend on B's values, only its support
            let b = if s == 0 { b } else { outrun_codes::GradientCode::cyclic(n, s, 1, 1).unwrap().0.b };
            let alloc = tree_allocate(d, Tree::new(n, l), s, &b);
            assert!(alloc[1..].iter().all(|a| a.len() == want), "({n},{l},{s}) d={d}");
        }
        let b = thesis_b();
        for d in [1000, 7, 1001, 31] {
            let alloc = tree_allocate(d, Tree::new(3, 2), 1, &b);
            let rd = 4.0 * d as f64 / 15.0;
            for a in &alloc[1..] {
                assert!((a.len() as f64 - rd).abs() <= 2.0, "d={d}: load {} vs r·d = {rd}", a.len());
            }
        }
    }

    /// Every point's coefficients, decoded up the tree with any ≤ s stragglers per group, sum
    /// to exactly 1: the invariant behind CR's exactness, checked symbolically.
    #[test]
    fn decoded_coefficients_sum_to_one_per_point() {
        let tree = Tree::new(3, 2);
        let b = thesis_b();
        let d = 31;
        let alloc = tree_allocate(d, tree, 1, &b);
        for straggler_top in 0..3 {
            for straggler_low in 0..3 {
                // message of each rank as a vector of per-point weights
                let mut msg: Vec<Vec<f64>> = vec![vec![0.0; d]; tree.ranks()];
                for r in (0..tree.ranks()).rev() {
                    let mut w = vec![0.0; d];
                    for (i, c) in alloc[r].points() {
                        w[i] += c;
                    }
                    let ch = tree.children(r);
                    if !ch.is_empty() {
                        let skip = if r == 0 { straggler_top } else { straggler_low };
                        let surv: Vec<usize> = (0..3).filter(|&j| j != skip).collect();
                        let a = decode(&b, &surv).coeffs;
                        for (j, &c) in ch.iter().enumerate() {
                            for i in 0..d {
                                w[i] += a[j] * msg[c][i];
                            }
                        }
                    }
                    msg[r] = w;
                }
                assert!(msg[0].iter().all(|&w| (w - 1.0).abs() < 1e-12), "{:?}", msg[0]);
            }
        }
    }
}
