//! CodedFedL (thesis ch. 5; note `seed-004-ch4-ch5-ch7.md` §3) on a star: the master is the
//! server and its own computing unit, the N workers are the clients.
//!
//! Client j holds the j-th of N near-equal contiguous blocks of the m rows (ℓ_j of them). Once,
//! before the first round, the allocation (`outrun_codes::codedfedl`) takes every client's law
//! — compute ℓ/μ_j + Exp(α_jμ_j/ℓ) from `[stragglers] model = "shifted-exp"` (μ_j = 1/(a_j·w),
//! α_j = a_j·mu_j for a job whose point costs w units), links τ_down, τ_up with Geometric(1 − p)
//! transmissions from `[links] model = "delay"` — and finds the deadline t* at which the
//! clients' expected returns and the u parity rows make up m. Client j then samples ℓ*_j of its
//! rows privately (from `run.seed`), weighs each of its rows by √(1 − P(T_j ≤ t*)) if sampled
//! and 1 if not, and uploads G_j·W_j·[X̂_j Y_j] (u rows, G_j private, zero mean, unit variance)
//! once, in the plan's prelude (`outrun_proto::PreludeNode`: the job's `Prelude` contribution,
//! in transmissions of a model's size that the link model delays one after the other); the
//! server sums the uploads into its parity rows. Every round the server sends θ; each client returns the gradient sum over its
//! sampled rows; at t* the server adds what arrived to (1/u)·X̌ᵀ(X̌θ − Y̌) computed on the parity
//! ([`Rule::Until`]): no decoding, and E\[g\] is the full gradient when GᵀG/u = I.
//!
//! With `scheme.batches = B` > 1 (the thesis's per-mini-batch encoding) each client's rows are
//! cut, in a private order, into B groups; global mini-batch b is every client's group b. One
//! allocation serves every batch (m/B points; the groups differ by at most a row), each client
//! samples ℓ*_j of its group in every batch and uploads one encoding per batch in the same
//! prelude; the server's part holds the B·u parity rows and round t computes on batch t mod B's.

use outrun_codes::codedfedl::{self, Node as Law};
use outrun_codes::{domain, Rng};

use crate::alloc::{split_sizes, Segment, WeightedSet};
use crate::parity::{batch_rng, ClientParity, Parity};
use crate::plan::{Plan, SchemeData};
use crate::rules::{Encoding, Rule};
use crate::schemes::{star, worker};
use crate::stragglers::{Law as StragglerLaw, StragglerModel};

use crate::links::Links;
use outrun_config::{CodedfedlConfig, Config, ConfigError, JobConfig, Loss};

/// The model's inputs and outputs, and the cost of a point relative to a linear model on the
/// data's `p` features: CodedFedL's parity gradient is least squares'.
fn model_width(cfg: &Config, p: usize) -> Result<(usize, usize, f64), ConfigError> {
    let JobConfig::Gd(g) = &cfg.job else {
        return Err(ConfigError::new("scheme.kind", "= \"codedfedl\" trains a model: set job.kind = \"gd\""));
    };
    if g.model.loss != Loss::LeastSquares || !g.model.hidden.is_empty() {
        return Err(ConfigError::new(
            "model.loss",
            format!("= \"{}\": codedfedl's parity gradient is that of linear least squares (one output or model.outputs = C, e.g. on [features] random features, as in the thesis); use loss = \"least-squares\" without hidden layers", g.model.loss.name()),
        ));
    }
    if g.model.batch.is_some() {
        return Err(ConfigError::new(
            "model.batch",
            "codedfedl's batches are global mini-batches, each encoded once, that every round's clients share: remove model.batch and set scheme.batches = B (round t trains on batch t mod B)",
        ));
    }
    let inputs = g.features.as_ref().map_or(p, |f| f.q);
    let outputs = g.model.outputs.unwrap_or(1).max(1);
    Ok((inputs, outputs, (inputs * outputs) as f64 / p.max(1) as f64))
}

