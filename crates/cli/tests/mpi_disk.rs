//! A full disk during a run (issue 9, item 7): the master warns in one line, 16 iterations in,
//! that the run directory would outgrow its disk; the rank logs that refuse lines are reported in
//! one line by the master, naming the files and the error, instead of one warning per rank; the
//! run itself goes on and ends with one error line when its summary cannot be written. Needs
//! root (a small tmpfs is mounted for the run directory); set OUTRUN_SKIP_MOUNT=1 to skip it
//! explicitly where that is impossible.

mod common;

use std::process::Command;
use std::time::Duration;

use common::*;

/// A mounted tmpfs, unmounted when dropped.
struct Mount(std::path::PathBuf);

impl Drop for Mount {
    fn drop(&mut self) {
        let _ = Command::new("umount").arg(&self.0).status();
    }
}

/// A `size` tmpfs mounted at `dir/small` (unmounted when the `Mount` drops), or `None` where
/// OUTRUN_SKIP_MOUNT says this host cannot mount one (it needs root).
fn small_disk(dir: &std::path::Path, size: &str) -> Option<(std::path::PathBuf, Mount)> {
    if std::env::var_os("OUTRUN_SKIP_MOUNT").is_some() {
        eprintln!("skipped: OUTRUN_SKIP_MOUNT is set");
        return None;
    }
    let small = dir.join("small");
    std::fs::create_dir(&small).unwrap();
    let st = Command::new("mount")
        .args(["-t", "tmpfs", "-o", &format!("size={size}"), "tmpfs"])
        .arg(&small)
        .status()
        .unwrap();
    assert!(st.success(), "mount tmpfs (needs root; OUTRUN_SKIP_MOUNT=1 skips this test)");
    Some((small.clone(), Mount(small)))
}

#[test]
fn a_full_disk_is_reported_once() {
    if std::env::var_os("OUTRUN_SKIP_MOUNT").is_some() {
        eprintln!("skipped: OUTRUN_SKIP_MOUNT is set");
        return;
    }
    let uid = Command::new("id").arg("-u").output().unwrap();
    assert_eq!(
        String::from_utf8_lossy(&uid.stdout).trim(),
        "0",
        "the full-disk test needs root to mount a tmpfs (or set OUTRUN_SKIP_MOUNT=1 to skip it)"
    );
    let _lock = mpi_lock();
    let dir = tempdir("disk");
    let Some((small, _m)) = small_disk(&dir, "48k") else { return };
    let text = format!(
        "[run]\nname='disk'\niterations=300\ndeadline=10.0\nout_dir='{}'\n[data]\nkind='linear-synthetic'\nsamples=400\nfeatures=5\n[model]\nloss='least-squares'\nlr=0.1\n[scheme]\nkind='umw'\nworkers=4\n[timing]\ncompute='modelled'\na=1e-6\n",
        small.display()
    );
    let cfg = write_config(&dir, &text);
    let run = mpirun(5, &cfg, &[], Duration::from_secs(120));
    let lines = common::said(&run.stderr);
    assert!(!run.stderr.contains("further lines to it are dropped"), "no per-rank warnings:\n{}", run.stderr);
    let warn: Vec<&&str> = lines.iter().filter(|l| l.contains("refused log lines")).collect();
    assert_eq!(warn.len(), 1, "one line for the dropped logs:\n{}", run.stderr);
    assert!(
        warn[0].contains("rank-0.jsonl")
            && warn[0].contains("rank-1.jsonl")
            && warn[0].contains("No space left on device"),
        "{}",
        warn[0]
    );
    // the run went on to the end; its summary could not be written: one error line, exit ≠ 0
    assert_ne!(run.code, Some(0));
    outgrown_first(&lines, &run.stderr);
    assert!(lines.len() <= 3, "at most the two warnings and the error:\n{}", run.stderr);
}

/// The master's one line, 16 iterations into the loop, that the run directory would outgrow the
/// free space on its disk before the last iteration, as the first line of `lines` and the only
/// one of its kind.
fn outgrown_first(lines: &[&str], stderr: &str) {
    let early: Vec<&&str> = lines.iter().filter(|l| l.contains("the run directory would grow by")).collect();
    assert_eq!(early.len(), 1, "one early warning that the disk is too small:\n{stderr}");
    assert!(lines[0].starts_with("warning: ") && lines[0].contains("the run directory would grow by"), "{stderr}");
    assert!(lines[0].contains("free on its disk") && lines[0].contains("run.out_dir"), "{}", lines[0]);
}

