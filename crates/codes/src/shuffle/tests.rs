//! The note's acceptance tests T1–T6, T8, T10 and T11 (exact integers), and one full
//! in-process iteration of every server against an independent PageRank step.

use super::*;

fn counts(g: &Graph, k: usize, r: usize, policy: ReducePolicy) -> Loads {
    loads(g, &Allocation::new(g.vertices(), k, r, policy).unwrap())
}

/// (U, Cseg, Cchunk, Cbytes)
fn row(l: &Loads) -> (usize, usize, usize, usize) {
    (l.uncoded, l.segments, l.chunks, l.coded_bytes)
}

use ReducePolicy::{Contiguous, Modulo};

/// The worked example's graph (§2.4), 0-based.
fn worked() -> Graph {
    let e: Vec<(u32, u32)> =
        [(1, 1), (1, 2), (1, 5), (2, 3), (2, 6), (3, 4), (4, 5), (5, 6)].iter().map(|&(a, b)| (a - 1, b - 1)).collect();
    Graph::new(6, &e, false)
}

/// Independent PageRank step: for each vertex, its neighbours' Π(j)/deg(j) from an adjacency
/// list, in ascending j.
fn reference_step(adj: &[Vec<usize>], pi: &[f64], alpha: f64, uniform: bool) -> Vec<f64> {
    let n = adj.len();
    let mass: f64 = (0..n).filter(|&j| adj[j].is_empty()).map(|j| pi[j]).sum();
    (0..n)
        .map(|i| {
            let mut s = 0.0;
            for j in 0..n {
                if adj[j].contains(&i) {
                    s += pi[j] / adj[j].len() as f64;
                }
            }
            if uniform {
                s += mass / n as f64;
            }
            (1.0 - alpha) / n as f64 + alpha * s
        })
        .collect()
}

fn adjacency(g: &Graph) -> Vec<Vec<usize>> {
    (0..g.vertices()).map(|j| g.targets(j).iter().map(|&i| i as usize).collect()).collect()
}

/// Every server's Map, Shuffle and Reduce in process: the new ranks and the bytes sent.
fn distributed_step(
    g: &Graph,
    a: &Allocation,
    coded: bool,
    pi: &[f64],
    alpha: f64,
    dangling: Dangling,
) -> (Vec<f64>, usize) {
    distributed_step_on(&vec![g.clone(); a.servers()], a, coded, pi, alpha, dangling)
}

/// [`distributed_step`] with server k holding `graphs[k]` (the whole graph or its share).
fn distributed_step_on(
    graphs: &[Graph],
    a: &Allocation,
    coded: bool,
    pi: &[f64],
    alpha: f64,
    dangling: Dangling,
) -> (Vec<f64>, usize) {
    let k = a.servers();
    let g = &graphs[0];
    let mut nodes: Vec<ShuffleNode> = (0..k).map(|me| ShuffleNode::new(&graphs[me], a, me, coded)).collect();
    for (me, node) in nodes.iter_mut().enumerate() {
        // every other server's pages written first, as the engine does at setup: no result
        // may depend on it
        if me % 2 == 0 {
            node.touch(&graphs[me]);
        }
        node.map(&graphs[me], pi);
    }
    let mut sent = 0;
    // local group index of global group `id` at server m
    let local = |node: &ShuffleNode, id: usize| (0..node.group_count()).find(|&x| node.group(x).1 == id).unwrap();
    for s in 0..k {
        for x in 0..nodes[s].group_count() {
            let (members, id) = {
                let (m, id) = nodes[s].group(x);
                (m.to_vec(), id)
            };
            for (to, bytes) in nodes[s].encode(x) {
                sent += bytes.len();
                let receivers: Vec<usize> = match to {
                    Some(t) => vec![t],
                    None => members.iter().copied().filter(|&m| m != s).collect(),
                };
                for m in receivers {
                    let lx = local(&nodes[m], id);
                    nodes[m].decode(lx, s, bytes.clone()).unwrap();
                }
            }
        }
    }
    let mass = dangling_mass(g, pi);
    let mut out = vec![f64::NAN; g.vertices()];
    for node in &mut nodes {
        node.unpack();
        for (&i, v) in node.reduced().iter().zip(node.reduce(alpha, dangling, mass)) {
            out[i as usize] = v;
        }
    }
    (out, sent)
}

