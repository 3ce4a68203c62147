//! A ragged grid of measured points and its interpolation, axis by axis in the
//! logarithm of each coordinate.

/// Measured efficiencies at points of up to three axes. The grid may be ragged (long
/// sequences measured at small batches only): it is interpolated one axis at a time,
/// each step over the points that share the axes before it.
#[derive(Debug, Clone, PartialEq)]
pub struct Grid {
    /// `(coordinates, efficiency)`, sorted by coordinates; every point has the same
    /// number of coordinates, all positive.
    points: Vec<Point>,
}

impl Grid {
    /// A grid of `points` in any order; `Err` with the coordinates two points share.
    #[cfg(test)]
    pub(crate) fn new(mut points: Vec<(Vec<f64>, f64)>) -> Result<Grid, Vec<f64>> {
        points.sort_by(|a, b| cmp(&a.0, &b.0));
        Grid::sorted(points).map_err(|(_, coords)| coords)
    }

    /// A grid of `points` sorted by coordinates; `Err` with the index and coordinates of
    /// the second of the first two points that share them (the table reader sorts the
    /// rows of a point by line, so that index names the repeated row). Coordinates
    /// must be positive and finite and every point must have as many as the first (the
    /// reader checks).
    pub(crate) fn sorted(points: Vec<(Vec<f64>, f64)>) -> Result<Grid, (usize, Vec<f64>)> {
        debug_assert!(points.windows(2).all(|w| cmp(&w[0].0, &w[1].0).is_le()));
        if let Some(i) = points.windows(2).position(|w| w[0].0 == w[1].0) {
            return Err((i + 1, points[i].0.clone()));
        }
        Ok(Grid { points })
    }

    /// Measured points.
    pub fn len(&self) -> usize {
        self.points.len()
    }

    /// The measured points, `(coordinates, efficiency)`, sorted by coordinates.
    pub fn points(&self) -> impl Iterator<Item = (&[f64], f64)> {
        self.points.iter().map(|(c, v)| (c.as_slice(), *v))
    }

    /// Whether the grid holds no point.
    pub fn is_empty(&self) -> bool {
        self.points.is_empty()
    }

    /// The efficiency at `at` (one coordinate per axis; extra coordinates are ignored,
    /// missing ones taken at the lowest value): along the first axis, the two grid values
    /// that bracket `at[0]` are found and the grid is interpolated at each over the
    /// points that have it (the same way, along the next axis), then the two results are
    /// combined linearly in `ln(coordinate)`. Outside the measured values of an axis (at
    /// that place in the grid) the nearest one is taken: clamped, never extrapolated.
    /// `None` for an empty grid.
    pub(crate) fn at(&self, at: &[f64]) -> Option<f64> {
        interp(&self.points, 0, at)
    }
}

/// A measured point: its coordinates and efficiency.
type Point = (Vec<f64>, f64);

/// Coordinates in order: by the first axis, then the next.
pub(super) fn cmp(a: &[f64], b: &[f64]) -> std::cmp::Ordering {
    a.iter()
        .zip(b)
        .map(|(x, y)| x.total_cmp(y))
        .find(|o| o.is_ne())
        .unwrap_or(std::cmp::Ordering::Equal)
}

