//! Shared by the simulator's tests: a config run once through the arithmetic pass.
#![allow(dead_code)]

use outrun_config::{parse, Config};
use outrun_plan::Plan;
use outrun_sim::{simulate, Math, Options};

/// A simulated run of `text` with `sets` (one trial, real arithmetic): its final θ, its config and
/// plan, and the master's iteration records. The run directory is removed.
pub(crate) fn simulate_math(
    text: &str,
    prefix: &str,
    sets: &[&str],
) -> (Vec<f64>, Config, Plan, Vec<serde_json::Value>) {
    let tag = sets.join("_").replace(['=', '.', '[', ']', ',', ' ', '"'], "");
    let out = std::env::temp_dir().join(format!("outrun-{prefix}-{}-{tag}", std::process::id()));
    let mut all: Vec<String> = sets.iter().map(|s| s.to_string()).collect();
    all.push(format!("run.out_dir={}", out.display()));
    let cfg = parse(text, &all).unwrap();
    let plan = outrun_workloads::resolve(&cfg).unwrap();
    let sim = simulate(&plan, &cfg.to_toml(), &Options { trials: 1, math: Math::On, write: true }).unwrap();
    let dir = sim.run_dir.unwrap();
    let theta = std::fs::read_to_string(dir.join("theta.txt")).unwrap().lines().map(|l| l.parse().unwrap()).collect();
    let master = std::fs::read_to_string(dir.join("rank-0.jsonl")).unwrap();
    let iters = master
        .lines()
        .map(|l| serde_json::from_str::<serde_json::Value>(l).unwrap())
        .filter(|v| v["ev"] == "iter")
        .collect();
    std::fs::remove_dir_all(&out).unwrap();
    (theta, cfg, plan, iters)
}
