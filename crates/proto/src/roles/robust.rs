//! Robust decoding (`scheme.byzantine = f`): a gradient-code parent that out-votes up to `f`
//! corrupted results. It waits for `n − s + 2f` results (the plan's `need`), then screens their
//! values: the smallest exclusion (≤ f) leaving a consistent, decodable set
//! (`outrun_codes::robust_screen`, where the proof that the kept set decodes the true sum is).
//! Excluded results are logged as `rejected`, with the relative syndromes before and after. If
//! no exclusion works it waits for one more result and tries again; once every child has
//! answered it fails the iteration with one line: more than `f` results were corrupted.
//!
//! A communication-efficient group (`cegc`, a linear [N, K] code: worker i sends
//! `Σ_k G[k, i]·chunk_k`) is screened the same way on its own, with `Gᵀ` as the rows and the
//! code's rank test (or peeling) as what decodes ([`GroupScreen`], used by the grouped rule).

use outrun_codes::{
    robust_screen, robust_screen_with, Decoder, GradientCode, LinearCode, SurvivorSet, CONSISTENT, EXACT_RESIDUAL,
};

use super::aggregate::{Aggregator, Tally};
use super::combine::{Combination, Src, Term};

/// A gradient code's decode that excludes corrupted results.
pub(super) struct Robust {
    b: GradientCode,
    decoder: Decoder,
    /// Results needed at first (n − s + 2f; the tally holds those needed now), corrupted
    /// tolerated.
    base: usize,
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
            f,
            len,
            tally: Tally::new(k, need),
            excluded: vec![],
            syndrome: None,
            verdict: None,
            blind: false,
        }
    }
}

impl Aggregator for Robust {
    fn begin(&mut self, _t: u64) {
        self.tally.need = self.base;
        self.tally.clear();
        self.excluded.clear();
        self.syndrome = None;
        self.verdict = None;
    }

    fn offer(&mut self, idx: usize, round: u32) -> bool {
        self.tally.offer(idx, round)
    }

    fn fail(&mut self, idx: usize) {
        self.tally.fail(idx);
    }

    fn satisfied(&self) -> bool {
        self.tally.satisfied()
    }

    fn hopeless(&self) -> bool {
        self.tally.hopeless()
    }

    fn screen(&mut self, _own: &[&[f64]], values: &[&[f64]]) -> bool {
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
                self.tally.need = self.tally.order.len() + 1;
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

    fn screens(&self) -> bool {
        !self.blind
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
        format!("{} of {} results (up to {} corrupted)", self.tally.need, self.tally.k, self.f)
    }

    fn lengths_only(&mut self) {
        self.blind = true;
    }
}

/// One `cegc` group's robust screening: it decodes from `need` = K + 2f results (more after a
/// failed screening), and remembers whom it rejected.
#[derive(Clone, Debug)]
pub(super) struct GroupScreen {
    base: usize,
    pub(super) need: usize,
    /// Children (indices) rejected this iteration, and the syndromes (all, kept).
    pub(super) rejected: Vec<usize>,
    pub(super) syndrome: Option<(f64, f64)>,
    /// This iteration's results passed the screening (a later call leaves them be).
    pub(super) screened: bool,
    best: Option<f64>,
    f: usize,
}

impl GroupScreen {
    pub(super) fn new(need: usize) -> Self {
        GroupScreen { base: need, need, rejected: vec![], syndrome: None, screened: false, best: None, f: 0 }
    }

    pub(super) fn begin(&mut self) {
        *self = GroupScreen::new(self.base);
    }

    /// Screen the group's results `values` at code positions `positions`: the positions (into
    /// them) to exclude, or None when no exclusion of ≤ f works (it then needs one more).
    pub(super) fn screen(
        &mut self,
        code: &LinearCode,
        positions: &[usize],
        values: &[&[f64]],
        f: usize,
    ) -> Option<Vec<usize>> {
        self.f = f;
        let gt = code.g.t().to_owned();
        match robust_screen_with(&gt, positions, values, f, &|kept| code.decodable(kept)) {
            Ok(s) => {
                self.syndrome = Some((s.before, s.after));
                self.screened = true;
                Some(s.excluded)
            }
            Err(e) => {
                self.need = positions.len() + 1;
                self.best = Some(e.best);
                None
            }
        }
    }

    /// Why the group can never decode, when `alive` children cannot give what it needs after a
    /// failed screening.
    pub(super) fn verdict(&self, alive: usize) -> Option<String> {
        let best = self.best.filter(|_| alive < self.need)?;
        Some(format!(
            "no set of the {} results received, excluding up to {} of them, is consistent and decodable (smallest relative syndrome {best:.2e} > {CONSISTENT:e}): more than scheme.byzantine = {} results are corrupted",
            self.need - 1,
            self.f,
            self.f
        ))
    }
}
