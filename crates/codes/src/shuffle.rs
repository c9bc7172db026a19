//! Coded graph shuffling for PageRank (thesis chapter 2; engineering note
//! `seed-004-ch2-coded-pagerank.md`): the allocation A_C of vertices to K servers with
//! computation load r, the communication loads it gives (uncoded and coded), and one server's
//! part of an iteration — Map, the XOR-coded Shuffle over the C(K, r+1) multicast groups,
//! Reduce — with no MPI: the engine moves the bytes these functions produce.
//!
//! Conventions (0-based): servers `0..K`, vertices `0..n`; a value v_{i,j} = Π(j)/deg⁺(j) is
//! produced by the Mappers of j for every out-neighbour i of j and consumed by i's Reducer.
//! Rows are serialised as little-endian f64 in the canonical order (mapper j ascending, then
//! reducer i ascending), cut into r byte segments of ⌈8z/r⌉ bytes (the last one shorter) and
//! XORed, so decoding is bit-exact (note §2.5).

use std::collections::HashMap;
use std::ops::Range;

use serde::{Deserialize, Serialize};

use crate::combin::{binomial, combinations};

/// More batches or multicast groups than this are refused: each rank holds one communicator per
/// group it belongs to, C(K−1, r) of them, and MPI libraries run out of them in the thousands
/// (note §5.2: MPICH-family pools of 2048–4096). Open MPI 4.1.4 ran the thesis's largest setting,
/// K = 15 and r = 5 (5005 groups, 2002 communicators a rank); other libraries may run out
/// sooner, at the run's setup.
pub const MAX_SUBSETS: u64 = 10_000;

/// Why an allocation cannot be built or a message cannot be decoded.
#[derive(Clone, Debug, PartialEq, thiserror::Error)]
pub enum ShuffleError {
    /// r outside 1..=K, or K = 0.
    #[error("r = {r} must be between 1 and the number of servers K = {servers}")]
    Load {
        /// r
        r: usize,
        /// K
        servers: usize,
    },
    /// Too many batches or groups.
    #[error("C({servers}, {k}) = {count} {what} is more than {max}; use fewer servers or another r")]
    TooMany {
        /// K
        servers: usize,
        /// subset size
        k: usize,
        /// the binomial
        count: u64,
        /// "batches" or "multicast groups"
        what: &'static str,
        /// the limit
        max: u64,
    },
    /// Fewer vertices than servers.
    #[error("the graph has {n} vertices, fewer than the K = {servers} servers (every server reduces n/K of them)")]
    Small {
        /// n
        n: usize,
        /// K
        servers: usize,
    },
    /// A message of the wrong length.
    #[error("multicast group {group}: {got} bytes from server {sender}, expected {want}")]
    Length {
        /// group index
        group: usize,
        /// sender
        sender: usize,
        /// received
        got: usize,
        /// expected
        want: usize,
    },
}

/// A graph as compressed sparse rows in both directions. Vertex j sends a value to each of its
/// out-neighbours (`targets(j)`); vertex i's Reducer sums the values of its in-neighbours
/// (`sources(i)`). An undirected edge {a, b} is both a→b and b→a. Duplicate edges count once;
/// a self-loop is one edge i→i (i sends a value to itself).
///
/// A graph may be kept in part ([`GraphBuilder::keeping`]): a server needs the out-lists of the
/// vertices it Maps and the in-lists of those it Reduces, not the whole graph; it still knows
/// which vertices send nothing (the dangling mass) and the whole graph's fingerprint.
#[derive(Clone, Debug, PartialEq)]
pub struct Graph {
    n: usize,
    out_off: Vec<usize>,
    out: Vec<u32>,
    in_off: Vec<usize>,
    inn: Vec<u32>,
    /// Whether each vertex has an out-edge in the whole graph.
    sends: Vec<bool>,
    /// FNV-1a over n and the whole graph's edges in the order they were given.
    print: u64,
}

/// Which vertices' lists a [`GraphBuilder`] keeps.
type Keep = Box<dyn Fn(u32) -> bool>;

/// A [`Graph`] fed one edge at a time, keeping only the lists it is asked to keep.
pub struct GraphBuilder {
    n: usize,
    directed: bool,
    keep_out: Keep,
    keep_in: Keep,
    fwd: Vec<(u32, u32)>,
    back: Vec<(u32, u32)>,
    sends: Vec<bool>,
    print: u64,
}

