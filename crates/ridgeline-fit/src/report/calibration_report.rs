//! Text of `ridgeline calibrate --report`: the errors per kind under the pure roofline,
//! a flat bandwidth factor, the fitted engines in sample and held out by source; the
//! rows held out worst; each engine's held-out error.

use super::calibration::{ROW_HEADER, measured, pct, row as strings, row_cells};
use crate::calibrate::{CalibrationReport, REPORT_MIN_ENGINE_ROWS, Spread};
use crate::report::table::render;

/// `12.3%` (`-` when not finite).
fn abs_pct(v: f64) -> String {
    if v.is_finite() {
        format!("{v:.1}%")
    } else {
        "-".into()
    }
}

/// `median / p90`.
fn spread(s: &Spread) -> String {
    format!("{} / {}", abs_pct(s.median_pct), abs_pct(s.p90_pct))
}

/// Renders the report for a terminal.
pub fn text(r: &CalibrationReport) -> String {
    let rows: usize = r.kinds.iter().map(|k| k.rows).sum();
    let mut out = format!(
        "{rows} rows of kinds A, B and C from {} publication{} (a GitHub repository or a web page each)\n",
        r.sources,
        if r.sources == 1 { "" } else { "s" }
    );
    let flat = if r.flat_memory_efficiency.is_finite() {
        out += &format!(
            "flat bandwidth factor: memory efficiency {:.3} on every device and engine \
             (median measured / roofline of the {} kind A rows), compute 1, no overheads\n",
            r.flat_memory_efficiency, r.flat_rows
        );
        format!("flat {:.3}", r.flat_memory_efficiency)
    } else {
        out += "flat bandwidth factor: none (no kind A rows to fit it on)\n";
        "flat".to_string()
    };
    out += "\n|error| per kind, median / p90\n";
    let mut table = vec![strings(&[
        "kind",
        "rows",
        "ideal roofline",
        &flat,
        "fitted (in sample)",
        "leave one source out",
    ])];
    for k in &r.kinds {
        table.push(vec![
            k.kind.to_string(),
            k.rows.to_string(),
            spread(&k.ideal),
            spread(&k.flat),
            spread(&k.fitted),
            spread(&k.leave_one_source_out),
        ]);
    }
    out += &render(&table);
    out += &format!(
        "\n{} rows held out worst (error: leave one source out)\n",
        r.worst.len()
    );
    let rest = ["predicted", "error", "ideal", "flat", "fitted", "source"];
    let mut table = vec![strings(&[&ROW_HEADER[..], &rest].concat())];
    for w in &r.worst {
        table.push(
            [
                row_cells(&w.row, w.row.id.clone()),
                vec![
                    measured(w.row.target, w.predicted),
                    pct(w.error_pct),
                    pct(w.ideal_error_pct),
                    pct(w.flat_error_pct),
                    pct(w.fitted_error_pct),
                    w.source.clone(),
                ],
            ]
            .concat(),
        );
    }
    out += &render(&table);
    out += &format!(
        "\nmedian |error| per engine with at least {REPORT_MIN_ENGINE_ROWS} rows of a kind\n"
    );
    let mut table = vec![strings(&[
        "kind",
        "engine",
        "rows",
        "fitted (in sample)",
        "leave one source out",
    ])];
    if r.engines.is_empty() {
        return out + "(none)\n";
    }
    for e in &r.engines {
        table.push(vec![
            e.kind.to_string(),
            e.engine.clone(),
            e.rows.to_string(),
            abs_pct(e.fitted_pct),
            abs_pct(e.leave_one_source_out_pct),
        ]);
    }
    out += &render(&table);
    out
}
