"""Deployment plans (analysis.plan) on hand-made configurations, and against a brute-force
computation of its own on generated ones."""

from __future__ import annotations

import math
from dataclasses import replace
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from analysis.plan import (
    Bounds,
    Candidate,
    Demand,
    Limit,
    Objective,
    Plan,
    Site,
    plan,
    size,
)
from tests.conftest import examples


def candidate(
    order: int,
    *,
    gpu: str = "H100",
    gpus: int = 1,
    throughput: float = 1000.0,
    energy: float = 0.5,
    power: float = 500.0,
    latency: float = 10.0,
    per_request: float = 100.0,
) -> Candidate[str]:
    return Candidate(f"c{order}", order, gpu, gpus, throughput, energy, power, latency, per_request)


BOUNDS = ("power", "energy_per_day", "carbon_per_day", "electricity_cost_per_day", "cost_per_day")


def figures(p: Plan[Any]) -> dict[str, Any]:
    """A plan's numbers, each bound a number of its own (pytest.approx takes no tuples)."""
    found: dict[str, Any] = {
        "replicas": p.replicas,
        "gpus": p.gpus,
        "outputs_per_second": p.outputs_per_second,
        "requests_per_second": p.requests_per_second,
        "outputs_per_request": p.outputs_per_request,
        "energy_per_request": p.energy_per_request,
        "gpu_cost_per_day": p.gpu_cost_per_day,
    }
    for name in BOUNDS:
        bounds = getattr(p, name)
        found |= flat(name, None if bounds is None else (bounds.lower, bounds.upper))
    return found


def flat(name: str, bounds: tuple[float, float] | None) -> dict[str, float | None]:
    lower, upper = (None, None) if bounds is None else bounds
    return {f"{name}.lower": lower, f"{name}.upper": upper}


SITE = Site(pue=1.2, carbon_intensity=400.0, electricity_price=0.1, gpu_hour_prices={"H100": 2.0})


def test_a_plan_at_half_load_on_a_priced_site() -> None:
    """2,500 tokens/s at half of 1,000 tokens/s a replica: 5 replicas of 2 GPUs."""
    p = size(candidate(1, gpus=2), Demand(outputs_per_second=2500.0), 0.5, SITE)
    assert figures(p) == pytest.approx(
        {
            "replicas": 5,
            "gpus": 10,
            "outputs_per_second": 2500.0,
            "requests_per_second": 25.0,  # 100 tokens per response, as measured
            "outputs_per_request": 100.0,
            "energy_per_request": 0.5 * 100 * 1.2,
            # 10 GPUs x 2 an hour x 24 h.
            "gpu_cost_per_day": 480.0,
            # 2,500 tokens/s x 0.5 J; 5 replicas x 500 W.
            **flat("power", (1250.0, 2500.0)),
            # x 24 h / 1,000 x PUE 1.2.
            **flat("energy_per_day", (36.0, 72.0)),
            # x 400 g/kWh.
            **flat("carbon_per_day", (14.4, 28.8)),
            **flat("electricity_cost_per_day", (3.6, 7.2)),
            **flat("cost_per_day", (483.6, 487.2)),
        }
    )
    assert p.missing == {}


@pytest.mark.parametrize(
    ("demand", "replicas", "outputs", "requests", "per_request"),
    [
        # Each request of the configuration's measured 100 tokens.
        (Demand(requests_per_second=25.0), 3, 2500.0, 25.0, 100.0),
        # Of 40 tokens each, as the client says.
        (Demand(requests_per_second=25.0, outputs_per_request=40.0), 1, 1000.0, 25.0, 40.0),
        (Demand(outputs_per_second=1000.0, outputs_per_request=40.0), 1, 1000.0, 25.0, 40.0),
        # Exactly a replica's throughput: one replica, not two.
        (Demand(outputs_per_second=1000.0), 1, 1000.0, 10.0, 100.0),
        (Demand(outputs_per_second=1000.5), 2, 1000.5, 10.005, 100.0),
        # However small the demand, one replica serves it.
        (Demand(outputs_per_second=0.001), 1, 0.001, 0.00001, 100.0),
    ],
)
def test_the_demand_in_requests_or_in_outputs(
    demand: Demand, replicas: int, outputs: float, requests: float, per_request: float
) -> None:
    p = size(candidate(1), demand, 1.0, Site())
    assert (p.replicas, p.outputs_per_second, p.outputs_per_request) == (
        replicas,
        outputs,
        per_request,
    )
    assert p.requests_per_second == pytest.approx(requests)
    assert p.energy_per_request == 0.5 * per_request


