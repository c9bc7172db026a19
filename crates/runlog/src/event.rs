//! The records of `rank-<r>.jsonl`: one type per kind, tagged by `ev`, written by both drivers
//! (the node machines produce them) and read back by the report. A field's name lives here and
//! nowhere else; `docs/logs.md` describes each.
//!
//! Optional fields are left out of a line when absent (a worker's iteration has no decode, a
//! master's no compute time), so every line carries what its node knows. Lines of older runs
//! read the same (their fields are a subset); a line that does not parse is skipped by
//! [`crate::read::rank_events`]. Values are read as their types (a rank is a non-negative
//! integer), never cast from floats.
#![deny(clippy::cast_possible_truncation, clippy::cast_possible_wrap, clippy::cast_sign_loss)]

use serde::{Deserialize, Serialize};

/// One line of a rank's log.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(tag = "ev", rename_all = "kebab-case")]
pub enum Event {
    /// Who the rank is, before the timed loop.
    Setup(Setup),
    /// One iteration at one node of a collect tree or a ring.
    Iter(Box<Iter>),
    /// One iteration of a shuffle-pattern server, phase by phase.
    Iteration(Phases),
    /// A message that arrived for an earlier iteration, or beyond what the rule needed,
    /// discarded.
    Late(Late),
    /// A parent gave up on granted uploads and granted refused children instead.
    Regrant(Regrant),
    /// A child uploads a result after its refusal (a re-grant).
    Regranted(Regranted),
    /// A multi-round sender stopped sending an iteration's rounds (a newer model came).
    RoundsStopped(RoundsStopped),
    /// The node finished, with its counts over the run.
    Shutdown(Shutdown),
    /// The node detected a failure.
    Error(Message),
    /// Something unexpected the run survived.
    Warn(Message),
}

impl Event {
    /// An iteration record.
    pub fn iter(record: Iter) -> Self {
        Event::Iter(Box::new(record))
    }

    /// A warning at `at`.
    pub fn warn(at: f64, message: impl Into<String>) -> Self {
        Event::Warn(Message { at, message: message.into() })
    }

    /// An error at `at`.
    pub fn error(at: f64, message: impl Into<String>) -> Self {
        Event::Error(Message { at, message: message.into() })
    }
}

/// A rank's identity and start-up (engine: every rank; simulator: `host` = "simulated").
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
pub struct Setup {
    /// MPI rank.
    pub rank: usize,
    /// Worker id (absent for a master).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub worker: Option<usize>,
    /// Server id (the shuffle pattern).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub server: Option<usize>,
    /// Host name.
    pub host: String,
    /// Process id.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub pid: Option<u32>,
    /// This rank's clock minus the master's, seconds.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub clock_offset: Option<f64>,
    /// Round trip of the best clock-sync sample, seconds.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub clock_rtt: Option<f64>,
    /// Points the rank computes on.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub load: Option<usize>,
    /// Parent rank.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub parent: Option<usize>,
    /// Children ranks.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub children: Option<Vec<usize>>,
    /// Ranks on this host.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub local_ranks: Option<usize>,
    /// Cores this host's ranks may run on between them (the union of their CPU affinity masks).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub cores: Option<usize>,
    /// The host runs more ranks than cores: computations yield the core every 64 rows.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub paced: Option<bool>,
    /// How the rank waits between polls (`engine.idle` resolved for its host: spin, yield or
    /// sleep).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub idle: Option<String>,
    /// Seconds the rank spent before the loop exchanging a first message with each rank its loop
    /// talks to (and, under `MPI_Allreduce`, one all-reduce): the first contacts' cost, kept
    /// out of the first iteration.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub contact_s: Option<f64>,
    /// Ranks whose first message did not come within `run.deadline` (the loop waited for them
    /// as for any straggler).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub unanswered: Vec<usize>,
    /// Vertices the server Maps (shuffle).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub mapped: Option<usize>,
    /// Vertices the server Reduces (shuffle).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub reduced: Option<usize>,
    /// Multicast groups the server is in (shuffle).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub groups: Option<usize>,
    /// Seconds the server spent creating its groups' communicators (the coded Shuffle's
    /// broadcasts; none point to point).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub groups_s: Option<f64>,
    /// When (the run's clock).
    pub at: f64,
}

