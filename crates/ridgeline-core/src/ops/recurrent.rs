//! Operators of recurrent token mixers (linear attention, state-space blocks): the short
//! causal convolution in front of them and the Mamba-2 and Mamba-1 selective scans. Their state is a
//! fixed size per sequence, read and written once per pass whatever the context; it is
//! counted in the KV class, the bytes a KV cache would move.

use super::{ByteClasses, Cost, bytes_of};

/// Depthwise causal convolution of width `kernel` over `channels`, for `tokens` tokens of
/// `sequences` sequences (linear attention's and Mamba's short convolution).
///
/// Counting rule: a multiply-add per tap, `2 · kernel · channels` FLOPs per token (+
/// `channels` for the bias add); the `kernel · channels` weights (and `channels` biases)
/// read once at 16 bits; the input read and the output written at activation width; the
/// convolution's window, the last `kernel - 1` inputs of each sequence, read and written
/// once per sequence (KV class).
///
/// ```
/// use ridgeline_core::ops::causal_conv1d;
/// // one decode token, 10,240 channels, width 4, bf16: 2·4·10240 = 81,920 FLOPs;
/// // window 3·10240·2 = 61,440 bytes read and written again.
/// let c = causal_conv1d(1, 1, 10_240, 4, false, 16.0);
/// assert_eq!(c.flops, 81_920.0);
/// assert_eq!((c.read.kv, c.written.kv), (61_440.0, 61_440.0));
/// ```
pub fn causal_conv1d(
    sequences: u64,
    tokens: u64,
    channels: u64,
    kernel: u64,
    bias: bool,
    act_bits: f64,
) -> Cost {
    let (t, c, k) = (tokens as f64, channels as f64, kernel as f64);
    let b = if bias { 1.0 } else { 0.0 };
    let window = bytes_of(sequences as f64 * (k - 1.0).max(0.0) * c, act_bits);
    stateful(
        (2.0 * k + b) * c * t,
        bytes_of((k + b) * c, 16.0),
        bytes_of(t * c, act_bits),
        bytes_of(t * c, act_bits),
        window,
    )
}

/// An op that reads its `weights` and `inputs` and writes its `outputs` once (bytes),
/// and reads and writes the `state` each sequence carries from pass to pass (bytes,
/// KV class) once per pass.
fn stateful(flops: f64, weights: f64, inputs: f64, outputs: f64, state: f64) -> Cost {
    Cost {
        flops,
        read: ByteClasses {
            weights,
            activations: inputs,
            kv: state,
        },
        written: ByteClasses {
            activations: outputs,
            kv: state,
            ..Default::default()
        },
        link_bytes: 0.0,
    }
}

/// Shape of one Mamba-2 selective scan on one device.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct ScanShape {
    /// Sequences in the pass.
    pub sequences: u64,
    /// New tokens per sequence (1: one recurrent step).
    pub new_tokens: u64,
    /// SSM heads on this device.
    pub heads: u64,
    /// Channels per head (`P`).
    pub head_dim: u64,
    /// State size per channel (`N`).
    pub d_state: u64,
    /// `B`/`C` groups on this device.
    pub groups: u64,
    /// Chunk length of the chunked scan (`Q`, the model's `chunk_size`).
    pub chunk: u64,
    /// Activation width in bits (x, B, C, dt read; y written).
    pub act_bits: f64,
    /// State width in bits.
    pub state_bits: f64,
}

impl ScanShape {
    /// FLOPs per token: one recurrent step, or the chunked (SSD) form (see [`ssm_scan`]).
    pub(crate) fn flops_per_token(&self) -> f64 {
        let (h, p, n, g) = (
            self.heads as f64,
            self.head_dim as f64,
            self.d_state as f64,
            self.groups as f64,
        );
        if self.new_tokens <= 1 {
            return h * (5.0 * p * n + 2.0 * p);
        }
        let q = self.new_tokens.min(self.chunk.max(1)) as f64;
        g * 2.0 * q * n + h * (2.0 * q * p + 4.0 * p * n + 2.0 * p * n / q + 2.0 * p)
    }
}

