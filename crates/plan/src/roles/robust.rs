//! Robust decoding (`scheme.byzantine = f`): a gradient-code parent that out-votes up to `f`
//! corrupted results. It waits for `n − s + 2f` results (the plan's `need`), then screens their
//! values: the smallest exclusion (≤ f) leaving a consistent, decodable set
//! (`outrun_codes::robust_screen`, where the proof that the kept set decodes the true sum is).
//! Excluded results are logged as `rejected`, with the relative syndromes before and after. If
//! no exclusion works it waits for one more result and tries again; once every child has
//! answered it fails the iteration with one line: more than `f` results were corrupted.

use outrun_codes::{robust_screen, Decoder, GradientCode, SurvivorSet, CONSISTENT, EXACT_RESIDUAL};

use super::aggregate::{Aggregator, Tally};
use super::combine::{Combination, Src, Term};

/// A gradient code's decode that excludes corrupted results.
pub(super) struct Robust {
    b: GradientCode,
    decoder: Decoder,
    /// Results needed at first (n − s + 2f), needed now, corrupted tolerated.
    base: usize,
    need: usize,
    f: usize,
    len: usize,
    /// Accepted children in acceptance order, and which failed.
    tally: Tally,
    /// Positions (into `order`) excluded by the last screening, and its syndromes.
    excluded: Vec<usize>,
    syndrome: Option<(f64, f64)>,
    verdict: Option<String>,
    /// Timing simulations: nothing to screen.
    blind: bool,
}

impl Robust {
    pub(super) fn new(b: GradientCode, need: usize, f: usize, len: usize) -> Self {
        let k = b.n;
        Robust {
            decoder: Decoder::new(b.clone()),
            b,
            base: need,
            need,
            f,
            len,
            tally: Tally::new(k),
            excluded: vec![],
            syndrome: None,
            verdict: None,
            blind: false,
        }
    }
}

impl Aggregator for Robust {
    fn begin(&mut self, _t: u64) {
        self.need = self.base;
        self.tally.clear();
        self.excluded.clear();
        self.syndrome = None;
        self.verdict = None;
    }

    fn offer(&mut self, idx: usize, round: u32) -> bool {
        let full = self.satisfied();
        self.tally.offer(idx, round, full)
    }

    fn fail(&mut self, idx: usize) {
        self.tally.fail(idx);
    }

    fn satisfied(&self) -> bool {
        self.tally.order.len() >= self.need
    }

    fn hopeless(&self) -> bool {
        self.tally.alive() < self.need
    }

    fn screen(&mut self, values: &[&[f64]]) -> bool {
        if self.blind {
            return true;
        }
        match robust_screen(&self.b.b, &self.tally.order, values, self.f) {
            Ok(s) => {
                self.excluded = s.excluded;
                self.syndrome = Some((s.before, s.after));
                true
            }
            Err(e) => {
                self.need = self.tally.order.len() + 1;
                if self.hopeless() {
                    self.verdict = Some(format!(
                        "no set of the {} results received, excluding up to {} of them, is consistent and decodable (smallest relative syndrome {:.2e} > {CONSISTENT:e}): more than scheme.byzantine = {} results are corrupted",
                        self.tally.order.len(),
                        self.f,
                        e.best,
                        self.f
                    ));
                }
                false
            }
        }
    }

    fn verdict(&self) -> Option<String> {
        self.verdict.clone()
    }

    fn combine(&mut self) -> Combination {
        let kept: Vec<usize> = (0..self.tally.order.len()).filter(|j| !self.excluded.contains(j)).collect();
        let rows: Vec<usize> = kept.iter().map(|&j| self.tally.order[j]).collect();
        let d = self.decoder.decode(&SurvivorSet::from_indices(self.tally.k, &rows));
        let terms = kept
            .iter()
            .filter(|&&j| d.coeffs[self.tally.order[j]] != 0.0)
            .map(|&j| Term::whole(Src::Arrival(j), self.len, d.coeffs[self.tally.order[j]]))
            .collect();
        let mut c = Combination {
            residual: d.residual,
            exact: d.residual <= EXACT_RESIDUAL,
            ..Combination::exact(self.len, terms)
        };
        c.used = rows;
        c.rejected = self.excluded.iter().map(|&j| self.tally.order[j]).collect();
        c.notes.syndrome = self.syndrome;
        c
    }

    fn needs(&self) -> String {
        format!("{} of {} results (up to {} corrupted)", self.need, self.tally.k, self.f)
    }

    fn lengths_only(&mut self) {
        self.blind = true;
    }
}
