"""What clients send: input types, the enums arguments take, and shared argument declarations.

An argument that several fields take (`release`, `first`, `task`, `gpus` ...) is declared here
once and used by name.
"""

from __future__ import annotations

import inspect
from collections.abc import Callable, Mapping
from enum import Enum
from typing import Annotated, Any, TypeVar

import strawberry

from db.kinds import DIFFUSION, LLM, LLM_DEADLINE_MS, Kind

T = TypeVar("T")

# One member per orderable column, so the enums cannot drift from what the catalog accepts.
ConfigurationField: type[Enum] = strawberry.enum(  # type: ignore[call-overload]
    Enum("ConfigurationField", {name.upper(): name for name in ("id", *LLM.orderable)}),
    description="A configuration field to order by (each named as the field of the same name).",
)
DiffusionConfigurationField: type[Enum] = strawberry.enum(  # type: ignore[call-overload]
    Enum(
        "DiffusionConfigurationField",
        {name.upper(): name for name in ("id", *DIFFUSION.orderable)},
    ),
    description="A diffusion configuration field to order by. HEIGHT and WIDTH are the image's "
    "or video's; ENERGY_PER_OUTPUT_JOULES is energyPerImageJoules or energyPerVideoJoules; "
    "THROUGHPUT_OUTPUTS_PER_SEC is throughputImagesPerSec or throughputVideosPerSec.",
)


@strawberry.enum(description="Sort direction.")
class Direction(Enum):
    ASC = "asc"
    DESC = "desc"


@strawberry.input(description="How to order configurations; ties are broken by id.")
class ConfigurationOrder:
    field: ConfigurationField = strawberry.field(description="Field to order by.")  # type: ignore[valid-type]
    direction: Direction = strawberry.field(default=Direction.ASC, description="Direction.")


@strawberry.input(description="How to order diffusion configurations; ties are broken by id.")
class DiffusionConfigurationOrder:
    field: DiffusionConfigurationField = strawberry.field(description="Field to order by.")  # type: ignore[valid-type]
    direction: Direction = strawberry.field(default=Direction.ASC, description="Direction.")


def add_fields(
    made: Mapping[str, tuple[Any, Any]], *, before: str | None = None
) -> Callable[[type[T]], type[T]]:
    """A class decorator, under strawberry's: these fields (name → its type and its
    `strawberry.field`) join the class's own, before the one named `before` (else after them
    all). The fields declared in db.fields become input and object fields so."""

    def add(cls: type[T]) -> type[T]:
        own = inspect.get_annotations(cls)
        if before is not None and before not in own:
            raise ValueError(f"{cls.__name__} has no field {before!r}")
        annotations: dict[str, Any] = {}
        for name, annotation in own.items():
            if name == before:
                annotations.update((n, t) for n, (t, _) in made.items())
            annotations[name] = annotation
        if before is None:
            annotations.update((n, t) for n, (t, _) in made.items())
        cls.__annotations__ = annotations
        for name, (_, value) in made.items():
            setattr(cls, name, value)
        return cls

    return add


def bounds(kind: Kind, *, settings: bool) -> dict[str, tuple[Any, Any]]:
    """The kind's filters (db.fields) on its settings, or on its measurements, as input fields."""
    return {
        f.name: (f.python | None, strawberry.field(default=None, description=f.description))
        for f in kind.filters
        if f.setting is settings
    }


# The filters on a kind's settings come before `task`, those on its measurements after it.
@strawberry.input(description="Which configurations to return; every condition given must hold.")
@add_fields(bounds(LLM, settings=False))
@add_fields(bounds(LLM, settings=True), before="task")
class ConfigurationFilterInput:
    model: str | None = strawberry.field(default=None, description="Model slug.")
    model_id: str | None = strawberry.field(default=None, description="Hugging Face model id.")
    gpu: str | None = strawberry.field(default=None, description="GPU type, e.g. `H100`.")
    num_gpus: int | None = strawberry.field(default=None, description="Number of GPUs.")
    task: str | None = strawberry.field(
        default=None, description="Task name, e.g. `lm-arena-chat`."
    )


