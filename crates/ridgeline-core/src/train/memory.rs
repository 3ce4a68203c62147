//! Training memory per device: model states under ZeRO 0-3, activations after
//! Korthikanti et al. 2022, framework overhead.
//!
//! **Model states.** Mixed precision keeps per trainable parameter 2 bytes of 16-bit
//! weights and 2 bytes of 16-bit gradients; the optimizer adds (see
//! [`Optimizer::state_bytes_per_param`]) 12 bytes for AdamW (fp32 master, m, v), 8 for
//! SGD with momentum (fp32 master, momentum), about 4 for Adafactor (fp32 master plus a
//! factored second moment, no first moment). ZeRO stage 1 shards the optimizer states
//! over the `dp` data-parallel ranks, stage 2 also the gradients, stage 3 also the
//! weights. Tensor parallelism divides every weight matrix by `tp` (norm scales are
//! replicated); pipeline parallelism gives each stage `ceil(layers / pp)` layers, the
//! first stage the token embedding, the last the lm_head (a tied embedding is held by
//! both, as Megatron does). The reported device is the most loaded stage.
//!
//! LoRA (`rank r`, on q and v by default) keeps the base weights frozen in their format
//! (16-bit, or NF4 with double quantization for QLoRA; embeddings, lm_head and norms stay
//! 16-bit) and trains `r · (d_in + d_out)` adapter parameters per adapted matrix, which
//! alone carry gradients and optimizer states. Activations are counted as for full
//! training (gradients must still flow through every layer to reach the adapters); frozen
//! projections need not keep their inputs, so this is an upper bound by up to `e·2h`
//! bytes per token per layer.
//!
//! **Activations** ([`activation_bytes_per_layer`]): Korthikanti et al. 2022 count
//! `s·b·h·(34 + 5·a·s/h)` bytes per GPT layer (16-bit activations, 1-byte dropout
//! masks). Adapted to gated MLPs, GQA and fused attention, per layer:
//!
//! ```text
//! s·b·[ e·(4h + 2q + 2k + m·i) + 2·d·h ]  +  scores
//! ```
//!
//! with `e` bytes per activation element, `q = heads·head_dim`, `k = kv_heads·head_dim`,
//! `i` the MLP width (× experts per token for MoE), `m = 3` for a gated MLP (gate and up
//! outputs and their product; `4` in eager mode, which keeps the activation's output
//! too, see [`ActivationShape::eager`]) or `2` for a plain one (activation input and
//! output),
//! `d = 1` with dropout (masks after attention and MLP) else 0. The `4h` are the two norm
//! inputs and the inputs of the qkv and up projections; `2q` the query and the attention
//! output; `2k` keys and values. `scores = a·s²·b·(e + d·(1 + e))` when the score matrix
//! is materialized (softmax output, dropout mask and output), or `4·a·s·b` (the fp32
//! log-sum-exp a fused kernel keeps) with flash attention. For the GPT layer
//! (`q = k = h`, `i = 4h`, `m = 2`, `d = 1`, `e = 2`, no flash) this is exactly
//! `34·s·b·h + 5·a·s²·b`. Selective recomputation drops `scores`; full recomputation
//! stores only the layer input, `e·s·b·h`, and rebuilds one layer at a time (one layer's
//! full activations are added as working memory). Tensor parallelism with sequence
//! parallelism divides everything by `tp`; without it, the `e·4h + 2dh` part is replicated.
//! The first of `pp` stages holds `min(pp, micro-batches)` micro-batches in flight
//! (1F1B); the last stage also holds the logits, `s·b·V/tp · (e + 4)` bytes (16-bit logits
//! and fp32 log-probabilities of a fused cross-entropy), or `s·b·V/tp · 16` where the loss
//! upcasts the logits to fp32 first ([`Loss::Upcast`](super::Loss::Upcast)).
//!
//! **Overhead** ([`FrameworkOverhead`]): a fixed CUDA context / workspace term, an
//! allocator fragmentation fraction of the activations, and with ZeRO-3 the unsharded
//! weights of two layers (the one computing and the one prefetched).

use super::Trainer;
use super::kinds::{LoraTargets, Method, Offload, Optimizer, Recompute};
use super::layers;
use crate::model::{Ffn, LayerKind, Mixer, ModelConfig};
use serde::Serialize;

/// Device memory a training framework needs beyond model states and activations.
#[derive(Debug, Clone, Copy, PartialEq, Serialize)]
pub struct FrameworkOverhead {
    /// CUDA context, cuBLAS/cuDNN workspaces, NCCL buffers: bytes (about 1 GB with
    /// PyTorch on A100/H100; PyTorch's own peak counters exclude it).
    pub context_bytes: f64,
    /// Caching-allocator fragmentation as a fraction of activation memory (reserved
    /// over allocated bytes minus one; activations are allocated and freed every step).
    pub fragmentation: f64,
}

