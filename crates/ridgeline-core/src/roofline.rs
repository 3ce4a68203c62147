//! The roofline: ridge points, attainable rates, and placing an operator's [`Cost`] on a
//! device's ceilings. No I/O and no model knowledge here.
//!
//! The time of an op is `max(flops / (peak · eff_c), bytes / (bw · eff_m),
//! link_bytes / (link · eff_l)) + overhead`. The ideal roofline time uses efficiency 1
//! and no overhead; both are always reported.

use crate::ops::Cost;
use serde::{Deserialize, Serialize};
use std::fmt;

/// Which ceiling limits an op (or a phase).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum Bound {
    /// Arithmetic throughput.
    Compute,
    /// Device memory bandwidth.
    Memory,
    /// Interconnect (NVLink, PCIe, ICI) bandwidth.
    Communication,
    /// Fixed per-step or per-kernel overhead (launch, scheduling).
    Overhead,
}

impl Bound {
    /// Every bound, in declaration order.
    pub const ALL: [Bound; 4] = [
        Bound::Compute,
        Bound::Memory,
        Bound::Communication,
        Bound::Overhead,
    ];

    /// The lowercase name used in JSON (`"memory"`).
    pub fn name(self) -> &'static str {
        match self {
            Bound::Compute => "compute",
            Bound::Memory => "memory",
            Bound::Communication => "communication",
            Bound::Overhead => "overhead",
        }
    }
}

impl fmt::Display for Bound {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.name())
    }
}

/// The ceilings an op is placed against.
#[derive(Debug, Clone, Copy, PartialEq, Serialize, Deserialize)]
pub struct Ceilings {
    /// Peak FLOP/s for the op's dtype (dense).
    pub peak_flops_per_s: f64,
    /// Memory bandwidth, bytes/s.
    pub memory_bytes_per_s: f64,
    /// Link bandwidth per direction for collectives, bytes/s (`None`: no link).
    pub link_bytes_per_s: Option<f64>,
}

impl Ceilings {
    /// The ideal (not derated) compute, memory and link times of a placed op, s; a term
    /// with no work is 0, never NaN.
    pub(crate) fn ideal_terms(&self, p: &Placement) -> [f64; 3] {
        let f = if self.peak_flops_per_s > 0.0 {
            p.flops / self.peak_flops_per_s
        } else {
            0.0
        };
        let m = p.bytes / self.memory_bytes_per_s;
        let l = match self.link_bytes_per_s {
            Some(bw) if p.link_bytes > 0.0 => p.link_bytes / bw,
            _ => 0.0,
        };
        [f, m, l]
    }

    /// FLOP per byte where the memory slope meets the compute roof.
    pub fn ridge_point(&self) -> f64 {
        ridge_point(self.peak_flops_per_s, self.memory_bytes_per_s)
    }
}

/// Ridge point `peak / bandwidth` in FLOP/byte: ops with lower intensity are memory-bound.
///
/// ```
/// // A100 80GB SXM, bf16: 312e12 / 2.039e12 = 153.0 FLOP/byte.
/// let r = ridgeline_core::roofline::ridge_point(312e12, 2.039e12);
/// assert!((r - 153.02).abs() < 0.01);
/// ```
pub fn ridge_point(peak_flops_per_s: f64, bandwidth_bytes_per_s: f64) -> f64 {
    peak_flops_per_s / bandwidth_bytes_per_s
}

/// Attainable FLOP/s at an intensity: `min(peak, intensity · bandwidth)`.
pub fn attainable_flops_per_s(intensity: f64, peak_flops_per_s: f64, bandwidth: f64) -> f64 {
    if intensity.is_infinite() {
        peak_flops_per_s
    } else {
        peak_flops_per_s.min(intensity * bandwidth)
    }
}

/// Fractions of each ceiling an implementation reaches, plus a fixed overhead per op.
#[derive(Debug, Clone, Copy, PartialEq, Serialize, Deserialize)]
pub struct Efficiency {
    /// Fraction of peak FLOP/s reached by compute-bound kernels (0, 1].
    pub compute: f64,
    /// Fraction of memory bandwidth reached by memory-bound kernels (0, 1].
    pub memory: f64,
    /// Fraction of link bandwidth reached by collectives (0, 1].
    pub link: f64,
    /// Fixed time added to the op, seconds.
    pub overhead_s: f64,
}

