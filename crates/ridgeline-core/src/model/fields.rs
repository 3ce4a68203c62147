//! One config document's fields, read by name with their aliases: the accessors that
//! the `config.json` readers (the families, the layer kinds, the state-space blocks) share.

use crate::error::{Error, Result};
use serde_json::{Map, Value};

/// One config document: its fields and the name of the file in errors.
pub(super) struct Fields<'a> {
    pub(super) m: &'a Map<String, Value>,
    pub(super) src: &'a str,
}

impl<'a> Fields<'a> {
    pub(super) fn get(&self, keys: &[&str]) -> Option<&'a Value> {
        keys.iter()
            .find_map(|k| self.m.get(*k).filter(|v| !v.is_null()))
    }

    pub(super) fn error(&self, message: String) -> Error {
        Error::Parse {
            source_name: self.src.into(),
            message,
        }
    }

    /// A whole number >= 1 under the first of `keys` present.
    pub(super) fn uint(&self, keys: &[&str]) -> Result<Option<u64>> {
        let Some(v) = self.get(keys) else {
            return Ok(None);
        };
        let f = v
            .as_f64()
            .ok_or_else(|| self.error(format!("field {}: expected a number, got {v}", keys[0])))?;
        if !(f.is_finite() && f >= 1.0 && f.fract() == 0.0 && f <= 1e15) {
            return Err(self.error(format!(
                "field {}: must be a whole number >= 1 (and <= 1e15), got {v}",
                keys[0]
            )));
        }
        Ok(Some(f as u64))
    }

    /// A whole number >= 0 (a count that may be zero, such as `first_k_dense_replace`).
    pub(super) fn count(&self, keys: &[&str]) -> Result<Option<u64>> {
        match self.get(keys) {
            Some(v) if v.as_f64() == Some(0.0) => Ok(Some(0)),
            _ => self.uint(keys),
        }
    }

    pub(super) fn req(&self, keys: &[&str]) -> Result<u64> {
        self.uint(keys)?.ok_or_else(|| {
            let also = if keys.len() > 1 {
                format!(" (also accepted: {})", keys[1..].join(", "))
            } else {
                String::new()
            };
            self.error(format!("missing field {}{also}", keys[0]))
        })
    }

    pub(super) fn boolean(&self, keys: &[&str], default: bool) -> Result<bool> {
        match self.get(keys) {
            None => Ok(default),
            Some(Value::Bool(b)) => Ok(*b),
            Some(v) => Err(self.error(format!(
                "field {}: expected true or false, got {v}",
                keys[0]
            ))),
        }
    }

    pub(super) fn string(&self, keys: &[&str]) -> Option<&'a str> {
        self.get(keys).and_then(Value::as_str)
    }

    /// The nested object under `key` (empty when absent).
    pub(super) fn nested(&self, key: &str) -> Fields<'a> {
        static EMPTY: std::sync::OnceLock<Map<String, Value>> = std::sync::OnceLock::new();
        Fields {
            m: self
                .m
                .get(key)
                .and_then(Value::as_object)
                .unwrap_or_else(|| EMPTY.get_or_init(Map::new)),
            src: self.src,
        }
    }
}
