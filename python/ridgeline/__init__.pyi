"""Type stubs of the ``ridgeline`` package: every function with the keyword arguments
its command takes (the CLI's flags with ``_`` for ``-``). Each returns what the
command's ``--json`` prints; see ``docs/python.md`` in the repository."""

import os
from typing import Any, Callable, Dict, List, Optional, Sequence, Tuple, Union

import numpy.typing as npt

__version__: str

Scalar = Union[str, int, float]
#: One value, a Python list of values, or the CLI's LIST text (``"1..64:x2"``).
ListArg = Union[Scalar, Sequence[Scalar]]
#: A path, or for a hardware, engine or instances file the file's content as a dict.
FileArg = Union[str, "os.PathLike[str]", Dict[str, Any]]
#: One file or several (options that may repeat).
FilesArg = Union[FileArg, Sequence[FileArg]]
#: A model id, or a Hugging Face ``config.json`` as a path (file or folder) or a dict.
ModelArg = Union[str, "os.PathLike[str]", Dict[str, Any]]
#: Called with ``(done, total, stage)`` as long work advances (a tqdm bar's update).
Progress = Callable[[int, int, str], object]

class RidgelineError(ValueError):
    """Bad input: the message is the command line's, naming the flag."""

class Report(Dict[str, Any]):
    """A command's JSON document as a ``dict``; a table in a notebook."""

    def _repr_html_(self) -> str: ...

class Prediction(Report):
    """``predict``'s JSON document; a small table of the headline numbers in a notebook."""

    def _repr_html_(self) -> str: ...

class Chart(str):
    """A chart as SVG text; a notebook draws it."""

    def _repr_svg_(self) -> str: ...
    def save(self, path: Union[str, "os.PathLike[str]"]) -> None:
        """Writes the SVG to ``path``."""

class SweepColumns(Dict[str, npt.NDArray[Any]]):
    """The sweep CSV's columns as NumPy arrays of ``rows`` values each."""

    rows: int
    def __init__(self, rows: int, columns: Dict[str, Any]) -> None: ...
    def to_pandas(self) -> Any:
        """The columns as a ``pandas.DataFrame`` (pandas must be installed)."""
    def _repr_html_(self) -> str: ...

def options(*command: str) -> Dict[str, Tuple[bool, bool, bool, str]]:
    """``{keyword: (takes_value, repeated, required, help)}`` of a command."""

def run(*words: str, progress: Optional[Progress] = None) -> str:
    """Runs a command line's words and returns what the CLI prints on stdout."""

def predict(
    model: ModelArg,
    gpu: str,
    *,
    gpus: Optional[int] = None,
    parallel: Optional[str] = None,
    batch: Optional[int] = None,
    prompt: Optional[int] = None,
    gen: Optional[int] = None,
    weights: Optional[str] = None,
    expert_weights: Optional[str] = None,
    kv: Optional[str] = None,
    engine: Optional[str] = None,
    flash: Optional[bool] = None,
    no_flash: Optional[bool] = None,
    offload: Optional[str] = None,
    ep: Optional[int] = None,
    spec_k: Optional[int] = None,
    inter_node_bw: Optional[float] = None,
    overlap_ep: Optional[bool] = None,
    expert_imbalance: Optional[float] = None,
    spec_accept: Optional[float] = None,
    draft: Optional[ModelArg] = None,
    kernels: Optional[Union[str, "os.PathLike[str]"]] = None,
    max: Optional[bool] = None,
    html: Optional[Union[str, "os.PathLike[str]"]] = None,
    emit: Optional[str] = None,
    hardware_file: Optional[FilesArg] = None,
    engine_file: Optional[FilesArg] = None,
    instances_file: Optional[FilesArg] = None,
    price_file: Optional[FilesArg] = None,
    provider: Optional[str] = None,
    quiet: Optional[bool] = None,
    progress: Optional[Progress] = None,
) -> Prediction:
    """Memory, time to first token, time per output token and tokens/s of one
    configuration: ``ridgeline predict --json``; with ``max=True`` the planning
    limits (largest batch, longest context)."""

