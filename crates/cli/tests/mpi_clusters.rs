//! Gradient coding with static and dynamic clustering through `mpirun` (notes
//! `seed-002-gcdc.md`, tests 19 and 20): θ equals serial gradient descent under two-state Markov
//! stragglers 50× slower than the fast state, for GC, GC-SC and GC-DC; the GC-DC master
//! re-forms valid clusters every iteration from the previous iteration's states and the workers
//! compute the codeword it assigned; a straggler's stale result for an earlier iteration is
//! received, counted and discarded, never decoded.

mod common;

use std::sync::LazyLock;

use outrun_testkit::Cfg;
use std::collections::{BTreeSet, HashMap};

use common::*;
use serde_json::Value;

fn base() -> Cfg {
    Cfg::linear("clusters", 1200, 21, 12)
        .set("run.seed", 31)
        .set("run.iterations", 30)
        .set("run.deadline", 30.0)
        .set("run.trajectory", true)
        .set("model.lr", 0.4)
        .set("scheme.kind", "gc-dc")
        .set("scheme.clusters", 4)
        .set("scheme.r", 2)
        .set("scheme.n", 2)
        .set("stragglers.model", "markov")
        .set("stragglers.p", 0.2)
        .set("stragglers.a", 2e-06)
        .set("stragglers.mu_slow", 20000.0)
        .set("stragglers.mu_fast", 1000000.0)
        .set("stragglers.initial_slow", 5)
        .set("timing.compute", "modelled")
}

/// The config above, as its TOML text.
static BASE: LazyLock<String> = LazyLock::new(|| base().text());

fn ids(v: &Value) -> BTreeSet<u64> {
    v.as_array().unwrap().iter().map(|x| x.as_u64().unwrap()).collect()
}

#[test]
fn gc_gc_sc_and_gc_dc_are_exact_under_markov_stragglers() {
    for (tag, sets) in [
        ("gc", vec!["scheme.kind=gc-cyclic", "scheme.s=1", "scheme.clusters=", "scheme.r=", "scheme.n="]),
        ("gc-sc", vec!["scheme.kind=gc-sc", "scheme.n="]),
        ("gc-dc-observed", vec!["scheme.ssi=observed"]),
    ] {
        let s = assert_exact(tag, &BASE, &sets);
        assert!(s["late_discarded"].as_u64().unwrap() > 0, "{tag}: the slow workers' results should arrive late");
    }
    // uploads by grant: the master re-clusters and grants within clusters; nothing arrives late
    for (tag, sets) in [
        ("gc-sc-granted", vec!["scheme.kind=gc-sc", "scheme.n=", "engine.upload=granted"]),
        ("gc-dc-granted", vec!["engine.upload=granted"]),
    ] {
        let s = assert_exact(tag, &BASE, &sets);
        assert_eq!(s["late_discarded"], 0, "{tag}");
    }
}

#[test]
fn gc_dc_reclusters_every_iteration_and_never_decodes_a_stale_result() {
    let s = assert_exact("gc-dc", &BASE, &[]);
    let (_, dir, _, _) = train("gc-dc-logs", &BASE, &[]);
    assert!(s["late_discarded"].as_u64().unwrap() > 0);
    let master = iter_records(&dir, 0);
    let workers: Vec<HashMap<u64, Value>> =
        (1..=12).map(|w| iter_records(&dir, w).into_iter().map(|e| (e["t"].as_u64().unwrap(), e)).collect()).collect();
    let mut partitions = BTreeSet::new();
    let mut prev_slow: Option<BTreeSet<u64>> = None;
    for e in &master {
        let t = e["t"].as_u64().unwrap();
        // a valid partition: 4 clusters of 3, every worker once, positions a bijection
        let clusters: Vec<BTreeSet<u64>> = e["clusters"].as_array().unwrap().iter().map(ids).collect();
        assert_eq!(clusters.iter().map(BTreeSet::len).collect::<Vec<_>>(), vec![3; 4], "{e}");
        assert_eq!(clusters.iter().flatten().copied().collect::<BTreeSet<_>>(), (1..=12).collect(), "{e}");
        partitions.insert(format!("{clusters:?}"));
        let positions: Vec<(u64, u64)> = e["positions"]
            .as_array()
            .unwrap()
            .iter()
            .map(|p| (p[0].as_u64().unwrap(), p[1].as_u64().unwrap()))
            .collect();
        for (c, members) in clusters.iter().enumerate() {
            let pos: BTreeSet<u64> = members
                .iter()
                .map(|&w| positions[w as usize - 1])
                .filter(|p| p.0 == c as u64 + 1)
                .map(|p| p.1)
                .collect();
            assert_eq!(pos, (1..=3).collect(), "cluster {}: positions {positions:?}", c + 1);
        }
        // imperfect SSI: the master believes the previous iteration's true states
        if let Some(prev) = &prev_slow {
            assert_eq!(&ids(&e["believed"]), prev, "iteration {t}: {e}");
        }
        prev_slow = Some(ids(&e["slow"]));
        // each cluster decoded from 2 of its current members, who computed what they were assigned
        for (c, resp) in e["responders"].as_array().unwrap().iter().enumerate() {
            let resp = ids(resp);
            assert_eq!(resp.len(), 2, "{e}");
            assert!(resp.is_subset(&clusters[c]), "iteration {t}: responders {resp:?} not in cluster {}", c + 1);
            for &w in &resp {
                let rec = &workers[w as usize - 1][&t];
                assert_eq!(rec["status"], "sent", "worker {w} at {t}: {rec}");
                let a = &rec["assigned"];
                assert_eq!(
                    (a[0].as_u64().unwrap(), a[1].as_u64().unwrap()),
                    positions[w as usize - 1],
                    "worker {w} at {t}"
                );
            }
        }
    }
    assert!(partitions.len() > 1, "the clusters never changed");
    // the slow workers' results for earlier iterations arrived during later ones: discarded
    let late: Vec<Value> = std::fs::read_to_string(dir.join("rank-0.jsonl"))
        .unwrap()
        .lines()
        .map(|l| serde_json::from_str::<Value>(l).unwrap())
        .filter(|e| e["ev"] == "late")
        .collect();
    assert!(late.iter().any(|e| e["msg_t"].as_u64() < e["t"].as_u64()), "no stale result seen: {late:?}");
    // `outrun report` plots the partition over time
    let out = dir.at(dir.join("report"));
    let rep = outrun(&["report", dir.to_str().unwrap(), "--out", out.to_str().unwrap()]);
    assert_eq!(rep.code, Some(0), "{}", rep.stderr);
    let md = std::fs::read_to_string(out.join("report.md")).unwrap();
    assert!(md.contains("-partition-") && md.contains("cluster of every worker per iteration"), "{md}");
}

#[test]
fn perfect_state_information_is_refused_outside_the_simulator() {
    let dir = tempdir("gcdc-perfect");
    let cfg = write_config(&dir, &BASE);
    let run = outrun(&["check", cfg.to_str().unwrap(), "--set", "scheme.ssi=perfect"]);
    assert_eq!(run.code, Some(2));
    assert!(run.stderr.contains("scheme.ssi") && run.stderr.contains("simulator-only"), "{}", run.stderr);
    assert_eq!(run.stderr.trim().lines().count(), 1, "{}", run.stderr);
    let sim = outrun(&[
        "simulate",
        cfg.to_str().unwrap(),
        "--trials",
        "2",
        "--set",
        "scheme.ssi=perfect",
        "--set",
        &format!("run.out_dir={}", dir.join("sim").display()),
    ]);
    assert_eq!(sim.code, Some(0), "{}", sim.stderr);
}
