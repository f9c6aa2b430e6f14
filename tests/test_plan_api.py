"""Deployment plans through the schema (Query.deploymentPlan), whole answers, on the synthetic
snapshot and its text-to-image task (the tables of tests/test_ranking_api.py).

LLM rows for 6,000 output tokens per second at full utilization (throughput = power ÷ energy):

    row GPU   n  J/token  ITL  W     tokens/s  replicas  GPUs  W lower  W upper
    1   H100  1  0.5      10   400    800      8         8     3000     3200
    2   H100  1  0.2      20   600   3000      2         2     1200     1200
    3   B200  1  0.3       8   700   2333      3         3     1800     2100
    4   H100  2  1.0      30   1000  1000      6         12    6000     6000
    5   H100  2  0.8      35   1100  1375      5         10    4800     5500
    6   H100  2  0.9      36   1150  1278      5         10    5400     5750
    7   H100  2  1.4      25   900    643      10        20    8400     9000

Floats are compared at six decimals (`rounded`): the answers are products of decimal inputs.
"""

from __future__ import annotations

import json
import math
from pathlib import Path
from typing import Any

import pytest
from pytest import approx
from sqlalchemy.ext.asyncio import AsyncEngine

from analysis.fit import Logistic
from graph.settings import Settings
from tests import synthetic
from tests.conftest import Execute, app_client, ingest_dir, make_execute
from tests.test_ranking_api import NUMBER, execute, iid, lid, ranking_url

pytestmark = pytest.mark.anyio
__all__ = ["execute", "ranking_url"]  # fixtures, used by name


def rounded(value: Any) -> Any:
    if isinstance(value, float):
        return round(value, 6)
    if isinstance(value, dict):
        return {k: rounded(v) for k, v in value.items()}
    if isinstance(value, list):
        return [rounded(v) for v in value]
    return value


def bounds(lower: float, upper: float) -> dict[str, float]:
    return {"lower": lower, "upper": upper}


def estimated(lower: float, upper: float, estimate: float | None = None) -> dict[str, Any]:
    return {"lower": lower, "upper": upper, "estimate": estimate}


def no_estimate(batch_sizes: int) -> list[dict[str, str]]:
    """What a plan whose series has too few batch sizes for a fit says of its estimate."""
    plural = "" if batch_sizes == 1 else "s"
    reason = (
        f"the series has {batch_sizes} distinct batch size{plural}: a fitted curve needs at least 4"
    )
    return [{"field": f, "reason": reason} for f in ESTIMATES]


ESTIMATES = ("partialLoadBatchSize", "powerWatts.estimate", "energyPerDayKwh.estimate")


def of_estimates(plan: dict[str, Any]) -> dict[str, Any]:
    """The plan with only the null estimates in `unavailable` (the site's figures left out)."""
    return {**plan, "unavailable": [u for u in plan["unavailable"] if u["field"] in ESTIMATES]}


PLAN = """rank configuration { id } paretoOptimal latency outputsPerSecond requestsPerSecond
    outputsPerRequest throughputPerReplica replicas gpuCount partialLoadBatchSize
    powerWatts { lower upper estimate } energyPerDayKwh { lower upper estimate }
    energyPerRequestJoules carbonPerDayKg { lower upper }
    electricityCostPerDay { lower upper } gpuCostPerDay costPerDay
    savingsVsBaseline { energyPerDayKwh { lower upper } energySavedFraction { lower upper } gpus
      carbonPerDayKg { lower upper } costPerDay }
    unavailable { field reason }"""
ANSWER = f"""task {{ name }} objective demandUnit utilization pue
    latencyLimit {{ field max unit }} candidates totalCount
    excluded {{ limit configurations reason }} reason
    plans {{ {PLAN} }} baseline {{ {PLAN} }} assumptions method"""
