"""Logistic fits against log2(batch size), and interpolation where they miss."""

from __future__ import annotations

import math

import pytest

from analysis.fit import (
    Curve,
    Estimate,
    Fit,
    Logistic,
    Measured,
    Method,
    assess,
    fit_curve,
    fit_logistic,
    interpolate,
    measured,
)

BATCHES = [8, 16, 32, 64, 128, 256, 512, 1024]


OUTSIDE = "interpolation stops at the batch sizes measured"


def approx(value: Logistic, rel: float = 1e-6) -> Logistic:
    """`value` with each parameter wrapped in pytest.approx, for comparing whole values."""
    return Logistic(*(pytest.approx(p, rel=rel, abs=1e-9) for p in vars(value).values()))


@pytest.mark.parametrize(
    "truth",
    [
        Logistic(b0=200.0, amplitude=450.0, k=1.3, x0=6.0),  # power rising with the batch
        Logistic(b0=0.05, amplitude=0.9, k=0.8, x0=4.5),  # a slow rise
        Logistic(b0=2.0, amplitude=-1.6, k=1.1, x0=6.5),  # energy per token falling
        Logistic(b0=12.0, amplitude=70.0, k=2.5, x0=8.0),  # latency taking off late
    ],
)
def test_parameters_of_noise_free_data_are_recovered(truth: Logistic) -> None:
    fitted = fit_logistic(BATCHES, [truth.at(b) for b in BATCHES])
    assert fitted == approx(truth, rel=1e-4)


def test_noisy_data_is_fitted_closely() -> None:
    truth = Logistic(b0=300.0, amplitude=400.0, k=1.2, x0=6.0)
    noise = [0.02, -0.01, 0.015, -0.02, 0.0, 0.01, -0.015, 0.02]
    curve = fit_curve((b, truth.at(b) * (1 + e)) for b, e in zip(BATCHES, noise, strict=True))
    assert curve.fit is not None
    assert curve.fit.r_squared > 0.99
    assert curve.fit.max_relative_residual < 0.03
    assert curve.method is Method.FIT
    assert curve.fit.logistic.at(100) == pytest.approx(truth.at(100), rel=0.02)


def test_empty_input_has_no_fit_and_no_estimate() -> None:
    curve = fit_curve([])
    assert curve == Curve(measured=(), fit=None)
    assert curve.method is Method.INTERPOLATION
    assert curve.estimate(64) == Estimate(
        64, None, Method.INTERPOLATION, extrapolated=True, reason=OUTSIDE
    )


def test_a_single_point_is_its_own_estimate_and_nothing_else() -> None:
    curve = fit_curve([(64, 500.0)])
    assert curve == Curve(measured=(Measured(64, (500.0,)),), fit=None)
    assert curve.estimate(64) == Estimate(64, 500.0, Method.INTERPOLATION, extrapolated=False)
    assert curve.estimate(65) == Estimate(
        65, None, Method.INTERPOLATION, extrapolated=True, reason=OUTSIDE
    )


def test_three_batch_sizes_interpolate_linearly_in_log2() -> None:
    curve = fit_curve([(8, 100.0), (32, 300.0), (16, 200.0)])
    assert curve.fit is None
    assert curve.measured == (
        Measured(8, (100.0,)),
        Measured(16, (200.0,)),
        Measured(32, (300.0,)),
    )
    # log2(8 * sqrt(2)) is halfway between log2(8) and log2(16).
    assert curve.estimate(8 * math.sqrt(2)).value == pytest.approx(150.0)
    assert curve.estimate(24) == Estimate(
        24, 200.0 + 100.0 * (math.log2(24) - 4), Method.INTERPOLATION, extrapolated=False
    )
    assert curve.estimate(4) == Estimate(
        4, None, Method.INTERPOLATION, extrapolated=True, reason=OUTSIDE
    )


def test_repeated_runs_are_averaged_for_interpolation_and_fitted_as_runs() -> None:
    points = [(8, 100.0), (16, 150.0), (16, 170.0), (32, 300.0)]
    assert measured(points) == (
        Measured(8, (100.0,)),
        Measured(16, (150.0, 170.0)),
        Measured(32, (300.0,)),
    )
    assert interpolate(measured(points), 16) == 160.0
    # Four distinct batch sizes are needed: three with a repeat do not make a fit.
    assert fit_curve(points).fit is None


