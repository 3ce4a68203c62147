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
    /// Query/key dimension per head.
    pub head_dim: u64,
    /// Value (and output) dimension per head (`head_dim` but for latent attention).
    pub v_dim: u64,
    /// Sliding window: each query sees at most this many keys (`None`: all).
    pub window: Option<u64>,
    /// The window is a chunk: each query sees the keys of its own chunk of `window`
    /// positions ([`chunked_pairs`]).
    pub chunked: bool,
    /// Elements read per key position for all heads together: `2 · kv_heads · head_dim`
    /// for K and V of grouped-query attention, the latent and rotary key for latent
    /// attention.
    pub kv_elems_per_token: f64,
    /// Keys and values come from the KV cache (at `kv_bits`); else they are activations
    /// computed in this pass (latent attention's expanded prefill).
    pub kv_from_cache: bool,
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

/// Pairs a causal mask with a sliding window of `w` keys keeps: the query at position
/// `p` (1-based) sees `min(p, w)` keys, summed over the new positions
/// `kv_len - q_len + 1 ..= kv_len`. Prefill of `s <= w` tokens: `s(s+1)/2`; of `s > w`:
/// `w(w+1)/2 + (s - w)·w`; decode at context `L`: `min(L, w)`.
pub fn windowed_pairs(q_len: u64, kv_len: u64, w: u64) -> f64 {
    // sum of min(p, w) for p in a..=b: the part below the window is an arithmetic
    // series, the part above it w each
    let (a, b) = (kv_len.saturating_sub(q_len) + 1, kv_len);
    if b < a {
        return 0.0;
    }
    let below_end = b.min(w);
    let below = if below_end >= a {
        let n = (below_end - a + 1) as f64;
        n * (a as f64 + below_end as f64) / 2.0
    } else {
        0.0
    };
    let above = b.saturating_sub(below_end.max(a - 1)) as f64 * w as f64;
    below + above
}

/// Pairs a causal mask within chunks of `c` positions keeps (Llama 4's chunked
/// attention): the query at position `p` (1-based) sees the `((p - 1) mod c) + 1` keys
/// of its own chunk, summed over the new positions `kv_len - q_len + 1 ..= kv_len`.
/// Prefill of `s = k·c + r` tokens: `k·c(c+1)/2 + r(r+1)/2`; decode at context `L`:
/// `((L - 1) mod c) + 1`.
pub fn chunked_pairs(q_len: u64, kv_len: u64, c: u64) -> f64 {
    // Σ_{p=1}^{n} (((p - 1) mod c) + 1): whole chunks, then the partial one
    let upto = |n: u64| -> f64 {
        let (k, r) = ((n / c) as f64, (n % c) as f64);
        let cf = c as f64;
        k * cf * (cf + 1.0) / 2.0 + r * (r + 1.0) / 2.0
    };
    let start = kv_len.saturating_sub(q_len);
    upto(kv_len) - upto(start)
}

impl AttentionShape {
    /// Grouped-query attention over a cache of `kv_heads` keys and values per token.
    #[allow(clippy::too_many_arguments)]
    pub fn gqa(
        batch: u64,
        q_len: u64,
        kv_len: u64,
        heads: u64,
        kv_heads: u64,
        head_dim: u64,
        act_bits: f64,
        kv_bits: f64,
    ) -> AttentionShape {
        AttentionShape {
            batch,
            q_len,
            kv_len,
            heads,
            kv_heads,
            head_dim,
            v_dim: head_dim,
            window: None,
            chunked: false,
            kv_elems_per_token: 2.0 * kv_heads as f64 * head_dim as f64,
            kv_from_cache: true,
            act_bits,
            kv_bits,
        }
    }

    /// Query-key pairs the causal mask (and window) keeps, per sequence.
    pub fn pairs(&self) -> f64 {
        match self.window {
            Some(c) if self.chunked => chunked_pairs(self.q_len, self.kv_len, c),
            Some(w) => windowed_pairs(self.q_len, self.kv_len, w),
            None => causal_pairs(self.q_len, self.kv_len),
        }
    }

