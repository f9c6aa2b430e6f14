"""Deployment plans: how many replicas of a measured configuration serve a demand, and what
they draw in power, energy, carbon and money a day.

A configuration was measured at one load: `throughput` outputs (tokens, images, videos) per
second per replica, at `energy_per_output` joules each, drawing `power` watts. To serve D
outputs per second with each replica used up to a share u of its throughput it takes
ceil(D / (u * throughput)) replicas. Their power lies between two bounds: every output at the
measured efficiency (D * energy per output) and every replica drawing its measured power
(replicas * power, what is provisioned). Energy, carbon and cost a day follow from the bounds
and the site (PUE, carbon intensity, electricity and GPU-hour prices).
"""

from __future__ import annotations

import math
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, fields
from enum import Enum
from typing import TYPE_CHECKING, Any, Generic, TypeVar, overload

from analysis.compare import ratio
from analysis.pareto import undominated
from analysis.units import kilowatt_hours, per_count

if TYPE_CHECKING:
    import numpy.typing as npt

    Array = npt.NDArray[Any]

# numpy is imported where candidates are ranked, not at import (see analysis.fit).
T = TypeVar("T")
SECONDS_PER_DAY = 86_400.0
HOURS_PER_DAY = 24.0
GRAMS_PER_KILOGRAM = 1_000.0
# How near a whole number of replicas a demand's quotient counts as that number.
WHOLE_WITHIN = 1e-9


@dataclass(frozen=True, slots=True)
class Candidate(Generic[T]):
    """A measured configuration as a plan sees it; `item` is whatever the caller wants back,
    `order` breaks ties between plans (the caller's id)."""

    item: T
    order: int
    gpu: str
    gpus_per_replica: int
    # Outputs (tokens, images, videos) per second of one replica, as measured.
    throughput: float
    # Joules per output, all GPUs of the replica together.
    energy_per_output: float
    # Average watts of one replica, all its GPUs together.
    power: float
    # The figure a latency limit applies to (an ITL percentile, a batch latency).
    latency: float
    # Outputs per request as measured (average output tokens per response; 1 for an image).
    outputs_per_request: float


@dataclass(frozen=True)
class _Columns:
    """Candidates' figures, one array each, in the candidates' order; `gpu` indexes `gpus`."""

    throughput: Array
    energy_per_output: Array
    power: Array
    latency: Array
    outputs_per_request: Array
    gpus_per_replica: Array
    order: Array
    gpu: Array

    def take(self, indices: Array) -> _Columns:
        return _Columns(**{f.name: getattr(self, f.name)[indices] for f in fields(self)})


class Candidates(Sequence[Candidate[T]]):
    """Candidates with their figures as columns, so that a plan ranks them all at once: made
    once for candidates that many plans read (a task's), narrowed by `take`."""

    def __init__(self, candidates: Iterable[Candidate[T]]) -> None:
        import numpy as np

        self._items = list(candidates)
        # Where each of these is in `_items` (None: each in its place).
        self._at: Array | None = None
        self.gpus = sorted({c.gpu for c in self._items})
        index = {gpu: i for i, gpu in enumerate(self.gpus)}

        def column(name: str, dtype: Any = np.float64) -> Array:
            return np.array([getattr(c, name) for c in self._items], dtype=dtype)

        self.columns = _Columns(
            throughput=column("throughput"),
            energy_per_output=column("energy_per_output"),
            power=column("power"),
            latency=column("latency"),
            outputs_per_request=column("outputs_per_request"),
            gpus_per_replica=column("gpus_per_replica"),
            order=column("order", np.int64),
            gpu=np.array([index[c.gpu] for c in self._items], dtype=np.intp),
        )

    @classmethod
    def of(cls, candidates: Sequence[Candidate[T]]) -> Candidates[T]:
        return candidates if isinstance(candidates, Candidates) else cls(candidates)

    def take(self, indices: Sequence[int] | Array) -> Candidates[T]:
        """These candidates at `indices`, in that order (the candidates themselves are looked
        up when read)."""
        import numpy as np

        at = np.asarray(indices, dtype=np.intp)
        taken: Candidates[T] = Candidates.__new__(Candidates)
        taken._items, taken._at = self._items, at if self._at is None else self._at[at]
        taken.gpus, taken.columns = self.gpus, self.columns.take(at)
        return taken

    def __len__(self) -> int:
        return len(self.columns.order)

    @overload
    def __getitem__(self, i: int) -> Candidate[T]: ...
    @overload
    def __getitem__(self, i: slice) -> list[Candidate[T]]: ...
    def __getitem__(self, i: int | slice) -> Candidate[T] | list[Candidate[T]]:
        if isinstance(i, slice):
            return [self[j] for j in range(*i.indices(len(self)))]
        if self._at is None:
            return self._items[i]
        return self._items[int(self._at[i])]


