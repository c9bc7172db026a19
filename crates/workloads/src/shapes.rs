//! A cache of data files' shapes, so a file checked once is not parsed again only to be sized.
//!
//! Resolving a config reads its data file's shape (samples, features) by parsing every line,
//! which also validates the file. A launch does it twice — `outrun check` before MPI starts, then
//! rank 0 building the plan — and on a 129 MB LIBSVM file each took 1.7 s. The second time, the
//! shape comes from this cache: an entry is keyed by the file's canonical path, size,
//! modification time (nanoseconds) and a hash of its first and last 64 KiB, and by every config
//! field the shape depends on (the kind,
//! `data.samples`, `data.features`, the labels), and is written only after a full parse succeeded.
//! A changed file has another key; `OUTRUN_NO_CACHE=1` turns the cache off. Entries live in
//! `$XDG_CACHE_HOME/outrun/shapes` (else `~/.cache/…`, else the temporary directory), one small
//! text file each (the key, then `samples features`).
//!
//! The same parse also writes the rows it read, in binary ([`crate::rowcache`]), to one file
//! per data file and config (`<hash>.rows`, overwritten by the next version of the file), which
//! [`cached_rows`] reads a rank's rows from.

use std::path::{Path, PathBuf};

use outrun_config::{DataConfig, Labels};
use outrun_plan::Shape;

use crate::rowcache::RowLog;
use crate::rows::{DataError, Rows};

static KEEP_ROWS: std::sync::atomic::AtomicBool = std::sync::atomic::AtomicBool::new(false);

/// From now on a full parse of a data file also caches its rows in binary for the ranks to
/// read (the `outrun` command turns it on; a library user or a test does not leave copies of
/// its data files behind unless it asks).
pub fn keep_parsed_rows() {
    KEEP_ROWS.store(true, std::sync::atomic::Ordering::Relaxed);
}

/// The shape of `data`'s file, from the cache or from `parse` (whose success is cached, with
/// the rows it gives the log).
pub(crate) fn cached(
    data: &DataConfig,
    labels: Labels,
    path: &Path,
    parse: impl FnOnce(Option<&mut RowLog>) -> Result<Shape, DataError>,
) -> Result<Shape, DataError> {
    if off() {
        return parse(None);
    }
    cached_in(&cache_dir(), KEEP_ROWS.load(std::sync::atomic::Ordering::Relaxed), data, labels, path, parse)
}

/// The rows with the given indices, `p` wide, of `data`'s file from the rows its last full
/// parse cached; None if there are none for this version of the file (the caller parses).
pub(crate) fn cached_rows(data: &DataConfig, labels: Labels, path: &Path, p: usize, idx: &[usize]) -> Option<Rows> {
    if off() {
        return None;
    }
    let e = entry(&cache_dir(), data, labels, path)?;
    crate::rowcache::read(&e.rows, &e.key, p, idx)
}

fn off() -> bool {
    std::env::var_os("OUTRUN_NO_CACHE").is_some_and(|v| !v.is_empty() && v != "0")
}

/// `$XDG_CACHE_HOME/outrun/shapes`, else `~/.cache/outrun/shapes`, else in the temporary
/// directory.
fn cache_dir() -> PathBuf {
    std::env::var_os("XDG_CACHE_HOME")
        .map(PathBuf::from)
        .or_else(|| std::env::var_os("HOME").map(|h| PathBuf::from(h).join(".cache")))
        .unwrap_or_else(std::env::temp_dir)
        .join("outrun")
        .join("shapes")
}

/// [`cached`] with the cache in `dir`, keeping the parsed rows if `keep`.
fn cached_in(
    dir: &Path,
    keep: bool,
    data: &DataConfig,
    labels: Labels,
    path: &Path,
    parse: impl FnOnce(Option<&mut RowLog>) -> Result<Shape, DataError>,
) -> Result<Shape, DataError> {
    let Some(e) = entry(dir, data, labels, path) else { return parse(None) };
    // a shape cached without its rows (by an older outrun) is parsed once more to keep them
    if let Some(shape) = read(&e.shape, &e.key).filter(|_| !keep || crate::rowcache::holds(&e.rows, &e.key)) {
        return Ok(shape);
    }
    let mut log = keep.then(|| RowLog::create(&e.rows, &e.key)).flatten();
    let shape = parse(log.as_mut())?;
    if let Some(log) = log {
        log.finish();
    }
    write(&e.shape, &e.key, shape);
    Ok(shape)
}

/// A data file's version and where its cache entries are.
struct Entry {
    key: String,
    /// The shape, one file per version.
    shape: PathBuf,
    /// The rows, one file per data file and config, holding the latest version parsed.
    rows: PathBuf,
}

