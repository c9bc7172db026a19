//! `[scheme]`: who holds what, what a parent waits for and how it decodes. Tagged by `kind`;
//! the plan builders are in `crate::schemes`.

use serde::{Deserialize, Serialize};

use super::tagged::{de, Tagged};
use super::{err, ConfigError};

/// Gradient code used inside each sibling group of a CodedReduce tree.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize, Default)]
#[serde(rename_all = "kebab-case")]
pub enum CodeChoice {
    /// Tandon et al.'s cyclic repetition, random construction, best of `draws`.
    #[default]
    Cyclic,
    /// Fractional repetition ((s+1) | n).
    Frac,
}

/// Parameters of the master–worker and ring schemes (N workers).
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct StarConfig {
    /// Number of workers N.
    pub workers: usize,
    /// Stragglers tolerated (0 for the schemes that wait for everybody).
    #[serde(default)]
    pub s: usize,
    /// Random draws of a cyclic code; the best-conditioned one is used (gc-cyclic).
    #[serde(default = "default_draws")]
    pub draws: usize,
}

/// Parameters of CodedReduce on an (n, L)-regular tree.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct TreeConfig {
    /// Children per parent.
    pub n: usize,
    /// Layers of workers below the master.
    pub layers: usize,
    /// Stragglers tolerated per parent.
    #[serde(default)]
    pub s: usize,
    /// Code of each sibling group.
    #[serde(default)]
    pub code: CodeChoice,
    /// Random draws of a cyclic code.
    #[serde(default = "default_draws")]
    pub draws: usize,
    /// Number of workers; follows from n and layers (given only as a check).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub workers: Option<usize>,
}

fn default_draws() -> usize {
    10
}

/// `[scheme]`, by `kind`.
#[derive(Clone, Debug, PartialEq, Serialize)]
#[serde(tag = "kind", rename_all = "kebab-case")]
pub enum SchemeConfig {
    /// Uncoded master–worker: the master waits for all N workers.
    Umw(StarConfig),
    /// Ignore stragglers (backup workers): the master uses the first N − s results, rescaled.
    Ignore(StarConfig),
    /// Gradient coding, Tandon et al.'s cyclic repetition code.
    GcCyclic(StarConfig),
    /// Gradient coding, fractional repetition ((s+1) | N).
    GcFrac(StarConfig),
    /// Our ring all-reduce among the workers (reduce-scatter + all-gather).
    Rar(StarConfig),
    /// The same training with `MPI_Allreduce`, as the reference.
    Allreduce(StarConfig),
    /// CodedReduce on an (n, L)-regular tree.
    Cr(TreeConfig),
}

const STAR_KEYS: &[&str] = &["workers", "s", "draws"];
const TREE_KEYS: &[&str] = &["n", "layers", "s", "code", "draws", "workers"];

impl Tagged for SchemeConfig {
    const SECTION: &'static str = "scheme";
    const TAG: &'static str = "kind";
    const VARIANTS: &'static [(&'static str, &'static [&'static str])] = &[
        ("umw", STAR_KEYS),
        ("ignore", STAR_KEYS),
        ("gc-cyclic", STAR_KEYS),
        ("gc-frac", STAR_KEYS),
        ("rar", STAR_KEYS),
        ("allreduce", STAR_KEYS),
        ("cr", TREE_KEYS),
    ];

    fn variant(kind: &str, rest: toml::Value) -> Result<Self, ConfigError> {
        if kind != "cr" && rest.get("workers").is_none() {
            return err("scheme.workers", "missing: the number of workers N");
        }
        let star = || de::<StarConfig>(rest.clone(), "scheme");
        Ok(match kind {
            "umw" => SchemeConfig::Umw(star()?),
            "ignore" => SchemeConfig::Ignore(star()?),
            "gc-cyclic" => SchemeConfig::GcCyclic(star()?),
            "gc-frac" => SchemeConfig::GcFrac(star()?),
            "rar" => SchemeConfig::Rar(star()?),
            "allreduce" => SchemeConfig::Allreduce(star()?),
            "cr" => {
                for key in ["n", "layers"] {
                    if rest.get(key).is_none() {
                        let what = if key == "n" { "the number of children per parent n" } else { "the number of layers L" };
                        return err(&format!("scheme.{key}"), format!("missing: cr needs {what}"));
                    }
                }
                SchemeConfig::Cr(de(rest, "scheme")?)
            }
            _ => unreachable!("kinds are checked against VARIANTS"),
        })
    }
}

impl SchemeConfig {
    pub(super) fn from_section(s: toml::Table) -> Result<Self, ConfigError> {
        <Self as Tagged>::from_section(s)
    }

