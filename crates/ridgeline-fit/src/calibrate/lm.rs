//! Box-bounded Levenberg-Marquardt on a small residual vector, and the dense linear
//! algebra it needs (a handful of parameters: Gauss-Jordan is enough).

use crate::error::Result;

/// Forward-difference step in the parameters' internal coordinates.
const STEP: f64 = 1e-4;

/// Columns of the Jacobian of `f` at `x` (`r0 = f(x)`), by differences toward lower
/// values (toward the interior when a parameter sits at its upper bound).
pub(super) fn jacobian(
    f: &impl Fn(&[f64]) -> Result<Vec<f64>>,
    x: &[f64],
    r0: &[f64],
) -> Result<Vec<Vec<f64>>> {
    let mut cols = Vec::with_capacity(x.len());
    for j in 0..x.len() {
        let mut xh = x.to_vec();
        xh[j] -= STEP;
        let r = f(&xh)?;
        cols.push(
            r.iter()
                .zip(r0)
                .map(|(a, b)| (b - a) / STEP)
                .collect::<Vec<f64>>(),
        );
    }
    Ok(cols)
}

/// `JᵀJ` over the columns `cols` (indices into `jac`).
pub(super) fn gram(jac: &[Vec<f64>], cols: &[usize]) -> Vec<Vec<f64>> {
    cols.iter()
        .map(|&a| {
            cols.iter()
                .map(|&c| jac[a].iter().zip(&jac[c]).map(|(u, v)| u * v).sum())
                .collect()
        })
        .collect()
}

/// Minimizes `Σ f(x)²` from `x` within the box `xb` (low, high per parameter); returns
/// the last `x` and `f(x)`. Each step solves the damped normal equations over the
/// parameters not held at a bound (a parameter on a bound whose gradient points out of
/// the box stays there for the step: clipping a step computed with it free would spoil
/// the other parameters' part and stall the fit). Stops when a step gains less than
/// 1e-12 of the cost, or after 200 steps.
pub(super) fn minimize(
    f: &impl Fn(&[f64]) -> Result<Vec<f64>>,
    mut x: Vec<f64>,
    xb: &[(f64, f64)],
) -> Result<(Vec<f64>, Vec<f64>)> {
    let mut r = f(&x)?;
    let mut cost = ssr(&r);
    let mut lambda = 1e-3;
    for _ in 0..200 {
        let jac = jacobian(f, &x, &r)?;
        let jtr: Vec<f64> = jac
            .iter()
            .map(|col| col.iter().zip(&r).map(|(u, v)| u * v).sum())
            .collect();
        let free: Vec<usize> = (0..x.len())
            .filter(|&j| {
                let (l, h) = xb[j];
                !((x[j] <= l && jtr[j] > 0.0) || (x[j] >= h && jtr[j] < 0.0))
            })
            .collect();
        let jtj = gram(&jac, &free);
        let mut improved = false;
        for _ in 0..30 {
            let mut m = jtj.clone();
            for (i, row) in m.iter_mut().enumerate() {
                row[i] += lambda * (jtj[i][i].max(1e-9));
            }
            let step = solve(m, free.iter().map(|&j| -jtr[j]).collect());
            let Some(step) = step.filter(|s| s.iter().all(|v| v.is_finite())) else {
                lambda *= 10.0;
                continue;
            };
            let mut xn = x.clone();
            for (&j, s) in free.iter().zip(&step) {
                // max then min: never a panic, whatever the box
                xn[j] = (x[j] + s).max(xb[j].0).min(xb[j].1);
            }
            let rn = f(&xn)?;
            let cn = ssr(&rn);
            if cn < cost - 1e-15 {
                let gain = cost - cn;
                x = xn;
                r = rn;
                cost = cn;
                lambda = (lambda / 3.0).max(1e-9);
                improved = gain > 1e-12 * cost.max(1e-12);
                break;
            }
            lambda *= 4.0;
        }
        if !improved {
            break;
        }
    }
    Ok((x, r))
}

