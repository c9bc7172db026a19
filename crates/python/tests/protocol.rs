//! The module protocol against small modules the tests write: what crosses (options, arrays,
//! weighted sums) and what is refused, each in one line naming the module and the function.
//! Needs numpy in the embedded interpreter: the active virtual environment, or the
//! repository's `.venv` (scripts/setup.sh).

use std::path::{Path, PathBuf};
use std::sync::Once;

use outrun_python::{Module, PyError};

/// Point the interpreter at the environment with numpy, once, before it starts.
fn environment() {
    static ONCE: Once = Once::new();
    ONCE.call_once(|| {
        if std::env::var_os("VIRTUAL_ENV").is_none() {
            let venv = Path::new(env!("CARGO_MANIFEST_DIR")).join("../../.venv");
            std::env::set_var("VIRTUAL_ENV", venv);
        }
    });
}

/// A test's directory of modules, removed when the test's thread ends (the test harness runs
/// each test on a thread of its own; one directory for the whole process was never removed).
struct ModuleDir(PathBuf);

impl ModuleDir {
    fn new() -> Self {
        static NEXT: std::sync::atomic::AtomicUsize = std::sync::atomic::AtomicUsize::new(0);
        let n = NEXT.fetch_add(1, std::sync::atomic::Ordering::Relaxed);
        let dir = std::env::temp_dir().join(format!("outrun-python-test-{}-{n}", std::process::id()));
        std::fs::create_dir_all(&dir).unwrap();
        ModuleDir(dir)
    }
}

impl Drop for ModuleDir {
    fn drop(&mut self) {
        let _ = std::fs::remove_dir_all(&self.0);
    }
}

thread_local! {
    static DIR: ModuleDir = ModuleDir::new();
}

/// `text` as module `name` in this test's directory.
fn module(name: &str, text: &str) -> PathBuf {
    environment();
    DIR.with(|dir| {
        let path = dir.0.join(format!("{name}.py"));
        std::fs::write(&path, text).unwrap();
        path
    })
}

const LEAST_SQUARES: &str = "import numpy as np
def init(options, seed, features):
    return np.zeros(features) + options['start']
def grad(theta, X, y, w):
    r = X @ theta - y
    return X.T @ (w * r), 0.5 * float(w @ (r * r))
";

fn open(name: &str, text: &str) -> Result<(Module, Vec<f64>), PyError> {
    let mut opts = toml::Table::new();
    opts.insert("start".into(), toml::Value::Float(0.5));
    Module::open(&module(name, text), &opts, 1, 3)
}

/// The error `grad` gives on a 2 × 3 block.
fn grad_error(name: &str, grad: &str) -> String {
    let text = format!("import numpy as np\ndef init(options, seed, features):\n    return np.zeros(features)\n{grad}");
    let (m, theta) = open(name, &text).unwrap();
    let x = m.matrix(vec![1.0; 6], 3);
    let err = m.grad(&theta, &x, &[1.0, 2.0], &[1.0, 1.0], &mut [0.0; 3]).unwrap_err();
    assert_eq!(err.function, "grad");
    err.on_rank(4)
}

#[test]
fn a_weighted_least_squares_gradient_crosses_exactly() {
    let (m, theta) = open("lsq", LEAST_SQUARES).unwrap();
    assert_eq!(theta, vec![0.5; 3]);
    assert!(!m.has_evaluate());
    let x = m.matrix(vec![1.0, 2.0, 3.0, 4.0, 5.0, 6.0], 3);
    let mut g = vec![0.0; 3];
    // twice on the same kept rows: the array is reused, the result the same
    for _ in 0..2 {
        let loss = m.grad(&theta, &x, &[1.0, 2.0], &[1.0, 2.0], &mut g).unwrap();
        // residuals [3 − 1, 7.5 − 2] = [2, 5.5]; g = 1·2·x₁ + 2·5.5·x₂
        assert_eq!(g, vec![2.0 + 44.0, 4.0 + 55.0, 6.0 + 66.0]);
        assert_eq!(loss, 0.5 * (4.0 + 2.0 * 30.25));
    }
}

#[test]
fn options_arrive_as_a_dict_of_python_values() {
    let text = "def init(options, seed, features):
    o = options
    assert o['name'] == 'mlp' and o['n'] == 3 and o['x'] == 0.25 and o['on'] is True
    assert o['hidden'] == [128, 64] and o['nested'] == {'k': [1.5, 'a']}
    assert seed == 9 and features == 2
    return [1.0, 2.0]
def grad(theta, X, y, w):
    return theta, 0.0
";
    let opts: toml::Table =
        toml::from_str("name = 'mlp'\nn = 3\nx = 0.25\non = true\nhidden = [128, 64]\n[nested]\nk = [1.5, 'a']\n")
            .unwrap();
    let (_, theta) = Module::open(&module("options", text), &opts, 9, 2).unwrap();
    assert_eq!(theta, vec![1.0, 2.0]);
}