ESTIMATE_METHOD = (
    "partialLoadBatchSize = b*, the maxNumSeqs at which the logistic fit of the series' "
    "outputThroughputTokensPerSec (fittedCurves) equals outputsPerSecond ÷ replicas: 2^(x0 + "
    "ln(s ÷ (1 − s)) ÷ k), s = (outputsPerSecond ÷ replicas − b0) ÷ amplitude; "
    "powerWatts.estimate = replicas × the series' fitted avgPowerWatts at b*; "
    "energyPerDayKwh.estimate = powerWatts.estimate × 24 h ÷ 1,000 × site.pue; null unless both "
    "fits are reliable, the throughput's rises, b* lies within the measured batch sizes and "
    "powerWatts.estimate between the bounds"
)
LLM_METHOD = [
    "outputsPerSecond = demand.requestsPerSecond × outputsPerRequest "
    "(demand.outputTokensPerRequest, else avgOutputLen), or demand.outputTokensPerSecond",
    "replicas = ceil(outputsPerSecond ÷ (utilization × outputThroughputTokensPerSec)), a "
    "quotient within a billionth of a whole number taken as that number",
    "gpuCount = replicas × numGpus",
    "powerWatts.upper = replicas × avgPowerWatts; powerWatts.lower = "
    "min(outputsPerSecond × energyPerTokenJoules, powerWatts.upper)",
    "energyPerDayKwh = powerWatts × 24 h ÷ 1,000 × site.pue, each bound",
    ESTIMATE_METHOD,
    "energyPerRequestJoules = energyPerTokenJoules × outputsPerRequest × site.pue",
    "carbonPerDayKg = energyPerDayKwh × site.carbonIntensityGramsPerKwh ÷ 1,000",
    "electricityCostPerDay = energyPerDayKwh × site.electricityPricePerKwh; gpuCostPerDay = "
    "gpuCount × 24 h × the GPU type's site.gpuHourPrices; costPerDay = gpuCostPerDay + "
    "electricityCostPerDay.upper",
    "rank: by the objective's upper bound, then its lower bound, then upstream order",
    "paretoOptimal: no other plan has gpuCount and energyPerDayKwh.upper both at most its own "
    "and one of them lower",
    "savingsVsBaseline = the baseline's plan's figure − this plan's",
]
NOT_MEASURED = (
    "The measurements cover the GPUs alone, at steady state: idle power, the split between "
    "prefill and decode, GPU frequency scaling and the rest of the server (CPUs, memory, "
    "network, cooling: the PUE alone stands for them) are not measured."
)
FULL_LOAD = (
    "Each replica serves at most 100 % of its measured throughput, all day; its latency and "
    "power are those measured at the measured load (a replica run below it is taken to be no "
    "slower, and to draw between the bounds)."
)
PRICED_SITE = """site: {pue: 1.5, carbonIntensityGramsPerKwh: 400, electricityPricePerKwh: 0.2,
    gpuHourPrices: [{gpu: "H100", price: 2}, {gpu: "B200", price: 5}]}"""


def llm_plan(rank: int, row: int, pareto: bool, **figures: Any) -> dict[str, Any]:
    return {
        "rank": rank,
        "configuration": {"id": lid(row)},
        "paretoOptimal": pareto,
        "outputsPerSecond": 6000.0,
        "requestsPerSecond": 60.0,
        "outputsPerRequest": 100.0,
        "savingsVsBaseline": None,
        "partialLoadBatchSize": None,
        **figures,
    }


