//! State-space blocks: Mamba-2 ([`SsmDims`], Nemotron-H) and Mamba-1 ([`MambaDims`],
//! Jamba), their parameters and fixed per-sequence state, and the reading of hybrid layer
//! layouts (Nemotron-H's `hybrid_override_pattern`, where each layer is a single Mamba-2,
//! attention or MLP block; Jamba's attention and expert periods).
//!
//! Shapes follow the Mamba-2 paper (Dao & Gu 2024, <https://arxiv.org/abs/2405.21060>,
//! section 7 "the Mamba-2 block") and `mamba_ssm`'s `Mamba2` module as Hugging Face's
//! `NemotronHMamba2Mixer` builds it: `in_proj` maps the hidden state to the gate `z`
//! (`d_inner`), the convolved `x, B, C` (`d_inner + 2·n_groups·d_state`) and one step
//! size `dt` per head; a depthwise causal convolution of width `conv_kernel` runs over
//! `x, B, C`; per head a `dt_bias`, `A_log` and skip `D`; a gated RMSNorm over
//! `d_inner`; `out_proj` maps `d_inner` back to the hidden width.

use super::fields::Fields;
use super::{Ffn, Mixer};
use crate::dtype::Format;
use crate::error::Result;
use serde::Serialize;

/// Mamba-2 (state-space duality) block dimensions (Nemotron-H `config.json`).
#[derive(Debug, Clone, Copy, PartialEq, Serialize)]
pub struct SsmDims {
    /// SSM heads (`mamba_num_heads`), each with its own step size, decay and state.
    pub heads: u64,
    /// Channels per head (`mamba_head_dim`).
    pub head_dim: u64,
    /// State size per channel (`ssm_state_size`, N in the paper).
    pub d_state: u64,
    /// Groups sharing one `B` and `C` projection (`n_groups`), like GQA's KV heads.
    pub groups: u64,
    /// Causal convolution width (`conv_kernel`).
    pub conv_kernel: u64,
    /// Chunk length of the chunked (SSD) scan in prefill (`chunk_size`).
    pub chunk: u64,
    /// Biases on `in_proj` and `out_proj` (`use_bias`).
    pub bias: bool,
    /// Bias on the convolution (`use_conv_bias`).
    pub conv_bias: bool,
    /// Format the engine keeps the SSM state in (`mamba_ssm_cache_dtype`); `None`: the
    /// activation dtype, as vLLM ("auto"), TensorRT-LLM and `mamba_ssm`'s own inference
    /// cache keep it when the config does not say.
    pub state_format: Option<Format>,
}

impl SsmDims {
    /// Inner width `heads · head_dim` (`expand · hidden` in the paper's terms).
    pub(crate) fn d_inner(&self) -> u64 {
        self.heads * self.head_dim
    }

    /// Width of `B` and `C` together: `2 · n_groups · d_state`.
    pub(crate) fn bc_width(&self) -> u64 {
        2 * self.groups * self.d_state
    }

    /// Channels of the causal convolution (`x`, `B`, `C`).
    pub(crate) fn conv_channels(&self) -> u64 {
        self.d_inner() + self.bc_width()
    }

    /// Output width of `in_proj`: `z`, `x`, `B`, `C` and `dt`.
    pub(crate) fn in_proj_width(&self) -> u64 {
        2 * self.d_inner() + self.bc_width() + self.heads
    }

    /// Parameters of one block: `in_proj` `h·(2·d_inner + 2·G·N + H)`, the convolution
    /// `(d_inner + 2·G·N)·k` (+ a bias per channel), `dt_bias`, `A_log` and `D` (`3·H`),
    /// the gated norm `d_inner`, `out_proj` `d_inner·h` (+ biases with `use_bias`).
    pub(crate) fn try_params(&self, hidden: u64) -> Option<u64> {
        let w = self.in_proj_width();
        let c = self.conv_channels();
        let mut p = hidden
            .checked_mul(w)?
            .checked_add(c.checked_mul(self.conv_kernel)?)?
            .checked_add(self.heads.checked_mul(3)?)?
            .checked_add(self.d_inner())?
            .checked_add(self.d_inner().checked_mul(hidden)?)?;
        if self.conv_bias {
            p = p.checked_add(c)?;
        }
        if self.bias {
            p = p.checked_add(w)?.checked_add(hidden)?;
        }
        Some(p)
    }

