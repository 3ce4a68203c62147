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
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Shard {
    /// Tensor-parallel degree.
    pub tp: u64,
    /// Expert-parallel groups (1: none).
    pub ep: u64,
    /// Layers held (the first `layers` of the model: all, or a pipeline stage).
    pub layers: u64,
    /// With `ep > 1`, the device is the expert-parallel rank that the pass's routing
    /// loads most ([`expert_load`]: every layer waits for it, so an inference step's
    /// time is its time); false, the mean rank (a training step, whose imbalance
    /// `TrainConfig::expert_imbalance` states).
    pub busiest: bool,
    /// On the busiest rank, its routed rows over the mean's at least this (1: the
    /// uniform-routing expectation alone; `Scenario::expert_imbalance`).
    pub imbalance: f64,
    /// Tokens per pass below which a routed expert's matmuls read the expert's weights
    /// once for each token that picks it, not once for the pass (0: never). An Apple
    /// GPU's expert kernels do so below 32 tokens (`crate::predict::METAL_EXPERT_MM_MIN`:
    /// llama.cpp's Metal `mul_mv_id` multiplies each (token, expert) pair on its own).
    pub pair_reads_below: u64,
}

impl Shard {
    /// `tp`-way tensor parallel over `layers` layers, no expert parallelism.
    pub fn tp(tp: u64, layers: u64) -> Shard {
        Shard {
            tp,
            ep: 1,
            layers,
            busiest: false,
            imbalance: 1.0,
            pair_reads_below: 0,
        }
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
    resolve_formats_with(model, weights, None, kv)
}

/// [`resolve_formats`] with the routed experts' format stated apart (`experts`; `None`:
/// `weights` where it is given, else the checkpoint's expert format). A model without
/// routed experts ignores it.
pub fn resolve_formats_with(
    model: &ModelConfig,
    weights: Option<Format>,
    experts: Option<Format>,
    kv: Option<Format>,
) -> Precision {
    let experts = experts
        .filter(|_| model.experts > 1)
        .or(weights)
        .unwrap_or(model.native_expert_format.unwrap_or(model.native_format));
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

/// The routed-expert work of one MoE layer on the busiest of `ranks` expert-parallel
/// ranks against the mean rank's ([`expert_load`]).
#[derive(Debug, Clone, Copy, PartialEq, serde::Serialize)]
pub struct ExpertLoad {
    /// Expert-parallel ranks.
    pub ranks: u64,
    /// Routed rows (token-expert pairs) the mean rank runs: `T · k / ranks`.
    pub mean_rows: f64,
    /// Expected routed rows on the rank that receives the most.
    pub rows: f64,
    /// Distinct experts the mean rank's rows touch: `expected_experts(E, k, T) / ranks`.
    pub mean_touched: f64,
    /// Expected distinct experts touched on the rank that touches the most (whose
    /// weights it reads).
    pub touched: f64,
}

impl ExpertLoad {
    /// The busiest rank's routed rows over the mean rank's (1 where there are none):
    /// how much more of the routed work and of the all-to-all traffic it takes.
    pub fn rows_ratio(&self) -> f64 {
        if self.mean_rows > 0.0 {
            self.rows / self.mean_rows
        } else {
            1.0
        }
    }

    /// The load with the busiest rank's rows at least `imbalance` times the mean's (a
    /// measured imbalance, `Scenario::expert_imbalance`), the experts it touches
    /// unchanged: hot experts take more rows, not more weights.
    pub fn with_imbalance(self, imbalance: f64) -> ExpertLoad {
        ExpertLoad {
            rows: self.rows.max(imbalance * self.mean_rows),
            ..self
        }
    }
}

/// The busiest of `ranks` expert-parallel ranks when `tokens` tokens each pick `k` of
/// `e` experts uniformly at random and each rank holds `ceil(e / ranks)` of them: the
/// imbalance that balancing the experts' mean loads (auxiliary losses, a placement such
/// as DeepSeek's EPLB) leaves, one step's routing varying around the mean. Hot experts
/// left unbalanced make it worse; rebalancing each step over redundant copies of experts
/// (SGLang's LPLB) can make it smaller.
///
/// Each of the `T · k` expert picks lands on a given rank with probability
/// `ceil(e / ranks) / e` (a token's `k` experts are in fact distinct, which spreads
/// them a little more evenly), and each of the rank's experts is touched with
/// probability `1 - (1 - k/e)^T`; the busiest rank's expected rows and touched experts
/// are the expected maxima over `ranks` such independent counts
/// ([`expected_max_binomial`]), the two taken separately (the step waits for the
/// slowest rank, whose rows set its compute and whose touched experts set its weight
/// reads), the touched experts at most the rows (the count of one token's, or a few
/// tokens', is their rows'). One rank: the mean.
pub fn expert_load(e: u64, k: u64, tokens: u64, ranks: u64) -> ExpertLoad {
    // a serving simulation asks for the same few token counts at every iteration: the
    // last 16, one slot per count modulo 16, on each thread
    type Slot = Option<((u64, u64, u64, u64), ExpertLoad)>;
    thread_local! {
        static LOADS: std::cell::RefCell<[Slot; 16]> = const { std::cell::RefCell::new([None; 16]) };
    }
    let key = (e, k, tokens, ranks);
    let slot = (tokens % 16) as usize;
    let hit = LOADS.with_borrow(|l| l[slot].filter(|(k, _)| *k == key));
    if let Some((_, load)) = hit {
        return load;
    }
    let load = compute_expert_load(e, k, tokens, ranks);
    LOADS.with_borrow_mut(|l| l[slot] = Some((key, load)));
    load
}

/// [`expert_load`], computed.
fn compute_expert_load(e: u64, k: u64, tokens: u64, ranks: u64) -> ExpertLoad {
    let ranks = ranks.max(1);
    let picks = tokens.saturating_mul(k);
    let mean_rows = picks as f64 / ranks as f64;
    let touched_all = expected_experts(e, k, tokens);
    let mean_touched = touched_all / ranks as f64;
    if ranks == 1 || e <= 1 {
        return ExpertLoad {
            ranks,
            mean_rows,
            rows: mean_rows,
            mean_touched,
            touched: mean_touched,
        };
    }
    let held = e.div_ceil(ranks);
    let share = held as f64 / e as f64;
    // each expert is touched with the probability expected_experts(e, k, tokens) / e
    let hit = touched_all / e as f64;
    let rows = expected_max_binomial(picks, share, ranks).max(mean_rows);
    ExpertLoad {
        ranks,
        mean_rows,
        rows,
        mean_touched,
        touched: expected_max_binomial(held, hit, ranks)
            .min(rows)
            .max(mean_touched),
    }
}

/// Expected maximum of `n` independent Binomial(`trials`, `p`) counts: exactly,
/// `Σ_{x < trials} (1 - F(x)^n)` (for `p` above one half, `trials` less the expected
/// minimum of the complementary counts, `Σ_x (1 - F'(x))^n`, which ends sooner), where
/// the counts vary by less than 3; beyond, `mean + sd · (z + (z² - 1) · γ / 6)`, `z` the
/// expected maximum of `n` standard normals by Blom's approximation
/// `Φ⁻¹((n - 0.375) / (n + 0.25))` (within 0.025 of the exact values for 2 to 256:
/// 1.4345 for 8 against 1.4236, Harter 1961, Biometrika 48, 151-165) and `γ = (1 - 2p) /
/// sd` the binomial's skewness (Cornish and Fisher 1938: without it, the busiest of 256
/// ranks at a mean of 11.7 rows comes out 21.3 against 22.5 exactly; with it, 22.5), at
/// most `trials`.
pub fn expected_max_binomial(trials: u64, p: f64, n: u64) -> f64 {
    let t = trials as f64;
    let mean = t * p;
    if n <= 1 || p <= 0.0 || trials == 0 {
        return mean.max(0.0);
    }
    if p >= 1.0 {
        return t;
    }
    let var = mean * (1.0 - p);
    if var >= 9.0 {
        // Cornish-Fisher: the binomial's skew (1 - 2p) / sd moves its upper quantiles
        // up by (z² - 1) · skew / 6 sd
        let (sd, z) = (var.sqrt(), normal_max(n));
        let skew = (1.0 - 2.0 * p) / sd;
        return (mean + sd * (z + (z * z - 1.0) * skew / 6.0)).min(t);
    }
    let n = i32::try_from(n).unwrap_or(i32::MAX);
    if p > 0.5 {
        // max X = trials - min(trials - X), the complement Binomial(trials, 1 - p)
        return t - binomial_sum(trials, 1.0 - p, |cdf| (1.0 - cdf).powi(n));
    }
    binomial_sum(trials, p, |cdf| 1.0 - cdf.powi(n))
}

/// `Σ_{x < trials} term(F(x))` over the Binomial(`trials`, `p`) CDF `F` (`p` at most one
/// half, the counts' variance below 9: the first probability, `(1 - p)^trials`, is at
/// least `e^-36` and the pmf follows by its ratio recurrence), stopping once a term
/// falls below 1e-12 (`term` decreasing in `F`) or 40 standard deviations above the
/// mean (at most 139 steps: beyond, the tail is below any f64 step of `F`).
fn binomial_sum(trials: u64, p: f64, term: impl Fn(f64) -> f64) -> f64 {
    let odds = p / (1.0 - p);
    // (1 - p)^trials through ln(1 + x): a billion trials at p = 1e-9 would otherwise
    // carry the rounding of 1 - p, 3e-8 of every probability, into tails of 1e-7
    let mut pmf = (trials as f64 * (-p).ln_1p()).exp();
    let (mut cdf, mut sum) = (0.0_f64, 0.0);
    let mean = trials as f64 * p;
    let end = trials.min((mean + 40.0 * (mean * (1.0 - p)).sqrt()) as u64 + 1);
    for x in 0..end {
        cdf = (cdf + pmf).min(1.0);
        let v = term(cdf);
        if v < 1e-12 {
            break;
        }
        sum += v;
        pmf *= (trials - x) as f64 / (x + 1) as f64 * odds;
    }
    sum
}

/// Expected maximum of `n` standard normals by Blom's plotting position, the quantile
/// by Abramowitz and Stegun 26.2.23 (absolute error below 4.5e-4).
fn normal_max(n: u64) -> f64 {
    let n = n as f64;
    let upper = 1.0 - (n - 0.375) / (n + 0.25);
    let t = (-2.0 * upper.ln()).sqrt();
    let num = 2.515_517 + 0.802_853 * t + 0.010_328 * t * t;
    let den = 1.0 + 1.432_788 * t + 0.189_269 * t * t + 0.001_308 * t * t * t;
    t - num / den
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
    fn expected_max_of_binomials_exact_where_counts_are_small() {
        // 8 ranks, 2 picks each landing with p = 1/8 (Mixtral's 8 experts, top-2, one
        // token, one expert per rank): F(0) = (7/8)^2 = 0.765625, F(1) = 1 - 1/64 =
        // 0.984375; 1 - F(0)^8 = 1 - 0.118067 = 0.881933, 1 - F(1)^8 = 1 - 0.881626 =
        // 0.118374; sum 1.000307 (at most one of the two picks lands on any rank, in
        // fact: the approximation is 0.03% high)
        let m = expected_max_binomial(2, 1.0 / 8.0, 8);
        assert!((m - 1.000_307).abs() < 1e-5, "{m}");
        // DeepSeek-V3 over 8 ranks, one token: 8 picks, p = 32/256 = 1/8; F(0..=6) =
        // 0.343609, 0.736305, 0.932653, 0.988752, 0.998770, 0.999915, 0.999997;
        // 1 - F^8 = 0.999806, 0.913610, 0.427521, 0.086519, 0.009798, 0.000681,
        // 0.000027: sum 2.437962
        let m = expected_max_binomial(8, 1.0 / 8.0, 8);
        assert!((m - 2.437_96).abs() < 1e-4, "{m}");
        // no spread: one rank, p = 0 or 1
        assert_eq!(expected_max_binomial(8, 1.0 / 8.0, 1), 1.0);
        assert_eq!(expected_max_binomial(8, 0.0, 8), 0.0);
        assert_eq!(expected_max_binomial(32, 1.0, 8), 32.0);
        // every expert touched but for a 1e-6 chance: 32 · (1 - 1e-6) < max <= 32 (and
        // no underflow of (1e-6)^32 on the way)
        let m = expected_max_binomial(32, 1.0 - 1e-6, 8);
        assert!(m > 32.0 - 1e-4 && m <= 32.0, "{m}");
        // a billion picks at p = 1e-9 over 100,000 ranks (each count Poisson(1) to 1e-9):
        // the sum stops within 139 steps; P(X >= 9) = 1.1252e-6 and P(X >= 10) =
        // 1.114e-7, so the busiest of 100,000 reaches 9 in 10.6% of sets and 10 in 1.1%;
        // Σ_x 1 - F(x)^100000 = 7.75953
        let m = expected_max_binomial(1_000_000_000, 1e-9, 100_000);
        assert!((m - 7.759_53).abs() < 1e-3, "{m}");
    }

    #[test]
    fn expected_max_of_binomials_normal_where_counts_spread() {
        // 6400 picks, p = 1/8: mean 800, sd sqrt(800 · 7/8) = 26.4575; the expected
        // maximum of 8 standard normals is 1.4236 (Harter 1961, table 1), the skew
        // 0.75 / 26.4575 = 0.028347 adds (1.4236² - 1) · 0.028347 / 6 = 0.004851:
        // 800 + 26.4575 · 1.428451 = 837.793; 0.05% tolerance for Blom's approximation
        let m = expected_max_binomial(6400, 1.0 / 8.0, 8);
        assert!((m / 837.793 - 1.0).abs() < 5e-4, "{m}");
        // 3000 picks over 256 ranks (p = 1/256): mean 11.71875, sd 3.41657, skew
        // 0.29040; Blom's z for 256 is 2.8153 (exact 2.8269): 11.71875 + 3.41657 ·
        // (2.8153 + 6.92591 · 0.29040 / 6) = 22.483; the exact sum Σ 1 - F(x)^256 is
        // 22.459
        let m = expected_max_binomial(3000, 1.0 / 256.0, 256);
        assert!((m / 22.459 - 1.0).abs() < 3e-3, "{m}");
        // two ranks: 0.5642 (= 1/sqrt(pi)); 20000 picks at 1/2: 10000 + 70.7107 · 0.5642
        // = 10039.89
        let m = expected_max_binomial(20_000, 0.5, 2);
        assert!((m / 10_039.89 - 1.0).abs() < 5e-4, "{m}");
    }

    #[test]
    fn busiest_expert_parallel_rank() {
        // DeepSeek-V3, 256 experts top-8, one token over 8 ranks of 32 experts: the mean
        // rank runs 1 row and touches 8/8 = 1 expert; the busiest runs 2.43796 rows (the
        // binomial maximum above) and touches as many experts, one per row
        // (Binomial(32, 1/32)'s maximum of 8, 2.5445, is more than the rows)
        let l = expert_load(256, 8, 1, 8);
        assert_eq!((l.ranks, l.mean_rows, l.mean_touched), (8, 1.0, 1.0));
        assert!((l.rows - 2.437_96).abs() < 1e-4, "{}", l.rows);
        assert_eq!(l.touched, l.rows);
        // 16 tokens, 128 picks: 16 rows on the mean rank; each of a rank's 32 experts is
        // touched with p = 1 - (31/32)^16 = 0.398290, 12.7453 on the mean rank, sd
        // sqrt(32 · 0.39829 · 0.60171) = 2.7693 (an exact count: the busiest 16.712, 1.34
        // sd up); rows sd sqrt(128 / 8 · 7/8) = 3.7417, skew 0.75 / 3.7417 = 0.20045:
        // 16 + 3.7417 · (1.4236 + 1.02664 · 0.20045 / 6) = 21.455 (Blom's 1.4345 for
        // 1.4236: 21.500, 0.21% over)
        let l = expert_load(256, 8, 16, 8);
        assert!(
            (l.mean_touched - 12.7453).abs() < 1e-3,
            "{}",
            l.mean_touched
        );
        assert!((l.rows / 21.455 - 1.0).abs() < 2.5e-3, "{}", l.rows);
        assert!((l.touched - 16.7118).abs() < 1e-3, "{}", l.touched);
        // one rank: the mean
        let one = expert_load(256, 8, 64, 1);
        assert_eq!(
            (one.rows, one.touched),
            (512.0, expected_experts(256, 8, 64))
        );
        // 4096 tokens: 4096 rows on the mean rank, sd sqrt(32768 · 1/8 · 7/8) = 59.87;
        // 1.4236 sd more on the busiest (the skew adds 0.0021 sd): 1.021x; every expert
        // touched on every rank
        let big = expert_load(256, 8, 4096, 8);
        assert!((big.rows / (4096.0 + 59.867 * 1.4257) - 1.0).abs() < 5e-4);
        assert!((big.touched - 32.0).abs() < 1e-9 && big.mean_touched > 31.999);
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
