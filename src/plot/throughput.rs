//! Decode throughput and per-token latency against batch: one curve per device for the
//! engine's prediction (solid, with markers) and one for the ideal roofline (dashed),
//! the batch where decode turns compute-bound marked on the ideal curve, and a vertical
//! cut where device memory runs out.
//!
//! The data ([`ThroughputSeries`]) comes from [`Predictor::summary`], which is
//! allocation-free, evaluated at powers of two up to the axis limit plus the exact
//! memory and compute-bound batches, so the curves end exactly at the cut.

use super::{
    GREY, GRID, GRID_LIGHT, INK, LABEL_PX, MarkerShape, Placer, SMALL_PX, Side, TINY_PX, chart_err,
    check_size, draw_dashed, draw_footnote, draw_header, draw_leader, draw_line, draw_marker,
    draw_text, draw_text_in, fit_axis_titles, fit_text, font, legend_text, log_ticks, plot_rect,
    rgb, series_color, text_width, tick_label,
};
use crate::error::{Error, Result};
use crate::predict::Predictor;
use plotters::prelude::*;
use plotters::style::text_anchor::{HPos, VPos};
use serde::Serialize;

/// Decode throughput and latency at one batch.
#[derive(Debug, Clone, Copy, PartialEq, Serialize)]
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
}

/// One device's curves.
#[derive(Debug, Clone, PartialEq, Serialize)]
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

/// Chart size and titles.
#[derive(Debug, Clone, PartialEq)]
pub struct ThroughputOptions {
    /// Canvas width, px.
    pub width: u32,
    /// Canvas height, px.
    pub height: u32,
    /// Title line.
    pub title: String,
    /// Second line (formats, prompt, gen, engine).
    pub subtitle: String,
}

impl Default for ThroughputOptions {
    fn default() -> Self {
        ThroughputOptions {
            width: 1000,
            height: 720,
            title: "Decode throughput and latency vs batch".into(),
            subtitle: String::new(),
        }
    }
}

/// Evaluates one point.
pub fn point(pred: &Predictor, batch: u64, prompt: u64, gen_tokens: u64) -> ThroughputPoint {
    let s = pred.summary(batch, prompt, gen_tokens);
    let b = batch as f64;
    let ratio = |n: f64, d: f64| if d > 0.0 { n / d } else { 0.0 };
    let (step, ideal_step) = if gen_tokens > 0 {
        let g = crate::predict::GenerationReport::from_summary(&s, batch, gen_tokens);
        (g.tpot_s, g.roofline_tpot_s)
    } else {
        (s.decode.time_s, s.decode.roofline_time_s)
    };
    ThroughputPoint {
        batch,
        tokens_per_s: ratio(b, step),
        roofline_tokens_per_s: ratio(b, ideal_step),
        token_latency_s: step,
        roofline_token_latency_s: ideal_step,
        fits: s.memory.fits,
    }
}

/// The batch axis limit for a set of devices: the next power of two at or above every
/// device's memory limit and compute-bound batch, within 8 ..= 4096.
pub fn batch_limit(preds: &[&Predictor], prompt: u64, gen_tokens: u64) -> Result<u64> {
    let mut need = 8u64;
    for p in preds {
        let m = p.predict(1, prompt, gen_tokens)?.memory.max_batch;
        need = need.max(m.saturating_add(1).min(4096));
        if let Some(c) = p.compute_bound_batch(crate::predict::decode_context(prompt, gen_tokens)) {
            need = need.max(c.saturating_mul(2).min(4096));
        }
    }
    Ok(need.next_power_of_two().min(4096))
}

/// Evaluates a device at powers of two from 1 to `limit` and at its exact memory limit
/// and compute-bound batch (when within `limit`).
pub fn series(
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
    let max_batch = pred.predict(1, prompt, gen_tokens)?.memory.max_batch;
    let cb = pred.compute_bound_batch(crate::predict::decode_context(prompt, gen_tokens));
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
            .map(|b| point(pred, b, prompt, gen_tokens))
            .collect(),
        max_batch,
        compute_bound_batch: cb,
    })
}

