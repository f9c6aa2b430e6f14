"""The Model type and its measured configurations (every task's, LLM and diffusion), with their
paginated connection: a configuration links to its model and a model lists its configurations,
so the two families are one module (each constructs the other)."""

from __future__ import annotations

from collections.abc import Callable
from typing import Annotated, Any, Generic, TypeVar, cast

import strawberry

from analysis.curves import concurrency_curves
from analysis.power import Powered, fraction_of_tdp, per_gpu_watts, power_by_gpu
from db import fields
from db.catalog import Catalog
from db.kinds import DIFFUSION, LLM, Kind, kind_of_row
from db.rows import DiffusionRow, LlmRow, Row
from db.snapshot import model_file_name
from db.tables import ModelRow
from graph.errors import BadInput
from graph.schema.context import Context, known_gpu, known_task
from graph.schema.inputs import (
    DEFAULT_TASK,
    ElectricityPrice,
    GridCarbonIntensity,
    ItlPercentile,
    ModelTaskArgument,
    ParetoScope,
)
from graph.schema.types import common as metric
from graph.schema.types.common import Figures, OutputLengthDistribution, Spread
from graph.schema.types.energy import Estimates, OutputEnergy, TokenEnergy
from graph.schema.types.gpu import Gpu
from graph.schema.types.measured import CurvePoint, CurveSeries, GpuPower, ModelTask
from graph.schema.types.node import Node, entity_keys, global_id
from graph.schema.types.source import Source
from graph.schema.types.task import Task
from graph.schema.types.timeline import ConfigurationVersion, versions

T = TypeVar("T")
V = TypeVar("V")


@strawberry.type(description="Where a configuration's figures stand in the upstream files.")
class UpstreamRow:
    task_file: str = strawberry.field(description="Upstream task file, relative to the data root.")
    task_row: int = strawberry.field(
        description="Position (from 0) of the row in the task file's `configurations`."
    )
    model_file: str = strawberry.field(
        description="Upstream per-model file holding the row's parallelism and histogram."
    )
    model_row: int = strawberry.field(
        description="Position (from 0) of the row in the model file's `configurations`."
    )


# The fields of every task row, and those of LLM and MLLM rows only (db.fields).
SERVED = Figures(fields.EVERY_ROW)
LLM_FIGURES = Figures(fields.LLM_ROWS, within=fields.EVERY_ROW)


@strawberry.interface(
    description="What every measured configuration has, whatever its task: its GPUs, its "
    "measured power, and links to its model, GPU, task, source and upstream row."
)
@SERVED.declare(before="power_per_gpu_watts")
class ServingConfiguration(Node):
    """Built once per release and row (see `serving`): every field is a plain value, so that
    a table of thousands of rows completes without a resolver call per field."""

    id: strawberry.ID = strawberry.field(
        description="Global id, the same in every release and database where this "
        "configuration appears: `Configuration:` and its key (task, model, GPU type and count, "
        "the run's settings, and its place among runs alike in all of these), e.g. "
        "`Configuration:lm-arena-chat:Qwen/Qwen3-8B:H100x1:max_num_seqs=128:0`."
    )
    gpu_model: str = strawberry.field(description=metric.GPU_MODEL)
    power_per_gpu_watts: float = strawberry.field(description=metric.PER_GPU_POWER)
    fraction_of_tdp: float | None = strawberry.field(description=metric.FRACTION_OF_TDP)
    gpu: Gpu = strawberry.field(description="The GPU type, with its reference facts.")
    model: Model = strawberry.field(description="The model measured.")
    model_id: str = strawberry.field(
        description="Hugging Face id of the model measured (upstream `model_id`)."
    )
    task: Task = strawberry.field(description="The task (workload) measured.")
    source: Source = strawberry.field(
        description="Provenance and licence evidence of the dataset this row is part of."
    )
    upstream: UpstreamRow = strawberry.field(
        description="Where this row stands in the upstream files."
    )
    row: strawberry.Private[Row]
    catalog: strawberry.Private[Catalog]

    @strawberry.field(
        description="This configuration in every release that has it (the same `id`), in the "
        "order of their data, each with what changed from the version before: the history of "
        "its corrections."
    )
    async def history(self, info: strawberry.Info[Context, None]) -> list[ConfigurationVersion]:
        return await versions(info.context, kind_of_row(self.row), self.row.key)


