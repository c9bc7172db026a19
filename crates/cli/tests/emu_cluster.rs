//! The emulated cluster (`launch/emu-cluster`): bring up 4 hosts (network namespaces) with
//! shaped links, run a gradient-coding job across them, check it is exact and that a bulk
//! transfer between two hosts runs at the shaped rate within 15 %, and tear everything down;
//! the papers' N = 84 one rank per host, a server with a faster NIC, and `outrun reproduce`
//! measuring a result on the emulated cluster through its script.
//!
//! Needs root (network namespaces, tc). Set OUTRUN_SKIP_NETNS=1 to skip it explicitly on a
//! machine where that is impossible; without it, a non-root run fails rather than pass silently.

mod common;

use std::path::{Path, PathBuf};
use std::process::Command;
use std::time::Duration;

use common::*;

const CLUSTER: &str = "ortest";

fn script() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../../launch/emu-cluster")
}

fn emu(args: &[&str], timeout: Duration) -> Run {
    emu_env(args, &[], timeout)
}

/// [`emu`] with more environment variables.
fn emu_env(args: &[&str], env: &[(&str, &str)], timeout: Duration) -> Run {
    let mut cmd = Command::new(script());
    cmd.args(args).env("OUTRUN_EMU_CLUSTER", CLUSTER).env("OUTRUN_BIN", bin());
    cmd.envs(env.iter().copied());
    run_with_timeout(cmd, timeout)
}

fn namespaces() -> Vec<String> {
    let out = Command::new("ip").args(["netns", "list"]).output().expect("ip netns list");
    String::from_utf8_lossy(&out.stdout)
        .lines()
        .filter_map(|l| l.split_whitespace().next())
        .filter(|n| n.starts_with(&format!("{CLUSTER}-")))
        .map(String::from)
        .collect()
}

/// Run `text` (written into a fresh directory) on the test cluster within `bound` and check its
/// θ trajectory against serial GD: (the directory, the config's path, the run directory).
fn run_exact(tag: &str, text: &str, bound: Duration) -> (Scratch, PathBuf, PathBuf) {
    let dir = tempdir(tag);
    let cfg = write_config(&dir, text);
    let out = dir.join("runs");
    let set = format!("run.out_dir={}", out.display());
    let run = emu(&["run", cfg.to_str().unwrap(), "--set", &set], bound);
    assert_eq!(run.code, Some(0), "run failed: {}", run.stderr);
    let rd = run_dir(&out);
    let diff = max_rel_diff(&trajectory(&rd), &reference(text, &[set]));
    assert!(diff <= 1e-9, "θ differs from serial GD by {diff:e}");
    (dir, cfg, rd)
}

/// Each of `ranks` ran on its own emulated host (rank r on host hr), by its log's setup line,
/// and counted every rank of the job as sharing its machine's cores (the hosts are namespaces of
/// one kernel): more ranks than cores, so `engine.idle = "auto"` sleeps between polls. Counted
/// by host name, each rank saw one rank on 2 cores and spun, and 156 spinning ranks on the 2
/// cores stalled a ring for run.deadline (docs/results/cr-latency.md).
fn assert_own_hosts(rd: &Path, ranks: impl IntoIterator<Item = usize>) {
    let size = summary(rd)["ranks"].as_u64().unwrap();
    for r in ranks {
        let log = std::fs::read_to_string(rd.join(format!("rank-{r}.jsonl"))).unwrap();
        let ev: serde_json::Value = serde_json::from_str(log.lines().next().unwrap()).unwrap();
        assert_eq!(ev["host"], format!("h{r}"), "rank {r} runs on its own host");
        assert_eq!(ev["local_ranks"].as_u64(), Some(size), "rank {r}: {ev}");
        assert_eq!(ev["idle"], "sleep", "rank {r}: {ev}");
    }
}

/// Tears the test cluster down when dropped, also when an assertion fails.
struct Down;
impl Drop for Down {
    fn drop(&mut self) {
        let _ = emu(&["down"], Duration::from_secs(60));
    }
}

/// `up` with `args` is refused, exit 2, saying `says`.
fn assert_up_refused(args: &[&str], says: &str) {
    let run = emu(&[&["up"], args].concat(), Duration::from_secs(30));
    assert_eq!(run.code, Some(2), "{}", run.stderr);
    assert!(run.stderr.contains(says), "{}", run.stderr);
}

