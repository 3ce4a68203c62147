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
use crate::model::ModelConfig;
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
    let s = a.seq as f64;
    let b = a.micro_batch as f64;
    let t = a.tp.max(1) as f64;
    let e = a.act_bytes;
    let h = cfg.hidden as f64;
    let q = cfg.q_width() as f64;
    let k = cfg.kv_width() as f64;
    let i = cfg.intermediate as f64 * cfg.experts_per_token.max(1) as f64;
    let m = match (cfg.gated_mlp, a.eager) {
        (true, true) => 4.0,
        (true, false) => 3.0,
        (false, _) => 2.0,
    };
    let d = if a.dropout { 1.0 } else { 0.0 };
    let heads = cfg.heads as f64;
    let seq_split = if a.sequence_parallel { t } else { 1.0 };
    if a.recompute == Recompute::Full {
        return e * s * b * h / seq_split;
    }
    if a.recompute == Recompute::Op {
        // every second matmul output from the first (q, k, v, o, then the MLP's), split
        // by tensor parallelism where the matmul is column-parallel
        let mlp: &[(f64, bool)] = if cfg.gated_mlp {
            &[(i, true), (i, true), (h, false)]
        } else {
            &[(i, true), (h, false)]
        };
        let mut saved = 0.0;
        for (n, &(width, column)) in [(q, true), (k, true), (k, true), (h, false)]
            .iter()
            .chain(mlp)
            .enumerate()
        {
            if n % 2 == 0 {
                saved += width / if column { t } else { seq_split };
            }
        }
        let attention_out = (e * q + 4.0 * heads) / t;
        return s * b * (e * h / seq_split + e * saved + attention_out);
    }
    // replicated across TP ranks unless sequence parallel: norm inputs, qkv and up inputs,
    // dropout masks after attention and MLP.
    let norm_inputs = 2.0 * h * e;
    let replicated = s * b * (norm_inputs + e * 2.0 * h + 2.0 * d * h);
    let split = s * b * e * (2.0 * q + 2.0 * k + m * i);
    let scores = match (a.flash, a.recompute) {
        (_, Recompute::Selective) if !a.flash => 0.0,
        (true, _) => 4.0 * heads * s * b,
        (false, _) => heads * s * s * b * (e + d * (1.0 + e)),
    };
    replicated / seq_split + (split + scores) / t
}

/// Weight matrices of one MLP (one expert): 3 when gated (gate, up, down), else 2.
fn mlp_matrices(cfg: &ModelConfig) -> f64 {
    if cfg.gated_mlp { 3.0 } else { 2.0 }
}

/// Adafactor's factored second moment per parameter: `4 · Σ(rows + cols) / params` over
/// the model's weight matrices, with full (unfactored) statistics for norm vectors.
pub fn adafactor_factored_bytes_per_param(cfg: &ModelConfig) -> f64 {
    let (h, q, k, i, v) = (
        cfg.hidden as f64,
        cfg.q_width() as f64,
        cfg.kv_width() as f64,
        cfg.intermediate as f64,
        cfg.vocab as f64,
    );
    let attn = (h + q) + 2.0 * (h + k) + (q + h);
    let mlp = mlp_matrices(cfg) * (h + i) * cfg.experts as f64;
    let p = cfg.params();
    let emb = (v + h) * if cfg.tied_embeddings { 1.0 } else { 2.0 };
    let sum = cfg.layers as f64 * (attn + mlp) + emb + p.norms as f64;
    if p.total == 0 {
        0.0
    } else {
        4.0 * sum / p.total as f64
    }
}

/// LoRA adapter parameters of one layer (whole, before tensor parallelism):
/// `r · (d_in + d_out)` per adapted matrix.
pub fn lora_params_per_layer(cfg: &ModelConfig, rank: u64, targets: LoraTargets) -> f64 {
    let r = rank as f64;
    let (h, q, k, i) = (
        cfg.hidden as f64,
        cfg.q_width() as f64,
        cfg.kv_width() as f64,
        cfg.intermediate as f64,
    );
    match targets {
        LoraTargets::QueryValue => r * ((h + q) + (h + k)),
        LoraTargets::AllLinear => {
            let mlp = mlp_matrices(cfg) * (h + i) * cfg.experts as f64;
            r * ((h + q) + 2.0 * (h + k) + (q + h) + mlp)
        }
    }
}

/// The largest useful LoRA rank, the smaller dimension of the smallest matrix LoRA
/// adapts, and that matrix as `name (d_in x d_out)`: q and v projections (`h x q`,
/// `h x k`) for [`LoraTargets::QueryValue`]; with [`LoraTargets::AllLinear`] also k, o
/// and the MLP's (`h x i`).
pub fn max_lora_rank(cfg: &ModelConfig, targets: LoraTargets) -> (u64, String) {
    let (h, q, k, i) = (cfg.hidden, cfg.q_width(), cfg.kv_width(), cfg.intermediate);
    let mut adapted = vec![("q_proj", h, q), ("v_proj", h, k)];
    if targets == LoraTargets::AllLinear {
        adapted.extend([("o_proj", q, h), ("down_proj", i, h)]);
    }
    let (name, d_in, d_out) = adapted
        .into_iter()
        .min_by_key(|(_, a, b)| (*a).min(*b))
        .unwrap_or(("q_proj", h, q));
    (d_in.min(d_out), format!("{name} ({d_in} x {d_out})"))
}

