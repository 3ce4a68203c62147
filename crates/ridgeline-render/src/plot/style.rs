//! The house style: the Okabe-Ito palette and the order series take colours, marker
//! shapes, ink and grid colours, font sizes and the font.

use plotters::prelude::*;
use plotters::style::FontStyle;

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
    pub(crate) const ALL: [MarkerShape; 6] = [
        MarkerShape::Circle,
        MarkerShape::Square,
        MarkerShape::TriangleUp,
        MarkerShape::Diamond,
        MarkerShape::TriangleDown,
        MarkerShape::Plus,
    ];

    /// The shape of series `i`.
    pub(crate) fn of_series(i: usize) -> MarkerShape {
        Self::ALL[i % Self::ALL.len()]
    }

    /// Outline points of the shape (not for circles) around `(x, y)` with "radius" `r`.
    pub(crate) fn polygon(self, x: f64, y: f64, r: f64) -> Vec<(f64, f64)> {
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
    pub(crate) fn extent(self, r: f64) -> f64 {
        match self {
            MarkerShape::Circle => r,
            MarkerShape::Square => r * 0.89,
            MarkerShape::Diamond => r * 1.25,
            MarkerShape::TriangleUp | MarkerShape::TriangleDown => r * 1.35,
            MarkerShape::Plus => r * 1.2,
        }
    }
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
/// Warnings and the capacity line (Okabe-Ito vermillion).
pub(crate) const ALERT: RGBColor = RGBColor(213, 94, 0);
/// Dark outline of coloured markers.
pub(crate) const OUTLINE: RGBColor = RGBColor(40, 40, 40);

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
