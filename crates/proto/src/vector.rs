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
    pub fn into_vec(mut self) -> Vec<f64> {
        if self.off == 0 && self.buf.len() == self.len {
            std::mem::take(&mut self.buf)
        } else {
            self.as_slice().to_vec()
        }
    }

    /// An empty vector with room for at least `words` values: the storage of a large frame
    /// dropped on this thread when one of a fitting size is kept (see [`Drop for
    /// Frame`](#impl-Drop-for-Frame)), else a new allocation. What a received message is read
    /// into.
    pub fn storage(words: usize) -> Vec<f64> {
        pool::take(words).unwrap_or_else(|| Vec::with_capacity(words))
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
        let mut buf = Frame::storage(HEAD_WORDS + src.len());
        buf.resize(HEAD_WORDS, 0.0);
        buf.extend_from_slice(src);
        Frame { buf, off: HEAD_WORDS, len: src.len() }
    }
}

/// A large frame's storage goes back to this thread's pool, for the next frame or received
/// message of about its size: a buffer above glibc's 32 MiB mmap threshold is otherwise a fresh
/// mapping every time, every page of it faulted in and zeroed again (docs/performance.md §19).
impl Drop for Frame {
    fn drop(&mut self) {
        pool::put(std::mem::take(&mut self.buf));
    }
}

/// The kept storage of dropped frames, per thread.
mod pool {
    use std::cell::RefCell;

    /// Smaller buffers come back from the heap's free lists (the engine and the simulator set
    /// glibc's mmap threshold to its 32 MiB maximum: `outrun_codes::keep_freed_memory`).
    pub(super) const MIN_WORDS: usize = (32 << 20) / 8;
    /// At most this many are kept (the ring's first segment and two received ones are in
    /// flight at once).
    pub(super) const KEEP: usize = 4;

    thread_local! {
        pub(super) static FREE: RefCell<Vec<Vec<f64>>> = const { RefCell::new(Vec::new()) };
    }

    /// Keep `v`'s storage if it is large and there is room; else free it.
    pub(super) fn put(mut v: Vec<f64>) {
        if v.capacity() < MIN_WORDS {
            return;
        }
        v.clear();
        let _ = FREE.try_with(|f| {
            let mut f = f.borrow_mut();
            if f.len() < KEEP {
                f.push(v);
            } else if let Some(small) =
                f.iter_mut().min_by_key(|k| k.capacity()).filter(|k| k.capacity() < v.capacity())
            {
                // the larger one is more likely to be asked for again, and the costlier to map
                *small = v;
            }
        });
    }

    /// Kept storage for at least `words` values and at most twice that, emptied.
    pub(super) fn take(words: usize) -> Option<Vec<f64>> {
        if words < MIN_WORDS {
            return None;
        }
        FREE.try_with(|f| {
            let mut f = f.borrow_mut();
            // the most recently dropped first: its pages are the likeliest still cached
            let i = f.iter().rposition(|v| (words..=2 * words).contains(&v.capacity()))?;
            Some(f.remove(i))
        })
        .ok()
        .flatten()
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
        let mut buf = Frame::storage(HEAD_WORDS + len);
        buf.resize(HEAD_WORDS + len, 0.0);
        Frame { buf, off: HEAD_WORDS, len }
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

#[cfg(test)]
mod tests {
    use super::*;

    /// A dropped frame above the mmap threshold lends its storage to the next frame or
    /// received message of about its size (zeroed where a frame asks for zeros); smaller
    /// frames, and requests under half a kept buffer, are left to the allocator.
    #[test]
    fn large_frames_storage_is_kept_for_the_next_of_about_their_size() {
        let big = pool::MIN_WORDS + 10;
        let mut a = Frame::zeros(big);
        a.as_mut_slice().fill(7.0);
        let at = a.words().as_ptr();
        drop(a);
        let b = Frame::zeros(big - 3);
        assert_eq!(b.words().as_ptr(), at, "the dropped frame's storage");
        assert!(b.as_slice().iter().all(|&v| v == 0.0), "zeroed");
        drop(b);
        let c = Frame::copy_of(&vec![1.5; big]);
        assert_eq!((c.words().as_ptr(), c.as_slice()[big - 1]), (at, 1.5));
        drop(c);
        // half the kept size is not served from it; the kept one waits for a fitting request
        assert!(pool::take(big / 3).is_none());
        let kept = Frame::storage(big);
        assert_eq!((kept.as_ptr(), kept.len()), (at, 0), "a received message reads into it");
        drop(kept);
        // a plain vector's storage is not kept, nor a small frame's
        drop(Frame::zeros(1000));
        assert_eq!(pool::FREE.with(|f| f.borrow().len()), 0);
        // at most KEEP, the largest kept
        for k in 0..pool::KEEP + 2 {
            drop(Frame::zeros(big + k));
            drop(Frame::zeros(big + 100 + k).clone());
        }
        let caps: Vec<usize> = pool::FREE.with(|f| f.borrow().iter().map(Vec::capacity).collect());
        assert_eq!(caps.len(), pool::KEEP);
        assert!(caps.iter().all(|&c| c >= HEAD_WORDS + big + 100), "{caps:?}");
        pool::FREE.with(|f| f.borrow_mut().clear());
    }
}
