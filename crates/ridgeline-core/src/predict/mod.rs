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
use crate::hardware::{Hardware, Traffic, group_bandwidth};
use crate::memory::{InferenceMemory, Layout, MemoryModel, Parallel};
use crate::model::ModelConfig;
use crate::model::graph::{self, Graph, OpInstance, Precision, Shard, Step, Unit};
use crate::roofline::{Ceilings, Efficiency, Placement, place};

pub(crate) mod affine;
mod arch;
mod fast;
mod kernel;
mod launch;
pub use launch::DENSE_LAYER_KERNELS;
pub mod notes;
mod pass;
mod report;
mod spec;
mod whatif;

pub use crate::model::graph::{activation_dtype, resolve_formats, resolve_formats_with};
pub use arch::{Architecture, ExpertFacts, WindowLayers};
pub use fast::{Evaluator, IterationCost};
pub(crate) use kernel::KernelUse;
pub use kernel::{CostSource, EfficiencySource, Kernels};
pub use pass::PassResult;
pub use report::{
    ConfigInfo, DecodeReport, FactorReport, FactorSource, GenerationReport, HardwareInfo, Limits,
    MemoryReport, ModelInfo, Note, OpReport, Prediction, PrefillReport, SpeculativeReport, predict,
};
pub use spec::{Draft, MAX_SPEC_K, Speculation, check_draft};
pub use whatif::{QUANTIZED_WHAT_IF, WhatIf, WhatIfs};

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
    /// Format of the routed experts of a mixture-of-experts model (`None`: `weights`
    /// where it is given, else the checkpoint's expert format): llama.cpp's gpt-oss
    /// GGUF, for one, keeps the experts in mxfp4 and the rest in q8_0.
    pub expert_weights: Option<Format>,
    /// KV-cache format (`None`: the activation dtype).
    pub kv: Option<Format>,
    /// Devices.
    pub gpus: u64,
    /// How the devices split the model.
    pub parallel: Parallel,
    /// Expert-parallel groups for a mixture-of-experts model (1: none): the routed
    /// experts spread over `ep` groups of `gpus / ep` tensor-parallel devices, attention
    /// data-parallel across the groups (see [`crate::model::graph::Shard`]).
    pub ep: u64,
    /// Fused (flash) attention.
    pub flash: bool,
    /// Stream weights that do not fit from host memory over the host link.
    pub offload: bool,
    /// Speculative decoding (`None`: off); the drafts come from the model's own head
    /// unless [`Predictor::with_draft`] names a draft model.
    pub spec: Option<Speculation>,
    /// Network bandwidth per device between scale-up domains, bytes/s per direction
    /// (default [`crate::hardware::DEFAULT_INTER_NODE_BYTES_PER_S`]): what collectives
    /// and pipeline sends crossing domains run at (`crate::hardware::group_bandwidth`).
    pub inter_node_bytes_per_s: f64,
    /// With expert parallelism, each pass runs as two micro-batches whose expert
    /// all-to-alls run beside the other's computation (SGLang's two-batch overlap,
    /// vLLM's dual-batch overlap, DeepSeek's inference system): a pass hides its
    /// all-to-all up to the time of its other ops. No effect without `ep > 1`.
    pub overlap_ep: bool,
    /// With expert parallelism, the routed rows of the busiest rank over the mean's, as
    /// measured (an EPLB log, a profiler): the busiest rank runs at least this many
    /// times the mean's routed rows and all-to-all traffic, reading the experts it
    /// would under uniform routing (hot experts take more rows, not more weights). 1
    /// (the default) leaves the uniform-routing expectation, the floor that balanced
    /// expert loads leave ([`crate::model::graph::expert_load`]); at most `ep`. Needs
    /// `ep > 1` otherwise.
    pub expert_imbalance: f64,
}

/// Largest batch, prompt or generation length accepted (10^12): far beyond any device,
/// small enough that every product stays exact in `f64` and no `u64` sum overflows.
pub const MAX_COUNT: u64 = 1_000_000_000_000;

/// Largest `batch x (prompt + gen)` accepted (10^15 tokens).
pub const MAX_TOKENS: u64 = 1_000_000_000_000_000;

