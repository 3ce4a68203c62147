//! Axes: tick values and their labels (SI prefixes, decades, "nice" linear steps), axis
//! titles fitted to their axes, and [`draw_axes`], which builds a plotters chart in the
//! house style and hands back its [`Frame`].

use super::draw::{Rect, Root, chart_err};
use super::style::{GRID, INK, LABEL_PX, SMALL_PX, TINY_PX, font};
use super::text::fit_text;
use crate::error::Result;
use crate::units::SI_PREFIXES;
use plotters::coord::combinators::{LogCoord, WithKeyPoints};
use plotters::coord::ranged1d::{AsRangedCoord, Ranged, ValueFormatter};
use plotters::coord::types::RangedCoordf64;
use plotters::prelude::*;

/// A log axis with its major ticks (labelled, on the bold grid) and minor ones given.
pub(crate) type LogAxis = WithKeyPoints<LogCoord<f64>>;

/// A log axis over `lo..hi` with `major` and `minor` ticks.
pub(crate) fn log_axis(lo: f64, hi: f64, (major, minor): (Vec<f64>, Vec<f64>)) -> LogAxis {
    (lo..hi)
        .log_scale()
        .with_key_points(major)
        .with_light_points(minor)
}

/// A linear axis.
pub(crate) type LinearAxis = RangedCoordf64;

/// A tick label with an SI prefix: `0.1`, `1`, `10`, `100`, `1 k`, `10 M`, `1 T`,
/// `100 T`, `1 P` (values below 1 in plain decimals).
///
/// ```
/// use ridgeline_render::plot::tick_label;
/// assert_eq!(tick_label(0.1), "0.1");
/// assert_eq!(tick_label(1e14), "100 T");
/// assert_eq!(tick_label(2e3), "2 k");
/// assert_eq!(tick_label(1.5e9), "1.5 G");
/// ```
pub fn tick_label(x: f64) -> String {
    let short = |v: f64| {
        let s = format!("{:.2}", v);
        let s = s.trim_end_matches('0').trim_end_matches('.');
        if s == "-0" {
            "0".to_string()
        } else {
            s.to_string()
        }
    };
    for (scale, p) in SI_PREFIXES {
        if x.abs() >= scale * 0.9995 {
            return format!("{} {p}", short(x / scale));
        }
    }
    if x.abs() < 1e-3 && x != 0.0 {
        return format!("{x:e}");
    }
    let s = format!("{:.3}", x);
    let s = s.trim_end_matches('0').trim_end_matches('.');
    s.to_string()
}

/// Powers of ten from `10^floor(log10(lo))` to `10^ceil(log10(hi))`, inclusive.
pub fn decades(lo: f64, hi: f64) -> Vec<f64> {
    let a = lo.log10().floor() as i32;
    let b = hi.log10().ceil() as i32;
    (a..=b).map(|e| 10f64.powi(e)).collect()
}

/// Minor grid values 2..9 × each decade strictly inside `(lo, hi)`.
pub(crate) fn minor_decades(lo: f64, hi: f64) -> Vec<f64> {
    let mut out = Vec::new();
    for d in decades(lo, hi) {
        for k in 2..10 {
            let v = d * k as f64;
            if v > lo && v < hi {
                out.push(v);
            }
        }
    }
    out
}

/// Major and minor tick values for a log axis over `[lo, hi]`: decades when the range
/// holds at least three, else 1-2-5 steps when they give two or more, else every integer
/// multiple of the decade.
pub fn log_ticks(lo: f64, hi: f64) -> (Vec<f64>, Vec<f64>) {
    let inside = |v: &f64| *v >= lo * (1.0 - 1e-9) && *v <= hi * (1.0 + 1e-9);
    let decs: Vec<f64> = decades(lo, hi);
    let all: Vec<f64> = decs
        .iter()
        .flat_map(|d| (1..10).map(move |k| d * k as f64))
        .filter(inside)
        .collect();
    let majors = |steps: &[f64]| -> Vec<f64> {
        decs.iter()
            .flat_map(|d| steps.iter().map(move |k| d * k))
            .filter(inside)
            .collect()
    };
    let mut major = majors(&[1.0]);
    if major.len() < 3 {
        major = majors(&[1.0, 2.0, 5.0]);
    }
    if major.len() < 2 {
        major = all.clone();
    }
    let minor = all
        .into_iter()
        .filter(|v| !major.iter().any(|m| (m - v).abs() <= 1e-9 * v))
        .collect();
    (major, minor)
}

/// `10^floor(log10(x))`.
pub(crate) fn decade_floor(x: f64) -> f64 {
    10f64.powi(x.log10().floor() as i32)
}

