//! The training configuration: what is trained and how ([`TrainConfig`] and its named
//! kinds), and its validation into a device [`Layout`].

use super::efficiency::TrainEfficiency;
use super::memory::{FrameworkOverhead, max_lora_rank};
use crate::dtype::{ComputeDtype, Format};
use crate::error::{Error, Result, require_positive};
use crate::hardware::Hardware;
use crate::model::ModelConfig;
use serde::Serialize;

crate::named_enum! {
    /// What is trained.
    pub enum Method: "training method" {
        /// Every parameter.
        Full = "full",
        /// Low-rank adapters on frozen 16-bit base weights.
        Lora = "lora",
        /// Low-rank adapters (bf16) on frozen NF4 (double-quantized) base weights.
        Qlora = "qlora",
    }
}

crate::named_enum! {
    /// Which matrices LoRA adapts.
    pub enum LoraTargets: "LoRA targets" {
        /// Query and value projections (the LoRA paper's and PEFT's default).
        QueryValue = "query_value",
        /// Every projection of attention and MLP.
        AllLinear = "all_linear",
    }
}

crate::named_enum! {
    /// Activation recomputation (checkpointing).
    pub enum Recompute: "recomputation" {
        /// Store every activation the backward pass needs.
        None = "none",
        /// Recompute the attention core (Korthikanti et al.): no stored score matrix.
        Selective = "selective",
        /// Store only each layer's input; recompute the layer in backward.
        Full = "full",
        /// Op-level selective checkpointing (torchtitan's `selective_ac_option = "op"`):
        /// keep the layer input, the attention output (with its log-sum-exp) and the
        /// output of every second matmul in execution order (q, v, the gate and the
        /// down projection of a gated MLP; q, v and the first MLP matmul otherwise);
        /// recompute the other matmuls and every norm, activation and residual.
        Op = "op",
    }
}

crate::named_enum! {
    /// Mixed-precision recipe.
    pub enum TrainPrecision: "training precision" {
        /// bf16 weights, activations and gradients, fp32 master weights.
        Bf16 = "bf16",
        /// fp16 the same way (with loss scaling).
        Fp16 = "fp16",
        /// bf16 recipe with the linear layers' matmuls in fp8 (TransformerEngine,
        /// torchao float8): memory as bf16, matmuls at the fp8 peak.
        Fp8 = "fp8",
        /// Pure bf16: weights, gradients and optimizer states all in bf16, no fp32
        /// master copy (torchtune's `dtype: bf16`, Answer.AI's fsdp_qlora
        /// `--precision bf16`; the update rounds to bf16).
        Bf16Pure = "bf16-pure",
    }
}

impl TrainPrecision {
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

    /// Whether the optimizer keeps an fp32 master copy of the trainable weights (every
    /// recipe but [`TrainPrecision::Bf16Pure`]).
    pub fn fp32_master(self) -> bool {
        self != TrainPrecision::Bf16Pure
    }

    /// Bytes of one full-precision optimizer moment (AdamW's m and v, SGD's momentum):
    /// fp32 (4) with mixed precision, bf16 (2) in pure bf16, where the states take the
    /// parameters' dtype.
    pub fn moment_bytes(self) -> f64 {
        if self.fp32_master() { 4.0 } else { 2.0 }
    }
}

crate::named_enum! {
    /// Optimizer.
    pub enum Optimizer: "optimizer" {
        /// Adam with decoupled weight decay.
        Adamw = "adamw",
        /// SGD with momentum.
        Sgd = "sgd",
        /// Adafactor (factored second moment, no first moment).
        Adafactor = "adafactor",
        /// AdamW with 8-bit block-quantized moments (bitsandbytes `AdamW8bit`).
        Adamw8bit = "adamw8bit",
    }
}

