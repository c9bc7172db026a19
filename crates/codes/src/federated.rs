//! Robust aggregation of federated updates: the rules a server applies to its clients' updates
//! z₁ … z_K (each a vector of the same length) when some may be arbitrary (faulty clients).
//!
//! - **DiverseFL** (thesis ch. 7, Alg. 7.1): the server computes a guiding update Δ̃ⱼ per client
//!   on a small sample of that client's data and accepts zⱼ iff sign(Δ̃ⱼᵀzⱼ) > ε₁ and
//!   ε₂ < ‖zⱼ‖/‖Δ̃ⱼ‖ < ε₃ ([`diversefl_test`], [`Thresholds`]); the accepted updates are averaged.
//! - **Median**: the coordinate-wise median ([`coordinate_median`]; the mean of the two middle
//!   values for an even count).
//! - **Krum / Multi-Krum** (Blanchard et al., NeurIPS 2017): each update's score is the sum of
//!   its squared distances to its K − f − 2 nearest others; Krum keeps the lowest, Multi-Krum
//!   the m lowest, averaged ([`krum_scores`], [`krum`]).
//! - **Bulyan** (El Mhamdi et al., ICML 2018): θ = K − 2f updates chosen by Krum applied
//!   recursively (each pick removed from the pool), then per coordinate the mean of the
//!   β = θ − 2f selected values closest to their median ([`bulyan_select`], [`closest_mean`]).
//! - **Resampling** (He, Karimireddy and Jaggi, 2020): K groups of s updates, each update used s
//!   times ([`resample_groups`]), then the median of the group means.
//! - **FLTrust** (Cao et al., NDSS 2021): the server's own update g₀ on a root set; client i's
//!   weight is ReLU(cos(zᵢ, g₀)), its update rescaled to ‖g₀‖ ([`fltrust_coefficients`]).
//!
//! Everything here is a pure function of the vectors (and, for resampling, a seeded stream), so
//! each rule is unit-tested on hand-made vectors.

use crate::Rng;

/// DiverseFL's acceptance thresholds (ε₁, ε₂, ε₃); the thesis uses (0, 0.5, 2).
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct Thresholds {
    /// ε₁: the sign of Δ̃ᵀz must exceed it.
    pub eps1: f64,
    /// ε₂: the size ratio ‖z‖/‖Δ̃‖ must exceed it.
    pub eps2: f64,
    /// ε₃: the size ratio must be below it.
    pub eps3: f64,
}

impl Default for Thresholds {
    fn default() -> Self {
        Thresholds { eps1: 0.0, eps2: 0.5, eps3: 2.0 }
    }
}

/// A client's update against its guiding update: C₁ = sign(Δ̃ᵀz), C₂ = ‖z‖/‖Δ̃‖.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct Similarity {
    /// C₁ ∈ {−1, 0, 1}.
    pub c1: f64,
    /// C₂ (infinite when the guiding update is zero and z is not).
    pub c2: f64,
}

impl Thresholds {
    /// Whether DiverseFL accepts an update with this similarity: C₁ > ε₁ and ε₂ < C₂ < ε₃.
    pub fn accept(&self, s: Similarity) -> bool {
        s.c1 > self.eps1 && self.eps2 < s.c2 && s.c2 < self.eps3
    }
}

/// C₁ and C₂ of update `z` against guiding update `guide` (a NaN anywhere gives C₁ = 0).
pub fn diversefl_test(guide: &[f64], z: &[f64]) -> Similarity {
    let dot: f64 = guide.iter().zip(z).map(|(a, b)| a * b).sum();
    let c1 = if dot > 0.0 {
        1.0
    } else if dot < 0.0 {
        -1.0
    } else {
        0.0
    };
    Similarity { c1, c2: norm(z) / norm(guide) }
}

fn norm(v: &[f64]) -> f64 {
    v.iter().map(|x| x * x).sum::<f64>().sqrt()
}

fn dist_sq(a: &[f64], b: &[f64]) -> f64 {
    a.iter().zip(b).map(|(x, y)| (x - y) * (x - y)).sum()
}

/// The median of `values` (sorted in place; the mean of the two middle ones for an even count;
/// NaN sorts last).
fn median_of(values: &mut [f64]) -> f64 {
    values.sort_unstable_by(f64::total_cmp);
    let n = values.len();
    if n % 2 == 1 {
        values[n / 2]
    } else {
        0.5 * (values[n / 2 - 1] + values[n / 2])
    }
}

