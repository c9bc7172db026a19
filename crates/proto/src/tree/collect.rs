//! A parent's side of a collect-tree node: its children's results for the iteration being
//! collected, the wait rule they are offered to (the plan's [`Aggregator`]), uploads by grant
//! (`grant.rs`), subtrees that failed, and what every child sent over the run (for the
//! shutdown's accounting).

use std::collections::VecDeque;
use std::sync::Arc;

use crate::roles::{aggregator, Aggregator, Combination, Src, Term, Vector};
use outrun_config::Upload;
use outrun_plan::{Links, Plan};
use outrun_runlog::event::{Arrival, Collect, Notes, Shutdown, UploadCounts};

use super::grant::Grants;
use crate::machine::Output;
use crate::wire::{owned_body, Header, Kind, Msg};

/// What the rule combined: the combination, the results it reads (`Src::Arrival` order) and
/// the children's ranks it used.
pub(super) struct Decoded<P> {
    pub(super) comb: Combination,
    pub(super) arrivals: Vec<P>,
    pub(super) used: Vec<usize>,
    pub(super) rejected: Vec<usize>,
}

/// A parent's collection.
pub(super) struct Collection<P> {
    /// The children's ranks, in order (index = the child's row of the code).
    pub(super) ranks: Vec<usize>,
    agg: Box<dyn Aggregator>,
    /// Length of a child's result.
    len: usize,
    /// Uploads by grant (`engine.upload = "granted"`).
    granted: bool,
    grants: Grants<P>,
    /// The iteration is being collected (its rule not yet met, nor failed).
    pub(super) active: bool,
    /// Results accepted this iteration, in acceptance order (`Src::Arrival`).
    arrivals: Vec<P>,
    /// The child and round of each of them.
    keys: Vec<(usize, u32)>,
    /// Who sent them, when, which round.
    arrived: Vec<Arrival>,
    /// Children whose subtree failed this iteration, with the ranks they were missing.
    failed: Vec<(usize, Vec<u32>)>,
    /// Per child: up messages received, the count its goodbye announced, and the last
    /// iteration it answered.
    recv: Vec<u64>,
    bye: Vec<Option<u64>>,
    last: Vec<Option<u64>>,
    /// Bytes received for the current iteration while collecting it: all frames, and results.
    it_bytes: (u64, u64),
    /// Bytes received over the run: all frames, and results discarded as late.
    bytes: (u64, u64),
    /// Failing links (`[links] model = "fail"`), the children's worker ids they are keyed by,
    /// and the children whose messages of the current iteration were lost.
    links: Links,
    workers: Vec<usize>,
    lost: Vec<usize>,
}

/// Put the accepted results in (child, round) order and the terms in (source, offset) order:
/// the decoded sum is then the same to the last bit whatever order the results arrived in (a
/// run resumed from a checkpoint ends bit-equal to one that was not stopped).
fn canonical_order<P>(comb: &mut Combination, arrivals: &mut Vec<P>, keys: Vec<(usize, u32)>) {
    debug_assert_eq!(arrivals.len(), keys.len());
    let mut order: Vec<usize> = (0..keys.len()).collect();
    order.sort_by_key(|&j| keys[j]);
    let mut slot = vec![0; order.len()];
    for (new, &old) in order.iter().enumerate() {
        slot[old] = new;
    }
    let mut taken: Vec<Option<P>> = arrivals.drain(..).map(Some).collect();
    arrivals.extend(order.iter().map(|&j| taken[j].take().expect("a permutation")));
    let key = |t: &Term| match t.src {
        Src::Own(k) => (0, k, t.to, t.from),
        Src::Agg => (1, 0, t.to, t.from),
        Src::Arrival(j) => (2, j, t.to, t.from),
    };
    for t in &mut comb.terms {
        if let Src::Arrival(j) = t.src {
            t.src = Src::Arrival(slot[j]);
        }
    }
    comb.terms.sort_by_key(key);
}

impl<P: Vector> Collection<P> {
    /// The collection of `rank` in `plan` (a node with children), for results of `len` values.
    pub(super) fn new(plan: &Plan, rank: usize, len: usize) -> Self {
        let ranks = plan.nodes[rank].children.clone();
        let k = ranks.len();
        let mut agg = aggregator(plan, rank, len);
        if !P::VALUES {
            agg.lengths_only();
        }
        Collection {
            ranks,
            agg,
            len,
            granted: plan.upload == Upload::Granted,
            grants: Grants::new(k),
            active: false,
            arrivals: vec![],
            keys: vec![],
            arrived: vec![],
            failed: vec![],
            recv: vec![0; k],
            bye: vec![None; k],
            last: vec![None; k],
            it_bytes: (0, 0),
            bytes: (0, 0),
            links: plan.links.clone(),
            workers: plan.nodes[rank].children.iter().map(|&c| plan.nodes[c].worker.unwrap_or(0)).collect(),
            lost: vec![],
        }
    }

