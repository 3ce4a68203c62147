//! Transformer models: [`ModelConfig`] read from Hugging Face `config.json` files (the
//! bundled `data/models/<id>.json` or any user file), exact parameter counts, and the
//! layer graph ([`graph`]) that turns a model and a step shape into operator costs.

pub mod graph;

use crate::dtype::Format;
use crate::error::{Error, Result};
use crate::ops::{Activation, NormKind};
use serde::Serialize;
use serde_json::{Map, Value};
use std::path::Path;
use std::sync::OnceLock;

/// Largest parameter count accepted from a config (10^15): keeps every derived count
/// exact in `u64` and `f64`.
pub const MAX_PARAMS: u64 = 1_000_000_000_000_000;

/// Normalized architecture of a decoder-only transformer.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct ModelConfig {
    /// ridgeline id (`llama-2-7b`), or the file stem for user files.
    pub id: String,
    /// Human name.
    pub name: String,
    /// Where the config comes from.
    pub source: String,
    /// HF `model_type` (llama, mistral, mixtral, qwen2, mpt, gpt2, gpt_neox, ...).
    pub family: String,
    /// Model width (`hidden_size`, `d_model`, `n_embd`).
    pub hidden: u64,
    /// Decoder layers.
    pub layers: u64,
    /// Query heads.
    pub heads: u64,
    /// Key/value heads (GQA/MQA when fewer than `heads`).
    pub kv_heads: u64,
    /// Dimension per head.
    pub head_dim: u64,
    /// MLP inner width (per expert for MoE).
    pub intermediate: u64,
    /// Vocabulary size.
    pub vocab: u64,
    /// Longest context the model was trained for.
    pub max_context: u64,
    /// Gated MLP (SwiGLU: gate, up, down) vs plain (up, down).
    pub gated_mlp: bool,
    /// MLP activation.
    #[serde(skip)]
    pub activation: Activation,
    /// Normalization.
    #[serde(skip)]
    pub norm: NormKind,
    /// Bias on q, k, v projections.
    pub qkv_bias: bool,
    /// Bias on the attention output projection.
    pub o_bias: bool,
    /// Biases on the MLP projections.
    pub mlp_bias: bool,
    /// lm_head shares the token embedding matrix.
    pub tied_embeddings: bool,
    /// A learned absolute position-embedding table of `max_context × hidden`.
    pub learned_positions: bool,
    /// Rotary position embedding applied to q and k.
    pub rope: bool,
    /// Experts per MoE layer (1 for a dense model).
    pub experts: u64,
    /// Experts each token is routed to.
    pub experts_per_token: u64,
    /// Native weight format (from `torch_dtype`; bf16 when absent).
    pub native_format: Format,
}

/// Parameter counts by part.
#[derive(Debug, Clone, Copy, PartialEq, Serialize)]
pub struct ParamCounts {
    /// Token embedding (and learned positions).
    pub embedding: u64,
    /// Attention projections (with biases), all layers.
    pub attention: u64,
    /// MLP / expert weights (with biases) and routers, all layers.
    pub mlp: u64,
    /// Norm scales (and biases).
    pub norms: u64,
    /// Untied lm_head (0 when tied).
    pub lm_head: u64,
    /// Everything.
    pub total: u64,
    /// Used per token (MoE: only `experts_per_token` experts).
    pub active: u64,
}

fn get<'a>(m: &'a Map<String, Value>, keys: &[&str]) -> Option<&'a Value> {
    keys.iter().find_map(|k| m.get(*k).filter(|v| !v.is_null()))
}

fn uint(m: &Map<String, Value>, keys: &[&str], src: &str) -> Result<Option<u64>> {
    match get(m, keys) {
        None => Ok(None),
        Some(v) => {
            let f = v.as_f64().ok_or_else(|| Error::Parse {
                source_name: src.into(),
                message: format!("field {}: expected a number, got {v}", keys[0]),
            })?;
            if !(f.is_finite() && f >= 1.0 && f.fract() == 0.0 && f <= 1e15) {
                return Err(Error::Parse {
                    source_name: src.into(),
                    message: format!(
                        "field {}: must be a whole number >= 1 (and <= 1e15), got {v}",
                        keys[0]
                    ),
                });
            }
            Ok(Some(f as u64))
        }
    }
}

