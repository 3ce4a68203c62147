//! Reading Hugging Face `config.json` files into a [`ModelConfig`]: field names and
//! their aliases across model families, defaults by family, and the checks that name
//! the offending field.

use super::fields::Fields;
use super::{ExpertGroups, MAX_PARAMS, ModelConfig};
use crate::dtype::Format;
use crate::error::{Error, Result};
use crate::ops::{Activation, NormKind};
use serde_json::{Map, Value};
use std::path::Path;

/// Families with a plain (ungated) GELU MLP and learned or ALiBi positions.
fn is_plain_family(family: &str) -> bool {
    matches!(
        family,
        "gpt2" | "gpt_neox" | "gptj" | "mpt" | "falcon" | "opt" | "bloom" | "gpt_bigcode" | "phi"
    )
}

/// Most decoder layers a config may have (the layer structure is kept per layer).
const MAX_LAYERS: u64 = 100_000;

/// Width, layers, heads, KV heads, head size.
struct AttentionDims {
    hidden: u64,
    layers: u64,
    heads: u64,
    kv_heads: u64,
    head_dim: u64,
}

fn attention_dims(f: &Fields) -> Result<AttentionDims> {
    let hidden = f.req(&["hidden_size", "d_model", "n_embd", "dim"])?;
    let layers = f.req(&["num_hidden_layers", "n_layers", "n_layer", "num_layers"])?;
    if layers > MAX_LAYERS {
        return Err(f.error(format!(
            "field num_hidden_layers: {layers} layers is beyond any model (at most {MAX_LAYERS}); the parameters would not fit any count"
        )));
    }
    let heads = f.req(&["num_attention_heads", "n_heads", "n_head"])?;
    let multi_query = f.boolean(&["multi_query"], false)?;
    let kv_heads = match f.uint(&["num_key_value_heads", "n_head_kv", "num_kv_heads"])? {
        Some(k) => k,
        None => match f.nested("attn_config").uint(&["kv_n_heads"])? {
            Some(k) => k,
            None if multi_query => 1,
            None => heads,
        },
    };
    let head_dim = match f.uint(&["head_dim", "attention_head_dim"])? {
        Some(d) => d,
        None if hidden % heads != 0 => {
            return Err(f.error(format!(
                "field hidden_size: {hidden} is not divisible by num_attention_heads {heads} (give head_dim explicitly)"
            )));
        }
        None => hidden / heads,
    };
    if kv_heads > heads {
        return Err(f.error(format!(
            "field num_key_value_heads: {kv_heads} is more than num_attention_heads {heads}"
        )));
    }
    if heads % kv_heads != 0 {
        return Err(f.error(format!(
            "field num_key_value_heads: {kv_heads} does not divide num_attention_heads {heads}"
        )));
    }
    Ok(AttentionDims {
        hidden,
        layers,
        heads,
        kv_heads,
        head_dim,
    })
}

fn activation(f: &Fields, plain: bool) -> Activation {
    let name = f
        .string(&[
            "hidden_act",
            "activation_function",
            "hidden_activation",
            "mlp_hidden_act",
        ])
        .unwrap_or(if plain { "gelu" } else { "silu" })
        .to_ascii_lowercase();
    if name.contains("silu") || name.contains("swish") {
        Activation::Silu
    } else if name.contains("relu") {
        Activation::Relu
    } else {
        Activation::Gelu
    }
}

/// Feed-forward widths: the dense MLP's and a routed expert's.
struct MlpDims {
    intermediate: u64,
    expert_intermediate: u64,
    experts: u64,
    per_token: u64,
    groups: Option<ExpertGroups>,
}

