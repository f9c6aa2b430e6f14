"""Documents over HTTP: the v1 index and per-model documents, and the upstream files under
/data/, generated from the database, with ETag, Cache-Control and JSON 404s.

Expected values are the seed and the snapshot files, read here with `json`.
"""

from __future__ import annotations

import hashlib
import json
from pathlib import Path
from typing import Any
from urllib.parse import urlsplit

import httpx
import pytest
from sqlalchemy.ext.asyncio import AsyncEngine

from graph.settings import Settings
from tests.conftest import EARLIER, LLM_ROW_KEYS, SEED, SNAPSHOT, app_client, ingest_dir

pytestmark = pytest.mark.anyio

TASK = "lm-arena-chat"
# Thermal design power per GPU, in watts (NVIDIA datasheets).
TDP = {"H100": 700.0, "B200": 1000.0}
ORPHAN = "models/nvidia__NVIDIA-Nemotron-Nano-12B-v2-VL-BF16__video-chat.json"


def read_files(root: Path) -> dict[str, Any]:
    return {
        path.relative_to(root).as_posix(): json.loads(path.read_text())
        for path in root.rglob("*.json")
    }


SEED_DOC: dict[str, Any] = json.loads(SEED.read_text())
LATER = read_files(SNAPSHOT)
EARLIER_FILES = read_files(EARLIER)


def camel(snake: str) -> str:
    head, *rest = snake.split("_")
    return head + "".join(part[:1].upper() + part[1:] for part in rest)


def with_host(url: str, netloc: str) -> str:
    parts = urlsplit(url)
    return parts._replace(netloc=netloc).geturl()


def assert_json_ok(response: httpx.Response) -> Any:
    assert response.status_code == 200, response.text
    assert response.headers["content-type"] == "application/json"
    assert response.headers["cache-control"] == "public, max-age=60"
    assert response.headers["etag"]
    return response.json()


def assert_not_found(response: httpx.Response, *mentions: str) -> None:
    assert response.status_code == 404
    assert response.headers["content-type"] == "application/json"
    assert response.headers["cache-control"] == "no-store"
    assert "etag" not in response.headers
    body = response.json()
    assert list(body) == ["error"]
    assert list(body["error"]) == ["code", "message"]
    assert body["error"]["code"] == "NOT_FOUND"
    message = body["error"]["message"]
    assert isinstance(message, str)
    for mention in mentions:
        assert mention in message


async def assert_revalidates(client: httpx.AsyncClient, path: str) -> None:
    """The ETag is stable, and sending it back answers 304 with no body."""
    first = await client.get(path)
    second = await client.get(path)
    etag = first.headers["etag"]
    assert second.headers["etag"] == etag
    unchanged = await client.get(path, headers={"If-None-Match": etag})
    assert unchanged.status_code == 304
    assert unchanged.content == b""
    assert unchanged.headers["etag"] == etag
    changed = await client.get(path, headers={"If-None-Match": '"not-it"'})
    assert changed.status_code == 200
    assert changed.json() == first.json()


# --- The v1 index ------------------------------------------------------------------------------


async def test_v1_index_equals_the_seed(engine: AsyncEngine, client: httpx.AsyncClient) -> None:
    await ingest_dir(engine, SNAPSHOT, SEED)
    response = await client.get("/api/v1/index.json")
    assert assert_json_ok(response) == SEED_DOC
    await assert_revalidates(client, "/api/v1/index.json")


async def test_v1_index_links_follow_the_public_base_url(
    engine: AsyncEngine, settings: Settings
) -> None:
    await ingest_dir(engine, SNAPSHOT, SEED)
    configured = settings.model_copy(
        update={"public_base_url": "https://api.example.org", "http_max_age": 7}
    )
    async with app_client(configured) as (_, client):
        response = await client.get("/api/v1/index.json")
    assert response.status_code == 200
    assert response.headers["cache-control"] == "public, max-age=7"
    expected = {
        **SEED_DOC,
        "models": [
            {
                **entry,
                "url": with_host(entry["url"], "api.example.org"),
                "page": with_host(entry["page"], "api.example.org"),
            }
            for entry in SEED_DOC["models"]
        ],
    }
    assert response.json() == expected
    # Only the host changed: the seed's own host was another one.
    assert all(urlsplit(e["url"]).netloc != "api.example.org" for e in SEED_DOC["models"])
    assert (
        expected["models"][0]["url"] == "https://api.example.org/api/v1/models/deepseek-v3-1.json"
    )


