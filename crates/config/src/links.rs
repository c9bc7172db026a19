//! `[links]`: faults of the links between a worker and its parent, tagged by `model` — links
//! that fail (the message is never delivered) and slow links (each transmission takes τ and is
//! repeated a geometric number of times: the thesis's MEC model, ch. 5 §5.2.2) — or a latency
//! every message between any two ranks pays. The runtime model is `crate::links::Links`.

use serde::{Deserialize, Serialize};

use super::stragglers::PerWorker;
use super::tagged::{de, Tagged};
use super::{err, ConfigError};

/// Failing links: which workers' uplinks fail, from when, how often.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct FailConfig {
    /// Worker ids whose link to their parent may fail (empty: every worker's).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub workers: Vec<usize>,
    /// Probability that such a link fails in an iteration (a fresh draw per link and iteration).
    #[serde(default = "one")]
    pub p: f64,
    /// First iteration (0-based) at which links fail.
    #[serde(default)]
    pub from: u64,
    /// Hierarchical schemes: each client loses exactly this many of its links to the helpers
    /// (drawn uniformly per client and iteration, in an iteration where it fails: with `p`);
    /// absent: each client→helper link fails on its own with `p`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub per_client: Option<usize>,
}

/// Slow links: per worker, the time of one transmission up and down, repeated until one
/// succeeds (each fails with probability `p`).
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct DelayConfig {
    /// Seconds of one transmission from the worker to its parent (one value or one per worker).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub tau_up: Option<PerWorker>,
    /// Seconds of one transmission from the parent to the worker.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub tau_down: Option<PerWorker>,
    /// Probability that a transmission fails and is repeated (transmissions ~ Geometric(1 − p)).
    #[serde(default)]
    pub p: f64,
    /// A CSV file with one `worker,tau_up,tau_down` line per worker (instead of the lists; the
    /// loader reads it into them).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub file: Option<String>,
}

/// A per-message latency: every message from one rank to another waits this long before it
/// leaves (a network's latency, which this kernel's `tc` cannot add without netem).
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct LatencyConfig {
    /// Seconds per message (required; an option so that its absence is named as the key's).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub latency: Option<f64>,
}

impl LatencyConfig {
    /// Seconds per message (0 before validation, when absent).
    pub fn seconds(&self) -> f64 {
        self.latency.unwrap_or(0.0)
    }
}

fn one() -> f64 {
    1.0
}

/// `[links]`, tagged by `model`.
#[derive(Clone, Debug, Default, PartialEq, Serialize)]
#[serde(tag = "model", rename_all = "kebab-case")]
pub enum LinksConfig {
    /// Every link delivers at once (the default).
    #[default]
    None,
    /// Links that fail: the worker's messages to its parent in that iteration are lost.
    Fail(FailConfig),
    /// Slow links: every message waits τ × a geometric number of transmissions.
    Delay(DelayConfig),
    /// Every message of the node protocol between two ranks (rings, trees, hierarchical schemes)
    /// waits a fixed latency.
    Latency(LatencyConfig),
}

impl Tagged for LinksConfig {
    const SECTION: &'static str = "links";
    const TAG: &'static str = "model";
    const VARIANTS: &'static [(&'static str, &'static [&'static str])] = &[
        ("none", &["workers", "p", "from", "per_client", "tau_up", "tau_down", "file", "latency"]),
        ("fail", &["workers", "p", "from", "per_client"]),
        ("delay", &["tau_up", "tau_down", "p", "file"]),
        ("latency", &["latency"]),
    ];

    fn variant(kind: &str, rest: toml::Value) -> Result<Self, ConfigError> {
        Ok(match kind {
            "none" => LinksConfig::None,
            "fail" => LinksConfig::Fail(de(rest, "links")?),
            "delay" => LinksConfig::Delay(de(rest, "links")?),
            "latency" => LinksConfig::Latency(de(rest, "links")?),
            other => unreachable!("{other} is not a variant"),
        })
    }
}

