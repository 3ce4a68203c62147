//! Capacity planning: for Llama-3-70B, which devices hold it at which format, and how
//! many concurrent 4k-token sequences fit?
//!
//! `cargo run --example 03_capacity_plan`

use ridgeline::predict::GenerationReport;
use ridgeline::prelude::*;

/// (device, format, devices needed, max batch at 4096 + 512 tokens, decode tok/s/seq at batch 1)
type Row = (String, String, u64, u64, f64);

fn plan() -> Result<Vec<Row>> {
    let model = ModelDb::builtin()?.resolve("llama-3-70b")?;
    let engine = EngineDb::builtin()?.get("typical")?;
    let mut rows = Vec::new();
    for gpu in ["h100-sxm", "h200-sxm", "mi300x", "a100-80gb-sxm", "l40s"] {
        let hw = HardwareDb::builtin()?.get(gpu)?;
        for fmt in ["bf16", "fp8", "q4_k_m"] {
            // smallest power-of-two tensor-parallel group that holds one sequence
            for gpus in [1u64, 2, 4, 8] {
                let s = Scenario {
                    weights: Some(Format::parse(fmt)?),
                    gpus,
                    ..Scenario::default()
                };
                let p = Predictor::new(&model, hw, engine, &s)?;
                let max_batch = p.memory(1, 4096, 512).0;
                if max_batch.fits {
                    let summary = p.summary(1, 4096, 512);
                    rows.push((
                        gpu.to_string(),
                        fmt.to_string(),
                        gpus,
                        p.max_batch(4096, 512),
                        GenerationReport::from_summary(&summary, 1, 512).decode_tokens_per_s,
                    ));
                    break;
                }
            }
        }
    }
    Ok(rows)
}

fn main() -> Result<()> {
    println!("Llama-3-70B, 4096-token prompt + 512 generated (GB = 1e9 bytes)");
    println!(
        "{:<14} {:<7} {:>5} {:>10} {:>10}",
        "device", "format", "gpus", "max batch", "tok/s/seq"
    );
    for (gpu, fmt, n, b, t) in plan()? {
        println!("{gpu:<14} {fmt:<7} {n:>5} {b:>10} {t:>10.1}");
    }
    Ok(())
}

#[test]
fn seventy_b_needs_two_80gb_devices_in_bf16() {
    // 70.55e9 params x 2 bytes = 141.1 GB of weights > 80 GiB (85.9 GB): two H100s at
    // least; one H200 holds 141 GiB = 151.4 GB, so 141.1 GB of weights plus 4608 tokens
    // of KV (0.75 GB) and the engine's 1 GB fit; one 192 GiB MI300X does too.
    let rows = plan().unwrap();
    let find = |g: &str, f: &str| rows.iter().find(|r| r.0 == g && r.1 == f).unwrap().clone();
    assert_eq!(find("h100-sxm", "bf16").2, 2);
    assert_eq!(find("h200-sxm", "bf16").2, 1);
    assert_eq!(find("mi300x", "bf16").2, 1);
    assert_eq!(find("h100-sxm", "fp8").2, 1);
    assert!(find("h100-sxm", "q4_k_m").3 > find("h100-sxm", "fp8").3);
}
