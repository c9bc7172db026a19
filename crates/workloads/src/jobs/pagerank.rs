//! `job.kind = "pagerank"`: PageRank on `[graph]`, Π_k(i) = (1−α)/n + α·Σ_{j∈N(i)}
//! Π_{k−1}(j)/deg⁺(j), Π_0 = 1/n, with `damping` α, the `dangling` rule, and a stop at `tol`.
//!
//! It runs on the shuffle pattern (no master): every server holds its share of the graph, the
//! pattern's driver Maps, shuffles and Reduces through [`GraphJob`], all-gathers the new ranks
//! and hands them to [`Job::apply`], which measures the change ‖Π_k − Π_{k−1}‖₁ (the error
//! column) and says when it reached `tol`. The state file `ranks.txt` has `id rank` lines by
//! the file's ids.

use std::sync::Arc;

use outrun_codes::{dangling_mass, pagerank_update, Graph, ShuffleAllocation, ShuffleNode};
use outrun_config::PagerankConfig;
use outrun_plan::{Pattern, Plan, Shape};
use outrun_proto::Frame;

use super::{Applied, GraphJob, Job, JobError};
use crate::data::DataError;
use crate::graph::{self, Keep, LoadedGraph};

/// Bytes per adjacency entry of a whole graph at its build's peak (the edges as drawn, then
/// the out- and in-lists), rounded up from a measurement (docs/performance.md §17).
const WHOLE_BYTES_PER_VALUE: f64 = 25.0;

/// PageRank of a graph.
pub struct Pagerank {
    config: PagerankConfig,
    seed: u64,
    iterations: u64,
    n: usize,
    loaded: Option<LoadedGraph>,
    rank: Vec<f64>,
}

impl Pagerank {
    /// The job of `plan` (a PageRank plan), with no graph loaded.
    pub fn new(plan: &Plan, config: &PagerankConfig) -> Self {
        let n = plan.samples;
        Pagerank {
            config: config.clone(),
            seed: plan.run.seed,
            iterations: plan.run.iterations,
            n,
            loaded: None,
            rank: vec![1.0 / n as f64; n],
        }
    }

    /// The graph, read (or generated) once.
    fn loaded(&mut self) -> Result<&LoadedGraph, DataError> {
        if self.loaded.is_none() {
            self.loaded = Some(graph::load(&self.config.graph, self.seed)?);
        }
        Ok(self.loaded.as_ref().expect("loaded"))
    }

    /// Whether a change of `change` ends the run (`job.tol`).
    fn converged(&self, change: f64) -> bool {
        self.config.tol.is_some_and(|tol| change <= tol)
    }
}

/// The graph's vertices.
pub(super) fn shape(c: &PagerankConfig, _seed: u64) -> Result<Shape, DataError> {
    Ok(Shape { samples: graph::vertices(&c.graph)?, features: 0 })
}

/// ‖a − b‖₁, summed in vertex order.
fn l1(a: &[f64], b: &[f64]) -> f64 {
    a.iter().zip(b).map(|(x, y)| (x - y).abs()).sum()
}

