"""The Python package against the command line: every function returns what the
`ridgeline` binary prints for the same flags (dicts equal to its --json, SVG equal to
the file it writes, sweep columns equal to its CSV cells), and fails with its message."""

import ast
import csv
import io
import json
import math
import pathlib
import threading
import time

import numpy as np
import pytest

import ridgeline

PKG = pathlib.Path(ridgeline.__file__).parent


def test_predict_equals_the_cli_json(cli):
    for kwargs, words in [
        (dict(model="llama-3-8b", gpu="h100"), ["--model", "llama-3-8b", "--gpu", "h100"]),
        (
            dict(model="llama-2-70b", gpu="a100", gpus=4, batch=16, prompt=1024, gen=256,
                 weights="int8", kv="fp8", engine="vllm"),
            ["--model", "llama-2-70b", "--gpu", "a100", "--gpus", "4", "--batch", "16",
             "--prompt", "1024", "--gen", "256", "--weights", "int8", "--kv", "fp8",
             "--engine", "vllm"],
        ),
        (
            dict(model="mixtral-8x7b", gpu="h100", gpus=2, parallel="pp", flash=False),
            ["--model", "mixtral-8x7b", "--gpu", "h100", "--gpus", "2", "--parallel", "pp",
             "--no-flash"],
        ),
        (dict(model="qwen3-8b", gpu="l4", prompt=0, gen=64), ["--model", "qwen3-8b", "--gpu", "l4", "--prompt", "0", "--gen", "64"]),
    ]:
        p = ridgeline.predict(**kwargs)
        assert isinstance(p, dict)
        assert p == cli.json("predict", *words), kwargs


def test_expert_parallel_predict_names_its_busiest_group(cli):
    # DeepSeek-V3 over 8 groups, batch 16: 16 rows and 12.745 touched experts on the mean
    # group (256 · (1 - (31/32)^16) / 8), more on the busiest, which the step waits for
    words = ["--model", "deepseek-v3", "--gpu", "h200", "--gpus", "8", "--ep", "8",
             "--batch", "16"]
    p = ridgeline.predict(model="deepseek-v3", gpu="h200", gpus=8, ep=8, batch=16)
    assert p == cli.json("predict", *words)
    b = p["architecture"]["experts"]["busiest_rank"]
    assert b["ranks"] == 8 and b["mean_rows"] == 16.0
    assert math.isclose(b["mean_touched"], 12.7453, rel_tol=1e-4)
    assert b["rows"] > b["mean_rows"] and b["touched"] > b["mean_touched"]
    tp = ridgeline.predict(model="deepseek-v3", gpu="h200", gpus=8, batch=16)
    assert tp["architecture"]["experts"]["busiest_rank"] is None


def test_a_stated_expert_imbalance_loads_the_busiest_group(cli):
    # the same with expert_imbalance=2: the busiest group runs at least 2 x 16 = 32 rows
    # (the uniform expectation is 21.5), reading the experts it would anyway
    p = ridgeline.predict(model="deepseek-v3", gpu="h200", gpus=8, ep=8, batch=16,
                          expert_imbalance=2)
    assert p == cli.json("predict", "--model", "deepseek-v3", "--gpu", "h200", "--gpus",
                         "8", "--ep", "8", "--batch", "16", "--expert-imbalance", "2")
    assert p["config"]["expert_imbalance"] == 2.0
    b = p["architecture"]["experts"]["busiest_rank"]
    u = ridgeline.predict(model="deepseek-v3", gpu="h200", gpus=8, ep=8, batch=16)
    assert b["rows"] == 32.0
    assert b["touched"] == u["architecture"]["experts"]["busiest_rank"]["touched"]
    with pytest.raises(ridgeline.RidgelineError, match="--expert-imbalance"):
        ridgeline.predict(model="llama-3-8b", gpu="h100", expert_imbalance=2)


def test_the_routed_experts_take_a_format_of_their_own(cli):
    # llama.cpp's gpt-oss GGUF: the routed experts in mxfp4, every other tensor in q8_0
    p = ridgeline.predict(model="gpt-oss-120b", gpu="h100", weights="q8_0",
                          expert_weights="mxfp4")
    assert p == cli.json("predict", "--model", "gpt-oss-120b", "--gpu", "h100",
                         "--weights", "q8_0", "--expert-weights", "mxfp4")
    assert (p["config"]["weights"], p["config"]["experts"]) == ("q8_0", "mxfp4")
    native = ridgeline.predict(model="gpt-oss-120b", gpu="h100")
    assert p["memory"]["weights_bytes"] < native["memory"]["weights_bytes"]
    with pytest.raises(ridgeline.RidgelineError, match="--expert-weights"):
        ridgeline.predict(model="gpt-oss-120b", gpu="h100", expert_weights="mxfp")


