//! `outrun report` on real runs: the comparison table and the plot files.

mod common;

use std::sync::LazyLock;

use common::*;
use outrun_testkit::Cfg;

fn cfg() -> Cfg {
    Cfg::linear("rep", 600, 10, 4)
        .set("run.seed", 3)
        .set("run.iterations", 12)
        .set("model.lr", 0.5)
        .set("stragglers.model", "fixed")
        .set("stragglers.workers", vec![2])
        .set("stragglers.factor", 3.0)
        .set("timing.compute", "modelled")
        .set("timing.a", 0.0001)
}

/// The config above, as its TOML text.
static CFG: LazyLock<String> = LazyLock::new(|| cfg().text());

#[test]
fn report_writes_tables_and_plots_for_a_comparison() {
    let (a, umw, _, _) = train("rep-umw", &CFG, &["run.name=umw"]);
    assert_eq!(a.code, Some(0), "{}", a.stderr);
    let (b, gc, _, _) = train("rep-gc", &CFG, &["run.name=gc", "scheme.kind=gc-cyclic", "scheme.s=1"]);
    assert_eq!(b.code, Some(0), "{}", b.stderr);
    let out = tempdir("report-out");
    let r = outrun(&[
        "report",
        umw.to_str().unwrap(),
        gc.to_str().unwrap(),
        "--baseline",
        umw.to_str().unwrap(),
        "--target-error",
        "1e-2",
        "--out",
        out.to_str().unwrap(),
    ]);
    assert_eq!(r.code, Some(0), "{}", r.stderr);
    let md = std::fs::read_to_string(out.join("report.md")).unwrap();
    assert!(md.contains("## Comparison 1: linear-synthetic data, d = 600, p = 10, seed 3"), "{md}");
    let rows: Vec<&str> = md.lines().filter(|l| l.starts_with("| umw") || l.starts_with("| gc")).collect();
    assert_eq!(rows.len(), 2, "{md}");
    assert!(rows[0].starts_with("| umw (baseline) | umw | 4 | 0 | 12 |"), "{}", rows[0]);
    assert!(rows[0].contains("| 1.00× |"), "the baseline's speedup is 1: {}", rows[0]);
    // the GC run tolerates the slow worker: faster than UMW, to the target error too
    let speedups: Vec<f64> =
        rows[1].split('|').filter_map(|c| c.trim().strip_suffix('×')).map(|v| v.parse().unwrap()).collect();
    assert_eq!(speedups.len(), 2, "{}", rows[1]);
    assert!(speedups.iter().all(|&s| s > 1.2), "gc should beat umw with a 4x slow worker: {}", rows[1]);
    // the first iteration apart and the mean of the others, in the summary and the table, as
    // the run's iterations.csv gives them
    let walls: Vec<f64> = iterations(&umw).iter().map(|r| r["wall_s"].parse().unwrap()).collect();
    let rest = walls[1..].iter().sum::<f64>() / (walls.len() - 1) as f64;
    // (the file's times have 6 decimals)
    let sum = summary(&umw);
    let (first, steady) = (sum["first_s"].as_f64().unwrap(), sum["steady_mean_s"].as_f64().unwrap());
    assert!((first - walls[0]).abs() <= 0.5e-6 && (steady - rest).abs() <= 0.5e-6, "{sum}");
    let cells: Vec<&str> = rows[0].split('|').map(str::trim).collect();
    assert_eq!(
        (cells[7], cells[8]),
        (&*format!("{:.2}", first * 1e3), &*format!("{:.2}", steady * 1e3)),
        "{}",
        rows[0]
    );
    // the busiest node of a star is the master
    assert!(rows[0].trim_end().ends_with("(0) |"), "{}", rows[0]);
    for f in ["c1-error-vs-time", "c1-iteration-time", "c1-timeline-umw", "c1-timeline-gc"] {
        for ext in ["png", "svg"] {
            let p = out.join(format!("{f}.{ext}"));
            let len = std::fs::metadata(&p).map(|m| m.len()).unwrap_or(0);
            assert!(len > 2000, "{} missing or empty", p.display());
        }
    }
    // who umw waited for: the slow worker 2, at the top of its blame table
    let blame = md.split("Who umw waited for").nth(1).unwrap_or_else(|| panic!("no blame table: {md}"));
    let first = blame.lines().find(|l| l.starts_with("| ") && !l.starts_with("| worker") && !l.starts_with("|---"));
    assert!(first.is_some_and(|l| l.starts_with("| 2 | 2 |")), "{blame}");
    let png = std::fs::read(out.join("c1-error-vs-time.png")).unwrap();
    assert_eq!(&png[..8], b"\x89PNG\r\n\x1a\n");
}

