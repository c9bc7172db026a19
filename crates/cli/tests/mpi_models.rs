//! Networks through `mpirun`: softmax regression and a softmax network with a ReLU hidden layer,
//! trained by full-batch gradient descent and by mini-batch SGD with Nesterov momentum and step
//! decay, under injected stragglers, follow the serial reference (plain per-sample loops, the
//! same batches) within 1e-9 in every coded scheme: UMW, gradient coding (cyclic, fractional),
//! CodedReduce, CEGC, AGC and GC with dynamic clustering.

mod common;

use std::sync::LazyLock;

use common::*;
use outrun_testkit::Cfg;

fn cfg() -> Cfg {
    Cfg::linear("models", 1200, 16, 8)
        .set("run.seed", 21)
        .set("run.iterations", 12)
        .set("run.deadline", 20.0)
        .set("run.trajectory", true)
        .set("data.kind", "softmax-synthetic")
        .set("data.noise", 0.5)
        .set("model.loss", "softmax")
        .set("model.classes", 4)
        .set("model.hidden", vec![12])
        .set("model.lr", 0.3)
        .set("scheme.kind", "gc-cyclic")
        .set("scheme.s", 2)
        .set("stragglers.model", "fixed")
        .set("stragglers.workers", vec![2, 5])
        .set("stragglers.factor", 4.0)
        .set("timing.compute", "modelled")
        .set("timing.a", 2e-06)
}

/// The config above, as its TOML text.
static CFG: LazyLock<String> = LazyLock::new(|| cfg().text());

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

/// The MLP of &CFG, and softmax regression (no hidden layer).
const MODELS: &[(&str, &[&str])] = &[("mlp", &[]), ("softmax", &["model.hidden=[]"])];

#[test]
fn softmax_regression_and_a_network_train_exactly_in_every_coded_scheme_full_and_mini_batch() {
    for (name, sets) in SCHEMES {
        for (model, msets) in MODELS {
            for (mode, batch) in [("full", &[][..]), ("mini", MINI_BATCH)] {
                let all: Vec<&str> = sets.iter().chain(*msets).chain(batch).copied().collect();
                let s = assert_exact(&format!("models-{name}-{model}-{mode}"), &CFG, &all);
                assert_eq!(s["iterations"], 12);
            }
        }
    }
}

/// Adam (with model.l2, mini-batches) and AdamW (decoupled decay, full batch) through mpirun:
/// every coded scheme above, G-AGC, Ye–Abbe's CGC and G-CGC, GC-SC, our ring all-reduce (each
/// ring rank applies the step itself) and `MPI_Allreduce`, under stragglers, follow the serial
/// reference's Adam written out as torch.optim.Adam documents it, within 1e-9.
#[test]
fn adam_and_adamw_train_exactly_in_every_exact_scheme() {
    let rings: &[(&str, &[&str])] = &[
        ("rar", &["scheme.kind=rar", "scheme.s="]),
        ("allreduce", &["scheme.kind=allreduce", "scheme.s=", "stragglers.model=none"]),
    ];
    // the exact schemes &SCHEMES leaves to other tests' linear models
    let more: &[(&str, &[&str])] = &[
        ("g-agc", &["scheme.kind=g-agc", "scheme.s=", "scheme.workers=12", "scheme.d=3", "scheme.rounds=6"]),
        ("cgc", &["scheme.kind=cgc", "scheme.s=2", "scheme.m=2"]),
        (
            "g-cgc",
            &["scheme.kind=g-cgc", "scheme.workers=12", "scheme.s=1", "scheme.m=2", "stragglers.workers=[2, 6, 11]"],
        ),
        ("gc-sc", &["scheme.kind=gc-sc", "scheme.s=", "scheme.clusters=2", "scheme.r=2"]),
    ];
    let adam: &[&str] = &["model.optimizer=adam", "model.lr=0.01", "model.l2=1e-3", "model.batch=96"];
    for (name, sets) in SCHEMES.iter().chain(rings).chain(more) {
        let all: Vec<&str> = sets.iter().chain(adam).copied().collect();
        assert_exact(&format!("adam-{name}"), &CFG, &all);
    }
    let adamw: &[&str] = &["model.optimizer=adamw", "model.lr=0.01", "model.weight_decay=0.1", "model.beta2=0.99"];
    for (name, sets) in [SCHEMES[1], rings[0]] {
        let all: Vec<&str> = sets.iter().chain(adamw).copied().collect();
        assert_exact(&format!("adamw-{name}"), &CFG, &all);
    }
}

/// An Adam run resumed from its checkpoint (θ, m and v) ends bit-equal to the run it continues
/// left uninterrupted: the second moment travels in checkpoint.json too. (UMW without injected
/// stragglers: every iteration sums the same workers' results, in worker order, so the bits do not
/// depend on which arrived first; a code's decode would differ in the last bit between survivor
/// sets, which a busy host can change.)
#[test]
fn an_adam_run_resumed_from_its_checkpoint_ends_bit_equal() {
    let adam = [
        "scheme.kind=umw",
        "scheme.s=",
        "stragglers.model=none",
        "model.optimizer=adam",
        "model.lr=0.01",
        "model.batch=96",
        "run.checkpoint_every=4",
    ];
    let (whole, whole_dir, _, _) = train("adam-whole", &CFG, &adam);
    assert_eq!(whole.code, Some(0), "{}", whole.stderr);
    let first: Vec<&str> = adam.iter().copied().chain(["run.iterations=4"]).collect();
    let (part, part_dir, cfg, sets) = train("adam-part", &CFG, &first);
    assert_eq!(part.code, Some(0), "{}", part.stderr);
    let names: Vec<String> =
        outrun_runlog::Checkpoint::read(&part_dir).unwrap().vectors.into_iter().map(|(n, _)| n).collect();
    assert_eq!(names, ["theta", "velocity", "second_moment"]);
    let out = tempdir("adam-resumed");
    let resumed = resume_trained(&CFG, &cfg, &sets, &part_dir, &out);
    assert_eq!(resumed.code, Some(0), "{}", resumed.stderr);
    let theta = |d: &std::path::Path| std::fs::read_to_string(d.join("theta.txt")).unwrap();
    let (got, want) = (theta(&run_dir(&out)), theta(&whole_dir));
    assert!(got == want, "the resumed Adam run's θ differs from the whole run's:\n{got}\nvs\n{want}");
    // the optimizer goes on as it was: Adam's moments as SGD's velocity (or Adam from a zero second
    // moment) would be no run's continuation, so the same checkpoint under SGD is refused
    let sgd: Vec<String> =
        sets.iter().cloned().chain(["model.optimizer=sgd".into(), "model.momentum=0.9".into()]).collect();
    let refused = resume_trained(&CFG, &cfg, &sgd, &part_dir, &tempdir("adam-as-sgd"));
    assert_eq!(refused.code, Some(2), "{}", refused.stderr);
    assert!(
        refused.stderr.contains("written with model.optimizer = \"adam\" or \"adamw\", this config has \"sgd\""),
        "{}",
        refused.stderr
    );
}