/// The coordinate-wise median of `v` (at least one vector, all of one length).
pub fn coordinate_median(v: &[&[f64]]) -> Vec<f64> {
    let len = v[0].len();
    let mut column = vec![0.0; v.len()];
    (0..len)
        .map(|c| {
            column.iter_mut().zip(v).for_each(|(x, z)| *x = z[c]);
            median_of(&mut column)
        })
        .collect()
}

/// Krum's score of each update: the sum of its squared distances to its `K − f − 2` nearest
/// other updates (all others when that is more than there are; 0 when it is less than one).
pub fn krum_scores(v: &[&[f64]], f: usize) -> Vec<f64> {
    let all: Vec<usize> = (0..v.len()).collect();
    pool_scores(&distances(v), &all, f)
}

/// Squared distances between every pair of updates.
fn distances(v: &[&[f64]]) -> Vec<Vec<f64>> {
    let k = v.len();
    let mut d = vec![vec![0.0; k]; k];
    for i in 0..k {
        for j in i + 1..k {
            d[i][j] = dist_sq(v[i], v[j]);
            d[j][i] = d[i][j];
        }
    }
    d
}

/// Krum's scores of the updates in `pool` among themselves, from their distances `d`.
fn pool_scores(d: &[Vec<f64>], pool: &[usize], f: usize) -> Vec<f64> {
    let k = pool.len();
    let near = k.saturating_sub(f + 2).min(k.saturating_sub(1));
    pool.iter()
        .map(|&i| {
            let mut others: Vec<f64> = pool.iter().filter(|&&j| j != i).map(|&j| d[i][j]).collect();
            others.sort_unstable_by(f64::total_cmp);
            others[..near].iter().sum()
        })
        .collect()
}

/// Positions of `scores` from lowest to highest (ties by position).
fn by_score(scores: &[f64]) -> Vec<usize> {
    let mut order: Vec<usize> = (0..scores.len()).collect();
    order.sort_by(|&a, &b| scores[a].total_cmp(&scores[b]).then(a.cmp(&b)));
    order
}

/// The `m` updates of lowest Krum score (ties by position), in increasing score order: Krum is
/// m = 1, Multi-Krum m > 1.
pub fn krum(v: &[&[f64]], f: usize, m: usize) -> Vec<usize> {
    let mut order = by_score(&krum_scores(v, f));
    order.truncate(m);
    order
}

/// Bulyan's selection: θ = K − 2f updates, each the Krum choice (with `f`) among those not yet
/// chosen; positions in the order chosen. The distances are computed once.
pub fn bulyan_select(v: &[&[f64]], f: usize) -> Vec<usize> {
    let theta = v.len().saturating_sub(2 * f);
    let d = distances(v);
    let mut pool: Vec<usize> = (0..v.len()).collect();
    let mut chosen = Vec::with_capacity(theta);
    while chosen.len() < theta {
        let pick = by_score(&pool_scores(&d, &pool, f))[0];
        chosen.push(pool.remove(pick));
    }
    chosen
}

/// Per coordinate, the mean of the `beta` values closest to the coordinate's median (Bulyan's
/// second stage; ties by position).
pub fn closest_mean(v: &[&[f64]], beta: usize) -> Vec<f64> {
    let len = v[0].len();
    let mut column = vec![0.0; v.len()];
    let mut by_gap: Vec<(f64, f64)> = Vec::with_capacity(v.len());
    (0..len)
        .map(|c| {
            column.iter_mut().zip(v).for_each(|(x, z)| *x = z[c]);
            let med = median_of(&mut column.clone());
            by_gap.clear();
            by_gap.extend(column.iter().map(|&x| ((x - med).abs(), x)));
            by_gap.sort_by(|a, b| a.0.total_cmp(&b.0));
            by_gap[..beta].iter().map(|g| g.1).sum::<f64>() / beta as f64
        })
        .collect()
}

