//! `[stragglers]`: straggler and fault injection, tagged by `model`. The runtime model is
//! `crate::stragglers::StragglerModel`.

use serde::{Deserialize, Serialize};

use super::tagged::{de, Tagged};
use super::{err, ConfigError};

/// When a Bernoulli straggler is drawn.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize, Default)]
#[serde(rename_all = "kebab-case")]
pub enum BernoulliMode {
    /// A fresh draw every iteration.
    #[default]
    PerIteration,
    /// One draw for the whole run.
    Once,
}

/// A parameter given once for every worker or once per worker.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(untagged)]
pub enum PerWorker {
    /// The same value for every worker.
    One(f64),
    /// One value per worker, in worker order (worker 1 first).
    Each(Vec<f64>),
}

impl PerWorker {
    /// The value of every worker 1..=n (index 0 is worker 1).
    pub fn values(&self, n: usize) -> Vec<f64> {
        match self {
            PerWorker::One(v) => vec![*v; n],
            PerWorker::Each(v) => v.clone(),
        }
    }

    pub(crate) fn check(&self, field: &str, n: usize, ok: impl Fn(f64) -> bool, what: &str) -> Result<(), ConfigError> {
        if let PerWorker::Each(v) = self {
            if v.len() != n {
                return err(
                    field,
                    format!("has {} values but there are {n} workers (give one value, or one per worker)", v.len()),
                );
            }
        }
        for (i, &v) in self.values(n).iter().enumerate() {
            if !ok(v) {
                let at =
                    if matches!(self, PerWorker::Each(_)) { format!(" (worker {})", i + 1) } else { String::new() };
                return err(field, format!("= {v}{at}: must be {what}"));
            }
        }
        Ok(())
    }
}

/// Parameters of the time laws `a·load + (load/μ)·W` (shifted exponential, Weibull).
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct LawConfig {
    /// Shift a: seconds per data point.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub a: Option<PerWorker>,
    /// Rate μ: points per second (tail scale load/μ).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub mu: Option<PerWorker>,
    /// Weibull shape k of the tail (1 is exponential).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub shape: Option<PerWorker>,
    /// A CSV file with one line per worker: `worker,a,mu[,shape]` (instead of the lists).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub file: Option<String>,
}

/// Listed workers, optionally from an iteration on.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct ListedConfig {
    /// Worker ids (1-based).
    #[serde(default)]
    pub workers: Vec<usize>,
    /// Extra delay as a multiple of the compute time (`fixed`); default 3.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub factor: Option<f64>,
    /// First iteration (0-based) at which the model applies.
    #[serde(default)]
    pub from_iteration: u64,
}

/// Independent random stragglers.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct BernoulliConfig {
    /// Straggling probability.
    pub p: f64,
    /// Extra delay as a multiple of the compute time; default 3.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub factor: Option<f64>,
    /// Draw per iteration or once for the run.
    #[serde(default)]
    pub mode: BernoulliMode,
    /// First iteration (0-based) at which the model applies.
    #[serde(default)]
    pub from_iteration: u64,
}

/// Two-state (Gilbert–Elliott) Markov stragglers: every worker is fast or slow, switches state
/// with probability `p` at the start of each iteration, and computes `load·(a + E/μ_state)`.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct MarkovConfig {
    /// Switching probability per iteration.
    pub p: f64,
    /// Shift a: seconds per data point (one value or one per worker).
    pub a: PerWorker,
    /// Rate in the slow state, points per second (one value or one per worker).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub mu_slow: Option<PerWorker>,
    /// Rate in the fast state, points per second (one value or one per worker).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub mu_fast: Option<PerWorker>,
    /// Heterogeneous workers (GC-DC's model (B)): each worker's fast rate is drawn uniformly in
    /// [0, mu_fast_max] from the seed (instead of `mu_fast`), its slow rate is that over
    /// `slow_factor`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub mu_fast_max: Option<f64>,
    /// Slow-state slowdown for drawn rates (μ_slow = μ_fast / slow_factor).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub slow_factor: Option<f64>,
    /// How many workers start slow (a random subset drawn from the run seed).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub initial_slow: Option<usize>,
    /// Which workers start slow (instead of `initial_slow`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub initial: Option<Vec<usize>>,
}

