//! A run as a Chrome trace-event file (`trace.json`), the format ui.perfetto.dev and
//! chrome://tracing open: where every millisecond of every rank went, and every message.
//!
//! - one process per rank, named by its role (master, worker k, server k, helper);
//! - on its `work` track the segments of the timeline plot (compute, extra delay, waiting,
//!   decode, all-reduce; PageRank's phases), each with its iteration in `args`, a decode with
//!   the results it used, its residual and condition number; segments that overlap (a worker
//!   still busy with an abandoned iteration) go to a second work track, never on top;
//! - on its `messages` track a short slice at every send and receive, and a flow arrow from
//!   each send to its receipt: the model down the tree, each result up, late results (a later
//!   round of a multi-round result, whose send time is not logged, has its receipt only); on
//!   its `marks` track instants for abandoned and failed results and dead workers;
//! - a counter track on rank 0 with the iteration number.
//!
//! Read from the typed rank logs, so a simulated run and an engine run give the same kind of
//! trace, and a killed run (no summary) still gives one.

use std::collections::{BTreeMap, HashMap};
use std::path::{Path, PathBuf};

use outrun_runlog::event::{Event, Iter, Late, Phases, Setup};
use serde_json::{json, Value};

use crate::segments::{iterations, pieces, Piece, Seg};
use crate::ReportError;

/// The work track of a rank (`WORK_OVERLAP + k` hold segments that would overlap it).
const WORK: usize = 0;
/// The messages track of a rank (`MESSAGES_OVERLAP + k` hold the ends that would overlap it).
const MESSAGES: usize = 1;
/// The marks track of a rank (abandoned and failed results, dead workers).
const MARKS: usize = 2;
const WORK_OVERLAP: usize = 100;
const MESSAGES_OVERLAP: usize = 200;
/// A message end's slice, µs: short, but a slice, which both viewers bind a flow to.
const END_US: f64 = 1.0;

/// What a trace holds (printed by `outrun trace`, checked by its tests).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct Counts {
    /// Ranks (processes).
    pub ranks: usize,
    /// Slices on work tracks.
    pub slices: usize,
    /// Flow arrows (messages with both ends known).
    pub flows: usize,
    /// Results accepted by parents.
    pub results: usize,
    /// Late messages a parent discarded.
    pub late: usize,
    /// Decodes (a parent's collection turned into its result).
    pub decodes: usize,
}

/// An inclusive range of iterations.
pub type Window = (u64, u64);

/// Parse `A..B` (inclusive) or `A`.
pub fn parse_window(s: &str) -> Result<Window, String> {
    let num = |v: &str| v.trim().parse::<u64>().map_err(|_| format!("`{s}` is not A..B (iteration numbers)"));
    let (a, b) = match s.split_once("..") {
        Some((a, b)) => (num(a)?, num(b.trim_start_matches('='))?),
        None => (num(s)?, num(s)?),
    };
    if a > b {
        return Err(format!("`{s}`: the first iteration comes after the last"));
    }
    Ok((a, b))
}

/// Write `dir/trace.json` for the iterations in `window` (all when None).
pub fn write(dir: &Path, window: Option<Window>) -> Result<(PathBuf, Counts), ReportError> {
    let events = outrun_runlog::read::rank_events(dir)?;
    if events.is_empty() {
        return Err(ReportError::Option(format!("{}: no rank logs (rank-<r>.jsonl) here", dir.display())));
    }
    if let Some((a, b)) = window {
        // a window past the run (or before it) would write an empty trace and say so only in
        // its counts
        let logged = events.values().flat_map(|e| iterations(e).map(|i| i.t));
        let (first, last) = logged.fold((u64::MAX, 0), |(lo, hi), t| (lo.min(t), hi.max(t)));
        if first > last {
            return Err(ReportError::Option(format!("{}: no iteration logged, so none in {a}..{b}", dir.display())));
        }
        if b < first || a > last {
            return Err(ReportError::Option(format!(
                "{}: --iterations {a}..{b}: the run logged iterations {first}..{last}",
                dir.display()
            )));
        }
    }
    let (trace_events, counts) = build(&events, window.unwrap_or((0, u64::MAX)));
    let name = dir.file_name().map_or(String::new(), |n| n.to_string_lossy().into_owned());
    let doc = json!({
        "traceEvents": trace_events,
        "displayTimeUnit": "ms",
        "otherData": { "run": name, "iterations": window.map(|(a, b)| format!("{a}..{b}")) },
    });
    let path = dir.join("trace.json");
    crate::write_whole(&path, |w| Ok(serde_json::to_writer(w, &doc)?))?;
    Ok((path, counts))
}

