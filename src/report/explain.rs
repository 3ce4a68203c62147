//! `ridgeline explain`: a short plain-language report, each claim with its number.

use crate::dtype::Format;
use crate::memory::Parallel;
use crate::predict::{Prediction, Predictor, Scenario};
use crate::units::{fmt_bytes_per_s, fmt_flops, fmt_gb, fmt_seconds};
use serde::Serialize;

/// One claim of the explanation.
#[derive(Debug, Clone, Serialize)]
pub struct Finding {
    /// `decode`, `prefill`, `batching`, `memory`, `help`.
    pub topic: &'static str,
    /// The sentence, with its numbers.
    pub text: String,
}

/// The explanation document (`explain --json`).
#[derive(Debug, Clone, Serialize)]
pub struct Explanation {
    /// One-line answer.
    pub headline: String,
    /// Claims in reading order.
    pub findings: Vec<Finding>,
}

fn tok(x: f64) -> String {
    if x >= 100.0 {
        format!("{x:.0}")
    } else {
        format!("{x:.1}")
    }
}

/// Builds the explanation from a prediction and the predictor that made it (used to
/// evaluate the alternatives it suggests: larger batch, smaller formats, more devices).
pub fn explain(pred: &Predictor<'_>, p: &Prediction) -> Explanation {
    let mut f = Vec::new();
    let d = &p.decode;
    let hw = &p.hardware;
    let m = &p.memory.inner;
    let c = &p.config;
    let weights_read = d.weight_bytes_per_step;
    let kv_read = d.kv_bytes_per_step;
    let ridge = hw.ridge_point;
    let params = p.model.active_params as f64;

    f.push(Finding {
        topic: "decode",
        text: format!(
            "Each decode step does {} ({:.1} FLOP per active parameter per sequence, ~2 per weight) but must stream {} from memory ({} of weights, {} of KV cache, the rest activations), so its arithmetic intensity is {:.2} FLOP/byte.",
            fmt_flops(d.flops_per_step),
            d.flops_per_step / params.max(1.0) / c.batch as f64 * hw.count as f64,
            fmt_gb(d.bytes_per_step),
            fmt_gb(weights_read),
            fmt_gb(kv_read),
            d.arithmetic_intensity
        ),
    });
    let verdict = if d.arithmetic_intensity < ridge {
        "below"
    } else {
        "above"
    };
    f.push(Finding {
        topic: "decode",
        text: format!(
            "The {} ridge point is {:.0} FLOP/byte ({} peak / {}), so decode sits {:.0}x {} it: it is {}-bound. At full bandwidth a step takes {} ({} tok/s); the {} engine is predicted at {} per step ({} tok/s).",
            hw.name,
            ridge,
            fmt_flops(hw.peak_flops_per_s).replace("FLOP", "FLOP/s"),
            fmt_bytes_per_s(hw.bandwidth_bytes_per_s),
            if d.arithmetic_intensity > 0.0 { (ridge / d.arithmetic_intensity).max(d.arithmetic_intensity / ridge) } else { 0.0 },
            verdict,
            d.bound,
            fmt_seconds(d.roofline_time_per_step_s),
            tok(d.roofline_tokens_per_s),
            c.engine,
            fmt_seconds(d.time_per_step_s),
            tok(d.tokens_per_s)
        ),
    });
    match d.compute_bound_batch {
        Some(b) => f.push(Finding {
            topic: "batching",
            text: format!(
                "Weights are read once per step whatever the batch, so batching raises intensity: decode turns compute-bound at batch {b} (at context {}).{}",
                d.context,
                if b > p.memory.max_batch { format!(" Memory allows at most batch {} here, so it stays memory-bound.", p.memory.max_batch) } else { String::new() }
            ),
        }),
        None => f.push(Finding {
            topic: "batching",
            text: format!(
                "Decode never turns compute-bound by batching at context {}: every sequence adds its own KV-cache reads, which grow as fast as the FLOPs.",
                d.context
            ),
        }),
    }
    let b8 = (c.batch * 8).min(p.memory.max_batch.max(c.batch));
    if b8 > c.batch {
        let s = pred.summary(b8, c.prompt, c.r#gen);
        f.push(Finding {
            topic: "batching",
            text: format!(
                "Batch {b8} instead of {}: {} tok/s in total instead of {} ({:.1}x), at {} per step.",
                c.batch,
                tok(b8 as f64 / s.decode.time_s),
                tok(d.tokens_per_s),
                (b8 as f64 / s.decode.time_s) / d.tokens_per_s.max(f64::MIN_POSITIVE),
                fmt_seconds(s.decode.time_s)
            ),
        });
    }
    if c.prompt > 0 {
        f.push(Finding {
            topic: "prefill",
            text: format!(
                "Prefill processes {} tokens at once, reusing each weight {} times: {} at {:.0} FLOP/byte, {}-bound; TTFT {} (roofline {}).",
                c.batch * c.prompt,
                c.batch * c.prompt,
                fmt_flops(p.prefill.flops),
                p.prefill.arithmetic_intensity,
                p.prefill.bound,
                fmt_seconds(p.prefill.time_s),
                fmt_seconds(p.prefill.roofline_time_s)
            ),
        });
    }
    let parts = [
        ("weights", m.weights_bytes),
        ("KV cache", m.kv_cache_bytes),
        ("activations", m.activation_bytes),
        ("overhead", m.overhead_bytes),
    ];
    let (big, big_b) = parts
        .iter()
        .copied()
        .fold(("", 0.0), |a, b| if b.1 > a.1 { b } else { a });
    f.push(Finding {
        topic: "memory",
        text: format!(
            "Memory per device: {} of {} ({}); {} dominate with {} ({:.0}%). Largest batch at this length: {}; longest context at batch {}: {} tokens.",
            fmt_gb(m.total_bytes),
            fmt_gb(m.capacity_bytes),
            if m.fits { "fits" } else { "does NOT fit" },
            big,
            fmt_gb(big_b),
            100.0 * big_b / m.total_bytes,
            p.memory.max_batch,
            c.batch,
            p.memory.max_context
        ),
    });
    // What would help.
    let weights_fmt = pred.precision().weights;
    if weights_fmt.bits() > 5.0 {
        let alt = Scenario {
            batch: c.batch,
            prompt: c.prompt,
            gen_tokens: c.r#gen,
            weights: Some(Format::Q4KM),
            kv: Some(pred.precision().kv),
            gpus: hw.count,
            parallel: if c.parallel == Parallel::Pp {
                Parallel::Pp
            } else {
                Parallel::Tp
            },
            flash: c.flash,
            offload: false,
        };
        if let Ok(q) = Predictor::new(pred.model, pred.hardware, pred.engine, &alt) {
            let s = q.summary(c.batch, c.prompt, c.r#gen);
            f.push(Finding {
                topic: "help",
                text: format!(
                    "Quantizing weights from {} to q4_k_m (4.85 bits) cuts weight memory to {} and decode to {} per step ({} tok/s, {:.1}x).",
                    weights_fmt,
                    fmt_gb(s.memory.weights_bytes),
                    fmt_seconds(s.decode.time_s),
                    tok(c.batch as f64 / s.decode.time_s),
                    d.time_per_step_s / s.decode.time_s
                ),
            });
        }
    }
    let model = pred.model;
    if model.kv_heads == model.heads {
        f.push(Finding {
            topic: "help",
            text: format!(
                "This model has no grouped-query attention ({} KV heads for {} query heads); a GQA model with 8 KV heads would hold {:.0}x less KV cache ({} instead of {} here).",
                model.kv_heads,
                model.heads,
                model.heads as f64 / 8.0_f64.min(model.heads as f64),
                fmt_gb(m.kv_cache_bytes * 8.0_f64.min(model.heads as f64) / model.heads as f64),
                fmt_gb(m.kv_cache_bytes)
            ),
        });
    } else {
        f.push(Finding {
            topic: "memory",
            text: format!(
                "Grouped-query attention ({} KV heads for {} query heads) already makes the KV cache {}x smaller than full multi-head attention would.",
                model.kv_heads,
                model.heads,
                model.heads / model.kv_heads
            ),
        });
    }
    if !m.fits || hw.count == 1 {
        let n = 2 * hw.count;
        let alt = Scenario {
            batch: c.batch,
            prompt: c.prompt,
            gen_tokens: c.r#gen,
            weights: Some(weights_fmt),
            kv: Some(pred.precision().kv),
            gpus: n,
            parallel: Parallel::Tp,
            flash: c.flash,
            offload: false,
        };
        if let Ok(q) = Predictor::new(pred.model, pred.hardware, pred.engine, &alt) {
            let s = q.summary(c.batch, c.prompt, c.r#gen);
            f.push(Finding {
                topic: "help",
                text: format!(
                    "Tensor parallel over {n} devices splits weights and KV: {} per device ({}), decode {} per step ({} tok/s).",
                    fmt_gb(s.memory.total_bytes),
                    if s.memory.fits { "fits" } else { "still does not fit" },
                    fmt_seconds(s.decode.time_s),
                    tok(c.batch as f64 / s.decode.time_s)
                ),
            });
        }
    }
    let headline = format!(
        "{} on {}x {}: {} — decode is {}-bound at {:.2} FLOP/byte (ridge {:.0}); {} tok/s per sequence, TTFT {}.",
        p.model.name,
        hw.count,
        hw.name,
        if m.fits { "fits" } else { "does not fit" },
        d.bound,
        d.arithmetic_intensity,
        ridge,
        tok(d.tokens_per_s / c.batch as f64),
        fmt_seconds(p.generation.ttft_s)
    );
    Explanation {
        headline,
        findings: f,
    }
}

/// Renders the explanation as text paragraphs.
pub fn render(e: &Explanation) -> String {
    let mut s = format!("{}\n\n", e.headline);
    for f in &e.findings {
        s.push_str(&format!("- [{}] {}\n", f.topic, f.text));
    }
    s.push_str("\nGB = 1e9 bytes.\n");
    s
}