/// Interpolates `points` (sorted, all equal on the axes before `axis`) at `at`. The
/// runs of points sharing a value of this axis are contiguous (sorted), so the two that
/// bracket `at[axis]` are found by binary search, without allocating.
fn interp(points: &[Point], axis: usize, at: &[f64]) -> Option<f64> {
    let first = points.first()?;
    if axis >= first.0.len() {
        return Some(first.1);
    }
    let value = |i: usize| points[i].0[axis];
    // the run of points whose value on this axis is `x`
    let run = |x: f64| {
        let lo = points.partition_point(|p| p.0[axis] < x);
        let hi = points.partition_point(|p| p.0[axis] <= x);
        &points[lo..hi]
    };
    let q = at.get(axis).copied().unwrap_or(0.0);
    // the first point (and so the first run) at or above q
    let i = points.partition_point(|p| p.0[axis] < q);
    if i == 0 {
        return interp(run(value(0)), axis + 1, at);
    }
    if i == points.len() {
        return interp(run(value(i - 1)), axis + 1, at);
    }
    let (x0, x1) = (value(i - 1), value(i));
    let (v0, v1) = (
        interp(run(x0), axis + 1, at)?,
        interp(run(x1), axis + 1, at)?,
    );
    let t = (q.ln() - x0.ln()) / (x1.ln() - x0.ln());
    Some(v0 + t * (v1 - v0))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn grid(points: &[(&[f64], f64)]) -> Grid {
        Grid::new(points.iter().map(|(c, v)| (c.to_vec(), *v)).collect()).unwrap()
    }

    #[test]
    fn one_axis_is_linear_in_the_log_and_clamped() {
        let g = grid(&[(&[16.0], 0.2), (&[1.0], 0.1), (&[256.0], 0.6)]);
        // at the points themselves
        assert_eq!(g.at(&[1.0]), Some(0.1));
        assert_eq!(g.at(&[256.0]), Some(0.6));
        // 4 is halfway from 1 to 16 in ln: 0.1 + 0.5 · (0.2 - 0.1) = 0.15
        assert!((g.at(&[4.0]).unwrap() - 0.15).abs() < 1e-12);
        // 64 is halfway from 16 to 256: 0.2 + 0.5 · 0.4 = 0.4
        assert!((g.at(&[64.0]).unwrap() - 0.4).abs() < 1e-12);
        // 32: ln(32/16)/ln(256/16) = 1/4 of the way: 0.2 + 0.25 · 0.4 = 0.3
        assert!((g.at(&[32.0]).unwrap() - 0.3).abs() < 1e-12);
        // clamped at both edges
        assert_eq!(g.at(&[0.5]), Some(0.1));
        assert_eq!(g.at(&[1e6]), Some(0.6));
    }

    #[test]
    fn two_axes_bilinear_in_the_logs() {
        // x in {1, 4}, y in {10, 1000}
        let g = grid(&[
            (&[1.0, 10.0], 0.1),
            (&[1.0, 1000.0], 0.5),
            (&[4.0, 10.0], 0.3),
            (&[4.0, 1000.0], 0.9),
        ]);
        // (2, 100): halfway on both axes in ln: y first: x=1 -> 0.3, x=4 -> 0.6; then
        // x: (0.3 + 0.6) / 2 = 0.45
        assert!((g.at(&[2.0, 100.0]).unwrap() - 0.45).abs() < 1e-12);
        // (4, 100): 0.6; (1, 1e5): clamped in y: 0.5
        assert!((g.at(&[4.0, 100.0]).unwrap() - 0.6).abs() < 1e-12);
        assert_eq!(g.at(&[1.0, 1e5]), Some(0.5));
    }

    #[test]
    fn ragged_grids_clamp_each_row_at_its_own_edge() {
        // x=1 measured up to y=1000, x=4 only at y=10
        let g = grid(&[
            (&[1.0, 10.0], 0.1),
            (&[1.0, 1000.0], 0.5),
            (&[4.0, 10.0], 0.3),
        ]);
        // (2, 1000): x=1 -> 0.5, x=4 clamps y to its 10 -> 0.3; halfway: 0.4
        assert!((g.at(&[2.0, 1000.0]).unwrap() - 0.4).abs() < 1e-12);
    }

    #[test]
    fn duplicates_are_refused() {
        let e = Grid::new(vec![(vec![1.0, 2.0], 0.1), (vec![1.0, 2.0], 0.2)]).unwrap_err();
        assert_eq!(e, vec![1.0, 2.0]);
        assert_eq!(Grid::new(vec![]).unwrap().at(&[1.0]), None);
    }
}
