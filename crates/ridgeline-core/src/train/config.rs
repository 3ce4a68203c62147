//! The training configuration: what is trained and how ([`TrainConfig`] and its named
//! kinds), and its validation into a device [`Layout`].

use super::efficiency::TrainEfficiency;
use super::memory::{FrameworkOverhead, max_lora_rank};
use crate::dtype::Format;
use crate::error::{Error, Result};
use crate::hardware::Hardware;
use crate::model::ModelConfig;
use serde::Serialize;

pub use super::kinds::{
    LoraTargets, Loss, Method, Offload, Optimizer, Recompute, TrainPrecision, TrainStack,
};

pub use crate::hardware::{DEFAULT_INTER_NODE_BYTES_PER_S, MIN_INTER_NODE_BYTES_PER_S};

/// Devices per node when the hardware file does not say (DGX/HGX boards hold 8).
pub const DEFAULT_DEVICES_PER_NODE: u64 = 8;

/// The highest ZeRO stage (3: weights, gradients and optimizer states sharded).
pub const MAX_ZERO_STAGE: u64 = 3;

/// LoRA rank when none is given (PEFT's and the LoRA paper's 8).
pub const DEFAULT_LORA_RANK: u64 = 8;

/// Largest sequence length and micro-batch the model accepts.
const MAX_SIZE: u64 = 100_000_000;

/// Most multi-token-prediction modules trained ([`TrainConfig::mtp`]; DeepSeek-V3 trains
/// one).
pub const MAX_MTP_MODULES: u64 = 16;

/// Largest device count the model accepts.
const MAX_GPUS: u64 = 10_000_000;

/// A training configuration (the `train` command's options).
#[derive(Debug, Clone, PartialEq)]
pub struct TrainConfig {
    /// Devices in all.
    pub gpus: u64,
    /// Tensor-parallel degree.
    pub tp: u64,
    /// Pipeline-parallel degree.
    pub pp: u64,
    /// Context-parallel degree (1: none): each sequence is split over `cp` ranks, which
    /// hold the same weights (Megatron-Core's `context_parallel_size`, load-balanced in
    /// `2 · cp` chunks so every rank holds an equal share of the causal work); each
    /// attention layer passes every rank's keys and values around the `cp` ranks (ring
    /// attention), overlapped with the attention of the chunk at hand. Gradients are
    /// reduced and ZeRO shards over the `dp · cp` ranks. Needs fused attention and a
    /// `seq` that `2 · cp` divides.
    pub cp: u64,
    /// Expert-parallel degree (1: none): each MoE layer's routed experts are split over
    /// `ep` of the data-parallel ranks (Megatron-Core's `expert_model_parallel_size`),
    /// tokens reach them by an all-to-all; `ep` divides `dp` and the routed experts.
    pub ep: u64,
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
    /// Multi-token-prediction modules trained beside the model (DeepSeek-V3's MTP
    /// objective; `None` or `Some(0)`: none). Each is one layer of the model's last kind
    /// and a `2·hidden → hidden` projection on the last pipeline stage, where it takes
    /// the place of a layer in the partition, sharing the embedding and the lm_head,
    /// whose logits it computes again for its own prediction; full training only (LoRA
    /// and QLoRA train none). Not on by default: the
    /// pipeline partition here is uniform, while DeepSeek's own (DualPipe) balances the
    /// head-carrying stages, so the modules' cost on the last stage would be overstated.
    pub mtp: Option<u64>,
    /// The expert all-to-all of each micro-batch runs beside the computation of an
    /// adjacent one (Megatron-Core's combined 1F1B, `--overlap-moe-expert-parallel-comm`;
    /// DeepSeek-V3's DualPipe), hidden up to that computation; off: it adds to the
    /// micro-batch like the tensor-parallel collectives.
    pub overlap_ep: bool,
    /// Routed tokens on the busiest expert-parallel rank over the mean (1: balanced, as
    /// an auxiliary-loss-free or auxiliary-loss balancing keeps it over a step; at most
    /// `ep`, every token on one rank): every step waits for that rank, whose routed
    /// expert work and all-to-all traffic are this many times the mean. Without expert
    /// parallelism it has no effect. Step time only: activation memory stays the mean's.
    pub expert_imbalance: f64,
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
            cp: 1,
            ep: 1,
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
            mtp: None,
            overlap_ep: false,
            expert_imbalance: 1.0,
            efficiency: None,
            overhead: None,
        }
    }
}