impl Scenario {
    /// Checks a shape alone (`batch`, `prompt`, `gen_tokens`) as [`Scenario::validate`]
    /// does.
    pub fn validate_shape(batch: u64, prompt: u64, gen_tokens: u64) -> Result<()> {
        Scenario {
            batch,
            prompt,
            gen_tokens,
            ..Scenario::default()
        }
        .validate()
    }

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
        if let Some(spec) = self.spec {
            spec.validate()?;
        }
        crate::hardware::check_inter_node(self.inter_node_bytes_per_s)?;
        check_expert_imbalance(self.expert_imbalance, self.ep)?;
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

/// Checks an expert imbalance ([`Scenario::expert_imbalance`]) for `ep` expert-parallel
/// groups: at least 1, at most `ep`, and 1 without expert parallelism (the error names
/// `expert_imbalance`).
pub fn check_expert_imbalance(f: f64, ep: u64) -> Result<()> {
    if !(f.is_finite() && f >= 1.0) {
        return Err(Error::invalid(
            "expert_imbalance",
            format!("{f}: the busiest rank's routed rows over the mean are at least 1 (balanced)"),
        ));
    }
    if f != 1.0 && ep <= 1 {
        return Err(Error::invalid(
            "expert_imbalance",
            format!(
                "{f} needs ep above 1: without expert parallelism no rank waits for another's experts"
            ),
        ));
    }
    if f > ep as f64 {
        return Err(Error::invalid(
            "expert_imbalance",
            format!("{f} is more than ep {ep} (every routed token on one rank)"),
        ));
    }
    Ok(())
}

impl Default for Scenario {
    /// The CLI defaults: batch 1, prompt 512, gen 128, native formats, 1 device, flash.
    fn default() -> Self {
        Scenario {
            batch: 1,
            prompt: 512,
            gen_tokens: 128,
            weights: None,
            expert_weights: None,
            kv: None,
            gpus: 1,
            parallel: Parallel::Tp,
            ep: 1,
            flash: true,
            offload: false,
            spec: None,
            inter_node_bytes_per_s: crate::hardware::DEFAULT_INTER_NODE_BYTES_PER_S,
            overlap_ep: false,
            expert_imbalance: 1.0,
        }
    }
}

/// The context of the decode step reported as "the" decode step of a generation:
/// mid-generation, `prompt + gen/2` (at least one token of context, at least one
/// generated token).
///
/// ```
/// assert_eq!(ridgeline_core::predict::decode_context(512, 128), 576);
/// assert_eq!(ridgeline_core::predict::decode_context(0, 0), 1);
/// ```
pub fn decode_context(prompt: u64, gen_tokens: u64) -> u64 {
    (prompt + (gen_tokens / 2).max(1)).max(1)
}

/// The contexts of the decode steps of a generation, `lo..=hi` (empty when `hi < lo`).
///
/// With a prompt, the prefill makes the first output token (the convention of vLLM's
/// and NVIDIA's serving benchmarks): `gen - 1` decode steps follow, each adding one
/// token, at contexts `prompt + 1 ..= prompt + gen - 1`. Without a prompt (llama-bench
/// `tg`), every output token is a decode step: contexts `1 ..= gen`.
///
/// ```
/// use ridgeline_core::predict::decode_steps;
/// assert_eq!(decode_steps(512, 128), (513, 639));   // 127 steps after the prefill
/// assert_eq!(decode_steps(512, 1), (513, 512));     // none: the prefill made the token
/// assert_eq!(decode_steps(0, 128), (1, 128));       // 128 steps from an empty context
/// ```
pub fn decode_steps(prompt: u64, gen_tokens: u64) -> (u64, u64) {
    if prompt == 0 {
        (1, gen_tokens)
    } else {
        (prompt + 1, prompt + gen_tokens - gen_tokens.min(1))
    }
}

/// The attention chunk of a model whose windowed layers are chunks (`None`: no chunked
/// layer). A model that mixes chunks with sliding windows, or chunks of two sizes, is
/// refused: the decode sums split a chunked model's contexts at its one chunk only.
fn chunk_of(model: &ModelConfig) -> Result<Option<u64>> {
    let chunks = || model.kinds.iter().filter(|k| k.chunked);
    let Some(c) = chunks().find_map(|k| k.window) else {
        return Ok(None);
    };
    let other = model
        .kinds
        .iter()
        .any(|k| k.window.is_some() && (!k.chunked || k.window != Some(c)));
    if other || c < 2 {
        return Err(Error::invalid(
            "attention_chunk_size",
            format!(
                "{}: chunked attention beside sliding windows or chunks of other sizes, or a chunk under 2 tokens, is not modelled",
                model.id
            ),
        ));
    }
    Ok(Some(c))
}

/// `num / den`, or 0 where the denominator is 0 (no tokens, no time).
fn ratio(num: f64, den: f64) -> f64 {
    if den > 0.0 { num / den } else { 0.0 }
}

/// The allocation-free core numbers of a prediction.
#[derive(Debug, Clone, Copy, PartialEq)]
#[non_exhaustive]
pub struct Summary {
    /// Prefill pass.
    pub prefill: PassResult,
    /// One decode step at context `prompt + gen/2`.
    pub decode: PassResult,
    /// Decode steps of the generation (see [`decode_steps`]).
    pub decode_steps: u64,
    /// Sum of the decode steps (predicted), s.
    pub decode_total_s: f64,
    /// Sum of the decode steps (ideal roofline), s.
    pub decode_total_roofline_s: f64,
    /// Memory per device.
    pub memory: InferenceMemory,
    /// Bytes streamed from host memory per pass (offload), per device.
    pub offloaded_bytes: f64,
    /// Decode speed-up from speculative decoding at the reported step's context
    /// (plain step time over time per output token; 1 without speculation).
    pub speedup: f64,
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
    ep: u64,
    flash: bool,
    offload: bool,
    tp: u64,
    layers: u64,
    /// The held layers in dense layers' worth of kernel launches
    /// ([`launch::launch_layers`]): what the per-layer overhead is paid for.
    launch_layers: f64,
    /// The same for the draft of speculative decoding (the model's own one-layer head
    /// until [`Predictor::with_draft`] gives a draft model).
    draft_launch_layers: f64,
    matmul: Ceilings,
    /// Ceilings of weight matmuls by compute dtype (the weights', the experts', the
    /// activations').
    matmuls: Vec<(ComputeDtype, Ceilings)>,
    attention: Ceilings,
    vector: Ceilings,
    eff: Efficiency,
    comm_eff: Efficiency,
    /// [`Predictor::comm_eff`] for the tensor-parallel all-reduces: the measured
    /// latency where [`Predictor::all_reduce_latency`] holds one.
    all_reduce_eff: Efficiency,
    /// The tensor-parallel all-reduce's measured latency, s, the sibling whose tables
    /// measured it (`None`: the device's own) and the engine it was measured under (the
    /// engine's own id, else its base's: [`Engine::kernel_ids`]), where measured
    /// ([`crate::kernels::AllReduceLatency`]).
    all_reduce_latency: Option<(f64, Option<&'static str>, &'a str)>,
    memory: MemoryModel,
    /// Routed-expert bytes of the most loaded device: what offload moves first.
    routed_expert_bytes: f64,
    host_bw: f64,
    link_bw: f64,
    /// Ceilings of a decode pass's expert all-to-all (dispatch, combine): the vector
    /// units', the link at [`Traffic::AllToAll`]'s bandwidth over the expert groups.
    ep_comm: Ceilings,
    /// The same for a prompt pass's all-to-all ([`OpInstance::forwarded`]): the link at
    /// [`Traffic::Forwarded`]'s bandwidth.
    ep_comm_forwarded: Ceilings,
    /// Network bandwidth per device between scale-up domains, bytes/s.
    network_bw: f64,
    /// Passes hide their expert all-to-all behind their other ops
    /// ([`Scenario::overlap_ep`] with `ep > 1`).
    overlap_ep: bool,
    /// [`Scenario::expert_imbalance`].
    expert_imbalance: f64,
    /// The compute dtype the weights' matmuls wanted and the one whose peak was used.
    matmul_dtypes: (ComputeDtype, ComputeDtype),
    /// The model's sliding windows, ascending: where decode costs stop growing.
    windows: Vec<u64>,
    /// The attention chunk of a chunked-attention model (Llama 4), the one entry of
    /// `windows`: decode costs of those layers repeat every chunk.
    chunk: Option<u64>,
    spec: Option<Speculation>,
    draft: Draft<'a>,
    /// The engine's time per routed expert matrix on this device times the matrices of
    /// one expert over the MoE layers (0 for a dense model or an engine without the
    /// cost), s: a GEMM-path pass pays it for each expert with tokens.
    expert_matrix_s: f64,
    /// The engine's time per FLOP of a matrix-vector kernel's multiply-adds on this
    /// device, on top of its loads ([`gemv_s_per_flop`]), s.
    gemv_s_per_flop: f64,
    /// The fraction of the memory efficiency a routed expert's weight matmuls reach on
    /// this device ([`crate::engine::Engine::expert_memory_efficiency_on`]).
    expert_memory: f64,
    /// Kernel tables read where they cover an op ([`Predictor::with_kernels`]).
    kernels: Option<KernelUse<'a>>,
    /// What fp8 and fp4 weight matmuls reach against 16-bit ones on this device,
    /// measured ([`crate::kernels::GemmDtypes`]); `None` where not measured (and under
    /// the `ideal` engine).
    gemm_dtypes: Option<&'static crate::kernels::DeviceDtypes>,
}

/// The device link's bandwidth per direction (0 without one).
fn link_bw(hardware: &Hardware) -> f64 {
    hardware
        .device_link()
        .map_or(0.0, |l| l.bytes_per_s_per_direction)
}

/// The time per FLOP a matrix-vector kernel's rows past the first add on `hardware`
/// under `engine`, s (0: none), from the factor that prices them
/// ([`Engine::gemv_factor_on`]): a time per GFLOP, or a fraction of the device's 16-bit
/// peak (the kernels widen the weights in the shader and multiply-add there, whatever
/// the weights' format).
fn gemv_s_per_flop(engine: &Engine, hardware: &Hardware) -> f64 {
    match engine.gemv_factor_on(hardware) {
        Some((crate::engine::DeviceFactor::GemvTime, per_gflop)) => per_gflop * 1e-9,
        Some((_, efficiency)) => 1.0 / (efficiency * hardware.peak(ComputeDtype::Fp16).0),
        None => 0.0,
    }
}

/// Most devices one layout may have.
pub const MAX_GPUS: u64 = 1_000_000;

/// Tokens per tile of the Metal matrix kernel (llama.cpp's `kernel_mul_mm`: a 64 x 32
/// output tile per threadgroup, 32 along the tokens; ggml/src/ggml-metal/ggml-metal.metal
/// at ggml-org/llama.cpp@000a1174aa8f42a18ed08ec8e833f9c415397423).
pub const METAL_TOKEN_TILE: u64 = 32;

/// Tokens per pass from which an Apple GPU's routed-expert matmuls run the matrix kernel
/// (`kernel_mul_mm_id`: each touched expert's tokens in tiles of [`METAL_TOKEN_TILE`],
/// its weights read once); below, the matrix-vector kernel (`kernel_mul_mv_id`) runs
/// each (token, expert) pair on its own, reading the expert's weights once per pair.
/// llama.cpp's `ne21_mm_id_min` in `ggml_metal_op_mul_mat_id`,
/// ggml/src/ggml-metal/ggml-metal-ops.cpp at
/// lzptouch/llama.cpp@0b3d966f1855a273784983bae178fd22e4ead562 (a copy of upstream
/// build b828e18c7, the build of the M2 Ultra rows m744-m802).
pub const METAL_EXPERT_MM_MIN: u64 = 32;

/// Whether `model` can be split over `gpus` devices of `hardware` by `parallel` with
/// `ep` expert-parallel groups: tensor parallel must divide the attention heads,
/// pipeline parallel needs a layer per stage, expert parallelism needs a
/// mixture-of-experts model, tensor parallel, a divisor of `gpus` and no more groups
/// than experts, and several devices need a link between them.
pub fn check_layout(
    model: &ModelConfig,
    hardware: &Hardware,
    gpus: u64,
    parallel: Parallel,
    ep: u64,
) -> Result<()> {
    if gpus == 0 {
        return Err(Error::invalid("gpus", "must be at least 1"));
    }
    if gpus > MAX_GPUS {
        return Err(Error::invalid(
            "gpus",
            format!("{gpus} devices is beyond any layout ridgeline models"),
        ));
    }
    check_experts(model, gpus, parallel, ep)?;
    // under expert parallelism attention is tensor-parallel inside each group
    let tp = gpus / ep.max(1);
    match parallel {
        Parallel::Tp if !model.heads.is_multiple_of(tp) => Err(Error::conflict(
            &["gpus", "parallel"],
            format!(
                "tensor parallel over {tp} devices does not divide {}'s {} attention heads (num_attention_heads); use a divisor of {} or pipeline parallel",
                model.id, model.heads, model.heads
            ),
        )),
        Parallel::Pp if gpus > model.layers => Err(Error::conflict(
            &["gpus", "parallel"],
            format!(
                "pipeline parallel over {gpus} devices exceeds {}'s {} layers",
                model.id, model.layers
            ),
        )),
        _ if gpus > 1 && hardware.device_link().is_none() => Err(Error::conflict(
            &["gpu", "gpus"],
            format!(
                "{} has no host or scale-up link in the database, so it cannot be used with {gpus} devices",
                hardware.id
            ),
        )),
        _ => Ok(()),
    }
}

/// The expert-parallel part of [`check_layout`].
fn check_experts(model: &ModelConfig, gpus: u64, parallel: Parallel, ep: u64) -> Result<()> {
    if ep == 0 {
        return Err(Error::invalid("ep", "must be at least 1"));
    }
    if ep == 1 {
        return Ok(());
    }
    let problem = if model.experts <= 1 {
        format!("{} is not a mixture-of-experts model", model.id)
    } else if parallel != Parallel::Tp {
        "expert parallelism runs with tensor parallel (--parallel tp)".to_string()
    } else if !gpus.is_multiple_of(ep) {
        format!("{ep} expert-parallel groups do not divide {gpus} devices")
    } else if ep > model.experts {
        format!(
            "{ep} expert-parallel groups exceed {}'s {} experts",
            model.id, model.experts
        )
    } else {
        return Ok(());
    };
    Err(Error::conflict(&["ep", "gpus"], problem))
}

/// Routed-expert weight matrices per expert over the model's MoE layers: 3 (gate, up,
/// down) per layer for a gated MLP, 2 (up, down) for a plain one; 0 for a dense model.
pub(crate) fn expert_matrices(model: &ModelConfig) -> u64 {
    if !model.is_moe() {
        return 0;
    }
    let per = if model.gated_mlp { 3 } else { 2 };
    model
        .kind_counts()
        .iter()
        .filter(|(k, _)| k.is_moe())
        .map(|(_, n)| n * per)
        .sum()
}

impl Predictor<'_> {
    /// Expert-parallel groups (1: none).
    pub fn ep(&self) -> u64 {
        self.ep
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
        check_layout(model, hardware, s.gpus, s.parallel, s.ep)?;
        check_expert_imbalance(s.expert_imbalance, s.ep)?;
        if s.overlap_ep && s.ep <= 1 {
            return Err(Error::conflict(
                &["overlap_ep", "ep"],
                "the expert all-to-all it hides runs only with expert parallelism (ep above 1)",
            ));
        }
        // low-precision kernels only where the device has the tensor rate they need
        let has = |d: ComputeDtype| hardware.peak(d).1 == d;
        let mut kernels = engine.kernels();
        kernels.fp4 &= has(ComputeDtype::Fp4);
        kernels.int8_mma &= has(ComputeDtype::Int8);
        let precision = Precision {
            kernels,
            ..resolve_formats_with(model, s.weights, s.expert_weights, s.kv)
        };
        let Precision {
            weights,
            activations,
            experts,
            ..
        } = precision;
        let (tp, layers) = match s.parallel {
            Parallel::Tp => (s.gpus / s.ep, model.layers),
            Parallel::Pp => (1, model.layers),
        };
        let matmul_dtype = precision.compute_dtype(weights);
        let used = hardware.peak(matmul_dtype).1;
        // kernels on warp-level mma.sync reach only part of a Hopper tensor peak
        let warp = match hardware.peak_flops_per_s.warp_mma_fraction {
            Some(f) if !engine.features.warpgroup_mma => f,
            _ => 1.0,
        };
        // two ceilings on a tensor rate, the lower binds: the instructions' (above) and
        // the clock the board power sustains under a full tensor load
        // (of the dtype whose peak is used: a format without a peak runs at another's)
        let rate = |d: ComputeDtype| {
            let (p, used) = hardware.peak(d);
            p * warp.min(hardware.tensor_fraction(used))
        };
        let matmul_ceilings = |d: ComputeDtype| {
            let mut c = hardware.ceilings(d);
            c.peak_flops_per_s = rate(d);
            if d == ComputeDtype::Fp16
                && engine.features.fp16_accumulate
                && let Some(acc16) = hardware.peak_flops_per_s.rates.fp16_acc16
            {
                let share = warp.min(hardware.tensor_fraction(d));
                c.peak_flops_per_s = c.peak_flops_per_s.max(acc16 * share);
            }
            (d, c)
        };
        let matmul = matmul_ceilings(matmul_dtype).1;
        let mut matmuls = vec![matmul_ceilings(matmul_dtype)];
        for d in [precision.compute_dtype(experts), activations] {
            if matmuls.iter().all(|m| m.0 != d) {
                matmuls.push(matmul_ceilings(d));
            }
        }
        let mut attention = hardware.ceilings(activations);
        attention.peak_flops_per_s = rate(activations);
        let mut vector = hardware.ceilings(ComputeDtype::Fp32);
        // collectives: the tensor-parallel all-reduce over tp consecutive devices, the
        // expert all-to-all over the ep groups (one rank every tp devices); crossing
        // scale-up domains, the network carries part of them
        let (scaleup, domain) = (link_bw(hardware), hardware.domain_devices());
        let group = |size: u64, stride: u64, t: Traffic| {
            group_bandwidth(scaleup, s.inter_node_bytes_per_s, domain, (size, stride), t)
        };
        let (mut ep_comm, mut ep_comm_forwarded) = (vector, vector);
        if vector.link_bytes_per_s.is_some() {
            vector.link_bytes_per_s = Some(group(tp, 1, Traffic::Ring));
            let ep = s.ep.max(1);
            ep_comm.link_bytes_per_s = Some(group(ep, tp, Traffic::AllToAll));
            let network_share = model.forwarded_network_share(ep, domain / tp.max(1));
            ep_comm_forwarded.link_bytes_per_s =
                Some(group(ep, tp, Traffic::Forwarded { network_share }));
        }
        let eff = engine.efficiency(hardware);
        let comm_eff = Efficiency {
            overhead_s: engine.overheads.collective_latency_s,
            ..eff
        };
        // the tensor-parallel all-reduce's latency as measured for the engine on the
        // device (or its sibling), where the group all-reduces over one scale-up domain
        let all_reduce_latency = if !engine.is_physics()
            && tp >= 2
            && hardware.scaleup_link.is_some()
            && tp <= hardware.domain_devices()
        {
            let db = crate::kernels::AllReduceLatency::builtin()?;
            (engine.kernel_ids())
                .find_map(|id| db.get(&hardware.id, id, tp).map(|(s, from)| (s, from, id)))
        } else {
            None
        };
        let all_reduce_eff = Efficiency {
            overhead_s: all_reduce_latency.map_or(engine.overheads.collective_latency_s, |l| l.0),
            ..eff
        };
        let layout = Layout {
            gpus: s.gpus,
            parallel: s.parallel,
            ep: s.ep,
        };
        let mut memory = MemoryModel::new(model, hardware, engine, &precision, &layout, s.flash);
        if let Some(spec) = s.spec {
            spec.validate()?;
            let share = crate::memory::Share::stages(model, &layout)[0];
            let (weights, cache) = Self::head_memory(model, &precision, &share);
            memory = memory.with_extra(weights, cache);
        }
        let routed_expert_bytes = crate::memory::Share::stages(model, &layout)
            .iter()
            .map(|sh| crate::memory::device_routed_expert_bytes(model, &precision, sh))
            .fold(0.0, f64::max);
        let gemm_dtypes = match engine.is_physics() {
            true => None,
            false => crate::kernels::GemmDtypes::builtin()?.get(&hardware.id),
        };
        Ok(Predictor {
            gemm_dtypes,
            model,
            hardware,
            engine,
            precision,
            routed_expert_bytes,
            gpus: s.gpus,
            parallel: s.parallel,
            ep: s.ep,
            flash: s.flash,
            offload: s.offload,
            tp,
            layers,
            launch_layers: launch::launch_layers(model, layers),
            draft_launch_layers: launch::head_launch_layers(model),
            matmul,
            matmuls,
            attention,
            vector,
            eff,
            comm_eff,
            all_reduce_eff,
            all_reduce_latency,
            memory,
            host_bw: hardware
                .host_link
                .as_ref()
                .map_or(0.0, |l| l.bytes_per_s_per_direction),
            link_bw: link_bw(hardware),
            ep_comm,
            ep_comm_forwarded,
            network_bw: s.inter_node_bytes_per_s,
            overlap_ep: s.overlap_ep && s.ep > 1,
            expert_imbalance: s.expert_imbalance,
            matmul_dtypes: (matmul_dtype, used),
            windows: {
                let mut w: Vec<u64> = model.kinds.iter().filter_map(|k| k.window).collect();
                w.sort_unstable();
                w.dedup();
                w
            },
            chunk: chunk_of(model)?,
            spec: s.spec,
            draft: Draft::Head,
            expert_matrix_s: engine.expert_overhead_on(hardware) * expert_matrices(model) as f64,
            gemv_s_per_flop: gemv_s_per_flop(engine, hardware),
            expert_memory: engine.expert_memory_efficiency_on(hardware),
            kernels: None,
        })
    }

