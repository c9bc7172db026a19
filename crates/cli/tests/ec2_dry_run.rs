//! The EC2 scripts' dry runs: every script prints the AWS and ssh commands it would run, with
//! the options the user gave, and a full experiment provisions, installs, runs and terminates.

mod common;

use std::path::PathBuf;
use std::process::Command;
use std::time::Duration;

use common::*;

fn repo() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../..")
}

fn script(name: &str, args: &[&str]) -> Run {
    let mut cmd = Command::new(repo().join("scripts/ec2").join(name));
    cmd.current_dir(repo()).env("OUTRUN_BIN", bin()).args(args);
    run_with_timeout(cmd, Duration::from_secs(60))
}

#[test]
fn full_experiment_dry_run_prints_every_step() {
    let state = tempdir("ec2");
    let st = state.to_str().unwrap();
    let r = script(
        "experiment.sh",
        &[
            "--dry-run",
            "--state",
            st,
            "--count",
            "4",
            "--ami",
            "ami-0abc",
            "--key",
            "k1",
            "--key-file",
            "/keys/k1.pem",
            "--type",
            "c5.large",
            "--region",
            "eu-west-1",
            "--slots",
            "3",
            "configs/quick.toml",
            "--set",
            "run.iterations=5",
        ],
    );
    assert_eq!(r.code, Some(0), "{}\n{}", r.stdout, r.stderr);
    let out = &r.stdout;
    let has = |needle: &str| assert!(out.contains(needle), "missing `{needle}` in:\n{out}");
    has("aws --region eu-west-1 ec2 create-placement-group --group-name outrun-pg --strategy cluster");
    has("ec2 create-security-group");
    has("authorize-security-group-ingress --group-id sg-DRYRUN --protocol all --source-group sg-DRYRUN");
    has("ec2 run-instances --image-id ami-0abc --count 4 --instance-type c5.large --key-name k1 --security-group-ids sg-DRYRUN --placement GroupName=outrun-pg");
    has("ec2 wait instance-running --instance-ids i-DRYRUN00 i-DRYRUN01 i-DRYRUN02 i-DRYRUN03");
    has("-i /keys/k1.pem 203.0.113.13 true");
    has("sudo\\ bash\\ ./setup.sh");
    has("/keys/k1.pem 203.0.113.10 cd\\ \\&\\&\\ mpirun\\ --hostfile\\ outrun-work/hostfile\\ -np\\ 10");
    has("203.0.113.12:outrun-work/runs/NAME-STAMP");
    has("ec2 terminate-instances --instance-ids i-DRYRUN00 i-DRYRUN01 i-DRYRUN02 i-DRYRUN03");
    has("ec2 delete-security-group --group-id sg-DRYRUN");
    // terminate comes last
    assert!(out.rfind("terminate-instances").unwrap() > out.rfind("mpirun").unwrap());
    // the hostfile has private addresses, the master alone on the first host
    let hostfile = std::fs::read_to_string(state.join("hostfile")).unwrap();
    assert_eq!(hostfile, "10.0.0.10 slots=1\n10.0.0.11 slots=3\n10.0.0.12 slots=3\n10.0.0.13 slots=3\n");
}

