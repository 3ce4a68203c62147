#!/usr/bin/env python3
"""Import NVIDIA's measured kernel database (aiconfigurator) into ridgeline's kernel tables.

Source: PyPI package `aiconfigurator-core==0.12.0` (Apache-2.0, Copyright (c) 2025-2026
NVIDIA CORPORATION & AFFILIATES), files
`aiconfigurator_core/systems/data/<system>/<family>/<backend>/<version>/*.parquet`.
The importer is a maintenance tool: ridgeline embeds its output (data/kernels/) and
never needs it, the package or Python at build, test or run time.

Usage (outside the repository's build; a scratch venv):

    python3 -m venv /tmp/kvenv
    /tmp/kvenv/bin/pip install aiconfigurator-core==0.12.0 pyarrow pandas
    /tmp/kvenv/bin/python tools/import_kernels.py            # writes data/kernels/
    /tmp/kvenv/bin/python tools/import_kernels.py --check    # exits 1 if out of date

Options: --package DIR (the `aiconfigurator_core` directory; default: the installed
package), --hardware DIR (default data/hardware), --out DIR (default data/kernels),
--window-check (instead of writing, print how windowed decode attention compares with
the full kernel over as many keys as the window: docs/kernels.md).

What it writes: one CSV per ridgeline device and engine, `data/kernels/<device>/<engine>.csv`
(engines `trt-llm`, `vllm`, `sglang`), columns `op,version,dtype,key,x,y,z,efficiency`:

    op                 key                          x       y        z   dtype
    gemm               -                            m       n        k   bf16 | fp8 | nvfp4 (the weights)
    attention_prefill  heads/kv_heads/head_dim      batch   seq      -   bf16 | fp8 (the KV cache)
    attention_decode   heads/kv_heads/head_dim      batch   kv_len   -   bf16 | fp8 (the KV cache)
    all_reduce         gpus                         bytes   -        -   bf16
    moe                hidden/inter/topk/experts/ep tokens  -        -   bf16 | fp8 | fp8-block | nvfp4 | mxfp4 (the experts)

`efficiency` is the roof time over the measured time: roof = max(FLOPs / peak of the
dtype, bytes / memory bandwidth, link bytes / link bandwidth) with the peaks, bandwidth
and scale-up link of ridgeline's own hardware file, and the FLOPs and bytes counted as
ridgeline's op catalog counts them (crates/ridgeline-core/src/ops/):
- gemm (`ops::linear`, no bias): FLOPs 2mnk; bytes m*k*2 (bf16 activations, as the
  layer graph passes them) + k*n*w/8 (weights: bf16 16, fp8 8, nvfp4 4.5 bits) + m*n*2
  (bf16 output); peak of the weights' compute dtype (bf16, fp8, fp4);
- attention (`ops::attention_fused`, no window, bf16 activations): FLOPs
  4*batch*heads*head_dim*pairs with causal pairs seq*(seq+1)/2 (prefill) or kv_len
  (decode); bytes Q and O at 2 bytes, K and V 2*batch*kv_len*kv_heads*head_dim at the
  cache width; peak bf16; a point measured under several kernels (SGLang on Blackwell:
  trtllm_mha and flashinfer) takes the fastest. Decode rows: aiconfigurator's `step` is
  the past tokens, so kv_len = isl (1) + step;
- mla_decode (`ops::attention_fused` of the absorbed latent attention a decode step
  runs, `model::graph`): one query token per sequence, `heads` one device's, attending
  over kv_len cached latents of kv_lora + rope = 512 + 64 elements (one shared key; the
  value the 512-wide latent): FLOPs 2*batch*heads*(576 + 512)*kv_len; bytes Q (576 per
  head) and O (512 per head) at 2 bytes, the latents at the cache width; peak bf16;
  key heads/kv_lora/rope (heads 8 to 128, kv_len 128 to 32768 by fours); the fastest
  kernel (and tensor-parallel size) measured at a point; kv_len = isl (1) + step;
- all_reduce (`ops::collective`, ring): link bytes 2*(n-1)/n * size, memory bytes 2 *
  size (read and written once); under vLLM and SGLang the rows measured inside a CUDA
  graph (`*_graph`), not the eager ones. `message_size` counts elements (bf16): at 512
  Mi elements on 8 H100s it runs at 445 GB/s of ring bus bandwidth against NVLink's 450.
- moe (a routed-expert block as `model::graph` counts it: gate_up_proj, the gated
  activation and down_proj of the experts, no router, no dispatch): `tokens` is the
  pass's tokens over the whole expert-parallel group (aiconfigurator runs the experts of
  one of `ep` ranks on all of them, routed over every expert: balanced rows only), so a
  device runs tokens * topk / ep rows and reads the weights of the experts among its
  experts / ep that those tokens touch (experts * (1 - (1 - topk/experts)^tokens) / ep);
  the efficiency is the sum of the three ops' roofs (each max(FLOPs / peak, bytes /
  bandwidth); activations 16-bit, weights at the format's bits: bf16 16, fp8 8, fp8-block
  8 + 32/128^2, nvfp4 4.5, mxfp4 4.25; peak fp8 for fp8 formats, fp4 for nvfp4, bf16 for
  bf16 and for mxfp4, whose kernels here take 16-bit activations) over the measured
  time, the fastest of the kernel sources measured at a point (the engine picks its
  kernel). An expert split `moe_tp_size` = t ways (tensor parallel) is the block of a
  model whose experts are `inter / t` wide, which is what each device runs: its key
  carries `inter / t` (and the tensor-parallel all-reduce after it is not part of the
  point); t among 1, 2, 4, 8 where t divides `inter`, without expert parallelism (ep 1)
  for t above 1. Under SGLang and vLLM,
  points without expert parallelism only (`moe_ep_size` 1: see moe_rows). A point measured faster
  than its roof (under 1% of them, most with all 256 of DeepSeek-V3's experts on one
  device) is a run the count does not describe and is left out.
Latencies are milliseconds (aiconfigurator_core/sdk/performance_result.py).

Thinning: each (op, dtype, key) keeps a few grid values per axis (GRID below), every
measured cell among them (the grids are ragged: long sequences are measured at small
batches only; the loader interpolates ragged grids axis by axis); the median of
repeated rows is taken. Versions: the `current` slot of the package's
systems/query_versions.yaml per system and backend; an op without data at that version
is left out.
"""

