//! Any bytes as an engine TOML file: `EngineDb::from_toml` returns profiles or an
//! error naming the file, never a panic; every profile it accepts predicts finite,
//! positive times.
//! The checks are in tests/suite/support/fuzz_checks.rs, which tests/suite/fuzz_corpus.rs replays
//! the minimized corpus through.
#![no_main]

#[path = "../../tests/suite/support/fuzz_checks.rs"]
mod checks;

libfuzzer_sys::fuzz_target!(|data: &[u8]| {
    checks::engine_toml(data);
});
