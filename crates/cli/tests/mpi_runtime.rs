//! End-to-end tests of the master–worker and ring schemes through `mpirun`.
//!
//! Exactness: for every scheme but `ignore`, 20 iterations under injected stragglers give the
//! θ trajectory of plain serial gradient descent on the same data (relative 1e-9).

mod common;

use std::sync::LazyLock;

use outrun_testkit::Cfg;
use std::time::Duration;

use common::*;

fn base() -> Cfg {
    Cfg::linear("t", 997, 12, 9)
        .set("run.seed", 11)
        .set("run.iterations", 20)
        .set("run.deadline", 20.0)
        .set("run.trajectory", true)
        .set("model.lr", 0.3)
        .set("model.l2", 0.01)
        .set("timing.compute", "modelled")
        .set("timing.a", 2e-05)
}

/// The config above, as its TOML text.
static BASE: LazyLock<String> = LazyLock::new(|| base().text());

const BERNOULLI: [&str; 4] =
    ["stragglers.model=bernoulli", "stragglers.p=0.25", "stragglers.factor=6", "stragglers.mode=per-iteration"];

#[test]
fn umw_is_exact_under_stragglers() {
    assert_exact("umw", &BASE, &BERNOULLI);
}

#[test]
fn gc_cyclic_is_exact_and_discards_late_results() {
    let mut sets = vec!["scheme.kind=gc-cyclic", "scheme.s=2"];
    sets.extend(BERNOULLI);
    let s = assert_exact("gc-cyclic", &BASE, &sets);
    assert!(s["late_discarded"].as_u64().unwrap() > 0, "stragglers should have produced late results");
}

#[test]
fn gc_frac_is_exact_with_fixed_stragglers() {
    let s = assert_exact(
        "gc-frac",
        &BASE,
        &[
            "scheme.kind=gc-frac",
            "scheme.s=2",
            "stragglers.model=fixed",
            "stragglers.workers=[1, 4, 8]",
            "stragglers.factor=5",
        ],
    );
    // Three slow workers but s = 2: the master needs 7 results, so it waits for one slow worker
    // (exact, only slower) and discards the other two as late, every iteration.
    assert!(s["late_discarded"].as_u64().unwrap() >= 2 * 19);
}

#[test]
fn gc_cyclic_tolerates_s_dead_workers() {
    assert_exact(
        "gc-dead",
        &BASE,
        &[
            "scheme.kind=gc-cyclic",
            "scheme.s=2",
            "stragglers.model=fail-stop",
            "stragglers.workers=[3, 7]",
            "stragglers.from_iteration=4",
        ],
    );
}

#[test]
fn ring_allreduce_and_mpi_allreduce_are_exact() {
    let (s, _dir) = assert_exact_kept(
        "rar",
        &BASE,
        &["scheme.kind=rar", "stragglers.model=fixed", "stragglers.workers=[2]", "stragglers.factor=3"],
    );
    // the traffic counters are the loop's alone: each rank sent its 2(N − 1) segments per
    // iteration, not one message of the setup, the first contacts or the barrier before the loop
    let (n, iters) = (s["ranks"].as_u64().unwrap(), s["iterations"].as_u64().unwrap());
    for (setup, down) in setup_and_shutdown(&s) {
        assert_eq!(setup["unanswered"], serde_json::Value::Null, "{setup}");
        assert!(setup["contact_s"].as_f64().is_some_and(|c| c >= 0.0), "{setup}");
        assert_eq!(down["sent_msgs"].as_u64().unwrap(), iters * 2 * (n - 1), "{down}");
    }
    let (s, _dir) = assert_exact_kept("allreduce", &BASE, &["scheme.kind=allreduce"]);
    for (setup, _) in setup_and_shutdown(&s) {
        assert!(setup["contact_s"].as_f64().is_some(), "one all-reduce before the loop: {setup}");
    }
}

/// Each rank's setup and shutdown records of the run `summary` describes.
fn setup_and_shutdown(summary: &serde_json::Value) -> Vec<(serde_json::Value, serde_json::Value)> {
    let dir = std::path::PathBuf::from(summary["run_dir"].as_str().unwrap());
    (0..summary["ranks"].as_u64().unwrap())
        .map(|r| {
            let text = std::fs::read_to_string(dir.join(format!("rank-{r}.jsonl"))).unwrap();
            let events: Vec<serde_json::Value> = text.lines().map(|l| serde_json::from_str(l).unwrap()).collect();
            let down = events.iter().rev().find(|e| e["ev"] == "shutdown").cloned().expect("a shutdown record");
            assert_eq!(events[0]["ev"], "setup", "rank {r}");
            (events[0].clone(), down)
        })
        .collect()
}

