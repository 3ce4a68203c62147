"""Capacity planning from Python, notebook style (each `# %%` is a cell; run it as a
script with `python python/examples/capacity_plan.py`, or open it in Jupyter/VS Code).

The question: serve Llama 3 70B with prompts of 1,024 tokens and answers of 256 at a
mean time per output token under 50 ms. Which devices, how many, what batch, and what
does a million output tokens cost?
"""

# %% One configuration: does it fit, how fast is it?
import ridgeline

p = ridgeline.predict(model="llama-3-70b", gpu="h100", gpus=2, batch=16, prompt=1024, gen=256)
mem = p["memory"]
print(
    f"{mem['total_bytes'] / 1e9:.1f} of {mem['capacity_bytes'] / 1e9:.1f} GB per device, "
    f"fits: {mem['fits']}; TTFT {p['generation']['ttft_s'] * 1e3:.0f} ms, "
    f"TPOT {p['generation']['tpot_s'] * 1e3:.1f} ms ({p['decode']['bound']}-bound decode)"
)
p  # in a notebook: a table of the headline numbers

# %% Why: the plain-language report and the roofline chart
print(ridgeline.explain(model="llama-3-70b", gpu="h100", gpus=2, batch=16))
chart = ridgeline.roofline_svg(model="llama-3-70b", gpu=["h100", "a100", "mi300x"], gpus=2, batch=16)
chart  # in a notebook the chart draws itself; chart.save("roofline.svg") writes it

# %% Every combination: NumPy columns, one row per configuration (the CLI's CSV)
cols = ridgeline.sweep(
    model="llama-3-70b",
    gpu=["h100", "a100", "l40s", "mi300x"],
    gpus=[1, 2, 4, 8],
    batch="1..256:x2",
    prompt=1024,
    gen=256,
    weights=["native", "fp8", "awq-int4"],
)
ok = cols["fits"] & (cols["tpot_s"] < 0.050)
print(f"{cols.rows} configurations, {ok.sum()} fit and meet 50 ms per token")

# %% The cheapest per million output tokens, with pandas when it is installed
try:
    df = cols.to_pandas()
    best = df[ok].sort_values("usd_per_million_tokens").head(5)
    print(best[["gpu", "gpus", "batch", "weights", "tpot_s", "usd_per_million_tokens"]])
except ImportError:
    import numpy as np

    usd = np.where(ok, cols["usd_per_million_tokens"], np.inf)
    i = int(np.argmin(usd))
    print(cols["gpu"][i], cols["gpus"][i], cols["batch"][i], cols["weights"][i], usd[i])

# %% Or let the planner search (latency targets, Pareto front of cost and speed)
plan = ridgeline.plan(model="llama-3-70b", prompt=1024, gen=256, max_tpot_ms=50, max_ttft_ms=2000)
b = plan["best"]
print(f"plan: {b['gpus']} x {b['gpu']}, batch {b['batch']}, {b['weights']} weights: "
      f"${b['usd_per_million_tokens']:.2f} per million tokens "
      f"({plan['feasible']} of {plan['evaluated']} configurations feasible)")

# %% Bad input raises RidgelineError (a ValueError) with the CLI's message
try:
    ridgeline.predict(model="llama-3-70b", gpu="h1000")
except ridgeline.RidgelineError as e:
    print("error:", e)
