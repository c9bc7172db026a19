//! Decoding vectors: given the survivors `F` among `n` children, find `a` (zero outside `F`) with
//! `a·B = 1ᵀ`, so that `Σ_{i∈F} a_i·m_i` is the sum of all partitions' gradients.
//!
//! Solved by least squares over the survivors' rows ([`crate::linalg::lstsq`]); the residual
//! `‖a·B − 1‖₂` is computed for every new survivor set and reported with every decode, so an
//! inexact decode (too many stragglers for the code) is always visible.

use std::collections::HashMap;
use std::sync::Arc;

use crate::combin::SurvivorSet;
use crate::linalg::{lstsq, norm2, Matrix};

/// A decode is called exact when its residual `‖a·B − 1‖₂` is at most this.
pub const EXACT_RESIDUAL: f64 = 1e-6;

/// One decoding vector and its quality.
#[derive(Clone, Debug)]
pub struct Decoding {
    /// Coefficient per child (length n), zero for non-survivors.
    pub coeffs: Vec<f64>,
    /// `‖a·B − 1‖₂`.
    pub residual: f64,
    /// Largest |coefficient|: large values amplify round-off in the messages.
    pub max_abs: f64,
}

impl Decoding {
    /// Whether the decoded sum equals the full gradient (up to round-off).
    pub fn is_exact(&self) -> bool {
        self.residual <= EXACT_RESIDUAL
    }
}

/// Decoding vector for the survivor indices `survivors` of the code matrix `b` (n × k).
pub fn decode(b: &Matrix, survivors: &[usize]) -> Decoding {
    let n = b.rows();
    let ones = vec![1.0; b.cols()];
    let mut coeffs = vec![0.0; n];
    let resid = |coeffs: &[f64]| -> Vec<f64> {
        b.left_mul(coeffs).iter().zip(&ones).map(|(x, o)| o - x).collect()
    };
    if !survivors.is_empty() {
        let bt = b.rows_transposed(survivors);
        let ls = lstsq(&bt, &ones);
        for (j, &i) in survivors.iter().enumerate() {
            coeffs[i] = ls.x[j];
        }
        // One step of iterative refinement: solve for the correction on the residual.
        let fix = lstsq(&bt, &resid(&coeffs));
        let mut refined = coeffs.clone();
        for (j, &i) in survivors.iter().enumerate() {
            refined[i] += fix.x[j];
        }
        if norm2(&resid(&refined)) < norm2(&resid(&coeffs)) {
            coeffs = refined;
        }
    }
    let residual = norm2(&resid(&coeffs));
    let max_abs = coeffs.iter().fold(0.0f64, |m, c| m.max(c.abs()));
    Decoding { coeffs, residual, max_abs }
}

/// Decoder with a cache keyed by survivor set, so a repeated straggler pattern costs a lookup.
#[derive(Debug)]
pub struct Decoder {
    b: Matrix,
    cache: HashMap<SurvivorSet, Arc<Decoding>>,
    /// Decodes answered from the cache.
    pub hits: u64,
    /// Decodes that solved a least-squares problem.
    pub misses: u64,
}

impl Decoder {
    /// Cache entries kept before the cache is cleared (bounds memory for large n).
    pub const MAX_CACHED: usize = 4096;

    pub fn new(b: Matrix) -> Self {
        Decoder { b, cache: HashMap::new(), hits: 0, misses: 0 }
    }

    /// Number of children.
    pub fn n(&self) -> usize {
        self.b.rows()
    }

    /// The decoding for this survivor set.
    pub fn decode(&mut self, survivors: &SurvivorSet) -> Arc<Decoding> {
        if let Some(d) = self.cache.get(survivors) {
            self.hits += 1;
            return d.clone();
        }
        self.misses += 1;
        let d = Arc::new(decode(&self.b, &survivors.indices()));
        if self.cache.len() >= Self::MAX_CACHED {
            self.cache.clear();
        }
        self.cache.insert(survivors.clone(), d.clone());
        d
    }
}
