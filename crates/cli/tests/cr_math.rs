//! CodedReduce exactness at the thesis's sizes, executed in one process (AT-7 of the notes): the
//! plan's allocation, the real gradient kernel, and the node protocol's machines and decoders
//! (driven by the simulator), with 30 straggler patterns per case (at most s late children per
//! parent, exactly s on even trials), compared with serial gradient descent. The MPI path is
//! tested on smaller trees in `mpi_cr.rs`.

use outrun_codes::Rng;
use outrun_config::parse;
use outrun_proto::Frame;
use outrun_workloads::data::load_all;
use outrun_workloads::metrics::relative_diff;
use outrun_workloads::reference::serial_gd;

fn config(n: usize, layers: usize, s: usize, d: usize, code: &str, late: &[usize]) -> outrun_config::Config {
    let stragglers = if late.is_empty() {
        String::new()
    } else {
        format!("[stragglers]\nmodel='fixed'\nfactor=1000\nworkers={late:?}\n")
    };
    let text = format!(
        "[run]\nname='m'\nseed=3\niterations=3\n[data]\nkind='linear-synthetic'\nsamples={d}\nfeatures=20\n[model]\nloss='least-squares'\nlr=0.1\n\
         [scheme]\nkind='cr'\nn={n}\nlayers={layers}\ns={s}\ncode='{code}'\n[timing]\ncompute='modelled'\na=1e-5\n{stragglers}"
    );
    parse(&text, &[]).unwrap()
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
        let cfg = config(n, layers, s, d, code, &[]);
        let plan = outrun_workloads::resolve(&cfg).unwrap();
        let want = serial_gd(&load_all(cfg.data(), cfg.run.seed, cfg.model().labels()).unwrap(), cfg.model(), 3)
            .pop()
            .unwrap();
        let mut rng = Rng::from_key(&[n as u64, layers as u64, s as u64]);
        let mut worst = 0.0f64;
        for trial in 0..30 {
            // at most s late children per parent (exactly s on even trials)
            let mut late = vec![];
            for node in &plan.nodes {
                if node.children.is_empty() {
                    continue;
                }
                let k = if trial % 2 == 0 { s } else { rng.below(s + 1) };
                late.extend(rng.choose(node.children.len(), k).into_iter().map(|j| node.children[j]));
            }
            late.sort_unstable();
            let cfg = config(n, layers, s, d, code, &late);
            let plan = outrun_workloads::resolve(&cfg).unwrap();
            let jobs = (0..plan.ranks)
                .map(|r| {
                    let mut job = outrun_workloads::job(&plan);
                    job.load(&plan, &[r]).unwrap();
                    job
                })
                .collect();
            let run = outrun_sim::execute::<Frame>(&plan, &plan.stragglers, jobs, None, None).unwrap();
            worst = worst.max(relative_diff(run.state.as_ref().unwrap(), &want));
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
    for (n, layers, s, d, want) in [
        (4, 3, 1, 6552, 468),
        (12, 2, 1, 6552, 156),
        (12, 2, 5, 4968, 828),
        (12, 2, 3, 7632, 636),
        (12, 2, 2, 6540, 327),
    ] {
        let plan = outrun_workloads::resolve(&config(n, layers, s, d, "cyclic", &[])).unwrap();
        assert!(plan.nodes[1..].iter().all(|x| x.load() == want), "({n},{layers},{s}) d={d}");
    }
}
