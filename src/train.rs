//! Training: per-device memory (model states under ZeRO 0-3, activations after
//! Korthikanti et al. 2022, framework overhead), step time on the roofline with 3D
//! parallelism, recomputation, LoRA/QLoRA and optimizer offload, tokens/s and MFU.
//!
//! # Memory per device
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
//! outputs and their product) or `2` for a plain one (activation input and output),
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
//! and fp32 log-probabilities of a fused cross-entropy).
//!
//! **Overhead** ([`FrameworkOverhead`]): a fixed CUDA context / workspace term, an
//! allocator fragmentation fraction of the activations, and with ZeRO-3 the unsharded
//! weights of two layers (the one computing and the one prefetched).
//!
//! # Step time
//!
//! One micro-batch on the slowest (last) pipeline stage: the forward operators come from
//! [`graph::forward`]; backward costs 2× the forward FLOPs for matmuls (input gradient +
//! weight gradient; only the input gradient for frozen LoRA weights) with its own bytes
//! (see [`backward_cost`]), 2.5× for fused attention (the kernel recomputes the scores),
//! 2× FLOPs and bytes for vector ops, and repeats the tensor-parallel collectives. Full
//! recomputation adds one more forward of the layers, selective the attention core. Each
//! op is placed on the roofline ([`crate::roofline::place`]) with [`TrainEfficiency`].
//! The step is
//!
//! ```text
//! t = (m + (pp-1)/v) · t_micro  +  exposed DP communication  +  optimizer update
//! ```
//!
//! for `m` micro-batches per pipeline and `v` virtual stages (interleaving); tensor-parallel
//! collectives run on the scale-up link, or on the inter-node network when a group spans
//! nodes (see [`TrainConfig::inter_node_bytes_per_s`]). A fraction (`overlap_*`) of each
//! communication is hidden behind compute, never more than the compute available.
//!
//! MFU = model FLOPs / (time × GPUs × dense peak of the matmul dtype), with model FLOPs
//! `6 · N · tokens + 12 · layers · heads·head_dim · seq · tokens` (N: parameters that
//! multiply, i.e. excluding the input-embedding lookup; attention counted over the full
//! `s × s` square as PaLM and Megatron-LM do), never counting recomputation; LoRA counts
//! `4 · N` for the frozen weights (no weight gradients) plus `6 ·` the adapters. HFU is
//! MFU scaled by the ratio of executed kernel FLOPs with and without recomputation.
//!
//! Not modelled: context and expert parallelism, the extra activations an interleaved
//! schedule keeps in flight, the CPU's own optimizer-update time under offload, power
//! capping, and framework-specific recomputation policies other than Korthikanti's.

use crate::dtype::{ComputeDtype, Format};
use crate::error::{Error, Result, require_positive};
use crate::hardware::Hardware;
use crate::model::ModelConfig;
use crate::model::graph::{self, OpKind, Precision, Step, Unit};
use crate::ops::{ByteClasses, Cost};
use crate::roofline::{Bound, Ceilings, Efficiency, place, time_at};
use serde::Serialize;

fn parse_choice<T: Copy>(kind: &'static str, s: &str, table: &[(&'static str, T)]) -> Result<T> {
    let q = s.trim().to_ascii_lowercase();
    table
        .iter()
        .find(|(n, _)| *n == q)
        .map(|(_, v)| *v)
        .ok_or_else(|| Error::unknown(kind, s, table.iter().map(|(n, _)| *n)))
}

/// What is trained.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "lowercase")]
pub enum Method {
    /// Every parameter.
    Full,
    /// Low-rank adapters on frozen 16-bit base weights.
    Lora,
    /// Low-rank adapters (bf16) on frozen NF4 (double-quantized) base weights.
    Qlora,
}

impl Method {
    /// Parses `full`, `lora` or `qlora`.
    pub fn parse(s: &str) -> Result<Self> {
        parse_choice(
            "training method (--method)",
            s,
            &[
                ("full", Method::Full),
                ("lora", Method::Lora),
                ("qlora", Method::Qlora),
            ],
        )
    }
    /// The lowercase name.
    pub fn name(self) -> &'static str {
        match self {
            Method::Full => "full",
            Method::Lora => "lora",
            Method::Qlora => "qlora",
        }
    }
}

/// Which matrices LoRA adapts.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum LoraTargets {
    /// Query and value projections (the LoRA paper's and PEFT's default).
    QueryValue,
    /// Every projection of attention and MLP.
    AllLinear,
}

/// Activation recomputation (checkpointing).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "lowercase")]
pub enum Recompute {
    /// Store every activation the backward pass needs.
    None,
    /// Recompute the attention core (Korthikanti et al.): no stored score matrix.
    Selective,
    /// Store only each layer's input; recompute the layer in backward.
    Full,
}

impl Recompute {
    /// Parses `none`, `selective` or `full`.
    pub fn parse(s: &str) -> Result<Self> {
        parse_choice(
            "recomputation (--recompute)",
            s,
            &[
                ("none", Recompute::None),
                ("selective", Recompute::Selective),
                ("full", Recompute::Full),
            ],
        )
    }
    /// The lowercase name.
    pub fn name(self) -> &'static str {
        match self {
            Recompute::None => "none",
            Recompute::Selective => "selective",
            Recompute::Full => "full",
        }
    }
}

/// Mixed-precision recipe.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "lowercase")]
pub enum TrainPrecision {
    /// bf16 weights, activations and gradients, fp32 master weights.
    Bf16,
    /// fp16 the same way (with loss scaling).
    Fp16,
    /// bf16 recipe with the linear layers' matmuls in fp8 (TransformerEngine,
    /// torchao float8): memory as bf16, matmuls at the fp8 peak.
    Fp8,
}

impl TrainPrecision {
    /// Parses `bf16`, `fp16` or `fp8`.
    pub fn parse(s: &str) -> Result<Self> {
        parse_choice(
            "training precision (--precision)",
            s,
            &[
                ("bf16", TrainPrecision::Bf16),
                ("fp16", TrainPrecision::Fp16),
                ("fp8", TrainPrecision::Fp8),
            ],
        )
    }
    /// The lowercase name.
    pub fn name(self) -> &'static str {
        match self {
            TrainPrecision::Bf16 => "bf16",
            TrainPrecision::Fp16 => "fp16",
            TrainPrecision::Fp8 => "fp8",
        }
    }
    /// Dtype of activations, 16-bit weights and gradients.
    pub fn activations(self) -> ComputeDtype {
        match self {
            TrainPrecision::Fp16 => ComputeDtype::Fp16,
            _ => ComputeDtype::Bf16,
        }
    }
    /// 16-bit storage format of weights and gradients.
    pub fn weight_format(self) -> Format {
        match self {
            TrainPrecision::Fp16 => Format::Fp16,
            _ => Format::Bf16,
        }
    }
}

/// Optimizer.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "lowercase")]
pub enum Optimizer {
    /// Adam with decoupled weight decay.
    Adamw,
    /// SGD with momentum.
    Sgd,
    /// Adafactor (factored second moment, no first moment).
    Adafactor,
}

