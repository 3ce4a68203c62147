//! Labels of the roofline chart: numbers on the largest ops (explained in the key),
//! then direct labels: device names on their flat roofs, ridge points, link slopes and
//! unit ceilings.

use super::super::draw::{Pen, Root};
use super::super::labels::{Label, Leader, Near, Placer, Side};
use super::super::style::{GREY, INK, SMALL_PX, TINY_PX, rgb, series_color};
use super::marks::{Geometry, Plot, half_width, op_marker};
use super::scene::Scene;
use super::short_name;
use crate::error::Result;
use plotters::prelude::*;

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

/// Sides tried for a ridge label, nearest first.
const RIDGE_SIDES: [Side; 6] = [
    Side::AboveLeft,
    Side::Above,
    Side::Left,
    Side::AboveRight,
    Side::BelowRight,
    Side::Right,
];

/// The ops that may get a number: per phase (prefill first) those with at least the
/// minimum share, largest first, at most the maximum per phase.
fn candidates(s: &Scene) -> Vec<usize> {
    let points = &s.points;
    let mut out = Vec::new();
    for decode in [false, true] {
        let mut phase: Vec<usize> = (0..points.len())
            .filter(|&i| points[i].decode == decode && points[i].share >= s.opts.label_min_share)
            .collect();
        phase.sort_by(|&a, &b| points[b].share.total_cmp(&points[a].share).then(a.cmp(&b)));
        phase.truncate(s.opts.max_labels_per_phase);
        out.extend(phase);
    }
    out
}

/// Numbers the candidate ops while the key has `room` and the chart a free spot next to
/// the op. Returns (number, point) of each numbered op.
fn number_ops(
    root: &Root,
    placer: &mut Placer,
    s: &Scene,
    g: &Geometry,
    room: usize,
) -> Result<Vec<(usize, usize)>> {
    let mut numbered: Vec<(usize, usize)> = Vec::new();
    for i in candidates(s) {
        if numbered.len() >= room {
            break;
        }
        let n = numbered.len() + 1;
        let label = Label {
            inset: 1.0,
            ..Label::new(n.to_string(), Pen::new(SMALL_PX, INK).bold())
        };
        let (x, y) = g.centers[i];
        let e = half_width(&op_marker(&s.points[i]), x, y);
        let near = Near::marker(x, y, e, 80.0, &NUMBER_SIDES);
        if placer.place(root, &label, &near, Leader::Line(GREY.mix(0.8)))? {
            numbered.push((n, i));
        }
    }
    Ok(numbered)
}

/// Device names on their flat roofs, as far right as there is room.
fn name_roofs(root: &Root, placer: &mut Placer, s: &Scene, g: &Geometry) -> Result<()> {
    for (i, d) in s.devices.iter().enumerate() {
        let name = short_name(&d.prediction.hardware.name);
        let label = Label::fitted(name, 240.0, SMALL_PX, TINY_PX, rgb(series_color(i)));
        let wt = label.width();
        let (rx0, roof_y) = g.roofs[i][1];
        let rx1 = g.roofs[i][2].0;
        let anchors = (0..12)
            .map(|k| (rx1 - wt / 2.0 - 6.0 - 30.0 * k as f64, roof_y))
            .filter(|a| a.0 - wt / 2.0 > rx0 + 8.0 || a.0 == rx1 - wt / 2.0 - 6.0)
            .collect();
        let near = Near::any(anchors, 4.0, 40.0, &[Side::Above, Side::Below]);
        placer.place(root, &label, &near, Leader::None)?;
    }
    Ok(())
}

/// Each ridge point's intensity next to it.
fn name_ridges(root: &Root, plot: &Plot, placer: &mut Placer, s: &Scene) -> Result<()> {
    for (i, d) in s.devices.iter().enumerate() {
        let hw = &d.prediction.hardware;
        let ridge = hw.peak_flops_per_s / hw.bandwidth_bytes_per_s;
        let (x, y) = plot.px(ridge, hw.peak_flops_per_s);
        let color = rgb(series_color(i));
        let label = Label::new(
            format!("ridge {:.0} FLOP/B", ridge),
            Pen::new(TINY_PX, color),
        );
        let near = Near::point(x, y, 6.0, 90.0, &RIDGE_SIDES);
        placer.place(root, &label, &near, Leader::Line(color.mix(0.7)))?;
    }
    Ok(())
}

/// Link slopes by name and bandwidth, near their middle; unit ceilings by dtype and
/// peak, as far right as there is room.
fn name_ceilings(root: &Root, placer: &mut Placer, s: &Scene, g: &Geometry) -> Result<()> {
    for (l, pts) in s.links.iter().zip(&g.links) {
        if pts.len() != 2 {
            continue;
        }
        let label = Label::fitted(
            &l.label,
            260.0,
            TINY_PX,
            TINY_PX,
            rgb(series_color(l.device)),
        );
        let anchors = [0.5, 0.4, 0.6, 0.3, 0.7, 0.2, 0.8, 0.1, 0.9]
            .iter()
            .map(|t| {
                (
                    pts[0].0 + (pts[1].0 - pts[0].0) * t,
                    pts[0].1 + (pts[1].1 - pts[0].1) * t,
                )
            })
            .collect();
        let near = Near::any(anchors, 3.0, 12.0, &[Side::AboveLeft, Side::BelowRight]);
        placer.place(root, &label, &near, Leader::None)?;
    }
    for ((text, _), pts) in s.ceilings.iter().zip(&g.ceilings) {
        let label = Label::new(text.as_str(), Pen::new(TINY_PX, GREY));
        let wt = label.width();
        let anchors = (0..10)
            .map(|k| (pts[1].0 - wt / 2.0 - 8.0 - 40.0 * k as f64, pts[1].1))
            .filter(|a| a.0 - wt / 2.0 >= pts[0].0)
            .collect();
        let near = Near::any(anchors, 3.0, 20.0, &[Side::Below, Side::Above]);
        placer.place(root, &label, &near, Leader::None)?;
    }
    Ok(())
}

/// Labels: op numbers (at most `room`), then the direct labels. Returns (number, point)
/// of each numbered op, for the key.
pub(super) fn draw_labels(
    root: &Root,
    plot: &Plot,
    placer: &mut Placer,
    s: &Scene,
    g: &Geometry,
    room: usize,
) -> Result<Vec<(usize, usize)>> {
    let numbered = number_ops(root, placer, s, g, room)?;
    name_roofs(root, placer, s, g)?;
    name_ridges(root, plot, placer, s)?;
    name_ceilings(root, placer, s, g)?;
    Ok(numbered)
}
