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

/// The network share of an expert-parallel all-to-all over `n` devices, `per_domain` of
/// them in each scale-up domain, whose copies for another domain cross the network once
/// per domain and are forwarded inside it (DeepSeek-V3's training dispatch, arXiv
/// 2412.19437 section 3.2.2; DeepEP's normal kernels): network bytes per link byte of
/// [`moe_all_to_all`]. A token's `k` experts lie uniformly in `reachable` of the
/// `d = ceil(n / per_domain)` domains (all of them, or fewer under node-limited routing);
/// it reaches `r · (1 - (1 - 1/r)^k)` distinct domains, `(d - 1)/d` of them remote,
/// against [`expert_devices_per_token`]` · (n - 1)/n` remote copies. For DeepSeek-V3 over
/// 64 devices in 8 nodes, top-8 from 4 nodes: 3.1496 remote nodes for 7.4575 remote
/// copies, 0.4223.
pub fn forwarded_network_share(n: u64, per_domain: u64, k: u64, reachable: Option<u64>) -> f64 {
    let d = n.div_ceil(per_domain.max(1));
    if n <= 1 || d <= 1 {
        return 0.0;
    }
    let r = reachable.unwrap_or(d).clamp(1, d) as f64;
    let domains = r * (1.0 - (1.0 - 1.0 / r).powf(k as f64));
    let remote_domains = domains * (d - 1) as f64 / d as f64;
    let remote_copies = expert_devices_per_token(n, k) * (n - 1) as f64 / n as f64;
    (remote_domains / remote_copies).min(1.0)
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
    fn forwarded_share_of_deepseek_v3_training() {
        // 64 devices, 8 per node, top-8 from 4 of 8 nodes: 4 (1 - 0.75^8) = 3.59955
        // nodes, 7/8 of them remote = 3.14961; 64 (1 - (63/64)^8) (63/64) = 7.45753 copies
        let q = forwarded_network_share(64, 8, 8, Some(4));
        assert!((q - 3.149_605 / 7.457_535).abs() < 1e-5, "{q}");
        // inside one node nothing crosses the network
        assert_eq!(forwarded_network_share(8, 8, 8, None), 0.0);
        // 2 nodes of one device each, top-1: every remote copy is its own node's
        assert!((forwarded_network_share(2, 1, 1, None) - 1.0).abs() < 1e-12);
    }

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
