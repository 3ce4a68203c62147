//! The ops of state-space blocks: Mamba-2 (Nemotron-H) and Mamba-1 (Jamba).

use super::{Graph, OpKind, Pass, Unit, ceil_div};
use crate::model::SsmDims;
use crate::ops::{
    Activation, ScanShape, causal_conv1d, gated_activation, norm, selective_scan, ssm_scan,
};

impl Pass<'_> {
    /// A Mamba-2 block: a fixed-size state per sequence instead of a KV cache, so its
    /// cost per token does not grow with the context. Tensor parallelism splits the
    /// heads (and the `B`/`C` groups, replicated where fewer than `tp`, as vLLM does);
    /// `out_proj` ends in the layer's all-reduce.
    ///
    /// Ops, per token on one device with `H` heads of `P` channels, `G` groups, state
    /// size `N`, `d = H·P`:
    /// - `ssm_in_proj`: `hidden → 2·d + 2·G·N + H` (gate `z`, `x`, `B`, `C`, step sizes);
    /// - `short_conv`: the causal convolution over `d + 2·G·N` channels
    ///   ([`crate::ops::causal_conv1d`]), its window of `conv_kernel - 1` inputs per
    ///   sequence read and written once per pass;
    /// - `ssm_scan`: [`crate::ops::ssm_scan`], one recurrent step per token in decode
    ///   (`5·P·N + 2·P` per head), the chunked SSD form in prefill; the `H·P·N` state per
    ///   sequence read and written once per pass;
    /// - `ssm_norm`: the gated RMSNorm `norm(y ⊙ silu(z))` over `d`;
    /// - `o_proj`: `out_proj`, `d → hidden`.
    pub(super) fn ssm(&self, g: &mut Graph, l: f64, d: &SsmDims) {
        let (h, t) = (self.cfg.hidden, self.tokens);
        let heads = ceil_div(d.heads, self.tp);
        let groups = ceil_div(d.groups, self.tp);
        let inner = heads * d.head_dim;
        let bc = 2 * groups * d.d_state;
        let in_proj = self.linear(h, 2 * inner + bc + heads, self.w_bits, self.act, d.bias);
        g.push(OpKind::SsmInProj, l, in_proj, self.matmul);
        let conv = causal_conv1d(
            self.step.batch,
            t,
            inner + bc,
            d.conv_kernel,
            d.conv_bias,
            self.act_bits,
        );
        g.push(OpKind::ShortConv, l, conv, Unit::Vector);
        let shape = ScanShape {
            sequences: self.step.batch,
            new_tokens: self.step.new_tokens,
            heads,
            head_dim: d.head_dim,
            d_state: d.d_state,
            groups,
            chunk: d.chunk,
            act_bits: self.act_bits,
            state_bits: 8.0 * d.state_bytes(self.act_bits / 8.0),
        };
        g.push(OpKind::SsmScan, l, ssm_scan(&shape), self.attn_unit);
        let gated = norm(self.cfg.norm, t, inner, self.act_bits, 16.0)
            + gated_activation(Activation::Silu, t, inner, self.act_bits);
        g.push(OpKind::SsmNorm, l, gated, Unit::Vector);
        let o = self.linear(inner, h, self.w_bits, self.act, d.bias);
        g.push(OpKind::OProj, l, o, self.matmul);
    }
}

impl Pass<'_> {
    /// A Mamba-1 block (Jamba): like [`Pass::ssm`] a fixed state per sequence, split over
    /// tensor-parallel ranks by channels.
    ///
    /// Ops, per token on one device with `d` channels, state size `N`, step rank `r`:
    /// - `ssm_in_proj`: `hidden → 2·d` (`x` and the gate `z`);
    /// - `short_conv`: the causal convolution over `d` channels;
    /// - `ssm_x_proj`: `x_proj` `d → r + 2·N` with the norms on the step rank, `B` and
    ///   `C`, then `dt_proj` `r → d`;
    /// - `ssm_scan`: [`crate::ops::selective_scan`], `7·N + 2` FLOPs per channel in both
    ///   phases; the `d·N` state per sequence read and written once per pass;
    /// - `ssm_gate`: `y ⊙ silu(z)`;
    /// - `o_proj`: `out_proj`, `d → hidden`.
    pub(super) fn mamba1(&self, g: &mut Graph, l: f64) {
        let Some(d) = self.cfg.mamba else {
            return;
        };
        let (h, t, act) = (self.cfg.hidden, self.tokens, self.act);
        let inner = ceil_div(d.d_inner, self.tp);
        let in_proj = self.linear(h, 2 * inner, self.w_bits, act, d.bias);
        g.push(OpKind::SsmInProj, l, in_proj, self.matmul);
        let conv = causal_conv1d(
            self.step.batch,
            t,
            inner,
            d.conv_kernel,
            d.conv_bias,
            self.act_bits,
        );
        g.push(OpKind::ShortConv, l, conv, Unit::Vector);
        let rbc = d.dt_rank + 2 * d.d_state;
        let x_proj = self.linear(inner, rbc, self.w_bits, act, false)
            + norm(self.cfg.norm, t, rbc, self.act_bits, 16.0)
            + self.linear(d.dt_rank, inner, self.w_bits, act, true);
        g.push(OpKind::SsmXProj, l, x_proj, self.matmul);
        let state_bits = 8.0 * d.state_bytes(self.act_bits / 8.0);
        let scan = selective_scan(
            self.step.batch,
            t,
            inner,
            d.d_state,
            self.act_bits,
            state_bits,
        );
        g.push(OpKind::SsmScan, l, scan, self.attn_unit);
        let gate = gated_activation(Activation::Silu, t, inner, self.act_bits);
        g.push(OpKind::SsmGate, l, gate, Unit::Vector);
        let o = self.linear(inner, h, self.w_bits, act, d.bias);
        g.push(OpKind::OProj, l, o, self.matmul);
    }
}
