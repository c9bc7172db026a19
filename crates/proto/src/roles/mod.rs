//! What a node does with data, as pure pieces a scheme is assembled from:
//!
//! - [`Combination`]: a linear combination of vector ranges ([`Term`]s over [`Src`]s), the
//!   common currency of decoding and encoding. The node protocol executes it on any
//!   [`Vector`] type (real vectors in the engine and the simulator's arithmetic, lengths only in
//!   timing simulations).
//! - [`Aggregator`] (built from a plan's `Rule`): what a parent waits for — a count, a
//!   decodability test — and how it combines what it accepted.
//! - [`Encoder`] (built from a plan's `Encoding`): what a node sends, round by round, from
//!   its own computed parts and its children's combination.
//!
//! - [`hier`]: hierarchical aggregation's combinations (a client's slices, the master's decode
//!   of the helpers' sums).
//!
//! Neither knows about MPI, clocks or message formats; the node protocol (`outrun-proto`) drives
//! them.

mod aggregate;
mod clusters;
mod combine;
mod encode;
mod federated;
pub mod hier;
mod robust;
mod rows;

pub use aggregate::{aggregator, Aggregator};
pub use combine::{Combination, Map, Post, Src, Term, Vector};
pub use encode::{encoder, Encoder};
