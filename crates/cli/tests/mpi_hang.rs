//! A worker that hangs instead of dying (stopped with SIGSTOP: alive but silent, as on a stuck
//! NFS read or a swapping node) is handled like a dead one, with a bound, through the launcher:
//!
//! - a scheme that tolerates it finishes every iteration, waits the shutdown grace for the
//!   silent worker's goodbye, writes `summary.json` and `theta.txt`, names the worker in one line
//!   (with the last iteration it answered) and ends the MPI job, exit 0 — with eager and with
//!   granted uploads;
//! - a ring, which tolerates no silent worker, ends the whole job at the deadline with the one
//!   line of the rank that noticed, exit 1;
//! - coded PageRank's shuffle likewise: the server that waited for the stopped one names it;
//! - a stopped master is named by its first worker alone (the others wait a grace longer);
//! - a rank stopped under `MPI_Allreduce` (the `allreduce` scheme) is named by the lowest
//!   running rank's watch over the call, in one line;
//! - a stopped CodedReduce parent that the scheme tolerates does not end the run when its own
//!   children's patience runs out: they ask the master, which answers, and wait for the end;
//! - a rank stopped before `MPI_Init` returns, which holds every rank in it, is reported by
//!   rank 0's watch over the call (rank 1's where rank 0 is the one stopped), and the
//!   launcher's bound ends the job.
//!
//! No ORTE noise, and nothing of the job is left running (the stopped process included).

mod common;

use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

use common::*;

const CFG: &str = "[run]\nname='hang'\nseed=7\niterations=100\ndeadline=5.0\n[data]\nkind='linear-synthetic'\nsamples=400\nfeatures=10\n[model]\nloss='least-squares'\nlr=0.5\n[scheme]\nkind='gc-cyclic'\nworkers=4\ns=1\n[timing]\ncompute='modelled'\na=2e-4\n";

/// Coded PageRank on 4 servers, as many iterations as it takes to stop one of them mid-run.
const PAGERANK: &str = "[run]\nname='hang-pr'\nseed=3\niterations=1000000\ndeadline=5.0\n[job]\nkind='pagerank'\n[graph]\nkind='er'\nn=400\np=0.02\n[scheme]\nkind='coded-pagerank'\nservers=4\nr=2\n";

/// CodedReduce on a (3, 2) tree, s = 1: rank 2 is a parent, of ranks 7, 8 and 9.
const CR: &str = "[run]\nname='hang-cr'\nseed=21\niterations=1800\ndeadline=2.0\n[data]\nkind='linear-synthetic'\nsamples=1001\nfeatures=9\n[model]\nloss='least-squares'\nlr=0.4\nl2=0.001\n[scheme]\nkind='cr'\nn=3\nlayers=2\ns=1\ncode='cyclic'\n[timing]\ncompute='modelled'\na=5e-5\n";

fn launcher() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../../launch/local.sh")
}

/// The job's run directory, once rank `rank` has written its setup line; and that rank's pid.
fn rank_pid(out: &Path, rank: usize) -> u32 {
    let t0 = Instant::now();
    loop {
        let line = std::fs::read_dir(out)
            .into_iter()
            .flatten()
            .flatten()
            .find_map(|d| std::fs::read_to_string(d.path().join(format!("rank-{rank}.jsonl"))).ok())
            .and_then(|text| text.lines().next().map(str::to_string));
        if let Some(pid) = line.and_then(|l| serde_json::from_str::<serde_json::Value>(&l).ok()?["pid"].as_u64()) {
            return pid as u32;
        }
        assert!(t0.elapsed() < Duration::from_secs(30), "rank {rank} did not start");
        std::thread::sleep(Duration::from_millis(50));
    }
}

/// Start the launcher on `CFG` with `sets`, stop rank `rank` a second after it started, and
/// wait for the launcher (at most `bound`). Returns its exit code, stdout, stderr, how long it
/// took, and the stopped pid.
fn stop_a_rank(
    tag: &str,
    rank: usize,
    sets: &[&str],
    bound: Duration,
) -> (Option<i32>, String, String, Duration, u32, Scratch) {
    stop_a_rank_of(CFG, tag, rank, sets, bound)
}

