//! Master–worker schemes on a star of N workers (a tree of depth 1).
//!
//! The data set is split into N near-equal contiguous partitions. The master sends θ to every
//! worker point-to-point, each worker returns `Σ_κ B[i,κ]·g_κ` over the partitions it holds, and
//! the master combines the first results that satisfy its wait rule:
//!
//! - **`umw`** (uncoded master–worker): B = I, wait for all N, sum.
//! - **`ignore`** (ignore stragglers / backup workers): B = I, use the first N − s results and
//!   rescale by d / (points they cover). Inexact; the log reports the coverage.
//! - **`gc-cyclic`** (Tandon et al., cyclic repetition): random cyclic B, best of `draws` draws by
//!   worst-case decoding coefficient; wait for any N − s, decode by least squares.
//! - **`gc-frac`** (Tandon et al., fractional repetition): groups of s+1 workers hold the same
//!   s+1 partitions; wait for any N − s, decode (one survivor per group, coefficient 1).

use outrun_codes::GradientCode;

use crate::alloc::tree_allocate;
use crate::config::{Config, ConfigError, SchemeKind};
use crate::plan::{Combine, Node, Plan, PlanCode, Shape, WaitRule};
use crate::schemes::code_error;
use crate::stragglers::StragglerModel;
use crate::topology::Tree;

pub fn build(cfg: &Config, samples: usize) -> Result<Plan, ConfigError> {
    let n = cfg.workers();
    let s = cfg.scheme.s;
    let kind = cfg.scheme.kind;
    let (code, screening, need, combine, title) = match kind {
        SchemeKind::Umw => (GradientCode::identity(n), None, n, Combine::Sum, "uncoded master-worker: waits for all workers".to_string()),
        SchemeKind::Ignore => (
            GradientCode::identity(n),
            None,
            n - s,
            Combine::Rescale,
            format!("ignore stragglers: uses the first {} of {n} results, rescaled (inexact)", n - s),
        ),
        SchemeKind::GcCyclic => {
            let (c, scr) = GradientCode::cyclic(n, s, cfg.run.seed, cfg.scheme.draws).map_err(code_error)?;
            (c, Some(scr), n - s, Combine::Decode, format!("gradient coding, cyclic repetition: any {} of {n} workers decode the full gradient", n - s))
        }
        SchemeKind::GcFrac => {
            let c = GradientCode::fractional(n, s).map_err(code_error)?;
            (c, None, n - s, Combine::Decode, format!("gradient coding, fractional repetition: any {} of {n} workers decode the full gradient", n - s))
        }
        _ => unreachable!("not a master-worker scheme"),
    };
    let tree = Tree::new(n, 1);
    let alloc = tree_allocate(samples, tree, s, &code.b);
    let nodes = alloc
        .into_iter()
        .enumerate()
        .map(|(rank, data)| Node {
            rank,
            worker: (rank > 0).then_some(rank),
            parent: tree.parent(rank),
            children: tree.children(rank),
            data,
            wait: (rank == 0).then_some(WaitRule { need, combine }),
        })
        .collect();
    let has_code = matches!(kind, SchemeKind::GcCyclic | SchemeKind::GcFrac);
    Ok(Plan {
        scheme: kind,
        title,
        ranks: n + 1,
        workers: n,
        samples,
        s,
        shape: Shape::Tree { n, layers: 1 },
        nodes,
        code: has_code.then(|| PlanCode { code, screening, draws: cfg.scheme.draws }),
        stragglers: StragglerModel::from_config(cfg),
    })
}
