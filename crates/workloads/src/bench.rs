//! Throughput of the gradient kernel, beside the memory bandwidth and the BLAS path measured in
//! the same run.

use std::time::Instant;

use outrun_config::Loss;

use crate::blas::{gemv, Op};
use crate::data::Rows;
use crate::kernel::gradient;

/// Result of [`kernel_vs_memory`].
#[derive(Clone, Debug)]
pub struct KernelBench {
    /// Bytes the kernel reads.
    pub bytes: usize,
    /// GB/s of data read by the gradient kernel (features + labels + coefficients).
    pub kernel_gbs: f64,
    /// GB/s of a plain read of an array of the same size (8 independent sums).
    pub read_gbs: f64,
    /// GB/s of the same gradient computed with two BLAS `dgemv` calls (z = Xθ, g = Xᵀr):
    /// the design card's library path, which reads X twice.
    pub blas_gbs: f64,
    /// GB/s of the kernel yielding the core every `PACE_ROWS` rows (what ranks do on a host
    /// with more ranks than cores), here with nothing else to run.
    pub paced_gbs: f64,
    /// Threads of [`read_all_gbs`](Self::read_all_gbs): the host's cores.
    pub cores: usize,
    /// GB/s of the same plain read split over one thread per core: the aggregate bandwidth that
    /// bounds an iteration whose workers share this host's memory.
    pub read_all_gbs: f64,
}