/// The test cluster up with `args` (after any leftovers of an interrupted run are torn down),
/// holding the MPI lock, torn down when the guard drops; `None` where OUTRUN_SKIP_NETNS skips
/// the emulated-cluster tests.
fn cluster(args: &[&str], bound: Duration) -> Option<(std::sync::MutexGuard<'static, ()>, Down)> {
    if std::env::var_os("OUTRUN_SKIP_NETNS").is_some() {
        eprintln!("SKIPPED by OUTRUN_SKIP_NETNS: emulated cluster test");
        return None;
    }
    let lock = mpi_lock();
    let _ = emu(&["down"], Duration::from_secs(60));
    let up = emu(&[&["up"], args].concat(), bound);
    let down = Down;
    assert_eq!(up.code, Some(0), "up failed: {}", up.stderr);
    Some((lock, down))
}

#[test]
fn emulated_cluster_runs_exact_gc_at_the_shaped_rate() {
    if std::env::var_os("OUTRUN_SKIP_NETNS").is_some() {
        eprintln!("SKIPPED by OUTRUN_SKIP_NETNS: emulated cluster test");
        return;
    }
    let uid = Command::new("id").arg("-u").output().expect("id -u");
    assert_eq!(
        String::from_utf8_lossy(&uid.stdout).trim(),
        "0",
        "the emulated-cluster test needs root (or set OUTRUN_SKIP_NETNS=1 to skip it)"
    );
    let _lock = mpi_lock();
    let _ = emu(&["down"], Duration::from_secs(60)); // leftovers of an interrupted run
    let up = emu(&["up", "--hosts", "4", "--bandwidth", "50mbit"], Duration::from_secs(60));
    let _down = Down;
    assert_eq!(up.code, Some(0), "up failed: {}", up.stderr);
    assert_eq!(namespaces().len(), 5, "4 hosts + the bridge namespace");
    let status = emu(&["status"], Duration::from_secs(30));
    assert!(
        status.stdout.contains("4 hosts, link 50mbit") && !status.stdout.contains("master's host"),
        "{}",
        status.stdout
    );
    // up to 100 Mbit/s a link that waited sends two full frames at once, as a NIC would (almost)
    assert!(status.stdout.contains("tbf burst 3028 B"), "{}", status.stdout);
    // a second `up` must refuse to clobber the cluster; a burst below one frame is refused first
    assert_up_refused(&["--hosts", "2", "--bandwidth", "10mbit"], "already exists");
    assert_up_refused(&["--hosts", "2", "--bandwidth", "10mbit", "--burst", "1000"], "--burst must be");

    // GC with 3 workers (one per host), s = 1, a slow worker, across the shaped links
    let text = r#"
[run]
name = "emu"
seed = 4
iterations = 15
deadline = 30.0
trajectory = true
[data]
kind = "linear-synthetic"
samples = 301
features = 40
[model]
loss = "least-squares"
lr = 0.3
[scheme]
kind = "gc-cyclic"
workers = 3
s = 1
[stragglers]
model = "fixed"
workers = [2]
factor = 4.0
[timing]
compute = "modelled"
a = 1e-4
"#;
    let (dir, cfg, rd) = run_exact("emu", text, Duration::from_secs(120));
    // every rank ran on its own emulated host
    assert_own_hosts(&rd, 0..4);

    // the same run with uploads by grant: exact, and across the shaped links the master receives
    // exactly the n − s = 2 granted results per iteration (one frame: a 32-byte header and
    // p + 1 = 41 values each), nothing late
    let out_g = dir.join("runs-granted");
    let set_g = format!("run.out_dir={}", out_g.display());
    // in an environment that chooses Open MPI's launcher of one host (as a device host here
    // does), which left mpirun the master host's one slot: the cluster names the one it needs
    let run = emu_env(
        &["run", cfg.to_str().unwrap(), "--set", &set_g, "--set", "engine.upload=granted"],
        &[("OMPI_MCA_plm", "isolated")],
        Duration::from_secs(120),
    );
    assert_eq!(run.code, Some(0), "granted run failed: {}", run.stderr);
    let rd = run_dir(&out_g);
    assert!(max_rel_diff(&trajectory(&rd), &reference(text, &[set_g])) <= 1e-9);
    assert_eq!(summary(&rd)["late_discarded"], 0);
    let master = std::fs::read_to_string(rd.join("rank-0.jsonl")).unwrap();
    let iters: Vec<serde_json::Value> = master
        .lines()
        .map(|l| serde_json::from_str(l).unwrap())
        .filter(|e: &serde_json::Value| e["ev"] == "iter")
        .collect();
    assert_eq!(iters.len(), 15);
    for e in &iters {
        assert_eq!((e["grants"].as_u64(), e["result_bytes"].as_u64()), (Some(2), Some(2 * (32 + 8 * 41))), "{e}");
    }

    // bulk transfer h1 → h2: 50 Mbit/s = 6.25 MB/s, within 15 %
    let link = emu(&["link", "h1", "h2", "10"], Duration::from_secs(60));
    assert_eq!(link.code, Some(0), "{}", link.stderr);
    let mbs: f64 = link
        .stdout
        .split(": ")
        .nth(1)
        .and_then(|v| v.split(' ').next())
        .and_then(|v| v.parse().ok())
        .expect(&link.stdout);
    eprintln!("emulated link: {}", link.stdout.trim());
    assert!((mbs - 6.25).abs() / 6.25 <= 0.15, "shaped 50 Mbit/s link measured {mbs} MB/s");

    // a command of its own past its bound: stopped with one line naming the bound and the default
    // that applies to it (not a config's)
    let mut cmd = Command::new(script());
    cmd.args(["mpirun", "2", "sleep", "60"]).env("OUTRUN_EMU_CLUSTER", CLUSTER).env("OUTRUN_TIMEOUT", "3");
    let run = run_with_timeout(cmd, Duration::from_secs(60));
    assert_eq!(run.code, Some(124), "{}", run.stderr);
    assert!(
        run.stderr.contains("did not end within its bound of 3 s")
            && run.stderr.contains("(default: 3600 s for a command of its own;"),
        "{}",
        run.stderr
    );

    // launch/cluster.sh for real, with the cluster's `ip netns exec` agent standing in for ssh:
    // copy binary, resolved config and a LIBSVM data file to every host, run from h0, gather.
    cluster_sh_copies_runs_and_gathers(&dir);

    drop(_down);
    assert!(namespaces().is_empty(), "down left namespaces behind: {:?}", namespaces());
}

