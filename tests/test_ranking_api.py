"""Leaderboards, Pareto frontiers, comparisons and energy units through the schema, whole answers.

The answers run on the small synthetic snapshot (tests/synthetic.py; rows 1..7 in file order,
each configuration's global id `lid(n)`):

    id model          GPU     n  energy/token  median ITL  throughput
    1  tiny-1b        H100    1  0.5           10          800
    2  tiny-1b        H100    1  0.2           20          3000
    3  tiny-1b        B200    1  0.3            8          2333
    4  mixture-8x2b   H100    2  1.0           30          1000
    5  mixture-8x2b   H100    2  0.8           35          1375
    6  mixture-8x2b   H100    2  0.9           36          1278   (a repeat of 5's setting)
    7  mixture-8x2b   H100    2  1.4           25          643

The other ITL percentiles are 1.5x (p90), 2x (p95) and 3x (p99) the median, energy per response
100x energy per token. Most tests read one database per module and backend holding that
snapshot plus a text-to-image task (`IMAGE_ROWS`); `execute_synthetic` gives the plain snapshot.
"""

from __future__ import annotations

import json
import uuid
from collections.abc import AsyncIterator, Iterator
from pathlib import Path
from typing import Any

import pytest
from sqlalchemy.engine import make_url

from db.database import create_engine, create_tables
from graph.settings import Settings
from tests import synthetic
from tests.conftest import (
    BACKENDS,
    POSTGRES_URL,
    Execute,
    _admin,
    _in_thread,
    ingest_dir,
    make_execute,
)

pytestmark = pytest.mark.anyio

TINY, MIX = "tiny-1b", "mixture-8x2b"

# The snapshot most tests read: the synthetic one plus a text-to-image task of two models.
PIXEL, MURAL = "acme/Pixel-1B", "acme/Mural-2B"
IMAGE_NICKNAMES = {PIXEL: "Pixel 1B", MURAL: "Mural 2B"}
# (model, GPU, GPUs, batch size, batch latency in s, energy per image in J); ids 1..6.
IMAGE_ROWS = [
    (PIXEL, "B200", 1, 1, 2.0, 300.0),
    (PIXEL, "B200", 1, 4, 6.0, 200.0),
    (PIXEL, "H100", 1, 1, 3.0, 300.0),
    (PIXEL, "H100", 2, 1, 40.0, 100.0),
    (MURAL, "B200", 1, 1, 2.0, 300.0),
    (PIXEL, "B200", 1, 8, 20.0, 250.0),
]


def _image_row(model, gpu, num_gpus, batch, latency, energy) -> dict[str, Any]:
    return {
        "model_id": model,
        "nickname": IMAGE_NICKNAMES[model],
        "gpu_model": gpu,
        "num_gpus": num_gpus,
        "avg_power_watts": 500.0,
        "total_params_billions": 1.0,
        "activated_params_billions": 1.0,
        "weight_precision": "bfloat16",
        "batch_size": batch,
        "batch_latency_s": latency,
        "inference_steps": 20,
        "ulysses_degree": num_gpus,
        "ring_degree": 1,
        "energy_per_image_joules": energy,
        "throughput_images_per_sec": batch / latency,
        "image_height": 1024,
        "image_width": 1024,
    }


def image_documents() -> dict[str, Any]:
    files = synthetic.documents()
    task = "text-to-image"
    index = files["index.json"]
    index["tasks"].append(task)
    index["architectures"]["diffusion"] = [task]
    for model, nickname in IMAGE_NICKNAMES.items():
        index["models"][model] = {
            "nickname": nickname,
            "total_params_billions": 1.0,
            "activated_params_billions": 1.0,
            "weight_precision": "bfloat16",
        }
    rows = [_image_row(*row) for row in IMAGE_ROWS]
    files[f"tasks/{task}.json"] = {
        "task": task,
        "task_display_name": "Text to Image",
        "architecture": "diffusion",
        "configurations": rows,
    }
    for model in IMAGE_NICKNAMES:
        own = [r for r in rows if r["model_id"] == model]
        files[f"models/{model.replace('/', '__')}__{task}.json"] = {
            "model_id": model,
            "task": task,
            "configurations": [
                {
                    **{k: v for k, v in r.items() if k not in _NOT_IN_MODEL_FILE},
                    "parallelization": {
                        "ulysses_degree": r["ulysses_degree"],
                        "ring_degree": r["ring_degree"],
                    },
                }
                for r in own
            ],
        }
    return files


