"""Fitted concurrency curves: logistic fits of a series' metrics, and estimates from them."""

from __future__ import annotations

from enum import Enum
from typing import TYPE_CHECKING, Annotated

import strawberry

from analysis import fit as fitting
from db import derived
from db.catalog import Catalog
from db.rows import LlmRow
from graph.errors import BadInput
from graph.schema.inputs import BatchSizeArgument
from graph.schema.types import common as metric
from graph.schema.types.node import global_id
from graph.schema.types.statistics import UNIT, UNITS

if TYPE_CHECKING:
    from graph.schema.types.model import Model


@strawberry.enum(description="How estimates along a fitted curve are made.")
class EstimateMethod(Enum):
    FIT = strawberry.enum_value(
        "fit", description="The logistic fit, which is within 15 % of every measured batch size."
    )
    INTERPOLATION = strawberry.enum_value(
        "interpolation",
        description="Linear interpolation in log2(batch size) between the means of the runs at "
        "the two nearest measured batch sizes; no value outside them. Used when there is no "
        "fit or the fit misses a measured batch size by more than 15 %.",
    )


@strawberry.type(description="A metric's value estimated at one batch size.")
class CurveEstimate:
    batch_size: float = strawberry.field(description="The batch size asked for (max_num_seqs).")
    value: float | None = strawberry.field(
        description="The estimate, in the metric's unit; null when interpolation is asked for "
        "outside the measured batch sizes, or when the fit gives a value the metric cannot "
        "physically take (power, energy and throughput below 0, latency at or below 0): `note` "
        "says which."
    )
    method: EstimateMethod = strawberry.field(description="How the value was made.")
    extrapolated: bool = strawberry.field(
        description="Whether the batch size lies outside the smallest and largest measured."
    )
    note: str | None = strawberry.field(description="Why `value` is null, when it is.")

    @classmethod
    def of(cls, value: fitting.Estimate) -> CurveEstimate:
        return cls(
            batch_size=value.batch_size,
            value=value.value,
            method=EstimateMethod[value.method.name],
            extrapolated=value.extrapolated,
            note=value.reason,
        )


@strawberry.type(description="The runs measured at one batch size.")
class MeasuredBatch:
    batch_size: int = strawberry.field(description=metric.describe("max_num_seqs"))
    mean: float = strawberry.field(
        description="Mean of the runs, in the metric's unit: what fits and interpolation use."
    )
    runs: list[float] = strawberry.field(
        description="Each run's value, in upstream order (more than one for repeated runs)."
    )
    configuration_ids: list[strawberry.ID] = strawberry.field(
        description="The configurations measured, one per run (their `id`)."
    )


@strawberry.type(
    description="A four-parameter logistic fit y = b0 + amplitude·sigmoid(k·(log2(batch) − x0)) "
    "through every run (the ML.ENERGY data toolkit's `LogisticModel`), with its quality."
)
class LogisticFit:
    b0: float = strawberry.field(
        description="b0: the asymptote at small batch sizes (log2(batch) → −∞), in the metric's "
        "unit."
    )
    amplitude: float = strawberry.field(
        description="L: the change from small to large batch sizes, in the metric's unit (the "
        "asymptote at large batch sizes is b0 + L); negative for a metric that falls as the "
        "batch grows."
    )
    k: float = strawberry.field(
        description="Steepness k, per doubling of the batch size (between 0.01 and 100)."
    )
    x0: float = strawberry.field(description="Midpoint x0, in log2(batch size).")
    r_squared: float = strawberry.field(
        description="Coefficient of determination over every run (1 = perfect)."
    )
    max_relative_residual: float | None = strawberry.field(
        description="Largest |fit − mean of the runs| ÷ |mean of the runs| over the measured "
        "batch sizes (0.15 = 15 %); null when a mean is 0 and the fit is not."
    )
    misses_measured: bool = strawberry.field(
        description="Whether the fit misses some measured batch size by more than 15 %; then "
        "estimates interpolate instead."
    )
    missed_batch_sizes: list[int] = strawberry.field(
        description="The batch sizes the fit misses by more than 15 %, ascending."
    )

    @classmethod
    def of(cls, value: fitting.Fit) -> LogisticFit:
        residual = value.max_relative_residual
        return cls(
            b0=value.logistic.b0,
            amplitude=value.logistic.amplitude,
            k=value.logistic.k,
            x0=value.logistic.x0,
            r_squared=value.r_squared,
            max_relative_residual=None if residual == float("inf") else residual,
            misses_measured=not value.reliable,
            missed_batch_sizes=[int(b) for b in value.misses],
        )


def _checked(batch_size: float) -> float:
    if not batch_size >= 1:
        raise BadInput(f"batchSize must be at least 1, got {batch_size}")
    return batch_size


