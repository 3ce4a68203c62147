//! Attention: fused (flash) and naive (materialized scores), prefill and decode, with
//! GQA/MQA. One shape covers both phases: `q_len` new tokens attend causally to a cache
//! of `kv_len` tokens that already includes them (prefill: `q_len = kv_len = prompt`;
//! decode: `q_len = 1`, `kv_len = context`).

use super::{ByteClasses, Cost, bytes_of};

/// The shape of one attention call (one layer).
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct AttentionShape {
    /// Independent sequences.
    pub batch: u64,
    /// New (query) tokens per sequence.
    pub q_len: u64,
    /// Keys/values per sequence, including the new tokens (`kv_len >= q_len`).
    pub kv_len: u64,
    /// Query heads.
    pub heads: u64,
    /// Key/value heads (`heads` for MHA, fewer for GQA, 1 for MQA).
    pub kv_heads: u64,
    /// Dimension per head.
    pub head_dim: u64,
    /// Bits per activation element (Q, O, scores).
    pub act_bits: f64,
    /// Bits per KV-cache element.
    pub kv_bits: f64,
}

/// Query-key pairs a causal mask keeps: each of the `q_len` new tokens sees the
/// `kv_len - q_len` earlier tokens plus itself and the new tokens before it:
/// `q_len · (kv_len - q_len) + q_len · (q_len + 1) / 2`.
/// Prefill of `s` tokens: `s(s+1)/2`; decode at context `L`: `L`.
pub fn causal_pairs(q_len: u64, kv_len: u64) -> f64 {
    let q = q_len as f64;
    let past = kv_len.saturating_sub(q_len) as f64;
    q * past + q * (q + 1.0) / 2.0
}

impl AttentionShape {
    fn q_elems(&self) -> f64 {
        self.batch as f64 * self.q_len as f64 * self.heads as f64 * self.head_dim as f64
    }

    /// Bytes of K **and** V for this layer: `2 · batch · kv_len · kv_heads · head_dim ·
    /// kv_bits/8`. This is what one decode step must stream per layer; GQA shrinks it
    /// by `heads / kv_heads`.
    pub fn kv_bytes(&self) -> f64 {
        2.0 * bytes_of(
            self.batch as f64 * self.kv_len as f64 * self.kv_heads as f64 * self.head_dim as f64,
            self.kv_bits,
        )
    }

    fn score_elems(&self) -> f64 {
        self.batch as f64 * self.heads as f64 * self.q_len as f64 * self.kv_len as f64
    }
}

/// Fused (FlashAttention-style) attention: the score matrix never leaves on-chip memory.
///
/// Counting rule: FLOPs count the **causal half only** (a fused kernel skips masked
/// tiles): `4 · batch · heads · head_dim · pairs` with `pairs` from [`causal_pairs`]
/// (2 for `QKᵀ`, 2 for `PV`); softmax exponentials are not counted (they run on the
/// special-function units, not the tensor cores). Bytes: Q read and O written at
/// activation width, the whole K and V of the layer read once at KV width (see
/// [`AttentionShape::kv_bytes`]). Decode at context `L` therefore streams
/// `2 · batch · L · kv_heads · head_dim · kv_bits/8` bytes per layer.
pub fn attention_fused(s: &AttentionShape) -> Cost {
    let pairs = s.batch as f64 * causal_pairs(s.q_len, s.kv_len);
    Cost {
        flops: 4.0 * s.heads as f64 * s.head_dim as f64 * pairs,
        read: ByteClasses {
            activations: bytes_of(s.q_elems(), s.act_bits),
            kv: s.kv_bytes(),
            weights: 0.0,
        },
        written: ByteClasses {
            activations: bytes_of(s.q_elems(), s.act_bits),
            ..Default::default()
        },
        link_bytes: 0.0,
    }
}

/// Naive attention, step 1: scores `S = QKᵀ` written to memory. The **full rectangle**
/// `q_len × kv_len` is computed and stored (masking happens afterwards in softmax).
///
/// Counting rule: FLOPs `2 · batch · heads · q_len · kv_len · head_dim`; reads Q and K;
/// writes `batch · heads · q_len · kv_len` scores at activation width.
pub fn attention_scores(s: &AttentionShape) -> Cost {
    Cost {
        flops: 2.0 * s.score_elems() * s.head_dim as f64,
        read: ByteClasses {
            activations: bytes_of(s.q_elems(), s.act_bits),
            kv: s.kv_bytes() / 2.0,
            weights: 0.0,
        },
        written: ByteClasses {
            activations: bytes_of(s.score_elems(), s.act_bits),
            ..Default::default()
        },
        link_bytes: 0.0,
    }
}

