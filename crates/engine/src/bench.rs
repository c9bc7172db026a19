//! Micro-benchmarks that need MPI: our ring all-reduce (the protocol's [`RingNode`] driven by
//! the engine's driver, exactly as in training) against `MPI_Allreduce`, measured in the same
//! job, alternating, on the same buffers; the master–worker floor (`MPI_Bcast` of a model and
//! `MPI_Gather` of every worker's result, summed at the master: what any master–worker scheme
//! moves per iteration, in the library's own collectives); and broadcast within
//! sub-communicators, the primitive of patterns that multicast to groups.

use std::cell::RefCell;
use std::rc::Rc;
use std::sync::Arc;
use std::time::Instant;

use mpi::collective::SystemOperation;
use mpi::traits::*;
use outrun_codes::combinations;
use outrun_config::{ComputeMode, Idle, RingAlgorithm};
use outrun_driver::{Core, Seat};
use outrun_plan::{Law, StragglerModel};
use outrun_proto::roles::Vector;
use outrun_proto::{Frame, RingNode};
use outrun_runlog::Lines;
use outrun_workloads::{Applied, DataError, Job, JobError};

use crate::clock::Clock;
use crate::driver::Driver;
use crate::transport::Comm;
use crate::watch::StallWatch;

/// Rank 0's watch over a benchmark's loop of MPI's own collectives, which wait without a bound
/// and cannot say which rank is late: when the loop in `what` (e.g. "`outrun bench floor`
/// (MPI_Bcast, MPI_Gather)") of `of` `units` (e.g. "iterations") has made no progress for 10 s,
/// then at every tripling, rank 0 says so in one line, with how far it got (the launcher's bound
/// ends the job). No other rank watches; the thread makes no MPI call.
fn watch(rank: usize, what: &'static str, of: u64, units: &'static str) -> StallWatch {
    StallWatch::start(rank == 0, move |waited, seen| {
        format!(
            "note: rank 0 has waited {} s in {what} with {seen} of {of} {units} done; MPI's own collectives do not say which rank is late (still waiting)",
            waited.as_secs()
        )
    })
}

/// One vector size and schedule: seconds per all-reduce (slowest rank, best of the rounds).
#[derive(Clone, Debug)]
pub struct RingRow {
    /// Vector size in bytes.
    pub bytes: usize,
    /// Our all-reduce's schedule.
    pub algorithm: RingAlgorithm,
    /// All-reduces per timed round.
    pub reps: usize,
    /// Seconds per ring all-reduce.
    pub ring_s: f64,
    /// Seconds per `MPI_Allreduce`.
    pub mpi_s: f64,
    /// Whether both methods produced the same sums.
    pub agree: bool,
}

/// The same input every iteration. The delivered total is kept and refilled with the input
/// for the next iteration (one vector serves every round, as the former benchmark reused one
/// buffer), so the measurement is the all-reduce, not fresh allocations; the caller keeps the
/// same cell, whose vector is the last sum.
struct Repeat {
    input: Arc<Vec<f64>>,
    spare: Rc<RefCell<Option<Frame>>>,
}

impl Job for Repeat {
    fn name(&self) -> &'static str {
        "ring-bench"
    }
    fn problem(&self) -> String {
        format!("all-reduce of {} values", self.input.len())
    }
    fn state_file(&self) -> &'static str {
        "sum.txt"
    }
    fn len(&self, _rank: usize) -> usize {
        self.input.len()
    }
    fn model_len(&self) -> usize {
        0
    }
    fn memory(&mut self, _plan: &outrun_plan::Plan) -> Result<Vec<u64>, DataError> {
        Ok(vec![])
    }
    fn load(&mut self, _plan: &outrun_plan::Plan, _ranks: &[usize]) -> Result<(), DataError> {
        Ok(())
    }
    fn model(&mut self) -> Arc<Frame> {
        Arc::new(Frame::from_vec(vec![]))
    }
    fn compute(
        &mut self,
        _rank: usize,
        _t: u64,
        _model: &Frame,
        _parts: Option<&[usize]>,
    ) -> Result<Vec<Frame>, JobError> {
        let mut f = self.spare.borrow_mut().take().unwrap_or_else(|| Frame::zeros(self.input.len()));
        f.as_mut_slice().copy_from_slice(&self.input);
        Ok(vec![f])
    }
    fn apply(&mut self, _t: u64, total: Frame) -> Result<Applied, JobError> {
        *self.spare.borrow_mut() = Some(total);
        Ok(Applied::default())
    }
    fn reference(&mut self, _plan: &outrun_plan::Plan) -> Result<Vec<f64>, DataError> {
        Err(DataError::field("job", "the all-reduce benchmark has no serial reference"))
    }
}

