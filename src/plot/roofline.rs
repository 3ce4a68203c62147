//! The roofline chart: log-log arithmetic intensity (FLOP/byte) against FLOP/s, one roof
//! per device (memory slope and compute ceiling at the dtype the weights' matmuls run
//! in), the ridge points, optional link ceilings (host link for offload, scale-up link),
//! and the model's ops as points.
//!
//! Ops come from the first device's [`Prediction::ops`]: prefill ops as circles, decode
//! ops as triangles, marker area proportional to the op's share of its phase's op time,
//! placed at the engine's predicted FLOP/s (`flops / time_s`), so the gap to the roof is
//! the engine's derating and overhead. The largest ops carry a number that a key in the
//! side panel explains. Ops without FLOPs (the embedding lookup) have no place on a log
//! axis and are counted in the footnote instead.

use super::{
    GREY, GRID, GRID_LIGHT, INK, LABEL_PX, MarkerShape, Placer, Rect, Root, SMALL_PX, Side,
    TINY_PX, chart_err, check_size, decade_ceil, decade_floor, decades, draw_dashed, draw_header,
    draw_label, draw_leader, draw_line, draw_marker, draw_text, draw_text_in, fill_rect,
    fit_axis_titles, fit_text, font, legend_text, marker_box, minor_decades, plot_rect, rgb,
    series_color, text_width, tick_label,
};
use crate::dtype::ComputeDtype;
use crate::error::{Error, Result};
use crate::hardware::Hardware;
use crate::model::graph::{Phase, Unit};
use crate::predict::Prediction;
use crate::units::{fmt_bytes_per_s, fmt_flops_per_s};
use plotters::prelude::*;
use plotters::style::text_anchor::{HPos, VPos};

/// Fill of prefill op markers (Okabe-Ito orange).
pub const PREFILL_COLOR: [u8; 3] = super::OKABE_ITO[1].1;
/// Fill of decode op markers (Okabe-Ito sky blue).
pub const DECODE_COLOR: [u8; 3] = super::OKABE_ITO[2].1;
/// Opacity of op markers on the chart (legend samples are opaque), so a reader of the
/// SVG can tell data points from legend samples.
pub const POINT_OPACITY: f64 = 0.85;
/// Stroke width of roof polylines (no other polyline uses it).
pub const ROOF_WIDTH: u32 = 3;

/// One device on the chart: its hardware entry (for link ceilings and dtype peaks) and
/// the prediction made for it.
#[derive(Debug, Clone, Copy)]
pub struct RooflineDevice<'a> {
    /// The device.
    pub hardware: &'a Hardware,
    /// The prediction for the model on this device (its `ops` are plotted for the first
    /// device only).
    pub prediction: &'a Prediction,
}

/// What to draw besides the roofs.
#[derive(Debug, Clone, PartialEq)]
pub struct RooflineOptions {
    /// Canvas width, px.
    pub width: u32,
    /// Canvas height, px.
    pub height: u32,
    /// Draw each device's host-link (PCIe) slope: the roof of weights streamed from host
    /// memory (offload).
    pub host_link: bool,
    /// Draw each device's link to its peers (the scale-up link, NVLink, ...; the host
    /// link where a device has none) as a slope: the roof of traffic between devices.
    pub scaleup_link: bool,
    /// Draw the first device's other compute ceilings its ops run against (attention at
    /// the activation dtype under fp8 weights, fp32 vector units for norms).
    pub unit_ceilings: bool,
    /// Number ops whose share of their phase's op time is at least this (0..1).
    pub label_min_share: f64,
    /// At most this many numbered ops per phase.
    pub max_labels_per_phase: usize,
    /// Title (default: model and devices).
    pub title: Option<String>,
}

impl Default for RooflineOptions {
    fn default() -> Self {
        RooflineOptions {
            width: 1100,
            height: 680,
            host_link: false,
            scaleup_link: false,
            unit_ceilings: true,
            label_min_share: 0.03,
            max_labels_per_phase: 6,
            title: None,
        }
    }
}

