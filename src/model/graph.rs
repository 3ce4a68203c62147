//! The layer graph as data: `(model, step shape, formats, tensor-parallel degree)` ->
//! the operators of one forward pass with their per-device [`Cost`]s.
//!
//! One code path serves prefill and decode: a [`Step`] is `batch` sequences each adding
//! `new_tokens` tokens to a KV cache that then holds `context` tokens (prefill:
//! `new_tokens = context = prompt`; decode: `new_tokens = 1`, `context = L`).
//!
//! The graph is a fixed-capacity array (no heap allocation), so it can be rebuilt for
//! millions of configurations in a sweep.

use super::ModelConfig;
use crate::dtype::{ComputeDtype, Format};
use crate::ops::{
    self, AttentionShape, Collective, Cost, Operand, attention_fused, attention_scores,
    attention_values, collective, embedding, gated_activation, linear, norm, residual_add, rope,
    softmax,
};

crate::named_enum! {
    /// What an operator of the layer graph is. Training arithmetic and reports match on
    /// the kind, never on a name string; the name (`qkv_proj`) is what JSON shows.
    pub enum OpKind: "op kind" {
        /// Token-embedding lookup.
        Embedding = "embedding",
        /// Learned position-embedding lookup (GPT-2, MPT-style models without RoPE).
        PositionEmbedding = "position_embedding",
        /// Norm before attention.
        AttnNorm = "attn_norm",
        /// Fused q, k, v projection (K and V written to the cache).
        QkvProj = "qkv_proj",
        /// Rotary position embedding on q and k.
        Rope = "rope",
        /// Fused (flash) attention.
        Attention = "attention",
        /// Naive attention: scores `Q·Kᵀ`.
        AttnScores = "attn_scores",
        /// Naive attention: softmax over the scores.
        AttnSoftmax = "attn_softmax",
        /// Naive attention: probabilities times `V`.
        AttnValues = "attn_values",
        /// Attention output projection.
        OProj = "o_proj",
        /// Tensor-parallel all-reduce after attention.
        AllreduceAttn = "allreduce_attn",
        /// Residual add after attention.
        AttnResidual = "attn_residual",
        /// Norm before the MLP.
        MlpNorm = "mlp_norm",
        /// MoE router.
        Router = "router",
        /// Gated MLP: gate and up projections together.
        GateUpProj = "gate_up_proj",
        /// Plain MLP: up projection.
        UpProj = "up_proj",
        /// Gated MLP: activation times gate.
        ActMul = "act_mul",
        /// Plain MLP: activation.
        Activation = "activation",
        /// MLP down projection.
        DownProj = "down_proj",
        /// Tensor-parallel all-reduce after the MLP.
        AllreduceMlp = "allreduce_mlp",
        /// Residual add after the MLP.
        MlpResidual = "mlp_residual",
        /// Norm before the lm_head.
        FinalNorm = "final_norm",
        /// Output projection to the vocabulary.
        LmHead = "lm_head",
    }
}

impl OpKind {
    /// The attention core whose work grows with the context (fused, or the score and
    /// value matmuls of the naive form; the softmax is elementwise).
    pub fn is_attention_matmul(self) -> bool {
        matches!(
            self,
            OpKind::Attention | OpKind::AttnScores | OpKind::AttnValues
        )
    }

    /// Any part of the attention core, softmax included.
    pub fn is_attention_core(self) -> bool {
        self.is_attention_matmul() || self == OpKind::AttnSoftmax
    }

    /// An embedding lookup (token or position).
    pub fn is_embedding(self) -> bool {
        matches!(self, OpKind::Embedding | OpKind::PositionEmbedding)
    }

    /// A norm or residual add over the hidden width (split by sequence parallelism).
    pub fn is_norm_or_residual(self) -> bool {
        matches!(
            self,
            OpKind::AttnNorm
                | OpKind::MlpNorm
                | OpKind::AttnResidual
                | OpKind::MlpResidual
                | OpKind::FinalNorm
        )
    }

    /// Ops outside the layer stack (embedding lookups, the final norm, the lm_head).
    pub fn is_outside_layers(self) -> bool {
        self.is_embedding() || matches!(self, OpKind::FinalNorm | OpKind::LmHead)
    }
}

crate::named_enum! {
    /// The phase of inference a pass belongs to.
    pub enum Phase: "phase" {
        /// The prompt, all tokens at once (time to first token).
        Prefill = "prefill",
        /// One new token per sequence.
        Decode = "decode",
    }
}

