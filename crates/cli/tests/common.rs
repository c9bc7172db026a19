//! Helpers for tests that run `outrun` under `mpirun`: a hard timeout on every run, one MPI job
//! at a time, temporary run directories, and readers for the run directory's files.
#![allow(dead_code)]

use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::sync::{Mutex, MutexGuard};
use std::time::{Duration, Instant};

/// One MPI job at a time: many ranks share two cores.
static MPI_LOCK: Mutex<()> = Mutex::new(());

pub(crate) fn mpi_lock() -> MutexGuard<'static, ()> {
    MPI_LOCK.lock().unwrap_or_else(|e| e.into_inner())
}

pub(crate) fn bin() -> &'static str {
    env!("CARGO_BIN_EXE_outrun")
}

/// The virtual environment a Python model imports from: the active one, or the repository's
/// `.venv` (scripts/setup.sh makes it, with numpy), as launch/local.sh chooses.
pub(crate) fn python_env() -> String {
    std::env::var("VIRTUAL_ENV")
        .unwrap_or_else(|_| Path::new(env!("CARGO_MANIFEST_DIR")).join("../../.venv").display().to_string())
}

/// A fresh temporary directory, removed (with everything in it) when the value is dropped —
/// unless the test is failing then: the directory (run directories, mpirun's output) stays, and
/// its path is printed, so a failure can be read afterwards.
#[derive(Clone)]
pub(crate) struct Scratch {
    path: PathBuf,
    _guard: std::sync::Arc<KeptOnFailure>,
}

/// A temporary directory kept when it is dropped during a panic (a failing test).
pub(crate) struct KeptOnFailure(Option<tempfile::TempDir>);

impl Drop for KeptOnFailure {
    fn drop(&mut self) {
        if let Some(dir) = self.0.take().filter(|_| std::thread::panicking()) {
            let path = dir.keep();
            eprintln!("the failed test's files are kept in {}", path.display());
        }
    }
}

impl std::ops::Deref for Scratch {
    type Target = Path;
    fn deref(&self) -> &Path {
        &self.path
    }
}

impl AsRef<Path> for Scratch {
    fn as_ref(&self) -> &Path {
        &self.path
    }
}

impl Scratch {
    /// The same guard, another path inside it.
    pub(crate) fn at(&self, path: PathBuf) -> Scratch {
        Scratch { path, _guard: self._guard.clone() }
    }
}

/// A fresh temporary directory (removed when the returned value is dropped).
pub(crate) fn tempdir(tag: &str) -> Scratch {
    let t = tempfile::Builder::new().prefix(&format!("outrun-test-{tag}-")).tempdir().expect("a temporary directory");
    Scratch { path: t.path().to_path_buf(), _guard: std::sync::Arc::new(KeptOnFailure(Some(t))) }
}

pub(crate) struct Run {
    pub code: Option<i32>,
    pub stdout: String,
    pub stderr: String,
    pub elapsed: Duration,
}

/// Run a command with a hard timeout (the test fails, and the job is killed, if it hangs).
pub(crate) fn run_with_timeout(mut cmd: Command, timeout: Duration) -> Run {
    // a name of its own per call: two test threads can read the same clock value, and then one
    // read the other's output (seen once: a refused check "printed" another check's error)
    static CALLS: std::sync::atomic::AtomicUsize = std::sync::atomic::AtomicUsize::new(0);
    let call = CALLS.fetch_add(1, std::sync::atomic::Ordering::Relaxed);
    let start = Instant::now();
    let out_path = std::env::temp_dir().join(format!("outrun-test-out-{}-{call}", std::process::id()));
    let err_path = out_path.with_extension("err");
    cmd.stdout(Stdio::from(std::fs::File::create(&out_path).unwrap()));
    cmd.stderr(Stdio::from(std::fs::File::create(&err_path).unwrap()));
    let mut child = cmd.spawn().expect("spawn");
    let code = loop {
        if let Some(st) = child.try_wait().unwrap() {
            break st.code();
        }
        if start.elapsed() > timeout {
            // mpirun and its ranks: everything this test started, by the process tree
            kill_tree(&mut child);
            let stderr = std::fs::read_to_string(&err_path).unwrap_or_default();
            let _ = std::fs::remove_file(&out_path);
            let _ = std::fs::remove_file(&err_path);
            panic!("timed out after {timeout:?}: {cmd:?}\nstderr:\n{stderr}");
        }
        std::thread::sleep(Duration::from_millis(20));
    };
    let stdout = std::fs::read_to_string(&out_path).unwrap_or_default();
    let stderr = std::fs::read_to_string(&err_path).unwrap_or_default();
    let _ = std::fs::remove_file(&out_path);
    let _ = std::fs::remove_file(&err_path);
    Run { code, stdout, stderr, elapsed: start.elapsed() }
}

