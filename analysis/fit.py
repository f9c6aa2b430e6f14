"""Logistic fits of a metric against log2(batch size), and interpolation where a fit misses.

The model is the one the ML.ENERGY data toolkit uses for its concurrency curves
(github.com/ml-energy/data, `mlenergy_data/modeling/logistic.py`, `LogisticModel`):
y = b0 + L*sigmoid(k*(x - x0)) with x = log2(batch size). Its fit is a coarse grid over
x0 (40 points from min(x) - 1 to max(x) + 1) and k (60 points, 10^-2 to 10^2, log-spaced)
with b0 and L solved by linear least squares at each grid point. We start from that same grid
and then refine all four parameters with scipy's bounded least squares, inside the grid's
bounds, so the answer is never worse than the toolkit's and is usually a little better.
"""

from __future__ import annotations

import math
from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from enum import Enum
from itertools import pairwise
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    import numpy as np
    import numpy.typing as npt

    Vector = npt.NDArray[np.float64]

# numpy and scipy are imported where a fit is made, not at import: scipy.optimize alone takes
# about 0.3 s to import, which every process start would pay before its first answer.
# Four parameters need at least four distinct batch sizes; with fewer, any curve fits exactly.
MIN_BATCH_SIZES = 4
# A fit that misses the measured value at some batch size by more than this is not served.
MISS_TOLERANCE = 0.15
_K_BOUNDS = (1e-2, 1e2)


@dataclass(frozen=True)
class Logistic:
    """y = b0 + amplitude*sigmoid(k*(log2(batch) - x0))."""

    b0: float
    amplitude: float
    k: float
    x0: float

    def at(self, batch_size: float) -> float:
        if not batch_size > 0:
            raise ValueError(f"batch size must be > 0, got {batch_size}")
        return self.at_log2(math.log2(batch_size))

    def at_log2(self, x: float) -> float:
        from scipy.special import expit

        return self.b0 + self.amplitude * float(expit(self.k * (x - self.x0)))


@dataclass(frozen=True)
class Measured:
    """The runs measured at one batch size (several when a setting was run again)."""

    batch_size: float
    values: tuple[float, ...]

    @property
    def mean(self) -> float:
        return math.fsum(self.values) / len(self.values)


@dataclass(frozen=True)
class Fit:
    logistic: Logistic
    # Over every run: 1 - (sum of squared residuals) / (sum of squares about the mean).
    r_squared: float
    # Largest |fit - mean of the runs| / |mean of the runs| over the batch sizes; inf when a
    # mean is 0 and the fit is not.
    max_relative_residual: float
    # Batch sizes where that relative residual exceeds MISS_TOLERANCE, ascending.
    misses: tuple[float, ...]

    @property
    def reliable(self) -> bool:
        return not self.misses


class Method(Enum):
    FIT = "fit"
    INTERPOLATION = "interpolation"


@dataclass(frozen=True)
class Estimate:
    batch_size: float
    # None when interpolation is asked for outside the measured batch sizes, or when the fit
    # gives a value no measurement could have (`reason` says which).
    value: float | None
    method: Method
    # Whether batch_size lies outside the smallest and largest measured batch sizes.
    extrapolated: bool
    reason: str | None = None


@dataclass(frozen=True)
class Bound:
    """The values a metric can physically take: at least `least` (above it, when `strict`)."""

    least: float = 0.0
    strict: bool = False

    def admits(self, value: float) -> bool:
        return value > self.least if self.strict else value >= self.least

    def __str__(self) -> str:
        return f"{'>' if self.strict else '≥'} {self.least:g}"


@dataclass(frozen=True)
class Curve:
    """A metric's runs by batch size, with its fit when there are enough batch sizes."""

    measured: tuple[Measured, ...]
    fit: Fit | None

    @property
    def method(self) -> Method:
        """FIT when a fit exists and misses no batch size; otherwise INTERPOLATION."""
        return Method.FIT if self.fit is not None and self.fit.reliable else Method.INTERPOLATION

    def estimate(self, batch_size: float, bound: Bound | None = None) -> Estimate:
        """The metric at `batch_size`; a fitted value outside `bound` (what the metric can
        physically be) is not served: None, with the reason."""
        if not batch_size > 0:
            raise ValueError(f"batch size must be > 0, got {batch_size}")
        sizes = [m.batch_size for m in self.measured]
        outside = not sizes or not sizes[0] <= batch_size <= sizes[-1]
        if self.method is Method.FIT:
            assert self.fit is not None
            value = self.fit.logistic.at(batch_size)
            if bound is not None and not bound.admits(value):
                reason = (
                    f"the fit gives {value:.4g} at batch size {batch_size:g}, which the metric "
                    f"cannot be (it is {bound})"
                )
                return Estimate(batch_size, None, Method.FIT, outside, reason)
            return Estimate(batch_size, value, Method.FIT, outside)
        between = interpolate(self.measured, batch_size)
        why = None if between is not None else "interpolation stops at the batch sizes measured"
        return Estimate(batch_size, between, Method.INTERPOLATION, outside, why)


def measured(points: Iterable[tuple[float, float]]) -> tuple[Measured, ...]:
    """Group (batch size, value) points by batch size, ascending; runs keep their order."""
    runs: dict[float, list[float]] = {}
    for batch_size, value in points:
        if not batch_size > 0:
            raise ValueError(f"batch size must be > 0, got {batch_size}")
        runs.setdefault(batch_size, []).append(value)
    return tuple(Measured(size, tuple(values)) for size, values in sorted(runs.items()))


