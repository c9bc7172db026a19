//! Aggregators: what a parent waits for and how it combines what it accepted. A plan names one
//! [`Rule`] per parent; [`aggregator`] builds it.

use std::collections::HashMap;

use outrun_codes::{AgcCode, AgcDecoding, Decoder, GroupDecoding, LinearCode, SurvivorSet, EXACT_RESIDUAL};
use outrun_plan::{GroupSpec, Plan, PlanCode, Rule};

use super::combine::{Combination, Src, Term};

/// A parent's collection for one iteration at a time. The node protocol offers every result
/// that belongs to the iteration being collected; the aggregator decides which it uses, when it
/// has enough, and how to combine them.
pub trait Aggregator: Send {
    /// Start collecting iteration `t` (forgets the previous one).
    fn begin(&mut self, t: u64);
    /// Child `idx` sent its result for round `round`: whether it is used. Used results are
    /// numbered in the order they were accepted ([`Src::Arrival`]). The decision depends on
    /// `(idx, round)` and on what was accepted before, never on the values: with uploads by
    /// grant the protocol offers a child's ready notice, before its result crosses the link.
    fn offer(&mut self, idx: usize, round: u32) -> bool;
    /// Child `idx` reported that its subtree failed.
    fn fail(&mut self, idx: usize);
    /// The rule is met.
    fn satisfied(&self) -> bool;
    /// Too many children failed for the rule ever to be met.
    fn hopeless(&self) -> bool;
    /// How to combine the accepted results into `len` values.
    fn combine(&mut self) -> Combination;
    /// What the rule needs, for messages (`7 of 9 results`).
    fn needs(&self) -> String;
    /// Children's assignments to send with the model of iteration `t`, for schemes that
    /// re-assign work every iteration (none by default).
    fn assignments(&mut self, _t: u64) -> Option<Vec<Vec<u8>>> {
        None
    }
    /// The vectors are lengths only (timing simulations): an aggregator may skip the numerical
    /// work of decoding (its combination's terms and lengths must stay right).
    fn lengths_only(&mut self) {}
    /// Once satisfied and the node's own parts computed (`own`), a rule that looks at the values
    /// (robust decoding, federated rules) screens the accepted results (`values`, in
    /// `Src::Arrival` order): true to combine now, false to wait for more (it then
    /// needs more than it has; [`Aggregator::hopeless`] says when none can come).
    fn screen(&mut self, _own: &[&[f64]], _values: &[&[f64]]) -> bool {
        true
    }
    /// A deadline wait rule: seconds after the iteration starts at which the rule is met with
    /// whatever has arrived (at least one result), if it is not met before (None: no deadline).
    fn deadline(&self) -> Option<f64> {
        None
    }
    /// The deadline passed: the results accepted so far (at least one) meet the rule.
    fn expire(&mut self) {}
    /// Whether [`Aggregator::screen`] looks at the values (the time it takes is then logged).
    fn screens(&self) -> bool {
        false
    }
    /// Why the rule can never be met beyond missing children (e.g. results that no exclusion
    /// makes consistent), for the failure's message.
    fn verdict(&self) -> Option<String> {
        None
    }
}

/// The aggregator of `rank` (which must have children) for payloads of `len` values.
pub fn aggregator(plan: &Plan, rank: usize, len: usize) -> Box<dyn Aggregator> {
    let node = &plan.nodes[rank];
    let k = node.children.len();
    let rule = node.rule.as_ref().expect("a parent has a wait rule");
    let combine = match rule {
        Rule::Sum => How::Sum,
        Rule::Until { .. } => How::Partial,
        Rule::Rescale { .. } => {
            How::Rescale { loads: node.children.iter().map(|&c| plan.nodes[c].load()).collect(), samples: plan.samples }
        }
        Rule::Decode { code, byzantine: f @ 1.., need } => {
            return Box::new(super::robust::Robust::new(plan.codes[*code].gradient().clone(), *need, *f, len))
        }
        Rule::Decode { code, .. } => How::Decode(Decoder::new(plan.codes[*code].gradient().clone())),
        Rule::Groups { groups } => return Box::new(Grouped::new(plan, node.children.clone(), groups, len)),
        Rule::Clusters { code } => return Box::new(super::clusters::Clustered::new(plan, *code, len)),
        Rule::Rows { code } => return Box::new(super::rows::Rows::new(plan, rank, *code)),
        Rule::Federated { need, how, per_round, by } => {
            let mut f = super::federated::Federated::new(plan, rank, how.clone(), (*need, *per_round), len);
            f.tally.by = *by;
            return Box::new(f);
        }
    };
    let mut tally = Tally::new(k, rule.need(k));
    tally.by = match rule {
        Rule::Rescale { by, .. } => *by,
        Rule::Until { by } => Some(*by),
        _ => None,
    };
    Box::new(Count { len, how: combine, tally })
}