def explain(
    model: ModelArg,
    gpu: str,
    *,
    gpus: Optional[int] = None,
    parallel: Optional[str] = None,
    batch: Optional[int] = None,
    prompt: Optional[int] = None,
    gen: Optional[int] = None,
    weights: Optional[str] = None,
    expert_weights: Optional[str] = None,
    kv: Optional[str] = None,
    engine: Optional[str] = None,
    flash: Optional[bool] = None,
    no_flash: Optional[bool] = None,
    offload: Optional[str] = None,
    ep: Optional[int] = None,
    spec_k: Optional[int] = None,
    inter_node_bw: Optional[float] = None,
    overlap_ep: Optional[bool] = None,
    expert_imbalance: Optional[float] = None,
    spec_accept: Optional[float] = None,
    draft: Optional[ModelArg] = None,
    kernels: Optional[Union[str, "os.PathLike[str]"]] = None,
    html: Optional[Union[str, "os.PathLike[str]"]] = None,
    hardware_file: Optional[FilesArg] = None,
    engine_file: Optional[FilesArg] = None,
    instances_file: Optional[FilesArg] = None,
    price_file: Optional[FilesArg] = None,
    provider: Optional[str] = None,
    quiet: Optional[bool] = None,
    progress: Optional[Progress] = None,
) -> str:
    """What binds, why, and what would help: ``ridgeline explain``'s text."""

def train(
    model: ModelArg,
    gpu: Optional[str] = None,
    *,
    instance: Optional[str] = None,
    gpus: Optional[int] = None,
    tp: Optional[int] = None,
    pp: Optional[int] = None,
    cp: Optional[int] = None,
    ep: Optional[int] = None,
    zero: Optional[int] = None,
    micro_batch: Optional[int] = None,
    global_batch: Optional[int] = None,
    seq: Optional[int] = None,
    method: Optional[str] = None,
    lora_rank: Optional[int] = None,
    lora_targets: Optional[str] = None,
    recompute: Optional[str] = None,
    precision: Optional[str] = None,
    optimizer: Optional[str] = None,
    offload: Optional[str] = None,
    virtual_stages: Optional[int] = None,
    inter_node_bw: Optional[float] = None,
    mtp: Optional[int] = None,
    overlap_ep: Optional[bool] = None,
    expert_imbalance: Optional[float] = None,
    no_flash: Optional[bool] = None,
    no_sequence_parallel: Optional[bool] = None,
    compile: Optional[bool] = None,
    stack: Optional[str] = None,
    loss: Optional[str] = None,
    optimizer_in_backward: Optional[bool] = None,
    emit: Optional[str] = None,
    hardware_file: Optional[FilesArg] = None,
    engine_file: Optional[FilesArg] = None,
    instances_file: Optional[FilesArg] = None,
    price_file: Optional[FilesArg] = None,
    provider: Optional[str] = None,
    quiet: Optional[bool] = None,
    progress: Optional[Progress] = None,
) -> Report:
    """Training memory per device and step time: ``ridgeline train --json``."""

