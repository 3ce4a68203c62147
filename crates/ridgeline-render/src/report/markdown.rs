//! Markdown report of a prediction, for embedding in documents.

use crate::predict::Prediction;
use crate::units::{fmt_flops, fmt_gb, fmt_seconds};

/// `ridgeline predict --markdown`.
pub fn prediction(p: &Prediction) -> String {
    let c = &p.config;
    let m = &p.memory.inner;
    let mut s = format!(
        "## {} on {}× {}{}\n\nEngine `{}`, weights `{}`, KV `{}`, batch {}, prompt {}, gen {}.\n\n",
        p.model.name,
        p.hardware.count,
        p.hardware.name,
        super::text::layout(p),
        c.engine,
        c.weights,
        c.kv,
        c.batch,
        c.prompt,
        c.r#gen
    );
    s.push_str("| memory (per device) | GB |\n|---|---:|\n");
    for (k, v) in [
        ("weights", m.weights_bytes),
        ("KV cache", m.kv_cache_bytes),
        ("activations", m.activation_bytes),
        ("overhead", m.overhead_bytes),
        ("**total**", m.total_bytes),
        ("capacity", m.capacity_bytes),
    ] {
        s.push_str(&format!("| {k} | {:.2} |\n", v / 1e9));
    }
    s.push_str(&format!(
        "\nFits: **{}**.\n\n",
        if m.fits { "yes" } else { "no" }
    ));
    s.push_str("| phase | work | intensity (FLOP/B) | bound | time | roofline time | tokens/s |\n|---|---|---:|---|---:|---:|---:|\n");
    s.push_str(&format!(
        "| prefill | {} / {} | {:.1} | {} | {} | {} | {:.0} |\n",
        fmt_flops(p.prefill.flops),
        fmt_gb(p.prefill.bytes),
        p.prefill.arithmetic_intensity,
        p.prefill.bound,
        fmt_seconds(p.prefill.time_s),
        fmt_seconds(p.prefill.roofline_time_s),
        p.prefill.tokens_per_s
    ));
    s.push_str(&format!(
        "| decode step | {} / {} | {:.2} | {} | {} | {} | {:.1} |\n",
        fmt_flops(p.decode.flops_per_step),
        fmt_gb(p.decode.bytes_per_step),
        p.decode.arithmetic_intensity,
        p.decode.bound,
        fmt_seconds(p.decode.time_per_step_s),
        fmt_seconds(p.decode.roofline_time_per_step_s),
        p.decode.tokens_per_s
    ));
    if let Some(sp) = &p.speculative {
        s.push_str(&format!("\n{}.\n", super::text::speculation(sp, c.batch)));
    }
    let g = &p.generation;
    let interval = super::text::interval_line(p).map_or(String::new(), |l| format!("\n{l}.\n"));
    s.push_str(&format!(
        "\nTTFT {}, TPOT {}, total {}; decode {:.1} tok/s, output {:.1} tok/s.\n{interval}\nGB = 1e9 bytes.\n",
        fmt_seconds(g.ttft_s),
        fmt_seconds(g.tpot_s),
        fmt_seconds(g.total_s),
        g.decode_tokens_per_s,
        g.output_tokens_per_s
    ));
    s
}
