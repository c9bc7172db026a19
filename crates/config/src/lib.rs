//! # outrun-config: the experiment file
//!
//! One TOML file per experiment, any key overridable with `--set section.key=value`, validated
//! before MPI starts. This crate is the first room of **config → plan → protocol → driver**: it
//! knows the sections and their checks and nothing of the plan (`outrun-plan` reads a
//! [`Config`]; nothing here reads a plan). It owns the plain enums both sides use
//! ([`ComputeMode`], [`Upload`], [`Idle`], [`RingAlgorithm`], [`Ssi`], [`ColumnOrder`]).
//!
//! One module per section, each with its types beside its validation: [`RunConfig`] (`[run]`),
//! [`JobConfig`] (`[job]`, with the job's own sections: `[data]` and `[model]` for gradient
//! descent), [`SchemeConfig`] (`[scheme]`, tagged by `kind`), [`StragglerConfig`]
//! (`[stragglers]`, tagged by `model`), and the execution knobs [`TimingConfig`],
//! [`EngineConfig`], [`NetworkConfig`].
//!
//! Every error names the field it is about (`scheme.s = 9: must be less than scheme.workers =
//! 9`), in one line, so `outrun check` and every rank of a run can print it as is.
//!
//! [`sweep`] expands a sweep file (a base config and axes) into validated variants.
//!
//! # Example: a config, an override, and an error that names its field
//!
//! ```
//! let text = "[run]\nname = 'doc'\niterations = 10\n\
//!     [data]\nkind = 'linear-synthetic'\nsamples = 60\nfeatures = 5\n\
//!     [model]\nloss = 'least-squares'\nlr = 0.1\n\
//!     [scheme]\nkind = 'gc-cyclic'\nworkers = 6\ns = 1\n";
//! let cfg = outrun_config::parse(text, &["scheme.s=2".into()]).unwrap();
//! assert_eq!((cfg.workers(), cfg.ranks(), cfg.scheme.kind()), (6, 7, "gc-cyclic"));
//! let bad = outrun_config::parse(text, &["scheme.s=6".into()]).unwrap_err();
//! assert_eq!(bad.field, "scheme.s");
//! ```
#![deny(missing_docs)]

mod exec;
mod faults;
mod job;
mod links;
mod run;
mod scheme;
mod stragglers;
pub mod sweep;
mod tagged;

use serde::Serialize;

pub use exec::{ComputeMode, EngineConfig, Idle, NetworkConfig, Rate, RateError, TimingConfig, Upload, MAX_SECONDS};
pub use faults::{FaultConfig, FaultyConfig, DEFAULT_SIGMA, DEFAULT_VALUE};
pub use job::{
    DataConfig, DataKind, DataOrder, FeatureConfig, FeatureKind, FlConfig, GdConfig, GraphConfig, GraphKind, Init,
    JobConfig, LabelColumn, LabelValues, Labels, LocalConfig, Loss, MatrixConfig, MatrixDist, MatvecConfig, Missing,
    ModelConfig, OptimizerKind, PagerankConfig, PythonConfig, Schedule, VectorConfig, MAX_GRAPH_VERTICES,
    MAX_MATRIX_SIDE,
};
pub use links::{DelayConfig, FailConfig, LatencyConfig, LinksConfig};
pub use run::RunConfig;
pub use scheme::{
    AgcConfig, CegcConfig, CgcConfig, ClusterConfig, CodeChoice, CodedfedlConfig, ColumnOrder, FederatedConfig,
    Generator, HierConfig, LinearChoice, MatvecCode, MatvecSchemeConfig, Multicast, RingAlgorithm, SchemeConfig,
    ShuffleConfig, ShuffleSchedule, Ssi, StarConfig, StaticClusterConfig, TreeConfig,
};
pub use stragglers::{BernoulliMode, MarkovConfig, PerWorker, RatesConfig, StragglerConfig, TraceConfig, TraceTimes};

use tagged::{de, Tagged};

/// A configuration error: the field it concerns (dotted path) and what is wrong.
#[derive(Clone, Debug, PartialEq, thiserror::Error)]
#[error("{}", self.render())]
pub struct ConfigError {
    /// Dotted path of the field (`scheme.s`), or empty for errors about the whole file.
    pub field: String,
    /// What is wrong, in one line.
    pub message: String,
}