impl GraphBuilder {
    /// A builder of the whole graph on `0..n` (edges a→b, both ways unless `directed`).
    pub fn new(n: usize, directed: bool) -> Self {
        Self::keeping(n, directed, Box::new(|_| true), Box::new(|_| true))
    }

    /// A builder keeping the out-lists of the vertices `keep_out` accepts and the in-lists of
    /// those `keep_in` accepts.
    pub fn keeping(n: usize, directed: bool, keep_out: Keep, keep_in: Keep) -> Self {
        let print = fnv(0xcbf2_9ce4_8422_2325, n as u64);
        GraphBuilder { n, directed, keep_out, keep_in, fwd: vec![], back: vec![], sends: vec![false; n], print }
    }

    /// The edge a→b (and b→a unless directed). Panics if an endpoint is not below n (readers
    /// check ids first).
    pub fn add(&mut self, a: u32, b: u32) {
        assert!((a as usize) < self.n && (b as usize) < self.n, "edge endpoints must be below n");
        self.print = fnv(fnv(self.print, a as u64), b as u64);
        self.direct(a, b);
        if !self.directed && a != b {
            self.direct(b, a);
        }
    }

    fn direct(&mut self, a: u32, b: u32) {
        self.sends[a as usize] = true;
        if (self.keep_out)(a) {
            self.fwd.push((a, b));
        }
        if (self.keep_in)(b) {
            self.back.push((b, a));
        }
    }

    /// The graph.
    pub fn finish(mut self) -> Graph {
        let (out_off, out) = csr(self.n, &mut self.fwd);
        let (in_off, inn) = csr(self.n, &mut self.back);
        Graph { n: self.n, out_off, out, in_off, inn, sends: self.sends, print: self.print }
    }
}

fn fnv(mut h: u64, x: u64) -> u64 {
    for b in x.to_le_bytes() {
        h = (h ^ b as u64).wrapping_mul(0x0100_0000_01b3);
    }
    h
}

fn csr(n: usize, pairs: &mut [(u32, u32)]) -> (Vec<usize>, Vec<u32>) {
    pairs.sort_unstable();
    let mut off = vec![0usize; n + 1];
    let mut adj = Vec::with_capacity(pairs.len());
    let mut last = None;
    for &(a, b) in pairs.iter() {
        if last == Some((a, b)) {
            continue;
        }
        last = Some((a, b));
        off[a as usize + 1] += 1;
        adj.push(b);
    }
    for v in 0..n {
        off[v + 1] += off[v];
    }
    (off, adj)
}

impl Graph {
    /// A graph on vertices `0..n` from edges (a, b) (a sends to b; both ways unless `directed`).
    /// Panics if an endpoint is not below `n` (readers check ids first).
    pub fn new(n: usize, edges: &[(u32, u32)], directed: bool) -> Graph {
        let mut b = GraphBuilder::new(n, directed);
        edges.iter().for_each(|&(x, y)| b.add(x, y));
        b.finish()
    }

    /// Number of vertices n.
    pub fn vertices(&self) -> usize {
        self.n
    }

    /// Number of intermediate values per iteration (directed edges, ΣA for an undirected
    /// adjacency matrix A) among the out-lists kept (all of them in a whole graph).
    pub fn values(&self) -> usize {
        self.out.len()
    }

    /// Whether vertex j sends a value to some vertex (in the whole graph; false: dangling).
    pub fn sends(&self, j: usize) -> bool {
        self.sends[j]
    }

    /// The vertices j sends a value to, ascending.
    pub fn targets(&self, j: usize) -> &[u32] {
        &self.out[self.out_off[j]..self.out_off[j + 1]]
    }

    /// The position of j's first out-edge in the edge order (values are stored in it).
    pub fn first_edge(&self, j: usize) -> usize {
        self.out_off[j]
    }

    /// The vertices whose values i's Reducer sums, ascending.
    pub fn sources(&self, i: usize) -> &[u32] {
        &self.inn[self.in_off[i]..self.in_off[i + 1]]
    }

    /// A 64-bit fingerprint of the whole graph (FNV-1a over n and the edges in the order they
    /// were given): servers compare theirs before the run, since each derives message lengths
    /// from its own copy, which may be a part of the graph.
    pub fn fingerprint(&self) -> u64 {
        self.print
    }
}

/// The note's portable Erdős–Rényi generator `det_er(n, p, seed)` (§6, T6): one SplitMix64
/// draw per pair i ≤ j (self-loops) or i < j, i outer ascending, j inner ascending; an edge
/// iff the draw's uniform is below p. Returns undirected edges.
pub fn det_er(n: usize, p: f64, seed: u64, self_loops: bool) -> Vec<(u32, u32)> {
    let mut edges = Vec::new();
    det_er_each(n, p, seed, self_loops, |a, b| edges.push((a, b)));
    edges
}