#[test]
fn each_script_has_a_dry_run_and_checks_its_arguments() {
    let state = tempdir("ec2b");
    let st = state.to_str().unwrap();
    let p = script(
        "provision.sh",
        &["--dry-run", "--state", st, "--count", "2", "--ami", "a", "--key", "k", "--security-group", "sg-1"],
    );
    assert_eq!(p.code, Some(0), "{}", p.stderr);
    assert!(!p.stdout.contains("create-security-group"), "an existing group is used as given");
    assert!(p.stdout.contains("--security-group-ids sg-1"));
    for (name, args) in
        [("install.sh", vec!["--dry-run", "--state", st]), ("terminate.sh", vec!["--dry-run", "--state", st])]
    {
        let r = script(name, &args);
        assert_eq!(r.code, Some(0), "{name}: {}", r.stderr);
        assert!(r.stdout.lines().count() >= 2, "{name} printed nothing");
    }
    let r = script(
        "run.sh",
        &[
            "--dry-run",
            "--state",
            st,
            "configs/quick.toml",
            "--set",
            "scheme.workers=1",
            "--set",
            "scheme.s=0",
            "--set",
            "scheme.kind=umw",
            "--set",
            "stragglers.model=none",
        ],
    );
    assert_eq!(r.code, Some(0), "{}", r.stderr);
    assert!(r.stdout.contains("mpirun\\ --hostfile\\ outrun-work/hostfile\\ -np\\ 2"), "{}", r.stdout);
    // missing arguments and too small a cluster are clear errors
    let bad = script("provision.sh", &["--dry-run", "--state", st, "--count", "2"]);
    assert_eq!(bad.code, Some(2));
    assert!(bad.stderr.contains("--count and --ami are required"), "{}", bad.stderr);
    let nokey = script("provision.sh", &["--dry-run", "--state", st, "--count", "2", "--ami", "ami-1"]);
    assert!(nokey.stderr.contains("give --key NAME (an existing key pair) or --create-key"), "{}", nokey.stderr);
    let small = script("run.sh", &["--dry-run", "--state", st, "configs/quick.toml"]);
    assert_eq!(small.code, Some(2));
    assert!(small.stderr.contains("needs 10 MPI ranks but"), "{}", small.stderr);
    // an option without its value: one line (it was bash's "$2: unbound variable")
    for (name, args) in [("provision.sh", vec!["--dry-run", "--count"]), ("run.sh", vec!["--dry-run", "--state"])] {
        let r = script(name, &args);
        assert_eq!(r.code, Some(2), "{name}: {}", r.stderr);
        assert_eq!(r.stderr.trim(), format!("ec2: {} needs a value", args[1]), "{name}");
    }
    for (launcher, args) in [("launch/cluster.sh", vec!["--hostfile"]), ("launch/emu-cluster", vec!["up", "--hosts"])] {
        let mut cmd = Command::new(repo().join(launcher));
        cmd.current_dir(repo()).env("OUTRUN_BIN", bin()).args(&args);
        let r = run_with_timeout(cmd, Duration::from_secs(60));
        assert_eq!(r.code, Some(2), "{launcher}: {}", r.stderr);
        assert!(r.stderr.trim().ends_with(&format!("{} needs a value", args.last().unwrap())), "{}", r.stderr);
    }
    // an argument the launcher's check refuses points to the launcher's help, not outrun check's
    let mut cmd = Command::new(repo().join("launch/local.sh"));
    cmd.current_dir(repo()).env("OUTRUN_BIN", bin()).args(["configs/quick.toml", "--sett", "a"]);
    let r = run_with_timeout(cmd, Duration::from_secs(60));
    assert_eq!(r.code, Some(2), "{}", r.stderr);
    assert!(r.stderr.trim().ends_with("(`launch/local.sh --help` lists the arguments)"), "{}", r.stderr);
}

/// launch/cluster.sh ships a Python model's module with the binary and the config, points the
/// config at the copy, and passes the ranks the virtual environment they import from.
#[test]
fn cluster_dry_run_ships_a_python_module() {
    let dir = tempdir("cluster-python");
    let hosts = dir.join("hosts");
    std::fs::write(&hosts, "h1 slots=1\nh2 slots=8\n").unwrap();
    let mut cmd = Command::new(repo().join("launch/cluster.sh"));
    cmd.current_dir(repo()).env("OUTRUN_BIN", bin()).env("VIRTUAL_ENV", python_env());
    cmd.args(["--dry-run", "--hostfile", hosts.to_str().unwrap(), "examples/python/least-squares.toml"]);
    let r = run_with_timeout(cmd, Duration::from_secs(60));
    assert_eq!(r.code, Some(0), "{}\n{}", r.stdout, r.stderr);
    let rsync = r.stdout.lines().find(|l| l.starts_with("rsync") && l.contains(" h2:outrun-work/")).unwrap();
    assert!(rsync.contains("/in/least_squares.py h2:outrun-work/"), "{rsync}");
    assert!(r.stderr.contains("examples/python/least_squares.py goes to outrun-work/least_squares.py"), "{}", r.stderr);
    let mpirun = r.stdout.lines().find(|l| l.starts_with("mpirun")).unwrap();
    assert!(mpirun.contains("-x VIRTUAL_ENV -x OMP_NUM_THREADS=1 "), "{mpirun}");
    assert!(mpirun.contains("--set job.module=outrun-work/least_squares.py"), "{mpirun}");
}

