//! Codes for coded matrix–vector multiplication (thesis chapter 3; note part A): the master
//! wants y = A·x for an r-row matrix A; the workers hold rows of Ã = G·A (n ≥ r coded rows) and
//! return their rows of Ã·x = G·y; from any received set of coded values z_S = G_S·y that
//! determines y, the master decodes it.
//!
//! - [`RowCodeKind::Identity`]: G = I (uncoded: every row must come back).
//! - [`RowCodeKind::Gaussian`]: G has i.i.d. N(0, 1/r) entries: any r rows decode (with
//!   probability 1) by one r × r LU solve.
//! - [`RowCodeKind::Systematic`]: the first r rows of G are the identity, the rest Gaussian: the
//!   received systematic rows are y's entries themselves, and only the u missing entries are
//!   solved for, from u parity rows (a u × u system).
//! - [`RowCodeKind::Lt`]: an [`LtCode`] (robust soliton degrees, 0/1 coefficients), decoded by
//!   peeling in O(edges): the code for large r, which needs about r(1 + ε) rows.
//!
//! Coded rows are drawn from `(seed, row)` streams, so every rank generates only the rows it
//! needs and all of them agree.

use ndarray::Array2;
use ndarray_linalg::{Factorize, LUFactorized, ReciprocalConditionNum, Solve};

use crate::{LtCode, Rng};

/// Which code.
#[derive(Clone, Copy, Debug, PartialEq, serde::Serialize, serde::Deserialize)]
#[serde(tag = "code", rename_all = "kebab-case")]
pub enum RowCodeKind {
    /// No code: coded row j is source row j.
    Identity,
    /// Dense Gaussian MDS code.
    Gaussian,
    /// Systematic MDS code: identity on the first r rows, Gaussian parity rows.
    Systematic,
    /// LT code with robust soliton parameters (c, δ).
    Lt {
        /// Robust soliton c.
        c: f64,
        /// Robust soliton δ.
        delta: f64,
    },
}

/// One coded row's coefficients over the r source rows.
#[derive(Clone, Debug, PartialEq)]
pub enum CodedRow {
    /// Source row `k` itself.
    Unit(usize),
    /// The sum of these source rows (coefficients 1).
    Sum(Vec<usize>),
    /// Dense coefficients (length r).
    Dense(Vec<f64>),
}

/// Coded rows accumulated from a matrix's entries ([`RowCode::encoder`]).
///
/// The dense-coded rows are formed block by block: entries are gathered into a block of
/// whole source rows (at most 256 of them and 16 MiB), and a full block is added to the dense
/// rows by one matrix product per run of consecutive source rows, so that the dense rows (m ×
/// d, often hundreds of MB) are read once per block instead of once per source row. A source
/// row that holds few of its m entries when its block is added (a sparse matrix, or one given
/// column by column) is added entry by entry instead, at the cost a product would not save.
#[derive(Clone, Debug)]
pub struct RowEncoder {
    m: usize,
    d: usize,
    /// Per source row, the local unit and sum rows it is added to.
    sparse: Vec<Vec<usize>>,
    g_t: Vec<f64>,
    /// (local row, its column among the dense rows).
    dense_rows: Vec<(usize, usize)>,
    /// Unit and sum rows, row-major (|rows| × m; dense rows' places stay zero).
    out_sparse: Vec<f64>,
    /// Dense rows, column by column (m × d): an entry's update is one contiguous axpy.
    out_dense: Vec<f64>,
    /// The block's slot of each source row (`EMPTY`: not in the block).
    slot: Vec<usize>,
    /// The block's source rows, by slot.
    held: Vec<usize>,
    /// Entries given per slot (a row's fill, duplicates counted twice).
    given: Vec<usize>,
    /// The block's entries, by slot (slots × m, row-major).
    block: Vec<f64>,
    /// Most source rows in a block.
    cap: usize,
}

/// Bytes of A's entries a dense encoder gathers before it adds them to its coded rows by a
/// matrix product (at least one source row).
const ENCODE_BLOCK_BYTES: usize = 16 << 20;

