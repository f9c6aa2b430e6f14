"""Statistics types: the metrics, aggregates, facets and the energy-per-response distribution."""

from __future__ import annotations

from enum import Enum

import strawberry
from strawberry.utils.str_converters import to_camel_case

from analysis.aggregate import Summary
from analysis.distribution import EnergyDistribution
from analysis.facets import Bounds
from db import fields
from db.kinds import KINDS, LLM
from db.rows import LlmRow
from graph.schema.types import common as metric
from graph.schema.types.model import Configuration
from graph.schema.types.task import Task


def _every_metric() -> dict[str, fields.Metric]:
    """Every kind's metrics (db.fields), in the order of the kinds."""
    found: dict[str, fields.Metric] = {}
    for kind in KINDS:
        for name, m in fields.metrics(kind.rows).items():
            found.setdefault(name, m)
    return found


METRICS = _every_metric()


def _summary(m: fields.Metric) -> str:
    """`p95ItlMs`, in milliseconds.": what the API calls the metric, and its unit; named with
    its kind when LLM and MLLM rows have none of it."""
    kinds = [kind for kind in KINDS if set(kind.rows) & set(m.rows)]
    prefix = "" if LLM in kinds else f"{kinds[0].called.capitalize()}: "
    names = " or ".join(f"`{to_camel_case(name)}`" for name in m.names)
    return f"{prefix}{names}, in {m.spelled}."


Metric: type[Enum] = strawberry.enum(  # type: ignore[call-overload]
    Enum(
        "Metric",
        {
            name.upper(): strawberry.enum_value(name, description=_summary(m))
            for name, m in METRICS.items()
        },
    ),
    description="A metric of configurations, as the statistics fields name it.",
)
UNITS = {name: m.unit for name, m in METRICS.items()}
UNIT = "Unit of the values, e.g. `J/token`, `ms`, `W`."


@strawberry.type(
    description="Statistics of one metric over a set of configurations; null statistics when "
    "the set is empty. Values in the metric's unit (`unit`)."
)
class MetricSummary:
    metric: Metric = strawberry.field(description="The metric summarised.")  # type: ignore[valid-type]
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
    metric: Metric = strawberry.field(description="The metric.")  # type: ignore[valid-type]
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
    energy_per_token_joules: float = strawberry.field(
        description=metric.describe("energy_per_token_joules")
    )
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
    mean_joules: float = strawberry.field(description=metric.describe("energy_per_request_joules"))
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
