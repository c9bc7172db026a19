//! A model in Python through `mpirun` (`[job] kind = "python"`): the NumPy least-squares module
//! of examples/python, trained by UMW, gradient coding and CodedReduce under injected
//! stragglers, follows the built-in model's θ within 1e-12; the NumPy and PyTorch MLPs of
//! examples/python follow the built-in MLP within 1e-9 (PyTorch's skipped, with a line saying
//! so, where it does not import); a bad module ends the run with one line on one rank and a
//! non-zero exit; the simulator times a Python job without running it; a run resumes from its
//! checkpoint.

mod common;

use std::process::Command;
use std::sync::LazyLock;

use outrun_testkit::Cfg;
use std::path::{Path, PathBuf};

use common::*;

const LEAST_SQUARES: &str = include_str!("../../../examples/python/least_squares.py");
const MLP_TORCH: &str = include_str!("../../../examples/python/mlp_torch.py");
const MLP_NUMPY: &str = include_str!("../../../examples/python/mlp_numpy.py");

/// The least-squares run; `{module}` is the module's path.
fn lsq_cfg() -> Cfg {
    Cfg::linear("python", 720, 12, 8)
        .set("run.seed", 5)
        .set("run.iterations", 15)
        .set("run.deadline", 20.0)
        .set("run.trajectory", true)
        .set("job.kind", "python")
        .set("job.module", "{module}")
        .set("data.noise", 0.1)
        .set("model.lr", 0.2)
        .set("scheme.kind", "gc-cyclic")
        .set("scheme.s", 2)
        .set("stragglers.model", "fixed")
        .set("stragglers.workers", vec![2, 5])
        .set("stragglers.factor", 4.0)
        .set("timing.compute", "modelled")
        .set("timing.a", 2e-06)
}

/// [`lsq_cfg`] as its TOML text.
static LSQ_CFG: LazyLock<String> = LazyLock::new(|| lsq_cfg().text());

const SCHEMES: &[(&str, &[&str])] = &[
    ("umw", &["scheme.kind=umw", "scheme.s="]),
    ("gc-cyclic", &[]),
    ("gc-cyclic-mini-batch", &["model.batch=96", "model.momentum=0.9", "model.nesterov=true"]),
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
    (
        "arc",
        &[
            "scheme.kind=arc",
            "scheme.workers=",
            "scheme.s=1",
            "scheme.clients=8",
            "scheme.helpers=4",
            "links.model=fail",
            "links.per_client=1",
        ],
    ),
];

/// The built-in model of the same config.
const BUILT_IN: &[&str] = &["job.kind=gd", "job.module=", "job.options="];

/// `text` with its module at `module`.
fn config(text: &str, module: &Path) -> String {
    text.replace("{module}", &module.display().to_string())
}

/// `source` written as `name` into `dir`.
fn module(dir: &Path, name: &str, source: &str) -> PathBuf {
    let path = dir.join(name);
    std::fs::write(&path, source).unwrap();
    path
}

fn max_abs_diff(a: &[Vec<f64>], b: &[Vec<f64>]) -> f64 {
    assert_eq!(a.len(), b.len(), "trajectories of different lengths");
    a.iter().zip(b).flat_map(|(x, y)| x.iter().zip(y).map(|(u, v)| (u - v).abs())).fold(0.0, f64::max)
}

/// Train `text` (whose module is `module`) with `sets` as the Python model and as the built-in
/// one (with `model`, its keys for the same network): their θ trajectories' largest difference
/// (both runs exact in every iteration; the Python run's directory keeps the module).
fn against_built_in(tag: &str, text: &str, module: &Path, sets: &[&str], model: &[&str]) -> f64 {
    let (py, py_dir, _, _) = train(&format!("{tag}-python"), text, sets);
    assert_eq!(py.code, Some(0), "{tag}: the Python run failed:\n{}", py.stderr);
    let both: Vec<&str> = sets.iter().chain(BUILT_IN).chain(model).copied().collect();
    let (rs, rs_dir, _, _) = train(&format!("{tag}-built-in"), text, &both);
    assert_eq!(rs.code, Some(0), "{tag}: the built-in run failed:\n{}", rs.stderr);
    for dir in [&py_dir, &rs_dir] {
        assert!(iterations(dir).iter().all(|r| r["exact"] == "true"), "{tag}: an iteration was not exact");
    }
    let kept = std::fs::read(py_dir.join(module.file_name().unwrap())).expect("the run directory keeps the module");
    assert_eq!(kept, std::fs::read(module).unwrap(), "{tag}: the kept module differs from the one run");
    let problem = summary(&py_dir)["problem"].as_str().unwrap().to_string();
    assert!(problem.contains("python module") && !problem.contains('\n'), "{tag}: the problem in one line: {problem}");
    let diff = max_abs_diff(&trajectory(&py_dir), &trajectory(&rs_dir));
    eprintln!("{tag}: largest θ difference, Python module vs built-in model: {diff:.2e}");
    diff
}

