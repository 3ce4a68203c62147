//! Training plans: the default search of `ridgeline plan --train` (every priced device,
//! counts 1 to 64, every layout, method, ZeRO stage, recomputation and offload, each at
//! the largest micro-batch that fits) for a 7B and a 70B model, the instance-shape search,
//! and one evaluation of `train` for scale. Target: the default search under 5 s.
//! Figures: benches/README.md.
//!
//! `cargo bench --bench train_plan`

use criterion::{Criterion, black_box, criterion_group, criterion_main};
use ridgeline::hardware::HardwareDb;
use ridgeline::instances::InstanceDb;
use ridgeline::model::ModelDb;
use ridgeline::plan::train::{Pool, TrainPlanRequest, default_pools, plan_training};
use ridgeline::train::{TrainConfig, Trainer};

fn bench(c: &mut Criterion) {
    let hw = HardwareDb::builtin().unwrap();
    let models = ModelDb::builtin().unwrap();
    let mut g = c.benchmark_group("train_plan");
    g.sample_size(10);
    for id in ["llama-2-7b", "llama-2-70b"] {
        let req =
            TrainPlanRequest::new(models.resolve(id).unwrap(), default_pools(hw), 200_000_000);
        let n = plan_training(&req).unwrap().evaluated;
        eprintln!("{id}: {n} configurations per default search");
        g.bench_function(format!("default_search/{id}"), |b| {
            b.iter(|| black_box(plan_training(black_box(&req)).unwrap().feasible))
        });
    }
    let pools: Vec<Pool> = InstanceDb::builtin()
        .unwrap()
        .instances()
        .iter()
        .map(|i| Pool::instance(i, hw).unwrap())
        .collect();
    let req = TrainPlanRequest::new(models.resolve("llama-2-70b").unwrap(), pools, 1_000_000_000);
    g.bench_function("instances/llama-2-70b", |b| {
        b.iter(|| black_box(plan_training(black_box(&req)).unwrap().feasible))
    });
    g.finish();

    let model = models.resolve("llama-2-7b").unwrap();
    let a100 = hw.get("a100").unwrap();
    let cfg = TrainConfig {
        gpus: 8,
        tp: 2,
        pp: 2,
        zero: 2,
        micro_batch: 2,
        global_batch: Some(256),
        ..TrainConfig::default()
    };
    c.bench_function("train/llama-2-7b_memory_and_step", |b| {
        b.iter(|| {
            let t = Trainer::new(&model, a100, black_box(&cfg)).unwrap();
            black_box((t.memory_at(2).0.total_bytes, t.step().time_s))
        })
    });
}

criterion_group!(benches, bench);
criterion_main!(benches);