/// [`stop_a_rank`] on the config `text`.
fn stop_a_rank_of(
    text: &str,
    tag: &str,
    rank: usize,
    sets: &[&str],
    bound: Duration,
) -> (Option<i32>, String, String, Duration, u32, Scratch) {
    let dir = tempdir(tag);
    let cfg = write_config(&dir, text);
    let out = dir.join("runs");
    let mut cmd = Command::new(launcher());
    cmd.arg(&cfg).args(["--set", &format!("run.out_dir={}", out.display())]).env("OUTRUN_BIN", bin());
    for s in sets {
        cmd.args(["--set", s]);
    }
    let start = Instant::now();
    let mut child: Child = cmd.stdout(Stdio::piped()).stderr(Stdio::piped()).spawn().unwrap();
    let pid = rank_pid(&out, rank);
    std::thread::sleep(Duration::from_secs(1));
    // SAFETY: kill(2) on a rank of the job this test started
    unsafe {
        libc::kill(pid as libc::pid_t, libc::SIGSTOP);
    }
    let code = loop {
        if let Some(status) = child.try_wait().unwrap() {
            break status.code();
        }
        if start.elapsed() > bound {
            kill_tree(&mut child);
            panic!("{tag}: the launcher did not end within {bound:?} of a stopped rank");
        }
        std::thread::sleep(Duration::from_millis(100));
    };
    let elapsed = start.elapsed();
    let read = |r: &mut dyn std::io::Read| {
        let mut s = String::new();
        r.read_to_string(&mut s).unwrap();
        s
    };
    let (stdout, stderr) = (read(child.stdout.as_mut().unwrap()), read(child.stderr.as_mut().unwrap()));
    (code, stdout, stderr, elapsed, pid, dir)
}

/// Nothing of the job is left: the stopped rank is gone (mpirun's abort killed it).
fn assert_gone(pid: u32, tag: &str) {
    let t0 = Instant::now();
    while Path::new(&format!("/proc/{pid}")).exists() {
        if t0.elapsed() > Duration::from_secs(10) {
            // SAFETY: kill(2) on the rank this test stopped (cleanup before failing)
            unsafe {
                libc::kill(pid as libc::pid_t, libc::SIGKILL);
            }
            panic!("{tag}: the stopped rank {pid} was left behind");
        }
        std::thread::sleep(Duration::from_millis(100));
    }
}

/// The job failed (exit 1) with exactly one `error:` line, and no noise: that line.
fn one_error<'a>(code: Option<i32>, stderr: &'a str, tag: &str) -> &'a str {
    assert_eq!(code, Some(1), "{tag}: {stderr}");
    let lines: Vec<&str> = stderr.lines().filter(|l| l.starts_with("error:")).collect();
    assert_eq!(lines.len(), 1, "{tag}: one line:\n{stderr}");
    assert_quiet(stderr, tag);
    lines[0]
}

fn assert_quiet(stderr: &str, tag: &str) {
    // rank 1's note on a rank 0 that does not come after the loop: the line that ends the job
    // comes first, within the shutdown grace
    for noise in ["ORTE", "help message", "Segmentation", "MPI_ABORT", "orte_base", "for rank 0 at the run's end"] {
        assert!(!stderr.contains(noise), "{tag}: `{noise}` in stderr:\n{stderr}");
    }
}

/// The complete run's results stay: every iteration, exact.
fn assert_complete(dir: &Path, tag: &str) {
    let runs = dir.join("runs");
    let run = std::fs::read_dir(&runs).unwrap().flatten().next().expect("a run directory").path();
    let s = summary(&run);
    assert_eq!((s["iterations"].as_u64(), s["exact_iterations"].as_u64()), (Some(100), Some(100)), "{tag}: {s}");
    assert!(run.join("theta.txt").is_file(), "{tag}: theta.txt");
}

