//! `job.kind = "fl"`: federated learning of gradient descent's models (`[data]`, `[model]`,
//! `[features]`) by rounds of local SGD.
//!
//! Round t: every client starts from the server's θ and takes E = `job.local_steps` steps
//! θ ← θ − η_t·(g/b + λθ) on batches of b = round(`job.local_batch`·m) of its m rows (drawn
//! without replacement per step from `run.seed`, rank, round and step; all of them, in order, at
//! `local_batch = 1`), and uploads Δ = θ_server − θ_client followed by its first batch's mean
//! loss. The scheme's rule (`outrun_proto::roles::FlRule`) turns the uploads into Δ̄ and every
//! rank applies θ ← θ − Δ̄. A server with parts (DiverseFL's per-client guiding updates,
//! FLTrust's root-set update) computes them the same way, with full-batch steps on a sample of
//! each part's rows stratified by label ([`stratified`]). Everything else — data, models,
//! held-out metrics, checkpoints — is gradient descent's.

use std::collections::BTreeMap;
use std::sync::Arc;

use outrun_codes::{domain, Rng};
use outrun_config::{FlConfig, Labels, LocalConfig, ModelConfig};
use outrun_plan::{sample_size, Plan};
use outrun_proto::roles::Vector as _;
use outrun_proto::Frame;
use outrun_python::PyError;

use super::gd::{self, GradientDescent, Part};
use super::{Applied, Job, JobError, Labeled, Metrics, Resumable};
use crate::data::{DataError, Rows};
use crate::metrics::step_size;
use crate::model::Model;

/// Federated learning of a model.
pub struct Federated {
    gd: GradientDescent,
    local: LocalConfig,
    /// Per rank, the fraction of its parts' rows it samples (a server with parts).
    sample: Vec<Option<f64>>,
}

impl Federated {
    /// The job of `plan`, with no rows loaded.
    pub fn new(plan: &Plan, config: &FlConfig) -> Self {
        Federated {
            gd: GradientDescent::new(plan, &config.train),
            local: config.local.clone(),
            sample: plan.nodes.iter().map(|n| n.sample).collect(),
        }
    }

    /// Whether `rank` computes on samples of its parts (a server with parts), in full batch.
    fn samples(&self, rank: usize) -> bool {
        self.sample.get(rank).copied().flatten().is_some()
    }

    /// Rows a client's local batch holds out of `m`.
    fn batch_of(&self, m: usize) -> usize {
        sample_size(m, self.local.local_batch)
    }
}

/// θ after the E local steps of round `t` from `theta` on `part` (the part keyed `key`; its
/// whole rows, full-batch, when `full`) with `model`, and the first step's mean loss; or why the
/// model could not compute.
fn local_steps(
    model: &mut dyn Model,
    (config, local, pace): (&ModelConfig, &LocalConfig, usize),
    key: [u64; 3],
    t: u64,
    theta: &[f64],
    part: &Part,
    full: bool,
) -> Result<(Vec<f64>, f64), PyError> {
    let eta = step_size(config, t);
    let m = part.rows.len();
    let b = if full { m } else { sample_size(m, local.local_batch) };
    let mut th = theta.to_vec();
    let mut first = f64::NAN;
    let mut g = vec![0.0; th.len()];
    for e in 0..local.local_steps {
        let batch;
        let (rows, coef, whole) = if b == m {
            (&part.rows, &part.coef[..], true)
        } else {
            let idx = local_batch(key, t, e, m, b);
            batch = (part.rows.select(idx.iter().copied()), idx.iter().map(|&i| part.coef[i]).collect::<Vec<_>>());
            (&batch.0, &batch.1[..], false)
        };
        g.fill(0.0);
        let part_key = whole.then_some((key[1] as usize, key[2] as usize));
        let loss = model.gradient(part_key, rows, coef, &th, &mut g, pace)?;
        if e == 0 {
            first = loss / b.max(1) as f64;
        }
        for (x, gk) in th.iter_mut().zip(&g) {
            *x -= eta * (gk / b as f64 + config.l2 * *x);
        }
    }
    Ok((th, first))
}