#[test]
fn report_errors_are_one_line() {
    let dir = tempdir("report-empty");
    let r = outrun(&["report", dir.to_str().unwrap()]);
    assert_eq!(r.code, Some(2));
    assert!(r.stderr.trim().ends_with("no finished run (summary.json) here or below"), "{}", r.stderr);
    assert_eq!(r.stderr.trim().lines().count(), 1);
}

/// `outrun report` finds runs at any depth below a directory (a sweep's `runs/`, a directory of
/// sweeps), and a ring's row has its all-reduce bus bandwidth (nccl-tests' busbw).
#[test]
fn report_finds_runs_below_and_gives_rings_their_bus_bandwidth() {
    let dir = tempdir("report-depth");
    let deep = dir.join("sweeps").join("one");
    std::fs::create_dir_all(&deep).unwrap();
    let (a, _, _) = run_config(&deep, &CFG, &["run.name=umw".into()], "umw", std::time::Duration::from_secs(120));
    assert_eq!(a, Some(0));
    let ring = ["run.name=rar", "scheme.kind=rar", "stragglers.model=none", "timing.compute=real"].map(String::from);
    let (b, err, _) = run_config(&deep, &CFG, &ring, "rar", std::time::Duration::from_secs(120));
    assert_eq!(b, Some(0), "{err}");
    let r = outrun(&["report", dir.to_str().unwrap()]);
    assert_eq!(r.code, Some(0), "{}", r.stderr);
    assert!(r.stdout.contains("all-reduce busbw MB/s"), "{}", r.stdout);
    let rows: Vec<&str> = r.stdout.lines().filter(|l| l.starts_with("| umw") || l.starts_with("| rar")).collect();
    assert_eq!(rows.len(), 2, "{}", r.stdout);
    let last = |row: &str| row.trim_end_matches(" |").rsplit('|').next().unwrap().trim().to_string();
    let (umw, rar) = if rows[0].starts_with("| umw") { (rows[0], rows[1]) } else { (rows[1], rows[0]) };
    assert_eq!(last(umw), "-", "a star all-reduces nothing: {umw}");
    let bw: f64 = last(rar).parse().unwrap_or_else(|_| panic!("a bus bandwidth: {rar}"));
    assert!(bw > 0.0, "{rar}");
}

