"""Energy per response: a configuration's output-length histogram times its energy per token.

A response of n output tokens costs n x (energy per token) joules, so the energy histogram is
the length histogram with its edges scaled. Within a bin, lengths are taken as spread evenly
(uniform density): percentiles interpolate linearly inside the bin they fall in, the mean uses
bin midpoints, and re-binning splits a bin's count in proportion to the overlap.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass
from enum import Enum
from itertools import pairwise

PERCENTILES = (50.0, 90.0, 95.0, 99.0)


class Scale(Enum):
    LINEAR = "linear"
    LOG = "log"


@dataclass(frozen=True)
class Histogram:
    """`counts[i]` items lie between `edges[i]` and `edges[i + 1]`."""

    edges: tuple[float, ...]
    counts: tuple[float, ...]

    def __post_init__(self) -> None:
        if self.counts and len(self.edges) != len(self.counts) + 1:
            raise ValueError("a histogram has one more edge than counts")
        if any(b < a for a, b in pairwise(self.edges)):
            raise ValueError("histogram edges must not decrease")
        if any(not c >= 0 for c in self.counts):
            raise ValueError("histogram counts must be >= 0")

    @property
    def total(self) -> float:
        return math.fsum(self.counts)

    def scaled(self, factor: float) -> Histogram:
        return Histogram(tuple(e * factor for e in self.edges), self.counts)

    def mean(self) -> float | None:
        """Mean with every item at its bin's midpoint; None when the histogram is empty."""
        if self.total == 0:
            return None
        return math.fsum(c * (a + b) / 2 for a, b, c in self._bins()) / self.total

    def percentile(self, p: float) -> float | None:
        """The value below which p % of the items lie, linear within its bin; None if empty."""
        if not 0 <= p <= 100:
            raise ValueError(f"percentile must be between 0 and 100, got {p}")
        total = self.total
        if total == 0:
            return None
        target = p / 100 * total
        below = 0.0
        last = None
        for low, high, count in self._bins():
            if count == 0:
                continue
            if below + count >= target:
                return low + (target - below) / count * (high - low)
            below += count
            last = high
        return last  # only reached through rounding at p = 100

    def cumulative(self, x: float) -> float:
        """Items below x, with each bin's items spread evenly over it."""
        below = 0.0
        for low, high, count in self._bins():
            if x >= high:
                below += count
            elif x > low:
                below += count * (x - low) / (high - low)
        return below

    def rebinned(self, edges: Sequence[float]) -> Histogram:
        """The same items counted on other edges; items outside them go to the end bins."""
        cumulative = [self.cumulative(e) for e in edges]
        counts = [b - a for a, b in pairwise(cumulative)]
        if counts:
            counts[0] += cumulative[0]
            counts[-1] += self.total - cumulative[-1]
        return Histogram(tuple(edges), tuple(counts))

    def _bins(self) -> list[tuple[float, float, float]]:
        return list(zip(self.edges, self.edges[1:], self.counts, strict=False))


@dataclass(frozen=True)
class EnergyDistribution:
    # Edges in joules per response; counts in responses (fractional after re-binning).
    histogram: Histogram
    responses: float
    # Mean over the histogram (bin midpoints), in joules; None when it counts no response.
    histogram_mean: float | None
    # Percentile (0-100) → joules per response, from the measured length histogram.
    percentiles: dict[float, float | None]


def bin_edges(low: float, high: float, bins: int, scale: Scale) -> tuple[float, ...]:
    """`bins` + 1 edges from low to high, evenly spaced in value or in log(value)."""
    if bins < 1:
        raise ValueError(f"need at least one bin, got {bins}")
    if scale is Scale.LOG:
        if not 0 < low < high:
            raise ValueError(f"log bins need 0 < low < high, got {low} and {high}")
        ratio = math.log(high / low)
        edges = [low * math.exp(ratio * i / bins) for i in range(bins + 1)]
    else:
        edges = [low + (high - low) * i / bins for i in range(bins + 1)]
    edges[0], edges[-1] = low, high  # exactly, whatever the rounding
    return tuple(edges)


def energy_per_response(
    lengths: Histogram,
    energy_per_token: float,
    *,
    scale: Scale = Scale.LINEAR,
    bins: int | None = None,
) -> EnergyDistribution:
    """The distribution of energy per response, in joules.

    `lengths` is the output-length histogram in tokens. LINEAR without `bins` keeps the
    measured bins (and integer counts); otherwise the lengths are re-binned onto `bins` bins
    (by default as many as measured) spaced evenly in length or in log(length) between the
    first and last measured edges. Log bins start at one token when the first edge is 0 (a
    response has at least one token); what lies below folds into the first bin. Percentiles
    always come from the measured bins, whatever the display bins.
    """
    if not energy_per_token >= 0:
        raise ValueError(f"energy per token must be >= 0, got {energy_per_token}")
    shown = lengths
    if lengths.counts and (scale is Scale.LOG or bins is not None):
        count = len(lengths.counts) if bins is None else bins
        low, high = lengths.edges[0], lengths.edges[-1]
        if scale is Scale.LOG and low <= 0:
            low = 1.0
        if low < high:
            shown = lengths.rebinned(bin_edges(low, high, count, scale))
    mean = lengths.mean()
    return EnergyDistribution(
        histogram=shown.scaled(energy_per_token),
        responses=lengths.total,
        histogram_mean=None if mean is None else mean * energy_per_token,
        percentiles={
            p: None if (v := lengths.percentile(p)) is None else v * energy_per_token
            for p in PERCENTILES
        },
    )
