//! The `ridgeline calibrate --train` text: fitted training factors per architecture, the
//! overlaps and priors, and every published run's error.

use crate::train::calibrate::{LINK_PRIOR, MEMORY_PRIOR, RowFit, TrainFit};
use ridgeline_render::report::train::{pct, when};

/// One table of fitted rows: measured, predicted, error, micro-batch, source.
fn fit_rows(rows: &[RowFit]) -> String {
    let mut s = format!(
        "  {:<5} {:<22} {:<29} {:>11} {:>11} {:>8} {:>8} {:>3}  run\n",
        "id", "device", "metric", "measured", "predicted", "error", "held out", "mb"
    );
    for r in rows {
        let held = r
            .held_out_error
            .map_or_else(|| "-".to_string(), |e| format!("{:+.1}%", 100.0 * e));
        s.push_str(&format!(
            "  {:<5} {:<22} {:<29} {:>11.4e} {:>11.4e} {:>+7.1}% {:>8} {:>3}  {}\n",
            r.id,
            r.device,
            r.metric.name(),
            r.measured,
            r.predicted,
            100.0 * r.error,
            held,
            r.micro_batch,
            r.label
        ));
    }
    s
}

/// The `ridgeline calibrate --train` output: fitted factors per architecture, the
/// overlaps, and every row's error.
pub fn calibration(fit: &TrainFit) -> String {
    let mut s = format!(
        "Training efficiency fit on {} kind-D rows (grid steps {} and {}):\n",
        fit.rows.len(),
        fit.compute_step,
        fit.overlap_step
    );
    for a in &fit.architectures {
        let e = &a.efficiency;
        s.push_str(&format!(
            "  {:<8} compute {:.2}, fp8 {:.2}{}, attention {:.2}; median |error| {} over {} rows ({})\n",
            a.architecture,
            e.compute,
            e.compute_fp8,
            when(!a.fp8_fitted, || " (no fp8 rows: = compute)".into()),
            e.attention,
            pct(a.median_abs_error),
            a.rows.len(),
            a.devices.join(", ")
        ));
    }
    s.push_str(&format!(
        "  priors   overlap data-parallel {:.1}, tensor-parallel {:.1}, memory {:.2}, links {:.2} (not fitted)\n",
        fit.overlap_dp, fit.overlap_tp, MEMORY_PRIOR, LINK_PRIOR
    ));
    let profile: Vec<String> = fit
        .overlap_profile
        .iter()
        .map(|o| format!("{:.1} {}", o.overlap_dp, pct(o.median_abs_error)))
        .collect();
    s.push_str(&format!(
        "  median |error| at each data-parallel overlap (compute refitted): {}\n",
        profile.join(", ")
    ));
    s.push_str(&format!(
        "  median |error| over all {} rows: {} in sample, {} leave one source out (each of {} publications held out in turn, its rows predicted by a fit without them)\n\n",
        fit.rows.len(),
        pct(fit.median_abs_error),
        pct(fit.leave_one_source_out_median_abs_error),
        fit.sources
    ));
    s.push_str(&fit_rows(&fit.rows));
    for (what, median, rows) in [
        (
            "Expert-parallel MoE rows",
            fit.expert_median_abs_error,
            &fit.expert_rows,
        ),
        (
            "Context-parallel rows",
            fit.context_median_abs_error,
            &fit.context_rows,
        ),
    ] {
        if let Some(median) = median {
            s.push_str(&format!(
                "\n{what} (kind D, not fitted: predicted with the factors above): median |error| {} over {} rows\n",
                pct(median),
                rows.len()
            ));
            s.push_str(&fit_rows(rows));
        }
    }
    s.push_str(&format!(
        "\nMemory rows (kind E, not fitted): median |error| {} over {} rows\n",
        pct(fit.memory_median_abs_error),
        fit.memory_rows.len()
    ));
    s.push_str(&fit_rows(&fit.memory_rows));
    for k in &fit.skipped {
        s.push_str(&format!("skipped {}: {}\n", k.id, k.reason));
    }
    s
}
