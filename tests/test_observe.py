"""Logs: the request log (one JSON line per request, user errors one line without a traceback),
and every other log record as JSON with its request id (the metrics: test_metrics.py)."""

from __future__ import annotations

import io
import json
import logging
import re
from typing import Any

import pytest

from graph.server.documents import MODEL_PAGE
from graph.server.observability import NOTE, Note, RequestLog, formatter
from tests.conftest import ROOT, app_client
from tests.test_cache import QUERY

pytestmark = pytest.mark.anyio

PAGE = {"query": MODEL_PAGE, "variables": {"slug": "tiny-1b"}}
TOO_MANY = "{ configurations(first: 100000) { totalCount } }"


def lines(app: Any) -> list[dict[str, Any]]:
    log = app.state.request_log
    log.flush()
    return [json.loads(line) for line in log.stream.getvalue().splitlines()]


def logged(app: Any) -> None:
    app.state.request_log.stream = io.StringIO()


async def test_one_line_per_request(synthetic_db, settings) -> None:
    async with app_client(settings) as (app, client):
        logged(app)
        miss = await client.post("/graphql", json=PAGE, headers={"x-request-id": "page-1"})
        hit = await client.post("/graphql", json=PAGE)
        named = await client.post("/graphql", json={"query": "query Gpus { gpus { name } }"})
        document = await client.get("/api/v1/index.json")
        [*requests] = lines(app)
    assert [r.status_code for r in (miss, hit, named, document)] == [200] * 4
    durations = [line.pop("duration_ms") for line in requests]
    stamps = [line.pop("timestamp") for line in requests]
    assert all(isinstance(d, float) and d >= 0 for d in durations)
    assert all(s.endswith("Z") and len(s) == len("2030-01-02T03:04:05.678Z") for s in stamps)
    page_cost = miss.json()["extensions"]["cost"]["actualQueryCost"]
    common = {"level": "info", "logger": "leadgreen.request", "event": "request", "status": 200}
    graphql = {**common, "method": "POST", "path": "/graphql"}
    assert requests == [
        {
            **graphql,
            "request_id": "page-1",
            "operation": "ModelPage",
            "cache": "miss",
            "cost": page_cost,
        },
        {
            **graphql,
            "request_id": hit.headers["x-request-id"],
            "operation": "ModelPage",
            "cache": "hit",
            "cost": page_cost,
        },
        {
            **graphql,
            "request_id": named.headers["x-request-id"],
            "operation": "Gpus",
            "cache": "miss",
            "cost": named.json()["extensions"]["cost"]["actualQueryCost"],
        },
        {
            **common,
            "request_id": document.headers["x-request-id"],
            "method": "GET",
            "path": "/api/v1/index.json",
        },
    ]
    # The line the README and docs/operations.md show has the keys of a hit's line.
    hit_keys = sorted([*requests[1], "duration_ms", "timestamp"])
    for page in (ROOT / "README.md", ROOT / "docs" / "operations.md"):
        shown = re.search(r'^\{"timestamp".*"event":"request".*\}$', page.read_text(), re.M)
        assert shown is not None, page
        assert sorted(json.loads(shown.group(0))) == hit_keys, page


async def test_user_errors_are_one_line_without_a_traceback(synthetic_db, settings, caplog):
    async with app_client(settings) as (app, client):
        logged(app)
        with caplog.at_level(logging.INFO):
            out_of_range = await client.post("/graphql", json={"query": TOO_MANY})
            refused = await client.post("/graphql", content=b"{", headers=JSON)
            missing = await client.get("/data/nowhere.json")
        requests = lines(app)
    assert [r.status_code for r in (out_of_range, refused, missing)] == [200, 400, 404]
    assert [(r["level"], r["status"], r["code"]) for r in requests] == [
        ("info", 200, "BAD_USER_INPUT"),
        ("info", 400, "BAD_REQUEST"),
        ("info", 404, "NOT_FOUND"),
    ]
    assert requests[0]["message"] == "`first` must be between 0 and 1000, got 100000"
    assert [r for r in caplog.records if r.levelno >= logging.WARNING or r.exc_info] == []


async def test_a_fault_is_logged_at_error(synthetic_db, settings) -> None:
    async def broken(*_args: Any) -> Any:
        raise RuntimeError("a bug")

    async with app_client(settings, execute=broken) as (app, client):
        logged(app)
        await client.post("/graphql", json={"query": QUERY})
        [line] = lines(app)
    assert (line["level"], line["status"], line["code"]) == ("error", 500, "INTERNAL")


async def test_the_log_level_leaves_out_the_request_lines(synthetic_db, settings) -> None:
    async with app_client(settings, log_level="warning") as (app, client):
        logged(app)
        await client.post("/graphql", json={"query": QUERY})
        assert lines(app) == []


def test_other_records_are_json_with_their_request_id() -> None:
    record = logging.LogRecord(
        "leadgreen", logging.WARNING, __file__, 1, "redis %s", ("down",), None
    )
    token = NOTE.set(Note(b"req-9", ()))
    try:
        line = json.loads(formatter().format(record))
    finally:
        NOTE.reset(token)
    assert line.pop("timestamp").endswith("Z")
    assert line == {
        "event": "redis down",
        "level": "warning",
        "logger": "leadgreen",
        "request_id": "req-9",
    }


def test_lines_are_written_in_batches() -> None:
    stream = io.StringIO()
    log = RequestLog(stream=stream, clock=lambda: 100.5)
    note = Note(b"r-1", ())
    note.status = 200
    log.add(note, "GET", '/data/"quoted"', "/data", 100.0)  # no event loop:
    [line] = stream.getvalue().splitlines()  # written at once
    assert json.loads(line)["path"] == '/data/"quoted"'
    assert json.loads(line)["duration_ms"] == 500


JSON = {"content-type": "application/json"}