/// Resampling's groups: `k` groups of `s` positions out of `0..k`, every position used exactly
/// `s` times (the multiset {0,…,0, 1,…, k−1} of s copies each, in a uniformly random order from
/// `rng`, cut into consecutive groups of s).
pub fn resample_groups(k: usize, s: usize, rng: &mut Rng) -> Vec<Vec<usize>> {
    let multiset: Vec<usize> = (0..k).flat_map(|i| std::iter::repeat_n(i, s)).collect();
    let order = rng.permutation(multiset.len());
    let drawn: Vec<usize> = order.iter().map(|&j| multiset[j]).collect();
    drawn.chunks(s.max(1)).map(<[usize]>::to_vec).collect()
}

/// FLTrust's coefficient of each client update: ReLU(cos(zᵢ, g₀))·‖g₀‖/‖zᵢ‖ divided by the sum
/// of the ReLU'd cosines, so the aggregate is Σ cᵢ·zᵢ; all zero when no cosine is positive (or
/// the root update is zero). A zero update gets weight 0.
pub fn fltrust_coefficients(root: &[f64], v: &[&[f64]]) -> Vec<f64> {
    let n0 = norm(root);
    let ts: Vec<(f64, f64)> = v
        .iter()
        .map(|z| {
            let nz = norm(z);
            if nz == 0.0 || n0 == 0.0 || !nz.is_finite() {
                return (0.0, nz);
            }
            let cos = root.iter().zip(*z).map(|(a, b)| a * b).sum::<f64>() / (n0 * nz);
            (cos.max(0.0), nz)
        })
        .collect();
    let total: f64 = ts.iter().map(|t| t.0).sum();
    if total <= 0.0 || !total.is_finite() {
        return vec![0.0; v.len()];
    }
    ts.iter().map(|&(w, nz)| if w == 0.0 { 0.0 } else { w * n0 / nz / total }).collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    fn refs(v: &[Vec<f64>]) -> Vec<&[f64]> {
        v.iter().map(Vec::as_slice).collect()
    }

    #[test]
    fn diversefl_accepts_aligned_updates_of_similar_size_only() {
        let eps = Thresholds::default();
        let guide = [1.0, 2.0, 2.0]; // ‖·‖ = 3
        let s = diversefl_test(&guide, &[1.0, 2.0, 2.0]);
        assert_eq!(s, Similarity { c1: 1.0, c2: 1.0 });
        assert!(eps.accept(s));
        // sign flip: C₁ = −1
        let s = diversefl_test(&guide, &[-1.0, -2.0, -2.0]);
        assert_eq!(s.c1, -1.0);
        assert!(!eps.accept(s));
        // same direction, 10× larger: C₂ = 10 ≥ ε₃
        let s = diversefl_test(&guide, &[10.0, 20.0, 20.0]);
        assert_eq!((s.c1, s.c2), (1.0, 10.0));
        assert!(!eps.accept(s));
        // a third of the size: C₂ = 1/3 ≤ ε₂
        assert!(!eps.accept(diversefl_test(&guide, &[1.0 / 3.0, 2.0 / 3.0, 2.0 / 3.0])));
        // orthogonal: C₁ = 0, not > 0
        assert!(!eps.accept(diversefl_test(&guide, &[2.0, -1.0, 0.0])));
        // ‖z‖ = 6 / ‖Δ̃‖ = 3 = 2: not < ε₃ (strict)
        assert!(!eps.accept(diversefl_test(&guide, &[2.0, 4.0, 4.0])));
        assert!(eps.accept(diversefl_test(&guide, &[1.9, 3.9, 3.8])));
    }

    #[test]
    fn the_median_is_per_coordinate_and_averages_the_middle_pair() {
        let v = vec![vec![1.0, 10.0], vec![5.0, -3.0], vec![3.0, 100.0]];
        assert_eq!(coordinate_median(&refs(&v)), vec![3.0, 10.0]);
        let v = vec![vec![1.0], vec![4.0], vec![2.0], vec![100.0]];
        assert_eq!(coordinate_median(&refs(&v)), vec![3.0]);
    }

    #[test]
    fn krum_scores_sum_the_nearest_squared_distances() {
        // on a line: 0, 1, 3, 10, 100; f = 1 → K − f − 2 = 2 nearest
        let v: Vec<Vec<f64>> = [0.0, 1.0, 3.0, 10.0, 100.0].iter().map(|&x| vec![x]).collect();
        let s = krum_scores(&refs(&v), 1);
        // 0: 1 + 9; 1: 1 + 4; 3: 4 + 9; 10: 49 + 81; 100: 8100 + 9409
        assert_eq!(s, vec![10.0, 5.0, 13.0, 130.0, 17509.0]);
        assert_eq!(krum(&refs(&v), 1, 1), vec![1]);
        assert_eq!(krum(&refs(&v), 1, 3), vec![1, 0, 2]);
    }

    #[test]
    fn bulyan_selects_by_recursive_krum_then_trims_around_the_median() {
        // K = 7, f = 1 (K ≥ 4f + 3): six honest points near 0 and one far away
        let v: Vec<Vec<f64>> =
            [[0.0, 1.0], [0.1, 1.1], [-0.1, 0.9], [0.2, 1.0], [0.0, 0.8], [0.05, 1.05], [50.0, -50.0]]
                .iter()
                .map(|p| p.to_vec())
                .collect();
        let chosen = bulyan_select(&refs(&v), 1);
        assert_eq!(chosen.len(), 5);
        assert!(!chosen.contains(&6), "the outlier is never chosen: {chosen:?}");
        // the first pick is plain Krum's choice
        assert_eq!(chosen[0], krum(&refs(&v), 1, 1)[0]);
        let sel: Vec<&[f64]> = chosen.iter().map(|&i| v[i].as_slice()).collect();
        let agg = closest_mean(&sel, 3);
        // coordinate-wise by hand: sort the 5 chosen values, take the 3 nearest the median
        for c in 0..2 {
            let mut col: Vec<f64> = sel.iter().map(|z| z[c]).collect();
            col.sort_by(f64::total_cmp);
            let med = col[2];
            col.sort_by(|a, b| (a - med).abs().total_cmp(&(b - med).abs()));
            let want = (col[0] + col[1] + col[2]) / 3.0;
            assert!((agg[c] - want).abs() < 1e-15, "{c}: {} vs {want}", agg[c]);
        }
    }

    #[test]
    fn closest_mean_keeps_the_values_nearest_the_median() {
        let v = vec![vec![0.0], vec![1.0], vec![2.0], vec![3.0], vec![100.0]];
        // median 2; nearest three: 2, 1, 3
        assert_eq!(closest_mean(&refs(&v), 3), vec![2.0]);
        assert_eq!(closest_mean(&refs(&v), 1), vec![2.0]);
    }

    #[test]
    fn resampling_uses_every_update_s_times() {
        let mut rng = Rng::from_key(&[7, 1, 2]);
        let groups = resample_groups(5, 2, &mut rng);
        assert_eq!(groups.len(), 5);
        assert!(groups.iter().all(|g| g.len() == 2));
        let mut count = [0; 5];
        groups.iter().flatten().for_each(|&i| count[i] += 1);
        assert_eq!(count, [2; 5]);
        // seeded: the same key gives the same groups
        assert_eq!(groups, resample_groups(5, 2, &mut Rng::from_key(&[7, 1, 2])));
    }

    #[test]
    fn fltrust_weighs_by_positive_cosine_and_rescales_to_the_root_norm() {
        let root = [3.0, 4.0]; // ‖g₀‖ = 5
        let v = vec![vec![6.0, 8.0], vec![-3.0, -4.0], vec![4.0, 0.0], vec![0.0, 0.0]];
        let c = fltrust_coefficients(&root, &refs(&v));
        // cosines: 1, −1 → 0, 0.6, zero vector → 0; sum 1.6
        let want = [1.0 * 5.0 / 10.0 / 1.6, 0.0, 0.6 * 5.0 / 4.0 / 1.6, 0.0];
        for (a, b) in c.iter().zip(want) {
            assert!((a - b).abs() < 1e-15, "{c:?}");
        }
        // the aggregate: (1·g₀ + 0.6·‖g₀‖·e₁)/1.6
        let agg: Vec<f64> = (0..2).map(|k| c.iter().zip(&v).map(|(w, z)| w * z[k]).sum()).collect();
        assert!((agg[0] - (3.0 + 3.0) / 1.6).abs() < 1e-14 && (agg[1] - 4.0 / 1.6).abs() < 1e-14, "{agg:?}");
        assert_eq!(fltrust_coefficients(&root, &refs(&v[1..2])), vec![0.0]);
    }
}