/// Every schedule of our all-reduce gives serial GD's θ under a straggler, with 9 workers: not a
/// power of two, so recursive doubling and halving-doubling fold rank 0 into rank 1 first and
/// send it the total at the end (the vector is short: auto takes recursive doubling).
#[test]
fn every_allreduce_schedule_is_exact() {
    for alg in ["recursive-doubling", "halving-doubling", "auto"] {
        let set = format!("scheme.algorithm=\"{alg}\"");
        let sets = ["scheme.kind=rar", &set, "stragglers.model=fixed", "stragglers.workers=[2]", "stragglers.factor=3"];
        let (s, _dir) = assert_exact_kept(&format!("rar-{alg}"), &BASE, &sets);
        // every rank heard from each partner of its schedule before the loop
        for (setup, _) in setup_and_shutdown(&s) {
            assert_eq!(setup["unanswered"], serde_json::Value::Null, "{alg}: {setup}");
            assert!(setup["contact_s"].as_f64().is_some(), "{alg}: {setup}");
        }
    }
}

#[test]
fn logistic_regression_on_a_libsvm_file_is_exact() {
    let dir = tempdir("libsvm-data");
    let path = dir.join("data.libsvm");
    // labels ±1, sparse features, written from the synthetic logistic generator
    let rows = outrun_workloads::data::synthetic_rows(
        outrun_config::DataKind::LogisticSynthetic,
        5,
        8,
        1.0,
        outrun_config::Labels::Binary,
        0..301,
    );
    let mut text = String::new();
    for i in 0..rows.len() {
        text.push_str(if rows.y[i] == 1.0 { "+1" } else { "-1" });
        for (k, v) in rows.row(i).iter().enumerate() {
            if k % 3 != 1 {
                text.push_str(&format!(" {}:{v}", k + 1));
            }
        }
        text.push('\n');
    }
    std::fs::write(&path, text).unwrap();
    let cfg = base()
        .set("data.kind", "libsvm")
        .unset("data.samples")
        .unset("data.features")
        .set("data.path", path.display().to_string())
        .set("model.loss", "logistic")
        .text();
    let s = assert_exact(
        "libsvm-gc",
        &cfg,
        &["scheme.kind=gc-frac", "scheme.s=2", "stragglers.model=fixed", "stragglers.workers=[5]"],
    );
    assert_eq!(s["samples"], 301);
    assert_eq!(s["features"], 7, "the largest index in the file (feature 8 was never written)");
}

#[test]
fn ignore_stragglers_is_inexact_and_says_so() {
    let (run, dir, _, sets) = train(
        "ignore",
        &BASE,
        // 20× slower: later than a punctual worker even when a busy host wakes that one late
        &[
            "scheme.kind=ignore",
            "scheme.s=2",
            "stragglers.model=fixed",
            "stragglers.workers=[2, 6]",
            "stragglers.factor=20",
        ],
    );
    assert_eq!(run.code, Some(0), "{}", run.stderr);
    let diff = max_rel_diff(&trajectory(&dir), &reference(&BASE, &sets));
    assert!(diff > 1e-4, "ignore should not reproduce full gradient descent (diff {diff:e})");
    let rows = iterations(&dir);
    assert!(rows.iter().all(|r| r["exact"] == "false"));
    let cov: f64 = rows[5]["coverage"].parse().unwrap();
    assert!((cov - 7.0 / 9.0).abs() < 0.01, "coverage {cov}");
    assert!(!rows[5]["survivors"].split(' ').any(|w| w == "2" || w == "6"), "the slow workers were not used");
    assert_eq!(summary(&dir)["exact_iterations"], 0);
}

#[test]
fn fail_stop_beyond_tolerance_fails_clearly_within_the_deadline() {
    let (run, _, _, _) = train(
        "failstop",
        &BASE,
        &[
            "scheme.kind=gc-cyclic",
            "scheme.s=1",
            "stragglers.model=fail-stop",
            "stragglers.workers=[2, 3]",
            "stragglers.from_iteration=3",
            "run.deadline=3",
        ],
    );
    assert_eq!(run.code, Some(1), "stderr: {}", run.stderr);
    let lines = common::said(&run.stderr);
    assert_eq!(lines.len(), 1, "one line expected, got:\n{}", run.stderr);
    assert!(lines[0].starts_with("error: iteration 3: gc-cyclic needs 8 of 9"), "{}", lines[0]);
    assert!(lines[0].contains("missing: workers 2, 3"), "{}", lines[0]);
    assert!(run.elapsed < Duration::from_secs(3 + 15), "took {:?}", run.elapsed);
}