/// `outrun blame` names the slow worker first, in a star (its result is the master's last) and
/// in a ring (where every rank waits alike: its result is ready last), from the logs alone.
#[test]
fn blame_names_the_slow_worker_in_a_star_and_in_a_ring() {
    let dir = tempdir("blame");
    let slow = ["stragglers.workers=[3]", "stragglers.factor=5.0"].map(String::from);
    for (name, kind) in [("umw", "umw"), ("rar", "rar")] {
        let mut set = vec![format!("run.name={name}"), format!("scheme.kind={kind}")];
        set.extend(slow.iter().cloned());
        let (code, err, _) = run_config(&dir, &CFG, &set, name, std::time::Duration::from_secs(120));
        assert_eq!(code, Some(0), "{err}");
    }
    let r = outrun(&["blame", dir.to_str().unwrap(), "--json"]);
    assert_eq!(r.code, Some(0), "{}", r.stderr);
    let all: Vec<serde_json::Value> = serde_json::from_str(&r.stdout).unwrap();
    let mut runs: Vec<&str> = all.iter().map(|w| w["run"].as_str().unwrap()).collect();
    runs.dedup();
    assert_eq!(runs.len(), 2, "{}", r.stdout);
    for run in runs {
        let workers: Vec<&serde_json::Value> = all.iter().filter(|w| w["run"] == run).collect();
        assert_eq!(workers.len(), 4, "{run}");
        let first = &workers[0];
        assert_eq!(first["worker"], 3, "{run}");
        assert_eq!(first["straggled"], 12, "{run}");
        assert!(first["score"].as_f64().unwrap() > 0.9, "{run}");
        // (1 + factor) × its compute time: six times the median worker's, give or take the polling
        let ratio = first["compute_ratio"].as_f64().unwrap();
        assert!((4.5..7.0).contains(&ratio), "{run}: {first}");
        assert!(workers[1..].iter().all(|w| w["straggled"] == 0), "{run}");
    }
    let table = outrun(&["blame", dir.to_str().unwrap(), "--top", "1"]);
    assert_eq!(table.code, Some(0), "{}", table.stderr);
    let firsts: Vec<&str> = table.stdout.lines().filter(|l| l.starts_with("| 3 |")).collect();
    assert_eq!(firsts.len(), 2, "{}", table.stdout);
    assert_eq!(table.stdout.lines().filter(|l| l.starts_with("| ") && !l.starts_with("| worker")).count(), 2);
}

/// Runs with a held-out set get a plot of test accuracy against time and iterations.
#[test]
fn report_plots_test_accuracy_when_runs_have_a_held_out_set() {
    let dir = tempdir("report-accuracy");
    let root = concat!(env!("CARGO_MANIFEST_DIR"), "/../..");
    let cfg = format!("{root}/configs/mlp-digits.toml");
    let runs = dir.join("runs");
    for kind in ["gc-cyclic", "ignore"] {
        let out = format!("run.out_dir={}", runs.display());
        let set = format!("scheme.kind={kind}");
        let r =
            outrun(&["simulate", &cfg, "--trials", "1", "--set", &out, "--set", &set, "--set", "run.iterations=20"]);
        assert_eq!(r.code, Some(0), "{}", r.stderr);
    }
    let out = dir.join("report");
    let r = outrun(&["report", runs.to_str().unwrap(), "--out", out.to_str().unwrap()]);
    assert_eq!(r.code, Some(0), "{}", r.stderr);
    let md = std::fs::read_to_string(out.join("report.md")).unwrap();
    assert!(md.contains("![test accuracy vs wall-clock time and vs iterations](c1-accuracy.png)"), "{md}");
    for ext in ["png", "svg"] {
        assert!(std::fs::metadata(out.join(format!("c1-accuracy.{ext}"))).unwrap().len() > 1000);
    }
    let svg = std::fs::read_to_string(out.join("c1-accuracy.svg")).unwrap();
    assert!(svg.contains("test accuracy vs iterations") && svg.contains("ignore"), "both panels, both schemes");
    assert!(md.contains("-timeline-"), "{md}");
    // --timeline 0: no timeline plots (it drew one of 1 iteration)
    let bare = dir.join("bare");
    let r = outrun(&["report", runs.to_str().unwrap(), "--out", bare.to_str().unwrap(), "--timeline", "0"]);
    assert_eq!(r.code, Some(0), "{}", r.stderr);
    let md = std::fs::read_to_string(bare.join("report.md")).unwrap();
    assert!(!md.contains("-timeline-") && md.contains("c1-accuracy.png"), "{md}");
    assert!(std::fs::read_dir(&bare).unwrap().all(|e| !e.unwrap().file_name().to_string_lossy().contains("timeline")));
    // every run reaches 1 % held-out accuracy at its first evaluation: a time and a count each
    let t = outrun(&["report", runs.to_str().unwrap(), "--target-accuracy", "0.01"]);
    assert_eq!(t.code, Some(0), "{}", t.stderr);
    let rows: Vec<&str> = t.stdout.lines().filter(|l| l.starts_with("| ") && l.contains("[simulated]")).collect();
    assert_eq!(rows.len(), 2, "{}", t.stdout);
    for row in rows {
        let cells: Vec<&str> = row.split('|').map(str::trim).collect();
        let at = cells.iter().position(|c| c.ends_with('×')).unwrap();
        assert!(cells[at + 1].parse::<f64>().is_ok() && cells[at + 2].parse::<u64>().is_ok_and(|k| k >= 1), "{row}");
    }
}

