//! Decode throughput and per-token latency against batch: one curve per device for the
//! engine's prediction (solid, with markers) and one for the ideal roofline (dashed),
//! the batch where decode turns compute-bound marked on the ideal curve, and a vertical
//! cut where device memory runs out.
//!
//! The data ([`ThroughputSeries`]) comes from [`crate::series::throughput_series`],
//! evaluated at powers of two up to the axis limit plus the exact memory and
//! compute-bound batches, so the curves end exactly at the cut. The chart is drawn in
//! steps: layout (value ranges), axes (two stacked panels sharing the batch axis),
//! series (memory cuts, curves, compute-bound marks), labels, legend.

use super::axes::{
    Axes, Frame, LogAxis, draw_axes, fit_axis_titles, fit_y_title, log_axis, log_ticks,
};
use super::draw::{
    Marker, Pen, Root, check_size, draw_dashed, draw_header, draw_line, fill_polygon, render_svg,
};
use super::labels::{Label, Leader, Near, Placer, Side};
use super::legend::{Footnote, Panel, Sample, line_sample};
use super::style::{GREY, INK, LABEL_PX, MarkerShape, SMALL_PX, TINY_PX, rgb, series_color};
use super::text::text_width;
use crate::error::{Error, Result};
use crate::series::{GPU_VENDORS, short_device_name};
use plotters::prelude::*;

pub use crate::series::{ThroughputPoint, ThroughputSeries};

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

/// Space above the plots for the title block, px.
const TOP: f64 = 58.0;
/// Distance between legend rows, px.
const LINE_H: f64 = 17.0;
/// Sides tried for a compute-bound label, nearest first.
const CB_SIDES: [Side; 8] = [
    Side::AboveLeft,
    Side::Above,
    Side::AboveRight,
    Side::Left,
    Side::BelowRight,
    Side::Right,
    Side::Below,
    Side::BelowLeft,
];
const FOOTNOTE: &str = "Throughput: batch × generated tokens / decode time. Latency: mean time per output token over the generation.";

/// The value ranges of both panels.
struct Ranges {
    /// Right end of the batch axis (a power of two, at least 2).
    x_hi: f64,
    /// Throughput axis, tokens/s, with headroom above the plateau for the labels.
    tps: (f64, f64),
    /// Latency axis, ms.
    lat: (f64, f64),
}

/// Layout: checks every value and finds the ranges.
fn ranges(series: &[ThroughputSeries]) -> Result<Ranges> {
    let mut x_max = 1.0f64;
    let (mut tps_lo, mut tps_hi) = (f64::INFINITY, 0.0f64);
    let (mut lat_lo, mut lat_hi) = (f64::INFINITY, 0.0f64);
    for p in series.iter().flat_map(|s| &s.points) {
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
        // the 80% band's low end stays on the panel (its high end is at most the roofline)
        if let Some([low, _]) = p.tokens_per_s_interval
            && low.is_finite()
            && low > 0.0
        {
            tps_lo = tps_lo.min(low);
        }
        let (a, b) = (p.token_latency_s * 1e3, p.roofline_token_latency_s * 1e3);
        lat_lo = lat_lo.min(a).min(b);
        lat_hi = lat_hi.max(a).max(b);
    }
    Ok(Ranges {
        x_hi: (x_max.log2().ceil().exp2()).max(2.0),
        tps: (tps_lo / 1.5, tps_hi * 5.0),
        lat: (lat_lo / 1.8, lat_hi * 1.8),
    })
}

/// One of the two stacked panels: its frame, its placer, and what it plots.
struct Half<'a> {
    frame: Frame<'a, LogAxis, LogAxis>,
    placer: Placer,
    /// The engine's value of a point on this panel's axis.
    value: fn(&ThroughputPoint) -> f64,
    /// The ideal roofline's.
    ideal: fn(&ThroughputPoint) -> f64,
}

impl<'a> Half<'a> {
    fn new(
        frame: Frame<'a, LogAxis, LogAxis>,
        value: fn(&ThroughputPoint) -> f64,
        ideal: fn(&ThroughputPoint) -> f64,
    ) -> Self {
        let placer = Placer::new(frame.rect.pad(-3.0));
        Half {
            frame,
            placer,
            value,
            ideal,
        }
    }
}