def test_repeated_runs_count_as_runs_in_r_squared() -> None:
    logistic = Logistic(b0=0.0, amplitude=0.0, k=1.0, x0=0.0)  # y = 0 everywhere
    points = measured([(8, 1.0), (8, -1.0), (16, 0.0), (32, 0.0)])
    fit = assess(logistic, points)
    # The runs at 8 average to 0, which the fit meets; their spread costs R².
    assert fit == Fit(logistic, r_squared=0.0, max_relative_residual=0.0, misses=())


def test_a_fit_off_a_measured_zero_misses_it_infinitely() -> None:
    logistic = Logistic(b0=1.0, amplitude=0.0, k=1.0, x0=0.0)  # y = 1 everywhere
    points = measured([(8, 0.0), (16, 1.0), (32, 1.0), (64, 1.0)])
    assert assess(logistic, points) == Fit(
        logistic, r_squared=pytest.approx(-1 / 3), max_relative_residual=math.inf, misses=(8,)
    )


def test_constant_data_fits_exactly() -> None:
    curve = fit_curve((b, 700.0) for b in BATCHES[:4])
    assert curve.fit == Fit(
        Logistic(b0=700.0, amplitude=0.0, k=1.0, x0=4.5),
        r_squared=1.0,
        max_relative_residual=0.0,
        misses=(),
    )


def test_a_fit_that_misses_a_point_by_more_than_15_percent_hands_over_to_interpolation() -> None:
    # Flat, then a jump the logistic can follow only roughly, then flat with a dip at 64.
    values = [10.0, 10.0, 10.0, 6.0, 30.0, 30.0, 30.0, 30.0]
    curve = fit_curve(zip(BATCHES, values, strict=True))
    assert curve.fit is not None
    assert 64 in curve.fit.misses
    assert curve.fit.max_relative_residual > 0.15
    assert curve.method is Method.INTERPOLATION
    assert curve.estimate(64) == Estimate(64, 6.0, Method.INTERPOLATION, extrapolated=False)
    assert curve.estimate(48).value == pytest.approx(10.0 + (6.0 - 10.0) * (math.log2(48) - 5))


def test_a_good_fit_answers_everywhere_and_says_when_it_extrapolates() -> None:
    truth = Logistic(b0=200.0, amplitude=450.0, k=1.3, x0=6.0)
    curve = fit_curve((b, truth.at(b)) for b in BATCHES)
    assert curve.method is Method.FIT
    inside, outside = curve.estimate(100), curve.estimate(4096)
    assert inside == Estimate(100, pytest.approx(truth.at(100)), Method.FIT, extrapolated=False)
    assert outside == Estimate(4096, pytest.approx(truth.at(4096)), Method.FIT, extrapolated=True)


def test_ties_at_the_midpoint_and_a_flat_sigmoid() -> None:
    logistic = Logistic(b0=1.0, amplitude=2.0, k=1.0, x0=5.0)
    assert logistic.at(32) == 2.0  # sigmoid(0) = 1/2
    assert Logistic(b0=1.0, amplitude=0.0, k=50.0, x0=5.0).at(1) == 1.0


@pytest.mark.parametrize("bad", [0, -8])
def test_batch_sizes_must_be_positive(bad: float) -> None:
    with pytest.raises(ValueError, match="batch size must be > 0"):
        fit_curve([(bad, 1.0)])
    with pytest.raises(ValueError, match="batch size must be > 0"):
        fit_curve([(8, 1.0)]).estimate(bad)


def test_fit_logistic_refuses_too_few_batch_sizes() -> None:
    with pytest.raises(ValueError, match="at least 4 distinct batch sizes"):
        fit_logistic([8, 8, 16, 32], [1.0, 2.0, 3.0, 4.0])


def test_no_estimate_a_metric_cannot_physically_take() -> None:
    """A throughput curve whose fit falls below 0 at small batches: the estimate there is
    null with the reason, inside the measured range or outside it; a latency never 0."""
    from analysis.fit import Bound, Logistic, fit_curve

    truth = Logistic(b0=-500.0, amplitude=3000.0, k=1.0, x0=4.0)
    curve = fit_curve((b, truth.at(b)) for b in (8, 16, 32, 64, 128, 256))
    assert curve.method is Method.FIT
    low = curve.estimate(1, Bound())
    assert (low.value, low.method, low.extrapolated) == (None, Method.FIT, True)
    assert low.reason is not None and "cannot be (it is ≥ 0)" in low.reason
    assert curve.estimate(64, Bound()).value == pytest.approx(truth.at(64))
    assert curve.estimate(1).value == pytest.approx(truth.at(1))  # no bound asked: the fit
    assert not Bound(0.0, strict=True).admits(0.0) and Bound().admits(0.0)
