//! Messages and their wire format.
//!
//! A message is a [`Header`] (kind, iteration, round, the sender's timestamp for models, and a
//! small kind-specific [`Meta`]) and an optional body of `f64`s. On the wire it is one frame of
//! bytes, 8-byte aligned so the body can be used in place:
//!
//! ```text
//! [u16 LE: header length H][u16 LE: body offset B, in words][H bytes: bincode(Header)][padding][body from word B: f64 LE …]
//! ```
//!
//! Headers are encoded with fixed-width integers, so a header without meta is always 28 bytes
//! and a frame with a body starts it at word [`HEAD_WORDS`] = 4: payload vectors reserve those
//! words ([`crate::Frame`]), and a vector the sender owns is sent with its header written in
//! place, without a copy. The header is authoritative: tags only separate traffic classes. The
//! simulator charges each message [`frame_bytes`], the exact size the engine sends.
//!
//! A silent truncation here corrupts frames, so this module denies the lossy casts (a length
//! that does not fit its field is refused instead).
#![deny(clippy::cast_possible_truncation, clippy::cast_possible_wrap, clippy::cast_sign_loss)]

use serde::{Deserialize, Serialize};

use crate::vector::Frame;

/// What a message is.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub enum Kind {
    /// Parent → child: the model of iteration `t` (body).
    Model,
    /// Parent → child: this child's assignment for iteration `t` (meta), sent before the model.
    Assign,
    /// Parent → child: the run is over; drain and say goodbye.
    Stop,
    /// Parent → child: the run failed; drain and say goodbye.
    Abort,
    /// Child → parent: round `round` of the child's result for iteration `t` (body).
    Result,
    /// Child → parent: the child gave up on `t` (a newer model or the stop arrived first).
    Abandoned,
    /// Child → parent: the child's subtree could not produce `t` (meta: the missing ranks).
    Failed,
    /// Child → parent: goodbye, with the number of up messages sent (meta).
    Bye,
    /// Ring: step `round` of iteration `t` (body: one segment); a long vector's lane l takes
    /// rounds l × steps + step.
    Segment,
    /// Child → parent (`engine.upload = "granted"`): the child has its result for `t`, in
    /// `round` rounds; no body.
    Ready,
    /// Parent → child: upload round `round` of your result for `t`.
    Grant,
    /// Parent → child: your result for `t` is not needed (keep it until the next model: a
    /// grant may still come if a granted child fails).
    Refuse,
    /// Helper → master (hierarchical): the clients whose slices of `t` arrived (meta).
    Report,
    /// Master → helper (hierarchical): the client sets whose slices of `t` to sum and upload
    /// (meta).
    Instruct,
    /// Worker → root, before the loop (the prelude): transmission `round` of the worker's
    /// contribution (body), to be added at the offset in the meta.
    Contribution,
    /// A node whose parent has been silent for its patience → the root: is the run still
    /// going? (`t`: the last iteration the node heard of; no body.)
    Probe,
    /// Root → a node that probed: the run is going, at iteration `t` (no body).
    Alive,
}

impl Kind {
    /// Whether the kind travels down a tree, from a parent to its children (the simulator's
    /// network can leave these free: the papers' model counts only uploads).
    pub fn is_down(self) -> bool {
        matches!(
            self,
            Kind::Model
                | Kind::Assign
                | Kind::Stop
                | Kind::Abort
                | Kind::Grant
                | Kind::Refuse
                | Kind::Instruct
                | Kind::Alive
        )
    }

    /// Lower-case name for logs.
    pub fn name(self) -> &'static str {
        match self {
            Kind::Model => "model",
            Kind::Assign => "assign",
            Kind::Stop => "stop",
            Kind::Abort => "abort",
            Kind::Result => "gradient",
            Kind::Abandoned => "abandoned",
            Kind::Failed => "failed",
            Kind::Bye => "bye",
            Kind::Segment => "segment",
            Kind::Ready => "ready",
            Kind::Grant => "grant",
            Kind::Refuse => "refuse",
            Kind::Report => "report",
            Kind::Instruct => "instruct",
            Kind::Contribution => "contribution",
            Kind::Probe => "probe",
            Kind::Alive => "alive",
        }
    }
}