/// Solves `a x = b` for a small dense system (Gauss-Jordan with partial pivoting);
/// `None` when singular.
pub(super) fn solve(mut a: Vec<Vec<f64>>, mut b: Vec<f64>) -> Option<Vec<f64>> {
    let n = b.len();
    for col in 0..n {
        let piv = (col..n).max_by(|&i, &j| a[i][col].abs().total_cmp(&a[j][col].abs()))?;
        if a[piv][col].abs() < 1e-12 {
            return None;
        }
        a.swap(col, piv);
        b.swap(col, piv);
        for row in 0..n {
            if row != col {
                let f = a[row][col] / a[col][col];
                if f != 0.0 {
                    let pivot_row = a[col].clone();
                    for (x, p) in a[row].iter_mut().zip(&pivot_row).skip(col) {
                        *x -= f * p;
                    }
                    b[row] -= f * b[col];
                }
            }
        }
    }
    Some((0..n).map(|i| b[i] / a[i][i]).collect())
}

/// The inverse of a small dense matrix; `None` when singular.
pub(super) fn inverse(a: &[Vec<f64>]) -> Option<Vec<Vec<f64>>> {
    let n = a.len();
    let mut cols = Vec::with_capacity(n);
    for k in 0..n {
        let e: Vec<f64> = (0..n).map(|i| if i == k { 1.0 } else { 0.0 }).collect();
        cols.push(solve(a.to_vec(), e)?);
    }
    // cols[k] is column k of the inverse
    Some(
        (0..n)
            .map(|i| (0..n).map(|k| cols[k][i]).collect())
            .collect(),
    )
}

/// Sum of squares.
pub(super) fn ssr(r: &[f64]) -> f64 {
    r.iter().map(|v| v * v).sum()
}

/// Root mean square (0 for no values).
pub(super) fn rms(r: &[f64]) -> f64 {
    if r.is_empty() {
        0.0
    } else {
        (ssr(r) / r.len() as f64).sqrt()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn solves_and_inverts_small_systems() {
        let a = vec![vec![2.0, 1.0], vec![1.0, 3.0]];
        let x = solve(a.clone(), vec![3.0, 5.0]).unwrap();
        assert!(
            (x[0] - 0.8).abs() < 1e-12 && (x[1] - 1.4).abs() < 1e-12,
            "{x:?}"
        );
        let inv = inverse(&a).unwrap();
        assert!((inv[0][0] - 0.6).abs() < 1e-12 && (inv[0][1] + 0.2).abs() < 1e-12);
        assert!(solve(vec![vec![1.0, 2.0], vec![2.0, 4.0]], vec![1.0, 2.0]).is_none());
    }

    #[test]
    fn a_parameter_at_its_bound_does_not_stall_the_others() {
        // x0 wants 5 but is held at 2, where x1's best is 2; a step computed with x0
        // free and then clipped moves x1 toward 3.5 instead, fails, and shrinks
        let calls = std::cell::Cell::new(0);
        let f = |x: &[f64]| {
            calls.set(calls.get() + 1);
            Ok(vec![
                x[0] - 5.0,
                x[1] - 1.0 - x[0] / 2.0,
                0.1 * (x[1] - x[0]),
            ])
        };
        let (x, _) = minimize(&f, vec![0.0, 0.0], &[(0.0, 2.0), (-10.0, 10.0)]).unwrap();
        assert!((x[0] - 2.0).abs() < 1e-12, "{x:?}");
        assert!((x[1] - 2.0).abs() < 1e-6, "{x:?}");
        assert!(calls.get() < 200, "{} evaluations", calls.get());
    }

    #[test]
    fn minimize_stops_at_the_box() {
        // (x - 3)² with x in [0, 2]: the minimum in the box is its edge
        let f = |x: &[f64]| Ok(vec![x[0] - 3.0]);
        let (x, r) = minimize(&f, vec![0.5], &[(0.0, 2.0)]).unwrap();
        assert!(
            (x[0] - 2.0).abs() < 1e-12 && (r[0] + 1.0).abs() < 1e-12,
            "{x:?}"
        );
    }
}
