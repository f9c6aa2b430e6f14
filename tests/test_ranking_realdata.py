"""Real data: leaderboards, Pareto frontiers and GPU comparisons against the upstream files.

Every expected value is computed here from the JSON files with plain Python, written
differently from the project's `analysis` code (never importing it): a model's best row is the
first row holding the minimum energy among its admitted rows, and a configuration is on a
frontier when no row of its group has both strictly lower latency and strictly lower energy,
checked pair by pair.
"""

from __future__ import annotations

import json
from typing import Any

import pytest
from sqlalchemy import event

from tests.conftest import SEED, SNAPSHOT, make_execute

pytestmark = [pytest.mark.anyio, pytest.mark.realdata]

INDEX: dict[str, Any] = json.loads((SNAPSHOT / "index.json").read_text())
SEED_DOC: dict[str, Any] = json.loads(SEED.read_text())
ARCHITECTURE = {task: arch for arch, tasks in INDEX["architectures"].items() for task in tasks}
LLM_TASKS = sorted(t for t in INDEX["tasks"] if ARCHITECTURE[t] != "diffusion")
DIFFUSION_TASKS = sorted(t for t in INDEX["tasks"] if ARCHITECTURE[t] == "diffusion")
ROWS: dict[str, list[dict[str, Any]]] = {
    task: json.loads((SNAPSHOT / f"tasks/{task}.json").read_text())["configurations"]
    for task in INDEX["tasks"]
}
ITL = {"P50": "median_itl_ms", "P90": "p90_itl_ms", "P95": "p95_itl_ms", "P99": "p99_itl_ms"}
# The leaderboard web app's defaults (src/config/tasks.ts): 500 ms for LLM and MLLM tasks.
DIFFUSION_DEADLINE_S = {"text-to-image": 30.0, "text-to-video": 300.0}


def energy_of(row: dict[str, Any]) -> float:
    for key in ("energy_per_token_joules", "energy_per_image_joules", "energy_per_video_joules"):
        if key in row:
            return float(row[key])
    raise KeyError(row)


def expected_table(
    task: str,
    *,
    latency: str = "median_itl_ms",
    deadline: float | None = 500.0,
    gpus: set[str] | None = None,
    energy: Any = energy_of,
) -> list[tuple[str, int, float]]:
    """(model id, task-file row, energy) of each model's best row, in ascending energy."""
    admitted = [
        (i, row)
        for i, row in enumerate(ROWS[task])
        if (gpus is None or row["gpu_model"] in gpus)
        and (deadline is None or row[latency] <= deadline)
    ]
    first_seen: dict[str, int] = {}
    for i, row in admitted:
        first_seen.setdefault(row["model_id"], i)
    table = []
    for model_id in first_seen:
        own = [(i, row) for i, row in admitted if row["model_id"] == model_id]
        lowest = min(energy(row) for _, row in own)
        i = next(i for i, row in own if energy(row) == lowest)
        table.append((model_id, i, lowest))
    return sorted(table, key=lambda t: (t[2], first_seen[t[0]]))


def ok(data: dict[str, Any]) -> dict[str, Any]:
    assert "errors" not in data, data
    return data


LLM_TABLE = """query ($task: String!, $gpus: [String!], $c: LlmConstraints) {
  leaderboard(task: $task, gpus: $gpus, constraints: $c) {
    entries { rank energyJoules configuration { modelId upstream { taskRow } } } } }"""


def served_table(data: dict[str, Any], board: str = "leaderboard") -> list[tuple[str, int, float]]:
    entries = data[board]["entries"]
    assert [e["rank"] for e in entries] == list(range(1, len(entries) + 1))
    return [
        (
            e["configuration"]["modelId"],
            e["configuration"]["upstream"]["taskRow"],
            e["energyJoules"],
        )
        for e in entries
    ]


@pytest.mark.parametrize("task", LLM_TASKS)
async def test_default_leaderboard_of_every_llm_task(execute_real, task: str) -> None:
    """The leaderboard's own table: median ITL <= 500 ms, energy per token, both GPU types."""
    expected = expected_table(task)
    assert expected, task
    assert served_table(ok(await execute_real(LLM_TABLE, task=task))) == expected


@pytest.mark.parametrize(
    ("constraints", "latency", "deadline", "energy"),
    [
        ({"maxItlMs": 50}, "median_itl_ms", 50.0, energy_of),
        ({"maxItlMs": 20, "itlPercentile": "P90"}, "p90_itl_ms", 20.0, energy_of),
        ({"maxItlMs": 100, "itlPercentile": "P99"}, "p99_itl_ms", 100.0, energy_of),
        (
            {"rankBy": "PER_RESPONSE"},
            "median_itl_ms",
            500.0,
            lambda row: float(row["energy_per_request_joules"]),
        ),
        ({"maxItlMs": 1}, "median_itl_ms", 1.0, energy_of),
    ],
)
async def test_leaderboard_variants_on_lm_arena_chat(
    execute_real, constraints, latency, deadline, energy
) -> None:
    task = "lm-arena-chat"
    data = ok(await execute_real(LLM_TABLE, task=task, c=constraints))
    expected = expected_table(task, latency=latency, deadline=deadline, energy=energy)
    assert served_table(data) == expected