/// The processes `root` started, directly or not (children, grandchildren, …), from /proc.
pub(crate) fn descendants(root: u32) -> Vec<u32> {
    let mut parent = std::collections::HashMap::new();
    for entry in std::fs::read_dir("/proc").into_iter().flatten().flatten() {
        let Ok(pid) = entry.file_name().to_string_lossy().parse::<u32>() else { continue };
        // `pid (comm) state ppid …`: the command may hold spaces and parentheses
        let Ok(stat) = std::fs::read_to_string(entry.path().join("stat")) else { continue };
        let ppid = stat.rsplit_once(')').and_then(|(_, rest)| rest.split_whitespace().nth(1)?.parse::<u32>().ok());
        if let Some(ppid) = ppid {
            parent.insert(pid, ppid);
        }
    }
    let mut found = vec![root];
    let mut i = 0;
    while i < found.len() {
        let p = found[i];
        found.extend(parent.iter().filter(|(_, &pp)| pp == p).map(|(&c, _)| c));
        i += 1;
    }
    found.remove(0);
    found
}

/// End `child` and every process it started, by the process tree — never by name, so a test
/// ends only what it started (a user's experiment from the same checkout is left alone).
pub(crate) fn kill_tree(child: &mut std::process::Child) {
    for _ in 0..10 {
        let below = descendants(child.id());
        if below.is_empty() {
            break;
        }
        for pid in below {
            // SAFETY: kill(2) on a process this test started
            unsafe {
                libc::kill(pid as libc::pid_t, libc::SIGKILL);
            }
        }
        std::thread::sleep(Duration::from_millis(50));
    }
    let _ = child.kill();
    let _ = child.wait();
}

/// `mpirun -np N outrun ARGS...` with the flags launch/local.sh uses.
pub(crate) fn mpirun_outrun(np: usize, args: &[String], timeout: Duration) -> Run {
    let mut cmd = mpirun_command(np);
    cmd.args(args);
    run_with_timeout(cmd, timeout)
}

/// `mpirun -np N outrun train CONFIG --set ...` with the flags launch/local.sh uses.
pub(crate) fn mpirun(np: usize, config: &Path, sets: &[String], timeout: Duration) -> Run {
    mpirun_env(np, config, sets, &[], timeout)
}

/// [`mpirun`] with environment variables set for every rank.
pub(crate) fn mpirun_env(np: usize, config: &Path, sets: &[String], env: &[(&str, &str)], timeout: Duration) -> Run {
    let mut cmd = mpirun_command(np);
    cmd.envs(env.iter().copied()).arg("train").arg(config);
    for s in sets {
        cmd.arg("--set").arg(s);
    }
    run_with_timeout(cmd, timeout)
}

/// `mpirun ... outrun` without arguments yet.
fn mpirun_command(np: usize) -> Command {
    mpirun_command_bound(np, "none")
}

/// `mpirun ... outrun` with each rank bound as `bind` says (`none`, as launch/local.sh, or
/// `core`: one core each, as on a cluster), without arguments yet.
pub(crate) fn mpirun_command_bound(np: usize, bind: &str) -> Command {
    let mut cmd = Command::new("mpirun");
    cmd.env("VIRTUAL_ENV", python_env())
        .env("OMP_NUM_THREADS", "1")
        .env("OMPI_ALLOW_RUN_AS_ROOT", "1")
        .env("OMPI_ALLOW_RUN_AS_ROOT_CONFIRM", "1")
        .env("OMPI_MCA_mpi_yield_when_idle", "1")
        // libevent's epoll backend warns when mpirun kills ranks it still has writes queued for
        // (open-mpi/ompi #2004, #5520); poll has no such race (as in launch/local.sh)
        .env("EVENT_NOEPOLL", "1")
        .args(["--quiet", "--oversubscribe", "--bind-to", bind, "-np", &np.to_string()])
        .args(["--mca", "btl", "self,vader,tcp", "--mca", "btl_base_warn_component_unused", "0"])
        .arg(bin());
    cmd
}

