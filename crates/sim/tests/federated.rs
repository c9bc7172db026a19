//! Federated learning in the simulator's arithmetic pass: the oracle, with several local steps
//! on local mini-batches of a ReLU network (BLAS) under label-flipping clients, equals the job's
//! serial reference (FedAvg over the honest clients by plain per-sample loops on the same
//! batches); a round that uses the first K uploads leaves the slow clients out.

mod common;

use std::sync::LazyLock;

use common::simulate_math;
use outrun_testkit::Cfg;
use outrun_workloads::metrics::relative_diff;

fn cfg() -> Cfg {
    Cfg::linear("simfl", 660, 5, 11)
        .set("run.seed", 9)
        .set("run.iterations", 8)
        .set("job.kind", "fl")
        .set("job.local_steps", 3)
        .set("job.local_batch", 0.5)
        .set("data.kind", "softmax-synthetic")
        .set("model.loss", "softmax")
        .set("model.classes", 3)
        .set("model.hidden", vec![6])
        .set("model.lr", 0.2)
        .set("model.l2", 0.001)
        .set("scheme.kind", "oracle")
        .set("faults.kind", "label-flip")
        .set("faults.workers", vec![4, 9])
        .set("timing.compute", "modelled")
        .set("timing.a", 0.0001)
}

/// The config above, as its TOML text.
static CFG: LazyLock<String> = LazyLock::new(|| cfg().text());

/// The final θ of a simulated run, the job's reference, and the master's iteration records.
fn run(sets: &[&str]) -> (Vec<f64>, Vec<f64>, Vec<serde_json::Value>) {
    let (theta, _, plan, iters) = simulate_math(&CFG, "simfl", sets);
    let want = outrun_workloads::job(&plan).reference(&plan).unwrap();
    (theta, want, iters)
}

#[test]
fn the_oracle_with_local_mini_batches_equals_fedavg_over_the_honest_clients() {
    let (got, want, iters) = run(&[]);
    let diff = relative_diff(&got, &want);
    assert!(diff < 1e-9, "θ differs from the serial FedAvg by {diff:e}");
    assert_eq!(iters.len(), 8);
    // the flipped clients' uploads arrive and are not used
    for it in &iters {
        let used = it["used"].as_array().unwrap();
        assert_eq!(used.len(), 9, "{it}");
        assert!(!used.contains(&serde_json::json!(4)) && !used.contains(&serde_json::json!(9)), "{it}");
    }
    // FedAvg uses them, and moves elsewhere
    let (fedavg, _, _) = run(&["scheme.kind=fedavg"]);
    assert!(relative_diff(&fedavg, &want) > 1e-3);
}

#[test]
fn a_round_of_the_first_k_uploads_leaves_the_slow_clients_out() {
    let slow = [
        "scheme.kind=fedavg",
        "scheme.wait=9",
        "stragglers.model=fixed",
        "stragglers.workers=[2, 6]",
        "stragglers.factor=10",
    ];
    let (got, _, iters) = run(&slow);
    assert!(got.iter().all(|v| v.is_finite()));
    for it in &iters {
        let used = it["used"].as_array().unwrap();
        assert_eq!(used.len(), 9, "{it}");
        assert!(!used.contains(&serde_json::json!(2)) && !used.contains(&serde_json::json!(6)), "{it}");
    }
}

#[test]
fn the_server_computes_its_guiding_updates_at_its_base_time_without_injection() {
    // the clients' law (a = 2e-4 s per unit, exponential tails); the server: timing.a = 1e-4
    let sets = [
        "scheme.kind=diversefl",
        "scheme.sample=0.1",
        "stragglers.model=shifted-exp",
        "stragglers.a=2e-4",
        "stragglers.mu=1e4",
    ];
    let (_, _, iters) = run(&sets);
    for it in &iters {
        let (target, load) = (it["target"].as_f64().unwrap(), it["load"].as_f64().unwrap());
        assert_eq!(it["injected"], 0.0, "{it}");
        assert!((target - 1e-4 * load).abs() < 1e-15, "{it}");
    }
    // a faster server: timing.master_a
    let mut faster = sets.to_vec();
    faster.push("timing.master_a=2e-5");
    let (_, _, iters) = run(&faster);
    assert!(iters
        .iter()
        .all(|it| (it["target"].as_f64().unwrap() - 2e-5 * it["load"].as_f64().unwrap()).abs() < 1e-15));
}

#[test]
fn a_deadline_round_uses_the_uploads_that_arrived_in_time() {
    // clients take ~0.1 s, clients 2 and 6 eleven times as long; the server stops at 0.5 s
    let sets = [
        "scheme.kind=fedavg",
        "scheme.wait_s=0.5",
        "stragglers.model=fixed",
        "stragglers.workers=[2, 6]",
        "stragglers.factor=10",
    ];
    let (got, _, iters) = run(&sets);
    assert!(got.iter().all(|v| v.is_finite()));
    let mut last = 0.0;
    for it in &iters {
        let used = it["used"].as_array().unwrap();
        assert_eq!(used.len(), 9, "{it}");
        assert!(!used.contains(&serde_json::json!(2)) && !used.contains(&serde_json::json!(6)), "{it}");
        let end = it["end"].as_f64().unwrap();
        assert!((end - last - 0.5).abs() < 1e-9, "the round ends at its deadline: {it}");
        last = end;
    }
}
