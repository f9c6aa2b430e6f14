"""Releases: every ingest of different data is kept, the newest data is served by default, any
release on request, identities are checked, and every configuration leads back to its file row.

2026-02-16 (with the seed manifest) is ingested first, then 2025-12-17 (without a manifest):
the later ingest holds the older data, so it must not become the default. Expected values are
read from the files with `json`.
"""

from __future__ import annotations

import functools
import json
import re
import uuid
from collections.abc import AsyncIterator, Iterator
from pathlib import Path
from typing import Any

import pytest
from sqlalchemy.engine import make_url
from sqlalchemy.ext.asyncio import AsyncEngine

from db.database import create_engine, create_tables
from graph.settings import Settings
from tests.conftest import (
    BACKENDS,
    EARLIER,
    POSTGRES_URL,
    SEED,
    SNAPSHOT,
    Execute,
    _admin,
    _in_thread,
    ingest_dir,
    make_execute,
)

pytestmark = pytest.mark.anyio

TASK = "lm-arena-chat"
QWEN = "Qwen/Qwen3-8B"


@functools.cache
def read(root: Path, path: str) -> Any:
    """A file of a snapshot, parsed (once: callers only read it)."""
    return json.loads((root / path).read_text())


def slugify(nickname: str) -> str:
    """A model's slug when no manifest lists it: its nickname, lower-cased, dash-separated."""
    return re.sub(r"[^a-z0-9]+", "-", nickname.lower()).strip("-")


def model_file(model_id: str, task: str) -> str:
    return f"models/{model_id.replace('/', '__')}__{task}.json"


LATER_INDEX = read(SNAPSHOT, "index.json")
EARLIER_INDEX = read(EARLIER, "index.json")
SEED_DOC = read(SEED.parent, SEED.name)


def rows(root: Path, task: str = TASK, model_id: str | None = None) -> list[dict[str, Any]]:
    found = read(root, f"tasks/{task}.json")["configurations"]
    return [r for r in found if model_id is None or r["model_id"] == model_id]


def llm_tasks(index: dict[str, Any]) -> list[str]:
    diffusion = set(index["architectures"].get("diffusion", []))
    return [t for t in index["tasks"] if t not in diffusion]


def ok(result: dict[str, Any]) -> dict[str, Any]:
    assert "errors" not in result, result["errors"]
    return result


Source = tuple[Path, Path | None]


def stored_releases(
    request: pytest.FixtureRequest,
    tmp_path_factory: pytest.TempPathFactory,
    sources: list[Source],
) -> Iterator[tuple[str, list[int]]]:
    """A database of its own on `request.param`'s backend holding `sources`, ingested in order.

    For module-scoped fixtures whose tests only read: yields its URL and the release ids.
    """
    if request.param == "sqlite":
        url = f"sqlite+aiosqlite:///{tmp_path_factory.mktemp('releases') / 'releases.db'}"
        name = None
    else:
        name = f"leadgreen_releases_{uuid.uuid4().hex[:8]}"
        _admin(f"CREATE DATABASE {name}")
        url = make_url(POSTGRES_URL).set(database=name).render_as_string(hide_password=False)

    async def ingest_all() -> list[int]:
        engine = create_engine(url)
        try:
            await create_tables(engine)
            reports = [await ingest_dir(engine, root, manifest) for root, manifest in sources]
        finally:
            await engine.dispose()
        assert not any(r.unchanged for r in reports)
        return [r.release_id for r in reports]

    try:
        yield url, _in_thread(ingest_all())
    finally:
        if name is not None:
            _admin(f"DROP DATABASE {name} WITH (FORCE)")


@pytest.fixture(scope="module", params=BACKENDS)
def releases_url(
    request: pytest.FixtureRequest, tmp_path_factory: pytest.TempPathFactory
) -> Iterator[tuple[str, list[int]]]:
    """2026-02-16 with the seed manifest, then 2025-12-17 without one; read-only."""
    yield from stored_releases(request, tmp_path_factory, [(SNAPSHOT, SEED), (EARLIER, None)])


