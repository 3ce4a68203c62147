//! Reading the layer structure of a `config.json`: which layers use which mixer
//! (softmax, sliding-window, latent or linear attention) and which feed-forward (dense or
//! mixture of experts), with the family-specific fields that say so.
//!
//! | family (`model_type`) | fields read |
//! |---|---|
//! | mistral, qwen2, gemma2/3, gpt_oss | `sliding_window`, `layer_types`, `sliding_window_pattern`, `use_sliding_window`, `max_window_layers` |
//! | llama4 | `attention_chunk_size` (chunked layers cache one chunk), `no_rope_layers`, `interleave_moe_layer_step`, `intermediate_size_mlp` |
//! | deepseek_v2/v3, kimi_k2 | `q_lora_rank`, `kv_lora_rank`, `qk_nope_head_dim`, `qk_rope_head_dim`, `v_head_dim`, `first_k_dense_replace`, `moe_layer_freq`, `n_routed_experts`, `n_shared_experts`, `moe_intermediate_size`, `num_nextn_predict_layers` |
//! | qwen2_moe, qwen3_moe, qwen3_next | `decoder_sparse_step`, `mlp_only_layers`, `moe_intermediate_size`, `shared_expert_intermediate_size`, `full_attention_interval`, `linear_*` |
//! | jamba | `attn_layer_period`, `attn_layer_offset`, `expert_layer_period`, `expert_layer_offset`, `mamba_d_state`, `mamba_expand`, `mamba_dt_rank`, `mamba_d_conv`, `mamba_conv_bias`, `mamba_proj_bias` |
//! | nemotron_h | `hybrid_override_pattern` (one block per layer), `mamba_num_heads`, `mamba_head_dim`, `ssm_state_size`, `n_groups`, `conv_kernel`, `chunk_size`, `use_bias`, `use_conv_bias`, `mamba_ssm_cache_dtype`, `moe_shared_expert_intermediate_size` |

use super::fields::Fields;
use super::{Ffn, LayerKind, LinearDims, MambaDims, Mixer, MlaDims, SsmDims};
use crate::dtype::Format;
use crate::error::Result;
use serde_json::Value;

/// What [`read`] finds beyond the basic dimensions.
#[derive(Debug, Clone, PartialEq)]
pub(super) struct Structure {
    pub kinds: Vec<LayerKind>,
    pub layer_kinds: Vec<u8>,
    pub shared_experts: u64,
    pub shared_intermediate: u64,
    pub mla: Option<MlaDims>,
    pub linear: Option<LinearDims>,
    pub ssm: Option<SsmDims>,
    pub mamba: Option<MambaDims>,
    pub qk_norm: bool,
    pub norms_per_layer: u64,
    pub attention_sinks: bool,
    pub attention_gate: bool,
    pub native_expert_format: Option<Format>,
    pub mtp_layers: u64,
    pub notes: Vec<String>,
}

/// The basic dimensions [`read`] builds on.
pub(super) struct Base<'a> {
    pub family: &'a str,
    pub hidden: u64,
    pub layers: u64,
    pub intermediate: u64,
    pub experts: u64,
    pub max_context: u64,
    pub rope: bool,
}

/// Reads the per-layer structure.
pub(super) fn read(f: &Fields, b: &Base) -> Result<Structure> {
    let n = b.layers as usize;
    let ssm = super::ssm::read(f, b.hidden)?;
    let mamba = super::ssm::read_mamba1(f, b.family, b.hidden)?;
    let blocks = super::ssm::pattern(f, n, ssm.is_some())?;
    if ssm.is_some() && blocks.is_none() {
        return Err(f.error(
            "field ssm_state_size: Mamba-2 blocks need a hybrid_override_pattern saying which layers they are".into(),
        ));
    }
    let (mixers, ffns): (Vec<Mixer>, Vec<Ffn>) = match &blocks {
        Some(layers) => layers.iter().copied().unzip(),
        None => {
            let moe = moe_layers(f, b, n)?;
            let ffn = |m: bool| if m { Ffn::Moe } else { Ffn::Dense };
            (mixers(f, b, n)?, moe.into_iter().map(ffn).collect())
        }
    };
    let windows = windows(f, b, n, &mixers)?;
    let ropes = rope_layers(f, b, n)?;
    let mut kinds: Vec<LayerKind> = Vec::new();
    let mut layer_kinds = Vec::with_capacity(n);
    for i in 0..n {
        let kind = LayerKind {
            mixer: mixers[i],
            window: windows[i],
            // Llama 4's windows are its attention chunks
            chunked: windows[i].is_some() && b.family.starts_with("llama4"),
            rope: ropes[i],
            ffn: ffns[i],
        };
        let k = match kinds.iter().position(|x| *x == kind) {
            Some(k) => k,
            None => {
                kinds.push(kind);
                kinds.len() - 1
            }
        };
        layer_kinds.push(k as u8);
    }
    let (shared_experts, shared_intermediate) = shared(f, b)?;
    let mut notes = Vec::new();
    if f.get(&["vision_config"]).is_some() {
        notes.push("the vision encoder is not counted: text-only inference".into());
    }
    Ok(Structure {
        kinds,
        layer_kinds,
        shared_experts,
        shared_intermediate,
        mla: mla(f)?,
        linear: linear(f)?,
        ssm,
        mamba,
        qk_norm: matches!(
            b.family,
            "qwen3" | "qwen3_moe" | "qwen3_next" | "gemma3" | "gemma3_text"
        ),
        norms_per_layer: if b.family.starts_with("gemma2") || b.family.starts_with("gemma3") {
            4
        } else if blocks.is_some() {
            // one pre-norm per single-block layer
            1
        } else {
            2
        },
        attention_sinks: b.family == "gpt_oss",
        attention_gate: b.family == "qwen3_next",
        native_expert_format: expert_format(f)?,
        mtp_layers: f.count(&["num_nextn_predict_layers"])?.unwrap_or(0),
        notes,
    })
}