/// A run directory on a disk that is full from the start: one line from the rank that could not
/// write, exit 2, at once. (The rank stopped alone and left the others in a barrier until the
/// launcher's bound stopped the job: 60 s with OUTRUN_TIMEOUT=60.)
#[test]
fn a_disk_full_at_the_start_ends_the_run_at_once_in_one_line() {
    let _lock = mpi_lock();
    let dir = tempdir("disk-full");
    let Some((small, _m)) = small_disk(&dir, "64k") else { return };
    // fill it: only the run directory's own entry fits
    let mut filler = std::fs::File::create(small.join("filler")).unwrap();
    let _ = std::io::Write::write_all(&mut filler, &vec![0u8; 1 << 20]);
    drop(filler);
    let text = format!(
        "[run]\nname='full'\niterations=50\ndeadline=10.0\nout_dir='{}'\n[data]\nkind='linear-synthetic'\nsamples=400\nfeatures=5\n[model]\nloss='least-squares'\nlr=0.1\n[scheme]\nkind='umw'\nworkers=4\n",
        small.display()
    );
    let cfg = write_config(&dir, &text);
    let run = mpirun(5, &cfg, &[], Duration::from_secs(30));
    let lines = common::said(&run.stderr);
    assert_eq!(run.code, Some(2), "{}", run.stderr);
    assert_eq!(lines.len(), 1, "{}", run.stderr);
    assert!(lines[0].contains("No space left on device"), "{}", lines[0]);
    assert!(run.elapsed < Duration::from_secs(15), "{:?}", run.elapsed);
}

/// A disk that fills while the run writes checkpoints: one error line naming the checkpoint that
/// could not be written, and at most the master's one line for the rank logs that dropped lines
/// (the ranks the failed run stopped no longer each warn about their own), exit 1, and no
/// `checkpoint.json.tmp` left behind — the last complete checkpoint stays.
#[test]
fn a_disk_that_fills_during_checkpoints_ends_in_one_line_and_leaves_no_temporary_file() {
    let _lock = mpi_lock();
    let dir = tempdir("disk-ckpt");
    let Some((small, _m)) = small_disk(&dir, "128k") else { return };
    let text = format!(
        "[run]\nname='ckpt'\niterations=3000\ndeadline=10.0\ncheckpoint_every=1\nout_dir='{}'\n[data]\nkind='linear-synthetic'\nsamples=400\nfeatures=40\n[model]\nloss='least-squares'\nlr=0.1\n[scheme]\nkind='gc-cyclic'\nworkers=4\ns=1\n[timing]\ncompute='modelled'\na=1e-6\n",
        small.display()
    );
    let cfg = write_config(&dir, &text);
    let run = mpirun(5, &cfg, &[], Duration::from_secs(120));
    let lines = common::said(&run.stderr);
    assert_eq!(run.code, Some(1), "{}", run.stderr);
    // the early warning, the error, and at most the master's one line for the rank logs it heard of
    outgrown_first(&lines, &run.stderr);
    let (errors, others): (Vec<&str>, Vec<&str>) = lines[1..].iter().partition(|l| l.starts_with("error: "));
    assert_eq!(errors.len(), 1, "one error line:\n{}", run.stderr);
    assert!(others.len() <= 1 && others.iter().all(|l| l.contains("refused log lines")), "{}", run.stderr);
    assert!(
        errors[0].contains("cannot write the checkpoint of iteration") && errors[0].contains("No space left on device"),
        "{}",
        errors[0]
    );
    let runs: Vec<_> = std::fs::read_dir(&small).unwrap().flatten().map(|e| e.path()).collect();
    assert_eq!(runs.len(), 1, "{runs:?}");
    assert!(!runs[0].join("checkpoint.json.tmp").exists(), "a temporary checkpoint was left in {}", runs[0].display());
    let last = outrun_runlog::Checkpoint::read(&runs[0]).expect("the last complete checkpoint");
    assert!(last.iteration > 0 && last.iteration < 3000, "{}", last.iteration);
}

/// A sweep whose disk fills stops after the run that failed, instead of starting every run
/// left only to fail it in turn (each a launch of its own): one line naming the directory, the
/// error and how many runs were not started; exit 1. The test's launcher fills the disk and
/// fails, counting its launches in a file off that disk.
#[test]
fn a_sweep_on_a_full_disk_stops_after_the_failed_run() {
    let dir = tempdir("disk-sweep");
    let Some((small, _m)) = small_disk(&dir, "256k") else { return };
    std::fs::write(dir.join("base.toml"), "[run]\nname='sw'\niterations=3\n[data]\nkind='linear-synthetic'\nsamples=40\nfeatures=3\n[model]\nloss='least-squares'\nlr=0.1\n[scheme]\nkind='umw'\nworkers=2\n").unwrap();
    let count = dir.join("launches");
    let launcher = format!(
        "launcher = ['sh', '-c', 'echo x >> {}; head -c 1048576 /dev/zero > {}/fill 2>/dev/null; echo \"error: cannot write: No space left on device\" >&2; exit 1', 'sh']\n",
        count.display(),
        small.display()
    );
    let file = dir.join("sweep.toml");
    std::fs::write(&file, format!("base = 'base.toml'\n{launcher}[[axis]]\nkey = 'run.seed'\nvalues = [1, 2, 3]\n"))
        .unwrap();
    let mut c = Command::new(bin());
    c.arg("sweep").arg(&file).arg("--out").arg(small.join("sweep"));
    let r = run_with_timeout(c, Duration::from_secs(60));
    assert_eq!(r.code, Some(1), "{}", r.stderr);
    assert_eq!(std::fs::read_to_string(&count).unwrap(), "x\n", "one launch:\n{}", r.stderr);
    let last = said(&r.stderr).last().copied().unwrap_or_default();
    assert!(
        last.starts_with("error: sweep stopped after v00-seed-1-rep1 (1 of 3): cannot write in")
            && last.contains("No space left on device")
            && last.contains("2 runs not started"),
        "{}",
        r.stderr
    );
}