#[test]
fn splitmix_matches_the_note() {
    let mut s = 0u64;
    assert_eq!(crate::rng::splitmix64(&mut s), 0xe220a8397b1dcdaf);
    assert_eq!(crate::rng::splitmix64(&mut s), 0x6e789e6aa1b965f4);
}

#[test]
fn t1_allocation_of_the_worked_example() {
    let a = Allocation::new(6, 3, 2, Contiguous).unwrap();
    let m: Vec<Vec<u32>> = (0..3).map(|k| ShuffleNode::new(&worked(), &a, k, true).mapped().to_vec()).collect();
    assert_eq!(m, vec![vec![0, 1, 2, 3], vec![0, 1, 4, 5], vec![2, 3, 4, 5]]);
    let r: Vec<Vec<u32>> = (0..3).map(|k| a.reduced(k)).collect();
    assert_eq!(r, vec![vec![0, 1], vec![2, 3], vec![4, 5]]);
}

#[test]
fn t1_allocation_properties() {
    for k in 3..=8 {
        for r in 1..=k {
            let c = binomial(k, r) as usize;
            let n = c * k * 2;
            for policy in [Contiguous, Modulo] {
                let a = Allocation::new(n, k, r, policy).unwrap();
                let subsets: Vec<Vec<usize>> = combinations(k, r).collect();
                for (b, s) in subsets.iter().enumerate() {
                    assert_eq!(a.subset(b), &s[..]);
                    assert_eq!(a.batch(b).len(), n / c);
                    assert_eq!(a.batch_of_subset(s), b);
                }
                for v in 0..n {
                    assert_eq!((0..k).filter(|&s| a.maps(s, v)).count(), r);
                    assert!(a.reduced(a.reducer(v)).contains(&(v as u32)));
                }
                for s in 0..k {
                    assert_eq!(a.mapped(s).iter().map(|&b| a.batch(b).len()).sum::<usize>(), r * n / k);
                    assert_eq!(a.reduced(s).len(), n / k);
                }
                // every missing (i, j) lies in exactly one group: S = batch(j)'s subset + {owner}
                let groups = a.groups();
                for j in 0..n {
                    for owner in 0..k {
                        if a.maps(owner, j) {
                            continue;
                        }
                        let hits = groups
                            .iter()
                            .filter(|s| {
                                s.contains(&owner)
                                    && a.batch_of_subset(&s.iter().copied().filter(|&x| x != owner).collect::<Vec<_>>())
                                        == a.batch_of(j)
                            })
                            .count();
                        assert_eq!(hits, 1, "K={k} r={r} j={j} owner={owner}");
                    }
                }
            }
        }
    }
}