impl Optimizer {
    /// Optimizer-state bytes per trainable parameter, fp32 master weights included,
    /// under mixed precision: AdamW 12 (master 4 + m 4 + v 4); SGD with momentum 8
    /// (master 4 + momentum 4); Adafactor 4 (master) plus its factored second moment,
    /// `4 · (rows + cols)` bytes per matrix, passed in as `factored_per_param`
    /// (`4 · Σ(rows + cols) / params`, see [`super::adafactor_factored_bytes_per_param`]);
    /// 8-bit AdamW 6 plus its block scales (master 4 + m 1 + v 1, one fp32 absmax per
    /// 2048 values of each moment: 4 + 1 + 1 + 2 · 4/2048 = 6.00390625; Dettmers et al.
    /// 2022, "8-bit Optimizers via Block-wise Quantization"). In pure bf16
    /// ([`TrainPrecision::Bf16Pure`]) there is no master copy and the moments are bf16:
    /// AdamW 4, SGD 2, Adafactor half its factored statistics, 8-bit AdamW 2.0039.
    ///
    /// ```
    /// use ridgeline::train::{Optimizer, TrainPrecision};
    /// assert_eq!(Optimizer::Adamw.state_bytes_per_param(0.0, TrainPrecision::Bf16), 12.0);
    /// assert_eq!(Optimizer::Adamw.state_bytes_per_param(0.0, TrainPrecision::Bf16Pure), 4.0);
    /// ```
    pub fn state_bytes_per_param(self, factored_per_param: f64, precision: TrainPrecision) -> f64 {
        let master = if precision.fp32_master() { 4.0 } else { 0.0 };
        let moment = precision.moment_bytes();
        master
            + match self {
                Optimizer::Adamw => 2.0 * moment,
                Optimizer::Sgd => moment,
                Optimizer::Adafactor => factored_per_param * moment / 4.0,
                Optimizer::Adamw8bit => 2.0 + 2.0 * 4.0 / 2048.0,
            }
    }

    /// Bytes the update moves per trainable parameter in device (or host) memory. Mixed
    /// precision: AdamW reads master, m, v and the 16-bit gradient and writes master, m,
    /// v and the 16-bit weight, 4·3 + 2 + 4·3 + 2 = 28; SGD 4·2 + 2 + 4·2 + 2 = 20;
    /// Adafactor 4 + 2 + 4 + 2 = 12 (the factored statistics are negligible); 8-bit
    /// AdamW (4 + 1 + 1) + 2 + (4 + 1 + 1) + 2 = 16. Pure bf16 reads and writes the bf16
    /// weight in place of the master and has bf16 moments: AdamW 2·3 + 2 + 2·3 = 14,
    /// SGD 10, Adafactor 6, 8-bit AdamW 10.
    ///
    /// ```
    /// use ridgeline::train::{Optimizer, TrainPrecision};
    /// assert_eq!(Optimizer::Adamw.update_bytes_per_param(TrainPrecision::Bf16), 28.0);
    /// assert_eq!(Optimizer::Adamw.update_bytes_per_param(TrainPrecision::Bf16Pure), 14.0);
    /// ```
    pub fn update_bytes_per_param(self, precision: TrainPrecision) -> f64 {
        let (weight, write16) = if precision.fp32_master() {
            (4.0, 2.0)
        } else {
            (2.0, 0.0)
        };
        let moments = match self {
            Optimizer::Adamw => 2.0 * precision.moment_bytes(),
            Optimizer::Sgd => precision.moment_bytes(),
            Optimizer::Adafactor => 0.0,
            Optimizer::Adamw8bit => 2.0,
        };
        2.0 * (weight + moments) + 2.0 + write16
    }
}

crate::named_enum! {
    /// Where optimizer states live.
    pub enum Offload: "offload" {
        /// Device memory.
        None = "none",
        /// Host memory (ZeRO-Offload): gradients go down, updated weights come back over
        /// the host link every step.
        Cpu = "cpu",
    }
}

crate::named_enum! {
    /// The software stack a run trains with: its kernels, fusions and overlap schedule
    /// set how close to the peak it runs (`data/training.toml` fits each separately).
    pub enum TrainStack: "training stack" {
        /// Framework-native training: PyTorch FSDP/DDP (torchtitan, torchtune, Hugging
        /// Face Trainer and PEFT, llm-foundry, fms-fsdp) or JAX (MaxText), with library
        /// kernels (cuBLAS, FlashAttention) and framework collectives. What most
        /// fine-tunes and FSDP pre-training runs use.
        Generic = "generic",
        /// Megatron-Core (Megatron-LM, NeMo, Megatron-Bridge) with TransformerEngine:
        /// fused norms and activations, cuDNN fused attention, communication overlapped
        /// with compute.
        Megatron = "megatron",
    }
}

crate::named_enum! {
    /// How the loss holds the logits of the last stage (per logit element: token x
    /// vocabulary entry).
    pub enum Loss: "loss" {
        /// A fused or chunked cross-entropy (Megatron-Core, torchtitan, torchtune,
        /// Liger): the 16-bit logits and the fp32 log-probabilities kept for the
        /// backward pass, `e + 4` bytes (6 in bf16).
        Fused = "fused",
        /// The logits upcast to fp32 before a plain cross-entropy, as Hugging Face
        /// transformers' causal-LM models did in their forward until v4.45
        /// (`logits = logits.float()`): 16 bytes at the start of the backward pass, the
        /// fp32 logits the output keeps (4), the fp32 log-softmax saved for backward
        /// (4), its incoming gradient (4) and the gradient it produces (4); the 16-bit
        /// logits are freed once upcast.
        Upcast = "upcast",
    }
}