#[test]
fn a_stopped_worker_a_tolerant_scheme_does_not_need_ends_the_run_complete() {
    for (tag, sets) in [("eager", vec![]), ("granted", vec!["engine.upload=granted"])] {
        let _lock = mpi_lock();
        let (code, stdout, stderr, took, pid, dir) = stop_a_rank(tag, 2, &sets, Duration::from_secs(90));
        assert_eq!(code, Some(0), "{tag}: {stderr}");
        assert_complete(&dir, tag);
        assert!(stdout.contains("finished 100 iterations") && stdout.contains("exact 100/100"), "{tag}: {stdout}");
        let lines: Vec<&str> =
            stderr.lines().filter(|l| l.starts_with("warning:") || l.starts_with("error:")).collect();
        assert_eq!(lines.len(), 1, "{tag}: one line:\n{stderr}");
        assert!(
            lines[0].contains("worker 2 (rank 2, last answered iteration") && lines[0].contains("did not say goodbye"),
            "{tag}: {stderr}"
        );
        assert_quiet(&stderr, tag);
        // the grace is 5 s (run.deadline): the job ends well before its bound (120 s + 100 × 5 s)
        assert!(took < Duration::from_secs(60), "{tag}: {took:?}");
        assert_gone(pid, tag);
    }
}

#[test]
fn a_stopped_ring_worker_ends_the_job_at_the_deadline() {
    // stopped a second after it started, noticed at run.deadline (5 s), ended at once
    let sets = ["scheme.kind=rar", "scheme.s=", "run.iterations=400"];
    stopped_rank_is_named("ring", 1, &sets, "worker 2 (rank 1) sent nothing of iteration", Duration::from_secs(25));
}

/// Stop rank `rank` of a run of `CFG` with `sets`: the job ends, exit 1, within `within`, with
/// one line that contains `said`; nothing of it is left.
fn stopped_rank_is_named(tag: &str, rank: usize, sets: &[&str], said: &str, within: Duration) {
    let _lock = mpi_lock();
    let (code, _, stderr, took, pid, _dir) = stop_a_rank(tag, rank, sets, Duration::from_secs(60));
    let line = one_error(code, &stderr, tag);
    assert!(line.contains(said), "{tag}: {stderr}");
    assert!(took < within, "{tag}: {took:?}");
    assert_gone(pid, tag);
}

/// The `allreduce` scheme waits in MPI's own collective, which has no bound and cannot say
/// which rank is late: with a rank stopped, the lowest running rank says so at its bound
/// (`run.deadline`, a shutdown grace more per rank above 0) in one line and ends the job, exit 1,
/// instead of every rank waiting for the launcher's bound with nothing said.
#[test]
fn a_stopped_rank_in_mpi_allreduce_is_named_by_the_lowest_running_rank() {
    let sets = ["scheme.kind=allreduce", "scheme.s=", "run.iterations=100000"];
    let said = "rank 0 waited 5 s in MPI_Allreduce of iteration";
    stopped_rank_is_named("allreduce", 1, &sets, said, Duration::from_secs(25));
    let said = "rank 1 waited 10 s in MPI_Allreduce of iteration";
    stopped_rank_is_named("allreduce-rank0", 0, &sets, said, Duration::from_secs(30));
}

/// A stopped master leaves every worker without a model: the first worker names it at its
/// patience (`run.deadline` × 2 + the shutdown grace: 15 s), in one line, and ends the job,
/// exit 1; the others would speak a grace later, after the job has ended. Before, every worker
/// said it (every helper and client of a hierarchical scheme: 7 lines).
#[test]
fn a_stopped_master_is_named_by_its_first_worker_alone() {
    let said = "rank 1: no message from its parent rank 0 for 15 s";
    stopped_rank_is_named("master", 0, &["run.iterations=100000"], said, Duration::from_secs(35));
    // hierarchical: helper 1 names it (patience 20 s with two layers); clients and the other
    // helpers wait a grace longer
    let hier = ["scheme.kind=arc", "scheme.workers=", "scheme.clients=3", "scheme.helpers=4", "scheme.s=1"];
    let sets: Vec<&str> = hier.iter().copied().chain(["run.iterations=100000"]).collect();
    let said = "rank 1: no message from the master (rank 0) for 20 s";
    stopped_rank_is_named("hier-master", 0, &sets, said, Duration::from_secs(40));
}

