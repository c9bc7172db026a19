//! Ring schemes: every worker computes its gradient, the workers all-reduce, every worker
//! applies the same update. No master is in the data path; rank 0 (worker 1) keeps the book.
//!
//! [`ring_allreduce`] is the bandwidth-optimal ring: the vector is cut into N segments; in
//! reduce-scatter step k (k = 0..N−2) rank r sends segment (r − k) mod N to its right neighbour
//! and adds the segment (r − k − 1) mod N received from its left one; after N − 1 steps rank r
//! owns the full sum of segment (r + 1) mod N; the N − 1 all-gather steps pass the finished
//! segments around the ring. Each rank sends 2(N − 1)/N of the vector in total.

use std::time::{Duration, Instant};

use outrun_plan::alloc::split_sizes;
use outrun_plan::Shape;
use outrun_runlog::{Book, IterationRecord, Summary};
use outrun_workloads::kernel::gradient;
use outrun_workloads::metrics::gd_step;
use serde_json::json;

use crate::error::EngineError;
use crate::protocol::RING;
use crate::setup::LocalData;
use crate::transport::Comm;
use crate::{Env, Progress};

/// Disjoint views of two non-overlapping ranges of `buf`: (read-only a, mutable b).
fn split_two(buf: &mut [f64], a: std::ops::Range<usize>, b: std::ops::Range<usize>) -> (&[f64], &mut [f64]) {
    assert!(a.end <= b.start || b.end <= a.start, "overlapping segments");
    if a.start < b.start {
        let (lo, hi) = buf.split_at_mut(b.start);
        (&lo[a], &mut hi[..b.end - b.start])
    } else {
        let (lo, hi) = buf.split_at_mut(a.start);
        (&hi[..a.end - a.start], &mut lo[b])
    }
}

/// How long a ring step keeps yielding before it sleeps: the neighbours are in the same step,
/// so the next segment is usually microseconds away.
pub const RING_SPIN: Duration = Duration::from_millis(2);

/// Ring all-reduce (sum) of `buf` over all ranks of `comm`, in place. `scratch` is resized as
/// needed. Aborts the job if a step waits past `until`.
pub fn ring_allreduce(comm: &mut Comm, buf: &mut [f64], scratch: &mut Vec<f64>, poll_us: u64, until: Option<Instant>) {
    let n = comm.size;
    if n == 1 {
        return;
    }
    let r = comm.rank;
    let (right, left) = ((r + 1) % n, (r + n - 1) % n);
    let sizes = split_sizes(buf.len(), n);
    let mut offs = vec![0; n + 1];
    for i in 0..n {
        offs[i + 1] = offs[i] + sizes[i];
    }
    let seg = |i: usize| offs[i]..offs[i + 1];
    scratch.resize(sizes[0], 0.0);
    let what = |phase: &'static str, k: usize| move || format!("ring all-reduce: rank {r} waited past run.deadline in {phase} step {k} (left neighbour rank {left})");
    for k in 0..n - 1 {
        let (s, rv) = ((r + n - k) % n, (r + 2 * n - k - 1) % n);
        let recv = &mut scratch[..sizes[rv]];
        comm.sendrecv(&buf[seg(s)], right, recv, left, RING, poll_us, RING_SPIN, until, &what("reduce-scatter", k));
        for (b, x) in buf[seg(rv)].iter_mut().zip(recv.iter()) {
            *b += x;
        }
    }
    for k in 0..n - 1 {
        let (s, rv) = ((r + 1 + n - k) % n, (r + n - k) % n);
        let (send, recv) = split_two(buf, seg(s), seg(rv));
        comm.sendrecv(send, right, recv, left, RING, poll_us, RING_SPIN, until, &what("all-gather", k));
    }
}

