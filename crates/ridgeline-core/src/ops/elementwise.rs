//! Elementwise operators: activations, the gated product of a SwiGLU MLP, residual adds
//! and rotary position embedding. All are memory-bound at any realistic size.

use super::{ByteClasses, Cost, bytes_of};

/// A pointwise activation function.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Activation {
    /// `x · sigmoid(x)`: 4 FLOPs (negate, exp, add, divide) + 1 multiply = 5.
    Silu,
    /// tanh-approximated GELU: ~8 FLOPs (cube, 2 multiplies, add, tanh, add, 2 multiplies).
    Gelu,
    /// `max(0, x)`: 1 FLOP.
    Relu,
}

impl Activation {
    /// FLOPs per element (see each variant).
    pub(crate) fn flops_per_element(self) -> f64 {
        match self {
            Activation::Silu => 5.0,
            Activation::Gelu => 8.0,
            Activation::Relu => 1.0,
        }
    }
}

/// `flops` over activations only: `elems_read` read and `elems_written` written at
/// `act_bits`.
pub(super) fn rw(elems_read: f64, elems_written: f64, act_bits: f64, flops: f64) -> Cost {
    Cost {
        flops,
        read: ByteClasses {
            activations: bytes_of(elems_read, act_bits),
            ..Default::default()
        },
        written: ByteClasses {
            activations: bytes_of(elems_written, act_bits),
            ..Default::default()
        },
        link_bytes: 0.0,
    }
}

/// `y = f(x)` over `tokens × width` elements (plain MLP: width is the intermediate size).
///
/// Counting rule: `Activation::flops_per_element` per element; read x, write y.
pub fn activation(f: Activation, tokens: u64, width: u64, act_bits: f64) -> Cost {
    let e = tokens as f64 * width as f64;
    rw(e, e, act_bits, f.flops_per_element() * e)
}

/// Gated MLP product `y = f(gate) ⊙ up` (SwiGLU/GeGLU), fused: over `tokens × width`.
///
/// Counting rule: `f` FLOPs + 1 multiply per element; reads gate and up, writes y.
pub fn gated_activation(f: Activation, tokens: u64, width: u64, act_bits: f64) -> Cost {
    let e = tokens as f64 * width as f64;
    rw(2.0 * e, e, act_bits, (f.flops_per_element() + 1.0) * e)
}

/// Residual add `y = x + r` over `tokens × width`: 1 FLOP per element; reads 2, writes 1.
pub fn residual_add(tokens: u64, width: u64, act_bits: f64) -> Cost {
    let e = tokens as f64 * width as f64;
    rw(2.0 * e, e, act_bits, e)
}

/// Rotary position embedding applied in place to Q (`heads`) and K (`kv_heads`).
///
/// Counting rule: each pair of elements is rotated with 4 multiplies and 2 adds, i.e.
/// 3 FLOPs per element over `tokens · (heads + kv_heads) · head_dim` elements; those
/// elements are read and written once (cos/sin tables are small and cached).
pub fn rope(tokens: u64, heads: u64, kv_heads: u64, head_dim: u64, act_bits: f64) -> Cost {
    let e = tokens as f64 * (heads + kv_heads) as f64 * head_dim as f64;
    rw(e, e, act_bits, 3.0 * e)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn swiglu_product_reads_two_inputs() {
        // 1 token x 11008, fp16: reads 2·11008·2 = 44,032 bytes, writes 22,016;
        // FLOPs (5 + 1)·11008 = 66,048.
        let c = gated_activation(Activation::Silu, 1, 11008, 16.0);
        assert_eq!(c.read.activations, 44_032.0);
        assert_eq!(c.written.activations, 22_016.0);
        assert_eq!(c.flops, 66_048.0);
    }

    #[test]
    fn plain_activation_is_sized_by_its_width() {
        // GPT-style MLP: GELU over the 4·hidden intermediate, not hidden.
        let c = activation(Activation::Gelu, 2, 4 * 2048, 16.0);
        assert_eq!(c.flops, 8.0 * 2.0 * 8192.0);
    }

    #[test]
    fn residual_and_rope_counts() {
        let r = residual_add(10, 100, 16.0);
        assert_eq!(r.flops, 1000.0);
        assert_eq!(r.bytes(), 3.0 * 1000.0 * 2.0);
        // Llama-3-8B, one token: (32 + 8) · 128 = 5120 elements, 15,360 FLOPs.
        let q = rope(1, 32, 8, 128, 16.0);
        assert_eq!(q.flops, 15_360.0);
        assert_eq!(q.bytes(), 2.0 * 5120.0 * 2.0);
    }
}