impl Loss {
    /// Bytes per logit element at the loss's peak with `e`-byte activations.
    ///
    /// ```
    /// use ridgeline::train::Loss;
    /// assert_eq!(Loss::Fused.bytes_per_logit(2.0), 6.0);
    /// assert_eq!(Loss::Upcast.bytes_per_logit(2.0), 16.0);
    /// ```
    pub fn bytes_per_logit(self, e: f64) -> f64 {
        match self {
            Loss::Fused => e + 4.0,
            Loss::Upcast => 16.0,
        }
    }
}

/// Default inter-node network bandwidth per GPU: one 400 Gb/s InfiniBand / RoCE NIC per
/// GPU (DGX A100 and H100 layouts) = 50e9 bytes/s per direction.
pub const DEFAULT_INTER_NODE_BYTES_PER_S: f64 = 50e9;

/// Devices per node when the hardware file does not say (DGX/HGX boards hold 8).
pub const DEFAULT_DEVICES_PER_NODE: u64 = 8;

/// The highest ZeRO stage (3: weights, gradients and optimizer states sharded).
pub const MAX_ZERO_STAGE: u64 = 3;

/// LoRA rank when none is given (PEFT's and the LoRA paper's 8).
pub const DEFAULT_LORA_RANK: u64 = 8;

/// Largest sequence length and micro-batch the model accepts.
const MAX_SIZE: u64 = 100_000_000;

/// Largest device count the model accepts.
const MAX_GPUS: u64 = 10_000_000;

/// Slowest inter-node network the model accepts, bytes/s (1 MB/s; 1 GbE is 125 MB/s):
/// below it a step's communication time leaves the range of numbers worth printing
/// (and at 1e-300 that of `f64`).
pub const MIN_INTER_NODE_BYTES_PER_S: f64 = 1e6;

