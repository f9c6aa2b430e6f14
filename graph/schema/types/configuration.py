"""Configuration types: what all share, the LLM row shape, and the paginated connection."""

from __future__ import annotations

from typing import TYPE_CHECKING, Annotated, Any, Generic, TypeVar, cast

import strawberry

from analysis.power import fraction_of_tdp, per_gpu_watts
from db import fields
from db.catalog import Catalog
from db.kinds import LLM, kind_of_row
from db.rows import LlmRow, Row
from db.snapshot import model_file_name
from graph.schema.context import Context
from graph.schema.inputs import ElectricityPrice, GridCarbonIntensity, ItlPercentile, ParetoScope
from graph.schema.types import common as metric
from graph.schema.types import late
from graph.schema.types.common import Figures, OutputLengthDistribution
from graph.schema.types.energy import Estimates, TokenEnergy
from graph.schema.types.gpu import Gpu
from graph.schema.types.node import Node, global_id
from graph.schema.types.source import Source
from graph.schema.types.task import Task
from graph.schema.types.timeline import ConfigurationVersion, versions

if TYPE_CHECKING:
    from graph.schema.types.model import Model

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


LazyModel = Annotated["Model", strawberry.lazy("graph.schema.types.model")]
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
    model: LazyModel = strawberry.field(description="The model measured.")
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
        "model": late.make("Model", catalog, model),
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
    description="One measured serving configuration of an LLM or MLLM task (lm-arena-chat, "
    "gpqa, sourcegraph-fim, image-chat, video-chat): a row of the upstream task file, with its "
    "parallelism and output-length histogram from the per-model file. Energies in joules, "
    "power in watts, latency in ms."
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
