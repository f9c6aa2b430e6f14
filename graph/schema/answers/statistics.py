"""Statistics: fitted curves, the energy-per-response distribution, facets, aggregates."""

from __future__ import annotations

from typing import Any

from strawberry.utils.str_converters import to_camel_case

from analysis.aggregate import aggregate as summarise
from analysis.curves import concurrency_curves
from analysis.distribution import Histogram, Scale
from analysis.distribution import energy_per_response as distribution
from analysis.facets import facets as spans
from db.catalog import Catalog, ConfigurationFilter
from db.kinds import KINDS, LLM, Kind
from db.rows import LlmRow
from db.tables import TaskRow
from graph.errors import BadInput
from graph.schema.answers.filters import to_filter
from graph.schema.context import Context, known_gpu, known_model, known_task
from graph.schema.inputs import AnyFilter
from graph.schema.types.fitted import FittedCurveSeries
from graph.schema.types.model import Configuration, Model
from graph.schema.types.node import parse_id
from graph.schema.types.statistics import (
    BinScale,
    ConfigurationAggregate,
    EnergyPerResponseDistribution,
    MetricBounds,
    MetricSummary,
    TaskFacets,
)
from graph.schema.types.task import Task

MAX_BINS = 1000


async def fitted_curves(
    context: Context,
    task: str | None,
    model: str | None,
    gpu: str | None,
    num_gpus: int | None,
    release: int | None,
) -> list[FittedCurveSeries]:
    catalog = await context.catalog(release)
    if task is not None:
        known_task(catalog, task, "task", LLM)
    model_ids = None if model is None else [known_model(catalog, model, "model").id]
    if gpu is not None:
        known_gpu(catalog, gpu, "gpu")
    if num_gpus is not None and num_gpus < 1:
        raise BadInput(f"numGpus must be at least 1, got {num_gpus}")
    where = ConfigurationFilter(model_ids=model_ids, gpu=gpu, num_gpus=num_gpus, task=task)
    return _series(catalog, catalog.configurations(LLM, where))


async def energy_per_response(
    context: Context,
    configuration_id: str,
    scale: BinScale,
    bin_count: int | None,
    release: int | None,
) -> EnergyPerResponseDistribution:
    if bin_count is not None and not 1 <= bin_count <= MAX_BINS:
        raise BadInput(f"binCount must be between 1 and {MAX_BINS}, got {bin_count}")
    catalog = await context.catalog(release)
    row = _configuration(catalog, configuration_id)
    lengths = Histogram(tuple(row.length_bins or ()), tuple(row.length_counts or ()))
    value = distribution(
        lengths, row.energy_per_token_joules, scale=Scale[scale.name], bins=bin_count
    )
    return EnergyPerResponseDistribution.of(Configuration.of(catalog, row), value, scale)


async def facets(context: Context, task: str | None, release: int | None) -> list[TaskFacets]:
    catalog = await context.catalog(release)
    if task is not None:
        known_task(catalog, task, "task")
    chosen = sorted(
        (t for t in catalog.tasks if task is None or t.name == task), key=lambda t: t.name
    )
    rows_by_task: dict[int, list[Any]] = {t.id: [] for t in chosen}
    for kind in KINDS:
        if any(catalog.kind_of_task[t.id] is kind for t in chosen):
            for row in catalog.configurations(kind, ConfigurationFilter(task=task)):
                rows_by_task[row.task_id].append(row)
    return [_facets(catalog, t, rows_by_task[t.id]) for t in chosen]


async def aggregate(
    context: Context, kind: Kind, given: AnyFilter | None, release: int | None
) -> ConfigurationAggregate:
    catalog = await context.catalog(release)
    where = to_filter(catalog, given, kind, strict=True)
    value = summarise(catalog.configurations(kind, where), kind.metrics)
    return ConfigurationAggregate(
        count=value.count,
        metrics=[MetricSummary.of(name, s) for name, s in value.metrics.items()],
    )


def _configuration(catalog: Catalog, configuration_id: str) -> LlmRow:
    """One LLM or MLLM configuration of the release, by its global id."""
    parsed = parse_id(configuration_id)
    found = catalog.by_key.get(parsed[1]) if parsed and parsed[0] == "Configuration" else None
    row = found[1] if found is not None else None
    if not isinstance(row, LlmRow):
        raise BadInput(
            f"there is no LLM or MLLM configuration with id {configuration_id[:200]!r} in this "
            "release"
        )
    return row


def _series(catalog: Catalog, rows: list[LlmRow]) -> list[FittedCurveSeries]:
    groups: dict[tuple[str, str], list[LlmRow]] = {}
    for row in rows:
        task, model = catalog.task_by_id[row.task_id], catalog.model_by_id[row.model_id]
        groups.setdefault((task.name, model.slug), []).append(row)
    return [
        FittedCurveSeries(
            task=task,
            gpu_model=s.key.gpu,
            num_gpus=s.key.num_gpus,
            tensor_parallel=s.key.tensor_parallel,
            data_parallel=s.key.data_parallel,
            expert_parallel=s.key.expert_parallel,
            batch_sizes=sorted({p.max_num_seqs for p in s.points}),
            runs=len(s.points),
            model=Model.of_id(catalog, s.points[0].model_id),
            rows=s.points,
            catalog=catalog,
        )
        for (task, _), members in sorted(groups.items())
        for s in concurrency_curves(members)
    ]


def _facets(catalog: Catalog, task: TaskRow, rows: list[Any]) -> TaskFacets:
    kind = catalog.kind_of_task[task.id]
    value = spans(
        rows,
        batch_size=lambda r: getattr(r, kind.batch_setting),
        metrics=kind.metrics,
    )
    return TaskFacets(
        task=Task.of(catalog, task.id),
        configurations=value.configurations,
        gpus=list(value.gpus),
        gpu_counts=list(value.gpu_counts),
        batch_size_setting=to_camel_case(kind.batch_setting),
        batch_sizes=list(value.batch_sizes),
        metrics=[MetricBounds.of(n, b) for n, b in value.bounds.items() if b is not None],
    )
