//! PageRank graphs: SNAP-style edge lists and seeded generators (Erdős–Rényi, the note's
//! portable `det_er`, Chung–Lu power law, two-block SBM, random bipartite). Every rank streams
//! the edges (generated from the seed, or read from the file) and keeps the out-lists of the
//! vertices it Maps and the in-lists of those it Reduces ([`load_keeping`]).
//!
//! Edge-list rule (documented in `docs/configuration.md`): one edge per line, the first two
//! fields (separated by whitespace or commas) are non-negative integer ids, further fields are
//! ignored, blank lines and lines starting with `#` or `%` are comments; a first line of two
//! words that are not numbers (`source,target`) is a header; a Matrix Market coordinate file's
//! size line is not an edge. Ids are renamed `0..n` in ascending id order (and mapped back in
//! `ranks.txt`); a vertex exists iff it is an endpoint of some edge. Duplicate edges count once
//! (undirected: `a b` and `b a` are the same edge); a self-loop is kept (the vertex sends a share
//! of its rank to itself).

use std::io::BufRead;

use outrun_codes::{det_er_each, domain, Graph, GraphBuilder, Rng};
use outrun_config::{GraphConfig, GraphKind};

use crate::data::DataError;

/// A graph with the ids its vertices had in the file (`ids[v]` is vertex v's id).
#[derive(Clone, Debug)]
pub struct LoadedGraph {
    /// The graph on `0..n` (after the permutation, if any).
    pub graph: Graph,
    /// Original id of each vertex.
    pub ids: Vec<u64>,
}

/// Which vertices' lists a rank keeps: the out-lists of the vertices it Maps, the in-lists of
/// those it Reduces (by the final labels, after `graph.permute`).
pub struct Keep {
    /// Keep v's out-edges.
    pub out: Box<dyn Fn(u32) -> bool>,
    /// Keep v's in-edges.
    pub inn: Box<dyn Fn(u32) -> bool>,
}

/// Every edge line of an edge list, as (a, b) ids, to `edge`; the number of edges. Errors name
/// the file and line.
fn edge_lines(path: &str, mut edge: impl FnMut(u64, u64)) -> Result<usize, DataError> {
    let file = crate::input::open_decompressed(std::path::Path::new(path))
        .map_err(|e| DataError::file(path, format!("cannot open the graph file: {e}")))?;
    let mut count = 0;
    // a Matrix Market file's first line after its header and comments gives its size
    let mut size_line = false;
    let mut first = true;
    for (ln, line) in file.lines().enumerate() {
        let ln = ln + 1;
        let line = line.map_err(|e| DataError::line(path, ln, format!("cannot read: {e}")))?;
        let line = line.trim();
        let lower = if ln == 1 { line.to_ascii_lowercase() } else { String::new() };
        if lower.starts_with("%%matrixmarket") {
            if !lower.split_whitespace().any(|w| w == "coordinate") {
                return Err(DataError::line(
                    path,
                    ln,
                    "a Matrix Market file in the array format: a graph is read from the coordinate format",
                ));
            }
            size_line = true;
            continue;
        }
        if line.is_empty() || line.starts_with('#') || line.starts_with('%') {
            continue;
        }
        if std::mem::take(&mut size_line) {
            continue;
        }
        let mut fields = line.split(|c: char| c.is_whitespace() || c == ',').filter(|f| !f.is_empty());
        if std::mem::take(&mut first) {
            // a header (`source,target`, `from to`): neither of its first two fields is an id
            let mut two = fields.clone();
            if let (Some(a), Some(b)) = (two.next(), two.next()) {
                if !is_number(a) && !is_number(b) {
                    continue;
                }
            }
        }
        let mut id = |what: &str| -> Result<u64, DataError> {
            match fields.next() {
                None => Err(DataError::line(path, ln, format!("one column (`{line}`); an edge needs two vertex ids"))),
                Some(f) => f.parse::<u64>().map_err(|_| {
                    DataError::line(path, ln, format!("the {what} vertex id `{f}` is not a non-negative integer"))
                }),
            }
        };
        let a = id("first")?;
        let b = id("second")?;
        edge(a, b);
        count += 1;
    }
    if count == 0 {
        return Err(DataError::file(path, "no edges (an edge list has one `a b` pair of vertex ids per line)"));
    }
    Ok(count)
}

