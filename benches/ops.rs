//! Operator cost evaluation, placement, and one full prediction.
//!
//! `cargo bench --bench ops`

use criterion::{Criterion, black_box, criterion_group, criterion_main};
use ridgeline::ops::{AttentionShape, Operand, attention_fused, gemm};
use ridgeline::prelude::*;
use ridgeline::roofline::{Efficiency, place};

fn bench(c: &mut Criterion) {
    let a = Operand::activations(16.0);
    let w = Operand::weights(16.0);
    c.bench_function("op_cost/gemv_4096", |b| {
        b.iter(|| gemm(1, black_box(1), black_box(4096), black_box(4096), a, w, a))
    });
    let shape = AttentionShape::gqa(8, 1, 4096, 32, 8, 128, 16.0, 16.0);
    c.bench_function("op_cost/attention_decode", |b| {
        b.iter(|| attention_fused(black_box(&shape)))
    });
    let h100 = HardwareDb::builtin().unwrap().get("h100").unwrap();
    let ceilings = h100.ceilings(ComputeDtype::Bf16);
    let cost = gemm(1, 1, 4096, 4096, a, w, a);
    c.bench_function("place/gemv_on_h100", |b| {
        b.iter(|| place(black_box(&cost), &ceilings, &Efficiency::IDEAL))
    });

    let model = ModelDb::builtin().unwrap().resolve("llama-2-70b").unwrap();
    let engine = EngineDb::builtin().unwrap().get("typical").unwrap();
    let s = Scenario {
        gpus: 2,
        ..Scenario::default()
    };
    let p = Predictor::new(&model, h100, engine, &s).unwrap();
    c.bench_function("predict/llama-2-70b_summary", |b| {
        b.iter(|| p.summary(black_box(1), black_box(512), black_box(128)))
    });
    c.bench_function("predict/llama-2-70b_full_with_setup", |b| {
        b.iter(|| predict(&model, h100, engine, black_box(&s)).unwrap())
    });
}

criterion_group!(benches, bench);
criterion_main!(benches);
