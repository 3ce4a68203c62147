//! Inference memory footprint per device: weights, KV cache, activation workspace and
//! engine overhead; whether it fits; the largest batch and context that fit.

use crate::dtype::Format;
use crate::engine::Engine;
use crate::hardware::Hardware;
use crate::model::graph::Precision;
use crate::model::{Mixer, ModelConfig};
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

/// How an inference deployment spreads a model over its devices.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Layout {
    /// Devices.
    pub gpus: u64,
    /// How they split the layers.
    pub parallel: Parallel,
    /// Expert-parallel groups (1: none; see [`crate::model::graph::Shard`]).
    pub ep: u64,
}

impl Layout {
    /// `gpus` devices split by `parallel`, no expert parallelism.
    pub fn new(gpus: u64, parallel: Parallel) -> Layout {
        Layout {
            gpus,
            parallel,
            ep: 1,
        }
    }
}

/// Memory of one device (the JSON `memory` object of `predict`).
#[derive(Debug, Clone, Copy, PartialEq, Serialize)]
#[non_exhaustive]
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

mod share;

pub use share::{
    CacheBytes, Share, device_cache_bytes, device_routed_expert_bytes, device_weight_bytes,
};

/// Whole-model weight bytes at `weights` format (every weight, the experts too): what
/// one device holding the whole model holds ([`device_weight_bytes`]; norms at the
/// activation dtype the weights run with, see [`crate::model::graph::activation_dtype`]).
pub fn model_weight_bytes(cfg: &ModelConfig, weights: Format) -> f64 {
    let p = crate::model::graph::resolve_formats(cfg, Some(weights), None);
    let whole = Share::stages(cfg, &Layout::new(1, Parallel::Tp))[0];
    device_weight_bytes(cfg, &p, &whole)
}

/// Memory of one device kind of share, hoisted out of batch/context loops.
#[derive(Debug, Clone, Copy, PartialEq)]
struct StageMemory {
    weights_bytes: f64,
    cache: CacheBytes,
    /// logits bytes per sequence (fp32 over the vocabulary shard; last stage only).
    logits_per_seq: f64,
}

/// The per-device quantities memory depends on, hoisted out of batch/context loops.
#[derive(Debug, Clone, Copy, PartialEq)]
pub(crate) struct MemoryModel {
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
    /// data-parallel groups sharing the batch (expert parallelism), each device holding
    /// its group's sequences.
    groups: u64,
    /// weights and cache held beside the model's (a speculative-decoding draft).
    extra: (f64, CacheBytes),
}

impl MemoryModel {
    /// Precomputes the model for one (model, device, engine, formats, layout).
    pub(crate) fn new(
        cfg: &ModelConfig,
        hw: &Hardware,
        engine: &Engine,
        p: &Precision,
        layout: &Layout,
        flash: bool,
    ) -> MemoryModel {
        let act = p.activations;
        let shares = Share::stages(cfg, layout);
        let tp = shares[0].tp;
        let mut stages = [StageMemory {
            weights_bytes: 0.0,
            cache: CacheBytes::default(),
            logits_per_seq: 0.0,
        }; 2];
        for (m, s) in stages.iter_mut().zip(&shares) {
            *m = StageMemory {
                weights_bytes: device_weight_bytes(cfg, p, s),
                cache: device_cache_bytes(cfg, p.kv, act.bytes(), s),
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
        // a Mamba block: its in_proj output (Mamba-2: z, x, B, C, dt; Mamba-1: x, z) and
        // the scan's output
        let has = |m: Mixer| cfg.kinds.iter().any(|k| k.mixer == m);
        let ssm2 = cfg.ssm.filter(|_| has(Mixer::Ssm)).map_or(0, |d| {
            let heads = d.heads.div_ceil(tp);
            3 * heads * d.head_dim + 2 * d.groups.div_ceil(tp) * d.d_state + heads
        });
        let ssm1 = cfg
            .mamba
            .filter(|_| has(Mixer::Mamba1))
            .map_or(0, |d| 3 * d.d_inner.div_ceil(tp));
        let ssm = ssm2.max(ssm1) as f64;
        // live in one layer: residual stream + normed input + max(attention: q, k, v, out;
        // MLP: up (gate+up) and the activated product; SSM: in_proj out and scan out)
        let act_per_token = a * (2.0 * h + (q + 2.0 * kvw + q).max(up + inter).max(ssm));
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
            overhead_bytes: engine.footprint.overhead_bytes
                + engine.footprint.reserve_fraction * hw.memory.usable_bytes(),
            capacity_bytes: hw.memory.usable_bytes(),
            chunk_tokens: engine
                .scheduler
                .max_batched_tokens
                .map_or(f64::INFINITY, |t| t as f64),
            groups: layout.ep.max(1),
            extra: (0.0, CacheBytes::default()),
        }
    }

    /// The same model with `weights` bytes and a per-sequence `cache` held beside the
    /// model's on every device (a speculative-decoding draft; replaces any set before).
    pub(crate) fn with_extra(self, weights: f64, cache: CacheBytes) -> MemoryModel {
        MemoryModel {
            extra: (weights, cache),
            ..self
        }
    }

    /// KV-cache bytes per token of one sequence on the device holding the most layers
    /// (while the context is below every sliding window).
    pub(crate) fn kv_bytes_per_token(&self) -> f64 {
        self.stages[..self.n_stages]
            .iter()
            .map(|s| s.cache.per_token_below_windows())
            .fold(0.0, f64::max)
    }

    /// One sequence's cache bytes as a function of its context (the model's and a
    /// draft's), where one line gives them: a device holding every layer. A pipeline's
    /// stages are weighed against each other at each footprint ([`MemoryModel::at`]),
    /// so no one line answers for them (`None`).
    pub(crate) fn sequence_cache(&self) -> Option<CacheBytes> {
        (self.n_stages == 1)
            .then(|| self.stages[0].cache.plus(&self.extra.1))
            .flatten()
    }

    /// Footprint for `batch` sequences with `prompt` prompt tokens and `gen` generated,
    /// on the most loaded device (under expert parallelism a device holds its group's
    /// `ceil(batch / ep)` sequences).
    pub(crate) fn at(&self, batch: u64, prompt: u64, gen_tokens: u64) -> InferenceMemory {
        let b = batch.div_ceil(self.groups) as f64;
        let p = prompt as f64;
        // the prefill workspace holds one chunk of tokens at most (all of batch x prompt
        // without chunking); logits are kept for every sequence's last token
        let in_flight = (b * p.max(1.0)).min(self.chunk_tokens.max(b));
        let workspace = self.act_per_token * in_flight + b * self.scores_per_seq_sq * p * p;
        let context = p + gen_tokens as f64;
        let (extra_weights, extra_cache) = &self.extra;
        let at = |s: &StageMemory| {
            let kv = b * (s.cache.at(context) + extra_cache.at(context));
            let act = workspace + b * s.logits_per_seq;
            let weights = s.weights_bytes + extra_weights;
            let total = weights + kv + act + self.overhead_bytes;
            InferenceMemory {
                weights_bytes: weights,
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
        let whole = Share::stages(&m, &Layout::new(1, Parallel::Tp))[0];
        let per_tok = device_cache_bytes(&m, Format::Fp16, 2.0, &whole).at(1.0);
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
