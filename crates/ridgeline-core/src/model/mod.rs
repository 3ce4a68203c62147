//! Transformer models: [`ModelConfig`] read from Hugging Face `config.json` files (the
//! bundled `data/models/<id>.json` or any user file), exact parameter counts, and the
//! layer graph ([`graph`]) that turns a model and a step shape into operator costs.

mod fields;
pub mod graph;
mod hf;
mod kinds;
mod ssm;

pub use ssm::{MambaDims, SsmDims};

use crate::dtype::Format;
use crate::error::{Error, Result};
use crate::ops::{Activation, NormKind};
use serde::Serialize;
use std::path::Path;
use std::sync::OnceLock;

/// Largest parameter count accepted from a config (10^15): keeps every derived count
/// exact in `u64` and `f64`.
pub(crate) const MAX_PARAMS: u64 = 1_000_000_000_000_000;

crate::named_enum! {
    /// What mixes information across tokens in a layer.
    pub enum Mixer: "layer mixer" {
        /// Softmax attention (multi-head, grouped-query or multi-query), over the whole
        /// context or a sliding window.
        Attention = "attention",
        /// Multi-head latent attention (DeepSeek-V2/V3, Kimi K2): keys and values cached
        /// as one compressed latent per token.
        Mla = "mla",
        /// Linear attention with a fixed-size recurrent state (Gated DeltaNet).
        Linear = "linear",
        /// A Mamba-2 state-space block (Nemotron-H): a fixed-size state per sequence,
        /// no KV cache.
        Ssm = "ssm",
        /// A Mamba-1 selective state-space block (Jamba): a fixed-size state per
        /// sequence, no KV cache.
        Mamba1 = "mamba1",
        /// No token mixer: a block that is a feed-forward only (Nemotron-H's MLP layers).
        None = "none",
    }
}

crate::named_enum! {
    /// The feed-forward of a layer.
    pub enum Ffn: "feed-forward" {
        /// The dense MLP.
        Dense = "dense",
        /// A mixture of experts (with shared experts where the model has them).
        Moe = "moe",
        /// No feed-forward: a block that is a token mixer only (Nemotron-H's Mamba-2 and
        /// attention layers).
        None = "none",
    }
}

/// One kind of decoder layer: its token mixer and feed-forward (a layer has at least
/// one of them).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize)]
pub struct LayerKind {
    /// Attention, latent or linear attention, a state-space block, or none.
    pub mixer: Mixer,
    /// Sliding window (or attention chunk) in tokens: each query sees at most this many
    /// keys, and the cache keeps no more (`None`: the whole context).
    pub window: Option<u64>,
    /// The window is a chunk (Llama 4's chunked attention): a query sees the keys of its
    /// own chunk of `window` positions only, `((p - 1) mod window) + 1` at position `p`,
    /// instead of the last `window`.
    #[serde(skip_serializing_if = "std::ops::Not::not")]
    pub chunked: bool,
    /// Rotary position embedding on this layer (Llama 4's every fourth layer has none).
    pub rope: bool,
    /// Dense MLP, mixture of experts, or none.
    pub ffn: Ffn,
}

impl LayerKind {
    /// Whether the feed-forward is a mixture of experts.
    pub fn is_moe(&self) -> bool {
        self.ffn == Ffn::Moe
    }
}

/// Multi-head latent attention dimensions (DeepSeek-V2/V3 `config.json`).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
pub struct MlaDims {
    /// Rank of the query compression (`q_lora_rank`; `None`: a plain q projection).
    pub q_lora_rank: Option<u64>,
    /// Rank of the key/value latent (`kv_lora_rank`), cached per token.
    pub kv_lora_rank: u64,
    /// Per-head query/key dimension without rotary embedding (`qk_nope_head_dim`).
    pub qk_nope_head_dim: u64,
    /// Per-head (query) and shared (key) rotary dimension (`qk_rope_head_dim`), cached.
    pub qk_rope_head_dim: u64,
    /// Per-head value dimension (`v_head_dim`).
    pub v_head_dim: u64,
}

impl MlaDims {
    /// Elements cached per token per layer: the latent and the shared rotary key.
    pub(crate) fn cache_elems(&self) -> u64 {
        self.kv_lora_rank + self.qk_rope_head_dim
    }

    /// Query/key dimension per head (`nope + rope`).
    pub(crate) fn qk_head_dim(&self) -> u64 {
        self.qk_nope_head_dim + self.qk_rope_head_dim
    }
}

