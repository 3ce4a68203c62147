//! Roofline chart of Llama 3 8B on an H100 SXM and an A100 80GB SXM: one roof per device,
//! the ridge points, and the model's prefill and decode ops on the H100.
//!
//! `cargo run --example 02_roofline_chart` writes `out/02_roofline_chart.svg`;
//! `cargo test --examples` renders it too.

use ridgeline::engine::EngineDb;
use ridgeline::hardware::HardwareDb;
use ridgeline::model::ModelDb;
use ridgeline::plot::roofline::{RooflineDevice, RooflineOptions, roofline};
use ridgeline::predict::{Scenario, predict};

fn render() -> ridgeline::Result<String> {
    let model = ModelDb::builtin()?.resolve("llama-3-8b")?;
    let db = HardwareDb::builtin()?;
    let engine = EngineDb::builtin()?.get("typical")?;
    let s = Scenario {
        batch: 8,
        prompt: 1024,
        gen_tokens: 256,
        ..Scenario::default()
    };
    let h100 = db.get("h100-sxm")?;
    let a100 = db.get("a100-80gb-sxm")?;
    let p_h100 = predict(&model, h100, engine, &s)?;
    let p_a100 = predict(&model, a100, engine, &s)?;
    let devices = [
        RooflineDevice {
            hardware: h100,
            prediction: &p_h100,
        },
        RooflineDevice {
            hardware: a100,
            prediction: &p_a100,
        },
    ];
    roofline(
        &devices,
        &RooflineOptions {
            host_link: true,
            ..RooflineOptions::default()
        },
    )
}

fn write(svg: &str) -> std::io::Result<std::path::PathBuf> {
    let dir = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("out");
    std::fs::create_dir_all(&dir)?;
    let path = dir.join("02_roofline_chart.svg");
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
fn renders_roofline_chart() {
    let svg = render().unwrap();
    assert!(svg.starts_with("<svg"));
    assert_eq!(svg.matches("stroke-width=\"3\"").count(), 2, "two roofs");
    write(&svg).unwrap();
}
