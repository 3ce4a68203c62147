//! 80% prediction intervals from held-out errors: the bundled `data/intervals.toml`
//! ([`IntervalDb`]) and the `intervals` object of `predict --json` and `train --json`
//! (`Intervals`).
//!
//! Each band holds quantiles of `measured / predicted` (as a speed: for a time,
//! `predicted / measured`) over the rows of one measurement kind (A single-stream
//! decode, B batched throughput, C prefill / time to first token), each predicted by
//! an engine calibrated without its publication
//! (`ridgeline::calibrate::leave_one_source_out`), over every engine's rows of the kind:
//! the `tail` and `1 - tail` quantiles, `tail` the narrowest of 0.10 ... 0.01 at which
//! bands computed without each publication hold 80% of its rows
//! (`ridgeline::calibrate::held_out_tail`). Training (kind D step throughput, kind E
//! memory) uses the 10th and 90th percentiles of the in-sample residuals of
//! `calibrate --train`. `calibrate --save-intervals FILE` writes the file
//! (`ridgeline::calibrate::intervals_toml`); a file may also carry bands per engine
//! (`[engines.E.K]`), which take precedence. A rate `r` gets `[p10 · r, p90 · r]`, a
//! time `t` gets `[t / p90, t / p10]`. The pure roofline (`ideal`) gets no interval.

use crate::error::{Error, Result};
use crate::measurements::Kind;
pub use crate::stats::percentile;
use serde::{Deserialize, Serialize};
use std::collections::BTreeMap;
use std::sync::OnceLock;

/// The bundled `data/intervals.toml`.
pub const BUILTIN_INTERVALS_TOML: &str = include_str!("../../../data/intervals.toml");

/// One band: quantiles of `measured / predicted` (as a speed) over some rows.
#[derive(Debug, Clone, Copy, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Band {
    /// Low end: the `tail` quantile (the 10th percentile for `tail` 0.1).
    pub p10: f64,
    /// High end: the `1 - tail` quantile.
    pub p90: f64,
    /// Rows the quantiles are taken over.
    pub rows: usize,
    /// Median of the ratio over those rows.
    pub median: f64,
    /// The quantile of the low end; 0.1 when absent. `calibrate --save-intervals`
    /// widens it below 0.1 until the bands, computed without each publication, hold
    /// 80% of its rows.
    #[serde(default = "default_tail")]
    pub tail: f64,
}

fn default_tail() -> f64 {
    0.1
}

impl Band {
    /// 10th and 90th percentiles of `ratios` ([`Band::with_tail`] at 0.1).
    pub fn of(ratios: &[f64]) -> Option<Band> {
        Band::with_tail(ratios, 0.1)
    }

    /// The `tail` and `1 - tail` quantiles of `ratios` (linear interpolation between
    /// order statistics, as numpy's default); `None` without rows.
    pub fn with_tail(ratios: &[f64], tail: f64) -> Option<Band> {
        let mut v: Vec<f64> = ratios.iter().copied().filter(|r| r.is_finite()).collect();
        if v.is_empty() {
            return None;
        }
        v.sort_by(f64::total_cmp);
        Some(Band {
            p10: percentile(&v, tail),
            p90: percentile(&v, 1.0 - tail),
            rows: v.len(),
            median: percentile(&v, 0.5),
            tail,
        })
    }

    /// `[p10 · rate, p90 · rate]`, no faster than `ideal` (the roofline's rate: no
    /// measurement beats the datasheet peaks; `f64::INFINITY` for none).
    pub fn rate(&self, rate: f64, ideal: f64) -> [f64; 2] {
        let high = (self.p90 * rate).min(ideal);
        [(self.p10 * rate).min(high), high]
    }

    /// `[time / p90, time / p10]` (a time is the inverse of a speed), no shorter than
    /// `ideal` (the roofline's time; 0 for none).
    pub(crate) fn time(&self, time: f64, ideal: f64) -> [f64; 2] {
        let low = (time / self.p90).max(ideal);
        [low, (time / self.p10).max(low)]
    }

    /// Whether `ratio` lies inside the band (ends included).
    pub fn holds(&self, ratio: f64) -> bool {
        (self.p10..=self.p90).contains(&ratio)
    }
}

