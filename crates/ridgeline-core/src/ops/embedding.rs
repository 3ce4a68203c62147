//! Token embedding lookup.

use super::{ByteClasses, Cost, bytes_of};

/// Embedding lookup of `tokens` rows of width `hidden` from a table stored at `w_bits`.
///
/// Counting rule: no FLOPs; reads only the touched rows, `tokens · hidden · w_bits/8`
/// weight bytes (never the whole table, capped at `vocab` rows), writes
/// `tokens · hidden` activations.
pub fn embedding(tokens: u64, hidden: u64, vocab: u64, w_bits: f64, act_bits: f64) -> Cost {
    let rows = tokens.min(vocab) as f64;
    Cost {
        flops: 0.0,
        read: ByteClasses {
            weights: bytes_of(rows * hidden as f64, w_bits),
            ..Default::default()
        },
        written: ByteClasses {
            activations: bytes_of(tokens as f64 * hidden as f64, act_bits),
            ..Default::default()
        },
        link_bytes: 0.0,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn reads_rows_not_table() {
        // 4 tokens x 4096 fp16: 32,768 bytes read and written, no FLOPs.
        let c = embedding(4, 4096, 32000, 16.0, 16.0);
        assert_eq!(c.flops, 0.0);
        assert_eq!(c.read.weights, 32_768.0);
        assert_eq!(c.written.activations, 32_768.0);
        assert_eq!(c.intensity(), 0.0);
        // more tokens than vocabulary rows: at most the whole table is read.
        let big = embedding(100, 8, 10, 16.0, 16.0);
        assert_eq!(big.read.weights, 10.0 * 8.0 * 2.0);
    }
}