impl ConfigError {
    /// An error about `field`.
    pub fn new(field: impl Into<String>, message: impl Into<String>) -> Self {
        ConfigError { field: field.into(), message: message.into() }
    }

    fn render(&self) -> String {
        if self.field.is_empty() {
            self.message.clone()
        } else if self.message.starts_with("= ") {
            format!("{} {}", self.field, self.message)
        } else {
            format!("{}: {}", self.field, self.message)
        }
    }
}

pub(crate) fn err<T>(field: &str, message: impl Into<String>) -> Result<T, ConfigError> {
    Err(ConfigError::new(field, message))
}

/// A list of worker ids (`field`): each in 1..=`n`, none twice.
pub(crate) fn check_worker_ids(field: &str, ids: &[usize], n: usize) -> Result<(), ConfigError> {
    if let Some(&w) = ids.iter().find(|&&w| w == 0 || w > n) {
        return err(field, format!("contains {w}, but workers are numbered 1..={n}"));
    }
    if let Some((i, &w)) = ids.iter().enumerate().find(|&(i, w)| ids[..i].contains(w)) {
        return err(
            field,
            format!(
                "contains worker {w} twice (at positions {} and {})",
                ids[..i].iter().position(|x| *x == w).unwrap_or(0) + 1,
                i + 1
            ),
        );
    }
    Ok(())
}

/// The whole experiment.
#[derive(Clone, Debug, PartialEq)]
pub struct Config {
    /// `[run]`
    pub run: RunConfig,
    /// `[job]` and the job's sections.
    pub job: JobConfig,
    /// `[scheme]`
    pub scheme: SchemeConfig,
    /// `[stragglers]`
    pub stragglers: StragglerConfig,
    /// `[faults]`
    pub faults: FaultConfig,
    /// `[links]`
    pub links: LinksConfig,
    /// `[timing]`
    pub timing: TimingConfig,
    /// `[engine]`
    pub engine: EngineConfig,
    /// `[network]`
    pub network: NetworkConfig,
}

/// The top-level sections a config may have.
const SECTIONS: &[&str] = &[
    "run",
    "job",
    "data",
    "model",
    "features",
    "matrix",
    "vector",
    "graph",
    "scheme",
    "stragglers",
    "faults",
    "links",
    "timing",
    "engine",
    "network",
];

/// Parse a TOML document, apply `key=value` overrides, deserialize and validate.
pub fn parse(text: &str, overrides: &[String]) -> Result<Config, ConfigError> {
    finish(table(text)?, overrides)
}

/// Parse the text of a config file in directory `dir`: the paths it names (data, held-out data,
/// matrix, vector, graph, straggler parameters, a Python module) are relative to `dir`, those
/// given in `overrides` (the command line) to the current directory, and all become absolute —
/// so the run directory's `config.toml` runs again from anywhere, and a module that changes the
/// current directory does not move the files a rank reads after it.
pub fn parse_in(text: &str, dir: &std::path::Path, overrides: &[String]) -> Result<Config, ConfigError> {
    let mut t = table(text)?;
    // the directory as the file system names it (no `..`), so the recorded paths read plainly
    let dir = std::fs::canonicalize(dir).or_else(|_| std::path::absolute(dir)).unwrap_or_else(|_| dir.to_path_buf());
    // a file that exists is named as the file system names it (no `.` or `..`, links followed):
    // one file, one name — the problem a run's summary and checkpoint name, which `outrun
    // report` compares runs by and `--resume` matches, is the same whichever way it was reached
    let rebase = |t: &mut toml::Table, base: &std::path::Path| {
        for (section, key) in PATH_KEYS {
            let value = t.get_mut(*section).and_then(|s| s.as_table_mut()).and_then(|s| s.get_mut(*key));
            if let Some(toml::Value::String(p)) = value.filter(|v| v.as_str().is_some_and(|p| !p.is_empty())) {
                let joined = base.join(&*p);
                *p = std::fs::canonicalize(&joined).unwrap_or(joined).display().to_string();
            }
        }
    };
    rebase(&mut t, &dir);
    for o in overrides {
        apply_override(&mut t, o)?;
    }
    // joining an absolute path leaves it as it is: only the overrides' relative paths move
    if let Ok(cwd) = std::env::current_dir() {
        rebase(&mut t, &cwd);
    }
    finish(t, &[])
}

