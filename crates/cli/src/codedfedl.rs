//! `outrun codedfedl-load`: CodedFedL's load allocation for the thesis's simulated network
//! (ch. 5 §5.5), from `outrun_codes::codedfedl` (no MPI, no data).

use outrun_codes::codedfedl::{allocate, by_expected_time, thesis_clients, Node};
use outrun_codes::{domain, Rng};

use crate::Failure;

/// Most clients the command allocates for: the thesis's geometric rates make more meaningless,
/// and the bisection over every client's optimum takes seconds per thousand (docs/failures.md).
pub(crate) const MAX_CLIENTS: usize = 1000;

/// What the command is asked.
pub(crate) struct Options {
    pub(crate) clients: usize,
    pub(crate) points: f64,
    pub(crate) delta: f64,
    pub(crate) q: usize,
    pub(crate) c: usize,
    pub(crate) seed: u64,
    /// Number the clients by expected time, fastest first (the thesis's order for its shards),
    /// instead of in the order of the seed's permutations.
    pub(crate) by_time: bool,
    pub(crate) json: bool,
    /// Print the network as config sections for a job on this many input features.
    pub(crate) toml: Option<usize>,
}

/// Print the allocation: t*, u*, and per client its rates, load, expected return, probability
/// of returning by t*, the encoding weight √(1 − P) and E[T] at its load.
pub(crate) fn run(o: &Options) -> Result<(), Failure> {
    let bad = |what: String| Err(Failure(what, 2));
    if o.clients == 0 || o.clients > MAX_CLIENTS {
        return bad(format!(
            "--clients = {}: 1 to {MAX_CLIENTS} clients (the thesis's network slows client k's link by 0.95^k and its compute by 0.8^k, so client {MAX_CLIENTS} is 10^-97 as fast as the first; and the allocation's time grows with the square of the clients)",
            o.clients
        ));
    }
    if !(o.points.is_finite() && o.points > 0.0 && o.points <= 1e9) {
        return bad(format!(
            "--points = {}: points per client must be positive, at most 10⁹",
            outrun_reproduce::num(o.points)
        ));
    }
    // what a config of these clients and redundancy would be refused for, as an argument's line
    let scheme = outrun_config::CodedfedlConfig {
        workers: o.clients,
        delta: o.delta,
        parity: None,
        generator: outrun_config::Generator::default(),
        deadline: None,
        batches: None,
    };
    if let Err(e) = scheme.validate() {
        return bad(e.to_string().replace("scheme.delta", "--delta").replace("scheme.workers", "--clients"));
    }
    if o.q == 0 || o.c == 0 {
        return bad("--q and --c: the model has q × c ≥ 1 values".into());
    }
    let perm = |id: u64| Rng::from_key(&[o.seed, domain::SAMPLE, id]).permutation(o.clients);
    let clients = thesis_clients(o.clients, o.q, o.c, o.points, &perm(2), &perm(3));
    let clients = if o.by_time { by_expected_time(clients, o.points) } else { clients };
    if let Some(p) = o.toml {
        if p == 0 {
            return bad("--toml 0: the job's input features must be at least 1".into());
        }
        print!("{}", sections(o, &clients, p));
        return Ok(());
    }
    let m = o.points * o.clients as f64;
    let u_max = o.delta * m;
    let a = allocate(&clients, None, u_max, m).map_err(|e| Failure(e.to_string(), 2))?;
    let row = |k: usize, n: &Node| {
        let (l, r) = (a.loads[k], a.returns[k]);
        let p = if l > 0.0 { r / l } else { 0.0 };
        (l, r, p, (1.0 - p).max(0.0).sqrt(), n.mean_time(l))
    };
    if o.json {
        let clients: Vec<serde_json::Value> = clients
            .iter()
            .enumerate()
            .map(|(k, n)| {
                let (l, r, p, w, e) = row(k, n);
                serde_json::json!({"client": k + 1, "mu": n.mu, "tau": n.tau_up, "load": l, "expected_return": r, "p_return": p, "weight": w, "mean_time": e})
            })
            .collect();
        let out = serde_json::json!({"t": a.t, "u": a.u, "m": m, "clients": clients});
        println!("{out}");
        return Ok(());
    }
    let slowest = clients.iter().map(|n| n.mean_time(o.points)).fold(0.0, f64::max);
    println!(
        "CodedFedL, {} clients × {} points (m = {m}), model {} × {}, parity u* = {} (δ = {}): t* = {:.1} s ({:.3} h); waiting for every client at full load takes at least the slowest one's mean, {:.1} s ({:.3} h)",
        o.clients, o.points, o.q, o.c, a.u, o.delta, a.t, a.t / 3600.0, slowest, slowest / 3600.0
    );
    println!("client  μ (points/s)   τ (s)      ℓ*       E[R]   P(T≤t*)  weight √(1−P)  E[T(ℓ*)] (s)");
    for (k, n) in clients.iter().enumerate() {
        let (l, r, p, w, e) = row(k, n);
        println!(
            "{:>6}  {:>12.4}  {:>7.3}  {:>7.1}  {:>8.2}  {:>7.4}  {:>13.4}  {:>12.1}",
            k + 1,
            n.mu,
            n.tau_up,
            l,
            r,
            p,
            w,
            e
        );
    }
    Ok(())
}

/// The network as a config's `[stragglers]`, `[timing]` and `[links]` sections for a job on `p`
/// input features, whose point costs q·c/p units (`Job::work`): client j's law ℓ/μ_j +
/// Exp(α_jμ_j/ℓ) is shifted-exp with a_j = 1/(μ_j·q·c/p) per unit and rate α_j/a_j; its link
/// τ_j both ways with p = 0.1; the server reliable (master_a ≈ 0).
fn sections(o: &Options, clients: &[Node], p: usize) -> String {
    let work = (o.q * o.c) as f64 / p as f64;
    let list = |v: &[f64]| v.iter().map(|x| format!("{x:.6e}")).collect::<Vec<_>>().join(", ");
    let a: Vec<f64> = clients.iter().map(|n| 1.0 / (n.mu * work)).collect();
    let mu: Vec<f64> = clients.iter().zip(&a).map(|(n, a)| n.alpha / a).collect();
    let tau = list(&clients.iter().map(|n| n.tau_up).collect::<Vec<_>>());
    format!(
        "# the thesis's simulated network (ch. 5 §5.5): {} clients, LTE 216 kbps × 0.95^k and 3.072 MMAC/s × 0.8^k\n\
         # permuted from seed {}, p = 0.1, α = 2, for a model of q = {} × c = {} on {p} features{}\n\
         # (outrun codedfedl-load --clients {} --q {} --c {} --points {} --seed {}{} --toml {p})\n\
         [stragglers]\nmodel = \"shifted-exp\"\na = [{}]\nmu = [{}]\n\n\
         [timing]\ncompute = \"modelled\"\na = {:.6e}\nmaster_a = 1e-12\n\n\
         [links]\nmodel = \"delay\"\ntau_up = [{tau}]\ntau_down = [{tau}]\np = {}\n",
        o.clients,
        o.seed,
        o.q,
        o.c,
        if o.by_time {
            format!(";\n# clients numbered by E[T] at {} points (eq. 5.15), fastest first, as the thesis hands out its shards", o.points)
        } else {
            String::new()
        },
        o.clients,
        o.q,
        o.c,
        o.points,
        o.seed,
        if o.by_time { "" } else { " --order seed" },
        list(&a),
        list(&mu),
        a.iter().sum::<f64>() / a.len() as f64,
        clients.first().map_or(0.1, |n| n.p)
    )
}