def plan(
    model: ModelArg,
    *,
    gpu: Optional[ListArg] = None,
    gpus: Optional[ListArg] = None,
    prompt: Optional[int] = None,
    gen: Optional[int] = None,
    max_ttft_ms: Optional[float] = None,
    max_tpot_ms: Optional[float] = None,
    min_throughput: Optional[float] = None,
    budget_usd_per_hour: Optional[float] = None,
    weights: Optional[ListArg] = None,
    expert_weights: Optional[str] = None,
    kv: Optional[ListArg] = None,
    engine: Optional[ListArg] = None,
    no_flash: Optional[bool] = None,
    rate: Optional[float] = None,
    p99_ttft_ms: Optional[float] = None,
    p99_tpot_ms: Optional[float] = None,
    requests: Optional[int] = None,
    seed: Optional[int] = None,
    request_overhead_ms: Optional[float] = None,
    own_life_years: Optional[float] = None,
    own_utilisation: Optional[float] = None,
    pue: Optional[float] = None,
    usd_per_kwh: Optional[float] = None,
    price_basis: Optional[str] = None,
    spec_k: Optional[int] = None,
    inter_node_bw: Optional[float] = None,
    spec_accept: Optional[float] = None,
    draft: Optional[ModelArg] = None,
    kernels: Optional[Union[str, "os.PathLike[str]"]] = None,
    mtp: Optional[int] = None,
    overlap_ep: Optional[bool] = None,
    expert_imbalance: Optional[float] = None,
    train: Optional[bool] = None,
    tokens: Optional[Union[str, int, float]] = None,
    seq: Optional[int] = None,
    cp: Optional[ListArg] = None,
    method: Optional[ListArg] = None,
    stack: Optional[str] = None,
    global_batch: Optional[int] = None,
    max_hours: Optional[float] = None,
    budget_usd: Optional[float] = None,
    instances: Optional[bool] = None,
    emit: Optional[str] = None,
    hardware_file: Optional[FilesArg] = None,
    engine_file: Optional[FilesArg] = None,
    instances_file: Optional[FilesArg] = None,
    price_file: Optional[FilesArg] = None,
    provider: Optional[str] = None,
    quiet: Optional[bool] = None,
    progress: Optional[Progress] = None,
) -> Report:
    """The cheapest configuration meeting the targets and the Pareto front
    (``ridgeline plan --json``); ``rate=`` sizes replicas, ``train=True`` plans
    training."""

def simulate(
    model: ModelArg,
    gpu: str,
    *,
    gpus: Optional[int] = None,
    parallel: Optional[str] = None,
    ep: Optional[int] = None,
    spec_k: Optional[int] = None,
    inter_node_bw: Optional[float] = None,
    overlap_ep: Optional[bool] = None,
    expert_imbalance: Optional[float] = None,
    spec_accept: Optional[float] = None,
    draft: Optional[str] = None,
    weights: Optional[str] = None,
    expert_weights: Optional[str] = None,
    kv: Optional[str] = None,
    engine: Optional[str] = None,
    flash: Optional[bool] = None,
    no_flash: Optional[bool] = None,
    rate: Optional[ListArg] = None,
    concurrency: Optional[int] = None,
    trace: Optional[Union[str, "os.PathLike[str]"]] = None,
    requests: Optional[int] = None,
    prompt: Optional[Union[int, str]] = None,
    gen: Optional[Union[int, str]] = None,
    seed: Optional[int] = None,
    max_num_seqs: Optional[int] = None,
    max_batched_tokens: Optional[int] = None,
    prefix_hit: Optional[float] = None,
    disagg: Optional[str] = None,
    slo_ttft_ms: Optional[float] = None,
    slo_tpot_ms: Optional[float] = None,
    request_overhead_ms: Optional[float] = None,
    kernels: Optional[Union[str, "os.PathLike[str]"]] = None,
    emit: Optional[str] = None,
    hardware_file: Optional[FilesArg] = None,
    engine_file: Optional[FilesArg] = None,
    instances_file: Optional[FilesArg] = None,
    price_file: Optional[FilesArg] = None,
    provider: Optional[str] = None,
    quiet: Optional[bool] = None,
    progress: Optional[Progress] = None,
) -> Report:
    """Serving simulated iteration by iteration: ``ridgeline simulate --json``."""

def calibrate(
    measurements: Union[str, "os.PathLike[str]"],
    *,
    engine: Optional[str] = None,
    save: Optional[Union[str, "os.PathLike[str]"]] = None,
    save_intervals: Optional[Union[str, "os.PathLike[str]"]] = None,
    train: Optional[bool] = None,
    report: Optional[bool] = None,
    worst: Optional[int] = None,
    kernels: Optional[Union[str, "os.PathLike[str]"]] = None,
    hardware_file: Optional[FilesArg] = None,
    engine_file: Optional[FilesArg] = None,
    instances_file: Optional[FilesArg] = None,
    price_file: Optional[FilesArg] = None,
    provider: Optional[str] = None,
    quiet: Optional[bool] = None,
    progress: Optional[Progress] = None,
) -> Report:
    """Engine efficiency factors fitted to measurements: ``ridgeline calibrate --json``
    (``report=True``: the errors against the pure roofline and a flat bandwidth factor,
    and the rows held out worst; ``kernels="bundled"``: the rows predicted with the
    measured kernel tables, the engines they cover fitted on top of them)."""

