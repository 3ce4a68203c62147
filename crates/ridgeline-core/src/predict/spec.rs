//! Speculative decoding: a draft proposes `k` tokens per sequence, the model checks them
//! in one `k + 1`-token verify pass and keeps the accepted prefix plus one token of its
//! own. With each draft token accepted with probability `a` (independently), a verify
//! pass yields `(1 - a^(k+1)) / (1 - a)` tokens on average (Leviathan et al. 2023,
//! "Fast Inference from Transformers via Speculative Decoding", eq. 1).
//!
//! Time per output token at context `L` is `(verify(L) + k · draft(L)) / tokens per
//! verify`, where the draft is a smaller model of the same vocabulary (`--draft`) or the
//! model's own one-layer head (DeepSeek-V3's multi-token-prediction module, an
//! EAGLE-style head for other models). The verify pass reads the weights once for `k + 1`
//! tokens, which is why speculation pays while decode is bandwidth-bound and stops
//! paying at large batch, where decode is compute-bound and the rejected tokens cost
//! real FLOPs.

use super::Predictor;
use super::pass::{Part, PassResult};
use crate::error::{Error, Result};
use crate::memory::{CacheBytes, Share, device_cache_bytes, device_weight_bytes};
use crate::model::ModelConfig;
use crate::model::graph::{self, Graph, Precision, Shard, Step};
use serde::Serialize;

/// Most draft tokens per verify pass accepted.
pub const MAX_SPEC_K: u64 = 64;

/// Speculative decoding settings: `k` draft tokens per verify pass, each accepted with
/// probability `accept`.
#[derive(Debug, Clone, Copy, PartialEq, Serialize)]
pub struct Speculation {
    /// Draft tokens proposed per verify pass.
    pub k: u64,
    /// Probability that a draft token is accepted (the acceptance rate), 0..=1.
    pub accept: f64,
}

impl Speculation {
    /// Checks ranges; errors name `spec_k` or `spec_accept`.
    pub fn validate(&self) -> Result<()> {
        if self.k == 0 || self.k > MAX_SPEC_K {
            return Err(Error::invalid(
                "spec_k",
                format!("must be 1..={MAX_SPEC_K}, got {}", self.k),
            ));
        }
        if !(0.0..=1.0).contains(&self.accept) {
            return Err(Error::invalid(
                "spec_accept",
                format!("must be a probability in 0..1, got {}", self.accept),
            ));
        }
        Ok(())
    }

    /// Expected tokens per verify pass, `(1 - a^(k+1)) / (1 - a)` (`k + 1` at `a = 1`).
    ///
    /// ```
    /// use ridgeline_core::predict::Speculation;
    /// // 3 drafts accepted 70% of the time: 1 + 0.7 + 0.49 + 0.343 = 2.533 tokens
    /// let s = Speculation { k: 3, accept: 0.7 };
    /// assert!((s.tokens_per_verify() - 2.533).abs() < 1e-12);
    /// assert_eq!(Speculation { k: 3, accept: 1.0 }.tokens_per_verify(), 4.0);
    /// assert_eq!(Speculation { k: 3, accept: 0.0 }.tokens_per_verify(), 1.0);
    /// ```
    pub fn tokens_per_verify(&self) -> f64 {
        let a = self.accept;
        if a >= 1.0 {
            (self.k + 1) as f64
        } else {
            (1.0 - a.powf((self.k + 1) as f64)) / (1.0 - a)
        }
    }
}

/// Where the draft tokens come from.
#[derive(Debug, Clone, Copy)]
pub enum Draft<'a> {
    /// The model's own one-layer head: its MTP module where the checkpoint ships one,
    /// an EAGLE-style head otherwise.
    Head,
    /// A separate, smaller model with the same vocabulary.
    Model(&'a ModelConfig, Precision),
}

/// Whether `draft` can draft for `model` on any layout: the same vocabulary (the error
/// names `draft` and `model`). Whether tensor parallelism divides its heads depends on
/// the layout ([`Predictor::with_draft`]).
pub fn check_draft(model: &ModelConfig, draft: &ModelConfig) -> Result<()> {
    if draft.vocab != model.vocab {
        return Err(Error::conflict(
            &["draft", "model"],
            format!(
                "draft {} has a vocabulary of {} tokens, {} of {}: speculative decoding needs the same tokenizer",
                draft.id, draft.vocab, model.id, model.vocab
            ),
        ));
    }
    Ok(())
}