IMAGE_SETTINGS = ("batch_size", "inference_steps", "image_height", "image_width")
LLM_IDS = synthetic.IDS
IMAGE_IDS = synthetic.configuration_ids(
    "text-to-image", [_image_row(*row) for row in IMAGE_ROWS], IMAGE_SETTINGS
)
# Row numbers (from 1) by global id, LLM rows and image rows.
NUMBER = {id: n for ids in (LLM_IDS, IMAGE_IDS) for n, id in enumerate(ids, start=1)}


def lid(n: int) -> str:
    """The global id of LLM row n (from 1)."""
    return LLM_IDS[n - 1]


def iid(n: int) -> str:
    """The global id of image row n (from 1)."""
    return IMAGE_IDS[n - 1]


_NOT_IN_MODEL_FILE = {
    "model_id",
    "nickname",
    "total_params_billions",
    "activated_params_billions",
    "weight_precision",
    "ulysses_degree",
    "ring_degree",
}


async def _ingest(url: str, root: Path, manifest: Path) -> None:
    engine = create_engine(url)
    await create_tables(engine)
    await ingest_dir(engine, root, manifest)
    await engine.dispose()


@pytest.fixture(scope="module", params=BACKENDS)
def ranking_url(request: pytest.FixtureRequest, tmp_path_factory) -> Iterator[str]:
    """The synthetic snapshot plus a text-to-image task, ingested once per module and backend.

    Tests that use it only read, so they share it (a fresh database per test is 10x slower).
    """
    root = synthetic.write(tmp_path_factory.mktemp("ranking") / "snapshot", image_documents())
    manifest = root.parent / "manifest.json"
    manifest.write_text(json.dumps(synthetic.manifest()))
    if request.param == "sqlite":
        url = f"sqlite+aiosqlite:///{root.parent / 'ranking.db'}"
        _in_thread(_ingest(url, root, manifest))
        yield url
        return
    name = f"leadgreen_ranking_{uuid.uuid4().hex[:8]}"
    _admin(f"CREATE DATABASE {name}")
    try:
        url = make_url(POSTGRES_URL).set(database=name).render_as_string(hide_password=False)
        _in_thread(_ingest(url, root, manifest))
        yield url
    finally:
        _admin(f"DROP DATABASE {name} WITH (FORCE)")


@pytest.fixture
async def execute(ranking_url: str) -> AsyncIterator[Execute]:
    engine = create_engine(ranking_url)
    yield make_execute(engine, Settings(database_url=ranking_url, manifest=None))
    await engine.dispose()


ENTRIES = "entries { rank energyJoules latencyMs ratioToBest model { slug } configuration { id } }"


def entry(rank: int, slug: str, id: int, energy: float, latency: float, ratio: float):
    return {
        "rank": rank,
        "energyJoules": energy,
        "latencyMs": latency,
        "ratioToBest": ratio,
        "model": {"slug": slug},
        "configuration": {"id": lid(id)},
    }


async def test_default_leaderboard(execute_synthetic: Execute) -> None:
    """Median ITL within 500 ms, energy per token, all GPUs: the ML.ENERGY leaderboard's table."""
    data = await execute_synthetic(
        f"{{ leaderboard {{ task {{ name }} maxItlMs itlPercentile rankBy {ENTRIES} }} }}"
    )
    assert data == {
        "leaderboard": {
            "task": {"name": "lm-arena-chat"},
            "maxItlMs": 500.0,
            "itlPercentile": "P50",
            "rankBy": "PER_TOKEN",
            "entries": [
                entry(1, TINY, 2, 0.2, 20.0, 1.0),
                entry(2, MIX, 5, 0.8, 35.0, 0.8 / 0.2),
            ],
        }
    }


