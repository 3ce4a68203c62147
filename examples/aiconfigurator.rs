//! ridgeline against NVIDIA AIConfigurator's static-mode estimates
//! (`data/reference/aiconfigurator-static.csv`, written by
//! `tools/aiconfigurator_static.py`): every row predicted with the engines as fitted
//! and on the measured kernel tables (`--kernels bundled`), and the median ratios of
//! TTFT, time per token and tokens/s per GPU (`ridgeline::reference`).
//!
//! Run: `cargo run --release -q --example aiconfigurator` prints the README's table;
//! `-- --by engine|device|model|tp|batch` adds the same medians per value of one
//! column; `-- --rows` one line per row. Nothing here changes a
//! prediction.

use ridgeline::engine::EngineDb;
use ridgeline::hardware::HardwareDb;
use ridgeline::kernels::KernelDb;
use ridgeline::model::ModelDb;
use ridgeline::reference::{
    BUILTIN_AICONFIGURATOR_CSV, Compared, compare, markdown, parse_reference, summarize,
};
use std::collections::BTreeMap;

fn key(c: &Compared, by: &str) -> String {
    let r = &c.row;
    match by {
        "engine" => r.engine.clone(),
        "device" => r.device.clone(),
        "model" => r.model.clone(),
        "tp" => r.tp.to_string(),
        "batch" => r.batch.to_string(),
        _ => r.formats.clone(),
    }
}

fn main() -> ridgeline::Result<()> {
    let args: Vec<String> = std::env::args().collect();
    let by = args
        .iter()
        .position(|a| a == "--by")
        .and_then(|i| args.get(i + 1));
    let rows = parse_reference(BUILTIN_AICONFIGURATOR_CSV, "aiconfigurator-static.csv")?;
    let compared = compare(
        &rows,
        ModelDb::builtin()?,
        HardwareDb::builtin()?,
        EngineDb::builtin()?,
        KernelDb::builtin()?,
    )?;
    print!("{}", markdown(&compared));
    if let Some(by) = by {
        for tables in [false, true] {
            let mut groups: BTreeMap<(String, String), Vec<[f64; 3]>> = BTreeMap::new();
            for c in &compared {
                let e = if tables { c.tables } else { Some(c.fitted) };
                if let Some(e) = e {
                    groups
                        .entry((key(c, by), c.row.formats.clone()))
                        .or_default()
                        .push(e.ratios(&c.row));
                }
            }
            let variant = if tables {
                "on the kernel tables"
            } else {
                "engines as fitted"
            };
            println!("\n{variant}, by {by}:");
            for ((k, f), v) in &groups {
                let m = summarize(v);
                println!(
                    "{k:>14} {f}: {:>3} rows; TTFT {:.2}x ({:.0}%), TPOT {:.2}x ({:.0}%), tokens/s/GPU {:.2}x ({:.0}%)",
                    v.len(),
                    m[0].0,
                    m[0].1,
                    m[1].0,
                    m[1].1,
                    m[2].0,
                    m[2].1
                );
            }
        }
    }
    if args.iter().any(|a| a == "--rows") {
        for c in &compared {
            let f = c.fitted.ratios(&c.row);
            let t = c.tables.map(|t| t.ratios(&c.row));
            println!(
                "{}: fitted {:.2} {:.2} {:.2}; tables {}",
                c.row.label(),
                f[0],
                f[1],
                f[2],
                t.map_or("-".to_string(), |t| format!(
                    "{:.2} {:.2} {:.2}",
                    t[0], t[1], t[2]
                ))
            );
        }
    }
    Ok(())
}