/// `outrun <args>` (no MPI).
pub(crate) fn outrun(args: &[&str]) -> Run {
    let mut cmd = Command::new(bin());
    cmd.env("VIRTUAL_ENV", python_env()).args(args);
    run_with_timeout(cmd, Duration::from_secs(60))
}

/// The single run directory created under `out`.
pub(crate) fn run_dir(out: &Path) -> PathBuf {
    let dirs: Vec<PathBuf> =
        std::fs::read_dir(out).unwrap().map(|e| e.unwrap().path()).filter(|p| p.is_dir()).collect();
    assert_eq!(dirs.len(), 1, "expected one run directory in {}: {dirs:?}", out.display());
    dirs[0].clone()
}

/// θ_0 … θ_T from trajectory.csv.
pub(crate) fn trajectory(dir: &Path) -> Vec<Vec<f64>> {
    let text = std::fs::read_to_string(dir.join("trajectory.csv")).expect("trajectory.csv");
    text.lines()
        .enumerate()
        .map(|(i, l)| {
            let mut it = l.split(',');
            assert_eq!(it.next().unwrap().parse::<usize>().unwrap(), i);
            it.map(|v| v.parse::<f64>().unwrap()).collect()
        })
        .collect()
}

/// iterations.csv as a list of rows (header → value maps).
pub(crate) fn iterations(dir: &Path) -> Vec<std::collections::HashMap<String, String>> {
    let text = std::fs::read_to_string(dir.join("iterations.csv")).expect("iterations.csv");
    let mut lines = text.lines();
    let head: Vec<String> = lines.next().unwrap().split(',').map(String::from).collect();
    lines.map(|l| head.iter().cloned().zip(l.split(',').map(String::from)).collect()).collect()
}

/// Rank `rank`'s iteration records (`"ev": "iter"`) in its log.
pub(crate) fn iter_records(dir: &Path, rank: usize) -> Vec<serde_json::Value> {
    records(dir, rank, "iter")
}

/// Rank `rank`'s records of kind `ev` (`"iter"`, a shuffle server's `"iteration"`, `"setup"`,
/// …) in its log.
pub(crate) fn records(dir: &Path, rank: usize, ev: &str) -> Vec<serde_json::Value> {
    std::fs::read_to_string(dir.join(format!("rank-{rank}.jsonl")))
        .unwrap()
        .lines()
        .map(|l| serde_json::from_str::<serde_json::Value>(l).unwrap())
        .filter(|e| e["ev"] == ev)
        .collect()
}

/// How late this host woke the run's processes, measured in the run itself: the workers'
/// oversleep past their modelled compute time ((ready − compute_start) − target, seconds), as
/// (mean, largest) over every worker and iteration (0 without modelled compute). On a host with
/// free cores it is a fraction of a millisecond; with the cores busy, every wait of the run —
/// the master's timers included — is late by about as much, so a timing assertion allows it.
#[allow(dead_code)]
pub(crate) fn wake_slack(dir: &Path) -> (f64, f64) {
    let mut late = vec![];
    for entry in std::fs::read_dir(dir).expect("run directory").flatten() {
        let name = entry.file_name().to_string_lossy().to_string();
        if !(name.starts_with("rank-") && name.ends_with(".jsonl")) {
            continue;
        }
        for line in std::fs::read_to_string(entry.path()).unwrap_or_default().lines() {
            let Ok(e) = serde_json::from_str::<serde_json::Value>(line) else { continue };
            if let (Some(start), Some(ready), Some(target)) =
                (e["compute_start"].as_f64(), e["ready"].as_f64(), e["target"].as_f64())
            {
                late.push((ready - start - target).max(0.0));
            }
        }
    }
    let n = late.len().max(1) as f64;
    (late.iter().sum::<f64>() / n, late.iter().copied().fold(0.0, f64::max))
}