def exact_output_length(row: LlmRow) -> float:
    """The average output length a row's energies imply: energy per request is energy per
    token times average output length, by definition (upstream computes it so)."""
    if not row.energy_per_token_joules:
        return 0.0
    return row.energy_per_request_joules / row.energy_per_token_joules


def serving(row: Row, catalog: Catalog) -> dict[str, Any]:
    """The fields every configuration type has, for its constructor."""
    gpu = Gpu.of(catalog, row.gpu)
    model = catalog.model_by_id[row.model_id]
    task = catalog.task_by_id[row.task_id].name
    per_gpu = per_gpu_watts(row)
    values = {
        "id": global_id("Configuration", row.key),
        "gpu_model": row.gpu,
        "power_per_gpu_watts": per_gpu,
        "fraction_of_tdp": fraction_of_tdp(per_gpu, gpu.tdp_watts),
        "gpu": gpu,
        "model": Model.of(catalog, model),
        "model_id": model.model_id,
        "task": Task.of(catalog, row.task_id),
        "source": Source.of(catalog),
        "upstream": UpstreamRow(
            task_file=f"tasks/{task}.json",
            task_row=row.task_row,
            model_file=model_file_name(model.model_id, task),
            model_row=row.model_row,
        ),
        "row": row,
        "catalog": catalog,
    }
    return SERVED.add(values, row)


@strawberry.type(
    directives=entity_keys("id"),
    description="One measured serving configuration of an LLM or MLLM task (lm-arena-chat, "
    "gpqa, sourcegraph-fim, image-chat, video-chat): a row of the upstream task file, with its "
    "parallelism and output-length histogram from the per-model file. Energies in joules, "
    "power in watts, latency in ms.",
)
@LLM_FIGURES.declare(before="derived_fields")
class Configuration(ServingConfiguration):
    derived_fields: list[str] = strawberry.field(
        description="The fields of this configuration LeadGreen derived, exactly, because its "
        "upstream row lacks them: `avgOutputLen` (energyPerRequestJoules ÷ "
        "energyPerTokenJoules, the identity that defines energy per request) for rows published "
        "before 2025-12-17. Empty for rows that state every field."
    )

    @classmethod
    def from_row(cls, row: LlmRow, catalog: Catalog) -> Configuration:
        values = LLM_FIGURES.add(serving(row, catalog), row)
        derived: list[str] = []
        if values["avg_output_len"] is None:
            values["avg_output_len"] = exact_output_length(row)
            derived.append("avgOutputLen")
        return cls(**values, derived_fields=derived)

    @strawberry.field(
        description="Measured: output lengths of this configuration's requests, as a histogram."
    )
    def output_length_distribution(self) -> OutputLengthDistribution:
        row = cast(LlmRow, self.row)
        return OutputLengthDistribution(bins=row.length_bins or [], counts=row.length_counts or [])

    @classmethod
    def of(cls, catalog: Catalog, row: LlmRow) -> Configuration:
        """The configuration of this row (one object per release and row, while it is used)."""
        return catalog.object((cls, row.id), lambda: cls.from_row(row, catalog))

    @strawberry.field(
        description="Whether this configuration is on a time–energy Pareto frontier of its task "
        "(ITL at `itlPercentile` against energy per token): no configuration of the same `scope` "
        "has both strictly lower ITL and strictly lower energy (ties survive). The default scope, "
        "MODEL, compares the model's own configurations on the task, as the leaderboard's model "
        "page draws its frontier."
    )
    def is_pareto_optimal(
        self,
        scope: Annotated[
            ParetoScope,
            strawberry.argument(description="Which configurations of the task it is compared to."),
        ] = ParetoScope.MODEL,
        itl_percentile: Annotated[
            ItlPercentile,
            strawberry.argument(description="The ITL percentile latency is measured by."),
        ] = ItlPercentile.P50,
    ) -> bool:
        return self.catalog.pareto(LLM, self.row, str(scope.value), str(itl_percentile.value))

    @strawberry.field(
        description="This configuration's energy in joules, watt-hours and kilowatt-hours: per "
        "token, per 1,000 and 1,000,000 tokens and per response, and tokens per joule; with "
        "estimates of emissions and cost from the figures the caller gives."
    )
    def energy(
        self,
        grid_carbon_intensity: GridCarbonIntensity = None,
        electricity_price_per_kwh: ElectricityPrice = None,
    ) -> TokenEnergy:
        row = cast(LlmRow, self.row)
        return TokenEnergy.of(
            row.energy_per_token_joules,
            row.energy_per_request_joules,
            Estimates(grid_carbon_intensity, electricity_price_per_kwh),
        )