/// The batch axis: every k-th power of two labelled so that labels keep 8 px apart
/// across `plot_w` px, the others on the minor grid.
fn batch_axis(x_hi: f64, plot_w: f64) -> LogAxis {
    let x_exps = x_hi.log2().round() as i32;
    let label_w = text_width(&format!("{}", x_hi as u64), SMALL_PX) + 8.0;
    let per = plot_w / x_exps.max(1) as f64;
    let k = (1..=x_exps.max(1))
        .find(|k| per * *k as f64 >= label_w)
        .unwrap_or(x_exps.max(1));
    let powers = |labelled: bool| -> Vec<f64> {
        (0..=x_exps)
            .filter(|e| (e % k == 0) == labelled)
            .map(|e| 2f64.powi(e))
            .collect()
    };
    log_axis(1.0, x_hi, (powers(true), powers(false)))
}

/// A batch tick label: the whole number.
fn batch_tick(v: &f64) -> String {
    format!("{}", v.round() as u64)
}

/// Axes: throughput above, latency below, one batch axis.
fn axes<'a>(area: &Root<'a>, r: &Ranges, h: f64) -> Result<[Half<'a>; 2]> {
    let split = ((h - TOP - 8.0 - 46.0) / 2.0 + 6.0) as i32;
    let (upper, lower) = area.split_vertically(split);
    let (area_w, _) = area.dim_in_pixel();
    let x_axis = || batch_axis(r.x_hi, area_w as f64 - 80.0);
    let (_, top_h) = upper.dim_in_pixel();
    let (_, bottom_h) = lower.dim_in_pixel();
    let (top_title, top_size) = fit_y_title("Decode throughput (tokens/s)", top_h as f64 - 16.0);
    let (x_title, bottom_title, bottom_size) = fit_axis_titles(
        "Batch (concurrent sequences, log2 scale)",
        area_w as f64 - 80.0,
        "Per-token latency (ms)",
        bottom_h as f64 - 46.0,
    );
    let (tps_lo, tps_hi) = r.tps;
    let top = draw_axes(
        &upper,
        &Axes {
            margin_bottom: 12,
            ..Axes::new(&top_title, top_size)
        },
        x_axis(),
        log_axis(tps_lo, tps_hi, log_ticks(tps_lo, tps_hi)),
    )?;
    let (lat_lo, lat_hi) = r.lat;
    let bottom = draw_axes(
        &lower,
        &Axes {
            margin_top: 0,
            ..Axes::new(&bottom_title, bottom_size).with_x(&x_title, batch_tick)
        },
        x_axis(),
        log_axis(lat_lo, lat_hi, log_ticks(lat_lo, lat_hi)),
    )?;
    Ok([
        Half::new(top, |p| p.tokens_per_s, |p| p.roofline_tokens_per_s),
        Half::new(
            bottom,
            |p| p.token_latency_s * 1e3,
            |p| p.roofline_token_latency_s * 1e3,
        ),
    ])
}

/// Whether series `s` runs out of memory inside the batch axis.
fn has_cut(s: &ThroughputSeries, x_hi: f64) -> bool {
    s.max_batch >= 1 && (s.max_batch as f64) < x_hi
}

/// Series: the memory cuts first (under the curves), across both panels.
fn draw_cuts(
    root: &Root,
    series: &[ThroughputSeries],
    r: &Ranges,
    halves: &mut [Half; 2],
) -> Result<()> {
    for (i, s) in series.iter().enumerate() {
        if has_cut(s, r.x_hi) {
            let c = rgb(series_color(i)).mix(0.8);
            let (x, _) = halves[0].frame.px(s.max_batch as f64, r.tps.0);
            for half in halves.iter() {
                let rect = half.frame.rect;
                draw_dashed(root, &[(x, rect.y0), (x, rect.y1)], c, 2, (6.0, 4.0))?;
            }
            for half in halves.iter_mut() {
                let rect = half.frame.rect;
                half.placer.block_line(&[(x, rect.y0), (x, rect.y1)], 2.0);
            }
        }
    }
    Ok(())
}

/// Series: one device's ideal (dashed) and predicted (solid, with markers at powers of
/// two) curve on one panel.
fn draw_curve(
    root: &Root,
    half: &mut Half,
    visible: &[&ThroughputPoint],
    i: usize,
    alpha: f64,
) -> Result<()> {
    let color = rgb(series_color(i));
    let at = |f: fn(&ThroughputPoint) -> f64| -> Vec<(f64, f64)> {
        visible
            .iter()
            .map(|p| half.frame.px(p.batch as f64, f(p)))
            .collect()
    };
    let (ideal, pred) = (at(half.ideal), at(half.value));
    draw_dashed(root, &ideal, color.mix(alpha * 0.9), 2, (5.0, 4.0))?;
    half.placer.block_line(&ideal, 2.0);
    draw_line(root, &pred, color.mix(alpha), 2)?;
    half.placer.block_line(&pred, 2.0);
    let marker = Marker {
        shape: MarkerShape::of_series(i),
        r: 3.5,
        fill: color.mix(alpha),
        outline: WHITE.mix(alpha),
    };
    for (p, &(x, y)) in visible.iter().zip(&pred) {
        if p.batch.is_power_of_two() {
            marker.draw(root, x, y)?;
            half.placer.block_marker(x, y, 5.5);
        }
    }
    Ok(())
}

