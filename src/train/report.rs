//! The `train --json` document ([`TrainReport`]) and its caveats ([`TrainNote`]).

use super::Trainer;
use super::config::{Layout, Method, Offload, Optimizer, Recompute, TrainPrecision};
use super::efficiency::TrainEfficiency;
use super::memory::{MemoryDetail, TrainMemory, lora_params_per_layer};
use super::step::StepReport;
use serde::Serialize;

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
    pub zero: u64,
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

/// A caveat on a training prediction. The text of each (and its JSON, a string) is
/// written by `crate::report::train`.
#[derive(Debug, Clone, PartialEq)]
pub enum TrainNote {
    /// fp8 was asked for on a device without fp8 tensor cores: matmuls are costed in bf16.
    NoFp8 {
        /// The device id.
        device: String,
    },
    /// fp8 with LoRA/QLoRA: the matmuls on the frozen weights run at 16 bits.
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
    /// Attention is a large share of the model FLOPs, counted over the full square.
    AttentionShare {
        /// Attention's share of the model FLOPs, percent.
        percent: f64,
    },
    /// No global batch was given with pipelining: `4 · pp` micro-batches are assumed.
    DefaultMicroBatches {
        /// Micro-batches per step.
        micro_batches: u64,
    },
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
    pub notes: Vec<TrainNote>,
}

impl Trainer<'_> {
    /// Trainable parameters of the whole model: all of them, or the LoRA adapters.
    pub fn trainable_params(&self) -> f64 {
        match self.cfg.method {
            Method::Full => self.model.params().total as f64,
            _ => {
                self.model.layers as f64
                    * lora_params_per_layer(self.model, self.cfg.lora_rank, self.cfg.lora_targets)
            }
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
        let dense = 6.0 * self.model.params().total as f64;
        let attn = self.attention_flops_per_token();
        if attn > dense * 0.25 {
            notes.push(TrainNote::AttentionShare {
                percent: 100.0 * attn / (attn + dense),
            });
        }
        if self.cfg.global_batch.is_none() && self.layout.pp > 1 {
            notes.push(TrainNote::DefaultMicroBatches {
                micro_batches: self.layout.micro_batches,
            });
        }
        notes
    }

    fn config_echo(&self) -> ConfigEcho {
        let c = &self.cfg;
        ConfigEcho {
            seq: c.seq,
            zero: c.zero,
            method: c.method,
            lora_rank: if c.method == Method::Full {
                0
            } else {
                c.lora_rank
            },
            recompute: c.recompute,
            precision: c.precision,
            optimizer: c.optimizer,
            offload: c.offload,
            sequence_parallel: c.sequence_parallel,
            flash: c.flash,
            virtual_stages: c.virtual_stages,
            inter_node_bytes_per_s: c.inter_node_bytes_per_s,
        }
    }

    /// The whole report (the `train --json` document).
    pub fn report(&self) -> TrainReport {
        let (inner, detail) = self.memory();
        let step = self.step();
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
            config: self.config_echo(),
            layout: self.layout,
            notes: self.notes(&inner, &detail),
            memory: MemoryReport { inner, detail },
            step,
            efficiency: self.eff.clone(),
        }
    }
}
