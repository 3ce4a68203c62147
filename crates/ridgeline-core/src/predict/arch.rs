//! What a model's architecture does to its cache and its work, in numbers the
//! explanation quotes: latent versus uncompressed KV (MLA), grouped-query attention,
//! sliding windows, linear-attention and state-space (Mamba) state, and the experts a
//! mixture runs and touches.

use super::Predictor;
use crate::dtype::Format;
use crate::memory::{Layout, Parallel, Share, device_cache_bytes};
use crate::model::graph::expected_experts;
use crate::model::{Ffn, Mixer};
use serde::Serialize;

/// The `architecture` object of a prediction: whole-model figures for one sequence (all
/// layers, every device's share together), at the KV format in use.
#[derive(Debug, Clone, PartialEq, Serialize)]
#[non_exhaustive]
pub struct Architecture {
    /// Query heads.
    pub heads: u64,
    /// Key/value heads (softmax attention; the query heads for latent attention).
    pub kv_heads: u64,
    /// Layers in total.
    pub layers: u64,
    /// Layers with multi-head latent attention (MLA).
    pub latent_layers: u64,
    /// Layers with linear attention (a fixed state instead of a KV cache).
    pub linear_layers: u64,
    /// Layers with softmax or latent attention: the layers that cache keys and values.
    pub attention_layers: u64,
    /// Layers that are a feed-forward only, with no token mixer (Nemotron-H's MLP and
    /// expert blocks).
    pub ffn_only_layers: u64,
    /// Sliding windows and the layers each applies to, ascending.
    pub windows: Vec<WindowLayers>,
    /// Cache bytes per token of one sequence while the context is below every window.
    pub kv_bytes_per_token: f64,
    /// What the same attention layers would cache per token with every query head's
    /// own uncompressed key and value (full multi-head attention): the comparison for
    /// grouped-query and latent attention.
    pub mha_kv_bytes_per_token: f64,
    /// Cache bytes of one sequence at the decode context.
    pub kv_bytes_at_context: f64,
    /// What it would be without the sliding windows (every layer caching the whole
    /// context).
    pub kv_bytes_at_context_unwindowed: f64,
    /// Fixed state bytes per sequence (linear attention, state-space blocks), whatever
    /// the context.
    pub state_bytes_per_sequence: f64,
    /// Kernels one layer launches in a decode step, the mean over the layers (a dense
    /// decoder layer: 11): the engine's per-layer overhead is paid in proportion to
    /// them.
    pub kernels_per_layer: f64,
    /// State-space (Mamba) blocks, if the model has them.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub ssm: Option<SsmFacts>,
    /// Mixture of experts, if the model has one.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub experts: Option<ExpertFacts>,
}

/// Layers sharing one sliding window.
#[derive(Debug, Clone, Copy, PartialEq, Serialize)]
#[non_exhaustive]
pub struct WindowLayers {
    /// Tokens attended to.
    pub window: u64,
    /// Layers with this window.
    pub layers: u64,
    /// The window is an attention chunk (Llama 4): a query sees its own chunk only.
    #[serde(skip_serializing_if = "std::ops::Not::not")]
    pub chunked: bool,
}

/// The state-space (Mamba) blocks of a hybrid model.
#[derive(Debug, Clone, Copy, PartialEq, Serialize)]
#[non_exhaustive]
pub struct SsmFacts {
    /// Mamba version: 2 (Nemotron-H) or 1 (Jamba).
    pub version: u64,
    /// Layers that are Mamba blocks.
    pub layers: u64,
    /// SSM heads per block (Mamba-1: every channel is a head of its own).
    pub heads: u64,
    /// Channels per head (Mamba-1: 1).
    pub head_dim: u64,
    /// State size per channel.
    pub d_state: u64,
    /// Format the SSM state is kept in.
    pub state_format: Format,
    /// Fixed bytes per sequence of all these blocks together: the SSM states and the
    /// convolution windows.
    pub state_bytes_per_sequence: f64,
}

/// The experts of a mixture-of-experts model.
#[derive(Debug, Clone, Copy, PartialEq, Serialize)]
#[non_exhaustive]
pub struct ExpertFacts {
    /// Routed experts per MoE layer.
    pub routed: u64,
    /// Routed experts each token runs.
    pub per_token: u64,
    /// Shared experts every token runs.
    pub shared: u64,
    /// Layers with experts (the others are dense).
    pub moe_layers: u64,
    /// Storage format of the routed experts.
    pub format: Format,
    /// Expected distinct experts the batch's tokens touch per MoE layer in one decode
    /// step (the experts whose weights the step reads).
    pub touched_per_decode_step: f64,
    /// Expert weight reads per MoE layer in one decode step: the touched experts once
    /// each, or where the expert kernels read an expert once per token that picks it (an
    /// Apple GPU below 32 tokens, `crate::predict::METAL_EXPERT_MM_MIN`) `batch · per_token`.
    pub reads_per_decode_step: f64,
    /// With expert parallelism, the routed rows and touched experts per MoE layer of a
    /// decode step on the busiest rank against the mean one, which the step's time
    /// waits for ([`crate::model::graph::expert_load`]); `None` without.
    pub busiest_rank: Option<crate::model::graph::ExpertLoad>,
}

