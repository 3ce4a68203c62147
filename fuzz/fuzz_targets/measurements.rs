//! Any bytes as a measurements CSV: `parse_measurements` returns rows or an error
//! naming the file, never a panic; rows map to cases or skips (one each); the checks
//! and, for a few cases, the whole calibration return a result or an error, never a
//! panic, and a calibration's factors stay in their bounds.
//! The checks are in tests/suite/support/fuzz_checks.rs, which tests/suite/fuzz_corpus.rs replays
//! the minimized corpus through.
#![no_main]

#[path = "../../tests/suite/support/fuzz_checks.rs"]
mod checks;

libfuzzer_sys::fuzz_target!(|data: &[u8]| {
    checks::measurements(data);
});
