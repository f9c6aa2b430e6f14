"""Root fields for statistics: fitted curves, distributions, facets, aggregates."""

from __future__ import annotations

from typing import Annotated, Any

import strawberry

from analysis.aggregate import DIFFUSION_METRICS, LLM_METRICS, aggregate
from analysis.curves import concurrency_curves
from analysis.distribution import Histogram, Scale, energy_per_response
from analysis.facets import facets
from db import reads
from db.catalog import Catalog, ConfigurationFilter
from db.tables import ConfigurationRow, DiffusionConfigurationRow, TaskRow
from graph.context import Context
from graph.errors import BadInput
from graph.resolvers import ConfigurationFilterInput, DiffusionConfigurationFilterInput
from graph.types.configuration import Configuration
from graph.types.fitted import FittedCurveSeries
from graph.types.model import Model
from graph.types.statistics import (
    BinScale,
    ConfigurationAggregate,
    EnergyPerResponseDistribution,
    MetricBounds,
    MetricSummary,
    TaskFacets,
)
from graph.types.task import Task

Info = strawberry.Info[Context, None]
ReleaseArgument = Annotated[
    int | None,
    strawberry.argument(
        description="Answer from this release (an id from `releases`); the latest by default."
    ),
]
MAX_BINS = 1000


@strawberry.type
class StatisticsQuery:
    """Mixed into the root Query."""

    @strawberry.field(
        description="Fitted concurrency curves of LLM and MLLM tasks: per model, GPU type, GPU "
        "count (and parallelism), the logistic fit of power, energy per token, median ITL and "
        "throughput against max_num_seqs, with its quality and estimates at any batch size. "
        "Series ordered by task, model slug, GPU, GPU count and parallelism."
    )
    async def fitted_curves(
        self,
        info: Info,
        task: Annotated[
            str | None,
            strawberry.argument(
                description="An LLM or MLLM task; by default lm-arena-chat; null for all five."
            ),
        ] = "lm-arena-chat",
        model: Annotated[
            str | None, strawberry.argument(description="Only this model (slug); null for all.")
        ] = None,
        gpu: Annotated[str | None, strawberry.argument(description="Only this GPU type.")] = None,
        num_gpus: Annotated[
            int | None, strawberry.argument(description="Only this many GPUs.")
        ] = None,
        release: ReleaseArgument = None,
    ) -> list[FittedCurveSeries]:
        catalog = await info.context.catalog(release)
        if task is not None:
            _known_task(catalog, task, diffusion=False)
        where = ConfigurationFilter(
            model_ids=_model_ids(catalog, model, None),
            gpu=gpu,
            num_gpus=_positive("numGpus", num_gpus),
            task=task,
        )
        return _series(catalog, _rows(catalog, ConfigurationRow, where))

    @strawberry.field(
        description="The distribution of energy per response of one LLM or MLLM configuration: "
        "its output-length histogram times its energy per token, in joules per response, with "
        "the mean and percentiles."
    )
    async def energy_per_response(
        self,
        info: Info,
        configuration_id: Annotated[
            strawberry.ID,
            strawberry.argument(description="The configuration (`Configuration.id`)."),
        ],
        scale: Annotated[
            BinScale, strawberry.argument(description="How the returned bins are spaced.")
        ] = BinScale.LINEAR,
        bin_count: Annotated[
            int | None,
            strawberry.argument(
                description=f"Number of bins, 1 to {MAX_BINS}; by default as many as measured. "
                "LINEAR without it returns the measured bins unchanged."
            ),
        ] = None,
        release: ReleaseArgument = None,
    ) -> EnergyPerResponseDistribution:
        if bin_count is not None and not 1 <= bin_count <= MAX_BINS:
            raise BadInput(f"binCount must be between 1 and {MAX_BINS}, got {bin_count}")
        catalog = await info.context.catalog(release)
        row = _configuration(catalog, configuration_id)
        lengths = Histogram(tuple(row.length_bins), tuple(row.length_counts))
        value = energy_per_response(
            lengths, row.energy_per_token_joules, scale=Scale[scale.name], bins=bin_count
        )
        return EnergyPerResponseDistribution.of(Configuration.of(catalog, row), value, scale)

    @strawberry.field(
        description="Facets for building a UI, per task (ordered by name): the GPUs, GPU counts "
        "and batch sizes present and the minimum and maximum of every metric."
    )
    async def facets(
        self,
        info: Info,
        task: Annotated[
            str | None, strawberry.argument(description="Only this task; null for every task.")
        ] = None,
        release: ReleaseArgument = None,
    ) -> list[TaskFacets]:
        catalog = await info.context.catalog(release)
        if task is not None:
            _known_task(catalog, task, diffusion=None)
        chosen = sorted(
            (t for t in catalog.tasks if task is None or t.name == task), key=lambda t: t.name
        )
        rows_by_task: dict[int, list[Any]] = {t.id: [] for t in chosen}
        for table, diffusion in ((ConfigurationRow, False), (DiffusionConfigurationRow, True)):
            if any(_is_diffusion(t) == diffusion for t in chosen):
                for row in _rows(catalog, table, ConfigurationFilter(task=task)):
                    rows_by_task[row.task_id].append(row)
        return [_facets(catalog, t, rows_by_task[t.id]) for t in chosen]

    @strawberry.field(
        description="Count, minimum, maximum, mean and median of each metric over the LLM and "
        "MLLM configurations a filter selects (the filter of `configurations`). A filter that "
        "selects nothing gives count 0 and null statistics."
    )
    async def configuration_aggregate(
        self,
        info: Info,
        filter: Annotated[
            ConfigurationFilterInput | None,
            strawberry.argument(description="Conditions every configuration counted meets."),
        ] = None,
        release: ReleaseArgument = None,
    ) -> ConfigurationAggregate:
        return await _aggregate(info.context, filter, release, diffusion=False)

    @strawberry.field(
        description="Count, minimum, maximum, mean and median of each metric over the diffusion "
        "configurations a filter selects (the filter of `diffusionConfigurations`)."
    )
    async def diffusion_configuration_aggregate(
        self,
        info: Info,
        filter: Annotated[
            DiffusionConfigurationFilterInput | None,
            strawberry.argument(description="Conditions every configuration counted meets."),
        ] = None,
        release: ReleaseArgument = None,
    ) -> ConfigurationAggregate:
        return await _aggregate(info.context, filter, release, diffusion=True)


