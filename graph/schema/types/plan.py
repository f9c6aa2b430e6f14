"""Deployment plans: a measured configuration sized to a demand, and the answer that ranks them."""

from __future__ import annotations

from typing import TYPE_CHECKING, Annotated

import strawberry

from graph.schema.inputs import PlanObjective
from graph.schema.types.task import Task

if TYPE_CHECKING:
    from graph.schema.types.model import ServingConfiguration

LazyServing = Annotated["ServingConfiguration", strawberry.lazy("graph.schema.types.model")]

LOWER = (
    "the lower bound of power: every output at the configuration's measured efficiency "
    "(powerWatts.lower)"
)
UPPER = (
    "the upper bound of power: every replica drawing its measured average power, all day "
    "(powerWatts.upper)"
)


@strawberry.type(
    description="A derived figure between two bounds of a plan's power; the field holding it "
    "says which figure, its unit and its formula."
)
class PlanBounds:
    lower: float = strawberry.field(description=f"The figure at {LOWER}.")
    upper: float = strawberry.field(description=f"The figure at {UPPER}.")


ESTIMATE = (
    "Derived by LeadGreen: an estimate from the fitted concurrency curves, not a measurement: "
    "the figure at the partial-load point, where each replica serves its share of the demand "
    "(outputsPerSecond ÷ replicas) at the batch size partialLoadBatchSize and draws the fitted "
    "average power there (the answer's `method` gives the formula). Never in place of the "
    "bounds, and only between them"
)


@strawberry.type(
    description="A derived figure between two bounds of a plan's power, and LeadGreen's "
    "estimate of it at the partial-load point where the fitted concurrency curves give one; the "
    "field holding it says which figure, its unit and its formula."
)
class PlanEstimatedBounds:
    lower: float = strawberry.field(description=f"The figure at {LOWER}.")
    upper: float = strawberry.field(description=f"The figure at {UPPER}.")
    estimate: float | None = strawberry.field(
        description=f"{ESTIMATE}; null when there is none (the plan's `unavailable` says why)."
    )


@strawberry.type(description="A figure of a plan that is null, and why.")
class PlanUnavailable:
    field: str = strawberry.field(description="The plan's field that is null, e.g. `costPerDay`.")
    reason: str = strawberry.field(
        description="Why, e.g. `the site gives no GPU-hour price for B200`."
    )


@strawberry.type(
    description="A plan against the baseline's plan for the same demand: the baseline's figure "
    "− this plan's, positive when this plan needs less."
)
class PlanSavings:
    energy_per_day_kwh: PlanBounds = strawberry.field(
        description="Derived by LeadGreen: the baseline's energyPerDayKwh − this plan's, in kWh "
        "a day, lower bound from lower bound and upper from upper (not bounds of the saving)."
    )
    energy_saved_fraction: PlanBounds | None = strawberry.field(
        description="Derived by LeadGreen: 1 − this plan's energyPerDayKwh ÷ the baseline's, "
        "lower bound by lower and upper by upper (0.4: 40 % less energy); null when a bound of "
        "the baseline's is 0."
    )
    gpus: int = strawberry.field(
        description="Derived by LeadGreen: the baseline's gpuCount − this plan's, in GPUs."
    )
    carbon_per_day_kg: PlanBounds | None = strawberry.field(
        description="Derived by LeadGreen: the baseline's carbonPerDayKg − this plan's, in kg "
        "CO₂e a day, bound by bound; null without the site's carbon intensity."
    )
    cost_per_day: float | None = strawberry.field(
        description="Derived by LeadGreen: the baseline's costPerDay − this plan's, in the "
        "site's currency a day; null unless both have a cost."
    )


