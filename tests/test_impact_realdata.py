"""Real data: every request impact recomputed from the task files, for generated models,
output tokens, latency limits and sites (Hypothesis), on every task of both kinds and on both
databases; and the grid zones' carbon intensities from the ecologits package's data file.

The expected figures are computed here from the JSON rows with plain Python, apart from the
project's code: a row of the model within the limit (inclusive) takes output tokens (else its
avg_output_len; one image or video) x its energy per output x PUE joules a request; the
least, the median (of an even count the middle two's mean) and the most of them; carbon is
joules / 3.6e6 x the intensity (a zone's: ecologits' gwp in kg x 1,000).
"""

from __future__ import annotations

import json
import math
import re
import statistics
from importlib import resources
from pathlib import Path
from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from tests.test_plan_realdata import DIFFUSION, ITL, ROWS, figures, planner

pytestmark = pytest.mark.realdata
__all__ = ["planner"]  # a fixture, used by name

MIXES = {
    m["name"]: m["gwp"]
    for m in json.loads(
        resources.files("ecologits").joinpath("data/electricity_mixes.json").read_text()
    )["electricity_mixes"]
}
QUERY = """query Impact($task: String!, $model: String!, $tokens: Int, $latency: LatencyInput,
    $site: SiteInput) {
  requestImpact(task: $task, model: $model, outputTokens: $tokens, latency: $latency,
      site: $site) {
    candidates configurations energyPerRequestJoules { min median max }
    energyPerRequestWh { min median max } carbonPerRequestGrams { min median max }
    lowest { upstream { taskRow } } highest { upstream { taskRow } } } }"""
SLUGS = "{ models { slug modelId } }"


@st.composite
def cases(draw: st.DrawFn) -> tuple[str, str, dict[str, Any]]:
    task = draw(st.sampled_from(sorted(ROWS)))
    model = draw(st.sampled_from(sorted({r["model_id"] for r in ROWS[task]})))
    if task in DIFFUSION:
        tokens = None
        most = draw(st.sampled_from([None, 5.0, 30.0, 120.0, 300.0]))
        latency = None if most is None else {"maxBatchLatencySeconds": most}
    else:
        tokens = draw(st.one_of(st.none(), st.integers(1, 20_000)))
        most = draw(st.sampled_from([None, 10.0, 25.0, 50.0, 100.0]))
        latency = (
            None
            if most is None
            else {"maxItlMs": most, "percentile": draw(st.sampled_from(sorted(ITL)))}
        )
    site: dict[str, Any] = {"pue": draw(st.sampled_from([1.0, 1.2, 1.58]))}
    carbon = draw(st.sampled_from(["none", "intensity", "zone"]))
    if carbon == "intensity":
        site["carbonIntensityGramsPerKwh"] = draw(st.floats(0.0, 1000.0))
    elif carbon == "zone":
        site["zone"] = draw(st.sampled_from(["FRA", "USA", "DEU", "WOR", "IND", "SWE"]))
    return task, model, {"tokens": tokens, "latency": latency, "site": site}


def expected(task: str, model: str, asked: dict[str, Any]) -> dict[str, Any]:
    latency, site, tokens = asked["latency"], asked["site"], asked["tokens"]
    rows = [(i, r) for i, r in enumerate(ROWS[task]) if r["model_id"] == model]
    within = []
    for i, row in rows:
        if latency is not None:
            column, most = (
                ("batch_latency_s", latency["maxBatchLatencySeconds"])
                if task in DIFFUSION
                else (ITL[latency["percentile"]], latency["maxItlMs"])
            )
            if row[column] > most:
                continue
        _, energy, per_request = figures(row)
        within.append((energy * (per_request if tokens is None else tokens) * site["pue"], i))
    if "zone" in site:
        intensity = MIXES[site["zone"]] * 1000
    else:
        intensity = site.get("carbonIntensityGramsPerKwh")
    joules = sorted(j for j, _ in within)
    spread = None if not joules else [joules[0], statistics.median(joules), joules[-1]]
    return {
        "candidates": len(rows),
        "configurations": len(within),
        "joules": spread,
        "wh": None if spread is None else [j / 3600 for j in spread],
        "grams": None
        if spread is None or intensity is None
        else [j / 3.6e6 * intensity for j in spread],
        "lowest": min(within, key=lambda w: (w[0], w[1]))[1] if within else None,
        "highest": min(within, key=lambda w: (-w[0], w[1]))[1] if within else None,
    }


