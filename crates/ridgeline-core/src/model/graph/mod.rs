//! The layer graph as data: `(model, step shape, formats, tensor-parallel degree)` ->
//! the operators of one forward pass with their per-device [`Cost`]s.
//!
//! One code path serves prefill and decode: a [`Step`] is `batch` sequences each adding
//! `new_tokens` tokens to a KV cache that then holds `context` tokens (prefill:
//! `new_tokens = context = prompt`; decode: `new_tokens = 1`, `context = L`).
//!
//! The graph is a fixed-capacity array (no heap allocation), so it can be rebuilt for
//! millions of configurations in a sweep.

use crate::dtype::{ComputeDtype, Format};
use crate::model::ModelConfig;
use crate::ops::{self, Cost};

crate::named_enum! {
    /// The phase of inference a pass belongs to.
    pub enum Phase: "phase" {
        /// The prompt, all tokens at once (time to first token).
        Prefill = "prefill",
        /// One new token per sequence (with speculative decoding: the verify pass).
        Decode = "decode",
        /// One step of a speculative-decoding draft (a draft model or head).
        Draft = "draft",
    }
}

mod kind;
mod pass;

pub use kind::OpKind;
pub use pass::{draft_head, forward, forward_layers};

/// Most operators one forward pass can have.
pub(crate) const MAX_OPS: usize = 64;

/// Shape of one forward pass.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Step {
    /// Sequences processed together.
    pub batch: u64,
    /// New tokens per sequence in this pass.
    pub new_tokens: u64,
    /// Tokens in each sequence's KV cache after this pass (includes the new ones).
    pub context: u64,
    /// Rows the lm_head runs on per sequence (prefill: 1, the last token; decode: all new).
    pub logits_per_sequence: u64,
    /// The new tokens extend a cached context through the decode kernels (a decode step
    /// or a speculative verification pass) rather than the prompt kernels (a prefill or
    /// a chunk of one, a training step): latent attention then runs its
    /// weight-absorbed form over the cached latents instead of expanding them.
    pub decode: bool,
    /// Tokens of the pass over all expert-parallel groups, where they are not the
    /// `batch · new_tokens` this step gives (`None`): a mixed serving iteration whose
    /// busiest group runs fewer tokens than an even share of them. The routed experts
    /// see these tokens; attention and the dense parts run the step's own share.
    pub all_tokens: Option<u64>,
}

impl Step {
    /// Prefill of `prompt` tokens for `batch` sequences (logits for the last token only).
    pub fn prefill(batch: u64, prompt: u64) -> Step {
        Step {
            batch,
            new_tokens: prompt,
            context: prompt,
            logits_per_sequence: 1,
            decode: false,
            all_tokens: None,
        }
    }

    /// One decode step at context `context` (the new token included).
    pub fn decode(batch: u64, context: u64) -> Step {
        Step {
            batch,
            new_tokens: 1,
            context,
            logits_per_sequence: 1,
            decode: true,
            all_tokens: None,
        }
    }
}

/// What one device runs of a model: its tensor-parallel share of the first `layers`
/// layers, with the routed experts of MoE layers spread over `ep` expert-parallel groups.
///
/// With `ep > 1` a layout of `tp · ep` devices runs attention and every dense part
/// tensor-parallel over `tp` devices and data-parallel over the `ep` groups (each group
/// serves `batch / ep` of the sequences), and each group holds `1/ep` of the routed
/// experts, every expert split `tp` ways inside it.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Shard {
    /// Tensor-parallel degree.
    pub tp: u64,
    /// Expert-parallel groups (1: none).
    pub ep: u64,
    /// Layers held (the first `layers` of the model: all, or a pipeline stage).
    pub layers: u64,
}

impl Shard {
    /// `tp`-way tensor parallel over `layers` layers, no expert parallelism.
    pub fn tp(tp: u64, layers: u64) -> Shard {
        Shard { tp, ep: 1, layers }
    }
}