/// Series: every device's curves, faded where not even one sequence fits.
fn draw_curves(root: &Root, series: &[ThroughputSeries], halves: &mut [Half; 2]) -> Result<()> {
    for (i, s) in series.iter().enumerate() {
        let alpha = if s.max_batch == 0 { 0.45 } else { 1.0 };
        let visible: Vec<&ThroughputPoint> = s
            .points
            .iter()
            .filter(|p| s.max_batch == 0 || p.batch <= s.max_batch)
            .collect();
        if visible.is_empty() {
            continue;
        }
        for half in halves.iter_mut() {
            draw_curve(root, half, &visible, i, alpha)?;
        }
    }
    Ok(())
}

/// Series: each device's 80% interval of the predicted throughput as a shaded band
/// (clipped to the panel), under the curves.
fn draw_bands(root: &Root, series: &[ThroughputSeries], half: &Half) -> Result<()> {
    let rect = half.frame.rect;
    for (i, s) in series.iter().enumerate() {
        let alpha = if s.max_batch == 0 { 0.45 } else { 1.0 };
        let band: Vec<(f64, [f64; 2])> = (s.points.iter())
            .filter(|p| s.max_batch == 0 || p.batch <= s.max_batch)
            .filter_map(|p| p.tokens_per_s_interval.map(|b| (p.batch as f64, b)))
            .collect();
        if band.len() < 2 {
            continue;
        }
        let at = |x: f64, y: f64| {
            let (px, py) = half.frame.px(x, y);
            (px, py.clamp(rect.y0, rect.y1))
        };
        let mut pts: Vec<(f64, f64)> = band.iter().map(|(x, b)| at(*x, b[1])).collect();
        pts.extend(band.iter().rev().map(|(x, b)| at(*x, b[0])));
        fill_polygon(root, &pts, rgb(series_color(i)).mix(0.14 * alpha))?;
    }
    Ok(())
}

/// Where a device's decode turns compute-bound on the chart.
struct ComputeBound {
    /// The device (series index).
    device: usize,
    /// The diamond's centre, px.
    at: (f64, f64),
    /// The batch.
    batch: u64,
}

/// Series: the compute-bound batch as a diamond on the ideal throughput curve.
fn draw_compute_bound(
    root: &Root,
    series: &[ThroughputSeries],
    top: &mut Half,
) -> Result<Vec<ComputeBound>> {
    let mut marks = Vec::new();
    for (i, s) in series.iter().enumerate() {
        if let Some(cb) = s.compute_bound_batch
            && let Some(p) = s.points.iter().find(|p| p.batch == cb)
        {
            let (x, y) = top.frame.px(cb as f64, p.roofline_tokens_per_s);
            let diamond = Marker {
                shape: MarkerShape::Diamond,
                r: 5.0,
                fill: WHITE.to_rgba(),
                outline: rgb(series_color(i)).to_rgba(),
            };
            diamond.draw(root, x, y)?;
            top.placer.block_marker(x, y, 8.0);
            marks.push(ComputeBound {
                device: i,
                at: (x, y),
                batch: cb,
            });
        }
    }
    Ok(marks)
}

/// Labels: the compute-bound marks in the throughput panel, then the memory cuts in the
/// latency panel, left of the cut, from the bottom up.
fn draw_labels(
    root: &Root,
    series: &[ThroughputSeries],
    r: &Ranges,
    marks: &[ComputeBound],
    halves: &mut [Half; 2],
) -> Result<()> {
    let [top, bottom] = halves;
    for m in marks {
        let color = rgb(series_color(m.device));
        let label = Label::new(
            format!("compute-bound from batch {}", m.batch),
            Pen::new(TINY_PX, color),
        );
        let near = Near::marker(m.at.0, m.at.1, 8.0, 90.0, &CB_SIDES);
        top.placer
            .place(root, &label, &near, Leader::Line(color.mix(0.7)))?;
    }
    for (i, s) in series.iter().enumerate() {
        if has_cut(s, r.x_hi) {
            let color = rgb(series_color(i));
            let (x, _) = bottom.frame.px(s.max_batch as f64, r.lat.0);
            let label = Label::new(
                format!("memory full above batch {}", s.max_batch),
                Pen::new(TINY_PX, color),
            );
            let y1 = bottom.frame.rect.y1;
            let anchors = (0..12).map(|k| (x, y1 - 12.0 - 16.0 * k as f64)).collect();
            let near = Near::any(anchors, 4.0, 160.0, &[Side::Left, Side::Right]);
            bottom
                .placer
                .place(root, &label, &near, Leader::Level(color.mix(0.7)))?;
        }
    }
    Ok(())
}

