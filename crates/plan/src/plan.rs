//! The execution plan: pure data computed from a config, executed by the MPI engine and by the
//! simulator without further decisions.
//!
//! One type describes every scheme: a [`Pattern`] (who talks to whom) and one [`Node`] per MPI
//! rank with the parts it computes (points and coefficients), its parent and children, its
//! [`Rule`] (for nodes with children: what they wait for and how they combine) and its
//! [`Encoding`] (what it sends). A master–worker scheme is a tree of depth 1; CodedReduce is a
//! deeper tree; ring schemes have no tree edges and use [`Pattern::Ring`].

use outrun_codes::{
    AgcCode, ClusterMatrix, GradientCode, LinearCode, LinearKind, LinearProfile, RowCode, RowCodeKind, Screening,
};
use serde::{Deserialize, Serialize};

use crate::alloc::{fmt_coef, WeightedSet};
use crate::parity::Parity;
use crate::rules::{Encoding, Hier, Rule};
use crate::settings::{JobSpec, NetworkSpec, RunSpec};
use crate::stragglers::StragglerModel;
use outrun_config::{ColumnOrder, DataOrder, JobConfig, Ssi};
use outrun_config::{RingAlgorithm, Upload};

/// One MPI rank's part of the plan.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct Node {
    /// MPI rank.
    pub rank: usize,
    /// Worker id, 1-based (None for the master): the key of straggler injection.
    pub worker: Option<usize>,
    /// Parent rank (None for the master and ring ranks; a hierarchical client's: the helper
    /// that relays its model, though it sends to every helper).
    pub parent: Option<usize>,
    /// Children ranks, in order (index = the child's row of the code).
    pub children: Vec<usize>,
    /// The parts this node computes, one vector each: points with coefficients.
    pub parts: Vec<WeightedSet>,
    /// For nodes with children: what they wait for and how they combine.
    pub rule: Option<Rule>,
    /// How the node forms its message(s).
    #[serde(default)]
    pub send: Encoding,
    /// The node computes on a sample of this fraction of each part's rows, stratified by label
    /// and drawn by the job from `run.seed` (a federated server's copies of its clients' data).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub sample: Option<f64>,
}

/// Rows of a sample of `fraction` of `rows` rows: round(fraction·rows), at least one.
pub fn sample_size(rows: usize, fraction: f64) -> usize {
    ((fraction * rows as f64).round() as usize).clamp(1.min(rows), rows)
}

impl Node {
    /// Rank `rank` with nothing yet: no worker id, no parent, children or parts, no rule, the
    /// plain encoding, no sampling. Every builder starts here, so a new field is set in one place.
    pub fn new(rank: usize) -> Self {
        Node {
            rank,
            worker: None,
            parent: None,
            children: vec![],
            parts: vec![],
            rule: None,
            send: Encoding::Plain,
            sample: None,
        }
    }

    /// Worker `worker` (1-based id) at rank `rank`, computing `parts`, below `parent` (None in a
    /// pattern without parents: a ring, the shuffle).
    pub fn worker(rank: usize, worker: usize, parent: Option<usize>, parts: Vec<WeightedSet>) -> Self {
        Node { worker: Some(worker), parent, parts, ..Node::new(rank) }
    }

    /// This node below `parent`.
    pub fn below(mut self, parent: Option<usize>) -> Self {
        self.parent = parent;
        self
    }

    /// This node as the parent of `children`, waiting for them by `rule`.
    pub fn over(mut self, children: Vec<usize>, rule: Rule) -> Self {
        self.children = children;
        self.rule = Some(rule);
        self
    }

    /// This node as the parent of `children` with no rule of its own (a helper of the
    /// hierarchical pattern relays the model; what it sums its master instructs).
    pub fn relaying(mut self, children: Vec<usize>) -> Self {
        self.children = children;
        self
    }

    /// This node sending by `send`.
    pub fn sending(mut self, send: Encoding) -> Self {
        self.send = send;
        self
    }

    /// This node computing on a sample of `fraction` of each part's rows.
    pub fn sampled(mut self, fraction: f64) -> Self {
        self.sample = Some(fraction);
        self
    }

    /// Number of points this node computes on (its load).
    pub fn load(&self) -> usize {
        match self.sample {
            Some(f) => self.parts.iter().map(|p| sample_size(p.len(), f)).sum(),
            None => self.parts.iter().map(WeightedSet::len).sum(),
        }
    }

