//! Chart data: the series the charts in `ridgeline::plot` draw, computed here from the
//! predictor and the trainer and handed over as plain serde structs, so that a renderer
//! only renders and a library user can take the same numbers as JSON.
//!
//! - decode throughput and per-token latency against batch, one [`ThroughputSeries`]
//!   per device ([`batch_limit`], [`throughput_series`], [`throughput_titles`]);
//! - memory per device as stacked bars ([`MemoryChart`] of [`MemoryBar`]s): by weight
//!   format ([`format_comparison`], [`default_formats`]) and by ZeRO stage
//!   ([`zero_comparison`]).
//!
//! ```
//! use ridgeline_core::{engine::EngineDb, hardware::HardwareDb, model::ModelDb};
//! use ridgeline_core::predict::{Predictor, Scenario};
//! use ridgeline_plan::series::{batch_limit, throughput_series};
//!
//! let model = ModelDb::builtin()?.resolve("llama-3-8b")?;
//! let hw = HardwareDb::builtin()?.get("h100")?;
//! let engine = EngineDb::builtin()?.get("typical")?;
//! let pred = Predictor::new(&model, hw, engine, &Scenario::default())?;
//! let limit = batch_limit(&[&pred], 512, 128)?;
//! let s = throughput_series(&pred, 512, 128, limit)?;
//! assert_eq!(s.points[0].batch, 1);
//! assert!(s.points.iter().any(|p| p.batch == s.max_batch));
//! # Ok::<(), ridgeline_core::Error>(())
//! ```

use crate::dtype::Format;
use crate::engine::Engine;
use crate::error::{Error, Result};
use crate::hardware::Hardware;
use crate::intervals::IntervalDb;
use crate::measurements::Kind;
use crate::memory::InferenceMemory;
use crate::model::ModelConfig;
use crate::predict::{GenerationReport, Predictor, Scenario, decode_context};
use crate::train::{TrainConfig, zero_stages};
use serde::Serialize;

/// Decode throughput and latency at one batch.
#[derive(Debug, Clone, Copy, PartialEq, Serialize)]
#[non_exhaustive]
pub struct ThroughputPoint {
    /// Concurrent sequences.
    pub batch: u64,
    /// Engine prediction: batch × gen / (sum of the decode steps), tokens/s (with
    /// `gen = 0`: batch / one step at the prompt's context).
    pub tokens_per_s: f64,
    /// The same on the ideal roofline, tokens/s.
    pub roofline_tokens_per_s: f64,
    /// Engine prediction: mean time per output token, s.
    pub token_latency_s: f64,
    /// The same on the ideal roofline, s.
    pub roofline_token_latency_s: f64,
    /// Whether this batch fits in device memory.
    pub fits: bool,
    /// 80% interval of `tokens_per_s` from the engine's held-out errors (kind A at
    /// batch 1, else B; [`crate::intervals`]); none for the pure roofline.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub tokens_per_s_interval: Option<[f64; 2]>,
}

/// One device's curves.
#[derive(Debug, Clone, PartialEq, Serialize)]
#[non_exhaustive]
pub struct ThroughputSeries {
    /// Legend label (the device).
    pub label: String,
    /// Points in increasing batch.
    pub points: Vec<ThroughputPoint>,
    /// Largest batch that fits in memory (0: not even one sequence).
    pub max_batch: u64,
    /// Smallest batch at which a decode step is compute-bound on the ideal roofline.
    pub compute_bound_batch: Option<u64>,
}

