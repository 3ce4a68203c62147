//! Decode throughput and per-token latency of Llama 3 8B against batch on an H100 SXM, an
//! A100 80GB SXM and an L40S: engine prediction vs ideal roofline, where decode turns compute-bound, and
//! where memory runs out.
//!
//! `cargo run --example 05_throughput_chart` writes `out/05_throughput_chart.svg`;
//! `cargo test --examples` renders it too.

use ridgeline::engine::EngineDb;
use ridgeline::hardware::HardwareDb;
use ridgeline::model::ModelDb;
use ridgeline::plot::throughput::{ThroughputOptions, throughput};
use ridgeline::predict::{Predictor, Scenario};
use ridgeline::series::{batch_limit, throughput_series, throughput_titles};

fn render() -> ridgeline::Result<String> {
    let model = ModelDb::builtin()?.resolve("llama-3-8b")?;
    let db = HardwareDb::builtin()?;
    let engine = EngineDb::builtin()?.get("typical")?;
    let s = Scenario {
        prompt: 128,
        gen_tokens: 128,
        ..Scenario::default()
    };
    let preds = [
        Predictor::new(&model, db.get("h100-sxm")?, engine, &s)?,
        Predictor::new(&model, db.get("a100-80gb-sxm")?, engine, &s)?,
        Predictor::new(&model, db.get("l40s")?, engine, &s)?,
    ];
    let refs: Vec<&Predictor> = preds.iter().collect();
    let limit = batch_limit(&refs, s.prompt, s.gen_tokens)?;
    let all = preds
        .iter()
        .map(|p| throughput_series(p, s.prompt, s.gen_tokens, limit))
        .collect::<ridgeline::Result<Vec<_>>>()?;
    let (title, subtitle) = throughput_titles(&preds[0], s.prompt, s.gen_tokens);
    throughput(
        &all,
        &ThroughputOptions {
            title,
            subtitle,
            ..ThroughputOptions::default()
        },
    )
}

fn write(svg: &str) -> std::io::Result<std::path::PathBuf> {
    let dir = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("out");
    std::fs::create_dir_all(&dir)?;
    let path = dir.join("05_throughput_chart.svg");
    std::fs::write(&path, svg)?;
    Ok(path)
}

fn main() -> Result<(), Box<dyn std::error::Error>> {
    let svg = render()?;
    let path = write(&svg)?;
    println!("wrote {}", path.display());
    Ok(())
}

#[test]
fn renders_throughput_chart() {
    let svg = render().unwrap();
    assert!(svg.starts_with("<svg"));
    assert!(svg.contains("memory full above batch"));
    assert!(svg.contains("compute-bound from batch"));
    write(&svg).unwrap();
}