/// Time-varying rates (GC-DC's model (C)): every worker's rate μ is redrawn uniformly in
/// [0, mu_max] with probability p at the start of each iteration; a worker is a straggler while
/// μ < tau. Initially slow workers start with μ uniform in [0, tau), the others in [tau, mu_max].
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct RatesConfig {
    /// Redraw probability per iteration.
    pub p: f64,
    /// Shift a: seconds per data point (one value or one per worker).
    pub a: PerWorker,
    /// Largest rate, points per second.
    pub mu_max: f64,
    /// Straggler threshold on the rate, points per second.
    pub tau: f64,
    /// How many workers start slow (drawn from the run seed).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub initial_slow: Option<usize>,
    /// Which workers start slow (instead of `initial_slow`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub initial: Option<Vec<usize>>,
}

/// What the seconds of a recorded trace are.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum TraceTimes {
    /// The worker's compute time (replaces the modelled time; needs modelled timing).
    Compute,
    /// A delay added to the worker's base compute time.
    Delay,
}

/// Recorded delays replayed: one value per worker and iteration.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct TraceConfig {
    /// A CSV file of `worker,iteration,seconds` lines (read by the loader into `delays`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub file: Option<String>,
    /// What the seconds are.
    pub times: TraceTimes,
    /// Replay the trace from its start when the run has more iterations than it.
    #[serde(default)]
    pub cycle: bool,
    /// The trace: per worker (worker 1 first), one value per iteration.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub delays: Vec<Vec<f64>>,
}

/// `[stragglers]`, by `model`.
#[derive(Clone, Debug, PartialEq, Serialize, Default)]
#[serde(tag = "model", rename_all = "kebab-case")]
pub enum StragglerConfig {
    /// No injected delay. (An off switch: other keys may stay for later.)
    #[default]
    None,
    /// Listed workers add `factor` × their compute time (thesis: 3× sleep).
    Fixed(ListedConfig),
    /// Each worker straggles with probability p (per iteration, or once for the run).
    Bernoulli(BernoulliConfig),
    /// Compute time a·load + Exp(rate μ/load) (CR paper eq. 6); needs modelled timing.
    ShiftedExp(LawConfig),
    /// Compute time a·load + (load/μ)·W, W ~ Weibull(shape, 1) (HCMM); needs modelled timing.
    Weibull(LawConfig),
    /// Listed workers never answer from `from_iteration` on.
    FailStop(ListedConfig),
    /// Two-state Markov stragglers (GC-DC's models (A) and (B)); needs modelled timing.
    Markov(MarkovConfig),
    /// Time-varying rates (GC-DC's model (C)); needs modelled timing.
    Rates(RatesConfig),
    /// Recorded compute times or delays replayed per worker and iteration.
    Trace(TraceConfig),
}

const ALL_KEYS: &[&str] = &[
    "workers",
    "factor",
    "from_iteration",
    "p",
    "mode",
    "a",
    "mu",
    "shape",
    "file",
    "mu_slow",
    "mu_fast",
    "mu_fast_max",
    "slow_factor",
    "initial_slow",
    "initial",
    "mu_max",
    "tau",
    "times",
    "cycle",
    "delays",
];

