//! # outrun-driver: what the MPI engine and the simulator do alike
//!
//! A driver carries out a node machine's outputs (`outrun_proto::Output`): it moves messages,
//! runs computations, fires timers and applies delivered results. The engine does it over MPI
//! in real time, the simulator on an event queue in virtual time. What does not depend on how
//! time passes or bytes move is here, written once:
//!
//! - [`Core`]: one rank's job and, on the logging rank, its book — a computation's parts
//!   ([`Core::compute`]) and its compute-time decision and record ([`Core::timing`]), a
//!   delivered result applied, recorded and turned into the machine's next input
//!   ([`Core::deliver`]), and the state file and summary at the end ([`Core::finish`]);
//! - [`Payload`]: real values ([`Frame`]) through the job, or lengths only ([`Len`]) for
//!   timing simulations;
//! - [`run_info`] and [`write_header`]: the run directory's identity and its `config.toml` and
//!   `plan.json`.
#![deny(missing_docs)]

use std::path::{Path, PathBuf};
use std::sync::Arc;

use outrun_config::ComputeMode;
use outrun_plan::{FaultKind, Faults, Hop, Injector, Links, Plan};
use outrun_proto::roles::Vector;
use outrun_proto::{Delivered, Frame, Header, Histogram, Input, Len};
use outrun_runlog::event::{ComputeTiming, Event};
use outrun_runlog::{Book, Checkpoint, IterationRecord, Latency, RunInfo, Summary, CHECKPOINT_FORMAT};
use outrun_workloads::{Applied, Job, JobError, Prelude};

/// Progress reporting hooks (the CLI draws a progress bar with them).
pub trait Progress {
    /// The logging rank's run directory, where its logs grow; told before [`Progress::begin`].
    fn run_dir(&mut self, _dir: &std::path::Path) {}
    /// The timed loop starts at iteration `first` (0, or a resumed run's checkpoint's) of
    /// `iterations`.
    fn begin(&mut self, _first: u64, _iterations: u64) {}
    /// Iteration `t` finished after `wall_s` seconds with `loss`.
    fn tick(&mut self, _t: u64, _wall_s: f64, _loss: f64) {}
    /// The timed loop ended.
    fn end(&mut self) {}
    /// The run's summary was written (the logging rank of a run that completed).
    fn finished(&mut self, _summary: &Summary) {}
    /// The logging rank logged `event` (e.g. its collection of an iteration: who came last).
    fn observe(&mut self, _event: &Event) {}
}

/// No progress reporting.
pub struct NoProgress;
impl Progress for NoProgress {}

/// What a driver computes on: real values through the job ([`Frame`]), or lengths only
/// ([`Len`]: timing simulations, where the job only tells the lengths).
pub trait Payload: Vector + Sized + 'static {
    /// The job's model.
    fn model(job: &mut dyn Job) -> Arc<Self>;
    /// Rank `rank`'s parts for iteration `t` (all `count` of them, or those selected), or why
    /// the run must stop.
    fn compute(
        job: &mut dyn Job,
        rank: usize,
        t: u64,
        model: &Self,
        parts: Option<&[usize]>,
        count: usize,
    ) -> Result<Vec<Self>, JobError>;
    /// Apply the delivered total.
    fn apply(job: &mut dyn Job, t: u64, total: Self) -> Result<Applied, JobError>;
    /// Rank `rank`'s (worker `worker`'s) contribution to the plan's prelude.
    fn contribution(job: &mut dyn Job, rank: usize, worker: Option<usize>) -> Result<Self, JobError>;
    /// The prelude's sum, to the root's job.
    fn gathered(job: &mut dyn Job, rank: usize, total: Self);
}

/// The job's part in the plan's prelude, or why it has none.
fn prelude_of(job: &mut dyn Job) -> Result<&mut dyn Prelude, JobError> {
    let name = job.name();
    job.prelude()
        .ok_or_else(|| JobError::Unsupported(format!("job.kind = \"{name}\" has no part in the plan's prelude")))
}

