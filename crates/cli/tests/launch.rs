//! The launcher (`launch/local.sh`) keeps the promises of a job that always ends: a default
//! bound derived from the config (or OUTRUN_TIMEOUT), Ctrl-C stopping the MPI job and the script,
//! and a rank killed by a signal reported in one line, also in the run directory.

mod common;

use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

use common::*;

const LONG: &str = "[run]\nname='long'\niterations=1000000\ndeadline=20.0\n[data]\nkind='linear-synthetic'\nsamples=600\nfeatures=5\n[model]\nloss='least-squares'\nlr=0.1\n[scheme]\nkind='gc-cyclic'\nworkers=3\ns=1\n[timing]\ncompute='modelled'\na=1e-5\n";

fn launcher() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../../launch/local.sh")
}

/// Rank processes of the job writing into `out` (their argv[0] is the outrun binary).
fn ranks(out: &Path) -> Vec<u32> {
    let o = Command::new("pgrep")
        .args(["-f", &format!("^{} train .*run.out_dir={}", bin(), out.display())])
        .output()
        .unwrap();
    String::from_utf8_lossy(&o.stdout).lines().filter_map(|l| l.trim().parse().ok()).collect()
}

fn start(out: &Path, cfg: &Path, env: &[(&str, &str)]) -> std::process::Child {
    let mut cmd = Command::new("setsid");
    cmd.arg(launcher())
        .arg(cfg)
        .args(["--set", &format!("run.out_dir={}", out.display())])
        .env("OUTRUN_BIN", bin())
        .stdout(Stdio::null())
        .stderr(Stdio::piped());
    for (k, v) in env {
        cmd.env(k, v);
    }
    // A launcher started from a terminal has the default SIGINT disposition. A test binary run
    // by a non-interactive shell in the background (`make test &`) inherits SIGINT and SIGQUIT
    // ignored, and a shell cannot trap a signal ignored on entry: the Ctrl-C test would then
    // deliver nothing (measured: the job ran on until the test killed the launcher).
    use std::os::unix::process::CommandExt;
    // SAFETY: only async-signal-safe calls (signal(2)) between fork and exec
    unsafe {
        cmd.pre_exec(|| {
            libc::signal(libc::SIGINT, libc::SIG_DFL);
            libc::signal(libc::SIGQUIT, libc::SIG_DFL);
            Ok(())
        });
    }
    cmd.spawn().unwrap()
}

/// Waits until the job's ranks run, at most 30 s.
fn wait_for_ranks(out: &Path, n: usize) {
    let t0 = Instant::now();
    while ranks(out).len() < n {
        assert!(t0.elapsed() < Duration::from_secs(30), "the ranks did not start");
        std::thread::sleep(Duration::from_millis(100));
    }
    std::thread::sleep(Duration::from_millis(500));
}

/// Waits for the launcher to end, at most 60 s; returns its exit code.
fn wait_for(child: &mut std::process::Child, out: &Path) -> Option<i32> {
    let t0 = Instant::now();
    loop {
        if let Some(status) = child.try_wait().unwrap() {
            return status.code();
        }
        if t0.elapsed() > Duration::from_secs(60) {
            // the launcher, mpirun and the ranks: everything it started, so a failure leaves
            // nothing running
            kill_tree(child);
            panic!("the launcher did not end within 60 s (its job {})", out.display());
        }
        std::thread::sleep(Duration::from_millis(50));
    }
}

fn finish(mut child: std::process::Child, out: &Path) -> (Option<i32>, String) {
    let code = wait_for(&mut child, out);
    let mut err = String::new();
    std::io::Read::read_to_string(child.stderr.as_mut().unwrap(), &mut err).unwrap();
    (code, err)
}