/// Uncoded, a sender serves its group's other members in an order that makes each of them
/// last equally often (sent one after the other, the last waits longest): the members after it
/// cyclically, rotated by the members' sum; in members' order the highest-ranked was last in
/// every turn it was in, and a slow sender's receivers waited in rank order.
#[test]
fn an_uncoded_sender_serves_each_member_last_as_often() {
    let g = Graph::new(90, &det_er(90, 0.2, 1, false), false);
    for (k, r) in [(5, 2), (6, 3)] {
        let a = Allocation::new(90, k, r, Contiguous).unwrap();
        // last[s][m]: turns of sender s in which m was served last
        let mut last = vec![vec![0; k]; k];
        for (me, served) in last.iter_mut().enumerate() {
            let node = ShuffleNode::new(&g, &a, me, false);
            for x in 0..node.group_count() {
                let (members, id) = node.group(x);
                let to: Vec<usize> =
                    node.encode(x).into_iter().map(|(to, _)| to.expect("uncoded: one owner")).collect();
                let mut want: Vec<usize> = members.iter().copied().filter(|&m| m > me).collect();
                want.extend(members.iter().copied().filter(|&m| m < me));
                want.rotate_left(members.iter().sum::<usize>() % r);
                assert_eq!(to, want, "server {me}, group {members:?} (number {id})");
                served[*to.last().unwrap()] += 1;
            }
        }
        // every server is served last in as many turns as every other, and by no sender in half
        // of its C(K−1, r) groups or more (in members' order, sender 0 served K − 1 last in
        // every group of them both: 3 of 6 at K = 5, 6 of 10 at K = 6)
        let totals: Vec<usize> = (0..k).map(|m| (0..k).map(|s| last[s][m]).sum()).collect();
        assert!(totals.iter().all(|&t| t == totals[0]), "K = {k}, r = {r}: {totals:?}");
        let groups = ShuffleNode::new(&g, &a, 0, false).group_count();
        for (s, row) in last.iter().enumerate() {
            assert!(row.iter().all(|&n| 2 * n < groups), "K = {k}, r = {r}, sender {s}: {row:?} of {groups}");
        }
    }
}

#[test]
fn t2_worked_example_loads_messages_and_ranks() {
    let g = worked();
    assert_eq!(row(&counts(&g, 3, 2, Contiguous)), (6, 6, 3, 24));
    assert_eq!(counts(&g, 3, 2, Contiguous).l_coded(), 3.0 / 36.0);
    assert_eq!(counts(&g, 3, 2, Contiguous).l_uncoded(), 6.0 / 36.0);
    assert_eq!(counts(&g, 3, 1, Contiguous).uncoded, 8);
    assert_eq!(counts(&g, 3, 3, Contiguous).uncoded, 0);
    // message composition: server 1 (0-based 0) sends v_{5,1} ⊕ v_{4,3} (whole values: r = 2
    // byte segments of a 2-value row are its two values)
    let a = Allocation::new(6, 3, 2, Contiguous).unwrap();
    let pi: Vec<f64> = (1..=6).map(|v| v as f64 / 21.0).collect();
    let mut node = ShuffleNode::new(&g, &a, 0, true);
    node.map(&g, &pi);
    let v = |j: usize| pi[j - 1] / g.targets(j - 1).len() as f64;
    let x1 = &node.encode(0)[0].1;
    let want: Vec<u8> = v(1).to_le_bytes().iter().zip(v(3).to_le_bytes()).map(|(a, b)| a ^ b).collect();
    assert_eq!(x1, &want);
    // Π_1 with d = 0 and d = 0.15 (α = 1, 0.85), the note's values
    let pi0 = vec![1.0 / 6.0; 6];
    let (p1, bytes) = distributed_step(&g, &a, true, &pi0, 1.0, Dangling::Leak);
    assert_eq!(bytes, 24);
    let want = [1.0 / 6.0, 2.0 / 9.0, 5.0 / 36.0, 5.0 / 36.0, 2.0 / 9.0, 1.0 / 9.0];
    for (x, y) in p1.iter().zip(want) {
        assert!((x - y).abs() < 1e-15, "{p1:?}");
    }
    let (p1, _) = distributed_step(&g, &a, true, &pi0, 0.85, Dangling::Leak);
    for (x, y) in p1.iter().zip([0.1666667, 0.2138889, 0.1430556, 0.1430556, 0.2138889, 0.1194444]) {
        assert!((x - y).abs() < 5e-8, "{p1:?}");
    }
}