    /// Key positions read per sequence: all of them, or with a window the last
    /// `q_len + w - 1` (what the new queries can see), or with chunks of `c` those from
    /// the start of the first new query's chunk: `kv_len - c·floor((kv_len - q_len) / c)`.
    pub(crate) fn keys_read(&self) -> u64 {
        match self.window {
            Some(c) if self.chunked => {
                let first = self.kv_len.saturating_sub(self.q_len);
                self.kv_len - first / c * c
            }
            Some(w) => self.kv_len.min(self.q_len.saturating_add(w - 1)),
            None => self.kv_len,
        }
    }

    fn q_elems(&self) -> f64 {
        self.batch as f64 * self.q_len as f64 * self.heads as f64 * self.head_dim as f64
    }

    fn o_elems(&self) -> f64 {
        self.batch as f64 * self.q_len as f64 * self.heads as f64 * self.v_dim as f64
    }

    /// Bytes of K **and** V read for this layer: `batch · keys read · elements per token
    /// · bits/8`, for grouped-query attention `2 · batch · kv_len · kv_heads · head_dim ·
    /// kv_bits/8`. This is what one decode step must stream per layer; GQA shrinks it
    /// by `heads / kv_heads`, a window caps it at `w` tokens.
    pub fn kv_bytes(&self) -> f64 {
        let bits = if self.kv_from_cache {
            self.kv_bits
        } else {
            self.act_bits
        };
        bytes_of(
            self.batch as f64 * self.keys_read() as f64 * self.kv_elems_per_token,
            bits,
        )
    }

    /// [`AttentionShape::kv_bytes`] as cache or activation bytes.
    fn kv_read(&self) -> ByteClasses {
        if self.kv_from_cache {
            ByteClasses {
                kv: self.kv_bytes(),
                ..Default::default()
            }
        } else {
            ByteClasses {
                activations: self.kv_bytes(),
                ..Default::default()
            }
        }
    }

    fn score_elems(&self) -> f64 {
        self.batch as f64 * self.heads as f64 * self.q_len as f64 * self.score_cols() as f64
    }

    /// Keys of the score matrix: every cached position, or for chunked attention the
    /// positions of the chunks the new queries fall in (the cache keeps no other).
    fn score_cols(&self) -> u64 {
        if self.chunked {
            self.keys_read()
        } else {
            self.kv_len
        }
    }
}

