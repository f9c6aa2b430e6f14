"""What a ranking ranks: the task, GPU types and models asked for, checked, and their rows."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, replace
from typing import Any

from analysis.leaderboard import Candidate, Constraints
from db import derived
from db.catalog import Catalog, ConfigurationFilter
from db.kinds import Kind
from db.tables import ModelRow, TaskRow
from graph.errors import BadInput
from graph.schema.answers.filters import check_at_least
from graph.schema.context import Context, known_gpu, known_model, known_task


@dataclass(frozen=True)
class Selection:
    """What a ranking ranks: a task of a release, and the GPU types and models asked for."""

    catalog: Catalog
    kind: Kind
    task: TaskRow
    gpus: frozenset[str] | None
    models: list[ModelRow] | None
    num_gpus: frozenset[int] | None = None

    @property
    def where(self) -> ConfigurationFilter:
        """The filter to read with: pushes down what a single value or the models can."""
        one_gpu = next(iter(self.gpus)) if self.gpus and len(self.gpus) == 1 else None
        one_count = next(iter(self.num_gpus)) if self.num_gpus and len(self.num_gpus) == 1 else None
        return ConfigurationFilter(
            model_ids=None if self.models is None else tuple(sorted(m.id for m in self.models)),
            gpu=one_gpu,
            num_gpus=one_count,
            task=self.task.name,
        )

    def rows(self) -> list[Any]:
        """The task's rows the selection asks for, in upstream order."""
        rows = self.catalog.configurations(self.kind, self.where)
        return [r for r in rows if self.gpus is None or r.gpu in self.gpus]

    def best_per_model(self, rule: Constraints, latency: str, energy: str) -> list[Candidate[Any]]:
        """`best_per_model` of `candidates(latency, energy)` under `rule`, from the task's rows
        sorted per model once per release (db.derived) rather than from all of them."""
        rule, models = self._rule(rule)
        return derived.best(self.catalog, self.kind, self.task.id, latency, energy, rule, models)

    def default_table(self, rule: Constraints, latency: str, energy: str) -> bool:
        """Whether this is the task's leaderboard with its defaults (made once per release)."""
        rule, models = self._rule(rule)
        return derived.default_table(
            self.catalog, self.kind, self.task.id, latency, energy, rule, models
        )

    def _rule(self, rule: Constraints) -> tuple[Constraints, frozenset[int] | None]:
        """`rule` with the GPU types chosen, and the models chosen (None: all)."""
        gpus = rule.gpus if self.gpus is None else self.gpus & (rule.gpus or self.gpus)
        models = None if self.models is None else frozenset(m.id for m in self.models)
        return replace(rule, gpus=gpus), models

    def candidates(self, latency: str, energy: str) -> list[Candidate[Any]]:
        """The rows as a ranking sees them, by these latency and energy columns."""
        throughput = self.kind.throughput
        return [
            Candidate(
                item=row,
                model=row.model_id,
                gpu=row.gpu,
                num_gpus=row.num_gpus,
                latency=getattr(row, latency),
                energy=getattr(row, energy),
                throughput=getattr(row, throughput),
            )
            for row in self.rows()
        ]


async def select(
    context: Context,
    kind: Kind,
    task: str,
    gpus: Sequence[str] | None,
    models: Sequence[str] | None,
    release: int | None,
    *,
    num_gpus: Sequence[int] | None = None,
) -> Selection:
    """Check the arguments every ranking shares; raise BadInput naming what is wrong."""
    catalog = await context.catalog(release)
    chosen = known_task(catalog, task, "task", kind)
    if num_gpus is not None:
        if not num_gpus:
            raise BadInput("numGpus is empty: give at least one number, or leave it out for all")
        for n in num_gpus:
            check_at_least("numGpus", n, 1)
    return Selection(
        catalog=catalog,
        kind=kind,
        task=chosen,
        gpus=_gpus(catalog, gpus),
        models=_models(catalog, models),
        num_gpus=None if num_gpus is None else frozenset(num_gpus),
    )


def _gpus(catalog: Catalog, names: Sequence[str] | None) -> frozenset[str] | None:
    if names is None:
        return None
    if not names:
        raise BadInput("gpus is empty: name at least one GPU type, or leave it out for all")
    return frozenset(known_gpu(catalog, name, "gpus") for name in names)


def _models(catalog: Catalog, slugs: Sequence[str] | None) -> list[ModelRow] | None:
    if slugs is None:
        return None
    if not slugs:
        raise BadInput("models is empty: name at least one model by slug")
    rows = [known_model(catalog, slug, "models") for slug in slugs]
    if len(set(slugs)) != len(slugs):
        twice = next(s for s in slugs if slugs.count(s) > 1)
        raise BadInput(f"models lists {twice!r} more than once")
    return rows