/// The weighted gradient with BLAS: z = Xθ (dgemv), r_j = c_j·ℓ'(z_j), g = Xᵀr (dgemv).
pub fn blas_gradient(rows: &Rows, coef: &[f64], theta: &[f64], loss: Loss, g: &mut [f64]) -> f64 {
    let (n, p) = (rows.len(), rows.p());
    let mut z = vec![0.0; n];
    gemv(Op::n(rows.features(), n, p), theta, &mut z);
    let mut total = 0.0;
    for j in 0..n {
        let (l, slope) = crate::kernel::loss_and_slope(loss, z[j], rows.y[j]);
        total += coef[j] * l;
        z[j] = coef[j] * slope;
    }
    gemv(Op::t(rows.features(), n, p), &z, g);
    total
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

/// [`read_sum`] of `a` cut into `threads` contiguous pieces, one per thread at once.
pub fn read_sum_parallel(a: &[f64], threads: usize) -> f64 {
    let piece = a.len().div_ceil(threads.max(1)).max(1);
    std::thread::scope(|s| {
        let handles: Vec<_> = a.chunks(piece).map(|c| s.spawn(move || read_sum(c))).collect();
        handles.into_iter().map(|h| h.join().unwrap_or(0.0)).sum()
    })
}

/// Gradient kernel on a `d × p` data set larger than the caches vs reading the same bytes.
pub fn kernel_vs_memory(d: usize, p: usize, reps: usize, loss: Loss) -> KernelBench {
    let rows = Rows::from_vecs(
        p,
        (0..d * p).map(|i| ((i % 1013) as f64) * 1e-3 - 0.5).collect(),
        (0..d).map(|i| (i % 2) as f64).collect(),
    );
    let coef = vec![1.0; d];
    let theta: Vec<f64> = (0..p).map(|k| (k % 7) as f64 * 1e-3).collect();
    let mut g = vec![0.0; p];
    let (t_kernel, s1) = best_of(reps, || gradient(&rows, &coef, &theta, loss, &mut g));
    let (t_read, s2) = best_of(reps, || read_sum(rows.features()));
    let (t_blas, s3) = best_of(reps, || blas_gradient(&rows, &coef, &theta, loss, &mut g));
    let (t_paced, s4) = best_of(reps, || {
        crate::kernel::gradient_paced(&rows, &coef, &theta, loss, &mut g, crate::PACE_ROWS, &mut std::thread::yield_now)
    });
    let cores = std::thread::available_parallelism().map_or(1, |n| n.get());
    let (t_read_all, s5) = best_of(reps, || read_sum_parallel(rows.features(), cores));
    std::hint::black_box((s1, s2, s3, s4, s5, &g));
    let bytes = 8 * (d * p + 2 * d);
    KernelBench {
        bytes,
        kernel_gbs: bytes as f64 / t_kernel / 1e9,
        read_gbs: (8 * d * p) as f64 / t_read / 1e9,
        blas_gbs: bytes as f64 / t_blas / 1e9,
        paced_gbs: bytes as f64 / t_paced / 1e9,
        cores,
        read_all_gbs: (8 * d * p) as f64 / t_read_all / 1e9,
    }
}

/// One row of [`decode_times`]: decoding a CommFR-GC group at the master.
#[derive(Clone, Debug)]
pub struct DecodeRow {
    /// The code (`gaussian`, `systematic`, `ldpc`).
    pub code: &'static str,
    /// Group size N (K = N/2).
    pub n: usize,
    /// Positions erased (the slowest workers, never heard from).
    pub erased: usize,
    /// Arrival sets tried.
    pub sets: usize,
    /// Of those, how many decoded (peeling may stall; MDS codes always decode).
    pub decoded: usize,
    /// Median seconds from the first arrival to the decision, coefficients included, when the
    /// set is new (the aggregator caches a set's coefficients for later iterations).
    pub cold_s: f64,
    /// The same for a set seen before.
    pub warm_s: f64,
    /// Median seconds to form the gradient from the arrivals (the combination over `len`
    /// values).
    pub apply_s: f64,
    /// Worst relative error of the decoded gradient.
    pub max_rel_err: f64,
    /// Why the plan refused this code (its decoding would not be exact), if it did.
    pub refused: Option<String>,
}

/// Decoding time versus group size: for each code and N in `sizes`, a CommFR-GC group of N
/// workers (s = m = N/2) whose master receives the uploads of a random N − `erased` of them
/// (⌈N/4⌉ erased) in random order, through the runtime's own aggregator and combination code,
/// for gradients of `len` values; `sets` arrival sets per size.
pub fn decode_times(sizes: &[usize], len: usize, sets: usize) -> Result<Vec<DecodeRow>, String> {
    use outrun_codes::Rng;
    use outrun_proto::roles::{aggregator, encoder, Combination};
    let mut rows = vec![];
    for code in ["gaussian", "systematic", "ldpc"] {
        for &n in sizes {
            let text = format!(
                "[run]\nname='decode'\niterations=1\n[data]\nkind='linear-synthetic'\nsamples={n}\nfeatures=1\n[model]\nloss='least-squares'\nlr=0.1\n[scheme]\nkind='cegc'\nworkers={n}\ns={}\nm={}\ncode='{code}'\n",
                n / 2,
                n / 2
            );
            let cfg = outrun_config::parse(&text, &[]).map_err(|e| format!("N = {n}, {code}: {e}"))?;
            let erased = n.div_ceil(4);
            let plan = match outrun_plan::build(&cfg, outrun_plan::Shape { samples: n, features: 1 }) {
                Ok(p) => p,
                Err(e) if e.field == "scheme.code" && e.message.contains("not exact") => {
                    let (nan, refused) = (f64::NAN, Some(e.to_string()));
                    rows.push(DecodeRow {
                        code,
                        n,
                        erased,
                        sets: 0,
                        decoded: 0,
                        cold_s: nan,
                        warm_s: nan,
                        apply_s: nan,
                        max_rel_err: nan,
                        refused,
                    });
                    continue;
                }
                Err(e) => return Err(format!("N = {n}, {code}: {e}")),
            };
            let mut rng = Rng::from_key(&[0xdec0de, n as u64]);
            let g: Vec<f64> = (0..len).map(|_| rng.normal()).collect();
            let scale = g.iter().fold(0.0f64, |a, x| a.max(x.abs()));
            // every worker of the group holds the group's data: its upload encodes g
            let uploads: Vec<Vec<f64>> = (1..=n)
                .map(|r| {
                    let c = encoder(&plan, r, len).round(0);
                    Combination::evaluate(c.len, &c.terms, std::slice::from_ref(&g), &[])
                })
                .collect();
            let mut agg = aggregator(&plan, 0, len);
            let (mut cold, mut warm, mut apply) = (vec![], vec![], vec![]);
            let (mut decoded, mut worst) = (0, 0.0f64);
            for k in 0..sets {
                let mut order = rng.permutation(n);
                order.truncate(n - erased);
                for pass in 0..2 {
                    agg.begin(k as u64 * 2 + pass);
                    let start = Instant::now();
                    let mut accepted = vec![];
                    for &j in &order {
                        if agg.offer(j, 0) {
                            accepted.push(j);
                        }
                        if agg.satisfied() {
                            break;
                        }
                    }
                    if !agg.satisfied() {
                        break; // peeling stalled: this set does not decode
                    }
                    let comb = agg.combine();
                    let took = start.elapsed().as_secs_f64();
                    if pass == 0 {
                        cold.push(took);
                        decoded += 1;
                    } else {
                        warm.push(took);
                        let arrivals: Vec<Vec<f64>> = accepted.iter().map(|&j| uploads[j].clone()).collect();
                        let start = Instant::now();
                        let out = Combination::evaluate(comb.len, &comb.terms, &[] as &[Vec<f64>], &arrivals);
                        apply.push(start.elapsed().as_secs_f64());
                        worst = worst.max(out.iter().zip(&g).fold(0.0f64, |a, (x, y)| a.max((x - y).abs())) / scale);
                    }
                }
            }
            rows.push(DecodeRow {
                code,
                n,
                erased,
                sets,
                decoded,
                cold_s: median(&cold),
                warm_s: median(&warm),
                apply_s: median(&apply),
                max_rel_err: worst,
                refused: None,
            });
        }
    }
    Ok(rows)
}

fn median(v: &[f64]) -> f64 {
    outrun_runlog::quantile(v, 0.5)
}

/// One row of [`row_decode_times`].
#[derive(Clone, Debug)]
pub struct RowDecodeRow {
    /// `gaussian`, `systematic` or `lt`.
    pub code: &'static str,
    /// Source rows r.
    pub r: usize,
    /// Coded rows received.
    pub received: usize,
    /// Unknowns solved densely (r for Gaussian, the missing systematic entries, 0 for LT).
    pub solved: usize,
    /// Median seconds to build the decoder of a new received set (coefficients, factorization
    /// or peeling schedule).
    pub cold_s: f64,
    /// Median seconds to decode y from the received values with it.
    pub apply_s: f64,
    /// Median seconds of LAPACK's own LU factorization (`dgetrf` through `ndarray-linalg`) of a
    /// random `solved` × `solved` matrix, in the same invocation (0 when nothing is solved).
    pub lapack_s: f64,
    /// Worst relative error ‖ŷ − y‖/‖y‖.
    pub max_rel_err: f64,
    /// Worst condition estimate of the dense solve, or the peeling schedule's round-off growth
    /// bound.
    pub cond: f64,
}

/// Decoding time of coded mat-vec versus r: for each code and r, `sets` random received sets
/// (r of 1.5r coded rows for the MDS codes; every one of r(1 + `overhead`) LT rows, shuffled),
/// decoded by the runtime's own decoder; beside LAPACK's LU of the same dense size.
pub fn row_decode_times(sizes: &[usize], lt_sizes: &[usize], overhead: f64, sets: usize) -> Vec<RowDecodeRow> {
    use ndarray_linalg::Factorize;
    use outrun_codes::{Rng, RowCode, RowCodeKind};
    let mut out = vec![];
    let cases =
        sizes.iter().flat_map(|&r| [("gaussian", r), ("systematic", r)]).chain(lt_sizes.iter().map(|&r| ("lt", r)));
    for (name, r) in cases {
        let (kind, n) = match name {
            "gaussian" => (RowCodeKind::Gaussian, r + r / 2),
            "systematic" => (RowCodeKind::Systematic, r + r / 2),
            _ => (RowCodeKind::Lt { c: 0.03, delta: 0.1 }, (r as f64 * (1.0 + overhead)).ceil() as usize),
        };
        let code = RowCode::new(kind, r, n, 0x5eed ^ r as u64);
        let mut rng = Rng::from_key(&[0x40f5, r as u64]);
        let y: Vec<f64> = (0..r).map(|_| rng.normal()).collect();
        let norm = y.iter().map(|v| v * v).sum::<f64>().sqrt();
        let (mut cold, mut apply, mut lapack) = (vec![], vec![], vec![]);
        let (mut worst, mut solved, mut received_n, mut cond) = (0.0f64, 0, 0, 0.0f64);
        for k in 0..sets {
            let mut received = rng.permutation(n);
            if name != "lt" {
                received.truncate(r);
            }
            received_n = received.len();
            let z = code.values(&received, &y);
            let start = Instant::now();
            let Ok(dec) = code.decoder(&received) else { continue };
            cold.push(start.elapsed().as_secs_f64());
            cond = cond.max(dec.cond);
            let start = Instant::now();
            let got = dec.apply(&z);
            apply.push(start.elapsed().as_secs_f64());
            worst = worst.max(got.iter().zip(&y).map(|(a, b)| (a - b) * (a - b)).sum::<f64>().sqrt() / norm);
            solved = match name {
                "gaussian" => r,
                "systematic" => received.iter().filter(|&&j| j >= r).count().min(r),
                _ => 0,
            };
            if solved > 0 && k < 3 {
                let m = ndarray::Array2::from_shape_fn((solved, solved), |_| rng.normal());
                let start = Instant::now();
                let lu = m.factorize().expect("a random matrix factorizes");
                lapack.push(start.elapsed().as_secs_f64());
                drop(lu);
            }
        }
        let lapack_s = if lapack.is_empty() { 0.0 } else { median(&lapack) };
        out.push(RowDecodeRow {
            code: name,
            r,
            received: received_n,
            solved,
            cold_s: median(&cold),
            apply_s: median(&apply),
            lapack_s,
            max_rel_err: worst,
            cond,
        });
    }
    out
}

/// One row of [`mlp_rates`].
#[derive(Clone, Debug)]
pub struct MlpBench {
    /// Samples in the batch.
    pub batch: usize,
    /// Floating-point operations of one batch gradient (the products' 2·m·n·k).
    pub flops: f64,
    /// Seconds of the network's batch gradient (best of the repetitions).
    pub gradient_s: f64,
    /// Seconds of the same `dgemm` calls alone, on the same shapes (best of the repetitions).
    pub dgemm_s: f64,
}

/// The softmax network of widths `sizes` (`[inputs, hidden…, classes]`): its batch gradient
/// against the `dgemm` calls it makes, timed alone on the same shapes, for each batch size (one
/// thread).
pub fn mlp_rates(sizes: &[usize], batches: &[usize], reps: usize) -> Vec<MlpBench> {
    use crate::blas::{gemm, Op};
    use crate::net::Net;
    use outrun_config::ModelConfig;
    let p = sizes[0];
    let model = ModelConfig {
        classes: Some(*sizes.last().expect("sizes")),
        hidden: sizes[1..sizes.len() - 1].to_vec(),
        ..ModelConfig::linear(Loss::Softmax, 0.1)
    };
    let net = Net::new(&model, p);
    let theta = net.init(Some(outrun_config::Init::He), 1, p);
    let classes = sizes[sizes.len() - 1];
    batches
        .iter()
        .map(|&b| {
            let rows = Rows::from_vecs(
                p,
                (0..b * p).map(|i| ((i % 257) as f64) / 257.0).collect(),
                (0..b).map(|i| (i % classes) as f64).collect(),
            );
            let coef = vec![1.0; b];
            let mut g = vec![0.0; net.len(p)];
            let (gradient_s, s1) = best_of(reps, || net.gradient(&rows, &coef, &theta, &mut g, usize::MAX, &mut || {}));
            // the same products: per layer Z = A·Wᵀ, dW = δᵀ·A, and (but the first) δ·W, in
            // blocks of net::BLOCK rows
            let widest = *sizes.iter().max().expect("sizes");
            let (a, d) = (vec![0.5; crate::net::BLOCK * widest], vec![0.25; crate::net::BLOCK * widest]);
            let mut out = vec![0.0; crate::net::BLOCK * widest];
            let mut gw = vec![0.0; widest * widest];
            let mut flops = 0.0;
            for w in sizes.windows(2) {
                flops += 4.0 * (b * w[0] * w[1]) as f64;
            }
            for w in sizes[1..].windows(2) {
                flops += 2.0 * (b * w[0] * w[1]) as f64;
            }
            let (dgemm_s, s2) = best_of(reps, || {
                for start in (0..b).step_by(crate::net::BLOCK) {
                    let n = crate::net::BLOCK.min(b - start);
                    for (k, w) in sizes.windows(2).enumerate() {
                        let (i, o) = (w[0], w[1]);
                        let wt = &theta[..o * i];
                        gemm(1.0, Op::n(&a[..n * i], n, i), Op::t(wt, o, i), 1.0, &mut out[..n * o]);
                        gemm(1.0, Op::t(&d[..n * o], n, o), Op::n(&a[..n * i], n, i), 1.0, &mut gw[..o * i]);
                        if k > 0 {
                            gemm(1.0, Op::n(&d[..n * o], n, o), Op::n(wt, o, i), 0.0, &mut out[..n * i]);
                        }
                    }
                }
                out[0]
            });
            std::hint::black_box((s1, s2, &g));
            MlpBench { batch: b, flops, gradient_s, dgemm_s }
        })
        .collect()
}

/// Robust decoding's screening against the plain decode of the same results, for one size.
#[derive(Clone, Debug, PartialEq)]
pub struct ScreenBench {
    /// Workers n, stragglers s, corrupted results located f.
    pub n: usize,
    /// Stragglers the code tolerates.
    pub s: usize,
    /// Corrupted results located.
    pub f: usize,
    /// Values per result.
    pub len: usize,
    /// Median seconds to decode n − s results (the combination over `len` values): the
    /// baseline, what a master without `byzantine` does.
    pub decode_s: f64,
    /// Median seconds to screen all n results when none is corrupted.
    pub clean_s: f64,
    /// Median seconds to screen them when one (a different one each repetition) is negated.
    pub fault_s: f64,
}

/// Screening time (`outrun_codes::robust_screen`) of a random cyclic gradient code's n results
/// of `len` values, clean and with one negated, beside the plain decode's combination of n − s
/// of them; medians of `reps` repetitions.
pub fn screen_times(n: usize, s: usize, f: usize, lens: &[usize], reps: usize) -> Result<Vec<ScreenBench>, String> {
    use outrun_codes::{decode, robust_screen, GradientCode, Rng};
    let (code, _) = GradientCode::cyclic(n, s, 1, 10).map_err(|e| e.to_string())?;
    let median = |v: Vec<f64>| outrun_runlog::quantile(&v, 0.5);
    let rows: Vec<usize> = (0..n).collect();
    let survivors: Vec<usize> = (0..n - s).collect();
    let a = decode(&code.b, &survivors).coeffs;
    let mut out = vec![];
    for &len in lens {
        let mut rng = Rng::from_key(&[len as u64]);
        let g = ndarray::Array2::from_shape_fn((n, len), |_| rng.normal());
        let honest: Vec<Vec<f64>> = code.b.dot(&g).rows().into_iter().map(|r| r.to_vec()).collect();
        let (mut dec, mut clean, mut fault) = (vec![], vec![], vec![]);
        for rep in 0..reps.max(1) {
            let t0 = Instant::now();
            let mut sum = vec![0.0; len];
            for &i in &survivors {
                sum.iter_mut().zip(&honest[i]).for_each(|(acc, v)| *acc += a[i] * v);
            }
            std::hint::black_box(&sum);
            dec.push(t0.elapsed().as_secs_f64());
            let values: Vec<&[f64]> = honest.iter().map(Vec::as_slice).collect();
            let t0 = Instant::now();
            let ok = robust_screen(&code.b, &rows, &values, f).map_err(|e| format!("clean results refused: {e:?}"))?;
            clean.push(t0.elapsed().as_secs_f64());
            if !ok.excluded.is_empty() {
                return Err(format!("clean results had {:?} excluded", ok.excluded));
            }
            let bad = rep % n;
            let mut sent = honest.clone();
            sent[bad].iter_mut().for_each(|v| *v = -*v);
            let values: Vec<&[f64]> = sent.iter().map(Vec::as_slice).collect();
            let t0 = Instant::now();
            let found =
                robust_screen(&code.b, &rows, &values, f).map_err(|e| format!("a fault was not located: {e:?}"))?;
            fault.push(t0.elapsed().as_secs_f64());
            if found.excluded != vec![bad] {
                return Err(format!("excluded {:?} instead of {bad}", found.excluded));
            }
        }
        out.push(ScreenBench { n, s, f, len, decode_s: median(dec), clean_s: median(clean), fault_s: median(fault) });
    }
    Ok(out)
}

#[cfg(test)]
mod screen_tests {
    #[test]
    fn the_screening_bench_locates_every_negated_result() {
        let rows = super::screen_times(6, 2, 1, &[50, 5000], 6).unwrap();
        assert_eq!(rows.len(), 2);
        assert!(rows.iter().all(|r| r.decode_s > 0.0 && r.clean_s > 0.0 && r.fault_s > 0.0));
    }
}
