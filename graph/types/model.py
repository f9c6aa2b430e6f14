"""The Model type (an AI model and its measurements), its concurrency curves and measured power."""

from __future__ import annotations

from typing import Annotated, TypeVar

import strawberry

from analysis.curves import concurrency_curves
from analysis.power import Powered, power_by_gpu
from db.tables import ConfigurationRow, DiffusionConfigurationRow, ModelRow, TaskRow
from graph.context import Context
from graph.errors import BadInput
from graph.types import common as d
from graph.types.common import OutputLengthDistribution, Spread
from graph.types.configuration import Configuration
from graph.types.diffusion import DiffusionConfiguration, diffusion_from_row
from graph.types.gpu import Gpu

Info = strawberry.Info[Context, None]


DEFAULT_TASK = "lm-arena-chat"
TaskArgument = Annotated[
    str | None,
    strawberry.argument(
        description="Only this task; by default lm-arena-chat (the workload of the LeadGreen v1 "
        "index); null for every task the model was measured on."
    ),
]
R = TypeVar("R", ConfigurationRow, DiffusionConfigurationRow)


def _of_task(rows: list[R], task: str | None, tasks: dict[int, TaskRow]) -> list[R]:
    return rows if task is None else [r for r in rows if tasks[r.task_id].name == task]


@strawberry.type(
    description="One point of a concurrency curve: a configuration's figures at its max_num_seqs."
)
class CurvePoint:
    max_num_seqs: int = strawberry.field(description=d.MAX_NUM_SEQS)
    energy_per_token_joules: float = strawberry.field(description=d.ENERGY_PER_TOKEN)
    energy_per_request_joules: float = strawberry.field(description=d.ENERGY_PER_REQUEST)
    median_itl_ms: float = strawberry.field(description=d.MEDIAN_ITL)
    p99_itl_ms: float = strawberry.field(description=d.P99_ITL)
    output_throughput_tokens_per_sec: float = strawberry.field(description=d.THROUGHPUT)
    avg_power_watts: float = strawberry.field(description=d.AVG_POWER)
    avg_batch_size: float = strawberry.field(description=d.AVG_BATCH)
    configuration_id: strawberry.ID = strawberry.field(
        description="The configuration this point is (its `id`)."
    )

    @classmethod
    def from_row(cls, row: ConfigurationRow) -> CurvePoint:
        return cls(
            max_num_seqs=row.max_num_seqs,
            energy_per_token_joules=row.energy_per_token_joules,
            energy_per_request_joules=row.energy_per_request_joules,
            median_itl_ms=row.median_itl_ms,
            p99_itl_ms=row.p99_itl_ms,
            output_throughput_tokens_per_sec=row.output_throughput_tokens_per_sec,
            avg_power_watts=row.avg_power_watts,
            avg_batch_size=row.avg_batch_size,
            configuration_id=strawberry.ID(str(row.id)),
        )


@strawberry.type(
    description="A concurrency curve: how a model's energy, latency, throughput and "
    "power change with the batch size (max_num_seqs) at one GPU type, GPU count and "
    "parallelism. Repeated runs of one setting appear as separate points."
)
class CurveSeries:
    task: str = strawberry.field(description="Task the points were measured on.")
    gpu_model: str = strawberry.field(description=d.GPU_MODEL)
    num_gpus: int = strawberry.field(description=d.NUM_GPUS)
    tensor_parallel: int = strawberry.field(description="Tensor-parallel degree.")
    data_parallel: int = strawberry.field(description="Data-parallel degree.")
    expert_parallel: int = strawberry.field(description="Expert-parallel degree.")
    points: list[CurvePoint] = strawberry.field(
        description="Points in ascending max_num_seqs (then in upstream order)."
    )


@strawberry.type(description="Measured GPU power of a model's configurations on one GPU type.")
class GpuPower:
    gpu_model: str = strawberry.field(description=d.GPU_MODEL)
    configurations: int = strawberry.field(description="Number of configurations summarised.")
    total_watts: Spread = strawberry.field(
        description="Measured average power of each configuration, all its GPUs together, in "
        "watts (upstream `avg_power_watts`)."
    )
    per_gpu_watts: Spread = strawberry.field(
        description="Derived by LeadGreen: average power per GPU (avgPowerWatts ÷ numGpus), "
        "in watts."
    )
    fraction_of_tdp: Spread | None = strawberry.field(
        description="Derived by LeadGreen: per-GPU power ÷ the GPU's TDP; null when the TDP "
        "is unknown."
    )
    gpu: Gpu = strawberry.field(description="The GPU type, with its reference facts.")


