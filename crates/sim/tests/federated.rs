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

/// A rule that accepts no upload leaves θ where it was, and a round without clients has no loss:
/// its `iterations.csv` row leaves the loss blank (not 0) and lists every client as left out.
#[test]
fn a_round_whose_rule_accepts_no_upload_keeps_theta_and_has_no_loss() {
    let strict = ["scheme.kind=diversefl", "scheme.sample=0.2", "scheme.eps2=100", "scheme.eps3=200"];
    let run = |iterations: &str| {
        let out = std::env::temp_dir().join(format!("outrun-simfl-none-{}-{iterations}", std::process::id()));
        let mut sets: Vec<String> = strict.iter().map(|s| s.to_string()).collect();
        sets.push(format!("run.iterations={iterations}"));
        sets.push(format!("run.out_dir={}", out.display()));
        let cfg = outrun_config::parse(&CFG, &sets).unwrap();
        let plan = outrun_workloads::resolve(&cfg).unwrap();
        let opts = outrun_sim::Options { trials: 1, math: outrun_sim::Math::On, write: true };
        let dir = outrun_sim::simulate(&plan, &cfg.to_toml(), &opts).unwrap().run_dir.unwrap();
        let read = |f: &str| std::fs::read_to_string(dir.join(f)).unwrap();
        let (theta, csv, summary) = (read("theta.txt"), read("iterations.csv"), read("summary.json"));
        std::fs::remove_dir_all(&out).unwrap();
        (theta, csv, serde_json::from_str::<serde_json::Value>(&summary).unwrap())
    };
    let (one, _, _) = run("1");
    let (eight, csv, summary) = run("8");
    assert_eq!(one, eight, "θ moved although no upload was accepted");
    let mut rows = csv.lines();
    let head: Vec<&str> = rows.next().unwrap().split(',').collect();
    let col = |name: &str| head.iter().position(|h| *h == name).unwrap();
    let all: Vec<String> = (1..=11).map(|w| w.to_string()).collect();
    for row in rows {
        let f: Vec<&str> = row.split(',').collect();
        assert_eq!((f[col("loss")], f[col("used")]), ("", "0"), "{row}");
        assert_eq!(f[col("rejected")], all.join(" "), "{row}");
    }
    assert!(summary["final_loss"].is_null(), "{summary}");
    assert_eq!(summary["rejected_results"], 88);
    assert_eq!(summary["empty_iterations"], 8);
}