@dataclass(frozen=True)
class Demand:
    """What a plan serves: outputs per second, or requests per second of
    `outputs_per_request` outputs each (else of each candidate's measured figure)."""

    outputs_per_second: float | None = None
    requests_per_second: float | None = None
    outputs_per_request: float | None = None

    def __post_init__(self) -> None:
        if (self.outputs_per_second is None) == (self.requests_per_second is None):
            raise ValueError("a demand is outputs per second or requests per second, not both")

    def per_request(self, c: Candidate[T]) -> float:
        given = self.outputs_per_request
        return c.outputs_per_request if given is None else given

    def outputs(self, c: Candidate[T]) -> float:
        """D: the outputs per second `c` must serve."""
        if self.outputs_per_second is not None:
            return self.outputs_per_second
        assert self.requests_per_second is not None
        return self.requests_per_second * self.per_request(c)

    def requests(self, c: Candidate[T]) -> float | None:
        """Requests per second; None when a request of `c` has no outputs to count by."""
        if self.requests_per_second is not None:
            return self.requests_per_second
        per_request = self.per_request(c)
        return self.outputs(c) / per_request if per_request else None


@dataclass(frozen=True)
class Site:
    """Where the plan runs: its PUE, grid carbon intensity (gCO₂e per kWh), electricity price
    per kWh and GPU-hour prices by GPU type (any one currency); None where not known."""

    pue: float = 1.0
    carbon_intensity: float | None = None
    electricity_price: float | None = None
    gpu_hour_prices: Mapping[str, float] | None = None


class Objective(Enum):
    """What plans are ranked by."""

    ENERGY = "energy"
    GPUS = "gpus"
    COST = "cost"
    CARBON = "carbon"


class Limit(Enum):
    """What keeps a configuration out of the plans."""

    LATENCY = "latency"
    THROUGHPUT = "throughput"


@dataclass(frozen=True, slots=True)
class Bounds:
    lower: float
    upper: float

    def times(self, factor: float) -> Bounds:
        return Bounds(self.lower * factor, self.upper * factor)

    def plus(self, amount: float) -> Bounds:
        return Bounds(self.lower + amount, self.upper + amount)

    def minus(self, other: Bounds) -> Bounds:
        """Each bound of `other` taken from the same bound of this one."""
        return Bounds(self.lower - other.lower, self.upper - other.upper)


@dataclass(frozen=True)
class Savings:
    """A plan against a baseline plan: the baseline's figure - the plan's, bound by bound
    (lower from lower, upper from upper); positive when the plan uses less."""

    energy_per_day: Bounds
    # 1 - the plan's / the baseline's, bound by bound; None when a baseline bound is 0.
    energy_fraction: Bounds | None
    gpus: int
    carbon_per_day: Bounds | None
    cost_per_day: Bounds | None


@dataclass(slots=True, eq=False)
class Plan(Generic[T]):
    """One configuration sized to the demand; None where the site does not give what a figure
    needs, with the reason in `missing` (by figure: carbon, electricity_cost, gpu_cost,
    cost); `savings` is None without a baseline."""

    candidate: Candidate[T]
    outputs_per_second: float
    requests_per_second: float | None
    outputs_per_request: float
    replicas: int
    gpus: int
    # Watts; kWh a day times the PUE; kg a day; the site's currency a day.
    power: Bounds
    energy_per_day: Bounds
    # Joules per request at the measured efficiency, times the PUE.
    energy_per_request: float
    carbon_per_day: Bounds | None
    electricity_cost_per_day: Bounds | None
    gpu_cost_per_day: float | None
    cost_per_day: Bounds | None
    missing: Mapping[str, str]
    # Set by `plan` once every plan is known (in place: a whole task's plans are many).
    rank: int = 0
    pareto_optimal: bool = False
    savings: Savings | None = None