import argparse
import glob
import os
import re
import sys
import tomllib

import pandas as pd

PACKAGE = "aiconfigurator-core"
PACKAGE_VERSION = "0.12.0"

# aiconfigurator system -> ridgeline hardware id (data/hardware/<id>.toml)
SYSTEMS = {
    "a100_sxm": "a100-80gb-sxm",
    "h100_sxm": "h100-sxm",
    "h200_sxm": "h200-sxm",
    "b200_sxm": "b200",
    "b300_sxm": "b300",
    "gb200": "gb200",
    "gb300": "gb300",
    "l40s": "l40s",
    "rtx_pro_6000_server": "rtx-pro-6000",
}
# aiconfigurator backend -> ridgeline engine id (data/engines.toml)
BACKENDS = {"trtllm": "trt-llm", "vllm": "vllm", "sglang": "sglang"}

# gemm dtype -> (ridgeline name, weight bits, peak key)
GEMM_DTYPES = {"bfloat16": ("bf16", 16.0, "bf16"), "fp8": ("fp8", 8.0, "fp8"), "nvfp4": ("nvfp4", 4.5, "fp4")}
KV_DTYPES = {"bfloat16": ("bf16", 16.0), "fp8": ("fp8", 8.0)}
# the latent attention aiconfigurator measures: DeepSeek-V3's latent (kv_lora_rank) and
# shared rotary key (qk_rope_head_dim) widths
MLA_DIMS = (512, 64)
# its heads on one device (DeepSeek-V3's 128 and Kimi K2's 64 over 1 to 8 devices) and
# cached lengths kept
MLA_HEADS = [8, 16, 32, 64, 128]
MLA_KV_LEN = [128, 512, 2048, 8192, 32768]
# attention variants kept: (heads, kv_heads, head_dim) of common models after tensor
# parallelism (Llama 3 8B at tp 1 and 2, 70B at tp 8 and 1, MHA, gpt-oss's 64-wide heads)
ATTN_KEYS = [(32, 8, 128), (16, 4, 128), (8, 1, 128), (64, 8, 128), (32, 32, 128), (64, 8, 64)]
GRID = {
    "m": [2**i for i in range(0, 16)],  # 1 .. 32768
    "nk": [1024, 2048, 4096, 8192, 16384, 51200],
    "batch": [2**i for i in range(0, 11)],  # 1 .. 1024
    "seq": [2**i for i in range(7, 15)],  # 128 .. 16384
    "kv_len": [2**i for i in range(7, 16)],  # 128 .. 32768
    "ar_elems": [4**i for i in range(5, 15)],  # 1 Ki .. 256 Mi elements
    "tokens": [1, 2, 4, 8, 16, 64, 256, 1024, 4096, 16384],
}
# moe dtype -> (ridgeline format id, weight bits, peak key)
MOE_DTYPES = {
    "bfloat16": ("bf16", 16.0, "bf16"),
    "fp8": ("fp8", 8.0, "fp8"),
    "fp8_block": ("fp8-block", 8.0 + 32.0 / (128 * 128), "fp8"),
    "nvfp4": ("nvfp4", 4.5, "fp4"),
    "w4a16_mxfp4": ("mxfp4", 4.25, "bf16"),
}
# expert shapes (hidden, expert inter, topk, experts) of the bundled MoE models
# (data/models/): DeepSeek-V3/R1, Kimi K2, Qwen3-30B-A3B, Qwen3-235B-A22B,
# Qwen3-Next-80B-A3B, gpt-oss-120b and -20b, Mixtral 8x7B, Llama 4 Scout and Maverick
# tensor-parallel splits of the experts read (`moe_tp_size`): ridgeline's layouts run at
# most 8 devices per expert group
MOE_TP = [1, 2, 4, 8]
MOE_KEYS = [
    (7168, 2048, 8, 256),
    (7168, 2048, 8, 384),
    (2048, 768, 8, 128),
    (4096, 1536, 8, 128),
    (2048, 512, 10, 512),
    (2880, 2880, 4, 128),
    (2880, 2880, 4, 32),
    (4096, 14336, 2, 8),
    (5120, 8192, 1, 16),
    (5120, 8192, 1, 128),
]
LICENCE = (
    "Apache-2.0; Copyright (c) 2025-2026 NVIDIA CORPORATION & AFFILIATES "
    "(https://www.apache.org/licenses/LICENSE-2.0)"
)


