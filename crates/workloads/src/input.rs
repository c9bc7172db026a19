//! Opening the files a run reads — configs, straggler parameter files, data and held-out data,
//! matrices, vectors, graphs, sweep files. Anything that is not a regular file is refused
//! before it is opened: opening a FIFO blocks until something writes to it, and a device or a
//! socket may never end, where a refusal is one line naming the file.

use std::fs::File;
use std::io::{self, Read};
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
        std::fs::remove_dir_all(&dir).unwrap();
    }

    extern "C" {
        #[link_name = "mkfifo"]
        fn libc_mkfifo(path: *const std::ffi::c_char, mode: u32) -> i32;
    }
}