/// The keys whose values are paths of files (`parse_in` reads them relative to the config).
const PATH_KEYS: &[(&str, &str)] = &[
    ("data", "path"),
    ("data", "test_path"),
    ("data", "labels_path"),
    ("data", "test_labels_path"),
    ("model", "init_path"),
    ("job", "module"),
    ("matrix", "path"),
    ("vector", "path"),
    ("graph", "path"),
    ("stragglers", "file"),
    ("links", "file"),
];

fn table(text: &str) -> Result<toml::Table, ConfigError> {
    toml::from_str(text).map_err(|e| {
        let line = e.span().map(|s| text[..s.start].matches('\n').count() + 1);
        let msg = e.message().replace('\n', "; ");
        match line {
            Some(l) => ConfigError::new("", format!("TOML syntax error at line {l}: {msg}")),
            None => ConfigError::new("", format!("TOML syntax error: {msg}")),
        }
    })
}

fn finish(mut table: toml::Table, overrides: &[String]) -> Result<Config, ConfigError> {
    for o in overrides {
        apply_override(&mut table, o)?;
    }
    let cfg = Config::from_table(table)?;
    cfg.validate()?;
    Ok(cfg)
}

/// Apply one `section.key=value` override; the value is read as a TOML value when it parses
/// as one (number, boolean, array, quoted string) and as a bare string otherwise. An empty
/// value (`section.key=`) removes the key.
pub fn apply_override(table: &mut toml::Table, spec: &str) -> Result<(), ConfigError> {
    let Some((key, raw)) = spec.split_once('=') else {
        return err("--set", format!("`{spec}` is not of the form section.key=value"));
    };
    let key = key.trim();
    let path: Vec<&str> = key.split('.').collect();
    if path.len() < 2 || path.iter().any(|p| p.is_empty()) {
        return err("--set", format!("`{key}` is not of the form section.key"));
    }
    let last = path[path.len() - 1];
    if raw.trim().is_empty() {
        let mut cur = &mut *table;
        for sect in &path[..path.len() - 1] {
            match cur.get_mut(*sect) {
                Some(toml::Value::Table(t)) => cur = t,
                _ => return Ok(()),
            }
        }
        cur.remove(last);
        return Ok(());
    }
    let value = match toml::from_str::<toml::Table>(&format!("v = {}", raw.trim())) {
        Ok(mut t) => t.remove("v").expect("parsed key"),
        Err(_) => toml::Value::String(raw.trim().to_string()),
    };
    let mut cur = table;
    for sect in &path[..path.len() - 1] {
        let entry = cur.entry(sect.to_string()).or_insert_with(|| toml::Value::Table(Default::default()));
        cur = match entry {
            toml::Value::Table(t) => t,
            _ => return err(key, "cannot set a key inside a value that is not a table"),
        };
    }
    cur.insert(last.to_string(), value);
    Ok(())
}

/// A section as a table (absent → empty), or an error if it is not a table.
fn section(t: &toml::Table, name: &str) -> Result<Option<toml::Table>, ConfigError> {
    match t.get(name) {
        None => Ok(None),
        Some(toml::Value::Table(s)) => Ok(Some(s.clone())),
        Some(_) => err(name, "must be a section ([name]) of keys"),
    }
}

fn optional<T: serde::de::DeserializeOwned + Default>(t: &toml::Table, name: &str) -> Result<T, ConfigError> {
    match section(t, name)? {
        None => Ok(T::default()),
        Some(s) => de(toml::Value::Table(s), name),
    }
}

