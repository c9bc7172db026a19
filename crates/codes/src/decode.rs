//! Decoding vectors: given the survivors `F` among `n` children, find `a` (zero outside `F`) with
//! `a·B = 1ᵀ`, so that `Σ_{i∈F} a_i·m_i` is the sum of all partitions' gradients.
//!
//! Solved by least squares over the survivors' rows ([`crate::lstsq`], LAPACK's SVD) with one
//! step of iterative refinement; the residual `‖a·B − 1‖₂` is computed for every new survivor
//! set and reported with every decode, so an inexact decode (too many stragglers for the code)
//! is always visible. Fractional-repetition codes have a fast path that never solves: the first
//! survivor of each group, with coefficient 1.

use std::collections::HashMap;
use std::sync::Arc;

use ndarray::{Array1, ArrayView1};

use crate::code::{CodeKind, GradientCode};
use crate::combin::SurvivorSet;
use crate::linalg::{lstsq, norm2, rows_transposed, Matrix};

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

    fn new(b: &Matrix, coeffs: Vec<f64>) -> Self {
        let residual = residual(b, &coeffs);
        let max_abs = coeffs.iter().fold(0.0f64, |m, c| m.max(c.abs()));
        Decoding { coeffs, residual, max_abs }
    }
}

fn residual(b: &Matrix, coeffs: &[f64]) -> f64 {
    let a = ArrayView1::from(coeffs);
    let r = b.t().dot(&a).mapv(|x| 1.0 - x);
    norm2(r.view())
}

/// Decoding vector for the survivor indices `survivors` of the code matrix `b` (n × k), by
/// least squares.
pub fn decode(b: &Matrix, survivors: &[usize]) -> Decoding {
    let n = b.nrows();
    let ones = Array1::<f64>::ones(b.ncols());
    let mut coeffs = vec![0.0; n];
    if !survivors.is_empty() {
        let bt = rows_transposed(b, survivors);
        let ls = lstsq(bt.view(), ones.view());
        for (j, &i) in survivors.iter().enumerate() {
            coeffs[i] = ls.x[j];
        }
        // One step of iterative refinement: solve for the correction on the residual.
        let resid = |c: &[f64]| &ones - &b.t().dot(&ArrayView1::from(c));
        let fix = lstsq(bt.view(), resid(&coeffs).view());
        let mut refined = coeffs.clone();
        for (j, &i) in survivors.iter().enumerate() {
            refined[i] += fix.x[j];
        }
        if norm2(resid(&refined).view()) < norm2(resid(&coeffs).view()) {
            coeffs = refined;
        }
    }
    Decoding::new(b, coeffs)
}

/// Fractional repetition: the first survivor of each group of `s + 1` with coefficient 1 (exact
/// iff every group has a survivor).
fn decode_fractional(code: &GradientCode, survivors: &[usize]) -> Decoding {
    let g = code.s + 1;
    let mut coeffs = vec![0.0; code.n];
    let mut covered = vec![false; code.n / g];
    for &i in survivors {
        if !covered[i / g] {
            covered[i / g] = true;
            coeffs[i] = 1.0;
        }
    }
    Decoding::new(&code.b, coeffs)
}

/// Decoder with a cache keyed by survivor set, so a repeated straggler pattern costs a lookup.
#[derive(Debug)]
pub struct Decoder {
    code: GradientCode,
    cache: HashMap<SurvivorSet, Arc<Decoding>>,
    /// Decodes answered from the cache.
    pub hits: u64,
    /// Decodes that computed a decoding vector.
    pub misses: u64,
}

impl Decoder {
    /// Cache entries kept before the cache is cleared (bounds memory for large n).
    pub const MAX_CACHED: usize = 4096;

    /// A decoder for `code`.
    pub fn new(code: GradientCode) -> Self {
        Decoder { code, cache: HashMap::new(), hits: 0, misses: 0 }
    }

    /// Number of children.
    pub fn n(&self) -> usize {
        self.code.n
    }

    /// The decoding for this survivor set.
    pub fn decode(&mut self, survivors: &SurvivorSet) -> Arc<Decoding> {
        if let Some(d) = self.cache.get(survivors) {
            self.hits += 1;
            return d.clone();
        }
        self.misses += 1;
        let idx = survivors.indices();
        let d = Arc::new(match self.code.kind {
            CodeKind::Fractional => decode_fractional(&self.code, &idx),
            _ => decode(&self.code.b, &idx),
        });
        if self.cache.len() >= Self::MAX_CACHED {
            self.cache.clear();
        }
        self.cache.insert(survivors.clone(), d.clone());
        d
    }
}