async def test_the_seed_index_rows(execute_real) -> None:
    """Per seed model and GPU, the lowest-energy configuration with median ITL <= 500 ms; the
    GPUs that have one are the seed's `gpus` of the model."""
    seed_ids = {m["model_id"] for m in SEED_DOC["models"]}
    served: dict[str, set[str]] = {}
    for gpu in ("H100", "B200"):
        data = ok(await execute_real(LLM_TABLE, task="lm-arena-chat", gpus=[gpu]))
        rows = [r for r in served_table(data) if r[0] in seed_ids]
        expected = [r for r in expected_table("lm-arena-chat", gpus={gpu}) if r[0] in seed_ids]
        assert rows == expected
        for model_id, *_ in rows:
            served.setdefault(model_id, set()).add(gpu)
    assert {m["model_id"]: sorted(m["gpus"]) for m in SEED_DOC["models"]} == {
        model_id: sorted(gpus) for model_id, gpus in served.items()
    }
    assert len(served) == 18


@pytest.mark.parametrize("task", DIFFUSION_TASKS)
async def test_default_diffusion_leaderboard(execute_real, task: str) -> None:
    query = """query ($task: String!) { diffusionLeaderboard(task: $task) { maxBatchLatencyS
        entries { rank energyJoules configuration { modelId upstream { taskRow } } } } }"""
    data = ok(await execute_real(query, task=task))
    assert data["diffusionLeaderboard"]["maxBatchLatencyS"] == DIFFUSION_DEADLINE_S[task]
    expected = expected_table(task, latency="batch_latency_s", deadline=DIFFUSION_DEADLINE_S[task])
    assert expected
    assert served_table(data, "diffusionLeaderboard") == expected


def expected_frontiers(task: str, scope: str, latency: str) -> dict[Any, list[int]]:
    """Per group of the scope, the task-file rows on its frontier (pair by pair)."""
    energy = "energy_per_token_joules" if latency != "batch_latency_s" else None

    def point(row: dict[str, Any]) -> tuple[float, float]:
        return row[latency], row[energy] if energy else energy_of(row)

    def group(row: dict[str, Any]) -> Any:
        return {
            "GLOBAL": None,
            "MODEL": row["model_id"],
            "GPU": row["gpu_model"],
            "MODEL_GPU": (row["model_id"], row["gpu_model"]),
        }[scope]

    rows = list(enumerate(ROWS[task]))
    answer: dict[Any, list[int]] = {}
    for i, row in rows:
        mine = [other for _, other in rows if group(other) == group(row)]
        beaten = any(point(o)[0] < point(row)[0] and point(o)[1] < point(row)[1] for o in mine)
        members = answer.setdefault(group(row), [])
        if not beaten:
            members.append(i)
    return answer


def served_frontiers(frontiers: list[dict[str, Any]], scope: str) -> dict[Any, list[int]]:
    def group(f: dict[str, Any]) -> Any:
        model = f["model"]["modelId"] if f["model"] else None
        return {
            "GLOBAL": None,
            "MODEL": model,
            "GPU": f["gpuModel"],
            "MODEL_GPU": (model, f["gpuModel"]),
        }[scope]

    return {
        group(f): sorted(c["upstream"]["taskRow"] for c in f["configurations"]) for f in frontiers
    }


FRONTIER_FIELDS = "model { modelId } gpuModel candidates configurations { upstream { taskRow } }"


@pytest.mark.parametrize("task", LLM_TASKS)
@pytest.mark.parametrize("scope", ["GLOBAL", "MODEL", "GPU"])
async def test_pareto_frontiers_of_every_llm_task(execute_real, task: str, scope: str) -> None:
    query = f"""query ($task: String!, $p: ItlPercentile!) {{
        paretoFrontier(task: $task, scope: {scope}, itlPercentile: $p) {{ {FRONTIER_FIELDS} }} }}"""
    for percentile, column in ITL.items():
        frontiers = ok(await execute_real(query, task=task, p=percentile))["paretoFrontier"]
        expected = expected_frontiers(task, scope, column)
        assert served_frontiers(frontiers, scope) == expected
        assert sum(f["candidates"] for f in frontiers) == len(ROWS[task])
        assert sorted(len(f["configurations"]) for f in frontiers) == sorted(
            len(rows) for rows in expected.values()
        )