/// Whether the run's times can be compared with a model's (the simulator's, a formula's): its
/// processes woke on time — the workers' mean oversleep ([`wake_slack`]) under 0.5 ms (about
/// 0.08 ms on the 2-vCPU VM with its cores free, 2 ms with two busy loops beside the run). On a
/// busy host the comparison measures the other load, not outrun: it is skipped, saying so on
/// stderr; the test's other assertions stand.
#[allow(dead_code)]
pub(crate) fn timing_comparable(dir: &Path, what: &str) -> bool {
    let (mean, max) = wake_slack(dir);
    let ok = mean < 5e-4;
    if !ok {
        eprintln!(
            "{what}: not compared — the host is busy (the run's workers woke {:.2} ms late on average, {:.2} ms at most)",
            mean * 1e3,
            max * 1e3
        );
    }
    ok
}

/// The lines of `stderr` that say something (blank ones dropped): what a test counts when a
/// failure must be one line.
pub(crate) fn said(stderr: &str) -> Vec<&str> {
    stderr.lines().filter(|l| !l.trim().is_empty()).collect()
}

/// The final θ of a run directory (`theta.txt`, one value a line).
pub(crate) fn final_theta(dir: &Path) -> Vec<f64> {
    std::fs::read_to_string(dir.join("theta.txt")).unwrap().lines().map(|l| l.parse().unwrap()).collect()
}

pub(crate) fn summary(dir: &Path) -> serde_json::Value {
    serde_json::from_str(&std::fs::read_to_string(dir.join("summary.json")).unwrap()).unwrap()
}

/// Largest relative difference ‖a_t − b_t‖/‖b_t‖ over t ≥ 1 (θ_0 = 0).
pub(crate) fn max_rel_diff(a: &[Vec<f64>], b: &[Vec<f64>]) -> f64 {
    assert_eq!(a.len(), b.len(), "trajectory lengths differ");
    a.iter().zip(b).map(|(x, y)| outrun_workloads::metrics::relative_diff(x, y)).fold(0.0, f64::max)
}

pub(crate) fn write_config(dir: &Path, text: &str) -> PathBuf {
    let p = dir.join("config.toml");
    std::fs::write(&p, text).unwrap();
    p
}

/// mpirun's stdout and stderr of `run`, into `dir` (kept with it when the test fails).
pub(crate) fn keep_output(dir: &Path, run: &Run) {
    let _ = std::fs::write(dir.join("mpirun.stdout"), &run.stdout);
    let _ = std::fs::write(dir.join("mpirun.stderr"), &run.stderr);
}

/// Run a config with overrides through mpirun (one MPI job at a time); returns the run, the run
/// directory (or the output directory if the run failed; removed when dropped), the config path
/// and the overrides.
pub(crate) fn train(tag: &str, text: &str, sets: &[&str]) -> (Run, Scratch, PathBuf, Vec<String>) {
    let _lock = mpi_lock();
    let dir = tempdir(tag);
    let cfg_path = write_config(&dir, text);
    let out = dir.join("runs");
    let mut sets: Vec<String> = sets.iter().map(|s| s.to_string()).collect();
    sets.push(format!("run.out_dir={}", out.display()));
    let cfg = outrun_config::parse(text, &sets).expect("test config is valid");
    let run = mpirun(cfg.ranks(), &cfg_path, &sets, Duration::from_secs(120));
    keep_output(&dir, &run);
    let rd = if run.code == Some(0) { run_dir(&out) } else { out };
    (run, dir.at(rd), cfg_path, sets)
}

/// `outrun train --resume FROM` under mpirun of the config a [`train`] ran (`text` at `cfg`
/// with its overrides `sets`, less their output directory and iteration count: the whole run's),
/// into `out`.
pub(crate) fn resume_trained(text: &str, cfg: &Path, sets: &[String], from: &Path, out: &Path) -> Run {
    let mut args = vec!["train".to_string(), cfg.display().to_string()];
    for s in sets.iter().filter(|s| !s.starts_with("run.out_dir=") && !s.starts_with("run.iterations=")) {
        args.extend(["--set".to_string(), s.clone()]);
    }
    args.extend([
        "--set".into(),
        format!("run.out_dir={}", out.display()),
        "--resume".into(),
        from.display().to_string(),
    ]);
    let _lock = mpi_lock();
    let ranks = outrun_config::parse(text, sets).expect("test config is valid").ranks();
    mpirun_outrun(ranks, &args, Duration::from_secs(120))
}