    /// State elements per sequence per layer: the SSM state `heads · head_dim · d_state`
    /// and the convolution's last `conv_kernel - 1` inputs over its channels.
    pub(crate) fn state_elems(&self) -> (u64, u64) {
        (
            self.d_inner() * self.d_state,
            self.conv_kernel.saturating_sub(1) * self.conv_channels(),
        )
    }

    /// Bytes per element of the SSM state with activations of `act` bytes.
    pub(crate) fn state_bytes(&self, act: f64) -> f64 {
        self.state_format.map_or(act, |f| f.bits() / 8.0)
    }

    /// Bytes one block keeps per sequence (all tensor-parallel ranks together): the SSM
    /// state at [`SsmDims::state_bytes`] and the convolution window at `act` bytes.
    pub(crate) fn bytes_per_sequence(&self, act: f64) -> f64 {
        let (state, conv) = self.state_elems();
        state as f64 * self.state_bytes(act) + conv as f64 * act
    }
}

/// The Mamba-2 dimensions of a config that has them (`ssm_state_size` present).
pub(super) fn read(f: &Fields, hidden: u64) -> Result<Option<SsmDims>> {
    let Some(d_state) = f.uint(&["ssm_state_size"])? else {
        return Ok(None);
    };
    let head_dim = f.req(&["mamba_head_dim"])?;
    let heads = match f.uint(&["mamba_num_heads"])? {
        Some(h) => h,
        None => {
            let expand = f.req(&["expand"])?;
            let inner = hidden.saturating_mul(expand);
            if inner % head_dim != 0 {
                return Err(f.error(format!(
                    "field mamba_head_dim: {head_dim} does not divide expand · hidden_size = {inner} (give mamba_num_heads)"
                )));
            }
            inner / head_dim
        }
    };
    let groups = f.req(&["n_groups"])?;
    if heads % groups != 0 {
        return Err(f.error(format!(
            "field n_groups: {groups} does not divide mamba_num_heads {heads}"
        )));
    }
    let state_format = state_format(f)?;
    Ok(Some(SsmDims {
        heads,
        head_dim,
        d_state,
        groups,
        conv_kernel: f.uint(&["conv_kernel"])?.unwrap_or(4),
        chunk: f.uint(&["chunk_size"])?.unwrap_or(256),
        bias: f.boolean(&["use_bias"], false)?,
        conv_bias: f.boolean(&["use_conv_bias"], true)?,
        state_format,
    }))
}

/// The SSM state's format from `mamba_ssm_cache_dtype` (`None`: absent or `auto`, the
/// activation dtype).
fn state_format(f: &Fields) -> Result<Option<Format>> {
    let name = f
        .string(&["mamba_ssm_cache_dtype"])
        .map(str::to_ascii_lowercase);
    match name.as_deref() {
        None | Some("auto") => Ok(None),
        Some("float32" | "fp32") => Ok(Some(Format::Fp32)),
        Some("bfloat16" | "bf16") => Ok(Some(Format::Bf16)),
        Some("float16" | "fp16" | "half") => Ok(Some(Format::Fp16)),
        Some(other) => Err(f.error(format!(
            "field mamba_ssm_cache_dtype: '{other}' is not a state dtype ridgeline knows (float32, bfloat16, float16, auto)"
        ))),
    }
}

