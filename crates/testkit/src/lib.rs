//! # outrun-testkit: what the tests share
//!
//! - [`Cfg`]: a typed config builder. A base experiment (linear least squares by gradient
//!   descent on synthetic rows, uncoded master–worker) whose keys a test sets or removes by their
//!   dotted names, as `--set` does; its TOML text (for a run through `mpirun`), its validated
//!   [`Config`], its [`Plan`]. Tests state what differs from the base instead of copying a whole
//!   config.
//! - [`Scripted`]: every rank's node machine of a plan in one process, driven by scripted events
//!   — the test decides when each message crosses, each computation ends and each timer fires,
//!   and reads what the machines asked for (quinn-proto's two-endpoint `Pair`, for N ranks).
//! - [`FakeJob`]: a job whose parts and results are known in closed form, with every capability
//!   (labels, checkpoints, a prelude), for tests of the driver core without data or a model.
//!
//! It is a dev-dependency only: integration tests (`tests/`) use it, the crates' own code never.
//!
//! ```
//! use outrun_testkit::Cfg;
//!
//! // gradient coding over 6 workers tolerating 2 stragglers, and its plan
//! let gc = Cfg::linear("doc", 60, 4, 6).set("scheme.kind", "gc-cyclic").set("scheme.s", 2);
//! assert_eq!(gc.config().scheme.kind(), "gc-cyclic");
//! assert_eq!(gc.plan().ranks, 7);
//! // what `--set` does, and a key removed
//! let umw = gc.clone().with(&["scheme.kind=umw"]).unset("scheme.s");
//! assert!(umw.text().contains("kind = \"umw\""));
//! assert!(gc.set("scheme.s", 6).try_config().is_err());
//! ```
#![deny(missing_docs)]

use std::sync::Arc;

use outrun_config::Config;
use outrun_plan::{Plan, Shape};
use outrun_proto::{At, Delivered, Frame, Header, Input, Machine, Msg, Outcome, Output};
use outrun_runlog::event::ComputeTiming;
use outrun_workloads::{Applied, DataError, Job, JobError, Labeled, Prelude, Resumable};

/// A config built from a base experiment by setting and removing keys.
#[derive(Clone, Debug, PartialEq)]
pub struct Cfg(toml::Table);

impl Cfg {
    /// Experiment `name`: least squares (lr 0.1) by gradient descent on `samples` × `features`
    /// rows of `linear-synthetic` data, uncoded master–worker (`umw`) over `workers` workers, 3
    /// iterations; every other key at its default.
    pub fn linear(name: &str, samples: usize, features: usize, workers: usize) -> Cfg {
        Cfg(toml::Table::new())
            .set("run.name", name)
            .set("run.iterations", 3)
            .set("data.kind", "linear-synthetic")
            .set("data.samples", int(samples))
            .set("data.features", int(features))
            .set("model.loss", "least-squares")
            .set("model.lr", 0.1)
            .set("scheme.kind", "umw")
            .set("scheme.workers", int(workers))
    }

    /// The same config with `key` (dotted: `scheme.s`) set to `value`.
    pub fn set(mut self, key: &str, value: impl Into<toml::Value>) -> Cfg {
        let (path, last) = key.rsplit_once('.').expect("a key is section.key");
        let mut table = &mut self.0;
        for section in path.split('.') {
            let entry = table.entry(section).or_insert_with(|| toml::Value::Table(toml::Table::new()));
            table = entry.as_table_mut().expect("a section is a table");
        }
        table.insert(last.to_string(), value.into());
        self
    }

    /// The same config without `key` (a whole section when `key` names one).
    pub fn unset(mut self, key: &str) -> Cfg {
        match key.rsplit_once('.') {
            None => {
                self.0.remove(key);
            }
            Some((path, last)) => {
                let mut table = &mut self.0;
                for section in path.split('.') {
                    match table.get_mut(section).and_then(toml::Value::as_table_mut) {
                        Some(t) => table = t,
                        None => return self,
                    }
                }
                table.remove(last);
            }
        }
        self
    }

    /// Each `section.key=value` of `sets` applied as `--set` applies it (values read as TOML).
    pub fn with(mut self, sets: &[&str]) -> Cfg {
        for s in sets {
            outrun_config::apply_override(&mut self.0, s).expect("a well-formed override");
        }
        self
    }

    /// The TOML text (what a config file of this experiment holds).
    pub fn text(&self) -> String {
        toml::to_string(&self.0).expect("a table serializes")
    }

