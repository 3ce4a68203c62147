//! Serving simulation speed: 100,000 requests near saturation on one core (the
//! simulation is single-threaded), with fixed and with log-normal lengths, and one
//! iteration's cost. Figures and how to reproduce them: benches/README.md.
//!
//! `cargo bench --bench simulate`

use criterion::{Criterion, black_box, criterion_group, criterion_main};
use ridgeline::predict::IterationCost;
use ridgeline::prelude::*;
use ridgeline::simulate::{Arrivals, Dist, Serving, Workload, simulate};

/// Llama-3-8B on one H100 with vLLM's scheduler saturates near 47 requests/s at 512
/// prompt and 128 output tokens (`ridgeline simulate ... --rate 20..80:+10`); 42/s is
/// 90% of that.
fn workload(prompt: Dist, gen_tokens: Dist) -> Workload {
    Workload {
        arrivals: Arrivals::Poisson { rate: 42.0 },
        requests: 100_000,
        prompt,
        gen_tokens,
        seed: 1,
    }
}

fn bench(c: &mut Criterion) {
    let model = ModelDb::builtin().unwrap().resolve("llama-3-8b").unwrap();
    let gpu = HardwareDb::builtin().unwrap().get("h100").unwrap();
    let engine = EngineDb::builtin().unwrap().get("vllm").unwrap();
    let s = Scenario::default();
    let mut g = c.benchmark_group("simulate");
    g.sample_size(10);
    let fixed = workload(Dist::Fixed { tokens: 512 }, Dist::Fixed { tokens: 128 });
    g.bench_function("100k_requests_fixed_lengths", |b| {
        b.iter(|| {
            simulate(
                &model,
                gpu,
                engine,
                &s,
                &Serving::default(),
                black_box(&fixed),
            )
            .unwrap()
        })
    });
    let varied = workload(
        Dist::Lognormal {
            median: 400.0,
            sigma: 0.8,
        },
        Dist::Lognormal {
            median: 100.0,
            sigma: 0.8,
        },
    );
    g.bench_function("100k_requests_lognormal_lengths", |b| {
        b.iter(|| {
            simulate(
                &model,
                gpu,
                engine,
                &s,
                &Serving::default(),
                black_box(&varied),
            )
            .unwrap()
        })
    });
    g.finish();
    let p = Predictor::new(&model, gpu, engine, &s).unwrap();
    let mut it = IterationCost::new(&p);
    c.bench_function("iteration/128_decodes_and_a_chunk", |b| {
        b.iter(|| {
            for i in 0..128u64 {
                it.add_decode(black_box(600 + i));
            }
            it.add_chunk(black_box(2048), 2048);
            it.finish()
        })
    });
}

criterion_group!(benches, bench);
criterion_main!(benches);