impl Tagged for StragglerConfig {
    const SECTION: &'static str = "stragglers";
    const TAG: &'static str = "model";
    const VARIANTS: &'static [(&'static str, &'static [&'static str])] = &[
        ("none", ALL_KEYS),
        ("fixed", &["workers", "factor", "from_iteration"]),
        ("bernoulli", &["p", "factor", "mode", "from_iteration"]),
        ("shifted-exp", &["a", "mu", "file"]),
        ("weibull", &["a", "mu", "shape", "file"]),
        ("fail-stop", &["workers", "from_iteration"]),
        ("markov", &["p", "a", "mu_slow", "mu_fast", "mu_fast_max", "slow_factor", "initial_slow", "initial"]),
        ("rates", &["p", "a", "mu_max", "tau", "initial_slow", "initial"]),
        ("trace", &["file", "times", "cycle", "delays"]),
    ];

    fn variant(kind: &str, rest: toml::Value) -> Result<Self, ConfigError> {
        let need = |key: &str, what: &str| -> Result<(), ConfigError> {
            if rest.get(key).is_none() {
                return err(&format!("stragglers.{key}"), format!("missing: {kind} needs {what}"));
            }
            Ok(())
        };
        Ok(match kind {
            "none" => StragglerConfig::None,
            "fixed" => StragglerConfig::Fixed(de(rest, "stragglers")?),
            "bernoulli" => {
                need("p", "a probability p")?;
                StragglerConfig::Bernoulli(de(rest, "stragglers")?)
            }
            "shifted-exp" => StragglerConfig::ShiftedExp(de(rest, "stragglers")?),
            "weibull" => StragglerConfig::Weibull(de(rest, "stragglers")?),
            "fail-stop" => StragglerConfig::FailStop(de(rest, "stragglers")?),
            "markov" => {
                need("p", "the switching probability p")?;
                need("a", "the shift a (seconds per point)")?;
                if rest.get("mu_fast_max").is_none() {
                    need("mu_slow", "the slow-state rate mu_slow (points per second), or mu_fast_max and slow_factor")?;
                    need("mu_fast", "the fast-state rate mu_fast (points per second), or mu_fast_max and slow_factor")?;
                } else {
                    need("slow_factor", "slow_factor with mu_fast_max (μ_slow = μ_fast / slow_factor)")?;
                }
                StragglerConfig::Markov(de(rest, "stragglers")?)
            }
            "rates" => {
                need("p", "the redraw probability p")?;
                need("a", "the shift a (seconds per point)")?;
                need("mu_max", "the largest rate mu_max (points per second)")?;
                need("tau", "the straggler threshold tau (points per second)")?;
                StragglerConfig::Rates(de(rest, "stragglers")?)
            }
            "trace" => {
                need(
                    "times",
                    "times = \"compute\" (the file holds compute times) or \"delay\" (delays added to them)",
                )?;
                StragglerConfig::Trace(de(rest, "stragglers")?)
            }
            _ => unreachable!("models are checked against VARIANTS"),
        })
    }
}

/// Largest delay factor (`fixed`, `bernoulli`).
pub(super) const MAX_FACTOR: f64 = 1e6;

impl StragglerConfig {
    pub(super) fn from_section(s: toml::Table) -> Result<Self, ConfigError> {
        <Self as Tagged>::from_section(s)
    }