def test_predict_carries_the_kernels_per_layer_and_the_fixed_costs(cli):
    # DeepSeek-V3: 3 layers of 12 + 5 kernels and 58 of 12 + 11, 1385 over 61 layers;
    # Llama 3 8B: 11, a dense layer's
    p = ridgeline.predict(model="deepseek-v3", gpu="h200", gpus=8, weights="fp8")
    assert p == cli.json("predict", "--model", "deepseek-v3", "--gpu", "h200", "--gpus",
                         "8", "--weights", "fp8")
    assert math.isclose(p["architecture"]["kernels_per_layer"], 1385 / 61, rel_tol=1e-12)
    d = p["decode"]
    assert 0.5 * d["time_per_step_s"] < d["overhead_per_step_s"] < d["time_per_step_s"]
    llama = ridgeline.predict(model="llama-3-8b", gpu="h100")
    assert llama["architecture"]["kernels_per_layer"] == 11.0


def test_predict_reads_kernel_tables_like_the_cli(cli):
    # --kernels bundled: the H100 SXM's vLLM table covers the dense matmuls and attention
    p = ridgeline.predict(model="llama-3-8b", gpu="h100", engine="vllm", kernels="bundled")
    assert p == cli.json("predict", "--model", "llama-3-8b", "--gpu", "h100", "--engine",
                         "vllm", "--kernels", "bundled")
    sources = {(o["phase"], o["name"]): o["source"] for o in p["ops"]}
    assert sources[("decode", "attention")] == "measured"
    assert sources[("decode", "rope")] == "fitted"


def test_sweep_on_kernel_tables_is_predict_on_them(cli):
    # a sweep row on the tables (the default) is the predict --kernels bundled of its
    # configuration; kernels="none" prices every op at the engine's fitted costs
    cols = ridgeline.sweep(model="llama-3-8b", gpu="h100", batch="1,8", engine="vllm",
                           kernels="bundled")
    default = ridgeline.sweep(model="llama-3-8b", gpu="h100", batch="1,8", engine="vllm")
    assert list(cols["tpot_s"]) == list(default["tpot_s"])
    plain = ridgeline.sweep(model="llama-3-8b", gpu="h100", batch="1,8", engine="vllm",
                            kernels="none")
    for i, b in enumerate([1, 8]):
        p = ridgeline.predict(model="llama-3-8b", gpu="h100", batch=b, engine="vllm",
                              kernels="bundled")
        assert cols["tpot_s"][i] == p["generation"]["tpot_s"]
        assert cols["tpot_s"][i] != plain["tpot_s"][i]


def test_simulate_on_kernel_tables_is_the_cli_on_them(cli):
    # the serving simulation costs its iterations on the tables, as the CLI does
    kw = dict(model="llama-3-8b", gpu="h100", engine="vllm", rate="4", requests=40)
    on = ridgeline.simulate(kernels="bundled", **kw)
    assert on == cli.json("simulate", "--model", "llama-3-8b", "--gpu", "h100", "--engine",
                          "vllm", "--rate", "4", "--requests", "40", "--kernels", "bundled")
    assert on == ridgeline.simulate(**kw)
    assert on["tpot_s"]["p50"] != ridgeline.simulate(kernels="none", **kw)["tpot_s"]["p50"]


def test_predict_max_equals_the_cli(cli):
    p = ridgeline.predict(model="llama-3-8b", gpu="l4", max=True)
    assert p == cli.json("predict", "--model", "llama-3-8b", "--gpu", "l4", "--max")


def test_switch_false_gives_the_no_form_or_nothing(cli):
    # flash=False is --no-flash; flash=True is the default, so no word at all
    off = ridgeline.predict(model="llama-3-8b", gpu="h100", prompt=4096, flash=False)
    on = ridgeline.predict(model="llama-3-8b", gpu="h100", prompt=4096, flash=True)
    base = ["--model", "llama-3-8b", "--gpu", "h100", "--prompt", "4096"]
    assert off == cli.json("predict", *base, "--no-flash")
    assert on == cli.json("predict", *base)
    assert off["memory"]["activation_bytes"] > on["memory"]["activation_bytes"]


def test_train_equals_the_cli_json(cli):
    t = ridgeline.train(model="llama-3-8b", gpu="h100", gpus=8, zero=3, micro_batch=2, seq=4096)
    words = ["--model", "llama-3-8b", "--gpu", "h100", "--gpus", "8", "--zero", "3",
             "--micro-batch", "2", "--seq", "4096"]
    assert t == cli.json("train", *words)
    lora = ridgeline.train(model="llama-3-8b", gpu="rtx-4090", method="qlora")
    assert lora == cli.json("train", "--model", "llama-3-8b", "--gpu", "rtx-4090", "--method", "qlora")
    # the training stack picks the calibrated entry: Megatron-Core's on Hopper is faster
    meg = ridgeline.train(model="llama-3-8b", gpu="h100", gpus=8, zero=3, stack="megatron")
    assert meg == cli.json("train", "--model", "llama-3-8b", "--gpu", "h100", "--gpus", "8",
                           "--zero", "3", "--stack", "megatron")
    gen = ridgeline.train(model="llama-3-8b", gpu="h100", gpus=8, zero=3)
    assert (meg["config"]["stack"], gen["config"]["stack"]) == ("megatron", "generic")
    assert meg["efficiency"]["label"] == "hopper+megatron"
    # bounded by the ratio of the two matmul fractions (the step mostly compute-bound)
    ratio = meg["efficiency"]["compute"] / gen["efficiency"]["compute"]
    speedup = meg["step"]["tokens_per_s"] / gen["step"]["tokens_per_s"]
    assert 0.85 * ratio < speedup <= ratio + 1e-9 and speedup > 1


