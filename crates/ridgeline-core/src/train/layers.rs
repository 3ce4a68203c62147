//! The weight matrices of each layer kind, for training: which matrices a layer of a
//! given mixer and feed-forward holds (with their shapes and copies), which of them LoRA
//! adapts, and the parameters of a range of layers (a pipeline stage).
//!
//! Every kind the layer graph reads is listed, in execution order:
//!
//! | part | matrices (`d_in x d_out`) |
//! |---|---|
//! | softmax attention | q `h x H·d` (`2·H·d` with an output gate), k, v `h x K·d`, o `H·d x h` |
//! | latent attention | q_a `h x r_q`, q_b `r_q x H·(d_nope + d_rope)` (or q `h x H·(d_nope + d_rope)`), kv_a `h x (r_kv + d_rope)`, kv_b `r_kv x H·(d_nope + d_v)`, o `H·d_v x h` |
//! | linear attention (Gated DeltaNet) | in_proj_qkvz `h x (2·n_k·d_k + 2·n_v·d_v)`, in_proj_ba `h x 2·n_v`, out_proj `n_v·d_v x h` |
//! | Mamba-2 | in_proj `h x (2·d_inner + 2·G·N + H)`, out_proj `d_inner x h` |
//! | Mamba-1 | in_proj `h x 2·d`, x_proj `d x (r + 2·N)`, dt_proj `r x d`, out_proj `d x h` |
//! | dense MLP | gate, up `h x i` (up only when plain), down `i x h` |
//! | mixture of experts | per routed expert gate, up `h x i_e`, down `i_e x h` (`E` copies); shared experts gate, up `h x i_s`, down `i_s x h` |
//!
//! Routers, convolutions, norms and biases are vectors or small tables: they count as
//! parameters ([`ModelConfig::params`]) but carry no adapter and no factored statistics.
//!
//! LoRA targets: [`LoraTargets::QueryValue`] adapts the query and value projections of
//! softmax attention and, in latent attention, the projections that make queries (q_b,
//! or q without compression) and keys and values (kv_b); layers of other mixers get no
//! adapter (a model without any of them is refused). [`LoraTargets::AllLinear`] adapts
//! every matrix above (PEFT's `all-linear` without the lm_head), routed experts included.

use super::kinds::LoraTargets;
use crate::model::{Ffn, LayerKind, Mixer, ModelConfig};
use std::ops::Range;

/// What part of a layer a matrix belongs to.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(super) enum Part {
    /// The token mixer.
    Mixer,
    /// The dense MLP or the shared experts: every token passes through it.
    Dense,
    /// A routed expert: `copies` of it, `k` of them per token.
    Routed,
}

/// One weight matrix of a layer kind.
#[derive(Debug, Clone, Copy, PartialEq)]
pub(super) struct Matrix {
    /// Its name in Hugging Face checkpoints.
    pub(super) name: &'static str,
    /// Input width.
    pub(super) d_in: u64,
    /// Output width.
    pub(super) d_out: u64,
    /// Copies in the layer (routed experts: `E`).
    pub(super) copies: u64,
    /// Mixer, dense MLP (or shared experts), or routed expert.
    pub(super) part: Part,
    /// Whether [`LoraTargets::QueryValue`] adapts it.
    pub(super) query_value: bool,
}

impl Matrix {
    /// `(d_in + d_out) · copies`: a LoRA adapter's parameters per unit of rank, and
    /// Adafactor's factored statistics per matrix.
    pub(super) fn rows_plus_cols(&self) -> f64 {
        (self.d_in + self.d_out) as f64 * self.copies as f64
    }

    /// Whether LoRA with `targets` adapts it.
    pub(super) fn adapted(&self, targets: LoraTargets) -> bool {
        match targets {
            LoraTargets::QueryValue => self.query_value,
            LoraTargets::AllLinear => true,
        }
    }
}

