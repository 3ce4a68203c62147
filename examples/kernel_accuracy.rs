//! The measured kernel tables against published end-to-end measurements: every row of
//! data/measurements/measurements.csv whose device (or its sibling) has a kernel table
//! under the row's engine, predicted with the engine's fitted costs and again with the
//! tables read where they cover an op, first with the engine's factors fitted without
//! the tables, then with its profile refitted on them (data/engines-kernels.toml:
//! what `predict --kernels bundled` uses). The refitted profile was fitted on these
//! rows, so its column is in sample; examples/kernel_refit holds it out by publication.
//!
//! Run: `cargo run --release -q --example kernel_accuracy` (add `-- --rows` for one
//! line per row). Prints per kind (A single-stream decode, B batched throughput, C
//! prefill) the rows, the median predicted/measured ratio and the median |error| of
//! each. Nothing here changes a prediction.

use ridgeline::calibrate::{cases, predict_case_with, read_measurements};
use ridgeline::engine::EngineDb;
use ridgeline::hardware::HardwareDb;
use ridgeline::kernels::KernelDb;
use std::collections::BTreeMap;

/// `label`: rows, median ratio and median |ratio - 1| of each prediction.
fn print_line(label: &str, [plain, tables, refit]: &mut [Vec<f64>; 3]) {
    let err = |r: &mut Vec<f64>| {
        let (ratio, error) = ridgeline::kernel_transfer::medians(r);
        (ratio, 100.0 * error)
    };
    let (p, t, r) = (err(plain), err(tables), err(refit));
    println!(
        "{label}: {} rows; fitted ratio {:.2}, |error| {:.1}%; with tables ratio {:.2}, |error| {:.1}%; refitted on tables ratio {:.2}, |error| {:.1}%",
        plain.len(),
        p.0,
        p.1,
        t.0,
        t.1,
        r.0,
        r.1
    );
}

fn main() -> ridgeline::Result<()> {
    let rows_too = std::env::args().any(|a| a == "--rows");
    let path =
        std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("data/measurements/measurements.csv");
    let mapped = cases(&read_measurements(&path)?)?;
    let (hw_db, engines, kernels) = (
        HardwareDb::builtin()?,
        EngineDb::builtin()?,
        KernelDb::builtin()?,
    );
    // kind -> [fitted, with tables, refitted on tables] predicted / measured
    let mut by: BTreeMap<String, [Vec<f64>; 3]> = BTreeMap::new();
    for c in &mapped.cases {
        let Ok(e) = engines.get(&c.engine) else {
            continue;
        };
        let hw = hw_db.get(&c.hardware.id).unwrap_or(&c.hardware);
        if kernels.table_for(hw, hw_db, &e.id).is_none() || c.model.is_none() {
            continue;
        }
        let on_tables = kernels.engine_for(e, engines, hw, hw_db);
        let (Ok(plain), Ok(tables), Ok(refit)) = (
            predict_case_with(c, e, None),
            predict_case_with(c, e, Some((kernels, hw_db))),
            predict_case_with(c, on_tables, Some((kernels, hw_db))),
        ) else {
            continue;
        };
        // a latency is the inverse of a speed: compare speeds
        let speed = |p: f64| {
            if c.target.higher_is_faster() {
                p / c.measured
            } else {
                c.measured / p
            }
        };
        if rows_too {
            println!(
                "{} {:?} {} {} {}: fitted {:.2}, tables {:.2}, refitted {:.2}",
                c.id,
                c.kind,
                e.id,
                hw.id,
                c.model.as_ref().map_or("", |m| m.id.as_str()),
                speed(plain),
                speed(tables),
                speed(refit)
            );
        }
        let entry = by.entry(format!("{:?}", c.kind)).or_default();
        entry[0].push(speed(plain));
        entry[1].push(speed(tables));
        entry[2].push(speed(refit));
    }
    println!(
        "kind: rows, median predicted/measured speed and median |error|: fitted, with kernel tables, refitted on them"
    );
    for (kind, mut v) in by {
        print_line(&kind, &mut v);
    }
    Ok(())
}