async def test_plans_on_a_priced_site_with_a_latency_limit(execute: Execute) -> None:
    """Rows 1 and 3 are within 15 ms; PUE 1.5 makes a watt 0.036 kWh a day."""
    query = f"""{{ deploymentPlan(demand: {{outputTokensPerSecond: 6000}},
        latency: {{maxItlMs: 15}}, {PRICED_SITE}) {{ {ANSWER} }} }}"""
    assert rounded(await execute(query)) == {
        "deploymentPlan": {
            "task": {"name": "lm-arena-chat"},
            "objective": "ENERGY",
            "demandUnit": "output tokens per second",
            "utilization": 1.0,
            "pue": 1.5,
            "latencyLimit": {"field": "medianItlMs", "max": 15.0, "unit": "ms"},
            "candidates": 7,
            "totalCount": 2,
            "excluded": [
                {
                    "limit": "latency.maxItlMs",
                    "configurations": 5,
                    "reason": "medianItlMs above 15 ms",
                }
            ],
            "reason": None,
            "plans": [
                llm_plan(
                    1,
                    3,
                    True,
                    latency=8.0,
                    throughputPerReplica=2333.333333,
                    replicas=3,
                    gpuCount=3,
                    powerWatts=estimated(1800.0, 2100.0),
                    energyPerDayKwh=estimated(64.8, 75.6),
                    # 0.3 J x 100 tokens x 1.5.
                    energyPerRequestJoules=45.0,
                    carbonPerDayKg=bounds(25.92, 30.24),
                    electricityCostPerDay=bounds(12.96, 15.12),
                    # 3 B200 x 5 x 24 h, and the electricity's upper bound.
                    gpuCostPerDay=360.0,
                    costPerDay=375.12,
                    unavailable=no_estimate(1),
                ),
                llm_plan(
                    2,
                    1,
                    False,
                    latency=10.0,
                    throughputPerReplica=800.0,
                    replicas=8,
                    gpuCount=8,
                    powerWatts=estimated(3000.0, 3200.0),
                    energyPerDayKwh=estimated(108.0, 115.2),
                    energyPerRequestJoules=75.0,
                    carbonPerDayKg=bounds(43.2, 46.08),
                    electricityCostPerDay=bounds(21.6, 23.04),
                    gpuCostPerDay=384.0,
                    costPerDay=407.04,
                    unavailable=no_estimate(2),
                ),
            ],
            "baseline": None,
            "assumptions": [
                "Demand: 6000 output tokens per second, in requests of the configuration's "
                "measured average output length (avgOutputLen).",
                FULL_LOAD,
                "Latency: medianItlMs at most 15 ms (inclusive), as measured.",
                "PUE 1.5: every energy figure is the GPUs' measured energy × 1.5.",
                "Carbon at the caller's 400 gCO₂e per kWh.",
                "Cost counts GPU-hours (H100 2, B200 5 an hour) and electricity at 0.2 per kWh, "
                "in the caller's currency.",
                NOT_MEASURED,
            ],
            "method": LLM_METHOD,
        }
    }


def image_plan(rank: int, row: int, replicas: int, watts: tuple[float, float], **more: Any):
    lower, upper = watts
    return {
        "rank": rank,
        "configuration": {"id": iid(row)},
        "replicas": replicas,
        "gpuCount": replicas,
        "powerWatts": bounds(lower, upper),
        "energyPerDayKwh": bounds(lower * 0.024, upper * 0.024),
        **more,
    }


IMAGE_PLAN = """rank configuration { id } replicas gpuCount powerWatts { lower upper }
    energyPerDayKwh { lower upper }"""