    /// Child `idx`'s message of iteration `t` and `kind` is lost on its failing link (its
    /// goodbye never is, so the shutdown's count still closes): discarded, and noted when it
    /// belongs to the iteration being collected (`current`).
    pub(super) fn lost(&mut self, idx: usize, t: u64, kind: Kind, bytes: u64, current: bool) -> bool {
        if !self.links.fails(self.workers[idx], t) {
            return false;
        }
        self.discard(kind, bytes);
        if current && !self.lost.contains(&self.ranks[idx]) {
            self.lost.push(self.ranks[idx]);
        }
        true
    }

    /// Whether uploads are granted.
    pub(super) fn granted(&self) -> bool {
        self.granted
    }

    /// The index of the child of rank `rank`.
    pub(super) fn index(&self, rank: usize) -> Option<usize> {
        self.ranks.iter().position(|&c| c == rank)
    }

    /// Per-child assignments for iteration `t`, sent before the model (schemes that re-assign
    /// work every iteration).
    pub(super) fn assign(&mut self, t: u64, out: &mut VecDeque<Output<P>>) {
        if let Some(assign) = self.agg.assignments(t) {
            for (&c, a) in self.ranks.iter().zip(assign) {
                let head = Header { meta: crate::wire::Meta::Assignment(a), ..Header::new(Kind::Assign, t) };
                out.push_back(send(vec![c], head));
            }
        }
    }

    /// Start collecting iteration `t`: the previous one is forgotten.
    pub(super) fn start(&mut self, t: u64) {
        self.arrivals.clear();
        self.keys.clear();
        self.arrived.clear();
        self.failed.clear();
        self.lost.clear();
        self.grants.clear();
        self.it_bytes = (0, 0);
        self.agg.begin(t);
        self.active = true;
    }

    /// Whether the iteration's results are all in: the rule is met (and, with grants, every
    /// granted upload arrived).
    pub(super) fn collected(&self) -> bool {
        self.agg.satisfied() && (!self.granted || self.grants.complete())
    }

    /// Whether the rule can no longer be met.
    pub(super) fn hopeless(&self) -> bool {
        self.agg.hopeless()
    }

    /// Why the rule can never be met beyond missing children (results that no exclusion makes
    /// consistent), if that is why.
    pub(super) fn verdict(&self) -> Option<String> {
        self.agg.verdict()
    }

    /// A deadline wait rule's seconds after the iteration starts, if the rule has one.
    pub(super) fn deadline(&self) -> Option<f64> {
        self.agg.deadline()
    }

    /// The deadline passed: what has arrived (at least one result) meets the rule.
    pub(super) fn expire(&mut self) {
        self.agg.expire();
    }

    /// Whether the rule screens values (robust decoding) on a run that has them.
    pub(super) fn screens(&self) -> bool {
        P::VALUES && self.agg.screens()
    }

    /// Once collected, a rule that looks at the values (robust decoding, federated rules)
    /// screens the accepted results against the node's own computed parts `own`: whether to
    /// combine now (false: it needs more; it may have become hopeless).
    pub(super) fn screen(&mut self, own: &[P]) -> bool {
        let own: Vec<&[f64]> = own.iter().filter_map(Vector::values).collect();
        let values: Vec<&[f64]> = self.arrivals.iter().filter_map(Vector::values).collect();
        self.agg.screen(&own, &values)
    }

    /// A frame of `bytes` arrived from a child (any kind: the run's count).
    pub(super) fn frame(&mut self, bytes: u64) {
        self.bytes.0 += bytes;
    }

    /// An up message of iteration `t`, `kind` and `bytes` from child `idx` (not a goodbye);
    /// `current`: it belongs to the iteration being collected.
    pub(super) fn count(&mut self, idx: usize, t: u64, kind: Kind, bytes: u64, current: bool) {
        self.recv[idx] += 1;
        self.last[idx] = self.last[idx].max(Some(t));
        if current {
            self.it_bytes.0 += bytes;
            if kind == Kind::Result {
                self.it_bytes.1 += bytes;
            }
        }
    }

    /// Child `idx`'s goodbye announced `count` up messages.
    pub(super) fn bye(&mut self, idx: usize, count: u64) {
        self.bye[idx] = Some(count);
    }

