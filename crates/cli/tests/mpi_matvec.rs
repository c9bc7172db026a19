//! Coded matrix–vector multiplication through `mpirun` (note seed-004 part A, acceptance test 8
//! and the power-iteration test): y.txt equals the test's own dense product A·x within 1e-8
//! relative for every subset of silenced workers whose remaining load covers r (Gaussian and
//! systematic codes), the master says which subsets cannot be decoded, LT and the uncoded
//! baselines are exact too, and power iteration finds the dominant eigenvalue of a symmetric
//! matrix that the test computes independently; pattern and skew-symmetric files and x as a
//! Matrix Market column read as the test's formulas say.

mod common;

use std::path::Path;

use common::*;

/// The test's matrix: a deterministic formula, written as a Matrix Market file (coordinate,
/// general) — nothing of the runtime's generator or reader is used to form the reference.
fn matrix(r: usize, m: usize, symmetric: bool) -> Vec<Vec<f64>> {
    (0..r)
        .map(|i| {
            (0..m)
                .map(|j| {
                    let (a, b) = if symmetric { (i.min(j), i.max(j)) } else { (i, j) };
                    ((a * 37 + b * 11) % 17) as f64 / 17.0 + ((a + 2 * b) as f64).sin() * 0.25
                })
                .collect()
        })
        .collect()
}

fn write_matrix(path: &Path, a: &[Vec<f64>]) {
    let (r, m) = (a.len(), a[0].len());
    let mut text = format!("%%MatrixMarket matrix coordinate real general\n% test matrix\n{r} {m} {}\n", r * m);
    for (i, row) in a.iter().enumerate() {
        for (j, v) in row.iter().enumerate() {
            text.push_str(&format!("{} {} {v:e}\n", i + 1, j + 1));
        }
    }
    std::fs::write(path, text).unwrap();
}

fn read_vec(path: &Path) -> Vec<f64> {
    std::fs::read_to_string(path).unwrap().lines().map(|l| l.trim().parse::<f64>().unwrap()).collect()
}

fn rel_err(got: &[f64], want: &[f64]) -> f64 {
    assert_eq!(got.len(), want.len());
    let d: f64 = got.iter().zip(want).map(|(a, b)| (a - b) * (a - b)).sum::<f64>().sqrt();
    d / want.iter().map(|v| v * v).sum::<f64>().sqrt()
}

const R: usize = 200;
const M: usize = 50;

fn config(dir: &Path) -> String {
    format!(
        r#"
[run]
name = "matvec"
seed = 5
iterations = 3
deadline = 4.0

[job]
kind = "matvec"

[matrix]
path = "{}"

[vector]
path = "{}"

[scheme]
kind = "hcmm"
workers = 5
code = "gaussian"
a = [1e-5, 1e-5, 2e-5, 2e-5, 4e-5]
mu = [1e5, 1e5, 5e4, 5e4, 2.5e4]

[timing]
compute = "modelled"
a = 1e-5
"#,
        dir.join("a.mtx").display(),
        dir.join("x.txt").display()
    )
}

/// Write A and x into `dir`; the dense product y = A·x.
fn setup(dir: &Path) -> Vec<f64> {
    let a = matrix(R, M, false);
    write_matrix(&dir.join("a.mtx"), &a);
    let x: Vec<f64> = (0..M).map(|j| 1.0 + (j as f64 * 0.7).cos()).collect();
    std::fs::write(dir.join("x.txt"), x.iter().map(|v| format!("{v:e}\n")).collect::<String>()).unwrap();
    a.iter().map(|row| row.iter().zip(&x).map(|(p, q)| p * q).sum()).collect()
}

/// One run of the test's config (see `common::run_config`).
fn run(dir: &Scratch, text: &str, sets: &[String], tag: &str) -> (Option<i32>, String, Option<std::path::PathBuf>) {
    run_config(dir, text, sets, tag, std::time::Duration::from_secs(90))
}

