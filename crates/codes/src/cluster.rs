//! Clustered gradient coding (Buyukates, Ozfatura, Ulukus, Gündüz, "Gradient coding with dynamic
//! clustering"; engineering note `seed-002-gcdc.md`).
//!
//! K workers form P clusters of ℓ = K/P; cluster p runs its own ℓ-worker gradient code over
//! data block p. In GC-SC the partition is fixed; in GC-DC every worker stores the blocks of n
//! clusters ([`ClusterMatrix`]: the nℓ × P matrix A_cluster built from random circular shifts)
//! and the master re-forms the partition every iteration from the straggler states it believes
//! ([`dynamic_clustering`]: the note's canonical reading of Algorithm 1, with the ⌈|G|/P⌉-round
//! cap and an augmenting-path fallback where Lemma 1's single swap does not exist).
//!
//! Workers and clusters are 0-based here (the note prints them 1-based).

use std::collections::VecDeque;

use crate::Rng;

/// Why a cluster matrix cannot be built.
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
pub enum ClusterError {
    /// K is not a multiple of P.
    #[error("{workers} workers cannot form {clusters} clusters of equal size (K mod P must be 0)")]
    Uneven {
        /// K.
        workers: usize,
        /// P.
        clusters: usize,
    },
    /// n outside 1..=P.
    #[error("n = {n} clusters per worker must be in 1..={clusters} (the number of clusters)")]
    Replication {
        /// n.
        n: usize,
        /// P.
        clusters: usize,
    },
    /// Shifts of the wrong shape or repeated within a group.
    #[error("shifts: {0}")]
    Shifts(String),
}

/// A_cluster: row j·ℓ + g holds worker group g (workers gP .. gP + P − 1) under its j-th right
/// circular shift, so column p lists the nℓ workers eligible for cluster p, every worker is
/// eligible for exactly n clusters, and the first ℓ rows are a partition (GC-SC's).
#[derive(Clone, Debug, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
pub struct ClusterMatrix {
    /// K.
    pub workers: usize,
    /// P.
    pub clusters: usize,
    /// n: clusters each worker can serve.
    pub n: usize,
    /// The nℓ rows of P workers each.
    pub rows: Vec<Vec<usize>>,
}

impl ClusterMatrix {
    /// From explicit shifts: `shifts[g]` holds group g's n distinct shifts in `0..P`.
    pub fn from_shifts(workers: usize, clusters: usize, n: usize, shifts: &[Vec<usize>]) -> Result<Self, ClusterError> {
        check(workers, clusters, n)?;
        let ell = workers / clusters;
        if shifts.len() != ell || shifts.iter().any(|s| s.len() != n) {
            return Err(ClusterError::Shifts(format!("need {ell} groups of {n} shifts")));
        }
        for (g, s) in shifts.iter().enumerate() {
            let mut v = s.clone();
            v.sort_unstable();
            v.dedup();
            if v.len() != n || v.iter().any(|&x| x >= clusters) {
                return Err(ClusterError::Shifts(format!(
                    "group {g}: {s:?} must be {n} distinct values below {clusters}"
                )));
            }
        }
        let p = clusters;
        let rows = (0..n)
            .flat_map(|j| (0..ell).map(move |g| (j, g)))
            .map(|(j, g)| (0..p).map(|c| g * p + (c + p - shifts[g][j]) % p).collect())
            .collect();
        Ok(ClusterMatrix { workers, clusters, n, rows })
    }

    /// With shifts drawn uniformly without replacement from `rng` (n per group).
    pub fn random(workers: usize, clusters: usize, n: usize, rng: &mut Rng) -> Result<Self, ClusterError> {
        check(workers, clusters, n)?;
        let shifts: Vec<Vec<usize>> =
            (0..workers / clusters).map(|_| rng.permutation(clusters)[..n].to_vec()).collect();
        Self::from_shifts(workers, clusters, n, &shifts)
    }

    /// ℓ = K / P, the size of a cluster.
    pub fn ell(&self) -> usize {
        self.workers / self.clusters
    }

    /// Workers eligible for cluster `p`, ascending.
    pub fn column(&self, p: usize) -> Vec<usize> {
        let mut c: Vec<usize> = self.rows.iter().map(|r| r[p]).collect();
        c.sort_unstable();
        c
    }

