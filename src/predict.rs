//! Inference prediction: prefill (TTFT), decode per step, and the whole generation, on
//! one device or a tensor/pipeline-parallel group, with both the engine's prediction and
//! the ideal roofline figure.
//!
//! [`Predictor`] holds everything that depends only on (model, device, engine, formats,
//! layout) so that sweeps over batch, prompt and generation length reuse it;
//! [`Predictor::summary`] is allocation-free, [`Predictor::predict`] adds the per-op
//! table and planning limits.

use crate::dtype::{ComputeDtype, Format};
use crate::engine::Engine;
use crate::error::{Error, Result};
use crate::hardware::Hardware;
use crate::memory::{InferenceMemory, MemoryModel, Parallel};
use crate::model::ModelConfig;
use crate::model::graph::{self, Graph, OpInstance, OpKind, Phase, Precision, Step, Unit};
use crate::roofline::{Bound, Ceilings, Efficiency, Placement, place};
use serde::Serialize;

mod fast;
pub use fast::{DecodeLines, Evaluator, resolve_formats};

/// What to predict: shapes, formats, layout.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Scenario {
    /// Concurrent sequences.
    pub batch: u64,
    /// Prompt tokens per sequence.
    pub prompt: u64,
    /// Generated tokens per sequence.
    pub gen_tokens: u64,
    /// Weight format (`None`: the model's native dtype).
    pub weights: Option<Format>,
    /// KV-cache format (`None`: the activation dtype).
    pub kv: Option<Format>,
    /// Devices.
    pub gpus: u64,
    /// How the devices split the model.
    pub parallel: Parallel,
    /// Fused (flash) attention.
    pub flash: bool,
    /// Stream weights that do not fit from host memory over the host link.
    pub offload: bool,
}

/// Largest batch, prompt or generation length accepted (10^12): far beyond any device,
/// small enough that every product stays exact in `f64` and no `u64` sum overflows.
pub const MAX_COUNT: u64 = 1_000_000_000_000;

/// Largest `batch x (prompt + gen)` accepted (10^15 tokens).
pub const MAX_TOKENS: u64 = 1_000_000_000_000_000;

impl Scenario {
    /// Checks ranges; the error names the field (`batch`, `prompt`, `gen_tokens`).
    pub fn validate(&self) -> Result<()> {
        if self.batch == 0 {
            return Err(Error::invalid("batch", "must be at least 1"));
        }
        for (flag, v) in [
            ("batch", self.batch),
            ("prompt", self.prompt),
            ("gen_tokens", self.gen_tokens),
        ] {
            if v > MAX_COUNT {
                return Err(Error::invalid(
                    flag,
                    format!("{v} is above the supported maximum of {MAX_COUNT}"),
                ));
            }
        }
        let tokens = self.batch as f64 * (self.prompt + self.gen_tokens) as f64;
        if tokens > MAX_TOKENS as f64 {
            return Err(Error::invalid(
                "batch",
                format!(
                    "batch x (prompt + gen) = {tokens:e} tokens is above the supported maximum of {MAX_TOKENS:e}"
                ),
            ));
        }
        Ok(())
    }
}

impl Default for Scenario {
    /// The CLI defaults: batch 1, prompt 512, gen 128, native formats, 1 device, flash.
    fn default() -> Self {
        Scenario {
            batch: 1,
            prompt: 512,
            gen_tokens: 128,
            weights: None,
            kv: None,
            gpus: 1,
            parallel: Parallel::Tp,
            flash: true,
            offload: false,
        }
    }
}

/// The context of the decode step reported as "the" decode step of a generation:
/// mid-generation, `prompt + gen/2` (at least one token of context, at least one
/// generated token).
///
/// ```
/// assert_eq!(ridgeline::predict::decode_context(512, 128), 576);
/// assert_eq!(ridgeline::predict::decode_context(0, 0), 1);
/// ```
pub fn decode_context(prompt: u64, gen_tokens: u64) -> u64 {
    (prompt + (gen_tokens / 2).max(1)).max(1)
}

/// `num / den`, or 0 where the denominator is 0 (no tokens, no time).
fn ratio(num: f64, den: f64) -> f64 {
    if den > 0.0 { num / den } else { 0.0 }
}

