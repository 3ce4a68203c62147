//! Stacked memory bars: one bar per configuration, each a stack of named segments in
//! bytes, against a capacity line.
//!
//! The chart is generic ([`MemoryBar`] holds any named segments), so it serves both the
//! inference breakdown (weights, KV cache, activations, overhead; see
//! [`format_comparison`] for weight formats side by side) and training breakdowns
//! (params, grads, optimizer states, activations per ZeRO stage). Segments with the same
//! name share a colour across bars; the legend lists them in stacking order, top first.
//!
//! ```
//! use ridgeline::plot::memory::{MemoryBar, MemoryChart, memory};
//! let gb = 1e9;
//! let bar = |label: &str, shard: f64| MemoryBar::new(label, [
//!     ("params", 14.0 * gb / shard),
//!     ("grads", 14.0 * gb / shard),
//!     ("optimizer", 84.0 * gb / shard),
//!     ("activations", 20.0 * gb),
//! ]);
//! let chart = MemoryChart {
//!     title: "Training memory per device: 7B, 8 GPUs".into(),
//!     bars: vec![bar("ZeRO-0", 1.0), bar("ZeRO-3", 8.0)],
//!     capacity_bytes: Some(80.0 * gb),
//!     capacity_label: "A100 80GB".into(),
//!     ..MemoryChart::default()
//! };
//! let svg = memory(&chart)?;
//! assert!(svg.contains("optimizer"));
//! # Ok::<(), ridgeline::Error>(())
//! ```

use super::{
    GRID, INK, LABEL_PX, OKABE_ITO, Placer, Rect, SMALL_PX, Side, TINY_PX, chart_err, check_size,
    draw_dashed, draw_footnote, draw_header, draw_line, draw_text, draw_text_in, fill_rect,
    fit_axis_titles, fit_text, font, plot_rect, rgb, text_width,
};
use crate::dtype::Format;
use crate::engine::Engine;
use crate::error::{Error, Result};
use crate::hardware::Hardware;
use crate::memory::InferenceMemory;
use crate::model::ModelConfig;
use crate::predict::{Predictor, Scenario};
use plotters::prelude::*;
use plotters::style::text_anchor::{HPos, VPos};
use serde::Serialize;

/// One named part of a bar.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct MemorySegment {
    /// Legend name (`weights`, `KV cache`, `optimizer`, ...).
    pub name: String,
    /// Bytes (≥ 0).
    pub bytes: f64,
}

