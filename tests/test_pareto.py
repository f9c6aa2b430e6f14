"""Time-energy Pareto frontiers on hand-made (latency, energy) points."""

from __future__ import annotations

import itertools
import random

import pytest

from analysis.pareto import frontier, pareto_optimal, pareto_optimal_within, undominated


def brute_force(points: list[tuple[float, float]]) -> list[bool]:
    return [not any(o[0] < p[0] and o[1] < p[1] for o in points) for p in points]


@pytest.mark.parametrize(
    ("points", "expected"),
    [
        ([], []),
        ([(1.0, 1.0)], [True]),
        # The second is beaten on both axes.
        ([(1.0, 1.0), (2.0, 2.0)], [True, False]),
        # A trade-off: both stay.
        ([(1.0, 2.0), (2.0, 1.0)], [True, True]),
        # Duplicate runs (equal points) both stay.
        ([(1.0, 1.0), (1.0, 1.0)], [True, True]),
        # Equal latency, higher energy: not strictly beaten on latency, so it stays.
        ([(1.0, 1.0), (1.0, 2.0)], [True, True]),
        # Equal energy, higher latency: stays too.
        ([(1.0, 1.0), (2.0, 1.0)], [True, True]),
        (
            [(10, 0.5), (20, 0.2), (8, 0.3), (30, 1.0), (35, 0.8), (36, 0.9), (25, 1.4)],
            [False, True, True, False, False, False, False],
        ),
    ],
)
def test_pareto_optimal(points, expected) -> None:
    assert pareto_optimal(points) == expected


def undominated_by_definition(points: list[tuple[float, float]]) -> list[bool]:
    return [not any(o[0] <= p[0] and o[1] <= p[1] and o != p for o in points) for p in points]


@pytest.mark.parametrize(
    ("rule", "definition"),
    [(pareto_optimal, brute_force), (undominated, undominated_by_definition)],
)
def test_agrees_with_the_definition_on_random_points(rule, definition) -> None:
    rng = random.Random(3)
    for n in range(40):
        # Few distinct values, so that ties on each axis are common.
        points = [(float(rng.randint(0, 6)), float(rng.randint(0, 6))) for _ in range(n)]
        assert rule(points) == definition(points)


@pytest.mark.parametrize(
    ("points", "expected"),
    [
        ([], []),
        ([(1.0, 1.0), (2.0, 2.0)], [True, False]),
        ([(1.0, 2.0), (2.0, 1.0)], [True, True]),
        ([(1.0, 1.0), (1.0, 1.0)], [True, True]),
        # A tie on one axis and a loss on the other is beaten (it stays on `pareto_optimal`).
        ([(1.0, 1.0), (1.0, 2.0)], [True, False]),
        ([(1.0, 1.0), (2.0, 1.0)], [True, False]),
    ],
)
def test_undominated(points, expected) -> None:
    assert undominated(points) == expected


def test_groups_are_judged_apart() -> None:
    points = [(1.0, 1.0), (2.0, 2.0), (3.0, 3.0), (4.0, 0.5)]
    groups = ["a", "b", "b", "a"]
    # (2, 2) would be beaten by (1, 1) globally, but it is alone against (3, 3) in group b.
    assert pareto_optimal_within(points, groups) == [True, True, False, True]
    assert pareto_optimal_within(points, [None] * 4) == pareto_optimal(points)
    assert pareto_optimal_within([], []) == []


def test_frontier_is_ordered_by_latency_then_energy_then_input_order() -> None:
    points = [(5.0, 1.0), (1.0, 3.0), (1.0, 3.0), (3.0, 2.0), (1.0, 2.5), (9.0, 9.0)]
    assert frontier(points) == [4, 1, 2, 3, 0]
    assert frontier([]) == []


def test_every_permutation_keeps_the_same_points() -> None:
    points = [(1.0, 3.0), (2.0, 2.0), (2.0, 3.0), (3.0, 1.0), (3.0, 3.0)]
    for order in itertools.permutations(range(len(points))):
        shuffled = [points[i] for i in order]
        kept = {shuffled[i] for i, on in enumerate(pareto_optimal(shuffled)) if on}
        # (2, 3) ties (1, 3) on energy and survives; (3, 3) is beaten by (2, 2).
        assert kept == {(1.0, 3.0), (2.0, 2.0), (2.0, 3.0), (3.0, 1.0)}
