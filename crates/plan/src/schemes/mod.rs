//! Scheme builders: config → [`Plan`]. One module per family; each documents its scheme.
//!
//! | `scheme.kind` | module | pattern |
//! |---|---|---|
//! | `umw`, `ignore`, `gc-cyclic`, `gc-frac` | `schemes/master_worker.rs` | star (tree of depth 1) |
//! | `rar`, `allreduce` | `schemes/ring.rs` | ring, no master |
//! | `cr` | `schemes/coded_reduce.rs` | (n, L)-regular tree |
//! | `cegc`, `agc`, `g-agc` | `schemes/communication.rs` | star |
//! | `gc-sc`, `gc-dc` | `schemes/clustered.rs` | star |
//! | `hcmm`, `uniform-uncoded`, `lb-uncoded`, `uniform-coded` (mat-vec) | `schemes/matvec.rs` | star |
//! | `coded-pagerank`, `uncoded-pagerank` (PageRank) | `schemes/pagerank.rs` | shuffle, no master |
//! | `codedfedl` (gradient descent with parity data and a deadline) | `schemes/codedfedl.rs` | star |
//! | `arc`, `amc`, `hier-uncoded` (hierarchical aggregation) | `schemes/hier.rs` | hierarchical: master, helpers, clients |
//! | `fedavg`, `oracle`, `diversefl`, `median`, `krum`, `multi-krum`, `bulyan`, `resampling`, `fltrust` (federated) | `schemes/federated.rs` | star |

mod clustered;
mod coded_reduce;
mod codedfedl;
mod communication;
mod federated;
mod hier;
mod master_worker;
mod matvec;
mod pagerank;
mod ring;

use crate::alloc::WeightedSet;
use crate::plan::{Node, Pattern, Plan, PlanCode, SchemeData};
use crate::rules::{Encoding, Rule};
use crate::settings::{JobSpec, NetworkSpec, RunSpec, Shape};
use crate::stragglers::StragglerModel;
use outrun_config::{Config, ConfigError, SchemeConfig};

/// Build the plan of `cfg` for a problem of `shape` (its samples and features, read from the
/// data when the config was resolved). The one place that dispatches on `scheme.kind`: each
/// family's module builds its plan; the rules and encodings it names are executed by the node
/// protocol without further knowledge of the scheme.
pub fn build(cfg: &Config, shape: Shape) -> Result<Plan, ConfigError> {
    let (w, samples) = (cfg.workers(), shape.samples);
    if samples < w {
        let (field, counts) = cfg.job.size_field();
        let who = if matches!(cfg.job, outrun_config::JobConfig::Pagerank(_)) { "servers" } else { "workers" };
        let message = match counts {
            // a file's rows after the held-out ones are set aside
            Some(what) => format!("has {samples} {what} to share, fewer than the {w} {who}: some would hold no data"),
            None => format!("= {samples} is smaller than the {w} {who}: some would hold no data"),
        };
        return Err(ConfigError::new(field, message));
    }
    let mut plan = match &cfg.scheme {
        SchemeConfig::Umw(c) | SchemeConfig::Ignore(c) | SchemeConfig::GcCyclic(c) | SchemeConfig::GcFrac(c) => {
            master_worker::build(cfg, c, samples)
        }
        SchemeConfig::Rar(_) | SchemeConfig::Allreduce(_) => Ok(ring::build(cfg, samples)),
        SchemeConfig::Cr(t) => coded_reduce::build(cfg, t, samples),
        SchemeConfig::Cegc(c) => communication::cegc(cfg, c, samples),
        SchemeConfig::Agc(c) | SchemeConfig::GAgc(c) => communication::agc(cfg, c, samples),
        SchemeConfig::Cgc(c) | SchemeConfig::GCgc(c) => communication::cgc(cfg, c, samples),
        SchemeConfig::GcSc(c) => clustered::build(cfg, &c.as_clusters(), samples),
        SchemeConfig::GcDc(c) => clustered::build(cfg, c, samples),
        SchemeConfig::Hcmm(c)
        | SchemeConfig::UniformUncoded(c)
        | SchemeConfig::LbUncoded(c)
        | SchemeConfig::UniformCoded(c) => matvec::build(cfg, c, samples),
        SchemeConfig::CodedPagerank(c) | SchemeConfig::UncodedPagerank(c) => Ok(pagerank::build(cfg, c, samples)),
        SchemeConfig::Codedfedl(c) => codedfedl::build(cfg, c, samples, shape.features),
        SchemeConfig::Arc(c) | SchemeConfig::Amc(c) | SchemeConfig::HierUncoded(c) => hier::build(cfg, c, samples),
        other => Ok(federated::build(cfg, other.federated().expect("the other schemes are matched above"), samples)),
    }?;
    plan.job.features = shape.features;
    Ok(plan)
}

