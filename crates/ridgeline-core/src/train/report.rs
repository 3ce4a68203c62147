//! The `train --json` document ([`TrainReport`]) and its caveats ([`TrainNote`]).

use super::Trainer;
use super::config::{Layout, Method, Offload, TrainConfig};
use super::efficiency::TrainEfficiency;
use super::memory::{MemoryDetail, TrainMemory, lora_params_in};
use super::step::StepReport;
use serde::Serialize;
use serde::ser::{SerializeStruct, Serializer};

/// The `memory` object of `train --json`.
#[derive(Debug, Clone, Copy, PartialEq, Serialize)]
#[non_exhaustive]
pub struct MemoryReport {
    /// The contract keys.
    #[serde(flatten)]
    pub inner: TrainMemory,
    /// Added detail.
    #[serde(flatten)]
    pub detail: MemoryDetail,
}

/// `model` of the report.
#[derive(Debug, Clone, Serialize)]
#[non_exhaustive]
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
#[non_exhaustive]
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

/// A caveat on a training prediction. Its text (also its JSON, a string) is written by
/// `ridgeline::report::train`.
#[derive(Debug, Clone, PartialEq)]
pub enum TrainNote {
    /// fp8 was asked for on a device without fp8 tensor cores: matmuls are costed in bf16.
    NoFp8 {
        /// The device id.
        device: String,
    },
    /// fp8 with adapters on frozen weights stored below 16 bits (QLoRA): their matmuls run
    /// at 16 bits after dequantization.
    AdapterMatmuls16Bit,
    /// The sequence is longer than the model's trained context.
    SeqBeyondContext {
        /// Tokens per sequence.
        seq: u64,
        /// The model's trained context, tokens.
        max_context: u64,
    },
    /// The configuration does not fit in device memory (the step time is still given).
    DoesNotFit {
        /// Memory needed per device, bytes.
        needed_bytes: f64,
        /// Device capacity, bytes.
        capacity_bytes: f64,
    },
    /// Optimizer states kept in host memory (the CPU update is not timed).
    HostOptimizerStates {
        /// Bytes per device in host memory.
        bytes: f64,
    },
    /// Attention is a large share of the model FLOPs (counted causally): MFUs published
    /// with the full-square count are not comparable.
    AttentionShare {
        /// Attention's share of the model FLOPs, percent.
        percent: f64,
        /// Model FLOPs with attention over the full `s × s` square (PaLM, Megatron-LM)
        /// over the causal count.
        full_square_ratio: f64,
    },
    /// A LoRA rank was given with full training, which has no adapters.
    LoraRankUnused {
        /// The rank given.
        rank: u64,
    },
    /// No global batch was given with pipelining: `4 · pp` micro-batches are assumed.
    DefaultMicroBatches {
        /// Micro-batches per step.
        micro_batches: u64,
    },
    /// A MoE model trained with expert parallelism: the published expert-parallel runs
    /// the project checks against (`calibrate --train`) mostly ran slower than predicted,
    /// as the step holds costs the op counts do not.
    ExpertParallelOptimistic,
    /// Context parallelism: the published context-parallel runs the project checks
    /// against (`calibrate --train`) ran slower than predicted, all but one.
    ContextParallelOptimistic,
}

/// The `train --json` document.
#[derive(Debug, Clone, Serialize)]
#[non_exhaustive]
pub struct TrainReport {
    /// Model.
    pub model: ModelInfo,
    /// Hardware.
    pub hardware: HardwareInfo,
    /// The options as understood: the validated configuration (sequence parallelism
    /// only with tensor parallelism). Its JSON echoes `seq`, `zero`, `method`,
    /// `lora_rank` (0 for full training), `lora_targets`, `recompute`, `precision`, `optimizer`,
    /// `optimizer_in_backward`, `compile`, `stack`, `loss`,
    /// `offload`, `sequence_parallel`, `flash`, `virtual_stages` and
    /// `inter_node_bytes_per_s`.
    #[serde(serialize_with = "echo")]
    pub config: TrainConfig,
    /// Device layout.
    pub layout: Layout,
    /// Per-device memory.
    pub memory: MemoryReport,
    /// One optimizer step.
    pub step: StepReport,
    /// Efficiency factors used.
    pub efficiency: TrainEfficiency,
    /// Caveats.
    pub notes: Vec<TrainNote>,
    /// 80% intervals of `step.tokens_per_s_per_gpu` (kind D residuals) and
    /// `memory.total_bytes` (kind E) from `data/intervals.toml` ([`crate::intervals`]).
    #[serde(skip_serializing_if = "std::collections::BTreeMap::is_empty")]
    pub intervals: crate::intervals::Intervals,
}