/// The formats a predictor ([`crate::predict::Predictor`]) uses for `weights` and `kv` (`None`: the model's native
/// weight format, with the routed experts in the checkpoint's expert format where it
/// ships one; the activation dtype for the KV cache), without building one.
pub fn resolve_formats(
    model: &ModelConfig,
    weights: Option<Format>,
    kv: Option<Format>,
) -> Precision {
    let experts = weights.unwrap_or(model.native_expert_format.unwrap_or(model.native_format));
    let weights = weights.unwrap_or(model.native_format);
    let activations = activation_dtype(model, weights);
    Precision {
        weights,
        kv: kv.unwrap_or(format_for(activations)),
        activations,
        experts,
        kernels: Default::default(),
    }
}

/// The activation dtype (and so the default KV format) for weights in `weights`: fp32,
/// fp16 and bf16 weights run activations in their own dtype (an fp32 checkpoint cast to
/// bf16 runs bf16); quantized weights run the model's native 16-bit dtype, or bf16 for an
/// fp32 model.
pub fn activation_dtype(model: &ModelConfig, weights: Format) -> ComputeDtype {
    match weights.as_activation_dtype() {
        Some(d) => d,
        None => match model.native_format.as_activation_dtype() {
            Some(d @ (ComputeDtype::Fp16 | ComputeDtype::Bf16)) => d,
            _ => ComputeDtype::Bf16,
        },
    }
}

pub(crate) fn format_for(d: ComputeDtype) -> Format {
    match d {
        ComputeDtype::Fp32 | ComputeDtype::Tf32 | ComputeDtype::Fp64 => Format::Fp32,
        ComputeDtype::Fp16 => Format::Fp16,
        _ => Format::Bf16,
    }
}

/// Formats and options of a forward pass.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Precision {
    /// Weight storage format.
    pub weights: Format,
    /// KV cache format.
    pub kv: Format,
    /// Activation dtype (bf16/fp16/fp32).
    pub activations: ComputeDtype,
    /// Storage format of the routed experts (`weights` but where a checkpoint ships its
    /// experts in another format, as gpt-oss does in MXFP4).
    pub experts: Format,
    /// What the engine's matmul kernels do with low-precision weights.
    pub kernels: Kernels,
}

/// What an engine's matmul kernels do with low-precision weights: which tensor-core
/// rate a weight format multiplies at (see `Precision::compute_dtype`).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Kernels {
    /// `mxfp4` and `nvfp4` weights run on fp4 tensor cores where the device has them
    /// (TensorRT-LLM, SGLang, vLLM on Blackwell); otherwise they are dequantized to the
    /// activation dtype (llama.cpp).
    pub fp4: bool,
    /// GGUF block formats (`q4_0`, `q8_0`, k-quants) run integer MMA (llama.cpp's MMQ:
    /// activations quantized to 8 bits, the int8 tensor rate) instead of being
    /// dequantized to the activation dtype.
    pub int8_mma: bool,
    /// The KV cache grows by concatenation (Hugging Face's dynamic cache,
    /// `torch.cat` per layer and step): each decode step copies every layer's cache,
    /// reading and writing it once more besides the attention's read.
    pub kv_concat: bool,
    /// Unfused attention keeps its queries, scores, probabilities and outputs in fp32
    /// (ggml: every matmul result and the softmax are fp32 tensors), whatever the
    /// activation dtype; fused attention is unaffected.
    pub fp32_scores: bool,
}

impl Default for Kernels {
    /// fp4 tensor cores, GGUF dequantized to 16 bits, a preallocated KV cache.
    fn default() -> Self {
        Kernels {
            fp4: true,
            int8_mma: false,
            kv_concat: false,
            fp32_scores: false,
        }
    }
}

impl Precision {
    /// Bits per element of the token embedding and the lm_head: 16 where the weight
    /// format keeps them so ([`Format::keeps_embeddings_16bit`]), else the weights'.
    pub(crate) fn embedding_bits(&self) -> f64 {
        if self.weights.keeps_embeddings_16bit() {
            16.0
        } else {
            self.weights.bits()
        }
    }