/// `layer_types` strings, when the config lists them.
fn layer_types(f: &Fields, n: usize) -> Result<Option<Vec<String>>> {
    let Some(v) = f.get(&["layer_types"]) else {
        return Ok(None);
    };
    let list: Option<Vec<String>> = v.as_array().map(|a| {
        a.iter()
            .filter_map(|x| x.as_str().map(str::to_string))
            .collect()
    });
    match list {
        Some(l) if l.len() == n => Ok(Some(l)),
        _ => Err(f.error(format!(
            "field layer_types: expected {n} layer type names (one per layer), got {v}"
        ))),
    }
}

/// The mixer of each layer.
fn mixers(f: &Fields, b: &Base, n: usize) -> Result<Vec<Mixer>> {
    if b.family == "jamba" {
        return super::ssm::jamba_mixers(f, n);
    }
    if f.get(&["kv_lora_rank"]).is_some() {
        return Ok(vec![Mixer::Mla; n]);
    }
    if let Some(types) = layer_types(f, n)? {
        return types
            .iter()
            .map(|t| match t.as_str() {
                "full_attention" | "sliding_attention" | "chunked_attention" => {
                    Ok(Mixer::Attention)
                }
                "linear_attention" if f.get(&["linear_num_value_heads"]).is_some() => {
                    Ok(Mixer::Linear)
                }
                other => Err(f.error(format!(
                    "field layer_types: '{other}' layers are not modelled (full_attention, sliding_attention, chunked_attention and Gated DeltaNet linear_attention are)"
                ))),
            })
            .collect();
    }
    if let Some(every) = f.uint(&["full_attention_interval"])? {
        // Qwen3-Next: every `every`-th layer is full attention, the rest linear
        return Ok((0..n)
            .map(|i| {
                if (i as u64 + 1).is_multiple_of(every) {
                    Mixer::Attention
                } else {
                    Mixer::Linear
                }
            })
            .collect());
    }
    let _ = b;
    Ok(vec![Mixer::Attention; n])
}

/// The sliding window (or attention chunk) of each layer.
fn windows(f: &Fields, b: &Base, n: usize, mixers: &[Mixer]) -> Result<Vec<Option<u64>>> {
    let mut out = vec![None; n];
    if b.family.starts_with("llama4") {
        // chunked attention on the RoPE layers: a query sees its own chunk only, so a
        // layer caches at most one chunk
        if let Some(c) = f.uint(&["attention_chunk_size"])? {
            let ropes = rope_layers(f, b, n)?;
            for i in (0..n).filter(|&i| ropes[i]) {
                out[i] = Some(c);
            }
        }
        return Ok(out);
    }
    let Some(w) = f.uint(&["sliding_window"])? else {
        return Ok(out);
    };
    if !f.boolean(&["use_sliding_window"], true)? || w >= b.max_context {
        return Ok(out);
    }
    if let Some(types) = layer_types(f, n)? {
        for (o, t) in out.iter_mut().zip(&types) {
            if t == "sliding_attention" {
                *o = Some(w);
            }
        }
        return Ok(out);
    }
    let pattern = f.uint(&["sliding_window_pattern"])?;
    let max_window_layers = f.uint(&["max_window_layers"])?;
    for (i, o) in out.iter_mut().enumerate() {
        if mixers[i] != Mixer::Attention {
            continue;
        }
        *o = match (b.family, pattern) {
            // Gemma 3: every `p`-th layer is global, the others local
            (_, Some(p)) if !(i as u64 + 1).is_multiple_of(p) => Some(w),
            (_, Some(_)) => None,
            // Gemma 2: alternating local and global, starting local
            ("gemma2", None) => (i % 2 == 0).then_some(w),
            // Qwen2: layers from `max_window_layers` on use the window
            (_, None) => match max_window_layers {
                Some(m) if (i as u64) < m && b.family.starts_with("qwen") => None,
                _ => Some(w),
            },
        };
    }
    Ok(out)
}

