//! Measured kernel efficiencies: what fraction of the roofline an engine's kernels
//! reach on a device, per op class, dtype and shape.
//!
//! The tables (`data/kernels/<device>/<engine>.csv`) are written by
//! `tools/import_kernels.py` from NVIDIA's measured kernel database
//! (`aiconfigurator-core` 0.12.0, Apache-2.0) and embedded in the crate; they are parsed
//! on first use. A directory in the same schema (`--kernels DIR`) adds or replaces
//! tables ([`KernelDb::load_dir`]). The schema, the roof each efficiency is a fraction
//! of, and how the tables compare with ridgeline's fitted efficiencies:
//! `docs/kernels.md`. Predictions read them per op with `--kernels`
//! ([`crate::predict::Predictor::with_kernels`]); every prediction reads what fp8 and fp4
//! matmuls reach against 16-bit ones, derived from them ([`GemmDtypes`]).

mod dtypes;
mod grid;
mod latency;
mod parse;

pub use dtypes::{DeviceDtypes, DtypeFactor, GemmDtypes};
pub use grid::Grid;
pub use latency::{AllReduceLatency, DeviceLatency};
pub use parse::HEADER;

use crate::engine::{Engine, EngineDb};
use crate::error::{Error, Result};
use crate::hardware::{Hardware, HardwareDb};
use serde::Serialize;
use std::collections::BTreeMap;
use std::path::Path;
use std::sync::OnceLock;

crate::named_enum! {
    /// The kinds of kernel a table measures.
    #[derive(PartialOrd, Ord)]
    pub enum OpClass: "op class" {
        /// A dense matmul `[m, k] · [k, n]`: axes `m`, `n`, `k`; key `-`; dtype the
        /// weights' (`bf16`, `fp8`, `nvfp4`).
        Gemm = "gemm",
        /// Causal prompt attention (no cache before the prompt): axes `batch`, `seq`;
        /// key `heads/kv_heads/head_dim`; dtype the KV cache's.
        AttentionPrefill = "attention_prefill",
        /// One decode step's attention over the cache: axes `batch`, `kv_len` (the
        /// cached tokens and the new one); key `heads/kv_heads/head_dim`; dtype the
        /// KV cache's.
        AttentionDecode = "attention_decode",
        /// An all-reduce within a scale-up domain: axis `bytes` (the message); key
        /// the device count.
        AllReduce = "all_reduce",
        /// A routed-expert block (the experts' gate/up matmul, gated activation and
        /// down matmul on one device, experts whole): axis `tokens` (the pass's
        /// tokens over the expert-parallel group); key
        /// `hidden/inter/topk/experts/ep`; dtype the experts' format (`bf16`, `fp8`,
        /// `fp8-block`, `nvfp4`, `mxfp4`).
        Moe = "moe",
        /// One decode step's absorbed latent attention (DeepSeek-V3's MLA: one query
        /// token per sequence over the cached latents): axes `batch`, `kv_len`; key
        /// `heads/kv_lora/rope` (one device's heads, the latent and shared rotary key
        /// widths); dtype the KV cache's.
        MlaDecode = "mla_decode",
    }
}

impl OpClass {
    /// The names of the class's grid axes, in the table's `x, y, z` order.
    pub fn axes(self) -> &'static [&'static str] {
        match self {
            OpClass::Gemm => &["m", "n", "k"],
            OpClass::AttentionPrefill => &["batch", "seq"],
            OpClass::AttentionDecode => &["batch", "kv_len"],
            OpClass::AllReduce => &["bytes"],
            OpClass::Moe => &["tokens"],
            OpClass::MlaDecode => &["batch", "kv_len"],
        }
    }
}

/// A shape to look up.
#[derive(Debug, Clone, Copy, PartialEq)]
pub enum Shape {
    /// A matmul `[m, k] · [k, n]` ([`OpClass::Gemm`]).
    Gemm {
        /// Rows (tokens).
        m: u64,
        /// Output columns.
        n: u64,
        /// The reduced dimension.
        k: u64,
    },
    /// One attention call ([`OpClass::AttentionPrefill`], [`OpClass::AttentionDecode`]).
    Attention {
        /// Sequences.
        batch: u64,
        /// Prompt tokens (prefill) or cached tokens including the new one (decode).
        len: u64,
        /// Query heads.
        heads: u64,
        /// Key/value heads.
        kv_heads: u64,
        /// Dimension per head.
        head_dim: u64,
    },
    /// An all-reduce ([`OpClass::AllReduce`]).
    AllReduce {
        /// Devices taking part.
        gpus: u64,
        /// Message bytes.
        bytes: f64,
    },
    /// One decode step's absorbed latent attention ([`OpClass::MlaDecode`]).
    Mla {
        /// Sequences.
        batch: u64,
        /// Cached tokens including the new one.
        len: u64,
        /// Query heads on the device.
        heads: u64,
        /// The latent's width (`kv_lora_rank`), also the value's.
        kv_lora: u64,
        /// The shared rotary key's width (`qk_rope_head_dim`).
        rope: u64,
    },
    /// A routed-expert block on one device of an expert-parallel group
    /// ([`OpClass::Moe`]): it runs `tokens · topk / ep` rows through the experts it
    /// holds (`experts / ep`, each whole).
    Moe {
        /// The pass's tokens over the whole expert-parallel group.
        tokens: u64,
        /// Model width.
        hidden: u64,
        /// One expert's intermediate width.
        inter: u64,
        /// Experts per token.
        topk: u64,
        /// Routed experts.
        experts: u64,
        /// Expert-parallel degree.
        ep: u64,
    },
}

