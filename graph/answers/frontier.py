"""Time-energy Pareto frontiers of a task, and whether a configuration is on one."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from analysis.pareto import frontier, pareto_optimal
from db.reads import ConfigurationFilter
from db.tables import ConfigurationRow, DiffusionConfigurationRow
from graph.answers.selection import Row, Selection, read_rows
from graph.context import Context
from graph.types.configuration import Configuration
from graph.types.diffusion import diffusion_from_row
from graph.types.ranking import (
    DiffusionParetoFrontier,
    ItlPercentile,
    ParetoFrontier,
    ParetoScope,
    itl_ms,
    scope_key,
)

MODEL_SCOPES = (ParetoScope.MODEL, ParetoScope.MODEL_GPU)
GPU_SCOPES = (ParetoScope.GPU, ParetoScope.MODEL_GPU)


def point(row: Row, percentile: ItlPercentile | None) -> tuple[float, float]:
    """(latency, energy) of a row on the time-energy plane: ITL at the percentile and energy per
    token for an LLM row, batch latency and energy per image or video for a diffusion row."""
    if isinstance(row, DiffusionConfigurationRow):
        return row.batch_latency_s, row.energy_per_output_joules
    assert percentile is not None
    return itl_ms(row, percentile), row.energy_per_token_joules


async def _groups(
    context: Context, sel: Selection, scope: ParetoScope, percentile: ItlPercentile | None
) -> list[tuple[dict[str, Any], list[Any]]]:
    """Per group of the scope (in order of its first row upstream): what the frontier type
    says of the group, and the group's frontier rows."""
    groups: dict[Any, list[Row]] = {}
    for row in await read_rows(context, sel):
        groups.setdefault(scope_key(row, scope), []).append(row)
    answer = []
    for members in groups.values():
        first = members[0]
        about = {
            "model_row_id": first.model_id if scope in MODEL_SCOPES else None,
            "gpu_model": first.gpu if scope in GPU_SCOPES else None,
            "candidates": len(members),
        }
        on = [members[i] for i in frontier([point(r, percentile) for r in members])]
        answer.append((about, on))
    return answer


async def llm_frontiers(
    context: Context, sel: Selection, scope: ParetoScope, percentile: ItlPercentile
) -> list[ParetoFrontier]:
    return [
        ParetoFrontier(configurations=[Configuration.from_row(r) for r in on], **about)
        for about, on in await _groups(context, sel, scope, percentile)
    ]


async def diffusion_frontiers(
    context: Context, sel: Selection, scope: ParetoScope
) -> list[DiffusionParetoFrontier]:
    return [
        DiffusionParetoFrontier(configurations=[diffusion_from_row(r) for r in on], **about)
        for about, on in await _groups(context, sel, scope, None)
    ]


async def is_pareto_optimal(
    context: Context, row: Row, scope: ParetoScope, percentile: ItlPercentile | None
) -> bool:
    """Whether `row` is on its group's frontier, within its task and release.

    Each group's frontier is computed once per request, from rows read once: a model's rows come
    from the per-model DataLoader (the model page has read them already), the task's from one
    read of the task.
    """
    diffusion = isinstance(row, DiffusionConfigurationRow)
    group = scope_key(row, scope)

    async def compute() -> frozenset[int]:
        rows: Sequence[Row]
        if scope in MODEL_SCOPES:
            loader = context.diffusion_configurations if diffusion else context.configurations
            rows = await loader.load(row.model_id)
        else:
            name = (await context.tasks())[row.task_id].name
            where = ConfigurationFilter(task=name, gpu=row.gpu if scope in GPU_SCOPES else None)
            table = DiffusionConfigurationRow if diffusion else ConfigurationRow
            rows = await context.all_configurations(table, where, row.release_id)
        members = [r for r in rows if r.task_id == row.task_id and scope_key(r, scope) == group]
        kept = pareto_optimal([point(r, percentile) for r in members])
        return frozenset(r.id for r, on in zip(members, kept, strict=True) if on)

    key = ("pareto", diffusion, row.task_id, scope, percentile, group)
    return row.id in await context.memo(key, compute)
