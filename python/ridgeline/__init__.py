"""ridgeline: will it fit, and how fast will it run? LLM rooflines from Python.

Every function runs the ``ridgeline`` command of the same name inside this process
(no subprocess) and returns what its ``--json`` prints, as Python objects::

    import ridgeline
    p = ridgeline.predict(model="llama-3-8b", gpu="h100", batch=8)
    p["generation"]["tpot_s"], p["memory"]["fits"]

Keyword arguments are the command's flags with ``_`` for ``-`` (``max_tpot_ms=50``
for ``--max-tpot-ms 50``). Lists and ranges are Python lists (``gpus=[1, 2, 4]``) or
the CLI's LIST text (``batch="1..64:x2"``); ``True`` gives a switch (``train=True``
for ``--train``), ``False`` its ``--no-`` form where the command has one
(``flash=False``) or nothing, ``None`` nothing. Files are paths; a hardware, engine
or instances file, or a model's ``config.json``, may also be a ``dict``.

Bad input raises :class:`RidgelineError` (a ``ValueError``) with the command line's
message, which names the flag (``invalid --batch: ...``).

Ctrl-C during a long call (a big sweep, a simulation, a plan, a calibration) raises
``KeyboardInterrupt`` within a moment: the work stops at its next check. Every
function takes ``progress=``, a callable given ``(done, total, stage)`` as long work
advances (from the calling thread, with the GIL), which fits a tqdm bar::

    from tqdm import tqdm
    bar = tqdm()
    def show(done, total, stage):
        bar.set_description(stage); bar.total = total; bar.n = done; bar.refresh()
    ridgeline.sweep("llama-3-8b", "h100", batch="1..4096", prompt="1..4096", progress=show)

An exception the callable raises stops the work and is raised in its place.
"""

from __future__ import annotations

import json
import os
import re
import shutil
import tempfile
from typing import Any, Dict, List, Optional, Sequence, Tuple

from . import _ridgeline as _core
from ._display import Chart, Prediction, Report, SweepColumns
from ._ridgeline import RidgelineError, __version__

__all__ = [
    "RidgelineError",
    "Chart",
    "Prediction",
    "Report",
    "SweepColumns",
    "predict",
    "explain",
    "train",
    "plan",
    "simulate",
    "sweep",
    "calibrate",
    "hardware",
    "models",
    "instances",
    "kernels",
    "roofline_svg",
    "throughput_svg",
    "memory_svg",
    "train_svg",
    "serving_svg",
    "cost_time_svg",
    "options",
    "run",
    "__version__",
]

# options whose value may be a dict: written to a temporary file of this kind
_DICT_FILES = {
    "model": "json",
    "draft": "json",
    "hardware-file": "toml",
    "engine-file": "toml",
    "instances-file": "toml",
}

_OPTIONS: Dict[Tuple[str, ...], Dict[str, Tuple[bool, bool, bool, str]]] = {}


def options(*command: str) -> Dict[str, Tuple[bool, bool, bool, str]]:
    """The options of a command (``options("plan")``, ``options("hardware", "show")``),
    global ones included: ``{flag: (takes_value, repeated, required, help)}`` with
    flags as keyword names (``max_tpot_ms``)."""
    key = tuple(command)
    if key not in _OPTIONS:
        _OPTIONS[key] = {
            name.replace("-", "_"): (takes, repeated, required, help_)
            for name, takes, repeated, required, help_ in _core.options(list(command))
        }
    return _OPTIONS[key]