/// The trace events of a run's rank logs, and what they hold.
pub fn build(events: &HashMap<usize, Vec<Event>>, window: Window) -> (Vec<Value>, Counts) {
    let inside = |t: u64| (window.0..=window.1).contains(&t);
    let mut tr = Trace::default();
    let mut ranks: Vec<usize> = events.keys().copied().collect();
    ranks.sort_unstable();
    let records: HashMap<(usize, u64), &Iter> =
        ranks.iter().flat_map(|&r| iterations(&events[&r]).map(move |i| ((r, i.t), i))).collect();
    let setups: HashMap<usize, &Setup> = ranks
        .iter()
        .filter_map(|&r| events[&r].iter().find_map(|e| if let Event::Setup(s) = e { Some((r, s)) } else { None }))
        .collect();
    for &rank in &ranks {
        tr.process(rank, setups.get(&rank).copied());
        let evs = &events[&rank];
        tr.work(rank, evs, &inside);
        for i in iterations(evs).filter(|i| inside(i.t)) {
            tr.model_in(rank, i, setups.get(&rank).and_then(|s| s.parent), &records);
            tr.results_in(rank, i, &records);
        }
        for e in evs {
            if let Event::Late(l) = e {
                if inside(l.t) {
                    tr.late(rank, l, &records);
                }
            }
        }
    }
    tr.iteration_counter(events, &inside);
    tr.finish();
    tr.counts.ranks = ranks.len();
    (tr.out, tr.counts)
}

/// A rank's tracks of one kind: a slice goes on the first whose last slice has ended, a new
/// one (named) when none has.
struct Lanes {
    rank: usize,
    first: usize,
    overflow: usize,
    name: &'static str,
    ends: Vec<f64>,
}

impl Lanes {
    fn new(rank: usize, first: usize, overflow: usize, name: &'static str) -> Self {
        Lanes { rank, first, overflow, name, ends: Vec::new() }
    }

    /// The track of a slice from `ts` to `end` (µs; slices come in order of `ts`).
    fn place(&mut self, ts: f64, end: f64, out: &mut Vec<Value>) -> usize {
        let k = match self.ends.iter().position(|&e| e <= ts) {
            Some(k) => k,
            None => {
                self.ends.push(f64::MIN);
                let k = self.ends.len() - 1;
                if k > 0 {
                    let name = format!("{} (overlapping, {k})", self.name);
                    let tid = self.overflow + k;
                    out.push(json!({ "ph": "M", "name": "thread_name", "pid": self.rank, "tid": tid, "args": { "name": name } }));
                }
                k
            }
        };
        self.ends[k] = end;
        if k == 0 {
            self.first
        } else {
            self.overflow + k
        }
    }
}

/// Microseconds, the trace's unit.
fn us(x: f64) -> f64 {
    x * 1e6
}

/// A message end: its rank and its index in that rank's ends.
type EndRef = (usize, usize);

/// One end of a message on a rank's messages tracks.
struct End {
    ts: f64,
    name: String,
    args: Value,
}

#[derive(Default)]
struct Trace {
    out: Vec<Value>,
    counts: Counts,
    /// Message ends by rank (placed on tracks when the trace is finished).
    ends: HashMap<usize, Vec<End>>,
    /// Send ends already made: (rank, time's bits, name) → index in `ends`.
    sends: HashMap<(usize, u64, String), usize>,
    /// Flows: name, the send's end, the receipt's end.
    flows: Vec<(String, EndRef, EndRef)>,
}