def test_rounding_adds_no_replica() -> None:
    """2.1 / 0.3 is 7.000000000000001 in floating point: seven replicas, not eight."""
    p = size(candidate(1, throughput=0.3), Demand(outputs_per_second=2.1), 1.0, Site())
    assert (2.1 / 0.3 > 7, p.replicas) == (True, 7)


def test_a_request_of_no_outputs_has_no_request_rate() -> None:
    p = size(candidate(1, per_request=0.0), Demand(outputs_per_second=10.0), 1.0, Site())
    assert (p.requests_per_second, p.energy_per_request) == (None, 0.0)


def test_the_lower_bound_is_never_above_the_upper() -> None:
    """At full load D x energy is the upper bound but for rounding: never above it."""
    c = candidate(1, throughput=3.0, energy=0.1, power=0.3)
    p = size(c, Demand(outputs_per_second=3.0), 1.0, Site())
    assert 3.0 * 0.1 > 0.3  # the rounding the bound guards against
    assert (p.power.lower, p.power.upper) == (0.3, 0.3)


@pytest.mark.parametrize(
    ("site", "costs", "missing"),
    [
        (
            Site(),
            (None, None, None),
            {
                "carbon": "the site gives no carbon intensity",
                "electricity_cost": "the site gives no electricity price",
                "gpu_cost": "the site gives no GPU-hour prices",
                "cost": "the site gives no electricity price or GPU-hour prices",
            },
        ),
        # Electricity only: the cost is the electricity's.
        (
            Site(electricity_price=0.5),
            ((6.0, 6.0), None, (6.0, 6.0)),
            {
                "carbon": "the site gives no carbon intensity",
                "gpu_cost": "the site gives no GPU-hour prices",
            },
        ),
        # GPU-hours only: the cost is theirs.
        (
            Site(gpu_hour_prices={"H100": 1.5}),
            (None, 36.0, (36.0, 36.0)),
            {
                "carbon": "the site gives no carbon intensity",
                "electricity_cost": "the site gives no electricity price",
            },
        ),
        # Prices for other GPU types: no cost, even with an electricity price.
        (
            Site(electricity_price=0.5, gpu_hour_prices={"B200": 3.0}),
            ((6.0, 6.0), None, None),
            {
                "carbon": "the site gives no carbon intensity",
                "gpu_cost": "the site gives no GPU-hour price for H100",
                "cost": "the site gives no GPU-hour price for H100",
            },
        ),
    ],
)
def test_what_the_site_does_not_give_is_none_with_the_reason(site, costs, missing) -> None:
    """One replica at 500 W: 12 kWh a day."""
    p = size(candidate(1), Demand(outputs_per_second=1000.0), 1.0, site)
    electricity, gpus, cost = costs
    found = figures(p)
    assert {k: found[k] for k in found if "cost" in k} == pytest.approx(
        {
            **flat("electricity_cost_per_day", electricity),
            "gpu_cost_per_day": gpus,
            **flat("cost_per_day", cost),
        }
    )
    assert p.carbon_per_day is None
    assert p.missing == missing


# Three configurations for 2,000 tokens/s, each row: replicas, GPUs, watts (lower, upper).
#   1: 1,000 tokens/s at 0.5 J, 500 W, 1 GPU     -> 2 replicas, 2 GPUs, (1000, 1000)
#   2: 4,000 tokens/s at 0.2 J, 800 W, 4 GPUs    -> 1 replica, 4 GPUs, (400, 800)
#   3: 2,000 tokens/s at 0.45 J, 900 W, 2 GPUs   -> 1 replica, 2 GPUs, (900, 900)
THREE = [
    candidate(1, throughput=1000.0, energy=0.5, power=500.0, latency=10.0),
    candidate(2, gpus=4, throughput=4000.0, energy=0.2, power=800.0, latency=30.0, gpu="B200"),
    candidate(3, gpus=2, throughput=2000.0, energy=0.45, power=900.0, latency=20.0),
]
TWO_THOUSAND = Demand(outputs_per_second=2000.0)


