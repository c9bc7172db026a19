//! `outrun sweep`: run every variant of a sweep file through a launcher, repetitions
//! interleaved, with progress; resume where a previous invocation stopped; end with the sweep's
//! report. The expansion is `outrun_config::sweep`, the report `outrun_report::sweep`.

use std::path::{Path, PathBuf};
use std::process::{Command, ExitStatus, Stdio};
use std::sync::atomic::{AtomicI32, Ordering};
use std::time::{Duration, Instant};

use outrun_config::sweep::{as_name, valid_name, Sweep, Variant, MAX_NAME};
use outrun_report::sweep::SweepRow;
use outrun_runlog::Summary;

use crate::Failure;

/// Options of `outrun sweep`.
pub(crate) struct Options {
    /// The sweep file.
    pub file: PathBuf,
    /// Replace the file's launcher (e.g. `launch/emu-cluster run`).
    pub launcher: Option<String>,
    /// Print the runs instead of running them.
    pub dry_run: bool,
    /// The sweep's directory instead of the file's.
    pub out: Option<PathBuf>,
    /// The base config instead of the file's.
    pub base: Option<PathBuf>,
    /// Repetitions instead of the file's.
    pub repetitions: Option<usize>,
}

fn input(e: impl std::fmt::Display) -> Failure {
    Failure(e.to_string(), 2)
}

/// Run directories of `name` (`<name>-<UTC time>`) in `runs`.
fn dirs_of(runs: &Path, name: &str) -> Vec<PathBuf> {
    let prefix = format!("{name}-");
    let mut v: Vec<PathBuf> = std::fs::read_dir(runs)
        .map(|rd| {
            rd.filter_map(|e| e.ok().map(|e| e.path()))
                .filter(|p| {
                    p.is_dir()
                        && p.file_name()
                            .and_then(|f| f.to_str())
                            .is_some_and(|f| f.starts_with(&prefix) && f[prefix.len()..].starts_with(char::is_numeric))
                })
                .collect()
        })
        .unwrap_or_default();
    v.sort();
    v
}

fn finished(runs: &Path, name: &str) -> Option<(PathBuf, Summary)> {
    dirs_of(runs, name).into_iter().find_map(|d| outrun_runlog::read::summary(&d).ok().map(|s| (d, s)))
}

/// The launcher's program: a bare command (found on PATH), a path that exists from the current
/// directory, or else a path relative to the checkout this binary was built in
/// (`<checkout>/target/<profile>/outrun`), so a sweep runs from any directory.
fn find_launcher(given: &str) -> Result<String, String> {
    let p = Path::new(given);
    if !given.contains('/') {
        // a bare command is looked up on PATH only (as the launch will look it up)
        let path = std::env::var_os("PATH").unwrap_or_default();
        if std::env::split_paths(&path).any(|d| d.join(given).is_file()) {
            return Ok(given.to_string());
        }
        return Err(format!("launcher `{given}` is not a command on PATH; give its path (e.g. ./{given})"));
    }
    if p.is_file() {
        return Ok(given.to_string());
    }
    let exe = std::env::current_exe().ok();
    if p.is_relative() {
        let roots = exe.iter().flat_map(|e| e.ancestors().skip(1).take(3));
        if let Some(found) = roots.map(|root| root.join(p)).find(|c| c.is_file()) {
            return Ok(found.display().to_string());
        }
    }
    let checkout =
        exe.as_ref().and_then(|e| e.ancestors().nth(3)).map_or(String::new(), |c| format!(" or in {}", c.display()));
    Err(format!("launcher `{given}` not found in the current directory{checkout}; give its path"))
}

/// The signal that interrupted the sweep (0: none).
static STOP: AtomicI32 = AtomicI32::new(0);

extern "C" fn on_signal(sig: libc::c_int) {
    STOP.store(sig, Ordering::SeqCst);
}