@strawberry.type(
    description="One measured configuration sized to serve the demand: how many replicas, "
    "GPUs, and what they draw. Every figure but the configuration's own is derived by "
    "LeadGreen from the measurement and the caller's demand and site, as its description says."
)
class DeploymentPlan:
    rank: int = strawberry.field(
        description="Position among the plans, from 1, by the objective's upper bound, then its "
        "lower bound, then the configuration's upstream order (plans without the objective's "
        "figure last)."
    )
    configuration: LazyServing = strawberry.field(
        description="The measured configuration one replica runs (an LLM or MLLM "
        "`Configuration`, or an `ImageConfiguration` or `VideoConfiguration`)."
    )
    pareto_optimal: bool = strawberry.field(
        description="Derived by LeadGreen: no other plan of the answer needs at most as many "
        "GPUs and at most as much energy a day (upper bound), and less of one. Equal plans "
        "are both optimal."
    )
    latency: float = strawberry.field(
        description="Measured: the configuration's figure the latency limit applies to: ITL at "
        "`latency.percentile`, in ms (LLM and MLLM tasks), or batch latency, in s (diffusion "
        "tasks)."
    )
    outputs_per_second: float = strawberry.field(
        description="Derived by LeadGreen: the demand D this plan serves, in output tokens per "
        "second (requestsPerSecond × outputsPerRequest, or outputTokensPerSecond as given) or "
        "images or videos per second."
    )
    requests_per_second: float | None = strawberry.field(
        description="Derived by LeadGreen: requests per second (outputsPerSecond ÷ "
        "outputsPerRequest, or as given); null when a request has no output tokens to count by."
    )
    outputs_per_request: float = strawberry.field(
        description="Output tokens per request: the demand's `outputTokensPerRequest`, else the "
        "configuration's measured avgOutputLen; 1 image or video for diffusion tasks."
    )
    throughput_per_replica: float = strawberry.field(
        description="Measured: one replica's throughput, in output tokens (or images, videos) "
        "per second, all its GPUs together."
    )
    replicas: int = strawberry.field(
        description="Derived by LeadGreen: ceil(outputsPerSecond ÷ (utilization × "
        "throughputPerReplica)), the replicas of the configuration that serve the demand (a "
        "quotient within a billionth of a whole number is that number: rounding adds none)."
    )
    gpu_count: int = strawberry.field(
        description="Derived by LeadGreen: replicas × the configuration's numGpus, in GPUs."
    )
    partial_load_batch_size: float | None = strawberry.field(
        description="Derived by LeadGreen: an estimate from the fitted concurrency curves, not a "
        "measurement: the batch size (maxNumSeqs, not a whole number) at which the logistic fit "
        "of the throughput of the configuration's series (its model, GPU type, GPU count and "
        "parallelism: `fittedCurves`) equals each replica's share of the demand, "
        "outputsPerSecond ÷ replicas. Null where the series has no reliable fit of throughput "
        "and power, where the point lies outside the measured batch sizes (no extrapolation) or "
        "the power there outside powerWatts' bounds, and for diffusion tasks (no fitted "
        "curves): `unavailable` says why."
    )
    power_watts: PlanEstimatedBounds = strawberry.field(
        description="Derived by LeadGreen, in watts (GPUs only): lower = outputsPerSecond × the "
        "configuration's energy per token (or per image, video), never above upper; upper = "
        "replicas × its avgPowerWatts (what is provisioned); estimate = replicas × the "
        "series' fitted avgPowerWatts at partialLoadBatchSize."
    )
    energy_per_day_kwh: PlanEstimatedBounds = strawberry.field(
        description="Derived by LeadGreen: powerWatts × 24 h ÷ 1,000 × the site's PUE, in kWh a "
        "day, each bound and the estimate."
    )
    energy_per_request_joules: float = strawberry.field(
        description="Derived by LeadGreen: the configuration's energy per token × "
        "outputsPerRequest × the site's PUE, in joules per request (per image or video for "
        "diffusion tasks): each output at the measured efficiency, as powerWatts.lower."
    )
    carbon_per_day_kg: PlanBounds | None = strawberry.field(
        description="Derived by LeadGreen: energyPerDayKwh × the site's "
        "carbonIntensityGramsPerKwh ÷ 1,000, in kg CO₂e a day, each bound; null without an "
        "intensity (`unavailable` says so)."
    )
    electricity_cost_per_day: PlanBounds | None = strawberry.field(
        description="Derived by LeadGreen: energyPerDayKwh × the site's electricityPricePerKwh, "
        "in its currency a day, each bound; null without a price."
    )
    gpu_cost_per_day: float | None = strawberry.field(
        description="Derived by LeadGreen: gpuCount × 24 h × the site's GPU-hour price of the "
        "configuration's GPU type, in its currency a day; null without one."
    )
    cost_per_day: float | None = strawberry.field(
        description="Derived by LeadGreen: what is provisioned costs, in the site's currency a "
        "day: gpuCostPerDay + electricityCostPerDay.upper, of the parts the site prices; null "
        "when it prices neither, or prices GPU-hours but not this plan's GPU type."
    )
    savings_vs_baseline: PlanSavings | None = strawberry.field(
        description="Derived by LeadGreen: this plan against the baseline's plan; null without "
        "a `baseline`."
    )
    unavailable: list[PlanUnavailable] = strawberry.field(
        description="The plan's null figures, each with the reason; empty when it has them all."
    )