/// Feed-forward widths, experts and experts per token. Llama 4 names its dense width
/// `intermediate_size_mlp` and its expert width `intermediate_size`; DeepSeek and Qwen
/// name the expert width `moe_intermediate_size`.
fn mlp_dims(f: &Fields, hidden: u64, plain: bool, family: &str) -> Result<MlpDims> {
    let expansion = f.get(&["expansion_ratio"]).and_then(Value::as_f64);
    let keys = ["intermediate_size", "n_inner", "ffn_dim", "ffn_hidden_size"];
    let intermediate = match (f.uint(&keys)?, expansion) {
        (Some(i), _) => i,
        (None, Some(r)) if r.is_finite() && r > 0.0 => (hidden as f64 * r).round() as u64,
        // GPT-2 style configs leave n_inner null for the usual 4 x width
        (None, _) if plain => 4 * hidden,
        (None, _) => {
            return Err(f.error(format!(
                "missing field intermediate_size (also accepted: {})",
                keys[1..].join(", ")
            )));
        }
    };
    let experts = f
        .uint(&[
            "num_local_experts",
            "num_experts",
            "n_routed_experts",
            "moe_num_experts",
        ])?
        .unwrap_or(1);
    let per_token = f
        .uint(&["num_experts_per_tok", "experts_per_token", "moe_top_k"])?
        .unwrap_or(1);
    if per_token > experts {
        return Err(f.error(format!(
            "field num_experts_per_tok: {per_token} is more than num_local_experts {experts}"
        )));
    }
    let groups = expert_groups(f, experts)?;
    let (intermediate, expert_intermediate) = if family.starts_with("llama4") {
        let dense = f.uint(&["intermediate_size_mlp"])?.unwrap_or(intermediate);
        (dense, intermediate)
    } else {
        let expert = f.uint(&["moe_intermediate_size"])?.unwrap_or(intermediate);
        (intermediate, expert)
    };
    Ok(MlpDims {
        intermediate,
        expert_intermediate,
        experts,
        per_token,
        groups,
    })
}

/// Group-limited routing (DeepSeek-V3's `n_group` groups of experts, of which each token
/// picks from the best `topk_group`): `None` with one group or without the fields.
fn expert_groups(f: &Fields, experts: u64) -> Result<Option<ExpertGroups>> {
    let (Some(groups), Some(per_token)) = (f.uint(&["n_group"])?, f.uint(&["topk_group"])?) else {
        return Ok(None);
    };
    if groups == 0 || !experts.is_multiple_of(groups) {
        return Err(f.error(format!(
            "field n_group: {groups} does not divide the {experts} routed experts"
        )));
    }
    if per_token == 0 || per_token > groups {
        return Err(f.error(format!(
            "field topk_group: {per_token} is not between 1 and n_group {groups}"
        )));
    }
    Ok((groups > 1 && per_token < groups).then_some(ExpertGroups { groups, per_token }))
}

/// Biases (q/k/v, o, MLP) and the norm, by family.
fn biases_and_norm(f: &Fields, family: &str) -> Result<(bool, bool, bool, NormKind)> {
    let no_bias = f.boolean(&["no_bias"], false)?;
    Ok(match family {
        "gpt2" | "gpt_neox" | "gptj" | "opt" | "bloom" | "gpt_bigcode" | "phi" => {
            (true, true, true, NormKind::Layer)
        }
        "mpt" if no_bias => (false, false, false, NormKind::LayerNoBias),
        "mpt" => (true, true, true, NormKind::Layer),
        "qwen2" | "qwen2_moe" => (true, false, false, NormKind::Rms),
        // gpt-oss: biases on q, k, v, o and on every expert
        "gpt_oss" => (true, true, true, NormKind::Rms),
        _ => {
            let ab = f.boolean(&["attention_bias", "bias"], false)?;
            let mb = f.boolean(&["mlp_bias"], false)?;
            (ab, ab, mb, NormKind::Rms)
        }
    })
}

/// (tied embeddings, learned positions, RoPE).
fn embeddings_and_positions(f: &Fields, family: &str) -> Result<(bool, bool, bool)> {
    let tied_default = matches!(
        family,
        "gpt2"
            | "mpt"
            | "gpt_bigcode"
            | "gptj"
            | "opt"
            | "bloom"
            | "gemma2"
            | "gemma3"
            | "gemma3_text"
    );
    let tied = f.boolean(&["tie_word_embeddings"], tied_default)?;
    let alibi =
        f.nested("attn_config").boolean(&["alibi"], false)? || f.boolean(&["alibi"], false)?;
    let learned = match family {
        "gpt2" | "opt" | "gpt_bigcode" => true,
        "mpt" => !alibi && f.boolean(&["learned_pos_emb"], true)?,
        _ => false,
    };
    // Nemotron-H's and Jamba's attention layers have no positional encoding (their
    // Mamba layers carry the order)
    let rope = !learned && !alibi && !matches!(family, "nemotron_h" | "jamba");
    Ok((tied, learned, rope))
}

/// The checkpoint's dtype (`torch_dtype`); bf16 when the config does not say.
fn native_format(f: &Fields) -> Result<Format> {
    let Some(name) = f.get(&["torch_dtype", "dtype"]) else {
        return Ok(Format::Bf16);
    };
    match name.as_str().map(str::to_ascii_lowercase).as_deref() {
        Some("bfloat16" | "bf16") => Ok(Format::Bf16),
        Some("float16" | "fp16" | "half") => Ok(Format::Fp16),
        Some("float32" | "fp32" | "float") => Ok(Format::Fp32),
        _ => Err(f.error(format!(
            "field torch_dtype: {name} is not a dtype ridgeline knows (bfloat16, float16, float32)"
        ))),
    }
}

