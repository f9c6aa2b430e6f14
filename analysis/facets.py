"""What a task's configurations span: GPUs, GPU counts, batch sizes and each metric's bounds."""

from __future__ import annotations

from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass
from typing import Any

from analysis.aggregate import Getter


@dataclass(frozen=True)
class Bounds:
    minimum: float
    maximum: float


@dataclass(frozen=True)
class Facets:
    configurations: int
    gpus: tuple[str, ...]
    gpu_counts: tuple[int, ...]
    batch_sizes: tuple[int, ...]
    # Metric name → its bounds, in the order of the metrics asked for; None with no rows.
    bounds: dict[str, Bounds | None]


def facets(
    rows: Iterable[Any], *, batch_size: Callable[[Any], int], metrics: Mapping[str, Getter]
) -> Facets:
    """Distinct GPUs, GPU counts and batch sizes (ascending), and min/max of each metric.

    Rows need `gpu` and `num_gpus`; `batch_size` reads the batch-size setting of a row
    (max_num_seqs for LLM tasks, batch_size for diffusion).
    """
    members = list(rows)
    bounds: dict[str, Bounds | None] = {}
    for name, get in metrics.items():
        values = [get(r) for r in members]
        bounds[name] = Bounds(min(values), max(values)) if values else None
    return Facets(
        configurations=len(members),
        gpus=tuple(sorted({r.gpu for r in members})),
        gpu_counts=tuple(sorted({r.num_gpus for r in members})),
        batch_sizes=tuple(sorted({batch_size(r) for r in members})),
        bounds=bounds,
    )
