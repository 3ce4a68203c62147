"""Result types: dicts and strings that display themselves in a notebook.

A prediction is a ``dict`` (the CLI's JSON) whose ``_repr_html_`` is a small table of
the headline numbers; a chart is a ``str`` (SVG text) whose ``_repr_svg_`` draws it;
a sweep is a ``dict`` of NumPy columns with ``to_pandas()``.
"""

from __future__ import annotations

import html
import os
from typing import Any, Dict, List, Tuple

GB = 1e9  # decimal gigabytes: memory is shown in GB (1e9 bytes), as the CLI's text


def _cell(value: Any) -> str:
    if isinstance(value, bool) or value is None:
        return {True: "yes", False: "no", None: "&ndash;"}[value]
    if isinstance(value, float):
        return f"{value:.4g}"
    if isinstance(value, (list, tuple)):
        return f"[{len(value)} items]"
    return html.escape(str(value))


def _table(title: str, rows: List[Tuple[str, str]]) -> str:
    body = "".join(
        f"<tr><th style='text-align:left'>{html.escape(k)}</th>"
        f"<td style='text-align:right'>{v}</td></tr>"
        for k, v in rows
    )
    return f"<table><caption>{html.escape(title)}</caption>{body}</table>"


class Report(dict):
    """A command's JSON document as a ``dict`` (exactly the keys of the CLI's
    ``--json``); in a notebook, a table of its numbers and words, two levels deep."""

    def _repr_html_(self) -> str:
        rows: List[Tuple[str, str]] = []
        for key, value in self.items():
            if isinstance(value, dict):
                for k, v in value.items():
                    if not isinstance(v, (dict, list)):
                        rows.append((f"{key}.{k}", _cell(v)))
            else:
                rows.append((key, _cell(value)))
        return _table("ridgeline", rows)


class Prediction(Report):
    """``predict``'s JSON document as a ``dict``; in a notebook, a small table: memory
    per device against capacity, time to first token, time per output token and
    tokens per second, and what bounds each phase."""

    def _repr_html_(self) -> str:
        try:
            m, hw, c = self["model"], self["hardware"], self["config"]
            mem, g = self["memory"], self["generation"]
            pre, dec = self["prefill"], self["decode"]
        except (KeyError, TypeError):
            return super()._repr_html_()
        ms = lambda s: f"{s * 1e3:.4g} ms"  # noqa: E731
        title = (
            f"{m['id']} on {hw['count']} x {hw['id']}: batch {c['batch']}, "
            f"prompt {c['prompt']}, gen {c['gen']}, {c['weights']} weights, "
            f"engine {c['engine']}"
        )
        rows = [
            (
                "memory per device",
                f"{mem['total_bytes'] / GB:.4g} of {mem['capacity_bytes'] / GB:.4g} GB"
                f" ({'fits' if mem['fits'] else 'does not fit'})",
            ),
            ("time to first token", f"{ms(g['ttft_s'])} ({pre['bound']}-bound prefill)"),
            ("time per output token", f"{ms(g['tpot_s'])} ({dec['bound']}-bound decode)"),
            ("decode tokens/s", f"{g['decode_tokens_per_s']:.4g}"),
            ("output tokens/s", f"{g['output_tokens_per_s']:.4g}"),
            ("prefill tokens/s", f"{pre['tokens_per_s']:.4g}"),
        ]
        return _table(title, rows)


class Chart(str):
    """A chart as SVG text (a ``str``); a notebook draws it, ``save`` writes it."""

    def _repr_svg_(self) -> str:
        return str(self)

    def save(self, path: "str | os.PathLike[str]") -> None:
        """Writes the SVG to ``path``."""
        with open(path, "w", encoding="utf-8") as f:
            f.write(self)


class SweepColumns(dict):
    """A sweep's rows as columns: a ``dict`` from the CSV's column names to NumPy
    arrays of equal length (``float64`` quantities with ``NaN`` for missing values,
    ``int64`` counts, ``bool`` flags, ``object`` arrays of ``str`` for words, with
    ``None`` for missing ones). ``rows`` is the number of configurations."""

    rows: int

    def __init__(self, rows: int, columns: Dict[str, Any]):
        super().__init__(columns)
        self.rows = rows

    def to_pandas(self) -> Any:
        """The columns as a ``pandas.DataFrame`` (pandas must be installed)."""
        try:
            import pandas
        except ImportError as e:  # pragma: no cover - depends on the environment
            raise ImportError("to_pandas() needs pandas: pip install pandas") from e
        return pandas.DataFrame(dict(self), copy=False)

    def _repr_html_(self) -> str:
        names = ", ".join(html.escape(k) for k in self)
        return f"<p>sweep: {self.rows} configurations; columns {names}</p>"
