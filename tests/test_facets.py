"""What a task's rows span: GPUs, GPU counts, batch sizes and each metric's bounds."""

from __future__ import annotations

from dataclasses import dataclass
from operator import attrgetter

from analysis.facets import Bounds, Facets, facets

METRICS = {"energy": attrgetter("energy"), "latency": attrgetter("latency")}


@dataclass(frozen=True)
class Row:
    gpu: str
    num_gpus: int
    max_num_seqs: int
    energy: float
    latency: float


def span(rows: list[Row]) -> Facets:
    return facets(rows, batch_size=attrgetter("max_num_seqs"), metrics=METRICS)


def test_no_rows_span_nothing() -> None:
    assert span([]) == Facets(0, (), (), (), {"energy": None, "latency": None})


def test_a_single_row_is_both_bounds() -> None:
    assert span([Row("H100", 1, 64, 0.3, 20.0)]) == Facets(
        1, ("H100",), (1,), (64,), {"energy": Bounds(0.3, 0.3), "latency": Bounds(20.0, 20.0)}
    )


def test_values_are_distinct_and_ascending_and_duplicates_count_once() -> None:
    rows = [
        Row("H100", 8, 256, 0.9, 40.0),
        Row("B200", 1, 8, 0.2, 10.0),
        Row("H100", 2, 256, 0.9, 40.0),  # ties another row's measurements
        Row("H100", 2, 16, 0.5, 12.0),
    ]
    assert span(rows) == Facets(
        configurations=4,
        gpus=("B200", "H100"),
        gpu_counts=(1, 2, 8),
        batch_sizes=(8, 16, 256),
        bounds={"energy": Bounds(0.2, 0.9), "latency": Bounds(10.0, 40.0)},
    )


def test_the_batch_size_setting_is_the_callers_choice() -> None:
    @dataclass(frozen=True)
    class Diffusion:
        gpu: str
        num_gpus: int
        batch_size: int

    rows = [Diffusion("H100", 1, 4), Diffusion("H100", 1, 1)]
    assert facets(rows, batch_size=attrgetter("batch_size"), metrics={}) == Facets(
        2, ("H100",), (1,), (1, 4), {}
    )