#[test]
fn umw_waits_for_a_dead_worker_until_the_deadline() {
    let (run, _, _, _) =
        train("umw-dead", &BASE, &["stragglers.model=fail-stop", "stragglers.workers=[9]", "run.deadline=2"]);
    assert_eq!(run.code, Some(1));
    assert!(
        run.stderr.contains("iteration 0: umw needs 9 of 9") && run.stderr.contains("missing: workers 9"),
        "{}",
        run.stderr
    );
}

#[test]
fn wrong_number_of_ranks_is_one_clear_line() {
    let _lock = mpi_lock();
    let dir = tempdir("ranks");
    let cfg = write_config(&dir, &BASE);
    let run = mpirun(4, &cfg, &[format!("run.out_dir={}", dir.join("runs").display())], Duration::from_secs(60));
    assert_eq!(run.code, Some(2));
    assert_eq!(run.stderr.trim(), "error: this run needs 10 MPI ranks (1 master + 9 workers) but was started with 4: start it with launch/local.sh, or mpirun -np 10");
}

#[test]
fn malformed_data_file_fails_on_every_rank_with_the_line() {
    let dir = tempdir("baddata");
    let path = dir.join("bad.libsvm");
    std::fs::write(&path, "1 1:0.5 2:1\n-1 1:x\n").unwrap();
    let cfg = base()
        .set("data.kind", "libsvm")
        .unset("data.samples")
        .unset("data.features")
        .set("data.path", path.display().to_string())
        .text();
    let (run, _, _, _) = train("baddata", &cfg, &["scheme.workers=2"]);
    assert_eq!(run.code, Some(2));
    assert_eq!(run.stderr.trim(), format!("error: {}:2: value in `1:x` is not a number", path.display()));
}

#[test]
fn divergence_is_reported() {
    let (run, _, _, _) = train("nan", &BASE, &["model.lr=1e30", "model.l2=0", "scheme.kind=gc-cyclic", "scheme.s=1"]);
    assert_eq!(run.code, Some(1));
    assert!(run.stderr.contains("the model diverged") && run.stderr.contains("model.lr"), "{}", run.stderr);
    assert_eq!(run.stderr.trim().lines().count(), 1, "{}", run.stderr);
}

#[test]
fn run_directory_has_every_log() {
    let (run, dir, _, _) = train(
        "logs",
        &BASE,
        // worker 4 far enough behind that on a loaded host no other result is the late one
        &[
            "scheme.kind=gc-cyclic",
            "scheme.s=1",
            "stragglers.model=fixed",
            "stragglers.workers=[4]",
            "stragglers.factor=40",
        ],
    );
    assert_eq!(run.code, Some(0), "{}", run.stderr);
    for f in ["config.toml", "plan.json", "iterations.csv", "theta.txt", "summary.json", "trajectory.csv"] {
        assert!(dir.join(f).is_file(), "missing {f}");
    }
    for r in 0..10 {
        let text = std::fs::read_to_string(dir.join(format!("rank-{r}.jsonl"))).unwrap();
        let events: Vec<serde_json::Value> = text.lines().map(|l| serde_json::from_str(l).unwrap()).collect();
        assert_eq!(events[0]["ev"], "setup");
        assert!(events[0]["contact_s"].as_f64().is_some() && events[0]["unanswered"].is_null(), "{}", events[0]);
        let last = events.last().unwrap();
        assert_eq!(last["ev"], "shutdown");
        assert_eq!(last["clean"], true, "rank {r} did not shut down cleanly");
        let iters = events.iter().filter(|e| e["ev"] == "iter").count();
        assert_eq!(iters, 20, "rank {r}");
    }
    // the slow worker's results were late, and logged as such at the master
    let master = std::fs::read_to_string(dir.join("rank-0.jsonl")).unwrap();
    let late: Vec<serde_json::Value> = master
        .lines()
        .map(|l| serde_json::from_str::<serde_json::Value>(l).unwrap())
        .filter(|e| e["ev"] == "late")
        .collect();
    assert!(!late.is_empty());
    assert!(late
        .iter()
        .all(|e| e["child"] == 4 && e["msg_t"].as_u64().unwrap() < e["t"].as_u64().unwrap() || e["msg_t"] == e["t"]));
    let theta = final_theta(&dir);
    assert_eq!(theta.len(), 12);
    assert_eq!(theta, *trajectory(&dir).last().unwrap());
}