/// The verify pass of decode step `step`'s sequences checking `k` drafts: `k + 1` new
/// tokens and logits each, through the decode kernels.
fn verify_of(step: &Step, k: u64) -> Step {
    Step {
        new_tokens: k + 1,
        context: step.context + k,
        logits_per_sequence: k + 1,
        decode: true,
        ..*step
    }
}

impl<'a> Predictor<'a> {
    /// Layers a draft step runs (for the engine's per-layer overhead).
    pub(super) fn draft_layers(&self) -> u64 {
        match self.draft {
            Draft::Head => 1,
            Draft::Model(d, _) => d.layers,
        }
    }

    /// Speculative decoding with drafts from `draft` (a model sharing this model's
    /// vocabulary, in its native formats, on the same tensor-parallel devices) instead
    /// of the model's own head. Its weights and cache are added to device memory.
    pub fn with_draft(mut self, draft: &'a ModelConfig) -> Result<Self> {
        if self.spec.is_none() {
            return Err(Error::conflict(
                &["draft", "spec_k"],
                "a draft model needs speculative decoding (spec_k and spec_accept)",
            ));
        }
        check_draft(self.model, draft)?;
        if !draft.heads.is_multiple_of(self.tp) {
            return Err(Error::conflict(
                &["draft", "gpus"],
                format!(
                    "tensor parallel over {} devices does not divide draft {}'s {} attention heads",
                    self.tp, draft.id, draft.heads
                ),
            ));
        }
        let precision = super::resolve_formats(draft, None, None);
        let share = Share::stages(draft, &crate::memory::Layout::new(self.tp, self.parallel))[0];
        let cache = device_cache_bytes(draft, precision.kv, precision.activations.bytes(), &share);
        self.memory = self
            .memory
            .with_extra(device_weight_bytes(draft, &precision, &share), cache);
        self.draft = Draft::Model(draft, precision);
        self.draft_launch_layers = super::launch::launch_layers(draft, draft.layers);
        Ok(self)
    }

    /// [`Predictor::with_draft`] where a draft is given, else the predictor unchanged.
    pub fn with_draft_if(self, draft: Option<&'a ModelConfig>) -> Result<Self> {
        match draft {
            Some(d) => self.with_draft(d),
            None => Ok(self),
        }
    }

    /// The speculative-decoding settings, if any.
    pub fn speculation(&self) -> Option<Speculation> {
        self.spec
    }

