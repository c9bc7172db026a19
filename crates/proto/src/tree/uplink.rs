//! A child's side of a collect-tree node: what it sends its parent. Results go up eagerly, one
//! round at a time for multi-round encoders (the next when the previous has left), or, with
//! uploads by grant, after a ready notice, when the parent grants them. Every up message is
//! counted: the goodbye tells the parent how many to expect.

use std::collections::VecDeque;
use std::sync::Arc;

use crate::roles::Vector;

use crate::machine::Output;
use crate::wire::{Header, Kind, Msg};

/// A child's link to its parent.
pub(super) struct Uplink<P> {
    parent: usize,
    /// Uploads by grant (`engine.upload = "granted"`).
    pub(super) granted: bool,
    /// Rounds of the current iteration not yet sent.
    rounds: VecDeque<(u32, P)>,
    /// Rounds of the current iteration sent.
    pub(super) rounds_sent: u32,
    /// Up messages sent over the run.
    pub(super) sent: u64,
    /// Bytes sent over the run, and when the current iteration began.
    bytes: u64,
    iteration_start: u64,
    /// The iteration whose result the parent refused before this node announced it.
    pub(super) refused: Option<u64>,
    /// An assignment that came with a model: (iteration, scheme-defined bytes).
    assignment: Option<(u64, Vec<u8>)>,
}

impl<P: Vector> Uplink<P> {
    /// The link to `parent`.
    pub(super) fn new(parent: usize, granted: bool) -> Self {
        Uplink {
            parent,
            granted,
            rounds: VecDeque::new(),
            rounds_sent: 0,
            sent: 0,
            bytes: 0,
            iteration_start: 0,
            refused: None,
            assignment: None,
        }
    }

    /// The parent's rank.
    pub(super) fn parent(&self) -> usize {
        self.parent
    }

    /// Send `head` (and `body`) up, counted; `track`: ask the driver when it has left.
    pub(super) fn send(
        &mut self,
        head: Header,
        body: Option<Arc<P>>,
        track: Option<u64>,
        out: &mut VecDeque<Output<P>>,
    ) {
        self.sent += 1;
        let msg = Msg { head, body };
        self.bytes += msg.frame_bytes() as u64;
        out.push_back(Output::Send { to: vec![self.parent], msg, track });
    }

    /// A new iteration: nothing of the previous one is left to send.
    pub(super) fn begin(&mut self) {
        self.rounds.clear();
        self.rounds_sent = 0;
        self.iteration_start = self.bytes;
    }

    /// Bytes sent up during the current iteration.
    pub(super) fn iteration_bytes(&self) -> u64 {
        self.bytes - self.iteration_start
    }

    /// Keep the assignment for iteration `t` that came before its model.
    pub(super) fn assigned(&mut self, t: u64, assignment: Vec<u8>) {
        self.assignment = Some((t, assignment));
    }

    /// The assignment for iteration `t`, if one came.
    pub(super) fn assignment(&mut self, t: u64) -> Option<Vec<u8>> {
        self.assignment.take().filter(|(at, _)| *at == t).map(|(_, a)| a)
    }

    /// The result of the current iteration, in rounds (not yet sent).
    pub(super) fn hold(&mut self, rounds: Vec<P>) {
        self.rounds = rounds.into_iter().enumerate().map(|(r, b)| (r as u32, b)).collect();
    }

    /// Whether rounds of the current iteration are left to send.
    pub(super) fn holding(&self) -> bool {
        !self.rounds.is_empty()
    }

    /// Number of rounds held.
    pub(super) fn held(&self) -> u32 {
        self.rounds.len() as u32
    }

    /// Drop what is held (a newer model or the stop came, or the parent needs nothing).
    pub(super) fn drop_rounds(&mut self) {
        self.rounds.clear();
    }

    /// Send the next held round of iteration `t` (tracked when more remain, so the driver says
    /// when it has left); false when none is held.
    pub(super) fn next_round(&mut self, t: u64, out: &mut VecDeque<Output<P>>) -> bool {
        let Some((r, body)) = self.rounds.pop_front() else { return false };
        let track = (!self.rounds.is_empty()).then_some(t.wrapping_mul(1 << 16) + r as u64);
        self.rounds_sent += 1;
        self.send(Header { round: r, ..Header::new(Kind::Result, t) }, Some(Arc::new(body)), track, out);
        true
    }

    /// The parent granted round `round` of the result of `t`: upload it; false when this
    /// node does not hold it.
    pub(super) fn granted_round(&mut self, t: u64, round: u32, out: &mut VecDeque<Output<P>>) -> bool {
        let Some(pos) = self.rounds.iter().position(|(r, _)| *r == round) else { return false };
        let (r, body) = self.rounds.remove(pos).expect("found");
        self.rounds_sent += 1;
        self.send(Header { round: r, ..Header::new(Kind::Result, t) }, Some(Arc::new(body)), None, out);
        true
    }
}