/// Mamba-1 (selective state space, Gu & Dao 2023, <https://arxiv.org/abs/2312.00752>)
/// block dimensions as Jamba's `config.json` gives them. Shapes as Hugging Face's
/// `JambaMambaMixer` builds them: `in_proj` maps the hidden state to `x` and the gate `z`
/// (`2·d_inner`); a depthwise causal convolution over `x`; `x_proj` maps `x` to the step
/// rank, `B` and `C` (`dt_rank + 2·d_state`), with RMSNorms on each (Jamba's); `dt_proj`
/// maps the rank to a step size per channel; `A` (`d_inner × d_state`) and a skip `D`
/// per channel; `out_proj` maps `d_inner` back to the hidden width.
#[derive(Debug, Clone, Copy, PartialEq, Serialize)]
pub struct MambaDims {
    /// Inner width (`mamba_expand · hidden_size`): channels, each with its own state.
    pub d_inner: u64,
    /// State size per channel (`mamba_d_state`).
    pub d_state: u64,
    /// Rank of the step-size projection (`mamba_dt_rank`).
    pub dt_rank: u64,
    /// Causal convolution width (`mamba_d_conv`).
    pub conv_kernel: u64,
    /// Bias on the convolution (`mamba_conv_bias`).
    pub conv_bias: bool,
    /// Biases on `in_proj` and `out_proj` (`mamba_proj_bias`).
    pub bias: bool,
    /// Format of the SSM state (`mamba_ssm_cache_dtype`; `None`: the activation dtype).
    pub state_format: Option<Format>,
}

impl MambaDims {
    /// Parameters of one block: `in_proj` `h·2·d`, the convolution `d·k` (+ `d` biases),
    /// `x_proj` `d·(r + 2·N)` with norms `r + 2·N`, `dt_proj` `r·d + d`, `A` `d·N`, `D`
    /// `d`, `out_proj` `d·h` (+ biases with `mamba_proj_bias`).
    pub(crate) fn try_params(&self, hidden: u64) -> Option<u64> {
        let (d, n, r) = (self.d_inner, self.d_state, self.dt_rank);
        let rbc = r.checked_add(n.checked_mul(2)?)?;
        let mut p = hidden
            .checked_mul(d.checked_mul(2)?)?
            .checked_add(d.checked_mul(self.conv_kernel)?)?
            .checked_add(d.checked_mul(rbc)?)?
            .checked_add(rbc)?
            .checked_add(r.checked_mul(d)?.checked_add(d)?)?
            .checked_add(d.checked_mul(n)?)?
            .checked_add(d)?
            .checked_add(d.checked_mul(hidden)?)?;
        if self.conv_bias {
            p = p.checked_add(d)?;
        }
        if self.bias {
            p = p.checked_add(d.checked_mul(2)?)?.checked_add(hidden)?;
        }
        Some(p)
    }

    /// State elements per sequence per layer: `d_inner · d_state` and the convolution's
    /// last `conv_kernel - 1` inputs over `d_inner` channels.
    pub(crate) fn state_elems(&self) -> (u64, u64) {
        (
            self.d_inner * self.d_state,
            self.conv_kernel.saturating_sub(1) * self.d_inner,
        )
    }

    /// Bytes per element of the SSM state with activations of `act` bytes.
    pub(crate) fn state_bytes(&self, act: f64) -> f64 {
        self.state_format.map_or(act, |f| f.bits() / 8.0)
    }

    /// Bytes one block keeps per sequence (all tensor-parallel ranks together): the SSM
    /// state at [`MambaDims::state_bytes`] and the convolution window at `act` bytes.
    pub(crate) fn bytes_per_sequence(&self, act: f64) -> f64 {
        let (state, conv) = self.state_elems();
        state as f64 * self.state_bytes(act) + conv as f64 * act
    }
}

