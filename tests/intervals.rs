//! The 80% intervals: `data/intervals.toml` is what `calibrate --save-intervals`
//! computes from the bundled measurements and engines, the bands cover about 80% of
//! the held-out rows they were taken from, and `predict --json` / `train --json` carry
//! them scaled as documented (rates times the band, times divided by it).

use ridgeline::calibrate::{
    BUILTIN_MEASUREMENTS_CSV, IntervalBands, Kind, cases, interval_bands, intervals_toml,
    parse_measurements,
};
use ridgeline::engine::EngineDb;
use ridgeline::hardware::HardwareDb;
use ridgeline::intervals::{BUILTIN_INTERVALS_TOML, IntervalDb};
use ridgeline::model::ModelDb;
use ridgeline::predict::{Scenario, predict};
use std::sync::OnceLock;

/// The bands and their coverage, once per test binary (leave one source out refits
/// every engine once per publication).
fn computed() -> &'static IntervalBands {
    static CELL: OnceLock<IntervalBands> = OnceLock::new();
    CELL.get_or_init(|| {
        let rows = parse_measurements(BUILTIN_MEASUREMENTS_CSV, "measurements.csv").unwrap();
        let mapped = cases(&rows).unwrap();
        interval_bands(&rows, &mapped, EngineDb::builtin().unwrap()).unwrap()
    })
}

#[test]
fn intervals_toml_is_the_output_of_save_intervals_on_the_bundled_measurements() {
    let db = &computed().db;
    let text = intervals_toml(db, "data/measurements/measurements.csv");
    assert!(
        text == BUILTIN_INTERVALS_TOML,
        "data/intervals.toml is not current; rewrite it with `ridgeline calibrate \
         --measurements data/measurements/measurements.csv --save-intervals \
         data/intervals.toml`:\n{text}"
    );
    // and the file as read back is the computed bands, rounded to 3 decimals
    let read = IntervalDb::builtin().unwrap();
    assert_eq!(read.pooled.len(), db.pooled.len());
    for (kind, b) in &db.pooled {
        let r = &read.pooled[kind];
        assert!((r.p10 - b.p10).abs() <= 5e-4 && (r.p90 - b.p90).abs() <= 5e-4);
        assert_eq!(r.rows, b.rows);
    }
}

#[test]
fn bands_hold_about_80_percent_of_their_held_out_rows() {
    let db = &computed().db;
    for &(kind, inside, n) in &computed().in_sample {
        let frac = inside as f64 / n as f64;
        eprintln!("kind {kind}: {inside} of {n} held-out rows inside their band ({frac:.2})");
        // in sample: ~80% by construction (the 10th and 90th percentiles of these very
        // rows); engines pooled into the all-engines band move it a few points
        assert!((0.70..=0.90).contains(&frac), "kind {kind}: {frac}");
    }
    for kind in ["A", "B", "C", "D", "E"] {
        let b = &db.pooled[kind];
        assert!(b.p10 < b.median && b.median < b.p90, "{kind}: {b:?}");
    }
    // an engine gets its own band only from 8 rows of the kind
    for (engine, kinds) in &db.engines {
        for (kind, b) in kinds {
            assert!(b.rows >= 8, "{engine} {kind}: {} rows", b.rows);
        }
    }
}

fn prediction(engine: &str, batch: u64) -> ridgeline::predict::Prediction {
    let model = ModelDb::builtin().unwrap().resolve("llama-3-8b").unwrap();
    let gpu = HardwareDb::builtin().unwrap().get("h100").unwrap();
    let e = EngineDb::builtin().unwrap().get(engine).unwrap();
    let s = Scenario {
        batch,
        ..Scenario::default()
    };
    predict(&model, gpu, e, &s).unwrap()
}

