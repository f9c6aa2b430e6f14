"""Logs an attacker could flood (the issue's class 8): a scan of bad inputs writes no ERROR and
no traceback (user errors are the request's one line, at INFO); a real bug is logged at ERROR
with its traceback and the request id its client was given."""

from __future__ import annotations

import logging
from pathlib import Path

import pytest

from tests.conftest import app_client

pytestmark = pytest.mark.anyio

CORPUS = Path(__file__).parent / "corpus" / "hostile" / "documents"


async def test_a_scan_of_bad_inputs_logs_no_error_and_no_traceback(
    synthetic_db, client, caplog
) -> None:
    caplog.set_level(logging.DEBUG)
    for path in sorted(CORPUS.glob("*.graphql")):
        await client.post("/graphql", json={"query": path.read_text()})
    for target in (
        "/graphql?query={nope}",
        "/graphql?query={configurations(first:-1){totalCount}}",
        '/graphql?query=query($a:Int){gpus{name}}&variables={"a":"x"}',
        "/graphql?query={",
        "/api/v1/index.json?release=²",
        "/api/v1/models/none.json",
        "/data/../../etc/passwd",
        "/nowhere",
    ):
        await client.get(target)
    await client.post("/graphql", content=b"{", headers={"content-type": "application/json"})
    await client.put("/graphql")
    loud = [r for r in caplog.records if r.levelno >= logging.WARNING or r.exc_info]
    assert not loud, [(r.name, r.levelname, r.getMessage()[:200]) for r in loud]


async def test_a_bug_is_logged_with_its_traceback_and_request_id(
    synthetic_db, settings, caplog
) -> None:
    async def broken(*_args: object) -> None:
        raise RuntimeError("a bug")

    caplog.set_level(logging.INFO)
    async with app_client(settings, execute=broken) as (_, client):
        response = await client.post("/graphql", json={"query": "{ gpus { name } }"})
    [error] = response.json()["errors"]
    assert (response.status_code, error["extensions"]["code"]) == (500, "INTERNAL")
    request_id = error["extensions"]["requestId"]
    [record] = [r for r in caplog.records if r.levelno >= logging.ERROR]
    assert request_id in record.getMessage()
    assert record.exc_info is not None and "a bug" in str(record.exc_info[1])
