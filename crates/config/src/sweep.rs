//! Sweeps: a base config and the axes to vary, expanded into variants (pure: the CLI runs them).
//!
//! ```toml
//! base = "../demo.toml"            # relative to the sweep file
//! name = "cr-vs-baselines"         # default: the sweep file's stem
//! repetitions = 3                  # every variant this many times, interleaved
//! launcher = ["launch/local.sh"]   # the command that runs one config (+ --set overrides)
//! set = ["run.iterations=30"]      # overrides for every variant
//!
//! [[axis]]
//! key = "scheme.kind"
//! values = ["cr", "gc-cyclic", "umw"]
//!
//! [[axis]]
//! key = "scheme.s"
//! values = [1, 2]
//!
//! [[override]]                     # where a key does not apply
//! when = { "scheme.kind" = "umw" }
//! set = ["scheme.s="]
//! ```
//!
//! Variants are the cartesian product of the axes (first axis outermost), each with the sweep's
//! `set`, its axis values and the overrides whose `when` it matches, in that order. Every
//! variant is parsed and validated; variants whose resolved configs are identical (e.g. UMW for
//! every value of `scheme.s`, once the override removed it) are run once, under the first one's
//! labels.

use serde::Deserialize;

use crate::run::name_char;
pub use crate::run::MAX_NAME;
use crate::{parse, ConfigError};

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct SweepFile {
    base: String,
    #[serde(default)]
    name: Option<String>,
    #[serde(default = "one")]
    repetitions: usize,
    #[serde(default)]
    launcher: Option<Vec<String>>,
    #[serde(default)]
    out_dir: Option<String>,
    #[serde(default)]
    set: Vec<String>,
    #[serde(default)]
    axis: Vec<AxisFile>,
    #[serde(default, rename = "override")]
    overrides: Vec<OverrideFile>,
}

