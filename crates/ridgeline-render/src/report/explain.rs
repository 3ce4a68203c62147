//! `ridgeline explain`: a short plain-language report, each claim with its number. It
//! reads a finished [`Prediction`] and the alternatives the core evaluated for it
//! ([`WhatIfs`]); it computes nothing but the sentences.

use crate::memory::Parallel;
use crate::predict::{Prediction, QUANTIZED_WHAT_IF, WhatIf, WhatIfs};
use crate::units::{fmt_bytes, fmt_bytes_per_s, fmt_flops, fmt_gb, fmt_seconds};

pub use super::finding::{Explanation, Finding};

fn tok(x: f64) -> String {
    if x >= 100.0 {
        format!("{x:.0}")
    } else {
        format!("{x:.1}")
    }
}

fn finding(topic: &'static str, text: String) -> Finding {
    Finding { topic, text }
}

/// Builds the explanation from a prediction and the alternatives evaluated for it
/// ([`crate::predict::Predictor::what_ifs`]).
pub fn explain(p: &Prediction, w: &WhatIfs) -> Explanation {
    let mut f: Vec<Finding> = decode_findings(p);
    f.extend(batching_findings(p, w.larger_batch.as_ref()));
    if p.config.prompt > 0 {
        f.push(prefill_finding(p));
    }
    f.push(memory_finding(p));
    f.extend(kernels_finding(p));
    // how far to trust the figures above, once they have been said
    f.extend(super::text::interval_line(p).map(|line| finding("interval", line)));
    // and what they rest on
    f.extend(factors_finding(p));
    if let Some(q) = &w.quantized {
        f.push(quantized_finding(p, w, q));
    }
    f.extend(super::architecture::findings(p));
    if let Some(t) = &w.more_devices {
        f.push(more_devices_finding(p, t));
    }
    if let Some(t) = &w.without_ep {
        f.push(without_ep_finding(p, t));
    }
    Explanation {
        headline: headline(p),
        findings: f,
    }
}

/// Where the times come from when kernel tables were read: the share of each pass's
/// time measured (or transferred from a sibling's table), and which factors price the
/// rest (`None` without tables).
fn kernels_finding(p: &Prediction) -> Option<Finding> {
    use crate::model::graph::Phase;
    use crate::predict::{CostSource, Note};
    let (device, transferred, engine, refit) = p.notes.iter().find_map(|n| match n {
        Note::KernelTables {
            device,
            transferred,
            engine,
            refit,
        } => Some((device, *transferred, engine, *refit)),
        _ => None,
    })?;
    let share = |phase: Phase| {
        let ops = p.ops.iter().filter(|o| o.phase == phase);
        let (mut table, mut all) = (0.0, 0.0);
        for o in ops {
            all += o.time_s;
            if matches!(o.source, CostSource::Measured | CostSource::Transferred) {
                table += o.time_s;
            }
        }
        (all > 0.0).then(|| 100.0 * table / all)
    };
    let mut parts = Vec::new();
    if let Some(d) = share(Phase::Decode) {
        parts.push(format!("{d:.0}% of a decode step's op time"));
    }
    if p.config.prompt > 0
        && let Some(pf) = share(Phase::Prefill)
    {
        parts.push(format!("{pf:.0}% of the prompt's"));
    }
    let table = if transferred {
        format!("measured on {device} (a sibling of this device) and scaled to its roof")
    } else {
        format!("measured on {device}")
    };
    let rest = if refit {
        format!(
            "the other ops, and the per-pass overhead, use {engine}'s factors refitted on top of the tables (data/engines-kernels.toml), which carry no per-layer overhead because a measured kernel's time includes its launch"
        )
    } else {
        format!("the other ops use {engine}'s own fitted factors")
    };
    // each kernel of the layers no table times pays the table's shortest kernel
    let floor = shortest_kernel(p)
        .map(|f| {
            format!(
                "; each kernel of the layers that no table times (norms, rotary embedding, activations, routing) takes at least the table's shortest, {}",
                fmt_seconds(f.value)
            )
        })
        .unwrap_or_default();
    let rest = format!("{rest}{floor}");
    Some(finding(
        "kernels",
        format!(
            "{} {} from kernel timings {table}; {rest}.",
            capitalize(&parts.join(" and ")),
            if parts.len() > 1 { "come" } else { "comes" }
        ),
    ))
}

