//! How long an all-reduce of a few kilobytes takes, measured: `data/kernels/all-reduce-latency.toml`,
//! generated from the kernel tables ([`AllReduceLatency::measure`]) and read by every
//! prediction whose tensor-parallel group all-reduces over a scale-up link (the tables
//! themselves are read only with `--kernels`).
//!
//! A decode step at a small batch all-reduces tens of kilobytes twice per layer; at that
//! size the time is the collective's latency (launch, the flags the devices exchange),
//! not its bytes, and it differs by engine more than by device: the tables put the
//! all-reduce of 8 devices at 3-6 us under TensorRT-LLM, 13-15 us under vLLM and 16-18 us
//! under SGLang on the H100, H200 and B200. The latency of a device, engine and device
//! count is the fastest measured time among the messages of its table up to 32 KiB (2, 8
//! and 32 KiB: the bytes take a fraction of a microsecond; one of them now and then
//! caught a scheduling hiccup and reads twice its neighbours), and never more than that of
//! a larger device count of the same table (an all-reduce of fewer devices on the same
//! fabric is no slower); a device without a table takes its sibling's
//! ([`KernelDb::sibling`]) as a time (launch and synchronisation, not bandwidth).

use super::{KernelDb, OpClass};
use crate::error::{Error, Result};
use crate::hardware::HardwareDb;
use std::collections::BTreeMap;
use std::sync::OnceLock;

/// The largest message, bytes, whose measured time counts as the latency.
pub const SMALL_MESSAGE_BYTES: f64 = 32768.0;

/// The generated file, embedded.
const BUILTIN_TOML: &str = include_str!("../../../../data/kernels/all-reduce-latency.toml");

/// One device's latencies.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct DeviceLatency {
    /// The device whose tables measured them, where not this one (a sibling).
    pub from: Option<String>,
    /// Seconds by engine id, then device count.
    pub engines: BTreeMap<String, BTreeMap<u64, f64>>,
}

/// The all-reduce latencies of every device with a table or a sibling's, by device id.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct AllReduceLatency {
    devices: BTreeMap<String, DeviceLatency>,
}