def test_context_parallel_train_equals_the_cli_json(cli):
    # cp=4: each 32k-token sequence over four ranks, the layout's dp the rest
    t = ridgeline.train(model="llama-3-8b", gpu="h100", gpus=8, cp=4, seq=32768, zero=1)
    assert t == cli.json("train", "--model", "llama-3-8b", "--gpu", "h100", "--gpus", "8",
                         "--cp", "4", "--seq", "32768", "--zero", "1")
    assert (t["layout"]["cp"], t["layout"]["dp"]) == (4, 2)
    assert t["step"]["cp_comm_time_s"] > 0
    with pytest.raises(ridgeline.RidgelineError, match="--cp"):
        ridgeline.train(model="llama-3-8b", gpu="h100", gpus=8, cp=3, seq=32768)


def test_plan_equals_the_cli_json(cli):
    p = ridgeline.plan(model="llama-3-8b", gpu=["h100", "l4", "a100"], gpus=[1, 2],
                       prompt=512, gen=128, max_tpot_ms=50)
    words = ["--model", "llama-3-8b", "--gpu", "h100,l4,a100", "--gpus", "1,2",
             "--prompt", "512", "--gen", "128", "--max-tpot-ms", "50"]
    assert p == cli.json("plan", *words)
    assert p["evaluated"] > 0 and "best" in p and "pareto" in p


def test_training_plan_and_its_chart_equal_the_cli(cli, tmp_path):
    kwargs = dict(model="llama-3.2-1b", tokens="1B", gpu=["h100", "a100"], gpus="1,8")
    words = ["--model", "llama-3.2-1b", "--tokens", "1B", "--gpu", "h100,a100", "--gpus", "1,8"]
    assert ridgeline.plan(train=True, **kwargs) == cli.json("plan", "--train", *words)
    out = tmp_path / "cost.svg"
    assert cli.run("plan", "--train", *words, "--svg", out).returncode == 0
    assert ridgeline.cost_time_svg(**kwargs) == out.read_text()
    # cp takes a list, as --cp does
    long = dict(model="llama-3.2-1b", tokens="1B", gpu="h100", gpus=8, seq=65536, cp=[1, 2, 4])
    lwords = ["--model", "llama-3.2-1b", "--tokens", "1B", "--gpu", "h100", "--gpus", "8",
              "--seq", "65536", "--cp", "1,2,4"]
    assert ridgeline.plan(train=True, **long) == cli.json("plan", "--train", *lwords)


def test_simulate_equals_the_cli_json(cli):
    s = ridgeline.simulate(model="llama-3-8b", gpu="h100", rate=[2, 8], requests=200, seed=7,
                           prompt="uniform:100..900", slo_ttft_ms=500, slo_tpot_ms=50)
    words = ["--model", "llama-3-8b", "--gpu", "h100", "--rate", "2,8", "--requests", "200",
             "--seed", "7", "--prompt", "uniform:100..900", "--slo-ttft-ms", "500",
             "--slo-tpot-ms", "50"]
    assert s == cli.json("simulate", *words)
    assert len(s["rows"]) == 2


def test_simulate_takes_the_front_end_time(cli):
    # request_overhead_ms replaces the fitted front end: the same run as the CLI's, and
    # every TTFT and end-to-end latency moves by the difference, nothing else
    kw = dict(model="llama-3-8b", gpu="h100", rate=2, requests=50)
    fitted = ridgeline.simulate(**kw)
    none = ridgeline.simulate(request_overhead_ms=0, **kw)
    assert none == cli.json("simulate", "--model", "llama-3-8b", "--gpu", "h100", "--rate", "2",
                            "--requests", "50", "--request-overhead-ms", "0")
    front = fitted["config"]["request_overhead_s"]
    assert front > 0 and none["config"]["request_overhead_s"] == 0
    for key in ("ttft_s", "e2e_s"):
        assert abs(fitted[key]["mean"] - none[key]["mean"] - front) < 1e-9
    assert fitted["tpot_s"] == none["tpot_s"] and fitted["throughput"] == none["throughput"]