/// Sides tried for an op's number, nearest first.
const NUMBER_SIDES: [Side; 8] = [
    Side::Above,
    Side::Below,
    Side::Right,
    Side::Left,
    Side::AboveRight,
    Side::AboveLeft,
    Side::BelowRight,
    Side::BelowLeft,
];

/// One op as a point.
#[derive(Debug, Clone)]
struct OpPoint {
    name: &'static str,
    decode: bool,
    intensity: f64,
    flops_per_s: f64,
    share: f64,
}

/// A slope ceiling: a link's bandwidth.
#[derive(Debug, Clone)]
struct LinkRoof {
    device: usize,
    /// On the chart, next to the line.
    label: String,
    /// In the legend, with the link's role.
    legend: String,
    bytes_per_s: f64,
    peak: f64,
}

/// The compute dtype the prediction's weight matmuls run in, as the device publishes it.
fn matmul_dtype(hw: &Hardware, p: &Prediction) -> Option<ComputeDtype> {
    let w = p.config.weights;
    let a = p.config.activations;
    Some(hw.peak(w.compute_dtype(a)).1)
}

fn short_name(name: &str) -> &str {
    name.strip_prefix("NVIDIA ")
        .or_else(|| name.strip_prefix("AMD "))
        .or_else(|| name.strip_prefix("Google "))
        .or_else(|| name.strip_prefix("Intel "))
        .unwrap_or(name)
}

/// The default title line: model and devices.
pub fn default_title(devices: &[RooflineDevice]) -> String {
    let p = devices[0].prediction;
    let names: Vec<&str> = devices
        .iter()
        .map(|d| short_name(&d.prediction.hardware.name))
        .collect();
    format!("Roofline: {} on {}", p.model.name, names.join(" vs "))
}

/// The subtitle: format, batch, context, engine, layout.
pub fn subtitle(p: &Prediction) -> String {
    let c = &p.config;
    format!(
        "weights {} · KV {} · batch {} · context {} prompt + {} generated (decode step at {}) · engine {} · {}× device{}",
        c.weights,
        c.kv,
        c.batch,
        c.prompt,
        c.r#gen,
        p.decode.context,
        c.engine,
        p.hardware.count,
        if p.hardware.count > 1 {
            format!(", {}", c.parallel)
        } else {
            String::new()
        }
    )
}

fn op_points(p: &Prediction) -> (Vec<OpPoint>, usize) {
    let mut totals = [0.0f64; 2];
    for op in &p.ops {
        let i = usize::from(op.phase == Phase::Decode);
        if op.time_s.is_finite() && op.time_s > 0.0 {
            totals[i] += op.time_s;
        }
    }
    let mut pts = Vec::new();
    let mut skipped = 0;
    for op in &p.ops {
        let i = usize::from(op.phase == Phase::Decode);
        let ok = op.flops > 0.0
            && op.flops.is_finite()
            && op.time_s > 0.0
            && op.time_s.is_finite()
            && op.arithmetic_intensity > 0.0
            && op.arithmetic_intensity < 1e300;
        if !ok {
            skipped += 1;
            continue;
        }
        pts.push(OpPoint {
            name: op.kind.name(),
            decode: i == 1,
            intensity: op.arithmetic_intensity,
            flops_per_s: op.flops / op.time_s,
            share: if totals[i] > 0.0 {
                op.time_s / totals[i]
            } else {
                0.0
            },
        });
    }
    (pts, skipped)
}

/// Wraps `text` into lines of at most `max_w` px at `size`.
pub(crate) fn wrap(text: &str, max_w: f64, size: f64) -> Vec<String> {
    let mut lines = Vec::new();
    let mut cur = String::new();
    for word in text.split_whitespace() {
        let cand = if cur.is_empty() {
            word.to_string()
        } else {
            format!("{cur} {word}")
        };
        if text_width(&cand, size) <= max_w || cur.is_empty() {
            cur = cand;
        } else {
            lines.push(std::mem::take(&mut cur));
            cur = word.to_string();
        }
    }
    if !cur.is_empty() {
        lines.push(cur);
    }
    lines
        .into_iter()
        .map(|l| fit_text(&l, max_w, size, size, false).0)
        .collect()
}

