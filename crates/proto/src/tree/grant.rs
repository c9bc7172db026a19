//! Uploads by grant (`engine.upload = "granted"`): what a parent knows of one iteration.
//!
//! A child that has its result sends a small ready notice (`Ready`, with its number of rounds)
//! instead of the result. The parent offers the notice to its wait rule — the same
//! [`Aggregator`] that eager results go through, decided on the notice instead of the data, which
//! no rule looks at: `offer` is accepted → the upload is granted (`Grant`), and its slot `j` is
//! `Src::Arrival(j)` of the combination; not accepted → refused (`Refuse`, one small message).
//! A multi-round child (adaptive codes) is granted one round at a time: round r + 1 is offered
//! when round r has arrived, as an eager child sends it when round r has left. The parent
//! combines once the rule is met *and* every granted slot is filled, so only results it uses
//! cross the link. The moment its grants meet the rule, the parent refuses every child that
//! has not announced yet, so stragglers do not even send their notices (each refusal is one
//! small message down, which the papers' model does not charge).
//!
//! A granted child whose upload does not come (its process died, its link failed) is given up
//! on at the re-grant check: the rule is replayed on what arrived, the silent children are
//! marked failed, and the refused children (who keep their result until the next model) are
//! offered again in notice order. When none can replace them, the parent's wait budget ends
//! the iteration with today's deadline error.

use crate::roles::Aggregator;

/// One granted upload: child index, round, and the result once it arrived.
struct Slot<P> {
    child: usize,
    round: u32,
    body: Option<P>,
}

/// A parent's grants for the iteration being collected, and its counts over the run.
pub(crate) struct Grants<P> {
    /// Granted uploads in the order the rule accepted them.
    slots: Vec<Slot<P>>,
    /// Children that announced a result, with their number of rounds, in notice order.
    ready: Vec<(usize, u32)>,
    /// Children refused this iteration (they hold a result), in notice order.
    refused: Vec<usize>,
    /// Children answered this iteration (granted or refused, before or after their notice).
    told: Vec<bool>,
    /// Counts of the iteration: (notices, grants, refusals).
    pub(crate) iteration: (u32, u32, u32),
    /// Counts over the run: notices, grants, refusals, re-grants.
    pub(crate) total: [u64; 4],
}

impl<P> Grants<P> {
    /// The book of a parent of `children` children.
    pub(crate) fn new(children: usize) -> Self {
        Grants {
            slots: vec![],
            ready: vec![],
            refused: vec![],
            told: vec![false; children],
            iteration: (0, 0, 0),
            total: [0; 4],
        }
    }

    /// Forget the previous iteration.
    pub(crate) fn clear(&mut self) {
        self.slots.clear();
        self.ready.clear();
        self.refused.clear();
        self.told.iter_mut().for_each(|t| *t = false);
        self.iteration = (0, 0, 0);
    }

    fn granted(&mut self, child: usize, round: u32) {
        self.slots.push(Slot { child, round, body: None });
        self.iteration.1 += 1;
        self.total[1] += 1;
    }

    fn refusal(&mut self) {
        self.iteration.2 += 1;
        self.total[2] += 1;
    }

    /// Child `idx` announced a result of `rounds` rounds: the round granted, `Some(None)` to
    /// refuse it, or None when it was refused already (its notice crossed the refusal).
    pub(crate) fn notice(&mut self, agg: &mut dyn Aggregator, idx: usize, rounds: u32) -> Option<Option<u32>> {
        self.iteration.0 += 1;
        self.total[0] += 1;
        self.ready.push((idx, rounds));
        if std::mem::replace(&mut self.told[idx], true) {
            // refused already; it holds a result all the same (a re-grant may take it)
            self.refused.push(idx);
            return None;
        }
        Some(if rounds > 0 && agg.offer(idx, 0) {
            self.granted(idx, 0);
            Some(0)
        } else {
            self.refused.push(idx);
            self.refusal();
            None
        })
    }

    /// The grants meet the rule: the children not answered yet (except `failed` ones), now
    /// refused before they announce.
    pub(crate) fn refuse_rest(&mut self, failed: &[usize]) -> Vec<usize> {
        let rest: Vec<usize> = (0..self.told.len()).filter(|&i| !self.told[i] && !failed.contains(&i)).collect();
        for &i in &rest {
            self.told[i] = true;
            self.refusal();
        }
        rest
    }

    /// A notice of child `idx` for the iteration after the parent stopped collecting it:
    /// whether to refuse it (false: it was refused already).
    pub(crate) fn notice_after(&mut self, idx: usize) -> bool {
        self.iteration.0 += 1;
        self.total[0] += 1;
        if std::mem::replace(&mut self.told[idx], true) {
            return false;
        }
        self.refusal();
        true
    }

    /// Round `round` of child `idx` arrived: whether it was granted (and not yet filled).
    pub(crate) fn fill(&mut self, idx: usize, round: u32, body: P) -> bool {
        match self.slots.iter_mut().find(|s| s.child == idx && s.round == round && s.body.is_none()) {
            Some(s) => {
                s.body = Some(body);
                true
            }
            None => false,
        }
    }

    /// After round `round` of child `idx` arrived: its next round, granted if the rule takes it.
    pub(crate) fn next_round(&mut self, agg: &mut dyn Aggregator, idx: usize, round: u32) -> Option<u32> {
        let rounds = self.ready.iter().find(|r| r.0 == idx).map(|r| r.1)?;
        let next = round + 1;
        if next < rounds && !agg.satisfied() && agg.offer(idx, next) {
            self.granted(idx, next);
            Some(next)
        } else {
            None
        }
    }

    /// Every granted upload arrived.
    pub(crate) fn complete(&self) -> bool {
        self.slots.iter().all(|s| s.body.is_some())
    }

    /// Children with a granted upload not yet arrived.
    pub(crate) fn outstanding(&self) -> Vec<usize> {
        let mut v: Vec<usize> = self.slots.iter().filter(|s| s.body.is_none()).map(|s| s.child).collect();
        v.dedup();
        v
    }

    /// The granted results in slot order (`Src::Arrival` numbering), with their children and
    /// rounds; call when complete.
    pub(crate) fn take(&mut self) -> (Vec<(usize, u32)>, Vec<P>) {
        self.slots.drain(..).map(|s| ((s.child, s.round), s.body.expect("every granted upload arrived"))).unzip()
    }

    /// Give up on the outstanding grants and offer the refused children instead: the rule is
    /// replayed (`begin(t)`, then what arrived, in order), the silent children are failed, the
    /// refused ones offered in notice order. Returns (children given up on, children granted).
    pub(crate) fn regrant(&mut self, agg: &mut dyn Aggregator, t: u64) -> (Vec<usize>, Vec<usize>) {
        let gone = self.outstanding();
        agg.begin(t);
        let old = std::mem::take(&mut self.slots);
        for s in old {
            if s.body.is_some() && agg.offer(s.child, s.round) {
                self.slots.push(s);
            }
        }
        for &g in &gone {
            agg.fail(g);
        }
        let mut granted = vec![];
        let mut still = vec![];
        for idx in std::mem::take(&mut self.refused) {
            if !agg.satisfied() && agg.offer(idx, 0) {
                self.granted(idx, 0);
                self.total[3] += 1;
                granted.push(idx);
            } else {
                still.push(idx);
            }
        }
        self.refused = still;
        (gone, granted)
    }
}
