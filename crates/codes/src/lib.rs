//! # outrun-codes: the mathematics of coded gradient aggregation
//!
//! Everything in this crate is a pure function of its inputs: no MPI, no files, no clocks.
//! It is the place to look for a formula from the papers, and every formula is tested here
//! against the papers' worked examples (see `../shared/spec/seed-004-ch4-ch5-ch7.md`).
//!
//! - [`rng`]: a deterministic random number generator keyed by `(seed, domain, ids...)`, identical
//!   on every host (it uses the `libm` crate, not the system's math library), so every scheme in a
//!   comparison sees the same data and the same slow machines.
//! - [`linalg`]: a small row-major dense matrix and a rank-revealing least-squares solver
//!   (Householder QR with column pivoting), enough for decoding vectors of codes with n ≲ 200.
//! - [`code`]: gradient codes `B` (identity, Tandon et al.'s cyclic repetition with random
//!   construction and best-of-K screening, fractional repetition).
//! - [`decode`]: decoding vectors `a` with `a·B = 1` for a survivor set, with residual checks
//!   and a cache keyed by survivor set.
//! - [`combin`]: combinations and survivor-set bitmasks.

pub mod code;
pub mod combin;
pub mod decode;
pub mod linalg;
pub mod rng;

pub use code::{CodeKind, GradientCode};
pub use decode::{Decoder, Decoding, EXACT_RESIDUAL};
pub use linalg::Matrix;
pub use rng::Rng;