/// The `N` positive or zero integers of a key `a/b/...` (exactly `N` of them).
fn ints<const N: usize>(key: &str) -> Option<[u64; N]> {
    let mut out = [0; N];
    let mut parts = key.split('/');
    for o in &mut out {
        *o = parts.next()?.parse().ok()?;
    }
    parts.next().is_none().then_some(out)
}

impl Shape {
    /// The attention call a table point of `op` measures, with the KV cache of `dtype`
    /// (`fp8`: 8 bits, else 16) and 16-bit queries and outputs: a prompt of `len` tokens
    /// (causal, no cache before it) or one decode step over `len` cached tokens. `None`
    /// for a shape or class that is not attention. The importer's roof is this call's
    /// [`crate::ops::attention_fused`] cost.
    pub fn attention(&self, op: OpClass, dtype: &str) -> Option<crate::ops::AttentionShape> {
        let kv_bits = if dtype == "fp8" { 8.0 } else { 16.0 };
        let (batch, len, [heads, b, c]) = self.attention_parts(op)?;
        let gqa = crate::ops::AttentionShape::gqa;
        Some(match op {
            OpClass::AttentionPrefill => gqa(batch, len, len, heads, b, c, 16.0, kv_bits),
            OpClass::AttentionDecode => gqa(batch, 1, len, heads, b, c, 16.0, kv_bits),
            // as `model::graph` runs the latent form: one shared key of the latent (`b`)
            // and the rotary part (`c`), the latent as the value, read once for all heads
            _ => crate::ops::AttentionShape {
                v_dim: b,
                kv_elems_per_token: (b + c) as f64,
                ..gqa(batch, 1, len, heads, 1, b + c, 16.0, kv_bits)
            },
        })
    }

    /// The sequences, length and three key integers of an attention shape under `op`
    /// (softmax: heads, KV heads, head dim; latent: heads, latent and rotary widths);
    /// `None` for a shape that is not of that class.
    fn attention_parts(&self, op: OpClass) -> Option<(u64, u64, [u64; 3])> {
        match (*self, op) {
            (
                Shape::Attention {
                    batch,
                    len,
                    heads,
                    kv_heads,
                    head_dim,
                },
                OpClass::AttentionPrefill | OpClass::AttentionDecode,
            ) => Some((batch, len, [heads, kv_heads, head_dim])),
            (
                Shape::Mla {
                    batch,
                    len,
                    heads,
                    kv_lora,
                    rope,
                },
                OpClass::MlaDecode,
            ) => Some((batch, len, [heads, kv_lora, rope])),
            _ => None,
        }
    }

    /// A routed-expert block's three ops on one device (gate/up matmul, gated
    /// activation, down matmul), each as (FLOPs, bytes), counted as the graph counts
    /// them (`model::graph`) with experts in a format of `weight_bits` and 16-bit
    /// activations: `tokens · topk / ep` rows; the weights of the experts the tokens
    /// touch among the device's `experts / ep`; the activation's FLOPs are not part of
    /// the roof (`tools/import_kernels.py`). `None` for a shape that is not a block.
    pub fn moe_ops(&self, weight_bits: f64) -> Option<[(f64, f64); 3]> {
        let Shape::Moe {
            tokens,
            hidden,
            inter,
            topk,
            experts,
            ep,
        } = *self
        else {
            return None;
        };
        let (h, i, ep) = (hidden as f64, inter as f64, ep.max(1) as f64);
        let rows = tokens as f64 * topk as f64 / ep;
        let touched = crate::model::graph::expected_experts(experts, topk, tokens) / ep;
        let w = weight_bits / 8.0;
        Some([
            (
                2.0 * rows * h * 2.0 * i,
                rows * h * 2.0 + touched * h * 2.0 * i * w + rows * 2.0 * i * 2.0,
            ),
            (0.0, 3.0 * rows * i * 2.0),
            (
                2.0 * rows * i * h,
                rows * i * 2.0 + touched * i * h * w + rows * h * 2.0,
            ),
        ])
    }

    /// The table key and grid coordinates of the shape under `op`; `None` when the
    /// shape is not of that class.
    #[cfg(test)]
    fn key(&self, op: OpClass) -> Option<(String, Vec<f64>)> {
        let (mut key, mut at) = (String::new(), [0.0; 3]);
        let n = self.write_key(op, &mut key, &mut at)?;
        Some((key, at[..n].to_vec()))
    }