/// Client k's law (k 0-based) for a job whose point costs `work` units.
fn laws(cfg: &Config, n: usize, work: f64, caps: &[usize]) -> Result<Vec<Law>, ConfigError> {
    let model = StragglerModel::from_config(cfg);
    let StragglerLaw::ShiftedExp { a, mu } = &model.law else {
        return Err(ConfigError::new(
            "stragglers.model",
            format!("= \"{}\": codedfedl allocates the clients' loads from their compute laws; set stragglers.model = \"shifted-exp\" with a and mu (one value, or one per client)", model.name()),
        ));
    };
    if let Some(k) = (0..n).find(|&k| a[k].is_nan() || a[k] <= 0.0) {
        return Err(ConfigError::new(
            "stragglers.a",
            format!("client {}: a = {} — codedfedl's compute law ℓ/μ + Exp(αμ/ℓ) needs a > 0", k + 1, a[k]),
        ));
    }
    let (up, down, p) = match Links::from_config(cfg) {
        Links::Delay { up, down, p, .. } => (up, down, p),
        // one transmission of the latency each way, never repeated
        Links::Latency { seconds } => (vec![seconds; n], vec![seconds; n], 0.0),
        _ => (vec![0.0; n], vec![0.0; n], 0.0),
    };
    Ok((0..n)
        .map(|k| {
            let speed = 1.0 / (a[k] * work);
            Law { mu: speed, alpha: a[k] * mu[k], tau_down: down[k], tau_up: up[k], p, cap: caps[k] as f64 }
        })
        .collect())
}

/// Client `worker`'s private sample of `load` of the `len` rows it has in batch `b` of
/// `batches` (offsets in that batch's rows, ascending).
fn sample(seed: u64, worker: usize, b: usize, batches: usize, len: usize, load: usize) -> Vec<usize> {
    batch_rng(&[seed, domain::PARITY, worker as u64, 0], b, batches).choose(len, load)
}

/// Client `worker`'s `len` rows (offsets in its block) cut into `batches` global mini-batches:
/// all of them in order with one batch; else in a private order, cut into near-equal groups,
/// each ascending.
fn groups(seed: u64, worker: usize, len: usize, batches: usize) -> Vec<Vec<usize>> {
    if batches == 1 {
        return vec![(0..len).collect()];
    }
    let order = Rng::from_key(&[seed, domain::PARITY, worker as u64, 2]).permutation(len);
    let mut at = 0;
    split_sizes(len, batches)
        .into_iter()
        .map(|l| {
            let mut g = order[at..at + l].to_vec();
            g.sort_unstable();
            at += l;
            g
        })
        .collect()
}