def test_simulate_takes_a_draft_model(cli):
    # speculative decoding with a separate draft (Llama 3.2 1B for Llama 3.1 8B): the
    # same run as the CLI's, and its KV pool is smaller than with the model's own head
    kw = dict(model="llama-3.1-8b", gpu="h100", rate=1, requests=20, spec_k=3, spec_accept=0.7)
    words = ["--model", "llama-3.1-8b", "--gpu", "h100", "--rate", "1", "--requests", "20",
             "--spec-k", "3", "--spec-accept", "0.7"]
    drafted = ridgeline.simulate(draft="llama-3.2-1b", **kw)
    assert drafted == cli.json("simulate", *words, "--draft", "llama-3.2-1b")
    own = ridgeline.simulate(**kw)
    assert drafted["config"]["kv_cache_bytes"] < own["config"]["kv_cache_bytes"]


def test_plan_speculates_and_emits_the_draft(cli):
    # a plan with Llama 3.2 1B drafting for Llama 3.1 70B on 4 H100: the CLI's plan, and
    # its vLLM launch line carries the draft (4 tokens per verify pass)
    kw = dict(gpu="h100", gpus="4", weights="fp8", kv="fp8", spec_k=4, spec_accept=0.7,
              draft="llama-3.2-1b")
    doc = ridgeline.plan("llama-3.1-70b", **kw)
    assert doc == cli.json("plan", "--model", "llama-3.1-70b", "--gpu", "h100", "--gpus", "4",
                           "--weights", "fp8", "--kv", "fp8", "--spec-k", "4",
                           "--spec-accept", "0.7", "--draft", "llama-3.2-1b")
    assert doc["speculative"] == {"k": 4, "accept": 0.7, "draft": "llama-3.2-1b"}
    (script,) = ridgeline.plan("llama-3.1-70b", emit="vllm", **kw)["files"]
    line = next(l for l in script["contents"].splitlines() if "--speculative-config" in l)
    config = json.loads(line.split("--speculative-config ", 1)[1].rstrip(" \\").strip("'"))
    assert config["num_speculative_tokens"] == 4
    assert config["model"] == "meta-llama/Llama-3.2-1B-Instruct"


def test_explain_is_the_cli_text(cli):
    text = ridgeline.explain(model="llama-3-70b", gpu="h100", gpus=2, batch=32)
    r = cli.run("explain", "--model", "llama-3-70b", "--gpu", "h100", "--gpus", "2", "--batch", "32")
    assert r.returncode == 0
    assert r.stdout == (text if text.endswith("\n") else text + "\n")
    assert "bound" in text


def test_calibrate_equals_the_cli_json(cli, root):
    csv_path = root / "data" / "measurements" / "measurements.csv"
    c = ridgeline.calibrate(csv_path, engine="llama.cpp")
    assert c == cli.json("calibrate", "--measurements", csv_path, "--engine", "llama.cpp")


def test_hardware_and_models_equal_the_cli_json(cli):
    devices = ridgeline.hardware()
    assert devices == cli.json("hardware")
    assert {"h100-sxm", "a100-80gb-sxm", "l4", "mi300x"} <= {d["id"] for d in devices}
    h100 = ridgeline.hardware("h100")
    assert h100 == cli.json("hardware", "show", "h100")
    assert h100["memory"]["capacity_bytes"] == 80 * 2**30  # 80 GiB of HBM3
    models = ridgeline.models()
    assert models == cli.json("models")
    assert "llama-3-8b" in {m["id"] for m in models}
    assert ridgeline.instances() == cli.json("instances")


def test_charts_equal_the_cli_files(cli, tmp_path):
    base = ["--model", "llama-3-8b", "--gpu", "h100"]
    cases = [
        (ridgeline.roofline_svg(model="llama-3-8b", gpu=["h100", "l4"], batch=8),
         ["roofline", "--model", "llama-3-8b", "--gpu", "h100,l4", "--batch", "8", "--out"]),
        (ridgeline.throughput_svg(model="llama-3-8b", gpu="h100"),
         ["predict", *base, "--chart", "throughput", "--svg"]),
        (ridgeline.memory_svg(model="llama-3-8b", gpu="h100"),
         ["predict", *base, "--chart", "memory", "--svg"]),
        (ridgeline.train_svg(model="llama-3-8b", gpu="h100", gpus=8),
         ["train", *base, "--gpus", "8", "--svg"]),
        (ridgeline.serving_svg(model="llama-3-8b", gpu="h100", rate="1,4,16", requests=100),
         ["simulate", *base, "--rate", "1,4,16", "--requests", "100", "--svg"]),
    ]
    for i, (chart, words) in enumerate(cases):
        out = tmp_path / f"chart{i}.svg"
        r = cli.run(*words, out)
        assert r.returncode == 0, r.stderr
        assert isinstance(chart, ridgeline.Chart) and isinstance(chart, str)
        assert chart == out.read_text(), words
        assert chart.startswith("<svg") and chart._repr_svg_() == chart
    saved = tmp_path / "saved.svg"
    cases[0][0].save(saved)
    assert saved.read_text() == cases[0][0]


