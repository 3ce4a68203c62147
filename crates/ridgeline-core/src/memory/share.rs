//! What one device holds of a model: its share of the layers (a pipeline stage) and of
//! each layer (a tensor-parallel rank), in weight bytes and KV or state bytes, layer kind
//! by layer kind.

use super::{Layout, Parallel};
use crate::dtype::Format;
use crate::model::graph::Precision;
use crate::model::{Ffn, LayerKind, Mixer, ModelConfig};

/// The part of a model one device holds: its tensor-parallel share of `layers`
/// consecutive layers from `start`, the embedding if it is the first pipeline stage,
/// the final norm and lm_head if it is the last.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Share {
    /// Tensor-parallel degree.
    pub tp: u64,
    /// Expert-parallel groups the routed experts are spread over (1: none).
    pub ep: u64,
    /// Pipeline stages.
    pub pp: u64,
    /// The first layer on this device.
    pub start: u64,
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
    ///
    /// Under expert parallelism (tensor parallel only) a device is one of `tp = gpus /
    /// ep` ranks of its group and holds `1/ep` of the routed experts.
    pub fn stages(cfg: &ModelConfig, layout: &Layout) -> Vec<Share> {
        let n = layout.gpus.max(1);
        let ep = layout.ep.max(1);
        match layout.parallel {
            Parallel::Tp => vec![Share {
                tp: (n / ep).max(1),
                ep,
                pp: 1,
                start: 0,
                layers: cfg.layers,
                first: true,
                last: true,
            }],
            Parallel::Pp if n == 1 => Share::stages(cfg, &Layout::new(1, Parallel::Tp)),
            Parallel::Pp => {
                let (base, rem) = (cfg.layers / n, cfg.layers % n);
                let stage = |start, layers, first, last| Share {
                    tp: 1,
                    ep: 1,
                    pp: n,
                    start,
                    layers,
                    first,
                    last,
                };
                vec![
                    stage(0, base + u64::from(rem > 0), true, false),
                    stage(cfg.layers - base, base, false, true),
                ]
            }
        }
    }

    /// KV heads on this device (replicated when fewer than `tp`).
    pub(crate) fn kv_heads(&self, cfg: &ModelConfig) -> u64 {
        cfg.kv_heads.div_ceil(self.tp)
    }

    /// The layer kinds on this device with their counts.
    pub(crate) fn kinds(&self, cfg: &ModelConfig) -> Vec<(LayerKind, u64)> {
        let end = (self.start + self.layers) as usize;
        cfg.kinds_in(self.start as usize..end.min(cfg.layer_kinds.len()))
    }
}

/// Weight parameters one device holds of one layer's mixer.
///
/// Tensor parallelism splits q, o and per-head projections by `tp` and replicates, when
/// `tp` exceeds the KV heads, the K/V projections (each device computes whole KV heads,
/// as the layer graph does), and for latent attention the compressing `q_a` and `kv_a`.
/// Linear-attention and state-space blocks split by heads: `1/tp` of their weights.
fn mixer_params(cfg: &ModelConfig, mixer: Mixer, s: &Share) -> f64 {
    let tp = s.tp.max(1) as f64;
    let h = cfg.hidden as f64;
    match (mixer, cfg.mla, cfg.linear) {
        (Mixer::Mla, Some(m), _) => {
            let heads = cfg.heads as f64 / tp;
            let qk = m.qk_head_dim() as f64;
            let q = match m.q_lora_rank {
                Some(r) => h * r as f64 + r as f64 + r as f64 * heads * qk,
                None => h * heads * qk,
            };
            let kv_a = h * m.cache_elems() as f64 + m.kv_lora_rank as f64;
            let kv_b = m.kv_lora_rank as f64 * heads * (m.qk_nope_head_dim + m.v_head_dim) as f64;
            q + kv_a + kv_b + heads * m.v_head_dim as f64 * h
        }
        (Mixer::Linear | Mixer::Ssm | Mixer::Mamba1 | Mixer::None, _, _) => {
            cfg.try_mixer_params(mixer).unwrap_or(0) as f64 / tp
        }
        _ => {
            let d = cfg.head_dim as f64;
            let q = (cfg.heads * cfg.head_dim) as f64 / tp;
            let q_out = if cfg.attention_gate { 2.0 * q } else { q };
            let kv = s.kv_heads(cfg) as f64 * d;
            let mut p = h * q_out + 2.0 * h * kv + q * h;
            if cfg.qkv_bias {
                p += q_out + 2.0 * kv;
            }
            if cfg.o_bias {
                p += h;
            }
            if cfg.attention_sinks {
                p += cfg.heads as f64 / tp;
            }
            if cfg.qk_norm {
                p += 2.0 * d;
            }
            p
        }
    }
}

