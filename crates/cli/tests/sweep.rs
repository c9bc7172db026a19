//! `outrun sweep`: a three-axis sweep with repetitions through launch/local.sh, interrupted
//! half-way (TERM, as a user's kill or Ctrl-C), then resumed: finished runs are not redone,
//! every run ends up done once, and the report groups the runs by axis.

mod common;

use std::process::Command;
use std::time::{Duration, Instant};

use common::*;

const BASE: &str = "[run]\nname='sw'\niterations=3\ndeadline=10.0\n[data]\nkind='linear-synthetic'\nsamples=400\nfeatures=10\n[model]\nloss='least-squares'\nlr=0.1\n[scheme]\nkind='gc-cyclic'\nworkers=4\ns=1\n";

const SWEEP: &str = "base = 'base.toml'\nrepetitions = 2\n\
[[axis]]\nkey = 'scheme.kind'\nvalues = ['gc-cyclic', 'umw']\n\
[[axis]]\nkey = 'scheme.s'\nvalues = [1, 2]\n\
[[axis]]\nkey = 'run.seed'\nvalues = [1, 2]\n\
[[override]]\nwhen = { 'scheme.kind' = 'umw' }\nset = ['scheme.s=']\n";

fn finished(dir: &std::path::Path) -> Vec<String> {
    let mut v: Vec<String> = std::fs::read_dir(dir.join("runs"))
        .map(|rd| {
            rd.filter_map(|e| e.ok())
                .filter(|e| e.path().join("summary.json").is_file())
                .map(|e| e.file_name().to_string_lossy().into_owned())
                .collect()
        })
        .unwrap_or_default();
    v.sort();
    v
}

fn sweep(file: &std::path::Path, out: &std::path::Path) -> Command {
    let mut c = Command::new(bin());
    c.current_dir(concat!(env!("CARGO_MANIFEST_DIR"), "/../.."))
        .env("OUTRUN_BIN", bin())
        .arg("sweep")
        .arg(file)
        .arg("--out")
        .arg(out);
    c
}

#[test]
fn a_sweep_resumes_after_an_interruption_without_redoing_runs() {
    let _lock = mpi_lock();
    let dir = tempdir("sweep");
    std::fs::write(dir.join("base.toml"), BASE).unwrap();
    let file = dir.join("sweep.toml");
    std::fs::write(&file, SWEEP).unwrap();
    let out = dir.join("out");
    // 2 kinds × 2 s × 2 seeds, but umw has no s: 6 variants × 2 repetitions
    let dry = run_with_timeout(
        {
            let mut c = sweep(&file, &out);
            c.arg("--dry-run");
            c
        },
        Duration::from_secs(30),
    );
    assert_eq!(dry.code, Some(0), "{}", dry.stderr);
    assert_eq!(dry.stdout.lines().count(), 12, "{}", dry.stdout);
    assert!(dry.stderr.contains("6 variants (8 combinations of 3 axes) × 2 repetitions = 12 runs"), "{}", dry.stderr);
    // start, and stop it with TERM once 4 runs are done
    let mut child =
        sweep(&file, &out).stdout(std::process::Stdio::null()).stderr(std::process::Stdio::piped()).spawn().unwrap();
    let t0 = Instant::now();
    while finished(&out).len() < 4 {
        assert!(t0.elapsed() < Duration::from_secs(120), "the sweep made no progress");
        assert!(child.try_wait().unwrap().is_none(), "the sweep ended early");
        std::thread::sleep(Duration::from_millis(100));
    }
    // SAFETY: signalling our own child
    unsafe {
        libc::kill(child.id() as libc::pid_t, libc::SIGTERM);
    }
    let t1 = Instant::now();
    let status = loop {
        if let Some(st) = child.try_wait().unwrap() {
            break st;
        }
        assert!(t1.elapsed() < Duration::from_secs(60), "the interrupted sweep did not end");
        std::thread::sleep(Duration::from_millis(50));
    };
    let mut err = String::new();
    std::io::Read::read_to_string(child.stderr.as_mut().unwrap(), &mut err).unwrap();
    assert_eq!(status.code(), Some(130), "{err}");
    assert!(err.contains("sweep interrupted during") && err.contains("run the same command again to resume"), "{err}");
    let before = finished(&out);
    assert!(before.len() >= 4 && before.len() < 12, "{before:?}");
    // no MPI job of the interrupted sweep is left running (its ranks write into `out`)
    let left = Command::new("pgrep")
        .args(["-f", &format!("{} train .*run.out_dir={}", bin(), out.display())])
        .output()
        .unwrap();
    assert!(left.stdout.is_empty(), "ranks left running: {}", String::from_utf8_lossy(&left.stdout));
    // resume: only the missing runs
    let again = run_with_timeout(sweep(&file, &out), Duration::from_secs(300));
    assert_eq!(again.code, Some(0), "{}", again.stderr);
    assert!(
        again.stderr.contains(&match 12 - before.len() {
            1 => "1 run in".to_string(),
            n => format!("{n} runs in"),
        }) && again.stderr.contains(&format!("{} already done", before.len())),
        "{}",
        again.stderr
    );
    let after = finished(&out);
    assert_eq!(after.len(), 12, "{after:?}");
    for name in &before {
        assert!(after.contains(name), "{name} was redone");
    }
    // one finished run per variant and repetition
    let mut names: Vec<String> = after.iter().map(|d| d.rsplitn(3, '-').last().unwrap().to_string()).collect();
    names.dedup();
    assert_eq!(names.len(), 12, "{names:?}");
    let report = std::fs::read_to_string(out.join("report.md")).unwrap();
    assert!(report.contains("| v00-kind-gc-cyclic_s-1_seed-1 | gc-cyclic | 1 | 1 | 2 |"), "{report}");
    assert!(
        report.contains("### By `scheme.kind`")
            && report.contains("| umw | 4 |")
            && report.contains("| gc-cyclic | 8 |"),
        "{report}"
    );
    assert!(again.stdout.contains("# Sweep"), "{}", again.stdout);
}