fn req(m: &Map<String, Value>, keys: &[&str], src: &str) -> Result<u64> {
    uint(m, keys, src)?.ok_or_else(|| Error::Parse {
        source_name: src.into(),
        message: format!(
            "missing field {} (also accepted: {})",
            keys[0],
            keys[1..].join(", ")
        ),
    })
}

fn boolean(m: &Map<String, Value>, keys: &[&str], default: bool, src: &str) -> Result<bool> {
    match get(m, keys) {
        None => Ok(default),
        Some(Value::Bool(b)) => Ok(*b),
        Some(v) => Err(Error::Parse {
            source_name: src.into(),
            message: format!("field {}: expected true or false, got {v}", keys[0]),
        }),
    }
}

fn string<'a>(m: &'a Map<String, Value>, keys: &[&str]) -> Option<&'a str> {
    get(m, keys).and_then(Value::as_str)
}

impl ModelConfig {
    /// Parses a Hugging Face `config.json` document. `fallback_id` names the model when
    /// the file has no `ridgeline_id`; `src` names the file in errors.
    ///
    /// Field mapping: width `hidden_size | d_model | n_embd`; layers `num_hidden_layers |
    /// n_layers | n_layer`; heads `num_attention_heads | n_heads | n_head`; KV heads
    /// `num_key_value_heads` (or `multi_query`/`attn_config.kv_n_heads`, default = heads);
    /// MLP width `intermediate_size | n_inner | ffn_dim` (default `expansion_ratio` or 4
    /// times width); vocabulary `vocab_size`; experts `num_local_experts | num_experts`,
    /// `num_experts_per_tok`. Gated MLP for llama/mistral/mixtral/qwen2-style
    /// (`model_type` or SiLU activation), plain GELU MLP for gpt2/gpt_neox/mpt/falcon/opt.
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
        Self::from_map(&m, fallback_id, src)
    }

    fn from_map(m: &Map<String, Value>, fallback_id: &str, src: &str) -> Result<ModelConfig> {
        let family = string(m, &["model_type"])
            .unwrap_or("llama")
            .to_ascii_lowercase();
        let empty = Map::new();
        let attn_cfg = m
            .get("attn_config")
            .and_then(Value::as_object)
            .unwrap_or(&empty);
        let hidden = req(m, &["hidden_size", "d_model", "n_embd", "dim"], src)?;
        let layers = req(
            m,
            &["num_hidden_layers", "n_layers", "n_layer", "num_layers"],
            src,
        )?;
        let heads = req(m, &["num_attention_heads", "n_heads", "n_head"], src)?;
        let multi_query = boolean(m, &["multi_query"], false, src)?;
        let kv_heads = match uint(
            m,
            &["num_key_value_heads", "n_head_kv", "num_kv_heads"],
            src,
        )? {
            Some(k) => k,
            None => match uint(attn_cfg, &["kv_n_heads"], src)? {
                Some(k) => k,
                None if multi_query => 1,
                None => heads,
            },
        };
        let head_dim = match uint(m, &["head_dim"], src)? {
            Some(d) => d,
            None => {
                if hidden % heads != 0 {
                    return Err(Error::Parse {
                        source_name: src.into(),
                        message: format!(
                            "field hidden_size: {hidden} is not divisible by num_attention_heads {heads} (give head_dim explicitly)"
                        ),
                    });
                }
                hidden / heads
            }
        };
        if kv_heads > heads {
            return Err(Error::Parse {
                source_name: src.into(),
                message: format!(
                    "field num_key_value_heads: {kv_heads} is more than num_attention_heads {heads}"
                ),
            });
        }
        if heads % kv_heads != 0 {
            return Err(Error::Parse {
                source_name: src.into(),
                message: format!(
                    "field num_key_value_heads: {kv_heads} does not divide num_attention_heads {heads}"
                ),
            });
        }
        let plain_family = matches!(
            family.as_str(),
            "gpt2"
                | "gpt_neox"
                | "gptj"
                | "mpt"
                | "falcon"
                | "opt"
                | "bloom"
                | "gpt_bigcode"
                | "phi"
        );
        let act_name = string(
            m,
            &["hidden_act", "activation_function", "hidden_activation"],
        )
        .unwrap_or(if plain_family { "gelu" } else { "silu" })
        .to_ascii_lowercase();
        let activation = if act_name.contains("silu") || act_name.contains("swish") {
            Activation::Silu
        } else if act_name.contains("relu") {
            Activation::Relu
        } else {
            Activation::Gelu
        };
        let gated_mlp = !plain_family;
        let expansion = m
            .get("expansion_ratio")
            .and_then(Value::as_f64)
            .unwrap_or(4.0);
        let intermediate = match uint(
            m,
            &["intermediate_size", "n_inner", "ffn_dim", "ffn_hidden_size"],
            src,
        )? {
            Some(i) => i,
            None => (hidden as f64 * expansion).round() as u64,
        };
        let vocab = req(m, &["vocab_size", "padded_vocab_size"], src)?;
        let max_context = uint(
            m,
            &[
                "max_position_embeddings",
                "max_seq_len",
                "n_positions",
                "n_ctx",
                "seq_length",
            ],
            src,
        )?
        .unwrap_or(2048);
        let experts = uint(
            m,
            &["num_local_experts", "num_experts", "moe_num_experts"],
            src,
        )?
        .unwrap_or(1);
        let experts_per_token = uint(m, &["num_experts_per_tok", "moe_top_k"], src)?.unwrap_or(1);
        if experts_per_token > experts {
            return Err(Error::Parse {
                source_name: src.into(),
                message: format!(
                    "field num_experts_per_tok: {experts_per_token} is more than num_local_experts {experts}"
                ),
            });
        }
        let no_bias = boolean(m, &["no_bias"], false, src)?;
        let (qkv_bias, o_bias, mlp_bias, norm) = match family.as_str() {
            "gpt2" | "gpt_neox" | "gptj" | "opt" | "bloom" | "gpt_bigcode" | "phi" => {
                (true, true, true, NormKind::Layer)
            }
            "mpt" if no_bias => (false, false, false, NormKind::LayerNoBias),
            "mpt" => (true, true, true, NormKind::Layer),
            "qwen2" | "qwen2_moe" => (true, false, false, NormKind::Rms),
            _ => {
                let ab = boolean(m, &["attention_bias", "bias"], false, src)?;
                let mb = boolean(m, &["mlp_bias"], false, src)?;
                (ab, ab, mb, NormKind::Rms)
            }
        };
        let tied_default = matches!(
            family.as_str(),
            "gpt2" | "mpt" | "gpt_bigcode" | "gptj" | "opt" | "bloom"
        );
        let tied_embeddings = boolean(m, &["tie_word_embeddings"], tied_default, src)?;
        let alibi =
            boolean(attn_cfg, &["alibi"], false, src)? || boolean(m, &["alibi"], false, src)?;
        let learned_positions = match family.as_str() {
            "gpt2" | "opt" | "gpt_bigcode" => true,
            "mpt" => !alibi && boolean(m, &["learned_pos_emb"], true, src)?,
            _ => false,
        };
        let rope = !learned_positions && !alibi;
        let native_format = match string(m, &["torch_dtype", "dtype"])
            .map(str::to_ascii_lowercase)
            .as_deref()
        {
            Some("float16") | Some("fp16") => Format::Fp16,
            Some("float32") | Some("fp32") => Format::Fp32,
            _ => Format::Bf16,
        };
        let id = string(m, &["ridgeline_id"])
            .unwrap_or(fallback_id)
            .to_string();
        let name = string(m, &["ridgeline_name", "_name_or_path"])
            .unwrap_or(&id)
            .to_string();
        let cfg = ModelConfig {
            id,
            name,
            source: string(m, &["source"]).unwrap_or(src).to_string(),
            family,
            hidden,
            layers,
            heads,
            kv_heads,
            head_dim,
            intermediate,
            vocab,
            max_context,
            gated_mlp,
            activation,
            norm,
            qkv_bias,
            o_bias,
            mlp_bias,
            tied_embeddings,
            learned_positions,
            rope,
            experts,
            experts_per_token,
            native_format,
        };
        match cfg.try_params() {
            Some(p) if p.total <= MAX_PARAMS => Ok(cfg),
            _ => Err(Error::Parse {
                source_name: src.into(),
                message: format!(
                    "the sizes (hidden_size {hidden}, num_hidden_layers {layers}, intermediate_size {intermediate}, vocab_size {vocab}, experts {experts}) give more than {MAX_PARAMS} parameters"
                ),
            }),
        }
    }

    /// Reads a `config.json` file.
    pub fn from_file(path: &Path) -> Result<ModelConfig> {
        let text = crate::files::read_text(path)?;
        let stem = path
            .parent()
            .and_then(|p| p.file_name())
            .filter(|_| path.file_name().is_some_and(|f| f == "config.json"))
            .or_else(|| path.file_stem())
            .map(|s| s.to_string_lossy().to_string())
            .unwrap_or_else(|| "custom".into());
        Self::from_json_str(&text, &stem, &path.display().to_string())
    }

    /// Is this a mixture-of-experts model?
    pub fn is_moe(&self) -> bool {
        self.experts > 1
    }

    /// Attention width `heads · head_dim`.
    pub fn q_width(&self) -> u64 {
        self.heads * self.head_dim
    }

    /// K (or V) width `kv_heads · head_dim`.
    pub fn kv_width(&self) -> u64 {
        self.kv_heads * self.head_dim
    }

    /// Exact parameter counts.
    ///
    /// Per layer: q `h·H·d`, k and v `h·K·d` each, o `H·d·h` (+ biases where the family
    /// has them); MLP `3·h·i` gated or `2·h·i` plain per expert (+ biases), router
    /// `h·E` for MoE; two norms of `h` (×2 with LayerNorm bias). Plus embedding `V·h`,
    /// learned positions `P·h`, final norm, and an untied lm_head `V·h`.
    pub fn params(&self) -> ParamCounts {
        // Parsing rejects configs whose count overflows (see `try_params`).
        self.try_params().unwrap_or(ParamCounts {
            embedding: 0,
            attention: 0,
            mlp: 0,
            norms: 0,
            lm_head: 0,
            total: u64::MAX,
            active: u64::MAX,
        })
    }

    /// [`ModelConfig::params`] with checked arithmetic: `None` when a count overflows.
    pub fn try_params(&self) -> Option<ParamCounts> {
        let mul = |a: u64, b: u64| a.checked_mul(b);
        let (h, v) = (self.hidden, self.vocab);
        let norm_params = match self.norm {
            NormKind::Layer => mul(2, h)?,
            _ => h,
        };
        let q = mul(self.heads, self.head_dim)?;
        let kv = mul(self.kv_heads, self.head_dim)?;
        let mut attn = mul(h, q)?
            .checked_add(mul(mul(2, h)?, kv)?)?
            .checked_add(mul(q, h)?)?;
        if self.qkv_bias {
            attn = attn.checked_add(q)?.checked_add(mul(2, kv)?)?;
        }
        if self.o_bias {
            attn = attn.checked_add(h)?;
        }
        let expert = self.try_expert_params()?;
        let router = if self.is_moe() {
            mul(h, self.experts)?
        } else {
            0
        };
        let mlp_layer = mul(expert, self.experts)?.checked_add(router)?;
        let positions = if self.learned_positions {
            mul(self.max_context, h)?
        } else {
            0
        };
        let embedding = mul(v, h)?.checked_add(positions)?;
        let lm_head = if self.tied_embeddings { 0 } else { mul(v, h)? };
        let norms = mul(mul(2, self.layers)?.checked_add(1)?, norm_params)?;
        let attention = mul(self.layers, attn)?;
        let mlp = mul(self.layers, mlp_layer)?;
        let total = embedding
            .checked_add(attention)?
            .checked_add(mlp)?
            .checked_add(norms)?
            .checked_add(lm_head)?;
        let unused = mul(
            mul(self.layers, expert)?,
            self.experts - self.experts_per_token,
        )?;
        Some(ParamCounts {
            embedding,
            attention,
            mlp,
            norms,
            lm_head,
            total,
            active: total - unused,
        })
    }

    /// Parameters of one MLP (one expert for MoE), biases included.
    pub fn expert_params(&self) -> u64 {
        self.try_expert_params().unwrap_or(u64::MAX)
    }

    fn try_expert_params(&self) -> Option<u64> {
        let (h, i) = (self.hidden, self.intermediate);
        let hi = h.checked_mul(i)?;
        let mut p = hi.checked_mul(if self.gated_mlp { 3 } else { 2 })?;
        if self.mlp_bias {
            p = p.checked_add(if self.gated_mlp { 2 * i + h } else { i + h })?;
        }
        Some(p)
    }
}

