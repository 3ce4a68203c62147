//! Serving simulation speed: 100,000 requests near saturation on one core (the
//! simulation is single-threaded), with fixed and with log-normal lengths and on an
//! expert-parallel deployment, one
//! iteration's cost, and `plan --rate` over the default device set (every device with a
//! price, on all cores). Figures and how to reproduce them: benches/README.md.
//!
//! `cargo bench --bench simulate`

use criterion::{Criterion, black_box, criterion_group, criterion_main};
use ridgeline::plan::{
    DEFAULT_GPU_COUNTS, PlanRequest, RateTarget, Targets, default_devices, plan_rate,
};
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
    // an expert-parallel deployment: Qwen3-30B-A3B on 4 x H100 with --ep 4 (attention
    // data-parallel over the four groups) saturates near 105 requests/s at 512 + 128
    // tokens (`ridgeline simulate --model qwen3-30b-a3b --gpu h100 --gpus 4 --ep 4
    // --rate 20..200:+30 --requests 2000`); 95/s is 90% of that
    let moe = ModelDb::builtin()
        .unwrap()
        .resolve("qwen3-30b-a3b")
        .unwrap();
    let ep = Scenario {
        gpus: 4,
        ep: 4,
        ..Scenario::default()
    };
    let ep_load = Workload {
        arrivals: Arrivals::Poisson { rate: 95.0 },
        ..fixed.clone()
    };
    g.bench_function("100k_requests_expert_parallel", |b| {
        b.iter(|| {
            simulate(
                &moe,
                gpu,
                engine,
                &ep,
                &Serving::default(),
                black_box(&ep_load),
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

/// `plan --model llama-3-8b --rate 50 --p99-ttft-ms 1000 --p99-tpot-ms 50`.
fn plan(c: &mut Criterion) {
    let hw = HardwareDb::builtin().unwrap();
    let req = PlanRequest {
        model: ModelDb::builtin().unwrap().resolve("llama-3-8b").unwrap(),
        devices: default_devices(hw),
        engines: vec![EngineDb::builtin().unwrap().get("typical").unwrap()],
        prompt: 512,
        gen_tokens: 128,
        targets: Targets::default(),
        gpu_counts: DEFAULT_GPU_COUNTS.to_vec(),
        weights: None,
        kv: None,
        flash: true,
        ownership: Default::default(),
        price_basis: Default::default(),
        kernels: None,
        spec: None,
        draft: None,
        inter_node_bytes_per_s: 50e9,
        overlap_ep: false,
        expert_imbalance: 1.0,
        expert_weights: None,
    };
    let target = RateTarget {
        rate_per_s: 50.0,
        p99_ttft_s: Some(1.0),
        p99_tpot_s: Some(0.05),
        requests: 300,
        seed: 0,
        request_overhead_s: None,
    };
    let mut g = c.benchmark_group("plan_rate");
    g.sample_size(10);
    g.bench_function("default_devices", |b| {
        b.iter(|| plan_rate(black_box(&req), &target).unwrap())
    });
    g.finish();
}

criterion_group!(benches, bench, plan);
criterion_main!(benches);
