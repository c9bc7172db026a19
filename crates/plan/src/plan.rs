//! The execution plan: pure data computed from a config, executed by the MPI engine (and, later,
//! the simulator) without further decisions.
//!
//! One type describes every scheme: a set of nodes (one per MPI rank), each with the data it
//! holds (points and coefficients), its parent and children, and — for nodes with children —
//! its *wait rule*: how many children it needs and how it combines their messages. A
//! master–worker scheme is a tree of depth 1; CodedReduce is a deeper tree; ring schemes have no
//! tree edges and use [`Shape::Ring`].

use outrun_codes::code::Screening;
use outrun_codes::GradientCode;
use serde::{Deserialize, Serialize};

use crate::alloc::{fmt_coef, WeightedSet};
use crate::config::{model_name, SchemeKind, StragglerKind};
use crate::stragglers::StragglerModel;

/// How a parent combines the messages of the children it waited for.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum Combine {
    /// Plain sum (uncoded; needs every child).
    Sum,
    /// Decoding vector of the plan's code for the survivor set (least squares, residual checked).
    Decode,
    /// Sum of the survivors, scaled by d / (points they cover): an estimate (ignore-stragglers).
    Rescale,
}

/// What a parent waits for.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct WaitRule {
    /// Number of children whose (first) results are used.
    pub need: usize,
    pub combine: Combine,
}

/// One MPI rank's part of the plan.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct Node {
    pub rank: usize,
    /// Worker id, 1-based (None for the master): the key of straggler injection.
    pub worker: Option<usize>,
    pub parent: Option<usize>,
    pub children: Vec<usize>,
    /// Points this node computes on, with coefficients.
    pub data: WeightedSet,
    /// For nodes with children.
    pub wait: Option<WaitRule>,
}

impl Node {
    /// Number of points this node computes on (its load).
    pub fn load(&self) -> usize {
        self.data.len()
    }
}

/// Communication shape.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case", tag = "kind")]
pub enum Shape {
    /// (n, L)-regular tree rooted at rank 0 (a star is (N, 1)).
    Tree { n: usize, layers: usize },
    /// Ring over all ranks, in rank order; `mpi` = use `MPI_Allreduce` instead of our ring.
    Ring { mpi: bool },
}

/// The code shared by every sibling group, with its screening report.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct PlanCode {
    pub code: GradientCode,
    pub screening: Option<Screening>,
    pub draws: usize,
}

/// A complete plan.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct Plan {
    pub scheme: SchemeKind,
    /// One-line description of the scheme.
    pub title: String,
    pub ranks: usize,
    pub workers: usize,
    /// Number of data points d.
    pub samples: usize,
    /// Stragglers tolerated (per parent for trees).
    pub s: usize,
    pub shape: Shape,
    pub nodes: Vec<Node>,
    pub code: Option<PlanCode>,
    pub stragglers: StragglerModel,
}

impl Plan {
    /// The master's rank, if the scheme has one.
    pub fn master(&self) -> Option<usize> {
        matches!(self.shape, Shape::Tree { .. }).then_some(0)
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
        match self.shape {
            Shape::Tree { layers, .. } => layers,
            Shape::Ring { .. } => 0,
        }
    }

    /// Whether the master's result is the exact full gradient whenever every parent gets its
    /// `need` children (false only for ignore-stragglers with s > 0).
    pub fn exact_by_design(&self) -> bool {
        self.nodes.iter().all(|n| n.wait.map_or(true, |w| w.combine != Combine::Rescale || w.need == n.children.len()))
    }

