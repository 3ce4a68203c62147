//! A self-contained HTML report of a prediction (`predict --html`, `explain --html`):
//! inputs, headline numbers, the explanation, memory and phase tables, the charts as
//! inline SVG and the ops; one file with its styles inside, readable offline and
//! printable. It reads finished structs (the prediction, its explanation, chart SVG
//! text drawn by [`crate::plot`]) and computes nothing but the page.

use super::explain::Explanation;
use crate::predict::Prediction;
use crate::units::{fmt_flops, fmt_gb, fmt_params, fmt_seconds};
use std::fmt::Write as _;

/// A chart of the report: its title and its SVG document.
#[derive(Debug, Clone)]
pub struct HtmlChart {
    /// Caption under the chart.
    pub title: String,
    /// The SVG document, as [`crate::plot`] draws it (text escaped there).
    pub svg: String,
}

/// Everything the report shows, finished.
#[derive(Debug, Clone)]
pub struct HtmlReport<'a> {
    /// The prediction.
    pub prediction: &'a Prediction,
    /// Its plain-language explanation.
    pub explanation: &'a Explanation,
    /// Charts, in reading order.
    pub charts: Vec<HtmlChart>,
    /// The command line that makes the same report.
    pub command: String,
    /// ridgeline's version.
    pub version: &'a str,
}

/// Text for an HTML text node or attribute value.
pub(crate) fn escape(text: &str) -> String {
    let mut out = String::with_capacity(text.len());
    for c in text.chars() {
        match c {
            '&' => out.push_str("&amp;"),
            '<' => out.push_str("&lt;"),
            '>' => out.push_str("&gt;"),
            '"' => out.push_str("&quot;"),
            '\'' => out.push_str("&#39;"),
            c => out.push(c),
        }
    }
    out
}

