//! The one home of order statistics on plain samples: the median (of the values or of
//! their magnitudes) and interpolated percentiles. The serving simulator's latency
//! percentiles come from fixed-size histograms instead (`ridgeline::simulate`), so that
//! memory does not grow with the requests simulated.

/// The median of sorted, non-empty `v`: the middle value, or the mean of the two middle
/// values for an even count.
///
/// ```
/// use ridgeline_core::stats::median_sorted;
/// assert_eq!(median_sorted(&[1.0, 2.0, 9.0]), 2.0);
/// assert_eq!(median_sorted(&[1.0, 2.0, 4.0, 9.0]), 3.0); // (2 + 4) / 2
/// ```
pub fn median_sorted(v: &[f64]) -> f64 {
    let n = v.len();
    if n % 2 == 1 {
        v[n / 2]
    } else {
        (v[n / 2 - 1] + v[n / 2]) / 2.0
    }
}

/// Median of the values (NaN for none; NaNs sort last).
///
/// ```
/// use ridgeline_core::stats::median;
/// assert_eq!(median([3.0, -1.0, 2.0]), 2.0);
/// assert!(median([]).is_nan());
/// ```
pub fn median(values: impl IntoIterator<Item = f64>) -> f64 {
    let mut v: Vec<f64> = values.into_iter().collect();
    if v.is_empty() {
        return f64::NAN;
    }
    v.sort_by(f64::total_cmp);
    median_sorted(&v)
}

/// Median of the absolute values (NaN for an empty slice; NaNs sort last).
///
/// ```
/// use ridgeline_core::stats::median_abs;
/// assert_eq!(median_abs([-3.0, 1.0, 2.0]), 2.0);
/// assert!(median_abs([]).is_nan());
/// ```
pub fn median_abs(values: impl IntoIterator<Item = f64>) -> f64 {
    let mut v: Vec<f64> = values.into_iter().map(f64::abs).collect();
    if v.is_empty() {
        return f64::NAN;
    }
    v.sort_by(f64::total_cmp);
    median_sorted(&v)
}

/// The `q`-quantile of sorted, non-empty `v`: `h = (n - 1) q`, interpolating between
/// `v[floor h]` and `v[ceil h]` (numpy's default).
///
/// ```
/// use ridgeline_core::stats::percentile;
/// // h = 3 x 0.9 = 2.7: 3 + 0.7 x (10 - 3)
/// assert!((percentile(&[1.0, 2.0, 3.0, 10.0], 0.9) - 7.9).abs() < 1e-12);
/// ```
pub fn percentile(v: &[f64], q: f64) -> f64 {
    let h = (v.len() - 1) as f64 * q;
    let (lo, hi) = (h.floor() as usize, h.ceil() as usize);
    v[lo] + (h - lo as f64) * (v[hi] - v[lo])
}
