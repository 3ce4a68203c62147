//! ridgeline against a publication no fit has seen: Argonne's LLM-Inference-Bench,
//! static batches under vLLM on A100 and H100
//! (`data/reference/llm-inference-bench-vllm.csv`, `ridgeline::static_sweep`): every row
//! of a bundled model predicted with the `vllm` profile as fitted and on the measured
//! kernel tables, and (A100 and H100) with the bundled profile of their vLLM release
//! (`vllm-0.5`, fitted on other publications' rows), and the median error per batch size.
//!
//! Run: `cargo run --release -q --example static_sweep` prints the table of
//! docs/calibration.md; `-- --rows` adds one line per row (`-- --by tp|length|model|device`
//! the median per value of one column, as fitted); `-- --intervals` prints instead how
//! often the 80% intervals hold the measured rows. Nothing here changes a prediction.

use ridgeline::engine::EngineDb;
use ridgeline::hardware::HardwareDb;
use ridgeline::kernels::KernelDb;
use ridgeline::model::ModelDb;
use ridgeline::static_sweep::{
    BUILTIN_STATIC_SWEEP_CSV, Predicted, compare, coverage_markdown, markdown, parse, summarize,
};
use std::collections::BTreeMap;

fn key(p: &Predicted, by: &str) -> String {
    let r = &p.row;
    match by {
        "tp" => format!("{:>2}", r.tp),
        "length" => format!("{:>5}", r.length),
        "model" => r.model.clone(),
        "device" => r.hardware.clone(),
        _ => format!("{:>3}", r.batch),
    }
}

fn main() -> ridgeline::Result<()> {
    let args: Vec<String> = std::env::args().collect();
    let rows = parse(BUILTIN_STATIC_SWEEP_CSV, "llm-inference-bench-vllm.csv")?;
    let c = compare(
        &rows,
        ModelDb::builtin()?,
        HardwareDb::builtin()?,
        EngineDb::builtin()?,
        KernelDb::builtin()?,
    )?;
    if args.iter().any(|a| a == "--intervals") {
        print!("{}", coverage_markdown(&c));
        return Ok(());
    }
    print!("{}", markdown(&c));
    if let Some(by) = args
        .iter()
        .position(|a| a == "--by")
        .and_then(|i| args.get(i + 1))
    {
        let mut groups: BTreeMap<String, Vec<f64>> = BTreeMap::new();
        for p in &c.predicted {
            groups
                .entry(key(p, by))
                .or_default()
                .push(p.fitted / p.row.output_tokens_per_s());
        }
        println!("\nas fitted, by {by}:");
        for (k, v) in &groups {
            let (r, e) = summarize(v);
            println!("  {k}: {} rows, {r:.2}x ({e:.1}%)", v.len());
        }
    }
    if args.iter().any(|a| a == "--rows") {
        println!();
        for p in &c.predicted {
            let r = &p.row;
            let measured = r.output_tokens_per_s();
            let ratio =
                |v: Option<f64>| v.map_or("-".to_string(), |t| format!("{:.2}", t / measured));
            println!(
                "{} x{} {} L{} b{}: measured {measured:.1} tok/s, as fitted {:.2}, on the tables {}, with vllm-0.5 {}",
                r.hardware,
                r.tp,
                r.model,
                r.length,
                r.batch,
                p.fitted / measured,
                ratio(p.tables),
                ratio(p.version)
            );
        }
    }
    Ok(())
}