enum How {
    Sum,
    /// A sum of what arrived that is never the exact total (`Rule::Until`).
    Partial,
    Rescale {
        loads: Vec<usize>,
        samples: usize,
    },
    Decode(Decoder),
}

/// Which of `k` children's (round-0) results a count-based rule accepted, in order, which
/// children failed, and how many results it needs.
pub(super) struct Tally {
    pub(super) k: usize,
    pub(super) need: usize,
    pub(super) order: Vec<usize>,
    got: Vec<bool>,
    failed: Vec<bool>,
    /// A deadline wait rule's seconds, and whether they have passed this iteration.
    pub(super) by: Option<f64>,
    expired: bool,
}

impl Tally {
    pub(super) fn new(k: usize, need: usize) -> Self {
        Tally { k, need, order: vec![], got: vec![false; k], failed: vec![false; k], by: None, expired: false }
    }

    pub(super) fn clear(&mut self) {
        self.order.clear();
        self.got.fill(false);
        self.failed.fill(false);
        self.expired = false;
    }

    /// The deadline passed: what was accepted (at least one) meets the rule.
    pub(super) fn expire(&mut self) {
        self.expired = true;
    }

    /// Accept child `idx`'s round `round` unless the rule is met, a repeat, a later round or a
    /// failed child.
    pub(super) fn offer(&mut self, idx: usize, round: u32) -> bool {
        if round != 0 || self.got[idx] || self.failed[idx] || self.satisfied() {
            return false;
        }
        self.got[idx] = true;
        self.order.push(idx);
        true
    }

    pub(super) fn fail(&mut self, idx: usize) {
        if !self.got[idx] {
            self.failed[idx] = true;
        }
    }

    /// The rule is met: `need` results accepted, or at least one once the deadline passed.
    pub(super) fn satisfied(&self) -> bool {
        self.order.len() >= self.need || (self.expired && !self.order.is_empty())
    }

    /// Fewer children than `need` have not failed (than one, with a deadline).
    pub(super) fn hopeless(&self) -> bool {
        let least = if self.by.is_some() { 1 } else { self.need };
        self.k - self.failed.iter().filter(|&&f| f).count() < least
    }
}

/// The count-based rules: the first `need` distinct children's (round-0) results.
struct Count {
    len: usize,
    how: How,
    tally: Tally,
}

impl Aggregator for Count {
    fn begin(&mut self, _t: u64) {
        self.tally.clear();
    }

    fn deadline(&self) -> Option<f64> {
        self.tally.by
    }

