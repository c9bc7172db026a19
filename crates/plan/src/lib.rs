//! # outrun-plan: from an experiment config to an execution plan
//!
//! Data flows one way: **config → plan → execution → timing log → report**. This crate owns the
//! first two steps and is pure (no MPI, no I/O), so everything in it is unit-tested:
//!
//! - [`config`]: the TOML experiment file, `--set` overrides, and validation with errors that
//!   name the field.
//! - [`topology`]: rank arithmetic of (n, L)-regular trees (a star is (N, 1)).
//! - [`alloc`]: weighted point sets, COMPALLOC and CR.ALLOCATE.
//! - [`stragglers`]: straggler and fault injection as a function of (seed, worker, iteration).
//! - [`plan`]: the [`Plan`] type: every rank's data, parent, children and wait rule.
//! - [`schemes`]: one builder per scheme family (master–worker, ring, CodedReduce).
//! - [`wait`]: wait rules — which children's results a parent accepts and how it combines
//!   them; shared by the MPI engine and the simulator.

pub mod alloc;
pub mod config;
pub mod plan;
pub mod schemes;
pub mod stragglers;
pub mod topology;
pub mod wait;

pub use config::{Config, ConfigError, SchemeKind};
pub use plan::{Combine, Node, Plan, Shape, WaitRule};
pub use schemes::build;
pub use stragglers::StragglerModel;
