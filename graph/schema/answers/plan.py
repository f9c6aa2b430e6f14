"""Deployment plans: the arguments checked, the task's rows as analysis.plan sees them (by
their kind's roles: throughput, energy, power, latency), and its plans as GraphQL types."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass

from strawberry.utils.str_converters import to_camel_case

from analysis import plan as planning
from analysis.partial_load import LoadCurves, PartialLoad, partial_load
from analysis.units import kilowatt_hours
from db import derived, fields, grid
from db.catalog import Catalog
from db.kinds import DIFFUSION, LLM, Kind
from db.rows import LlmRow, Row
from db.tables import TaskRow
from graph.errors import BadInput
from graph.schema.answers.filters import check_at_least, page_size
from graph.schema.answers.selection import Selection, select
from graph.schema.context import Context, known_gpu, known_task, known_zone, unknown
from graph.schema.inputs import DemandInput, LatencyInput, PlanObjective, SiteInput
from graph.schema.types.model import configuration, exact_output_length
from graph.schema.types.node import parse_id
from graph.schema.types.plan import (
    DeploymentPlan,
    DeploymentPlans,
    PlanBounds,
    PlanEstimatedBounds,
    PlanExclusion,
    PlanLatencyLimit,
    PlanSavings,
    PlanUnavailable,
)
from graph.schema.types.task import Task

DEFAULT_FIRST = 10
NOT_MEASURED = (
    "The measurements cover the GPUs alone, at steady state: idle power, the split between "
    "prefill and decode, GPU frequency scaling and the rest of the server (CPUs, memory, "
    "network, cooling: the PUE alone stands for them) are not measured."
)
# What a task's rows generate, by variant (db.fields), and the demand's rates for each.
OUTPUTS = {fields.TEXT: "output tokens", fields.IMAGE: "images", fields.VIDEO: "videos"}
RATES = {
    "requests_per_second": fields.TEXT,
    "output_tokens_per_second": fields.TEXT,
    "images_per_second": fields.IMAGE,
    "videos_per_second": fields.VIDEO,
}
# The latency limit each kind takes (LatencyInput's field).
LATENCY_LIMITS = {LLM: "max_itl_ms", DIFFUSION: "max_batch_latency_seconds"}
# The plans' fields a figure of analysis.plan is served as.
SERVED_AS = {
    "carbon": "carbonPerDayKg",
    "electricity_cost": "electricityCostPerDay",
    "gpu_cost": "gpuCostPerDay",
    "cost": "costPerDay",
}
# The plans' fields the partial-load estimate gives, null together.
ESTIMATES = ("partialLoadBatchSize", "powerWatts.estimate", "energyPerDayKwh.estimate")


@dataclass(frozen=True)
class Asked:
    """A planner's arguments, as the root field takes them."""

    task: str
    models: Sequence[str] | None
    gpus: Sequence[str] | None
    demand: DemandInput
    latency: LatencyInput | None
    utilization: float
    objective: PlanObjective
    site: SiteInput | None
    baseline: str | None
    first: int | None
    release: int | None


async def deployment_plan(context: Context, asked: Asked) -> DeploymentPlans:
    catalog = await context.catalog(asked.release)
    task = known_task(catalog, asked.task, "task")
    kind = catalog.kind_of_task[task.id]
    selection = await select(context, kind, asked.task, asked.gpus, asked.models, asked.release)
    first = page_size(context.settings, asked.first, DEFAULT_FIRST)
    variant = variant_of(catalog, kind, task)
    demand = _demand(asked.demand, kind, variant, task)
    latency = read_latency(asked.latency, kind, task)
    if not 0 < asked.utilization <= 1:
        raise BadInput(f"utilization must be in (0, 1], got {asked.utilization}")
    site = read_site(catalog, asked.site)
    objective = planning.Objective(asked.objective.value)
    _check_objective(objective, site)
    baseline = _baseline(catalog, kind, task, asked.baseline)
    found = planning.plan(
        planned(selection, latency.column),
        demand,
        utilization=asked.utilization,
        site=site,
        objective=objective,
        max_latency=latency.most,
        baseline=None if baseline is None else candidate(kind, baseline, latency.column),
    )
    plans = [_served(catalog, kind, p, site.pue) for p in found.plans[:first]]
    excluded = exclusions(found.excluded, latency)
    return DeploymentPlans(
        task=Task.of(catalog, task.id),
        objective=asked.objective,
        demand_unit=f"{OUTPUTS[variant]} per second",
        utilization=asked.utilization,
        pue=site.pue,
        latency_limit=latency.applied,
        candidates=found.candidates,
        total_count=len(found.plans),
        excluded=excluded,
        reason=_reason(found, excluded, task),
        plans=plans,
        baseline=_baseline_plan(catalog, kind, found, plans, site.pue),
        assumptions=_assumptions(asked, variant, site, latency),
        method=_method(kind, variant),
    )