/// Linear-attention (Gated DeltaNet) dimensions (Qwen3-Next `config.json`).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
pub struct LinearDims {
    /// Key (and query) heads (`linear_num_key_heads`).
    pub key_heads: u64,
    /// Value heads (`linear_num_value_heads`), each with a `key_dim x value_dim` state.
    pub value_heads: u64,
    /// Key head dimension (`linear_key_head_dim`).
    pub key_dim: u64,
    /// Value head dimension (`linear_value_head_dim`).
    pub value_dim: u64,
    /// Causal convolution width (`linear_conv_kernel_dim`).
    pub conv_kernel: u64,
}

impl LinearDims {
    /// Channels of the q, k, v projections (convolved).
    pub(crate) fn qkv_channels(&self) -> u64 {
        2 * self.key_heads * self.key_dim + self.value_heads * self.value_dim
    }

    /// State elements per sequence per layer: the recurrent matrices (kept in fp32) and
    /// the convolution's last `conv_kernel - 1` inputs.
    pub(crate) fn state_elems(&self) -> (u64, u64) {
        (
            self.value_heads * self.key_dim * self.value_dim,
            (self.conv_kernel.saturating_sub(1)) * self.qkv_channels(),
        )
    }
}

/// Normalized architecture of a decoder-only transformer.
#[derive(Debug, Clone, PartialEq, Serialize)]
#[non_exhaustive]
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
    /// Routed experts per MoE layer (1 for a dense model).
    pub experts: u64,
    /// Experts each token is routed to.
    pub experts_per_token: u64,
    /// Group-limited routing (`n_group`, `topk_group`): each token's experts come from a
    /// few groups of experts; `None` where any expert can be picked.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub expert_groups: Option<ExpertGroups>,
    /// Inner width of one routed expert (`moe_intermediate_size`; `intermediate` for
    /// Mixtral-style models whose experts are full MLPs).
    pub expert_intermediate: u64,
    /// Shared experts every token passes through (DeepSeek, Llama 4, Qwen3-Next).
    pub shared_experts: u64,
    /// Inner width of all shared experts together.
    pub shared_intermediate: u64,
    /// The kind of each layer, in order: `kinds[layer_kinds[i]]`.
    pub layer_kinds: Vec<u8>,
    /// The distinct layer kinds.
    pub kinds: Vec<LayerKind>,
    /// Latent-attention dimensions (layers whose mixer is [`Mixer::Mla`]).
    pub mla: Option<MlaDims>,
    /// Linear-attention dimensions (layers whose mixer is [`Mixer::Linear`]).
    pub linear: Option<LinearDims>,
    /// State-space (Mamba-2) dimensions (layers whose mixer is [`Mixer::Ssm`]).
    pub ssm: Option<SsmDims>,
    /// Mamba-1 dimensions (layers whose mixer is [`Mixer::Mamba1`]).
    pub mamba: Option<MambaDims>,
    /// RMSNorm on each head's queries and keys (Qwen3, Gemma 3).
    pub qk_norm: bool,
    /// Norms per layer: 2 (before attention and MLP), 4 with Gemma's extra norms after
    /// each, 1 where each layer is a single block (Nemotron-H).
    pub norms_per_layer: u64,
    /// A learned per-head attention sink logit (gpt-oss).
    pub attention_sinks: bool,
    /// Attention output gated by a second query-sized projection (Qwen3-Next).
    pub attention_gate: bool,
    /// Native format of the routed experts when it differs from `native_format`
    /// (gpt-oss ships MXFP4 experts and bf16 attention).
    pub native_expert_format: Option<Format>,
    /// Multi-token-prediction layers shipped beside the model (DeepSeek-V3's MTP
    /// module): not part of the forward pass, a draft for speculative decoding.
    pub mtp_layers: u64,
    /// Native weight format (from `torch_dtype`; bf16 when absent).
    pub native_format: Format,
    /// What reading the config approximated (an unknown `model_type` read as a
    /// Llama-style decoder, ...): carried into every prediction's notes.
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub approximations: Vec<String>,
}

/// Group-limited routing: the routed experts split into `groups` equal groups, and each
/// token picks its experts from the `per_token` best groups (DeepSeek-V3: 8 and 4, so
/// that with one group per node a token reaches at most 4 nodes; arXiv 2412.19437,
/// section 2.1.2).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
pub struct ExpertGroups {
    /// Groups of routed experts (`n_group`).
    pub groups: u64,
    /// Groups each token picks from (`topk_group`).
    pub per_token: u64,
}

