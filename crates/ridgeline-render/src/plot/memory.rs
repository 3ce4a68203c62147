//! Stacked memory bars: one bar per configuration, each a stack of named segments in
//! bytes, against a capacity line.
//!
//! The chart is generic ([`MemoryBar`] holds any named segments), so it serves both the
//! inference breakdown (weights, KV cache, activations, overhead; see
//! [`crate::series::format_comparison`] for weight formats side by side) and training
//! breakdowns (params, grads, optimizer states, activations per ZeRO stage; see
//! [`crate::series::zero_comparison`]). Segments with the same name share a colour
//! across bars; the legend lists them in stacking order, top first. The chart is drawn
//! in steps: layout (segment names and colours, bar slots), axes, series (the capacity
//! line, then each bar with its numbers and label), labels, legend.
//!
//! ```
//! use ridgeline_render::plot::memory::{MemoryBar, MemoryChart, memory};
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
//! # Ok::<(), ridgeline_core::Error>(())
//! ```

use super::axes::{Axes, Frame, LinearAxis, draw_axes, fit_y_title, nice_ticks, plain_tick};
use super::draw::{Pen, Rect, Root, check_size, draw_dashed, draw_header, draw_line, draw_text};
use super::draw::{fill_rect, render_svg};
use super::labels::{Label, Leader, Near, Placer, Side};
use super::legend::{Footnote, Panel, Sample, line_sample};
use super::style::{ALERT, INK, LABEL_PX, OKABE_ITO, SMALL_PX, TINY_PX, rgb};
use super::text::{fit_text, text_width, wrap};
use crate::error::{Error, Result};
use crate::units::{GB, sig3};
use plotters::prelude::*;
use plotters::style::text_anchor::{HPos, VPos};

pub use crate::series::{MemoryBar, MemoryChart, MemorySegment};

/// Segment fills in order of first appearance: alternating dark and light so that
/// neighbours differ in greyscale too.
const SEGMENT_COLORS: [usize; 8] = [5, 1, 3, 6, 2, 7, 4, 0];
/// Space above the plot for the title block, px.
const TOP: f64 = 58.0;
/// Space under the plot for the bar labels, px.
const LABEL_AREA: f64 = 40.0;
/// Distance between legend rows, px.
const LINE_H: f64 = 18.0;
const FOOTNOTE: &str = "Numbers in GB (1e9 bytes); segments too thin to label are in the total.";

/// Black or white, whichever reads better on `c`.
fn ink_on(c: [u8; 3]) -> RGBColor {
    let l = 0.2126 * c[0] as f64 + 0.7152 * c[1] as f64 + 0.0722 * c[2] as f64;
    if l > 140.0 { INK } else { WHITE }
}

/// Bytes as GB (1e9) to three significant figures, without the unit.
fn fmt_gb(bytes: f64) -> String {
    sig3(bytes / GB)
}

/// Checks the chart: bars with segments, sizes ≥ 0, a positive capacity, the canvas.
fn check(chart: &MemoryChart) -> Result<()> {
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
    Ok(())
}

/// Layout shared by the steps: segment names in order of first appearance (which
/// gives their colours) and the width of a bar's slot and of the bar in it.
struct Layout<'c> {
    names: Vec<&'c str>,
    slot: f64,
    bar_w: f64,
}

impl Layout<'_> {
    fn color_of(&self, name: &str) -> [u8; 3] {
        segment_color(self.names.iter().position(|n| *n == name).unwrap_or(0))
    }
}

/// The fill of the `i`-th segment name of a memory chart (weights, KV cache,
/// activations, engine overhead for an inference footprint).
pub fn segment_color(i: usize) -> [u8; 3] {
    OKABE_ITO[SEGMENT_COLORS[i % SEGMENT_COLORS.len()]].1
}

type Plot<'a> = Frame<'a, LinearAxis, LinearAxis>;

/// Axes: GB up to a "nice" tick above the tallest bar and the capacity; one slot per bar.
fn axes<'a>(area: &Root<'a>, chart: &MemoryChart) -> Result<Plot<'a>> {
    let max_total = chart
        .bars
        .iter()
        .map(MemoryBar::total_bytes)
        .fold(0.0, f64::max)
        .max(chart.capacity_bytes.unwrap_or(0.0));
    let max_gb = (max_total / 1e9).max(1e-6);
    let ticks = nice_ticks(max_gb * 1.12);
    let y_hi = ticks.last().copied().unwrap_or(1.0).max(max_gb * 1.12);
    let (_, area_h) = area.dim_in_pixel();
    let (y_title, title_px) =
        fit_y_title("Memory per device (GB = 1e9 bytes)", area_h as f64 - 4.0);
    let axes = Axes {
        y_ticks: plain_tick,
        y_tick_count: Some(ticks.len()),
        x_grid: false,
        minor_grid: TRANSPARENT.into(),
        ..Axes::new(&y_title, title_px)
    };
    draw_axes(area, &axes, 0.0..chart.bars.len() as f64, 0.0..y_hi)
}

