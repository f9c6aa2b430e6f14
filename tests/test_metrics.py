"""Prometheus metrics at /metrics: requests by route, operation and status, latency, the response
cache, rate-limit refusals, the release; bounded labels; shared by the workers of `leadgreen
serve --workers N`."""

from __future__ import annotations

import json
import os
import re
import subprocess
import sys
from pathlib import Path
from typing import Any

import anyio
import httpx
import pytest
from click.testing import CliRunner
from prometheus_client import Histogram
from prometheus_client.parser import text_string_to_metric_families

from graph.cli import main, where
from graph.internals import add_to_histogram
from graph.server.documents import MODEL_PAGE
from graph.server.observability import FOLD_SECONDS, MAX_OPERATIONS, Metrics, ingest_metrics
from graph.server.protocol import first_operation
from graph.settings import Settings
from tests.conftest import ROOT, app_client
from tests.live import answering, free_port, wait_until

pytestmark = pytest.mark.anyio

PAGE = {"query": MODEL_PAGE, "variables": {"slug": "tiny-1b"}}
TOO_MANY = "{ configurations(first: 100000) { totalCount } }"


def samples(text: str) -> dict[tuple[str, tuple[tuple[str, str], ...]], float]:
    return {
        (sample.name, tuple(sorted(sample.labels.items()))): sample.value
        for family in text_string_to_metric_families(text)
        for sample in family.samples
    }


async def test_metrics(synthetic_db, settings) -> None:
    async with app_client(settings) as (app, client):
        for _ in range(4):
            await client.post("/graphql", json=PAGE)
        await client.post("/graphql", json={"query": TOO_MANY})
        await client.get("/api/v1/index.json")
        app.state.metrics.add("/graphql", "ModelPage", 429, None, 0.001)  # as throttled
        text = (await client.get("/metrics")).text
    found = samples(text)

    def value(name: str, **labels: str) -> float:
        return found.get((name, tuple(sorted(labels.items()))), 0.0)

    page = {"route": "/graphql", "operation": "ModelPage"}
    assert value("leadgreen_requests_total", **page, status="200") == 4
    assert value("leadgreen_requests_total", **page, status="429") == 1
    anonymous = {"route": "/graphql", "operation": "anonymous"}
    assert value("leadgreen_requests_total", **anonymous, status="200") == 1
    assert value("leadgreen_requests_total", route="/api/v1", operation="", status="200") == 1
    assert value("leadgreen_request_duration_seconds_bucket", **page, le="+Inf") == 5
    assert value("leadgreen_request_duration_seconds_count", **page) == 5
    assert value("leadgreen_response_cache_total", result="hit") == 3
    assert value("leadgreen_response_cache_total", result="miss") == 1
    assert value("leadgreen_rate_limit_refusals_total") == 1
    assert value("leadgreen_release") == 1
    assert "process_resident_memory_bytes" in text


async def test_metrics_can_be_off(synthetic_db, settings) -> None:
    async with app_client(settings, metrics=False) as (app, client):
        response = await client.get("/metrics")
    assert response.status_code == 404
    assert app.state.metrics is None


def test_operation_names_are_bounded() -> None:
    metrics = Metrics()
    for n in range(MAX_OPERATIONS + 10):
        metrics.add("/graphql", f"Op{n}", 200, b"MISS", 0.001)
    metrics.add("/graphql", "not a name!", 200, None, 0.001)
    metrics.add("/graphql", "", 200, None, 0.001)
    metrics.add("/healthz", None, 200, None, 0.001)
    metrics.fold()
    labels = {key[1] for key in metrics._folded}
    assert len(labels) == MAX_OPERATIONS + 3
    assert {"other", "anonymous", ""} <= labels