/// The bundled models, looked up by id.
#[derive(Debug, Clone, Default)]
pub struct ModelDb {
    models: Vec<ModelConfig>,
}

impl ModelDb {
    /// The built-in models (parsed once from the embedded `data/models/*.json`).
    pub fn builtin() -> Result<&'static ModelDb> {
        static DB: OnceLock<Result<ModelDb>> = OnceLock::new();
        DB.get_or_init(|| {
            let mut models = Vec::new();
            for (name, text) in crate::hardware::MODEL_FILES {
                let stem = name.trim_end_matches(".json");
                let m = ModelConfig::from_json_str(text, stem, &format!("data/models/{name}"))?;
                if m.id != stem {
                    return Err(Error::Parse {
                        source_name: format!("data/models/{name}"),
                        message: format!("ridgeline_id '{}' does not match the file name", m.id),
                    });
                }
                models.push(m);
            }
            models.sort_by(|a, b| a.id.cmp(&b.id));
            Ok(ModelDb { models })
        })
        .as_ref()
        .map_err(Clone::clone)
    }

    /// All models, sorted by id.
    pub fn models(&self) -> &[ModelConfig] {
        &self.models
    }

    /// A bundled model by id (case-insensitive), or a path to a `config.json` when the
    /// name ends in `.json` or names an existing file. Unknown ids suggest the three
    /// closest.
    pub fn resolve(&self, name: &str) -> Result<ModelConfig> {
        let q = name.trim().to_ascii_lowercase();
        if let Some(m) = self.models.iter().find(|m| m.id == q) {
            return Ok(m.clone());
        }
        let path = Path::new(name);
        if name.ends_with(".json") || path.is_file() {
            return ModelConfig::from_file(path);
        }
        Err(Error::unknown(
            "model id",
            name,
            self.models.iter().map(|m| m.id.as_str()),
        ))
    }
}

