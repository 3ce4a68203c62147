//! Reading Hugging Face `config.json` files into a [`ModelConfig`]: field names and
//! their aliases across model families, defaults by family, and the checks that name
//! the offending field.

use super::{MAX_PARAMS, ModelConfig};
use crate::dtype::Format;
use crate::error::{Error, Result};
use crate::ops::{Activation, NormKind};
use serde_json::{Map, Value};
use std::path::Path;

/// One config document: its fields and the name of the file in errors.
struct Fields<'a> {
    m: &'a Map<String, Value>,
    src: &'a str,
}

impl<'a> Fields<'a> {
    fn get(&self, keys: &[&str]) -> Option<&'a Value> {
        keys.iter()
            .find_map(|k| self.m.get(*k).filter(|v| !v.is_null()))
    }

    fn error(&self, message: String) -> Error {
        Error::Parse {
            source_name: self.src.into(),
            message,
        }
    }

    /// A whole number >= 1 under the first of `keys` present.
    fn uint(&self, keys: &[&str]) -> Result<Option<u64>> {
        let Some(v) = self.get(keys) else {
            return Ok(None);
        };
        let f = v
            .as_f64()
            .ok_or_else(|| self.error(format!("field {}: expected a number, got {v}", keys[0])))?;
        if !(f.is_finite() && f >= 1.0 && f.fract() == 0.0 && f <= 1e15) {
            return Err(self.error(format!(
                "field {}: must be a whole number >= 1 (and <= 1e15), got {v}",
                keys[0]
            )));
        }
        Ok(Some(f as u64))
    }

    fn req(&self, keys: &[&str]) -> Result<u64> {
        self.uint(keys)?.ok_or_else(|| {
            self.error(format!(
                "missing field {} (also accepted: {})",
                keys[0],
                keys[1..].join(", ")
            ))
        })
    }

    fn boolean(&self, keys: &[&str], default: bool) -> Result<bool> {
        match self.get(keys) {
            None => Ok(default),
            Some(Value::Bool(b)) => Ok(*b),
            Some(v) => Err(self.error(format!(
                "field {}: expected true or false, got {v}",
                keys[0]
            ))),
        }
    }

    fn string(&self, keys: &[&str]) -> Option<&'a str> {
        self.get(keys).and_then(Value::as_str)
    }

    /// The nested object under `key` (empty when absent).
    fn nested(&self, key: &str) -> Fields<'a> {
        static EMPTY: std::sync::OnceLock<Map<String, Value>> = std::sync::OnceLock::new();
        Fields {
            m: self
                .m
                .get(key)
                .and_then(Value::as_object)
                .unwrap_or_else(|| EMPTY.get_or_init(Map::new)),
            src: self.src,
        }
    }
}

/// Families with a plain (ungated) GELU MLP and learned or ALiBi positions.
fn is_plain_family(family: &str) -> bool {
    matches!(
        family,
        "gpt2" | "gpt_neox" | "gptj" | "mpt" | "falcon" | "opt" | "bloom" | "gpt_bigcode" | "phi"
    )
}

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
    let head_dim = match f.uint(&["head_dim"])? {
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
        .string(&["hidden_act", "activation_function", "hidden_activation"])
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

/// MLP width (one expert), experts and experts per token.
fn mlp_dims(f: &Fields, hidden: u64, plain: bool) -> Result<(u64, u64, u64)> {
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
        .uint(&["num_local_experts", "num_experts", "moe_num_experts"])?
        .unwrap_or(1);
    let per_token = f.uint(&["num_experts_per_tok", "moe_top_k"])?.unwrap_or(1);
    if per_token > experts {
        return Err(f.error(format!(
            "field num_experts_per_tok: {per_token} is more than num_local_experts {experts}"
        )));
    }
    Ok((intermediate, experts, per_token))
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
        "gpt2" | "mpt" | "gpt_bigcode" | "gptj" | "opt" | "bloom"
    );
    let tied = f.boolean(&["tie_word_embeddings"], tied_default)?;
    let alibi =
        f.nested("attn_config").boolean(&["alibi"], false)? || f.boolean(&["alibi"], false)?;
    let learned = match family {
        "gpt2" | "opt" | "gpt_bigcode" => true,
        "mpt" => !alibi && f.boolean(&["learned_pos_emb"], true)?,
        _ => false,
    };
    Ok((tied, learned, !learned && !alibi))
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
const KNOWN_FAMILIES: [&str; 15] = [
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
];

/// Config fields of architectures ridgeline does not model yet: reading such a config
/// as a plain decoder would give wrong memory and speed without a word.
const UNMODELLED: [(&str, &str); 6] = [
    (
        "kv_lora_rank",
        "multi-head latent attention (DeepSeek-V2/V3 style)",
    ),
    (
        "q_lora_rank",
        "multi-head latent attention (DeepSeek-V2/V3 style)",
    ),
    ("n_shared_experts", "MoE shared experts"),
    ("layer_types", "layers of several kinds"),
    ("linear_num_value_heads", "linear-attention layers"),
    ("ssm_cfg", "state-space layers"),
];

/// Refuses configs whose architecture is not modelled; notes what is approximated.
fn check_architecture(f: &Fields, family: &str) -> Result<Vec<String>> {
    for (key, what) in UNMODELLED {
        if f.get(&[key]).is_some() {
            return Err(f.error(format!(
                "field {key}: {what} is not modelled; this config cannot be read as a plain decoder"
            )));
        }
    }
    let window = f.uint(&["sliding_window"])?;
    let uses_window = f.boolean(&["use_sliding_window"], true)?;
    let context = f.uint(&["max_position_embeddings"])?.unwrap_or(u64::MAX);
    let mut notes = Vec::new();
    if let Some(w) = window.filter(|&w| uses_window && w < context) {
        notes.push(format!(
            "sliding-window attention ({w} tokens) is counted over the whole context: KV cache and attention beyond {w} tokens are overestimated"
        ));
    }
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
        let v: Value = serde_json::from_str(text).map_err(|e| Error::Parse {
            source_name: src.into(),
            message: format!("not valid JSON: {e}"),
        })?;
        let Value::Object(m) = v else {
            return Err(Error::Parse {
                source_name: src.into(),
                message: "expected a JSON object (a Hugging Face config.json)".into(),
            });
        };
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

fn from_fields(f: &Fields, fallback_id: &str) -> Result<ModelConfig> {
    let family = f
        .string(&["model_type"])
        .unwrap_or("llama")
        .to_ascii_lowercase();
    let plain = is_plain_family(&family);
    let d = attention_dims(f)?;
    let approximations = check_architecture(f, &family)?;
    let (intermediate, experts, experts_per_token) = mlp_dims(f, d.hidden, plain)?;
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
        gated_mlp: !plain,
        native_format: native_format(f)?,
        approximations,
        id,
        name,
        family,
        hidden: d.hidden,
        layers: d.layers,
        heads: d.heads,
        kv_heads: d.kv_heads,
        head_dim: d.head_dim,
        intermediate,
        vocab,
        max_context,
        norm,
        qkv_bias,
        o_bias,
        mlp_bias,
        tied_embeddings,
        learned_positions,
        rope,
        experts,
        experts_per_token,
    };
    match cfg.try_params() {
        Some(p) if p.total <= MAX_PARAMS => Ok(cfg),
        _ => Err(f.error(format!(
            "the sizes (hidden_size {}, num_hidden_layers {}, intermediate_size {intermediate}, vocab_size {vocab}, experts {experts}) give more than {MAX_PARAMS} parameters",
            d.hidden, d.layers
        ))),
    }
}
