//! Replays the minimized libFuzzer corpora of the calibration and data-file fuzz targets
//! (tests/corpus/{measurements,hardware_toml,engine_toml}, written by `cargo fuzz cmin`,
//! plus any input that once crashed a target) through the targets' own checks
//! (tests/suite/support/fuzz_checks.rs): no input panics, and the corpora still reach the
//! parsers' accepting paths.

use crate::support::fuzz_checks as checks;

/// Runs `check` on every file of tests/corpus/`target`; returns the number of files and
/// how many parsed. A panic names the file.
fn replay(target: &str, check: fn(&[u8]) -> bool) -> (usize, usize) {
    let dir = std::path::Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("tests/corpus")
        .join(target);
    let (mut files, mut parsed) = (0, 0);
    for entry in std::fs::read_dir(&dir).unwrap() {
        let path = entry.unwrap().path();
        let data = std::fs::read(&path).unwrap();
        let ok = std::panic::catch_unwind(|| check(&data))
            .unwrap_or_else(|_| panic!("{} panics {target}'s checks", path.display()));
        files += 1;
        parsed += usize::from(ok);
    }
    (files, parsed)
}

#[test]
fn measurements_corpus_replays() {
    let (files, parsed) = replay("measurements", checks::measurements);
    assert!(
        files >= 50 && parsed >= 20,
        "{files} files, {parsed} parsed"
    );
}

#[test]
fn hardware_toml_corpus_replays() {
    let (files, parsed) = replay("hardware_toml", checks::hardware_toml);
    assert!(
        files >= 50 && parsed >= 10,
        "{files} files, {parsed} parsed"
    );
}

#[test]
fn engine_toml_corpus_replays() {
    let (files, parsed) = replay("engine_toml", checks::engine_toml);
    assert!(
        files >= 50 && parsed >= 10,
        "{files} files, {parsed} parsed"
    );
}
