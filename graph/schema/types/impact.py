"""Per-request impact from the measurements, and the grid zones a site can name."""

from __future__ import annotations

from typing import TYPE_CHECKING, Annotated

import strawberry

from db import grid
from graph.schema.types.plan import PlanExclusion, PlanLatencyLimit, PlanUnavailable
from graph.schema.types.task import Task

if TYPE_CHECKING:
    from graph.schema.types.model import Model, ServingConfiguration

LazyServing = Annotated["ServingConfiguration", strawberry.lazy("graph.schema.types.model")]
LazyModel = Annotated["Model", strawberry.lazy("graph.schema.types.model")]


@strawberry.type(
    description="Where the grid zones' figures come from, as the ecologits package and its "
    "documentation state it."
)
class GridZoneSource:
    package: str = strawberry.field(description="The Python package that ships the figures.")
    package_version: str = strawberry.field(
        description="Its version installed on this server, whose figures every zone is."
    )
    package_url: str = strawberry.field(description="The package's source repository.")
    source: str = strawberry.field(description="Where the package takes the figures from.")
    source_url: str = strawberry.field(description="The source's page.")
    year: int | None = strawberry.field(
        description="The year the figures are of; null: neither the package nor its "
        "documentation states it."
    )
    licence: str = strawberry.field(description="The licence the package ships the figures under.")
    licence_url: str = strawberry.field(description="The licence's text.")
    upstream_licence: str = strawberry.field(description="The source's licence of its data.")
    upstream_licence_url: str = strawberry.field(description="That licence's text.")

    @classmethod
    def of(cls, p: grid.Provenance) -> GridZoneSource:
        return cls(
            package=p.package,
            package_version=p.package_version,
            package_url=p.package_url,
            source=p.source,
            source_url=p.source_url,
            year=p.year,
            licence=p.licence,
            licence_url=p.licence_url,
            upstream_licence=p.upstream_licence,
            upstream_licence_url=p.upstream_licence_url,
        )


@strawberry.type(
    description="A grid zone a site can name (`site.zone`): the carbon intensity of its "
    "electricity, a national (or world, or regional) average, not the hour's."
)
class GridZone:
    code: str = strawberry.field(
        description="The zone's code, as EcoLogits names it: an ISO 3166-1 alpha-3 country code "
        "(`FRA`), or one of its own regions (`WOR`: the world; `EEE`: Europe)."
    )
    carbon_intensity_grams_per_kwh: float | None = strawberry.field(
        description="Derived by LeadGreen: EcoLogits' global warming potential of the zone's "
        "electricity (gwp, in kgCO₂eq per kWh) × 1,000, in gCO₂e per kWh; null when it has no "
        "figure (`missing` says why: a site naming the zone is an error)."
    )
    missing: str | None = strawberry.field(
        description="Why the zone has no carbon intensity; null when it has one."
    )
    carbon_intensity_is_world_default: bool = strawberry.field(
        description="Whether EcoLogits filled the carbon intensity in with the world's for lack "
        "of the zone's own (its warning `electricity-mix-gwp-world`)."
    )
    other_factors_from_world: list[str] = strawberry.field(
        description="The other factors of the zone's mix that EcoLogits took from the world's "
        "for lack of the zone's own (its `electricity-mix-*-world` warnings): of `adpe`, `pe` "
        "and `wue`, which LeadGreen does not serve; empty when none."
    )
    source: GridZoneSource = strawberry.field(description="Where the figure comes from.")

    @classmethod
    def of(cls, z: grid.Zone, source: GridZoneSource) -> GridZone:
        return cls(
            code=z.code,
            carbon_intensity_grams_per_kwh=z.grams_per_kwh,
            missing=z.missing,
            carbon_intensity_is_world_default=z.world_carbon,
            other_factors_from_world=[f for f in z.world_defaults if f != "gwp"],
            source=source,
        )


