//! Matrix–vector multiplication on heterogeneous workers (thesis chapter 3; note part A): the
//! master wants y = A·x for an r-row A. Worker i holds ℓ_i rows of Ã = G·A (contiguous coded
//! rows, worker 1 first), computes their product with x and returns it in one message; the
//! master decodes y as soon as the rows received determine it (`outrun_proto::roles`, rows.rs).
//!
//! - **`uniform-uncoded`**: G = I, r/N rows each (exact partition); waits for all.
//! - **`lb-uncoded`**: G = I, rows ∝ 1/E[time per row] = μ_i/(a_iμ_i + Γ(1 + 1/α_i)).
//! - **`uniform-coded`**: ⌈r/k⌉ coded rows each, k = 1..N chosen for the smallest expected time.
//! - **`hcmm`**: ℓ_i = ⌈τ*/λ_i⌉, λ_i maximising worker i's expected return, τ* = r/Σ rate_i.
//!
//! Coded schemes use `scheme.code`: Gaussian or systematic MDS (any r rows decode), or LT
//! (allocated for r(1 + overhead) rows, decoded by peeling). The per-worker laws (a_i, μ_i, α_i)
//! come from `scheme.a/mu/shape`, else from `[stragglers]` (shifted-exp, weibull), so what the
//! plan predicts is what the run injects.

use outrun_codes::{
    budget_heuristic, expected_time, hcmm, load_balanced, monte_carlo, uniform_coded, uniform_uncoded, MachineType,
    Rounding, RowCodeKind, RowLaw,
};

use crate::alloc::{Segment, WeightedSet};
use crate::plan::{Plan, PlanCode, RowsSpec};
use crate::rules::{Encoding, Rule};
use crate::schemes::{star, worker};
use crate::stragglers::{Law, StragglerModel};
use outrun_config::{Config, ConfigError, MatvecCode, MatvecSchemeConfig, SchemeConfig};

/// Largest r for the dense codes: the master's r × r LU solve is ~2/3·r³ flops (≈ 3 s at
/// r = 2000 on one core of this machine), repeated for every new set of responders.
pub(super) const MAX_DENSE_ROWS: usize = 2000;

/// The workers' run-time laws: `scheme.a/mu/shape`, else the straggler model's (None when
/// neither gives them).
fn laws(cfg: &Config, c: &MatvecSchemeConfig) -> Result<Option<Vec<RowLaw>>, ConfigError> {
    let n = c.workers;
    let model = StragglerModel::from_config(cfg);
    let (a0, mu0, shape0) = match &model.law {
        Law::ShiftedExp { a, mu } => (Some(a.clone()), Some(mu.clone()), None),
        Law::Weibull { a, mu, shape } => (Some(a.clone()), Some(mu.clone()), Some(shape.clone())),
        _ => (None, None, None),
    };
    let pick =
        |own: &Option<outrun_config::PerWorker>, from: Option<Vec<f64>>| own.as_ref().map(|v| v.values(n)).or(from);
    let (a, mu) = (pick(&c.a, a0), pick(&c.mu, mu0));
    let shape = pick(&c.shape, shape0).unwrap_or_else(|| vec![1.0; n]);
    match (a, mu) {
        (Some(a), Some(mu)) => Ok(Some((0..n).map(|i| RowLaw::weibull(a[i], mu[i], shape[i])).collect())),
        (None, None) => Ok(None),
        (None, _) => Err(ConfigError::new(
            "scheme.a",
            "missing: give the shifts a_i with the rates μ_i (or use stragglers.model = \"shifted-exp\")",
        )),
        (_, None) => Err(ConfigError::new(
            "scheme.mu",
            "missing: give the rates μ_i with the shifts a_i (or use stragglers.model = \"shifted-exp\")",
        )),
    }
}