@strawberry.type(
    description="A model measured on a task, with its output-length histogram over all its runs."
)
class ModelTask:
    task: str = strawberry.field(description="Task identifier.")
    file: str = strawberry.field(description="Upstream per-model file, relative to the data root.")
    output_length_distribution: OutputLengthDistribution | None = strawberry.field(
        description="Measured: output lengths over all of the model's runs on the task; null "
        "for diffusion tasks, whose outputs are images or videos."
    )


@strawberry.type(
    description="An AI model the leaderboard measured: every field of its LeadGreen "
    "v1 index entry, its upstream facts and its measurements."
)
class Model:
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

    @classmethod
    def from_row(cls, row: ModelRow) -> Model:
        return cls(
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
        )

    async def _rows(self, info: Info, task: str | None) -> list[ConfigurationRow]:
        return _of_task(
            await info.context.configurations.load(self.row.id), task, await info.context.tasks()
        )

    async def _diffusion_rows(
        self, info: Info, task: str | None
    ) -> list[DiffusionConfigurationRow]:
        return _of_task(
            await info.context.diffusion_configurations.load(self.row.id),
            task,
            await info.context.tasks(),
        )

    @strawberry.field(
        description="The model's measured configurations on an LLM or MLLM task, in upstream order."
    )
    async def configurations(
        self,
        info: Info,
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
        task: TaskArgument = DEFAULT_TASK,
    ) -> list[Configuration]:
        if max_median_itl_ms is not None and not max_median_itl_ms >= 0:
            raise BadInput(f"maxMedianItlMs must be a number >= 0, got {max_median_itl_ms}")
        return [
            Configuration.from_row(r)
            for r in await self._rows(info, task)
            if (gpu is None or r.gpu == gpu)
            and (num_gpus is None or r.num_gpus == num_gpus)
            and (max_median_itl_ms is None or r.median_itl_ms <= max_median_itl_ms)
        ]

    @strawberry.field(
        description="Concurrency curves: one series per (task, GPU type, number of "
        "GPUs, parallelism), points ordered by max_num_seqs."
    )
    async def curves(
        self,
        info: Info,
        task: TaskArgument = DEFAULT_TASK,
    ) -> list[CurveSeries]:
        rows = await self._rows(info, task)
        tasks = await info.context.tasks()
        by_task: dict[int, list[ConfigurationRow]] = {}
        for r in rows:
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
    async def power(
        self,
        info: Info,
        task: TaskArgument = DEFAULT_TASK,
    ) -> list[GpuPower]:
        rows: list[Powered] = [
            *await self._rows(info, task),
            *await self._diffusion_rows(info, task),
        ]
        gpus = {name: await info.context.gpus.load(name) for name in {r.gpu for r in rows}}
        tdp = {name: gpu.tdp_watts if gpu else None for name, gpu in gpus.items()}
        return [
            GpuPower(
                gpu_model=p.gpu,
                configurations=p.configurations,
                total_watts=Spread.from_value(p.total_watts),
                per_gpu_watts=Spread.from_value(p.per_gpu_watts),
                fraction_of_tdp=Spread.from_value(p.fraction_of_tdp) if p.fraction_of_tdp else None,
                gpu=Gpu.from_row(row) if (row := gpus[p.gpu]) else Gpu.unknown(p.gpu),
            )
            for p in power_by_gpu(rows, tdp)
        ]

    @strawberry.field(
        description="The model's measured configurations on a diffusion task (text-to-image or "
        "text-to-video), in upstream order."
    )
    async def diffusion_configurations(
        self,
        info: Info,
        gpu: Annotated[str | None, strawberry.argument(description="Only this GPU type.")] = None,
        num_gpus: Annotated[
            int | None, strawberry.argument(description="Only this many GPUs.")
        ] = None,
        task: Annotated[
            str | None, strawberry.argument(description="Only this task; null for both.")
        ] = None,
    ) -> list[DiffusionConfiguration]:
        return [
            diffusion_from_row(r)
            for r in await self._diffusion_rows(info, task)
            if (gpu is None or r.gpu == gpu) and (num_gpus is None or r.num_gpus == num_gpus)
        ]

    @strawberry.field(
        description="The tasks the model was measured on, each with its output-length histogram."
    )
    async def tasks(self, info: Info) -> list[ModelTask]:
        tasks = await info.context.tasks()
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
            for row in await info.context.model_tasks.load(self.row.id)
        ]