    /// The formats in use.
    pub fn precision(&self) -> Precision {
        self.precision
    }

    /// The model's sliding windows, ascending (where decode costs stop growing).
    pub fn windows(&self) -> &[u64] {
        &self.windows
    }

    /// The attention chunk of a chunked-attention model (then the only entry of
    /// [`Predictor::windows`]).
    pub fn chunk(&self) -> Option<u64> {
        self.chunk
    }

    /// Whether passes hide their expert all-to-all behind their other ops
    /// ([`Scenario::overlap_ep`], with expert parallelism).
    pub fn overlap_ep(&self) -> bool {
        self.overlap_ep
    }

    /// The busiest expert-parallel rank's load when a pass routes `tokens` tokens: the
    /// uniform-routing expectation, raised to the stated imbalance
    /// ([`Scenario::expert_imbalance`]).
    pub(crate) fn busiest_load(&self, tokens: u64) -> crate::model::graph::ExpertLoad {
        let m = self.model;
        crate::model::graph::expert_load(m.experts, m.experts_per_token, tokens, self.ep)
            .with_imbalance(self.expert_imbalance)
    }

    /// Devices of the layout.
    pub fn gpus(&self) -> u64 {
        self.gpus
    }

    /// The layout's parallelism.
    pub fn parallel(&self) -> Parallel {
        self.parallel
    }

