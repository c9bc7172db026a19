//! Communication-efficient and adaptive gradient codes through `mpirun`: θ equals serial
//! gradient descent under injected stragglers for every code kind; upload sizes are the theory's
//! exactly; a group that cannot decode fails the run with one line naming it.

mod common;

use std::sync::LazyLock;

use common::*;
use outrun_testkit::Cfg;

fn base() -> Cfg {
    Cfg::linear("comm", 1200, 21, 8)
        .set("run.seed", 13)
        .set("run.iterations", 20)
        .set("run.deadline", 20.0)
        .set("run.trajectory", true)
        .set("model.lr", 0.4)
        .set("scheme.kind", "cegc")
        .set("scheme.s", 2)
        .set("scheme.m", 2)
        .set("timing.compute", "modelled")
        .set("timing.a", 2e-05)
}

/// The config above, as its TOML text.
static BASE: LazyLock<String> = LazyLock::new(|| base().text());

fn events(dir: &std::path::Path, rank: usize) -> Vec<serde_json::Value> {
    std::fs::read_to_string(dir.join(format!("rank-{rank}.jsonl")))
        .unwrap()
        .lines()
        .map(|l| serde_json::from_str(l).unwrap())
        .collect()
}

fn iters(dir: &std::path::Path, rank: usize) -> Vec<serde_json::Value> {
    events(dir, rank).into_iter().filter(|e| e["ev"] == "iter").collect()
}

#[test]
fn cegc_is_exact_for_every_code_kind() {
    let two_slow = ["stragglers.model=fixed", "stragglers.workers=[2, 7]", "stragglers.factor=5"];
    for (tag, sets) in [
        ("cegc-gauss", vec!["scheme.code=gaussian"]),
        ("cegc-sys", vec!["scheme.code=systematic"]),
        ("cegc-rep", vec!["scheme.code=repetition", "scheme.m=1", "scheme.s=3"]),
        ("cegc-ldpc", vec!["scheme.code=ldpc", "scheme.workers=10", "scheme.s=5", "scheme.m=5"]),
    ] {
        let mut all = sets.clone();
        all.extend(two_slow);
        assert_exact(tag, &BASE, &all);
    }
}

/// Each CommFR-GC upload is ⌈(p + 1)/m⌉ values (the gradient and the loss) in one frame.
#[test]
fn cegc_uploads_are_a_fraction_of_a_gradient() {
    let (run, dir, _, _) =
        train("cegc-bytes", &BASE, &["scheme.m=2", "stragglers.model=fixed", "stragglers.workers=[3]"]);
    assert_eq!(run.code, Some(0), "{}", run.stderr);
    let values = (21 + 1usize).div_ceil(2);
    let head = outrun_proto::Header::new(outrun_proto::Kind::Result, 0);
    let frame = outrun_proto::wire::frame_bytes(&head, values) as u64;
    let mut uploads = 0;
    for w in 1..=8 {
        // stragglers abandon (the next model comes first) and upload nothing
        for e in iters(&dir, w).into_iter().filter(|e| e["status"] == "sent") {
            assert_eq!(e["up_bytes"].as_u64(), Some(frame), "worker {w}, iteration {}: {e}", e["t"]);
            uploads += 1;
        }
    }
    // at least every result the master decoded from (a punctual worker may abandon one when the
    // next model overtakes its upload, more often on a loaded host: no fixed count)
    let used: usize = iters(&dir, 0).iter().map(|e| e["used"].as_array().map_or(0, Vec::len)).sum();
    assert!(used >= 20 && uploads >= used, "{uploads} uploads for {used} results used");
    // `outrun report` shows the same bytes per iteration, beside a GC run's full-vector uploads
    let (gc, gc_dir, _, _) = train(
        "gc-bytes",
        &BASE,
        &["scheme.kind=gc-cyclic", "scheme.m=", "stragglers.model=fixed", "stragglers.workers=[3]"],
    );
    assert_eq!(gc.code, Some(0), "{}", gc.stderr);
    let out = tempdir("comm-report");
    let r = outrun(&["report", dir.to_str().unwrap(), gc_dir.to_str().unwrap(), "--out", out.to_str().unwrap()]);
    assert_eq!(r.code, Some(0), "{}", r.stderr);
    let md = std::fs::read_to_string(out.join("report.md")).unwrap();
    let header: Vec<&str> = md.lines().find(|l| l.starts_with("| run |")).unwrap().split('|').map(str::trim).collect();
    let col = header.iter().position(|c| *c == "uploaded KB/it").expect("an upload column");
    let cell = |scheme: &str| -> f64 {
        let row =
            md.lines().find(|l| l.split('|').nth(2).map(str::trim) == Some(scheme)).unwrap_or_else(|| panic!("{md}"));
        row.split('|').nth(col).unwrap().trim().parse().unwrap()
    };
    assert_eq!(format!("{:.2}", cell("cegc")), format!("{:.2}", (uploads as u64 * frame) as f64 / 20.0 / 1e3), "{md}");
    // GC's uploads are whole gradients; per upload (how many a straggler still sent depends on
    // the host's timing) CEGC's are (p + 1)/m values, under 0.6 of GC's frame
    let full = outrun_proto::wire::frame_bytes(&head, 22) as u64;
    let gc_uploads = (1..=8).flat_map(|w| iters(&gc_dir, w)).filter(|e| e["status"] == "sent").count() as u64;
    assert!(gc_uploads >= 20 * 6, "{gc_uploads} GC uploads");
    assert_eq!(format!("{:.2}", cell("gc-cyclic")), format!("{:.2}", (gc_uploads * full) as f64 / 20.0 / 1e3), "{md}");
    assert!((frame as f64) < 0.6 * full as f64, "{frame} vs {full} bytes per upload");
}