pub(crate) fn build(cfg: &Config, c: &CodedfedlConfig, samples: usize, p: usize) -> Result<Plan, ConfigError> {
    let n = c.workers;
    let batches = c.batches.unwrap_or(1);
    let (_, _, work) = model_width(cfg, p)?;
    let sizes = split_sizes(samples, n);
    if let Some(k) = (0..n).find(|&k| sizes[k] < batches) {
        return Err(ConfigError::new(
            "scheme.batches",
            format!(
                "= {batches}: client {} holds {} row(s), fewer than the global mini-batches (each client needs a row in every batch): at most {}",
                k + 1,
                sizes[k],
                sizes.iter().min().copied().unwrap_or(0)
            ),
        ));
    }
    // the allocation is the same for every batch: each client's law at its largest batch share
    let caps: Vec<usize> = sizes.iter().map(|&l| l.div_ceil(batches)).collect();
    let laws = laws(cfg, n, work, &caps)?;
    let m = samples as f64 / batches as f64;
    let u_max = ((c.delta * m).round() as usize).max(1);
    let u = c.parity.unwrap_or(u_max);
    if u > u_max {
        let of = if batches > 1 { "δ·m/B" } else { "δ·m" };
        return Err(ConfigError::new(
            "scheme.parity",
            format!(
                "= {u}: more than u_max = round({of}) = {u_max} parity rows (scheme.delta = {} of the {samples} points{})",
                c.delta,
                if batches > 1 { format!(" in {batches} global mini-batches") } else { String::new() }
            ),
        ));
    }
    let (t, loads) = match c.deadline {
        Some(t) => (t, laws.iter().map(|l| codedfedl::best_load(l, t).0).collect::<Vec<_>>()),
        None => {
            let a = codedfedl::allocate(&laws, None, u as f64, m)
                .map_err(|e| ConfigError::new("scheme.delta", format!("= {}: {e}", c.delta)))?;
            (a.t, a.loads)
        }
    };
    let mut start = 0;
    let mut clients = vec![];
    let mut nodes = vec![];
    for (k, (law, &len)) in laws.iter().zip(&sizes).enumerate() {
        let load = (loads[k].round() as usize).min(caps[k]);
        let p_return = if load == 0 { 0.0 } else { codedfedl::expected_return(law, t, load as f64) / load as f64 };
        let w = (1.0 - p_return).max(0.0).sqrt();
        let (mut rows, mut sampled, mut batch_len) = (WeightedSet::default(), vec![], vec![]);
        for (b, group) in groups(cfg.run.seed, k + 1, len, batches).into_iter().enumerate() {
            let chosen = sample(cfg.run.seed, k + 1, b, batches, group.len(), load.min(group.len()));
            for (g, &i) in group.iter().enumerate() {
                let coef = if chosen.binary_search(&g).is_ok() { w } else { 1.0 };
                rows.push(Segment { start: start + i, len: 1, coef });
            }
            sampled.extend(chosen.iter().map(|&g| start + group[g]));
            batch_len.push(group.len());
        }
        sampled.sort_unstable();
        let mut part = WeightedSet::default();
        sampled.iter().for_each(|&i| part.push(Segment { start: i, len: 1, coef: 1.0 }));
        clients.push(ClientParity {
            rows,
            batch_len,
            load,
            p_return,
            mean_time: law.mean_time(load as f64),
            mu: law.mu,
            alpha: law.alpha,
        });
        nodes.push(worker(k + 1, vec![part], Encoding::Plain));
        start += len;
    }
    let rule = Rule::Until { by: t };
    let title = format!(
        "codedfedl, {n} clients, u = {u} parity rows (u_max = {u_max}){}: {}; the server adds its parity gradient, no decoding",
        if batches > 1 { format!(" per global mini-batch, {batches} batches each encoded once") } else { String::new() },
        rule.describe(n)
    );
    let mut plan = star(cfg, title, samples, 0, nodes, rule, vec![]);
    let mut own = WeightedSet::default();
    own.push(Segment { start: samples, len: batches * u, coef: 1.0 / u as f64 });
    plan.nodes[0].parts = vec![own];
    plan.data = SchemeData::Parity(Parity {
        u,
        u_max,
        batches,
        generator: c.generator,
        deadline: t,
        optimised: c.deadline.is_none(),
        work,
        clients,
    });
    Ok(plan)
}

#[cfg(test)]
mod tests {
    use crate::Shape;
    use outrun_config::parse;

    fn plan(sets: &[&str]) -> Result<crate::Plan, outrun_config::ConfigError> {
        plan_of(600, sets)
    }

    /// The plan of the base config with `sets` for `samples` points of 5 features.
    fn plan_of(samples: usize, sets: &[&str]) -> Result<crate::Plan, outrun_config::ConfigError> {
        let base = "[run]\nname='t'\niterations=3\nseed=4\n[data]\nkind='linear-synthetic'\nsamples=600\nfeatures=5\n[model]\nloss='least-squares'\nlr=0.1\n[scheme]\nkind='codedfedl'\nworkers=6\n[stragglers]\nmodel='shifted-exp'\na=[1e-3, 1e-3, 2e-3, 2e-3, 4e-3, 8e-3]\nmu=2000\n[timing]\ncompute='modelled'\na=1e-3\n";
        let cfg = parse(base, &sets.iter().map(|s| s.to_string()).collect::<Vec<_>>())?;
        crate::build(&cfg, Shape { samples, features: 5 })
    }

    #[test]
    fn the_allocation_makes_up_m_in_expectation_and_weights_the_rest() {
        let plan = plan(&[]).unwrap();
        let parity = plan.parity().unwrap();
        assert_eq!((parity.u, parity.u_max), (60, 60));
        // Σ ℓ*_j·P_j + u ≈ m (loads rounded to whole rows)
        assert!((parity.expected_return() - 600.0).abs() < 6.0, "{}", parity.expected_return());
        // the slowest client processes fewest rows; weights² + P = 1 on the sampled rows
        let loads: Vec<usize> = parity.clients.iter().map(|c| c.load).collect();
        assert!(loads[5] < loads[0], "{loads:?}");
        for (k, c) in parity.clients.iter().enumerate() {
            let part = &plan.nodes[k + 1].parts[0];
            assert_eq!(part.len(), c.load);
            for (i, _) in part.points() {
                let w = c.rows.points().find(|&(j, _)| j == i).unwrap().1;
                assert!((w * w + c.p_return - 1.0).abs() < 1e-12);
            }
            assert_eq!(c.rows.len(), 100);
        }
        assert_eq!(plan.nodes[0].load(), 60);
        assert!(matches!(plan.nodes[0].rule, Some(crate::rules::Rule::Until { by }) if by == parity.deadline));
    }