/// The Mamba-2 selective scan (state-space duality, Dao & Gu 2024,
/// <https://arxiv.org/abs/2405.21060>): per head `h` a state `S` of `P × N` (head dim ×
/// state size) updated by each token as `S ← exp(dt·A)·S + dt·x⊗B` and read out as
/// `y = S·C + D·x`.
///
/// Counting rule, per token and head:
/// - **one recurrent step** (decode, `new_tokens = 1`, what `selective_state_update`
///   runs): the decay `P·N` multiplies, the input `x⊗B` added `2·P·N`, the readout `S·C`
///   `2·P·N`, the skip `2·P`: `5·P·N + 2·P` FLOPs;
/// - **the chunked scan** (prefill, chunks of `Q = min(new_tokens, chunk_size)`, what
///   `mamba_chunk_scan_combined` runs): inside a chunk the scores `C·Bᵀ` cost `2·Q·N` per
///   token and group (the whole `Q × Q` block, as the kernel computes it, masked) and
///   their product with `x` `2·Q·P` per head; each chunk's state `Bᵀ·x` costs `2·P·N`
///   per token and head, passing states between chunks `2·P·N/Q`, and reading them out
///   `C·S` `2·P·N`; plus the skip `2·P`.
///
/// Bytes: `x`, `B`, `C` and `dt` read and `y` written once at activation width; the
/// state of every sequence (`heads · P · N` at `state_bits`) read once and written
/// once per pass, whatever the context (KV class). `A`, `D` and `dt_bias` (`3` per head)
/// are read at 16 bits.
///
/// ```
/// use ridgeline_core::ops::{ScanShape, ssm_scan};
/// // one decode token, Nemotron-H 8B's block: 128 heads · P 64 · N 128, 8 groups, bf16.
/// let s = ScanShape { sequences: 1, new_tokens: 1, heads: 128, head_dim: 64,
///     d_state: 128, groups: 8, chunk: 128, act_bits: 16.0, state_bits: 16.0 };
/// let c = ssm_scan(&s);
/// // 128 · (5·64·128 + 2·64) = 5,259,264 FLOPs; state 128·64·128·2 = 2,097,152 bytes
/// // read and written.
/// assert_eq!(c.flops, 5_259_264.0);
/// assert_eq!((c.read.kv, c.written.kv), (2_097_152.0, 2_097_152.0));
/// ```
pub fn ssm_scan(s: &ScanShape) -> Cost {
    let tokens = s.sequences as f64 * s.new_tokens as f64;
    let (h, p, n, g) = (
        s.heads as f64,
        s.head_dim as f64,
        s.d_state as f64,
        s.groups as f64,
    );
    let state = bytes_of(s.sequences as f64 * h * p * n, s.state_bits);
    let inputs = tokens * (h * p + 2.0 * g * n + h);
    stateful(
        tokens * s.flops_per_token(),
        bytes_of(3.0 * h, 16.0),
        bytes_of(inputs, s.act_bits),
        bytes_of(tokens * h * p, s.act_bits),
        state,
    )
}

