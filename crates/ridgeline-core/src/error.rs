//! One error type for the whole crate: every failure on user input is a value, never a panic.

use thiserror::Error;

/// Result alias used across ridgeline.
pub type Result<T> = std::result::Result<T, Error>;

/// Everything that can go wrong on user input or data files.
///
/// Each variant names the field, file or option at fault in the library's own words
/// (the field names of [`crate::predict::Scenario`], [`crate::train::TrainConfig`], the
/// keys of a data file); unknown names carry the closest valid names so a front end can
/// print "did you mean ...". A front end that calls the fields something else (the CLI's
/// `--gen` for `gen_tokens`) renames them with [`Error::rename_fields`].
#[derive(Debug, Error, Clone, PartialEq)]
#[non_exhaustive]
pub enum Error {
    /// A name (GPU id, model id, format, engine, ...) that is not known.
    #[error("unknown {kind} '{name}'{}", did_you_mean(.suggestions))]
    UnknownName {
        /// What kind of name it was ("hardware id", "model id", "format", ...).
        kind: &'static str,
        /// The name as given.
        name: String,
        /// Up to three closest valid names, best first.
        suggestions: Vec<String>,
    },
    /// A value outside its valid range (zero heads, negative sizes, NaN, ...).
    #[error("invalid {field}: {message}")]
    InvalidValue {
        /// The field or key at fault (e.g. `num_attention_heads`, `batch`).
        field: String,
        /// What is wrong and what would be valid.
        message: String,
    },
    /// A file or document that could not be parsed.
    #[error("{source_name}: {message}")]
    Parse {
        /// The file path (or `data/hardware/x.toml` for built-in data, or `<stdin>`).
        source_name: String,
        /// The parser's message, including line/column or key where known.
        message: String,
    },
    /// A file that could not be read.
    #[error("cannot read {path}: {message}")]
    Read {
        /// The path that failed.
        path: String,
        /// The operating system's message.
        message: String,
    },
    /// A file (or stream) that could not be written.
    #[error("cannot write {path}: {message}")]
    Write {
        /// The path that failed (`<stdout>` for standard output), with the option
        /// that named it where there is one.
        path: String,
        /// The operating system's message.
        message: String,
    },
    /// Options that are each valid but contradict each other (e.g. tp x pp x dp != gpus).
    #[error("conflicting {}: {message}", field_list(.fields))]
    Conflict {
        /// The fields involved, in the order the message names them.
        fields: Vec<String>,
        /// What contradicts what, and how to resolve it.
        message: String,
    },
    /// Command-line words that do not parse (an unknown option, a missing value): the
    /// parser's message on one line, naming the option.
    #[error("{0}")]
    Usage(String),
    /// Work stopped before it finished ([`crate::work`]): interrupted, past its
    /// deadline, or its client gone.
    #[error("{reason}")]
    Cancelled {
        /// Why, in words (`interrupted`, `stopped at its deadline of 30 s`).
        reason: String,
    },
    /// Work refused up front because it asks for more than the budget allows
    /// ([`crate::work::charge`]).
    #[error("invalid {param}: {message}")]
    TooMuchWork {
        /// The parameter that asked for the most.
        param: String,
        /// How much was asked and what the budget is.
        message: String,
    },
    /// A failure inside ridgeline that no input should cause (a chart backend error,
    /// a serializer failure): a bug to report, not a bad input.
    #[error("internal error in {what}: {message}")]
    Internal {
        /// The component that failed.
        what: &'static str,
        /// Its message.
        message: String,
    },
}

fn did_you_mean(suggestions: &[String]) -> String {
    if suggestions.is_empty() {
        String::new()
    } else {
        format!("; did you mean {}?", suggestions.join(", "))
    }
}

/// The field that takes a name of this [`Error::UnknownName`] kind.
fn field_of_kind(kind: &str) -> Option<&'static str> {
    match kind {
        "hardware id" => Some("gpu"),
        "model id" | "model" => Some("model"),
        "engine" => Some("engine"),
        "provider" => Some("provider"),
        _ => None,
    }
}

