"""The leaderboard's main table: per model, the lowest-energy configuration under constraints."""

from __future__ import annotations

from collections.abc import Hashable, Iterable
from dataclasses import dataclass
from typing import Generic, TypeVar

T = TypeVar("T")


@dataclass(frozen=True)
class Candidate(Generic[T]):
    """One configuration as the ranking sees it; `item` is whatever the caller wants back."""

    item: T
    model: Hashable
    gpu: str
    num_gpus: int
    latency: float
    energy: float
    throughput: float


@dataclass(frozen=True)
class Constraints:
    """Every bound is inclusive; None means no constraint."""

    max_latency: float | None = None
    max_energy: float | None = None
    gpus: frozenset[str] | None = None
    num_gpus: frozenset[int] | None = None
    min_throughput: float | None = None

    def admit(self, c: Candidate[T]) -> bool:
        return (
            (self.gpus is None or c.gpu in self.gpus)
            and (self.num_gpus is None or c.num_gpus in self.num_gpus)
            and (self.max_latency is None or c.latency <= self.max_latency)
            and (self.max_energy is None or c.energy <= self.max_energy)
            and (self.min_throughput is None or c.throughput >= self.min_throughput)
        )


def best_per_model(
    candidates: Iterable[Candidate[T]], constraints: Constraints
) -> list[Candidate[T]]:
    """Per model, its lowest-energy admitted candidate; the models in ascending energy.

    Reproduces `getBestConfigPerModel` of the ML.ENERGY leaderboard web app
    (github.com/ml-energy/leaderboard, src/App.tsx at f9626f6): a configuration is dropped when
    its latency is above the deadline or its energy above the budget (so both bounds are
    inclusive), each model keeps the first of its lowest-energy rows (a strict `<` in input
    order, so the earlier row wins a tie), and the models are sorted ascending by that energy
    with a stable sort, models of equal energy staying in the order of their first admitted
    row. Give the candidates in upstream file order to get the leaderboard's table.
    """
    best: dict[Hashable, Candidate[T]] = {}
    for c in candidates:
        if not constraints.admit(c):
            continue
        held = best.get(c.model)
        if held is None or c.energy < held.energy:
            best[c.model] = c
    return sorted(best.values(), key=lambda c: c.energy)
