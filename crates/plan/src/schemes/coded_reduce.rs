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
use crate::rules::{Encoding, Rule};
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
            let children = tree.children(rank);
            Node {
                rank,
                worker: (rank > 0).then_some(rank),
                parent: tree.parent(rank),
                rule: (!children.is_empty()).then_some(Rule::Decode {
                    need: n - s + 2 * sc.byzantine,
                    code: 0,
                    byzantine: sc.byzantine,
                }),
                children,
                parts: if data.is_empty() { vec![] } else { vec![data] },
                send: Encoding::Plain,
                sample: None,
            }
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