class Releases:
    def __init__(self, execute: Execute, later: int, earlier: int) -> None:
        self.execute, self.later, self.earlier = execute, later, earlier


@pytest.fixture
async def releases(releases_url: tuple[str, list[int]]) -> AsyncIterator[Releases]:
    url, (later, earlier) = releases_url
    engine = create_engine(url)
    yield Releases(make_execute(engine, Settings(database_url=url, manifest=None)), later, earlier)
    await engine.dispose()


def test_the_two_snapshots_differ_where_the_tests_look() -> None:
    """Preconditions, on the files alone: the throughputs compared below do differ."""
    assert LATER_INDEX["last_updated"] == "2026-02-16"
    assert EARLIER_INDEX["last_updated"] == "2025-12-17"
    later, earlier = rows(SNAPSHOT, model_id=QWEN), rows(EARLIER, model_id=QWEN)
    assert len(later) == len(earlier) > 0
    assert {r["output_throughput_tokens_per_sec"] for r in later}.isdisjoint(
        r["output_throughput_tokens_per_sec"] for r in earlier
    )


async def test_releases_lists_both_newest_data_first(releases: Releases) -> None:
    data = ok(
        await releases.execute("{ releases { number lastUpdated upstreamCommit location digest } }")
    )
    listed = data["releases"]
    assert [
        {k: r[k] for k in ("number", "lastUpdated", "upstreamCommit", "location")} for r in listed
    ] == [
        {
            "number": releases.later,
            "lastUpdated": "2026-02-16",
            "upstreamCommit": None,
            "location": str(SNAPSHOT),
        },
        {
            "number": releases.earlier,
            "lastUpdated": "2025-12-17",
            "upstreamCommit": None,
            "location": str(EARLIER),
        },
    ]
    digests = [r["digest"] for r in listed]
    assert all(len(d) == 64 and set(d) <= set("0123456789abcdef") for d in digests)
    assert digests[0] != digests[1]


async def test_default_answers_come_from_the_newest_data(releases: Releases) -> None:
    data = ok(
        await releases.execute(
            """{ source { compiled release { number lastUpdated } }
                 model(slug: "qwen-3-8b") {
                   modelId configurations { outputThroughputTokensPerSec } }
                 index { version models { slug } }
                 configurations(filter: {task: "lm-arena-chat"}) { totalCount } }"""
        )
    )
    assert data == {
        "source": {
            "compiled": SEED_DOC["source"]["compiled"],
            "release": {"number": releases.later, "lastUpdated": "2026-02-16"},
        },
        "model": {
            "modelId": QWEN,
            "configurations": [
                {"outputThroughputTokensPerSec": r["output_throughput_tokens_per_sec"]}
                for r in rows(SNAPSHOT, model_id=QWEN)
            ],
        },
        "index": {"version": "1", "models": [{"slug": m["slug"]} for m in SEED_DOC["models"]]},
        "configurations": {"totalCount": len(rows(SNAPSHOT))},
    }