/// Kind-specific header data.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize, Default)]
pub enum Meta {
    /// Nothing.
    #[default]
    None,
    /// `Failed`: the ranks the sender was missing.
    Missing(Vec<u32>),
    /// `Assign`: a scheme-defined assignment.
    Assignment(Vec<u8>),
    /// `Report`: clients (0-based) whose slices arrived.
    Clients(Vec<u32>),
    /// `Instruct`: the client sets (0-based) whose slices to sum, one upload each.
    Sums(Vec<Vec<u32>>),
    /// `Bye`: up messages sent, the model-latency histogram of the sender's subtree, and the
    /// ranks of the subtree whose log file refused lines (so the master reports them once).
    Bye {
        /// Up messages sent before the goodbye.
        count: u64,
        /// Sparse histogram: (bin, count).
        latency: Vec<(u16, u32)>,
        /// Ranks whose log dropped lines, with the first error.
        dropped: Vec<(u32, String)>,
        /// Ranks below that never said goodbye, with the last iteration each answered.
        silent: Vec<(u32, Option<u64>)>,
    },
    /// `Contribution`: where its values go in the sum.
    Offset(u64),
}

impl Meta {
    /// Ranks a `Failed` lists at most (4 bytes each).
    pub const MAX_MISSING: usize = 4096;
    /// Ranks with a dropped log a `Bye` lists at most, and the bytes of each error kept.
    pub const MAX_DROPPED: usize = 150;
    const MAX_ERROR: usize = 200;
    /// Silent ranks a `Bye` lists at most.
    pub const MAX_SILENT: usize = 1024;

    /// `Failed` with the first [`Self::MAX_MISSING`] of `missing`.
    pub fn missing(mut missing: Vec<u32>) -> Self {
        missing.truncate(Self::MAX_MISSING);
        Meta::Missing(missing)
    }

    /// `Bye` with the first [`Self::MAX_DROPPED`] of `dropped` (errors cut to 200 bytes) and
    /// the first [`Self::MAX_SILENT`] of `silent`: a header's length is a u16 in the frame, and
    /// these bounds keep every header below 64 KiB (the latency histogram is at most 650 bins).
    pub fn bye(count: u64, latency: Vec<(u16, u32)>, dropped: &[(u32, String)], silent: &[(u32, Option<u64>)]) -> Self {
        let cut = |e: &String| {
            let mut end = e.len().min(Self::MAX_ERROR);
            while !e.is_char_boundary(end) {
                end -= 1;
            }
            e[..end].to_string()
        };
        let dropped = dropped.iter().take(Self::MAX_DROPPED).map(|(r, e)| (*r, cut(e))).collect();
        let silent = silent.iter().take(Self::MAX_SILENT).copied().collect();
        Meta::Bye { count, latency, dropped, silent }
    }
}

/// A message header.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct Header {
    /// What it is.
    pub kind: Kind,
    /// Iteration.
    pub t: u64,
    /// Round (multi-round results) or step (ring segments).
    pub round: u32,
    /// The root's clock when it sent the model (models only; seconds on the master timeline).
    pub sent_at: f64,
    /// Kind-specific data.
    pub meta: Meta,
}

impl Header {
    /// A header with no round, timestamp or meta.
    pub fn new(kind: Kind, t: u64) -> Self {
        Header { kind, t, round: 0, sent_at: 0.0, meta: Meta::None }
    }
}

/// A message as the protocol sees it: header and shared body.
#[derive(Clone, Debug)]
pub struct Msg<P> {
    /// The header.
    pub head: Header,
    /// The body, shared (one model buffer serves every child).
    pub body: Option<std::sync::Arc<P>>,
}

impl<P: crate::roles::Vector> Msg<P> {
    /// Bytes of the message's frame on the wire ([`frame_bytes`]).
    pub fn frame_bytes(&self) -> usize {
        frame_bytes(&self.head, self.body.as_ref().map_or(0, |b| b.len()))
    }
}

/// A received message's body, owned (copied only if another holder still shares it), or `len`
/// zeros when the message had none.
pub fn owned_body<P: crate::roles::Vector>(body: Option<std::sync::Arc<P>>, len: usize) -> P {
    body.map(|b| std::sync::Arc::try_unwrap(b).unwrap_or_else(|b| (*b).clone())).unwrap_or_else(|| P::zeros(len))
}

/// A frame that could not be read.
#[derive(Clone, Debug, PartialEq, thiserror::Error)]
pub enum WireError {
    /// Shorter than its header says.
    #[error("truncated frame ({0} bytes)")]
    Truncated(usize),
    /// The header does not decode.
    #[error("malformed header: {0}")]
    Header(String),
}

fn config() -> impl bincode::config::Config {
    bincode::config::standard().with_fixed_int_encoding()
}

pub use crate::vector::HEAD_WORDS;

/// Bytes of a header without meta (fixed-width encoding: kind 4, t 8, round 4, sent_at 8,
/// meta tag 4).
const PLAIN_HEADER: usize = 28;