    /// The config spelling of the model.
    pub fn name(&self) -> &'static str {
        match self {
            StragglerConfig::None => "none",
            StragglerConfig::Fixed(_) => "fixed",
            StragglerConfig::Bernoulli(_) => "bernoulli",
            StragglerConfig::ShiftedExp(_) => "shifted-exp",
            StragglerConfig::Weibull(_) => "weibull",
            StragglerConfig::FailStop(_) => "fail-stop",
            StragglerConfig::Markov(_) => "markov",
            StragglerConfig::Rates(_) => "rates",
            StragglerConfig::Trace(_) => "trace",
        }
    }

    /// Models whose law replaces the measured compute time.
    pub fn needs_modelled_timing(&self) -> bool {
        matches!(
            self,
            StragglerConfig::ShiftedExp(_)
                | StragglerConfig::Weibull(_)
                | StragglerConfig::Markov(_)
                | StragglerConfig::Rates(_)
                | StragglerConfig::Trace(TraceConfig { times: TraceTimes::Compute, .. })
        )
    }

    /// The per-worker parameter file of a time law, if one is named (read by the loader, which
    /// replaces it with the lists).
    pub fn params_file(&self) -> Option<&str> {
        match self {
            StragglerConfig::ShiftedExp(l) | StragglerConfig::Weibull(l) => l.file.as_deref(),
            StragglerConfig::Trace(t) => t.file.as_deref(),
            _ => None,
        }
    }

    /// Replace the parameter file by its contents (`worker,a,mu[,shape]` per line; `#`
    /// comments and a header line are allowed). `origin` names the file in errors.
    pub fn resolve_file(&mut self, text: &str, origin: &str, workers: usize) -> Result<(), ConfigError> {
        if let StragglerConfig::Trace(t) = self {
            t.delays = read_trace(text, origin, workers)?;
            t.file = None;
            return Ok(());
        }
        let weibull = matches!(self, StragglerConfig::Weibull(_));
        let (StragglerConfig::ShiftedExp(law) | StragglerConfig::Weibull(law)) = self else { return Ok(()) };
        if law.file.is_none() {
            return Ok(());
        }
        let names: &[&str] = if weibull { &["a", "mu", "shape"] } else { &["a", "mu"] };
        let rows = per_worker_rows(text, origin, workers, "stragglers.file", names)?;
        let one = law.clone();
        check_rows(&rows, origin, "stragglers.file", |v| {
            let mut l =
                LawConfig { file: None, a: Some(PerWorker::One(v[0])), mu: Some(PerWorker::One(v[1])), ..one.clone() };
            if weibull {
                l.shape = Some(PerWorker::One(v[2]));
            }
            let section = if weibull { StragglerConfig::Weibull(l) } else { StragglerConfig::ShiftedExp(l) };
            section.validate(workers, 1)
        })?;
        let col = |k: usize| PerWorker::Each(rows.iter().map(|r| r.values[k]).collect());
        law.a = Some(col(0));
        law.mu = Some(col(1));
        if weibull {
            law.shape = Some(col(2));
        }
        law.file = None;
        Ok(())
    }

    pub(super) fn validate(&self, n: usize, iterations: u64) -> Result<(), ConfigError> {
        let model = self.name();
        let listed = |l: &ListedConfig| -> Result<(), ConfigError> {
            if l.workers.is_empty() {
                return err(
                    "stragglers.workers",
                    format!("missing: model \"{model}\" needs the list of worker ids (1..={n})"),
                );
            }
            super::check_worker_ids("stragglers.workers", &l.workers, n)
        };
        let factor = |f: Option<f64>| -> Result<(), ConfigError> {
            match f {
                Some(f) if !(f.is_finite() && (0.0..=MAX_FACTOR).contains(&f)) => {
                    err("stragglers.factor", format!("= {f}: must be in [0, {MAX_FACTOR:e}]"))
                }
                _ => Ok(()),
            }
        };
        let prob = |p: f64| -> Result<(), ConfigError> {
            if !(0.0..=1.0).contains(&p) {
                return err("stragglers.p", format!("= {p}: must be in [0, 1]"));
            }
            Ok(())
        };
        let shift = |v: f64| v.is_finite() && (0.0..=1.0).contains(&v);
        let rate = |v: f64| v.is_finite() && v >= 1e-9;
        match self {
            StragglerConfig::None => Ok(()),
            StragglerConfig::Trace(t) => t.validate(n, iterations),
            StragglerConfig::Fixed(l) => {
                listed(l)?;
                factor(l.factor)
            }
            StragglerConfig::FailStop(l) => listed(l),
            StragglerConfig::Bernoulli(b) => {
                prob(b.p)?;
                factor(b.factor)
            }
            StragglerConfig::ShiftedExp(l) | StragglerConfig::Weibull(l) => {
                if l.file.is_some() {
                    if l.a.is_some() || l.mu.is_some() || l.shape.is_some() {
                        return err(
                            "stragglers.file",
                            "give the parameters either in a file or as a, mu (and shape), not both",
                        );
                    }
                    return Ok(());
                }
                match &l.a {
                    None => {
                        return err("stragglers.a", format!("missing: {model} needs the shift a (seconds per point)"))
                    }
                    Some(a) => a.check("stragglers.a", n, shift, "in [0, 1] seconds per point")?,
                }
                match &l.mu {
                    None => {
                        return err("stragglers.mu", format!("missing: {model} needs the rate μ (points per second)"))
                    }
                    Some(m) => m.check("stragglers.mu", n, rate, "at least 1e-9 points per second")?,
                }
                match (model, &l.shape) {
                    ("weibull", None) => err("stragglers.shape", "missing: weibull needs the shape k of the tail"),
                    ("weibull", Some(k)) => k.check(
                        "stragglers.shape",
                        n,
                        |v| v.is_finite() && v >= 0.05,
                        "at least 0.05 (smaller shapes give delays beyond any deadline)",
                    ),
                    (_, Some(_)) => err("stragglers.shape", "is only used by stragglers.model = \"weibull\""),
                    _ => Ok(()),
                }
            }
            StragglerConfig::Rates(m) => {
                prob(m.p)?;
                m.a.check("stragglers.a", n, shift, "in [0, 1] seconds per point")?;
                if !rate(m.mu_max) || m.mu_max > 1e15 {
                    return err(
                        "stragglers.mu_max",
                        format!("= {}: must be a rate in [1e-9, 1e15] points per second", m.mu_max),
                    );
                }
                if !(m.tau.is_finite() && m.tau > 0.0 && m.tau < m.mu_max) {
                    return err(
                        "stragglers.tau",
                        format!("= {}: must be a rate between 0 and mu_max = {}", m.tau, m.mu_max),
                    );
                }
                check_initial(&m.initial_slow, &m.initial, n)
            }
            StragglerConfig::Markov(m) => {
                prob(m.p)?;
                m.a.check("stragglers.a", n, shift, "in [0, 1] seconds per point")?;
                match (&m.mu_fast_max, &m.mu_slow, &m.mu_fast) {
                    (Some(max), None, None) => {
                        if !rate(*max) || *max > 1e15 {
                            return err(
                                "stragglers.mu_fast_max",
                                format!("= {max}: must be a rate in [1e-9, 1e15] points per second"),
                            );
                        }
                        match m.slow_factor {
                            Some(f) if f.is_finite() && (1.0..=MAX_FACTOR).contains(&f) => {}
                            f => {
                                return err(
                                    "stragglers.slow_factor",
                                    format!("= {f:?}: must be between 1 and {MAX_FACTOR}"),
                                )
                            }
                        }
                    }
                    (Some(_), _, _) => {
                        return err(
                            "stragglers.mu_fast_max",
                            "give mu_fast_max and slow_factor (drawn rates) or mu_slow and mu_fast, not both",
                        )
                    }
                    (None, Some(s), Some(f)) => {
                        if m.slow_factor.is_some() {
                            return err("stragglers.slow_factor", "is only used with mu_fast_max (drawn rates)");
                        }
                        s.check("stragglers.mu_slow", n, rate, "at least 1e-9 points per second")?;
                        f.check("stragglers.mu_fast", n, rate, "at least 1e-9 points per second")?;
                    }
                    _ => {
                        return err(
                            "stragglers.mu_fast",
                            "missing: markov needs mu_slow and mu_fast, or mu_fast_max and slow_factor",
                        )
                    }
                }
                check_initial(&m.initial_slow, &m.initial, n)
            }
        }
    }
}

