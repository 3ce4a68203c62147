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
//!
//! The chart is drawn in steps: layout (the scene in data units: points, link and unit
//! ceilings, axis ranges), axes and series (roofs, ceilings, op and ridge markers),
//! labels (op numbers and direct labels) and the side panel.

mod labels;
mod legend;
mod marks;
mod scene;

use super::draw::{check_size, draw_header, render_svg};
use super::labels::Placer;
use super::legend::Footnote;
use super::style::OKABE_ITO;
use crate::error::{Error, Result};
use crate::hardware::Hardware;
use crate::predict::Prediction;
use crate::series::short_device_name;
use scene::Scene;

/// Fill of prefill op markers (Okabe-Ito orange).
pub const PREFILL_COLOR: [u8; 3] = OKABE_ITO[1].1;
/// Fill of decode op markers (Okabe-Ito sky blue).
pub const DECODE_COLOR: [u8; 3] = OKABE_ITO[2].1;
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

/// Most devices on one chart: beyond seven the roofs and their colours no longer read.
pub const MAX_DEVICES: usize = 7;

/// Space above the plot for the title block, px.
const TOP: f64 = 58.0;
/// Distance between side panel rows, px.
const LINE_H: f64 = 17.0;

/// Device names on the chart drop their vendor.
fn short_name(name: &str) -> &str {
    short_device_name(name, &["NVIDIA ", "AMD ", "Google ", "Intel "])
}

/// The default title line: model and devices.
pub(crate) fn default_title(devices: &[RooflineDevice]) -> String {
    let p = devices[0].prediction;
    let names: Vec<&str> = devices
        .iter()
        .map(|d| short_name(&d.prediction.hardware.name))
        .collect();
    format!("Roofline: {} on {}", p.model.name, names.join(" vs "))
}

/// The subtitle: format, batch, context, engine (and whether some ops were read from
/// measured kernel tables), layout.
pub(crate) fn subtitle(p: &Prediction) -> String {
    let c = &p.config;
    let tables = p.ops.iter().any(|o| {
        matches!(
            o.source,
            crate::predict::CostSource::Measured | crate::predict::CostSource::Transferred
        )
    });
    format!(
        "weights {} · KV {} · batch {} · context {} prompt + {} generated (decode step at {}) · engine {}{} · {}× device{}",
        crate::dtype::formats_label(c.weights, c.experts),
        c.kv,
        c.batch,
        c.prompt,
        c.r#gen,
        p.decode.context,
        c.engine,
        if tables { " on kernel tables" } else { "" },
        p.hardware.count,
        match (p.hardware.count > 1, c.ep > 1) {
            (false, _) => String::new(),
            (true, false) => format!(", {}", c.parallel),
            (true, true) => format!(", ep {} × tp {}", c.ep, p.hardware.count / c.ep),
        }
    )
}

/// Checks the devices (one to [`MAX_DEVICES`], positive peaks and bandwidths) and the
/// canvas.
fn check(devices: &[RooflineDevice], opts: &RooflineOptions) -> Result<()> {
    if devices.is_empty() {
        return Err(Error::invalid(
            "gpu",
            "a roofline chart needs at least one device",
        ));
    }
    if devices.len() > MAX_DEVICES {
        return Err(Error::invalid(
            "gpu",
            format!(
                "{} devices on one chart; at most {MAX_DEVICES} stay readable",
                devices.len()
            ),
        ));
    }
    check_size(opts.width, opts.height, 480, 360)?;
    for d in devices {
        let h = &d.prediction.hardware;
        crate::error::require_positive("peak_flops_per_s", h.peak_flops_per_s)?;
        crate::error::require_positive("bandwidth_bytes_per_s", h.bandwidth_bytes_per_s)?;
    }
    Ok(())
}

/// Renders the roofline chart to an SVG string.
///
/// Errors: no devices or more than [`MAX_DEVICES`], a canvas outside 480×360 ..
/// 20000×20000 px, or a prediction with non-positive peak or bandwidth.
pub fn roofline(devices: &[RooflineDevice], opts: &RooflineOptions) -> Result<String> {
    check(devices, opts)?;
    let scene = Scene::new(devices, opts);
    let (w, h) = (opts.width as f64, opts.height as f64);
    let panel_w = (w * 0.28).clamp(230.0, 330.0);
    let panel = (w - panel_w + 8.0, panel_w - 16.0);
    render_svg(opts.width, opts.height, |root| {
        let title = opts.title.clone().unwrap_or_else(|| default_title(devices));
        draw_header(root, &title, &subtitle(devices[0].prediction), w)?;
        let area = root.margin(TOP as i32, 8, 8, panel_w as i32);
        let frame = marks::axes(&area, &scene)?;
        let mut placer = Placer::new(frame.rect.pad(-3.0));
        let geometry = marks::draw_series(root, &frame, &mut placer, &scene)?;
        // which ops get numbers: the panel must have room for their key lines
        let foot = Footnote::new(&scene.footnote(), panel.1, h);
        let room = scene.key_room(foot.top);
        let numbered = labels::draw_labels(root, &frame, &mut placer, &scene, &geometry, room)?;
        legend::draw_legend(root, &scene, &numbered, panel)?;
        foot.draw(root, panel.0)
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn short_names_drop_every_vendor() {
        assert_eq!(short_name("NVIDIA H100 SXM5 80GB"), "H100 SXM5 80GB");
        assert_eq!(short_name("Google TPU v5e"), "TPU v5e");
        assert_eq!(short_name("Intel Gaudi 2"), "Gaudi 2");
        assert_eq!(short_name("Apple M2 Ultra"), "Apple M2 Ultra");
    }
}