#[test]
fn numpy_least_squares_follows_the_built_in_model_in_umw_gc_cr_and_arc_under_stragglers() {
    let dir = tempdir("python-lsq");
    let path = module(&dir, "least_squares.py", LEAST_SQUARES);
    let text = config(&LSQ_CFG, &path);
    for (name, sets) in SCHEMES {
        let diff = against_built_in(name, &text, &path, sets, &[]);
        assert!(diff <= 1e-12, "{name}: the NumPy module's θ differs from the built-in model's by {diff:e}");
    }
}

/// Whether PyTorch imports (into the environment the ranks use); where it does not, a line
/// says that `test` is skipped and why.
fn torch(test: &str) -> bool {
    let python = Path::new(&python_env()).join("bin/python");
    let why = match std::process::Command::new(&python).args(["-c", "import torch"]).output() {
        Ok(o) if o.status.success() => return true,
        Ok(o) => String::from_utf8_lossy(&o.stderr).lines().last().unwrap_or("").to_string(),
        Err(e) => format!("{}: {e}", python.display()),
    };
    eprintln!(
        "SKIPPED {test}: PyTorch does not import in {} ({why}); install it with `{}/bin/pip install torch`",
        python_env(),
        python_env()
    );
    false
}

#[test]
fn a_numpy_mlp_follows_the_built_in_mlp() {
    let dir = tempdir("python-mlp-numpy");
    let path = module(&dir, "mlp_numpy.py", MLP_NUMPY);
    let diff = against_built_in("mlp-numpy", &mlp_config(&dir, &path), &path, &[], &["model.hidden=[32]"]);
    assert!(diff <= 1e-9, "the NumPy MLP's θ differs from the built-in MLP's by {diff:e}");
}

#[test]
fn a_pytorch_mlp_follows_the_built_in_mlp() {
    if !torch("a_pytorch_mlp_follows_the_built_in_mlp") {
        return;
    }
    let dir = tempdir("python-mlp-torch");
    let path = module(&dir, "mlp_torch.py", MLP_TORCH);
    let diff = against_built_in("mlp-torch", &mlp_config(&dir, &path), &path, &[], &["model.hidden=[32]"]);
    assert!(diff <= 1e-9, "the PyTorch MLP's θ differs from the built-in MLP's by {diff:e}");
}

/// A 64-32-10 network on the digits with the module at `path`, mini-batch SGD with Nesterov
/// momentum and a step decay, GC under stragglers, from a θ₀ written into `dir`.
fn mlp_config(dir: &Path, path: &Path) -> String {
    let data = Path::new(env!("CARGO_MANIFEST_DIR")).join("../../data");
    // the same θ₀ for both: seeded values in the layout they share (W then b, layer by layer)
    let params = 64 * 32 + 32 + 32 * 10 + 10;
    let mut rng = outrun_codes::Rng::from_key(&[11]);
    let theta0: String = (0..params).map(|_| format!("{:e}\n", 0.1 * rng.normal())).collect();
    let init = dir.join("theta0.txt");
    std::fs::write(&init, theta0).unwrap();
    format!(
        r#"
[run]
name = "python-mlp"
seed = 3
iterations = 12
deadline = 30.0
trajectory = true

[job]
kind = "python"
module = "{module}"

[job.options]
hidden = [32]
classes = 10

[data]
kind = "libsvm"
path = "{data}/digits-train.libsvm"
test_path = "{data}/digits-test.libsvm"
features = 64

[model]
loss = "softmax"
classes = 10
lr = 0.05
batch = 64
momentum = 0.9
nesterov = true
decay_at = [8]
init_path = "{init}"

[scheme]
kind = "gc-cyclic"
workers = 8
s = 2

[stragglers]
model = "fixed"
workers = [3, 6]
factor = 4.0
"#,
        module = path.display(),
        data = data.display(),
        init = init.display()
    )
}

/// The `error:` lines of a run's stderr.
fn errors(stderr: &str) -> Vec<&str> {
    stderr.lines().filter(|l| l.starts_with("error:")).collect()
}

/// A module (`source`) run with the least-squares config: its exit code and error lines.
fn run_bad(tag: &str, source: &str) -> (Option<i32>, Vec<String>, String) {
    let dir = tempdir(tag);
    let text = config(&LSQ_CFG, &module(&dir, &format!("{}.py", tag.replace('-', "_")), source));
    let (run, _, _, _) = train(tag, &text, &[]);
    let lines = errors(&run.stderr).iter().map(|l| l.to_string()).collect();
    (run.code, lines, run.stderr)
}