/// The default overhead: 1 GB context, 10 % fragmentation of activations.
pub const DEFAULT_OVERHEAD: FrameworkOverhead = FrameworkOverhead {
    context_bytes: 1.0e9,
    fragmentation: 0.10,
};

/// Per-device memory (the `train --json` `memory` keys), bytes.
#[derive(Debug, Clone, Copy, PartialEq, Serialize)]
#[non_exhaustive]
pub struct TrainMemory {
    /// Weights held (16-bit trainable copies and frozen base weights).
    pub params_bytes: f64,
    /// Gradients held.
    pub grads_bytes: f64,
    /// Optimizer states held on the device (fp32 master weights included).
    pub optimizer_bytes: f64,
    /// Stored activations at their peak (end of the forward passes in flight).
    pub activations_bytes: f64,
    /// Framework overhead ([`FrameworkOverhead`], ZeRO-3 gather buffers).
    pub overhead_bytes: f64,
    /// Sum of the five.
    pub total_bytes: f64,
    /// Device capacity.
    pub capacity_bytes: f64,
    /// `total_bytes <= capacity_bytes`.
    pub fits: bool,
}

impl TrainMemory {
    /// Parameters + gradients + optimizer states ("model states" in the ZeRO paper).
    pub fn model_states_bytes(&self) -> f64 {
        self.params_bytes + self.grads_bytes + self.optimizer_bytes
    }
}

/// Extra detail on the memory of the reported device.
#[derive(Debug, Clone, Copy, PartialEq, Serialize)]
#[non_exhaustive]
pub struct MemoryDetail {
    /// Which pipeline stage the figures are for (`only`, `first`, `last`).
    pub stage: &'static str,
    /// Parameters held by this device before ZeRO sharding.
    pub params_on_device: f64,
    /// Trainable parameters held by this device before ZeRO sharding.
    pub trainable_params_on_device: f64,
    /// Optimizer states kept in host memory (offload), bytes.
    pub host_optimizer_bytes: f64,
    /// Stored activations of one layer for one micro-batch, bytes.
    pub activations_per_layer_bytes: f64,
    /// Micro-batches whose activations are held at once.
    pub micro_batches_in_flight: u64,
    /// Logits and log-probabilities (last stage), bytes.
    pub logits_bytes: f64,
    /// Fixed context term of the overhead, bytes.
    pub context_bytes: f64,
    /// Allocator fragmentation term of the overhead, bytes.
    pub fragmentation_bytes: f64,
    /// ZeRO-3 unsharded-layer buffers in the overhead, bytes.
    pub gather_buffer_bytes: f64,
    /// Largest micro-batch that fits (0: not even one sequence).
    pub max_micro_batch: u64,
}

/// Shape and options of the activation formula for one layer.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct ActivationShape {
    /// Tokens per sequence `s`.
    pub seq: u64,
    /// Sequences per micro-batch `b`.
    pub micro_batch: u64,
    /// Tensor-parallel degree `t`.
    pub tp: u64,
    /// Sequence parallelism (divides the replicated part by `t` too).
    pub sequence_parallel: bool,
    /// Fused attention (no stored score matrix).
    pub flash: bool,
    /// Dropout masks stored.
    pub dropout: bool,
    /// Recomputation.
    pub recompute: Recompute,
    /// Bytes per activation element `e`.
    pub act_bytes: f64,
    /// Unfused elementwise kernels (eager PyTorch): in `act(gate) · up` autograd keeps
    /// the activation's output for the product's backward besides its input, so a
    /// gated MLP stores `m = 4` i-wide tensors, not 3. Compiled steps (torch.compile,
    /// XLA) and fused-kernel stacks (Megatron-Core's fused SwiGLU) recompute it.
    pub eager: bool,
}

