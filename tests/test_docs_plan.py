"""The worked example of docs/queries/plan.md: its answer, as shown (numbers rounded to four
significant digits), is the API's on the real data (SQLite and PostgreSQL), and is what a
computation of this test's own makes from the task file; each line of its by-hand table adds up
and gives the value the same computation gives.

The computation is written here from the task-file rows with plain Python, apart from the
project's code: a row of the model within the latency limit (inclusive) serves D = requests
per second * its avg_output_len output tokens a second with ceil(D / (u * throughput))
replicas; its power lies between D * energy per token and replicas * avg power; energy a day is
that * 24 / 1000 * PUE; the plans are ranked by energy a day (upper, then lower, then row).
"""

from __future__ import annotations

import ast
import json
import math
import operator
import re
from typing import Any

import pytest

from tests.conftest import ROOT, SNAPSHOT
from tests.test_docs import EXAMPLES, Example

pytestmark = pytest.mark.realdata

PAGE = ROOT / "docs" / "queries" / "plan.md"
EXAMPLE: Example = next(e for e in EXAMPLES if e.name == "PlanWorkedExample")
TEXT = PAGE.read_text(encoding="utf-8")
SECTION = TEXT[TEXT.index("## A worked example") : TEXT.index("\n## ", TEXT.index("## A worked"))]
# The section's JSON blocks: the variables, then the answer.
VARIABLES, ANSWER = (
    json.loads(b) for b in re.findall(r"^```json\n(.*?)^```", SECTION, re.S | re.M)
)
# The by-hand table: | `figure` | formula | with the numbers | value |
TABLE = re.findall(r"^\| `([\w.]+)` \| [^|]+ \| ([^|]+) \| ([^|]+) \|$", SECTION, re.M)
ROWS: list[dict[str, Any]] = json.loads(
    (SNAPSHOT / "tasks" / f"{VARIABLES['task']}.json").read_text()
)["configurations"]


def rounded(value: Any) -> Any:
    """Every float to four significant digits, as the page shows them."""
    if isinstance(value, dict):
        return {k: rounded(v) for k, v in value.items()}
    if isinstance(value, list):
        return [rounded(v) for v in value]
    if isinstance(value, float):
        return float(f"{value:.4g}")
    return value


def own_plans() -> list[dict[str, Any]]:
    """The plans of the example's model, ranked, with every figure the page shows."""
    site, prices = (
        VARIABLES["site"],
        {p["gpu"]: p["price"] for p in VARIABLES["site"]["gpuHourPrices"]},
    )
    rate, u, most = (
        VARIABLES["demand"]["requestsPerSecond"],
        VARIABLES["utilization"],
        VARIABLES["latency"]["maxItlMs"],
    )
    model = ANSWER["data"]["deploymentPlan"]["plans"][0]["configuration"]["modelId"]
    plans = []
    for i, row in enumerate(ROWS):
        if row["model_id"] != model or row["median_itl_ms"] > most:
            continue
        d = rate * row["avg_output_len"]
        replicas = math.ceil(d / (u * row["output_throughput_tokens_per_sec"]))
        upper = replicas * row["avg_power_watts"]
        power = [min(d * row["energy_per_token_joules"], upper), upper]
        kwh = [w * 24 / 1000 * site["pue"] for w in power]
        gpus = replicas * row["num_gpus"]
        gpu_cost = gpus * 24 * prices[row["gpu_model"]]
        plans.append(
            {
                "rank": 0,
                "paretoOptimal": False,
                "configuration": {
                    "modelId": row["model_id"],
                    "gpuModel": row["gpu_model"],
                    "numGpus": row["num_gpus"],
                    "upstream": {"taskRow": i},
                    "maxNumSeqs": row["max_num_seqs"],
                    "medianItlMs": row["median_itl_ms"],
                    "avgOutputLen": row["avg_output_len"],
                    "outputThroughputTokensPerSec": row["output_throughput_tokens_per_sec"],
                    "energyPerTokenJoules": row["energy_per_token_joules"],
                    "avgPowerWatts": row["avg_power_watts"],
                },
                "outputsPerSecond": d,
                "replicas": replicas,
                "gpuCount": gpus,
                "powerWatts": {"lower": power[0], "upper": power[1]},
                "energyPerDayKwh": {"lower": kwh[0], "upper": kwh[1]},
                "energyPerRequestJoules": row["energy_per_token_joules"]
                * row["avg_output_len"]
                * site["pue"],
                "carbonPerDayKg": {
                    k: v * site["carbonIntensityGramsPerKwh"] / 1000
                    for k, v in zip(("lower", "upper"), kwh, strict=True)
                },
                "gpuCostPerDay": gpu_cost,
                "costPerDay": gpu_cost + kwh[1] * site["electricityPricePerKwh"],
                "key": (kwh[1], kwh[0], i),
            }
        )
    plans.sort(key=lambda p: p.pop("key"))
    for rank, p in enumerate(plans, start=1):
        mine = (p["gpuCount"], p["energyPerDayKwh"]["upper"])
        others = [(o["gpuCount"], o["energyPerDayKwh"]["upper"]) for o in plans]
        beaten = any(o[0] <= mine[0] and o[1] <= mine[1] and o != mine for o in others)
        p.update(rank=rank, paretoOptimal=not beaten)
    return plans