/// Rank `rank`'s compute times (`target`) per iteration in run `dir`.
fn targets(dir: &std::path::Path, rank: usize) -> Vec<f64> {
    iter_records(dir, rank).iter().map(|r| r["target"].as_f64().unwrap()).collect()
}

/// `outrun fit` on simulated runs (the same logs as the engine's) with injected
/// shifted-exponential and two-state Markov stragglers recovers every worker's parameters within
/// 10 %, prefers the law that generated the times, and prints a section that runs as a config.
#[test]
fn fit_recovers_injected_straggler_laws_and_its_section_runs() {
    let dir = tempdir("fit");
    let base = "[run]\nname = 'fit'\nseed = 6\niterations = 3000\n[data]\nkind = 'linear-synthetic'\nsamples = 800\nfeatures = 5\n[model]\nloss = 'least-squares'\nlr = 0.1\n[scheme]\nkind = 'gc-cyclic'\nworkers = 8\ns = 2\n[timing]\ncompute = 'modelled'\n";
    let laws = [
        (
            "shifted-exp",
            "[stragglers]\nmodel = 'shifted-exp'\na = 2e-6\nmu = [5e4, 5e4, 5e4, 5e4, 1e4, 1e4, 1e4, 1e4]\n",
        ),
        (
            "markov",
            "[stragglers]\nmodel = 'markov'\np = 0.2\na = 2e-6\nmu_slow = 2e4\nmu_fast = 1e6\ninitial_slow = 3\n",
        ),
    ];
    let near = |got: f64, want: f64, what: &str| assert!((got / want - 1.0).abs() < 0.1, "{what}: {got} vs {want}");
    for (law, section) in laws {
        let out = dir.join(law);
        let cfg = dir.join(format!("{law}.toml"));
        std::fs::write(&cfg, format!("{base}{section}")).unwrap();
        let set = format!("run.out_dir={}", out.display());
        let sim = outrun(&["simulate", cfg.to_str().unwrap(), "--trials", "1", "--set", &set]);
        assert_eq!(sim.code, Some(0), "{}", sim.stderr);
        let run = run_dir(&out);
        let fit = outrun(&["fit", run.to_str().unwrap(), "--json"]);
        assert_eq!(fit.code, Some(0), "{}", fit.stderr);
        let f: serde_json::Value = serde_json::from_str(&fit.stdout).unwrap();
        let workers = f["workers"].as_array().unwrap();
        assert_eq!(workers.len(), 8);
        for w in workers {
            let id = w["worker"].as_u64().unwrap();
            if law == "shifted-exp" {
                let e = &w["shifted_exp"];
                near(e["a"].as_f64().unwrap(), 2e-6, "a");
                near(e["mu"].as_f64().unwrap(), if id <= 4 { 5e4 } else { 1e4 }, "mu");
            } else {
                let m = &w["markov"];
                near(m["a"].as_f64().unwrap(), 2e-6, "a");
                near(m["mu_fast"].as_f64().unwrap(), 1e6, "mu_fast");
                near(m["mu_slow"].as_f64().unwrap(), 2e4, "mu_slow");
            }
        }
        if law == "markov" {
            near(f["p"].as_f64().unwrap(), 0.2, "p");
        }
        // the text names the generating law as the best fit and ends with its section
        let text = outrun(&["fit", run.to_str().unwrap()]);
        assert!(text.stdout.contains(&format!("the simplest law within it, {law})")), "{}", text.stdout);
        let pasted = &text.stdout[text.stdout.find("[stragglers]").unwrap()..];
        let again = dir.join(format!("{law}-fitted.toml"));
        std::fs::write(&again, format!("{base}{pasted}")).unwrap();
        let set = format!("run.out_dir={}", dir.join(format!("{law}-again")).display());
        let check = outrun(&[
            "simulate",
            again.to_str().unwrap(),
            "--trials",
            "1",
            "--set",
            "run.iterations=50",
            "--set",
            &set,
        ]);
        assert_eq!(check.code, Some(0), "{pasted}\n{}", check.stderr);
        let plan = outrun(&["plan", again.to_str().unwrap()]);
        assert!(plan.stdout.contains(&format!("stragglers: {law}:")), "{}", plan.stdout);
    }
    // a run's compute times exported as a trace replay the same times in another run
    let first = run_dir(&dir.join("markov"));
    let csv = dir.join("times.csv");
    let export = outrun(&["fit", first.to_str().unwrap(), "--trace", csv.to_str().unwrap()]);
    assert_eq!(export.code, Some(0), "{}", export.stderr);
    let cfg = dir.join("replay.toml");
    let replay = format!("{base}[stragglers]\nmodel = 'trace'\ntimes = 'compute'\nfile = 'times.csv'\n");
    std::fs::write(&cfg, replay).unwrap();
    let set = format!("run.out_dir={}", dir.join("replay").display());
    let sim = outrun(&["simulate", cfg.to_str().unwrap(), "--trials", "1", "--set", &set]);
    assert_eq!(sim.code, Some(0), "{}", sim.stderr);
    let again = run_dir(&dir.join("replay"));
    for rank in 1..=8 {
        let (a, b) = (targets(&first, rank), targets(&again, rank));
        assert_eq!(a.len(), 3000);
        assert!(a.iter().zip(&b).all(|(x, y)| (x - y).abs() <= 1e-12 * x.abs()), "worker {rank}");
    }
    let bad = outrun(&["fit", dir.to_str().unwrap(), "--law", "gamma"]);
    assert_eq!(bad.code, Some(2));
    assert!(bad.stderr.contains("--law gamma: use one of shifted-exp, weibull, markov"), "{}", bad.stderr);
}

