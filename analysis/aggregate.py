"""Count, minimum, maximum, mean and median of each metric over a set of configurations."""

from __future__ import annotations

import math
import statistics
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

# How to read a metric from a row: the metrics are the caller's (db.kinds: each kind's).
Getter = Callable[[Any], float]


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