async def test_diffusion_plans_against_a_baseline_outside_the_limit(execute: Execute) -> None:
    """Two images a second within 10 s a batch: image rows 1, 2, 3 and 5 (0.5, 0.67, 0.33 and
    0.5 images a second, 500 W each); the baseline, row 4 (40 s a batch, 2 GPUs, 0.025 images
    a second), needs 80 replicas."""
    query = f"""{{ deploymentPlan(task: "text-to-image", demand: {{imagesPerSecond: 2}},
        latency: {{maxBatchLatencySeconds: 10}}, baseline: "{iid(4)}") {{
          demandUnit latencyLimit {{ field max unit }} candidates totalCount
          excluded {{ limit configurations reason }}
          plans {{ {IMAGE_PLAN} paretoOptimal energyPerRequestJoules outputsPerRequest
            savingsVsBaseline {{ gpus energyPerDayKwh {{ lower upper }}
              energySavedFraction {{ lower upper }} carbonPerDayKg {{ lower }} costPerDay }} }}
          baseline {{ {IMAGE_PLAN} paretoOptimal }} assumptions method }} }}"""
    saved = {"carbonPerDayKg": None, "costPerDay": None}
    assert rounded(await execute(query)) == rounded(
        {
            "deploymentPlan": {
                "demandUnit": "images per second",
                "latencyLimit": {"field": "batchLatencyS", "max": 10.0, "unit": "s"},
                "candidates": 6,
                "totalCount": 4,
                "excluded": [
                    {
                        "limit": "latency.maxBatchLatencySeconds",
                        "configurations": 2,
                        "reason": "batchLatencyS above 10 s",
                    }
                ],
                "plans": [
                    # 2 ÷ (4 / 6) is 3.0000000000000004 in floating point: three replicas.
                    image_plan(
                        1,
                        2,
                        3,
                        (400.0, 1500.0),
                        paretoOptimal=True,
                        energyPerRequestJoules=200.0,
                        outputsPerRequest=1.0,
                        savingsVsBaseline={
                            "gpus": 160 - 3,
                            "energyPerDayKwh": bounds(4.8 - 9.6, 960.0 - 36.0),
                            "energySavedFraction": bounds(1 - 9.6 / 4.8, 1 - 36 / 960),
                            **saved,
                        },
                    ),
                    # Rows 1 and 5 tie on both bounds: upstream order.
                    *(
                        image_plan(
                            rank,
                            row,
                            4,
                            (600.0, 2000.0),
                            paretoOptimal=False,
                            energyPerRequestJoules=300.0,
                            outputsPerRequest=1.0,
                            savingsVsBaseline={
                                "gpus": 160 - 4,
                                "energyPerDayKwh": bounds(4.8 - 14.4, 960.0 - 48.0),
                                "energySavedFraction": bounds(1 - 14.4 / 4.8, 1 - 48 / 960),
                                **saved,
                            },
                        )
                        for rank, row in ((2, 1), (3, 5))
                    ),
                    image_plan(
                        4,
                        3,
                        6,
                        (600.0, 3000.0),
                        paretoOptimal=False,
                        energyPerRequestJoules=300.0,
                        outputsPerRequest=1.0,
                        savingsVsBaseline={
                            "gpus": 160 - 6,
                            "energyPerDayKwh": bounds(4.8 - 14.4, 960.0 - 72.0),
                            "energySavedFraction": bounds(1 - 14.4 / 4.8, 1 - 72 / 960),
                            **saved,
                        },
                    ),
                ],
                "baseline": {
                    **image_plan(0, 4, 80, (200.0, 40000.0), paretoOptimal=False),
                    "gpuCount": 160,
                },
                "assumptions": [
                    "Demand: 2 images per second.",
                    FULL_LOAD,
                    "Latency: batchLatencyS at most 10 s (inclusive), as measured.",
                    "PUE 1: every energy figure is the GPUs' measured energy × 1.",
                    "No carbon intensity given: carbonPerDayKg is null.",
                    "No prices given: costs are null.",
                    NOT_MEASURED,
                ],
                "method": [
                    "outputsPerSecond = demand.imagesPerSecond",
                    "replicas = ceil(outputsPerSecond ÷ (utilization × throughputImagesPerSec)), a "
                    "quotient within a billionth of a whole number taken as that number",
                    # The task's own fields; no estimate (no fitted curves).
                    *(
                        m.replace("energyPerTokenJoules", "energyPerImageJoules")
                        for m in LLM_METHOD[2:]
                        if m is not ESTIMATE_METHOD
                    ),
                ],
            }
        }
    )


ORDER = "plans { configuration { id } replicas gpuCount paretoOptimal }"
# (row, replicas, GPUs, Pareto-optimal), by the energy's upper bound: row 2 needs the fewest
# GPUs and the least energy; by GPUs the order is the same (rows 5 and 6 tie on 10: upstream
# order).
BY_ENERGY = [
    (2, 2, 2, True),
    (3, 3, 3, False),
    (1, 8, 8, False),
    (5, 5, 10, False),
    (6, 5, 10, False),
    (4, 6, 12, False),
    (7, 10, 20, False),
]