@pytest.mark.parametrize(
    ("arguments", "expected"),
    [
        ("constraints: {maxItlMs: 15}", [(TINY, 3)]),
        # Inclusive: row 2's median ITL is exactly 20 ms.
        ("constraints: {maxItlMs: 20}", [(TINY, 2)]),
        ("constraints: {maxItlMs: 5}", []),
        ("constraints: {maxItlMs: null}", [(TINY, 2), (MIX, 5)]),
        ('gpus: ["H100"], constraints: {maxItlMs: 15}', [(TINY, 1)]),
        ('gpus: ["B200"]', [(TINY, 3)]),
        ('gpus: ["B200", "H100"]', [(TINY, 2), (MIX, 5)]),
        ("constraints: {itlPercentile: P99, maxItlMs: 60}", [(TINY, 2)]),
        ("constraints: {itlPercentile: P90, maxItlMs: 50}", [(TINY, 2), (MIX, 4)]),
        ("constraints: {itlPercentile: P95, maxItlMs: 20}", [(TINY, 3)]),
        ("constraints: {maxEnergyJoules: 0.25}", [(TINY, 2)]),
        ("constraints: {maxEnergyJoules: 0.8}", [(TINY, 2), (MIX, 5)]),
        ("constraints: {minThroughputTokensPerSec: 2500}", [(TINY, 2)]),
        ("constraints: {minThroughputTokensPerSec: 1375}", [(TINY, 2), (MIX, 5)]),
        ("constraints: {numGpus: [2]}", [(MIX, 5)]),
        ("constraints: {numGpus: [1, 2]}", [(TINY, 2), (MIX, 5)]),
        ("constraints: {numGpus: [4]}", []),
        ("constraints: {rankBy: PER_RESPONSE, maxEnergyJoules: 30}", [(TINY, 2)]),
        (f'models: ["{MIX}"]', [(MIX, 5)]),
        (f'models: ["{MIX}"], constraints: {{maxItlMs: 30}}', [(MIX, 4)]),
    ],
)
async def test_leaderboard_constraints(execute: Execute, arguments, expected) -> None:
    data = await execute(
        f"{{ leaderboard({arguments}) "
        "{ entries { model { slug } configuration { id } } } }"
    )
    assert [
        (e["model"]["slug"], NUMBER[e["configuration"]["id"]])
        for e in data["leaderboard"]["entries"]
    ] == expected


async def test_leaderboard_ranked_by_energy_per_response(execute: Execute) -> None:
    data = await execute(
        f"{{ leaderboard(constraints: {{rankBy: PER_RESPONSE, itlPercentile: P99}}) "
        f"{{ rankBy itlPercentile {ENTRIES} }} }}"
    )
    assert data == {
        "leaderboard": {
            "rankBy": "PER_RESPONSE",
            "itlPercentile": "P99",
            "entries": [
                entry(1, TINY, 2, 0.2 * 100, 20.0 * 3, 1.0),
                entry(2, MIX, 5, 0.8 * 100, 35.0 * 3, (0.8 * 100) / (0.2 * 100)),
            ],
        }
    }


FRONTIER = "model { slug } gpuModel candidates configurations { id }"


def frontier(slug: str | None, gpu: str | None, candidates: int, rows: list[int], image=False):
    return {
        "model": None if slug is None else {"slug": slug},
        "gpuModel": gpu,
        "candidates": candidates,
        "configurations": [{"id": iid(i) if image else lid(i)} for i in rows],
    }


@pytest.mark.parametrize(
    ("arguments", "expected"),
    [
        ("", [frontier(None, None, 7, [3, 2])]),
        ("scope: GLOBAL, itlPercentile: P99", [frontier(None, None, 7, [3, 2])]),
        # Row 6 (a repeated run) is beaten by row 5; row 7 is the model's lowest latency.
        ("scope: MODEL", [frontier(TINY, None, 3, [3, 2]), frontier(MIX, None, 4, [7, 4, 5])]),
        ("scope: GPU", [frontier(None, "H100", 6, [1, 2]), frontier(None, "B200", 1, [3])]),
        (
            "scope: MODEL_GPU",
            [
                frontier(TINY, "H100", 2, [1, 2]),
                frontier(TINY, "B200", 1, [3]),
                frontier(MIX, "H100", 4, [7, 4, 5]),
            ],
        ),
        ('gpus: ["H100"]', [frontier(None, None, 6, [1, 2])]),
        (f'models: ["{MIX}"]', [frontier(None, None, 4, [7, 4, 5])]),
    ],
)
async def test_pareto_frontier(execute: Execute, arguments, expected) -> None:
    args = f"({arguments})" if arguments else ""
    data = await execute(f"{{ paretoFrontier{args} {{ {FRONTIER} }} }}")
    assert data == {"paretoFrontier": expected}