async def test_release_argument_answers_from_the_earlier_release(releases: Releases) -> None:
    query = """query ($r: Int) {
      source(release: $r) { name compiled dataUrl licence release { number lastUpdated } }
      model(slug: "qwen-3-8b", release: $r) {
        modelId name inIndex url configurations { outputThroughputTokensPerSec } }
      models(release: $r) { slug modelId inIndex }
      configurations(release: $r, filter: {model: "qwen-3-8b", task: "lm-arena-chat"}) {
        totalCount nodes { outputThroughputTokensPerSec source { release { number } } } }
      index(release: $r) { version updated dataVersion models { slug } source { compiled } }
      tasks(release: $r) { name displayName architecture } }"""
    data = ok(await releases.execute(query, r=releases.earlier))
    throughputs = [
        {"outputThroughputTokensPerSec": r["output_throughput_tokens_per_sec"]}
        for r in rows(EARLIER, model_id=QWEN)
    ]
    architecture = {t: a for a, ts in EARLIER_INDEX["architectures"].items() for t in ts}
    # No manifest describes it: its index is its own, the models of lm-arena-chat.
    chat = list(dict.fromkeys(r["model_id"] for r in rows(EARLIER)))
    slugs = {m: slugify(facts["nickname"]) for m, facts in EARLIER_INDEX["models"].items()}
    assert data == {
        # Ingested without a manifest: only what the snapshot tells is known.
        "source": {
            "name": "ML.ENERGY Leaderboard",
            "compiled": "2025-12-17",
            "dataUrl": f"{EARLIER}/tasks/lm-arena-chat.json",
            "licence": None,
            "release": {"number": releases.earlier, "lastUpdated": "2025-12-17"},
        },
        "model": {
            "modelId": QWEN,
            "name": EARLIER_INDEX["models"][QWEN]["nickname"],
            "inIndex": True,
            "url": None,
            "configurations": throughputs,
        },
        # Not in a manifest: slugs from the nicknames, ordered by slug.
        "models": sorted(
            (
                {"slug": slugs[m], "modelId": m, "inIndex": m in chat}
                for m in EARLIER_INDEX["models"]
            ),
            key=lambda m: m["slug"],
        ),
        "configurations": {
            "totalCount": len(throughputs),
            "nodes": [
                t | {"source": {"release": {"number": releases.earlier}}} for t in throughputs
            ],
        },
        "index": {
            "version": None,
            "updated": None,
            "dataVersion": None,
            "models": [{"slug": slugs[m]} for m in chat],
            "source": {"compiled": "2025-12-17"},
        },
        # In index.json's order.
        "tasks": [
            {
                "name": t,
                "displayName": read(EARLIER, f"tasks/{t}.json")["task_display_name"],
                "architecture": architecture[t],
            }
            for t in EARLIER_INDEX["tasks"]
        ],
    }


async def test_release_argument_naming_the_latest_is_the_default(releases: Releases) -> None:
    query = """query ($r: Int) { model(slug: "qwen-3-8b", release: $r) {
        configurations { outputThroughputTokensPerSec } } source(release: $r) { compiled } }"""
    assert ok(await releases.execute(query, r=releases.later)) == ok(await releases.execute(query))


UNKNOWN_RELEASE_FIELDS = [
    'model(slug: "qwen-3-8b", release: $r) { slug }',
    "models(release: $r) { slug }",
    "configurations(release: $r) { totalCount }",
    "diffusionConfigurations(release: $r) { totalCount }",
    "source(release: $r) { name }",
    "index(release: $r) { version }",
    "tasks(release: $r) { name }",
]


async def test_unknown_release_is_bad_user_input(releases: Releases) -> None:
    unknown = releases.later + releases.earlier + 1000
    for field in UNKNOWN_RELEASE_FIELDS:
        result = await releases.execute(f"query ($r: Int) {{ {field} }}", r=unknown)
        assert [e["code"] for e in result.get("errors", [])] == ["BAD_USER_INPUT"], field
        assert str(unknown) in result["errors"][0]["message"]


async def test_reingesting_identical_data_changes_nothing(
    engine: AsyncEngine, settings: Settings
) -> None:
    execute = make_execute(engine, settings)
    later = await ingest_dir(engine, SNAPSHOT, SEED)
    earlier = await ingest_dir(engine, EARLIER)
    query = "{ releases { number lastUpdated digest ingestedAt } }"
    before = ok(await execute(query))
    assert [r["number"] for r in before["releases"]] == [later.release_id, earlier.release_id]
    again_later = await ingest_dir(engine, SNAPSHOT, SEED)
    again_earlier = await ingest_dir(engine, EARLIER)
    assert (again_later.unchanged, again_later.release_id) == (True, later.release_id)
    assert (again_earlier.unchanged, again_earlier.release_id) == (True, earlier.release_id)
    assert again_later.digest == later.digest
    assert again_later.summary().startswith("unchanged")
    assert ok(await execute(query)) == before
    # The same files without a manifest add nothing: the release with the manifest stays served.
    bare = await ingest_dir(engine, SNAPSHOT)
    assert (bare.unchanged, bare.release_id) == (True, later.release_id)
    served = ok(await execute("{ source { release { number } } index { version } }"))
    assert served == {
        "source": {"release": {"number": later.release_id}},
        "index": {"version": "1"},
    }