/// The machines Algorithm 2 keeps within `budget`: the workers grouped into types by (a, μ)
/// (exponential laws), ordered by increasing μ; the first n_k workers of type k are kept.
fn budget_choice(
    laws: &[RowLaw],
    target: usize,
    c: &MatvecSchemeConfig,
    budget: f64,
) -> Result<Vec<bool>, ConfigError> {
    if laws.iter().any(|w| w.alpha != 1.0) {
        return Err(ConfigError::new(
            "scheme.budget",
            "the budget-constrained HCMM is defined for shifted-exponential workers (shape 1)",
        ));
    }
    let mut types: Vec<(RowLaw, Vec<usize>)> = vec![];
    for (i, w) in laws.iter().enumerate() {
        match types.iter_mut().find(|(t, _)| t.a == w.a && t.mu == w.mu) {
            Some((_, members)) => members.push(i),
            None => types.push((*w, vec![i])),
        }
    }
    types.sort_by(|x, y| x.0.mu.total_cmp(&y.0.mu));
    let machines: Vec<MachineType> =
        types.iter().map(|(law, m)| MachineType { law: *law, available: m.len() }).collect();
    let Some(choice) = budget_heuristic(&machines, target, c.kappa, c.gamma, budget) else {
        let cheapest = outrun_codes::budget_cost(&machines[..1], &[machines[0].available], target, c.kappa, c.gamma).0;
        return Err(ConfigError::new(
            "scheme.budget",
            format!("= {budget}: infeasible; the cheapest configuration (slowest machines only) costs {cheapest:.4}"),
        ));
    };
    let mut keep = vec![false; laws.len()];
    for ((_, members), &count) in types.iter().zip(&choice.counts) {
        members.iter().take(count).for_each(|&i| keep[i] = true);
    }
    Ok(keep)
}

/// Most coded rows an HCMM allocation may hand out in all (2^32: 34 GB of coded rows at one
/// column, more than any worker streams in an iteration).
const MAX_CODED_ROWS: f64 = 4_294_967_296.0;

/// Refuse an HCMM allocation its model cannot give for these laws, naming the laws' fields: as
/// a worker's a_i·μ_i → 0 (no shift) its optimal load τ*/λ_i grows without bound (at a = 0, λ_i
/// = 0), and for a_i·μ_i too large for double precision λ_i − a_i cancels and the loads no
/// longer cover the rows.
fn hcmm_sane(
    c: &MatvecSchemeConfig,
    laws: &[RowLaw],
    a: &outrun_codes::Allocation,
    target: usize,
) -> Result<(), ConfigError> {
    // each of a and μ comes from the scheme's own keys where it sets them, else the straggler law
    let a_from = if c.a.is_some() { "scheme.a" } else { "stragglers.a" };
    let mu_from = if c.mu.is_some() { "scheme.mu" } else { "stragglers.mu" };
    let total: f64 = a.real.iter().sum();
    let most = a.real.iter().copied().fold(0.0, f64::max);
    let amu = |pick: fn(f64, f64) -> f64| laws.iter().map(|w| w.a * w.mu).reduce(pick).unwrap_or(0.0);
    let beyond = |loads: String| {
        format!(
            "HCMM's loads τ*/λ_i {loads} for these laws: a_i·μ_i up to {:.3e} is beyond its formulas in double precision (λ_i − a_i cancels)",
            amu(f64::max)
        )
    };
    let why = if !a.real.iter().all(|x| x.is_finite() && *x >= 0.0) || !total.is_finite() {
        beyond("cannot be computed".into())
    } else if total > MAX_CODED_ROWS {
        format!(
            "HCMM's loads τ*/λ_i come to {total:.3e} coded rows for r = {target} (one worker {most:.3e}), more than 2^32: its model needs each worker's shift to be a fair part of its time per row (a_i·μ_i down to {:.3e} here; as it → 0 the optimal loads grow without bound)",
            amu(f64::min)
        )
    } else if a.loads.iter().sum::<usize>() < target {
        beyond(format!("({:?}) do not cover r = {target} rows", a.loads))
    } else {
        return Ok(());
    };
    Err(ConfigError::new(a_from, format!("with {mu_from}: {why}")))
}

/// Workers that can be lost, largest loads first, with `target` rows still held.
fn tolerates(loads: &[usize], target: usize) -> usize {
    let mut sorted = loads.to_vec();
    sorted.sort_unstable_by(|a, b| b.cmp(a));
    let mut left: usize = sorted.iter().sum();
    let mut k = 0;
    for l in sorted {
        if left - l < target {
            break;
        }
        left -= l;
        k += 1;
    }
    k
}

