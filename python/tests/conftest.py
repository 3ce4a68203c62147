"""Fixtures: the repository's data and the `ridgeline` binary the package is compared
with (RIDGELINE_BIN, else the newest of target/{release,debug}/ridgeline under
CARGO_TARGET_DIR or the repository's target/)."""

import json
import os
import pathlib
import subprocess

import pytest

ROOT = pathlib.Path(__file__).resolve().parents[2]


def _binary() -> pathlib.Path:
    explicit = os.environ.get("RIDGELINE_BIN")
    if explicit:
        return pathlib.Path(explicit)
    target = pathlib.Path(os.environ.get("CARGO_TARGET_DIR") or ROOT / "target")
    if not target.is_absolute():
        target = ROOT / target
    found = [target / p / "ridgeline" for p in ("release", "debug")]
    found = [p for p in found if p.is_file()]
    if not found:
        pytest.fail(
            f"no ridgeline binary under {target}: run `cargo build --release` "
            "or set RIDGELINE_BIN"
        )
    return max(found, key=lambda p: p.stat().st_mtime)


class Cli:
    """Runs the command-line binary."""

    def __init__(self, path: pathlib.Path):
        self.path = path

    def run(self, *words: str, cwd=None) -> subprocess.CompletedProcess:
        return subprocess.run(
            [str(self.path), *map(str, words)],
            capture_output=True,
            text=True,
            cwd=cwd,
            timeout=600,
        )

    def json(self, *words: str):
        r = self.run(*words, "--json")
        assert r.returncode == 0, r.stderr
        return json.loads(r.stdout)

    def error(self, *words: str) -> str:
        """The one-line message of a command that fails on bad input (exit 2)."""
        r = self.run(*words)
        assert r.returncode == 2, (r.returncode, r.stdout, r.stderr)
        lines = r.stderr.strip().splitlines()
        assert lines[-1].startswith("error: "), r.stderr
        return lines[-1][len("error: ") :]


@pytest.fixture(scope="session")
def cli() -> Cli:
    return Cli(_binary())


@pytest.fixture(scope="session")
def root() -> pathlib.Path:
    return ROOT