/// Families whose layer layout ridgeline models as read (anything else is read as a
/// Llama-style decoder, and said so).
const KNOWN_FAMILIES: [&str; 31] = [
    "llama",
    "mistral",
    "mixtral",
    "qwen2",
    "qwen2_moe",
    "gpt2",
    "gpt_neox",
    "gptj",
    "mpt",
    "falcon",
    "opt",
    "bloom",
    "gpt_bigcode",
    "phi",
    "codellama",
    "phi3",
    "qwen3",
    "qwen3_moe",
    "qwen3_next",
    "gemma2",
    "gemma3",
    "gemma3_text",
    "gpt_oss",
    "deepseek_v2",
    "deepseek_v3",
    "kimi_k2",
    "llama4",
    "llama4_text",
    "mistral3",
    "nemotron_h",
    "jamba",
];

/// Config fields of architectures ridgeline does not model yet: reading such a config
/// as a plain decoder would give wrong memory and speed without a word. (Mamba-2 blocks
/// in a `hybrid_override_pattern`, Nemotron-H's layout, are modelled.)
const UNMODELLED: [(&str, &str); 4] = [
    (
        "ssm_cfg",
        "a pure state-space (mamba_ssm) model; only Mamba-2 hybrids with a hybrid_override_pattern (Nemotron-H) are modelled",
    ),
    (
        "mamba_d_state",
        "the mamba_* state-space layers of this model_type are not modelled (Jamba's Mamba-1 layers, model_type jamba, and Mamba-2 hybrids with a hybrid_override_pattern, Nemotron-H, are)",
    ),
    (
        "moe_latent_size",
        "experts working in a projected latent space (Nemotron 3 Super) are not modelled yet",
    ),
    (
        "attn_logit_softcapping_scale",
        "logit soft-capping is not modelled",
    ),
];

/// Refuses configs whose architecture is not modelled; notes what is approximated.
fn check_architecture(f: &Fields, family: &str) -> Result<Vec<String>> {
    for (key, what) in UNMODELLED {
        if f.get(&[key]).is_some() && !(key == "mamba_d_state" && family == "jamba") {
            return Err(f.error(format!(
                "field {key}: {what}; this config cannot be read as a plain decoder"
            )));
        }
    }
    let mut notes = Vec::new();
    if !KNOWN_FAMILIES.contains(&family) {
        notes.push(format!(
            "model_type '{family}' is read as a Llama-style decoder (gated MLP, RMSNorm, RoPE)"
        ));
    }
    Ok(notes)
}

impl ModelConfig {
    /// Parses a Hugging Face `config.json` document. `fallback_id` names the model when
    /// the file has no `ridgeline_id`; `src` names the file in errors.
    ///
    /// Field mapping: width `hidden_size | d_model | n_embd | dim`; layers
    /// `num_hidden_layers | n_layers | n_layer | num_layers`; heads `num_attention_heads |
    /// n_heads | n_head`; KV heads `num_key_value_heads | n_head_kv | num_kv_heads` (or
    /// `attn_config.kv_n_heads`, or 1 with `multi_query`; default = heads);
    /// MLP width `intermediate_size | n_inner | ffn_dim | ffn_hidden_size` (else
    /// `expansion_ratio` times width, else 4 times width for the plain-MLP families, else
    /// an error); vocabulary `vocab_size | padded_vocab_size`; experts `num_local_experts |
    /// num_experts | moe_num_experts`, `num_experts_per_tok | moe_top_k`. The MLP is
    /// chosen by `model_type` alone: plain GELU for gpt2/gpt_neox/gptj/mpt/falcon/opt/
    /// bloom/gpt_bigcode/phi, gated for every other family. Every field read:
    /// docs/reference.md, section "config.json".
    pub fn from_json_str(text: &str, fallback_id: &str, src: &str) -> Result<ModelConfig> {
        let v: Value = serde_json::from_str(text)
            .or_else(|e| match without_python_literals(text) {
                Some(t) => serde_json::from_str(&t).map_err(|_| e),
                None => Err(e),
            })
            .map_err(|e| Error::Parse {
                source_name: src.into(),
                message: format!("not valid JSON: {e}"),
            })?;
        let Value::Object(m) = v else {
            return Err(Error::Parse {
                source_name: src.into(),
                message: "expected a JSON object (a Hugging Face config.json)".into(),
            });
        };
        let mut m = text_part(&m).unwrap_or(m);
        with_family_defaults(&mut m);
        from_fields(&Fields { m: &m, src }, fallback_id)
    }