impl Config {
    fn from_table(t: toml::Table) -> Result<Config, ConfigError> {
        if let Some(k) = t.keys().find(|k| !SECTIONS.contains(&k.as_str())) {
            return err(k, format!("unknown section; the sections are {}", SECTIONS.join(", ")));
        }
        let run = match section(&t, "run")? {
            None => return err("run", "missing: every config needs a [run] section (name, iterations)"),
            Some(s) => de(toml::Value::Table(s), "run")?,
        };
        let job = JobConfig::from_sections(&t)?;
        let scheme = match section(&t, "scheme")? {
            None => return err("scheme", "missing: every config needs a [scheme] section (kind, workers, ...)"),
            Some(s) => SchemeConfig::from_section(s)?,
        };
        let stragglers = match section(&t, "stragglers")? {
            None => StragglerConfig::default(),
            Some(s) => StragglerConfig::from_section(s)?,
        };
        let faults = match section(&t, "faults")? {
            None => FaultConfig::default(),
            Some(s) => FaultConfig::from_section(s)?,
        };
        let links = match section(&t, "links")? {
            None => LinksConfig::default(),
            Some(s) => LinksConfig::from_section(s)?,
        };
        Ok(Config {
            run,
            job,
            scheme,
            stragglers,
            faults,
            links,
            timing: optional(&t, "timing")?,
            engine: optional(&t, "engine")?,
            network: optional(&t, "network")?,
        })
    }

    /// The resolved configuration as TOML (written to every run directory; parses back to the
    /// same config).
    pub fn to_toml(&self) -> String {
        fn value<T: Serialize>(v: &T) -> toml::Value {
            toml::Value::try_from(v).expect("config serializes")
        }
        let mut t = toml::Table::new();
        t.insert("run".into(), value(&self.run));
        self.job.to_sections(&mut t);
        t.insert("scheme".into(), value(&self.scheme));
        t.insert("stragglers".into(), value(&self.stragglers));
        if self.faults != FaultConfig::None {
            t.insert("faults".into(), value(&self.faults));
        }
        if self.links != LinksConfig::None {
            t.insert("links".into(), value(&self.links));
        }
        t.insert("timing".into(), value(&self.timing));
        t.insert("engine".into(), value(&self.engine));
        t.insert("network".into(), value(&self.network));
        toml::to_string(&t).expect("config serializes")
    }

    /// Number of workers N.
    pub fn workers(&self) -> usize {
        self.scheme.workers()
    }

    /// Number of MPI ranks a run needs: the workers, plus a master unless the workers form a
    /// ring, plus the helpers of a hierarchical scheme.
    pub fn ranks(&self) -> usize {
        self.workers() + usize::from(!self.scheme.masterless()) + self.scheme.hier().map_or(0, |h| h.helpers)
    }

    /// A hierarchical scheme's links and upload mode; `links.per_client` only with one.
    fn validate_hier(&self) -> Result<(), ConfigError> {
        let per_client = match &self.links {
            LinksConfig::Fail(f) => f.per_client,
            _ => None,
        };
        let Some(h) = self.scheme.hier() else {
            return match per_client {
                Some(_) => err("links.per_client", format!("is for hierarchical schemes (arc, amc, hier-uncoded), where a client has a link to each helper; scheme.kind = \"{}\" has one link per worker", self.scheme.kind())),
                None => Ok(()),
            };
        };
        if let Some(q) = per_client.filter(|&q| q > h.helpers) {
            return err("links.per_client", format!("= {q}: a client has only scheme.helpers = {} links", h.helpers));
        }
        if let LinksConfig::Delay(_) = self.links {
            return err("links.model", format!("= \"delay\" is not modelled for scheme.kind = \"{}\" (its client→helper links fail or deliver); use \"fail\" or an emulated cluster's shaped links", self.scheme.kind()));
        }
        if self.engine.upload == Upload::Granted {
            return err(
                "engine.upload",
                format!(
                    "= \"granted\" is for collect trees; scheme.kind = \"{}\" uploads what its master instructs",
                    self.scheme.kind()
                ),
            );
        }
        Ok(())
    }

    /// A training job's sections (gradient descent, federated learning; panics for another
    /// job: callers branch on [`Config::job`] first).
    pub fn gd(&self) -> &GdConfig {
        self.job.train().expect("a training job (gradient descent or federated learning)")
    }

    /// The mat-vec job's sections, if the job is a mat-vec.
    pub fn matvec(&self) -> Option<&MatvecConfig> {
        match &self.job {
            JobConfig::Matvec(m) => Some(m),
            JobConfig::Gd(_) | JobConfig::Fl(_) | JobConfig::Pagerank(_) => None,
        }
    }