/// Time and work of one forward pass.
#[derive(Debug, Clone, Copy, Default, PartialEq)]
pub struct PassResult {
    /// FLOPs on one device.
    pub flops: f64,
    /// Memory bytes on one device.
    pub bytes: f64,
    /// Of which weight bytes.
    pub weight_bytes: f64,
    /// Of which KV-cache bytes (reads and writes).
    pub kv_bytes: f64,
    /// Predicted time, s.
    pub time_s: f64,
    /// Ideal roofline time, s.
    pub roofline_time_s: f64,
    /// Time by bound: compute, memory, communication, overhead.
    pub by_bound: [f64; 4],
}

impl PassResult {
    /// The bound that accounts for most of the time.
    pub fn bound(&self) -> Bound {
        const B: [Bound; 4] = [
            Bound::Compute,
            Bound::Memory,
            Bound::Communication,
            Bound::Overhead,
        ];
        let mut best = 1;
        for i in 0..4 {
            if self.by_bound[i] > self.by_bound[best] {
                best = i;
            }
        }
        B[best]
    }

    /// FLOP per byte of the whole pass.
    pub fn intensity(&self) -> f64 {
        if self.bytes > 0.0 {
            self.flops / self.bytes
        } else {
            0.0
        }
    }
}

/// Adds one placed op to a pass.
fn accumulate(r: &mut PassResult, op: &OpInstance, p: &Placement) {
    r.flops += p.flops;
    r.bytes += p.bytes;
    r.weight_bytes += op.cost.read.weights * op.count;
    r.kv_bytes += (op.cost.read.kv + op.cost.written.kv) * op.count;
    r.time_s += p.time_s;
    r.roofline_time_s += p.roofline_time_s;
    r.by_bound[bound_index(p.bound)] += p.time_s;
}

fn bound_index(b: Bound) -> usize {
    match b {
        Bound::Compute => 0,
        Bound::Memory => 1,
        Bound::Communication => 2,
        Bound::Overhead => 3,
    }
}

/// The allocation-free core numbers of a prediction.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Summary {
    /// Prefill pass.
    pub prefill: PassResult,
    /// One decode step at context `prompt + gen/2`.
    pub decode: PassResult,
    /// Sum of the `gen` decode steps (predicted), s.
    pub decode_total_s: f64,
    /// Sum of the `gen` decode steps (ideal roofline), s.
    pub decode_total_roofline_s: f64,
    /// Memory per device.
    pub memory: InferenceMemory,
    /// Bytes streamed from host memory per pass (offload), per device.
    pub offloaded_bytes: f64,
}

/// Everything that does not depend on batch, prompt or gen.
#[derive(Debug, Clone)]
pub struct Predictor<'a> {
    /// The model.
    pub model: &'a ModelConfig,
    /// The device.
    pub hardware: &'a Hardware,
    /// The engine.
    pub engine: &'a Engine,
    precision: Precision,
    gpus: u64,
    parallel: Parallel,
    flash: bool,
    offload: bool,
    tp: u64,
    layers: u64,
    matmul: Ceilings,
    attention: Ceilings,
    vector: Ceilings,
    eff: Efficiency,
    comm_eff: Efficiency,
    memory: MemoryModel,
    host_bw: f64,
    link_bw: f64,
    notes: [Option<&'static str>; 4],
}

/// Default activation dtype of a model: its native 16-bit dtype (fp32 models run fp32).
pub fn activation_dtype(model: &ModelConfig, weights: Format) -> ComputeDtype {
    match weights {
        Format::Fp32 => ComputeDtype::Fp32,
        _ => model
            .native_format
            .as_activation_dtype()
            .unwrap_or(ComputeDtype::Bf16),
    }
}

fn format_for(d: ComputeDtype) -> Format {
    match d {
        ComputeDtype::Fp32 | ComputeDtype::Tf32 | ComputeDtype::Fp64 => Format::Fp32,
        ComputeDtype::Fp16 => Format::Fp16,
        _ => Format::Bf16,
    }
}

