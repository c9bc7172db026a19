//! Clustered gradient coding (GC-SC, GC-DC), both halves in one place: the master's aggregator
//! ([`Clustered`]: forms the clusters, waits for ℓ − r + 1 positions of every cluster, decodes
//! each with the cluster code) and the worker's encoder ([`Assigned`]: computes and combines the r
//! mini-batches of the codeword it was assigned for the iteration).
//!
//! An assignment travels with the model as 8 bytes: cluster and position, little-endian u32.

use std::sync::Arc;

use outrun_codes::{dynamic_clustering, ClusterMatrix, Decoder, Decoding, GradientCode, SurvivorSet, EXACT_RESIDUAL};

use super::aggregate::Aggregator;
use super::combine::{Combination, Src, Term};
use super::encode::Encoder;
use outrun_config::{ColumnOrder, Ssi};
use outrun_plan::Injector;
use outrun_plan::{Plan, PlanCode};

/// The plan's cluster code `code` and its gradient code.
fn codes(plan: &Plan, code: usize) -> (&PlanCode, &GradientCode) {
    let pc = &plan.codes[code];
    let PlanCode::Clusters { code: g, .. } = pc else { panic!("a cluster rule needs a cluster code, not {pc:?}") };
    (pc, plan.codes[*g].gradient())
}

fn encode_assignment(cluster: usize, position: usize) -> Vec<u8> {
    let mut v = (cluster as u32).to_le_bytes().to_vec();
    v.extend((position as u32).to_le_bytes());
    v
}

fn decode_assignment(a: &[u8]) -> Option<(usize, usize)> {
    let word = |i: usize| a.get(i..i + 4).map(|b| u32::from_le_bytes(b.try_into().expect("4 bytes")) as usize);
    Some((word(0)?, word(4)?))
}

/// 1-based worker ids of the flagged workers.
fn ids(flags: &[bool]) -> Vec<usize> {
    flags.iter().enumerate().filter(|(_, &f)| f).map(|(w, _)| w + 1).collect()
}

/// The master of a clustered scheme. Children are the workers in order (child i = worker i + 1).
pub(crate) struct Clustered {
    len: usize,
    matrix: ClusterMatrix,
    need: usize,
    dynamic: bool,
    ssi: Ssi,
    capped: bool,
    by_rate: bool,
    tau: Option<f64>,
    decoder: Decoder,
    injector: Injector,
    /// worker → (cluster, position) this iteration
    place: Vec<(usize, usize)>,
    /// Phase II counts, for the log
    swaps: usize,
    fallbacks: usize,
    believed: Vec<bool>,
    /// per cluster: (position, arrival index, worker) accepted
    arrived: Vec<Vec<(usize, usize, usize)>>,
    decoded: Vec<Option<Arc<Decoding>>>,
    failed: Vec<bool>,
    /// answered before the iteration was decoded (observed SSI)
    answered: Vec<bool>,
    arrivals: usize,
    t: u64,
}

impl Clustered {
    pub(crate) fn new(plan: &Plan, code: usize, len: usize) -> Self {
        let (pc, b) = codes(plan, code);
        let PlanCode::Clusters { matrix, r, dynamic, ssi, capped, order, tau, .. } = pc else {
            unreachable!("checked")
        };
        let k = matrix.workers;
        Clustered {
            len,
            need: matrix.ell() - r + 1,
            dynamic: *dynamic,
            ssi: *ssi,
            capped: *capped,
            by_rate: *order == ColumnOrder::Rate,
            tau: *tau,
            decoder: Decoder::new(b.clone()),
            injector: plan.stragglers.injector(),
            place: matrix.static_partition().positions(k),
            swaps: 0,
            fallbacks: 0,
            believed: vec![false; k],
            arrived: vec![vec![]; matrix.clusters],
            decoded: vec![None; matrix.clusters],
            failed: vec![false; k],
            answered: vec![false; k],
            arrivals: 0,
            t: 0,
            matrix: matrix.clone(),
        }
    }