/// Series: one bar's segments, bottom up, each with its size where it fits. Returns
/// the bar's total, bytes.
fn draw_stack(root: &Root, plot: &Plot, l: &Layout, cx: f64, bar: &MemoryBar) -> Result<f64> {
    let (x0, x1) = (cx - l.bar_w / 2.0, cx + l.bar_w / 2.0);
    let mut acc = 0.0;
    for s in &bar.segments {
        let y_lo = plot.px(0.0, acc / 1e9).1;
        acc += s.bytes;
        let y_hi = plot.px(0.0, acc / 1e9).1;
        if y_lo - y_hi < 0.5 {
            continue;
        }
        let col = l.color_of(&s.name);
        fill_rect(root, &Rect::new(x0, y_hi, x1, y_lo), rgb(col).to_rgba())?;
        // white separator on top of each segment
        draw_line(root, &[(x0, y_hi), (x1, y_hi)], WHITE.to_rgba(), 1)?;
        let text = fmt_gb(s.bytes);
        if y_lo - y_hi >= TINY_PX + 3.0 && text_width(&text, TINY_PX) + 4.0 <= l.bar_w {
            let pen = Pen::new(TINY_PX, ink_on(col)).anchor(HPos::Center, VPos::Center);
            draw_text(root, &text, cx, (y_lo + y_hi) / 2.0, pen)?;
        }
    }
    Ok(acc)
}

/// Labels: a bar's total above it (in GB; without the unit where the slot is narrow),
/// and a warning under it when it does not fit.
fn draw_total(
    root: &Root,
    placer: &mut Placer,
    (cx, top_y): (f64, f64),
    total_bytes: f64,
    slot: f64,
    over: bool,
) -> Result<()> {
    let (mut total, mut tsize) = fit_text(
        &format!("{} GB", fmt_gb(total_bytes)),
        slot - 4.0,
        SMALL_PX,
        TINY_PX,
        true,
    );
    if total.ends_with('…') {
        (total, tsize) = fit_text(&fmt_gb(total_bytes), slot - 4.0, SMALL_PX, TINY_PX, true);
    }
    let tw = text_width(&total, tsize) * 1.1;
    let h_needed = if over { tsize + TINY_PX + 2.0 } else { tsize };
    let r = Rect::new(
        cx - tw / 2.0,
        top_y - 4.0 - h_needed,
        cx + tw / 2.0,
        top_y - 4.0,
    );
    placer.block_text(r);
    let top_centre =
        |size: f64, color: RGBColor| Pen::new(size, color).anchor(HPos::Center, VPos::Top);
    draw_text(root, &total, cx, r.y0, top_centre(tsize, INK).bold())?;
    if over {
        let (t, s) = fit_text("does not fit", slot - 4.0, TINY_PX, TINY_PX, false);
        draw_text(root, &t, cx, r.y0 + tsize + 2.0, top_centre(s, ALERT))?;
    }
    Ok(())
}

/// Labels: a bar's label under the axis, up to two lines.
fn draw_bar_label(root: &Root, label: &str, cx: f64, y: f64, slot: f64) -> Result<()> {
    let lines = wrap(label, slot - 6.0, SMALL_PX);
    let pen = Pen::new(SMALL_PX, INK).anchor(HPos::Center, VPos::Top);
    for (k, line) in lines.iter().take(2).enumerate() {
        let line = if k == 1 && lines.len() > 2 {
            fit_text(&format!("{line} …"), slot - 6.0, SMALL_PX, SMALL_PX, false).0
        } else {
            line.clone()
        };
        draw_text(root, &line, cx, y + 8.0 + 15.0 * k as f64, pen)?;
    }
    Ok(())
}

