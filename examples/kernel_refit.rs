//! The engines refitted on top of the measured kernel tables, against the published
//! measurements they were not fitted on.
//!
//! Every row of data/measurements/measurements.csv whose engine has kernel tables
//! (TensorRT-LLM, vLLM, SGLang) and whose device (or its sibling) has one is predicted
//! twice: by the engine as calibrated without the tables, and by the engine calibrated
//! with the tables read where they cover an op (`Mapped::with_kernels`: the fit then
//! keeps only a per-pass overhead, no per-layer term). Both are held out by
//! publication: each row predicted by a fit without its source. `typical`, the pooled
//! prior every engine is pulled toward, is fitted without tables either way.
//!
//! Run: `cargo run --release -q --example kernel_refit` (add `-- --rows` for one line
//! per row). Prints per kind (A single-stream decode, B batched throughput, C prefill)
//! the rows and the median |error| of speed, in sample and held out. Nothing here
//! changes a prediction or a data file.
//!
//! With `-- --serving`: the published serving benchmarks (data/measurements/serving.csv,
//! which no fit reads) simulated without the tables and on them (the bundled engines
//! refitted on the tables, data/engines-kernels.toml), on the rows whose engine and
//! device a table covers: the error table of each.

use ridgeline::calibrate::{
    Case, CaseKernels, Mapped, TYPICAL_POOL, calibrate, cases, leave_one_source_out, predict_case,
    read_measurements,
};
use ridgeline::engine::EngineDb;
use ridgeline::hardware::HardwareDb;
use ridgeline::kernels::KernelDb;
use ridgeline::measurements::Kind;
use ridgeline::stats::median_abs;
use std::collections::BTreeMap;

/// The engines the bundled tables were measured under.
const TABLE_ENGINES: [&str; 3] = ["trt-llm", "vllm", "sglang"];

/// A prediction over the measured value as a speed (a latency is its inverse).
fn speed(c: &Case, predicted_over_measured: f64) -> f64 {
    if c.target.higher_is_faster() {
        predicted_over_measured
    } else {
        1.0 / predicted_over_measured
    }
}

/// The serving benchmarks a table covers, simulated without the tables and on them.
fn serving() -> ridgeline::Result<()> {
    let root = std::path::Path::new(env!("CARGO_MANIFEST_DIR"));
    let (summary, every) = ridgeline::simulate::validation::kernel_table_comparison(root)?;
    println!("{summary}\nEach row on the tables:\n\n{every}");
    Ok(())
}

fn main() -> ridgeline::Result<()> {
    if std::env::args().any(|a| a == "--serving") {
        return serving();
    }
    let rows_too = std::env::args().any(|a| a == "--rows");
    let path =
        std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("data/measurements/measurements.csv");
    let all = cases(&read_measurements(&path)?)?;
    let (hw_db, engines, kernels) = (
        HardwareDb::builtin()?,
        EngineDb::builtin()?,
        KernelDb::builtin()?,
    );
    // the rows these fits depend on: the ceilings, typical's pool and the engines' own
    let plain = Mapped {
        cases: all
            .cases
            .into_iter()
            .filter(|c| c.kind == Kind::F || TYPICAL_POOL.contains(&c.engine.as_str()))
            .collect(),
        skipped: Vec::new(),
    };
    let covered: Vec<bool> = plain
        .cases
        .iter()
        .map(|c| {
            let hw = hw_db.get(&c.hardware.id).unwrap_or(&c.hardware);
            c.kind != Kind::F
                && TABLE_ENGINES.contains(&c.engine.as_str())
                && kernels.table_for(hw, hw_db, &c.engine).is_some()
        })
        .collect();
    let with = plain.clone().with_kernels(CaseKernels {
        db: kernels.clone(),
        hardware: hw_db.clone(),
    });
    // kind -> [plain in sample, plain held out, tables in sample, tables held out]
    let mut by: BTreeMap<String, [Vec<f64>; 4]> = BTreeMap::new();
    let mut per_row: BTreeMap<String, Vec<f64>> = BTreeMap::new();
    for (at, m) in [(0, &plain), (2, &with)] {
        let cal = calibrate(m, engines, None)?;
        let held = leave_one_source_out(m, engines)?;
        let fitted = m
            .cases
            .iter()
            .enumerate()
            .filter(|(_, c)| c.kind != Kind::F);
        for ((i, c), h) in fitted.zip(&held) {
            if !covered[i] {
                continue;
            }
            let e = &cal
                .engines
                .iter()
                .find(|f| f.engine.id == c.engine)
                .expect("every engine with rows is fitted")
                .engine;
            let in_sample = speed(c, predict_case(c, e)? / c.measured);
            let held_out = speed(c, 1.0 + h.error_pct / 100.0);
            let v = by.entry(format!("{:?}", c.kind)).or_default();
            v[at].push(in_sample - 1.0);
            v[at + 1].push(held_out - 1.0);
            per_row
                .entry(format!(
                    "{} {:?} {} {}",
                    c.id, c.kind, c.engine, c.hardware.id
                ))
                .or_default()
                .push(held_out);
        }
        if at == 2 {
            for id in TABLE_ENGINES {
                if let Some(f) = cal.engines.iter().find(|f| f.engine.id == id) {
                    let o = &f.engine.overheads;
                    println!(
                        "{id} on the tables: step overhead {:.1} us, layer overhead {:.1} us",
                        o.step_overhead_s * 1e6,
                        o.layer_overhead_s * 1e6
                    );
                }
            }
        }
    }
    for (kind, v) in &by {
        let pct = |x: &[f64]| 100.0 * median_abs(x.iter().copied());
        println!(
            "kind {kind}: {} rows; without tables {:.1}% in sample, {:.1}% held out by source; on the tables {:.1}% in sample, {:.1}% held out",
            v[0].len(),
            pct(&v[0]),
            pct(&v[1]),
            pct(&v[2]),
            pct(&v[3])
        );
    }
    if rows_too {
        for (row, r) in &per_row {
            println!(
                "{row}: held out without tables {:.2}, on the tables {:.2}",
                r[0], r[1]
            );
        }
    }
    Ok(())
}