impl Optimizer {
    /// Parses `adamw`, `sgd` or `adafactor` (`adam` is accepted for AdamW).
    pub fn parse(s: &str) -> Result<Self> {
        parse_choice(
            "optimizer (--optimizer)",
            s,
            &[
                ("adamw", Optimizer::Adamw),
                ("adam", Optimizer::Adamw),
                ("sgd", Optimizer::Sgd),
                ("adafactor", Optimizer::Adafactor),
            ],
        )
    }
    /// The lowercase name.
    pub fn name(self) -> &'static str {
        match self {
            Optimizer::Adamw => "adamw",
            Optimizer::Sgd => "sgd",
            Optimizer::Adafactor => "adafactor",
        }
    }

    /// Optimizer-state bytes per trainable parameter, fp32 master weights included:
    /// AdamW 12 (master 4 + m 4 + v 4); SGD with momentum 8 (master 4 + momentum 4);
    /// Adafactor 4 (master) plus its factored second moment, `4 · (rows + cols)` bytes
    /// per matrix, passed in as `factored_per_param` (`4 · Σ(rows + cols) / params`,
    /// see [`adafactor_factored_bytes_per_param`]).
    pub fn state_bytes_per_param(self, factored_per_param: f64) -> f64 {
        match self {
            Optimizer::Adamw => 12.0,
            Optimizer::Sgd => 8.0,
            Optimizer::Adafactor => 4.0 + factored_per_param,
        }
    }

    /// Bytes the update moves per trainable parameter in device (or host) memory:
    /// AdamW reads master, m, v and the 16-bit gradient and writes master, m, v and the
    /// 16-bit weight, 4·3 + 2 + 4·3 + 2 = 28; SGD 4·2 + 2 + 4·2 + 2 = 20; Adafactor
    /// 4 + 2 + 4 + 2 = 12 (the factored statistics are negligible).
    pub fn update_bytes_per_param(self) -> f64 {
        match self {
            Optimizer::Adamw => 28.0,
            Optimizer::Sgd => 20.0,
            Optimizer::Adafactor => 12.0,
        }
    }
}

/// Where optimizer states live.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "lowercase")]
pub enum Offload {
    /// Device memory.
    None,
    /// Host memory (ZeRO-Offload): gradients go down, updated weights come back over
    /// the host link every step.
    Cpu,
}

impl Offload {
    /// Parses `none` or `cpu`.
    pub fn parse(s: &str) -> Result<Self> {
        parse_choice(
            "offload (--offload)",
            s,
            &[("none", Offload::None), ("cpu", Offload::Cpu)],
        )
    }
    /// The lowercase name.
    pub fn name(self) -> &'static str {
        match self {
            Offload::None => "none",
            Offload::Cpu => "cpu",
        }
    }
}

/// Default inter-node network bandwidth per GPU: one 400 Gb/s InfiniBand / RoCE NIC per
/// GPU (DGX A100 and H100 layouts) = 50e9 bytes/s per direction.
pub const DEFAULT_INTER_NODE_BYTES_PER_S: f64 = 50e9;

/// Devices per node when the hardware file does not say (DGX/HGX boards hold 8).
pub const DEFAULT_DEVICES_PER_NODE: u64 = 8;

/// A training configuration (the `train` command's options).
#[derive(Debug, Clone, PartialEq)]
pub struct TrainConfig {
    /// Devices in all.
    pub gpus: u64,
    /// Tensor-parallel degree.
    pub tp: u64,
    /// Pipeline-parallel degree.
    pub pp: u64,
    /// ZeRO stage 0-3 (FSDP full shard = 3).
    pub zero: u8,
    /// Sequences per micro-batch per data-parallel rank.
    pub micro_batch: u64,
    /// Sequences per optimizer step over all ranks (`None`: `micro_batch · dp`, times
    /// `4 · pp` micro-batches when pipelining).
    pub global_batch: Option<u64>,
    /// Tokens per sequence.
    pub seq: u64,
    /// Full fine-tuning / pre-training, LoRA or QLoRA.
    pub method: Method,
    /// LoRA rank.
    pub lora_rank: u64,
    /// Matrices LoRA adapts.
    pub lora_targets: LoraTargets,
    /// Activation recomputation.
    pub recompute: Recompute,
    /// Mixed-precision recipe.
    pub precision: TrainPrecision,
    /// Optimizer.
    pub optimizer: Optimizer,
    /// Optimizer states on the host.
    pub offload: Offload,
    /// Megatron sequence parallelism alongside tensor parallelism (default on).
    pub sequence_parallel: bool,
    /// Fused (flash) attention (default on).
    pub flash: bool,
    /// The model uses dropout (1-byte masks stored); modern LLM pre-training does not.
    pub dropout: bool,
    /// Interleaved pipeline: model chunks per device (1: plain 1F1B).
    pub virtual_stages: u64,
    /// Storage format of frozen LoRA base weights (`None`: the precision's 16-bit format
    /// for LoRA, NF4 for QLoRA).
    pub frozen_format: Option<Format>,
    /// Network bandwidth per GPU between nodes, bytes/s per direction.
    pub inter_node_bytes_per_s: f64,
    /// Override of the calibrated efficiencies.
    pub efficiency: Option<TrainEfficiency>,
    /// Override of the framework memory overhead.
    pub overhead: Option<FrameworkOverhead>,
}

impl Default for TrainConfig {
    /// The CLI defaults: 1 GPU, ZeRO-0, micro-batch 1, seq 2048, full training, bf16,
    /// AdamW, no recomputation, flash attention, sequence parallel.
    fn default() -> Self {
        TrainConfig {
            gpus: 1,
            tp: 1,
            pp: 1,
            zero: 0,
            micro_batch: 1,
            global_batch: None,
            seq: 2048,
            method: Method::Full,
            lora_rank: 8,
            lora_targets: LoraTargets::QueryValue,
            recompute: Recompute::None,
            precision: TrainPrecision::Bf16,
            optimizer: Optimizer::Adamw,
            offload: Offload::None,
            sequence_parallel: true,
            flash: true,
            dropout: false,
            virtual_stages: 1,
            frozen_format: None,
            inter_node_bytes_per_s: DEFAULT_INTER_NODE_BYTES_PER_S,
            efficiency: None,
            overhead: None,
        }
    }
}

/// The validated device layout.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
pub struct Layout {
    /// Devices.
    pub gpus: u64,
    /// Tensor-parallel degree.
    pub tp: u64,
    /// Pipeline-parallel degree.
    pub pp: u64,
    /// Data-parallel degree `gpus / (tp · pp)`.
    pub dp: u64,
    /// Sequences per micro-batch.
    pub micro_batch: u64,
    /// Sequences per step.
    pub global_batch: u64,
    /// Micro-batches per step per pipeline (gradient-accumulation steps).
    pub micro_batches: u64,
    /// Layers on the most loaded stage.
    pub layers_per_stage: u64,
    /// Devices per node.
    pub devices_per_node: u64,
}

/// Efficiency factors of a training stack on one hardware generation.
#[derive(Debug, Clone, Copy, PartialEq, Serialize)]
pub struct TrainEfficiency {
    /// What the factors are for (`ampere`, `hopper`, `uncalibrated`).
    pub label: &'static str,
    /// Fraction of the dense 16-bit peak reached by compute-bound kernels.
    pub compute: f64,
    /// Fraction of the dense fp8 peak reached by fp8 matmuls.
    pub compute_fp8: f64,
    /// Fraction of the dense 16-bit peak reached by the attention core (fused kernels,
    /// forward and backward).
    pub attention: f64,
    /// Fraction of memory bandwidth reached by memory-bound kernels.
    pub memory: f64,
    /// Fraction of link bandwidth reached by collectives.
    pub link: f64,
    /// Fraction of data-parallel communication hidden behind compute.
    pub overlap_dp: f64,
    /// Fraction of tensor-parallel communication hidden behind compute.
    pub overlap_tp: f64,
}

