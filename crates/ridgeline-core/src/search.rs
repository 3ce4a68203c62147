//! Bisection: the one search behind every "largest batch (or context, or micro-batch)
//! that fits" and "smallest batch that is compute-bound" (over integers), and behind
//! "the highest request rate within the targets" (over positive reals, [`largest_real`]).
//! Every search here ends by construction: the integer ones shrink their interval each
//! step, the real one makes at most [`MAX_PROBES`] probes whatever its predicate does.

/// The largest `n` in `lo..=hi` with `ok(n)`, for a predicate that holds up to some
/// point and not beyond (memory that grows with the batch); `None` when `ok(lo)` does
/// not hold. Evaluates `ok` O(log(hi - lo)) times.
///
/// ```
/// use ridgeline_core::search::largest;
/// assert_eq!(largest(1, 1 << 20, |b| b * 3 <= 100), Some(33));
/// assert_eq!(largest(1, 10, |_| true), Some(10));
/// assert_eq!(largest(1, 10, |_| false), None);
/// ```
pub fn largest(lo: u64, hi: u64, mut ok: impl FnMut(u64) -> bool) -> Option<u64> {
    if hi < lo || !ok(lo) {
        return None;
    }
    if ok(hi) {
        return Some(hi);
    }
    // invariant: ok(lo), !ok(hi)
    let (mut lo, mut hi) = (lo, hi);
    while hi - lo > 1 {
        let mid = lo + (hi - lo) / 2;
        if ok(mid) {
            lo = mid;
        } else {
            hi = mid;
        }
    }
    Some(lo)
}

/// The smallest `n` in `lo..=hi` with `ok(n)`, for a predicate that fails up to some
/// point and holds beyond (a decode step that turns compute-bound as the batch grows);
/// `None` when `ok(hi)` does not hold.
///
/// ```
/// use ridgeline_core::search::smallest;
/// assert_eq!(smallest(1, 1 << 24, |b| b * b >= 1000), Some(32));
/// assert_eq!(smallest(1, 10, |_| false), None);
/// ```
pub fn smallest(lo: u64, hi: u64, mut ok: impl FnMut(u64) -> bool) -> Option<u64> {
    if hi < lo || !ok(hi) {
        return None;
    }
    let (mut lo, mut hi) = (lo, hi);
    while lo < hi {
        let mid = lo + (hi - lo) / 2;
        if ok(mid) {
            hi = mid;
        } else {
            lo = mid + 1;
        }
    }
    Some(lo)
}

/// Most probes one [`largest_real`] makes, halvings and bisection together.
pub const MAX_PROBES: u32 = 64;

/// What [`largest_real`] found.
#[derive(Debug, Clone, PartialEq)]
pub struct RealSearch<T> {
    /// The largest value tried on which the predicate held, and its probe's value
    /// (`None`: it held on none).
    pub best: Option<(f64, T)>,
    /// The probe's value at the smallest value tried above `best` (or at the last
    /// halving, without a best): what failed there (`None`: nothing failed).
    pub above: Option<T>,
    /// Probes made (at most [`MAX_PROBES`]).
    pub probes: u32,
}

