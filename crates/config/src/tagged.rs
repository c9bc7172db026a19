//! Deserialization helpers that keep the field path in every error: sections through
//! `serde_path_to_error`, and tagged sections (`[scheme] kind = ...`, `[stragglers] model =
//! ...`) by reading the tag first and then deserializing the rest into the variant's own type.
//! (serde's internally tagged enums buffer their content and lose the path, so errors would say
//! `scheme` where they must say `scheme.s`.)

use serde::de::DeserializeOwned;

use super::{err, ConfigError};

/// Deserialize `v` as a `T`, naming fields `prefix.path` in errors.
pub(crate) fn de<T: DeserializeOwned>(v: toml::Value, prefix: &str) -> Result<T, ConfigError> {
    serde_path_to_error::deserialize(v).map_err(|e| {
        let path = e.path().to_string();
        let field = if path == "." || path.is_empty() { prefix.to_string() } else { format!("{prefix}.{path}") };
        ConfigError::new(field, friendly(&e.inner().message().replace('\n', "; ")))
    })
}

/// serde's messages for a few common mistakes, said plainly: serde's "invalid type: floating
/// point `1000.0`, expected u64" (from `run.iterations = 1e3`) is "must be a whole number, 0 or
/// more, not 1000.0 (a float in TOML: write 1000)".
pub(crate) fn friendly(msg: &str) -> String {
    if msg.starts_with("invalid type: unit variant") || msg.contains("expected string only") {
        return "must be a quoted string (e.g. \"least-squares\")".into();
    }
    let Some((got, expected)) = msg
        .strip_prefix("invalid type: ")
        .or_else(|| msg.strip_prefix("invalid value: "))
        .and_then(|m| m.rsplit_once(", expected "))
    else {
        return msg.to_string();
    };
    let whole = matches!(expected, "u8" | "u16" | "u32" | "u64" | "usize" | "i8" | "i16" | "i32" | "i64" | "isize");
    let want = match expected {
        _ if whole && expected.starts_with('u') => "a whole number, 0 or more",
        _ if whole => "a whole number",
        "f32" | "f64" => "a number",
        "a boolean" => "true or false",
        "a sequence" => "a list (e.g. [1, 2])",
        "a string" => "a quoted string",
        _ => return msg.to_string(),
    };
    let quoted = |prefix: &str, open: char, close: char| {
        got.strip_prefix(prefix).and_then(|v| v.strip_prefix(open)).and_then(|v| v.strip_suffix(close))
    };
    let (shown, hint) = if let Some(f) = quoted("floating point ", '`', '`') {
        let integral = f.parse::<f64>().ok().filter(|x| x.fract() == 0.0 && x.abs() < 1e18);
        match integral {
            Some(x) if whole => (f.to_string(), format!(" (a float in TOML: write {})", x as i64)),
            _ => (f.to_string(), String::new()),
        }
    } else if let Some(i) = quoted("integer ", '`', '`').or_else(|| quoted("boolean ", '`', '`')) {
        (i.to_string(), String::new())
    } else if let Some(t) = quoted("string ", '"', '"') {
        // an integer past TOML's (a signed 64-bit one) is left a string by `--set`
        let hint = if whole && !t.is_empty() && t.bytes().all(|b| b.is_ascii_digit()) {
            " (larger than TOML's largest integer, 9223372036854775807)"
        } else {
            ""
        };
        (format!("\"{t}\""), hint.to_string())
    } else {
        let what = match got {
            "sequence" => "a list",
            "map" => "a table",
            other => other,
        };
        (what.to_string(), String::new())
    };
    format!("must be {want}, not {shown}{hint}")
}

