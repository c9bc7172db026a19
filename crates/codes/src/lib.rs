//! # outrun-codes: the mathematics of coded gradient aggregation
//!
//! Everything in this crate is a pure function of its inputs: no MPI, no files, no clocks.
//! It is the place to look for a formula from the papers, and every formula is tested here
//! against the papers' worked examples (see `../shared/spec/seed-004-ch4-ch5-ch7.md`).
//!
//! - [`Rng`]: ChaCha12 streams keyed by `(seed, domain, ids...)`, identical on every host, so
//!   every scheme in a comparison sees the same data and the same slow machines ([`domain`]).
//! - [`lstsq`]: least squares by LAPACK's SVD (through `ndarray-linalg`), with the numerical rank.
//! - [`GradientCode`]: gradient codes `B` (identity, Tandon et al.'s cyclic repetition with
//!   random construction and best-of-K [`Screening`], fractional repetition).
//! - [`Decoder`]: decoding vectors `a` with `a·B = 1` for a survivor set, with residual checks
//!   and a cache keyed by survivor set.
//! - [`RowCode`], [`RowDecoder`]: codes for coded matrix–vector products (identity, Gaussian,
//!   systematic, LT) and their decoders; [`hcmm`] and its baselines allocate the rows.
//! - [`SurvivorSet`], [`combinations`], [`binomial`]: survivor sets and counting.
//! - [`robust_screen`]: locating corrupted results from a code's redundancy (robust decoding).
//! - [`diversefl_test`], [`coordinate_median`], [`krum`], [`bulyan_select`], [`resample_groups`],
//!   [`fltrust_coefficients`]: robust aggregation of federated updates (DiverseFL and its rivals).
//! - [`codedfedl`]: CodedFedL's load allocation (per-node expected return with retransmissions,
//!   the deadline t* by bisection, the closed form without retransmissions, the privacy budget).
//! - [`hier`]: hierarchical coded aggregation's loads and decoders (ARC, AMC; thesis ch. 6).
//! - [`restart`]: the restart model of adaptive gradient coding (seed 003, eqs. 81–92): average
//!   execution times of CGC, AGC and their group versions, with a Monte Carlo check.
//! - [`theory`]: formulas the papers evaluate without a code: the s_κ stability calculator
//!   (seed 001, Table I) and the LDPC erasure threshold (Remark 3).
//!
//! # Example: the thesis's 3-worker gradient code
//!
//! Three workers each send one combination of two of the three partial gradients g₁, g₂, g₃
//! (the rows of B: ½g₁ + g₂, g₂ − g₃, ½g₁ + g₃; thesis eq. 4.4). Any two of them decode the full
//! gradient g₁ + g₂ + g₃: the decoding vector a has a·B = (1, 1, 1). With workers 1 and 2 it is
//! (2, −1, 0); one worker alone (more than s = 1 straggler) cannot decode, and the residual says
//! so.
//!
//! ```
//! use ndarray::array;
//! use outrun_codes::{decode, GradientCode};
//!
//! let b = array![[0.5, 1.0, 0.0], [0.0, 1.0, -1.0], [0.5, 0.0, 1.0]];
//! let code = GradientCode::explicit(b, 1);
//! let d = decode(&code.b, &[0, 1]);
//! assert!(d.is_exact());
//! assert!(d.coeffs.iter().zip([2.0, -1.0, 0.0]).all(|(a, e)| (a - e).abs() < 1e-12));
//! // the third worker's result is not needed: g = 2·(½g₁ + g₂) − (g₂ − g₃)
//! let (g1, g2, g3) = (1.5, -4.0, 0.25);
//! let sent = [0.5 * g1 + g2, g2 - g3];
//! assert!((d.coeffs[0] * sent[0] + d.coeffs[1] * sent[1] - (g1 + g2 + g3)).abs() < 1e-12);
//! assert!(!decode(&code.b, &[0]).is_exact());
//! ```
#![deny(missing_docs)]

mod agc;
mod cluster;
mod code;
pub mod codedfedl;
mod combin;
mod decode;
mod federated;
mod hcmm;
pub mod hier;
mod linalg;
mod linear;
mod lt;
pub mod restart;
mod rng;
mod robust;
mod rowcode;
mod shuffle;
pub mod theory;
pub mod two_clusters;

pub use agc::{groups as agc_groups, q_agc, q_star, rounds_needed, AgcCode, AgcDecoding};
pub use cluster::{dynamic_clustering, ClusterError, ClusterMatrix, Clustering, Partition};
pub use code::{CodeError, CodeKind, GradientCode, Screening};
pub use combin::{binomial, combinations, Combinations, SurvivorSet};
pub use decode::{decode, Decoder, Decoding, EXACT_RESIDUAL};
pub use federated::{
    bulyan_select, closest_mean, coordinate_median, diversefl_test, fltrust_coefficients, krum, krum_scores,
    resample_groups, Similarity, Thresholds,
};
pub use hcmm::{
    budget_cost, budget_heuristic, expected_time, hcmm, lambda, load_balanced, monte_carlo, proportional, rate,
    uniform_coded, uniform_coded_curve, uniform_uncoded, x_of_xi, Allocation, BudgetChoice, MachineType, Rounding,
    RowLaw,
};
pub use linalg::{
    col_nnz, keep_freed_memory, lstsq, norm2, pinv, row_nnz, rows_transposed, single_threaded_blas, sum_sq,
    sum_sq_diff, LeastSquares, Matrix, RANK_TOL,
};
pub use linear::{condition, rank, GroupDecoding, LinearCode, LinearError, LinearKind, LinearProfile, PeelStep};
pub use lt::{robust_soliton, LtCode};
pub use rng::{domain, splitmix64, Rng};
pub use robust::{robust_screen, robust_screen_with, Inconsistent, Screened, CONSISTENT};
pub use rowcode::{
    CodedRow, RowCode, RowCodeKind, RowDecodeError, RowDecoder, RowEncoder, MAX_DECODE_COND, MAX_PEEL_GROWTH_EPS,
};
pub use shuffle::{
    dangling_mass, det_er, det_er_each, loads, pagerank_update, segment_len, Allocation as ShuffleAllocation, Dangling,
    Graph, GraphBuilder, Loads, ReducePolicy, ShuffleError, ShuffleNode, Turn, MAX_SUBSETS,
};