class _Words:
    """Builds a command's words from keyword arguments; holds the temporary files
    written for dicts until the command has run."""

    def __init__(self, command: Sequence[str]):
        self.command = list(command)
        self.words: List[str] = list(command)
        self._tmp: Optional[str] = None
        self._labels: Dict[str, str] = {}

    def __enter__(self) -> "_Words":
        return self

    def __exit__(self, *exc: Any) -> None:
        if self._tmp is not None:
            shutil.rmtree(self._tmp, ignore_errors=True)

    def _dict_file(self, flag: str, value: Dict[str, Any], n: int) -> str:
        if self._tmp is None:
            self._tmp = tempfile.mkdtemp(prefix="ridgeline-")
        if _DICT_FILES[flag] == "json":
            # a model is named after its folder, as a downloaded checkpoint is
            name = str(value.get("_name_or_path") or "custom").rstrip("/").split("/")[-1]
            name = re.sub(r"[^A-Za-z0-9._-]", "-", name) or "custom"
            folder = os.path.join(self._tmp, f"{n}", name)
            os.makedirs(folder)
            path = os.path.join(folder, "config.json")
            text = json.dumps(value)
        else:
            path = os.path.join(self._tmp, f"{flag}-{n}.toml")
            text = _core.toml_from_json(json.dumps(value))
        with open(path, "w", encoding="utf-8") as f:
            f.write(text)
        self._labels[path] = f"<{flag.replace('-', '_')} dict>"
        return path

    def _text(self, flag: str, value: Any, n: int) -> str:
        if isinstance(value, dict) and flag in _DICT_FILES:
            return self._dict_file(flag, value, n)
        if isinstance(value, dict):
            raise RidgelineError(f"invalid --{flag}: takes a value or a list, not a dict")
        if isinstance(value, bool):
            return str(value).lower()
        if isinstance(value, os.PathLike):
            return os.fspath(value)
        if isinstance(value, (str, bytes)):
            return value.decode() if isinstance(value, bytes) else value
        try:
            items = list(value)
        except TypeError:
            return str(value)
        return ",".join(self._text(flag, v, n) for v in items)

    def add(self, key: str, value: Any) -> None:
        """Adds one keyword argument as the CLI's words."""
        if value is None:
            return
        flag = key.replace("_", "-")
        known = options(*self.command)
        spec = known.get(key)
        if spec is None and isinstance(value, bool) and f"no_{key}" in known:
            # flash=False where the command only has --no-flash; True is its default
            if not value:
                self.words.append(f"--no-{flag}")
            return
        if spec is not None and not spec[0]:  # a switch
            if value:
                self.words.append(f"--{flag}")
            elif f"no_{key}" in known:
                self.words.append(f"--no-{flag}")
            return
        repeated = spec is not None and spec[1]
        is_list = not isinstance(value, (str, bytes, dict, os.PathLike)) and hasattr(
            value, "__iter__"
        )
        values = list(value) if repeated and is_list else [value]
        for n, v in enumerate(values):
            if v is True and spec is None:
                self.words.append(f"--{flag}")  # unknown switch: the CLI names it
            else:
                self.words += [f"--{flag}", self._text(flag, v, n)]

    def message(self, e: Exception) -> str:
        """The error's message with temporary file names replaced by what they held."""
        text = str(e)
        for path, label in self._labels.items():
            text = text.replace(os.path.dirname(path) + os.sep + "config.json", label)
            text = text.replace(path, label).replace(os.path.dirname(path), label)
        return text


def _call(fn: Any, command: Sequence[str], kwargs: Dict[str, Any], fixed: Sequence[str] = ()) -> Any:
    kwargs.pop("json", None)
    progress = kwargs.pop("progress", None)
    if progress is not None and not callable(progress):
        raise RidgelineError("invalid progress: takes a callable (done, total, stage)")
    with _Words(command) as w:
        for key, value in kwargs.items():
            w.add(key, value)
        w.words += list(fixed)
        try:
            return fn(w.words, progress)
        except RidgelineError as e:
            raise RidgelineError(w.message(e)) from None


def _json(command: Sequence[str], kwargs: Dict[str, Any]) -> Any:
    return json.loads(_call(_core.run, command, kwargs, ["--json"]))


def _report(command: Sequence[str], kwargs: Dict[str, Any], cls: type = Report) -> Any:
    doc = _json(command, kwargs)
    return cls(doc) if isinstance(doc, dict) else doc


def run(*words: str, progress: Any = None) -> str:
    """Runs a command line's words (``run("predict", "--model", "llama-3-8b",
    "--gpu", "h100")``) and returns what the CLI prints on stdout; ``progress`` as for
    every function."""
    try:
        return _core.run([str(w) for w in words], progress)
    except RidgelineError as e:
        raise RidgelineError(str(e)) from None


