//! Serving at a request rate: p50 and p99 time to first token and time per output token
//! against the offered rate, with the saturation knee marked, above a timeline of the
//! batch and the KV cache in use at one rate (the knee's, else the highest).
//!
//! The data is a finished [`RateSweep`] from [`crate::simulate::simulate_rates`] (or one
//! run, which draws the timeline alone).

use super::axes::{
    Axes, Frame, LogAxis, draw_axes, fit_axis_titles, fit_y_title, log_axis, log_ticks,
};
use super::draw::{Marker, Pen, Root, check_size, draw_dashed, draw_header, draw_line, render_svg};
use super::labels::{Label, Leader, Near, Placer, Side};
use super::legend::{Footnote, Panel, Sample, line_sample};
use super::style::{GREY, INK, MarkerShape, SMALL_PX, TINY_PX, rgb, series_color};
use crate::error::{Error, Result};
use crate::simulate::{RateSweep, Run};
use plotters::coord::types::RangedCoordf64;
use plotters::prelude::*;

/// Chart size and titles.
#[derive(Debug, Clone, PartialEq)]
pub struct ServingOptions {
    /// Canvas width, px.
    pub width: u32,
    /// Canvas height, px.
    pub height: u32,
    /// Title line (empty: a title that says what the chart shows).
    pub title: String,
    /// Second line.
    pub subtitle: String,
}

impl Default for ServingOptions {
    fn default() -> Self {
        ServingOptions {
            width: 1000,
            height: 940,
            title: String::new(),
            subtitle: String::new(),
        }
    }
}

/// Space above the plots for the title block, px.
const TOP: f64 = 58.0;
const LINE_H: f64 = 17.0;
const DASH: (f64, f64) = (6.0, 4.0);
const FOOTNOTE: &str = "Poisson arrivals; the same requests at every rate. TTFT: arrival to first token. TPOT: (end-to-end - TTFT) / (output tokens - 1). Timeline: sequences per iteration and KV cache blocks in use.";
const FOOTNOTE_ONE: &str = "Sequences per iteration and KV cache blocks in use, sampled at up to 512 iterations of the run.";

/// The row whose timeline is drawn: the knee's, else the highest rate.
pub(crate) fn timeline_row(s: &RateSweep) -> Option<&Run> {
    let knee = s.knee.map(|k| k.rate_per_s);
    s.rows
        .iter()
        .find(|r| knee.is_some() && r.rate_per_s == knee)
        .or_else(|| {
            s.rows.iter().max_by(|a, b| {
                a.rate_per_s
                    .unwrap_or(0.0)
                    .total_cmp(&b.rate_per_s.unwrap_or(0.0))
            })
        })
}

/// Every value finite and latencies positive.
fn check(s: &RateSweep) -> Result<()> {
    for r in &s.rows {
        let vals = [r.ttft_s.p50, r.ttft_s.p99, r.tpot_s.p50, r.tpot_s.p99];
        if vals.iter().any(|v| !v.is_finite() || *v < 0.0) {
            return Err(Error::invalid(
                "simulate",
                "a latency is not a finite number",
            ));
        }
    }
    Ok(())
}

/// The rate axis (log) and the latency range of one quantity, ms.
fn latency_range(rows: &[&Run], f: fn(&Run) -> [f64; 2]) -> (f64, f64) {
    let vals: Vec<f64> = rows
        .iter()
        .flat_map(|r| f(r))
        .map(|v| v * 1e3)
        .filter(|v| *v > 0.0)
        .collect();
    let lo = vals.iter().copied().fold(f64::INFINITY, f64::min);
    let hi = vals.iter().copied().fold(0.0, f64::max);
    if lo.is_finite() && hi > 0.0 {
        (lo / 1.6, hi * 2.2)
    } else {
        (0.1, 10.0)
    }
}

fn rate_tick(v: &f64) -> String {
    super::axes::tick_label(*v)
}

fn plain(v: &f64) -> String {
    let s = format!("{v:.1}");
    s.trim_end_matches('0').trim_end_matches('.').to_string()
}

