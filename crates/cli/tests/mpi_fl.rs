//! Federated learning with faulty clients, through `mpirun` (`job.kind = "fl"`). With one
//! full-batch local step and `sample = 1.0`, DiverseFL's guiding update of a client is the
//! client's own update, so under sign-flipping clients DiverseFL rejects exactly the faulty ones
//! and equals the oracle, and both equal FedAvg over the honest clients as this test computes it
//! (its own logistic gradient, below); FedAvg under the same faults does not. Every other rule
//! (median, Krum, Multi-Krum, Bulyan, resampling, FLTrust) equals the test's own implementation
//! applied to the uploads the test computes, θ within 1e-9 over the run.

mod common;

use std::sync::LazyLock;

use common::*;
use outrun_testkit::Cfg;

fn cfg() -> Cfg {
    Cfg::linear("fl", 1100, 8, 11)
        .set("run.seed", 23)
        .set("run.iterations", 10)
        .set("run.deadline", 20.0)
        .set("run.trajectory", true)
        .set("job.kind", "fl")
        .set("job.local_steps", 1)
        .set("job.local_batch", 1.0)
        .set("data.kind", "logistic-synthetic")
        .set("model.loss", "logistic")
        .set("model.lr", 0.5)
        .set("model.l2", 0.001)
        .set("scheme.kind", "diversefl")
        .set("scheme.sample", 1.0)
        .set("scheme.byzantine", 2)
        .set("faults.kind", "sign-flip")
        .set("faults.workers", vec![3, 8])
}

/// The config above, as its TOML text.
static CFG: LazyLock<String> = LazyLock::new(|| cfg().text());

/// The clients' uploads at θ as this test computes them: client k of N holds rows
/// [start_k, start_k + len_k) (near-equal blocks, larger first) and takes one full-batch step of
/// logistic regression, Δ_k = η(Σ(σ(xᵀθ) − y)x/m + λθ); the clients in `faulty` send −Δ_k.
/// With `all`, one more: the same step on every row (FLTrust's root set at sample = 1).
fn uploads(rows: &outrun_workloads::data::Rows, n: usize, theta: &[f64], faulty: &[usize], all: bool) -> Vec<Vec<f64>> {
    let (d, p) = (rows.len(), rows.p());
    let (eta, l2) = (0.5, 1e-3);
    let step = |block: std::ops::Range<usize>| {
        let m = block.len() as f64;
        let mut g = vec![0.0; p];
        for j in block {
            let x = rows.row(j);
            let z: f64 = x.iter().zip(theta).map(|(a, b)| a * b).sum();
            let r = 1.0 / (1.0 + (-z).exp()) - rows.y[j];
            g.iter_mut().zip(x).for_each(|(gk, xk)| *gk += r * xk);
        }
        (0..p).map(|i| eta * (g[i] / m + l2 * theta[i])).collect::<Vec<f64>>()
    };
    let mut out = vec![];
    let mut start = 0;
    for k in 0..n {
        let len = d / n + usize::from(k < d % n);
        let delta = step(start..start + len);
        start += len;
        let sign = if faulty.contains(&(k + 1)) { -1.0 } else { 1.0 };
        out.push(delta.iter().map(|v| sign * v).collect());
    }
    if all {
        out.push(step(0..d));
    }
    out
}

/// θ_0 … θ_T of the config with `sets` when the server moves θ by `rule(uploads, t)`.
/// A server's rule: its step from the round's uploads and the round.
type Rule<'a> = dyn Fn(&[Vec<f64>], u64) -> Vec<f64> + 'a;

fn own_run(sets: &[String], all: bool, rule: &Rule<'_>) -> Vec<Vec<f64>> {
    let cfg = outrun_config::parse(&CFG, sets).unwrap();
    let mut rows = outrun_workloads::data::load_all(cfg.data(), cfg.run.seed, cfg.model().labels()).unwrap();
    match cfg.data().order {
        outrun_config::DataOrder::File => {}
        outrun_config::DataOrder::ByLabel => rows = rows.select(dealt(rows.y.as_slice().unwrap(), 1, 0)),
        outrun_config::DataOrder::Shards => {
            rows = rows.select(dealt(rows.y.as_slice().unwrap(), cfg.data().shards.unwrap(), cfg.run.seed))
        }
        o => panic!("no own reading of data.order = {o:?}"),
    }
    let mut theta = vec![0.0; rows.p()];
    let mut traj = vec![theta.clone()];
    for t in 0..cfg.run.iterations {
        let step = rule(&uploads(&rows, cfg.workers(), &theta, &[3, 8], all), t);
        theta.iter_mut().zip(&step).for_each(|(th, s)| *th -= s);
        traj.push(theta.clone());
    }
    traj
}