/// Which engine factors price the figures and where each came from (`None` for the
/// pure roofline, which has none).
fn factors_finding(p: &Prediction) -> Option<Finding> {
    use crate::predict::FactorSource;
    if p.factors.is_empty() || p.factors.iter().all(|f| f.source == FactorSource::Physics) {
        return None;
    }
    let one = |f: &crate::predict::FactorReport| {
        // the key, without a device override's criteria (`expert_overhead_s (device =
        // "...")`)
        let key = f.name.split(" (").next().unwrap_or(&f.name);
        let value = if key.ends_with("_s") {
            fmt_seconds(f.value)
        } else if key.ends_with("_s_per_gflop") {
            format!("{} per GFLOP", fmt_seconds(f.value))
        } else {
            format!("{:.3}", f.value)
        };
        let family = f.name.starts_with("apple_") || f.name.starts_with("rdna_");
        let whence = match (f.source, f.tag.as_deref()) {
            // fitted on one other device: here an assumption
            (FactorSource::Fitted, Some(t))
                if f.device.as_deref().is_some_and(|d| d != p.hardware.id) =>
            {
                format!("{t}: on {} an assumption", p.hardware.id)
            }
            (FactorSource::Fitted, Some(t))
                if family && f.devices == Some(1) && f.device.is_none() =>
            {
                format!("{t}: measured on that device only, elsewhere in its family an assumption")
            }
            (_, Some(t)) => t.to_string(),
            (FactorSource::Physics, _) => "physics".to_string(),
            _ => "given, not fitted".to_string(),
        };
        format!("{} {value} ({whence})", f.name)
    };
    let lead = if p
        .notes
        .iter()
        .any(|n| matches!(n, crate::predict::Note::KernelTables { .. }))
    {
        "The ops no kernel table covers and the passes' overheads"
    } else {
        "The ops and the passes' overheads"
    };
    let device_own = |f: &&crate::predict::FactorReport| {
        matches!(f.source, FactorSource::Measured | FactorSource::Transferred)
    };
    let engine: Vec<String> = p
        .factors
        .iter()
        .filter(|f| !device_own(f))
        .map(one)
        .collect();
    let measured: Vec<String> = p.factors.iter().filter(device_own).map(one).collect();
    let mut text = format!(
        "{lead} are priced by {}'s factors: {}.",
        p.config.engine,
        engine.join("; ")
    );
    if !measured.is_empty() {
        text.push_str(&format!(
            " Beneath them, the device's measured kernels: {}.",
            measured.join("; ")
        ));
    }
    // an engine fitted on other vendors' devices: the profile fitted on this one's
    if let Some(note) = p
        .notes
        .iter()
        .find(|n| matches!(n, crate::predict::Note::OtherVendorProfile { .. }))
    {
        text.push_str(&format!(" Note: {note}."));
    }
    Some(finding("factors", text))
}

fn capitalize(s: &str) -> String {
    let mut c = s.chars();
    match c.next() {
        Some(first) => first.to_uppercase().chain(c).collect(),
        None => String::new(),
    }
}

/// What a decode step does and where it sits against the ridge point.
fn decode_findings(p: &Prediction) -> Vec<Finding> {
    let (d, hw, c) = (&p.decode, &p.hardware, &p.config);
    let ridge = hw.ridge_point;
    let params = p.model.active_params as f64;
    // tensor parallel: the figures are one device's share; pipeline parallel: the
    // stages run one after another and the figures are the whole pipeline's
    let (scope, whole_model_flops) = match (c.parallel, hw.count) {
        (_, 1) => ("", d.flops_per_step),
        (Parallel::Tp, n) => (" on each device", d.flops_per_step * n as f64),
        (Parallel::Pp, _) => (" over the whole pipeline", d.flops_per_step),
    };
    // recurrent layers (linear attention, SSM blocks) read and write a fixed state
    let cache = if p.architecture.state_bytes_per_sequence > 0.0 {
        "KV cache and recurrent state"
    } else {
        "KV cache"
    };
    let first = format!(
        "Each decode step does {}{scope} ({:.1} FLOP per active parameter per sequence, ~2 per weight) but must stream {} from memory ({} of weights, {} of {cache}, the rest activations), so its arithmetic intensity is {:.2} FLOP/byte.",
        fmt_flops(d.flops_per_step),
        whole_model_flops / params.max(1.0) / c.batch as f64,
        fmt_bytes(d.bytes_per_step),
        fmt_bytes(d.weight_bytes_per_step),
        fmt_bytes(d.kv_bytes_per_step),
        d.arithmetic_intensity
    );
    let verdict = if d.arithmetic_intensity < ridge {
        "below"
    } else {
        "above"
    };
    let factor = if d.arithmetic_intensity > 0.0 {
        (ridge / d.arithmetic_intensity).max(d.arithmetic_intensity / ridge)
    } else {
        0.0
    };
    let second = format!(
        "The {} ridge point is {:.0} FLOP/byte ({} peak / {}), so decode sits {:.0}x {} it: it is {}-bound. At full bandwidth a step takes {} ({} tok/s); the {} engine is predicted at {} per step ({} tok/s).",
        hw.name,
        ridge,
        fmt_flops(hw.peak_flops_per_s).replace("FLOP", "FLOP/s"),
        fmt_bytes_per_s(hw.bandwidth_bytes_per_s),
        factor,
        verdict,
        d.bound,
        fmt_seconds(d.roofline_time_per_step_s),
        tok(d.roofline_tokens_per_s),
        c.engine,
        fmt_seconds(d.time_per_step_s),
        tok(d.tokens_per_s)
    );
    let second = match fixed_costs(p) {
        Some(why) => format!("{second} {why}"),
        None => second,
    };
    vec![finding("decode", first), finding("decode", second)]
}

