//! Labels that never overlap: the collision-avoiding [`Placer`] and the one label type
//! all charts place with it ([`Label`], near a point, a marker or a run of anchors as a
//! [`Near`] says, with a [`Leader`] line where it had to move away).

use super::draw::{Pen, Rect, Root, draw_leader, draw_line, draw_on_halo};
use super::text::{fit_text, text_width};
use crate::error::Result;
use plotters::prelude::*;

/// Where a label goes relative to its anchor point, in order of preference.
#[derive(Debug, Clone, Copy, PartialEq)]
pub(crate) enum Side {
    Right,
    Left,
    Above,
    Below,
    AboveRight,
    AboveLeft,
    BelowRight,
    BelowLeft,
}

impl Side {
    /// Every side, right first.
    pub(crate) const ALL: [Side; 8] = [
        Side::Right,
        Side::AboveRight,
        Side::Above,
        Side::Left,
        Side::AboveLeft,
        Side::BelowRight,
        Side::Below,
        Side::BelowLeft,
    ];

    /// The box of size `w × h` at distance `d` from `(x, y)` on this side.
    fn place(self, x: f64, y: f64, w: f64, h: f64, d: f64) -> Rect {
        let (x0, y0) = match self {
            Side::Right => (x + d, y - h / 2.0),
            Side::Left => (x - d - w, y - h / 2.0),
            Side::Above => (x - w / 2.0, y - d - h),
            Side::Below => (x - w / 2.0, y + d),
            Side::AboveRight => (x + d * 0.7, y - d * 0.7 - h),
            Side::AboveLeft => (x - d * 0.7 - w, y - d * 0.7 - h),
            Side::BelowRight => (x + d * 0.7, y + d * 0.7),
            Side::BelowLeft => (x - d * 0.7 - w, y + d * 0.7),
        };
        Rect::new(x0, y0, x0 + w, y0 + h)
    }
}

/// Where a label may go: around which anchors (in order of preference), for which
/// marker, how far, on which sides.
#[derive(Debug, Clone)]
pub(crate) struct Near<'s> {
    anchors: Vec<(f64, f64)>,
    /// The marker `(x, y, half-extent)` the label belongs to.
    owner: Option<(f64, f64, f64)>,
    /// Least distance from the anchor, px.
    gap: f64,
    /// Greatest distance from the anchor, px.
    max_d: f64,
    sides: &'s [Side],
}

impl<'s> Near<'s> {
    /// Near the point `(x, y)`, `gap` to `max_d` px away.
    pub(crate) fn point(x: f64, y: f64, gap: f64, max_d: f64, sides: &'s [Side]) -> Near<'s> {
        Near::any(vec![(x, y)], gap, max_d, sides)
    }

    /// Near the marker at `(x, y)` with half-extent `e`: like [`Near::point`], but a
    /// spot that would read as labelling another marker is taken only in the second
    /// pass, and then with a leader line.
    pub(crate) fn marker(x: f64, y: f64, e: f64, max_d: f64, sides: &'s [Side]) -> Near<'s> {
        Near {
            anchors: vec![(x, y)],
            owner: Some((x, y, e)),
            gap: e + 2.0,
            max_d,
            sides,
        }
    }

    /// Near one of `anchors`, in order of preference.
    pub(crate) fn any(
        anchors: Vec<(f64, f64)>,
        gap: f64,
        max_d: f64,
        sides: &'s [Side],
    ) -> Near<'s> {
        Near {
            anchors,
            owner: None,
            gap,
            max_d,
            sides,
        }
    }
}

/// A label: its text, how it is drawn, and blank pixels each side of the text inside
/// its box.
#[derive(Clone)]
pub(crate) struct Label {
    pub text: String,
    pub pen: Pen,
    pub inset: f64,
}

impl Label {
    /// `text` with `pen`, no inset.
    pub(crate) fn new(text: impl Into<String>, pen: Pen) -> Label {
        Label {
            text: text.into(),
            pen,
            inset: 0.0,
        }
    }

    /// `text` shrunk from `size` down to `min_size`, then ellipsized, to fit `max_w`
    /// (normal weight).
    pub(crate) fn fitted(
        text: &str,
        max_w: f64,
        size: f64,
        min_size: f64,
        color: RGBColor,
    ) -> Label {
        let (t, s) = fit_text(text, max_w, size, min_size, false);
        Label::new(t, Pen::new(s, color))
    }

