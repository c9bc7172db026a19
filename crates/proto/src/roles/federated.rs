//! Federated aggregation (`scheme.kind` = `fedavg`, `oracle`, `diversefl`, `median`, `krum`,
//! `multi-krum`, `bulyan`, `resampling`, `fltrust`): the server's rule over the first K of its
//! clients' uploads Δⱼ (the job's payload: the update, then the client's loss).
//!
//! The rules that weigh uploads by their values screen them once K have arrived and the
//! server's own parts are computed ([`Aggregator::screen`] sees both): DiverseFL compares upload
//! j with the guiding update the server computed on its sample of client j's data (own part j),
//! FLTrust every upload with the server's root-set update (own part 0). Averaging rules (FedAvg,
//! the oracle, DiverseFL, Krum, Multi-Krum, FLTrust) are linear combinations of the kept
//! uploads; the median, Bulyan and resampling gather the kept uploads and apply a coordinate-wise
//! [`Map`]. The mathematics is `outrun_codes::federated`; every decision reads the update, never
//! the trailing loss, which is combined like the rest.

use std::sync::Arc;

use outrun_codes::{
    bulyan_select, closest_mean, coordinate_median, diversefl_test, domain, fltrust_coefficients, krum,
    resample_groups, Rng, Thresholds,
};
use outrun_plan::{Faults, FlRule, Plan};

use super::aggregate::{Aggregator, Tally};
use super::combine::{Combination, Map, Post, Src, Term};
use super::encode::sampled_assignment;

/// What the screening decided: weights of the arrivals (a linear rule), or the arrivals to
/// gather (positions) and the map applied to them.
enum Decision {
    Weights(Vec<f64>),
    Mapped(Vec<usize>, Arc<dyn Map>),
}

/// A federated server's collection of one round.
pub(super) struct Federated {
    rule: FlRule,
    pub(super) tally: Tally,
    len: usize,
    t: u64,
    seed: u64,
    faults: Faults,
    /// Each child's worker id and rank.
    workers: Vec<usize>,
    ranks: Vec<usize>,
    decision: Option<Decision>,
    similarity: Option<Vec<(usize, f64, f64)>>,
    /// Timing simulations: no values to weigh.
    blind: bool,
    /// Clients sampled per round, and which children the current round sampled.
    per_round: Option<usize>,
    sampled: Vec<bool>,
}

impl Federated {
    /// `need` uploads of `per_round` clients sampled (all when None) per round.
    pub(super) fn new(
        plan: &Plan,
        rank: usize,
        rule: FlRule,
        (need, per_round): (usize, Option<usize>),
        len: usize,
    ) -> Self {
        let children = &plan.nodes[rank].children;
        Federated {
            rule,
            tally: Tally::new(children.len(), need),
            len,
            t: 0,
            seed: plan.run.seed,
            faults: plan.faults.clone(),
            workers: children.iter().map(|&c| plan.nodes[c].worker.unwrap_or(0)).collect(),
            ranks: children.clone(),
            decision: None,
            similarity: None,
            blind: false,
            per_round,
            sampled: vec![true; children.len()],
        }
    }

