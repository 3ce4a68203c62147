//! How many requests per second does one H100 serve Llama-3-8B at, and what binds when
//! it stops keeping up? A rate sweep with vLLM's scheduler: p50/p99 latency per rate, the
//! saturation knee, and the chart as SVG.

use ridgeline::plot::serving::{ServingOptions, serving};
use ridgeline::prelude::*;
use ridgeline::report::simulate::knee_text;
use ridgeline::simulate::{Arrivals, Dist, Serving, Workload, simulate_rates};

fn main() -> ridgeline::Result<()> {
    let model = ModelDb::builtin()?.resolve("llama-3-8b")?;
    let gpu = HardwareDb::builtin()?.get("h100")?;
    let engine = EngineDb::builtin()?.get("vllm")?;
    let workload = Workload {
        arrivals: Arrivals::Poisson { rate: 1.0 },
        requests: 400,
        prompt: Dist::Lognormal {
            median: 500.0,
            sigma: 0.6,
        },
        gen_tokens: Dist::Uniform { lo: 50, hi: 250 },
        seed: 7,
    };
    let rates = [5.0, 15.0, 30.0, 45.0, 60.0, 90.0];
    let sweep = simulate_rates(
        &model,
        gpu,
        engine,
        &Scenario::default(),
        &Serving::default(),
        &workload,
        &rates,
    )?;
    for r in &sweep.rows {
        println!(
            "{:>5.0} req/s: TTFT p50 {:>7.1} ms p99 {:>8.1} ms, TPOT p50 {:>5.1} ms, batch {:>5.1}",
            r.rate_per_s.unwrap_or(0.0),
            r.ttft_s.p50 * 1e3,
            r.ttft_s.p99 * 1e3,
            r.tpot_s.p50 * 1e3,
            r.mean_batch
        );
    }
    println!("{}", knee_text(&sweep));
    let svg = serving(&sweep, &ServingOptions::default())?;
    println!("chart: {} bytes of SVG", svg.len());
    Ok(())
}
