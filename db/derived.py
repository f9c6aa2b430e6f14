"""What a release's catalog derives from its rows once, for rankings and frontiers to read
instead of passing over every row of a task at each request.

- `ranking`: a task's rows per model, each model's by ascending energy (analysis.leaderboard.
  PerModel), so that a leaderboard reads each model's rows only up to its best admitted one;
  `best` ranks from it (and keeps each task's default table).
- `frontiers`: a task's time-energy frontiers under a scope, per group (analysis.pareto).
- `series` and `fitted`: an LLM configuration's concurrency series (analysis.curves) and a
  series' metric fitted against its batch size (analysis.fit), for fitted curves and the plans'
  partial-load estimates (analysis.partial_load).

`warm` makes the leaderboard's and the frontier's defaults of every task when a catalog is read,
before the release is served, so that the first request of each is as quick as the next.
"""

from __future__ import annotations

from collections.abc import Hashable, Sequence
from dataclasses import dataclass
from operator import attrgetter
from typing import Any

from analysis.curves import concurrency_curves, series_key
from analysis.fit import Curve, fit_curve
from analysis.leaderboard import Candidate, Constraints, Fields, PerModel, best_per_model_sorted
from analysis.pareto import frontier, scope_key
from db.catalog import Catalog
from db.kinds import LLM, Kind
from db.rows import LlmRow, Row

DEFAULT_SCOPE = "global"


def ranking(catalog: Catalog, kind: Kind, task_id: int, energy: str) -> PerModel[Row]:
    """The task's rows per model by ascending `energy` (a column of the kind's energies)."""
    return catalog.once(
        ("ranking", kind.name, task_id, energy),
        lambda: PerModel(
            catalog.of_task(kind, task_id), attrgetter("model_id"), attrgetter(energy)
        ),
    )


def fields(kind: Kind, latency: str, energy: str) -> Fields[Row]:
    """How a ranking reads a row of the kind, by these latency and energy columns."""
    return Fields(
        model=attrgetter("model_id"),
        gpu=attrgetter("gpu"),
        num_gpus=attrgetter("num_gpus"),
        latency=attrgetter(latency),
        energy=attrgetter(energy),
        throughput=attrgetter(kind.throughput),
    )


def best(
    catalog: Catalog,
    kind: Kind,
    task_id: int,
    latency: str,
    energy: str,
    rule: Constraints,
    models: frozenset[int] | None = None,
) -> list[Candidate[Row]]:
    """`best_per_model` of the task's rows by these columns under `rule` (of `models` only,
    when given), from `ranking`. The leaderboard's default table of a task (the kind's first
    latency and energy, its default deadline, nothing else chosen) is made once per release."""

    def make() -> list[Candidate[Row]]:
        ranked = ranking(catalog, kind, task_id, energy)
        return best_per_model_sorted(ranked, fields(kind, latency, energy), rule, models)

    if default_table(catalog, kind, task_id, latency, energy, rule, models):
        return catalog.once(("best", kind.name, task_id), make)
    return make()


def default_table(
    catalog: Catalog,
    kind: Kind,
    task_id: int,
    latency: str,
    energy: str,
    rule: Constraints,
    models: frozenset[int] | None = None,
) -> bool:
    """Whether these are the leaderboard's defaults for the task: the kind's first latency and
    energy, its default deadline, and nothing else chosen."""
    default = Constraints(max_latency=kind.default_deadline(catalog.task_by_id[task_id].name))
    return (models, latency, energy, rule) == (None, kind.latencies[0], kind.energies[0], default)


@dataclass(frozen=True)
class Frontier:
    """One group's frontier: the group's first row (upstream), its size, its frontier's rows
    (by ascending latency, then energy, then upstream order)."""

    first: Row
    candidates: int
    rows: list[Row]


def frontiers_of(
    kind: Kind, rows: Sequence[Row], scope: str, latency: str | None
) -> list[Frontier]:
    """Per group of `scope` (in order of its first row), its frontier over `rows`: latency (the
    kind's first when None) against the kind's energy."""
    groups: dict[Hashable, list[Row]] = {}
    for row in rows:
        groups.setdefault(scope_key(row, scope), []).append(row)
    answer = []
    for members in groups.values():
        on = [members[i] for i in frontier([kind.point(r, latency) for r in members])]
        answer.append(Frontier(members[0], len(members), on))
    return answer


def frontiers(
    catalog: Catalog, kind: Kind, task_id: int, scope: str, latency: str | None
) -> list[Frontier]:
    """`frontiers_of` all the task's rows, made once per scope and latency."""
    latency = latency or kind.latencies[0]
    rows = catalog.of_task(kind, task_id)
    key: Any = ("frontiers", kind.name, task_id, scope, latency)
    return catalog.once(key, lambda: frontiers_of(kind, rows, scope, latency))


def series(catalog: Catalog, row: LlmRow) -> Sequence[LlmRow]:
    """The row's concurrency series: its task's rows of its model, GPU type, GPU count and
    parallelism, by batch size, then id (analysis.curves); the task's made once per release."""

    def make() -> dict[Hashable, list[LlmRow]]:
        by_model: dict[int, list[LlmRow]] = {}
        for r in catalog.of_task(LLM, row.task_id):
            by_model.setdefault(r.model_id, []).append(r)
        return {
            (model, s.key): s.points
            for model, rows in by_model.items()
            for s in concurrency_curves(rows)
        }

    return catalog.once(("series", row.task_id), make)[(row.model_id, series_key(row))]


def fitted(catalog: Catalog, rows: Sequence[LlmRow], column: str) -> Curve:
    """A series' `column` against max_num_seqs (analysis.fit), fitted once per release."""
    key = ("fitted", column, tuple(r.id for r in rows))
    return catalog.once(key, lambda: fit_curve((r.max_num_seqs, getattr(r, column)) for r in rows))


def warm(catalog: Catalog) -> None:
    """Make every task's default ranking, leaderboard table and frontier now."""
    for task in catalog.tasks:
        kind = catalog.kind_of_task[task.id]
        rule = Constraints(max_latency=kind.default_deadline(task.name))
        best(catalog, kind, task.id, kind.latencies[0], kind.energies[0], rule)
        frontiers(catalog, kind, task.id, DEFAULT_SCOPE, None)