def relative_difference(a: float, b: float) -> float:
    scale = max(abs(a), abs(b))
    return abs(a - b) / scale if scale else 0.0


def identity_differences(root: Path, task: str) -> tuple[list[float], list[float]]:
    """Per row: energy per request vs per token x length; power ÷ throughput vs per token."""
    found = rows(root, task)
    return (
        [
            relative_difference(
                r["energy_per_request_joules"], r["energy_per_token_joules"] * r["avg_output_len"]
            )
            for r in found
        ],
        [
            relative_difference(
                r["avg_power_watts"] / r["output_throughput_tokens_per_sec"],
                r["energy_per_token_joules"],
            )
            for r in found
        ],
    )


def test_the_identities_hold_as_the_data_notes_say() -> None:
    """On the files alone: energy per request holds everywhere; power ÷ throughput only later."""
    for root in (SNAPSHOT, EARLIER):
        index = read(root, "index.json")
        for task in llm_tasks(index):
            per_request, power = identity_differences(root, task)
            assert max(per_request) <= 1e-9, (root.name, task)
            if root == SNAPSHOT:
                assert max(power) <= 1e-9, task
            else:
                assert min(power) > 1e-6, task


async def test_identity_checks(releases: Releases) -> None:
    data = ok(
        await releases.execute(
            """{ releases { number identityChecks {
                identity statement file rows checked maxRelativeDifference note } } }"""
        )
    )
    checks = {r["number"]: r["identityChecks"] for r in data["releases"]}
    assert checks[releases.later] == []
    expected = []
    for task in llm_tasks(EARLIER_INDEX):
        _, power = identity_differences(EARLIER, task)
        expected.append(
            {
                "identity": "power_over_throughput",
                "file": f"tasks/{task}.json",
                "rows": list(range(len(power))),
                "checked": len(power),
                "maxRelativeDifference": max(power),
            }
        )
    got = checks[releases.earlier]
    assert [{k: v for k, v in c.items() if k not in ("statement", "note")} for c in got] == expected
    for check in got:
        assert check["statement"] == (
            "avg_power_watts ÷ output_throughput_tokens_per_sec = energy_per_token_joules"
        )
        assert "2026-01-01" in check["note"]


UPSTREAM = """query ($r: Int, $task: String!, $model: String) {
  configurations(release: $r, filter: {task: $task, model: $model}, first: 500) {
    totalCount nodes {
      modelId gpuModel numGpus maxNumSeqs tensorParallel dataParallel expertParallel
      energyPerTokenJoules outputThroughputTokensPerSec avgPowerWatts
      source { release { number lastUpdated } }
      upstream { taskFile taskRow modelFile modelRow } } } }"""


