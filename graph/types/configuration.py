"""Configuration types: what all share, the LLM row shape, and the paginated connection."""

from __future__ import annotations

from typing import TYPE_CHECKING, Annotated, Generic, TypeVar

import strawberry

from analysis.power import fraction_of_tdp, per_gpu_watts
from db import reads
from db.reads import AnyConfigurationRow, ConfigurationFilter, Table
from db.snapshot import model_file_name
from db.tables import ConfigurationRow
from graph.context import Context
from graph.types import common as d
from graph.types.common import OutputLengthDistribution
from graph.types.energy import ElectricityPrice, Estimates, GridCarbonIntensity, TokenEnergy
from graph.types.gpu import Gpu
from graph.types.ranking import ItlPercentile, ParetoScope
from graph.types.task import Task

if TYPE_CHECKING:
    from graph.types.model import Model
    from graph.types.source import Source

Info = strawberry.Info[Context, None]
T = TypeVar("T")


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


@strawberry.interface(
    description="What every measured configuration has, whatever its task: its GPUs, its "
    "measured power, and links to its model, GPU, task, source and upstream row."
)
class ServingConfiguration:
    id: strawberry.ID = strawberry.field(
        description="Identifier of this row in this LeadGreen release."
    )
    gpu_model: str = strawberry.field(description=d.GPU_MODEL)
    num_gpus: int = strawberry.field(description=d.NUM_GPUS)
    avg_power_watts: float = strawberry.field(description=d.AVG_POWER)
    power_per_gpu_watts: float = strawberry.field(description=d.PER_GPU_POWER)
    row: strawberry.Private[AnyConfigurationRow]

    @strawberry.field(description=d.FRACTION_OF_TDP)
    async def fraction_of_tdp(self, info: Info) -> float | None:
        gpu = await info.context.gpus.load(self.row.gpu)
        return fraction_of_tdp(self.power_per_gpu_watts, gpu.tdp_watts if gpu else None)

    @strawberry.field(description="The GPU type, with its reference facts.")
    async def gpu(self, info: Info) -> Gpu:
        row = await info.context.gpus.load(self.row.gpu)
        return Gpu.from_row(row) if row else Gpu.unknown(self.row.gpu)

    @strawberry.field(description="The model measured.")
    async def model(self, info: Info) -> Annotated[Model, strawberry.lazy("graph.types.model")]:
        from graph.types.model import Model

        return Model.from_row(await info.context.models.load(self.row.model_id))

    @strawberry.field(description="Hugging Face id of the model measured (upstream `model_id`).")
    async def model_id(self, info: Info) -> str:
        return (await info.context.models.load(self.row.model_id)).model_id

    @strawberry.field(description="The task (workload) measured.")
    async def task(self, info: Info) -> Task:
        return Task.from_row((await info.context.tasks())[self.row.task_id])

    @strawberry.field(
        description="Provenance and licence evidence of the dataset this row is part of."
    )
    async def source(self, info: Info) -> Annotated[Source, strawberry.lazy("graph.types.source")]:
        from graph.resolvers import current_source

        return await current_source(info.context, self.row.release_id)

    @strawberry.field(description="Where this row stands in the upstream files.")
    async def upstream(self, info: Info) -> UpstreamRow:
        model = await info.context.models.load(self.row.model_id)
        task = (await info.context.tasks())[self.row.task_id].name
        return UpstreamRow(
            task_file=f"tasks/{task}.json",
            task_row=self.row.task_row,
            model_file=model_file_name(model.model_id, task),
            model_row=self.row.model_row,
        )