/// The rows as `data.order = "shards"` deals them, by this test's reading of the definition:
/// the row indices sorted by label (ties by index), cut where ⌊b·d/S⌋ falls for b = 1..S−1,
/// the S pieces laid end to end in the order of the permutation of 0..S that the run's seed
/// draws in the shards' domain. One shard is the sort by label.
fn dealt(y: &[f64], s: usize, seed: u64) -> Vec<usize> {
    let mut by_label: Vec<(f64, usize)> = y.iter().copied().zip(0..).collect();
    by_label.sort_by(|a, b| a.0.total_cmp(&b.0).then(a.1.cmp(&b.1)));
    let cuts: Vec<usize> = (0..=s).map(|b| b * y.len() / s).collect();
    let pieces: Vec<&[(f64, usize)]> = cuts.windows(2).map(|w| &by_label[w[0]..w[1]]).collect();
    let deal = outrun_codes::Rng::from_key(&[seed, outrun_codes::domain::SHARDS]).permutation(s);
    let mut out = Vec::with_capacity(y.len());
    for b in deal {
        out.extend(pieces[b].iter().map(|&(_, i)| i));
    }
    out
}

/// The uploads without the flips `own_run` applies (for a run without faults).
fn flip_back(u: &[Vec<f64>]) -> Vec<Vec<f64>> {
    u.iter()
        .enumerate()
        .map(|(k, z)| if k == 2 || k == 7 { z.iter().map(|v| -v).collect() } else { z.clone() })
        .collect()
}

fn mean(v: &[&Vec<f64>]) -> Vec<f64> {
    (0..v[0].len()).map(|i| v.iter().map(|z| z[i]).sum::<f64>() / v.len() as f64).collect()
}

fn median(mut col: Vec<f64>) -> f64 {
    col.sort_by(f64::total_cmp);
    let n = col.len();
    if n % 2 == 1 {
        col[n / 2]
    } else {
        (col[n / 2 - 1] + col[n / 2]) / 2.0
    }
}

fn coordinate_median(v: &[&Vec<f64>]) -> Vec<f64> {
    (0..v[0].len()).map(|i| median(v.iter().map(|z| z[i]).collect())).collect()
}

fn dist2(a: &[f64], b: &[f64]) -> f64 {
    a.iter().zip(b).map(|(x, y)| (x - y).powi(2)).sum()
}

/// Krum's choice order among `v`: scores are the sums of the K − f − 2 smallest squared
/// distances to the others.
fn krum_order(v: &[&Vec<f64>], f: usize) -> Vec<usize> {
    let k = v.len();
    let score = |i: usize| {
        let mut d: Vec<f64> = (0..k).filter(|&j| j != i).map(|j| dist2(v[i], v[j])).collect();
        d.sort_by(f64::total_cmp);
        d.iter().take(k.saturating_sub(f + 2)).sum::<f64>()
    };
    let mut idx: Vec<usize> = (0..k).collect();
    idx.sort_by(|&a, &b| score(a).total_cmp(&score(b)).then(a.cmp(&b)));
    idx
}

fn all(u: &[Vec<f64>]) -> Vec<&Vec<f64>> {
    u.iter().collect()
}

fn norm(v: &[f64]) -> f64 {
    v.iter().map(|x| x * x).sum::<f64>().sqrt()
}

