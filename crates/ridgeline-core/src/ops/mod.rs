//! The operator catalog: pure functions from shapes and formats to a [`Cost`] (FLOPs and
//! bytes moved, split by class). Nothing here knows about hardware; [`crate::roofline`]
//! places a cost on a device.
//!
//! Shapes are `u64` counts; results are `f64` in SI base units (FLOP, byte), so products
//! of large shapes cannot overflow. Element widths are given in **bits** (`f64`) so
//! sub-byte quantized weights (q4_0 = 4.5 bits) are exact.
//!
//! Counting rules shared by every op (each function's doc states its own):
//! - a multiply-add is 2 FLOPs;
//! - every operand is read from memory once and every output written once (the ideal
//!   of a well-tiled kernel; caches are not modelled);
//! - bytes are split into weights, activations and KV cache, reads and writes, and
//!   bytes over an interconnect (collectives) are kept apart from memory bytes.

mod attention;
mod collective;
mod elementwise;
mod embedding;
mod gemm;
mod norm;
mod recurrent;

pub use attention::{
    AttentionShape, attention_fused, attention_scores, attention_values, causal_pairs,
    chunked_pairs, windowed_pairs,
};
pub use collective::{
    Collective, collective, expert_devices_per_token, forwarded_network_share, moe_all_to_all,
};
pub use elementwise::{Activation, activation, gated_activation, residual_add, rope};
pub use embedding::embedding;
pub use gemm::{Class, Operand, gemm, linear};
pub use norm::{NormKind, norm, softmax};
pub use recurrent::{ScanShape, causal_conv1d, selective_scan, ssm_scan};

use serde::{Deserialize, Serialize};
use std::ops::{Add, AddAssign};

/// Bytes split by what they are.
#[derive(Debug, Clone, Copy, Default, PartialEq, Serialize, Deserialize)]
pub struct ByteClasses {
    /// Model weights (parameters, at their storage format).
    pub weights: f64,
    /// Activations (inputs, outputs, intermediates, attention scores).
    pub activations: f64,
    /// Key/value cache.
    pub kv: f64,
}

impl ByteClasses {
    /// Sum of the three classes.
    pub fn total(&self) -> f64 {
        self.weights + self.activations + self.kv
    }

    /// Each class of `self` combined with the same class of `o` by `f`.
    fn zip(self, o: ByteClasses, f: impl Fn(f64, f64) -> f64) -> Self {
        ByteClasses {
            weights: f(self.weights, o.weights),
            activations: f(self.activations, o.activations),
            kv: f(self.kv, o.kv),
        }
    }
}

impl Add for ByteClasses {
    type Output = ByteClasses;
    fn add(self, o: ByteClasses) -> ByteClasses {
        self.zip(o, |a, b| a + b)
    }
}

/// What one execution of an operator costs: arithmetic, memory traffic, link traffic.
#[derive(Debug, Clone, Copy, Default, PartialEq, Serialize, Deserialize)]
pub struct Cost {
    /// Floating-point (or integer) operations; a multiply-add counts 2.
    pub flops: f64,
    /// Bytes read from device memory, by class.
    pub read: ByteClasses,
    /// Bytes written to device memory, by class.
    pub written: ByteClasses,
    /// Bytes each device sends over the interconnect (collectives only).
    pub link_bytes: f64,
}

impl Cost {
    /// Total bytes moved to and from device memory (reads + writes, all classes).
    pub fn bytes(&self) -> f64 {
        self.read.total() + self.written.total()
    }

    /// FLOPs per byte of memory traffic; infinite for a cost with FLOPs and no bytes,
    /// zero for a cost with no FLOPs.
    pub fn intensity(&self) -> f64 {
        let b = self.bytes();
        if self.flops == 0.0 {
            0.0
        } else if b == 0.0 {
            f64::INFINITY
        } else {
            self.flops / b
        }
    }

    /// This cost repeated `times` times (e.g. once per layer); fractional counts are
    /// allowed (expected MoE experts touched).
    pub fn times(&self, times: f64) -> Cost {
        self.zip(Cost::default(), |a, _| a * times)
    }

    /// Each number of `self` (FLOPs, every byte class, link bytes) combined with the
    /// same number of `o` by `f`.
    fn zip(self, o: Cost, f: impl Fn(f64, f64) -> f64) -> Cost {
        Cost {
            flops: f(self.flops, o.flops),
            read: self.read.zip(o.read, &f),
            written: self.written.zip(o.written, &f),
            link_bytes: f(self.link_bytes, o.link_bytes),
        }
    }
}

impl Add for Cost {
    type Output = Cost;
    fn add(self, o: Cost) -> Cost {
        self.zip(o, |a, b| a + b)
    }
}

impl AddAssign for Cost {
    fn add_assign(&mut self, o: Cost) {
        *self = *self + o;
    }
}

impl std::iter::Sum for Cost {
    fn sum<I: Iterator<Item = Cost>>(iter: I) -> Cost {
        iter.fold(Cost::default(), |a, b| a + b)
    }
}

/// Bytes of `count` elements of `bits` each.
#[inline]
pub(crate) fn bytes_of(count: f64, bits: f64) -> f64 {
    count * bits / 8.0
}
