//! Text report of `ridgeline calibrate`: fitted factors with intervals, per-row errors
//! before and after, median errors by kind, and the rows left out.

use crate::calibrate::{Calibration, ParamKind, Target};
use crate::report::table::render;

fn value(kind: &ParamKind, v: f64) -> String {
    match kind {
        ParamKind::StepOverhead | ParamKind::LayerOverhead => format!("{:.3} ms", v * 1e3),
        _ => format!("{v:.3}"),
    }
}

fn measured(t: Target, v: f64) -> String {
    if !v.is_finite() {
        return "-".into();
    }
    match t {
        Target::TtftS => format!("{:.1} ms", v * 1e3),
        Target::MatmulFlopsPerS(_) => format!("{:.0} TFLOP/s", v / 1e12),
        Target::MemoryBytesPerS => format!("{:.0} GB/s", v / 1e9),
        _ => format!("{v:.1} tok/s"),
    }
}

fn pct(v: f64) -> String {
    if v.is_finite() {
        format!("{v:+.1}%")
    } else {
        "-".into()
    }
}

/// Renders a calibration for a terminal.
pub fn text(c: &Calibration) -> String {
    let mut out = String::new();
    for f in &c.engines {
        out.push_str(&format!(
            "engine {}: {} rows, rms ln(pred/measured) {:.3} -> {:.3}\n",
            f.engine.id,
            f.rows.len(),
            f.rms_log_before,
            f.rms_log_after
        ));
        let mut rows = vec![vec![
            "factor".to_string(),
            "before".into(),
            "fitted".into(),
            "95% CI".into(),
            "rows".into(),
        ]];
        for p in &f.params {
            let ci = match (p.ci_low, p.ci_high) {
                (Some(l), Some(h)) => format!("{} .. {}", value(&p.kind, l), value(&p.kind, h)),
                _ if p.at_bound => "at bound".into(),
                _ => "-".into(),
            };
            rows.push(vec![
                p.key.clone(),
                value(&p.kind, p.start),
                value(&p.kind, p.value),
                ci,
                p.rows.len().to_string(),
            ]);
        }
        if f.params.is_empty() {
            out.push_str("  (no factor fitted)\n");
        } else {
            for line in render(&rows).lines() {
                out.push_str("  ");
                out.push_str(line);
                out.push('\n');
            }
        }
        for n in &f.notes {
            out.push_str(&format!("  note: {n}\n"));
        }
        out.push('\n');
    }
    let mut rows = vec![vec![
        "id".to_string(),
        "kind".into(),
        "engine".into(),
        "hardware".into(),
        "model".into(),
        "measured".into(),
        "before".into(),
        "after".into(),
        "err before".into(),
        "err after".into(),
    ]];
    for r in &c.rows {
        rows.push(vec![
            format!("{}{}", r.id, if r.fitted { "" } else { "*" }),
            r.kind.to_string(),
            r.engine.clone(),
            r.hardware.clone(),
            if r.model.is_empty() {
                "-".into()
            } else {
                r.model.clone()
            },
            measured(r.target, r.measured),
            measured(r.target, r.predicted_before),
            measured(r.target, r.predicted_after),
            pct(r.error_before_pct),
            pct(r.error_after_pct),
        ]);
    }
    out.push_str(&render(&rows));
    out.push_str("(* = not used in the fit: a device ceiling, or an engine not fitted)\n\n");
    let mut rows = vec![vec![
        "kind".to_string(),
        "rows".into(),
        "median |err| before".into(),
        "after".into(),
    ]];
    for s in &c.summary {
        rows.push(vec![
            s.kind.to_string(),
            s.rows.to_string(),
            format!("{:.1}%", s.median_abs_error_before_pct),
            format!("{:.1}%", s.median_abs_error_after_pct),
        ]);
    }
    out.push_str(&render(&rows));
    if !c.skipped.is_empty() {
        out.push_str(&format!("\nskipped {} rows:\n", c.skipped.len()));
        for s in &c.skipped {
            out.push_str(&format!(
                "  {} (line {}, kind {}): {}\n",
                s.id, s.line, s.kind, s.reason
            ));
        }
    }
    out
}