/// A stopped CodedReduce parent within the scheme's tolerance: the master decodes without its
/// subtree, and the parent's children, silent-parented for their patience (11 s here), ask the
/// master instead of ending the run; it answers, so they wait on (each says so once in its log)
/// and the run of about 26 s completes, exit 0, with the master's one warning for the stopped
/// parent. Without the question the children ended the job at their patience, exit 1.
#[test]
fn a_stopped_coded_reduce_parent_within_tolerance_lets_the_run_complete() {
    let _lock = mpi_lock();
    let tag = "cr-parent";
    let (code, stdout, stderr, _, pid, dir) = stop_a_rank_of(CR, tag, 2, &[], Duration::from_secs(120));
    assert_eq!(code, Some(0), "{tag}: {stderr}");
    assert!(stdout.contains("finished 1800 iterations") && stdout.contains("exact 1800/1800"), "{tag}: {stdout}");
    let lines: Vec<&str> = stderr.lines().filter(|l| l.starts_with("warning:") || l.starts_with("error:")).collect();
    assert_eq!(lines.len(), 1, "{tag}: one line:\n{stderr}");
    assert!(lines[0].contains("worker 2 (rank 2, last answered iteration"), "{tag}: {stderr}");
    assert_quiet(&stderr, tag);
    let run = std::fs::read_dir(dir.join("runs")).unwrap().flatten().next().expect("a run directory").path();
    for child in [7, 8, 9] {
        let log = std::fs::read_to_string(run.join(format!("rank-{child}.jsonl"))).unwrap();
        let said = |ev: &str| log.lines().filter(|l| l.contains(&format!("\"ev\":\"{ev}\""))).count();
        assert_eq!(said("error"), 0, "{tag}: rank {child} gave up:\n{log}");
        assert_eq!(said("warn"), 1, "{tag}: rank {child}:\n{log}");
        assert!(
            log.contains("no message from its parent rank 2 for 11 s, but the root (rank 0) answers"),
            "{tag}: rank {child}"
        );
    }
    assert_gone(pid, tag);
}

/// A PageRank server's line names the servers it waited for: the stopped one, and perhaps live
/// ones held by it (then it says so), never the one that speaks.
fn assert_names_the_stopped_server(line: &str, stopped: usize, tag: &str) {
    let speaker = line.split("pagerank: server ").nth(1).and_then(|s| s.split(' ').next()).unwrap_or("");
    let named = line.split(" for server").nth(1).and_then(|s| s.split(" (rank").next()).unwrap_or("");
    let named: Vec<&str> =
        named.trim_start_matches('s').split([' ', ',']).filter(|w| !w.is_empty() && *w != "and").collect();
    assert!(named.contains(&stopped.to_string().as_str()) && !named.contains(&speaker), "{tag}: {named:?} in {line}");
    if named.len() > 1 {
        assert!(line.contains("one is stopped, stuck or dead; the others may be waiting for it"), "{tag}: {line}");
    }
}

/// Coded PageRank is bulk-synchronous: a stopped server holds every other in the iteration's
/// shuffle or exchange of new ranks. The logging server names it at `run.deadline` — it, not
/// the live servers held behind it — in one line and ends the job, exit 1: not the launcher's
/// bound with nothing said.
#[test]
fn a_stopped_pagerank_server_is_named_at_the_deadline() {
    for (tag, kind, schedule, multicast) in [
        ("pagerank-coded", "coded-pagerank", "parallel", "broadcast"),
        ("pagerank-unicasts", "coded-pagerank", "parallel", "unicasts"),
        ("pagerank-uncoded", "uncoded-pagerank", "parallel", "broadcast"),
        // the turn-taking Shuffle waits at a barrier before each turn, which names no one: the
        // line names every other server, the stopped one among them
        ("pagerank-turns", "coded-pagerank", "turns", "broadcast"),
    ] {
        // stopped a second after it started, named at run.deadline (5 s), ended at once
        let sets = [
            format!("scheme.kind={kind}"),
            format!("scheme.shuffle={schedule}"),
            format!("scheme.multicast={multicast}"),
        ];
        stopped_pagerank_server(tag, &sets, 2, "pagerank: server 0 waited 5 s in iteration", Duration::from_secs(25));
    }
}

