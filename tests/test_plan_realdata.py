"""Real data: every deployment plan recomputed from the task files, for generated demands,
latency limits, utilizations, sites and objectives (Hypothesis), on every task of both kinds
and on both databases.

The expected plans are computed here from the JSON rows with plain Python, written apart from
the project's code (never importing `analysis`): a row within the limit (inclusive) needs
ceil(D / (u x throughput)) replicas (a quotient within a billionth above a whole
number is that number), its power lies between D x energy per output (never above the upper)
and replicas x average power, energy a day is that x 24 / 1000 x PUE; the ranking sorts by the
objective's (upper, lower, file row), and a plan is Pareto-optimal when no other plan has
GPUs and energy a day both at most its own and one lower, checked pair by pair.
"""

from __future__ import annotations

import asyncio
import json
import math
from collections.abc import Iterator
from typing import Any

import pytest
from hypothesis import HealthCheck, assume, given, settings
from hypothesis import strategies as st

from bench.queries import TASK_TABLE
from db.database import create_engine
from graph.settings import PROFILES, Settings
from tests.conftest import SNAPSHOT, make_execute

pytestmark = pytest.mark.realdata

INDEX: dict[str, Any] = json.loads((SNAPSHOT / "index.json").read_text())
DIFFUSION = set(INDEX["architectures"]["diffusion"])
ROWS: dict[str, list[dict[str, Any]]] = {
    task: json.loads((SNAPSHOT / f"tasks/{task}.json").read_text())["configurations"]
    for task in INDEX["tasks"]
}
ITL = {"P50": "median_itl_ms", "P90": "p90_itl_ms", "P95": "p95_itl_ms", "P99": "p99_itl_ms"}
QUERY = """query Plan($task: String!, $demand: DemandInput!, $latency: LatencyInput,
    $u: Float, $objective: PlanObjective, $site: SiteInput) {
  deploymentPlan(task: $task, demand: $demand, latency: $latency, utilization: $u,
      objective: $objective, site: $site, first: 1000) {
    candidates totalCount excluded { limit configurations }
    plans { rank paretoOptimal configuration { upstream { taskRow } } replicas gpuCount
      powerWatts { lower upper } energyPerDayKwh { lower upper } energyPerRequestJoules
      carbonPerDayKg { lower upper } costPerDay } } }"""


def figures(row: dict[str, Any]) -> tuple[float, float, float]:
    """(throughput, energy per output, outputs per request) of a task-file row."""
    for output in ("image", "video"):
        if f"energy_per_{output}_joules" in row:
            return row[f"throughput_{output}s_per_sec"], row[f"energy_per_{output}_joules"], 1.0
    return (
        row["output_throughput_tokens_per_sec"],
        row["energy_per_token_joules"],
        row["avg_output_len"],
    )


def expected_plans(task: str, case: dict[str, Any]) -> tuple[list[dict[str, Any]], int]:
    """The plans in rank order, and how many rows the latency limit kept out."""
    demand, latency, u, site = case["demand"], case["latency"], case["u"], case["site"]
    pue = site.get("pue", 1.0)
    prices = {p["gpu"]: p["price"] for p in site.get("gpuHourPrices", [])}
    plans, slow = [], 0
    for i, row in enumerate(ROWS[task]):
        if latency is not None:
            column, most = (
                ("batch_latency_s", latency["maxBatchLatencySeconds"])
                if task in DIFFUSION
                else (ITL[latency["percentile"]], latency["maxItlMs"])
            )
            if row[column] > most:
                slow += 1
                continue
        throughput, energy, per_request = figures(row)
        per_request = demand.get("outputTokensPerRequest", per_request)
        rate = next(v for k, v in demand.items() if k != "outputTokensPerRequest")
        d = rate * per_request if "requestsPerSecond" in demand else rate
        replicas = math.ceil(d / (u * throughput) * (1 - 1e-9))
        upper = replicas * row["avg_power_watts"]
        lower = min(d * energy, upper)
        kwh = [w * 24 / 1000 * pue for w in (lower, upper)]
        gpus = replicas * row["num_gpus"]
        intensity = site.get("carbonIntensityGramsPerKwh")
        carbon = None if intensity is None else [k * intensity / 1000 for k in kwh]
        cost = None
        if "electricityPricePerKwh" in site or prices:
            electricity = [k * site.get("electricityPricePerKwh", 0.0) for k in kwh]
            if not prices or row["gpu_model"] in prices:
                hours = gpus * 24 * prices.get(row["gpu_model"], 0.0)
                cost = [e + hours for e in electricity]
        plans.append(
            {
                "row": i,
                "replicas": replicas,
                "gpus": gpus,
                "power": [lower, upper],
                "energy": kwh,
                "per_request": energy * per_request * pue,
                "carbon": carbon,
                "cost": cost,
            }
        )
    key = {"ENERGY": "energy", "CARBON": "carbon", "COST": "cost"}.get(case["objective"])

    def rank(p: dict[str, Any]) -> tuple[Any, ...]:
        figure = [p["gpus"]] * 2 if key is None else p[key]
        return (figure is None, *(() if figure is None else (figure[1], figure[0])), p["row"])

    plans.sort(key=rank)
    for p in plans:
        mine = (p["gpus"], p["energy"][1])
        p["pareto"] = not any(
            o["gpus"] <= mine[0]
            and o["energy"][1] <= mine[1]
            and (o["gpus"], o["energy"][1]) != mine
            for o in plans
        )
    return plans, slow


