//! The emulated cluster (`launch/emu-cluster`): bring up 4 hosts (network namespaces) with
//! shaped links, run a gradient-coding job across them, check it is exact and that a bulk
//! transfer between two hosts runs at the shaped rate within 15 %, and tear everything down.
//!
//! Needs root (network namespaces, tc). Set OUTRUN_SKIP_NETNS=1 to skip it explicitly on a
//! machine where that is impossible; without it, a non-root run fails rather than pass silently.

mod common;

use std::path::PathBuf;
use std::process::Command;
use std::time::Duration;

use common::*;

const CLUSTER: &str = "ortest";

fn script() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../../launch/emu-cluster")
}

fn emu(args: &[&str], timeout: Duration) -> Run {
    let mut cmd = Command::new(script());
    cmd.args(args).env("OUTRUN_EMU_CLUSTER", CLUSTER).env("OUTRUN_BIN", bin());
    run_with_timeout(cmd, timeout)
}

fn namespaces() -> Vec<String> {
    let out = Command::new("ip").args(["netns", "list"]).output().expect("ip netns list");
    String::from_utf8_lossy(&out.stdout).lines().filter_map(|l| l.split_whitespace().next()).filter(|n| n.starts_with(&format!("{CLUSTER}-"))).map(String::from).collect()
}

/// Tears the test cluster down when dropped, also when an assertion fails.
struct Down;
impl Drop for Down {
    fn drop(&mut self) {
        let _ = emu(&["down"], Duration::from_secs(60));
    }
}

#[test]
fn emulated_cluster_runs_exact_gc_at_the_shaped_rate() {
    if std::env::var_os("OUTRUN_SKIP_NETNS").is_some() {
        eprintln!("SKIPPED by OUTRUN_SKIP_NETNS: emulated cluster test");
        return;
    }
    let uid = Command::new("id").arg("-u").output().expect("id -u");
    assert_eq!(String::from_utf8_lossy(&uid.stdout).trim(), "0", "the emulated-cluster test needs root (or set OUTRUN_SKIP_NETNS=1 to skip it)");
    let _lock = mpi_lock();
    let _ = emu(&["down"], Duration::from_secs(60)); // leftovers of an interrupted run
    let up = emu(&["up", "--hosts", "4", "--bandwidth", "50mbit"], Duration::from_secs(60));
    let _down = Down;
    assert_eq!(up.code, Some(0), "up failed: {}", up.stderr);
    assert_eq!(namespaces().len(), 5, "4 hosts + the bridge namespace");
    // a second `up` must refuse to clobber the cluster
    let again = emu(&["up", "--hosts", "2", "--bandwidth", "10mbit"], Duration::from_secs(30));
    assert_eq!(again.code, Some(2));
    assert!(again.stderr.contains("already exists"), "{}", again.stderr);

    // GC with 3 workers (one per host), s = 1, a slow worker, across the shaped links
    let text = r#"
[run]
name = "emu"
seed = 4
iterations = 15
deadline = 30.0
trajectory = true
[data]
kind = "linear-synthetic"
samples = 301
features = 40
[model]
loss = "least-squares"
lr = 0.3
[scheme]
kind = "gc-cyclic"
workers = 3
s = 1
[stragglers]
model = "fixed"
workers = [2]
factor = 4.0
[timing]
compute = "modelled"
a = 1e-4
"#;
    let dir = tempdir("emu");
    let cfg = write_config(&dir, text);
    let out = dir.join("runs");
    let set = format!("run.out_dir={}", out.display());
    let run = emu(&["run", cfg.to_str().unwrap(), "--set", &set], Duration::from_secs(120));
    assert_eq!(run.code, Some(0), "run failed: {}", run.stderr);
    let rd = run_dir(&out);
    let diff = max_rel_diff(&trajectory(&rd), &reference(text, &[set]));
    assert!(diff <= 1e-9, "θ differs from serial GD by {diff:e}");
    // every rank ran on its own emulated host
    for r in 0..4 {
        let first = std::fs::read_to_string(rd.join(format!("rank-{r}.jsonl"))).unwrap().lines().next().unwrap().to_string();
        let ev: serde_json::Value = serde_json::from_str(&first).unwrap();
        assert_eq!(ev["host"], format!("h{r}"), "rank {r}");
    }

    // bulk transfer h1 → h2: 50 Mbit/s = 6.25 MB/s, within 15 %
    let link = emu(&["link", "h1", "h2", "10"], Duration::from_secs(60));
    assert_eq!(link.code, Some(0), "{}", link.stderr);
    let mbs: f64 = link.stdout.split(": ").nth(1).and_then(|v| v.split(' ').next()).and_then(|v| v.parse().ok()).expect(&link.stdout);
    eprintln!("emulated link: {}", link.stdout.trim());
    assert!((mbs - 6.25).abs() / 6.25 <= 0.15, "shaped 50 Mbit/s link measured {mbs} MB/s");

    drop(_down);
    assert!(namespaces().is_empty(), "down left namespaces behind: {:?}", namespaces());
}