def ranked(found: Any) -> list[tuple[int, str, bool]]:
    return [(p.rank, p.candidate.item, p.pareto_optimal) for p in found.plans]


@pytest.mark.parametrize(
    ("objective", "site", "expected"),
    [
        # Energy's upper bound: 800 < 900 < 1,000 W.
        (Objective.ENERGY, Site(), [(1, "c2", True), (2, "c3", True), (3, "c1", False)]),
        (
            Objective.CARBON,
            Site(carbon_intensity=100.0),
            [(1, "c2", True), (2, "c3", True), (3, "c1", False)],
        ),
        # Two GPUs each for c1 and c3: ties are broken by order (the lower bound is the count).
        (Objective.GPUS, Site(), [(1, "c1", False), (2, "c3", True), (3, "c2", True)]),
        # GPU-hours at 1 an hour: 48, 96 and 48 a day, then electricity.
        (
            Objective.COST,
            Site(electricity_price=1.0, gpu_hour_prices={"H100": 1.0, "B200": 1.0}),
            [(1, "c3", True), (2, "c1", False), (3, "c2", True)],
        ),
        # A plan without the objective's figure (no B200 price) comes last.
        (
            Objective.COST,
            Site(gpu_hour_prices={"H100": 1.0}),
            [(1, "c1", False), (2, "c3", True), (3, "c2", True)],
        ),
    ],
)
def test_ranking_by_each_objective(objective: Objective, site: Site, expected) -> None:
    found = plan(THREE, TWO_THOUSAND, site=site, objective=objective)
    assert ranked(found) == expected


def test_ties_on_the_upper_bound_are_broken_by_the_lower_then_the_order() -> None:
    """Both draw 1,000 W provisioned; the second is more efficient, the third its equal."""
    same = [
        candidate(1, throughput=1000.0, energy=0.5, power=1000.0),
        candidate(2, throughput=1000.0, energy=0.4, power=1000.0),
        candidate(3, throughput=1000.0, energy=0.4, power=1000.0),
    ]
    found = plan(same, Demand(outputs_per_second=500.0))
    assert [p.candidate.item for p in found.plans] == ["c2", "c3", "c1"]
    # Equal points all stay on the frontier.
    assert [p.pareto_optimal for p in found.plans] == [True, True, True]


def test_latency_limit_is_inclusive_and_each_limit_counts_what_it_excludes() -> None:
    four = [*THREE, candidate(4, throughput=0.0, latency=50.0)]
    found = plan(four, TWO_THOUSAND, max_latency=20.0)
    assert [p.candidate.item for p in found.plans] == ["c3", "c1"]
    assert (found.candidates, found.excluded) == (4, {Limit.LATENCY: 2, Limit.THROUGHPUT: 1})


def test_nothing_fits() -> None:
    found = plan(THREE, TWO_THOUSAND, max_latency=5.0)
    assert (list(found.plans), found.candidates, found.excluded, found.baseline) == (
        [],
        3,
        {Limit.LATENCY: 3, Limit.THROUGHPUT: 0},
        None,
    )


def test_savings_against_a_baseline_outside_the_limits() -> None:
    """c2 is over the 20 ms limit, yet a baseline: the plans are set against its plan."""
    site = Site(carbon_intensity=1000.0)
    found = plan(THREE, TWO_THOUSAND, site=site, max_latency=20.0, baseline=THREE[1])
    assert found.baseline is not None
    assert found.baseline.candidate.item == "c2"
    c3, c1 = found.plans
    day = 24 / 1000
    assert c3.savings is not None and c1.savings is not None
    # (400, 800) W against (900, 900) W and (1000, 1000) W.
    assert c3.savings.energy_per_day == Bounds(
        pytest.approx((400 - 900) * day), pytest.approx((800 - 900) * day)
    )
    assert c3.savings.energy_fraction == Bounds(
        pytest.approx(1 - 900 / 400), pytest.approx(1 - 900 / 800)
    )
    assert (c3.savings.gpus, c1.savings.gpus) == (2, 2)
    assert c1.savings.carbon_per_day == Bounds(
        pytest.approx((400 - 1000) * day), pytest.approx((800 - 1000) * day)
    )
    assert c1.savings.cost_per_day is None