/// [`det_er`], each edge given to `edge` as it is drawn (nothing is kept).
pub fn det_er_each(n: usize, p: f64, seed: u64, self_loops: bool, mut edge: impl FnMut(u32, u32)) {
    let mut state = seed;
    for i in 0..n {
        for j in (if self_loops { i } else { i + 1 })..n {
            let u = (crate::rng::splitmix64(&mut state) >> 11) as f64 * (1.0 / 9_007_199_254_740_992.0);
            if u < p {
                edge(i as u32, j as u32);
            }
        }
    }
}

/// Which server reduces vertex i.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum ReducePolicy {
    /// R_k = [⌊kn/K⌋, ⌊(k+1)n/K⌋) (the thesis's text).
    Contiguous,
    /// i mod K (the authors' code).
    #[serde(rename = "mod")]
    Modulo,
}

/// The allocation A_C (note §2.1): the n vertices, in id order, cut into C(K, r) contiguous
/// batches (sizes ⌊n/C⌋ or ⌈n/C⌉ when C does not divide n); batch b is Mapped by every server
/// of the b-th r-subset of the servers in lexicographic order; Reducers by [`ReducePolicy`].
#[derive(Clone, Debug)]
pub struct Allocation {
    n: usize,
    servers: usize,
    r: usize,
    subsets: Vec<Vec<usize>>,
    index: HashMap<Vec<usize>, usize>,
    bounds: Vec<usize>,
    reduce: ReducePolicy,
}

impl Allocation {
    /// A_C for n vertices, K = `servers`, load r.
    pub fn new(n: usize, servers: usize, r: usize, reduce: ReducePolicy) -> Result<Self, ShuffleError> {
        if servers == 0 || r == 0 || r > servers {
            return Err(ShuffleError::Load { r, servers });
        }
        for (k, what) in [(r, "batches"), (r + 1, "multicast groups")] {
            let count = binomial(servers, k);
            if count > MAX_SUBSETS {
                return Err(ShuffleError::TooMany { servers, k, count, what, max: MAX_SUBSETS });
            }
        }
        if n < servers {
            return Err(ShuffleError::Small { n, servers });
        }
        let subsets: Vec<Vec<usize>> = combinations(servers, r).collect();
        let c = subsets.len();
        let bounds = (0..=c).map(|b| b * n / c).collect();
        let index = subsets.iter().enumerate().map(|(b, s)| (s.clone(), b)).collect();
        Ok(Allocation { n, servers, r, subsets, index, bounds, reduce })
    }

    /// K.
    pub fn servers(&self) -> usize {
        self.servers
    }

    /// r.
    pub fn r(&self) -> usize {
        self.r
    }

    /// n.
    pub fn vertices(&self) -> usize {
        self.n
    }

    /// The Reduce policy.
    pub fn policy(&self) -> ReducePolicy {
        self.reduce
    }

    /// Number of batches C(K, r).
    pub fn batches(&self) -> usize {
        self.subsets.len()
    }

    /// The vertices of batch b.
    pub fn batch(&self, b: usize) -> Range<usize> {
        self.bounds[b]..self.bounds[b + 1]
    }

    /// The servers that Map batch b (ascending).
    pub fn subset(&self, b: usize) -> &[usize] {
        &self.subsets[b]
    }

    /// The batch Mapped by exactly the servers `subset` (ascending).
    pub fn batch_of_subset(&self, subset: &[usize]) -> usize {
        self.index[subset]
    }

    /// The batch of vertex v.
    pub fn batch_of(&self, v: usize) -> usize {
        self.bounds.partition_point(|&b| b <= v) - 1
    }

    /// Whether server k Maps vertex v.
    pub fn maps(&self, k: usize, v: usize) -> bool {
        self.subsets[self.batch_of(v)].contains(&k)
    }

    /// The batches server k Maps.
    pub fn mapped(&self, k: usize) -> Vec<usize> {
        (0..self.batches()).filter(|&b| self.subsets[b].contains(&k)).collect()
    }

    /// The server that Reduces vertex i.
    pub fn reducer(&self, i: usize) -> usize {
        match self.reduce {
            ReducePolicy::Modulo => i % self.servers,
            // the k with ⌊kn/K⌋ ≤ i < ⌊(k+1)n/K⌋
            ReducePolicy::Contiguous => ((i + 1) * self.servers - 1) / self.n,
        }
    }

