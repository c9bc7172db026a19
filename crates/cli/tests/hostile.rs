//! The promises a second hostile sweep found broken, kept: special files are refused before
//! they are opened (a FIFO used to hang `check`, the launcher and every rank), `outrun check`
//! reads every input a run would refuse, a resumed sweep re-runs a run whose summary does not
//! read, an absurd simulation is refused, paths in a config are relative to the config (and a
//! sweep finds its launcher from any directory), and the small ones: a long `run.name`, an
//! unknown `--vary` key. Each case: one line naming what is wrong.

mod common;

use std::path::{Path, PathBuf};
use std::process::Command;
use std::time::Duration;

use common::*;

/// A FIFO at `path` (opening it for reading would wait for a writer).
fn fifo(path: &Path) {
    let c = std::ffi::CString::new(path.to_str().unwrap()).unwrap();
    // SAFETY: mkfifo(3) on a path in the test's own temporary directory
    assert_eq!(unsafe { libc::mkfifo(c.as_ptr(), 0o600) }, 0, "mkfifo {}", path.display());
}

/// `outrun ARGS` from directory `cwd`.
fn outrun_in(cwd: &Path, args: &[&str]) -> Run {
    let mut cmd = Command::new(bin());
    cmd.current_dir(cwd).args(args);
    run_with_timeout(cmd, Duration::from_secs(60))
}

/// Exit 2 at once (no read blocked), one line, containing each of `want`.
fn assert_refused(r: &Run, want: &[&str], what: &str) {
    assert_eq!(r.code, Some(2), "{what}: {}", r.stderr);
    assert!(r.elapsed < Duration::from_secs(10), "{what}: took {:?}", r.elapsed);
    assert_eq!(r.stderr.trim().lines().count(), 1, "{what}: one line:\n{}", r.stderr);
    for w in want {
        assert!(r.stderr.contains(w), "{what}: `{w}` in {}", r.stderr);
    }
}

const GD: &str = "[run]\nname='h'\niterations=3\n[data]\nkind='libsvm'\npath='train.libsvm'\n[model]\nloss='logistic'\nlr=0.1\n[scheme]\nkind='umw'\nworkers=2\n";
const MATVEC: &str = "[run]\nname='m'\niterations=2\n[job]\nkind='matvec'\n[matrix]\nrows=6\ncols=6\n[scheme]\nkind='uniform-uncoded'\nworkers=2\n";
const PAGERANK: &str = "[run]\nname='p'\niterations=2\n[job]\nkind='pagerank'\n[graph]\npath='g.txt'\n[scheme]\nkind='uncoded-pagerank'\nservers=2\nr=1\n";

#[test]
fn special_files_are_refused_before_they_are_opened() {
    let dir = tempdir("hostile-fifo");
    std::fs::write(dir.join("train.libsvm"), "1 1:0.5 2:1\n0 1:1 2:0.25\n1 1:2 2:1\n0 2:3\n").unwrap();
    for name in ["f.toml", "data.fifo", "test.fifo", "m.fifo", "x.fifo", "g.fifo", "w.fifo", "s.fifo"] {
        fifo(&dir.join(name));
    }
    let gd = dir.join("gd.toml");
    std::fs::write(&gd, GD).unwrap();
    let mv = dir.join("mv.toml");
    std::fs::write(&mv, MATVEC).unwrap();
    let pr = dir.join("pr.toml");
    std::fs::write(&pr, PAGERANK).unwrap();
    let (gd, mv, pr) = (gd.to_str().unwrap(), mv.to_str().unwrap(), pr.to_str().unwrap());
    let straggle = [
        "--set",
        "stragglers.model=shifted-exp",
        "--set",
        "stragglers.file=w.fifo",
        "--set",
        "timing.compute=modelled",
    ];
    let cases: Vec<(Vec<&str>, Vec<&str>)> = vec![
        (vec!["check", "f.toml"], vec!["f.toml", "not a regular file (a FIFO)"]),
        (vec!["check", gd, "--set", "data.path=data.fifo"], vec!["data.path", "data.fifo", "a FIFO"]),
        (vec!["check", gd, "--set", "data.test_path=test.fifo"], vec!["data.test_path", "test.fifo", "a FIFO"]),
        (vec!["check", gd, "--set", "data.path=."], vec!["data.path", "a directory"]),
        (
            vec!["check", mv, "--set", "matrix.rows=", "--set", "matrix.cols=", "--set", "matrix.path=m.fifo"],
            vec!["matrix.path", "a FIFO"],
        ),
        (vec!["check", mv, "--set", "vector.path=x.fifo"], vec!["vector.path", "a FIFO"]),
        (vec!["check", pr, "--set", "graph.path=g.fifo"], vec!["g.fifo", "a FIFO"]),
        ([vec!["check", gd], straggle.to_vec()].concat(), vec!["stragglers.file", "a FIFO"]),
        (vec!["sweep", "s.fifo", "--dry-run"], vec!["s.fifo", "a FIFO"]),
        (vec!["pagerank-load", "--graph", "g.fifo", "--servers", "2"], vec!["g.fifo", "a FIFO"]),
        (vec!["tune", "f.toml", "--vary", "scheme.s=0..1"], vec!["f.toml", "a FIFO"]),
    ];
    for (args, want) in cases {
        assert_refused(&outrun_in(&dir, &args), &want, &args.join(" "));
    }
    let runs: Vec<_> =
        std::fs::read_dir(dir.join("runs")).map(|d| d.flatten().map(|e| e.path()).collect()).unwrap_or_default();
    assert!(runs.is_empty(), "a refused simulation leaves no run directory: {runs:?}");
}