fn cluster_sh_copies_runs_and_gathers(dir: &std::path::Path) {
    let data = dir.join("d.libsvm");
    let rows = outrun_workloads::data::synthetic_rows(
        outrun_config::DataKind::LinearSynthetic,
        8,
        6,
        0.5,
        outrun_config::Labels::Real,
        0..120,
    );
    let text: String = (0..rows.len())
        .map(|i| {
            format!(
                "{} {}\n",
                rows.y[i],
                rows.row(i).iter().enumerate().map(|(k, v)| format!("{}:{v}", k + 1)).collect::<Vec<_>>().join(" ")
            )
        })
        .collect();
    std::fs::write(&data, text).unwrap();
    let cfg_text = format!(
        "[run]\nname='viacluster'\niterations=8\ntrajectory=true\n[data]\nkind='libsvm'\npath='{}'\n[model]\nloss='least-squares'\nlr=0.2\n\
         [scheme]\nkind='gc-frac'\nworkers=2\ns=1\n",
        data.display()
    );
    let cfg = write_config(dir, &cfg_text);
    let hostfile = dir.join("hostfile");
    std::fs::write(&hostfile, "h0 slots=1\nh1 slots=1\nh2 slots=1\n").unwrap();
    let agent = format!("/run/{CLUSTER}-emu/agent");
    let work = dir.join("work");
    let repo = PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../..");
    let mut cmd = Command::new(repo.join("launch/cluster.sh"));
    cmd.current_dir(&repo)
        .env("OUTRUN_BIN", bin())
        .env("OMPI_ALLOW_RUN_AS_ROOT", "1")
        .env("OMPI_ALLOW_RUN_AS_ROOT_CONFIRM", "1")
        .env("OMPI_MCA_plm_rsh_agent", &agent)
        .env("OMPI_MCA_btl", "tcp,self")
        .env("OMPI_MCA_btl_tcp_if_include", "10.213.0.0/24")
        .env("OMPI_MCA_oob_tcp_if_include", "10.213.0.0/24")
        .args([
            "--hostfile",
            hostfile.to_str().unwrap(),
            "--launch-from",
            "h0",
            "--ssh",
            &agent,
            "--workdir",
            work.to_str().unwrap(),
        ])
        .arg(&cfg);
    let run = run_with_timeout(cmd, Duration::from_secs(120));
    assert_eq!(run.code, Some(0), "cluster.sh failed:\n{}\n{}", run.stdout, run.stderr);
    assert!(work.join("d.libsvm").is_file() && work.join("config.toml").is_file() && work.join("outrun").is_file());
    let name =
        run.stdout.lines().find_map(|l| l.strip_prefix("run directory: ")).expect("run directory line").to_string();
    let gathered = repo.join("runs").join(PathBuf::from(&name).file_name().unwrap());
    let traj = trajectory(&gathered);
    let want = reference(&cfg_text, &[]);
    assert!(max_rel_diff(&traj, &want) <= 1e-9);
    std::fs::remove_dir_all(&gathered).unwrap();
}

