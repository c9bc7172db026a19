//! `[faults]`: value faults, tagged by `kind` — workers that send wrong results (Gaussian
//! noise, the negated result, a constant) or compute on flipped labels. The runtime schedule
//! is `crate::faults::Faults`.

use serde::{Deserialize, Serialize};

use super::tagged::{de, Tagged};
use super::{err, ConfigError};

/// Noise standard deviation of `kind = "gaussian"` when not given (the thesis's σ_G).
pub const DEFAULT_SIGMA: f64 = 10.0;
/// Every entry of `kind = "same-value"` when not given (the thesis's σ_S).
pub const DEFAULT_VALUE: f64 = 10.0;

/// Which workers are faulty, from when, how often.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct FaultyConfig {
    /// Worker ids (1-based).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub workers: Vec<usize>,
    /// Or this many workers, drawn from `run.seed`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub count: Option<usize>,
    /// First iteration (0-based) at which the faulty workers misbehave.
    #[serde(default)]
    pub from: u64,
    /// Probability that a faulty worker misbehaves in a given iteration (a fresh draw each).
    #[serde(default = "one")]
    pub p: f64,
    /// `gaussian`: the noise's standard deviation.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub sigma: Option<f64>,
    /// `same-value`: every entry's value.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub value: Option<f64>,
}

fn one() -> f64 {
    1.0
}

/// `[faults]`, tagged by `kind`.
#[derive(Clone, Debug, Default, PartialEq, Serialize)]
#[serde(tag = "kind", rename_all = "kebab-case")]
pub enum FaultConfig {
    /// No value faults (the default; other keys may stay in the section).
    #[default]
    None,
    /// The result is replaced by N(0, σ²) noise.
    Gaussian(FaultyConfig),
    /// The result is negated.
    SignFlip(FaultyConfig),
    /// Every entry of the result is `value`.
    SameValue(FaultyConfig),
    /// The worker computes on labels c ↦ C − 1 − c (binary: 0 ↔ 1).
    LabelFlip(FaultyConfig),
}

const KEYS: &[&str] = &["workers", "count", "from", "p"];

impl Tagged for FaultConfig {
    const SECTION: &'static str = "faults";
    const TAG: &'static str = "kind";
    const VARIANTS: &'static [(&'static str, &'static [&'static str])] = &[
        // an off switch: the other keys may stay for later
        ("none", &["workers", "count", "from", "p", "sigma", "value"]),
        ("gaussian", &["workers", "count", "from", "p", "sigma"]),
        ("sign-flip", KEYS),
        ("same-value", &["workers", "count", "from", "p", "value"]),
        ("label-flip", KEYS),
    ];

    fn variant(kind: &str, rest: toml::Value) -> Result<Self, ConfigError> {
        Ok(match kind {
            "none" => FaultConfig::None,
            "gaussian" => FaultConfig::Gaussian(de(rest, "faults")?),
            "sign-flip" => FaultConfig::SignFlip(de(rest, "faults")?),
            "same-value" => FaultConfig::SameValue(de(rest, "faults")?),
            "label-flip" => FaultConfig::LabelFlip(de(rest, "faults")?),
            other => unreachable!("{other} is not a variant"),
        })
    }
}

impl FaultConfig {
    /// The `kind` tag.
    pub fn name(&self) -> &'static str {
        match self {
            FaultConfig::None => "none",
            FaultConfig::Gaussian(_) => "gaussian",
            FaultConfig::SignFlip(_) => "sign-flip",
            FaultConfig::SameValue(_) => "same-value",
            FaultConfig::LabelFlip(_) => "label-flip",
        }
    }

    /// Who is faulty, when (None without faults).
    pub fn faulty(&self) -> Option<&FaultyConfig> {
        match self {
            FaultConfig::None => None,
            FaultConfig::Gaussian(f)
            | FaultConfig::SignFlip(f)
            | FaultConfig::SameValue(f)
            | FaultConfig::LabelFlip(f) => Some(f),
        }
    }

    /// The section's own checks, for `n` workers.
    pub(super) fn validate(&self, n: usize) -> Result<(), ConfigError> {
        let Some(f) = self.faulty() else { return Ok(()) };
        match (f.workers.is_empty(), f.count) {
            (true, None) => {
                return err(
                    "faults.workers",
                    format!("missing: kind \"{}\" needs the faulty workers (workers = [ids in 1..={n}]) or how many to draw (count = f)", self.name()),
                )
            }
            (false, Some(_)) => return err("faults.count", "give either faults.workers or faults.count, not both"),
            _ => {}
        }
        super::check_worker_ids("faults.workers", &f.workers, n)?;
        if let Some(c) = f.count.filter(|&c| c == 0 || c > n) {
            return err("faults.count", format!("= {c}: must be in 1..={n} (the number of workers)"));
        }
        if !(0.0..=1.0).contains(&f.p) {
            return err("faults.p", format!("= {}: must be in [0, 1]", f.p));
        }
        if let Some(s) = f.sigma.filter(|s| !(s.is_finite() && *s > 0.0)) {
            return err("faults.sigma", format!("= {s}: must be a positive number"));
        }
        if let Some(v) = f.value.filter(|v| !v.is_finite()) {
            return err("faults.value", format!("= {v}: must be a finite number"));
        }
        Ok(())
    }
}
