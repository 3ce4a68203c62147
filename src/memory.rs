//! Inference memory footprint per device: weights, KV cache, activation workspace and
//! engine overhead; whether it fits; the largest batch and context that fit.

use crate::dtype::{ComputeDtype, Format};
use crate::engine::Engine;
use crate::hardware::Hardware;
use crate::model::ModelConfig;
use serde::Serialize;

crate::named_enum! {
    /// How a model is split over devices.
    pub enum Parallel: "parallelism" {
        /// Tensor parallel: every layer split over all devices.
        Tp = "tp",
        /// Pipeline parallel: layers split into consecutive stages.
        Pp = "pp",
    }
}

/// Memory of one device (the JSON `memory` object of `predict`).
#[derive(Debug, Clone, Copy, PartialEq, Serialize)]
pub struct InferenceMemory {
    /// Weights held on this device, bytes.
    pub weights_bytes: f64,
    /// KV cache for `batch` sequences of `prompt + gen` tokens, bytes.
    pub kv_cache_bytes: f64,
    /// Peak transient activations (prefill workspace and logits), bytes.
    pub activation_bytes: f64,
    /// Engine overhead (CUDA context, allocator, reserve), bytes.
    pub overhead_bytes: f64,
    /// Sum of the four, bytes.
    pub total_bytes: f64,
    /// Device capacity, bytes.
    pub capacity_bytes: f64,
    /// `total_bytes <= capacity_bytes`.
    pub fits: bool,
}

/// Whole-model weight bytes at `weights` format: what one device holding the whole
/// model holds ([`device_weight_bytes`]; norms at the activation dtype the weights run
/// with, see [`crate::predict::activation_dtype`]).
pub fn model_weight_bytes(cfg: &ModelConfig, weights: Format) -> f64 {
    let act = crate::predict::activation_dtype(cfg, weights);
    let whole = Share::stages(cfg, 1, Parallel::Tp)[0];
    device_weight_bytes(cfg, weights, act, &whole)
}

/// KV-cache bytes per token of one sequence on one device holding `layers` layers and
/// `kv_heads` KV heads: `2 · layers · kv_heads · head_dim · kv_bytes`.
pub fn kv_bytes_per_token(cfg: &ModelConfig, kv: Format, layers: u64, kv_heads: u64) -> f64 {
    2.0 * layers as f64 * kv_heads as f64 * cfg.head_dim as f64 * kv.bytes()
}

/// The part of a model one device holds: its tensor-parallel share of `layers`
/// consecutive layers, the embedding if it is the first pipeline stage, the final norm
/// and lm_head if it is the last.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Share {
    /// Tensor-parallel degree.
    pub tp: u64,
    /// Pipeline stages.
    pub pp: u64,
    /// Layers on this device.
    pub layers: u64,
    /// Holds the token embedding.
    pub first: bool,
    /// Holds the final norm and the lm_head.
    pub last: bool,
}

impl Share {
    /// The shares worth checking for `parallel` over `gpus` devices: one for tensor
    /// parallel; the first and last stages for pipeline parallel (layers split as
    /// evenly as they go, the first stages taking one more; one of these two is the most
    /// loaded: the others hold no more layers than the first and no embedding).
    pub fn stages(cfg: &ModelConfig, gpus: u64, parallel: Parallel) -> Vec<Share> {
        let n = gpus.max(1);
        match parallel {
            Parallel::Tp => vec![Share {
                tp: n,
                pp: 1,
                layers: cfg.layers,
                first: true,
                last: true,
            }],
            Parallel::Pp if n == 1 => Share::stages(cfg, 1, Parallel::Tp),
            Parallel::Pp => {
                let (base, rem) = (cfg.layers / n, cfg.layers % n);
                let stage = |layers, first, last| Share {
                    tp: 1,
                    pp: n,
                    layers,
                    first,
                    last,
                };
                vec![
                    stage(base + u64::from(rem > 0), true, false),
                    stage(base, false, true),
                ]
            }
        }
    }

    /// KV heads on this device (replicated when fewer than `tp`).
    pub fn kv_heads(&self, cfg: &ModelConfig) -> u64 {
        cfg.kv_heads.div_ceil(self.tp)
    }
}