impl<'a> Predictor<'a> {
    /// Validates the layout and precomputes ceilings, efficiencies and the memory model.
    pub fn new(
        model: &'a ModelConfig,
        hardware: &'a Hardware,
        engine: &'a Engine,
        s: &Scenario,
    ) -> Result<Self> {
        if s.gpus == 0 {
            return Err(Error::invalid("gpus", "must be at least 1"));
        }
        if s.gpus > 1_000_000 {
            return Err(Error::invalid(
                "gpus",
                format!("{} devices is beyond any layout ridgeline models", s.gpus),
            ));
        }
        let weights = s.weights.unwrap_or(model.native_format);
        let activations = activation_dtype(model, weights);
        let kv = s.kv.unwrap_or(format_for(activations));
        let (tp, layers) = match s.parallel {
            Parallel::Tp => {
                if !model.heads.is_multiple_of(s.gpus) {
                    return Err(Error::conflict(
                        &["gpus", "parallel"],
                        format!(
                            "tensor parallel over {} devices does not divide {}'s {} attention heads (num_attention_heads); use a divisor of {} or pipeline parallel",
                            s.gpus, model.id, model.heads, model.heads
                        ),
                    ));
                }
                (s.gpus, model.layers)
            }
            Parallel::Pp => {
                if s.gpus > model.layers {
                    return Err(Error::conflict(
                        &["gpus", "parallel"],
                        format!(
                            "pipeline parallel over {} devices exceeds {}'s {} layers",
                            s.gpus, model.id, model.layers
                        ),
                    ));
                }
                (1, model.layers)
            }
        };
        if s.gpus > 1 && hardware.device_link().is_none() {
            return Err(Error::conflict(
                &["gpu", "gpus"],
                format!(
                    "{} has no host or scale-up link in the database, so it cannot be used with {} devices",
                    hardware.id, s.gpus
                ),
            ));
        }
        let matmul_dtype = weights.compute_dtype(activations);
        let (matmul_peak, used) = hardware.peak(matmul_dtype);
        let mut notes = [None; 4];
        if used != matmul_dtype {
            notes[0] = Some(
                "the device publishes no peak for the weights' compute dtype; the nearest published rate was used",
            );
        }
        let mut matmul = hardware.ceilings(matmul_dtype);
        matmul.peak_flops_per_s = matmul_peak;
        let attention = hardware.ceilings(activations);
        let vector = hardware.ceilings(ComputeDtype::Fp32);
        let eff = engine.efficiency(hardware);
        let comm_eff = Efficiency {
            overhead_s: engine.collective_latency_s,
            ..eff
        };
        let memory = MemoryModel::new(
            model,
            hardware,
            engine,
            weights,
            kv,
            activations,
            s.gpus,
            s.parallel,
            s.flash,
        );
        Ok(Predictor {
            model,
            hardware,
            engine,
            precision: Precision {
                weights,
                kv,
                activations,
            },
            gpus: s.gpus,
            parallel: s.parallel,
            flash: s.flash,
            offload: s.offload,
            tp,
            layers,
            matmul,
            attention,
            vector,
            eff,
            comm_eff,
            memory,
            host_bw: hardware
                .host_link
                .as_ref()
                .map_or(0.0, |l| l.bytes_per_s_per_direction),
            link_bw: hardware
                .device_link()
                .map_or(0.0, |l| l.bytes_per_s_per_direction),
            notes,
        })
    }

    /// The formats in use.
    pub fn precision(&self) -> Precision {
        self.precision
    }

    fn graph(&self, step: &Step) -> Graph {
        graph::forward(
            self.model,
            step,
            &self.precision,
            self.tp,
            self.flash,
            self.layers,
        )
    }

    fn ceilings(&self, unit: Unit) -> &Ceilings {
        match unit {
            Unit::Vector => &self.vector,
            Unit::Matrix(d) if d == self.precision.activations => &self.attention,
            Unit::Matrix(_) => &self.matmul,
        }
    }

    /// Places one op instance (all its executions).
    pub fn place_op(&self, op: &OpInstance) -> Placement {
        let eff = if op.cost.link_bytes > 0.0 {
            &self.comm_eff
        } else {
            &self.eff
        };
        place(
            &op.total(),
            self.ceilings(op.unit),
            &Efficiency {
                overhead_s: eff.overhead_s * op.count,
                ..*eff
            },
        )
    }

