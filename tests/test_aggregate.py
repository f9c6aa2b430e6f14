"""Count, minimum, maximum, mean and median of each metric over a set of rows."""

from __future__ import annotations

from dataclasses import dataclass
from operator import attrgetter

from analysis.aggregate import Aggregate, Summary, aggregate
from db.kinds import DIFFUSION, LLM

METRICS = {"energy": attrgetter("energy"), "power": attrgetter("power")}


@dataclass(frozen=True)
class Row:
    energy: float
    power: float


def test_empty_set_counts_zero_with_null_statistics() -> None:
    empty = Summary(0, None, None, None, None)
    assert aggregate([], METRICS) == Aggregate(0, {"energy": empty, "power": empty})


def test_a_single_row_is_every_statistic() -> None:
    assert aggregate([Row(0.5, 400.0)], METRICS) == Aggregate(
        1,
        {
            "energy": Summary(1, 0.5, 0.5, 0.5, 0.5),
            "power": Summary(1, 400.0, 400.0, 400.0, 400.0),
        },
    )


def test_duplicate_rows_count_twice_and_an_even_count_has_a_middle_mean() -> None:
    rows = [Row(1.0, 100.0), Row(1.0, 100.0), Row(3.0, 300.0), Row(4.0, 600.0)]
    assert aggregate(rows, METRICS) == Aggregate(
        4,
        {
            "energy": Summary(4, 1.0, 4.0, 2.25, 2.0),
            "power": Summary(4, 100.0, 600.0, 275.0, 200.0),
        },
    )


def test_ties_at_the_extremes() -> None:
    rows = [Row(2.0, 1.0), Row(2.0, 1.0), Row(2.0, 1.0)]
    assert aggregate(rows, {"energy": attrgetter("energy")}) == Aggregate(
        3, {"energy": Summary(3, 2.0, 2.0, 2.0, 2.0)}
    )


def test_metric_lists_name_each_row_shapes_figures_in_order() -> None:
    assert list(LLM.metrics) == [
        "energy_per_token_joules",
        "energy_per_request_joules",
        "median_itl_ms",
        "p90_itl_ms",
        "p95_itl_ms",
        "p99_itl_ms",
        "output_throughput_tokens_per_sec",
        "avg_power_watts",
        "power_per_gpu_watts",
        "avg_batch_size",
        "avg_output_len",
    ]
    assert list(DIFFUSION.metrics) == [
        "energy_per_output_joules",
        "batch_latency_s",
        "throughput_outputs_per_sec",
        "avg_power_watts",
        "power_per_gpu_watts",
    ]


def test_power_per_gpu_is_derived() -> None:
    @dataclass(frozen=True)
    class Powered:
        avg_power_watts: float
        num_gpus: int

    assert LLM.metrics["power_per_gpu_watts"](Powered(1000.0, 4)) == 250.0
