//! Matrix multiplication: GEMM, GEMV, batched matmul, and the linear layer.

use super::{ByteClasses, Cost, bytes_of};

/// One matmul operand: its element width and what class of data it is.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Operand {
    /// Bits per element, including quantization scales.
    pub bits: f64,
    /// Class the bytes are counted under.
    pub class: Class,
}

/// What a tensor holds, for splitting bytes by class.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Class {
    /// Model weights.
    Weights,
    /// Activations.
    Activations,
    /// KV cache.
    Kv,
}

impl Operand {
    /// A weight operand of `bits` per element.
    pub fn weights(bits: f64) -> Self {
        Operand {
            bits,
            class: Class::Weights,
        }
    }
    /// An activation operand of `bits` per element.
    pub fn activations(bits: f64) -> Self {
        Operand {
            bits,
            class: Class::Activations,
        }
    }
    /// A KV-cache operand of `bits` per element.
    pub(crate) fn kv(bits: f64) -> Self {
        Operand {
            bits,
            class: Class::Kv,
        }
    }
}

pub(crate) fn classed(class: Class, bytes: f64) -> ByteClasses {
    match class {
        Class::Weights => ByteClasses {
            weights: bytes,
            ..Default::default()
        },
        Class::Activations => ByteClasses {
            activations: bytes,
            ..Default::default()
        },
        Class::Kv => ByteClasses {
            kv: bytes,
            ..Default::default()
        },
    }
}

/// Batched GEMM `C[b] = A[b] · B[b]` with `A: [m, k]`, `B: [k, n]`, `C: [m, n]`, `batch`
/// independent products (use `batch = 1` for a plain GEMM, `m = 1` for a GEMV).
///
/// Counting rule: FLOPs = `2 · batch · m · n · k` (one multiply-add per `m·n·k` term);
/// bytes = A, B and C each moved once at their own width: reads `batch·m·k·a.bits/8 +
/// batch·k·n·b.bits/8`, writes `batch·m·n·c.bits/8`.
///
/// ```
/// use ridgeline_core::ops::{gemm, Operand};
/// // GEMV 1x4096 · 4096x4096 in fp16: 2·4096·4096 = 33,554,432 FLOPs;
/// // bytes = 4096·4096·2 (weights) + 4096·2 (x) + 4096·2 (y) = 33,570,816.
/// let c = gemm(1, 1, 4096, 4096, Operand::activations(16.0), Operand::weights(16.0), Operand::activations(16.0));
/// assert_eq!(c.flops, 33_554_432.0);
/// assert_eq!(c.bytes(), 33_570_816.0);
/// ```
pub fn gemm(batch: u64, m: u64, n: u64, k: u64, a: Operand, b: Operand, c: Operand) -> Cost {
    let (batch, m, n, k) = (batch as f64, m as f64, n as f64, k as f64);
    Cost {
        flops: 2.0 * batch * m * n * k,
        read: classed(a.class, bytes_of(batch * m * k, a.bits))
            + classed(b.class, bytes_of(batch * k * n, b.bits)),
        written: classed(c.class, bytes_of(batch * m * n, c.bits)),
        link_bytes: 0.0,
    }
}

/// A linear layer `y = x · W` (+ bias) over `tokens` rows: `x: [tokens, d_in]`,
/// `W: [d_in, d_out]` read **once** for all tokens (that reuse is what makes large
/// batches compute-bound), `y: [tokens, d_out]` written in `out_bits` (pass the KV
/// format to model k/v projections writing straight into the cache).
///
/// Counting rule: FLOPs = `2 · tokens · d_in · d_out` (+ `tokens · d_out` for the bias
/// add); weight bytes = `d_in · d_out · w_bits/8` (+ `d_out` bias elements at 16 bits
/// when present); activation reads `tokens · d_in · act_bits/8`; writes
/// `tokens · d_out · out_bits/8`.
pub fn linear(
    tokens: u64,
    d_in: u64,
    d_out: u64,
    w_bits: f64,
    act_bits: f64,
    out: Operand,
    bias: bool,
) -> Cost {
    let mut c = gemm(
        1,
        tokens,
        d_out,
        d_in,
        Operand::activations(act_bits),
        Operand::weights(w_bits),
        out,
    );
    if bias {
        c.flops += tokens as f64 * d_out as f64;
        c.read.weights += bytes_of(d_out as f64, 16.0);
    }
    c
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn square_gemm_intensity() {
        // 4096^3 bf16 GEMM: 2·4096^3 = 137,438,953,472 FLOPs; 3 matrices of 4096^2·2 bytes
        // = 100,663,296 bytes; intensity = 137438953472 / 100663296 = 1365.33.
        let op = Operand::activations(16.0);
        let c = gemm(1, 4096, 4096, 4096, op, op, op);
        assert_eq!(c.flops, 137_438_953_472.0);
        assert_eq!(c.bytes(), 100_663_296.0);
        assert!((c.intensity() - 1365.333).abs() < 1e-3);
    }

    #[test]
    fn q4_0_weights_are_4_5_bits() {
        // GEMV 1x4096x4096 with q4_0 weights: 4096·4096·4.5/8 = 9,437,184 weight bytes.
        let c = linear(1, 4096, 4096, 4.5, 16.0, Operand::activations(16.0), false);
        assert_eq!(c.read.weights, 9_437_184.0);
        assert_eq!(c.read.activations, 8192.0);
        assert_eq!(c.written.activations, 8192.0);
    }

    #[test]
    fn batch_reuses_weights() {
        // 64 tokens read the weights once: weight bytes equal the 1-token case.
        let up = |tokens| {
            linear(
                tokens,
                4096,
                11008,
                16.0,
                16.0,
                Operand::activations(16.0),
                false,
            )
        };
        let (one, many) = (up(1), up(64));
        assert_eq!(one.read.weights, many.read.weights);
        assert_eq!(many.flops, 64.0 * one.flops);
        assert!(many.intensity() > 60.0 * one.intensity() * 0.9);
    }

    #[test]
    fn bias_adds_flops_and_bytes() {
        // 8 tokens x 16 out: bias adds 128 FLOPs and 16 · 2 bytes.
        let no = linear(8, 32, 16, 16.0, 16.0, Operand::activations(16.0), false);
        let yes = linear(8, 32, 16, 16.0, 16.0, Operand::activations(16.0), true);
        assert_eq!(yes.flops - no.flops, 128.0);
        assert_eq!(yes.read.weights - no.read.weights, 32.0);
    }
}