/// How a node's iteration ended.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum Status {
    /// Its result went up.
    Sent,
    /// A newer model (or the stop) came first; `ready` is then the abandonment time.
    Abandoned,
    /// Its subtree could not decode.
    Failed,
    /// Fail-stop: the worker is dead.
    Dead,
    /// Announced (uploads by grant), no answer before the next model.
    Ready,
    /// Its parent did not need the result (uploads by grant).
    Refused,
}

/// A computation's timing (the drivers' compute-time decision).
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
pub struct ComputeTiming {
    /// When the computation started.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub compute_start: Option<f64>,
    /// When the real work ended.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub compute_end: Option<f64>,
    /// The modelled or injected compute time, seconds.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub target: Option<f64>,
    /// The part of `target` beyond the base time.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub injected: Option<f64>,
    /// The straggler model made the worker slow this iteration.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub straggler: Option<bool>,
    /// The real work took longer than its modelled time.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub overrun: Option<bool>,
    /// The load the straggler model scaled by (points, in units of a full-batch linear model's
    /// point: `outrun fit` divides compute times by it).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub load: Option<f64>,
    /// The value fault injected into this result (`[faults] kind`), if any.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub fault: Option<String>,
}

/// One accepted result at a parent: the child's rank, when it arrived, and its round (0 is
/// written as `[rank, at]`, a later round as `[rank, at, round]`).
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct Arrival {
    /// The child's rank.
    pub rank: usize,
    /// When it arrived.
    pub at: f64,
    /// Its round.
    pub round: u32,
}

impl Serialize for Arrival {
    fn serialize<S: serde::Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        if self.round == 0 {
            (self.rank, self.at).serialize(s)
        } else {
            (self.rank, self.at, self.round).serialize(s)
        }
    }
}

impl<'de> Deserialize<'de> for Arrival {
    fn deserialize<D: serde::Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        #[derive(Deserialize)]
        #[serde(untagged)]
        enum Raw {
            First(usize, f64),
            Later(usize, f64, u32),
        }
        Ok(match Raw::deserialize(d)? {
            Raw::First(rank, at) => Arrival { rank, at, round: 0 },
            Raw::Later(rank, at, round) => Arrival { rank, at, round },
        })
    }
}

/// A parent's collection of one iteration: what arrived, what it decoded from, how well.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
pub struct Collect {
    /// Results accepted, in arrival order.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub arrivals: Option<Vec<Arrival>>,
    /// Children whose results were used.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub used: Option<Vec<usize>>,
    /// Children whose messages of this iteration were lost on a failing link (`[links]`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub lost: Option<Vec<usize>>,
    /// Children whose results were received and rejected as corrupted (robust decoding).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub rejected: Option<Vec<usize>>,
    /// Decode residual.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub residual: Option<f64>,
    /// Worst condition number of the systems solved.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub cond: Option<f64>,
    /// Rounds the decode needed (adaptive codes).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub rounds_used: Option<usize>,
    /// Rounds used per worker: `[worker, rounds]`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub uses: Option<Vec<(usize, usize)>>,
    /// Frames received from the children for this iteration while collecting it.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub recv_bytes: Option<u64>,
    /// The result frames among them.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub result_bytes: Option<u64>,
    /// Ready notices received (uploads by grant).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub notices: Option<u32>,
    /// Uploads granted (rounds, for adaptive codes).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub grants: Option<u32>,
    /// Children told their result is not needed.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub refusals: Option<u32>,
    /// Seconds robust decoding spent screening the results' values (`scheme.byzantine`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub screen_s: Option<f64>,
    /// Seconds of decoding (the solve or peeling, apart from the waiting).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub decode_s: Option<f64>,
    /// The root's result is exact.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub exact: Option<bool>,
    /// When the root delivered.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub end: Option<f64>,
}