impl Job for Pagerank {
    fn name(&self) -> &'static str {
        "pagerank"
    }

    fn problem(&self) -> String {
        let g = &self.config.graph;
        let what = g.path.clone().unwrap_or_else(|| g.kind.map_or("graph".into(), |k| format!("{} graph", k.name())));
        format!("PageRank, {what}, n = {}, seed {}", self.n, self.seed)
    }

    fn error_label(&self) -> &'static str {
        "last L1 change"
    }

    fn state_file(&self) -> &'static str {
        "ranks.txt"
    }

    fn len(&self, _rank: usize) -> usize {
        self.n
    }

    fn model_len(&self) -> usize {
        self.n
    }

    /// A server holds the out-lists of the vertices it Maps (an id and a value, its Map
    /// output, per edge, plus the bytes of its rows, bounded by a value per edge) and the
    /// in-lists of those it Reduces (an id and a slot per edge), and per vertex the rank vector
    /// twice, two offsets, its id and whether it sends.
    fn memory(&mut self, plan: &Plan) -> Result<Vec<u64>, DataError> {
        let n = self.n;
        let Pattern::Shuffle { servers, r, reduce, .. } = plan.pattern else { return Ok(vec![0; plan.ranks]) };
        let alloc =
            ShuffleAllocation::new(n, servers, r, reduce).map_err(|e| DataError::field("scheme", e.to_string()))?;
        let per_vertex = (n as u64).saturating_mul(8 * 2 + 8 * 2 + 8 + 1);
        let bytes = |out: u64, inn: u64| {
            out.saturating_mul(4 + 8 + 8).saturating_add(inn.saturating_mul(4 + 8)).saturating_add(per_vertex)
        };
        // Counting exactly builds the whole graph here. A generated graph that would not fit
        // (an n or p too large for the machine) is estimated from its parameters instead: each
        // server Maps r/K of the vertices and Reduces 1/K of them.
        if self.loaded.is_none() {
            if let Some(values) = graph::expected_values(&self.config.graph, n) {
                let whole = values * WHOLE_BYTES_PER_VALUE + n as f64 * 16.0;
                if crate::memory::available().is_some_and(|have| whole > have as f64 / 2.0) {
                    let share = |f: f64| (values * f).min(u64::MAX as f64) as u64;
                    let (out, inn) = (share(r as f64 / servers as f64), share(1.0 / servers as f64));
                    return Ok(vec![bytes(out, inn); plan.ranks]);
                }
            }
        }
        let g = &self.loaded()?.graph;
        Ok((0..plan.ranks)
            .map(|k| {
                let out: usize = (0..n).filter(|&v| alloc.maps(k, v)).map(|v| g.targets(v).len()).sum();
                let inn: usize = alloc.reduced(k).iter().map(|&v| g.sources(v as usize).len()).sum();
                bytes(out as u64, inn as u64)
            })
            .collect())
    }

    /// A rank streams the graph and keeps the out-lists of the vertices its servers Map and
    /// the in-lists of those they Reduce (the whole graph if it hosts every server).
    fn load(&mut self, plan: &Plan, ranks: &[usize]) -> Result<(), DataError> {
        let Pattern::Shuffle { servers, r, reduce, .. } = plan.pattern else {
            return self.loaded().map(|_| ());
        };
        if (0..servers).all(|k| ranks.contains(&k)) {
            return self.loaded().map(|_| ());
        }
        let alloc = ShuffleAllocation::new(self.n, servers, r, reduce)
            .map_err(|e| DataError::field("scheme", e.to_string()))?;
        let hosted: Vec<usize> = ranks.iter().copied().filter(|&k| k < servers).collect();
        let (maps, reduces) = (alloc.clone(), hosted.clone());
        let keep = Keep {
            out: Box::new(move |v| hosted.iter().any(|&k| maps.maps(k, v as usize))),
            inn: Box::new(move |v| reduces.contains(&alloc.reducer(v as usize))),
        };
        self.loaded = Some(graph::load_keeping(&self.config.graph, self.seed, Some(keep))?);
        Ok(())
    }

    fn model(&mut self) -> Arc<Frame> {
        Arc::new(Frame::copy_of(&self.rank))
    }

    fn state(&self) -> Option<Vec<f64>> {
        Some(self.rank.clone())
    }

    fn compute(
        &mut self,
        _rank: usize,
        _t: u64,
        _model: &Frame,
        _parts: Option<&[usize]>,
    ) -> Result<Vec<Frame>, JobError> {
        unreachable!("PageRank runs on the shuffle pattern, through GraphJob")
    }

    /// `total` is the new rank vector (every vertex Reduced by its server, all-gathered).
    fn apply(&mut self, _t: u64, total: Frame) -> Result<Applied, JobError> {
        let next = total.into_vec();
        let change = l1(&next, &self.rank);
        self.rank = next;
        Ok(Applied {
            state: Some(self.rank.clone()),
            error: Some(change),
            done: self.converged(change),
            ..Applied::default()
        })
    }

    /// `id rank` per vertex, by the file's ids, shortest round-trip decimals.
    fn state_text(&self, state: &[f64]) -> String {
        let ids = &self.loaded.as_ref().expect("the graph is loaded before a run ends").ids;
        let mut order: Vec<usize> = (0..state.len()).collect();
        order.sort_by_key(|&v| ids[v]);
        order.iter().map(|&v| format!("{} {}\n", ids[v], state[v])).collect()
    }

    /// Centralised power iteration on the whole graph (the same update expression, sums in
    /// source order), stopping where a run stops.
    fn reference(&mut self, _plan: &Plan) -> Result<Vec<f64>, DataError> {
        let (damping, dangling, tol) = (self.config.damping, self.config.dangling, self.config.tol);
        let iterations = self.iterations;
        let g = &self.loaded()?.graph;
        let n = g.vertices();
        let mut x = vec![1.0 / n as f64; n];
        for _ in 0..iterations {
            let mass = dangling_mass(g, &x);
            let share = |j: usize| x[j] / g.targets(j).len() as f64;
            let next: Vec<f64> = (0..n)
                .map(|i| {
                    pagerank_update(g.sources(i).iter().map(|&j| share(j as usize)).sum(), damping, n, dangling, mass)
                })
                .collect();
            let change = l1(&next, &x);
            x = next;
            if tol.is_some_and(|tol| change <= tol) {
                break;
            }
        }
        Ok(x)
    }

    fn graph(&mut self) -> Option<&mut dyn GraphJob> {
        Some(self)
    }
}

impl GraphJob for Pagerank {
    fn graph(&self) -> &Graph {
        &self.loaded.as_ref().expect("the graph is loaded before the run").graph
    }

    fn reduce(&self, node: &ShuffleNode, x: &[f64]) -> Vec<f64> {
        let g = GraphJob::graph(self);
        node.reduce(self.config.damping, self.config.dangling, dangling_mass(g, x))
    }
}