def query_versions(path):
    """The `current` version per (system, backend) from query_versions.yaml (a tiny
    fixed-layout YAML; parsed by pattern to stay on the standard library)."""
    default, override, system = {}, {}, None
    section = None
    pat = re.compile(r'^(\s*)(\w+):\s*\{current:\s*"([^"]+)"')
    for line in open(path):
        if line.startswith("defaults:"):
            section = "defaults"
        elif line.startswith("overrides:"):
            section = "overrides"
        m = pat.match(line)
        if m:
            if section == "defaults":
                default[m.group(2)] = m.group(3)
            elif system:
                override[(system, m.group(2))] = m.group(3)
        elif section == "overrides" and re.match(r"^  (\w+):\s*$", line):
            system = line.strip()[:-1]
    return lambda s, b: override.get((s, b), default.get(b))


def fmt(v):
    return f"{v:.3g}"


def gemm_rows(df, hw, version):
    out = []
    peaks, bw = hw["peak_flops_per_s"], hw["memory"]["bandwidth_bytes_per_s"]
    for raw, (name, wbits, peak_key) in GEMM_DTYPES.items():
        d = df[(df.gemm_dtype == raw) & df.m.isin(GRID["m"]) & df.n.isin(GRID["nk"]) & df.k.isin(GRID["nk"])]
        if d.empty or peak_key not in peaks:
            continue
        d = d.groupby(["m", "n", "k"], as_index=False).latency.median()
        for r in d.itertuples():
            flops = 2.0 * r.m * r.n * r.k
            bytes_ = r.m * r.k * 2 + r.k * r.n * wbits / 8 + r.m * r.n * 2
            roof = max(flops / peaks[peak_key], bytes_ / bw)
            out.append(("gemm", version, name, "-", r.m, r.n, r.k, roof / (r.latency * 1e-3)))
    return out