#[test]
fn a_bad_module_is_one_line_on_one_rank_and_a_non_zero_exit() {
    // found while planning (rank 0, before MPI work): every rank exits 2, rank 0 says why
    let planning: &[(&str, &str, &str)] = &[
        ("syntax", "def init(options, seed, features)\n    return [0.0]\n", "import() raised SyntaxError: expected ':' (at syntax.py:1)"),
        ("no-grad", "def init(options, seed, features):\n    return [0.0] * features\n", "grad() is not defined"),
        (
            "short",
            "import numpy as np\ndef init(o, s, p):\n    return np.zeros(p)\ndef grad(t, X, y, w):\n    return np.zeros(len(t) - 1), 0.0\n",
            "grad() returned 11 gradient values, but init's θ₀ has 12",
        ),
        (
            "nan",
            "import numpy as np\ndef init(o, s, p):\n    return np.zeros(p)\ndef grad(t, X, y, w):\n    g = np.zeros(len(t)); g[3] = np.nan\n    return g, 0.0\n",
            "grad() returned the gradient with NaN at index 3",
        ),
        (
            "raises",
            "def init(o, s, p):\n    raise KeyError('hidden')\ndef grad(t, X, y, w):\n    return t, 0.0\n",
            "init() raised KeyError: 'hidden' (at raises.py:2)",
        ),
    ];
    for (tag, source, want) in planning {
        let (code, lines, stderr) = run_bad(tag, source);
        assert_eq!(code, Some(2), "{tag}: {stderr}");
        assert_eq!(lines.len(), 1, "{tag}: one error line, got:\n{stderr}");
        assert!(lines[0].contains("python module") && lines[0].contains(want), "{tag}: {}", lines[0]);
    }
    // raised by one rank in the third call of its grad: that rank says so, the job is aborted
    let source = format!(
        "import os\n{LEAST_SQUARES}\ncalls = 0\n_grad = grad\ndef grad(theta, X, y, w):\n    global calls\n    calls += 1\n    if os.environ.get('OMPI_COMM_WORLD_RANK') == '3' and calls == 3:\n        raise ValueError('a bad batch')\n    return _grad(theta, X, y, w)\n"
    );
    let (code, lines, stderr) = run_bad("late", &source);
    assert!(code.is_some_and(|c| c != 0), "the run must fail: {stderr}");
    assert_eq!(lines.len(), 1, "one error line, got:\n{stderr}");
    let want = "python module";
    assert!(
        lines[0].contains(want) && lines[0].contains("grad() on rank 3 raised ValueError: a bad batch (at late.py:")
    );
    assert!(lines[0].contains("(iteration 2)"), "{}", lines[0]);
}

#[test]
fn the_simulator_times_a_python_job_without_running_it() {
    let dir = tempdir("python-sim");
    let text = config(&LSQ_CFG, &module(&dir, "least_squares.py", "raise ImportError('never imported')\n"));
    let cfg = write_config(&dir, &text);
    let out = dir.join("runs");
    let cfg = cfg.display().to_string();
    let sets = format!("run.out_dir={}", out.display());
    let sim = outrun(&["simulate", &cfg, "--trials", "2", "--set", &sets]);
    // the planning process imports the module (for its size): this one cannot be planned
    assert_eq!(sim.code, Some(2), "{}", sim.stderr);
    assert!(sim.stderr.contains("never imported"), "{}", sim.stderr);
    std::fs::write(dir.join("least_squares.py"), LEAST_SQUARES).unwrap();
    let sim = outrun(&["simulate", &cfg, "--trials", "2", "--set", &sets]);
    assert_eq!(sim.code, Some(0), "{}", sim.stderr);
    let run = run_dir(&out);
    let theta = std::fs::read_to_string(run.join("theta.txt")).unwrap();
    assert!(theta.lines().all(|l| l == "NaN"), "the simulator computed θ of a Python model: {theta}");
    let note = std::fs::read_to_string(run.join("simulate.json")).unwrap();
    assert!(note.contains("the Python module's, which the simulator never runs"), "{note}");
    let on = outrun(&["simulate", &cfg, "--math", "on", "--set", &sets]);
    assert_eq!(on.code, Some(2), "{}", on.stderr);
}

/// A Python model's run resumed from its checkpoint (θ and the momentum's velocity) ends where
/// the uninterrupted run does: the module's θ₀ does not replace the checkpoint's. To round-off,
/// not bit for bit: which 6 of the 8 workers a gradient-coding iteration decodes from depends on
/// which results come first (a worker computes 0.54 ms here, a straggler 2.16 ms: a worker
/// descheduled for longer on a loaded host is replaced by a straggler), and another set gives the
/// same sum to round-off (seen in one of four runs of the whole suite: 2e-16; on a quiet host 12
/// runs gave the same set in every iteration and the same bits). launch.rs's resume test makes
/// the set certain and checks the bits.
#[test]
fn a_python_run_resumes_from_its_checkpoint() {
    let dir = tempdir("python-resume");
    let text = config(&LSQ_CFG, &module(&dir, "least_squares.py", LEAST_SQUARES));
    let sets = ["model.momentum=0.9", "run.checkpoint_every=4", "run.trajectory=false"];
    let with = |iterations: &'static str| -> Vec<&'static str> { sets.iter().copied().chain([iterations]).collect() };
    let (whole, whole_dir, _, _) = train("python-whole", &text, &with("run.iterations=16"));
    assert_eq!(whole.code, Some(0), "{}", whole.stderr);
    let (first, first_dir, cfg, _) = train("python-first", &text, &with("run.iterations=8"));
    assert_eq!(first.code, Some(0), "{}", first.stderr);
    let out = dir.join("resumed");
    let mut args: Vec<String> = vec!["train".into(), cfg.display().to_string()];
    for s in with("run.iterations=16").into_iter().chain([&*format!("run.out_dir={}", out.display())]) {
        args.extend(["--set".into(), s.to_string()]);
    }
    args.extend(["--resume".into(), first_dir.display().to_string()]);
    let resumed = {
        let _lock = mpi_lock();
        mpirun_outrun(9, &args, std::time::Duration::from_secs(120))
    };
    assert_eq!(resumed.code, Some(0), "{}", resumed.stderr);
    let read = |d: &Path| -> Vec<f64> {
        let text = std::fs::read_to_string(d.join("theta.txt")).unwrap();
        text.lines().map(|l| l.parse().unwrap()).collect()
    };
    let (resumed, whole) = (read(&run_dir(&out)), read(&whole_dir));
    let diff = max_abs_diff(&[resumed], &[whole]);
    assert!(diff <= 1e-12, "the resumed θ differs from the whole run's by {diff:e}");
    assert_eq!(iterations(&run_dir(&out)).len(), 8, "the resumed run runs the iterations left");
}