def variant_of(catalog: Catalog, kind: Kind, task: TaskRow) -> str:
    """What the task's rows generate (db.fields' variants: text, image or video)."""
    if kind.variant_column is None:
        return kind.rows[0]
    found = {getattr(r, kind.variant_column) for r in catalog.of_task(kind, task.id)}
    return found.pop() if len(found) == 1 else kind.rows[0]


def _demand(given: DemandInput, kind: Kind, variant: str, task: TaskRow) -> planning.Demand:
    rates = {name: getattr(given, name) for name in RATES if getattr(given, name) is not None}
    if len(rates) != 1:
        names = " and ".join(to_camel_case(name) for name in rates) or "none"
        raise BadInput(
            "demand takes exactly one of requestsPerSecond or outputTokensPerSecond (LLM and "
            "MLLM tasks), imagesPerSecond (text-to-image) or videosPerSecond (text-to-video); "
            f"got {names}"
        )
    (name, value), per_request = next(iter(rates.items())), given.output_tokens_per_request
    argument = f"demand.{to_camel_case(name)}"
    if RATES[name] != variant:
        fits = " or ".join(f"demand.{to_camel_case(n)}" for n, v in RATES.items() if v == variant)
        raise BadInput(
            f"{argument} does not apply to {task.name}, whose configurations generate "
            f"{OUTPUTS[variant]}: give {fits}"
        )
    _positive(argument, value)
    if per_request is not None:
        if variant != fields.TEXT:
            raise BadInput(
                f"demand.outputTokensPerRequest does not apply to {task.name}, "
                f"{kind.article} {kind.called} task"
            )
        _positive("demand.outputTokensPerRequest", per_request)
    if name == "requests_per_second":
        return planning.Demand(requests_per_second=value, outputs_per_request=per_request)
    return planning.Demand(outputs_per_second=value, outputs_per_request=per_request)


def _positive(argument: str, value: float) -> None:
    if not value > 0:
        raise BadInput(f"{argument} must be a number > 0, got {value}")


@dataclass(frozen=True)
class Latency:
    """The latency column of the kind's (db.kinds) a limit applies to, the argument that gives
    the limit and the limit (None: none)."""

    column: str
    argument: str
    most: float | None

    @property
    def unit(self) -> str:
        declared = fields.BY_NAME[self.column].spec
        assert isinstance(declared, fields.Measured)
        return declared.unit

    @property
    def applied(self) -> PlanLatencyLimit | None:
        if self.most is None:
            return None
        return PlanLatencyLimit(field=to_camel_case(self.column), max=self.most, unit=self.unit)

    def words(self) -> str:
        return f"{to_camel_case(self.column)} above {self.most:g} {self.unit}"


def read_latency(given: LatencyInput | None, kind: Kind, task: TaskRow) -> Latency:
    given = given or LatencyInput()
    own = LATENCY_LIMITS[kind]
    for name in LATENCY_LIMITS.values():
        if name != own and getattr(given, name) is not None:
            raise BadInput(
                f"latency.{to_camel_case(name)} does not apply to {task.name}, "
                f"{kind.article} {kind.called} task: give latency.{to_camel_case(own)}"
            )
    argument = f"latency.{to_camel_case(own)}"
    most: float | None = getattr(given, own)
    check_at_least(argument, most)
    column = str(given.percentile.value) if kind is LLM else kind.latencies[0]
    return Latency(column, argument, most)


def read_site(catalog: Catalog, given: SiteInput | None) -> planning.Site:
    given = given or SiteInput()
    check_at_least("site.pue", given.pue, 1)
    check_at_least("site.carbonIntensityGramsPerKwh", given.carbon_intensity_grams_per_kwh)
    intensity = given.carbon_intensity_grams_per_kwh
    if given.zone is not None:
        if intensity is not None:
            raise BadInput(
                "site takes site.zone or site.carbonIntensityGramsPerKwh, not both: got zone "
                f"{given.zone[:200]!r} and {intensity:g} gCO₂e per kWh"
            )
        intensity = known_zone(given.zone, "site.zone").grams_per_kwh
    check_at_least("site.electricityPricePerKwh", given.electricity_price_per_kwh)
    prices: dict[str, float] | None = None
    if given.gpu_hour_prices is not None:
        if not given.gpu_hour_prices:
            raise BadInput(
                "site.gpuHourPrices is empty: price at least one GPU type, or leave it out"
            )
        prices = {}
        for price in given.gpu_hour_prices:
            gpu = known_gpu(catalog, price.gpu, "site.gpuHourPrices.gpu")
            if gpu in prices:
                raise BadInput(f"site.gpuHourPrices prices {gpu!r} more than once")
            check_at_least("site.gpuHourPrices.price", price.price)
            prices[gpu] = price.price
    return planning.Site(
        pue=given.pue,
        carbon_intensity=intensity,
        electricity_price=given.electricity_price_per_kwh,
        gpu_hour_prices=prices,
    )