/// One stacked bar: segments from the bottom up.
#[derive(Debug, Clone, PartialEq, Serialize)]
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
    pub fn inference(label: &str, m: &InferenceMemory) -> MemoryBar {
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

/// A whole memory chart.
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

/// Segment fills in order of first appearance: alternating dark and light so that
/// neighbours differ in greyscale too.
const SEGMENT_COLORS: [usize; 8] = [5, 1, 3, 6, 2, 7, 4, 0];

fn segment_color(i: usize) -> [u8; 3] {
    OKABE_ITO[SEGMENT_COLORS[i % SEGMENT_COLORS.len()]].1
}

/// Black or white, whichever reads better on `c`.
fn ink_on(c: [u8; 3]) -> RGBColor {
    let l = 0.2126 * c[0] as f64 + 0.7152 * c[1] as f64 + 0.0722 * c[2] as f64;
    if l > 140.0 { INK } else { WHITE }
}

fn fmt_gb(bytes: f64) -> String {
    let gb = bytes / 1e9;
    if gb >= 100.0 {
        format!("{gb:.0}")
    } else if gb >= 10.0 {
        format!("{gb:.1}")
    } else {
        format!("{gb:.2}")
    }
}

/// A GB tick without SI prefixes (`1000`, `2.5`).
fn plain_tick(v: f64) -> String {
    let s = format!("{v:.2}");
    s.trim_end_matches('0').trim_end_matches('.').to_string()
}

/// "Nice" linear ticks from 0 to at least `max` (about 6 of them).
fn nice_ticks(max: f64) -> Vec<f64> {
    let raw = max / 6.0;
    let mag = 10f64.powi(raw.log10().floor() as i32);
    let step = [1.0, 2.0, 2.5, 5.0, 10.0]
        .iter()
        .map(|k| k * mag)
        .find(|s| *s >= raw)
        .unwrap_or(10.0 * mag);
    let n = (max / step).ceil() as usize;
    (0..=n).map(|i| i as f64 * step).collect()
}

/// Renders the chart.
///
/// Errors: no bars, a bar without segments, a negative or non-finite size, a
/// non-positive capacity, or a canvas outside 360×300 .. 20000×20000 px.
pub fn memory(chart: &MemoryChart) -> Result<String> {
    if chart.bars.is_empty() || chart.bars.iter().any(|b| b.segments.is_empty()) {
        return Err(Error::invalid(
            "memory chart",
            "needs at least one bar, each with at least one segment",
        ));
    }
    check_size(chart.width, chart.height, 360, 300)?;
    for b in &chart.bars {
        for s in &b.segments {
            crate::error::require_non_negative(&format!("{} / {}", b.label, s.name), s.bytes)?;
        }
    }
    if let Some(c) = chart.capacity_bytes {
        crate::error::require_positive("capacity_bytes", c)?;
    }
    // segment names in order of first appearance
    let mut names: Vec<&str> = Vec::new();
    for b in &chart.bars {
        for s in &b.segments {
            if !names.contains(&s.name.as_str()) {
                names.push(&s.name);
            }
        }
    }
    let color_of = |name: &str| segment_color(names.iter().position(|n| *n == name).unwrap_or(0));
    let max_total = chart
        .bars
        .iter()
        .map(MemoryBar::total_bytes)
        .fold(0.0, f64::max)
        .max(chart.capacity_bytes.unwrap_or(0.0));
    let max_gb = (max_total / 1e9).max(1e-6);
    let ticks = nice_ticks(max_gb * 1.12);
    let y_hi = ticks.last().copied().unwrap_or(1.0).max(max_gb * 1.12);

    let (w, h) = (chart.width as f64, chart.height as f64);
    let panel_w = (w * 0.24).clamp(150.0, 240.0);
    let top = 58.0;
    let label_area = 40.0;
    let n = chart.bars.len() as f64;
    let mut svg = String::new();
    {
        let root =
            SVGBackend::with_string(&mut svg, (chart.width, chart.height)).into_drawing_area();
        root.fill(&WHITE).map_err(chart_err)?;
        draw_header(&root, &chart.title, &chart.subtitle, w)?;

        let area = root.margin(top as i32, (label_area + 8.0) as i32, 8, panel_w as i32);
        let (area_w, area_h) = area.dim_in_pixel();
        let (_, ydesc, dsize) = fit_axis_titles(
            "",
            area_w as f64,
            "Memory per device (GB = 1e9 bytes)",
            area_h as f64 - 4.0,
        );
        let mut c = ChartBuilder::on(&area)
            .margin_top(4)
            .margin_right(10)
            .x_label_area_size(0)
            .y_label_area_size(70)
            .build_cartesian_2d(0.0..n, 0.0..y_hi)
            .map_err(chart_err)?;
        c.configure_mesh()
            .disable_x_mesh()
            .y_desc(ydesc)
            .y_labels(ticks.len())
            .y_label_formatter(&|v| plain_tick(*v))
            .label_style(font(SMALL_PX, false))
            .axis_desc_style(font(dsize, false))
            .bold_line_style(GRID.stroke_width(1))
            .light_line_style(TRANSPARENT)
            .axis_style(INK.stroke_width(1))
            .draw()
            .map_err(chart_err)?;
        let (xr, yr) = c.plotting_area().get_pixel_range();
        let plot = plot_rect(xr, yr);
        let to_px = |x: f64, y_gb: f64| {
            let (a, b) = c.backend_coord(&(x, y_gb));
            (a as f64, b as f64)
        };
        let mut placer = Placer::new(plot.pad(-2.0));
        let slot = (plot.x1 - plot.x0) / n;
        let bar_w = (slot * 0.62).min(110.0);

        // capacity line (under the bars' labels)
        let cap_y = chart.capacity_bytes.map(|cap| to_px(0.0, cap / 1e9).1);
        if let Some(y) = cap_y {
            draw_dashed(
                &root,
                &[(plot.x0, y), (plot.x1, y)],
                RGBColor(213, 94, 0).to_rgba(),
                2,
                8.0,
                4.0,
            )?;
        }
        for (i, b) in chart.bars.iter().enumerate() {
            let cx = to_px(i as f64 + 0.5, 0.0).0;
            let (x0, x1) = (cx - bar_w / 2.0, cx + bar_w / 2.0);
            let mut acc = 0.0;
            for s in &b.segments {
                let y_lo = to_px(0.0, acc / 1e9).1;
                acc += s.bytes;
                let y_hi_px = to_px(0.0, acc / 1e9).1;
                if y_lo - y_hi_px < 0.5 {
                    continue;
                }
                let col = color_of(&s.name);
                let r = Rect::new(x0, y_hi_px, x1, y_lo);
                fill_rect(&root, &r, rgb(col).to_rgba())?;
                // white separator on top of each segment
                draw_line(&root, &[(x0, y_hi_px), (x1, y_hi_px)], WHITE.to_rgba(), 1)?;
                let text = fmt_gb(s.bytes);
                let tw = text_width(&text, TINY_PX);
                if y_lo - y_hi_px >= TINY_PX + 3.0 && tw + 4.0 <= bar_w {
                    draw_text(
                        &root,
                        &text,
                        cx,
                        (y_lo + y_hi_px) / 2.0,
                        TINY_PX,
                        false,
                        &ink_on(col),
                        HPos::Center,
                        VPos::Center,
                    )?;
                }
            }
            placer.block(Rect::new(x0, to_px(0.0, acc / 1e9).1, x1, plot.y1));
            // total above the bar, and a warning when it does not fit
            let top_y = to_px(0.0, acc / 1e9).1;
            // the total in GB; without the unit (it is on the axis) where the slot is narrow
            let (mut total, mut tsize) = fit_text(
                &format!("{} GB", fmt_gb(acc)),
                slot - 4.0,
                SMALL_PX,
                TINY_PX,
                true,
            );
            if total.ends_with('…') {
                (total, tsize) = fit_text(&fmt_gb(acc), slot - 4.0, SMALL_PX, TINY_PX, true);
            }
            let tw = text_width(&total, tsize) * 1.1;
            let over = chart.capacity_bytes.is_some_and(|cap| acc > cap);
            let h_needed = if over { tsize + TINY_PX + 2.0 } else { tsize };
            let r = Rect::new(
                cx - tw / 2.0,
                top_y - 4.0 - h_needed,
                cx + tw / 2.0,
                top_y - 4.0,
            );
            placer.block_text(r);
            draw_text(
                &root,
                &total,
                cx,
                r.y0,
                tsize,
                true,
                &INK,
                HPos::Center,
                VPos::Top,
            )?;
            if over {
                let (t, s) = fit_text("does not fit", slot - 4.0, TINY_PX, TINY_PX, false);
                draw_text(
                    &root,
                    &t,
                    cx,
                    r.y0 + tsize + 2.0,
                    s,
                    false,
                    &RGBColor(213, 94, 0),
                    HPos::Center,
                    VPos::Top,
                )?;
            }
            // label under the axis: up to two lines
            let lines = super::roofline::wrap(&b.label, slot - 6.0, SMALL_PX);
            for (k, line) in lines.iter().take(2).enumerate() {
                let line = if k == 1 && lines.len() > 2 {
                    fit_text(&format!("{line} …"), slot - 6.0, SMALL_PX, SMALL_PX, false).0
                } else {
                    line.clone()
                };
                draw_text(
                    &root,
                    &line,
                    cx,
                    plot.y1 + 8.0 + 15.0 * k as f64,
                    SMALL_PX,
                    false,
                    &INK,
                    HPos::Center,
                    VPos::Top,
                )?;
            }
        }
        draw_line(
            &root,
            &[(plot.x0, plot.y1), (plot.x1, plot.y1)],
            INK.to_rgba(),
            1,
        )?;
        if let (Some(y), Some(cap)) = (cap_y, chart.capacity_bytes) {
            let text = if chart.capacity_label.is_empty() {
                format!("capacity {} GB", fmt_gb(cap))
            } else {
                format!("{}: {} GB capacity", chart.capacity_label, fmt_gb(cap))
            };
            let (text, size) = fit_text(&text, plot.x1 - plot.x0 - 8.0, SMALL_PX, TINY_PX, false);
            let wt = text_width(&text, size);
            let anchors: Vec<(f64, f64)> = (0..8)
                .map(|k| (plot.x1 - wt / 2.0 - 4.0 - k as f64 * slot / 2.0, y))
                .collect();
            if let Some((r, _)) =
                placer.near_any(&anchors, wt, size, 3.0, 20.0, &[Side::Above, Side::Below])
            {
                draw_text_in(&root, &text, &r, size, &RGBColor(213, 94, 0))?;
            }
        }

        // legend: stacking order, top first
        let panel_x = w - panel_w + 8.0;
        let inner = panel_w - 16.0;
        let mut y = top + 4.0;
        let (t, s) = fit_text("Segments (top first)", inner, LABEL_PX, TINY_PX, true);
        draw_text(&root, &t, panel_x, y, s, true, &INK, HPos::Left, VPos::Top)?;
        y += 18.0;
        for name in names.iter().rev() {
            if y > h - 40.0 {
                break;
            }
            fill_rect(
                &root,
                &Rect::new(panel_x, y + 1.0, panel_x + 14.0, y + 13.0),
                rgb(color_of(name)).to_rgba(),
            )?;
            let (t, s) = fit_text(name, inner - 22.0, LABEL_PX, TINY_PX, false);
            draw_text(
                &root,
                &t,
                panel_x + 22.0,
                y,
                s,
                false,
                &INK,
                HPos::Left,
                VPos::Top,
            )?;
            y += 18.0;
        }
        if chart.capacity_bytes.is_some() && y <= h - 40.0 {
            y += 4.0;
            draw_dashed(
                &root,
                &[(panel_x, y + 7.0), (panel_x + 14.0, y + 7.0)],
                RGBColor(213, 94, 0).to_rgba(),
                2,
                8.0,
                4.0,
            )?;
            let (t, s) = fit_text("device capacity", inner - 22.0, LABEL_PX, TINY_PX, false);
            draw_text(
                &root,
                &t,
                panel_x + 22.0,
                y,
                s,
                false,
                &INK,
                HPos::Left,
                VPos::Top,
            )?;
            y += 18.0;
        }
        draw_footnote(
            &root,
            "Numbers in GB (1e9 bytes); segments too thin to label are in the total.",
            panel_x,
            inner,
            y + 4.0,
            h,
        )?;
        root.present().map_err(chart_err)?;
    }
    Ok(svg)
}

fn short(name: &str) -> &str {
    name.strip_prefix("NVIDIA ")
        .or_else(|| name.strip_prefix("AMD "))
        .unwrap_or(name)
}

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
    Ok(MemoryChart {
        title: format!(
            "Memory per device by weight format: {} on {}",
            model.name,
            short(&hw.name)
        ),
        subtitle: format!(
            "batch {} · context {} prompt + {} generated · KV {} · engine {}{}",
            scenario.batch, scenario.prompt, scenario.gen_tokens, kv_name, engine.id, layout
        ),
        bars,
        capacity_bytes: Some(hw.memory.capacity_bytes),
        capacity_label: short(&hw.name).to_string(),
        ..MemoryChart::default()
    })
}

/// Training memory per device at ZeRO stages 0 to 3 side by side (params, grads,
/// optimizer states, activations, overhead; from [`crate::train::zero_stages`]), with the
/// device capacity as a line.
pub fn zero_comparison(
    model: &ModelConfig,
    hw: &Hardware,
    cfg: &crate::train::TrainConfig,
) -> Result<MemoryChart> {
    let stages = crate::train::zero_stages(model, hw, cfg)?;
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
        capacity_bytes: Some(hw.memory.capacity_bytes),
        capacity_label: hw.name.clone(),
        ..MemoryChart::default()
    })
}
