//! The simulator against the papers' latency models (issue: simulator checks).

use outrun_config::parse;
use outrun_config::Config;
use outrun_sim::{simulate, Math, Options, Stats};

fn config(text: &str, sets: &[&str]) -> Config {
    parse(text, &sets.iter().map(|s| s.to_string()).collect::<Vec<_>>()).unwrap()
}

fn run(cfg: &Config, trials: usize) -> Stats {
    let plan = outrun_workloads::resolve(cfg).unwrap();
    simulate(&plan, &cfg.to_toml(), &Options { trials, math: Math::Off, write: false }).unwrap().stats
}

fn harmonic(k: usize) -> f64 {
    (1..=k).map(|i| 1.0 / i as f64).sum()
}

const STAR: &str = r#"
[run]
name = "star"
iterations = 20
[data]
kind = "linear-synthetic"
samples = 1200
features = 10
[model]
loss = "least-squares"
lr = 0.1
[scheme]
kind = "ignore"
workers = 12
s = 3
[stragglers]
model = "shifted-exp"
a = 1e-4
mu = 1e4
[timing]
compute = "modelled"
"#;

/// Without communication cost, waiting for the (n−s)-th of n shifted-exponential workers takes
/// a·load + (load/μ)(H_n − H_s) on average.
#[test]
fn star_without_communication_matches_the_order_statistic() {
    for (kind, s, load) in [("ignore", 3, 100.0), ("gc-cyclic", 3, 400.0), ("umw", 0, 100.0), ("gc-frac", 5, 600.0)] {
        let s_set = if s == 0 { "scheme.s=".to_string() } else { format!("scheme.s={s}") };
        let cfg = config(STAR, &[&format!("scheme.kind={kind}"), &s_set]);
        let st = run(&cfg, 300);
        let expect = 1e-4 * load + load / 1e4 * (harmonic(12) - harmonic(s));
        let rel = (st.mean_s - expect).abs() / expect;
        eprintln!("{kind} s={s}: simulated {:.5} s, formula {expect:.5} s ({:.2}%)", st.mean_s, rel * 100.0);
        assert!(rel < 0.02, "{kind}: {} vs {expect}", st.mean_s);
    }
}

/// A ring with equal compute and no stragglers: compute + 2(N−1) segment transfers.
#[test]
fn ring_time_is_the_pipelined_steps() {
    let cfg = config(
        STAR,
        &[
            "scheme.kind=rar",
            "scheme.s=",
            "stragglers.model=none",
            "timing.a=1e-4",
            "data.features=407",
            "network.bandwidth=1e6",
            "network.latency=1e-4",
        ],
    );
    let st = run(&cfg, 1);
    // 12 workers of 100 points; p + 1 = 408 values in 12 segments of 34 doubles, each in a
    // frame with its header (iteration and step numbers below 128 encode in one byte each)
    let head = outrun_proto::Header { round: 21, ..outrun_proto::Header::new(outrun_proto::Kind::Segment, 19) };
    let bytes = outrun_proto::wire::frame_bytes(&head, 34);
    assert_eq!(bytes, 34 * 8 + 32, "a segment frame is its values plus a four-word header");
    let step = bytes as f64 / 1e6 + 1e-4;
    let expect = 1e-4 * 100.0 + 2.0 * 11.0 * step;
    assert!((st.mean_s - expect).abs() < 1e-9, "{} vs {expect}", st.mean_s);
    assert!(st.p95_s - st.p5_s < 1e-9, "equal segments, no stragglers: every iteration the same");
}

const CR_THM: &str = r#"
[run]
name = "thm"
iterations = 20
deadline = 1000.0
[data]
kind = "linear-synthetic"
samples = 12000
features = 100
[model]
loss = "least-squares"
lr = 0.1
[scheme]
kind = "cr"
n = 4
layers = 2
s = 1
[stragglers]
model = "shifted-exp"
a = 1e-5
mu = 1e5
[timing]
compute = "modelled"
[network]
bandwidth = 82400.0
downlink = false
[engine]
upload = "granted"
"#;

