//! Affine functions of the context (or the batch): lines through two probes, where
//! lines cross, the highest line at a point, and sums over integer ranges in closed
//! form. The decode sums ([`super::Predictor::decode_with_sum`]) and the fast paths'
//! cached lines share them, so the two cannot drift apart.

/// `(intercept, slope)` of an affine function.
pub(super) type Line = (f64, f64);

/// The line's value at `x`.
#[inline]
pub(super) fn at(l: Line, x: f64) -> f64 {
    l.0 + l.1 * x
}

/// The line through `(x0, y0)` and `(x0 + span, y1)`; flat where `span` is 0.
#[inline]
pub(super) fn through(x0: f64, span: f64, y0: f64, y1: f64) -> Line {
    let slope = if span > 0.0 { (y1 - y0) / span } else { 0.0 };
    (y0 - slope * x0, slope)
}

/// The points where two of `lines` cross and `keep` holds, ascending: the first `n` of
/// the array (at most `N`).
#[inline]
pub(super) fn crossings<const N: usize>(
    lines: &[Line],
    keep: impl Fn(f64) -> bool,
) -> ([f64; N], usize) {
    let mut cuts = [0.0f64; N];
    let mut n = 0;
    for i in 0..lines.len() {
        for j in i + 1..lines.len() {
            let ds = lines[i].1 - lines[j].1;
            if ds != 0.0 {
                let x = (lines[j].0 - lines[i].0) / ds;
                if keep(x) && n < N {
                    cuts[n] = x;
                    n += 1;
                }
            }
        }
    }
    cuts[..n].sort_by(f64::total_cmp);
    (cuts, n)
}

/// The highest of `lines` at `x` (the first of equals).
#[inline]
pub(super) fn highest(lines: &[Line], x: f64) -> Line {
    lines
        .iter()
        .copied()
        .fold((f64::NEG_INFINITY, 0.0), |best, l| {
            if at(l, x) > at(best, x) { l } else { best }
        })
}

/// `Σ_{L=start}^{end} (c + s·L)` in closed form (`start <= end`).
#[inline]
pub(super) fn series((c, s): Line, start: u64, end: u64) -> f64 {
    let count = (end - start + 1) as f64;
    count * c + s * (start as f64 + end as f64) * count / 2.0
}

/// `Σ_{L=lo}^{hi} max_i (c_i + s_i·L)` for affine lines `(c_i, s_i)`, exactly, in
/// O(lines²) without iterating over `L`.
pub(crate) fn sum_max_affine(lines: &[(f64, f64)], lo: u64, hi: u64) -> f64 {
    if hi < lo || lines.is_empty() {
        return 0.0;
    }
    let (lo_f, hi_f) = (lo as f64, hi as f64);
    let (cuts, n) = crossings::<8>(lines, |x| x > lo_f && x < hi_f);
    let mut total = 0.0;
    let mut start = lo;
    let ends = cuts[..n]
        .iter()
        .map(|x| (x.floor() as u64).min(hi))
        .chain(std::iter::once(hi));
    for end in ends {
        if end < start {
            continue;
        }
        let mid = (start as f64 + end as f64) / 2.0;
        total += series(highest(lines, mid), start, end);
        start = end + 1;
        if start > hi {
            break;
        }
    }
    total
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn sum_max_affine_matches_loop() {
        let lines = [(1.0, 0.5), (10.0, 0.1), (3.0, 0.0)];
        for (lo, hi) in [(1u64, 100u64), (5, 5), (20, 30), (0, 1000)] {
            let brute: f64 = (lo..=hi)
                .map(|l| {
                    lines
                        .iter()
                        .map(|(c, s)| c + s * l as f64)
                        .fold(f64::MIN, f64::max)
                })
                .sum();
            let fast = sum_max_affine(&lines, lo, hi);
            assert!(
                (brute - fast).abs() < 1e-9 * brute.abs().max(1.0),
                "{lo}..{hi}: {brute} vs {fast}"
            );
        }
        assert_eq!(sum_max_affine(&lines, 5, 4), 0.0);
    }
}
