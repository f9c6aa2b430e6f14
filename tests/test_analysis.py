"""The pure computations: curves and power, on hand-made rows."""

from __future__ import annotations

from dataclasses import dataclass

import pytest

from analysis.curves import SeriesKey, concurrency_curves
from analysis.power import PowerSummary, Spread, fraction_of_tdp, power_by_gpu


@dataclass(frozen=True)
class Row:
    id: int
    gpu: str = "H100"
    num_gpus: int = 1
    max_num_seqs: int = 8
    tensor_parallel: int = 1
    data_parallel: int = 1
    expert_parallel: int = 1
    avg_power_watts: float = 100.0


def test_curves_group_by_setting_and_order_points_by_batch_size() -> None:
    rows = [
        Row(1, max_num_seqs=64),
        Row(2, gpu="B200"),
        Row(3, max_num_seqs=8),
        Row(4, num_gpus=2, tensor_parallel=2),
        Row(5, max_num_seqs=16),
    ]
    curves = concurrency_curves(rows)
    assert [(c.key, [p.id for p in c.points]) for c in curves] == [
        (SeriesKey("B200", 1, 1, 1, 1), [2]),
        (SeriesKey("H100", 1, 1, 1, 1), [3, 5, 1]),
        (SeriesKey("H100", 2, 2, 1, 1), [4]),
    ]


def test_repeated_runs_stay_separate_points_in_id_order() -> None:
    rows = [Row(9, max_num_seqs=256), Row(7, max_num_seqs=256), Row(8, max_num_seqs=128)]
    (curve,) = concurrency_curves(rows)
    assert [(p.max_num_seqs, p.id) for p in curve.points] == [(128, 8), (256, 7), (256, 9)]


def test_no_rows_no_curves() -> None:
    assert concurrency_curves([]) == []
    assert power_by_gpu([], {}) == []


def test_power_by_gpu() -> None:
    rows = [
        Row(1, avg_power_watts=300.0),
        Row(2, num_gpus=2, avg_power_watts=1000.0),
        Row(3, avg_power_watts=500.0),
        Row(4, gpu="X1", avg_power_watts=50.0),
    ]
    assert power_by_gpu(rows, {"H100": 700.0, "X1": None}) == [
        PowerSummary(
            "H100",
            3,
            Spread(300.0, 500.0, 1000.0),
            Spread(300.0, 500.0, 500.0),
            Spread(300 / 700, 500 / 700, 500 / 700),
        ),
        PowerSummary("X1", 1, Spread(50.0, 50.0, 50.0), Spread(50.0, 50.0, 50.0), None),
    ]


def test_median_of_an_even_count_is_the_mean_of_the_middle_two() -> None:
    assert Spread.of([4.0, 1.0, 3.0, 2.0]) == Spread(1.0, 2.5, 4.0)


@pytest.mark.parametrize(
    ("watts", "tdp", "expected"),
    [(350.0, 700.0, 0.5), (1000.0, 1000.0, 1.0), (10.0, None, None), (10.0, 0.0, None)],
)
def test_fraction_of_tdp(watts, tdp, expected) -> None:
    assert fraction_of_tdp(watts, tdp) == expected


def test_identities_report_the_rows_that_break_them() -> None:
    from analysis.identities import Violations, check

    good = {
        "energy_per_request_joules": 20.0,
        "energy_per_token_joules": 0.2,
        "avg_output_len": 100.0,
        "avg_power_watts": 100.0,
        "output_throughput_tokens_per_sec": 500.0,
    }
    stale = {**good, "output_throughput_tokens_per_sec": 250.0}
    assert check("tasks/t.json", [good, good]) == []
    (violations,) = check("tasks/t.json", [good, stale, good])
    assert violations == Violations(
        "power_over_throughput",
        "avg_power_watts ÷ output_throughput_tokens_per_sec = energy_per_token_joules",
        "tasks/t.json",
        [1],
        3,
        0.5,
        "holds from the 2026-01-01 throughput correction on; data compiled before it fails it "
        "on every row",
    )
    assert check("tasks/image.json", [{"energy_per_image_joules": 1.0}]) == []