/// What a scheme's decode adds to the record: clustered schemes' partition and responders,
/// a coded mat-vec's rows.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
pub struct Notes {
    /// The partition: each cluster's workers (1-based, ascending).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub clusters: Option<Vec<Vec<usize>>>,
    /// Per cluster, the workers whose results were decoded.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub responders: Option<Vec<Vec<usize>>>,
    /// The workers the straggler process made slow this iteration.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub slow: Option<Vec<usize>>,
    /// The straggler states GC-DC clustered with.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub believed: Option<Vec<usize>>,
    /// Per worker, `[cluster, position]` (1-based).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub positions: Option<Vec<(usize, usize)>>,
    /// Algorithm 1's phase II single swaps.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub swaps: Option<usize>,
    /// Placements by the augmenting-path fallback.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub fallbacks: Option<usize>,
    /// Coded rows gathered for a mat-vec decode.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub rows: Option<usize>,
    /// Why a mat-vec decode failed.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub decode_error: Option<String>,
    /// Robust decoding (`scheme.byzantine`): the relative syndrome of every result received,
    /// and of those kept (≤ 1e-7: consistent); the rejected ones are the record's `rejected`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub syndrome: Option<(f64, f64)>,
    /// DiverseFL: each upload's `[rank, C₁, C₂]` against its guiding update (sign(Δ̃ᵀz),
    /// ‖z‖/‖Δ̃‖), in arrival order; FLTrust: `[rank, cos, 0]`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub similarity: Option<Vec<(usize, f64, f64)>>,
    /// Hierarchical aggregation: the iteration's failure table and loads.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub hier: Option<HierNote>,
}

/// A hierarchical iteration at the master: which links failed and what crossed them. Loads are
/// values over the padded payload k·⌈len/k⌉ (the chapter's normalisation by p).
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
pub struct HierNote {
    /// Per client (index = client − 1), its failed helpers (helper h is rank h).
    pub failed: Vec<Vec<usize>>,
    /// C_EH: values each client sent the helpers.
    pub c_eh: f64,
    /// C_HM: values the helpers uploaded to the master, measured from the uploads received.
    pub c_hm: f64,
    /// Sums uploaded (each ⌈len/k⌉ values).
    pub sums: usize,
    /// Bytes of the uploads (frames).
    pub upload_bytes: u64,
    /// Bytes of the control messages: the helpers' reports and the master's instructions.
    pub control_bytes: u64,
}

/// One iteration at one node: the root's start, a worker's model, compute and upload, a
/// parent's collection, a ring rank's reduction; each node writes the fields it knows.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
pub struct Iter {
    /// Iteration.
    pub t: u64,
    /// Worker id (absent at a master).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub worker: Option<usize>,
    /// When the root (or a ring rank) started the iteration.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub start: Option<f64>,
    /// When the root sent the model.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub sent: Option<f64>,
    /// When the model arrived.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub model: Option<f64>,
    /// The model's send→receive time.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub latency: Option<f64>,
    /// What the worker was assigned (GC-DC: `[cluster, position]`, 1-based).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub assigned: Option<(usize, usize)>,
    /// The computation's timing.
    #[serde(flatten)]
    pub compute: ComputeTiming,
    /// When the node's result was ready to go up (the modelled finish time).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub ready: Option<f64>,
    /// When it went up.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub send: Option<f64>,
    /// How the iteration ended for this node.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub status: Option<Status>,
    /// When the parent's refusal came (uploads by grant).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub refused: Option<f64>,
    /// Frames (rounds) the node uploaded.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub rounds: Option<u32>,
    /// Bytes the node uploaded, headers included.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub up_bytes: Option<u64>,
    /// A parent's collection.
    #[serde(flatten)]
    pub collect: Collect,
    /// What the scheme's decode adds.
    #[serde(flatten)]
    pub notes: Notes,
    /// When a ring rank's all-reduce completed.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub reduced: Option<f64>,
}