/// The styles of the report: system fonts only, the Okabe-Ito colours of the charts,
/// and print rules that keep figures and tables whole on a page.
const STYLE: &str = r#"
:root { --ink: #1a1a1a; --muted: #555; --rule: #d0d0d0; --ok: #009e73; --bad: #d55e00; --accent: #0072b2; }
* { box-sizing: border-box; }
body { font: 15px/1.45 system-ui, -apple-system, "Segoe UI", "DejaVu Sans", sans-serif; color: var(--ink); margin: 0 auto; max-width: 1100px; padding: 24px 28px 48px; }
h1 { font-size: 26px; margin: 0 0 4px; }
h2 { font-size: 19px; margin: 32px 0 10px; border-bottom: 1px solid var(--rule); padding-bottom: 4px; }
.sub { color: var(--muted); margin: 0 0 18px; }
code { font: 13px/1.4 "DejaVu Sans Mono", ui-monospace, monospace; background: #f3f3f3; padding: 1px 4px; border-radius: 3px; overflow-wrap: anywhere; }
.cards { display: grid; grid-template-columns: repeat(auto-fit, minmax(150px, 1fr)); gap: 10px; }
.card { border: 1px solid var(--rule); border-radius: 6px; padding: 10px 12px; }
.card .k { color: var(--muted); font-size: 13px; }
.card .v { font-size: 22px; font-weight: 600; font-variant-numeric: tabular-nums; }
.ok { color: var(--ok); } .bad { color: var(--bad); }
.headline { font-size: 17px; font-weight: 600; }
.findings li { margin: 4px 0; }
.topic { display: inline-block; min-width: 92px; color: var(--muted); font-size: 13px; text-transform: uppercase; letter-spacing: .04em; }
table { border-collapse: collapse; margin: 6px 0 12px; font-variant-numeric: tabular-nums; }
th, td { border-bottom: 1px solid var(--rule); padding: 4px 10px; text-align: left; }
td.n, th.n { text-align: right; }
th { font-weight: 600; background: #f6f6f6; }
.grid2 { display: grid; grid-template-columns: 1fr 1fr; gap: 24px; }
figure { margin: 16px 0; }
figure svg { width: 100%; height: auto; display: block; }
figcaption { color: var(--muted); font-size: 13px; margin-top: 4px; }
footer { margin-top: 32px; color: var(--muted); font-size: 13px; }
@media (max-width: 800px) { .grid2 { grid-template-columns: 1fr; } }
@media print {
  body { max-width: none; padding: 0; font-size: 11pt; }
  h2 { break-after: avoid; }
  figure, table, .cards { break-inside: avoid; }
}
"#;

/// The report as one HTML document.
pub fn render(r: &HtmlReport) -> String {
    let p = r.prediction;
    let title = format!(
        "{} on {} x {}",
        p.model.name, p.hardware.count, p.hardware.name
    );
    let mut s =
        String::with_capacity(64 * 1024 + r.charts.iter().map(|c| c.svg.len()).sum::<usize>());
    let _ = write!(
        s,
        "<!DOCTYPE html>\n<html lang=\"en\">\n<head>\n<meta charset=\"utf-8\">\n<meta name=\"viewport\" content=\"width=device-width, initial-scale=1\">\n<meta name=\"generator\" content=\"ridgeline {v}\">\n<title>{t} · ridgeline</title>\n<style>{STYLE}</style>\n</head>\n<body>\n<h1>{t}</h1>\n<p class=\"sub\">ridgeline {v} · <code>{c}</code></p>\n",
        t = escape(&title),
        v = escape(r.version),
        c = escape(&r.command),
    );
    cards(&mut s, p);
    explanation(&mut s, r.explanation);
    s.push_str("<div class=\"grid2\">\n<section>\n<h2>Inputs</h2>\n");
    inputs(&mut s, p);
    s.push_str("</section>\n<section>\n<h2>Memory per device</h2>\n");
    memory(&mut s, p);
    s.push_str("</section>\n</div>\n<h2>Prefill and decode</h2>\n");
    phases(&mut s, p);
    if !r.charts.is_empty() {
        s.push_str("<h2>Charts</h2>\n");
    }
    for c in &r.charts {
        let _ = write!(
            s,
            "<figure>\n{}\n<figcaption>{}</figcaption>\n</figure>\n",
            c.svg,
            escape(&c.title)
        );
    }
    ops(&mut s, p);
    if !p.notes.is_empty() {
        s.push_str("<h2>Notes</h2>\n<ul>\n");
        for n in &p.notes {
            let _ = writeln!(s, "<li>{}</li>", escape(&n.to_string()));
        }
        s.push_str("</ul>\n");
    }
    let _ = write!(
        s,
        "<footer>GB = 1e9 bytes. Times are the engine's prediction; 'roofline' is the ideal bound. Made by ridgeline {}.</footer>\n</body>\n</html>\n",
        escape(r.version)
    );
    s
}

/// Tokens per second as people read them.
fn rate(x: f64) -> String {
    if x >= 100.0 {
        format!("{x:.0}")
    } else {
        format!("{x:.1}")
    }
}

/// The headline numbers as cards.
fn cards(s: &mut String, p: &Prediction) {
    let m = &p.memory.inner;
    let g = &p.generation;
    let fits = if m.fits {
        "<span class=\"ok\">fits</span>"
    } else {
        "<span class=\"bad\">does not fit</span>"
    };
    let mut items = vec![
        (
            "memory per device".to_string(),
            fits.to_string(),
            format!("{} of {}", fmt_gb(m.total_bytes), fmt_gb(m.capacity_bytes)),
        ),
        (
            "time to first token".into(),
            escape(&fmt_seconds(g.ttft_s)),
            format!("prefill {}-bound", p.prefill.bound),
        ),
        (
            "time per output token".into(),
            escape(&fmt_seconds(g.tpot_s)),
            format!("decode {}-bound", p.decode.bound),
        ),
        (
            "decode tokens/s".into(),
            rate(g.decode_tokens_per_s),
            format!("roofline {}", rate(g.roofline_decode_tokens_per_s)),
        ),
        (
            "output tokens/s".into(),
            rate(g.output_tokens_per_s),
            format!("batch {}", p.config.batch),
        ),
    ];
    if p.config.prompt == 0 {
        items.remove(1);
    }
    s.push_str("<div class=\"cards\">\n");
    for (k, v, note) in items {
        let _ = writeln!(
            s,
            "<div class=\"card\"><div class=\"k\">{k}</div><div class=\"v\">{v}</div><div class=\"k\">{}</div></div>",
            escape(&note)
        );
    }
    s.push_str("</div>\n");
}

/// The explanation: its headline and findings.
fn explanation(s: &mut String, e: &Explanation) {
    let _ = write!(
        s,
        "<h2>Explanation</h2>\n<p class=\"headline\">{}</p>\n<ul class=\"findings\">\n",
        escape(&e.headline)
    );
    for f in &e.findings {
        let _ = writeln!(
            s,
            "<li><span class=\"topic\">{}</span> {}</li>",
            escape(f.topic),
            escape(&f.text)
        );
    }
    s.push_str("</ul>\n");
}

/// A two-column table of names and values.
fn pairs(s: &mut String, rows: &[(&str, String)]) {
    s.push_str("<table>\n");
    for (k, v) in rows {
        let _ = writeln!(
            s,
            "<tr><th scope=\"row\">{}</th><td>{}</td></tr>",
            escape(k),
            escape(v)
        );
    }
    s.push_str("</table>\n");
}

/// Model, device, layout, formats and workload.
fn inputs(s: &mut String, p: &Prediction) {
    let c = &p.config;
    let mut rows = vec![
        (
            "model",
            format!(
                "{} ({}, {} parameters, {} active)",
                p.model.name,
                p.model.id,
                fmt_params(p.model.params as f64),
                fmt_params(p.model.active_params as f64)
            ),
        ),
        (
            "devices",
            format!(
                "{} x {} ({}){}",
                p.hardware.count,
                p.hardware.name,
                p.hardware.id,
                super::text::layout(p)
            ),
        ),
        ("engine", c.engine.clone()),
        (
            "formats",
            format!(
                "weights {}, KV cache {}, activations {}",
                crate::dtype::formats_label(c.weights, c.experts),
                c.kv,
                c.activations
            ),
        ),
        (
            "workload",
            format!(
                "batch {}, prompt {}, gen {} tokens per sequence",
                c.batch, c.prompt, c.r#gen
            ),
        ),
        (
            "attention",
            if c.flash { "fused (flash)" } else { "naive" }.to_string(),
        ),
    ];
    if let Some(sp) = &p.speculative {
        rows.push((
            "speculative decoding",
            super::text::speculation(sp, c.batch),
        ));
    }
    pairs(s, &rows);
}

/// The memory footprint per device and the planning limits.
fn memory(s: &mut String, p: &Prediction) {
    let m = &p.memory.inner;
    let mut rows = vec![
        ("weights", fmt_gb(m.weights_bytes)),
        ("KV cache", fmt_gb(m.kv_cache_bytes)),
        ("activations", fmt_gb(m.activation_bytes)),
        ("engine overhead", fmt_gb(m.overhead_bytes)),
        ("total", fmt_gb(m.total_bytes)),
        ("capacity", fmt_gb(m.capacity_bytes)),
        ("largest batch", p.memory.max_batch.to_string()),
        (
            "longest context",
            format!("{} tokens", p.memory.max_context),
        ),
    ];
    if p.memory.offloaded_bytes > 0.0 {
        rows.push(("offloaded", fmt_gb(p.memory.offloaded_bytes)));
    }
    pairs(s, &rows);
}

/// One row of the phases table: phase, FLOPs, bytes, FLOP/byte, bound, time, roofline
/// time, tokens/s (the bound as text, the numbers right-aligned).
fn phase_row(s: &mut String, cells: [String; 8]) {
    let _ = write!(s, "<tr><td>{}</td>", cells[0]);
    for (i, c) in cells[1..].iter().enumerate() {
        let class = if i == 3 { "" } else { " class=\"n\"" };
        let _ = write!(s, "<td{class}>{c}</td>");
    }
    s.push_str("</tr>\n");
}

/// Prefill and one decode step: work, intensity, bound, times.
fn phases(s: &mut String, p: &Prediction) {
    s.push_str("<table>\n<tr><th>phase</th><th class=\"n\">FLOPs</th><th class=\"n\">bytes</th><th class=\"n\">FLOP/byte</th><th>bound</th><th class=\"n\">time</th><th class=\"n\">roofline time</th><th class=\"n\">tokens/s</th></tr>\n");
    let (pf, d) = (&p.prefill, &p.decode);
    if p.config.prompt > 0 {
        phase_row(
            s,
            [
                "prefill".to_string(),
                fmt_flops(pf.flops),
                fmt_gb(pf.bytes),
                format!("{:.1}", pf.arithmetic_intensity),
                pf.bound.to_string(),
                escape(&fmt_seconds(pf.time_s)),
                escape(&fmt_seconds(pf.roofline_time_s)),
                rate(pf.tokens_per_s),
            ],
        );
    }
    phase_row(
        s,
        [
            format!("decode step (context {})", d.context),
            fmt_flops(d.flops_per_step),
            fmt_gb(d.bytes_per_step),
            format!("{:.2}", d.arithmetic_intensity),
            d.bound.to_string(),
            escape(&fmt_seconds(d.time_per_step_s)),
            escape(&fmt_seconds(d.roofline_time_per_step_s)),
            rate(d.tokens_per_s),
        ],
    );
    s.push_str("</table>\n");
    let g = &p.generation;
    let _ = writeln!(
        s,
        "<p>Ridge point {:.0} FLOP/byte. Generation: TTFT {}, time per output token {}, total {}.</p>",
        p.hardware.ridge_point,
        escape(&fmt_seconds(g.ttft_s)),
        escape(&fmt_seconds(g.tpot_s)),
        escape(&fmt_seconds(g.total_s))
    );
}

/// Every op of the pass, by phase, slowest first.
fn ops(s: &mut String, p: &Prediction) {
    let mut ops: Vec<_> = p.ops.iter().collect();
    ops.sort_by(|a, b| {
        (a.phase as u8)
            .cmp(&(b.phase as u8))
            .then(b.time_s.total_cmp(&a.time_s))
    });
    s.push_str("<h2>Operators</h2>\n<table>\n<tr><th>op</th><th>phase</th><th class=\"n\">count</th><th class=\"n\">FLOPs</th><th class=\"n\">bytes</th><th class=\"n\">FLOP/byte</th><th>bound</th><th class=\"n\">time</th></tr>\n");
    for o in ops {
        let _ = writeln!(
            s,
            "<tr><td>{}</td><td>{}</td><td class=\"n\">{}</td><td class=\"n\">{}</td><td class=\"n\">{}</td><td class=\"n\">{:.2}</td><td>{}</td><td class=\"n\">{}</td></tr>",
            escape(&o.kind.to_string()),
            o.phase,
            o.count,
            fmt_flops(o.flops),
            fmt_gb(o.bytes),
            o.arithmetic_intensity,
            o.bound,
            escape(&fmt_seconds(o.time_s))
        );
    }
    s.push_str("</table>\n");
}