/// Evaluates one point with [`Predictor::summary`] (allocation-free).
pub(crate) fn throughput_point(
    pred: &Predictor,
    batch: u64,
    prompt: u64,
    gen_tokens: u64,
) -> ThroughputPoint {
    let s = pred.summary(batch, prompt, gen_tokens);
    let b = batch as f64;
    let ratio = |n: f64, d: f64| if d > 0.0 { n / d } else { 0.0 };
    let (step, ideal_step) = if gen_tokens > 0 {
        let g = GenerationReport::from_summary(&s, batch, gen_tokens);
        (g.tpot_s, g.roofline_tpot_s)
    } else {
        (s.decode.time_s, s.decode.roofline_time_s)
    };
    let tokens_per_s = ratio(b, step);
    let kind = if batch <= 1 { Kind::A } else { Kind::B };
    let band = IntervalDb::builtin()
        .ok()
        .and_then(|db| db.band(&pred.engine.id, kind));
    let roofline_tokens_per_s = ratio(b, ideal_step);
    ThroughputPoint {
        batch,
        tokens_per_s,
        tokens_per_s_interval: band.map(|b| b.rate(tokens_per_s, roofline_tokens_per_s)),
        roofline_tokens_per_s,
        token_latency_s: step,
        roofline_token_latency_s: ideal_step,
        fits: s.memory.fits,
    }
}

/// [`Predictor::max_batch`] after the checks a prediction at batch 1 makes (prompt and
/// gen within range).
fn max_batch(pred: &Predictor, prompt: u64, gen_tokens: u64) -> Result<u64> {
    Scenario::validate_shape(1, prompt, gen_tokens)?;
    Ok(pred.max_batch(prompt, gen_tokens))
}

/// The batch axis limit for a set of devices: the next power of two at or above every
/// device's memory limit and compute-bound batch, within 8 ..= 4096.
pub fn batch_limit(preds: &[&Predictor], prompt: u64, gen_tokens: u64) -> Result<u64> {
    let mut need = 8u64;
    for p in preds {
        let m = max_batch(p, prompt, gen_tokens)?;
        need = need.max(m.saturating_add(1).min(4096));
        if let Some(c) = p.compute_bound_batch(decode_context(prompt, gen_tokens)) {
            need = need.max(c.saturating_mul(2).min(4096));
        }
    }
    Ok(need.next_power_of_two().min(4096))
}

/// Evaluates a device at powers of two from 1 to `limit` and at its exact memory limit
/// and compute-bound batch (when within `limit`), so the curves end exactly at the cut.
pub fn throughput_series(
    pred: &Predictor,
    prompt: u64,
    gen_tokens: u64,
    limit: u64,
) -> Result<ThroughputSeries> {
    if limit == 0 || limit > 1 << 20 {
        return Err(Error::invalid(
            "batch limit",
            format!("{limit} is outside 1 ..= 1048576"),
        ));
    }
    let max_batch = max_batch(pred, prompt, gen_tokens)?;
    let cb = pred.compute_bound_batch(decode_context(prompt, gen_tokens));
    let mut batches: Vec<u64> = std::iter::successors(Some(1u64), |b| b.checked_mul(2))
        .take_while(|&b| b <= limit)
        .collect();
    for extra in [Some(max_batch), cb].into_iter().flatten() {
        if extra >= 1 && extra <= limit {
            batches.push(extra);
        }
    }
    batches.sort_unstable();
    batches.dedup();
    Ok(ThroughputSeries {
        label: pred.hardware.name.clone(),
        points: batches
            .into_iter()
            .map(|b| throughput_point(pred, b, prompt, gen_tokens))
            .collect(),
        max_batch,
        compute_bound_batch: cb,
    })
}

/// Default title and subtitle of the throughput chart for a model on some devices.
pub fn throughput_titles(pred: &Predictor, prompt: u64, gen_tokens: u64) -> (String, String) {
    let p = pred.precision();
    (
        format!(
            "Decode throughput and latency vs batch: {}",
            pred.model.name
        ),
        format!(
            "weights {} · KV {} · prompt {} + {} generated tokens per sequence · engine {} · tokens/s summed over the batch",
            p.weights.name(),
            p.kv.name(),
            prompt,
            gen_tokens,
            pred.engine.id
        ),
    )
}