    /// Clusters worker `w` can serve, ascending (its n blocks).
    pub fn eligible(&self, w: usize) -> Vec<usize> {
        let mut e: Vec<usize> = (0..self.clusters).filter(|&p| self.rows.iter().any(|r| r[p] == w)).collect();
        e.dedup();
        e
    }

    /// The static partition of GC-SC: the first ℓ rows.
    pub fn static_partition(&self) -> Partition {
        Partition { clusters: (0..self.clusters).map(|p| (0..self.ell()).map(|g| self.rows[g][p]).collect()).collect() }
    }

    /// Lemma 1's condition n > P(K − 1)/(2K), under which one swap always resolves a conflict.
    pub fn lemma1(&self) -> bool {
        2 * self.n * self.workers > self.clusters * (self.workers - 1)
    }
}

fn check(workers: usize, clusters: usize, n: usize) -> Result<(), ClusterError> {
    if clusters == 0 || workers == 0 || !workers.is_multiple_of(clusters) {
        return Err(ClusterError::Uneven { workers, clusters });
    }
    if n == 0 || n > clusters {
        return Err(ClusterError::Replication { n, clusters });
    }
    Ok(())
}

/// P clusters of ℓ workers each. A worker's codeword position in its cluster is its rank among
/// the members by id ([`Partition::position`]): any bijection is correct, this one is canonical.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Partition {
    /// Members of each cluster, in placement order.
    pub clusters: Vec<Vec<usize>>,
}

impl Partition {
    /// (cluster, position) of every worker, indexed by worker.
    pub fn positions(&self, workers: usize) -> Vec<(usize, usize)> {
        let mut out = vec![(usize::MAX, usize::MAX); workers];
        for (p, members) in self.clusters.iter().enumerate() {
            let mut sorted = members.clone();
            sorted.sort_unstable();
            for (i, &w) in sorted.iter().enumerate() {
                out[w] = (p, i);
            }
        }
        out
    }

    /// (cluster, position) of worker `w`.
    pub fn position(&self, w: usize) -> Option<(usize, usize)> {
        let p = self.clusters.iter().position(|c| c.contains(&w))?;
        let mut sorted = self.clusters[p].clone();
        sorted.sort_unstable();
        Some((p, sorted.iter().position(|&x| x == w).expect("member")))
    }

    /// The clusters as sorted sets.
    pub fn sets(&self) -> Vec<Vec<usize>> {
        self.clusters
            .iter()
            .map(|c| {
                let mut s = c.clone();
                s.sort_unstable();
                s
            })
            .collect()
    }

    /// The note's invariants (§6.6): every worker exactly once, every cluster ℓ members, every
    /// member eligible for its cluster.
    pub fn validate(&self, m: &ClusterMatrix) -> Result<(), String> {
        let mut seen = vec![false; m.workers];
        if self.clusters.len() != m.clusters {
            return Err(format!("{} clusters, expected {}", self.clusters.len(), m.clusters));
        }
        for (p, c) in self.clusters.iter().enumerate() {
            if c.len() != m.ell() {
                return Err(format!("cluster {p} has {} members, expected {}", c.len(), m.ell()));
            }
            for &w in c {
                if w >= m.workers || seen[w] {
                    return Err(format!("worker {w} placed twice or unknown"));
                }
                seen[w] = true;
                if !m.rows.iter().any(|r| r[p] == w) {
                    return Err(format!("worker {w} is not eligible for cluster {p}"));
                }
            }
        }
        Ok(())
    }

    /// Stragglers per cluster.
    pub fn straggler_counts(&self, straggler: &[bool]) -> Vec<usize> {
        self.clusters.iter().map(|c| c.iter().filter(|&&w| straggler[w]).count()).collect()
    }
}

/// The outcome of [`dynamic_clustering`].
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Clustering {
    /// The partition.
    pub partition: Partition,
    /// Phase II single swaps made.
    pub swaps: usize,
    /// Conflicts that needed the augmenting-path fallback (possible only without Lemma 1).
    pub fallbacks: usize,
}