    /// The vertices server k Reduces, ascending.
    pub fn reduced(&self, k: usize) -> Vec<u32> {
        match self.reduce {
            ReducePolicy::Modulo => (k..self.n).step_by(self.servers).map(|i| i as u32).collect(),
            ReducePolicy::Contiguous => {
                (k * self.n / self.servers..(k + 1) * self.n / self.servers).map(|i| i as u32).collect()
            }
        }
    }

    /// The multicast groups: every (r+1)-subset of the servers, lexicographic (none when r = K).
    pub fn groups(&self) -> Vec<Vec<usize>> {
        combinations(self.servers, self.r + 1).collect()
    }

    /// The order in which the servers create their groups' communicators (each group's
    /// lexicographic index, [`groups`](Self::groups)), in rounds of disjoint groups: each round
    /// takes, in lexicographic order, every group left whose members no group of the round has
    /// taken yet. Creating a communicator waits for every member, and a server creates its
    /// groups one after the other, so in lexicographic order consecutive groups share their
    /// first member and every creation waited for the one before it (C(K, r + 1) in a row);
    /// in rounds the groups of a round are created at once, by different servers. Every server
    /// creating its own groups in this order cannot deadlock (the first group not yet created
    /// has every member at it).
    ///
    /// ```
    /// # use outrun_codes::{ShuffleAllocation, ReducePolicy};
    /// // K = 4, r = 1: the six pairs in three rounds of two
    /// let a = ShuffleAllocation::new(12, 4, 1, ReducePolicy::Contiguous).unwrap();
    /// let groups = a.groups();
    /// let order: Vec<Vec<usize>> = a.creation_order().into_iter().map(|g| groups[g].clone()).collect();
    /// assert_eq!(order, [[0, 1], [2, 3], [0, 2], [1, 3], [0, 3], [1, 2]]);
    /// ```
    pub fn creation_order(&self) -> Vec<usize> {
        let (groups, size) = (self.groups(), self.r + 1);
        let mut left: Vec<usize> = (0..groups.len()).collect();
        let mut order = Vec::with_capacity(groups.len());
        let mut taken = vec![false; self.servers];
        while !left.is_empty() {
            taken.fill(false);
            let mut free = self.servers;
            left.retain(|&g| {
                let fits = free >= size && groups[g].iter().all(|&m| !taken[m]);
                if fits {
                    groups[g].iter().for_each(|&m| taken[m] = true);
                    free -= size;
                    order.push(g);
                }
                !fits
            });
        }
        order
    }

    /// z(k, b): the values from batch b to the Reducers of k (the row Z^k when k does not Map b).
    pub fn row_sizes(&self, g: &Graph) -> Vec<Vec<usize>> {
        let mut z = vec![vec![0usize; self.batches()]; self.servers];
        for j in 0..self.n {
            let b = self.batch_of(j);
            for &i in g.targets(j) {
                z[self.reducer(i as usize)][b] += 1;
            }
        }
        z
    }

    /// Vertex values every server needs after Reduce and does not Reduce itself (the
    /// redistribution of note §5.6: Π(j) to each Mapper of j that is not j's Reducer).
    pub fn redistribution(&self) -> usize {
        (0..self.n).map(|v| self.subsets[self.batch_of(v)].iter().filter(|&&k| k != self.reducer(v)).count()).sum()
    }
}

/// Bytes of segment t of a row of z values (⌈8z/r⌉ each, the last shorter, possibly empty).
pub fn segment_len(z: usize, r: usize, t: usize) -> usize {
    let len = (8 * z).div_ceil(r);
    (8 * z).saturating_sub(t * len).min(len)
}

/// The communication loads of one graph under one allocation (note §6's columns).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize)]
pub struct Loads {
    /// n.
    pub n: usize,
    /// r.
    pub r: usize,
    /// Intermediate values per iteration (ΣA).
    pub values: usize,
    /// U: values an uncoded shuffle sends (each missing value once).
    pub uncoded: usize,
    /// Cseg: coded segments of T/r bits (the thesis's accounting; L_C = Cseg/(r n²)).
    pub segments: usize,
    /// Cchunk: coded whole-value slots under the authors' chunking (⌊z/r⌋ per chunk, the rest
    /// in the last).
    pub chunks: usize,
    /// Cbytes: coded bytes with f64 byte segments (what the engine multicasts).
    pub coded_bytes: usize,
    /// Values the redistribution of the new ranks carries (not part of L).
    pub redistribution: usize,
}