/// `down` removes exactly what `up` recorded: a namespace of the same prefix that somebody else
/// made (with a process in it) survives; a failed `up` (here `--latency` on a kernel without
/// netem, or any failing step) leaves no namespace, link or state behind.
#[test]
fn emulated_cluster_touches_only_what_it_created() {
    if std::env::var_os("OUTRUN_SKIP_NETNS").is_some() {
        eprintln!("SKIPPED by OUTRUN_SKIP_NETNS: emulated cluster test");
        return;
    }
    const NAME: &str = "orfoe";
    let run = |args: &[&str]| {
        let mut cmd = Command::new(script());
        cmd.args(args).env("OUTRUN_EMU_CLUSTER", NAME);
        run_with_timeout(cmd, Duration::from_secs(60))
    };
    let ours = || -> Vec<String> {
        let out = Command::new("ip").args(["netns", "list"]).output().expect("ip netns list");
        String::from_utf8_lossy(&out.stdout)
            .lines()
            .filter_map(|l| l.split_whitespace().next())
            .filter(|n| n.starts_with(&format!("{NAME}-")))
            .map(String::from)
            .collect()
    };
    let foreign = format!("{NAME}-mine");
    /// Removes the foreign namespace and its process, also when an assertion fails.
    struct Cleanup(String);
    impl Drop for Cleanup {
        fn drop(&mut self) {
            let _ = Command::new("sh")
                .args(["-c", &format!("ip netns pids {0} | xargs -r kill -9; ip netns del {0}", self.0)])
                .status();
        }
    }
    assert!(Command::new("ip").args(["netns", "add", &foreign]).status().unwrap().success());
    let _cleanup = Cleanup(foreign.clone());
    let mut sleeper = Command::new("ip").args(["netns", "exec", &foreign, "sleep", "300"]).spawn().unwrap();
    let down = run(&["down"]);
    assert_eq!(down.code, Some(0), "{}", down.stderr);
    assert_eq!(ours(), vec![foreign.clone()], "down removed a namespace it did not create");
    let pids = Command::new("ip").args(["netns", "pids", &foreign]).output().unwrap();
    assert!(
        String::from_utf8_lossy(&pids.stdout).contains(&sleeper.id().to_string()),
        "down killed a process it did not start"
    );

    // a failed up leaves nothing (this kernel has no netem; elsewhere pass a bad queue length)
    let bad = run(&["up", "--hosts", "3", "--bandwidth", "10mbit", "--latency", "1ms", "--queue", "notatime"]);
    assert_eq!(bad.code, Some(2), "{}", bad.stderr);
    assert_eq!(ours(), vec![foreign.clone()], "a failed up left namespaces: {}", bad.stderr);
    assert!(!std::path::Path::new(&format!("/run/{NAME}-emu")).exists(), "a failed up left its state");
    let links = Command::new("ip").args(["-o", "link"]).output().unwrap();
    assert!(!String::from_utf8_lossy(&links.stdout).contains(&format!("{NAME}e")), "a failed up left a veth");

    // a real cluster comes and goes, the foreign namespace stays
    let up = run(&["up", "--hosts", "2", "--bandwidth", "10mbit"]);
    assert_eq!(up.code, Some(0), "{}", up.stderr);
    assert_eq!(ours().len(), 4, "2 hosts + bridge + the foreign one");
    assert_eq!(run(&["down"]).code, Some(0));
    assert_eq!(ours(), vec![foreign]);
    let _ = sleeper.kill();
    let _ = sleeper.wait();
}