impl Payload for Frame {
    fn model(job: &mut dyn Job) -> Arc<Self> {
        job.model()
    }
    fn compute(
        job: &mut dyn Job,
        rank: usize,
        t: u64,
        model: &Self,
        parts: Option<&[usize]>,
        _: usize,
    ) -> Result<Vec<Self>, JobError> {
        job.compute(rank, t, model, parts)
    }
    fn apply(job: &mut dyn Job, t: u64, total: Self) -> Result<Applied, JobError> {
        job.apply(t, total)
    }
    fn contribution(job: &mut dyn Job, rank: usize, worker: Option<usize>) -> Result<Self, JobError> {
        Ok(Frame::from_vec(prelude_of(job)?.contribution(rank, worker)?))
    }
    fn gathered(job: &mut dyn Job, rank: usize, total: Self) {
        if let Ok(p) = prelude_of(job) {
            p.gathered(rank, total.into_vec());
        }
    }
}

impl Payload for Len {
    fn model(job: &mut dyn Job) -> Arc<Self> {
        Arc::new(Len(job.model_len()))
    }
    fn compute(
        job: &mut dyn Job,
        rank: usize,
        _: u64,
        _: &Self,
        parts: Option<&[usize]>,
        count: usize,
    ) -> Result<Vec<Self>, JobError> {
        Ok(vec![Len(job.len(rank)); parts.map_or(count, <[usize]>::len)])
    }
    fn apply(_: &mut dyn Job, _: u64, _: Self) -> Result<Applied, JobError> {
        Ok(Applied::default())
    }
    fn contribution(job: &mut dyn Job, _: usize, _: Option<usize>) -> Result<Self, JobError> {
        Ok(Len(prelude_of(job)?.contribution_len()))
    }
    fn gathered(_: &mut dyn Job, _: usize, _: Self) {}
}

/// Who a rank is, for its core: the keys of straggler injection, how many parts it computes,
/// and the run's length.
#[derive(Clone, Debug)]
pub struct Seat {
    /// MPI rank.
    pub rank: usize,
    /// Worker id (the straggler model's key; 0 for the master).
    pub worker: usize,
    /// Points the rank computes on (the modelled time's unit).
    pub load: usize,
    /// Parts it computes.
    pub parts: usize,
    /// Iterations of the run.
    pub iterations: u64,
    /// The first iteration (0, or a resumed run's checkpoint's).
    pub first: u64,
    /// Write a checkpoint every this many iterations (the logging rank).
    pub checkpoint_every: Option<u64>,
    /// The parent's rank, and each child's (rank, worker id): the ends of this rank's links.
    pub parent: Option<usize>,
    /// Children as (rank, worker id).
    pub children: Vec<(usize, usize)>,
}

impl Seat {
    /// Rank `rank` of `plan`.
    pub fn of(plan: &Plan, rank: usize) -> Self {
        let node = &plan.nodes[rank];
        Seat {
            rank,
            worker: node.worker.unwrap_or(0),
            load: node.load(),
            parts: node.parts.len(),
            iterations: plan.run.iterations,
            first: plan.run.first,
            checkpoint_every: plan.run.checkpoint_every,
            parent: node.parent,
            children: node.children.iter().map(|&c| (c, plan.nodes[c].worker.unwrap_or(0))).collect(),
        }
    }
}

/// A computation's timing: when its result may be used, and its record (merged into the node's
/// log record of the iteration).
pub struct Timed {
    /// When the parts may be used (the modelled or injected finish time), on the run's clock.
    pub ready_at: f64,
    /// `compute_start`, `compute_end`, `target`, `injected`, `straggler`, `overrun`.
    pub record: ComputeTiming,
}