/// The Mamba-1 dimensions of a Jamba config (`model_type` jamba with `mamba_d_state`).
pub(super) fn read_mamba1(f: &Fields, family: &str, hidden: u64) -> Result<Option<MambaDims>> {
    if family != "jamba" {
        return Ok(None);
    }
    let Some(d_state) = f.uint(&["mamba_d_state"])? else {
        return Ok(None);
    };
    let expand = f.uint(&["mamba_expand"])?.unwrap_or(2);
    Ok(Some(MambaDims {
        d_inner: hidden.saturating_mul(expand),
        d_state,
        dt_rank: f.uint(&["mamba_dt_rank"])?.unwrap_or(hidden.div_ceil(16)),
        conv_kernel: f.uint(&["mamba_d_conv"])?.unwrap_or(4),
        conv_bias: f.boolean(&["mamba_conv_bias"], true)?,
        bias: f.boolean(&["mamba_proj_bias"], false)?,
        state_format: state_format(f)?,
    }))
}

/// Jamba's mixers: attention on the layers `i` with `i % attn_layer_period ==
/// attn_layer_offset`, Mamba-1 on the others.
pub(super) fn jamba_mixers(f: &Fields, n: usize) -> Result<Vec<Mixer>> {
    let period = f.req(&["attn_layer_period"])?;
    let offset = f.count(&["attn_layer_offset"])?.unwrap_or(0);
    if offset >= period {
        return Err(f.error(format!(
            "field attn_layer_offset: {offset} is not below attn_layer_period {period}"
        )));
    }
    Ok((0..n as u64)
        .map(|i| {
            if i % period == offset {
                Mixer::Attention
            } else {
                Mixer::Mamba1
            }
        })
        .collect())
}

