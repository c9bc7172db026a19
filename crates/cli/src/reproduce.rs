//! `outrun reproduce` (the papers' results beside ours) and `outrun theory` (the analytic
//! results as commands a script can call with other parameters).

use crate::Failure;
use outrun_codes::theory;
use outrun_reproduce::{catalogue, is_root, markdown, num, run, run_emulated, text, Method, Outcome, Result_, Verdict};

/// What `outrun reproduce` was asked.
pub(crate) struct Options {
    pub(crate) ids: Vec<String>,
    pub(crate) list: bool,
    pub(crate) all: bool,
    pub(crate) emulated: bool,
    pub(crate) quick: bool,
    pub(crate) json: bool,
    pub(crate) markdown: bool,
}

fn list() {
    let cat = catalogue();
    let w = cat.iter().map(|r| r.id.len()).max().unwrap_or(0);
    for r in &cat {
        let mut time = match &r.quick_time {
            Some(q) => format!("{}, {} with --quick", r.time, q),
            None => r.time.clone(),
        };
        let cmd = r.command.as_deref().unwrap_or("?");
        match r.method {
            Method::Script => time.push_str(&format!(": {cmd}")),
            Method::Emulated => time.push_str(&format!(": sudo outrun reproduce {} or {cmd}", r.id)),
            _ => {}
        }
        if let Some(d) = &r.data {
            time.push_str(&format!(", after {} ({})", d.script, d.what));
        }
        println!("{:w$}  {} — {}: {} [{}; {}]", r.id, r.paper, r.source, r.setting, r.method.name(), time);
    }
}

/// `outrun reproduce`: exit 2 for an unknown ID, 1 when a result cannot be computed or a number
/// deviates with no known reason.
pub(crate) fn reproduce(o: Options) -> Result<(), Failure> {
    if o.list {
        list();
        return Ok(());
    }
    let cat = catalogue();
    if o.emulated && !o.all {
        return Err(Failure(
            "reproduce: --emulated goes with --all (a result named by its ID is measured anyway)".into(),
            2,
        ));
    }
    if o.ids.is_empty() && !o.all {
        return Err(Failure("reproduce: name results (`outrun reproduce --list` lists them) or give --all".into(), 2));
    }
    let chosen: Vec<_> = if o.all {
        cat.iter().collect()
    } else {
        o.ids
            .iter()
            .map(|id| {
                cat.iter().find(|r| &r.id == id).ok_or_else(|| {
                    let ids: Vec<&str> = cat.iter().map(|r| r.id.as_str()).collect();
                    Failure(format!("reproduce: no result `{id}`; one of {}", ids.join(", ")), 2)
                })
            })
            .collect::<Result<_, _>>()?
    };
    // measured on the emulated cluster when named, or with --all --emulated; listed as not run
    // otherwise. Root is checked before anything runs.
    let measured = |r: &Result_| r.method == Method::Emulated && (!o.all || o.emulated);
    let needs_root: Vec<&str> = chosen.iter().filter(|r| measured(r)).map(|r| r.id.as_str()).collect();
    if !needs_root.is_empty() && !is_root() {
        return Err(Failure(
            format!(
                "reproduce: {} measured on the emulated cluster, which needs root (network namespaces): run it with sudo",
                needs_root.join(", ")
            ),
            2,
        ));
    }
    // a result named by its ID whose data is not fetched: refused before anything runs (with
    // --all it is listed as not run, naming the script)
    if !o.all {
        for r in &chosen {
            if let (Some(d), Some(first)) = (&r.data, r.missing_data().first()) {
                return Err(Failure(
                    format!("reproduce: {} reads {}, and {} is missing: run {} first", r.id, d.what, first, d.script),
                    2,
                ));
            }
        }
    }
    let mut outcomes: Vec<Outcome> = vec![];
    let mut failed = vec![];
    for (i, r) in chosen.iter().enumerate() {
        let id = r.id.clone();
        let count = chosen.len();
        let mut progress = |what: &str| eprintln!("reproduce [{}/{count}] {id}: {what}", i + 1);
        let outcome =
            if measured(r) { run_emulated(r, o.quick, &mut progress) } else { run(r, o.quick, &mut progress) };
        match outcome {
            Ok(out) => {
                if !o.json && !o.markdown {
                    println!("{}", text(&out));
                }
                outcomes.push(out);
            }
            Err(e) => {
                eprintln!("error: {e}");
                failed.push(r.id.clone());
            }
        }
    }
    if o.json {
        println!("{}", serde_json::to_string_pretty(&outcomes).expect("outcomes serialise"));
    }
    if o.markdown {
        print!("{}", document(&outcomes, o.quick));
    }
    let unexplained: Vec<String> = outcomes
        .iter()
        .flat_map(|out| out.unexplained().into_iter().map(move |row| format!("{}: {}", out.id, row.quantity)))
        .collect();
    if !failed.is_empty() {
        return Err(Failure(format!("reproduce: {} could not be computed: {}", failed.len(), failed.join(", ")), 1));
    }
    if !unexplained.is_empty() {
        return Err(Failure(
            format!(
                "reproduce: {} number(s) deviate from the paper with no known reason: {}",
                unexplained.len(),
                unexplained.join("; ")
            ),
            1,
        ));
    }
    Ok(())
}