/// The entry of `path` in `dir`, or None when the file cannot be stat'ed or is not a regular
/// file.
fn entry(dir: &Path, data: &DataConfig, labels: Labels, path: &Path) -> Option<Entry> {
    let canon = std::fs::canonicalize(path).ok()?;
    let meta = std::fs::metadata(&canon).ok()?;
    if !meta.is_file() {
        return None; // a FIFO or device: the reader refuses it, unopened
    }
    let mtime = meta.modified().ok()?.duration_since(std::time::UNIX_EPOCH).ok()?.as_nanos();
    let ends = fingerprint(&canon, meta.len())?;
    // the file and the config fields its shape depends on; then this version of the file
    let which = format!(
        "{}|{:?}|{:?}|{:?}|{labels:?}|{:?}|{:?}|{:?}{}",
        canon.display(),
        data.kind,
        data.samples,
        data.features,
        data.delimiter,
        data.label_column,
        data.labels,
        // appended only when set, so the entries of 1-based files made before it stay valid
        data.index_base.map(|b| format!("|base{b}")).unwrap_or_default()
            + &match data.missing {
                outrun_config::Missing::Refuse => String::new(),
                // the cached rows of "mean" keep their missing values (NaN): each run fills them
                // with its training rows' means
                outrun_config::Missing::Mean => "|missingMean|unfilled".to_string(),
                m => format!("|missing{m:?}"),
            }
    );
    let key = format!("v2|{which}|{}|{mtime}|{ends:016x}", meta.len());
    Some(Entry {
        shape: dir.join(format!("{:016x}", fnv1a(&key))),
        rows: dir.join(format!("{:016x}.rows", fnv1a(&which))),
        key,
    })
}

fn fnv1a(s: &str) -> u64 {
    fnv1a_bytes(0xcbf2_9ce4_8422_2325, s.as_bytes())
}

fn fnv1a_bytes(h: u64, bytes: &[u8]) -> u64 {
    bytes.iter().fold(h, |h, &b| (h ^ u64::from(b)).wrapping_mul(0x0100_0000_01b3))
}

/// A hash of the file's first and last 64 KiB: file times tick coarsely (a few ms on Linux), so
/// a same-size rewrite within one tick keeps size and mtime; its ends almost always differ.
fn fingerprint(path: &Path, len: u64) -> Option<u64> {
    use std::io::{Read, Seek, SeekFrom};
    const END: u64 = 64 * 1024;
    let mut f = std::fs::File::open(path).ok()?;
    let mut buf = Vec::with_capacity(2 * END as usize);
    f.by_ref().take(END).read_to_end(&mut buf).ok()?;
    if len > 2 * END {
        f.seek(SeekFrom::Start(len - END)).ok()?;
    }
    f.take(END).read_to_end(&mut buf).ok()?;
    Some(fnv1a_bytes(0xcbf2_9ce4_8422_2325, &buf))
}

/// An entry is two lines: the key, then `samples features`.
fn read(entry: &Path, key: &str) -> Option<Shape> {
    let text = std::fs::read_to_string(entry).ok()?;
    let (k, rest) = text.split_once('\n')?;
    (k == key).then_some(())?;
    let (samples, features) = rest.trim().split_once(' ')?;
    Some(Shape { samples: samples.parse().ok()?, features: features.parse().ok()? })
}