    /// The validated config.
    pub fn config(&self) -> Config {
        self.try_config().unwrap_or_else(|e| panic!("the test's config is invalid: {e}\n{}", self.text()))
    }

    /// The config, or why it is refused.
    pub fn try_config(&self) -> Result<Config, outrun_config::ConfigError> {
        outrun_config::parse(&self.text(), &[])
    }

    /// The plan, for the shape `data.samples` × `data.features` says (synthetic data: no file is
    /// read).
    pub fn plan(&self) -> Plan {
        let cfg = self.config();
        let data = cfg.data();
        let shape = Shape {
            samples: data.samples.expect("synthetic data has data.samples"),
            features: data.features.expect("synthetic data has data.features"),
        };
        outrun_plan::build(&cfg, shape).unwrap_or_else(|e| panic!("the test's plan cannot be built: {e}"))
    }
}

/// A count as a TOML integer.
pub fn int(n: usize) -> i64 {
    i64::try_from(n).expect("a count fits an i64")
}

/// Every rank's node machine of a plan in one process, fed scripted events. Messages a machine
/// sends wait on the wire until the test delivers them; computations and timers it asks for are
/// recorded until the test answers or fires them.
pub struct Scripted {
    /// One machine per rank.
    pub nodes: Vec<Box<dyn Machine<Vec<f64>>>>,
    /// The time lent to the machines.
    pub now: f64,
    /// Messages sent and not yet delivered: (from, to, message), in the order they were sent.
    pub wire: Vec<(usize, usize, Msg<Vec<f64>>)>,
    /// Computations asked for and not yet answered: (rank, iteration).
    pub computes: Vec<(usize, u64)>,
    /// Timers armed: (rank, id, at).
    pub timers: Vec<(usize, u64, f64)>,
    /// Results delivered: (rank, iteration, total, how it was obtained).
    pub delivered: Vec<(usize, u64, Vec<f64>, Delivered)>,
    /// Each rank's log records, as JSON (as written to its log file).
    pub logs: Vec<Vec<serde_json::Value>>,
    /// Each rank's end, once it is done.
    pub done: Vec<Option<Outcome>>,
    /// Messages sent to each rank.
    pub sent_to: Vec<usize>,
    /// Every (from, to) pair a message was sent on.
    pub pairs: std::collections::BTreeSet<(usize, usize)>,
    /// The payload length every machine was built for.
    pub len: usize,
    /// Tell a machine at once that a tracked message has left ([`Scripted::acking_sends`]);
    /// otherwise such messages wait in `unacked` for the test.
    pub ack_sends: bool,
    /// Tracked messages sent and not yet reported as left: (rank, track).
    pub unacked: Vec<(usize, u64)>,
    /// Whether each rank's machine said, after some input, that it waits in a lockstep exchange
    /// ([`Machine::eager`]).
    pub eager_seen: Vec<bool>,
}

impl Scripted {
    /// The loop machines of every rank of `plan`, for payloads of `len` values.
    pub fn new(plan: &Plan, len: usize) -> Self {
        let n = plan.ranks;
        let nodes = (0..n).map(|r| outrun_proto::machine::<Vec<f64>>(plan, r, len, false)).collect();
        Scripted::of(nodes, len)
    }

    /// Given machines (one per rank, e.g. a plan's prelude machines), for payloads of `len`
    /// values; the outputs each machine queued when it was made are carried out at once.
    pub fn of(nodes: Vec<Box<dyn Machine<Vec<f64>>>>, len: usize) -> Self {
        let n = nodes.len();
        let mut s = Scripted {
            nodes,
            now: 0.0,
            wire: vec![],
            computes: vec![],
            timers: vec![],
            delivered: vec![],
            logs: vec![vec![]; n],
            done: vec![None; n],
            sent_to: vec![0; n],
            pairs: Default::default(),
            len,
            ack_sends: false,
            unacked: vec![],
            eager_seen: vec![false; n],
        };
        (0..n).for_each(|r| s.carry_out(r));
        s
    }

    /// The same, telling each machine at once that its tracked messages have left (as a driver
    /// does when a send completes), and doing so for those already sent.
    pub fn acking_sends(mut self) -> Self {
        self.ack_sends = true;
        for (rank, track) in std::mem::take(&mut self.unacked) {
            self.input(rank, Input::Sent { track });
        }
        self
    }

    /// Feed `input` to `rank` and carry out what it asks for.
    pub fn input(&mut self, rank: usize, input: Input<Vec<f64>>) {
        self.nodes[rank].handle(&At(self.now), input);
        self.carry_out(rank);
        self.eager_seen[rank] |= self.nodes[rank].eager();
    }

