//! The simulator's arithmetic pass executes the plan's combinations with the simulated
//! survivors: exact schemes reproduce serial gradient descent, ignore-stragglers does not.

use std::sync::LazyLock;

use outrun_config::parse;
use outrun_sim::{simulate, Math, Options};
use outrun_testkit::Cfg;
use outrun_workloads::data::load_all;
use outrun_workloads::metrics::relative_diff;
use outrun_workloads::reference::serial_model;

fn cfg() -> Cfg {
    Cfg::linear("simx", 903, 7, 9)
        .set("run.seed", 9)
        .set("run.iterations", 15)
        .set("run.trajectory", true)
        .set("model.lr", 0.4)
        .set("scheme.kind", "gc-cyclic")
        .set("scheme.s", 2)
        .set("stragglers.model", "bernoulli")
        .set("stragglers.p", 0.3)
        .set("stragglers.factor", 5.0)
        .set("timing.compute", "modelled")
        .set("timing.a", 0.0001)
}

/// The config above, as its TOML text.
static CFG: LazyLock<String> = LazyLock::new(|| cfg().text());

fn final_theta(sets: &[&str]) -> (Vec<f64>, Vec<f64>, serde_json::Value) {
    let out = std::env::temp_dir().join(format!(
        "outrun-simx-{}-{}",
        std::process::id(),
        sets.join("_").replace(['=', '.', '[', ']', ',', ' '], "")
    ));
    let mut all: Vec<String> = sets.iter().map(|s| s.to_string()).collect();
    all.push(format!("run.out_dir={}", out.display()));
    let cfg = parse(&CFG, &all).unwrap();
    let plan = outrun_workloads::resolve(&cfg).unwrap();
    let sim = simulate(&plan, &cfg.to_toml(), &Options { trials: 3, math: Math::On, write: true }).unwrap();
    let dir = sim.run_dir.unwrap();
    let theta: Vec<f64> =
        std::fs::read_to_string(dir.join("theta.txt")).unwrap().lines().map(|l| l.parse().unwrap()).collect();
    let rows = load_all(cfg.data(), cfg.run.seed, cfg.model().labels()).unwrap();
    let want = serial_model(&rows, cfg.model(), cfg.run.seed, 15).pop().unwrap();
    let summary: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(dir.join("summary.json")).unwrap()).unwrap();
    std::fs::remove_dir_all(&out).unwrap();
    (theta, want, summary)
}

/// Exact schemes of the base data set (on top of the base gc-cyclic).
const EXACT: &[&[&str]] = &[
    &[],
    &["scheme.kind=gc-frac", "scheme.s=2"],
    &["scheme.kind=umw", "scheme.s="],
    &["scheme.kind=cr", "scheme.workers=", "scheme.n=3", "scheme.layers=2", "scheme.s=1"],
    &["scheme.kind=cr", "scheme.workers=", "scheme.n=2", "scheme.layers=3", "scheme.s=1", "scheme.code=frac"],
];

/// Collect-pattern schemes with codes beyond those: groups, adaptive rounds, clusters.
const MORE: &[&[&str]] = &[
    &["scheme.kind=cegc", "scheme.s=1", "scheme.m=2", "scheme.code=gaussian"],
    &["scheme.kind=agc", "scheme.s=", "scheme.d=3", "scheme.rounds=9"],
    &["scheme.kind=g-agc", "scheme.s=", "scheme.d=3", "scheme.rounds=3"],
    &["scheme.kind=cgc", "scheme.s=2", "scheme.m=2"],
    &["scheme.kind=g-cgc", "scheme.s=1", "scheme.m=2"],
    &["scheme.kind=gc-sc", "scheme.s=", "scheme.clusters=3", "scheme.r=2"],
    &["scheme.kind=gc-dc", "scheme.s=", "scheme.clusters=3", "scheme.r=2", "scheme.n=3"],
];

#[test]
fn exact_schemes_reproduce_serial_gradient_descent() {
    let ring: &[&str] = &["scheme.kind=rar", "scheme.s="];
    let halving: &[&str] = &["scheme.kind=rar", "scheme.s=", "scheme.algorithm=\"halving-doubling\""];
    let doubling: &[&str] = &["scheme.kind=rar", "scheme.s=", "scheme.algorithm=\"recursive-doubling\""];
    for &sets in EXACT.iter().chain(MORE).chain([ring, halving, doubling].iter()) {
        let (got, want, summary) = final_theta(sets);
        let diff = relative_diff(&got, &want);
        assert!(diff < 1e-9, "{sets:?}: {diff:e}");
        assert_eq!(summary["exact_iterations"], 15, "{sets:?}");
        assert_eq!(summary["compute"], "simulated");
    }
}

/// Uploads by grant: every collect-pattern scheme (stars and trees, single- and multi-round
/// codes, clusters) still reproduces serial gradient descent, and the master never receives a
/// result it does not use.
#[test]
fn granted_uploads_are_exact_for_every_collect_scheme() {
    for &sets in EXACT.iter().chain(MORE) {
        let mut granted = sets.to_vec();
        granted.push("engine.upload=granted");
        let (got, want, summary) = final_theta(&granted);
        let diff = relative_diff(&got, &want);
        assert!(diff < 1e-9, "{sets:?}: {diff:e}");
        assert_eq!(summary["exact_iterations"], 15, "{sets:?}");
        assert_eq!(summary["late_discarded"], 0, "{sets:?}: granted uploads are never late");
    }
}

/// A softmax network on class data: full batch, and mini-batches with Nesterov momentum.
const NETWORK: &[&str] = &[
    "data.kind=softmax-synthetic",
    "data.noise=0.5",
    "model.loss=softmax",
    "model.classes=4",
    "model.hidden=[6]",
    "model.lr=0.3",
];
const MINI_BATCH: &[&str] = &["model.batch=100", "model.momentum=0.9", "model.nesterov=true", "model.decay_at=[8]"];

/// Every exact scheme trains a network exactly, full batch and mini-batch: every worker holding a
/// copy of a part computes on the same rows of each batch, and the reference draws them too.
#[test]
fn networks_and_mini_batches_are_exact_in_every_scheme() {
    let ring: &[&str] = &["scheme.kind=rar", "scheme.s="];
    for &sets in EXACT.iter().chain(MORE).chain([ring].iter()) {
        for batch in [&[][..], MINI_BATCH] {
            let all: Vec<&str> = NETWORK.iter().chain(batch).chain(sets).copied().collect();
            let (got, want, summary) = final_theta(&all);
            assert_eq!(got.len(), 6 * 8 + 4 * 7, "{all:?}: W1, b1, W2, b2");
            let diff = relative_diff(&got, &want);
            assert!(diff < 1e-9, "{all:?}: {diff:e}");
            assert_eq!(summary["exact_iterations"], 15, "{all:?}");
        }
    }
}

#[test]
fn ignore_stragglers_is_inexact_in_simulation_too() {
    let (got, want, summary) = final_theta(&["scheme.kind=ignore"]);
    assert!(relative_diff(&got, &want) > 1e-6);
    assert_eq!(summary["exact_iterations"], 0);
}