/// A plan of `cfg`'s scheme with these nodes (one per rank; those with a worker id are the
/// workers) and codes, and what every plan copies from the config: the straggler model, the
/// upload mode, the run, the job (whose features `build` sets) and the network.
pub(crate) fn plan(
    cfg: &Config,
    title: String,
    samples: usize,
    s: usize,
    pattern: Pattern,
    nodes: Vec<Node>,
    codes: Vec<PlanCode>,
) -> Plan {
    Plan {
        scheme: cfg.scheme.kind().into(),
        title,
        ranks: nodes.len(),
        workers: nodes.iter().filter(|n| n.worker.is_some()).count(),
        samples,
        s,
        pattern,
        nodes,
        codes,
        stragglers: StragglerModel::from_config(cfg),
        faults: crate::Faults::from_config(cfg),
        links: crate::Links::from_config(cfg),
        upload: cfg.engine.upload,
        run: RunSpec::of(cfg),
        job: JobSpec { config: cfg.job.clone(), features: 0, python: None, label_names: vec![] },
        network: NetworkSpec::of(&cfg.network),
        data: SchemeData::None,
    }
}

/// Turn a code-construction failure into an error naming the field.
pub(crate) fn code_error(e: outrun_codes::CodeError) -> ConfigError {
    use outrun_codes::CodeError::*;
    match e {
        IllConditioned { .. } => ConfigError::new("scheme.draws", format!("{e}; try more draws or another run.seed")),
        _ => ConfigError::new("scheme.s", e.to_string()),
    }
}

/// A master–worker plan: `nodes` are the master (rank 0) and the N workers, a tree of depth 1.
pub(crate) fn star_plan(
    cfg: &Config,
    title: String,
    samples: usize,
    s: usize,
    nodes: Vec<Node>,
    codes: Vec<PlanCode>,
) -> Plan {
    let n = nodes.len() - 1;
    plan(cfg, title, samples, s, Pattern::Tree { n, layers: 1 }, nodes, codes)
}

/// A star whose master (rank 0) has `rule` over the given workers (ranks 1..).
pub(crate) fn star(
    cfg: &Config,
    title: String,
    samples: usize,
    s: usize,
    mut nodes: Vec<Node>,
    rule: Rule,
    codes: Vec<PlanCode>,
) -> Plan {
    let n = nodes.len();
    nodes.insert(0, Node::new(0).over((1..=n).collect(), rule));
    star_plan(cfg, title, samples, s, nodes, codes)
}