/// Most source rows in an encoder's block: more gives the product no more reuse worth its memory.
const ENCODE_BLOCK_ROWS: usize = 256;

const EMPTY: usize = usize::MAX;

/// Source rows an encoder of an r × m matrix gathers in a block.
fn block_rows(r: usize, m: usize) -> usize {
    (ENCODE_BLOCK_BYTES / (8 * m.max(1))).clamp(1, ENCODE_BLOCK_ROWS).min(r.max(1))
}

impl RowEncoder {
    /// Bytes an encoder of an r × m matrix with dense-coded rows gathers at once, beside its
    /// coded rows and coefficients (what a memory estimate adds for it).
    pub fn block_bytes(r: usize, m: usize) -> u64 {
        (block_rows(r, m) as u64).saturating_mul(m as u64).saturating_mul(8)
    }

    /// Entry A\[k\]\[j\] = v (entries given twice are added, as a Matrix Market file's are).
    pub fn add(&mut self, k: usize, j: usize, v: f64) {
        let m = self.m;
        for &c in &self.sparse[k] {
            self.out_sparse[c * m + j] += v;
        }
        if self.d == 0 {
            return;
        }
        let mut s = self.slot[k];
        if s == EMPTY {
            if self.held.len() == self.cap {
                self.flush();
            }
            s = self.held.len();
            self.slot[k] = s;
            self.held.push(k);
            self.given.push(0);
        }
        self.block[s * m + j] += v;
        self.given[s] += 1;
    }

    /// Add the block's rows to the dense coded rows and empty it: a run of consecutive source
    /// rows that are at least a quarter full by one product out_dense += blockᵀ·G_run (m × d),
    /// any other row entry by entry.
    fn flush(&mut self) {
        let (m, d) = (self.m, self.d);
        let mut order: Vec<usize> = (0..self.held.len()).collect();
        order.sort_unstable_by_key(|&s| self.held[s]);
        let full = |s: usize| self.given[s] * 4 >= m;
        let mut out = ndarray::ArrayViewMut2::from_shape((m, d), &mut self.out_dense).expect("m × d");
        let mut i = 0;
        while i < order.len() {
            let s = order[i];
            let k = self.held[s];
            if !full(s) {
                let row = &self.block[s * m..(s + 1) * m];
                let g = &self.g_t[k * d..(k + 1) * d];
                for (j, &v) in row.iter().enumerate().filter(|(_, v)| **v != 0.0) {
                    out.row_mut(j).iter_mut().zip(g).for_each(|(o, g)| *o += g * v);
                }
                i += 1;
                continue;
            }
            // the run of full rows k, k + 1, … (consecutive in A), gathered in run order
            let mut run = vec![s];
            while let Some(&t) = order.get(i + run.len()) {
                if self.held[t] != k + run.len() || !full(t) {
                    break;
                }
                run.push(t);
            }
            let mut a = ndarray::Array2::<f64>::zeros((run.len(), m));
            for (row, &t) in a.rows_mut().into_iter().zip(&run) {
                row.into_slice().expect("standard layout").copy_from_slice(&self.block[t * m..(t + 1) * m]);
            }
            let g = ndarray::ArrayView2::from_shape((run.len(), d), &self.g_t[k * d..(k + run.len()) * d])
                .expect("run × d");
            ndarray::linalg::general_mat_mul(1.0, &a.t(), &g, 1.0, &mut out);
            i += run.len();
        }
        for &k in &self.held {
            self.slot[k] = EMPTY;
        }
        self.block[..self.held.len() * m].fill(0.0);
        self.held.clear();
        self.given.clear();
    }

    /// The same encoder with blocks of at most `cap` source rows (tests: several blocks).
    #[cfg(test)]
    fn with_cap(mut self, cap: usize) -> Self {
        if self.d > 0 {
            self.cap = cap;
            self.block = vec![0.0; cap * self.m];
        }
        self
    }