#[test]
fn default_bound_follows_the_config() {
    let dir = tempdir("bound");
    let cfg = write_config(&dir, LONG);
    let r = outrun(&[
        "plan",
        cfg.to_str().unwrap(),
        "--job-bound",
        "--set",
        "run.iterations=50",
        "--set",
        "run.deadline=2",
    ]);
    assert_eq!((r.code, r.stdout.trim()), (Some(0), "220"), "120 s + 50 × 2 s");
}

#[test]
fn a_job_past_its_bound_is_stopped_with_one_line() {
    let _lock = mpi_lock();
    let dir = tempdir("bound-run");
    let cfg = write_config(&dir, LONG);
    let out = dir.join("runs");
    let (code, err) = finish(start(&out, &cfg, &[("OUTRUN_TIMEOUT", "4")]), &out);
    assert_eq!(code, Some(124), "{err}");
    assert_eq!(err.trim().lines().count(), 1, "{err}");
    assert!(err.contains("bound of 4 s") && err.contains("OUTRUN_TIMEOUT"), "{err}");
    assert!(ranks(&out).is_empty(), "ranks left running");
}

/// A run's lines reach the launcher's stderr as rank 0 writes them, not when the job ends, also
/// where stderr is not a terminal (a batch job's log): the filter that reduces mpirun's banners
/// was mawk, which reads a pipe in blocks, and held a long run's progress lines to the end.
#[test]
fn a_long_runs_progress_lines_pass_as_they_come() {
    use std::io::{BufRead, BufReader};
    let _lock = mpi_lock();
    let dir = tempdir("live-lines");
    let cfg = write_config(&dir, LONG);
    let out = dir.join("runs");
    let bound = 15;
    let mut child = start(&out, &cfg, &[("OUTRUN_TIMEOUT", &bound.to_string())]);
    let (tx, rx) = std::sync::mpsc::channel();
    let err = child.stderr.take().unwrap();
    let reader = std::thread::spawn(move || {
        for line in BufReader::new(err).lines().map_while(Result::ok) {
            let _ = tx.send((Instant::now(), line));
        }
    });
    let code = wait_for(&mut child, &out);
    let ended = Instant::now();
    reader.join().unwrap();
    let lines: Vec<(Instant, String)> = rx.try_iter().collect();
    let all: Vec<&str> = lines.iter().map(|(_, l)| l.as_str()).collect();
    assert_eq!(code, Some(124), "the job runs until its bound: {all:?}");
    // rank 0 writes a progress line every 5 s of the loop
    let (at, first) = lines.iter().find(|(_, l)| l.starts_with("outrun: iteration")).expect("a progress line");
    let before_end = ended.duration_since(*at);
    assert!(before_end > Duration::from_secs(3), "{first:?} came {before_end:?} before the launcher ended: {all:?}");
    assert!(ranks(&out).is_empty(), "ranks left running");
}

#[test]
fn ctrl_c_stops_the_job_and_the_launcher() {
    let _lock = mpi_lock();
    let dir = tempdir("sigint");
    let cfg = write_config(&dir, LONG);
    let out = dir.join("runs");
    let child = start(&out, &cfg, &[]);
    wait_for_ranks(&out, 4);
    // Ctrl-C: SIGINT to the terminal's foreground process group (the launcher runs in its own
    // session here, so its group is its pid); the background job ignores SIGINT, so the
    // launcher must stop it
    assert!(Command::new("kill").args(["-INT", "--", &format!("-{}", child.id())]).status().unwrap().success());
    let (code, err) = finish(child, &out);
    assert_eq!(code, Some(130), "{err}");
    assert!(err.contains("interrupted; the MPI job was stopped"), "{err}");
    std::thread::sleep(Duration::from_millis(500));
    assert!(ranks(&out).is_empty(), "ranks left running after Ctrl-C");
}