@strawberry.type(
    description="One measured serving configuration of an LLM or MLLM task (lm-arena-chat, "
    "gpqa, sourcegraph-fim, image-chat, video-chat): a row of the upstream task file, with its "
    "parallelism and output-length histogram from the per-model file. Energies in joules, "
    "power in watts, latency in ms."
)
class Configuration(ServingConfiguration):
    max_num_seqs: int = strawberry.field(description=d.MAX_NUM_SEQS)
    tensor_parallel: int = strawberry.field(
        description="Setting: tensor-parallel degree. Upstream `tensor_parallel`."
    )
    data_parallel: int = strawberry.field(
        description="Setting: data-parallel degree. Upstream `data_parallel`."
    )
    expert_parallel: int = strawberry.field(
        description="Setting: expert-parallel degree (1 for dense models). Upstream "
        "`expert_parallel`."
    )
    parallel_notes: str = strawberry.field(
        description="Upstream `parallelization.notes`, e.g. how DP and EP are combined; "
        "often empty."
    )
    avg_batch_size: float = strawberry.field(description=d.AVG_BATCH)
    avg_output_len: float = strawberry.field(description=d.AVG_OUTPUT_LEN)
    energy_per_request_joules: float = strawberry.field(description=d.ENERGY_PER_REQUEST)
    energy_per_token_joules: float = strawberry.field(description=d.ENERGY_PER_TOKEN)
    median_itl_ms: float = strawberry.field(description=d.MEDIAN_ITL)
    p90_itl_ms: float = strawberry.field(description=d.P90_ITL)
    p95_itl_ms: float = strawberry.field(description=d.P95_ITL)
    p99_itl_ms: float = strawberry.field(description=d.P99_ITL)
    output_throughput_tokens_per_sec: float = strawberry.field(description=d.THROUGHPUT)
    output_length_distribution: OutputLengthDistribution = strawberry.field(
        description="Measured: output lengths of this configuration's requests, as a histogram."
    )

    @classmethod
    def from_row(cls, row: ConfigurationRow) -> Configuration:
        return cls(
            id=strawberry.ID(str(row.id)),
            gpu_model=row.gpu,
            num_gpus=row.num_gpus,
            max_num_seqs=row.max_num_seqs,
            tensor_parallel=row.tensor_parallel,
            data_parallel=row.data_parallel,
            expert_parallel=row.expert_parallel,
            parallel_notes=row.parallel_notes,
            avg_batch_size=row.avg_batch_size,
            avg_output_len=row.avg_output_len,
            avg_power_watts=row.avg_power_watts,
            energy_per_request_joules=row.energy_per_request_joules,
            energy_per_token_joules=row.energy_per_token_joules,
            median_itl_ms=row.median_itl_ms,
            p90_itl_ms=row.p90_itl_ms,
            p95_itl_ms=row.p95_itl_ms,
            p99_itl_ms=row.p99_itl_ms,
            output_throughput_tokens_per_sec=row.output_throughput_tokens_per_sec,
            output_length_distribution=OutputLengthDistribution(
                bins=row.length_bins, counts=row.length_counts
            ),
            power_per_gpu_watts=per_gpu_watts(row),
            row=row,
        )

    @strawberry.field(
        description="Whether this configuration is on a time–energy Pareto frontier of its task "
        "(ITL at `itlPercentile` against energy per token): no configuration of the same `scope` "
        "has both strictly lower ITL and strictly lower energy (ties survive). The default scope, "
        "MODEL, compares the model's own configurations on the task, as the leaderboard's model "
        "page draws its frontier."
    )
    async def is_pareto_optimal(
        self,
        info: Info,
        scope: Annotated[
            ParetoScope,
            strawberry.argument(description="Which configurations of the task it is compared to."),
        ] = ParetoScope.MODEL,
        itl_percentile: Annotated[
            ItlPercentile,
            strawberry.argument(description="The ITL percentile latency is measured by."),
        ] = ItlPercentile.P50,
    ) -> bool:
        from graph.answers.frontier import is_pareto_optimal

        return await is_pareto_optimal(info.context, self.row, scope, itl_percentile)

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
        return TokenEnergy.of(
            self.energy_per_token_joules,
            self.energy_per_request_joules,
            Estimates(grid_carbon_intensity, electricity_price_per_kwh),
        )


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
    table: strawberry.Private[Table]
    release_id: strawberry.Private[int]
    where: strawberry.Private[ConfigurationFilter]

    @strawberry.field(description="Number of configurations matching the filter, over all pages.")
    async def total_count(self, info: Info) -> int:
        return await info.context.read(
            reads.count_configurations,
            release_id=self.release_id,
            table=self.table,
            where=self.where,
        )

    @strawberry.field(description="The page's configurations, without cursors.")
    def nodes(self) -> list[T]:
        return [edge.node for edge in self.edges]