/// A value quoted in an error keeps the error one line (a newline in a config string is shown
/// escaped), and a sweep's launcher that is no command on PATH is refused before any run.
#[test]
fn refusals_stay_one_line_and_a_sweep_checks_its_launcher() {
    let dir = tempdir("hostile-line");
    std::fs::write(dir.join("gd.toml"), MATVEC).unwrap();
    std::fs::write(dir.join("s.toml"), "base = 'gd.toml'\nlauncher = ['no-such-launcher-here']\n").unwrap();
    let cases: Vec<(Vec<&str>, Vec<&str>)> = vec![
        (
            vec!["check", "gd.toml", "--set", "scheme.kind=\"uniform\ncoded\""],
            vec!["scheme.kind", "\"uniform\\ncoded\""],
        ),
        (vec!["check", "gd.toml", "--set", "run.name=\"a\rb\""], vec!["run.name", "a\\rb"]),
        (vec!["sweep", "s.toml", "--dry-run"], vec!["`no-such-launcher-here` is not a command on PATH"]),
    ];
    for (args, want) in cases {
        assert_refused(&outrun_in(&dir, &args), &want, &args.join(" "));
    }
}

#[test]
fn check_reads_every_input_a_run_would_refuse() {
    let dir = tempdir("hostile-check");
    let mv = dir.join("mv.toml");
    std::fs::write(&mv, MATVEC).unwrap();
    std::fs::write(dir.join("short.txt"), "1\n2\n3\n").unwrap();
    std::fs::write(dir.join("nan.txt"), "1\n2\nnan\n4\n5\n6\n").unwrap();
    std::fs::write(dir.join("wide.mtx"), "%%MatrixMarket matrix array real general\n2 3\n1\n2\n3\n4\n5\n6\n").unwrap();
    let mv = mv.to_str().unwrap();
    let cases: Vec<(Vec<&str>, Vec<&str>)> = vec![
        (
            vec!["check", mv, "--set", "vector.path=short.txt"],
            vec!["short.txt:3", "only 3 values; the matrix has 6 columns"],
        ),
        (vec!["check", mv, "--set", "vector.path=nan.txt"], vec!["nan.txt:3", "`nan` is not a finite number"]),
        (
            vec![
                "check",
                mv,
                "--set",
                "matrix.rows=",
                "--set",
                "matrix.cols=",
                "--set",
                "matrix.path=wide.mtx",
                "--set",
                "job.power=true",
            ],
            vec!["job.power", "square", "2 × 3"],
        ),
    ];
    for (args, want) in cases {
        assert_refused(&outrun_in(&dir, &args), &want, &args.join(" "));
    }
    // the same bad vector through mpirun directly (no check first): one line for the run
    let _lock = mpi_lock();
    let short = dir.join("short.txt");
    let r = mpirun(
        3,
        Path::new(mv),
        &[format!("vector.path={}", short.display()), format!("run.out_dir={}", dir.join("runs").display())],
        Duration::from_secs(60),
    );
    assert_eq!(r.code, Some(2), "{}", r.stderr);
    assert_eq!(r.stderr.trim().lines().count(), 1, "one line for the run:\n{}", r.stderr);
    assert!(r.stderr.contains("only 3 values"), "{}", r.stderr);
}