    /// The believed (straggler, rate) of every worker for iteration `t`.
    fn beliefs(&mut self, t: u64) -> (Vec<bool>, Vec<f64>) {
        let k = self.matrix.workers;
        let mut states: Vec<(bool, f64)> = match (self.ssi, t) {
            (Ssi::Observed, 0) => vec![(false, f64::NAN); k],
            (Ssi::Observed, _) => self.answered.iter().map(|&a| (!a, f64::NAN)).collect(),
            (Ssi::Previous, 0) => (1..=k).map(|w| self.injector.initial_state(w)).collect(),
            (Ssi::Previous, _) => (1..=k).map(|w| self.injector.state(w, t - 1)).collect(),
            (Ssi::Perfect, _) => (1..=k).map(|w| self.injector.state(w, t)).collect(),
        };
        if let Some(tau) = self.tau {
            for s in &mut states {
                if s.1.is_finite() {
                    s.0 = s.1 < tau;
                }
            }
        }
        states.into_iter().unzip()
    }

    fn cluster_members(&self, c: usize) -> impl Iterator<Item = usize> + '_ {
        self.place.iter().enumerate().filter(move |(_, &(q, _))| q == c).map(|(w, _)| w)
    }
}

impl Aggregator for Clustered {
    fn assignments(&mut self, t: u64) -> Option<Vec<Vec<u8>>> {
        if !self.dynamic {
            return None;
        }
        let (believed, rate) = self.beliefs(t);
        let by_rate = self.by_rate && rate.iter().all(|r| r.is_finite());
        let c = dynamic_clustering(&self.matrix, &believed, by_rate.then_some(&rate[..]), self.capped);
        self.place = c.partition.positions(self.matrix.workers);
        (self.swaps, self.fallbacks, self.believed) = (c.swaps, c.fallbacks, believed);
        Some(self.place.iter().map(|&(q, i)| encode_assignment(q, i)).collect())
    }

    fn begin(&mut self, t: u64) {
        self.t = t;
        self.arrivals = 0;
        self.arrived.iter_mut().for_each(Vec::clear);
        self.decoded.iter_mut().for_each(|d| *d = None);
        self.failed.iter_mut().for_each(|f| *f = false);
        self.answered.iter_mut().for_each(|a| *a = false);
    }

    fn offer(&mut self, idx: usize, round: u32) -> bool {
        let (c, pos) = self.place[idx];
        if round != 0
            || self.satisfied()
            || self.failed[idx]
            || self.decoded[c].is_some()
            || self.arrived[c].iter().any(|a| a.0 == pos)
        {
            return false;
        }
        self.answered[idx] = true;
        self.arrived[c].push((pos, self.arrivals, idx));
        self.arrivals += 1;
        if self.arrived[c].len() >= self.need {
            let positions: Vec<usize> = self.arrived[c].iter().map(|a| a.0).collect();
            self.decoded[c] = Some(self.decoder.decode(&SurvivorSet::from_indices(self.matrix.ell(), &positions)));
        }
        true
    }

    fn fail(&mut self, idx: usize) {
        self.failed[idx] = true;
    }

    fn satisfied(&self) -> bool {
        self.decoded.iter().all(Option::is_some)
    }

    fn hopeless(&self) -> bool {
        (0..self.matrix.clusters).any(|c| {
            self.decoded[c].is_none() && self.cluster_members(c).filter(|&w| !self.failed[w]).count() < self.need
        })
    }

    fn combine(&mut self) -> Combination {
        let mut terms = vec![];
        let mut residual = 0.0f64;
        let mut used = vec![];
        let mut responders = vec![];
        for (c, arrived) in self.arrived.iter().enumerate() {
            let d = self.decoded[c].as_ref().expect("satisfied");
            residual = residual.max(d.residual);
            for &(pos, arrival, w) in arrived {
                if d.coeffs[pos] != 0.0 {
                    terms.push(Term::whole(Src::Arrival(arrival), self.len, d.coeffs[pos]));
                }
                used.push(w);
            }
            responders.push(arrived.iter().map(|a| a.2 + 1).collect::<Vec<_>>());
        }
        used.sort_unstable();
        let mut comb = Combination::exact(self.len, terms);
        comb.used = used;
        comb.residual = residual;
        comb.exact = residual <= EXACT_RESIDUAL;
        let truth: Vec<bool> = (1..=self.matrix.workers).map(|w| self.injector.state(w, self.t).0).collect();
        let positions: Vec<(usize, usize)> = self.place.iter().map(|&(q, i)| (q + 1, i + 1)).collect();
        // the partition as 1-based worker ids, each cluster ascending
        let clusters: Vec<Vec<usize>> =
            (0..self.matrix.clusters).map(|c| self.cluster_members(c).map(|w| w + 1).collect()).collect();
        comb.notes.clusters = Some(clusters);
        comb.notes.responders = Some(responders);
        comb.notes.slow = Some(ids(&truth));
        if self.dynamic {
            comb.notes.believed = Some(ids(&self.believed));
            comb.notes.positions = Some(positions);
            comb.notes.swaps = Some(self.swaps);
            comb.notes.fallbacks = Some(self.fallbacks);
        }
        comb
    }