def test_without_a_baseline_there_are_no_savings() -> None:
    found = plan(THREE[:1], TWO_THOUSAND, site=SITE)
    assert (found.baseline, found.plans[0].savings, found.plans[0].missing) == (None, None, {})


def test_a_baseline_of_zero_energy_has_no_saved_fraction() -> None:
    idle = candidate(9, energy=0.0, power=0.0)
    found = plan(THREE[:1], TWO_THOUSAND, baseline=idle)
    assert found.plans[0].savings is not None
    assert found.plans[0].savings.energy_fraction is None


@pytest.mark.parametrize(
    ("call", "message"),
    [
        (lambda: Demand(), "a demand is outputs per second or requests per second, not both"),
        (
            lambda: Demand(outputs_per_second=1.0, requests_per_second=1.0),
            "a demand is outputs per second or requests per second, not both",
        ),
        (lambda: plan(THREE, TWO_THOUSAND, utilization=0.0), r"utilization must be in \(0, 1\]"),
        (lambda: plan(THREE, TWO_THOUSAND, utilization=1.5), r"utilization must be in \(0, 1\]"),
        (
            lambda: plan(THREE, TWO_THOUSAND, baseline=candidate(9, throughput=0.0)),
            "the baseline has no measured throughput",
        ),
    ],
)
def test_what_no_plan_can_be_made_of(call, message: str) -> None:
    with pytest.raises(ValueError, match=message):
        call()


# The brute force: each figure written from the formulae, the ranking and the frontier
# decided pair by pair.


def expected_plan(c: Candidate[str], demand: Demand, u: float, site: Site) -> dict[str, Any]:
    per_request = (
        demand.outputs_per_request
        if demand.outputs_per_request is not None
        else c.outputs_per_request
    )
    if demand.outputs_per_second is not None:
        d = demand.outputs_per_second
        requests = d / per_request if per_request else None
    else:
        assert demand.requests_per_second is not None
        d = demand.requests_per_second * per_request
        requests = demand.requests_per_second
    # A quotient within a billionth above a whole number (the planner's rule) adds no replica.
    replicas = math.ceil(d / (u * c.throughput) * (1 - 1e-9))
    upper_w = replicas * c.power
    lower_w = min(d * c.energy_per_output, upper_w)
    energy = (lower_w * 24 / 1000 * site.pue, upper_w * 24 / 1000 * site.pue)
    gpus = replicas * c.gpus_per_replica
    carbon = electricity = gpu_cost = cost = None
    if site.carbon_intensity is not None:
        carbon = tuple(e * site.carbon_intensity / 1000 for e in energy)
    if site.electricity_price is not None:
        electricity = tuple(e * site.electricity_price for e in energy)
    prices = site.gpu_hour_prices
    if prices is not None and c.gpu in prices:
        gpu_cost = gpus * 24 * prices[c.gpu]
    if prices is None or gpu_cost is not None:
        parts = [p for p in (electricity, None if gpu_cost is None else (gpu_cost,) * 2) if p]
        if parts:
            cost = tuple(sum(p[i] for p in parts) for i in (0, 1))
    return {
        "replicas": replicas,
        "gpus": gpus,
        "outputs_per_second": d,
        "requests_per_second": requests,
        "outputs_per_request": per_request,
        "energy_per_request": c.energy_per_output * per_request * site.pue,
        "gpu_cost_per_day": gpu_cost,
        **flat("power", (lower_w, upper_w)),
        **flat("energy_per_day", energy),
        **flat("carbon_per_day", carbon),
        **flat("electricity_cost_per_day", electricity),
        **flat("cost_per_day", cost),
    }