    /// Fixed per-pass overhead: step + per-layer, plus pipeline sends between stages.
    fn pass_overhead(&self, tokens: u64) -> (f64, f64) {
        let overhead =
            self.engine.step_overhead_s + self.engine.layer_overhead_s * self.layers as f64;
        let mut comm = 0.0;
        if self.parallel == Parallel::Pp && self.gpus > 1 {
            let bytes =
                tokens as f64 * self.model.hidden as f64 * self.precision.activations.bytes();
            comm = (self.gpus - 1) as f64
                * (bytes / (self.link_bw * self.eff.link) + self.engine.collective_latency_s);
        }
        (overhead, comm)
    }

    fn offload_time(&self, offloaded: f64) -> f64 {
        if offloaded > 0.0 {
            offloaded / (self.host_bw * self.eff.link)
        } else {
            0.0
        }
    }

    /// Evaluates one forward pass.
    pub fn pass(&self, step: &Step, offloaded: f64) -> PassResult {
        match self.pass_ops(step) {
            Some(r) => self.finish_pass(r, step.batch.saturating_mul(step.new_tokens), offloaded),
            None => PassResult::default(),
        }
    }

    /// The per-op part of a pass (`None`: the graph is empty, e.g. a prefill of 0 tokens).
    fn pass_ops(&self, step: &Step) -> Option<PassResult> {
        let g = self.graph(step);
        let mut r = PassResult::default();
        for op in g.ops() {
            accumulate(&mut r, op, &self.place_op(op));
        }
        if g.ops().is_empty() { None } else { Some(r) }
    }

    /// One decode step at context `mid` and the sums of the (predicted, ideal) step
    /// times over the steps at contexts `lo..=hi`, in one walk over the graph.
    ///
    /// The sum is in closed form: every op's compute, memory and link times are affine
    /// in the context `L`, so each op's time is the max of three lines, and the sum over
    /// integer `L` splits at the lines' crossings into arithmetic series
    /// ([`sum_max_affine`]). Ops whose cost does not depend on the context are placed
    /// once, not three times.
    pub fn decode_with_sum(
        &self,
        batch: u64,
        mid: u64,
        lo: u64,
        hi: u64,
        offloaded: f64,
    ) -> (PassResult, f64, f64) {
        let gm = self.graph(&Step::decode(batch, mid));
        let have_sum = hi >= lo;
        let (gl, gh) = if have_sum {
            (
                self.graph(&Step::decode(batch, lo)),
                self.graph(&Step::decode(batch, hi)),
            )
        } else {
            (gm, gm)
        };
        let mut r = PassResult::default();
        let (mut pred, mut ideal) = (0.0, 0.0);
        for ((m, a), b) in gm.ops().iter().zip(gl.ops()).zip(gh.ops()) {
            let pm = self.place_op(m);
            accumulate(&mut r, m, &pm);
            if have_sum {
                let pa = if a.cost == m.cost {
                    pm
                } else {
                    self.place_op(a)
                };
                let pb = if b.cost == a.cost {
                    pa
                } else if b.cost == m.cost {
                    pm
                } else {
                    self.place_op(b)
                };
                let (p, i) = self.op_sum(a, &pa, &pb, lo, hi);
                pred += p;
                ideal += i;
            }
        }
        let step = if gm.ops().is_empty() {
            PassResult::default()
        } else {
            self.finish_pass(r, batch, offloaded)
        };
        if !have_sum {
            return (step, 0.0, 0.0);
        }
        let (tail, tail_ideal) = self.decode_sum_tail(batch, (hi - lo + 1) as f64, offloaded);
        (step, pred + tail, ideal + tail_ideal)
    }

    /// Adds the per-pass terms (step overhead, pipeline sends, host offload) to the
    /// per-op part of a pass over `tokens` tokens.
    fn finish_pass(&self, mut r: PassResult, tokens: u64, offloaded: f64) -> PassResult {
        let (overhead, comm) = self.pass_overhead(tokens);
        let off = self.offload_time(offloaded);
        r.time_s += overhead + comm + off;
        r.by_bound[3] += overhead;
        r.by_bound[2] += comm + off;
        r.roofline_time_s += if self.host_bw > 0.0 && offloaded > 0.0 {
            offloaded / self.host_bw
        } else {
            0.0
        };
        r
    }