/// Sub-communicators for patterns that talk in groups: every subset of 3 of 5 ranks becomes a
/// communicator (created once, members only), and each member broadcasts to its group.
#[test]
fn sub_communicators_broadcast_within_their_groups() {
    let _lock = mpi_lock();
    let args: Vec<String> = ["bench", "groups", "--r", "2", "--values", "100"].iter().map(|s| s.to_string()).collect();
    let run = mpirun_outrun(5, &args, Duration::from_secs(60));
    assert_eq!(run.code, Some(0), "{}", run.stderr);
    let row = run.stdout.lines().nth(1).expect("a CSV row");
    let f: Vec<&str> = row.split(',').collect();
    assert_eq!((f[0], f[1], f[2], f[4]), ("10", "30", "100", "true"), "C(5,3) = 10 groups, 3 broadcasts each: {row}");
}

/// The master–worker floor of `make bench` §17: every gathered sum is the one the broadcast
/// model implies (checked on rank 0 each iteration); one rank is refused in one line.
#[test]
fn the_master_worker_floor_gathers_the_sums_its_model_implies() {
    let _lock = mpi_lock();
    let args: Vec<String> =
        ["bench", "floor", "--values", "300", "--iterations", "50"].iter().map(|s| s.to_string()).collect();
    let run = mpirun_outrun(4, &args, Duration::from_secs(60));
    assert_eq!(run.code, Some(0), "{}", run.stderr);
    let row = run.stdout.lines().nth(1).expect("a CSV row");
    let f: Vec<&str> = row.split(',').collect();
    assert_eq!((f[0], f[1], f[2], f[5]), ("4", "300", "50", "true"), "{row}");
    assert!(f[3].parse::<f64>().unwrap() > 0.0, "{row}");
    let run = mpirun_outrun(1, &args, Duration::from_secs(60));
    assert_ne!(run.code, Some(0));
    assert!(run.stderr.contains("bench floor: run it under mpirun with at least 2 ranks"), "{}", run.stderr);
}

/// Our all-reduce against `MPI_Allreduce` on the same vectors, every schedule, through mpirun:
/// 8 MB on 3 ranks makes ring segments of 2.8 MB, so the ring runs in 3 lanes (1 MiB messages)
/// and `auto` picks it; 256 KB runs one lane. Every round's sums must agree with the library's.
#[test]
fn the_all_reduce_in_lanes_sums_what_mpi_allreduce_sums() {
    let _lock = mpi_lock();
    let args: Vec<String> = [
        "bench",
        "ring",
        "--sizes",
        "262144,8388608",
        "--algorithms",
        "ring,recursive-doubling,halving-doubling,auto",
        "--rounds",
        "2",
        "--seconds",
        "0.02",
    ]
    .iter()
    .map(|s| s.to_string())
    .collect();
    let run = mpirun_outrun(3, &args, Duration::from_secs(120));
    assert_eq!(run.code, Some(0), "{}", run.stderr);
    let rows: Vec<Vec<&str>> = run.stdout.lines().skip(1).map(|l| l.split(',').collect()).collect();
    assert_eq!(rows.len(), 8, "2 sizes × 4 schedules: {}", run.stdout);
    for f in &rows {
        assert_eq!((f[0], f[7]), ("3", "true"), "3 ranks, our sums agree with MPI_Allreduce: {f:?}");
    }
}

/// A ring with one worker past the deadline: one line, from the rank that knows (the straggler's
/// right neighbour, which received nothing), naming the straggler; the ranks stalled further
/// along the ring log their view in their rank logs and stay quiet.
#[test]
fn a_stalled_ring_names_its_straggler_in_one_line() {
    stalled_allreduce_names_its_straggler("ring");
}

/// The same with halving-doubling: the straggler's first partner (rank 7, which waits for its
/// first message) says it; the ranks stalled behind others stay quiet.
#[test]
fn a_stalled_halving_doubling_names_its_straggler_in_one_line() {
    stalled_allreduce_names_its_straggler("halving-doubling");
}