def _check_objective(objective: planning.Objective, site: planning.Site) -> None:
    if objective is planning.Objective.CARBON and site.carbon_intensity is None:
        raise BadInput("objective CARBON needs site.carbonIntensityGramsPerKwh or site.zone")
    if objective is planning.Objective.COST and (
        site.electricity_price is None and site.gpu_hour_prices is None
    ):
        raise BadInput("objective COST needs site.electricityPricePerKwh or site.gpuHourPrices")


def _baseline(catalog: Catalog, kind: Kind, task: TaskRow, given: str | None) -> Row | None:
    """The baseline configuration, of the task planned for."""
    if given is None:
        return None
    parsed = parse_id(given)
    found = catalog.by_key.get(parsed[1]) if parsed and parsed[0] == "Configuration" else None
    if found is None:
        listed = "configurations" if kind is LLM else "diffusionConfigurations"
        raise unknown("configuration id", given, "baseline", listed)
    row = found[1]
    if row.task_id != task.id:
        other = catalog.task_by_id[row.task_id].name
        raise BadInput(
            f"baseline {given!r} is a configuration of {other}, not of {task.name}: give one "
            "of the task's configurations"
        )
    if not getattr(row, kind.throughput) > 0:
        raise BadInput(f"baseline {given!r} has no measured throughput: no replicas of it serve")
    return row


def planned(selection: Selection, latency: str) -> planning.Candidates[Row]:
    """The selection's rows as plans see them: the task's, made once per release and latency
    column and kept with the catalog, narrowed to the models and GPU types asked for."""
    catalog, kind, task_id = selection.catalog, selection.kind, selection.task.id
    rows = catalog.of_task(kind, task_id)
    whole = catalog.once(
        ("plan", kind.name, task_id, latency),
        lambda: planning.Candidates(candidate(kind, row, latency) for row in rows),
    )
    if selection.models is None and selection.gpus is None:
        return whole
    position = catalog.once(
        ("plan positions", kind.name, task_id), lambda: {r.id: i for i, r in enumerate(rows)}
    )
    return whole.take([position[r.id] for r in selection.rows()])


def candidate(kind: Kind, row: Row, latency: str) -> planning.Candidate[Row]:
    """A row as a plan sees it, by its kind's roles."""
    return planning.Candidate(
        item=row,
        order=row.id,
        gpu=row.gpu,
        gpus_per_replica=row.num_gpus,
        throughput=getattr(row, kind.throughput),
        energy_per_output=getattr(row, kind.energies[0]),
        power=getattr(row, kind.power),
        latency=getattr(row, latency),
        outputs_per_request=_per_request(row),
    )


def _per_request(row: Row) -> float:
    """Outputs a request asks for: an LLM or MLLM response's average output tokens (rows from
    before 2025-12-17, which lack it: energy per response ÷ per token, exactly); one image or
    video."""
    if not isinstance(row, LlmRow):
        return 1.0
    return row.avg_output_len if row.avg_output_len is not None else exact_output_length(row)


def _bounds(b: planning.Bounds | None) -> PlanBounds | None:
    return None if b is None else PlanBounds(lower=b.lower, upper=b.upper)


def _savings(s: planning.Savings | None) -> PlanSavings | None:
    if s is None:
        return None
    return PlanSavings(
        energy_per_day_kwh=PlanBounds(lower=s.energy_per_day.lower, upper=s.energy_per_day.upper),
        energy_saved_fraction=_bounds(s.energy_fraction),
        gpus=s.gpus,
        carbon_per_day_kg=_bounds(s.carbon_per_day),
        cost_per_day=None if s.cost_per_day is None else s.cost_per_day.upper,
    )


def _partial_load(catalog: Catalog, kind: Kind, p: planning.Plan[Row]) -> PartialLoad:
    """The plan's partial-load point on its configuration's series' fitted curves."""
    row = p.candidate.item
    if not isinstance(row, LlmRow):
        return PartialLoad(
            None, None, f"LeadGreen fits no concurrency curves for {kind.called} tasks"
        )
    rows = derived.series(catalog, row)
    curves = LoadCurves(
        throughput=derived.fitted(catalog, rows, kind.throughput),
        power=derived.fitted(catalog, rows, kind.power),
    )
    return partial_load(curves, p.outputs_per_second, p.replicas, p.power.lower, p.power.upper)


