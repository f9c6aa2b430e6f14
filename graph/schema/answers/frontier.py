"""Time-energy Pareto frontiers of a task: one per group of configurations the scope makes."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from analysis.pareto import by_gpu, by_model
from db import derived
from db.kinds import DIFFUSION, LLM, Kind
from graph.schema.answers.selection import select
from graph.schema.context import Context
from graph.schema.inputs import ItlPercentile, ParetoScope
from graph.schema.types.model import Model, configuration
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
    if gpus is None and models is None:  # the task's frontiers, made once per release
        found = derived.frontiers(catalog, kind, sel.task.id, how, latency)
    else:
        found = derived.frontiers_of(kind, sel.rows(), how, latency)
    return [
        FRONTIER_TYPES[kind](
            model=Model.of_id(catalog, f.first.model_id) if by_model(how) else None,
            gpu_model=f.first.gpu if by_gpu(how) else None,
            candidates=f.candidates,
            configurations=[configuration(catalog, kind, r) for r in f.rows],
        )
        for f in found
    ]
