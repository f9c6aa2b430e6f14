"""Best configuration per model under constraints, on hand-made candidates."""

from __future__ import annotations

import pytest

from analysis.leaderboard import Candidate, Constraints, best_per_model


def c(
    item: str,
    model: str,
    energy: float,
    latency: float = 10.0,
    gpu: str = "H100",
    num_gpus: int = 1,
    throughput: float = 100.0,
) -> Candidate[str]:
    return Candidate(item, model, gpu, num_gpus, latency, energy, throughput)


ROWS = [
    c("a1", "a", 0.5, latency=10),
    c("a2", "a", 0.2, latency=40, throughput=900),
    c("b1", "b", 0.3, latency=8, gpu="B200"),
    c("m1", "m", 1.0, latency=30, num_gpus=2),
    c("m2", "m", 0.8, latency=35, num_gpus=2, throughput=300),
]


def items(chosen: list[Candidate[str]]) -> list[str]:
    return [x.item for x in chosen]


@pytest.mark.parametrize(
    ("constraints", "expected"),
    [
        (Constraints(), ["a2", "b1", "m2"]),
        (Constraints(max_latency=35), ["b1", "a1", "m2"]),
        # Bounds are inclusive: a latency equal to the deadline, an energy equal to the budget.
        (Constraints(max_latency=34.999), ["b1", "a1", "m1"]),
        (Constraints(max_energy=0.3), ["a2", "b1"]),
        (Constraints(gpus=frozenset({"H100"})), ["a2", "m2"]),
        (Constraints(gpus=frozenset({"H100", "B200"}), num_gpus=frozenset({2})), ["m2"]),
        (Constraints(min_throughput=300), ["a2", "m2"]),
        (Constraints(max_latency=9, max_energy=0.3), ["b1"]),
    ],
)
def test_constraints(constraints: Constraints, expected: list[str]) -> None:
    assert items(best_per_model(ROWS, constraints)) == expected


def test_a_deadline_nothing_meets_gives_an_empty_table() -> None:
    assert best_per_model(ROWS, Constraints(max_latency=1)) == []


def test_no_candidates() -> None:
    assert best_per_model([], Constraints()) == []


def test_a_single_candidate() -> None:
    assert items(best_per_model([c("x", "x", 0.1)], Constraints())) == ["x"]


def test_the_first_row_wins_a_tie_within_a_model() -> None:
    """As the leaderboard's strict `<`: a later row of equal energy does not replace it."""
    rows = [c("first", "a", 0.4, latency=30), c("second", "a", 0.4, latency=5)]
    assert items(best_per_model(rows, Constraints())) == ["first"]


def test_models_of_equal_energy_keep_the_order_of_their_first_admitted_row() -> None:
    rows = [
        c("z-slow", "z", 0.9, latency=600),
        c("y1", "y", 0.5),
        c("z1", "z", 0.5),
        c("x1", "x", 0.5),
    ]
    # z's first row is past the deadline, so z enters the table after y.
    assert items(best_per_model(rows, Constraints(max_latency=500))) == ["y1", "z1", "x1"]


def test_duplicate_runs_are_separate_candidates() -> None:
    """Two runs of the same setting: the lower-energy one wins, whichever comes first."""
    rows = [c("run1", "a", 0.9, latency=36), c("run2", "a", 0.8, latency=35)]
    assert items(best_per_model(rows, Constraints())) == ["run2"]
    assert items(best_per_model(rows, Constraints(max_latency=35.5))) == ["run2"]