/// The initially slow workers: a count or a list, not both, within 1..=n.
fn check_initial(initial_slow: &Option<usize>, initial: &Option<Vec<usize>>, n: usize) -> Result<(), ConfigError> {
    match (initial_slow, initial) {
        (Some(_), Some(_)) => err("stragglers.initial", "give initial_slow (a count) or initial (a list), not both"),
        (Some(k), None) if *k > n => err("stragglers.initial_slow", format!("= {k}: more than the {n} workers")),
        (None, Some(l)) => super::check_worker_ids("stragglers.initial", l, n),
        _ => Ok(()),
    }
}

impl TraceConfig {
    fn validate(&self, n: usize, iterations: u64) -> Result<(), ConfigError> {
        match (&self.file, self.delays.is_empty()) {
            (Some(_), false) => {
                return err("stragglers.file", "give the trace either as a file or as delays, not both")
            }
            (Some(_), true) => return Ok(()), // the loader reads it, then validates again
            (None, true) => {
                return err("stragglers.file", "missing: trace needs the file of `worker,iteration,seconds` lines")
            }
            (None, false) => {}
        }
        if self.delays.len() != n {
            return err(
                "stragglers.delays",
                format!("has {} workers' lists but there are {n} workers", self.delays.len()),
            );
        }
        let len = self.delays[0].len();
        if let Some(w) = self.delays.iter().position(|d| d.len() != len) {
            return err(
                "stragglers.delays",
                format!(
                    "worker {} has {} values but worker 1 has {len}: one per iteration for every worker",
                    w + 1,
                    self.delays[w].len()
                ),
            );
        }
        for (w, d) in self.delays.iter().enumerate() {
            if let Some((t, v)) = d.iter().enumerate().find(|(_, v)| !(v.is_finite() && (0.0..=1e6).contains(*v))) {
                return err(
                    "stragglers.delays",
                    format!("worker {} at iteration {t}: {v} is not a time in [0, 1e6] seconds", w + 1),
                );
            }
        }
        if (len as u64) < iterations && !self.cycle {
            return err(
                "stragglers.file",
                format!("the trace has {len} iterations but run.iterations = {iterations}: shorten the run, or set stragglers.cycle = true to replay the trace from its start"),
            );
        }
        Ok(())
    }
}