/// Most operators one forward pass can have.
pub const MAX_OPS: usize = 24;

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
}

impl Step {
    /// Prefill of `prompt` tokens for `batch` sequences (logits for the last token only).
    pub fn prefill(batch: u64, prompt: u64) -> Step {
        Step {
            batch,
            new_tokens: prompt,
            context: prompt,
            logits_per_sequence: 1,
        }
    }

    /// One decode step at context `context` (the new token included).
    pub fn decode(batch: u64, context: u64) -> Step {
        Step {
            batch,
            new_tokens: 1,
            context,
            logits_per_sequence: 1,
        }
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
}

/// Whether an op runs on matrix units (tensor cores) or vector units.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Unit {
    /// Matrix math at the given dtype.
    Matrix(ComputeDtype),
    /// Elementwise / reduction math.
    Vector,
}

impl Unit {
    /// `bf16`, `fp8`, ... for matrix units, `vector` otherwise.
    pub fn name(self) -> &'static str {
        match self {
            Unit::Matrix(d) => d.name(),
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
}

impl OpInstance {
    /// Cost of all executions.
    pub fn total(&self) -> Cost {
        self.cost.times(self.count)
    }
}

/// The operators of one forward pass (fixed capacity, no allocation).
#[derive(Debug, Clone, Copy)]
pub struct Graph {
    ops: [OpInstance; MAX_OPS],
    len: usize,
}

const EMPTY: OpInstance = OpInstance {
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
};

impl Graph {
    fn push(&mut self, kind: OpKind, count: f64, cost: Cost, unit: Unit) {
        if self.len < MAX_OPS {
            self.ops[self.len] = OpInstance {
                kind,
                count,
                cost,
                unit,
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

fn ceil_div(a: u64, b: u64) -> u64 {
    a.div_ceil(b.max(1))
}

/// Shapes and formats shared by the ops of one forward pass on one device.
struct Pass<'c> {
    cfg: &'c ModelConfig,
    step: &'c Step,
    tp: u64,
    /// Tokens processed in this pass: batch x new tokens.
    tokens: u64,
    /// Executions of per-layer ops (layers on this device).
    layers: f64,
    act_bits: f64,
    w_bits: f64,
    kv_bits: f64,
    /// Bits of the embedding table and lm_head (16 where the format keeps them so).
    emb_bits: f64,
    /// Where the weight matmuls run.
    matmul: Unit,
    /// Query heads and KV heads on this device.
    heads: u64,
    kv_heads: u64,
    act: Operand,
}

impl Pass<'_> {
    fn q_width(&self) -> u64 {
        self.heads * self.cfg.head_dim
    }

    fn kv_width(&self) -> u64 {
        self.kv_heads * self.cfg.head_dim
    }

    /// A tensor-parallel all-reduce of the hidden states (none on one device).
    fn allreduce(&self, g: &mut Graph, kind: OpKind) {
        if self.tp > 1 {
            let elements = self.tokens as f64 * self.cfg.hidden as f64;
            let cost = collective(Collective::AllReduce, self.tp, elements, self.act_bits);
            g.push(kind, self.layers, cost, Unit::Vector);
        }
    }

    fn norm(&self, g: &mut Graph, kind: OpKind, count: f64, rows: u64) {
        let cost = norm(self.cfg.norm, rows, self.cfg.hidden, self.act_bits, 16.0);
        g.push(kind, count, cost, Unit::Vector);
    }

    /// Token (and learned position) embedding lookups.
    fn embeddings(&self, g: &mut Graph) {
        let (cfg, h) = (self.cfg, self.cfg.hidden);
        let cost = embedding(self.tokens, h, cfg.vocab, self.emb_bits, self.act_bits);
        g.push(OpKind::Embedding, 1.0, cost, Unit::Vector);
        if cfg.learned_positions {
            let cost = embedding(self.tokens, h, cfg.max_context, 16.0, self.act_bits);
            g.push(OpKind::PositionEmbedding, 1.0, cost, Unit::Vector);
        }
    }

    /// Norm, fused q/k/v projection (K and V written straight into the cache), RoPE,
    /// the attention core, output projection, all-reduce and residual.
    fn attention_block(&self, g: &mut Graph, flash: bool, attn_unit: Unit) {
        let (cfg, l, h, t) = (self.cfg, self.layers, self.cfg.hidden, self.tokens);
        self.norm(g, OpKind::AttnNorm, l, t);
        let mut qkv = linear(
            t,
            h,
            self.q_width(),
            self.w_bits,
            self.act_bits,
            self.act,
            cfg.qkv_bias,
        );
        let kv_out = Operand::kv(self.kv_bits);
        let kv = linear(
            t,
            h,
            2 * self.kv_width(),
            self.w_bits,
            self.act_bits,
            kv_out,
            cfg.qkv_bias,
        );
        qkv.flops += kv.flops;
        qkv.read.weights += kv.read.weights;
        qkv.written = qkv.written + kv.written;
        g.push(OpKind::QkvProj, l, qkv, self.matmul);
        if cfg.rope {
            let cost = rope(t, self.heads, self.kv_heads, cfg.head_dim, self.act_bits);
            g.push(OpKind::Rope, l, cost, Unit::Vector);
        }
        let shape = AttentionShape {
            batch: self.step.batch,
            q_len: self.step.new_tokens,
            kv_len: self.step.context.max(self.step.new_tokens),
            heads: self.heads,
            kv_heads: self.kv_heads,
            head_dim: cfg.head_dim,
            act_bits: self.act_bits,
            kv_bits: self.kv_bits,
        };
        if flash {
            g.push(OpKind::Attention, l, attention_fused(&shape), attn_unit);
        } else {
            let (rows, cols) = shape.score_matrix();
            g.push(OpKind::AttnScores, l, attention_scores(&shape), attn_unit);
            let cost = softmax(rows, cols, self.act_bits);
            g.push(OpKind::AttnSoftmax, l, cost, Unit::Vector);
            g.push(OpKind::AttnValues, l, attention_values(&shape), attn_unit);
        }
        let o = linear(
            t,
            self.q_width(),
            h,
            self.w_bits,
            self.act_bits,
            self.act,
            cfg.o_bias,
        );
        g.push(OpKind::OProj, l, o, self.matmul);
        self.allreduce(g, OpKind::AllreduceAttn);
        g.push(
            OpKind::AttnResidual,
            l,
            residual_add(t, h, self.act_bits),
            Unit::Vector,
        );
    }

    /// Norm, then a dense MLP or an MoE (router + the experts the tokens touch), the
    /// all-reduce and the residual.
    fn mlp_block(&self, g: &mut Graph) {
        let (cfg, l, h, t) = (self.cfg, self.layers, self.cfg.hidden, self.tokens);
        self.norm(g, OpKind::MlpNorm, l, t);
        let inter = ceil_div(cfg.intermediate, self.tp);
        let routed = t.saturating_mul(cfg.experts_per_token);
        let up_width = if cfg.gated_mlp { 2 * inter } else { inter };
        let (w, a) = (self.w_bits, self.act_bits);
        let mut up = linear(routed, h, up_width, w, a, self.act, cfg.mlp_bias);
        let mut down = linear(routed, inter, h, w, a, self.act, cfg.mlp_bias);
        if cfg.is_moe() {
            let router = linear(t, h, cfg.experts, 16.0, a, self.act, false);
            g.push(OpKind::Router, l, router, self.matmul);
            let touched = expected_experts(cfg.experts, cfg.experts_per_token, t);
            up.read.weights *= touched;
            down.read.weights *= touched;
        }
        let (up_kind, act_kind, act_op) = if cfg.gated_mlp {
            let cost = gated_activation(cfg.activation, routed, inter, a);
            (OpKind::GateUpProj, OpKind::ActMul, cost)
        } else {
            let cost = ops::activation(cfg.activation, routed, inter, a);
            (OpKind::UpProj, OpKind::Activation, cost)
        };
        g.push(up_kind, l, up, self.matmul);
        g.push(act_kind, l, act_op, Unit::Vector);
        g.push(OpKind::DownProj, l, down, self.matmul);
        self.allreduce(g, OpKind::AllreduceMlp);
        g.push(OpKind::MlpResidual, l, residual_add(t, h, a), Unit::Vector);
    }

    /// Final norm and the lm_head (split over the vocabulary) on the rows that need
    /// logits.
    fn head(&self, g: &mut Graph, p: &Precision) {
        let step = self.step;
        let rows = step
            .batch
            .saturating_mul(step.logits_per_sequence.min(step.new_tokens));
        self.norm(g, OpKind::FinalNorm, 1.0, rows);
        let vocab = ceil_div(self.cfg.vocab, self.tp);
        let cost = linear(
            rows,
            self.cfg.hidden,
            vocab,
            self.emb_bits,
            self.act_bits,
            self.act,
            false,
        );
        let unit = Unit::Matrix(if p.weights.keeps_embeddings_16bit() {
            p.activations
        } else {
            matmul_dtype(self.matmul)
        });
        g.push(OpKind::LmHead, 1.0, cost, unit);
    }
}

/// Builds the forward-pass graph for one device of a `tp`-way tensor-parallel group
/// (`tp = 1`: a single device). With `flash` the attention is one fused op; without,
/// it is scores + softmax + values with the score matrix in memory.
///
/// Tensor parallelism (Megatron): q/k/v, gate/up are split by columns, o/down by rows,
/// heads and the MLP width divide by `tp` (KV heads are replicated when fewer than
/// `tp`), the lm_head is split over the vocabulary, and each layer ends its attention
/// and its MLP with an all-reduce of `tokens × hidden` activations.
///
/// Layers whose weights a format keeps in 16-bit (see [`Format`]) are costed so.
pub fn forward(
    cfg: &ModelConfig,
    step: &Step,
    p: &Precision,
    tp: u64,
    flash: bool,
    layers: u64,
) -> Graph {
    let mut g = Graph {
        ops: [EMPTY; MAX_OPS],
        len: 0,
    };
    let tp = tp.max(1);
    let tokens = step.batch.saturating_mul(step.new_tokens);
    if tokens == 0 {
        return g;
    }
    let act_bits = p.activations.bytes() * 8.0;
    let w_bits = p.weights.bits();
    let pass = Pass {
        cfg,
        step,
        tp,
        tokens,
        layers: layers as f64,
        act_bits,
        w_bits,
        kv_bits: p.kv.bits(),
        emb_bits: if p.weights.keeps_embeddings_16bit() {
            16.0
        } else {
            w_bits
        },
        matmul: Unit::Matrix(p.weights.compute_dtype(p.activations)),
        heads: ceil_div(cfg.heads, tp),
        kv_heads: ceil_div(cfg.kv_heads, tp),
        act: Operand::activations(act_bits),
    };
    pass.embeddings(&mut g);
    pass.attention_block(&mut g, flash, Unit::Matrix(p.activations));
    pass.mlp_block(&mut g);
    pass.head(&mut g, p);
    g
}

fn matmul_dtype(u: Unit) -> ComputeDtype {
    match u {
        Unit::Matrix(d) => d,
        Unit::Vector => ComputeDtype::Fp32,
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::model::ModelDb;

    fn bf16() -> Precision {
        Precision {
            weights: Format::Fp16,
            kv: Format::Fp16,
            activations: ComputeDtype::Fp16,
        }
    }

    #[test]
    fn decode_weight_bytes_equal_params_times_two() {
        // Llama-2-7B fp16 batch 1: every weight except the unused embedding rows is
        // read once per token: (6,738,415,616 - 131,072,000 + 4096) · 2 bytes, plus
        // one embedding row (4096 · 2).
        let m = ModelDb::builtin().unwrap().resolve("llama-2-7b").unwrap();
        let g = forward(&m, &Step::decode(1, 1), &bf16(), 1, true, m.layers);
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
        let g = forward(&m, &Step::decode(1, 1), &bf16(), 1, true, m.layers);
        let w = g.total().read.weights;
        let expect = (12_879_925_248.0 - 131_072_000.0) * 2.0 + 8192.0;
        assert!((w / expect - 1.0).abs() < 1e-9, "{w} vs {expect}");
    }

    #[test]
    fn tensor_parallel_splits_and_adds_allreduce() {
        let m = ModelDb::builtin().unwrap().resolve("llama-2-70b").unwrap();
        let one = forward(&m, &Step::decode(1, 100), &bf16(), 1, true, m.layers).total();
        let four = forward(&m, &Step::decode(1, 100), &bf16(), 4, true, m.layers).total();
        assert!((one.read.weights / four.read.weights - 4.0).abs() < 0.05);
        // two all-reduces of 8192 fp16 per layer, ring factor 2·3/4: 80·2·1.5·16384 bytes
        assert_eq!(four.link_bytes, 80.0 * 2.0 * 1.5 * 16384.0);
    }

    #[test]
    fn no_allocation_graph_fits_every_model() {
        for m in ModelDb::builtin().unwrap().models() {
            let g = forward(m, &Step::prefill(1, 16), &bf16(), 2, false, m.layers);
            assert!(g.ops().len() < MAX_OPS, "{}", m.id);
        }
    }
}