    /// The table key of the shape under `op`, written to `key`, and its grid
    /// coordinates, written to `at` (how many returned); `None` when the shape is not
    /// of that class. No allocation once `key` has grown.
    fn write_key(&self, op: OpClass, key: &mut String, at: &mut [f64; 3]) -> Option<usize> {
        use std::fmt::Write as _;
        key.clear();
        // writing to a String does not fail
        let n = match (*self, op) {
            (Shape::Gemm { m, n, k }, OpClass::Gemm) => {
                key.push('-');
                *at = [m as f64, n as f64, k as f64];
                3
            }
            (Shape::Attention { .. }, OpClass::AttentionPrefill | OpClass::AttentionDecode)
            | (Shape::Mla { .. }, OpClass::MlaDecode) => {
                let (batch, len, [a, b, c]) = self.attention_parts(op)?;
                let _ = write!(key, "{a}/{b}/{c}");
                (at[0], at[1]) = (batch as f64, len as f64);
                2
            }
            (Shape::AllReduce { gpus, bytes }, OpClass::AllReduce) => {
                let _ = write!(key, "{gpus}");
                at[0] = bytes;
                1
            }
            (
                Shape::Moe {
                    tokens,
                    hidden,
                    inter,
                    topk,
                    experts,
                    ep,
                },
                OpClass::Moe,
            ) => {
                let _ = write!(key, "{hidden}/{inter}/{topk}/{experts}/{ep}");
                at[0] = tokens as f64;
                1
            }
            _ => return None,
        };
        Some(n)
    }

    /// The shape of the grid point `at` under table key `key` for `op` (the inverse of
    /// the key a shape is looked up by: `m, n, k` for a GEMM; `heads/kv_heads/head_dim`
    /// with `batch, len` for attention; the device count with the message bytes for an
    /// all-reduce; `hidden/inter/topk/experts/ep` with `tokens` for a routed-expert
    /// block); `None` where `key` or `at` does not fit `op`.
    pub fn at(op: OpClass, key: &str, at: &[f64]) -> Option<Shape> {
        let n = |i: usize| at.get(i).map(|&x| x as u64);
        Some(match op {
            OpClass::Gemm => Shape::Gemm {
                m: n(0)?,
                n: n(1)?,
                k: n(2)?,
            },
            OpClass::AttentionPrefill | OpClass::AttentionDecode | OpClass::MlaDecode => {
                let ([heads, b, c], batch, len) = (ints::<3>(key)?, n(0)?, n(1)?);
                if op == OpClass::MlaDecode {
                    Shape::Mla {
                        batch,
                        len,
                        heads,
                        kv_lora: b,
                        rope: c,
                    }
                } else {
                    Shape::Attention {
                        batch,
                        len,
                        heads,
                        kv_heads: b,
                        head_dim: c,
                    }
                }
            }
            OpClass::AllReduce => Shape::AllReduce {
                gpus: key.parse().ok()?,
                bytes: *at.first()?,
            },
            OpClass::Moe => {
                let [hidden, inter, topk, experts, ep] = ints::<5>(key)?;
                Shape::Moe {
                    tokens: n(0)?,
                    hidden,
                    inter,
                    topk,
                    experts,
                    ep,
                }
            }
        })
    }
}

/// Most a sibling's 16-bit tensor peak or memory bandwidth may differ from the device's
/// (either way) for its kernel efficiencies to stand in ([`KernelDb::sibling`]): H100
/// SXM for H100 PCIe (989.5 against 756 TFLOP/s, 3.35 against 2.0 TB/s), L40S for RTX
/// 4090, not A100 for A10G (312 against 70 TFLOP/s and 2.04 against 0.6 TB/s, a
/// different die).
pub const MAX_SIBLING_RATIO: f64 = 2.5;

/// Where a kernel efficiency comes from.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Source {
    /// The device's own measured table.
    Measured,
    /// The table of a sibling device (its id), as a fraction of this device's roof.
    Transferred(String),
}

/// One device's table under one engine.
#[derive(Debug, Clone, PartialEq)]
pub struct Table {
    /// Ridgeline hardware id (`h100-sxm`).
    pub device: String,
    /// Ridgeline engine id (`trt-llm`, `vllm`, `sglang`).
    pub backend: String,
    /// Engine versions the rows were measured with, in the file's order.
    pub versions: Vec<String>,
    /// The file it was read from (`data/kernels/h100-sxm/trt-llm.csv` when built in).
    pub source: String,
    /// Grids by (op class, dtype, key).
    pub grids: BTreeMap<(OpClass, String, String), Grid>,
    /// [`Table::shortest_kernel_s`], worked out on first use.
    pub(crate) shortest: Kept,
}

/// A value worked out from a table on first use; two tables are equal whatever each
/// has worked out.
#[derive(Debug, Clone, Default)]
pub(crate) struct Kept(OnceLock<Option<f64>>);

impl PartialEq for Kept {
    fn eq(&self, _: &Self) -> bool {
        true
    }
}

