//! The explanation's sentences on what a model's architecture changes: its attention
//! (grouped-query, latent, sliding windows, linear), its state-space blocks, its experts
//! and how they are
//! spread, and speculative decoding. Reads [`Prediction::architecture`] and the
//! prediction's ops; computes nothing but the sentences.

use super::finding::Finding;
use crate::model::graph::Phase;
use crate::predict::{Architecture, Prediction};
use crate::units::{fmt_bytes as bytes, fmt_gb, fmt_params};

fn finding(topic: &'static str, text: String) -> Finding {
    Finding { topic, text }
}

/// Every architecture sentence that applies, attention first.
pub(super) fn findings(p: &Prediction) -> Vec<Finding> {
    let a = &p.architecture;
    let mut f = vec![attention(a)];
    f.extend(windows(p, a));
    f.extend(linear(a));
    f.extend(ssm(p, a));
    f.extend(experts(p, a));
    f.extend(expert_parallel(p));
    if let Some(sp) = &p.speculative {
        f.push(finding(
            "decode",
            format!("{}.", super::text::speculation(sp, p.config.batch)),
        ));
    }
    f
}

/// Latent, grouped-query or full multi-head attention: the cache per token against
/// what every query head's own uncompressed key and value would take.
fn attention(a: &Architecture) -> Finding {
    let (kv, mha) = (a.kv_bytes_per_token, a.mha_kv_bytes_per_token);
    let ratio = if kv > 0.0 { mha / kv } else { 0.0 };
    if a.latent_layers > 0 {
        return finding(
            "architecture",
            format!(
                "Multi-head latent attention caches one compressed latent and rotary key per layer, {} per token, where the same {} heads uncompressed would cache {}: {ratio:.0}x less KV cache, at the cost of projecting the latent back (absorbed into the queries in decode).",
                bytes(kv),
                a.heads,
                bytes(mha)
            ),
        );
    }
    if a.kv_heads == a.heads {
        let gqa = 8.0_f64.min(a.heads as f64);
        return finding(
            "help",
            format!(
                "This model has no grouped-query attention ({} KV heads for {} query heads, {} per token); a GQA model with 8 KV heads would cache {:.0}x less ({}).",
                a.kv_heads,
                a.heads,
                bytes(kv),
                a.heads as f64 / gqa,
                bytes(kv * gqa / a.heads as f64)
            ),
        );
    }
    finding(
        "architecture",
        format!(
            "Grouped-query attention ({} KV heads for {} query heads) caches {} per token where full multi-head attention would cache {}: {ratio:.0}x less.",
            a.kv_heads,
            a.heads,
            bytes(kv),
            bytes(mha)
        ),
    )
}

/// Sliding windows: the cache at this context against every layer caching it all.
fn windows(p: &Prediction, a: &Architecture) -> Option<Finding> {
    let largest = a.windows.last()?;
    let windowed: u64 = a.windows.iter().map(|w| w.layers).sum();
    if let [one] = &a.windows[..]
        && one.chunked
    {
        return Some(finding(
            "architecture",
            format!(
                "{windowed} of {} layers attend within chunks of {} tokens: a query sees the keys of its own chunk only, so those layers cache one chunk and a decode step reads {} keys at context {} (its chunk so far); prefill counts the pairs within each chunk.",
                a.layers,
                one.window,
                (p.decode.context.max(1) - 1) % one.window + 1,
                p.decode.context,
            ),
        ));
    }
    let list = match &a.windows[..] {
        [one] => format!("a sliding window of {} tokens", one.window),
        many => format!(
            "sliding windows of {}",
            many.iter()
                .map(|w| format!("{} tokens ({} layers)", w.window, w.layers))
                .collect::<Vec<_>>()
                .join(" and ")
        ),
    };
    let (at, full) = (a.kv_bytes_at_context, a.kv_bytes_at_context_unwindowed);
    let saving = if at < full {
        format!(
            "at context {} a sequence caches {} instead of {} ({:.1}x less)",
            p.decode.context,
            bytes(at),
            bytes(full),
            full / at
        )
    } else {
        format!(
            "at context {} no window is full yet; beyond {} tokens those layers stop growing",
            p.decode.context, largest.window
        )
    };
    Some(finding(
        "architecture",
        format!(
            "{windowed} of {} layers attend to {list}: their cache and decode reads stop at the window, and prefill counts only the band; {saving}.",
            a.layers
        ),
    ))
}

/// Linear attention: a fixed state instead of a growing cache.
fn linear(a: &Architecture) -> Option<Finding> {
    (a.linear_layers > 0).then(|| {
        finding(
            "architecture",
            format!(
                "{} of {} layers are linear attention with a fixed state of {} per sequence whatever the context; only the other {} layers cache keys and values ({} per token).",
                a.linear_layers,
                a.layers,
                bytes(a.state_bytes_per_sequence),
                a.attention_layers,
                bytes(a.kv_bytes_per_token)
            ),
        )
    })
}