    pub(super) fn graph(&self, step: &Step) -> Graph {
        let shard = Shard {
            tp: self.tp,
            ep: self.ep,
            layers: self.layers,
            busiest: true,
            imbalance: self.expert_imbalance,
            pair_reads_below: self.expert_pair_reads_below(),
        };
        graph::forward(self.model, step, &self.precision, &shard, self.flash)
    }

    /// The ceilings an op runs against: vector units, the attention kernels' (the
    /// activation dtype), or a weight matmul's dtype (with fp16 accumulation where the
    /// engine uses it).
    pub(super) fn ceilings(&self, op: &OpInstance) -> &Ceilings {
        match op.unit {
            Unit::Vector if op.kind.is_expert_all_to_all() => {
                if op.forwarded {
                    &self.ep_comm_forwarded
                } else {
                    &self.ep_comm
                }
            }
            Unit::Vector => &self.vector,
            _ if op.kind.is_attention_core() => &self.attention,
            Unit::Matrix(d) | Unit::Dequant(d) => self
                .matmuls
                .iter()
                .find(|m| m.0 == d)
                .map_or(&self.matmul, |m| &m.1),
        }
    }

    /// The efficiencies an op reaches: collectives the link's (with the per-collective
    /// latency), attention kernels the engine's `attention_efficiency` of the rest,
    /// weight-only quantized matmuls its `dequant_efficiency` of the compute rate, fp8
    /// and fp4 tensor-core weight matmuls the device's measured factors against 16-bit
    /// ones ([`crate::kernels::GemmDtypes`]; fp4 its `fp4_efficiency` where none is
    /// measured).
    fn op_efficiency(&self, op: &OpInstance) -> Efficiency {
        let mut e = match op.kind {
            _ if op.cost.link_bytes <= 0.0 => self.eff,
            crate::model::graph::OpKind::AllreduceAttn
            | crate::model::graph::OpKind::AllreduceMlp => self.all_reduce_eff,
            _ => self.comm_eff,
        };
        // the expert kernels' weight reads
        if op.routed && self.expert_memory != 1.0 && self.weight_elements(op).is_some() {
            e.memory *= self.expert_memory;
        }
        if matches!(op.unit, Unit::Dequant(_)) && !self.dequantizes_in_tile(op) {
            e.compute *= self.engine.speed.dequant_efficiency;
        }
        if let Unit::Matrix(d @ (ComputeDtype::Fp8 | ComputeDtype::Fp4)) = op.unit {
            // the device's measured factors apply to weight matmuls
            let weights = op.cost.read.weights > 0.0 && !op.kind.is_attention_core();
            let measured = self.gemm_dtypes.filter(|_| weights).and_then(|g| match d {
                ComputeDtype::Fp8 => g.fp8,
                _ => g.fp4,
            });
            match (d, measured) {
                // an fp8 matmul's measured compute factor is not applied: see
                // `kernels::GemmDtypes`
                (ComputeDtype::Fp8, Some(f)) => e.memory *= f.memory,
                (_, Some(f)) => {
                    e.compute *= f.compute;
                    e.memory *= f.memory;
                }
                (ComputeDtype::Fp4, None) => e.compute *= self.engine.speed.fp4_efficiency,
                _ => {}
            }
        }
        match self.matmul_rows(op) {
            Some(m) if m > crate::engine::GEMV_MAX_TOKENS as f64 => {
                let rows = match self.token_tile(op) {
                    Some(t) => (m / t).ceil() * t,
                    None => m,
                };
                e.compute *= m / (rows + self.engine.speed.gemm_half_rows);
            }
            // a matrix-vector kernel that does not overlap its multiply-adds with its
            // loads past the first row (one row's hides under them): each further row's
            // arithmetic adds to the time its weights stream in, a lower effective
            // bandwidth. On an Apple GPU (where alone the time is set) a routed expert's
            // matmul is one row per token-expert pair below 32 tokens; from 32 the
            // expert matrix kernel's few rows per expert pay it as well, as the M2
            // Ultra's MoE rows of 32 sequences show ([`METAL_EXPERT_MM_MIN`])
            Some(m) if self.gemv_s_per_flop > 0.0 && m > 1.0 => {
                let load = op.cost.bytes() / (self.ceilings(op).memory_bytes_per_s * e.memory);
                let extra = op.cost.flops * (m - 1.0) / m * self.gemv_s_per_flop;
                if load.is_finite() && load > 0.0 {
                    e.memory *= load / (load + extra);
                }
            }
            _ => {}
        }
        if op.kind.is_attention_core() {
            e.compute *= self.engine.speed.attention_efficiency;
            e.memory *= self.engine.speed.attention_efficiency;
        }
        e.overhead_s *= op.count;
        e
    }