fn stalled_allreduce_names_its_straggler(alg: &str) {
    let set = format!("scheme.algorithm=\"{alg}\"");
    let (run, dir, _, _) = train(
        &format!("stall-{alg}"),
        &BASE,
        &[
            "scheme.kind=rar",
            &set,
            "stragglers.model=fixed",
            "stragglers.workers=[4]",
            "stragglers.factor=2000",
            "run.deadline=1",
        ],
    );
    assert_ne!(run.code, Some(0));
    let lines = common::said(&run.stderr);
    assert_eq!(lines.len(), 1, "{}", run.stderr);
    assert!(
        lines[0].starts_with("error: ring all-reduce: worker 4 (rank 3) sent nothing of iteration 0"),
        "{}",
        run.stderr
    );
    // the other ranks' views are in their logs
    let views = std::fs::read_dir(&*dir)
        .unwrap()
        .flatten()
        .filter(|e| e.path().is_dir())
        .flat_map(|d| std::fs::read_dir(d.path()).unwrap().flatten())
        .filter(|f| f.file_name().to_string_lossy().starts_with("rank-"))
        .filter(|f| std::fs::read_to_string(f.path()).unwrap_or_default().contains("was still in"))
        .count();
    assert!(views >= 1, "the stalled ranks' views are logged");
}

#[test]
fn a_deadline_wait_rule_uses_what_arrived_in_time_and_drains_the_rest() {
    // workers 2 and 6 take 41 × 2.2 ms ≈ 90 ms, the others 2.2 ms; ignore with s = 1 would wait
    // for 8 results (one straggler), the deadline of 40 ms takes the 7 that came in time
    let sets = [
        "scheme.kind=ignore",
        "scheme.s=1",
        "scheme.wait_s=0.04",
        "stragglers.model=fixed",
        "stragglers.workers=[2, 6]",
        "stragglers.factor=40",
    ];
    let (run, dir, _, _) = train("deadline", &BASE, &sets);
    assert_eq!(run.code, Some(0), "{}", run.stderr);
    let rows = iterations(&dir);
    assert_eq!(rows.len(), 20);
    for r in &rows {
        let used: Vec<&str> = r["survivors"].split(' ').collect();
        assert_eq!(used.len(), 7, "{r:?}");
        assert!(!used.contains(&"2") && !used.contains(&"6"), "{r:?}");
        let wall: f64 = r["wall_s"].parse().unwrap();
        // met at the deadline, not when the stragglers answer (generous for a loaded host)
        assert!(wall < 0.085, "iteration {} took {wall} s", r["iteration"]);
    }
    assert!(summary(&dir)["late_discarded"].as_u64().unwrap() > 0, "the stragglers' results are drained");
}

/// `engine.idle`: every mode trains the same θ as serial gradient descent (within 1e-9, under
/// Bernoulli stragglers) — the modes differ only in how a rank waits — and each rank's setup
/// record names the mode it used: `auto` polls without pause where the ranks on the host are at
/// most its cores (2 ranks here), and sleeps between polls where they outnumber them.
#[test]
fn ranks_bound_one_per_core_count_the_cores_between_them_and_spin() {
    // a rank bound to one core may run on one CPU; the ranks of the host have as many between
    // them as there are ranks, so each has a core of its own and `auto` polls without pause
    // (each rank's own mask, 1 CPU, made it sleep before)
    let cores = std::thread::available_parallelism().map_or(1, |c| c.get());
    if cores < 2 {
        eprintln!("SKIPPED: two ranks bound to a core each need 2 cores ({cores} here)");
        return;
    }
    let _lock = mpi_lock();
    let dir = tempdir("idle-bound");
    let cfg = write_config(&dir, &BASE);
    let out = dir.join("runs");
    let sets = ["scheme.kind=umw", "scheme.s=", "scheme.workers=1", "engine.idle=auto"]
        .into_iter()
        .map(String::from)
        .chain(BERNOULLI.iter().map(|s| s.to_string()))
        .chain([format!("run.out_dir={}", out.display())]);
    let mut cmd = mpirun_command_bound(2, "core");
    cmd.arg("train").arg(&cfg);
    for s in sets {
        cmd.arg("--set").arg(s);
    }
    let run = run_with_timeout(cmd, Duration::from_secs(120));
    keep_output(&dir, &run);
    assert_eq!(run.code, Some(0), "{}", run.stderr);
    let rd = run_dir(&out);
    for rank in 0..2 {
        let log = std::fs::read_to_string(rd.join(format!("rank-{rank}.jsonl"))).unwrap();
        let setup: serde_json::Value = serde_json::from_str(log.lines().next().unwrap()).unwrap();
        assert_eq!(setup["ev"], "setup");
        assert_eq!(
            (setup["local_ranks"].as_u64(), setup["cores"].as_u64()),
            (Some(2), Some(2)),
            "rank {rank}: {setup}"
        );
        assert_eq!(setup["idle"], "spin", "rank {rank}: {setup}");
    }
}

