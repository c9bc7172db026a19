//! Micro-benchmarks that need MPI: our ring all-reduce against `MPI_Allreduce`, measured in the
//! same job, alternating, on the same buffers.

use std::time::Instant;

use mpi::collective::SystemOperation;
use mpi::traits::*;

use crate::ring::ring_allreduce;
use crate::transport::Comm;

/// One vector size: seconds per all-reduce (slowest rank, best of the rounds).
#[derive(Clone, Debug)]
pub struct RingRow {
    pub bytes: usize,
    pub reps: usize,
    pub ring_s: f64,
    pub mpi_s: f64,
    /// Whether both methods produced the same sums.
    pub agree: bool,
}

/// Time `reps` repetitions of `f` on every rank; returns the slowest rank's seconds per rep.
fn timed(world: &mpi::topology::SimpleCommunicator, reps: usize, mut f: impl FnMut()) -> f64 {
    world.barrier();
    let t0 = Instant::now();
    for _ in 0..reps {
        f();
    }
    let mine = t0.elapsed().as_secs_f64() / reps as f64;
    let mut worst = 0.0;
    world.all_reduce_into(&mine, &mut worst, SystemOperation::max());
    worst
}

/// Ring vs `MPI_Allreduce` for each size (bytes), `rounds` alternating rounds of about
/// `target_s` seconds each. Collective; rank 0 gets the rows.
pub fn ring_vs_mpi(sizes: &[usize], rounds: usize, target_s: f64, poll_us: u64) -> (usize, usize, Vec<RingRow>) {
    let universe = mpi::initialize().expect("MPI initialises once");
    let world = universe.world();
    let mut comm = Comm::new(&world);
    let (rank, size) = (comm.rank, comm.size);
    let mut rows = Vec::new();
    for &bytes in sizes {
        let n = (bytes / 8).max(size);
        let input: Vec<f64> = (0..n).map(|i| ((i * 7 + rank * 13) % 101) as f64 * 0.5).collect();
        let mut buf = input.clone();
        let mut scratch = Vec::new();
        let mut out = vec![0.0; n];
        // calibrate the repetition count on one MPI_Allreduce, agreed by all ranks
        let one = timed(&world, 1, || comm.allreduce_sum(&input, &mut out));
        let mut reps = ((target_s / one.max(1e-7)) as usize).clamp(1, 10_000) as u64;
        world.process_at_rank(0).broadcast_into(&mut reps);
        let reps = reps as usize;
        let (mut best_ring, mut best_mpi) = (f64::INFINITY, f64::INFINITY);
        for _ in 0..rounds {
            let r = timed(&world, reps, || {
                buf.copy_from_slice(&input);
                ring_allreduce(&mut comm, &mut buf, &mut scratch, poll_us, None);
            });
            let m = timed(&world, reps, || {
                comm.allreduce_sum(&input, &mut out);
            });
            best_ring = best_ring.min(r);
            best_mpi = best_mpi.min(m);
        }
        let agree_here = buf.iter().zip(&out).all(|(a, b)| (a - b).abs() <= 1e-9 * b.abs().max(1.0));
        let mut agree_all = false;
        world.all_reduce_into(&agree_here, &mut agree_all, SystemOperation::logical_and());
        rows.push(RingRow { bytes, reps, ring_s: best_ring, mpi_s: best_mpi, agree: agree_all });
    }
    (rank, size, rows)
}
