"""Root fields for per-request impact and the grid zones a site can name."""

from __future__ import annotations

from typing import Annotated

import strawberry

from graph.schema.answers import impact as impacts
from graph.schema.context import Context
from graph.schema.inputs import LatencyInput, ReleaseArgument, SiteInput
from graph.schema.types.impact import GridZones, RequestImpact

Info = strawberry.Info[Context, None]


@strawberry.type
class ImpactFields:
    """Root fields: per-request impact, grid zones."""

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