#[test]
fn t3_complete_graph() {
    let n = 60;
    let all: Vec<(u32, u32)> = (0..n).flat_map(|i| (i..n).map(move |j| (i, j))).collect();
    let g = Graph::new(n as usize, &all, false);
    let want = [(2880, 2880), (2160, 1080), (1440, 480), (720, 180)];
    for r in 1..5 {
        let l = counts(&g, 5, r, Contiguous);
        assert_eq!(l.uncoded, 3600 * (5 - r) / 5);
        assert_eq!(l.segments, l.uncoded);
        assert_eq!((l.uncoded, l.chunks), want[r - 1]);
        assert!((l.l_coded() - (1.0 - r as f64 / 5.0) / r as f64).abs() < 1e-16);
    }
    let no_loops: Vec<(u32, u32)> = all.into_iter().filter(|(i, j)| i != j).collect();
    let g = Graph::new(n as usize, &no_loops, false);
    for (r, (u, c)) in (1..5).zip([(2880, 2880), (2136, 2160), (1422, 1440), (708, 720)]) {
        let l = counts(&g, 5, r, Contiguous);
        assert_eq!((l.uncoded, l.segments), (u, c), "r = {r}");
    }
}

#[test]
fn t4_trivial_cases() {
    let empty = Graph::new(60, &[], false);
    for r in 1..=5 {
        assert_eq!(row(&counts(&empty, 5, r, Contiguous)), (0, 0, 0, 0));
    }
    let g = Graph::new(60, &det_er(60, 0.2, 1, false), false);
    assert_eq!(row(&counts(&g, 5, 5, Contiguous)), (0, 0, 0, 0));
    for policy in [Contiguous, Modulo] {
        let l = counts(&g, 5, 1, policy);
        assert_eq!(l.segments, l.uncoded);
        assert_eq!(l.coded_bytes, 8 * l.uncoded);
    }
}

#[test]
fn t5_cycle() {
    let e: Vec<(u32, u32)> = (0..60).map(|i| (i, (i + 1) % 60)).collect();
    let g = Graph::new(60, &e, false);
    assert_eq!(counts(&g, 5, 1, Contiguous).uncoded, 10);
    assert_eq!(counts(&g, 5, 1, Modulo).uncoded, 96);
    let table = [
        (Contiguous, 2, (51, 100, 51, 400)),
        (Contiguous, 3, (36, 104, 35, 278)),
        (Contiguous, 4, (24, 89, 22, 178)),
        (Modulo, 2, (70, 78, 40, 312)),
        (Modulo, 3, (50, 59, 28, 156)),
        (Modulo, 4, (24, 25, 7, 50)),
    ];
    for (policy, r, want) in table {
        assert_eq!(row(&counts(&g, 5, r, policy)), want, "{policy:?} r = {r}");
    }
}

