"""The leaderboard's main table: per model, the lowest-energy configuration under constraints."""

from __future__ import annotations

from collections import Counter
from collections.abc import Callable, Collection, Hashable, Iterable
from dataclasses import dataclass
from operator import itemgetter
from typing import Generic, TypeVar

T = TypeVar("T")


@dataclass(frozen=True, slots=True)
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


@dataclass(frozen=True)
class Fields(Generic[T]):
    """How a ranking reads an item: the candidate it is (db.derived reads its rows by column)."""

    model: Callable[[T], Hashable]
    gpu: Callable[[T], str]
    num_gpus: Callable[[T], int]
    latency: Callable[[T], float]
    energy: Callable[[T], float]
    throughput: Callable[[T], float]

    def candidate(self, item: T) -> Candidate[T]:
        return Candidate(
            item,
            self.model(item),
            self.gpu(item),
            self.num_gpus(item),
            self.latency(item),
            self.energy(item),
            self.throughput(item),
        )


class PerModel(Generic[T]):
    """Items grouped per model (models in order of their first item), each model's by ascending
    energy, input order among equals: what `best_per_model` needs, sorted once."""

    def __init__(
        self,
        items: Iterable[T],
        model: Callable[[T], Hashable],
        energy: Callable[[T], float],
    ) -> None:
        groups: dict[Hashable, list[tuple[float, int, T]]] = {}
        for i, item in enumerate(items):
            groups.setdefault(model(item), []).append((energy(item), i, item))
        # Per model: (input position, item), by (energy, position).
        self.groups = {
            m: [(i, item) for _, i, item in sorted(entries, key=itemgetter(0, 1))]
            for m, entries in groups.items()
        }


def best_per_model_sorted(
    ranked: PerModel[T],
    fields: Fields[T],
    constraints: Constraints,
    models: Collection[Hashable] | None = None,
) -> list[Candidate[T]]:
    """`best_per_model` of the candidates `fields` makes of the items of `ranked` (of `models`
    only, when given): each model's first admitted item in energy order is its best, so a model
    is read only up to it (all of it only when its best ties another model's energy, which the
    position of its first admitted item then orders)."""
    admit = admits(constraints, fields)
    chosen: list[tuple[Candidate[T], Hashable]] = []
    for model, entries in ranked.groups.items():
        if models is not None and model not in models:
            continue
        for _, item in entries:
            if admit(item):
                chosen.append((fields.candidate(item), model))
                break
    tied = {e for e, n in Counter(c.energy for c, _ in chosen).items() if n > 1}
    first: dict[Hashable, int] = {}
    for candidate, model in chosen:
        if candidate.energy in tied:
            first[model] = min(i for i, item in ranked.groups[model] if admit(item))
    chosen.sort(key=lambda pair: (pair[0].energy, first.get(pair[1], 0)))
    return [candidate for candidate, _ in chosen]


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


def admits(constraints: Constraints, fields: Fields[T]) -> Callable[[T], bool]:
    """`constraints.admit` of the item's candidate, checking only the bounds that are set and
    reading only what they need of the item."""
    checks: list[Callable[[T], bool]] = []
    c = constraints
    if c.gpus is not None:
        gpu, gpus = fields.gpu, c.gpus
        checks.append(lambda x: gpu(x) in gpus)
    if c.num_gpus is not None:
        count, counts = fields.num_gpus, c.num_gpus
        checks.append(lambda x: count(x) in counts)
    if c.max_latency is not None:
        latency, max_latency = fields.latency, c.max_latency
        checks.append(lambda x: latency(x) <= max_latency)
    if c.max_energy is not None:
        energy, max_energy = fields.energy, c.max_energy
        checks.append(lambda x: energy(x) <= max_energy)
    if c.min_throughput is not None:
        throughput, min_throughput = fields.throughput, c.min_throughput
        checks.append(lambda x: throughput(x) >= min_throughput)
    if not checks:
        return lambda _x: True
    if len(checks) == 1:
        return checks[0]
    return lambda x: all(check(x) for check in checks)