/// A per-worker CSV file's `worker,<names...>` lines as one row of values per worker (worker 1
/// first); every worker exactly once. Errors name `field` and `origin:line`.
pub(super) fn per_worker_rows(
    text: &str,
    origin: &str,
    workers: usize,
    field: &str,
    names: &[&str],
) -> Result<Vec<Row>, ConfigError> {
    let cols = names.len() + 1;
    let mut rows: Vec<Option<Row>> = vec![None; workers];
    for (ln, f) in data_lines(text) {
        let bad = |m: String| ConfigError::new(field, format!("{origin}:{ln}: {m}"));
        if f.len() != cols {
            return Err(bad(format!(
                "expected {cols} comma-separated values (worker,{}), found {}",
                names.join(","),
                f.len()
            )));
        }
        let w: usize = f[0].parse().map_err(|_| bad(format!("worker `{}` is not a worker id", f[0])))?;
        if w == 0 || w > workers {
            return Err(bad(format!("worker {w} is not in 1..={workers}")));
        }
        let vals = f[1..]
            .iter()
            .map(|v| v.parse::<f64>().map_err(|_| bad(format!("`{v}` is not a number"))))
            .collect::<Result<Vec<_>, _>>()?;
        if rows[w - 1].replace(Row { line: ln, values: vals }).is_some() {
            return Err(bad(format!("worker {w} appears twice")));
        }
    }
    if let Some(w) = rows.iter().position(Option::is_none) {
        return err(field, format!("{origin}: no line for worker {}", w + 1));
    }
    Ok(rows.into_iter().map(|r| r.expect("checked")).collect())
}