/// Algorithm 1 (canonical reading, note §2.4): place the larger of the believed non-stragglers
/// and stragglers first (ties: non-stragglers), each group round-robin over the clusters in
/// increasing order of the group's availability in their columns, at most ⌈|G|/P⌉ rounds
/// (`capped`; otherwise until the group is placed or no cluster can take a worker), each cluster
/// taking the first unplaced worker of the group in its column order; then resolve leftovers:
/// directly into an open eligible cluster, else by one swap with a member of one of the
/// worker's clusters that is eligible for the open cluster, else by an augmenting path.
///
/// `straggler[w]`: believed state. `rate`: when given, columns are ordered by believed rate,
/// fastest first (heterogeneous workers), otherwise by index.
pub fn dynamic_clustering(m: &ClusterMatrix, straggler: &[bool], rate: Option<&[f64]>, capped: bool) -> Clustering {
    let (k, p, ell) = (m.workers, m.clusters, m.ell());
    let mut cols: Vec<Vec<usize>> = (0..p).map(|c| m.column(c)).collect();
    if let Some(rate) = rate {
        for c in &mut cols {
            c.sort_by(|&a, &b| rate[b].total_cmp(&rate[a]).then(a.cmp(&b)));
        }
    }
    let elig: Vec<Vec<usize>> = (0..k).map(|w| m.eligible(w)).collect();
    let slow: Vec<usize> = (0..k).filter(|&w| straggler[w]).collect();
    let fast: Vec<usize> = (0..k).filter(|&w| !straggler[w]).collect();
    let groups = if fast.len() >= slow.len() { [fast, slow] } else { [slow, fast] };
    let mut clusters: Vec<Vec<usize>> = vec![vec![]; p];
    let mut placed = vec![false; k];
    for g in &groups {
        let mut in_group = vec![false; k];
        g.iter().for_each(|&w| in_group[w] = true);
        let avail: Vec<usize> = cols.iter().map(|c| c.iter().filter(|&&w| in_group[w]).count()).collect();
        let mut order: Vec<usize> = (0..p).collect();
        order.sort_by_key(|&c| (avail[c], c));
        let max_turns = if capped { g.len().div_ceil(p) * p } else { usize::MAX };
        let mut remaining = g.len();
        let mut turn = 0;
        let mut idle = 0; // consecutive turns that placed nobody (uncapped: stop after a full lap)
        while remaining > 0 && turn < max_turns && idle < p {
            let c = order[turn % p];
            let mut took = false;
            if clusters[c].len() < ell {
                if let Some(&w) = cols[c].iter().find(|&&w| in_group[w] && !placed[w]) {
                    clusters[c].push(w);
                    placed[w] = true;
                    remaining -= 1;
                    took = true;
                }
            }
            idle = if took { 0 } else { idle + 1 };
            turn += 1;
        }
    }
    let first = &groups[0];
    let key = |w: usize| -> (usize, f64, usize) {
        let r = rate.map_or(0.0, |r| -r[w]);
        (usize::from(!first.contains(&w)), r, w)
    };
    let mut left: Vec<usize> = (0..k).filter(|&w| !placed[w]).collect();
    left.sort_by(|&a, &b| {
        let (x, y) = (key(a), key(b));
        x.0.cmp(&y.0).then(x.1.total_cmp(&y.1)).then(x.2.cmp(&y.2))
    });
    let (mut swaps, mut fallbacks) = (0, 0);
    for w in left {
        let open: Vec<usize> = (0..p).filter(|&c| clusters[c].len() < ell).collect();
        if let Some(&c) = open.iter().find(|c| elig[w].contains(c)) {
            clusters[c].push(w);
            continue;
        }
        let target = open[0];
        let swap = elig[w]
            .iter()
            .find_map(|&pb| clusters[pb].iter().position(|&kb| elig[kb].contains(&target)).map(|i| (pb, i)));
        if let Some((pb, i)) = swap {
            let kb = clusters[pb].remove(i);
            clusters[pb].push(w);
            clusters[target].push(kb);
            swaps += 1;
        } else {
            augment(&mut clusters, &elig, w, ell);
            fallbacks += 1;
        }
    }
    let partition = Partition { clusters };
    debug_assert_eq!(partition.validate(m), Ok(()));
    Clustering { partition, swaps, fallbacks }
}