#[test]
fn t6_det_er_tables() {
    let g = Graph::new(60, &det_er(60, 0.2, 1, false), false);
    assert_eq!(g.values(), 750);
    let a =
        [(1, (610, 610, 610, 4880)), (2, (448, 488, 244, 1952)), (3, (299, 343, 118, 915)), (4, (132, 155, 38, 310))];
    for (r, want) in a {
        assert_eq!(row(&counts(&g, 5, r, Contiguous)), want, "(a) r = {r}");
    }
    for (r, (u, c, ch, b)) in
        [(1, (585, 0, 0, 0)), (2, (449, 506, 253, 2024)), (3, (313, 384, 131, 1022)), (4, (157, 181, 45, 362))]
    {
        let l = counts(&g, 5, r, Modulo);
        assert_eq!(l.uncoded, u);
        if r > 1 {
            assert_eq!((l.segments, l.chunks, l.coded_bytes), (c, ch, b), "(a) mod r = {r}");
        }
    }
    let g = Graph::new(300, &det_er(300, 0.1, 2024, false), false);
    assert_eq!(g.values(), 9072);
    assert_eq!(counts(&g, 5, 1, Contiguous).uncoded, 7274);
    assert!((counts(&g, 5, 1, Contiguous).l_uncoded() - 0.080822).abs() < 5e-7);
    for (r, want, lc) in [
        (2, (5446, 5649, 2826, 22596), 0.031383),
        (3, (3645, 3869, 1291, 10318), 0.014330),
        (4, (1790, 1915, 481, 3830), 0.005319),
    ] {
        let l = counts(&g, 5, r, Contiguous);
        assert_eq!(row(&l), want, "(b) r = {r}");
        assert!((l.l_coded() - lc).abs() < 5e-7);
    }
    assert_eq!(counts(&g, 5, 1, Modulo).uncoded, 7281);
    for (r, want) in [(2, (5487, 5712, 2856, 22848)), (3, (3579, 3857, 1287, 10284)), (4, (1810, 1909, 477, 3818))] {
        assert_eq!(row(&counts(&g, 5, r, Modulo)), want, "(b) mod r = {r}");
    }
    let g = Graph::new(120, &det_er(120, 0.3, 7, false), false);
    assert_eq!(g.values(), 4306);
    assert_eq!(counts(&g, 4, 1, Contiguous).uncoded, 3254);
    for (r, want) in [(2, (2138, 2218, 1110, 8872)), (3, (1122, 1160, 386, 3094))] {
        assert_eq!(row(&counts(&g, 4, r, Contiguous)), want, "(c) r = {r}");
    }
    let g = Graph::new(840, &det_er(840, 0.05, 99, false), false);
    assert_eq!(g.values(), 35294);
    assert_eq!(counts(&g, 7, 1, Contiguous).uncoded, 30262);
    for (r, (u, c, b)) in [
        (2, (25276, 26149, 104596)),
        (3, (20142, 21588, 57562)),
        (4, (15167, 16559, 33118)),
        (5, (10141, 10866, 17387)),
        (6, (5010, 5131, 6842)),
    ] {
        let l = counts(&g, 7, r, Contiguous);
        assert_eq!((l.uncoded, l.segments, l.coded_bytes), (u, c, b), "(d) r = {r}");
    }
}

#[test]
fn redistribution_counts_of_the_note() {
    // note §5.6: n = 300, K = 5
    for (policy, want) in [(Contiguous, [0, 420, 690, 960, 1200]), (Modulo, [240, 480, 720, 960, 1200])] {
        for r in 1..=5 {
            assert_eq!(Allocation::new(300, 5, r, policy).unwrap().redistribution(), want[r - 1], "{policy:?} r = {r}");
        }
    }
}

#[test]
fn t8_t9_bytes_and_bit_equal_ranks() {
    let g = Graph::new(60, &det_er(60, 0.2, 1, false), false);
    let adj = adjacency(&g);
    let pi0 = vec![1.0 / 60.0; 60];
    let reference = reference_step(&adj, &pi0, 0.85, false);
    let note =
        [0.013011078042328043, 0.020876899720649718, 0.01475907079032079, 0.01912482656232656, 0.01599830031080031];
    for (x, y) in reference.iter().zip(note) {
        assert!((x - y).abs() <= 1e-17, "{x} vs {y}");
    }
    for k in [3, 4, 5, 6] {
        for r in 1..=k {
            for policy in [Contiguous, Modulo] {
                let a = Allocation::new(60, k, r, policy).unwrap();
                let l = loads(&g, &a);
                let (coded, cbytes) = distributed_step(&g, &a, true, &pi0, 0.85, Dangling::Leak);
                let (uncoded, ubytes) = distributed_step(&g, &a, false, &pi0, 0.85, Dangling::Leak);
                assert_eq!(cbytes, l.coded_bytes, "K={k} r={r} {policy:?}");
                assert_eq!(ubytes, l.uncoded_bytes(), "K={k} r={r} {policy:?}");
                let bits = |v: &[f64]| v.iter().map(|x| x.to_bits()).collect::<Vec<_>>();
                assert_eq!(bits(&coded), bits(&uncoded), "K={k} r={r} {policy:?}");
                for (x, y) in coded.iter().zip(&reference) {
                    assert!((x - y).abs() <= 1e-15 * y.abs(), "K={k} r={r}");
                }
            }
        }
    }
}