/// A number that is not an id (`-1`, `1.5`): refused as such, never taken for a header.
fn is_number(f: &str) -> bool {
    f.parse::<f64>().is_ok()
}

/// Read an edge list, whole. Errors name the file and line.
pub fn read_edge_list(path: &str, directed: bool) -> Result<LoadedGraph, DataError> {
    let g = GraphConfig { path: Some(path.into()), directed, ..Default::default() };
    load(&g, 0)
}

/// Candidates skipped before the next hit where each is one with probability p, from one
/// uniform: Geometric(p) on {0, 1, …}, as a float (it may exceed any length). `log_q` is
/// ln(1 − p), p < 1, by libm, as is the logarithm here, so a seed gives the same graph on
/// every host.
fn geometric_gap(log_q: f64, rng: &mut Rng) -> f64 {
    (libm::log(1.0 - rng.uniform()) / log_q).floor()
}

/// Each of the candidates `0..len`, independently with probability `p`, to `hit` in order:
/// the gaps between hits are geometric, so it draws one uniform per hit and one more at the
/// run's end, not one per candidate. None is drawn where p ≤ 0; every candidate where p ≥ 1.
fn bernoulli_run(len: usize, p: f64, rng: &mut Rng, hit: &mut dyn FnMut(usize)) {
    if p <= 0.0 {
        return;
    }
    let log_q = libm::log1p(-p);
    let mut at = 0;
    while at < len {
        let skip = if p >= 1.0 { 0.0 } else { geometric_gap(log_q, rng) };
        if skip >= (len - at) as f64 {
            return;
        }
        at += skip as usize;
        hit(at);
        at += 1;
    }
}

/// The undirected edges {i, j} of a graph of two blocks, `0..n1` and `n1..n`: each pair
/// inside a block with probability `inside`, across with `across`, independently, to `edge`
/// in (i, j) order, i < j (i ≤ j with self-loops, each with `inside`). Each row is at most
/// two runs of one probability, sampled by [`bernoulli_run`]: O(n + edges) draws, not the
/// n²/2 of one a pair (SBM(10⁶) with p = 10⁻⁵: 3·10⁶ draws instead of 5·10¹¹).
fn two_blocks(
    n: usize,
    n1: usize,
    self_loops: bool,
    inside: f64,
    across: f64,
    rng: &mut Rng,
    edge: &mut dyn FnMut(u32, u32),
) {
    // the config refuses n1 outside 1..n; a caller that builds its own must keep n1 ≤ n
    assert!(n1 <= n, "two blocks of {n} vertices cannot have a first block of {n1}");
    for i in 0..n {
        let start = if self_loops { i } else { i + 1 };
        // the rest of i's own block, then (from the first block) the whole second block
        let block_end = if i < n1 { n1 } else { n };
        if start < block_end {
            bernoulli_run(block_end - start, inside, rng, &mut |k| edge(i as u32, (start + k) as u32));
        }
        if i < n1 {
            bernoulli_run(n - n1, across, rng, &mut |k| edge(i as u32, (n1 + k) as u32));
        }
    }
}