#[test]
fn a_rank_killed_by_a_signal_is_named_in_one_line_and_in_the_run_directory() {
    let _lock = mpi_lock();
    let dir = tempdir("sigkill");
    let cfg = write_config(&dir, LONG);
    let out = dir.join("runs");
    let child = start(&out, &cfg, &[]);
    wait_for_ranks(&out, 4);
    let victim = *ranks(&out).last().unwrap();
    assert!(Command::new("kill").args(["-9", &victim.to_string()]).status().unwrap().success());
    let (code, err) = finish(child, &out);
    assert_eq!(code, Some(137), "{err}");
    let lines: Vec<&str> = err.lines().filter(|l| l.contains("died from")).collect();
    assert_eq!(lines.len(), 1, "{err}");
    assert!(lines[0].starts_with("error: rank ") && lines[0].contains("signal 9 (Killed)"), "{err}");
    assert!(!err.contains("-------"), "mpirun's banners leaked: {err}");
    let run = run_dir(&out);
    let log = std::fs::read_to_string(run.join("launch.log")).expect("launch.log in the run directory");
    assert!(log.contains("died from signal 9"), "{log}");
    assert!(ranks(&out).is_empty(), "ranks left running");
}

/// A rank that ends the job without a word of its own — a Python model calling `os._exit` (with
/// code 1, and with code 0: it exits without finishing MPI) — is named in one line from mpirun's
/// report, and SIGINT sent to mpirun itself (not the launcher) ends with one line too: no
/// non-zero exit without a line on stderr (both were empty, exit 1).
#[test]
fn a_rank_or_mpirun_ending_without_a_word_is_named_in_one_line() {
    let dir = tempdir("silent-exit");
    let least = PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../../examples/python/least_squares.py");
    std::fs::copy(&least, dir.join("least_squares.py")).unwrap();
    for (code, want) in
        [(1, "error: rank 3 exited with code 1 without a word; the job was stopped"), (0, "error: rank 3 (host ")]
    {
        let _lock = mpi_lock();
        let module = dir.join(format!("exits{code}.py"));
        std::fs::write(
            &module,
            format!("import os\nfrom least_squares import init, grad as _grad\ncalls = 0\ndef grad(theta, X, y, w):\n    global calls\n    calls += 1\n    if os.environ.get('OMPI_COMM_WORLD_RANK') == '3' and calls == 3:\n        os._exit({code})\n    return _grad(theta, X, y, w)\n"),
        )
        .unwrap();
        let text = format!("[run]\nname='silent'\niterations=20\n[job]\nkind='python'\nmodule='{}'\n[data]\nkind='linear-synthetic'\nsamples=400\nfeatures=5\n[model]\nloss='least-squares'\nlr=0.1\n[scheme]\nkind='umw'\nworkers=4\n", module.display());
        let cfg = write_config(&dir, &text);
        let out = dir.join(format!("runs{code}"));
        let (status, err) = finish(start(&out, &cfg, &[("VIRTUAL_ENV", &python_env())]), &out);
        assert!(status.is_some_and(|c| c != 0), "exit {code}: {status:?}: {err}");
        let lines = common::said(&err);
        assert_eq!(lines.len(), 1, "exit {code}: {err}");
        assert!(lines[0].starts_with(want), "exit {code}: {err}");
        if code == 0 {
            assert!(lines[0].contains("exited in the middle of the run without finishing MPI"), "{err}");
        }
        assert!(ranks(&out).is_empty(), "ranks left running");
    }
    // SIGINT to mpirun itself (a descendant of the launcher this test started)
    let _lock = mpi_lock();
    let cfg = write_config(&dir, LONG);
    let out = dir.join("runs-int");
    let child = start(&out, &cfg, &[]);
    wait_for_ranks(&out, 4);
    let mpirun = descendants(child.id())
        .into_iter()
        .find(|&p| std::fs::read_to_string(format!("/proc/{p}/comm")).is_ok_and(|c| c.trim() == "mpirun"))
        .expect("the launcher's mpirun");
    assert!(Command::new("kill").args(["-INT", &mpirun.to_string()]).status().unwrap().success());
    let (status, err) = finish(child, &out);
    assert!(status.is_some_and(|c| c != 0), "{status:?}: {err}");
    let lines = common::said(&err);
    assert_eq!(lines.len(), 1, "{err}");
    assert!(lines[0].contains("no rank said why") || lines[0].starts_with("error: rank"), "{err}");
    std::thread::sleep(Duration::from_millis(500));
    assert!(ranks(&out).is_empty(), "ranks left running after mpirun's SIGINT");
}

