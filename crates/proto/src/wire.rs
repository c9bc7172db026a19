//! Messages and their wire format.
//!
//! A message is a [`Header`] (kind, iteration, round, the sender's timestamp for models, and a
//! small kind-specific [`Meta`]) and an optional body of `f64`s. On the wire it is one frame of
//! bytes, 8-byte aligned so the body can be used in place:
//!
//! ```text
//! [u32 LE: header length H][H bytes: bincode(Header)][padding to 8][body: f64 LE …]
//! ```
//!
//! The header is authoritative: tags only separate traffic classes. The simulator charges each
//! message [`frame_bytes`], the exact size the engine sends.

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
    /// Ring: step `round` of iteration `t` (body: one segment).
    Segment,
}

impl Kind {
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
    /// `Bye`: up messages sent, and the model-latency histogram of the sender's subtree.
    Bye {
        /// Up messages sent before the goodbye.
        count: u64,
        /// Sparse histogram: (bin, count).
        latency: Vec<(u16, u32)>,
    },
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
    bincode::config::standard()
}

/// The header's bytes as they appear at the start of a frame (length prefix included).
pub fn header_bytes(head: &Header) -> Vec<u8> {
    let h = bincode::serde::encode_to_vec(head, config()).expect("headers encode");
    let mut out = Vec::with_capacity(4 + h.len());
    out.extend_from_slice(&(h.len() as u32).to_le_bytes());
    out.extend_from_slice(&h);
    out
}

/// Words (f64 slots) taken by a header of `n` bytes (prefix included), padded.
fn head_words(n: usize) -> usize {
    n.div_ceil(8)
}

/// Size in bytes of the frame of `head` with a body of `body_len` values.
pub fn frame_bytes(head: &Header, body_len: usize) -> usize {
    if body_len == 0 {
        header_bytes(head).len()
    } else {
        8 * (head_words(header_bytes(head).len()) + body_len)
    }
}

/// Build the frame of `head` and `body` (a copy of the body follows the header). Returns the
/// words and the number of bytes to send.
pub fn encode(head: &Header, body: Option<&[f64]>) -> (Vec<f64>, usize) {
    let hb = header_bytes(head);
    let hw = head_words(hb.len());
    let body = body.unwrap_or(&[]);
    let mut words = vec![0.0f64; hw + body.len()];
    // SAFETY: the first `hw` words are plain bytes for the header (f64 has no invalid bit
    // patterns); the slice covers exactly them.
    let bytes = unsafe { std::slice::from_raw_parts_mut(words.as_mut_ptr() as *mut u8, hw * 8) };
    bytes[..hb.len()].copy_from_slice(&hb);
    words[hw..].copy_from_slice(body);
    let nbytes = if body.is_empty() { hb.len() } else { 8 * words.len() };
    (words, nbytes)
}

/// Whether `frame` (a received frame) already starts with exactly the header of `head`, so it
/// can be forwarded as it is.
pub fn starts_with(frame: &Frame, head: &Header) -> bool {
    let hb = header_bytes(head);
    frame.off() == head_words(hb.len()) && frame.head_bytes().get(..hb.len()) == Some(&hb[..])
}

/// Read a received frame of `nbytes` bytes held in `words`.
pub fn decode(words: Vec<f64>, nbytes: usize) -> Result<(Header, Option<Frame>), WireError> {
    // SAFETY: viewing initialised f64 storage as bytes.
    let bytes = unsafe { std::slice::from_raw_parts(words.as_ptr() as *const u8, words.len() * 8) };
    if nbytes < 4 || nbytes > bytes.len() {
        return Err(WireError::Truncated(nbytes));
    }
    let h = u32::from_le_bytes(bytes[..4].try_into().expect("4 bytes")) as usize;
    if 4 + h > nbytes {
        return Err(WireError::Truncated(nbytes));
    }
    let (head, _): (Header, usize) = bincode::serde::decode_from_slice(&bytes[4..4 + h], config()).map_err(|e| WireError::Header(e.to_string()))?;
    let hw = head_words(4 + h);
    let body_words = (nbytes / 8).saturating_sub(hw);
    let body = (nbytes > 4 + h && body_words > 0).then(|| Frame::received(words, hw, body_words));
    Ok((head, body))
}

#[cfg(test)]
mod tests {
    use super::*;
    use outrun_plan::roles::Vector;

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
        bye.meta = Meta::Bye { count: 41, latency: vec![(3, 7), (200, 1)] };
        let (words, n) = encode(&bye, None);
        assert_eq!(n, frame_bytes(&bye, 0));
        let (back, frame) = decode(words, n).unwrap();
        assert_eq!(back, bye);
        assert!(frame.is_none());
        // a model header is small: the header costs a couple of words on the wire
        let mut m = Header::new(Kind::Model, 1 << 40);
        m.sent_at = 12.345;
        assert!(frame_bytes(&m, 0) <= 24, "{}", frame_bytes(&m, 0));
    }

    #[test]
    fn malformed_frames_are_errors() {
        assert_eq!(decode(vec![0.0], 2), Err(WireError::Truncated(2)));
        let mut w = vec![0.0f64; 2];
        // header length 200 in a 16-byte frame
        unsafe { std::slice::from_raw_parts_mut(w.as_mut_ptr() as *mut u8, 16)[..4].copy_from_slice(&200u32.to_le_bytes()) };
        assert_eq!(decode(w, 16), Err(WireError::Truncated(16)));
        let mut w = vec![0.0f64; 2];
        unsafe { std::slice::from_raw_parts_mut(w.as_mut_ptr() as *mut u8, 16)[..6].copy_from_slice(&[2, 0, 0, 0, 250, 250]) };
        assert!(matches!(decode(w, 16), Err(WireError::Header(_))));
    }
}