/// Longest transmission time accepted, seconds.
const MAX_TAU: f64 = 3600.0;

impl LinksConfig {
    pub(super) fn from_section(s: toml::Table) -> Result<Self, ConfigError> {
        <Self as Tagged>::from_section(s)
    }

    /// The `model` tag.
    pub fn name(&self) -> &'static str {
        match self {
            LinksConfig::None => "none",
            LinksConfig::Fail(_) => "fail",
            LinksConfig::Delay(_) => "delay",
            LinksConfig::Latency(_) => "latency",
        }
    }

    /// The per-worker file of slow links, if one is named (read by the loader).
    pub fn params_file(&self) -> Option<&str> {
        match self {
            LinksConfig::Delay(d) => d.file.as_deref(),
            _ => None,
        }
    }

    /// Replace the file by its `worker,tau_up,tau_down` lines (`#` comments and a header line
    /// allowed); `origin` names the file in errors.
    pub fn resolve_file(&mut self, text: &str, origin: &str, workers: usize) -> Result<(), ConfigError> {
        let LinksConfig::Delay(d) = self else { return Ok(()) };
        let rows = super::stragglers::per_worker_rows(text, origin, workers, "links.file", &["tau_up", "tau_down"])?;
        let one = d.clone();
        super::stragglers::check_rows(&rows, origin, "links.file", |v| {
            let row = DelayConfig {
                file: None,
                tau_up: Some(PerWorker::One(v[0])),
                tau_down: Some(PerWorker::One(v[1])),
                ..one.clone()
            };
            LinksConfig::Delay(row).validate(workers)
        })?;
        d.tau_up = Some(PerWorker::Each(rows.iter().map(|r| r.values[0]).collect()));
        d.tau_down = Some(PerWorker::Each(rows.iter().map(|r| r.values[1]).collect()));
        d.file = None;
        Ok(())
    }

    /// The section's own checks, for `n` workers.
    pub(super) fn validate(&self, n: usize) -> Result<(), ConfigError> {
        match self {
            LinksConfig::None => Ok(()),
            LinksConfig::Latency(l) => match l.latency {
                None => err("links.latency", "missing: model \"latency\" needs latency (seconds per message)"),
                Some(x) if !(x.is_finite() && x > 0.0 && x <= MAX_TAU) => {
                    err("links.latency", format!("= {x}: a latency in (0, {MAX_TAU}] seconds per message"))
                }
                Some(_) => Ok(()),
            },
            LinksConfig::Fail(f) => {
                super::check_worker_ids("links.workers", &f.workers, n)?;
                if !(0.0..=1.0).contains(&f.p) {
                    return err("links.p", format!("= {}: must be in [0, 1]", f.p));
                }
                Ok(())
            }
            LinksConfig::Delay(d) => {
                if d.file.is_some() {
                    if d.tau_up.is_some() || d.tau_down.is_some() {
                        return err(
                            "links.file",
                            "give the times either in a file or as tau_up and tau_down, not both",
                        );
                    }
                    return Ok(()); // the loader reads it, then validates again
                }
                if d.tau_up.is_none() && d.tau_down.is_none() {
                    return err(
                        "links.tau_up",
                        "missing: model \"delay\" needs tau_up and/or tau_down (seconds per transmission)",
                    );
                }
                let ok = |v: f64| v.is_finite() && (0.0..=MAX_TAU).contains(&v);
                let what = &format!("a time in [0, {MAX_TAU}] seconds");
                if let Some(t) = &d.tau_up {
                    t.check("links.tau_up", n, ok, what)?;
                }
                if let Some(t) = &d.tau_down {
                    t.check("links.tau_down", n, ok, what)?;
                }
                if !(0.0..0.99).contains(&d.p) {
                    return err(
                        "links.p",
                        format!(
                            "= {}: must be in [0, 0.99) (each transmission fails with p; 1 would never deliver)",
                            d.p
                        ),
                    );
                }
                Ok(())
            }
        }
    }
}