@pytest.mark.parametrize(
    ("arguments", "expected"),
    [
        (
            "",
            BY_ENERGY,
        ),
        (
            "site: {carbonIntensityGramsPerKwh: 300}, objective: CARBON",
            BY_ENERGY,
        ),
        (
            "objective: GPUS",
            BY_ENERGY,
        ),
        # GPU-hours of H100 only: the B200 plan has no cost and comes last.
        (
            'objective: COST, site: {gpuHourPrices: [{gpu: "H100", price: 2}]}',
            [*BY_ENERGY[:1], *BY_ENERGY[2:], BY_ENERGY[1]],
        ),
        # The 99th-percentile ITL is 3x the median: rows 1 (30 ms) and 3 (24 ms).
        ("latency: {percentile: P99, maxItlMs: 30}", [(3, 3, 3, True), (1, 8, 8, False)]),
        ('gpus: ["H100"], models: ["tiny-1b"]', [(2, 2, 2, True), (1, 8, 8, False)]),
        # Half of each replica: 6,000 ÷ 400, ÷ 1,500, ÷ 1,166.7.
        (
            'models: ["tiny-1b"], utilization: 0.5',
            [(2, 4, 4, True), (3, 6, 6, False), (1, 15, 15, False)],
        ),
        # 30 requests of the measured 100 tokens: 3,000 tokens a second.
        (
            'models: ["mixture-8x2b"], demand: {requestsPerSecond: 30}',
            [(4, 3, 6, True), (5, 3, 6, False), (6, 3, 6, False), (7, 5, 10, False)],
        ),
        # Of 50 tokens each: 1,500 a second.
        (
            'models: ["tiny-1b"], demand: {requestsPerSecond: 30, outputTokensPerRequest: 50}',
            [(2, 1, 1, True), (3, 1, 1, False), (1, 2, 2, False)],
        ),
    ],
)
async def test_plans_ranked(execute: Execute, arguments: str, expected) -> None:
    demand = "" if "demand:" in arguments else "demand: {outputTokensPerSecond: 6000}"
    data = await execute(
        f"{{ deploymentPlan({', '.join(filter(None, [demand, arguments]))}) {{ {ORDER} }} }}"
    )
    plans = data["deploymentPlan"]["plans"]
    assert [
        (NUMBER[p["configuration"]["id"]], p["replicas"], p["gpuCount"], p["paretoOptimal"])
        for p in plans
    ] == expected


SUMMARY = "candidates totalCount excluded { limit configurations reason } reason plans { rank }"


@pytest.mark.parametrize(
    ("arguments", "expected"),
    [
        (
            "latency: {maxItlMs: 5}",
            {
                "candidates": 7,
                "totalCount": 0,
                "excluded": [
                    {
                        "limit": "latency.maxItlMs",
                        "configurations": 7,
                        "reason": "medianItlMs above 5 ms",
                    }
                ],
                "reason": "no configuration meets the limits: latency.maxItlMs (medianItlMs "
                "above 5 ms) excludes 7, of 7 configurations",
                "plans": [],
            },
        ),
        (
            'models: ["mixture-8x2b"], gpus: ["B200"]',
            {
                "candidates": 0,
                "totalCount": 0,
                "excluded": [],
                "reason": "no configuration of lm-arena-chat is on the models and GPU types "
                "asked for",
                "plans": [],
            },
        ),
        (
            "first: 2",
            {
                "candidates": 7,
                "totalCount": 7,
                "excluded": [],
                "reason": None,
                "plans": [{"rank": 1}, {"rank": 2}],
            },
        ),
        (
            "first: 0",
            {"candidates": 7, "totalCount": 7, "excluded": [], "reason": None, "plans": []},
        ),
    ],
)
async def test_what_no_plan_or_few_say(execute: Execute, arguments: str, expected) -> None:
    data = await execute(
        f"{{ deploymentPlan(demand: {{outputTokensPerSecond: 6000}}, {arguments}) "
        f"{{ {SUMMARY} }} }}"
    )
    assert data == {"deploymentPlan": expected}


async def test_a_baseline_among_the_plans_is_its_ranked_plan(execute: Execute) -> None:
    """Row 1 ranks third; against itself it saves nothing."""
    data = await execute(
        f"""{{ deploymentPlan(demand: {{outputTokensPerSecond: 6000}}, baseline: "{lid(1)}",
            first: 1) {{
          plans {{ rank configuration {{ id }} savingsVsBaseline {{ gpus }} }}
          baseline {{ rank configuration {{ id }} savingsVsBaseline {{ gpus
            energyPerDayKwh {{ lower upper }} energySavedFraction {{ lower upper }} }} }} }} }}"""
    )
    assert data == {
        "deploymentPlan": {
            "plans": [
                {"rank": 1, "configuration": {"id": lid(2)}, "savingsVsBaseline": {"gpus": 6}}
            ],
            "baseline": {
                "rank": 3,
                "configuration": {"id": lid(1)},
                "savingsVsBaseline": {
                    "gpus": 0,
                    "energyPerDayKwh": bounds(0.0, 0.0),
                    "energySavedFraction": bounds(0.0, 0.0),
                },
            },
        }
    }