async def test_v1_model_document_links_agree_with_the_index(
    engine: AsyncEngine, settings: Settings
) -> None:
    await ingest_dir(engine, SNAPSHOT, SEED)
    configured = settings.model_copy(update={"public_base_url": "https://api.example.org"})
    async with app_client(configured) as (_, client):
        index = (await client.get("/api/v1/index.json")).json()
        entry = index["models"][0]
        document = (await client.get(urlsplit(entry["url"]).path)).json()
    assert (document["model"]["url"], document["model"]["page"]) == (entry["url"], entry["page"])


# --- The v1 per-model documents ----------------------------------------------------------------

ROW_KEYS = LLM_ROW_KEYS
SOURCE_KEYS = (
    "name",
    "publisher",
    "url",
    "data_url",
    "version",
    "compiled",
    "retrieved",
    "licence",
    "licence_evidence",
    "method",
    "cite",
    "cite_url",
)


def expected_configuration(row: dict[str, Any]) -> dict[str, Any]:
    per_gpu = row["avg_power_watts"] / row["num_gpus"]
    return {
        **{camel(k): row[k] for k in ROW_KEYS},
        "powerPerGpuWatts": per_gpu,
        "fractionOfTdp": per_gpu / TDP[row["gpu_model"]],
    }


async def test_v1_model_documents(engine: AsyncEngine, client: httpx.AsyncClient) -> None:
    await ingest_dir(engine, SNAPSHOT, SEED)
    rows = LATER[f"tasks/{TASK}.json"]["configurations"]
    facts = LATER["index.json"]["models"]
    expected_source = {
        **{camel(k): SEED_DOC["source"][k] for k in SOURCE_KEYS},
        "release": {"lastUpdated": "2026-02-16", "upstreamCommit": None},
    }
    for entry in SEED_DOC["models"]:
        # Where the index's `url` points.
        path = urlsplit(entry["url"]).path
        assert path == f"/api/v1/models/{entry['slug']}.json"
        document = assert_json_ok(await client.get(path))
        assert sorted(document) == ["model", "source"]
        model = document["model"]
        assert {k: model[camel(k)] for k in entry} == entry
        assert (model["architecture"], model["weightPrecision"]) == (
            facts[entry["model_id"]]["architecture"],
            facts[entry["model_id"]]["weight_precision"],
        )
        configurations = model["configurations"]
        ids = [c.pop("id") for c in configurations]
        assert len(set(ids)) == len(ids)
        assert configurations == [
            expected_configuration(r) for r in rows if r["model_id"] == entry["model_id"]
        ]
        # Curves and measured power: every configuration is a point of one curve, and power
        # is summarised per GPU the model ran on.
        points = sorted(
            (p["maxNumSeqs"], p["energyPerTokenJoules"])
            for series in model["curves"]
            for p in series["points"]
        )
        assert points == sorted(
            (c["maxNumSeqs"], c["energyPerTokenJoules"]) for c in configurations
        )
        assert sorted(p["gpuModel"] for p in model["power"]) == sorted(entry["gpus"])
        assert {p["gpuModel"]: p["configurations"] for p in model["power"]} == {
            gpu: sum(c["gpuModel"] == gpu for c in configurations) for gpu in entry["gpus"]
        }
        assert document["source"] == expected_source
    await assert_revalidates(client, "/api/v1/models/qwen-3-8b.json")


async def test_v1_unknown_model_is_a_json_404(
    engine: AsyncEngine, client: httpx.AsyncClient
) -> None:
    await ingest_dir(engine, SNAPSHOT, SEED)
    response = await client.get("/api/v1/models/no-such-model.json")
    assert_not_found(response, "no-such-model", "/api/v1/index.json")
    # A model id is not a slug.
    assert_not_found(await client.get("/api/v1/models/Qwen__Qwen3-8B.json"))


async def test_documents_of_an_empty_database_are_json_404s(client: httpx.AsyncClient) -> None:
    for path in ("/api/v1/index.json", "/api/v1/models/qwen-3-8b.json", "/data/index.json"):
        assert_not_found(await client.get(path))


# --- The upstream layout under /data/ ------------------------------------------------------------