/// On the kernel tables, the factor of what each kernel no table times takes.
fn shortest_kernel(p: &Prediction) -> Option<&crate::predict::FactorReport> {
    p.factors.iter().find(|f| f.name == "shortest_kernel_s")
}

/// Where fixed costs take most of a decode step: how much, and that the engine's
/// per-layer time is paid per kernel launched (`None` where they take less than half).
fn fixed_costs(p: &Prediction) -> Option<String> {
    let (d, a) = (&p.decode, &p.architecture);
    if d.time_per_step_s <= 0.0 || d.overhead_per_step_s < 0.5 * d.time_per_step_s {
        return None;
    }
    let dense = crate::predict::DENSE_LAYER_KERNELS as f64;
    let launches = if (a.kernels_per_layer - dense).abs() < 0.05 {
        format!("its {} layers' kernel launches", a.layers)
    } else {
        format!(
            "its {} layers launching {:.1} kernels each on average where a dense layer launches {dense:.0}",
            a.layers, a.kernels_per_layer
        )
    };
    // on the kernel tables the per-layer time is the tables' shortest kernel for each
    // launch they do not time
    let per_layer = match shortest_kernel(p) {
        Some(f) => format!(
            "time per step and, for {launches}, {} for each kernel no table times",
            fmt_seconds(f.value)
        ),
        None => format!("time per step and per layer, for {launches}"),
    };
    // a release's host work per running sequence (`vllm-0.5`), where the profile has it
    let per_sequence = p
        .factors
        .iter()
        .find(|f| f.name == "sequence_overhead_s")
        .map(|f| {
            format!(
                ", its host work per sequence ({} for each of the {} sequences: {})",
                fmt_seconds(f.value),
                p.config.batch,
                fmt_seconds(f.value * p.config.batch as f64)
            )
        })
        .unwrap_or_default();
    Some(format!(
        "Fixed costs take {} of it ({:.0}%): the {} engine's {per_layer}{per_sequence}, and the collectives a fixed latency bounds.",
        fmt_seconds(d.overhead_per_step_s),
        100.0 * d.overhead_per_step_s / d.time_per_step_s,
        p.config.engine
    ))
}

/// Where batching turns decode compute-bound, and what a larger batch gives.
fn batching_findings(p: &Prediction, larger: Option<&WhatIf>) -> Vec<Finding> {
    let (d, c) = (&p.decode, &p.config);
    let mut f = vec![match d.compute_bound_batch {
        Some(b) => finding(
            "batching",
            format!(
                "{}, so batching raises intensity: decode turns compute-bound at batch {b} (at context {}).{}",
                match p.architecture.experts {
                    Some(e) if e.reads_per_decode_step > e.touched_per_decode_step + 1e-9 => {
                        "The dense weights are read once per step whatever the batch (the routed experts here once per token that picks them, below 32 sequences)"
                    }
                    _ => "Weights are read once per step whatever the batch",
                },
                d.context,
                if b > p.memory.max_batch {
                    format!(
                        " Memory allows at most batch {} here, so it stays memory-bound.",
                        p.memory.max_batch
                    )
                } else {
                    String::new()
                }
            ),
        ),
        None => finding(
            "batching",
            format!(
                "Decode never turns compute-bound by batching at context {}: every sequence adds its own KV-cache reads, which grow as fast as the FLOPs.",
                d.context
            ),
        ),
    }];
    if let Some(w) = larger {
        let step = w.summary.decode.time_s;
        let rate = w.batch as f64 / step;
        f.push(finding(
            "batching",
            format!(
                "Batch {} instead of {}: {} tok/s in total instead of {} ({:.1}x), at {} per step.",
                w.batch,
                c.batch,
                tok(rate),
                tok(d.tokens_per_s),
                rate / d.tokens_per_s.max(f64::MIN_POSITIVE),
                fmt_seconds(step)
            ),
        ));
    }
    f
}