    #[test]
    fn bad_settings_are_one_line_naming_the_field() {
        let e = plan(&["scheme.parity=61"]).unwrap_err();
        assert_eq!(e.field, "scheme.parity");
        assert!(e.to_string().contains("u_max = round(δ·m) = 60"), "{e}");
        assert_eq!(plan(&["scheme.delta=1.5"]).unwrap_err().field, "scheme.delta");
        assert_eq!(plan(&["scheme.delta=0"]).unwrap_err().field, "scheme.delta");
        assert_eq!(plan(&["model.loss='logistic'"]).unwrap_err().field, "model.loss");
        assert_eq!(plan(&["stragglers.model='none'"]).unwrap_err().field, "stragglers.model");
    }

    fn dot(a: &[f64], b: &[f64]) -> f64 {
        a.iter().zip(b).map(|(x, y)| x * y).sum()
    }

    #[test]
    fn each_global_mini_batch_holds_a_share_of_every_client_and_its_own_parity() {
        let plan = plan(&["scheme.batches=4"]).unwrap();
        let parity = plan.parity().unwrap();
        // u_max = round(δ·m/B), the allocation's m is a batch's
        assert_eq!((parity.u, parity.u_max, parity.batches), (15, 15, 4));
        assert!((parity.expected_return() - 150.0).abs() < 6.0, "{}", parity.expected_return());
        let mut seen = [0; 600];
        for (k, c) in parity.clients.iter().enumerate() {
            assert_eq!(c.batch_len, vec![25; 4]);
            let part: Vec<usize> = plan.nodes[k + 1].parts[0].points().map(|(i, _)| i).collect();
            assert_eq!(part.len(), 4 * c.load);
            for b in 0..4 {
                let rows: Vec<(usize, f64)> = parity.client_batch(k, b).collect();
                // the client's block, each row in one batch; ℓ*_j of them sampled in each
                rows.iter().for_each(|&(i, _)| {
                    assert!((100 * k..100 * (k + 1)).contains(&i));
                    seen[i] += 1;
                });
                let sampled = rows.iter().filter(|(i, _)| part.contains(i)).count();
                assert_eq!(sampled, c.load, "client {} batch {b}", k + 1);
                for &(i, w) in &rows {
                    let want = if part.contains(&i) { (1.0 - c.p_return).sqrt() } else { 1.0 };
                    assert!((w - want).abs() < 1e-15);
                }
            }
            // the batches are a private draw, not the block cut in order
            assert!(
                parity.client_batch(k, 0).map(|(i, _)| i).collect::<Vec<_>>()
                    != (100 * k..100 * k + 25).collect::<Vec<_>>()
            );
        }
        assert!(seen.iter().all(|&s| s == 1));
        // batch b's points: its clients' rows, then parity rows 600 + 15·b …
        let points = parity.batch_points(2, 600);
        assert_eq!(points.len(), 150 + 15);
        assert_eq!(points[150..], (630..645).collect::<Vec<_>>()[..]);
        assert_eq!(plan.nodes[0].load(), 60);
        // one batch is the scheme before batches: the same plan, draw for draw
        let one = plan_of(600, &["scheme.batches=1"]).unwrap();
        assert_eq!(serde_json::to_string(&one).unwrap(), serde_json::to_string(&plan_of(600, &[]).unwrap()).unwrap());
        assert!(plan_of(600, &["scheme.batches=101"]).unwrap_err().to_string().contains("client 1 holds 100 row(s)"));
    }

