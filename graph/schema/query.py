"""The root Query type: every root field, each reading its arguments and calling one function
of graph.schema.answers (grouped here as the schema lists them)."""

from __future__ import annotations

from typing import Annotated

import strawberry

from db.kinds import DIFFUSION, LLM
from graph.schema.answers import history, listings, plan, ranking, statistics
from graph.schema.answers import impact as impacts
from graph.schema.context import Context
from graph.schema.inputs import (
    FILTER,
    ORDER,
    AfterArgument,
    ConfigurationFilterInput,
    ConfigurationOrder,
    DemandInput,
    DiffusionConfigurationFilterInput,
    DiffusionConfigurationOrder,
    DiffusionConstraints,
    DiffusionTaskArgument,
    FirstArgument,
    GpusArgument,
    ItlPercentile,
    LatencyInput,
    LlmConstraintsArgument,
    LlmTaskArgument,
    ModelsArgument,
    ParetoScope,
    PercentileArgument,
    PlanObjective,
    ReleaseArgument,
    ScopeArgument,
    SiteInput,
)
from graph.schema.types.changes import ReleaseChanges
from graph.schema.types.fitted import FittedCurveSeries
from graph.schema.types.gpu import Gpu
from graph.schema.types.impact import GridZones, RequestImpact
from graph.schema.types.model import Configuration, Connection, DiffusionConfiguration, Model
from graph.schema.types.node import Node
from graph.schema.types.plan import DeploymentPlans
from graph.schema.types.ranking import (
    DiffusionLeaderboard,
    DiffusionParetoFrontier,
    GpuComparison,
    Leaderboard,
    ModelStanding,
    ParetoFrontier,
)
from graph.schema.types.release import Release
from graph.schema.types.source import LeadGreenIndex, Source
from graph.schema.types.statistics import (
    BinScale,
    ConfigurationAggregate,
    EnergyPerResponseDistribution,
    TaskFacets,
)
from graph.schema.types.task import Task
from graph.schema.types.timeline import TimelineEntry

Info = strawberry.Info[Context, None]


