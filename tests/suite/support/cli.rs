//! Running the `ridgeline` binary from integration tests (each test file includes what it
//! needs of this module, hence the allowance for the helpers one file does not use).
#![allow(dead_code)]

use std::process::{Command, Output};

/// The binary cargo built for these tests.
pub fn ridgeline() -> Command {
    Command::new(env!("CARGO_BIN_EXE_ridgeline"))
}

/// Runs the binary with `args`.
pub fn run(args: &[&str]) -> Output {
    ridgeline().args(args).output().expect("binary runs")
}

/// Runs `cmd`, checks it succeeded (else fails with its stderr), and returns its stdout.
pub fn stdout_of(cmd: &mut Command) -> String {
    let out = cmd.output().expect("binary runs");
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    String::from_utf8_lossy(&out.stdout).into_owned()
}

/// Runs the binary with `line`'s words (split at whitespace) and then `extra`.
pub fn run_line(line: &str, extra: &[&str]) -> Output {
    let args: Vec<&str> = line
        .split_whitespace()
        .chain(extra.iter().copied())
        .collect();
    run(&args)
}

/// The stdout of a successful run with `args`.
pub fn ok(args: &[&str]) -> String {
    stdout_of(ridgeline().args(args))
}

/// The JSON document a successful run with `args` prints.
pub fn json(args: &[&str]) -> serde_json::Value {
    serde_json::from_str(&ok(args)).expect("stdout is JSON")
}

/// Checks that `out` is exit 2 with nothing on stdout and one line on stderr holding
/// each of `needles`.
pub fn one_line_error(out: &Output, needles: &[&str]) {
    let err = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(2), "{err}");
    assert!(
        out.stdout.is_empty(),
        "stdout: {}",
        String::from_utf8_lossy(&out.stdout)
    );
    assert_eq!(err.trim_end().lines().count(), 1, "not one line: {err}");
    for n in needles {
        assert!(err.contains(n), "{err} lacks {n}");
    }
}