    /// The dtype a matmul on weights stored as `f` runs in: fp8 and int8 weights W8A8,
    /// fp4 formats on fp4 tensor cores and GGUF formats on int8 MMA where
    /// [`Precision::kernels`] says so, everything else at the activation dtype, except
    /// GGUF formats under 16-bit activations, which dequantize to fp16: their block
    /// scales are fp16 (`ggml_half`) and llama.cpp's dequantize-then-GEMM path widens
    /// them to fp16 whatever the model's dtype, so an engine that accumulates in fp16
    /// reaches the fp16-accumulate rate on them too.
    pub(crate) fn compute_dtype(&self, f: Format) -> ComputeDtype {
        match f {
            Format::Mxfp4 | Format::Nvfp4 if !self.kernels.fp4 => self.activations,
            _ if f.is_gguf() && self.kernels.int8_mma => ComputeDtype::Int8,
            _ if f.is_gguf() && self.activations == ComputeDtype::Bf16 => ComputeDtype::Fp16,
            _ => f.compute_dtype(self.activations),
        }
    }

    /// The unit a matmul on weights stored as `f` runs on: [`Unit::Dequant`] where the
    /// kernel widens the weights to a wider dtype before multiplying (weight-only
    /// quantization: AWQ, GPTQ, NF4, GGUF, fp4 without fp4 tensor cores), otherwise
    /// [`Unit::Matrix`].
    pub(crate) fn unit(&self, f: Format) -> Unit {
        let d = self.compute_dtype(f);
        if f.bits() + 0.75 < d.bytes() * 8.0 {
            Unit::Dequant(d)
        } else {
            Unit::Matrix(d)
        }
    }
}

/// Whether an op runs on matrix units (tensor cores) or vector units.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Unit {
    /// Matrix math at the given dtype.
    Matrix(ComputeDtype),
    /// Matrix math at the given dtype on weights the kernel first widens to it
    /// (weight-only quantization): the engine's `dequant_efficiency` applies.
    Dequant(ComputeDtype),
    /// Elementwise / reduction math.
    Vector,
}

impl Unit {
    /// `bf16`, `fp8`, ... for matrix units, `vector` otherwise.
    pub(crate) fn name(self) -> &'static str {
        match self {
            Unit::Matrix(d) | Unit::Dequant(d) => d.name(),
            Unit::Vector => "vector",
        }
    }
}

impl serde::Serialize for Unit {
    fn serialize<S: serde::Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        s.serialize_str(self.name())
    }
}

/// One operator of the graph.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct OpInstance {
    /// What the op is (its name in reports: `qkv_proj`, `attention`, ...).
    pub kind: OpKind,
    /// Executions per forward pass (layers for per-layer ops, 1 otherwise).
    pub count: f64,
    /// Cost of one execution on one device.
    pub cost: Cost,
    /// Where it runs.
    pub unit: Unit,
    /// An expert all-to-all of a prompt pass (a prefill, a chunk of one, a training
    /// step): the high-throughput kernels (DeepEP's normal mode), whose copies for
    /// another scale-up domain cross the network once per domain and are forwarded
    /// inside it. False for a decode pass's all-to-all (the low-latency kernels send
    /// straight to each expert) and for every other op.
    pub forwarded: bool,
    /// A routed expert's op (its matmuls and activation, the dispatch and combine that
    /// feed it): what runs more where expert parallelism routes more tokens to one rank
    /// than to the mean (`TrainConfig::expert_imbalance`).
    pub routed: bool,
}

impl OpInstance {
    /// Cost of all executions.
    pub fn total(&self) -> Cost {
        self.cost.times(self.count)
    }
}

/// What an op is beside its kind: [`OpInstance::forwarded`], [`OpInstance::routed`].
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub(super) struct Tags {
    pub forwarded: bool,
    pub routed: bool,
}

/// The operators of one forward pass (fixed capacity, no allocation).
#[derive(Debug, Clone, Copy)]
pub struct Graph {
    pub(super) ops: [OpInstance; MAX_OPS],
    pub(super) len: usize,
}

