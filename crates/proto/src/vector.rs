//! Payload vectors: [`Frame`] holds real values (in place in a received frame, after its
//! header), [`Len`] only a length (timing simulations, where nothing is computed).

use outrun_plan::roles::Vector;

/// Real values, possibly living inside a received frame (after its header words).
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
}

impl Vector for Frame {
    fn zeros(len: usize) -> Self {
        Frame::from_vec(vec![0.0; len])
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
}

/// A vector that is only a length: the simulator's timing runs move these.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Len(pub usize);

impl Vector for Len {
    fn zeros(len: usize) -> Self {
        Len(len)
    }
    fn len(&self) -> usize {
        self.0
    }
    fn add_scaled(&mut self, _to: usize, _src: &Self, _from: usize, _len: usize, _coef: f64) {}
    fn copy_range(&mut self, _to: usize, _src: &Self, _from: usize, _len: usize) {}
}