/// A100-class (Ampere). Fitted on the ten A100 rows of kind D in
/// `shared/data/measurements.csv` (Megatron-LM GPT-3 175B and 530B, LLaMA-65B,
/// llm-foundry MPT-7B/13B/30B/70B, torchtitan Llama-2-13B and Llama-3-70B, the
/// FlashAttention GPT-3 2.7B scripts): scanning `compute` (with `attention` equal to it)
/// from 0.56 to 0.70, 0.64 minimises the median error (4.5 %; see the ignored tests
/// `calibrate_compute_fraction` and `calibrate_overlap` in `tests/train.rs`). The runs themselves span 0.60-0.74
/// of peak in hardware FLOPs (llm-foundry reports HFU 71-74 % with recomputation), so
/// single rows stay within about ±15 %. A100 has no fp8 units; `compute_fp8` is unused.
pub const AMPERE: TrainEfficiency = TrainEfficiency {
    label: "ampere",
    compute: 0.64,
    compute_fp8: 0.64,
    attention: 0.64,
    memory: 0.8,
    link: 0.8,
    overlap_dp: 0.8,
    overlap_tp: 0.0,
};

/// H100/H200 (Hopper). Fitted on the six H100 rows of kind D (Llama 3 405B on 16K
/// GPUs, Megatron-LM GPT-3 175B on 96, torchtitan Llama-3.1-8B bf16 and float8 and
/// Llama-3.1-70B float8, llm-foundry MPT-3B fp8): 16-bit matmuls at 0.56 of the dense
/// peak, fp8 matmuls at 0.30 of the fp8 peak (fp8 training gains only 1.1-1.3x over
/// bf16 in those runs). Median error 7 %. A separate attention fraction did not improve
/// the fit, so it equals `compute`.
///
/// Overlap (both generations): scanning 0-1 over all sixteen rows, hiding 50-90 % of the
/// data-parallel traffic fits equally well (median 4.5-5 %), 0.8 is used; tensor-parallel
/// collectives are not overlapped (0; 0.25-0.5 fits no better, and none of the runs used
/// asynchronous TP).
pub const HOPPER: TrainEfficiency = TrainEfficiency {
    label: "hopper",
    compute: 0.56,
    compute_fp8: 0.30,
    attention: 0.56,
    memory: 0.8,
    link: 0.8,
    overlap_dp: 0.8,
    overlap_tp: 0.0,
};

/// Devices without training measurements: the Hopper fractions, which are the lower of
/// the two calibrated generations (an estimate, flagged as `uncalibrated` in reports).
pub const UNCALIBRATED: TrainEfficiency = TrainEfficiency {
    label: "uncalibrated",
    ..HOPPER
};

impl TrainEfficiency {
    /// The calibrated factors for `hw`'s generation: A100-class (Ampere) or H100/H200
    /// (Hopper); Blackwell (B200, GB200) uses the Hopper factors until measured;
    /// everything else [`UNCALIBRATED`].
    pub fn for_hardware(hw: &Hardware) -> TrainEfficiency {
        let id = hw.id.as_str();
        if hw.vendor.eq_ignore_ascii_case("nvidia") {
            if id.starts_with("a100") || id.starts_with("a10") || id.starts_with("a40") {
                return AMPERE;
            }
            if id.starts_with("h100") || id.starts_with("h200") || id.starts_with("gh200") {
                return HOPPER;
            }
            if id.starts_with("b200") || id.starts_with("gb200") || id.starts_with("b100") {
                return TrainEfficiency {
                    label: "blackwell (hopper factors)",
                    ..HOPPER
                };
            }
        }
        UNCALIBRATED
    }

    /// Compute fraction for matmuls in `dtype`.
    pub fn compute_for(&self, dtype: ComputeDtype) -> f64 {
        match dtype {
            ComputeDtype::Fp8 | ComputeDtype::Int8 | ComputeDtype::Fp4 | ComputeDtype::Int4 => {
                self.compute_fp8
            }
            _ => self.compute,
        }
    }

    fn validate(&self) -> Result<()> {
        for (f, v) in [
            ("efficiency.compute", self.compute),
            ("efficiency.compute_fp8", self.compute_fp8),
            ("efficiency.attention", self.attention),
            ("efficiency.memory", self.memory),
            ("efficiency.link", self.link),
        ] {
            if !(v.is_finite() && v > 0.0 && v <= 1.0) {
                return Err(Error::invalid(f, format!("must be in (0, 1], got {v}")));
            }
        }
        for (f, v) in [
            ("efficiency.overlap_dp", self.overlap_dp),
            ("efficiency.overlap_tp", self.overlap_tp),
        ] {
            if !(v.is_finite() && (0.0..=1.0).contains(&v)) {
                return Err(Error::invalid(f, format!("must be in [0, 1], got {v}")));
            }
        }
        Ok(())
    }
}

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

/// The `memory` object of `train --json`.
#[derive(Debug, Clone, Copy, PartialEq, Serialize)]
pub struct MemoryReport {
    /// The contract keys.
    #[serde(flatten)]
    pub inner: TrainMemory,
    /// Added detail.
    #[serde(flatten)]
    pub detail: MemoryDetail,
}

/// The `step` object of `train --json`.
#[derive(Debug, Clone, Copy, PartialEq, Serialize)]
pub struct StepReport {
    /// Model FLOPs of one optimizer step over all devices (the MFU numerator).
    pub flops: f64,
    /// Predicted time of one optimizer step, s.
    pub time_s: f64,
    /// Tokens trained per second, all devices.
    pub tokens_per_s: f64,
    /// Tokens per second per device.
    pub tokens_per_s_per_gpu: f64,
    /// Model FLOPs utilization (recomputation not counted). Attention is counted over
    /// the full `s × s` square (the PaLM / Megatron-LM convention the published MFUs use),
    /// about twice what a causal fused kernel executes, so at very long sequences, where
    /// attention dominates, MFU can exceed the executed-FLOP utilization (and even 1).
    pub mfu: f64,
    /// The bound that accounts for most of the step time.
    pub bound: Bound,
    /// Model FLOPs plus the recomputed forward work, counted the same way (MFU's
    /// convention): `flops · executed / (executed - recomputed)` kernel FLOPs.
    pub hardware_flops: f64,
    /// Hardware FLOPs utilization (`hardware_flops` over time × GPUs × peak).
    pub hfu: f64,
    /// FLOPs the kernels execute per step over all devices (causal-half attention,
    /// 2.5x fused-attention backward, recomputation), from the slowest stage.
    pub executed_flops: f64,
    /// Model FLOP/s achieved per device.
    pub model_flops_per_s_per_gpu: f64,
    /// Dense peak the utilizations are relative to, FLOP/s per device.
    pub peak_flops_per_s: f64,
    /// Tokens per step.
    pub tokens: f64,
    /// Time of one micro-batch (forward, backward, recomputation, exposed TP
    /// communication) on the slowest stage, s.
    pub micro_batch_time_s: f64,
    /// Of the step: compute-bound op time, s.
    pub compute_time_s: f64,
    /// Of the step: memory-bound op time (optimizer update included), s.
    pub memory_time_s: f64,
    /// Tensor-parallel collective time per step before overlap, s.
    pub tp_comm_time_s: f64,
    /// Data-parallel (gradient, ZeRO) communication per step before overlap, s.
    pub dp_comm_time_s: f64,
    /// Pipeline sends per step, s.
    pub pp_comm_time_s: f64,
    /// Communication time not hidden by compute, s.
    pub exposed_comm_time_s: f64,
    /// Pipeline bubble `(pp-1)/v · t_micro`, s.
    pub bubble_time_s: f64,
    /// Optimizer update on the device, s.
    pub optimizer_time_s: f64,
    /// Gradient / weight traffic over the host link with offload, s.
    pub offload_time_s: f64,
    /// Bubble fraction `(p-1)/v / (m + (p-1)/v)`.
    pub bubble_fraction: f64,
}

