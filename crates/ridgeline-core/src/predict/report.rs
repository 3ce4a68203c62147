//! The `predict --json` document: [`Prediction`] and its parts, built by
//! [`Predictor::predict`] from a [`super::Summary`] and the per-op placements.

use super::pass::Part;
use super::{Draft, Predictor, Scenario, Speculation, Summary, decode_context, ratio};
use crate::dtype::{ComputeDtype, Format};
use crate::engine::Engine;
use crate::error::Result;
use crate::hardware::Hardware;
use crate::memory::{InferenceMemory, Parallel};
use crate::model::ModelConfig;
use crate::model::graph::OpInstance;
use crate::model::graph::{OpKind, Phase, Step, Unit};
use crate::roofline::Bound;
use serde::Serialize;

impl Predictor<'_> {
    /// The full prediction with the per-op table (the `predict --json` document).
    pub fn predict(&self, batch: u64, prompt: u64, gen_tokens: u64) -> Result<Prediction> {
        Scenario::validate_shape(batch, prompt, gen_tokens)?;
        let s = self.summary(batch, prompt, gen_tokens);
        let params = self.model.params();
        let mid = decode_context(prompt, gen_tokens);
        let ops = self.op_reports(batch, prompt, mid, s.offloaded_bytes);
        let b = batch as f64;
        let mut notes: Vec<Note> = (self.model.approximations.iter())
            .map(|a| Note::Approximation(a.clone()))
            .collect();
        let (wanted, used) = self.matmul_dtypes;
        if used != wanted {
            notes.push(Note::NearestPeak { wanted, used });
        }
        if prompt + gen_tokens > self.model.max_context {
            notes.push(Note::BeyondContext {
                tokens: prompt + gen_tokens,
                max_context: self.model.max_context,
            });
        }
        if s.offloaded_bytes > 0.0 {
            notes.push(Note::Offloaded {
                bytes: s.offloaded_bytes,
            });
        }
        if !s.memory.fits {
            notes.push(Note::DoesNotFit);
        }
        if self.overlap_ep {
            notes.push(Note::OverlappedExpertComm);
        }
        let domain = self.hardware.domain_devices();
        if self.gpus > domain {
            notes.push(Note::BeyondScaleUp {
                gpus: self.gpus,
                domain,
                network_bytes_per_s: self.network_bw,
            });
        }
        let profile = crate::engine::on_vendor(&self.engine.id, &self.hardware.vendor);
        if profile != self.engine.id {
            notes.push(Note::OtherVendorProfile {
                engine: self.engine.id.clone(),
                vendor: self.hardware.vendor.clone(),
                profile: profile.to_string(),
            });
        }
        if let Some(k) = self.kernels() {
            notes.push(Note::KernelTables {
                device: k.device.clone(),
                transferred: k.source != crate::kernels::Source::Measured,
                engine: self.engine.id.clone(),
                refit: self.engine.provenance.on_tables,
            });
        }
        let ridge = self.matmul.ridge_point();
        let generation = GenerationReport::from_summary(&s, batch, gen_tokens);
        let prefill_tokens_per_s = ratio(b * prompt as f64, s.prefill.time_s);
        let intervals = crate::intervals::inference(
            crate::intervals::IntervalDb::builtin()?,
            &self.engine.id,
            batch,
            [
                generation.decode_tokens_per_s,
                generation.output_tokens_per_s,
                generation.ttft_s,
                generation.tpot_s,
                prefill_tokens_per_s,
            ],
            [
                generation.roofline_decode_tokens_per_s,
                ratio(
                    b * gen_tokens as f64,
                    s.prefill.roofline_time_s + s.decode_total_roofline_s,
                ),
                generation.roofline_ttft_s,
                generation.roofline_tpot_s,
                ratio(b * prompt as f64, s.prefill.roofline_time_s),
            ],
        );
        let mut factors = factor_reports(self.engine, self.hardware, self.model.is_moe());
        factors.extend(self.gemm_dtype_reports());
        factors.extend(self.all_reduce_latency_report());
        factors.extend(self.shortest_kernel_report());
        Ok(Prediction {
            factors,
            model: ModelInfo {
                id: self.model.id.clone(),
                name: self.model.name.clone(),
                params: params.total,
                active_params: params.active,
            },
            hardware: HardwareInfo {
                id: self.hardware.id.clone(),
                name: self.hardware.name.clone(),
                count: self.gpus,
                ridge_point: ridge,
                peak_flops_per_s: self.matmul.peak_flops_per_s,
                bandwidth_bytes_per_s: self.matmul.memory_bytes_per_s,
            },
            config: ConfigInfo {
                batch,
                prompt,
                r#gen: gen_tokens,
                weights: self.precision.weights,
                experts: (self.precision.experts != self.precision.weights
                    && self.model.experts > 1)
                    .then_some(self.precision.experts),
                kv: self.precision.kv,
                activations: self.precision.activations,
                engine: self.engine.id.clone(),
                parallel: self.parallel,
                ep: self.ep,
                expert_imbalance: self.expert_imbalance,
                flash: self.flash,
            },
            memory: MemoryReport {
                inner: s.memory,
                offloaded_bytes: s.offloaded_bytes,
                max_batch: self.max_batch(prompt, gen_tokens),
                max_context: self.max_context(batch),
                max_context_in_memory: self.max_context_in_memory(batch),
                kv_bytes_per_token: self.kv_bytes_per_token(),
            },
            prefill: PrefillReport {
                flops: s.prefill.flops,
                bytes: s.prefill.bytes,
                arithmetic_intensity: s.prefill.intensity(),
                time_s: s.prefill.time_s,
                roofline_time_s: s.prefill.roofline_time_s,
                bound: s.prefill.bound(),
                tokens_per_s: prefill_tokens_per_s,
            },
            decode: DecodeReport {
                context: mid,
                flops_per_step: s.decode.flops,
                bytes_per_step: s.decode.bytes,
                weight_bytes_per_step: s.decode.weight_bytes,
                kv_bytes_per_step: s.decode.kv_bytes,
                arithmetic_intensity: s.decode.intensity(),
                time_per_step_s: s.decode.time_s,
                roofline_time_per_step_s: s.decode.roofline_time_s,
                overhead_per_step_s: s.decode.by_bound[3],
                bound: s.decode.bound(),
                tokens_per_s: ratio(b, s.decode.time_s),
                roofline_tokens_per_s: ratio(b, s.decode.roofline_time_s),
                compute_bound_batch: self.compute_bound_batch(mid),
            },
            generation,
            speculative: self.speculative_report(batch, mid, &s),
            architecture: self.architecture(batch, mid),
            ops,
            notes,
            intervals,
        })
    }

    /// The `ops` table: every op of the prefill (over all its passes when it runs in
    /// chunks, [`Predictor::prefill_chunks`]), then of the decode step (or of the
    /// verify pass and one draft step), placed; with offload, each phase's host stream
    /// as a `host_offload` row.
    fn op_reports(&self, batch: u64, prompt: u64, mid: u64, offloaded: f64) -> Vec<OpReport> {
        let mut ops: Vec<OpReport> = Vec::new();
        let (mut passes, mut streamed) = (0.0, 0.0);
        let fallback = self.fallback_source();
        self.prefill_chunks(batch, prompt, |step, w| {
            passes += w;
            streamed +=
                w * self.streamed_bytes(offloaded, step.batch.saturating_mul(step.new_tokens));
            // the passes have the same ops in the same order (the last adds the lm_head)
            let mut at = 0;
            for op in self.part_graph(Part::Plain, step).ops() {
                let r = self.op_report(op, Phase::Prefill, (Part::Plain, step), fallback);
                match ops[at..]
                    .iter()
                    .position(|o| o.kind == r.kind && o.unit == r.unit)
                {
                    Some(i) => {
                        at += i;
                        ops[at].add_scaled(&r, w);
                        at += 1;
                    }
                    None => {
                        let mut first = r.clone();
                        first.scale(w);
                        ops.push(first);
                        at = ops.len();
                    }
                }
            }
        });
        ops.extend(self.offload_report(Phase::Prefill, passes, streamed, fallback));
        let (parts, n) = self.decode_parts();
        for &(part, _) in &parts[..n] {
            let phase = if part == Part::Draft {
                Phase::Draft
            } else {
                Phase::Decode
            };
            let step = Step::decode(batch, mid);
            for op in self.part_graph(part, &step).ops() {
                ops.push(self.op_report(op, phase, (part, &step), fallback));
            }
            if part != Part::Draft {
                // as the pass's time counts it (Predictor::finish_part)
                let bytes = self.streamed_bytes(offloaded, batch);
                ops.extend(self.offload_report(phase, 1.0, bytes, fallback));
            }
        }
        ops
    }

    /// The `host_offload` row of `passes` passes streaming `bytes` in all (its time
    /// from `source`, the engine's).
    fn offload_report(
        &self,
        phase: Phase,
        passes: f64,
        bytes: f64,
        source: super::CostSource,
    ) -> Option<OpReport> {
        let (time_s, roofline_time_s) = self.stream_time(bytes);
        (time_s > 0.0).then_some(OpReport {
            kind: OpKind::HostOffload,
            phase,
            count: passes,
            flops: 0.0,
            bytes: 0.0,
            link_bytes: bytes,
            arithmetic_intensity: 0.0,
            attainable_flops_per_s: 0.0,
            time_s,
            roofline_time_s,
            bound: Bound::Communication,
            unit: Unit::Vector,
            source,
            efficiency_source: source.into(),
        })
    }

    /// One op of a pass of `part` over `step` placed, as a row of `ops` (`fallback`:
    /// where the time of an op no kernel table covers comes from).
    fn op_report(
        &self,
        op: &OpInstance,
        phase: Phase,
        (part, step): (Part, &Step),
        fallback: super::CostSource,
    ) -> OpReport {
        let (p, source) = self.place_op_in(op, part, step);
        let source = source.unwrap_or(fallback);
        OpReport {
            kind: op.kind,
            phase,
            count: op.count,
            flops: p.flops,
            bytes: p.bytes,
            link_bytes: p.link_bytes,
            arithmetic_intensity: finite(p.arithmetic_intensity),
            attainable_flops_per_s: p.attainable_flops_per_s,
            time_s: p.time_s,
            roofline_time_s: p.roofline_time_s,
            bound: p.bound,
            unit: op.unit,
            source,
            efficiency_source: source.into(),
        }
    }

    /// The `speculative` object: what a verify pass yields and costs at `mid`.
    fn speculative_report(&self, batch: u64, mid: u64, s: &Summary) -> Option<SpeculativeReport> {
        let spec = self.spec?;
        let step = Step::decode(batch, mid);
        let time = |part: Part| {
            self.part_ops(part, &step).map_or(0.0, |r| {
                self.finish_part(part, r, batch, batch, s.offloaded_bytes)
                    .time_s
            })
        };
        Some(SpeculativeReport {
            settings: spec,
            draft: match self.draft {
                Draft::Head if self.model.mtp_layers > 0 => "mtp".to_string(),
                Draft::Head => "eagle".to_string(),
                Draft::Model(d, _) => d.id.clone(),
            },
            tokens_per_verify: spec.tokens_per_verify(),
            verify_time_s: time(Part::Verify(spec.k)),
            draft_time_s: spec.k as f64 * time(Part::Draft),
            speedup: s.speedup,
            break_even_batch: self.spec_break_even_batch(mid),
        })
    }
}