    /// One op's (predicted, ideal) time summed over contexts `lo..=hi`, from its
    /// placements at both ends (each term is affine in the context).
    fn op_sum(
        &self,
        op: &OpInstance,
        pa: &Placement,
        pb: &Placement,
        lo: u64,
        hi: u64,
    ) -> (f64, f64) {
        let span = (hi - lo) as f64;
        let n = span + 1.0;
        if pa == pb {
            // the op does not depend on the context: every step costs the same
            return (n * pa.time_s, n * pa.roofline_time_s);
        }
        let line = |ya: f64, yb: f64| {
            let slope = if span > 0.0 { (yb - ya) / span } else { 0.0 };
            (ya - slope * lo as f64, slope)
        };
        let lines = [
            line(pa.compute_time_s, pb.compute_time_s),
            line(pa.memory_time_s, pb.memory_time_s),
            line(pa.link_time_s, pb.link_time_s),
        ];
        let pred = sum_max_affine(&lines, lo, hi) + pa.overhead_s * n;
        let c = self.ceilings(op.unit);
        let [fa, ma, la] = c.ideal_terms(pa);
        let [fb, mb, lb] = c.ideal_terms(pb);
        let ideal = sum_max_affine(&[line(fa, fb), line(ma, mb), line(la, lb)], lo, hi);
        (pred, ideal)
    }

    /// The per-pass terms of `n` decode steps: (predicted, ideal) seconds.
    fn decode_sum_tail(&self, batch: u64, n: f64, offloaded: f64) -> (f64, f64) {
        let (overhead, comm) = self.pass_overhead(batch);
        let pred = n * (overhead + comm + self.offload_time(offloaded));
        let ideal = if self.host_bw > 0.0 && offloaded > 0.0 {
            n * offloaded / self.host_bw
        } else {
            0.0
        };
        (pred, ideal)
    }

    /// Memory at this batch/prompt/gen and the bytes streamed from the host per pass.
    pub fn memory(&self, batch: u64, prompt: u64, gen_tokens: u64) -> (InferenceMemory, f64) {
        let mut m = self.memory.at(batch, prompt, gen_tokens);
        let mut offloaded = 0.0;
        if self.offload && !m.fits && self.host_bw > 0.0 {
            let excess = m.total_bytes - m.capacity_bytes;
            if excess <= m.weights_bytes {
                offloaded = excess;
                m.weights_bytes -= excess;
                m.total_bytes -= excess;
                m.fits = true;
            }
        }
        (m, offloaded)
    }

    /// Largest batch that fits in device memory at this prompt and gen, with weights
    /// streamed from the host where the scenario offloads (0: not even one sequence).
    pub fn max_batch(&self, prompt: u64, gen_tokens: u64) -> u64 {
        // memory grows monotonically (piecewise linearly) with the batch
        crate::search::largest(1, 1 << 50, |b| self.memory(b, prompt, gen_tokens).0.fits)
            .unwrap_or(0)
    }

    /// Largest context per sequence (prompt, with generation adding to it) that fits
    /// at `batch` (0: nothing fits).
    pub fn max_context(&self, batch: u64) -> u64 {
        crate::search::largest(1, 1 << 40, |c| self.memory(batch, c, 0).0.fits).unwrap_or(0)
    }

    /// The core numbers without per-op detail (no heap allocation).
    pub fn summary(&self, batch: u64, prompt: u64, gen_tokens: u64) -> Summary {
        let (memory, offloaded) = self.memory(batch, prompt, gen_tokens);
        let prefill = self.pass(&Step::prefill(batch, prompt), offloaded);
        let mid = decode_context(prompt, gen_tokens);
        let (decode, decode_total_s, decode_total_roofline_s) =
            self.decode_with_sum(batch, mid, prompt + 1, prompt + gen_tokens, offloaded);
        Summary {
            prefill,
            decode,
            decode_total_s,
            decode_total_roofline_s,
            memory,
            offloaded_bytes: offloaded,
        }
    }

    /// Smallest batch at which a decode step at `context` is compute-bound on the ideal
    /// roofline (`None` if not below 2^24, e.g. when KV reads keep it memory-bound).
    pub fn compute_bound_batch(&self, context: u64) -> Option<u64> {
        let is_compute = |b: u64| {
            let g = self.graph(&Step::decode(b, context));
            let (mut c, mut m) = (0.0, 0.0);
            for op in g.ops() {
                let t = op.total();
                let ce = self.ceilings(op.unit);
                c += t.flops / ce.peak_flops_per_s;
                m += t.bytes() / ce.memory_bytes_per_s;
            }
            c >= m
        };
        crate::search::smallest(1, 1 << 24, is_compute)
    }