/// The papers' scale: CodedReduce on the (4,3) tree, N = 84 workers, one rank per emulated host
/// (85 hosts). It failed here before setup and teardown went through rank 0 with sleeping waits
/// (84 ranks spinning in the library's collectives starved the one doing the work, and its
/// dissemination barrier opened connections between worker pairs that timed out).
#[test]
fn the_papers_n84_runs_one_rank_per_host() {
    let Some((_lock, down)) = cluster(&["--hosts", "85", "--bandwidth", "100mbit"], Duration::from_secs(120)) else {
        return;
    };
    let text = r#"
[run]
name = "n84"
seed = 6
iterations = 8
deadline = 60.0
trajectory = true
[data]
kind = "linear-synthetic"
samples = 840
features = 30
[model]
loss = "least-squares"
lr = 0.3
[scheme]
kind = "cr"
n = 4
layers = 3
s = 1
[stragglers]
model = "fixed"
workers = [5, 30, 77]
factor = 4.0
[timing]
compute = "modelled"
a = 1e-4
"#;
    let (_dir, _, rd) = run_exact("emu-n84", text, Duration::from_secs(300));
    assert_eq!(summary(&rd)["exact_iterations"], 8);
    assert_own_hosts(&rd, [0, 1, 42, 84]);
    drop(down);
    assert!(namespaces().is_empty(), "down left namespaces behind: {:?}", namespaces());
}

/// A server with a faster NIC than its workers (`up --server`, the papers' EC2 setting) takes
/// their uploads at once: each crosses its own worker's link. The master matched one result at
/// a time and received it in full before matching the next (`MPI_Mrecv`), and a result above
/// Open MPI's eager limit moves only once it is matched, so the uploads crossed one after
/// another: 3 workers' results of 160 KB at 20 Mbit/s took 64 ms each in turn (measured with 12
/// workers: 793 ms per iteration, 138 ms once received together; docs/performance.md §24).
#[test]
fn a_server_with_a_faster_nic_takes_its_workers_uploads_at_once() {
    let Some((_lock, down)) =
        cluster(&["--hosts", "4", "--bandwidth", "20mbit", "--server", "1gbit"], Duration::from_secs(60))
    else {
        return;
    };
    // a second link model on top is refused (and the cluster is left as it was)
    assert_up_refused(
        &["--hosts", "4", "--bandwidth", "20mbit", "--down", "1gbit", "--server", "1gbit"],
        "--down and --server",
    );
    let status = emu(&["status"], Duration::from_secs(30));
    assert!(status.stdout.contains("the master's host 1gbit both ways"), "{}", status.stdout);
    // UMW, 3 workers, p = 20 000: a model and a result of 160 KB each, 64 ms at 20 Mbit/s
    let text = r#"
[run]
name = "server"
seed = 8
iterations = 12
deadline = 30.0
trajectory = true
[data]
kind = "linear-synthetic"
samples = 30
features = 20000
[model]
loss = "least-squares"
lr = 0.001
[scheme]
kind = "umw"
workers = 3
[timing]
compute = "modelled"
a = 1e-5
"#;
    let (_dir, _, rd) = run_exact("emu-server", text, Duration::from_secs(120));
    let s = summary(&rd);
    assert_eq!(s["exact_iterations"], 12, "{s}");
    // each iteration: the model crosses each worker's link (one transfer, the three at once from
    // the 1 Gbit/s server), then the results: received together about one transfer more (130.6
    // ms measured), one after another three more (250.7 ms with the receive before); the bound
    // is three transfers (the bytes each link carries set these, not this host's speed)
    let one = 8.0 * (16.0 + 8.0 * 20_001.0) / 20e6;
    let mean = s["steady_mean_s"].as_f64().unwrap();
    eprintln!("server links: {:.1} ms per iteration (one transfer {:.1} ms)", mean * 1e3, one * 1e3);
    assert!(mean < 3.0 * one, "{:.1} ms per iteration: the uploads crossed one after another", mean * 1e3);
    drop(down);
    assert!(namespaces().is_empty(), "down left namespaces behind: {:?}", namespaces());
}