def attention_rows(df, hw, version, op):
    out = []
    peak, bw = hw["peak_flops_per_s"]["bf16"], hw["memory"]["bandwidth_bytes_per_s"]
    df = df[df.attn_dtype == "bfloat16"].copy()
    for col, v in [("window_size", 0), ("beam_width", 1)]:  # older collections lack them
        if col in df.columns:
            df = df[df[col] == v]
    if op == "attention_decode":
        df["y"] = df.isl + df.step
        grid_y = GRID["kv_len"]
    else:
        df = df[df.step == 0]
        df["y"] = df.isl
        grid_y = GRID["seq"]
    df = df[df.batch_size.isin(GRID["batch"]) & df.y.isin(grid_y)]
    for raw, (name, kvbits) in KV_DTYPES.items():
        for h, kvh, hd in ATTN_KEYS:
            d = df[
                (df.kv_cache_dtype == raw) & (df.num_heads == h) & (df.num_key_value_heads == kvh) & (df.head_dim == hd)
            ]
            if d.empty:
                continue
            # a point measured under several kernels (SGLang on Blackwell: trtllm_mha and
            # flashinfer) takes the fastest, the engine picking its kernel
            d = d.groupby(["batch_size", "y", "kernel_source"]).latency.median()
            d = d.groupby(["batch_size", "y"]).min().reset_index()
            for r in d.itertuples():
                b, y = r.batch_size, r.y
                if op == "attention_decode":
                    q, pairs = 1, y
                else:
                    q, pairs = y, y * (y + 1) / 2
                flops = 4.0 * b * h * hd * pairs
                bytes_ = 2 * b * q * h * hd * 2 + 2 * b * y * kvh * hd * kvbits / 8
                roof = max(flops / peak, bytes_ / bw)
                out.append((op, version, name, f"{h}/{kvh}/{hd}", b, y, "-", roof / (r.latency * 1e-3)))
    return out


def mla_decode_rows(df, hw, version):
    """The absorbed latent attention of a decode step (`mla/generation_mla_perf.parquet`):
    one query token per sequence over the cached latents of DeepSeek-V3's shape."""
    out = []
    peak, bw = hw["peak_flops_per_s"]["bf16"], hw["memory"]["bandwidth_bytes_per_s"]
    df = df[df.mla_dtype == "bfloat16"].copy()
    df["y"] = df.isl + df.step
    df = df[df.batch_size.isin(GRID["batch"]) & df.y.isin(MLA_KV_LEN) & df.num_heads.isin(MLA_HEADS)]
    lora, rope = MLA_DIMS
    width = lora + rope
    for raw, (name, kvbits) in KV_DTYPES.items():
        d = df[df.kv_cache_dtype == raw]
        if d.empty:
            continue
        # `num_heads` is one device's; a point measured at several tensor-parallel
        # sizes or kernels takes the fastest
        d = d.groupby(["num_heads", "batch_size", "y", "tp_size", "kernel_source"]).latency.median()
        d = d.groupby(["num_heads", "batch_size", "y"]).min().reset_index()
        for r in d.itertuples():
            h, b, y = r.num_heads, r.batch_size, r.y
            flops = 2.0 * b * h * (width + lora) * y
            bytes_ = b * h * width * 2 + b * h * lora * 2 + b * y * width * kvbits / 8
            roof = max(flops / peak, bytes_ / bw)
            out.append(("mla_decode", version, name, f"{h}/{lora}/{rope}", b, y, "-", roof / (r.latency * 1e-3)))
    return out


