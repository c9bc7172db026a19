//! Mini-batches, drawn the same way by every rank, every scheme and the serial reference.
//!
//! The d samples are cut into b *strata* of consecutive rows (the sizes of
//! [`outrun_plan::alloc::split_sizes`]: ⌈d/b⌉ or ⌊d/b⌋ rows). An epoch is ⌈d/b⌉ iterations; in
//! each epoch every stratum's rows are visited in a seeded order (a function of the seed, the
//! stratum and the epoch alone), one per iteration, so iteration t's batch holds the t-th row of
//! each stratum's order (a shorter stratum gives none in an epoch's last iteration). Hence:
//! - every row is used exactly once per epoch, and a batch has b rows (fewer in an epoch's last
//!   iteration when b does not divide d, like a data loader that keeps the last partial batch);
//! - whether a row is in a batch depends on the row, not on who holds it: every worker holding a
//!   copy of a part, in any scheme's allocation, computes on the same rows, so the coded schemes
//!   stay exact and the serial reference draws the same rows;
//! - a part of m consecutive rows gets m·b/d of them, ± 1 per stratum it cuts: the load stays
//!   balanced whatever the allocation.

use std::collections::HashMap;

use outrun_codes::{domain, Rng};
use outrun_plan::alloc::split_sizes;

/// The batches of d samples, b at a time.
#[derive(Clone, Debug)]
pub struct Batches {
    d: usize,
    b: usize,
    seed: u64,
    /// The orders of the strata in `epoch`, drawn when first asked for.
    epoch: u64,
    orders: HashMap<usize, Vec<usize>>,
}

impl Batches {
    /// Batches of `b` of `d` samples (1 ≤ b ≤ d) under `seed`.
    pub fn new(d: usize, b: usize, seed: u64) -> Self {
        assert!(b >= 1 && b <= d, "1 ≤ b ≤ d");
        Batches { d, b, seed, epoch: 0, orders: HashMap::new() }
    }

    /// Iterations per epoch, ⌈d/b⌉.
    pub fn epoch_len(&self) -> u64 {
        self.d.div_ceil(self.b) as u64
    }

    /// Rows in iteration `t`'s batch.
    pub fn size(&self, t: u64) -> usize {
        let (q, r) = (self.d / self.b, self.d % self.b);
        if ((t % self.epoch_len()) as usize) < q {
            self.b
        } else {
            r
        }
    }

    /// The stratum of row `i`, its first row and its length.
    fn stratum(&self, i: usize) -> (usize, usize, usize) {
        let (q, r) = (self.d / self.b, self.d % self.b);
        let j = if i < r * (q + 1) { i / (q + 1) } else { r + (i - r * (q + 1)) / q };
        (j, j * q + j.min(r), q + usize::from(j < r))
    }

    /// The row stratum `j` (first row `start`, `len` rows) gives iteration `t`, if any.
    fn pick(&mut self, j: usize, start: usize, len: usize, t: u64) -> Option<usize> {
        let (epoch, k) = (t / self.epoch_len(), (t % self.epoch_len()) as usize);
        if k >= len {
            return None;
        }
        if epoch != self.epoch {
            self.epoch = epoch;
            self.orders.clear();
        }
        let seed = self.seed;
        let order = self
            .orders
            .entry(j)
            .or_insert_with(|| Rng::from_key(&[seed, domain::BATCH, j as u64, epoch]).permutation(len));
        Some(start + order[k])
    }

    /// Whether row `i` is in iteration `t`'s batch.
    pub fn contains(&mut self, t: u64, i: usize) -> bool {
        let (j, start, len) = self.stratum(i);
        self.pick(j, start, len, t) == Some(i)
    }

    /// Iteration `t`'s batch, in stratum order.
    pub fn rows(&mut self, t: u64) -> Vec<usize> {
        let sizes = split_sizes(self.d, self.b);
        let mut start = 0;
        let mut out = Vec::with_capacity(self.b);
        for (j, len) in sizes.into_iter().enumerate() {
            out.extend(self.pick(j, start, len, t));
            start += len;
        }
        out
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_row_once_per_epoch_and_membership_agrees() {
        for (d, b) in [(10, 3), (12, 4), (7, 7), (5, 1), (1000, 64)] {
            let mut batches = Batches::new(d, b, 11);
            let e = batches.epoch_len();
            for epoch in 0..2 {
                let mut seen = vec![0; d];
                for t in epoch * e..(epoch + 1) * e {
                    let rows = batches.rows(t);
                    assert_eq!(rows.len(), batches.size(t), "d={d} b={b} t={t}");
                    for &i in &rows {
                        seen[i] += 1;
                    }
                    let mut other = Batches::new(d, b, 11);
                    let members: Vec<usize> = (0..d).filter(|&i| other.contains(t, i)).collect();
                    let mut sorted = rows.clone();
                    sorted.sort_unstable();
                    assert_eq!(members, sorted, "d={d} b={b} t={t}");
                }
                assert!(seen.iter().all(|&c| c == 1), "d={d} b={b}: {seen:?}");
            }
        }
    }

    #[test]
    fn batches_depend_on_the_seed_and_the_epoch() {
        let mut a = Batches::new(100, 10, 1);
        let mut b = Batches::new(100, 10, 2);
        assert_ne!(a.rows(0), b.rows(0));
        assert_ne!(a.rows(0), a.rows(10), "a new order each epoch");
        assert_eq!(a.rows(3), Batches::new(100, 10, 1).rows(3));
        assert_eq!((a.size(9), Batches::new(10, 4, 0).size(2)), (10, 2));
    }
}