/// One iteration of a shuffle-pattern server: each phase's seconds and the bytes it moved.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
pub struct Phases {
    /// Iteration.
    pub t: u64,
    /// When it ended.
    pub end: f64,
    /// Seconds of the Map.
    pub map_s: f64,
    /// Seconds of encoding.
    pub encode_s: f64,
    /// Seconds of the Shuffle.
    pub shuffle_s: f64,
    /// Of the Shuffle's seconds, those in the barriers before its turns (`scheme.shuffle =
    /// "turns"`; 0 with every transfer at once, and in logs from before it was recorded).
    #[serde(default)]
    pub barrier_s: f64,
    /// Seconds of decoding.
    pub decode_s: f64,
    /// Seconds of the Reduce.
    pub reduce_s: f64,
    /// Seconds of the all-gather of the new values.
    pub redistribute_s: f64,
    /// Values the Map produced.
    pub values_mapped: usize,
    /// Payload bytes sent, a multicast once.
    pub l_bytes: u64,
    /// Payload bytes times receivers.
    pub wire_bytes: u64,
    /// Payload bytes received.
    pub recv_bytes: u64,
    /// Bytes of the all-gather received.
    pub redistribute_bytes: usize,
    /// ‖x_t − x_{t−1}‖₁.
    pub change_l1: f64,
    /// Per other server s, when (this server's clock, synchronised) the last of the Shuffle's
    /// messages to this server that did not pass through s arrived: point to point, one from a
    /// sender other than s; a coded broadcast, one of a group without s (a member's broadcast
    /// may wait on any member). Absent for an s every message passed through, and in logs from
    /// before it was recorded.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub last_without: Option<Vec<Arrival>>,
    /// Of `map_s`, the seconds `[stragglers]` added after the Map (the server slept them);
    /// absent without a straggler model.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub injected_s: Option<f64>,
}

impl Phases {
    /// Each phase's seconds, in the order the server ran them (`phases.csv`'s).
    pub fn times(&self) -> [f64; 6] {
        [self.map_s, self.encode_s, self.shuffle_s, self.decode_s, self.reduce_s, self.redistribute_s]
    }

    /// When the iteration started: its phases follow each other up to `end`.
    pub fn start(&self) -> f64 {
        self.end - self.times().iter().sum::<f64>()
    }
}

/// A discarded message.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct Late {
    /// The iteration being collected.
    pub t: u64,
    /// The sender.
    pub child: usize,
    /// The message's iteration.
    pub msg_t: u64,
    /// Its kind.
    pub kind: String,
    /// When.
    pub at: f64,
}

/// A re-grant at a parent.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct Regrant {
    /// Iteration.
    pub t: u64,
    /// When.
    pub at: f64,
    /// Children given up on.
    pub gave_up: Vec<usize>,
    /// Refused children granted instead.
    pub granted: Vec<usize>,
}

/// An upload after a refusal.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct Regranted {
    /// Iteration.
    pub t: u64,
    /// The round uploaded.
    pub round: u32,
    /// When.
    pub at: f64,
}

/// Rounds left unsent.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct RoundsStopped {
    /// Iteration.
    pub t: u64,
    /// Rounds sent before.
    pub sent: u32,
    /// When.
    pub at: f64,
}

/// How a node finished.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum Ending {
    /// The run ended normally.
    Stop,
    /// The run failed.
    Abort,
}

/// Uploads by grant over the run, at a parent.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct UploadCounts {
    /// Ready notices received.
    pub notices: u64,
    /// Uploads granted.
    pub grants: u64,
    /// Refusals sent.
    pub refusals: u64,
    /// Children granted at a re-grant.
    pub regrants: u64,
}

/// What a rank's transport moved (None when the traffic was inside the MPI library, as with
/// `MPI_Allreduce`, or not counted).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct Traffic {
    /// Messages sent.
    #[serde(default)]
    pub sent_msgs: Option<u64>,
    /// Bytes sent.
    #[serde(default)]
    pub sent_bytes: Option<u64>,
    /// Messages received.
    #[serde(default)]
    pub recv_msgs: Option<u64>,
    /// Bytes received.
    #[serde(default)]
    pub recv_bytes: Option<u64>,
}

