//! The side panel of the roofline chart: the roofs (devices with their matmul dtype,
//! peak and bandwidth), link and unit ceilings, the op phases, and the key to the
//! numbered ops.

use super::super::draw::{Marker, Pen, Root, draw_text};
use super::super::legend::{Panel, Sample};
use super::super::style::{GREY, INK, LABEL_PX, OUTLINE, SMALL_PX, rgb, series_color};
use super::super::text::wrap;
use super::marks::{CEILING_DASH, LINK_DASH, ceiling_color, link_color, op_style};
use super::scene::Scene;
use super::{LINE_H, TOP, short_name};
use crate::error::Result;
use crate::units::{fmt_bytes, fmt_bytes_per_s, fmt_flops_per_s};
use plotters::prelude::*;
use plotters::style::text_anchor::{HPos, VPos};

/// A legend marker for an op of the phase `decode`, centred `dx` px from the panel's
/// left edge.
fn op_sample(decode: bool, dx: f64, r: f64) -> Sample {
    let (shape, fill) = op_style(decode);
    let marker = Marker {
        shape,
        r,
        fill: rgb(fill).to_rgba(),
        outline: OUTLINE.to_rgba(),
    };
    Sample::Marker((dx, 7.0), marker)
}

/// A dashed line sample for a ceiling, 6.5 px below the row's top.
fn ceiling_sample(color: RGBAColor, width: u32, dash: (f64, f64)) -> Sample {
    Sample::Line {
        from: (0.0, 6.5),
        to: (22.0, 6.5),
        color,
        width,
        dash: Some(dash),
    }
}

/// The roofs: each device with its count, then its matmul dtype, peak and bandwidth.
fn roofs(p: &mut Panel, s: &Scene) -> Result<()> {
    p.heading("Roofs (ideal peaks)")?;
    for (i, d) in s.devices.iter().enumerate() {
        let hw = &d.prediction.hardware;
        let swatch = Sample::Fill([0.0, 5.0, 22.0, 8.0], rgb(series_color(i)).to_rgba());
        let name = format!("{} ×{}", short_name(&hw.name), hw.count);
        p.row(&[swatch], 28.0, &name, LABEL_PX, INK)?;
        let c = &d.prediction.config;
        // the compute dtype the weights' matmuls run in, as the device publishes it
        let dtype = d.hardware.peak(c.weights.compute_dtype(c.activations)).1;
        let peaks = format!(
            "{} {} · {}",
            dtype.name(),
            fmt_flops_per_s(hw.peak_flops_per_s),
            fmt_bytes_per_s(hw.bandwidth_bytes_per_s),
        );
        p.row(&[], 28.0, &peaks, SMALL_PX, GREY)?;
        // a roof below the datasheet's: the rate the board power sustains, or what
        // warp-level MMA reaches of a Hopper peak (the lower binds)
        let rated = d.hardware.peak(dtype).0;
        let share = hw.peak_flops_per_s / rated;
        if share < 0.999 {
            let why = if d.hardware.sustained_tensor_fraction <= share * 1.000_001 {
                "board power"
            } else {
                "warp-level MMA"
            };
            let note = format!("{share:.2} of the rated {} ({why})", fmt_flops_per_s(rated));
            p.row(&[], 28.0, &note, SMALL_PX, GREY)?;
        }
    }
    Ok(())
}

/// The link slopes (their legend on up to two lines) and unit ceilings.
fn ceilings(p: &mut Panel, s: &Scene) -> Result<()> {
    for l in &s.links {
        p.samples(&[ceiling_sample(link_color(l.device), 2, LINK_DASH)])?;
        let lines = wrap(&l.legend, p.inner - 28.0, SMALL_PX);
        for (k, line) in lines.iter().take(2).enumerate() {
            if k > 0 {
                p.y += LINE_H - 3.0;
            }
            p.text(28.0, line, SMALL_PX, INK)?;
        }
        p.skip(1.0);
    }
    for (label, _) in &s.ceilings {
        let sample = ceiling_sample(ceiling_color(), 1, CEILING_DASH);
        p.row(&[sample], 28.0, label, SMALL_PX, INK)?;
    }
    Ok(())
}

/// The op phases, then the key to the numbered ops: (number, point).
fn ops(root: &Root, p: &mut Panel, s: &Scene, numbered: &[(usize, usize)]) -> Result<()> {
    let first = s.first();
    p.heading(&format!("Ops on {}", short_name(&first.hardware.name)))?;
    p.row(
        &[],
        0.0,
        "marker area ∝ share of the phase's op time",
        SMALL_PX,
        GREY,
    )?;
    let c = &first.config;
    let prefill = format!("prefill: {} × {} tokens", c.batch, c.prompt);
    p.row(
        &[op_sample(false, 11.0, 4.5)],
        28.0,
        &prefill,
        SMALL_PX,
        INK,
    )?;
    let decode = match &first.speculative {
        Some(sp) => format!(
            "verify pass: {} × {} tokens at context {}",
            c.batch,
            sp.settings.k + 1,
            first.decode.context
        ),
        None => format!(
            "decode step: {} × 1 token at context {}",
            c.batch, first.decode.context
        ),
    };
    p.row(&[op_sample(true, 11.0, 4.5)], 28.0, &decode, SMALL_PX, INK)?;
    link_ops(p, s)?;
    if numbered.is_empty() {
        return Ok(());
    }
    p.skip(0.3);
    p.heading("Key: op, share of phase time")?;
    let number_pen = Pen::new(SMALL_PX, INK)
        .bold()
        .anchor(HPos::Right, VPos::Top);
    for (n, i) in numbered {
        let op = &s.points[*i];
        p.samples(&[op_sample(op.decode, 5.0, 3.5)])?;
        draw_text(root, &n.to_string(), p.x + 28.0, p.y, number_pen)?;
        let key = format!("{}  {:.0}%", op.name, op.share * 100.0);
        p.row(&[], 36.0, &key, SMALL_PX, INK)?;
    }
    Ok(())
}

/// The ops that only move bytes over the link (no FLOPs, so not on the axes): name,
/// share of their phase's time and bytes, under a link-dashed sample.
fn link_ops(p: &mut Panel, s: &Scene) -> Result<()> {
    if s.link_ops.is_empty() {
        return Ok(());
    }
    p.skip(0.3);
    p.heading("On the link, no FLOPs (not on the axes)")?;
    for op in &s.link_ops {
        let phase = if op.decode { "decode" } else { "prefill" };
        let text = format!(
            "{} ({phase})  {:.0}% · {}",
            op.name,
            op.share * 100.0,
            fmt_bytes(op.link_bytes)
        );
        let sample = ceiling_sample(link_color(0), 2, LINK_DASH);
        p.row(&[sample], 28.0, &text, SMALL_PX, INK)?;
    }
    Ok(())
}

/// Legend: roofs, ceilings, ops and key in the side panel at `(x, inner width)`.
pub(super) fn draw_legend(
    root: &Root,
    s: &Scene,
    numbered: &[(usize, usize)],
    (x, inner): (f64, f64),
) -> Result<()> {
    let mut p = Panel::new(root, x, inner, TOP + 4.0, LINE_H);
    roofs(&mut p, s)?;
    p.skip(0.4);
    ceilings(&mut p, s)?;
    p.skip(0.4);
    ops(root, &mut p, s, numbered)
}