class Ranked(Sequence[Plan[T]]):
    """Plans in rank order, each sized when it is first read: a whole task's plans are many,
    and an answer reads a page of them."""

    def __init__(
        self,
        kept: Candidates[T],
        ranked: Array,
        front: Sequence[bool],
        sizing: tuple[Demand, float, Site],
        baseline: Plan[T] | None,
    ) -> None:
        # kept[ranked[i]] is of rank i + 1; front[j] whether kept[j] is Pareto-optimal.
        self._kept, self._ranked, self._front = kept, ranked, front
        self._sizing, self._baseline = sizing, baseline
        self._made: dict[int, Plan[T]] = {}

    def __len__(self) -> int:
        return len(self._ranked)

    @overload
    def __getitem__(self, i: int) -> Plan[T]: ...
    @overload
    def __getitem__(self, i: slice) -> list[Plan[T]]: ...
    def __getitem__(self, i: int | slice) -> Plan[T] | list[Plan[T]]:
        if isinstance(i, slice):
            return [self[j] for j in range(*i.indices(len(self)))]
        if i < 0:
            i += len(self)
        if not 0 <= i < len(self):
            raise IndexError(i)
        made = self._made.get(i)
        if made is None:
            j = int(self._ranked[i])
            made = self._made[i] = size(self._kept[j], *self._sizing)
            made.rank, made.pareto_optimal = i + 1, bool(self._front[j])
            made.savings = None if self._baseline is None else savings(made, self._baseline)
        return made


@dataclass(frozen=True)
class Plans(Generic[T]):
    """Every plan that meets the limits, ranked; how many configurations each limit kept out;
    the baseline's plan when one was given, and its rank when it is among the plans."""

    plans: Sequence[Plan[T]]
    candidates: int
    excluded: Mapping[Limit, int]
    baseline: Plan[T] | None
    baseline_rank: int | None = None


def replicas_for(outputs: float, capacity: float) -> int:
    """ceil(outputs / capacity); a quotient within a billionth of a whole number is that
    number (2 / (4 / 6) is 3.0000000000000004 in floating point: no replica for rounding)."""
    quotient = outputs / capacity
    whole = round(quotient)
    if whole >= 1 and math.isclose(quotient, whole, rel_tol=WHOLE_WITHIN):
        return whole
    return math.ceil(quotient)


def energy_per_request(c: Candidate[T], outputs_per_request: float, pue: float) -> float:
    """Joules a request of `outputs_per_request` outputs takes on `c`: each output at the
    measured efficiency, times the PUE."""
    return per_count(c.energy_per_output, outputs_per_request) * pue


def size(c: Candidate[T], demand: Demand, utilization: float, site: Site) -> Plan[T]:
    """`c` sized to the demand: replicas, GPUs, power, energy, carbon and cost."""
    outputs = demand.outputs(c)
    replicas = replicas_for(outputs, utilization * c.throughput)
    upper = replicas * c.power
    # Upstream's energy per output is power / throughput: at full load D * energy equals the
    # upper bound but for rounding, which must not put the lower bound above it.
    power = Bounds(min(outputs * c.energy_per_output, upper), upper)
    energy = power.times(kilowatt_hours(SECONDS_PER_DAY) * site.pue)
    missing: dict[str, str] = {}
    carbon = None
    if site.carbon_intensity is None:
        missing["carbon"] = "the site gives no carbon intensity"
    else:
        carbon = energy.times(site.carbon_intensity / GRAMS_PER_KILOGRAM)
    electricity = None
    if site.electricity_price is None:
        missing["electricity_cost"] = "the site gives no electricity price"
    else:
        electricity = energy.times(site.electricity_price)
    gpu_cost = None
    prices = site.gpu_hour_prices
    if prices is None:
        missing["gpu_cost"] = "the site gives no GPU-hour prices"
    elif c.gpu not in prices:
        missing["gpu_cost"] = missing["cost"] = f"the site gives no GPU-hour price for {c.gpu}"
    else:
        gpu_cost = replicas * c.gpus_per_replica * prices[c.gpu] * HOURS_PER_DAY
    cost = _cost(electricity, gpu_cost, priced_gpus=prices is not None)
    if cost is None:
        missing.setdefault("cost", "the site gives no electricity price or GPU-hour prices")
    return Plan(
        candidate=c,
        outputs_per_second=outputs,
        requests_per_second=demand.requests(c),
        outputs_per_request=demand.per_request(c),
        replicas=replicas,
        gpus=replicas * c.gpus_per_replica,
        power=power,
        energy_per_day=energy,
        energy_per_request=energy_per_request(c, demand.per_request(c), site.pue),
        carbon_per_day=carbon,
        electricity_cost_per_day=electricity,
        gpu_cost_per_day=gpu_cost,
        cost_per_day=cost,
        missing=missing,
    )