    fn needs(&self) -> String {
        let waiting: Vec<String> = (0..self.matrix.clusters)
            .filter(|&c| self.decoded[c].is_none())
            .map(|c| format!("cluster {} has {} of {}", c + 1, self.arrived[c].len(), self.need))
            .collect();
        format!("{} of the {} members of every cluster ({})", self.need, self.matrix.ell(), waiting.join(", "))
    }
}

/// A GC-DC worker: stores the blocks of its n clusters (parts q·ℓ + j: block of its q-th
/// cluster, mini-batch j) and computes the r mini-batches of its assigned codeword.
pub(crate) struct Assigned {
    len: usize,
    r: usize,
    ell: usize,
    b: GradientCode,
    eligible: Vec<usize>,
    /// (cluster, position) when no assignment arrives: its place in the static partition
    fallback: (usize, usize),
    now: (usize, usize),
}

impl Assigned {
    pub(crate) fn new(plan: &Plan, code: usize, worker: usize, len: usize) -> Self {
        let (pc, b) = codes(plan, code);
        let PlanCode::Clusters { matrix, r, .. } = pc else { unreachable!("checked") };
        let fallback = matrix.static_partition().positions(matrix.workers)[worker];
        Assigned {
            len,
            r: *r,
            ell: matrix.ell(),
            b: b.clone(),
            eligible: matrix.eligible(worker),
            fallback,
            now: fallback,
        }
    }

    /// Block-local mini-batches of the current codeword.
    fn batches(&self) -> impl Iterator<Item = usize> + '_ {
        (0..self.r).map(|u| (self.now.1 + u) % self.ell)
    }
}

impl Encoder for Assigned {
    fn begin(&mut self, _t: u64, assignment: Option<&[u8]>) {
        self.now = assignment
            .and_then(decode_assignment)
            .filter(|(c, i)| self.eligible.contains(c) && *i < self.ell)
            .unwrap_or(self.fallback);
    }

    fn select(&self) -> Option<Vec<usize>> {
        let slot = self.eligible.iter().position(|&c| c == self.now.0).expect("assigned an eligible cluster");
        Some(self.batches().map(|j| slot * self.ell + j).collect())
    }

    fn round(&self, _r: u32) -> Combination {
        let i = self.now.1;
        let terms = self
            .batches()
            .enumerate()
            .map(|(u, j)| Term::whole(Src::Own(u), self.len, self.b.b[(i, j)]))
            .filter(|t| t.coef != 0.0)
            .collect();
        Combination::exact(self.len, terms)
    }

    fn note(&self) -> Option<(usize, usize)> {
        Some((self.now.0 + 1, self.now.1 + 1))
    }
}

#[cfg(test)]
mod tests {
    use outrun_codes::Rng;

    use crate::roles::{aggregator, encoder, Src};
    use outrun_config::parse;
    use outrun_plan::{build, Plan, Shape};

    fn plan(kind: &str, extra: &[&str]) -> Plan {
        let base = format!(
            "[run]\nname='t'\niterations=3\n[data]\nkind='linear-synthetic'\nsamples=150\nfeatures=3\n[model]\nloss='least-squares'\nlr=0.1\n[scheme]\nkind='{kind}'\nworkers=12\nclusters=4\nr=2\n{}[timing]\ncompute='modelled'\n[stragglers]\nmodel='markov'\np=0.2\na=1e-4\nmu_slow=10\nmu_fast=1000\ninitial_slow=6\n",
            if kind == "gc-dc" { "n=2\n" } else { "" }
        );
        build(
            &parse(&base, &extra.iter().map(|s| s.to_string()).collect::<Vec<_>>()).unwrap(),
            Shape { samples: 150, features: 3 },
        )
        .unwrap()
    }

