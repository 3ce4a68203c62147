//! Memory per device of Llama 3 70B on one H200 with four weight formats side by side,
//! and a training breakdown (params, grads, optimizer states, activations) across ZeRO
//! stages drawn with the same generic function.
//!
//! `cargo run --example 06_memory_chart` writes `out/06_memory_chart.svg` and
//! `out/06_memory_chart_training.svg`; `cargo test --examples` renders both.

use ridgeline::engine::EngineDb;
use ridgeline::hardware::HardwareDb;
use ridgeline::model::ModelDb;
use ridgeline::plot::memory::memory;
use ridgeline::predict::Scenario;
use ridgeline::series::{default_formats, format_comparison, zero_comparison};
use ridgeline::train::TrainConfig;

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

/// Llama-2-7B full fine-tuning with mixed-precision AdamW on 8 A100s, ZeRO 0-3 side by
/// side (ridgeline's training memory model: 2 + 2 + 12 bytes per parameter sharded by
/// stage, Korthikanti activations, framework overhead).
fn training() -> ridgeline::Result<String> {
    let model = ModelDb::builtin()?.resolve("llama-2-7b")?;
    let hw = HardwareDb::builtin()?.get("a100-80gb-sxm")?;
    let cfg = TrainConfig {
        gpus: 8,
        micro_batch: 2,
        seq: 4096,
        ..TrainConfig::default()
    };
    memory(&zero_comparison(&model, hw, &cfg)?)
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