    /// The draft in use (meaningful with [`Predictor::speculation`]).
    pub fn draft(&self) -> Draft<'a> {
        self.draft
    }

    /// Device memory of the model's own one-layer draft head: its last layer kind on
    /// this device's share, the `2·hidden × hidden` projection, and that layer's cache.
    pub(super) fn head_memory(
        model: &ModelConfig,
        p: &Precision,
        share: &Share,
    ) -> (f64, CacheBytes) {
        let last = Share {
            start: model.layers.saturating_sub(1),
            layers: 1,
            first: false,
            last: false,
            ..*share
        };
        let proj = 2.0 * (model.hidden * model.hidden) as f64 / share.tp.max(1) as f64;
        let weights = device_weight_bytes(model, p, &last) + proj * p.weights.bytes();
        let cache = device_cache_bytes(model, p.kv, p.activations.bytes(), &last);
        (weights, cache)
    }

    /// The passes of one output token's decode with their weights (passes per token):
    /// a plain step, or a verify pass and `k` draft steps per `tokens_per_verify`
    /// tokens.
    pub(super) fn decode_parts(&self) -> ([(Part, f64); 2], usize) {
        match self.spec {
            None => ([(Part::Plain, 1.0), (Part::Plain, 0.0)], 1),
            Some(s) => {
                let t = s.tokens_per_verify();
                (
                    [(Part::Verify(s.k), 1.0 / t), (Part::Draft, s.k as f64 / t)],
                    2,
                )
            }
        }
    }

    /// The graph of one pass of `part` for `step` (a decode or prefill step).
    pub(super) fn part_graph(&self, part: Part, step: &Step) -> Graph {
        match part {
            Part::Plain => self.graph(step),
            Part::Verify(k) => self.graph(&verify_of(step, k)),
            Part::Draft => match self.draft {
                Draft::Head => {
                    let shard = Shard {
                        tp: self.tp,
                        ep: self.ep,
                        layers: 1,
                        busiest: true,
                        imbalance: self.expert_imbalance,
                        pair_reads_below: self.expert_pair_reads_below(),
                    };
                    graph::draft_head(self.model, step, &self.precision, &shard, self.flash)
                }
                Draft::Model(d, p) => {
                    graph::forward(d, step, &p, &Shard::tp(self.tp, d.layers), self.flash)
                }
            },
        }
    }

    /// The draft's prefill of the prompt (its cache must hold the prompt too); zero
    /// without speculation.
    pub(super) fn draft_prefill(&self, batch: u64, prompt: u64) -> PassResult {
        if self.spec.is_none() {
            return PassResult::default();
        }
        let mut sum = PassResult::default();
        self.prefill_chunks(batch, prompt, |step, w| {
            if let Some(r) = self.part_ops(Part::Draft, step) {
                let tokens = step.batch.saturating_mul(step.new_tokens);
                sum.add_scaled(
                    &self.finish_part(Part::Draft, r, step.batch, tokens, 0.0),
                    w,
                );
            }
        });
        sum
    }

    /// The `k` draft steps of one speculating iteration of `batch` sequences at
    /// `context`, each with its own step and per-layer overheads (nothing without
    /// speculation).
    pub(super) fn draft_steps(&self, batch: u64, context: u64) -> PassResult {
        let Some(s) = self.spec else {
            return PassResult::default();
        };
        let mut r = PassResult::default();
        if let Some(ops) = self.part_ops(Part::Draft, &Step::decode(batch, context)) {
            r.add_scaled(
                &self.finish_part(Part::Draft, ops, batch, batch, 0.0),
                s.k as f64,
            );
        }
        r
    }

    /// The step of a verify pass of `batch` sequences whose cache holds `context`
    /// tokens before it: each checks `k` drafts, `k + 1` new tokens and logits
    /// (`None` without speculation).
    pub(super) fn verify_step(&self, batch: u64, context: u64) -> Option<Step> {
        Some(verify_of(&Step::decode(batch, context), self.spec?.k))
    }

    /// Decode speed-up from speculation at `batch` and `context`: plain step time over
    /// time per output token (1 without speculation).
    pub fn speedup(&self, batch: u64, context: u64) -> f64 {
        if self.spec.is_none() {
            return 1.0;
        }
        let plain = self.pass(&Step::decode(batch, context), 0.0).time_s;
        let spec = self.decode_step(batch, context, 0.0).time_s;
        if spec > 0.0 { plain / spec } else { 1.0 }
    }

    /// Smallest batch at which speculation no longer speeds decode up at `context`
    /// (`None`: it pays up to 2^20 sequences, or there is no speculation).
    pub fn spec_break_even_batch(&self, context: u64) -> Option<u64> {
        self.spec?;
        crate::search::smallest(1, 1 << 20, |b| self.speedup(b, context) <= 1.0)
    }
}

impl PassResult {
    /// Adds `w` times `other` (every field).
    pub(super) fn add_scaled(&mut self, other: &PassResult, w: f64) {
        self.flops += w * other.flops;
        self.bytes += w * other.bytes;
        self.weight_bytes += w * other.weight_bytes;
        self.kv_bytes += w * other.kv_bytes;
        self.time_s += w * other.time_s;
        self.roofline_time_s += w * other.roofline_time_s;
        for (a, b) in self.by_bound.iter_mut().zip(other.by_bound) {
            *a += w * b;
        }
        self.ep_comm_s += w * other.ep_comm_s;
        self.measured_launches += w * other.measured_launches;
        self.measured_attention += w * other.measured_attention;
    }
}