LLM_RATES = "give demand.requestsPerSecond or demand.outputTokensPerSecond"
EXACTLY_ONE = (
    "demand takes exactly one of requestsPerSecond or outputTokensPerSecond (LLM and MLLM "
    "tasks), imagesPerSecond (text-to-image) or videosPerSecond (text-to-video); got "
)


@pytest.mark.parametrize(
    ("arguments", "message"),
    [
        ("demand: {}", EXACTLY_ONE + "none"),
        (
            "demand: {requestsPerSecond: 1, outputTokensPerSecond: 2}",
            EXACTLY_ONE + "requestsPerSecond and outputTokensPerSecond",
        ),
        (
            "demand: {requestsPerSecond: 0}",
            "demand.requestsPerSecond must be a number > 0, got 0.0",
        ),
        (
            "demand: {outputTokensPerSecond: -5}",
            "demand.outputTokensPerSecond must be a number > 0, got -5.0",
        ),
        (
            "demand: {requestsPerSecond: 1, outputTokensPerRequest: 0}",
            "demand.outputTokensPerRequest must be a number > 0, got 0.0",
        ),
        (
            "demand: {imagesPerSecond: 1}",
            "demand.imagesPerSecond does not apply to lm-arena-chat, whose configurations "
            f"generate output tokens: {LLM_RATES}",
        ),
        (
            'task: "text-to-image", demand: {videosPerSecond: 1}',
            "demand.videosPerSecond does not apply to text-to-image, whose configurations "
            "generate images: give demand.imagesPerSecond",
        ),
        (
            'task: "text-to-image", demand: {imagesPerSecond: 1, outputTokensPerRequest: 9}',
            "demand.outputTokensPerRequest does not apply to text-to-image, a diffusion task",
        ),
        ("utilization: 0", "utilization must be in (0, 1], got 0.0"),
        ("utilization: 1.01", "utilization must be in (0, 1], got 1.01"),
        ("latency: {maxItlMs: -1}", "latency.maxItlMs must be a number >= 0, got -1.0"),
        (
            "latency: {maxBatchLatencySeconds: 30}",
            "latency.maxBatchLatencySeconds does not apply to lm-arena-chat, an LLM or MLLM "
            "task: give latency.maxItlMs",
        ),
        (
            'task: "text-to-image", demand: {imagesPerSecond: 1}, latency: {maxItlMs: 5}',
            "latency.maxItlMs does not apply to text-to-image, a diffusion task: give "
            "latency.maxBatchLatencySeconds",
        ),
        ("site: {pue: 0.9}", "site.pue must be a number >= 1, got 0.9"),
        (
            "site: {carbonIntensityGramsPerKwh: -1}",
            "site.carbonIntensityGramsPerKwh must be a number >= 0, got -1.0",
        ),
        (
            "site: {electricityPricePerKwh: -0.1}",
            "site.electricityPricePerKwh must be a number >= 0, got -0.1",
        ),
        (
            "site: {gpuHourPrices: []}",
            "site.gpuHourPrices is empty: price at least one GPU type, or leave it out",
        ),
        (
            'site: {gpuHourPrices: [{gpu: "A100", price: 1}]}',
            "unknown GPU 'A100' in `site.gpuHourPrices.gpu`; `gpus` lists them",
        ),
        (
            'site: {gpuHourPrices: [{gpu: "H100", price: 1}, {gpu: "H100", price: 2}]}',
            "site.gpuHourPrices prices 'H100' more than once",
        ),
        (
            'site: {gpuHourPrices: [{gpu: "H100", price: -1}]}',
            "site.gpuHourPrices.price must be a number >= 0, got -1.0",
        ),
        (
            "objective: CARBON",
            "objective CARBON needs site.carbonIntensityGramsPerKwh or site.zone",
        ),
        (
            'site: {zone: "FRA", carbonIntensityGramsPerKwh: 50}',
            "site takes site.zone or site.carbonIntensityGramsPerKwh, not both: got zone 'FRA' "
            "and 50 gCO₂e per kWh",
        ),
        ('site: {zone: "fra"}', "unknown grid zone 'fra' in `site.zone`; `gridZones` lists them"),
        (
            'site: {zone: "CAF"}',
            "grid zone 'CAF' in `site.zone` has no carbon intensity: EcoLogits 0.11.3 gives 0 "
            "kgCO₂eq per kWh for CAF, which stands for no figure (no grid emits nothing over "
            "its life cycle); give carbonIntensityGramsPerKwh instead",
        ),
        (
            "objective: COST, site: {pue: 1.2}",
            "objective COST needs site.electricityPricePerKwh or site.gpuHourPrices",
        ),
        (
            'baseline: "Configuration:nope"',
            "unknown configuration id 'Configuration:nope' in `baseline`; `configurations` "
            "lists them",
        ),
        (
            f'baseline: "{iid(1)}"',
            f"baseline '{iid(1)}' is a configuration of text-to-image, not of lm-arena-chat: "
            "give one of the task's configurations",
        ),
        ('gpus: ["A100"]', "unknown GPU 'A100' in `gpus`; `gpus` lists them"),
        ('models: ["gpt-9"]', "unknown model slug 'gpt-9' in `models`; `models` lists them"),
        ('task: "chat"', "unknown task 'chat' in `task`; `tasks` lists them"),
        ("first: 1001", "`first` must be between 0 and 1000, got 1001"),
        ("first: -1", "`first` must be between 0 and 1000, got -1"),
    ],
)
async def test_bad_input_names_the_argument_and_the_value(
    execute: Execute, arguments: str, message: str
) -> None:
    demand = "" if "demand:" in arguments else "demand: {outputTokensPerSecond: 6000}, "
    data = await execute(f"{{ deploymentPlan({demand}{arguments}) {{ totalCount }} }}")
    assert data == {"errors": [{"message": message, "code": "BAD_USER_INPUT"}]}