def served(answer: dict[str, Any]) -> dict[str, Any]:
    def listed(r: dict[str, float] | None) -> list[float] | None:
        return None if r is None else [r["min"], r["median"], r["max"]]

    def row(c: dict[str, Any] | None) -> int | None:
        return None if c is None else c["upstream"]["taskRow"]

    return {
        "candidates": answer["candidates"],
        "configurations": answer["configurations"],
        "joules": listed(answer["energyPerRequestJoules"]),
        "wh": listed(answer["energyPerRequestWh"]),
        "grams": listed(answer["carbonPerRequestGrams"]),
        "lowest": row(answer["lowest"]),
        "highest": row(answer["highest"]),
    }


@settings(max_examples=40, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(case=cases())
def test_every_impact_agrees_with_the_task_files(planner, case) -> None:
    runner, execute = planner
    task, model, asked = case
    slugs = {m["modelId"]: m["slug"] for m in runner.run(execute(SLUGS))["models"]}
    data = runner.run(
        execute(
            QUERY,
            task=task,
            model=slugs[model],
            tokens=asked["tokens"],
            latency=asked["latency"],
            site=asked["site"],
        )
    )
    assert "errors" not in data, data
    got, want = served(data["requestImpact"]), expected(task, model, asked)
    assert {k: got[k] for k in ("candidates", "configurations", "lowest", "highest")} == {
        k: want[k] for k in ("candidates", "configurations", "lowest", "highest")
    }
    for figure in ("joules", "wh", "grams"):
        assert got[figure] == (None if want[figure] is None else pytest.approx(want[figure]))


# The docs' table (docs/queries/plan.md, "Against EcoLogits' estimate"): its models by name.
DOCS = Path(__file__).resolve().parents[1] / "docs" / "queries" / "plan.md"
COMPARED = {
    "Llama 3.1 8B Instruct": "meta-llama/Llama-3.1-8B-Instruct",
    "Qwen 3 30B A3B Instruct": "Qwen/Qwen3-30B-A3B-Instruct-2507",
    "Llama 3.1 70B Instruct": "meta-llama/Llama-3.1-70B-Instruct",
    "Qwen 3 235B A22B Instruct": "Qwen/Qwen3-235B-A22B-Instruct-2507",
}
TABLE_ROW = re.compile(
    r"^\| (?P<name>[^(|]+) \((?P<total>[\d.]+) / (?P<active>[\d.]+)\) \| (?P<n>\d+) \| "
    r"(?P<measured>[\d. ·]+) \| (?P<eco>[\d. ·]+) \|$",
    re.M,
)


def _ecologits_wh(active: float, total: float, tokens: int) -> tuple[float, float]:
    """EcoLogits' estimate of a request, in Wh at PUE 1: its GPUs' part and its whole server
    (the package's public functions, the world's mix: the energy does not depend on it)."""
    from ecologits.electricity_mix_repository import electricity_mixes
    from ecologits.impacts import compute_llm_impacts
    from ecologits.impacts.llm import compute_llm_impacts_dag

    world = electricity_mixes.find_electricity_mix("WOR")
    assert world is not None
    mix = {
        "if_electricity_mix_adpe": world.adpe,
        "if_electricity_mix_pe": world.pe,
        "if_electricity_mix_gwp": world.gwp,
        "if_electricity_mix_wue": world.wue,
        "datacenter_pue": 1.0,
        "datacenter_wue": 0.0,
    }
    params = {
        "model_active_parameter_count": active,
        "model_total_parameter_count": total,
        "output_token_count": tokens,
    }
    whole = compute_llm_impacts(**params, **mix).energy.value
    dag = compute_llm_impacts_dag(**params, request_latency=math.inf, **mix)
    return dag["gpu_required_count"] * dag["gpu_energy"] * 1000, whole * 1000


def test_the_docs_comparison_with_ecologits() -> None:
    """500 output tokens on lm-arena-chat at PUE 1: each model's measured Wh (min, median,
    max over its configurations, from the task file) and EcoLogits' estimate, as the docs
    round them."""
    rows = {m.group("name"): m for m in TABLE_ROW.finditer(DOCS.read_text())}
    assert sorted(rows) == sorted(COMPARED)
    for name, model in COMPARED.items():
        mine = [r for r in ROWS["lm-arena-chat"] if r["model_id"] == model]
        wh = sorted(r["energy_per_token_joules"] * 500 / 3600 for r in mine)
        total, active = mine[0]["total_params_billions"], mine[0]["activated_params_billions"]
        row = rows[name]
        assert (float(row["total"]), float(row["active"]), int(row["n"])) == (
            total,
            active,
            len(mine),
        )
        measured = [wh[0], statistics.median(wh), wh[-1]]
        assert row["measured"] == " · ".join(f"{w:.4f}" for w in measured), name
        assert row["eco"] == " · ".join(f"{w:.4f}" for w in _ecologits_wh(active, total, 500))