    /// A message the node could not use (late, beyond the rule, an abandonment): counted.
    pub(super) fn discard(&mut self, kind: Kind, bytes: u64) {
        if kind == Kind::Result {
            self.bytes.1 += bytes;
        }
    }

    /// Every child said goodbye, with every up message it announced received.
    pub(super) fn drained(&self) -> bool {
        self.bye.iter().zip(&self.recv).all(|(b, r)| *b == Some(*r))
    }

    /// The children whose goodbye is missing, with the last iteration each answered.
    pub(super) fn waiting(&self) -> Vec<(u32, Option<u64>)> {
        (0..self.ranks.len())
            .filter(|&i| self.bye[i] != Some(self.recv[i]))
            .map(|i| (self.ranks[i] as u32, self.last[i]))
            .collect()
    }

    /// Round `round` of child `idx`'s result for the iteration being collected (`t`) arrived at
    /// `now`: whether it is used. With grants, a used round may earn the child's next round.
    pub(super) fn result(
        &mut self,
        idx: usize,
        t: u64,
        round: u32,
        body: Option<Arc<P>>,
        now: f64,
        out: &mut VecDeque<Output<P>>,
    ) -> bool {
        let from = self.ranks[idx];
        if self.granted {
            let body = owned_body(body, self.len);
            if !self.grants.fill(idx, round, body) {
                return false;
            }
            self.arrived.push(Arrival { rank: from, at: now, round });
            if let Some(r) = self.grants.next_round(&mut *self.agg, idx, round) {
                out.push_back(send(vec![from], Header { round: r, ..Header::new(Kind::Grant, t) }));
                self.refuse_rest(t, out);
            }
            return true;
        }
        if !self.agg.offer(idx, round) {
            return false;
        }
        self.arrivals.push(owned_body(body, self.len));
        self.keys.push((idx, round));
        self.arrived.push(Arrival { rank: from, at: now, round });
        true
    }

    /// Child `idx`'s subtree could not produce the iteration: it was missing `missing`.
    pub(super) fn failed(&mut self, idx: usize, missing: Vec<u32>) {
        self.failed.push((idx, missing));
        self.agg.fail(idx);
    }

    /// A ready notice of child `idx` for the current iteration `t` (with `rounds` rounds):
    /// grant its upload if the rule takes it while collecting, refuse it otherwise.
    pub(super) fn notice(&mut self, idx: usize, t: u64, rounds: u32, collecting: bool, out: &mut VecDeque<Output<P>>) {
        let grant = if collecting {
            match self.grants.notice(&mut *self.agg, idx, rounds) {
                Some(g) => g,
                None => return, // refused before its notice came
            }
        } else if self.grants.notice_after(idx) {
            None
        } else {
            return;
        };
        let head = match grant {
            Some(r) => Header { round: r, ..Header::new(Kind::Grant, t) },
            None => Header::new(Kind::Refuse, t),
        };
        out.push_back(send(vec![self.ranks[idx]], head));
        if grant.is_some() {
            self.refuse_rest(t, out);
        }
    }

    /// A notice that crossed its refusal and arrived after its iteration ended: counted, no
    /// answer (no result came with it).
    pub(super) fn stale_notice(&mut self) {
        self.grants.total[0] += 1;
    }

    /// Once the grants meet the rule, the children that have not announced need not: refuse
    /// them now (one small message each).
    fn refuse_rest(&mut self, t: u64, out: &mut VecDeque<Output<P>>) {
        if self.agg.satisfied() {
            let failed: Vec<usize> = self.failed.iter().map(|f| f.0).collect();
            let rest: Vec<usize> = self.grants.refuse_rest(&failed).into_iter().map(|i| self.ranks[i]).collect();
            if !rest.is_empty() {
                out.push_back(send(rest, Header::new(Kind::Refuse, t)));
            }
        }
    }

    /// Granted uploads that did not come by the re-grant check of iteration `t` are given up
    /// on, and refused children granted instead where the rule allows it ([`Self::grant`]
    /// tells them); returns the ranks given up on and granted, or None when no grant is
    /// outstanding.
    pub(super) fn regrant(&mut self, t: u64) -> Option<(Vec<usize>, Vec<usize>)> {
        if self.grants.outstanding().is_empty() {
            return None;
        }
        let (gone, granted) = self.grants.regrant(&mut *self.agg, t);
        let gone: Vec<usize> = gone.into_iter().map(|i| self.ranks[i]).collect();
        let granted: Vec<usize> = granted.into_iter().map(|i| self.ranks[i]).collect();
        self.arrived.retain(|a| !gone.contains(&a.rank));
        Some((gone, granted))
    }