/// One named part of a bar.
#[derive(Debug, Clone, PartialEq, Serialize)]
#[non_exhaustive]
pub struct MemorySegment {
    /// Legend name (`weights`, `KV cache`, `optimizer`, ...).
    pub name: String,
    /// Bytes (≥ 0).
    pub bytes: f64,
}

/// One stacked bar: segments from the bottom up.
#[derive(Debug, Clone, PartialEq, Serialize)]
#[non_exhaustive]
pub struct MemoryBar {
    /// Label under the bar.
    pub label: String,
    /// Segments, bottom first.
    pub segments: Vec<MemorySegment>,
}

impl MemoryBar {
    /// A bar from `(name, bytes)` pairs, bottom first.
    pub fn new<'a>(label: &str, segments: impl IntoIterator<Item = (&'a str, f64)>) -> MemoryBar {
        MemoryBar {
            label: label.to_string(),
            segments: segments
                .into_iter()
                .map(|(name, bytes)| MemorySegment {
                    name: name.to_string(),
                    bytes,
                })
                .collect(),
        }
    }

    /// The inference footprint as a bar: weights, KV cache, activations, overhead.
    pub(crate) fn inference(label: &str, m: &InferenceMemory) -> MemoryBar {
        MemoryBar::new(
            label,
            [
                ("weights", m.weights_bytes),
                ("KV cache", m.kv_cache_bytes),
                ("activations", m.activation_bytes),
                ("engine overhead", m.overhead_bytes),
            ],
        )
    }

    /// Sum of the segments, bytes.
    pub fn total_bytes(&self) -> f64 {
        self.segments.iter().map(|s| s.bytes).sum()
    }
}

/// A whole memory chart: bars against a capacity line, with titles and canvas size.
#[derive(Debug, Clone, PartialEq)]
pub struct MemoryChart {
    /// Title line.
    pub title: String,
    /// Second line.
    pub subtitle: String,
    /// Bars, left to right.
    pub bars: Vec<MemoryBar>,
    /// Device capacity drawn as a horizontal line, bytes.
    pub capacity_bytes: Option<f64>,
    /// What the capacity is (`H100 SXM5 80GB`).
    pub capacity_label: String,
    /// Canvas width, px.
    pub width: u32,
    /// Canvas height, px.
    pub height: u32,
}

impl Default for MemoryChart {
    fn default() -> Self {
        MemoryChart {
            title: "Memory per device".into(),
            subtitle: String::new(),
            bars: Vec::new(),
            capacity_bytes: None,
            capacity_label: String::new(),
            width: 900,
            height: 600,
        }
    }
}

/// A device name without its vendor (`NVIDIA H100 SXM5 80GB` -> `H100 SXM5 80GB`), for
/// titles and legends; `vendors` are the prefixes to strip, each with its space.
pub fn short_device_name<'a>(name: &'a str, vendors: &[&str]) -> &'a str {
    vendors
        .iter()
        .find_map(|v| name.strip_prefix(v))
        .unwrap_or(name)
}

/// The vendors whose names the throughput and memory charts leave out.
pub const GPU_VENDORS: [&str; 2] = ["NVIDIA ", "AMD "];

/// Weight formats compared by default: the model's native 16-bit format, fp8, q8_0 and
/// q4_k_m.
pub fn default_formats(model: &ModelConfig) -> Vec<Format> {
    let native = match model.native_format {
        Format::Fp16 | Format::Bf16 | Format::Fp32 => model.native_format,
        _ => Format::Bf16,
    };
    vec![native, Format::Fp8, Format::Q8_0, Format::Q4KM]
}