    /// The tokens a weight matmul's kernel computes at a time, where it computes whole
    /// tiles of them: on an Apple GPU, [`METAL_TOKEN_TILE`] for a matmul of more than
    /// [`crate::engine::GEMV_MAX_TOKENS`] rows (`kernel_mul_mm`'s threadgroups multiply
    /// a tile of weights against 32 tokens, masking those past the last: 16 sequences'
    /// decode step takes nearly what 32 do, docs/calibration.md). Not a routed expert's
    /// matmul: the expert matrix kernel's tiles (from [`METAL_EXPERT_MM_MIN`] tokens)
    /// costed so, with or without the roll-off, do not match the M2 Ultra's MoE rows
    /// (docs/calibration-log.md).
    fn token_tile(&self, op: &OpInstance) -> Option<f64> {
        (self.tiles_tokens() && !op.routed).then_some(METAL_TOKEN_TILE as f64)
    }

    /// [`crate::model::graph::Shard::pair_reads_below`] for this device:
    /// [`METAL_EXPERT_MM_MIN`] on an Apple GPU, 0 elsewhere.
    pub(crate) fn expert_pair_reads_below(&self) -> u64 {
        if self.tiles_tokens() {
            METAL_EXPERT_MM_MIN
        } else {
            0
        }
    }