/// The interval bands: per kind over all engines, and per engine where it has enough
/// rows.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct IntervalDb {
    /// Per kind name (`A`..`E`), every engine's rows.
    #[serde(default)]
    pub pooled: BTreeMap<String, Band>,
    /// Per engine id, per kind name: the engine's own rows.
    #[serde(default)]
    pub engines: BTreeMap<String, BTreeMap<String, Band>>,
}

impl IntervalDb {
    /// Parses an intervals TOML (`source` names it in errors).
    pub fn from_toml(text: &str, source: &str) -> Result<IntervalDb> {
        let db: IntervalDb = toml::from_str(text).map_err(|e| Error::Parse {
            source_name: source.to_string(),
            message: e.to_string().trim().replace('\n', " "),
        })?;
        let bands = db.pooled.iter().chain(db.engines.values().flatten());
        for (kind, b) in bands {
            if !(b.p10 > 0.0 && b.p10 <= b.p90 && b.p90.is_finite()) {
                return Err(Error::invalid(
                    format!("{source}: {kind}"),
                    format!("needs 0 < p10 <= p90, got {} and {}", b.p10, b.p90),
                ));
            }
        }
        Ok(db)
    }

    /// The bundled bands.
    pub fn builtin() -> Result<&'static IntervalDb> {
        static DB: OnceLock<Result<IntervalDb>> = OnceLock::new();
        DB.get_or_init(|| IntervalDb::from_toml(BUILTIN_INTERVALS_TOML, "data/intervals.toml"))
            .as_ref()
            .map_err(Clone::clone)
    }

    /// The band for predictions of `kind` by engine `engine`: its own, else the
    /// pooled one; none for `ideal`.
    pub fn band(&self, engine: &str, kind: Kind) -> Option<&Band> {
        if engine == "ideal" {
            return None;
        }
        let k = kind.letter();
        (self.engines.get(engine).and_then(|m| m.get(k))).or_else(|| self.pooled.get(k))
    }
}

/// 80% intervals `[low, high]` keyed by the dotted path of the number they bound
/// (`generation.ttft_s`); empty for the pure roofline.
pub(crate) type Intervals = BTreeMap<String, [f64; 2]>;

/// Intervals of an inference prediction by `engine` at `batch`: decode tokens/s and
/// time per output token from kind A at batch 1 (else B), output tokens/s from B (A at
/// batch 1), time to first token and prefill tokens/s from C. `numbers` and `ideal`
/// (the same five under the pure roofline, which bounds each interval) are in the order
/// decode tokens/s, output tokens/s, TTFT, TPOT, prefill tokens/s.
pub(crate) fn inference(
    db: &IntervalDb,
    engine: &str,
    batch: u64,
    numbers: [f64; 5],
    ideal: [f64; 5],
) -> Intervals {
    let [decode, output, ttft, tpot, prefill] = numbers;
    let [i_decode, i_output, i_ttft, i_tpot, i_prefill] = ideal;
    let step = if batch <= 1 { Kind::A } else { Kind::B };
    let mut out = Intervals::new();
    let mut put = |key: &str, kind: Kind, f: &dyn Fn(&Band) -> [f64; 2]| {
        if let Some(b) = db.band(engine, kind) {
            out.insert(key.to_string(), f(b));
        }
    };
    put("generation.decode_tokens_per_s", step, &|b| {
        b.rate(decode, i_decode)
    });
    put("generation.output_tokens_per_s", step, &|b| {
        b.rate(output, i_output)
    });
    put("generation.tpot_s", step, &|b| b.time(tpot, i_tpot));
    put("generation.ttft_s", Kind::C, &|b| b.time(ttft, i_ttft));
    put("prefill.tokens_per_s", Kind::C, &|b| {
        b.rate(prefill, i_prefill)
    });
    out
}