    /// Every point of every part with its coefficient (0-based points).
    pub fn points(&self) -> impl Iterator<Item = (usize, f64)> + '_ {
        self.parts.iter().flat_map(|p| p.points())
    }

    /// A mat-vec worker's coded rows (its one run of rows; None for the master, or a worker a
    /// budget left without rows).
    pub fn coded_rows(&self) -> Option<std::ops::Range<usize>> {
        self.parts.first().and_then(|p| p.segments.first()).map(|s| s.start..s.start + s.len)
    }
}

/// Who talks to whom.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case", tag = "kind")]
pub enum Pattern {
    /// Collect tree: an (n, L)-regular tree rooted at rank 0 (a star is (N, 1)); the model flows
    /// down, results flow up and are combined by every parent.
    Tree {
        /// Children per parent.
        n: usize,
        /// Layers of workers below the master.
        layers: usize,
    },
    /// Ring over all ranks, in rank order: every rank all-reduces its result and applies the
    /// update. `collective`: use the MPI library's all-reduce instead of our ring.
    Ring {
        /// Use `MPI_Allreduce`.
        collective: bool,
        /// Our all-reduce's schedule (when not `collective`).
        #[serde(default)]
        steps: RingAlgorithm,
    },
    /// Map/Shuffle/Reduce among K servers (PageRank): every server Maps the batches of the
    /// r-subsets it belongs to and exchanges intermediate values in the C(K, r+1) multicast
    /// groups (coded: one XOR per member and group), then all-gathers the new ranks. No master.
    Shuffle {
        /// Servers K.
        servers: usize,
        /// Computation load r.
        r: usize,
        /// Coded multicasts (else uncoded segments to their owners).
        coded: bool,
        /// Which server Reduces a vertex.
        reduce: outrun_codes::ReducePolicy,
        /// All transfers at once, or one turn at a time.
        #[serde(default)]
        schedule: outrun_config::ShuffleSchedule,
        /// Coded: a group's message by broadcast on its communicator, or by unicasts.
        #[serde(default)]
        multicast: outrun_config::Multicast,
    },
    /// Hierarchical aggregation: rank 0 the master, ranks 1..=`helpers` the helpers, then the
    /// clients; every client sends to every helper (links that may fail), helpers report what
    /// arrived, the master instructs, helpers upload sums (the plan's [`crate::rules::Hier`]).
    Hier {
        /// Clients n_e.
        clients: usize,
        /// Helpers n_h.
        helpers: usize,
    },
}

/// The code of a coded matrix–vector product: `n` coded rows over `r` source rows.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct RowsSpec {
    /// The code.
    pub kind: RowCodeKind,
    /// Source rows r.
    pub r: usize,
    /// Coded rows (Σ ℓ_i).
    pub n: usize,
    /// Seed of its coefficients.
    pub seed: u64,
}

impl RowsSpec {
    /// The code itself (every rank builds the same from the seed).
    pub fn build(&self) -> RowCode {
        RowCode::new(self.kind, self.r, self.n, self.seed)
    }
}