def test_html_reports_equal_the_cli_files(cli, tmp_path):
    base = ["--model", "llama-3-8b", "--gpu", "h100", "--batch", "8"]
    for command, fn in [("predict", ridgeline.predict), ("explain", ridgeline.explain)]:
        mine, theirs = tmp_path / f"{command}-py.html", tmp_path / f"{command}-cli.html"
        fn(model="llama-3-8b", gpu="h100", batch=8, html=mine)
        r = cli.run(command, *base, "--html", theirs)
        assert r.returncode == 0, r.stderr
        assert mine.read_text() == theirs.read_text()
    # a chart function returns its chart: a report file asked of it is refused, unwritten
    with pytest.raises(ridgeline.RidgelineError, match="--html"):
        ridgeline.memory_svg(model="llama-3-8b", gpu="h100", html=tmp_path / "no.html")
    assert not (tmp_path / "no.html").exists()


def _csv_columns(text):
    rows = list(csv.reader(io.StringIO(text)))
    return rows[0], rows[1:]


def _assert_columns_equal_csv(cols, text):
    header, rows = _csv_columns(text)
    assert list(cols) == header
    assert cols.rows == len(rows)
    for j, name in enumerate(header):
        column = cols[name]
        assert len(column) == len(rows), name
        cells = [r[j] for r in rows]
        if column.dtype == np.float64:
            want = np.array([float(c) if c else math.nan for c in cells])
            assert np.array_equal(column, want, equal_nan=True), name
        elif column.dtype == np.int64:
            assert column.tolist() == [int(c) for c in cells], name
        elif column.dtype == np.bool_:
            assert column.tolist() == [c == "true" for c in cells], name
        else:
            assert [v if v is not None else "" for v in column.tolist()] == cells, name


def test_sweep_columns_equal_the_cli_csv(cli):
    # 2 models x 2 devices x 3 counts x 7 batches x 3 prompts = 252 rows; 3 devices
    # divide neither model's heads, so some rows carry an error and NaN numbers
    cols = ridgeline.sweep(model=["llama-3-8b", "qwen3-8b"], gpu="h100,l4", gpus=[1, 2, 3],
                           batch="1..64:x2", prompt=[128, 1024, 8192])
    r = cli.run("sweep", "--model", "llama-3-8b,qwen3-8b", "--gpu", "h100,l4", "--gpus", "1,2,3",
                "--batch", "1..64:x2", "--prompt", "128,1024,8192")
    assert r.returncode == 0, r.stderr
    _assert_columns_equal_csv(cols, r.stdout)
    assert cols.rows == 252
    assert cols["gpus"].dtype == np.int64 and cols["fits"].dtype == np.bool_
    errors = cols["error"][cols["gpus"] == 3]
    assert all(e for e in errors) and not any(cols["error"][cols["gpus"] != 3])
    assert np.isnan(cols["ttft_s"][cols["gpus"] == 3]).all()


def test_rate_sweep_columns_equal_the_cli_json(cli):
    # 1 model x 2 devices x 2 rates = 4 simulated rows
    cols = ridgeline.sweep(model="llama-3-8b", gpu="h100,a100", rate=[2, 40], requests=80)
    r = cli.run("sweep", "--model", "llama-3-8b", "--gpu", "h100,a100", "--rate", "2,40",
                "--requests", "80", "--json")
    assert r.returncode == 0, r.stderr
    rows = json.loads(r.stdout)["rows"]
    assert cols.rows == 4 == len(rows)
    for i, row in enumerate(rows):
        for k, v in row.items():
            got = cols[k][i]
            if v is None:
                assert got is None or np.isnan(got), (k, i)
            else:
                assert got == v, (k, i, got, v)
    # rows in axis order, the rate last: h100 at 2 and 40, then a100; an A100 serving
    # Llama-3-8B saturates at 40 requests/s of 512 + 128 tokens, nothing does at 2
    assert list(cols["gpu"]) == ["h100-sxm", "h100-sxm", "a100-80gb-sxm", "a100-80gb-sxm"]
    assert list(cols["rate_per_s"]) == [2, 40, 2, 40]
    assert cols["saturated"][3] and not cols["saturated"][0] and not cols["saturated"][2]


def test_sweep_to_pandas(cli):
    pd = pytest.importorskip("pandas")
    cols = ridgeline.sweep(model="llama-3-8b", gpu=["h100", "a100"], batch="1..256:x2")
    df = cols.to_pandas()
    assert isinstance(df, pd.DataFrame)
    assert list(df.columns) == list(cols) and len(df) == 18  # 2 devices x 9 batches
    best = df[df.fits].sort_values("usd_per_million_tokens").iloc[0]
    assert best["usd_per_million_tokens"] == np.nanmin(cols["usd_per_million_tokens"][cols["fits"]])
    assert "18 configurations" in cols._repr_html_()