/// Weight bytes one device holds of one layer's feed-forward: the dense MLP split by
/// `tp`; a mixture of experts with `ceil(experts / ep)` routed experts each split by
/// `tp` (in the experts' format), the router replicated and the shared experts split;
/// nothing for a layer without one.
fn ffn_bytes(cfg: &ModelConfig, ffn: Ffn, p: &Precision, s: &Share) -> f64 {
    let tp = s.tp.max(1) as f64;
    match ffn {
        Ffn::None => return 0.0,
        Ffn::Dense => {
            let (all, _) = cfg.try_ffn_params(Ffn::Dense).unwrap_or((0, 0));
            return all as f64 / tp * p.weights.bytes();
        }
        Ffn::Moe => {}
    }
    let router = cfg.hidden as f64 * cfg.experts as f64;
    let expert = cfg.expert_params() as f64;
    let (all, _) = cfg.try_ffn_params(Ffn::Moe).unwrap_or((0, 0));
    let shared = all as f64 - expert * cfg.experts as f64 - router;
    let held = cfg.experts.div_ceil(s.ep.max(1)) as f64;
    held * expert / tp * p.experts.bytes() + shared / tp * p.weights.bytes() + router * 2.0
}

/// Weight bytes one device holds for `share`, at the formats of `p` (embedding and
/// lm_head at 16 bits where the format keeps them so, routed experts in their own
/// format), norms at the activation dtype. A pipeline stage holds whole layers; a tied
/// embedding is held by the first stage and again, as the lm_head, by the last.
pub fn device_weight_bytes(cfg: &ModelConfig, p: &Precision, s: &Share) -> f64 {
    let tp = s.tp.max(1) as f64;
    let mut layers = 0.0;
    let mut count = 0.0;
    for (kind, n) in s.kinds(cfg) {
        let n = n as f64;
        count += n;
        layers += n
            * (mixer_params(cfg, kind.mixer, s) * p.weights.bytes()
                + ffn_bytes(cfg, kind.ffn, p, s));
    }
    let params = cfg.params();
    let norm_params = params.norms as f64 / (cfg.norms_per_layer * cfg.layers + 1) as f64;
    let norms = norm_params * (cfg.norms_per_layer as f64 * count + if s.last { 1.0 } else { 0.0 });
    let emb_bytes = p.embedding_bits() / 8.0;
    let table = (cfg.vocab * cfg.hidden) as f64;
    let embedding = if s.first {
        params.embedding as f64
    } else {
        0.0
    };
    let lm_head = match (s.last, cfg.tied_embeddings) {
        (false, _) => 0.0,
        (true, false) => params.lm_head as f64,
        // tied: the lm_head is the embedding, held again unless the stage has both
        (true, true) if s.first => 0.0,
        (true, true) => table,
    };
    layers + (embedding + lm_head) / tp * emb_bytes + norms * p.activations.bytes()
}

/// Bytes of the routed experts one device holds for `share` (in the experts' format):
/// what offload moves to host memory first.
pub fn device_routed_expert_bytes(cfg: &ModelConfig, p: &Precision, s: &Share) -> f64 {
    let held = cfg.experts.div_ceil(s.ep.max(1)) as f64;
    let per_layer = held * cfg.expert_params() as f64 / s.tp.max(1) as f64 * p.experts.bytes();
    s.kinds(cfg)
        .into_iter()
        .filter(|(k, _)| k.ffn == Ffn::Moe)
        .map(|(_, n)| n as f64 * per_layer)
        .sum()
}

/// KV cache (or recurrent state) one device holds for one sequence, by layer kind.
#[derive(Debug, Clone, Copy, Default, PartialEq)]
pub struct CacheBytes {
    /// Bytes per token of the layers that cache the whole context.
    pub per_token: f64,
    /// Windows and bytes per token of the layers that cache at most a window.
    pub windows: [(u64, f64); 4],
    /// Windows in use.
    pub n_windows: usize,
    /// Fixed bytes per sequence (linear-attention and state-space states), whatever the
    /// context.
    pub per_sequence: f64,
}

