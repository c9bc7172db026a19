//! The master of a coded matrix–vector product (HCMM and its baselines): each child returns its
//! coded rows' values (rows `start .. start + ℓ` of Ã·x, in one message); the master accepts
//! whole messages until the coded rows received determine y (at least r rows for the MDS codes,
//! successful peeling for LT, every row for the uncoded schemes), then decodes: the accepted
//! messages are gathered (in child order) into one vector z and a [`Map`] (the code's [`RowDecoder`]: direct
//! reads, an LU solve, or peeling) turns z into y. Decoders are cached (per process)
//! by the rows received, so iterations and simulated trials with the same responders factorize
//! once.

use std::collections::HashMap;
use std::ops::Range;
use std::sync::{Arc, Mutex};

use outrun_codes::{RowCode, RowDecodeError, RowDecoder};

use super::aggregate::Aggregator;
use super::combine::{Combination, Map, Post, Src, Term};
use crate::plan::{Plan, PlanCode};

/// Values (8 bytes each) the decoders kept in [`cached`] may hold: 64 MB.
const CACHE_VALUES: usize = 8 << 20;

/// Key of a cached decoder: the code and the coded rows received.
type CacheKey = (RowCodeKey, Vec<usize>);

/// A code's identity (kind by name, r, n, seed).
type RowCodeKey = (String, usize, usize, u64);

/// The decoders held and their size in values.
type Cache = Option<(HashMap<CacheKey, Arc<Decode>>, usize)>;

/// The code of `spec`, built once per process (its dense rows are generated on first use and
/// shared: the simulator builds new machines every trial).
fn shared_code(spec: &crate::plan::RowsSpec) -> Arc<RowCode> {
    static CODES: Mutex<Vec<Arc<RowCode>>> = Mutex::new(vec![]);
    let mut codes = CODES.lock().unwrap_or_else(|e| e.into_inner());
    if let Some(c) = codes.iter().find(|c| (c.kind, c.r, c.n, c.seed) == (spec.kind, spec.r, spec.n, spec.seed)) {
        return c.clone();
    }
    let c = Arc::new(spec.build());
    if codes.len() >= 4 {
        codes.remove(0);
    }
    codes.push(c.clone());
    c
}

/// Decoders shared by every aggregator of the process, keyed by the code and the rows
/// received: the simulator's trials (new machines every trial) and repeated iterations with the
/// same responders factorize once.
fn cached(code: &RowCode, rows: &[usize], make: impl FnOnce() -> Result<Arc<Decode>, RowDecodeError>) -> Result<Arc<Decode>, RowDecodeError> {
    static CACHE: Mutex<Cache> = Mutex::new(None);
    let key = ((format!("{:?}", code.kind), code.r, code.n, code.seed), rows.to_vec());
    if let Some((map, _)) = CACHE.lock().unwrap_or_else(|e| e.into_inner()).as_ref() {
        if let Some(d) = map.get(&key) {
            return Ok(d.clone());
        }
    }
    let d = make()?;
    let size = code.r * code.r + rows.len();
    let mut guard = CACHE.lock().unwrap_or_else(|e| e.into_inner());
    let (map, held) = guard.get_or_insert_with(Default::default);
    if *held + size > CACHE_VALUES {
        map.clear();
        *held = 0;
    }
    if size <= CACHE_VALUES {
        map.insert(key, d.clone());
        *held += size;
    }
    Ok(d)
}

/// A decoder as a [`Map`] from the gathered values.
#[derive(Debug)]
struct Decode {
    dec: RowDecoder,
    rows_in: usize,
    r: usize,
}

impl Map for Decode {
    fn in_len(&self) -> usize {
        self.rows_in
    }
    fn out_len(&self) -> usize {
        self.r
    }
    fn apply(&self, z: &[f64]) -> Vec<f64> {
        self.dec.apply(z)
    }
}

/// The map of a timing simulation: lengths only, nothing is decoded.
#[derive(Debug)]
struct Lengths {
    rows_in: usize,
    r: usize,
}

impl Map for Lengths {
    fn in_len(&self) -> usize {
        self.rows_in
    }
    fn out_len(&self) -> usize {
        self.r
    }
    fn apply(&self, _z: &[f64]) -> Vec<f64> {
        unreachable!("a lengths-only combination is never applied to values")
    }
}