impl Table {
    /// The shortest time of a measured 16-bit GEMM in the table on `hw` (the device it
    /// was measured on, whose roof its efficiencies are fractions of), s: what the
    /// smallest kernel of that device under that engine takes whatever its work, its
    /// launch and the ramp of its waves (3.9 us for vLLM on H100 SXM at 1 x 1024 x
    /// 1024, whose bytes alone would take 0.6 us). `None` where the table has no
    /// 16-bit GEMM.
    pub fn shortest_kernel_s(&self, hw: &Hardware) -> Option<f64> {
        *self.shortest.0.get_or_init(|| {
            let peak = hw.peak(crate::dtype::ComputeDtype::Bf16).0;
            let bw = hw.memory.bandwidth_bytes_per_s;
            let mut best = f64::INFINITY;
            for ((op, dtype, _), grid) in &self.grids {
                if *op != OpClass::Gemm || dtype != "bf16" {
                    continue;
                }
                for (at, eff) in grid.points() {
                    // the importer's roof: the GEMM as the graph counts a 16-bit one
                    let [m, n, k] = [at[0], at[1], at[2]].map(|x| x as u64);
                    let out = crate::ops::Operand::activations(16.0);
                    let c = crate::ops::linear(m, k, n, 16.0, 16.0, out, false);
                    let t = (c.flops / peak).max(c.bytes() / bw) / eff;
                    if eff > 0.0 && t.is_finite() {
                        best = best.min(t);
                    }
                }
            }
            best.is_finite().then_some(best)
        })
    }
}

/// What one table covers, for `ridgeline kernels`.
#[derive(Debug, Clone, PartialEq, Serialize)]
#[non_exhaustive]
pub struct Coverage {
    /// Ridgeline hardware id.
    pub device: String,
    /// Ridgeline engine id.
    pub backend: String,
    /// Engine versions measured (comma-separated where several).
    pub version: String,
    /// Op classes with at least one row, in [`OpClass::ALL`] order.
    pub op_classes: Vec<OpClass>,
    /// Dtypes measured, sorted.
    pub dtypes: Vec<String>,
    /// Measured points.
    pub points: usize,
    /// The file the table comes from.
    pub source: String,
}

/// Kernel tables by (device, engine).
#[derive(Debug, Clone, Default)]
pub struct KernelDb {
    tables: BTreeMap<(String, String), Slot>,
}

/// One table as held: read from a file, or embedded and parsed on first use (a
/// prediction reads the tables of its device and engine, not all 27: parsing them all
/// took about 0.5 G instructions at every start).
#[derive(Debug, Clone)]
enum Slot {
    Read(Table),
    Embedded {
        text: &'static str,
        /// `None` once parsed: the text did not parse (every embedded table parses:
        /// `kernels::tests::every_embedded_table_parses`).
        table: OnceLock<Option<Table>>,
    },
}

impl Slot {
    fn get(&self, device: &str, backend: &str) -> Option<&Table> {
        match self {
            Slot::Read(t) => Some(t),
            Slot::Embedded { text, table } => table
                .get_or_init(|| {
                    let source = format!("data/kernels/{device}/{backend}.csv");
                    parse::table(text, &source, device, backend).ok()
                })
                .as_ref(),
        }
    }
}

impl PartialEq for KernelDb {
    /// The same tables (embedded ones compared as parsed).
    fn eq(&self, other: &Self) -> bool {
        self.tables.len() == other.tables.len()
            && self
                .tables
                .iter()
                .zip(&other.tables)
                .all(|((ka, a), (kb, b))| ka == kb && a.get(&ka.0, &ka.1) == b.get(&kb.0, &kb.1))
    }
}

/// A table's device and engine from its name, `<device>/<engine>.csv`.
fn table_name<'n>(name: &'n str, source: &str) -> Result<(&'n str, &'n str)> {
    let (device, file) = name.split_once('/').unwrap_or(("", name));
    let backend = file.strip_suffix(".csv").unwrap_or(file);
    if device.is_empty() || backend.is_empty() {
        return Err(Error::Parse {
            source_name: source.to_string(),
            message: "a kernel table is named <device>/<engine>.csv".into(),
        });
    }
    Ok((device, backend))
}

/// The grid of `t` under `op`, `dtype` and `shape`'s key (`None` inside: no such
/// grid) and the shape's coordinates in it (the first of them); `None` where the shape
/// is not of class `op`. The key is written into a buffer kept per thread: a lookup
/// allocates nothing.
fn find<'t>(
    t: &'t Table,
    op: OpClass,
    dtype: &str,
    shape: &Shape,
) -> Option<(Option<&'t Grid>, [f64; 3], usize)> {
    type Key = (OpClass, String, String);
    thread_local! {
        static KEY: std::cell::RefCell<Key> =
            const { std::cell::RefCell::new((OpClass::Gemm, String::new(), String::new())) };
    }
    KEY.with_borrow_mut(|k| {
        let mut at = [0.0; 3];
        let n = shape.write_key(op, &mut k.2, &mut at)?;
        k.0 = op;
        k.1.clear();
        k.1.push_str(dtype);
        Some((t.grids.get(&*k), at, n))
    })
}