/// Weight bytes one device holds for `share`, at `weights` format (embedding and
/// lm_head at 16 bits where the format keeps them so), norms at the activation dtype.
///
/// Tensor parallelism splits q, o, the MLP and the vocabulary by `tp` and replicates
/// the norms, the MoE router and, when `tp` exceeds the KV heads, the K/V projections
/// (each device computes whole KV heads, as the layer graph does). A pipeline stage
/// holds whole layers; a tied embedding is held by the first stage and again, as the
/// lm_head, by the last.
pub fn device_weight_bytes(
    cfg: &ModelConfig,
    weights: Format,
    act: ComputeDtype,
    s: &Share,
) -> f64 {
    let p = cfg.params();
    let tp = s.tp.max(1) as f64;
    let (h, d) = (cfg.hidden as f64, cfg.head_dim as f64);
    let q = (cfg.heads * cfg.head_dim) as f64 / tp;
    let kv = s.kv_heads(cfg) as f64 * d;
    let mut attn = 2.0 * h * q + 2.0 * h * kv;
    if cfg.qkv_bias {
        attn += q + 2.0 * kv;
    }
    if cfg.o_bias {
        attn += h;
    }
    let router = if cfg.is_moe() {
        h * cfg.experts as f64
    } else {
        0.0
    };
    let mlp = (p.mlp as f64 / cfg.layers as f64 - router) / tp + router;
    let layers = s.layers as f64;
    let norm_params = p.norms as f64 / (2 * cfg.layers + 1) as f64;
    let norms = norm_params * (2.0 * layers + if s.last { 1.0 } else { 0.0 });
    let emb_bytes = if weights.keeps_embeddings_16bit() {
        2.0
    } else {
        weights.bytes()
    };
    let table = (cfg.vocab * cfg.hidden) as f64;
    let embedding = if s.first { p.embedding as f64 } else { 0.0 };
    let lm_head = match (s.last, cfg.tied_embeddings) {
        (false, _) => 0.0,
        (true, false) => p.lm_head as f64,
        // tied: the lm_head is the embedding, held again unless the stage has both
        (true, true) if s.first => 0.0,
        (true, true) => table,
    };
    layers * (attn + mlp) * weights.bytes()
        + (embedding + lm_head) / tp * emb_bytes
        + norms * act.bytes()
}

/// Memory of one device kind of share, hoisted out of batch/context loops.
#[derive(Debug, Clone, Copy, PartialEq)]
struct StageMemory {
    weights_bytes: f64,
    kv_per_token: f64,
    /// logits bytes per sequence (fp32 over the vocabulary shard; last stage only).
    logits_per_seq: f64,
}

/// The per-device quantities memory depends on, hoisted out of batch/context loops.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct MemoryModel {
    /// The shares worth checking (see [`Share::stages`]); the most loaded at a given
    /// batch and context is reported.
    stages: [StageMemory; 2],
    n_stages: usize,
    /// activation bytes per prefill token (live tensors of one layer).
    act_per_token: f64,
    /// naive attention score bytes per sequence per prompt² (0 with flash).
    scores_per_seq_sq: f64,
    overhead_bytes: f64,
    capacity_bytes: f64,
    /// prefill tokens in flight at once (the engine's chunk), or unbounded.
    chunk_tokens: f64,
}