/// A node's last record.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
pub struct Shutdown {
    /// Stop or abort.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub kind: Option<Ending>,
    /// When.
    pub at: f64,
    /// Late messages received and discarded.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub late_discarded: Option<u64>,
    /// Up messages sent.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub up_sent: Option<u64>,
    /// Every child said goodbye with every message accounted for.
    pub clean: bool,
    /// Frames received from the children (a parent).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub children_bytes: Option<u64>,
    /// Result frames discarded as late (a parent).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub late_result_bytes: Option<u64>,
    /// Uploads by grant over the run (a parent).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub upload: Option<UploadCounts>,
    /// What the transport moved (the driver adds it).
    #[serde(flatten)]
    pub traffic: Traffic,
}

/// An error or a warning.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct Message {
    /// When.
    pub at: f64,
    /// What.
    pub message: String,
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The records read back as written, and lines of the format before the types (a worker's
    /// iteration, a master's with arrivals of several rounds, an all-reduce's shutdown with its
    /// counters null) read as their types.
    #[test]
    fn records_round_trip_and_old_lines_read() {
        let worker = r#"{"ev":"iter","t":3,"worker":2,"model":1.5,"latency":0.001,"compute_start":1.5,"compute_end":1.6,"target":0.2,"injected":0.1,"straggler":true,"overrun":false,"ready":1.7,"send":1.7,"status":"sent","rounds":1,"up_bytes":72}"#;
        let Event::Iter(w) = serde_json::from_str(worker).unwrap() else { panic!("an iteration") };
        assert_eq!(
            (w.t, w.worker, w.status, w.compute.straggler, w.up_bytes),
            (3, Some(2), Some(Status::Sent), Some(true), Some(72))
        );
        let again: Event = serde_json::from_str(&serde_json::to_string(&Event::Iter(w.clone())).unwrap()).unwrap();
        assert_eq!(again, Event::Iter(w));

        let master = r#"{"ev":"iter","t":0,"start":0.0,"sent":0.0,"arrivals":[[1,0.5],[2,0.6,1]],"used":[1,2],"residual":0.0,"decode_s":0.001,"exact":true,"end":0.7,"clusters":[[1,2]],"rows":40}"#;
        let Event::Iter(m) = serde_json::from_str(master).unwrap() else { panic!("an iteration") };
        let arrivals = m.collect.arrivals.clone().unwrap();
        assert_eq!(arrivals[1], Arrival { rank: 2, at: 0.6, round: 1 });
        assert_eq!((m.notes.clusters.clone(), m.notes.rows), (Some(vec![vec![1, 2]]), Some(40)));
        let line = serde_json::to_string(&Event::Iter(m)).unwrap();
        assert!(line.contains(r#""arrivals":[[1,0.5],[2,0.6,1]]"#), "{line}");

        let shutdown = r#"{"ev":"shutdown","kind":"stop","at":9.0,"late_discarded":0,"up_sent":0,"clean":true,"sent_msgs":null,"sent_bytes":null,"recv_msgs":null,"recv_bytes":null}"#;
        let Event::Shutdown(s) = serde_json::from_str(shutdown).unwrap() else { panic!("a shutdown") };
        assert_eq!((s.kind, s.traffic.sent_bytes), (Some(Ending::Stop), None));
        let line = serde_json::to_string(&Event::Shutdown(s)).unwrap();
        assert!(line.contains(r#""sent_bytes":null"#), "not measured is written as null: {line}");
        let warn: Event = serde_json::from_str(r#"{"ev":"warn","at":1.0,"message":"x"}"#).unwrap();
        let bad = r#"{"ev":"iter","t":0,"arrivals":[[-1,0.5]]}"#;
        assert!(serde_json::from_str::<Event>(bad).is_err(), "a rank is a non-negative integer");
        assert_eq!(warn, Event::warn(1.0, "x"));
    }
}