/// `Job::reference` of a Python model (serial gradient descent, one `grad` call per batch, in
/// this process) ends where the distributed run does.
#[test]
fn the_serial_reference_of_a_python_model_matches_the_run() {
    let dir = tempdir("python-reference");
    let text = config(&LSQ_CFG, &module(&dir, "least_squares.py", LEAST_SQUARES));
    let sets = ["model.batch=96", "model.momentum=0.9"];
    let (run, run_dir, _, all) = train("python-reference", &text, &sets);
    assert_eq!(run.code, Some(0), "{}", run.stderr);
    // the interpreter of this process imports numpy from the same environment as the ranks
    std::env::set_var("VIRTUAL_ENV", python_env());
    let cfg = outrun_config::parse(&text, &all).unwrap();
    let plan = outrun_workloads::resolve(&cfg).unwrap();
    let serial = outrun_workloads::job(&plan).reference(&plan).unwrap();
    let last = trajectory(&run_dir).pop().unwrap();
    let diff = max_abs_diff(&[serial], &[last]);
    assert!(diff <= 1e-12, "the serial reference differs from the run by {diff:e}");
}

/// A module whose `grad` never returns fails the planning probe at `run.deadline`, in one line,
/// instead of hanging `outrun check` (and the launch before it) for ever.
#[test]
fn a_module_that_never_returns_fails_the_check_at_the_deadline() {
    let dir = tempdir("stuck");
    let source = format!("import time\n{LEAST_SQUARES}\ndef grad(theta, X, y, w):\n    time.sleep(3600)\n");
    let text = config(&LSQ_CFG, &module(&dir, "stuck.py", &source));
    let cfg = write_config(&dir, &text);
    let started = std::time::Instant::now();
    let r = outrun(&["check", cfg.to_str().unwrap(), "--set", "run.deadline=2"]);
    assert_eq!(r.code, Some(2), "{}", r.stderr);
    let lines = errors(&r.stderr);
    assert_eq!(lines.len(), 1, "{}", r.stderr);
    assert!(
        lines[0].contains(
            "stuck.py: import, init() and one grad() on the first 2 rows did not return within run.deadline = 2 s"
        ),
        "{}",
        lines[0]
    );
    assert!(started.elapsed() < std::time::Duration::from_secs(30), "{:?}", started.elapsed());
}

/// Three iterations of the least-squares module, whose import sleeps 14 s on `rank` alone; the
/// run completes (exit 0), which is checked here.
fn slow_import_on_rank(rank: usize, tag: &str) -> Run {
    let dir = tempdir(tag);
    let slow = format!("import os, time\nif os.environ.get('OMPI_COMM_WORLD_RANK') == '{rank}':\n    time.sleep(14)\n");
    let text = config(&LSQ_CFG, &module(&dir, "slow.py", &format!("{slow}{LEAST_SQUARES}")));
    let (run, _run_dir, _, _) = train(tag, &text, &["run.iterations=3"]);
    assert_eq!(run.code, Some(0), "{}", run.stderr);
    run
}

/// A rank whose module takes its time to import (a slow disk, a download) holds every other rank
/// in setup: rank 0 says which one, and what it waits for, after 10 s and not again before 30 s;
/// the run then completes.
#[test]
fn rank_0_names_a_rank_that_is_slow_to_set_up() {
    let run = slow_import_on_rank(3, "slow-import");
    let notes: Vec<&str> = run.stderr.lines().filter(|l| l.contains("has waited")).collect();
    assert_eq!(
        notes,
        ["note: rank 0 has waited 10 s for 1 of the 8 ranks to load its share of the job: rank 3 (still waiting)"],
        "{}",
        run.stderr
    );
    // rank 0 answered rank 1's questions while it waited for rank 3: no line about rank 0
    assert!(!run.stderr.contains("heard nothing from rank 0"), "{}", run.stderr);
}

