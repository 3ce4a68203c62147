//! Drawing primitives in pixel space on a chart's root area: boxes ([`Rect`]), text with
//! a [`Pen`], solid and dashed polylines, filled boxes, markers and leader lines, and the
//! title block every chart starts with.

use super::style::{GREY, INK, LABEL_PX, MarkerShape, TINY_PX, TITLE_PX, font};
use super::text::fit_text;
use crate::error::{Error, Result};
use plotters::coord::Shift;
use plotters::prelude::*;
use plotters::style::text_anchor::{HPos, Pos, VPos};

/// The root drawing area of a chart, in pixels.
pub(crate) type Root<'a> = DrawingArea<SVGBackend<'a>, Shift>;

/// Maps any drawing error (they cannot happen when rendering into a `String`, but are
/// values anyway) to the crate's error.
pub(crate) fn chart_err<E: std::fmt::Debug>(e: E) -> Error {
    Error::internal("chart rendering", format!("{e:?}"))
}

/// Checks sizes and gives a clear error for zero or absurd canvases.
pub(crate) fn check_size(width: u32, height: u32, min_w: u32, min_h: u32) -> Result<()> {
    if width < min_w || height < min_h || width > 20_000 || height > 20_000 {
        return Err(Error::invalid(
            "chart size",
            format!("{width}×{height} px is outside {min_w}×{min_h} .. 20000×20000 px"),
        ));
    }
    Ok(())
}

/// Renders a chart into an SVG string: a white canvas of `width × height` px that
/// `draw` paints on, presented at the end.
pub(crate) fn render_svg(
    width: u32,
    height: u32,
    draw: impl FnOnce(&Root) -> Result<()>,
) -> Result<String> {
    let mut svg = String::new();
    {
        let root = SVGBackend::with_string(&mut svg, (width, height)).into_drawing_area();
        root.fill(&WHITE).map_err(chart_err)?;
        draw(&root)?;
        root.present().map_err(chart_err)?;
    }
    Ok(svg)
}

/// An axis-aligned box in pixels.
#[derive(Debug, Clone, Copy, PartialEq)]
pub(crate) struct Rect {
    pub x0: f64,
    pub y0: f64,
    pub x1: f64,
    pub y1: f64,
}

impl Rect {
    pub(crate) fn new(x0: f64, y0: f64, x1: f64, y1: f64) -> Rect {
        Rect { x0, y0, x1, y1 }
    }

    /// A box of `r` around a point.
    pub(crate) fn around(x: f64, y: f64, r: f64) -> Rect {
        Rect::new(x - r, y - r, x + r, y + r)
    }

    pub(crate) fn overlaps(&self, o: &Rect) -> bool {
        self.x0 < o.x1 && o.x0 < self.x1 && self.y0 < o.y1 && o.y0 < self.y1
    }

    pub(crate) fn within(&self, o: &Rect) -> bool {
        self.x0 >= o.x0 && self.x1 <= o.x1 && self.y0 >= o.y0 && self.y1 <= o.y1
    }

    pub(crate) fn pad(&self, p: f64) -> Rect {
        Rect::new(self.x0 - p, self.y0 - p, self.x1 + p, self.y1 + p)
    }

    /// The point of the box closest to `(x, y)`.
    pub(crate) fn nearest(&self, x: f64, y: f64) -> (f64, f64) {
        (x.clamp(self.x0, self.x1), y.clamp(self.y0, self.y1))
    }
}

/// Fills the polygon through `pts` (px).
pub(crate) fn fill_polygon(root: &Root, pts: &[(f64, f64)], color: RGBAColor) -> Result<()> {
    let pts: Vec<(i32, i32)> = pts.iter().copied().map(px).collect();
    root.draw(&Polygon::new(pts, color.filled()))
        .map_err(chart_err)
}

fn px(p: (f64, f64)) -> (i32, i32) {
    (p.0.round() as i32, p.1.round() as i32)
}

/// How text is drawn: size (SVG `font-size`, px), weight, colour and which point of the
/// text sits at the given position (default: top left).
#[derive(Clone, Copy)]
pub(crate) struct Pen {
    pub size: f64,
    pub bold: bool,
    pub color: RGBColor,
    h: HPos,
    v: VPos,
}

impl Pen {
    /// Normal weight, anchored at the top left.
    pub(crate) fn new(size: f64, color: RGBColor) -> Pen {
        Pen {
            size,
            bold: false,
            color,
            h: HPos::Left,
            v: VPos::Top,
        }
    }

    /// The same in bold.
    pub(crate) fn bold(self) -> Pen {
        Pen { bold: true, ..self }
    }

    /// The same with another anchor.
    pub(crate) fn anchor(self, h: HPos, v: VPos) -> Pen {
        Pen { h, v, ..self }
    }
}

/// Draws text with its anchor point (see [`Pen`]) at `(x, y)`.
pub(crate) fn draw_text(root: &Root, text: &str, x: f64, y: f64, pen: Pen) -> Result<()> {
    let style = TextStyle::from(font(pen.size, pen.bold))
        .color(&pen.color)
        .pos(Pos::new(pen.h, pen.v));
    root.draw(&Text::new(text.to_string(), px((x, y)), style))
        .map_err(chart_err)
}

