//! Collectives over `n` devices (ring algorithms): bytes each device sends on the link.

use super::{ByteClasses, Cost, bytes_of};

/// A collective communication pattern.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Collective {
    /// Every device ends with the sum of all buffers.
    AllReduce,
    /// Every device ends with the concatenation of all shards.
    AllGather,
    /// Every device ends with one reduced shard.
    ReduceScatter,
}

/// A ring collective over `n` devices on a buffer of `elems` elements of `bits` each
/// (the full, unsharded buffer size).
///
/// Counting rule: a ring all-reduce sends `2(n-1)/n · size` bytes per device
/// (reduce-scatter then all-gather); all-gather and reduce-scatter send `(n-1)/n · size`.
/// Reductions add `(n-1)/n · elems` FLOPs per device (all-reduce, reduce-scatter). Local
/// memory traffic: the buffer is read once and written once. With `n = 1` it costs
/// nothing.
pub fn collective(kind: Collective, n: u64, elems: f64, bits: f64) -> Cost {
    if n <= 1 {
        return Cost::default();
    }
    let frac = (n - 1) as f64 / n as f64;
    let size = bytes_of(elems, bits);
    let (link_factor, flops) = match kind {
        Collective::AllReduce => (2.0 * frac, frac * elems),
        Collective::AllGather => (frac, 0.0),
        Collective::ReduceScatter => (frac, frac * elems),
    };
    Cost {
        flops,
        read: ByteClasses {
            activations: size,
            ..Default::default()
        },
        written: ByteClasses {
            activations: size,
            ..Default::default()
        },
        link_bytes: link_factor * size,
    }
}

/// Expected devices, of `n` holding equal shares of the experts, that one token picking
/// `k` experts sends to: `n · (1 - (1 - 1/n)^k)` (each pick lands on a device uniformly,
/// with replacement: for 8 devices and top-8 routing, 5.25 devices).
pub fn expert_devices_per_token(n: u64, k: u64) -> f64 {
    if n <= 1 {
        return 1.0;
    }
    let n = n as f64;
    n * (1.0 - (1.0 - 1.0 / n).powf(k as f64))
}

/// One expert-parallel all-to-all over `n` devices (the MoE dispatch, or the combine
/// that brings the results back): each of a device's `tokens` token vectors of `width`
/// elements at `bits` goes once to every other device holding one of its `k` experts
/// (DeepEP-style deduplicated sends, [`expert_devices_per_token`] devices of which a
/// fraction `(n-1)/n` are remote).
///
/// Counting rule: link bytes per device `tokens · remote · width · bits/8`; local memory
/// reads the tokens once and writes every copy sent or received
/// (`tokens · devices · width`); no FLOPs (the combine's weighted sum is counted as part
/// of the experts' down projection). With `n = 1` it costs nothing.
pub fn moe_all_to_all(n: u64, tokens: f64, k: u64, width: f64, bits: f64) -> Cost {
    if n <= 1 {
        return Cost::default();
    }
    let devices = expert_devices_per_token(n, k);
    let remote = devices * (n - 1) as f64 / n as f64;
    let vector = bytes_of(width, bits);
    Cost {
        flops: 0.0,
        read: ByteClasses {
            activations: tokens * vector,
            ..Default::default()
        },
        written: ByteClasses {
            activations: tokens * devices * vector,
            ..Default::default()
        },
        link_bytes: tokens * remote * vector,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn ring_factors() {
        // 8 devices, 1 MiB fp16 buffer (524,288 elements): all-reduce sends
        // 2·7/8·1,048,576 = 1,835,008 bytes; all-gather 7/8 of it = 917,504.
        let ar = collective(Collective::AllReduce, 8, 524_288.0, 16.0);
        assert_eq!(ar.link_bytes, 1_835_008.0);
        let ag = collective(Collective::AllGather, 8, 524_288.0, 16.0);
        assert_eq!(ag.link_bytes, 917_504.0);
        let rs = collective(Collective::ReduceScatter, 8, 524_288.0, 16.0);
        assert_eq!(rs.link_bytes, 917_504.0);
        assert_eq!(
            collective(Collective::AllReduce, 1, 1e6, 16.0),
            Cost::default()
        );
    }

    #[test]
    fn expert_all_to_all() {
        // top-8 over 8 devices: 8 · (1 - (7/8)^8) = 5.2511 devices per token, of which
        // 7/8 remote = 4.5947; 100 tokens of 7168 bf16 values (14,336 bytes each)
        let d = expert_devices_per_token(8, 8);
        assert!((d - 8.0 * (1.0 - 0.875f64.powi(8))).abs() < 1e-12);
        assert!((d - 5.2511).abs() < 1e-4);
        let c = moe_all_to_all(8, 100.0, 8, 7168.0, 16.0);
        assert!((c.link_bytes - 100.0 * d * 0.875 * 14_336.0).abs() < 1e-6);
        // top-1 over 2 devices: one device per token, remote half the time
        assert_eq!(expert_devices_per_token(2, 1), 1.0);
        assert_eq!(moe_all_to_all(2, 10.0, 1, 4.0, 16.0).link_bytes, 40.0);
        assert_eq!(moe_all_to_all(1, 10.0, 8, 4.0, 16.0), Cost::default());
    }
}