#[test]
fn mpirun_refusing_the_job_is_named_in_one_line_of_its_own_words() {
    // mpirun refuses before any rank starts (here: two mapping policies; in an emulated cluster
    // whose environment chose a launcher of one host, "not enough slots"); its banner was
    // dropped with the others and the launcher said only that no rank said why
    let _lock = mpi_lock();
    let dir = tempdir("mpirun-refuses");
    let cfg = write_config(&dir, LONG);
    let out = dir.join("runs");
    let flags = [("OUTRUN_MPIRUN_FLAGS", "--host localhost:1 --nooversubscribe")];
    let (status, err) = finish(start(&out, &cfg, &flags), &out);
    assert!(status.is_some_and(|c| c != 0), "{status:?}: {err}");
    let lines = common::said(&err);
    assert_eq!(lines.len(), 1, "{err}");
    assert!(lines[0].starts_with("launch: mpirun: ") && lines[0].contains("policy"), "{err}");
    assert!(ranks(&out).is_empty(), "ranks left running");
}

/// Progress through the launcher: a line every OUTRUN_PROGRESS_EVERY seconds when stderr is not
/// a terminal, with the pace, the time left and the rank waited for most (here the slow one);
/// nothing with --quiet, which the launcher hands to `outrun train` alone.
#[test]
fn progress_names_the_pace_and_the_rank_waited_for_and_quiet_silences_it() {
    let dir = tempdir("progress");
    let cfg = write_config(
        &dir,
        "[run]\nname='prog'\niterations=40\n[data]\nkind='linear-synthetic'\nsamples=800\nfeatures=5\n[model]\nloss='least-squares'\nlr=0.1\n[scheme]\nkind='umw'\nworkers=4\n[stragglers]\nmodel='fixed'\nworkers=[2]\nfactor=3.0\n[timing]\ncompute='modelled'\na=2e-5\n",
    );
    let run = |extra: &[&str]| {
        let _lock = mpi_lock();
        let mut cmd = Command::new(launcher());
        cmd.arg(&cfg)
            .args(["--set", &format!("run.out_dir={}", dir.join("runs").display())])
            .args(extra)
            .env("OUTRUN_BIN", bin())
            .env("OUTRUN_PROGRESS_EVERY", "0.1");
        run_with_timeout(cmd, Duration::from_secs(120))
    };
    let loud = run(&[]);
    assert_eq!(loud.code, Some(0), "{}", loud.stderr);
    let lines: Vec<&str> = loud.stderr.lines().filter(|l| l.starts_with("outrun: iteration ")).collect();
    assert!(lines.len() >= 2, "{}", loud.stderr);
    let last = lines.last().unwrap();
    assert!(last.contains(" it/s, ") && last.contains(" left, ") && last.contains(" ms/it, loss "), "{last}");
    assert!(last.contains("waiting most on rank 2: its result came last in "), "{last}");
    let quiet = run(&["--quiet"]);
    assert_eq!(quiet.code, Some(0), "{}", quiet.stderr);
    assert!(!quiet.stderr.contains("outrun: iteration"), "{}", quiet.stderr);
    assert!(quiet.stdout.contains("umw finished 40 iterations"), "{}", quiet.stdout);
    // from a terminal (script(1) gives the launcher one): a bar, redrawn in place, relayed by
    // mpirun from rank 0's stdout
    let _lock = mpi_lock();
    let line = format!(
        "OUTRUN_BIN={} {} {} --set run.out_dir={}",
        bin(),
        launcher().display(),
        cfg.display(),
        dir.join("runs").display()
    );
    let mut cmd = Command::new("script");
    cmd.args(["-qec", &line, "/dev/null"]);
    let tty = run_with_timeout(cmd, Duration::from_secs(120));
    assert_eq!(tty.code, Some(0), "{}{}", tty.stdout, tty.stderr);
    let bar = tty.stdout.split(['\r', '\n']).find(|l| l.contains("/40 · ") && l.contains(" it/s, "));
    assert!(bar.is_some_and(|b| b.contains("slowest rank 2")), "{}", tty.stdout);
    assert!(tty.stdout.contains("\x1b[2K"), "the bar is cleared in place");
}