@pytest.mark.anyio
async def test_the_answer_shown_is_the_apis(execute_real) -> None:
    data = await execute_real(EXAMPLE.text, **VARIABLES)
    assert EXAMPLE.variables == VARIABLES
    assert rounded(data) == ANSWER["data"]


def test_the_answer_shown_is_computed_from_the_task_file() -> None:
    plans = own_plans()
    shown = ANSWER["data"]["deploymentPlan"]
    first = int(re.search(r"\bfirst: (\d+)", EXAMPLE.text)[1])  # type: ignore[index]
    assert shown["totalCount"] == len(plans)
    model = [r for r in ROWS if r["model_id"] == plans[0]["configuration"]["modelId"]]
    assert (shown["candidates"], shown["excluded"]) == (
        len(model),
        [{"limit": "latency.maxItlMs", "configurations": len(model) - len(plans)}],
    )
    assert shown["plans"] == rounded(plans[:first])


OPERATORS = {ast.Add: operator.add, ast.Mult: operator.mul, ast.Div: operator.truediv}


def evaluate(expression: str) -> float:
    """The table's arithmetic: numbers, sums, products, quotients, parentheses, ceil(...)."""

    def value(node: ast.AST) -> float:
        if isinstance(node, ast.Constant) and isinstance(node.value, int | float):
            return node.value
        if isinstance(node, ast.BinOp) and type(node.op) in OPERATORS:
            return OPERATORS[type(node.op)](value(node.left), value(node.right))
        if isinstance(node, ast.Call) and getattr(node.func, "id", None) == "ceil":
            return math.ceil(value(node.args[0]))
        raise ValueError(f"not arithmetic: {ast.dump(node)}")

    text = expression.replace("×", "*").replace("÷", "/")
    return value(ast.parse(text.strip(), mode="eval").body)


def test_the_table_adds_up_to_the_first_plan() -> None:
    """Each line's arithmetic gives its value (to the 0.1 % the rounded inputs allow), and the
    value is the first plan's figure of the own computation, to four significant digits."""
    plan = own_plans()[0]
    assert [figure for figure, _, _ in TABLE] == [
        "outputsPerSecond",
        "replicas",
        "gpuCount",
        "powerWatts.lower",
        "powerWatts.upper",
        "energyPerDayKwh.lower",
        "energyPerDayKwh.upper",
        "energyPerRequestJoules",
        "carbonPerDayKg.upper",
        "gpuCostPerDay",
        "costPerDay",
    ]
    for figure, arithmetic, shown in TABLE:
        own: Any = plan
        for part in figure.split("."):
            own = own[part]
        assert (figure, float(shown)) == (figure, rounded(float(own)))
        assert evaluate(arithmetic) == pytest.approx(float(shown), rel=1e-3), figure