impl KernelDb {
    /// The embedded tables, each parsed on first use.
    pub fn builtin() -> Result<&'static KernelDb> {
        static DB: OnceLock<Result<KernelDb>> = OnceLock::new();
        DB.get_or_init(|| {
            let mut db = KernelDb::default();
            for (name, text) in crate::hardware::KERNEL_FILES {
                let (device, backend) = table_name(name, &format!("data/kernels/{name}"))?;
                db.tables.insert(
                    (device.to_string(), backend.to_string()),
                    Slot::Embedded {
                        text,
                        table: OnceLock::new(),
                    },
                );
            }
            Ok(db)
        })
        .as_ref()
        .map_err(Clone::clone)
    }

    /// Parses `text`, named `<device>/<engine>.csv` by `name`, and adds it (replacing
    /// a table of the same device and engine).
    fn add_file(&mut self, name: &str, text: &str, source: &str) -> Result<()> {
        let (device, backend) = table_name(name, source)?;
        let t = parse::table(text, source, device, backend)?;
        self.tables
            .insert((device.to_string(), backend.to_string()), Slot::Read(t));
        Ok(())
    }

    /// Whether a table of `device` under `backend` is held (without parsing it).
    fn has(&self, device: &str, backend: &str) -> bool {
        self.tables
            .contains_key(&(device.to_string(), backend.to_string()))
    }

    /// Adds every `<dir>/<device>/<engine>.csv` of a directory in the importer's schema
    /// (a table replaces the built-in one of the same device and engine); returns the
    /// files read, sorted. A file that does not parse is an error naming it, the line
    /// and the column; a directory with no table is an error too.
    pub fn load_dir(&mut self, dir: &Path) -> Result<Vec<String>> {
        let entries = |p: &Path| -> Result<Vec<std::path::PathBuf>> {
            let mut v: Vec<_> = std::fs::read_dir(p)
                .map_err(|e| Error::read(p, e))?
                .flatten()
                .map(|e| e.path())
                .collect();
            v.sort();
            Ok(v)
        };
        let mut read = Vec::new();
        for device_dir in entries(dir)?.into_iter().filter(|p| p.is_dir()) {
            for file in entries(&device_dir)? {
                if file.extension().and_then(|e| e.to_str()) != Some("csv") {
                    continue;
                }
                let text = crate::files::read_document(&file)?;
                let device = device_dir.file_name().unwrap_or_default().to_string_lossy();
                let engine = file.file_name().unwrap_or_default().to_string_lossy();
                let shown = file.display().to_string();
                self.add_file(&format!("{device}/{engine}"), &text, &shown)?;
                read.push(shown);
            }
        }
        if read.is_empty() {
            return Err(Error::invalid(
                "kernels",
                format!("{} holds no <device>/<engine>.csv table", dir.display()),
            ));
        }
        Ok(read)
    }

    /// Drops every table of `device` (to hold a device out, as `examples/kernel_check.rs
    /// --transfer` does).
    pub fn remove_device(&mut self, device: &str) {
        self.tables.retain(|(d, _), _| d != device);
    }

    /// Every table whose device `hardware` holds, with that device, in
    /// [`KernelDb::coverage`]'s order (by device, then engine).
    pub fn tables_on<'s, 'h>(
        &'s self,
        hardware: &'h HardwareDb,
    ) -> impl Iterator<Item = (&'h Hardware, &'s Table)> {
        self.tables
            .iter()
            .filter_map(|((d, b), slot)| slot.get(d, b))
            .filter_map(move |t| hardware.get(&t.device).ok().map(|hw| (hw, t)))
    }

    /// The table of `device` under `backend`, if any.
    pub fn table(&self, device: &str, backend: &str) -> Option<&Table> {
        self.tables
            .get(&(device.to_string(), backend.to_string()))?
            .get(device, backend)
    }

    /// The measured efficiency of `op` on `device` under `backend` at `shape` for
    /// `dtype` (see [`OpClass`] for what the dtype is of): interpolated in the grid of
    /// that (op, dtype, key) as `Grid::at` does (linear in the logarithms of the
    /// coordinates, clamped at the measured edges). Attention at a head count no key
    /// holds is read at the key of the same head dimension and group size with the
    /// nearest KV-head count, at the batch that keeps batch x KV heads. `None` where no
    /// table, grid or key covers it, or `shape` is not of class `op`.
    pub fn efficiency(
        &self,
        device: &str,
        backend: &str,
        op: OpClass,
        dtype: &str,
        shape: &Shape,
    ) -> Option<f64> {
        let t = self.table(device, backend)?;
        if let (Some(g), at, n) = find(t, op, dtype, shape)? {
            return g.at(&at[..n]);
        }
        // attention at a head count the table lacks: the measured key of the same head
        // dimension and group size (query heads per KV head) with the nearest KV-head
        // count, its batch scaled to keep batch x KV heads (the kernel's parallel work
        // and its bytes). Where that leaves less than one sequence of a decode step, the
        // point is one sequence whose cache is as much shorter (the same bytes and
        // pairs, so the same roof, and the kernel's fixed time, which a decode kernel
        // that small is mostly: the fraction of a sequence would take that fraction of
        // its time), and a cache shorter than any measured the shortest one's time
        let Shape::Attention {
            batch,
            len,
            heads,
            kv_heads,
            head_dim,
        } = *shape
        else {
            return None;
        };
        let near = t
            .grids
            .keys()
            .filter(|(o, d, _)| *o == op && d == dtype)
            .filter_map(|(_, _, k)| match Shape::at(op, k, &[1.0, 1.0])? {
                Shape::Attention {
                    heads: h,
                    kv_heads: kv,
                    head_dim: hd,
                    ..
                } if hd == head_dim && kv > 0 && h * kv_heads == heads * kv => Some(kv),
                _ => None,
            })
            .min_by(|a, b| {
                let d = |kv: u64| (kv as f64 / kv_heads as f64).ln().abs();
                d(*a).total_cmp(&d(*b)).then(a.cmp(b))
            })?;
        let rows = batch as f64 * kv_heads as f64 / near as f64;
        let shorter = rows < 1.0 && op == OpClass::AttentionDecode;
        let (batch, len) = if shorter {
            (1, ((len as f64 * rows).round() as u64).max(1))
        } else {
            (rows.round().max(1.0) as u64, len)
        };
        let scaled = Shape::Attention {
            batch,
            len,
            heads: heads * near / kv_heads,
            kv_heads: near,
            head_dim,
        };
        let (g, at, n) = find(t, op, dtype, &scaled)?;
        let g = g?;
        // a cache shorter than any measured at one sequence takes the time of the
        // shortest measured (its fixed time): that point's efficiency over the ratio
        let shortest = || {
            g.points()
                .find(|(c, _)| c.first() == Some(&1.0))
                .and_then(|(c, _)| c.get(1).copied())
        };
        match shorter.then(shortest).flatten() {
            Some(min) if (len as f64) < min => Some(g.at(&[1.0, min])? * len as f64 / min),
            _ => g.at(&at[..n]),
        }
    }

    /// The device whose table under `backend` stands in for `hw`'s where `hw` has none
    /// of its own (a sibling: efficiencies are fractions of each device's own roof, so
    /// they carry over by clocks and bandwidth): among the other devices of `hardware`
    /// with such a table, those of `hw`'s architecture whose 16-bit tensor peak and
    /// memory bandwidth are both within [`MAX_SIBLING_RATIO`] of `hw`'s, the nearest by
    /// `|ln(peak ratio)| + |ln(bandwidth ratio)|` (ties to the lower id). `None` where
    /// no device qualifies, or `hw` has a table of its own (then nothing is
    /// transferred).
    pub fn sibling<'h>(
        &self,
        hw: &Hardware,
        hardware: &'h HardwareDb,
        backend: &str,
    ) -> Option<&'h Hardware> {
        if self.has(&hw.id, backend) {
            return None;
        }
        let peak = |h: &Hardware| h.peak(crate::dtype::ComputeDtype::Bf16).0;
        let bw = |h: &Hardware| h.memory.bandwidth_bytes_per_s;
        let dist = |h: &Hardware| {
            let (p, b) = (peak(h) / peak(hw), bw(h) / bw(hw));
            let within = |r: f64| r > 0.0 && r.max(1.0 / r) <= MAX_SIBLING_RATIO;
            (within(p) && within(b)).then(|| p.ln().abs() + b.ln().abs())
        };
        hardware
            .devices()
            .iter()
            .filter(|h| h.id != hw.id && h.architecture == hw.architecture)
            .filter(|h| self.has(&h.id, backend))
            .filter_map(|h| dist(h).map(|d| (d, h)))
            .min_by(|a, b| a.0.total_cmp(&b.0).then_with(|| a.1.id.cmp(&b.1.id)))
            .map(|(_, h)| h)
    }

    /// The device whose table `hw` reads under `backend`, and how: its own
    /// ([`Source::Measured`]) or else its [`KernelDb::sibling`]'s
    /// ([`Source::Transferred`]); `None` where neither has one.
    pub fn table_for<'h>(
        &self,
        hw: &'h Hardware,
        hardware: &'h HardwareDb,
        backend: &str,
    ) -> Option<(&'h str, Source)> {
        if self.has(&hw.id, backend) {
            return Some((&hw.id, Source::Measured));
        }
        self.sibling(hw, hardware, backend)
            .map(|from| (from.id.as_str(), Source::Transferred(from.id.clone())))
    }

    /// The profile a prediction under `engine` on `hw` uses when it reads these
    /// tables: where a table covers the device ([`KernelDb::table_for`]) and `engines`
    /// holds a profile of the engine fitted on the tables ([`EngineDb::on_tables`]),
    /// that one; else `engine`.
    pub fn engine_for<'e>(
        &self,
        engine: &'e Engine,
        engines: &'e EngineDb,
        hw: &Hardware,
        hardware: &HardwareDb,
    ) -> &'e Engine {
        match self.table_for(hw, hardware, &engine.id) {
            Some(_) => engines.on_tables(&engine.id).unwrap_or(engine),
            None => engine,
        }
    }

    /// [`KernelDb::efficiency`] on `hw` under `backend`, from the table
    /// [`KernelDb::table_for`] picks; `None` where no table covers the op.
    pub fn lookup(
        &self,
        hw: &Hardware,
        hardware: &HardwareDb,
        backend: &str,
        op: OpClass,
        dtype: &str,
        shape: &Shape,
    ) -> Option<(f64, Source)> {
        let (id, source) = self.table_for(hw, hardware, backend)?;
        let e = self.efficiency(id, backend, op, dtype, shape)?;
        let transfer = match &source {
            Source::Transferred(_) => hardware
                .get(id)
                .map_or(Transfer::NONE, |from| Transfer::between(from, hw)),
            Source::Measured => Transfer::NONE,
        };
        Some((transfer.carry(op, e, dtype, shape), source))
    }

    /// What every table covers, by device then engine.
    pub fn coverage(&self) -> Vec<Coverage> {
        self.tables
            .iter()
            .filter_map(|((d, b), slot)| slot.get(d, b))
            .map(|t| {
                let mut dtypes: Vec<String> = t.grids.keys().map(|k| k.1.clone()).collect();
                dtypes.sort();
                dtypes.dedup();
                Coverage {
                    device: t.device.clone(),
                    backend: t.backend.clone(),
                    version: t.versions.join(", "),
                    op_classes: OpClass::ALL
                        .iter()
                        .copied()
                        .filter(|o| t.grids.keys().any(|k| k.0 == *o))
                        .collect(),
                    dtypes,
                    points: t.grids.values().map(Grid::len).sum(),
                    source: t.source.clone(),
                }
            })
            .collect()
    }
}