/// Parameter counts by part.
#[derive(Debug, Clone, Copy, PartialEq, Serialize)]
#[non_exhaustive]
pub struct ParamCounts {
    /// Token embedding (and learned positions).
    pub embedding: u64,
    /// Token-mixer weights (attention projections with biases, linear-attention and
    /// state-space blocks), all layers.
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
    /// The multi-token-prediction modules the checkpoint ships beside the model
    /// (DeepSeek's `num_nextn_predict_layers`), not in `total`: each is one transformer
    /// block like the model's last layer, a projection of the embedding and the hidden
    /// state (`2 · hidden` to `hidden`), three norms, and the embedding table and output
    /// head the checkpoint stores again for it. They serve as the default speculative
    /// draft; `total + mtp` is the checkpoint's size in parameters.
    pub mtp: u64,
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

    /// Exact parameter counts, summed over the layers by their kind.
    ///
    /// Softmax attention per layer: q `h·H·d` (twice with an output gate), k and v
    /// `h·K·d` each, o `H·d·h`, biases where the family has them, a sink per head, q/k
    /// norms `2d`. Latent attention: q `h·r_q + r_q + r_q·H·(d_nope + d_rope)` (or
    /// `h·H·(d_nope + d_rope)` without q compression), kv_a `h·(r_kv + d_rope) + r_kv`,
    /// kv_b `r_kv·H·(d_nope + d_v)`, o `H·d_v·h`. Linear attention: qkvz `h·(2·n_k·d_k +
    /// 2·n_v·d_v)`, b and a `h·2·n_v`, a causal convolution over the q, k, v channels,
    /// `2·n_v` decay parameters, a `d_v` norm, out `n_v·d_v·h`. Mamba-2 and Mamba-1: see
    /// `SsmDims::try_params` and `MambaDims::try_params`. Dense MLP `3·h·i` gated or
    /// `2·h·i` plain (+ biases); MoE: routed experts of width `i_e`, a router `h·E`, and
    /// shared experts of total width `i_s`; no feed-forward in a mixer-only block. Norms
    /// per layer of `h` (×2 with LayerNorm bias). Plus embedding `V·h`, learned positions
    /// `P·h`, final norm, and an untied lm_head `V·h`. Active parameters count `k` routed
    /// experts and every shared one.
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
            mtp: 0,
        })
    }

    /// Parameters of one norm.
    fn norm_params(&self) -> u64 {
        match self.norm {
            NormKind::Layer => 2 * self.hidden,
            _ => self.hidden,
        }
    }

    /// Parameters of one layer's token mixer.
    pub fn try_mixer_params(&self, mixer: Mixer) -> Option<u64> {
        let mul = |a: u64, b: u64| a.checked_mul(b);
        let h = self.hidden;
        match mixer {
            Mixer::Attention => {
                let q = mul(self.heads, self.head_dim)?;
                let kv = mul(self.kv_heads, self.head_dim)?;
                let q_out = if self.attention_gate { mul(2, q)? } else { q };
                let mut p = mul(h, q_out)?
                    .checked_add(mul(mul(2, h)?, kv)?)?
                    .checked_add(mul(q, h)?)?;
                if self.qkv_bias {
                    p = p.checked_add(q_out)?.checked_add(mul(2, kv)?)?;
                }
                if self.o_bias {
                    p = p.checked_add(h)?;
                }
                if self.attention_sinks {
                    p = p.checked_add(self.heads)?;
                }
                if self.qk_norm {
                    p = p.checked_add(mul(2, self.head_dim)?)?;
                }
                Some(p)
            }
            Mixer::Mla => {
                let m = self.mla?;
                let qk = mul(self.heads, m.qk_head_dim())?;
                let q = match m.q_lora_rank {
                    Some(r) => mul(h, r)?.checked_add(r)?.checked_add(mul(r, qk)?)?,
                    None => mul(h, qk)?,
                };
                let kv_a = mul(h, m.cache_elems())?.checked_add(m.kv_lora_rank)?;
                let kv_b = mul(
                    m.kv_lora_rank,
                    mul(self.heads, m.qk_nope_head_dim.checked_add(m.v_head_dim)?)?,
                )?;
                let o = mul(mul(self.heads, m.v_head_dim)?, h)?;
                q.checked_add(kv_a)?.checked_add(kv_b)?.checked_add(o)
            }
            Mixer::Linear => {
                let l = self.linear?;
                let v = mul(l.value_heads, l.value_dim)?;
                let qkvz = mul(h, l.qkv_channels().checked_add(v)?)?;
                let ba = mul(h, mul(2, l.value_heads)?)?;
                let conv = mul(l.qkv_channels(), l.conv_kernel)?;
                let out = mul(v, h)?;
                qkvz.checked_add(ba)?
                    .checked_add(conv)?
                    .checked_add(mul(2, l.value_heads)?)?
                    .checked_add(l.value_dim)?
                    .checked_add(out)
            }
            Mixer::Ssm => self.ssm?.try_params(h),
            Mixer::Mamba1 => self.mamba?.try_params(h),
            Mixer::None => Some(0),
        }
    }

    /// Parameters of one layer's feed-forward: (all, used per token).
    pub fn try_ffn_params(&self, ffn: Ffn) -> Option<(u64, u64)> {
        match ffn {
            Ffn::None => return Some((0, 0)),
            Ffn::Dense => {
                let p = self.try_mlp_params(self.intermediate)?;
                return Some((p, p));
            }
            Ffn::Moe => {}
        }
        let expert = self.try_mlp_params(self.expert_intermediate)?;
        let router = self.hidden.checked_mul(self.experts)?;
        let shared = if self.shared_experts > 0 {
            self.try_mlp_params(self.shared_intermediate)?
        } else {
            0
        };
        let fixed = router.checked_add(shared)?;
        Some((
            expert.checked_mul(self.experts)?.checked_add(fixed)?,
            expert
                .checked_mul(self.experts_per_token)?
                .checked_add(fixed)?,
        ))
    }

    /// [`ModelConfig::params`] with checked arithmetic: `None` when a count overflows.
    pub(crate) fn try_params(&self) -> Option<ParamCounts> {
        let mul = |a: u64, b: u64| a.checked_mul(b);
        let (h, v) = (self.hidden, self.vocab);
        let (mut attention, mut mlp, mut active_mlp) = (0u64, 0u64, 0u64);
        for (kind, count) in self.kind_counts() {
            attention = attention.checked_add(mul(self.try_mixer_params(kind.mixer)?, count)?)?;
            let (all, used) = self.try_ffn_params(kind.ffn)?;
            mlp = mlp.checked_add(mul(all, count)?)?;
            active_mlp = active_mlp.checked_add(mul(used, count)?)?;
        }
        let positions = if self.learned_positions {
            mul(self.max_context, h)?
        } else {
            0
        };
        let embedding = mul(v, h)?.checked_add(positions)?;
        let lm_head = if self.tied_embeddings { 0 } else { mul(v, h)? };
        let norms = mul(
            mul(self.norms_per_layer, self.layers)?.checked_add(1)?,
            self.norm_params(),
        )?;
        let total = embedding
            .checked_add(attention)?
            .checked_add(mlp)?
            .checked_add(norms)?
            .checked_add(lm_head)?;
        let mtp = match self.layer_kinds.last() {
            Some(&k) if self.mtp_layers > 0 => {
                let kind = self.kinds[k as usize];
                let block = self
                    .try_mixer_params(kind.mixer)?
                    .checked_add(self.try_ffn_params(kind.ffn)?.0)?
                    .checked_add(mul(self.norms_per_layer, self.norm_params())?)?;
                let own = block
                    .checked_add(mul(mul(2, h)?, h)?)?
                    .checked_add(mul(3, self.norm_params())?)?
                    .checked_add(mul(v, h)?)?
                    .checked_add(mul(v, h)?)?;
                mul(self.mtp_layers, own)?
            }
            _ => 0,
        };
        Some(ParamCounts {
            embedding,
            attention,
            mlp,
            norms,
            lm_head,
            total,
            active: total - (mlp - active_mlp),
            mtp,
        })
    }

    /// The distinct layer kinds with the number of layers of each.
    pub fn kind_counts(&self) -> Vec<(LayerKind, u64)> {
        self.kinds_in(0..self.layer_kinds.len())
    }

    /// The layer kinds of layers `range` (a pipeline stage) with their counts.
    pub(crate) fn kinds_in(&self, range: std::ops::Range<usize>) -> Vec<(LayerKind, u64)> {
        // one kind (most models): no count over the layers
        if let [only] = self.kinds[..] {
            let n = range.len() as u64;
            return if n > 0 { vec![(only, n)] } else { Vec::new() };
        }
        let mut counts = vec![0u64; self.kinds.len()];
        for &k in &self.layer_kinds[range] {
            counts[k as usize] += 1;
        }
        self.kinds
            .iter()
            .copied()
            .zip(counts)
            .filter(|(_, n)| *n > 0)
            .collect()
    }

    /// Whether every layer is a softmax-attention layer (over the whole context or a
    /// window) with the same feed-forward, whose experts (if any) are full MLPs: what
    /// the training model assumes.
    pub fn is_uniform(&self) -> bool {
        self.kinds.len() == 1
            && self.kinds[0].mixer == Mixer::Attention
            && self.kinds[0].ffn != Ffn::None
            && (!self.kinds[0].is_moe() || self.expert_intermediate == self.intermediate)
            && self.shared_experts == 0
    }

    /// The network share of a forwarded expert all-to-all over `ep` groups, `per_domain`
    /// of them in each scale-up domain ([`crate::ops::forwarded_network_share`]): a token
    /// reaches only its `topk_group` groups' domains where each domain holds whole groups
    /// (`n_group` a multiple of the domains), else any domain.
    pub fn forwarded_network_share(&self, ep: u64, per_domain: u64) -> f64 {
        let ep = ep.max(1);
        let per_domain = per_domain.clamp(1, ep);
        let domains = ep.div_ceil(per_domain);
        let reachable = self
            .expert_groups
            .filter(|g| g.groups.is_multiple_of(domains))
            .map(|g| g.per_token);
        crate::ops::forwarded_network_share(ep, per_domain, self.experts_per_token, reachable)
    }

    /// Parameters of one routed expert (biases included).
    pub(crate) fn expert_params(&self) -> u64 {
        self.try_mlp_params(self.expert_intermediate)
            .unwrap_or(u64::MAX)
    }

    /// Parameters of one MLP of inner width `i`, biases included.
    fn try_mlp_params(&self, i: u64) -> Option<u64> {
        let h = self.hidden;
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
            let mut models = crate::hardware::parse_builtin(
                crate::hardware::MODEL_FILES,
                ("data/models", ".json", "ridgeline_id"),
                ModelConfig::from_json_str,
                |m| &m.id,
            )?;
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
#[non_exhaustive]
pub struct ModelSummary {
    /// Model id.
    pub id: String,
    /// Human name.
    pub name: String,
    /// Total parameters.
    pub params: u64,
    /// Parameters used per token.
    pub active_params: u64,
    /// Parameters of the multi-token-prediction modules the checkpoint ships beside
    /// `params` (DeepSeek: one); absent when none.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub mtp_params: Option<u64>,
    /// `params` plus `mtp_params`: what the checkpoint holds (DeepSeek-V3: 685B with its
    /// MTP module, 671B without); absent when the model ships none.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub params_with_mtp: Option<u64>,
    /// The checkpoint's format per tensor class: a string where uniform (`bf16`), else
    /// an object (`{"experts": "mxfp4", "other": "bf16"}`).
    pub format: serde_json::Value,
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
    /// Native format of the routed experts, where the checkpoint ships them in another
    /// format than the rest (gpt-oss: `mxfp4`).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub native_expert_format: Option<String>,
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
            mtp_params: (p.mtp > 0).then_some(p.mtp),
            params_with_mtp: (p.mtp > 0).then_some(p.total + p.mtp),
            format: match m.mixed_expert_format() {
                Some(e) => {
                    serde_json::json!({"experts": e.name(), "other": m.native_format.name()})
                }
                None => serde_json::Value::String(m.native_format.name()),
            },
            layers: m.layers,
            hidden: m.hidden,
            heads: m.heads,
            kv_heads: m.kv_heads,
            max_context: m.max_context,
            native_format: m.native_format.name(),
            native_expert_format: m.mixed_expert_format().map(|f| f.name()),
            source: m.source.clone(),
        }
    }

    /// The routed experts' native format where it differs from the rest's.
    pub fn mixed_expert_format(&self) -> Option<Format> {
        self.native_expert_format
            .filter(|&e| e != self.native_format && self.experts > 1)
    }

    /// The native formats in words: `mxfp4 experts + bf16` where the checkpoint ships
    /// its routed experts in another format, else the one format.
    pub fn native_label(&self) -> String {
        crate::dtype::formats_label(self.native_format, self.mixed_expert_format())
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
        for (json, named) in [
            (r#"{"hidden_size": 4096}"#, "num_hidden_layers"),
            (
                r#"{"hidden_size": 4096, "num_hidden_layers": 2, "num_attention_heads": 0, "vocab_size": 10}"#,
                "num_attention_heads",
            ),
            (
                r#"{"hidden_size": 4097, "num_hidden_layers": 2, "num_attention_heads": 32, "vocab_size": 10}"#,
                "not divisible",
            ),
        ] {
            let e = ModelConfig::from_json_str(json, "x", "cfg.json").unwrap_err();
            assert!(e.to_string().contains(named), "{e}");
        }
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