async def test_is_pareto_optimal_flag(execute: Execute) -> None:
    data = await execute(
        """{ configurations { nodes { id isParetoOptimal global: isParetoOptimal(scope: GLOBAL)
             gpu: isParetoOptimal(scope: GPU) p99: isParetoOptimal(itlPercentile: P99) } } }"""
    )
    flags = {
        NUMBER[n["id"]]: (n["isParetoOptimal"], n["global"], n["gpu"], n["p99"])
        for n in data["configurations"]["nodes"]
    }
    assert flags == {
        1: (False, False, True, False),
        2: (True, True, True, True),
        3: (True, True, True, True),
        4: (True, False, False, True),
        5: (True, False, False, True),
        6: (False, False, False, False),
        7: (True, False, False, True),
    }


async def test_flag_agrees_with_the_frontier_on_the_model_page(execute: Execute) -> None:
    data = await execute(
        f'{{ model(slug: "{MIX}") {{ configurations {{ id isParetoOptimal }} }} }}'
    )
    assert [c["id"] for c in data["model"]["configurations"] if c["isParetoOptimal"]] == [
        lid(4),
        lid(5),
        lid(7),
    ]


COMPARE = "model { slug } configuration { id } energyJoules ratioToBest joulesAboveBest"


async def test_compare_models(execute: Execute) -> None:
    query = f"""query ($c: LlmConstraints) {{
        compareModels(models: ["{MIX}", "{TINY}"], constraints: $c) {{ {COMPARE} }} }}"""
    assert await execute(query) == {
        "compareModels": [
            {
                "model": {"slug": MIX},
                "configuration": {"id": lid(5)},
                "energyJoules": 0.8,
                "ratioToBest": 0.8 / 0.2,
                "joulesAboveBest": 0.8 - 0.2,
            },
            {
                "model": {"slug": TINY},
                "configuration": {"id": lid(2)},
                "energyJoules": 0.2,
                "ratioToBest": 1.0,
                "joulesAboveBest": 0.0,
            },
        ]
    }
    assert await execute(query, c={"maxItlMs": 15}) == {
        "compareModels": [
            {
                "model": {"slug": MIX},
                "configuration": None,
                "energyJoules": None,
                "ratioToBest": None,
                "joulesAboveBest": None,
            },
            {
                "model": {"slug": TINY},
                "configuration": {"id": lid(3)},
                "energyJoules": 0.3,
                "ratioToBest": 1.0,
                "joulesAboveBest": 0.0,
            },
        ]
    }


GPUS = """model { slug } baselineGpu candidateGpu baseline { id } candidate { id }
    baselineEnergyJoules candidateEnergyJoules energySavedJoules energyRatio energySavedFraction"""


def matchup(slug, baseline, candidate, energies=None, gpus=("H100", "B200")):
    base, cand = energies or (None, None)
    both = base is not None and cand is not None
    return {
        "model": {"slug": slug},
        "baselineGpu": gpus[0],
        "candidateGpu": gpus[1],
        "baseline": None if baseline is None else {"id": lid(baseline)},
        "candidate": None if candidate is None else {"id": lid(candidate)},
        "baselineEnergyJoules": base,
        "candidateEnergyJoules": cand,
        "energySavedJoules": base - cand if both else None,
        "energyRatio": cand / base if both else None,
        "energySavedFraction": 1 - cand / base if both else None,
    }