def predict(model: Any = None, gpu: Any = None, **options: Any) -> Prediction:
    """Memory, time to first token, time per output token and tokens/s of one
    configuration: ``ridgeline predict --json`` as a :class:`Prediction` (a dict).
    With ``max=True``, the planning limits instead (largest batch, longest context);
    with ``emit="vllm"`` (or another launch format) the launch files
    (``{"emit", "version", "files": [{"name", "contents"}]}``)."""
    cls = Report if options.get("max") or options.get("emit") else Prediction
    return _report(["predict"], dict(model=model, gpu=gpu, **options), cls)


def explain(model: Any = None, gpu: Any = None, **options: Any) -> str:
    """The plain-language report of ``ridgeline explain``: what binds, why, and what
    would help, as text."""
    return _call(_core.run, ["explain"], dict(model=model, gpu=gpu, **options))


def train(model: Any = None, gpu: Any = None, **options: Any) -> Report:
    """Training memory per device and step time (ZeRO, 3D parallelism, LoRA/QLoRA):
    ``ridgeline train --json``."""
    return _report(["train"], dict(model=model, gpu=gpu, **options))


def plan(model: Any = None, **options: Any) -> Report:
    """The cheapest configuration meeting latency and throughput targets, and the
    Pareto front (``ridgeline plan --json``); with ``rate=`` the replicas serving a
    request rate; with ``train=True, tokens=...`` the cheapest and fastest way to
    train."""
    return _report(["plan"], dict(model=model, **options))


def simulate(model: Any = None, gpu: Any = None, **options: Any) -> Report:
    """Serving at a request rate, continuous batching simulated iteration by
    iteration: ``ridgeline simulate --json`` (one rate, or ``{"rows": [...]}`` for
    several)."""
    return _report(["simulate"], dict(model=model, gpu=gpu, **options))


def calibrate(measurements: Any = None, **options: Any) -> Report:
    """Engine efficiency factors fitted to published measurements (a CSV path), with
    their errors: ``ridgeline calibrate --json``; ``train=True`` fits the training
    factors; ``report=True`` gives the errors against the pure roofline and a flat
    bandwidth factor, and the rows held out worst (``worst=N``)."""
    return _report(["calibrate"], dict(measurements=measurements, **options))


def hardware(id: Optional[str] = None, **options: Any) -> Any:
    """Every device (a list of dicts), or with ``id`` one device with its sources:
    ``ridgeline hardware [show ID] --json``."""
    if id is None:
        return _json(["hardware"], options)
    text = _call(_core.run, ["hardware", "show"], options, [str(id), "--json"])
    return Report(json.loads(text))


def models(**options: Any) -> List[Dict[str, Any]]:
    """The bundled models with parameter counts: ``ridgeline models --json``."""
    return _json(["models"], options)


def instances(**options: Any) -> List[Dict[str, Any]]:
    """Cloud instance shapes with prices and sources: ``ridgeline instances --json``."""
    return _json(["instances"], options)


def kernels(**options: Any) -> Dict[str, Any]:
    """Coverage of the measured kernel tables: ``ridgeline kernels --json``."""
    return _json(["kernels"], options)


def _chart(command: Sequence[str], kwargs: Dict[str, Any], fixed: Sequence[str] = ()) -> Chart:
    kwargs.pop("svg", None)
    if kwargs.get("emit") is not None:
        raise RidgelineError(
            "invalid --emit: a chart function returns its chart; "
            "predict(emit=...), simulate, train and plan give the launch files"
        )
    if kwargs.get("html") is not None:
        raise RidgelineError(
            "invalid --html: a chart function returns its chart; "
            "predict(html=FILE) and explain(html=FILE) write the HTML report"
        )
    return Chart(_call(_core.chart, command, kwargs, fixed))


def roofline_svg(model: Any = None, gpu: Any = None, **options: Any) -> Chart:
    """The roofline chart of the model's ops on one or more devices (``gpu`` may be a
    list): what ``ridgeline roofline --out FILE.svg`` writes, as SVG text."""
    return _chart(["roofline"], dict(model=model, gpu=gpu, **options))


def throughput_svg(model: Any = None, gpu: Any = None, **options: Any) -> Chart:
    """Decode throughput and latency against batch: ``ridgeline predict --svg FILE
    --chart throughput``, as SVG text."""
    return _chart(["predict"], dict(model=model, gpu=gpu, **options), ["--chart", "throughput"])


