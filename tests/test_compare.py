"""Comparisons: ratios to the best, models under the same constraints, GPU against GPU."""

from __future__ import annotations

import pytest

from analysis.compare import (
    Saving,
    compare_gpus,
    compare_models,
    ratio,
    ratios_to_best,
)
from analysis.leaderboard import Candidate, Constraints


def c(item: str, model: str, energy: float, gpu: str = "H100", latency: float = 10.0):
    return Candidate(item, model, gpu, 1, latency, energy, 100.0)


@pytest.mark.parametrize(
    ("values", "expected"),
    [
        ([], []),
        ([2.0], [1.0]),
        ([2.0, 4.0, 3.0], [1.0, 2.0, 1.5]),
        ([2.0, None, 2.0], [1.0, None, 1.0]),
        ([None, None], [None, None]),
        ([0.0, 0.0], [1.0, 1.0]),
        ([0.0, 1.0], [1.0, None]),
    ],
)
def test_ratios_to_best(values, expected) -> None:
    assert ratios_to_best(values) == expected


def test_ratio() -> None:
    assert ratio(3.0, 2.0) == 1.5
    assert ratio(0.0, 0.0) == 1.0
    assert ratio(1.0, 0.0) is None


ROWS = [
    c("a-h", "a", 0.4),
    c("a-b", "a", 0.3, gpu="B200"),
    c("b-h", "b", 0.2),
    c("b-slow", "b", 0.1, latency=900),
    c("c-b", "c", 0.6, gpu="B200"),
]


def test_compare_models_in_the_order_given() -> None:
    standings = compare_models(ROWS, Constraints(max_latency=500), ["c", "a", "b", "z"])
    assert [
        (s.model, s.best.item if s.best else None, s.ratio_to_best, s.above_best) for s in standings
    ] == [
        ("c", "c-b", 0.6 / 0.2, 0.6 - 0.2),
        ("a", "a-b", 0.3 / 0.2, 0.3 - 0.2),
        ("b", "b-h", 1.0, 0.0),
        # A model with no candidate (or none within the constraints) has no standing.
        ("z", None, None, None),
    ]


def test_compare_models_when_none_meets_the_deadline() -> None:
    standings = compare_models(ROWS, Constraints(max_latency=1), ["a", "b"])
    assert [(s.best, s.ratio_to_best, s.above_best) for s in standings] == [
        (None, None, None),
        (None, None, None),
    ]


def test_saving() -> None:
    s = Saving(baseline=0.4, candidate=0.3)
    assert (s.saved, s.ratio, s.saved_fraction) == (0.4 - 0.3, 0.3 / 0.4, 1 - 0.3 / 0.4)
    worse = Saving(baseline=0.2, candidate=0.3)
    assert (worse.saved, worse.ratio) == (0.2 - 0.3, 0.3 / 0.2)
    assert worse.saved_fraction == pytest.approx(-0.5)
    assert (Saving(0.0, 1.0).ratio, Saving(0.0, 1.0).saved_fraction) == (None, None)


def test_compare_gpus_per_model_in_order_of_first_appearance() -> None:
    matchups = compare_gpus(ROWS, Constraints(max_latency=500), "H100", "B200")
    assert [
        (m.model, m.baseline and m.baseline.item, m.candidate and m.candidate.item)
        for m in matchups
    ] == [("a", "a-h", "a-b"), ("b", "b-h", None), ("c", None, "c-b")]
    assert matchups[0].saving == Saving(0.4, 0.3)
    assert matchups[1].saving is None


def test_compare_gpus_replaces_the_constraints_own_gpu_choice() -> None:
    matchups = compare_gpus(
        ROWS, Constraints(gpus=frozenset({"H100"})), "H100", "B200", models=["a"]
    )
    assert [
        (m.baseline and m.baseline.item, m.candidate and m.candidate.item) for m in matchups
    ] == [("a-h", "a-b")]


def test_compare_gpus_on_nothing() -> None:
    assert compare_gpus([], Constraints(), "H100", "B200") == []
    [only] = compare_gpus([], Constraints(), "H100", "B200", models=["a"])
    assert (only.baseline, only.candidate, only.saving) == (None, None, None)