/// Rank 0 busy in a step of its own in setup (it imports the module to plan the run; a stopped
/// rank 0 is the same to the others) used to hold every rank until the launch's bound with
/// nothing said: rank 1 says so after 10 s, once, and the run then completes.
#[test]
fn rank_1_says_when_rank_0_does_not_answer_in_setup() {
    let run = slow_import_on_rank(0, "slow-root");
    let notes: Vec<&str> = run.stderr.lines().filter(|l| l.starts_with("note:")).collect();
    assert_eq!(
        notes,
        ["note: rank 1 has heard nothing from rank 0 for 10 s in setup (step: start (MPI_Init)); rank 0 answers while \
          it waits for other ranks, so it is busy with a step of its own or stopped (still waiting)"],
        "{}",
        run.stderr
    );
}

/// A module that ends the process itself during `outrun check`'s probe (`os._exit`) leaves no
/// exit 0 and no silent exit: the check runs in a child process, and its parent says in one line
/// that the check ended without its verdict.
#[test]
fn a_module_that_exits_the_process_fails_the_check_in_one_line() {
    let dir = tempdir("exits");
    for (code, want) in [
        (0, "error: the check ended without its verdict (exit 0)"),
        (3, "error: the check ended with exit code 3 without a word"),
    ] {
        let text =
            config(&LSQ_CFG, &module(&dir, &format!("exits{code}.py"), &format!("import os\nos._exit({code})\n")));
        let cfg = write_config(&dir, &text);
        let r = outrun(&["check", cfg.to_str().unwrap()]);
        assert_eq!(r.code, Some(2), "{}", r.stderr);
        assert_eq!(r.stderr.trim().lines().count(), 1, "{}", r.stderr);
        assert!(r.stderr.starts_with(want), "{}", r.stderr);
    }
}

/// The planning probe asks for what a run records, so `outrun check` refuses in one line what
/// would otherwise fail (or stand in iterations.csv unexplained) on the logging rank: evaluate's
/// metrics out of range; θ₀ as None or complex; a signal handler installed at import. A module's
/// print() goes to standard error, so
/// `outrun plan --json` stays JSON.
#[test]
fn the_probe_checks_what_a_run_records_and_prints_stay_off_stdout() {
    let dir = tempdir("python-probe");
    let mlp = |name: &str, tail: &str| {
        let path = module(&dir, name, &format!("{MLP_NUMPY}\n{tail}"));
        write_config(&dir, &mlp_config(&dir, &path))
    };
    let cases = [
        (
            "pct.py",
            "def evaluate(theta, X, y):\n    return {'accuracy': 93.0}\n",
            "evaluate() returned accuracy = 93: must be a fraction in [0, 1]",
        ),
        (
            "nan.py",
            "def evaluate(theta, X, y):\n    return {'loss': float('nan')}\n",
            "evaluate() returned loss = NaN: must be a finite number",
        ),
        (
            "none.py",
            "def init(options, seed, features):\n    return None\n",
            "init() raised TypeError: None is not a vector",
        ),
        (
            "complex.py",
            "_init = init\ndef init(options, seed, features):\n    return _init(options, seed, features) * (1 + 0j)\n",
            "init() raised TypeError: complex values: θ and its gradient are real",
        ),
        // passed the check (its probe's thread had started Python) and failed rank 0's import
        (
            "handler.py",
            "import signal\nsignal.signal(signal.SIGUSR1, signal.SIG_IGN)\n",
            "import() raised ValueError: signal only works in main thread",
        ),
    ];
    for (name, tail, want) in cases {
        let cfg = mlp(name, tail);
        let r = outrun(&["check", cfg.to_str().unwrap()]);
        assert_eq!(r.code, Some(2), "{name}: {}", r.stderr);
        assert_eq!(r.stderr.trim().lines().count(), 1, "{name}: {}", r.stderr);
        assert!(r.stderr.contains(want), "{name}: {}", r.stderr);
    }
    let cfg = mlp("talks.py", "print('loading the network')\n");
    let r = outrun(&["plan", cfg.to_str().unwrap(), "--json"]);
    assert_eq!(r.code, Some(0), "{}", r.stderr);
    assert!(
        serde_json::from_str::<serde_json::Value>(&r.stdout).is_ok(),
        "not JSON: {}",
        &r.stdout[..80.min(r.stdout.len())]
    );
    assert!(r.stderr.contains("loading the network"), "{}", r.stderr);
}