def test_a_sweep_of_100000_configurations(cli):
    # 2 devices x 5 counts x 100 batches x 100 prompts = 100,000 configurations
    kwargs = dict(model="llama-3-8b", gpu="h100,l4", gpus=[1, 2, 4, 8, 16],
                  batch="1..100", prompt="100..10000:+100")
    cols = ridgeline.sweep(**kwargs)
    assert cols.rows == 100_000
    r = cli.run("sweep", "--model", "llama-3-8b", "--gpu", "h100,l4", "--gpus", "1,2,4,8,16",
                "--batch", "1..100", "--prompt", "100..10000:+100")
    assert r.returncode == 0, r.stderr
    _assert_columns_equal_csv(cols, r.stdout)
    # row 12,345: gpu 0 (h100), gpus index 1 (2), batch index 23 (24), prompt index 45
    # (4600): 12,345 = 1 x 10,000 + 23 x 100 + 45
    assert (cols["gpu"][12_345], cols["gpus"][12_345]) == ("h100-sxm", 2)
    assert (cols["batch"][12_345], cols["prompt"][12_345]) == (24, 4600)
    p = ridgeline.predict(model="llama-3-8b", gpu="h100", gpus=2, batch=24, prompt=4600)
    assert cols["ttft_s"][12_345] == p["generation"]["ttft_s"]
    assert cols["total_bytes"][12_345] == p["memory"]["total_bytes"]


def test_a_sweep_releases_the_gil():
    # a Python thread keeps running while the sweep works: with the GIL held for the
    # whole call, no tick could land in the middle of it
    ticks = []
    stop = threading.Event()

    def tick():
        while not stop.is_set():
            ticks.append(time.perf_counter())
            time.sleep(0.001)

    t = threading.Thread(target=tick)
    t.start()
    try:
        start = time.perf_counter()
        ridgeline.sweep(model="llama-3-8b,qwen3-8b", gpu="h100,l4,a100", gpus="1,2,4,8",
                        batch="1..500", prompt="100..5000:+100")
        end = time.perf_counter()
    finally:
        stop.set()
        t.join()
    assert end - start > 0.05
    middle = [x for x in ticks if start + 0.25 * (end - start) < x < start + 0.75 * (end - start)]
    assert len(middle) > 3, (end - start, len(ticks))


def test_dicts_as_files_equal_the_cli_with_files(cli, root, tmp_path):
    # a model's config.json as a dict, a hardware file as a dict
    config = json.loads((root / "data" / "models" / "llama-3-8b.json").read_text())
    p = ridgeline.predict(model=config, gpu="h100", batch=4)
    q = cli.json("predict", "--model", root / "data" / "models" / "llama-3-8b.json",
                 "--gpu", "h100", "--batch", "4")
    assert p == q
    hw_text = (root / "data" / "hardware" / "a10.toml").read_text()
    hw_text = hw_text.replace('id = "a10"', 'id = "my-a10"')
    hw_text = hw_text.replace('aliases = ["a10-24gb"]', "aliases = []")
    hw_text = hw_text.replace('publication_names = ["a10"]', "publication_names = []")
    path = tmp_path / "my-a10.toml"
    path.write_text(hw_text)
    tomllib = pytest.importorskip("tomllib")
    as_dict = tomllib.loads(hw_text)
    p = ridgeline.predict(model="llama-3-8b", gpu="my-a10", hardware_file=as_dict)
    assert p["hardware"]["id"] == "my-a10"
    assert p == cli.json("predict", "--model", "llama-3-8b", "--gpu", "my-a10", "--hardware-file", path)
    # and as a path, in a list (the flag repeats)
    assert p == ridgeline.predict(model="llama-3-8b", gpu="my-a10", hardware_file=[path])