#[test]
fn t10_dangling_vertices() {
    let g = Graph::new(60, &det_er(60, 0.05, 3, true), false);
    let isolated = (0..60).filter(|&j| g.targets(j).is_empty()).count();
    assert_eq!(isolated, 2);
    let a = Allocation::new(60, 5, 2, Contiguous).unwrap();
    let pi0 = vec![1.0 / 60.0; 60];
    let (leak, _) = distributed_step(&g, &a, true, &pi0, 0.85, Dangling::Leak);
    let (uncoded, _) = distributed_step(&g, &a, false, &pi0, 0.85, Dangling::Leak);
    assert_eq!(leak, uncoded);
    assert!((leak.iter().sum::<f64>() - (1.0 - 0.85 * 2.0 / 60.0)).abs() < 1e-14);
    let (uniform, _) = distributed_step(&g, &a, true, &pi0, 0.85, Dangling::Uniform);
    assert!((uniform.iter().sum::<f64>() - 1.0).abs() < 1e-14);
    let reference = reference_step(&adjacency(&g), &pi0, 0.85, true);
    for (x, y) in uniform.iter().zip(&reference) {
        assert!((x - y).abs() <= 1e-15 * y.abs());
    }
}

/// A server that keeps only the out-lists of the vertices it Maps and the in-lists of those it
/// Reduces sends the same bytes and computes the same ranks, bit for bit, as with the whole
/// graph; its graph knows the dangling vertices and the whole graph's fingerprint.
#[test]
fn servers_holding_only_their_share_compute_the_same_ranks() {
    let mut rng = crate::Rng::from_key(&[12]);
    for trial in 0..12 {
        let n = 30 + rng.below(50);
        let k = 3 + rng.below(3);
        let directed = trial % 2 == 0;
        let edges = det_er(n, 0.02 + 0.2 * rng.uniform(), trial as u64, trial % 3 == 0);
        let whole = Graph::new(n, &edges, directed);
        let pi0: Vec<f64> = (0..n).map(|v| (v + 1) as f64).collect();
        for r in 1..=k {
            for policy in [Contiguous, Modulo] {
                let a = Allocation::new(n, k, r, policy).unwrap();
                let shares: Vec<Graph> = (0..k)
                    .map(|me| {
                        let (maps, reduces) = (a.clone(), a.clone());
                        let mut b = GraphBuilder::keeping(
                            n,
                            directed,
                            Box::new(move |v| maps.maps(me, v as usize)),
                            Box::new(move |v| reduces.reducer(v as usize) == me),
                        );
                        edges.iter().for_each(|&(x, y)| b.add(x, y));
                        b.finish()
                    })
                    .collect();
                for share in &shares {
                    assert_eq!(share.fingerprint(), whole.fingerprint());
                    assert!((0..n).all(|j| share.sends(j) != whole.targets(j).is_empty()));
                    assert!(share.values() <= whole.values());
                }
                for coded in [true, false] {
                    let bits = |(x, b): (Vec<f64>, usize)| (x.iter().map(|v| v.to_bits()).collect::<Vec<_>>(), b);
                    let want = bits(distributed_step(&whole, &a, coded, &pi0, 0.85, Dangling::Uniform));
                    let got = bits(distributed_step_on(&shares, &a, coded, &pi0, 0.85, Dangling::Uniform));
                    assert_eq!(got, want, "n={n} K={k} r={r} {policy:?} directed={directed} coded={coded}");
                }
            }
        }
    }
}

