//! AGC's communication cost in the simulator, where the master's port serialises uploads so
//! rounds arrive in round-major order (the model broadcast is free, `downlink = false`, so every
//! worker starts at once; otherwise the serialised broadcast staggers them by several uploads): with s slow workers the master decodes from exactly r_s
//! rounds of each of the n − s active workers, q_s = r_s·⌈w/L⌉ values each (AGC paper, eq. 16),
//! and none of the stragglers'. (Through MPI, arrivals interleave across rounds; the engine test
//! checks the invariants that hold there.)

use std::sync::LazyLock;

use outrun_config::parse;
use outrun_sim::{simulate, Math, Options};
use outrun_testkit::Cfg;

fn cfg() -> Cfg {
    Cfg::linear("agc-q", 1200, 21, 12)
        .set("run.seed", 13)
        .set("run.iterations", 4)
        .set("model.lr", 0.4)
        .set("scheme.kind", "agc")
        .set("scheme.d", 4)
        .set("scheme.rounds", 12)
        .set("network.bandwidth", "100mbit")
        .set("network.downlink", false)
        .set("timing.compute", "modelled")
        .set("timing.a", 2e-05)
}

/// The config above, as its TOML text.
static CFG: LazyLock<String> = LazyLock::new(|| cfg().text());

#[test]
fn agc_decodes_from_q_s_values_per_active_worker() {
    let (n, d, l, w) = (12usize, 4usize, 12usize, 22usize); // w = p + 1 (gradient and loss)
    for slow in [vec![], vec![6usize], vec![2, 6], vec![2, 6, 11]] {
        let s = slow.len();
        let out = tempfile::tempdir().unwrap();
        let mut sets = vec![format!("run.out_dir={}", out.path().display())];
        if !slow.is_empty() {
            sets.extend([
                "stragglers.model=fixed".into(),
                format!("stragglers.workers={slow:?}"),
                "stragglers.factor=30".into(),
            ]);
        }
        let cfg = parse(&CFG, &sets).unwrap();
        let plan = outrun_workloads::resolve(&cfg).unwrap();
        let sim = simulate(&plan, &cfg.to_toml(), &Options { trials: 1, math: Math::On, write: true }).unwrap();
        let log = std::fs::read_to_string(sim.run_dir.unwrap().join("rank-0.jsonl")).unwrap();
        let r_s = outrun_codes::rounds_needed(d, l, s);
        let q_s = outrun_codes::q_agc(d, w, l)[s];
        let mut seen = 0;
        for e in
            log.lines().map(|l| serde_json::from_str::<serde_json::Value>(l).unwrap()).filter(|e| e["ev"] == "iter")
        {
            let uses: Vec<(usize, usize)> = e["uses"]
                .as_array()
                .unwrap()
                .iter()
                .map(|x| (x[0].as_u64().unwrap() as usize, x[1].as_u64().unwrap() as usize))
                .collect();
            let active: Vec<usize> = (1..=n).filter(|w| !slow.contains(w)).collect();
            assert_eq!(uses.iter().map(|u| u.0).collect::<Vec<_>>(), active, "s = {s}: {e}");
            for &(worker, rounds) in &uses {
                assert_eq!(rounds * w.div_ceil(l), q_s, "s = {s}, worker {worker}: {rounds} rounds, q_s = {q_s}");
            }
            assert_eq!(e["rounds_used"].as_u64(), Some(r_s as u64), "s = {s}: {e}");
            assert!(e["residual"].as_f64().unwrap() <= 1e-9 && e["exact"] == true, "s = {s}: {e}");
            seen += 1;
        }
        assert_eq!(seen, 4, "s = {s}");
    }
}
