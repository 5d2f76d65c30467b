//! The one error type for a scheme's configuration.
//!
//! Every `*Config::validate` returns a [`ConfigError`] naming the scheme and the field as
//! spelled in scenario files, so the registry can point at the key (`params.<field>`)
//! and a message can say which scheme it belongs to, without one error type per
//! algorithm.

use std::fmt;

/// A configuration value a scheme cannot run with.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct ConfigError {
    /// The scheme, as named in scenario files (`"copa"`, `"pcc-vivace"`).
    pub scheme: &'static str,
    /// The offending field, as spelled in scenario files (`"delta"`,
    /// `"target_schedule[1]"`, `"bbr.high_gain"` for a nested configuration).
    pub field: String,
    /// What is wrong and which values are accepted.
    pub reason: String,
}

impl ConfigError {
    /// `scheme.field` is wrong because of `reason`.
    pub fn new(scheme: &'static str, field: impl Into<String>, reason: impl Into<String>) -> Self {
        ConfigError {
            scheme,
            field: field.into(),
            reason: reason.into(),
        }
    }
}

/// The first of `checks`, `(field, value, lo, hi)`, whose value is outside `lo..=hi`, as
/// an error of `scheme` naming the field; `Ok` when all are inside.
pub(crate) fn check_ranges<T: PartialOrd + fmt::Display + Copy>(
    scheme: &'static str,
    checks: impl IntoIterator<Item = (&'static str, T, T, T)>,
) -> Result<(), ConfigError> {
    for (field, v, lo, hi) in checks {
        if !(lo..=hi).contains(&v) {
            return Err(ConfigError::new(
                scheme,
                field,
                format!("{v} is outside {lo}..={hi}"),
            ));
        }
    }
    Ok(())
}

impl fmt::Display for ConfigError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{}.{}: {}", self.scheme, self.field, self.reason)
    }
}

impl std::error::Error for ConfigError {}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn display_names_scheme_and_field() {
        let e = ConfigError::new("c2tcp", "target_schedule[1]", "time 2 s is not after 3 s");
        assert_eq!(
            e.to_string(),
            "c2tcp.target_schedule[1]: time 2 s is not after 3 s"
        );
        assert_eq!(e.field, "target_schedule[1]");
    }
}