/// Where the stopped server is the logging one, the lowest other server names it, a shutdown
/// grace per rank later (10 s more at rank 1), in one line.
#[test]
fn a_stopped_logging_pagerank_server_is_named_by_the_next() {
    let (tag, speaker) = ("pagerank-logging", "pagerank: server 1 waited 15 s in iteration");
    stopped_pagerank_server(tag, &["scheme.kind=uncoded-pagerank".into()], 0, speaker, Duration::from_secs(35));
}

/// Stop server `stopped` of a PageRank run (`sets`: its scheme): the job ends, exit 1, within
/// `within`, with one line that starts as `speaker` and names the stopped server; nothing of it
/// is left.
fn stopped_pagerank_server(tag: &str, sets: &[String], stopped: usize, speaker: &str, within: Duration) {
    let _lock = mpi_lock();
    let sets: Vec<&str> = sets.iter().map(String::as_str).collect();
    let (code, _, stderr, took, pid, _dir) = stop_a_rank_of(PAGERANK, tag, stopped, &sets, Duration::from_secs(60));
    let line = one_error(code, &stderr, tag);
    assert!(line.contains(speaker), "{tag}: {stderr}");
    assert_names_the_stopped_server(line, stopped, tag);
    assert!(took < within, "{tag}: {took:?}");
    assert_gone(pid, tag);
}

/// A stopped worker that its scheme tolerates costs the others a constant, not a growing,
/// amount: sends to it are tested from the oldest only, and once 64 wait for it the rest are
/// dropped (the master says so in its log). It was one more `MPI_Test` per poll for every
/// message sent to it: in the first configuration here, 4.8 ms per iteration before the stop and
/// 15 ms in the last 200 of 1500 iterations. Gradient coding, federated learning waiting for 3
/// of 4 clients, CodedFedL (whose server waits for its deadline t* and the parity covers the
/// stopped client) and gradient coding of a Python module.
#[test]
fn a_stopped_worker_costs_the_others_nothing_that_grows() {
    let long = ["run.iterations=1500", "timing.a=2e-5"];
    let fl = ["job.kind=fl", "scheme.kind=fedavg", "scheme.s=", "scheme.wait=3"];
    let coded = [
        "scheme.kind=codedfedl",
        "scheme.s=",
        "scheme.delta=0.3",
        "stragglers.model=shifted-exp",
        "stragglers.a=2e-5",
        "stragglers.mu=5e5",
    ];
    let module = format!(
        "job.module={}",
        Path::new(env!("CARGO_MANIFEST_DIR")).join("../../examples/python/least_squares.py").display()
    );
    let python = ["job.kind=python", &module];
    for (tag, extra) in [
        ("steady-gc", &[][..]),
        ("steady-fl", &fl[..]),
        ("steady-codedfedl", &coded[..]),
        ("steady-python", &python[..]),
    ] {
        let _lock = mpi_lock();
        let sets: Vec<&str> = long.iter().chain(extra).copied().collect();
        let (code, _, stderr, _, pid, dir) = stop_a_rank(tag, 2, &sets, Duration::from_secs(90));
        assert_eq!(code, Some(0), "{tag}: {stderr}");
        let runs = dir.join("runs");
        let run = std::fs::read_dir(&runs).unwrap().flatten().next().expect("a run directory").path();
        let wall: Vec<f64> = iterations(&run).iter().map(|r| r["wall_s"].parse().unwrap()).collect();
        assert_eq!(wall.len(), 1500, "{tag}");
        let median = |v: &[f64]| {
            let mut v = v.to_vec();
            v.sort_by(f64::total_cmp);
            v[v.len() / 2]
        };
        // the stop comes a second after the rank started: the first iterations are before it
        let (before, after) = (median(&wall[20..120]), median(&wall[wall.len() - 200..]));
        assert!(
            after <= 1.5 * before + 1e-3,
            "{tag}: median iteration {before:e} s before the stop, {after:e} s at the end"
        );
        let log = std::fs::read_to_string(run.join("rank-0.jsonl")).unwrap();
        assert_eq!(log.matches("rank 2 has not taken the last 64 messages sent to it").count(), 1, "{tag}");
        assert_gone(pid, tag);
    }
}