/// One row of `ridgeline models --json`.
#[derive(Debug, Clone, Serialize)]
pub struct ModelSummary {
    /// Model id.
    pub id: String,
    /// Human name.
    pub name: String,
    /// Total parameters.
    pub params: u64,
    /// Parameters used per token.
    pub active_params: u64,
    /// Layers.
    pub layers: u64,
    /// Width.
    pub hidden: u64,
    /// Query heads.
    pub heads: u64,
    /// KV heads.
    pub kv_heads: u64,
    /// Trained context.
    pub max_context: u64,
    /// Native weight format.
    pub native_format: String,
    /// Config source.
    pub source: String,
}

impl ModelConfig {
    /// The listing row of this model (`ridgeline models --json`).
    pub fn summary(&self) -> ModelSummary {
        let m = self;
        let p = m.params();
        ModelSummary {
            id: m.id.clone(),
            name: m.name.clone(),
            params: p.total,
            active_params: p.active,
            layers: m.layers,
            hidden: m.hidden,
            heads: m.heads,
            kv_heads: m.kv_heads,
            max_context: m.max_context,
            native_format: m.native_format.name(),
            source: m.source.clone(),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn model(id: &str) -> ModelConfig {
        ModelDb::builtin().unwrap().resolve(id).unwrap()
    }

    #[test]
    fn llama2_7b_param_count_is_exact() {
        // embed 32000·4096 = 131,072,000; per layer 4·4096² + 3·4096·11008 + 2·4096
        // = 202,383,360; ×32 = 6,476,267,520; + final norm 4096 + lm_head 131,072,000
        // = 6,738,415,616 (HF safetensors count).
        assert_eq!(model("llama-2-7b").params().total, 6_738_415_616);
    }

    #[test]
    fn missing_and_bad_fields_are_named() {
        let e =
            ModelConfig::from_json_str(r#"{"hidden_size": 4096}"#, "x", "cfg.json").unwrap_err();
        assert!(e.to_string().contains("num_hidden_layers"), "{e}");
        let e = ModelConfig::from_json_str(
            r#"{"hidden_size": 4096, "num_hidden_layers": 2, "num_attention_heads": 0, "vocab_size": 10}"#,
            "x",
            "cfg.json",
        )
        .unwrap_err();
        assert!(e.to_string().contains("num_attention_heads"), "{e}");
        let e = ModelConfig::from_json_str(
            r#"{"hidden_size": 4097, "num_hidden_layers": 2, "num_attention_heads": 32, "vocab_size": 10}"#,
            "x",
            "cfg.json",
        )
        .unwrap_err();
        assert!(e.to_string().contains("not divisible"), "{e}");
        assert!(ModelConfig::from_json_str("{\"hidden_size\": 4", "x", "c").is_err());
        assert!(ModelConfig::from_json_str("[]", "x", "c").is_err());
    }

    #[test]
    fn unknown_model_suggests() {
        let e = ModelDb::builtin()
            .unwrap()
            .resolve("llama-2-7")
            .unwrap_err();
        assert!(e.to_string().contains("llama-2-7b"), "{e}");
    }
}