/// Stored activation bytes of one transformer layer for one micro-batch on one device,
/// by the formula in the [module docs](self):
/// `s·b·[e·(4h + 2q + 2k + m·i) + 2dh] + scores`, divided by `t` under tensor +
/// sequence parallelism; `selective` drops the scores; `full` keeps `e·s·b·h` (the layer
/// input) only; `op` keeps the layer input, every second matmul output (q, v, gate,
/// down of a gated MLP: `e·s·b·(q + k + i + h)`) and the attention output with its fp32
/// log-sum-exp (`s·b·(e·q + 4a)`).
///
/// ```
/// use ridgeline_core::model::ModelDb;
/// use ridgeline_core::train::{activation_bytes_per_layer, ActivationShape, Recompute};
/// // GPT-3 175B, s = 2048, b = 1, dropout, no flash: s·b·h·(34 + 5·a·s/h)
/// // = 2048·12288·(34 + 5·96·2048/12288) = 25,165,824 · 114 = 2,868,903,936 bytes.
/// let m = ModelDb::builtin().unwrap().resolve("gpt3-175b").unwrap();
/// let shape = ActivationShape { seq: 2048, micro_batch: 1, tp: 1, sequence_parallel: true,
///     flash: false, dropout: true, recompute: Recompute::None, act_bytes: 2.0, eager: false };
/// assert_eq!(activation_bytes_per_layer(&m, &shape), 2_868_903_936.0);
/// ```
pub fn activation_bytes_per_layer(cfg: &ModelConfig, a: &ActivationShape) -> f64 {
    match cfg.kinds[..] {
        [only] => activation_bytes_of(cfg, &only, a),
        _ => {
            let layers = cfg.layer_kinds.len().max(1);
            layers::sum_over(cfg, 0..layers, |kind| activation_bytes_of(cfg, kind, a))
                / layers as f64
        }
    }
}

/// The stored activations of one layer's token mixer per token, in elements (`split`:
/// divided over the tensor-parallel ranks; `replicated`: beyond the norm input, the
/// block input and the dropout mask, which every block has), with the heads whose
/// scores or log-sum-exp attention keeps, and what op-level checkpointing keeps
/// (`op_replicated`, `op_split` elements and `op_lse` fp32 values).
#[derive(Debug, Clone, Copy, Default)]
struct MixerActivations {
    present: bool,
    replicated: f64,
    split: f64,
    /// fp32 bytes per token kept by a chunked recurrence (split by `t`).
    split_fp32: f64,
    score_heads: f64,
    op_replicated: f64,
    op_split: f64,
    op_lse: f64,
}

/// What one layer's token mixer keeps for the backward pass (see
/// [`activation_bytes_of`]).
fn mixer_activations(cfg: &ModelConfig, mixer: Mixer) -> MixerActivations {
    let heads = cfg.heads as f64;
    let f = |x: u64| x as f64;
    match mixer {
        Mixer::Attention => {
            let (q, k) = (f(cfg.q_width()), f(cfg.kv_width()));
            // the query and the attention output, keys and values; with an output gate
            // also the gate's projection and the gated output
            let gate = if cfg.attention_gate { 2.0 * q } else { 0.0 };
            MixerActivations {
                present: true,
                replicated: 0.0,
                split: 2.0 * q + 2.0 * k + gate,
                split_fp32: 0.0,
                score_heads: heads,
                // every second matmul output (q and v) and the attention output
                op_replicated: 0.0,
                op_split: q + k + q,
                op_lse: heads,
            }
        }
        Mixer::Mla => {
            let Some(m) = cfg.mla else {
                return MixerActivations::default();
            };
            let r_q = m.q_lora_rank.map_or(0.0, f);
            let (qk, v) = (heads * f(m.qk_head_dim()), heads * f(m.v_head_dim));
            // the latents (q_a and kv_a outputs and their normed copies, replicated
            // over the TP ranks as Megatron's down-projections are), the expanded
            // queries, keys and values, and the attention output
            let latents = r_q + f(m.cache_elems());
            MixerActivations {
                present: true,
                replicated: 2.0 * latents,
                split: 2.0 * qk + 2.0 * v,
                split_fp32: 0.0,
                score_heads: heads,
                op_replicated: latents,
                op_split: v,
                op_lse: heads,
            }
        }
        Mixer::Linear => {
            let Some(l) = cfg.linear else {
                return MixerActivations::default();
            };
            let v = f(l.value_heads * l.value_dim);
            let qkv = f(l.qkv_channels());
            // in_proj outputs (q, k, v, z; b, a), the convolved q, k, v, the
            // recurrence's output and its gated norm; the chunked kernel keeps one fp32
            // state per 64-token chunk (fla's chunk_gated_delta_rule)
            MixerActivations {
                present: true,
                replicated: 0.0,
                split: (qkv + v) + f(2 * l.value_heads) + qkv + 2.0 * v,
                split_fp32: 4.0 * f(l.value_heads * l.key_dim * l.value_dim) / 64.0,
                score_heads: 0.0,
                op_replicated: 0.0,
                op_split: v,
                op_lse: 0.0,
            }
        }
        Mixer::Ssm => {
            let Some(d) = cfg.ssm else {
                return MixerActivations::default();
            };
            let chunk = d.chunk.max(1) as f64;
            // in_proj output, the convolved x, B, C, the scan output and its gated norm;
            // one fp32 state per chunk
            MixerActivations {
                present: true,
                replicated: 0.0,
                split: f(d.in_proj_width()) + f(d.conv_channels()) + 2.0 * f(d.d_inner()),
                split_fp32: 4.0 * f(d.d_inner() * d.d_state) / chunk,
                score_heads: 0.0,
                op_replicated: 0.0,
                op_split: f(d.d_inner()),
                op_lse: 0.0,
            }
        }
        Mixer::Mamba1 => {
            let Some(d) = cfg.mamba else {
                return MixerActivations::default();
            };
            let di = f(d.d_inner);
            // in_proj output (x, z), the convolved x, x_proj and dt_proj outputs, the
            // scan output and the gated output (the selective scan recomputes its
            // states in backward)
            MixerActivations {
                present: true,
                replicated: 0.0,
                split: 2.0 * di + di + f(d.dt_rank + 2 * d.d_state) + di + 2.0 * di,
                split_fp32: 0.0,
                score_heads: 0.0,
                op_replicated: 0.0,
                op_split: di,
                op_lse: 0.0,
            }
        }
        Mixer::None => MixerActivations::default(),
    }
}