@pytest.mark.parametrize(
    ("document", "operation"),
    [
        ("query Gpus { gpus { name } }", "Gpus"),
        ("# query Secret\n{ gpus { name } }", None),
        ('{ model(slug: "query Secret") { name } }', None),
        ("query { gpus { name } }", None),
        ("query ($n: Int) { configurations(first: $n) { totalCount } }", None),
        ("fragment G on Query { gpus { name } } query Named { ...G }", "Named"),
        ("mutation Change { x }", "Change"),
        ("{ gpus {", None),
        ("query \u0000", None),
    ],
)
def test_the_operation_is_named_by_the_document(document: str, operation: str | None) -> None:
    """The name is GraphQL's lexer's reading of the document: a comment or a string that says
    `query Secret` names nothing."""
    assert first_operation(document) == operation


async def test_a_comment_does_not_name_the_operation(synthetic_db, settings) -> None:
    async with app_client(settings) as (_, client):
        await client.post("/graphql", json={"query": "# query Secret\n{ gpus { name } }"})
        await client.post("/graphql", json={"query": "query Gpus { gpus { name } }"})
        await client.post("/graphql", json={"query": "{ gpus { name } }", "operationName": None})
        text = (await client.get("/metrics")).text
    operations = {
        dict(labels)["operation"]: value
        for (name, labels), value in samples(text).items()
        if name == "leadgreen_requests_total" and dict(labels)["route"] == "/graphql"
    }
    assert operations == {"anonymous": 2, "Gpus": 1}


def test_adding_buckets_at_once_is_observing_each() -> None:
    seconds = [0.0001, 0.0007, 0.003, 0.003, 0.2, 42.0]
    one, each = (Histogram("t", "t", buckets=(0.001, 0.01, 1.0), registry=None) for _ in range(2))
    for value in seconds:
        each.observe(value)
    add_to_histogram(one, [2, 2, 1, 1], sum(seconds))
    assert list(one.collect()[0].samples)[:-1] == list(each.collect()[0].samples)[:-1]


@pytest.mark.slow
def test_several_processes_share_their_metrics(tmp_path) -> None:
    """prometheus-client's multiprocess mode: what two processes counted, either shows."""
    script = (
        "import asyncio, sys\n"
        "from graph.server.observability import Metrics\n"
        "m = Metrics()\n"
        "m.add('/graphql', 'Page', 200, b'HIT', 0.001)\n"
        "m.fold()\n"
        "if sys.argv[1] == 'show':\n"
        "    from prometheus_client import generate_latest\n"
        "    print(generate_latest(m.registry).decode())\n"
    )
    env = {**os.environ, "PROMETHEUS_MULTIPROC_DIR": str(tmp_path)}
    run = [sys.executable, "-c", script]
    subprocess.run([*run, "count"], env=env, cwd=ROOT, check=True)
    shown = subprocess.run([*run, "show"], env=env, cwd=ROOT, check=True, capture_output=True)
    found = samples(shown.stdout.decode())
    labels = (("operation", "Page"), ("route", "/graphql"), ("status", "200"))
    assert found[("leadgreen_requests_total", labels)] == 2
    assert found[("leadgreen_response_cache_total", (("result", "hit"),))] == 2


@pytest.mark.slow
async def test_serve_with_workers_logs_json_and_shares_metrics(
    synthetic_db, database_url, synthetic_dir, tmp_path
) -> None:
    """`leadgreen serve --workers 2`: JSON lines only, and /metrics counts every worker's."""
    await anyio.to_thread.run_sync(serve_with_workers, database_url, synthetic_dir, tmp_path)