impl TrainConfig {
    /// The multi-token-prediction modules trained with `model` (see
    /// [`TrainConfig::mtp`]).
    pub fn mtp_modules(&self, model: &ModelConfig) -> u64 {
        if model.layer_kinds.is_empty() || self.method != Method::Full {
            return 0;
        }
        self.mtp.unwrap_or(0)
    }

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
    /// Context-parallel degree (1: none).
    pub cp: u64,
    /// Data-parallel degree `gpus / (tp · cp · pp)`: ranks that take their own sequences.
    pub dp: u64,
    /// Expert-parallel degree (a divisor of `dp`; 1: none).
    pub ep: u64,
    /// Sequences per micro-batch.
    pub micro_batch: u64,
    /// Sequences per step.
    pub global_batch: u64,
    /// Micro-batches per step per pipeline (gradient-accumulation steps).
    pub micro_batches: u64,
    /// Layers on the most loaded stage.
    pub layers_per_stage: u64,
    /// Devices that share the scale-up link: the link's domain where it states one (72
    /// in an NVL72 rack), else the node (`devices_per_node`, default 8).
    pub devices_per_node: u64,
}

fn positive_u64(field: &str, v: u64) -> Result<u64> {
    if v == 0 {
        Err(Error::invalid(field, "must be at least 1"))
    } else {
        Ok(v)
    }
}

/// Tensor parallelism splits the heads of every token mixer: latent attention's query
/// heads (checked with the attention heads), linear attention's key and value heads,
/// a Mamba-2 block's heads.
fn check_mixer_heads(model: &ModelConfig, tp: u64) -> Result<()> {
    let mut heads: Vec<(&str, u64)> = Vec::new();
    for (kind, _) in model.kind_counts() {
        match kind.mixer {
            crate::model::Mixer::Linear => {
                if let Some(l) = model.linear {
                    heads.push(("linear_num_key_heads", l.key_heads));
                    heads.push(("linear_num_value_heads", l.value_heads));
                }
            }
            crate::model::Mixer::Ssm => {
                if let Some(d) = model.ssm {
                    heads.push(("mamba_num_heads", d.heads));
                }
            }
            _ => {}
        }
    }
    for (name, n) in heads {
        if n > 0 && !n.is_multiple_of(tp) {
            return Err(Error::conflict(
                &["tp"],
                format!("tp {tp} does not divide {}'s {n} heads ({name})", model.id),
            ));
        }
    }
    Ok(())
}

/// Values that are wrong on their own: zero sizes, sizes beyond what is modelled, a
/// ZeRO stage above 3, a non-positive or slower-than-modelled network.
fn check_values(cfg: &TrainConfig) -> Result<()> {
    if let Some(n) = cfg.mtp.filter(|&n| n > MAX_MTP_MODULES) {
        return Err(Error::invalid(
            "mtp",
            format!("{n} multi-token-prediction modules; at most {MAX_MTP_MODULES} are modelled"),
        ));
    }
    // (without expert parallelism no rank waits for another's experts: the factor has
    // no effect, so any value from 1 up passes)
    let most = if cfg.ep > 1 { cfg.ep as f64 } else { f64::MAX };
    let f = cfg.expert_imbalance;
    if !(f >= 1.0 && f <= most) {
        let why = if f > 1.0 && f.is_finite() {
            format!("more than ep {} (every routed token on one rank)", cfg.ep)
        } else {
            "the busiest rank's routed tokens over the mean are at least 1 (balanced)".into()
        };
        return Err(Error::invalid("expert_imbalance", format!("{f}: {why}")));
    }
    positive_u64("gpus", cfg.gpus)?;
    positive_u64("tp", cfg.tp)?;
    positive_u64("pp", cfg.pp)?;
    positive_u64("cp", cfg.cp)?;
    positive_u64("ep", cfg.ep)?;
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
    crate::hardware::check_inter_node(cfg.inter_node_bytes_per_s)
}