fn prefill_finding(p: &Prediction) -> Finding {
    let c = &p.config;
    finding(
        "prefill",
        format!(
            "Prefill processes {} tokens at once, reusing each weight {} times: {} at {:.0} FLOP/byte, {}-bound; TTFT {} (roofline {}).",
            c.batch * c.prompt,
            c.batch * c.prompt,
            fmt_flops(p.prefill.flops),
            p.prefill.arithmetic_intensity,
            p.prefill.bound,
            fmt_seconds(p.prefill.time_s),
            fmt_seconds(p.prefill.roofline_time_s)
        ),
    )
}

fn memory_finding(p: &Prediction) -> Finding {
    let m = &p.memory.inner;
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
    finding(
        "memory",
        format!(
            "Memory per device: {} of {} ({}); {} dominate with {} ({:.0}%). Largest batch at this length: {}; longest context at batch {}: {} tokens.",
            fmt_gb(m.total_bytes),
            fmt_gb(m.capacity_bytes),
            if m.fits { "fits" } else { "does NOT fit" },
            big,
            fmt_gb(big_b),
            100.0 * big_b / m.total_bytes,
            p.memory.max_batch,
            p.config.batch,
            p.memory.max_context
        ),
    )
}

fn quantized_finding(p: &Prediction, w: &WhatIfs, q: &WhatIf) -> Finding {
    let s = &q.summary;
    finding(
        "help",
        format!(
            "Quantizing weights from {} to {} ({} bits) cuts weight memory to {} and decode to {} per step ({} tok/s, {:.1}x).",
            crate::dtype::formats_label(w.weights, w.experts),
            QUANTIZED_WHAT_IF,
            QUANTIZED_WHAT_IF.bits(),
            fmt_gb(s.memory.weights_bytes),
            fmt_seconds(s.decode.time_s),
            tok(p.config.batch as f64 / s.decode.time_s),
            p.decode.time_per_step_s / s.decode.time_s
        ),
    )
}

fn more_devices_finding(p: &Prediction, t: &WhatIf) -> Finding {
    let s = &t.summary;
    finding(
        "help",
        format!(
            "Tensor parallel over {} devices splits weights and KV: {} per device ({}), decode {} per step ({} tok/s).",
            t.gpus,
            fmt_gb(s.memory.total_bytes),
            if s.memory.fits {
                "fits"
            } else {
                "still does not fit"
            },
            fmt_seconds(s.decode.time_s),
            tok(p.config.batch as f64 / s.decode.time_s)
        ),
    )
}

fn without_ep_finding(p: &Prediction, t: &WhatIf) -> Finding {
    let s = &t.summary;
    let (now, then) = (p.decode.time_per_step_s, s.decode.time_s);
    let ttft = crate::predict::GenerationReport::from_summary(s, t.batch, p.config.r#gen).ttft_s;
    finding(
        "help",
        format!(
            "Without expert parallelism (tensor parallel over the same {} devices, every expert split {} ways: no all-to-all, no busiest group) decode takes {} per step ({} tok/s, {}) and the first token {}; {} per device ({}).",
            t.gpus,
            t.gpus,
            fmt_seconds(then),
            tok(p.config.batch as f64 / then),
            if then < now {
                format!("{:.2}x faster", now / then)
            } else {
                format!("{:.2}x slower", then / now)
            },
            fmt_seconds(ttft),
            fmt_gb(s.memory.total_bytes),
            if s.memory.fits {
                "fits"
            } else {
                "does not fit"
            },
        ),
    )
}

fn headline(p: &Prediction) -> String {
    let (d, hw) = (&p.decode, &p.hardware);
    format!(
        "{} on {}x {}: {} — decode is {}-bound at {:.2} FLOP/byte (ridge {:.0}); {} tok/s per sequence, TTFT {}.",
        p.model.name,
        hw.count,
        hw.name,
        if p.memory.inner.fits {
            "fits"
        } else {
            "does not fit"
        },
        d.bound,
        d.arithmetic_intensity,
        hw.ridge_point,
        tok(d.tokens_per_s / p.config.batch as f64),
        fmt_seconds(p.generation.ttft_s)
    )
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