/// A stopped client of a hierarchical scheme fails every link it has, which no s tolerates: the
/// helpers give up on it at half the deadline and the master names it (not the helpers that
/// wait for it), in one line, well before the deadline of the iteration.
#[test]
fn a_stopped_hierarchical_client_is_named_by_the_master() {
    let _lock = mpi_lock();
    let tag = "hier";
    let sets = ["scheme.kind=arc", "scheme.workers=", "scheme.clients=3", "scheme.helpers=4", "scheme.s=1"];
    let (code, _, stderr, took, pid, _dir) = stop_a_rank(tag, 7, &sets, Duration::from_secs(60));
    let line = one_error(code, &stderr, tag);
    assert!(
        line.contains("no slice of client 3 (rank 7) reached helpers 1, 2, 3, 4 within their wait of 2.5 s"),
        "{stderr}"
    );
    assert!(took < Duration::from_secs(25), "{took:?}");
    assert_gone(pid, tag);
}

/// The rank of the MPI process `pid` (its `OMPI_COMM_WORLD_RANK`), if it is one.
fn world_rank(pid: u32) -> Option<usize> {
    let env = std::fs::read(format!("/proc/{pid}/environ")).ok()?;
    env.split(|&b| b == 0)
        .find_map(|v| std::str::from_utf8(v.strip_prefix(b"OMPI_COMM_WORLD_RANK=")?).ok()?.parse().ok())
}

/// The pid of `rank` of the job `child` started, looked for every `poll` as soon as it exists
/// (at most 30 s; past that the job is killed and the test fails).
fn started_rank(child: &mut Child, rank: usize, poll: Duration) -> u32 {
    let t0 = Instant::now();
    loop {
        if let Some(pid) = descendants(child.id()).into_iter().find(|&p| world_rank(p) == Some(rank)) {
            return pid;
        }
        if t0.elapsed() > Duration::from_secs(30) {
            kill_tree(child);
            panic!("rank {rank} did not start");
        }
        std::thread::sleep(poll);
    }
}