    fn carry_out(&mut self, rank: usize) {
        while let Some(o) = self.nodes[rank].poll() {
            match o {
                Output::Send { to, msg, track } => {
                    for d in to {
                        self.sent_to[d] += 1;
                        self.pairs.insert((rank, d));
                        self.wire.push((rank, d, msg.clone()));
                    }
                    if let Some(track) = track {
                        if self.ack_sends {
                            self.nodes[rank].handle(&At(self.now), Input::Sent { track });
                        } else {
                            self.unacked.push((rank, track));
                        }
                    }
                }
                Output::Compute { t, .. } => self.computes.push((rank, t)),
                Output::Timer { id, at } => self.timers.push((rank, id, at)),
                Output::Deliver { t, total, info } => self.delivered.push((rank, t, total, info)),
                Output::Collective { .. } => panic!("no collective in a scripted run"),
                Output::Contribute => {
                    // a contribution of rank r: len values r + 1 (the root's: zeros)
                    let value = vec![if rank == 0 { 0.0 } else { (rank + 1) as f64 }; self.len];
                    self.nodes[rank].handle(&At(self.now), Input::Contribution { value });
                }
                Output::Gathered { total, .. } => {
                    let info = Delivered {
                        used: vec![],
                        residual: 0.0,
                        exact: true,
                        coverage: 1.0,
                        late_total: 0,
                        rejected: vec![],
                    };
                    self.delivered.push((rank, 0, total, info));
                }
                Output::Log(ev) => self.logs[rank].push(serde_json::to_value(&ev).expect("a record serializes")),
                Output::Done(o) => self.done[rank] = Some(o),
            }
        }
    }

    /// Deliver the first queued message matching `pred`; returns whether there was one.
    pub fn deliver(&mut self, pred: impl Fn(usize, usize, &Header) -> bool) -> bool {
        let Some(i) = self.wire.iter().position(|(f, t, m)| pred(*f, *t, &m.head)) else { return false };
        let (from, to, msg) = self.wire.remove(i);
        self.input(to, Input::Recv { from, msg });
        true
    }

    /// Deliver everything queued (in order), repeatedly, except what `hold` keeps back.
    pub fn flush(&mut self, hold: impl Fn(usize, usize, &Header) -> bool) {
        while self.deliver(|f, t, h| !hold(f, t, h)) {}
    }

    /// Rank `rank`'s computation of iteration `t` ends now with one part, `part`.
    pub fn compute(&mut self, rank: usize, t: u64, part: Vec<f64>) {
        let i = self
            .computes
            .iter()
            .position(|&c| c == (rank, t))
            .unwrap_or_else(|| panic!("rank {rank} was not asked to compute {t}"));
        self.computes.remove(i);
        let timing = ComputeTiming { compute_start: Some(self.now), ..ComputeTiming::default() };
        self.input(rank, Input::Timing { t, timing });
        self.input(rank, Input::Computed { t, parts: vec![part], ready: self.now });
    }

    /// Move the time to `until` and fire rank `rank`'s timers due by then.
    pub fn fire_timers(&mut self, rank: usize, until: f64) {
        self.now = until;
        let due: Vec<u64> = self.timers.iter().filter(|(r, _, at)| *r == rank && *at <= until).map(|t| t.1).collect();
        self.timers.retain(|(r, _, at)| !(*r == rank && *at <= until));
        for id in due {
            self.input(rank, Input::Timer { id });
        }
    }

    /// The root starts iteration `t` with `model`.
    pub fn start(&mut self, t: u64, model: Vec<f64>) {
        self.input(0, Input::Start { t, model: Arc::new(model) });
    }

    /// The root ends the run (with `failure`, an abort), and every message goes through.
    pub fn finish(&mut self, failure: Option<String>) {
        self.input(0, Input::Finish { failure });
        self.flush(|_, _, _| false);
    }

    /// Start iteration `t` and let every node asked to compute answer at once with ones.
    pub fn run_iteration(&mut self, t: u64) {
        self.start(t, vec![1.0; self.len]);
        self.flush(|_, _, _| false);
        let computes = self.computes.clone();
        for (r, t) in computes {
            self.compute(r, t, vec![1.0; self.len]);
        }
        self.flush(|_, _, _| false);
    }

    /// Late results rank `rank` logged.
    pub fn late(&self, rank: usize) -> usize {
        self.logs[rank].iter().filter(|e| e["ev"] == "late").count()
    }
}