#[test]
fn diversefl_and_the_oracle_equal_fedavg_over_the_honest_clients_and_fedavg_does_not() {
    for kind in ["diversefl", "oracle"] {
        let (run, dir, _, sets) = train(&format!("fl-{kind}"), &CFG, &[&format!("scheme.kind={kind}")]);
        assert_eq!(run.code, Some(0), "{kind}: {}", run.stderr);
        let honest = |u: &[Vec<f64>], _| mean(&[0, 1, 3, 4, 5, 6, 8, 9, 10].map(|k| &u[k]));
        let diff = max_rel_diff(&trajectory(&dir), &own_run(&sets, false, &honest));
        assert!(diff <= 1e-9, "{kind}: θ differs from FedAvg over the honest clients by {diff:e}");
        let rows = iterations(&dir);
        assert_eq!(rows.len(), 10);
        for r in &rows {
            assert_eq!(r["used"], "9", "{kind}: {r:?}");
            assert_eq!(r["faulty_used"], "", "{kind}: a faulty client got through: {r:?}");
        }
        let s = summary(&dir);
        assert_eq!((s["job"].as_str(), s["faulty_results_used"].as_u64()), (Some("fl"), Some(0)));
        if kind == "diversefl" {
            // the filter rejected the flipped uploads, and logged C₁ = −1, C₂ = 1 for them
            assert!(rows.iter().all(|r| r["rejected"] == "3 8"), "{rows:?}");
            let master = iter_records(&dir, 0);
            let sim = master[0]["similarity"].as_array().expect("similarity notes");
            assert_eq!(sim.len(), 11);
            for e in sim {
                let (rank, c1, c2) = (e[0].as_u64().unwrap(), e[1].as_f64().unwrap(), e[2].as_f64().unwrap());
                let want = if rank == 3 || rank == 8 { -1.0 } else { 1.0 };
                assert_eq!(c1, want, "rank {rank}");
                assert!((c2 - 1.0).abs() < 1e-12, "rank {rank}: C₂ = {c2}");
            }
            assert!(master.iter().any(|r| r.get("screen_s").is_some()), "the filter's time is logged");
        }
        eprintln!("{kind}: max relative θ difference to the test's FedAvg = {diff:.2e}");
    }
    let (run, dir, _, sets) = train("fl-fedavg", &CFG, &["scheme.kind=fedavg"]);
    assert_eq!(run.code, Some(0), "{}", run.stderr);
    let honest = |u: &[Vec<f64>], _| mean(&[0, 1, 3, 4, 5, 6, 8, 9, 10].map(|k| &u[k]));
    let diff = max_rel_diff(&trajectory(&dir), &own_run(&sets, false, &honest));
    assert!(diff > 0.05, "FedAvg under sign flips moved only {diff:e} from the honest FedAvg");
    assert!(iterations(&dir).iter().all(|r| r["faulty_used"] == "3 8"));
    assert_eq!(summary(&dir)["faulty_iterations"], 10);
}

#[test]
fn every_robust_rule_equals_the_tests_own_implementation_on_the_same_uploads() {
    let cases: Vec<(&str, bool, Box<Rule<'static>>, u64)> = vec![
        ("fedavg", false, Box::new(|u, _| mean(&all(u))), 20),
        ("median", false, Box::new(|u, _| coordinate_median(&all(u))), 20),
        ("krum", false, Box::new(|u, _| u[krum_order(&all(u), 2)[0]].clone()), 0),
        (
            "multi-krum",
            false,
            Box::new(|u, _| {
                let v = all(u);
                mean(&krum_order(&v, 2)[..9].iter().map(|&i| v[i]).collect::<Vec<_>>())
            }),
            u64::MAX,
        ),
        (
            "bulyan",
            false,
            Box::new(|u, _| {
                let mut pool: Vec<&Vec<f64>> = all(u);
                let mut chosen = vec![];
                while chosen.len() < 7 {
                    let pick = krum_order(&pool, 2)[0];
                    chosen.push(pool.remove(pick));
                }
                (0..chosen[0].len())
                    .map(|i| {
                        let med = median(chosen.iter().map(|z| z[i]).collect());
                        let mut col: Vec<f64> = chosen.iter().map(|z| z[i]).collect();
                        col.sort_by(|a, b| (a - med).abs().total_cmp(&(b - med).abs()));
                        col[..3].iter().sum::<f64>() / 3.0
                    })
                    .collect()
            }),
            u64::MAX,
        ),
        (
            "resampling",
            false,
            Box::new(|u, t| {
                let mut rng = outrun_codes::Rng::from_key(&[23, outrun_codes::domain::SAMPLE, t]);
                let groups = outrun_codes::resample_groups(11, 2, &mut rng);
                let means: Vec<Vec<f64>> =
                    groups.iter().map(|g| mean(&g.iter().map(|&i| &u[i]).collect::<Vec<_>>())).collect();
                coordinate_median(&means.iter().collect::<Vec<_>>())
            }),
            20,
        ),
        (
            "fltrust",
            true,
            Box::new(|u, _| {
                let (root, clients) = u.split_last().unwrap();
                let w: Vec<f64> = clients
                    .iter()
                    .map(|z| (root.iter().zip(z).map(|(a, b)| a * b).sum::<f64>() / (norm(root) * norm(z))).max(0.0))
                    .collect();
                let total: f64 = w.iter().sum();
                (0..root.len())
                    .map(|i| {
                        clients.iter().zip(&w).map(|(z, wk)| wk * norm(root) / norm(z) * z[i]).sum::<f64>() / total
                    })
                    .collect()
            }),
            0,
        ),
    ];
    for (kind, root, rule, faulty) in cases {
        let sample = if root { "scheme.sample=1.0" } else { "scheme.sample=0.2" };
        let (run, dir, _, sets) = train(&format!("fl-{kind}"), &CFG, &[&format!("scheme.kind={kind}"), sample]);
        assert_eq!(run.code, Some(0), "{kind}: {}", run.stderr);
        let diff = max_rel_diff(&trajectory(&dir), &own_run(&sets, root, &rule));
        assert!(diff <= 1e-9, "{kind}: θ differs from the test's own {kind} by {diff:e}");
        let used = summary(&dir)["faulty_results_used"].as_u64().unwrap();
        if faulty != u64::MAX {
            assert_eq!(used, faulty, "{kind}: flipped uploads used");
        }
        eprintln!("{kind}: max relative θ difference to the test's own = {diff:.2e}, flipped uploads used {used}");
    }
}

