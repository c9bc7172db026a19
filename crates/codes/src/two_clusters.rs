//! Coded PageRank's allocations for two-cluster graphs (thesis ch. 2, Theorems 3 and 4,
//! Appendices A and C; note `seed-004-ch2-coded-pagerank.md` §3.3–3.4): the communication load
//! of a shuffle split into sub-shuffles, each the A_C allocation of one cluster's Mappers over a
//! set of servers, with the Reducers of one cluster cut into contiguous parts over the same
//! servers.
//!
//! Loads are normalised as in Theorem 1: L = (values sent)/n², a coded segment (a value's 1/r)
//! counting 1/r, n the whole graph's vertices.
//!
//! # Example: a random bipartite graph with both sides the same size
//!
//! ```
//! use outrun_codes::two_clusters::bipartite;
//! use outrun_codes::Graph;
//!
//! // sides {0, 1} and {2, 3}, K = 4: servers 0 and 1 Map a vertex of side 1 each and Reduce
//! // one of side 2, servers 2 and 3 the reverse; with r = 1 the edges 0–3 and 1–2 need a value
//! // in each direction (4 of 6), 0–2 none
//! let g = Graph::new(4, &[(0, 2), (0, 3), (1, 2)], false);
//! assert_eq!(bipartite(&g, 2, 4, 1).unwrap().coded, 4.0 / 16.0);
//! // with r = 2 both servers of a side Map all of it: nothing to send (Theorem 3: 1 − 2r/K = 0)
//! assert_eq!(bipartite(&g, 2, 4, 2).unwrap().coded, 0.0);
//! ```

use crate::combin::combinations;
use crate::shuffle::Graph;

/// A two-cluster allocation's loads.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct ClusterLoads {
    /// Every value a server needs and does not Map, sent once: values/n².
    pub uncoded: f64,
    /// The coded shuffle: Σ segments/(r·n²) plus the values the scheme sends uncoded, /n².
    pub coded: f64,
}

/// Why an allocation cannot be built.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct ClusterError(pub String);

impl std::fmt::Display for ClusterError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(&self.0)
    }
}

impl std::error::Error for ClusterError {}

/// One sub-shuffle: the Mappers `maps` (vertex ids) cut into C(K′, r) contiguous batches, batch b
/// Mapped by the b-th r-subset of the K′ = `servers.len()` servers; the Reducers `reduces` cut
/// into K′ contiguous parts; a value is an edge from a Mapper to a Reducer. Returns (values sent
/// uncoded, coded segments).
fn sub_shuffle(g: &Graph, maps: &[usize], reduces: &[usize], servers: usize, r: usize) -> (usize, usize) {
    if servers == 0 || maps.is_empty() || reduces.is_empty() {
        return (0, 0);
    }
    let subsets: Vec<Vec<usize>> = combinations(servers, r).collect();
    let c = subsets.len();
    let batch_of = |pos: usize| (0..c).find(|&b| pos < (b + 1) * maps.len() / c).expect("pos < len");
    // the part (server) of each Reducer, by vertex id
    let mut part = vec![usize::MAX; g.vertices()];
    for (pos, &v) in reduces.iter().enumerate() {
        part[v] = pos * servers / reduces.len();
    }
    // z[k][b]: values from batch b to the Reducers of server k
    let mut z = vec![vec![0usize; c]; servers];
    for (pos, &j) in maps.iter().enumerate() {
        let b = batch_of(pos);
        for &i in g.targets(j) {
            if let Some(row) = z.get_mut(part[i as usize]) {
                row[b] += 1;
            }
        }
    }
    let uncoded =
        (0..servers).map(|k| (0..c).filter(|&b| !subsets[b].contains(&k)).map(|b| z[k][b]).sum::<usize>()).sum();
    let mut segments = 0;
    if r < servers {
        for group in combinations(servers, r + 1) {
            for &s in &group {
                segments += group
                    .iter()
                    .filter(|&&k| k != s)
                    .map(|&k| {
                        let rest: Vec<usize> = group.iter().copied().filter(|&x| x != k).collect();
                        z[k][subsets.iter().position(|x| *x == rest).expect("an r-subset")]
                    })
                    .max()
                    .unwrap_or(0);
            }
        }
    }
    (uncoded, segments)
}

fn check(n: usize, n1: usize, servers: usize, r: usize) -> Result<(), ClusterError> {
    if n1 == 0 || n1 >= n {
        return Err(ClusterError(format!("cluster 1 has {n1} of {n} vertices: each cluster needs one")));
    }
    if r == 0 || servers == 0 {
        return Err(ClusterError(format!("r = {r} and K = {servers} must be at least 1")));
    }
    Ok(())
}

/// Theorem 4's scheme (Appendix C) for a stochastic block model on `0..n1` and `n1..n`: A_C on
/// each cluster over all K servers, each cluster's Reducers cut into K parts, the four
/// (Mapper cluster → Reducer cluster) shuffles coded separately.
pub fn sbm(g: &Graph, n1: usize, servers: usize, r: usize) -> Result<ClusterLoads, ClusterError> {
    let n = g.vertices();
    check(n, n1, servers, r)?;
    if r > servers {
        return Err(ClusterError(format!("r = {r} exceeds K = {servers}")));
    }
    let v1: Vec<usize> = (0..n1).collect();
    let v2: Vec<usize> = (n1..n).collect();
    let (mut unc, mut seg) = (0, 0);
    for (m, red) in [(&v1, &v1), (&v1, &v2), (&v2, &v1), (&v2, &v2)] {
        let (u, s) = sub_shuffle(g, m, red, servers, r);
        unc += u;
        seg += s;
    }
    let nn = (n * n) as f64;
    Ok(ClusterLoads { uncoded: unc as f64 / nn, coded: seg as f64 / (r as f64 * nn) })
}