/// The `b` rows (positions out of `m`, ascending) of local step `e` of round `t` for the part
/// keyed `key` = (seed, rank, part): a partial Fisher–Yates shuffle.
pub(crate) fn local_batch(key: [u64; 3], t: u64, e: u64, m: usize, b: usize) -> Vec<usize> {
    let mut rng = Rng::from_key(&[key[0], domain::LOCAL, key[1], key[2], t, e]);
    let mut idx: Vec<usize> = (0..m).collect();
    for i in 0..b {
        let j = i + rng.below(m - i);
        idx.swap(i, j);
    }
    idx.truncate(b);
    idx.sort_unstable();
    idx
}

/// A sample of round(`fraction`·m) of `labels`' m positions (at least one), stratified: each
/// label gets its share by largest remainder (ties to the smaller label), drawn uniformly from
/// `run.seed` and the part's `key`; positions ascending. `None` labels (a regression): one
/// stratum.
pub(crate) fn stratified(labels: Option<&[f64]>, m: usize, fraction: f64, seed: u64, key: u64) -> Vec<usize> {
    let k = sample_size(m, fraction);
    let mut strata: BTreeMap<i64, Vec<usize>> = BTreeMap::new();
    for i in 0..m {
        strata.entry(labels.map_or(0, |y| y[i] as i64)).or_default().push(i);
    }
    let exact: Vec<f64> = strata.values().map(|s| k as f64 * s.len() as f64 / m as f64).collect();
    let mut quota: Vec<usize> = exact.iter().map(|x| x.floor() as usize).collect();
    let mut by_rest: Vec<usize> = (0..quota.len()).collect();
    by_rest.sort_by(|&a, &b| (exact[b] - exact[b].floor()).total_cmp(&(exact[a] - exact[a].floor())).then(a.cmp(&b)));
    let short = k - quota.iter().sum::<usize>();
    by_rest.iter().take(short).for_each(|&c| quota[c] += 1);
    let mut out: Vec<usize> = strata
        .iter()
        .zip(&quota)
        .flat_map(|((&label, rows), &q)| {
            let mut rng = Rng::from_key(&[seed, domain::SAMPLE, key, label as u64]);
            rng.choose(rows.len(), q).into_iter().map(|i| rows[i]).collect::<Vec<_>>()
        })
        .collect();
    out.sort_unstable();
    out
}