/// `outrun fit` on a run whose straggler model is deterministic (`fixed` under modelled
/// compute): every worker's time per point is one value, which no random law describes — it
/// says so, fits point masses (not a rate of 4.5e307 "within" a test it failed), and its section
/// replays the same compute times in the simulator.
#[test]
fn fit_of_deterministic_times_says_so_and_its_section_replays_them() {
    let dir = tempdir("fit-fixed");
    let base = "[run]\nname = 'fixed'\nseed = 6\niterations = 25\n[data]\nkind = 'linear-synthetic'\nsamples = 800\nfeatures = 5\n[model]\nloss = 'least-squares'\nlr = 0.1\n[scheme]\nkind = 'gc-cyclic'\nworkers = 6\ns = 2\n[timing]\ncompute = 'modelled'\na = 2e-5\n";
    let cfg = dir.join("fixed.toml");
    std::fs::write(&cfg, format!("{base}[stragglers]\nmodel = 'fixed'\nworkers = [2, 5]\nfactor = 4.0\n")).unwrap();
    let set = format!("run.out_dir={}", dir.join("first").display());
    let sim = outrun(&["simulate", cfg.to_str().unwrap(), "--trials", "1", "--set", &set]);
    assert_eq!(sim.code, Some(0), "{}", sim.stderr);
    let first = run_dir(&dir.join("first"));
    let text = outrun(&["fit", first.to_str().unwrap()]);
    assert_eq!(text.code, Some(0), "{}", text.stderr);
    assert!(text.stdout.contains("nothing random to fit"), "{}", text.stdout);
    assert!(!text.stdout.contains("e307") && !text.stdout.contains("e19"), "{}", text.stdout);
    let pasted = &text.stdout[text.stdout.find("[stragglers]").unwrap()..];
    let again = dir.join("fitted.toml");
    std::fs::write(&again, format!("{base}{pasted}")).unwrap();
    let set = format!("run.out_dir={}", dir.join("again").display());
    let sim = outrun(&["simulate", again.to_str().unwrap(), "--trials", "1", "--set", &set]);
    assert_eq!(sim.code, Some(0), "{pasted}\n{}", sim.stderr);
    let replayed = run_dir(&dir.join("again"));
    for rank in 1..=6 {
        let (a, b) = (targets(&first, rank), targets(&replayed, rank));
        assert_eq!(a.len(), 25);
        // every time the same, the replay's the same again
        assert!(a.iter().all(|&x| x > 0.0 && (x - a[0]).abs() <= 1e-12 * x), "worker {rank}: {a:?}");
        assert!(a.iter().zip(&b).all(|(x, y)| (x - y).abs() <= 1e-9 * x), "worker {rank}: {a:?} vs {b:?}");
    }
    // a directory of runs is not one: named so, with what is below it (it said "no worker
    // logged compute times with their load", as of a run of an old build)
    let many = outrun(&["fit", dir.to_str().unwrap()]);
    assert_eq!(many.code, Some(2), "{}", many.stderr);
    let want = "no rank logs (rank-<r>.jsonl) here: `outrun fit` takes one run directory; 2 runs below it, the first";
    assert!(many.stderr.contains(want), "{}", many.stderr);
}

