//! # outrun-proto: the node protocol, with no I/O and no clock
//!
//! Every node's behaviour is a state machine ([`Machine`]): events in ([`Input`]: a message
//! arrived, a computation finished, a timer fired), actions out ([`Output`]: send, compute, set
//! a timer, deliver, log, done). The MPI engine drives the machines in real time, the simulator
//! in virtual time; neither driver contains per-scheme code, and unit tests drive them with
//! scripted events.
//!
//! - [`TreeNode`]: the collect-tree pattern (masters, parents and workers of master–worker and
//!   CodedReduce schemes; a star is a tree of depth 1). What a parent waits for and how it
//!   decodes, and what a node sends, come from the plan's rules and encodings, executed by
//!   the [`roles`].
//! - [`RingNode`]: the ring pattern (our ring all-reduce, or the library's collective).
//! - [`HierNode`]: the hierarchical pattern (master, helpers, clients with a link to every
//!   helper; ARC, AMC and uncoded forwarding from the plan's `Hier`, [`roles::hier`]).
//! - [`roles`]: what nodes do with data — aggregators (wait rules and decoders), encoders,
//!   linear combinations — built from the plan's `Rule`s and `Encoding`s.
//! - [`PreludeNode`]: a one-time phase before the loop that a plan may ask for (CodedFedL's
//!   parity upload): every worker sends the root a vector, the root sums them ([`prelude`]).
//! - [`wire`]: messages and their frames (bincode headers); [`Frame`] and [`Len`] payloads.
//! - [`Histogram`]: model send→receive latencies, merged up the tree.
//!
//! # Example: a master driven by hand
//!
//! The master of an uncoded star of two workers, fed scripted events the way a driver (or a
//! test) would: it broadcasts the model, collects both results and delivers their sum.
//!
//! ```
//! use std::sync::Arc;
//! use outrun_plan::{Plan, Shape};
//! use outrun_proto::{At, Header, Input, Kind, Machine, Msg, Output, TreeNode};
//!
//! let config = "[run]\nname = 'doc'\niterations = 1\n\
//!     [data]\nkind = 'linear-synthetic'\nsamples = 4\nfeatures = 1\n\
//!     [model]\nloss = 'least-squares'\nlr = 0.1\n[scheme]\nkind = 'umw'\nworkers = 2\n";
//! let plan = Plan::from_toml(config, Shape { samples: 4, features: 1 }).unwrap();
//! // rank 0 is the master; payloads of 2 values (a gradient of p = 1 and the loss)
//! let mut master = TreeNode::<Vec<f64>>::new(&plan, 0, 2);
//! master.handle(&At(0.0), Input::Start { t: 0, model: Arc::new(vec![0.0]) });
//! let outputs: Vec<Output<Vec<f64>>> = std::iter::from_fn(|| master.poll()).collect();
//! assert!(outputs.iter().any(|o| matches!(o,
//!     Output::Send { to, msg, .. } if to == &[1, 2] && msg.head.kind == Kind::Model)));
//! // the workers' results arrive (ranks 1 and 2)
//! for (rank, result) in [(1, vec![1.0, 0.5]), (2, vec![2.0, 0.25])] {
//!     let msg = Msg { head: Header::new(Kind::Result, 0), body: Some(Arc::new(result)) };
//!     master.handle(&At(0.1), Input::Recv { from: rank, msg });
//! }
//! let total = std::iter::from_fn(|| master.poll())
//!     .find_map(|o| if let Output::Deliver { total, .. } = o { Some(total) } else { None });
//! assert_eq!(total, Some(vec![3.0, 0.75]));
//! ```
#![deny(missing_docs)]

mod hier;
mod hist;
mod machine;
mod prelude;
mod ring;
pub mod roles;
mod steps;
mod tree;
mod vector;
pub mod wire;

pub use hier::HierNode;
pub use hist::Histogram;
pub use machine::{At, Clock, Contacts, Delivered, Failure, Input, Machine, Outcome, Output};
pub use prelude::{prelude, PreludeNode};
pub use ring::{RingNode, MAX_LANES};
pub use tree::TreeNode;
pub use vector::{Frame, Len};
pub use wire::{Header, Kind, Meta, Msg};

use outrun_plan::{Pattern, Plan};
use roles::Vector;

/// The machine of `rank` for `plan`'s pattern. `collective_as_ring`: run a ring plan that asks
/// for the library's collective with our ring steps instead (the simulator models it that way).
///
/// The shuffle pattern (PageRank) has no event machine: it is bulk-synchronous with a fixed
/// schedule of turns (`outrun_codes::ShuffleNode::turns`), which the engine's shuffle driver
/// walks; callers branch on [`Pattern::Shuffle`] before asking for a machine.
pub fn machine<P: Vector + 'static>(
    plan: &Plan,
    rank: usize,
    len: usize,
    collective_as_ring: bool,
) -> Box<dyn Machine<P>> {
    match plan.pattern {
        Pattern::Tree { .. } => Box::new(TreeNode::new(plan, rank, len)),
        Pattern::Ring { collective, .. } => Box::new(RingNode::new(plan, rank, len, collective && !collective_as_ring)),
        Pattern::Hier { .. } => Box::new(HierNode::new(plan, rank, len)),
        Pattern::Shuffle { .. } => panic!("the shuffle pattern is driven by its schedule, not by a node machine"),
    }
}