/// Legend: devices with their memory and compute-bound notes, the line styles, the
/// marks, and the footnote.
fn draw_legend(
    root: &Root,
    series: &[ThroughputSeries],
    r: &Ranges,
    any_cb: bool,
    (w, h, panel_w): (f64, f64, f64),
) -> Result<()> {
    let mut p = Panel::new(root, w - panel_w + 8.0, panel_w - 16.0, TOP + 4.0, LINE_H);
    p.heading("Devices")?;
    for (i, s) in series.iter().enumerate() {
        let c = rgb(series_color(i)).to_rgba();
        let marker = Marker {
            shape: MarkerShape::of_series(i),
            r: 3.5,
            fill: c,
            outline: WHITE.to_rgba(),
        };
        let samples = [
            line_sample(24.0, c, None),
            Sample::Marker((12.0, 7.0), marker),
        ];
        let name = short_device_name(&s.label, &GPU_VENDORS);
        p.row(&samples, 30.0, name, LABEL_PX, INK)?;
        let note = match (s.max_batch, s.compute_bound_batch) {
            (0, _) => "does not fit at batch 1 (faded)".to_string(),
            (m, Some(c)) => format!("fits ≤ {m} · compute-bound ≥ {c}"),
            (m, None) => format!("fits ≤ {m} · memory-bound throughout"),
        };
        p.row(&[], 30.0, &note, SMALL_PX, GREY)?;
    }
    p.skip(0.5);
    p.heading("Lines")?;
    let solid = line_sample(24.0, GREY.to_rgba(), None);
    p.row(&[solid], 30.0, "engine prediction", SMALL_PX, INK)?;
    let dashed = line_sample(24.0, GREY.mix(0.9), Some((5.0, 4.0)));
    p.row(&[dashed], 30.0, "ideal roofline", SMALL_PX, INK)?;
    if (series.iter().flat_map(|s| &s.points)).any(|p| p.tokens_per_s_interval.is_some()) {
        let band = Sample::Fill([0.0, 1.0, 24.0, 13.0], GREY.mix(0.25));
        p.row(
            &[band],
            30.0,
            "80% interval (held-out errors)",
            SMALL_PX,
            INK,
        )?;
    }
    if any_cb {
        let diamond = Marker {
            shape: MarkerShape::Diamond,
            r: 4.0,
            fill: WHITE.to_rgba(),
            outline: GREY.to_rgba(),
        };
        let sample = Sample::Marker((12.0, 7.0), diamond);
        p.row(&[sample], 30.0, "decode turns compute-bound", SMALL_PX, INK)?;
    }
    if series.iter().any(|s| has_cut(s, r.x_hi)) {
        p.samples(&[Sample::Line {
            from: (12.0, 1.0),
            to: (12.0, 14.0),
            color: GREY.mix(0.8),
            width: 2,
            dash: Some((6.0, 4.0)),
        }])?;
        p.text(30.0, "memory full (curves stop)", SMALL_PX, INK)?;
    }
    p.footnote(&Footnote::new(FOOTNOTE, p.inner, h), p.y + LINE_H + 4.0)
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
    let r = ranges(series)?;
    let (w, h) = (opts.width as f64, opts.height as f64);
    let panel_w = (w * 0.26).clamp(220.0, 300.0);
    render_svg(opts.width, opts.height, |root| {
        draw_header(root, &opts.title, &opts.subtitle, w)?;
        let area = root.margin(TOP as i32, 8, 8, panel_w as i32);
        let mut halves = axes(&area, &r, h)?;
        draw_cuts(root, series, &r, &mut halves)?;
        draw_bands(root, series, &halves[0])?;
        draw_curves(root, series, &mut halves)?;
        let marks = draw_compute_bound(root, series, &mut halves[0])?;
        draw_labels(root, series, &r, &marks, &mut halves)?;
        draw_legend(root, series, &r, !marks.is_empty(), (w, h, panel_w))
    })
}
