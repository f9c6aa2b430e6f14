"""Per-request impact (analysis.impact) on hand-made configurations and against a brute-force
computation of its own on generated ones; grid zones (db.grid) from EcoLogits' figures."""

from __future__ import annotations

import json
from importlib import resources

import pytest
from hypothesis import given
from hypothesis import strategies as st

from analysis.impact import request_impact
from analysis.power import Spread
from db import grid
from tests.test_plan import candidate

# Three configurations: 0.5, 0.2 and 0.3 J a token, 10, 20 and 8 ms; each measured at 100
# output tokens a response.
THREE = [
    candidate(1, energy=0.5, latency=10.0),
    candidate(2, energy=0.2, latency=20.0, per_request=300.0),
    candidate(3, energy=0.3, latency=8.0),
]


def spread(s: Spread | None) -> tuple[float, float, float] | None:
    """The figures as a tuple, which pytest.approx compares (a dataclass it does not)."""
    return None if s is None else (s.minimum, s.median, s.maximum)


def test_a_request_over_every_configuration() -> None:
    """200 tokens at PUE 1.5: 150, 60 and 90 J; 400 g a kWh makes 1 J 1/9,000 g."""
    found = request_impact(THREE, 200.0, pue=1.5, carbon_intensity=400.0)
    assert (found.candidates, found.used, found.excluded) == (3, 3, 0)
    assert found.energy == Spread(60.0, 90.0, 150.0)
    assert spread(found.carbon) == pytest.approx((60 / 9000, 90 / 9000, 150 / 9000))
    assert found.lowest is THREE[1]
    assert found.highest is THREE[0]


def test_each_configurations_own_output_length() -> None:
    found = request_impact(THREE, None)
    assert found.energy == Spread(30.0, 50.0, 60.0)  # 0.5 x 100, 0.2 x 300, 0.3 x 100
    assert found.carbon is None
    assert found.lowest is THREE[2]


def test_the_latency_limit_is_inclusive() -> None:
    found = request_impact(THREE, 100.0, max_latency=10.0)
    assert (found.used, found.excluded) == (2, 1)
    assert found.energy == Spread(30.0, 40.0, 50.0)  # an even count: the middle two's mean


def test_no_configuration_within_the_limit() -> None:
    found = request_impact(THREE, 100.0, carbon_intensity=400.0, max_latency=5.0)
    assert (found.candidates, found.used, found.excluded) == (3, 0, 3)
    assert (found.energy, found.carbon, found.lowest, found.highest) == (None,) * 4


def test_ties_go_to_the_first_in_order() -> None:
    same = [candidate(2, energy=0.4), candidate(1, energy=0.4)]
    found = request_impact(same, 10.0)
    assert (found.lowest, found.highest) == (same[1], same[1])


configurations = st.lists(
    st.builds(
        candidate,
        st.integers(0, 1000),
        energy=st.floats(0.0, 50.0),
        latency=st.floats(1.0, 500.0),
        per_request=st.floats(1.0, 4000.0),
    ),
    max_size=12,
)


@given(
    configurations,
    st.one_of(st.none(), st.integers(1, 100_000)),
    st.floats(1.0, 3.0),
    st.one_of(st.none(), st.floats(0.0, 1000.0)),
    st.one_of(st.none(), st.floats(1.0, 500.0)),
)
def test_against_a_brute_force_computation(cs, tokens, pue, intensity, most) -> None:
    """Each configuration within the limit, its energy a request computed alone: the least,
    the middle one (or the middle two's mean) and the most of them, sorted."""
    found = request_impact(cs, tokens, pue=pue, carbon_intensity=intensity, max_latency=most)
    within = [c for c in cs if most is None or c.latency <= most]
    joules = sorted(
        c.energy_per_output * (c.outputs_per_request if tokens is None else tokens) * pue
        for c in within
    )
    assert (found.candidates, found.used, found.excluded) == (
        len(cs),
        len(within),
        len(cs) - len(within),
    )
    if not joules:
        assert found.energy is None
        return
    half = len(joules) // 2
    median = joules[half] if len(joules) % 2 else (joules[half - 1] + joules[half]) / 2
    expected = (joules[0], median, joules[-1])
    assert spread(found.energy) == pytest.approx(expected)
    if intensity is None:
        assert found.carbon is None
    else:
        assert spread(found.carbon) == pytest.approx([j / 3.6e6 * intensity for j in expected])
    assert found.lowest is not None and found.highest is not None
    assert found.lowest.energy_per_output * pue * (
        found.lowest.outputs_per_request if tokens is None else tokens
    ) == pytest.approx(joules[0])
    assert found.highest.energy_per_output * pue * (
        found.highest.outputs_per_request if tokens is None else tokens
    ) == pytest.approx(joules[-1])


@pytest.mark.parametrize(
    ("code", "kg", "warnings", "expected"),
    [
        ("FRA", 0.04144, [], grid.Zone("FRA", 41.44, None, ())),
        # The file's decimal figure x 1,000, not its float's (458.28999999999996).
        ("WOR", 0.45829, [], grid.Zone("WOR", 458.29, None, ())),
        (
            "ABW",
            0.55,
            ["electricity-mix-adpe-world", "electricity-mix-wue-world"],
            grid.Zone("ABW", 550.0, None, ("adpe", "wue")),
        ),
    ],
)
def test_a_zone_in_grams(code, kg, warnings, expected) -> None:
    assert grid.zone(code, kg, warnings) == expected


def test_a_zero_figure_is_no_figure() -> None:
    found = grid.zone("CAF", 0.0, ["electricity-mix-pe-world"])
    assert found == grid.Zone(
        "CAF",
        None,
        f"EcoLogits {grid.provenance().package_version} gives 0 kgCO₂eq per kWh for CAF, which "
        "stands for no figure (no grid emits nothing over its life cycle)",
        ("pe",),
    )


def test_the_zones_are_the_installed_packages_file() -> None:
    """Every zone of ecologits' data file, read apart from the package's own reader."""
    raw = json.loads(
        resources.files("ecologits").joinpath("data/electricity_mixes.json").read_text()
    )
    expected = {
        m["name"]: grid.zone(m["name"], m["gwp"], m.get("warnings") or [])
        for m in raw["electricity_mixes"]
    }
    assert dict(grid.zones()) == expected
    assert list(grid.zones()) == [m["name"] for m in raw["electricity_mixes"]]
    assert grid.zones()["FRA"].grams_per_kwh == 41.44