    /// The full prediction with the per-op table (the `predict --json` document).
    pub fn predict(&self, batch: u64, prompt: u64, gen_tokens: u64) -> Result<Prediction> {
        Scenario {
            batch,
            prompt,
            gen_tokens,
            ..Scenario::default()
        }
        .validate()?;
        let s = self.summary(batch, prompt, gen_tokens);
        let params = self.model.params();
        let mid = decode_context(prompt, gen_tokens);
        let mut ops = Vec::new();
        for (phase, step) in [
            (Phase::Prefill, Step::prefill(batch, prompt)),
            (Phase::Decode, Step::decode(batch, mid)),
        ] {
            for op in self.graph(&step).ops() {
                let p = self.place_op(op);
                ops.push(OpReport {
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
                });
            }
        }
        let b = batch as f64;
        let mut notes: Vec<String> = self.notes.iter().flatten().map(|s| s.to_string()).collect();
        if prompt + gen_tokens > self.model.max_context {
            notes.push(format!(
                "prompt + gen = {} exceeds the model's trained context of {} tokens",
                prompt + gen_tokens,
                self.model.max_context
            ));
        }
        if s.offloaded_bytes > 0.0 {
            notes.push(format!(
                "{:.2} GB of weights per device stream from host memory over the host link every pass",
                s.offloaded_bytes / 1e9
            ));
        }
        if !s.memory.fits {
            notes.push(
                "does not fit in device memory: times are what it would take if it did".into(),
            );
        }
        let ridge = self.matmul.ridge_point();
        Ok(Prediction {
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
                kv: self.precision.kv,
                activations: self.precision.activations,
                engine: self.engine.id.clone(),
                parallel: self.parallel,
                flash: self.flash,
            },
            memory: MemoryReport {
                inner: s.memory,
                offloaded_bytes: s.offloaded_bytes,
                max_batch: self.max_batch(prompt, gen_tokens),
                max_context: self.max_context(batch),
            },
            prefill: PrefillReport {
                flops: s.prefill.flops,
                bytes: s.prefill.bytes,
                arithmetic_intensity: s.prefill.intensity(),
                time_s: s.prefill.time_s,
                roofline_time_s: s.prefill.roofline_time_s,
                bound: s.prefill.bound(),
                tokens_per_s: ratio(b * prompt as f64, s.prefill.time_s),
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
                bound: s.decode.bound(),
                tokens_per_s: ratio(b, s.decode.time_s),
                roofline_tokens_per_s: ratio(b, s.decode.roofline_time_s),
                compute_bound_batch: self.compute_bound_batch(mid),
            },
            generation: GenerationReport::from_summary(&s, batch, gen_tokens),
            ops,
            notes,
        })
    }
}

fn finite(x: f64) -> f64 {
    if x.is_finite() { x } else { f64::MAX }
}

/// `Σ_{L=lo}^{hi} max_i (c_i + s_i·L)` for affine lines `(c_i, s_i)`, exactly, in
/// O(lines²) without iterating over `L`.
pub fn sum_max_affine(lines: &[(f64, f64)], lo: u64, hi: u64) -> f64 {
    if hi < lo || lines.is_empty() {
        return 0.0;
    }
    let (lo_f, hi_f) = (lo as f64, hi as f64);
    let mut cuts = [0.0f64; 8];
    let mut n = 0;
    for i in 0..lines.len() {
        for j in i + 1..lines.len() {
            let ds = lines[i].1 - lines[j].1;
            if ds != 0.0 {
                let x = (lines[j].0 - lines[i].0) / ds;
                if x > lo_f && x < hi_f && n < cuts.len() {
                    cuts[n] = x;
                    n += 1;
                }
            }
        }
    }
    let cuts = &mut cuts[..n];
    cuts.sort_by(|a, b| a.total_cmp(b));
    let mut total = 0.0;
    let mut start = lo;
    let ends = cuts
        .iter()
        .map(|x| (x.floor() as u64).min(hi))
        .chain(std::iter::once(hi));
    for end in ends {
        if end < start {
            continue;
        }
        let mid = (start as f64 + end as f64) / 2.0;
        let (c, s) = lines
            .iter()
            .copied()
            .fold((f64::NEG_INFINITY, 0.0), |best, l| {
                if l.0 + l.1 * mid > best.0 + best.1 * mid {
                    l
                } else {
                    best
                }
            });
        let count = (end - start + 1) as f64;
        total += count * c + s * (start as f64 + end as f64) * count / 2.0;
        start = end + 1;
        if start > hi {
            break;
        }
    }
    total
}