    /// The PageRank job's sections, if the job is PageRank.
    pub fn pagerank(&self) -> Option<&PagerankConfig> {
        match &self.job {
            JobConfig::Pagerank(p) => Some(p),
            _ => None,
        }
    }

    /// Clients a federated job samples per round (None: every client, or not federated).
    pub fn per_round(&self) -> Option<usize> {
        match &self.job {
            JobConfig::Fl(f) => f.local.clients_per_round,
            _ => None,
        }
    }

    /// `[data]` of a gradient-descent job.
    pub fn data(&self) -> &DataConfig {
        &self.gd().data
    }

    /// `[model]` of a gradient-descent job.
    pub fn model(&self) -> &ModelConfig {
        &self.gd().model
    }

    /// Cross-field checks, after each section's own. Data-dependent checks (a file's sample
    /// count) happen when the data is read.
    pub fn validate(&self) -> Result<(), ConfigError> {
        self.run.validate()?;
        if self.run.checkpoint_every.is_some() && self.job.train().is_none() {
            return err("run.checkpoint_every", "checkpoints are for gradient-descent jobs (job.kind = \"gd\")");
        }
        self.scheme.validate()?;
        self.job.validate(self.workers())?;
        match (self.matvec().is_some(), self.scheme.matvec().is_some()) {
            (true, false) => {
                return err("scheme.kind", format!("= \"{}\" aggregates gradients; a mat-vec job (job.kind = \"matvec\") runs hcmm, uniform-uncoded, lb-uncoded or uniform-coded", self.scheme.kind()))
            }
            (false, true) => return err("scheme.kind", format!("= \"{}\" is a mat-vec scheme: set job.kind = \"matvec\" with a [matrix] section", self.scheme.kind())),
            _ => {}
        }
        if let Some(w) = self.scheme.wait_s().filter(|&w| w >= self.run.deadline) {
            return err(
                "scheme.wait_s",
                format!(
                    "= {w}: must be less than run.deadline = {} (the run fails an iteration that takes that long)",
                    self.run.deadline
                ),
            );
        }
        let fl = matches!(&self.job, JobConfig::Fl(_));
        if let (Some(c), Some(f)) = (self.per_round(), self.scheme.federated()) {
            if f.need(None) > c && f.wait.is_some() {
                return err(
                    "scheme.wait",
                    format!("= {}: a round samples only job.clients_per_round = {c} clients", f.need(None)),
                );
            }
        }
        match (fl, self.scheme.federated().is_some()) {
            (true, false) => return err("scheme.kind", format!("= \"{}\" is not a federated scheme: job.kind = \"fl\" runs fedavg, oracle, diversefl, median, krum, multi-krum, bulyan, resampling or fltrust", self.scheme.kind())),
            (false, true) if self.matvec().is_none() && self.pagerank().is_none() => return err("scheme.kind", format!("= \"{}\" is a federated scheme: set job.kind = \"fl\" (clients upload local updates, not gradients)", self.scheme.kind())),
            _ => {}
        }
        if matches!(&self.job, JobConfig::Gd(g) if g.python.is_some()) && self.scheme.kind() == "codedfedl" {
            return err(
                "scheme.kind",
                "= \"codedfedl\" uploads parity rows that only a built-in linear model can train on; job.kind = \"python\" runs the other gradient schemes",
            );
        }
        match (self.pagerank().is_some(), self.scheme.pagerank().is_some()) {
            (true, false) => return err("scheme.kind", format!("= \"{}\" is not a PageRank scheme: a PageRank job (job.kind = \"pagerank\") runs coded-pagerank or uncoded-pagerank", self.scheme.kind())),
            (false, true) => return err("scheme.kind", format!("= \"{}\" is a PageRank scheme: set job.kind = \"pagerank\" with a [graph] section", self.scheme.kind())),
            (true, true) if self.timing.compute == ComputeMode::Modelled => {
                return err(
                    "timing.compute",
                    "= \"modelled\": PageRank's Map, encoding and decoding are always timed as they run (there is no model of them); remove it",
                )
            }
            (true, true) if !matches!(self.stragglers.name(), "none" | "fixed" | "bernoulli" | "trace") => {
                return err(
                    "stragglers.model",
                    format!("= \"{}\": PageRank's servers are slowed by \"fixed\", \"bernoulli\" or \"trace\" (a server's Map made longer: the Shuffle, which needs every server, waits for it); a fail-stop server would hold every other until run.deadline, and the laws of modelled compute times have no model of the Map", self.stragglers.name()),
                )
            }
            _ => {}
        }
        if self.stragglers.needs_modelled_timing() && self.timing.compute != ComputeMode::Modelled {
            return err(
                "timing.compute",
                format!("must be \"modelled\" with stragglers.model = \"{}\" (the model replaces the measured compute time)", self.stragglers.name()),
            );
        }
        self.stragglers.validate(self.workers(), self.run.iterations)?;
        self.validate_faults()?;
        self.links.validate(self.workers())?;
        if let LinksConfig::Latency(_) = self.links {
            if self.pagerank().is_some() {
                return err(
                    "links.model",
                    format!("= \"latency\" holds the messages of outrun's node protocol; scheme.kind = \"{}\" shuffles its data with MPI collectives and sends of its own, which are not held", self.scheme.kind()),
                );
            }
            if self.scheme.kind() == "allreduce" {
                return err(
                    "links.model",
                    "= \"latency\" holds outrun's own messages; scheme.kind = \"allreduce\" is the MPI library's collective, which sends its own: use \"rar\" (outrun's ring) to pay a latency per step",
                );
            }
        } else if self.links != LinksConfig::None && (self.scheme.is_ring() || self.pagerank().is_some()) {
            return err(
                "links.model",
                format!("= \"{}\": link faults act on the links between a worker and its parent in a collect tree; scheme.kind = \"{}\" has none", self.links.name(), self.scheme.kind()),
            );
        }
        self.validate_hier()?;
        self.timing.validate()?;
        self.engine.validate()?;
        if self.scheme.byzantine() > 0 && self.engine.upload == Upload::Granted {
            return err(
                "engine.upload",
                "= \"granted\" cannot run with scheme.byzantine: a parent that finds corrupted results waits for more, which refused children no longer send; use \"eager\"",
            );
        }
        self.network.validate(self.ranks())?;
        if self.stragglers.name() == "fail-stop" && self.scheme.is_ring() {
            return err(
                "stragglers.model",
                format!(
                    "= \"fail-stop\" cannot run with scheme.kind = \"{}\": a ring needs every worker in every iteration (it tolerates no failures) and would stall; use a master-worker scheme",
                    self.scheme.kind()
                ),
            );
        }
        Ok(())
    }

