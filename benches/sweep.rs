//! Sweep throughput: one configuration end to end, and a 1,000,000-configuration sweep
//! through the evaluation core alone, as CSV, with a single `gen` value (no prefill
//! reuse), and through the plain `Predictor::summary` path for comparison; 10,000
//! configurations with the engines' fitted costs and on the kernel tables. Figures and
//! how to reproduce them: benches/README.md.
//!
//! `cargo bench --bench sweep`

use criterion::{Criterion, Throughput, black_box, criterion_group, criterion_main};
use ridgeline::prelude::*;
use ridgeline::sweep::{Sweep, SweepLists, WriteOptions};

/// 2 models x 5 devices x 4 counts x 250 batches x 5 prompts x 5 gens x 2 x 2 formats.
const MILLION: SweepLists<'static> = SweepLists {
    model: "llama-3-8b,llama-2-70b",
    gpu: "h100,a100,l40s,mi300x,h200",
    gpus: "1,2,4,8",
    batch: "1..250",
    prompt: "128..2048:x2",
    gen_tokens: "128..2048:x2",
    weights: "native,fp8",
    kv: "native,fp8",
    engine: "typical",
    parallel: Parallel::Tp,
    ep: 1,
    spec: None,
    draft: "",
    flash: true,
    inter_node_bytes_per_s: 50e9,
    overlap_ep: false,
    expert_imbalance: 1.0,
    expert_weights: None,
};

/// The same size with one gen and 25 prompts: every configuration needs its own prefill.
const MILLION_ONE_GEN: SweepLists<'static> = SweepLists {
    prompt: "64..1600:+64",
    gen_tokens: "256",
    ..MILLION
};

fn core(s: &Sweep<'_>) -> f64 {
    let mut total = 0.0;
    s.run_chunked(
        4096,
        |range| {
            let mut acc = 0.0;
            s.for_each(range, |_, r| {
                if let Ok(p) = r {
                    acc += p.tpot_s;
                }
            });
            acc
        },
        |acc| {
            total += acc;
            true
        },
    );
    total
}

/// The plain path for comparison: one `Predictor` per (model, gpu, gpus, weights, kv,
/// engine), `Predictor::summary` per (batch, prompt, gen), in parallel over predictors.
fn plain(s: &Sweep<'_>) -> f64 {
    use rayon::prelude::*;
    let [nm, nd, nn, _, _, _, nw, nk, ne] = s.shape();
    let outer: Vec<[usize; 9]> = (0..nm * nd * nn * nw * nk * ne)
        .map(|mut i| {
            let mut ix = [0; 9];
            for (a, n) in [(8, ne), (7, nk), (6, nw), (2, nn), (1, nd), (0, nm)] {
                ix[a] = i % n;
                i /= n;
            }
            ix
        })
        .collect();
    outer
        .par_iter()
        .map(|ix| {
            let Ok(p) = s.predictor(ix) else { return 0.0 };
            let mut acc = 0.0;
            for &b in &s.batch {
                for &prompt in &s.prompt {
                    for &g in &s.gen_tokens {
                        acc += p.summary(b, prompt, g).decode_total_s / g as f64;
                    }
                }
            }
            acc
        })
        .sum()
}

fn bench(c: &mut Criterion) {
    let hw = HardwareDb::builtin().unwrap();
    let engines = EngineDb::builtin().unwrap();

    c.bench_function("sweep/one_config_end_to_end", |b| {
        let one = SweepLists {
            model: "llama-2-70b",
            gpu: "h100",
            gpus: "2",
            ..SweepLists::default()
        };
        let mut out = Vec::with_capacity(1024);
        b.iter(|| {
            out.clear();
            let s = Sweep::from_lists(black_box(&one), hw, engines).unwrap();
            s.write_csv(&mut out, &WriteOptions::default()).unwrap();
            black_box(out.len())
        })
    });

    let mut g = c.benchmark_group("sweep_1M");
    g.sample_size(10);
    g.throughput(Throughput::Elements(1_000_000));
    let million = Sweep::from_lists(&MILLION, hw, engines).unwrap();
    assert_eq!(million.len(), 1_000_000);
    g.bench_function("core", |b| b.iter(|| black_box(core(&million))));
    g.bench_function("csv_to_sink", |b| {
        b.iter(|| {
            million
                .write_csv(std::io::sink(), &WriteOptions::default())
                .unwrap()
        })
    });
    let one_gen = Sweep::from_lists(&MILLION_ONE_GEN, hw, engines).unwrap();
    assert_eq!(one_gen.len(), 1_000_000);
    g.bench_function("core_one_gen", |b| b.iter(|| black_box(core(&one_gen))));
    g.bench_function("plain_summary", |b| b.iter(|| black_box(plain(&million))));
    g.finish();

    // 10,000 configurations on the bundled kernel tables (`sweep --kernels bundled`):
    // 2 devices x 2 counts x 50 batches x 5 prompts x 5 gens x 2 engines, every one
    // through the plain summary on the tables
    let mut g = c.benchmark_group("sweep_tables_10k");
    g.sample_size(10);
    g.throughput(Throughput::Elements(10_000));
    let mut tables = Sweep::from_lists(
        &SweepLists {
            model: "llama-3-8b",
            gpu: "h100,h200",
            gpus: "1,2",
            batch: "1..50",
            weights: "native",
            kv: "native",
            engine: "vllm,trt-llm",
            ..MILLION
        },
        hw,
        engines,
    )
    .unwrap();
    assert_eq!(tables.len(), 10_000);
    g.bench_function("core_fitted", |b| b.iter(|| black_box(core(&tables))));
    tables.kernels = Some(ridgeline::predict::Kernels {
        db: ridgeline::kernels::KernelDb::builtin().unwrap(),
        hardware: hw,
        engines,
    });
    g.bench_function("core_on_tables", |b| b.iter(|| black_box(core(&tables))));
    g.finish();
}

criterion_group!(benches, bench);
criterion_main!(benches);