fn field_list(fields: &[String]) -> String {
    if fields.is_empty() {
        "options".to_string()
    } else {
        fields.join(", ")
    }
}

impl Error {
    /// Shorthand for [`Error::InvalidValue`].
    pub fn invalid(field: impl Into<String>, message: impl Into<String>) -> Self {
        Error::InvalidValue {
            field: field.into(),
            message: message.into(),
        }
    }

    /// Shorthand for [`Error::Conflict`].
    pub fn conflict(fields: &[&str], message: impl Into<String>) -> Self {
        Error::Conflict {
            fields: fields.iter().map(|f| f.to_string()).collect(),
            message: message.into(),
        }
    }

    /// [`Error::Read`] for `path` from an I/O error.
    pub(crate) fn read(path: impl AsRef<std::path::Path>, e: impl std::fmt::Display) -> Self {
        Error::Read {
            path: path.as_ref().display().to_string(),
            message: e.to_string(),
        }
    }

    /// [`Error::Write`] for `path` from an I/O error.
    pub fn write(path: impl AsRef<std::path::Path>, e: impl std::fmt::Display) -> Self {
        Error::Write {
            path: path.as_ref().display().to_string(),
            message: e.to_string(),
        }
    }

    /// Shorthand for [`Error::Internal`].
    pub fn internal(what: &'static str, message: impl std::fmt::Display) -> Self {
        Error::Internal {
            what,
            message: message.to_string(),
        }
    }

    /// The field or parameter the error names, if it names one: an invalid value's
    /// field, the first of conflicting ones, the parameter of too much work, or the
    /// field that takes an unknown name (`gpu` for a hardware id).
    pub fn field(&self) -> Option<&str> {
        match self {
            Error::InvalidValue { field, .. } => Some(field),
            Error::Conflict { fields, .. } => fields.first().map(String::as_str),
            Error::TooMuchWork { param, .. } => Some(param),
            Error::UnknownName { kind, name, .. } => {
                field_of_kind(kind).or(if *kind == "option" { Some(name) } else { None })
            }
            _ => None,
        }
    }

    /// Whether the error is ridgeline's fault rather than the input's.
    pub fn is_internal(&self) -> bool {
        matches!(self, Error::Internal { .. })
    }

    /// Renames the fields of [`Error::InvalidValue`] and [`Error::Conflict`] with `f`
    /// (`None`: keep the name): how a front end shows its own option names.
    ///
    /// ```
    /// use ridgeline_core::Error;
    /// let e = Error::invalid("gen_tokens", "must be at most 10").rename_fields(|f| {
    ///     (f == "gen_tokens").then(|| "--gen".to_string())
    /// });
    /// assert_eq!(e.to_string(), "invalid --gen: must be at most 10");
    /// ```
    ///
    /// An unknown device, model or engine name becomes [`Error::InvalidValue`] of the
    /// field that takes it (`gpu`, `model`, `engine`) where `f` names that field, so
    /// that the one line names the option too:
    ///
    /// ```
    /// use ridgeline_core::Error;
    /// let e = Error::unknown("hardware id", "h1000", ["h100-sxm"]);
    /// let e = e.rename_fields(|f| Some(format!("--{f}")));
    /// assert_eq!(e.to_string(), "invalid --gpu: unknown hardware id 'h1000'; did you mean h100-sxm?");
    /// ```
    pub fn rename_fields(self, f: impl Fn(&str) -> Option<String>) -> Self {
        let rename = |name: String| f(&name).unwrap_or(name);
        match self {
            Error::UnknownName { kind, .. } if field_of_kind(kind).and_then(&f).is_some() => {
                let field = field_of_kind(kind).and_then(&f).unwrap_or_default();
                Error::InvalidValue {
                    field,
                    message: self.to_string(),
                }
            }
            Error::InvalidValue { field, message } => Error::InvalidValue {
                field: rename(field),
                message,
            },
            Error::Conflict { fields, message } => Error::Conflict {
                fields: fields.into_iter().map(rename).collect(),
                message,
            },
            Error::TooMuchWork { param, message } => Error::TooMuchWork {
                param: rename(param),
                message,
            },
            other => other,
        }
    }