pub(crate) fn build(cfg: &Config, c: &MatvecSchemeConfig, r: usize) -> Result<Plan, ConfigError> {
    let n = c.workers;
    let laws = laws(cfg, c)?;
    let need_laws = |what: &str| {
        laws.clone().ok_or_else(|| ConfigError::new("scheme.mu", format!("missing: {what} needs the workers' speeds: scheme.a and scheme.mu (one value, or one per worker), or stragglers.model = \"shifted-exp\" / \"weibull\"")))
    };
    let coded = matches!(cfg.scheme, SchemeConfig::Hcmm(_) | SchemeConfig::UniformCoded(_));
    let kind = match (coded, c.code) {
        (false, _) => RowCodeKind::Identity,
        (true, MatvecCode::Gaussian) => RowCodeKind::Gaussian,
        (true, MatvecCode::Systematic) => RowCodeKind::Systematic,
        (true, MatvecCode::Lt) => RowCodeKind::Lt { c: c.lt_c, delta: c.lt_delta },
    };
    if coded && c.code != MatvecCode::Lt && r > MAX_DENSE_ROWS {
        return Err(ConfigError::new(
            "scheme.code",
            format!("= \"{}\" with r = {r} rows: the master's dense solve is O(r³) per new set of responders (~3 s at r = {MAX_DENSE_ROWS}); at most {MAX_DENSE_ROWS}; use code = \"lt\" (peeling, O(edges))", c.code.name()),
        ));
    }
    let target = if c.code == MatvecCode::Lt && coded { (r as f64 * (1.0 + c.overhead)).ceil() as usize } else { r };
    let (allocation, loads, lambdas, tau, k) = match &cfg.scheme {
        SchemeConfig::UniformUncoded(_) => {
            ("uniform uncoded".to_string(), uniform_uncoded(n, r, Rounding::Exact), vec![], None, None)
        }
        SchemeConfig::LbUncoded(_) => (
            "load-balanced uncoded".to_string(),
            load_balanced(&need_laws("lb-uncoded")?, r, Rounding::Exact),
            vec![],
            None,
            None,
        ),
        SchemeConfig::UniformCoded(_) => {
            let (k, loads, _) = uniform_coded(&need_laws("uniform-coded")?, target);
            ("uniform coded".to_string(), loads, vec![], None, Some(k))
        }
        SchemeConfig::Hcmm(_) => {
            let laws = need_laws("hcmm")?;
            let keep = match c.budget {
                Some(budget) => budget_choice(&laws, target, c, budget)?,
                None => vec![true; n],
            };
            let kept: Vec<RowLaw> = laws.iter().zip(&keep).filter(|(_, &k)| k).map(|(w, _)| *w).collect();
            let a = hcmm(&kept, target);
            hcmm_sane(c, &kept, &a, target)?;
            let mut it = a.loads.iter().zip(&a.lambdas);
            let (loads, lambdas): (Vec<usize>, Vec<f64>) = keep
                .iter()
                .map(|&k| if k { it.next().map(|(l, x)| (*l, *x)).expect("one per kept") } else { (0, 0.0) })
                .unzip();
            let name = match c.budget {
                Some(b) => format!(
                    "HCMM within budget C = {b} (κ = {}, γ = {}; Algorithm 2 keeps {} of {n} machines)",
                    c.kappa,
                    c.gamma,
                    kept.len()
                ),
                None => "HCMM".to_string(),
            };
            (name, loads, lambdas, Some(a.tau), None)
        }
        other => unreachable!("{} is not a mat-vec scheme", other.kind()),
    };
    let total: usize = loads.iter().sum();
    let expected = laws.as_ref().map(|w| expected_time(w, &loads, target.min(total)));
    let expected_mc = laws.as_ref().map(|w| monte_carlo(w, &loads, target.min(total), 20_000, cfg.run.seed));
    let spec = RowsSpec { kind, r, n: total, seed: cfg.run.seed };
    let mut start = 0;
    let nodes = loads
        .iter()
        .enumerate()
        .map(|(i, &l)| {
            let mut part = WeightedSet::default();
            part.push(Segment { start, len: l, coef: 1.0 });
            start += l;
            worker(i + 1, vec![part], Encoding::Plain)
        })
        .collect();
    let s = tolerates(&loads, target);
    let title = match kind {
        RowCodeKind::Identity => format!("{allocation} mat-vec: {r} rows over {n} workers, the master waits for all"),
        _ => format!("{allocation} coded mat-vec ({}): {total} coded rows for r = {r} over {n} workers, decoded as soon as the rows received determine y", c.code.name()),
    };
    let code =
        PlanCode::Rows { code: spec, allocation, target, loads, lambdas, tau, k, expected, expected_mc, tolerates: s };
    Ok(star(cfg, title, r, s, nodes, Rule::Rows { code: 0 }, vec![code]))
}