/// Intervals of a training prediction: step tokens/s per device from kind D, total
/// memory bytes per device from kind E. Tokens/s stay at or below `ideal_tokens_per_s_per_gpu`
/// (the rate at an MFU of 1).
pub(crate) fn training(
    db: &IntervalDb,
    tokens_per_s_per_gpu: f64,
    ideal_tokens_per_s_per_gpu: f64,
    total_bytes: f64,
) -> Intervals {
    let mut out = Intervals::new();
    if let Some(b) = db.pooled.get("D") {
        out.insert(
            "step.tokens_per_s_per_gpu".into(),
            b.rate(tokens_per_s_per_gpu, ideal_tokens_per_s_per_gpu),
        );
    }
    if let Some(b) = db.pooled.get("E") {
        out.insert(
            "memory.total_bytes".into(),
            b.rate(total_bytes, f64::INFINITY),
        );
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn percentiles_interpolate_between_order_statistics() {
        // 11 values 0.5, 0.6, ..., 1.5: h = 10 q lands on order statistics exactly
        let v: Vec<f64> = (0..11).map(|i| 0.5 + 0.1 * i as f64).collect();
        let b = Band::of(&v).unwrap();
        assert!((b.p10 - 0.6).abs() < 1e-12 && (b.p90 - 1.4).abs() < 1e-12);
        assert!((b.median - 1.0).abs() < 1e-12 && b.rows == 11);
        // 4 values 1, 2, 3, 4: p10 at h = 0.3 -> 1.3; p90 at h = 2.7 -> 3.7
        let b = Band::of(&[4.0, 1.0, 3.0, 2.0]).unwrap();
        assert!(
            (b.p10 - 1.3).abs() < 1e-12 && (b.p90 - 3.7).abs() < 1e-12,
            "{b:?}"
        );
        assert!(Band::of(&[]).is_none());
    }

    #[test]
    fn times_invert_the_speed_ratio() {
        let b = Band {
            p10: 0.8,
            p90: 1.25,
            rows: 10,
            median: 1.0,
            tail: 0.1,
        };
        // 100 tok/s -> [80, 125]; 10 ms -> [10 / 1.25, 10 / 0.8] = [8, 12.5] ms
        assert_eq!(b.rate(100.0, f64::INFINITY), [80.0, 125.0]);
        // never faster than the roofline: p90 · 100 = 125 capped at an ideal 110
        assert_eq!(b.rate(100.0, 110.0), [80.0, 110.0]);
        // 0.010 / 1.25 = 0.008 raised to an ideal 0.009
        assert_eq!(b.time(0.010, 0.009)[0], 0.009);
        let t = b.time(0.010, 0.0);
        assert!((t[0] - 0.008).abs() < 1e-15 && (t[1] - 0.0125).abs() < 1e-15);
    }

    #[test]
    fn engines_fall_back_to_the_pooled_band_and_ideal_gets_none() {
        let db = IntervalDb::from_toml(
            "[pooled.A]\np10 = 0.8\np90 = 1.1\nrows = 30\nmedian = 0.95\n\
             [pooled.C]\np10 = 0.5\np90 = 1.5\nrows = 30\nmedian = 1.0\n\
             [engines.vllm.A]\np10 = 0.9\np90 = 1.0\nrows = 9\nmedian = 0.95\n",
            "t.toml",
        )
        .unwrap();
        assert_eq!(db.band("vllm", Kind::A).unwrap().p10, 0.9);
        assert_eq!(db.band("sglang", Kind::A).unwrap().p10, 0.8);
        assert!(db.band("ideal", Kind::A).is_none());
        assert!(db.band("vllm", Kind::B).is_none());
        let none = [f64::INFINITY, f64::INFINITY, 0.0, 0.0, f64::INFINITY];
        let i = inference(&db, "vllm", 1, [100.0, 100.0, 0.2, 0.01, 1000.0], none);
        assert_eq!(i["generation.decode_tokens_per_s"], [90.0, 100.0]);
        // ttft 0.2 s with C band [0.5, 1.5]: [0.2 / 1.5, 0.2 / 0.5]
        assert_eq!(i["generation.ttft_s"], [0.2 / 1.5, 0.4]);
        // a roofline TTFT of 0.15 s raises the fast end: [0.15, 0.4]
        let ideal = [f64::INFINITY, f64::INFINITY, 0.15, 0.0, f64::INFINITY];
        let i = inference(&db, "vllm", 1, [100.0, 100.0, 0.2, 0.01, 1000.0], ideal);
        assert_eq!(i["generation.ttft_s"], [0.15, 0.4]);
        assert!(inference(&db, "ideal", 1, [1.0; 5], none).is_empty());
        let bad = IntervalDb::from_toml(
            "[pooled.A]\np10 = 1.2\np90 = 1.1\nrows = 3\nmedian = 1\n",
            "b",
        );
        assert!(bad.is_err());
    }
}