/// `outrun reproduce cegc-ec2 --quick`: seed 001's EC2 comparison measured by the engine on 13
/// emulated hosts through the reproduction's script (both link models, one repetition of 6
/// iterations; about 1.5 min), run by the command itself with this build. Ours is checked
/// against the runs the script leaves: CommFR-GC's saving over GC recomputed from their
/// summaries, every iteration of every run exact. The script's run directory is removed when
/// the test passes and kept when it fails.
#[test]
fn reproduce_measures_an_emulated_result() {
    if std::env::var_os("OUTRUN_SKIP_NETNS").is_some() {
        eprintln!("SKIPPED by OUTRUN_SKIP_NETNS: emulated cluster test");
        return;
    }
    let _lock = mpi_lock();
    let mut cmd = Command::new(bin());
    cmd.args(["reproduce", "cegc-ec2", "--quick", "--json"]);
    let run = run_with_timeout(cmd, Duration::from_secs(600));
    assert_eq!(run.code, Some(0), "{}", run.stderr);
    let v: serde_json::Value = serde_json::from_str(&run.stdout).expect("--json prints only the outcomes");
    let out = &v[0];
    assert_eq!(out["method"], "emulated", "{out}");
    let notes: Vec<&str> = out["notes"].as_array().unwrap().iter().map(|n| n.as_str().unwrap()).collect();
    assert!(notes.iter().any(|n| n.contains("every iteration of every run decoded")), "{notes:?}");
    // the runs: `runs/reproduce-comm-upload-<time>/` under the repository's root
    let root = Path::new(env!("CARGO_MANIFEST_DIR")).join("../..");
    let at = notes.iter().find_map(|n| n.strip_prefix("the runs and their page: ")).expect("a note names the runs");
    let dir = root.join(at.split('/').take(2).collect::<Vec<_>>().join("/"));
    assert!(dir.join("comm-upload.md").is_file(), "the page goes to the run directory: {}", dir.display());
    let steady = |name: &str| {
        let runs: Vec<PathBuf> = std::fs::read_dir(dir.join("runs"))
            .unwrap()
            .map(|e| e.unwrap().path())
            .filter(|p| p.file_name().unwrap().to_string_lossy().starts_with(&format!("{name}-r1-")))
            .collect();
        assert_eq!(runs.len(), 1, "{name}: {runs:?}");
        let s = summary(&runs[0]);
        assert_eq!(s["iterations"], 6, "{name}: {s}");
        assert_eq!(s["exact_iterations"], s["iterations"], "{name}: {s}");
        s["steady_mean_s"].as_f64().unwrap()
    };
    let rows = out["rows"].as_array().unwrap();
    let ours = |quantity: &str| {
        let row = rows.iter().find(|r| r["quantity"].as_str().unwrap().contains(quantity)).unwrap();
        assert!(matches!(row["verdict"].as_str(), Some("reproduced" | "deviates")), "{row}");
        assert!(row["verdict"] == "reproduced" || row["why"].is_string(), "a deviation says why: {row}");
        row["ours"].as_f64().unwrap()
    };
    let vs_gc = 100.0 * (1.0 - steady("server-cegc-systematic") / steady("server-gc-cyclic"));
    assert!((ours("against GC") - vs_gc).abs() < 1e-9, "{} against {vs_gc}", ours("against GC"));
    // halving the upload saves time against GC wherever the upload is part of an iteration
    assert!(vs_gc > 5.0, "CommFR-GC saves {vs_gc:.1} % against GC with server links");
    assert!(ours("best other code") <= vs_gc + 1e-9);
    std::fs::remove_dir_all(&dir).unwrap();
}
