"""The Model type: an AI model of a release, and its measurements from the release's catalog."""

from __future__ import annotations

from collections.abc import Callable
from typing import Annotated, Any, TypeVar

import strawberry

from analysis.curves import concurrency_curves
from analysis.power import Powered, power_by_gpu
from db.catalog import Catalog
from db.kinds import DIFFUSION, LLM, Kind
from db.rows import LlmRow
from db.tables import ModelRow
from graph.errors import BadInput
from graph.schema.context import known_gpu, known_task
from graph.schema.inputs import DEFAULT_TASK, ModelTaskArgument
from graph.schema.types import late
from graph.schema.types.common import OutputLengthDistribution, Spread
from graph.schema.types.configuration import Configuration
from graph.schema.types.diffusion import DiffusionConfiguration, diffusion_of
from graph.schema.types.gpu import Gpu
from graph.schema.types.measured import CurvePoint, CurveSeries, GpuPower, ModelTask
from graph.schema.types.node import Node, global_id

V = TypeVar("V")


@strawberry.type(
    description="An AI model the leaderboard measured: every field of its LeadGreen "
    "v1 index entry, its upstream facts and its measurements."
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


late.provide("Model", Model.of)
