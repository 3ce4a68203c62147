//! Charts as SVG strings: the roofline ([`roofline`]), decode throughput and latency
//! against batch ([`throughput`]), and stacked memory breakdowns ([`memory`]).
//!
//! Every chart is drawn with plotters' SVG backend into a `String`; nothing touches the
//! file system or the system's fonts. The renderers only read report structs (a
//! [`Prediction`](crate::predict::Prediction), a
//! [`ThroughputSeries`](throughput::ThroughputSeries), a list of
//! [`MemoryBar`](memory::MemoryBar)s), so a library user gets exactly what the CLI writes.
//!
//! House style, shared by all charts:
//! - colours from the colour-blind-safe Okabe-Ito palette ([`OKABE_ITO`]), and a distinct
//!   marker shape ([`MarkerShape`]) or a direct label for every series, so a chart also
//!   reads in greyscale;
//! - text never overlaps other text and never leaves the canvas: labels are placed by a
//!   small collision-avoiding placer that nudges them, draws a leader line when a label
//!   had to move away from its point, and drops a label (never the data) when there is
//!   no room. Text widths are estimated from DejaVu Sans metrics ([`text_width`]), a
//!   wide sans-serif, so narrower fonts only add slack;
//! - units at the edges: axis titles and legends name them (GB = 1e9 bytes);
//! - deterministic: the same inputs give the same bytes.
//!
//! ```
//! use ridgeline::{engine::EngineDb, hardware::HardwareDb, model::ModelDb};
//! use ridgeline::plot::roofline::{RooflineDevice, RooflineOptions, roofline};
//! use ridgeline::predict::{Scenario, predict};
//!
//! let model = ModelDb::builtin()?.resolve("llama-3-8b")?;
//! let hw = HardwareDb::builtin()?.get("h100")?;
//! let engine = EngineDb::builtin()?.get("typical")?;
//! let p = predict(&model, hw, engine, &Scenario::default())?;
//! let svg = roofline(&[RooflineDevice { hardware: hw, prediction: &p }], &RooflineOptions::default())?;
//! assert!(svg.starts_with("<svg"));
//! # Ok::<(), ridgeline::Error>(())
//! ```

pub mod memory;
pub mod roofline;
pub mod throughput;

use crate::error::{Error, Result};
use plotters::coord::Shift;
use plotters::prelude::*;
use plotters::style::FontStyle;
use plotters::style::text_anchor::{HPos, Pos, VPos};

/// The Okabe-Ito palette (Okabe & Ito 2008), safe for the common colour-vision
/// deficiencies: (name, RGB).
pub const OKABE_ITO: [(&str, [u8; 3]); 8] = [
    ("black", [0, 0, 0]),
    ("orange", [230, 159, 0]),
    ("sky blue", [86, 180, 233]),
    ("bluish green", [0, 158, 115]),
    ("yellow", [240, 228, 66]),
    ("blue", [0, 114, 178]),
    ("vermillion", [213, 94, 0]),
    ("reddish purple", [204, 121, 167]),
];

/// Order in which series (devices) take colours: dark and saturated first; yellow, which
/// is too light for lines on white, is never used for a line.
const SERIES_ORDER: [usize; 7] = [0, 5, 6, 3, 7, 1, 2];

/// The RGB colour of series `i` (devices in the roofline and throughput charts).
pub fn series_color(i: usize) -> [u8; 3] {
    OKABE_ITO[SERIES_ORDER[i % SERIES_ORDER.len()]].1
}

/// Marker shapes, so that series stay apart in greyscale.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum MarkerShape {
    /// A disc.
    Circle,
    /// An upward triangle.
    TriangleUp,
    /// An axis-aligned square.
    Square,
    /// A square standing on a corner.
    Diamond,
    /// A downward triangle.
    TriangleDown,
    /// A plus-shaped cross (filled).
    Plus,
}

