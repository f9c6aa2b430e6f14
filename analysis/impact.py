"""The impact of one request, from measurements: the energy (and carbon) a request of so many
outputs takes on each measured configuration of a model within a latency limit, as the least,
the median and the most over them.

A request of n outputs (output tokens; one image or video) on configuration c takes
n x c's energy per output x the PUE joules (every output at the measured efficiency, as a
plan's energy per request), and that energy x the grid's carbon intensity in grams.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import Generic, TypeVar

from analysis.plan import Candidate, Limit, energy_per_request, excluded_by
from analysis.power import Spread
from analysis.units import carbon_grams

T = TypeVar("T")


@dataclass(frozen=True)
class Impact(Generic[T]):
    """A request's energy in joules and carbon in grams over the candidates used (None when
    no candidate is within the limit; carbon None without an intensity either); the
    candidates of least and most energy (ties: the first in `order`)."""

    candidates: int
    used: int
    # Kept out by the latency limit.
    excluded: int
    energy: Spread | None
    carbon: Spread | None
    lowest: Candidate[T] | None
    highest: Candidate[T] | None


def request_impact(
    candidates: Sequence[Candidate[T]],
    outputs_per_request: float | None = None,
    *,
    pue: float = 1.0,
    carbon_intensity: float | None = None,
    max_latency: float | None = None,
) -> Impact[T]:
    """The impact of a request of `outputs_per_request` outputs (None: each candidate's
    measured figure) over the candidates within `max_latency` (inclusive; None: no limit)."""
    used = [c for c in candidates if Limit.LATENCY not in excluded_by(c, max_latency)]
    joules = [
        energy_per_request(
            c, c.outputs_per_request if outputs_per_request is None else outputs_per_request, pue
        )
        for c in used
    ]
    if not used:
        return Impact(len(candidates), 0, len(candidates), None, None, None, None)
    energy = Spread.of(joules)
    carbon = None
    if carbon_intensity is not None:
        carbon = Spread.of([carbon_grams(j, carbon_intensity) for j in joules])
    order = range(len(used))
    lowest = min(order, key=lambda i: (joules[i], used[i].order))
    highest = min(order, key=lambda i: (-joules[i], used[i].order))
    return Impact(
        candidates=len(candidates),
        used=len(used),
        excluded=len(candidates) - len(used),
        energy=energy,
        carbon=carbon,
        lowest=used[lowest],
        highest=used[highest],
    )