impl Predictor<'_> {
    /// The architecture figures for a decode step of `batch` sequences at `context`.
    pub fn architecture(&self, batch: u64, context: u64) -> Architecture {
        let m = self.model;
        let kv = self.precision.kv;
        let whole = Share::stages(m, &Layout::new(1, Parallel::Tp))[0];
        let cache = device_cache_bytes(m, kv, self.precision.activations.bytes(), &whole);
        let (mut latent, mut linear, mut ssm_layers, mut mha) = (0, 0, 0, 0.0);
        let (mut attention, mut ffn_only) = (0, 0);
        let mut windows: Vec<WindowLayers> = Vec::new();
        for (kind, n) in m.kind_counts() {
            let per_head = match (kind.mixer, m.mla) {
                (Mixer::Mla, Some(d)) => {
                    latent += n;
                    d.qk_head_dim() + d.v_head_dim
                }
                (Mixer::Linear, _) => {
                    linear += n;
                    continue;
                }
                (Mixer::Ssm | Mixer::Mamba1, _) => {
                    ssm_layers += n;
                    continue;
                }
                (Mixer::None, _) => {
                    ffn_only += n;
                    continue;
                }
                _ => 2 * m.head_dim,
            };
            attention += n;
            mha += (n * m.heads * per_head) as f64 * kv.bytes();
            if let Some(w) = kind.window {
                match windows.iter_mut().find(|x| x.window == w) {
                    Some(x) => x.layers += n,
                    None => windows.push(WindowLayers {
                        window: w,
                        layers: n,
                        chunked: kind.chunked,
                    }),
                }
            }
        }
        windows.sort_by_key(|w| w.window);
        let ctx = context as f64;
        let moe_layers = m
            .kind_counts()
            .iter()
            .filter(|(k, _)| k.ffn == Ffn::Moe)
            .map(|(_, n)| n)
            .sum();
        let experts = (m.experts > 1).then(|| ExpertFacts {
            routed: m.experts,
            per_token: m.experts_per_token,
            shared: m.shared_experts,
            moe_layers,
            format: self.precision.experts,
            touched_per_decode_step: expected_experts(m.experts, m.experts_per_token, batch),
            reads_per_decode_step: if batch < self.expert_pair_reads_below() {
                (batch * m.experts_per_token) as f64
            } else {
                expected_experts(m.experts, m.experts_per_token, batch)
            },
            busiest_rank: (self.ep > 1).then(|| self.busiest_load(batch)),
        });
        let act = self.precision.activations.bytes();
        let act_format = crate::model::graph::format_for(self.precision.activations);
        let facts =
            |version, heads, head_dim, d_state, format: Option<Format>, bytes: f64| SsmFacts {
                version,
                layers: ssm_layers,
                heads,
                head_dim,
                d_state,
                state_format: format.unwrap_or(act_format),
                state_bytes_per_sequence: ssm_layers as f64 * bytes,
            };
        let ssm = match (m.ssm, m.mamba) {
            _ if ssm_layers == 0 => None,
            (Some(d), _) => Some(facts(
                2,
                d.heads,
                d.head_dim,
                d.d_state,
                d.state_format,
                d.bytes_per_sequence(act),
            )),
            (None, Some(d)) => Some(facts(
                1,
                d.d_inner,
                1,
                d.d_state,
                d.state_format,
                d.bytes_per_sequence(act),
            )),
            (None, None) => None,
        };
        Architecture {
            heads: m.heads,
            kv_heads: if latent > 0 { m.heads } else { m.kv_heads },
            layers: m.layers,
            latent_layers: latent,
            linear_layers: linear,
            attention_layers: attention,
            ffn_only_layers: ffn_only,
            windows,
            kv_bytes_per_token: cache.per_token_below_windows(),
            mha_kv_bytes_per_token: mha,
            kv_bytes_at_context: cache.at(ctx),
            kv_bytes_at_context_unwindowed: cache.per_token_below_windows() * ctx
                + cache.per_sequence,
            state_bytes_per_sequence: cache.per_sequence,
            // the predictor holds every layer: its launch count is the model's
            kernels_per_layer: self.launch_layers * super::launch::DENSE_LAYER_KERNELS as f64
                / self.layers.max(1) as f64,
            ssm,
            experts,
        }
    }
}