/// Stored activation bytes of one layer of `kind` for one micro-batch on one device
/// (what [`activation_bytes_per_layer`] averages over the layers).
///
/// Each block of the layer (the token mixer, the feed-forward; a layer may lack one)
/// keeps its norm's input and its first projection's input (`2·e·h` per token,
/// replicated over the TP ranks unless sequence parallel) and a dropout mask (`d·h`).
/// Softmax attention keeps the query, keys, values and its output (`e·(2q + 2k)`, split
/// by TP) and the scores; latent attention the latents (`2·(r_q + r_kv + d_rope)`,
/// replicated), the expanded queries, keys and values and the output (`2·H·(d_nope +
/// d_rope) + 2·H·d_v`) and the scores; linear attention and state-space blocks their
/// projections' outputs, the convolved channels, the recurrence's output and its gated
/// norm, and one fp32 state per chunk. A dense MLP keeps `m·i` (see the [module
/// docs](self)); a mixture of experts `m · (k·i_e + i_s)` per token: the routed
/// experts' rows and the shared experts'. Op-level checkpointing keeps the layer input,
/// every second matmul output of softmax attention and the MLP (q, v; gate and down),
/// the latents of latent attention, the recurrence output of the others, and the
/// attention output with its fp32 log-sum-exp.
pub fn activation_bytes_of(cfg: &ModelConfig, kind: &LayerKind, a: &ActivationShape) -> f64 {
    let s = a.seq as f64;
    let b = a.micro_batch as f64;
    let t = a.tp.max(1) as f64;
    let e = a.act_bytes;
    let h = cfg.hidden as f64;
    let mixer = mixer_activations(cfg, kind.mixer);
    let i = match kind.ffn {
        Ffn::None => 0.0,
        Ffn::Dense => cfg.intermediate as f64,
        Ffn::Moe => {
            cfg.expert_intermediate as f64 * cfg.experts_per_token.max(1) as f64
                + if cfg.shared_experts > 0 {
                    cfg.shared_intermediate as f64
                } else {
                    0.0
                }
        }
    };
    let ffn = kind.ffn != Ffn::None;
    let blocks = f64::from(u8::from(mixer.present) + u8::from(ffn));
    let m = match (cfg.gated_mlp, a.eager) {
        (true, true) => 4.0,
        (true, false) => 3.0,
        (false, _) => 2.0,
    };
    let d = if a.dropout { 1.0 } else { 0.0 };
    let seq_split = if a.sequence_parallel { t } else { 1.0 };
    if a.recompute == Recompute::Full {
        return e * s * b * h / seq_split;
    }
    if a.recompute == Recompute::Op {
        // every second matmul output of the MLP, gate and down (or up alone), split by
        // tensor parallelism where the matmul is column-parallel
        let mlp = match (ffn, cfg.gated_mlp) {
            (false, _) => 0.0,
            (true, true) => i / t + h / seq_split,
            (true, false) => i / t,
        };
        let kept = mixer.op_split / t + mixer.op_replicated / seq_split + mlp;
        return s * b * (e * h / seq_split + e * kept + 4.0 * mixer.op_lse / t);
    }
    // replicated across TP ranks unless sequence parallel: norm inputs, the blocks'
    // inputs, dropout masks after each block.
    let replicated = s * b * (blocks * (2.0 * h * e + d * h) + e * mixer.replicated);
    let split = s * b * (e * (mixer.split + if ffn { m * i } else { 0.0 }) + mixer.split_fp32);
    let heads = mixer.score_heads;
    let scores = match (a.flash, a.recompute) {
        (_, Recompute::Selective) if !a.flash => 0.0,
        (true, _) => 4.0 * heads * s * b,
        (false, _) => heads * s * s * b * (e + d * (1.0 + e)),
    };
    replicated / seq_split + (split + scores) / t
}

