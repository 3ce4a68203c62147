//! Transformer models: [`ModelConfig`] read from Hugging Face `config.json` files (the
//! bundled `data/models/<id>.json` or any user file), exact parameter counts, and the
//! layer graph ([`graph`]) that turns a model and a step shape into operator costs.

pub mod graph;
mod hf;

use crate::dtype::Format;
use crate::error::{Error, Result};
use crate::ops::{Activation, NormKind};
use serde::Serialize;
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
    /// What reading the config approximated (an unknown `model_type` read as a
    /// Llama-style decoder, ...): carried into every prediction's notes.
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub approximations: Vec<String>,
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

impl ModelConfig {
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
        if q.is_empty() {
            return Err(Error::invalid(
                "model",
                "is empty; give a model id (see `ridgeline models`) or a config.json path",
            ));
        }
        if let Some(m) = self.models.iter().find(|m| m.id == q) {
            return Ok(m.clone());
        }
        let path = Path::new(name);
        if path.is_dir() {
            // a downloaded model folder: its config.json
            return ModelConfig::from_file(&path.join("config.json"));
        }
        if name.ends_with(".json") || path.exists() {
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