/// `data.order = "shards"` (two label-sorted shards per client, dealt by the seed) gives each
/// client the rows this test deals by the definition: the coordinate median of the uploads,
/// which depends on who holds which rows, equals the test's own over those rows, and not over
/// the rows sorted by label alone (one block each).
#[test]
fn clients_hold_the_label_sorted_shards_the_seed_deals() {
    let rule = |u: &[Vec<f64>], _| coordinate_median(&all(u));
    let sets = ["scheme.kind=median", "scheme.sample=0.2", "data.order=\"shards\"", "data.shards=22"];
    let (run, dir, _, sets) = train("fl-shards", &CFG, &sets);
    assert_eq!(run.code, Some(0), "{}", run.stderr);
    let got = trajectory(&dir);
    let diff = max_rel_diff(&got, &own_run(&sets, false, &rule));
    assert!(diff <= 1e-9, "θ differs from the test's own median over the dealt shards by {diff:e}");
    let by_label: Vec<String> =
        sets.iter().filter(|s| !s.starts_with("data.")).cloned().chain(["data.order=\"by-label\"".into()]).collect();
    let other = max_rel_diff(&got, &own_run(&by_label, false, &rule));
    assert!(
        other > 1e-3,
        "the median over one label-sorted block each is as close ({other:e}): the deal shows nothing"
    );
    eprintln!("shards: θ within {diff:.1e} of the test's own; {other:.1e} from one block each");
}

#[test]
fn sampled_clients_alone_compute_and_the_server_averages_them() {
    let (run, dir, _, sets) =
        train("fl-sampled", &CFG, &["scheme.kind=fedavg", "job.clients_per_round=4", "faults.kind=none"]);
    assert_eq!(run.code, Some(0), "{}", run.stderr);
    let rows = iterations(&dir);
    let chosen: Vec<Vec<usize>> =
        rows.iter().map(|r| r["survivors"].split(' ').map(|w| w.parse::<usize>().unwrap() - 1).collect()).collect();
    assert!(chosen.iter().all(|c| c.len() == 4), "{rows:?}");
    assert!(chosen.windows(2).any(|w| w[0] != w[1]), "the sample changes between rounds");
    // drawn from run.seed and the round: 4 of the 11 clients
    for (t, c) in chosen.iter().enumerate() {
        let mut want = outrun_codes::Rng::from_key(&[23, outrun_codes::domain::SAMPLE, t as u64, 1]).choose(11, 4);
        let mut got = c.clone();
        want.sort_unstable();
        got.sort_unstable();
        assert_eq!(got, want, "round {t}");
    }
    // the server's step is the mean of the 4 sampled clients' uploads, as this test computes them
    let sampled = |u: &[Vec<f64>], t: u64| mean(&chosen[t as usize].iter().map(|&k| &u[k]).collect::<Vec<_>>());
    let cfg_sets: Vec<String> = sets.iter().filter(|s| !s.starts_with("faults")).cloned().collect();
    let want = own_run(&cfg_sets, false, &|u, t| sampled(&flip_back(u), t));
    let diff = max_rel_diff(&trajectory(&dir), &want);
    assert!(diff <= 1e-9, "θ differs from the mean of the sampled clients by {diff:e}");
    // a client that sat a round out computed nothing and sent an empty answer
    for k in 1..=11 {
        for r in iter_records(&dir, k) {
            let t = r["t"].as_u64().unwrap() as usize;
            let sat_out = !chosen[t].contains(&(k - 1));
            assert_eq!(r["load"].as_f64() == Some(0.0), sat_out, "worker {k}: {r}");
        }
    }
}