#[test]
fn every_idle_mode_trains_the_same_and_each_rank_says_how_it_waited() {
    let cores = std::thread::available_parallelism().map_or(1, |c| c.get());
    let auto = |ranks: usize| if ranks <= cores { "spin" } else { "sleep" };
    for (idle, workers, want) in [
        ("spin", 1, "spin"),
        ("yield", 1, "yield"),
        ("yield", 9, "yield"),
        ("sleep", 9, "sleep"),
        ("auto", 9, auto(10)),
        ("auto", 1, auto(2)),
    ] {
        let tag = format!("idle-{idle}-{workers}");
        let mut sets = vec![
            "scheme.kind=umw".to_string(),
            "scheme.s=".into(),
            format!("scheme.workers={workers}"),
            format!("engine.idle={idle}"),
        ];
        sets.extend(BERNOULLI.iter().map(|s| s.to_string()));
        let refs: Vec<&str> = sets.iter().map(String::as_str).collect();
        let (run, dir, _, all) = train(&tag, &BASE, &refs);
        assert_eq!(run.code, Some(0), "{tag}: {}", run.stderr);
        let diff = max_rel_diff(&trajectory(&dir), &reference(&BASE, &all));
        assert!(diff <= 1e-9, "{tag}: θ differs from serial GD by {diff:e}");
        for rank in 0..=workers {
            let log = std::fs::read_to_string(dir.join(format!("rank-{rank}.jsonl"))).unwrap();
            let setup: serde_json::Value = serde_json::from_str(log.lines().next().unwrap()).unwrap();
            assert_eq!(setup["ev"], "setup", "{tag}");
            assert_eq!(setup["idle"], want, "{tag}: rank {rank} ({} ranks on {cores} cores)", workers + 1);
        }
    }
}

#[test]
fn a_master_whose_results_never_pause_still_retires_its_sends() {
    // gc-frac with one group of seven needs one result of seven: the master moves on at its
    // fastest worker's pace and the others' late results arrive without a pause. Its receive
    // loop took them all before retiring any send, so after 64 iterations every worker had 64
    // sends unretired (though received), its models were dropped, and the run stopped for
    // run.deadline (seen at 8 ranks bound one per core on a 16-core host). Open MPI without
    // shared-memory single copy (as in many containers) has the models of 40 KB complete late
    // enough to show it on 2 cores too.
    let text = Cfg::linear("t", 14, 5000, 7)
        .set("run.seed", 5)
        .set("run.iterations", 200)
        .set("run.deadline", 10.0)
        .set("model.lr", 1e-6)
        .set("scheme.kind", "gc-frac")
        .set("scheme.s", 6)
        .text();
    let _lock = mpi_lock();
    let dir = tempdir("results-never-pause");
    let cfg = write_config(&dir, &text);
    let out = dir.join("runs");
    let sets = vec![format!("run.out_dir={}", out.display())];
    let env = [("OMPI_MCA_btl_vader_single_copy_mechanism", "none")];
    let run = mpirun_env(8, &cfg, &sets, &env, Duration::from_secs(120));
    keep_output(&dir, &run);
    assert_eq!(run.code, Some(0), "{}", run.stderr);
    let rd = run_dir(&out);
    let s = summary(&rd);
    assert_eq!(s["exact_iterations"], 200, "{s}");
    let want = reference(&text, &sets);
    let diff = max_rel_diff(&[final_theta(&rd)], &want[want.len() - 1..]);
    assert!(diff <= 1e-9, "final θ differs from serial GD by {diff:e}");
    for rank in 0..8 {
        let log = std::fs::read_to_string(rd.join(format!("rank-{rank}.jsonl"))).unwrap();
        assert!(!log.contains("has not taken the last"), "rank {rank} dropped messages to a live peer");
    }
}