/// The mat-vec master's aggregator.
pub(crate) struct Rows {
    code: Arc<RowCode>,
    /// Each child's coded rows.
    ranges: Vec<Range<usize>>,
    got: Vec<bool>,
    failed: Vec<bool>,
    order: Vec<usize>,
    received: Vec<usize>,
    done: bool,
    /// Timing simulation: no decoder is built (the map only says the lengths).
    lengths: bool,
}

impl Rows {
    pub(crate) fn new(plan: &Plan, rank: usize, code: usize) -> Self {
        let PlanCode::Rows { code: spec, .. } = &plan.codes[code] else { panic!("a rows rule needs a rows code") };
        let children = &plan.nodes[rank].children;
        let ranges = children
            .iter()
            .map(|&c| match plan.nodes[c].parts.first().and_then(|p| p.segments.first()) {
                Some(seg) => seg.start..seg.start + seg.len,
                None => 0..0,
            })
            .collect();
        let k = children.len();
        Rows { code: shared_code(spec), ranges, got: vec![false; k], failed: vec![false; k], order: vec![], received: vec![], done: false, lengths: false }
    }

    fn rows_of(&self, children: impl Iterator<Item = usize>) -> Vec<usize> {
        children.flat_map(|i| self.ranges[i].clone()).collect()
    }
}

impl Aggregator for Rows {
    fn begin(&mut self, _t: u64) {
        self.got.iter_mut().for_each(|g| *g = false);
        self.failed.iter_mut().for_each(|f| *f = false);
        self.order.clear();
        self.received.clear();
        self.done = false;
    }

    fn offer(&mut self, idx: usize, round: u32) -> bool {
        if round != 0 || self.got[idx] || self.failed[idx] || self.done {
            return false;
        }
        self.got[idx] = true;
        self.order.push(idx);
        self.received.extend(self.ranges[idx].clone());
        self.done = self.code.decodable(&self.received);
        true
    }

    fn fail(&mut self, idx: usize) {
        if !self.got[idx] {
            self.failed[idx] = true;
        }
    }

    fn satisfied(&self) -> bool {
        self.done
    }

    fn hopeless(&self) -> bool {
        !self.done && !self.code.decodable(&self.rows_of((0..self.ranges.len()).filter(|&i| !self.failed[i])))
    }

    fn lengths_only(&mut self) {
        self.lengths = true;
    }

    fn combine(&mut self) -> Combination {
        let r = self.code.r;
        // gather the accepted messages in child order (so the decoder depends on the set of
        // responders, not on their arrival order, and is cached by it)
        let mut used: Vec<(usize, usize)> = self.order.iter().enumerate().map(|(j, &i)| (i, j)).collect();
        used.sort_unstable();
        let mut terms = vec![];
        let mut at = 0;
        for &(i, j) in &used {
            let len = self.ranges[i].len();
            terms.push(Term { src: Src::Arrival(j), from: 0, to: at, len, coef: 1.0 });
            at += len;
        }
        let key: Vec<usize> = used.iter().map(|&(i, _)| i).collect();
        if self.lengths {
            let mut c = Combination::exact(r, terms);
            c.used = self.order.clone();
            c.post = Some(Post(Arc::new(Lengths { rows_in: at, r })));
            return c;
        }
        let rows = self.rows_of(key.iter().copied());
        let decoded = cached(&self.code, &rows, || self.code.decoder(&rows).map(|dec| Arc::new(Decode { dec, rows_in: at, r })));
        let mut c = Combination::exact(r, terms);
        c.used = self.order.clone();
        c.notes.push(("rows".into(), serde_json::json!(at)));
        match decoded {
            Ok(d) => {
                c.cond = d.dec.cond;
                // the decode's relative error bound κ·ε (0 for direct reads and peeling)
                c.residual = if d.dec.cond > 1.0 { d.dec.cond * f64::EPSILON } else { 0.0 };
                c.post = Some(Post(d));
            }
            Err(e) => {
                c.residual = match e {
                    RowDecodeError::Singular(k) => (k * f64::EPSILON).max(1.0),
                    RowDecodeError::NotYet(..) => f64::INFINITY,
                };
                c.exact = false;
                c.notes.push(("decode_error".into(), serde_json::json!(e.to_string())));
            }
        }
        c
    }

    fn needs(&self) -> String {
        match self.code.kind {
            outrun_codes::RowCodeKind::Identity => format!("all {} rows", self.code.r),
            outrun_codes::RowCodeKind::Lt { .. } => format!("coded rows that peel to all {} (about {:.0})", self.code.r, self.code.r as f64 * 1.13),
            _ => format!("any {} of {} coded rows", self.code.r, self.code.n),
        }
    }
}