/// `speculative` in the prediction document (with `--spec-k`): the decode figures
/// above are then per output token, a verify pass and its drafts over the tokens a
/// verify pass yields.
#[derive(Debug, Clone, Serialize)]
#[non_exhaustive]
pub struct SpeculativeReport {
    /// `k` and `accept`.
    #[serde(flatten)]
    pub settings: Speculation,
    /// Where drafts come from: `mtp` (the checkpoint's multi-token-prediction module),
    /// `eagle` (an EAGLE-style one-layer head), or the draft model's id.
    pub draft: String,
    /// Expected tokens per verify pass, `(1 - a^(k+1)) / (1 - a)`.
    pub tokens_per_verify: f64,
    /// One verify pass (`k + 1` tokens per sequence) at the reported context, s.
    pub verify_time_s: f64,
    /// The `k` draft steps before it, s.
    pub draft_time_s: f64,
    /// Plain decode step time over time per output token at this batch.
    pub speedup: f64,
    /// Smallest batch at which speculation stops paying (null: not below 2^20).
    pub break_even_batch: Option<u64>,
}

fn finite(x: f64) -> f64 {
    if x.is_finite() { x } else { f64::MAX }
}

/// `model` in the prediction document.
#[derive(Debug, Clone, Serialize)]
#[non_exhaustive]
pub struct ModelInfo {
    /// Model id.
    pub id: String,
    /// Human name.
    pub name: String,
    /// Total parameters.
    pub params: u64,
    /// Parameters used per token (MoE: routed experts only).
    pub active_params: u64,
}