/// A training configuration (the `train` command's options).
#[derive(Debug, Clone, PartialEq)]
pub struct TrainConfig {
    /// Devices in all.
    pub gpus: u64,
    /// Tensor-parallel degree.
    pub tp: u64,
    /// Pipeline-parallel degree.
    pub pp: u64,
    /// ZeRO stage 0-3 (FSDP full shard = 3); any other value is rejected as an invalid
    /// `zero`.
    pub zero: u64,
    /// Sequences per micro-batch per data-parallel rank.
    pub micro_batch: u64,
    /// Sequences per optimizer step over all ranks (`None`: `micro_batch · dp`, times
    /// `4 · pp` micro-batches when pipelining).
    pub global_batch: Option<u64>,
    /// Tokens per sequence.
    pub seq: u64,
    /// Full fine-tuning / pre-training, LoRA or QLoRA.
    pub method: Method,
    /// LoRA rank (`None`: [`DEFAULT_LORA_RANK`] for LoRA and QLoRA). At most the
    /// smaller dimension of the smallest adapted matrix ([`super::max_lora_rank`]);
    /// given with full training it is unused, and a note says so.
    pub lora_rank: Option<u64>,
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
    /// Optimizer step fused into the backward pass (PyTorch's optimizer-in-backward,
    /// torchtune's `optimizer_in_bwd`): each parameter is updated as soon as its
    /// gradient is ready, so only one layer's gradients are held at a time; needs one
    /// micro-batch per step (no gradient accumulation).
    pub optimizer_in_backward: bool,
    /// Compiled training step (torch.compile-class fusion): residual adds fused into
    /// the next norm, the gated activation into the up projection's epilogue, RoPE
    /// into attention, so those elementwise ops move no bytes of their own.
    pub compile: bool,
    /// The training stack whose calibrated efficiencies apply (default generic).
    pub stack: TrainStack,
    /// How the loss holds the logits (default fused).
    pub loss: Loss,
    /// Megatron sequence parallelism alongside tensor parallelism (default on); it
    /// splits each sequence over the `tp` ranks, so `seq` must be a multiple of `tp`.
    pub sequence_parallel: bool,
    /// Fused (flash) attention (default on).
    pub flash: bool,
    /// The model uses dropout (1-byte masks stored); modern LLM pre-training does not.
    pub dropout: bool,
    /// Interleaved pipeline: model chunks per device (1: plain 1F1B); `pp ·
    /// virtual_stages` chunks of whole layers, so at most `layers / pp`.
    pub virtual_stages: u64,
    /// Storage format of frozen LoRA base weights (`None`: the precision's 16-bit format
    /// for LoRA, NF4 for QLoRA).
    pub frozen_format: Option<Format>,
    /// Network bandwidth per GPU between nodes, bytes/s per direction (at least
    /// [`MIN_INTER_NODE_BYTES_PER_S`]).
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
            lora_rank: None,
            lora_targets: LoraTargets::AllLinear,
            recompute: Recompute::None,
            precision: TrainPrecision::Bf16,
            optimizer: Optimizer::Adamw,
            offload: Offload::None,
            optimizer_in_backward: false,
            compile: false,
            stack: TrainStack::Generic,
            loss: Loss::Fused,
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

impl TrainConfig {
    /// The LoRA rank in use: as given or [`DEFAULT_LORA_RANK`] for LoRA and QLoRA, 0 for
    /// full training.
    pub fn effective_lora_rank(&self) -> u64 {
        match self.method {
            Method::Full => 0,
            _ => self.lora_rank.unwrap_or(DEFAULT_LORA_RANK),
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

fn positive_u64(field: &str, v: u64) -> Result<u64> {
    if v == 0 {
        Err(Error::invalid(field, "must be at least 1"))
    } else {
        Ok(v)
    }
}

/// Values that are wrong on their own: zero sizes, sizes beyond what is modelled, a
/// ZeRO stage above 3, a non-positive or slower-than-modelled network.
fn check_values(cfg: &TrainConfig) -> Result<()> {
    positive_u64("gpus", cfg.gpus)?;
    positive_u64("tp", cfg.tp)?;
    positive_u64("pp", cfg.pp)?;
    positive_u64("micro_batch", cfg.micro_batch)?;
    positive_u64("seq", cfg.seq)?;
    positive_u64("virtual_stages", cfg.virtual_stages)?;
    if cfg.gpus > MAX_GPUS {
        return Err(Error::invalid(
            "gpus",
            format!("{} devices is beyond any layout ridgeline models", cfg.gpus),
        ));
    }
    if cfg.zero > MAX_ZERO_STAGE {
        return Err(Error::invalid(
            "zero",
            format!(
                "ZeRO stage {} does not exist; stages are 0, 1, 2, 3",
                cfg.zero
            ),
        ));
    }
    for (field, v) in [("seq", cfg.seq), ("micro_batch", cfg.micro_batch)] {
        if v > MAX_SIZE {
            return Err(Error::invalid(field, "sizes beyond 1e8 are not modelled"));
        }
    }
    require_positive("inter_node_bytes_per_s", cfg.inter_node_bytes_per_s)?;
    if cfg.inter_node_bytes_per_s < MIN_INTER_NODE_BYTES_PER_S {
        return Err(Error::invalid(
            "inter_node_bytes_per_s",
            format!(
                "{} bytes/s is below the 1e6 bytes/s (1 MB/s) ridgeline models",
                cfg.inter_node_bytes_per_s
            ),
        ));
    }
    Ok(())
}

/// Degrees that contradict the model: `tp · pp` not dividing `gpus`, `tp` not dividing
/// the heads (or KV heads), more stages than layers, sequence parallelism over a `seq`
/// that `tp` does not divide (Megatron-LM splits whole tokens), virtual stages without
/// pipelining
/// or more model chunks (`pp · virtual_stages`) than layers. Uneven chunks are allowed
/// (Megatron-LM wants `layers` divisible by `pp · v`; Llama 3 405B ran 126 layers in
/// uneven stages) and costed by the largest.
fn check_degrees(model: &ModelConfig, cfg: &TrainConfig) -> Result<()> {
    let (gpus, tp, pp) = (cfg.gpus, cfg.tp, cfg.pp);
    let tp_pp = tp.saturating_mul(pp);
    if !gpus.is_multiple_of(tp_pp) {
        return Err(Error::conflict(
            &["tp", "pp", "gpus"],
            format!(
                "tp {tp} x pp {pp} = {tp_pp} does not divide gpus {gpus}: tp x pp x dp must equal the number of GPUs"
            ),
        ));
    }
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
    if cfg.sequence_parallel && tp > 1 && !cfg.seq.is_multiple_of(tp) {
        return Err(Error::conflict(
            &["seq", "tp"],
            format!(
                "sequence parallelism splits each sequence over the tp ranks in whole tokens: seq {} is not a multiple of tp {tp} (turn sequence parallelism off, or pick a multiple)",
                cfg.seq
            ),
        ));
    }
    let v = cfg.virtual_stages;
    if v > 1 && pp == 1 {
        return Err(Error::conflict(
            &["virtual_stages", "pp"],
            "virtual pipeline stages need pp > 1",
        ));
    }
    let most = model.layers / pp;
    if v > most {
        return Err(Error::conflict(
            &["virtual_stages", "pp"],
            format!(
                "pp {pp} x virtual_stages {v} = {} model chunks, more than {}'s {} layers: every chunk holds whole layers, so virtual_stages is 1 to {most}",
                pp.saturating_mul(v),
                model.id,
                model.layers
            ),
        ));
    }
    Ok(())
}

/// The LoRA rank of LoRA and QLoRA: at least 1, at most the smaller dimension of the
/// smallest adapted matrix (beyond it `B·A` gains parameters but no rank).
fn check_lora_rank(model: &ModelConfig, cfg: &TrainConfig) -> Result<()> {
    if cfg.method == Method::Full {
        return Ok(());
    }
    let rank = positive_u64("lora_rank", cfg.effective_lora_rank())?;
    let (limit, matrix) = max_lora_rank(model, cfg.lora_targets);
    if rank > limit {
        return Err(Error::invalid(
            "lora_rank",
            format!(
                "rank {rank} exceeds {limit}, the smaller dimension of {}'s {matrix}: a higher rank adds parameters but no rank",
                model.id
            ),
        ));
    }
    Ok(())
}

/// The global batch: as given, or `micro_batch · dp` (times `4 · pp` when pipelining);
/// it must be a whole multiple of `micro_batch · dp`.
fn global_batch(cfg: &TrainConfig, dp: u64) -> Result<u64> {
    let mb = cfg.micro_batch;
    let per_step = mb.saturating_mul(dp);
    let global = match cfg.global_batch {
        Some(0) => return Err(Error::invalid("global_batch", "must be at least 1")),
        Some(g) => g,
        None => per_step.saturating_mul(if cfg.pp > 1 { 4 * cfg.pp } else { 1 }),
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
    Ok(global)
}

/// Options the device cannot serve: offload without a host link, several devices
/// without any link.
fn check_device(hardware: &Hardware, cfg: &TrainConfig) -> Result<()> {
    if cfg.offload == Offload::Cpu && hardware.host_link.is_none() {
        return Err(Error::conflict(
            &["offload", "gpu"],
            format!(
                "offloading to the CPU needs a host link, and {} has none in the database",
                hardware.id
            ),
        ));
    }
    if cfg.gpus > 1 && hardware.device_link().is_none() {
        return Err(Error::conflict(
            &["gpu", "gpus"],
            format!(
                "{} has no host or scale-up link in the database, so it cannot be used with {} devices",
                hardware.id, cfg.gpus
            ),
        ));
    }
    Ok(())
}

/// The optimizer step can run inside the backward pass only when one backward pass
/// makes the whole gradient: one micro-batch per step and no pipeline, with the
/// optimizer states on the device.
fn check_in_backward(cfg: &TrainConfig, micro_batches: u64) -> Result<()> {
    if !cfg.optimizer_in_backward {
        return Ok(());
    }
    let problem = if micro_batches > 1 {
        (
            "global_batch",
            format!(
                "{micro_batches} micro-batches per step accumulate gradients, which the optimizer in the backward pass cannot: set global_batch to micro_batch x dp"
            ),
        )
    } else if cfg.pp > 1 {
        (
            "pp",
            "a pipeline accumulates gradients over its micro-batches".to_string(),
        )
    } else if cfg.offload == Offload::Cpu {
        (
            "offload",
            "optimizer states offloaded to the host are updated after the backward pass"
                .to_string(),
        )
    } else {
        return Ok(());
    };
    Err(Error::conflict(
        &["optimizer_in_backward", problem.0],
        problem.1,
    ))
}

/// Validates `cfg` against the model and device and lays the devices out.
pub(super) fn layout(
    model: &ModelConfig,
    hardware: &Hardware,
    cfg: &TrainConfig,
) -> Result<Layout> {
    check_values(cfg)?;
    check_degrees(model, cfg)?;
    let dp = cfg.gpus / (cfg.tp * cfg.pp);
    let global = global_batch(cfg, dp)?;
    check_lora_rank(model, cfg)?;
    check_device(hardware, cfg)?;
    check_in_backward(cfg, global / (cfg.micro_batch * dp))?;
    Ok(Layout {
        gpus: cfg.gpus,
        tp: cfg.tp,
        pp: cfg.pp,
        dp,
        micro_batch: cfg.micro_batch,
        global_batch: global,
        micro_batches: global / (cfg.micro_batch * dp),
        layers_per_stage: model.layers.div_ceil(cfg.pp),
        devices_per_node: hardware
            .devices_per_node
            .map_or(DEFAULT_DEVICES_PER_NODE, |d| (d as u64).max(1)),
    })
}