@pytest.mark.parametrize("task", DIFFUSION_TASKS)
@pytest.mark.parametrize("scope", ["GLOBAL", "MODEL", "GPU"])
async def test_pareto_frontiers_of_every_diffusion_task(execute_real, task, scope) -> None:
    query = f"""query ($task: String!) {{
        diffusionParetoFrontier(task: $task, scope: {scope}) {{ {FRONTIER_FIELDS} }} }}"""
    frontiers = ok(await execute_real(query, task=task))["diffusionParetoFrontier"]
    assert served_frontiers(frontiers, scope) == expected_frontiers(task, scope, "batch_latency_s")


async def test_is_pareto_optimal_matches_the_model_frontier(execute_real) -> None:
    """The flag on every lm-arena-chat configuration, per model and globally."""
    query = """{ configurations(filter: {task: "lm-arena-chat"}, first: 500) { nodes {
        upstream { taskRow } isParetoOptimal global: isParetoOptimal(scope: GLOBAL) } } }"""
    nodes = ok(await execute_real(query))["configurations"]["nodes"]
    assert len(nodes) == len(ROWS["lm-arena-chat"])
    on_model = {
        i
        for rows in expected_frontiers("lm-arena-chat", "MODEL", "median_itl_ms").values()
        for i in rows
    }
    on_global = set(expected_frontiers("lm-arena-chat", "GLOBAL", "median_itl_ms")[None])
    assert {n["upstream"]["taskRow"] for n in nodes if n["isParetoOptimal"]} == on_model
    assert {n["upstream"]["taskRow"] for n in nodes if n["global"]} == on_global


@pytest.mark.parametrize("task", LLM_TASKS)
async def test_h100_against_b200_at_the_default_deadline(execute_real, task: str) -> None:
    query = """query ($task: String!) { compareGpus(task: $task) { model { modelId }
        baseline { upstream { taskRow } } candidate { upstream { taskRow } }
        baselineEnergyJoules candidateEnergyJoules energySavedJoules energyRatio } }"""
    served = ok(await execute_real(query, task=task))["compareGpus"]
    h100 = {m: (i, e) for m, i, e in expected_table(task, gpus={"H100"})}
    b200 = {m: (i, e) for m, i, e in expected_table(task, gpus={"B200"})}
    models = list(dict.fromkeys(r["model_id"] for r in ROWS[task]))
    assert [s["model"]["modelId"] for s in served] == models
    for s in served:
        model_id = s["model"]["modelId"]
        base, cand = h100.get(model_id), b200.get(model_id)
        assert (s["baseline"] or {}).get("upstream", {}).get("taskRow") == (base and base[0])
        assert (s["candidate"] or {}).get("upstream", {}).get("taskRow") == (cand and cand[0])
        if base and cand:
            assert s["energySavedJoules"] == base[1] - cand[1]
            assert s["energyRatio"] == cand[1] / base[1]
        else:
            assert (s["energySavedJoules"], s["energyRatio"]) == (None, None)


async def test_compare_models_ratios(execute_real) -> None:
    slugs = ["qwen-3-8b", "llama-3-1-8b-instruct", "qwen-3-235b-a22b-instruct-fp8"]
    query = """query ($m: [String!]!) { compareModels(models: $m) {
        model { slug modelId } energyJoules ratioToBest } }"""
    served = ok(await execute_real(query, m=slugs))["compareModels"]
    table = {m: e for m, _, e in expected_table("lm-arena-chat")}
    energies = [table[s["model"]["modelId"]] for s in served]
    assert [s["model"]["slug"] for s in served] == slugs
    assert [s["energyJoules"] for s in served] == energies
    assert [s["ratioToBest"] for s in served] == [e / min(energies) for e in energies]


async def test_answers_run_a_bounded_number_of_statements(
    real_db, real_settings, monkeypatch
) -> None:
    """A leaderboard with its models, flags and frontier reads no rows of its own (none per
    row): the release's rows are read once, in the same few statements whatever the task."""
    statements: list[str] = []
    event.listen(
        real_db.sync_engine, "before_cursor_execute", lambda *args: statements.append(args[2])
    )
    execute = make_execute(real_db, real_settings)
    query = """query ($task: String!) {
      leaderboard(task: $task) { entries { model { slug } configuration {
        isParetoOptimal global: isParetoOptimal(scope: GLOBAL) gpu { tdpWatts } } } }
      paretoFrontier(task: $task) { configurations { modelId } }
      compareGpus(task: $task) { energyRatio } }"""
    counts = {}
    for task in LLM_TASKS:
        statements.clear()
        ok(await execute(query, task=task))
        counts[task] = len(statements)
    # The latest release each time; the first time, also the release's catalog (7 statements).
    assert counts == {task: 1 for task in LLM_TASKS} | {LLM_TASKS[0]: 1 + 7}