    /// The coded rows, row-major (|rows| × m).
    pub fn finish(mut self) -> Vec<f64> {
        self.flush();
        let (m, d) = (self.m, self.d);
        let mut out = self.out_sparse;
        for &(c, q) in &self.dense_rows {
            (0..m).for_each(|j| out[c * m + j] = self.out_dense[j * d + q]);
        }
        out
    }
}

/// A code of `n` coded rows over `r` source rows.
#[derive(Clone, Debug)]
pub struct RowCode {
    /// The kind.
    pub kind: RowCodeKind,
    /// Source rows r.
    pub r: usize,
    /// Coded rows n.
    pub n: usize,
    /// Seed of the coefficients.
    pub seed: u64,
    lt: Option<LtCode>,
    /// The dense coded rows, generated on first use by a decoder (shared by clones).
    dense: std::sync::Arc<std::sync::OnceLock<Array2<f64>>>,
}

impl PartialEq for RowCode {
    fn eq(&self, other: &Self) -> bool {
        (self.kind, self.r, self.n, self.seed) == (other.kind, other.r, other.n, other.seed)
    }
}

/// Why a received set does not decode (yet).
#[derive(Clone, Debug, PartialEq, thiserror::Error)]
pub enum RowDecodeError {
    /// Fewer independent rows than r, or peeling stalls: wait for more.
    #[error("the received rows do not determine y yet ({0} of {1} source rows recoverable)")]
    NotYet(usize, usize),
    /// The system to solve is singular or too ill-conditioned to decode exactly.
    #[error("the decoding system is singular or ill-conditioned (κ ≈ {0:.1e})")]
    Singular(f64),
}

/// Largest peeling growth bound (times ε) accepted: each refinement pass multiplies the error
/// by about growth·ε, so at 1e-2 two passes leave ~1e-6 of the first pass's error.
pub const MAX_PEEL_GROWTH_EPS: f64 = 1e-2;

/// Refinement passes after peeling (the residual of the peeled rows, peeled again).
const REFINE: usize = 2;

/// Largest condition number accepted for an exact decode: the error bound κ·ε stays within
/// [`EXACT_RESIDUAL`](crate::EXACT_RESIDUAL) (κ ≈ 4.5e9), the bound the master checks (with
/// 1e10 here, a set at κ = 6e9 was accepted by the decoder and then refused by the master
/// instead of trying another selection of rows).
pub const MAX_DECODE_COND: f64 = crate::EXACT_RESIDUAL / f64::EPSILON;

impl RowCode {
    /// The code; `n ≥ r` (`n == r` for the identity).
    pub fn new(kind: RowCodeKind, r: usize, n: usize, seed: u64) -> Self {
        assert!(n >= r && r > 0, "a code needs n ≥ r > 0 (n = {n}, r = {r})");
        assert!(kind != RowCodeKind::Identity || n == r, "the identity code has n = r");
        let lt = match kind {
            RowCodeKind::Lt { c, delta } => Some(LtCode::new(r, n, c, delta, seed)),
            _ => None,
        };
        RowCode { kind, r, n, seed, lt, dense: Default::default() }
    }

    /// Coded row `j`'s coefficients.
    pub fn row(&self, j: usize) -> CodedRow {
        match self.kind {
            RowCodeKind::Identity => CodedRow::Unit(j),
            RowCodeKind::Systematic if j < self.r => CodedRow::Unit(j),
            RowCodeKind::Gaussian | RowCodeKind::Systematic => {
                let mut rng = Rng::from_key(&[self.seed, crate::domain::CODE, 0x4d56, j as u64]);
                let scale = 1.0 / (self.r as f64).sqrt();
                CodedRow::Dense((0..self.r).map(|_| scale * rng.normal()).collect())
            }
            RowCodeKind::Lt { .. } => match &self.lt.as_ref().expect("built with the code").rows[j] {
                nb if nb.len() == 1 => CodedRow::Unit(nb[0]),
                nb => CodedRow::Sum(nb.clone()),
            },
        }
    }