/// A Python regression reports its held-out loss: `data.test_path` with real labels (refused
/// for the built-in models, whose held-out metric is an accuracy) runs, and the last
/// `test_loss` in iterations.csv is the module's loss of the final θ on the held-out rows,
/// computed here from theta.txt.
#[test]
fn a_python_regression_reports_its_held_out_loss() {
    let data = tempdir("python-regression-data");
    let mut rng = outrun_codes::Rng::from_key(&[21]);
    let truth = [0.5, -1.0, 2.0, 0.0, 1.5];
    let mut write = |name: &str, n: usize| {
        let rows: Vec<(f64, Vec<f64>)> = (0..n)
            .map(|_| {
                let x: Vec<f64> = (0..5).map(|_| rng.normal()).collect();
                (x.iter().zip(truth).map(|(a, b)| a * b).sum::<f64>() + 0.1 * rng.normal(), x)
            })
            .collect();
        let text: String = rows
            .iter()
            .map(|(y, x)| {
                format!(
                    "{y:e} {}\n",
                    x.iter().enumerate().map(|(j, v)| format!("{}:{v:e}", j + 1)).collect::<Vec<_>>().join(" ")
                )
            })
            .collect();
        std::fs::write(data.join(name), text).unwrap();
        rows
    };
    write("train.libsvm", 400);
    let held_out = write("test.libsvm", 100);
    // the first evaluation of the held-out set (100 rows; the planning probe's has 2) takes
    // 11 s: rank 0 names its long step after 10 s, and the run goes on
    let source = format!(
        "{LEAST_SQUARES}\nimport time\n_slept = False\ndef evaluate(theta, X, y):\n    global _slept\n    if X.shape[0] == 100 and not _slept:\n        _slept = True\n        time.sleep(11)\n    r = X @ theta - y\n    return {{'loss': 0.5 * float(np.mean(r * r))}}\n"
    );
    let module = module(&data, "regression.py", &source);
    let text = format!(
        "[run]\nname = 'regression'\nseed = 3\niterations = 20\ndeadline = 20.0\n[job]\nkind = 'python'\nmodule = '{}'\n\
         [data]\nkind = 'libsvm'\npath = '{}'\ntest_path = '{}'\ntest_every = 5\n[model]\nloss = 'least-squares'\nlr = 0.1\n\
         [scheme]\nkind = 'gc-cyclic'\nworkers = 3\ns = 1\n",
        module.display(),
        data.join("train.libsvm").display(),
        data.join("test.libsvm").display()
    );
    // the built-in model of the same config still refuses: its held-out metric is an accuracy
    let cfg = write_config(&data, &text);
    let built_in = outrun(&["check", cfg.to_str().unwrap(), "--set", "job.kind=gd", "--set", "job.module="]);
    assert_eq!(built_in.code, Some(2), "{}", built_in.stderr);
    assert!(built_in.stderr.contains("data.test_path: reports classification accuracy"), "{}", built_in.stderr);
    let (run, dir, _, _) = train("python-regression", &text, &[]);
    assert_eq!(run.code, Some(0), "{}", run.stderr);
    let note = "note: rank 0 has spent 10 s on iteration 4's result since it arrived";
    assert!(run.stderr.contains(note) && run.stderr.contains("evaluate()"), "{}", run.stderr);
    let csv = std::fs::read_to_string(dir.join("iterations.csv")).unwrap();
    let head: Vec<&str> = csv.lines().next().unwrap().split(',').collect();
    let col = head.iter().position(|h| *h == "test_loss").expect("a test_loss column");
    let logged: Vec<(usize, f64)> = csv
        .lines()
        .skip(1)
        .enumerate()
        .filter_map(|(t, l)| l.split(',').nth(col).filter(|v| !v.is_empty()).map(|v| (t, v.parse().unwrap())))
        .collect();
    assert_eq!(logged.iter().map(|(t, _)| *t).collect::<Vec<_>>(), [4, 9, 14, 19], "every data.test_every = 5");
    let theta: Vec<f64> =
        std::fs::read_to_string(dir.join("theta.txt")).unwrap().lines().map(|l| l.trim().parse().unwrap()).collect();
    let want =
        held_out.iter().map(|(y, x)| (x.iter().zip(&theta).map(|(a, b)| a * b).sum::<f64>() - y).powi(2)).sum::<f64>()
            / (2.0 * held_out.len() as f64);
    let got = logged.last().unwrap().1;
    assert!((got - want).abs() <= 1e-12 * want.max(1.0), "held-out loss {got} vs {want} from theta.txt");
    assert!(got < logged[0].1, "it learns: {logged:?}");
    // the same with data.test_fraction (it was refused for real labels, a Python model's too):
    // the final test_loss is the module's loss of the final θ on the rows the split holds out
    let sets = ["data.test_path=", "data.test_fraction=0.2"];
    let (run, dir, _, all) = train("python-regression-split", &text, &sets);
    assert_eq!(run.code, Some(0), "{}", run.stderr);
    let cfg = outrun_config::parse(&text, &all).unwrap();
    let (_, held) = outrun_workloads::data::split(&cfg.gd().data, cfg.run.seed, 400).unwrap();
    let rows: Vec<(f64, Vec<f64>)> = std::fs::read_to_string(data.join("train.libsvm"))
        .unwrap()
        .lines()
        .map(|l| {
            let mut f = l.split_whitespace();
            let y = f.next().unwrap().parse().unwrap();
            (y, f.map(|t| t.split_once(':').unwrap().1.parse().unwrap()).collect())
        })
        .collect();
    let theta: Vec<f64> =
        std::fs::read_to_string(dir.join("theta.txt")).unwrap().lines().map(|l| l.trim().parse().unwrap()).collect();
    let want = held
        .iter()
        .map(|&i| (rows[i].1.iter().zip(&theta).map(|(a, b)| a * b).sum::<f64>() - rows[i].0).powi(2))
        .sum::<f64>()
        / (2.0 * held.len() as f64);
    let csv = std::fs::read_to_string(dir.join("iterations.csv")).unwrap();
    // the header names the column as a held-out file's does (it had no test_loss, its rows did)
    let head: Vec<&str> = csv.lines().next().unwrap().split(',').collect();
    assert_eq!(head.iter().position(|h| *h == "test_loss"), Some(col), "{head:?}");
    assert!(csv.lines().all(|l| l.split(',').count() == head.len()), "a row and the header differ in length");
    let got: f64 = csv.lines().last().unwrap().split(',').nth(col).unwrap().parse().unwrap();
    assert!((got - want).abs() <= 1e-12 * want.max(1.0), "held-out loss {got} vs {want} over the split's 80 rows");
    // and the summary and the end line carry it
    assert_eq!(summary(&dir)["final_test_loss"].as_f64(), Some(got), "{}", summary(&dir));
    assert!(run.stdout.contains(&format!(", test loss {got:.4e}")), "{}", run.stdout);
    let report = outrun(&["report", dir.to_str().unwrap()]);
    assert!(report.stdout.contains(&format!(", test loss {got:.4e} |")), "{}", report.stdout);
}

