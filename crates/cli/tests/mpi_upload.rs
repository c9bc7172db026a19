//! Uploads by grant (`engine.upload = "granted"`) through `mpirun`: exact against serial gradient
//! descent under injected stragglers for stars, trees and multi-round codes, and only the
//! granted results reach the master: per iteration its received result bytes are exactly
//! grants × the result frame, nothing is late, and the eager run of the same config receives
//! more.

mod common;

use std::sync::LazyLock;

use outrun_testkit::Cfg;
use std::path::Path;

use common::*;
use serde_json::Value;

fn base() -> Cfg {
    Cfg::linear("up", 1008, 11, 9)
        .set("run.seed", 5)
        .set("run.iterations", 15)
        .set("run.deadline", 20.0)
        .set("run.trajectory", true)
        .set("model.lr", 0.3)
        .set("scheme.kind", "gc-cyclic")
        .set("scheme.s", 2)
        .set("stragglers.model", "bernoulli")
        .set("stragglers.p", 0.3)
        .set("stragglers.factor", 6.0)
        .set("stragglers.mode", "per-iteration")
        .set("timing.compute", "modelled")
        .set("timing.a", 2e-05)
}

/// The config above, as its TOML text.
static BASE: LazyLock<String> = LazyLock::new(|| base().text());

/// Bytes of one result frame: the 32-byte header and `values` doubles.
fn result_frame(values: usize) -> u64 {
    32 + 8 * values as u64
}

fn records(dir: &Path, rank: usize) -> Vec<Value> {
    let text = std::fs::read_to_string(dir.join(format!("rank-{rank}.jsonl"))).unwrap();
    text.lines().map(|l| serde_json::from_str(l).unwrap()).collect()
}

/// Train with `sets` and check θ against serial GD; returns the master's iteration records,
/// its shutdown record and the summary.
fn exact_run(tag: &str, sets: &[&str]) -> (Vec<Value>, Value, Value) {
    let (run, dir, _, all) = train(tag, &BASE, sets);
    assert_eq!(run.code, Some(0), "{tag}: stderr:\n{}", run.stderr);
    let diff = max_rel_diff(&trajectory(&dir), &reference(&BASE, &all));
    assert!(diff <= 1e-9, "{tag}: θ differs from serial GD by {diff:e}");
    let s = summary(&dir);
    assert_eq!(s["exact_iterations"], 15, "{tag}");
    let recs = records(&dir, 0);
    let iters: Vec<Value> = recs.iter().filter(|e| e["ev"] == "iter").cloned().collect();
    let down = recs.iter().find(|e| e["ev"] == "shutdown").cloned().expect("a shutdown record");
    assert_eq!(iters.len(), 15, "{tag}");
    (iters, down, s)
}

#[test]
fn granted_gc_receives_exactly_the_results_it_uses_and_eager_receives_more() {
    let frame = result_frame(12); // p = 11 values and the loss
    let (iters, down, s) = exact_run("gc-granted", &["engine.upload=granted"]);
    for r in &iters {
        let grants = r["grants"].as_u64().unwrap();
        assert_eq!(grants, 7, "n − s = 7 grants, no more: {r}");
        assert_eq!(r["result_bytes"].as_u64().unwrap(), grants * frame, "{r}");
        assert_eq!(r["recv_bytes"].as_u64().unwrap(), grants * frame + r["notices"].as_u64().unwrap() * 32, "{r}");
        assert_eq!(r["refusals"].as_u64().unwrap(), 9 - grants, "every other worker refused once: {r}");
    }
    assert_eq!(s["late_discarded"], 0);
    assert_eq!(down["late_result_bytes"], 0);
    assert!(
        down["children_bytes"].as_u64().unwrap() <= down["recv_bytes"].as_u64().unwrap(),
        "the protocol's count within the transport's: {down}"
    );

    let (eager, edown, es) = exact_run("gc-eager", &[]);
    let granted_bytes: u64 = iters.iter().map(|r| r["result_bytes"].as_u64().unwrap()).sum();
    let eager_bytes: u64 = eager.iter().map(|r| r["result_bytes"].as_u64().unwrap()).sum::<u64>()
        + edown["late_result_bytes"].as_u64().unwrap();
    assert!(es["late_discarded"].as_u64().unwrap() > 0, "eager stragglers' results arrive late");
    assert!(eager_bytes > granted_bytes, "eager {eager_bytes} B of results, granted {granted_bytes} B");
    eprintln!("result bytes at the master over 15 iterations: eager {eager_bytes}, granted {granted_bytes}");
}

#[test]
fn granted_trees_and_adaptive_rounds_are_exact() {
    let (iters, _, s) = exact_run(
        "cr-granted",
        &["engine.upload=granted", "scheme.kind=cr", "scheme.workers=", "scheme.n=3", "scheme.layers=2", "scheme.s=1"],
    );
    assert!(iters.iter().all(|r| r["grants"].as_u64() == Some(2)), "the master grants n − s = 2 of its 3 parents");
    assert_eq!(s["late_discarded"], 0);
    let (iters, _, s) = exact_run(
        "agc-granted",
        &["engine.upload=granted", "scheme.kind=agc", "scheme.s=", "scheme.d=3", "scheme.rounds=9"],
    );
    assert!(iters.iter().any(|r| r["grants"].as_u64().unwrap() > 9), "some workers were granted more than one round");
    assert_eq!(s["late_discarded"], 0);
}