def _configuration(catalog: Catalog, configuration_id: str) -> ConfigurationRow:
    """One LLM or MLLM configuration of the release, by id."""
    row = None
    if configuration_id.isascii() and configuration_id.isdigit() and len(configuration_id) < 19:
        row = catalog.llm_by_id.get(int(configuration_id))
    if row is None:
        raise BadInput(f"there is no LLM or MLLM configuration with id {configuration_id!r}")
    return row


def _is_diffusion(task: TaskRow) -> bool:
    return task.architecture == "diffusion"


def _known_task(catalog: Catalog, name: str, *, diffusion: bool | None) -> None:
    """Raise unless `name` is a task of the release (of the kind asked for, if any)."""
    found = catalog.task_by_name.get(name)
    if found is None:
        known = ", ".join(sorted(catalog.task_by_name))
        raise BadInput(f"unknown task {name!r}; the tasks are {known}")
    if diffusion is not None and _is_diffusion(found) != diffusion:
        kind = "a diffusion task" if _is_diffusion(found) else "an LLM or MLLM task"
        raise BadInput(f"task {name!r} is {kind}; this field takes the other kind")


def _positive(name: str, value: int | None) -> int | None:
    if value is not None and value < 1:
        raise BadInput(f"{name} must be at least 1, got {value}")
    return value


def _model_ids(catalog: Catalog, slug: str | None, model_id: str | None) -> list[int] | None:
    if slug is None and model_id is None:
        return None
    row = catalog.model(slug=slug, model_id=model_id)
    if row is None:
        given = " and ".join(
            f"{k} {v!r}" for k, v in (("slug", slug), ("modelId", model_id)) if v is not None
        )
        raise BadInput(f"there is no model with {given}")
    return [row.id]


def _rows(catalog: Catalog, table: reads.Table, where: ConfigurationFilter) -> list[Any]:
    """The rows of an answer; when there are none, say so if the GPU is unknown."""
    rows = catalog.configurations(table, where)
    if not rows and where.gpu is not None and where.gpu not in catalog.gpu_by_name:
        raise BadInput(f"unknown GPU {where.gpu!r}; `gpus` lists them")
    return rows


def _series(catalog: Catalog, rows: list[ConfigurationRow]) -> list[FittedCurveSeries]:
    groups: dict[tuple[str, str], list[ConfigurationRow]] = {}
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
    diffusion = _is_diffusion(task)
    value = facets(
        rows,
        batch_size=(lambda r: r.batch_size) if diffusion else (lambda r: r.max_num_seqs),
        metrics=DIFFUSION_METRICS if diffusion else LLM_METRICS,
    )
    return TaskFacets(
        task=Task.of(catalog, task.id),
        configurations=value.configurations,
        gpus=list(value.gpus),
        gpu_counts=list(value.gpu_counts),
        batch_size_setting="batchSize" if diffusion else "maxNumSeqs",
        batch_sizes=list(value.batch_sizes),
        metrics=[MetricBounds.of(n, b) for n, b in value.bounds.items() if b is not None],
    )


async def _aggregate(
    context: Context,
    given: ConfigurationFilterInput | DiffusionConfigurationFilterInput | None,
    release: int | None,
    *,
    diffusion: bool,
) -> ConfigurationAggregate:
    catalog = await context.catalog(release)
    where = _where(catalog, given, diffusion=diffusion)
    table: reads.Table = DiffusionConfigurationRow if diffusion else ConfigurationRow
    rows = _rows(catalog, table, where)
    value = aggregate(rows, DIFFUSION_METRICS if diffusion else LLM_METRICS)
    return ConfigurationAggregate(
        count=value.count,
        metrics=[MetricSummary.of(name, s) for name, s in value.metrics.items()],
    )


def _where(
    catalog: Catalog,
    given: ConfigurationFilterInput | DiffusionConfigurationFilterInput | None,
    *,
    diffusion: bool,
) -> ConfigurationFilter:
    """The db filter for `given`; an unknown model or task, or a number out of range, raises."""
    if given is None:
        return ConfigurationFilter()
    if given.task is not None:
        _known_task(catalog, given.task, diffusion=diffusion)
    at_least = getattr(given, "max_num_seqs_at_least", None)
    at_most = getattr(given, "max_num_seqs_at_most", None)
    max_itl = getattr(given, "max_median_itl_ms", None)
    if max_itl is not None and not max_itl >= 0:
        raise BadInput(f"maxMedianItlMs must be a number >= 0, got {max_itl}")
    return ConfigurationFilter(
        model_ids=_model_ids(catalog, given.model, given.model_id),
        gpu=given.gpu,
        num_gpus=_positive("numGpus", given.num_gpus),
        min_max_num_seqs=_positive("maxNumSeqsAtLeast", at_least),
        max_max_num_seqs=_positive("maxNumSeqsAtMost", at_most),
        task=given.task,
        max_median_itl_ms=max_itl,
    )
