"""Diffusion configuration types: text-to-image and text-to-video rows."""

from __future__ import annotations

from typing import Annotated, Any, cast

import strawberry

from db.catalog import Catalog
from db.kinds import DIFFUSION
from db.rows import DiffusionRow
from graph.schema.inputs import ElectricityPrice, GridCarbonIntensity, ParetoScope
from graph.schema.types.configuration import ServingConfiguration, serving
from graph.schema.types.energy import Estimates, OutputEnergy

BATCH_LATENCY = "Measured: time to generate one batch, in seconds. Upstream `batch_latency_s`."


@strawberry.interface(
    description="A measured configuration of a diffusion task: a batch of images or videos "
    "generated with a number of denoising steps on one or more GPUs (Ulysses and ring "
    "sequence parallelism)."
)
class DiffusionConfiguration(ServingConfiguration):
    batch_size: int = strawberry.field(
        description="Setting: outputs generated per batch. Upstream `batch_size`."
    )
    batch_latency_s: float = strawberry.field(description=BATCH_LATENCY)
    inference_steps: int = strawberry.field(
        description="Setting: denoising steps per output. Upstream `inference_steps`."
    )
    ulysses_degree: int = strawberry.field(
        description="Setting: Ulysses sequence-parallel degree. Upstream `ulysses_degree`."
    )
    ring_degree: int = strawberry.field(
        description="Setting: ring-attention parallel degree. Upstream `ring_degree`."
    )

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
class ImageConfiguration(DiffusionConfiguration):
    energy_per_image_joules: float = strawberry.field(
        description="Measured: GPU energy per generated image, in joules (all GPUs together). "
        "Upstream `energy_per_image_joules`."
    )
    throughput_images_per_sec: float = strawberry.field(
        description="Measured: images generated per second. Upstream `throughput_images_per_sec`."
    )
    image_height: int = strawberry.field(description="Setting: image height, in pixels.")
    image_width: int = strawberry.field(description="Setting: image width, in pixels.")


@strawberry.type(description="A measured text-to-video configuration. Energy in joules.")
class VideoConfiguration(DiffusionConfiguration):
    energy_per_video_joules: float = strawberry.field(
        description="Measured: GPU energy per generated video, in joules (all GPUs together). "
        "Upstream `energy_per_video_joules`."
    )
    throughput_videos_per_sec: float = strawberry.field(
        description="Measured: videos generated per second. Upstream `throughput_videos_per_sec`."
    )
    video_height: int = strawberry.field(description="Setting: video height, in pixels.")
    video_width: int = strawberry.field(description="Setting: video width, in pixels.")
    fps: int = strawberry.field(description="Setting: frames per second of the video.")
    num_frames: int = strawberry.field(description="Setting: frames per video.")


def diffusion_of(catalog: Catalog, row: DiffusionRow) -> DiffusionConfiguration:
    """The configuration of this row (one object per release and row)."""
    return catalog.object(
        (DiffusionConfiguration, row.id), lambda: diffusion_from_row(row, catalog)
    )


def diffusion_from_row(row: DiffusionRow, catalog: Catalog) -> DiffusionConfiguration:
    common: dict[str, Any] = {
        **serving(row, catalog),
        "batch_size": row.batch_size,
        "batch_latency_s": row.batch_latency_s,
        "inference_steps": row.inference_steps,
        "ulysses_degree": row.ulysses_degree,
        "ring_degree": row.ring_degree,
    }
    if row.output == "video":
        assert row.fps is not None and row.num_frames is not None
        return VideoConfiguration(
            **common,
            energy_per_video_joules=row.energy_per_output_joules,
            throughput_videos_per_sec=row.throughput_outputs_per_sec,
            video_height=row.height,
            video_width=row.width,
            fps=row.fps,
            num_frames=row.num_frames,
        )
    return ImageConfiguration(
        **common,
        energy_per_image_joules=row.energy_per_output_joules,
        throughput_images_per_sec=row.throughput_outputs_per_sec,
        image_height=row.height,
        image_width=row.width,
    )
