//! Any bytes as a hardware TOML file: `Hardware::from_toml` returns a device or an
//! error naming the file, never a panic; a device it accepts predicts finite numbers.
//! The checks are in tests/suite/support/fuzz_checks.rs, which tests/suite/fuzz_corpus.rs replays
//! the minimized corpus through.
#![no_main]

#[path = "../../tests/suite/support/fuzz_checks.rs"]
mod checks;

libfuzzer_sys::fuzz_target!(|data: &[u8]| {
    checks::hardware_toml(data);
});
