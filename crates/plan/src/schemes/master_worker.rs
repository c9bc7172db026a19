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
use crate::plan::{Node, Plan, PlanCode};
use crate::rules::Rule;
use crate::schemes::{code_error, star_plan};
use crate::topology::Tree;
use outrun_config::{Config, ConfigError, SchemeConfig, StarConfig};

/// What robust decoding adds to a title: `s` stragglers tolerated, `f` of them spent on
/// locating corrupted results.
pub(crate) fn robust(s: usize, f: usize) -> String {
    if f == 0 {
        return String::new();
    }
    format!("; with byzantine = {f} it waits for {} more, locates and excludes up to {f} corrupted result(s), and tolerates {} straggler(s) besides", 2 * f, s - 2 * f)
}

pub(crate) fn build(cfg: &Config, c: &StarConfig, samples: usize) -> Result<Plan, ConfigError> {
    let (n, s) = (c.workers, c.s);
    let mut codes = vec![];
    let (code, rule, title) = match &cfg.scheme {
        SchemeConfig::Umw(_) => {
            (GradientCode::identity(n), Rule::Sum, "uncoded master-worker: waits for all workers".to_string())
        }
        SchemeConfig::Ignore(_) => (
            GradientCode::identity(n),
            Rule::Rescale { need: n - s, by: c.wait_s },
            format!(
                "ignore stragglers: uses the first {} of {n} results{}, rescaled (inexact)",
                n - s,
                c.wait_s.map_or(String::new(), |w| format!(", or what arrived {w} s after the iteration started"))
            ),
        ),
        SchemeConfig::GcCyclic(_) => {
            let (code, scr) = GradientCode::cyclic(n, s, cfg.run.seed, c.draws).map_err(code_error)?;
            codes.push(PlanCode::Gradient { code: code.clone(), screening: Some(scr), draws: c.draws });
            (
                code,
                Rule::Decode { need: n - s + 2 * c.byzantine, code: 0, byzantine: c.byzantine },
                format!(
                    "gradient coding, cyclic repetition: any {} of {n} workers decode the full gradient{}",
                    n - s,
                    robust(s, c.byzantine)
                ),
            )
        }
        SchemeConfig::GcFrac(_) => {
            let code = GradientCode::fractional(n, s).map_err(code_error)?;
            codes.push(PlanCode::Gradient { code: code.clone(), screening: None, draws: c.draws });
            (
                code,
                Rule::Decode { need: n - s + 2 * c.byzantine, code: 0, byzantine: c.byzantine },
                format!(
                    "gradient coding, fractional repetition: any {} of {n} workers decode the full gradient{}",
                    n - s,
                    robust(s, c.byzantine)
                ),
            )
        }
        other => unreachable!("{} is not a master-worker scheme", other.kind()),
    };
    let tree = Tree::new(n, 1);
    let nodes = tree_allocate(samples, tree, s, &code.b)
        .into_iter()
        .enumerate()
        .map(|(rank, data)| match rank {
            0 => Node::new(0).over(tree.children(0), rule.clone()),
            _ => Node::worker(rank, rank, tree.parent(rank), vec![data]),
        })
        .collect();
    Ok(star_plan(cfg, title, samples, s, nodes, codes))
}
