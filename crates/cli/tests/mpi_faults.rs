//! Value faults through `mpirun`: a worker that sends its result negated moves uncoded
//! gradient descent off the serial trajectory (the fault is real, and the worker logs it every
//! iteration); gradient coding with `scheme.byzantine = 1` locates the corrupted result, names
//! the worker it rejected in the master's log every iteration, and equals serial gradient
//! descent within 1e-9 — under sign-flip and Gaussian faults, with a straggler besides; with more
//! corrupted results than it can locate, the run ends with one line instead of a wrong gradient.

mod common;

use common::*;

const CFG: &str = r#"
[run]
name = "faults"
seed = 17
iterations = 12
deadline = 20.0
trajectory = true

[data]
kind = "linear-synthetic"
samples = 1200
features = 12

[model]
loss = "least-squares"
lr = 0.3

[scheme]
kind = "gc-frac"
workers = 9
s = 2
byzantine = 1

[faults]
kind = "sign-flip"
workers = [4]

[timing]
compute = "modelled"
a = 2e-6
"#;

#[test]
fn an_uncoded_run_under_a_sign_flipping_worker_drifts_from_serial_gd() {
    let (run, dir, _, sets) = train("faults-umw", CFG, &["scheme.kind=umw", "scheme.s=", "scheme.byzantine="]);
    assert_eq!(run.code, Some(0), "{}", run.stderr);
    let diff = max_rel_diff(&trajectory(&dir), &reference(CFG, &sets));
    assert!(diff > 0.05, "the fault changed θ by only {diff:e}");
    let worker = iter_records(&dir, 4);
    assert_eq!(worker.len(), 12);
    assert!(worker.iter().all(|r| r["fault"] == "sign-flip"), "{worker:?}");
    assert!(iter_records(&dir, 3).iter().all(|r| r.get("fault").is_none()));
}

#[test]
fn gradient_codes_with_byzantine_1_exclude_the_corrupted_result_and_stay_exact() {
    let cases: &[(&str, &[&str])] = &[
        ("frac-sign", &[]),
        ("frac-gauss", &["faults.kind=gaussian"]),
        (
            "cyclic-gauss-straggler",
            &[
                "scheme.kind=gc-cyclic",
                "scheme.workers=8",
                "scheme.s=3",
                "faults.kind=gaussian",
                "stragglers.model=fixed",
                "stragglers.workers=[7]",
                "stragglers.factor=20",
            ],
        ),
    ];
    for (tag, sets) in cases {
        let s = assert_exact(&format!("faults-{tag}"), CFG, sets);
        assert_eq!(s["iterations"], 12);
        let (_, dir, _, _) = train(&format!("faults-{tag}-log"), CFG, sets);
        let master = iter_records(&dir, 0);
        assert_eq!(master.len(), 12);
        for r in &master {
            assert_eq!(r["rejected"], serde_json::json!([4]), "{tag}: {r}");
            let (before, after) = (r["syndrome"][0].as_f64().unwrap(), r["syndrome"][1].as_f64().unwrap());
            assert!(before > 1e-3 && after < 1e-9, "{tag}: syndromes {before:e} → {after:e}");
            assert!(!r["used"].as_array().unwrap().contains(&serde_json::json!(4)));
        }
    }
}

#[test]
fn more_corrupted_results_than_byzantine_end_the_run_with_one_line() {
    let (run, _dir, _, _) = train("faults-too-many", CFG, &["faults.workers=[4, 7]"]);
    assert_ne!(run.code, Some(0));
    let lines: Vec<&str> = run.stderr.lines().filter(|l| l.contains("corrupted")).collect();
    assert_eq!(lines.len(), 1, "{}", run.stderr);
    assert!(lines[0].contains("more than scheme.byzantine = 1 results are corrupted"), "{}", lines[0]);
    assert!(lines[0].contains("iteration 0"), "{}", lines[0]);
}

/// A recorded trace of compute times (`[stragglers] model = "trace"`) replayed through mpirun
/// and through the simulator: every worker's compute time is the trace's value in both (the
/// engine holds its result until then, to the timer's resolution), and the straggler sets —
/// values above twice the iteration's median — are the same.
#[test]
fn a_trace_replays_the_same_compute_times_in_the_engine_and_the_simulator() {
    let dir = tempdir("faults-trace");
    let trace = dir.join("delays.csv");
    let mut text = String::from("worker,iteration,seconds\n");
    let value = |w: usize, t: usize| {
        0.004 + 0.0001 * ((w * 7 + t * 3) % 11) as f64 * if (w + t).is_multiple_of(5) { 4.0 } else { 1.0 }
    };
    for t in 0..12 {
        for w in 1..=8 {
            text += &format!("{w},{t},{}\n", value(w, t));
        }
    }
    std::fs::write(&trace, text).unwrap();
    let sets = [
        "scheme.kind=gc-cyclic",
        "scheme.workers=8",
        "scheme.byzantine=",
        "faults.kind=none",
        "stragglers.model=trace",
        "stragglers.times=compute",
    ];
    let mut all: Vec<String> = sets.iter().map(|s| s.to_string()).collect();
    all.push(format!("stragglers.file={}", trace.display()));
    let all_ref: Vec<&str> = all.iter().map(String::as_str).collect();
    let (run, real, cfg_path, used) = train("faults-trace-engine", CFG, &all_ref);
    assert_eq!(run.code, Some(0), "{}", run.stderr);
    let out = dir.join("sim");
    let mut args = vec!["simulate".to_string(), cfg_path.display().to_string(), "--trials".into(), "1".into()];
    for s in used.iter().filter(|s| !s.starts_with("run.out_dir=")) {
        args.extend(["--set".to_string(), s.clone()]);
    }
    args.extend(["--set".to_string(), format!("run.out_dir={}", out.display())]);
    let sim = outrun(&args.iter().map(String::as_str).collect::<Vec<_>>());
    assert_eq!(sim.code, Some(0), "{}", sim.stderr);
    let simulated = run_dir(&out);
    let mut late = vec![];
    for rank in 1..=8 {
        let (e, s) = (iter_records(&real, rank), iter_records(&simulated, rank));
        for (a, b) in e.iter().zip(&s) {
            let t = a["t"].as_u64().unwrap() as usize;
            let want = value(rank, t);
            assert!((a["target"].as_f64().unwrap() - want).abs() < 1e-12, "engine {a}");
            assert!((b["target"].as_f64().unwrap() - want).abs() < 1e-12, "simulator {b}");
            assert_eq!(a["straggler"], b["straggler"], "worker {rank} at {t}");
            let mut row: Vec<f64> = (1..=8).map(|w| value(w, t)).collect();
            row.sort_by(f64::total_cmp);
            assert_eq!(a["straggler"].as_bool(), Some(want > 2.0 * row[4]), "worker {rank} at {t}");
            // a result abandoned for a newer model records when it was given up instead
            if let (Some(ready), "sent") = (a["ready"].as_f64(), a["status"].as_str().unwrap_or("")) {
                let held = ready - a["compute_start"].as_f64().unwrap();
                assert!(held >= want - 1e-6, "worker {rank} at {t} was ready after {held} s < {want} s");
                late.push(held - want);
            }
        }
    }
    late.sort_by(f64::total_cmp);
    let median = late[late.len() / 2];
    eprintln!("trace: engine results ready a median {:.3} ms after the traced time", median * 1e3);
    assert!(median < 0.002, "median lateness {median} s");
}