# The fields of both variants' rows, and those of each variant's alone (db.fields).
DIFFUSION_FIGURES = Figures(fields.DIFFUSION_ROWS, within=fields.EVERY_ROW)
IMAGE_FIGURES = Figures((fields.IMAGE,), within=fields.DIFFUSION_ROWS)
VIDEO_FIGURES = Figures((fields.VIDEO,), within=fields.DIFFUSION_ROWS)


@strawberry.interface(
    description="A measured configuration of a diffusion task: a batch of images or videos "
    "generated with a number of denoising steps on one or more GPUs (Ulysses and ring "
    "sequence parallelism)."
)
@DIFFUSION_FIGURES.declare()
class DiffusionConfiguration(ServingConfiguration):
    @strawberry.field(
        description="Whether this configuration is on a time–energy Pareto frontier of its task "
        "(batch latency against energy per image or video): no configuration of the same `scope` "
        "has both strictly lower latency and strictly lower energy (ties survive). The default "
        "scope, MODEL, compares the model's own configurations on the task."
    )
    def is_pareto_optimal(
        self,
        scope: Annotated[
            ParetoScope,
            strawberry.argument(description="Which configurations of the task it is compared to."),
        ] = ParetoScope.MODEL,
    ) -> bool:
        return self.catalog.pareto(DIFFUSION, self.row, str(scope.value))

    @strawberry.field(
        description="This configuration's energy per image or video and per 1,000 of them, in "
        "joules, watt-hours and kilowatt-hours, with estimates of emissions and cost from the "
        "figures the caller gives."
    )
    def energy(
        self,
        grid_carbon_intensity: GridCarbonIntensity = None,
        electricity_price_per_kwh: ElectricityPrice = None,
    ) -> OutputEnergy:
        return OutputEnergy.of(
            cast(DiffusionRow, self.row).energy_per_output_joules,
            Estimates(grid_carbon_intensity, electricity_price_per_kwh),
        )


@strawberry.type(description="A measured text-to-image configuration. Energy in joules.")
@IMAGE_FIGURES.declare()
class ImageConfiguration(DiffusionConfiguration):
    pass


@strawberry.type(description="A measured text-to-video configuration. Energy in joules.")
@VIDEO_FIGURES.declare()
class VideoConfiguration(DiffusionConfiguration):
    pass


def diffusion_of(catalog: Catalog, row: DiffusionRow) -> DiffusionConfiguration:
    """The configuration of this row (one object per release and row)."""
    return catalog.object(
        (DiffusionConfiguration, row.id), lambda: diffusion_from_row(row, catalog)
    )


def diffusion_from_row(row: DiffusionRow, catalog: Catalog) -> DiffusionConfiguration:
    common = DIFFUSION_FIGURES.add(serving(row, catalog), row)
    if row.output == fields.VIDEO:
        return VideoConfiguration(**VIDEO_FIGURES.add(common, row))
    return ImageConfiguration(**IMAGE_FIGURES.add(common, row))


# A configuration row's GraphQL object, by the kind of its task: one entry per kind.
_MAKERS: dict[Kind, Callable[[Catalog, Any], Any]] = {
    LLM: Configuration.of,
    DIFFUSION: diffusion_of,
}


def configuration(catalog: Catalog, kind: Kind, row: Any) -> Any:
    """The object of this row (one per release and row)."""
    return _MAKERS[kind](catalog, row)


