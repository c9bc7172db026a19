//! The embedded interpreter (pyo3) and NumPy arrays (the `numpy` crate).

use std::ffi::CStr;
use std::path::Path;

use numpy::{PyArray1, PyArray2, PyArrayMethods, PyReadonlyArray1};
use pyo3::prelude::*;
use pyo3::sync::GILOnceCell;
use pyo3::types::{PyDict, PyList};
use pyo3::IntoPyObjectExt;

use crate::{Evaluation, PyError};

/// Python the crate runs itself: importing a file as a module, reading a returned vector, and
/// an exception's last line with where it was raised.
const HELPERS: &CStr = cr#"
import importlib.util, os, sys, traceback

def start():
    if not hasattr(sys, "argv"):
        sys.argv = ["outrun"]
    # a module's print() goes to standard error: outrun's standard output is its tables and
    # JSON (`outrun plan --json` imports the module)
    sys.stdout = sys.stderr
    venv = os.environ.get("VIRTUAL_ENV")
    if venv:
        import site
        v = "python%d.%d" % sys.version_info[:2]
        site.addsitedir(os.path.join(venv, "lib", v, "site-packages"))

def load(path):
    name = os.path.splitext(os.path.basename(path))[0]
    known = sys.modules.get(name)
    if known is not None and getattr(known, "__file__", None) == path:
        return known
    folder = os.path.dirname(path)
    if folder not in sys.path:
        sys.path.insert(0, folder)
    spec = importlib.util.spec_from_file_location(name, path)
    if spec is None or spec.loader is None:
        raise ImportError("not a Python source file")
    module = importlib.util.module_from_spec(spec)
    sys.modules[name] = module
    try:
        spec.loader.exec_module(module)
    except BaseException:
        del sys.modules[name]
        raise
    return module

def vector(v):
    import numpy
    if v is None:
        raise TypeError("None is not a vector")
    if hasattr(v, "detach"):
        v = v.detach().cpu().numpy()
    if numpy.iscomplexobj(v):
        raise TypeError("complex values: θ and its gradient are real")
    return numpy.ascontiguousarray(v, dtype=numpy.float64).reshape(-1)

def last_line(e, tb):
    line = traceback.format_exception_only(type(e), e)[-1].strip()
    if isinstance(e, SyntaxError) and e.filename:
        return line + " (at %s:%s)" % (os.path.basename(e.filename), e.lineno)
    frames = [f for f in traceback.extract_tb(tb) if not f.filename.startswith("<") and f.filename != __file__]
    if frames:
        f = frames[-1]
        line += " (at %s:%d)" % (os.path.basename(f.filename), f.lineno)
    return line

def describe():
    return "Python %s at %s" % (sys.version.split()[0], sys.prefix)
"#;

static HELPER_MODULE: GILOnceCell<Py<PyModule>> = GILOnceCell::new();

/// The interpreter, started on this thread if it was not yet.
pub(crate) fn start() {
    pyo3::prepare_freethreaded_python();
}

