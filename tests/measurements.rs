//! Published measurements (data/measurements/measurements.csv) against ridgeline's
//! predictions with the calibrated engines of data/engines.toml, one test per kind.
//!
//! Each test predicts every mappable row of its kind with the engine of the row's
//! framework (kind F ceilings with `typical`, or the engine whose authors measured
//! them), prints the median absolute % error next to the pure roofline (`ideal`), and
//! asserts a tolerance on the median. The tolerances are a few points above what the
//! committed profiles reach, so a change that worsens predictions fails here.

use ridgeline::calibrate::{
    BUILTIN_MEASUREMENTS_CSV, Case, Kind, Mapped, cases, median_abs, parse_measurements,
    predict_case,
};
use ridgeline::engine::{Engine, EngineDb};

fn mapped() -> Mapped {
    let rows = parse_measurements(BUILTIN_MEASUREMENTS_CSV, "measurements.csv").unwrap();
    cases(&rows).unwrap()
}

fn errors(cases: &[&Case], engine: impl Fn(&Case) -> Engine) -> Vec<(String, f64)> {
    cases
        .iter()
        .map(|c| {
            let p = predict_case(c, &engine(c))
                .unwrap_or_else(|e| panic!("{}: prediction failed: {e}", c.id));
            assert!(p.is_finite() && p > 0.0, "{}: prediction {p}", c.id);
            (c.id.clone(), 100.0 * (p / c.measured - 1.0))
        })
        .collect()
}

/// Median |% error| of `kind` with the calibrated engines; prints it with the ideal
/// and per-row errors, and checks it is below `tolerance_pct`.
fn check_kind(kind: Kind, tolerance_pct: f64, min_rows: usize) {
    let m = mapped();
    let db = EngineDb::builtin().unwrap();
    let of: Vec<&Case> = m.cases.iter().filter(|c| c.kind == kind).collect();
    assert!(
        of.len() >= min_rows,
        "kind {kind}: only {} mappable rows (expected at least {min_rows})",
        of.len()
    );
    let fitted = errors(&of, |c| {
        db.get(&c.engine)
            .unwrap_or_else(|e| panic!("{}: engine {}: {e}", c.id, c.engine))
            .clone()
    });
    let ideal = errors(&of, |_| db.get("ideal").unwrap().clone());
    let med = median_abs(fitted.iter().map(|e| e.1));
    let med_ideal = median_abs(ideal.iter().map(|e| e.1));
    for ((id, e), (_, i)) in fitted.iter().zip(&ideal) {
        eprintln!("  {id} kind {kind}: calibrated {e:+7.1}%   ideal {i:+7.1}%");
    }
    eprintln!(
        "kind {kind}: {} rows, median |error| calibrated {med:.1}% (tolerance {tolerance_pct}%), ideal roofline {med_ideal:.1}%",
        of.len()
    );
    assert!(
        med <= tolerance_pct,
        "kind {kind}: median |error| {med:.1}% exceeds {tolerance_pct}%"
    );
}

#[test]
fn kind_a_single_stream_decode() {
    check_kind(Kind::A, 10.0, 25);
}

#[test]
fn kind_b_batched_throughput() {
    check_kind(Kind::B, 15.0, 10);
}

#[test]
fn kind_c_prefill_and_ttft() {
    check_kind(Kind::C, 15.0, 10);
}

#[test]
fn kind_f_ceilings_match_typical_factors() {
    // typical's factors against achievable bandwidth (STREAM triad) and matmul rate
    // (MAMF): a well-tuned engine runs close to, mostly below, these ceilings.
    check_kind(Kind::F, 20.0, 12);
}

#[test]
fn calibrated_engines_beat_the_roofline_on_decode() {
    // batch-1 decode is where derating matters most: the fitted profiles must be much
    // closer than the ideal roofline, which is always too fast.
    let m = mapped();
    let db = EngineDb::builtin().unwrap();
    let a: Vec<&Case> = m.cases.iter().filter(|c| c.kind == Kind::A).collect();
    let ideal = errors(&a, |_| db.get("ideal").unwrap().clone());
    assert!(
        ideal.iter().all(|(id, e)| *e > 0.0 || id.is_empty()),
        "{ideal:?}"
    );
    let fitted = errors(&a, |c| db.get(&c.engine).unwrap().clone());
    let (mi, mf) = (
        median_abs(ideal.iter().map(|e| e.1)),
        median_abs(fitted.iter().map(|e| e.1)),
    );
    assert!(mf < mi / 3.0, "fitted {mf:.1}% vs ideal {mi:.1}%");
}