def memory_svg(model: Any = None, gpu: Any = None, **options: Any) -> Chart:
    """Memory per device by weight format: ``ridgeline predict --svg FILE --chart
    memory``, as SVG text."""
    return _chart(["predict"], dict(model=model, gpu=gpu, **options), ["--chart", "memory"])


def train_svg(model: Any = None, gpu: Any = None, **options: Any) -> Chart:
    """Training memory per device at ZeRO stages 0-3: ``ridgeline train --svg``, as
    SVG text."""
    return _chart(["train"], dict(model=model, gpu=gpu, **options))


def serving_svg(model: Any = None, gpu: Any = None, **options: Any) -> Chart:
    """Latency percentiles against request rate with the knee (several rates), or the
    batch and KV cache over time (one): ``ridgeline simulate --svg``, as SVG text."""
    return _chart(["simulate"], dict(model=model, gpu=gpu, **options))


def cost_time_svg(model: Any = None, **options: Any) -> Chart:
    """A training plan's cost against time (the Pareto front, one marker per method):
    ``ridgeline plan --train --svg``, as SVG text."""
    options.pop("train", None)
    return _chart(["plan"], dict(model=model, **options), ["--train"])


def sweep(model: Any = None, gpu: Any = None, **options: Any) -> SweepColumns:
    """Every combination of the lists, evaluated in parallel on all cores with the GIL
    released: the columns of ``ridgeline sweep``'s CSV as NumPy arrays (see
    :class:`SweepColumns`; ``.to_pandas()`` for a DataFrame). Row ``i`` of every
    column is row ``i`` of the CSV."""
    import numpy as np

    if options.get("rate") is not None:
        # serving simulated per row: ``sweep --rate --json``'s rows as columns
        doc = _json(["sweep"], dict(model=model, gpu=gpu, **options))
        keys = list(doc["rows"][0].keys()) if doc["rows"] else []
        cols: Dict[str, Any] = {}
        for k in keys:
            vals = [r[k] for r in doc["rows"]]
            if any(isinstance(v, str) for v in vals):
                arr = np.empty(len(vals), dtype=object)
                arr[:] = vals
                cols[k] = arr
            else:
                cols[k] = np.array([np.nan if v is None else v for v in vals], dtype=np.float64)
        return SweepColumns(len(doc["rows"]), cols)
    rows, raw = _call(_core.sweep_columns, ["sweep"], dict(model=model, gpu=gpu, **options))
    dtypes = {"number": np.float64, "count": np.int64, "flag": np.bool_}
    columns: Dict[str, Any] = {}
    for name, kind, data in raw:
        if kind == "text":
            labels, codes = data
            table = np.empty(len(labels), dtype=object)
            table[:] = labels
            columns[name] = table[np.frombuffer(codes, dtype=np.uint32)]
        else:
            columns[name] = np.frombuffer(data, dtype=dtypes[kind])
    return SweepColumns(rows, columns)


def _document() -> None:
    """Appends each function's options, with the CLI's help lines, to its docstring."""
    for fn, command in [
        (predict, ["predict"]),
        (explain, ["explain"]),
        (train, ["train"]),
        (plan, ["plan"]),
        (simulate, ["simulate"]),
        (calibrate, ["calibrate"]),
        (sweep, ["sweep"]),
        (roofline_svg, ["roofline"]),
        (throughput_svg, ["predict"]),
        (memory_svg, ["predict"]),
        (train_svg, ["train"]),
        (serving_svg, ["simulate"]),
        (cost_time_svg, ["plan"]),
        (hardware, ["hardware", "show"]),
        (models, ["models"]),
        (instances, ["instances"]),
    ]:
        lines = [
            f"    {name}: {help_}" if help_ else f"    {name}"
            for name, (_, _, _, help_) in options(*command).items()
            if name not in ("json", "svg", "out", "chart")
            and not (name == "html" and fn.__name__.endswith("_svg"))
        ]
        fn.__doc__ = (fn.__doc__ or "") + "\n\n    Options (keyword arguments):\n" + "\n".join(lines)


_document()
