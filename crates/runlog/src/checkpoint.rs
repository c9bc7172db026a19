//! `checkpoint.json`: what a run needs to go on from an iteration — the job's state vectors
//! (the model, the optimizer's velocity) and the next iteration — written atomically (a
//! temporary file, synced, then renamed over the last one), so a run killed at any moment leaves
//! the last complete checkpoint.

use std::path::{Path, PathBuf};

use serde::{Deserialize, Serialize};

/// The checkpoint file's name in a run directory.
pub const CHECKPOINT: &str = "checkpoint.json";

/// The checkpoint format written; a newer one is refused.
pub const CHECKPOINT_FORMAT: u32 = 1;

/// A run's state after an iteration.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct Checkpoint {
    /// [`CHECKPOINT_FORMAT`].
    pub format: u32,
    /// The next iteration to run (iterations `0..iteration` are done).
    pub iteration: u64,
    /// The job's one-line problem: a checkpoint resumes the same problem only.
    pub problem: String,
    /// The job's state vectors by name (exact floats: JSON with round-trip formatting).
    pub vectors: Vec<(String, Vec<f64>)>,
}

/// Whether two one-line problems (a summary's or a checkpoint's `problem`) are the same: equal,
/// or equal once every absolute path in them is read lexically (`/a/b/../c` as `/a/c`, `/./`
/// dropped) — runs of builds before a config's paths were made canonical name a file as
/// `/repo/configs/../data/x`, which later builds name `/repo/data/x`.
///
/// ```
/// use outrun_runlog::same_problem;
/// assert!(same_problem("file /r/configs/../data/x.libsvm, softmax", "file /r/data/x.libsvm, softmax"));
/// assert!(!same_problem("file /r/data/x.libsvm", "file /r/data/y.libsvm"));
/// ```
pub fn same_problem(a: &str, b: &str) -> bool {
    a == b || plain_paths(a) == plain_paths(b)
}

/// `problem` with each absolute path's `.` and `..` components resolved by their text.
fn plain_paths(problem: &str) -> String {
    let plain = |word: &str| {
        if !word.starts_with('/') {
            return word.to_string();
        }
        let mut parts: Vec<&str> = Vec::new();
        for c in word.split('/') {
            match c {
                "" | "." => {}
                ".." => {
                    parts.pop();
                }
                c => parts.push(c),
            }
        }
        format!("/{}", parts.join("/"))
    };
    problem.split(' ').map(plain).collect::<Vec<_>>().join(" ")
}

impl Checkpoint {
    /// Write into `dir` atomically (`checkpoint.json.tmp`, synced, renamed: [`crate::write_whole`]).
    /// A write that fails (a full disk) removes its temporary file and leaves the last complete
    /// checkpoint.
    pub fn write(&self, dir: &Path) -> std::io::Result<()> {
        crate::write_whole(&dir.join(CHECKPOINT), true, |w| {
            serde_json::to_writer(w, self).map_err(std::io::Error::other)
        })
    }

    /// Read the checkpoint of a run directory (or a checkpoint file), or say why not in one line.
    pub fn read(path: &Path) -> Result<Checkpoint, String> {
        let file: PathBuf = if path.is_dir() { path.join(CHECKPOINT) } else { path.to_path_buf() };
        // a FIFO, socket or device is refused before it is opened (opening a FIFO blocks)
        if let Ok(meta) = std::fs::metadata(&file) {
            if !meta.is_file() {
                return Err(format!("--resume: {} is not a regular file: not a checkpoint", file.display()));
            }
        }
        let text = std::fs::read_to_string(&file).map_err(|e| {
            format!("--resume: cannot read {}: {e} (a run writes one with run.checkpoint_every)", file.display())
        })?;
        let c: Checkpoint = serde_json::from_str(&text)
            .map_err(|e| format!("--resume: {} is not a checkpoint: {e}", file.display()))?;
        if c.format > CHECKPOINT_FORMAT {
            return Err(format!(
                "--resume: {} has checkpoint format {}, newer than this outrun's {CHECKPOINT_FORMAT}",
                file.display(),
                c.format
            ));
        }
        Ok(c)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn round_trips_bit_for_bit_and_replaces_the_last() {
        let dir = std::env::temp_dir().join(format!("outrun-ckpt-{}", std::process::id()));
        std::fs::create_dir_all(&dir).unwrap();
        let v = vec![0.1 + 0.2, -1e-300, f64::MAX, 1.0 / 3.0];
        let mut c = Checkpoint { format: 1, iteration: 5, problem: "p".into(), vectors: vec![("theta".into(), v)] };
        c.write(&dir).unwrap();
        c.iteration = 10;
        c.write(&dir).unwrap();
        let back = Checkpoint::read(&dir).unwrap();
        assert_eq!(back, c);
        assert!(!dir.join("checkpoint.json.tmp").exists());
        std::fs::write(dir.join(CHECKPOINT), "{").unwrap();
        assert!(Checkpoint::read(&dir).unwrap_err().contains("is not a checkpoint"));
        std::fs::remove_dir_all(&dir).unwrap();
        assert!(Checkpoint::read(&dir).unwrap_err().contains("cannot read"));
    }

    /// A write that fails leaves no temporary file and the last checkpoint as it was (here the
    /// rename fails: the checkpoint's name is taken by a directory that is not empty).
    #[test]
    fn a_failed_write_leaves_no_temporary_file() {
        let dir = std::env::temp_dir().join(format!("outrun-ckpt-fail-{}", std::process::id()));
        std::fs::create_dir_all(dir.join(CHECKPOINT).join("x")).unwrap();
        let c = Checkpoint { format: 1, iteration: 5, problem: "p".into(), vectors: vec![] };
        assert!(c.write(&dir).is_err());
        assert!(!dir.join("checkpoint.json.tmp").exists());
        assert!(dir.join(CHECKPOINT).join("x").is_dir());
        std::fs::remove_dir_all(&dir).unwrap();
    }

    /// A FIFO named as the checkpoint is refused at once (opening it would block forever).
    #[test]
    fn a_fifo_is_refused_without_opening_it() {
        let dir = std::env::temp_dir().join(format!("outrun-ckpt-fifo-{}", std::process::id()));
        std::fs::create_dir_all(&dir).unwrap();
        let fifo = dir.join(CHECKPOINT);
        let made = std::process::Command::new("mkfifo").arg(&fifo).status().is_ok_and(|s| s.success());
        if made {
            let e = Checkpoint::read(&dir).unwrap_err();
            assert!(e.ends_with("is not a regular file: not a checkpoint"), "{e}");
        }
        std::fs::remove_dir_all(&dir).unwrap();
    }
}