/// The undirected edges of the Chung–Lu graph with expected degrees `d` (total Σd): each pair
/// {i, j} with probability min(1, d_i d_j / Σd), independently (i ≤ j with self-loops), to
/// `edge` as (min, max). Miller and Hagberg's sampler (2011): with the vertices in descending
/// weight, a row's probabilities never grow, so it skips geometrically by the last
/// probability and keeps a candidate with the ratio of its own to it (thinning): O(n + edges)
/// draws after an O(n log n) sort, not one draw per pair.
fn chung_lu(d: &[f64], self_loops: bool, rng: &mut Rng, edge: &mut dyn FnMut(u32, u32)) {
    let n = d.len();
    let total: f64 = d.iter().sum();
    if total <= 0.0 {
        return;
    }
    let mut order: Vec<usize> = (0..n).collect();
    // descending weight, ties by index: the same order on every host
    order.sort_by(|&a, &b| d[b].total_cmp(&d[a]).then(a.cmp(&b)));
    let prob = |a: usize, b: usize| (d[order[a]] * d[order[b]] / total).min(1.0);
    for a in 0..n {
        let mut b = if self_loops { a } else { a + 1 };
        if b >= n {
            break;
        }
        let mut p = prob(a, b);
        while p > 0.0 {
            if p < 1.0 {
                let skip = geometric_gap(libm::log1p(-p), rng);
                if skip >= (n - b) as f64 {
                    break;
                }
                b += skip as usize;
            }
            let q = prob(a, b);
            if rng.uniform() < q / p {
                let (u, v) = (order[a], order[b]);
                edge(u.min(v) as u32, u.max(v) as u32);
            }
            p = q;
            b += 1;
            if b >= n {
                break;
            }
        }
    }
}

/// The undirected edges of ER(n, p): each pair {i, j}, i < j (i ≤ j with self-loops),
/// independently with probability `p`, to `edge` in (i, j) order. The gaps between edges are
/// geometric, so it draws one uniform per edge (Batagelj and Brandes 2005) instead of one per
/// pair: ER(90 090, 0.01) takes 4·10⁷ draws instead of 4·10⁹.
fn er_pairs(n: usize, self_loops: bool, p: f64, rng: &mut Rng, edge: &mut dyn FnMut(u32, u32)) {
    if p <= 0.0 || n == 0 {
        return;
    }
    let first = |i: usize| if self_loops { i } else { i + 1 };
    let log_q = libm::log1p(-p);
    // the next candidate pair
    let (mut i, mut j) = (0, first(0));
    loop {
        // pairs skipped before the next edge
        let mut skip = if p >= 1.0 { 0.0 } else { geometric_gap(log_q, rng) };
        while skip >= (n - j) as f64 {
            skip -= (n - j) as f64;
            i += 1;
            if i >= n {
                return;
            }
            j = first(i);
        }
        j += skip as usize;
        edge(i as u32, j as u32);
        j += 1;
    }
}

/// The vertices' ids: a file's in ascending order (one pass, every line checked), or 0..n.
fn vertex_ids(g: &GraphConfig) -> Result<Vec<u64>, DataError> {
    let Some(path) = &g.path else { return Ok((0..g.n.expect("validated") as u64).collect()) };
    let mut seen = std::collections::HashSet::new();
    edge_lines(path, |a, b| {
        seen.insert(a);
        seen.insert(b);
    })?;
    let mut ids: Vec<u64> = seen.into_iter().collect();
    ids.sort_unstable();
    if ids.len() > u32::MAX as usize {
        return Err(DataError::file(path, format!("{} vertices; at most {}", ids.len(), u32::MAX)));
    }
    Ok(ids)
}

/// The number of vertices of the configured graph, a file checked line by line on the way
/// (what a plan needs: no edge is kept).
pub fn vertices(g: &GraphConfig) -> Result<usize, DataError> {
    vertex_ids(g).map(|ids| ids.len())
}

/// The configured graph, whole: the file, or the generator's from `seed` (`graph.seed`
/// overrides it), relabelled by a seeded permutation with `graph.permute`.
pub fn load(g: &GraphConfig, seed: u64) -> Result<LoadedGraph, DataError> {
    load_keeping(g, seed, None)
}

