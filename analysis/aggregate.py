"""Count, minimum, maximum, mean and median of each metric over a set of configurations."""

from __future__ import annotations

import math
import statistics
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass
from operator import attrgetter
from typing import Any

from analysis.power import per_gpu_watts

Getter = Callable[[Any], float]


def _columns(*names: str) -> dict[str, Getter]:
    return {name: attrgetter(name) for name in names}


# The metrics of each row shape, by name (the column, or the derived figure), with how to read
# each from a row; in the order the API lists them.
LLM_METRICS: Mapping[str, Getter] = {
    **_columns(
        "energy_per_token_joules",
        "energy_per_request_joules",
        "median_itl_ms",
        "p90_itl_ms",
        "p95_itl_ms",
        "p99_itl_ms",
        "output_throughput_tokens_per_sec",
        "avg_power_watts",
    ),
    "power_per_gpu_watts": per_gpu_watts,
    **_columns("avg_batch_size", "avg_output_len"),
}
DIFFUSION_METRICS: Mapping[str, Getter] = {
    **_columns(
        "energy_per_output_joules",
        "batch_latency_s",
        "throughput_outputs_per_sec",
        "avg_power_watts",
    ),
    "power_per_gpu_watts": per_gpu_watts,
}


@dataclass(frozen=True)
class Summary:
    """Statistics of a set of values; all None for an empty set."""

    count: int
    minimum: float | None
    maximum: float | None
    mean: float | None
    # The mean of the two middle values for an even count.
    median: float | None

    @classmethod
    def of(cls, values: Sequence[float]) -> Summary:
        if not values:
            return cls(0, None, None, None, None)
        return cls(
            count=len(values),
            minimum=min(values),
            maximum=max(values),
            mean=math.fsum(values) / len(values),
            median=statistics.median(values),
        )


@dataclass(frozen=True)
class Aggregate:
    count: int
    metrics: dict[str, Summary]


def aggregate(rows: Iterable[Any], metrics: Mapping[str, Getter]) -> Aggregate:
    """Each metric's summary over `rows`, in the order of `metrics`."""
    members = list(rows)
    return Aggregate(
        count=len(members),
        metrics={name: Summary.of([get(r) for r in members]) for name, get in metrics.items()},
    )