impl Loads {
    /// L_UC = U / n².
    pub fn l_uncoded(&self) -> f64 {
        self.uncoded as f64 / (self.n as f64 * self.n as f64)
    }

    /// L_C = Cseg / (r n²).
    pub fn l_coded(&self) -> f64 {
        self.segments as f64 / (self.r as f64 * self.n as f64 * self.n as f64)
    }

    /// Bytes of the uncoded shuffle (8 per value).
    pub fn uncoded_bytes(&self) -> usize {
        8 * self.uncoded
    }
}

/// The loads of graph `g` under allocation `a` (note §2.2–2.3, eq. 2.9).
pub fn loads(g: &Graph, a: &Allocation) -> Loads {
    let z = a.row_sizes(g);
    let r = a.r();
    let uncoded = (0..a.servers())
        .map(|k| (0..a.batches()).filter(|&b| !a.subset(b).contains(&k)).map(|b| z[k][b]).sum::<usize>())
        .sum();
    let (mut segments, mut chunks, mut coded_bytes) = (0, 0, 0);
    if r < a.servers() {
        for s_set in a.groups() {
            for &s in &s_set {
                let (mut seg, mut chunk, mut bytes) = (0, 0, 0);
                for &k in s_set.iter().filter(|&&k| k != s) {
                    let f: Vec<usize> = s_set.iter().copied().filter(|&x| x != k).collect();
                    let zk = z[k][a.batch_of_subset(&f)];
                    let t = f.iter().position(|&x| x == s).expect("s is in S minus k");
                    seg = seg.max(zk);
                    let q = zk / r;
                    chunk = chunk.max(if t + 1 < r { q } else { zk - (r - 1) * q });
                    bytes = bytes.max(segment_len(zk, r, t));
                }
                segments += seg;
                chunks += chunk;
                coded_bytes += bytes;
            }
        }
    }
    Loads {
        n: a.vertices(),
        r,
        values: g.values(),
        uncoded,
        segments,
        chunks,
        coded_bytes,
        redistribution: a.redistribution(),
    }
}

/// What happens to dangling vertices (no out-edge): their rank mass is lost (`Leak`, the
/// thesis's formula) or spread uniformly over every vertex (`Uniform`, as networkx and most
/// PageRank implementations do).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum Dangling {
    /// Π_new(i) = (1−α)/n + α·Σ_j Π(j)/deg⁺(j).
    Leak,
    /// Π_new(i) = (1−α)/n + α·(Σ_j Π(j)/deg⁺(j) + m/n), m the dangling vertices' total rank.
    Uniform,
}

/// The PageRank update of one vertex from the sum of its incoming values (`sum`, added in
/// source order), the damping α, n, and the dangling mass m (ignored by `Leak`). Every
/// implementation in the project uses this expression, so results agree to the bit.
#[inline]
pub fn pagerank_update(sum: f64, damping: f64, n: usize, dangling: Dangling, mass: f64) -> f64 {
    let teleport = (1.0 - damping) / n as f64;
    match dangling {
        Dangling::Leak => teleport + damping * sum,
        Dangling::Uniform => teleport + damping * (sum + mass / n as f64),
    }
}

/// The rank mass of the dangling vertices of `g` (summed in id order).
pub fn dangling_mass(g: &Graph, pi: &[f64]) -> f64 {
    (0..g.vertices()).filter(|&j| !g.sends(j)).map(|j| pi[j]).sum()
}

/// One step of a transfer, in the order every server walks them: multicast groups in
/// lexicographic order, senders ascending within a group (so blocking collectives on the
/// groups' communicators cannot deadlock: the earliest unfinished turn always has all its
/// members on their way to it).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Turn {
    /// Index of the group among this server's groups.
    pub group: usize,
    /// The sending server (a member of the group).
    pub sender: usize,
}

/// A row of one group at one server: its entries' out-edge indices (a row this server Maps) or
/// the slots its decoded values go to (this server's own row), with the segment each sender
/// carries.
#[derive(Clone, Debug)]
struct Row {
    /// The server that Reduces the row.
    owner: usize,
    /// The row's other members, ascending (S \ {owner}): member t carries segment t.
    carriers: Vec<usize>,
    /// Out-edge index of each entry (rows of other members), or the in-slot of each entry
    /// (the own row).
    entries: Vec<u32>,
}