#[test]
fn every_row_is_mapped_or_skipped_with_a_reason() {
    let rows = parse_measurements(BUILTIN_MEASUREMENTS_CSV, "measurements.csv").unwrap();
    let m = cases(&rows).unwrap();
    assert_eq!(m.cases.len() + m.skipped.len(), rows.len());
    for s in &m.skipped {
        assert!(!s.reason.trim().is_empty(), "{}", s.id);
    }
    let reason = |id: &str| {
        m.skipped
            .iter()
            .find(|s| s.id == id)
            .map(|s| s.reason.clone())
            .unwrap_or_default()
    };
    // a device the database lacks, and a multi-GPU row on a device without links
    assert!(reason("m029").contains("P40"), "{}", reason("m029"));
    assert!(reason("m134").contains("GH200"), "{}", reason("m134"));
    assert!(reason("m042").contains("a10g"), "{}", reason("m042"));
    // training and memory rows are not engine measurements
    assert!(reason("m093").contains("kind D"));
    assert!(reason("m118").contains("kind E"));
    // every inference row that is not skipped for a named reason is mapped
    let mapped_a = m.cases.iter().filter(|c| c.kind == Kind::A).count();
    let rows_a = rows.iter().filter(|r| r.kind == Kind::A).count();
    assert_eq!(mapped_a + 2, rows_a);
}

#[test]
fn engines_toml_has_every_engine_and_real_fitted_on_ids() {
    let db = EngineDb::builtin().unwrap();
    let rows = parse_measurements(BUILTIN_MEASUREMENTS_CSV, "measurements.csv").unwrap();
    let m = cases(&rows).unwrap();
    for id in ridgeline::calibrate::ENGINE_IDS {
        let e = db.get(id).unwrap_or_else(|e| panic!("{id}: {e}"));
        assert!(!e.description.is_empty(), "{id}");
        for f in &e.fitted_on {
            let c = m
                .cases
                .iter()
                .find(|c| &c.id == f)
                .unwrap_or_else(|| panic!("{id}: fitted_on {f} is not a mapped row"));
            let pooled = ridgeline::calibrate::TYPICAL_POOL.contains(&c.engine.as_str());
            assert!(
                c.engine == id || (id == "typical" && pooled),
                "{id} lists {f}, a {} row",
                c.engine
            );
        }
    }
    assert!(db.get("ideal").unwrap().fitted_on.is_empty());
    assert!(db.get("sglang").unwrap().fitted_on.is_empty());
    assert!(!db.get("llama.cpp").unwrap().fitted_on.is_empty());
}

#[test]
fn recalibrating_the_bundled_file_reproduces_engines_toml() {
    // The committed profiles are the fit of the bundled rows (to the 3 digits they are
    // rounded to): a change to the predictor that moves the fit shows up here.
    let m = mapped();
    let db = EngineDb::builtin().unwrap();
    let cal = ridgeline::calibrate::calibrate(&m, db, None).unwrap();
    for f in &cal.engines {
        let committed = db.get(&f.engine.id).unwrap();
        for p in &f.params {
            let have = match &p.kind {
                ridgeline::calibrate::ParamKind::Memory(g) => committed.memory_efficiency[g],
                ridgeline::calibrate::ParamKind::Compute => committed.compute_efficiency,
                ridgeline::calibrate::ParamKind::StepOverhead => committed.step_overhead_s,
                ridgeline::calibrate::ParamKind::LayerOverhead => committed.layer_overhead_s,
            };
            let rel = (p.value / have - 1.0).abs();
            assert!(
                rel < 0.02,
                "{} {}: refit {:.4e} vs committed {have:.4e}",
                f.engine.id,
                p.key,
                p.value
            );
        }
    }
}

#[test]
#[ignore = "one full calibration per row (about a minute in debug): cargo test -- --ignored"]
fn leave_one_out_error_per_kind() {
    let m = mapped();
    let db = EngineDb::builtin().unwrap();
    let held = ridgeline::calibrate::leave_one_out(&m, db).unwrap();
    for k in [Kind::A, Kind::B, Kind::C] {
        let med = median_abs(held.iter().filter(|h| h.kind == k).map(|h| h.error_pct));
        eprintln!("leave-one-out kind {k}: median |error| {med:.1}%");
        assert!(med < 20.0, "kind {k}: {med:.1}%");
    }
}