    /// Whether weight matmuls compute whole tiles of tokens ([`METAL_TOKEN_TILE`]): on
    /// an Apple GPU.
    pub(crate) fn tiles_tokens(&self) -> bool {
        self.hardware.class == crate::hardware::DeviceClass::Apple
    }

    /// Whether a weight-only quantized matmul runs at the 16-bit rate, its
    /// [`crate::engine::Speed::dequant_efficiency`] not paid: on an Apple GPU, a matmul
    /// of more than [`crate::engine::GEMV_MAX_TOKENS`] rows (a prompt's). The Metal
    /// matrix-matrix kernel is one kernel for 16-bit and quantized weights alike: each
    /// threadgroup widens its tile of weights into threadgroup memory once and
    /// multiplies it with simdgroup matrices against 32 tokens (llama.cpp's
    /// `kernel_mul_mm`, `dequantize_func` into `sa`: ggml/src/ggml-metal/ggml-metal.metal
    /// at ggml-org/llama.cpp@000a1174aa8f42a18ed08ec8e833f9c415397423), so the widening
    /// is a small share of the tile's work. On CUDA a quantized prompt matmul runs other
    /// kernels than a 16-bit one (llama.cpp's MMQ: int8 dot products; Marlin, AWQ), whose
    /// rate the fitted factor holds.
    fn dequantizes_in_tile(&self, op: &OpInstance) -> bool {
        self.hardware.class == crate::hardware::DeviceClass::Apple
            && self
                .matmul_rows(op)
                .is_some_and(|m| m > crate::engine::GEMV_MAX_TOKENS as f64)
    }