/// `outrun check` and `plan` on a Python config find the repository's `.venv` (numpy) without
/// `VIRTUAL_ENV` exported, as launch/local.sh does — the README calls them directly.
#[test]
fn check_finds_the_repositorys_environment_without_virtual_env() {
    let repo_venv = Path::new(env!("CARGO_MANIFEST_DIR")).join("../../.venv/bin/python");
    assert!(repo_venv.exists(), "scripts/setup.sh makes {} (the Python tests need it)", repo_venv.display());
    let dir = tempdir("novenv");
    let text = config(&LSQ_CFG, &module(&dir, "lsq.py", LEAST_SQUARES));
    let cfg = write_config(&dir, &text);
    for cmd in ["check", "plan"] {
        let mut c = Command::new(bin());
        c.env_remove("VIRTUAL_ENV").args([cmd, cfg.to_str().unwrap()]);
        let r = run_with_timeout(c, std::time::Duration::from_secs(60));
        assert_eq!(r.code, Some(0), "{cmd}: {}", r.stderr);
    }
}

/// A module that computes on a GPU returns a CUDA tensor: outrun takes `.detach().cpu().numpy()`
/// of what `grad` returns. No GPU here: a stand-in object with those methods only (no `__array__`,
/// so NumPy alone could not read it) plays the tensor, and the run follows the built-in model.
#[test]
fn a_gradient_returned_as_a_device_tensor_is_brought_to_the_host() {
    let dir = tempdir("python-device");
    let source = format!(
        "{LEAST_SQUARES}\n\
class _Host:\n    def __init__(self, a):\n        self._a = a\n    def numpy(self):\n        return self._a\n\n\
class _OnDevice:\n    \"\"\"What a CUDA tensor offers outrun: detach(), cpu(), and nothing NumPy reads.\"\"\"\n    \
def __init__(self, a):\n        self._a = a\n    def detach(self):\n        return self\n    def cpu(self):\n        return _Host(self._a)\n    \
def __array__(self, *args, **kwargs):\n        raise TypeError(\"can't convert cuda:0 device type tensor to numpy\")\n\n\
_host_grad = grad\n\n\
def grad(theta, X, y, w):\n    g, loss = _host_grad(theta, X, y, w)\n    return _OnDevice(g), loss\n"
    );
    let path = module(&dir, "on_device.py", &source);
    let text = config(&LSQ_CFG, &path);
    let diff = against_built_in("device", &text, &path, &[], &[]);
    assert!(diff <= 1e-12, "the device-returning module's θ differs from the built-in model's by {diff:e}");
}

/// Federated learning of a Python model (issue 44): FedAvg over non-IID shards, each client's
/// local steps through the NumPy MLP's `grad`, follows the built-in MLP's federated run.
#[test]
fn federated_learning_runs_a_python_module_like_the_built_in_model() {
    let dir = tempdir("python-fl");
    let path = module(&dir, "mlp_numpy.py", MLP_NUMPY);
    let fl = [
        "job.kind=fl",
        "job.local_steps=3",
        "job.local_batch=0.25",
        "scheme.kind=fedavg",
        "scheme.s=",
        "model.batch=",
        "model.momentum=0",
        "model.nesterov=false",
        "data.order=by-label",
        "stragglers.model=none",
        "stragglers.workers=",
        "stragglers.factor=",
    ];
    let text = mlp_config(&dir, &path);
    let (py, py_dir, _, _) = train("python-fl-module", &text, &fl);
    assert_eq!(py.code, Some(0), "the Python FL run failed:\n{}", py.stderr);
    let built: Vec<&str> = fl.iter().copied().chain(["job.module=", "job.options=", "model.hidden=[32]"]).collect();
    let (rs, rs_dir, _, _) = train("python-fl-built-in", &text, &built);
    assert_eq!(rs.code, Some(0), "the built-in FL run failed:\n{}", rs.stderr);
    let problem = summary(&py_dir)["problem"].as_str().unwrap().to_string();
    assert!(problem.contains("python module"), "{problem}");
    let (a, b) = (trajectory(&py_dir), trajectory(&rs_dir));
    assert!(a.len() > 2 && a.first() != a.last(), "θ moved over {} rounds", a.len() - 1);
    let diff = max_abs_diff(&a, &b);
    assert!(diff <= 1e-9, "the module's federated θ differs from the built-in model's by {diff:e}");
}