/// Naive attention, step 3: `O = PV` reading the materialized probabilities.
///
/// Counting rule: FLOPs `2 · batch · heads · q_len · kv_len · head_dim`; reads the
/// probabilities and V; writes O.
pub fn attention_values(s: &AttentionShape) -> Cost {
    Cost {
        flops: 2.0 * s.score_elems() * s.head_dim as f64,
        read: ByteClasses {
            activations: bytes_of(s.score_elems(), s.act_bits),
            kv: s.kv_bytes() / 2.0,
            weights: 0.0,
        },
        written: ByteClasses {
            activations: bytes_of(s.q_elems(), s.act_bits),
            ..Default::default()
        },
        link_bytes: 0.0,
    }
}

/// Number of score elements of the naive variant, for sizing its softmax.
impl AttentionShape {
    /// Rows and columns of the score matrix (`batch·heads·q_len`, `kv_len`).
    pub fn score_matrix(&self) -> (u64, u64) {
        (
            self.batch
                .saturating_mul(self.heads)
                .saturating_mul(self.q_len),
            self.kv_len,
        )
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn llama2_7b(batch: u64, q_len: u64, kv_len: u64) -> AttentionShape {
        AttentionShape {
            batch,
            q_len,
            kv_len,
            heads: 32,
            kv_heads: 32,
            head_dim: 128,
            act_bits: 16.0,
            kv_bits: 16.0,
        }
    }

    #[test]
    fn decode_reads_whole_kv_cache() {
        // Llama-2-7B layer, batch 1, context 4096, fp16:
        // K+V = 2 · 4096 · 32 · 128 · 2 bytes = 67,108,864 bytes.
        // FLOPs = 4 · 32 · 128 · 4096 = 67,108,864. Q and O: 4096 · 2 bytes each.
        let c = attention_fused(&llama2_7b(1, 1, 4096));
        assert_eq!(c.read.kv, 67_108_864.0);
        assert_eq!(c.flops, 67_108_864.0);
        assert_eq!(c.bytes(), 67_108_864.0 + 16_384.0);
        assert!(c.intensity() < 1.0);
    }

    #[test]
    fn gqa_shrinks_kv_by_group_size() {
        let mha = attention_fused(&llama2_7b(1, 1, 2048));
        let gqa = attention_fused(&AttentionShape {
            kv_heads: 8,
            ..llama2_7b(1, 1, 2048)
        });
        assert_eq!(mha.read.kv / gqa.read.kv, 4.0);
        assert_eq!(mha.flops, gqa.flops);
    }

    #[test]
    fn prefill_counts_causal_half() {
        // s = 2048: pairs = 2048·2049/2 = 2,098,176; FLOPs = 4·32·128·pairs = 34,376,515,584.
        let c = attention_fused(&llama2_7b(1, 2048, 2048));
        assert_eq!(causal_pairs(2048, 2048), 2_098_176.0);
        assert_eq!(c.flops, 34_376_515_584.0);
    }

    #[test]
    fn naive_materializes_full_square() {
        // scores: 32 heads · 2048 · 2048 · 2 bytes = 268,435,456 bytes written.
        let s = llama2_7b(1, 2048, 2048);
        let qk = attention_scores(&s);
        assert_eq!(qk.written.activations, 268_435_456.0);
        let pv = attention_values(&s);
        assert_eq!(pv.read.activations, 268_435_456.0);
        // naive computes the full square: 2x the causal half (+ the diagonal).
        let naive_flops = qk.flops + pv.flops;
        assert!(naive_flops > 1.99 * attention_fused(&s).flops);
    }

    #[test]
    fn kv_grows_linearly_and_prefill_work_quadratically() {
        let a = attention_fused(&llama2_7b(1, 1, 1000));
        let b = attention_fused(&llama2_7b(1, 1, 2000));
        assert_eq!(b.read.kv, 2.0 * a.read.kv);
        let p1 = attention_fused(&llama2_7b(1, 1000, 1000));
        let p2 = attention_fused(&llama2_7b(1, 2000, 2000));
        assert!((p2.flops / p1.flops - 4.0).abs() < 0.01);
    }
}
