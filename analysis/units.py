"""Energy unit conversions, and estimates from a caller's grid carbon intensity and price."""

from __future__ import annotations

JOULES_PER_WATT_HOUR = 3_600.0
JOULES_PER_KILOWATT_HOUR = 3_600_000.0


def watt_hours(joules: float) -> float:
    return joules / JOULES_PER_WATT_HOUR


def kilowatt_hours(joules: float) -> float:
    return joules / JOULES_PER_KILOWATT_HOUR


def per_count(energy_per_one: float, count: float) -> float:
    """Energy of `count` tokens (or images, videos) at `energy_per_one` each, in joules."""
    return energy_per_one * count


def per_joule(energy_per_one: float) -> float | None:
    """Tokens (or outputs) per joule; None when the energy is zero and the ratio has no value."""
    return 1.0 / energy_per_one if energy_per_one else None


def carbon_grams(joules: float, grams_per_kilowatt_hour: float) -> float:
    """Estimated emissions, in gCO₂e, of `joules` drawn from a grid of the given intensity."""
    return kilowatt_hours(joules) * grams_per_kilowatt_hour


def cost(joules: float, price_per_kilowatt_hour: float) -> float:
    """Estimated electricity cost of `joules`, in the currency the price is given in."""
    return kilowatt_hours(joules) * price_per_kilowatt_hour
