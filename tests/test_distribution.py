"""Energy per response from an output-length histogram and an energy per token."""

from __future__ import annotations

import math

import pytest

from analysis.distribution import (
    EnergyDistribution,
    Histogram,
    Scale,
    bin_edges,
    energy_per_response,
)

NONE = {50.0: None, 90.0: None, 95.0: None, 99.0: None}


def test_linear_keeps_the_measured_bins_scaled_by_energy_per_token() -> None:
    lengths = Histogram((0.0, 100.0, 200.0, 400.0), (2, 6, 2))
    assert energy_per_response(lengths, 0.5) == EnergyDistribution(
        histogram=Histogram((0.0, 50.0, 100.0, 200.0), (2, 6, 2)),
        responses=10,
        # Midpoints 25, 75 and 150 J.
        histogram_mean=(2 * 25 + 6 * 75 + 2 * 150) / 10,
        percentiles={
            # 5 of 10 responses: 3 into the 6 of the second bin, halfway through it.
            50.0: 75.0,
            # 9 of 10: 1 into the 2 of the last bin.
            90.0: 150.0,
            95.0: 175.0,
            99.0: 195.0,
        },
    )


def test_an_empty_histogram_has_no_mean_and_no_percentiles() -> None:
    assert energy_per_response(Histogram((), ()), 0.3) == EnergyDistribution(
        Histogram((), ()), 0, None, NONE
    )
    zeros = Histogram((0.0, 10.0, 20.0), (0, 0))
    assert energy_per_response(zeros, 2.0) == EnergyDistribution(
        Histogram((0.0, 20.0, 40.0), (0, 0)), 0, None, NONE
    )


def test_a_single_response_is_spread_over_its_bin() -> None:
    result = energy_per_response(Histogram((100.0, 200.0), (1,)), 1.0)
    assert result == EnergyDistribution(
        Histogram((100.0, 200.0), (1,)),
        1,
        150.0,
        {50.0: 150.0, 90.0: 190.0, 95.0: 195.0, 99.0: 199.0},
    )


def test_percentiles_skip_empty_bins_and_land_on_edges_at_ties() -> None:
    # Half the responses in the first bin, half in the third: the median is the first's end.
    lengths = Histogram((0.0, 10.0, 20.0, 30.0), (5, 0, 5))
    assert lengths.percentile(50) == 10.0
    assert lengths.percentile(0) == 0.0
    assert lengths.percentile(60) == 22.0
    assert lengths.percentile(100) == 30.0
    # Leading empty bins: the 0th percentile is where the first response can be.
    assert Histogram((0.0, 10.0, 20.0), (0, 4)).percentile(0) == 10.0


def test_log_bins_split_counts_by_overlap_and_keep_every_response() -> None:
    lengths = Histogram((1.0, 9.0, 17.0), (8, 8))
    result = energy_per_response(lengths, 2.0, scale=Scale.LOG, bins=2)
    # Log edges 1, sqrt(17), 17; the first measured bin holds 1 response per token.
    split = math.sqrt(17) - 1
    assert result.histogram.edges == pytest.approx((2.0, 2 * math.sqrt(17), 34.0))
    assert result.histogram.counts == pytest.approx((split, 16 - split))
    assert result.responses == 16
    # Percentiles come from the measured bins, not the display bins.
    assert result.percentiles[50.0] == 18.0


def test_log_bins_start_at_one_token_when_the_first_edge_is_zero() -> None:
    lengths = Histogram((0.0, 100.0, 200.0), (4, 6))
    result = energy_per_response(lengths, 1.0, scale=Scale.LOG)
    assert result.histogram.edges == pytest.approx((1.0, math.sqrt(200), 200.0))
    # What lies below one token (0.04 responses) folds into the first bin.
    first = 4 * (math.sqrt(200) - 1) / 100 + 4 * 1 / 100
    assert result.histogram.counts == pytest.approx((first, 10 - first))


def test_linear_rebinning_to_another_count() -> None:
    lengths = Histogram((0.0, 100.0, 200.0), (4, 6))
    result = energy_per_response(lengths, 0.1, bins=4)
    assert result.histogram.edges == pytest.approx((0.0, 5.0, 10.0, 15.0, 20.0))
    assert result.histogram.counts == (2, 2, 3, 3)


def test_duplicate_edges_hold_no_width() -> None:
    lengths = Histogram((0.0, 10.0, 10.0, 20.0), (2, 0, 2))
    assert lengths.percentile(50) == 10.0
    assert lengths.mean() == 10.0


@pytest.mark.parametrize(
    ("edges", "counts", "message"),
    [
        ((0.0, 1.0), (1, 2), "one more edge than counts"),
        ((2.0, 1.0), (1,), "must not decrease"),
        ((0.0, 1.0), (-1,), "counts must be >= 0"),
    ],
)
def test_malformed_histograms_are_refused(edges, counts, message) -> None:
    with pytest.raises(ValueError, match=message):
        Histogram(edges, counts)


def test_bin_edges() -> None:
    assert bin_edges(0.0, 10.0, 2, Scale.LINEAR) == (0.0, 5.0, 10.0)
    assert bin_edges(1.0, 100.0, 2, Scale.LOG) == (1.0, pytest.approx(10.0), 100.0)
    with pytest.raises(ValueError, match="0 < low < high"):
        bin_edges(0.0, 100.0, 2, Scale.LOG)
    with pytest.raises(ValueError, match="at least one bin"):
        bin_edges(0.0, 100.0, 0, Scale.LINEAR)
