//! What a model's architecture does to its cache and its work, in numbers the
//! explanation quotes: latent versus uncompressed KV (MLA), grouped-query attention,
//! sliding windows, linear-attention state, and the experts a mixture runs and touches.

use super::Predictor;
use crate::dtype::Format;
use crate::memory::{Layout, Parallel, Share, device_cache_bytes};
use crate::model::Mixer;
use crate::model::graph::expected_experts;
use serde::Serialize;

/// The `architecture` object of a prediction: whole-model figures for one sequence (all
/// layers, every device's share together), at the KV format in use.
#[derive(Debug, Clone, PartialEq, Serialize)]
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
    /// Fixed state bytes per sequence (linear attention), whatever the context.
    pub state_bytes_per_sequence: f64,
    /// Mixture of experts, if the model has one.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub experts: Option<ExpertFacts>,
}

/// Layers sharing one sliding window.
#[derive(Debug, Clone, Copy, PartialEq, Serialize)]
pub struct WindowLayers {
    /// Tokens attended to.
    pub window: u64,
    /// Layers with this window.
    pub layers: u64,
}

/// The experts of a mixture-of-experts model.
#[derive(Debug, Clone, Copy, PartialEq, Serialize)]
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
}

impl Predictor<'_> {
    /// The architecture figures for a decode step of `batch` sequences at `context`.
    pub fn architecture(&self, batch: u64, context: u64) -> Architecture {
        let m = self.model;
        let kv = self.precision.kv;
        let whole = Share::stages(m, &Layout::new(1, Parallel::Tp))[0];
        let cache = device_cache_bytes(m, kv, self.precision.activations.bytes(), &whole);
        let (mut latent, mut linear, mut mha) = (0, 0, 0.0);
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
                _ => 2 * m.head_dim,
            };
            mha += (n * m.heads * per_head) as f64 * kv.bytes();
            if let Some(w) = kind.window {
                match windows.iter_mut().find(|x| x.window == w) {
                    Some(x) => x.layers += n,
                    None => windows.push(WindowLayers {
                        window: w,
                        layers: n,
                    }),
                }
            }
        }
        windows.sort_by_key(|w| w.window);
        let ctx = context as f64;
        let moe_layers = m
            .kind_counts()
            .iter()
            .filter(|(k, _)| k.moe)
            .map(|(_, n)| n)
            .sum();
        let experts = (m.experts > 1).then(|| ExpertFacts {
            routed: m.experts,
            per_token: m.experts_per_token,
            shared: m.shared_experts,
            moe_layers,
            format: self.precision.experts,
            touched_per_decode_step: expected_experts(m.experts, m.experts_per_token, batch),
        });
        Architecture {
            heads: m.heads,
            kv_heads: if latent > 0 { m.heads } else { m.kv_heads },
            layers: m.layers,
            latent_layers: latent,
            linear_layers: linear,
            windows,
            kv_bytes_per_token: cache.per_token_below_windows(),
            mha_kv_bytes_per_token: mha,
            kv_bytes_at_context: cache.at(ctx),
            kv_bytes_at_context_unwindowed: cache.per_token_below_windows() * ctx
                + cache.per_sequence,
            state_bytes_per_sequence: cache.per_sequence,
            experts,
        }
    }
}
