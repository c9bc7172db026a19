//! The master of a coded matrix–vector product (HCMM and its baselines): each child returns its
//! coded rows' values (rows `start .. start + ℓ` of Ã·x, in one message); the master accepts
//! whole messages until the coded rows received determine y (at least r rows for the MDS codes,
//! successful peeling for LT, every row for the uncoded schemes), then decodes: the accepted
//! messages are gathered (in child order) into one vector z and a [`Map`] (the code's [`RowDecoder`]: direct
//! reads, an LU solve, or peeling) turns z into y. Decoders are cached per process and code by
//! the rows received, so iterations and simulated trials with the same responders factorize
//! once.

use std::collections::HashMap;
use std::ops::Range;
use std::sync::{Arc, Mutex};

use outrun_codes::{RowCode, RowDecodeError, RowDecoder};

use super::aggregate::Aggregator;
use super::combine::{Combination, Map, Post, Src, Term};
use outrun_plan::{Plan, PlanCode};

/// Values (8-byte words) the decoders kept for one code may hold: 64 MB.
const CACHE_VALUES: usize = 8 << 20;

/// A code shared by every aggregator of the process (the simulator builds new machines every
/// trial), with its decoders by the coded rows received: repeated iterations and trials with
/// the same responders factorize once, and the dense rows are generated once.
struct Shared {
    code: RowCode,
    /// Decoders by rows received, and the values they hold (at most [`CACHE_VALUES`]).
    decoders: Mutex<Decoders>,
}

/// Decoders by rows received, and the values they hold.
type Decoders = (HashMap<Vec<usize>, Arc<Decode>>, usize);

impl Shared {
    /// The code of `spec` (the last few codes are kept).
    fn of(spec: &outrun_plan::RowsSpec) -> Arc<Shared> {
        static CODES: Mutex<Vec<Arc<Shared>>> = Mutex::new(vec![]);
        let mut codes = CODES.lock().unwrap_or_else(|e| e.into_inner());
        if let Some(s) = codes
            .iter()
            .find(|s| (s.code.kind, s.code.r, s.code.n, s.code.seed) == (spec.kind, spec.r, spec.n, spec.seed))
        {
            return s.clone();
        }
        let s = Arc::new(Shared { code: spec.build(), decoders: Mutex::new((HashMap::new(), 0)) });
        if codes.len() >= 4 {
            codes.remove(0);
        }
        codes.push(s.clone());
        s
    }

    /// The decoder of the received `rows` (gathered into `rows_in` values), cached.
    fn decoder(&self, rows: &[usize], rows_in: usize) -> Result<Arc<Decode>, RowDecodeError> {
        if let Some(d) = self.decoders.lock().unwrap_or_else(|e| e.into_inner()).0.get(rows) {
            return Ok(d.clone());
        }
        let d = Arc::new(Decode { dec: self.code.decoder(rows)?, rows_in, r: self.code.r });
        let size = d.dec.size();
        let mut guard = self.decoders.lock().unwrap_or_else(|e| e.into_inner());
        let (map, held) = &mut *guard;
        if *held + size > CACHE_VALUES {
            map.clear();
            *held = 0;
        }
        if size <= CACHE_VALUES {
            map.insert(rows.to_vec(), d.clone());
            *held += size;
        }
        Ok(d)
    }
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
    shared: Arc<Shared>,
    /// Rows the allocation was made for (r; r(1 + overhead) for LT), for messages.
    target: usize,
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
        let PlanCode::Rows { code: spec, target, .. } = &plan.codes[code] else {
            panic!("a rows rule needs a rows code")
        };
        let children = &plan.nodes[rank].children;
        let ranges = children.iter().map(|&c| plan.nodes[c].coded_rows().unwrap_or(0..0)).collect();
        let k = children.len();
        Rows {
            shared: Shared::of(spec),
            target: *target,
            ranges,
            got: vec![false; k],
            failed: vec![false; k],
            order: vec![],
            received: vec![],
            done: false,
            lengths: false,
        }
    }

    fn code(&self) -> &RowCode {
        &self.shared.code
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
        self.done = self.code().decodable(&self.received);
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
        !self.done && !self.code().decodable(&self.rows_of((0..self.ranges.len()).filter(|&i| !self.failed[i])))
    }

    fn lengths_only(&mut self) {
        self.lengths = true;
    }

    fn combine(&mut self) -> Combination {
        let r = self.code().r;
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
        let decoded = self.shared.decoder(&rows, at);
        let mut c = Combination::exact(r, terms);
        c.used = self.order.clone();
        c.notes.rows = Some(at);
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
                c.notes.decode_error = Some(e.to_string());
            }
        }
        c
    }

    fn needs(&self) -> String {
        let c = self.code();
        match c.kind {
            outrun_codes::RowCodeKind::Identity => format!("all {} rows", c.r),
            outrun_codes::RowCodeKind::Lt { .. } => {
                format!("coded rows that peel to all {} (allocated for {})", c.r, self.target)
            }
            _ => format!("any {} of {} coded rows", c.r, c.n),
        }
    }
}