/// Degrees that contradict the model: `tp · pp` not dividing `gpus`, `tp` not dividing
/// the heads (or KV heads), more stages than layers, sequence parallelism over a `seq`
/// that `tp` does not divide (Megatron-LM splits whole tokens), virtual stages without
/// pipelining
/// or more model chunks (`pp · virtual_stages`) than layers. Uneven chunks are allowed
/// (Megatron-LM wants `layers` divisible by `pp · v`; Llama 3 405B ran 126 layers in
/// uneven stages) and costed by the largest.
fn check_degrees(model: &ModelConfig, cfg: &TrainConfig) -> Result<()> {
    let (gpus, tp, pp, cp) = (cfg.gpus, cfg.tp, cfg.pp, cfg.cp);
    let tp_pp = tp.saturating_mul(pp).saturating_mul(cp);
    if !gpus.is_multiple_of(tp_pp) {
        let (fields, what): (&[&str], String) = if cp > 1 {
            (
                &["tp", "cp", "pp", "gpus"],
                format!("tp {tp} x cp {cp} x pp {pp} = {tp_pp}"),
            )
        } else {
            (
                &["tp", "pp", "gpus"],
                format!("tp {tp} x pp {pp} = {tp_pp}"),
            )
        };
        let product = if cp > 1 {
            "tp x cp x pp x dp"
        } else {
            "tp x pp x dp"
        };
        return Err(Error::conflict(
            fields,
            format!("{what} does not divide gpus {gpus}: {product} must equal the number of GPUs"),
        ));
    }
    check_context_parallel(cfg)?;
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
    check_mixer_heads(model, tp)?;
    if cfg.ep > 1 {
        let dp = gpus / tp_pp.max(1);
        if !model.is_moe() {
            return Err(Error::conflict(
                &["ep"],
                format!(
                    "expert parallelism splits routed experts, and {} has none",
                    model.id
                ),
            ));
        }
        if !model.experts.is_multiple_of(cfg.ep) {
            return Err(Error::conflict(
                &["ep"],
                format!(
                    "ep {} does not divide {}'s {} routed experts",
                    cfg.ep, model.id, model.experts
                ),
            ));
        }
        if !dp.is_multiple_of(cfg.ep) {
            return Err(Error::conflict(
                &["ep", "gpus"],
                format!(
                    "ep {} does not divide the data-parallel degree {dp} (gpus {gpus} / (tp {tp} x pp {pp}{})): expert-parallel ranks are data-parallel ranks",
                    cfg.ep,
                    if cp > 1 {
                        format!(" x cp {cp}")
                    } else {
                        String::new()
                    }
                ),
            ));
        }
    }
    if pp > model.layers {
        return Err(Error::conflict(
            &["pp"],
            format!("pp {pp} exceeds {}'s {} layers", model.id, model.layers),
        ));
    }
    if cfg.sequence_parallel && tp > 1 && cp == 1 && !cfg.seq.is_multiple_of(tp) {
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

/// Context parallelism: `seq` in `2 · cp` whole-token chunks (Megatron-Core's
/// load-balanced split), each rank's `seq / cp` tokens in whole tokens per tensor-parallel
/// rank under sequence parallelism, and fused attention (the ring passes keys and
/// values between the blocks of a fused kernel; no framework runs it over materialized
/// scores).
fn check_context_parallel(cfg: &TrainConfig) -> Result<()> {
    let (cp, tp) = (cfg.cp, cfg.tp);
    if cp == 1 {
        return Ok(());
    }
    if !cfg.seq.is_multiple_of(2 * cp) {
        return Err(Error::conflict(
            &["seq", "cp"],
            format!(
                "context parallelism splits each sequence into 2 x cp = {} load-balanced chunks of whole tokens: seq {} is not a multiple of {}",
                2 * cp,
                cfg.seq,
                2 * cp
            ),
        ));
    }
    let local = cfg.seq / cp;
    if cfg.sequence_parallel && tp > 1 && !local.is_multiple_of(tp) {
        return Err(Error::conflict(
            &["seq", "cp", "tp"],
            format!(
                "sequence parallelism splits each rank's seq / cp = {local} tokens over the tp ranks in whole tokens: {local} is not a multiple of tp {tp}"
            ),
        ));
    }
    if !cfg.flash {
        return Err(Error::conflict(
            &["cp", "flash"],
            "context parallelism passes keys and values between the blocks of a fused attention kernel: it needs flash attention",
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
    if limit == 0 {
        return Err(Error::invalid(
            "lora_targets",
            format!(
                "{} adapts the query and value projections of (latent) attention, and {} has none: use all_linear",
                cfg.lora_targets.name(),
                model.id
            ),
        ));
    }
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
    let dp = cfg.gpus / (cfg.tp * cfg.pp * cfg.cp);
    let global = global_batch(cfg, dp)?;
    check_lora_rank(model, cfg)?;
    check_device(hardware, cfg)?;
    check_in_backward(cfg, global / (cfg.micro_batch * dp))?;
    Ok(Layout {
        gpus: cfg.gpus,
        tp: cfg.tp,
        pp: cfg.pp,
        cp: cfg.cp,
        dp,
        ep: cfg.ep,
        micro_batch: cfg.micro_batch,
        global_batch: global,
        micro_batches: global / (cfg.micro_batch * dp),
        // pipelined, each multi-token-prediction module counts as a layer of the last
        // stage (Megatron-Core's pipeline layouts hold it so), which then has as many
        // fewer of the model's own
        layers_per_stage: if cfg.pp > 1 {
            (model.layers + cfg.mtp_modules(model)).div_ceil(cfg.pp)
        } else {
            model.layers
        },
        // the devices that share the scale-up link: its domain where the link states one
        // (72 in a GB200 NVL72 rack), else the node
        devices_per_node: hardware.domain_devices(),
    })
}