/// A code used by the plan's rules and encodings.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(tag = "family", rename_all = "kebab-case")]
pub enum PlanCode {
    /// A gradient code B (n × n) of a sibling group (gradient coding, CodedReduce).
    Gradient {
        /// The code.
        code: GradientCode,
        /// Worst-case decoding quality (random constructions).
        screening: Option<Screening>,
        /// Random draws tried.
        draws: usize,
    },
    /// A linear [N, K] code of a worker group (communication-efficient gradient coding).
    Linear {
        /// The code.
        code: LinearCode,
        /// Decodability and conditioning with s positions missing.
        profile: LinearProfile,
        /// The most missing positions (≤ s) with which every set checked decodes.
        tolerates: usize,
    },
    /// An adaptive gradient code (AGC, one per G-AGC group).
    Adaptive {
        /// The code.
        code: AgcCode,
    },
    /// A coded matrix–vector product's code and load allocation (HCMM and its baselines).
    Rows {
        /// The code.
        code: RowsSpec,
        /// The allocation's name (`HCMM`, `uniform uncoded`, ...).
        allocation: String,
        /// Rows the allocation is made for (r; r(1 + overhead) for LT codes).
        target: usize,
        /// Rows per worker ℓ_i.
        loads: Vec<usize>,
        /// HCMM's λ_i (empty for the baselines; 0 for a machine a budget leaves unused).
        lambdas: Vec<f64>,
        /// HCMM's τ* = r/s, seconds.
        tau: Option<f64>,
        /// Uniform coded: the k chosen (the master needs the rows of k workers).
        k: Option<usize>,
        /// Expected completion time E\[T\] of the model (None without per-worker laws).
        expected: Option<f64>,
        /// The same by Monte Carlo (mean, standard error; 20 000 draws): a check of the
        /// evaluator.
        #[serde(default)]
        expected_mc: Option<(f64, f64)>,
        /// Workers the allocation can lose in the worst case (largest loads first) and still
        /// hold `target` rows.
        tolerates: usize,
    },
    /// Clustered gradient coding (GC-SC, GC-DC): P clusters of ℓ workers, each running the
    /// ℓ-worker gradient code `code` over its data block.
    Clusters {
        /// A_cluster: which workers may serve which cluster (GC-SC: n = 1).
        matrix: ClusterMatrix,
        /// Computation load r (mini-batches per codeword).
        r: usize,
        /// Index of the ℓ × ℓ gradient code (a [`PlanCode::Gradient`]) every cluster uses.
        code: usize,
        /// Re-formed every iteration (GC-DC) or fixed (GC-SC: the first ℓ rows of A_cluster).
        dynamic: bool,
        /// The straggler states the master clusters with.
        ssi: Ssi,
        /// Algorithm 1's ⌈|G|/P⌉-round cap.
        capped: bool,
        /// Column order (index, or believed rate).
        order: ColumnOrder,
        /// Straggler threshold on the believed rate (None: the injected slow state).
        tau: Option<f64>,
    },
}

impl PlanCode {
    /// The gradient code (rules that decode with one).
    pub fn gradient(&self) -> &GradientCode {
        match self {
            PlanCode::Gradient { code, .. } => code,
            other => panic!("expected a gradient code, the plan has {other:?}"),
        }
    }