def sweep(
    model: Union[ModelArg, Sequence[ModelArg]],
    gpu: ListArg,
    *,
    gpus: Optional[ListArg] = None,
    parallel: Optional[str] = None,
    batch: Optional[ListArg] = None,
    prompt: Optional[ListArg] = None,
    gen: Optional[ListArg] = None,
    weights: Optional[ListArg] = None,
    expert_weights: Optional[str] = None,
    kv: Optional[ListArg] = None,
    engine: Optional[ListArg] = None,
    flash: Optional[bool] = None,
    no_flash: Optional[bool] = None,
    ep: Optional[int] = None,
    spec_k: Optional[int] = None,
    inter_node_bw: Optional[float] = None,
    overlap_ep: Optional[bool] = None,
    expert_imbalance: Optional[float] = None,
    spec_accept: Optional[float] = None,
    draft: Optional[ModelArg] = None,
    rate: Optional[ListArg] = None,
    requests: Optional[int] = None,
    seed: Optional[int] = None,
    request_overhead_ms: Optional[float] = None,
    kernels: Optional[Union[str, "os.PathLike[str]"]] = None,
    hardware_file: Optional[FilesArg] = None,
    engine_file: Optional[FilesArg] = None,
    instances_file: Optional[FilesArg] = None,
    price_file: Optional[FilesArg] = None,
    provider: Optional[str] = None,
    quiet: Optional[bool] = None,
    progress: Optional[Progress] = None,
) -> SweepColumns:
    """Every combination, on all cores with the GIL released: the columns of
    ``ridgeline sweep``'s CSV as NumPy arrays; with ``rate``, the serving simulation's
    columns (``sweep --rate``)."""

def roofline_svg(
    model: ModelArg,
    gpu: ListArg,
    *,
    gpus: Optional[int] = None,
    parallel: Optional[str] = None,
    batch: Optional[int] = None,
    prompt: Optional[int] = None,
    gen: Optional[int] = None,
    weights: Optional[str] = None,
    expert_weights: Optional[str] = None,
    kv: Optional[str] = None,
    engine: Optional[str] = None,
    flash: Optional[bool] = None,
    no_flash: Optional[bool] = None,
    offload: Optional[str] = None,
    ep: Optional[int] = None,
    spec_k: Optional[int] = None,
    inter_node_bw: Optional[float] = None,
    overlap_ep: Optional[bool] = None,
    expert_imbalance: Optional[float] = None,
    spec_accept: Optional[float] = None,
    draft: Optional[ModelArg] = None,
    kernels: Optional[Union[str, "os.PathLike[str]"]] = None,
    links: Optional[bool] = None,
    hardware_file: Optional[FilesArg] = None,
    engine_file: Optional[FilesArg] = None,
    instances_file: Optional[FilesArg] = None,
    price_file: Optional[FilesArg] = None,
    provider: Optional[str] = None,
    quiet: Optional[bool] = None,
    progress: Optional[Progress] = None,
) -> Chart:
    """The roofline chart of the model's ops (``ridgeline roofline --out``)."""

def throughput_svg(
    model: ModelArg,
    gpu: str,
    *,
    gpus: Optional[int] = None,
    parallel: Optional[str] = None,
    batch: Optional[int] = None,
    prompt: Optional[int] = None,
    gen: Optional[int] = None,
    weights: Optional[str] = None,
    expert_weights: Optional[str] = None,
    kv: Optional[str] = None,
    engine: Optional[str] = None,
    flash: Optional[bool] = None,
    no_flash: Optional[bool] = None,
    offload: Optional[str] = None,
    ep: Optional[int] = None,
    spec_k: Optional[int] = None,
    inter_node_bw: Optional[float] = None,
    overlap_ep: Optional[bool] = None,
    expert_imbalance: Optional[float] = None,
    spec_accept: Optional[float] = None,
    draft: Optional[ModelArg] = None,
    kernels: Optional[Union[str, "os.PathLike[str]"]] = None,
    hardware_file: Optional[FilesArg] = None,
    engine_file: Optional[FilesArg] = None,
    instances_file: Optional[FilesArg] = None,
    price_file: Optional[FilesArg] = None,
    provider: Optional[str] = None,
    quiet: Optional[bool] = None,
    progress: Optional[Progress] = None,
) -> Chart:
    """Decode throughput and latency against batch (``predict --chart throughput``)."""