/// How a sibling's measured efficiencies carry to a device without a table of its own
/// ([`KernelDb::lookup`], the predictor on tables). A fraction of the roof carries as
/// it is, except attention's, whose kernels' time follows the device's SMs and clocks
/// more than its roof (docs/kernels.md, "Siblings"); only between HBM parts, where that
/// was measured (a GDDR part has a quarter of the bandwidth per SM and may well be
/// bound by it):
///
/// - a decode step's attention: the H200 runs the H100's decode attention in about the
///   same time with 1.43x the bandwidth, so its time carries at the ratio of the
///   devices' SM rates (`sm_rate`). Its roof is the bandwidth's on both (a few FLOPs
///   per byte), so the fraction scales by `bw(from) / bw(to) x rate(to) / rate(from)`.
/// - a whole prompt's attention: the H200 takes the H100's time at every length, where
///   its roof is the bandwidth's and where it is the tensor peak's; the B300 (the
///   B200's tensor peak, twice its exponential rate) takes 0.77-0.92x the B200's, less
///   the longer the prompt. So the time splits in two: the kernel's ideal work, its
///   tensor FLOPs at the 16-bit peak plus its softmax exponentials at the
///   special-function rate (peak over [`crate::hardware::Peaks::flops_per_exp2`], where
///   both devices give it), at each device's own rates; the rest (launch, pipeline
///   fill, masking, rescaling) at the ratio of the SM rates.
#[derive(Debug, Clone, Copy, PartialEq)]
pub(crate) struct Transfer {
    /// What a decode step's attention efficiency is multiplied by.
    decode_scale: f64,
    /// A prompt's attention: the two devices' rates, where both are HBM parts.
    prompt: Option<PromptRates>,
}