    /// One line for `outrun plan`.
    fn describe(&self) -> String {
        match self {
            PlanCode::Gradient { code: c, screening, draws } => {
                let scr = match screening {
                    Some(s) => format!(
                        "; best of {draws} draws: worst |a| = {:.3}, worst residual {:.1e} over {} {} survivor sets",
                        s.worst_abs_coef,
                        s.worst_residual,
                        if s.exhaustive { "all" } else { "a sample of" },
                        s.sets_checked
                    ),
                    None => String::new(),
                };
                format!("code B: {}×{} {:?}, s = {}{scr}", c.n, c.n, c.kind, c.s).replace("Cyclic", "cyclic").replace("Fractional", "fractional repetition").replace("Identity", "identity")
            }
            PlanCode::Linear { code: c, profile: p, tolerates } => format!(
                "group code: [N = {}, K = {}] {:?} (generator K × N{}); with s = {} of its workers missing: {} of {} {} sets of {} decode{}; every set checked decodes with up to {tolerates} missing",
                c.len,
                c.dim,
                c.kind,
                if c.systematic.is_empty() { String::new() } else { format!(", systematic on {} positions", c.systematic.len()) },
                p.erased,
                p.decodable,
                if p.exhaustive { "all" } else { "a sample of" },
                p.sets,
                c.len - p.erased,
                match c.kind {
                    LinearKind::Ldpc if p.decodable < p.sets => " by peeling (otherwise the group waits for more of its workers)".to_string(),
                    LinearKind::Ldpc => " by peeling".to_string(),
                    _ if p.worst_cond > 0.0 => format!(", worst κ(G_T) {:.1e}", p.worst_cond),
                    _ => String::new(),
                }
            )
            .replace("Gaussian", "Gaussian MDS")
            .replace("Systematic", "systematic MDS (Cauchy)")
            .replace("Repetition", "repetition")
            .replace("Ldpc", "(3,6)-regular LDPC, peeling"),
            PlanCode::Clusters { matrix: m, r, dynamic, ssi, capped, order, tau, .. } => {
                let (p, ell) = (m.clusters, m.ell());
                let head = format!("clusters: P = {p} of ℓ = {ell} workers, computation load r = {r}; each cluster decodes from any {} of its members (tolerates {} stragglers per cluster)", ell - r + 1, r - 1);
                if !dynamic {
                    return format!("{head}; static partition (GC-SC): {}", fmt_sets(&m.static_partition().sets()));
                }
                format!(
                    "{head}; dynamic (GC-DC): every worker stores the blocks of n = {} clusters (n·ℓ = {} mini-batches) and computes the r of its assigned codeword; the master re-forms the clusters every iteration (Algorithm 1, {}, columns by {}) from {}{}; Lemma 1 (one swap always resolves a conflict) {}; A_cluster columns: {}",
                    m.n,
                    m.n * ell,
                    if *capped { "⌈|G|/P⌉-round cap" } else { "uncapped" },
                    if *order == ColumnOrder::Rate { "believed rate, fastest first" } else { "index" },
                    match ssi {
                        Ssi::Previous => "the previous iteration's injected straggler states (imperfect SSI)",
                        Ssi::Observed => "who had not answered when the previous iteration was decoded (observed)",
                        Ssi::Perfect => "the current iteration's states (PERFECT SSI: simulator only)",
                    },
                    tau.map_or(String::new(), |t| format!(", straggler = believed rate < τ = {t}")),
                    if m.lemma1() { "holds" } else { "does not hold: an augmenting-path fallback places the rare conflicts" },
                    fmt_sets(&(0..p).map(|c| m.column(c)).collect::<Vec<_>>())
                )
            }
            PlanCode::Rows { code, allocation, target, loads, lambdas, tau, k, expected, expected_mc, tolerates } => {
                let total: usize = loads.iter().sum();
                let how = match code.kind {
                    RowCodeKind::Identity => "uncoded: the master needs every row".to_string(),
                    RowCodeKind::Gaussian => format!("Gaussian MDS: the master decodes from any {} coded rows (one {0} × {0} LU solve per new set of responders)", code.r),
                    RowCodeKind::Systematic => format!("systematic MDS (identity + Gaussian parity): any {} coded rows; the systematic rows received are y's entries, only the missing ones are solved for", code.r),
                    RowCodeKind::Lt { c, delta } => format!("LT (robust soliton c = {c}, δ = {delta}), peeling decoder: the master stops when the rows received peel (about {target} rows)"),
                };
                let mut text = format!("rows: r = {} source rows, {total} coded rows (redundancy {:.3}); {how}", code.r, total as f64 / code.r as f64);
                text.push_str(&format!("\nallocation: {allocation} for {target} rows: loads ℓ_i = {loads:?}"));
                if !lambdas.is_empty() {
                    text.push_str(&format!("; λ_i = [{}]", lambdas.iter().map(|&l| if l > 0.0 { format!("{l:.4e}") } else { "unused".into() }).collect::<Vec<_>>().join(", ")));
                }
                if let Some(t) = tau {
                    text.push_str(&format!("; τ* = {t:.6} s"));
                }
                if let Some(k) = k {
                    text.push_str(&format!("; k = {k} (any {k} workers' rows suffice)"));
                }
                match expected {
                    Some(e) => {
                        text.push_str(&format!("; expected completion E[T] = {e:.6} s (DP over the rows received + adaptive quadrature)"));
                        if let Some((m, se)) = expected_mc {
                            text.push_str(&format!(", Monte Carlo {m:.6} ± {se:.6} s"));
                        }
                    }
                    None => text.push_str("; no per-worker laws (scheme.a/mu or stragglers.model = \"shifted-exp\"): no expected time"),
                }
                text.push_str(&format!("; loses up to {tolerates} worker(s) in the worst case"));
                text
            }
            PlanCode::Adaptive { code: c } if c.rounds < c.l => format!(
                "CGC code: n = {}, d = {} parts per worker, m = {} sub-vectors: one upload of 1/{} of a gradient, any {} of the n decode (s_max = {}); E chosen for stability: worst relative decode error {:.1e} over {} {} straggler sets, worst κ(E_F) {:.1e}, max|M| {:.1e}",
                c.n,
                c.d,
                c.l,
                c.l,
                c.n - c.tolerates(),
                c.tolerates(),
                c.worst_error,
                if c.exhaustive { "all" } else { "a sample of" },
                c.patterns_checked,
                c.worst_cond,
                c.max_m
            ),
            PlanCode::Adaptive { code: c } => format!(
                "AGC code: n = {}, d = {}, L = {}; rounds needed r_s = ⌈L/(d − s)⌉ for s = 0..{}: {} (each round 1/{} of a gradient); E chosen for stability: worst relative decode error {:.1e} over {} {} straggler sets, worst κ(Ê) {:.1e}, max|M| {:.1e}",
                c.n,
                c.d,
                c.l,
                c.d - 1,
                (0..c.d).map(|s| outrun_codes::rounds_needed(c.d, c.l, s).to_string()).collect::<Vec<_>>().join(", "),
                c.l,
                c.worst_error,
                if c.exhaustive { "all" } else { "a sample of" },
                c.patterns_checked,
                c.worst_cond,
                c.max_m
            ),
        }
    }
}

