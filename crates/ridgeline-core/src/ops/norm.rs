//! Normalization and softmax: memory-bound row reductions.

use super::{ByteClasses, Cost, bytes_of};

/// Which normalization.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum NormKind {
    /// RMSNorm (Llama, Mistral, Qwen): scale only.
    Rms,
    /// LayerNorm with scale and bias (GPT-2/3).
    Layer,
    /// LayerNorm with scale only (MPT's `no_bias`).
    LayerNoBias,
}

/// Normalization of `tokens` rows of width `width`.
///
/// Counting rule: FLOPs per element: RMSNorm 4 (square, accumulate, multiply by the
/// reciprocal root, multiply by γ); LayerNorm 7 (mean accumulate, subtract, square,
/// accumulate, normalize, γ, β), 6 without β. Bytes: input read and output written at
/// activation width; γ (and β) read once, `width` elements each at `param_bits`.
pub fn norm(kind: NormKind, tokens: u64, width: u64, act_bits: f64, param_bits: f64) -> Cost {
    let elems = tokens as f64 * width as f64;
    let (per_elem, params) = match kind {
        NormKind::Rms => (4.0, 1.0),
        NormKind::Layer => (7.0, 2.0),
        NormKind::LayerNoBias => (6.0, 1.0),
    };
    Cost {
        flops: per_elem * elems,
        read: ByteClasses {
            weights: bytes_of(params * width as f64, param_bits),
            activations: bytes_of(elems, act_bits),
            kv: 0.0,
        },
        written: ByteClasses {
            activations: bytes_of(elems, act_bits),
            ..Default::default()
        },
        link_bytes: 0.0,
    }
}

/// Softmax over `rows` rows of `cols` elements (the naive attention's score matrix).
///
/// Counting rule: 5 FLOPs per element (max, subtract, exponential, sum, divide); each
/// element read once and written once at `act_bits`.
pub fn softmax(rows: u64, cols: u64, act_bits: f64) -> Cost {
    let elems = rows as f64 * cols as f64;
    super::elementwise::rw(elems, elems, act_bits, 5.0 * elems)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn rmsnorm_hand_count() {
        // 512 tokens x 4096, fp16: FLOPs 4·512·4096 = 8,388,608;
        // bytes = 2 · 512·4096·2 (in+out) + 4096·2 (γ) = 8,396,800.
        let c = norm(NormKind::Rms, 512, 4096, 16.0, 16.0);
        assert_eq!(c.flops, 8_388_608.0);
        assert_eq!(c.bytes(), 8_396_800.0);
    }

    #[test]
    fn layernorm_reads_beta_too() {
        let c = norm(NormKind::Layer, 1, 2048, 16.0, 16.0);
        assert_eq!(c.read.weights, 2.0 * 2048.0 * 2.0);
        assert_eq!(c.flops, 7.0 * 2048.0);
    }

    #[test]
    fn softmax_hand_count() {
        // 32 rows x 1024 in fp16: 5·32768 FLOPs, 2·32768·2 bytes.
        let c = softmax(32, 1024, 16.0);
        assert_eq!(c.flops, 163_840.0);
        assert_eq!(c.bytes(), 131_072.0);
    }
}