    /// `[faults]` on its own, and with the job it corrupts.
    fn validate_faults(&self) -> Result<(), ConfigError> {
        self.faults.validate(self.workers())?;
        if self.faults == FaultConfig::None {
            return Ok(());
        }
        if self.pagerank().is_some() {
            return err("faults.kind", "PageRank's shuffle has no master to receive a faulty result: value faults are for gradient-descent and mat-vec jobs");
        }
        if let FaultConfig::LabelFlip(_) = self.faults {
            let classes = self.job.train().is_some_and(|g| g.model.labels() != Labels::Real);
            if !classes {
                return err("faults.kind", "= \"label-flip\" needs class labels: a gradient-descent job with model.loss = \"logistic\" or \"softmax\" (or model.outputs = C)");
            }
        }
        Ok(())
    }

    /// Seconds a whole MPI job of this config may take before the launchers stop it: every
    /// iteration ends within `run.deadline` (the master fails the run otherwise), plus 120 s for
    /// start-up (data loading, clock sync) and shutdown, capped at 10⁹ s.
    pub fn job_bound_s(&self) -> u64 {
        (120.0 + self.run.iterations as f64 * self.run.deadline).min(1e9).ceil() as u64
    }

    /// Checks for a run through the MPI engine (not the simulator): simulator-only switches.
    pub fn validate_for_engine(&self) -> Result<(), ConfigError> {
        if let SchemeConfig::GcDc(c) = &self.scheme {
            if c.ssi == Ssi::Perfect {
                return err(
                    "scheme.ssi",
                    "= \"perfect\" clusters with the current iteration's straggler states, which a real master cannot know: it is a simulator-only switch (outrun simulate); use \"previous\" or \"observed\"",
                );
            }
        }
        Ok(())
    }
}

#[cfg(test)]
mod tests;