@strawberry.type(description="A latency limit as applied.")
class PlanLatencyLimit:
    field: str = strawberry.field(
        description="The configuration field the limit applies to, e.g. `medianItlMs`."
    )
    max: float = strawberry.field(description="The largest value allowed, inclusive.")
    unit: str = strawberry.field(description="Its unit: `ms` or `s`.")


@strawberry.type(description="Configurations a limit kept out of the plans.")
class PlanExclusion:
    limit: str = strawberry.field(
        description="The limit: `latency.maxItlMs`, `latency.maxBatchLatencySeconds`, or "
        "`throughput` (a configuration measured at no throughput serves no demand)."
    )
    configurations: int = strawberry.field(
        description="How many of the candidates it kept out (one kept out by two limits "
        "counts for both)."
    )
    reason: str = strawberry.field(description="What they fail, e.g. `medianItlMs above 50 ms`.")


@strawberry.type(
    description="Deployment plans for a demand on a task: every measured configuration within "
    "the limits sized to serve it, ranked by the objective; with what the answer assumed and "
    "how it computed every figure. Nothing in a plan is measured at the plan's scale: it is "
    "the measurement of one replica, multiplied."
)
class DeploymentPlans:
    task: Task = strawberry.field(description="The task planned for.")
    objective: PlanObjective = strawberry.field(description="What the plans are ranked by.")
    demand_unit: str = strawberry.field(
        description="The unit of the plans' outputsPerSecond, e.g. `output tokens per second`."
    )
    utilization: float = strawberry.field(
        description="The share of a replica's measured throughput a plan uses, 0 < u <= 1."
    )
    pue: float = strawberry.field(description="The site's PUE applied to every energy figure.")
    latency_limit: PlanLatencyLimit | None = strawberry.field(
        description="The latency limit applied; null for none."
    )
    candidates: int = strawberry.field(
        description="Configurations of the task on the models and GPU types asked for, before "
        "the limits."
    )
    total_count: int = strawberry.field(
        description="Plans within the limits, over all pages (`plans` holds the first `first`)."
    )
    excluded: list[PlanExclusion] = strawberry.field(
        description="Each limit that kept configurations out, with how many; empty when none did."
    )
    reason: str | None = strawberry.field(
        description="Why there is no plan, when there is none: which limit excluded how many, or "
        "that no configuration matches the models and GPU types asked for; null otherwise."
    )
    plans: list[DeploymentPlan] = strawberry.field(
        description="The plans, ranked; empty when no configuration meets the limits."
    )
    baseline: DeploymentPlan | None = strawberry.field(
        description="The baseline configuration's plan for the same demand and site, whatever "
        "the limits and the models and GPU types asked for: its rank and paretoOptimal among "
        "the plans when it is one of them, else 0 and false; null without a `baseline`."
    )
    assumptions: list[str] = strawberry.field(
        description="What the answer assumed, in words: the demand, the load, the site, and "
        "what the measurements do not cover."
    )
    method: list[str] = strawberry.field(
        description="How every derived figure was computed, one formula a line, in the "
        "configuration fields' names."
    )