/// Marker radius for an op with `share` of its phase's time: area ∝ share.
fn radius(share: f64) -> f64 {
    3.0 + 10.0 * share.clamp(0.0, 1.0).sqrt()
}

/// Renders the roofline chart to an SVG string.
///
/// Errors: no devices, a canvas outside 480×360 .. 20000×20000 px, or a prediction
/// with non-positive peak or bandwidth.
pub fn roofline(devices: &[RooflineDevice], opts: &RooflineOptions) -> Result<String> {
    if devices.is_empty() {
        return Err(Error::invalid(
            "gpu",
            "a roofline chart needs at least one device",
        ));
    }
    check_size(opts.width, opts.height, 480, 360)?;
    for d in devices {
        let h = &d.prediction.hardware;
        crate::error::require_positive("peak_flops_per_s", h.peak_flops_per_s)?;
        crate::error::require_positive("bandwidth_bytes_per_s", h.bandwidth_bytes_per_s)?;
    }
    let first = devices[0];
    let (mut points, skipped) = op_points(first.prediction);

    // links to draw, deduplicated by (name, bandwidth)
    let mut links: Vec<LinkRoof> = Vec::new();
    for (i, d) in devices.iter().enumerate() {
        let peak = d.prediction.hardware.peak_flops_per_s;
        let device_role = if d.hardware.scaleup_link.is_some() {
            "scale-up link"
        } else {
            "host link, between devices"
        };
        for (want, link, role) in [
            (opts.host_link, d.hardware.host_link.as_ref(), "host link"),
            (opts.scaleup_link, d.hardware.device_link(), device_role),
        ] {
            if let (true, Some(l)) = (want, link) {
                let bw = l.bytes_per_s_per_direction;
                if !(bw.is_finite() && bw > 0.0) {
                    continue;
                }
                let name = if l.name.is_empty() { role } else { &l.name };
                let label = format!("{name} {}", fmt_bytes_per_s(bw));
                let legend = format!("{name} ({role}) {}", fmt_bytes_per_s(bw));
                if !links.iter().any(|o| o.legend == legend) {
                    links.push(LinkRoof {
                        device: i,
                        label,
                        legend,
                        bytes_per_s: bw,
                        peak,
                    });
                }
            }
        }
    }

    // other compute ceilings of the first device
    let mut unit_ceilings: Vec<(String, f64)> = Vec::new();
    if opts.unit_ceilings {
        let main_peak = first.prediction.hardware.peak_flops_per_s;
        for pt in first.prediction.ops.iter() {
            let dtype = match pt.unit {
                Unit::Vector => ComputeDtype::Fp32,
                Unit::Matrix(d) => d,
            };
            {
                let (peak, used) = first.hardware.peak(dtype);
                let label = if pt.unit == Unit::Vector {
                    format!("{} vector units {}", used.name(), fmt_flops_per_s(peak))
                } else {
                    format!("{} matrix units {}", used.name(), fmt_flops_per_s(peak))
                };
                if (peak - main_peak).abs() > 1e-6 * main_peak
                    && peak > 0.0
                    && !unit_ceilings.iter().any(|(l, _)| *l == label)
                {
                    unit_ceilings.push((label, peak));
                }
            }
        }
    }

    // ranges
    let ridges: Vec<f64> = devices
        .iter()
        .map(|d| {
            d.prediction.hardware.peak_flops_per_s / d.prediction.hardware.bandwidth_bytes_per_s
        })
        .collect();
    let min_ridge = ridges.iter().copied().fold(f64::INFINITY, f64::min);
    let max_ridge = ridges.iter().copied().fold(0.0, f64::max);
    let max_peak = devices
        .iter()
        .map(|d| d.prediction.hardware.peak_flops_per_s)
        .fold(0.0, f64::max);
    let min_bw = devices
        .iter()
        .map(|d| d.prediction.hardware.bandwidth_bytes_per_s)
        .fold(f64::INFINITY, f64::min);
    let min_i = points
        .iter()
        .map(|p| p.intensity)
        .fold(min_ridge / 100.0, f64::min)
        .min(1.0);
    let max_i = points
        .iter()
        .map(|p| p.intensity * 2.0)
        .fold(max_ridge * 4.0, f64::max);
    let x_hi = decade_ceil(max_i);
    let x_lo = decade_floor(min_i).max(x_hi / 1e8);
    let y_hi = max_peak * 3.0;
    let min_y = points
        .iter()
        .map(|p| p.flops_per_s)
        .fold(x_lo * min_bw, f64::min)
        .min(
            unit_ceilings
                .iter()
                .map(|c| c.1)
                .fold(f64::INFINITY, f64::min),
        );
    let y_lo = decade_floor(min_y).max(decade_floor(y_hi / 1e9));
    // ranges are capped at 8 and 9 decades: ops beyond them are counted, not drawn
    let before = points.len();
    points.retain(|p| {
        p.intensity >= x_lo && p.intensity <= x_hi && p.flops_per_s >= y_lo && p.flops_per_s <= y_hi
    });
    let outside = before - points.len();

    let (w, h) = (opts.width as f64, opts.height as f64);
    let panel_w = (w * 0.28).clamp(230.0, 330.0);
    let top = 58.0;
    let mut svg = String::new();
    {
        let root = SVGBackend::with_string(&mut svg, (opts.width, opts.height)).into_drawing_area();
        root.fill(&WHITE).map_err(chart_err)?;

        // title and subtitle
        let title = opts.title.clone().unwrap_or_else(|| default_title(devices));
        draw_header(&root, &title, &subtitle(first.prediction), w)?;

        let area = root.margin(top as i32, 8, 8, panel_w as i32);
        let x_spec = (x_lo..x_hi)
            .log_scale()
            .with_key_points(decades(x_lo, x_hi))
            .with_light_points(minor_decades(x_lo, x_hi));
        let y_keys: Vec<f64> = decades(y_lo, y_hi)
            .into_iter()
            .filter(|v| *v <= y_hi)
            .collect();
        let y_spec = (y_lo..y_hi)
            .log_scale()
            .with_key_points(y_keys)
            .with_light_points(minor_decades(y_lo, y_hi));
        let (area_w, area_h) = area.dim_in_pixel();
        let (xdesc, ydesc, dsize) = fit_axis_titles(
            "Arithmetic intensity (FLOP/byte)",
            area_w as f64 - 80.0,
            "Performance (FLOP/s)",
            area_h as f64 - 50.0,
        );
        let mut chart = ChartBuilder::on(&area)
            .margin_top(4)
            .margin_right(10)
            .x_label_area_size(46)
            .y_label_area_size(70)
            .build_cartesian_2d(x_spec, y_spec)
            .map_err(chart_err)?;
        chart
            .configure_mesh()
            .x_desc(xdesc)
            .y_desc(ydesc)
            .x_label_formatter(&|v| tick_label(*v))
            .y_label_formatter(&|v| tick_label(*v))
            .label_style(font(SMALL_PX, false))
            .axis_desc_style(font(dsize, false))
            .bold_line_style(GRID.stroke_width(1))
            .light_line_style(GRID_LIGHT.stroke_width(1))
            .axis_style(INK.stroke_width(1))
            .draw()
            .map_err(chart_err)?;
        let (xr, yr) = chart.plotting_area().get_pixel_range();
        let plot = plot_rect(xr, yr);
        let to_px = |x: f64, y: f64| {
            let (a, b) = chart.backend_coord(&(x, y));
            (a as f64, b as f64)
        };
        let mut placer = Placer::new(plot.pad(-3.0));

        // roofs
        let mut roofs_px: Vec<Vec<(f64, f64)>> = Vec::new();
        for d in devices.iter() {
            let hw = &d.prediction.hardware;
            let (peak, bw) = (hw.peak_flops_per_s, hw.bandwidth_bytes_per_s);
            let start = if x_lo * bw >= y_lo {
                (x_lo, x_lo * bw)
            } else {
                (y_lo / bw, y_lo)
            };
            let pts = [start, (peak / bw, peak), (x_hi, peak)];
            roofs_px.push(pts.iter().map(|&(x, y)| to_px(x, y)).collect());
        }
        // link slopes
        let mut links_px: Vec<Vec<(f64, f64)>> = Vec::new();
        for l in &links {
            let bw = l.bytes_per_s;
            let x0 = x_lo.max(y_lo / bw);
            let x1 = x_hi.min(l.peak.min(y_hi) / bw);
            if x1 > x0 {
                links_px.push(vec![to_px(x0, x0 * bw), to_px(x1, x1 * bw)]);
            } else {
                links_px.push(Vec::new());
            }
        }
        // extra compute ceilings (first device)
        let fbw = first.prediction.hardware.bandwidth_bytes_per_s;
        let ceil_px: Vec<Vec<(f64, f64)>> = unit_ceilings
            .iter()
            .map(|(_, peak)| {
                let x0 = (peak / fbw).max(x_lo);
                vec![to_px(x0, *peak), to_px(x_hi, *peak)]
            })
            .collect();

        for (i, pts) in ceil_px.iter().enumerate() {
            let _ = i;
            draw_dashed(&root, pts, rgb(series_color(0)).mix(0.55), 1, 3.0, 3.0)?;
            placer.block_line(pts, 1.5);
        }
        for (l, pts) in links.iter().zip(&links_px) {
            if pts.len() == 2 {
                draw_dashed(
                    &root,
                    pts,
                    rgb(series_color(l.device)).mix(0.9),
                    2,
                    7.0,
                    4.0,
                )?;
                placer.block_line(pts, 2.0);
            }
        }
        for (i, pts) in roofs_px.iter().enumerate().rev() {
            draw_line(&root, pts, rgb(series_color(i)).to_rgba(), ROOF_WIDTH)?;
            placer.block_line(pts, 2.5);
        }

        // op markers, largest first so small ones stay visible
        let mut order: Vec<usize> = (0..points.len()).collect();
        order.sort_by(|&a, &b| points[b].share.total_cmp(&points[a].share).then(a.cmp(&b)));
        let mut centers = vec![(0.0, 0.0); points.len()];
        for &i in &order {
            let p = &points[i];
            let (x, y) = to_px(p.intensity, p.flops_per_s);
            centers[i] = (x, y);
            let (shape, fill) = if p.decode {
                (MarkerShape::TriangleUp, DECODE_COLOR)
            } else {
                (MarkerShape::Circle, PREFILL_COLOR)
            };
            let r = radius(p.share);
            draw_marker(
                &root,
                shape,
                x,
                y,
                r,
                rgb(fill).mix(POINT_OPACITY),
                RGBColor(40, 40, 40).mix(POINT_OPACITY),
            )?;
            placer.block_marker(x, y, marker_box(shape, x, y, r).x1 - x);
        }
        // ridge markers
        for (i, d) in devices.iter().enumerate() {
            let hw = &d.prediction.hardware;
            let (x, y) = to_px(
                hw.peak_flops_per_s / hw.bandwidth_bytes_per_s,
                hw.peak_flops_per_s,
            );
            draw_marker(
                &root,
                MarkerShape::Diamond,
                x,
                y,
                4.0,
                rgb(series_color(i)).to_rgba(),
                WHITE.to_rgba(),
            )?;
            placer.block_marker(x, y, marker_box(MarkerShape::Diamond, x, y, 4.0).x1 - x);
        }

        // which ops get numbers: the panel must have room for their key lines
        let line_h = 17.0;
        let panel_x = w - panel_w + 8.0;
        let panel_inner = panel_w - 16.0;
        let footnote = format!(
            "Points: the engine's predicted FLOP/s ({}); roofs: ideal peaks. TB/s = 1e12 bytes/s.{}",
            first.prediction.config.engine,
            if skipped > 0 {
                format!(" {skipped} op(s) without FLOPs (e.g. embedding lookup) not shown.")
            } else {
                String::new()
            } + &if outside > 0 {
                format!(" {outside} op(s) beyond the axes not shown.")
            } else {
                String::new()
            }
        );
        let foot_lines = wrap(&footnote, panel_inner, TINY_PX);
        let foot_top = h - 10.0 - foot_lines.len() as f64 * 13.0;
        let fixed_lines = 1.0
            + devices.len() as f64 * 2.0
            + 0.4
            + (2 * links.len() + unit_ceilings.len()) as f64
            + 1.4
            + 2.0
            + 2.0
            + 1.0;
        let room = ((foot_top - top - 6.0) / line_h - fixed_lines)
            .floor()
            .max(0.0) as usize;
        let mut candidates: Vec<usize> = Vec::new();
        for decode in [false, true] {
            let mut phase: Vec<usize> = (0..points.len())
                .filter(|&i| points[i].decode == decode && points[i].share >= opts.label_min_share)
                .collect();
            phase.sort_by(|&a, &b| points[b].share.total_cmp(&points[a].share).then(a.cmp(&b)));
            phase.truncate(opts.max_labels_per_phase);
            candidates.extend(phase);
        }
        let mut numbered: Vec<(usize, usize)> = Vec::new(); // (number, point)
        for i in candidates {
            if numbered.len() >= room {
                break;
            }
            let n = numbered.len() + 1;
            let text = n.to_string();
            let wt = text_width(&text, SMALL_PX) * 1.1 + 2.0;
            let (x, y) = centers[i];
            let shape = if points[i].decode {
                MarkerShape::TriangleUp
            } else {
                MarkerShape::Circle
            };
            let e = marker_box(shape, x, y, radius(points[i].share)).x1 - x;
            if let Some((r, lead)) = placer.near_marker(x, y, e, wt, SMALL_PX, 80.0, &NUMBER_SIDES)
            {
                if lead {
                    draw_leader(&root, (x, y), &r, GREY.mix(0.8))?;
                }
                draw_label(
                    &root,
                    &text,
                    &Rect {
                        x0: r.x0 + 1.0,
                        ..r
                    },
                    SMALL_PX,
                    true,
                    &INK,
                )?;
                numbered.push((n, i));
            }
        }
        // direct labels: device names on their flat roofs
        for (i, d) in devices.iter().enumerate() {
            let name = short_name(&d.prediction.hardware.name);
            let (text, size) = fit_text(name, 240.0, SMALL_PX, TINY_PX, false);
            let wt = text_width(&text, size);
            let (rx0, roof_y) = roofs_px[i][1];
            let rx1 = roofs_px[i][2].0;
            let anchors: Vec<(f64, f64)> = (0..12)
                .map(|k| (rx1 - wt / 2.0 - 6.0 - 30.0 * k as f64, roof_y))
                .filter(|a| a.0 - wt / 2.0 > rx0 + 8.0 || a.0 == rx1 - wt / 2.0 - 6.0)
                .collect();
            if let Some((r, _)) =
                placer.near_any(&anchors, wt, size, 4.0, 40.0, &[Side::Above, Side::Below])
            {
                draw_text_in(&root, &text, &r, size, &rgb(series_color(i)))?;
            }
        }
        // ridge labels
        for (i, d) in devices.iter().enumerate() {
            let hw = &d.prediction.hardware;
            let ridge = hw.peak_flops_per_s / hw.bandwidth_bytes_per_s;
            let (x, y) = to_px(ridge, hw.peak_flops_per_s);
            let text = format!("ridge {:.0} FLOP/B", ridge);
            let wt = text_width(&text, TINY_PX);
            if let Some((r, lead)) = placer.near(
                x,
                y,
                wt,
                TINY_PX,
                6.0,
                90.0,
                &[
                    Side::AboveLeft,
                    Side::Above,
                    Side::Left,
                    Side::AboveRight,
                    Side::BelowRight,
                    Side::Right,
                ],
            ) {
                if lead {
                    draw_leader(&root, (x, y), &r, rgb(series_color(i)).mix(0.7))?;
                }
                draw_text_in(&root, &text, &r, TINY_PX, &rgb(series_color(i)))?;
            }
        }

        // link and ceiling labels
        for (l, pts) in links.iter().zip(&links_px) {
            if pts.len() != 2 {
                continue;
            }
            let (text, size) = fit_text(&l.label, 260.0, TINY_PX, TINY_PX, false);
            let wt = text_width(&text, size);
            let anchors: Vec<(f64, f64)> = [0.5, 0.4, 0.6, 0.3, 0.7, 0.2, 0.8, 0.1, 0.9]
                .iter()
                .map(|t| {
                    (
                        pts[0].0 + (pts[1].0 - pts[0].0) * t,
                        pts[0].1 + (pts[1].1 - pts[0].1) * t,
                    )
                })
                .collect();
            if let Some((r, _)) = placer.near_any(
                &anchors,
                wt,
                size,
                3.0,
                12.0,
                &[Side::AboveLeft, Side::BelowRight],
            ) {
                draw_text_in(&root, &text, &r, size, &rgb(series_color(l.device)))?;
            }
        }
        for ((label, _), pts) in unit_ceilings.iter().zip(&ceil_px) {
            let wt = text_width(label, TINY_PX);
            let anchors: Vec<(f64, f64)> = (0..10)
                .map(|k| (pts[1].0 - wt / 2.0 - 8.0 - 40.0 * k as f64, pts[1].1))
                .filter(|a| a.0 - wt / 2.0 >= pts[0].0)
                .collect();
            if let Some((r, _)) = placer.near_any(
                &anchors,
                wt,
                TINY_PX,
                3.0,
                20.0,
                &[Side::Below, Side::Above],
            ) {
                draw_text_in(&root, label, &r, TINY_PX, &GREY)?;
            }
        }

        // side panel: legend and key
        let mut y = top + 4.0;
        let heading = |root: &Root, text: &str, y: f64| -> Result<()> {
            let (t, s) = fit_text(text, panel_inner, LABEL_PX, TINY_PX, true);
            draw_text(root, &t, panel_x, y, s, true, &INK, HPos::Left, VPos::Top)
        };
        heading(&root, "Roofs (ideal peaks)", y)?;
        y += line_h;
        for (i, d) in devices.iter().enumerate() {
            let p = d.prediction;
            fill_rect(
                &root,
                &Rect::new(panel_x, y + 5.0, panel_x + 22.0, y + 8.0),
                rgb(series_color(i)).to_rgba(),
            )?;
            let (t, s) = fit_text(
                &format!("{} ×{}", short_name(&p.hardware.name), p.hardware.count),
                panel_inner - 28.0,
                LABEL_PX,
                TINY_PX,
                false,
            );
            draw_text(
                &root,
                &t,
                panel_x + 28.0,
                y,
                s,
                false,
                &INK,
                HPos::Left,
                VPos::Top,
            )?;
            y += line_h;
            let dtype = matmul_dtype(d.hardware, p).map_or("", |d| d.name());
            let (t, s) = fit_text(
                &format!(
                    "{dtype} {} · {}",
                    fmt_flops_per_s(p.hardware.peak_flops_per_s),
                    fmt_bytes_per_s(p.hardware.bandwidth_bytes_per_s),
                ),
                panel_inner - 28.0,
                SMALL_PX,
                TINY_PX,
                false,
            );
            draw_text(
                &root,
                &t,
                panel_x + 28.0,
                y,
                s,
                false,
                &GREY,
                HPos::Left,
                VPos::Top,
            )?;
            y += line_h;
        }
        y += line_h * 0.4;
        for l in &links {
            draw_dashed(
                &root,
                &[(panel_x, y + 6.5), (panel_x + 22.0, y + 6.5)],
                rgb(series_color(l.device)).mix(0.9),
                2,
                7.0,
                4.0,
            )?;
            for (k, line) in wrap(&l.legend, panel_inner - 28.0, SMALL_PX)
                .iter()
                .take(2)
                .enumerate()
            {
                if k > 0 {
                    y += line_h - 3.0;
                }
                draw_text(
                    &root,
                    line,
                    panel_x + 28.0,
                    y,
                    SMALL_PX,
                    false,
                    &INK,
                    HPos::Left,
                    VPos::Top,
                )?;
            }
            y += line_h;
        }
        for (label, _) in &unit_ceilings {
            draw_dashed(
                &root,
                &[(panel_x, y + 6.5), (panel_x + 22.0, y + 6.5)],
                rgb(series_color(0)).mix(0.55),
                1,
                3.0,
                3.0,
            )?;
            legend_text(&root, label, panel_x + 28.0, y, panel_inner - 28.0)?;
            y += line_h;
        }
        y += line_h * 0.4;
        heading(
            &root,
            &format!("Ops on {}", short_name(&first.prediction.hardware.name)),
            y,
        )?;
        y += line_h;
        let (t, s) = fit_text(
            "marker area ∝ share of the phase's op time",
            panel_inner,
            SMALL_PX,
            TINY_PX,
            false,
        );
        draw_text(
            &root,
            &t,
            panel_x,
            y,
            s,
            false,
            &GREY,
            HPos::Left,
            VPos::Top,
        )?;
        y += line_h;
        let c = &first.prediction.config;
        for (decode, label) in [
            (false, format!("prefill: {} × {} tokens", c.batch, c.prompt)),
            (
                true,
                format!(
                    "decode step: {} × 1 token at context {}",
                    c.batch, first.prediction.decode.context
                ),
            ),
        ] {
            let (shape, fill) = if decode {
                (MarkerShape::TriangleUp, DECODE_COLOR)
            } else {
                (MarkerShape::Circle, PREFILL_COLOR)
            };
            draw_marker(
                &root,
                shape,
                panel_x + 11.0,
                y + 7.0,
                4.5,
                rgb(fill).to_rgba(),
                RGBColor(40, 40, 40).to_rgba(),
            )?;
            legend_text(&root, &label, panel_x + 28.0, y, panel_inner - 28.0)?;
            y += line_h;
        }
        if !numbered.is_empty() {
            y += line_h * 0.3;
            heading(&root, "Key: op, share of phase time", y)?;
            y += line_h;
            for (n, i) in &numbered {
                let p = &points[*i];
                let (shape, fill) = if p.decode {
                    (MarkerShape::TriangleUp, DECODE_COLOR)
                } else {
                    (MarkerShape::Circle, PREFILL_COLOR)
                };
                draw_marker(
                    &root,
                    shape,
                    panel_x + 5.0,
                    y + 7.0,
                    3.5,
                    rgb(fill).to_rgba(),
                    RGBColor(40, 40, 40).to_rgba(),
                )?;
                draw_text(
                    &root,
                    &n.to_string(),
                    panel_x + 28.0,
                    y,
                    SMALL_PX,
                    true,
                    &INK,
                    HPos::Right,
                    VPos::Top,
                )?;
                legend_text(
                    &root,
                    &format!("{}  {:.0}%", p.name, p.share * 100.0),
                    panel_x + 36.0,
                    y,
                    panel_inner - 36.0,
                )?;
                y += line_h;
            }
        }
        for (k, line) in foot_lines.iter().enumerate() {
            draw_text(
                &root,
                line,
                panel_x,
                foot_top + k as f64 * 13.0,
                TINY_PX,
                false,
                &GREY,
                HPos::Left,
                VPos::Top,
            )?;
        }
        root.present().map_err(chart_err)?;
    }
    Ok(svg)
}
