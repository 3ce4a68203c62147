"""A 1,000,000-configuration sweep from Python (`ridgeline.sweep`, NumPy columns)
against the same sweep from the command line (`ridgeline sweep`, CSV to /dev/null).

    python python/benches/sweep_1m.py [path/to/ridgeline]   # default target/release/ridgeline

Prints the best of `--runs` (default 3) wall-clock times of each and their ratio."""

import argparse
import pathlib
import subprocess
import time

import ridgeline

# the grid of benches/README.md: 2 models x 5 devices x 4 counts x 250 batches x
# 5 prompts x 5 gens x 2 weight formats x 2 KV formats = 1,000,000 configurations
FLAGS = {
    "model": "llama-3-8b,llama-2-70b",
    "gpu": "h100,a100,l40s,mi300x,h200",
    "gpus": "1,2,4,8",
    "batch": "1..250",
    "prompt": "128..2048:x2",
    "gen": "128..2048:x2",
    "weights": "native,fp8",
    "kv": "native,fp8",
}


def main() -> None:
    root = pathlib.Path(__file__).resolve().parents[2]
    ap = argparse.ArgumentParser()
    ap.add_argument("binary", nargs="?", default=str(root / "target/release/ridgeline"))
    ap.add_argument("--runs", type=int, default=3)
    a = ap.parse_args()
    words = [a.binary, "sweep"] + [w for k, v in FLAGS.items() for w in (f"--{k}", v)]
    py, cli = [], []
    for _ in range(a.runs):
        t = time.perf_counter()
        cols = ridgeline.sweep(**FLAGS)
        py.append(time.perf_counter() - t)
        assert cols.rows == 1_000_000
        del cols
        t = time.perf_counter()
        subprocess.run(words, check=True, stdout=subprocess.DEVNULL)
        cli.append(time.perf_counter() - t)
    print(f"python ridgeline.sweep: {min(py):.3f} s (runs {', '.join(f'{x:.3f}' for x in py)})")
    print(f"cli ridgeline sweep:    {min(cli):.3f} s (runs {', '.join(f'{x:.3f}' for x in cli)})")
    print(f"python / cli: {min(py) / min(cli):.2f}")


if __name__ == "__main__":
    main()
