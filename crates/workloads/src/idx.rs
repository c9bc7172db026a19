//! The IDX format of MNIST and Fashion-MNIST (plain or gzip): an images file (`n × rows × cols`
//! unsigned bytes) and a labels file (`n` unsigned bytes), both big-endian with a 4-byte magic
//! `0 0 type dims`. Every rank streams the files and keeps only its own rows, like a LIBSVM file.

use std::io::Read;
use std::path::Path;

use outrun_config::Labels;

use crate::rows::{DataError, Rows, Shape};

/// The element type read: unsigned bytes (what MNIST and Fashion-MNIST use).
const UBYTE: u8 = 0x08;

/// The config keys of an images file and its labels file (named in refusals).
pub type Keys = [&'static str; 2];

/// The training set's keys.
pub const TRAIN: Keys = ["data.path", "data.labels_path"];

/// The held-out set's keys.
pub const TEST: Keys = ["data.test_path", "data.test_labels_path"];

/// An open IDX file past its header: its dimensions and the stream of its values.
struct Idx {
    dims: Vec<usize>,
    body: Box<dyn Read>,
    origin: String,
}

fn bad(path: &Path, what: impl std::fmt::Display) -> DataError {
    DataError::file(path.display(), what.to_string())
}

/// Open `path` (gzip when it starts with the gzip magic) and read the header of an IDX file of
/// `ndim` dimensions.
fn open(path: &Path, key: &str, ndim: usize) -> Result<Idx, DataError> {
    let mut body: Box<dyn Read> =
        crate::input::open_decompressed(path).map_err(|e| DataError::read(key, path.display(), e))?;
    let mut magic = [0u8; 4];
    body.read_exact(&mut magic).map_err(|e| bad(path, format!("no IDX header ({e})")))?;
    if magic[0] != 0 || magic[1] != 0 {
        return Err(bad(path, format!("not an IDX file: its magic is {magic:02x?}, expected 00 00 08 {ndim:02x}")));
    }
    if magic[2] != UBYTE {
        return Err(bad(path, format!("IDX element type {:#04x}: only unsigned bytes (0x08) are read", magic[2])));
    }
    if usize::from(magic[3]) != ndim {
        return Err(bad(path, format!("{} dimensions, expected {ndim} ({key})", magic[3])));
    }
    let mut dims = Vec::with_capacity(ndim);
    for _ in 0..ndim {
        let mut d = [0u8; 4];
        body.read_exact(&mut d).map_err(|e| bad(path, format!("truncated IDX header ({e})")))?;
        dims.push(u32::from_be_bytes(d) as usize);
    }
    Ok(Idx { dims, body, origin: path.display().to_string() })
}

/// Samples and features of an images file and its labels file (headers only), checked to agree.
pub fn idx_shape(images: &Path, labels: &Path, keys: Keys) -> Result<Shape, DataError> {
    let im = open(images, keys[0], 3)?;
    let lb = open(labels, keys[1], 1)?;
    if im.dims[0] != lb.dims[0] {
        return Err(bad(labels, format!("{} labels, but {} has {} images", lb.dims[0], im.origin, im.dims[0])));
    }
    if im.dims[0] == 0 || im.dims[1] * im.dims[2] == 0 {
        return Err(bad(images, "no images"));
    }
    Ok(Shape { samples: im.dims[0], features: im.dims[1] * im.dims[2] })
}

/// Both files read to their ends, as the run would read them, before MPI starts (`outrun check`,
/// the planning rank): every image and label present and no byte after them, a gzip file's
/// checksum verified (at its end), every label one `rule` accepts. The shape.
pub fn idx_check(images: &Path, labels: &Path, rule: Labels, keys: Keys) -> Result<Shape, DataError> {
    let shape = idx_shape(images, labels, keys)?;
    let Shape { samples, features: p } = shape;
    idx_rows_labels(labels, samples, rule, &[], keys)?;
    let mut im = open(images, keys[0], 3)?;
    // streamed in blocks, not an image at a time: a header's image size (rows × cols, each up
    // to 2^32 − 1) is not known to be true until the bytes are there
    let want = samples as u128 * p as u128;
    let mut buf = vec![0u8; 1 << 16];
    let mut got: u128 = 0;
    while got < want {
        let n = buf.len().min(usize::try_from(want - got).unwrap_or(usize::MAX));
        match im.body.read(&mut buf[..n]) {
            Ok(0) => {
                let image = got / p as u128 + 1;
                let why = format!("truncated at image {image}: its header says {samples} images of {p} bytes");
                return Err(bad(images, why));
            }
            Ok(k) => got += k as u128,
            Err(e) if e.kind() == std::io::ErrorKind::Interrupted => {}
            Err(e) => return Err(bad(images, format!("unreadable at image {}: {e}", got / p as u128 + 1))),
        }
    }
    to_end(&mut im, images, "the last image")?;
    Ok(shape)
}

/// The rest of an IDX file after its last value: nothing (and a gzip file's checksum, which is
/// verified when its end is read).
fn to_end(f: &mut Idx, path: &Path, last: &str) -> Result<(), DataError> {
    let mut rest = [0u8; 4096];
    let mut extra = 0usize;
    loop {
        match f.body.read(&mut rest) {
            Ok(0) => break,
            Ok(n) => extra += n,
            Err(e) => return Err(bad(path, format!("corrupt after {last}: {e}"))),
        }
    }
    if extra > 0 {
        return Err(bad(path, format!("{extra} bytes after {last}: the header's count does not match the file")));
    }
    Ok(())
}

/// Every label, in file order, checked against `rule`.
pub fn idx_labels(images: &Path, labels: &Path, rule: Labels, keys: Keys) -> Result<Vec<f64>, DataError> {
    let Shape { samples, .. } = idx_shape(images, labels, keys)?;
    idx_rows_labels(labels, samples, rule, &(0..samples).collect::<Vec<_>>(), keys)
}

/// The labels of rows `idx` (of `samples`), checked against `rule`; with no rows asked for,
/// every label is checked and the file read to its end.
fn idx_rows_labels(
    labels: &Path,
    samples: usize,
    rule: Labels,
    idx: &[usize],
    keys: Keys,
) -> Result<Vec<f64>, DataError> {
    let mut lb = open(labels, keys[1], 1)?;
    let mut all = vec![0u8; samples];
    lb.body.read_exact(&mut all).map_err(|e| bad(labels, format!("truncated: {e}")))?;
    let every: Vec<usize>;
    let idx = if idx.is_empty() {
        to_end(&mut lb, labels, "the last label")?;
        every = (0..samples).collect();
        &every[..]
    } else {
        idx
    };
    let mut y = Vec::with_capacity(idx.len());
    for &i in idx {
        let v = f64::from(*all.get(i).ok_or_else(|| bad(labels, format!("row {} asked for of {samples}", i + 1)))?);
        let ok = match rule {
            Labels::Real => true,
            Labels::Binary => v <= 1.0,
            Labels::Classes(c) => v < c as f64,
        };
        if !ok {
            let want = match rule {
                Labels::Classes(c) => format!("a class 0..{} ({c} classes in [model])", c - 1),
                _ => "0 or 1 (model.loss = \"logistic\")".into(),
            };
            return Err(bad(labels, format!("label {v} of image {} is not {want}", i + 1)));
        }
        y.push(v);
    }
    Ok(y)
}

/// The rows with the given indices (any order, repeats allowed), each value times `scale`.
pub fn idx_rows(
    images: &Path,
    labels: &Path,
    scale: f64,
    rule: Labels,
    idx: &[usize],
    keys: Keys,
) -> Result<Rows, DataError> {
    let Shape { samples, features: p } = idx_shape(images, labels, keys)?;
    let y = idx_rows_labels(labels, samples, rule, idx, keys)?;
    let mut wanted: Vec<(usize, usize)> = idx.iter().copied().enumerate().map(|(k, i)| (i, k)).collect();
    wanted.sort_unstable();
    let mut im = open(images, keys[0], 3)?;
    let mut x = vec![0.0; idx.len() * p];
    let mut buf = vec![0u8; p];
    let (mut row, mut next) = (0, 0);
    while next < wanted.len() {
        im.body.read_exact(&mut buf).map_err(|e| bad(images, format!("truncated at image {}: {e}", row + 1)))?;
        while next < wanted.len() && wanted[next].0 == row {
            let k = wanted[next].1;
            for (v, b) in x[k * p..(k + 1) * p].iter_mut().zip(&buf) {
                *v = f64::from(*b) * scale;
            }
            next += 1;
        }
        row += 1;
    }
    Ok(Rows::from_vecs(p, x, y))
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::io::Write;

    fn idx(dims: &[u32], body: &[u8]) -> Vec<u8> {
        let mut v = vec![0, 0, UBYTE, dims.len() as u8];
        for d in dims {
            v.extend(d.to_be_bytes());
        }
        v.extend(body);
        v
    }

    #[test]
    fn reads_plain_and_gzip_files_and_refuses_bad_ones() {
        let dir = std::env::temp_dir().join(format!("outrun-idx-{}", std::process::id()));
        std::fs::create_dir_all(&dir).unwrap();
        let images: Vec<u8> = (0..3 * 2 * 2).map(|v| v as u8 * 10).collect();
        let (im, lb) = (dir.join("im"), dir.join("lb.gz"));
        std::fs::write(&im, idx(&[3, 2, 2], &images)).unwrap();
        let mut gz = flate2::write::GzEncoder::new(vec![], flate2::Compression::default());
        gz.write_all(&idx(&[3], &[7, 0, 9])).unwrap();
        std::fs::write(&lb, gz.finish().unwrap()).unwrap();
        assert_eq!(idx_shape(&im, &lb, TRAIN).unwrap(), Shape { samples: 3, features: 4 });
        let r = idx_rows(&im, &lb, 0.1, Labels::Classes(10), &[2, 0, 2], TRAIN).unwrap();
        assert_eq!(r.labels(), &[9.0, 7.0, 9.0]);
        assert_eq!(r.row(0), &[8.0, 9.0, 10.0, 11.0]);
        assert_eq!(r.row(1), &[0.0, 1.0, 2.0, 3.0]);
        let e = idx_rows(&im, &lb, 1.0, Labels::Classes(8), &[2], TRAIN).unwrap_err().to_string();
        assert!(e.ends_with("label 9 of image 3 is not a class 0..7 (8 classes in [model])"), "{e}");
        std::fs::write(&lb, idx(&[2], &[1, 2])).unwrap();
        assert!(idx_shape(&im, &lb, TRAIN).unwrap_err().to_string().contains("2 labels, but"));
        std::fs::write(&lb, b"\x1f\x00junk").unwrap();
        assert!(idx_shape(&im, &lb, TRAIN).unwrap_err().to_string().contains("not an IDX file"));
        std::fs::write(&lb, idx(&[3, 1], &[1, 2, 3])).unwrap();
        assert!(idx_shape(&im, &lb, TRAIN)
            .unwrap_err()
            .to_string()
            .contains("2 dimensions, expected 1 (data.labels_path)"));
        // a held-out pair names the held-out keys
        assert!(idx_shape(&im, &lb, TEST)
            .unwrap_err()
            .to_string()
            .contains("2 dimensions, expected 1 (data.test_labels_path)"));
        std::fs::write(&im, idx(&[3, 2, 2], &images[..5])).unwrap();
        std::fs::write(&lb, idx(&[3], &[1, 2, 3])).unwrap();
        assert!(idx_rows(&im, &lb, 1.0, Labels::Real, &[2], TRAIN)
            .unwrap_err()
            .to_string()
            .contains("truncated at image 2"));
        std::fs::remove_dir_all(&dir).unwrap();
    }

    /// What `outrun check` reads before MPI starts: both files to their ends. A gzip file whose
    /// checksum is wrong, bytes after the last value, a truncated file and a label beyond the
    /// classes are each refused in one line naming the file — the header alone passed them all.
    #[test]
    fn the_check_reads_both_files_to_their_ends() {
        let dir = std::env::temp_dir().join(format!("outrun-idx-check-{}", std::process::id()));
        std::fs::create_dir_all(&dir).unwrap();
        let images: Vec<u8> = (0..3 * 2 * 2).map(|v| v as u8).collect();
        let (im, lb) = (dir.join("im.gz"), dir.join("lb"));
        let gzip = |bytes: &[u8]| {
            let mut gz = flate2::write::GzEncoder::new(vec![], flate2::Compression::default());
            gz.write_all(bytes).unwrap();
            gz.finish().unwrap()
        };
        let good = gzip(&idx(&[3, 2, 2], &images));
        std::fs::write(&im, &good).unwrap();
        std::fs::write(&lb, idx(&[3], &[1, 0, 2])).unwrap();
        assert_eq!(idx_check(&im, &lb, Labels::Classes(3), TRAIN).unwrap(), Shape { samples: 3, features: 4 });
        let err = |rule| idx_check(&im, &lb, rule, TRAIN).unwrap_err().to_string();
        // the gzip trailer's CRC-32, flipped: the body decodes, its checksum does not match
        let mut bad_crc = good.clone();
        let at = bad_crc.len() - 8;
        bad_crc[at] ^= 0xff;
        std::fs::write(&im, &bad_crc).unwrap();
        assert!(idx_shape(&im, &lb, TRAIN).is_ok(), "the header alone reads");
        assert!(err(Labels::Classes(3)).contains("corrupt after the last image"), "{}", err(Labels::Classes(3)));
        // half a gzip file
        std::fs::write(&im, &good[..good.len() / 2]).unwrap();
        assert!(err(Labels::Classes(3)).contains("im.gz"), "{}", err(Labels::Classes(3)));
        std::fs::write(&im, &good).unwrap();
        // a label beyond the classes, and a byte after the last label
        assert!(err(Labels::Classes(2)).ends_with("label 2 of image 3 is not a class 0..1 (2 classes in [model])"));
        std::fs::write(&lb, idx(&[3], &[1, 0, 2, 5])).unwrap();
        assert!(err(Labels::Classes(3))
            .ends_with("1 bytes after the last label: the header's count does not match the file"));
        // truncated images
        std::fs::write(&lb, idx(&[3], &[1, 0, 2])).unwrap();
        std::fs::write(&im, idx(&[3, 2, 2], &images[..9])).unwrap();
        assert!(err(Labels::Classes(3)).contains("truncated at image 3"), "{}", err(Labels::Classes(3)));
        // a header's image of 2^31 − 1 rows: refused by what the file holds, not by a failed
        // allocation of an image's 60 GB (an abort with a backtrace)
        std::fs::write(&im, idx(&[3, 0x7fff_ffff, 28], &images)).unwrap();
        assert!(
            err(Labels::Classes(3)).ends_with("truncated at image 1: its header says 3 images of 60129542116 bytes"),
            "{}",
            err(Labels::Classes(3))
        );
        std::fs::remove_dir_all(&dir).unwrap();
    }
}