/// Whether each layer's feed-forward is a mixture of experts.
fn moe_layers(f: &Fields, b: &Base, n: usize) -> Result<Vec<bool>> {
    if b.experts <= 1 {
        return Ok(vec![false; n]);
    }
    if let Some(period) = f.uint(&["expert_layer_period"])? {
        // Jamba: experts on the layers `i % period == offset`
        let offset = f.count(&["expert_layer_offset"])?.unwrap_or(0);
        return Ok((0..n as u64).map(|i| i % period == offset).collect());
    }
    let first_dense = f.count(&["first_k_dense_replace"])?.unwrap_or(0) as usize;
    let step = f
        .uint(&[
            "interleave_moe_layer_step",
            "moe_layer_freq",
            "decoder_sparse_step",
        ])?
        .unwrap_or(1);
    let dense_only: Vec<u64> = match f.get(&["mlp_only_layers"]).and_then(Value::as_array) {
        Some(a) => a.iter().filter_map(Value::as_u64).collect(),
        None => Vec::new(),
    };
    Ok((0..n)
        .map(|i| {
            let by_step = if b.family.starts_with("llama4") {
                // Llama 4: layers step-1, 2·step-1, ... are MoE
                (i as u64 + 1).is_multiple_of(step)
            } else {
                (i as u64 + 1).is_multiple_of(step) || step == 1
            };
            i >= first_dense && by_step && !dense_only.contains(&(i as u64))
        })
        .collect())
}

/// Whether each layer applies rotary embeddings.
fn rope_layers(f: &Fields, b: &Base, n: usize) -> Result<Vec<bool>> {
    match f.get(&["no_rope_layers"]).and_then(Value::as_array) {
        // Llama 4: 1 = RoPE, 0 = no positional encoding on that layer
        Some(a) if a.len() == n => Ok(a.iter().map(|x| x.as_u64() != Some(0)).collect()),
        // empty: transformers' default, every fourth layer without RoPE
        Some(a) if a.is_empty() => Ok((0..n).map(|i| (i + 1) % 4 != 0).collect()),
        Some(_) => Err(f.error(format!(
            "field no_rope_layers: expected {n} entries (one per layer)"
        ))),
        None if b.family.starts_with("llama4") => Ok((0..n).map(|i| (i + 1) % 4 != 0).collect()),
        None => Ok(vec![b.rope; n]),
    }
}

/// Shared experts: (count, total inner width).
fn shared(f: &Fields, b: &Base) -> Result<(u64, u64)> {
    if let Some(w) = f.uint(&["moe_shared_expert_intermediate_size"])? {
        // Nemotron-H: the shared experts' total width
        return Ok((f.count(&["n_shared_experts"])?.unwrap_or(1).max(1), w));
    }
    if let Some(k) = f.count(&["n_shared_experts"])?.filter(|&k| k > 0) {
        let each = f
            .uint(&["moe_intermediate_size"])?
            .unwrap_or(b.intermediate);
        return Ok((k, k * each));
    }
    if let Some(w) = f.uint(&["shared_expert_intermediate_size"])? {
        return Ok((1, w));
    }
    if b.family.starts_with("llama4") && b.experts > 1 {
        // Llama 4: one shared expert as wide as a routed one
        return Ok((1, b.intermediate));
    }
    Ok((0, 0))
}

fn mla(f: &Fields) -> Result<Option<MlaDims>> {
    let Some(kv_lora_rank) = f.uint(&["kv_lora_rank"])? else {
        return Ok(None);
    };
    Ok(Some(MlaDims {
        q_lora_rank: f.uint(&["q_lora_rank"])?,
        kv_lora_rank,
        qk_nope_head_dim: f.req(&["qk_nope_head_dim"])?,
        qk_rope_head_dim: f.req(&["qk_rope_head_dim"])?,
        v_head_dim: f.req(&["v_head_dim"])?,
    }))
}

fn linear(f: &Fields) -> Result<Option<LinearDims>> {
    let Some(value_heads) = f.uint(&["linear_num_value_heads"])? else {
        return Ok(None);
    };
    Ok(Some(LinearDims {
        key_heads: f.req(&["linear_num_key_heads"])?,
        value_heads,
        key_dim: f.req(&["linear_key_head_dim"])?,
        value_dim: f.req(&["linear_value_head_dim"])?,
        conv_kernel: f.uint(&["linear_conv_kernel_dim"])?.unwrap_or(4),
    }))
}

/// The routed experts' checkpoint format when a `quantization_config` says they differ
/// from the rest (gpt-oss: MXFP4 experts).
fn expert_format(f: &Fields) -> Result<Option<Format>> {
    let q = f.nested("quantization_config");
    match q
        .string(&["quant_method"])
        .map(str::to_ascii_lowercase)
        .as_deref()
    {
        Some("mxfp4") => Ok(Some(Format::Mxfp4)),
        _ => Ok(None),
    }
}

/// The whole checkpoint's format from `quantization_config` (DeepSeek-V3: block-scaled
/// fp8), if it sets one for every linear layer.
pub(super) fn checkpoint_format(f: &Fields) -> Option<Format> {
    let q = f.nested("quantization_config");
    match q
        .string(&["quant_method"])
        .map(str::to_ascii_lowercase)
        .as_deref()
    {
        Some("fp8") if q.get(&["weight_block_size"]).is_some() => Some(Format::Fp8Block),
        Some("fp8") => Some(Format::Fp8),
        _ => None,
    }
}