async def test_the_same_answer_over_http(execute: Execute, ranking_url: str) -> None:
    """Through the app (its execution path) as through the schema."""
    query = f"""query Plan {{ deploymentPlan(demand: {{requestsPerSecond: 25}},
        {PRICED_SITE}, baseline: "{lid(5)}", first: 3) {{ {ANSWER} }} }}"""
    async with app_client(Settings(database_url=ranking_url, manifest=None)) as (_, client):
        response = await client.post("/graphql", json={"query": query})
    # The estimate: 257 = 1 (the field) + 22 (the answer's other fields) + 2 (`plans` and
    # `baseline`) + 4 x 58 (the 3 plans asked for and the baseline, each's `unavailable` at its
    # bound of 8); the answer's lists are shorter (each plan's `unavailable` holds 3, its null
    # estimates).
    cost = {"requestedQueryCost": 257, "actualQueryCost": 208}
    assert (response.status_code, response.json()) == (
        200,
        {"data": await execute(query), "extensions": {"cost": cost}},
    )


# A series the fits follow exactly: Tiny 1B on 4 x H100 (tensor-parallel 4) at six batch sizes,
# its throughput and power known logistics (energy per token = power / throughput).
THROUGHPUT = Logistic(b0=500.0, amplitude=4500.0, k=1.0, x0=6.0)
POWER = Logistic(b0=400.0, amplitude=1600.0, k=1.5, x0=5.5)
FIT_BATCHES = (8, 16, 32, 64, 128, 256)
FIT_ROWS = [
    *synthetic.ROWS,
    *(
        synthetic.row(
            "acme/Tiny-1B",
            "H100",
            4,
            b,
            POWER.at(b) / THROUGHPUT.at(b),
            10.0,
            tp=4,
            power=POWER.at(b),
        )
        for b in FIT_BATCHES
    ),
]
FIT_IDS = synthetic.configuration_ids(synthetic.TASK, FIT_ROWS, ("max_num_seqs",))


@pytest.fixture
async def execute_fittable(engine: AsyncEngine, tmp_path: Path, settings: Settings) -> Execute:
    root = synthetic.write(tmp_path / "fittable", synthetic.documents(FIT_ROWS))
    (tmp_path / "manifest.json").write_text(json.dumps(synthetic.manifest()))
    await ingest_dir(engine, root, tmp_path / "manifest.json")
    return make_execute(engine, settings)


