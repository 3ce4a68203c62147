//! Kernel-level check of ridgeline's fitted efficiencies against the measured kernel
//! tables (docs/kernels.md): for every measured point of `data/kernels/`, ridgeline's
//! per-op time today (the op's roofline time on the device's ceilings, derated by the
//! matching engine profile of data/engines.toml exactly as `Predictor` derates that op:
//! compute and memory efficiency, the matmul roll-off `gemm_half_rows` above 8 rows,
//! the measured fp8 / fp4 factors (`fp4_efficiency` where none), `attention_efficiency`, the link efficiency and collective latency;
//! a routed-expert block as its three ops, the roll-off at the rows per touched expert)
//! over the measured kernel time (the roofline time over the measured efficiency).
//! Prints the median ratio and median |error| per op class and subset.
//!
//! Run: `cargo run -q --example kernel_check` (add `-- --by-device` for one line per
//! device and op class). Nothing here changes a prediction.
//!
//! With `-- --dtypes`, prints data/kernels/gemm-dtypes.toml (what fp8 and nvfp4 GEMMs
//! reach against bf16, measured: `ridgeline::kernels::GemmDtypes`).
//!
//! With `-- --latency`, prints data/kernels/all-reduce-latency.toml (each engine's
//! all-reduce latency per device and device count, measured:
//! `ridgeline::kernels::AllReduceLatency`).
//!
//! With `-- --transfer`, each device is held out instead: its tables are dropped, and
//! every one of its measured points is predicted from the table of the sibling that
//! `KernelDb::sibling` picks for it among the rest (the same efficiency as a fraction
//! of the held-out device's own roof); printed per held-out device, sibling and op
//! class are the median predicted/measured time and the median |error|.

use ridgeline::dtype::ComputeDtype;
use ridgeline::engine::{Engine, EngineDb};
use ridgeline::hardware::{Hardware, HardwareDb};
use ridgeline::kernels::{DeviceDtypes, GemmDtypes, KernelDb, OpClass, Shape, moe_dtype};
use ridgeline::ops::{ByteClasses, Collective, Cost, Operand, attention_fused, collective, linear};
use ridgeline::roofline::{Efficiency, place};
use std::collections::BTreeMap;

/// A weight matmul of `rows` rows in dtype `d` derated as `Predictor` derates it: the
/// device's measured fp8 / fp4 factors (fp8: memory only; fp4: both, else the engine's
/// `fp4_efficiency`) and the roll-off `gemm_half_rows` above the GEMV rows.
fn derate_matmul(
    eff: &mut Efficiency,
    e: &Engine,
    dtypes: Option<&DeviceDtypes>,
    d: ComputeDtype,
    rows: f64,
) {
    let measured = dtypes.and_then(|g| match d {
        ComputeDtype::Fp8 => g.fp8,
        ComputeDtype::Fp4 => g.fp4,
        _ => None,
    });
    match (d, measured) {
        (ComputeDtype::Fp8, Some(f)) => eff.memory *= f.memory,
        (ComputeDtype::Fp4, Some(f)) => {
            eff.compute *= f.compute;
            eff.memory *= f.memory;
        }
        (ComputeDtype::Fp4, None) => eff.compute *= e.speed.fp4_efficiency,
        _ => {}
    }
    if rows > ridgeline::engine::GEMV_MAX_TOKENS as f64 {
        eff.compute *= rows / (rows + e.speed.gemm_half_rows);
    }
}