impl Trace {
    /// A rank's process, named by its role, and its tracks.
    fn process(&mut self, rank: usize, setup: Option<&Setup>) {
        let role = match setup {
            Some(Setup { worker: Some(w), children, .. }) if children.as_ref().is_some_and(|c| !c.is_empty()) => {
                format!("worker {w} (parent)")
            }
            Some(Setup { worker: Some(w), .. }) => format!("worker {w}"),
            Some(Setup { server: Some(k), .. }) => format!("server {k}"),
            Some(Setup { parent: None, children: Some(c), .. }) if !c.is_empty() => "master".into(),
            _ => "helper".into(),
        };
        let meta = |name: &str, tid: Option<usize>, args: Value| {
            let mut m = json!({ "ph": "M", "name": name, "pid": rank, "args": args });
            if let Some(tid) = tid {
                m["tid"] = json!(tid);
            }
            m
        };
        self.out.push(meta("process_name", None, json!({ "name": format!("rank {rank}: {role}") })));
        self.out.push(meta("process_sort_index", None, json!({ "sort_index": rank })));
        self.out.push(meta("thread_name", Some(WORK), json!({ "name": "work" })));
        self.out.push(meta("thread_name", Some(MESSAGES), json!({ "name": "messages" })));
        self.out.push(meta("thread_name", Some(MARKS), json!({ "name": "marks" })));
    }

    /// A rank's segments and marks, work tracks assigned so that none overlap.
    fn work(&mut self, rank: usize, evs: &[Event], inside: &dyn Fn(u64) -> bool) {
        let mut segs: Vec<(String, Piece, Value)> = Vec::new();
        let mut marks = Vec::new();
        for i in iterations(evs).filter(|i| inside(i.t)) {
            let mut ps = Vec::new();
            pieces(rank, i, &mut ps, &mut marks);
            for p in ps {
                let args = args(i, &p);
                self.counts.decodes += usize::from(p.seg == Seg::Decode);
                segs.push((slice_name(&p), p, args));
            }
            for (_, at, what) in marks.drain(..) {
                self.out.push(json!({
                    "ph": "i", "s": "t", "name": what, "cat": "mark", "pid": rank, "tid": MARKS, "ts": us(at),
                    "args": { "iteration": i.t },
                }));
            }
        }
        for e in evs {
            if let Event::Iteration(ph) = e {
                if inside(ph.t) {
                    phases(rank, ph, &mut segs);
                }
            }
        }
        segs.sort_by(|a, b| a.1.x0.total_cmp(&b.1.x0).then(a.1.x1.total_cmp(&b.1.x1)));
        let mut lanes = Lanes::new(rank, WORK, WORK_OVERLAP, "work");
        for (name, p, args) in segs {
            let (ts, end) = (us(p.x0), us(p.x1));
            let tid = lanes.place(ts, end, &mut self.out);
            self.out.push(json!({
                "ph": "X", "name": name, "cat": "work", "pid": rank, "tid": tid,
                "ts": ts, "dur": end - ts, "args": args,
            }));
            self.counts.slices += 1;
        }
    }

    /// The model of `i` reaching `rank`, from its parent (the root's send, or a parent's own
    /// receipt: it forwards at once).
    fn model_in(&mut self, rank: usize, i: &Iter, parent: Option<usize>, records: &HashMap<(usize, u64), &Iter>) {
        let (Some(parent), Some(at)) = (parent, i.model) else { return };
        if i.status == Some(outrun_runlog::event::Status::Dead) {
            return;
        }
        let Some(from) = records.get(&(parent, i.t)).and_then(|p| p.sent.or(p.model)) else { return };
        let args = json!({ "iteration": i.t });
        self.flow("model", (parent, from), (rank, at), args);
    }

