"""Real model configurations from ``data/models.csv`` and GPUs from ``data/gpus.csv``, and the
memory arithmetic of notebook 06: KV cache per token, weights, the longest context that fits.

Every number in the data files names its public source (a ``config.json`` on the Hugging Face hub
or a paper) and the second source it was checked against. Sizes are in bytes and shown in binary
units, as memory is built: ``GiB`` = 2³⁰ bytes, ``KiB`` = 2¹⁰ bytes. A GPU's memory is the total
its driver reports to programs (``nvidia-smi``), a little under the nominal size printed on the box: an
"80 GB" H100 shows 81,559 MiB = 79.6 GiB, a "141 GB" H200 143,771 MiB = 140.4 GiB.
"""

from __future__ import annotations

import csv
import dataclasses
import functools
import math
from pathlib import Path

import heads_and_masks

from ._validate import whole_number
from .kv_heads import kv_cache_bytes

GiB = 2**30
KiB = 2**10
MiB = 2**20
BYTES_PER_VALUE = {"fp32": 4, "bf16": 2, "fp8": 1}  # the storage formats of the calculator


def data_dir() -> Path:
    """The course's ``data/`` folder, found through the installed package (works at grading time too)."""
    return Path(heads_and_masks.__file__).resolve().parents[1] / "data"


