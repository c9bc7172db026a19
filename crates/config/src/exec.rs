//! The execution knobs: `[timing]` (how compute time is obtained), `[engine]` (the MPI
//! engine's polling), `[network]` (the simulator's network model).

use serde::{Deserialize, Serialize};

use super::{err, ConfigError};

/// How compute time is obtained (`timing.compute`).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize, Default)]
#[serde(rename_all = "kebab-case")]
pub enum ComputeMode {
    /// The measured time of the real gradient computation.
    #[default]
    Real,
    /// A modelled time: the worker computes the real gradient, then sleeps until the modelled
    /// finish time (for many ranks on few cores).
    Modelled,
}

impl ComputeMode {
    /// The config spelling.
    pub fn name(self) -> &'static str {
        match self {
            ComputeMode::Real => "real",
            ComputeMode::Modelled => "modelled",
        }
    }
}

/// `engine.upload`: when a child's result crosses the link to its parent.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum Upload {
    /// A child sends its result as soon as it has it; results the parent no longer needs
    /// (late) still cross the link and are discarded on arrival.
    #[default]
    Eager,
    /// A child sends a small ready notice; the parent grants uploads to the first children its
    /// wait rule needs (one round at a time for multi-round codes) and refuses the others, so
    /// only results it uses cross the link, at the price of a notice–grant round trip.
    Granted,
}

/// `engine.idle`: how a rank waits for the network when it has nothing to do.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum Idle {
    /// `spin` where every rank on the host has a core of its own (the ranks on it are at most
    /// the cores it may run on), as MPI's own progress polls; else `sleep`.
    #[default]
    Auto,
    /// Poll without pause (a CPU spin hint between polls): the lowest latency; a core per rank.
    Spin,
    /// Poll, giving the core to any other runnable process between polls; never sleep.
    Yield,
    /// Yield for 20 µs, then sleep between polls, backing off to `engine.poll_us`: leaves the
    /// cores to ranks that compute when ranks outnumber them.
    Sleep,
}

impl Idle {
    /// Every mode, in the order the docs list them.
    pub const ALL: [Idle; 4] = [Idle::Auto, Idle::Spin, Idle::Yield, Idle::Sleep];

    /// How long a lockstep exchange (a ring's steps, PageRank's shuffle) polls with a CPU spin
    /// hint before it sleeps, in `sleep` (and `auto` where ranks outnumber cores): the neighbours
    /// are in the same step, so the next segment is usually microseconds away. But a rank can
    /// wait longer than that for the first segment of an iteration, and once ranks sleep, each
    /// hop adds a sleep to the next one's wait; with many ranks on each core a step can take a
    /// long time to come round (the window was chosen by measurement: docs/performance.md §17
    /// and §20).
    pub const LOCKSTEP_WINDOW: std::time::Duration = std::time::Duration::from_secs(1);

    /// The mode a config names (`auto`, `spin`, `yield`, `sleep`).
    pub fn from_name(name: &str) -> Option<Idle> {
        Idle::ALL.into_iter().find(|m| m.name() == name)
    }

    /// The mode a rank on a host with `local` ranks and `cores` cores uses.
    pub fn resolve(self, local: usize, cores: usize) -> Idle {
        match self {
            Idle::Auto if local <= cores => Idle::Spin,
            Idle::Auto => Idle::Sleep,
            m => m,
        }
    }

    /// Its name in a config.
    pub fn name(self) -> &'static str {
        match self {
            Idle::Auto => "auto",
            Idle::Spin => "spin",
            Idle::Yield => "yield",
            Idle::Sleep => "sleep",
        }
    }
}

/// Largest number of seconds any duration in a config may be (about 11.6 days): durations are
/// turned into timers and sleeps, which must not overflow.
pub const MAX_SECONDS: f64 = 1e6;

/// Check that `v` is a number of seconds in (0, MAX_SECONDS] (or [0, …] with `zero_ok`).
pub(crate) fn check_seconds(field: &str, v: f64, zero_ok: bool) -> Result<(), ConfigError> {
    let low_ok = if zero_ok { v >= 0.0 } else { v > 0.0 };
    if !(v.is_finite() && low_ok) {
        return err(
            field,
            format!("= {v}: must be a {} number of seconds", if zero_ok { "non-negative" } else { "positive" }),
        );
    }
    if v > MAX_SECONDS {
        return err(field, format!("= {v}: at most {MAX_SECONDS:e} seconds"));
    }
    Ok(())
}

/// `[timing]`
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct TimingConfig {
    /// Real or modelled compute time.
    #[serde(default)]
    pub compute: ComputeMode,
    /// Modelled mode, models without their own time law: seconds of compute per data point.
    #[serde(default = "default_timing_a")]
    pub a: f64,
    /// Modelled mode: seconds per point of a master that computes (a federated server's guiding
    /// updates, which the thesis runs on a faster machine than its clients); default `a`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub master_a: Option<f64>,
}

fn default_timing_a() -> f64 {
    1e-5
}

impl Default for TimingConfig {
    fn default() -> Self {
        TimingConfig { compute: ComputeMode::Real, a: default_timing_a(), master_a: None }
    }
}

