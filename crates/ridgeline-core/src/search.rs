//! Bisection over integers: the one search behind every "largest batch (or context,
//! or micro-batch) that fits" and "smallest batch that is compute-bound".

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

#[cfg(test)]
mod tests {
    use super::*;

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