/// Write the prefix and header of `head` (body at word `body_off`) into `out`; returns the
/// bytes written, or None if `out` is too small or a length does not fit its u16.
fn write_head(head: &Header, body_off: usize, out: &mut [u8]) -> Option<usize> {
    let n = bincode::serde::encode_into_slice(head, out.get_mut(4..)?, config()).ok()?;
    out[..2].copy_from_slice(&u16::try_from(n).ok()?.to_le_bytes());
    out[2..4].copy_from_slice(&u16::try_from(body_off).ok()?.to_le_bytes());
    Some(4 + n)
}

/// The prefix and header bytes of `head` for a body at word `body_off`.
fn head_bytes(head: &Header, body_off: usize) -> Vec<u8> {
    let mut out = vec![0u8; head_len(head)];
    write_head(head, body_off, &mut out).expect("sized by head_len; Meta's constructors bound a header below 64 KiB");
    out
}

/// Header length in bytes (prefix included).
fn head_len(head: &Header) -> usize {
    4 + match head.meta {
        Meta::None => PLAIN_HEADER,
        _ => bincode::serde::encode_to_vec(head, config()).expect("headers encode").len(),
    }
}

/// Size in bytes of the frame of `head` with a body of `body_len` values.
pub fn frame_bytes(head: &Header, body_len: usize) -> usize {
    let n = head_len(head);
    if body_len == 0 {
        n
    } else {
        8 * (n.div_ceil(8) + body_len)
    }
}

fn as_bytes_mut(words: &mut [f64]) -> &mut [u8] {
    // SAFETY: f64 storage viewed as bytes (every bit pattern is a valid f64).
    unsafe { std::slice::from_raw_parts_mut(words.as_mut_ptr() as *mut u8, words.len() * 8) }
}

/// Build the frame of `head` and `body` (a copy of the body follows the header). Returns the
/// words and the number of bytes to send.
pub fn encode(head: &Header, body: Option<&[f64]>) -> (Vec<f64>, usize) {
    let body = body.unwrap_or(&[]);
    let hw = head_len(head).div_ceil(8);
    let hb = head_bytes(head, hw);
    let mut words = vec![0.0f64; hw + body.len()];
    as_bytes_mut(&mut words[..hw])[..hb.len()].copy_from_slice(&hb);
    words[hw..].copy_from_slice(body);
    let nbytes = if body.is_empty() { hb.len() } else { 8 * words.len() };
    (words, nbytes)
}

/// Write the header of `head` into the room `frame` reserves before its values, making it a
/// whole frame; returns the bytes to send, or None when the header does not fit (then
/// [`encode`] copies).
pub fn encode_in_place(frame: &mut Frame, head: &Header) -> Option<usize> {
    let off = frame.off();
    if off == 0 {
        return None;
    }
    write_head(head, off, frame.head_mut())?;
    Some(8 * (off + frame.len_values()))
}

/// Whether `frame` (a received frame) already starts with exactly the header of `head`, so it
/// can be forwarded as it is.
pub fn starts_with(frame: &Frame, head: &Header) -> bool {
    let mut buf = [0u8; 8 * HEAD_WORDS];
    match write_head(head, frame.off(), &mut buf) {
        Some(n) => frame.off() > 0 && frame.head_bytes().get(..n) == Some(&buf[..n]),
        None => false,
    }
}