/// Every sweep file shipped in configs/sweeps (make demo, bench, reproduce-cr, reproduce-upload)
/// validates all its variants: `--dry-run` exits 0 and lists one command per run.
#[test]
fn shipped_sweep_files_validate_every_variant() {
    let root = std::path::Path::new(concat!(env!("CARGO_MANIFEST_DIR"), "/../.."));
    let mut files: Vec<_> = std::fs::read_dir(root.join("configs/sweeps"))
        .unwrap()
        .filter_map(|e| e.ok())
        .map(|e| e.path())
        .filter(|p| p.extension().is_some_and(|x| x == "toml"))
        .collect();
    files.sort();
    assert!(files.len() >= 6, "{files:?}");
    for f in files {
        let out =
            Command::new(bin()).current_dir(root).args(["sweep", f.to_str().unwrap(), "--dry-run"]).output().unwrap();
        let stdout = String::from_utf8_lossy(&out.stdout);
        assert!(out.status.success(), "{}: {}", f.display(), String::from_utf8_lossy(&out.stderr));
        assert!(stdout.lines().count() >= 2, "{}: {stdout}", f.display());
    }
}

/// A run that fails is named with its reason, its last `error:` line, on the sweep's own
/// output: on a full disk the launcher's log (on that disk) cannot hold it, and "its output is
/// in …log" pointed to an empty file. The log still gets every line, and the sweep exits 1.
#[test]
fn a_failed_run_is_named_with_its_last_error_line() {
    let dir = tempdir("sweep-failed");
    std::fs::write(dir.join("base.toml"), BASE).unwrap();
    let file = dir.join("sweep.toml");
    let launcher = "launcher = ['sh', '-c', 'echo starting; echo \"error: the test launcher fails\" >&2; echo \"mpirun noted something\" >&2; exit 3', 'sh']\n";
    std::fs::write(&file, format!("base = 'base.toml'\n{launcher}[[axis]]\nkey = 'run.seed'\nvalues = [1]\n")).unwrap();
    let out = dir.join("out");
    let r = run_with_timeout(sweep(&file, &out), Duration::from_secs(60));
    assert_eq!(r.code, Some(1), "{}", r.stderr);
    assert!(
        r.stderr.contains("v00-seed-1-rep1 failed (exit status: 3): error: the test launcher fails; its output is in"),
        "{}",
        r.stderr
    );
    let log = std::fs::read_to_string(out.join("logs/v00-seed-1-rep1.log")).unwrap();
    assert_eq!(log, "starting\nerror: the test launcher fails\nmpirun noted something\n");
}