def all_reduce_rows(df, hw, version):
    out = []
    bw = hw["memory"]["bandwidth_bytes_per_s"]
    link = (hw.get("scaleup_link") or hw.get("host_link"))["bytes_per_s_per_direction"]
    df = df[(df.allreduce_dtype == "bfloat16") & df.message_size.isin(GRID["ar_elems"])]
    # vLLM and SGLang measure their custom all-reduce twice: captured in a CUDA graph, as
    # their decode steps run it (and as aiconfigurator's estimator reads it), and eagerly,
    # each call paying the Python launch (about 20 us at a few kilobytes). Keep the graph's.
    graph = df.kernel_source.str.endswith("_graph")
    if graph.any():
        df = df[graph]
    for n in sorted(df.num_gpus.unique()):
        d = df[df.num_gpus == n].groupby("message_size", as_index=False).latency.median()
        for r in d.itertuples():
            size = r.message_size * 2
            roof = max(2 * size / bw, 2 * (n - 1) / n * size / link)
            out.append(("all_reduce", version, "bf16", str(n), size, "-", "-", roof / (r.latency * 1e-3)))
    return out


def expected_experts(e, k, tokens):
    """Experts a pass of `tokens` touches, `k` of `e` each (model::graph::expected_experts)."""
    return e * (1.0 - (1.0 - k / e) ** tokens)


def moe_rows(df, hw, version, backend):
    out = []
    peaks, bw = hw["peak_flops_per_s"], hw["memory"]["bandwidth_bytes_per_s"]
    df = df[(df.distribution == "balanced") & df.moe_tp_size.isin(MOE_TP) & df.num_tokens.isin(GRID["tokens"])]
    df = df[~df.kernel_source.str.contains("min_latency")]
    if backend != "trtllm":
        # SGLang's and vLLM's collectors build an expert-parallel rank's workload their
        # own way (SGLang: a rank-0 local workload); their points read with the
        # counting above run up to 8x under TensorRT-LLM's at ep 8 and large token
        # counts, so only their single-device points (ep 1) are kept
        df = df[df.moe_ep_size == 1]
    for raw, (name, wbits, peak_key) in MOE_DTYPES.items():
        if peak_key not in peaks:
            continue
        peak = peaks[peak_key]
        for h, full_inter, k, e in MOE_KEYS:
            d = df[
                (df.moe_dtype == raw)
                & (df.hidden_size == h)
                & (df.inter_size == full_inter)
                & (df.topk == k)
                & (df.num_experts == e)
            ]
            # the fastest kernel source per point, then the median of repeats
            point = ["moe_tp_size", "moe_ep_size", "num_tokens"]
            d = d.groupby(point + ["kernel_source"], as_index=False).latency.median()
            d = d.groupby(point, as_index=False).latency.min()
            for r in d.itertuples():
                ep, t, split = r.moe_ep_size, r.num_tokens, r.moe_tp_size
                if e % ep or full_inter % split or (split > 1 and ep > 1):
                    # a split expert without expert parallelism only (the tensor-parallel
                    # layouts of one node)
                    continue
                # each device runs every expert it holds `split` ways narrower
                inter = full_inter // split
                rows = t * k / ep
                touched = expected_experts(e, k, t) / ep
                up_f, down_f = 2.0 * rows * h * 2 * inter, 2.0 * rows * inter * h
                up_b = rows * h * 2 + touched * h * 2 * inter * wbits / 8 + rows * 2 * inter * 2
                act_b = 3 * rows * inter * 2
                down_b = rows * inter * 2 + touched * inter * h * wbits / 8 + rows * h * 2
                roof = max(up_f / peak, up_b / bw) + act_b / bw + max(down_f / peak, down_b / bw)
                eff = roof / (r.latency * 1e-3)
                if eff > 1.0:
                    # faster than the roof: a run the count does not describe (the
                    # routing or the weights it read were not those counted); left out
                    continue
                key = f"{h}/{inter}/{k}/{e}/{ep}"
                out.append(("moe", version, name, key, t, "-", "-", eff))
    return out