/// Adafactor's factored second moment per parameter: `4 · Σ(rows + cols) / params` over
/// the model's weight matrices (every layer kind's, see the `train::layers` module), with full
/// (unfactored) statistics for norm vectors.
pub fn adafactor_factored_bytes_per_param(cfg: &ModelConfig) -> f64 {
    let (h, v) = (cfg.hidden as f64, cfg.vocab as f64);
    let layers = layers::sum_over(cfg, 0..cfg.layer_kinds.len(), |kind| {
        layers::matrices(cfg, kind)
            .iter()
            .map(layers::Matrix::rows_plus_cols)
            .sum()
    });
    let p = cfg.params();
    let emb = (v + h) * if cfg.tied_embeddings { 1.0 } else { 2.0 };
    let sum = layers + emb + p.norms as f64;
    if p.total == 0 {
        0.0
    } else {
        4.0 * sum / p.total as f64
    }
}

/// LoRA adapter parameters of the layers `range` (whole, before tensor parallelism):
/// `r · (d_in + d_out)` per adapted matrix of each layer's kind.
pub fn lora_params_in(
    cfg: &ModelConfig,
    range: std::ops::Range<usize>,
    rank: u64,
    targets: LoraTargets,
) -> f64 {
    layers::sum_over(cfg, range, |kind| {
        layers::lora_params_of(cfg, kind, rank, targets)
    })
}

/// LoRA adapter parameters of one layer (whole, before tensor parallelism):
/// `r · (d_in + d_out)` per adapted matrix; the mean over the layers where their kinds
/// differ (see [`lora_params_in`]).
pub fn lora_params_per_layer(cfg: &ModelConfig, rank: u64, targets: LoraTargets) -> f64 {
    match cfg.kinds[..] {
        [only] => layers::lora_params_of(cfg, &only, rank, targets),
        _ => {
            let n = cfg.layer_kinds.len();
            lora_params_in(cfg, 0..n, rank, targets) / n.max(1) as f64
        }
    }
}

/// The largest useful LoRA rank, the smaller dimension of the smallest matrix LoRA
/// adapts, and that matrix as `name (d_in x d_out)`: q and v projections (`h x q`,
/// `h x k`) for [`LoraTargets::QueryValue`] (latent attention's q_b and kv_b); with
/// [`LoraTargets::AllLinear`] every projection of every layer kind. `(0, "")` when the
/// model has no matrix the targets name.
pub fn max_lora_rank(cfg: &ModelConfig, targets: LoraTargets) -> (u64, String) {
    layers::rank_candidates(cfg, targets)
        .into_iter()
        .min_by_key(|m| m.d_in.min(m.d_out))
        .map_or((0, String::new()), |m| {
            (
                m.d_in.min(m.d_out),
                format!("{} ({} x {})", m.name, m.d_in, m.d_out),
            )
        })
}

/// Matrices LoRA adapts per layer (copies of routed experts counted): 2 for q and v;
/// 4 attention projections plus the MLP's (3 gated or 2 plain, per expert) for
/// all-linear; the mean over the layers where their kinds differ.
pub fn lora_matrices_per_layer(cfg: &ModelConfig, targets: LoraTargets) -> f64 {
    match cfg.kinds[..] {
        [only] => layers::lora_matrices_of(cfg, &only, targets),
        _ => {
            let n = cfg.layer_kinds.len();
            layers::sum_over(cfg, 0..n, |kind| {
                layers::lora_matrices_of(cfg, kind, targets)
            }) / n.max(1) as f64
        }
    }
}

/// Parameters of one pipeline stage on one tensor-parallel rank.
#[derive(Debug, Clone, Copy, PartialEq)]
pub(super) struct StageParams {
    /// Projection matrices of the layers (split by TP; routed experts also by EP).
    pub(super) body: f64,
    /// Of `body`, the routed experts'.
    pub(super) routed: f64,
    /// The largest layer's share of `body`.
    pub(super) largest_layer: f64,
    /// Embedding table / lm_head (split by TP).
    pub(super) embed: f64,
    /// Norm scales (replicated).
    pub(super) norms: f64,
}

impl StageParams {
    pub(super) fn total(&self) -> f64 {
        self.body + self.embed + self.norms
    }
}