/// A job whose every vector is known in closed form: rank r's part k of iteration t is `len`
/// values r + k + t (or the negated when its labels are flipped); applying a total keeps it as
/// the state. It has every capability a scheme may ask for, and records what it was asked.
#[derive(Clone, Debug, Default)]
pub struct FakeJob {
    /// Values per vector.
    pub len: usize,
    /// The state (the last total applied).
    pub state: Vec<f64>,
    /// Labels flipped now.
    pub flipped: bool,
    /// Every label flip asked for, in order.
    pub flips: Vec<bool>,
    /// Fail applying iteration t (a divergence).
    pub fail_at: Option<u64>,
    /// The prelude's sum, once gathered.
    pub gathered: Option<Vec<f64>>,
}

impl FakeJob {
    /// A job of vectors of `len` values.
    pub fn new(len: usize) -> Self {
        FakeJob { len, state: vec![0.0; len], ..FakeJob::default() }
    }

    /// Rank `rank`'s part `k` of iteration `t` (unflipped).
    pub fn part(&self, rank: usize, k: usize, t: u64) -> Vec<f64> {
        vec![(rank + k) as f64 + t as f64; self.len]
    }
}

impl Job for FakeJob {
    fn name(&self) -> &'static str {
        "fake"
    }
    fn problem(&self) -> String {
        format!("fake, {} values", self.len)
    }
    fn state_file(&self) -> &'static str {
        "state.txt"
    }
    fn len(&self, _rank: usize) -> usize {
        self.len
    }
    fn model_len(&self) -> usize {
        self.len
    }
    fn memory(&mut self, plan: &Plan) -> Result<Vec<u64>, DataError> {
        Ok(vec![0; plan.ranks])
    }
    fn load(&mut self, _plan: &Plan, _ranks: &[usize]) -> Result<(), DataError> {
        Ok(())
    }
    fn model(&mut self) -> Arc<Frame> {
        Arc::new(Frame::from_vec(self.state.clone()))
    }
    fn compute(
        &mut self,
        rank: usize,
        t: u64,
        _model: &Frame,
        parts: Option<&[usize]>,
    ) -> Result<Vec<Frame>, JobError> {
        let sign = if self.flipped { -1.0 } else { 1.0 };
        let parts = parts.map_or_else(|| vec![0], <[usize]>::to_vec);
        Ok(parts
            .into_iter()
            .map(|k| Frame::from_vec(self.part(rank, k, t).into_iter().map(|v| sign * v).collect()))
            .collect())
    }
    fn apply(&mut self, t: u64, total: Frame) -> Result<Applied, JobError> {
        if self.fail_at == Some(t) {
            return Err(JobError::Diverged { iteration: t, message: format!("iteration {t}: the fake job diverged") });
        }
        self.state = total.into_vec();
        Ok(Applied { loss: t as f64, state: Some(self.state.clone()), error: None, done: false })
    }
    fn reference(&mut self, _plan: &Plan) -> Result<Vec<f64>, DataError> {
        Err(DataError::field("job", "the fake job has no serial reference"))
    }
    fn prelude(&mut self) -> Option<&mut dyn Prelude> {
        Some(self)
    }
    fn resumable(&mut self) -> Option<&mut dyn Resumable> {
        Some(self)
    }
    fn labeled(&mut self) -> Option<&mut dyn Labeled> {
        Some(self)
    }
}

impl Labeled for FakeJob {
    fn flip_labels(&mut self, on: bool) {
        self.flipped = on;
        self.flips.push(on);
    }
}

impl Resumable for FakeJob {
    fn save(&self) -> Vec<(String, Vec<f64>)> {
        vec![("state".into(), self.state.clone())]
    }
    fn restore(&mut self, vectors: &[(String, Vec<f64>)]) -> Result<(), JobError> {
        let (_, v) = vectors
            .iter()
            .find(|(n, _)| n == "state")
            .ok_or_else(|| JobError::Checkpoint("the checkpoint has no `state`".into()))?;
        self.state = v.clone();
        Ok(())
    }
}

impl Prelude for FakeJob {
    fn contribution(&mut self, rank: usize, worker: Option<usize>) -> Result<Vec<f64>, JobError> {
        Ok(vec![worker.map_or(0.0, |_| rank as f64); self.len])
    }
    fn contribution_len(&self) -> usize {
        self.len
    }
    fn gathered(&mut self, _rank: usize, sum: Vec<f64>) {
        self.gathered = Some(sum);
    }
}