@pytest.mark.parametrize(
    ("arguments", "expected"),
    [
        # At 500 ms, the B200's best uses more than the H100's: a negative saving.
        ("", [matchup(TINY, 2, 3, (0.2, 0.3)), matchup(MIX, 5, None, (0.8, None))]),
        (
            "constraints: {maxItlMs: 15}",
            [matchup(TINY, 1, 3, (0.5, 0.3)), matchup(MIX, None, None)],
        ),
        (
            f'baseline: "B200", candidate: "H100", models: ["{TINY}"]',
            [matchup(TINY, 3, 2, (0.3, 0.2), gpus=("B200", "H100"))],
        ),
        ("constraints: {maxItlMs: 1}", [matchup(TINY, None, None), matchup(MIX, None, None)]),
    ],
)
async def test_compare_gpus(execute: Execute, arguments, expected) -> None:
    args = f"({arguments})" if arguments else ""
    assert await execute(f"{{ compareGpus{args} {{ {GPUS} }} }}") == {"compareGpus": expected}


def amount(joules: float, carbon: float | None = None, price: float | None = None):
    return {
        "joules": joules,
        "wattHours": joules / 3600,
        "kilowattHours": joules / 3_600_000,
        "estimatedCarbonGrams": None if carbon is None else joules / 3_600_000 * carbon,
        "estimatedCost": None if price is None else joules / 3_600_000 * price,
    }


AMOUNT = "{ joules wattHours kilowattHours estimatedCarbonGrams estimatedCost }"
TOKEN_ENERGY = (
    f"perToken {AMOUNT} perThousandTokens {AMOUNT} perMillionTokens {AMOUNT} "
    f"perResponse {AMOUNT} tokensPerJoule"
)


@pytest.mark.parametrize(("carbon", "price"), [(None, None), (400.0, 0.15), (0.0, None)])
async def test_energy_units_and_estimates(execute: Execute, carbon, price) -> None:
    query = f"""query ($carbon: Float, $price: Float) {{ leaderboard {{ entries {{ configuration {{
        energy(gridCarbonIntensity: $carbon, electricityPricePerKwh: $price) {{
        {TOKEN_ENERGY} }} }} }} }} }}"""
    data = await execute(query, carbon=carbon, price=price)
    best = data["leaderboard"]["entries"][0]["configuration"]["energy"]
    assert best == {
        "perToken": amount(0.2, carbon, price),
        "perThousandTokens": amount(0.2 * 1e3, carbon, price),
        "perMillionTokens": amount(0.2 * 1e6, carbon, price),
        "perResponse": amount(0.2 * 100, carbon, price),
        "tokensPerJoule": 1 / 0.2,
    }


@pytest.mark.parametrize(
    ("query", "message"),
    [
        (
            "leaderboard(constraints: {maxItlMs: -1}) { maxItlMs }",
            "maxItlMs must be a number >= 0, got -1.0",
        ),
        (
            "leaderboard(constraints: {maxEnergyJoules: -0.5}) { maxItlMs }",
            "maxEnergyJoules must be a number >= 0, got -0.5",
        ),
        (
            "leaderboard(constraints: {minThroughputTokensPerSec: -1}) { maxItlMs }",
            "minThroughputTokensPerSec must be a number >= 0, got -1.0",
        ),
        (
            "leaderboard(constraints: {numGpus: [0]}) { maxItlMs }",
            "numGpus must be a number >= 1, got 0",
        ),
        (
            "leaderboard(constraints: {numGpus: []}) { maxItlMs }",
            "numGpus is empty: give at least one number, or leave it out for all",
        ),
        (
            'leaderboard(task: "nope") { maxItlMs }',
            "unknown task 'nope' in `task`; `tasks` lists them",
        ),
        (
            'paretoFrontier(task: "gpqa") { candidates }',
            "unknown task 'gpqa' in `task`; `tasks` lists them",
        ),
        (
            'leaderboard(gpus: ["A100"]) { maxItlMs }',
            "unknown GPU 'A100' in `gpus`; `gpus` lists them",
        ),
        (
            "leaderboard(gpus: []) { maxItlMs }",
            "gpus is empty: name at least one GPU type, or leave it out for all",
        ),
        (
            "leaderboard(models: []) { maxItlMs }",
            "models is empty: name at least one model by slug",
        ),
        (
            "compareModels(models: []) { energyJoules }",
            "models is empty: name at least one model by slug",
        ),
        (
            'compareModels(models: ["gpt-5"]) { energyJoules }',
            "unknown model slug 'gpt-5' in `models`; `models` lists them",
        ),
        (
            f'compareModels(models: ["{TINY}", "{MIX}", "{TINY}"]) {{ energyJoules }}',
            f"models lists '{TINY}' more than once",
        ),
        (
            'compareGpus(candidate: "H100") { energyRatio }',
            "baseline and candidate are both 'H100': compare two GPU types",
        ),
        (
            'compareGpus(baseline: "A100") { energyRatio }',
            "unknown GPU 'A100' in `baseline`; `gpus` lists them",
        ),
        (
            "configurations(first: 1) { nodes { energy(gridCarbonIntensity: -1) "
            "{ tokensPerJoule } } }",
            "gridCarbonIntensity must be a number >= 0, got -1.0",
        ),
        (
            "configurations(first: 1) { nodes { energy(electricityPricePerKwh: -0.1) "
            "{ tokensPerJoule } } }",
            "electricityPricePerKwh must be a number >= 0, got -0.1",
        ),
    ],
)
async def test_nonsensical_arguments_get_coded_errors(execute: Execute, query, message) -> None:
    assert await execute(f"{{ {query} }}") == {
        "errors": [{"message": message, "code": "BAD_USER_INPUT"}]
    }