/// `model` in the prediction document.
#[derive(Debug, Clone, Serialize)]
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
pub struct ConfigInfo {
    /// Sequences.
    pub batch: u64,
    /// Prompt tokens.
    pub prompt: u64,
    /// Generated tokens.
    pub r#gen: u64,
    /// Weight format.
    pub weights: Format,
    /// KV format.
    pub kv: Format,
    /// Activation dtype.
    pub activations: ComputeDtype,
    /// Engine id.
    pub engine: String,
    /// How the devices split the model.
    pub parallel: Parallel,
    /// Fused attention.
    pub flash: bool,
}

/// `memory` in the prediction document (per device).
#[derive(Debug, Clone, Serialize)]
pub struct MemoryReport {
    /// The contract keys.
    #[serde(flatten)]
    pub inner: InferenceMemory,
    /// Weights streamed from host memory per pass (offload), bytes.
    pub offloaded_bytes: f64,
    /// Largest batch that fits at this prompt + gen.
    pub max_batch: u64,
    /// Largest context that fits at this batch.
    pub max_context: u64,
}

/// `prefill` in the prediction document.
#[derive(Debug, Clone, Serialize)]
pub struct PrefillReport {
    /// FLOPs per device.
    pub flops: f64,
    /// Memory bytes per device.
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
pub struct DecodeReport {
    /// Context of the step.
    pub context: u64,
    /// FLOPs per device per step.
    pub flops_per_step: f64,
    /// Memory bytes per device per step.
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
pub struct GenerationReport {
    /// Time to first token (the prefill), s.
    pub ttft_s: f64,
    /// Mean time per output token over the decode steps, s.
    pub tpot_s: f64,
    /// TTFT + all decode steps, s.
    pub total_s: f64,
    /// batch × gen / total_s.
    pub output_tokens_per_s: f64,
    /// batch × gen / decode time (what `llama-bench tg` reports).
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
    /// generation adds the `gen` decode steps of the summary; per-token and per-second
    /// figures divide by the tokens made (0 where no token is made).
    pub fn from_summary(s: &Summary, batch: u64, gen_tokens: u64) -> GenerationReport {
        let b = batch as f64;
        let gen_f = gen_tokens as f64;
        let ttft = s.prefill.time_s;
        let total = ttft + s.decode_total_s;
        GenerationReport {
            ttft_s: ttft,
            tpot_s: ratio(s.decode_total_s, gen_f),
            total_s: total,
            output_tokens_per_s: ratio(b * gen_f, total),
            decode_tokens_per_s: ratio(b * gen_f, s.decode_total_s),
            roofline_ttft_s: s.prefill.roofline_time_s,
            roofline_tpot_s: ratio(s.decode_total_roofline_s, gen_f),
            roofline_decode_tokens_per_s: ratio(b * gen_f, s.decode_total_roofline_s),
        }
    }
}

/// One row of `ops`.
#[derive(Debug, Clone, Serialize)]
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
}

/// The `predict --json` document.
#[derive(Debug, Clone, Serialize)]
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
    /// Per-op placements for prefill and the decode step.
    pub ops: Vec<OpReport>,
    /// Caveats.
    pub notes: Vec<String>,
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

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn sum_max_affine_matches_loop() {
        let lines = [(1.0, 0.5), (10.0, 0.1), (3.0, 0.0)];
        for (lo, hi) in [(1u64, 100u64), (5, 5), (20, 30), (0, 1000)] {
            let brute: f64 = (lo..=hi)
                .map(|l| {
                    lines
                        .iter()
                        .map(|(c, s)| c + s * l as f64)
                        .fold(f64::MIN, f64::max)
                })
                .sum();
            let fast = sum_max_affine(&lines, lo, hi);
            assert!(
                (brute - fast).abs() < 1e-9 * brute.abs().max(1.0),
                "{lo}..{hi}: {brute} vs {fast}"
            );
        }
        assert_eq!(sum_max_affine(&lines, 5, 4), 0.0);
    }
}
