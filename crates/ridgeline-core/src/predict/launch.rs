//! Kernel launches per layer: what an engine's per-layer overhead scales with.
//!
//! [`crate::engine::Overheads::layer_overhead_s`] is the fixed time one layer of a
//! dense decoder adds to a forward pass: the launches and the gaps between its small
//! kernels, which a CUDA graph shortens but does not remove. A layer that runs more
//! kernels pays more of it: a DeepSeek-V3 layer (latent attention, routed and shared
//! experts) launches about twice a Llama layer's kernels, and at one sequence over
//! eight GPUs its decode is mostly those gaps. The per-layer overhead is therefore
//! charged per kernel, [`DENSE_LAYER_KERNELS`] of them making one dense layer, so that
//! an engine's fitted value keeps its meaning: the time of one dense layer's launches.
//!
//! The count is of the kernels the serving engines launch per layer in a decode step
//! (vLLM's and SGLang's model files; fused where those fuse: the gate and up
//! projections, the q/k norms, the residual add with the next norm is counted once as
//! the residual). The tensor-parallel all-reduces are not counted: they pay their own
//! latency ([`crate::engine::Overheads::collective_latency_s`] or the measured one).

use crate::model::{Ffn, LayerKind, Mixer, ModelConfig};

/// Kernels of one dense decoder layer (Llama): input norm, QKV projection, rotary
/// embedding, attention, output projection, residual add; post-attention norm, gate
/// and up projection, activation, down projection, residual add.
pub const DENSE_LAYER_KERNELS: u64 = 11;

/// The kernels one decode step launches for a layer of `kind` in `model` (see the
/// module documentation for what is counted).
///
/// - Softmax attention: norm, QKV projection, rotary embedding (where the layer has
///   it), the q/k norms (where the model has them), attention, the output gate (where
///   the model has one), output projection, residual.
/// - Latent attention (DeepSeek-V2/V3): norm, the query down-projection, its norm and
///   up-projection (a plain query projection where the model has no query rank), the
///   latent projection and its norm, rotary embedding, the query's absorbed
///   projection, attention, the value's absorbed projection, output projection,
///   residual.
/// - Gated DeltaNet: norm, two input projections, the short convolution, the delta
///   rule, the gated norm, output projection, residual. Mamba-2: norm, input
///   projection, convolution, state update, gated norm, output projection, residual.
///   Mamba-1: norm, input projection, convolution, x and dt projections, selective
///   scan, output projection, residual.
/// - Dense MLP: norm, gate-up (or up) projection, activation, down projection,
///   residual. Mixture of experts: norm, router, top-k selection, the routed experts'
///   gate-up projection, activation and down projection, the weighted combine,
///   residual; shared experts add their gate-up, activation and down.
/// - Gemma 2 and 3: a norm after attention and one after the MLP on top.
pub(crate) fn layer_kernels(model: &ModelConfig, kind: LayerKind) -> u64 {
    let flag = |b: bool| u64::from(b);
    let mixer = match kind.mixer {
        Mixer::Attention => 5 + flag(kind.rope) + flag(model.qk_norm) + flag(model.attention_gate),
        Mixer::Mla => match model.mla.and_then(|m| m.q_lora_rank) {
            Some(_) => 12,
            None => 10,
        },
        Mixer::Linear => 8,
        Mixer::Ssm => 7,
        Mixer::Mamba1 => 8,
        Mixer::None => 0,
    };
    let ffn = match kind.ffn {
        Ffn::Dense => 5,
        Ffn::Moe => 8 + if model.shared_experts > 0 { 3 } else { 0 },
        Ffn::None => 0,
    };
    // Gemma's norms after attention and after the MLP
    let extra_norms = if mixer > 0 && ffn > 0 {
        model.norms_per_layer.saturating_sub(2)
    } else {
        0
    };
    mixer + ffn + extra_norms
}

/// The first `layers` layers of `model` counted in dense layers' worth of kernel
/// launches: the sum of [`layer_kernels`] over them over [`DENSE_LAYER_KERNELS`].
/// A Llama model's is its layer count.
pub(crate) fn launch_layers(model: &ModelConfig, layers: u64) -> f64 {
    let end = (layers as usize).min(model.layer_kinds.len());
    let kernels: u64 = model
        .kinds_in(0..end)
        .iter()
        .map(|&(kind, n)| n * layer_kernels(model, kind))
        .sum();
    kernels as f64 / DENSE_LAYER_KERNELS as f64
}

/// The one-layer draft head of speculative decoding in dense layers' worth of kernel
/// launches: the model's multi-token-prediction module is a layer of its last kind
/// (DeepSeek-V3's: latent attention and experts); an EAGLE-style head, where the
/// checkpoint ships none, is one dense layer.
pub(crate) fn head_launch_layers(model: &ModelConfig) -> f64 {
    let last = model.layer_kinds.last().map(|&i| model.kinds[i as usize]);
    match last {
        Some(kind) if model.mtp_layers > 0 => {
            layer_kernels(model, kind) as f64 / DENSE_LAYER_KERNELS as f64
        }
        _ => 1.0,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn model(name: &str) -> ModelConfig {
        crate::model::ModelDb::builtin()
            .unwrap()
            .resolve(name)
            .unwrap()
    }

    #[test]
    fn a_llama_layer_is_one_dense_layer() {
        let m = model("llama-3-8b");
        assert_eq!(layer_kernels(&m, m.kinds[0]), 11);
        assert_eq!(launch_layers(&m, 32), 32.0);
        // a pipeline stage of 10 layers
        assert_eq!(launch_layers(&m, 10), 10.0);
    }

    #[test]
    fn latent_attention_and_experts_launch_more() {
        // DeepSeek-V3: 3 dense layers of latent attention (12) + MLP (5) = 17 kernels,
        // 58 MoE layers of latent attention (12) + experts with shared ones (8 + 3) = 23
        // kernels: (3 · 17 + 58 · 23) / 11 = (51 + 1334) / 11 = 125.909 dense layers for
        // its 61
        let m = model("deepseek-v3");
        let got = launch_layers(&m, m.layers);
        assert!((got - 1385.0 / 11.0).abs() < 1e-9, "{got}");
        // a pipeline stage of its first 3 layers: the dense ones, 3 · 17 / 11
        assert!((launch_layers(&m, 3) - 51.0 / 11.0).abs() < 1e-9);
        // its multi-token-prediction head is a layer of its last kind: 23 / 11; Llama
        // has none, and an EAGLE head is one dense layer
        assert!((head_launch_layers(&m) - 23.0 / 11.0).abs() < 1e-9);
        assert_eq!(head_launch_layers(&model("llama-3-8b")), 1.0);
        // gpt-oss-120b: attention with rotary, no q/k norm (6) + experts, none shared
        // (8) = 14 kernels per layer over 36 layers: 36 · 14 / 11 = 45.818
        let g = model("gpt-oss-120b");
        assert!((launch_layers(&g, g.layers) - 36.0 * 14.0 / 11.0).abs() < 1e-9);
        // Qwen3-235B-A22B: q/k norms (7) + experts (8) = 15 kernels over 94 layers
        let q = model("qwen3-235b-a22b");
        assert!((launch_layers(&q, q.layers) - 94.0 * 15.0 / 11.0).abs() < 1e-9);
        // Gemma 3 4B: attention with rotary and q/k norms (7) + MLP (5) + its two
        // norms after them = 14 kernels
        let g3 = model("gemma-3-4b");
        assert_eq!(layer_kernels(&g3, g3.kinds[0]), 14);
    }
}
