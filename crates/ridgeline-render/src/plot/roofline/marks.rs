//! Axes and series of the roofline chart: the log-log frame, then the unit ceilings,
//! link slopes and roofs (first device on top), the op markers (largest first, so small
//! ones stay visible) and the ridge markers.

use super::super::axes::{
    Axes, Frame, LogAxis, decades, draw_axes, fit_axis_titles, log_axis, minor_decades, si_tick,
};
use super::super::draw::{Marker, Root, draw_dashed, draw_line};
use super::super::labels::Placer;
use super::super::style::{MarkerShape, OUTLINE, rgb, series_color};
use super::scene::{OpPoint, Scene};
use super::{DECODE_COLOR, POINT_OPACITY, PREFILL_COLOR, ROOF_WIDTH};
use crate::error::Result;
use plotters::prelude::*;

/// The chart's frame.
pub(super) type Plot<'a> = Frame<'a, LogAxis, LogAxis>;

/// Dash pattern of link slopes, px on and off.
pub(super) const LINK_DASH: (f64, f64) = (7.0, 4.0);
/// Dash pattern of unit ceilings.
pub(super) const CEILING_DASH: (f64, f64) = (3.0, 3.0);

/// Colour of the link slopes of device `i`.
pub(super) fn link_color(i: usize) -> RGBAColor {
    rgb(series_color(i)).mix(0.9)
}

/// Colour of the unit ceilings (the first device's, lighter).
pub(super) fn ceiling_color() -> RGBAColor {
    rgb(series_color(0)).mix(0.55)
}

/// Shape and fill of an op marker: decode ops as triangles, prefill ops as circles.
pub(super) fn op_style(decode: bool) -> (MarkerShape, [u8; 3]) {
    if decode {
        (MarkerShape::TriangleUp, DECODE_COLOR)
    } else {
        (MarkerShape::Circle, PREFILL_COLOR)
    }
}

/// Marker radius for an op with `share` of its phase's time: area ∝ share.
fn radius(share: f64) -> f64 {
    3.0 + 10.0 * share.clamp(0.0, 1.0).sqrt()
}

/// The marker of an op on the chart.
pub(super) fn op_marker(p: &OpPoint) -> Marker {
    let (shape, fill) = op_style(p.decode);
    Marker {
        shape,
        r: radius(p.share),
        fill: rgb(fill).mix(POINT_OPACITY),
        outline: OUTLINE.mix(POINT_OPACITY),
    }
}

/// Half the width of a drawn marker at `(x, y)` for the placer.
pub(super) fn half_width(m: &Marker, x: f64, y: f64) -> f64 {
    m.bounds(x, y).x1 - x
}

/// Where the series are, in pixels.
pub(super) struct Geometry {
    /// Each device's roof: slope start, ridge, end of the flat roof.
    pub roofs: Vec<[(f64, f64); 3]>,
    /// Each link's slope (empty where it misses the axes).
    pub links: Vec<Vec<(f64, f64)>>,
    /// Each unit ceiling: from the first device's slope to the right edge.
    pub ceilings: Vec<[(f64, f64); 2]>,
    /// Centre of each op point.
    pub centers: Vec<(f64, f64)>,
}

/// Axes: arithmetic intensity against performance, both in decades.
pub(super) fn axes<'a>(area: &Root<'a>, s: &Scene) -> Result<Plot<'a>> {
    let ((x_lo, x_hi), (y_lo, y_hi)) = (s.x, s.y);
    let x_axis = log_axis(x_lo, x_hi, (decades(x_lo, x_hi), minor_decades(x_lo, x_hi)));
    let y_keys: Vec<f64> = decades(y_lo, y_hi)
        .into_iter()
        .filter(|v| *v <= y_hi)
        .collect();
    let y_axis = log_axis(y_lo, y_hi, (y_keys, minor_decades(y_lo, y_hi)));
    let (area_w, area_h) = area.dim_in_pixel();
    let (x_title, y_title, title_px) = fit_axis_titles(
        "Arithmetic intensity (FLOP/byte)",
        area_w as f64 - 80.0,
        "Performance (FLOP/s)",
        area_h as f64 - 50.0,
    );
    let axes = Axes::new(&y_title, title_px).with_x(&x_title, si_tick);
    draw_axes(area, &axes, x_axis, y_axis)
}