    /// Tell the children of ranks `granted` that their uploads for `t` are granted now.
    pub(super) fn grant(&mut self, t: u64, granted: &[usize], out: &mut VecDeque<Output<P>>) {
        for &c in granted {
            out.push_back(send(vec![c], Header::new(Kind::Grant, t)));
        }
        if !granted.is_empty() {
            self.refuse_rest(t, out);
        }
    }

    /// Combine what the rule accepted, and say in `record` what was used and how well it
    /// decoded.
    pub(super) fn combine(&mut self, record: &mut Collect, notes: &mut Notes) -> Decoded<P> {
        self.active = false;
        if self.granted {
            (self.keys, self.arrivals) = self.grants.take();
        }
        let mut comb = self.agg.combine();
        canonical_order(&mut comb, &mut self.arrivals, std::mem::take(&mut self.keys));
        let used: Vec<usize> = comb.used.iter().map(|&i| self.ranks[i]).collect();
        record.used = Some(used.clone());
        let rejected: Vec<usize> = comb.rejected.iter().map(|&i| self.ranks[i]).collect();
        record.rejected = (!rejected.is_empty()).then(|| rejected.clone());
        record.residual = Some(comb.residual);
        record.cond = (comb.cond > 0.0).then_some(comb.cond);
        *notes = std::mem::take(&mut comb.notes);
        record.lost = (!self.lost.is_empty()).then(|| self.lost.clone());
        record.recv_bytes = Some(self.it_bytes.0);
        record.result_bytes = Some(self.it_bytes.1);
        if self.granted {
            let (notices, grants, refusals) = self.grants.iteration;
            (record.notices, record.grants, record.refusals) = (Some(notices), Some(grants), Some(refusals));
        }
        if comb.rounds > 0 {
            record.rounds_used = Some(comb.rounds);
            record.uses = Some(comb.uses.iter().map(|&(i, k)| (self.ranks[i], k)).collect());
        }
        Decoded { comb, arrivals: std::mem::take(&mut self.arrivals), used, rejected }
    }

    /// The iteration ends without a result.
    pub(super) fn abandon(&mut self) {
        self.active = false;
        self.arrivals.clear();
        self.keys.clear();
    }

    /// The results accepted this iteration, for the record.
    pub(super) fn arrived(&self) -> Vec<Arrival> {
        self.arrived.clone()
    }

    /// The children that gave nothing usable.
    pub(super) fn missing(&self) -> Vec<u32> {
        self.ranks.iter().filter(|c| !self.arrived.iter().any(|a| a.rank == **c)).map(|&c| c as u32).collect()
    }

    /// Why the iteration `t` of `scheme` cannot be collected within `deadline`: what the rule
    /// needs, what came, and who is missing (with what failed subtrees reported).
    pub(super) fn deadline_error(&self, t: u64, scheme: &str, deadline: f64) -> String {
        if let Some(why) = self.agg.verdict() {
            return format!("iteration {t}: {scheme}: {why}");
        }
        let missing: Vec<String> = self
            .ranks
            .iter()
            .enumerate()
            .filter(|(_, c)| !self.arrived.iter().any(|a| a.rank == **c))
            .map(|(i, &c)| match self.failed.iter().find(|(j, _)| *j == i) {
                Some((_, miss)) => format!(
                    "{c} (its subtree failed: rank {c} is missing children {})",
                    miss.iter().map(|m| m.to_string()).collect::<Vec<_>>().join(", ")
                ),
                None => c.to_string(),
            })
            .collect();
        let got = if self.hopeless() {
            format!("{} children reported failed subtrees", self.failed.len())
        } else {
            format!("only {} arrived", self.arrived.len())
        };
        format!(
            "iteration {t}: {scheme} needs {} at the master but {got} within run.deadline = {deadline} s; missing: workers {}",
            self.agg.needs(),
            missing.join(", ")
        )
    }

    /// What the parent received over the run, for its shutdown record.
    pub(super) fn shutdown(&self, s: &mut Shutdown) {
        s.children_bytes = Some(self.bytes.0);
        s.late_result_bytes = Some(self.bytes.1);
        if self.granted {
            let [notices, grants, refusals, regrants] = self.grants.total;
            s.upload = Some(UploadCounts { notices, grants, refusals, regrants });
        }
    }
}

/// `head` (no body) to `to`.
pub(super) fn send<P>(to: Vec<usize>, head: Header) -> Output<P> {
    Output::Send { to, msg: Msg { head, body: None }, track: None }
}