/// Theorem 3's scheme (Appendix A) for a random bipartite graph on `0..n1` and `n1..n` with
/// n1 ≥ n2: K1 = n1·K/n servers Map V1 (A_C at load r) and Reduce all of V2; the other K2 Map V2
/// and Reduce n2 of V1; the other n1 − n2 V1 Reducers sit on the K1 servers and are served
/// uncoded. Needs n1·K/n to be an integer and r ≤ K2.
pub fn bipartite(g: &Graph, n1: usize, servers: usize, r: usize) -> Result<ClusterLoads, ClusterError> {
    let n = g.vertices();
    check(n, n1, servers, r)?;
    let n2 = n - n1;
    if n1 < n2 {
        return Err(ClusterError(format!("cluster 1 ({n1}) must be the larger ({n2})")));
    }
    if !(n1 * servers).is_multiple_of(n) {
        return Err(ClusterError(format!("K1 = n1·K/n = {n1}·{servers}/{n} is not an integer")));
    }
    let k1 = n1 * servers / n;
    let k2 = servers - k1;
    if r > k2 {
        return Err(ClusterError(format!("r = {r} exceeds K2 = {k2}")));
    }
    let v1: Vec<usize> = (0..n1).collect();
    let v2: Vec<usize> = (n1..n).collect();
    // (I) V1's Mappers on the K1 servers, V2's Reducers over them
    let (u1, s1) = sub_shuffle(g, &v1, &v2, k1, r);
    // (II) V2's Mappers on the K2 servers, n2 of V1's Reducers over them
    let (u2, s2) = sub_shuffle(g, &v2, &v1[..n2], k2, r);
    // (III) the other V1 Reducers: no K1 server Maps V2, every value sent uncoded
    let extra: usize =
        v2.iter().map(|&j| g.targets(j).iter().filter(|&&i| (i as usize) >= n2 && (i as usize) < n1).count()).sum();
    let nn = (n * n) as f64;
    Ok(ClusterLoads {
        uncoded: (u1 + u2 + extra) as f64 / nn,
        coded: s1 as f64 / (r as f64 * nn) + s2 as f64 / (r as f64 * nn) + extra as f64 / nn,
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::shuffle::{loads, Allocation, ReducePolicy};
    use crate::Rng;

    fn random(n: usize, p: impl Fn(usize, usize) -> f64, seed: u64) -> Graph {
        let mut rng = Rng::from_key(&[seed, 77]);
        let mut e = vec![];
        for i in 0..n {
            for j in i + 1..n {
                if rng.uniform() < p(i, j) {
                    e.push((i as u32, j as u32));
                }
            }
        }
        Graph::new(n, &e, false)
    }

    /// One sub-shuffle over the whole graph is A_C itself: the same values and segments as the
    /// shuffle's own `loads` (contiguous Reducers).
    #[test]
    fn one_sub_shuffle_is_a_c() {
        let g = random(120, |_, _| 0.1, 1);
        let all: Vec<usize> = (0..120).collect();
        for r in 1..=4 {
            let a = Allocation::new(120, 5, r, ReducePolicy::Contiguous).unwrap();
            let l = loads(&g, &a);
            assert_eq!(sub_shuffle(&g, &all, &all, 5, r), (l.uncoded, l.segments), "r = {r}");
        }
    }

    /// The uncoded loads are the edges' share that crosses servers: every server Maps r/K of
    /// each cluster, so exactly (1 − r/K) of the values (both directions) when K divides the
    /// batches evenly; the coded load is at most the uncoded one and at least its 1/r.
    #[test]
    fn loads_are_between_uncoded_and_its_rth() {
        let g = random(300, |i, j| if (i < 150) == (j < 150) { 0.1 } else { 0.02 }, 2);
        let values: usize = (0..300).map(|j| g.targets(j).len()).sum();
        for r in 1..=4 {
            let l = sbm(&g, 150, 5, r).unwrap();
            assert!(l.coded <= l.uncoded + 1e-12 && l.coded * r as f64 >= l.uncoded - 1e-12, "r = {r}: {l:?}");
            let expect = values as f64 * (1.0 - r as f64 / 5.0) / 90_000.0;
            assert!((l.uncoded / expect - 1.0).abs() < 0.05, "r = {r}: {} vs {expect}", l.uncoded);
        }
        assert_eq!(sbm(&g, 150, 5, 5).unwrap().coded, 0.0);
        let b = random(300, |i, j| if (i < 200) == (j < 200) { 0.0 } else { 0.1 }, 3);
        assert!(bipartite(&b, 200, 6, 2).is_ok());
        assert!(bipartite(&b, 200, 6, 3).unwrap_err().0.contains("K2 = 2"));
        assert!(bipartite(&b, 200, 5, 1).unwrap_err().0.contains("not an integer"));
        assert!(bipartite(&b, 100, 6, 1).unwrap_err().0.contains("larger"));
    }
}