/// The titles of two stacked panels on an area `w x h` px: the upper panel's y title,
/// then the shared x title and the lower panel's y title, each fitted to its axis
/// (text and size).
struct Titles {
    top: (String, f64),
    x: String,
    bottom: (String, f64),
}

fn titles(x: &str, top: &str, bottom: &str, (w, h): (u32, u32)) -> Titles {
    let (w, h) = (w as f64, h as f64);
    let (xt, bt, size) = fit_axis_titles(x, w - 80.0, bottom, h / 2.0 - 52.0);
    Titles {
        top: fit_y_title(top, h / 2.0 - 30.0),
        x: xt,
        bottom: (bt, size),
    }
}

/// One latency panel: p50 solid and p99 dashed, markers at each rate.
fn draw_latency(
    root: &Root,
    frame: &Frame<LogAxis, LogAxis>,
    placer: &mut Placer,
    rows: &[&Run],
    f: fn(&Run) -> [f64; 2],
    color_base: usize,
) -> Result<()> {
    for k in 0..2 {
        let color = rgb(series_color(color_base + k));
        let pts: Vec<(f64, f64)> = rows
            .iter()
            .filter(|r| f(r)[k] > 0.0)
            .map(|r| frame.px(r.rate_per_s.unwrap_or(1.0), f(r)[k] * 1e3))
            .collect();
        if k == 0 {
            draw_line(root, &pts, color.to_rgba(), 2)?;
        } else {
            draw_dashed(root, &pts, color.to_rgba(), 2, DASH)?;
        }
        placer.block_line(&pts, 2.0);
        let marker = Marker {
            shape: MarkerShape::of_series(k),
            r: 3.5,
            fill: color.to_rgba(),
            outline: WHITE.to_rgba(),
        };
        for &(x, y) in &pts {
            marker.draw(root, x, y)?;
            placer.block_marker(x, y, 5.5);
        }
    }
    Ok(())
}

/// The knee: a dashed vertical line across both latency panels and its label.
fn draw_knee(
    root: &Root,
    s: &RateSweep,
    frames: [&Frame<LogAxis, LogAxis>; 2],
    placers: &mut [Placer; 2],
    y_lo: f64,
) -> Result<()> {
    let Some(k) = s.knee else {
        return Ok(());
    };
    let (x, _) = frames[0].px(k.rate_per_s, y_lo);
    let c = rgb(series_color(2));
    for (f, p) in frames.iter().zip(placers.iter_mut()) {
        let line = [(x, f.rect.y0), (x, f.rect.y1)];
        draw_dashed(root, &line, c.mix(0.9), 2, (3.0, 3.0))?;
        p.block_line(&line, 2.0);
    }
    let why = match k.queue_limit {
        Some(l) => format!("waits on {l}"),
        None => "iterations full".to_string(),
    };
    let bound = k
        .iteration_bound
        .map(|b| format!(", {b}-bound"))
        .unwrap_or_default();
    let text = format!(
        "knee: saturates at {} req/s (capacity {}; {why}{bound})",
        plain(&k.rate_per_s),
        plain(&k.capacity_requests_per_s)
    );
    let top = frames[0].rect;
    // the whole sentence, else the rate alone where there is no room for it
    for text in [text, format!("knee {} req/s", plain(&k.rate_per_s))] {
        let label = Label::new(text, Pen::new(SMALL_PX, c));
        let anchors = (0..10)
            .map(|i| (x, top.y0 + 14.0 + 16.0 * i as f64))
            .collect();
        let near = Near::any(anchors, 6.0, 400.0, &[Side::Left, Side::Right]);
        if placers[0].place(root, &label, &near, Leader::Level(c.mix(0.7)))? {
            break;
        }
    }
    Ok(())
}