/// The Mamba-1 selective scan (Gu & Dao 2023, <https://arxiv.org/abs/2312.00752>) over
/// `tokens` tokens of `sequences` sequences: per channel a state of `d_state` values with
/// its own decay `A` (channel × state) and step size, `S ← exp(dt·A)⊙S + dt·B·x`,
/// `y = C·S + D·x`.
///
/// Counting rule, per token and channel: the discretization `exp(dt·A)` `2·N` (a
/// multiply and an exponential per state element), the decay `N` multiplies, the input
/// `dt·B·x` `2·N`, the readout `C·S` `2·N`, the skip `2`: `7·N + 2` FLOPs. Prefill runs
/// the same recurrence as a parallel scan (the hardware-aware kernel of the paper, no
/// matmul form), so the count per token is the same in both phases. Bytes: `x` and `dt`
/// (a value per channel), `B` and `C` (`N` each) read and `y` written once at activation
/// width; `A` and `D` read at 16 bits; the state of every sequence (`channels · N` at
/// `state_bits`) read and written once per pass (KV class).
///
/// ```
/// use ridgeline_core::ops::selective_scan;
/// // one decode token, Jamba's block: 8192 channels, state 16, bf16:
/// // 8192 · (7·16 + 2) = 933,888 FLOPs; state 8192·16·2 = 262,144 bytes each way.
/// let c = selective_scan(1, 1, 8192, 16, 16.0, 16.0);
/// assert_eq!(c.flops, 933_888.0);
/// assert_eq!((c.read.kv, c.written.kv), (262_144.0, 262_144.0));
/// ```
pub fn selective_scan(
    sequences: u64,
    tokens: u64,
    channels: u64,
    d_state: u64,
    act_bits: f64,
    state_bits: f64,
) -> Cost {
    let (t, d, n) = (tokens as f64, channels as f64, d_state as f64);
    let state = bytes_of(sequences as f64 * d * n, state_bits);
    stateful(
        t * d * (7.0 * n + 2.0),
        bytes_of(d * n + d, 16.0),
        bytes_of(t * (2.0 * d + 2.0 * n), act_bits),
        bytes_of(t * d, act_bits),
        state,
    )
}

#[cfg(test)]
mod tests {
    use super::*;

    fn shape(new_tokens: u64) -> ScanShape {
        ScanShape {
            sequences: 2,
            new_tokens,
            heads: 256,
            head_dim: 64,
            d_state: 256,
            groups: 8,
            chunk: 128,
            act_bits: 16.0,
            state_bits: 32.0,
        }
    }

    #[test]
    fn chunked_scan_by_hand() {
        // Nemotron-H 56B, a 1,024-token prefill of 2 sequences, Q = 128: per token
        // 8·2·128·256 = 524,288 (scores per group) + 256·(2·128·64 + 4·64·256 +
        // 2·64·256/128 + 2·64) = 256·82,304 = 21,069,824: 21,594,112 FLOPs; × 2,048
        // tokens = 44,224,741,376.
        let c = ssm_scan(&shape(1024));
        assert_eq!(c.flops, 44_224_741_376.0);
        // fp32 state, 2 sequences: 2·256·64·256·4 = 33,554,432 bytes each way
        assert_eq!(c.read.kv, 33_554_432.0);
        assert_eq!(c.written.kv, 33_554_432.0);
        // x, B, C, dt: 2,048 · (16,384 + 4,096 + 256) · 2 bytes = 84,934,656
        assert_eq!(c.read.activations, 84_934_656.0);
    }

    #[test]
    fn state_traffic_does_not_depend_on_tokens() {
        // the state moves once per sequence per pass: 1 token or 4,096
        assert_eq!(ssm_scan(&shape(1)).read.kv, ssm_scan(&shape(4096)).read.kv);
        // a short prompt's chunk is the prompt: Q = 17
        let s = shape(17);
        let q17 = 8.0 * 2.0 * 17.0 * 256.0
            + 256.0 * (2.0 * 17.0 * 64.0 + 4.0 * 64.0 * 256.0 + 2.0 * 64.0 * 256.0 / 17.0 + 128.0);
        assert!((s.flops_per_token() - q17).abs() < 1e-6);
    }

    #[test]
    fn conv_with_bias() {
        // 3 tokens, 8 channels, width 4, bias: (2·4 + 1)·8·3 = 216 FLOPs; weights (4+1)·8·2
        // = 80 bytes
        let c = causal_conv1d(1, 3, 8, 4, true, 16.0);
        assert_eq!(c.flops, 216.0);
        assert_eq!(c.read.weights, 80.0);
    }
}
