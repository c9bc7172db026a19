//! Hierarchical coded aggregation (thesis ch. 6) through `mpirun`: ARC, AMC and uncoded
//! forwarding, with every client losing s of its links to the helpers in every iteration, equal
//! serial gradient descent within 1e-9 (least squares, logistic, and a network with Adam); the failure table the
//! master logs is the one the link model drew; the C_HM measured from the uploads equals the
//! chapter's formula for that table, computed here on its own; a client losing more than s links
//! ends the run with one line naming it and its helpers; the simulator runs the same machines.

mod common;

use common::*;
use serde_json::Value;

const CFG: &str = r#"
[run]
name = "hier"
seed = 11
iterations = 15
deadline = 20.0
trajectory = true

[data]
kind = "linear-synthetic"
samples = 1200
features = 13

[model]
loss = "least-squares"
lr = 0.3

[scheme]
kind = "arc"
clients = 8
helpers = 4
s = 1

[links]
model = "fail"
per_client = 1

[timing]
compute = "modelled"
a = 2e-6
"#;

/// The chapter's C_HM of a failure table (1-based helpers per client), from its definitions:
/// ARC — helpers assigned a part by the first-success rule over k; AMC — n_e − M + 1; uncoded —
/// n_e.
fn c_hm_formula(kind: &str, helpers: usize, s: usize, failed: &[Vec<usize>]) -> f64 {
    let n = failed.len();
    match kind {
        "arc" => {
            let k = helpers / (s + 1);
            let mut used = vec![false; helpers + 1];
            for f in failed {
                for r in 1..=k {
                    let h = (0..=s).map(|q| r + q * k).find(|h| !f.contains(h)).expect("within s");
                    used[h] = true;
                }
            }
            used.iter().filter(|&&u| u).count() as f64 / k as f64
        }
        "amc" => {
            let m = failed.iter().map(|f| failed.iter().filter(|g| *g == f).count()).max().unwrap();
            (n - m + 1) as f64
        }
        _ => n as f64,
    }
}

/// Train `sets` and check: exact against serial GD, every iteration's failure table has s
/// failures per client and is the link model's draw, and its measured C_HM is the formula's.
fn check(tag: &str, sets: &[&str]) -> Vec<f64> {
    let (run, dir, _, all) = train(tag, CFG, sets);
    assert_eq!(run.code, Some(0), "{tag}: {}", run.stderr);
    let diff = max_rel_diff(&trajectory(&dir), &reference(CFG, &all));
    assert!(diff <= 1e-9, "{tag}: θ differs from serial GD by {diff:e}");
    assert!(iterations(&dir).iter().all(|r| r["exact"] == "true"));
    assert_eq!(summary(&dir)["late_discarded"], 0);
    eprintln!("{tag}: max relative θ difference to serial GD = {diff:.2e}");
    let cfg = outrun_config::parse(CFG, &all).unwrap();
    let hier = cfg.scheme.hier().unwrap().clone();
    let links = outrun_plan::Links::from_config(&cfg);
    let (helpers, s) = (hier.helpers, hier.s);
    let records = iter_records(&dir, 0);
    assert_eq!(records.len(), 15);
    let mut loads = vec![];
    for r in &records {
        let t = r["t"].as_u64().unwrap();
        let note = &r["hier"];
        let failed: Vec<Vec<usize>> = serde_json::from_value(note["failed"].clone()).unwrap();
        assert_eq!(failed.len(), hier.clients);
        for (c, f) in failed.iter().enumerate() {
            let drawn: Vec<usize> = links.failed_helpers(c + 1, helpers, t).iter().map(|h| h + 1).collect();
            assert_eq!(f, &drawn, "{tag}: iteration {t}, client {}", c + 1);
            assert_eq!(f.len(), s);
        }
        let kind = cfg.scheme.kind();
        let want = c_hm_formula(kind, helpers, s, &failed);
        assert_eq!(note["c_hm"].as_f64().unwrap(), want, "{tag}: iteration {t}, table {failed:?}");
        let k = match kind {
            "arc" => helpers / (s + 1),
            "amc" => helpers - s,
            _ => 1,
        };
        assert_eq!(note["c_eh"].as_f64().unwrap(), helpers as f64 / k as f64);
        assert!(note["control_bytes"].as_u64().unwrap() > 0);
        loads.push(want);
    }
    loads
}

#[test]
fn arc_amc_and_forwarding_equal_serial_gd_and_their_loads_are_the_formulas() {
    let arc = check("hier-arc", &[]);
    let amc = check("hier-amc", &["scheme.kind=amc"]);
    let fwd = check("hier-uncoded", &["scheme.kind=hier-uncoded"]);
    let mean = |v: &[f64]| v.iter().sum::<f64>() / v.len() as f64;
    eprintln!("mean C_HM: arc {:.3}, amc {:.3}, uncoded {:.3}", mean(&arc), mean(&amc), mean(&fwd));
    assert!(mean(&arc) <= 2.0 && mean(&amc) < 8.0 && mean(&fwd) == 8.0);
}