def fitted_plan(batch: int, replicas: int, share_batch: float | None, reason: str | None):
    """A plan for 5,000 tokens a second on the series' configuration at `batch`, at PUE 1.5."""
    upper = replicas * POWER.at(batch)
    lower = 5000.0 * POWER.at(batch) / THROUGHPUT.at(batch)
    estimate = None if share_batch is None else replicas * POWER.at(share_batch)
    day = 24 / 1000 * 1.5
    return {
        "replicas": replicas,
        "partialLoadBatchSize": None if share_batch is None else approx(share_batch, rel=1e-4),
        "powerWatts": {
            "lower": approx(lower),
            "upper": approx(upper),
            "estimate": None if estimate is None else approx(estimate, rel=1e-4),
        },
        "energyPerDayKwh": {
            "lower": approx(lower * day),
            "upper": approx(upper * day),
            "estimate": None if estimate is None else approx(estimate * day, rel=1e-4),
        },
        "unavailable": []
        if reason is None
        else [{"field": f, "reason": reason} for f in ESTIMATES],
    }


async def test_the_partial_load_estimate_on_a_fitted_series(execute_fittable: Execute) -> None:
    """5,000 tokens a second on H100s: each replica's share is where the fitted throughput is,
    2^(6 + ln(s / (1 - s))) with s = (share - 500) / 4,500. At batch sizes 64 to 256, two
    replicas of 2,500 (s = 4/9); at 16, five of 1,000 (s = 1/9), drawing replicas x P there,
    between the bounds. At 32, three of 1,666.7: the power there (2,663 W) is below the lower
    bound (every token at the energy per token measured at 32). At 8, eight of 625: below the
    throughput fitted at 8. Rows 1 and 2 (one H100) have two batch sizes: no fit."""
    query = """{ deploymentPlan(models: ["tiny-1b"], gpus: ["H100"], site: {pue: 1.5},
        demand: {outputTokensPerSecond: 5000}) { plans { configuration { id } replicas
          partialLoadBatchSize powerWatts { lower upper estimate }
          energyPerDayKwh { lower upper estimate } unavailable { field reason } } } }"""
    data = await execute_fittable(query)
    plans = {p.pop("configuration")["id"]: of_estimates(p) for p in data["deploymentPlan"]["plans"]}
    at = {s: 2 ** (6 + math.log(s / (1 - s))) for s in (4 / 9, 1 / 9)}
    outside = (
        "the fitted power at the partial-load point (batch size 30.91), 2663 W, lies outside "
        "the bounds (2670 to 2740 W)"
    )
    below = (
        "each replica's 625 outputs per second lie below the fitted throughput at the smallest "
        "measured batch size (measured from 8 to 256): no extrapolation"
    )
    one_h100 = no_estimate(2)
    assert set(plans) == {*FIT_IDS[:2], *FIT_IDS[7:]}
    assert {i: p["unavailable"] for i, p in plans.items() if i in FIT_IDS[:2]} == {
        i: one_h100 for i in FIT_IDS[:2]
    }
    assert {i: p for i, p in plans.items() if i in FIT_IDS[7:]} == {
        FIT_IDS[7]: fitted_plan(8, 8, None, below),
        FIT_IDS[8]: fitted_plan(16, 5, at[1 / 9], None),
        FIT_IDS[9]: fitted_plan(32, 3, None, outside),
        **{
            FIT_IDS[n]: fitted_plan(b, 2, at[4 / 9], None)
            for n, b in ((10, 64), (11, 128), (12, 256))
        },
    }


async def test_diffusion_plans_say_why_they_have_no_estimate(execute: Execute) -> None:
    query = """{ deploymentPlan(task: "text-to-image", demand: {imagesPerSecond: 2}, first: 1) {
        plans { partialLoadBatchSize powerWatts { estimate } energyPerDayKwh { estimate }
          unavailable { field reason } } } }"""
    reason = "LeadGreen fits no concurrency curves for diffusion tasks"
    data = await execute(query)
    assert [of_estimates(p) for p in data["deploymentPlan"]["plans"]] == [
        {
            "partialLoadBatchSize": None,
            "powerWatts": {"estimate": None},
            "energyPerDayKwh": {"estimate": None},
            "unavailable": [{"field": f, "reason": reason} for f in ESTIMATES],
        }
    ]