@dataclasses.dataclass(frozen=True)
class ModelConfig:
    """One row of ``data/models.csv``: the attention shape of a real model, with its sources."""

    model: str
    attention: str  # "MHA", "GQA" or "MQA", as the model's authors describe it
    layers: int
    query_heads: int
    kv_heads: int
    head_dim: int
    hidden: int
    parameters: int
    context: int  # the context length the model was released with
    sliding_window: int | None  # tokens a query may look back (itself included), None for full attention
    config_source: str
    parameters_source: str
    context_source: str
    second_source: str
    published_kv_bytes_per_token: int | None
    published_kv_source: str
    note: str

    @property
    def group_size(self) -> int:
        """Query heads that share one KV head: h // g."""
        return self.query_heads // self.kv_heads

    def kv_bytes_per_token(self, bytes_per_value: float = 2, kv_heads: int | None = None) -> int:
        """Cache one token adds: 2 (K and V) · layers · KV heads · head size · bytes per value."""
        g = self.kv_heads if kv_heads is None else kv_heads
        return kv_cache_bytes(self.layers, g, self.head_dim, 1, 1, bytes_per_value)

    def cached_tokens(self, context: int, rolling_buffer: bool = False) -> int:
        """Tokens whose K and V are kept: all of them, or the last ``sliding_window`` with a rolling buffer."""
        if rolling_buffer and self.sliding_window is not None:
            return min(context, self.sliding_window)
        return context

    def weights_bytes(self, bytes_per_value: float = 2) -> int:
        return int(round(self.parameters * bytes_per_value))

    def variants(self) -> dict[str, int]:
        """KV-head counts for the same model as MHA, a GQA in between (if h has a divisor for it), MQA.

        The GQA variant is the model's own g if it has one, else the largest divisor of h that is at
        most 8 (the common choice) and leaves groups of at least two heads.
        """
        h = self.query_heads
        if 1 < self.kv_heads < h:
            middle = self.kv_heads
        else:
            middle = max((g for g in range(2, min(8, h // 2) + 1) if h % g == 0), default=None)
        out = {f"MHA (g = {h})": h}
        if middle is not None:
            out[f"GQA (g = {middle})"] = middle
        out["MQA (g = 1)"] = 1
        return out


def _int_or_none(text: str) -> int | None:
    return int(text) if text.strip() else None


@functools.cache
def _load_models() -> tuple[ModelConfig, ...]:
    rows = []
    with open(data_dir() / "models.csv", newline="", encoding="utf-8") as file:
        for row in csv.DictReader(file):
            rows.append(
                ModelConfig(
                    model=row["model"],
                    attention=row["attention"],
                    layers=int(row["layers"]),
                    query_heads=int(row["query_heads"]),
                    kv_heads=int(row["kv_heads"]),
                    head_dim=int(row["head_dim"]),
                    hidden=int(row["hidden"]),
                    parameters=int(row["parameters"]),
                    context=int(row["context"]),
                    sliding_window=_int_or_none(row["sliding_window"]),
                    config_source=row["config_source"],
                    parameters_source=row["parameters_source"],
                    context_source=row["context_source"],
                    second_source=row["second_source"],
                    published_kv_bytes_per_token=_int_or_none(row["published_kv_bytes_per_token"]),
                    published_kv_source=row["published_kv_source"],
                    note=row["note"],
                )
            )
    return tuple(rows)


def load_models() -> dict[str, ModelConfig]:
    """{model name: ModelConfig}, in the order of the file."""
    return {m.model: m for m in _load_models()}


def model(name: str) -> ModelConfig:
    models = load_models()
    if name not in models:
        raise ValueError(f"no model {name!r} in data/models.csv; known: {', '.join(models)}")
    return models[name]


@functools.cache
def _gpu_rows() -> tuple[dict[str, str], ...]:
    with open(data_dir() / "gpus.csv", newline="", encoding="utf-8") as file:
        return tuple(csv.DictReader(file))


def load_gpus() -> dict[str, int]:
    """{GPU name: memory in bytes that programs can use}: the total the driver reports (``visible_mib``
    in ``data/gpus.csv``), not the nominal size, which no program ever gets."""
    return {row["gpu"]: int(row["visible_mib"]) * MiB for row in _gpu_rows()}


def nominal_gb() -> dict[str, int]:
    """{GPU name: the size it is sold as, in GB}: "80 GB" for an H100 (``nominal_gb`` in ``data/gpus.csv``)."""
    return {row["gpu"]: int(row["nominal_gb"]) for row in _gpu_rows()}


def longest_context(
    config: ModelConfig,
    memory_bytes: int,
    *,
    batch: int = 1,
    bytes_per_value: float = 2,
    kv_heads: int | None = None,
    rolling_buffer: bool = False,
) -> float:
    """The most tokens per sequence whose cache fits beside the weights in ``memory_bytes``.

    0 when the weights alone do not fit; ``math.inf`` when a rolling buffer (sliding window) keeps
    the cache bounded and the whole window fits. Activations and the framework's own overhead are
    left out: real servers fit somewhat less.
    """
    batch = whole_number("batch", batch, minimum=1)
    free = memory_bytes - config.weights_bytes(bytes_per_value)
    per_token = config.kv_bytes_per_token(bytes_per_value, kv_heads) * batch
    if free < 0:
        return 0
    tokens = free // per_token
    if rolling_buffer and config.sliding_window is not None and tokens >= config.sliding_window:
        return math.inf
    return int(tokens)


@dataclasses.dataclass(frozen=True)
class ContextLimits:
    """The two limits on the context of one sequence: what the memory allows, what the model was made for."""

    memory: float  # tokens whose cache fits beside the weights: 0 if the weights alone do not fit, inf if bounded
    model: int  # the context length the model was released with (data/models.csv)

    @property
    def usable(self) -> float:
        """The longest context that both fits and is one the model can handle: the smaller limit."""
        return min(self.memory, self.model)

    @property
    def binding(self) -> str:
        """Which limit binds: "weights" (nothing fits), "memory" or "model"."""
        if self.memory == 0:
            return "weights"
        return "memory" if self.memory < self.model else "model"


def context_limits(config: ModelConfig, memory_bytes: int, **options) -> ContextLimits:
    """Both limits on the context of ``config`` in ``memory_bytes`` (options as for ``longest_context``)."""
    return ContextLimits(memory=longest_context(config, memory_bytes, **options), model=config.context)


def parameters_with_kv_heads(config: ModelConfig, kv_heads: int) -> int:
    """Parameters of the same model with ``kv_heads`` KV heads instead of its own.

    Only W_K and W_V change: each KV head owns a (hidden × head_dim) slice of each, in every layer.
    A forward pass costs about one multiply-add per parameter per token (plus the attention scores,
    which do not depend on g), so the ratio of these counts is also the ratio of the arithmetic.
    """
    kv_weights_per_head = 2 * config.hidden * config.head_dim * config.layers  # W_K and W_V slices
    return config.parameters + (kv_heads - config.kv_heads) * kv_weights_per_head