def memory_svg(
    model: ModelArg,
    gpu: str,
    *,
    gpus: Optional[int] = None,
    parallel: Optional[str] = None,
    batch: Optional[int] = None,
    prompt: Optional[int] = None,
    gen: Optional[int] = None,
    weights: Optional[str] = None,
    expert_weights: Optional[str] = None,
    kv: Optional[str] = None,
    engine: Optional[str] = None,
    flash: Optional[bool] = None,
    no_flash: Optional[bool] = None,
    offload: Optional[str] = None,
    ep: Optional[int] = None,
    spec_k: Optional[int] = None,
    inter_node_bw: Optional[float] = None,
    overlap_ep: Optional[bool] = None,
    expert_imbalance: Optional[float] = None,
    spec_accept: Optional[float] = None,
    draft: Optional[ModelArg] = None,
    kernels: Optional[Union[str, "os.PathLike[str]"]] = None,
    hardware_file: Optional[FilesArg] = None,
    engine_file: Optional[FilesArg] = None,
    instances_file: Optional[FilesArg] = None,
    price_file: Optional[FilesArg] = None,
    provider: Optional[str] = None,
    quiet: Optional[bool] = None,
    progress: Optional[Progress] = None,
) -> Chart:
    """Memory per device by weight format (``predict --chart memory``)."""

def train_svg(model: ModelArg, gpu: Optional[str] = None, **options: Any) -> Chart:
    """Training memory per device at ZeRO stages 0-3 (``train --svg``); options as
    :func:`train`."""

def serving_svg(model: ModelArg, gpu: str, **options: Any) -> Chart:
    """Latency against request rate, or one run's timeline (``simulate --svg``);
    options as :func:`simulate`."""

def cost_time_svg(model: ModelArg, **options: Any) -> Chart:
    """A training plan's cost against time (``plan --train --svg``); options as
    :func:`plan`."""

def hardware(
    id: Optional[str] = None,
    *,
    hardware_file: Optional[FilesArg] = None,
    engine_file: Optional[FilesArg] = None,
    instances_file: Optional[FilesArg] = None,
    price_file: Optional[FilesArg] = None,
    provider: Optional[str] = None,
    quiet: Optional[bool] = None,
    progress: Optional[Progress] = None,
) -> Any:
    """Every device (a list of dicts), or one device with its sources (a dict)."""

def models(
    *,
    hardware_file: Optional[FilesArg] = None,
    engine_file: Optional[FilesArg] = None,
    instances_file: Optional[FilesArg] = None,
    price_file: Optional[FilesArg] = None,
    provider: Optional[str] = None,
    quiet: Optional[bool] = None,
    progress: Optional[Progress] = None,
) -> List[Dict[str, Any]]:
    """The bundled models: ``ridgeline models --json``."""

def instances(
    *,
    hardware_file: Optional[FilesArg] = None,
    engine_file: Optional[FilesArg] = None,
    instances_file: Optional[FilesArg] = None,
    price_file: Optional[FilesArg] = None,
    provider: Optional[str] = None,
    quiet: Optional[bool] = None,
    progress: Optional[Progress] = None,
) -> List[Dict[str, Any]]:
    """Cloud instance shapes with prices: ``ridgeline instances --json``."""

def kernels(
    *,
    kernels: Optional[str] = None,
    hardware_file: Optional[FilesArg] = None,
    engine_file: Optional[FilesArg] = None,
    instances_file: Optional[FilesArg] = None,
    price_file: Optional[FilesArg] = None,
    provider: Optional[str] = None,
    quiet: Optional[bool] = None,
) -> Dict[str, Any]:
    """Coverage of the measured kernel tables (device, engine, version, op classes):
    ``ridgeline kernels --json``."""