#[cfg(test)]
mod tests {
    use super::*;
    use outrun_config::parse;

    /// The plan of `cfg` for a matrix of `rows` rows (and as many columns).
    fn build(cfg: &Config, rows: usize) -> Result<crate::Plan, outrun_config::ConfigError> {
        crate::build(cfg, crate::Shape { samples: rows, features: rows })
    }

    fn cfg(sets: &[&str]) -> Config {
        let base = "[run]\nname='t'\niterations=1\n[job]\nkind='matvec'\n[matrix]\nrows=200\ncols=50\n[scheme]\nkind='hcmm'\nworkers=5\n[stragglers]\nmodel='shifted-exp'\na=[0.001,0.001,0.002,0.002,0.004]\nmu=[1000.0,1000.0,500.0,500.0,250.0]\n[timing]\ncompute='modelled'\n";
        parse(base, &sets.iter().map(|s| s.to_string()).collect::<Vec<_>>()).unwrap()
    }

    #[test]
    fn hcmm_plan_gives_faster_workers_more_rows_and_covers_r() {
        let plan = build(&cfg(&[]), 200).unwrap();
        let loads: Vec<usize> = plan.nodes[1..].iter().map(|n| n.load()).collect();
        assert!(loads[0] == loads[1] && loads[1] > loads[2] && loads[3] > loads[4], "{loads:?}");
        assert!(loads.iter().sum::<usize>() >= 200);
        let PlanCode::Rows { tolerates: t, expected, expected_mc, .. } = &plan.codes[0] else { panic!() };
        assert!(*t >= 1);
        // the evaluator agrees with its Monte Carlo check
        let (e, (m, se)) = (expected.unwrap(), expected_mc.unwrap());
        assert!((e - m).abs() < 4.0 * se + 1e-9, "E[T] {e} vs Monte Carlo {m} ± {se}");
        // coded rows are contiguous and disjoint
        let starts: Vec<usize> = plan.nodes[1..].iter().map(|n| n.parts[0].segments[0].start).collect();
        assert_eq!(starts[1], loads[0]);
        let text = plan.describe();
        assert!(text.contains("λ_i") && text.contains("τ*") && text.contains("E[T]"), "{text}");
        // E[T] within run.deadline: no caution; beyond it, one naming both
        assert!(e < plan.run.deadline && plan.cautions().is_empty(), "{:?}", plan.cautions());
        let slow = build(&cfg(&[&format!("run.deadline={}", e / 2.0)]), 200).unwrap();
        let cautions = slow.cautions();
        assert_eq!(cautions.len(), 1, "{cautions:?}");
        assert!(
            cautions[0].starts_with("HCMM expects an iteration to take E[T] = ")
                && cautions[0].contains(&format!("more than run.deadline = {} s", e / 2.0)),
            "{cautions:?}"
        );
    }

