//! The serial reference's gradients (and the engine's BLAS path) against numpy's, on inputs
//! regenerated from their formulas (scripts/oracles/mlp_numpy.py wrote tests/data/).

use outrun_config::{Loss, ModelConfig};
use outrun_workloads::net::Net;
use outrun_workloads::reference::naive_gradient;
use outrun_workloads::Rows;

const ORACLE: &str = include_str!("data/numpy_gradients.txt");
const N: usize = 7;
const P: usize = 5;
const C: usize = 3;

fn inputs() -> Rows {
    let x = (0..N * P).map(|i| (0.7 * i as f64).sin()).collect();
    Rows::from_vecs(P, x, (0..N).map(|j| (j % C) as f64).collect())
}

fn model(name: &str) -> ModelConfig {
    match name {
        "softmax 5-3" => ModelConfig { classes: Some(C), ..ModelConfig::linear(Loss::Softmax, 0.1) },
        "softmax 5-4-3-3" => {
            ModelConfig { classes: Some(C), hidden: vec![4, 3], ..ModelConfig::linear(Loss::Softmax, 0.1) }
        }
        "least squares 5x3" => ModelConfig { outputs: Some(C), ..ModelConfig::linear(Loss::LeastSquares, 0.1) },
        other => panic!("unknown oracle case `{other}`"),
    }
}

fn close(a: f64, b: f64) -> bool {
    (a - b).abs() <= 1e-12 * (1.0 + b.abs())
}

#[test]
fn the_reference_and_the_blas_path_agree_with_numpy() {
    let rows = inputs();
    let lines: Vec<&str> = ORACLE.lines().collect();
    assert_eq!(lines.len(), 9, "three cases of three lines");
    for case in lines.chunks(3) {
        let m = model(case[0]);
        let loss: f64 = case[1].parse().unwrap();
        let grad: Vec<f64> = case[2].split(' ').map(|v| v.parse().unwrap()).collect();
        let theta: Vec<f64> = (0..grad.len()).map(|i| 0.3 * (1.3 * i as f64).cos()).collect();
        let (g, l) = naive_gradient(&rows, &m, &theta);
        assert_eq!(g.len(), grad.len(), "{}: parameter count", case[0]);
        assert!(close(l, loss), "{}: loss {l} vs numpy {loss}", case[0]);
        for (k, (a, b)) in g.iter().zip(&grad).enumerate() {
            assert!(close(*a, *b), "{}: g[{k}] = {a} vs numpy {b}", case[0]);
        }
        let net = Net::new(&m, P);
        let mut fast = vec![0.0; net.len(P)];
        let lf = net.gradient(&rows, &[1.0; N], &theta, &mut fast, usize::MAX, &mut || {});
        assert!(close(lf, loss), "{}: BLAS loss {lf} vs numpy {loss}", case[0]);
        for (k, (a, b)) in fast.iter().zip(&grad).enumerate() {
            assert!(close(*a, *b), "{}: BLAS g[{k}] = {a} vs numpy {b}", case[0]);
        }
    }
}
