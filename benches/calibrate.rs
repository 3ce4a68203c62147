//! `ridgeline calibrate` on many rows: the bundled measurements repeated to 8,000 rows
//! (new ids, values jittered by up to ±5%), end to end (parse, map to cases, fit every
//! engine, compare every row, render the report) and stage by stage; and the same size
//! with prompt and generation lengths moved so that no two rows ask for the same
//! prediction. Figures: benches/README.md.
//!
//! `cargo bench --bench calibrate -- --warm-up-time 1 --measurement-time 5`

use criterion::{Criterion, black_box, criterion_group, criterion_main};
use ridgeline::calibrate::{Mapped, calibrate, cases, parse_measurements};
use ridgeline::engine::EngineDb;

#[path = "../tests/suite/support/synthetic_measurements.rs"]
mod synthetic;

/// Parse, map, fit and render, as the command does.
fn end_to_end(text: &str, engines: &EngineDb) -> usize {
    let rows = parse_measurements(text, "synthetic.csv").unwrap();
    let mapped = cases(&rows).unwrap();
    let cal = calibrate(&mapped, engines, None).unwrap();
    ridgeline::report::calibration::text(&cal).len()
}

fn bench(c: &mut Criterion) {
    let engines = EngineDb::builtin().unwrap();
    let mut g = c.benchmark_group("calibrate");
    g.sample_size(10);
    let bundled = ridgeline::calibrate::BUILTIN_MEASUREMENTS_CSV;
    g.bench_function("bundled_end_to_end", |b| {
        b.iter(|| end_to_end(black_box(bundled), engines))
    });
    let text = synthetic::synthetic_measurements(8000, false);
    g.bench_function("8000_rows_end_to_end", |b| {
        b.iter(|| end_to_end(black_box(&text), engines))
    });
    g.bench_function("8000_rows_parse", |b| {
        b.iter(|| parse_measurements(black_box(&text), "synthetic.csv").unwrap())
    });
    let rows = parse_measurements(&text, "synthetic.csv").unwrap();
    g.bench_function("8000_rows_map", |b| {
        b.iter(|| cases(black_box(&rows)).unwrap())
    });
    let mapped: Mapped = cases(&rows).unwrap();
    g.bench_function("8000_rows_fit", |b| {
        b.iter(|| calibrate(black_box(&mapped), engines, None).unwrap())
    });
    let distinct = synthetic::synthetic_measurements(8000, true);
    g.bench_function("8000_distinct_rows_end_to_end", |b| {
        b.iter(|| end_to_end(black_box(&distinct), engines))
    });
    g.finish();
}

criterion_group!(benches, bench);
criterion_main!(benches);