/// docs/results/README.md: an index of every result, then one section each.
fn document(outcomes: &[Outcome], quick: bool) -> String {
    let mut out = String::from(
        "# The papers' results, reproduced\n\n\
         Generated by `outrun reproduce --all --markdown` (`make reproduce-doc`); do not edit by hand. \
         The papers' values come from `crates/reproduce/papers.toml` (each with its table or figure); \
         ours are computed by the command every time. `outrun reproduce --list` names every result, \
         `outrun reproduce ID` runs one. Results marked *emulated* are measured by the engine on \
         the emulated cluster (root: `sudo outrun reproduce ID`, or `--all --emulated`; this file \
         is made with it when `make reproduce-doc` runs as root); results marked *script* are run \
         by the make target named in their row. Both are written up in this directory's other files. \
         Where ours comes from repeated measurements (their median or mean), its row gives their smallest and \
         largest in brackets and says *reproduced* only when every repetition would.\n\n",
    );
    if quick {
        out.push_str("This copy was made with `--quick` (fewer simulated trials).\n\n");
    }
    let rows = outcomes.iter().flat_map(|o| &o.rows);
    let (mut rep, mut dev, mut unk, mut na, mut nr) = (0, 0, 0, 0, 0);
    for r in rows {
        match r.verdict {
            Verdict::Reproduced => rep += 1,
            Verdict::Deviates(Some(_)) => dev += 1,
            Verdict::Deviates(None) => unk += 1,
            Verdict::NotApplicable(_) => na += 1,
            Verdict::NotRun(_) => nr += 1,
        }
    }
    // computed: every number has a value or a reason it has none
    let computed = outcomes.iter().filter(|o| !o.rows.iter().any(|r| matches!(r.verdict, Verdict::NotRun(_)))).count();
    out.push_str(&format!(
        "{} results, {computed} computed by the command: of their numbers {rep} reproduced, {dev} deviate with a measured reason, {unk} deviate with no known reason, {na} not applicable (why: in their rows)",
        outcomes.len(),
    ));
    if computed < outcomes.len() {
        out.push_str(&format!(
            "; {nr} numbers of the other {} results are not run by this command (a script, or the emulated cluster without --emulated)",
            outcomes.len() - computed
        ));
    }
    out.push_str(".\n\n");
    out.push_str("| ID | paper | where | method | outcome |\n|---|---|---|---|---|\n");
    for o in outcomes {
        out.push_str(&format!(
            "| [`{}`](#{}) | {} | {} | {} | {} |\n",
            o.id,
            anchor(o),
            o.paper.replace('|', "\\|"),
            o.source.replace('|', "\\|"),
            o.method.name(),
            o.tally()
        ));
    }
    out.push('\n');
    for o in outcomes {
        out.push_str(&markdown(o));
    }
    out
}