/// `model` of the report.
#[derive(Debug, Clone, Serialize)]
pub struct ModelInfo {
    /// Model id.
    pub id: String,
    /// Human name.
    pub name: String,
    /// Total parameters.
    pub params: u64,
    /// Trainable parameters (all, or the LoRA adapters).
    pub trainable_params: f64,
}

/// `hardware` of the report.
#[derive(Debug, Clone, Serialize)]
pub struct HardwareInfo {
    /// Device id.
    pub id: String,
    /// Device name.
    pub name: String,
    /// Devices.
    pub count: u64,
    /// Devices per node used for link selection.
    pub devices_per_node: u64,
}

/// `config` of the report: the options as understood.
#[derive(Debug, Clone, Serialize)]
pub struct ConfigEcho {
    /// Sequence length.
    pub seq: u64,
    /// ZeRO stage.
    pub zero: u8,
    /// Method.
    pub method: Method,
    /// LoRA rank (0 for full training).
    pub lora_rank: u64,
    /// Recomputation.
    pub recompute: Recompute,
    /// Precision.
    pub precision: TrainPrecision,
    /// Optimizer.
    pub optimizer: Optimizer,
    /// Offload.
    pub offload: Offload,
    /// Sequence parallelism in use.
    pub sequence_parallel: bool,
    /// Fused attention.
    pub flash: bool,
    /// Virtual pipeline stages.
    pub virtual_stages: u64,
    /// Inter-node bandwidth per GPU, bytes/s.
    pub inter_node_bytes_per_s: f64,
}

/// The `train --json` document.
#[derive(Debug, Clone, Serialize)]
pub struct TrainReport {
    /// Model.
    pub model: ModelInfo,
    /// Hardware.
    pub hardware: HardwareInfo,
    /// Options.
    pub config: ConfigEcho,
    /// Device layout.
    pub layout: Layout,
    /// Per-device memory.
    pub memory: MemoryReport,
    /// One optimizer step.
    pub step: StepReport,
    /// Efficiency factors used.
    pub efficiency: TrainEfficiency,
    /// Caveats.
    pub notes: Vec<String>,
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
}

/// Stored activation bytes of one transformer layer for one micro-batch on one device,
/// by the formula in the [module docs](self):
/// `s·b·[e·(4h + 2q + 2k + m·i) + 2dh] + scores`, divided by `t` under tensor +
/// sequence parallelism; `selective` drops the scores; `full` keeps `e·s·b·h` (the layer
/// input) only.
///
/// ```
/// use ridgeline::model::ModelDb;
/// use ridgeline::train::{activation_bytes_per_layer, ActivationShape, Recompute};
/// // GPT-3 175B, s = 2048, b = 1, dropout, no flash: s·b·h·(34 + 5·a·s/h)
/// // = 2048·12288·(34 + 5·96·2048/12288) = 25,165,824 · 114 = 2,868,903,936 bytes.
/// let m = ModelDb::builtin().unwrap().resolve("gpt3-175b").unwrap();
/// let shape = ActivationShape { seq: 2048, micro_batch: 1, tp: 1, sequence_parallel: true,
///     flash: false, dropout: true, recompute: Recompute::None, act_bytes: 2.0 };
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
    let m = if cfg.gated_mlp { 3.0 } else { 2.0 };
    let d = if a.dropout { 1.0 } else { 0.0 };
    let heads = cfg.heads as f64;
    if a.recompute == Recompute::Full {
        let input = e * s * b * h;
        return if a.sequence_parallel {
            input / t
        } else {
            input
        };
    }
    // replicated across TP ranks unless sequence parallel: norm inputs, qkv and up inputs,
    // dropout masks after attention and MLP.
    let replicated = s * b * (e * 4.0 * h + 2.0 * d * h);
    let split = s * b * e * (2.0 * q + 2.0 * k + m * i);
    let scores = match (a.flash, a.recompute) {
        (_, Recompute::Selective) if !a.flash => 0.0,
        (true, _) => 4.0 * heads * s * b,
        (false, _) => heads * s * s * b * (e + d * (1.0 + e)),
    };
    let rep = if a.sequence_parallel {
        replicated / t
    } else {
        replicated
    };
    rep + (split + scores) / t
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
    let mlp = if cfg.gated_mlp { 3.0 } else { 2.0 } * (h + i) * cfg.experts as f64;
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
            let mlp = if cfg.gated_mlp { 3.0 } else { 2.0 } * (h + i) * cfg.experts as f64;
            r * ((h + q) + 2.0 * (h + k) + (q + h) + mlp)
        }
    }
}

/// Matrices LoRA adapts per layer: 2 for q and v; 4 attention projections plus the MLP's
/// (3 gated or 2 plain, per expert) for all-linear.
pub fn lora_matrices_per_layer(cfg: &ModelConfig, targets: LoraTargets) -> f64 {
    match targets {
        LoraTargets::QueryValue => 2.0,
        LoraTargets::AllLinear => 4.0 + if cfg.gated_mlp { 3.0 } else { 2.0 } * cfg.experts as f64,
    }
}

/// Parameters of one pipeline stage on one tensor-parallel rank.
#[derive(Debug, Clone, Copy, PartialEq)]
struct StageParams {
    /// Projection matrices of the layers (split by TP).
    body: f64,
    /// Embedding table / lm_head (split by TP).
    embed: f64,
    /// Norm scales (replicated).
    norms: f64,
}

impl StageParams {
    fn total(&self) -> f64 {
        self.body + self.embed + self.norms
    }
}

fn stage_params(cfg: &ModelConfig, tp: u64, layers: u64, first: bool, last: bool) -> StageParams {
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

/// Which efficiency and link an op of the training step uses.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum KernelClass {
    /// Attention core (fused kernel or the naive score/value matmuls).
    Attention,
    /// A tensor-parallel collective.
    Collective,
    /// Everything else (projections, norms, elementwise).
    Other,
}

/// Evaluates one training configuration on one model and device.
#[derive(Debug, Clone)]
pub struct Trainer<'a> {
    /// The model.
    pub model: &'a ModelConfig,
    /// The device.
    pub hardware: &'a Hardware,
    cfg: TrainConfig,
    layout: Layout,
    eff: TrainEfficiency,
    overhead: FrameworkOverhead,
    precision: Precision,
    frozen: Format,
    notes: Vec<String>,
}

fn positive_u64(field: &str, v: u64) -> Result<u64> {
    if v == 0 {
        Err(Error::invalid(field, "must be at least 1"))
    } else {
        Ok(v)
    }
}

