"""Diffusion configuration types: text-to-image and text-to-video rows."""

from __future__ import annotations

from typing import Annotated, cast

import strawberry

from db import fields
from db.catalog import Catalog
from db.kinds import DIFFUSION
from db.rows import DiffusionRow
from graph.schema.inputs import ElectricityPrice, GridCarbonIntensity, ParetoScope
from graph.schema.types.common import Figures
from graph.schema.types.configuration import ServingConfiguration, serving
from graph.schema.types.energy import Estimates, OutputEnergy

# The fields of both variants' rows, and those of each variant's alone (db.fields).
DIFFUSION_FIGURES = Figures(fields.DIFFUSION_ROWS, within=fields.EVERY_ROW)
IMAGE_FIGURES = Figures((fields.IMAGE,), within=fields.DIFFUSION_ROWS)
VIDEO_FIGURES = Figures((fields.VIDEO,), within=fields.DIFFUSION_ROWS)


@strawberry.interface(
    description="A measured configuration of a diffusion task: a batch of images or videos "
    "generated with a number of denoising steps on one or more GPUs (Ulysses and ring "
    "sequence parallelism)."
)
@DIFFUSION_FIGURES.declare()
class DiffusionConfiguration(ServingConfiguration):
    @strawberry.field(
        description="Whether this configuration is on a time–energy Pareto frontier of its task "
        "(batch latency against energy per image or video): no configuration of the same `scope` "
        "has both strictly lower latency and strictly lower energy (ties survive). The default "
        "scope, MODEL, compares the model's own configurations on the task."
    )
    def is_pareto_optimal(
        self,
        scope: Annotated[
            ParetoScope,
            strawberry.argument(description="Which configurations of the task it is compared to."),
        ] = ParetoScope.MODEL,
    ) -> bool:
        return self.catalog.pareto(DIFFUSION, self.row, str(scope.value))

    @strawberry.field(
        description="This configuration's energy per image or video and per 1,000 of them, in "
        "joules, watt-hours and kilowatt-hours, with estimates of emissions and cost from the "
        "figures the caller gives."
    )
    def energy(
        self,
        grid_carbon_intensity: GridCarbonIntensity = None,
        electricity_price_per_kwh: ElectricityPrice = None,
    ) -> OutputEnergy:
        return OutputEnergy.of(
            cast(DiffusionRow, self.row).energy_per_output_joules,
            Estimates(grid_carbon_intensity, electricity_price_per_kwh),
        )


@strawberry.type(description="A measured text-to-image configuration. Energy in joules.")
@IMAGE_FIGURES.declare()
class ImageConfiguration(DiffusionConfiguration):
    pass


@strawberry.type(description="A measured text-to-video configuration. Energy in joules.")
@VIDEO_FIGURES.declare()
class VideoConfiguration(DiffusionConfiguration):
    pass


def diffusion_of(catalog: Catalog, row: DiffusionRow) -> DiffusionConfiguration:
    """The configuration of this row (one object per release and row)."""
    return catalog.object(
        (DiffusionConfiguration, row.id), lambda: diffusion_from_row(row, catalog)
    )


def diffusion_from_row(row: DiffusionRow, catalog: Catalog) -> DiffusionConfiguration:
    common = DIFFUSION_FIGURES.add(serving(row, catalog), row)
    if row.output == fields.VIDEO:
        return VideoConfiguration(**VIDEO_FIGURES.add(common, row))
    return ImageConfiguration(**IMAGE_FIGURES.add(common, row))