/// `outrun simulate` (one trial) of the config a [`train`] ran, with its overrides, into `out`:
/// the simulated run's directory.
pub(crate) fn simulate_as_trained(cfg_path: &Path, sets: &[String], out: &Path) -> PathBuf {
    let mut args = vec!["simulate".to_string(), cfg_path.display().to_string(), "--trials".into(), "1".into()];
    for s in sets.iter().filter(|s| !s.starts_with("run.out_dir=")) {
        args.extend(["--set".to_string(), s.clone()]);
    }
    args.extend(["--set".to_string(), format!("run.out_dir={}", out.display())]);
    let sim = outrun(&args.iter().map(String::as_str).collect::<Vec<_>>());
    assert_eq!(sim.code, Some(0), "{}", sim.stderr);
    run_dir(out)
}

/// Serial training of the config's model on the same data set (its batches, its θ₀): θ_0 … θ_T.
pub(crate) fn reference(text: &str, sets: &[String]) -> Vec<Vec<f64>> {
    let cfg = outrun_config::parse(text, sets).unwrap();
    let rows = outrun_workloads::data::load_all(cfg.data(), cfg.run.seed, cfg.model().labels()).unwrap();
    outrun_workloads::reference::serial_model(&rows, cfg.model(), cfg.run.seed, cfg.run.iterations)
}

/// Train and check that every iteration was exact and θ follows serial gradient descent within
/// 1e-9 relative; returns the summary.
pub(crate) fn assert_exact(tag: &str, text: &str, sets: &[&str]) -> serde_json::Value {
    assert_exact_kept(tag, text, sets).0
}

/// [`assert_exact`], keeping the run directory (removed when the second value drops, kept if the
/// test fails) for the caller to read its logs.
pub(crate) fn assert_exact_kept(tag: &str, text: &str, sets: &[&str]) -> (serde_json::Value, Scratch) {
    let (run, dir, _, sets) = train(tag, text, sets);
    assert_eq!(run.code, Some(0), "{tag}: stderr:\n{}", run.stderr);
    let got = trajectory(&dir);
    let want = reference(text, &sets);
    let diff = max_rel_diff(&got, &want);
    assert!(diff <= 1e-9, "{tag}: θ trajectory differs from serial GD by {diff:e}");
    let rows = iterations(&dir);
    let iters = want.len() - 1;
    assert_eq!(rows.len(), iters);
    assert!(rows.iter().all(|r| r["exact"] == "true"), "{tag}: an iteration was not exact");
    let s = summary(&dir);
    assert_eq!(s["exact_iterations"], iters);
    eprintln!("{tag}: max relative θ difference to serial GD = {diff:.2e}, late discarded = {}", s["late_discarded"]);
    (s, dir)
}

/// Run `text` (written into `dir` as `<tag>.toml`) with overrides under mpirun with its rank
/// count, into `dir/runs-<tag>`: (exit code, stderr, the run directory if it succeeded).
pub(crate) fn run_config(
    dir: &Path,
    text: &str,
    sets: &[String],
    tag: &str,
    timeout: Duration,
) -> (Option<i32>, String, Option<PathBuf>) {
    let _lock = mpi_lock();
    let out = dir.join(format!("runs-{tag}"));
    let mut sets = sets.to_vec();
    sets.push(format!("run.out_dir={}", out.display()));
    let cfg_path = dir.join(format!("{tag}.toml"));
    std::fs::write(&cfg_path, text).unwrap();
    let cfg = outrun_workloads::load_config(&cfg_path, &sets).expect("valid test config");
    let r = mpirun(cfg.ranks(), &cfg_path, &sets, timeout);
    let rd = (r.code == Some(0)).then(|| run_dir(&out));
    (r.code, r.stderr, rd)
}
