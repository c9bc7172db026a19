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
use crate::plan::{Node, Pattern, Plan, PlanCode};
use crate::rules::Rule;
use crate::schemes::{code_error, plan};
use crate::topology::Tree;
use outrun_config::{CodeChoice, Config, ConfigError, TreeConfig};

pub(crate) fn build(cfg: &Config, sc: &TreeConfig, samples: usize) -> Result<Plan, ConfigError> {
    let (n, layers, s) = (sc.n, sc.layers, sc.s);
    let tree = Tree::new(n, layers);
    let (code, screening) = match sc.code {
        CodeChoice::Cyclic => {
            let (c, scr) = GradientCode::cyclic(n, s, cfg.run.seed, sc.draws).map_err(code_error)?;
            (c, Some(scr))
        }
        CodeChoice::Frac => (GradientCode::fractional(n, s).map_err(code_error)?, None),
    };
    let alloc = tree_allocate(samples, tree, s, &code.b);
    let nodes: Vec<Node> = alloc
        .into_iter()
        .enumerate()
        .map(|(rank, data)| {
            let parts = if data.is_empty() { vec![] } else { vec![data] };
            let node = match rank {
                0 => Node { parts, ..Node::new(0) },
                _ => Node::worker(rank, rank, tree.parent(rank), parts),
            };
            let children = tree.children(rank);
            if children.is_empty() {
                return node;
            }
            node.over(children, Rule::Decode { need: n - s + 2 * sc.byzantine, code: 0, byzantine: sc.byzantine })
        })
        .collect();
    let (num, den) = r_cr(n, layers, s);
    let title = format!(
        "CodedReduce on the ({n},{layers}) tree: every parent decodes from any {} of its {n} children; r_CR = {num}/{den}{}",
        n - s,
        super::master_worker::robust(s, sc.byzantine)
    );
    let codes = vec![PlanCode::Gradient { code, screening, draws: sc.draws }];
    debug_assert_eq!((nodes.len(), nodes.len() - 1), (tree.ranks(), tree.workers()));
    Ok(plan(cfg, title, samples, s, Pattern::Tree { n, layers }, nodes, codes))
}