/// The rates a prompt's attention carries by ([`Transfer`]).
#[derive(Debug, Clone, Copy, PartialEq)]
struct PromptRates {
    /// The sibling's.
    from: AttentionRates,
    /// The device's.
    to: AttentionRates,
    /// `rate(from) / rate(to)`: what the time beyond the ideal work is multiplied by.
    sm_ratio: f64,
}

/// One device's rates for a prompt's attention and a routed-expert block.
#[derive(Debug, Clone, Copy, PartialEq)]
struct AttentionRates {
    /// 16-bit tensor peak, FLOP/s.
    tensor: f64,
    /// fp8 and fp4 tensor peaks, FLOP/s (the next wider one's where the device has none).
    fp8: f64,
    /// See `fp8`.
    fp4: f64,
    /// Memory bandwidth, bytes/s.
    bandwidth: f64,
    /// Base-2 exponentials per second (0: not counted).
    exp2: f64,
}

impl Transfer {
    /// A device's own table: nothing changes.
    pub(crate) const NONE: Transfer = Transfer {
        decode_scale: 1.0,
        prompt: None,
    };

    /// From `from`'s table to its sibling `to`.
    pub(crate) fn between(from: &Hardware, to: &Hardware) -> Transfer {
        let hbm = |h: &Hardware| crate::engine::memory_key(h) == Some("hbm");
        if !(hbm(from) && hbm(to)) {
            return Transfer::NONE;
        }
        let bw = |h: &Hardware| h.memory.bandwidth_bytes_per_s;
        let (rf, rt) = sm_rate(from, to);
        let tensor = |h: &Hardware| h.peak(crate::dtype::ComputeDtype::Bf16).0;
        let exp2 = |h: &Hardware| h.peak_flops_per_s.flops_per_exp2.map(|f| tensor(h) / f);
        let (ef, et) = match (exp2(from), exp2(to)) {
            (Some(a), Some(b)) => (a, b),
            _ => (f64::INFINITY, f64::INFINITY),
        };
        let rates = |h: &Hardware, exp2: f64| AttentionRates {
            tensor: tensor(h),
            fp8: h.peak(crate::dtype::ComputeDtype::Fp8).0,
            fp4: h.peak(crate::dtype::ComputeDtype::Fp4).0,
            bandwidth: bw(h),
            exp2,
        };
        Transfer {
            decode_scale: bw(from) / bw(to) * rt / rf,
            prompt: Some(PromptRates {
                from: rates(from, ef),
                to: rates(to, et),
                sm_ratio: rf / rt,
            }),
        }
    }