/// The inference footprint per device of `model` on `hw` with each weight format in
/// `formats` (the scenario's own `weights`, if set and missing from the list, is
/// added), at the scenario's batch, prompt and gen, as a chart.
pub fn format_comparison(
    model: &ModelConfig,
    hw: &Hardware,
    engine: &Engine,
    scenario: &Scenario,
    formats: &[Format],
) -> Result<MemoryChart> {
    let mut formats: Vec<Format> = formats.to_vec();
    if let Some(w) = scenario.weights
        && !formats.contains(&w)
    {
        formats.push(w);
    }
    if formats.is_empty() {
        return Err(Error::invalid("weights", "no weight formats to compare"));
    }
    let mut bars = Vec::new();
    let mut kv_name = String::new();
    for f in formats {
        let s = Scenario {
            weights: Some(f),
            ..*scenario
        };
        let p = Predictor::new(model, hw, engine, &s)?;
        kv_name = p.precision().kv.name();
        let m = p.summary(s.batch, s.prompt, s.gen_tokens).memory;
        bars.push(MemoryBar::inference(
            &format!("{} ({} bits/weight)", f.name(), f.bits()),
            &m,
        ));
    }
    let layout = if scenario.gpus > 1 {
        format!(" · {} devices, {}", scenario.gpus, scenario.parallel.name())
    } else {
        String::new()
    };
    let device = short_device_name(&hw.name, &GPU_VENDORS);
    Ok(MemoryChart {
        title: format!(
            "Memory per device by weight format: {} on {device}",
            model.name
        ),
        subtitle: format!(
            "batch {} · context {} prompt + {} generated · KV {} · engine {}{}",
            scenario.batch, scenario.prompt, scenario.gen_tokens, kv_name, engine.id, layout
        ),
        bars,
        capacity_bytes: Some(hw.memory.usable_bytes()),
        capacity_label: device.to_string(),
        ..MemoryChart::default()
    })
}

/// Training memory per device at ZeRO stages 0 to 3 side by side (params, grads,
/// optimizer states, activations, overhead; from [`crate::train::zero_stages`]), with the
/// device capacity as a line.
pub fn zero_comparison(
    model: &ModelConfig,
    hw: &Hardware,
    cfg: &TrainConfig,
) -> Result<MemoryChart> {
    let stages = zero_stages(model, hw, cfg)?;
    let bars = stages
        .iter()
        .enumerate()
        .map(|(stage, m)| {
            MemoryBar::new(
                &format!("ZeRO-{stage}"),
                [
                    ("params", m.params_bytes),
                    ("grads", m.grads_bytes),
                    ("optimizer states", m.optimizer_bytes),
                    ("activations", m.activations_bytes),
                    ("overhead", m.overhead_bytes),
                ],
            )
        })
        .collect();
    Ok(MemoryChart {
        title: format!(
            "Training memory per device by ZeRO stage: {} on {}",
            model.name, hw.name
        ),
        subtitle: format!(
            "{} devices (tp {} · pp {}) · {} {} · {} · micro-batch {} · seq {} · recompute {}",
            cfg.gpus,
            cfg.tp,
            cfg.pp,
            cfg.method.name(),
            cfg.precision.name(),
            cfg.optimizer.name(),
            cfg.micro_batch,
            cfg.seq,
            cfg.recompute.name()
        ),
        bars,
        capacity_bytes: Some(hw.memory.usable_bytes()),
        capacity_label: hw.name.clone(),
        ..MemoryChart::default()
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn short_names_drop_only_listed_vendors() {
        assert_eq!(short_device_name("NVIDIA H100", &GPU_VENDORS), "H100");
        assert_eq!(short_device_name("AMD MI300X", &GPU_VENDORS), "MI300X");
        assert_eq!(
            short_device_name("Google TPU v5e", &GPU_VENDORS),
            "Google TPU v5e"
        );
        assert_eq!(short_device_name("Google TPU v5e", &["Google "]), "TPU v5e");
    }

    #[test]
    fn bars_sum_their_segments() {
        let b = MemoryBar::new("x", [("a", 1.0), ("b", 2.5)]);
        assert_eq!(b.total_bytes(), 3.5);
        assert_eq!(b.segments[1].name, "b");
    }
}