/// One rank's share of a run that does not depend on how time passes or bytes move: its job,
/// its worker's compute-time decisions, and on the logging rank the book.
pub struct Core<'a> {
    /// The rank's job.
    pub job: Box<dyn Job>,
    seat: Seat,
    injector: Injector,
    faults: Faults,
    links: Links,
    book: Option<(Book, RunInfo)>,
    progress: Option<&'a mut dyn Progress>,
    /// The timed loop ended (progress told).
    ended: bool,
    /// The last state applied (the state file's content).
    state: Option<Vec<f64>>,
    /// This rank failed to apply a result that every rank failed to apply (a ring's
    /// divergence): only the logging rank reports it.
    pub quiet_failure: bool,
    /// Seconds the plan's prelude took at the root (counted in the book's times).
    prelude_s: Option<f64>,
    /// The logging rank's record of the iteration last applied, not yet written
    /// ([`Core::settle`]).
    unwritten: Option<Unwritten>,
}

/// An iteration applied and not yet recorded: what [`IterationRecord`] takes besides the state
/// (the core's, until the next iteration is applied).
struct Unwritten {
    t: u64,
    end: f64,
    loss: f64,
    metrics: outrun_workloads::Metrics,
    info: Delivered,
    faulty_used: Vec<usize>,
}

impl<'a> Core<'a> {
    /// The core of `seat` running `job`, with its worker's compute times from `injector` (its
    /// straggler model says how compute time is obtained).
    pub fn new(job: Box<dyn Job>, seat: Seat, injector: Injector) -> Self {
        Core {
            job,
            seat,
            injector,
            faults: Faults::default(),
            links: Links::None,
            book: None,
            progress: None,
            ended: false,
            state: None,
            quiet_failure: false,
            prelude_s: None,
            unwritten: None,
        }
    }

    /// The core of rank `rank` of `plan`.
    pub fn of(plan: &Plan, rank: usize, job: Box<dyn Job>) -> Self {
        Core::new(job, Seat::of(plan, rank), plan.stragglers.injector()).with_faults(plan)
    }

    /// Inject the plan's value faults into this rank's results (a worker's), and its link model
    /// into its messages.
    pub fn with_faults(mut self, plan: &Plan) -> Self {
        self.faults = plan.faults.clone();
        self.links = plan.links.clone();
        self
    }

    /// Seconds the message with header `head` waits on this rank's link to rank `to` before it
    /// leaves: `[links] model = "latency"`'s to any rank; `"delay"`'s on a worker's link to its
    /// parent (0 for ranks it has no such link with); 0 otherwise.
    pub fn link_delay(&self, to: usize, head: &Header) -> f64 {
        if let Some(seconds) = self.links.latency() {
            return seconds;
        }
        if !self.links.delays() {
            return 0.0;
        }
        let (worker, up) = if self.seat.parent == Some(to) {
            (self.seat.worker, true)
        } else if let Some(&(_, w)) = self.seat.children.iter().find(|(r, _)| *r == to) {
            (w, false)
        } else {
            return 0.0;
        };
        self.links.delay(Hop { worker, t: head.t, up, kind: head.kind as u64, round: u64::from(head.round) })
    }

    /// Keep the run's book (the logging rank), with the prelude's seconds if it ran.
    pub fn with_book(mut self, book: Book, info: RunInfo) -> Self {
        self.keep_book(book, info);
        self
    }

    /// [`Core::with_book`] in place.
    pub fn keep_book(&mut self, mut book: Book, info: RunInfo) {
        if let Some(secs) = self.prelude_s {
            book.prelude(secs);
        }
        self.book = Some((book, info));
    }

    /// The timed loop starts at `at` (the book's clock of iteration times; the logging rank).
    pub fn start_loop(&mut self, at: f64) {
        if let Some((book, _)) = &mut self.book {
            book.start_loop(at);
        }
    }

    /// Report progress (the logging rank of a real run).
    pub fn with_progress(mut self, progress: &'a mut dyn Progress) -> Self {
        self.report_to(progress);
        self
    }

    /// [`Core::with_progress`] in place.
    pub fn report_to(&mut self, progress: &'a mut dyn Progress) {
        if let Some((_, info)) = &self.book {
            progress.run_dir(&info.dir);
        }
        progress.begin(self.seat.first, self.seat.iterations);
        self.progress = Some(progress);
    }