/// The anchor GitHub gives a section's heading.
fn anchor(o: &Outcome) -> String {
    let heading = format!("{}: {}, {}", o.id, o.paper, o.source);
    heading
        .to_lowercase()
        .chars()
        .filter_map(|c| match c {
            ' ' => Some('-'),
            c if c.is_alphanumeric() || c == '-' || c == '_' => Some(c),
            _ => None,
        })
        .collect()
}

/// `outrun theory sk`: s_κ of CommFR-GC and of Ye–Abbe's Gaussian scheme (seed 001, Theorem 2).
pub(crate) struct Sk {
    pub(crate) n: usize,
    pub(crate) s: usize,
    pub(crate) m: usize,
    pub(crate) kappa: f64,
    pub(crate) eps: f64,
    pub(crate) c: f64,
    pub(crate) json: bool,
}

pub(crate) fn sk(a: Sk) -> Result<(), Failure> {
    let bad = |m: String| Err(Failure(format!("theory sk: {m}"), 2));
    if a.n == 0 || a.m == 0 {
        return bad(format!("--n and --m must be at least 1 (n = {}, m = {})", a.n, a.m));
    }
    if a.s >= a.n {
        return bad(format!("--s = {} must be below --n = {}", a.s, a.n));
    }
    if !(a.kappa.is_finite() && a.kappa >= 1.0) {
        // ‖A‖·‖A⁻¹‖ ≥ ‖A·A⁻¹‖ = 1: a bound below 1 holds for no matrix
        return bad(format!("--kappa = {} must be a condition number: at least 1", a.kappa));
    }
    if !(a.eps > 0.0 && a.eps < 1.0) {
        return bad(format!("--eps = {} must lie in (0, 1)", a.eps));
    }
    if !(a.c.is_finite() && a.c > 0.0) {
        return bad(format!("--c = {} must be positive", a.c));
    }
    if a.s + a.m > 1_000_000 || a.n > 1_000_000 {
        return bad("n and s + m at most 10⁶".into());
    }
    let ya = theory::s_kappa_ya(a.n, a.s, a.kappa, a.eps, a.c);
    let cf = theory::s_kappa_commfr(a.s, a.m, a.kappa, a.eps, a.c);
    let cond8 = theory::condition8(a.s, a.m, a.kappa, a.eps, a.c);
    let group = a.s + a.m;
    let divides = a.n.is_multiple_of(group);
    if a.json {
        let pair = |x: Option<(usize, usize)>| match x {
            Some((s, t)) => serde_json::json!({ "s_kappa": s, "t_star": t }),
            None => serde_json::Value::Null,
        };
        let v = serde_json::json!({
            "n": a.n, "s": a.s, "m": a.m, "kappa": a.kappa, "eps": a.eps, "c": a.c,
            "ye_abbe": pair(ya), "commfr_gc": pair(cf),
            "condition8": cond8, "group_divides_n": divides,
        });
        println!("{v}");
        return Ok(());
    }
    let show = |x: Option<(usize, usize)>, of: usize| match x {
        Some((s, t)) => format!("s_κ = {s} (t* = {t} of {of})"),
        None => format!("none: f(t) > ε for every t up to {of}"),
    };
    println!("n = {}, s = {}, m = {}, κ = {}, ε = {}, C = {}", a.n, a.s, a.m, num(a.kappa), num(a.eps), num(a.c));
    println!("Ye–Abbe (Gaussian, all n workers): {}", show(ya, a.n));
    println!("CommFR-GC (Gaussian [{group}, {}] code per group): {}", a.m, show(cf, group));
    println!(
        "condition (8) on κ: {}; N = s + m = {group} {} n = {}{}",
        if cond8 { "holds" } else { "does NOT hold (Theorem 2 says nothing)" },
        if divides { "divides" } else { "does not divide" },
        a.n,
        if divides { "" } else { " (this CommFR-GC cannot be built)" }
    );
    Ok(())
}