/// `10^ceil(log10(x))`.
pub(crate) fn decade_ceil(x: f64) -> f64 {
    10f64.powi(x.log10().ceil() as i32)
}

/// A GB tick without SI prefixes (`1000`, `2.5`).
pub(crate) fn plain_tick(v: &f64) -> String {
    let s = format!("{v:.2}");
    s.trim_end_matches('0').trim_end_matches('.').to_string()
}

/// A tick label with an SI prefix, as plotters' label formatter wants it.
pub(crate) fn si_tick(v: &f64) -> String {
    tick_label(*v)
}

/// "Nice" linear ticks from 0 to at least `max` (about 6 of them).
pub(crate) fn nice_ticks(max: f64) -> Vec<f64> {
    let raw = max / 6.0;
    let mag = 10f64.powi(raw.log10().floor() as i32);
    let step = [1.0, 2.0, 2.5, 5.0, 10.0]
        .iter()
        .map(|k| k * mag)
        .find(|s| *s >= raw)
        .unwrap_or(10.0 * mag);
    let n = (max / step).ceil() as usize;
    (0..=n).map(|i| i as f64 * step).collect()
}

/// Axis titles fitted to their axes: the shared font size (plotters has one style for
/// both) and the two texts, shrunk or ellipsized to `x_avail` / `y_avail` pixels.
pub(crate) fn fit_axis_titles(
    x: &str,
    x_avail: f64,
    y: &str,
    y_avail: f64,
) -> (String, String, f64) {
    let size = fit_text(x, x_avail - 6.0, LABEL_PX, TINY_PX, false)
        .1
        .min(fit_text(y, y_avail - 6.0, LABEL_PX, TINY_PX, false).1);
    (
        fit_text(x, x_avail - 6.0, size, size, false).0,
        fit_text(y, y_avail - 6.0, size, size, false).0,
        size,
    )
}

/// A y title alone (the x axis has none) fitted to `y_avail` pixels: its text and size.
pub(crate) fn fit_y_title(y: &str, y_avail: f64) -> (String, f64) {
    let (_, t, size) = fit_axis_titles("", f64::INFINITY, y, y_avail);
    (t, size)
}

/// How a plotting area sits in its drawing area and what its axes say; see [`draw_axes`].
#[derive(Clone, Copy)]
pub(crate) struct Axes<'t> {
    /// Space above the plotting area, px.
    pub margin_top: u32,
    /// Space below the x labels, px.
    pub margin_bottom: u32,
    /// Height under the plotting area for x tick labels and the x title (0: neither).
    pub x_label_area: u32,
    /// The x title (`None`: no title).
    pub x_title: Option<&'t str>,
    /// The y title.
    pub y_title: &'t str,
    /// Font size of both titles (see [`fit_axis_titles`]).
    pub title_px: f64,
    /// Labels of the x ticks (`None`: plotters' own).
    pub x_ticks: Option<fn(&f64) -> String>,
    /// Labels of the y ticks.
    pub y_ticks: fn(&f64) -> String,
    /// How many y ticks to aim for on a linear axis (`None`: plotters' default).
    pub y_tick_count: Option<usize>,
    /// Vertical grid lines at the x ticks.
    pub x_grid: bool,
    /// Minor grid lines.
    pub minor_grid: ShapeStyle,
}

impl<'t> Axes<'t> {
    /// Axes whose y title is `y_title` at `title_px`, with SI tick labels on y, no x
    /// labels, full grid and light minor grid lines, 4 px from the top.
    pub(crate) fn new(y_title: &'t str, title_px: f64) -> Axes<'t> {
        Axes {
            margin_top: 4,
            margin_bottom: 0,
            x_label_area: 0,
            x_title: None,
            y_title,
            title_px,
            x_ticks: None,
            y_ticks: si_tick,
            y_tick_count: None,
            x_grid: true,
            minor_grid: super::style::GRID_LIGHT.stroke_width(1),
        }
    }

    /// The same with x tick labels and the x title `x_title` below.
    pub(crate) fn with_x(self, x_title: &'t str, ticks: fn(&f64) -> String) -> Axes<'t> {
        Axes {
            x_label_area: 46,
            x_title: Some(x_title),
            x_ticks: Some(ticks),
            ..self
        }
    }
}

/// A plotting area drawn with its axes: its box in pixels (inclusive edges) and the map
/// from data to pixels.
pub(crate) struct Frame<'a, X: Ranged, Y: Ranged> {
    chart: ChartContext<'a, SVGBackend<'a>, Cartesian2d<X, Y>>,
    /// The plotting area.
    pub rect: Rect,
}

impl<X: Ranged<ValueType = f64>, Y: Ranged<ValueType = f64>> Frame<'_, X, Y> {
    /// The pixel of the data point `(x, y)`.
    pub(crate) fn px(&self, x: f64, y: f64) -> (f64, f64) {
        let (a, b) = self.chart.backend_coord(&(x, y));
        (a as f64, b as f64)
    }
}