/// [`load`], keeping only the lists `keep` asks for (all without it): the edges stream past
/// and a rank holds its share of them (a file is read twice: its ids, then its edges).
pub fn load_keeping(g: &GraphConfig, seed: u64, keep: Option<Keep>) -> Result<LoadedGraph, DataError> {
    let seed = g.seed.unwrap_or(seed);
    let ids = vertex_ids(g)?;
    let n = ids.len();
    let perm: Option<Vec<u32>> = g
        .permute
        .then(|| Rng::from_key(&[seed, domain::GRAPH, 1]).permutation(n).into_iter().map(|v| v as u32).collect());
    let label = |v: u32| perm.as_ref().map_or(v, |p| p[v as usize]);
    let directed = g.path.is_some() && g.directed;
    let mut b = match keep {
        Some(k) => GraphBuilder::keeping(n, directed, k.out, k.inn),
        None => GraphBuilder::new(n, directed),
    };
    let mut edge = |a: u32, c: u32| b.add(label(a), label(c));
    match (&g.path, g.kind) {
        (Some(path), _) => {
            // the second pass must see the ids of the first: a file rewritten between them is
            // refused, not indexed wrongly
            let mut unknown = None;
            let index = |x: u64| ids.binary_search(&x).ok().map(|i| i as u32);
            edge_lines(path, |a, c| match (index(a), index(c)) {
                (Some(a), Some(c)) => edge(a, c),
                _ => unknown = Some(if index(a).is_none() { a } else { c }),
            })?;
            if let Some(id) = unknown {
                return Err(DataError::file(
                    path,
                    format!("the file changed while it was read (vertex id {id} was not in it the first time)"),
                ));
            }
        }
        (None, Some(kind)) => generate(g, kind, seed, n, &mut edge),
        (None, None) => unreachable!("validated: a path or a kind"),
    }
    let mut labelled = ids.clone();
    if let Some(p) = &perm {
        ids.iter().enumerate().for_each(|(v, &id)| labelled[p[v] as usize] = id);
    }
    Ok(LoadedGraph { graph: b.finish(), ids: labelled })
}

/// The expected number of adjacency entries (an undirected edge counts both ways, a self-loop
/// once: what `Graph::values` counts) of the generated graph on `n` vertices, from its
/// parameters alone (no edge drawn); None for a file. For a power law it is the expected
/// degrees' sum, n·(γ − 1)/(γ − 2), an upper bound (the probabilities are capped at 1).
pub fn expected_values(g: &GraphConfig, n: usize) -> Option<f64> {
    let kind = g.kind.filter(|_| g.path.is_none())?;
    let n = n as f64;
    let pairs = |a: f64| a * (a - 1.0) / 2.0;
    let loops = |p: f64| if g.self_loops { n * p } else { 0.0 };
    Some(match kind {
        GraphKind::Er | GraphKind::DetEr => {
            let p = g.p.unwrap_or(0.0);
            2.0 * p * pairs(n) + loops(p)
        }
        GraphKind::PowerLaw => {
            let gamma = g.gamma.unwrap_or(3.0);
            n * (gamma - 1.0) / (gamma - 2.0)
        }
        GraphKind::Sbm | GraphKind::Bipartite => {
            let n1 = g.n1.map_or((n / 2.0).floor(), |m| m as f64);
            let inside = if kind == GraphKind::Sbm { g.p.unwrap_or(0.0) } else { 0.0 };
            let across = g.q.unwrap_or(0.0);
            2.0 * (inside * (pairs(n1) + pairs(n - n1)) + across * n1 * (n - n1)) + loops(inside)
        }
    })
}

