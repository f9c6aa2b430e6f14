"""Time-energy Pareto frontiers: the configurations no other beats on both latency and energy,
and the groups a Pareto scope compares (all of a task's rows, or per model, GPU type or both)."""

from __future__ import annotations

import math
from collections.abc import Hashable, Sequence
from typing import TYPE_CHECKING, Any, Protocol

if TYPE_CHECKING:
    import numpy.typing as npt

    Points = npt.NDArray[Any]


def pareto_optimal(points: Sequence[tuple[float, float]]) -> list[bool]:
    """For each (latency, energy) point, whether it is on the frontier.

    A point is off the frontier only when another has both strictly lower latency and strictly
    lower energy, as the ML.ENERGY leaderboard's time-energy chart decides
    (github.com/ml-energy/leaderboard, src/components/TimeEnergyTradeoffChart.tsx at 8326187,
    `getParetoFrontier`): equal points, and points that tie on one axis, all survive.
    """
    keep = [False] * len(points)
    for i in frontier(points):
        keep[i] = True
    return keep


def undominated(points: Sequence[tuple[float, float]] | Points) -> list[bool]:
    """For each point (a pair, or a row of an n x 2 array), whether no other is at most as
    high on both axes and lower on one (the usual dominance: a tie on one axis and a loss on
    the other is beaten; equal points stay). One sort and one sweep, in numpy: a whole task's
    deployment plans are many."""
    import numpy as np

    xy = np.asarray(points, dtype=np.float64).reshape(-1, 2)
    x, y = xy[:, 0], xy[:, 1]
    by_x = np.lexsort((y, x))
    xs, ys = x[by_x], y[by_x]
    first = np.ones(len(xs), dtype=bool)  # the first (lowest y) point of each x
    first[1:] = xs[1:] != xs[:-1]
    group = np.cumsum(first) - 1
    least = ys[first]
    # The lowest y among points of strictly lower x.
    below = np.concatenate(([math.inf], np.minimum.accumulate(least)[:-1]))
    keep = np.empty(len(xs), dtype=bool)
    keep[by_x] = ~((below[group] <= ys) | (least[group] < ys))
    found: list[bool] = keep.tolist()
    return found


def pareto_optimal_within(
    points: Sequence[tuple[float, float]], groups: Sequence[Hashable]
) -> list[bool]:
    """Like `pareto_optimal`, each point judged only against the points of its own group."""
    members: dict[Hashable, list[int]] = {}
    for i, group in enumerate(groups):
        members.setdefault(group, []).append(i)
    keep = [False] * len(points)
    for indices in members.values():
        for i, kept in zip(indices, pareto_optimal([points[i] for i in indices]), strict=True):
            keep[i] = kept
    return keep


def frontier(points: Sequence[tuple[float, float]]) -> list[int]:
    """Indices of the frontier's points (`pareto_optimal`), by ascending latency, then energy,
    then input order: one sort of the points, then one sweep over them in that order."""
    kept: list[int] = []
    lowest = math.inf  # the lowest energy among points of strictly lower latency
    seen = math.inf  # the lowest energy among the points swept so far
    latency: object = None
    for i in sorted(range(len(points)), key=points.__getitem__):
        x, y = points[i]
        if x != latency:  # the first point of a new latency: the ones before are all lower
            latency, lowest = x, seen
        if not lowest < y:
            kept.append(i)
        if y < seen:
            seen = y
    return kept


SCOPES = ("global", "model", "gpu", "model_gpu")


class Grouped(Protocol):
    @property
    def model_id(self) -> int: ...
    @property
    def gpu(self) -> str: ...


def scope_key(row: Grouped, scope: str) -> Hashable:
    """The group a row belongs to under a scope (one of SCOPES): rows of one group are compared."""
    if scope == "global":
        return None
    if scope == "model":
        return row.model_id
    if scope == "gpu":
        return row.gpu
    if scope == "model_gpu":
        return (row.model_id, row.gpu)
    raise ValueError(f"unknown scope {scope!r}; the scopes are {', '.join(SCOPES)}")


def by_model(scope: str) -> bool:
    """Whether each group of the scope is one model's rows."""
    return scope in ("model", "model_gpu")


def by_gpu(scope: str) -> bool:
    """Whether each group of the scope is one GPU type's rows."""
    return scope in ("gpu", "model_gpu")