    /// Builds [`Error::UnknownName`] with the three valid names closest to `name`.
    pub fn unknown<'a>(
        kind: &'static str,
        name: &str,
        valid: impl IntoIterator<Item = &'a str>,
    ) -> Self {
        Error::UnknownName {
            kind,
            name: name.to_string(),
            suggestions: closest(name, valid, 3),
        }
    }
}

/// The `n` names in `valid` closest to `name` (case-insensitive edit distance; names that
/// contain the query, or are contained in it, rank first).
pub fn closest<'a>(name: &str, valid: impl IntoIterator<Item = &'a str>, n: usize) -> Vec<String> {
    let query = name.to_ascii_lowercase();
    let mut scored: Vec<(usize, String)> = valid
        .into_iter()
        .map(|v| {
            let lower = v.to_ascii_lowercase();
            let mut d = strsim::levenshtein(&query, &lower);
            if !query.is_empty() && (lower.contains(&query) || query.contains(&lower)) {
                d = d.min(1);
            }
            (d, v.to_string())
        })
        .collect();
    scored.sort();
    scored.dedup_by(|a, b| a.1 == b.1);
    scored.into_iter().take(n).map(|(_, v)| v).collect()
}

/// Checks that `value` is finite and strictly positive; the error names `field`.
pub fn require_positive(field: &str, value: f64) -> Result<f64> {
    if value.is_finite() && value > 0.0 {
        Ok(value)
    } else {
        Err(Error::invalid(
            field,
            format!("must be a finite number > 0, got {value}"),
        ))
    }
}

/// Checks that `value` lies in `lo..=hi` (a physical range: bandwidths, peaks,
/// capacities); the error names `field` and the range.
pub fn require_in(field: &str, value: f64, lo: f64, hi: f64) -> Result<f64> {
    if value.is_finite() && (lo..=hi).contains(&value) {
        Ok(value)
    } else {
        Err(Error::invalid(
            field,
            format!("{value:e} is outside the physical range {lo:e} ..= {hi:e}"),
        ))
    }
}

/// Checks that `value` is finite and >= 0; the error names `field`.
pub fn require_non_negative(field: &str, value: f64) -> Result<f64> {
    if value.is_finite() && value >= 0.0 {
        Ok(value)
    } else {
        Err(Error::invalid(
            field,
            format!("must be a finite number >= 0, got {value}"),
        ))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn closest_ranks_typos_first() {
        let valid = ["h100-sxm", "h100-pcie", "h200-sxm", "a100-80gb-sxm", "l4"];
        let s = closest("h100-sm", valid, 3);
        assert_eq!(s[0], "h100-sxm");
        assert_eq!(s.len(), 3);
    }

    #[test]
    fn message_lists_suggestions() {
        let e = Error::unknown("hardware id", "h10", ["h100-sxm", "l4"]);
        let msg = e.to_string();
        assert!(
            msg.starts_with("unknown hardware id 'h10'; did you mean h100-sxm"),
            "{msg}"
        );
    }

    #[test]
    fn positivity_rejects_nan_and_zero() {
        assert!(require_positive("x", f64::NAN).is_err());
        assert!(require_positive("x", 0.0).is_err());
        assert!(require_positive("x", -1.0).is_err());
        assert!(require_positive("x", f64::INFINITY).is_err());
        assert_eq!(require_positive("x", 2.0), Ok(2.0));
        assert_eq!(require_non_negative("x", 0.0), Ok(0.0));
    }
}