#[test]
fn absurd_simulations_and_small_mistakes_are_refused_in_one_line() {
    let dir = tempdir("hostile-small");
    let cfg = write_config(&dir, "[run]\nname='s'\niterations=100\n[data]\nkind='linear-synthetic'\nsamples=100\nfeatures=4\n[model]\nloss='least-squares'\nlr=0.1\n[scheme]\nkind='gc-cyclic'\nworkers=4\ns=1\n");
    let c = cfg.to_str().unwrap();
    let long = format!("run.name={}", "n".repeat(300));
    let cases: Vec<(Vec<&str>, Vec<&str>)> = vec![
        (
            vec!["simulate", c, "--trials", "1000000000"],
            vec!["--trials 1000000000", "iteration times", "use fewer trials"],
        ),
        // a day of work, seen from the pace of its first 5 s
        (
            vec!["tune", c, "--vary", "scheme.s=0..1", "--set", "run.iterations=100000000"],
            vec!["--vary scheme.s: 2 values × 100 trials", "per iteration", "more than a day"],
        ),
        // terabytes of logs, seen from the first 1024 iterations' (its directory is removed)
        (
            vec!["simulate", c, "--trials", "1", "--set", "run.iterations=100000000", "--set", "scheme.workers=99"],
            vec!["the run directory would grow by", "per iteration", "free on its disk"],
        ),
        (vec!["codedfedl-load", "--clients", "1001"], vec!["--clients = 1001: 1 to 1000 clients"]),
        // numbers past which the formulas printed inf, NaN and 300-digit times with exit 0
        (vec!["codedfedl-load", "--points", "1e308"], vec!["--points = 1e308", "at most 10⁹"]),
        (vec!["theory", "agc-aet", "--tcp", "1e308"], vec!["--tcp and --tcm must be times from 0 to 10⁶"]),
        (vec!["check", c, "--set", &long], vec!["run.name", "300 characters", "at most 200"]),
        (vec!["tune", c, "--vary", "nosuch.key=1..2"], vec!["--vary nosuch.key", "nosuch: unknown section"]),
    ];
    for (args, want) in cases {
        assert_refused(&outrun_in(&dir, &args), &want, &args.join(" "));
    }
    let runs: Vec<_> =
        std::fs::read_dir(dir.join("runs")).map(|d| d.flatten().map(|e| e.path()).collect()).unwrap_or_default();
    assert!(runs.is_empty(), "a refused simulation leaves no run directory: {runs:?}");
}

#[test]
fn paths_in_a_config_are_relative_to_it_and_a_sweep_finds_its_launcher_anywhere() {
    let dir = tempdir("hostile-paths");
    let exp = dir.join("experiment");
    std::fs::create_dir(&exp).unwrap();
    std::fs::write(exp.join("train.libsvm"), "1 1:0.5 2:1\n0 1:1 2:0.25\n1 1:2 2:1\n0 2:3\n").unwrap();
    std::fs::write(exp.join("gd.toml"), GD).unwrap();
    let elsewhere = dir.join("elsewhere");
    std::fs::create_dir(&elsewhere).unwrap();
    // from another directory: the config's data.path is found beside it
    let ok = outrun_in(&elsewhere, &["check", "../experiment/gd.toml"]);
    assert_eq!(ok.code, Some(0), "{}", ok.stderr);
    // the resolved config records it absolute
    let shown = outrun_in(&elsewhere, &["config", "../experiment/gd.toml"]);
    let want = format!("path = \"{}\"", exp.join("train.libsvm").display());
    assert!(shown.stdout.contains(&want), "{want} in\n{}", shown.stdout);
    // a path on the command line is relative to the current directory, and named absolute
    let here = outrun_in(&elsewhere, &["check", "../experiment/gd.toml", "--set", "data.path=train.libsvm"]);
    let absolute = format!("cannot read `{}`", elsewhere.join("train.libsvm").display());
    assert_refused(&here, &["data.path", &absolute, "No such file"], "--set data.path");
    // and recorded absolute and plain (no `..`: one file, one name), so the resolved config
    // reads the same files from anywhere
    let set = format!("data.path={}", Path::new("..").join("experiment").join("train.libsvm").display());
    let shown = outrun_in(&elsewhere, &["config", "../experiment/gd.toml", "--set", &set]);
    let plain = exp.join("train.libsvm").canonicalize().unwrap();
    assert!(shown.stdout.contains(&format!("path = \"{}\"", plain.display())), "{}", shown.stdout);
    std::fs::write(dir.join("resolved.toml"), &shown.stdout).unwrap();
    let again = outrun_in(&dir, &["check", "resolved.toml"]);
    assert_eq!(again.code, Some(0), "the resolved config from another directory: {}", again.stderr);
    // a sweep run from another directory finds its base beside it and its launcher in the
    // checkout the binary was built in
    std::fs::write(exp.join("sweep.toml"), "base = 'gd.toml'\n[[axis]]\nkey = 'run.seed'\nvalues = [1, 2]\n").unwrap();
    let dry = outrun_in(&elsewhere, &["sweep", "../experiment/sweep.toml", "--dry-run"]);
    assert_eq!(dry.code, Some(0), "{}", dry.stderr);
    let launcher = PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../../launch/local.sh").canonicalize().unwrap();
    for line in dry.stdout.lines() {
        let program = line.split('"').nth(1).unwrap();
        assert_eq!(Path::new(program).canonicalize().unwrap(), launcher, "the checkout's launcher: {line}");
    }
}