/// ridgeline's time and the measured time of one point, s (`dtypes`: the device's
/// measured fp8 / fp4 factors).
fn times(
    hw: &Hardware,
    e: &Engine,
    dtypes: Option<&DeviceDtypes>,
    op: OpClass,
    dtype: &str,
    shape: &Shape,
) -> Option<(f64, f64)> {
    // the tensor rate a kernel runs against, as Predictor::new sets it
    let warp = match hw.peak_flops_per_s.warp_mma_fraction {
        Some(f) if !e.features.warpgroup_mma => f,
        _ => 1.0,
    };
    let rate = |d: ComputeDtype| {
        let (p, used) = hw.peak(d);
        p * warp.min(hw.tensor_fraction(used))
    };
    let mut eff = e.efficiency(hw);
    let bw = hw.memory.bandwidth_bytes_per_s;
    if op == OpClass::Moe {
        return moe_times(hw, e, dtypes, dtype, shape, rate(moe_dtype(dtype)?.1));
    }
    let (cost, mut ceil, roof_peak) = match (op, *shape) {
        (OpClass::Gemm, Shape::Gemm { m, n, k }) => {
            let (d, bits) = match dtype {
                "bf16" => (ComputeDtype::Bf16, 16.0),
                "fp8" => (ComputeDtype::Fp8, 8.0),
                "nvfp4" => (ComputeDtype::Fp4, 4.5),
                _ => return None,
            };
            let cost = linear(m, k, n, bits, 16.0, Operand::activations(16.0), false);
            derate_matmul(&mut eff, e, dtypes, d, m as f64);
            (cost, hw.ceilings(d), hw.peak(d).0)
        }
        (OpClass::AttentionPrefill | OpClass::AttentionDecode, Shape::Attention { .. })
        | (OpClass::MlaDecode, Shape::Mla { .. }) => {
            let s = shape.attention(op, dtype)?;
            eff.compute *= e.speed.attention_efficiency;
            eff.memory *= e.speed.attention_efficiency;
            (
                attention_fused(&s),
                hw.ceilings(ComputeDtype::Bf16),
                hw.peak(ComputeDtype::Bf16).0,
            )
        }
        (OpClass::AllReduce, Shape::AllReduce { gpus, bytes }) => {
            let cost = collective(Collective::AllReduce, gpus, bytes / 2.0, 16.0);
            eff = Efficiency {
                overhead_s: e.overheads.collective_latency_s,
                ..eff
            };
            (cost, hw.ceilings(ComputeDtype::Fp32), 0.0)
        }
        _ => return None,
    };
    if op != OpClass::AllReduce {
        ceil.peak_flops_per_s = rate(if op == OpClass::Gemm {
            match dtype {
                "fp8" => ComputeDtype::Fp8,
                "nvfp4" => ComputeDtype::Fp4,
                _ => ComputeDtype::Bf16,
            }
        } else {
            ComputeDtype::Bf16
        });
    }
    let ridgeline = place(&cost, &ceil, &eff).time_s;
    // the importer's roof: datasheet peak of the dtype, memory bandwidth, link
    let link = hw
        .device_link()
        .map_or(f64::INFINITY, |l| l.bytes_per_s_per_direction);
    let roof = if op == OpClass::AllReduce {
        (cost.bytes() / bw).max(cost.link_bytes / link)
    } else {
        (cost.flops / roof_peak).max(cost.bytes() / bw)
    };
    Some((ridgeline, roof))
}

/// [`times`] for a routed-expert block: its three ops as the predictor derates them
/// (the engine's efficiencies, the measured fp8 / fp4 factors of weight matmuls, the
/// roll-off `gemm_half_rows` at the rows each touched expert receives), summed, against
/// the table's roof (each op's FLOPs at the datasheet peak or bytes at the bandwidth,
/// the activation by its bytes); `rate` is the tensor rate the matmuls run against.
fn moe_times(
    hw: &Hardware,
    e: &Engine,
    dtypes: Option<&DeviceDtypes>,
    dtype: &str,
    shape: &Shape,
    rate: f64,
) -> Option<(f64, f64)> {
    let (bits, d) = moe_dtype(dtype)?;
    let ops = shape.moe_ops(bits)?;
    let Shape::Moe {
        tokens,
        topk,
        experts,
        ep,
        ..
    } = *shape
    else {
        return None;
    };
    let rows = tokens as f64 * topk as f64 / ep as f64;
    let touched = ridgeline::model::graph::expected_experts(experts, topk, tokens) / ep as f64;
    let per_expert = rows / touched;
    let bw = hw.memory.bandwidth_bytes_per_s;
    let roof_peak = hw.peak(d).0;
    let (mut ridgeline, mut roof) = (0.0, 0.0);
    for (i, (flops, bytes)) in ops.into_iter().enumerate() {
        let cost = Cost {
            flops,
            read: ByteClasses {
                activations: bytes,
                ..ByteClasses::default()
            },
            ..Cost::default()
        };
        let mut eff = e.efficiency(hw);
        let matmul = i != 1;
        let mut ceil = hw.ceilings(d);
        if matmul {
            ceil.peak_flops_per_s = rate;
            derate_matmul(&mut eff, e, dtypes, d, per_expert);
        } else {
            ceil = hw.ceilings(ComputeDtype::Fp32);
        }
        ridgeline += place(&cost, &ceil, &eff).time_s;
        roof += (flops / roof_peak).max(bytes / bw);
    }
    Some((ridgeline, roof))
}

