//! Wire protocol: tags and message headers.
//!
//! | message | tag | payload (f64) |
//! |---|---|---|
//! | model down (parent → child) | `DOWN` | `[kind, t, θ…]`, kind ∈ {MODEL, STOP, ABORT} |
//! | result up (child → parent) | `UP_BASE + (t mod 2¹⁴)` | `[kind, t, g…, loss]`, kind ∈ {GRADIENT, ABANDONED, FAILED} |
//! | goodbye (child → parent) | `BYE` | `[BYE, number of up messages sent]` |
//! | clock sync | `CLOCK` | `[time]` |
//! | ring segment | `RING` | segment values |
//!
//! Downward messages from one parent share one tag, so MPI's non-overtaking rule delivers them
//! in order. Upward results carry the iteration both in the tag and in the header (tags wrap);
//! the header is authoritative. A node sends exactly one up message per model it acted on, and
//! its BYE carries that count, so the parent drains exactly what was sent before shutting down.

pub const DOWN: i32 = 1;
pub const BYE: i32 = 2;
pub const CLOCK: i32 = 3;
pub const DATA: i32 = 4;
pub const RING: i32 = 5;
pub const UP_BASE: i32 = 1024;
pub const UP_WRAP: u64 = 1 << 14;

/// Tag of an upward result for iteration `t`.
pub fn up_tag(t: u64) -> i32 {
    UP_BASE + (t % UP_WRAP) as i32
}

pub fn is_up_tag(tag: i32) -> bool {
    (UP_BASE..UP_BASE + UP_WRAP as i32).contains(&tag)
}

/// Kinds of messages (first header word).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Kind {
    Model = 1,
    Stop = 2,
    Abort = 3,
    Gradient = 10,
    /// The sender gave up on this iteration because a newer model (or stop) had arrived.
    Abandoned = 11,
    /// The sender's subtree could not produce its result within the deadline.
    Failed = 12,
    Bye = 20,
}

impl Kind {
    pub fn from_f64(v: f64) -> Option<Kind> {
        Some(match v as i64 {
            1 => Kind::Model,
            2 => Kind::Stop,
            3 => Kind::Abort,
            10 => Kind::Gradient,
            11 => Kind::Abandoned,
            12 => Kind::Failed,
            20 => Kind::Bye,
            _ => return None,
        })
    }

    pub fn name(self) -> &'static str {
        match self {
            Kind::Model => "model",
            Kind::Stop => "stop",
            Kind::Abort => "abort",
            Kind::Gradient => "gradient",
            Kind::Abandoned => "abandoned",
            Kind::Failed => "failed",
            Kind::Bye => "bye",
        }
    }
}

/// Number of header words.
pub const HEADER: usize = 2;

/// A message with header `[kind, t]` followed by `body`.
pub fn with_header(kind: Kind, t: u64, body: &[f64]) -> Vec<f64> {
    let mut v = Vec::with_capacity(HEADER + body.len());
    v.push(kind as i64 as f64);
    v.push(t as f64);
    v.extend_from_slice(body);
    v
}

/// A zeroed message of `body_len` values with room for the header, header set: fill the body
/// in place (`msg[HEADER..]`) and send it without copying.
pub fn message(kind: Kind, t: u64, body_len: usize) -> Vec<f64> {
    let mut v = vec![0.0; HEADER + body_len];
    set_header(&mut v, kind, t);
    v
}

/// Overwrite the header of a message built by [`message`].
pub fn set_header(msg: &mut [f64], kind: Kind, t: u64) {
    msg[0] = kind as i64 as f64;
    msg[1] = t as f64;
}

/// `(kind, t)` of a message, if its header is well-formed.
pub fn header(data: &[f64]) -> Option<(Kind, u64)> {
    if data.len() < HEADER {
        return None;
    }
    Some((Kind::from_f64(data[0])?, data[1] as u64))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn headers_and_tags_round_trip() {
        let m = with_header(Kind::Gradient, 123_456, &[1.5, 2.5]);
        assert_eq!(header(&m), Some((Kind::Gradient, 123_456)));
        assert_eq!(&m[HEADER..], &[1.5, 2.5]);
        assert!(is_up_tag(up_tag(0)) && is_up_tag(up_tag(u64::MAX)));
        assert_eq!(up_tag(UP_WRAP + 3), up_tag(3));
        assert!(!is_up_tag(DOWN) && !is_up_tag(BYE));
        assert_eq!(header(&[99.0, 1.0]), None);
    }
}