    /// Coded rows `rows` of Ã = G·A for a row-major `a` (r × m): a row-major |rows| × m matrix.
    pub fn encode(&self, a: &[f64], m: usize, rows: std::ops::Range<usize>) -> Vec<f64> {
        assert_eq!(a.len(), self.r * m, "A must be r × m");
        let mut out = vec![0.0; rows.len() * m];
        for (o, j) in out.chunks_mut(m.max(1)).zip(rows) {
            match self.row(j) {
                CodedRow::Unit(k) => o.copy_from_slice(&a[k * m..(k + 1) * m]),
                CodedRow::Sum(ks) => {
                    ks.iter().for_each(|&k| o.iter_mut().zip(&a[k * m..(k + 1) * m]).for_each(|(x, y)| *x += y))
                }
                CodedRow::Dense(g) => {
                    // o = gᵀ·A through BLAS
                    let av = ndarray::ArrayView2::from_shape((self.r, m), a).expect("shape checked");
                    let v = ndarray::ArrayView1::from(&g).dot(&av);
                    o.copy_from_slice(v.as_slice().expect("contiguous"));
                }
            }
        }
        out
    }

    /// An encoder of coded rows `rows` of Ã = G·A fed with A's entries one at a time, in any
    /// order: a node holds its coded rows and their coefficients, never A (the thesis's point
    /// that a server stores only its share).
    pub fn encoder(&self, m: usize, rows: std::ops::Range<usize>) -> RowEncoder {
        let (l, r) = (rows.len(), self.r);
        let dense = |j: usize| match self.kind {
            RowCodeKind::Gaussian => true,
            RowCodeKind::Systematic => j >= r,
            _ => false,
        };
        let d = rows.clone().filter(|&j| dense(j)).count();
        let mut sparse = vec![vec![]; r];
        // coefficients by source row: g_t[k·d + q] is dense row q's coefficient of source row k
        let mut g_t = vec![0.0; r * d];
        let mut dense_rows = Vec::with_capacity(d);
        for (c, j) in rows.enumerate() {
            match self.row(j) {
                CodedRow::Unit(k) => sparse[k].push(c),
                CodedRow::Sum(ks) => ks.iter().for_each(|&k| sparse[k].push(c)),
                CodedRow::Dense(g) => {
                    let q = dense_rows.len();
                    g.iter().enumerate().for_each(|(k, &v)| g_t[k * d + q] = v);
                    dense_rows.push((c, q));
                }
            }
        }
        let cap = if d == 0 { 0 } else { block_rows(r, m) };
        RowEncoder {
            m,
            d,
            sparse,
            g_t,
            dense_rows,
            out_sparse: vec![0.0; l * m],
            out_dense: vec![0.0; m * d],
            slot: vec![EMPTY; if d == 0 { 0 } else { r }],
            held: Vec::with_capacity(cap),
            given: Vec::with_capacity(cap),
            block: vec![0.0; cap * m],
            cap,
        }
    }

    /// The coded values G_S·y of the rows `rows` for a vector `y` of r values (what workers
    /// return for y = A·x; tests and benchmarks form received values with it).
    pub fn values(&self, rows: &[usize], y: &[f64]) -> Vec<f64> {
        rows.iter()
            .map(|&j| match self.row(j) {
                CodedRow::Unit(i) => y[i],
                CodedRow::Sum(ks) => ks.iter().map(|&i| y[i]).sum(),
                CodedRow::Dense(g) => g.iter().zip(y).map(|(a, b)| a * b).sum(),
            })
            .collect()
    }

    /// Whether the received coded rows (distinct indices) determine y: at least r of them for
    /// the MDS codes (any r decode with probability 1), all r for the identity, successful
    /// peeling for LT.
    pub fn decodable(&self, received: &[usize]) -> bool {
        match &self.lt {
            Some(lt) => received.len() >= self.r && lt.peel_order(received).is_some(),
            None => received.len() >= self.r,
        }
    }