#[test]
fn every_covering_subset_of_silenced_workers_decodes_exactly() {
    let dir = tempdir("matvec-subsets");
    let y = setup(&dir);
    let text = config(&dir);
    // the plan's loads, to know which subsets cover r
    let cfg = outrun_workloads::load_config(&write_config(&dir, &text), &[]).unwrap();
    let plan = outrun_workloads::resolve(&cfg).unwrap();
    let loads: Vec<usize> = plan.nodes[1..].iter().map(|n| n.load()).collect();
    let total: usize = loads.iter().sum();
    let mut covering = vec![];
    let mut failing = None;
    for mask in 0u32..32 {
        let lost: Vec<usize> = (0..5).filter(|i| mask & (1 << i) != 0).map(|i| i + 1).collect();
        let left = total - lost.iter().map(|&w| loads[w - 1]).sum::<usize>();
        if left >= R {
            covering.push(lost);
        } else if failing.is_none() && lost.len() == 2 {
            failing = Some(lost);
        }
    }
    assert!(covering.len() >= 6, "loads {loads:?} tolerate too little for the test: {covering:?}");
    for code in ["gaussian", "systematic"] {
        for lost in &covering {
            let mut sets = vec![format!("scheme.code={code}")];
            if !lost.is_empty() {
                sets.push("stragglers.model=fail-stop".into());
                sets.push(format!("stragglers.workers={lost:?}"));
            }
            let tag = format!("{code}-{}", lost.iter().map(|w| w.to_string()).collect::<String>());
            let (rc, err, rd) = run(&dir, &text, &sets, &tag);
            assert_eq!(rc, Some(0), "{tag}: stderr:\n{err}");
            let rd = rd.unwrap();
            let e = rel_err(&read_vec(&rd.join("y.txt")), &y);
            assert!(e < 1e-8, "{tag}: ‖ŷ − Ax‖/‖Ax‖ = {e:e}");
            let rows = iterations(&rd);
            assert_eq!(rows.len(), 3);
            for row in &rows {
                assert_eq!(row["exact"], "true", "{tag}");
                let used: Vec<usize> = row["survivors"].split(' ').map(|w| w.parse().unwrap()).collect();
                assert!(used.iter().all(|w| !lost.contains(w)), "{tag}: a silenced worker was used: {used:?}");
            }
            eprintln!("{tag}: relative error {e:.1e}");
        }
    }
    // silencing workers whose rows are needed: one clear line naming them, non-zero exit
    let lost = failing.expect("a non-covering pair");
    let sets = vec![
        "stragglers.model=fail-stop".to_string(),
        format!("stragglers.workers={lost:?}"),
        "run.deadline=1.5".into(),
    ];
    let (rc, err, _) = run(&dir, &text, &sets, "not-covered");
    assert_ne!(rc, Some(0));
    assert!(err.contains("any 200 of") && err.contains("missing: workers"), "{err}");
    for w in &lost {
        assert!(err.contains(&w.to_string()), "{err}");
    }
}

#[test]
fn lt_and_the_uncoded_baselines_are_exact() {
    let dir = tempdir("matvec-schemes");
    let y = setup(&dir);
    let text = config(&dir);
    for (tag, sets) in [
        ("uniform-uncoded", vec!["scheme.kind=uniform-uncoded", "scheme.code="]),
        ("lb-uncoded", vec!["scheme.kind=lb-uncoded", "scheme.code="]),
        ("uniform-coded", vec!["scheme.kind=uniform-coded", "scheme.code=systematic"]),
        // LT over 200 rows needs more than 13% overhead to peel: allocated for 2r
        ("lt", vec!["scheme.code=lt", "scheme.overhead=1.0"]),
        // a budget that leaves one fast machine without rows (it answers an empty message)
        ("budget", vec!["scheme.budget=4.5e7", "scheme.gamma=2"]),
        // uploads by grant: the master grants rows until they determine y
        ("hcmm-granted", vec!["engine.upload=granted"]),
        ("lt-granted", vec!["scheme.code=lt", "scheme.overhead=1.0", "engine.upload=granted"]),
    ] {
        let sets: Vec<String> = sets.iter().map(|s| s.to_string()).collect();
        let (rc, err, rd) = run(&dir, &text, &sets, tag);
        assert_eq!(rc, Some(0), "{tag}: stderr:\n{err}");
        let rd = rd.unwrap();
        let e = rel_err(&read_vec(&rd.join("y.txt")), &y);
        assert!(e < 1e-8, "{tag}: ‖ŷ − Ax‖/‖Ax‖ = {e:e}");
        assert!(iterations(&rd).iter().all(|r| r["exact"] == "true"), "{tag}");
        if tag == "budget" {
            let plan: serde_json::Value =
                serde_json::from_str(&std::fs::read_to_string(rd.join("plan.json")).unwrap()).unwrap();
            let idle = plan["nodes"].as_array().unwrap()[1..]
                .iter()
                .filter(|n| n["parts"][0]["segments"].as_array().unwrap().is_empty())
                .count();
            assert_eq!(idle, 1, "the budget should leave one machine without rows");
        }
        eprintln!("{tag}: relative error {e:.1e}");
    }
}