@pytest.mark.parametrize(
    "call, words",
    [
        (lambda: ridgeline.predict(model="llama-3-8b", gpu="h1000"),
         ["predict", "--model", "llama-3-8b", "--gpu", "h1000"]),
        (lambda: ridgeline.predict(model="lama-3-8b", gpu="h100"),
         ["predict", "--model", "lama-3-8b", "--gpu", "h100"]),
        (lambda: ridgeline.predict(model="llama-3-8b", gpu="h100", batch=0),
         ["predict", "--model", "llama-3-8b", "--gpu", "h100", "--batch", "0"]),
        (lambda: ridgeline.predict(model="llama-3-8b", gpu="h100", weights="fp7"),
         ["predict", "--model", "llama-3-8b", "--gpu", "h100", "--weights", "fp7"]),
        (lambda: ridgeline.predict(model="llama-3-8b", gpu="h100", batchh=3),
         ["predict", "--model", "llama-3-8b", "--gpu", "h100", "--batchh", "3"]),
        (lambda: ridgeline.predict(gpu="h100"), ["predict", "--gpu", "h100"]),
        (lambda: ridgeline.train(model="llama-3-8b", gpu="h100", zero=5),
         ["train", "--model", "llama-3-8b", "--gpu", "h100", "--zero", "5"]),
        (lambda: ridgeline.plan(model="llama-3-8b", gpu="h100", max_tpot_ms=-1),
         ["plan", "--model", "llama-3-8b", "--gpu", "h100", "--max-tpot-ms", "-1"]),
        (lambda: ridgeline.sweep(model="llama-3-8b", gpu="h100", batch="8..1"),
         ["sweep", "--model", "llama-3-8b", "--gpu", "h100", "--batch", "8..1"]),
        (lambda: ridgeline.simulate(model="llama-3-8b", gpu="h100", rate=1, prompt="normal:5"),
         ["simulate", "--model", "llama-3-8b", "--gpu", "h100", "--rate", "1", "--prompt", "normal:5"]),
        (lambda: ridgeline.hardware("h1000"), ["hardware", "show", "h1000"]),
        (lambda: ridgeline.roofline_svg(model="llama-3-8b", gpu="h100", gpus=0),
         ["roofline", "--model", "llama-3-8b", "--gpu", "h100", "--gpus", "0", "--out", "x.svg"]),
    ],
)
def test_bad_input_raises_the_cli_message(cli, call, words):
    with pytest.raises(ridgeline.RidgelineError) as e:
        call()
    assert isinstance(e.value, ValueError)
    assert str(e.value) == cli.error(*words)


def test_errors_name_a_dict_not_a_temporary_file():
    with pytest.raises(ridgeline.RidgelineError) as e:
        ridgeline.predict(model={"hidden_size": 64}, gpu="h100")
    assert str(e.value).startswith("<model dict>: missing field num_hidden_layers"), str(e.value)
    with pytest.raises(ridgeline.RidgelineError) as e:
        ridgeline.predict(model="llama-3-8b", gpu="x", hardware_file={"id": "x"})
    assert str(e.value).startswith("<hardware_file dict>: "), str(e.value)
    assert "missing field `name`" in str(e.value)


def test_sweep_refuses_text_output_flags():
    with pytest.raises(ridgeline.RidgelineError, match="--csv"):
        ridgeline.sweep(model="llama-3-8b", gpu="h100", csv=True)


def test_prediction_shows_a_table_in_a_notebook():
    p = ridgeline.predict(model="llama-3-8b", gpu="h100", batch=8)
    html = p._repr_html_()
    assert html.startswith("<table>") and "llama-3-8b on 1 x h100-sxm" in html
    # the tpot cell in ms, 4 significant digits
    assert f"{p['generation']['tpot_s'] * 1e3:.4g} ms" in html
    t = ridgeline.train(model="llama-3-8b", gpu="h100", gpus=8)
    assert "memory.total_bytes" in t._repr_html_()


def test_every_function_is_stubbed_with_real_options():
    stub = ast.parse((PKG / "__init__.pyi").read_text())
    functions = {f.name: f for f in stub.body if isinstance(f, ast.FunctionDef)}
    commands = {
        "predict": ["predict"], "explain": ["explain"], "train": ["train"], "plan": ["plan"],
        "simulate": ["simulate"], "calibrate": ["calibrate"], "sweep": ["sweep"],
        "roofline_svg": ["roofline"], "throughput_svg": ["predict"], "memory_svg": ["predict"],
        "hardware": ["hardware", "show"], "models": ["models"], "instances": ["instances"],
        "kernels": ["kernels"],
    }
    for name in ridgeline.__all__:
        obj = getattr(ridgeline, name)
        if callable(obj) and not isinstance(obj, type):
            assert name in functions, f"{name} has no stub"
            assert obj.__doc__, f"{name} has no docstring"
    for name, command in commands.items():
        f = functions[name]
        known = set(ridgeline.options(*command)) | {"id", "flash", "progress"}
        args = [a.arg for a in f.args.args + f.args.kwonlyargs]
        unknown = [a for a in args if a not in known]
        assert not unknown, (name, unknown)
        # and every option of the command but the text and file outputs is there
        missing = set(ridgeline.options(*command)) - set(args) - {
            "json", "svg", "out", "chart", "markdown", "csv", "save"}
        if name.endswith("_svg"):
            missing.discard("max")  # limits, not a chart
            missing.discard("html")  # a report file, refused by chart functions
            missing.discard("emit")  # launch files, refused by chart functions
        assert not missing, (name, missing)
    assert "max_tpot_ms" in ridgeline.plan.__doc__  # options listed with their help