impl MarkerShape {
    /// Shapes in the order series take them.
    pub const ALL: [MarkerShape; 6] = [
        MarkerShape::Circle,
        MarkerShape::Square,
        MarkerShape::TriangleUp,
        MarkerShape::Diamond,
        MarkerShape::TriangleDown,
        MarkerShape::Plus,
    ];

    /// The shape of series `i`.
    pub fn of_series(i: usize) -> MarkerShape {
        Self::ALL[i % Self::ALL.len()]
    }

    /// Outline points of the shape (not for circles) around `(x, y)` with "radius" `r`.
    fn polygon(self, x: f64, y: f64, r: f64) -> Vec<(f64, f64)> {
        match self {
            MarkerShape::Circle => Vec::new(),
            MarkerShape::Square => {
                let s = r * 0.89;
                vec![
                    (x - s, y - s),
                    (x + s, y - s),
                    (x + s, y + s),
                    (x - s, y + s),
                ]
            }
            MarkerShape::Diamond => {
                let s = r * 1.25;
                vec![(x, y - s), (x + s, y), (x, y + s), (x - s, y)]
            }
            MarkerShape::TriangleUp => {
                let s = r * 1.35;
                vec![
                    (x, y - s),
                    (x + s * 0.866, y + s * 0.5),
                    (x - s * 0.866, y + s * 0.5),
                ]
            }
            MarkerShape::TriangleDown => {
                let s = r * 1.35;
                vec![
                    (x, y + s),
                    (x - s * 0.866, y - s * 0.5),
                    (x + s * 0.866, y - s * 0.5),
                ]
            }
            MarkerShape::Plus => {
                let (a, b) = (r * 1.2, r * 0.42);
                vec![
                    (x - b, y - a),
                    (x + b, y - a),
                    (x + b, y - b),
                    (x + a, y - b),
                    (x + a, y + b),
                    (x + b, y + b),
                    (x + b, y + a),
                    (x - b, y + a),
                    (x - b, y + b),
                    (x - a, y + b),
                    (x - a, y - b),
                    (x - b, y - b),
                ]
            }
        }
    }

    /// Half the extent of the drawn shape for radius `r` (for collision boxes).
    fn extent(self, r: f64) -> f64 {
        match self {
            MarkerShape::Circle => r,
            MarkerShape::Square => r * 0.89,
            MarkerShape::Diamond => r * 1.25,
            MarkerShape::TriangleUp | MarkerShape::TriangleDown => r * 1.35,
            MarkerShape::Plus => r * 1.2,
        }
    }
}

/// Estimated advance width of `text` in pixels at font size `px` (the SVG `font-size`),
/// from DejaVu Sans metrics rounded up. Used to lay out labels and by the tests that
/// check every label stays on the canvas.
pub fn text_width(text: &str, px: f64) -> f64 {
    text.chars().map(char_em).sum::<f64>() * px
}

fn char_em(c: char) -> f64 {
    match c {
        'i' | 'l' | 'j' | '\'' | '|' | 'I' => 0.30,
        ' ' | '.' | ',' | ':' | ';' | '!' | '·' => 0.33,
        'f' | 't' | 'r' | '(' | ')' | '[' | ']' | '/' | '\\' | '-' | '{' | '}' => 0.42,
        'm' | 'M' | 'W' | '%' | '…' | '—' => 1.0,
        'w' => 0.83,
        'A'..='Z' => 0.79,
        '0'..='9' | 'a'..='z' | 'µ' | '_' | '#' | '$' | '?' => 0.64,
        '×' | '≥' | '≤' | '∝' | '→' | '+' | '=' | '<' | '>' | '~' | '≈' => 0.84,
        _ => 0.9,
    }
}