def _served(catalog: Catalog, kind: Kind, p: planning.Plan[Row], pue: float) -> DeploymentPlan:
    c = p.candidate
    partial = _partial_load(catalog, kind, p)
    # As analysis.plan makes energyPerDayKwh from powerWatts, bound by bound.
    energy = (
        None
        if partial.power is None
        else partial.power * (kilowatt_hours(planning.SECONDS_PER_DAY) * pue)
    )
    unavailable = [
        PlanUnavailable(field=SERVED_AS[figure], reason=reason)
        for figure, reason in p.missing.items()
    ]
    if partial.reason is not None:
        unavailable += [PlanUnavailable(field=f, reason=partial.reason) for f in ESTIMATES]
    return DeploymentPlan(
        rank=p.rank,
        configuration=configuration(catalog, kind, c.item),
        pareto_optimal=p.pareto_optimal,
        latency=c.latency,
        outputs_per_second=p.outputs_per_second,
        requests_per_second=p.requests_per_second,
        outputs_per_request=p.outputs_per_request,
        throughput_per_replica=c.throughput,
        replicas=p.replicas,
        gpu_count=p.gpus,
        partial_load_batch_size=partial.batch_size,
        power_watts=PlanEstimatedBounds(
            lower=p.power.lower, upper=p.power.upper, estimate=partial.power
        ),
        energy_per_day_kwh=PlanEstimatedBounds(
            lower=p.energy_per_day.lower, upper=p.energy_per_day.upper, estimate=energy
        ),
        energy_per_request_joules=p.energy_per_request,
        carbon_per_day_kg=_bounds(p.carbon_per_day),
        electricity_cost_per_day=_bounds(p.electricity_cost_per_day),
        gpu_cost_per_day=p.gpu_cost_per_day,
        cost_per_day=None if p.cost_per_day is None else p.cost_per_day.upper,
        savings_vs_baseline=_savings(p.savings),
        unavailable=unavailable,
    )


def _baseline_plan(
    catalog: Catalog,
    kind: Kind,
    found: planning.Plans[Row],
    plans: list[DeploymentPlan],
    pue: float,
) -> DeploymentPlan | None:
    """The baseline's plan: the ranked one when it is among the plans, else of rank 0."""
    base, rank = found.baseline, found.baseline_rank
    if base is None:
        return None
    if rank is not None:
        return (
            plans[rank - 1]
            if rank <= len(plans)
            else _served(catalog, kind, found.plans[rank - 1], pue)
        )
    base.savings = planning.savings(base, base)
    return _served(catalog, kind, base, pue)


def exclusions(excluded: Mapping[planning.Limit, int], latency: Latency) -> list[PlanExclusion]:
    said = {
        planning.Limit.LATENCY: (latency.argument, latency.words),
        planning.Limit.THROUGHPUT: ("throughput", lambda: "no measured throughput"),
    }
    return [
        PlanExclusion(limit=said[what][0], configurations=count, reason=said[what][1]())
        for what, count in excluded.items()
        if count
    ]


def _reason(found: planning.Plans[Row], excluded: list[PlanExclusion], task: TaskRow) -> str | None:
    if found.plans:
        return None
    if not found.candidates:
        return f"no configuration of {task.name} is on the models and GPU types asked for"
    limits = "; ".join(f"{e.limit} ({e.reason}) excludes {e.configurations}" for e in excluded)
    return f"no configuration meets the limits: {limits}, of {found.candidates} configurations"


def _assumptions(asked: Asked, variant: str, site: planning.Site, latency: Latency) -> list[str]:
    limit = latency.applied
    return [
        _demand_words(asked.demand, variant),
        f"Each replica serves at most {asked.utilization * 100:g} % of its measured throughput, "
        "all day; its latency and power are those measured at the measured load (a replica run "
        "below it is taken to be no slower, and to draw between the bounds).",
        "No latency limit."
        if limit is None
        else f"Latency: {limit.field} at most {limit.max:g} {limit.unit} (inclusive), as measured.",
        f"PUE {site.pue:g}: every energy figure is the GPUs' measured energy × {site.pue:g}.",
        carbon_words(asked.site, site, "carbonPerDayKg"),
        _cost_words(site),
        NOT_MEASURED,
    ]