    /// The decoder of a received set (coded row indices, in the order their values will be
    /// given to [`RowDecoder::apply`]).
    pub fn decoder(&self, received: &[usize]) -> Result<RowDecoder, RowDecodeError> {
        if let Some(lt) = &self.lt {
            let (order, growth) = lt.stable_peel_order(received).ok_or_else(|| {
                let known = received.iter().filter(|&&j| lt.rows[j].len() == 1).count();
                RowDecodeError::NotYet(known.min(self.r), self.r)
            })?;
            // refinement divides the error by (growth·ε) per pass: beyond 1/ε nothing converges
            if growth * f64::EPSILON >= MAX_PEEL_GROWTH_EPS {
                return Err(RowDecodeError::Singular(growth));
            }
            let rows = order.iter().map(|&(p, _)| lt.rows[received[p]].clone()).collect();
            return Ok(RowDecoder {
                r: self.r,
                direct: vec![],
                solve: None,
                peel: order,
                peel_rows: rows,
                cond: growth,
            });
        }
        // systematic (unit) rows give entries directly; the rest are solved from parity rows
        let mut known = vec![false; self.r];
        let mut direct = vec![];
        let mut parity = vec![];
        for (p, &j) in received.iter().enumerate() {
            // identity and systematic rows below r are units (no coefficients generated)
            let unit =
                matches!(self.kind, RowCodeKind::Identity) || (self.kind == RowCodeKind::Systematic && j < self.r);
            match unit {
                true if !known[j] => {
                    known[j] = true;
                    direct.push((p, j));
                }
                true => {}
                false => parity.push(p),
            }
        }
        let unknown: Vec<usize> = (0..self.r).filter(|&k| !known[k]).collect();
        let u = unknown.len();
        if u == 0 {
            return Ok(RowDecoder { r: self.r, direct, solve: None, peel: vec![], peel_rows: vec![], cond: 1.0 });
        }
        if parity.len() < u {
            return Err(RowDecodeError::NotYet(self.r - u + parity.len(), self.r));
        }
        // the first u parity rows; if that square system is ill-conditioned (a random square
        // matrix's κ has a heavy tail) and more rows arrived, other selections of u of them
        let dense = self.dense_rows();
        let offset = if self.kind == RowCodeKind::Systematic { self.r } else { 0 };
        let mut worst = 0.0f64;
        for attempt in 0..SELECTIONS {
            let eqs: Vec<usize> = match attempt {
                0 => parity[..u].to_vec(),
                1 => parity[parity.len() - u..].to_vec(),
                _ => {
                    let mut rng = Rng::from_key(&[self.seed, crate::domain::CODE, 0x5e1, attempt as u64]);
                    let mut pick = rng.choose(parity.len(), u);
                    pick.sort_unstable();
                    pick.into_iter().map(|i| parity[i]).collect()
                }
            };
            let mut m = Array2::zeros((u, u));
            let mut k_part = Array2::zeros((u, direct.len()));
            for (e, &p) in eqs.iter().enumerate() {
                let g = dense.row(received[p] - offset);
                for (c, &k) in unknown.iter().enumerate() {
                    m[[e, c]] = g[k];
                }
                for (c, &(_, k)) in direct.iter().enumerate() {
                    k_part[[e, c]] = g[k];
                }
            }
            let cond = match m.factorize() {
                Ok(lu) => {
                    let rcond = lu.rcond().unwrap_or(0.0);
                    let cond = if rcond > 0.0 { 1.0 / rcond } else { f64::INFINITY };
                    if cond <= MAX_DECODE_COND {
                        return Ok(RowDecoder {
                            r: self.r,
                            direct,
                            solve: Some(Solve1 { eqs, unknown, k_part, lu }),
                            peel: vec![],
                            peel_rows: vec![],
                            cond,
                        });
                    }
                    cond
                }
                Err(_) => f64::INFINITY,
            };
            worst = worst.max(cond);
            if parity.len() == u {
                break;
            }
        }
        Err(RowDecodeError::Singular(worst))
    }