/// The largest `x` below `top` on which `probe` holds, for a predicate that holds up
/// to some point and not beyond (a latency target met by low request rates): probes
/// `top / 2`, `top / 4`, ... (at most `halvings` of them) until one holds, then
/// bisects on the logarithm between it and the value above until their ratio is at
/// most `1 + precision`. `probe(x)` answers whether it holds at `x` and a value kept
/// for the caller. Ends after at most [`MAX_PROBES`] probes whatever `probe` answers
/// (a `top` that is not a finite positive number makes none).
///
/// ```
/// use ridgeline_core::search::largest_real;
/// let s = largest_real(100.0, 20, 0.01, |x| (x * x <= 2.0, ()));
/// let (x, ()) = s.best.unwrap();
/// assert!(x <= 2f64.sqrt() && x > 2f64.sqrt() / 1.01);
/// assert_eq!(largest_real(100.0, 20, 0.01, |_| (false, ())).best, None);
/// ```
pub fn largest_real<T>(
    top: f64,
    halvings: u32,
    precision: f64,
    mut probe: impl FnMut(f64) -> (bool, T),
) -> RealSearch<T> {
    let mut out = RealSearch {
        best: None,
        above: None,
        probes: 0,
    };
    if !(top.is_finite() && top > 0.0) {
        return out;
    }
    let halvings = halvings.min(MAX_PROBES);
    // halve from the top until a value holds
    let (mut lo, mut hi) = (top / 2.0, top);
    loop {
        if out.probes >= halvings || lo <= 0.0 {
            return out;
        }
        out.probes += 1;
        match probe(lo) {
            (true, v) => {
                out.best = Some((lo, v));
                break;
            }
            (false, v) => {
                out.above = Some(v);
                hi = lo;
                lo /= 2.0;
            }
        }
    }
    // invariant: holds at lo, fails at hi (or hi is the top, never probed)
    while hi / lo > 1.0 + precision && out.probes < MAX_PROBES {
        let mid = (lo * hi).sqrt();
        if !(mid > lo && mid < hi) {
            break;
        }
        out.probes += 1;
        match probe(mid) {
            (true, v) => {
                lo = mid;
                out.best = Some((mid, v));
            }
            (false, v) => {
                hi = mid;
                out.above = Some(v);
            }
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_real_search_ends_whatever_its_predicate_answers() {
        let mut n = 0;
        let never = largest_real(1e300, 10_000, 0.0, |_| {
            n += 1;
            (false, ())
        });
        assert_eq!(never.best, None);
        assert_eq!(never.probes, MAX_PROBES);
        assert_eq!(n, MAX_PROBES);
        let mut n = 0;
        let always = largest_real(8.0, 20, 0.0, |_| {
            n += 1;
            (true, ())
        });
        assert!(always.probes <= MAX_PROBES && n == always.probes);
        let (x, ()) = always.best.unwrap();
        assert!((4.0..8.0).contains(&x), "{x}");
        assert_eq!(always.above, None);
        // bad tops make no probe
        for top in [0.0, -1.0, f64::NAN, f64::INFINITY] {
            let s = largest_real(top, 20, 0.02, |_| (true, ()));
            assert_eq!((s.best, s.probes), (None, 0), "{top}");
        }
        // a bounded number of halvings
        let few = largest_real(1.0, 3, 0.02, |x| (x < 1e-9, x));
        assert_eq!((few.best, few.probes, few.above), (None, 3, Some(0.125)));
    }

    #[test]
    fn the_real_search_brackets_the_threshold() {
        for limit in [1e-3, 0.3, 0.49, 0.51, 0.99, 7.0] {
            let s = largest_real(1.0, 20, 0.02, |x| (x <= limit, x));
            let (x, _) = s.best.unwrap();
            assert!(x <= limit, "{limit}");
            if limit < 0.5 {
                let above = s.above.unwrap();
                assert!(above > limit && above / x <= 1.02 + 1e-12, "{limit}");
            }
        }
    }

    #[test]
    fn searches_agree_with_a_scan() {
        for limit in [0u64, 1, 2, 3, 7, 64, 65, 1000] {
            let scan_largest = (1..=200u64).filter(|&n| n <= limit).max();
            assert_eq!(largest(1, 200, |n| n <= limit), scan_largest, "{limit}");
            let scan_smallest = (1..=200u64).find(|&n| n >= limit.max(1));
            assert_eq!(
                smallest(1, 200, |n| n >= limit.max(1)),
                scan_smallest,
                "{limit}"
            );
        }
        assert_eq!(largest(5, 4, |_| true), None);
        assert_eq!(
            smallest(u64::MAX - 3, u64::MAX, |n| n >= u64::MAX - 1),
            Some(u64::MAX - 1)
        );
    }
}