/// `hardware` in the prediction document.
#[derive(Debug, Clone, Serialize)]
#[non_exhaustive]
pub struct HardwareInfo {
    /// Device id.
    pub id: String,
    /// Device name.
    pub name: String,
    /// Devices.
    pub count: u64,
    /// Ridge point of the weight matmul dtype, FLOP/byte.
    pub ridge_point: f64,
    /// Peak of the weight matmul dtype, FLOP/s.
    pub peak_flops_per_s: f64,
    /// Memory bandwidth, bytes/s.
    pub bandwidth_bytes_per_s: f64,
}

/// `config` in the prediction document.
#[derive(Debug, Clone, Serialize)]
#[non_exhaustive]
pub struct ConfigInfo {
    /// Sequences.
    pub batch: u64,
    /// Prompt tokens.
    pub prompt: u64,
    /// Generated tokens.
    pub r#gen: u64,
    /// Weight format.
    pub weights: Format,
    /// Format of the routed experts, where it differs from `weights` (a checkpoint
    /// that ships them in their own format, as gpt-oss's mxfp4).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub experts: Option<Format>,
    /// KV format.
    pub kv: Format,
    /// Activation dtype.
    pub activations: ComputeDtype,
    /// Engine id.
    pub engine: String,
    /// How the devices split the model.
    pub parallel: Parallel,
    /// Expert-parallel groups (1: none).
    pub ep: u64,
    /// The busiest expert-parallel rank's routed rows over the mean's, at least
    /// (`--expert-imbalance`; 1: uniform routing alone).
    pub expert_imbalance: f64,
    /// Fused attention.
    pub flash: bool,
}