def _cost(electricity: Bounds | None, gpus: float | None, *, priced_gpus: bool) -> Bounds | None:
    """The parts of the cost the site prices, added; None when it prices none, or prices
    GPU-hours but not this plan's GPU type."""
    if priced_gpus and gpus is None:
        return None
    if electricity is None:
        return None if gpus is None else Bounds(gpus, gpus)
    return electricity if gpus is None else electricity.plus(gpus)


def savings(p: Plan[T], baseline: Plan[T]) -> Savings:
    return Savings(
        energy_per_day=baseline.energy_per_day.minus(p.energy_per_day),
        energy_fraction=_fraction(p.energy_per_day, baseline.energy_per_day),
        gpus=baseline.gpus - p.gpus,
        carbon_per_day=_difference(baseline.carbon_per_day, p.carbon_per_day),
        cost_per_day=_difference(baseline.cost_per_day, p.cost_per_day),
    )


def _difference(baseline: Bounds | None, plan: Bounds | None) -> Bounds | None:
    return None if baseline is None or plan is None else baseline.minus(plan)


def _fraction(plan: Bounds, baseline: Bounds) -> Bounds | None:
    lower, upper = ratio(plan.lower, baseline.lower), ratio(plan.upper, baseline.upper)
    return None if lower is None or upper is None else Bounds(1.0 - lower, 1.0 - upper)


def excluded_by(c: Candidate[T], max_latency: float | None) -> list[Limit]:
    """The limits `c` does not meet: latency above the limit (inclusive), or no throughput."""
    found = []
    if max_latency is not None and not c.latency <= max_latency:
        found.append(Limit.LATENCY)
    if not c.throughput > 0:
        found.append(Limit.THROUGHPUT)
    return found


def plan(
    candidates: Sequence[Candidate[T]],
    demand: Demand,
    *,
    utilization: float = 1.0,
    site: Site = Site(),
    objective: Objective = Objective.ENERGY,
    max_latency: float | None = None,
    baseline: Candidate[T] | None = None,
) -> Plans[T]:
    """Every candidate within the limits sized to the demand, ranked by the objective's upper
    bound, then its lower bound, then `order` (plans without the objective's figure last);
    each marked Pareto-optimal in (GPUs, energy a day's upper bound) among them (no other
    plan needs at most as many GPUs and as much energy, and less of one), and set
    against the baseline's plan when a baseline is given (whatever the limits say of it).

    Each limit counts every candidate it keeps out (one kept out by both counts for both).
    The ranking and the marks read only what they need of each candidate, all at once
    (`Candidates`: pass one to rank the same candidates often); a plan is sized in whole when
    it is read.
    """
    import numpy as np

    if not 0 < utilization <= 1:
        raise ValueError(f"utilization must be in (0, 1], got {utilization}")
    if baseline is not None and Limit.THROUGHPUT in excluded_by(baseline, None):
        raise ValueError("the baseline has no measured throughput: no number of it serves")
    table = Candidates.of(candidates)
    columns = table.columns
    slow = np.zeros(len(table), dtype=bool)
    if max_latency is not None:
        slow = ~(columns.latency <= max_latency)
    dead = ~(columns.throughput > 0)
    excluded = {Limit.LATENCY: int(slow.sum()), Limit.THROUGHPUT: int(dead.sum())}
    within = ~(slow | dead)
    kept = table if within.all() else table.take(np.flatnonzero(within))
    replicas, energy = _replicas_and_energy(kept.columns, demand, utilization, site)
    gpus = replicas * kept.columns.gpus_per_replica
    missing, lower, upper = _objective(kept, objective, site, replicas, gpus, energy)
    # The last key sorts first; the sort is stable, as the plans' (missing, upper, lower, order).
    ranked = np.lexsort((kept.columns.order, lower, upper, missing))
    front = undominated(np.column_stack((gpus, energy[1])))
    base = None if baseline is None else size(baseline, demand, utilization, site)
    plans = Ranked(kept, ranked, front, (demand, utilization, site), base)
    return Plans(plans, len(table), excluded, base, _rank_of(baseline, kept, ranked))