/// One worker's line of a per-worker CSV file: its 1-based line number and its values.
#[derive(Clone, Debug)]
pub(super) struct Row {
    pub line: usize,
    pub values: Vec<f64>,
}

/// Check each row of a per-worker file on its own — `section` is the config section with that
/// row's values given once for every worker — so a bad value is named by file:line, not as
/// `field (worker w)` of lists the user never wrote.
pub(super) fn check_rows(
    rows: &[Row],
    origin: &str,
    field: &str,
    section: impl Fn(&[f64]) -> Result<(), ConfigError>,
) -> Result<(), ConfigError> {
    for r in rows {
        if let Err(e) = section(&r.values) {
            let key = e.field.rsplit('.').next().unwrap_or(&e.field);
            return err(field, format!("{origin}:{}: {key} {}", r.line, e.message));
        }
    }
    Ok(())
}

/// A per-worker CSV file's data lines: (1-based line number, trimmed comma-separated fields),
/// without `#` comments, blank lines and a header (a line starting with `worker`).
fn data_lines(text: &str) -> impl Iterator<Item = (usize, Vec<&str>)> {
    text.lines().enumerate().filter_map(|(ln, line)| {
        let line = line.split('#').next().unwrap_or("").trim();
        (!line.is_empty() && !line.starts_with("worker")).then(|| (ln + 1, line.split(',').map(str::trim).collect()))
    })
}

/// A trace file's `worker,iteration,seconds` lines (`#` comments and a header allowed) as one
/// list per worker; every worker needs the same iterations 0..T−1.
fn read_trace(text: &str, origin: &str, workers: usize) -> Result<Vec<Vec<f64>>, ConfigError> {
    let mut seen: Vec<Vec<Option<f64>>> = vec![vec![]; workers];
    for (ln, f) in data_lines(text) {
        let bad = |m: String| ConfigError::new("stragglers.file", format!("{origin}:{ln}: {m}"));
        if f.len() != 3 {
            return Err(bad(format!(
                "expected 3 comma-separated values (worker,iteration,seconds), found {}",
                f.len()
            )));
        }
        let w: usize = f[0].parse().map_err(|_| bad(format!("worker `{}` is not a worker id", f[0])))?;
        if w == 0 || w > workers {
            return Err(bad(format!("worker {w} is not in 1..={workers}")));
        }
        let t: usize = f[1].parse().map_err(|_| bad(format!("iteration `{}` is not an iteration (0, 1, …)", f[1])))?;
        if t > 10_000_000 {
            return Err(bad(format!("iteration {t}: at most 10⁷ iterations")));
        }
        let v: f64 = f[2].parse().map_err(|_| bad(format!("`{}` is not a number of seconds", f[2])))?;
        if !(v.is_finite() && (0.0..=1e6).contains(&v)) {
            return Err(bad(format!("{v} is not a time in [0, 1e6] seconds")));
        }
        let row = &mut seen[w - 1];
        if row.len() <= t {
            row.resize(t + 1, None);
        }
        if row[t].replace(v).is_some() {
            return Err(bad(format!("worker {w} at iteration {t} appears twice")));
        }
    }
    let len = seen.iter().map(Vec::len).max().unwrap_or(0);
    if len == 0 {
        return err("stragglers.file", format!("{origin}: no `worker,iteration,seconds` line"));
    }
    seen.into_iter()
        .enumerate()
        .map(|(w, row)| {
            (0..len)
                .map(|t| row.get(t).copied().flatten())
                .collect::<Option<Vec<f64>>>()
                .ok_or_else(|| {
                    let t = (0..len).find(|&t| row.get(t).copied().flatten().is_none()).expect("a gap");
                    ConfigError::new("stragglers.file", format!("{origin}: no value for worker {} at iteration {t} (the trace has iterations 0..{len} for some worker; every worker needs each)", w + 1))
                })
        })
        .collect()
}