/// Wait for the launcher; if the sweep is interrupted (INT or TERM), pass one TERM on to the
/// launcher (which stops its MPI job) and wait for it to finish.
fn wait(mut child: std::process::Child) -> std::io::Result<(ExitStatus, bool)> {
    let mut forwarded = false;
    loop {
        if let Some(st) = child.try_wait()? {
            return Ok((st, forwarded));
        }
        if !forwarded && STOP.load(Ordering::SeqCst) != 0 {
            // SAFETY: kill(2) on our own child's pid
            unsafe {
                libc::kill(child.id() as libc::pid_t, libc::SIGTERM);
            }
            forwarded = true;
        }
        std::thread::sleep(Duration::from_millis(50));
    }
}

/// What a launcher said, as [`capture`] kept it.
struct Said {
    /// Its last lines (at most [`KEPT_LINES`]).
    last: std::collections::VecDeque<String>,
    /// Why its log stopped taking lines, if it did (a full disk).
    unwritten: Option<std::io::Error>,
}

/// Lines of a launcher's output kept in memory.
const KEPT_LINES: usize = 20;

/// A pipe for a launcher's output, whose reading end a thread copies into `log` line by line
/// (so `tail -f` follows a run) keeping the last lines: a run that fails because its disk is
/// full cannot write its reason into a log on that disk, and the sweep says it from memory.
/// The receiver gets what was said once every writer has closed the pipe.
fn capture(log: &Path) -> std::io::Result<(std::io::PipeWriter, std::sync::mpsc::Receiver<Said>)> {
    use std::io::{BufRead, Write};
    let mut file = std::fs::File::create(log)?;
    let (reader, writer) = std::io::pipe()?;
    let (tx, rx) = std::sync::mpsc::channel();
    std::thread::spawn(move || {
        let mut said = Said { last: Default::default(), unwritten: None };
        let mut reader = std::io::BufReader::new(reader);
        let mut line = Vec::new();
        while reader.read_until(b'\n', &mut line).is_ok_and(|n| n > 0) {
            if said.unwritten.is_none() {
                said.unwritten = file.write_all(&line).err();
            }
            let text = String::from_utf8_lossy(&line).trim_end().to_string();
            if !text.is_empty() {
                if said.last.len() == KEPT_LINES {
                    said.last.pop_front();
                }
                said.last.push_back(text);
            }
            line.clear();
        }
        let _ = tx.send(said);
    });
    Ok((writer, rx))
}

/// Whether `dir` still takes a file: after a failed run, a sweep whose disk is full (or turned
/// read-only, or over its quota) stops instead of failing every run left in turn. The probe
/// writes and syncs 64 KiB, the size of a small run's logs, and removes it.
fn writable(dir: &Path) -> std::io::Result<()> {
    use std::io::Write;
    let probe = dir.join(".space-probe");
    let written = std::fs::File::create(&probe).and_then(|mut f| {
        f.write_all(&[0u8; 64 << 10])?;
        f.sync_all()
    });
    let _ = std::fs::remove_file(&probe);
    written
}

/// The line that says why a run failed: its last `error:` line, else its last line.
fn reason(said: &Said) -> Option<&str> {
    said.last.iter().rev().find(|l| l.starts_with("error:")).or(said.last.back()).map(String::as_str)
}

/// `1 run`, `2 runs`.
fn counted(n: usize, what: &str) -> String {
    format!("{n} {what}{}", if n == 1 { "" } else { "s" })
}

/// `42s`, `3m07s`, `4h16m` (rounded to the second first, so no `59.6` shows as `60`).
pub(crate) fn minutes(s: f64) -> String {
    let s = s.max(0.0).round() as u64;
    match s {
        0..60 => format!("{s}s"),
        60..3600 => format!("{}m{:02}s", s / 60, s % 60),
        _ => format!("{}h{:02}m", s / 3600, s % 3600 / 60),
    }
}

