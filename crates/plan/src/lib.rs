//! # outrun-plan: from an experiment config to an execution plan
//!
//! Data flows one way: **config → plan → node protocol → driver → timing log → report**. This
//! crate owns the second step: it reads a validated `outrun_config::Config` and never the other
//! way round. It is pure (no MPI, no I/O), so everything in it is unit-tested:
//!
//! - [`Tree`]: rank arithmetic of (n, L)-regular trees (a star is (N, 1)).
//! - [`alloc`]: weighted point sets, COMPALLOC and CR.ALLOCATE.
//! - [`StragglerModel`] and its [`Injector`]: straggler and fault injection as a function of
//!   (seed, worker, iteration), stateful processes included.
//! - [`Plan`]: every rank's parts, parent, children, wait rule and encoding, and everything else
//!   the drivers read ([`RunSpec`], [`JobSpec`], [`NetworkSpec`], the straggler model): the
//!   only hand-off from the config to the node protocol, the drivers and the log; [`build`] makes
//!   it, one builder per scheme family (`schemes/`).
//! - [`Rule`], [`Encoding`], [`Hier`]: what each node waits for and sends, as data; the roles
//!   that execute them (aggregators, encoders, linear combinations) are the node protocol's
//!   (`outrun_proto::roles`).
//! - [`budget`]: the deadlines of the collect tree.
//!
//! # Example: gradient coding is a star
//!
//! Cyclic gradient coding with N = 3 workers tolerating s = 1 straggler: a tree of depth 1
//! whose master decodes from any 2 of its 3 children, each worker holding (s + 1)·d/N points.
//!
//! ```
//! use outrun_plan::{Pattern, Plan, Shape};
//!
//! let config = "[run]\nname = 'doc'\niterations = 1\n\
//!     [data]\nkind = 'linear-synthetic'\nsamples = 6\nfeatures = 2\n\
//!     [model]\nloss = 'least-squares'\nlr = 0.1\n\
//!     [scheme]\nkind = 'gc-cyclic'\nworkers = 3\ns = 1\n";
//! let plan = Plan::from_toml(config, Shape { samples: 6, features: 2 }).unwrap();
//! assert_eq!(plan.pattern, Pattern::Tree { n: 3, layers: 1 });
//! assert_eq!((plan.ranks, plan.workers), (4, 3));
//! assert!(plan.nodes[1..].iter().all(|worker| worker.load() == 4));
//! assert_eq!(plan.nodes[0].rule.as_ref().unwrap().describe(3), "first 2 of 3, decode");
//! ```
#![deny(missing_docs)]

pub mod alloc;
pub mod budget;
mod faults;
mod links;
mod parity;
mod plan;
mod rules;
mod schemes;
mod settings;
mod stragglers;
mod topology;

pub use faults::{FaultKind, Faults};
pub use links::{Hop, Links};
pub use parity::{batch_rng, ClientParity, Parity};
pub use plan::{sample_size, Node, Pattern, Plan, PlanCode, RowsSpec, SchemeData};
pub use rules::{Encoding, FlRule, GroupSpec, Hier, HierKind, Rule, Uploads};
pub use schemes::build;
pub use settings::{JobSpec, NetworkSpec, PythonModel, RunSpec, Shape};
pub use stragglers::{ComputeTime, Injector, Law, StragglerModel, DEFAULT_FACTOR, TRACE_STRAGGLER};
pub use topology::Tree;