pub(crate) fn run_ring(mut env: Env<'_>, data: LocalData, progress: &mut dyn Progress, setup_s: f64) -> Result<Option<Summary>, EngineError> {
    let shared = env.shared;
    let cfg = &shared.config;
    let plan = &shared.plan;
    let use_mpi = matches!(plan.shape, Shape::Ring { mpi: true });
    let (p, rank) = (shared.features, env.comm.rank);
    let me = &plan.nodes[rank];
    let worker = me.worker.expect("ring ranks are workers");
    let io = |e: std::io::Error| EngineError::Run(format!("cannot write to the run directory: {e}"));
    let mut book = if rank == 0 { Some(Book::new(&shared.run_info(), env.clock.now()).map_err(io)?) } else { None };
    let all_workers: Vec<usize> = (1..=plan.workers).collect();
    let mut theta = vec![0.0; p];
    let mut buf = vec![0.0; p + 1];
    let mut scratch = Vec::new();
    if rank == 0 {
        progress.begin(cfg.run.iterations);
    }
    for t in 0..cfg.run.iterations {
        let start = env.clock.now();
        let c0_i = Instant::now();
        let loss_local = gradient(&data.rows, &data.coef, &theta, cfg.model.loss, &mut buf[..p]);
        buf[p] = loss_local;
        let measured = c0_i.elapsed().as_secs_f64();
        let c1 = env.clock.now();
        let timing = plan.stragglers.compute_time(worker, t, me.load(), measured);
        let ready_i = c0_i + Duration::from_secs_f64(timing.target.max(measured));
        let now = Instant::now();
        if ready_i > now {
            std::thread::sleep(ready_i - now);
        }
        let ready = env.clock.now();
        if use_mpi {
            scratch.resize(p + 1, 0.0);
            scratch.copy_from_slice(&buf);
            env.comm.allreduce_sum(&scratch, &mut buf);
        } else {
            let until = Instant::now() + Duration::from_secs_f64(cfg.run.deadline);
            ring_allreduce(&mut env.comm, &mut buf, &mut scratch, cfg.engine.poll_us, Some(until));
        }
        let reduced = env.clock.now();
        let loss = buf[p];
        gd_step(&mut theta, &buf[..p], plan.samples as f64, &cfg.model, t);
        env.log.json(&json!({"ev": "iter", "t": t, "worker": worker, "start": start, "compute_start": start, "compute_end": c1,
            "target": timing.target, "injected": timing.injected, "straggler": timing.straggler, "ready": ready, "reduced": reduced}));
        if !theta.iter().all(|v| v.is_finite()) || !loss.is_finite() {
            // Every rank holds the same reduced vector, so every rank stops here together.
            let msg = format!("iteration {t}: the model diverged (non-finite θ or loss); lower model.lr (now {})", cfg.model.lr);
            return Err(if rank == 0 { EngineError::Run(msg) } else { EngineError::Aborted });
        }
        if let Some(book) = book.as_mut() {
            let wall = book.record(IterationRecord {
                t,
                end: reduced,
                theta: Some(&theta),
                loss,
                used: &all_workers,
                coverage: 1.0,
                exact: true,
                residual: 0.0,
                late_total: 0,
            });
            progress.tick(t, wall, loss);
        }
    }
    // MPI_Allreduce moves its data inside the library, where our counters cannot see it.
    let counted = |v: u64| if use_mpi { serde_json::Value::Null } else { json!(v) };
    env.log.json(&json!({"ev": "shutdown", "kind": "stop", "at": env.clock.now(), "sent_msgs": counted(env.comm.sent_msgs),
        "sent_bytes": counted(env.comm.sent_bytes), "recv_msgs": counted(env.comm.recv_msgs), "recv_bytes": counted(env.comm.recv_bytes), "clean": true}));
    match book {
        Some(book) => {
            progress.end();
            Ok(Some(book.finish(&shared.run_info(), &theta, setup_s, 0, env.comm.recv_bytes).map_err(io)?))
        }
        None => Ok(None),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn split_two_gives_disjoint_views() {
        let mut v: Vec<f64> = (0..10).map(f64::from).collect();
        let (a, b) = split_two(&mut v, 0..3, 5..8);
        assert_eq!(a, &[0.0, 1.0, 2.0]);
        b[0] = 50.0;
        let (a, b) = split_two(&mut v, 5..8, 0..2);
        assert_eq!(a, &[50.0, 6.0, 7.0]);
        assert_eq!(b, &[0.0, 1.0]);
    }
}