def served(plan: dict[str, Any]) -> dict[str, Any]:
    def pair(b: dict[str, float] | None) -> list[float] | None:
        return None if b is None else [b["lower"], b["upper"]]

    return {
        "row": plan["configuration"]["upstream"]["taskRow"],
        "replicas": plan["replicas"],
        "gpus": plan["gpuCount"],
        "power": pair(plan["powerWatts"]),
        "energy": pair(plan["energyPerDayKwh"]),
        "per_request": plan["energyPerRequestJoules"],
        "carbon": pair(plan["carbonPerDayKg"]),
        "cost": None if plan["costPerDay"] is None else plan["costPerDay"],
        "pareto": plan["paretoOptimal"],
    }


def comparable(plan: dict[str, Any]) -> dict[str, Any]:
    """A plan's figures flat (pytest.approx compares numbers, not lists); cost's upper only."""
    flat = {k: v for k, v in plan.items() if not isinstance(v, list)}
    for name in ("power", "energy", "carbon"):
        lower, upper = plan[name] or (None, None)
        flat |= {f"{name}.lower": lower, f"{name}.upper": upper}
    if isinstance(plan["cost"], list):
        flat["cost"] = plan["cost"][1]
    return flat


@st.composite
def cases(draw: st.DrawFn) -> tuple[str, dict[str, Any]]:
    task = draw(st.sampled_from(sorted(ROWS)))
    if task in DIFFUSION:
        rate = "imagesPerSecond" if task == "text-to-image" else "videosPerSecond"
        demand = {rate: draw(st.floats(0.001, 50.0))}
        most = draw(st.sampled_from([None, 5.0, 30.0, 120.0, 300.0]))
        latency = None if most is None else {"maxBatchLatencySeconds": most}
    else:
        rate = draw(st.sampled_from(["requestsPerSecond", "outputTokensPerSecond"]))
        demand = {rate: draw(st.floats(0.01, 200_000.0))}
        if draw(st.booleans()):
            demand["outputTokensPerRequest"] = draw(st.floats(1.0, 4000.0))
        most = draw(st.sampled_from([None, 10.0, 25.0, 50.0, 100.0, 500.0]))
        latency = (
            None
            if most is None
            else {"maxItlMs": most, "percentile": draw(st.sampled_from(sorted(ITL)))}
        )
    site: dict[str, Any] = {"pue": draw(st.sampled_from([1.0, 1.1, 1.58]))}
    if draw(st.booleans()):
        # Zero or at least a thousandth: an intensity so small that its thousandth (grams to
        # kilograms) underflows makes every plan's carbon 0 in one association of the product
        # and a subnormal in the other, and the plans' order then rests on rounding.
        site["carbonIntensityGramsPerKwh"] = draw(st.just(0.0) | st.floats(0.001, 1000.0))
    if draw(st.booleans()):
        site["electricityPricePerKwh"] = draw(st.floats(0.0, 1.0))
    site["gpuHourPrices"] = draw(
        st.sampled_from(
            [
                [],
                [{"gpu": "H100", "price": 2.49}],
                [{"gpu": "H100", "price": 2.49}, {"gpu": "B200", "price": 5.5}],
            ]
        )
    )
    if not site["gpuHourPrices"]:
        del site["gpuHourPrices"]
    objective = draw(st.sampled_from(["ENERGY", "GPUS", "COST", "CARBON"]))
    assume(objective != "CARBON" or "carbonIntensityGramsPerKwh" in site)
    assume(objective != "COST" or {"electricityPricePerKwh", "gpuHourPrices"} & set(site))
    u = draw(st.floats(0.05, 1.0))
    return task, {
        "demand": demand,
        "latency": latency,
        "u": u,
        "site": site,
        "objective": objective,
    }