    /// Through the scheme's own roles (assignments → worker encoders → the master's decode),
    /// every point reaches the master with total weight 1, whatever the arrival order: the
    /// plan-level statement that GC-SC and GC-DC decode the full gradient.
    #[test]
    fn every_point_weighs_one_whatever_the_arrival_order() {
        for (kind, extra) in [
            ("gc-sc", vec![]),
            ("gc-dc", vec![]),
            ("gc-dc", vec!["scheme.ssi='observed'"]),
            ("gc-dc", vec!["scheme.ssi='perfect'", "scheme.capped=false"]),
        ] {
            let plan = plan(kind, &extra);
            let k = plan.workers;
            let mut agg = aggregator(&plan, 0, 1);
            let mut encs: Vec<_> = (1..=k).map(|w| encoder(&plan, w, 1)).collect();
            let mut rng = Rng::from_key(&[5]);
            let mut partitions = std::collections::HashSet::new();
            for t in 0..40u64 {
                let assign = agg.assignments(t);
                assert_eq!(assign.is_some(), kind == "gc-dc");
                agg.begin(t);
                for (w, e) in encs.iter_mut().enumerate() {
                    e.begin(t, assign.as_ref().map(|a| &a[w][..]));
                }
                let mut accepted = vec![];
                for w in rng.permutation(k) {
                    if agg.offer(w, 0) {
                        accepted.push(w);
                    }
                    if agg.satisfied() {
                        break;
                    }
                }
                assert!(agg.satisfied() && !agg.hopeless());
                let comb = agg.combine();
                assert!(comb.exact && comb.residual < 1e-9, "{kind} t {t}: residual {}", comb.residual);
                assert_eq!(comb.used.len(), 4 * 2, "ℓ − r + 1 = 2 responders in each of 4 clusters");
                partitions.insert(format!("{:?}", comb.notes.clusters));
                let mut weight = vec![0.0; plan.samples];
                for term in &comb.terms {
                    let Src::Arrival(j) = term.src else { panic!("the master combines arrivals") };
                    let w = accepted[j];
                    let node = &plan.nodes[w + 1];
                    let select = encs[w].select().unwrap_or_else(|| (0..node.parts.len()).collect());
                    let load: usize = select.iter().map(|&i| node.parts[i].len()).sum();
                    assert!(
                        (24..=26).contains(&load),
                        "r = 2 mini-batches of 12 or 13 points per codeword, not {load}"
                    );
                    for own in encs[w].round(0).terms {
                        let Src::Own(u) = own.src else { panic!("workers send their own parts") };
                        for (p, c) in node.parts[select[u]].points() {
                            weight[p] += term.coef * own.coef * c;
                        }
                    }
                }
                assert!(weight.iter().all(|x| (x - 1.0).abs() < 1e-9), "{kind} {extra:?} t {t}: {weight:?}");
            }
            // the static scheme keeps its partition; the dynamic one moves with the stragglers
            assert_eq!(partitions.len() == 1, kind == "gc-sc", "{kind}: {} partitions", partitions.len());
        }
    }

    #[test]
    fn plans_describe_their_clusters_and_memory() {
        let sc = plan("gc-sc", &[]);
        assert!(sc.nodes[1..].iter().all(|n| n.parts.len() == 1), "GC-SC stores its r mini-batches, pre-weighted");
        let text = sc.describe();
        assert!(text.contains("static partition (GC-SC)") && text.contains("any 2 of its members"), "{text}");
        let dc = plan("gc-dc", &[]);
        assert!(dc.nodes[1..].iter().all(|n| n.parts.len() == 6), "n·ℓ = 6 mini-batches stored");
        let text = dc.describe();
        assert!(
            text.contains("dynamic (GC-DC)")
                && text.contains("Lemma 1")
                && text.contains("previous iteration's injected"),
            "{text}"
        );
        let perfect = plan("gc-dc", &["scheme.ssi='perfect'"]);
        assert!(perfect.describe().contains("PERFECT SSI: simulator only"));
    }
}