    /// The update part of a payload (everything but the trailing loss).
    fn update<'a>(&self, v: &'a [f64]) -> &'a [f64] {
        &v[..self.len.saturating_sub(1).min(v.len())]
    }

    /// What to do with the arrivals, from their values (in child order, so a decision never
    /// depends on the order they arrived in) and the server's own parts.
    fn decide(&mut self, own: &[&[f64]], values: &[&[f64]]) -> Decision {
        let mut by_child: Vec<usize> = (0..values.len()).collect();
        by_child.sort_by_key(|&j| self.tally.order[j]);
        let sorted: Vec<&[f64]> = by_child.iter().map(|&j| values[j]).collect();
        let children: Vec<usize> = by_child.iter().map(|&j| self.tally.order[j]).collect();
        match self.decide_sorted(own, &sorted, &children) {
            Decision::Weights(w) => {
                let mut out = vec![0.0; w.len()];
                by_child.iter().zip(w).for_each(|(&j, x)| out[j] = x);
                Decision::Weights(out)
            }
            Decision::Mapped(kept, map) => Decision::Mapped(kept.iter().map(|&i| by_child[i]).collect(), map),
        }
    }

    /// [`Self::decide`] on arrivals sorted by child: `values[j]` came from child `children[j]`.
    fn decide_sorted(&mut self, own: &[&[f64]], values: &[&[f64]], children: &[usize]) -> Decision {
        let k = values.len();
        let updates: Vec<&[f64]> = values.iter().map(|v| self.update(v)).collect();
        let len = self.len;
        match self.rule {
            FlRule::Mean | FlRule::Oracle => self.linear(children),
            FlRule::Diversefl { eps1, eps2, eps3 } => {
                let eps = Thresholds { eps1, eps2, eps3 };
                let mut notes = Vec::with_capacity(k);
                let keep: Vec<usize> = (0..k)
                    .filter(|&j| {
                        let child = children[j];
                        let s = diversefl_test(self.update(own[child]), updates[j]);
                        notes.push((self.ranks[child], s.c1, s.c2));
                        eps.accept(s)
                    })
                    .collect();
                self.similarity = Some(notes);
                mean_of(k, &keep)
            }
            FlRule::Krum { f, m } => mean_of(k, &krum(&updates, f, m)),
            FlRule::Fltrust => {
                let root = self.update(own[0]);
                let w = fltrust_coefficients(root, &updates);
                self.similarity = Some((0..k).map(|j| (self.ranks[children[j]], w[j].signum(), 0.0)).collect());
                Decision::Weights(w)
            }
            FlRule::Median => Decision::Mapped((0..k).collect(), Arc::new(Median { k, len })),
            FlRule::Bulyan { f } => {
                let chosen = bulyan_select(&updates, f);
                let beta = chosen.len() - 2 * f;
                let map = Arc::new(Trimmed { k: chosen.len(), len, beta });
                Decision::Mapped(chosen, map)
            }
            FlRule::Resampling { s } => {
                let mut rng = Rng::from_key(&[self.seed, domain::SAMPLE, self.t]);
                let groups = resample_groups(k, s, &mut rng);
                Decision::Mapped((0..k).collect(), Arc::new(Resampled { groups, len }))
            }
        }
    }

    /// The rules decided without values: the mean, or the oracle's mean of clients not faulty;
    /// arrival j came from child `children[j]`.
    fn linear(&self, children: &[usize]) -> Decision {
        let honest =
            |j: &usize| self.rule != FlRule::Oracle || self.faults.at(self.workers[children[*j]], self.t).is_none();
        mean_of(children.len(), &(0..children.len()).filter(honest).collect::<Vec<_>>())
    }
}

/// Equal weights over the arrivals `keep` of `k`.
fn mean_of(k: usize, keep: &[usize]) -> Decision {
    let mut w = vec![0.0; k];
    keep.iter().for_each(|&j| w[j] = 1.0 / keep.len() as f64);
    Decision::Weights(w)
}

impl Aggregator for Federated {
    fn begin(&mut self, t: u64) {
        self.t = t;
        self.tally.clear();
        self.decision = None;
        self.similarity = None;
    }

    fn offer(&mut self, idx: usize, round: u32) -> bool {
        self.sampled[idx] && self.tally.offer(idx, round)
    }

    fn fail(&mut self, idx: usize) {
        self.tally.fail(idx);
    }

    fn satisfied(&self) -> bool {
        self.tally.satisfied()
    }

    fn deadline(&self) -> Option<f64> {
        self.tally.by
    }

    fn expire(&mut self) {
        self.tally.expire();
    }

    fn hopeless(&self) -> bool {
        self.tally.hopeless()
    }

    /// With client sampling, the round's clients (from `run.seed` and the round); the others
    /// compute nothing and their empty answers are discarded.
    fn assignments(&mut self, t: u64) -> Option<Vec<Vec<u8>>> {
        let per = self.per_round?;
        let k = self.sampled.len();
        let chosen = Rng::from_key(&[self.seed, domain::SAMPLE, t, 1]).choose(k, per.min(k));
        self.sampled.iter_mut().for_each(|s| *s = false);
        chosen.iter().for_each(|&i| self.sampled[i] = true);
        Some(self.sampled.iter().map(|&on| sampled_assignment(on)).collect())
    }

