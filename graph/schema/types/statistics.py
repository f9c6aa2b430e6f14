"""Statistics types: the metrics, aggregates, facets and the energy-per-response distribution."""

from __future__ import annotations

from enum import Enum

import strawberry

from analysis.aggregate import Summary
from analysis.distribution import EnergyDistribution
from analysis.facets import Bounds
from db.rows import LlmRow
from graph.schema.types import common as metric
from graph.schema.types.configuration import Configuration
from graph.schema.types.task import Task


@strawberry.enum(description="A metric of configurations, as the statistics fields name it.")
class Metric(Enum):
    ENERGY_PER_TOKEN_JOULES = strawberry.enum_value(
        "energy_per_token_joules", description="`energyPerTokenJoules`, in joules per token."
    )
    ENERGY_PER_REQUEST_JOULES = strawberry.enum_value(
        "energy_per_request_joules",
        description="`energyPerRequestJoules`, in joules per response.",
    )
    MEDIAN_ITL_MS = strawberry.enum_value(
        "median_itl_ms", description="`medianItlMs`, in milliseconds."
    )
    P90_ITL_MS = strawberry.enum_value("p90_itl_ms", description="`p90ItlMs`, in milliseconds.")
    P95_ITL_MS = strawberry.enum_value("p95_itl_ms", description="`p95ItlMs`, in milliseconds.")
    P99_ITL_MS = strawberry.enum_value("p99_itl_ms", description="`p99ItlMs`, in milliseconds.")
    OUTPUT_THROUGHPUT_TOKENS_PER_SEC = strawberry.enum_value(
        "output_throughput_tokens_per_sec",
        description="`outputThroughputTokensPerSec`, in output tokens per second.",
    )
    AVG_POWER_WATTS = strawberry.enum_value(
        "avg_power_watts", description="`avgPowerWatts`, in watts (all GPUs together)."
    )
    POWER_PER_GPU_WATTS = strawberry.enum_value(
        "power_per_gpu_watts", description="`powerPerGpuWatts`, in watts per GPU."
    )
    AVG_BATCH_SIZE = strawberry.enum_value(
        "avg_batch_size", description="`avgBatchSize`, in concurrent requests."
    )
    AVG_OUTPUT_LEN = strawberry.enum_value(
        "avg_output_len", description="`avgOutputLen`, in tokens per response."
    )
    ENERGY_PER_OUTPUT_JOULES = strawberry.enum_value(
        "energy_per_output_joules",
        description="Diffusion: `energyPerImageJoules` or `energyPerVideoJoules`, in joules per "
        "image or video.",
    )
    BATCH_LATENCY_S = strawberry.enum_value(
        "batch_latency_s", description="Diffusion: `batchLatencyS`, in seconds per batch."
    )
    THROUGHPUT_OUTPUTS_PER_SEC = strawberry.enum_value(
        "throughput_outputs_per_sec",
        description="Diffusion: `throughputImagesPerSec` or `throughputVideosPerSec`, in images "
        "or videos per second.",
    )


UNITS = {
    "energy_per_token_joules": "J/token",
    "energy_per_request_joules": "J/response",
    "median_itl_ms": "ms",
    "p90_itl_ms": "ms",
    "p95_itl_ms": "ms",
    "p99_itl_ms": "ms",
    "output_throughput_tokens_per_sec": "tokens/s",
    "avg_power_watts": "W",
    "power_per_gpu_watts": "W/GPU",
    "avg_batch_size": "requests",
    "avg_output_len": "tokens/response",
    "energy_per_output_joules": "J/output",
    "batch_latency_s": "s",
    "throughput_outputs_per_sec": "outputs/s",
}
UNIT = "Unit of the values, e.g. `J/token`, `ms`, `W`."


@strawberry.type(
    description="Statistics of one metric over a set of configurations; null statistics when "
    "the set is empty. Values in the metric's unit (`unit`)."
)
class MetricSummary:
    metric: Metric = strawberry.field(description="The metric summarised.")
    unit: str = strawberry.field(description=UNIT)
    minimum: float | None = strawberry.field(description="Smallest value.")
    maximum: float | None = strawberry.field(description="Largest value.")
    mean: float | None = strawberry.field(description="Arithmetic mean.")
    median: float | None = strawberry.field(
        description="Median (the mean of the two middle values for an even count)."
    )

    @classmethod
    def of(cls, name: str, value: Summary) -> MetricSummary:
        return cls(
            metric=Metric(name),
            unit=UNITS[name],
            minimum=value.minimum,
            maximum=value.maximum,
            mean=value.mean,
            median=value.median,
        )


