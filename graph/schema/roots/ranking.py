"""Root fields for rankings: the leaderboard, Pareto frontiers, comparisons."""

from __future__ import annotations

from typing import Annotated

import strawberry

from db.kinds import DIFFUSION, LLM
from graph.schema.answers import frontier
from graph.schema.answers import leaderboard as ranking
from graph.schema.context import Context
from graph.schema.inputs import (
    DiffusionConstraints,
    DiffusionTaskArgument,
    GpusArgument,
    ItlPercentile,
    LlmConstraintsArgument,
    LlmTaskArgument,
    ModelsArgument,
    ParetoScope,
    PercentileArgument,
    ReleaseArgument,
    ScopeArgument,
)
from graph.schema.types.ranking import (
    DiffusionLeaderboard,
    DiffusionParetoFrontier,
    GpuComparison,
    Leaderboard,
    ModelStanding,
    ParetoFrontier,
)

Info = strawberry.Info[Context, None]


@strawberry.type
class RankingFields:
    """Root fields: leaderboards, Pareto frontiers, comparisons."""

    @strawberry.field(
        description="The ML.ENERGY leaderboard's main table for an LLM or MLLM task: per model, "
        "the lowest-energy configuration within a latency deadline and an energy budget on the "
        "chosen GPUs, sorted by ascending energy. With the defaults it is the leaderboard's."
    )
    async def leaderboard(
        self,
        info: Info,
        task: LlmTaskArgument = "lm-arena-chat",
        constraints: LlmConstraintsArgument = None,
        gpus: GpusArgument = None,
        models: ModelsArgument = None,
        release: ReleaseArgument = None,
    ) -> Leaderboard:
        return await ranking.leaderboard(info.context, task, constraints, gpus, models, release)

    @strawberry.field(
        description="The ML.ENERGY leaderboard's main table for a diffusion task: per model, the "
        "lowest energy per image or video within a batch-latency deadline and an energy budget."
    )
    async def diffusion_leaderboard(
        self,
        info: Info,
        task: DiffusionTaskArgument = "text-to-image",
        constraints: Annotated[
            DiffusionConstraints | None,
            strawberry.argument(
                description="Batch-latency deadline, energy budget, GPU counts and throughput "
                "floor; the leaderboard's defaults (30 s for text-to-image, 300 s for "
                "text-to-video, no budget) when not given."
            ),
        ] = None,
        gpus: GpusArgument = None,
        models: ModelsArgument = None,
        release: ReleaseArgument = None,
    ) -> DiffusionLeaderboard:
        return await ranking.diffusion_leaderboard(
            info.context, task, constraints, gpus, models, release
        )

    @strawberry.field(
        description="Time–energy Pareto frontiers of an LLM or MLLM task (ITL against energy per "
        "token): one for the whole task, or one per model, GPU type or both (`scope`)."
    )
    async def pareto_frontier(
        self,
        info: Info,
        task: LlmTaskArgument = "lm-arena-chat",
        scope: ScopeArgument = ParetoScope.GLOBAL,
        itl_percentile: PercentileArgument = ItlPercentile.P50,
        gpus: GpusArgument = None,
        models: ModelsArgument = None,
        release: ReleaseArgument = None,
    ) -> list[ParetoFrontier]:
        return await frontier.frontiers(
            info.context, LLM, task, scope, gpus, models, release, itl_percentile
        )

    @strawberry.field(
        description="Time–energy Pareto frontiers of a diffusion task (batch latency against "
        "energy per image or video): one for the whole task, or one per model, GPU type or both."
    )
    async def diffusion_pareto_frontier(
        self,
        info: Info,
        task: DiffusionTaskArgument = "text-to-image",
        scope: ScopeArgument = ParetoScope.GLOBAL,
        gpus: GpusArgument = None,
        models: ModelsArgument = None,
        release: ReleaseArgument = None,
    ) -> list[DiffusionParetoFrontier]:
        return await frontier.frontiers(info.context, DIFFUSION, task, scope, gpus, models, release)

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
        task: LlmTaskArgument = "lm-arena-chat",
        constraints: LlmConstraintsArgument = None,
        gpus: GpusArgument = None,
        release: ReleaseArgument = None,
    ) -> list[ModelStanding]:
        return await ranking.model_standings(info.context, task, models, constraints, gpus, release)

    @strawberry.field(
        description="Per model, its lowest-energy configuration on a baseline GPU type and on a "
        "candidate one under the same constraints, and the energy the candidate saves."
    )
    async def compare_gpus(
        self,
        info: Info,
        task: LlmTaskArgument = "lm-arena-chat",
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
        release: ReleaseArgument = None,
    ) -> list[GpuComparison]:
        return await ranking.gpu_comparisons(
            info.context, task, baseline, candidate, models, constraints, release
        )