/// launch/cluster.sh ships every file the ranks read — not only `data.path`: an IDX set's labels
/// and held-out files stayed at this machine's paths, which other hosts lack — each under a name
/// of its own (two files both named `d.csv` in different folders), and points the config at the
/// copies; a hostfile's `slots=x` is named with its line.
#[test]
fn cluster_dry_run_ships_every_file_the_ranks_read() {
    let dir = tempdir("cluster-files");
    let hosts = dir.join("hosts");
    std::fs::write(&hosts, "h1 slots=1\nh2 slots=16\n").unwrap();
    let dry = |config: &str, hosts: &std::path::Path| {
        let mut cmd = Command::new(repo().join("launch/cluster.sh"));
        cmd.current_dir(repo()).env("OUTRUN_BIN", bin());
        cmd.args(["--dry-run", "--hostfile", hosts.to_str().unwrap(), config]);
        run_with_timeout(cmd, Duration::from_secs(60))
    };
    let r = dry("configs/mlp-mnist.toml", &hosts);
    assert_eq!(r.code, Some(0), "{}\n{}", r.stdout, r.stderr);
    let rsync = r.stdout.lines().find(|l| l.starts_with("rsync") && l.contains(" h2:outrun-work/")).unwrap();
    let mpirun = r.stdout.lines().find(|l| l.starts_with("mpirun")).unwrap();
    for (key, file) in [
        ("data.path", "mnist-5k-train-images.idx.gz"),
        ("data.labels_path", "mnist-5k-train-labels.idx.gz"),
        ("data.test_path", "mnist-5k-test-images.idx.gz"),
        ("data.test_labels_path", "mnist-5k-test-labels.idx.gz"),
    ] {
        assert!(rsync.contains(&format!("/in/{file} ")), "{key}: {rsync}");
        assert!(mpirun.contains(&format!("--set {key}=outrun-work/{file}")), "{key}: {mpirun}");
        assert!(r.stderr.contains(&format!("cluster: {key} ")), "{key}: {}", r.stderr);
    }
    // two files of one name: the second copy is named after its key
    for sub in ["train", "test"] {
        std::fs::create_dir_all(dir.join(sub)).unwrap();
        std::fs::write(dir.join(sub).join("d.csv"), "1,0.5,2\n0,1.5,3\n1,0.2,1\n").unwrap();
    }
    let cfg = dir.join("csv.toml");
    std::fs::write(
        &cfg,
        "[run]\nname='c'\niterations=2\n[data]\nkind='csv'\npath='train/d.csv'\ntest_path='test/d.csv'\n[model]\nloss='logistic'\nlr=0.1\n[scheme]\nkind='umw'\nworkers=2\n",
    )
    .unwrap();
    let r = dry(cfg.to_str().unwrap(), &hosts);
    assert_eq!(r.code, Some(0), "{}\n{}", r.stdout, r.stderr);
    let mpirun = r.stdout.lines().find(|l| l.starts_with("mpirun")).unwrap();
    assert!(mpirun.contains("--set data.path=outrun-work/d.csv "), "{mpirun}");
    assert!(mpirun.contains("--set data.test_path=outrun-work/data.test_path-d.csv"), "{mpirun}");
    // a slot count that is not a number
    std::fs::write(&hosts, "h1 slots=1\nh2 slots=x\n").unwrap();
    let r = dry(cfg.to_str().unwrap(), &hosts);
    assert_eq!(r.code, Some(2), "{}", r.stderr);
    assert!(r.stderr.trim().ends_with(":2: slots=x is not a whole number of slots, 1 or more"), "{}", r.stderr);
}