@pytest.fixture(scope="module")
def planner(real_url: str) -> Iterator[Any]:
    """The real data's schema execution, with an event loop of its own (Hypothesis's examples
    are plain calls), on the standard profile (its page holds every plan of the largest task)."""
    settings = Settings(database_url=real_url, manifest=None)
    with asyncio.Runner() as runner:
        engine = create_engine(real_url)
        yield runner, make_execute(engine, settings)
        runner.run(engine.dispose())


@settings(max_examples=40, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(case=cases())
def test_every_plan_agrees_with_the_task_files(planner, case) -> None:
    runner, execute = planner
    task, asked = case
    data = runner.run(
        execute(
            QUERY,
            task=task,
            demand=asked["demand"],
            latency=asked["latency"],
            u=asked["u"],
            objective=asked["objective"],
            site=asked["site"],
        )
    )
    assert "errors" not in data, data
    answer = data["deploymentPlan"]
    plans, slow = expected_plans(task, asked)
    assert (answer["candidates"], answer["totalCount"]) == (len(ROWS[task]), len(plans))
    assert answer["excluded"] == (
        [{"limit": f"latency.{next(iter(asked['latency']))}", "configurations": slow}]
        if slow
        else []
    )
    got = [served(p) for p in answer["plans"]]
    assert [p["rank"] for p in answer["plans"]] == list(range(1, len(plans) + 1))
    assert [p["row"] for p in got] == [p["row"] for p in plans]
    for mine, theirs in zip(got, plans, strict=True):
        assert comparable(mine) == pytest.approx(comparable(theirs)), (task, mine["row"])


# A whole page of plans as a client asks it: every figure of a plan and of its configuration.
FULL_PAGE = """query WholeTask($task: String!, $demand: DemandInput!, $first: Int!) {
  deploymentPlan(task: $task, demand: $demand, first: $first, site: {pue: 1.2,
      carbonIntensityGramsPerKwh: 400, electricityPricePerKwh: 0.15,
      gpuHourPrices: [{gpu: "H100", price: 2.5}, {gpu: "B200", price: 5.5}]}) {
    candidates totalCount excluded { limit configurations reason } reason
    plans { rank paretoOptimal latency outputsPerSecond requestsPerSecond outputsPerRequest
      throughputPerReplica replicas gpuCount powerWatts { lower upper }
      energyPerDayKwh { lower upper } energyPerRequestJoules carbonPerDayKg { lower upper }
      electricityCostPerDay { lower upper } gpuCostPerDay costPerDay unavailable { field reason }
      configuration { id gpuModel numGpus avgPowerWatts model { slug name }
        ... on Configuration { maxNumSeqs tensorParallel medianItlMs energyPerTokenJoules }
        ... on DiffusionConfiguration { batchSize batchLatencyS } } }
    assumptions method } }"""
# The largest LLM task's table with every field of a configuration (bench/queries.py's).
TABLE = TASK_TABLE.replace("first: 500", "first: $first").replace(
    "($task: String!)", "($task: String!, $first: Int!)"
)
LARGEST = max(ROWS, key=lambda task: len(ROWS[task]))
LARGEST_LLM = max(set(ROWS) - DIFFUSION, key=lambda task: len(ROWS[task]))


@pytest.mark.anyio
@pytest.mark.parametrize("limits", sorted(PROFILES))
async def test_a_whole_task_fits_in_one_page_of_every_profile(real_url: str, limits: str) -> None:
    """The largest task's plans (text-to-image) and the largest LLM task's table, each in one
    request with `first` = the profile's max_page_size: within its cost and field limits."""
    settings = Settings(database_url=real_url, manifest=None, limits=limits)
    engine = create_engine(real_url)
    try:
        execute = make_execute(engine, settings)
        first = settings.max_page_size
        plans = await execute(FULL_PAGE, task=LARGEST, demand={"imagesPerSecond": 2.0}, first=first)
        table = await execute(TABLE, task=LARGEST_LLM, first=first)
    finally:
        await engine.dispose()
    assert "errors" not in plans and "errors" not in table, (plans, table)
    answer = plans["deploymentPlan"]
    assert (LARGEST, answer["totalCount"], len(answer["plans"])) == ("text-to-image", 638, 638)
    connection = table["configurations"]
    assert (connection["totalCount"], len(connection["nodes"])) == (len(ROWS[LARGEST_LLM]),) * 2
    assert connection["pageInfo"]["hasNextPage"] is False
