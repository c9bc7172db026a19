//! **`cr`**: CodedReduce on an (n, L)-regular tree (Reisizadeh, Prakash, Pedarsani, Avestimehr;
//! thesis ch. 4; notes `seed-004-ch4-ch5-ch7.md` §1).
//!
//! Allocation (CR.ALLOCATE, computed once): COMPALLOC with one code B (n × n) in every sibling
//! group, coefficients multiplied along the path; every non-leaf keeps its share r_CR·d and
//! passes the rest down; leaves keep all. r_CR = 1 / Σ_{l=1..L} (n/(s+1))^l.
//!
//! Execution (CR.EXECUTE, every iteration): θ flows down the tree edges; each parent forwards θ
//! to its children before computing its own coded gradient, waits for any n − s children,
//! decodes with the row for that survivor set, adds its own coded gradient and sends the sum up;
//! the master decodes the full gradient.

use outrun_codes::GradientCode;

use crate::alloc::{r_cr, tree_allocate};
use crate::config::{CodeChoice, Config, ConfigError};
use crate::plan::{Combine, Node, Plan, PlanCode, Shape, WaitRule};
use crate::schemes::code_error;
use crate::stragglers::StragglerModel;
use crate::topology::Tree;

pub fn build(cfg: &Config, samples: usize) -> Result<Plan, ConfigError> {
    let sc = &cfg.scheme;
    let (n, layers, s) = (sc.n.expect("validated"), sc.layers.expect("validated"), sc.s);
    let tree = Tree::new(n, layers);
    let (code, screening) = match sc.code.unwrap_or_default() {
        CodeChoice::Cyclic => {
            let (c, scr) = GradientCode::cyclic(n, s, cfg.run.seed, sc.draws).map_err(code_error)?;
            (c, Some(scr))
        }
        CodeChoice::Frac => (GradientCode::fractional(n, s).map_err(code_error)?, None),
    };
    let alloc = tree_allocate(samples, tree, s, &code.b);
    let nodes = alloc
        .into_iter()
        .enumerate()
        .map(|(rank, data)| {
            let children = tree.children(rank);
            Node {
                rank,
                worker: (rank > 0).then_some(rank),
                parent: tree.parent(rank),
                wait: (!children.is_empty()).then_some(WaitRule { need: n - s, combine: Combine::Decode }),
                children,
                data,
            }
        })
        .collect();
    let (num, den) = r_cr(n, layers, s);
    Ok(Plan {
        scheme: sc.kind,
        title: format!(
            "CodedReduce on the ({n},{layers}) tree: every parent decodes from any {} of its {n} children; r_CR = {num}/{den}",
            n - s
        ),
        ranks: tree.ranks(),
        workers: tree.workers(),
        samples,
        s,
        shape: Shape::Tree { n, layers },
        nodes,
        code: Some(PlanCode { code, screening, draws: sc.draws }),
        stragglers: StragglerModel::from_config(cfg),
    })
}
