//! What a rank did, as time segments: read once from an iteration record, drawn by the
//! timeline plot and written by the trace, so the two always agree.

use outrun_runlog::event::{Event, Iter, Status};

/// What a rank was doing.
#[derive(Clone, Copy, Debug, PartialEq)]
pub(crate) enum Seg {
    Compute,
    Injected,
    Waiting,
    Screen,
    Decode,
    Reduce,
}

impl Seg {
    /// The legend's (and the trace's) name.
    pub(crate) fn name(self) -> &'static str {
        match self {
            Seg::Compute => "compute (base time)",
            Seg::Injected => "extra delay (modelled tail or straggler)",
            Seg::Waiting => "waiting for children",
            Seg::Screen => "screening for corrupted results",
            Seg::Decode => "decode + own gradient",
            Seg::Reduce => "all-reduce",
        }
    }
}

/// One segment of one rank, in seconds on rank 0's clock.
#[derive(Clone, Debug)]
pub(crate) struct Piece {
    pub(crate) rank: usize,
    pub(crate) x0: f64,
    pub(crate) x1: f64,
    pub(crate) seg: Seg,
    /// The straggler model slowed this rank in this iteration.
    pub(crate) straggler: bool,
}

/// A moment worth a mark: a dead worker's model, an abandoned or failed result.
pub(crate) type Mark = (usize, f64, &'static str);

/// What one iteration record of one rank contributes: its segments (a decode even when it took
/// no measurable time, so that every decode is seen) and its marks.
pub(crate) fn pieces(rank: usize, e: &Iter, out: &mut Vec<Piece>, marks: &mut Vec<Mark>) {
    let c = &e.compute;
    let straggler = c.straggler.unwrap_or(false);
    let mut push = |x0: f64, x1: f64, seg: Seg, st: bool| {
        if x1 > x0 || (seg == Seg::Decode && x1 == x0) {
            out.push(Piece { rank, x0, x1, seg, straggler: st });
        }
    };
    let dec = e.collect.decode_s.unwrap_or(0.0);
    // robust decoding screens just before it decodes (earlier screenings that asked for more
    // results are counted in, so this is an upper bound on the last one)
    let scr = e.collect.screen_s.unwrap_or(0.0);
    if let (Some(sent), Some(end)) = (e.sent, e.collect.end) {
        // the master of a tree
        push(sent, end - dec - scr, Seg::Waiting, false);
        push(end - dec - scr, end - dec, Seg::Screen, false);
        push(end - dec, end, Seg::Decode, false);
        return;
    }
    if e.status == Some(Status::Dead) {
        if let Some(m) = e.model {
            marks.push((rank, m, "dead"));
        }
        return;
    }
    let (Some(cs), Some(ce), Some(target)) = (c.compute_start, c.compute_end, c.target) else { return };
    let injected = c.injected.unwrap_or(0.0);
    let base_end = cs + (target - injected).max(ce - cs);
    let ready = e.ready.or(e.send).unwrap_or(base_end);
    push(cs, base_end.min(ready), Seg::Compute, false);
    push(base_end, ready, Seg::Injected, straggler);
    if let Some(red) = e.reduced {
        push(ready, red, Seg::Reduce, false);
    } else if let Some(send) = e.send {
        match (&e.collect.arrivals, e.status) {
            // a parent that gave up the iteration waited, and decoded nothing
            (Some(_), Some(Status::Abandoned)) => push(ready, send, Seg::Waiting, false),
            (Some(_), _) => {
                push(ready, send - dec - scr, Seg::Waiting, false);
                push(send - dec - scr, send - dec, Seg::Screen, false);
                push(send - dec, send, Seg::Decode, false);
            }
            (None, _) => {}
        }
        match e.status {
            Some(Status::Abandoned) => marks.push((rank, send, "abandoned")),
            Some(Status::Failed) => marks.push((rank, send, "failed")),
            _ => {}
        }
    }
}

/// The iteration records of `evs` (a rank's log).
pub(crate) fn iterations(evs: &[Event]) -> impl Iterator<Item = &Iter> {
    evs.iter().filter_map(|e| if let Event::Iter(i) = e { Some(&**i) } else { None })
}