pub(super) const EMPTY: OpInstance = OpInstance {
    kind: OpKind::Embedding,
    count: 0.0,
    cost: Cost {
        flops: 0.0,
        read: ops::ByteClasses {
            weights: 0.0,
            activations: 0.0,
            kv: 0.0,
        },
        written: ops::ByteClasses {
            weights: 0.0,
            activations: 0.0,
            kv: 0.0,
        },
        link_bytes: 0.0,
    },
    unit: Unit::Vector,
    forwarded: false,
    routed: false,
};

impl Graph {
    /// Appends an op; an op of the same kind, unit and cost per execution already in
    /// the graph (the norms of two layer kinds) takes the executions instead. Attention
    /// ops are never merged: their cost depends on the context.
    pub(super) fn push(&mut self, kind: OpKind, count: f64, cost: Cost, unit: Unit) {
        self.push_op(kind, count, cost, unit, Tags::default());
    }

    /// [`Graph::push`] with [`OpInstance::forwarded`] and [`OpInstance::routed`] as
    /// `tags` give.
    pub(super) fn push_op(&mut self, kind: OpKind, count: f64, cost: Cost, unit: Unit, tags: Tags) {
        if count <= 0.0 {
            return;
        }
        let Tags { forwarded, routed } = tags;
        if !kind.is_attention_core()
            && let Some(op) = self.ops[..self.len].iter_mut().find(|o| {
                o.kind == kind
                    && o.unit == unit
                    && o.cost == cost
                    && o.forwarded == forwarded
                    && o.routed == routed
            })
        {
            op.count += count;
            return;
        }
        if self.len < MAX_OPS {
            self.ops[self.len] = OpInstance {
                kind,
                count,
                cost,
                unit,
                forwarded,
                routed,
            };
            self.len += 1;
        }
    }

    /// The operators in execution order.
    pub fn ops(&self) -> &[OpInstance] {
        &self.ops[..self.len]
    }

    /// Sum of every op's total cost.
    pub fn total(&self) -> Cost {
        self.ops().iter().map(OpInstance::total).sum()
    }
}

/// Expected number of distinct experts that `tokens` tokens touch when each picks
/// `k` of `e` experts uniformly: `e · (1 - (1 - k/e)^tokens)`. One token touches `k`;
/// many tokens touch all `e`. This sets MoE weight traffic at batch > 1.
pub fn expected_experts(e: u64, k: u64, tokens: u64) -> f64 {
    if e <= 1 {
        return 1.0;
    }
    let (e, k) = (e as f64, k as f64);
    e * (1.0 - (1.0 - k / e).powf(tokens as f64))
}

pub(super) fn ceil_div(a: u64, b: u64) -> u64 {
    a.div_ceil(b.max(1))
}