/// Parameters of a stage holding the layers `range`; the `first` stage holds the
/// embedding, the `last` the lm_head (a tied table on both when they differ), the final
/// norm and the `mtp` multi-token-prediction modules (each one layer of the last kind, a
/// `2·hidden → hidden` projection and its two input norms; the tables are shared).
/// Routed experts are split over `ep` expert-parallel ranks besides `tp`.
pub(super) fn stage_params(
    cfg: &ModelConfig,
    (tp, ep): (u64, u64),
    range: std::ops::Range<usize>,
    (first, last): (bool, bool),
    mtp: u64,
) -> StageParams {
    let p = cfg.params();
    let t = tp.max(1) as f64;
    let ep = ep.max(1) as f64;
    let share = |kind: &crate::model::LayerKind| {
        let routed = layers::routed_params(cfg, kind);
        (layers::layer_params(cfg, kind) - routed) + routed / ep
    };
    let mut body = layers::sum_over(cfg, range.clone(), share);
    let mut routed = layers::sum_over(cfg, range.clone(), |k| layers::routed_params(cfg, k)) / ep;
    let largest_layer = layers::max_over(cfg, range.clone(), share);
    let n = (range.end.min(cfg.layer_kinds.len())).saturating_sub(range.start) as u64;
    let norm_each = p.norms as f64 / (cfg.norms_per_layer * cfg.layers + 1) as f64;
    let mut mtp_norms = 0.0;
    if let (true, Some(&k)) = (last && mtp > 0, cfg.layer_kinds.last()) {
        let kind = &cfg.kinds[k as usize];
        let proj = 2.0 * (cfg.hidden * cfg.hidden) as f64;
        body += mtp as f64 * (share(kind) + proj);
        routed += mtp as f64 * layers::routed_params(cfg, kind) / ep;
        mtp_norms = mtp as f64 * norm_each * (cfg.norms_per_layer + 2) as f64;
    }
    let table = (cfg.vocab * cfg.hidden) as f64;
    let mut embed = 0.0;
    if first {
        embed += p.embedding as f64;
    }
    if last {
        if cfg.tied_embeddings {
            if !first {
                embed += table;
            }
        } else {
            embed += p.lm_head as f64;
        }
    }
    StageParams {
        body: body / t,
        routed: routed / t,
        largest_layer: largest_layer / t,
        embed: embed / t,
        norms: norm_each * (cfg.norms_per_layer * n) as f64
            + if last { norm_each } else { 0.0 }
            + mtp_norms,
    }
}

/// Weights, gradients and optimizer states of one stage on one device, bytes.
struct ModelStates {
    params: f64,
    grads: f64,
    optimizer: f64,
    host_optimizer: f64,
    trainable: f64,
}

/// Stored activations of one stage on one device, bytes.
struct Activations {
    total: f64,
    per_layer: f64,
    in_flight: u64,
    logits: f64,
}