/// `memory` in the prediction document (per device).
#[derive(Debug, Clone, Serialize)]
#[non_exhaustive]
pub struct MemoryReport {
    /// The contract keys.
    #[serde(flatten)]
    pub inner: InferenceMemory,
    /// Weights streamed from host memory per pass (offload), bytes.
    pub offloaded_bytes: f64,
    /// Largest batch that fits at this prompt + gen.
    pub max_batch: u64,
    /// Largest context that fits at this batch, capped at the model's trained context.
    pub max_context: u64,
    /// Largest context memory alone allows at this batch (may exceed the trained
    /// context).
    pub max_context_in_memory: u64,
    /// KV cache per token of one sequence on the most loaded device, bytes.
    pub kv_bytes_per_token: f64,
}

/// `prefill` in the prediction document.
#[derive(Debug, Clone, Serialize)]
#[non_exhaustive]
pub struct PrefillReport {
    /// FLOPs per device (tensor parallel), or of the whole pipeline (pipeline parallel:
    /// its stages run one after another).
    pub flops: f64,
    /// Memory bytes per device (tensor parallel), or of the whole pipeline.
    pub bytes: f64,
    /// FLOP/byte.
    pub arithmetic_intensity: f64,
    /// Predicted time (= TTFT), s.
    pub time_s: f64,
    /// Ideal roofline time, s.
    pub roofline_time_s: f64,
    /// Dominant bound.
    pub bound: Bound,
    /// batch × prompt / time.
    pub tokens_per_s: f64,
}

/// `decode` in the prediction document: one step at context `prompt + gen/2`.
#[derive(Debug, Clone, Serialize)]
#[non_exhaustive]
pub struct DecodeReport {
    /// Context of the step.
    pub context: u64,
    /// FLOPs per step per device (tensor parallel), or of the whole pipeline.
    pub flops_per_step: f64,
    /// Memory bytes per step per device (tensor parallel), or of the whole pipeline.
    pub bytes_per_step: f64,
    /// Of which weights, bytes.
    pub weight_bytes_per_step: f64,
    /// Of which KV cache, bytes.
    pub kv_bytes_per_step: f64,
    /// FLOP/byte.
    pub arithmetic_intensity: f64,
    /// Predicted step time, s.
    pub time_per_step_s: f64,
    /// Ideal roofline step time, s.
    pub roofline_time_per_step_s: f64,
    /// Of the step time, what fixed costs take, s: the engine's overheads per step,
    /// per layer (its kernel launches: [`super::Architecture::kernels_per_layer`]) and
    /// per sequence, and the ops a fixed latency bounds (small all-reduces).
    pub overhead_per_step_s: f64,
    /// Dominant bound.
    pub bound: Bound,
    /// batch / step time.
    pub tokens_per_s: f64,
    /// batch / ideal step time.
    pub roofline_tokens_per_s: f64,
    /// Smallest batch at which this step turns compute-bound (ideal), or null.
    pub compute_bound_batch: Option<u64>,
}

/// `generation` in the prediction document.
#[derive(Debug, Clone, Serialize)]
#[non_exhaustive]
pub struct GenerationReport {
    /// Time to first token (the prefill), s.
    pub ttft_s: f64,
    /// Mean time per output token over the decode steps, s.
    pub tpot_s: f64,
    /// TTFT + all decode steps, s.
    pub total_s: f64,
    /// batch × gen / total_s.
    pub output_tokens_per_s: f64,
    /// batch × decode steps / decode time (what `llama-bench tg` reports).
    pub decode_tokens_per_s: f64,
    /// Ideal TTFT, s.
    pub roofline_ttft_s: f64,
    /// Ideal time per output token, s.
    pub roofline_tpot_s: f64,
    /// Ideal decode tokens/s.
    pub roofline_decode_tokens_per_s: f64,
}