impl Row {
    fn segment_of(&self, sender: usize) -> usize {
        self.carriers.iter().position(|&c| c == sender).expect("the sender carries this row")
    }
}

/// One multicast group as one server sees it.
#[derive(Clone, Debug)]
struct GroupTables {
    /// The group's index among all groups (lexicographic).
    id: usize,
    /// Members, ascending.
    members: Vec<usize>,
    /// Rows of the other members (this server Maps their batches), by member order.
    rows: Vec<Row>,
    /// This server's row (the values it needs from this group).
    own: Row,
}

/// One server's part of a PageRank iteration: what it Maps, what it sends in each multicast
/// group (coded: one XOR of segments per group; uncoded: each segment unicast to its owner),
/// how it decodes what it receives, and what it Reduces. Built once per run; the byte buffers
/// it returns are what the engine transfers.
#[derive(Clone, Debug)]
pub struct ShuffleNode {
    me: usize,
    r: usize,
    n: usize,
    coded: bool,
    /// Mapped vertices, ascending.
    mapped: Vec<u32>,
    /// Reduced vertices, ascending.
    reduced: Vec<u32>,
    /// In-slots of each reduced vertex: `slot_off[x]..slot_off[x+1]`, sources ascending.
    slot_off: Vec<usize>,
    /// Slots this server fills from its own Map: (slot, out-edge index).
    local: Vec<(u32, u32)>,
    groups: Vec<GroupTables>,
    /// Out-edge values of the Mapped vertices (the Map's output).
    values: Vec<f64>,
    /// Incoming values of the reduced vertices, by slot.
    slots: Vec<f64>,
    /// Decoded bytes of each group's own row.
    own_bytes: Vec<Vec<u8>>,
}

/// Where the edge j→i sits among j's out-edges.
fn edge_index(g: &Graph, j: usize, i: u32) -> u32 {
    let t = g.targets(j);
    (g.first_edge(j) + t.binary_search(&i).expect("i is a target of j")) as u32
}

impl ShuffleNode {
    /// Server `me`'s tables for graph `g` under allocation `a`; `coded` chooses the coded
    /// shuffle (else each segment goes uncoded to its owner, the same bytes a value at a time).
    pub fn new(g: &Graph, a: &Allocation, me: usize, coded: bool) -> Self {
        let r = a.r();
        let mapped: Vec<u32> = a.mapped(me).into_iter().flat_map(|b| a.batch(b)).map(|v| v as u32).collect();
        let reduced = a.reduced(me);
        let mut slot_off = vec![0usize];
        for &i in &reduced {
            slot_off.push(slot_off.last().unwrap() + g.sources(i as usize).len());
        }
        let position: HashMap<u32, usize> = reduced.iter().enumerate().map(|(x, &i)| (i, x)).collect();
        let slot = |i: u32, j: u32| -> u32 {
            let x = position[&i];
            (slot_off[x] + g.sources(i as usize).binary_search(&j).expect("j is a source of i")) as u32
        };
        let mut local = Vec::new();
        for &i in &reduced {
            for &j in g.sources(i as usize) {
                if a.maps(me, j as usize) {
                    local.push((slot(i, j), edge_index(g, j as usize, i)));
                }
            }
        }
        // the row of `owner` in group S: (i, j) with j in the batch of S \ {owner}, i a target
        // of j reduced by owner; mapper j ascending, then reducer i ascending
        let row_pairs = |members: &[usize], owner: usize| -> (Vec<usize>, Vec<(u32, u32)>) {
            let carriers: Vec<usize> = members.iter().copied().filter(|&x| x != owner).collect();
            let b = a.batch_of_subset(&carriers);
            let mut pairs = Vec::new();
            for j in a.batch(b) {
                for &i in g.targets(j) {
                    if a.reducer(i as usize) == owner {
                        pairs.push((i, j as u32));
                    }
                }
            }
            (carriers, pairs)
        };
        // this server's own row, from the in-lists of its reduced vertices (it does not Map the
        // batch, so it may not hold those vertices' out-lists), in the same order
        // (its in-edges bucketed by the source's batch once: each group's row is one batch)
        let mut by_batch: HashMap<usize, Vec<(u32, u32)>> = HashMap::new();
        for &i in &reduced {
            for &j in g.sources(i as usize) {
                by_batch.entry(a.batch_of(j as usize)).or_default().push((i, j));
            }
        }
        by_batch.values_mut().for_each(|pairs| pairs.sort_unstable_by_key(|&(i, j)| (j, i)));
        let own_pairs = |members: &[usize]| -> (Vec<usize>, Vec<(u32, u32)>) {
            let carriers: Vec<usize> = members.iter().copied().filter(|&x| x != me).collect();
            let pairs = by_batch.get(&a.batch_of_subset(&carriers)).cloned().unwrap_or_default();
            (carriers, pairs)
        };
        let mut groups = Vec::new();
        for (id, members) in a.groups().into_iter().enumerate() {
            if !members.contains(&me) {
                continue;
            }
            let mut rows = Vec::new();
            let mut own = None;
            for &k in &members {
                if k == me {
                    let (carriers, pairs) = own_pairs(&members);
                    own = Some(Row { owner: k, carriers, entries: pairs.iter().map(|&(i, j)| slot(i, j)).collect() });
                } else {
                    let (carriers, pairs) = row_pairs(&members, k);
                    rows.push(Row {
                        owner: k,
                        carriers,
                        entries: pairs.iter().map(|&(i, j)| edge_index(g, j as usize, i)).collect(),
                    });
                }
            }
            groups.push(GroupTables { id, members, rows, own: own.expect("me is a member") });
        }
        let own_bytes = groups.iter().map(|gt| vec![0u8; 8 * gt.own.entries.len()]).collect();
        let slots = vec![0.0; *slot_off.last().unwrap()];
        ShuffleNode {
            me,
            r,
            n: g.vertices(),
            coded,
            mapped,
            reduced,
            slot_off,
            local,
            groups,
            values: vec![0.0; g.values()],
            slots,
            own_bytes,
        }
    }