/// A federated run whose rule accepted no upload says so, through mpirun and in the report: no
/// "exact", no loss 0, no plot of nothing — the rounds counted, the loss left out.
#[test]
fn a_federated_run_that_accepted_nothing_says_so() {
    let sets = [
        "run.name=none",
        "job.kind=fl",
        "data.kind=softmax-synthetic",
        "model.loss=softmax",
        "model.classes=3",
        "scheme.kind=diversefl",
        "scheme.sample=0.2",
        "scheme.eps2=100",
        "scheme.eps3=200",
        "stragglers.model=none",
    ];
    let (run, dir, _, _) = train("rep-fl-none", &CFG, &sets);
    assert_eq!(run.code, Some(0), "{}", run.stderr);
    let line = run.stdout.lines().find(|l| l.contains("finished 12 iterations")).expect("the run's line");
    assert!(line.contains("12 of 12 rounds accepted no upload (θ unchanged)"), "{line}");
    assert!(!line.contains("exact") && !line.contains("loss"), "{line}");
    assert_eq!(summary(&dir)["empty_iterations"], 12);
    // the start-up apart from the loop, as the summary has it
    let setup = format!(" after {:.1} s of setup (", summary(&dir)["setup_s"].as_f64().unwrap());
    assert!(line.contains(&setup), "{setup}: {line}");
    let out = tempdir("report-fl-none");
    let r = outrun(&["report", dir.to_str().unwrap(), "--out", out.to_str().unwrap()]);
    assert_eq!(r.code, Some(0), "{}", r.stderr);
    let md = std::fs::read_to_string(out.join("report.md")).unwrap();
    assert!(md.contains("| n/a | n/a (12 rounds accepted no upload) |"), "{md}");
    assert!(md.contains("No run has an error or a loss to plot"), "{md}");
}