def _replicas_and_energy(
    c: _Columns, demand: Demand, utilization: float, site: Site
) -> tuple[Array, tuple[Array, Array]]:
    """`size`'s replicas and energy a day (lower, upper) for every candidate of `c`, by the
    same operations in the same order (so the same numbers, to the last bit)."""
    import numpy as np

    outputs: Any = demand.outputs_per_second
    if outputs is None:
        given, rate = demand.outputs_per_request, demand.requests_per_second
        assert rate is not None
        outputs = rate * (c.outputs_per_request if given is None else given)
    quotient = outputs / (utilization * c.throughput)
    whole = np.rint(quotient)  # round() to even, as replicas_for
    gap = np.abs(whole - quotient)  # math.isclose, term by term
    close = (
        (quotient == whole)
        | (gap <= np.abs(WHOLE_WITHIN * whole))
        | (gap <= np.abs(WHOLE_WITHIN * quotient))
    )
    replicas = np.where((whole >= 1) & close, whole, np.ceil(quotient))
    upper = replicas * c.power
    at_efficiency = outputs * c.energy_per_output
    lower = np.where(upper < at_efficiency, upper, at_efficiency)  # min(at_efficiency, upper)
    day = kilowatt_hours(SECONDS_PER_DAY) * site.pue
    return replicas, (lower * day, upper * day)


def _objective(
    kept: Candidates[T],
    objective: Objective,
    site: Site,
    replicas: Array,
    gpus: Array,
    energy: tuple[Array, Array],
) -> tuple[Array, Array, Array]:
    """Which plans lack the objective's figure (`every`: none), and its lower and upper bounds
    (0 where lacking), made as `size` makes the figure."""
    import numpy as np

    every, zero = np.zeros(len(kept), dtype=bool), np.zeros(len(kept))
    if objective is Objective.GPUS:
        return every, gpus, gpus
    if objective is Objective.ENERGY:
        return every, *energy
    if objective is Objective.CARBON:
        if site.carbon_intensity is None:
            return ~every, zero, zero
        factor = site.carbon_intensity / GRAMS_PER_KILOGRAM
        return every, energy[0] * factor, energy[1] * factor
    price, prices = site.electricity_price, site.gpu_hour_prices
    electricity = None if price is None else (energy[0] * price, energy[1] * price)
    if prices is None:
        return (~every, zero, zero) if electricity is None else (every, *electricity)
    priced = np.array([gpu in prices for gpu in kept.gpus], dtype=bool)[kept.columns.gpu]
    hourly = np.array([prices.get(gpu, 0.0) for gpu in kept.gpus])[kept.columns.gpu]
    gpu_cost = replicas * kept.columns.gpus_per_replica * hourly * HOURS_PER_DAY
    if electricity is None:
        lower = upper = gpu_cost
    else:
        lower, upper = electricity[0] + gpu_cost, electricity[1] + gpu_cost
    return ~priced, np.where(priced, lower, 0.0), np.where(priced, upper, 0.0)


def _rank_of(baseline: Candidate[T] | None, kept: Candidates[T], ranked: Array) -> int | None:
    """The rank of the baseline's plan when the baseline is among the plans."""
    if baseline is None:
        return None
    for i in (kept.columns.order[ranked] == baseline.order).nonzero()[0].tolist():
        if kept[int(ranked[i])].item == baseline.item:
            rank: int = i + 1
            return rank
    return None
