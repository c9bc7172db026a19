//! Payload vectors: [`Frame`] holds real values (in place in a received frame, after its
//! header), [`Len`] only a length (timing simulations, where nothing is computed).

use crate::roles::{Map, Vector};

/// Words before the body of a frame whose header has no meta (`crate::wire`'s format); payload
/// vectors reserve them so a header can be written in front of their values.
pub const HEAD_WORDS: usize = 4;

/// Real values with room for a frame header before them: the body of a received frame (used in
/// place), or a vector built here (which reserves [`HEAD_WORDS`] so it can be sent without a copy).
#[derive(Clone, Debug, PartialEq)]
pub struct Frame {
    buf: Vec<f64>,
    off: usize,
    len: usize,
}

impl Frame {
    /// A vector of the given values.
    pub fn from_vec(v: Vec<f64>) -> Self {
        let len = v.len();
        Frame { buf: v, off: 0, len }
    }

    /// The body of a received frame: `len` values from word `off`.
    pub(crate) fn received(buf: Vec<f64>, off: usize, len: usize) -> Self {
        Frame { buf, off, len }
    }

    /// The values.
    pub fn as_slice(&self) -> &[f64] {
        &self.buf[self.off..self.off + self.len]
    }

    /// The values, mutably.
    pub fn as_mut_slice(&mut self) -> &mut [f64] {
        &mut self.buf[self.off..self.off + self.len]
    }

    /// The values as a vector (copies unless the frame has no header).
    pub fn into_vec(self) -> Vec<f64> {
        if self.off == 0 && self.buf.len() == self.len {
            self.buf
        } else {
            self.as_slice().to_vec()
        }
    }

    /// Word offset of the body (0 unless received).
    pub fn off(&self) -> usize {
        self.off
    }

    /// The whole buffer, header words included (what a relay sends).
    pub fn words(&self) -> &[f64] {
        &self.buf[..self.off + self.len]
    }

    /// The header words as bytes.
    pub(crate) fn head_bytes(&self) -> &[u8] {
        // SAFETY: viewing initialised f64 storage as bytes.
        unsafe { std::slice::from_raw_parts(self.buf.as_ptr() as *const u8, self.off * 8) }
    }

    /// The header words as bytes, mutably.
    pub(crate) fn head_mut(&mut self) -> &mut [u8] {
        // SAFETY: f64 storage viewed as bytes (every bit pattern is a valid f64).
        unsafe { std::slice::from_raw_parts_mut(self.buf.as_mut_ptr() as *mut u8, self.off * 8) }
    }

    /// Number of values.
    pub fn len_values(&self) -> usize {
        self.len
    }

    /// A copy of `src` with room for a header before it, so that it is sent as it is (one copy;
    /// [`Frame::from_vec`] keeps the vector but its send copies it into a frame).
    pub fn copy_of(src: &[f64]) -> Self {
        let mut buf = Vec::with_capacity(HEAD_WORDS + src.len());
        buf.resize(HEAD_WORDS, 0.0);
        buf.extend_from_slice(src);
        Frame { buf, off: HEAD_WORDS, len: src.len() }
    }
}

impl Vector for Frame {
    fn values(&self) -> Option<&[f64]> {
        Some(self.as_slice())
    }
    fn values_mut(&mut self) -> Option<&mut [f64]> {
        Some(self.as_mut_slice())
    }
    fn zeros(len: usize) -> Self {
        Frame { buf: vec![0.0; HEAD_WORDS + len], off: HEAD_WORDS, len }
    }
    fn range(src: &Self, from: usize, len: usize) -> Self {
        Frame::copy_of(&src.as_slice()[from..from + len])
    }
    fn len(&self) -> usize {
        self.len
    }
    fn add_scaled(&mut self, to: usize, src: &Self, from: usize, len: usize, coef: f64) {
        let dst = &mut self.as_mut_slice()[to..to + len];
        let src = &src.as_slice()[from..from + len];
        if coef == 1.0 {
            dst.iter_mut().zip(src).for_each(|(d, s)| *d += s);
        } else {
            dst.iter_mut().zip(src).for_each(|(d, s)| *d += coef * s);
        }
    }
    fn copy_range(&mut self, to: usize, src: &Self, from: usize, len: usize) {
        self.as_mut_slice()[to..to + len].copy_from_slice(&src.as_slice()[from..from + len]);
    }
    fn mapped(&self, map: &dyn Map) -> Self {
        Frame::copy_of(&map.apply(self.as_slice()))
    }
}

/// A vector that is only a length: the simulator's timing runs move these.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Len(pub usize);

impl Vector for Len {
    const VALUES: bool = false;
    fn zeros(len: usize) -> Self {
        Len(len)
    }
    fn len(&self) -> usize {
        self.0
    }
    fn range(_src: &Self, _from: usize, len: usize) -> Self {
        Len(len)
    }
    fn add_scaled(&mut self, _to: usize, _src: &Self, _from: usize, _len: usize, _coef: f64) {}
    fn copy_range(&mut self, _to: usize, _src: &Self, _from: usize, _len: usize) {}
    fn mapped(&self, map: &dyn Map) -> Self {
        Len(map.out_len())
    }
}