/// Default titles for a model on some devices.
pub fn titles(pred: &Predictor, prompt: u64, gen_tokens: u64) -> (String, String) {
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

fn short(name: &str) -> &str {
    name.strip_prefix("NVIDIA ")
        .or_else(|| name.strip_prefix("AMD "))
        .unwrap_or(name)
}

/// Renders the chart.
///
/// Errors: no series, a series without points, non-finite values, or a canvas outside
/// 480×400 .. 20000×20000 px.
pub fn throughput(series: &[ThroughputSeries], opts: &ThroughputOptions) -> Result<String> {
    if series.is_empty() || series.iter().any(|s| s.points.is_empty()) {
        return Err(Error::invalid(
            "gpu",
            "a throughput chart needs at least one device with points",
        ));
    }
    check_size(opts.width, opts.height, 480, 400)?;
    let mut x_max = 1.0f64;
    let (mut tps_lo, mut tps_hi) = (f64::INFINITY, 0.0f64);
    let (mut lat_lo, mut lat_hi) = (f64::INFINITY, 0.0f64);
    for s in series {
        for p in &s.points {
            for v in [
                p.tokens_per_s,
                p.roofline_tokens_per_s,
                p.token_latency_s,
                p.roofline_token_latency_s,
            ] {
                if !(v.is_finite() && v > 0.0) {
                    return Err(Error::invalid(
                        "throughput point",
                        format!("batch {}: values must be finite and > 0", p.batch),
                    ));
                }
            }
            x_max = x_max.max(p.batch as f64);
            tps_lo = tps_lo.min(p.tokens_per_s).min(p.roofline_tokens_per_s);
            tps_hi = tps_hi.max(p.tokens_per_s).max(p.roofline_tokens_per_s);
            let (a, b) = (p.token_latency_s * 1e3, p.roofline_token_latency_s * 1e3);
            lat_lo = lat_lo.min(a).min(b);
            lat_hi = lat_hi.max(a).max(b);
        }
    }
    let x_hi = (x_max.log2().ceil().exp2()).max(2.0);
    let x_exps = x_hi.log2().round() as i32;
    // headroom: room above the throughput plateau for the compute-bound labels
    let (tps_lo, tps_hi) = (tps_lo / 1.5, tps_hi * 5.0);
    let (lat_lo, lat_hi) = (lat_lo / 1.8, lat_hi * 1.8);

    let (w, h) = (opts.width as f64, opts.height as f64);
    let panel_w = (w * 0.26).clamp(220.0, 300.0);
    let top = 58.0;
    let mut svg = String::new();
    {
        let root = SVGBackend::with_string(&mut svg, (opts.width, opts.height)).into_drawing_area();
        root.fill(&WHITE).map_err(chart_err)?;
        draw_header(&root, &opts.title, &opts.subtitle, w)?;

        let area = root.margin(top as i32, 8, 8, panel_w as i32);
        let split = ((h - top - 8.0 - 46.0) / 2.0 + 6.0) as i32;
        let (upper, lower) = area.split_vertically(split);
        // label every k-th power of two so that labels keep 8 px apart
        let plot_w = area.dim_in_pixel().0 as f64 - 80.0;
        let label_w = text_width(&format!("{}", x_hi as u64), SMALL_PX) + 8.0;
        let per = plot_w / x_exps.max(1) as f64;
        let k = (1..=x_exps.max(1))
            .find(|k| per * *k as f64 >= label_w)
            .unwrap_or(x_exps.max(1));
        let x_keys: Vec<f64> = (0..=x_exps)
            .filter(|e| e % k == 0)
            .map(|e| 2f64.powi(e))
            .collect();
        let x_light: Vec<f64> = (0..=x_exps)
            .filter(|e| e % k != 0)
            .map(|e| 2f64.powi(e))
            .collect();
        let x_spec = || {
            (1.0..x_hi)
                .log_scale()
                .with_key_points(x_keys.clone())
                .with_light_points(x_light.clone())
        };
        let (area_w, _) = area.dim_in_pixel();
        let (_, top_h) = upper.dim_in_pixel();
        let (_, bottom_h) = lower.dim_in_pixel();
        let (_, top_desc, top_size) = fit_axis_titles(
            "",
            area_w as f64,
            "Decode throughput (tokens/s)",
            top_h as f64 - 16.0,
        );
        let (xdesc, bottom_desc, bottom_size) = fit_axis_titles(
            "Batch (concurrent sequences, log2 scale)",
            area_w as f64 - 80.0,
            "Per-token latency (ms)",
            bottom_h as f64 - 46.0,
        );
        let (tps_major, tps_minor) = log_ticks(tps_lo, tps_hi);
        let mut top_chart = ChartBuilder::on(&upper)
            .margin_top(4)
            .margin_right(10)
            .margin_bottom(12)
            .x_label_area_size(0)
            .y_label_area_size(70)
            .build_cartesian_2d(
                x_spec(),
                (tps_lo..tps_hi)
                    .log_scale()
                    .with_key_points(tps_major)
                    .with_light_points(tps_minor),
            )
            .map_err(chart_err)?;
        top_chart
            .configure_mesh()
            .y_desc(top_desc)
            .y_label_formatter(&|v| tick_label(*v))
            .label_style(font(SMALL_PX, false))
            .axis_desc_style(font(top_size, false))
            .bold_line_style(GRID.stroke_width(1))
            .light_line_style(GRID_LIGHT.stroke_width(1))
            .axis_style(INK.stroke_width(1))
            .draw()
            .map_err(chart_err)?;
        let (lat_major, lat_minor) = log_ticks(lat_lo, lat_hi);
        let mut bottom_chart = ChartBuilder::on(&lower)
            .margin_top(0)
            .margin_right(10)
            .x_label_area_size(46)
            .y_label_area_size(70)
            .build_cartesian_2d(
                x_spec(),
                (lat_lo..lat_hi)
                    .log_scale()
                    .with_key_points(lat_major)
                    .with_light_points(lat_minor),
            )
            .map_err(chart_err)?;
        bottom_chart
            .configure_mesh()
            .x_desc(xdesc)
            .y_desc(bottom_desc)
            .x_label_formatter(&|v| format!("{}", v.round() as u64))
            .y_label_formatter(&|v| tick_label(*v))
            .label_style(font(SMALL_PX, false))
            .axis_desc_style(font(bottom_size, false))
            .bold_line_style(GRID.stroke_width(1))
            .light_line_style(GRID_LIGHT.stroke_width(1))
            .axis_style(INK.stroke_width(1))
            .draw()
            .map_err(chart_err)?;

        let rect_of = |xr: std::ops::Range<i32>, yr: std::ops::Range<i32>| plot_rect(xr, yr);
        let (xr, yr) = top_chart.plotting_area().get_pixel_range();
        let top_rect = rect_of(xr, yr);
        let (xr, yr) = bottom_chart.plotting_area().get_pixel_range();
        let bottom_rect = rect_of(xr, yr);
        let top_px = |x: f64, y: f64| {
            let (a, b) = top_chart.backend_coord(&(x, y));
            (a as f64, b as f64)
        };
        let bottom_px = |x: f64, y: f64| {
            let (a, b) = bottom_chart.backend_coord(&(x, y));
            (a as f64, b as f64)
        };
        let mut top_placer = Placer::new(top_rect.pad(-3.0));
        let mut bottom_placer = Placer::new(bottom_rect.pad(-3.0));

        // memory cuts first (under the curves)
        for (i, s) in series.iter().enumerate() {
            let b = s.max_batch as f64;
            if s.max_batch >= 1 && b < x_hi {
                let c = rgb(series_color(i)).mix(0.8);
                let (x, _) = top_px(b, tps_lo);
                for r in [&top_rect, &bottom_rect] {
                    let pts = [(x, r.y0), (x, r.y1)];
                    draw_dashed(&root, &pts, c, 2, 6.0, 4.0)?;
                }
                top_placer.block_line(&[(x, top_rect.y0), (x, top_rect.y1)], 2.0);
                bottom_placer.block_line(&[(x, bottom_rect.y0), (x, bottom_rect.y1)], 2.0);
            }
        }
        // curves
        for (i, s) in series.iter().enumerate() {
            let color = rgb(series_color(i));
            let alpha = if s.max_batch == 0 { 0.45 } else { 1.0 };
            let visible: Vec<&ThroughputPoint> = s
                .points
                .iter()
                .filter(|p| s.max_batch == 0 || p.batch <= s.max_batch)
                .collect();
            if visible.is_empty() {
                continue;
            }
            for (to, get, get_ideal, placer) in [
                (
                    &top_px as &dyn Fn(f64, f64) -> (f64, f64),
                    (|p: &ThroughputPoint| p.tokens_per_s) as fn(&ThroughputPoint) -> f64,
                    (|p: &ThroughputPoint| p.roofline_tokens_per_s) as fn(&ThroughputPoint) -> f64,
                    &mut top_placer,
                ),
                (
                    &bottom_px,
                    |p: &ThroughputPoint| p.token_latency_s * 1e3,
                    |p: &ThroughputPoint| p.roofline_token_latency_s * 1e3,
                    &mut bottom_placer,
                ),
            ] {
                let ideal: Vec<(f64, f64)> = visible
                    .iter()
                    .map(|p| to(p.batch as f64, get_ideal(p)))
                    .collect();
                draw_dashed(&root, &ideal, color.mix(alpha * 0.9), 2, 5.0, 4.0)?;
                placer.block_line(&ideal, 2.0);
                let pred: Vec<(f64, f64)> =
                    visible.iter().map(|p| to(p.batch as f64, get(p))).collect();
                draw_line(&root, &pred, color.mix(alpha), 2)?;
                placer.block_line(&pred, 2.0);
                let shape = MarkerShape::of_series(i);
                for p in visible.iter().filter(|p| p.batch.is_power_of_two()) {
                    let (x, y) = to(p.batch as f64, get(p));
                    draw_marker(&root, shape, x, y, 3.5, color.mix(alpha), WHITE.mix(alpha))?;
                    placer.block_marker(x, y, 5.5);
                }
            }
        }
        // compute-bound batch: a ring on the ideal throughput curve
        let any_cut = series
            .iter()
            .any(|s| s.max_batch >= 1 && (s.max_batch as f64) < x_hi);
        let mut cb_marks: Vec<(usize, f64, f64, u64)> = Vec::new();
        let mut any_cb = false;
        for (i, s) in series.iter().enumerate() {
            if let Some(cb) = s.compute_bound_batch
                && let Some(p) = s.points.iter().find(|p| p.batch == cb)
            {
                let (x, y) = top_px(cb as f64, p.roofline_tokens_per_s);
                draw_marker(
                    &root,
                    MarkerShape::Diamond,
                    x,
                    y,
                    5.0,
                    WHITE.to_rgba(),
                    rgb(series_color(i)).to_rgba(),
                )?;
                top_placer.block_marker(x, y, 8.0);
                cb_marks.push((i, x, y, cb));
                any_cb = true;
            }
        }
        for (i, x, y, cb) in cb_marks {
            let text = format!("compute-bound from batch {cb}");
            let wt = text_width(&text, TINY_PX);
            if let Some((r, lead)) = top_placer.near_marker(
                x,
                y,
                8.0,
                wt,
                TINY_PX,
                90.0,
                &[
                    Side::AboveLeft,
                    Side::Above,
                    Side::AboveRight,
                    Side::Left,
                    Side::BelowRight,
                    Side::Right,
                    Side::Below,
                    Side::BelowLeft,
                ],
            ) {
                if lead {
                    draw_leader(&root, (x, y), &r, rgb(series_color(i)).mix(0.7))?;
                }
                draw_text_in(&root, &text, &r, TINY_PX, &rgb(series_color(i)))?;
            }
        }
        // memory labels: in the latency panel, left of the cut, from the bottom up
        for (i, s) in series.iter().enumerate() {
            let b = s.max_batch as f64;
            if s.max_batch >= 1 && b < x_hi {
                let (x, _) = bottom_px(b, lat_lo);
                let text = format!("memory full above batch {}", s.max_batch);
                let wt = text_width(&text, TINY_PX);
                let anchors: Vec<(f64, f64)> = (0..12)
                    .map(|k| (x, bottom_rect.y1 - 12.0 - 16.0 * k as f64))
                    .collect();
                if let Some((r, lead)) = bottom_placer.near_any(
                    &anchors,
                    wt,
                    TINY_PX,
                    4.0,
                    160.0,
                    &[Side::Left, Side::Right],
                ) {
                    if lead {
                        let ly = (r.y0 + r.y1) / 2.0;
                        let lx = if r.x1 < x { r.x1 } else { r.x0 };
                        draw_line(
                            &root,
                            &[(x, ly), (lx, ly)],
                            rgb(series_color(i)).mix(0.7),
                            1,
                        )?;
                    }
                    draw_text_in(&root, &text, &r, TINY_PX, &rgb(series_color(i)))?;
                }
            }
        }

        // side panel
        let line_h = 17.0;
        let panel_x = w - panel_w + 8.0;
        let inner = panel_w - 16.0;
        let mut y = top + 4.0;
        let (t, s) = fit_text("Devices", inner, LABEL_PX, TINY_PX, true);
        draw_text(&root, &t, panel_x, y, s, true, &INK, HPos::Left, VPos::Top)?;
        y += line_h;
        for (i, s) in series.iter().enumerate() {
            let c = rgb(series_color(i));
            draw_line(
                &root,
                &[(panel_x, y + 7.0), (panel_x + 24.0, y + 7.0)],
                c.to_rgba(),
                2,
            )?;
            draw_marker(
                &root,
                MarkerShape::of_series(i),
                panel_x + 12.0,
                y + 7.0,
                3.5,
                c.to_rgba(),
                WHITE.to_rgba(),
            )?;
            let (t, sz) = fit_text(short(&s.label), inner - 30.0, LABEL_PX, TINY_PX, false);
            draw_text(
                &root,
                &t,
                panel_x + 30.0,
                y,
                sz,
                false,
                &INK,
                HPos::Left,
                VPos::Top,
            )?;
            y += line_h;
            let note = match (s.max_batch, s.compute_bound_batch) {
                (0, _) => "does not fit at batch 1 (faded)".to_string(),
                (m, Some(c)) => format!("fits ≤ {m} · compute-bound ≥ {c}"),
                (m, None) => format!("fits ≤ {m} · memory-bound throughout"),
            };
            let (t, sz) = fit_text(&note, inner - 30.0, SMALL_PX, TINY_PX, false);
            draw_text(
                &root,
                &t,
                panel_x + 30.0,
                y,
                sz,
                false,
                &GREY,
                HPos::Left,
                VPos::Top,
            )?;
            y += line_h;
        }
        y += line_h * 0.5;
        let (t, s) = fit_text("Lines", inner, LABEL_PX, TINY_PX, true);
        draw_text(&root, &t, panel_x, y, s, true, &INK, HPos::Left, VPos::Top)?;
        y += line_h;
        draw_line(
            &root,
            &[(panel_x, y + 7.0), (panel_x + 24.0, y + 7.0)],
            GREY.to_rgba(),
            2,
        )?;
        draw_text(
            &root,
            "engine prediction",
            panel_x + 30.0,
            y,
            SMALL_PX,
            false,
            &INK,
            HPos::Left,
            VPos::Top,
        )?;
        y += line_h;
        draw_dashed(
            &root,
            &[(panel_x, y + 7.0), (panel_x + 24.0, y + 7.0)],
            GREY.mix(0.9),
            2,
            5.0,
            4.0,
        )?;
        draw_text(
            &root,
            "ideal roofline",
            panel_x + 30.0,
            y,
            SMALL_PX,
            false,
            &INK,
            HPos::Left,
            VPos::Top,
        )?;
        y += line_h;
        if any_cb {
            draw_marker(
                &root,
                MarkerShape::Diamond,
                panel_x + 12.0,
                y + 7.0,
                4.0,
                WHITE.to_rgba(),
                GREY.to_rgba(),
            )?;
            legend_text(
                &root,
                "decode turns compute-bound",
                panel_x + 30.0,
                y,
                inner - 30.0,
            )?;
            y += line_h;
        }
        if any_cut {
            draw_dashed(
                &root,
                &[(panel_x + 12.0, y + 1.0), (panel_x + 12.0, y + 14.0)],
                GREY.mix(0.8),
                2,
                6.0,
                4.0,
            )?;
            legend_text(
                &root,
                "memory full (curves stop)",
                panel_x + 30.0,
                y,
                inner - 30.0,
            )?;
        }
        draw_footnote(
            &root,
            "Throughput: batch × generated tokens / decode time. Latency: mean time per output token over the generation.",
            panel_x,
            inner,
            y + line_h + 4.0,
            h,
        )?;
        root.present().map_err(chart_err)?;
    }
    Ok(svg)
}