@strawberry.type(
    directives=entity_keys("id"),
    description="An AI model the leaderboard measured: every field of its LeadGreen "
    "v1 index entry, its upstream facts and its measurements.",
)
class Model(Node):
    slug: str = strawberry.field(
        description="URL-safe identifier (v1 index `slug`; derived from the nickname when "
        "the index does not list the model)."
    )
    name: str = strawberry.field(description="Display name (v1 index `name`; upstream nickname).")
    model_id: str = strawberry.field(description="Hugging Face model id (upstream `model_id`).")
    params_b: float = strawberry.field(
        description="Total parameters, in billions (v1 `params_b`; upstream "
        "`total_params_billions`)."
    )
    active_params_b: float = strawberry.field(
        description="Parameters active per token, in billions (v1 `active_params_b`; upstream "
        "`activated_params_billions`); equal to paramsB for dense models."
    )
    architecture: str | None = strawberry.field(
        description="Model architecture, from upstream index.json (e.g. `MoE`)."
    )
    weight_precision: str | None = strawberry.field(
        description="Weight precision, from upstream index.json (e.g. `bfloat16`, `fp8`)."
    )
    gpus: list[str] | None = strawberry.field(
        description="GPU types the v1 index lists for the model; null when the index does not "
        "list it."
    )
    url: str | None = strawberry.field(
        description="v1 per-model document URL (v1 `url`); null when the index does not list it."
    )
    page: str | None = strawberry.field(
        description="v1 web page URL (v1 `page`); null when the index does not list it."
    )
    in_index: bool = strawberry.field(description="Whether the v1 index lists this model.")
    row: strawberry.Private[ModelRow]
    catalog: strawberry.Private[Catalog]

    @classmethod
    def from_row(cls, row: ModelRow, catalog: Catalog) -> Model:
        return cls(
            id=global_id("Model", row.model_id),
            slug=row.slug,
            name=row.name,
            model_id=row.model_id,
            params_b=row.params_b,
            active_params_b=row.active_params_b,
            architecture=row.architecture,
            weight_precision=row.weight_precision,
            gpus=row.gpus,
            url=row.url,
            page=row.page,
            in_index=row.manifest_position is not None,
            row=row,
            catalog=catalog,
        )

    @classmethod
    def of(cls, catalog: Catalog, row: ModelRow) -> Model:
        """The model of this row (one object per release and model)."""
        return catalog.once((cls, row.id), lambda: cls.from_row(row, catalog))

    @classmethod
    def of_id(cls, catalog: Catalog, model_row_id: int) -> Model:
        """The model of this row id (a configuration's `model_id`)."""
        return cls.of(catalog, catalog.model_by_id[model_row_id])

    def _derived(self, name: str, task: str | None, make: Callable[[], list[V]]) -> list[V]:
        """`make()` once per release for a task the release has (or every task); BadInput for
        a task it does not have, remembering nothing (a client may ask for any name)."""
        if task is not None:
            known_task(self.catalog, task, "task")
        return self.catalog.once((Model, name, self.row.id, task), make)

    def _rows(self, kind: Kind, task: str | None) -> list[Any]:
        rows = self.catalog.of_model(kind, self.row.id)
        if task is None:
            return list(rows)
        task_id = self.catalog.task_by_name[task].id
        return [r for r in rows if r.task_id == task_id]

    def _configurations(self, task: str | None) -> list[Configuration]:
        return self._derived(
            "configurations",
            task,
            lambda: [Configuration.of(self.catalog, r) for r in self._rows(LLM, task)],
        )

    def _diffusion_configurations(self, task: str | None) -> list[DiffusionConfiguration]:
        return self._derived(
            "diffusion_configurations",
            task,
            lambda: [diffusion_of(self.catalog, r) for r in self._rows(DIFFUSION, task)],
        )

    @strawberry.field(
        description="The model's measured configurations on an LLM or MLLM task, in upstream order."
    )
    def configurations(
        self,
        gpu: Annotated[str | None, strawberry.argument(description="Only this GPU type.")] = None,
        num_gpus: Annotated[
            int | None, strawberry.argument(description="Only this many GPUs.")
        ] = None,
        max_median_itl_ms: Annotated[
            float | None,
            strawberry.argument(
                description="Only configurations whose median ITL is at most this, in ms."
            ),
        ] = None,
        task: ModelTaskArgument = DEFAULT_TASK,
    ) -> list[Configuration]:
        if max_median_itl_ms is not None and not max_median_itl_ms >= 0:
            raise BadInput(f"maxMedianItlMs must be a number >= 0, got {max_median_itl_ms}")
        if gpu is not None:
            known_gpu(self.catalog, gpu, "gpu")
        every = self._configurations(task)
        if gpu is None and num_gpus is None and max_median_itl_ms is None:
            return every
        return [
            c
            for c in every
            if (gpu is None or c.gpu_model == gpu)
            and (num_gpus is None or c.row.num_gpus == num_gpus)
            and (max_median_itl_ms is None or c.row.median_itl_ms <= max_median_itl_ms)
        ]

    @strawberry.field(
        description="Concurrency curves: one series per (task, GPU type, number of "
        "GPUs, parallelism), points ordered by max_num_seqs."
    )
    def curves(self, task: ModelTaskArgument = DEFAULT_TASK) -> list[CurveSeries]:
        return self._derived("curves", task, lambda: self._curves(task))

    def _curves(self, task: str | None) -> list[CurveSeries]:
        tasks = self.catalog.task_by_id
        by_task: dict[int, list[LlmRow]] = {}
        for r in self._rows(LLM, task):
            by_task.setdefault(r.task_id, []).append(r)
        return [
            CurveSeries(
                task=tasks[task_id].name,
                gpu_model=s.key.gpu,
                num_gpus=s.key.num_gpus,
                tensor_parallel=s.key.tensor_parallel,
                data_parallel=s.key.data_parallel,
                expert_parallel=s.key.expert_parallel,
                points=[CurvePoint.from_row(p) for p in s.points],
            )
            for task_id, members in sorted(by_task.items(), key=lambda i: tasks[i[0]].name)
            for s in concurrency_curves(members)
        ]

    @strawberry.field(
        description="Measured GPU power per GPU type over the model's configurations."
    )
    def power(self, task: ModelTaskArgument = DEFAULT_TASK) -> list[GpuPower]:
        return self._derived("power", task, lambda: self._power(task))

    def _power(self, task: str | None) -> list[GpuPower]:
        rows: list[Powered] = [
            *self._rows(LLM, task),
            *self._rows(DIFFUSION, task),
        ]
        gpus = {name: Gpu.of(self.catalog, name) for name in {r.gpu for r in rows}}
        return [
            GpuPower(
                gpu_model=p.gpu,
                configurations=p.configurations,
                total_watts=Spread.from_value(p.total_watts),
                per_gpu_watts=Spread.from_value(p.per_gpu_watts),
                fraction_of_tdp=Spread.from_value(p.fraction_of_tdp) if p.fraction_of_tdp else None,
                gpu=gpus[p.gpu],
            )
            for p in power_by_gpu(rows, {name: gpu.tdp_watts for name, gpu in gpus.items()})
        ]

    @strawberry.field(
        description="The model's measured configurations on a diffusion task (text-to-image or "
        "text-to-video), in upstream order."
    )
    def diffusion_configurations(
        self,
        gpu: Annotated[str | None, strawberry.argument(description="Only this GPU type.")] = None,
        num_gpus: Annotated[
            int | None, strawberry.argument(description="Only this many GPUs.")
        ] = None,
        task: Annotated[
            str | None, strawberry.argument(description="Only this task; null for both.")
        ] = None,
    ) -> list[DiffusionConfiguration]:
        if gpu is not None:
            known_gpu(self.catalog, gpu, "gpu")
        return [
            c
            for c in self._diffusion_configurations(task)
            if (gpu is None or c.row.gpu == gpu)
            and (num_gpus is None or c.row.num_gpus == num_gpus)
        ]

    @strawberry.field(
        description="The tasks the model was measured on, each with its output-length histogram."
    )
    def tasks(self) -> list[ModelTask]:
        return self.catalog.once((Model, "tasks", self.row.id), self._tasks)

    def _tasks(self) -> list[ModelTask]:
        tasks = self.catalog.task_by_id
        return [
            ModelTask(
                task=tasks[row.task_id].name,
                file=row.file,
                output_length_distribution=OutputLengthDistribution(
                    bins=row.length_bins, counts=row.length_counts
                )
                if row.length_bins is not None and row.length_counts is not None
                else None,
            )
            for row in self.catalog.tasks_of_model.get(self.row.id, ())
        ]


@strawberry.type(description="Information to fetch the next page.")
class PageInfo:
    has_next_page: bool = strawberry.field(description="Whether more configurations follow.")
    end_cursor: str | None = strawberry.field(
        description="Cursor of the last configuration on this page; pass it as `after`."
    )


@strawberry.type(description="A configuration and its cursor.")
class Edge(Generic[T]):
    cursor: str = strawberry.field(description="Opaque position of this configuration.")
    node: T = strawberry.field(description="The configuration.")


@strawberry.type(description="A page of configurations.")
class Connection(Generic[T]):
    edges: list[Edge[T]] = strawberry.field(description="The page, with cursors.")
    page_info: PageInfo = strawberry.field(description="Where this page ends.")
    total_count: int = strawberry.field(
        description="Number of configurations matching the filter, over all pages."
    )

    @strawberry.field(description="The page's configurations, without cursors.")
    def nodes(self) -> list[T]:
        return [edge.node for edge in self.edges]