async def test_data_serves_every_file_of_the_snapshot(
    engine: AsyncEngine, client: httpx.AsyncClient
) -> None:
    await ingest_dir(engine, SNAPSHOT, SEED)
    tasks = LATER["index.json"]["tasks"]
    assert len(tasks) == 7
    model_files = [p for p in LATER if p.startswith("models/")]
    assert len(model_files) == 62
    paths = ["index.json", *(f"tasks/{t}.json" for t in tasks), *model_files]
    assert sorted(paths) == sorted(LATER)
    served = {path: assert_json_ok(await client.get(f"/data/{path}")) for path in paths}
    assert [p for p in paths if served[p] != LATER[p]] == []
    await assert_revalidates(client, "/data/tasks/lm-arena-chat.json")
    # A file's ETag is its published SHA-256 (Release.files), the same one `sha256sum` gives.
    published = (SNAPSHOT / "tasks" / "lm-arena-chat.json").read_bytes()
    response = await client.get("/data/tasks/lm-arena-chat.json")
    assert response.headers["etag"] == f'W/"{hashlib.sha256(published).hexdigest()}"'
    assert response.content == published
    assert_not_found(await client.get("/data/tasks/no-such-task.json"), "no-such-task")
    assert_not_found(await client.get(f"/data/{ORPHAN}"))


async def test_release_parameter_selects_another_release(
    engine: AsyncEngine, client: httpx.AsyncClient
) -> None:
    later = (await ingest_dir(engine, SNAPSHOT, SEED)).release_id
    earlier = (await ingest_dir(engine, EARLIER)).release_id

    # The newest data by default, though the older data was ingested last.
    assert (await client.get("/data/index.json")).json() == LATER["index.json"]
    assert (await client.get(f"/data/index.json?release={later}")).json() == LATER["index.json"]
    for path in ("index.json", f"tasks/{TASK}.json", ORPHAN, "models/Qwen__Qwen3-8B__gpqa.json"):
        body = assert_json_ok(await client.get(f"/data/{path}?release={earlier}"))
        assert body == EARLIER_FILES[path]
    # Alternating releases does not mix their files up.
    assert (await client.get(f"/data/tasks/{TASK}.json")).json() == LATER[f"tasks/{TASK}.json"]

    # No manifest describes the earlier data: its index is its own (its lm-arena-chat models,
    # the GPUs they were measured on), and claims none of the manifest's statements.
    index = assert_json_ok(await client.get(f"/api/v1/index.json?release={earlier}"))
    rows = EARLIER_FILES[f"tasks/{TASK}.json"]["configurations"]
    gpus: dict[str, set[str]] = {}
    for row in rows:
        gpus.setdefault(row["model_id"], set()).add(row["gpu_model"])
    assert (index["version"], index["updated"], index["data_version"]) == (None, None, None)
    assert [(m["model_id"], m["gpus"], m["url"], m["page"]) for m in index["models"]] == [
        (model_id, sorted(names), None, None) for model_id, names in gpus.items()
    ]
    seed_source = SEED_DOC["source"]
    assert index["source"]["compiled"] == "2025-12-17"
    assert index["source"]["retrieved"] != seed_source["retrieved"]
    for statement in ("released", "version", "licence", "licence_evidence", "configurations"):
        assert index["source"][statement] is None
    assert assert_json_ok(await client.get(f"/api/v1/index.json?release={later}")) == SEED_DOC

    earlier_rows = [
        r
        for r in EARLIER_FILES[f"tasks/{TASK}.json"]["configurations"]
        if r["model_id"] == "Qwen/Qwen3-8B"
    ]
    document = assert_json_ok(await client.get(f"/api/v1/models/qwen-3-8b.json?release={earlier}"))
    assert [c["outputThroughputTokensPerSec"] for c in document["model"]["configurations"]] == [
        r["output_throughput_tokens_per_sec"] for r in earlier_rows
    ]
    assert document["source"]["release"]["lastUpdated"] == "2025-12-17"


async def test_unknown_release_is_a_json_404(
    engine: AsyncEngine, client: httpx.AsyncClient
) -> None:
    release = (await ingest_dir(engine, SNAPSHOT, SEED)).release_id
    for query in (str(release + 1), "0", "999999999"):
        for path in ("/api/v1/index.json", "/api/v1/models/qwen-3-8b.json", "/data/index.json"):
            assert_not_found(await client.get(f"{path}?release={query}"), "release")
    # What is not a release number is a 400 that says so, whatever it is.
    for query in ("-1", "latest", "²", "1.0", "99999999999999999999999", "%00", "1 "):
        for path in ("/api/v1/index.json", "/api/v1/models/qwen-3-8b.json", "/data/index.json"):
            response = await client.get(path, params={"release": query})
            assert response.status_code == 400, (path, query)
            assert response.json()["error"]["code"] == "BAD_USER_INPUT"
    # An empty value means no choice: the latest release.
    assert (await client.get("/data/index.json?release=")).status_code == 200
