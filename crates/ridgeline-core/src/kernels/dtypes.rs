//! What an fp8 or fp4 weight matmul reaches against a 16-bit one of the same shape,
//! measured: `data/kernels/gemm-dtypes.toml`, generated from the kernel tables
//! ([`GemmDtypes::measure`]) and read by every prediction (the tables themselves are
//! read only with `--kernels`).
//!
//! On every measured device the fp8 GEMMs reach a smaller fraction of the fp8 roof than
//! the bf16 GEMMs of the bf16 roof (0.7-0.9 on Hopper, 0.6-0.85 on Blackwell), and the
//! nvfp4 GEMMs less still (0.4-0.8): the scales, the conversion in the inner loop and
//! kernels tuned less than the 16-bit ones. A dtype's factor is the median of
//! `efficiency(dtype) / efficiency(bf16)` over the table points of the same (m, n, k),
//! every engine of the device pooled, with n and k at least 4096 (the shapes of a
//! model's weights): `compute` over m >= 1024 rows (compute-bound), `memory` over m <= 8
//! (a decode step's GEMV, bandwidth-bound). A device without a table takes its
//! sibling's ([`KernelDb::sibling`]): the factors are ratios of fractions of each
//! device's own roof.

use super::{KernelDb, OpClass};
use crate::error::{Error, Result};
use crate::hardware::HardwareDb;
use serde::{Deserialize, Serialize};
use std::collections::BTreeMap;
use std::sync::OnceLock;

/// The generated file, embedded.
const BUILTIN_TOML: &str = include_str!("../../../../data/kernels/gemm-dtypes.toml");

/// Fewest rows (m) a GEMM shape counts as compute-bound with.
pub const COMPUTE_MIN_ROWS: f64 = 1024.0;
/// Most rows a GEMM shape counts as a bandwidth-bound GEMV with.
pub const MEMORY_MAX_ROWS: f64 = 8.0;
/// Smallest n and k of the shapes counted (a model's weight matrices).
pub const MIN_WEIGHT_DIM: f64 = 4096.0;

/// One dtype's factors on one device.
#[derive(Debug, Clone, Copy, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct DtypeFactor {
    /// What the compute efficiency of a matmul with these weights is multiplied by.
    pub compute: f64,
    /// What the memory efficiency of such a matmul is multiplied by.
    pub memory: f64,
    /// Table points behind `compute`.
    pub compute_points: usize,
    /// Table points behind `memory`.
    pub memory_points: usize,
}

/// One device's factors.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct DeviceDtypes {
    /// The device whose tables measured them, where not this one (a sibling).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub from: Option<String>,
    /// fp8 weights (tables' `fp8`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub fp8: Option<DtypeFactor>,
    /// fp4 weights (tables' `nvfp4`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub fp4: Option<DtypeFactor>,
}

/// The factors of every device with a table or a sibling's, by device id.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct GemmDtypes {
    devices: BTreeMap<String, DeviceDtypes>,
}