impl<'a> Trainer<'a> {
    /// Validates the configuration against the model and device.
    ///
    /// Errors ([`Error::InvalidValue`] or [`Error::Conflict`], naming the options):
    /// zero sizes, ZeRO stage above 3, `tp · pp` not dividing `gpus`, `tp` not
    /// dividing the attention heads (or KV heads), more stages than layers, a global
    /// batch that is not a multiple of `micro_batch · dp`, LoRA rank 0, non-finite or
    /// non-positive bandwidths, offload without a host link.
    pub fn new(model: &'a ModelConfig, hardware: &'a Hardware, cfg: &TrainConfig) -> Result<Self> {
        let gpus = positive_u64("gpus", cfg.gpus)?;
        let tp = positive_u64("tp", cfg.tp)?;
        let pp = positive_u64("pp", cfg.pp)?;
        let mb = positive_u64("micro_batch", cfg.micro_batch)?;
        let seq = positive_u64("seq", cfg.seq)?;
        let v = positive_u64("virtual_stages", cfg.virtual_stages)?;
        if gpus > 10_000_000 {
            return Err(Error::invalid(
                "gpus",
                format!("{gpus} devices is beyond any layout ridgeline models"),
            ));
        }
        if cfg.zero > 3 {
            return Err(Error::invalid(
                "zero",
                format!(
                    "ZeRO stage {} does not exist; stages are 0, 1, 2, 3",
                    cfg.zero
                ),
            ));
        }
        if seq > 100_000_000 || mb > 100_000_000 {
            return Err(Error::invalid(
                if seq > 100_000_000 {
                    "seq"
                } else {
                    "micro_batch"
                },
                "sizes beyond 1e8 are not modelled",
            ));
        }
        require_positive("inter_node_bytes_per_s", cfg.inter_node_bytes_per_s)?;
        let tp_pp = tp.saturating_mul(pp);
        if !gpus.is_multiple_of(tp_pp) {
            return Err(Error::conflict(
                &["tp", "pp", "gpus"],
                format!(
                    "tp {tp} x pp {pp} = {tp_pp} does not divide gpus {gpus}: tp x pp x dp must equal the number of GPUs"
                ),
            ));
        }
        let dp = gpus / tp_pp;
        if !model.heads.is_multiple_of(tp) {
            return Err(Error::conflict(
                &["tp"],
                format!(
                    "tp {tp} does not divide {}'s {} attention heads (num_attention_heads)",
                    model.id, model.heads
                ),
            ));
        }
        if !(model.kv_heads.is_multiple_of(tp) || tp.is_multiple_of(model.kv_heads)) {
            return Err(Error::conflict(
                &["tp"],
                format!(
                    "tp {tp} neither divides nor is a multiple of {}'s {} key/value heads (num_key_value_heads)",
                    model.id, model.kv_heads
                ),
            ));
        }
        if pp > model.layers {
            return Err(Error::conflict(
                &["pp"],
                format!("pp {pp} exceeds {}'s {} layers", model.id, model.layers),
            ));
        }
        if v > 1 && pp == 1 {
            return Err(Error::conflict(
                &["virtual_stages", "pp"],
                "virtual pipeline stages need pp > 1",
            ));
        }
        let per_step = mb.saturating_mul(dp);
        let global = match cfg.global_batch {
            Some(0) => return Err(Error::invalid("global_batch", "must be at least 1")),
            Some(g) => g,
            None => per_step.saturating_mul(if pp > 1 { 4 * pp } else { 1 }),
        };
        if global < per_step {
            return Err(Error::conflict(
                &["micro_batch", "global_batch"],
                format!(
                    "micro_batch {mb} is larger than global_batch {global} / dp {dp} = {}",
                    global / dp
                ),
            ));
        }
        if !global.is_multiple_of(per_step) {
            return Err(Error::conflict(
                &["global_batch", "micro_batch"],
                format!(
                    "global_batch {global} is not a multiple of micro_batch {mb} x dp {dp} = {per_step}"
                ),
            ));
        }
        if cfg.method != Method::Full {
            positive_u64("lora_rank", cfg.lora_rank)?;
        }
        if cfg.offload == Offload::Cpu && hardware.host_link.is_none() {
            return Err(Error::conflict(
                &["offload", "gpu"],
                format!(
                    "offloading to the CPU needs a host link, and {} has none in the database",
                    hardware.id
                ),
            ));
        }
        if gpus > 1 && hardware.device_link().is_none() {
            return Err(Error::conflict(
                &["gpu", "gpus"],
                format!(
                    "{} has no host or scale-up link in the database, so it cannot be used with {gpus} devices",
                    hardware.id
                ),
            ));
        }
        let eff = cfg
            .efficiency
            .unwrap_or_else(|| TrainEfficiency::for_hardware(hardware));
        eff.validate()?;
        let overhead = cfg.overhead.unwrap_or(DEFAULT_OVERHEAD);
        crate::error::require_non_negative("overhead.context_bytes", overhead.context_bytes)?;
        crate::error::require_non_negative("overhead.fragmentation", overhead.fragmentation)?;

        let mut notes = Vec::new();
        let act = cfg.precision.activations();
        let mut matmul_format = match cfg.precision {
            TrainPrecision::Fp8 => Format::Fp8,
            p => p.weight_format(),
        };
        if cfg.precision == TrainPrecision::Fp8 && hardware.peak_flops_per_s.fp8.is_none() {
            notes.push(format!(
                "{} has no fp8 tensor cores: matmuls are costed in bf16",
                hardware.id
            ));
            matmul_format = Format::Bf16;
        }
        let frozen = match (cfg.method, cfg.frozen_format) {
            (Method::Full, _) => cfg.precision.weight_format(),
            (_, Some(f)) => f,
            (Method::Lora, None) => cfg.precision.weight_format(),
            (Method::Qlora, None) => Format::Nf4,
        };
        let weights = match cfg.method {
            Method::Full => matmul_format,
            _ => {
                if cfg.precision == TrainPrecision::Fp8 {
                    notes.push("LoRA/QLoRA matmuls run at 16-bit on the frozen weights".into());
                }
                frozen
            }
        };
        if seq > model.max_context {
            notes.push(format!(
                "seq {seq} exceeds the model's trained context of {} tokens",
                model.max_context
            ));
        }
        let devices_per_node = hardware
            .devices_per_node
            .map_or(DEFAULT_DEVICES_PER_NODE, |d| (d as u64).max(1));
        let sp = cfg.sequence_parallel && tp > 1;
        let layout = Layout {
            gpus,
            tp,
            pp,
            dp,
            micro_batch: mb,
            global_batch: global,
            micro_batches: global / per_step,
            layers_per_stage: model.layers.div_ceil(pp),
            devices_per_node,
        };
        Ok(Trainer {
            model,
            hardware,
            cfg: TrainConfig {
                sequence_parallel: sp,
                ..cfg.clone()
            },
            layout,
            eff,
            overhead,
            precision: Precision {
                weights,
                kv: Format::parse(act.name()).unwrap_or(Format::Bf16),
                activations: act,
            },
            frozen,
            notes,
        })
    }

    /// The validated layout.
    pub fn layout(&self) -> &Layout {
        &self.layout
    }

    /// The efficiency factors in use.
    pub fn efficiency(&self) -> &TrainEfficiency {
        &self.eff
    }

    fn act_shape(&self, micro_batch: u64, recompute: Recompute) -> ActivationShape {
        ActivationShape {
            seq: self.cfg.seq,
            micro_batch,
            tp: self.layout.tp,
            sequence_parallel: self.cfg.sequence_parallel,
            flash: self.cfg.flash,
            dropout: self.cfg.dropout,
            recompute,
            act_bytes: self.precision.activations.bytes(),
        }
    }

    fn trainable(&self, sp: &StageParams, layers: u64) -> f64 {
        match self.cfg.method {
            Method::Full => sp.total(),
            _ => {
                layers as f64
                    * lora_params_per_layer(self.model, self.cfg.lora_rank, self.cfg.lora_targets)
                    / self.layout.tp as f64
            }
        }
    }

