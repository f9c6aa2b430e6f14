"""Root fields for rankings: the leaderboard, Pareto frontiers, comparisons."""

from __future__ import annotations

from typing import Annotated

import strawberry

from graph.answers.frontier import diffusion_frontiers, llm_frontiers
from graph.answers.leaderboard import (
    diffusion_leaderboard,
    gpu_comparisons,
    leaderboard,
    model_standings,
)
from graph.answers.selection import select
from graph.context import Context
from graph.types.ranking import (
    DiffusionConstraints,
    DiffusionLeaderboard,
    DiffusionParetoFrontier,
    GpuComparison,
    ItlPercentile,
    Leaderboard,
    LlmConstraints,
    ModelStanding,
    ParetoFrontier,
    ParetoScope,
)

Info = strawberry.Info[Context, None]

LlmTask = Annotated[
    str,
    strawberry.argument(
        description="An LLM or MLLM task: `lm-arena-chat`, `gpqa`, `sourcegraph-fim`, "
        "`image-chat` or `video-chat`."
    ),
]
DiffusionTask = Annotated[
    str, strawberry.argument(description="A diffusion task: `text-to-image` or `text-to-video`.")
]
Gpus = Annotated[
    list[str] | None,
    strawberry.argument(
        description='Only configurations on these GPU types, e.g. `["H100"]`; all when not given.'
    ),
]
Models = Annotated[
    list[str] | None,
    strawberry.argument(description="Only these models, by slug; every model when not given."),
]
Release = Annotated[
    int | None,
    strawberry.argument(
        description="Answer from this release (an id from `releases`); the latest by default."
    ),
]
LlmConstraintsArgument = Annotated[
    LlmConstraints | None,
    strawberry.argument(
        description="Latency deadline and percentile, energy budget, GPU counts, throughput floor "
        "and the energy ranked on; the leaderboard's defaults (median ITL within 500 ms, energy "
        "per token) when not given."
    ),
]
Percentile = Annotated[
    ItlPercentile, strawberry.argument(description="The ITL percentile latency is measured by.")
]
Scope = Annotated[
    ParetoScope,
    strawberry.argument(description="Which configurations are compared with each other."),
]


@strawberry.type
class RankingQuery:
    """Mixed into the root Query."""

    @strawberry.field(
        description="The ML.ENERGY leaderboard's main table for an LLM or MLLM task: per model, "
        "the lowest-energy configuration within a latency deadline and an energy budget on the "
        "chosen GPUs, sorted by ascending energy. With the defaults it is the leaderboard's."
    )
    async def leaderboard(
        self,
        info: Info,
        task: LlmTask = "lm-arena-chat",
        constraints: LlmConstraintsArgument = None,
        gpus: Gpus = None,
        models: Models = None,
        release: Release = None,
    ) -> Leaderboard:
        return await leaderboard(info.context, task, constraints, gpus, models, release)

    @strawberry.field(
        description="The ML.ENERGY leaderboard's main table for a diffusion task: per model, the "
        "lowest energy per image or video within a batch-latency deadline and an energy budget."
    )
    async def diffusion_leaderboard(
        self,
        info: Info,
        task: DiffusionTask = "text-to-image",
        constraints: Annotated[
            DiffusionConstraints | None,
            strawberry.argument(
                description="Batch-latency deadline, energy budget, GPU counts and throughput "
                "floor; the leaderboard's defaults (30 s for text-to-image, 300 s for "
                "text-to-video, no budget) when not given."
            ),
        ] = None,
        gpus: Gpus = None,
        models: Models = None,
        release: Release = None,
    ) -> DiffusionLeaderboard:
        return await diffusion_leaderboard(info.context, task, constraints, gpus, models, release)

    @strawberry.field(
        description="Time–energy Pareto frontiers of an LLM or MLLM task (ITL against energy per "
        "token): one for the whole task, or one per model, GPU type or both (`scope`)."
    )
    async def pareto_frontier(
        self,
        info: Info,
        task: LlmTask = "lm-arena-chat",
        scope: Scope = ParetoScope.GLOBAL,
        itl_percentile: Percentile = ItlPercentile.P50,
        gpus: Gpus = None,
        models: Models = None,
        release: Release = None,
    ) -> list[ParetoFrontier]:
        sel = await select(info.context, task, gpus, models, release, diffusion=False)
        return llm_frontiers(sel, scope, itl_percentile)

    @strawberry.field(
        description="Time–energy Pareto frontiers of a diffusion task (batch latency against "
        "energy per image or video): one for the whole task, or one per model, GPU type or both."
    )
    async def diffusion_pareto_frontier(
        self,
        info: Info,
        task: DiffusionTask = "text-to-image",
        scope: Scope = ParetoScope.GLOBAL,
        gpus: Gpus = None,
        models: Models = None,
        release: Release = None,
    ) -> list[DiffusionParetoFrontier]:
        sel = await select(info.context, task, gpus, models, release, diffusion=True)
        return diffusion_frontiers(sel, scope)

    @strawberry.field(
        description="Several models under the same constraints: each one's lowest-energy "
        "configuration and its ratio to the best of them, in the order the models are given."
    )
    async def compare_models(
        self,
        info: Info,
        models: Annotated[
            list[str], strawberry.argument(description="The models to compare, by slug.")
        ],
        task: LlmTask = "lm-arena-chat",
        constraints: LlmConstraintsArgument = None,
        gpus: Gpus = None,
        release: Release = None,
    ) -> list[ModelStanding]:
        return await model_standings(info.context, task, models, constraints, gpus, release)

    @strawberry.field(
        description="Per model, its lowest-energy configuration on a baseline GPU type and on a "
        "candidate one under the same constraints, and the energy the candidate saves."
    )
    async def compare_gpus(
        self,
        info: Info,
        task: LlmTask = "lm-arena-chat",
        baseline: Annotated[
            str, strawberry.argument(description="The baseline GPU type.")
        ] = "H100",
        candidate: Annotated[
            str, strawberry.argument(description="The GPU type compared with the baseline.")
        ] = "B200",
        models: Annotated[
            list[str] | None,
            strawberry.argument(
                description="These models, by slug, in this order; by default every model "
                "measured on either GPU type on the task, in upstream order."
            ),
        ] = None,
        constraints: LlmConstraintsArgument = None,
        release: Release = None,
    ) -> list[GpuComparison]:
        return await gpu_comparisons(
            info.context, task, baseline, candidate, models, constraints, release
        )