/// `{1,6,9} {2,7,10}` with 1-based workers.
fn fmt_sets(sets: &[Vec<usize>]) -> String {
    sets.iter()
        .map(|c| format!("{{{}}}", c.iter().map(|w| (w + 1).to_string()).collect::<Vec<_>>().join(",")))
        .collect::<Vec<_>>()
        .join(" ")
}

/// A complete plan: pure data, computed once from the config and broadcast.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct Plan {
    /// `scheme.kind`.
    pub scheme: String,
    /// One-line description of the scheme.
    pub title: String,
    /// MPI ranks.
    pub ranks: usize,
    /// Workers.
    pub workers: usize,
    /// Number of data points d.
    pub samples: usize,
    /// Stragglers tolerated (per parent for trees).
    pub s: usize,
    /// Who talks to whom.
    pub pattern: Pattern,
    /// One per rank.
    pub nodes: Vec<Node>,
    /// Codes referenced by the nodes' rules.
    pub codes: Vec<PlanCode>,
    /// The straggler model.
    pub stragglers: StragglerModel,
    /// Value faults (none by default).
    #[serde(default)]
    pub faults: crate::Faults,
    /// Link faults (none by default).
    #[serde(default)]
    pub links: crate::Links,
    /// When children's results cross the link (`engine.upload`; collect trees only).
    #[serde(default)]
    pub upload: Upload,
    /// The run: name, seed, iterations, deadline, output directory, polling.
    pub run: RunSpec,
    /// The job: what is computed, and the problem's size.
    pub job: JobSpec,
    /// The simulator's network model.
    pub network: NetworkSpec,
    /// What the scheme carries beyond its nodes and codes (CodedFedL's parity allocation, a
    /// hierarchical scheme's parameters).
    #[serde(default, skip_serializing_if = "SchemeData::is_none")]
    pub data: SchemeData,
}

/// What a scheme carries beyond its nodes and codes: one variant per scheme that needs more.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum SchemeData {
    /// Nothing more (most schemes).
    #[default]
    None,
    /// CodedFedL's parity data and allocation (`schemes/codedfedl.rs`): the clients encode their
    /// rows once, before the loop (the plan's prelude), and the server computes on the sum.
    Parity(Parity),
    /// A hierarchical scheme's parameters (its combinations: `outrun_proto::roles::hier`;
    /// [`Pattern::Hier`]).
    Hier(Hier),
}

impl SchemeData {
    fn is_none(&self) -> bool {
        *self == SchemeData::None
    }
}

impl Plan {
    /// CodedFedL's parity allocation, if the scheme is CodedFedL.
    pub fn parity(&self) -> Option<&Parity> {
        match &self.data {
            SchemeData::Parity(p) => Some(p),
            _ => None,
        }
    }

    /// Whether the run has a prelude: a one-time phase before the loop in which every worker
    /// sends the root a contribution the job computes, and the root's job gets their sum
    /// (CodedFedL's parity upload; `outrun_proto::PreludeNode`).
    pub fn prelude(&self) -> bool {
        self.parity().is_some()
    }

    /// A hierarchical scheme's parameters, if the pattern is hierarchical.
    pub fn hier(&self) -> Option<&Hier> {
        match &self.data {
            SchemeData::Hier(h) => Some(h),
            _ => None,
        }
    }

    /// The plan of a config's TOML text for a problem of `shape` (tests and examples: a run
    /// resolves its config's shape from its data first).
    pub fn from_toml(text: &str, shape: crate::Shape) -> Result<Plan, outrun_config::ConfigError> {
        crate::build(&outrun_config::parse(text, &[])?, shape)
    }

    /// The master's rank, if the scheme has one.
    pub fn master(&self) -> Option<usize> {
        matches!(self.pattern, Pattern::Tree { .. } | Pattern::Hier { .. }).then_some(0)
    }

    /// Depth of a rank in the tree (0 for the master and for ring ranks).
    pub fn depth(&self, rank: usize) -> usize {
        let mut d = 0;
        let mut r = rank;
        while let Some(p) = self.nodes[r].parent {
            d += 1;
            r = p;
        }
        d
    }