    /// Human-readable plan (what `outrun plan` prints).
    pub fn describe(&self) -> String {
        let mut o = String::new();
        let line = |o: &mut String, s: String| {
            o.push_str(&s);
            o.push('\n');
        };
        line(&mut o, format!("plan: {} — {}", self.scheme.name(), self.title));
        match self.shape {
            Shape::Tree { n, layers } => line(
                &mut o,
                format!(
                    "ranks: {} (rank 0 = master; ranks 1..{} = workers 1..{}); tree n = {n}, layers = {layers}",
                    self.ranks, self.workers, self.workers
                ),
            ),
            Shape::Ring { mpi } => line(
                &mut o,
                format!(
                    "ranks: {} (rank r = worker r+1, no master); {}",
                    self.ranks,
                    if mpi { "MPI_Allreduce over all workers" } else { "ring all-reduce: reduce-scatter + all-gather, 2(N−1) steps" }
                ),
            ),
        }
        let loads: Vec<usize> = self.nodes.iter().filter(|n| n.worker.is_some()).map(Node::load).collect();
        let (lmin, lmax) = (loads.iter().min().copied().unwrap_or(0), loads.iter().max().copied().unwrap_or(0));
        line(
            &mut o,
            format!(
                "data: d = {} points; worker load {} (fraction {:.4} of d)",
                self.samples,
                if lmin == lmax { format!("{lmin}") } else { format!("{lmin}..{lmax}") },
                lmax as f64 / self.samples.max(1) as f64
            ),
        );
        if let Some(pc) = &self.code {
            let c = &pc.code;
            let scr = match &pc.screening {
                Some(s) => format!(
                    "; best of {} draws: worst |a| = {:.3}, worst residual {:.1e} over {} {} survivor sets",
                    pc.draws,
                    s.worst_abs_coef,
                    s.worst_residual,
                    if s.exhaustive { "all" } else { "a sample of" },
                    s.sets_checked
                ),
                None => String::new(),
            };
            line(&mut o, format!("code B: {}×{} {:?}, s = {}{scr}", c.n, c.n, c.kind, c.s).replace("Cyclic", "cyclic").replace("Fractional", "fractional repetition").replace("Identity", "identity"));
            if c.n <= 16 {
                for i in 0..c.n {
                    let row: Vec<String> = c.b.row(i).iter().map(|v| format!("{:>8}", if *v == 0.0 { "0".into() } else { fmt_coef(*v) })).collect();
                    line(&mut o, format!("  {}", row.join(" ")));
                }
            } else {
                line(&mut o, "  (too large to print; see plan.json in the run directory)".into());
            }
        }
        line(&mut o, format!("stragglers: {}", self.describe_stragglers()));
        line(&mut o, format!("{:>5}  {:<7} {:>6} {:>6}  {:<12} {:>6}  {:<24} data (0-based points @ coefficient)", "rank", "role", "worker", "parent", "children", "load", "waits for"));
        for n in &self.nodes {
            let role = if n.worker.is_none() {
                "master"
            } else if n.children.is_empty() {
                "worker"
            } else {
                "parent"
            };
            let children = match (n.children.first(), n.children.last()) {
                (Some(a), Some(b)) if a != b => format!("{a}..{b}"),
                (Some(a), _) => format!("{a}"),
                _ => "-".into(),
            };
            let wait = match n.wait {
                None => "-".into(),
                Some(w) => {
                    let k = n.children.len();
                    let how = match w.combine {
                        Combine::Sum => "sum",
                        Combine::Decode => "decode",
                        Combine::Rescale => "rescale",
                    };
                    if w.need == k {
                        format!("all {k}, {how}")
                    } else {
                        format!("first {} of {k}, {how}", w.need)
                    }
                }
            };
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
                    n.data.describe()
                ),
            );
        }
        o
    }

    fn describe_stragglers(&self) -> String {
        let m = &self.stragglers;
        let from = if m.from_iteration > 0 { format!(" from iteration {}", m.from_iteration) } else { String::new() };
        match m.kind {
            StragglerKind::None => "none".into(),
            StragglerKind::Fixed => format!("fixed: workers {:?} add {}× their compute time{from}", m.workers, m.factor),
            StragglerKind::Bernoulli => format!("bernoulli: each worker with p = {} ({:?}) adds {}× its compute time{from}", m.p, m.mode, m.factor),
            StragglerKind::ShiftedExp => format!("shifted-exp: time = {}·load + Exp(rate {}/load) seconds", m.a, m.mu),
            StragglerKind::Weibull => format!("weibull: time = {}·load + (load/{})·Weibull(shape {}) seconds", m.a, m.mu, m.shape),
            StragglerKind::FailStop => format!("fail-stop: workers {:?} never answer{from}", m.workers),
        }
        .replace("PerIteration", "per iteration")
        .replace("Once", "once per run")
            + &format!(" [{}; seed {}]", model_name(m.kind), m.seed)
    }
}
