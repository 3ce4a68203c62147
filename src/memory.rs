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

/// Whole-model weight bytes at `weights` format (embedding and lm_head at 16-bit where
/// the format keeps them so; norms at 16-bit).
pub fn model_weight_bytes(cfg: &ModelConfig, weights: Format) -> f64 {
    let p = cfg.params();
    let emb_bits = if weights.keeps_embeddings_16bit() {
        16.0
    } else {
        weights.bits()
    };
    let body = (p.attention + p.mlp) as f64;
    body * weights.bits() / 8.0
        + (p.embedding + p.lm_head) as f64 * emb_bits / 8.0
        + p.norms as f64 * 2.0
}

/// KV-cache bytes per token of one sequence on one device holding `layers` layers and
/// `kv_heads` KV heads: `2 · layers · kv_heads · head_dim · kv_bytes`.
pub fn kv_bytes_per_token(cfg: &ModelConfig, kv: Format, layers: u64, kv_heads: u64) -> f64 {
    2.0 * layers as f64 * kv_heads as f64 * cfg.head_dim as f64 * kv.bytes()
}

/// The per-device quantities memory depends on, hoisted out of batch/context loops.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct MemoryModel {
    weights_bytes: f64,
    kv_per_token: f64,
    /// activation bytes per prefill token (live tensors of one layer).
    act_per_token: f64,
    /// logits bytes per sequence (fp32 over the vocabulary shard).
    logits_per_seq: f64,
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
        let n = gpus.max(1);
        let (layers, kv_heads, tp) = match parallel {
            Parallel::Tp => (cfg.layers, cfg.kv_heads.div_ceil(n), n),
            Parallel::Pp => (cfg.layers.div_ceil(n), cfg.kv_heads, 1),
        };
        let a = act.bytes();
        let h = cfg.hidden as f64;
        let q = (cfg.heads.div_ceil(tp) * cfg.head_dim) as f64;
        let kvw = (kv_heads * cfg.head_dim) as f64;
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
            weights_bytes: model_weight_bytes(cfg, weights) / n as f64,
            kv_per_token: kv_bytes_per_token(cfg, kv, layers, kv_heads),
            act_per_token,
            logits_per_seq: 4.0 * cfg.vocab.div_ceil(tp) as f64,
            scores_per_seq_sq: scores,
            overhead_bytes: engine.overhead_bytes
                + engine.reserve_fraction * hw.memory.capacity_bytes,
            capacity_bytes: hw.memory.capacity_bytes,
            chunk_tokens: engine
                .max_batched_tokens
                .map_or(f64::INFINITY, |t| t as f64),
        }
    }

    /// Footprint for `batch` sequences with `prompt` prompt tokens and `gen` generated.
    pub fn at(&self, batch: u64, prompt: u64, gen_tokens: u64) -> InferenceMemory {
        let b = batch as f64;
        let p = prompt as f64;
        let kv = self.kv_per_token * b * (p + gen_tokens as f64);
        // the prefill workspace holds one chunk of tokens at most (all of batch x prompt
        // without chunking); logits are kept for every sequence's last token
        let in_flight = (b * p.max(1.0)).min(self.chunk_tokens.max(b));
        let act = self.act_per_token * in_flight
            + b * (self.logits_per_seq + self.scores_per_seq_sq * p * p);
        let total = self.weights_bytes + kv + act + self.overhead_bytes;
        InferenceMemory {
            weights_bytes: self.weights_bytes,
            kv_cache_bytes: kv,
            activation_bytes: act,
            overhead_bytes: self.overhead_bytes,
            total_bytes: total,
            capacity_bytes: self.capacity_bytes,
            fits: total <= self.capacity_bytes,
        }
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