impl AllReduceLatency {
    /// The embedded `data/kernels/all-reduce-latency.toml`, parsed once.
    pub fn builtin() -> Result<&'static AllReduceLatency> {
        static DB: OnceLock<Result<AllReduceLatency>> = OnceLock::new();
        DB.get_or_init(|| {
            AllReduceLatency::from_toml(BUILTIN_TOML, "data/kernels/all-reduce-latency.toml")
        })
        .as_ref()
        .map_err(Clone::clone)
    }

    /// Parses the file's text (`source_name` names it in errors): per device a table
    /// with an optional `from` and, per engine, an inline table of microseconds by
    /// device count.
    pub fn from_toml(text: &str, source_name: &str) -> Result<AllReduceLatency> {
        let err = |message: String| Error::Parse {
            source_name: source_name.to_string(),
            message,
        };
        let raw: BTreeMap<String, toml::Table> =
            toml::from_str(text).map_err(|e| err(e.to_string().trim().replace('\n', " ")))?;
        let mut devices = BTreeMap::new();
        for (id, t) in raw {
            let mut d = DeviceLatency::default();
            for (key, v) in t {
                if key == "from" {
                    let from = v
                        .as_str()
                        .ok_or_else(|| err(format!("[{id}] from is a device id")))?;
                    d.from = Some(from.to_string());
                    continue;
                }
                let counts = v
                    .as_table()
                    .ok_or_else(|| err(format!("[{id}] {key} is a table of device counts")))?;
                let mut by = BTreeMap::new();
                for (n, us) in counts {
                    let n: u64 = n.parse().ok().filter(|n| *n >= 2).ok_or_else(|| {
                        err(format!(
                            "[{id}] {key}: '{n}' is not a device count of at least 2"
                        ))
                    })?;
                    let us = us.as_float().or_else(|| us.as_integer().map(|i| i as f64));
                    match us {
                        Some(us) if us > 0.0 && us < 1000.0 => {
                            by.insert(n, us * 1e-6);
                        }
                        _ => {
                            return Err(err(format!(
                                "[{id}] {key}.{n} must be microseconds in (0, 1000)"
                            )));
                        }
                    }
                }
                d.engines.insert(key, by);
            }
            devices.insert(id, d);
        }
        Ok(AllReduceLatency { devices })
    }

    /// The latency, s, of an all-reduce of `gpus` devices on `device` under `engine`,
    /// with whose tables measured it (`None`: the device's own).
    pub fn get(&self, device: &str, engine: &str, gpus: u64) -> Option<(f64, Option<&str>)> {
        let d = self.devices.get(device)?;
        let s = *d.engines.get(engine)?.get(&gpus)?;
        Some((s, d.from.as_deref()))
    }

    /// Measures them from `kernels`: every device with a table, then every device of
    /// `hardware` without one that has a sibling with one.
    pub fn measure(kernels: &KernelDb, hardware: &HardwareDb) -> AllReduceLatency {
        let mut devices: BTreeMap<String, DeviceLatency> = BTreeMap::new();
        for (hw, t) in kernels.tables_on(hardware) {
            let Some(link) = hw.device_link().map(|l| l.bytes_per_s_per_direction) else {
                continue;
            };
            let bw = hw.memory.bandwidth_bytes_per_s;
            let mut by = BTreeMap::new();
            for ((op, dtype, key), grid) in &t.grids {
                if *op != OpClass::AllReduce || dtype != "bf16" {
                    continue;
                }
                let Ok(gpus) = key.parse::<u64>() else {
                    continue;
                };
                let n = gpus as f64;
                // the fastest of the messages up to 32 KiB (a point that caught a
                // scheduling hiccup reads twice its neighbours)
                let fastest = grid
                    .points()
                    .filter(|(at, eff)| at[0] <= SMALL_MESSAGE_BYTES && *eff > 0.0)
                    .map(|(at, eff)| {
                        let size = at[0];
                        (2.0 * size / bw).max(2.0 * (n - 1.0) / n * size / link) / eff
                    })
                    .fold(f64::INFINITY, f64::min);
                if fastest.is_finite() {
                    // kept to the file's 0.1 us
                    by.insert(gpus, (fastest * 1e7).round() / 1e7);
                }
            }
            // an all-reduce of fewer devices on the same fabric is no slower than one of
            // more: where the table says otherwise (SGLang's and vLLM's 4 B200, 35 and 23
            // us against 16 and 14 us for 8), the larger group's time stands
            let counts: Vec<u64> = by.keys().copied().collect();
            for (i, n) in counts.iter().enumerate() {
                let more = counts[i + 1..]
                    .iter()
                    .map(|m| by[m])
                    .fold(f64::INFINITY, f64::min);
                if more < by[n] {
                    by.insert(*n, more);
                }
            }
            if !by.is_empty() {
                devices
                    .entry(t.device.clone())
                    .or_default()
                    .engines
                    .insert(t.backend.clone(), by);
            }
        }
        let measured = devices.clone();
        let coverage = kernels.coverage();
        for hw in hardware.devices() {
            if measured.contains_key(&hw.id) || coverage.iter().any(|c| c.device == hw.id) {
                continue;
            }
            let mut d = DeviceLatency::default();
            for c in &coverage {
                let Some(s) = kernels.sibling(hw, hardware, &c.backend) else {
                    continue;
                };
                if let Some(by) = measured.get(&s.id).and_then(|m| m.engines.get(&c.backend)) {
                    d.from = Some(s.id.clone());
                    d.engines.insert(c.backend.clone(), by.clone());
                }
            }
            if !d.engines.is_empty() {
                devices.insert(hw.id.clone(), d);
            }
        }
        AllReduceLatency { devices }
    }

    /// The file's text: a header saying how it was made, then one table per device.
    pub fn to_toml(&self) -> String {
        let mut s = String::from(
            "# The latency of an all-reduce, microseconds: per device, engine and device count, the fastest\n\
             # measured time of the messages up to 32 KiB in its kernel table, at most a larger device\n\
             # count's (data/kernels/<device>/<engine>.csv; crates/ridgeline-core/src/kernels/latency.rs).\n\
             # A device without a table takes its sibling's (`from`). Source: the tables'\n\
             # (aiconfigurator-core==0.12.0, Apache-2.0, Copyright (c) 2025-2026 NVIDIA CORPORATION &\n\
             # AFFILIATES; docs/kernels.md). Generated by\n\
             # `cargo run --release -q --example kernel_check -- --latency > data/kernels/all-reduce-latency.toml`;\n\
             # tests/suite/kernels.rs checks it against the tables. Do not edit by hand.\n",
        );
        for (id, d) in &self.devices {
            s.push_str(&format!("\n[{id}]\n"));
            if let Some(f) = &d.from {
                s.push_str(&format!("from = \"{f}\"\n"));
            }
            for (engine, by) in &d.engines {
                let cells: Vec<String> = by
                    .iter()
                    .map(|(n, sec)| format!("{n} = {:.1}", sec * 1e6))
                    .collect();
                s.push_str(&format!("{engine} = {{ {} }}\n", cells.join(", ")));
            }
        }
        s
    }
}
