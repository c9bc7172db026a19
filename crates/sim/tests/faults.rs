//! Value faults in the simulator's arithmetic pass: a corrupted result moves uncoded gradient
//! descent off the serial trajectory, and robust decoding (`scheme.byzantine`) excludes it, for
//! every fault kind, so the run equals serial gradient descent again.

mod common;

use std::sync::LazyLock;

use common::simulate_math;
use outrun_testkit::Cfg;
use outrun_workloads::data::load_all;
use outrun_workloads::metrics::relative_diff;
use outrun_workloads::reference::serial_model;

fn cfg() -> Cfg {
    Cfg::linear("simfault", 720, 6, 9)
        .set("run.seed", 4)
        .set("run.iterations", 10)
        .set("data.kind", "logistic-synthetic")
        .set("model.loss", "logistic")
        .set("model.lr", 0.5)
        .set("scheme.kind", "gc-frac")
        .set("scheme.s", 2)
        .set("scheme.byzantine", 1)
        .set("faults.kind", "sign-flip")
        .set("faults.workers", vec![5])
        .set("stragglers.model", "bernoulli")
        .set("stragglers.p", 0.3)
        .set("stragglers.factor", 5.0)
        .set("timing.compute", "modelled")
        .set("timing.a", 0.0001)
}

/// The config above, as its TOML text.
static CFG: LazyLock<String> = LazyLock::new(|| cfg().text());

/// The final θ of a simulated run and of serial gradient descent, and every master record.
fn run(sets: &[&str]) -> (Vec<f64>, Vec<f64>, Vec<serde_json::Value>) {
    let (theta, cfg, _, iters) = simulate_math(&CFG, "simfault", sets);
    let rows = load_all(cfg.data(), cfg.run.seed, cfg.model().labels()).unwrap();
    let want = serial_model(&rows, cfg.model(), cfg.run.seed, cfg.run.iterations).pop().unwrap();
    (theta, want, iters)
}

#[test]
fn robust_decoding_excludes_every_kind_of_fault() {
    let kinds: &[&[&str]] = &[
        &[],
        &["faults.kind=gaussian"],
        &["faults.kind=same-value", "faults.value=-3"],
        &["faults.kind=label-flip"],
        &["scheme.kind=gc-cyclic", "scheme.workers=8", "scheme.s=3"],
        &["scheme.kind=cr", "scheme.workers=", "scheme.n=4", "scheme.layers=2", "scheme.s=2", "faults.workers=[2, 7]"],
        &["scheme.kind=cegc", "scheme.workers=8", "scheme.s=2", "scheme.m=2", "faults.workers=[2, 7]"],
    ];
    for &sets in kinds {
        let (got, want, iters) = run(sets);
        let diff = relative_diff(&got, &want);
        assert!(diff < 1e-9, "{sets:?}: θ differs from serial GD by {diff:e}");
        assert_eq!(iters.len(), 10);
        // a cegc group with a faulty worker rejects it whenever its result was among those used
        if sets.iter().any(|s| s.contains("cegc")) {
            assert!(iters.iter().any(|it| it["rejected"] == serde_json::json!([2, 7])), "{sets:?}: {iters:?}");
            for it in &iters {
                let used = it["used"].as_array().unwrap();
                assert!(!used.contains(&serde_json::json!(2)) && !used.contains(&serde_json::json!(7)), "{it}");
            }
        }
        // a star's master rejects the faulty worker whenever its result arrived
        if !sets.iter().any(|s| s.contains("cr") || s.contains("cegc")) {
            for it in &iters {
                let arrived = it["arrivals"].as_array().unwrap().iter().any(|a| a[0] == 5);
                assert_eq!(it["rejected"] == serde_json::json!([5]), arrived, "{sets:?}: {it}");
            }
        }
    }
}

#[test]
fn without_robust_decoding_a_fault_moves_gradient_descent() {
    let cyclic = ["scheme.kind=gc-cyclic", "scheme.workers=8", "scheme.byzantine="];
    for sets in [&cyclic[..], &["scheme.kind=umw", "scheme.s=", "scheme.byzantine="]] {
        let (got, want, iters) = run(sets);
        let diff = relative_diff(&got, &want);
        assert!(diff > 1e-2, "{sets:?}: the fault changed nothing ({diff:e})");
        assert!(iters.iter().all(|it| it.get("rejected").is_none()));
    }
}