    fn expire(&mut self) {
        self.tally.expire();
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

    fn combine(&mut self) -> Combination {
        let (len, k) = (self.len, self.tally.k);
        let whole = |j: usize, coef: f64| Term::whole(Src::Arrival(j), len, coef);
        let complete = self.tally.order.len() == k;
        // the terms in child order, not arrival order: the same children's results give the same
        // bits however the network ordered them (a resumed run, a rerun on a busy host)
        let mut by_child: Vec<(usize, usize)> = self.tally.order.iter().enumerate().map(|(j, &i)| (i, j)).collect();
        by_child.sort_unstable();
        let all = |coef: f64| by_child.iter().map(|&(_, j)| whole(j, coef)).collect::<Vec<_>>();
        let mut c = match &mut self.how {
            How::Sum => Combination { exact: complete, ..Combination::exact(len, all(1.0)) },
            How::Partial => Combination {
                exact: false,
                coverage: self.tally.order.len() as f64 / k as f64,
                ..Combination::exact(len, all(1.0))
            },
            How::Rescale { loads, samples } => {
                let covered: usize = self.tally.order.iter().map(|&i| loads[i]).sum();
                let scale = *samples as f64 / covered.max(1) as f64;
                Combination {
                    coverage: covered as f64 / *samples as f64,
                    exact: complete,
                    ..Combination::exact(len, all(scale))
                }
            }
            How::Decode(dec) => {
                let d = dec.decode(&SurvivorSet::from_indices(k, &self.tally.order));
                let terms = by_child
                    .iter()
                    .filter(|&&(i, _)| d.coeffs[i] != 0.0)
                    .map(|&(i, j)| whole(j, d.coeffs[i]))
                    .collect();
                Combination {
                    residual: d.residual,
                    exact: d.residual <= EXACT_RESIDUAL,
                    ..Combination::exact(len, terms)
                }
            }
        };
        c.used = self.tally.order.clone();
        c
    }

    fn needs(&self) -> String {
        format!("{} of {} results", self.tally.need, self.tally.k)
    }
}

/// A group's decoder state for one iteration.
enum Codec {
    /// CommFR-GC: one result per child, rank test on the positions arrived.
    Linear { code: LinearCode, cache: HashMap<Vec<usize>, Option<GroupDecoding>> },
    /// AGC: (worker, round) arrivals, greedy capped rule.
    Adaptive { code: AgcCode },
}

struct Group {
    spec: GroupSpec,
    codec: Codec,
    /// (local child, round) accepted, and each one's arrival index.
    arrived: Vec<(usize, usize)>,
    arrival: Vec<usize>,
    failed: Vec<bool>,
    decoded: Option<Decoded>,
    /// Robust decoding (`spec.byzantine > 0`): results needed now, and the screening's outcome.
    robust: Option<super::robust::GroupScreen>,
}

enum Decoded {
    Linear(GroupDecoding),
    Adaptive(AgcDecoding),
}

impl Group {
    fn positions(&self) -> Vec<usize> {
        self.arrived.iter().map(|&(j, _)| j).collect()
    }

    /// Decode what arrived, if it suffices.
    fn try_decode(&mut self) -> Option<Decoded> {
        match &mut self.codec {
            Codec::Linear { code, cache } => {
                let t: Vec<usize> = self.arrived.iter().map(|&(j, _)| j).collect();
                let mut key = t.clone();
                key.sort_unstable();
                // the cache holds the decoding for the sorted positions; reorder to arrival order
                let entry = cache.entry(key.clone()).or_insert_with(|| code.decoding(&key));
                let dec = entry.clone()?;
                Some(Decoded::Linear(match dec {
                    GroupDecoding::Solve { coef, cond, residual } => {
                        let coef = t
                            .iter()
                            .map(|p| coef[key.iter().position(|k| k == p).expect("same set")].clone())
                            .collect();
                        GroupDecoding::Solve { coef, cond, residual }
                    }
                    peel => peel,
                }))
            }
            Codec::Adaptive { code } => code.select(&self.arrived).map(Decoded::Adaptive),
        }
    }

    /// Whether the group can never decode: even every child not failed, with every round,
    /// would not suffice.
    fn hopeless(&self) -> bool {
        let alive: Vec<usize> = (0..self.spec.size).filter(|&j| !self.failed[j]).collect();
        if self.robust.as_ref().is_some_and(|r| alive.len() < r.need) {
            return true;
        }
        match &self.codec {
            Codec::Linear { code, .. } => !code.decodable(&alive),
            Codec::Adaptive { code } => {
                let all: Vec<(usize, usize)> =
                    (0..code.rounds).flat_map(|r| alive.iter().map(move |&j| (j, r))).collect();
                code.select(&all).is_none()
            }
        }
    }
}

/// Groups of children, each decoding its part as soon as it can (rank tests).
struct Grouped {
    len: usize,
    groups: Vec<Group>,
    /// child index → (group, local index)
    child: Vec<(usize, usize)>,
    arrivals: usize,
}

impl Grouped {
    fn new(plan: &Plan, children: Vec<usize>, specs: &[GroupSpec], len: usize) -> Self {
        let mut child = vec![(0, 0); children.len()];
        let groups = specs
            .iter()
            .enumerate()
            .map(|(g, spec)| {
                for j in 0..spec.size {
                    child[spec.first + j] = (g, j);
                }
                let codec = match &plan.codes[spec.code] {
                    PlanCode::Linear { code, .. } => Codec::Linear { code: code.clone(), cache: HashMap::new() },
                    PlanCode::Adaptive { code } => Codec::Adaptive { code: code.clone() },
                    other => panic!("a group needs a linear or adaptive code, not {other:?}"),
                };
                let robust = match (&codec, spec.byzantine) {
                    (Codec::Linear { code, .. }, f @ 1..) => Some(super::robust::GroupScreen::new(code.dim + 2 * f)),
                    _ => None,
                };
                Group {
                    spec: *spec,
                    codec,
                    arrived: vec![],
                    arrival: vec![],
                    failed: vec![false; spec.size],
                    decoded: None,
                    robust,
                }
            })
            .collect();
        Grouped { len, groups, child, arrivals: 0 }
    }
}

impl Aggregator for Grouped {
    fn begin(&mut self, _t: u64) {
        self.arrivals = 0;
        for g in &mut self.groups {
            g.arrived.clear();
            g.arrival.clear();
            g.failed.iter_mut().for_each(|f| *f = false);
            g.decoded = None;
            if let Some(r) = g.robust.as_mut() {
                r.begin();
            }
        }
    }