impl Trainer<'_> {
    /// Trainable parameters of a stage on one device: all of them, or the adapters of
    /// its layers `range`.
    pub(super) fn trainable(&self, sp: &StageParams, range: std::ops::Range<usize>) -> f64 {
        match self.cfg.method {
            Method::Full => sp.total(),
            _ => {
                let (r, targets) = (self.cfg.effective_lora_rank(), self.cfg.lora_targets);
                let all = lora_params_in(self.model, range.clone(), r, targets);
                let local = if self.layout.ep > 1 {
                    let routed = layers::sum_over(self.model, range, |k| {
                        layers::lora_routed_of(self.model, k, r, targets)
                    });
                    all - routed + routed / self.layout.ep as f64
                } else {
                    all
                };
                local / self.layout.tp as f64
            }
        }
    }

    /// Of [`Trainer::trainable`], the routed experts' share under expert parallelism
    /// (0 without it): their ZeRO shards and gradient reductions span the `dp / ep`
    /// ranks that hold the same experts.
    pub(super) fn trainable_routed(&self, sp: &StageParams, range: std::ops::Range<usize>) -> f64 {
        let l = &self.layout;
        if l.ep <= 1 {
            return 0.0;
        }
        match self.cfg.method {
            Method::Full => sp.routed,
            _ => {
                let (r, targets) = (self.cfg.effective_lora_rank(), self.cfg.lora_targets);
                layers::sum_over(self.model, range, |k| {
                    layers::lora_routed_of(self.model, k, r, targets)
                }) / (l.ep * l.tp) as f64
            }
        }
    }

    /// The layers of a pipeline stage: the first `layers_per_stage` for the first, the
    /// last `layers_per_stage` for the last (and every later one), all with one stage.
    pub(super) fn stage_range(&self, first: bool, last: bool) -> std::ops::Range<usize> {
        let n = self.model.layer_kinds.len();
        let per = (self.layout.layers_per_stage as usize).min(n);
        // the last stage's multi-token-prediction modules take the place of layers
        let mtp = self.cfg.mtp_modules(self.model) as usize;
        match (first, last) {
            (true, true) => 0..n,
            (true, false) => 0..per,
            (false, true) => n - per.saturating_sub(mtp)..n,
            (false, false) => n - per..n,
        }
    }

    /// Parameters of a stage on one device (see [`stage_params`]).
    pub(super) fn stage(&self, first: bool, last: bool) -> StageParams {
        let l = &self.layout;
        stage_params(
            self.model,
            (l.tp, l.ep),
            self.stage_range(first, last),
            (first, last),
            self.cfg.mtp_modules(self.model),
        )
    }

    /// Frozen base weights of a stage: projections at the frozen format; embeddings,
    /// lm_head and norms at 16 bits where the format keeps them so (NF4, int8, ...).
    pub(super) fn frozen_bytes(&self, sp: &StageParams) -> f64 {
        let other = if self.frozen.keeps_embeddings_16bit() {
            2.0
        } else {
            self.frozen.bytes()
        };
        sp.body * self.frozen.bytes() + (sp.embed + sp.norms) * other
    }

    fn optimizer_bpp(&self) -> f64 {
        let factored = match (self.cfg.optimizer, self.cfg.method) {
            (Optimizer::Adafactor, Method::Full) => adafactor_factored_bytes_per_param(self.model),
            (Optimizer::Adafactor, _) => {
                // an adapter pair (d_in x r, r x d_out): rows + cols = d_in + d_out + 2r
                // over r·(d_in + d_out) parameters, about 1/r.
                4.0 / self.cfg.effective_lora_rank().max(1) as f64
            }
            _ => 0.0,
        };
        self.cfg
            .optimizer
            .state_bytes_per_param(factored, self.cfg.precision)
    }

    fn model_states(&self, sp: &StageParams, range: std::ops::Range<usize>) -> ModelStates {
        let layers = self.layout.layers_per_stage;
        // ZeRO shards over every rank that holds the same weights: the data-parallel
        // ranks and, within each, the context-parallel ones
        let dp = (self.layout.dp * self.layout.cp) as f64;
        let ep = self.layout.ep as f64;
        let trainable = self.trainable(sp, range.clone());
        let routed = self.trainable_routed(sp, range);
        let w16 = self.cfg.precision.weight_format().bytes();
        let (weights_full, frozen_bytes) = match self.cfg.method {
            Method::Full => (sp.total() * w16, 0.0),
            _ => (trainable * w16, self.frozen_bytes(sp)),
        };
        // frozen routed experts (LoRA) shard over the ranks holding the same experts
        let frozen_routed = match self.cfg.method {
            Method::Full => 0.0,
            _ if self.layout.ep > 1 => sp.routed * self.frozen.bytes(),
            _ => 0.0,
        };
        let zero = self.cfg.zero;
        let shard = |stage: u64| if zero >= stage { dp } else { 1.0 };
        let shard_e = |stage: u64| {
            if zero >= stage {
                (dp / ep).max(1.0)
            } else {
                1.0
            }
        };
        // `all` of which `part` are routed-expert bytes, sharded at ZeRO `stage`
        let sharded = |all: f64, part: f64, stage: u64| {
            if part > 0.0 {
                (all - part) / shard(stage) + part / shard_e(stage)
            } else {
                all / shard(stage)
            }
        };
        let opt = sharded(
            trainable * self.optimizer_bpp(),
            routed * self.optimizer_bpp(),
            1,
        );
        let (optimizer, host_optimizer) = match self.cfg.offload {
            Offload::None => (opt, 0.0),
            Offload::Cpu => (0.0, opt),
        };
        // with the step in the backward pass, each gradient is applied and freed as
        // soon as it is made: one layer's at a time, or in full training the embedding
        // tables' (lm_head first, the input embedding last; counted together, the
        // conservative figure), whichever is larger
        let grads = if self.cfg.optimizer_in_backward {
            let per_layer = |p: f64| p / layers.max(1) as f64;
            let largest = match (self.cfg.method, self.model.kinds.len()) {
                (Method::Full, 1) => per_layer(sp.body + sp.norms).max(sp.embed),
                (Method::Full, _) => (sp.largest_layer + per_layer(sp.norms)).max(sp.embed),
                _ => per_layer(trainable),
            };
            largest.min(trainable) * w16 / shard(2)
        } else {
            sharded(trainable * w16, routed * w16, 2)
        };
        ModelStates {
            params: sharded(weights_full + frozen_bytes, routed * w16 + frozen_routed, 3),
            grads,
            optimizer,
            host_optimizer,
            trainable,
        }
    }

    fn activations(&self, micro_batch: u64, first: bool, last: bool) -> Activations {
        let l = &self.layout;
        let m = (l.global_batch / (l.dp * micro_batch).max(1)).max(1);
        let in_flight = if first && l.pp > 1 { l.pp.min(m) } else { 1 };
        let range = self.stage_range(first, last);
        let kept = self.act_shape(micro_batch, self.cfg.recompute);
        let all = self.act_shape(micro_batch, Recompute::None);
        let of = |kind: &LayerKind, a: &ActivationShape| activation_bytes_of(self.model, kind, a);
        let stage = layers::sum_over(self.model, range.clone(), |k| of(k, &kept));
        let per_layer = match self.model.kinds[..] {
            [only] => of(&only, &kept),
            _ => stage / l.layers_per_stage.max(1) as f64,
        };
        let mut total = stage * in_flight as f64;
        // rebuilding one layer in backward holds what it did not keep (the largest
        // such layer of the stage)
        match self.cfg.recompute {
            Recompute::Full => {
                total += layers::max_over(self.model, range, |k| of(k, &all));
            }
            Recompute::Op => {
                total += layers::max_over(self.model, range, |k| of(k, &all) - of(k, &kept));
            }
            _ => {}
        }
        let e = self.precision.activations.bytes();
        // each context-parallel rank holds its `seq / cp` tokens' logits
        let tokens = (self.cfg.seq / l.cp.max(1)) as f64 * micro_batch as f64;
        // the last stage's multi-token-prediction modules: a layer's activations each and
        // logits of their own predictions
        let mtp = if last {
            self.cfg.mtp_modules(self.model)
        } else {
            0
        };
        if let (true, Some(&k)) = (mtp > 0, self.model.layer_kinds.last()) {
            total += mtp as f64 * of(&self.model.kinds[k as usize], &kept);
        }
        let logits = if last {
            (1 + mtp) as f64
                * tokens
                * self.model.vocab.div_ceil(l.tp) as f64
                * self.cfg.loss.bytes_per_logit(e)
        } else {
            0.0
        };
        Activations {
            total: total + logits,
            per_layer,
            in_flight,
            logits,
        }
    }

    /// ZeRO-3 buffers: the unsharded weights of two layers.
    fn gather_buffers(&self, sp: &StageParams) -> f64 {
        let l = &self.layout;
        if self.cfg.zero < 3 || l.dp * l.cp <= 1 || l.layers_per_stage == 0 {
            return 0.0;
        }
        let bytes = match self.cfg.method {
            Method::Full => self.cfg.precision.weight_format().bytes(),
            _ => self.frozen.bytes(),
        };
        2.0 * sp.largest_layer * bytes
    }

    /// Memory of one pipeline stage (`first`/`last` as in [`stage_params`]).
    fn stage_memory(
        &self,
        micro_batch: u64,
        first: bool,
        last: bool,
    ) -> (TrainMemory, MemoryDetail) {
        let sp = self.stage(first, last);
        let states = self.model_states(&sp, self.stage_range(first, last));
        let act = self.activations(micro_batch, first, last);
        let gather = self.gather_buffers(&sp);
        let frag = self.overhead.fragmentation * act.total;
        let overhead_bytes = self.overhead.context_bytes + frag + gather;
        let total = states.params + states.grads + states.optimizer + act.total + overhead_bytes;
        let cap = self.hardware.memory.usable_bytes();
        (
            TrainMemory {
                params_bytes: states.params,
                grads_bytes: states.grads,
                optimizer_bytes: states.optimizer,
                activations_bytes: act.total,
                overhead_bytes,
                total_bytes: total,
                capacity_bytes: cap,
                fits: total <= cap,
            },
            MemoryDetail {
                stage: match (first, last) {
                    (true, true) => "only",
                    (true, false) => "first",
                    _ => "last",
                },
                params_on_device: sp.total(),
                trainable_params_on_device: states.trainable,
                host_optimizer_bytes: states.host_optimizer,
                activations_per_layer_bytes: act.per_layer,
                micro_batches_in_flight: act.in_flight,
                logits_bytes: act.logits,
                context_bytes: self.overhead.context_bytes,
                fragmentation_bytes: frag,
                gather_buffer_bytes: gather,
                max_micro_batch: 0,
            },
        )
    }

    /// Per-device memory at `micro_batch` on the most loaded pipeline stage.
    pub fn memory_at(&self, micro_batch: u64) -> (TrainMemory, MemoryDetail) {
        if self.layout.pp == 1 {
            return self.stage_memory(micro_batch, true, true);
        }
        let a = self.stage_memory(micro_batch, true, false);
        let b = self.stage_memory(micro_batch, false, true);
        if b.0.total_bytes > a.0.total_bytes {
            b
        } else {
            a
        }
    }

    /// Per-device memory at the configured micro-batch, with the largest micro-batch
    /// that fits filled in.
    pub fn memory(&self) -> (TrainMemory, MemoryDetail) {
        let (m, mut d) = self.memory_at(self.layout.micro_batch);
        d.max_micro_batch = self.max_micro_batch();
        (m, d)
    }

    /// Largest micro-batch whose memory fits (0 when one sequence does not), searched up
    /// to 2^20 sequences; the global batch is held fixed where it allows.
    pub fn max_micro_batch(&self) -> u64 {
        crate::search::largest(1, 1 << 20, |b| self.memory_at(b).0.fits).unwrap_or(0)
    }
}
