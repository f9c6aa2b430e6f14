"""The partial-load point of a plan on synthetic logistic curves whose inverse is known."""

from __future__ import annotations

import math

import pytest
from hypothesis import given
from hypothesis import strategies as st

from analysis.fit import Curve, Logistic, Measured, assess, fit_curve
from analysis.partial_load import LoadCurves, PartialLoad, inverse, partial_load

BATCHES = (1.0, 2.0, 4.0, 8.0, 16.0, 32.0, 64.0, 128.0, 256.0)
# Throughput from 100 to 1,000 outputs a second, half-way (550) at batch size 16; power from
# 200 to 500 W, half-way (350 W) at 16 too.
THROUGHPUT = Logistic(b0=100.0, amplitude=900.0, k=1.0, x0=4.0)
POWER = Logistic(b0=200.0, amplitude=300.0, k=1.0, x0=4.0)


def curve(truth: Logistic, batches: tuple[float, ...] = BATCHES, off: float = 1.0) -> Curve:
    """The curve of runs on `truth` at `batches` (the last one's run `off` times it), fitted
    by `truth` itself: the known answer, with no optimiser in between."""
    runs = tuple(Measured(b, (truth.at(b),)) for b in batches[:-1])
    runs += (Measured(batches[-1], (truth.at(batches[-1]) * off,)),)
    return Curve(runs, assess(truth, runs))


CURVES = LoadCurves(throughput=curve(THROUGHPUT), power=curve(POWER))


def test_the_point_where_the_throughput_is_the_share() -> None:
    """3 replicas serving 1,650 a second: 550 each, at batch size 16, drawing 350 W each."""
    assert partial_load(CURVES, 1650.0, 3, 1000.0, 1200.0) == PartialLoad(16.0, 1050.0)


def test_a_point_between_measured_batch_sizes() -> None:
    """Each replica at 820 = 100 + 900 x 0.8: log2(b) = 4 + ln 4, the power 200 + 300 x 0.8."""
    found = partial_load(CURVES, 1640.0, 2, 0.0, 1e9)
    assert found == PartialLoad(pytest.approx(2 ** (4 + math.log(4))), pytest.approx(880.0))


@pytest.mark.parametrize(
    ("outputs", "replicas", "reason"),
    [
        (
            90.0,
            1,
            "each replica's 90 outputs per second lie below the fitted throughput at the smallest "
            "measured batch size (measured from 1 to 256): no extrapolation",
        ),
        (
            2000.0,
            2,
            "each replica's 1000 outputs per second lie above the fitted throughput at the "
            "largest measured batch size (measured from 1 to 256): no extrapolation",
        ),
        (
            1650.0,
            3,
            "the fitted power at the partial-load point (batch size 16), 1050 W, lies outside "
            "the bounds (1100 to 1200 W)",
        ),
    ],
)
def test_no_estimate_outside_the_measured_range_or_the_bounds(
    outputs: float, replicas: int, reason: str
) -> None:
    lower = 1100.0 if replicas == 3 else 0.0
    assert partial_load(CURVES, outputs, replicas, lower, 1200.0) == PartialLoad(None, None, reason)


@pytest.mark.parametrize(
    ("curves", "reason"),
    [
        (
            LoadCurves(fit_curve([(8, 100.0), (16, 200.0), (32, 300.0)]), curve(POWER)),
            "the series has 3 distinct batch sizes: a fitted curve needs at least 4",
        ),
        (
            LoadCurves(curve(THROUGHPUT), curve(POWER, off=1.5)),
            "the fitted power misses the measured value at batch size 256 by more than 15 %",
        ),
        (
            LoadCurves(curve(Logistic(1000.0, -900.0, 1.0, 4.0)), curve(POWER)),
            "the fitted throughput does not rise with the batch size: no inverse",
        ),
        (
            LoadCurves(curve(THROUGHPUT), curve(Logistic(100.0, -300.0, 1.0, 4.0))),
            "the fitted power at the partial-load point: the fit gives -50 at batch size 16, "
            "which the metric cannot be (it is ≥ 0)",
        ),
    ],
)
def test_no_estimate_without_reliable_rising_fits(curves: LoadCurves, reason: str) -> None:
    assert partial_load(curves, 550.0, 1, 0.0, 1e9) == PartialLoad(None, None, reason)


def test_the_inverse_of_a_logistic() -> None:
    assert [inverse(THROUGHPUT, y) for y in (100.0, 550.0, 1000.0)] == [None, 16.0, None]
    assert inverse(Logistic(5.0, 0.0, 1.0, 3.0), 5.0) is None


@st.composite
def plans(draw: st.DrawFn) -> tuple[LoadCurves, float, int, float, float]:
    """Rising curves, a configuration on them, and a demand sized on it as analysis.plan does:
    replicas = ceil(D / (u x throughput)), power between D x P/T and replicas x P."""
    sizes = tuple(2.0**i for i in range(draw(st.integers(0, 3)), draw(st.integers(6, 10))))
    x0 = draw(st.floats(math.log2(sizes[0]), math.log2(sizes[-1])))
    k = draw(st.floats(0.3, 3.0))
    throughput = Logistic(draw(st.floats(1.0, 500.0)), draw(st.floats(10.0, 5e4)), k, x0)
    power = Logistic(
        draw(st.floats(50.0, 500.0)),
        draw(st.floats(-100.0, 2000.0)),
        k * draw(st.floats(0.5, 2.0)),
        x0 + draw(st.floats(-2.0, 2.0)),
    )
    configuration = draw(st.sampled_from(sizes))
    t, p = throughput.at(configuration), power.at(configuration)
    outputs = t * draw(st.floats(0.01, 100.0))
    replicas = math.ceil(outputs / (draw(st.floats(0.05, 1.0)) * t))
    upper = replicas * p
    curves = LoadCurves(curve(throughput, sizes), curve(power, sizes))
    return curves, outputs, replicas, min(outputs * p / t, upper), upper


@given(plans())
def test_an_estimate_served_lies_between_the_bounds_on_the_measured_range(plan) -> None:
    """The fits are reliable and rising: where there is no estimate, the point lies outside the
    measured range or the power there outside the bounds (or below zero)."""
    curves, outputs, replicas, lower, upper = plan
    found = partial_load(curves, outputs, replicas, lower, upper)
    if found.reason is not None:
        assert (found.batch_size, found.power) == (None, None)
        assert found.reason.startswith(("each replica's", "the fitted power at the"))
    else:
        assert found.batch_size is not None and found.power is not None
        assert lower <= found.power <= upper
        assert curves.throughput.measured[0].batch_size <= found.batch_size
        assert found.batch_size <= curves.throughput.measured[-1].batch_size
        share = curves.throughput.fit.logistic.at(found.batch_size)  # type: ignore[union-attr]
        assert share == pytest.approx(outputs / replicas, rel=1e-9)
