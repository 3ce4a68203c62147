//! A serving front end's time per request: `data/front-end.toml`, fitted on the
//! published serving benchmarks (`ridgeline_fit::simulate::validation::fit_front_end`)
//! and read by the serving simulation (`simulate`, `plan --rate`, `sweep --rate`).
//!
//! A request sent to a server reaches the engine's scheduler only after the server has
//! received and parsed it and tokenized its prompt, and its first token reaches the
//! client only after it is detokenized and streamed back: host work of a few tens of
//! milliseconds that no kernel holds, paid once per request, beside (not inside) the
//! device's iterations. A time to first token measured through a server carries it; a
//! roofline does not (`predict`'s TTFT is the prompt pass alone). The simulation adds it
//! to each request's time to first token and end-to-end latency and leaves the engine's
//! schedule alone: shifting every arrival by the same time would only shift an open
//! loop's schedule, and in a closed loop it would put each user's next request a fixed
//! time behind an iteration boundary, a phase no real client holds.

use crate::error::{Error, Result};
use serde::Deserialize;
use std::sync::OnceLock;

/// The embedded `data/front-end.toml`.
pub const BUILTIN_FRONT_END_TOML: &str = include_str!("../../../../data/front-end.toml");

/// The largest front-end time a file or option may give, s.
pub const MAX_REQUEST_OVERHEAD_S: f64 = 60.0;

/// The fitted front end.
#[derive(Debug, Clone, PartialEq, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct FrontEnd {
    /// Host time per request besides the engine's iterations, s (HTTP, parsing,
    /// tokenization, the first token's trip back).
    pub request_overhead_s: f64,
    /// The serving rows it was fitted on (`data/measurements/serving.csv` ids).
    pub fitted_on: Vec<String>,
    /// How it was obtained, as the engines' factor tags say it ("fitted on N rows from
    /// D devices in P publications").
    pub factor: String,
}

impl FrontEnd {
    /// The embedded `data/front-end.toml`, parsed once.
    pub fn builtin() -> Result<&'static FrontEnd> {
        static DB: OnceLock<Result<FrontEnd>> = OnceLock::new();
        crate::train::parsed_once(&DB, || {
            FrontEnd::from_toml(BUILTIN_FRONT_END_TOML, "data/front-end.toml")
        })
    }

    /// Parses a front-end file (`source_name` names it in errors).
    pub fn from_toml(text: &str, source_name: &str) -> Result<FrontEnd> {
        let f: FrontEnd = crate::train::parse_toml(text, source_name)?;
        check_request_overhead(f.request_overhead_s)?;
        Ok(f)
    }
}

/// Checks a front-end time, s: finite, in [0, [`MAX_REQUEST_OVERHEAD_S`]].
pub fn check_request_overhead(s: f64) -> Result<()> {
    if s.is_finite() && (0.0..=MAX_REQUEST_OVERHEAD_S).contains(&s) {
        Ok(())
    } else {
        Err(Error::invalid(
            "request_overhead_s",
            format!("must be a time in [0, {MAX_REQUEST_OVERHEAD_S}] s, got {s}"),
        ))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_bundled_front_end_parses_and_bad_files_name_the_field() {
        let f = FrontEnd::builtin().unwrap();
        assert!(f.request_overhead_s >= 0.0 && !f.fitted_on.is_empty());
        let e = FrontEnd::from_toml(
            "request_overhead_s = -1.0\nfitted_on = []\nfactor = \"\"\n",
            "x.toml",
        )
        .unwrap_err();
        assert!(e.to_string().contains("request_overhead_s"), "{e}");
        let e = FrontEnd::from_toml("request_overhead = 1.0\n", "x.toml").unwrap_err();
        assert!(e.to_string().contains("x.toml"), "{e}");
    }
}
