#!/usr/bin/env bash
# The Python package's tests in a fresh virtual environment: one `pip install` of
# ./python (maturin compiles the crate into CARGO_TARGET_DIR, by default the
# repository's target/), then pytest against the `ridgeline` binary of the same
# sources. VENV (default target/python-venv) is made anew each run. The extension is
# built with the dev profile (PROFILE, default dev), so that it reuses what `cargo test`
# compiled: a minute instead of four on two cores; PROFILE=release builds what
# `pip install ./python` gives users. Usage: bash python/test.sh [pytest arguments]
set -euo pipefail
cd "$(dirname "$0")/.."
venv="${VENV:-target/python-venv}"
export CARGO_TARGET_DIR="${CARGO_TARGET_DIR:-$PWD/target}"
if ! command -v python3 >/dev/null 2>&1 || ! python3 -c 'import ensurepip, venv' >/dev/null 2>&1; then
  apt-get update -qq
  apt-get install -y -qq python3 python3-venv python3-pip >/dev/null
fi
export MATURIN_PEP517_ARGS="--profile ${PROFILE:-dev}"
rm -rf "$venv"
python3 -m venv "$venv"
"$venv/bin/python" -m pip install --quiet "./python[test]"
cargo build --quiet --bin ridgeline
RIDGELINE_BIN="$CARGO_TARGET_DIR/debug/ridgeline" "$venv/bin/python" -m pytest -q python/tests "$@"