    /// The rows (tokens) of a weight matmul, `None` for any other op: its FLOPs over
    /// twice its weights' elements ([`Predictor::weight_elements`]; for routed experts,
    /// the tokens each expert that has some receives on average).
    pub(crate) fn matmul_rows(&self, op: &OpInstance) -> Option<f64> {
        if op.cost.flops <= 0.0 {
            return None;
        }
        Some(op.cost.flops / (2.0 * self.weight_elements(op)?))
    }

    /// The weight elements one execution of a weight matmul reads on one device, `None`
    /// for any other op: its weight bytes at the width the graph stores them (the
    /// embeddings' width for the lm_head, the experts' format for a MoE model's expert
    /// matmuls, the weights' otherwise). (A MoE model's dense MLP layers, where its
    /// experts ship in another format than its other weights, are counted at the
    /// experts' width, and a draft model's matmuls at the target model's widths: where
    /// those differ their elements are off by the ratio of the widths, which moves only
    /// the roll-off of [`crate::engine::Speed::gemm_half_rows`] and the shape a kernel
    /// table is read at.)
    pub(crate) fn weight_elements(&self, op: &OpInstance) -> Option<f64> {
        use crate::model::graph::OpKind as K;
        if !matches!(op.unit, Unit::Matrix(_) | Unit::Dequant(_))
            || op.kind.is_attention_core()
            || op.cost.read.weights <= 0.0
        {
            return None;
        }
        let bits = match op.kind {
            K::LmHead => self.precision.embedding_bits(),
            K::Router => 16.0,
            K::GateUpProj | K::UpProj | K::DownProj if self.model.is_moe() => {
                self.precision.experts.bits()
            }
            _ => self.precision.weights.bits(),
        };
        Some(op.cost.read.weights * 8.0 / bits)
    }

