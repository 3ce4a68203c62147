//! The side panel every chart keeps right of its plot: headings, legend rows (a sample
//! of what is drawn and a line of text), and a footnote at the bottom.

use super::draw::{Marker, Pen, Rect, Root, draw_dashed, draw_line, draw_text, fill_rect};
use super::style::{GREY, INK, LABEL_PX, TINY_PX};
use super::text::{fit_text, wrap};
use crate::error::Result;
use plotters::prelude::*;

/// What a legend row shows of the chart, placed relative to the row's top left.
#[derive(Debug, Clone, Copy)]
pub(crate) enum Sample {
    /// A filled box from `(x0, y0)` to `(x1, y1)`.
    Fill([f64; 4], RGBAColor),
    /// A line from one point to another in a colour and width, dashed as `(on, off)`
    /// px when given.
    Line {
        from: (f64, f64),
        to: (f64, f64),
        color: RGBAColor,
        width: u32,
        dash: Option<(f64, f64)>,
    },
    /// A marker centred at a point.
    Marker((f64, f64), Marker),
}

/// A short horizontal line sample 7 px below the row's top, `len` px long.
pub(crate) fn line_sample(len: f64, color: RGBAColor, dash: Option<(f64, f64)>) -> Sample {
    Sample::Line {
        from: (0.0, 7.0),
        to: (len, 7.0),
        color,
        width: 2,
        dash,
    }
}

/// A footnote wrapped to a width and set at the bottom of the canvas.
#[derive(Debug, Clone)]
pub(crate) struct Footnote {
    lines: Vec<String>,
    /// Top of its first line, px.
    pub top: f64,
}

impl Footnote {
    /// `text` in tiny type wrapped to `width`, ending 10 px above the bottom of a canvas
    /// `h` px high.
    pub(crate) fn new(text: &str, width: f64, h: f64) -> Footnote {
        let lines = wrap(text, width, TINY_PX);
        let top = h - 10.0 - lines.len() as f64 * 13.0;
        Footnote { lines, top }
    }

    /// Draws it with its left edge at `x`.
    pub(crate) fn draw(&self, root: &Root, x: f64) -> Result<()> {
        for (k, line) in self.lines.iter().enumerate() {
            draw_text(
                root,
                line,
                x,
                self.top + 13.0 * k as f64,
                Pen::new(TINY_PX, GREY),
            )?;
        }
        Ok(())
    }
}

/// The side panel: a column at `x`, `inner` px wide, written from the top down; `y` is
/// the top of the next row.
pub(crate) struct Panel<'r, 'a> {
    root: &'r Root<'a>,
    pub x: f64,
    pub inner: f64,
    pub y: f64,
    line_h: f64,
}

impl<'r, 'a> Panel<'r, 'a> {
    /// A panel at `x`, `inner` px wide, starting at `y`, with rows `line_h` px apart.
    pub(crate) fn new(root: &'r Root<'a>, x: f64, inner: f64, y: f64, line_h: f64) -> Self {
        Panel {
            root,
            x,
            inner,
            y,
            line_h,
        }
    }

    /// Moves down by `rows` row heights.
    pub(crate) fn skip(&mut self, rows: f64) {
        self.y += self.line_h * rows;
    }

    /// A bold heading across the panel, then the next row.
    pub(crate) fn heading(&mut self, text: &str) -> Result<()> {
        let (t, s) = fit_text(text, self.inner, LABEL_PX, TINY_PX, true);
        draw_text(self.root, &t, self.x, self.y, Pen::new(s, INK).bold())?;
        self.y += self.line_h;
        Ok(())
    }

    /// Draws samples in the current row.
    pub(crate) fn samples(&self, samples: &[Sample]) -> Result<()> {
        let (x, y) = (self.x, self.y);
        for s in samples {
            match *s {
                Sample::Fill([x0, y0, x1, y1], c) => {
                    fill_rect(self.root, &Rect::new(x + x0, y + y0, x + x1, y + y1), c)?
                }
                Sample::Line {
                    from,
                    to,
                    color,
                    width,
                    dash,
                } => {
                    let pts = [(x + from.0, y + from.1), (x + to.0, y + to.1)];
                    match dash {
                        Some(d) => draw_dashed(self.root, &pts, color, width, d)?,
                        None => draw_line(self.root, &pts, color, width)?,
                    }
                }
                Sample::Marker((mx, my), m) => m.draw(self.root, x + mx, y + my)?,
            }
        }
        Ok(())
    }

    /// Draws `text` `indent` px from the panel's left edge in the current row, shrunk
    /// from `size` down to the tiny size, then ellipsized, to fit the rest of the width.
    pub(crate) fn text(&self, indent: f64, text: &str, size: f64, color: RGBColor) -> Result<()> {
        let (t, s) = fit_text(text, self.inner - indent, size, TINY_PX, false);
        draw_text(self.root, &t, self.x + indent, self.y, Pen::new(s, color))
    }

    /// A row: `samples`, then `text` at `indent` (see [`Panel::text`]), then the next
    /// row.
    pub(crate) fn row(
        &mut self,
        samples: &[Sample],
        indent: f64,
        text: &str,
        size: f64,
        color: RGBColor,
    ) -> Result<()> {
        self.samples(samples)?;
        self.text(indent, text, size, color)?;
        self.y += self.line_h;
        Ok(())
    }

    /// Draws `foot` at the bottom of the panel if it starts below `y_min` (otherwise
    /// it is left out).
    pub(crate) fn footnote(&self, foot: &Footnote, y_min: f64) -> Result<()> {
        if foot.top > y_min {
            foot.draw(self.root, self.x)?;
        }
        Ok(())
    }
}