#[test]
fn agc_and_g_agc_are_exact() {
    let agc = ["scheme.kind=agc", "scheme.workers=12", "scheme.s=", "scheme.m=", "scheme.d=3", "scheme.rounds=6"];
    let mut sets = agc.to_vec();
    sets.extend(["stragglers.model=fixed", "stragglers.workers=[4, 9]", "stragglers.factor=5"]);
    assert_exact("agc", &BASE, &sets);
    let mut sets = vec![
        "scheme.kind=g-agc",
        "scheme.workers=20",
        "scheme.s=",
        "scheme.m=",
        "scheme.d=3",
        "scheme.rounds=6",
        "data.samples=2000",
    ];
    sets.extend(["stragglers.model=bernoulli", "stragglers.p=0.15", "stragglers.factor=5"]);
    assert_exact("g-agc", &BASE, &sets);
}

/// Plain AGC at n ≥ 16: the decoding systems grow with n (N = L + (n − d)·r_s) and their
/// conditioning with them; θ follows serial gradient descent within 1e-6 (notes §8.H).
#[test]
fn agc_at_16_workers_is_exact_to_1e_6() {
    let sets = [
        "scheme.kind=agc",
        "scheme.workers=16",
        "scheme.s=",
        "scheme.m=",
        "scheme.d=3",
        "scheme.rounds=6",
        "stragglers.model=fixed",
        "stragglers.workers=[1, 16]",
        "stragglers.factor=5",
    ];
    let (run, dir, _, all) = train("agc16", &BASE, &sets);
    assert_eq!(run.code, Some(0), "{}", run.stderr);
    let diff = max_rel_diff(&trajectory(&dir), &reference(&BASE, &all));
    eprintln!("agc n=16: max relative θ difference to serial GD = {diff:.2e}");
    assert!(diff <= 1e-6, "{diff:e}");
}

/// With s slow workers, the master decodes from the active workers only, after at least r_s
/// rounds, from at least N_s = L + (n − d)·r_s rows (the fewest that can determine g) and at most
/// what had arrived. Through MPI arrivals interleave across rounds, so the greedy capped rule may
/// need a round more from a fast worker than the round-major count; the simulator's test
/// (`outrun-sim/tests/adaptive.rs`) checks q_s exactly where rounds arrive in order.
#[test]
fn agc_decodes_from_active_workers_after_r_s_rounds() {
    let (n, d, l) = (12usize, 4usize, 12usize);
    for slow in [vec![], vec![6usize], vec![2, 6], vec![2, 6, 11]] {
        let s = slow.len();
        let mut sets: Vec<String> = [
            "scheme.kind=agc",
            "scheme.s=",
            "scheme.m=",
            "scheme.workers=12",
            "scheme.d=4",
            "scheme.rounds=12",
            "run.iterations=6",
        ]
        .iter()
        .map(|x| x.to_string())
        .collect();
        if !slow.is_empty() {
            sets.extend([
                "stragglers.model=fixed".into(),
                format!("stragglers.workers={slow:?}"),
                // far enough behind that a loaded host's scheduling never lets them in first
                "stragglers.factor=300".into(),
            ]);
        }
        let refs: Vec<&str> = sets.iter().map(String::as_str).collect();
        let (run, dir, _, _) = train(&format!("agc-q{s}"), &BASE, &refs);
        assert_eq!(run.code, Some(0), "{}", run.stderr);
        let r_s = outrun_codes::rounds_needed(d, l, s);
        let least = l + (n - d) * r_s;
        let mut seen = 0;
        for e in iters(&dir, 0) {
            assert_eq!(e["exact"], true, "s = {s}: {e}");
            assert!(e["rounds_used"].as_u64().unwrap() >= r_s as u64, "s = {s}: {e}");
            let uses: Vec<(u64, u64)> = e["uses"]
                .as_array()
                .unwrap()
                .iter()
                .map(|x| (x[0].as_u64().unwrap(), x[1].as_u64().unwrap()))
                .collect();
            assert!(
                uses.iter().all(|(w, _)| !slow.contains(&(*w as usize))),
                "s = {s}: a straggler's rounds were used: {uses:?}"
            );
            let rows: u64 = uses.iter().map(|u| u.1).sum();
            let arrived = e["arrivals"].as_array().unwrap().len() as u64;
            assert!(
                rows >= least as u64 && rows <= arrived,
                "s = {s}: {rows} rows used, {arrived} arrived, at least {least} needed"
            );
            seen += 1;
        }
        assert_eq!(seen, 6, "s = {s}");
    }
}