impl Efficiency {
    /// Pure roofline: every fraction 1, no overhead.
    pub const IDEAL: Efficiency = Efficiency {
        compute: 1.0,
        memory: 1.0,
        link: 1.0,
        overhead_s: 0.0,
    };
}

impl Default for Efficiency {
    fn default() -> Self {
        Efficiency::IDEAL
    }
}

/// An op placed on a roofline.
#[derive(Debug, Clone, Copy, PartialEq, Serialize, Deserialize)]
pub struct Placement {
    /// FLOPs of the op.
    pub flops: f64,
    /// Memory bytes moved.
    pub bytes: f64,
    /// Link bytes sent.
    pub link_bytes: f64,
    /// FLOP per memory byte.
    pub arithmetic_intensity: f64,
    /// `min(peak, intensity · bw)` on the ideal roof, FLOP/s.
    pub attainable_flops_per_s: f64,
    /// Time the arithmetic needs at the derated peak, s.
    pub compute_time_s: f64,
    /// Time the memory traffic needs at the derated bandwidth, s.
    pub memory_time_s: f64,
    /// Time the link traffic needs at the derated link bandwidth, s.
    pub link_time_s: f64,
    /// Fixed overhead added, s.
    pub overhead_s: f64,
    /// Ideal roofline time (efficiency 1, no overhead), s.
    pub roofline_time_s: f64,
    /// Predicted time: slowest derated term plus overhead, s.
    pub time_s: f64,
    /// Which term set `time_s`.
    pub bound: Bound,
}

/// Time to do `num` units of work at `rate` per second: 0 for no work, infinite for
/// work at a rate of 0 (a ceiling the device does not have).
pub(crate) fn time_at(num: f64, rate: f64) -> f64 {
    if num == 0.0 {
        0.0
    } else if rate > 0.0 {
        num / rate
    } else {
        f64::INFINITY
    }
}

/// The slowest of the compute, memory and link times and the bound it makes: ties go
/// to compute, then memory, then communication; an overhead longer than all three
/// makes the op overhead-bound; an op with no work and no overhead is memory-bound.
#[inline]
pub(crate) fn slowest(compute_s: f64, memory_s: f64, link_s: f64, overhead_s: f64) -> (f64, Bound) {
    let mut best = (compute_s, Bound::Compute);
    if memory_s > best.0 {
        best = (memory_s, Bound::Memory);
    }
    if link_s > best.0 {
        best = (link_s, Bound::Communication);
    }
    if overhead_s > best.0 {
        best.1 = Bound::Overhead;
    }
    if best.0 == 0.0 && overhead_s == 0.0 {
        best.1 = Bound::Memory;
    }
    best
}