@strawberry.input(
    description="Which diffusion configurations to return; every condition given must hold."
)
@add_fields(bounds(DIFFUSION, settings=False))
@add_fields(bounds(DIFFUSION, settings=True), before="task")
class DiffusionConfigurationFilterInput:
    model: str | None = strawberry.field(default=None, description="Model slug.")
    model_id: str | None = strawberry.field(default=None, description="Hugging Face model id.")
    gpu: str | None = strawberry.field(default=None, description="GPU type, e.g. `B200`.")
    num_gpus: int | None = strawberry.field(default=None, description="Number of GPUs.")
    task: str | None = strawberry.field(
        default=None, description="`text-to-image` or `text-to-video`."
    )


AnyFilter = ConfigurationFilterInput | DiffusionConfigurationFilterInput
AnyOrder = ConfigurationOrder | DiffusionConfigurationOrder


@strawberry.enum(
    description="Which inter-token latency (ITL) percentile a deadline or frontier uses."
)
class ItlPercentile(Enum):
    P50 = strawberry.enum_value("median_itl_ms", description="Median ITL (`medianItlMs`).")
    P90 = strawberry.enum_value("p90_itl_ms", description="90th-percentile ITL (`p90ItlMs`).")
    P95 = strawberry.enum_value("p95_itl_ms", description="95th-percentile ITL (`p95ItlMs`).")
    P99 = strawberry.enum_value("p99_itl_ms", description="99th-percentile ITL (`p99ItlMs`).")


@strawberry.enum(description="Which energy figure of an LLM or MLLM configuration ranks it.")
class EnergyBasis(Enum):
    PER_TOKEN = strawberry.enum_value(
        "energy_per_token_joules", description="Energy per output token, in joules."
    )
    PER_RESPONSE = strawberry.enum_value(
        "energy_per_request_joules",
        description="Energy per response (per token × average output length), in joules.",
    )


@strawberry.enum(description="Which configurations a Pareto frontier compares with each other.")
class ParetoScope(Enum):
    GLOBAL = strawberry.enum_value("global", description="All configurations of the task.")
    MODEL = strawberry.enum_value("model", description="Each model's configurations apart.")
    GPU = strawberry.enum_value("gpu", description="Each GPU type's configurations apart.")
    MODEL_GPU = strawberry.enum_value(
        "model_gpu", description="Each model's configurations on each GPU type apart."
    )


@strawberry.input(
    description="Constraints on LLM and MLLM configurations; every bound is inclusive. The "
    "defaults are the ML.ENERGY leaderboard's: median ITL within 500 ms, no energy budget, "
    "ranked by energy per token."
)
class LlmConstraints:
    max_itl_ms: float | None = strawberry.field(
        default=LLM_DEADLINE_MS,
        description="Latency deadline: the largest ITL (at `itlPercentile`) allowed, in ms; "
        "500 when not given; null for no deadline.",
    )
    itl_percentile: ItlPercentile = strawberry.field(
        default=ItlPercentile.P50, description="The ITL percentile the deadline applies to."
    )
    max_energy_joules: float | None = strawberry.field(
        default=None,
        description="Energy budget: the largest energy allowed, in joules per token or per "
        "response (as `rankBy` says); none when not given.",
    )
    num_gpus: list[int] | None = strawberry.field(
        default=None, description="Only configurations on these numbers of GPUs; all if not given."
    )
    min_throughput_tokens_per_sec: float | None = strawberry.field(
        default=None,
        description="Throughput floor: the smallest output throughput allowed, in tokens per "
        "second (all GPUs together); none when not given.",
    )
    rank_by: EnergyBasis = strawberry.field(
        default=EnergyBasis.PER_TOKEN,
        description="The energy figure minimised, bounded by `maxEnergyJoules` and sorted on.",
    )


