//! `outrun trace` on an engine run and a simulated run: the trace is well formed (every rank a
//! process, slices nested or apart on every track, every flow bound at both ends) and says what
//! the run's own logs say (results, late results, decodes, models), read here independently.

mod common;

use std::sync::LazyLock;

use outrun_testkit::Cfg;
use std::collections::{BTreeMap, BTreeSet, HashMap};
use std::path::{Path, PathBuf};

use common::*;
use serde_json::Value;

fn cfg() -> Cfg {
    Cfg::linear("tr", 600, 10, 4)
        .set("run.seed", 4)
        .set("run.iterations", 10)
        .set("model.lr", 0.5)
        .set("scheme.kind", "gc-cyclic")
        .set("scheme.s", 1)
        .set("stragglers.model", "fixed")
        .set("stragglers.workers", vec![2])
        .set("stragglers.factor", 4.0)
        .set("timing.compute", "modelled")
        .set("timing.a", 0.0001)
}

/// The config above, as its TOML text.
static CFG: LazyLock<String> = LazyLock::new(|| cfg().text());

/// What the rank logs say, counted from their JSON lines (not outrun's types).
#[derive(Debug, Default, PartialEq)]
struct Logged {
    ranks: BTreeSet<u64>,
    results: usize,
    late: usize,
    decodes: usize,
    models: usize,
    /// A straggler's results held past its base compute time (a newer model may have arrived
    /// first: then it was dropped before any extra delay began).
    held: usize,
}

fn logged(dir: &Path, window: (u64, u64)) -> Logged {
    let mut l = Logged::default();
    for entry in std::fs::read_dir(dir).unwrap().flatten() {
        let name = entry.file_name().to_string_lossy().into_owned();
        let Some(rank) = name.strip_prefix("rank-").and_then(|n| n.strip_suffix(".jsonl")) else { continue };
        l.ranks.insert(rank.parse().unwrap());
        let mut has_parent = false;
        for line in std::fs::read_to_string(entry.path()).unwrap().lines() {
            let v: Value = serde_json::from_str(line).unwrap();
            let inside = v["t"].as_u64().is_some_and(|t| (window.0..=window.1).contains(&t));
            match v["ev"].as_str() {
                Some("setup") => has_parent = v["parent"].is_u64(),
                Some("late") if inside => l.late += 1,
                Some("iter") if inside => {
                    if let Some(a) = v["arrivals"].as_array() {
                        l.results += a.len();
                        l.decodes += usize::from(v["status"] != "abandoned");
                    }
                    l.models += usize::from(has_parent && v["model"].is_number() && v["status"] != "dead");
                    l.held += usize::from(v["straggler"] == true && held_past_base(&v));
                }
                _ => {}
            }
        }
    }
    l
}

/// Whether a worker's iteration record has its result ready (or dropped) after its base compute
/// time: the start plus its target without the injected part, or its measured work if longer.
fn held_past_base(v: &Value) -> bool {
    let f = |k: &str| v[k].as_f64();
    let (Some(cs), Some(ce), Some(target)) = (f("compute_start"), f("compute_end"), f("target")) else { return false };
    let base_end = cs + (target - f("injected").unwrap_or(0.0)).max(ce - cs);
    f("ready").or(f("send")).is_some_and(|ready| ready > base_end)
}

/// The trace's events.
fn trace(dir: &Path, extra: &[&str]) -> Vec<Value> {
    let mut args = vec!["trace", dir.to_str().unwrap()];
    args.extend(extra);
    let r = outrun(&args);
    assert_eq!(r.code, Some(0), "{}", r.stderr);
    assert!(r.stdout.contains("trace.json ("), "{}", r.stdout);
    let doc: Value = serde_json::from_str(&std::fs::read_to_string(dir.join("trace.json")).unwrap()).unwrap();
    doc["traceEvents"].as_array().unwrap().clone()
}

