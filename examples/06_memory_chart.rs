//! Memory per device of Llama 3 70B on one H200 with four weight formats side by side,
//! and a training breakdown (params, grads, optimizer states, activations) across ZeRO
//! stages drawn with the same generic function.
//!
//! `cargo run --example 06_memory_chart` writes `out/06_memory_chart.svg` and
//! `out/06_memory_chart_training.svg`; `cargo test --examples` renders both.

use ridgeline::engine::EngineDb;
use ridgeline::hardware::HardwareDb;
use ridgeline::model::ModelDb;
use ridgeline::plot::memory::{MemoryBar, MemoryChart, default_formats, format_comparison, memory};
use ridgeline::predict::Scenario;

fn inference() -> ridgeline::Result<String> {
    let model = ModelDb::builtin()?.resolve("llama-3-70b")?;
    let hw = HardwareDb::builtin()?.get("h200-sxm")?;
    let engine = EngineDb::builtin()?.get("typical")?;
    let s = Scenario {
        batch: 16,
        prompt: 2048,
        gen_tokens: 512,
        ..Scenario::default()
    };
    let chart = format_comparison(&model, hw, engine, &s, &default_formats(&model))?;
    memory(&chart)
}

/// Mixed-precision Adam on a 7B model over 8 devices: 2 + 2 + 12 bytes per parameter,
/// sharded by ZeRO stage (illustrative numbers until the training model lands).
fn training() -> ridgeline::Result<String> {
    let params = 7e9;
    let devices = 8.0;
    let activations = 18e9;
    let bars = (0..4)
        .map(|stage| {
            let shard = |from: u32| if stage >= from { devices } else { 1.0 };
            MemoryBar::new(
                &format!("ZeRO-{stage}"),
                [
                    ("params (bf16)", 2.0 * params / shard(3)),
                    ("grads (bf16)", 2.0 * params / shard(2)),
                    ("optimizer (fp32 master, m, v)", 12.0 * params / shard(1)),
                    ("activations", activations),
                    ("overhead", 2e9),
                ],
            )
        })
        .collect();
    memory(&MemoryChart {
        title: "Training memory per device: 7B model, mixed-precision Adam, 8 devices".into(),
        subtitle: "micro-batch activations fixed at 18 GB; ZeRO stage shards optimizer (1), grads (2), params (3)".into(),
        bars,
        capacity_bytes: Some(80e9),
        capacity_label: "A100 80GB".into(),
        ..MemoryChart::default()
    })
}

fn write(name: &str, svg: &str) -> std::io::Result<std::path::PathBuf> {
    let dir = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("out");
    std::fs::create_dir_all(&dir)?;
    let path = dir.join(name);
    std::fs::write(&path, svg)?;
    Ok(path)
}

fn main() -> Result<(), Box<dyn std::error::Error>> {
    println!(
        "wrote {}",
        write("06_memory_chart.svg", &inference()?)?.display()
    );
    println!(
        "wrote {}",
        write("06_memory_chart_training.svg", &training()?)?.display()
    );
    Ok(())
}

#[test]
fn renders_memory_charts() {
    let svg = inference().unwrap();
    assert!(svg.contains("q4_k_m"));
    write("06_memory_chart.svg", &svg).unwrap();
    let svg = training().unwrap();
    assert!(svg.contains("ZeRO-3"));
    write("06_memory_chart_training.svg", &svg).unwrap();
}