/// The helpers, loaded (and the interpreter prepared: `sys.argv`, `$VIRTUAL_ENV`) once.
fn helpers(py: Python<'_>) -> PyResult<&Bound<'_, PyModule>> {
    let m = HELPER_MODULE.get_or_try_init(py, || {
        let m = PyModule::from_code(py, HELPERS, c"outrun_helpers.py", c"outrun_helpers")?;
        m.getattr("start")?.call0()?;
        PyResult::Ok(m.unbind())
    })?;
    Ok(m.bind(py))
}

/// `err`'s last line (`ValueError: ... (at model.py:12)`).
fn last_line(py: Python<'_>, err: &PyErr) -> String {
    let line = helpers(py)
        .and_then(|h| h.getattr("last_line")?.call1((err.value(py), err.traceback(py)))?.extract::<String>());
    line.unwrap_or_else(|_| err.to_string()).replace('\n', " ")
}

fn raised(py: Python<'_>, path: &Path, function: &'static str, err: PyErr) -> PyError {
    PyError::new(path, function, format!("raised {}", last_line(py, &err)))
}

pub(crate) struct Module {
    init: Py<PyAny>,
    grad: Py<PyAny>,
    evaluate: Option<Py<PyAny>>,
}

pub(crate) struct Matrix(Py<PyArray2<f64>>);

impl Module {
    pub(crate) fn import(path: &Path) -> Result<Module, PyError> {
        Python::with_gil(|py| {
            let h = helpers(py).map_err(|e| raised(py, path, "import", e))?;
            if let Err(e) = py.import("numpy") {
                let python = h.getattr("describe").and_then(|d| d.call0()?.extract::<String>()).unwrap_or_default();
                return Err(PyError::new(
                    path,
                    "import",
                    format!(
                        "cannot run: numpy, the arrays outrun passes, does not import into the embedded {python}: {}; set VIRTUAL_ENV to a virtual environment of that Python version with numpy, or PYTHONPATH",
                        last_line(py, &e)
                    ),
                ));
            }
            let module = h.getattr("load").and_then(|f| f.call1((path.display().to_string(),)));
            let module = module.map_err(|e| raised(py, path, "import", e))?;
            let function = |name: &str| module.getattr(name).ok().filter(|f| f.is_callable()).map(Bound::unbind);
            let required = |name: &'static str, signature: &str| {
                function(name).ok_or_else(|| {
                    PyError::new(path, name, format!("is not defined: the module must define {name}{signature}"))
                })
            };
            let init = required("init", "(options, seed, features) -> θ₀")?;
            let grad = required("grad", "(theta, X, y, w) -> (g, loss)")?;
            Ok(Module { init, grad, evaluate: function("evaluate") })
        })
    }

    pub(crate) fn has_evaluate(&self) -> bool {
        self.evaluate.is_some()
    }

    pub(crate) fn init(
        &self,
        path: &Path,
        options: &toml::Table,
        seed: u64,
        features: usize,
    ) -> Result<Vec<f64>, PyError> {
        Python::with_gil(|py| {
            let call = || -> PyResult<Vec<f64>> {
                let theta = self.init.bind(py).call1((table(py, options)?, seed, features))?;
                Ok(vector(py, &theta)?.as_slice()?.to_vec())
            };
            call().map_err(|e| raised(py, path, "init", e))
        })
    }

    pub(crate) fn matrix(&self, x: Vec<f64>, cols: usize) -> Matrix {
        Python::with_gil(|py| {
            let rows = x.len().checked_div(cols).unwrap_or(0);
            let a = PyArray1::from_vec(py, x).reshape([rows, cols]).expect("rows × cols values");
            Matrix(a.unbind())
        })
    }

    pub(crate) fn grad(
        &self,
        path: &Path,
        theta: &[f64],
        x: &Matrix,
        y: &[f64],
        w: &[f64],
        g: &mut [f64],
    ) -> Result<f64, PyError> {
        Python::with_gil(|py| {
            let args = (
                PyArray1::from_slice(py, theta),
                x.0.bind(py),
                PyArray1::from_slice(py, y),
                PyArray1::from_slice(py, w),
            );
            let out = self.grad.bind(py).call1(args).map_err(|e| raised(py, path, "grad", e))?;
            let Ok((grad, loss)) = out.extract::<(Bound<'_, PyAny>, Bound<'_, PyAny>)>() else {
                let kind = out.get_type().name().map(|n| n.to_string()).unwrap_or_default();
                return Err(PyError::new(path, "grad", format!("returned a {kind}, not a pair (g, loss)")));
            };
            let grad = vector(py, &grad).map_err(|e| raised(py, path, "grad", e))?;
            let values = grad.as_slice().map_err(|e| PyError::new(path, "grad", e.to_string()))?;
            if values.len() != g.len() {
                let (got, want) = (values.len(), g.len());
                let what = format!("returned {got} gradient values, but init's θ₀ has {want} (one per parameter)");
                return Err(PyError::new(path, "grad", what));
            }
            g.copy_from_slice(values);
            loss.extract::<f64>().map_err(|_| PyError::new(path, "grad", "returned a loss that is not a number"))
        })
    }

    pub(crate) fn evaluate(&self, path: &Path, theta: &[f64], x: &Matrix, y: &[f64]) -> Result<Evaluation, PyError> {
        let Some(evaluate) = &self.evaluate else {
            return Err(PyError::new(path, "evaluate", "is not defined"));
        };
        Python::with_gil(|py| {
            let args = (PyArray1::from_slice(py, theta), x.0.bind(py), PyArray1::from_slice(py, y));
            let out = evaluate.bind(py).call1(args).map_err(|e| raised(py, path, "evaluate", e))?;
            let Ok(dict) = out.downcast::<PyDict>() else {
                return Err(PyError::new(path, "evaluate", "returned no dict (of `accuracy` and `loss`)"));
            };
            let mut eval = Evaluation::default();
            for (key, value) in dict.iter() {
                let key = key.extract::<String>().unwrap_or_default();
                let value = value.extract::<f64>().ok();
                let slot = match key.as_str() {
                    "accuracy" => &mut eval.accuracy,
                    "loss" => &mut eval.loss,
                    _ => {
                        return Err(PyError::new(
                            path,
                            "evaluate",
                            format!("returned the key `{key}`: outrun records `accuracy` and `loss`"),
                        ))
                    }
                };
                let value = value.ok_or_else(|| {
                    PyError::new(path, "evaluate", format!("returned a `{key}` that is not a number"))
                })?;
                // recorded as given: a NaN or a percentage would stand in iterations.csv unexplained
                if !value.is_finite() || (key == "accuracy" && !(0.0..=1.0).contains(&value)) {
                    let range = if key == "accuracy" { "a fraction in [0, 1]" } else { "a finite number" };
                    return Err(PyError::new(path, "evaluate", format!("returned {key} = {value}: must be {range}")));
                }
                *slot = Some(value);
            }
            if eval.accuracy.is_none() && eval.loss.is_none() {
                // an iteration with no metric would stand in iterations.csv as if none was asked for
                return Err(PyError::new(
                    path,
                    "evaluate",
                    "returned an empty dict: give `accuracy`, `loss` or both (or leave evaluate out)",
                ));
            }
            Ok(eval)
        })
    }
}