    #[test]
    fn baselines_and_errors() {
        let uu = build(&cfg(&["scheme.kind=uniform-uncoded"]), 200).unwrap();
        assert!(uu.nodes[1..].iter().all(|n| n.load() == 40));
        assert_eq!(uu.s, 0);
        let lb = build(&cfg(&["scheme.kind=lb-uncoded"]), 200).unwrap();
        assert_eq!(lb.nodes[1..].iter().map(|n| n.load()).sum::<usize>(), 200);
        let uc = build(&cfg(&["scheme.kind=uniform-coded"]), 200).unwrap();
        let PlanCode::Rows { k: Some(k), .. } = &uc.codes[0] else { panic!() };
        assert!(uc.nodes[1..].iter().all(|n| n.load() == 200usize.div_ceil(*k)));
        // no laws anywhere: HCMM cannot allocate
        let e = build(&cfg(&["stragglers.model=none", "stragglers.a=", "stragglers.mu="]), 200).unwrap_err();
        assert_eq!(e.field, "scheme.mu");
        // the budget: Scenario 1 of the note (types (0.5, 2) and (0.25, 4), 10 each, r = 100,
        // κ = 1, γ = 2, C = 860): Algorithm 2 keeps (10, 2)
        let a: Vec<String> = (0..20).map(|i| if i < 10 { "0.5".into() } else { "0.25".into() }).collect();
        let mu: Vec<String> = (0..20).map(|i| if i < 10 { "2.0".into() } else { "4.0".into() }).collect();
        let sets = [
            "scheme.workers=20".to_string(),
            format!("scheme.a=[{}]", a.join(",")),
            format!("scheme.mu=[{}]", mu.join(",")),
            "scheme.budget=860".into(),
            "scheme.gamma=2".into(),
            "matrix.rows=100".into(),
            "stragglers.model=none".into(),
            "stragglers.a=".into(),
            "stragglers.mu=".into(),
        ];
        let c = parse(&cfg(&[]).to_toml(), &sets).unwrap();
        let plan = build(&c, 100).unwrap();
        let used: Vec<usize> = plan.nodes[1..].iter().map(|n| n.load()).collect();
        assert_eq!(used[..10].iter().filter(|&&l| l > 0).count(), 10);
        assert_eq!(used[10..].iter().filter(|&&l| l > 0).count(), 2, "{used:?}");
        assert!(plan.describe().contains("Algorithm 2 keeps 12 of 20"));
        let e = build(&parse(&c.to_toml(), &["scheme.budget=600".into()]).unwrap(), 100).unwrap_err();
        assert_eq!(e.field, "scheme.budget");
        assert!(e.message.contains("629.2"), "{e}");
        // a dense code over too many rows
        let e = build(&cfg(&["matrix.rows=5000"]), 5000).unwrap_err();
        assert_eq!(e.field, "scheme.code");
    }

    /// HCMM's model needs shifts: as a_i·μ_i → 0 its loads grow without bound (at a = 0 the
    /// formulas gave 9·10¹⁰ coded rows for r = 1000, which `outrun check` then counted row by
    /// row), and where a_i·μ_i is too large for double precision they stop covering r (the
    /// plan's Monte Carlo check panicked); both are refused naming the laws' fields.
    #[test]
    fn hcmm_refuses_laws_its_model_cannot_allocate_for() {
        for (sets, field, says) in [
            (vec!["stragglers.a=0"], "stragglers.a", "more than 2^32"),
            (vec!["stragglers.a=1e-300"], "stragglers.a", "grow without bound"),
            (vec!["stragglers.mu=1e308"], "stragglers.a", "double precision"),
            (vec!["scheme.a=0", "scheme.mu=1000"], "scheme.a", "more than 2^32"),
            // the rates from the scheme, the shifts from the straggler law: each named where set
            (vec!["scheme.mu=1e308"], "stragglers.a", "double precision"),
            (vec!["scheme.a=0"], "scheme.a", "more than 2^32"),
        ] {
            let e = build(&cfg(&sets), 200).unwrap_err();
            assert_eq!(e.field, field, "{sets:?}: {e}");
            let mu =
                if sets.iter().any(|s| s.starts_with("scheme.mu")) { "with scheme.mu" } else { "with stragglers.mu" };
            assert!(e.message.contains(says) && e.message.contains(mu), "{sets:?}: {e}");
        }
        // a small shift still plans, with more redundancy
        let plan = build(&cfg(&["stragglers.a=1e-5"]), 200).unwrap();
        assert!(plan.nodes[1..].iter().map(|n| n.load()).sum::<usize>() > 400);
    }
}
