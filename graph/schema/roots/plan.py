"""Root field for the deployment planner."""

from __future__ import annotations

from typing import Annotated

import strawberry

from graph.schema.answers import plan as planner
from graph.schema.context import Context
from graph.schema.inputs import (
    DemandInput,
    GpusArgument,
    LatencyInput,
    ModelsArgument,
    PlanObjective,
    ReleaseArgument,
    SiteInput,
)
from graph.schema.types.plan import DeploymentPlans

Info = strawberry.Info[Context, None]


@strawberry.type
class PlanFields:
    """Root field: deployment plans."""

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
        return await planner.deployment_plan(
            info.context,
            planner.Asked(
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
