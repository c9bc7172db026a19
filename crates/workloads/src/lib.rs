//! # outrun-workloads: what is being trained
//!
//! - [`data`]: synthetic linear and logistic data sets generated row by row from the seed (so a
//!   worker generates exactly its rows), and the LIBSVM file reader.
//! - [`kernel`]: the weighted gradient-and-loss kernel every node runs:
//!   `Σ c·∇ℓ(θ; x)` over its points, fused so the data is read once.
//! - [`reference`]: plain serial gradient descent on the whole data set — the independent
//!   computation exactness tests compare against.
//! - [`metrics`]: normalised error, relative change, step sizes.

pub mod bench;
pub mod data;
pub mod kernel;
pub mod metrics;
pub mod reference;

pub use data::{DataError, Rows};