def header(system, backend, device, engine, hw, version, files):
    p = hw["peak_flops_per_s"]
    link = hw.get("scaleup_link") or hw.get("host_link")
    lines = [
        f"ridgeline kernel table: {device} under {engine} (measured kernel times as a fraction of the roof)",
        f"source: {PACKAGE}=={PACKAGE_VERSION}, aiconfigurator_core/systems/data/{system}/<family>/{backend}/{version}/",
        "  files: " + ", ".join(files),
        f"licence: {LICENCE}",
        f"roof: data/hardware/{device}.toml peaks bf16 {p.get('bf16', 0):g}, fp8 {p.get('fp8', 0):g}, fp4 {p.get('fp4', 0):g} FLOP/s (0: none);"
        f" memory {hw['memory']['bandwidth_bytes_per_s']:g} B/s; link {link['bytes_per_s_per_direction']:g} B/s",
        f"written by: /tmp/kvenv/bin/python tools/import_kernels.py (see its docstring; {PACKAGE}=={PACKAGE_VERSION})",
        "columns: gemm x,y,z = m,n,k; attention_prefill x,y = batch,seq; attention_decode x,y = batch,kv_len;",
        "  all_reduce x = bytes, key = gpus; attention key = heads/kv_heads/head_dim;",
        "  moe x = tokens, key = hidden/inter/topk/experts/ep;",
        "  mla_decode x,y = batch,kv_len, key = heads/kv_lora/rope; docs/kernels.md",
    ]
    return "".join(f"# {line}\n" for line in lines)


def build(package, hardware, out_dir):
    data = os.path.join(package, "systems", "data")
    current = query_versions(os.path.join(package, "systems", "query_versions.yaml"))
    tables = {}
    for system, device in SYSTEMS.items():
        with open(os.path.join(hardware, f"{device}.toml"), "rb") as f:
            hw = tomllib.load(f)
        for backend, engine in BACKENDS.items():
            version = current(system, backend)
            rows, files = [], []

            def read(family, name):
                path = os.path.join(data, system, family, backend, version, name)
                if not os.path.exists(path):
                    return None
                files.append(f"{family}/{name}")
                return pd.read_parquet(path)

            g = read("gemm", "gemm_perf.parquet")
            if g is not None:
                rows += gemm_rows(g, hw, version)
            for op, name in [
                ("attention_prefill", "context_attention_perf.parquet"),
                ("attention_decode", "generation_attention_perf.parquet"),
            ]:
                a = read("attention", name)
                if a is not None:
                    rows += attention_rows(a, hw, version, op)
            la = read("mla", "generation_mla_perf.parquet")
            if la is not None:
                rows += mla_decode_rows(la, hw, version)
            m = read("moe", "moe_perf.parquet")
            if m is not None:
                rows += moe_rows(m, hw, version, backend)
            c = read("comm", "custom_allreduce_perf.parquet")
            if c is not None:
                rows += all_reduce_rows(c, hw, version)
            if not rows:
                continue
            text = header(system, backend, device, engine, hw, version, files)
            text += "op,version,dtype,key,x,y,z,efficiency\n"
            for r in rows:
                cells = [str(c) if not isinstance(c, float) else fmt(c) for c in r[:7]] + [fmt(r[7])]
                text += ",".join(str(c) for c in cells) + "\n"
            tables[os.path.join(out_dir, device, f"{engine}.csv")] = text
    return tables


