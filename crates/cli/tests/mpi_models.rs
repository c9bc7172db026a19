//! Networks through `mpirun`: softmax regression and a softmax network with a ReLU hidden layer,
//! trained by full-batch gradient descent and by mini-batch SGD with Nesterov momentum and step
//! decay, under injected stragglers, follow the serial reference (plain per-sample loops, the
//! same batches) within 1e-9 in every coded scheme: UMW, gradient coding (cyclic, fractional),
//! CodedReduce, CEGC, AGC and GC with dynamic clustering.

mod common;

use common::*;

const CFG: &str = r#"
[run]
name = "models"
seed = 21
iterations = 12
deadline = 20.0
trajectory = true

[data]
kind = "softmax-synthetic"
samples = 1200
features = 16
noise = 0.5

[model]
loss = "softmax"
classes = 4
hidden = [12]
lr = 0.3

[scheme]
kind = "gc-cyclic"
workers = 8
s = 2

[stragglers]
model = "fixed"
workers = [2, 5]
factor = 4.0

[timing]
compute = "modelled"
a = 2e-6
"#;

const SCHEMES: &[(&str, &[&str])] = &[
    ("umw", &["scheme.kind=umw", "scheme.s="]),
    ("gc-cyclic", &[]),
    ("gc-frac", &["scheme.kind=gc-frac", "scheme.workers=9"]),
    (
        "cr",
        &[
            "scheme.kind=cr",
            "scheme.workers=",
            "scheme.n=3",
            "scheme.layers=2",
            "scheme.s=1",
            "stragglers.workers=[4, 8]",
        ],
    ),
    ("cegc", &["scheme.kind=cegc", "scheme.m=2", "scheme.code=gaussian"]),
    ("agc", &["scheme.kind=agc", "scheme.s=", "scheme.d=3", "scheme.rounds=8"]),
    ("gc-dc", &["scheme.kind=gc-dc", "scheme.s=", "scheme.workers=9", "scheme.clusters=3", "scheme.r=2", "scheme.n=3"]),
];

const MINI_BATCH: &[&str] = &["model.batch=96", "model.momentum=0.9", "model.nesterov=true", "model.decay_at=[6]"];

/// The MLP of CFG, and softmax regression (no hidden layer).
const MODELS: &[(&str, &[&str])] = &[("mlp", &[]), ("softmax", &["model.hidden=[]"])];

#[test]
fn softmax_regression_and_a_network_train_exactly_in_every_coded_scheme_full_and_mini_batch() {
    for (name, sets) in SCHEMES {
        for (model, msets) in MODELS {
            for (mode, batch) in [("full", &[][..]), ("mini", MINI_BATCH)] {
                let all: Vec<&str> = sets.iter().chain(*msets).chain(batch).copied().collect();
                let s = assert_exact(&format!("models-{name}-{model}-{mode}"), CFG, &all);
                assert_eq!(s["iterations"], 12);
            }
        }
    }
}