impl GenerationReport {
    /// The one home of the derived generation metrics: TTFT is the prefill; the
    /// generation adds the summary's decode steps (see [`super::decode_steps`]: with a
    /// prompt the prefill makes the first token), so `total_s = ttft_s + steps x tpot_s`;
    /// per-token and per-second figures divide by the tokens made (0 where none is).
    pub fn from_summary(s: &Summary, batch: u64, gen_tokens: u64) -> GenerationReport {
        let b = batch as f64;
        let steps = s.decode_steps as f64;
        let ttft = s.prefill.time_s;
        let total = ttft + s.decode_total_s;
        GenerationReport {
            ttft_s: ttft,
            tpot_s: ratio(s.decode_total_s, steps),
            total_s: total,
            output_tokens_per_s: ratio(b * gen_tokens as f64, total),
            decode_tokens_per_s: ratio(b * steps, s.decode_total_s),
            roofline_ttft_s: s.prefill.roofline_time_s,
            roofline_tpot_s: ratio(s.decode_total_roofline_s, steps),
            roofline_decode_tokens_per_s: ratio(b * steps, s.decode_total_roofline_s),
        }
    }
}

/// One row of `ops`.
#[derive(Debug, Clone, Serialize)]
#[non_exhaustive]
pub struct OpReport {
    /// What the op is (serialized as its name, `qkv_proj`).
    #[serde(rename = "name")]
    pub kind: OpKind,
    /// Prefill or decode.
    pub phase: Phase,
    /// Executions per pass.
    pub count: f64,
    /// FLOPs of all executions.
    pub flops: f64,
    /// Memory bytes of all executions.
    pub bytes: f64,
    /// Link bytes of all executions.
    pub link_bytes: f64,
    /// FLOP/byte.
    pub arithmetic_intensity: f64,
    /// Ideal attainable FLOP/s.
    pub attainable_flops_per_s: f64,
    /// Predicted time of all executions, s.
    pub time_s: f64,
    /// Ideal time, s.
    pub roofline_time_s: f64,
    /// Which ceiling binds.
    pub bound: Bound,
    /// Compute unit / dtype (`bf16`, `fp8`, `vector`).
    pub unit: Unit,
    /// Where the time comes from: `measured` or `transferred` (a kernel table of the
    /// device or of its sibling, [`Predictor::with_kernels`]), `fitted` (the engine's
    /// efficiencies), `physics` (the `ideal` engine).
    pub source: super::CostSource,
    /// The same, in the interface contract's words (`efficiency_source`): `measured`,
    /// `transferred`, `fitted` or `ideal` (the `ideal` engine's pure roofline).
    pub efficiency_source: super::EfficiencySource,
}

impl OpReport {
    /// Scales the totals by `w` (an op run `w` times as often).
    fn scale(&mut self, w: f64) {
        let one = self.clone();
        *self = OpReport {
            count: 0.0,
            flops: 0.0,
            bytes: 0.0,
            link_bytes: 0.0,
            time_s: 0.0,
            roofline_time_s: 0.0,
            ..one.clone()
        };
        self.add_scaled(&one, w);
    }

    /// Adds `w` times `other` (the same op in another pass): totals add, the intensity
    /// is recomputed, and the rate, bound and source are those of the pass taking
    /// longer.
    fn add_scaled(&mut self, other: &OpReport, w: f64) {
        if other.time_s * w > self.time_s {
            self.attainable_flops_per_s = other.attainable_flops_per_s;
            self.bound = other.bound;
            self.source = other.source;
        }
        self.count += w * other.count;
        self.flops += w * other.flops;
        self.bytes += w * other.bytes;
        self.link_bytes += w * other.link_bytes;
        self.time_s += w * other.time_s;
        self.roofline_time_s += w * other.roofline_time_s;
        self.arithmetic_intensity = if self.flops == 0.0 {
            0.0
        } else {
            finite(self.flops / self.bytes)
        };
    }
}

/// A caveat attached to a prediction: data here, a sentence in
/// `ridgeline::report::notes`.
#[derive(Debug, Clone, PartialEq)]
pub enum Note {
    /// Something the model's config could only be approximated by (see
    /// [`ModelConfig::approximations`]).
    Approximation(String),
    /// The device publishes no peak for the weights' matmul dtype; the nearest
    /// published rate was used.
    NearestPeak {
        /// The dtype the matmuls run in.
        wanted: ComputeDtype,
        /// The dtype whose peak was used.
        used: ComputeDtype,
    },
    /// Prompt plus generation exceed the model's trained context.
    BeyondContext {
        /// Prompt + gen tokens per sequence.
        tokens: u64,
        /// The model's trained context.
        max_context: u64,
    },
    /// Weights streamed from host memory every pass (offload).
    Offloaded {
        /// Bytes per device per pass.
        bytes: f64,
    },
    /// The configuration does not fit in device memory; times are what it would take
    /// if it did.
    DoesNotFit,
    /// The devices span more than one scale-up domain (or node): collectives and
    /// pipeline sends between domains cross the network
    /// (`crate::hardware::group_bandwidth`).
    BeyondScaleUp {
        /// Devices.
        gpus: u64,
        /// Devices per domain.
        domain: u64,
        /// Network bandwidth per device between domains, bytes/s.
        network_bytes_per_s: f64,
    },
    /// Each pass hides its expert all-to-all behind its other ops
    /// ([`crate::predict::Scenario::overlap_ep`]): the step is shorter than the sum of
    /// the op table.
    OverlappedExpertComm,
    /// The engine runs as another profile on this device's vendor
    /// ([`crate::engine::on_vendor`]: vLLM and SGLang on AMD devices run under ROCm), and
    /// the prediction used the engine's own factors, fitted on its rows elsewhere.
    OtherVendorProfile {
        /// The engine id asked for.
        engine: String,
        /// The device's vendor.
        vendor: String,
        /// The profile fitted on the engine's rows on that vendor's devices.
        profile: String,
    },
    /// Ops a measured kernel table covers cost their measured times
    /// ([`Predictor::with_kernels`]).
    KernelTables {
        /// The device whose table was read.
        device: String,
        /// Whether that is a sibling's table (else the device's own).
        transferred: bool,
        /// The engine id.
        engine: String,
        /// Whether the engine's profile refitted on the tables prices the rest
        /// ([`crate::engine::EngineDb::on_tables`]), else its own.
        refit: bool,
    },
}