/// `outrun theory bec`: the erasure threshold of a regular LDPC ensemble.
pub(crate) fn bec(dv: usize, dc: usize, json: bool) -> Result<(), Failure> {
    if dv < 2 || dc < 2 {
        return Err(Failure(format!("theory bec: --dv and --dc must be at least 2 (got {dv}, {dc})"), 2));
    }
    if dv > 1000 || dc > 1000 {
        return Err(Failure("theory bec: --dv and --dc at most 1000".into(), 2));
    }
    if dc <= dv {
        // a check node per dv/dc of a variable: with dc ≤ dv the ensemble carries no information
        return Err(Failure(
            format!(
                "theory bec: --dc = {dc} must exceed --dv = {dv} (the design rate 1 − dv/dc would be {})",
                num(1.0 - dv as f64 / dc as f64)
            ),
            2,
        ));
    }
    let p = theory::bec_threshold(dv, dc);
    let rate = 1.0 - dv as f64 / dc as f64;
    if json {
        println!("{}", serde_json::json!({ "dv": dv, "dc": dc, "threshold": p, "design_rate": rate }));
    } else {
        println!(
            "({dv}, {dc})-regular LDPC on the erasure channel: peeling threshold p* = {p:.7}, design rate {rate:.4}"
        );
    }
    Ok(())
}

/// `outrun theory agc-aet`: the restart model's average execution times, one row per p.
pub(crate) fn agc_aet(n: usize, d: usize, tcp: f64, tcm: f64, p: &str, json: bool) -> Result<(), Failure> {
    use outrun_codes::restart::{Model, Scheme};
    let bad = |m: String| Err(Failure(format!("theory agc-aet: {m}"), 2));
    if d == 0 || d > n || n > 2000 {
        return bad(format!("--d must lie in 1..=n and n ≤ 2000 (n = {n}, d = {d})"));
    }
    if d > 200 {
        // 2d + 2 schemes, each an n·d sum a p: n = 2000, d = 200 takes about 10 s a p here
        return bad(format!("--d = {d}: at most 200 (the table has a column for each of 2d + 2 schemes)"));
    }
    if !((0.0..=1e6).contains(&tcp) && (0.0..=1e6).contains(&tcm)) {
        return bad(format!("--tcp and --tcm must be times from 0 to 10⁶ (got {}, {})", num(tcp), num(tcm)));
    }
    let ps = p
        .split(',')
        .map(|v| match v.trim().parse::<f64>() {
            Ok(x) if x > 0.0 && x < 1.0 => Ok(x),
            _ => Err(Failure(format!("theory agc-aet: --p: `{v}` is not a probability in (0, 1)"), 2)),
        })
        .collect::<Result<Vec<f64>, Failure>>()?;
    let mut schemes: Vec<Scheme> = (0..d).map(|s_max| Scheme::Cgc { s_max }).collect();
    schemes.push(Scheme::Agc);
    schemes.extend((0..d).map(|s_max| Scheme::GroupCgc { s_max }));
    schemes.push(Scheme::GroupAgc);
    let names: Vec<String> = schemes.iter().map(|s| s.name()).collect();
    if !json {
        println!("n = {n}, d = {d}, t_cp = {}, t_cm = {}: average execution time per scheme", num(tcp), num(tcm));
        println!("{:>8}  {}", "p", names.iter().map(|n| format!("{n:>19}")).collect::<Vec<_>>().join(""));
    }
    for p in ps {
        let model = Model { n, d, t_cp: tcp, t_cm: tcm };
        let v: Vec<f64> = schemes.iter().map(|&s| model.aet(s, p)).collect();
        if json {
            let row: serde_json::Map<String, serde_json::Value> =
                names.iter().zip(&v).map(|(k, x)| (k.clone(), serde_json::json!(x))).collect();
            println!("{}", serde_json::json!({ "n": n, "d": d, "t_cp": tcp, "t_cm": tcm, "p": p, "aet": row }));
        } else {
            println!("{:>8}  {}", num(p), v.iter().map(|x| format!("{x:>19.3}")).collect::<Vec<_>>().join(""));
        }
    }
    Ok(())
}
