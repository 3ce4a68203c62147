//! Human-readable text report of a prediction.

use super::table::header;
use crate::predict::{Prediction, SpeculativeReport};
use crate::units::{fmt_flops, fmt_gb, fmt_seconds};

fn rate(x: f64) -> String {
    if x >= 100.0 {
        format!("{x:.0}")
    } else {
        format!("{x:.1}")
    }
}

/// The one line `80% interval: ...` of a prediction's headline numbers (decode and
/// output tokens/s, TTFT, time per output token, prefill tokens/s); `None` without
/// intervals (the pure roofline).
pub fn interval_line(p: &Prediction) -> Option<String> {
    let i = &p.intervals;
    let mut parts = Vec::new();
    let mut add = |key: &str, label: &str, f: &dyn Fn(f64) -> String| {
        if let Some([lo, hi]) = i.get(key) {
            parts.push(format!("{label} {} to {}", f(*lo), f(*hi)));
        }
    };
    add("generation.decode_tokens_per_s", "decode", &|x| {
        format!("{} tok/s", rate(x))
    });
    add("generation.output_tokens_per_s", "output", &|x| {
        format!("{} tok/s", rate(x))
    });
    add("generation.ttft_s", "TTFT", &fmt_seconds);
    add("generation.tpot_s", "time per output token", &fmt_seconds);
    if p.config.prompt > 0 {
        add("prefill.tokens_per_s", "prefill", &|x| {
            format!("{} tok/s", rate(x))
        });
    }
    (!parts.is_empty()).then(|| {
        format!(
            "80% interval: {} (held-out errors of engine {})",
            parts.join("; "),
            p.config.engine
        )
    })
}

/// The default `ridgeline predict` output.
pub fn prediction(p: &Prediction) -> String {
    let c = &p.config;
    let m = &p.memory.inner;
    let mut s = format!(
        "{} on {}x {} (engine {}, weights {}, kv {}, batch {}, prompt {}, gen {}{})\n\n",
        p.model.name,
        p.hardware.count,
        p.hardware.name,
        c.engine,
        crate::dtype::formats_label(c.weights, c.experts),
        c.kv,
        c.batch,
        c.prompt,
        c.r#gen,
        layout(p)
    );
    s.push_str(&format!(
        "Memory per device: {} weights + {} KV cache + {} activations + {} overhead = {} of {} -> {}\n",
        fmt_gb(m.weights_bytes),
        fmt_gb(m.kv_cache_bytes),
        fmt_gb(m.activation_bytes),
        fmt_gb(m.overhead_bytes),
        fmt_gb(m.total_bytes),
        fmt_gb(m.capacity_bytes),
        if m.fits { "fits" } else { "DOES NOT FIT" }
    ));
    s.push_str(&format!(
        "  largest batch at this length: {}; longest context at this batch: {} tokens{}\n",
        p.memory.max_batch,
        p.memory.max_context,
        context_cap(p.memory.max_context, p.memory.max_context_in_memory)
    ));
    let pf = &p.prefill;
    if c.prompt > 0 {
        s.push_str(&format!(
            "Prefill: {} in {}, intensity {:.0} FLOP/byte -> {}-bound; TTFT {} (roofline {}), {} tok/s\n",
            fmt_flops(pf.flops),
            fmt_gb(pf.bytes),
            pf.arithmetic_intensity,
            pf.bound,
            fmt_seconds(pf.time_s),
            fmt_seconds(pf.roofline_time_s),
            rate(pf.tokens_per_s)
        ));
    }
    let d = &p.decode;
    s.push_str(&format!(
        "Decode step (context {}): {} in {}, intensity {:.2} FLOP/byte vs ridge {:.0} -> {}-bound; {} per step, {} tok/s (roofline {} tok/s)\n",
        d.context,
        fmt_flops(d.flops_per_step),
        fmt_gb(d.bytes_per_step),
        d.arithmetic_intensity,
        p.hardware.ridge_point,
        d.bound,
        fmt_seconds(d.time_per_step_s),
        rate(d.tokens_per_s),
        rate(d.roofline_tokens_per_s)
    ));
    if let Some(b) = d.compute_bound_batch {
        s.push_str(&format!("  decode turns compute-bound at batch {b}\n"));
    }
    if let Some(sp) = &p.speculative {
        s.push_str(&format!("{}\n", speculation(sp, c.batch)));
    }
    let g = &p.generation;
    s.push_str(&format!(
        "Generation: TTFT {}, time per output token {}, total {}; decode {} tok/s, output {} tok/s (roofline decode {} tok/s)\n",
        fmt_seconds(g.ttft_s),
        fmt_seconds(g.tpot_s),
        fmt_seconds(g.total_s),
        rate(g.decode_tokens_per_s),
        rate(g.output_tokens_per_s),
        rate(g.roofline_decode_tokens_per_s)
    ));
    if let Some(line) = interval_line(p) {
        s.push_str(&format!("  {line}\n"));
    }
    let mut ops: Vec<_> = p
        .ops
        .iter()
        .filter(|o| o.phase == crate::model::graph::Phase::Decode)
        .collect();
    ops.sort_by(|a, b| b.time_s.total_cmp(&a.time_s));
    let total: f64 = ops.iter().map(|o| o.time_s).sum();
    s.push_str(if p.speculative.is_some() {
        "\nVerify pass by operator (top 6):\n"
    } else {
        "\nDecode step by operator (top 6):\n"
    });
    let mut rows = vec![header(&["op", "time", "share", "FLOP/byte", "bound"])];
    for o in ops.iter().take(6) {
        rows.push(vec![
            o.kind.to_string(),
            fmt_seconds(o.time_s),
            format!("{:.0}%", 100.0 * o.time_s / total.max(f64::MIN_POSITIVE)),
            format!("{:.2}", o.arithmetic_intensity),
            o.bound.to_string(),
        ]);
    }
    s.push_str(&super::table::render(&rows));
    for n in &p.notes {
        s.push_str(&format!("note: {n}\n"));
    }
    s.push_str(
        "\nGB = 1e9 bytes. Times are the engine's prediction; 'roofline' is the ideal bound.\n",
    );
    s
}