/// The planning limits of `predict --max`.
#[derive(Debug, Clone, Serialize)]
#[non_exhaustive]
pub struct Limits {
    /// Model id.
    pub model: String,
    /// Device id.
    pub hardware: String,
    /// Devices.
    pub gpus: u64,
    /// Weight format.
    pub weights: Format,
    /// KV format.
    pub kv: Format,
    /// Batch the context limit is for.
    pub batch: u64,
    /// Prompt tokens the batch limit is for.
    pub prompt: u64,
    /// Generated tokens the batch limit is for.
    pub r#gen: u64,
    /// Largest batch that fits at `prompt + gen` tokens per sequence.
    pub max_batch: u64,
    /// Longest context (tokens per sequence) that fits at `batch`, capped at the
    /// model's trained context.
    pub max_context: u64,
    /// Longest context memory alone allows at `batch`.
    pub max_context_in_memory: u64,
    /// Weights per device, bytes.
    pub weights_bytes: f64,
    /// KV cache per token of one sequence on one device, bytes.
    pub kv_bytes_per_token: f64,
    /// Device capacity, bytes.
    pub capacity_bytes: f64,
}

impl Prediction {
    /// Where the devices span several scale-up domains: how many, and the network
    /// bandwidth per device between them, bytes/s (from [`Note::BeyondScaleUp`]).
    pub fn network(&self) -> Option<(u64, f64)> {
        self.notes.iter().find_map(|n| match n {
            Note::BeyondScaleUp {
                gpus,
                domain,
                network_bytes_per_s,
            } => Some((gpus.div_ceil((*domain).max(1)), *network_bytes_per_s)),
            _ => None,
        })
    }

    /// The planning limits (`predict --max`).
    pub fn limits(&self) -> Limits {
        let c = &self.config;
        let m = &self.memory.inner;
        Limits {
            model: self.model.id.clone(),
            hardware: self.hardware.id.clone(),
            gpus: self.hardware.count,
            weights: c.weights,
            kv: c.kv,
            batch: c.batch,
            prompt: c.prompt,
            r#gen: c.r#gen,
            max_batch: self.memory.max_batch,
            max_context: self.memory.max_context,
            max_context_in_memory: self.memory.max_context_in_memory,
            weights_bytes: m.weights_bytes,
            kv_bytes_per_token: self.memory.kv_bytes_per_token,
            capacity_bytes: m.capacity_bytes,
        }
    }
}

/// The `predict --json` document.
#[derive(Debug, Clone, Serialize)]
#[non_exhaustive]
pub struct Prediction {
    /// Model.
    pub model: ModelInfo,
    /// Device(s).
    pub hardware: HardwareInfo,
    /// Configuration.
    pub config: ConfigInfo,
    /// Memory per device.
    pub memory: MemoryReport,
    /// Prefill.
    pub prefill: PrefillReport,
    /// Decode step at mid-generation context.
    pub decode: DecodeReport,
    /// Whole generation.
    pub generation: GenerationReport,
    /// Speculative decoding, when on.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub speculative: Option<SpeculativeReport>,
    /// What the architecture does to the cache and the work.
    pub architecture: super::Architecture,
    /// Per-op placements for prefill and the decode step (with speculative decoding:
    /// the verify pass under `decode` and one draft step under `draft`).
    pub ops: Vec<OpReport>,
    /// Caveats (serialized as sentences, see `ridgeline::report::notes`).
    pub notes: Vec<Note>,
    /// 80% intervals of the headline numbers by dotted path, from the held-out errors
    /// of the engine and kind ([`crate::intervals`]); empty (not written) for `ideal`.
    #[serde(skip_serializing_if = "std::collections::BTreeMap::is_empty")]
    pub intervals: crate::intervals::Intervals,
    /// The engine factors that price this prediction's ops (those no kernel table
    /// covers) and its passes, each with where it came from.
    pub factors: Vec<FactorReport>,
}