    /// Every dense coded row (Gaussian: all n; systematic: the n − r parity rows), generated
    /// once and kept (the master's decoder reads the rows of every new set of responders).
    fn dense_rows(&self) -> &Array2<f64> {
        self.dense.get_or_init(|| {
            let first = if self.kind == RowCodeKind::Systematic { self.r } else { 0 };
            let mut m = Array2::zeros((self.n - first, self.r));
            for (i, mut row) in m.rows_mut().into_iter().enumerate() {
                let CodedRow::Dense(g) = self.row(first + i) else { unreachable!("dense rows") };
                row.iter_mut().zip(g).for_each(|(a, b)| *a = b);
            }
            m
        })
    }
}

/// Selections of u received parity rows tried before a decode is declared ill-conditioned.
const SELECTIONS: usize = 4;

/// The dense part of a decode: y_U = M⁻¹ (z_eqs − G[eqs, K]·y_K).
struct Solve1 {
    eqs: Vec<usize>,
    unknown: Vec<usize>,
    k_part: Array2<f64>,
    lu: LUFactorized<ndarray::OwnedRepr<f64>>,
}

impl std::fmt::Debug for Solve1 {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "Solve1 {{ {} unknowns }}", self.unknown.len())
    }
}

/// Decodes y from the received coded values of one received set.
#[derive(Debug)]
pub struct RowDecoder {
    r: usize,
    /// (position in z, source row) read directly.
    direct: Vec<(usize, usize)>,
    solve: Option<Solve1>,
    /// Peeling schedule (position in z, source it releases) and each position's neighbours.
    peel: Vec<(usize, usize)>,
    peel_rows: Vec<Vec<usize>>,
    /// Condition number (1-norm estimate) of the system solved (1 when none); for peeling, the
    /// round-off growth bound of the schedule.
    pub cond: f64,
}

impl RowDecoder {
    /// Peel `z` into `y` along the schedule.
    fn peel_into(&self, z: &[f64], y: &mut [f64]) {
        for ((p, s), nb) in self.peel.iter().zip(&self.peel_rows) {
            let others: f64 = nb.iter().filter(|&t| t != s).map(|&t| y[t]).sum();
            y[*s] = z[*p] - others;
        }
    }

    /// Values (8-byte words) the decoder holds: its factorization and coefficients, or its
    /// peeling schedule (for caches that bound their memory).
    pub fn size(&self) -> usize {
        let solve = self.solve.as_ref().map_or(0, |s| s.k_part.len() + s.unknown.len() * (s.unknown.len() + 2));
        solve + 2 * self.direct.len() + 2 * self.peel.len() + self.peel_rows.iter().map(Vec::len).sum::<usize>()
    }

