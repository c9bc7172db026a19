//! CodedReduce through `mpirun`: exactness on (3,2) and (2,3) trees with uneven data sizes under
//! injected stragglers, stale-message handling, and subtree failures beyond tolerance.

mod common;

use std::time::Duration;

use common::*;

const CR: &str = r#"
[run]
name = "cr"
seed = 21
iterations = 20
deadline = 20.0
trajectory = true

[data]
kind = "linear-synthetic"
samples = 1001
features = 9

[model]
loss = "least-squares"
lr = 0.4
l2 = 0.001

[scheme]
kind = "cr"
n = 3
layers = 2
s = 1
code = "cyclic"

[timing]
compute = "modelled"
a = 5e-5
"#;

const RANDOM: [&str; 4] =
    ["stragglers.model=bernoulli", "stragglers.p=0.25", "stragglers.factor=6", "stragglers.mode=per-iteration"];

#[test]
fn cr_3x2_cyclic_is_exact_under_random_stragglers() {
    let s = assert_exact("cr32-cyclic", CR, &RANDOM);
    assert_eq!(s["ranks"], 13);
}

#[test]
fn cr_3x2_is_exact_with_s_stragglers_under_every_parent() {
    // worker 2 is a parent: its whole subtree straggles at the master; 5, 9, 12 straggle under
    // parents 1, 2, 3 — exactly s = 1 per parent, every iteration (AT-10's stale results too).
    let s = assert_exact(
        "cr32-fixed",
        CR,
        &["stragglers.model=fixed", "stragglers.workers=[2, 5, 9, 12]", "stragglers.factor=4"],
    );
    assert!(s["late_discarded"].as_u64().unwrap() >= 19, "the slow subtree's results must be discarded as late");
}

#[test]
fn cr_3x2_frac_with_s_2_is_exact() {
    assert_exact("cr32-frac", CR, &["scheme.s=2", "scheme.code=frac", "data.samples=1003"]);
}

#[test]
fn cr_2x3_is_exact_with_both_codes() {
    for code in ["cyclic", "frac"] {
        let s = assert_exact(
            &format!("cr23-{code}"),
            CR,
            &[
                "scheme.n=2",
                "scheme.layers=3",
                &format!("scheme.code={code}"),
                "data.samples=997",
                RANDOM[0],
                RANDOM[1],
                RANDOM[2],
                RANDOM[3],
            ],
        );
        assert_eq!(s["ranks"], 15);
    }
}

#[test]
fn logistic_cr_is_exact() {
    let cfg = CR.replace("linear-synthetic", "logistic-synthetic").replace("least-squares", "logistic");
    assert_exact("cr-logistic", &cfg, &RANDOM);
}

#[test]
fn dead_leaves_under_two_parents_fail_the_run_naming_the_subtrees() {
    // (3,2), s = 1: leaves 5, 6 (under parent 1) and 8, 9 (under parent 2) stop answering at
    // iteration 2; parents 1 and 2 cannot decode, so the master is left with one of three.
    let (run, _, _, _) = train(
        "cr-dead-leaves",
        CR,
        &[
            "stragglers.model=fail-stop",
            "stragglers.workers=[5, 6, 8, 9]",
            "stragglers.from_iteration=2",
            "run.deadline=3",
        ],
    );
    assert_eq!(run.code, Some(1), "{}", run.stderr);
    let line = run.stderr.trim();
    assert_eq!(line.lines().count(), 1, "{line}");
    assert!(line.starts_with("error: iteration 2: cr needs 2 of 3 results at the master"), "{line}");
    assert!(line.contains("1 (its subtree failed: rank 1 is missing children 5, 6)"), "{line}");
    assert!(line.contains("2 (its subtree failed: rank 2 is missing children 8, 9)"), "{line}");
    assert!(run.elapsed < Duration::from_secs(3 + 15), "{:?}", run.elapsed);
}

#[test]
fn dead_parents_beyond_tolerance_fail_within_the_deadline() {
    let (run, _, _, _) =
        train("cr-dead-parents", CR, &["stragglers.model=fail-stop", "stragglers.workers=[1, 3]", "run.deadline=2"]);
    assert_eq!(run.code, Some(1), "{}", run.stderr);
    assert!(run.stderr.contains("iteration 0: cr needs 2 of 3 results at the master but only 1 arrived within run.deadline = 2 s; missing: workers 1, 3"), "{}", run.stderr);
    assert!(run.elapsed < Duration::from_secs(2 + 15));
}

#[test]
fn a_dead_subtree_within_tolerance_is_still_exact() {
    // parent 2 and its whole subtree die at iteration 3: one straggler at the master, tolerated
    assert_exact(
        "cr-dead-subtree-ok",
        CR,
        &["stragglers.model=fail-stop", "stragglers.workers=[2, 7, 8, 9]", "stragglers.from_iteration=3"],
    );
}