def assert_leads_back(node: dict[str, Any], root: Path, task: str) -> None:
    upstream = node["upstream"]
    assert upstream["taskFile"] == f"tasks/{task}.json"
    assert upstream["modelFile"] == model_file(node["modelId"], task)
    task_row = read(root, upstream["taskFile"])["configurations"][upstream["taskRow"]]
    model_row = read(root, upstream["modelFile"])["configurations"][upstream["modelRow"]]
    parallel = model_row["parallelization"]
    served = (
        node["modelId"],
        node["gpuModel"],
        node["numGpus"],
        node["maxNumSeqs"],
        node["tensorParallel"],
        node["dataParallel"],
        node["expertParallel"],
        node["energyPerTokenJoules"],
        node["outputThroughputTokensPerSec"],
        node["avgPowerWatts"],
    )
    measured = ("energy_per_token_joules", "output_throughput_tokens_per_sec", "avg_power_watts")
    assert served == (
        task_row["model_id"],
        task_row["gpu_model"],
        task_row["num_gpus"],
        task_row["max_num_seqs"],
        task_row["tensor_parallel"],
        task_row["data_parallel"],
        task_row["expert_parallel"],
        *(task_row[k] for k in measured),
    )
    assert served == (
        read(root, upstream["modelFile"])["model_id"],
        model_row["gpu_model"],
        model_row["num_gpus"],
        model_row["max_num_seqs"],
        parallel["tensor_parallel"],
        parallel["data_parallel"],
        parallel["expert_parallel"],
        *(model_row[k] for k in measured),
    )


@pytest.mark.parametrize("which", ["later", "earlier"])
async def test_a_configuration_leads_back_to_its_release_and_file_row(
    releases: Releases, which: str
) -> None:
    release_id, root, day = {
        "later": (releases.later, SNAPSHOT, "2026-02-16"),
        "earlier": (releases.earlier, EARLIER, "2025-12-17"),
    }[which]
    data = ok(await releases.execute(UPSTREAM, r=release_id, task=TASK))["configurations"]
    assert data["totalCount"] == len(data["nodes"]) == len(rows(root))
    # Every row of the task file, once each.
    assert sorted(n["upstream"]["taskRow"] for n in data["nodes"]) == list(range(len(rows(root))))
    for node in data["nodes"]:
        assert node["source"] == {"release": {"number": release_id, "lastUpdated": day}}
        assert_leads_back(node, root, TASK)


async def test_configurations_of_other_tasks_lead_back_too(releases: Releases) -> None:
    for task in ("gpqa", "video-chat"):
        data = ok(await releases.execute(UPSTREAM, r=releases.earlier, task=task))
        nodes = data["configurations"]["nodes"]
        assert len(nodes) == len(rows(EARLIER, task))
        for node in nodes:
            assert_leads_back(node, EARLIER, task)


async def test_a_diffusion_configuration_leads_back_to_its_file_row(releases: Releases) -> None:
    task = "text-to-image"
    query = """query ($r: Int) {
      diffusionConfigurations(release: $r, filter: {task: "text-to-image"}, first: 500) {
        nodes { modelId gpuModel numGpus batchSize inferenceSteps ulyssesDegree ringDegree
          ... on ImageConfiguration { energyPerImageJoules imageHeight }
          source { release { number } } upstream { taskFile taskRow modelFile modelRow } } } }"""
    nodes = ok(await releases.execute(query, r=releases.earlier))["diffusionConfigurations"][
        "nodes"
    ]
    assert len(nodes) == 500
    for node in nodes:
        up = node["upstream"]
        assert node["source"] == {"release": {"number": releases.earlier}}
        assert (up["taskFile"], up["modelFile"]) == (
            f"tasks/{task}.json",
            model_file(node["modelId"], task),
        )
        row = read(EARLIER, up["taskFile"])["configurations"][up["taskRow"]]
        detail = read(EARLIER, up["modelFile"])["configurations"][up["modelRow"]]
        served = tuple(node[k] for k in node if k not in ("source", "upstream"))
        assert served == (
            row["model_id"],
            row["gpu_model"],
            row["num_gpus"],
            row["batch_size"],
            row["inference_steps"],
            row["ulysses_degree"],
            row["ring_degree"],
            row["energy_per_image_joules"],
            row["image_height"],
        )
        assert served[1:] == (
            detail["gpu_model"],
            detail["num_gpus"],
            detail["batch_size"],
            detail["inference_steps"],
            detail["parallelization"]["ulysses_degree"],
            detail["parallelization"]["ring_degree"],
            detail["energy_per_image_joules"],
            detail["image_height"],
        )