    /// This rank's contribution to the plan's prelude (the machine's [`Output::Contribute`]).
    ///
    /// [`Output::Contribute`]: outrun_proto::Output::Contribute
    pub fn contribute<P: Payload>(&mut self) -> Result<Input<P>, JobError> {
        let worker = (self.seat.worker > 0).then_some(self.seat.worker);
        Ok(Input::Contribution { value: P::contribution(&mut *self.job, self.seat.rank, worker)? })
    }

    /// The prelude's sum reached the root after `secs`: the job takes it, the book counts the
    /// seconds in every iteration's `cumulative_s` and the summary's `parity_s`.
    pub fn gathered<P: Payload>(&mut self, total: P, secs: f64) {
        P::gathered(&mut *self.job, self.seat.rank, total);
        self.prelude_s = Some(secs);
        if let Some((book, _)) = &mut self.book {
            book.prelude(secs);
        }
    }

    /// Seconds the prelude took at the root, once it ran there.
    pub fn prelude_s(&self) -> Option<f64> {
        self.prelude_s
    }

    /// The last state applied (None before the first, or when nothing is computed).
    pub fn state(&self) -> Option<&[f64]> {
        self.state.as_deref()
    }

    /// The machine's first input, on a rank that starts iterations.
    pub fn start<P: Payload>(&mut self) -> Input<P> {
        Input::Start { t: self.seat.first, model: P::model(&mut *self.job) }
    }

    /// This rank's parts for iteration `t` on `model`: all of them, or the `parts` selected,
    /// with the worker's value fault of the iteration applied (a label flip before computing,
    /// the others to each part's values: what the worker encodes and sends is built from them);
    /// or why the run must stop (the job could not compute them).
    pub fn compute<P: Payload>(&mut self, t: u64, model: &P, parts: Option<&[usize]>) -> Result<Vec<P>, JobError> {
        let worker = self.seat.worker;
        let fault = (worker > 0).then(|| self.faults.at(worker, t)).flatten();
        let flip = fault == Some(FaultKind::LabelFlip);
        if let Some(job) = self.job.labeled().filter(|_| flip) {
            job.flip_labels(true);
        }
        let out = P::compute(&mut *self.job, self.seat.rank, t, model, parts, self.seat.parts);
        if let Some(job) = self.job.labeled().filter(|_| flip) {
            job.flip_labels(false);
        }
        let mut out = out?;
        if fault.is_some() && !flip {
            for (k, v) in out.iter_mut().enumerate() {
                if let Some(values) = v.values_mut() {
                    self.faults.corrupt(worker, t, k, values);
                }
            }
        }
        Ok(out)
    }

    /// The compute-time decision of iteration `t`'s computation of `load` points (None: the
    /// rank's whole load), which started at `start` and ended at `end` after `measured` seconds
    /// of real work (None: a simulated computation of `timing.a` seconds per point, at no
    /// time). The result may be used at the modelled or injected finish time, or when the real
    /// work ended if that is later (an overrun of a modelled time); a simulated computation's
    /// time is the model's whole say (a law of rates may make it shorter than `timing.a`).
    pub fn timing(&mut self, t: u64, load: Option<usize>, start: f64, end: f64, measured: Option<f64>) -> Timed {
        let load = load.unwrap_or(self.seat.load) as f64 * self.job.work(self.seat.rank, t);
        let model = self.injector.model();
        let modelled = model.compute == ComputeMode::Modelled;
        let base = measured.unwrap_or(model.base_a * load);
        let time = self.injector.compute_time(self.seat.worker, t, load, base);
        let overrun = modelled && measured.is_some_and(|m| m > time.target);
        let record = ComputeTiming {
            compute_start: Some(start),
            compute_end: Some(end),
            target: Some(time.target),
            injected: Some(time.injected),
            straggler: Some(time.straggler),
            overrun: Some(overrun),
            load: Some(load),
            fault: (self.seat.worker > 0)
                .then(|| self.faults.at(self.seat.worker, t))
                .flatten()
                .map(|k| k.name().to_string()),
        };
        Timed { ready_at: start + measured.map_or(time.target, |m| time.target.max(m)), record }
    }