impl Job for Federated {
    fn name(&self) -> &'static str {
        "fl"
    }

    fn problem(&self) -> String {
        format!(
            "{}, federated: {} local step(s) on {} of each client's rows",
            self.gd.problem(),
            self.local.local_steps,
            self.local.local_batch
        )
    }

    fn columns(&self) -> &'static [&'static str] {
        self.gd.columns()
    }

    fn state_file(&self) -> &'static str {
        self.gd.state_file()
    }

    fn len(&self, rank: usize) -> usize {
        self.gd.len(rank)
    }

    fn model_len(&self) -> usize {
        self.gd.model_len()
    }

    /// E steps per round, each on the local batch's share of a client's rows (a server's
    /// sample is its load already, computed in full batch).
    fn work(&self, rank: usize, _t: u64) -> f64 {
        let share = if self.samples(rank) { 1.0 } else { self.local.local_batch };
        self.gd.net.cost(self.gd.inputs, self.gd.p) * self.local.local_steps as f64 * share
    }

    fn memory(&mut self, plan: &Plan) -> Result<Vec<u64>, DataError> {
        self.gd.memory(plan)
    }

    /// Clients read their blocks; a server with parts reads each part's rows and keeps its
    /// stratified sample.
    fn load(&mut self, plan: &Plan, ranks: &[usize]) -> Result<(), DataError> {
        let (servers, clients): (Vec<usize>, Vec<usize>) = ranks.iter().partition(|&&r| self.samples(r));
        self.gd.load(plan, &clients)?;
        let labeled = self.gd.config.model.labels() != Labels::Real;
        for rank in servers {
            let fraction = self.sample[rank].expect("partitioned");
            let mut parts = vec![];
            for (k, set) in plan.nodes[rank].parts.iter().enumerate() {
                let idx: Vec<usize> = set.points().map(|(i, _)| i).collect();
                let rows = self.gd.rows(&idx)?;
                let y = rows.y.to_vec();
                let keep = stratified(labeled.then_some(&y[..]), rows.len(), fraction, self.gd.seed, k as u64);
                let coef = keep.iter().map(|_| 1.0).collect();
                parts.push(Part { rows: rows.select(keep), coef, at: Default::default() });
            }
            self.gd.parts.insert(rank, parts);
        }
        Ok(())
    }

    fn load_metrics(&mut self) -> Result<(), DataError> {
        self.gd.load_metrics()
    }

    fn pace(&mut self, rows: usize) {
        self.gd.pace(rows);
    }

    fn model(&mut self) -> Arc<Frame> {
        self.gd.model()
    }

    fn state(&self) -> Option<Vec<f64>> {
        self.gd.state()
    }

    fn compute(
        &mut self,
        rank: usize,
        t: u64,
        model: &Frame,
        select: Option<&[usize]>,
    ) -> Result<Vec<Frame>, JobError> {
        let full = self.samples(rank);
        let gd = &mut self.gd;
        let all = &gd.parts[&rank];
        let chosen: Vec<usize> = select.map_or_else(|| (0..all.len()).collect(), <[usize]>::to_vec);
        let theta = model.as_slice();
        let how = (&gd.config.model, &self.local, gd.pace);
        let model = gd::model(&mut gd.python, &mut gd.net);
        let mut frames = Vec::with_capacity(chosen.len());
        for k in chosen {
            let key = [gd.seed, rank as u64, k as u64];
            let (th, loss) = local_steps(&mut *model, how, key, t, theta, &all[k], full)
                .map_err(|e| JobError::Model(format!("{} (round {t})", e.on_rank(rank))))?;
            // with header room: the upload is sent from where it is formed
            let mut frame = Frame::zeros(theta.len() + 1);
            let (delta, last) = frame.as_mut_slice().split_at_mut(theta.len());
            delta.iter_mut().zip(theta.iter().zip(&th)).for_each(|(d, (a, b))| *d = a - b);
            last[0] = loss;
            frames.push(frame);
        }
        Ok(frames)
    }

    /// θ ← θ − Δ̄ (the delivered total is the rule's Δ̄ and the clients' loss).
    fn apply(&mut self, t: u64, total: Frame) -> Result<Applied, JobError> {
        let total = total.as_slice();
        let params = self.gd.params();
        let (step, loss) = (&total[..params], total[params]);
        self.gd.theta.iter_mut().zip(step).for_each(|(th, d)| *th -= d);
        if !self.gd.theta.iter().all(|v| v.is_finite()) {
            return Err(JobError::Diverged {
                iteration: t,
                message: format!(
                    "round {t}: the model diverged (non-finite θ); lower model.lr (now {}) or use a robust scheme",
                    self.gd.config.model.lr
                ),
            });
        }
        self.gd.held_out(t)?;
        Ok(Applied { loss, state: Some(self.gd.theta.clone()), error: None, done: false })
    }

    fn metrics(&self, applied: &Applied) -> Metrics {
        self.gd.metrics(applied)
    }

    fn resumable(&mut self) -> Option<&mut dyn Resumable> {
        Some(self)
    }

    fn labeled(&mut self) -> Option<&mut dyn Labeled> {
        Some(&mut self.gd)
    }

    /// FedAvg over the clients `[faults]` leaves honest, every round, by plain per-sample loops
    /// (`reference::naive_gradient`) on the same local batches: what the oracle computes when it
    /// waits for every client.
    fn reference(&mut self, plan: &Plan) -> Result<Vec<f64>, DataError> {
        let (rows, mut theta) = self.gd.whole()?;
        let model = &self.gd.config.model;
        let clients: Vec<(usize, usize, Rows)> = plan
            .nodes
            .iter()
            .filter_map(|n| Some((n.rank, n.worker?, rows.select(n.parts.first()?.points().map(|(i, _)| i)))))
            .collect();
        for t in 0..plan.run.iterations {
            let eta = step_size(model, t);
            let mut sum = vec![0.0; theta.len()];
            let mut honest = 0;
            for (rank, worker, mine) in &clients {
                if plan.faults.at(*worker, t).is_some() {
                    continue;
                }
                honest += 1;
                let (m, b) = (mine.len(), self.batch_of(mine.len()));
                let mut th = theta.clone();
                for e in 0..self.local.local_steps {
                    let batch = if b == m {
                        mine.clone()
                    } else {
                        mine.select(local_batch([self.gd.seed, *rank as u64, 0], t, e, m, b))
                    };
                    let (g, _) = crate::reference::naive_gradient(&batch, model, &th);
                    th.iter_mut().zip(&g).for_each(|(x, gk)| *x -= eta * (gk / b as f64 + model.l2 * *x));
                }
                sum.iter_mut().zip(theta.iter().zip(&th)).for_each(|(s, (a, c))| *s += a - c);
            }
            if honest > 0 {
                theta.iter_mut().zip(&sum).for_each(|(x, s)| *x -= s / honest as f64);
            }
        }
        Ok(theta)
    }
}