/// State-space (Mamba) blocks: a fixed state per sequence, and which layers still cache
/// keys and values.
fn ssm(p: &Prediction, a: &Architecture) -> Option<Finding> {
    let s = a.ssm?;
    let shape = if s.head_dim == 1 {
        format!("{} channels", s.heads)
    } else {
        format!("{} heads of {} channels", s.heads, s.head_dim)
    };
    let mlp = if a.ffn_only_layers > 0 {
        format!(" {} layers are MLP-only blocks;", a.ffn_only_layers)
    } else {
        String::new()
    };
    Some(finding(
        "architecture",
        format!(
            "{} of {} layers are Mamba-{} state-space blocks ({}, state size {}): each sequence keeps a fixed {} in them ({} SSM states plus the convolution windows) whatever the context, read and written once per step instead of a growing KV cache;{mlp} only the {} attention layers cache keys and values, {} per token ({} per sequence at context {}).",
            s.layers,
            a.layers,
            s.version,
            shape,
            s.d_state,
            bytes(s.state_bytes_per_sequence),
            s.state_format,
            a.attention_layers,
            bytes(a.kv_bytes_per_token),
            bytes(a.kv_bytes_at_context - a.state_bytes_per_sequence),
            p.decode.context
        ),
    ))
}

/// The experts a token runs and the ones a decode step reads.
fn experts(p: &Prediction, a: &Architecture) -> Option<Finding> {
    let e = a.experts?;
    let shared = if e.shared > 0 {
        format!(" plus {} shared", e.shared)
    } else {
        String::new()
    };
    // what the step reads of them: each touched expert once, or (an Apple GPU's expert
    // kernels below 32 tokens) once per token that picks it
    let reads = if e.reads_per_decode_step > e.touched_per_decode_step + 1e-9 {
        format!(
            "; its expert kernels read an expert's weights once per token that picks it here, {:.0} reads per layer",
            e.reads_per_decode_step
        )
    } else {
        ", and reads only those experts' weights".to_string()
    };
    Some(finding(
        "architecture",
        format!(
            "Mixture of experts: each token runs {} of {} routed experts{shared} in {} of {} layers ({} of {} parameters active, experts stored as {}); a decode step of batch {} touches {:.1} experts per layer on average{reads}.",
            e.per_token,
            e.routed,
            e.moe_layers,
            a.layers,
            fmt_params(p.model.active_params as f64),
            fmt_params(p.model.params as f64),
            e.format,
            p.config.batch,
            e.touched_per_decode_step
        ),
    ))
}

/// Expert parallelism: the all-to-alls' share of the decode step.
fn expert_parallel(p: &Prediction) -> Option<Finding> {
    let c = &p.config;
    if c.ep <= 1 {
        return None;
    }
    let decode: Vec<_> = p.ops.iter().filter(|o| o.phase == Phase::Decode).collect();
    let total: f64 = decode.iter().map(|o| o.time_s).sum();
    let (mut time, mut link) = (0.0, 0.0);
    for o in decode.iter().filter(|o| o.kind.is_expert_all_to_all()) {
        time += o.time_s;
        link += o.link_bytes;
    }
    // the busiest rank, which every MoE layer waits for
    let how = if c.expert_imbalance > 1.0 {
        format!(
            "tokens routed at random, or the stated imbalance of {}x the mean's rows where that is more",
            c.expert_imbalance
        )
    } else {
        "tokens routed at random".to_string()
    };
    let busiest = match p.architecture.experts.and_then(|e| e.busiest_rank) {
        Some(l) => format!(
            " Routing is uneven: the busiest group runs {:.1} routed rows and reads {:.1} experts per layer where the mean runs {:.1} and reads {:.1} ({how}), and every layer waits for it.",
            l.rows, l.touched, l.mean_rows, l.mean_touched
        ),
        None => String::new(),
    };
    let over = match p.network() {
        Some((domains, bw)) => format!(
            "over the scale-up link and, between its {domains} scale-up domains, the network ({} per device)",
            crate::units::fmt_bytes_per_s(bw)
        ),
        None => "over the link".to_string(),
    };
    Some(finding(
        "architecture",
        format!(
            "Expert parallelism over {} groups: each device holds 1/{} of the routed experts ({} of weights per device) and serves {} of the {} sequences; the dispatch and combine all-to-alls move {} per device per decode step {over}, {:.0}% of the step's op time.{busiest}",
            c.ep,
            c.ep,
            fmt_gb(p.memory.inner.weights_bytes),
            c.batch.div_ceil(c.ep),
            c.batch,
            bytes(link),
            100.0 * time / total.max(f64::MIN_POSITIVE)
        ),
    ))
}