/// A worker of a star.
pub(crate) fn worker(rank: usize, parts: Vec<WeightedSet>, send: Encoding) -> Node {
    Node::worker(rank, rank, Some(0), parts).sending(send)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::plan::Pattern;
    use crate::rules::Rule;
    use outrun_codes::{Decoder, SurvivorSet};
    use outrun_config::parse;

    /// The plan of `cfg` for `samples` points of 3 features.
    fn build(cfg: &Config, samples: usize) -> Result<Plan, ConfigError> {
        super::build(cfg, Shape { samples, features: 3 })
    }

    fn cfg(sets: &[&str]) -> Config {
        let base = "[run]\nname='t'\niterations=3\n[data]\nkind='linear-synthetic'\nsamples=1000\nfeatures=3\n[model]\nloss='least-squares'\nlr=0.1\n[scheme]\nkind='umw'\nworkers=9\n";
        parse(base, &sets.iter().map(|s| s.to_string()).collect::<Vec<_>>()).unwrap()
    }

    /// Per-point total weight reaching the master when `survivors` answer (star plans).
    fn master_weights(plan: &Plan, survivors: &[usize]) -> Vec<f64> {
        let n = plan.workers;
        let coeffs: Vec<f64> = match plan.nodes[0].rule.clone().unwrap() {
            Rule::Sum => vec![1.0; n],
            Rule::Rescale { .. } => {
                let covered: usize = survivors.iter().map(|&i| plan.nodes[i + 1].load()).sum();
                (0..n)
                    .map(|i| if survivors.contains(&i) { plan.samples as f64 / covered as f64 } else { 0.0 })
                    .collect()
            }
            Rule::Groups { .. }
            | Rule::Clusters { .. }
            | Rule::Rows { .. }
            | Rule::Federated { .. }
            | Rule::Until { .. } => {
                unreachable!("star plans of this test")
            }
            Rule::Decode { code, .. } => {
                let mut dec = Decoder::new(plan.codes[code].gradient().clone());
                dec.decode(&SurvivorSet::from_indices(n, survivors)).coeffs.clone()
            }
        };
        let mut w = vec![0.0; plan.samples];
        for (i, &a) in coeffs.iter().enumerate() {
            for (p, c) in plan.nodes[i + 1].points() {
                w[p] += a * c;
            }
        }
        w
    }

    #[test]
    fn star_plans_have_the_right_shape_and_loads() {
        let umw = build(&cfg(&[]), 1000).unwrap();
        assert_eq!(umw.ranks, 10);
        assert_eq!(umw.pattern, Pattern::Tree { n: 9, layers: 1 });
        assert_eq!(umw.nodes[0].children, (1..=9).collect::<Vec<_>>());
        assert!(umw.nodes[1..].iter().all(|n| n.load() == 111 || n.load() == 112));
        assert_eq!(umw.nodes[1..].iter().map(|n| n.load()).sum::<usize>(), 1000);
        assert!(umw.exact_by_design());

        let gc = build(&cfg(&["scheme.kind=gc-cyclic", "scheme.s=2"]), 1000).unwrap();
        assert_eq!(gc.nodes[0].rule.as_ref().unwrap().need(9), 7);
        assert!(gc.nodes[1..].iter().all(|n| (333..=336).contains(&n.load())), "(s+1)·d/N");
        assert!(gc.exact_by_design());

        let ig = build(&cfg(&["scheme.kind=ignore", "scheme.s=2"]), 1000).unwrap();
        assert!(!ig.exact_by_design());

        let ring = build(&cfg(&["scheme.kind=rar"]), 1000).unwrap();
        assert_eq!(ring.ranks, 9);
        assert_eq!(ring.nodes[0].worker, Some(1));
        assert_eq!(ring.master(), None);
    }

    /// Every point reaches the master with total weight exactly 1, for every survivor set of
    /// size N − s: the plan-level statement of "GC decodes the full gradient".
    #[test]
    fn coded_star_plans_weigh_every_point_once() {
        for kind in ["gc-cyclic", "gc-frac"] {
            let plan = build(&cfg(&[&format!("scheme.kind={kind}"), "scheme.s=2"]), 1000).unwrap();
            for surv in outrun_codes::combinations(9, 7) {
                let w = master_weights(&plan, &surv);
                assert!(w.iter().all(|x| (x - 1.0).abs() < 1e-9), "{kind} {surv:?}");
            }
        }
        let umw = build(&cfg(&[]), 1000).unwrap();
        assert!(master_weights(&umw, &(0..9).collect::<Vec<_>>()).iter().all(|&x| x == 1.0));
        // ignore: weight d/covered on the survivors' points, zero elsewhere — not the gradient
        let ig = build(&cfg(&["scheme.kind=ignore", "scheme.s=2"]), 1000).unwrap();
        let w = master_weights(&ig, &[0, 1, 2, 3, 4, 5, 6]);
        assert!(w.contains(&0.0));
        assert!((w.iter().sum::<f64>() - 1000.0).abs() < 1e-9);
    }

    #[test]
    fn plan_errors_and_description() {
        let e = build(&cfg(&[]), 5).unwrap_err();
        assert_eq!(e.field, "data.samples");
        let gc = build(&cfg(&["scheme.kind=gc-cyclic", "scheme.s=2"]), 1000).unwrap();
        let text = gc.describe();
        assert!(text.contains("first 7 of 9, decode"), "{text}");
        assert!(text.contains("best of 10 draws"), "{text}");
        // the plan survives a JSON round trip (it is broadcast that way)
        let back: Plan = serde_json::from_str(&serde_json::to_string(&gc).unwrap()).unwrap();
        assert_eq!(back, gc);
    }

    /// `outrun plan` says how ranks wait, and names the lockstep window where a ring's steps
    /// wait with it (not the tree's, nor `MPI_Allreduce`'s, which waits inside the library).
    #[test]
    fn the_waiting_line_names_the_lockstep_window_of_a_ring() {
        let window =
            format!("after polling with a spin hint for {} s", outrun_config::Idle::LOCKSTEP_WINDOW.as_secs_f64());
        for (sets, lockstep) in [
            (&["scheme.kind=rar"][..], true),
            (&["scheme.kind=rar", "engine.idle=sleep"][..], true),
            (&["scheme.kind=allreduce"][..], false),
            (&[][..], false),
            (&["engine.idle=sleep"][..], false),
        ] {
            let text = build(&cfg(sets), 1000).unwrap().describe();
            let line = text.lines().find(|l| l.starts_with("waiting (engine.idle")).expect("a waiting line");
            assert_eq!(line.contains(&window), lockstep, "{sets:?}: {line}");
            assert_eq!(line.contains("in a ring's steps"), lockstep, "{sets:?}: {line}");
        }
    }

    /// Communication-efficient and adaptive plans: placement, what `outrun plan` reports about
    /// their codes, and a refusal when an adaptive code would not decode exactly.
    #[test]
    fn communication_efficient_and_adaptive_plans() {
        let cegc = build(&cfg(&["scheme.kind=cegc", "scheme.workers=8", "scheme.s=2", "scheme.m=2"]), 1000).unwrap();
        assert_eq!(cegc.ranks, 9);
        // two groups of four holding their group's half of the data
        assert!(cegc.nodes[1..].iter().all(|n| n.load() == 500));
        assert_eq!(cegc.nodes[1].points().next(), cegc.nodes[4].points().next());
        assert_ne!(cegc.nodes[1].points().next(), cegc.nodes[5].points().next());
        let text = cegc.describe();
        assert!(text.contains("[N = 4, K = 2] Gaussian MDS") && text.contains("6 of all 6 sets of 2 decode"), "{text}");

        let ldpc = build(
            &cfg(&["scheme.kind=cegc", "scheme.workers=10", "scheme.s=5", "scheme.m=5", "scheme.code=ldpc"]),
            1000,
        )
        .unwrap();
        let text = ldpc.describe();
        assert!(
            text.contains("LDPC")
                && text.contains("by peeling")
                && text.contains("decodes as soon as what arrived peels"),
            "{text}"
        );

        let agc =
            build(&cfg(&["scheme.kind=agc", "scheme.workers=12", "scheme.d=4", "scheme.rounds=12"]), 1200).unwrap();
        assert!(agc.nodes[1..].iter().all(|n| n.load() == 400), "d·(size/N)");
        let text = agc.describe();
        assert!(text.contains("rounds needed r_s = ⌈L/(d − s)⌉ for s = 0..3: 3, 4, 6, 12"), "{text}");

        let gagc =
            build(&cfg(&["scheme.kind=g-agc", "scheme.workers=20", "scheme.d=3", "scheme.rounds=6"]), 1000).unwrap();
        assert_eq!(gagc.codes.len(), 6, "five groups of 3 and one of 5");

        // a systematic (Cauchy) group of 48 with 24 missing solves systems with κ ~ 1e9: refused
        let e = build(
            &cfg(&["scheme.kind=cegc", "scheme.workers=48", "scheme.s=24", "scheme.m=24", "scheme.code=systematic"]),
            1000,
        )
        .unwrap_err();
        assert_eq!(e.field, "scheme.code");
        assert!(e.message.contains("not exact") && e.message.contains("gaussian"), "{e}");

        // plain AGC at N = 32, L = 12 is ill-conditioned: refused with the error it would make
        let e = build(
            &cfg(&["scheme.kind=agc", "scheme.workers=32", "scheme.d=3", "scheme.rounds=12", "scheme.draws=1"]),
            1000,
        )
        .unwrap_err();
        assert_eq!(e.field, "scheme.rounds");
        assert!(e.message.contains("would not be exact") && e.message.contains("g-agc"), "{e}");
    }
}
