//! What the fuzz targets check on each input (fuzz/fuzz_targets/{measurements,
//! hardware_toml,engine_toml}.rs call these), shared with tests/suite/fuzz_corpus.rs, which
//! replays the minimized corpora in tests/corpus/ through them. Each returns whether the
//! input parsed.

// each fuzz target uses one of these
#![allow(dead_code)]

use ridgeline::calibrate::{calibrate, cases, check_measurements, parse_measurements};
use ridgeline::prelude::*;

/// A short scenario every accepted device and engine must predict finite numbers for.
fn scenario() -> Scenario {
    Scenario {
        prompt: 64,
        gen_tokens: 16,
        ..Scenario::default()
    }
}

/// Any bytes as a measurements CSV: `parse_measurements` returns rows or an error
/// naming the file, never a panic; rows map to cases or skips (one each); the checks
/// and, for a few cases, the whole calibration return a result or an error, never a
/// panic, and a calibration's factors stay in their bounds.
pub fn measurements(data: &[u8]) -> bool {
    let Ok(text) = std::str::from_utf8(data) else {
        return false;
    };
    let rows = match parse_measurements(text, "fuzz.csv") {
        Ok(rows) => rows,
        Err(e) => {
            assert!(e.to_string().starts_with("fuzz.csv: "), "{e}");
            return false;
        }
    };
    for r in &rows {
        assert!(r.line >= 2 && r.value.is_finite() && r.num_gpus >= 1);
    }
    let mapped = cases(&rows).unwrap();
    assert_eq!(mapped.cases.len() + mapped.skipped.len(), rows.len());
    for c in &mapped.cases {
        assert!(c.measured.is_finite() && c.measured > 0.0, "{}", c.id);
    }
    // a fit takes milliseconds: a few cases keep the fuzzer fast
    if check_measurements(&mapped.cases).is_err() || mapped.cases.len() > 3 {
        return true;
    }
    if let Ok(cal) = calibrate(&mapped, EngineDb::builtin().unwrap(), None) {
        for f in &cal.engines {
            for p in &f.params {
                assert!(
                    p.value.is_finite() && p.value >= p.bounds.0 && p.value <= p.bounds.1,
                    "{} {}: {} outside {:?}",
                    f.engine.id,
                    p.key,
                    p.value,
                    p.bounds
                );
            }
        }
    }
    true
}

/// Any bytes as a hardware TOML file: `Hardware::from_toml` returns a device or an
/// error naming the file, never a panic; a device it accepts predicts finite numbers.
pub fn hardware_toml(data: &[u8]) -> bool {
    let Ok(text) = std::str::from_utf8(data) else {
        return false;
    };
    let hw = match Hardware::from_toml(text, "fuzz.toml") {
        Ok(hw) => hw,
        Err(e) => {
            assert!(e.to_string().starts_with("fuzz.toml: "), "{e}");
            return false;
        }
    };
    let model = ModelDb::builtin().unwrap().resolve("llama-3-8b").unwrap();
    let engine = EngineDb::builtin().unwrap().get("typical").unwrap();
    if let Ok(p) = Predictor::new(&model, &hw, engine, &scenario()) {
        let sum = p.summary(1, 64, 16);
        assert!(sum.decode.time_s.is_finite() && sum.decode.time_s > 0.0);
        assert!(sum.decode_total_s.is_finite() && sum.memory.total_bytes.is_finite());
        let _ = p.max_batch(64, 16);
    }
    true
}

/// Any bytes as an engine TOML file: `EngineDb::from_toml` returns profiles or an
/// error naming the file, never a panic; every profile it accepts predicts finite,
/// positive times.
pub fn engine_toml(data: &[u8]) -> bool {
    let Ok(text) = std::str::from_utf8(data) else {
        return false;
    };
    let db = match EngineDb::from_toml(text, "fuzz.toml") {
        Ok(db) => db,
        Err(e) => {
            assert!(e.to_string().starts_with("fuzz.toml: "), "{e}");
            return false;
        }
    };
    let model = ModelDb::builtin().unwrap().resolve("llama-3-8b").unwrap();
    let hw = HardwareDb::builtin().unwrap();
    for e in db.engines() {
        for gpu in ["h100", "rtx-4090", "m2-ultra"] {
            let Ok(p) = Predictor::new(&model, hw.get(gpu).unwrap(), e, &scenario()) else {
                continue;
            };
            let sum = p.summary(1, 64, 16);
            assert!(
                sum.decode.time_s.is_finite() && sum.decode.time_s > 0.0,
                "{}: {}",
                e.id,
                sum.decode.time_s
            );
            assert!(sum.decode_total_s.is_finite() && sum.memory.total_bytes.is_finite());
            let _ = p.max_batch(64, 16);
        }
    }
    true
}
