//! Opening the files a run reads — configs, straggler parameter files, data and held-out data,
//! matrices, vectors, graphs, sweep files. Anything that is not a regular file is refused
//! before it is opened: opening a FIFO blocks until something writes to it, and a device or a
//! socket may never end, where a refusal is one line naming the file.

use std::fs::File;
use std::io::{self, BufRead, BufReader, Read};
use std::os::unix::fs::FileTypeExt;
use std::path::Path;

/// `path`, opened for reading, if it is a regular file (symbolic links followed).
pub fn open(path: &Path) -> io::Result<File> {
    let kind = std::fs::metadata(path)?.file_type();
    if !kind.is_file() {
        let what = if kind.is_dir() {
            "a directory"
        } else if kind.is_fifo() {
            "a FIFO"
        } else if kind.is_socket() {
            "a socket"
        } else if kind.is_block_device() || kind.is_char_device() {
            "a device"
        } else {
            "not a file"
        };
        return Err(io::Error::new(io::ErrorKind::InvalidInput, format!("not a regular file ({what})")));
    }
    File::open(path)
}

/// `path` opened for reading a data file: a gzip file (it starts with 1f 8b: SNAP's `.txt.gz`,
/// pandas' `.csv.gz`, a `.mtx.gz`, MNIST's `.idx.gz`) is decompressed as it is read; a bzip2,
/// xz, zstd or zip file is refused naming what it is, since reading it as it is would fail at
/// its first line (text: "not UTF-8"; IDX: its magic).
pub fn open_decompressed(path: &Path) -> io::Result<Box<dyn BufRead>> {
    let mut f = BufReader::with_capacity(1 << 16, open(path)?);
    let head = f.fill_buf()?;
    if head.starts_with(&[0x1f, 0x8b]) {
        return Ok(Box::new(BufReader::with_capacity(1 << 16, flate2::read::MultiGzDecoder::new(f))));
    }
    let bzip2 = head.len() >= 4 && head.starts_with(b"BZh") && head[3].is_ascii_digit();
    let kind = if bzip2 {
        Some("a bzip2 file: decompress it first (bunzip2 -k FILE; gzip files are read as they are)")
    } else if head.starts_with(&[0xfd, b'7', b'z', b'X', b'Z', 0]) {
        Some("an xz file: decompress it first (unxz -k FILE; gzip files are read as they are)")
    } else if head.starts_with(&[0x28, 0xb5, 0x2f, 0xfd]) {
        Some("a zstd file: decompress it first (unzstd FILE; gzip files are read as they are)")
    } else if head.starts_with(b"PK\x03\x04") {
        Some("a zip archive: unzip it (a spreadsheet's .xlsx is one: save the sheet as CSV instead)")
    } else {
        None
    };
    match kind {
        Some(what) => Err(io::Error::new(io::ErrorKind::InvalidData, what)),
        None => Ok(Box::new(f)),
    }
}

/// The whole text of `path`, if it is a regular file.
pub fn read_to_string(path: &Path) -> io::Result<String> {
    let mut text = String::new();
    open(path)?.read_to_string(&mut text)?;
    Ok(text)
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A FIFO is refused at once (opening it would wait for a writer), as are a directory and a
    /// device; a regular file opens.
    #[test]
    fn only_regular_files_open() {
        let dir = std::env::temp_dir().join(format!("outrun-input-{}", std::process::id()));
        std::fs::create_dir_all(&dir).unwrap();
        let fifo = dir.join("fifo");
        let c = std::ffi::CString::new(fifo.to_str().unwrap()).unwrap();
        // SAFETY: mkfifo(3) on a path in our own temporary directory
        assert_eq!(unsafe { libc_mkfifo(c.as_ptr(), 0o600) }, 0);
        let started = std::time::Instant::now();
        let e = open(&fifo).unwrap_err();
        assert!(started.elapsed() < std::time::Duration::from_secs(1));
        assert_eq!(e.to_string(), "not a regular file (a FIFO)");
        assert_eq!(open(&dir).unwrap_err().to_string(), "not a regular file (a directory)");
        assert_eq!(open(Path::new("/dev/null")).unwrap_err().to_string(), "not a regular file (a device)");
        std::fs::write(dir.join("f"), "x").unwrap();
        assert_eq!(read_to_string(&dir.join("f")).unwrap(), "x");
        // text as it is, or gzip decompressed (two members, as `cat a.gz b.gz` makes); another
        // compressor named
        let mut gz = Vec::new();
        for part in ["1 2\n", "3 4\n"] {
            let mut e = flate2::write::GzEncoder::new(Vec::new(), flate2::Compression::default());
            std::io::Write::write_all(&mut e, part.as_bytes()).unwrap();
            gz.extend(e.finish().unwrap());
        }
        std::fs::write(dir.join("g.gz"), gz).unwrap();
        let lines: Vec<String> = open_decompressed(&dir.join("g.gz")).unwrap().lines().map(Result::unwrap).collect();
        assert_eq!(lines, ["1 2", "3 4"]);
        assert_eq!(open_decompressed(&dir.join("f")).unwrap().lines().next().unwrap().unwrap(), "x");
        std::fs::write(dir.join("b.bz2"), b"BZh91AY&SY").unwrap();
        let e = open_decompressed(&dir.join("b.bz2")).err().unwrap().to_string();
        assert_eq!(e, "a bzip2 file: decompress it first (bunzip2 -k FILE; gzip files are read as they are)");
        std::fs::remove_dir_all(&dir).unwrap();
    }

    extern "C" {
        #[link_name = "mkfifo"]
        fn libc_mkfifo(path: *const std::ffi::c_char, mode: u32) -> i32;
    }
}