/// Series and their labels: the capacity line, then each bar with its total and label
/// (bar by bar), then the base line.
fn draw_bars(
    root: &Root,
    plot: &Plot,
    placer: &mut Placer,
    chart: &MemoryChart,
    l: &Layout,
) -> Result<()> {
    let rect = plot.rect;
    if let Some(cap) = chart.capacity_bytes {
        let y = plot.px(0.0, cap / 1e9).1;
        let line = [(rect.x0, y), (rect.x1, y)];
        draw_dashed(root, &line, ALERT.to_rgba(), 2, (8.0, 4.0))?;
    }
    for (i, b) in chart.bars.iter().enumerate() {
        let cx = plot.px(i as f64 + 0.5, 0.0).0;
        let acc = draw_stack(root, plot, l, cx, b)?;
        let top_y = plot.px(0.0, acc / 1e9).1;
        let (x0, x1) = (cx - l.bar_w / 2.0, cx + l.bar_w / 2.0);
        placer.block(Rect::new(x0, top_y, x1, rect.y1));
        let over = chart.capacity_bytes.is_some_and(|cap| acc > cap);
        draw_total(root, placer, (cx, top_y), acc, l.slot, over)?;
        draw_bar_label(root, &b.label, cx, rect.y1, l.slot)?;
    }
    let base = [(rect.x0, rect.y1), (rect.x1, rect.y1)];
    draw_line(root, &base, INK.to_rgba(), 1)
}

/// Labels: the capacity line's, at its right end or as near as there is room.
fn draw_capacity_label(
    root: &Root,
    plot: &Plot,
    placer: &mut Placer,
    chart: &MemoryChart,
    slot: f64,
) -> Result<()> {
    let Some(cap) = chart.capacity_bytes else {
        return Ok(());
    };
    let y = plot.px(0.0, cap / 1e9).1;
    let text = if chart.capacity_label.is_empty() {
        format!("capacity {} GB", fmt_gb(cap))
    } else {
        format!("{}: {} GB capacity", chart.capacity_label, fmt_gb(cap))
    };
    let rect = plot.rect;
    let label = Label::fitted(&text, rect.x1 - rect.x0 - 8.0, SMALL_PX, TINY_PX, ALERT);
    let wt = label.width();
    let anchors = (0..8)
        .map(|k| (rect.x1 - wt / 2.0 - 4.0 - k as f64 * slot / 2.0, y))
        .collect();
    let near = Near::any(anchors, 3.0, 20.0, &[Side::Above, Side::Below]);
    placer.place(root, &label, &near, Leader::None)?;
    Ok(())
}

/// Legend: the segments in stacking order, top first, as far as they fit, the capacity
/// line, and the footnote.
fn draw_legend(root: &Root, chart: &MemoryChart, l: &Layout, panel_w: f64) -> Result<()> {
    let (w, h) = (chart.width as f64, chart.height as f64);
    let mut p = Panel::new(root, w - panel_w + 8.0, panel_w - 16.0, TOP + 4.0, LINE_H);
    p.heading("Segments (top first)")?;
    for name in l.names.iter().rev() {
        if p.y > h - 40.0 {
            break;
        }
        let swatch = Sample::Fill([0.0, 1.0, 14.0, 13.0], rgb(l.color_of(name)).to_rgba());
        p.row(&[swatch], 22.0, name, LABEL_PX, INK)?;
    }
    if chart.capacity_bytes.is_some() && p.y <= h - 40.0 {
        p.y += 4.0;
        let line = line_sample(14.0, ALERT.to_rgba(), Some((8.0, 4.0)));
        p.row(&[line], 22.0, "device capacity", LABEL_PX, INK)?;
    }
    p.footnote(&Footnote::new(FOOTNOTE, p.inner, h), p.y + 4.0)
}

/// Renders the chart.
///
/// Errors: no bars, a bar without segments, a negative or non-finite size, a
/// non-positive capacity, or a canvas outside 360×300 .. 20000×20000 px.
pub fn memory(chart: &MemoryChart) -> Result<String> {
    check(chart)?;
    let mut names: Vec<&str> = Vec::new();
    for s in chart.bars.iter().flat_map(|b| &b.segments) {
        if !names.contains(&s.name.as_str()) {
            names.push(&s.name);
        }
    }
    let w = chart.width as f64;
    let panel_w = (w * 0.24).clamp(150.0, 240.0);
    render_svg(chart.width, chart.height, |root| {
        draw_header(root, &chart.title, &chart.subtitle, w)?;
        let area = root.margin(TOP as i32, (LABEL_AREA + 8.0) as i32, 8, panel_w as i32);
        let plot = axes(&area, chart)?;
        let mut placer = Placer::new(plot.rect.pad(-2.0));
        let slot = (plot.rect.x1 - plot.rect.x0) / chart.bars.len() as f64;
        let layout = Layout {
            names,
            slot,
            bar_w: (slot * 0.62).min(110.0),
        };
        draw_bars(root, &plot, &mut placer, chart, &layout)?;
        draw_capacity_label(root, &plot, &mut placer, chart, slot)?;
        draw_legend(root, chart, &layout, panel_w)
    })
}
