"""The partial-load point of a plan: the batch size at which a replica's fitted throughput is its
share of the demand, and the power the replicas draw there, from a series' fitted curves.

A plan's replicas each serve d = D / replicas outputs per second, at most their measured
throughput. Along the configuration's concurrency series (same model, GPU type, GPU count and
parallelism; analysis.curves) the logistic fits of throughput T(b) and power P(b) against
log2(batch size) (analysis.fit) place that load: b* with T(b*) = d, and the estimate
replicas * P(b*). It is served only where the fits are reliable, T rises with the batch size,
b* lies within the measured batch sizes and the estimate between the plan's bounds of power;
otherwise the reason says which of these fails.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

from analysis.fit import MIN_BATCH_SIZES, MISS_TOLERANCE, Bound, Curve, Logistic


@dataclass(frozen=True)
class LoadCurves:
    """One series' throughput (outputs per second) and power (watts) against the batch size."""

    throughput: Curve
    power: Curve


@dataclass(frozen=True)
class PartialLoad:
    """The partial-load point and the replicas' power there (watts, all replicas), or None for
    both with the reason."""

    batch_size: float | None
    power: float | None
    reason: str | None = None


def inverse(logistic: Logistic, value: float) -> float | None:
    """The batch size at which a rising logistic equals `value`; None where it never does."""
    if not logistic.amplitude > 0:
        return None
    share = (value - logistic.b0) / logistic.amplitude
    if not 0 < share < 1:
        return None
    return math.pow(2.0, logistic.x0 + math.log(share / (1.0 - share)) / logistic.k)


def partial_load(
    curves: LoadCurves, outputs_per_second: float, replicas: int, lower: float, upper: float
) -> PartialLoad:
    """Where `replicas` replicas serving `outputs_per_second` between them sit on `curves`, and
    what they draw there, if that lies within [lower, upper] (the plan's bounds of power)."""
    unfit = _unfit("throughput", curves.throughput) or _unfit("power", curves.power)
    if unfit is not None:
        return PartialLoad(None, None, unfit)
    assert curves.throughput.fit is not None and curves.power.fit is not None
    throughput = curves.throughput.fit.logistic
    if not throughput.amplitude > 0:
        return PartialLoad(
            None, None, "the fitted throughput does not rise with the batch size: no inverse"
        )
    share = outputs_per_second / replicas
    smallest, largest = curves.throughput.measured[0], curves.throughput.measured[-1]
    measured = f"measured from {smallest.batch_size:g} to {largest.batch_size:g}"
    if share < throughput.at(smallest.batch_size):
        return PartialLoad(
            None,
            None,
            f"each replica's {share:.4g} outputs per second lie below the fitted throughput at "
            f"the smallest measured batch size ({measured}): no extrapolation",
        )
    if share > throughput.at(largest.batch_size):
        return PartialLoad(
            None,
            None,
            f"each replica's {share:.4g} outputs per second lie above the fitted throughput at "
            f"the largest measured batch size ({measured}): no extrapolation",
        )
    found = inverse(throughput, share)
    assert found is not None  # a rising logistic takes every value between two of its own
    # Rounding may put an end point a hair outside the measured range.
    batch_size = min(max(found, smallest.batch_size), largest.batch_size)
    at = curves.power.estimate(batch_size, Bound())
    if at.value is None:
        return PartialLoad(None, None, f"the fitted power at the partial-load point: {at.reason}")
    power = replicas * at.value
    if not lower <= power <= upper:
        return PartialLoad(
            None,
            None,
            f"the fitted power at the partial-load point (batch size {batch_size:.4g}), "
            f"{power:.4g} W, lies outside the bounds ({lower:.4g} to {upper:.4g} W)",
        )
    return PartialLoad(batch_size, power)


def _unfit(metric: str, curve: Curve) -> str | None:
    """Why the curve of `metric` has no reliable fit; None when it has one."""
    if curve.fit is None:
        n = len(curve.measured)
        return (
            f"the series has {n} distinct batch size{'' if n == 1 else 's'}: a fitted curve "
            f"needs at least {MIN_BATCH_SIZES}"
        )
    if curve.fit.misses:
        sizes = ", ".join(f"{b:g}" for b in curve.fit.misses)
        return (
            f"the fitted {metric} misses the measured value at batch size {sizes} by more "
            f"than {MISS_TOLERANCE * 100:g} %"
        )
    return None