def window_check(package):
    """Windowed decode attention against the full kernel at a cache as long as the
    window: for every windowed point (window w, cache y > w) of a system's current
    version, the measured time over the same key's full-attention time at the shortest
    measured cache of at least w (at most 2w) and the same batch. ridgeline reads a
    decode step's windowed attention as the full kernel over the keys the window lets
    the new token see (`Predictor::kernel_shape`); this prints how far that holds, as
    a Markdown table: the median ratio and median |ratio - 1| per device, engine and
    window."""
    data = os.path.join(package, "systems", "data")
    current = query_versions(os.path.join(package, "systems", "query_versions.yaml"))
    print("| device | engine | window | points | windowed / full, median | median \\|ratio - 1\\| |")
    print("|---|---|---:|---:|---:|---:|")
    every = []
    for system, device in SYSTEMS.items():
        for backend, engine in BACKENDS.items():
            path = os.path.join(data, system, "attention", backend, current(system, backend),
                                "generation_attention_perf.parquet")
            if not os.path.exists(path):
                continue
            d = pd.read_parquet(path)
            if "window_size" not in d.columns:
                continue
            d = d[d.attn_dtype == "bfloat16"].copy()
            if "beam_width" in d.columns:
                d = d[d.beam_width == 1]
            d["y"] = d.isl + d.step
            keys = ["num_heads", "num_key_value_heads", "head_dim", "kv_cache_dtype"]
            full = d[d.window_size == 0].groupby(keys + ["batch_size", "y"]).latency.min()
            for w in sorted(set(d.window_size) - {0}):
                got = d[(d.window_size == w) & (d.y > w)]
                got = got.groupby(keys + ["batch_size", "y"]).latency.min()
                ratios = []
                for idx, lat in got.items():
                    *key, b, _ = idx
                    try:
                        ref = full.loc[tuple(key) + (b,)]
                    except KeyError:
                        continue
                    ref = ref[(ref.index >= w) & (ref.index <= 2 * w)]
                    if len(ref):
                        ratios.append(lat / ref.iloc[0])
                if ratios:
                    r = pd.Series(ratios)
                    every += ratios
                    print(f"| {device} | {engine} | {w} | {len(r)} | {r.median():.2f} | "
                          f"{(r - 1).abs().median() * 100:.0f}% |")
    r = pd.Series(every)
    print(f"| all | all | all | {len(r)} | {r.median():.2f} | {(r - 1).abs().median() * 100:.0f}% |")


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--package", default=None)
    ap.add_argument("--hardware", default="data/hardware")
    ap.add_argument("--out", default="data/kernels")
    ap.add_argument("--check", action="store_true")
    ap.add_argument("--window-check", action="store_true")
    args = ap.parse_args()
    package = args.package
    if package is None:
        import aiconfigurator_core

        package = os.path.dirname(aiconfigurator_core.__file__)
    if args.window_check:
        window_check(package)
        return
    tables = build(package, args.hardware, args.out)
    stale = []
    for path, text in sorted(tables.items()):
        old = open(path).read() if os.path.exists(path) else None
        if old != text:
            stale.append(path)
            if not args.check:
                os.makedirs(os.path.dirname(path), exist_ok=True)
                with open(path, "w") as f:
                    f.write(text)
    extra = sorted(set(glob.glob(os.path.join(args.out, "*", "*.csv"))) - set(tables))
    if args.check:
        for p in stale + extra:
            print(f"out of date: {p}", file=sys.stderr)
        sys.exit(1 if stale or extra else 0)
    for p in extra:
        os.remove(p)
    total = sum(len(t) for t in tables.values())
    print(f"{len(tables)} tables, {total} bytes, {len(stale)} written, {len(extra)} removed")


if __name__ == "__main__":
    main()