/// Places `cost` on `ceilings` with `eff` derating. Ops with no work at all are
/// reported as memory-bound with zero time.
pub fn place(cost: &Cost, ceilings: &Ceilings, eff: &Efficiency) -> Placement {
    let bytes = cost.bytes();
    let link = ceilings.link_bytes_per_s.unwrap_or(0.0);
    let ideal_c = time_at(cost.flops, ceilings.peak_flops_per_s);
    let ideal_m = time_at(bytes, ceilings.memory_bytes_per_s);
    let ideal_l = time_at(cost.link_bytes, link);
    let compute_time_s = time_at(cost.flops, ceilings.peak_flops_per_s * eff.compute);
    let memory_time_s = time_at(bytes, ceilings.memory_bytes_per_s * eff.memory);
    let link_time_s = time_at(cost.link_bytes, link * eff.link);
    let (slowest, bound) = slowest(compute_time_s, memory_time_s, link_time_s, eff.overhead_s);
    let intensity = cost.intensity();
    Placement {
        flops: cost.flops,
        bytes,
        link_bytes: cost.link_bytes,
        arithmetic_intensity: intensity,
        attainable_flops_per_s: attainable_flops_per_s(
            intensity,
            ceilings.peak_flops_per_s,
            ceilings.memory_bytes_per_s,
        ),
        compute_time_s,
        memory_time_s,
        link_time_s,
        overhead_s: eff.overhead_s,
        roofline_time_s: ideal_c.max(ideal_m).max(ideal_l),
        time_s: slowest + eff.overhead_s,
        bound,
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::ops::{Operand, gemm};

    const A100_80_SXM: Ceilings = Ceilings {
        peak_flops_per_s: 312e12,
        memory_bytes_per_s: 2.039e12,
        link_bytes_per_s: Some(300e9),
    };

    #[test]
    fn ridge_points_of_a100_and_h100() {
        // 312e12 / 2.039e12 = 153.016...; 989.5e12 / 3.35e12 = 295.37...
        assert!((A100_80_SXM.ridge_point() - 153.016).abs() < 1e-3);
        assert!((ridge_point(989.5e12, 3.35e12) - 295.373).abs() < 1e-3);
    }

    #[test]
    fn gemv_on_a100_is_memory_bound_16_46_us() {
        // 33,570,816 bytes / 2.039e12 B/s = 16.464 µs; 33.5 MFLOP / 312e12 = 0.11 µs.
        let a = Operand::activations(16.0);
        let c = gemm(1, 1, 4096, 4096, a, Operand::weights(16.0), a);
        let p = place(&c, &A100_80_SXM, &Efficiency::IDEAL);
        assert_eq!(p.bound, Bound::Memory);
        assert!((p.time_s - 16.464e-6).abs() < 1e-9, "{}", p.time_s);
        assert!((p.arithmetic_intensity - 0.99951).abs() < 1e-5);
        // attainable = 0.9995 · 2.039e12 = 2.038e12 FLOP/s
        assert!((p.attainable_flops_per_s - 0.99951 * 2.039e12).abs() < 1e8);
        assert_eq!(p.time_s, p.roofline_time_s);
    }

    #[test]
    fn big_gemm_is_compute_bound_and_derating_slows_it() {
        let a = Operand::activations(16.0);
        let c = gemm(1, 8192, 8192, 8192, a, a, a);
        let ideal = place(&c, &A100_80_SXM, &Efficiency::IDEAL);
        assert_eq!(ideal.bound, Bound::Compute);
        // 2·8192^3 / 312e12 = 3.524 ms
        assert!((ideal.time_s - 3.5242e-3).abs() < 1e-6);
        let eff = Efficiency {
            compute: 0.8,
            ..Efficiency::IDEAL
        };
        let real = place(&c, &A100_80_SXM, &eff);
        assert!((real.time_s - ideal.time_s / 0.8).abs() < 1e-12);
        assert_eq!(real.roofline_time_s, ideal.roofline_time_s);
    }

    #[test]
    fn overhead_and_communication_bounds() {
        let tiny = Cost {
            flops: 10.0,
            ..Default::default()
        };
        let eff = Efficiency {
            overhead_s: 5e-6,
            ..Efficiency::IDEAL
        };
        assert_eq!(place(&tiny, &A100_80_SXM, &eff).bound, Bound::Overhead);
        let comm = Cost {
            link_bytes: 3e9,
            ..Default::default()
        };
        let p = place(&comm, &A100_80_SXM, &Efficiency::IDEAL);
        assert_eq!(p.bound, Bound::Communication);
        assert!((p.time_s - 0.01).abs() < 1e-12);
    }

    #[test]
    fn time_never_below_either_roof() {
        for (f, b) in [(1e9, 1e6), (1e6, 1e9), (0.0, 1e3), (5e12, 5e9)] {
            let c = Cost {
                flops: f,
                read: crate::ops::ByteClasses {
                    weights: b,
                    ..Default::default()
                },
                ..Default::default()
            };
            let p = place(
                &c,
                &A100_80_SXM,
                &Efficiency {
                    compute: 0.7,
                    memory: 0.9,
                    link: 1.0,
                    overhead_s: 1e-6,
                },
            );
            assert!(p.time_s >= f / 312e12 && p.time_s >= b / 2.039e12);
        }
    }
}
