"""Per-request impact and grid zones: the arguments checked, the model's rows as
analysis.impact sees them (as the planner does), and the answer as GraphQL types."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass

from strawberry.utils.str_converters import to_camel_case

from analysis import impact as impacts
from analysis.plan import Limit
from analysis.power import Spread
from analysis.units import watt_hours
from db import fields, grid
from db.catalog import Catalog
from db.kinds import Kind
from db.rows import Row
from db.tables import ModelRow, TaskRow
from graph.errors import BadInput
from graph.schema.answers.plan import (
    NOT_MEASURED,
    OUTPUTS,
    Latency,
    candidate,
    carbon_words,
    exclusions,
    read_latency,
    read_site,
    variant_of,
)
from graph.schema.context import Context, known_model, known_task, unknown
from graph.schema.inputs import LatencyInput, SiteInput
from graph.schema.types.impact import (
    GridZone,
    GridZones,
    GridZoneSource,
    ImpactRange,
    RequestImpact,
)
from graph.schema.types.model import Model, configuration
from graph.schema.types.node import parse_id
from graph.schema.types.plan import PlanUnavailable
from graph.schema.types.task import Task

# What one request generates, by variant (db.fields), where it is not counted in tokens.
ONE_OUTPUT = {fields.IMAGE: "image", fields.VIDEO: "video"}


def grid_zones() -> GridZones:
    source = GridZoneSource.of(grid.provenance())
    return GridZones(source=source, zones=[GridZone.of(z, source) for z in grid.zones().values()])


@dataclass(frozen=True)
class Asked:
    """A request impact's arguments, as the root field takes them."""

    task: str
    model: str
    configuration: str | None
    output_tokens: int | None
    latency: LatencyInput | None
    site: SiteInput | None
    release: int | None


async def request_impact(context: Context, asked: Asked) -> RequestImpact:
    catalog = await context.catalog(asked.release)
    task = known_task(catalog, asked.task, "task")
    kind = catalog.kind_of_task[task.id]
    model = known_model(catalog, asked.model, "model")
    variant = variant_of(catalog, kind, task)
    per_request = _output_tokens(asked.output_tokens, variant, task)
    latency = read_latency(asked.latency, kind, task)
    site = read_site(catalog, asked.site)
    rows = _rows(catalog, kind, task, model, asked.configuration)
    found = impacts.request_impact(
        [candidate(kind, row, latency.column) for row in rows],
        per_request,
        pue=site.pue,
        carbon_intensity=site.carbon_intensity,
        max_latency=latency.most,
    )
    unavailable = []
    if found.energy is not None and found.carbon is None:
        unavailable.append(
            PlanUnavailable(
                field="carbonPerRequestGrams", reason="the site gives no carbon intensity"
            )
        )
    return RequestImpact(
        task=Task.of(catalog, task.id),
        model=Model.of(catalog, model),
        output_unit=ONE_OUTPUT.get(variant, OUTPUTS[fields.TEXT]),
        outputs_per_request=per_request,
        pue=site.pue,
        latency_limit=latency.applied,
        candidates=found.candidates,
        configurations=found.used,
        excluded=exclusions({Limit.LATENCY: found.excluded}, latency),
        reason=_reason(found, latency, model, task),
        energy_per_request_joules=_range(found.energy),
        energy_per_request_wh=_range(found.energy, watt_hours),
        carbon_intensity_grams_per_kwh=site.carbon_intensity,
        carbon_per_request_grams=_range(found.carbon),
        lowest=None if found.lowest is None else configuration(catalog, kind, found.lowest.item),
        highest=None if found.highest is None else configuration(catalog, kind, found.highest.item),
        unavailable=unavailable,
        assumptions=[
            _request_words(per_request, variant),
            "No latency limit."
            if latency.applied is None
            else f"Latency: {latency.applied.field} at most {latency.applied.max:g} "
            f"{latency.applied.unit} (inclusive), as measured.",
            f"PUE {site.pue:g}: every energy figure is the GPUs' measured energy × {site.pue:g}.",
            carbon_words(asked.site, site, "carbonPerRequestGrams"),
            "Each configuration's energy per output is the one measured at its steady-state "
            "load (its batch size): a request served at another load takes another share.",
            NOT_MEASURED,
        ],
        method=_method(kind, variant),
    )


def _output_tokens(given: int | None, variant: str, task: TaskRow) -> float | None:
    """Outputs a request generates: the output tokens given (None: each configuration's
    measured figure); one image or video."""
    if variant != fields.TEXT:
        if given is not None:
            raise BadInput(
                f"outputTokens does not apply to {task.name}, whose requests generate one "
                f"{ONE_OUTPUT[variant]} each: leave it out"
            )
        return 1.0
    if given is not None and not given > 0:
        raise BadInput(f"outputTokens must be an integer > 0, got {given}")
    return None if given is None else float(given)


def _rows(
    catalog: Catalog, kind: Kind, task: TaskRow, model: ModelRow, given: str | None
) -> list[Row]:
    """The model's rows of the task, or the one configuration `given` names (of both)."""
    if given is None:
        return [r for r in catalog.of_model(kind, model.id) if r.task_id == task.id]
    parsed = parse_id(given)
    found = catalog.by_key.get(parsed[1]) if parsed and parsed[0] == "Configuration" else None
    if found is None:
        raise unknown("configuration id", given, "configuration", "configurations")
    row = found[1]
    if row.task_id != task.id or row.model_id != model.id:
        other = catalog.task_by_id[row.task_id].name
        owner = catalog.model_by_id[row.model_id].slug
        raise BadInput(
            f"configuration {given!r} is of {owner} on {other}, not of {model.slug} on "
            f"{task.name}: give one of the model's configurations of the task"
        )
    return [row]


def _range(spread: Spread | None, unit: Callable[[float], float] = float) -> ImpactRange | None:
    if spread is None:
        return None
    return ImpactRange(
        min=unit(spread.minimum), median=unit(spread.median), max=unit(spread.maximum)
    )


def _reason(
    found: impacts.Impact[Row], latency: Latency, model: ModelRow, task: TaskRow
) -> str | None:
    if found.used:
        return None
    if not found.candidates:
        return f"{model.slug} has no configuration of {task.name}"
    return (
        f"no configuration meets the latency limit: {latency.argument} ({latency.words()}) "
        f"excludes all {found.candidates}"
    )


def _request_words(per_request: float | None, variant: str) -> str:
    if variant != fields.TEXT:
        return f"A request generates one {ONE_OUTPUT[variant]}."
    if per_request is None:
        return (
            "A request generates each configuration's measured average output length "
            "(avgOutputLen) in output tokens."
        )
    return f"A request generates {per_request:g} output tokens."


def _method(kind: Kind, variant: str) -> list[str]:
    """The formulae, in the names the variant's configurations give the kind's columns."""
    energy = to_camel_case(fields.BY_NAME[kind.energies[0]].name_in(variant))
    outputs = (
        "1" if variant != fields.TEXT else "outputsPerRequest (outputTokens, else avgOutputLen)"
    )
    return [
        f"energyPerRequestJoules = {outputs} × {energy} × site.pue, for each configuration "
        "within the latency limit; min, median and max over them",
        "energyPerRequestWh = energyPerRequestJoules ÷ 3,600",
        "carbonPerRequestGrams = energyPerRequestJoules ÷ 3,600,000 × "
        "carbonIntensityGramsPerKwh (site.carbonIntensityGramsPerKwh, or site.zone's "
        "gridZones figure)",
    ]