/// CR paper Theorem 2 (thesis Thm 10), at fixed α = 1/4 and L = 2 with t_c = 10 ms per message
/// (a result of p + 3 = 103 doubles at 82 400 B/s), the papers' model (uploads only, late
/// uploads not received): the simulated mean lies between finite-n forms of bounds (7) and (8),
///   a·r·d + (r·d/μ)(H_n − H_s) + (n − s + L − 1)·t_c  ≤  E[T]  ≤  a·r·d + (r·d/μ)·ln(1/α) + n·L·t_c,
/// and the communication part grows linearly in n (for GC: in N).
#[test]
fn cr_theorem_2_bounds_and_linear_communication() {
    let (a, mu, tc, d) = (1e-5, 1e5, 0.01, 12000.0);
    let mut comm = vec![];
    for n in [4usize, 8, 12, 16, 20, 24] {
        let s = n / 4;
        let sets = [format!("scheme.n={n}"), format!("scheme.s={s}")];
        let with = run(&config(CR_THM, &[&sets[0], &sets[1]]), 20).mean_s;
        let without = run(&config(CR_THM, &[&sets[0], &sets[1], "network.bandwidth=1e15"]), 20).mean_s;
        let (num, den) = outrun_plan::alloc::r_cr(n, 2, s);
        let load = num as f64 / den as f64 * d;
        let lb = a * load + load / mu * (harmonic(n) - harmonic(s)) + (n - s + 1) as f64 * tc;
        let ub = a * load + load / mu * 4f64.ln() + (n * 2) as f64 * tc;
        eprintln!("n={n}: LB {lb:.4} ≤ simulated {with:.4} ≤ UB {ub:.4}; communication part {:.4} s", with - without);
        assert!(lb <= with && with <= ub, "n={n}: {with} not in [{lb}, {ub}]");
        comm.push((n as f64, with - without));
    }
    let (slope, r2) = fit(&comm);
    eprintln!(
        "CR communication ≈ {slope:.5}·n s (R² = {r2:.4}); the proof's L(n−s)·t_c gives {:.5}·n",
        2.0 * 0.75 * tc
    );
    assert!(r2 > 0.99, "CR communication part not linear in n (R² {r2})");
    assert!((slope - 2.0 * 0.75 * tc).abs() / (2.0 * 0.75 * tc) < 0.15, "slope {slope}");

    // GC on N = 20, 72, 156 workers with S ≈ N/4 (fractional repetition): linear in N
    let mut gc = vec![];
    for (n_workers, s) in [(20usize, 4usize), (72, 17), (156, 38)] {
        let base = [
            "scheme.kind=gc-frac".to_string(),
            "scheme.n=".into(),
            "scheme.layers=".into(),
            "scheme.code=".into(),
            format!("scheme.workers={n_workers}"),
            format!("scheme.s={s}"),
        ];
        let b: Vec<&str> = base.iter().map(String::as_str).collect();
        let with = run(&config(CR_THM, &b), 10).mean_s;
        let mut b2 = b.clone();
        b2.push("network.bandwidth=1e15");
        let without = run(&config(CR_THM, &b2), 10).mean_s;
        eprintln!("GC N={n_workers}: communication part {:.4} s", with - without);
        gc.push((n_workers as f64, with - without));
    }
    let (gslope, gr2) = fit(&gc);
    eprintln!("GC communication ≈ {gslope:.5}·N s (R² = {gr2:.4})");
    assert!(gr2 > 0.99, "GC communication part not linear in N (R² {gr2})");
}

/// Least-squares line through points; returns (slope, R²).
fn fit(pts: &[(f64, f64)]) -> (f64, f64) {
    let n = pts.len() as f64;
    let (mx, my) = (pts.iter().map(|p| p.0).sum::<f64>() / n, pts.iter().map(|p| p.1).sum::<f64>() / n);
    let sxy: f64 = pts.iter().map(|p| (p.0 - mx) * (p.1 - my)).sum();
    let sxx: f64 = pts.iter().map(|p| (p.0 - mx).powi(2)).sum();
    let syy: f64 = pts.iter().map(|p| (p.1 - my).powi(2)).sum();
    let slope = sxy / sxx;
    (slope, sxy * sxy / (sxx * syy))
}

const NN: &str = r#"
[run]
name = "nn"
iterations = 10
deadline = 1000.0
[data]
kind = "linear-synthetic"
samples = 49920
features = 100
[model]
loss = "least-squares"
lr = 0.1
[scheme]
kind = "cr"
n = 12
layers = 2
s = 5
[stragglers]
model = "shifted-exp"
a = 5e-5
mu = 2e4
[timing]
compute = "modelled"
[network]
bandwidth = 16480.0
downlink = false
[engine]
upload = "granted"
"#;

/// The thesis's neural-network time model (§4.4.2): t_c = 0.05 s per message (103 doubles at
/// 16 480 B/s), a = 5·10⁻⁵ s per point, a·μ = 1, N = 156, (12,2), α = 5/12, d = 49 920. The
/// ordering CR < ignore (the thesis's SGD) < GC < UMW holds; docs/simulator.md compares the
/// values with the paper's speedups and the notes' reconstruction.
#[test]
fn thesis_neural_network_time_model_ordering() {
    let flat = |kind: &str, s: &str| {
        config(NN, &[&format!("scheme.kind={kind}"), "scheme.n=", "scheme.layers=", "scheme.workers=156", s])
    };
    let cr = run(&config(NN, &[]), 10).mean_s;
    let sgd = run(&flat("ignore", "scheme.s=65"), 10).mean_s;
    let gc = run(&flat("gc-cyclic", "scheme.s=65"), 10).mean_s;
    let umw = run(&flat("umw", "scheme.s="), 10).mean_s;
    eprintln!("per-iteration seconds: CR {cr:.3}, SGD {sgd:.3}, GC {gc:.3}, UMW {umw:.3}; CR speedups: UMW {:.2}×, GC {:.2}×, SGD {:.2}×", umw / cr, gc / cr, sgd / cr);
    assert!(cr < sgd && sgd < gc && gc < umw, "ordering CR < SGD < GC < UMW violated: {cr} {sgd} {gc} {umw}");
}