@strawberry.type(
    description="Count, minimum, maximum, mean and median of each metric over the "
    "configurations a filter selects (derived by LeadGreen from the measured rows)."
)
class ConfigurationAggregate:
    count: int = strawberry.field(description="Number of configurations the filter selects.")
    metrics: list[MetricSummary] = strawberry.field(
        description="One summary per metric of the row shape, in a fixed order."
    )


@strawberry.type(description="Smallest and largest value of one metric: a slider's bounds.")
class MetricBounds:
    metric: Metric = strawberry.field(description="The metric.")
    unit: str = strawberry.field(description=UNIT)
    minimum: float = strawberry.field(description="Smallest value over the task's rows.")
    maximum: float = strawberry.field(description="Largest value over the task's rows.")

    @classmethod
    def of(cls, name: str, value: Bounds) -> MetricBounds:
        return cls(
            metric=Metric(name), unit=UNITS[name], minimum=value.minimum, maximum=value.maximum
        )


@strawberry.type(
    description="What a task's configurations span, for building a UI: the GPUs, GPU counts "
    "and batch sizes present and the bounds of every metric."
)
class TaskFacets:
    task: Task = strawberry.field(description="The task.")
    configurations: int = strawberry.field(description="Number of configurations of the task.")
    gpus: list[str] = strawberry.field(description="GPU types present, by name.")
    gpu_counts: list[int] = strawberry.field(description="Numbers of GPUs present, ascending.")
    batch_size_setting: str = strawberry.field(
        description="Which setting `batchSizes` lists: `maxNumSeqs` (LLM and MLLM tasks: the "
        "server's maximum batch, in requests) or `batchSize` (diffusion: outputs per batch)."
    )
    batch_sizes: list[int] = strawberry.field(
        description="Batch sizes present (see `batchSizeSetting`), ascending."
    )
    metrics: list[MetricBounds] = strawberry.field(
        description="Bounds of each metric of the task's row shape, in a fixed order."
    )


@strawberry.enum(description="How the bins of a histogram are spaced.")
class BinScale(Enum):
    LINEAR = strawberry.enum_value("linear", description="Evenly in value.")
    LOG = strawberry.enum_value("log", description="Evenly in log(value).")


@strawberry.type(
    description="The distribution of energy per response of one LLM or MLLM configuration, "
    "derived by LeadGreen: the measured output-length histogram times the configuration's "
    "energy per token (a response of n tokens costs n × energyPerTokenJoules). Lengths are "
    "taken as spread evenly within each measured bin."
)
class EnergyPerResponseDistribution:
    configuration: Configuration = strawberry.field(description="The configuration.")
    energy_per_token_joules: float = strawberry.field(description=metric.ENERGY_PER_TOKEN)
    scale: BinScale = strawberry.field(description="How `bins` are spaced.")
    bins: list[float] = strawberry.field(
        description="Bin edges, in joules per response; one more than there are counts. With "
        "LINEAR and no `binCount` they are the measured length bins × energy per token."
    )
    counts: list[float] = strawberry.field(
        description="Responses in each bin: whole numbers on the measured bins, fractions after "
        "re-binning (a bin's responses split in proportion to the overlap)."
    )
    responses: int = strawberry.field(description="Number of responses the histogram counts.")
    mean_joules: float = strawberry.field(description=metric.ENERGY_PER_REQUEST)
    histogram_mean_joules: float | None = strawberry.field(
        description="Mean of the histogram with each response at its bin's midpoint, in joules; "
        "close to meanJoules; null when the histogram counts no response."
    )
    p50_joules: float | None = strawberry.field(description="Median energy per response, in J.")
    p90_joules: float | None = strawberry.field(
        description="90th-percentile energy per response, in J."
    )
    p95_joules: float | None = strawberry.field(
        description="95th-percentile energy per response, in J."
    )
    p99_joules: float | None = strawberry.field(
        description="99th-percentile energy per response, in J. Percentiles come from the "
        "measured bins (whatever `bins` shows), interpolated linearly within the bin they fall "
        "in; null when the histogram counts no response."
    )

    @classmethod
    def of(
        cls, configuration: Configuration, value: EnergyDistribution, scale: BinScale
    ) -> EnergyPerResponseDistribution:
        p, row = value.percentiles, configuration.row
        assert isinstance(row, LlmRow)
        return cls(
            configuration=configuration,
            energy_per_token_joules=row.energy_per_token_joules,
            scale=scale,
            bins=list(value.histogram.edges),
            counts=list(value.histogram.counts),
            responses=round(value.responses),
            mean_joules=row.energy_per_request_joules,
            histogram_mean_joules=value.histogram_mean,
            p50_joules=p[50.0],
            p90_joules=p[90.0],
            p95_joules=p[95.0],
            p99_joules=p[99.0],
        )
