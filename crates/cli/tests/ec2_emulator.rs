//! scripts/ec2/* against an EC2 API emulator (moto_server on 127.0.0.1, the AWS CLI with
//! --endpoint-url): provision (key pair, security group, placement group if offered,
//! run-instances, wait, addresses, hostfile) and terminate, and the failure paths — more
//! instances than the account's limit (nothing is created) and an API call failing half-way
//! (everything created is removed again, one line says where it failed). The emulator and the
//! AWS CLI are installed once into target/ec2-venv (pip); where that is impossible the test says
//! so and is skipped. The ssh steps are tested against the emulated hosts (emu_cluster.rs).

mod common;

use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

use common::*;

fn root() -> PathBuf {
    PathBuf::from(concat!(env!("CARGO_MANIFEST_DIR"), "/../.."))
}

/// The venv's bin directory with moto_server and aws, installing them if needed.
fn emulator() -> Result<PathBuf, String> {
    let venv = std::env::var_os("OUTRUN_EC2_VENV").map(PathBuf::from).unwrap_or_else(|| root().join("target/ec2-venv"));
    let bin = venv.join("bin");
    if bin.join("moto_server").is_file() && bin.join("aws").is_file() {
        return Ok(bin);
    }
    let mk = run_with_timeout(
        {
            let mut c = Command::new("python3");
            c.args(["-m", "venv"]).arg(&venv);
            c
        },
        Duration::from_secs(120),
    );
    if mk.code != Some(0) {
        return Err(format!("python3 -m venv {} failed: {}", venv.display(), mk.stderr.trim()));
    }
    let pip = run_with_timeout(
        {
            let mut c = Command::new(bin.join("pip"));
            c.args(["install", "-q", "moto[server]", "awscli"]);
            c
        },
        Duration::from_secs(600),
    );
    if pip.code != Some(0) {
        return Err(format!("pip install moto[server] awscli failed: {}", pip.stderr.trim()));
    }
    Ok(bin)
}

/// A moto_server on a free port, stopped on drop.
struct Moto {
    child: Child,
    url: String,
}