/// `reps` all-reduces of the job's input by our ring node with `alg`; returns the communicator.
fn ring_reps(comm: Comm, job: Repeat, reps: usize, wait: (u64, Idle), alg: RingAlgorithm) -> Comm {
    let (rank, size, len) = (comm.rank, comm.size, job.input.len());
    let none = StragglerModel { seed: 0, law: Law::None, compute: ComputeMode::Real, base_a: 0.0, master_a: None };
    let seat = Seat {
        rank,
        worker: rank + 1,
        load: 0,
        parts: 1,
        iterations: reps as u64,
        first: 0,
        checkpoint_every: None,
        parent: None,
        children: vec![],
    };
    let core = Core::new(Box::new(job), seat, none.injector());
    let mut d = Driver::new(comm, Clock::start(), Lines::none(), core, wait.0, wait.1);
    let mut m = RingNode::<Frame>::standalone(rank, size, len, 1e6, false, alg);
    let start = d.core.start();
    d.feed(&mut m, start);
    let _ = d.run(&mut m);
    d.comm
}

/// `MPI_Allreduce` calls a repetition count is calibrated on.
const CALIBRATE: usize = 10;

/// Most all-reduces in a timed round: a round's set-up (a driver and a ring node made, the
/// barrier) is then spread over them, as a training run's is over its iterations.
const MAX_REPS: usize = 200_000;

/// Slowest rank's seconds of `f` (which does `reps` operations), per operation.
fn timed<T>(world: &mpi::topology::SimpleCommunicator, reps: usize, f: impl FnOnce() -> T) -> (f64, T) {
    world.barrier();
    let t0 = Instant::now();
    let out = f();
    let mine = t0.elapsed().as_secs_f64() / reps as f64;
    let mut worst = 0.0;
    world.all_reduce_into(&mine, &mut worst, SystemOperation::max());
    (worst, out)
}