impl TimingConfig {
    pub(super) fn validate(&self) -> Result<(), ConfigError> {
        if !(self.a.is_finite() && self.a >= 0.0) {
            return err("timing.a", format!("= {}: must be ≥ 0 seconds per point", self.a));
        }
        if self.a > 1.0 {
            return err("timing.a", format!("= {}: at most 1 second per point", self.a));
        }
        match self.master_a {
            Some(m) if !(m.is_finite() && (0.0..=1.0).contains(&m)) => {
                err("timing.master_a", format!("= {m}: must be between 0 and 1 second per point"))
            }
            Some(_) if self.compute != ComputeMode::Modelled => {
                err("timing.master_a", "is a modelled time: set timing.compute = \"modelled\"")
            }
            _ => Ok(()),
        }
    }
}

/// `[engine]`: knobs of the MPI engine.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct EngineConfig {
    /// Longest sleep (µs) between polls of the network while waiting; the poll backs off from 0
    /// to this. Smaller is more precise and burns more CPU.
    #[serde(default = "default_poll_us")]
    pub poll_us: u64,
    /// How results go up a collect tree: every child sends its result when it has it
    /// (`eager`), or announces it and sends it only when its parent grants the upload
    /// (`granted`). Both drivers (the engine and the simulator) run the same protocol.
    #[serde(default)]
    pub upload: Upload,
    /// How a waiting rank polls: `auto` (default), `spin`, `yield` or `sleep` ([`Idle`]).
    #[serde(default)]
    pub idle: Idle,
}

fn default_poll_us() -> u64 {
    200
}

impl Default for EngineConfig {
    fn default() -> Self {
        EngineConfig { poll_us: default_poll_us(), upload: Upload::Eager, idle: Idle::Auto }
    }
}

impl EngineConfig {
    pub(super) fn validate(&self) -> Result<(), ConfigError> {
        if self.poll_us > 1_000_000 {
            return err("engine.poll_us", format!("= {}: at most 1000000 (one second)", self.poll_us));
        }
        Ok(())
    }
}

/// A rate that is not one.
#[derive(Clone, Debug, PartialEq, thiserror::Error)]
#[error("{0}")]
pub struct RateError(pub String);

/// A link rate: bytes per second, or a string with a unit (`"100mbit"`, `"1gbit"`, `"500kbit"`).
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(untagged)]
pub enum Rate {
    /// Bytes per second.
    BytesPerSecond(f64),
    /// A number with a unit.
    Text(String),
}

impl Rate {
    /// Bytes per second, or a message naming the problem.
    pub fn bytes_per_second(&self) -> Result<f64, RateError> {
        let v = match self {
            Rate::BytesPerSecond(v) => *v,
            Rate::Text(t) => {
                let t = t.trim();
                let split = t.find(|c: char| c.is_ascii_alphabetic()).unwrap_or(t.len());
                let (num, unit) = t.split_at(split);
                let n: f64 = num.trim().parse().map_err(|_| RateError(format!("`{t}` is not a rate like 100mbit")))?;
                n * match unit {
                    "bit" => 1.0 / 8.0,
                    "kbit" => 1e3 / 8.0,
                    "mbit" => 1e6 / 8.0,
                    "gbit" => 1e9 / 8.0,
                    _ => return Err(RateError(format!("`{t}`: use a number of bytes per second or kbit, mbit, gbit"))),
                }
            }
        };
        if v.is_finite() && v > 0.0 {
            Ok(v)
        } else {
            Err(RateError(format!("{v}: must be a positive rate")))
        }
    }
}

/// `[network]`: the network model of the simulator (`outrun simulate`, `outrun tune`). Real runs
/// ignore it: their network is the real one (or the emulated cluster's shaped links).
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct NetworkConfig {
    /// Every node's NIC rate in each direction (bytes/s or e.g. "100mbit"); absent: infinite.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub bandwidth: Option<Rate>,
    /// Seconds added to every message.
    #[serde(default)]
    pub latency: f64,
    /// Per-rank NIC rates overriding `bandwidth` (one per rank).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub node_bandwidth: Vec<Rate>,
    /// Whether model messages down the tree cost time (the papers' model counts only uploads).
    #[serde(default = "default_true")]
    pub downlink: bool,
    /// Replaced by `engine.upload = "granted"`: `true` is refused with a line naming the
    /// replacement; `false`, the old default written in every run's `config.toml`, is accepted.
    #[serde(default, skip_serializing)]
    pub cancel_late: Option<bool>,
}

fn default_true() -> bool {
    true
}

impl Default for NetworkConfig {
    fn default() -> Self {
        NetworkConfig { bandwidth: None, latency: 0.0, node_bandwidth: vec![], downlink: true, cancel_late: None }
    }
}

impl NetworkConfig {
    pub(super) fn validate(&self, ranks: usize) -> Result<(), ConfigError> {
        // false (what every run's config.toml said before) is today's eager default: accepted
        if self.cancel_late == Some(true) {
            return err(
                "network.cancel_late",
                "was replaced by engine.upload = \"granted\" (a parent grants only the uploads it needs, in the engine and the simulator alike); remove it",
            );
        }
        if let Some(b) = &self.bandwidth {
            b.bytes_per_second().map_err(|e| ConfigError::new("network.bandwidth", e.0))?;
        }
        check_seconds("network.latency", self.latency, true)?;
        if !self.node_bandwidth.is_empty() && self.node_bandwidth.len() != ranks {
            return err(
                "network.node_bandwidth",
                format!("has {} entries but the run has {ranks} ranks", self.node_bandwidth.len()),
            );
        }
        for b in &self.node_bandwidth {
            b.bytes_per_second().map_err(|e| ConfigError::new("network.node_bandwidth", e.0))?;
        }
        Ok(())
    }
}