/// `outrun bench floor` waits in MPI's own collectives, which have no bound and cannot name a
/// late rank: with one rank stopped, rank 0 says, 10 s after the loop's last progress, that it
/// is waiting and how far the loop got (the launcher's bound ends such a job; here the test
/// does).
#[test]
fn a_benchmark_stuck_in_mpis_collectives_says_so() {
    let _lock = mpi_lock();
    let dir = tempdir("floor-stuck");
    let err_path = dir.join("stderr");
    let mut cmd = mpirun_command_bound(3, "none");
    cmd.args(["bench", "floor", "--values", "100", "--iterations", "5000000"]);
    cmd.stdout(Stdio::null()).stderr(std::fs::File::create(&err_path).unwrap());
    let mut child = cmd.spawn().unwrap();
    let pid = started_rank(&mut child, 2, Duration::from_millis(50));
    // well past MPI_Init (rank 0 watches from its loop on: a rank stopped in MPI_Init would stop
    // rank 0 before it), well before the 5 000 000 iterations end
    std::thread::sleep(Duration::from_secs(3));
    // SAFETY: kill(2) on a rank of the job this test started
    unsafe {
        libc::kill(pid as libc::pid_t, libc::SIGSTOP);
    }
    let stopped = Instant::now();
    let line = loop {
        let text = std::fs::read_to_string(&err_path).unwrap_or_default();
        if let Some(line) = text.lines().find(|l| l.starts_with("note: rank 0 has waited")) {
            break line.to_string();
        }
        if stopped.elapsed() > Duration::from_secs(40) {
            kill_tree(&mut child);
            panic!("no note within 40 s of the stop:\n{text}");
        }
        std::thread::sleep(Duration::from_millis(100));
    };
    let took = stopped.elapsed();
    kill_tree(&mut child);
    assert!(
        line.starts_with("note: rank 0 has waited 10 s in `outrun bench floor` (MPI_Bcast, MPI_Gather) with ")
            && line.ends_with(
                " of 5000000 iterations done; MPI's own collectives do not say which rank is late (still waiting)"
            ),
        "{line}"
    );
    assert!(took >= Duration::from_millis(9900), "said {took:?} after the stop: {line}");
    assert_gone(pid, "floor-stuck");
}

/// A rank stopped as it starts holds every other in `MPI_Init`, which waits for every rank and
/// says nothing: rank 0 says so after 10 s (once before 30 s), and the launcher's bound ends
/// the job with its own line, exit 124, nothing left running. Where rank 0 is the stopped one
/// (its watch stopped with it), rank 1 says so after 20 s, naming rank 0 as the late one if
/// rank 0 has said nothing.
#[test]
fn a_rank_stopped_before_mpi_init_returns_is_reported_by_rank_0_or_1() {
    let _lock = mpi_lock();
    for (stopped, bound, speaker, waited) in [(1, 16, 0, 10), (0, 26, 1, 20)] {
        let dir = tempdir(&format!("init-stuck-{stopped}"));
        let cfg = write_config(&dir, CFG);
        let out = dir.join("runs");
        let err_path = dir.join("stderr");
        let mut cmd = Command::new(launcher());
        cmd.arg(&cfg)
            .args(["--set", &format!("run.out_dir={}", out.display())])
            .env("OUTRUN_BIN", bin())
            .env("OUTRUN_TIMEOUT", bound.to_string())
            .stdout(Stdio::null())
            .stderr(std::fs::File::create(&err_path).unwrap());
        let mut child = cmd.spawn().unwrap();
        let t0 = Instant::now();
        // the rank is stopped as soon as it is seen: long before MPI_Init (its wire-up with
        // every rank) could return
        let pid = started_rank(&mut child, stopped, Duration::from_millis(5));
        // SAFETY: kill(2) on a rank of the job this test started
        unsafe {
            libc::kill(pid as libc::pid_t, libc::SIGSTOP);
        }
        let code = loop {
            if let Some(status) = child.try_wait().unwrap() {
                break status.code();
            }
            if t0.elapsed() > Duration::from_secs(60) {
                kill_tree(&mut child);
                panic!("the launcher's bound of {bound} s did not end the job");
            }
            std::thread::sleep(Duration::from_millis(100));
        };
        let err = std::fs::read_to_string(&err_path).unwrap();
        assert_eq!(code, Some(124), "rank {stopped} stopped: {err}");
        let notes: Vec<&str> = err.lines().filter(|l| l.starts_with("note:")).collect();
        assert_eq!(notes.len(), 1, "rank {stopped} stopped: {err}");
        let rank_0_late = speaker == 1;
        assert!(
            notes[0].starts_with(&format!(
                "note: rank {speaker} has waited {waited} s in MPI_Init, which returns once every rank of the job has started"
            )) && notes[0].ends_with("(still waiting)")
                && notes[0].contains("without its line rank 0 is the late one") == rank_0_late,
            "rank {stopped} stopped: {err}"
        );
        assert!(err.contains(&format!("bound of {bound} s")), "{err}");
        assert_gone(pid, &format!("init-stuck-{stopped}"));
    }
}