def test_emit_gives_the_launch_files():
    # llama-3-8b on 2 devices, tensor parallel: vllm serve with tp 2
    doc = ridgeline.predict("llama-3-8b", "h100", gpus=2, emit="vllm")
    assert doc["emit"] == "vllm"
    (script,) = doc["files"]
    assert script["name"] == "vllm.sh"
    assert "--tensor-parallel-size 2" in script["contents"]
    doc = ridgeline.train("llama-3.1-8b", "h100", gpus=8, zero=3, emit="deepspeed")
    names = [f["name"] for f in doc["files"]]
    assert names == ["deepspeed.sh", "ds_config.json"]
    assert json.loads(doc["files"][1]["contents"])["zero_optimization"]["stage"] == 3
    with pytest.raises(ridgeline.RidgelineError, match="--emit"):
        ridgeline.plan("llama-3-8b", gpu="h100", emit="deepspeed")
    with pytest.raises(ridgeline.RidgelineError, match="--emit"):
        ridgeline.throughput_svg("llama-3-8b", "h100", emit="vllm")


def test_run_gives_the_cli_text(cli):
    words = ["predict", "--model", "llama-3-8b", "--gpu", "h100"]
    out = ridgeline.run(*words)
    assert cli.run(*words).stdout == (out if out.endswith("\n") else out + "\n")


def test_the_readme_script_runs(root, capsys):
    # the README's ten-line capacity plan, as printed there
    import re

    text = (root / "README.md").read_text()
    script = re.search(r"## Python\n.*?```python\n(.*?)```", text, re.S).group(1)
    assert len(script.strip().splitlines()) <= 10
    pytest.importorskip("pandas")
    exec(compile(script, "README.md", "exec"), {})
    out = capsys.readouterr().out
    assert "usd_per_million_tokens" in out and "bound" in out


def test_the_example_runs(root, capsys):
    import runpy

    runpy.run_path(str(root / "python" / "examples" / "capacity_plan.py"), run_name="__main__")
    out = capsys.readouterr().out
    assert "configurations" in out and "per million tokens" in out
    assert "error: invalid --gpu: unknown hardware id 'h1000'" in out


def test_progress_is_reported_and_a_raising_callback_stops_the_work():
    seen = []
    doc = ridgeline.simulate(
        "llama-3-8b", "h100", requests=20_000, rate="1..5",
        progress=lambda done, total, stage: seen.append((done, total, stage)),
    )
    assert len(doc["rows"]) == 5
    # 20000 requests x 5 rates, reported in simulated requests as they complete
    assert seen, "no progress reported"
    assert all(t == 100_000 and s == "simulate" and 0 <= d <= t for d, t, s in seen)
    assert [d for d, _, _ in seen] == sorted(d for d, _, _ in seen)

    class Stop(Exception):
        pass

    def stop(done, total, stage):
        raise Stop(stage)

    import time
    t = time.monotonic()
    with pytest.raises(Stop):
        # 1e6 requests x 30 rates: far longer than a moment
        ridgeline.simulate("llama-3-8b", "h100", requests=1_000_000, rate="1..30", progress=stop)
    assert time.monotonic() - t < 10
    with pytest.raises(ridgeline.RidgelineError, match="progress"):
        ridgeline.predict("llama-3-8b", "h100", progress=3)


def test_ctrl_c_raises_keyboard_interrupt_and_stops_the_work():
    import os
    import signal
    import threading
    import time

    # Python's own Ctrl-C handler, whatever this process was started with (a shell
    # starts background jobs with SIGINT ignored, and Python then installs none)
    previous = signal.signal(signal.SIGINT, signal.default_int_handler)
    # SIGINT to this process after a moment, as Ctrl-C sends
    timer = threading.Timer(0.5, lambda: os.kill(os.getpid(), signal.SIGINT))
    timer.start()
    t = time.monotonic()
    try:
        with pytest.raises(KeyboardInterrupt):
            ridgeline.simulate("llama-3-8b", "h100", requests=1_000_000, rate="1..30")
        assert time.monotonic() - t < 10
    finally:
        timer.cancel()
        signal.signal(signal.SIGINT, previous)


def test_plan_takes_an_expert_imbalance(cli):
    # Qwen3-30B-A3B on 1, 2 or 4 H100 with the busiest expert group at 3x the mean: the
    # CLI's plan, and the two layouts of two expert groups cannot hold it (not searched)
    kw = dict(gpu="h100", gpus=[1, 2, 4], weights="bf16", kv="bf16", max_tpot_ms=30)
    words = ["--model", "qwen3-30b-a3b", "--gpu", "h100", "--gpus", "1,2,4", "--weights",
             "bf16", "--kv", "bf16", "--max-tpot-ms", "30"]
    doc = ridgeline.plan("qwen3-30b-a3b", expert_imbalance=3, **kw)
    assert doc == cli.json("plan", *words, "--expert-imbalance", "3")
    assert doc["expert_imbalance"] == 3.0 and doc["skipped_layouts"] == 2
    assert ridgeline.plan("qwen3-30b-a3b", **kw)["skipped_layouts"] == 0
