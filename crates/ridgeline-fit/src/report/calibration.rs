//! Text report of `ridgeline calibrate`: fitted factors with intervals, per-row errors
//! before and after, median errors by kind, and the rows left out; the Markdown
//! accuracy table (in sample and held out) the README shows.

use crate::calibrate::{Accuracy, Calibration, EngineFit, KindAccuracy, ParamKind, Target};
use crate::report::table::render;

fn value(kind: &ParamKind, v: f64) -> String {
    match kind {
        ParamKind::StepOverhead | ParamKind::LayerOverhead => format!("{:.3} ms", v * 1e3),
        ParamKind::RdnaExpertOverhead | ParamKind::SequenceOverhead => format!("{:.1} µs", v * 1e6),
        _ => format!("{v:.3}"),
    }
}

/// A measured or predicted value with its unit (`-` when not finite).
pub(super) fn measured(t: Target, v: f64) -> String {
    if !v.is_finite() {
        return "-".into();
    }
    match t {
        Target::TtftS | Target::TpotS | Target::E2eS => format!("{:.1} ms", v * 1e3),
        Target::MatmulFlopsPerS(_) => format!("{:.0} TFLOP/s", v / 1e12),
        Target::MemoryBytesPerS => format!("{:.0} GB/s", v / 1e9),
        _ => format!("{v:.1} tok/s"),
    }
}

/// A signed % error (`+12.3%`; `-` when not finite).
pub(super) fn pct(v: f64) -> String {
    if v.is_finite() {
        format!("{v:+.1}%")
    } else {
        "-".into()
    }
}

/// The first columns of a table of compared rows.
pub(super) const ROW_HEADER: [&str; 6] = ["id", "kind", "engine", "hardware", "model", "measured"];

/// The cells under [`ROW_HEADER`] of `r`, its id written as `id` (`-` for no model).
pub(super) fn row_cells(r: &crate::calibrate::Compared, id: String) -> Vec<String> {
    let model = if r.model.is_empty() { "-" } else { &r.model };
    vec![
        id,
        r.kind.to_string(),
        r.engine.clone(),
        r.hardware.clone(),
        model.to_string(),
        measured(r.target, r.measured),
    ]
}

/// Owned cells of a table row.
pub(super) fn row(cells: &[&str]) -> Vec<String> {
    cells.iter().map(|c| c.to_string()).collect()
}

/// One engine's fit: factors before and after with intervals, and the notes.
fn engine_fit(out: &mut String, f: &EngineFit) {
    out.push_str(&format!(
        "engine {}: {} rows, rms ln(pred/measured) {:.3} -> {:.3}\n",
        f.engine.id,
        f.rows.len(),
        f.rms_log_before,
        f.rms_log_after
    ));
    let mut rows = vec![row(&["factor", "before", "fitted", "95% CI", "rows"])];
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

/// Renders a calibration for a terminal.
pub fn text(c: &Calibration) -> String {
    let mut out = String::new();
    for f in &c.engines {
        engine_fit(&mut out, f);
    }
    let rest = ["before", "after", "err before", "err after"];
    let mut rows = vec![row(&[&ROW_HEADER[..], &rest].concat())];
    for r in &c.rows {
        let t = r.row.target;
        let id = format!("{}{}", r.row.id, if r.fitted { "" } else { "*" });
        rows.push(
            [
                row_cells(&r.row, id),
                vec![
                    measured(t, r.predicted_before),
                    measured(t, r.predicted_after),
                    pct(r.error_before_pct),
                    pct(r.error_after_pct),
                ],
            ]
            .concat(),
        );
    }
    out.push_str(&render(&rows));
    out.push_str("(* = not used in the fit: a device ceiling, or an engine not fitted)\n\n");
    let mut rows = vec![row(&["kind", "rows", "median |err| before", "after"])];
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

/// One cell of the accuracy table.
type Cell = fn(&KindAccuracy) -> String;

/// The Markdown table of median absolute errors per kind: the pure roofline, the
/// engines as given, leave one out and leave one source out (the README's accuracy
/// table is this function's output for the bundled files).
pub fn accuracy_markdown(a: &Accuracy) -> String {
    let name = |k: &str| match k {
        "A" => "decode (A)",
        "B" => "batched (B)",
        "C" => "prefill (C)",
        _ => "other",
    };
    let mut out = String::from("| median \\|error\\| |");
    let mut rule = String::from("|---|");
    for k in &a.kinds {
        out.push_str(&format!(" {} |", name(k.kind.letter())));
        rule.push_str("---:|");
    }
    out.push('\n');
    out.push_str(&rule);
    out.push('\n');
    let lines: [(&str, Cell); 5] = [
        ("rows", |k| k.rows.to_string()),
        ("`ideal` roofline", |k| format!("{:.1}%", k.ideal_pct)),
        ("fitted engines (in sample)", |k| {
            format!("{:.1}%", k.fitted_pct)
        }),
        ("leave one row out", |k| {
            format!("{:.1}%", k.leave_one_out_pct)
        }),
        ("leave one source out", |k| {
            format!("{:.1}%", k.leave_one_source_out_pct)
        }),
    ];
    for (label, cell) in lines {
        out.push_str(&format!("| {label} |"));
        for k in &a.kinds {
            out.push_str(&format!(" {} |", cell(k)));
        }
        out.push('\n');
    }
    out
}

/// Text report of `calibrate --save-intervals`: each band, and the fraction of the
/// held-out rows of kinds A, B and C inside their own band, in sample and against
/// bands computed without the row's publication.
pub fn intervals(bands: &crate::calibrate::IntervalBands) -> String {
    let header = ["kind", "engine", "rows", "tail", "low", "median", "high"];
    let db = &bands.db;
    let mut rows = vec![header.iter().map(|h| h.to_string()).collect::<Vec<_>>()];
    let all = (db
        .pooled
        .iter()
        .map(|(k, b)| ("all engines".to_string(), k, b)))
    .chain(
        db.engines
            .iter()
            .flat_map(|(e, m)| m.iter().map(|(k, b)| (e.clone(), k, b))),
    );
    for (engine, kind, b) in all {
        rows.push(vec![
            kind.clone(),
            engine,
            b.rows.to_string(),
            format!("{:.2}", b.tail),
            format!("{:.3}", b.p10),
            format!("{:.3}", b.median),
            format!("{:.3}", b.p90),
        ]);
    }
    let mut out = String::from("80% interval bands of measured / predicted (as a speed)\n");
    out += &render(&rows);
    let sections = [
        (
            "held-out rows inside their band (in sample)",
            &bands.in_sample,
        ),
        (
            "inside bands computed without the row's publication (their tail chosen without it too)",
            &bands.by_source,
        ),
    ];
    for (title, rows) in sections {
        out += &format!("\n{title}\n");
        for (kind, inside, n) in rows {
            let pct = 100.0 * *inside as f64 / (*n).max(1) as f64;
            out += &format!("  kind {kind}: {inside} of {n} ({pct:.0}%)\n");
        }
    }
    out
}
