//! Training: per-device memory (model states under ZeRO 0-3, activations after
//! Korthikanti et al. 2022, framework overhead), step time on the roofline with 3D
//! parallelism, recomputation, LoRA/QLoRA and optimizer offload, tokens/s and MFU.
//!
//! | module | job |
//! |---|---|
//! | [`config`] | [`TrainConfig`], its named kinds ([`Method`], [`Recompute`], [`TrainPrecision`], [`Optimizer`], [`Offload`], [`LoraTargets`]) and its validation into a [`Layout`] |
//! | [`efficiency`] | [`TrainEfficiency`] per chip architecture from `data/training.toml` ([`EfficiencyTable`]) |
//! | [`attention`] | measured attention kernels of training, forward and backward ([`attention::MeasuredAttention`], `data/kernels/training-attention.toml`) |
//! | [`memory`] | memory per device: model states, activations ([`activation_bytes_per_layer`]), overhead ([`FrameworkOverhead`]) |
//! | [`step`] | step time, tokens/s, MFU and HFU ([`StepReport`], `backward_cost`) |
//! | [`report`] | the `train --json` document ([`TrainReport`]) and its caveats ([`TrainNote`], as sentences in [`notes`]) |
//!
//! The published training runs (`ridgeline::train::runs`) and the fit of the efficiency
//! factors to them (`ridgeline::train::calibrate`, `ridgeline calibrate --train`) are the
//! `ridgeline-fit` crate's.
//!
//! A [`Trainer`] validates one configuration on one model and device; [`Trainer::memory`]
//! and [`Trainer::step`] evaluate it, [`Trainer::report`] (or [`train`]) gives both.
//!
//! Every layer kind the layer graph reads trains: softmax, latent and linear attention,
//! state-space blocks, dense MLPs and mixtures of experts (with shared experts), each
//! stage's layers counted by their kinds; routed experts split over `ep` ranks.
//!
//! Not modelled: the extra activations an interleaved
//! schedule keeps in flight, the CPU's own optimizer-update time under offload, power
//! capping, and framework-specific recomputation policies other than Korthikanti's.

pub mod attention;
pub mod config;
pub mod efficiency;
mod kinds;
mod layers;
pub mod memory;
pub mod notes;
pub mod report;
pub mod step;

pub use config::{
    DEFAULT_DEVICES_PER_NODE, DEFAULT_INTER_NODE_BYTES_PER_S, DEFAULT_LORA_RANK, Layout,
    LoraTargets, Loss, MAX_MTP_MODULES, MAX_ZERO_STAGE, MIN_INTER_NODE_BYTES_PER_S, Method,
    Offload, Optimizer, Recompute, TrainConfig, TrainPrecision, TrainStack,
};
pub use efficiency::{EfficiencyTable, TableEntry, TrainEfficiency};
pub use memory::{
    ActivationShape, DEFAULT_OVERHEAD, FrameworkOverhead, MemoryDetail, TrainMemory,
    activation_bytes_of, activation_bytes_per_layer, adafactor_factored_bytes_per_param,
    lora_matrices_per_layer, lora_params_in, lora_params_per_layer, max_lora_rank,
};
pub use report::{HardwareInfo, MemoryReport, ModelInfo, TrainNote, TrainReport};
pub use step::StepReport;

use crate::dtype::Format;
use crate::error::{Result, require_non_negative};
use crate::hardware::Hardware;
use crate::model::ModelConfig;
use crate::model::graph::Precision;

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
    notes: Vec<TrainNote>,
}

/// The formats of a configuration: matmul weights, activations and KV in `precision`,
/// and the storage format of frozen base weights; with the caveats they raise.
fn formats(
    hardware: &Hardware,
    cfg: &TrainConfig,
    notes: &mut Vec<TrainNote>,
) -> (Precision, Format) {
    let act = cfg.precision.activations();
    let mut matmul_format = match cfg.precision {
        TrainPrecision::Fp8 => Format::Fp8,
        p => p.weight_format(),
    };
    if cfg.precision == TrainPrecision::Fp8 && hardware.peak_flops_per_s.rates.fp8.is_none() {
        notes.push(TrainNote::NoFp8 {
            device: hardware.id.clone(),
        });
        matmul_format = Format::Bf16;
    }
    let frozen = match (cfg.method, cfg.frozen_format) {
        (Method::Full, _) => cfg.precision.weight_format(),
        (_, Some(f)) => f,
        (Method::Lora, None) => cfg.precision.weight_format(),
        (Method::Qlora, None) => Format::Nf4,
    };
    // LoRA on 16-bit frozen weights under an fp8 recipe casts them to fp8 per matmul as
    // full training does (TransformerEngine's fp8 linear layers, NeMo's fp8 LoRA); frozen
    // weights stored below 16 bits (QLoRA's NF4) are dequantized to 16 bits instead.
    let weights = match cfg.method {
        Method::Full => matmul_format,
        _ if frozen.bits() >= 16.0 => matmul_format,
        _ => {
            if cfg.precision == TrainPrecision::Fp8 {
                notes.push(TrainNote::AdapterMatmuls16Bit);
            }
            frozen
        }
    };
    let precision = Precision {
        weights,
        kv: Format::parse(act.name()).unwrap_or(Format::Bf16),
        activations: act,
        experts: weights,
        kernels: Default::default(),
    };
    (precision, frozen)
}