impl GemmDtypes {
    /// The embedded `data/kernels/gemm-dtypes.toml`, parsed once.
    pub fn builtin() -> Result<&'static GemmDtypes> {
        static DB: OnceLock<Result<GemmDtypes>> = OnceLock::new();
        DB.get_or_init(|| GemmDtypes::from_toml(BUILTIN_TOML, "data/kernels/gemm-dtypes.toml"))
            .as_ref()
            .map_err(Clone::clone)
    }

    /// Parses the file's text (`source_name` names it in errors).
    pub fn from_toml(text: &str, source_name: &str) -> Result<GemmDtypes> {
        let devices: BTreeMap<String, DeviceDtypes> =
            toml::from_str(text).map_err(|e| Error::Parse {
                source_name: source_name.to_string(),
                message: e.to_string().trim().replace('\n', " "),
            })?;
        for (id, d) in &devices {
            for f in [d.fp8, d.fp4].into_iter().flatten() {
                for (what, v) in [("compute", f.compute), ("memory", f.memory)] {
                    if !(v > 0.0 && v <= 2.0) {
                        return Err(Error::Parse {
                            source_name: source_name.to_string(),
                            message: format!("[{id}] {what} must lie in (0, 2], got {v}"),
                        });
                    }
                }
            }
        }
        Ok(GemmDtypes { devices })
    }

    /// The factors of `device`, if measured on it or a sibling.
    pub fn get(&self, device: &str) -> Option<&DeviceDtypes> {
        self.devices.get(device)
    }

    /// Measures the factors from `kernels`: every device with a table, then every
    /// device of `hardware` without one that has a sibling with one.
    pub fn measure(kernels: &KernelDb, hardware: &HardwareDb) -> GemmDtypes {
        let mut devices = BTreeMap::new();
        let coverage = kernels.coverage();
        let mut measured: Vec<String> = coverage.iter().map(|c| c.device.clone()).collect();
        measured.dedup();
        for device in &measured {
            let d = DeviceDtypes {
                from: None,
                fp8: factor(kernels, device, "fp8"),
                fp4: factor(kernels, device, "nvfp4"),
            };
            if d.fp8.is_some() || d.fp4.is_some() {
                devices.insert(device.clone(), d);
            }
        }
        for hw in hardware.devices() {
            if devices.contains_key(&hw.id) || measured.contains(&hw.id) {
                continue;
            }
            let sibling = coverage
                .iter()
                .find_map(|c| kernels.sibling(hw, hardware, &c.backend));
            if let Some(s) = sibling
                && let Some(d) = devices.get(&s.id)
            {
                let d = DeviceDtypes {
                    from: Some(s.id.clone()),
                    ..d.clone()
                };
                devices.insert(hw.id.clone(), d);
            }
        }
        GemmDtypes { devices }
    }

    /// The file's text: a header saying how it was made, then one table per device.
    pub fn to_toml(&self) -> String {
        let mut s = String::from(
            "# What an fp8 (nvfp4) weight matmul reaches against a bf16 one of the same shape: per device,\n\
             # the median of efficiency(dtype) / efficiency(bf16) over the points of its kernel tables\n\
             # (data/kernels/<device>/<engine>.csv, every engine pooled) with n, k >= 4096; compute over\n\
             # m >= 1024 rows, memory over m <= 8 (crates/ridgeline-core/src/kernels/dtypes.rs). A device\n\
             # without a table takes its sibling's (`from`). Source: the tables' (aiconfigurator-core==0.12.0,\n\
             # Apache-2.0, Copyright (c) 2025-2026 NVIDIA CORPORATION & AFFILIATES; docs/kernels.md).\n\
             # Generated by `cargo run --release -q --example kernel_check -- --dtypes > data/kernels/gemm-dtypes.toml`;\n\
             # tests/suite/kernels.rs checks it against the tables. Do not edit by hand.\n",
        );
        for (id, d) in &self.devices {
            s.push_str(&format!("\n[{id}]\n"));
            if let Some(f) = &d.from {
                s.push_str(&format!("from = \"{f}\"\n"));
            }
            for (name, f) in [("fp8", d.fp8), ("fp4", d.fp4)] {
                if let Some(f) = f {
                    s.push_str(&format!(
                        "{name} = {{ compute = {:.3}, memory = {:.3}, compute_points = {}, memory_points = {} }}\n",
                        f.compute, f.memory, f.compute_points, f.memory_points
                    ));
                }
            }
        }
        s
    }
}

/// `dtype`'s factor on `device` from its own tables, every engine pooled (`None`
/// without points in both regimes). Values are rounded to the file's three decimals.
fn factor(kernels: &KernelDb, device: &str, dtype: &str) -> Option<DtypeFactor> {
    let (mut compute, mut memory) = (Vec::new(), Vec::new());
    for c in kernels.coverage().iter().filter(|c| c.device == device) {
        let Some(t) = kernels.table(device, &c.backend) else {
            continue;
        };
        let grid = |d: &str| {
            t.grids
                .get(&(OpClass::Gemm, d.to_string(), "-".to_string()))
        };
        let (Some(low), Some(bf16)) = (grid(dtype), grid("bf16")) else {
            continue;
        };
        let reference: BTreeMap<Vec<u64>, f64> = bf16
            .points()
            .map(|(at, e)| (at.iter().map(|x| *x as u64).collect(), e))
            .collect();
        for (at, e) in low.points() {
            let (m, n, k) = (at[0], at[1], at[2]);
            if n < MIN_WEIGHT_DIM || k < MIN_WEIGHT_DIM {
                continue;
            }
            let key: Vec<u64> = at.iter().map(|x| *x as u64).collect();
            let Some(r) = reference.get(&key).filter(|r| **r > 0.0) else {
                continue;
            };
            if m >= COMPUTE_MIN_ROWS {
                compute.push(e / r);
            } else if m <= MEMORY_MAX_ROWS {
                memory.push(e / r);
            }
        }
    }
    let round = |x: f64| (x * 1000.0).round() / 1000.0;
    let median = |v: &[f64]| Some(crate::stats::median(v.iter().copied())).filter(|m| !m.is_nan());
    Some(DtypeFactor {
        compute: round(median(&compute)?),
        memory: round(median(&memory)?),
        compute_points: compute.len(),
        memory_points: memory.len(),
    })
}