impl CacheBytes {
    /// Bytes for one sequence at `context` tokens.
    pub fn at(&self, context: f64) -> f64 {
        let windowed: f64 = self.windows[..self.n_windows]
            .iter()
            .map(|&(w, b)| b * context.min(w as f64))
            .sum();
        self.per_token * context + windowed + self.per_sequence
    }

    /// The cache of a sequence holding both `self` and `other` (a model's and its
    /// draft's), or `None` when their windows together are more than four.
    pub fn plus(&self, other: &CacheBytes) -> Option<CacheBytes> {
        let mut c = CacheBytes {
            per_token: self.per_token + other.per_token,
            per_sequence: self.per_sequence + other.per_sequence,
            ..*self
        };
        for &(w, b) in &other.windows[..other.n_windows] {
            let n = c.n_windows;
            match c.windows[..n].iter().position(|&(v, _)| v == w) {
                Some(i) => c.windows[i].1 += b,
                None if n < c.windows.len() => {
                    c.windows[n] = (w, b);
                    c.n_windows += 1;
                }
                None => return None,
            }
        }
        Some(c)
    }

    /// Bytes per token while the context is below every window.
    pub(crate) fn per_token_below_windows(&self) -> f64 {
        self.per_token
            + self.windows[..self.n_windows]
                .iter()
                .map(|&(_, b)| b)
                .sum::<f64>()
    }
}

/// The cache one device holds for `share` per sequence: per layer `2 · kv_heads ·
/// head_dim` elements per token for softmax attention (capped at the window), the
/// whole latent `kv_lora_rank + qk_rope_head_dim` for latent attention (every
/// tensor-parallel rank holds it), for linear attention a fixed state of `value
/// heads · d_k · d_v` fp32 values plus the convolution's last inputs, and for a Mamba-2
/// block a fixed state of `heads · head_dim · d_state` values (at
/// `crate::model::SsmDims::state_bytes`: the activation dtype unless the config's
/// `mamba_ssm_cache_dtype` says otherwise) plus the convolution's last `conv_kernel - 1`
/// inputs over `d_inner + 2 · n_groups · d_state` channels at the activation dtype (a
/// Mamba-1 block: `d_inner · d_state` and the window over `d_inner`). The recurrent
/// states split over tensor-parallel ranks with their heads; a layer without a mixer
/// holds nothing.
pub fn device_cache_bytes(cfg: &ModelConfig, kv: Format, act: f64, s: &Share) -> CacheBytes {
    let mut c = CacheBytes::default();
    for (kind, n) in s.kinds(cfg) {
        let n = n as f64;
        let per_token = match (kind.mixer, cfg.mla, cfg.linear) {
            (Mixer::Mla, Some(m), _) => m.cache_elems() as f64 * kv.bytes(),
            (Mixer::Linear, _, Some(d)) => {
                let (state, conv) = d.state_elems();
                c.per_sequence += n * (state as f64 * 4.0 + conv as f64 * act) / s.tp as f64;
                continue;
            }
            (Mixer::Ssm, _, _) => {
                if let Some(d) = cfg.ssm {
                    c.per_sequence += n * d.bytes_per_sequence(act) / s.tp as f64;
                }
                continue;
            }
            (Mixer::Mamba1, _, _) => {
                if let Some(d) = cfg.mamba {
                    c.per_sequence += n * d.bytes_per_sequence(act) / s.tp as f64;
                }
                continue;
            }
            (Mixer::None, _, _) => continue,
            _ => 2.0 * (s.kv_heads(cfg) * cfg.head_dim) as f64 * kv.bytes(),
        };
        let Some(w) = kind.window else {
            c.per_token += n * per_token;
            continue;
        };
        let slot = c.windows[..c.n_windows].iter().position(|x| x.0 == w);
        match slot {
            Some(i) => c.windows[i].1 += n * per_token,
            None if c.n_windows < c.windows.len() => {
                c.windows[c.n_windows] = (w, n * per_token);
                c.n_windows += 1;
            }
            // more windows than kept: count the layer over the whole context
            None => c.per_token += n * per_token,
        }
    }
    c
}
