#!/usr/bin/env python3
"""Run NVIDIA AIConfigurator's static-mode estimator over a fixed grid and write the
reference ridgeline compares itself with (data/reference/aiconfigurator-static.csv).

Source: PyPI package `aiconfigurator-core==0.12.0` (Apache-2.0, Copyright (c) 2025-2026
NVIDIA CORPORATION & AFFILIATES): its measured-kernel database
(`aiconfigurator_core/systems/data/`) and its estimator (`aiconfigurator_core.sdk.engine.
EngineHandle.compile(...).run_static(...)`). This is a maintenance tool, as
tools/import_kernels.py is: ridgeline reads its output and never needs the package or
Python at build, test or run time.

Usage (outside the repository's build; a scratch venv):

    python3 -m venv /tmp/kvenv
    /tmp/kvenv/bin/pip install aiconfigurator-core==0.12.0 pyarrow pandas
    /tmp/kvenv/bin/python tools/aiconfigurator_static.py            # writes the CSV
    /tmp/kvenv/bin/python tools/aiconfigurator_static.py --check    # exits 1 if out of date

What one row is: AIConfigurator's static mode for one (model, system, backend, tensor
parallel size, batch, formats): all `batch` requests prefilled together (`isl` tokens
each), then decoded together for `osl` tokens. Its own definitions
(aiconfigurator_core/sdk/backends/base_backend.py, `run_static`):
    ttft_ms     = the context phase's latency
    tpot_ms     = the generation phase's latency / (osl - 1)
    tokens_s_gpu = batch * osl / (ttft + tpot * (osl - 1)) / tp
Formats: `bf16` is gemm, KV cache and attention in bfloat16; `fp8` is FP8 GEMMs
(per-tensor, `fp8`) and an FP8 KV cache with bfloat16 attention math (the kernels
ridgeline's tables hold: tools/import_kernels.py keeps `attn_dtype == bfloat16`).
The backend's version is the `current` slot of systems/query_versions.yaml. A
configuration the estimator refuses is left out and listed on stderr.
"""

import argparse
import io
import sys
import time

MODELS = {  # ridgeline model id -> (AIConfigurator model path, tensor-parallel sizes)
    "llama-3.1-8b": ("meta-llama/Meta-Llama-3.1-8B", [1, 2]),
    "qwen3-32b": ("Qwen/Qwen3-32B", [2, 4]),
    "llama-3.1-70b": ("meta-llama/Meta-Llama-3.1-70B", [4, 8]),
}
SYSTEMS = {"h100_sxm": "h100-sxm", "h200_sxm": "h200-sxm", "b200_sxm": "b200"}
BACKENDS = {"trtllm": "trt-llm", "vllm": "vllm", "sglang": "sglang"}
FORMATS = {  # ridgeline name -> (gemm, kv cache, attention) quant modes
    "bf16": ("bfloat16", "bfloat16", "bfloat16"),
    "fp8": ("fp8", "fp8", "bfloat16"),
}
BATCHES = [1, 16, 64]
ISL, OSL = 4000, 500
COLUMNS = "model,device,engine,backend_version,formats,tp,batch,isl,osl,ttft_ms,tpot_ms,tokens_s_gpu"


def header(version):
    return (
        "# AIConfigurator static-mode estimates: the reference of ridgeline's examples/aiconfigurator.rs\n"
        f"# Written by tools/aiconfigurator_static.py with aiconfigurator-core=={version} (PyPI),\n"
        "# Apache-2.0, Copyright (c) 2025-2026 NVIDIA CORPORATION & AFFILIATES; estimates derived from\n"
        "# its measured-kernel database and estimator. Definitions: tools/aiconfigurator_static.py.\n"
        "# Model, device and engine are ridgeline ids; backend_version is the backend release the\n"
        "# database was measured on.\n"
    )


def build(version):
    from aiconfigurator_core.sdk.engine import EngineHandle, _literal_backend_version

    out = io.StringIO()
    out.write(header(version))
    out.write(COLUMNS + "\n")
    refused = []
    for model, (path, tps) in MODELS.items():
        for system, device in SYSTEMS.items():
            for backend, engine in BACKENDS.items():
                bversion = _literal_backend_version(system, backend, None, None, None)
                for fmt, (gemm, kv, fmha) in FORMATS.items():
                    for tp in tps:
                        try:
                            h = EngineHandle.compile(
                                path,
                                system,
                                backend,
                                tp_size=tp,
                                gemm_quant_mode=gemm,
                                kvcache_quant_mode=kv,
                                fmha_quant_mode=fmha,
                            )
                        except Exception as e:  # the estimator's own refusal
                            refused.append(f"{model} {system} {backend} {fmt} tp{tp}: {e}")
                            continue
                        for b in BATCHES:
                            try:
                                ctx, gen, _total = h.run_static(batch_size=b, isl=ISL, osl=OSL)
                            except Exception as e:
                                refused.append(f"{model} {system} {backend} {fmt} tp{tp} b{b}: {e}")
                                continue
                            if not (ctx > 0 and gen > 0):
                                refused.append(f"{model} {system} {backend} {fmt} tp{tp} b{b}: zero latency")
                                continue
                            tpot = gen / (OSL - 1)
                            tok = b * OSL / ((ctx + tpot * (OSL - 1)) / 1000.0) / tp
                            out.write(
                                f"{model},{device},{engine},{bversion},{fmt},{tp},{b},{ISL},{OSL},"
                                f"{ctx:.4g},{tpot:.4g},{tok:.4g}\n"
                            )
    for r in refused:
        print(f"refused: {r}", file=sys.stderr)
    return out.getvalue()


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--out", default="data/reference/aiconfigurator-static.csv")
    ap.add_argument("--check", action="store_true", help="exit 1 if --out differs from a fresh run")
    a = ap.parse_args()
    from importlib.metadata import version

    v = version("aiconfigurator-core")
    t = time.time()
    text = build(v)
    rows = text.count("\n") - header(v).count("\n") - 1
    print(f"{rows} rows in {time.time() - t:.0f} s (aiconfigurator-core {v})", file=sys.stderr)
    if a.check:
        with open(a.out) as f:
            same = f.read() == text
        print("up to date" if same else f"{a.out} is out of date", file=sys.stderr)
        sys.exit(0 if same else 1)
    import os

    os.makedirs(os.path.dirname(a.out), exist_ok=True)
    tmp = a.out + ".tmp"
    with open(tmp, "w") as f:
        f.write(text)
    os.replace(tmp, a.out)


if __name__ == "__main__":
    main()