    /// y from the received values `z` (one per received row, in the decoder's order).
    pub fn apply(&self, z: &[f64]) -> Vec<f64> {
        let mut y = vec![0.0; self.r];
        for &(p, k) in &self.direct {
            y[k] = z[p];
        }
        if !self.peel.is_empty() {
            self.peel_into(z, &mut y);
            // iterative refinement: the peeled rows' residual, peeled again, corrects y
            let mut res = vec![0.0; z.len()];
            let mut delta = vec![0.0; self.r];
            for _ in 0..REFINE {
                for ((p, _), nb) in self.peel.iter().zip(&self.peel_rows) {
                    res[*p] = z[*p] - nb.iter().map(|&t| y[t]).sum::<f64>();
                }
                self.peel_into(&res, &mut delta);
                y.iter_mut().zip(&delta).for_each(|(a, d)| *a += d);
            }
        }
        if let Some(s) = &self.solve {
            let yk = ndarray::Array1::from_iter(self.direct.iter().map(|&(_, k)| y[k]));
            let rhs = ndarray::Array1::from_iter(s.eqs.iter().map(|&p| z[p])) - s.k_part.dot(&yk);
            let yu = s.lu.solve(&rhs).expect("factorized and checked");
            for (&k, v) in s.unknown.iter().zip(yu) {
                y[k] = v;
            }
        }
        y
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn product(code: &RowCode, a: &[f64], m: usize, x: &[f64]) -> Vec<f64> {
        code.encode(a, m, 0..code.n).chunks(m).map(|row| row.iter().zip(x).map(|(p, q)| p * q).sum()).collect()
    }

    /// Entries fed one at a time — row by row, column by column, shuffled; some split in two,
    /// a sparse matrix's zeros left out — give each rank's coded rows as the whole-matrix encode
    /// does (to round-off: the sums run in another order), whatever blocks the dense rows are
    /// formed in (one source row, a few, all of them: runs by product, sparse rows entry by
    /// entry).
    #[test]
    fn the_streaming_encoder_equals_the_whole_matrix_encode() {
        let (r, m) = (40, 9);
        let mut rng = Rng::from_key(&[8]);
        for sparse in [false, true] {
            let a: Vec<f64> = (0..r * m).map(|k| if sparse && k % 7 != 0 { 0.0 } else { rng.normal() }).collect();
            let mut by_row: Vec<(usize, usize, f64)> = vec![];
            for (k, &v) in a.iter().enumerate().filter(|(_, v)| !sparse || **v != 0.0) {
                if k % 3 == 0 {
                    by_row.extend([(k / m, k % m, 0.25 * v), (k / m, k % m, 0.75 * v)]);
                } else {
                    by_row.push((k / m, k % m, v));
                }
            }
            let mut by_column = by_row.clone();
            by_column.sort_by_key(|&(i, j, _)| (j, i));
            let mut shuffled = by_row.clone();
            for i in (1..shuffled.len()).rev() {
                shuffled.swap(i, rng.below(i + 1));
            }
            let kinds = [
                (RowCodeKind::Identity, r),
                (RowCodeKind::Systematic, 60),
                (RowCodeKind::Gaussian, 60),
                (RowCodeKind::Lt { c: 0.03, delta: 0.1 }, 80),
            ];
            for (kind, n) in kinds {
                let code = RowCode::new(kind, r, n, 3);
                for rows in [0..n, 0..1, n / 2..n, 5..n.min(45)] {
                    let want = code.encode(&a, m, rows.clone());
                    for (order, entries) in [("rows", &by_row), ("columns", &by_column), ("shuffled", &shuffled)] {
                        for cap in [1, 3, 7, r] {
                            let mut e = code.encoder(m, rows.clone()).with_cap(cap);
                            entries.iter().for_each(|&(i, j, v)| e.add(i, j, v));
                            let got = e.finish();
                            assert_eq!(got.len(), want.len());
                            let worst = got.iter().zip(&want).map(|(g, w)| (g - w).abs()).fold(0.0, f64::max);
                            assert!(
                                worst < 1e-12,
                                "{kind:?} rows {rows:?} {order} cap {cap} sparse {sparse}: {worst:e}"
                            );
                        }
                    }
                }
            }
        }
    }

    fn check(kind: RowCodeKind, r: usize, n: usize, received: &[usize]) {
        let m = 7;
        let mut rng = Rng::from_key(&[5]);
        let a: Vec<f64> = (0..r * m).map(|_| rng.normal()).collect();
        let x: Vec<f64> = (0..m).map(|_| rng.normal()).collect();
        let y: Vec<f64> = a.chunks(m).map(|row| row.iter().zip(&x).map(|(p, q)| p * q).sum()).collect();
        let code = RowCode::new(kind, r, n, 3);
        let z_all = product(&code, &a, m, &x);
        let z: Vec<f64> = received.iter().map(|&j| z_all[j]).collect();
        assert!(code.decodable(received));
        let dec = code.decoder(received).unwrap();
        let got = dec.apply(&z);
        let norm = y.iter().map(|v| v * v).sum::<f64>().sqrt();
        let err = got.iter().zip(&y).map(|(p, q)| (p - q) * (p - q)).sum::<f64>().sqrt() / norm;
        assert!(err < 1e-10, "{kind:?}: relative error {err}");
    }

    #[test]
    fn every_code_decodes_y_from_a_sufficient_set() {
        let mut rng = Rng::from_key(&[9]);
        let pick =
            |rng: &mut Rng, n: usize, k: usize| -> Vec<usize> { rng.permutation(n).into_iter().take(k).collect() };
        check(RowCodeKind::Identity, 50, 50, &pick(&mut rng, 50, 50));
        check(RowCodeKind::Gaussian, 60, 90, &pick(&mut rng, 90, 60));
        check(RowCodeKind::Systematic, 60, 90, &pick(&mut rng, 90, 60));
        // systematic rows only: no solve
        check(RowCodeKind::Systematic, 60, 90, &(0..60).rev().collect::<Vec<_>>());
        // LT from 60% overhead (small k needs more than the 13% of k = 10 000), shuffled
        check(RowCodeKind::Lt { c: 0.03, delta: 0.1 }, 300, 480, &pick(&mut rng, 480, 480));
    }

    /// Peeling at scale: integer values (every sum exact in f64) come back exactly, so the
    /// schedule is right.
    #[test]
    fn lt_peeling_is_exact_on_integers_at_scale() {
        for r in [2000usize, 10000] {
            let n = (r as f64 * 1.3) as usize;
            let code = RowCode::new(RowCodeKind::Lt { c: 0.03, delta: 0.1 }, r, n, 7);
            let mut rng = Rng::from_key(&[1]);
            let y: Vec<f64> = (0..r).map(|_| rng.below(1000) as f64 - 500.0).collect();
            let received = rng.permutation(n);
            let z = code.values(&received, &y);
            let got = code.decoder(&received).unwrap().apply(&z);
            let wrong = got.iter().zip(&y).filter(|(a, b)| a != b).count();
            assert_eq!(wrong, 0, "r = {r}");
        }
    }

    /// Over the reals, plain peeling of r = 10 000 amplified round-off to relative errors of
    /// 1e3 (errors add up along peeling chains); the bounded-growth order with refinement
    /// decodes to round-off.
    #[test]
    fn lt_peeling_over_the_reals_stays_at_round_off() {
        let r = 10_000;
        let n = 13_000;
        let code = RowCode::new(RowCodeKind::Lt { c: 0.03, delta: 0.1 }, r, n, 11);
        let mut rng = Rng::from_key(&[2]);
        let y: Vec<f64> = (0..r).map(|_| rng.normal()).collect();
        let received = rng.permutation(n);
        let z = code.values(&received, &y);
        let dec = code.decoder(&received).unwrap();
        assert!(dec.cond < 1e6, "growth bound {}", dec.cond);
        let got = dec.apply(&z);
        let norm = y.iter().map(|v| v * v).sum::<f64>().sqrt();
        let err = got.iter().zip(&y).map(|(a, b)| (a - b) * (a - b)).sum::<f64>().sqrt() / norm;
        assert!(err < 1e-12, "relative error {err:e}");
    }

    #[test]
    fn too_few_rows_are_not_decodable() {
        let code = RowCode::new(RowCodeKind::Gaussian, 20, 30, 1);
        assert!(!code.decodable(&(0..19).collect::<Vec<_>>()));
        assert_eq!(code.decoder(&(0..19).collect::<Vec<_>>()).unwrap_err(), RowDecodeError::NotYet(19, 20));
        let sys = RowCode::new(RowCodeKind::Systematic, 20, 30, 1);
        // 15 systematic + 4 parity: 19 of 20
        let rec: Vec<usize> = (0..15).chain(20..24).collect();
        assert_eq!(sys.decoder(&rec).unwrap_err(), RowDecodeError::NotYet(19, 20));
        // repeated rows do not count twice for the systematic part
        let code = RowCode::new(RowCodeKind::Lt { c: 0.03, delta: 0.1 }, 100, 150, 2);
        assert!(!code.decodable(&(0..50).collect::<Vec<_>>()));
    }

    #[test]
    fn systematic_decode_solves_only_the_missing_entries() {
        let code = RowCode::new(RowCodeKind::Systematic, 40, 60, 4);
        let rec: Vec<usize> = (0..35).chain(40..45).collect();
        let dec = code.decoder(&rec).unwrap();
        let s = dec.solve.as_ref().unwrap();
        assert_eq!(s.unknown, vec![35, 36, 37, 38, 39]);
        assert!(dec.cond >= 1.0 && dec.cond < MAX_DECODE_COND);
    }
}