/// Breadth-first augmenting path cluster → member → another cluster of that member, until a
/// cluster with a free slot; moves the members along it and places `w`. A path always exists:
/// every column has nℓ ≥ ℓ eligible workers and the open slots are exactly the unplaced ones.
fn augment(clusters: &mut [Vec<usize>], elig: &[Vec<usize>], w: usize, ell: usize) {
    let p = clusters.len();
    let mut prev: Vec<Option<(Option<usize>, usize)>> = vec![None; p];
    let mut queue = VecDeque::new();
    for &c in &elig[w] {
        prev[c] = Some((None, w));
        queue.push_back(c);
    }
    while let Some(c) = queue.pop_front() {
        if clusters[c].len() < ell {
            let mut cur = c;
            loop {
                let (from, mover) = prev[cur].expect("on the path");
                if let Some(f) = from {
                    clusters[f].retain(|&x| x != mover);
                }
                clusters[cur].push(mover);
                match from {
                    None => return,
                    Some(f) => cur = f,
                }
            }
        }
        for &m in &clusters[c] {
            for &q in &elig[m] {
                if prev[q].is_none() {
                    prev[q] = Some((Some(c), m));
                    queue.push_back(q);
                }
            }
        }
    }
    unreachable!("a valid partition always exists: every worker can be placed");
}

#[cfg(test)]
mod tests {
    use super::*;

    /// 1-based worker sets → 0-based.
    fn zb(v: &[usize]) -> Vec<usize> {
        v.iter().map(|x| x - 1).collect()
    }

    fn example() -> ClusterMatrix {
        ClusterMatrix::from_shifts(12, 4, 2, &[vec![0, 1], vec![3, 2], vec![0, 3]]).unwrap()
    }

    /// 1-based S with S = 0 for a straggler (the paper's polarity) → is_straggler.
    fn states(s: &[u8]) -> Vec<bool> {
        s.iter().map(|&x| x == 0).collect()
    }

    /// Note §3.1 (test 1): the rows of eq. 13, the sorted columns of eq. 18, eligibility.
    #[test]
    fn cluster_matrix_of_the_worked_example() {
        let m = example();
        let rows: Vec<Vec<usize>> =
            [[1, 2, 3, 4], [6, 7, 8, 5], [9, 10, 11, 12], [4, 1, 2, 3], [7, 8, 5, 6], [10, 11, 12, 9]]
                .iter()
                .map(|r| zb(r))
                .collect();
        assert_eq!(m.rows, rows);
        assert_eq!(m.column(0), zb(&[1, 4, 6, 7, 9, 10]));
        assert_eq!(m.column(1), zb(&[1, 2, 7, 8, 10, 11]));
        assert_eq!(m.column(2), zb(&[2, 3, 5, 8, 11, 12]));
        assert_eq!(m.column(3), zb(&[3, 4, 5, 6, 9, 12]));
        for (ws, cl) in [(&[1, 7, 10], [0, 1]), (&[2, 8, 11], [1, 2]), (&[3, 5, 12], [2, 3]), (&[4, 6, 9], [0, 3])] {
            for &w in ws {
                assert_eq!(m.eligible(w - 1), cl.to_vec());
            }
        }
        // eq. 5: the static partition, and positions as in eq. 7 (w5 computes c_{4,2})
        let st = m.static_partition();
        assert_eq!(st.sets(), vec![zb(&[1, 6, 9]), zb(&[2, 7, 10]), zb(&[3, 8, 11]), zb(&[4, 5, 12])]);
        assert_eq!(st.position(4), Some((3, 1)));
        assert_eq!(st.position(8), Some((0, 2)));
        assert!(m.lemma1());
        assert!(!ClusterMatrix::from_shifts(20, 5, 2, &vec![vec![0, 1]; 4]).unwrap().lemma1());
        assert!(ClusterMatrix::from_shifts(20, 5, 3, &vec![vec![0, 1, 2]; 4]).unwrap().lemma1());
    }

    /// Test 2: structure for random shifts.
    #[test]
    fn random_cluster_matrices_have_the_structure() {
        for (k, p, n) in [(12, 4, 2), (20, 5, 3), (24, 6, 3), (12, 4, 1), (12, 4, 4)] {
            for seed in 0..200u64 {
                let m = ClusterMatrix::random(k, p, n, &mut Rng::from_key(&[seed])).unwrap();
                for w in 0..k {
                    assert_eq!(m.eligible(w).len(), n);
                }
                for c in 0..p {
                    let mut col = m.column(c);
                    col.dedup();
                    assert_eq!(col.len(), n * (k / p));
                }
                m.static_partition().validate(&m).unwrap();
            }
        }
        assert!(matches!(ClusterMatrix::random(10, 4, 1, &mut Rng::from_key(&[1])), Err(ClusterError::Uneven { .. })));
        assert!(matches!(
            ClusterMatrix::random(12, 4, 5, &mut Rng::from_key(&[1])),
            Err(ClusterError::Replication { .. })
        ));
    }