impl Drop for Moto {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

fn start(bin: &Path) -> Moto {
    let port = std::net::TcpListener::bind("127.0.0.1:0").unwrap().local_addr().unwrap().port();
    let child = Command::new(bin.join("moto_server"))
        .args(["-H", "127.0.0.1", "-p", &port.to_string()])
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .spawn()
        .unwrap();
    let t0 = Instant::now();
    while std::net::TcpStream::connect(("127.0.0.1", port)).is_err() {
        assert!(t0.elapsed() < Duration::from_secs(30), "moto_server did not start");
        std::thread::sleep(Duration::from_millis(100));
    }
    Moto { child, url: format!("http://127.0.0.1:{port}") }
}

/// A command with the emulator's credentials and the venv first on PATH.
fn with_env(mut c: Command, bin: &Path, home: &Path) -> Command {
    let path = format!("{}:{}", bin.display(), std::env::var("PATH").unwrap_or_default());
    c.env("PATH", path)
        .env("AWS_ACCESS_KEY_ID", "test")
        .env("AWS_SECRET_ACCESS_KEY", "test")
        .env("AWS_DEFAULT_REGION", "us-east-1")
        // moto answers 500 to placement groups: no retries with back-off
        .env("AWS_MAX_ATTEMPTS", "1")
        .env("AWS_CONFIG_FILE", home.join("none"))
        .env("AWS_SHARED_CREDENTIALS_FILE", home.join("none"))
        .env_remove("AWS_PROFILE")
        .current_dir(root());
    c
}

fn script(bin: &Path, home: &Path, name: &str, args: &[&str], aws: Option<&Path>) -> Run {
    let mut c = with_env(Command::new(root().join("scripts/ec2").join(name)), bin, home);
    c.args(args);
    if let Some(a) = aws {
        c.env("OUTRUN_AWS", a);
    }
    run_with_timeout(c, Duration::from_secs(180))
}

/// `aws ec2 <args> --output text` against the emulator.
fn aws(bin: &Path, home: &Path, url: &str, args: &[&str]) -> String {
    let mut c = with_env(Command::new(bin.join("aws")), bin, home);
    c.args(["--endpoint-url", url, "ec2"]).args(args).args(["--output", "text"]);
    let r = run_with_timeout(c, Duration::from_secs(60));
    assert_eq!(r.code, Some(0), "aws ec2 {args:?}: {}", r.stderr);
    r.stdout
}

fn states(bin: &Path, home: &Path, url: &str) -> Vec<String> {
    aws(bin, home, url, &["describe-instances", "--query", "Reservations[].Instances[].State.Name"])
        .split_whitespace()
        .map(String::from)
        .collect()
}

fn leftovers(bin: &Path, home: &Path, url: &str) -> (usize, String, String) {
    let running = states(bin, home, url).iter().filter(|s| *s != "terminated").count();
    let groups =
        aws(bin, home, url, &["describe-security-groups", "--query", "SecurityGroups[].GroupName"]).trim().to_string();
    let keys = aws(bin, home, url, &["describe-key-pairs", "--query", "KeyPairs[].KeyName"]).trim().to_string();
    (running, groups, keys)
}

#[test]
fn provision_and_terminate_against_an_ec2_emulator() {
    let bin = match emulator() {
        Ok(b) => b,
        Err(why) => {
            eprintln!("SKIPPED: the EC2 emulator cannot be installed here ({why})");
            return;
        }
    };
    let moto = start(&bin);
    let url = moto.url.as_str();
    let dir = tempdir("ec2-emulator");
    let home = dir.to_path_buf();
    let state = dir.join("cluster");
    let st = state.to_str().unwrap();
    let common = ["--endpoint-url", url, "--state", st];
    let prov = |count: &str, aws_cmd: Option<&Path>| {
        let mut a: Vec<&str> = common.to_vec();
        a.extend(["--count", count, "--ami", "ami-12345678", "--create-key", "--no-ssh"]);
        script(&bin, &home, "provision.sh", &a, aws_cmd)
    };
    // provision 3 instances: hostfile (private addresses, the master alone), ssh addresses, key
    let p = prov("3", None);
    assert_eq!(p.code, Some(0), "{}", p.stderr);
    let hostfile = std::fs::read_to_string(state.join("hostfile")).unwrap();
    let lines: Vec<&str> = hostfile.lines().collect();
    assert_eq!(lines.len(), 3, "{hostfile}");
    assert!(
        lines
            .iter()
            .all(|l| l.ends_with(" slots=1") && l.split(' ').next().unwrap().parse::<std::net::Ipv4Addr>().is_ok()),
        "{hostfile}"
    );
    assert_eq!(std::fs::read_to_string(state.join("access")).unwrap().lines().count(), 3);
    use std::os::unix::fs::PermissionsExt;
    assert_eq!(std::fs::metadata(state.join("key.pem")).unwrap().permissions().mode() & 0o777, 0o600);
    assert_eq!(states(&bin, &home, url), vec!["running"; 3]);
    let (_, groups, keys) = leftovers(&bin, &home, url);
    assert!(groups.contains("outrun-cluster") && keys.contains("outrun-cluster"), "{groups} / {keys}");
    // a second provision into the same state is refused (a cluster is up)
    let again = prov("3", None);
    assert_eq!(again.code, Some(2));
    assert!(again.stderr.contains("a cluster is up"), "{}", again.stderr);
    // terminate: instances, security group, key pair, state files
    let t = script(&bin, &home, "terminate.sh", &common, None);
    assert_eq!(t.code, Some(0), "{}", t.stderr);
    assert_eq!(leftovers(&bin, &home, url), (0, "default".into(), String::new()));
    assert!(!state.join("instances").exists() && !state.join("key.pem").exists());
    // more instances than the account's limit (moto: max-instances = 5): refused, nothing created
    let limit = prov("6", None);
    assert_eq!(limit.code, Some(2));
    assert!(limit.stderr.contains("--count 6 is more than this account's limit of 5 instances"), "{}", limit.stderr);
    assert_eq!(leftovers(&bin, &home, url), (0, "default".into(), String::new()));
    assert_eq!(states(&bin, &home, url).len(), 3, "no instance was launched");
    // an API call failing half-way (after run-instances): everything created is removed again
    let flaky = dir.join("flaky-aws");
    std::fs::write(&flaky, "#!/usr/bin/env bash\nfor a in \"$@\"; do [ \"$a\" = describe-instances ] && { echo 'An error occurred (RequestLimitExceeded) when calling the DescribeInstances operation' >&2; exit 255; }; done\nexec aws \"$@\"\n").unwrap();
    std::fs::set_permissions(&flaky, std::fs::Permissions::from_mode(0o755)).unwrap();
    let half = prov("3", Some(&flaky));
    assert_ne!(half.code, Some(0));
    let last = half.stderr.trim().lines().last().unwrap_or("");
    assert!(
        last.starts_with(
            "ec2: provision failed at: describe-instances; terminated 3 instances, deleted security group"
        ) && last.contains("deleted key pair"),
        "{}",
        half.stderr
    );
    assert_eq!(leftovers(&bin, &home, url), (0, "default".into(), String::new()));
    assert_eq!(states(&bin, &home, url).len(), 6);
    assert!(!state.join("instances").exists() && !state.join("hostfile").exists() && !state.join("key.pem").exists());
}