    /// Apply the result of iteration `t`, delivered at `now` (`info`: how it was obtained),
    /// and say what the machine does next: start `t + 1`, or finish (after the last iteration,
    /// when the job is done, or with the job's failure). The logging rank's record of `t` is
    /// kept for [`Core::settle`], so that a driver sends the next model before it writes (it is
    /// written here only where a checkpoint follows: the record comes first).
    pub fn deliver<P: Payload>(&mut self, t: u64, total: P, info: Delivered, now: f64) -> Input<P> {
        self.settle();
        let applied = match P::apply(&mut *self.job, t, total) {
            Ok(a) => a,
            Err(why) => {
                self.quiet_failure = self.book.is_none();
                return Input::Finish { failure: Some(why.to_string()) };
            }
        };
        if self.book.is_some() {
            // a federated rule that accepted no upload leaves θ as it was and has no clients' loss
            let loss = if info.used.is_empty() { f64::NAN } else { applied.loss };
            let faulty_used = self.faulty_used(t, &info.used);
            self.unwritten =
                Some(Unwritten { t, end: now, loss, metrics: self.job.metrics(&applied), info, faulty_used });
        }
        let done = applied.done;
        self.state = applied.state;
        if let Err(why) = self.checkpoint(t) {
            return Input::Finish { failure: Some(why) };
        }
        if done || t + 1 >= self.seat.iterations {
            Input::Finish { failure: None }
        } else {
            Input::Start { t: t + 1, model: P::model(&mut *self.job) }
        }
    }

    /// Write the logging rank's record of the iteration last applied, if not yet written (a
    /// driver calls it once the outputs of a delivery are carried out; every delivery and the
    /// end of the run call it too).
    pub fn settle(&mut self) {
        let (Some(u), Some((book, _))) = (self.unwritten.take(), self.book.as_mut()) else { return };
        let info = &u.info;
        let wall = book.record(IterationRecord {
            t: u.t,
            end: u.end,
            state: self.state.as_deref(),
            loss: u.loss,
            error: u.metrics.error,
            accuracy: u.metrics.accuracy,
            columns: &u.metrics.columns,
            used: &info.used,
            coverage: info.coverage,
            exact: info.exact,
            residual: info.residual,
            late_total: info.late_total,
            rejected: &info.rejected,
            faulty_used: &u.faulty_used,
        });
        if let Some(p) = self.progress.as_deref_mut() {
            p.tick(u.t, wall, u.loss);
        }
    }

    /// The worker ids of the children among `used` (ranks) whose results `[faults]` corrupted
    /// in iteration `t`.
    fn faulty_used(&self, t: u64, used: &[usize]) -> Vec<usize> {
        if self.faults.kind.is_none() {
            return vec![];
        }
        let worker = |r: &usize| self.seat.children.iter().find(|(c, _)| c == r).map(|&(_, w)| w);
        let mut ids: Vec<usize> = used.iter().filter_map(worker).filter(|&w| self.faults.at(w, t).is_some()).collect();
        ids.sort_unstable();
        ids
    }

    /// After iteration `t`, the logging rank writes a checkpoint every `run.checkpoint_every`
    /// iterations (and after the last).
    fn checkpoint(&mut self, t: u64) -> Result<(), String> {
        let (Some(every), Some(_)) = (self.seat.checkpoint_every, self.book.as_ref()) else { return Ok(()) };
        if !(t + 1).is_multiple_of(every) && t + 1 < self.seat.iterations {
            return Ok(());
        }
        // the iteration's record before the checkpoint that follows it
        self.settle();
        let Some((_, info)) = self.book.as_ref() else { return Ok(()) };
        let c = Checkpoint {
            format: CHECKPOINT_FORMAT,
            iteration: t + 1,
            problem: self.job.problem(),
            vectors: self.job.resumable().map_or_else(Vec::new, |r| r.save()),
        };
        c.write(&info.dir)
            .map_err(|e| format!("cannot write the checkpoint of iteration {t} in {}: {e}", info.dir.display()))
    }