#[test]
fn t11_coded_never_exceeds_uncoded_and_uneven_batches_still_decode() {
    let mut rng = crate::Rng::from_key(&[11]);
    for trial in 0..20 {
        let n = 37 + rng.below(60);
        let k = 3 + rng.below(4);
        let p = 0.02 + 0.3 * rng.uniform();
        let directed = trial % 2 == 1;
        let edges = det_er(n, p, trial as u64, trial % 3 == 0);
        let g = Graph::new(n, &edges, directed);
        let pi0: Vec<f64> = (0..n).map(|v| (v + 1) as f64).collect();
        for r in 1..=k {
            for policy in [Contiguous, Modulo] {
                let a = Allocation::new(n, k, r, policy).unwrap();
                let l = loads(&g, &a);
                assert!(l.segments <= r * l.uncoded);
                assert!(l.coded_bytes <= 8 * l.uncoded + 8 * k * k * k);
                let (coded, cb) = distributed_step(&g, &a, true, &pi0, 0.85, Dangling::Uniform);
                let (uncoded, ub) = distributed_step(&g, &a, false, &pi0, 0.85, Dangling::Uniform);
                assert_eq!((cb, ub), (l.coded_bytes, l.uncoded_bytes()));
                assert_eq!(
                    coded.iter().map(|x| x.to_bits()).collect::<Vec<_>>(),
                    uncoded.iter().map(|x| x.to_bits()).collect::<Vec<_>>()
                );
                let reference = reference_step(&adjacency(&g), &pi0, 0.85, true);
                for (x, y) in coded.iter().zip(&reference) {
                    assert!((x - y).abs() <= 1e-13 * y.abs(), "n={n} K={k} r={r} {policy:?} directed={directed}");
                }
            }
        }
    }
}

#[test]
fn bad_parameters_are_refused() {
    assert_eq!(Allocation::new(60, 5, 0, Contiguous).unwrap_err(), ShuffleError::Load { r: 0, servers: 5 });
    assert_eq!(Allocation::new(60, 5, 6, Contiguous).unwrap_err(), ShuffleError::Load { r: 6, servers: 5 });
    assert!(matches!(Allocation::new(100_000, 20, 10, Contiguous), Err(ShuffleError::TooMany { .. })));
    assert!(Allocation::new(3, 5, 1, Contiguous).unwrap_err().to_string().contains("fewer than"));
    let g = worked();
    let a = Allocation::new(6, 3, 2, Contiguous).unwrap();
    let mut node = ShuffleNode::new(&g, &a, 0, true);
    assert!(node.decode(0, 1, vec![0; 3]).unwrap_err().to_string().contains("expected 8"));
}

/// Creating the groups' communicators in rounds of disjoint groups: the order is a permutation
/// of the groups, and in a model where a creation takes one step once every member of its
/// group is at it (each server creating its groups in the order), it takes as many steps as
/// rounds: at K = 10, r = 4 and K = 15, r = 1 the least any order can (a server's C(K − 1, r)
/// groups), at K = 15, r = 5 2850 steps against lexicographic order's 4995 (every creation
/// there waits for the one before it).
#[test]
fn groups_are_created_in_rounds_of_disjoint_groups() {
    // each group's step: one after the last step of any of its members
    let steps = |k: usize, groups: &[Vec<usize>], order: &[usize]| {
        let mut ready = vec![0usize; k];
        for &g in order {
            let t = groups[g].iter().map(|&m| ready[m]).max().unwrap() + 1;
            groups[g].iter().for_each(|&m| ready[m] = t);
        }
        ready.into_iter().max().unwrap_or(0)
    };
    for (k, r, rounds, lexicographic) in
        [(10, 4, 126, 251), (15, 1, 15, 27), (15, 4, 1526, 2982), (15, 5, 2850, 4995), (5, 2, 10, 10)]
    {
        let a = Allocation::new(30_030, k, r, Contiguous).unwrap();
        let (groups, order) = (a.groups(), a.creation_order());
        let mut sorted = order.clone();
        sorted.sort_unstable();
        assert_eq!(sorted, (0..groups.len()).collect::<Vec<_>>(), "K = {k}, r = {r}: a permutation");
        let lex: Vec<usize> = (0..groups.len()).collect();
        assert_eq!(steps(k, &groups, &lex), lexicographic, "K = {k}, r = {r}");
        assert_eq!(steps(k, &groups, &order), rounds, "K = {k}, r = {r}");
    }
    // r = K: no groups
    assert!(Allocation::new(12, 4, 4, Contiguous).unwrap().creation_order().is_empty());
}