pub(super) fn matmul_dtype(u: Unit) -> ComputeDtype {
    match u {
        Unit::Matrix(d) | Unit::Dequant(d) => d,
        Unit::Vector => ComputeDtype::Fp32,
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::model::ModelDb;

    /// The fp16 graph of `step` over `tp` devices, fused attention.
    fn plain(m: &crate::model::ModelConfig, step: &Step, tp: u64) -> Graph {
        forward(m, step, &bf16(), &Shard::tp(tp, m.layers), true)
    }

    fn bf16() -> Precision {
        Precision {
            weights: Format::Fp16,
            kv: Format::Fp16,
            activations: ComputeDtype::Fp16,
            experts: Format::Fp16,
            kernels: Kernels::default(),
        }
    }

    #[test]
    fn decode_weight_bytes_equal_params_times_two() {
        // Llama-2-7B fp16 batch 1: every weight except the unused embedding rows is
        // read once per token: (6,738,415,616 - 131,072,000 + 4096) · 2 bytes, plus
        // one embedding row (4096 · 2).
        let m = ModelDb::builtin().unwrap().resolve("llama-2-7b").unwrap();
        let g = plain(&m, &Step::decode(1, 1), 1);
        let w = g.total().read.weights;
        let expect = (6_738_415_616.0 - 131_072_000.0) * 2.0 + 4096.0 * 2.0;
        assert!((w - expect).abs() < 1.0, "{w} vs {expect}");
        // FLOPs ~ 2 · non-embedding params
        let f = g.total().flops;
        assert!((f / (2.0 * 6.607e9) - 1.0).abs() < 0.01, "{f}");
    }

    #[test]
    fn moe_expected_experts() {
        assert_eq!(expected_experts(8, 2, 1), 2.0);
        // 2 tokens: 8 · (1 - 0.75²) = 3.5
        assert_eq!(expected_experts(8, 2, 2), 3.5);
        assert!((expected_experts(8, 2, 1000) - 8.0).abs() < 1e-9);
        assert_eq!(expected_experts(1, 1, 5), 1.0);
    }

    #[test]
    fn mixtral_decode_reads_two_experts() {
        // batch 1 decode reads active-param weights: 12,879,925,248 - 131,072,000 (embedding
        // table unread) at 2 bytes, + one embedding row.
        let m = ModelDb::builtin().unwrap().resolve("mixtral-8x7b").unwrap();
        let g = plain(&m, &Step::decode(1, 1), 1);
        let w = g.total().read.weights;
        let expect = (12_879_925_248.0 - 131_072_000.0) * 2.0 + 8192.0;
        assert!((w / expect - 1.0).abs() < 1e-9, "{w} vs {expect}");
    }

    #[test]
    fn tensor_parallel_splits_and_adds_allreduce() {
        let m = ModelDb::builtin().unwrap().resolve("llama-2-70b").unwrap();
        let one = plain(&m, &Step::decode(1, 100), 1).total();
        let four = plain(&m, &Step::decode(1, 100), 4).total();
        assert!((one.read.weights / four.read.weights - 4.0).abs() < 0.05);
        // two all-reduces of 8192 fp16 per layer, ring factor 2·3/4: 80·2·1.5·16384 bytes
        assert_eq!(four.link_bytes, 80.0 * 2.0 * 1.5 * 16384.0);
    }

    #[test]
    fn fp32_scores_double_the_unfused_score_bytes() {
        // Llama-2-7B, one 512-token prompt, unfused: 32 heads x 512 x 512 = 8,388,608
        // scores per layer, written by QK^T and read and written by the softmax: fp16
        // 16,777,216 bytes written by the scores, 33,554,432 read + written by the
        // softmax; fp32 twice that. Fused attention never stores them.
        let m = ModelDb::builtin().unwrap().resolve("llama-2-7b").unwrap();
        let mut f32s = bf16();
        f32s.kernels.fp32_scores = true;
        let step = Step::prefill(1, 512);
        let shard = Shard::tp(1, m.layers);
        let of = |p: &Precision, flash: bool, kind: OpKind| -> Cost {
            forward(&m, &step, p, &shard, flash)
                .ops()
                .iter()
                .find(|o| o.kind == kind)
                .map(|o| o.cost)
                .unwrap()
        };
        let (s16, s32) = (
            of(&bf16(), false, OpKind::AttnScores),
            of(&f32s, false, OpKind::AttnScores),
        );
        assert_eq!(s16.written.activations, 16_777_216.0);
        assert_eq!(s32.written.activations, 33_554_432.0);
        assert_eq!(s32.flops, s16.flops);
        assert_eq!(s32.read.kv, s16.read.kv);
        let (m16, m32) = (
            of(&bf16(), false, OpKind::AttnSoftmax),
            of(&f32s, false, OpKind::AttnSoftmax),
        );
        assert_eq!(m16.bytes(), 33_554_432.0);
        assert_eq!(m32.bytes(), 67_108_864.0);
        let fused = |p: &Precision| forward(&m, &step, p, &shard, true).total();
        assert_eq!(fused(&bf16()), fused(&f32s));
    }

    #[test]
    fn no_allocation_graph_fits_every_model() {
        for m in ModelDb::builtin().unwrap().models() {
            let g = forward(
                m,
                &Step::prefill(1, 16),
                &bf16(),
                &Shard::tp(2, m.layers),
                false,
            );
            assert!(g.ops().len() < MAX_OPS, "{}", m.id);
        }
    }
}