@strawberry.type(
    description="One metric of a concurrency series against max_num_seqs: the measured runs, "
    "the logistic fit (when there are at least 4 distinct batch sizes) and estimates that say "
    "whether they come from the fit or from interpolation."
)
class FittedMetric:
    unit: str = strawberry.field(description=UNIT)
    measured: list[MeasuredBatch] = strawberry.field(
        description="The runs by batch size, ascending."
    )
    fit: LogisticFit | None = strawberry.field(
        description="The fit; null with fewer than 4 distinct batch sizes (see `note`)."
    )
    method: EstimateMethod = strawberry.field(
        description="How `estimate` answers for this metric: FIT when there is a fit that is "
        "within 15 % of every measured batch size, else INTERPOLATION."
    )
    note: str = strawberry.field(description="Why `method` is what it is, in a sentence.")
    curve: strawberry.Private[fitting.Curve]
    bound: strawberry.Private[fitting.Bound]

    @strawberry.field(description="The metric at one batch size.")
    def estimate(self, batch_size: BatchSizeArgument) -> CurveEstimate:
        return CurveEstimate.of(self.curve.estimate(_checked(batch_size), self.bound))

    @strawberry.field(description="The metric at each of several batch sizes, in order.")
    def estimates(
        self,
        batch_sizes: Annotated[
            list[float],
            strawberry.argument(description="Batch sizes (max_num_seqs), each at least 1."),
        ],
    ) -> list[CurveEstimate]:
        return [CurveEstimate.of(self.curve.estimate(_checked(b), self.bound)) for b in batch_sizes]

    @classmethod
    def of(cls, name: str, rows: list[LlmRow], curve: fitting.Curve) -> FittedMetric:
        ids: dict[int, list[strawberry.ID]] = {}
        for r in rows:
            ids.setdefault(r.max_num_seqs, []).append(global_id("Configuration", r.key))
        return cls(
            unit=UNITS[name],
            measured=[
                MeasuredBatch(
                    batch_size=int(m.batch_size),
                    mean=m.mean,
                    runs=list(m.values),
                    configuration_ids=ids[int(m.batch_size)],
                )
                for m in curve.measured
            ],
            fit=LogisticFit.of(curve.fit) if curve.fit else None,
            method=EstimateMethod[curve.method.name],
            note=_note(curve),
            curve=curve,
            bound=BOUNDS.get(name, fitting.Bound()),
        )


# What each fitted metric can physically be: latency is never 0; the others never below it.
BOUNDS = {"median_itl_ms": fitting.Bound(0.0, strict=True)}


def _note(curve: fitting.Curve) -> str:
    if curve.fit is None:
        n = len(curve.measured)
        return (
            f"Only {n} distinct batch size{'' if n == 1 else 's'}: a four-parameter fit needs at "
            f"least {fitting.MIN_BATCH_SIZES}, so estimates interpolate between measured points."
        )
    if curve.fit.misses:
        sizes = ", ".join(str(int(b)) for b in curve.fit.misses)
        return (
            f"The fit misses the measured value at batch size {sizes} by more than 15 %, so "
            "estimates interpolate between measured points."
        )
    return "The fit is within 15 % of the measured value at every batch size."


@strawberry.type(
    description="Fitted concurrency curves of one model on one task at one GPU type, GPU count "
    "and parallelism: power, energy per token, median ITL and throughput against max_num_seqs."
)
class FittedCurveSeries:
    task: str = strawberry.field(description="Task the points were measured on.")
    gpu_model: str = strawberry.field(description=metric.GPU_MODEL)
    num_gpus: int = strawberry.field(description=metric.describe("num_gpus"))
    tensor_parallel: int = strawberry.field(description="Tensor-parallel degree.")
    data_parallel: int = strawberry.field(description="Data-parallel degree.")
    expert_parallel: int = strawberry.field(description="Expert-parallel degree.")
    batch_sizes: list[int] = strawberry.field(
        description="Distinct measured max_num_seqs, ascending."
    )
    runs: int = strawberry.field(
        description="Number of configurations (runs) in the series; more than the batch sizes "
        "when a setting was run again."
    )
    model: Annotated[Model, strawberry.lazy("graph.schema.types.model")] = strawberry.field(
        description="The model measured."
    )
    rows: strawberry.Private[list[LlmRow]]
    catalog: strawberry.Private[Catalog]

    def _fitted(self, name: str) -> FittedMetric:
        """Fitted once per release: a series is all of a model's rows at one setting."""
        key = (FittedMetric, name, tuple(r.id for r in self.rows))
        curve = derived.fitted(self.catalog, self.rows, name)
        return self.catalog.once(key, lambda: FittedMetric.of(name, self.rows, curve))

    @strawberry.field(description="Average power: " + metric.describe("avg_power_watts"))
    def avg_power_watts(self) -> FittedMetric:
        return self._fitted("avg_power_watts")

    @strawberry.field(description="Energy per token: " + metric.describe("energy_per_token_joules"))
    def energy_per_token_joules(self) -> FittedMetric:
        return self._fitted("energy_per_token_joules")

    @strawberry.field(description="Median ITL: " + metric.describe("median_itl_ms"))
    def median_itl_ms(self) -> FittedMetric:
        return self._fitted("median_itl_ms")

    @strawberry.field(
        description="Throughput: " + metric.describe("output_throughput_tokens_per_sec")
    )
    def output_throughput_tokens_per_sec(self) -> FittedMetric:
        return self._fitted("output_throughput_tokens_per_sec")