    /// This server.
    pub fn server(&self) -> usize {
        self.me
    }

    /// The vertices this server Reduces, ascending.
    pub fn reduced(&self) -> &[u32] {
        &self.reduced
    }

    /// The vertices this server Maps, ascending.
    pub fn mapped(&self) -> &[u32] {
        &self.mapped
    }

    /// The members of this server's `group`-th group (ascending) and its global index.
    pub fn group(&self, group: usize) -> (&[usize], usize) {
        (&self.groups[group].members, self.groups[group].id)
    }

    /// Number of groups this server belongs to, C(K−1, r).
    pub fn group_count(&self) -> usize {
        self.groups.len()
    }

    /// The transfer's turns at this server, in the order every server walks them.
    pub fn turns(&self) -> Vec<Turn> {
        self.groups
            .iter()
            .enumerate()
            .flat_map(|(x, gt)| gt.members.iter().map(move |&s| Turn { group: x, sender: s }))
            .collect()
    }

    /// Write, once and as zeros, every value the iterations write in place: the Map's values
    /// of this server's out-edges and its Reducers' slots. A zeroed allocation's pages are
    /// mapped on their first write, so without this the first iteration's Map and decoding pay
    /// the page faults the later ones do not (the values of the other servers' out-edges are
    /// never written, and stay unmapped).
    pub fn touch(&mut self, g: &Graph) {
        for &j in &self.mapped {
            let (e0, len) = (g.first_edge(j as usize), g.targets(j as usize).len());
            self.values[e0..e0 + len].fill(std::hint::black_box(0.0));
        }
        self.slots.fill(std::hint::black_box(0.0));
    }

    /// Map: the value Π(j)/deg⁺(j) of every out-edge of every Mapped vertex j (`pi` has every
    /// vertex's rank; only the Mapped ones are read). Returns the values computed.
    pub fn map(&mut self, g: &Graph, pi: &[f64]) -> usize {
        let mut count = 0;
        for &j in &self.mapped {
            let j = j as usize;
            let t = g.targets(j);
            if t.is_empty() {
                continue;
            }
            let v = pi[j] / t.len() as f64;
            let e0 = g.first_edge(j);
            self.values[e0..e0 + t.len()].fill(v);
            count += t.len();
        }
        for &(slot, e) in &self.local {
            self.slots[slot as usize] = self.values[e as usize];
        }
        count
    }

    /// XOR segment `t` of the row whose entries are `entries` (values by out-edge) into `out`.
    fn xor_segment(&self, entries: &[u32], t: usize, out: &mut [u8]) {
        let z = entries.len();
        let len = (8 * z).div_ceil(self.r);
        let (start, end) = (t * len, ((t + 1) * len).min(8 * z));
        if start >= end {
            return;
        }
        // the entries' bytes, then one XOR over the slice (vectorised)
        let (x0, x1) = (start / 8, (end - 1) / 8);
        let mut bytes = Vec::with_capacity(8 * (x1 - x0 + 1));
        for &e in &entries[x0..=x1] {
            bytes.extend_from_slice(&self.values[e as usize].to_le_bytes());
        }
        for (o, b) in out.iter_mut().zip(&bytes[start - 8 * x0..end - 8 * x0]) {
            *o ^= b;
        }
    }

