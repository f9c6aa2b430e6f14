"""Best configuration per model under constraints, on hand-made candidates."""

from __future__ import annotations

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from analysis.leaderboard import (
    Candidate,
    Constraints,
    Fields,
    PerModel,
    best_per_model,
    best_per_model_sorted,
)
from tests.conftest import examples


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


def _sorted_best(
    candidates: list[Candidate[str]],
    constraints: Constraints,
    models: frozenset[str] | None = None,
) -> list[Candidate[str]]:
    """best_per_model_sorted over the candidates, each read back from itself."""
    by_item = {x.item: x for x in candidates}
    fields: Fields[str] = Fields(
        model=lambda i: by_item[i].model,
        gpu=lambda i: by_item[i].gpu,
        num_gpus=lambda i: by_item[i].num_gpus,
        latency=lambda i: by_item[i].latency,
        energy=lambda i: by_item[i].energy,
        throughput=lambda i: by_item[i].throughput,
    )
    ranked = PerModel([x.item for x in candidates], fields.model, fields.energy)
    return best_per_model_sorted(ranked, fields, constraints, models)


@pytest.mark.parametrize(
    "constraints",
    [
        Constraints(),
        Constraints(max_latency=35),
        Constraints(max_latency=500),
        Constraints(max_energy=0.3),
        Constraints(gpus=frozenset({"H100"}), num_gpus=frozenset({2})),
    ],
)
def test_sorted_once_ranks_as_best_per_model(constraints: Constraints) -> None:
    rows = [
        *ROWS,
        c("z-slow", "z", 0.9, latency=600),
        c("y1", "y", 0.5),
        c("z1", "z", 0.5),
        c("x1", "x", 0.5),
    ]
    assert _sorted_best(rows, constraints) == best_per_model(rows, constraints)


@settings(max_examples=examples(300), deadline=None)
@given(
    st.lists(
        st.tuples(
            st.sampled_from("abcd"),
            st.sampled_from([0.1, 0.2, 0.3]),
            st.sampled_from([5.0, 10.0, 20.0]),
            st.sampled_from(["H100", "B200"]),
            st.sampled_from([1, 2]),
        ),
        max_size=30,
    ),
    st.sampled_from([None, 5.0, 10.0]),
    st.sampled_from([None, frozenset({"H100"})]),
    st.sampled_from([None, frozenset({1})]),
    st.sampled_from([None, frozenset("ab")]),
)
def test_sorted_once_ranks_as_best_per_model_with_ties(
    rows: list[tuple[str, float, float, str, int]],
    deadline: float | None,
    gpus: frozenset[str] | None,
    counts: frozenset[int] | None,
    models: frozenset[str] | None,
) -> None:
    """Ties of energy within and between models, deadlines, GPU and model choices: the same
    table as best_per_model over the chosen models' candidates, row for row."""
    candidates = [
        c(f"r{i}", m, energy, latency=latency, gpu=gpu, num_gpus=n)
        for i, (m, energy, latency, gpu, n) in enumerate(rows)
    ]
    rule = Constraints(max_latency=deadline, gpus=gpus, num_gpus=counts)
    chosen = [x for x in candidates if models is None or x.model in models]
    assert _sorted_best(candidates, rule, models) == best_per_model(chosen, rule)
