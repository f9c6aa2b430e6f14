"""Concurrency curves: a model's measurements as series over max_num_seqs."""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass
from typing import Generic, Protocol, TypeVar


class Measured(Protocol):
    @property
    def gpu(self) -> str: ...
    @property
    def num_gpus(self) -> int: ...
    @property
    def tensor_parallel(self) -> int: ...
    @property
    def data_parallel(self) -> int: ...
    @property
    def expert_parallel(self) -> int: ...
    @property
    def max_num_seqs(self) -> int: ...
    @property
    def id(self) -> int: ...


T = TypeVar("T", bound=Measured)


@dataclass(frozen=True)
class SeriesKey:
    gpu: str
    num_gpus: int
    tensor_parallel: int
    data_parallel: int
    expert_parallel: int


@dataclass(frozen=True)
class Series(Generic[T]):
    key: SeriesKey
    points: list[T]


def series_key(row: Measured) -> SeriesKey:
    return SeriesKey(
        row.gpu, row.num_gpus, row.tensor_parallel, row.data_parallel, row.expert_parallel
    )


def concurrency_curves(rows: Iterable[T]) -> list[Series[T]]:
    """Group rows into one series per (GPU, number of GPUs, parallelism), points by batch size.

    Series are ordered by GPU name, GPU count and parallelism degrees; points by max_num_seqs
    and then by id, so repeated runs of the same setting stay as separate, stably ordered points.
    """
    groups: dict[SeriesKey, list[T]] = {}
    for row in rows:
        groups.setdefault(series_key(row), []).append(row)
    return [
        Series(key, sorted(points, key=lambda r: (r.max_num_seqs, r.id)))
        for key, points in sorted(groups.items(), key=lambda item: _order(item[0]))
    ]


def _order(key: SeriesKey) -> tuple[str, int, int, int, int]:
    return (key.gpu, key.num_gpus, key.tensor_parallel, key.data_parallel, key.expert_parallel)
