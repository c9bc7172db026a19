//! Throughput of the gradient kernel, beside the memory bandwidth measured in the same run.

use std::time::Instant;

use outrun_plan::config::Loss;

use crate::data::Rows;
use crate::kernel::gradient;

/// Result of [`kernel_vs_memory`].
#[derive(Clone, Debug)]
pub struct KernelBench {
    pub bytes: usize,
    /// GB/s of data read by the gradient kernel (features + labels + coefficients).
    pub kernel_gbs: f64,
    /// GB/s of a plain read of an array of the same size (8 independent sums).
    pub read_gbs: f64,
}

fn best_of(reps: usize, mut f: impl FnMut() -> f64) -> (f64, f64) {
    let mut best = f64::INFINITY;
    let mut sink = 0.0;
    for _ in 0..reps {
        let t0 = Instant::now();
        sink += f();
        best = best.min(t0.elapsed().as_secs_f64());
    }
    (best, sink)
}

/// Sum of a slice with eight accumulators: the read-bandwidth reference.
pub fn read_sum(a: &[f64]) -> f64 {
    let mut acc = [0.0f64; 8];
    let chunks = a.chunks_exact(8);
    let rem: f64 = chunks.remainder().iter().sum();
    for c in chunks {
        for l in 0..8 {
            acc[l] += c[l];
        }
    }
    acc.iter().sum::<f64>() + rem
}

/// Gradient kernel on a `d × p` data set larger than the caches vs reading the same bytes.
pub fn kernel_vs_memory(d: usize, p: usize, reps: usize, loss: Loss) -> KernelBench {
    let mut rows = Rows::new(p);
    rows.x = (0..d * p).map(|i| ((i % 1013) as f64) * 1e-3 - 0.5).collect();
    rows.y = (0..d).map(|i| (i % 2) as f64).collect();
    let coef = vec![1.0; d];
    let theta: Vec<f64> = (0..p).map(|k| (k % 7) as f64 * 1e-3).collect();
    let mut g = vec![0.0; p];
    let (t_kernel, s1) = best_of(reps, || gradient(&rows, &coef, &theta, loss, &mut g));
    let (t_read, s2) = best_of(reps, || read_sum(&rows.x));
    std::hint::black_box((s1, s2, &g));
    let bytes = 8 * (d * p + 2 * d);
    KernelBench { bytes, kernel_gbs: bytes as f64 / t_kernel / 1e9, read_gbs: (8 * d * p) as f64 / t_read / 1e9 }
}