/// Our all-reduce with each of `algs` vs `MPI_Allreduce` for each size (bytes), `rounds`
/// alternating rounds of about `target_s` seconds per method, our ranks waiting as `idle`
/// resolves on this host (as a training run's do: `auto` spins where each rank has a core).
/// Collective; rank 0 gets the rows and the mode its ranks waited in.
pub fn ring_vs_mpi(
    sizes: &[usize],
    algs: &[RingAlgorithm],
    rounds: usize,
    target_s: f64,
    poll_us: u64,
    idle: Idle,
) -> (usize, usize, Idle, Vec<RingRow>) {
    outrun_codes::keep_freed_memory();
    let universe = mpi::initialize().expect("MPI initialises once");
    let world = universe.world();
    let mut comm = Comm::new(&world);
    let (rank, size) = (comm.rank, comm.size);
    // as a ring job's ranks allow (a long vector's lanes each have their steps in flight)
    comm.set_max_behind(crate::transport::behind_cap(true, size));
    let (local, cores) = comm.host_share(&crate::machine());
    let idle = idle.resolve(local, cores);
    let mut rows = Vec::new();
    let watch =
        watch(rank, "`outrun bench ring` (MPI_Allreduce and our all-reduce)", (sizes.len() * rounds) as u64, "rounds");
    let mut round = 0;
    for &bytes in sizes {
        let n = (bytes / 8).max(size);
        let input: Vec<f64> = (0..n).map(|i| ((i * 7 + rank * 13) % 101) as f64 * 0.5).collect();
        let mut out = vec![0.0; n];
        // calibrate the repetition count on MPI_Allreduce after a first call (the first call
        // of a size pays the library's own set-up: 30 µs where a call takes 0.5 µs), agreed by
        // all ranks
        comm.allreduce_sum(&input, &mut out);
        let (one, ()) = timed(&world, CALIBRATE, || (0..CALIBRATE).for_each(|_| comm.allreduce_sum(&input, &mut out)));
        let mut reps = ((target_s / one.max(1e-7)) as usize).clamp(1, MAX_REPS) as u64;
        world.process_at_rank(0).broadcast_into(&mut reps);
        let reps = reps as usize;
        let input_arc = Arc::new(input.clone());
        let mut best_ring = vec![f64::INFINITY; algs.len()];
        let mut best_mpi = f64::INFINITY;
        let mut agree_here = true;
        for _ in 0..rounds {
            watch.done(round);
            round += 1;
            for (a, &alg) in algs.iter().enumerate() {
                let spare = Rc::new(RefCell::new(None));
                let job = Repeat { input: input_arc.clone(), spare: spare.clone() };
                let (r, c) = timed(&world, reps, || ring_reps(comm, job, reps, (poll_us, idle), alg));
                comm = c;
                best_ring[a] = best_ring[a].min(r);
                let (m, ()) = timed(&world, reps, || {
                    for _ in 0..reps {
                        comm.allreduce_sum(&input, &mut out);
                    }
                });
                best_mpi = best_mpi.min(m);
                let spare = spare.borrow();
                let sum = spare.as_ref().map_or(&[][..], Frame::as_slice);
                agree_here &=
                    sum.len() == n && sum.iter().zip(&out).all(|(a, b)| (a - b).abs() <= 1e-9 * b.abs().max(1.0));
            }
        }
        let mut agree = false;
        world.all_reduce_into(&agree_here, &mut agree, SystemOperation::logical_and());
        for (a, &algorithm) in algs.iter().enumerate() {
            rows.push(RingRow { bytes, algorithm, reps, ring_s: best_ring[a], mpi_s: best_mpi, agree });
        }
    }
    (rank, size, idle, rows)
}

/// Result of [`master_worker_floor`]: rank 0's iteration times.
#[derive(Clone, Debug)]
pub struct FloorRow {
    /// Values in the model and in each worker's result.
    pub values: usize,
    /// Iterations timed.
    pub iterations: usize,
    /// Median seconds per iteration (rank 0, from the broadcast's start to the summed results).
    pub median_s: f64,
    /// Mean seconds per iteration.
    pub mean_s: f64,
    /// Whether every iteration's sum was the one the broadcast model implies, on every rank.
    pub agree: bool,
}

/// The floor of a master–worker iteration in MPI's own collectives: rank 0 broadcasts a model of
/// `values` doubles (`MPI_Bcast`), every other rank returns a result of the same length computed
/// from it (`MPI_Gather`), and rank 0 sums the results and takes a gradient step with the sum,
/// `iterations` times with no barrier between them, as a scheme's loop has none. It moves the
/// bytes UMW moves with the library's algorithms and nothing of a protocol (no deadlines, no
/// headers, no stragglers tolerated): the lower bound issue 43 measures the schemes against.
/// Collective over the world (at least 2 ranks); rank 0 gets the row.
pub fn master_worker_floor(values: usize, iterations: usize) -> (usize, usize, FloorRow) {
    let universe = mpi::initialize().expect("MPI initialises once");
    let world = universe.world();
    let (rank, size) = (world.rank() as usize, world.size() as usize);
    let root = world.process_at_rank(0);
    let mut model: Vec<f64> = (0..values).map(|i| (i % 17) as f64 * 0.25).collect();
    let mut result = vec![0.0; values];
    let mut all = vec![0.0; if rank == 0 { values * size } else { 0 }];
    let mut sum = vec![0.0; values];
    let mut times = Vec::with_capacity(iterations);
    let mut ok = true;
    // each worker's result is its model plus its rank: the sum is N·θ + N(N+1)/2
    let n = (size - 1) as f64;
    let offset = n * (n + 1.0) / 2.0;
    let watch = watch(rank, "`outrun bench floor` (MPI_Bcast, MPI_Gather)", iterations as u64, "iterations");
    world.barrier();
    for k in 0..iterations {
        watch.done(k as u64);
        let t0 = Instant::now();
        root.broadcast_into(&mut model[..]);
        if rank == 0 {
            // rank 0's own block (zeros) is gathered and left out of the sum
            root.gather_into_root(&result[..], &mut all[..]);
            sum.iter_mut().for_each(|s| *s = 0.0);
            for block in all.chunks_exact(values).skip(1) {
                sum.iter_mut().zip(block).for_each(|(s, b)| *s += b);
            }
            ok &= sum.iter().zip(&model).all(|(s, m)| (s - (n * m + offset)).abs() <= 1e-9 * s.abs().max(1.0));
            model.iter_mut().zip(&sum).for_each(|(m, s)| *m -= 1e-6 * s);
            times.push(t0.elapsed().as_secs_f64());
        } else {
            result.iter_mut().zip(&model).for_each(|(r, m)| *r = m + rank as f64);
            root.gather_into(&result[..]);
        }
    }
    watch.done(iterations as u64);
    let mut agree = false;
    world.all_reduce_into(&ok, &mut agree, SystemOperation::logical_and());
    drop(watch);
    let mean_s = times.iter().sum::<f64>() / times.len().max(1) as f64;
    let median_s = if times.is_empty() { 0.0 } else { outrun_runlog::quantile(&times, 0.5) };
    (rank, size, FloorRow { values, iterations, median_s, mean_s, agree })
}

