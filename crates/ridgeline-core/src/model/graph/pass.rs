//! The ops of one forward pass, layer kind by layer kind: softmax, latent and linear
//! attention, state-space blocks, dense and mixture-of-experts feed-forwards, embeddings
//! and the head.

use super::{
    EMPTY, Graph, MAX_OPS, OpKind, Precision, Shard, Step, Tags, Unit, ceil_div, expected_experts,
    expert_load, matmul_dtype,
};
use crate::dtype::ComputeDtype;
use crate::model::{Ffn, LayerKind, LinearDims, Mixer, MlaDims, ModelConfig};
use crate::ops::{
    self, AttentionShape, Collective, Cost, Operand, attention_fused, attention_scores,
    attention_values, causal_conv1d, collective, embedding, gated_activation, gemm, linear,
    moe_all_to_all, norm, residual_add, rope, softmax,
};

mod ssm;

/// Bits per element of an fp8 expert dispatch: the fp8 value and one fp32 scale per
/// 128 elements (the 1 x 128 activation tiles of DeepSeek-V3's fine-grained
/// quantization, arXiv 2412.19437 section 3.3.2): 8 + 32/128.
pub(crate) const FP8_DISPATCH_BITS: f64 = 8.0 + 32.0 / 128.0;

/// Shapes and formats shared by the ops of one forward pass on one device.
struct Pass<'c> {
    cfg: &'c ModelConfig,
    step: &'c Step,
    p: &'c Precision,
    tp: u64,
    /// Expert-parallel groups.
    ep: u64,
    /// The device is the busiest expert-parallel rank ([`Shard::busiest`]).
    busiest: bool,
    /// [`Shard::imbalance`].
    imbalance: f64,
    /// [`Shard::pair_reads_below`].
    pair_reads_below: u64,
    /// Tokens processed in this pass on this device: batch x new tokens (the group's
    /// share of the batch under expert parallelism).
    tokens: u64,
    /// Tokens of the whole pass, every expert-parallel group's together (`tokens` without
    /// expert parallelism): what the routed experts receive.
    all_tokens: u64,
    act_bits: f64,
    w_bits: f64,
    kv_bits: f64,
    /// Bits of the embedding table and lm_head (16 where the format keeps them so).
    emb_bits: f64,
    /// Where the weight matmuls run.
    matmul: Unit,
    /// Where the attention core runs (activation dtype).
    attn_unit: Unit,
    /// Query heads and KV heads on this device.
    heads: u64,
    kv_heads: u64,
    act: Operand,
    flash: bool,
}

