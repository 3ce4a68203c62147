//! Layout of the roofline chart in data units: the ops as points, the link and unit
//! ceilings to draw, and the axis ranges (capped at 8 and 9 decades; ops beyond them
//! are counted, not drawn).

use super::super::axes::{decade_ceil, decade_floor};
use super::{LINE_H, RooflineDevice, RooflineOptions, TOP};
use crate::dtype::ComputeDtype;
use crate::model::graph::{Phase, Unit};
use crate::predict::Prediction;
use crate::units::{fmt_bytes_per_s, fmt_flops_per_s};

/// One op as a point.
#[derive(Debug, Clone)]
pub(super) struct OpPoint {
    pub name: &'static str,
    pub decode: bool,
    pub intensity: f64,
    pub flops_per_s: f64,
    /// Share of its phase's op time (0..1).
    pub share: f64,
}

/// An op that only moves bytes over the link (an expert-parallel all-to-all): no FLOPs,
/// so no place on the axes; listed in the key instead.
#[derive(Debug, Clone)]
pub(super) struct LinkOp {
    pub name: &'static str,
    pub decode: bool,
    /// Share of its phase's op time (0..1).
    pub share: f64,
    /// Bytes over the link, all executions.
    pub link_bytes: f64,
}

/// A slope ceiling: a link's bandwidth.
#[derive(Debug, Clone)]
pub(super) struct LinkRoof {
    pub device: usize,
    /// On the chart, next to the line.
    pub label: String,
    /// In the legend, with the link's role.
    pub legend: String,
    pub bytes_per_s: f64,
    /// The device's peak, where the slope ends.
    pub peak: f64,
}

/// What the chart shows, in data units.
pub(super) struct Scene<'d> {
    pub devices: &'d [RooflineDevice<'d>],
    pub opts: &'d RooflineOptions,
    /// The first device's ops within the axes.
    pub points: Vec<OpPoint>,
    /// The first device's ops that only move bytes over the link.
    pub link_ops: Vec<LinkOp>,
    /// Ops without FLOPs (no place on a log axis), besides `link_ops`.
    skipped: usize,
    /// Draft steps of speculative decoding (not drawn).
    drafts: usize,
    /// Ops beyond the axes.
    outside: usize,
    pub links: Vec<LinkRoof>,
    /// The first device's other compute ceilings: (label, FLOP/s).
    pub ceilings: Vec<(String, f64)>,
    /// Intensity axis, FLOP/byte.
    pub x: (f64, f64),
    /// Performance axis, FLOP/s.
    pub y: (f64, f64),
}

/// The ops of a prediction as points, the link-only ops, how many others have no place
/// on a log axis, and how many draft-step ops there are (not drawn: a verify pass and
/// its drafts are different passes).
fn op_points(p: &Prediction) -> (Vec<OpPoint>, Vec<LinkOp>, usize, usize) {
    let mut totals = [0.0f64; 2];
    for op in p.ops.iter().filter(|o| o.phase != Phase::Draft) {
        let i = usize::from(op.phase == Phase::Decode);
        if op.time_s.is_finite() && op.time_s > 0.0 {
            totals[i] += op.time_s;
        }
    }
    let share = |i: usize, t: f64| if totals[i] > 0.0 { t / totals[i] } else { 0.0 };
    let (mut pts, mut link_ops) = (Vec::new(), Vec::new());
    let (mut skipped, mut drafts) = (0, 0);
    for op in &p.ops {
        if op.phase == Phase::Draft {
            drafts += 1;
            continue;
        }
        let i = usize::from(op.phase == Phase::Decode);
        let timed = op.time_s > 0.0 && op.time_s.is_finite();
        let ok = op.flops > 0.0
            && op.flops.is_finite()
            && timed
            && op.arithmetic_intensity > 0.0
            && op.arithmetic_intensity < 1e300;
        if ok {
            pts.push(OpPoint {
                name: op.kind.name(),
                decode: i == 1,
                intensity: op.arithmetic_intensity,
                flops_per_s: op.flops / op.time_s,
                share: share(i, op.time_s),
            });
        } else if timed && op.flops == 0.0 && op.link_bytes > 0.0 {
            link_ops.push(LinkOp {
                name: op.kind.name(),
                decode: i == 1,
                share: share(i, op.time_s),
                link_bytes: op.link_bytes,
            });
        } else {
            skipped += 1;
        }
    }
    (pts, link_ops, skipped, drafts)
}

/// The links to draw as slopes, deduplicated by name, role and bandwidth.
fn link_roofs(devices: &[RooflineDevice], opts: &RooflineOptions) -> Vec<LinkRoof> {
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
            let Some(l) = link.filter(|_| want) else {
                continue;
            };
            let bw = l.bytes_per_s_per_direction;
            if !(bw.is_finite() && bw > 0.0) {
                continue;
            }
            let name = if l.name.is_empty() { role } else { &l.name };
            let legend = format!("{name} ({role}) {}", fmt_bytes_per_s(bw));
            if !links.iter().any(|o| o.legend == legend) {
                links.push(LinkRoof {
                    device: i,
                    label: format!("{name} {}", fmt_bytes_per_s(bw)),
                    legend,
                    bytes_per_s: bw,
                    peak,
                });
            }
        }
        // devices in several scale-up domains: what crosses between them runs at the
        // network's rate per device, the roof their collectives and all-to-alls meet
        if let Some((domains, bw)) = d.prediction.network().filter(|_| opts.scaleup_link) {
            let legend = format!(
                "network (between {domains} scale-up domains) {} per device",
                fmt_bytes_per_s(bw)
            );
            if bw.is_finite() && bw > 0.0 && !links.iter().any(|o| o.legend == legend) {
                links.push(LinkRoof {
                    device: i,
                    label: format!("network {}", fmt_bytes_per_s(bw)),
                    legend,
                    bytes_per_s: bw,
                    peak,
                });
            }
        }
    }
    links
}