/// Matrices LoRA adapts per layer: 2 for q and v; 4 attention projections plus the MLP's
/// (3 gated or 2 plain, per expert) for all-linear.
pub fn lora_matrices_per_layer(cfg: &ModelConfig, targets: LoraTargets) -> f64 {
    match targets {
        LoraTargets::QueryValue => 2.0,
        LoraTargets::AllLinear => 4.0 + mlp_matrices(cfg) * cfg.experts as f64,
    }
}

/// Parameters of one pipeline stage on one tensor-parallel rank.
#[derive(Debug, Clone, Copy, PartialEq)]
pub(super) struct StageParams {
    /// Projection matrices of the layers (split by TP).
    pub(super) body: f64,
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

/// Parameters of a stage of `layers` layers; the `first` stage holds the embedding, the
/// `last` the lm_head (a tied table on both when they differ) and the final norm.
pub(super) fn stage_params(
    cfg: &ModelConfig,
    tp: u64,
    layers: u64,
    first: bool,
    last: bool,
) -> StageParams {
    let p = cfg.params();
    let t = tp.max(1) as f64;
    let per_layer = (p.attention + p.mlp) as f64 / cfg.layers as f64;
    let norm_each = p.norms as f64 / (2 * cfg.layers + 1) as f64;
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
        body: layers as f64 * per_layer / t,
        embed: embed / t,
        norms: norm_each * (2 * layers) as f64 + if last { norm_each } else { 0.0 },
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
    /// Trainable parameters of a stage on one device: all of them, or the adapters.
    pub(super) fn trainable(&self, sp: &StageParams, layers: u64) -> f64 {
        match self.cfg.method {
            Method::Full => sp.total(),
            _ => {
                layers as f64
                    * lora_params_per_layer(
                        self.model,
                        self.cfg.effective_lora_rank(),
                        self.cfg.lora_targets,
                    )
                    / self.layout.tp as f64
            }
        }
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

    fn model_states(&self, sp: &StageParams) -> ModelStates {
        let layers = self.layout.layers_per_stage;
        let dp = self.layout.dp as f64;
        let trainable = self.trainable(sp, layers);
        let w16 = self.cfg.precision.weight_format().bytes();
        let (weights_full, frozen_bytes) = match self.cfg.method {
            Method::Full => (sp.total() * w16, 0.0),
            _ => (trainable * w16, self.frozen_bytes(sp)),
        };
        let zero = self.cfg.zero;
        let shard = |stage: u64| if zero >= stage { dp } else { 1.0 };
        let opt = trainable * self.optimizer_bpp() / shard(1);
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
            let largest = match self.cfg.method {
                Method::Full => per_layer(sp.body + sp.norms).max(sp.embed),
                _ => per_layer(trainable),
            };
            largest.min(trainable)
        } else {
            trainable
        };
        ModelStates {
            params: (weights_full + frozen_bytes) / shard(3),
            grads: grads * w16 / shard(2),
            optimizer,
            host_optimizer,
            trainable,
        }
    }

    fn activations(&self, micro_batch: u64, first: bool, last: bool) -> Activations {
        let l = &self.layout;
        let m = (l.global_batch / (l.dp * micro_batch).max(1)).max(1);
        let in_flight = if first && l.pp > 1 { l.pp.min(m) } else { 1 };
        let per_layer = activation_bytes_per_layer(
            self.model,
            &self.act_shape(micro_batch, self.cfg.recompute),
        );
        let mut total = per_layer * l.layers_per_stage as f64 * in_flight as f64;
        // rebuilding one layer in backward holds what it did not keep
        match self.cfg.recompute {
            Recompute::Full => {
                total += activation_bytes_per_layer(
                    self.model,
                    &self.act_shape(micro_batch, Recompute::None),
                );
            }
            Recompute::Op => {
                total += activation_bytes_per_layer(
                    self.model,
                    &self.act_shape(micro_batch, Recompute::None),
                ) - per_layer;
            }
            _ => {}
        }
        let e = self.precision.activations.bytes();
        let tokens = self.cfg.seq as f64 * micro_batch as f64;
        let logits = if last {
            tokens * self.model.vocab.div_ceil(l.tp) as f64 * self.cfg.loss.bytes_per_logit(e)
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
        if self.cfg.zero < 3 || l.dp <= 1 || l.layers_per_stage == 0 {
            return 0.0;
        }
        let bytes = match self.cfg.method {
            Method::Full => self.cfg.precision.weight_format().bytes(),
            _ => self.frozen.bytes(),
        };
        2.0 * (sp.body / l.layers_per_stage as f64) * bytes
    }

    /// Memory of one pipeline stage (`first`/`last` as in [`stage_params`]).
    fn stage_memory(
        &self,
        micro_batch: u64,
        first: bool,
        last: bool,
    ) -> (TrainMemory, MemoryDetail) {
        let l = &self.layout;
        let sp = stage_params(self.model, l.tp, l.layers_per_stage, first, last);
        let states = self.model_states(&sp);
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