/// A network trained by mini-batch SGD with Nesterov momentum and a step decay, a checkpoint
/// every 10 iterations; each iteration takes ≈ 25 ms of modelled compute.
const RESUMABLE: &str = "[run]\nname='resumable'\nseed=4\niterations=80\ndeadline=20.0\ncheckpoint_every=10\n\
[data]\nkind='softmax-synthetic'\nsamples=1200\nfeatures=16\nnoise=0.5\n\
[model]\nloss='softmax'\nclasses=4\nhidden=[12]\nlr=0.2\nbatch=96\nmomentum=0.9\nnesterov=true\ndecay_at=[50]\n\
[scheme]\nkind='gc-cyclic'\nworkers=4\ns=1\n\
[stragglers]\nmodel='fixed'\nworkers=[2]\nfactor=10.0\n\
[timing]\ncompute='modelled'\na=3e-5\n";

/// The one run directory below `out`, once it exists.
fn only_run_dir(out: &Path) -> Option<PathBuf> {
    std::fs::read_dir(out).ok()?.flatten().map(|e| e.path()).find(|p| p.is_dir())
}

/// A run stopped by SIGKILL (launcher, mpirun and every rank) after a checkpoint and resumed
/// from it with `--resume` ends with the uninterrupted run's theta.txt, bit for bit.
#[test]
fn a_killed_run_resumed_from_its_checkpoint_ends_bit_equal() {
    let _lock = mpi_lock();
    let dir = tempdir("resume");
    let cfg = write_config(&dir, RESUMABLE);
    let whole = dir.join("whole");
    let (code, err) = finish(start(&whole, &cfg, &[]), &whole);
    assert_eq!(code, Some(0), "{err}");
    let want = std::fs::read(only_run_dir(&whole).unwrap().join("theta.txt")).unwrap();

    let killed = dir.join("killed");
    let mut child = start(&killed, &cfg, &[]);
    let t0 = Instant::now();
    let run = loop {
        let ck = only_run_dir(&killed).and_then(|d| outrun_runlog::Checkpoint::read(&d).ok().map(|c| (d, c)));
        if let Some((d, c)) = ck.filter(|(_, c)| c.iteration >= 20) {
            assert!(c.iteration < 80, "the run ended before it could be killed");
            break d;
        }
        assert!(t0.elapsed() < Duration::from_secs(60), "no checkpoint after iteration 20 within 60 s");
        std::thread::sleep(Duration::from_millis(20));
    };
    kill_tree(&mut child);
    assert!(!run.join("summary.json").exists(), "the killed run did not finish");
    let at = outrun_runlog::Checkpoint::read(&run).expect("a killed run leaves a complete checkpoint").iteration;
    assert!(at.is_multiple_of(10) && (20..80).contains(&at), "checkpoint at {at}");

    let resumed = dir.join("resumed");
    let mut cmd = Command::new(launcher());
    cmd.arg(&cfg)
        .args(["--set", &format!("run.out_dir={}", resumed.display()), "--resume", run.to_str().unwrap(), "--quiet"])
        .env("OUTRUN_BIN", bin());
    let r = run_with_timeout(cmd, Duration::from_secs(60));
    assert_eq!(r.code, Some(0), "{}", r.stderr);
    let rd = only_run_dir(&resumed).unwrap();
    assert_eq!(std::fs::read(rd.join("theta.txt")).unwrap(), want, "resumed at {at}: θ differs from the whole run's");
    let rows = iterations(&rd);
    assert_eq!(rows.len() as u64, 80 - at, "the resumed run runs the iterations left");
    assert_eq!(rows[0]["iteration"], at.to_string());
    eprintln!("killed after the checkpoint of iteration {at}; resumed: theta.txt equal bit for bit");
}