#[test]
fn logistic_regression_and_two_failures_per_client_stay_exact() {
    let logistic = ["data.kind=logistic-synthetic", "model.loss=logistic"];
    for (tag, extra) in [
        ("hier-arc-s2", ["scheme.kind=arc", "scheme.helpers=6", "scheme.s=2", "links.per_client=2"]),
        ("hier-amc-s2", ["scheme.kind=amc", "scheme.helpers=6", "scheme.s=2", "links.per_client=2"]),
    ] {
        let sets: Vec<&str> = logistic.iter().chain(&extra).copied().collect();
        check(tag, &sets);
    }
}

/// The optimizer and the model are the job's, not the pattern's: Adam on a softmax network
/// through the helpers equals the serial reference's Adam, ARC and AMC.
#[test]
fn adam_on_a_network_through_the_helpers_stays_exact() {
    let net = [
        "data.kind=softmax-synthetic",
        "model.loss=softmax",
        "model.classes=3",
        "model.hidden=[8]",
        "model.optimizer=adam",
        "model.lr=0.02",
    ];
    for (tag, kind) in [("hier-arc-adam", "scheme.kind=arc"), ("hier-amc-adam", "scheme.kind=amc")] {
        let sets: Vec<&str> = net.iter().copied().chain([kind]).collect();
        check(tag, &sets);
    }
}

#[test]
fn more_failed_links_than_s_end_the_run_naming_the_client() {
    let (run, _dir, _, _) = train("hier-too-many", CFG, &["scheme.kind=amc", "links.per_client=2"]);
    assert_ne!(run.code, Some(0));
    let lines: Vec<&str> = run.stderr.lines().filter(|l| l.contains("lost its links")).collect();
    assert!(!lines.is_empty(), "stderr:\n{}", run.stderr);
    assert!(
        lines[0].contains("iteration 0: client 1 (rank 5) lost its links to helpers")
            && lines[0].contains("more than scheme.s = 1"),
        "{}",
        lines[0]
    );
    assert!(!run.stderr.contains("panicked"), "{}", run.stderr);
}

#[test]
fn the_simulator_runs_the_same_machines() {
    let (run, dir, cfg_path, sets) = train("hier-sim", CFG, &["scheme.kind=amc"]);
    assert_eq!(run.code, Some(0), "{}", run.stderr);
    let out = dir.join("sim");
    let sim = simulate_as_trained(&cfg_path, &sets, &out);
    assert_eq!(trajectory(&sim), trajectory(&dir), "the same arithmetic in the same order");
    let tables = |d: &std::path::Path| -> Vec<Value> { iter_records(d, 0).iter().map(|r| r["hier"].clone()).collect() };
    let (engine, simulated) = (tables(&dir), tables(&sim));
    for (e, s) in engine.iter().zip(&simulated) {
        for key in ["failed", "c_hm", "sums", "upload_bytes", "control_bytes"] {
            assert_eq!(e[key], s[key], "{key}");
        }
    }
}

#[test]
fn bad_hierarchical_settings_are_one_line_before_mpi() {
    let dir = tempdir("hier-bad");
    let cfg = write_config(&dir, CFG);
    let cases: &[(&[&str], &str)] = &[
        (&["scheme.s=2"], "scheme.s = 2: arc needs s + 1 = 3 to divide scheme.helpers = 4"),
        (&["scheme.s=4", "scheme.kind=amc"], "scheme.s = 4: must be less than scheme.helpers = 4"),
        (&["scheme.helpers="], "scheme.helpers: missing: arc needs the number of helpers n_h"),
        (&["scheme.clients=5000"], "scheme.clients = 5000: must be 1..=4096"),
        (&["links.per_client=5"], "links.per_client = 5: a client has only scheme.helpers = 4 links"),
        (
            &["scheme.kind=umw", "scheme.workers=4", "scheme.clients=", "scheme.helpers=", "scheme.s="],
            "links.per_client: is for hierarchical schemes",
        ),
        (
            &["links.model=delay", "links.per_client=", "links.tau_up=0.01"],
            "links.model = \"delay\" is not modelled for scheme.kind = \"arc\"",
        ),
    ];
    for (sets, want) in cases {
        let mut args = vec!["check".to_string(), cfg.display().to_string()];
        sets.iter().for_each(|s| args.extend(["--set".to_string(), s.to_string()]));
        let run = outrun(&args.iter().map(String::as_str).collect::<Vec<_>>());
        assert_eq!(run.code, Some(2), "{sets:?}: {}", run.stderr);
        assert_eq!(run.stderr.lines().count(), 1, "{sets:?}: {}", run.stderr);
        assert!(run.stderr.contains(want), "{sets:?}: {}", run.stderr);
    }
}