    /// Reads a `config.json` file.
    pub fn from_file(path: &Path) -> Result<ModelConfig> {
        let text = crate::files::read_document(path)?;
        let stem = path
            .parent()
            .and_then(|p| p.file_name())
            .filter(|_| path.file_name().is_some_and(|f| f == "config.json"))
            .or_else(|| path.file_stem())
            .map(|s| s.to_string_lossy().to_string())
            .unwrap_or_else(|| "custom".into());
        Self::from_json_str(&text, &stem, &path.display().to_string())
    }
}

/// The document with the bare `Infinity`, `-Infinity` and `NaN` that Python's `json`
/// writes (Nemotron-H's `"time_step_limit": [0.0, Infinity]`) read as `null`, or `None`
/// when it has none outside strings. No field ridgeline reads takes such a value.
fn without_python_literals(text: &str) -> Option<String> {
    let mut out = String::with_capacity(text.len());
    let (mut in_string, mut escaped, mut changed) = (false, false, false);
    let mut rest = text;
    while let Some(c) = rest.chars().next() {
        if in_string {
            in_string = escaped || c != '"';
            escaped = !escaped && c == '\\';
        } else if c == '"' {
            in_string = true;
        } else if let Some(lit) = ["-Infinity", "Infinity", "NaN"]
            .into_iter()
            .find(|l| rest.starts_with(l))
        {
            out.push_str("null");
            rest = &rest[lit.len()..];
            changed = true;
            continue;
        }
        out.push(c);
        rest = &rest[c.len_utf8()..];
    }
    changed.then_some(out)
}

/// Multimodal configs (Gemma 3, Llama 4, Mistral Small 3.1) keep the language model
/// under `text_config`: its fields, with the top level's for what it does not say
/// (`torch_dtype`, `quantization_config`, the ridgeline fields).
fn text_part(m: &Map<String, Value>) -> Option<Map<String, Value>> {
    let text = m.get("text_config")?.as_object()?;
    let mut merged = text.clone();
    for (k, v) in m {
        if k != "text_config" && k != "model_type" {
            merged.entry(k.clone()).or_insert_with(|| v.clone());
        }
    }
    Some(merged)
}

/// Fields a family's published configs leave to its transformers config class (Gemma
/// 3's config.json files name only what differs from `Gemma3TextConfig`'s defaults).
fn with_family_defaults(m: &mut Map<String, Value>) {
    let family = m.get("model_type").and_then(Value::as_str).unwrap_or("");
    let defaults: &[(&str, Value)] = match family {
        "gemma3_text" | "gemma3" => &[
            ("vocab_size", Value::from(262_208u64)),
            ("num_attention_heads", Value::from(8u64)),
            ("num_key_value_heads", Value::from(4u64)),
            ("head_dim", Value::from(256u64)),
            ("max_position_embeddings", Value::from(131_072u64)),
            ("sliding_window_pattern", Value::from(6u64)),
            ("hidden_activation", Value::from("gelu_pytorch_tanh")),
            ("tie_word_embeddings", Value::from(true)),
        ],
        _ => &[],
    };
    for (k, v) in defaults {
        if m.get(*k).is_none_or(Value::is_null) {
            m.insert(k.to_string(), v.clone());
        }
    }
}