def interpolate(points: Sequence[Measured], batch_size: float) -> float | None:
    """Linear in log2(batch size) between the means of the nearest measured batch sizes.

    None outside the measured range: interpolation does not extrapolate.
    """
    x = math.log2(batch_size)
    for low, high in pairwise(points):
        if low.batch_size <= batch_size <= high.batch_size:
            x_low, x_high = math.log2(low.batch_size), math.log2(high.batch_size)
            t = (x - x_low) / (x_high - x_low)
            return low.mean + t * (high.mean - low.mean)
    if len(points) == 1 and points[0].batch_size == batch_size:
        return points[0].mean
    return None


def fit_logistic(batch_sizes: Sequence[float], values: Sequence[float]) -> Logistic:
    """Least-squares logistic through every run; needs MIN_BATCH_SIZES distinct batch sizes."""
    if len(batch_sizes) != len(values):
        raise ValueError("batch_sizes and values differ in length")
    if len(set(batch_sizes)) < MIN_BATCH_SIZES:
        raise ValueError(f"a fit needs at least {MIN_BATCH_SIZES} distinct batch sizes")
    import numpy as np
    from scipy.optimize import least_squares
    from scipy.special import expit

    x = np.log2(np.asarray(batch_sizes, dtype=float))
    y = np.asarray(values, dtype=float)
    # Fit in units of the largest value so the tolerances mean the same for watts and joules.
    scale = float(np.abs(y).max()) or 1.0
    yn = y / scale
    if float(np.ptp(yn)) == 0.0:
        return Logistic(b0=float(y[0]), amplitude=0.0, k=1.0, x0=float(x.mean()))
    start, start_sse = _grid(x, yn)
    low, high = float(x.min()) - 1.0, float(x.max()) + 1.0

    def residuals(p: Vector) -> Vector:
        b0, amplitude, k, x0 = p
        residual: Vector = b0 + amplitude * expit(k * (x - x0)) - yn
        return residual

    result = least_squares(
        residuals,
        start,
        bounds=([-np.inf, -np.inf, _K_BOUNDS[0], low], [np.inf, np.inf, _K_BOUNDS[1], high]),
        x_scale="jac",
    )
    best = result.x if 2.0 * float(result.cost) <= start_sse else start
    b0, amplitude, k, x0 = (float(p) for p in best)
    return Logistic(b0=b0 * scale, amplitude=amplitude * scale, k=k, x0=x0)


def _grid(x: Vector, y: Vector) -> tuple[Vector, float]:
    """The toolkit's grid: for each (k, x0), b0 and L by linear least squares; the best."""
    import numpy as np
    from scipy.special import expit

    ks = np.logspace(-2, 2, 60)[:, None, None]
    x0s = np.linspace(float(x.min()) - 1.0, float(x.max()) + 1.0, 40)[None, :, None]
    s = expit(ks * (x[None, None, :] - x0s))
    s_mean = s.mean(axis=-1, keepdims=True)
    ds = s - s_mean
    var = (ds * ds).sum(axis=-1)
    cov = (ds * (y - y.mean())).sum(axis=-1)
    # Where the sigmoid is flat over the data, L is not identifiable: take L = 0 there.
    amplitude = np.divide(cov, var, out=np.zeros_like(cov), where=var > 1e-12)
    b0 = y.mean() - amplitude * s_mean[..., 0]
    sse = ((b0[..., None] + amplitude[..., None] * s - y) ** 2).sum(axis=-1)
    i, j = np.unravel_index(int(np.argmin(sse)), sse.shape)
    start = np.array([b0[i, j], amplitude[i, j], ks[i, 0, 0], x0s[0, j, 0]])
    return start, float(sse[i, j])


def assess(logistic: Logistic, points: Sequence[Measured]) -> Fit:
    """R² over every run, and the relative residual at each batch size against its mean."""
    runs = [(m.batch_size, v) for m in points for v in m.values]
    mean = math.fsum(v for _, v in runs) / len(runs)
    ss_res = math.fsum((v - logistic.at(b)) ** 2 for b, v in runs)
    ss_tot = math.fsum((v - mean) ** 2 for _, v in runs)
    if ss_tot > 0:
        r_squared = 1.0 - ss_res / ss_tot
    else:
        # Every run measured the same value: a fit through it is perfect, any other is not.
        r_squared = 1.0 if ss_res == 0 else 0.0
    residuals = [(m.batch_size, _relative(logistic.at(m.batch_size), m.mean)) for m in points]
    return Fit(
        logistic=logistic,
        r_squared=r_squared,
        max_relative_residual=max(r for _, r in residuals),
        misses=tuple(b for b, r in residuals if r > MISS_TOLERANCE),
    )


def _relative(fitted: float, measured: float) -> float:
    if measured == 0:
        return 0.0 if fitted == 0 else math.inf
    return abs(fitted - measured) / abs(measured)


def fit_curve(points: Iterable[tuple[float, float]]) -> Curve:
    """The curve of (batch size, value) runs: fitted when there are enough batch sizes."""
    by_size = measured(points)
    if len(by_size) < MIN_BATCH_SIZES:
        return Curve(by_size, None)
    sizes = [m.batch_size for m in by_size for _ in m.values]
    values = [v for m in by_size for v in m.values]
    return Curve(by_size, assess(fit_logistic(sizes, values), by_size))