    fn screens(&self) -> bool {
        !self.blind && !matches!(self.rule, FlRule::Mean | FlRule::Oracle)
    }

    fn screen(&mut self, own: &[&[f64]], values: &[&[f64]]) -> bool {
        self.decision = Some(self.decide(own, values));
        true
    }

    fn combine(&mut self) -> Combination {
        let k = self.tally.order.len();
        let decision = match self.decision.take() {
            Some(d) => d,
            // the rules that need no values, and timing simulations (every upload, in the map's shape)
            None => match self.rule {
                FlRule::Median | FlRule::Resampling { .. } | FlRule::Bulyan { .. } => {
                    Decision::Mapped((0..k).collect(), Arc::new(Median { k, len: self.len }))
                }
                _ => self.linear(&self.tally.order),
            },
        };
        let whole = |j: usize, to: usize, coef: f64| Term { src: Src::Arrival(j), from: 0, to, len: self.len, coef };
        let (mut c, kept) = match decision {
            Decision::Weights(w) => {
                let kept: Vec<usize> = (0..k).filter(|&j| w[j] != 0.0).collect();
                (Combination::exact(self.len, kept.iter().map(|&j| whole(j, 0, w[j])).collect()), kept)
            }
            Decision::Mapped(kept, map) => {
                let terms = kept.iter().enumerate().map(|(i, &j)| whole(j, i * self.len, 1.0)).collect();
                let mut c = Combination::exact(self.len, terms);
                c.post = Some(Post(map));
                (c, kept)
            }
        };
        c.used = kept.iter().map(|&j| self.tally.order[j]).collect();
        c.rejected = (0..k).filter(|j| !kept.contains(j)).map(|j| self.tally.order[j]).collect();
        c.rejected.sort_unstable();
        if matches!(self.rule, FlRule::Median | FlRule::Resampling { .. }) {
            c.rejected.clear(); // every upload enters the median
        }
        c.notes.similarity = self.similarity.take();
        c
    }

    fn needs(&self) -> String {
        format!("{} of {} uploads", self.tally.need, self.tally.k)
    }

    fn lengths_only(&mut self) {
        self.blind = true;
    }
}

/// The coordinate-wise median of `k` gathered payloads of `len` values.
#[derive(Debug)]
struct Median {
    k: usize,
    len: usize,
}

fn blocks(z: &[f64], len: usize) -> Vec<&[f64]> {
    z.chunks(len).collect()
}

impl Map for Median {
    fn in_len(&self) -> usize {
        self.k * self.len
    }
    fn out_len(&self) -> usize {
        self.len
    }
    fn apply(&self, z: &[f64]) -> Vec<f64> {
        coordinate_median(&blocks(z, self.len))
    }
}

/// Bulyan's second stage over `k` gathered payloads: per coordinate, the mean of the `beta`
/// values closest to the median.
#[derive(Debug)]
struct Trimmed {
    k: usize,
    len: usize,
    beta: usize,
}

impl Map for Trimmed {
    fn in_len(&self) -> usize {
        self.k * self.len
    }
    fn out_len(&self) -> usize {
        self.len
    }
    fn apply(&self, z: &[f64]) -> Vec<f64> {
        closest_mean(&blocks(z, self.len), self.beta)
    }
}

/// Resampling: the median of the groups' means.
#[derive(Debug)]
struct Resampled {
    groups: Vec<Vec<usize>>,
    len: usize,
}

impl Map for Resampled {
    fn in_len(&self) -> usize {
        self.groups.len() * self.len
    }
    fn out_len(&self) -> usize {
        self.len
    }
    fn apply(&self, z: &[f64]) -> Vec<f64> {
        let v = blocks(z, self.len);
        let means: Vec<Vec<f64>> = self
            .groups
            .iter()
            .map(|g| {
                let mut m = vec![0.0; self.len];
                for &i in g {
                    m.iter_mut().zip(v[i]).for_each(|(a, b)| *a += b);
                }
                m.iter_mut().for_each(|a| *a /= g.len() as f64);
                m
            })
            .collect();
        coordinate_median(&means.iter().map(Vec::as_slice).collect::<Vec<_>>())
    }
}