/// Result of [`group_broadcasts`].
#[derive(Clone, Debug)]
pub struct GroupsRow {
    /// Groups (subsets of r + 1 ranks).
    pub groups: usize,
    /// Broadcasts done (each member of each group broadcast once to its group).
    pub broadcasts: usize,
    /// Seconds for all of them (slowest rank).
    pub seconds: f64,
    /// Whether every member received exactly what every root sent.
    pub correct: bool,
}

/// Every subset of `r + 1` ranks becomes a sub-communicator (created once, with
/// `MPI_Comm_split`, members only); each member broadcasts `values` doubles to its group in
/// turn and every receiver checks what arrived. Collective; rank 0 gets the row.
pub fn group_broadcasts(r: usize, values: usize) -> (usize, GroupsRow) {
    let universe = mpi::initialize().expect("MPI initialises once");
    let world = universe.world();
    let comm = Comm::new(&world);
    let (rank, k) = (comm.rank, comm.size);
    let subsets: Vec<Vec<usize>> = combinations(k, (r + 1).min(k)).collect();
    let watch = watch(rank, "`outrun bench groups` (MPI_Comm_split, MPI_Bcast)", subsets.len() as u64, "groups");
    let mut groups: Vec<Option<Comm>> = subsets
        .iter()
        .enumerate()
        .map(|(g, members)| comm.split(members.contains(&rank).then_some(g as i32), rank as i32))
        .collect();
    let expect = |g: usize, root: usize, i: usize| (g * 1000 + root * 10) as f64 + i as f64 * 0.5;
    let t0 = Instant::now();
    let mut ok = true;
    let mut count = 0;
    for (g, sub) in groups.iter_mut().enumerate() {
        watch.done(g as u64);
        let Some(sub) = sub.as_mut() else { continue };
        for root in 0..sub.size {
            let mut buf: Vec<f64> =
                if sub.rank == root { (0..values).map(|i| expect(g, root, i)).collect() } else { vec![0.0; values] };
            sub.broadcast(root, &mut buf);
            ok &= buf.iter().enumerate().all(|(i, &v)| v == expect(g, root, i));
            count += 1;
        }
    }
    let mine = t0.elapsed().as_secs_f64();
    let mut worst = 0.0;
    world.all_reduce_into(&mine, &mut worst, SystemOperation::max());
    let mut all_ok = false;
    world.all_reduce_into(&ok, &mut all_ok, SystemOperation::logical_and());
    let mut total = 0u64;
    world.all_reduce_into(&(count as u64), &mut total, SystemOperation::sum());
    drop(watch);
    for c in groups.into_iter().flatten() {
        c.free();
    }
    (
        rank,
        GroupsRow {
            groups: subsets.len(),
            broadcasts: total as usize / (r + 1).min(k),
            seconds: worst,
            correct: all_ok,
        },
    )
}