    /// The config spelling of the kind.
    pub fn kind(&self) -> &'static str {
        match self {
            SchemeConfig::Umw(_) => "umw",
            SchemeConfig::Ignore(_) => "ignore",
            SchemeConfig::GcCyclic(_) => "gc-cyclic",
            SchemeConfig::GcFrac(_) => "gc-frac",
            SchemeConfig::Rar(_) => "rar",
            SchemeConfig::Allreduce(_) => "allreduce",
            SchemeConfig::Cr(_) => "cr",
        }
    }

    /// Schemes whose workers form a ring with no master.
    pub fn is_ring(&self) -> bool {
        matches!(self, SchemeConfig::Rar(_) | SchemeConfig::Allreduce(_))
    }

    /// Number of workers N.
    pub fn workers(&self) -> usize {
        match self {
            SchemeConfig::Cr(t) => (1..=t.layers.min(64) as u32).fold(0usize, |acc, l| acc.saturating_add(t.n.saturating_pow(l))),
            SchemeConfig::Umw(c)
            | SchemeConfig::Ignore(c)
            | SchemeConfig::GcCyclic(c)
            | SchemeConfig::GcFrac(c)
            | SchemeConfig::Rar(c)
            | SchemeConfig::Allreduce(c) => c.workers,
        }
    }

    /// Stragglers tolerated (per parent for trees).
    pub fn s(&self) -> usize {
        match self {
            SchemeConfig::Cr(t) => t.s,
            SchemeConfig::Umw(c)
            | SchemeConfig::Ignore(c)
            | SchemeConfig::GcCyclic(c)
            | SchemeConfig::GcFrac(c)
            | SchemeConfig::Rar(c)
            | SchemeConfig::Allreduce(c) => c.s,
        }
    }

    pub(super) fn validate(&self) -> Result<(), ConfigError> {
        let kind = self.kind();
        let c = match self {
            SchemeConfig::Cr(t) => return t.validate(),
            SchemeConfig::Umw(c)
            | SchemeConfig::Ignore(c)
            | SchemeConfig::GcCyclic(c)
            | SchemeConfig::GcFrac(c)
            | SchemeConfig::Rar(c)
            | SchemeConfig::Allreduce(c) => c,
        };
        let n = c.workers;
        if n == 0 {
            return err("scheme.workers", "must be at least 1");
        }
        if n > MAX_WORKERS {
            return err("scheme.workers", format!("= {n}: at most {MAX_WORKERS} workers"));
        }
        if self.is_ring() && n < 2 {
            return err("scheme.workers", format!("= {n}: a ring needs at least 2 workers"));
        }
        match self {
            SchemeConfig::Umw(_) | SchemeConfig::Rar(_) | SchemeConfig::Allreduce(_) if c.s != 0 => err(
                "scheme.s",
                format!("= {}: \"{kind}\" tolerates no stragglers (it waits for every worker); remove scheme.s or use ignore / gc-cyclic", c.s),
            ),
            _ if c.s >= n => err("scheme.s", format!("= {}: must be less than scheme.workers = {n}", c.s)),
            SchemeConfig::GcFrac(_) if !n.is_multiple_of(c.s + 1) => err(
                "scheme.s",
                format!("= {}: gc-frac needs s+1 = {} to divide scheme.workers = {n}; pick s+1 among the divisors of {n}, or use gc-cyclic", c.s, c.s + 1),
            ),
            SchemeConfig::GcCyclic(_) if c.draws == 0 => err("scheme.draws", "must be at least 1"),
            _ => Ok(()),
        }
    }
}

/// Most workers a scheme may have.
pub const MAX_WORKERS: usize = 100_000;

impl TreeConfig {
    fn validate(&self) -> Result<(), ConfigError> {
        let n = self.n;
        if n < 2 {
            return err("scheme.n", format!("= {n}: must be at least 2"));
        }
        if n > MAX_WORKERS {
            return err("scheme.n", format!("= {n}: at most {MAX_WORKERS}"));
        }
        match self.layers {
            0 => return err("scheme.layers", "must be at least 1"),
            l if l > 8 => return err("scheme.layers", format!("= {l}: at most 8 layers are supported")),
            _ => {}
        }
        if self.s >= n {
            return err("scheme.s", format!("= {}: must be less than scheme.n = {n} (s stragglers per parent)", self.s));
        }
        let total = SchemeConfig::Cr(self.clone()).workers();
        if total > MAX_WORKERS {
            return err("scheme.n", format!("= {n} with layers = {}: the tree would have {total} workers, at most {MAX_WORKERS}", self.layers));
        }
        if let Some(w) = self.workers {
            if w != total {
                return err(
                    "scheme.workers",
                    format!("= {w}, but an ({n},{}) tree has {total} workers; omit scheme.workers or set it to {total}", self.layers),
                );
            }
        }
        if self.code == CodeChoice::Frac && !n.is_multiple_of(self.s + 1) {
            return err("scheme.code", format!("= \"frac\" needs s+1 = {} to divide scheme.n = {n}; use code = \"cyclic\"", self.s + 1));
        }
        if self.draws == 0 {
            return err("scheme.draws", "must be at least 1");
        }
        Ok(())
    }
}