/// A resumed run and a simulated one are labelled as such in the table, summary.json says where
/// a resumed run started, and the targets say what they can: the time and iterations to an
/// error and a loss, and "n/a" — not "not reached" — for an accuracy no run can have (no test
/// set).
#[test]
fn resumed_and_simulated_runs_are_labelled_and_targets_say_what_they_can() {
    let (first, part, cfg, sets) =
        train("rep-resume", &CFG, &["run.name=whole", "run.checkpoint_every=4", "run.iterations=4"]);
    assert_eq!(first.code, Some(0), "{}", first.stderr);
    let out = tempdir("rep-resumed");
    let resumed = resume_trained(&CFG, &cfg, &sets, &part, &out);
    assert_eq!(resumed.code, Some(0), "{}", resumed.stderr);
    let resumed = run_dir(&out);
    let s = summary(&resumed);
    assert_eq!((s["first_iteration"].as_u64(), s["iterations"].as_u64()), (Some(4), Some(8)), "{s}");
    assert_eq!(summary(&part)["first_iteration"], 0);
    let sims = tempdir("rep-sim");
    let sim = simulate_as_trained(&cfg, &sets, &sims);
    let r = outrun(&[
        "report",
        resumed.to_str().unwrap(),
        sim.to_str().unwrap(),
        "--target-error",
        "0.5",
        "--target-loss",
        "1e9",
        "--target-accuracy",
        "0.9",
    ]);
    assert_eq!(r.code, Some(0), "{}", r.stderr);
    let rows: Vec<&str> = r.stdout.lines().filter(|l| l.starts_with("| whole")).collect();
    assert_eq!(rows.len(), 2, "{}", r.stdout);
    assert!(rows.iter().any(|l| l.starts_with("| whole [resumed at iteration 4]")), "{}", r.stdout);
    assert!(rows.iter().any(|l| l.starts_with("| whole [simulated]")), "{}", r.stdout);
    assert!(
        r.stdout.contains("time to error ≤ 5e-1 (s) | iterations to it | speedup to it | time to test accuracy ≥ 90.0 % (s) | iterations to it | speedup to it | time to loss ≤ 1e9 (s) | iterations to it |"),
        "{}",
        r.stdout
    );
    let resumed_row = rows.iter().find(|l| l.contains("[resumed")).unwrap();
    let cells: Vec<&str> = resumed_row.split('|').map(str::trim).collect();
    // no test set: n/a; the loss target is reached at the run's first iteration: 1 iteration in
    let acc = cells.iter().position(|&c| c == "n/a (no test set)").unwrap_or_else(|| panic!("{resumed_row}"));
    assert_eq!((cells[acc + 1], cells[acc + 2], cells[acc + 4]), ("-", "-", "1"), "{resumed_row}");
    let bad = outrun(&["report", resumed.to_str().unwrap(), "--target-accuracy", "90"]);
    assert_eq!(bad.code, Some(2));
    assert!(bad.stderr.contains("--target-accuracy 90: must be a fraction in (0, 1]"), "{}", bad.stderr);
}

/// `ignore` estimates the gradient from the workers that answered: its line and the report say
/// "an estimate" with the mean of `coverage` (the test's own mean over iterations.csv), never an
/// "exact 0/12"; the loss is the mean per sample.
#[test]
fn an_ignore_run_reports_its_coverage_not_exact() {
    let sets = ["run.name=ign", "scheme.kind=ignore", "scheme.s=1"];
    let (run, dir, _, _) = train("rep-ignore", &CFG, &sets);
    assert_eq!(run.code, Some(0), "{}", run.stderr);
    let rows = iterations(&dir);
    let mean: f64 = rows.iter().map(|r| r["coverage"].parse::<f64>().unwrap()).sum::<f64>() / rows.len() as f64;
    assert!((0.75 - 1e-9..1.0).contains(&mean), "4 workers, s = 1: coverage {mean}");
    let line = run.stdout.lines().find(|l| l.contains("finished 12 iterations")).expect("the run's line");
    assert!(line.contains(&format!("an estimate by design, mean coverage {:.1} %", 100.0 * mean)), "{line}");
    assert!(!line.contains("exact"), "{line}");
    assert!((summary(&dir)["mean_coverage"].as_f64().unwrap() - mean).abs() < 1e-6);
    let out = tempdir("report-ignore");
    let r = outrun(&["report", dir.to_str().unwrap(), "--out", out.to_str().unwrap()]);
    assert_eq!(r.code, Some(0), "{}", r.stderr);
    let md = std::fs::read_to_string(out.join("report.md")).unwrap();
    assert!(md.contains(&format!("| n/a (estimate, coverage {:.0} %) |", 100.0 * mean)), "{md}");
}