    /// The thesis's unbiasedness (App. P) with GᵀG/u = I exactly: G is 24 columns of the
    /// 32 × 32 Sylvester–Hadamard matrix (±1, the Bernoulli generator's values). Over the 2ⁿ
    /// patterns of clients back by t*, each with its probability from the plan, the expected
    /// g_U + g_C is the full gradient: a sampled row carries P(T ≤ t*) in g_U and w² = 1 − P in
    /// g_C, an unsampled row 1 in g_C. With global mini-batches, batch b's: the clients' rows in
    /// it and its own parity.
    #[test]
    fn with_orthogonal_encoding_the_expected_gradient_is_the_full_gradient() {
        for batches in [1, 2] {
            let sets = [
                "scheme.workers=4".to_string(),
                "stragglers.a=[1e-3, 2e-3, 4e-3, 8e-3]".into(),
                "scheme.delta=0.25".into(),
                format!("scheme.batches={batches}"),
            ];
            let sets: Vec<&str> = sets.iter().map(String::as_str).collect();
            let m_all = 24 * batches;
            let plan = plan_of(m_all, &sets).unwrap();
            let parity = plan.parity().unwrap();
            assert!(parity.clients.iter().any(|c| c.load < 6) && parity.clients.iter().any(|c| c.load > 0));
            let (p, n, u) = (5, 4, 32);
            let x: Vec<Vec<f64>> =
                (0..m_all).map(|i| (0..p).map(|k| ((i * p + k) as f64 * 0.37).sin()).collect()).collect();
            let y: Vec<f64> = (0..m_all).map(|i| (i as f64 * 0.11).cos()).collect();
            let theta = [0.3, -0.2, 0.5, 0.1, -0.4];
            let grad = |i: usize, scale: f64| -> Vec<f64> {
                let r = dot(&x[i], &theta) - y[i];
                x[i].iter().map(|v| scale * v * r).collect()
            };
            let add = |acc: &mut Vec<f64>, v: &[f64]| acc.iter_mut().zip(v).for_each(|(a, b)| *a += b);
            let h = |a: usize, b: usize| if (a & b).count_ones().is_multiple_of(2) { 1.0 } else { -1.0 };
            for b in 0..batches {
                // batch b's rows (24: the Hadamard columns) and their weights
                let rows: Vec<(usize, f64)> = (0..n).flat_map(|k| parity.client_batch(k, b)).collect();
                assert_eq!(rows.len(), 24);
                let mut full = vec![0.0; p];
                rows.iter().for_each(|&(i, _)| add(&mut full, &grad(i, 1.0)));
                // the parity rows X̌ = G·W·X, Y̌ = G·W·y, and g_C = (1/u)·X̌ᵀ(X̌θ − Y̌)
                let mut g_c = vec![0.0; p];
                for a in 0..u {
                    let xa: Vec<f64> = (0..p)
                        .map(|k| rows.iter().enumerate().map(|(c, &(i, w))| h(a, c) * w * x[i][k]).sum())
                        .collect();
                    let ya: f64 = rows.iter().enumerate().map(|(c, &(i, w))| h(a, c) * w * y[i]).sum();
                    let r = dot(&xa, &theta) - ya;
                    add(&mut g_c, &xa.iter().map(|v| v * r / u as f64).collect::<Vec<_>>());
                }
                // each client's g_j over its sampled rows in the batch, weighted by the
                // probability it is back
                let in_batch: Vec<usize> = rows.iter().map(|r| r.0).collect();
                let g_j: Vec<Vec<f64>> = (1..=n)
                    .map(|j| {
                        let mut g = vec![0.0; p];
                        plan.nodes[j]
                            .points()
                            .filter(|(i, _)| in_batch.contains(i))
                            .for_each(|(i, c)| add(&mut g, &grad(i, c)));
                        g
                    })
                    .collect();
                let mut expected = g_c.clone();
                for pattern in 0..1usize << n {
                    let prob: f64 = (0..n)
                        .map(|j| {
                            if pattern >> j & 1 == 1 {
                                parity.clients[j].p_return
                            } else {
                                1.0 - parity.clients[j].p_return
                            }
                        })
                        .product();
                    for j in (0..n).filter(|j| pattern >> j & 1 == 1) {
                        add(&mut expected, &g_j[j].iter().map(|v| prob * v).collect::<Vec<_>>());
                    }
                }
                for (e, f) in expected.iter().zip(&full) {
                    assert!(
                        (e - f).abs() <= 1e-12 * f.abs().max(1.0),
                        "B = {batches}, batch {b}: E[g_M] = {expected:?}, full gradient {full:?}"
                    );
                }
            }
        }
    }
}