#[test]
fn a_group_beyond_tolerance_fails_naming_the_group() {
    // three dead workers in group 1 (workers 1..4) of a [4, 2] code: group 1 cannot decode
    let (run, _, _, _) =
        train("cegc-dead", &BASE, &["stragglers.model=fail-stop", "stragglers.workers=[1, 2, 3]", "run.deadline=2"]);
    assert_eq!(run.code, Some(1), "{}", run.stderr);
    let lines = common::said(&run.stderr);
    assert_eq!(lines.len(), 1, "{}", run.stderr);
    assert!(
        lines[0].contains("group 1 (children 1..4)") && lines[0].contains("missing: workers 1, 2, 3"),
        "{}",
        lines[0]
    );
}

/// Ye and Abbe's CGC and its group version: exact under up to s_max stragglers (two fixed slow
/// workers, and a Bernoulli process whose draws stay within each group's s_max), one upload of
/// ⌈(p + 1)/m⌉ values per worker; more dead workers than s_max fail the run at the deadline, in
/// one line naming them.
#[test]
fn cgc_and_g_cgc_are_exact_and_upload_a_fraction_of_a_gradient() {
    let cgc = ["scheme.kind=cgc", "scheme.workers=8", "scheme.s=2", "scheme.m=2"];
    let mut sets = cgc.to_vec();
    sets.extend(["stragglers.model=fixed", "stragglers.workers=[3, 7]", "stragglers.factor=5"]);
    let summary = assert_exact("cgc", &BASE, &sets);
    assert_eq!(summary["exact_iterations"], 20);
    let (run, dir, _, _) = train("cgc-up", &BASE, &cgc);
    assert_eq!(run.code, Some(0), "{}", run.stderr);
    // p = 21 features: a result is the gradient and the loss, 22 values, and each upload ⌈22/2⌉
    let want = outrun_proto::wire::frame_bytes(&outrun_proto::Header::new(outrun_proto::Kind::Result, 0), 11) as u64;
    let mut uploads = 0;
    for rank in 1..=8 {
        // a worker the next model overtakes abandons and uploads nothing
        for rec in iters(&dir, rank).into_iter().filter(|e| e["status"] == "sent") {
            assert_eq!(rec["up_bytes"].as_u64(), Some(want), "rank {rank}: {rec}");
            uploads += 1;
        }
    }
    // 20 iterations × 8 workers, each needing 6
    assert!(uploads >= 20 * 6, "{uploads} uploads");
    let mut sets = vec!["scheme.kind=g-cgc", "scheme.workers=12", "scheme.s=1", "scheme.m=2"];
    sets.extend(["stragglers.model=fixed", "stragglers.workers=[2, 6, 11]", "stragglers.factor=5"]);
    assert_exact("g-cgc", &BASE, &sets);
    let mut dead = cgc.to_vec();
    dead.extend(["stragglers.model=fail-stop", "stragglers.workers=[1, 4, 6]", "run.deadline=2"]);
    let (run, _, _, _) = train("cgc-dead", &BASE, &dead);
    assert_eq!(run.code, Some(1), "{}", run.stderr);
    let lines = common::said(&run.stderr);
    assert_eq!(lines.len(), 1, "{}", run.stderr);
    assert!(lines[0].contains("missing: workers 1, 4, 6"), "{}", lines[0]);
}