/// The first device's compute ceilings its ops run against besides its main peak:
/// (label, FLOP/s), each once; units of one kind at the same rate share one label
/// (`fp16/bf16 matrix units 165 TFLOP/s`), so that their lines and labels do not sit on
/// top of each other.
fn unit_ceilings(first: &RooflineDevice) -> Vec<(String, f64)> {
    // (kind, peak, dtype names) in order of first use
    let mut units: Vec<(&str, f64, Vec<String>)> = Vec::new();
    let main_peak = first.prediction.hardware.peak_flops_per_s;
    for op in &first.prediction.ops {
        let (dtype, kind) = match op.unit {
            Unit::Vector => (ComputeDtype::Fp32, "vector"),
            Unit::Matrix(d) | Unit::Dequant(d) => (d, "matrix"),
        };
        let (peak, used) = first.hardware.peak(dtype);
        if !(peak > 0.0 && (peak - main_peak).abs() > 1e-6 * main_peak) {
            continue;
        }
        let name = used.name().to_string();
        match units
            .iter_mut()
            .find(|(k, p, _)| *k == kind && (p - peak).abs() <= 1e-9 * peak)
        {
            Some((_, _, names)) if names.contains(&name) => {}
            Some((_, _, names)) => names.push(name),
            None => units.push((kind, peak, vec![name])),
        }
    }
    units
        .into_iter()
        .map(|(kind, peak, names)| {
            let label = format!("{} {kind} units {}", names.join("/"), fmt_flops_per_s(peak));
            (label, peak)
        })
        .collect()
}

/// The axis ranges: every roof, ridge and point, with 8 decades of intensity and 9 of
/// performance at most.
fn ranges(
    devices: &[RooflineDevice],
    points: &[OpPoint],
    ceilings: &[(String, f64)],
) -> ((f64, f64), (f64, f64)) {
    let hw = |d: &RooflineDevice| {
        (
            d.prediction.hardware.peak_flops_per_s,
            d.prediction.hardware.bandwidth_bytes_per_s,
        )
    };
    let ridges: Vec<f64> = devices.iter().map(|d| hw(d).0 / hw(d).1).collect();
    let min_ridge = ridges.iter().copied().fold(f64::INFINITY, f64::min);
    let max_ridge = ridges.iter().copied().fold(0.0, f64::max);
    let max_peak = devices.iter().map(|d| hw(d).0).fold(0.0, f64::max);
    let min_bw = devices
        .iter()
        .map(|d| hw(d).1)
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
        .min(ceilings.iter().map(|c| c.1).fold(f64::INFINITY, f64::min));
    let y_lo = decade_floor(min_y).max(decade_floor(y_hi / 1e9));
    ((x_lo, x_hi), (y_lo, y_hi))
}

impl<'d> Scene<'d> {
    /// The scene of `devices` (at least one) as `opts` asks.
    pub(crate) fn new(devices: &'d [RooflineDevice<'d>], opts: &'d RooflineOptions) -> Scene<'d> {
        let first = &devices[0];
        let (mut points, link_ops, skipped, drafts) = op_points(first.prediction);
        let links = link_roofs(devices, opts);
        let ceilings = if opts.unit_ceilings {
            unit_ceilings(first)
        } else {
            Vec::new()
        };
        let (x, y) = ranges(devices, &points, &ceilings);
        let before = points.len();
        points.retain(|p| {
            p.intensity >= x.0 && p.intensity <= x.1 && p.flops_per_s >= y.0 && p.flops_per_s <= y.1
        });
        Scene {
            devices,
            opts,
            outside: before - points.len(),
            points,
            link_ops,
            skipped,
            drafts,
            links,
            ceilings,
            x,
            y,
        }
    }

    /// The first device's prediction (whose ops are drawn).
    pub(crate) fn first(&self) -> &'d Prediction {
        self.devices[0].prediction
    }

    /// The footnote: what points and roofs are, and the ops not drawn.
    pub(crate) fn footnote(&self) -> String {
        let mut note = format!(
            "Points: the engine's predicted FLOP/s ({}); roofs: ideal peaks. TB/s = 1e12 bytes/s.",
            self.first().config.engine
        );
        if self.skipped > 0 {
            note += &format!(
                " {} op(s) without FLOPs (e.g. embedding lookup) not shown.",
                self.skipped
            );
        }
        if self.outside > 0 {
            note += &format!(" {} op(s) beyond the axes not shown.", self.outside);
        }
        if self.drafts > 0 {
            note += &format!(
                " The {} ops of a speculative draft step are not shown.",
                self.drafts
            );
        }
        note
    }

    /// How many key lines fit in the side panel above a footnote starting at `foot_top`,
    /// after its fixed lines (headings, devices, links, ceilings, phases).
    pub(crate) fn key_room(&self, foot_top: f64) -> usize {
        let fixed_lines = 1.0
            + self.devices.len() as f64 * 2.0
            + 0.4
            + (2 * self.links.len() + self.ceilings.len()) as f64
            + 1.4
            + 2.0
            + 2.0
            + 1.0
            + if self.link_ops.is_empty() {
                0.0
            } else {
                1.3 + self.link_ops.len() as f64
            };
        ((foot_top - TOP - 6.0) / LINE_H - fixed_lines)
            .floor()
            .max(0.0) as usize
    }
}