#[test]
fn predictions_carry_their_engine_and_kind_bands() {
    let db = IntervalDb::builtin().unwrap();
    // typical at batch 8: decode and output tokens/s and tpot from the pooled kind B
    // band, ttft and prefill from kind C
    let p = prediction("typical", 8);
    let (b, c) = (&db.pooled["B"], &db.pooled["C"]);
    let g = &p.generation;
    let i = &p.intervals;
    // each end is the band times the prediction, but never beyond the pure roofline
    // (no measurement beats the datasheet peaks): rates at most, times at least it
    let rate = |band: &ridgeline::intervals::Band, x: f64, ideal: f64| {
        let hi = (band.p90 * x).min(ideal);
        [(band.p10 * x).min(hi), hi]
    };
    let time = |band: &ridgeline::intervals::Band, t: f64, ideal: f64| {
        let lo = (t / band.p90).max(ideal);
        [lo, (t / band.p10).max(lo)]
    };
    let close = |a: [f64; 2], e: [f64; 2]| {
        assert!(
            (a[0] / e[0] - 1.0).abs() < 1e-12 && (a[1] / e[1] - 1.0).abs() < 1e-12,
            "{a:?} vs {e:?}"
        )
    };
    let (batch, prompt, out) = (8.0, p.config.prompt as f64, p.config.r#gen as f64);
    close(
        i["generation.decode_tokens_per_s"],
        rate(b, g.decode_tokens_per_s, g.roofline_decode_tokens_per_s),
    );
    // the roofline's output rate: 8 · 128 tokens over its TTFT and 127 decode steps
    let ideal_output = batch * out / (g.roofline_ttft_s + (out - 1.0) * g.roofline_tpot_s);
    close(
        i["generation.output_tokens_per_s"],
        rate(b, g.output_tokens_per_s, ideal_output),
    );
    // a time is the inverse of a speed: the fast end divides by p90
    close(i["generation.tpot_s"], time(b, g.tpot_s, g.roofline_tpot_s));
    close(i["generation.ttft_s"], time(c, g.ttft_s, g.roofline_ttft_s));
    // here the band's fast end of TTFT (ttft / p90 = ttft / 2.5) is below the
    // roofline's TTFT, so the interval starts at the roofline
    assert!(g.ttft_s / c.p90 < g.roofline_ttft_s);
    assert_eq!(i["generation.ttft_s"][0], g.roofline_ttft_s);
    let pre = p.prefill.tokens_per_s;
    let ideal_pre = batch * prompt / p.prefill.roofline_time_s;
    close(i["prefill.tokens_per_s"], rate(c, pre, ideal_pre));
    assert_eq!(i.len(), 5);
    // llama.cpp at batch 1: its own kind A band (39 held-out rows)
    let p = prediction("llama.cpp", 1);
    let a = &db.engines["llama.cpp"]["A"];
    let d = p.generation.decode_tokens_per_s;
    assert_eq!(
        p.intervals["generation.decode_tokens_per_s"],
        rate(a, d, p.generation.roofline_decode_tokens_per_s)
    );
    // the pure roofline has no interval, and writes no key
    let p = prediction("ideal", 8);
    assert!(p.intervals.is_empty());
    let json = serde_json::to_value(&p).unwrap();
    assert!(json.get("intervals").is_none());
}

#[test]
fn training_reports_carry_kind_d_and_e_bands() {
    let db = IntervalDb::builtin().unwrap();
    let model = ModelDb::builtin().unwrap().resolve("llama-3-8b").unwrap();
    let gpu = HardwareDb::builtin().unwrap().get("h100").unwrap();
    let cfg = ridgeline::train::TrainConfig {
        gpus: 8,
        ..ridgeline::train::TrainConfig::default()
    };
    let r = ridgeline::train::train(&model, gpu, &cfg).unwrap();
    let (d, e) = (&db.pooled["D"], &db.pooled["E"]);
    let t = r.step.tokens_per_s_per_gpu;
    let m = r.memory.inner.total_bytes;
    // at most the rate at an MFU of 1
    let ideal = t / r.step.mfu;
    let hi = (d.p90 * t).min(ideal);
    assert_eq!(
        r.intervals["step.tokens_per_s_per_gpu"],
        [(d.p10 * t).min(hi), hi]
    );
    assert_eq!(r.intervals["memory.total_bytes"], [e.p10 * m, e.p90 * m]);
}

/// `A 52/64 (81%), B ...` as the README writes coverage figures.
fn figures(c: &[(Kind, usize, usize)]) -> String {
    let f: Vec<String> = c
        .iter()
        .map(|(k, i, n)| format!("{k} {i}/{n} ({:.0}%)", 100.0 * *i as f64 / *n as f64))
        .collect();
    f.join(", ")
}

#[test]
fn readme_states_this_code_s_coverage_figures() {
    let c = computed();
    let readme = include_str!("../README.md");
    for (what, rows) in [("in sample", &c.in_sample), ("by source", &c.by_source)] {
        let line = figures(rows);
        eprintln!("{what}: {line}");
        assert!(
            readme.contains(&line),
            "README.md's {what} interval coverage is not current: {line}"
        );
    }
    // a publication's rows against bands that did not see it: some inside, some not
    for (kind, inside, n) in &c.by_source {
        assert!(*inside > 0 && inside < n, "kind {kind}: {inside} of {n}");
    }
}
