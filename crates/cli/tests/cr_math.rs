//! CodedReduce exactness at the thesis's sizes, executed in one process (AT-7 of the notes):
//! the plan's allocation, the real gradient kernel and the engine's decoder, bottom-up over the
//! tree, with 30 random straggler patterns (≤ s per parent), compared with the naive full
//! gradient. The MPI path is tested on smaller trees in `mpi_cr.rs`.

use outrun_codes::combin::SurvivorSet;
use outrun_codes::rng::Rng;
use outrun_codes::Decoder;
use outrun_plan::config::{parse, DataKind, Loss};
use outrun_workloads::data::synthetic_rows;
use outrun_workloads::kernel::gradient;
use outrun_workloads::metrics::relative_diff;
use outrun_workloads::reference::full_gradient;

fn config(n: usize, layers: usize, s: usize, d: usize, code: &str) -> outrun_plan::Config {
    let text = format!(
        "[run]\nname='m'\niterations=1\n[data]\nkind='linear-synthetic'\nsamples={d}\nfeatures=20\n[model]\nloss='least-squares'\nlr=0.1\n\
         [scheme]\nkind='cr'\nn={n}\nlayers={layers}\ns={s}\ncode='{code}'\n"
    );
    parse(&text, &[]).unwrap()
}

/// Master's decoded gradient with the given non-answering ranks.
fn execute(plan: &outrun_plan::Plan, rows: &outrun_workloads::Rows, theta: &[f64], late: &[bool]) -> Vec<f64> {
    let p = rows.p;
    let mut dec = Decoder::new(plan.code.as_ref().unwrap().code.b.clone());
    let mut msg: Vec<Vec<f64>> = vec![vec![]; plan.ranks];
    for node in plan.nodes.iter().rev() {
        let local = rows.select(node.data.points().map(|(i, _)| i));
        let coef: Vec<f64> = node.data.points().map(|(_, c)| c).collect();
        let mut g = vec![0.0; p];
        gradient(&local, &coef, theta, Loss::LeastSquares, &mut g);
        if !node.children.is_empty() {
            let surv: Vec<usize> = (0..node.children.len()).filter(|&j| !late[node.children[j]]).collect();
            let d = dec.decode(&SurvivorSet::from_indices(node.children.len(), &surv));
            assert!(d.is_exact(), "rank {}: residual {}", node.rank, d.residual);
            for (j, &c) in node.children.iter().enumerate() {
                if d.coeffs[j] != 0.0 {
                    for k in 0..p {
                        g[k] += d.coeffs[j] * msg[c][k];
                    }
                }
            }
        }
        msg[node.rank] = g;
    }
    msg[0].clone()
}

#[test]
fn cr_decodes_the_full_gradient_at_thesis_sizes() {
    let cases = [
        (3, 2, 1, 1000, "cyclic"),
        (4, 3, 1, 6552, "cyclic"),
        (4, 3, 1, 6552, "frac"),
        (12, 2, 1, 6552, "cyclic"),
        (12, 2, 3, 7644, "cyclic"),
        (12, 2, 5, 4992, "cyclic"),
        (12, 2, 5, 4992, "frac"),
        (5, 2, 4, 301, "cyclic"),
    ];
    for (n, layers, s, d, code) in cases {
        let cfg = config(n, layers, s, d, code);
        let plan = outrun_plan::build(&cfg, d).unwrap();
        let rows = synthetic_rows(DataKind::LinearSynthetic, 3, 20, 1.0, 0..d);
        let mut rng = Rng::from_key(&[n as u64, layers as u64, s as u64]);
        let theta: Vec<f64> = (0..20).map(|_| rng.normal()).collect();
        let (want, _) = full_gradient(&rows, &theta, Loss::LeastSquares);
        let mut worst = 0.0f64;
        for trial in 0..30 {
            // at most s late children per parent (exactly s on even trials)
            let mut late = vec![false; plan.ranks];
            for node in &plan.nodes {
                if node.children.is_empty() {
                    continue;
                }
                let k = if trial % 2 == 0 { s } else { rng.below(s + 1) };
                for j in rng.choose(node.children.len(), k) {
                    late[node.children[j]] = true;
                }
            }
            let got = execute(&plan, &rows, &theta, &late);
            worst = worst.max(relative_diff(&got, &want));
        }
        let loads: Vec<usize> = plan.nodes[1..].iter().map(|n| n.load()).collect();
        eprintln!(
            "({n},{layers},{s}) {code} d={d}: N={} loads {}..{} worst relative error {worst:.1e}",
            plan.workers,
            loads.iter().min().unwrap(),
            loads.iter().max().unwrap()
        );
        assert!(worst <= 1e-9, "({n},{layers},{s}) {code} d={d}: {worst:e}");
    }
}

#[test]
fn cr_loads_are_r_cr_times_d() {
    for (n, layers, s, d, want) in [(4, 3, 1, 6552, 468), (12, 2, 1, 6552, 156), (12, 2, 5, 4968, 828), (12, 2, 3, 7632, 636), (12, 2, 2, 6540, 327)] {
        let plan = outrun_plan::build(&config(n, layers, s, d, "cyclic"), d).unwrap();
        assert!(plan.nodes[1..].iter().all(|x| x.load() == want), "({n},{layers},{s}) d={d}");
    }
}