fn from_fields(f: &Fields, fallback_id: &str) -> Result<ModelConfig> {
    let family = f
        .string(&["model_type"])
        .unwrap_or("llama")
        .to_ascii_lowercase();
    let plain = is_plain_family(&family);
    let d = attention_dims(f)?;
    let approximations = check_architecture(f, &family)?;
    let mlp = mlp_dims(f, d.hidden, plain, &family)?;
    let vocab = f.req(&["vocab_size", "padded_vocab_size"])?;
    let max_context = f
        .uint(&[
            "max_position_embeddings",
            "max_seq_len",
            "n_positions",
            "n_ctx",
            "seq_length",
        ])?
        .unwrap_or(2048);
    let (qkv_bias, o_bias, mlp_bias, norm) = biases_and_norm(f, &family)?;
    let (tied_embeddings, learned_positions, rope) = embeddings_and_positions(f, &family)?;
    let structure = super::kinds::read(
        f,
        &super::kinds::Base {
            family: &family,
            hidden: d.hidden,
            layers: d.layers,
            intermediate: mlp.expert_intermediate,
            experts: mlp.experts,
            max_context,
            rope,
        },
    )?;
    let mut approximations = approximations;
    approximations.extend(structure.notes);
    let native_format = match super::kinds::checkpoint_format(f) {
        Some(q) => q,
        None => native_format(f)?,
    };
    let id = f
        .string(&["ridgeline_id"])
        .unwrap_or(fallback_id)
        .to_string();
    let name = f
        .string(&["ridgeline_name", "_name_or_path"])
        .unwrap_or(&id)
        .to_string();
    let cfg = ModelConfig {
        source: f.string(&["source"]).unwrap_or(f.src).to_string(),
        activation: activation(f, plain),
        // Nemotron-H's MLP is up and down with a squared ReLU, no gate
        gated_mlp: !plain && family != "nemotron_h",
        native_format,
        approximations,
        id,
        name,
        family,
        hidden: d.hidden,
        layers: d.layers,
        heads: d.heads,
        kv_heads: d.kv_heads,
        head_dim: d.head_dim,
        intermediate: mlp.intermediate,
        vocab,
        max_context,
        norm,
        qkv_bias,
        o_bias,
        mlp_bias,
        tied_embeddings,
        learned_positions,
        rope,
        experts: mlp.experts,
        experts_per_token: mlp.per_token,
        expert_groups: mlp.groups,
        expert_intermediate: mlp.expert_intermediate,
        shared_experts: structure.shared_experts,
        shared_intermediate: structure.shared_intermediate,
        layer_kinds: structure.layer_kinds,
        kinds: structure.kinds,
        mla: structure.mla,
        linear: structure.linear,
        ssm: structure.ssm,
        mamba: structure.mamba,
        qk_norm: structure.qk_norm,
        norms_per_layer: structure.norms_per_layer,
        attention_sinks: structure.attention_sinks,
        attention_gate: structure.attention_gate,
        native_expert_format: structure.native_expert_format,
        mtp_layers: structure.mtp_layers,
    };
    match cfg.try_params() {
        Some(p) if p.total <= MAX_PARAMS => Ok(cfg),
        _ => Err(f.error(format!(
            "the sizes (hidden_size {}, num_hidden_layers {}, intermediate_size {}, vocab_size {vocab}, experts {}) give more than {MAX_PARAMS} parameters",
            d.hidden, d.layers, cfg.intermediate, cfg.experts
        ))),
    }
}

#[cfg(test)]
mod tests {
    use super::without_python_literals;
    use crate::model::{ExpertGroups, ModelConfig};

    /// A small MoE config with group-limited routing fields.
    fn routed(groups: u64, per_group: u64) -> crate::error::Result<ModelConfig> {
        let text = format!(
            r#"{{"model_type":"deepseek_v3","hidden_size":64,"num_hidden_layers":2,
            "num_attention_heads":4,"intermediate_size":128,"vocab_size":100,
            "n_routed_experts":16,"num_experts_per_tok":4,"moe_intermediate_size":32,
            "n_group":{groups},"topk_group":{per_group}}}"#
        );
        ModelConfig::from_json_str(&text, "t", "t")
    }

    #[test]
    fn group_limited_routing_is_read_and_checked() {
        let groups = routed(4, 2).unwrap().expert_groups;
        assert_eq!(
            groups,
            Some(ExpertGroups {
                groups: 4,
                per_token: 2
            })
        );
        // one group, or every group, limits nothing
        assert_eq!(routed(1, 1).unwrap().expert_groups, None);
        assert_eq!(routed(4, 4).unwrap().expert_groups, None);
        for (g, k, field) in [
            (3, 1, "n_group"),
            (4, 5, "topk_group"),
            (4, 0, "topk_group"),
        ] {
            let e = routed(g, k).unwrap_err().to_string();
            assert!(e.contains(field), "{e}");
        }
    }

    #[test]
    fn python_literals_outside_strings_read_as_null() {
        let text = r#"{"a": [0.0, Infinity, -Infinity, NaN], "s": "NaN \"Infinity\" \\", "b": 1}"#;
        assert_eq!(
            without_python_literals(text).unwrap(),
            r#"{"a": [0.0, null, null, null], "s": "NaN \"Infinity\" \\", "b": 1}"#
        );
        assert_eq!(without_python_literals(r#"{"s": "Infinity"}"#), None);
    }
}