/// Write the entry atomically (a temporary file, then a rename); a cache that cannot be written
/// is no error.
fn write(entry: &Path, key: &str, shape: Shape) {
    let Some(dir) = entry.parent() else { return };
    if std::fs::create_dir_all(dir).is_err() {
        return;
    }
    let text = format!("{key}\n{} {}\n", shape.samples, shape.features);
    let tmp = entry.with_extension(format!("tmp{}", std::process::id()));
    if std::fs::write(&tmp, text).is_ok() && std::fs::rename(&tmp, entry).is_err() {
        let _ = std::fs::remove_file(&tmp);
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use outrun_config::DataKind;

    /// The config of a data file read with `extra` keys.
    fn data_config(kind: &str, file: &Path, extra: &str) -> DataConfig {
        let text = format!("[run]\nname='c'\niterations=1\n[data]\nkind='{kind}'\npath='{}'\n{extra}[model]\nloss='logistic'\nlr=0.1\n[scheme]\nkind='umw'\nworkers=2\n", file.display());
        outrun_config::parse(&text, &[]).unwrap().data().clone()
    }

    #[test]
    fn rows_from_the_cache_equal_the_texts_bit_for_bit() {
        let dir = std::env::temp_dir().join(format!("outrun-rows-{}", std::process::id()));
        std::fs::create_dir_all(&dir).unwrap();
        let cache = dir.join("cache");
        let libsvm = "# a comment\n1 1:0.5 3:-0.0\n\n-1 2:1e-300 # trailing\n0\n1 3:0.1 1:-2.5\n";
        let csv = "label,a,b,c\n1,0.5,0,-0.0\n# note\n0,1e-300,2,3\n1,0.1,0.2,0.30000000000000004\n";
        for (kind, text, extra) in
            [("libsvm", libsvm, ""), ("libsvm", libsvm, "samples=3\nfeatures=4\n"), ("csv", csv, "")]
        {
            let file = dir.join(format!("d.{kind}"));
            std::fs::write(&file, text).unwrap();
            let data = data_config(kind, &file, extra);
            let origin = file.display().to_string();
            let open = || std::io::BufReader::new(std::fs::File::open(&file).unwrap());
            let shape = cached_in(&cache, true, &data, Labels::Binary, &file, |log| match data.kind {
                DataKind::Csv => {
                    crate::csv::csv_scan(open(), &origin, &Default::default(), data.samples, Labels::Binary, log)
                }
                _ => crate::libsvm::libsvm_scan(
                    open(),
                    &origin,
                    &Default::default(),
                    data.samples,
                    data.features,
                    Labels::Binary,
                    log,
                ),
            })
            .unwrap();
            let idx: Vec<usize> = (0..shape.samples).rev().chain([0, 0]).collect();
            let e = entry(&cache, &data, Labels::Binary, &file).unwrap();
            let cached = crate::rowcache::read(&e.rows, &e.key, shape.features, &idx).expect("cached rows");
            let parsed = match data.kind {
                DataKind::Csv => {
                    crate::csv::csv_rows(open(), &origin, &Default::default(), shape.features, Labels::Binary, &idx)
                }
                _ => crate::libsvm::libsvm_rows(
                    open(),
                    &origin,
                    &Default::default(),
                    shape.features,
                    Labels::Binary,
                    &idx,
                ),
            }
            .unwrap();
            let bits = |r: &Rows| r.features().iter().chain(r.labels()).map(|v| v.to_bits()).collect::<Vec<_>>();
            assert_eq!(bits(&cached), bits(&parsed), "{kind} {extra}");
            assert_eq!(cached.len(), idx.len());
        }
        std::fs::remove_dir_all(&dir).unwrap();
    }

    #[test]
    fn a_shape_is_parsed_once_and_a_changed_file_is_parsed_again() {
        let dir = std::env::temp_dir().join(format!("outrun-shapes-{}", std::process::id()));
        std::fs::create_dir_all(&dir).unwrap();
        let cache = dir.join("cache");
        let file = dir.join("d.libsvm");
        std::fs::write(&file, "1 1:0.5\n0 2:1.5\n").unwrap();
        let text = format!("[run]\nname='c'\niterations=1\n[data]\nkind='libsvm'\npath='{}'\n[model]\nloss='logistic'\nlr=0.1\n[scheme]\nkind='umw'\nworkers=2\n", file.display());
        let data = outrun_config::parse(&text, &[]).unwrap().data().clone();
        assert_eq!(data.kind, DataKind::Libsvm);
        let mut parses = 0;
        let shape = |parses: &mut usize| {
            cached_in(&cache, false, &data, Labels::Binary, &file, |_| {
                *parses += 1;
                Ok(Shape { samples: 2, features: 2 })
            })
            .unwrap()
        };
        assert_eq!(shape(&mut parses), Shape { samples: 2, features: 2 });
        assert_eq!(shape(&mut parses).samples, 2);
        assert_eq!(parses, 1, "the second call reads the cache");
        std::fs::write(&file, "1 1:0.5\n0 2:1.5\n1 3:2\n").unwrap();
        shape(&mut parses);
        assert_eq!(parses, 2, "a changed file is parsed again");
        // the same size within the same clock tick: the content's hash tells them apart
        std::fs::write(&file, "1 1:0.5\n0 2:1.5\n0 3:2\n").unwrap();
        shape(&mut parses);
        assert_eq!(parses, 3, "a same-size rewrite is parsed again");
        // a failed parse is not cached
        let other = dir.join("e.libsvm");
        std::fs::write(&other, "x").unwrap();
        let bad = |_: Option<&mut RowLog>| Err(DataError::file("bad", "bad"));
        assert!(cached_in(&cache, false, &data, Labels::Binary, &other, bad).is_err());
        assert!(cached_in(&cache, false, &data, Labels::Binary, &other, bad).is_err());
        std::fs::remove_dir_all(&dir).unwrap();
    }
}
