"""Memory a client's requests could grow (the issue's class 1): every cache, memo and store is
bounded by bytes within LEADGREEN_CACHE_MAX_BYTES, nothing is kept for what a request sends but
its operation does not use, and the document limit applies before anything is stored.
(bench/hostile.py measures the process's resident memory under thousands of such requests.)
"""

from __future__ import annotations

import hashlib
from typing import Any

import pytest

from graph.caches import Budget
from tests.conftest import app_client

pytestmark = pytest.mark.anyio

BUDGET = 4 * 1024 * 1024  # a small LEADGREEN_CACHE_MAX_BYTES, so that every cache fills


def handler(app: Any) -> Any:
    return app.state.graphql


def documents(app: Any) -> Any:
    return app.state.schema.engine.documents


async def test_variables_an_operation_does_not_declare_are_not_kept(synthetic_db, settings) -> None:
    """Twenty 1 MB bodies of junk variables for `{ __typename }`: answered, and what the
    process keeps for them (requests read, documents, answers) stays within its shares."""
    junk = {f"v{i}": "x" * 1000 for i in range(1000)}
    async with app_client(settings, cache_max_bytes=BUDGET) as (app, client):
        for n in range(20):
            body = {"query": "{ __typename }", "variables": {**junk, "n": n}}
            response = await client.post("/graphql", json=body)
            assert response.json()["data"] == {"__typename": "Query"}
        budget = Budget(BUDGET)
        assert handler(app).reader._read.bytes <= budget.requests
        assert documents(app).bytes <= budget.documents
        assert len(documents(app)) == 1  # one document, whatever the variables


async def test_a_persisted_query_past_the_document_limit_is_never_stored(
    synthetic_db, settings
) -> None:
    document = "{ __typename }" + " " * 1_000_000
    sha = hashlib.sha256(document.encode()).hexdigest()
    persisted = {"persistedQuery": {"version": 1, "sha256Hash": sha}}
    async with app_client(settings, cache_max_bytes=BUDGET) as (app, client):
        response = await client.post("/graphql", json={"query": document, "extensions": persisted})
        assert [e["extensions"]["code"] for e in response.json()["errors"]] == [
            "DOCUMENT_TOO_LARGE"
        ]
        again = await client.post("/graphql", json={"extensions": persisted})
        assert [e["extensions"]["code"] for e in again.json()["errors"]] == [
            "PERSISTED_QUERY_NOT_FOUND"
        ]
        assert len(handler(app).persisted._local) == 0


async def test_distinct_documents_are_kept_within_their_share(synthetic_db, settings) -> None:
    """Documents of 60 KB (about 6 MB each once parsed), each new: the parsed documents and
    their memos stay within the documents' share of the budget (least recently used out
    first; one larger than the whole share would not be kept at all)."""
    budget = 64 * 1024 * 1024
    async with app_client(settings, cache_max_bytes=budget) as (app, client):
        for n in range(12):
            document = "{ gpus { name } }" + " " * 60_000 + f"# {n}"
            response = await client.post("/graphql", json={"query": document})
            assert "errors" not in response.json()
        kept = documents(app)
        assert 0 < len(kept) < 12
        assert kept.bytes <= Budget(budget).documents