impl Resumable for Federated {
    fn save(&self) -> Vec<(String, Vec<f64>)> {
        self.gd.save()
    }

    fn restore(&mut self, vectors: &[(String, Vec<f64>)]) -> Result<(), JobError> {
        self.gd.restore(vectors)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_stratified_sample_keeps_the_label_proportions() {
        // 60 rows: 30 of label 0, 20 of label 1, 10 of label 2; a 10 % sample holds 3, 2, 1
        let y: Vec<f64> = (0..60)
            .map(|i| {
                if i < 30 {
                    0.0
                } else if i < 50 {
                    1.0
                } else {
                    2.0
                }
            })
            .collect();
        let s = stratified(Some(&y), 60, 0.1, 7, 0);
        assert_eq!(s.len(), 6);
        let count = |c: f64| s.iter().filter(|&&i| y[i] == c).count();
        assert_eq!((count(0.0), count(1.0), count(2.0)), (3, 2, 1));
        assert!(s.windows(2).all(|w| w[0] < w[1]));
        // the whole set at fraction 1, in order
        assert_eq!(stratified(Some(&y), 60, 1.0, 7, 0), (0..60).collect::<Vec<_>>());
        // largest remainder: 7 % of 60 = 4.2 → 4 rows: shares 2, 1.33, 0.67 → 2, 1, 1
        let s = stratified(Some(&y), 60, 0.07, 7, 0);
        assert_eq!((s.len(), s.iter().filter(|&&i| y[i] == 2.0).count()), (4, 1));
        // at least one row
        assert_eq!(stratified(None, 5, 0.01, 7, 0).len(), 1);
    }

    #[test]
    fn local_batches_are_seeded_distinct_and_sorted() {
        let a = local_batch([1, 2, 0], 5, 0, 100, 10);
        assert_eq!(a.len(), 10);
        assert!(a.windows(2).all(|w| w[0] < w[1]) && a.iter().all(|&i| i < 100));
        assert_eq!(a, local_batch([1, 2, 0], 5, 0, 100, 10));
        assert_ne!(a, local_batch([1, 2, 0], 5, 1, 100, 10));
        assert_eq!(local_batch([1, 2, 0], 5, 0, 7, 7), (0..7).collect::<Vec<_>>());
    }
}