/// Each layer's mixer and feed-forward from a `hybrid_override_pattern` (Nemotron-H: one
/// character per layer, `M` a Mamba-2 block, `*` an attention block, `-` an MLP block,
/// `E` a mixture-of-experts block), or `None` when the config has no pattern.
pub(super) fn pattern(f: &Fields, n: usize, ssm: bool) -> Result<Option<Vec<(Mixer, Ffn)>>> {
    let Some(v) = f.get(&["hybrid_override_pattern"]) else {
        return Ok(None);
    };
    let Some(text) = v.as_str() else {
        return Err(f.error(format!(
            "field hybrid_override_pattern: expected a string of layer codes (M, *, -, E), got {v}"
        )));
    };
    if text.chars().count() != n {
        return Err(f.error(format!(
            "field hybrid_override_pattern: {} layer codes for num_hidden_layers {n}",
            text.chars().count()
        )));
    }
    let layers = text
        .chars()
        .map(|c| match c {
            'M' if ssm => Ok((Mixer::Ssm, Ffn::None)),
            'M' => Err(f.error(
                "field hybrid_override_pattern: Mamba-2 layers (M) need ssm_state_size, mamba_head_dim and n_groups".into(),
            )),
            '*' => Ok((Mixer::Attention, Ffn::None)),
            '-' => Ok((Mixer::None, Ffn::Dense)),
            'E' => Ok((Mixer::None, Ffn::Moe)),
            other => Err(f.error(format!(
                "field hybrid_override_pattern: layer code '{other}' is not one ridgeline knows (M: Mamba-2, *: attention, -: MLP, E: mixture of experts)"
            ))),
        })
        .collect::<Result<Vec<_>>>()?;
    Ok(Some(layers))
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Nemotron-H-56B's Mamba-2 block (`hidden_size` 8192, `mamba_num_heads` 256 ·
    /// `mamba_head_dim` 64, `ssm_state_size` 256, `n_groups` 8, `conv_kernel` 4, conv
    /// bias, no projection biases).
    fn nemotron_56b() -> SsmDims {
        SsmDims {
            heads: 256,
            head_dim: 64,
            d_state: 256,
            groups: 8,
            conv_kernel: 4,
            chunk: 128,
            bias: false,
            conv_bias: true,
            state_format: None,
        }
    }

    #[test]
    fn mamba2_block_params_by_hand() {
        // d_inner 16,384; B and C 2·8·256 = 4,096; in_proj 8192·(2·16384 + 4096 + 256)
        // = 304,087,040; conv 20,480 channels · 4 taps + 20,480 biases = 102,400;
        // dt_bias, A_log, D 3·256 = 768; norm 16,384; out_proj 16384·8192 = 134,217,728:
        // 438,424,320 in all.
        assert_eq!(nemotron_56b().try_params(8192), Some(438_424_320));
    }

    /// A small Nemotron-H-style config with `extra` fields merged over it.
    fn config(extra: &str) -> Result<super::super::ModelConfig> {
        let mut v: serde_json::Value = serde_json::from_str(
            r#"{"model_type":"nemotron_h","hidden_size":256,"num_hidden_layers":4,
            "num_attention_heads":4,"num_key_value_heads":2,"intermediate_size":512,
            "vocab_size":1000,"hybrid_override_pattern":"M*-M","mamba_num_heads":8,
            "mamba_head_dim":32,"ssm_state_size":16,"n_groups":2}"#,
        )
        .unwrap();
        let e: serde_json::Value = serde_json::from_str(extra).unwrap();
        for (k, x) in e.as_object().unwrap() {
            v[k] = x.clone();
        }
        super::super::ModelConfig::from_json_str(&v.to_string(), "t", "cfg.json")
    }

    #[test]
    fn bad_hybrid_configs_name_the_field() {
        assert!(config("{}").is_ok());
        for (extra, want) in [
            (
                r#"{"hybrid_override_pattern":"M*-"}"#,
                "hybrid_override_pattern: 3 layer codes for num_hidden_layers 4",
            ),
            (
                r#"{"hybrid_override_pattern":"M*-X"}"#,
                "layer code 'X' is not one",
            ),
            (r#"{"hybrid_override_pattern":7}"#, "expected a string"),
            (
                r#"{"n_groups":3}"#,
                "n_groups: 3 does not divide mamba_num_heads 8",
            ),
            (
                r#"{"mamba_ssm_cache_dtype":"q4_0"}"#,
                "mamba_ssm_cache_dtype: 'q4_0'",
            ),
            (r#"{"ssm_state_size":null}"#, "Mamba-2 layers (M) need"),
            (r#"{"mamba_num_heads":null}"#, "missing field expand"),
            (
                r#"{"hybrid_override_pattern":null}"#,
                "field ssm_state_size: Mamba-2 blocks need a hybrid_override_pattern",
            ),
            (
                r#"{"mamba_d_state":16}"#,
                "field mamba_d_state: the mamba_* state-space layers of this model_type",
            ),
            (
                r#"{"model_type":"jamba","mamba_d_state":16,"ssm_state_size":null,"hybrid_override_pattern":null}"#,
                "missing field attn_layer_period",
            ),
            (
                r#"{"model_type":"jamba","mamba_d_state":16,"ssm_state_size":null,"hybrid_override_pattern":null,
                "attn_layer_period":4,"attn_layer_offset":4}"#,
                "attn_layer_offset: 4 is not below attn_layer_period 4",
            ),
        ] {
            let e = config(extra).unwrap_err().to_string();
            assert!(e.contains(want), "{extra}: {e}");
        }
        // without mamba_num_heads: expand · hidden / head_dim = 2 · 256 / 32 = 16 heads
        let m = config(r#"{"mamba_num_heads":null,"expand":2}"#).unwrap();
        assert_eq!(m.ssm.unwrap().heads, 16);
    }

    #[test]
    fn state_per_sequence_by_hand() {
        // SSM state 256 heads · 64 · 256 = 4,194,304 values; conv window (4 - 1) ·
        // (16,384 + 4,096) = 61,440 values (the staging notes' figures).
        let d = nemotron_56b();
        assert_eq!(d.state_elems(), (4_194_304, 61_440));
        assert_eq!(d.state_bytes(2.0), 2.0);
        let fp32 = SsmDims {
            state_format: Some(Format::Fp32),
            ..d
        };
        assert_eq!(fp32.state_bytes(2.0), 4.0);
    }
}