/// A tick label with an SI prefix: `0.1`, `1`, `10`, `100`, `1 k`, `10 M`, `1 T`,
/// `100 T`, `1 P` (values below 1 in plain decimals).
///
/// ```
/// use ridgeline::plot::tick_label;
/// assert_eq!(tick_label(0.1), "0.1");
/// assert_eq!(tick_label(1e14), "100 T");
/// assert_eq!(tick_label(2e3), "2 k");
/// assert_eq!(tick_label(1.5e9), "1.5 G");
/// ```
pub fn tick_label(x: f64) -> String {
    const PREFIXES: [(f64, &str); 6] = [
        (1e18, "E"),
        (1e15, "P"),
        (1e12, "T"),
        (1e9, "G"),
        (1e6, "M"),
        (1e3, "k"),
    ];
    let short = |v: f64| {
        let s = format!("{:.2}", v);
        let s = s.trim_end_matches('0').trim_end_matches('.');
        if s == "-0" {
            "0".to_string()
        } else {
            s.to_string()
        }
    };
    for (scale, p) in PREFIXES {
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

/// Maps any drawing error (they cannot happen when rendering into a `String`, but are
/// values anyway) to the crate's error.
pub(crate) fn chart_err<E: std::fmt::Debug>(e: E) -> Error {
    Error::internal("chart rendering", format!("{e:?}"))
}

/// An RGB triple as a plotters colour.
pub(crate) fn rgb(c: [u8; 3]) -> RGBColor {
    RGBColor(c[0], c[1], c[2])
}

/// Colours of the house style.
pub(crate) const INK: RGBColor = RGBColor(0, 0, 0);
pub(crate) const GREY: RGBColor = RGBColor(90, 90, 90);
pub(crate) const GRID: RGBColor = RGBColor(200, 200, 200);
pub(crate) const GRID_LIGHT: RGBColor = RGBColor(235, 235, 235);

/// Font sizes (SVG `font-size`, px). Only sizes whose `× 1.24 / 1.24` round trip is
/// exact in f64 are used, so the SVG carries short, stable numbers.
pub(crate) const TITLE_PX: f64 = 16.0;
pub(crate) const LABEL_PX: f64 = 12.0;
pub(crate) const SMALL_PX: f64 = 11.0;
pub(crate) const TINY_PX: f64 = 10.0;

/// A font of `px` (as written to the SVG's `font-size`; plotters divides by 1.24).
pub(crate) fn font(px: f64, bold: bool) -> FontDesc<'static> {
    FontDesc::new(
        FontFamily::SansSerif,
        px * 1.24,
        if bold {
            FontStyle::Bold
        } else {
            FontStyle::Normal
        },
    )
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
    pub fn new(x0: f64, y0: f64, x1: f64, y1: f64) -> Rect {
        Rect { x0, y0, x1, y1 }
    }

    /// A box of `r` around a point.
    pub fn around(x: f64, y: f64, r: f64) -> Rect {
        Rect::new(x - r, y - r, x + r, y + r)
    }

    pub fn overlaps(&self, o: &Rect) -> bool {
        self.x0 < o.x1 && o.x0 < self.x1 && self.y0 < o.y1 && o.y0 < self.y1
    }

    pub fn within(&self, o: &Rect) -> bool {
        self.x0 >= o.x0 && self.x1 <= o.x1 && self.y0 >= o.y0 && self.y1 <= o.y1
    }

    pub fn pad(&self, p: f64) -> Rect {
        Rect::new(self.x0 - p, self.y0 - p, self.x1 + p, self.y1 + p)
    }

    /// The point of the box closest to `(x, y)`.
    pub fn nearest(&self, x: f64, y: f64) -> (f64, f64) {
        (x.clamp(self.x0, self.x1), y.clamp(self.y0, self.y1))
    }
}

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
    #[cfg(test)]
    pub const ALL: [Side; 8] = [
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
    pub fn new(bounds: Rect) -> Placer {
        Placer {
            bounds,
            taken: Vec::new(),
            texts: Vec::new(),
            solid: Vec::new(),
            markers: Vec::new(),
        }
    }

    /// Marks a marker of half-extent `e` at `(x, y)` as occupied.
    pub fn block_marker(&mut self, x: f64, y: f64, e: f64) {
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
    pub fn block(&mut self, r: Rect) {
        self.taken.push(r);
    }

    /// Marks a box as occupied by text.
    pub fn block_text(&mut self, r: Rect) {
        self.taken.push(r);
        self.solid.push(r);
        self.texts.push(r);
    }

    /// Marks the pixels along a polyline as occupied (samples every ~6 px).
    pub fn block_line(&mut self, pts: &[(f64, f64)], half_width: f64) {
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
    pub fn free(&self, r: &Rect) -> bool {
        r.within(&self.bounds) && !self.taken.iter().any(|t| t.overlaps(r))
    }

    /// Whether `r` is inside the bounds and clear of text and markers (may cross lines).
    pub fn free_of_solid(&self, r: &Rect) -> bool {
        r.within(&self.bounds) && !self.solid.iter().any(|t| t.overlaps(r))
    }

    /// Whether `r` is inside the bounds and clear of other text (may cross lines).
    pub fn free_of_text(&self, r: &Rect) -> bool {
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

    /// Finds a `w × h` box near `(x, y)`, at least `gap` px away, trying `sides` at
    /// growing distances up to `max_d`. See [`Placer::near_any`].
    #[allow(clippy::too_many_arguments)]
    pub fn near(
        &mut self,
        x: f64,
        y: f64,
        w: f64,
        h: f64,
        gap: f64,
        max_d: f64,
        sides: &[Side],
    ) -> Option<(Rect, bool)> {
        self.search(&[(x, y)], None, w, h, gap, max_d, sides)
    }

    /// Finds a box for the label of the marker at `(x, y)` with half-extent `e`: like
    /// [`Placer::near`], but a spot that would read as labelling another marker is taken
    /// only in the second pass, and then with a leader line.
    #[allow(clippy::too_many_arguments)]
    pub fn near_marker(
        &mut self,
        x: f64,
        y: f64,
        e: f64,
        w: f64,
        h: f64,
        max_d: f64,
        sides: &[Side],
    ) -> Option<(Rect, bool)> {
        self.search(&[(x, y)], Some((x, y, e)), w, h, e + 2.0, max_d, sides)
    }

    /// Finds a `w × h` box near one of `anchors` (in order of preference), at least `gap`
    /// px away. See [`Placer::search`].
    #[allow(clippy::too_many_arguments)]
    pub fn near_any(
        &mut self,
        anchors: &[(f64, f64)],
        w: f64,
        h: f64,
        gap: f64,
        max_d: f64,
        sides: &[Side],
    ) -> Option<(Rect, bool)> {
        self.search(anchors, None, w, h, gap, max_d, sides)
    }

    /// The search behind the `near*` methods: trying `sides` at growing distances from
    /// `gap` up to `max_d` around each anchor in turn. The first pass wants a spot clear
    /// of everything (and, for a marker's label close enough to go without a leader
    /// line, unambiguous); the second accepts crossing lines; the third also markers,
    /// but no pass ever accepts overlapping text. Returns the box and whether it needs
    /// a leader line (far from its anchor, or ambiguous). The box is recorded as text.
    #[allow(clippy::too_many_arguments)]
    fn search(
        &mut self,
        anchors: &[(f64, f64)],
        owner: Option<(f64, f64, f64)>,
        w: f64,
        h: f64,
        gap: f64,
        max_d: f64,
        sides: &[Side],
    ) -> Option<(Rect, bool)> {
        for pass in 0..3 {
            for &(x, y) in anchors {
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
}

/// The root drawing area of a chart, in pixels.
pub(crate) type Root<'a> = DrawingArea<SVGBackend<'a>, Shift>;

fn px(p: (f64, f64)) -> (i32, i32) {
    (p.0.round() as i32, p.1.round() as i32)
}

/// Draws a chart's title (bold) and subtitle (grey) at the top left, each shrunk to fit
/// the canvas width `w`.
pub(crate) fn draw_header(root: &Root, title: &str, subtitle: &str, w: f64) -> Result<()> {
    let (t, ts) = fit_text(title, w - 24.0, TITLE_PX, LABEL_PX, true);
    draw_text(root, &t, 12.0, 10.0, ts, true, &INK, HPos::Left, VPos::Top)?;
    let (st, ss) = fit_text(subtitle, w - 24.0, LABEL_PX, TINY_PX, false);
    draw_text(
        root,
        &st,
        12.0,
        33.0,
        ss,
        false,
        &GREY,
        HPos::Left,
        VPos::Top,
    )
}

/// Draws one line of legend or side-panel text at `(x, y)` (top left), shrunk from the
/// small to the tiny size, then shortened, to fit `max_w`.
pub(crate) fn legend_text(root: &Root, text: &str, x: f64, y: f64, max_w: f64) -> Result<()> {
    let (t, size) = fit_text(text, max_w, SMALL_PX, TINY_PX, false);
    draw_text(root, &t, x, y, size, false, &INK, HPos::Left, VPos::Top)
}

/// Draws a footnote wrapped to `width` at the bottom of the side panel at `x`, only if
/// it fits below `y_min` on a canvas of height `h` (otherwise it is left out).
pub(crate) fn draw_footnote(
    root: &Root,
    text: &str,
    x: f64,
    width: f64,
    y_min: f64,
    h: f64,
) -> Result<()> {
    let foot = roofline::wrap(text, width, TINY_PX);
    let foot_top = h - 10.0 - foot.len() as f64 * 13.0;
    if foot_top > y_min {
        for (k, line) in foot.iter().enumerate() {
            let y = foot_top + 13.0 * k as f64;
            draw_text(
                root,
                line,
                x,
                y,
                TINY_PX,
                false,
                &GREY,
                HPos::Left,
                VPos::Top,
            )?;
        }
    }
    Ok(())
}

/// The plotting area of a chart as a [`Rect`] in pixels (inclusive edges).
pub(crate) fn plot_rect(xr: std::ops::Range<i32>, yr: std::ops::Range<i32>) -> Rect {
    Rect::new(
        xr.start as f64,
        yr.start as f64,
        xr.end as f64 - 1.0,
        yr.end as f64 - 1.0,
    )
}

/// Draws text with its top-left corner (or other anchor) at `(x, y)`.
#[allow(clippy::too_many_arguments)]
pub(crate) fn draw_text(
    root: &Root,
    text: &str,
    x: f64,
    y: f64,
    size: f64,
    bold: bool,
    color: &RGBColor,
    h: HPos,
    v: VPos,
) -> Result<()> {
    let style = TextStyle::from(font(size, bold))
        .color(color)
        .pos(Pos::new(h, v));
    root.draw(&Text::new(text.to_string(), px((x, y)), style))
        .map_err(chart_err)
}

/// Draws text filling the box `r` placed by a [`Placer`] (left-aligned, top anchored)
/// on a white, slightly transparent halo, so it stays legible where it had to cross a
/// line.
pub(crate) fn draw_text_in(
    root: &Root,
    text: &str,
    r: &Rect,
    size: f64,
    color: &RGBColor,
) -> Result<()> {
    draw_label(root, text, r, size, false, color)
}

/// [`draw_text_in`] with a choice of weight.
pub(crate) fn draw_label(
    root: &Root,
    text: &str,
    r: &Rect,
    size: f64,
    bold: bool,
    color: &RGBColor,
) -> Result<()> {
    fill_rect(root, &r.pad(1.0), WHITE.mix(0.85))?;
    draw_text(
        root,
        text,
        r.x0,
        r.y0,
        size,
        bold,
        color,
        HPos::Left,
        VPos::Top,
    )
}

/// Shrinks `text` to fit `max_w` pixels: first the font down to `min_size`, then the
/// text with an ellipsis. Returns the text and size to draw.
pub(crate) fn fit_text(
    text: &str,
    max_w: f64,
    size: f64,
    min_size: f64,
    bold: bool,
) -> (String, f64) {
    let k = if bold { 1.1 } else { 1.0 };
    let mut s = size;
    while s > min_size && text_width(text, s) * k > max_w {
        s -= 1.0;
    }
    if text_width(text, s) * k <= max_w {
        return (text.to_string(), s);
    }
    let mut chars: Vec<char> = text.chars().collect();
    while !chars.is_empty() {
        chars.pop();
        let t: String = chars.iter().collect::<String>().trim_end().to_string() + "…";
        if text_width(&t, s) * k <= max_w {
            return (t, s);
        }
    }
    (String::new(), s)
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
    dash: f64,
    gap: f64,
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

/// A marker: the shape in `fill` with a dark outline (drawn as a slightly larger shape
/// underneath, so a marker is two filled elements and never a polyline).
pub(crate) fn draw_marker(
    root: &Root,
    shape: MarkerShape,
    x: f64,
    y: f64,
    r: f64,
    fill: RGBAColor,
    outline: RGBAColor,
) -> Result<()> {
    for (rad, c) in [(r + 1.3, outline), (r, fill)] {
        match shape {
            MarkerShape::Circle => root
                .draw(&Circle::new(
                    px((x, y)),
                    rad.round().max(1.0) as i32,
                    c.filled(),
                ))
                .map_err(chart_err)?,
            _ => {
                let pts: Vec<(i32, i32)> = shape.polygon(x, y, rad).into_iter().map(px).collect();
                root.draw(&Polygon::new(pts, c.filled()))
                    .map_err(chart_err)?
            }
        }
    }
    Ok(())
}

/// The box a marker covers.
pub(crate) fn marker_box(shape: MarkerShape, x: f64, y: f64, r: f64) -> Rect {
    Rect::around(x, y, shape.extent(r + 1.3))
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

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn tick_labels() {
        assert_eq!(tick_label(0.1), "0.1");
        assert_eq!(tick_label(1.0), "1");
        assert_eq!(tick_label(10.0), "10");
        assert_eq!(tick_label(1e3), "1 k");
        assert_eq!(tick_label(1e12), "1 T");
        assert_eq!(tick_label(1e14), "100 T");
        assert_eq!(tick_label(1e15), "1 P");
        assert_eq!(tick_label(0.01), "0.01");
        assert_eq!(tick_label(0.0), "0");
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
    fn placer_avoids_taken_boxes() {
        let mut p = Placer::new(Rect::new(0.0, 0.0, 100.0, 100.0));
        let (a, _) = p
            .near(50.0, 50.0, 20.0, 10.0, 4.0, 60.0, &Side::ALL)
            .unwrap();
        let (b, _) = p
            .near(50.0, 50.0, 20.0, 10.0, 4.0, 60.0, &Side::ALL)
            .unwrap();
        assert!(!a.overlaps(&b));
        assert!(a.within(&p.bounds) && b.within(&p.bounds));
        // no room at all: None, never an overlap
        let mut tiny = Placer::new(Rect::new(0.0, 0.0, 10.0, 10.0));
        assert!(
            tiny.near(5.0, 5.0, 30.0, 10.0, 2.0, 20.0, &Side::ALL)
                .is_none()
        );
    }

    #[test]
    fn fit_text_shrinks_then_truncates() {
        let (t, s) = fit_text("short", 200.0, 12.0, 10.0, false);
        assert_eq!((t.as_str(), s), ("short", 12.0));
        let long = "a very long title that cannot possibly fit in forty pixels";
        let (t, s) = fit_text(long, 40.0, 12.0, 10.0, false);
        assert_eq!(s, 10.0);
        assert!(t.ends_with('…') && text_width(&t, s) <= 40.0);
    }
}