/// `outrun sweep`.
pub(crate) fn run(o: &Options) -> Result<(), Failure> {
    let text = outrun_workloads::input::read_to_string(&o.file)
        .map_err(|e| input(format!("cannot read sweep `{}`: {e}", o.file.display())))?;
    let mut sweep = Sweep::parse(&text).map_err(|e| input(format!("{}: {e}", o.file.display())))?;
    if let Some(r) = o.repetitions {
        sweep.set_repetitions(r).map_err(|e| input(format!("--repetitions {r}: {e}")))?;
    }
    let here = o.file.parent().unwrap_or(Path::new("."));
    let base = o.base.clone().unwrap_or_else(|| here.join(&sweep.base));
    let base_text = outrun_workloads::input::read_to_string(&base)
        .map_err(|e| input(format!("{}: base: cannot read `{}`: {e}", o.file.display(), base.display())))?;
    let variants = sweep.expand(&base_text).map_err(|e| input(format!("{}: {e}", o.file.display())))?;
    // the default name is the file's stem, made a directory name (as the variants' labels are)
    let name = sweep.name.clone().unwrap_or_else(|| {
        let stem = o.file.file_stem().map_or("sweep".into(), |s| s.to_string_lossy().into_owned());
        let stem: String = as_name(&stem).chars().take(MAX_NAME).collect();
        if valid_name(&stem) {
            stem
        } else {
            "sweep".into()
        }
    });
    let out = o
        .out
        .clone()
        .unwrap_or_else(|| PathBuf::from(sweep.out_dir.clone().unwrap_or_else(|| format!("runs/sweep-{name}"))));
    let launcher: Vec<String> = match &o.launcher {
        Some(l) => l.split_whitespace().map(String::from).collect(),
        None => sweep.launcher.clone(),
    };
    if launcher.is_empty() {
        return Err(input("--launcher is empty"));
    }
    let mut launcher = launcher;
    launcher[0] = find_launcher(&launcher[0]).map_err(input)?;
    let runs = out.join("runs");
    let logs = out.join("logs");
    let total = variants.len() * sweep.repetitions;
    eprintln!(
        "sweep {name}: {} ({} of {}) × {} = {} through `{}`; results in {}",
        counted(variants.len(), "variant"),
        counted(sweep.combinations(), "combination"),
        if sweep.axes.len() == 1 { "1 axis".to_string() } else { format!("{} axes", sweep.axes.len()) },
        counted(sweep.repetitions, "repetition"),
        counted(total, "run"),
        launcher.join(" "),
        out.display()
    );
    let command = |v: &Variant, rep: usize| -> Command {
        let mut c = Command::new(&launcher[0]);
        c.args(&launcher[1..]).arg(&base);
        for s in v
            .sets
            .iter()
            .cloned()
            .chain([format!("run.name={}-rep{rep}", v.id), format!("run.out_dir={}", runs.display())])
        {
            c.arg("--set").arg(s);
        }
        c
    };
    if o.dry_run {
        for rep in 1..=sweep.repetitions {
            for v in &variants {
                println!("{:?}", command(v, rep));
            }
        }
        return Ok(());
    }
    for d in [&runs, &logs] {
        std::fs::create_dir_all(d).map_err(|e| Failure(format!("cannot create {}: {e}", d.display()), 1))?;
    }
    let manifest: Vec<serde_json::Value> =
        variants.iter().map(|v| serde_json::json!({"id": v.id, "labels": v.labels, "sets": v.sets})).collect();
    let text = serde_json::to_string_pretty(&serde_json::json!({"name": name, "base": base, "repetitions": sweep.repetitions, "launcher": launcher, "variants": manifest})).expect("serializes");
    outrun_report::write_whole(&out.join("sweep.json"), |w| w.write_all(text.as_bytes()))
        .map_err(|e| Failure(format!("cannot write {e}"), 1))?;
    // SAFETY: installing async-signal-safe handlers (one atomic store) before any child exists
    unsafe {
        libc::signal(libc::SIGINT, on_signal as *const () as libc::sighandler_t);
        libc::signal(libc::SIGTERM, on_signal as *const () as libc::sighandler_t);
    }
    let started = Instant::now();
    let (mut done, mut ran, mut skipped) = (0usize, 0usize, 0usize);
    let mut failed: Vec<String> = Vec::new();
    for rep in 1..=sweep.repetitions {
        for v in &variants {
            let run_name = format!("{}-rep{rep}", v.id);
            done += 1;
            if finished(&runs, &run_name).is_some() {
                skipped += 1;
                continue;
            }
            // a run killed half-way by an earlier invocation (or whose summary does not read):
            // keep its logs aside, run it again
            for d in dirs_of(&runs, &run_name) {
                if let (true, Err(e)) = (d.join("summary.json").exists(), outrun_runlog::read::summary(&d)) {
                    eprintln!("sweep: {run_name}: {e}; running it again (the directory is kept in incomplete/)");
                }
                let aside = out.join("incomplete");
                let moved = std::fs::create_dir_all(&aside)
                    .and_then(|()| std::fs::rename(&d, aside.join(d.file_name().expect("a run directory"))));
                if let Err(e) = moved {
                    // it stays where it is: a summary that does not read is passed over
                    eprintln!("sweep: cannot move {} into {}: {e}; left where it is", d.display(), aside.display());
                }
            }
            let elapsed = started.elapsed().as_secs_f64();
            let left = if ran > 0 {
                format!(", ~{} left", minutes(elapsed / ran as f64 * (total - done + 1) as f64))
            } else {
                String::new()
            };
            eprintln!("sweep: [{done}/{total}] {run_name}: elapsed {}{left}", minutes(elapsed));
            let log = logs.join(format!("{run_name}.log"));
            let (pipe, said) = capture(&log).map_err(|e| Failure(format!("cannot write {}: {e}", log.display()), 1))?;
            let child = command(v, rep)
                .stdin(Stdio::null())
                .stdout(pipe.try_clone().map_err(|e| Failure(e.to_string(), 1))?)
                .stderr(pipe)
                .spawn()
                .map_err(|e| Failure(format!("cannot start the launcher `{}`: {e}", launcher[0]), 1))?;
            let (status, interrupted) =
                wait(child).map_err(|e| Failure(format!("waiting for the launcher: {e}"), 1))?;
            if interrupted || STOP.load(Ordering::SeqCst) != 0 {
                return Err(Failure(format!("sweep interrupted during {run_name} ({done} of {total}); run the same command again to resume (finished runs are kept)"), 130));
            }
            ran += 1;
            // the pipe closes when the launcher's last process does (a process it left behind
            // would hold it: not waited for beyond a few seconds)
            let said = said.recv_timeout(Duration::from_secs(5)).ok();
            let unwritten = said.as_ref().and_then(|s| s.unwritten.as_ref());
            let incomplete = unwritten.map_or(String::new(), |e| format!(" (incomplete: {e})"));
            if !status.success() {
                let why = said.as_ref().and_then(reason).map_or(String::new(), |r| format!(": {r}"));
                eprintln!("sweep: {run_name} failed ({status}){why}; its output is in {}{incomplete}", log.display());
                if let Err(e) = writable(&runs) {
                    return Err(Failure(
                        format!(
                            "sweep stopped after {run_name} ({done} of {total}): cannot write in {}: {e}; {} not started (finished runs are kept: make room and run the same command again to resume)",
                            runs.display(),
                            counted(total - done, "run")
                        ),
                        1,
                    ));
                }
                failed.push(run_name);
            } else if unwritten.is_some() {
                eprintln!("sweep: {run_name}: its output is in {}{incomplete}", log.display());
            }
        }
    }
    eprintln!("sweep: {} in {}, {skipped} already done", counted(ran, "run"), minutes(started.elapsed().as_secs_f64()));
    let rows: Vec<SweepRow> = variants
        .iter()
        .map(|v| SweepRow {
            id: v.id.clone(),
            labels: v.labels.clone(),
            runs: (1..=sweep.repetitions)
                .filter_map(|rep| finished(&runs, &format!("{}-rep{rep}", v.id)))
                .map(|f| f.1)
                .collect(),
        })
        .collect();
    let report = format!(
        "# Sweep `{name}`\n\nBase config `{}`, {} variants × {} repetitions (run directories in `{}`).\n\n{}",
        base.display(),
        variants.len(),
        sweep.repetitions,
        runs.display(),
        outrun_report::sweep::markdown(&rows)
    );
    outrun_report::write_whole(&out.join("report.md"), |w| w.write_all(report.as_bytes()))
        .map_err(|e| Failure(format!("cannot write {e}"), 1))?;
    println!("{report}");
    eprintln!("sweep: report in {}", out.join("report.md").display());
    if !failed.is_empty() {
        return Err(Failure(
            format!(
                "{} of {total} runs failed: {} (logs in {}; run the sweep again to retry them)",
                failed.len(),
                failed.join(", "),
                logs.display()
            ),
            1,
        ));
    }
    Ok(())
}