/// The MLP matrices of inner width `i`, `copies` of them: gate, up and down when gated,
/// up and down when plain.
fn mlp(cfg: &ModelConfig, i: u64, copies: u64, part: Part, out: &mut Vec<Matrix>) {
    let names: &[&'static str] = match (part, cfg.gated_mlp) {
        (Part::Routed, true) => &["experts.gate_proj", "experts.up_proj", "experts.down_proj"],
        (Part::Routed, false) => &["experts.up_proj", "experts.down_proj"],
        (_, true) => &["gate_proj", "up_proj", "down_proj"],
        (_, false) => &["up_proj", "down_proj"],
    };
    let h = cfg.hidden;
    for (n, &name) in names.iter().enumerate() {
        let down = n + 1 == names.len();
        out.push(Matrix {
            name,
            d_in: if down { i } else { h },
            d_out: if down { h } else { i },
            copies,
            part,
            query_value: false,
        });
    }
}

/// The weight matrices of one layer of `kind`, in execution order (mixer, then
/// feed-forward; see the [module docs](self)).
pub(super) fn matrices(cfg: &ModelConfig, kind: &LayerKind) -> Vec<Matrix> {
    let h = cfg.hidden;
    let mut out = Vec::with_capacity(12);
    let mut push = |name, d_in, d_out, query_value| {
        out.push(Matrix {
            name,
            d_in,
            d_out,
            copies: 1,
            part: Part::Mixer,
            query_value,
        })
    };
    match kind.mixer {
        Mixer::Attention => {
            let (q, k) = (cfg.q_width(), cfg.kv_width());
            let q_out = if cfg.attention_gate { 2 * q } else { q };
            push("q_proj", h, q_out, true);
            push("k_proj", h, k, false);
            push("v_proj", h, k, true);
            push("o_proj", q, h, false);
        }
        Mixer::Mla => {
            if let Some(m) = cfg.mla {
                let qk = cfg.heads * m.qk_head_dim();
                match m.q_lora_rank {
                    Some(r) => {
                        push("q_a_proj", h, r, false);
                        push("q_b_proj", r, qk, true);
                    }
                    None => push("q_proj", h, qk, true),
                }
                push("kv_a_proj_with_mqa", h, m.cache_elems(), false);
                push(
                    "kv_b_proj",
                    m.kv_lora_rank,
                    cfg.heads * (m.qk_nope_head_dim + m.v_head_dim),
                    true,
                );
                push("o_proj", cfg.heads * m.v_head_dim, h, false);
            }
        }
        Mixer::Linear => {
            if let Some(l) = cfg.linear {
                let v = l.value_heads * l.value_dim;
                push("in_proj_qkvz", h, l.qkv_channels() + v, false);
                push("in_proj_ba", h, 2 * l.value_heads, false);
                push("out_proj", v, h, false);
            }
        }
        Mixer::Ssm => {
            if let Some(s) = cfg.ssm {
                push("in_proj", h, s.in_proj_width(), false);
                push("out_proj", s.d_inner(), h, false);
            }
        }
        Mixer::Mamba1 => {
            if let Some(m) = cfg.mamba {
                push("in_proj", h, 2 * m.d_inner, false);
                push("x_proj", m.d_inner, m.dt_rank + 2 * m.d_state, false);
                push("dt_proj", m.dt_rank, m.d_inner, false);
                push("out_proj", m.d_inner, h, false);
            }
        }
        Mixer::None => {}
    }
    match kind.ffn {
        Ffn::Dense => mlp(cfg, cfg.intermediate, 1, Part::Dense, &mut out),
        Ffn::Moe => {
            mlp(
                cfg,
                cfg.expert_intermediate,
                cfg.experts,
                Part::Routed,
                &mut out,
            );
            if cfg.shared_experts > 0 {
                let at = out.len();
                mlp(cfg, cfg.shared_intermediate, 1, Part::Dense, &mut out);
                for (m, name) in out[at..].iter_mut().zip(if cfg.gated_mlp {
                    &[
                        "shared_experts.gate_proj",
                        "shared_experts.up_proj",
                        "shared_experts.down_proj",
                    ][..]
                } else {
                    &["shared_experts.up_proj", "shared_experts.down_proj"][..]
                }) {
                    m.name = name;
                }
            }
        }
        Ffn::None => {}
    }
    out
}