/// ", tp" / ", tp, ep 8" after the device count, when there are several devices.
pub(crate) fn layout(p: &Prediction) -> String {
    let c = &p.config;
    let tp = p.hardware.count / c.ep.max(1);
    // a stated imbalance is part of the layout's load
    let skew = if c.expert_imbalance > 1.0 {
        format!(
            " (busiest at least {}x the mean's routed rows)",
            c.expert_imbalance
        )
    } else {
        String::new()
    };
    match (p.hardware.count > 1, c.ep > 1) {
        (false, _) => String::new(),
        (true, false) => format!(", {}", c.parallel),
        (true, true) if tp == 1 => {
            format!(
                ", experts over {} devices{skew}, attention data-parallel",
                c.ep
            )
        }
        (true, true) => format!(
            ", experts over {} groups of {tp} tensor-parallel devices{skew}",
            c.ep
        ),
    }
}

/// One sentence on speculative decoding at `batch`: what a verify pass yields and
/// costs, the speed-up, and where it stops paying.
pub(crate) fn speculation(sp: &SpeculativeReport, batch: u64) -> String {
    let source = match sp.draft.as_str() {
        "mtp" => "the model's MTP head".to_string(),
        "eagle" => "an EAGLE-style one-layer head".to_string(),
        id => format!("draft model {id}"),
    };
    let pays = match sp.break_even_batch {
        Some(b) if b <= batch => format!("at this batch it no longer pays (it stops at batch {b})"),
        Some(b) => {
            format!("it stops paying at batch {b}, where the verify pass turns compute-bound")
        }
        None => "it pays at every batch up to 2^20 (decode stays memory-bound)".to_string(),
    };
    format!(
        "Speculative decoding: {} draft tokens from {source}, each accepted with probability {:.2}, yield {:.2} tokens per verify pass; verify {} + drafts {} -> {:.2}x the plain decode speed at batch {batch}; {pays}",
        sp.settings.k,
        sp.settings.accept,
        sp.tokens_per_verify,
        fmt_seconds(sp.verify_time_s),
        fmt_seconds(sp.draft_time_s),
        sp.speedup,
    )
}

/// " (the trained context; memory allows N)" where memory alone allows more.
fn context_cap(max_context: u64, in_memory: u64) -> String {
    if in_memory > max_context {
        format!(" (the trained context; memory allows {in_memory})")
    } else {
        String::new()
    }
}

/// `ridgeline predict --max` as text.
pub fn limits(l: &crate::predict::Limits) -> String {
    format!(
        "{} on {}x {} (weights {}, kv {}):\n  largest batch at {} + {} tokens per sequence: {}\n  longest context at batch {}: {} tokens{}\n  weights {} per device, KV cache {:.1} kB per token per sequence, capacity {}\nGB = 1e9 bytes, kB = 1e3 bytes.\n",
        l.model,
        l.gpus,
        l.hardware,
        l.weights,
        l.kv,
        l.prompt,
        l.r#gen,
        l.max_batch,
        l.batch,
        l.max_context,
        context_cap(l.max_context, l.max_context_in_memory),
        fmt_gb(l.weights_bytes),
        l.kv_bytes_per_token / 1e3,
        fmt_gb(l.capacity_bytes)
    )
}
