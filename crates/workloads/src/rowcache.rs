//! Parsed rows of a text data file (LIBSVM, CSV), kept in binary beside its cached shape, so
//! that after the one full parse a launch needs (`outrun check`) every rank reads its own rows
//! by offset instead of parsing text.
//!
//! Measured on a 134 MB LIBSVM file (10 000 × 1 000 dense, 10 GC workers with s = 1 on 2 cores):
//! the ranks parsing their rows took ~2 s of a launch whose one full parse took 1.8 s.
//!
//! The file: a header (`MAGIC`, the key's length and the key), then one record per data row in
//! file order — the label (f64), the number of entries (u32), then (index u32, value f64) per
//! entry, zeros left out — then the records' start offsets and the end of the last (u64 each),
//! then the row count and the table's offset (u64 each) and `END`. Little-endian throughout. A
//! reader that finds anything else (another key, a short file, an index past the width) says
//! so with `None`, and the caller parses the text as before.

use std::fs::File;
use std::io::{BufWriter, Read, Seek, SeekFrom, Write};
use std::path::{Path, PathBuf};

use crate::rows::Rows;

const MAGIC: &[u8; 8] = b"OUTROWS1";
const END: &[u8; 8] = b"ROWSEND1";
/// Most rows read at once.
const RUN: usize = 4096;

/// Rows as a full parse reads them, written to a temporary file and put in place by
/// [`finish`](Self::finish) (only after the parse succeeded).
pub(crate) struct RowLog {
    out: Option<BufWriter<File>>,
    tmp: PathBuf,
    dest: PathBuf,
    offsets: Vec<u64>,
    pos: u64,
}

impl RowLog {
    /// A log for the rows file `dest` of the file version named `key`; None if the cache
    /// directory cannot be written (no cache is no error).
    pub(crate) fn create(dest: &Path, key: &str) -> Option<RowLog> {
        std::fs::create_dir_all(dest.parent()?).ok()?;
        let tmp = dest.with_extension(format!("tmp{}", std::process::id()));
        let mut out = BufWriter::with_capacity(1 << 20, File::create(&tmp).ok()?);
        let header = [&MAGIC[..], &(key.len() as u32).to_le_bytes(), key.as_bytes()].concat();
        out.write_all(&header).ok()?;
        Some(RowLog { out: Some(out), tmp, dest: dest.to_path_buf(), offsets: vec![], pos: header.len() as u64 })
    }

    /// The next row: its label and its (index, value) entries.
    pub(crate) fn push(&mut self, y: f64, entries: impl Iterator<Item = (usize, f64)>) {
        let Some(out) = self.out.as_mut() else { return };
        let mut record = y.to_le_bytes().to_vec();
        record.extend_from_slice(&[0; 4]);
        let mut n = 0u32;
        for (i, v) in entries.filter(|&(_, v)| v.to_bits() != 0) {
            record.extend_from_slice(&(i as u32).to_le_bytes());
            record.extend_from_slice(&v.to_le_bytes());
            n += 1;
        }
        record[8..12].copy_from_slice(&n.to_le_bytes());
        self.offsets.push(self.pos);
        self.pos += record.len() as u64;
        if out.write_all(&record).is_err() {
            self.out = None; // a full disk: no cache this time
        }
    }

    /// Write the offset table and put the file in place.
    pub(crate) fn finish(mut self) {
        let Some(mut out) = self.out.take() else { return };
        let rows = self.offsets.len() as u64;
        self.offsets.push(self.pos);
        let table: Vec<u8> = self.offsets.iter().flat_map(|o| o.to_le_bytes()).collect();
        let footer = [&rows.to_le_bytes()[..], &self.pos.to_le_bytes(), END].concat();
        let written = out.write_all(&table).and_then(|()| out.write_all(&footer)).and_then(|()| out.flush());
        if written.is_ok() && std::fs::rename(&self.tmp, &self.dest).is_ok() {
            return;
        }
        let _ = std::fs::remove_file(&self.tmp);
    }
}

impl Drop for RowLog {
    fn drop(&mut self) {
        if self.out.is_some() {
            let _ = std::fs::remove_file(&self.tmp); // the parse failed: nothing is kept
        }
    }
}

/// Whether the rows file `path` begins as one of the file version `key` does.
pub(crate) fn holds(path: &Path, key: &str) -> bool {
    File::open(path).ok().and_then(|mut f| header_matches(&mut f, key)).is_some()
}

fn header_matches(f: &mut File, key: &str) -> Option<()> {
    let mut head = vec![0u8; 12 + key.len()];
    f.read_exact(&mut head).ok()?;
    (&head[..8] == MAGIC && u32_at(&head, 8)? as usize == key.len() && &head[12..] == key.as_bytes()).then_some(())
}

