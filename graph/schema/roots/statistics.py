"""Root fields for statistics: fitted curves, distributions, facets, aggregates."""

from __future__ import annotations

from typing import Annotated

import strawberry

from db.kinds import DIFFUSION, LLM
from graph.schema.answers import statistics as answers
from graph.schema.context import Context
from graph.schema.inputs import (
    ConfigurationFilterInput,
    DiffusionConfigurationFilterInput,
    ReleaseArgument,
)
from graph.schema.types.fitted import FittedCurveSeries
from graph.schema.types.statistics import (
    BinScale,
    ConfigurationAggregate,
    EnergyPerResponseDistribution,
    TaskFacets,
)

Info = strawberry.Info[Context, None]


@strawberry.type
class StatisticsFields:
    """Root fields: fitted curves, distributions, facets, aggregates."""

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
        return await answers.fitted_curves(info.context, task, model, gpu, num_gpus, release)

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
                description=f"Number of bins, 1 to {answers.MAX_BINS}; by default as many as "
                "measured. LINEAR without it returns the measured bins unchanged."
            ),
        ] = None,
        release: ReleaseArgument = None,
    ) -> EnergyPerResponseDistribution:
        return await answers.energy_per_response(
            info.context, configuration_id, scale, bin_count, release
        )

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
        return await answers.facets(info.context, task, release)

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
        return await answers.aggregate(info.context, LLM, filter, release)

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
        return await answers.aggregate(info.context, DIFFUSION, filter, release)