@strawberry.type(description="Every grid zone a site can name, and where the figures come from.")
class GridZones:
    source: GridZoneSource = strawberry.field(description="Where the figures come from.")
    zones: list[GridZone] = strawberry.field(description="The zones, in EcoLogits' order.")


@strawberry.type(
    description="A derived figure over the configurations a request impact uses; the field "
    "holding it says which figure and its unit."
)
class ImpactRange:
    min: float = strawberry.field(description="The least, over the configurations.")
    median: float = strawberry.field(
        description="The median, over the configurations (of an even count, the mean of the "
        "middle two)."
    )
    max: float = strawberry.field(description="The most, over the configurations.")


@strawberry.type(
    description="The energy (and carbon) of one request, from the measurements: what a request "
    "of so many output tokens (or one image or video) takes on each measured configuration of "
    "the model within the latency limit, as the least, median and most over them. Every figure "
    "but the configurations' own is derived by LeadGreen, as its description says; EcoLogits "
    "reports the same figures from a regression instead."
)
class RequestImpact:
    task: Task = strawberry.field(description="The task the configurations were measured on.")
    model: LazyModel = strawberry.field(description="The model.")
    output_unit: str = strawberry.field(
        description="What a request generates: `output tokens`, `image` or `video`."
    )
    outputs_per_request: float | None = strawberry.field(
        description="Outputs a request generates: the `outputTokens` given, 1 image or video "
        "for diffusion tasks; null when each configuration's measured average output length "
        "(avgOutputLen) is used."
    )
    pue: float = strawberry.field(description="The site's PUE applied to every energy figure.")
    latency_limit: PlanLatencyLimit | None = strawberry.field(
        description="The latency limit applied; null for none."
    )
    candidates: int = strawberry.field(
        description="The model's configurations of the task (1 when `configuration` names one), "
        "before the latency limit."
    )
    configurations: int = strawberry.field(
        description="The configurations the figures are over: those within the latency limit."
    )
    excluded: list[PlanExclusion] = strawberry.field(
        description="The latency limit, when it kept configurations out, with how many."
    )
    reason: str | None = strawberry.field(
        description="Why there is no figure, when no configuration is used; null otherwise."
    )
    energy_per_request_joules: ImpactRange | None = strawberry.field(
        description="Derived by LeadGreen: outputsPerRequest × the configuration's energy per "
        "output token (or per image, video) × the site's PUE, in joules per request; null when "
        "no configuration is used."
    )
    energy_per_request_wh: ImpactRange | None = strawberry.field(
        description="Derived by LeadGreen: energyPerRequestJoules ÷ 3,600, in watt-hours per "
        "request."
    )
    carbon_intensity_grams_per_kwh: float | None = strawberry.field(
        description="The carbon intensity used, in gCO₂e per kWh: the site's, or its zone's "
        "(`assumptions` says which); null without one."
    )
    carbon_per_request_grams: ImpactRange | None = strawberry.field(
        description="Derived by LeadGreen: energyPerRequestJoules ÷ 3,600,000 × "
        "carbonIntensityGramsPerKwh, in gCO₂e per request (the electricity's, not the "
        "hardware's embodied carbon); null without an intensity (`unavailable` says so)."
    )
    lowest: LazyServing | None = strawberry.field(
        description="The configuration of the least energy per request (ties: the first in "
        "upstream order)."
    )
    highest: LazyServing | None = strawberry.field(
        description="The configuration of the most energy per request (ties: the first in "
        "upstream order)."
    )
    unavailable: list[PlanUnavailable] = strawberry.field(
        description="The null figures, each with the reason; empty when it has them all."
    )
    assumptions: list[str] = strawberry.field(
        description="What the answer assumed, in words: the request, the limit, the site, and "
        "what the measurements do not cover."
    )
    method: list[str] = strawberry.field(
        description="How every derived figure was computed, one formula a line, in the "
        "configuration fields' names."
    )