#[test]
fn power_iteration_finds_the_dominant_eigenvalue() {
    let dir = tempdir("matvec-power");
    let n = 120;
    let a = matrix(n, n, true);
    write_matrix(&dir.join("a.mtx"), &a);
    // the reference: plain power iteration in the test, to convergence
    let mut v = vec![1.0; n];
    let mut lambda = 0.0;
    for _ in 0..500 {
        let w: Vec<f64> = a.iter().map(|row| row.iter().zip(&v).map(|(p, q)| p * q).sum()).collect();
        let norm = w.iter().map(|x| x * x).sum::<f64>().sqrt();
        lambda = v.iter().zip(&w).map(|(p, q)| p * q).sum::<f64>() / v.iter().map(|x| x * x).sum::<f64>();
        v = w.iter().map(|x| x / norm).collect();
    }
    let text = format!(
        r#"
[run]
name = "power"
seed = 9
iterations = 25
deadline = 4.0

[job]
kind = "matvec"
power = true

[matrix]
path = "{}"

[scheme]
kind = "hcmm"
workers = 5
code = "systematic"

[stragglers]
model = "shifted-exp"
a = [1e-5, 1e-5, 2e-5, 2e-5, 4e-5]
mu = [1e5, 1e5, 5e4, 5e4, 2.5e4]

[timing]
compute = "modelled"
"#,
        dir.join("a.mtx").display()
    );
    let (rc, err, rd) = run(&dir, &text, &[], "power");
    assert_eq!(rc, Some(0), "stderr:\n{err}");
    let rd = rd.unwrap();
    let s = summary(&rd);
    let got = s["final_loss"].as_f64().unwrap();
    let rel = (got - lambda).abs() / lambda.abs();
    assert!(rel < 1e-8, "eigenvalue {got} vs {lambda}: relative {rel:e}");
    // the residual column falls
    let rows = iterations(&rd);
    let res: Vec<f64> = rows.iter().map(|r| r["normalized_error"].parse().unwrap()).collect();
    assert!(res[res.len() - 1] < 1e-8 && res[0] > res[res.len() - 1], "{res:?}");
    eprintln!(
        "power iteration: λ = {got} (reference {lambda}, relative {rel:.1e}); residual {:.1e} → {:.1e}",
        res[0],
        res[res.len() - 1]
    );
}

/// A SuiteSparse-style pattern file (each listed entry 1), a skew-symmetric file (the strict lower
/// triangle, A(j, i) = −A(i, j)) and x as a Matrix Market column, through mpirun with the coded
/// scheme: y.txt equals the test's own dense product, formed from the test's formulas.
#[test]
fn pattern_and_skew_symmetric_files_and_a_matrix_market_x() {
    let dir = tempdir("matvec-layouts");
    let x_of = |m: usize| -> Vec<f64> { (0..m).map(|j| 0.5 + (j as f64 * 1.3).sin()).collect() };
    let write_x = |path: &Path, x: &[f64]| {
        let body: String = x.iter().map(|v| format!("{v:e}\n")).collect();
        std::fs::write(path, format!("%%MatrixMarket matrix array real general\n% x\n{} 1\n{body}", x.len())).unwrap();
    };
    let product = |a: &[Vec<f64>], x: &[f64]| -> Vec<f64> {
        a.iter().map(|row| row.iter().zip(x).map(|(p, q)| p * q).sum()).collect()
    };
    // pattern, R × M
    let sub = dir.join("pattern");
    std::fs::create_dir_all(&sub).unwrap();
    let on = |i: usize, j: usize| (i * 7 + j * 3).is_multiple_of(5);
    let a: Vec<Vec<f64>> = (0..R).map(|i| (0..M).map(|j| if on(i, j) { 1.0 } else { 0.0 }).collect()).collect();
    let listed: Vec<String> =
        (0..R).flat_map(|i| (0..M).filter(move |&j| on(i, j)).map(move |j| format!("{} {}\n", i + 1, j + 1))).collect();
    std::fs::write(
        sub.join("a.mtx"),
        format!("%%MatrixMarket matrix coordinate pattern general\n{R} {M} {}\n{}", listed.len(), listed.concat()),
    )
    .unwrap();
    let x = x_of(M);
    write_x(&sub.join("x.txt"), &x);
    let pattern = (sub.clone(), product(&a, &x));
    // skew-symmetric, n × n
    let sub = dir.join("skew");
    std::fs::create_dir_all(&sub).unwrap();
    let n = 60;
    let lower = |i: usize, j: usize| ((i * 13 + j * 5) % 11) as f64 / 11.0 - 0.4;
    let a: Vec<Vec<f64>> = (0..n)
        .map(|i| {
            (0..n)
                .map(|j| {
                    if i > j {
                        lower(i, j)
                    } else if i < j {
                        -lower(j, i)
                    } else {
                        0.0
                    }
                })
                .collect()
        })
        .collect();
    let listed: Vec<String> =
        (0..n).flat_map(|i| (0..i).map(move |j| format!("{} {} {:e}\n", i + 1, j + 1, lower(i, j)))).collect();
    std::fs::write(
        sub.join("a.mtx"),
        format!("%%MatrixMarket matrix coordinate real skew-symmetric\n{n} {n} {}\n{}", listed.len(), listed.concat()),
    )
    .unwrap();
    let x = x_of(n);
    write_x(&sub.join("x.txt"), &x);
    let skew = (sub, product(&a, &x));
    for (tag, (sub, y)) in [("pattern", pattern), ("skew", skew)] {
        let (rc, err, rd) = run(&dir, &config(&sub), &[], tag);
        assert_eq!(rc, Some(0), "{tag}: stderr:\n{err}");
        let e = rel_err(&read_vec(&rd.unwrap().join("y.txt")), &y);
        assert!(e < 1e-8, "{tag}: ‖ŷ − Ax‖/‖Ax‖ = {e:e}");
        eprintln!("{tag}: relative error {e:.1e}");
    }
}