    /// Width of the label's box, px.
    pub(crate) fn width(&self) -> f64 {
        let k = if self.pen.bold { 1.1 } else { 1.0 };
        text_width(&self.text, self.pen.size) * k + 2.0 * self.inset
    }
}

/// The line drawn from a label's anchor to a label that had to move away from it.
#[derive(Debug, Clone, Copy)]
pub(crate) enum Leader {
    /// None.
    None,
    /// From the (first) anchor to the nearest point of the label's box.
    Line(RGBAColor),
    /// Horizontal, at the box's mid-height, from the anchor's x to the box's near edge.
    Level(RGBAColor),
}

/// Collision-avoiding label placement: remembers every box drawn so far (text, markers,
/// sampled lines) and finds a free spot for the next label inside `bounds`.
#[derive(Debug, Clone)]
pub(crate) struct Placer {
    pub bounds: Rect,
    taken: Vec<Rect>,
    /// Only text boxes: text must never overlap text, while it may cross a line.
    texts: Vec<Rect>,
    /// Text and marker boxes.
    solid: Vec<Rect>,
    /// Markers (centre, extent), so a label is never closer to another marker than to
    /// its own.
    markers: Vec<(f64, f64, f64)>,
}

impl Placer {
    pub(crate) fn new(bounds: Rect) -> Placer {
        Placer {
            bounds,
            taken: Vec::new(),
            texts: Vec::new(),
            solid: Vec::new(),
            markers: Vec::new(),
        }
    }

    /// Marks a marker of half-extent `e` at `(x, y)` as occupied.
    pub(crate) fn block_marker(&mut self, x: f64, y: f64, e: f64) {
        self.taken.push(Rect::around(x, y, e));
        self.solid.push(Rect::around(x, y, e));
        self.markers.push((x, y, e));
    }

    /// Whether a label box at `r` for the marker `(x, y, e)` reads as belonging to
    /// another marker (one whose edge is nearer to the box).
    fn ambiguous(&self, r: &Rect, own: (f64, f64, f64)) -> bool {
        let dist = |x: f64, y: f64| {
            let dx = (r.x0 - x).max(0.0).max(x - r.x1);
            let dy = (r.y0 - y).max(0.0).max(y - r.y1);
            (dx * dx + dy * dy).sqrt()
        };
        let mine = dist(own.0, own.1) - own.2;
        self.markers
            .iter()
            .filter(|m| (m.0, m.1) != (own.0, own.1))
            .any(|m| dist(m.0, m.1) - m.2 < mine - 0.5)
    }

    /// Marks a box as occupied by drawing (a marker, a piece of a line).
    pub(crate) fn block(&mut self, r: Rect) {
        self.taken.push(r);
    }

    /// Marks a box as occupied by text.
    pub(crate) fn block_text(&mut self, r: Rect) {
        self.taken.push(r);
        self.solid.push(r);
        self.texts.push(r);
    }

    /// Marks the pixels along a polyline as occupied (samples every ~6 px).
    pub(crate) fn block_line(&mut self, pts: &[(f64, f64)], half_width: f64) {
        for w in pts.windows(2) {
            let (a, b) = (w[0], w[1]);
            let len = ((b.0 - a.0).powi(2) + (b.1 - a.1).powi(2)).sqrt();
            let n = (len / 6.0).ceil().max(1.0) as usize;
            for i in 0..=n {
                let t = i as f64 / n as f64;
                let (x, y) = (a.0 + (b.0 - a.0) * t, a.1 + (b.1 - a.1) * t);
                self.taken.push(Rect::around(x, y, half_width));
            }
        }
    }

    /// Whether `r` is inside the bounds and clear of everything placed.
    pub(crate) fn free(&self, r: &Rect) -> bool {
        r.within(&self.bounds) && !self.taken.iter().any(|t| t.overlaps(r))
    }

    /// Whether `r` is inside the bounds and clear of text and markers (may cross lines).
    pub(crate) fn free_of_solid(&self, r: &Rect) -> bool {
        r.within(&self.bounds) && !self.solid.iter().any(|t| t.overlaps(r))
    }

    /// Whether `r` is inside the bounds and clear of other text (may cross lines).
    pub(crate) fn free_of_text(&self, r: &Rect) -> bool {
        r.within(&self.bounds) && !self.texts.iter().any(|t| t.overlaps(r))
    }

    /// Whether a leader line from the marker `own` to the box `r` stays clear of the
    /// other markers.
    fn leader_clear(&self, r: &Rect, own: (f64, f64, f64)) -> bool {
        let (tx, ty) = r.nearest(own.0, own.1);
        let len = ((tx - own.0).powi(2) + (ty - own.1).powi(2)).sqrt();
        let n = (len / 2.0).ceil().max(1.0) as usize;
        (0..=n).all(|i| {
            let t = i as f64 / n as f64;
            let (x, y) = (own.0 + (tx - own.0) * t, own.1 + (ty - own.1) * t);
            self.markers
                .iter()
                // markers that cover the owner's centre cannot be avoided
                .filter(|m| (own.0 - m.0).powi(2) + (own.1 - m.1).powi(2) > m.2 * m.2)
                .all(|m| (x - m.0).powi(2) + (y - m.1).powi(2) > m.2 * m.2)
        })
    }

