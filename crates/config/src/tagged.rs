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

/// serde's messages for a few common mistakes, said plainly.
fn friendly(msg: &str) -> String {
    if msg.starts_with("invalid type: unit variant") || msg.contains("expected string only") {
        return "must be a quoted string (e.g. \"least-squares\")".into();
    }
    msg.to_string()
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
        // every key of another kind at once (switching kinds with --set left them one round
        // trip each), with the overrides that clear them
        if let [first, rest @ ..] = &misplaced[..] {
            let named = |k: &str| format!("{}.{k}", Self::SECTION);
            let mut message = format!("is only used by {field} = {}, not \"{kind}\"", users(first).join(" or "));
            if !rest.is_empty() {
                let others: Vec<String> =
                    rest.iter().map(|k| format!("{} ({})", named(k), users(k).join(" or "))).collect();
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