    /// The results a parent accepted in iteration `i`: an instant each, and a flow from the
    /// child's send when it is known (a result's first round).
    fn results_in(&mut self, rank: usize, i: &Iter, records: &HashMap<(usize, u64), &Iter>) {
        let Some(arrivals) = &i.collect.arrivals else { return };
        for a in arrivals {
            self.counts.results += 1;
            let args = json!({ "iteration": i.t, "child": a.rank, "round": a.round });
            let sent = records.get(&(a.rank, i.t)).and_then(|c| c.send).filter(|_| a.round == 0);
            match sent {
                Some(s) => self.flow("result", (a.rank, s), (rank, a.at), args),
                None => {
                    self.end(rank, format!("result in (round {})", a.round), a.at, args);
                }
            }
        }
    }

    /// A late message a parent discarded: an instant, with its flow from the child's send
    /// when that is known (a single-round result).
    fn late(&mut self, rank: usize, l: &Late, records: &HashMap<(usize, u64), &Iter>) {
        self.counts.late += 1;
        let name = format!("late {}", l.kind);
        let args = json!({ "iteration": l.t, "of_iteration": l.msg_t, "child": l.child });
        let child = records.get(&(l.child, l.msg_t)).filter(|c| c.rounds.unwrap_or(1) <= 1);
        match child.and_then(|c| c.send) {
            Some(s) => self.flow(&name, (l.child, s), (rank, l.at), args),
            None => {
                self.end(rank, format!("{name} in"), l.at, args);
            }
        }
    }

    /// A message: a short slice at each end on the messages tracks, joined by a flow arrow
    /// (one send slice serves every message sent at that moment, e.g. a model to all workers).
    fn flow(&mut self, name: &str, from: (usize, f64), to: (usize, f64), args: Value) {
        self.counts.flows += 1;
        let key = (from.0, from.1.to_bits(), format!("send {name}"));
        let send = match self.sends.get(&key) {
            Some(&k) => k,
            None => {
                let k = self.end(from.0, key.2.clone(), from.1, args.clone());
                self.sends.insert(key, k);
                k
            }
        };
        let recv = self.end(to.0, format!("{name} in"), to.1, args);
        self.flows.push((name.to_string(), (from.0, send), (to.0, recv)));
    }

    /// A message end on `rank`'s messages tracks; its index there.
    fn end(&mut self, rank: usize, name: String, at: f64, args: Value) -> usize {
        let ends = self.ends.entry(rank).or_default();
        ends.push(End { ts: us(at), name, args });
        ends.len() - 1
    }

    /// Place the message ends on tracks and write them, then the flows between them (a flow
    /// event has its end's category, track and time: both viewers bind them so).
    fn finish(&mut self) {
        let mut tids: HashMap<(usize, usize), usize> = HashMap::new();
        let mut ranks: Vec<usize> = self.ends.keys().copied().collect();
        ranks.sort_unstable();
        for rank in ranks {
            let ends = &self.ends[&rank];
            let mut order: Vec<usize> = (0..ends.len()).collect();
            order.sort_by(|&a, &b| ends[a].ts.total_cmp(&ends[b].ts));
            let mut lanes = Lanes::new(rank, MESSAGES, MESSAGES_OVERLAP, "messages");
            for k in order {
                let e = &ends[k];
                let tid = lanes.place(e.ts, e.ts + END_US, &mut self.out);
                tids.insert((rank, k), tid);
                self.out.push(json!({
                    "ph": "X", "name": e.name, "cat": "msg", "pid": rank, "tid": tid, "ts": e.ts, "dur": END_US,
                    "args": e.args,
                }));
            }
        }
        for (id, (name, from, to)) in self.flows.iter().enumerate() {
            for (ph, (rank, k)) in [("s", from), ("f", to)] {
                self.out.push(json!({
                    "ph": ph, "id": id, "name": name, "cat": "msg", "pid": rank, "tid": tids[&(*rank, *k)],
                    "ts": self.ends[rank][*k].ts, "bp": "e",
                }));
            }
        }
    }