/// Fused (FlashAttention-style) attention: the score matrix never leaves on-chip memory.
///
/// Counting rule: FLOPs count the **causal half only** (a fused kernel skips masked
/// tiles, and with a sliding window the tiles outside the band): `2 · batch · heads ·
/// (head_dim + v_dim) · pairs` with `pairs` from [`AttentionShape::pairs`] (`2·head_dim`
/// for `QKᵀ`, `2·v_dim` for `PV`: `4 · heads · head_dim · pairs` for ordinary heads);
/// softmax exponentials are not counted (they run on the special-function units, not
/// the tensor cores). Bytes: Q read and O written at activation width, the keys and
/// values the queries can see read once (see [`AttentionShape::kv_bytes`]). Decode at
/// context `L` therefore streams `2 · batch · L · kv_heads · head_dim · kv_bits/8` bytes
/// per layer, or `min(L, w)` tokens' worth with a window.
pub fn attention_fused(s: &AttentionShape) -> Cost {
    let pairs = s.batch as f64 * s.pairs();
    Cost {
        flops: 2.0 * s.heads as f64 * (s.head_dim + s.v_dim) as f64 * pairs,
        read: s.kv_read()
            + ByteClasses {
                activations: bytes_of(s.q_elems(), s.act_bits),
                ..Default::default()
            },
        written: ByteClasses {
            activations: bytes_of(s.o_elems(), s.act_bits),
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
    naive_matmul(s, s.q_elems(), s.score_elems())
}

/// Naive attention, step 3: `O = PV` reading the materialized probabilities.
///
/// Counting rule: FLOPs `2 · batch · heads · q_len · kv_len · head_dim`; reads the
/// probabilities and V; writes O.
pub fn attention_values(s: &AttentionShape) -> Cost {
    naive_matmul(s, s.score_elems(), s.q_elems())
}

/// One matmul of naive attention (`QKᵀ` or `PV`): `2 · score_elems · head_dim` FLOPs,
/// `read` activation elements and half the cached keys and values (K or V) read,
/// `written` activation elements written.
fn naive_matmul(s: &AttentionShape, read: f64, written: f64) -> Cost {
    Cost {
        flops: 2.0 * s.score_elems() * s.head_dim as f64,
        read: ByteClasses {
            activations: bytes_of(read, s.act_bits),
            kv: s.kv_bytes() / 2.0,
            weights: 0.0,
        },
        written: ByteClasses {
            activations: bytes_of(written, s.act_bits),
            ..Default::default()
        },
        link_bytes: 0.0,
    }
}

/// Number of score elements of the naive variant, for sizing its softmax.
impl AttentionShape {
    /// Rows and columns of the score matrix (`batch·heads·q_len`, `kv_len`).
    pub(crate) fn score_matrix(&self) -> (u64, u64) {
        (
            self.batch
                .saturating_mul(self.heads)
                .saturating_mul(self.q_len),
            self.score_cols(),
        )
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn llama2_7b(batch: u64, q_len: u64, kv_len: u64) -> AttentionShape {
        AttentionShape::gqa(batch, q_len, kv_len, 32, 32, 128, 16.0, 16.0)
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
        let gqa = attention_fused(&AttentionShape::gqa(1, 1, 2048, 32, 8, 128, 16.0, 16.0));
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

    #[test]
    fn chunks_count_the_pairs_and_keys_of_their_own_chunk() {
        use super::chunked_pairs;
        // prefill of 10,000 tokens in chunks of 8192: 8192·8193/2 + 1808·1809/2 =
        // 33,558,528 + 1,635,336 = 35,193,864 (a window of 8192: 48,369,664)
        assert_eq!(chunked_pairs(10_000, 10_000, 8192), 35_193_864.0);
        assert_eq!(windowed_pairs(10_000, 10_000, 8192), 48_369_664.0);
        // decode at 10,000: the 1808 keys of the second chunk; at 8192 all of the first
        assert_eq!(chunked_pairs(1, 10_000, 8192), 1808.0);
        assert_eq!(chunked_pairs(1, 8192, 8192), 8192.0);
        // three new tokens at positions 8192, 8193, 8194 see 8192, 1 and 2 keys
        assert_eq!(chunked_pairs(3, 8194, 8192), 8195.0);
        // against a brute-force count, and the keys read from the first query's chunk
        for (q, kv, c) in [
            (1u64, 1u64, 4u64),
            (5, 9, 4),
            (7, 7, 3),
            (2, 12, 5),
            (13, 40, 6),
        ] {
            let brute: u64 = (kv - q + 1..=kv).map(|p| (p - 1) % c + 1).sum();
            assert_eq!(chunked_pairs(q, kv, c), brute as f64, "{q} {kv} {c}");
            let shape = AttentionShape {
                window: Some(c),
                chunked: true,
                ..AttentionShape::gqa(1, q, kv, 1, 1, 1, 16.0, 16.0)
            };
            let first_chunk_start = (kv - q) / c * c;
            assert_eq!(shape.keys_read(), kv - first_chunk_start, "{q} {kv} {c}");
        }
    }

    #[test]
    fn a_window_caps_decode_reads_and_bands_prefill() {
        // Mistral-7B v0.1 layer (32 heads, 8 KV heads of 128, window 4096), bf16:
        // decode at context 16384 reads 4096 tokens of K and V: 2 · 4096 · 8 · 128 · 2
        // = 16,777,216 bytes, a quarter of the 67,108,864 of the whole context.
        let at = |q_len, kv_len, window| {
            attention_fused(&AttentionShape {
                window,
                ..AttentionShape::gqa(1, q_len, kv_len, 32, 8, 128, 16.0, 16.0)
            })
        };
        assert_eq!(at(1, 16384, Some(4096)).read.kv, 16_777_216.0);
        assert_eq!(at(1, 16384, None).read.kv, 67_108_864.0);
        // prefill of 8192 tokens: pairs = 4096·4097/2 + 4096·4096 = 25,167,872 (the
        // causal square would be 33,558,528)
        assert_eq!(windowed_pairs(8192, 8192, 4096), 25_167_872.0);
        assert_eq!(causal_pairs(8192, 8192), 33_558_528.0);
        // below the window nothing changes
        assert_eq!(windowed_pairs(100, 100, 4096), causal_pairs(100, 100));
        assert_eq!(at(1, 1000, Some(4096)), at(1, 1000, None));
        // a brute-force sum agrees
        let brute: f64 = (3000u64 + 1..=3500).map(|p| p.min(3200) as f64).sum();
        assert_eq!(windowed_pairs(500, 3500, 3200), brute);
    }
}