/// Read a received frame of `nbytes` bytes held in `words`.
pub fn decode(words: Vec<f64>, nbytes: usize) -> Result<(Header, Option<Frame>), WireError> {
    // SAFETY: viewing initialised f64 storage as bytes.
    let bytes = unsafe { std::slice::from_raw_parts(words.as_ptr() as *const u8, words.len() * 8) };
    if nbytes < 4 || nbytes > bytes.len() {
        return Err(WireError::Truncated(nbytes));
    }
    let h = u16::from_le_bytes([bytes[0], bytes[1]]) as usize;
    let off = u16::from_le_bytes([bytes[2], bytes[3]]) as usize;
    if 4 + h > nbytes || (nbytes > 4 + h && (off * 8 < 4 + h || off * 8 > nbytes)) {
        return Err(WireError::Truncated(nbytes));
    }
    let (head, _): (Header, usize) =
        bincode::serde::decode_from_slice(&bytes[4..4 + h], config()).map_err(|e| WireError::Header(e.to_string()))?;
    let body_words = (nbytes / 8).saturating_sub(off);
    let body = (nbytes > 4 + h && body_words > 0).then(|| Frame::received(words, off, body_words));
    Ok((head, body))
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::roles::Vector;

    #[test]
    fn frames_round_trip_and_sizes_match() {
        let mut head = Header::new(Kind::Result, 123_456);
        head.round = 3;
        let body = [1.5, -2.5, 3.25];
        let (words, n) = encode(&head, Some(&body));
        assert_eq!(n, frame_bytes(&head, 3));
        assert_eq!(n % 8, 0);
        let (back, frame) = decode(words, n).unwrap();
        assert_eq!(back, head);
        let frame = frame.unwrap();
        assert_eq!(frame.as_slice(), &body);
        assert_eq!(frame.len(), 3);
        assert!(starts_with(&frame, &head));
        assert!(!starts_with(&frame, &Header::new(Kind::Result, 7)));

        let mut bye = Header::new(Kind::Bye, 0);
        bye.meta = Meta::Bye {
            count: 41,
            latency: vec![(3, 7), (200, 1)],
            dropped: vec![(3, "No space left on device".into())],
            silent: vec![(4, Some(17)), (5, None)],
        };
        let (words, n) = encode(&bye, None);
        assert_eq!(n, frame_bytes(&bye, 0));
        let (back, frame) = decode(words, n).unwrap();
        assert_eq!(back, bye);
        assert!(frame.is_none());
        // a model header is small: the header costs a couple of words on the wire
        let mut m = Header::new(Kind::Model, 1 << 40);
        m.sent_at = 12.345;
        assert_eq!(bincode::serde::encode_to_vec(&m, config()).unwrap().len(), PLAIN_HEADER);
        assert_eq!(frame_bytes(&m, 0), 8 * HEAD_WORDS, "a header without meta fills the reserved words exactly");
        assert_eq!(frame_bytes(&m, 10), 8 * (HEAD_WORDS + 10));
    }

    #[test]
    fn owned_vectors_are_sent_with_the_header_written_in_place() {
        let mut f = Frame::zeros(3);
        f.as_mut_slice().copy_from_slice(&[1.0, 2.0, 3.0]);
        let head = Header { round: 7, ..Header::new(Kind::Result, 99) };
        let n = encode_in_place(&mut f, &head).expect("room for the header");
        assert_eq!(n, frame_bytes(&head, 3));
        let (back, body) = decode(f.words().to_vec(), n).unwrap();
        assert_eq!(back, head);
        assert_eq!(body.unwrap().as_slice(), &[1.0, 2.0, 3.0]);
        assert!(starts_with(&f, &head));
        // a header with meta does not fit: the caller copies
        let mut big = Header::new(Kind::Failed, 1);
        big.meta = Meta::Missing((0..20).collect());
        assert_eq!(encode_in_place(&mut f, &big), None);
        assert_eq!(encode_in_place(&mut Frame::from_vec(vec![1.0]), &head), None, "no room");
    }

    /// The lists a header carries are bounded, so a header always fits its u16 length: a
    /// goodbye from a subtree of 10 000 ranks whose logs all failed, and a failure naming
    /// 100 000 missing ranks, still encode and decode.
    #[test]
    fn headers_stay_below_64_kib() {
        let latency: Vec<(u16, u32)> = (0..650).map(|b| (b, u32::MAX)).collect();
        let dropped: Vec<(u32, String)> = (0..10_000).map(|r| (r, "é".repeat(300))).collect();
        let silent: Vec<(u32, Option<u64>)> = (0..100_000).map(|r| (r, Some(u64::MAX))).collect();
        // the hierarchical master's largest instruction (every client forwarded alone) and a
        // helper's report of every client
        let most = u32::try_from(outrun_config::HierConfig::MAX_CLIENTS).expect("small");
        let sums = Meta::Sums((0..most).map(|c| vec![c]).collect());
        let clients = Meta::Clients((0..most).collect());
        for meta in
            [Meta::bye(u64::MAX, latency, &dropped, &silent), Meta::missing((0..100_000).collect()), sums, clients]
        {
            let head = Header { meta, ..Header::new(Kind::Bye, 0) };
            let (words, n) = encode(&head, None);
            assert!(n < 1 << 16, "{n}");
            let (back, _) = decode(words, n).unwrap();
            assert_eq!(back, head);
        }
    }

    #[test]
    fn malformed_frames_are_errors() {
        assert_eq!(decode(vec![0.0], 2), Err(WireError::Truncated(2)));
        let mut w = vec![0.0f64; 2];
        // header length 200 in a 16-byte frame
        as_bytes_mut(&mut w)[..4].copy_from_slice(&[200, 0, 2, 0]);
        assert_eq!(decode(w, 16), Err(WireError::Truncated(16)));
        let mut w = vec![0.0f64; 2];
        as_bytes_mut(&mut w)[..6].copy_from_slice(&[2, 0, 1, 0, 250, 250]);
        assert!(matches!(decode(w, 16), Err(WireError::Header(_))));
    }
}
