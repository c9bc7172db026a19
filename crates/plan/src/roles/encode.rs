//! Encoders: what a node sends up, round by round. A plan names one [`Encoding`] per node;
//! [`encoder`] builds it.

use serde::{Deserialize, Serialize};

use super::combine::{Combination, Src, Term};
use crate::plan::Plan;

/// How a node forms its message(s), as stored in the plan.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize, Default)]
#[serde(tag = "encoding", rename_all = "kebab-case")]
pub enum Encoding {
    /// One message: the node's own part (if it computes one) plus its children's combination
    /// (if it has children). Every scheme so far.
    #[default]
    Plain,
}

/// A node's encoder.
pub trait Encoder: Send {
    /// Start iteration `t`, with this node's assignment if the scheme sent one.
    fn begin(&mut self, _t: u64, _assignment: Option<&[u8]>) {}
    /// Number of rounds the node sends per iteration.
    fn rounds(&self) -> u32 {
        1
    }
    /// The message of round `r` over [`Src::Own`] parts and [`Src::Agg`].
    fn round(&self, r: u32) -> Combination;
}

/// The encoder of `rank` for payloads of `len` values.
pub fn encoder(plan: &Plan, rank: usize, len: usize) -> Box<dyn Encoder> {
    let node = &plan.nodes[rank];
    match node.send {
        Encoding::Plain => Box::new(Plain { len, own: !node.parts.is_empty(), agg: !node.children.is_empty() }),
    }
}

struct Plain {
    len: usize,
    own: bool,
    agg: bool,
}

impl Encoder for Plain {
    fn round(&self, _r: u32) -> Combination {
        let mut terms = vec![];
        if self.own {
            terms.push(Term::whole(Src::Own(0), self.len, 1.0));
        }
        if self.agg {
            terms.push(Term::whole(Src::Agg, self.len, 1.0));
        }
        Combination::exact(self.len, terms)
    }
}