async def test_a_release_without_diffusion_tasks(execute_synthetic: Execute) -> None:
    query = '{ diffusionLeaderboard(task: "lm-arena-chat") { maxBatchLatencyS } }'
    assert await execute_synthetic(query) == {
        "errors": [
            {
                "message": "task 'lm-arena-chat' in `task` is an LLM or MLLM task; this field "
                "takes diffusion tasks: none",
                "code": "BAD_USER_INPUT",
            }
        ]
    }


async def test_an_unknown_percentile_fails_validation(execute: Execute) -> None:
    data = await execute("{ leaderboard(constraints: {itlPercentile: P42}) { rankBy } }")
    assert [e["code"] for e in data["errors"]] == ["GRAPHQL_VALIDATION_FAILED"]
    assert "P42" in data["errors"][0]["message"]


DIFFUSION_ENTRIES = (
    "entries { rank energyJoules batchLatencyS ratioToBest model { slug } configuration { id } }"
)


def image_entry(rank, slug, id, ratio):
    _, _, _, _, latency, energy = IMAGE_ROWS[id - 1]
    return {
        "rank": rank,
        "energyJoules": energy,
        "batchLatencyS": latency,
        "ratioToBest": ratio,
        "model": {"slug": slug},
        "configuration": {"id": iid(id)},
    }


@pytest.mark.parametrize(
    ("arguments", "deadline", "expected"),
    [
        # text-to-image's default deadline is 30 s: row 4 (40 s) is out.
        ("", 30.0, [image_entry(1, "pixel-1b", 2, 1.0), image_entry(2, "mural-2b", 5, 1.5)]),
        (
            "constraints: {maxBatchLatencyS: null}",
            None,
            [image_entry(1, "pixel-1b", 4, 1.0), image_entry(2, "mural-2b", 5, 3.0)],
        ),
        # A tie between models: the one whose row comes first upstream ranks first.
        (
            "constraints: {maxBatchLatencyS: 2}",
            2.0,
            [image_entry(1, "pixel-1b", 1, 1.0), image_entry(2, "mural-2b", 5, 1.0)],
        ),
        ('gpus: ["H100"]', 30.0, [image_entry(1, "pixel-1b", 3, 1.0)]),
        (
            "constraints: {numGpus: [2], maxBatchLatencyS: null}",
            None,
            [image_entry(1, "pixel-1b", 4, 1.0)],
        ),
        (
            "constraints: {minThroughputOutputsPerSec: 0.6}",
            30.0,
            [image_entry(1, "pixel-1b", 2, 1.0)],
        ),
        ("constraints: {maxEnergyJoules: 250}", 30.0, [image_entry(1, "pixel-1b", 2, 1.0)]),
        ("constraints: {maxBatchLatencyS: 1}", 1.0, []),
        ('models: ["mural-2b"]', 30.0, [image_entry(1, "mural-2b", 5, 1.0)]),
    ],
)
async def test_diffusion_leaderboard(execute: Execute, arguments, deadline, expected):
    args = f"({arguments})" if arguments else ""
    data = await execute(
        f"{{ diffusionLeaderboard{args} {{ task {{ name }} maxBatchLatencyS "
        f"{DIFFUSION_ENTRIES} }} }}"
    )
    assert data == {
        "diffusionLeaderboard": {
            "task": {"name": "text-to-image"},
            "maxBatchLatencyS": deadline,
            "entries": expected,
        }
    }