    /// Frozen base weights of a stage: projections at the frozen format; embeddings,
    /// lm_head and norms at 16 bits where the format keeps them so (NF4, int8, ...).
    fn frozen_bytes(&self, sp: &StageParams) -> f64 {
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
                4.0 / self.cfg.lora_rank.max(1) as f64
            }
            _ => 0.0,
        };
        self.cfg.optimizer.state_bytes_per_param(factored)
    }

    /// Memory of one pipeline stage (`first`/`last` as in [`stage_params`]).
    fn stage_memory(
        &self,
        micro_batch: u64,
        first: bool,
        last: bool,
    ) -> (TrainMemory, MemoryDetail) {
        let l = &self.layout;
        let layers = l.layers_per_stage;
        let sp = stage_params(self.model, l.tp, layers, first, last);
        let dp = l.dp as f64;
        let trainable = self.trainable(&sp, layers);
        let w16 = self.cfg.precision.weight_format().bytes();
        let (weights_full, frozen_bytes) = match self.cfg.method {
            Method::Full => (sp.total() * w16, 0.0),
            _ => (trainable * w16, self.frozen_bytes(&sp)),
        };
        let zero = self.cfg.zero;
        let params_bytes = (weights_full + frozen_bytes) / if zero >= 3 { dp } else { 1.0 };
        let grads_bytes = trainable * w16 / if zero >= 2 { dp } else { 1.0 };
        let opt = trainable * self.optimizer_bpp() / if zero >= 1 { dp } else { 1.0 };
        let (optimizer_bytes, host_optimizer_bytes) = match self.cfg.offload {
            Offload::None => (opt, 0.0),
            Offload::Cpu => (0.0, opt),
        };

        // activations
        let m = (l.global_batch / (l.dp * micro_batch).max(1)).max(1);
        let in_flight = if first && l.pp > 1 { l.pp.min(m) } else { 1 };
        let per_layer = activation_bytes_per_layer(
            self.model,
            &self.act_shape(micro_batch, self.cfg.recompute),
        );
        let mut act = per_layer * layers as f64 * in_flight as f64;
        if self.cfg.recompute == Recompute::Full {
            act += activation_bytes_per_layer(
                self.model,
                &self.act_shape(micro_batch, Recompute::None),
            );
        }
        let e = self.precision.activations.bytes();
        let tokens = self.cfg.seq as f64 * micro_batch as f64;
        let logits_bytes = if last {
            tokens * self.model.vocab.div_ceil(l.tp) as f64 * (e + 4.0)
        } else {
            0.0
        };
        act += logits_bytes;

        let gather = if zero >= 3 && l.dp > 1 {
            let layer_weights = if layers > 0 {
                sp.body / layers as f64
            } else {
                0.0
            };
            let bytes = match self.cfg.method {
                Method::Full => w16,
                _ => self.frozen.bytes(),
            };
            2.0 * layer_weights * bytes
        } else {
            0.0
        };
        let frag = self.overhead.fragmentation * act;
        let overhead_bytes = self.overhead.context_bytes + frag + gather;
        let total = params_bytes + grads_bytes + optimizer_bytes + act + overhead_bytes;
        let cap = self.hardware.memory.capacity_bytes;
        (
            TrainMemory {
                params_bytes,
                grads_bytes,
                optimizer_bytes,
                activations_bytes: act,
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
                trainable_params_on_device: trainable,
                host_optimizer_bytes,
                activations_per_layer_bytes: per_layer,
                micro_batches_in_flight: in_flight,
                logits_bytes,
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

    /// Effective per-GPU bandwidth of a collective over a group of `size` ranks spaced
    /// `stride` apart: the scale-up link inside a node; across nodes, the `g` members of
    /// the group in each node drive `g` NICs in parallel rings, so the rate is
    /// `min(scale-up, g · inter_node)`.
    fn group_bandwidth(&self, size: u64, stride: u64) -> (f64, bool) {
        let node = self.layout.devices_per_node;
        let scaleup = self
            .hardware
            .device_link()
            .map_or(0.0, |l| l.bytes_per_s_per_direction);
        let span = size.saturating_mul(stride);
        if span <= node {
            return (scaleup, false);
        }
        let g = (node / stride.max(1)).clamp(1, size) as f64;
        let net = g * self.cfg.inter_node_bytes_per_s;
        (if scaleup > 0.0 { scaleup.min(net) } else { net }, true)
    }

    /// Ops of one micro-batch on the slowest (last) stage, each as (cost of all its
    /// executions, unit, kind, whether it is recomputation).
    fn micro_batch_ops(&self) -> Vec<(Cost, Unit, KernelClass, bool)> {
        let l = &self.layout;
        let step = Step {
            batch: l.micro_batch,
            new_tokens: self.cfg.seq,
            context: self.cfg.seq,
            logits_per_sequence: self.cfg.seq,
        };
        let g = graph::forward(
            self.model,
            &step,
            &self.precision,
            l.tp,
            self.cfg.flash,
            l.layers_per_stage,
        );
        let frozen = self.cfg.method != Method::Full;
        let sp_div = if self.cfg.sequence_parallel {
            l.tp as f64
        } else {
            1.0
        };
        let w_bits = self.precision.weights.bits();
        let grad_bits = self.cfg.precision.weight_format().bits();
        let mut out = Vec::with_capacity(3 * g.ops().len() + 4);
        for op in g.ops() {
            let mut fwd = op.total();
            let is_comm = op.cost.link_bytes > 0.0;
            let kind = if is_comm {
                KernelClass::Collective
            } else if op.kind.is_attention_matmul() {
                KernelClass::Attention
            } else {
                KernelClass::Other
            };
            let per_layer = op.count > 1.0 || l.layers_per_stage == 1;
            if self.cfg.sequence_parallel && op.kind.is_norm_or_residual() {
                fwd = fwd.times(1.0 / sp_div);
            }
            let bwd = match (op.kind, op.unit) {
                (k, _) if frozen && k.is_embedding() => Cost::default(),
                (OpKind::Attention, _) => scale(fwd, 2.5, 2.0),
                (OpKind::AttnScores | OpKind::AttnValues, _) => fwd.times(2.0),
                (_, Unit::Matrix(_)) => backward_cost(&fwd, w_bits, grad_bits, frozen),
                _ if is_comm => fwd,
                _ => fwd.times(2.0),
            };
            out.push((fwd, op.unit, kind, false));
            out.push((bwd, op.unit, kind, false));
            let recompute = match self.cfg.recompute {
                Recompute::None => false,
                Recompute::Selective => op.kind.is_attention_core(),
                Recompute::Full => per_layer && !op.kind.is_outside_layers(),
            };
            if recompute {
                out.push((fwd, op.unit, kind, true));
            }
        }
        if frozen {
            let tokens = l.micro_batch as f64 * self.cfg.seq as f64;
            let layers = l.layers_per_stage as f64;
            let adapters = layers
                * lora_params_per_layer(self.model, self.cfg.lora_rank, self.cfg.lora_targets)
                / l.tp as f64;
            let r = self.cfg.lora_rank as f64;
            // y += (x·A)·B for every adapted matrix: 2·tokens·adapter params FLOPs; reads
            // x (d_in) and the rank-r bottleneck, writes the bottleneck and y (d_out), at
            // 16 bits; adapters read once. Σ(d_in + d_out) = adapter params / r.
            let e = self.precision.activations.bytes();
            let io = if r > 0.0 { adapters / r } else { 0.0 };
            let bottleneck =
                layers * lora_matrices_per_layer(self.model, self.cfg.lora_targets) * r;
            let fwd = Cost {
                flops: 2.0 * tokens * adapters,
                read: ByteClasses {
                    weights: adapters * 2.0,
                    activations: tokens * (io / 2.0 + bottleneck) * e,
                    kv: 0.0,
                },
                written: ByteClasses {
                    activations: tokens * (io / 2.0 + bottleneck) * e,
                    ..Default::default()
                },
                link_bytes: 0.0,
            };
            let unit = Unit::Matrix(self.precision.activations);
            out.push((fwd, unit, KernelClass::Other, false));
            out.push((fwd.times(2.0), unit, KernelClass::Other, false));
            if self.frozen.bits() < 16.0 {
                // dequantize the frozen matrices to 16 bits before each forward and
                // backward matmul: read the packed weights, write 16-bit copies.
                let body = stage_params(self.model, l.tp, l.layers_per_stage, false, false).body;
                let dq = Cost {
                    read: ByteClasses {
                        weights: body * self.frozen.bytes(),
                        ..Default::default()
                    },
                    written: ByteClasses {
                        weights: body * 2.0,
                        ..Default::default()
                    },
                    ..Default::default()
                };
                let times = if self.cfg.recompute == Recompute::Full {
                    3.0
                } else {
                    2.0
                };
                out.push((dq.times(times), Unit::Vector, KernelClass::Other, false));
            }
        }
        out
    }

    /// Model FLOPs of one step over all devices: `6·N·tokens` (LoRA: `4·N_frozen +
    /// 6·N_adapters`) plus `12 · layers · heads·head_dim · seq` per token.
    pub fn model_flops(&self) -> f64 {
        let p = self.model.params();
        let table_lookup = p.embedding as f64
            - if self.model.tied_embeddings {
                (self.model.vocab * self.model.hidden) as f64
            } else {
                0.0
            };
        let expert_inactive = self.model.layers as f64
            * self.model.expert_params() as f64
            * (self.model.experts - self.model.experts_per_token) as f64;
        let n = p.total as f64 - table_lookup - expert_inactive;
        let tokens = self.layout.global_batch as f64 * self.cfg.seq as f64;
        let attn =
            12.0 * self.model.layers as f64 * self.model.q_width() as f64 * self.cfg.seq as f64;
        let dense = match self.cfg.method {
            Method::Full => 6.0 * n,
            _ => {
                4.0 * n
                    + 6.0
                        * self.model.layers as f64
                        * lora_params_per_layer(
                            self.model,
                            self.cfg.lora_rank,
                            self.cfg.lora_targets,
                        )
            }
        };
        tokens * (dense + attn)
    }

    /// Predicts one optimizer step.
    pub fn step(&self) -> StepReport {
        let l = &self.layout;
        let hw = self.hardware;
        let bw = hw.memory.bandwidth_bytes_per_s;
        let (tp_bw, _) = self.group_bandwidth(l.tp, 1);
        let (dp_bw, _) = self.group_bandwidth(l.dp, l.tp);
        let vector = Ceilings {
            peak_flops_per_s: hw.peak(ComputeDtype::Fp32).0,
            memory_bytes_per_s: bw,
            link_bytes_per_s: Some(tp_bw),
        };
        let base_eff = Efficiency {
            compute: self.eff.compute,
            memory: self.eff.memory,
            link: self.eff.link,
            overhead_s: 0.0,
        };
        // per micro-batch
        let (mut c_t, mut m_t, mut tp_t, mut hw_flops, mut re_flops) = (0.0, 0.0, 0.0, 0.0, 0.0);
        for (cost, unit, kind, is_recompute) in self.micro_batch_ops() {
            let (ceil, eff) = match unit {
                Unit::Matrix(d) => (
                    Ceilings {
                        peak_flops_per_s: hw.peak(d).0,
                        memory_bytes_per_s: bw,
                        link_bytes_per_s: None,
                    },
                    Efficiency {
                        compute: if kind == KernelClass::Attention {
                            self.eff.attention
                        } else {
                            self.eff.compute_for(d)
                        },
                        ..base_eff
                    },
                ),
                Unit::Vector => (vector, base_eff),
            };
            hw_flops += cost.flops;
            if is_recompute {
                re_flops += cost.flops;
            }
            let p = place(&cost, &ceil, &eff);
            if kind == KernelClass::Collective {
                tp_t += p.time_s;
            } else if p.bound == Bound::Compute {
                c_t += p.time_s;
            } else {
                m_t += p.time_s;
            }
        }
        let op_t = c_t + m_t;
        let tp_exposed = tp_t - (self.eff.overlap_tp * tp_t).min(op_t);
        let t_micro = op_t + tp_exposed;
        let m = l.micro_batches as f64;
        let v = self.cfg.virtual_stages as f64;
        let bubble_mb = (l.pp - 1) as f64 / v;
        let bubble = bubble_mb * t_micro;
        let bubble_fraction = bubble_mb / (m + bubble_mb);

        // pipeline sends: activations (and their gradients) of one micro-batch cross each
        // stage boundary; the slowest stage sends one way and receives the other.
        let e = self.precision.activations.bytes();
        let (pp_bw, _) = self.group_bandwidth(l.pp, l.tp * l.dp);
        let pp_bytes = if l.pp > 1 {
            2.0 * l.micro_batch as f64 * self.cfg.seq as f64 * self.model.hidden as f64 * e
                / l.tp as f64
                * v
        } else {
            0.0
        };
        let pp_t = m * time_at(pp_bytes, pp_bw * self.eff.link);

        // data-parallel gradient synchronisation / ZeRO traffic per step
        let sp = stage_params(self.model, l.tp, l.layers_per_stage, l.pp == 1, true);
        let trainable = self.trainable(&sp, l.layers_per_stage);
        let grad_b = self.cfg.precision.weight_format().bytes();
        let frozen_bytes = match self.cfg.method {
            Method::Full => 0.0,
            _ => self.frozen_bytes(&sp),
        };
        let n = l.dp as f64;
        let ring = if l.dp > 1 { (n - 1.0) / n } else { 0.0 };
        let (dp_bytes, overlappable) = if self.cfg.zero >= 3 {
            // per micro-batch: all-gather weights for forward and again for backward,
            // reduce-scatter gradients.
            let w = trainable * grad_b + frozen_bytes;
            (m * ring * (2.0 * w + trainable * grad_b), m * op_t)
        } else {
            // once per step: all-reduce (ZeRO-0) or reduce-scatter + all-gather (1, 2)
            // of the gradients, overlapping the last micro-batch's backward.
            (2.0 * ring * trainable * grad_b, op_t)
        };
        let dp_t = time_at(dp_bytes, dp_bw * self.eff.link);
        let dp_exposed = dp_t - (self.eff.overlap_dp * dp_t).min(overlappable);

        // optimizer update (sharded by ZeRO >= 1)
        let shard = if self.cfg.zero >= 1 { n } else { 1.0 };
        let upd = trainable / shard;
        let (opt_t, off_t) = match self.cfg.offload {
            Offload::None => (
                upd * self.cfg.optimizer.update_bytes_per_param() / (bw * self.eff.memory),
                0.0,
            ),
            Offload::Cpu => {
                let host = hw
                    .host_link
                    .as_ref()
                    .map_or(0.0, |h| h.bytes_per_s_per_direction);
                // gradients down and updated 16-bit weights up; the two directions of
                // the link run concurrently.
                (0.0, time_at(upd * grad_b, host * self.eff.link))
            }
        };

        let time = (m + bubble_mb) * t_micro + dp_exposed + pp_t + opt_t + off_t;
        let scale_mb = m + bubble_mb;
        let by = [
            (scale_mb * c_t, Bound::Compute),
            (scale_mb * m_t + opt_t, Bound::Memory),
            (
                scale_mb * tp_exposed + dp_exposed + pp_t + off_t,
                Bound::Communication,
            ),
        ];
        let bound = by
            .iter()
            .fold((f64::NEG_INFINITY, Bound::Compute), |a, b| {
                if b.0 > a.0 { *b } else { a }
            })
            .1;

        let model_flops = self.model_flops();
        // executed FLOPs: the slowest stage's per-micro-batch FLOPs stand for every stage
        let executed_flops = hw_flops * m * (l.tp * l.dp * l.pp) as f64;
        let hardware_flops = if hw_flops > re_flops {
            model_flops * hw_flops / (hw_flops - re_flops)
        } else {
            model_flops
        };
        let peak = hw
            .peak(
                self.precision
                    .weights
                    .compute_dtype(self.precision.activations),
            )
            .0;
        let gpus = l.gpus as f64;
        let tokens = l.global_batch as f64 * self.cfg.seq as f64;
        let util = |f: f64| {
            if time > 0.0 {
                f / (time * gpus * peak)
            } else {
                0.0
            }
        };
        StepReport {
            flops: model_flops,
            time_s: time,
            tokens_per_s: time_at(tokens, time),
            tokens_per_s_per_gpu: time_at(tokens, time * gpus),
            mfu: util(model_flops),
            bound,
            hardware_flops,
            hfu: util(hardware_flops),
            executed_flops,
            model_flops_per_s_per_gpu: time_at(model_flops, time * gpus),
            peak_flops_per_s: peak,
            tokens,
            micro_batch_time_s: t_micro,
            compute_time_s: scale_mb * c_t,
            memory_time_s: scale_mb * m_t + opt_t,
            tp_comm_time_s: m * tp_t,
            dp_comm_time_s: dp_t,
            pp_comm_time_s: pp_t,
            exposed_comm_time_s: scale_mb * tp_exposed + dp_exposed + pp_t,
            bubble_time_s: bubble,
            optimizer_time_s: opt_t,
            offload_time_s: off_t,
            bubble_fraction,
        }
    }

    /// The whole report (the `train --json` document).
    pub fn report(&self) -> TrainReport {
        let (inner, detail) = self.memory();
        let step = self.step();
        let mut notes = self.notes.clone();
        if !inner.fits {
            notes.push(format!(
                "does not fit: {:.2} GB needed of {:.2} GB per device; step time is what it would take if it did",
                inner.total_bytes / 1e9,
                inner.capacity_bytes / 1e9
            ));
        }
        if self.cfg.offload == Offload::Cpu {
            notes.push(format!(
                "{:.2} GB of optimizer states per device in host memory; the CPU update itself is not timed",
                detail.host_optimizer_bytes / 1e9
            ));
        }
        let p = self.model.params();
        let attn =
            12.0 * self.model.layers as f64 * self.model.q_width() as f64 * self.cfg.seq as f64;
        if attn > 6.0 * p.total as f64 * 0.25 {
            notes.push(format!(
                "attention is {:.0} % of the model FLOPs at this length; MFU counts it over the full s x s square (the PaLM/Megatron convention), about twice what a causal kernel executes",
                100.0 * attn / (attn + 6.0 * p.total as f64)
            ));
        }
        if self.cfg.global_batch.is_none() && self.layout.pp > 1 {
            notes.push(format!(
                "no --global-batch: {} micro-batches per step (4 x pp) assumed",
                self.layout.micro_batches
            ));
        }
        let trainable = match self.cfg.method {
            Method::Full => self.model.params().total as f64,
            _ => {
                self.model.layers as f64
                    * lora_params_per_layer(self.model, self.cfg.lora_rank, self.cfg.lora_targets)
            }
        };
        TrainReport {
            model: ModelInfo {
                id: self.model.id.clone(),
                name: self.model.name.clone(),
                params: self.model.params().total,
                trainable_params: trainable,
            },
            hardware: HardwareInfo {
                id: self.hardware.id.clone(),
                name: self.hardware.name.clone(),
                count: self.layout.gpus,
                devices_per_node: self.layout.devices_per_node,
            },
            config: ConfigEcho {
                seq: self.cfg.seq,
                zero: self.cfg.zero,
                method: self.cfg.method,
                lora_rank: if self.cfg.method == Method::Full {
                    0
                } else {
                    self.cfg.lora_rank
                },
                recompute: self.cfg.recompute,
                precision: self.cfg.precision,
                optimizer: self.cfg.optimizer,
                offload: self.cfg.offload,
                sequence_parallel: self.cfg.sequence_parallel,
                flash: self.cfg.flash,
                virtual_stages: self.cfg.virtual_stages,
                inter_node_bytes_per_s: self.cfg.inter_node_bytes_per_s,
            },
            layout: self.layout,
            memory: MemoryReport { inner, detail },
            step,
            efficiency: self.eff,
            notes,
        }
    }
}

fn scale(c: Cost, flops: f64, bytes: f64) -> Cost {
    let b = c.times(bytes);
    Cost {
        flops: c.flops * flops,
        ..b
    }
}

/// Backward cost of a linear layer from its forward cost `y = x·W`: the input gradient
/// `dx = dy·Wᵀ` (same FLOPs as forward; reads `dy` and `W`, writes `dx`) and, unless the
/// weight is frozen, the weight gradient `dW = xᵀ·dy` (same FLOPs again; reads `x` and
/// `dy`, writes `dW` at `grad_bits`). `w_bits` recovers the element count of `W` from the
/// forward weight bytes.
pub fn backward_cost(fwd: &Cost, w_bits: f64, grad_bits: f64, frozen: bool) -> Cost {
    let x = fwd.read.activations;
    let dy = fwd.written.activations + fwd.written.kv;
    let w = fwd.read.weights;
    let dgrad = Cost {
        flops: fwd.flops,
        read: ByteClasses {
            weights: w,
            activations: dy,
            kv: 0.0,
        },
        written: ByteClasses {
            activations: x,
            ..Default::default()
        },
        link_bytes: 0.0,
    };
    if frozen {
        return dgrad;
    }
    let w_elems = if w_bits > 0.0 { w * 8.0 / w_bits } else { 0.0 };
    dgrad
        + Cost {
            flops: fwd.flops,
            read: ByteClasses {
                activations: x + dy,
                ..Default::default()
            },
            written: ByteClasses {
                weights: w_elems * grad_bits / 8.0,
                ..Default::default()
            },
            link_bytes: 0.0,
        }
}

/// One-call training prediction.
pub fn train(model: &ModelConfig, hardware: &Hardware, cfg: &TrainConfig) -> Result<TrainReport> {
    Ok(Trainer::new(model, hardware, cfg)?.report())
}

/// Per-device memory of the same configuration under ZeRO stages 0, 1, 2 and 3 (index =
/// stage), for side-by-side comparison (stacked-bar charts).
pub fn zero_stages(
    model: &ModelConfig,
    hardware: &Hardware,
    cfg: &TrainConfig,
) -> Result<[TrainMemory; 4]> {
    let at = |stage: u8| -> Result<TrainMemory> {
        let c = TrainConfig {
            zero: stage,
            ..cfg.clone()
        };
        Ok(Trainer::new(model, hardware, &c)?
            .memory_at(cfg.micro_batch)
            .0)
    };
    Ok([at(0)?, at(1)?, at(2)?, at(3)?])
}