/// Draws text with its top left at the corner of `r` on a white, slightly transparent
/// halo, so it stays legible where it had to cross a line.
pub(crate) fn draw_on_halo(root: &Root, text: &str, r: &Rect, pen: Pen) -> Result<()> {
    fill_rect(root, &r.pad(1.0), WHITE.mix(0.85))?;
    draw_text(root, text, r.x0, r.y0, pen)
}

/// Draws a chart's title (bold) and subtitle (grey) at the top left, each shrunk to fit
/// the canvas width `w`.
pub(crate) fn draw_header(root: &Root, title: &str, subtitle: &str, w: f64) -> Result<()> {
    let (t, ts) = fit_text(title, w - 24.0, TITLE_PX, LABEL_PX, true);
    draw_text(root, &t, 12.0, 10.0, Pen::new(ts, INK).bold())?;
    let (st, ss) = fit_text(subtitle, w - 24.0, LABEL_PX, TINY_PX, false);
    draw_text(root, &st, 12.0, 33.0, Pen::new(ss, GREY))
}

/// A solid polyline in pixel space.
pub(crate) fn draw_line(
    root: &Root,
    pts: &[(f64, f64)],
    color: RGBAColor,
    width: u32,
) -> Result<()> {
    let pts: Vec<(i32, i32)> = pts.iter().map(|&p| px(p)).collect();
    root.draw(&PathElement::new(pts, color.stroke_width(width)))
        .map_err(chart_err)
}

/// A dashed polyline in pixel space (`dash` px on, `gap` px off), drawn as short
/// segments since SVG backends of plotters have no dash attribute.
pub(crate) fn draw_dashed(
    root: &Root,
    pts: &[(f64, f64)],
    color: RGBAColor,
    width: u32,
    (dash, gap): (f64, f64),
) -> Result<()> {
    let mut on = true;
    let mut left = dash;
    let mut current: Vec<(f64, f64)> = Vec::new();
    for w in pts.windows(2) {
        let (mut a, b) = (w[0], w[1]);
        let mut len = ((b.0 - a.0).powi(2) + (b.1 - a.1).powi(2)).sqrt();
        if on && current.is_empty() {
            current.push(a);
        }
        while len > 1e-9 {
            let step = left.min(len);
            let t = step / len;
            let p = (a.0 + (b.0 - a.0) * t, a.1 + (b.1 - a.1) * t);
            if on {
                current.push(p);
            }
            left -= step;
            len -= step;
            a = p;
            if left <= 1e-9 {
                if on {
                    draw_line(root, &current, color, width)?;
                    current.clear();
                } else {
                    current.push(a);
                }
                on = !on;
                left = if on { dash } else { gap };
            }
        }
    }
    if on && current.len() > 1 {
        draw_line(root, &current, color, width)?;
    }
    Ok(())
}

/// A filled rectangle in pixel space.
pub(crate) fn fill_rect(root: &Root, r: &Rect, color: RGBAColor) -> Result<()> {
    root.draw(&Rectangle::new(
        [px((r.x0, r.y0)), px((r.x1, r.y1))],
        color.filled(),
    ))
    .map_err(chart_err)
}

/// A marker: the shape in `fill` with an `outline` (drawn as a slightly larger shape
/// underneath, so a marker is two filled elements and never a polyline).
#[derive(Debug, Clone, Copy)]
pub(crate) struct Marker {
    pub shape: MarkerShape,
    /// Radius of the fill, px.
    pub r: f64,
    pub fill: RGBAColor,
    pub outline: RGBAColor,
}

impl Marker {
    /// Draws the marker centred at `(x, y)`.
    pub(crate) fn draw(&self, root: &Root, x: f64, y: f64) -> Result<()> {
        for (rad, c) in [(self.r + 1.3, self.outline), (self.r, self.fill)] {
            match self.shape {
                MarkerShape::Circle => root
                    .draw(&Circle::new(
                        px((x, y)),
                        rad.round().max(1.0) as i32,
                        c.filled(),
                    ))
                    .map_err(chart_err)?,
                shape => {
                    let pts: Vec<(i32, i32)> =
                        shape.polygon(x, y, rad).into_iter().map(px).collect();
                    root.draw(&Polygon::new(pts, c.filled()))
                        .map_err(chart_err)?
                }
            }
        }
        Ok(())
    }

    /// The box the drawn marker covers when centred at `(x, y)`.
    pub(crate) fn bounds(&self, x: f64, y: f64) -> Rect {
        Rect::around(x, y, self.shape.extent(self.r + 1.3))
    }
}

/// Draws a circle outline (a ring) of radius `r` px and stroke `width` centred at `(x, y)`.
pub(crate) fn draw_ring(
    root: &Root,
    x: f64,
    y: f64,
    r: f64,
    color: RGBAColor,
    width: u32,
) -> Result<()> {
    root.draw(&Circle::new(
        px((x, y)),
        r.round().max(1.0) as i32,
        color.stroke_width(width),
    ))
    .map_err(chart_err)
}

/// Draws a short leader line from a point to the nearest corner/edge of a label box.
pub(crate) fn draw_leader(
    root: &Root,
    from: (f64, f64),
    to: &Rect,
    color: RGBAColor,
) -> Result<()> {
    let (nx, ny) = to.nearest(from.0, from.1);
    draw_line(root, &[from, (nx, ny)], color, 1)
}