/// `--help` is asked for, so it goes to stdout with exit 0 and names every variable the launcher
/// reads; no arguments at all is a mistake: the usage on stderr, exit 2.
#[test]
fn help_is_on_stdout_and_lists_the_environment() {
    let help = Command::new(launcher()).arg("--help").output().unwrap();
    assert_eq!(help.status.code(), Some(0));
    let out = String::from_utf8_lossy(&help.stdout);
    assert!(help.stderr.is_empty() && out.starts_with("usage: launch/local.sh CONFIG"), "{out}");
    let script = std::fs::read_to_string(launcher()).unwrap()
        + &std::fs::read_to_string(launcher().with_file_name("lib.sh")).unwrap();
    // every OUTRUN_* variable a user may set (OUTRUN_RUN_DIR_FILE and OUTRUN_TERMINAL are the
    // launcher's own, for the ranks; OUTRUN_LAUNCHER its own, for outrun check's messages)
    let mut vars: Vec<&str> = script
        .match_indices("OUTRUN_")
        .map(|(i, _)| &script[i..])
        .map(|s| &s[..s.find(|c: char| !(c.is_ascii_uppercase() || c == '_')).unwrap_or(s.len())])
        .collect();
    vars.sort_unstable();
    vars.dedup();
    for v in vars.iter().filter(|v| !["OUTRUN_RUN_DIR_FILE", "OUTRUN_TERMINAL", "OUTRUN_LAUNCHER"].contains(v)) {
        assert!(out.contains(v), "--help names {v}:\n{out}");
    }
    let none = Command::new(launcher()).output().unwrap();
    assert_eq!(none.status.code(), Some(2));
    assert!(none.stdout.is_empty() && String::from_utf8_lossy(&none.stderr).starts_with("usage:"));
}

/// The same error from several ranks (every worker's `grad` raising on the same batch) is one
/// line and, once the job's output ends, one note naming the other ranks; other lines, and
/// errors that differ in more than the rank, pass as they come.
#[test]
fn the_same_error_from_several_ranks_is_one_line_and_a_note() {
    let dir = tempdir("launch-filter");
    let deaths = dir.join("deaths");
    let lines = "error: grad() on rank 3 raised ValueError: a bad batch (iteration 0)\n\
                 outrun: a progress line\n\
                 error: grad() on rank 5 raised ValueError: a bad batch (iteration 0)\n\
                 error: grad() on rank 2 raised ValueError: another batch (iteration 0)\n\
                 error: grad() on rank 7 raised ValueError: a bad batch (iteration 0)\n";
    let script = format!(". '{}'; filter_mpirun '{}'", launcher().with_file_name("lib.sh").display(), deaths.display());
    let mut child =
        Command::new("bash").args(["-c", &script]).stdin(Stdio::piped()).stdout(Stdio::piped()).spawn().unwrap();
    std::io::Write::write_all(&mut child.stdin.take().unwrap(), lines.as_bytes()).unwrap();
    let out = child.wait_with_output().unwrap();
    assert_eq!(
        String::from_utf8_lossy(&out.stdout),
        "error: grad() on rank 3 raised ValueError: a bad batch (iteration 0)\n\
         outrun: a progress line\n\
         error: grad() on rank 2 raised ValueError: another batch (iteration 0)\n\
         note: ranks 5, 7 said the same (one line shown)\n"
    );
}