    /// Places one op instance (all its executions).
    pub fn place_op(&self, op: &OpInstance) -> Placement {
        place(&op.total(), self.ceilings(op), &self.op_efficiency(op))
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
    /// in memory at `batch` (0: nothing fits), whatever the model was trained for.
    pub fn max_context_in_memory(&self, batch: u64) -> u64 {
        crate::search::largest(1, 1 << 40, |c| self.memory(batch, c, 0).0.fits).unwrap_or(0)
    }

    /// Largest context per sequence that fits at `batch` and that the model was trained
    /// for (0: nothing fits).
    pub fn max_context(&self, batch: u64) -> u64 {
        self.max_context_in_memory(batch)
            .min(self.model.max_context)
    }

    /// KV-cache bytes per token of one sequence on the device holding the most layers.
    pub fn kv_bytes_per_token(&self) -> f64 {
        self.memory.kv_bytes_per_token()
    }

    /// One sequence's cache bytes as a function of its context, where one line gives
    /// them (`MemoryModel::sequence_cache`).
    pub fn sequence_cache(&self) -> Option<crate::memory::CacheBytes> {
        self.memory.sequence_cache()
    }

    /// The core numbers without per-op detail (no heap allocation).
    pub fn summary(&self, batch: u64, prompt: u64, gen_tokens: u64) -> Summary {
        self.summary_after(batch, prompt, gen_tokens, |offloaded| {
            self.whole_prefill(batch, prompt, offloaded)
        })
    }

    /// The prefill [`Predictor::summary`] reports: the engine's passes over the prompts
    /// and, with a draft model, its passes.
    pub(crate) fn whole_prefill(&self, batch: u64, prompt: u64, offloaded: f64) -> PassResult {
        let mut prefill = self.prefill_pass(batch, prompt, offloaded);
        prefill.add_scaled(&self.draft_prefill(batch, prompt), 1.0);
        prefill
    }

    /// [`Predictor::summary`] with its prefill from `prefill` (given the bytes
    /// offloaded per pass): [`Predictor::whole_prefill`], or one kept from an earlier
    /// generation length ([`Evaluator`]).
    pub(crate) fn summary_after(
        &self,
        batch: u64,
        prompt: u64,
        gen_tokens: u64,
        prefill: impl FnOnce(f64) -> PassResult,
    ) -> Summary {
        let (memory, offloaded) = self.memory(batch, prompt, gen_tokens);
        let prefill = prefill(offloaded);
        let mid = decode_context(prompt, gen_tokens);
        let (lo, hi) = decode_steps(prompt, gen_tokens);
        let (decode, decode_total_s, decode_total_roofline_s) =
            self.decode_with_sum(batch, mid, lo, hi, offloaded);
        let speedup = match self.spec {
            None => 1.0,
            Some(_) => ratio(
                self.pass(&Step::decode(batch, mid), offloaded).time_s,
                decode.time_s,
            ),
        };
        Summary {
            prefill,
            decode,
            decode_steps: (hi + 1).saturating_sub(lo),
            decode_total_s,
            decode_total_roofline_s,
            memory,
            offloaded_bytes: offloaded,
            speedup,
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
                let ce = self.ceilings(op);
                c += t.flops / ce.peak_flops_per_s;
                m += t.bytes() / ce.memory_bytes_per_s;
            }
            c >= m
        };
        crate::search::smallest(1, 1 << 24, is_compute)
    }
}