impl<'a> Trainer<'a> {
    /// Validates the configuration against the model and device.
    ///
    /// Errors ([`crate::Error::InvalidValue`] or [`crate::Error::Conflict`], naming the
    /// fields): zero sizes, sizes beyond the modelled range, ZeRO stage above 3, `tp ·
    /// pp` not dividing `gpus`, `tp` not dividing the attention heads (or KV heads), more
    /// stages than layers, more model chunks (`pp · virtual_stages`) than layers,
    /// sequence parallelism over a `seq` that `tp` does not divide, a global batch that
    /// is not a multiple of `micro_batch · dp`, a LoRA rank of 0 or above the smallest
    /// adapted dimension ([`max_lora_rank`]), a network slower than
    /// [`MIN_INTER_NODE_BYTES_PER_S`] (or not finite), offload without a host link,
    /// efficiency factors outside their ranges (or `attention > compute` where attention
    /// is not measured, or measured kernels that are not bundled).
    pub fn new(model: &'a ModelConfig, hardware: &'a Hardware, cfg: &TrainConfig) -> Result<Self> {
        let layout = config::layout(model, hardware, cfg)?;
        // a caller's factors are checked here; the bundled table's were when it was parsed
        let eff = match &cfg.efficiency {
            Some(e) => {
                e.validate()?;
                e.clone()
            }
            None => EfficiencyTable::builtin()?.for_stack(hardware, cfg.stack),
        };
        let overhead = cfg.overhead.unwrap_or(DEFAULT_OVERHEAD);
        require_non_negative("overhead.context_bytes", overhead.context_bytes)?;
        require_non_negative("overhead.fragmentation", overhead.fragmentation)?;

        let mut notes = Vec::new();
        let (precision, frozen) = formats(hardware, cfg, &mut notes);
        if let (Method::Full, Some(rank)) = (cfg.method, cfg.lora_rank) {
            notes.push(TrainNote::LoraRankUnused { rank });
        }
        if layout.ep > 1 {
            notes.push(TrainNote::ExpertParallelOptimistic);
        }
        if layout.cp > 1 {
            notes.push(TrainNote::ContextParallelOptimistic);
        }
        if cfg.seq > model.max_context {
            notes.push(TrainNote::SeqBeyondContext {
                seq: cfg.seq,
                max_context: model.max_context,
            });
        }
        Ok(Trainer {
            model,
            hardware,
            cfg: TrainConfig {
                sequence_parallel: cfg.sequence_parallel && layout.tp > 1,
                ..cfg.clone()
            },
            layout,
            eff,
            overhead,
            precision,
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

    /// The activation formula's shape at `micro_batch` with `recompute`.
    fn act_shape(&self, micro_batch: u64, recompute: Recompute) -> ActivationShape {
        ActivationShape {
            // a context-parallel rank holds the activations of its `seq / cp` tokens
            // (fused attention: none grows with the keys it sees)
            seq: self.cfg.seq / self.layout.cp.max(1),
            micro_batch,
            tp: self.layout.tp,
            sequence_parallel: self.cfg.sequence_parallel,
            flash: self.cfg.flash,
            dropout: self.cfg.dropout,
            recompute,
            act_bytes: self.precision.activations.bytes(),
            eager: self.eager(),
        }
    }

    /// Whether the step runs unfused elementwise kernels (eager PyTorch): neither
    /// compiled nor on a fused-kernel stack (Megatron-Core with TransformerEngine).
    pub(crate) fn eager(&self) -> bool {
        !self.cfg.compile && self.cfg.stack == TrainStack::Generic
    }
}

/// [`crate::Error::Parse`] for `source_name`.
#[doc(hidden)]
pub fn parse_error(source_name: &str, message: impl std::fmt::Display) -> crate::Error {
    crate::Error::Parse {
        source_name: source_name.to_string(),
        message: message.to_string(),
    }
}

/// A TOML document as `T`; errors name `source_name`.
#[doc(hidden)]
pub fn parse_toml<T: serde::de::DeserializeOwned>(text: &str, source_name: &str) -> Result<T> {
    toml::from_str(text).map_err(|e| parse_error(source_name, e))
}

/// A bundled data file, parsed on first use: the parse's result, kept in `cell`.
#[doc(hidden)]
pub fn parsed_once<T>(
    cell: &'static std::sync::OnceLock<Result<T>>,
    parse: impl FnOnce() -> Result<T>,
) -> Result<&'static T> {
    cell.get_or_init(parse).as_ref().map_err(Clone::clone)
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
    let at = |stage: u64| -> Result<TrainMemory> {
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