/// The roofs, links and ceilings in pixels.
fn lines(plot: &Plot, s: &Scene) -> Geometry {
    let ((x_lo, x_hi), (y_lo, y_hi)) = (s.x, s.y);
    let px = |(x, y): (f64, f64)| plot.px(x, y);
    let roofs = s
        .devices
        .iter()
        .map(|d| {
            let hw = &d.prediction.hardware;
            let (peak, bw) = (hw.peak_flops_per_s, hw.bandwidth_bytes_per_s);
            let start = if x_lo * bw >= y_lo {
                (x_lo, x_lo * bw)
            } else {
                (y_lo / bw, y_lo)
            };
            [start, (peak / bw, peak), (x_hi, peak)].map(px)
        })
        .collect();
    let links = s
        .links
        .iter()
        .map(|l| {
            let bw = l.bytes_per_s;
            let x0 = x_lo.max(y_lo / bw);
            let x1 = x_hi.min(l.peak.min(y_hi) / bw);
            if x1 > x0 {
                vec![px((x0, x0 * bw)), px((x1, x1 * bw))]
            } else {
                Vec::new()
            }
        })
        .collect();
    let fbw = s.first().hardware.bandwidth_bytes_per_s;
    let ceilings = s
        .ceilings
        .iter()
        .map(|(_, peak)| [px(((peak / fbw).max(x_lo), *peak)), px((x_hi, *peak))])
        .collect();
    Geometry {
        roofs,
        links,
        ceilings,
        centers: Vec::new(),
    }
}

/// The op markers, largest first; returns their centres.
fn draw_points(
    root: &Root,
    plot: &Plot,
    placer: &mut Placer,
    s: &Scene,
) -> Result<Vec<(f64, f64)>> {
    let points = &s.points;
    let mut order: Vec<usize> = (0..points.len()).collect();
    order.sort_by(|&a, &b| points[b].share.total_cmp(&points[a].share).then(a.cmp(&b)));
    let mut centers = vec![(0.0, 0.0); points.len()];
    for &i in &order {
        let p = &points[i];
        let (x, y) = plot.px(p.intensity, p.flops_per_s);
        centers[i] = (x, y);
        let marker = op_marker(p);
        marker.draw(root, x, y)?;
        placer.block_marker(x, y, half_width(&marker, x, y));
    }
    Ok(centers)
}

/// Series: ceilings, links and roofs, then op and ridge markers, each blocked for the
/// labels.
pub(super) fn draw_series(
    root: &Root,
    plot: &Plot,
    placer: &mut Placer,
    s: &Scene,
) -> Result<Geometry> {
    let mut g = lines(plot, s);
    for pts in &g.ceilings {
        draw_dashed(root, pts, ceiling_color(), 1, CEILING_DASH)?;
        placer.block_line(pts, 1.5);
    }
    for (l, pts) in s.links.iter().zip(&g.links) {
        if pts.len() == 2 {
            draw_dashed(root, pts, link_color(l.device), 2, LINK_DASH)?;
            placer.block_line(pts, 2.0);
        }
    }
    for (i, pts) in g.roofs.iter().enumerate().rev() {
        draw_line(root, pts, rgb(series_color(i)).to_rgba(), ROOF_WIDTH)?;
        placer.block_line(pts, 2.5);
    }
    g.centers = draw_points(root, plot, placer, s)?;
    for (i, d) in s.devices.iter().enumerate() {
        let hw = &d.prediction.hardware;
        let (x, y) = plot.px(
            hw.peak_flops_per_s / hw.bandwidth_bytes_per_s,
            hw.peak_flops_per_s,
        );
        let ridge = Marker {
            shape: MarkerShape::Diamond,
            r: 4.0,
            fill: rgb(series_color(i)).to_rgba(),
            outline: WHITE.to_rgba(),
        };
        ridge.draw(root, x, y)?;
        placer.block_marker(x, y, half_width(&ridge, x, y));
    }
    Ok(g)
}