    /// The bytes this server sends in its `group`-th group: coded, one message to every other
    /// member (`[(None, bytes)]`); uncoded, each other member's segment to it (`[(Some(k),
    /// bytes)]`, possibly empty), in an order that makes each member last as often as any
    /// other: the members after this server cyclically, rotated by the sum of the members'
    /// numbers (sent in this order one after the other, the last of them waits longest; in
    /// members' order the highest-ranked was always last, and a slow sender's receivers waited
    /// in rank order).
    pub fn encode(&self, group: usize) -> Vec<(Option<usize>, Vec<u8>)> {
        let gt = &self.groups[group];
        if self.coded {
            let len = gt
                .rows
                .iter()
                .map(|row| segment_len(row.entries.len(), self.r, row.segment_of(self.me)))
                .max()
                .unwrap_or(0);
            let mut out = vec![0u8; len];
            for row in &gt.rows {
                self.xor_segment(&row.entries, row.segment_of(self.me), &mut out);
            }
            vec![(None, out)]
        } else {
            // the first member after this server, moved on by the members' sum
            let n = gt.rows.len();
            let first = gt.rows.partition_point(|row| row.owner < self.me) + gt.members.iter().sum::<usize>();
            (0..n)
                .map(|i| {
                    let row = &gt.rows[(first + i) % n];
                    let t = row.segment_of(self.me);
                    let mut out = vec![0u8; segment_len(row.entries.len(), self.r, t)];
                    self.xor_segment(&row.entries, t, &mut out);
                    (Some(row.owner), out)
                })
                .collect()
        }
    }

    /// The length of the message `sender` sends this server in its `group`-th group (coded:
    /// the longest segment the sender carries; uncoded: this server's segment).
    pub fn expected_len(&self, group: usize, sender: usize) -> usize {
        let gt = &self.groups[group];
        let own = segment_len(gt.own.entries.len(), self.r, gt.own.segment_of(sender));
        if !self.coded {
            return own;
        }
        gt.rows
            .iter()
            .filter(|row| row.owner != sender)
            .map(|row| segment_len(row.entries.len(), self.r, row.segment_of(sender)))
            .fold(own, usize::max)
    }

    /// Decode the message `sender` sent in this server's `group`-th group: XOR out the segments
    /// of the other receivers' rows (this server Maps their batches) and keep its own segment.
    pub fn decode(&mut self, group: usize, sender: usize, mut msg: Vec<u8>) -> Result<(), ShuffleError> {
        let want = self.expected_len(group, sender);
        let gt = &self.groups[group];
        if msg.len() != want {
            return Err(ShuffleError::Length { group: gt.id, sender, got: msg.len(), want });
        }
        if self.coded {
            for row in gt.rows.iter().filter(|row| row.owner != sender) {
                self.xor_segment(&row.entries, row.segment_of(sender), &mut msg);
            }
        }
        let t = gt.own.segment_of(sender);
        let z = gt.own.entries.len();
        let len = (8 * z).div_ceil(self.r);
        let mine = segment_len(z, self.r, t);
        self.own_bytes[group][t * len..t * len + mine].copy_from_slice(&msg[..mine]);
        Ok(())
    }

    /// Place every group's decoded row into the Reduce slots (after every sender was decoded).
    pub fn unpack(&mut self) {
        for (gt, bytes) in self.groups.iter().zip(&self.own_bytes) {
            for (x, &slot) in gt.own.entries.iter().enumerate() {
                let v = f64::from_le_bytes(bytes[8 * x..8 * x + 8].try_into().expect("8 bytes"));
                self.slots[slot as usize] = v;
            }
        }
    }

    /// Reduce: the new rank of every reduced vertex (in `reduced()` order), summing its incoming
    /// values in source order.
    pub fn reduce(&self, damping: f64, dangling: Dangling, mass: f64) -> Vec<f64> {
        (0..self.reduced.len())
            .map(|x| {
                let sum: f64 = self.slots[self.slot_off[x]..self.slot_off[x + 1]].iter().sum();
                pagerank_update(sum, damping, self.n, dangling, mass)
            })
            .collect()
    }
}

#[cfg(test)]
mod tests;