/// Every check of the trace against the log; returns the trace's slices by name.
fn check(dir: &Path, extra: &[&str], window: (u64, u64)) -> BTreeMap<String, usize> {
    let ev = trace(dir, extra);
    let log = logged(dir, window);
    let processes: BTreeSet<u64> = ev
        .iter()
        .filter(|e| e["ph"] == "M" && e["name"] == "process_name")
        .map(|e| e["pid"].as_u64().unwrap())
        .collect();
    assert_eq!(processes, log.ranks, "every rank a process");
    // slices per track: in order of start (longest first on a tie), each inside the open one or
    // after it
    let mut tracks: HashMap<(u64, u64), Vec<(f64, f64)>> = HashMap::new();
    let mut names: BTreeMap<String, usize> = BTreeMap::new();
    for e in ev.iter().filter(|e| e["ph"] == "X") {
        let (ts, dur) = (e["ts"].as_f64().unwrap(), e["dur"].as_f64().unwrap());
        assert!(dur >= 0.0, "{e}");
        tracks.entry((e["pid"].as_u64().unwrap(), e["tid"].as_u64().unwrap())).or_default().push((ts, ts + dur));
        *names.entry(e["name"].as_str().unwrap().to_string()).or_default() += 1;
        if let Some(t) = e["args"]["iteration"].as_u64() {
            assert!((window.0..=window.1).contains(&t), "{e}");
        }
    }
    const EPS: f64 = 1e-6;
    for (track, mut s) in tracks {
        s.sort_by(|a, b| a.0.total_cmp(&b.0).then(b.1.total_cmp(&a.1)));
        let mut open: Vec<f64> = Vec::new();
        for (a, b) in s {
            while open.last().is_some_and(|&end| end <= a + EPS) {
                open.pop();
            }
            if let Some(&end) = open.last() {
                assert!(b <= end + EPS, "track {track:?}: [{a}, {b}] overlaps a slice ending at {end}");
            }
            open.push(b);
        }
    }
    // every flow: one start and one end, each on a slice of its track, category and time
    let slices: BTreeSet<(u64, u64, String, u64)> = ev
        .iter()
        .filter(|e| e["ph"] == "X")
        .map(|e| {
            let at = e["ts"].as_f64().unwrap().to_bits();
            (e["pid"].as_u64().unwrap(), e["tid"].as_u64().unwrap(), e["cat"].as_str().unwrap().to_string(), at)
        })
        .collect();
    let mut flows: BTreeMap<u64, Vec<String>> = BTreeMap::new();
    for e in ev.iter().filter(|e| e["ph"] == "s" || e["ph"] == "f") {
        let at = e["ts"].as_f64().unwrap().to_bits();
        let key = (e["pid"].as_u64().unwrap(), e["tid"].as_u64().unwrap(), e["cat"].as_str().unwrap().to_string(), at);
        assert!(slices.contains(&key), "a flow end without its slice: {e}");
        flows.entry(e["id"].as_u64().unwrap()).or_default().push(e["ph"].as_str().unwrap().to_string());
    }
    assert!(!flows.is_empty());
    for (id, ends) in &flows {
        assert_eq!(ends, &["s", "f"], "flow {id}");
    }
    let count = |pred: &dyn Fn(&str) -> bool| names.iter().filter(|(n, _)| pred(n)).map(|(_, c)| c).sum::<usize>();
    assert_eq!(count(&|n| n.starts_with("result in")), log.results, "results: {names:?}");
    assert_eq!(count(&|n| n.starts_with("late ") && n.ends_with(" in")), log.late, "late: {names:?}");
    assert_eq!(count(&|n| n == "decode"), log.decodes, "decodes: {names:?}");
    assert_eq!(count(&|n| n == "model in"), log.models, "models: {names:?}");
    assert_eq!(count(&|n| n == "extra delay (straggler)"), log.held, "straggler delays: {names:?}");
    assert!(log.decodes > 0 && log.results > 0 && log.models > 0, "{log:?}");
    names
}

#[test]
fn an_engine_run_traces_with_its_stragglers_late_results_and_decodes() {
    let dir = tempdir("trace-engine");
    let (code, err, run) = run_config(&dir, &CFG, &[], "gc", std::time::Duration::from_secs(120));
    assert_eq!(code, Some(0), "{err}");
    let run = run.unwrap();
    let names = check(&run, &[], (0, u64::MAX));
    // worker 2 at 5× its time: held past its base time in most iterations, unless the others'
    // results made it drop its own first (check() counts them against the logs)
    assert!(names.get("extra delay (straggler)").is_some_and(|&n| n >= 1), "{names:?}");
    assert!(logged(&run, (0, u64::MAX)).late > 0, "a coded run with a slow worker discards late results");
    // a window: only its iterations, all the same checks
    let names = check(&run, &["--iterations", "2..4"], (2, 4));
    assert_eq!(names["decode"], 3, "{names:?}");
    let bad = outrun(&["trace", run.to_str().unwrap(), "--iterations", "4..2"]);
    assert_eq!(bad.code, Some(2));
}

#[test]
fn a_simulated_tree_traces_like_an_engine_run() {
    let dir = tempdir("trace-sim");
    let out = dir.join("runs");
    let cfg: PathBuf = [env!("CARGO_MANIFEST_DIR"), "..", "..", "configs", "cr-3x2.toml"].iter().collect();
    let set = format!("run.out_dir={}", out.display());
    let r = outrun(&["simulate", cfg.to_str().unwrap(), "--trials", "1", "--set", &set, "--set", "run.iterations=6"]);
    assert_eq!(r.code, Some(0), "{}", r.stderr);
    let runs = run_dir(&out);
    // a directory holding runs (a sweep's): a trace in each
    let r = outrun(&["trace", out.to_str().unwrap()]);
    assert_eq!(r.code, Some(0), "{}", r.stderr);
    assert!(runs.join("trace.json").is_file(), "{}", r.stdout);
    let names = check(&runs, &[], (0, u64::MAX));
    // a CodedReduce parent forwards the model and decodes its children's results
    assert!(names["decode"] > 6, "{names:?}");
    // a window past the run's iterations is named, not written as an empty trace
    std::fs::remove_file(runs.join("trace.json")).unwrap();
    let past = outrun(&["trace", runs.to_str().unwrap(), "--iterations", "10..20"]);
    assert_eq!(past.code, Some(2), "{}", past.stdout);
    assert!(
        past.stderr.trim_end().ends_with(": --iterations 10..20: the run logged iterations 0..5"),
        "{}",
        past.stderr
    );
    assert!(!runs.join("trace.json").exists());
}