fn one() -> usize {
    1
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct AxisFile {
    key: String,
    values: Vec<toml::Value>,
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct OverrideFile {
    when: toml::Table,
    set: Vec<String>,
}

/// A parsed sweep.
#[derive(Clone, Debug, PartialEq)]
pub struct Sweep {
    /// The base config's path, as written (relative to the sweep file).
    pub base: String,
    /// Name (run directories go to `<out_dir>/`).
    pub name: Option<String>,
    /// Repetitions of every variant.
    pub repetitions: usize,
    /// The command that runs one config; default `launch/local.sh`.
    pub launcher: Vec<String>,
    /// Where the sweep's runs go (default `runs/sweep-<name>`).
    pub out_dir: Option<String>,
    /// The axes: key and its values (as override values).
    pub axes: Vec<(String, Vec<String>)>,
    set: Vec<String>,
    overrides: Vec<Override>,
}

/// An override: the axis values it applies to, and its `--set`s.
type Override = (Vec<(String, String)>, Vec<String>);

/// One variant: its labels (axis key = value) and every override it runs with.
#[derive(Clone, Debug, PartialEq)]
pub struct Variant {
    /// `v<index>-<labels>`: a file-name-safe, stable identifier.
    pub id: String,
    /// Axis key and value, one per axis.
    pub labels: Vec<(String, String)>,
    /// The `--set` overrides of this variant (sweep-wide, axis values, matching overrides).
    pub sets: Vec<String>,
}

/// Most runs one sweep may ask for (combinations × repetitions): more is a typo, not a plan (at
/// a second a run, 100 000 runs take more than a day).
pub const MAX_RUNS: usize = 100_000;

/// Longest variant label in a variant's id: the id names its run directories (`<id>-rep<k>-<UTC
/// time>`, at most 255 bytes), and the index before it keeps ids distinct.
const MAX_SLUG: usize = 120;

/// Whether `name` may name a directory: letters, digits, '-', '_', '.', at most 200 bytes (as
/// `run.name`).
pub fn valid_name(name: &str) -> bool {
    !name.is_empty() && name.len() <= MAX_NAME && name.chars().all(name_char)
}

/// `text` as a directory name's characters: any other character becomes '-'.
pub fn as_name(text: &str) -> String {
    text.chars().map(|c| if name_char(c) { c } else { '-' }).collect()
}

/// A sweep's runs (the axes' values multiplied, times `repetitions`) checked against
/// [`MAX_RUNS`], in `checked_mul`: a product that overflows is refused too.
fn check_runs(axes: &[(String, Vec<String>)], repetitions: usize) -> Result<(), ConfigError> {
    if repetitions == 0 {
        return Err(sweep_err("repetitions", "must be at least 1"));
    }
    let runs = axes.iter().try_fold(repetitions, |n, (_, v)| n.checked_mul(v.len()));
    if runs.is_none_or(|n| n > MAX_RUNS) {
        let combinations: Vec<String> = axes.iter().map(|(_, v)| v.len().to_string()).collect();
        return Err(sweep_err(
            "axis",
            format!(
                "{} values × {repetitions} repetitions is {} runs: at most {MAX_RUNS} in one sweep (split it)",
                combinations.join(" × "),
                runs.map_or("more than 2^64".to_string(), |n| n.to_string())
            ),
        ));
    }
    Ok(())
}

fn sweep_err(field: &str, message: impl Into<String>) -> ConfigError {
    ConfigError::new(format!("sweep: {field}"), message)
}

/// An override value of a TOML value: strings quoted (so `"1"` stays a string), the rest as
/// TOML writes them.
fn value_text(v: &toml::Value) -> String {
    v.to_string()
}

impl Sweep {
    /// Parse a sweep file's text.
    pub fn parse(text: &str) -> Result<Sweep, ConfigError> {
        let f: SweepFile = toml::from_str(text).map_err(|e| {
            let line = e.span().map(|s| text[..s.start].matches('\n').count() + 1);
            ConfigError::new(
                "sweep",
                format!(
                    "{}{}",
                    line.map_or(String::new(), |l| format!("line {l}: ")),
                    crate::tagged::friendly(&e.message().replace('\n', "; "))
                ),
            )
        })?;
        if let Some(name) = f.name.as_deref().filter(|n| !valid_name(n)) {
            return Err(sweep_err(
                "name",
                format!("`{name}` must be non-empty and use only letters, digits, '-', '_', '.' (at most {MAX_NAME})"),
            ));
        }
        if f.out_dir.as_deref() == Some("") {
            return Err(sweep_err("out_dir", "is empty; leave it out for runs/sweep-<name>"));
        }
        let mut axes = Vec::new();
        for (i, a) in f.axis.iter().enumerate() {
            if a.values.is_empty() {
                return Err(sweep_err(&format!("axis[{i}] ({})", a.key), "has no values"));
            }
            if !a.key.contains('.') {
                return Err(sweep_err(
                    &format!("axis[{i}]"),
                    format!("key `{}` is not of the form section.key", a.key),
                ));
            }
            if axes.iter().any(|(k, _): &(String, Vec<String>)| *k == a.key) {
                return Err(sweep_err(&format!("axis[{i}]"), format!("`{}` is an axis twice", a.key)));
            }
            axes.push((a.key.clone(), a.values.iter().map(value_text).collect()));
        }
        // an override's `when` names axes and their values: anything else would never match, and
        // the override would be left out in silence
        let mut overrides = Vec::new();
        for (i, o) in f.overrides.iter().enumerate() {
            let mut when = Vec::new();
            for (k, v) in &o.when {
                let field = format!("override[{i}].when");
                let Some((_, values)) = axes.iter().find(|(ak, _)| ak == k) else {
                    let names: Vec<&str> = axes.iter().map(|(ak, _)| ak.as_str()).collect();
                    return Err(sweep_err(
                        &field,
                        format!(
                            "`{k}` is not an axis, so this override would never apply; the axes are {}",
                            if names.is_empty() { "none".to_string() } else { names.join(", ") }
                        ),
                    ));
                };
                let v = value_text(v);
                if !values.contains(&v) {
                    return Err(sweep_err(
                        &field,
                        format!(
                            "{k} = {v} is not one of the axis's values ({}), so this override would never apply",
                            values.join(", ")
                        ),
                    ));
                }
                when.push((k.clone(), v));
            }
            overrides.push((when, o.set.clone()));
        }
        check_runs(&axes, f.repetitions)?;
        let launcher = f.launcher.unwrap_or_else(|| vec!["launch/local.sh".into()]);
        if launcher.first().is_none_or(|l| l.trim().is_empty()) {
            return Err(sweep_err(
                "launcher",
                "is empty; e.g. [\"launch/local.sh\"] or [\"launch/emu-cluster\", \"run\"]",
            ));
        }
        Ok(Sweep {
            base: f.base,
            name: f.name,
            repetitions: f.repetitions,
            launcher,
            out_dir: f.out_dir,
            axes,
            set: f.set,
            overrides,
        })
    }

    /// Run every variant `repetitions` times instead (`--repetitions`), held to the same bound.
    pub fn set_repetitions(&mut self, repetitions: usize) -> Result<(), ConfigError> {
        check_runs(&self.axes, repetitions)?;
        self.repetitions = repetitions;
        Ok(())
    }

    /// Number of combinations of the axes (before duplicates are removed).
    pub fn combinations(&self) -> usize {
        self.axes.iter().map(|(_, v)| v.len()).product()
    }

    /// The variants, each validated against `base_text` (the base config's text); duplicates
    /// (identical resolved configs) removed. An invalid variant is an error naming it.
    pub fn expand(&self, base_text: &str) -> Result<Vec<Variant>, ConfigError> {
        let mut out: Vec<Variant> = Vec::new();
        let mut seen = std::collections::HashSet::new();
        for c in 0..self.combinations() {
            // mixed radix, first axis outermost
            let mut rest = c;
            let mut picks = vec![0; self.axes.len()];
            for (i, (_, values)) in self.axes.iter().enumerate().rev() {
                picks[i] = rest % values.len();
                rest /= values.len();
            }
            let labels: Vec<(String, String)> =
                self.axes.iter().zip(&picks).map(|((k, v), &p)| (k.clone(), v[p].clone())).collect();
            let mut sets = self.set.clone();
            sets.extend(labels.iter().map(|(k, v)| format!("{k}={v}")));
            for (when, set) in &self.overrides {
                if when.iter().all(|(k, v)| labels.iter().any(|(lk, lv)| lk == k && lv == v)) {
                    sets.extend(set.iter().cloned());
                }
            }
            let describe = || labels.iter().map(|(k, v)| format!("{k}={v}")).collect::<Vec<_>>().join(", ");
            let cfg = parse(base_text, &sets).map_err(|e| {
                ConfigError::new(e.field.clone(), format!("{} (sweep variant {})", e.message, describe()))
            })?;
            let resolved = cfg.to_toml();
            if !seen.insert(resolved) {
                continue;
            }
            let labels_text = labels
                .iter()
                .map(|(k, v)| format!("{}-{}", k.rsplit('.').next().unwrap_or(k), v.trim_matches('"')))
                .collect::<Vec<_>>()
                .join("_");
            let slug: String = as_name(&labels_text).chars().take(MAX_SLUG).collect();
            let id = if slug.is_empty() { format!("v{:02}", out.len()) } else { format!("v{:02}-{slug}", out.len()) };
            out.push(Variant { id, labels, sets });
        }
        Ok(out)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const BASE: &str = "[run]\nname='b'\niterations=3\n[data]\nkind='linear-synthetic'\nsamples=100\nfeatures=3\n[model]\nloss='least-squares'\nlr=0.1\n[scheme]\nkind='gc-cyclic'\nworkers=6\ns=1\n";

    #[test]
    fn expands_the_product_applies_overrides_and_removes_duplicates() {
        let s = Sweep::parse(
            "base = 'b.toml'\nrepetitions = 2\nset = ['run.iterations=2']\n[[axis]]\nkey = 'scheme.kind'\nvalues = ['gc-cyclic', 'umw']\n[[axis]]\nkey = 'scheme.s'\nvalues = [1, 2]\n[[axis]]\nkey = 'run.seed'\nvalues = [1, 2]\n[[override]]\nwhen = { 'scheme.kind' = 'umw' }\nset = ['scheme.s=']\n",
        )
        .unwrap();
        assert_eq!(s.combinations(), 8);
        assert_eq!(s.launcher, vec!["launch/local.sh"]);
        let v = s.expand(BASE).unwrap();
        // gc-cyclic: 2 s × 2 seeds; umw: its s removed, so s = 1 and s = 2 are the same run
        assert_eq!(v.len(), 6);
        assert_eq!(v[0].id, "v00-kind-gc-cyclic_s-1_seed-1");
        assert_eq!(v[0].sets, vec!["run.iterations=2", "scheme.kind=\"gc-cyclic\"", "scheme.s=1", "run.seed=1"]);
        let umw: Vec<&Variant> = v.iter().filter(|x| x.labels[0].1 == "\"umw\"").collect();
        assert_eq!(umw.len(), 2);
        assert!(umw[0].sets.contains(&"scheme.s=".to_string()));
        assert_eq!(umw[0].labels[1].1, "1");
        let ids: std::collections::HashSet<&String> = v.iter().map(|x| &x.id).collect();
        assert_eq!(ids.len(), 6);
    }

    #[test]
    fn bad_sweeps_name_the_field_or_the_variant() {
        assert!(Sweep::parse("base = 'b'\nrepetitions = 0\n").unwrap_err().to_string().contains("sweep: repetitions"));
        assert!(Sweep::parse("base = 'b'\n[[axis]]\nkey = 'scheme.s'\nvalues = []\n")
            .unwrap_err()
            .to_string()
            .contains("no values"));
        assert!(Sweep::parse("base = 'b'\nbogus = 1\n").unwrap_err().to_string().contains("unknown field"));
        assert!(Sweep::parse("base = 'b'\n[[axis]]\nkey = 's'\nvalues = [1]\n")
            .unwrap_err()
            .to_string()
            .contains("section.key"));
        let s = Sweep::parse("base = 'b'\n[[axis]]\nkey = 'scheme.s'\nvalues = [1, 6]\n").unwrap();
        let e = s.expand(BASE).unwrap_err().to_string();
        assert!(e.contains("scheme.s") && e.contains("sweep variant scheme.s=6"), "{e}");
        for (name, want) in [("''", "name"), ("'a/b'", "name"), ("'..x y'", "name")] {
            let e = Sweep::parse(&format!("base = 'b'\nname = {name}\n")).unwrap_err().to_string();
            assert!(e.contains(&format!("sweep: {want}")), "{name}: {e}");
        }
        assert!(Sweep::parse("base = 'b'\nname = 'cr-84_v2.1'\n").is_ok());
        assert!(Sweep::parse("base = 'b'\nout_dir = ''\n").unwrap_err().to_string().contains("sweep: out_dir"));
        assert!(Sweep::parse("base = 'b'\nlauncher = ['']\n").unwrap_err().to_string().contains("sweep: launcher"));
    }

    /// An override that could never apply (a typo in its `when`) would be left out in silence.
    #[test]
    fn an_override_names_axes_and_their_values() {
        let axes = "base = 'b'\n[[axis]]\nkey = 'scheme.kind'\nvalues = ['gc-cyclic', 'umw']\n[[axis]]\nkey = 'scheme.s'\nvalues = [1, 2]\n";
        let with = |when: &str| Sweep::parse(&format!("{axes}[[override]]\nwhen = {when}\nset = ['scheme.s=']\n"));
        assert!(with("{ 'scheme.kind' = 'umw' }").is_ok());
        assert!(with("{ 'scheme.kind' = 'umw', 'scheme.s' = 2 }").is_ok());
        assert!(with("{}").is_ok(), "an empty `when` applies to every variant");
        for (when, want) in [
            ("{ 'scheme.knd' = 'umw' }", "`scheme.knd` is not an axis"),
            ("{ 'run.seed' = 1 }", "the axes are scheme.kind, scheme.s"),
            (
                "{ 'scheme.kind' = 'UMW' }",
                "scheme.kind = \"UMW\" is not one of the axis's values (\"gc-cyclic\", \"umw\")",
            ),
            ("{ 'scheme.s' = 1.0 }", "scheme.s = 1.0 is not one of the axis's values (1, 2)"),
            ("{ 'scheme.s' = '1' }", "scheme.s = \"1\" is not"),
        ] {
            let e = with(when).unwrap_err().to_string();
            assert!(e.contains("sweep: override[0].when") && e.contains(want), "{when}: {e}");
        }
    }

    /// A sweep of more runs than a plan can mean is refused before it is expanded (a product of
    /// axes that overflows included), and a long value keeps its variant's id a file name.
    #[test]
    fn a_sweep_is_bounded_and_its_ids_are_file_names() {
        let values = |n: usize| (1..=n).map(|i| i.to_string()).collect::<Vec<_>>().join(", ");
        let axis = |key: &str, n: usize| format!("[[axis]]\nkey = '{key}'\nvalues = [{}]\n", values(n));
        let ok = format!("base = 'b'\nrepetitions = 10\n{}{}", axis("run.seed", 100), axis("run.iterations", 100));
        let mut s = Sweep::parse(&ok).unwrap();
        assert_eq!(s.combinations(), 10_000);
        // `--repetitions` is held to the same bound
        assert!(s.set_repetitions(11).unwrap_err().to_string().contains("is 110000 runs: at most 100000"));
        assert!(s.set_repetitions(0).unwrap_err().to_string().contains("sweep: repetitions: must be at least 1"));
        s.set_repetitions(9).unwrap();
        assert_eq!(s.repetitions, 9);
        let e = Sweep::parse(&ok.replace("repetitions = 10", "repetitions = 11")).unwrap_err().to_string();
        assert!(e.contains("100 × 100 values × 11 repetitions is 110000 runs: at most 100000"), "{e}");
        let keys =
            ["run.seed", "run.iterations", "data.samples", "data.features", "scheme.workers", "model.lr", "scheme.s"];
        let huge: String = keys.iter().map(|k| axis(k, 1000)).collect();
        let e = Sweep::parse(&format!("base = 'b'\n{huge}")).unwrap_err().to_string();
        assert!(e.contains("is more than 2^64 runs"), "{e}");
        let long = "x".repeat(300);
        let s = Sweep::parse(&format!("base = 'b'\n[[axis]]\nkey = 'run.out_dir'\nvalues = ['{long}', '{long}y']\n"))
            .unwrap();
        let v = s.expand(BASE).unwrap();
        assert_eq!(v.len(), 2);
        assert!(v.iter().all(|x| x.id.len() <= 4 + MAX_SLUG), "{:?}", v[0].id);
        assert_ne!(v[0].id, v[1].id);
    }
}