    /// The iteration number on rank 0, from the earliest moment any rank began it.
    fn iteration_counter(&mut self, events: &HashMap<usize, Vec<Event>>, inside: &dyn Fn(u64) -> bool) {
        let mut begun: BTreeMap<u64, f64> = BTreeMap::new();
        for evs in events.values() {
            for e in evs {
                let (t, at) = match e {
                    Event::Iter(i) => (i.t, i.start.or(i.sent).or(i.model).or(i.compute.compute_start)),
                    Event::Iteration(p) => (p.t, Some(p.start())),
                    _ => continue,
                };
                if let (true, Some(at)) = (inside(t), at) {
                    let slot = begun.entry(t).or_insert(at);
                    *slot = slot.min(at);
                }
            }
        }
        for (t, at) in begun {
            self.out
                .push(json!({ "ph": "C", "name": "iteration", "pid": 0, "ts": us(at), "args": { "iteration": t } }));
        }
    }
}

/// A segment's name in the trace.
fn slice_name(p: &Piece) -> String {
    let name = match p.seg {
        Seg::Compute => "compute",
        Seg::Injected if p.straggler => "extra delay (straggler)",
        Seg::Injected => "extra delay",
        Seg::Waiting => "waiting",
        Seg::Screen => "screen",
        Seg::Decode => "decode",
        Seg::Reduce => "all-reduce",
    };
    name.to_string()
}

/// A segment's `args`: its iteration, and for a decode what it decoded from and how well.
fn args(i: &Iter, p: &Piece) -> Value {
    let mut a = json!({ "iteration": i.t, "what": p.seg.name() });
    if let Some(w) = i.worker {
        a["worker"] = json!(w);
    }
    if p.seg == Seg::Decode {
        let c = &i.collect;
        a["used"] = json!(c.used);
        a["arrivals"] = json!(c.arrivals.as_ref().map(Vec::len));
        a["residual"] = json!(c.residual);
        a["cond"] = json!(c.cond);
        a["rounds_used"] = json!(c.rounds_used);
        a["exact"] = json!(c.exact);
        a["decode_s"] = json!(c.decode_s);
    }
    if p.seg == Seg::Injected {
        a["straggler"] = json!(p.straggler);
    }
    if p.seg == Seg::Screen {
        let c = &i.collect;
        a["rejected"] = json!(c.rejected);
        a["syndrome"] = json!(i.notes.syndrome);
        a["screen_s"] = json!(c.screen_s);
    }
    a
}

/// PageRank's phases, in order, ending when the server logged them.
/// A server's phases as segments, named by phase.
fn phases(rank: usize, p: &Phases, out: &mut Vec<(String, Piece, Value)>) {
    const NAMES: [&str; 6] = ["map", "encode", "shuffle", "decode", "reduce", "redistribute"];
    let times = p.times();
    let mut at = p.start();
    for (name, d) in NAMES.iter().zip(times) {
        if d > 0.0 {
            let piece = Piece { rank, x0: at, x1: at + d, seg: Seg::Compute, straggler: false };
            out.push((name.to_string(), piece, json!({ "iteration": p.t, "phase": name })));
        }
        at += d;
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn windows_are_inclusive_and_checked() {
        assert_eq!(parse_window("2..5"), Ok((2, 5)));
        assert_eq!(parse_window("2..=5"), Ok((2, 5)));
        assert_eq!(parse_window("7"), Ok((7, 7)));
        assert!(parse_window("5..2").is_err());
        assert!(parse_window("a..b").is_err());
    }

    #[test]
    fn a_slice_that_would_overlap_goes_to_a_named_track_of_its_own() {
        let mut out = Vec::new();
        let mut lanes = Lanes::new(3, WORK, WORK_OVERLAP, "work");
        assert_eq!(lanes.place(0.0, 10.0, &mut out), WORK);
        assert_eq!(lanes.place(5.0, 12.0, &mut out), WORK_OVERLAP + 1);
        assert_eq!(lanes.place(10.0, 11.0, &mut out), WORK, "the first track is free again at 10");
        assert_eq!(out.len(), 1);
        assert_eq!(out[0]["args"]["name"], "work (overlapping, 1)");
        assert_eq!(out[0]["pid"], 3);
    }
}
