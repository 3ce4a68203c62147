//! Why decode is bandwidth-bound: Llama-2-7B fp16 on an H100, batch 1 vs larger batches.
//!
//! `cargo run --example 01_decode_is_bandwidth_bound`

use ridgeline::prelude::*;

fn report() -> Result<String> {
    let model = ModelDb::builtin()?.resolve("llama-2-7b")?;
    let gpu = HardwareDb::builtin()?.get("h100-sxm")?;
    let engine = EngineDb::builtin()?.get("ideal")?;
    let p = Predictor::new(&model, gpu, engine, &Scenario::default())?;
    let ridge = gpu.ridge_point(ComputeDtype::Fp16);
    let mut out = format!(
        "{} on {}: ridge point {ridge:.0} FLOP/byte\n",
        model.name, gpu.name
    );
    out.push_str("batch  FLOP/byte  bound    tokens/s\n");
    for batch in [1u64, 8, 64, 512] {
        let s = p.summary(batch, 512, 128);
        out.push_str(&format!(
            "{batch:>5}  {:>9.1}  {:<7}  {:>8.0}\n",
            s.decode.intensity(),
            s.decode.bound().name(),
            batch as f64 / s.decode.time_s
        ));
    }
    out.push_str("Weights are read once per step, so batching raises FLOP/byte; but each sequence\nreads its own KV cache, so without GQA intensity plateaus below the ridge.\n");
    Ok(out)
}

fn main() -> Result<()> {
    print!("{}", report()?);
    Ok(())
}

#[test]
fn batch_one_is_memory_bound_and_batching_raises_intensity() {
    let r = report().unwrap();
    let lines: Vec<&str> = r.lines().skip(2).collect();
    assert!(lines[0].contains("memory"));
    let intensity = |l: &str| l.split_whitespace().nth(1).unwrap().parse::<f64>().unwrap();
    assert!(intensity(lines[0]) < 1.1);
    // Without GQA, every sequence adds its own KV reads (576 tokens · 2 · 32 layers ·
    // 4096 · 2 bytes = 302 MB per step vs 13.5 GFLOP), so intensity plateaus near
    // 13.5e9 / 302e6 = 45 FLOP/byte: still far below the ridge at batch 512.
    assert!(intensity(lines[3]) > 30.0 * intensity(lines[0]));
    assert!(intensity(lines[3]) < 45.0);
    assert!(lines[3].contains("memory"));
}