def serve_with_workers(database_url: str, synthetic_dir: Path, tmp_path: Path) -> None:
    port = free_port()
    env = {
        **os.environ,
        "LEADGREEN_DATABASE_URL": database_url,
        "LEADGREEN_SOURCE": str(synthetic_dir),
        "LEADGREEN_GRAPHIQL": "false",
        "LEADGREEN_PORT": str(port),
        "LEADGREEN_WORKERS": "2",
    }
    env.pop("PROMETHEUS_MULTIPROC_DIR", None)
    output = tmp_path / "serve.log"
    said = tmp_path / "serve.err"
    with output.open("wb") as out, said.open("wb") as err:
        server = subprocess.Popen(
            [str(Path(sys.executable).parent / "leadgreen"), "serve"],
            env=env,
            cwd=ROOT,
            stdout=out,
            stderr=err,
        )
    try:
        base = f"http://127.0.0.1:{port}"
        answering(base + "/healthz", server, output, timeout=60)
        for _ in range(20):  # a connection each: the workers share them out
            with httpx.Client() as client:
                assert client.post(base + "/graphql", json=PAGE).status_code == 200
        labels = (("operation", "ModelPage"), ("route", "/graphql"), ("status", "200"))

        def counted() -> int:
            found = samples(httpx.get(base + "/metrics").text)
            return found.get(("leadgreen_requests_total", labels), 0)

        # Each worker folds its tallies every FOLD_SECONDS: every worker's, once both have.
        wait_until(lambda: counted() == 20, 10 * FOLD_SECONDS, "every worker's requests")
        assert [counted() for _ in range(4)] == [20] * 4
    finally:
        server.terminate()
        server.wait(timeout=30)
    # stdout holds JSON lines only; what serve says to a person is on stderr.
    records = [json.loads(line) for line in output.read_text().splitlines() if line.strip()]
    told = Settings(database_url=database_url, manifest=None, graphiql=False, port=port)
    notice = [line for line in said.read_text().splitlines() if line.startswith("database:")]
    assert notice == where(told)[:1]
    requests = [r for r in records if r.get("event") == "request" and r["path"] == "/graphql"]
    assert len(requests) == 20
    assert {r["logger"] for r in records} >= {"leadgreen.request", "uvicorn.error"}


async def test_ingests_are_counted_and_can_be_written_out(database_url, synthetic_dir, tmp_path):
    """`leadgreen ingest --metrics-file`: the duration and outcome, for a textfile collector."""
    written = tmp_path / "ingest.prom"
    manifest = str(synthetic_dir.parent / "manifest.json")

    def ingest(*args: str) -> Any:
        command = ["ingest", *args, "--database-url", database_url, "--manifest", manifest]
        return CliRunner().invoke(main, [*command, "--metrics-file", str(written)])

    before = _ingests(ingest_metrics()[0])
    first = await anyio.to_thread.run_sync(ingest, str(synthetic_dir))
    again = await anyio.to_thread.run_sync(ingest, str(synthetic_dir))
    failed = await anyio.to_thread.run_sync(ingest, str(tmp_path / "nowhere"))
    assert [r.exit_code for r in (first, again, failed)] == [0, 0, 1]
    after = _ingests(ingest_metrics()[0])
    assert {k: after[k] - before.get(k, 0) for k in after} == {
        "ingested": 1,
        "unchanged": 1,
        "failed": 1,
    }
    found = samples(written.read_text())
    assert found[("leadgreen_ingests_total", (("outcome", "failed"),))] >= 1
    assert ("leadgreen_ingest_duration_seconds_count", (("outcome", "ingested"),)) in found


def _ingests(counter: Any) -> dict[str, float]:
    return {
        sample.labels["outcome"]: sample.value
        for sample in counter.collect()[0].samples
        if sample.name.endswith("_total")
    }


async def test_the_readme_and_operations_page_list_every_metric(synthetic_db, settings) -> None:
    """Every LeadGreen metric /metrics serves is named in the README and in docs/operations.md,
    with its labels where it has samples; and nothing is named there that it does not serve."""
    async with app_client(settings) as (_, client):
        await client.post("/graphql", json=PAGE)
        text = (await client.get("/metrics")).text
    served = {
        family.name + ("_total" if family.type == "counter" else ""): sorted(
            {k for s in family.samples for k in s.labels if k != "le"}
        )
        for family in text_string_to_metric_families(text)
        if family.name.startswith("leadgreen_") and not family.name.endswith("_created")
    }
    for page in (ROOT / "README.md", ROOT / "docs" / "operations.md"):
        written = page.read_text(encoding="utf-8")
        named = set(re.findall(r"`(leadgreen_[a-z_]+)(?:\{([a-z,]+)\})?`", written))
        assert {name for name, _ in named} == set(served), page
        for name, labels in named:  # (an ingest's have no sample in a serving process)
            if labels and served[name]:
                assert sorted(labels.split(",")) == served[name], (page, name)