/// One output line: `label`, the points, the median ratio and the median |ratio - 1|.
fn print_line(label: &str, r: &mut [f64]) {
    let (ratio, error) = ridgeline::kernel_transfer::medians(r);
    println!(
        "{label}: {} points, ratio {ratio:.2}, |error| {:.0}%",
        r.len(),
        100.0 * error
    );
}

/// `--transfer`: every device held out and predicted from its sibling's tables.
fn transfer(kernels: &KernelDb, hw_db: &HardwareDb) {
    let check = ridgeline::kernel_transfer::held_out_by_device(kernels, hw_db);
    println!(
        "held-out device <- sibling / op class: points, median predicted/measured time, median |error|"
    );
    for l in &check.lines {
        let mut r = l.ratios.clone();
        print_line(
            &format!("{} <- {} / {}", l.device, l.sibling, l.op.name()),
            &mut r,
        );
    }
    println!("no sibling within reach: {}", check.alone.join(", "));
    println!("\nper op class, every held-out device pooled (README, Accuracy):\n");
    print!("{}", check.markdown());
}

fn main() -> ridgeline::Result<()> {
    let by_device = std::env::args().any(|a| a == "--by-device");
    let kernels = KernelDb::builtin()?;
    let hw_db = HardwareDb::builtin()?;
    if std::env::args().any(|a| a == "--dtypes") {
        print!(
            "{}",
            ridgeline::kernels::GemmDtypes::measure(kernels, hw_db).to_toml()
        );
        return Ok(());
    }
    if std::env::args().any(|a| a == "--latency") {
        print!(
            "{}",
            ridgeline::kernels::AllReduceLatency::measure(kernels, hw_db).to_toml()
        );
        return Ok(());
    }
    if std::env::args().any(|a| a == "--transfer") {
        transfer(kernels, hw_db);
        return Ok(());
    }
    let engines = EngineDb::builtin()?;
    // (group, subset) -> ratios ridgeline / measured
    let mut ratios: BTreeMap<(String, String), Vec<f64>> = BTreeMap::new();
    for c in kernels.coverage() {
        let hw = hw_db.get(&c.device)?;
        let e = engines.get(&c.backend)?;
        let dtypes = GemmDtypes::builtin()?.get(&c.device);
        let t = kernels.table(&c.device, &c.backend).expect("listed");
        for ((op, dtype, key), grid) in &t.grids {
            for (at, measured_eff) in grid.points() {
                let Some(shape) = Shape::at(*op, key, at) else {
                    continue;
                };
                let Some((ridgeline, roof)) = times(hw, e, dtypes, *op, dtype, &shape) else {
                    continue;
                };
                let measured = roof / measured_eff;
                let subset = match op {
                    OpClass::Gemm if at[0] <= 8.0 => format!("{dtype} m<=8 (decode GEMV)"),
                    OpClass::Gemm if at[0] < 1024.0 => format!("{dtype} 16<=m<=256"),
                    OpClass::Gemm => format!("{dtype} m>=1024 (prefill)"),
                    OpClass::AttentionDecode if at[1] >= 2048.0 => {
                        format!("kv {dtype}, kv_len>=2048")
                    }
                    OpClass::AttentionDecode => format!("kv {dtype}, kv_len<=512"),
                    OpClass::AttentionPrefill if at[1] >= 2048.0 => {
                        format!("kv {dtype}, seq>=2048")
                    }
                    OpClass::AttentionPrefill => format!("kv {dtype}, seq<=512"),
                    OpClass::AllReduce if at[0] >= 1048576.0 => "bytes>=1 MiB".to_string(),
                    OpClass::AllReduce => "bytes<1 MiB".to_string(),
                    OpClass::Moe if at[0] <= 16.0 => format!("{dtype} tokens<=16"),
                    OpClass::Moe if at[0] < 1024.0 => format!("{dtype} 64<=tokens<=256"),
                    OpClass::Moe => format!("{dtype} tokens>=1024"),
                    OpClass::MlaDecode if at[1] >= 2048.0 => {
                        format!("kv {dtype}, kv_len>=2048")
                    }
                    OpClass::MlaDecode => format!("kv {dtype}, kv_len<=512"),
                };
                let group = if by_device {
                    format!("{} {}", op.name(), c.device)
                } else {
                    op.name().to_string()
                };
                ratios
                    .entry((group, subset))
                    .or_default()
                    .push(ridgeline / measured);
            }
        }
    }
    println!("op class / subset: points, median ridgeline/measured time, median |error|");
    for ((group, subset), mut r) in ratios {
        print_line(&format!("{group} / {subset}"), &mut r);
    }
    Ok(())
}