@strawberry.input(
    description="Constraints on diffusion configurations; every bound is inclusive. The "
    "defaults are the ML.ENERGY leaderboard's."
)
class DiffusionConstraints:
    max_batch_latency_s: float | None = strawberry.field(
        default=strawberry.UNSET,
        description="Latency deadline: the largest batch latency allowed, in seconds. When not "
        "given, the leaderboard's default: 30 for text-to-image, 300 for text-to-video (none for "
        "another task); null for no deadline.",
    )
    max_energy_joules: float | None = strawberry.field(
        default=None,
        description="Energy budget: the largest energy per image or video allowed, in joules; "
        "none when not given.",
    )
    num_gpus: list[int] | None = strawberry.field(
        default=None, description="Only configurations on these numbers of GPUs; all if not given."
    )
    min_throughput_outputs_per_sec: float | None = strawberry.field(
        default=None,
        description="Throughput floor: the fewest images or videos per second allowed; none when "
        "not given.",
    )


# Arguments several fields take.
ReleaseArgument = Annotated[
    int | None,
    strawberry.argument(
        description="Answer from this release (an id from `releases`); the latest by default."
    ),
]
FirstArgument = Annotated[
    int | None,
    strawberry.argument(
        description="Page size; the server's default when not given, at most its maximum "
        "(`default_page_size` and `max_page_size` of LEADGREEN_LIMITS)."
    ),
]
AfterArgument = Annotated[
    str | None,
    strawberry.argument(description="Return the configurations after this cursor (`endCursor`)."),
]
FILTER = strawberry.argument(description="Conditions every configuration returned meets.")
ORDER = strawberry.argument(description="Ordering; by id (upstream order) when not given.")
DEFAULT_TASK = "lm-arena-chat"
ModelTaskArgument = Annotated[
    str | None,
    strawberry.argument(
        description="Only this task; by default lm-arena-chat (the workload of the LeadGreen v1 "
        "index); null for every task the model was measured on."
    ),
]
LlmTaskArgument = Annotated[
    str,
    strawberry.argument(
        description="An LLM or MLLM task: `lm-arena-chat`, `gpqa`, `sourcegraph-fim`, "
        "`image-chat` or `video-chat`."
    ),
]
DiffusionTaskArgument = Annotated[
    str, strawberry.argument(description="A diffusion task: `text-to-image` or `text-to-video`.")
]
GpusArgument = Annotated[
    list[str] | None,
    strawberry.argument(
        description='Only configurations on these GPU types, e.g. `["H100"]`; all when not given.'
    ),
]
ModelsArgument = Annotated[
    list[str] | None,
    strawberry.argument(description="Only these models, by slug; every model when not given."),
]
LlmConstraintsArgument = Annotated[
    LlmConstraints | None,
    strawberry.argument(
        description="Latency deadline and percentile, energy budget, GPU counts, throughput floor "
        "and the energy ranked on; the leaderboard's defaults (median ITL within 500 ms, energy "
        "per token) when not given."
    ),
]
PercentileArgument = Annotated[
    ItlPercentile, strawberry.argument(description="The ITL percentile latency is measured by.")
]
ScopeArgument = Annotated[
    ParetoScope,
    strawberry.argument(description="Which configurations are compared with each other."),
]
GridCarbonIntensity = Annotated[
    float | None,
    strawberry.argument(
        description="Grid carbon intensity, in grams of CO₂-equivalent per kWh (e.g. 400), for "
        "the `estimatedCarbonGrams` estimates; none when not given."
    ),
]
ElectricityPrice = Annotated[
    float | None,
    strawberry.argument(
        description="Electricity price per kWh, in any currency (e.g. 0.15), for the "
        "`estimatedCost` estimates; none when not given."
    ),
]
BatchSizeArgument = Annotated[
    float,
    strawberry.argument(description="Batch size (max_num_seqs) to evaluate at; at least 1."),
]


# The deployment planner's inputs (Query.deploymentPlan).
@strawberry.enum(
    description="What deployment plans are ranked by: the figure's upper bound (what is "
    "provisioned), then its lower bound, then the configuration's upstream order."
)
class PlanObjective(Enum):
    ENERGY = strawberry.enum_value("energy", description="Energy a day (`energyPerDayKwh`).")
    GPUS = strawberry.enum_value("gpus", description="GPUs provisioned (`gpuCount`).")
    COST = strawberry.enum_value(
        "cost",
        description="Cost a day (`costPerDay`, then GPU-hours plus the electricity's lower "
        "bound); needs `site.electricityPricePerKwh` or `site.gpuHourPrices`.",
    )
    CARBON = strawberry.enum_value(
        "carbon",
        description="Emissions a day (`carbonPerDayKg`); needs `site.carbonIntensityGramsPerKwh`.",
    )