    /// The sibling's efficiency `e` of `op` at `shape` (KV cache `dtype`) as a fraction
    /// of the device's own roof, never past the roof (1) where it did not pass it.
    pub(crate) fn carry(&self, op: OpClass, e: f64, dtype: &str, shape: &Shape) -> f64 {
        let carried = match (op, &self.prompt, shape.attention(op, dtype)) {
            (OpClass::AttentionDecode | OpClass::MlaDecode, _, _) => e * self.decode_scale,
            (OpClass::AttentionPrefill, Some(p), Some(s)) if e > 0.0 => {
                let cost = crate::ops::attention_fused(&s);
                let exps = s.batch as f64 * s.heads as f64 * s.pairs();
                let roof =
                    |r: &AttentionRates| (cost.flops / r.tensor).max(cost.bytes() / r.bandwidth);
                let work = |r: &AttentionRates| cost.flops / r.tensor + exps / r.exp2;
                let t = (roof(&p.from) / e - work(&p.from)).max(0.0) * p.sm_ratio + work(&p.to);
                roof(&p.to) / t
            }
            (OpClass::Moe, Some(p), _) if e > 0.0 => {
                let Some((bits, peak)) = moe_dtype(dtype) else {
                    return e;
                };
                let Some(ops) = shape.moe_ops(bits) else {
                    return e;
                };
                let rate = |r: &AttentionRates| match peak {
                    crate::dtype::ComputeDtype::Fp8 => r.fp8,
                    crate::dtype::ComputeDtype::Fp4 => r.fp4,
                    _ => r.tensor,
                };
                let roof = |r: &AttentionRates| {
                    ops.iter()
                        .map(|(f, b)| (f / rate(r)).max(b / r.bandwidth))
                        .sum::<f64>()
                };
                let t = (roof(&p.from) / e - roof(&p.from)).max(0.0) * p.sm_ratio + roof(&p.to);
                roof(&p.to) / t
            }
            _ => e,
        };
        carried.min(e.max(1.0))
    }
}

/// A routed-expert table's dtype (the experts' format): its weight bits and the tensor
/// peak its roof is at (`tools/import_kernels.py`: fp8 formats at the fp8 peak, nvfp4
/// at the fp4 peak, bf16 and mxfp4, whose measured kernels take 16-bit activations, at
/// the 16-bit peak). `None` for a name that is not such a format.
pub fn moe_dtype(dtype: &str) -> Option<(f64, crate::dtype::ComputeDtype)> {
    let f = crate::dtype::Format::parse(dtype).ok()?;
    moe_format(f).map(|(_, peak)| (f.bits(), peak))
}

/// The MoE tables' dtype name for experts in format `f` (16-bit formats are `bf16`)
/// and the datasheet peak its roof is at, as for [`moe_dtype`]; `None` for a format
/// the tables do not hold.
pub fn moe_format(f: crate::dtype::Format) -> Option<(&'static str, crate::dtype::ComputeDtype)> {
    use crate::dtype::{ComputeDtype as C, Format as F};
    Some(match f {
        F::Bf16 | F::Fp16 => ("bf16", C::Bf16),
        F::Mxfp4 => ("mxfp4", C::Bf16),
        F::Fp8 => ("fp8", C::Fp8),
        F::Fp8Block => ("fp8-block", C::Fp8),
        F::Nvfp4 => ("nvfp4", C::Fp4),
        _ => return None,
    })
}

/// What the SMs of `a` and `b` get through per second, as a pair of rates in the same
/// unit: the FP32 vector peaks (cores x clock, unthrottled on GeForce parts, whose
/// tensor rate with 32-bit accumulation is half a workstation part's) where both
/// hardware files give one, else the 16-bit tensor peaks.
fn sm_rate(a: &Hardware, b: &Hardware) -> (f64, f64) {
    use crate::dtype::ComputeDtype::{Bf16, Fp32};
    match (a.peak(Fp32), b.peak(Fp32)) {
        ((x, Fp32), (y, Fp32)) => (x, y),
        _ => (a.peak(Bf16).0, b.peak(Bf16).0),
    }
}

#[cfg(test)]
mod tests;
