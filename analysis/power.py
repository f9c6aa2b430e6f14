"""Measured GPU power of a set of configurations, per GPU type."""

from __future__ import annotations

import statistics
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from typing import Protocol


class Powered(Protocol):
    @property
    def gpu(self) -> str: ...
    @property
    def num_gpus(self) -> int: ...
    @property
    def avg_power_watts(self) -> float: ...


@dataclass(frozen=True)
class Spread:
    """The least, the median (of an even count: the mean of the middle two) and the most."""

    minimum: float
    median: float
    maximum: float

    @classmethod
    def of(cls, values: Sequence[float]) -> Spread:
        return cls(min(values), statistics.median(values), max(values))


@dataclass(frozen=True)
class PowerSummary:
    gpu: str
    configurations: int
    total_watts: Spread
    per_gpu_watts: Spread
    fraction_of_tdp: Spread | None


def per_gpu_watts(row: Powered) -> float:
    return row.avg_power_watts / row.num_gpus


def fraction_of_tdp(watts_per_gpu: float, tdp_watts: float | None) -> float | None:
    return watts_per_gpu / tdp_watts if tdp_watts else None


def power_by_gpu(rows: Iterable[Powered], tdp: Mapping[str, float | None]) -> list[PowerSummary]:
    """Min, median and max of total and per-GPU average power, for each GPU type in `rows`."""
    groups: dict[str, list[Powered]] = {}
    for row in rows:
        groups.setdefault(row.gpu, []).append(row)
    summaries = []
    for gpu, members in sorted(groups.items()):
        watts = [per_gpu_watts(r) for r in members]
        limit = tdp.get(gpu)
        summaries.append(
            PowerSummary(
                gpu=gpu,
                configurations=len(members),
                total_watts=Spread.of([r.avg_power_watts for r in members]),
                per_gpu_watts=Spread.of(watts),
                # Divide each value, so the spread's ends equal configurations' fractionOfTdp.
                fraction_of_tdp=Spread.of([w / limit for w in watts]) if limit else None,
            )
        )
    return summaries