def brute_force(
    candidates: list[Candidate[str]],
    demand: Demand,
    u: float,
    site: Site,
    objective: Objective,
    max_latency: float | None,
) -> tuple[list[tuple[str, bool]], dict[str, dict[str, Any]], dict[Limit, int]]:
    """(item, Pareto-optimal) in rank order, each item's figures, and the exclusions."""
    slow = [c for c in candidates if max_latency is not None and c.latency > max_latency]
    dead = [c for c in candidates if c.throughput <= 0]
    kept = [c for c in candidates if c not in slow and c not in dead]
    made = {c.item: expected_plan(c, demand, u, site) for c in kept}
    key = {
        Objective.ENERGY: "energy_per_day",
        Objective.CARBON: "carbon_per_day",
        Objective.COST: "cost_per_day",
    }

    def bounds(c: Candidate[str]) -> Any:
        mine = made[c.item]
        if objective is Objective.GPUS:
            return (mine["gpus"],) * 2
        lower, upper = mine[f"{key[objective]}.lower"], mine[f"{key[objective]}.upper"]
        return None if lower is None else (lower, upper)

    def before(a: Candidate[str], b: Candidate[str]) -> bool:
        x, y = bounds(a), bounds(b)
        if (x is None) != (y is None):
            return y is None
        if x is not None and x != y:
            return (x[1], x[0]) < (y[1], y[0])
        return a.order < b.order

    order = sorted(kept, key=lambda c: sum(before(o, c) for o in kept if o is not c))

    def beaten(c: Candidate[str]) -> bool:
        mine = (made[c.item]["gpus"], made[c.item]["energy_per_day.upper"])
        others = [(made[o.item]["gpus"], made[o.item]["energy_per_day.upper"]) for o in kept]
        return any(o[0] <= mine[0] and o[1] <= mine[1] and o != mine for o in others)

    excluded = {Limit.LATENCY: len(slow), Limit.THROUGHPUT: len(dead)}
    return [(c.item, not beaten(c)) for c in order], made, excluded


candidates_st = st.lists(
    st.builds(
        candidate,
        st.just(0),
        gpu=st.sampled_from(["H100", "B200"]),
        gpus=st.sampled_from([1, 2, 8]),
        throughput=st.sampled_from([0.0, 0.5, 250.0, 1000.0, 3333.3]),
        energy=st.sampled_from([0.1, 0.25, 2.0]),
        power=st.sampled_from([300.0, 500.0, 1000.0]),
        latency=st.sampled_from([5.0, 20.0, 50.0]),
        per_request=st.sampled_from([0.0, 50.0, 600.5]),
    ),
    max_size=8,
).map(lambda cs: [replace(c, item=f"c{i}", order=i) for i, c in enumerate(cs)])
demand_st = st.one_of(
    st.builds(
        Demand,
        outputs_per_second=st.sampled_from([0.5, 1000.0, 12345.6]),
        outputs_per_request=st.sampled_from([None, 100.0]),
    ),
    st.builds(
        Demand,
        requests_per_second=st.sampled_from([0.1, 10.0, 77.7]),
        outputs_per_request=st.sampled_from([None, 100.0]),
    ),
)
site_st = st.builds(
    Site,
    pue=st.sampled_from([1.0, 1.1, 1.58]),
    carbon_intensity=st.sampled_from([None, 0.0, 412.0]),
    electricity_price=st.sampled_from([None, 0.13]),
    gpu_hour_prices=st.sampled_from([None, {"H100": 2.5}, {"H100": 2.5, "B200": 4.0}]),
)