@strawberry.input(
    description="The traffic a deployment serves, steady all day: exactly one rate. LLM and "
    "MLLM tasks: `requestsPerSecond` or `outputTokensPerSecond`; diffusion tasks: "
    "`imagesPerSecond` (text-to-image) or `videosPerSecond` (text-to-video)."
)
class DemandInput:
    requests_per_second: float | None = strawberry.field(
        default=None,
        description="Requests per second, each of `outputTokensPerRequest` output tokens (else "
        "of each configuration's measured `avgOutputLen`). LLM and MLLM tasks.",
    )
    output_tokens_per_second: float | None = strawberry.field(
        default=None, description="Output tokens per second. LLM and MLLM tasks."
    )
    images_per_second: float | None = strawberry.field(
        default=None, description="Images generated per second. Text-to-image tasks."
    )
    videos_per_second: float | None = strawberry.field(
        default=None, description="Videos generated per second. Text-to-video tasks."
    )
    output_tokens_per_request: float | None = strawberry.field(
        default=None,
        description="Output tokens per request (response), for every configuration; each "
        "configuration's measured average output length (`avgOutputLen`) when not given. "
        "LLM and MLLM tasks.",
    )


@strawberry.input(
    description="A latency limit, inclusive, on the configuration's measured figure (as the "
    "leaderboard filters): `maxItlMs` for LLM and MLLM tasks, `maxBatchLatencySeconds` for "
    "diffusion tasks; no limit when neither is given."
)
class LatencyInput:
    percentile: ItlPercentile = strawberry.field(
        default=ItlPercentile.P50,
        description="The ITL percentile `maxItlMs` applies to (LLM and MLLM tasks).",
    )
    max_itl_ms: float | None = strawberry.field(
        default=None,
        description="The largest inter-token latency at `percentile`, in ms. LLM and MLLM tasks.",
    )
    max_batch_latency_seconds: float | None = strawberry.field(
        default=None,
        description="The largest time to generate one batch, in seconds. Diffusion tasks.",
    )


@strawberry.input(description="The price of one GPU of a type for one hour.")
class GpuHourPriceInput:
    gpu: str = strawberry.field(description="GPU type, e.g. `H100` (`gpus` lists them).")
    price: float = strawberry.field(
        description="Price of one GPU for one hour, in the currency of the site's other prices."
    )


@strawberry.input(
    description="Where a deployment runs. Every figure is the caller's; LeadGreen measures "
    "none of them. Prices are in one currency, whichever the caller uses."
)
class SiteInput:
    pue: float = strawberry.field(
        default=1.0,
        description="Power usage effectiveness: the facility's energy ÷ the IT equipment's, at "
        "least 1. 1.0 (the default) counts the GPUs' measured energy only.",
    )
    carbon_intensity_grams_per_kwh: float | None = strawberry.field(
        default=None,
        description="Grid carbon intensity, in grams of CO₂-equivalent per kWh (or give "
        "`zone`, not both); carbon figures are null without one.",
    )
    zone: str | None = strawberry.field(
        default=None,
        description="A grid zone whose carbon intensity to use instead of "
        "`carbonIntensityGramsPerKwh` (not both): an ISO 3166-1 alpha-3 country code such as "
        "`FRA`, or `WOR` for the world; `gridZones` lists them, with the figures' source.",
    )
    electricity_price_per_kwh: float | None = strawberry.field(
        default=None, description="Electricity price per kWh."
    )
    gpu_hour_prices: list[GpuHourPriceInput] | None = strawberry.field(
        default=None,
        description="The price of a GPU-hour, per GPU type; a plan on a type without a price "
        "has no cost.",
    )


# Each kind's filter input (the bulk exports take the same filter as query parameters).
FILTER_INPUTS: dict[Kind, type[AnyFilter]] = {
    LLM: ConfigurationFilterInput,
    DIFFUSION: DiffusionConfigurationFilterInput,
}