/// A section tagged by one of its keys: the tag selects the variant, the other keys belong to
/// the variant.
pub(crate) trait Tagged: Sized {
    /// Section name (`scheme`).
    const SECTION: &'static str;
    /// Tag key (`kind`).
    const TAG: &'static str;
    /// Every variant's tag value and the keys it accepts besides the tag.
    const VARIANTS: &'static [(&'static str, &'static [&'static str])];
    /// Build the variant `kind` from the section without its tag.
    fn variant(kind: &str, rest: toml::Value) -> Result<Self, ConfigError>;

    /// Read the tag, then the variant; an unknown key that another variant uses gets a message
    /// saying which.
    fn from_section(mut s: toml::Table) -> Result<Self, ConfigError> {
        let field = format!("{}.{}", Self::SECTION, Self::TAG);
        let kinds = || Self::VARIANTS.iter().map(|(k, _)| format!("\"{k}\"")).collect::<Vec<_>>().join(", ");
        let kind = match s.remove(Self::TAG) {
            None => return err(&field, format!("missing: one of {}", kinds())),
            Some(toml::Value::String(k)) => k,
            Some(v) => return err(&field, format!("= {v}: must be a quoted string, one of {}", kinds())),
        };
        let Some((_, accepted)) = Self::VARIANTS.iter().find(|(k, _)| *k == kind) else {
            return err(&field, format!("= \"{kind}\" is not known; use one of {}", kinds()));
        };
        // the variants that use `key` (none: a typo)
        let users = |key: &str| -> Vec<String> {
            Self::VARIANTS
                .iter()
                .filter(|(k, keys)| *k != "none" && keys.contains(&key))
                .map(|(k, _)| format!("\"{k}\""))
                .collect()
        };
        let misplaced: Vec<&str> = s.keys().map(String::as_str).filter(|k| !accepted.contains(k)).collect();
        if let Some(key) = misplaced.iter().find(|k| users(k).is_empty()) {
            let keys: Vec<String> = accepted.iter().map(|k| format!("`{k}`")).collect();
            return err(
                &format!("{}.{key}", Self::SECTION),
                format!("unknown field `{key}` for {field} = \"{kind}\", expected one of {}", keys.join(", ")),
            );
        }
        // the kinds that do not use `key`, where they are fewer to name than those that do
        // (`scheme.workers` is used by 28 kinds of 33)
        let fewer_without = |key: &str| -> Option<Vec<String>> {
            let without: Vec<String> = Self::VARIANTS
                .iter()
                .filter(|(k, keys)| *k != "none" && !keys.contains(&key))
                .map(|(k, _)| format!("\"{k}\""))
                .collect();
            (without.len() < users(key).len()).then_some(without)
        };
        // every key of another kind at once (switching kinds with --set left them one round
        // trip each), with the overrides that clear them
        if let [first, rest @ ..] = &misplaced[..] {
            let named = |k: &str| format!("{}.{k}", Self::SECTION);
            let mut message = match fewer_without(first) {
                Some(without) => {
                    // this kind first
                    let quoted = format!("\"{kind}\"");
                    let all: Vec<&str> = std::iter::once(quoted.as_str())
                        .chain(without.iter().map(String::as_str).filter(|k| *k != quoted))
                        .collect();
                    format!("is used by every {field} but {}", and(&all))
                }
                None => format!("is only used by {field} = {}, not \"{kind}\"", users(first).join(" or ")),
            };
            if !rest.is_empty() {
                let who = |k: &str| match fewer_without(k) {
                    Some(without) => format!("every kind but {}", and(&without)),
                    None => users(k).join(" or "),
                };
                let others: Vec<String> = rest.iter().map(|k| format!("{} ({})", named(k), who(k))).collect();
                message += &format!("; so {} {}", if rest.len() == 1 { "is" } else { "are" }, others.join(", "));
            }
            let clears: Vec<String> = misplaced.iter().map(|k| format!("--set {}=", named(k))).collect();
            let them = if rest.is_empty() { "it" } else { "them" };
            message += &format!(" (remove {them}, or clear {them} with {})", clears.join(" "));
            return err(&named(first), message);
        }
        Self::variant(&kind, toml::Value::Table(s))
    }
}

/// `a`, `a and b`, `a, b and c`.
fn and<S: AsRef<str>>(items: &[S]) -> String {
    match items {
        [] => String::new(),
        [one] => one.as_ref().to_string(),
        [init @ .., last] => {
            format!("{} and {}", init.iter().map(AsRef::as_ref).collect::<Vec<_>>().join(", "), last.as_ref())
        }
    }
}