    /// Test 6 (note §3.2): one straggler per cluster, no conflict.
    #[test]
    fn greedy_fixes_the_static_failure() {
        let m = example();
        let s = states(&[1, 1, 0, 1, 1, 1, 1, 0, 0, 1, 0, 1]);
        assert_eq!(m.static_partition().straggler_counts(&s), vec![1, 0, 3, 0], "cluster 3 has no non-straggler");
        let c = dynamic_clustering(&m, &s, None, true);
        assert_eq!(c.partition.sets(), vec![zb(&[6, 9, 10]), zb(&[1, 7, 8]), zb(&[2, 5, 11]), zb(&[3, 4, 12])]);
        assert_eq!(c.partition.straggler_counts(&s), vec![1, 1, 1, 1]);
        assert_eq!((c.swaps, c.fallbacks), (0, 0));
    }

    /// Test 7 (note §3.4, the paper's Fig. 2): exactly one swap (w12 ↔ w4); counts [1,2,1,1];
    /// uncapped: [1,2,0,2].
    #[test]
    fn greedy_reproduces_the_papers_algorithm_example() {
        let m = example();
        let s = states(&[1, 1, 0, 1, 0, 0, 0, 0, 1, 1, 1, 1]);
        let c = dynamic_clustering(&m, &s, None, true);
        assert_eq!(c.partition.sets(), vec![zb(&[1, 4, 6]), zb(&[7, 8, 10]), zb(&[2, 3, 11]), zb(&[5, 9, 12])]);
        assert_eq!(c.partition.straggler_counts(&s), vec![1, 2, 1, 1]);
        assert_eq!((c.swaps, c.fallbacks), (1, 0));
        let u = dynamic_clustering(&m, &s, None, false);
        assert_eq!(u.partition.sets(), vec![zb(&[1, 4, 6]), zb(&[7, 8, 10]), zb(&[2, 11, 12]), zb(&[3, 5, 9])]);
        assert_eq!(u.partition.straggler_counts(&s), vec![1, 2, 0, 2]);
    }

    /// Tests 8 and 9: valid partitions for random matrices and states; the fallback fires only
    /// without Lemma 1 (about 5% of draws for (20, 5, 2)); n = 1 gives the static partition.
    #[test]
    fn greedy_invariants_and_fallback_rate() {
        for (k, p, n, trials) in
            [(12, 4, 2, 3000), (20, 5, 3, 3000), (24, 6, 3, 2000), (12, 4, 1, 1000), (12, 4, 4, 1000), (20, 5, 2, 8000)]
        {
            let mut fallbacks = 0;
            for t in 0..trials as u64 {
                let mut rng = Rng::from_key(&[7, k as u64, n as u64, t]);
                let m = ClusterMatrix::random(k, p, n, &mut rng).unwrap();
                let count = rng.below(k + 1);
                let slow = rng.choose(k, count);
                let s: Vec<bool> = (0..k).map(|w| slow.contains(&w)).collect();
                let rate: Vec<f64> = (0..k).map(|_| rng.uniform()).collect();
                for (capped, r) in [(true, None), (false, None), (true, Some(&rate[..]))] {
                    let c = dynamic_clustering(&m, &s, r, capped);
                    c.partition.validate(&m).unwrap();
                    if m.lemma1() {
                        assert_eq!(c.fallbacks, 0, "({k},{p},{n}) trial {t}");
                    }
                    if n == 1 {
                        assert_eq!(c.partition.sets(), m.static_partition().sets());
                    }
                    if capped && r.is_none() {
                        fallbacks += usize::from(c.fallbacks > 0);
                    }
                }
            }
            if (k, n) == (20, 2) {
                let rate = fallbacks as f64 / trials as f64;
                assert!((0.03..=0.07).contains(&rate), "fallback rate {rate}");
            }
        }
    }
}