    /// Finds a `w × h` box near `near` (see [`Near`]): trying its sides at growing
    /// distances from its gap up to its reach around each anchor in turn. The first pass wants a spot clear
    /// of everything (and, for a marker's label close enough to go without a leader
    /// line, unambiguous); the second accepts crossing lines; the third also markers,
    /// but no pass ever accepts overlapping text. Returns the box and whether it needs
    /// a leader line (far from its anchor, or ambiguous). The box is recorded as text.
    pub(crate) fn find(&mut self, w: f64, h: f64, near: &Near) -> Option<(Rect, bool)> {
        let Near {
            owner,
            gap,
            max_d,
            sides,
            ..
        } = *near;
        for pass in 0..3 {
            for &(x, y) in &near.anchors {
                let mut d = gap;
                while d <= max_d {
                    for s in sides {
                        let r = s.place(x, y, w, h, d);
                        let far = d > gap + 8.0;
                        let ambiguous = owner.is_some_and(|o| self.ambiguous(&r, o));
                        let ok = match pass {
                            0 => {
                                self.free(&r)
                                    && match owner {
                                        Some(o) if far || ambiguous => self.leader_clear(&r, o),
                                        _ => true,
                                    }
                            }
                            1 => self.free_of_solid(&r),
                            _ => self.free_of_text(&r),
                        };
                        if ok {
                            self.block_text(r);
                            return Some((r, far || ambiguous));
                        }
                    }
                    d += 5.0;
                }
            }
        }
        None
    }

    /// Places `label` near `near` and draws it (on a halo, after its leader line if it
    /// needs one). Returns whether there was room; without room nothing is drawn.
    pub(crate) fn place(
        &mut self,
        root: &Root,
        label: &Label,
        near: &Near,
        leader: Leader,
    ) -> Result<bool> {
        let Some((r, lead)) = self.find(label.width(), label.pen.size, near) else {
            return Ok(false);
        };
        let from = near.anchors[0];
        match leader {
            Leader::Line(c) if lead => draw_leader(root, from, &r, c)?,
            Leader::Level(c) if lead => {
                let ly = (r.y0 + r.y1) / 2.0;
                let lx = if r.x1 < from.0 { r.x1 } else { r.x0 };
                draw_line(root, &[(from.0, ly), (lx, ly)], c, 1)?;
            }
            _ => {}
        }
        let r = Rect {
            x0: r.x0 + label.inset,
            ..r
        };
        draw_on_halo(root, &label.text, &r, label.pen)?;
        Ok(true)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn placer_avoids_taken_boxes() {
        let mut p = Placer::new(Rect::new(0.0, 0.0, 100.0, 100.0));
        let near = Near::point(50.0, 50.0, 4.0, 60.0, &Side::ALL);
        let (a, _) = p.find(20.0, 10.0, &near).unwrap();
        let (b, _) = p.find(20.0, 10.0, &near).unwrap();
        assert!(!a.overlaps(&b));
        assert!(a.within(&p.bounds) && b.within(&p.bounds));
        // no room at all: None, never an overlap
        let mut tiny = Placer::new(Rect::new(0.0, 0.0, 10.0, 10.0));
        let near = Near::point(5.0, 5.0, 2.0, 20.0, &Side::ALL);
        assert!(tiny.find(30.0, 10.0, &near).is_none());
    }

    #[test]
    fn marker_labels_keep_clear_of_the_marker() {
        let mut p = Placer::new(Rect::new(0.0, 0.0, 200.0, 200.0));
        p.block_marker(100.0, 100.0, 6.0);
        let near = Near::marker(100.0, 100.0, 6.0, 40.0, &[Side::Right]);
        let (r, lead) = p.find(20.0, 10.0, &near).unwrap();
        assert!(r.x0 >= 108.0 && !lead);
    }

    #[test]
    fn label_width_counts_weight_and_inset() {
        let plain = Label::new("12", Pen::new(10.0, RGBColor(0, 0, 0)));
        let bold = Label {
            inset: 1.0,
            pen: plain.pen.bold(),
            ..plain.clone()
        };
        assert_eq!(plain.width(), text_width("12", 10.0));
        assert_eq!(bold.width(), text_width("12", 10.0) * 1.1 + 2.0);
    }
}