/// The rows with the given indices (any order, repeats allowed), `p` wide, from the rows file
/// `path` of the file version `key`; None if it is missing, of another version or damaged.
pub(crate) fn read(path: &Path, key: &str, p: usize, idx: &[usize]) -> Option<Rows> {
    let mut f = File::open(path).ok()?;
    header_matches(&mut f, key)?;
    let len = f.metadata().ok()?.len();
    let mut foot = [0u8; 24];
    f.seek(SeekFrom::Start(len.checked_sub(24)?)).ok()?;
    f.read_exact(&mut foot).ok()?;
    let (rows, table) = (u64_at(&foot, 0)?, u64_at(&foot, 8)?);
    if &foot[16..] != END || table.checked_add(8 * (rows + 1))? != len - 24 {
        return None;
    }
    let mut wanted: Vec<(usize, usize)> = idx.iter().copied().enumerate().map(|(k, i)| (i, k)).collect();
    wanted.sort_unstable();
    if wanted.last().is_some_and(|&(i, _)| i as u64 >= rows) {
        return None;
    }
    let (mut x, mut y) = (vec![0.0; idx.len() * p], vec![0.0; idx.len()]);
    let mut distinct: Vec<usize> = wanted.iter().map(|&(i, _)| i).collect();
    distinct.dedup();
    let (mut next, mut d) = (0, 0);
    while d < distinct.len() {
        // a run of consecutive rows (at most RUN): one read of their records
        let (first, mut last) = (distinct[d], distinct[d]);
        d += 1;
        while distinct.get(d) == Some(&(last + 1)) && last - first + 1 < RUN {
            last += 1;
            d += 1;
        }
        let bounds = read_at(&mut f, table + 8 * first as u64, 8 * (last - first + 2))?;
        let start = u64_at(&bounds, 0)?;
        let bytes =
            read_at(&mut f, start, usize::try_from(u64_at(&bounds, bounds.len() - 8)?.checked_sub(start)?).ok()?)?;
        let mut at = 0usize;
        for row in first..=last {
            let (label, n) = (f64_at(&bytes, at)?, u32_at(&bytes, at + 8)? as usize);
            let entries = bytes.get(at + 12..at + 12 + 12 * n)?;
            at += 12 + 12 * n;
            while next < wanted.len() && wanted[next].0 == row {
                let k = wanted[next].1;
                y[k] = label;
                for e in entries.chunks_exact(12) {
                    let i = u32_at(e, 0)? as usize;
                    *x.get_mut(k * p + i).filter(|_| i < p)? = f64_at(e, 4)?;
                }
                next += 1;
            }
        }
    }
    Some(Rows::from_vecs(p, x, y))
}

fn read_at(f: &mut File, at: u64, len: usize) -> Option<Vec<u8>> {
    let mut buf = vec![0u8; len];
    f.seek(SeekFrom::Start(at)).ok()?;
    f.read_exact(&mut buf).ok()?;
    Some(buf)
}

fn u32_at(b: &[u8], at: usize) -> Option<u32> {
    Some(u32::from_le_bytes(b.get(at..at + 4)?.try_into().ok()?))
}

fn u64_at(b: &[u8], at: usize) -> Option<u64> {
    Some(u64::from_le_bytes(b.get(at..at + 8)?.try_into().ok()?))
}

fn f64_at(b: &[u8], at: usize) -> Option<f64> {
    Some(f64::from_le_bytes(b.get(at..at + 8)?.try_into().ok()?))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn rows_come_back_as_written_and_a_damaged_file_is_refused() {
        let dir = std::env::temp_dir().join(format!("outrun-rowcache-{}", std::process::id()));
        let path = dir.join("r.rows");
        let mut log = RowLog::create(&path, "k1").unwrap();
        let rows: Vec<(f64, Vec<(usize, f64)>)> = vec![
            (1.0, vec![(0, 0.5), (2, -1.5)]),
            (0.0, vec![]),
            (1.0, vec![(1, 2.0), (2, 0.0), (0, -0.0)]),
            (0.0, vec![(2, 3.25)]),
        ];
        for (y, e) in &rows {
            log.push(*y, e.iter().copied());
        }
        log.finish();
        let r = read(&path, "k1", 3, &[3, 0, 2, 2]).unwrap();
        assert_eq!(r.labels(), [0.0, 1.0, 1.0, 1.0]);
        assert_eq!(r.row(0), [0.0, 0.0, 3.25]);
        assert_eq!(r.row(1), [0.5, 0.0, -1.5]);
        assert_eq!(r.row(2), [-0.0, 2.0, 0.0]);
        assert_eq!(r.row(2)[0].to_bits(), (-0.0f64).to_bits(), "a negative zero is kept");
        assert!(read(&path, "k2", 3, &[0]).is_none(), "another version");
        assert!(read(&path, "k1", 3, &[4]).is_none(), "a row past the end");
        assert!(read(&path, "k1", 2, &[0]).is_none(), "an index past the width");
        let bytes = std::fs::read(&path).unwrap();
        std::fs::write(&path, &bytes[..bytes.len() - 1]).unwrap();
        assert!(read(&path, "k1", 3, &[0]).is_none(), "a truncated file");
        // a failed parse leaves nothing
        let other = dir.join("s.rows");
        let mut log = RowLog::create(&other, "k").unwrap();
        log.push(1.0, [(0, 1.0)].into_iter());
        drop(log);
        assert!(!other.exists());
        assert_eq!(std::fs::read_dir(&dir).unwrap().count(), 1, "no temporary file left");
        std::fs::remove_dir_all(&dir).unwrap();
    }
}