@settings(max_examples=examples(400), deadline=None)
@given(
    candidates=candidates_st,
    demand=demand_st,
    utilization=st.sampled_from([0.05, 0.5, 0.8, 1.0]),
    site=site_st,
    objective=st.sampled_from(list(Objective)),
    max_latency=st.sampled_from([None, 5.0, 20.0]),
    baseline=st.sampled_from([None, candidate(99, throughput=700.0, gpus=2, latency=90.0)]),
)
def test_plans_agree_with_a_brute_force_computation(
    candidates, demand, utilization, site, objective, max_latency, baseline
) -> None:
    found = plan(
        candidates,
        demand,
        utilization=utilization,
        site=site,
        objective=objective,
        max_latency=max_latency,
        baseline=baseline,
    )
    order, made, excluded = brute_force(
        candidates, demand, utilization, site, objective, max_latency
    )
    assert [(p.candidate.item, p.pareto_optimal) for p in found.plans] == order
    assert [p.rank for p in found.plans] == list(range(1, len(order) + 1))
    for p in found.plans:
        assert figures(p) == pytest.approx(made[p.candidate.item]), p.candidate.item
    if baseline is None:
        assert (found.baseline, [p.savings for p in found.plans]) == (None, [None] * len(order))
        return
    base = expected_plan(baseline, demand, utilization, site)
    assert found.baseline is not None
    assert figures(found.baseline) == pytest.approx(base)
    for p in found.plans:
        mine, saved = made[p.candidate.item], p.savings
        assert saved is not None
        assert saved.gpus == base["gpus"] - mine["gpus"]
        for name, got in (
            ("energy_per_day", saved.energy_per_day),
            ("carbon_per_day", saved.carbon_per_day),
            ("cost_per_day", saved.cost_per_day),
        ):
            ours, theirs = (
                [mine[f"{name}.{b}"] for b in ("lower", "upper")],
                [base[f"{name}.{b}"] for b in ("lower", "upper")],
            )
            if ours[0] is None or theirs[0] is None:
                assert got is None, name
            else:
                assert got == Bounds(
                    pytest.approx(theirs[0] - ours[0]), pytest.approx(theirs[1] - ours[1])
                ), name
    assert (found.candidates, found.excluded) == (len(candidates), excluded)


floats = st.floats(min_value=1e-3, max_value=1e5, allow_nan=False, allow_infinity=False)
exact_candidates_st = st.lists(
    st.builds(
        candidate,
        st.just(0),
        gpu=st.sampled_from(["H100", "B200"]),
        gpus=st.sampled_from([1, 2, 8]),
        throughput=st.one_of(st.just(0.0), floats),
        energy=floats,
        power=floats,
        latency=floats,
        per_request=st.one_of(st.just(0.0), floats),
    ),
    max_size=12,
).map(lambda cs: [replace(c, item=f"c{i}", order=i) for i, c in enumerate(cs)])


@settings(max_examples=300, deadline=None)
@given(
    candidates=exact_candidates_st,
    demand=demand_st,
    utilization=st.sampled_from([0.05, 0.3, 0.8, 1.0]),
    site=site_st,
    objective=st.sampled_from(list(Objective)),
)
def test_the_ranking_reads_the_figures_of_the_plans_to_the_last_bit(
    candidates, demand, utilization, site, objective
) -> None:
    """The ranking and the Pareto marks read every candidate's figures at once (columns), the
    plans are sized one by one: their order and marks are those of the plans' own figures."""
    found = plan(candidates, demand, utilization=utilization, site=site, objective=objective)
    plans = list(found.plans)

    def key(p: Plan[str]) -> tuple[bool, float, float, int]:
        bounds = {
            Objective.GPUS: Bounds(p.gpus, p.gpus),
            Objective.ENERGY: p.energy_per_day,
            Objective.CARBON: p.carbon_per_day,
            Objective.COST: p.cost_per_day,
        }[objective]
        if bounds is None:
            return True, 0.0, 0.0, p.candidate.order
        return False, bounds.upper, bounds.lower, p.candidate.order

    def beaten(p: Plan[str]) -> bool:
        mine = (p.gpus, p.energy_per_day.upper)
        return any(
            o.gpus <= mine[0]
            and o.energy_per_day.upper <= mine[1]
            and (o.gpus, o.energy_per_day.upper) != mine
            for o in plans
        )

    assert [key(p) for p in plans] == sorted(key(p) for p in plans)
    assert [p.pareto_optimal for p in plans] == [not beaten(p) for p in plans]
