//! Results the engine measures on the emulated cluster: the result's script (one of
//! `scripts/reproduce-*.sh`) brings the cluster up, runs the schemes through mpirun, and — with
//! `OUTRUN_REPRODUCE_VALUES` naming a file — writes ours there, computed from its runs:
//! `{"values": {row key: number or null}, "why": {row key: line}, "notes": [line, …]}`, a row's
//! why saying why it has no value, or why its value is not the paper's (from the measured terms
//! that differ; shown only where the row's tolerance finds that it deviates, and a row of the
//! registry with a why of its own keeps that one).
//! The script runs with the binary that runs this command (`OUTRUN_BIN`), so what is measured is
//! the build that reports it.

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};

use serde::Deserialize;

use crate::{Computed, Ours, Result_};

/// The repository's root (the scripts and configs are relative to it), as compiled in.
pub(crate) fn root() -> PathBuf {
    Path::new(concat!(env!("CARGO_MANIFEST_DIR"), "/../..")).to_path_buf()
}

/// Whether this process may bring up the emulated cluster (network namespaces need root).
pub fn is_root() -> bool {
    // SAFETY: geteuid has no preconditions and cannot fail.
    unsafe { libc::geteuid() == 0 }
}

/// What a script writes.
#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct Written {
    values: BTreeMap<String, Option<f64>>,
    /// Why a value is absent (a row not applicable in this setting), or why a value deviates.
    #[serde(default)]
    why: BTreeMap<String, String>,
    #[serde(default)]
    notes: Vec<String>,
    /// Where a value is a median over repetitions, their smallest and largest.
    #[serde(default)]
    spread: BTreeMap<String, [f64; 2]>,
}

/// Run `result`'s script (with its `quick_args` when `quick`) and read ours back.
pub(crate) fn compute(result: &Result_, quick: bool, progress: &mut dyn FnMut(&str)) -> Result<Computed, String> {
    let script = result.script.as_deref().ok_or("names no script (papers.toml)")?;
    let root = root();
    let path = root.join(script);
    if !path.is_file() {
        return Err(format!(
            "{script} is not under {} (this binary runs it from the checkout it was built in)",
            root.display()
        ));
    }
    if !is_root() {
        return Err(format!(
            "measured on the emulated cluster, which needs root (network namespaces): `sudo outrun reproduce {}`",
            result.id
        ));
    }
    let exe = std::env::current_exe().map_err(|e| format!("cannot name this binary for {script}: {e}"))?;
    let file = std::env::temp_dir().join(format!("outrun-reproduce-{}-{}.json", result.id, std::process::id()));
    let _ = std::fs::remove_file(&file);
    // made here, new: the script writes into a file of ours, not into a link left in the shared
    // temporary directory under the name it expects
    std::fs::OpenOptions::new()
        .write(true)
        .create_new(true)
        .open(&file)
        .map_err(|e| format!("cannot create {} for {script}'s values: {e}", file.display()))?;
    let (args, time) = match (quick, &result.quick_time) {
        (true, Some(t)) => (&result.quick_args[..], t),
        _ => (&[][..], &result.time),
    };
    let with = if args.is_empty() { String::new() } else { format!(" {}", args.join(" ")) };
    progress(&format!("{script}{with} on the emulated cluster, {time}; its output follows"));
    let status = Command::new("bash")
        .arg(&path)
        .args(args)
        .current_dir(&root)
        .env("OUTRUN_BIN", &exe)
        .env("OUTRUN_REPRODUCE_VALUES", &file)
        .stdin(Stdio::null())
        // the script's words go to stderr: stdout is this command's report (--json, --markdown)
        .stdout(Stdio::from(std::io::stderr()))
        .status()
        .map_err(|e| format!("cannot start {script}: {e}"))?;
    let text = std::fs::read_to_string(&file);
    let _ = std::fs::remove_file(&file);
    if !status.success() {
        return Err(format!("{script} failed ({status}; its output above)"));
    }
    let text =
        text.map_err(|e| format!("{script} succeeded but its values cannot be read from {}: {e}", file.display()))?;
    if text.trim().is_empty() {
        return Err(format!("{script} succeeded but wrote no values to {}", file.display()));
    }
    let written: Written =
        serde_json::from_str(&text).map_err(|e| format!("{script} wrote values that do not parse: {e}"))?;
    let mut out = Computed { notes: written.notes, ..Computed::default() };
    for (key, value) in written.values {
        let note = match (value, written.why.get(&key)) {
            (_, Some(why)) => Some(why.clone()),
            (None, None) => Some(format!("{script} measured no value for `{key}`")),
            (Some(_), None) => None,
        };
        let spread = written.spread.get(&key).copied();
        out.values.insert(key, Ours { value, note, spread });
    }
    Ok(out)
}