    fn offer(&mut self, idx: usize, round: u32) -> bool {
        let (gi, j) = self.child[idx];
        let g = &mut self.groups[gi];
        let round = round as usize;
        let valid = match &g.codec {
            Codec::Linear { .. } => round == 0,
            Codec::Adaptive { code } => round < code.rounds,
        };
        if g.decoded.is_some() || !valid || g.failed[j] || g.arrived.contains(&(j, round)) {
            return false;
        }
        g.arrived.push((j, round));
        g.arrival.push(self.arrivals);
        self.arrivals += 1;
        // a robust group decodes only from enough results to out-vote its corrupted ones
        if g.robust.as_ref().is_none_or(|r| g.arrived.len() >= r.need) {
            g.decoded = g.try_decode();
        }
        true
    }

    fn screen(&mut self, _own: &[&[f64]], values: &[&[f64]]) -> bool {
        for g in self.groups.iter_mut().filter(|g| g.decoded.is_some()) {
            let (Some(r), Codec::Linear { code, .. }) = (g.robust.as_mut(), &g.codec) else { continue };
            if r.screened {
                continue;
            }
            let positions: Vec<usize> = g.arrived.iter().map(|&(j, _)| j).collect();
            let mine: Vec<&[f64]> = g.arrival.iter().map(|&a| values[a]).collect();
            match r.screen(code, &positions, &mine, g.spec.byzantine) {
                Some(excluded) => {
                    // drop the excluded results (positions into the group's arrivals)
                    let keep: Vec<bool> = (0..positions.len()).map(|k| !excluded.contains(&k)).collect();
                    let mut k = keep.iter();
                    g.arrived.retain(|_| *k.next().expect("one flag each"));
                    let mut k = keep.iter();
                    g.arrival.retain(|_| *k.next().expect("one flag each"));
                    r.rejected = excluded.iter().map(|&k| g.spec.first + positions[k]).collect();
                    g.decoded = g.try_decode();
                }
                None => g.decoded = None,
            }
        }
        self.satisfied()
    }

    fn screens(&self) -> bool {
        self.groups.iter().any(|g| g.robust.is_some())
    }

    fn verdict(&self) -> Option<String> {
        self.groups.iter().enumerate().find_map(|(i, g)| {
            let alive = g.failed.iter().filter(|&&f| !f).count();
            g.robust.as_ref().and_then(|r| r.verdict(alive)).map(|v| format!("group {}: {v}", i + 1))
        })
    }

    fn fail(&mut self, idx: usize) {
        let (gi, j) = self.child[idx];
        self.groups[gi].failed[j] = true;
    }

    fn satisfied(&self) -> bool {
        self.groups.iter().all(|g| g.decoded.is_some())
    }

    fn hopeless(&self) -> bool {
        self.groups.iter().any(|g| g.decoded.is_none() && g.hopeless())
    }