/// The two latency panels.
fn latency_panels(root: &Root, area: &Root, s: &RateSweep) -> Result<()> {
    let rows: Vec<&Run> = s.rows.iter().filter(|r| r.rate_per_s.is_some()).collect();
    let rates: Vec<f64> = rows.iter().filter_map(|r| r.rate_per_s).collect();
    let (r_lo, r_hi) = (
        rates.iter().copied().fold(f64::INFINITY, f64::min),
        rates.iter().copied().fold(0.0, f64::max),
    );
    let (x_lo, x_hi) = (r_lo / 1.25, r_hi * 1.25);
    let ttft = |r: &Run| [r.ttft_s.p50, r.ttft_s.p99];
    let tpot = |r: &Run| [r.tpot_s.p50, r.tpot_s.p99];
    let (_, h) = area.dim_in_pixel();
    let (upper, lower) = area.split_vertically(h as i32 / 2 - 10);
    let t = titles(
        "Offered rate (requests/s, log scale)",
        "Time to first token (ms)",
        "Time per output token (ms)",
        area.dim_in_pixel(),
    );
    let x_axis = || log_axis(x_lo, x_hi, log_ticks(x_lo, x_hi));
    let (t_lo, t_hi) = latency_range(&rows, ttft);
    let top = draw_axes(
        &upper,
        &Axes {
            margin_bottom: 10,
            ..Axes::new(&t.top.0, t.top.1)
        },
        x_axis(),
        log_axis(t_lo, t_hi, log_ticks(t_lo, t_hi)),
    )?;
    let (p_lo, p_hi) = latency_range(&rows, tpot);
    let bottom = draw_axes(
        &lower,
        &Axes::new(&t.bottom.0, t.bottom.1).with_x(&t.x, rate_tick),
        x_axis(),
        log_axis(p_lo, p_hi, log_ticks(p_lo, p_hi)),
    )?;
    let mut placers = [
        Placer::new(top.rect.pad(-3.0)),
        Placer::new(bottom.rect.pad(-3.0)),
    ];
    draw_latency(root, &top, &mut placers[0], &rows, ttft, 0)?;
    draw_latency(root, &bottom, &mut placers[1], &rows, tpot, 0)?;
    draw_knee(root, s, [&top, &bottom], &mut placers, t_lo)
}

/// The two timeline panels of `run`: batch, then KV cache in use.
fn timeline_panels(root: &Root, area: &Root, run: &Run) -> Result<()> {
    let pts = run.timeline.points();
    let t_end = pts
        .last()
        .map_or(1.0, |p| p.t_s)
        .max(run.duration_s)
        .max(1e-3);
    let b_max = pts.iter().map(|p| p.batch).max().unwrap_or(1).max(1) as f64 * 1.15;
    let (_, h) = area.dim_in_pixel();
    let (upper, lower) = area.split_vertically(h as i32 / 2 - 10);
    let at = run
        .rate_per_s
        .map(|r| format!(" at {} req/s", plain(&r)))
        .unwrap_or_default();
    let t = titles(
        &format!("Time (s){at}"),
        "Batch (sequences)",
        "KV cache in use (%)",
        area.dim_in_pixel(),
    );
    let top: Frame<RangedCoordf64, RangedCoordf64> = draw_axes(
        &upper,
        &Axes {
            margin_bottom: 10,
            y_ticks: plain,
            y_tick_count: Some(5),
            ..Axes::new(&t.top.0, t.top.1)
        },
        0.0..t_end,
        0.0..b_max,
    )?;
    let bottom: Frame<RangedCoordf64, RangedCoordf64> = draw_axes(
        &lower,
        &Axes {
            y_ticks: plain,
            y_tick_count: Some(5),
            ..Axes::new(&t.bottom.0, t.bottom.1).with_x(&t.x, plain)
        },
        0.0..t_end,
        0.0..105.0,
    )?;
    let batch: Vec<(f64, f64)> = pts.iter().map(|p| top.px(p.t_s, p.batch as f64)).collect();
    draw_line(root, &batch, rgb(series_color(3)).to_rgba(), 1)?;
    let kv: Vec<(f64, f64)> = pts
        .iter()
        .map(|p| bottom.px(p.t_s, 100.0 * p.kv_fraction))
        .collect();
    draw_line(root, &kv, rgb(series_color(4)).to_rgba(), 1)
}