@pytest.mark.parametrize(
    ("scope", "expected"),
    [
        # Rows 1, 5 and 3 tie on energy: none beats another on both axes, so all stay.
        ("GLOBAL", [frontier(None, None, 6, [1, 5, 3, 2, 4], image=True)]),
        (
            "MODEL",
            [
                frontier("pixel-1b", None, 5, [1, 3, 2, 4], image=True),
                frontier("mural-2b", None, 1, [5], image=True),
            ],
        ),
        (
            "GPU",
            [
                frontier(None, "B200", 4, [1, 5, 2], image=True),
                frontier(None, "H100", 2, [3, 4], image=True),
            ],
        ),
    ],
)
async def test_diffusion_pareto_frontier(execute: Execute, scope, expected) -> None:
    data = await execute(f"{{ diffusionParetoFrontier(scope: {scope}) {{ {FRONTIER} }} }}")
    assert data == {"diffusionParetoFrontier": expected}


async def test_diffusion_flag_and_energy(execute: Execute) -> None:
    data = await execute(
        """{ diffusionConfigurations { nodes { id isParetoOptimal
             energy(gridCarbonIntensity: 400) { perOutput { joules kilowattHours
               estimatedCarbonGrams estimatedCost } perThousandOutputs { joules }
               outputsPerKilowattHour } } } }"""
    )
    assert data["diffusionConfigurations"]["nodes"] == [
        {
            "id": iid(i),
            "isParetoOptimal": i != 6,
            "energy": {
                "perOutput": {
                    "joules": row[5],
                    "kilowattHours": row[5] / 3_600_000,
                    "estimatedCarbonGrams": row[5] / 3_600_000 * 400,
                    "estimatedCost": None,
                },
                "perThousandOutputs": {"joules": row[5] * 1000},
                "outputsPerKilowattHour": 1 / row[5] * 3_600_000,
            },
        }
        for i, row in enumerate(IMAGE_ROWS, start=1)
    ]


@pytest.mark.parametrize(
    ("query", "message"),
    [
        (
            'leaderboard(task: "text-to-image") { maxItlMs }',
            "task 'text-to-image' in `task` is a diffusion task; this field takes LLM or MLLM "
            "tasks: lm-arena-chat",
        ),
        (
            'diffusionLeaderboard(task: "lm-arena-chat") { maxBatchLatencyS }',
            "task 'lm-arena-chat' in `task` is an LLM or MLLM task; this field takes diffusion "
            "tasks: text-to-image",
        ),
        (
            "diffusionLeaderboard(constraints: {maxBatchLatencyS: -1}) { maxBatchLatencyS }",
            "maxBatchLatencyS must be a number >= 0, got -1.0",
        ),
        (
            'diffusionParetoFrontier(task: "text-to-video") { candidates }',
            "unknown task 'text-to-video' in `task`; `tasks` lists them",
        ),
    ],
)
async def test_diffusion_errors(execute: Execute, query, message) -> None:
    assert await execute(f"{{ {query} }}") == {
        "errors": [{"message": message, "code": "BAD_USER_INPUT"}]
    }


async def test_answers_from_a_named_release(execute: Execute) -> None:
    query = "query ($r: Int) { leaderboard(release: $r) { entries { configuration { id } } } }"
    assert await execute(query, r=1) == await execute(query)
    data = await execute(query, r=99)
    assert [e["code"] for e in data["errors"]] == ["BAD_USER_INPUT"]