/// Where a factor's value comes from ([`FactorReport::source`]).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "lowercase")]
pub enum FactorSource {
    /// Fitted on published measurements ([`crate::engine::FactorTag::Fitted`]).
    Fitted,
    /// Derived from another profile's value ([`crate::engine::FactorTag::Carried`]).
    Carried,
    /// Not fitted: the value the profile gives (by hand, or the prior a fit started
    /// from; the engine file's remarks say which).
    Given,
    /// The pure roofline (the `ideal` engine): no factor at all.
    Physics,
    /// Measured on the device's own kernel tables (`data/kernels/gemm-dtypes.toml`,
    /// `data/kernels/all-reduce-latency.toml`).
    Measured,
    /// Measured on a sibling device's kernel tables.
    Transferred,
}

/// One engine factor behind a prediction (`factors[]` of `predict --json`).
#[derive(Debug, Clone, PartialEq, Serialize)]
#[non_exhaustive]
pub struct FactorReport {
    /// The factor as the fit names it (`compute_efficiency`, `memory_efficiency.hbm`,
    /// `apple_compute_efficiency`, `step_overhead_s`, ...).
    pub name: String,
    /// Its value (a fraction, or seconds for `*_s`).
    pub value: f64,
    /// Where the value comes from.
    pub source: FactorSource,
    /// The provenance as a sentence (`fitted on 19 rows from 6 devices in 5
    /// publications`), where the profile records one.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub tag: Option<String>,
    /// Rows that fitted it (fitted only).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub rows: Option<u32>,
    /// Distinct devices among those rows (fitted only).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub devices: Option<u32>,
    /// Distinct publications among those rows (fitted only).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub publications: Option<u32>,
    /// The one device those rows are from, where they are all from one (fitted only):
    /// on another device the factor is an assumption.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub device: Option<String>,
}

/// The factors of `engine` that price a prediction on `hw`: its compute and memory
/// efficiencies as they apply to the device (a device override's compute efficiency
/// where one selects it), the attention efficiency and the three overheads, each with
/// its tag ([`crate::engine::Provenance::factors`]).
pub(crate) fn factor_reports(engine: &Engine, hw: &Hardware, moe: bool) -> Vec<FactorReport> {
    use crate::engine::{DeviceFactor, FactorTag, memory_keys};
    let physics = engine.is_physics();
    let memory_key = memory_keys(hw)
        .into_iter()
        .flatten()
        .find(|k| engine.speed.memory_efficiency.contains_key(*k))
        .unwrap_or("default");
    // the name of the device override that sets `f` on `hw`, if one does
    let keyed = |f: DeviceFactor| {
        (engine.devices.iter())
            .find(|o| o.select.matches(hw) && f.of(o).is_some())
            .map(|o| f.name_under(&o.select))
    };
    let memory_name = keyed(DeviceFactor::MemoryEfficiency)
        .unwrap_or_else(|| format!("memory_efficiency.{memory_key}"));
    let compute_name =
        keyed(DeviceFactor::ComputeEfficiency).unwrap_or_else(|| "compute_efficiency".into());
    let (sp, oh) = (&engine.speed, &engine.overheads);
    let mut named = vec![
        (compute_name, engine.compute_efficiency_on(hw)),
        (memory_name, engine.memory_efficiency(hw)),
        ("attention_efficiency".to_string(), sp.attention_efficiency),
        ("step_overhead_s".to_string(), oh.step_overhead_s),
        ("layer_overhead_s".to_string(), oh.layer_overhead_s),
        (
            "prefill_layer_overhead_s".to_string(),
            oh.prefill_layer_overhead_s,
        ),
    ];
    // the host time per sequence, where a profile has one (`vllm-0.5` among the bundled)
    if oh.sequence_overhead_s > 0.0 {
        named.push(("sequence_overhead_s".to_string(), oh.sequence_overhead_s));
    }
    // the factor that prices the matrix-vector kernels' further rows, where the device
    // has one (llama.cpp on Apple GPUs among the bundled)
    if let Some((factor, value)) = engine.gemv_factor_on(hw) {
        let name = keyed(factor).unwrap_or_else(|| factor.key().to_string());
        named.push((name, value));
    }
    // a MoE model's expert kernels' share of the memory efficiency, where the device
    // has one (llama.cpp on the M2 Ultra among the bundled)
    if moe {
        if let Some(name) = keyed(DeviceFactor::ExpertMemoryEfficiency) {
            named.push((name, engine.expert_memory_efficiency_on(hw)));
        } else if sp.expert_memory_efficiency != 1.0 {
            let name = "expert_memory_efficiency".to_string();
            named.push((name, sp.expert_memory_efficiency));
        }
    }
    named
        .into_iter()
        .map(|(name, value)| {
            let tag = engine.provenance.factors.get(&name);
            let (source, rows, devices, publications, device) = match tag {
                _ if physics => (FactorSource::Physics, None, None, None, None),
                Some(FactorTag::Fitted {
                    rows,
                    devices,
                    publications,
                    device,
                }) => (
                    FactorSource::Fitted,
                    Some(*rows),
                    Some(*devices),
                    Some(*publications),
                    device.clone(),
                ),
                Some(FactorTag::Carried { .. }) => (FactorSource::Carried, None, None, None, None),
                None => (FactorSource::Given, None, None, None, None),
            };
            FactorReport {
                tag: tag.filter(|_| !physics).map(|t| t.to_string()),
                name,
                value,
                source,
                rows,
                devices,
                publications,
                device,
            }
        })
        .collect()
}

