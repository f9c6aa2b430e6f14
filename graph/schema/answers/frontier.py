"""Time-energy Pareto frontiers of a task: one per group of configurations the scope makes."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from analysis.pareto import frontier
from analysis.ranking import by_gpu, by_model, scope_key
from db.kinds import DIFFUSION, LLM, Kind
from graph.schema.answers.selection import select
from graph.schema.context import Context
from graph.schema.inputs import ItlPercentile, ParetoScope
from graph.schema.types.model import Model
from graph.schema.types.objects import configuration
from graph.schema.types.ranking import DiffusionParetoFrontier, ParetoFrontier

# The frontier's GraphQL type, by kind.
FRONTIER_TYPES = {LLM: ParetoFrontier, DIFFUSION: DiffusionParetoFrontier}


async def frontiers(
    context: Context,
    kind: Kind,
    task: str,
    scope: ParetoScope,
    gpus: Sequence[str] | None,
    models: Sequence[str] | None,
    release: int | None,
    percentile: ItlPercentile | None = None,
) -> list[Any]:
    """Per group of the scope (in order of its first row upstream), its frontier: latency (ITL
    at the percentile, for LLM tasks) against the kind's energy."""
    sel = await select(context, kind, task, gpus, models, release)
    catalog, how = sel.catalog, str(scope.value)
    latency = None if percentile is None else str(percentile.value)
    groups: dict[Any, list[Any]] = {}
    for row in sel.rows():
        groups.setdefault(scope_key(row, how), []).append(row)
    answer = []
    for members in groups.values():
        first = members[0]
        on = [members[i] for i in frontier([kind.point(r, latency) for r in members])]
        answer.append(
            FRONTIER_TYPES[kind](
                model=Model.of_id(catalog, first.model_id) if by_model(how) else None,
                gpu_model=first.gpu if by_gpu(how) else None,
                candidates=len(members),
                configurations=[configuration(catalog, kind, r) for r in on],
            )
        )
    return answer
