//! The real-digits task (configs/real-digits.toml: logistic regression, 4 against 9, on
//! scikit-learn's bundled digits in data/) through `mpirun`: CodedReduce and gradient coding
//! follow serial gradient descent exactly under their stragglers, and the test accuracy the run
//! reports is the test's own count on the held-out file.

mod common;

use common::*;

fn config() -> String {
    let root = concat!(env!("CARGO_MANIFEST_DIR"), "/../..");
    std::fs::read_to_string(format!("{root}/configs/real-digits.toml"))
        .unwrap()
        .replace("\"../data/", &format!("\"{root}/data/"))
        .replace("iterations = 100", "iterations = 30")
}

/// The test's own reading of a LIBSVM file with 64 features: (rows, labels).
fn read(path: &str) -> (Vec<Vec<f64>>, Vec<f64>) {
    let mut xs = vec![];
    let mut ys = vec![];
    for line in std::fs::read_to_string(path).unwrap().lines() {
        let mut f = line.split_whitespace();
        ys.push(f.next().unwrap().parse().unwrap());
        let mut x = vec![0.0; 64];
        for kv in f {
            let (k, v) = kv.split_once(':').unwrap();
            x[k.parse::<usize>().unwrap() - 1] = v.parse().unwrap();
        }
        xs.push(x);
    }
    (xs, ys)
}

#[test]
fn coded_reduce_and_gc_train_on_real_digits_exactly() {
    let text = config();
    let test_file = format!("{}/../../data/digits-4-9-test.libsvm", env!("CARGO_MANIFEST_DIR"));
    let (x, y) = read(&test_file);
    assert_eq!(x.len(), 72);
    for (tag, sets) in [
        ("digits-cr", vec!["run.trajectory=true"]),
        (
            "digits-gc",
            vec![
                "run.trajectory=true",
                "scheme.kind=gc-cyclic",
                "scheme.n=",
                "scheme.layers=",
                "scheme.workers=12",
                "scheme.s=1",
                "scheme.code=",
            ],
        ),
    ] {
        let (run, dir, _, all_sets) = train(tag, &text, &sets);
        assert_eq!(run.code, Some(0), "{tag}: {}", run.stderr);
        let got = trajectory(&dir);
        let want = reference(&text, &all_sets);
        let diff = max_rel_diff(&got, &want);
        assert!(diff <= 1e-9, "{tag}: θ differs from serial GD by {diff:e}");
        let rows = iterations(&dir);
        assert!(rows.iter().all(|r| r["exact"] == "true"), "{tag}");
        // the reported accuracy is the test's own count with the final θ
        let theta = want.last().unwrap();
        let right = x
            .iter()
            .zip(&y)
            .filter(|(row, &label)| (row.iter().zip(theta).map(|(a, b)| a * b).sum::<f64>() > 0.0) == (label == 1.0))
            .count();
        let reported: f64 = rows.last().unwrap()["test_accuracy"].parse().unwrap();
        assert!((reported - right as f64 / 72.0).abs() < 1e-6, "{tag}: reported {reported}, counted {right}/72");
        assert!(reported > 0.9, "{tag}: test accuracy {reported}");
        assert_eq!(summary(&dir)["final_test_accuracy"].as_f64().unwrap(), reported);
        assert!(run.stdout.contains("test accuracy"), "{}", run.stdout);
        eprintln!("{tag}: θ within {diff:.1e} of serial GD, test accuracy {reported}");
    }
}