#[test]
fn a_resumed_sweep_reruns_a_run_whose_summary_does_not_read() {
    let _lock = mpi_lock();
    let dir = tempdir("hostile-resume");
    std::fs::write(dir.join("base.toml"), "[run]\nname='r'\niterations=3\ndeadline=10.0\n[data]\nkind='linear-synthetic'\nsamples=200\nfeatures=4\n[model]\nloss='least-squares'\nlr=0.1\n[scheme]\nkind='gc-cyclic'\nworkers=3\ns=1\n").unwrap();
    let file = dir.join("sweep.toml");
    std::fs::write(&file, "base = 'base.toml'\n[[axis]]\nkey = 'run.seed'\nvalues = [1, 2]\n").unwrap();
    let out = dir.join("out");
    let sweep = || {
        let mut c = Command::new(bin());
        c.env("OUTRUN_BIN", bin()).arg("sweep").arg(&file).arg("--out").arg(&out);
        run_with_timeout(c, Duration::from_secs(120))
    };
    let first = sweep();
    assert_eq!(first.code, Some(0), "{}", first.stderr);
    // truncate one finished run's summary
    let runs: Vec<PathBuf> = std::fs::read_dir(out.join("runs")).unwrap().flatten().map(|e| e.path()).collect();
    assert_eq!(runs.len(), 2);
    let bad = &runs[0];
    let text = std::fs::read_to_string(bad.join("summary.json")).unwrap();
    std::fs::write(bad.join("summary.json"), &text[..text.len() / 2]).unwrap();
    let again = sweep();
    assert_eq!(again.code, Some(0), "{}", again.stderr);
    let named: Vec<&str> =
        again.stderr.lines().filter(|l| l.contains("summary.json") && l.contains("malformed summary")).collect();
    assert_eq!(named.len(), 1, "the unreadable summary is named once:\n{}", again.stderr);
    assert!(again.stderr.contains("1 run in") && again.stderr.contains("1 already done"), "{}", again.stderr);
    let report = std::fs::read_to_string(out.join("report.md")).unwrap();
    assert!(!report.contains("NaN"), "{report}");
    assert!(out.join("incomplete").join(bad.file_name().unwrap()).is_dir(), "the bad run is kept aside");
}

/// A test that times out ends what it started, by the process tree — a process of the same
/// program that it did not start (a user's experiment) is left alone.
#[test]
fn a_test_ends_only_the_processes_it_started() {
    let bystander = Command::new("sleep").arg("300").spawn().unwrap();
    let mut ours = Command::new("sh").args(["-c", "sleep 300 & sleep 300 & wait"]).spawn().unwrap();
    let t0 = std::time::Instant::now();
    while descendants(ours.id()).len() < 2 {
        assert!(t0.elapsed() < Duration::from_secs(10), "the children did not start");
        std::thread::sleep(Duration::from_millis(20));
    }
    let children = descendants(ours.id());
    kill_tree(&mut ours);
    std::thread::sleep(Duration::from_millis(200));
    for pid in children {
        let state = std::fs::read_to_string(format!("/proc/{pid}/stat")).unwrap_or_default();
        assert!(state.is_empty() || state.contains(") Z "), "child {pid} still running: {state}");
    }
    let mut bystander = bystander;
    assert!(bystander.try_wait().unwrap().is_none(), "the bystander was killed");
    bystander.kill().unwrap();
    bystander.wait().unwrap();
}