    /// Layers of workers below the master (0 for rings).
    pub fn layers(&self) -> usize {
        match self.pattern {
            Pattern::Tree { layers, .. } => layers,
            Pattern::Hier { .. } => 2,
            Pattern::Ring { .. } | Pattern::Shuffle { .. } => 0,
        }
    }

    /// Whether the master's result is the exact full gradient whenever every parent gets its
    /// `need` children (false only for ignore-stragglers with s > 0).
    pub fn exact_by_design(&self) -> bool {
        self.nodes.iter().all(|n| n.rule.as_ref().is_none_or(|r| r.exact_by_design(n.children.len())))
    }

    /// Whether `rank` starts iterations and applies their results: the root of a tree, every
    /// rank of a ring.
    pub fn delivers(&self, rank: usize) -> bool {
        match self.pattern {
            Pattern::Tree { .. } => rank == 0,
            Pattern::Ring { .. } => true,
            Pattern::Shuffle { .. } | Pattern::Hier { .. } => rank == 0,
        }
    }

    /// The rank that keeps the book (writes `iterations.csv` and the summary): the master, or
    /// rank 0 of a ring.
    pub fn log_rank(&self) -> usize {
        0
    }

    /// Settings that run, but slower than another choice would or likely to fail for the
    /// plan's own model of them, each in one line (what `outrun check`, `outrun plan` and
    /// `outrun simulate` print as warnings).
    pub fn cautions(&self) -> Vec<String> {
        let mut out = vec![];
        if let Pattern::Shuffle {
            coded: true,
            schedule: outrun_config::ShuffleSchedule::Turns,
            multicast: outrun_config::Multicast::Unicasts,
            ..
        } = self.pattern
        {
            out.push(
                "scheme.multicast = \"unicasts\" with scheme.shuffle = \"turns\": in its turn the sender's link carries all r copies of its coded message one after another, so a Shuffle takes longer than with \"broadcast\" (measured on the emulated cluster: docs/performance.md §9); unicasts pay where every transfer happens at once"
                    .into(),
            );
        }
        // a coded mat-vec's model of its workers' times against the bound on an iteration
        for code in &self.codes {
            if let PlanCode::Rows { allocation, expected: Some(e), .. } = code {
                if *e > self.run.deadline {
                    out.push(format!(
                        "{allocation} expects an iteration to take E[T] = {e:.4e} s under these laws, more than run.deadline = {} s: an iteration that takes that long fails the run; raise run.deadline, or check the laws' units (a_i in seconds per coded row, μ_i in coded rows per second)",
                        self.run.deadline
                    ));
                }
            }
        }
        out
    }