/// The `config` object of `train --json`.
fn echo<S: Serializer>(c: &TrainConfig, s: S) -> Result<S::Ok, S::Error> {
    let mut m = s.serialize_struct("config", 17)?;
    m.serialize_field("seq", &c.seq)?;
    m.serialize_field("zero", &c.zero)?;
    m.serialize_field("method", &c.method)?;
    m.serialize_field("lora_rank", &c.effective_lora_rank())?;
    m.serialize_field("lora_targets", &c.lora_targets)?;
    m.serialize_field("recompute", &c.recompute)?;
    m.serialize_field("precision", &c.precision)?;
    m.serialize_field("optimizer", &c.optimizer)?;
    m.serialize_field("offload", &c.offload)?;
    m.serialize_field("optimizer_in_backward", &c.optimizer_in_backward)?;
    m.serialize_field("compile", &c.compile)?;
    m.serialize_field("stack", &c.stack)?;
    m.serialize_field("loss", &c.loss)?;
    m.serialize_field("sequence_parallel", &c.sequence_parallel)?;
    m.serialize_field("flash", &c.flash)?;
    m.serialize_field("virtual_stages", &c.virtual_stages)?;
    m.serialize_field("inter_node_bytes_per_s", &c.inter_node_bytes_per_s)?;
    m.end()
}

impl Trainer<'_> {
    /// Trainable parameters of the whole model: all of them, or the LoRA adapters.
    pub fn trainable_params(&self) -> f64 {
        match self.cfg.method {
            Method::Full => self.model.params().total as f64,
            _ => lora_params_in(
                self.model,
                0..self.model.layer_kinds.len(),
                self.cfg.effective_lora_rank(),
                self.cfg.lora_targets,
            ),
        }
    }

    /// The caveats found in validation plus those of the predicted memory and step.
    fn notes(&self, memory: &TrainMemory, detail: &MemoryDetail) -> Vec<TrainNote> {
        let mut notes = self.notes.clone();
        if !memory.fits {
            notes.push(TrainNote::DoesNotFit {
                needed_bytes: memory.total_bytes,
                capacity_bytes: memory.capacity_bytes,
            });
        }
        if self.cfg.offload == Offload::Cpu {
            notes.push(TrainNote::HostOptimizerStates {
                bytes: detail.host_optimizer_bytes,
            });
        }
        let model_flops = self.model_flops();
        let share = self.tokens_per_step() * self.attention_flops_per_token() / model_flops;
        if share > 0.2 {
            notes.push(TrainNote::AttentionShare {
                percent: 100.0 * share,
                full_square_ratio: self.model_flops_full_square() / model_flops,
            });
        }
        if self.cfg.global_batch.is_none() && self.layout.pp > 1 {
            notes.push(TrainNote::DefaultMicroBatches {
                micro_batches: self.layout.micro_batches,
            });
        }
        notes
    }

    /// The whole report (the `train --json` document).
    pub fn report(&self) -> TrainReport {
        let (inner, detail) = self.memory();
        let step = self.step();
        // the bundled file parses (tests/suite/intervals.rs); an error there leaves no intervals
        let intervals = crate::intervals::IntervalDb::builtin()
            .map(|db| {
                // the rate at an MFU of 1 bounds the interval
                let ideal = if step.mfu > 0.0 {
                    step.tokens_per_s_per_gpu / step.mfu
                } else {
                    f64::INFINITY
                };
                crate::intervals::training(db, step.tokens_per_s_per_gpu, ideal, inner.total_bytes)
            })
            .unwrap_or_default();
        TrainReport {
            model: ModelInfo {
                id: self.model.id.clone(),
                name: self.model.name.clone(),
                params: self.model.params().total,
                trainable_params: self.trainable_params(),
            },
            hardware: HardwareInfo {
                id: self.hardware.id.clone(),
                name: self.hardware.name.clone(),
                count: self.layout.gpus,
                devices_per_node: self.layout.devices_per_node,
            },
            config: self.cfg.clone(),
            layout: self.layout,
            notes: self.notes(&inner, &detail),
            memory: MemoryReport { inner, detail },
            step,
            efficiency: self.eff.clone(),
            intervals,
        }
    }
}