/// Builds a chart over `x` and `y` on `area` (70 px of y labels on the left, 10 px of
/// margin on the right), draws its grid, ticks and titles as `axes` says, and returns
/// its [`Frame`].
pub(crate) fn draw_axes<'a, XS, YS>(
    area: &Root<'a>,
    axes: &Axes,
    x: XS,
    y: YS,
) -> Result<Frame<'a, XS::CoordDescType, YS::CoordDescType>>
where
    XS: AsRangedCoord<Value = f64>,
    YS: AsRangedCoord<Value = f64>,
    XS::CoordDescType: ValueFormatter<f64>,
    YS::CoordDescType: ValueFormatter<f64>,
{
    let mut chart = ChartBuilder::on(area)
        .margin_top(axes.margin_top)
        .margin_right(10)
        .margin_bottom(axes.margin_bottom)
        .x_label_area_size(axes.x_label_area)
        .y_label_area_size(70)
        .build_cartesian_2d(x, y)
        .map_err(chart_err)?;
    let (x_ticks, y_ticks) = (axes.x_ticks, axes.y_ticks);
    let mut mesh = chart.configure_mesh();
    if let Some(t) = axes.x_title {
        mesh.x_desc(t);
    }
    if let Some(f) = &x_ticks {
        mesh.x_label_formatter(f);
    }
    if let Some(n) = axes.y_tick_count {
        mesh.y_labels(n);
    }
    if !axes.x_grid {
        mesh.disable_x_mesh();
    }
    mesh.y_desc(axes.y_title)
        .y_label_formatter(&y_ticks)
        .label_style(font(SMALL_PX, false))
        .axis_desc_style(font(axes.title_px, false))
        .bold_line_style(GRID.stroke_width(1))
        .light_line_style(axes.minor_grid)
        .axis_style(INK.stroke_width(1))
        .draw()
        .map_err(chart_err)?;
    let (xr, yr) = chart.plotting_area().get_pixel_range();
    let rect = Rect::new(
        xr.start as f64,
        yr.start as f64,
        xr.end as f64 - 1.0,
        yr.end as f64 - 1.0,
    );
    Ok(Frame { chart, rect })
}

#[cfg(test)]
mod tests {
    use super::super::text::text_width;
    use super::*;

    #[test]
    fn tick_labels() {
        for (x, want) in [
            (0.1, "0.1"),
            (1.0, "1"),
            (10.0, "10"),
            (1e3, "1 k"),
            (1e12, "1 T"),
            (1e14, "100 T"),
            (1e15, "1 P"),
            (0.01, "0.01"),
            (0.0, "0"),
        ] {
            assert_eq!(tick_label(x), want, "tick at {x}");
        }
    }

    #[test]
    fn a_lone_y_title_fits_its_axis() {
        let (t, s) = fit_y_title("Memory per device (GB = 1e9 bytes)", 100.0);
        assert_eq!(s, TINY_PX);
        assert!(t.ends_with('…') && text_width(&t, s) <= 94.0);
        assert_eq!(fit_y_title("GB", 100.0), ("GB".to_string(), LABEL_PX));
    }

    #[test]
    fn log_ticks_adapt_to_range() {
        assert_eq!(log_ticks(0.5, 2000.0).0, vec![1.0, 10.0, 100.0, 1000.0]);
        assert_eq!(log_ticks(3.0, 30.0).0, vec![5.0, 10.0, 20.0]);
        assert_eq!(log_ticks(3.0, 170.0).0, vec![5.0, 10.0, 20.0, 50.0, 100.0]);
        assert_eq!(log_ticks(6.5, 9.5).0, vec![7.0, 8.0, 9.0]);
    }

    #[test]
    fn decade_ranges() {
        assert_eq!(decades(0.15, 900.0), vec![0.1, 1.0, 10.0, 100.0, 1000.0]);
        assert_eq!(minor_decades(1.0, 10.0).len(), 8);
    }

    #[test]
    fn nice_ticks_cover_the_range() {
        assert_eq!(nice_ticks(12.0), vec![0.0, 2.0, 4.0, 6.0, 8.0, 10.0, 12.0]);
        assert_eq!(plain_tick(&2.5), "2.5");
        assert_eq!(plain_tick(&1000.0), "1000");
    }
}