    fn combine(&mut self) -> Combination {
        let len = self.len;
        let mut terms = vec![];
        let mut cond = 0.0f64;
        let mut residual = 0.0f64;
        let mut used = vec![];
        let mut rounds = 0;
        let mut uses: HashMap<usize, usize> = HashMap::new();
        // out[to .. to + n] += coef · arrival[0 .. n], clipped to the payload length
        let mut put = |arrival: usize, to: usize, n: usize, coef: f64| {
            let n = n.min(len.saturating_sub(to));
            if n > 0 && coef != 0.0 {
                terms.push(Term { src: Src::Arrival(arrival), from: 0, to, len: n, coef });
            }
        };
        for g in &self.groups {
            let positions = g.positions();
            match (&g.codec, g.decoded.as_ref().expect("satisfied")) {
                (
                    Codec::Linear { code, .. },
                    Decoded::Linear(GroupDecoding::Solve { coef, cond: c, residual: res }),
                ) => {
                    let r = len.div_ceil(code.dim);
                    for (k, row) in coef.iter().enumerate() {
                        for (chunk, &a) in row.iter().enumerate() {
                            put(g.arrival[k], chunk * r, r, a);
                        }
                    }
                    cond = cond.max(*c);
                    residual = residual.max(*res);
                }
                (Codec::Linear { code, .. }, Decoded::Linear(GroupDecoding::Peel(steps))) => {
                    // expand the peeling schedule into coefficients over the arrivals
                    let r = len.div_ceil(code.dim);
                    let mut combo: Vec<Option<Vec<(usize, f64)>>> = vec![None; code.len];
                    for (k, &p) in positions.iter().enumerate() {
                        combo[p] = Some(vec![(k, 1.0)]);
                    }
                    for (e, from) in steps {
                        let mut acc: HashMap<usize, f64> = HashMap::new();
                        for &(p, c) in from {
                            for &(k, a) in combo[p].as_ref().expect("peeling order") {
                                *acc.entry(k).or_insert(0.0) += c * a;
                            }
                        }
                        let mut v: Vec<(usize, f64)> = acc.into_iter().collect();
                        v.sort_unstable_by_key(|x| x.0);
                        combo[*e] = Some(v);
                    }
                    for (chunk, &s) in code.systematic.iter().enumerate() {
                        let terms = combo[s].as_ref().expect("peeled");
                        for &(k, a) in terms {
                            put(g.arrival[k], chunk * r, r, a);
                        }
                        // Σ a_k·G[:, position k] must be e_chunk
                        for row in 0..code.dim {
                            let v: f64 = terms.iter().map(|&(k, a)| a * code.g[(row, positions[k])]).sum();
                            residual = residual.max((v - if row == chunk { 1.0 } else { 0.0 }).abs());
                        }
                    }
                }
                (Codec::Adaptive { code }, Decoded::Adaptive(dec)) => {
                    for &k in &dec.used {
                        *uses.entry(g.spec.first + g.arrived[k].0).or_insert(0) += 1;
                    }
                    let sub = len.div_ceil(code.l);
                    for (m, row) in dec.coef.iter().enumerate() {
                        for (k, &a) in row.iter().enumerate() {
                            put(g.arrival[dec.used[k]], m * sub, sub, a);
                        }
                    }
                    cond = cond.max(dec.cond);
                    residual = residual.max(dec.residual);
                    rounds = rounds.max(dec.rounds);
                }
                _ => unreachable!("a group's decoding matches its code"),
            }
            used.extend(positions.iter().map(|&j| g.spec.first + j));
        }
        used.sort_unstable();
        used.dedup();
        let mut rejected: Vec<usize> =
            self.groups.iter().filter_map(|g| g.robust.as_ref()).flat_map(|r| r.rejected.clone()).collect();
        rejected.sort_unstable();
        let syndrome = self
            .groups
            .iter()
            .filter_map(|g| g.robust.as_ref().and_then(|r| r.syndrome))
            .fold(None, |acc: Option<(f64, f64)>, (b, a)| Some(acc.map_or((b, a), |(x, y)| (x.max(b), y.max(a)))));
        let mut c = Combination::exact(len, terms);
        c.used = used;
        c.rejected = rejected;
        c.notes.syndrome = syndrome;
        c.cond = cond;
        c.residual = residual;
        c.exact = residual <= EXACT_RESIDUAL;
        c.rounds = rounds;
        c.uses = uses.into_iter().collect();
        c.uses.sort_unstable();
        c
    }

    fn needs(&self) -> String {
        let waiting: Vec<String> = self
            .groups
            .iter()
            .enumerate()
            .filter(|(_, g)| g.decoded.is_none())
            .map(|(i, g)| {
                let mut workers: Vec<usize> = g.arrived.iter().map(|&(j, _)| j).collect();
                workers.sort_unstable();
                workers.dedup();
                format!(
                    "group {} (children {}..{}) has {} usable result(s) from {} child(ren)",
                    i + 1,
                    g.spec.first + 1,
                    g.spec.first + g.spec.size,
                    g.arrived.len(),
                    workers.len()
                )
            })
            .collect();
        format!("every group decodable ({})", waiting.join("; "))
    }
}