/// `v` as a contiguous float64 vector (a NumPy array, a CPU torch tensor, a list).
fn vector<'py>(py: Python<'py>, v: &Bound<'py, PyAny>) -> PyResult<PyReadonlyArray1<'py, f64>> {
    helpers(py)?.getattr("vector")?.call1((v,))?.extract()
}

/// The config's `[job.options]` as a dict (tables as dicts, arrays as lists, dates as text).
fn table<'py>(py: Python<'py>, t: &toml::Table) -> PyResult<Bound<'py, PyDict>> {
    let dict = PyDict::new(py);
    for (k, v) in t {
        dict.set_item(k, value(py, v)?)?;
    }
    Ok(dict)
}

fn value(py: Python<'_>, v: &toml::Value) -> PyResult<PyObject> {
    match v {
        toml::Value::String(s) => s.into_py_any(py),
        toml::Value::Integer(i) => i.into_py_any(py),
        toml::Value::Float(f) => f.into_py_any(py),
        toml::Value::Boolean(b) => b.into_py_any(py),
        toml::Value::Datetime(d) => d.to_string().into_py_any(py),
        toml::Value::Array(a) => {
            let items = a.iter().map(|x| value(py, x)).collect::<PyResult<Vec<_>>>()?;
            PyList::new(py, items)?.into_py_any(py)
        }
        toml::Value::Table(t) => table(py, t)?.into_py_any(py),
    }
}