/// The generator's undirected edges on `0..n`, to `edge`.
fn generate(g: &GraphConfig, kind: GraphKind, seed: u64, n: usize, edge: &mut dyn FnMut(u32, u32)) {
    let mut rng = Rng::from_key(&[seed, domain::GRAPH, n as u64]);
    match kind {
        GraphKind::DetEr => det_er_each(n, g.p.expect("validated"), seed, g.self_loops, edge),
        GraphKind::Er => er_pairs(n, g.self_loops, g.p.expect("validated"), &mut rng, edge),
        GraphKind::PowerLaw => {
            let gamma = g.gamma.expect("validated");
            let d: Vec<f64> = (0..n).map(|_| (1.0 - rng.uniform()).powf(-1.0 / (gamma - 1.0))).collect();
            chung_lu(&d, g.self_loops, &mut rng, edge)
        }
        GraphKind::Sbm | GraphKind::Bipartite => {
            let n1 = g.n1.unwrap_or(n / 2);
            let inside = if kind == GraphKind::Sbm { g.p.expect("validated") } else { 0.0 };
            two_blocks(n, n1, g.self_loops, inside, g.q.expect("validated"), &mut rng, edge)
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn file(name: &str, text: &str) -> String {
        let p = std::env::temp_dir().join(format!("outrun-graph-{}-{name}", std::process::id()));
        std::fs::write(&p, text).unwrap();
        p.display().to_string()
    }

    #[test]
    fn expected_values_match_generated_graphs() {
        let cfg = |kind, p: Option<f64>, q: Option<f64>, gamma: Option<f64>| GraphConfig {
            kind: Some(kind),
            n: Some(2000),
            p,
            q,
            gamma,
            ..GraphConfig::default()
        };
        for g in [
            cfg(GraphKind::Er, Some(0.01), None, None),
            cfg(GraphKind::DetEr, Some(0.02), None, None),
            cfg(GraphKind::Sbm, Some(0.02), Some(0.002), None),
            cfg(GraphKind::Bipartite, None, Some(0.01), None),
            GraphConfig { self_loops: true, ..cfg(GraphKind::Er, Some(0.05), None, None) },
        ] {
            let want = expected_values(&g, 2000).unwrap();
            let got = load(&g, 5).unwrap().graph.values() as f64;
            // a few standard deviations of a binomial count
            assert!((got - want).abs() < 5.0 * want.sqrt() + 1.0, "{:?}: drew {got}, expected {want}", g.kind);
        }
        // the power law's is an upper bound
        let g = cfg(GraphKind::PowerLaw, None, None, Some(2.5));
        let got = load(&g, 5).unwrap().graph.values() as f64;
        assert!(got <= expected_values(&g, 2000).unwrap() * 1.1, "{got}");
        assert_eq!(expected_values(&GraphConfig { path: Some("g.txt".into()), ..GraphConfig::default() }, 10), None);
    }

    #[test]
    fn reads_snap_edge_lists_with_comments_tabs_and_arbitrary_ids() {
        let p = file("ok.txt", "# Directed graph\n% another comment\n\n10\t20\n20 30 1.5\n30 10\n10 20\n7 7\n");
        let g = read_edge_list(&p, false).unwrap();
        assert_eq!(g.ids, vec![7, 10, 20, 30]);
        // undirected, duplicates once, self-loop kept
        assert_eq!(g.graph.targets(0), &[0]);
        assert_eq!(g.graph.targets(1), &[2, 3]);
        assert_eq!(g.graph.values(), 7);
        let d = read_edge_list(&p, true).unwrap();
        assert_eq!(d.graph.targets(1), &[2]);
        assert_eq!(d.graph.sources(1), &[3]);
        assert_eq!(d.graph.values(), 4);
        std::fs::remove_file(p).unwrap();
        // the same graph as a CSV with a header, and as a Matrix Market coordinate file (whose
        // size line `30 30 5` was read as an edge 30–30)
        let csv = file("ok.csv", "source,target,weight\n10,20,1\n20,30,1.5\n30,10,1\n10,20,1\n7,7,1\n");
        let mm = file(
            "ok.mtx",
            "%%MatrixMarket matrix coordinate pattern general\n% c\n30 30 5\n10 20\n20 30\n30 10\n10 20\n7 7\n",
        );
        for p in [csv, mm] {
            let h = read_edge_list(&p, true).unwrap();
            assert_eq!((h.ids, h.graph.values()), (d.ids.clone(), 4), "{p}");
            std::fs::remove_file(p).unwrap();
        }
    }

    #[test]
    fn bad_files_name_the_line() {
        for (name, text, want) in [
            ("nonnum.txt", "1 2\n3 x\n", "nonnum.txt:2: the second vertex id `x` is not a non-negative integer"),
            ("onecol.txt", "# c\n1 2\n5\n", "onecol.txt:3: one column (`5`); an edge needs two vertex ids"),
            ("neg.txt", "-1 2\n", "neg.txt:1: the first vertex id `-1`"),
            ("empty.txt", "", "empty.txt: no edges"),
            ("comments.txt", "# only\n\n", "comments.txt: no edges"),
            // a header is the first line only
            ("words.txt", "a b\nb c\n", "words.txt:2: the first vertex id `b`"),
            (
                "array.mtx",
                "%%MatrixMarket matrix array real general\n2 2\n1\n",
                "array.mtx:1: a Matrix Market file in the array",
            ),
        ] {
            let p = file(name, text);
            let e = read_edge_list(&p, false).unwrap_err().to_string();
            assert!(e.contains(want), "{e}");
            std::fs::remove_file(p).unwrap();
        }
        assert!(read_edge_list("/nonexistent/g.txt", false).unwrap_err().to_string().contains("cannot open"));
    }

    fn cfg(kind: GraphKind, n: usize) -> GraphConfig {
        GraphConfig { kind: Some(kind), n: Some(n), ..Default::default() }
    }

    #[test]
    fn generators_are_seeded_and_have_their_density() {
        let er = GraphConfig { p: Some(0.1), ..cfg(GraphKind::Er, 400) };
        let a = load(&er, 1).unwrap();
        assert_eq!(a.graph, load(&er, 1).unwrap().graph);
        assert_ne!(a.graph, load(&er, 2).unwrap().graph);
        let pairs = 400.0 * 399.0 / 2.0;
        let edges = a.graph.values() as f64 / 2.0;
        assert!((edges / pairs - 0.1).abs() < 0.01, "{}", edges / pairs);
        let det = GraphConfig { p: Some(0.2), seed: Some(1), ..cfg(GraphKind::DetEr, 60) };
        assert_eq!(load(&det, 99).unwrap().graph.values(), 750);
        let bip = GraphConfig { q: Some(0.2), ..cfg(GraphKind::Bipartite, 200) };
        let b = load(&bip, 3).unwrap().graph;
        for j in 0..200 {
            assert!(b.targets(j).iter().all(|&i| (i < 100) != (j < 100)));
        }
        let sbm = GraphConfig { p: Some(0.3), q: Some(0.01), ..cfg(GraphKind::Sbm, 300) };
        let s = load(&sbm, 3).unwrap().graph;
        let inside: usize = (0..300).map(|j| s.targets(j).iter().filter(|&&i| (i < 150) == (j < 150)).count()).sum();
        assert!(inside as f64 > 0.9 * s.values() as f64);
        let pl = GraphConfig { gamma: Some(2.5), ..cfg(GraphKind::PowerLaw, 2000) };
        let p = load(&pl, 3).unwrap().graph;
        let mean = p.values() as f64 / 2000.0;
        let max = (0..2000).map(|j| p.targets(j).len()).max().unwrap();
        assert!((1.5..5.0).contains(&mean) && max as f64 > 10.0 * mean, "mean {mean}, max {max}");
    }

    /// Draws `sample` `runs` times and checks that each of `all`'s pairs comes at its
    /// probability `prob` and every two of them together at the product (independence), each
    /// within five standard deviations of a frequency; nothing outside `all` is drawn.
    fn independent_pairs(
        all: &[(u32, u32)],
        prob: impl Fn(u32, u32) -> f64,
        runs: usize,
        mut sample: impl FnMut() -> Vec<(u32, u32)>,
    ) {
        let m = all.len();
        let mut once = vec![0usize; m];
        let mut both = vec![0usize; m * m];
        for _ in 0..runs {
            let got = sample();
            assert!(got.iter().all(|e| all.contains(e)), "{got:?}");
            let hit: Vec<bool> = all.iter().map(|e| got.contains(e)).collect();
            for k in 0..m {
                once[k] += hit[k] as usize;
                for l in k + 1..m {
                    both[k * m + l] += (hit[k] && hit[l]) as usize;
                }
            }
        }
        let near = |count: usize, q: f64| {
            ((count as f64 / runs as f64) - q).abs() <= 5.0 * (q * (1.0 - q) / runs as f64).sqrt() + 1e-12
        };
        for k in 0..m {
            let pk = prob(all[k].0, all[k].1);
            assert!(near(once[k], pk), "{:?}: {} of {runs}, p = {pk}", all[k], once[k]);
            for l in k + 1..m {
                let q = pk * prob(all[l].0, all[l].1);
                assert!(
                    near(both[k * m + l], q),
                    "{:?} and {:?}: {} of {runs}, p = {q}",
                    all[k],
                    all[l],
                    both[k * m + l]
                );
            }
        }
    }

    fn all_pairs(n: u32, loops: bool) -> Vec<(u32, u32)> {
        (0..n).flat_map(|i| (if loops { i } else { i + 1 }..n).map(move |j| (i, j))).collect()
    }

    /// The two-block sampler's pairs are independent with their block's probability (runs
    /// end at a block's edge and at a row's), in (i, j) order; a block at probability 1 is
    /// complete, one at 0 empty.
    #[test]
    fn two_block_sampler_draws_each_pair_independently() {
        let mut rng = Rng::from_key(&[8]);
        let sample = |n1: usize, loops: bool, inside: f64, across: f64, rng: &mut Rng| {
            let mut got = Vec::new();
            two_blocks(6, n1, loops, inside, across, rng, &mut |a, b| got.push((a, b)));
            got
        };
        for (n1, loops) in [(2, false), (3, true), (5, false), (0, true)] {
            let all = all_pairs(6, loops);
            let same = |i: u32, j: u32| (i < n1 as u32) == (j < n1 as u32);
            let complete = sample(n1, loops, 1.0, 1.0, &mut rng);
            assert_eq!(complete, all);
            let across: Vec<(u32, u32)> = all.iter().copied().filter(|&(i, j)| !same(i, j)).collect();
            assert_eq!(sample(n1, loops, 0.0, 1.0, &mut rng), across);
            assert!(sample(n1, loops, 0.0, 0.0, &mut rng).is_empty());
            let (p, q) = (0.3, 0.6);
            independent_pairs(
                &all,
                |i, j| if same(i, j) { p } else { q },
                40_000,
                || {
                    let got = sample(n1, loops, p, q, &mut rng);
                    assert!(got.windows(2).all(|w| w[0] < w[1]), "{got:?}");
                    got
                },
            );
        }
    }

    /// A first block larger than the graph is refused with a message, not an index past the
    /// end (the config refuses it first; reproduction entries build their configs themselves).
    #[test]
    #[should_panic(expected = "two blocks of 6 vertices cannot have a first block of 7")]
    fn two_blocks_refuse_a_first_block_beyond_the_graph() {
        two_blocks(6, 7, false, 0.5, 0.5, &mut Rng::from_key(&[8]), &mut |_, _| {});
    }

    /// The Chung–Lu sampler's pairs are independent with probability min(1, d_i d_j / Σd),
    /// the capped ones always there, whatever the weights' order.
    #[test]
    fn chung_lu_sampler_draws_each_pair_independently() {
        let mut rng = Rng::from_key(&[9]);
        // Σd = 10: (0, 3) is capped at 1; (2, 2) and (2, 4) tie in weight
        let d = [4.0, 0.5, 1.5, 2.5, 1.5, 0.0];
        let total: f64 = d.iter().sum();
        for loops in [false, true] {
            let all = all_pairs(6, loops);
            let prob = |i: u32, j: u32| (d[i as usize] * d[j as usize] / total).min(1.0);
            independent_pairs(&all, prob, 40_000, || {
                let mut got = Vec::new();
                chung_lu(&d, loops, &mut rng, &mut |a, b| got.push((a, b)));
                got
            });
        }
        let mut none = Vec::new();
        chung_lu(&[0.0; 4], true, &mut rng, &mut |a, b| none.push((a, b)));
        assert!(none.is_empty());
    }

    /// The skipping sampler's pairs are independent Bernoulli(p): every pair of a small graph,
    /// and every two pairs (across a row's end too), at their frequency over many draws; p = 0
    /// and p = 1 give the empty and the complete graph.
    #[test]
    fn er_sampler_draws_each_pair_independently() {
        let sample = |n: usize, loops: bool, p: f64, rng: &mut Rng| {
            let mut got = Vec::new();
            er_pairs(n, loops, p, rng, &mut |a, b| got.push((a, b)));
            got
        };
        let mut rng = Rng::from_key(&[7]);
        for loops in [false, true] {
            let all = all_pairs(6, loops);
            assert_eq!(sample(6, loops, 1.0, &mut rng), all);
            assert!(sample(6, loops, 0.0, &mut rng).is_empty());
            assert!(sample(1, false, 0.5, &mut rng).is_empty());
            let p = 0.3;
            independent_pairs(&all, |_, _| p, 40_000, || sample(6, loops, p, &mut rng));
        }
    }

    /// A rank keeping some lists has exactly those lists of the whole graph, with a file's ids,
    /// a permutation and a generator alike.
    #[test]
    fn a_kept_share_has_the_whole_graphs_lists() {
        let p = file("share.txt", "5 9\n9 12\n12 5\n40 9\n7 7\n9 5\n");
        let from_file = GraphConfig { path: Some(p.clone()), permute: true, directed: true, ..Default::default() };
        let generated = GraphConfig { p: Some(0.1), ..cfg(GraphKind::Er, 80) };
        for g in [from_file, generated] {
            let whole = load(&g, 4).unwrap();
            let keep = Keep { out: Box::new(|v| v % 2 == 0), inn: Box::new(|v| v % 3 == 0) };
            let part = load_keeping(&g, 4, Some(keep)).unwrap();
            assert_eq!(part.ids, whole.ids);
            let (w, s) = (&whole.graph, &part.graph);
            assert_eq!(s.fingerprint(), w.fingerprint());
            for v in 0..w.vertices() {
                assert_eq!(s.targets(v), if v % 2 == 0 { w.targets(v) } else { &[] }, "out-list of {v}");
                assert_eq!(s.sources(v), if v % 3 == 0 { w.sources(v) } else { &[] }, "in-list of {v}");
                assert_eq!(s.sends(v), !w.targets(v).is_empty());
            }
        }
        std::fs::remove_file(p).unwrap();
    }

    #[test]
    fn permutation_relabels_and_keeps_the_ids() {
        let p = file("perm.txt", "100 200\n200 300\n");
        let g = GraphConfig { path: Some(p.clone()), permute: true, ..Default::default() };
        let a = load(&g, 5).unwrap();
        let mut ids = a.ids.clone();
        ids.sort();
        assert_eq!(ids, vec![100, 200, 300]);
        // the middle vertex (id 200) has two neighbours wherever it went
        let mid = a.ids.iter().position(|&x| x == 200).unwrap();
        assert_eq!(a.graph.targets(mid).len(), 2);
        std::fs::remove_file(p).unwrap();
    }
}