/// Parameters of one layer of `kind` without its norms: the mixer's and the
/// feed-forward's ([`ModelConfig::try_mixer_params`], [`ModelConfig::try_ffn_params`]).
pub(super) fn layer_params(cfg: &ModelConfig, kind: &LayerKind) -> f64 {
    let mixer = cfg.try_mixer_params(kind.mixer).unwrap_or(0);
    let ffn = cfg.try_ffn_params(kind.ffn).map_or(0, |(all, _)| all);
    mixer as f64 + ffn as f64
}

/// Of [`layer_params`], the routed experts' weights (with their biases).
pub(super) fn routed_params(cfg: &ModelConfig, kind: &LayerKind) -> f64 {
    if kind.is_moe() {
        cfg.expert_params() as f64 * cfg.experts as f64
    } else {
        0.0
    }
}

/// The layers of `range` clamped to the model.
fn clamp(cfg: &ModelConfig, range: Range<usize>) -> Range<usize> {
    let n = cfg.layer_kinds.len();
    range.start.min(n)..range.end.min(n)
}

/// `f(kind) · count` summed over the layer kinds of `range`.
pub(super) fn sum_over(
    cfg: &ModelConfig,
    range: Range<usize>,
    f: impl Fn(&LayerKind) -> f64,
) -> f64 {
    cfg.kinds_in(clamp(cfg, range))
        .iter()
        .map(|(kind, n)| f(kind) * *n as f64)
        .sum()
}

/// The largest `f(kind)` over the layer kinds of `range` (0 when empty).
pub(super) fn max_over(
    cfg: &ModelConfig,
    range: Range<usize>,
    f: impl Fn(&LayerKind) -> f64,
) -> f64 {
    cfg.kinds_in(clamp(cfg, range))
        .iter()
        .map(|(kind, _)| f(kind))
        .fold(0.0, f64::max)
}

/// LoRA adapter parameters of one layer of `kind` (before tensor parallelism):
/// `r · (d_in + d_out)` per adapted matrix.
pub(super) fn lora_params_of(
    cfg: &ModelConfig,
    kind: &LayerKind,
    rank: u64,
    targets: LoraTargets,
) -> f64 {
    rank as f64
        * matrices(cfg, kind)
            .iter()
            .filter(|m| m.adapted(targets))
            .map(Matrix::rows_plus_cols)
            .sum::<f64>()
}

/// Of [`lora_params_of`], the adapters on routed experts.
pub(super) fn lora_routed_of(
    cfg: &ModelConfig,
    kind: &LayerKind,
    rank: u64,
    targets: LoraTargets,
) -> f64 {
    rank as f64
        * matrices(cfg, kind)
            .iter()
            .filter(|m| m.adapted(targets) && m.part == Part::Routed)
            .map(Matrix::rows_plus_cols)
            .sum::<f64>()
}

/// Matrices LoRA adapts in one layer of `kind` (copies counted).
pub(super) fn lora_matrices_of(cfg: &ModelConfig, kind: &LayerKind, targets: LoraTargets) -> f64 {
    matrices(cfg, kind)
        .iter()
        .filter(|m| m.adapted(targets))
        .map(|m| m.copies as f64)
        .sum()
}

/// Every adapted matrix of the model, once per kind, as candidates for the smallest
/// one: a matrix whose shape repeats its predecessor's smaller side (k after q's
/// sibling v, gate and up beside down) is left out, so the name given is the first of
/// its shape in the order q, v, o, down.
pub(super) fn rank_candidates(cfg: &ModelConfig, targets: LoraTargets) -> Vec<Matrix> {
    const TWINS: [&str; 7] = [
        "k_proj",
        "gate_proj",
        "up_proj",
        "experts.gate_proj",
        "experts.up_proj",
        "shared_experts.gate_proj",
        "shared_experts.up_proj",
    ];
    let mut out = Vec::new();
    for (kind, _) in cfg.kind_counts() {
        for m in matrices(cfg, &kind) {
            if m.adapted(targets) && !TWINS.contains(&m.name) && !out.contains(&m) {
                out.push(m);
            }
        }
    }
    out
}
