"""Energy unit conversions and the caller-supplied estimates."""

from __future__ import annotations

import pytest

from analysis import units


def test_conversions() -> None:
    assert units.watt_hours(3600.0) == 1.0
    assert units.kilowatt_hours(3_600_000.0) == 1.0
    assert units.kilowatt_hours(0.0) == 0.0
    assert units.per_count(0.25, 1_000_000) == 250_000.0
    assert units.per_joule(0.25) == 4.0
    assert units.per_joule(0.0) is None


def test_estimates() -> None:
    # 1 kWh on a 400 gCO2e/kWh grid at 0.15 a kWh.
    assert units.carbon_grams(3_600_000.0, 400.0) == 400.0
    assert units.cost(3_600_000.0, 0.15) == pytest.approx(0.15)
    assert units.carbon_grams(1800.0, 400.0) == pytest.approx(0.2)
    assert units.cost(0.0, 0.15) == 0.0