#[test]
fn evaluate_reports_accuracy_and_loss() {
    let text = format!(
        "{LEAST_SQUARES}def evaluate(theta, X, y):\n    return {{'accuracy': 0.75, 'loss': float(X.shape[0])}}\n"
    );
    let (m, theta) = open("evaluate", &text).unwrap();
    assert!(m.has_evaluate());
    let e = m.evaluate(&theta, &m.matrix(vec![0.0; 9], 3), &[0.0; 3]).unwrap();
    assert_eq!((e.accuracy, e.loss), (Some(0.75), Some(3.0)));
    let bad = format!("{LEAST_SQUARES}def evaluate(theta, X, y):\n    return {{'f1': 0.5}}\n");
    let (m, theta) = open("evaluate_bad", &bad).unwrap();
    let err = m.evaluate(&theta, &m.matrix(vec![0.0; 3], 3), &[0.0]).unwrap_err();
    assert!(err.to_string().contains("returned the key `f1`: outrun records `accuracy` and `loss`"), "{err}");
    let empty = format!("{LEAST_SQUARES}def evaluate(theta, X, y):\n    return {{}}\n");
    let (m, theta) = open("evaluate_empty", &empty).unwrap();
    let err = m.evaluate(&theta, &m.matrix(vec![0.0; 3], 3), &[0.0]).unwrap_err();
    assert!(err.to_string().contains("returned an empty dict: give `accuracy`, `loss` or both"), "{err}");
}

#[test]
fn import_and_init_failures_name_the_module_the_function_and_the_exception() {
    let e = open("syntax", "def init(options, seed, features)\n    return [0.0]\n").unwrap_err();
    assert_eq!(e.function, "import");
    assert!(e.what.starts_with("raised SyntaxError: expected ':' (at syntax.py:1)"), "{e}");
    let e = open("no_grad", "def init(options, seed, features):\n    return [0.0]\n").unwrap_err();
    assert_eq!(
        (e.function, e.what.as_str()),
        ("grad", "is not defined: the module must define grad(theta, X, y, w) -> (g, loss)")
    );
    let e =
        open("init_raises", "def init(o, s, p):\n    return {}['hidden']\ndef grad(t, X, y, w):\n    return t, 0.0\n")
            .unwrap_err();
    assert_eq!(
        e.to_string(),
        format!("python module {}: init() raised KeyError: 'hidden' (at init_raises.py:2)", e.module)
    );
    let e = open("empty", "def init(o, s, p):\n    return []\ndef grad(t, X, y, w):\n    return t, 0.0\n").unwrap_err();
    assert!(e.what.contains("no parameters"), "{e}");
    let e =
        open("inf", "def init(o, s, p):\n    return [0.0, float('inf')]\ndef grad(t, X, y, w):\n    return t, 0.0\n")
            .unwrap_err();
    assert!(e.what.contains("θ₀ with inf at index 1"), "{e}");
    // a FIFO named as the module is refused before it is opened (opening it would block)
    let fifo = module("fifo", "").with_file_name("fifo_module.py");
    let _ = std::fs::remove_file(&fifo);
    if std::process::Command::new("mkfifo").arg(&fifo).status().is_ok_and(|s| s.success()) {
        let e = Module::open(&fifo, &toml::Table::new(), 1, 3).unwrap_err();
        assert_eq!((e.function, e.what.as_str()), ("import", "cannot read the file: not a regular file"));
        std::fs::remove_file(&fifo).unwrap();
    }
}

#[test]
fn a_gradient_of_the_wrong_shape_or_value_is_refused_in_one_line() {
    let e = grad_error("short", "def grad(t, X, y, w):\n    return np.zeros(2), 0.0\n");
    assert!(e.ends_with("grad() on rank 4 returned 2 gradient values, but init's θ₀ has 3 (one per parameter)"), "{e}");
    let e = grad_error("nan", "def grad(t, X, y, w):\n    return np.array([0.0, np.nan, 0.0]), 0.0\n");
    assert!(e.ends_with("grad() on rank 4 returned the gradient with NaN at index 1"), "{e}");
    let e = grad_error("loss_inf", "def grad(t, X, y, w):\n    return t, float('inf')\n");
    assert!(e.ends_with("returned a loss of inf: not finite"), "{e}");
    let e = grad_error("single", "def grad(t, X, y, w):\n    return t\n");
    assert!(e.ends_with("returned a ndarray, not a pair (g, loss)"), "{e}");
    let e = grad_error("raises", "def grad(t, X, y, w):\n    return X @ np.ones(4), 0.0\n");
    assert!(e.contains("grad() on rank 4 raised ValueError: matmul: "), "{e}");
    assert!(e.ends_with("(at raises.py:5)") && !e.contains('\n'), "{e}");
    // a list and a 2-D array are read as the flat vector they hold
    let (m, theta) = open(
        "shapes",
        "def init(o, s, p):\n    return [0.0] * p\ndef grad(t, X, y, w):\n    return [[1, 2], [3]][0] + [3], 1\n",
    )
    .unwrap();
    let mut g = vec![0.0; 3];
    assert_eq!(m.grad(&theta, &m.matrix(vec![0.0; 3], 3), &[0.0], &[1.0], &mut g).unwrap(), 1.0);
    assert_eq!(g, vec![1.0, 2.0, 3.0]);
}