impl MemoryModel {
    /// Precomputes the model for one (model, device, engine, formats, layout).
    #[allow(clippy::too_many_arguments)]
    pub fn new(
        cfg: &ModelConfig,
        hw: &Hardware,
        engine: &Engine,
        weights: Format,
        kv: Format,
        act: ComputeDtype,
        gpus: u64,
        parallel: Parallel,
        flash: bool,
    ) -> MemoryModel {
        let shares = Share::stages(cfg, gpus, parallel);
        let tp = shares[0].tp;
        let mut stages = [StageMemory {
            weights_bytes: 0.0,
            kv_per_token: 0.0,
            logits_per_seq: 0.0,
        }; 2];
        for (m, s) in stages.iter_mut().zip(&shares) {
            *m = StageMemory {
                weights_bytes: device_weight_bytes(cfg, weights, act, s),
                kv_per_token: kv_bytes_per_token(cfg, kv, s.layers, s.kv_heads(cfg)),
                logits_per_seq: if s.last {
                    4.0 * cfg.vocab.div_ceil(tp) as f64
                } else {
                    0.0
                },
            };
        }
        let a = act.bytes();
        let h = cfg.hidden as f64;
        let q = (cfg.heads.div_ceil(tp) * cfg.head_dim) as f64;
        let kvw = (shares[0].kv_heads(cfg) * cfg.head_dim) as f64;
        let inter = cfg.intermediate.div_ceil(tp) as f64 * cfg.experts_per_token as f64;
        let up = if cfg.gated_mlp { 2.0 * inter } else { inter };
        // live in one layer: residual stream + normed input + max(attention: q, k, v, out;
        // MLP: up (gate+up) and the activated product)
        let act_per_token = a * (2.0 * h + (q + 2.0 * kvw + q).max(up + inter));
        let scores = if flash {
            0.0
        } else {
            (cfg.heads.div_ceil(tp)) as f64 * a
        };
        MemoryModel {
            stages,
            n_stages: shares.len(),
            act_per_token,
            scores_per_seq_sq: scores,
            overhead_bytes: engine.overhead_bytes
                + engine.reserve_fraction * hw.memory.capacity_bytes,
            capacity_bytes: hw.memory.capacity_bytes,
            chunk_tokens: engine
                .max_batched_tokens
                .map_or(f64::INFINITY, |t| t as f64),
        }
    }

    /// KV-cache bytes per token of one sequence on the device holding the most layers.
    pub fn kv_bytes_per_token(&self) -> f64 {
        self.stages[..self.n_stages]
            .iter()
            .map(|s| s.kv_per_token)
            .fold(0.0, f64::max)
    }

    /// Footprint for `batch` sequences with `prompt` prompt tokens and `gen` generated,
    /// on the most loaded device.
    pub fn at(&self, batch: u64, prompt: u64, gen_tokens: u64) -> InferenceMemory {
        let b = batch as f64;
        let p = prompt as f64;
        // the prefill workspace holds one chunk of tokens at most (all of batch x prompt
        // without chunking); logits are kept for every sequence's last token
        let in_flight = (b * p.max(1.0)).min(self.chunk_tokens.max(b));
        let workspace = self.act_per_token * in_flight + b * self.scores_per_seq_sq * p * p;
        let at = |s: &StageMemory| {
            let kv = s.kv_per_token * b * (p + gen_tokens as f64);
            let act = workspace + b * s.logits_per_seq;
            let total = s.weights_bytes + kv + act + self.overhead_bytes;
            InferenceMemory {
                weights_bytes: s.weights_bytes,
                kv_cache_bytes: kv,
                activation_bytes: act,
                overhead_bytes: self.overhead_bytes,
                total_bytes: total,
                capacity_bytes: self.capacity_bytes,
                fits: total <= self.capacity_bytes,
            }
        };
        self.stages[1..self.n_stages]
            .iter()
            .map(at)
            .fold(at(&self.stages[0]), |worst, m| {
                if m.total_bytes > worst.total_bytes {
                    m
                } else {
                    worst
                }
            })
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::model::ModelDb;

    #[test]
    fn llama3_8b_kv_golden() {
        // 2 · 32 layers · 8 kv heads · 128 · 2 bytes = 131,072 bytes per token;
        // × 2,304 tokens × 64 sequences = 19,327,352,832 bytes.
        let m = ModelDb::builtin().unwrap().resolve("llama-3-8b").unwrap();
        let per_tok = kv_bytes_per_token(&m, Format::Fp16, m.layers, m.kv_heads);
        assert_eq!(per_tok, 131_072.0);
        assert_eq!(per_tok * 2304.0 * 64.0, 19_327_352_832.0);
    }

    #[test]
    fn weight_bytes_by_format() {
        let m = ModelDb::builtin().unwrap().resolve("llama-2-7b").unwrap();
        // fp16: 6,738,415,616 · 2 = 13,476,831,232 bytes.
        assert_eq!(model_weight_bytes(&m, Format::Fp16), 13_476_831_232.0);
        // q4_0 quantizes embeddings too: params (less norms) · 4.5/8 + norms · 2.
        let norms = 65 * 4096;
        let expect = (6_738_415_616.0 - norms as f64) * 4.5 / 8.0 + norms as f64 * 2.0;
        assert_eq!(model_weight_bytes(&m, Format::Q4_0), expect);
    }
}