impl Predictor<'_> {
    /// The measured fp8 and fp4 matmul factors this prediction applies
    /// ([`crate::kernels::GemmDtypes`]): fp8's memory factor, fp4's compute and memory
    /// factors, where its weight matmuls run in that dtype and the device (or its
    /// sibling) was measured.
    fn gemm_dtype_reports(&self) -> Vec<FactorReport> {
        use crate::dtype::ComputeDtype;
        let Some(g) = self.gemm_dtypes else {
            return Vec::new();
        };
        let (source, whose) = match &g.from {
            Some(f) => (FactorSource::Transferred, f.as_str()),
            None => (FactorSource::Measured, self.hardware.id.as_str()),
        };
        let mut out = Vec::new();
        for (d, f) in [(ComputeDtype::Fp8, g.fp8), (ComputeDtype::Fp4, g.fp4)] {
            let Some(f) = f else { continue };
            if !self.matmuls.iter().any(|m| m.0 == d) {
                continue;
            }
            let mut named = vec![("memory", f.memory, f.memory_points)];
            if d == ComputeDtype::Fp4 {
                named.insert(0, ("compute", f.compute, f.compute_points));
            }
            for (what, value, points) in named {
                out.push(FactorReport {
                    name: format!("{}_gemm_{what}_efficiency", d.name()),
                    value,
                    source,
                    tag: Some(format!(
                        "measured on the kernel tables of {whose}: median of {points} GEMM shapes against bf16"
                    )),
                    rows: None,
                    devices: None,
                    publications: None,
                    device: None,
                });
            }
        }
        out
    }
}

impl Predictor<'_> {
    /// The tensor-parallel all-reduce's measured latency this prediction applies
    /// ([`crate::kernels::AllReduceLatency`]), where its group all-reduces within a
    /// scale-up domain on a device (or sibling) measured under the engine.
    fn all_reduce_latency_report(&self) -> Option<FactorReport> {
        let (value, from, engine) = self.all_reduce_latency?;
        let (source, whose) = match from {
            Some(f) => (FactorSource::Transferred, f),
            None => (FactorSource::Measured, self.hardware.id.as_str()),
        };
        Some(FactorReport {
            name: "all_reduce_latency_s".to_string(),
            value,
            source,
            tag: Some(format!(
                "measured on the kernel tables of {whose}: {}'s all-reduce of {} devices at 2-32 KiB",
                engine, self.tp
            )),
            rows: None,
            devices: None,
            publications: None,
            device: None,
        })
    }
}

impl Predictor<'_> {
    /// On the kernel tables, what each kernel of the layers no table covers takes at
    /// least ([`crate::kernels::Table::shortest_kernel_s`]).
    fn shortest_kernel_report(&self) -> Option<FactorReport> {
        let k = self.kernels()?;
        if k.launch_s <= 0.0 {
            return None;
        }
        let source = match k.source {
            crate::kernels::Source::Measured => FactorSource::Measured,
            crate::kernels::Source::Transferred(_) => FactorSource::Transferred,
        };
        Some(FactorReport {
            name: "shortest_kernel_s".to_string(),
            value: k.launch_s,
            source,
            tag: Some(format!(
                "measured on the kernel tables of {}: the fastest 16-bit GEMM under {}, \
                 what each kernel no table covers takes at least",
                k.device, self.engine.id
            )),
            rows: None,
            devices: None,
            publications: None,
            device: None,
        })
    }
}

/// One-call prediction: builds a [`Predictor`] and predicts.
pub fn predict(
    model: &ModelConfig,
    hardware: &Hardware,
    engine: &Engine,
    s: &Scenario,
) -> Result<Prediction> {
    Predictor::new(model, hardware, engine, s)?.predict(s.batch, s.prompt, s.gen_tokens)
}