    /// This rank logged `event`: progress sees it (the logging rank's collections).
    pub fn observe(&mut self, event: &Event) {
        if let Some(p) = self.progress.as_deref_mut() {
            p.observe(event);
        }
    }

    /// The timed loop ended (whether or not the run succeeded).
    pub fn end(&mut self) {
        self.settle();
        if let Some(p) = self.progress.as_deref_mut().filter(|_| !self.ended) {
            p.end();
        }
        self.ended = true;
    }

    /// The state file and `summary.json` (the logging rank; None elsewhere): `setup_s` before
    /// the loop, `late` results discarded, `master_bytes` received, the model latencies.
    pub fn finish(
        &mut self,
        setup_s: f64,
        late: u64,
        master_bytes: u64,
        latency: &Histogram,
    ) -> std::io::Result<Option<Summary>> {
        self.end();
        let Some((book, info)) = self.book.as_ref() else { return Ok(None) };
        // nothing computed (a timing simulation): the state's values are unknown
        let state = self.state.clone().unwrap_or_else(|| vec![f64::NAN; self.job.state_len()]);
        let text = self.job.state_text(&state);
        let latency = Latency {
            count: latency.count(),
            p50: latency.quantile(0.5),
            p95: latency.quantile(0.95),
            max: (latency.count() > 0).then(|| latency.max()),
        };
        let summary = book.finish(info, &text, setup_s, late, master_bytes, latency)?;
        if let Some(p) = self.progress.as_deref_mut() {
            p.finished(&summary);
        }
        Ok(Some(summary))
    }
}

/// What the book of a run of `plan` and `job` in `dir` writes besides the iterations
/// (`compute`: "real", "modelled" or "simulated").
pub fn run_info(plan: &Plan, job: &dyn Job, dir: &Path, compute: &str) -> RunInfo {
    RunInfo {
        dir: dir.to_path_buf(),
        name: plan.run.name.clone(),
        scheme: plan.scheme.clone(),
        title: plan.title.clone(),
        job: job.name().into(),
        problem: job.problem(),
        error_label: job.error_label().into(),
        workers: plan.workers,
        ranks: plan.ranks,
        s: plan.s,
        samples: plan.samples,
        features: plan.job.features,
        payload_values: plan.nodes.iter().find(|n| n.worker.is_some()).map_or(0, |n| job.len(n.rank)),
        stragglers: plan.stragglers.name().into(),
        compute: compute.into(),
        trajectory: plan.run.trajectory,
        initial: job.state(),
        columns: job.columns().iter().map(|c| c.to_string()).collect(),
        state_file: job.state_file().into(),
    }
}

/// Write the run directory's `config.toml` (the resolved config's TOML, as given),
/// `plan.json`, and a copy of each of the job's sources (a Python model's module).
pub fn write_header(dir: &Path, plan: &Plan, config_toml: &str, job: &dyn Job) -> std::io::Result<()> {
    std::fs::write(dir.join("config.toml"), config_toml)?;
    std::fs::write(dir.join("plan.json"), serde_json::to_string(plan).expect("plan serializes"))?;
    for source in job.sources() {
        let name = source.file_name().map_or_else(|| "source".into(), |n| n.to_os_string());
        std::fs::copy(&source, dir.join(name))?;
    }
    Ok(())
}

/// The run directory of a run of `plan`: `<run.out_dir>/<run.name><suffix>-<UTC time>`.
pub fn create_run_dir(plan: &Plan, suffix: &str) -> Result<PathBuf, String> {
    let out = &plan.run.out_dir;
    outrun_runlog::create_run_dir(Path::new(out), &format!("{}{suffix}", plan.run.name))
        .map_err(|e| format!("run.out_dir: cannot create a run directory in `{out}`: {e}"))
}