/// Legend: the line styles and the footnote.
fn draw_legend(root: &Root, s: &RateSweep, (w, h, panel_w): (f64, f64, f64)) -> Result<()> {
    let mut p = Panel::new(root, w - panel_w + 8.0, panel_w - 16.0, TOP + 4.0, LINE_H);
    if s.rows.len() > 1 {
        p.heading("Latency")?;
        for (k, name) in ["p50 (median)", "p99"].iter().enumerate() {
            let c = rgb(series_color(k)).to_rgba();
            let dash = (k == 1).then_some(DASH);
            let marker = Marker {
                shape: MarkerShape::of_series(k),
                r: 3.5,
                fill: c,
                outline: WHITE.to_rgba(),
            };
            p.row(
                &[
                    line_sample(24.0, c, dash),
                    Sample::Marker((12.0, 7.0), marker),
                ],
                30.0,
                name,
                SMALL_PX,
                INK,
            )?;
        }
        if s.knee.is_some() {
            let c = rgb(series_color(2)).mix(0.9);
            p.samples(&[Sample::Line {
                from: (12.0, 1.0),
                to: (12.0, 14.0),
                color: c,
                width: 2,
                dash: Some((3.0, 3.0)),
            }])?;
            p.text(30.0, "saturation knee", SMALL_PX, INK)?;
            p.skip(1.0);
        }
        p.skip(0.5);
    }
    p.heading("Timeline")?;
    let batch = line_sample(24.0, rgb(series_color(3)).to_rgba(), None);
    p.row(&[batch], 30.0, "sequences per iteration", SMALL_PX, INK)?;
    let kv = line_sample(24.0, rgb(series_color(4)).to_rgba(), None);
    p.row(&[kv], 30.0, "KV cache in use", SMALL_PX, INK)?;
    if let Some(r) = timeline_row(s) {
        let c = &r.config;
        let note = format!(
            "max_num_seqs {}, KV {:.1} GB",
            c.max_num_seqs.map_or("none".into(), |n| n.to_string()),
            c.kv_cache_bytes / 1e9
        );
        p.row(&[], 30.0, &note, TINY_PX, GREY)?;
    }
    let front = s.rows.first().map_or(0.0, |r| r.config.request_overhead_s);
    let note = if s.rows.len() > 1 && front > 0.0 {
        FOOTNOTE.replace(
            "TTFT: arrival to first token.",
            &format!(
                "TTFT: arrival to first token, with {} of the server's front end.",
                crate::units::fmt_seconds(front)
            ),
        )
    } else if s.rows.len() > 1 {
        FOOTNOTE.to_string()
    } else {
        FOOTNOTE_ONE.to_string()
    };
    p.footnote(&Footnote::new(&note, p.inner, h), p.y + LINE_H + 4.0)
}

/// Renders the chart of a rate sweep (with one row: its timeline only).
///
/// Errors: no rows, non-finite latencies, or a canvas outside 560×480 .. 20000×20000 px.
pub fn serving(s: &RateSweep, opts: &ServingOptions) -> Result<String> {
    let Some(row) = timeline_row(s) else {
        return Err(Error::invalid(
            "simulate",
            "a serving chart needs at least one run",
        ));
    };
    check(s)?;
    check_size(opts.width, opts.height, 560, 480)?;
    let (w, h) = (opts.width as f64, opts.height as f64);
    let panel_w = (w * 0.25).clamp(210.0, 280.0);
    let title = match (opts.title.is_empty(), s.rows.len()) {
        (false, _) => opts.title.as_str(),
        (true, 1) => "Serving: batch and KV cache over time",
        (true, _) => "Serving latency vs request rate",
    };
    render_svg(opts.width, opts.height, |root| {
        draw_header(root, title, &opts.subtitle, w)?;
        let area = root.margin(TOP as i32, 8, 8, panel_w as i32);
        if s.rows.len() > 1 {
            let (_, ah) = area.dim_in_pixel();
            let (lat, tl) = area.split_vertically((ah as f64 * 0.6) as i32);
            latency_panels(root, &lat, s)?;
            timeline_panels(root, &tl, row)?;
        } else {
            timeline_panels(root, &area, row)?;
        }
        draw_legend(root, s, (w, h, panel_w))
    })
}