@strawberry.type(
    description="Measured energy of LLM inference (ML.ENERGY Leaderboard v3.0), "
    "with its provenance. Answers come from the release with the newest data unless a "
    "field's `release` argument names another."
)
class Query:
    # Rankings: leaderboards, Pareto frontiers, comparisons.

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
        return await ranking.frontiers(
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
        return await ranking.frontiers(info.context, DIFFUSION, task, scope, gpus, models, release)

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

    # The deployment planner.

    @strawberry.field(
        description="What to deploy for a demand: every measured configuration of the task "
        "within the latency limit, sized to serve the demand (replicas = ceil(demand ÷ "
        "(utilization × throughput))), with its GPUs, its power and energy a day between two "
        "bounds (every output at the measured efficiency; every replica at its measured power), "
        "and its carbon and cost when the site gives the figures; ranked by the objective, the "
        "Pareto-optimal plans in GPUs and energy marked. Derived by LeadGreen from the "
        "measurements; the answer says what it assumed and how it computed each figure. A "
        "demand no configuration can meet is an empty list with the reason."
    )
    async def deployment_plan(
        self,
        info: Info,
        task: Annotated[
            str,
            strawberry.argument(
                description="The task: an LLM or MLLM task (e.g. `lm-arena-chat`) or a "
                "diffusion task (`text-to-image`, `text-to-video`)."
            ),
        ] = "lm-arena-chat",
        models: ModelsArgument = None,
        gpus: GpusArgument = None,
        *,
        demand: Annotated[
            DemandInput,
            strawberry.argument(
                description="The traffic to serve: exactly one rate (requests, output tokens, "
                "images or videos per second)."
            ),
        ],
        latency: Annotated[
            LatencyInput | None,
            strawberry.argument(
                description="The latency limit, inclusive; no limit when absent or null."
            ),
        ] = None,
        utilization: Annotated[
            float | None,
            strawberry.argument(
                description="The share of a replica's measured throughput a plan may use, "
                "0 < u <= 1 (0.8 leaves a fifth of each replica spare); 1 when null."
            ),
        ] = 1.0,
        objective: Annotated[
            PlanObjective | None,
            strawberry.argument(description="What the plans are ranked by; ENERGY when null."),
        ] = PlanObjective.ENERGY,
        site: Annotated[
            SiteInput | None,
            strawberry.argument(
                description="PUE, carbon intensity and prices of the site; PUE 1 and no "
                "carbon or cost when not given."
            ),
        ] = None,
        baseline: Annotated[
            strawberry.ID | None,
            strawberry.argument(
                description="A configuration id of the task: every plan's savings are stated "
                "against the plan that uses it."
            ),
        ] = None,
        first: Annotated[
            int | None,
            strawberry.argument(
                description="How many plans to return, from the first: 10 when not given, at "
                "most the connections' largest page (the server's `max_page_size`); `totalCount` "
                "says how many there are."
            ),
        ] = 10,
        release: ReleaseArgument = None,
    ) -> DeploymentPlans:
        return await plan.deployment_plan(
            info.context,
            plan.Asked(
                task=task,
                models=models,
                gpus=gpus,
                demand=demand,
                latency=latency,
                utilization=1.0 if utilization is None else utilization,
                objective=objective or PlanObjective.ENERGY,
                site=site,
                baseline=baseline,
                first=first,
                release=release,
            ),
        )

    # Per-request impact, and the grid zones a site can name.

    @strawberry.field(
        description="The grid zones a site can name (`site.zone`), each with its carbon "
        "intensity in gCO₂e per kWh (derived: EcoLogits' kgCO₂eq per kWh × 1,000), which of its "
        "figures are the world's standing in, and where the figures come from: the source, "
        "the year as far as stated, the licences and the package version. Not per release: "
        "the figures are the installed ecologits package's."
    )
    def grid_zones(self) -> GridZones:
        return impacts.grid_zones()

    @strawberry.field(
        description="The energy of one request, from the measurements, as EcoLogits reports it "
        "from a regression: a request of `outputTokens` output tokens (one image or video for "
        "diffusion tasks) on each measured configuration of the model (or the one "
        "`configuration` names) within the latency limit, as the least, median and most over "
        "them, in J and Wh; and its carbon when the site gives an intensity or a zone. Derived "
        "by LeadGreen; the answer says what it assumed and how it computed each figure. No "
        "configuration within the limit is null figures with the reason."
    )
    async def request_impact(
        self,
        info: Info,
        model: Annotated[
            str, strawberry.argument(description="The model, by slug (`models` lists them).")
        ],
        task: Annotated[
            str,
            strawberry.argument(
                description="The task: an LLM or MLLM task (e.g. `lm-arena-chat`) or a "
                "diffusion task (`text-to-image`, `text-to-video`)."
            ),
        ] = "lm-arena-chat",
        configuration: Annotated[
            strawberry.ID | None,
            strawberry.argument(
                description="One configuration id of the model on the task: its figure alone "
                "(min = median = max); every configuration of the model when not given."
            ),
        ] = None,
        output_tokens: Annotated[
            int | None,
            strawberry.argument(
                description="Output tokens the request generates, > 0 (LLM and MLLM tasks); "
                "each configuration's measured average output length (avgOutputLen) when not "
                "given. Diffusion tasks take none: a request is one image or video."
            ),
        ] = None,
        latency: Annotated[
            LatencyInput | None,
            strawberry.argument(
                description="The latency limit, inclusive; no limit when absent or null."
            ),
        ] = None,
        site: Annotated[
            SiteInput | None,
            strawberry.argument(
                description="PUE and carbon intensity (or zone) of the site; PUE 1 and no "
                "carbon when not given. Its prices are not used."
            ),
        ] = None,
        release: ReleaseArgument = None,
    ) -> RequestImpact:
        return await impacts.request_impact(
            info.context,
            impacts.Asked(
                task=task,
                model=model,
                configuration=configuration,
                output_tokens=output_tokens,
                latency=latency,
                site=site,
                release=release,
            ),
        )

    # Statistics: fitted curves, distributions, facets, aggregates.

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
        return await statistics.fitted_curves(info.context, task, model, gpu, num_gpus, release)

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
                description=f"Number of bins, 1 to {statistics.MAX_BINS}; by default as many as "
                "measured. LINEAR without it returns the measured bins unchanged."
            ),
        ] = None,
        release: ReleaseArgument = None,
    ) -> EnergyPerResponseDistribution:
        return await statistics.energy_per_response(
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
        return await statistics.facets(info.context, task, release)

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
        return await statistics.aggregate(info.context, LLM, filter, release)

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
        return await statistics.aggregate(info.context, DIFFUSION, filter, release)

    # What a release lists: provenance, releases and changes, models, GPUs, tasks, and
    # pages of configurations.

    @strawberry.field(description="Provenance and licence evidence of the data.")
    async def source(self, info: Info, release: ReleaseArgument = None) -> Source:
        return await listings.source(info.context, release)

    @strawberry.field(description="The LeadGreen v1 index, rebuilt from the database.")
    async def index(self, info: Info, release: ReleaseArgument = None) -> LeadGreenIndex:
        return await listings.index(info.context, release)

    @strawberry.field(
        description="Every ingested release, newest data first; the first is served by default."
    )
    async def releases(self, info: Info) -> list[Release]:
        return await listings.releases(info.context)

    @strawberry.field(
        description="What changed from one release to another: files, tasks, models, row-shape "
        "fields, and configurations added, removed or changed (with old and new values)."
    )
    async def changes(
        self,
        info: Info,
        from_release: Annotated[
            int, strawberry.argument(name="from", description="The earlier release's id.")
        ],
        to_release: Annotated[
            int, strawberry.argument(name="to", description="The later release's id.")
        ],
        task: Annotated[
            str | None, strawberry.argument(description="Only this task's changes.")
        ] = None,
    ) -> ReleaseChanges:
        return await listings.changes(info.context, from_release, to_release, task)

    @strawberry.field(
        description="One model, by slug or by Hugging Face id (give exactly one); "
        "null when there is no such model."
    )
    async def model(
        self,
        info: Info,
        slug: Annotated[
            str | None, strawberry.argument(description="Model slug, e.g. `qwen-3-8b`.")
        ] = None,
        model_id: Annotated[
            str | None, strawberry.argument(description="Hugging Face id, e.g. `Qwen/Qwen3-8B`.")
        ] = None,
        release: ReleaseArgument = None,
    ) -> Model | None:
        return await listings.model(info.context, slug, model_id, release)

    @strawberry.field(description="Every model of the release, by slug.")
    async def models(self, info: Info, release: ReleaseArgument = None) -> list[Model]:
        return await listings.models(info.context, release)

    @strawberry.field(description="Every GPU type measured on, with reference facts.")
    async def gpus(self, info: Info) -> list[Gpu]:
        return await listings.gpus(info.context)

    @strawberry.field(description="The benchmark tasks of the release.")
    async def tasks(self, info: Info, release: ReleaseArgument = None) -> list[Task]:
        return await listings.tasks(info.context, release)

    @strawberry.field(
        description="Configurations matching a filter, ordered and paginated with cursors."
    )
    async def configurations(
        self,
        info: Info,
        filter: Annotated[ConfigurationFilterInput | None, FILTER] = None,
        order_by: Annotated[ConfigurationOrder | None, ORDER] = None,
        first: FirstArgument = None,
        after: AfterArgument = None,
        release: ReleaseArgument = None,
    ) -> Connection[Configuration]:
        return await listings.configurations(
            info.context, LLM, filter, order_by, first, after, release
        )

    @strawberry.field(
        description="Diffusion configurations (text-to-image, text-to-video) matching a filter, "
        "ordered and paginated with cursors."
    )
    async def diffusion_configurations(
        self,
        info: Info,
        filter: Annotated[DiffusionConfigurationFilterInput | None, FILTER] = None,
        order_by: Annotated[DiffusionConfigurationOrder | None, ORDER] = None,
        first: FirstArgument = None,
        after: AfterArgument = None,
        release: ReleaseArgument = None,
    ) -> Connection[DiffusionConfiguration]:
        return await listings.configurations(
            info.context, DIFFUSION, filter, order_by, first, after, release
        )

    # Across releases: the timeline, and any object by its global id (Relay).

    @strawberry.field(
        description="Every release in the order of its data (its date, then its commit's), "
        "each with what changed from the one before: the history of corrections a number has "
        "been through."
    )
    async def timeline(self, info: Info) -> list[TimelineEntry]:
        return await history.timeline(info.context)

    @strawberry.field(
        description="The object with this global id (any `Node`'s `id`), or null. A "
        "configuration comes from the release served by default, or else from the newest "
        "release that has it."
    )
    async def node(
        self,
        info: Info,
        id: Annotated[strawberry.ID, strawberry.argument(description="A global id.")],
    ) -> Node | None:
        return await history.node(info.context, id)

    @strawberry.field(
        description=f"The objects with these global ids, in order (null where there is none); "
        f"at most {history.MAX_NODES} at once."
    )
    async def nodes(
        self,
        info: Info,
        ids: Annotated[list[strawberry.ID], strawberry.argument(description="Global ids.")],
    ) -> list[Node | None]:
        return await history.nodes(info.context, ids)