    /// Human-readable plan (what `outrun plan` prints).
    pub fn describe(&self) -> String {
        let mut o = String::new();
        let line = |o: &mut String, s: String| {
            o.push_str(&s);
            o.push('\n');
        };
        line(&mut o, format!("plan: {} — {}", self.scheme, self.title));
        if !self.job.label_names.is_empty() {
            let shown: Vec<String> =
                self.job.label_names.iter().take(20).enumerate().map(|(k, n)| format!("`{n}` → {k}")).collect();
            let more = self.job.label_names.len().saturating_sub(20);
            line(
                &mut o,
                format!(
                    "labels (data.labels = \"auto\"): {}{}",
                    shown.join(", "),
                    if more > 0 { format!(", … ({more} more in plan.json)") } else { String::new() }
                ),
            );
        }
        {
            use outrun_config::Idle;
            let poll = self.run.poll_us;
            // the exchanges whose ranks poll with a spin hint before they sleep (the engine's
            // lockstep waits)
            let lockstep = match self.pattern {
                Pattern::Ring { collective: false, .. } => Some("a ring's steps"),
                Pattern::Shuffle { .. } => Some("the shuffle"),
                _ => None,
            };
            let first = lockstep.map_or(String::new(), |what| {
                format!(" (in {what}, after polling with a spin hint for {} s)", Idle::LOCKSTEP_WINDOW.as_secs_f64())
            });
            let how = match self.run.idle {
                Idle::Auto => format!("a rank polls without pause where every rank on its machine has a core of its own, else sleeps up to {poll} µs between polls{first}; each rank's setup record says which"),
                Idle::Spin => "every rank polls without pause (a core each)".into(),
                Idle::Yield => "every rank polls and yields, never sleeps".into(),
                Idle::Sleep if lockstep.is_some() => format!("a rank sleeps up to {poll} µs between polls{first}"),
                Idle::Sleep => format!("a rank yields for 20 µs, then sleeps up to {poll} µs between polls"),
            };
            line(&mut o, format!("waiting (engine.idle = \"{}\"): {how}", self.run.idle.name()));
        }
        match self.pattern {
            Pattern::Tree { n, layers } => line(
                &mut o,
                format!(
                    "ranks: {} (rank 0 = master; ranks 1..{} = workers 1..{}); tree n = {n}, layers = {layers}; uploads {}",
                    self.ranks,
                    self.workers,
                    self.workers,
                    match self.upload {
                        Upload::Eager => "eager (every result is sent)",
                        Upload::Granted => "by grant (only results a parent needs are sent)",
                    }
                ),
            ),
            Pattern::Shuffle { servers, r, coded, reduce, schedule, multicast } => line(
                &mut o,
                format!(
                    "ranks: {} (rank k = server k, no master); each vertex Mapped by r = {r} of the K = {servers} servers ({} batches), Reducers {}; {} shuffle in {} multicast groups of r+1, {}{}",
                    self.ranks,
                    outrun_codes::binomial(servers, r),
                    if reduce == outrun_codes::ReducePolicy::Contiguous { "contiguous" } else { "i mod K" },
                    if coded { "XOR-coded" } else { "uncoded" },
                    if r < servers { outrun_codes::binomial(servers, r + 1) } else { 0 },
                    match schedule {
                        outrun_config::ShuffleSchedule::Parallel => "every transfer at once",
                        outrun_config::ShuffleSchedule::Turns => "one turn at a time (a barrier of all servers before each)",
                    },
                    match (coded, multicast) {
                        (false, _) => "; each segment sent point to point to its one member",
                        (true, outrun_config::Multicast::Broadcast) =>
                            "; a group's coded message by MPI_Ibcast on the group's communicator (created at setup)",
                        (true, outrun_config::Multicast::Unicasts) =>
                            "; a group's coded message by a point-to-point send to each other member (no communicators)",
                    },
                ),
            ),
            Pattern::Hier { clients, helpers } => {
                let h = self.hier().expect("a hierarchical plan has its scheme");
                let (c_hm, how) = h.expected_c_hm();
                line(
                    &mut o,
                    format!(
                        "ranks: {} (rank 0 = master; ranks 1..{helpers} = helpers 1..{helpers}; ranks {}..{} = clients 1..{clients}); θ goes master → helpers → clients (client c from helper (c − 1) mod n_h + 1); every client sends a slice to every helper, helpers report which arrived, the master tells each what to upload",
                        self.ranks,
                        helpers + 1,
                        helpers + clients
                    ),
                );
                line(
                    &mut o,
                    format!(
                        "loads (in units of the payload, padded to k·⌈len/k⌉): C_EH = n_h/k = {:.4}; expected C_HM with s = {} failed links per client = {c_hm:.6} ({how}); naive forwarding {clients}",
                        h.c_eh(),
                        h.s
                    ),
                );
            }
            Pattern::Ring { collective: mpi, steps } => line(
                &mut o,
                format!(
                    "ranks: {} (rank r = worker r+1, no master); {}",
                    self.ranks,
                    if mpi {
                        "MPI_Allreduce over all workers".to_string()
                    } else {
                        match steps {
                            RingAlgorithm::Ring => "ring all-reduce: reduce-scatter + all-gather, 2(N−1) steps".into(),
                            RingAlgorithm::RecursiveDoubling => "all-reduce by recursive doubling, log2 N steps of the whole vector (+2 if N is not a power of two)".into(),
                            RingAlgorithm::HalvingDoubling => "all-reduce by recursive halving + doubling, 2 log2 N steps (+2 if N is not a power of two)".into(),
                            RingAlgorithm::Auto => format!(
                                "all-reduce by vector size: recursive doubling up to {} KiB, halving + doubling up to {} KiB, the ring above",
                                RingAlgorithm::AUTO_DOUBLING_BYTES / 1024,
                                RingAlgorithm::AUTO_RING_BYTES / 1024
                            ),
                        }
                    }
                ),
            ),
        }
        let loads: Vec<usize> = self.nodes.iter().filter(|n| n.worker.is_some()).map(Node::load).collect();
        let (lmin, lmax) = (loads.iter().min().copied().unwrap_or(0), loads.iter().max().copied().unwrap_or(0));
        let matvec = self.codes.iter().any(|c| matches!(c, PlanCode::Rows { .. }));
        // the rows' order, which the allocation cuts (`data.order`)
        let data = match &self.job.config {
            JobConfig::Gd(g) => Some(&g.data),
            JobConfig::Fl(f) => Some(&f.train.data),
            _ => None,
        };
        let order = match data.map(|d| (d.order, d.shards)) {
            Some((DataOrder::ByLabel, _)) => "; rows sorted by label".to_string(),
            Some((DataOrder::Shuffle, _)) => format!("; rows in an order drawn from seed {}", self.run.seed),
            Some((DataOrder::Shards, Some(k))) => format!(
                "; rows sorted by label, cut into {k} shards of about {} rows, dealt in an order drawn from seed {}",
                self.samples / k.max(1),
                self.run.seed
            ),
            _ => String::new(),
        };
        line(
            &mut o,
            format!(
                "{}: {} = {} {}{order}; worker load {} (fraction {:.4} of {1}){}",
                if matvec { "matrix" } else { "data" },
                if matvec { "r" } else { "d" },
                self.samples,
                if matvec { "rows (the data column below lists each worker's coded rows)" } else { "points" },
                if lmin == lmax { format!("{lmin}") } else { format!("{lmin}..{lmax}") },
                lmax as f64 / self.samples.max(1) as f64,
                if self.nodes.iter().any(|n| matches!(n.send, Encoding::Clustered { .. })) {
                    " stored; each iteration a worker computes the r mini-batches of its assigned codeword"
                } else {
                    ""
                }
            ),
        );
        for pc in &self.codes {
            line(&mut o, pc.describe());
            let PlanCode::Gradient { code: c, .. } = pc else { continue };
            if c.n <= 16 {
                for i in 0..c.n {
                    let row: Vec<String> =
                        c.b.row(i)
                            .iter()
                            .map(|v| format!("{:>8}", if *v == 0.0 { "0".into() } else { fmt_coef(*v) }))
                            .collect();
                    line(&mut o, format!("  {}", row.join(" ")));
                }
            } else {
                line(&mut o, "  (too large to print; see plan.json in the run directory)".into());
            }
        }
        let servers = match self.pattern {
            Pattern::Shuffle { .. } if self.stragglers.law != crate::Law::None => {
                "; server k is worker k + 1 (after its Map it sleeps what the model adds)"
            }
            _ => "",
        };
        line(&mut o, format!("stragglers: {}{servers}", self.stragglers.describe()));
        if let Some(f) = self.faults.describe() {
            line(&mut o, format!("faults: {f}"));
        }
        if let Some(l) = self.links.describe() {
            line(&mut o, format!("links: {l}"));
        }
        if let Some(p) = self.parity() {
            o.push_str(&p.describe(self.samples, &self.stragglers));
        }
        line(
            &mut o,
            format!(
                "{:>5}  {:<7} {:>6} {:>6}  {:<12} {:>6}  {:<24} data (0-based points @ coefficient)",
                "rank", "role", "worker", "parent", "children", "load", "waits for"
            ),
        );
        for n in &self.nodes {
            let role = if n.worker.is_none() && n.parent.is_some() {
                "helper"
            } else if n.worker.is_none() {
                "master"
            } else if matches!(self.pattern, Pattern::Hier { .. }) {
                "client"
            } else if n.children.is_empty() {
                "worker"
            } else {
                "parent"
            };
            let contiguous = n.children.windows(2).all(|w| w[1] == w[0] + 1);
            let children = match (n.children.first(), n.children.last()) {
                (Some(_), Some(_)) if !contiguous => {
                    n.children.iter().map(usize::to_string).collect::<Vec<_>>().join(",")
                }
                (Some(a), Some(b)) if a != b => format!("{a}..{b}"),
                (Some(a), _) => format!("{a}"),
                _ => "-".into(),
            };
            let wait = n.rule.as_ref().map_or("-".into(), |r| r.describe(n.children.len()));
            line(
                &mut o,
                format!(
                    "{:>5}  {:<7} {:>6} {:>6}  {:<12} {:>6}  {:<24} {}",
                    n.rank,
                    role,
                    n.worker.map_or("-".into(), |w| w.to_string()),
                    n.parent.map_or("-".into(), |p| p.to_string()),
                    children,
                    n.load(),
                    wait,
                    n.parts.iter().map(WeightedSet::describe).collect::<Vec<_>>().join(" | ")
                ),
            );
        }
        o
    }
}