def carbon_words(given: SiteInput | None, site: planning.Site, field: str) -> str:
    """Which carbon intensity the answer used, and where it comes from."""
    if site.carbon_intensity is None:
        return f"No carbon intensity given: {field} is null."
    zone = None if given is None else given.zone
    if zone is None:
        return f"Carbon at the caller's {site.carbon_intensity:g} gCO₂e per kWh."
    source = grid.provenance()
    return (
        f"Carbon at grid zone {zone}'s {site.carbon_intensity:g} gCO₂e per kWh (derived by "
        f"LeadGreen: {source.package} {source.package_version}'s electricity mix gwp, in "
        "kgCO₂eq per kWh, × 1,000; EcoLogits takes it from Our World in Data; `gridZones` "
        "gives the source and licence), a yearly average of the zone's grid, not of the hour."
    )


def _demand_words(given: DemandInput, variant: str) -> str:
    per_request = given.output_tokens_per_request
    each = (
        "the configuration's measured average output length (avgOutputLen)"
        if per_request is None
        else f"{per_request:g} output tokens"
    )
    if given.requests_per_second is not None:
        return f"Demand: {given.requests_per_second:g} requests per second, each of {each}."
    rate = next(getattr(given, n) for n in RATES if getattr(given, n) is not None)
    said = f"Demand: {rate:g} {OUTPUTS[variant]} per second"
    return f"{said}, in requests of {each}." if variant == fields.TEXT else f"{said}."


def _cost_words(site: planning.Site) -> str:
    parts = []
    if site.gpu_hour_prices is not None:
        priced = ", ".join(f"{gpu} {price:g}" for gpu, price in site.gpu_hour_prices.items())
        parts.append(f"GPU-hours ({priced} an hour)")
    if site.electricity_price is not None:
        parts.append(f"electricity at {site.electricity_price:g} per kWh")
    if not parts:
        return "No prices given: costs are null."
    return f"Cost counts {' and '.join(parts)}, in the caller's currency."


def _method(kind: Kind, variant: str) -> list[str]:
    """The formulae, in the names the variant's configurations give the kind's columns."""

    def named(column: str) -> str:
        return to_camel_case(fields.BY_NAME[column].name_in(variant))

    energy, throughput = named(kind.energies[0]), named(kind.throughput)
    rates = " or ".join(f"demand.{to_camel_case(n)}" for n, v in RATES.items() if v == variant)
    demand = (
        "outputsPerSecond = demand.requestsPerSecond × outputsPerRequest "
        "(demand.outputTokensPerRequest, else avgOutputLen), or demand.outputTokensPerSecond"
        if variant == fields.TEXT
        else f"outputsPerSecond = {rates}"
    )
    power, batch = named(kind.power), named(kind.batch_setting)
    estimate = [
        f"partialLoadBatchSize = b*, the {batch} at which the logistic fit of the series' "
        f"{throughput} (fittedCurves) equals outputsPerSecond ÷ replicas: 2^(x0 + ln(s ÷ (1 − "
        "s)) ÷ k), s = (outputsPerSecond ÷ replicas − b0) ÷ amplitude; powerWatts.estimate = "
        f"replicas × the series' fitted {power} at b*; energyPerDayKwh.estimate = "
        "powerWatts.estimate × 24 h ÷ 1,000 × site.pue; null unless both fits are reliable, "
        "the throughput's rises, b* lies within the measured batch sizes and "
        "powerWatts.estimate between the bounds"
    ]
    return [
        demand,
        f"replicas = ceil(outputsPerSecond ÷ (utilization × {throughput})), a quotient within "
        "a billionth of a whole number taken as that number",
        f"gpuCount = replicas × {named('num_gpus')}",
        f"powerWatts.upper = replicas × {power}; powerWatts.lower = "
        f"min(outputsPerSecond × {energy}, powerWatts.upper)",
        "energyPerDayKwh = powerWatts × 24 h ÷ 1,000 × site.pue, each bound",
        *(estimate if kind is LLM else []),
        f"energyPerRequestJoules = {energy} × outputsPerRequest × site.pue",
        "carbonPerDayKg = energyPerDayKwh × site.carbonIntensityGramsPerKwh ÷ 1,000",
        "electricityCostPerDay = energyPerDayKwh × site.electricityPricePerKwh; gpuCostPerDay "
        "= gpuCount × 24 h × the GPU type's site.gpuHourPrices; costPerDay = gpuCostPerDay + "
        "electricityCostPerDay.upper",
        "rank: by the objective's upper bound, then its lower bound, then upstream order",
        "paretoOptimal: no other plan has gpuCount and energyPerDayKwh.upper both at most its "
        "own and one of them lower",
        "savingsVsBaseline = the baseline's plan's figure − this plan's",
    ]
