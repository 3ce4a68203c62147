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
}