/// torch.optim.Adam (or AdamW) on the gradients of the PyTorch module
/// (examples/python/mlp_torch.py), from the same θ₀ over the whole training file, step by step:
/// prints the largest difference from outrun's trajectory.csv, and the steps compared.
const TORCH_ADAM: &str = r#"
import sys
import numpy as np
import torch
sys.path.insert(0, sys.argv[1])
import mlp_torch as m
data, theta0, trajectory, kind = sys.argv[2], sys.argv[3], sys.argv[4], sys.argv[5]
lr, decay, beta2 = float(sys.argv[6]), float(sys.argv[7]), float(sys.argv[8])
rows, labels = [], []
for line in open(data):
    parts = line.split()
    labels.append(int(parts[0]))
    x = np.zeros(64)
    for item in parts[1:]:
        k, v = item.split(":")
        x[int(k) - 1] = float(v)
    rows.append(x)
X, y = np.array(rows), np.array(labels, dtype=np.float64)
m.init({"hidden": [32], "classes": 10}, 0, 64)
theta = torch.nn.Parameter(torch.from_numpy(np.loadtxt(theta0)))
Opt = torch.optim.Adam if kind == "adam" else torch.optim.AdamW
opt = Opt([theta], lr=lr, betas=(0.9, beta2), weight_decay=decay)
ours = np.loadtxt(trajectory, delimiter=",")[:, 1:]
worst = float(np.abs(ours[0] - theta.detach().numpy()).max())
for t in range(1, len(ours)):
    g, _ = m.grad(theta.detach().numpy().copy(), X, y, np.ones(len(y)))
    theta.grad = torch.from_numpy(g / len(y))
    opt.step()
    worst = max(worst, float(np.abs(ours[t] - theta.detach().numpy()).max()))
print(f"{worst:.3e} {len(ours) - 1}")
"#;

/// Adam (with model.l2) and AdamW (decoupled decay, β₂ = 0.99) through mpirun — the built-in
/// 64-32-10 network, gradient coding under stragglers, full batch — against torch.optim.Adam and
/// torch.optim.AdamW themselves, stepping on the PyTorch module's gradients from the same θ₀: the
/// trajectories agree within 1e-9 at θ₀ and every iteration. Where PyTorch does not import, the
/// test says so and is skipped.
#[test]
fn adam_and_adamw_follow_torch_optim_on_the_same_gradients() {
    if !torch("adam_and_adamw_follow_torch_optim_on_the_same_gradients") {
        return;
    }
    let dir = tempdir("adam-torch");
    let path = module(&dir, "mlp_torch.py", MLP_TORCH);
    let script = module(&dir, "torch_adam.py", TORCH_ADAM);
    let data = Path::new(env!("CARGO_MANIFEST_DIR")).join("../../data/digits-train.libsvm");
    let text = mlp_config(&dir, &path);
    // (optimizer, lr, its decay key and value, β₂)
    for (kind, lr, decay_key, decay, beta2) in
        [("adam", "0.01", "model.l2", "0.001", "0.999"), ("adamw", "0.01", "model.weight_decay", "0.1", "0.99")]
    {
        let sets: Vec<String> = BUILT_IN
            .iter()
            .map(|s| s.to_string())
            .chain(
                ["model.hidden=[32]", "model.batch=", "model.momentum=", "model.nesterov=", "model.decay_at="]
                    .map(String::from),
            )
            .chain([
                format!("model.optimizer={kind}"),
                format!("model.lr={lr}"),
                format!("{decay_key}={decay}"),
                format!("model.beta2={beta2}"),
            ])
            .collect();
        let sets: Vec<&str> = sets.iter().map(String::as_str).collect();
        let (run, run_dir, _, _) = train(&format!("{kind}-torch"), &text, &sets);
        assert_eq!(run.code, Some(0), "{kind}: the run failed:\n{}", run.stderr);
        assert!(iterations(&run_dir).iter().all(|r| r["exact"] == "true"), "{kind}: an iteration was not exact");
        let out = std::process::Command::new(Path::new(&python_env()).join("bin/python"))
            .arg(&script)
            .arg(&*dir)
            .arg(&data)
            .arg(dir.join("theta0.txt"))
            .arg(run_dir.join("trajectory.csv"))
            .args([kind, lr, decay, beta2])
            .output()
            .unwrap();
        let stdout = String::from_utf8_lossy(&out.stdout);
        assert!(out.status.success(), "{kind}: the torch reference failed:\n{}", String::from_utf8_lossy(&out.stderr));
        let (worst, steps) = stdout.trim().split_once(' ').expect("`worst steps`");
        let (worst, steps): (f64, usize) = (worst.parse().unwrap(), steps.parse().unwrap());
        eprintln!("{kind} against torch.optim: largest θ difference {worst:.2e} over {steps} steps");
        assert_eq!(steps, 12, "{kind}: every iteration compared");
        assert!(worst <= 1e-9, "{kind}: outrun's step differs from torch.optim's by {worst:e}");
    }
}
