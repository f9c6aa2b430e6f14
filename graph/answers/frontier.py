"""Time-energy Pareto frontiers of a task, and whether a configuration is on one."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from analysis.pareto import frontier, pareto_optimal
from db.catalog import Catalog, ConfigurationFilter
from db.tables import ConfigurationRow, DiffusionConfigurationRow
from graph.answers.selection import Row, Selection
from graph.types.configuration import Configuration
from graph.types.diffusion import diffusion_of
from graph.types.model import Model
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


def _groups(
    sel: Selection, scope: ParetoScope, percentile: ItlPercentile | None
) -> list[tuple[dict[str, Any], list[Any]]]:
    """Per group of the scope (in order of its first row upstream): what the frontier type
    says of the group, and the group's frontier rows."""
    catalog = sel.catalog
    groups: dict[Any, list[Row]] = {}
    for row in sel.rows():
        groups.setdefault(scope_key(row, scope), []).append(row)
    answer = []
    for members in groups.values():
        first = members[0]
        about = {
            "model": Model.of_id(catalog, first.model_id) if scope in MODEL_SCOPES else None,
            "gpu_model": first.gpu if scope in GPU_SCOPES else None,
            "candidates": len(members),
        }
        on = [members[i] for i in frontier([point(r, percentile) for r in members])]
        answer.append((about, on))
    return answer


def llm_frontiers(
    sel: Selection, scope: ParetoScope, percentile: ItlPercentile
) -> list[ParetoFrontier]:
    return [
        ParetoFrontier(configurations=[Configuration.of(sel.catalog, r) for r in on], **about)
        for about, on in _groups(sel, scope, percentile)
    ]


def diffusion_frontiers(sel: Selection, scope: ParetoScope) -> list[DiffusionParetoFrontier]:
    return [
        DiffusionParetoFrontier(configurations=[diffusion_of(sel.catalog, r) for r in on], **about)
        for about, on in _groups(sel, scope, None)
    ]


def is_pareto_optimal(
    catalog: Catalog, row: Row, scope: ParetoScope, percentile: ItlPercentile | None
) -> bool:
    """Whether `row` is on its group's frontier, within its task and release.

    Each group's frontier is computed once per release (it depends on nothing else).
    """
    diffusion = isinstance(row, DiffusionConfigurationRow)
    group = scope_key(row, scope)

    def compute() -> frozenset[int]:
        rows: Sequence[Row]
        table = DiffusionConfigurationRow if diffusion else ConfigurationRow
        if scope in MODEL_SCOPES:
            rows = catalog.of_model(table, row.model_id)
        else:
            name = catalog.task_by_id[row.task_id].name
            where = ConfigurationFilter(task=name, gpu=row.gpu if scope in GPU_SCOPES else None)
            rows = catalog.configurations(table, where)
        members = [r for r in rows if r.task_id == row.task_id and scope_key(r, scope) == group]
        kept = pareto_optimal([point(r, percentile) for r in members])
        return frozenset(r.id for r, on in zip(members, kept, strict=True) if on)

    key = ("pareto", diffusion, row.task_id, scope, percentile, group)
    return row.id in catalog.once(key, compute)