impl Pass<'_> {
    fn q_width(&self) -> u64 {
        self.heads * self.cfg.head_dim
    }

    fn kv_width(&self) -> u64 {
        self.kv_heads * self.cfg.head_dim
    }

    /// A tensor-parallel all-reduce of the hidden states (none on one device).
    fn allreduce(&self, g: &mut Graph, kind: OpKind, count: f64) {
        if self.tp > 1 {
            let elements = self.tokens as f64 * self.cfg.hidden as f64;
            let cost = collective(Collective::AllReduce, self.tp, elements, self.act_bits);
            g.push(kind, count, cost, Unit::Vector);
        }
    }

    fn norm(&self, g: &mut Graph, kind: OpKind, count: f64, rows: u64, width: u64) {
        let cost = norm(self.cfg.norm, rows, width, self.act_bits, 16.0);
        g.push(kind, count, cost, Unit::Vector);
    }

    /// A linear layer over this pass's tokens reading activations.
    fn linear(&self, d_in: u64, d_out: u64, w_bits: f64, out: Operand, bias: bool) -> Cost {
        linear(self.tokens, d_in, d_out, w_bits, self.act_bits, out, bias)
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

    /// The norm before a layer's mixer, or after it the all-reduce and residual (with
    /// Gemma's second norm when the model has four norms per layer).
    fn around_mixer(&self, g: &mut Graph, l: f64, before: bool) {
        let (h, t) = (self.cfg.hidden, self.tokens);
        if before {
            self.norm(g, OpKind::AttnNorm, l, t, h);
        } else {
            if self.cfg.norms_per_layer == 4 {
                self.norm(g, OpKind::AttnNorm, l, t, h);
            }
            self.allreduce(g, OpKind::AllreduceAttn, l);
            let cost = residual_add(t, h, self.act_bits);
            g.push(OpKind::AttnResidual, l, cost, Unit::Vector);
        }
    }

    /// Softmax attention: fused q, k, v projection (K and V written straight into the
    /// cache), q/k norms, RoPE, the attention core (over the window, if the layer has
    /// one), output projection.
    fn attention(&self, g: &mut Graph, kind: &LayerKind, l: f64) {
        let (cfg, h, t) = (self.cfg, self.cfg.hidden, self.tokens);
        let q_out = if cfg.attention_gate {
            2 * self.q_width()
        } else {
            self.q_width()
        };
        let mut qkv = self.linear(h, q_out, self.w_bits, self.act, cfg.qkv_bias);
        let kv_out = Operand::kv(self.kv_bits);
        let kv = self.linear(h, 2 * self.kv_width(), self.w_bits, kv_out, cfg.qkv_bias);
        qkv.flops += kv.flops;
        qkv.read.weights += kv.read.weights;
        qkv.written = qkv.written + kv.written;
        g.push(OpKind::QkvProj, l, qkv, self.matmul);
        if cfg.qk_norm {
            let rows = t.saturating_mul(self.heads + self.kv_heads);
            self.norm(g, OpKind::QkNorm, l, rows, cfg.head_dim);
        }
        if kind.rope {
            let cost = rope(t, self.heads, self.kv_heads, cfg.head_dim, self.act_bits);
            g.push(OpKind::Rope, l, cost, Unit::Vector);
        }
        let shape = AttentionShape {
            window: kind.window,
            chunked: kind.chunked,
            ..AttentionShape::gqa(
                self.step.batch,
                self.step.new_tokens,
                self.step.context.max(self.step.new_tokens),
                self.heads,
                self.kv_heads,
                cfg.head_dim,
                self.act_bits,
                self.kv_bits,
            )
        };
        let core = if kind.window.is_some() {
            OpKind::WindowAttention
        } else {
            OpKind::Attention
        };
        // a cache grown by concatenation is copied into a new tensor each decode step:
        // read and written once more (with the first attention op)
        let concat = |mut cost: ops::Cost| {
            if self.p.kernels.kv_concat && self.step.context > self.step.new_tokens {
                cost.read.kv += shape.kv_bytes();
                cost.written.kv += shape.kv_bytes();
            }
            cost
        };
        if self.flash {
            g.push(core, l, concat(attention_fused(&shape)), self.attn_unit);
        } else {
            let shape = if self.p.kernels.fp32_scores {
                AttentionShape {
                    act_bits: 32.0,
                    ..shape
                }
            } else {
                shape
            };
            let (rows, cols) = shape.score_matrix();
            let soft = softmax(rows, cols, shape.act_bits);
            g.push(
                OpKind::AttnScores,
                l,
                concat(attention_scores(&shape)),
                self.attn_unit,
            );
            g.push(OpKind::AttnSoftmax, l, soft, Unit::Vector);
            g.push(
                OpKind::AttnValues,
                l,
                attention_values(&shape),
                self.attn_unit,
            );
        }
        let o = self.linear(self.q_width(), h, self.w_bits, self.act, cfg.o_bias);
        g.push(OpKind::OProj, l, o, self.matmul);
    }

    /// Multi-head latent attention (DeepSeek-V2/V3). The projections compressing the
    /// query and the key/value latent (`q_a`, `kv_a`) are replicated across
    /// tensor-parallel ranks, the per-head ones (`q_b`, `kv_b`, `o`) split, and every
    /// rank caches the whole latent (`kv_lora_rank + qk_rope_head_dim` per token and
    /// layer).
    ///
    /// Prefill runs the **expanded** form: `kv_b` turns each token's latent into
    /// per-head keys (`qk_nope`, plus the shared rotary key) and values (`v`), and
    /// attention runs over them as activations: FLOPs `2·H·(d_qk + d_v)` per pair.
    /// Decode steps and speculative verification passes (`Step::decode`) run the
    /// **weight-absorbed** form: each query's `qk_nope` part is mapped into the latent
    /// space by `W_UK` (`2·H·d_nope·r_kv` FLOPs per token; those `kv_b` weights read once
    /// per pass for all its tokens, like any linear layer's), attention runs over the
    /// cached latents as one shared key of `r_kv + d_rope` and value of `r_kv`
    /// (`2·H·(2·r_kv + d_rope)` FLOPs per pair, the cache read once for all heads), and
    /// `W_UV` maps the output back (`2·H·r_kv·d_v`, its weights also read once).
    fn mla(&self, g: &mut Graph, kind: &LayerKind, l: f64, m: &MlaDims) {
        let (h, heads, w, act) = (self.cfg.hidden, self.heads, self.w_bits, self.act);
        let qk = m.qk_head_dim();
        let q = match m.q_lora_rank {
            Some(r) => self.linear(h, r, w, act, false) + self.linear(r, heads * qk, w, act, false),
            None => self.linear(h, heads * qk, w, act, false),
        };
        g.push(OpKind::MlaQProj, l, q, self.matmul);
        let kv_a = self.linear(h, m.cache_elems(), w, Operand::kv(self.kv_bits), false);
        g.push(OpKind::MlaKvAProj, l, kv_a, self.matmul);
        let base = AttentionShape {
            window: kind.window,
            chunked: kind.chunked,
            ..AttentionShape::gqa(
                self.step.batch,
                self.step.new_tokens,
                self.step.context.max(self.step.new_tokens),
                heads,
                1,
                m.cache_elems(),
                self.act_bits,
                self.kv_bits,
            )
        };
        let t = self.tokens;
        // one [t, d_in] x [d_in, d_out] matmul per head: the head's weights read once
        let per_head = |d_in: u64, d_out: u64| {
            gemm(1, t, d_out, d_in, act, Operand::weights(w), act).times(heads as f64)
        };
        let expanded = !self.step.decode;
        let shape = if expanded {
            let width = heads * (m.qk_nope_head_dim + m.v_head_dim);
            let expand = self.linear(m.kv_lora_rank, width, w, act, false);
            g.push(OpKind::MlaKvBProj, l, expand, self.matmul);
            AttentionShape {
                kv_heads: heads,
                head_dim: qk,
                v_dim: m.v_head_dim,
                kv_elems_per_token: (heads * (qk + m.v_head_dim)) as f64,
                kv_from_cache: false,
                ..base
            }
        } else {
            let absorb = per_head(m.qk_nope_head_dim, m.kv_lora_rank);
            g.push(OpKind::MlaQAbsorb, l, absorb, self.matmul);
            AttentionShape {
                v_dim: m.kv_lora_rank,
                kv_elems_per_token: m.cache_elems() as f64,
                ..base
            }
        };
        g.push(
            OpKind::MlaAttention,
            l,
            attention_fused(&shape),
            self.attn_unit,
        );
        if !expanded {
            let back = per_head(m.kv_lora_rank, m.v_head_dim);
            g.push(OpKind::MlaVAbsorb, l, back, self.matmul);
        }
        let o = self.linear(heads * m.v_head_dim, h, w, act, false);
        g.push(OpKind::OProj, l, o, self.matmul);
    }

    /// Linear attention (Gated DeltaNet, Qwen3-Next): a fixed-size recurrent state per
    /// sequence instead of a KV cache. Heads split across tensor-parallel ranks.
    ///
    /// Counting rule, per token and value head with key dim `d_k`, value dim `d_v`: the
    /// gated delta rule reads out `S·q`, corrects `S` by the outer product of `k` and
    /// the prediction error, and decays it, `6·d_k·d_v` FLOPs; a prefill runs it in
    /// chunks of 64 tokens whose intra-chunk products add `2·64·(d_k + d_v)`. The state
    /// (`d_k·d_v` per value head, fp32) is read and written once per sequence per pass,
    /// as is the convolution's window of the last `kernel - 1` inputs.
    fn linear_attention(&self, g: &mut Graph, l: f64, d: &LinearDims) {
        let (h, t, b) = (self.cfg.hidden, self.tokens, self.step.batch as f64);
        let (nk, nv) = (
            ceil_div(d.key_heads, self.tp),
            ceil_div(d.value_heads, self.tp),
        );
        let channels = 2 * nk * d.key_dim + nv * d.value_dim;
        let width = channels + nv * d.value_dim + 2 * nv;
        let in_proj = self.linear(h, width, self.w_bits, self.act, false);
        g.push(OpKind::LinearInProj, l, in_proj, self.matmul);
        let conv = causal_conv1d(
            self.step.batch,
            t,
            channels,
            d.conv_kernel,
            false,
            self.act_bits,
        );
        g.push(OpKind::ShortConv, l, conv, Unit::Vector);
        let (tokens, c, act_bytes) = (t as f64, channels as f64, self.act_bits / 8.0);
        let (dk, dv, heads) = (d.key_dim as f64, d.value_dim as f64, nv as f64);
        let chunk = self.step.new_tokens.min(64) as f64;
        let intra = if chunk > 1.0 {
            2.0 * chunk * (dk + dv)
        } else {
            0.0
        };
        let state = b * heads * dk * dv * 4.0;
        let rule = Cost {
            flops: tokens * heads * (6.0 * dk * dv + intra),
            read: ops::ByteClasses {
                activations: tokens * c * act_bytes,
                kv: state,
                weights: 0.0,
            },
            written: ops::ByteClasses {
                activations: tokens * heads * dv * act_bytes,
                kv: state,
                weights: 0.0,
            },
            link_bytes: 0.0,
        };
        g.push(OpKind::DeltaRule, l, rule, self.attn_unit);
        self.norm(g, OpKind::LinearNorm, l, t.saturating_mul(nv), d.value_dim);
        let o = self.linear(nv * d.value_dim, h, self.w_bits, self.act, false);
        g.push(OpKind::OProj, l, o, self.matmul);
    }

    /// Norm, then the dense MLP or a mixture of experts (router, the routed experts the
    /// tokens touch, shared experts), the all-reduce and the residual (Gemma: a second
    /// norm after the MLP).
    fn ffn(&self, g: &mut Graph, moe: bool, l: f64) {
        let (cfg, h, t) = (self.cfg, self.cfg.hidden, self.tokens);
        self.norm(g, OpKind::MlpNorm, l, t, h);
        let (routed, width, w_bits, unit) = if moe {
            let router = self.linear(h, cfg.experts, 16.0, self.act, cfg.mlp_bias);
            g.push(OpKind::Router, l, router, self.matmul);
            let unit = self.p.unit(self.p.experts);
            // every group's routed rows; this device's share of them is 1/ep (below)
            let routed = self.all_tokens.saturating_mul(cfg.experts_per_token);
            (routed, cfg.expert_intermediate, self.p.experts.bits(), unit)
        } else {
            (t, cfg.intermediate, self.w_bits, self.matmul)
        };
        let inter = ceil_div(width, self.tp);
        let up_width = if cfg.gated_mlp { 2 * inter } else { inter };
        let (a, bias) = (self.act_bits, cfg.mlp_bias);
        let mut up = linear(routed, h, up_width, w_bits, a, self.act, bias);
        let mut down = linear(routed, inter, h, w_bits, a, self.act, bias);
        // the device's share of the routed rows (the mean rank's 1/ep of every group's,
        // or the busiest rank's) and the routed experts it holds that they touch
        let (e, k) = (cfg.experts, cfg.experts_per_token);
        let (share, touched, load) = match (moe, self.busiest && self.ep > 1) {
            (true, true) => {
                let load =
                    expert_load(e, k, self.all_tokens, self.ep).with_imbalance(self.imbalance);
                let ratio = load.rows_ratio();
                (ratio / self.ep as f64, load.touched, ratio)
            }
            (true, false) => {
                let share = 1.0 / self.ep as f64;
                (share, expected_experts(e, k, self.all_tokens) * share, 1.0)
            }
            (false, _) => (1.0, 0.0, 1.0),
        };
        // below `pair_reads_below` tokens the kernels read an expert once per row
        // (token-expert pair) it serves: the device's share of the routed rows
        let reads = if self.all_tokens < self.pair_reads_below {
            routed as f64 * share
        } else {
            touched
        };
        if moe {
            for c in [&mut up, &mut down] {
                let weights = c.read.weights;
                *c = c.times(share);
                c.read.weights = weights * reads;
            }
        }
        let (up_kind, act_kind, act_op) = if cfg.gated_mlp {
            let cost = gated_activation(cfg.activation, routed, inter, a).times(share);
            (OpKind::GateUpProj, OpKind::ActMul, cost)
        } else {
            let cost = ops::activation(cfg.activation, routed, inter, a).times(share);
            (OpKind::UpProj, OpKind::Activation, cost)
        };
        // the busiest rank receives its rows' copies: `load` times the mean's traffic
        let all_to_all = |bits: f64| {
            let k = cfg.experts_per_token;
            let share = t as f64 / self.tp as f64;
            moe_all_to_all(self.ep, share, k, h as f64, bits).times(load)
        };
        // experts whose matmuls run in fp8 take their input quantized before the
        // dispatch, which then moves fp8 with its block scales; the combine returns the
        // experts' outputs at the activation width (DeepSeek-V3, arXiv 2412.19437
        // section 3.3.2; DeepEP's fp8 dispatch, used by SGLang, TensorRT-LLM and vLLM)
        let dispatch_bits = if unit == Unit::Matrix(ComputeDtype::Fp8) {
            FP8_DISPATCH_BITS.min(a)
        } else {
            a
        };
        // a prompt pass dispatches with the high-throughput kernels, a decode pass with
        // the low-latency ones ([`super::OpInstance::forwarded`])
        let a2a = Tags {
            forwarded: !self.step.decode,
            routed: true,
        };
        let expert = Tags {
            forwarded: false,
            routed: moe,
        };
        if moe && self.ep > 1 {
            let c = all_to_all(dispatch_bits);
            g.push_op(OpKind::MoeDispatch, l, c, Unit::Vector, a2a);
        }
        g.push_op(up_kind, l, up, unit, expert);
        g.push_op(act_kind, l, act_op, Unit::Vector, expert);
        g.push_op(OpKind::DownProj, l, down, unit, expert);
        if moe && self.ep > 1 {
            g.push_op(OpKind::MoeCombine, l, all_to_all(a), Unit::Vector, a2a);
        }
        if moe && cfg.shared_experts > 0 {
            let si = ceil_div(cfg.shared_intermediate, self.tp);
            let (up, act) = if cfg.gated_mlp {
                (2 * si, gated_activation(cfg.activation, t, si, a))
            } else {
                (si, ops::activation(cfg.activation, t, si, a))
            };
            let shared = self.linear(h, up, self.w_bits, self.act, false)
                + act
                + self.linear(si, h, self.w_bits, self.act, false);
            g.push(OpKind::SharedExperts, l, shared, self.matmul);
        }
        if cfg.norms_per_layer == 4 {
            self.norm(g, OpKind::MlpNorm, l, t, h);
        }
        self.allreduce(g, OpKind::AllreduceMlp, l);
        g.push(OpKind::MlpResidual, l, residual_add(t, h, a), Unit::Vector);
    }

    /// One layer kind, `l` times: its mixer (with the norm before it, the all-reduce and
    /// the residual after it) and its feed-forward, each where the layer has one
    /// (Nemotron-H's layers are a single Mamba-2, attention or MLP block).
    fn layer(&self, g: &mut Graph, kind: &LayerKind, l: f64) {
        if kind.mixer != Mixer::None {
            self.around_mixer(g, l, true);
            match (kind.mixer, self.cfg.mla, self.cfg.linear, self.cfg.ssm) {
                (Mixer::Mla, Some(m), _, _) => self.mla(g, kind, l, &m),
                (Mixer::Linear, _, Some(d), _) => self.linear_attention(g, l, &d),
                (Mixer::Ssm, _, _, Some(d)) => self.ssm(g, l, &d),
                (Mixer::Mamba1, ..) if self.cfg.mamba.is_some() => self.mamba1(g, l),
                _ => self.attention(g, kind, l),
            }
            self.around_mixer(g, l, false);
        }
        if kind.ffn != Ffn::None {
            self.ffn(g, kind.is_moe(), l);
        }
    }

    /// Final norm and the lm_head (split over the vocabulary) on the rows that need
    /// logits; none without such rows (a prefill chunk before the last).
    fn head(&self, g: &mut Graph) {
        let (step, p, h) = (self.step, self.p, self.cfg.hidden);
        let rows = step
            .batch
            .saturating_mul(step.logits_per_sequence.min(step.new_tokens));
        if rows == 0 {
            return;
        }
        self.norm(g, OpKind::FinalNorm, 1.0, rows, h);
        let vocab = ceil_div(self.cfg.vocab, self.tp);
        let cost = linear(
            rows,
            h,
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

/// The graph of one run of a speculative-decoding draft head on one device: a
/// multi-token-prediction module (DeepSeek-V3's MTP, `num_nextn_predict_layers`) or an
/// EAGLE-style head, each one layer deep. Counted as: the embedding lookup of the last
/// token, two norms and a `2·hidden → hidden` projection joining it with the model's
/// last hidden state ([`OpKind::DraftProj`]), one layer of the model's last layer kind,
/// and the model's final norm and lm_head (shared with the model).
pub fn draft_head(
    cfg: &ModelConfig,
    step: &Step,
    p: &Precision,
    shard: &Shard,
    flash: bool,
) -> Graph {
    build(cfg, step, p, shard, flash, |pass, g| {
        let (h, t) = (pass.cfg.hidden, pass.tokens);
        let join = norm(cfg.norm, t, 2 * h, pass.act_bits, 16.0)
            + pass.linear(2 * h, h, pass.w_bits, pass.act, false);
        g.push(OpKind::DraftProj, 1.0, join, pass.matmul);
        if let Some(&last) = cfg.layer_kinds.last() {
            pass.layer(g, &cfg.kinds[last as usize], 1.0);
        }
    })
}

/// Builds the forward-pass graph for one device of a `shard.tp`-way tensor-parallel
/// group (`tp = 1`: a single device) holding `shard.layers` layers (all of the model's,
/// or the first `layers` of them for a pipeline stage), each layer kind's ops once with
/// its layer count. With `flash` softmax attention is one fused op; without, it is
/// scores + softmax + values with the score matrix in memory.
///
/// Expert parallelism (`shard.ep > 1`, see [`Shard`]): the device runs its group's
/// `ceil(batch / ep)` sequences through attention and the dense parts; in each MoE
/// layer a dispatch all-to-all sends every token to the groups holding its experts
/// ([`crate::ops::moe_all_to_all`], split over the group's `tp` ranks), the device runs
/// its experts on the `T · k / ep` rows that arrive, `T` the pass's tokens over all
/// groups (balanced routing: a batch of 9 on 8 groups routes 9 tokens, not 8 · 2),
/// reading the weights of the experts those tokens touch (`expected_experts(E, k, T) /
/// ep`), and a combine all-to-all returns the results. On the busiest rank
/// ([`Shard::busiest`]) the rows, the touched experts and the all-to-all traffic are
/// that rank's ([`super::expert_load`]) instead of the mean's.
///
/// Tensor parallelism (Megatron): q/k/v, gate/up are split by columns, o/down by rows,
/// heads and the MLP width divide by `tp` (KV heads are replicated when fewer than
/// `tp`), the lm_head is split over the vocabulary, and each layer ends its mixer and
/// its MLP with an all-reduce of `tokens × hidden` activations.
///
/// Layers whose weights a format keeps in 16-bit (see [`crate::dtype::Format`]) are costed so.
pub fn forward(cfg: &ModelConfig, step: &Step, p: &Precision, shard: &Shard, flash: bool) -> Graph {
    let n = (shard.layers as usize).min(cfg.layer_kinds.len());
    forward_layers(cfg, step, p, shard, flash, 0..n)
}

/// [`forward`] over the layers `range` of the model (a pipeline stage other than the
/// first: a training step's last stage), with the embeddings and the head; `shard.layers`
/// is not used.
pub fn forward_layers(
    cfg: &ModelConfig,
    step: &Step,
    p: &Precision,
    shard: &Shard,
    flash: bool,
    range: std::ops::Range<usize>,
) -> Graph {
    let n = cfg.layer_kinds.len();
    let range = range.start.min(n)..range.end.min(n);
    build(cfg, step, p, shard, flash, |pass, g| {
        for (kind, count) in cfg.kinds_in(range) {
            pass.layer(g, &kind, count as f64);
        }
    })
}

/// The embeddings, `layers` (which adds the layer ops) and the head of one pass on one
/// device (see [`forward`] for the expert-parallel share of the batch).
fn build(
    cfg: &ModelConfig,
    step: &Step,
    p: &Precision,
    shard: &Shard,
    flash: bool,
    layers: impl FnOnce(&Pass<'_>, &mut Graph),
) -> Graph {
    let mut g = Graph {
        ops: [EMPTY; MAX_OPS],
        len: 0,
    };
    let (tp, ep) = (shard.tp.max(1), shard.ep.max(1));
    let all_tokens = step
        .all_tokens
        .unwrap_or_else(|| step.batch.saturating_mul(step.new_tokens));
    let local = Step {
        batch: step.batch.div_ceil(ep),
        ..*step
    };
    let step = &local;
    let tokens = step.batch.saturating_mul(step.new_tokens);
    if tokens == 0 {
        return g;
    }
    let act_bits = p.activations.bytes() * 8.0;
    let w_bits = p.weights.bits();
    let pass = Pass {
        cfg,
        step,
        p,
        tp,
        ep,
        busiest: shard.busiest,
        imbalance: shard.imbalance,
        pair_reads_below: shard.pair_reads_below,
        tokens,
        all_tokens,
        act_bits,
        w_bits,
        kv_bits: p.kv.bits(),
        emb_bits: p.embedding_bits(),
        matmul: p.unit(p.weights),
        attn_unit: Unit::Matrix(p.activations),
        heads: ceil_div(cfg.heads, tp),
        kv_heads: ceil_div(cfg.kv_heads, tp),
        act: Operand::activations(act_bits),
        flash,
    };
    pass.embeddings(&mut g);
    layers(&pass, &mut g);
    pass.head(&mut g);
    g
}
