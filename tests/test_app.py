"""HTTP through the ASGI app: GraphQL over POST and GET, health, CORS (GraphiQL: test_graphiql)."""

from __future__ import annotations

import re

import pytest
from starlette.types import ASGIApp, Message, Receive, Scope, Send

from graph.engine.limits import Limits
from graph.server.documents import INDEX_QUERY, MODEL_PAGE
from graph.settings import Settings
from tests.conftest import app_client
from tests.reports import cost

pytestmark = pytest.mark.anyio


async def test_post_and_get(synthetic_db, client) -> None:
    query = '{ model(slug: "tiny-1b") { name paramsB } }'
    expected = {
        "data": {"model": {"name": "Tiny 1B", "paramsB": 1.0}},
        "extensions": {"cost": {"requestedQueryCost": 3, "actualQueryCost": 3}},
    }
    posted = await client.post("/graphql", json={"query": query})
    assert (posted.status_code, posted.json()) == (200, expected)
    got = await client.get("/graphql", params={"query": query})
    assert (got.status_code, got.json()) == (200, expected)


async def test_a_middleware_added_to_the_app_sees_graphql(synthetic_db, settings) -> None:
    """The edge is ordinary middleware in Starlette's stack: what a user adds with
    `add_middleware` sees every request, /graphql's too, and its response as sent."""
    seen: list[tuple[str, int, bool]] = []

    class Recorder:
        def __init__(self, app: ASGIApp) -> None:
            self.app = app

        async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
            async def sending(message: Message) -> None:
                if message["type"] == "http.response.start":
                    names = {name for name, _ in message["headers"]}
                    seen.append((scope["path"], message["status"], b"x-request-id" in names))
                await send(message)

            await self.app(scope, receive, sending)

    async with app_client(settings) as (app, client):
        app.add_middleware(Recorder)  # (Starlette builds its stack at the first request)
        await client.post("/graphql", json={"query": "{ gpus { name } }"})
        await client.get("/graphql", params={"query": "{ gpus { name } }"})
        await client.get("/healthz")
    assert seen == [("/graphql", 200, True), ("/graphql", 200, True), ("/healthz", 200, True)]


HOME = {
    "name": "LeadGreen",
    "about": "A GraphQL API over the ML.ENERGY Leaderboard's measured energy of LLM inference",
    "documentation": "The schema describes every type and field (GraphiQL's Docs, or "
    "introspection); the guide is the project's docs/ (README.md first)",
    "endpoints": {
        "/graphql": "GraphQL over HTTP: POST a JSON body, or GET with ?query=; GraphiQL for a "
        "browser",
        "/api/v1/index.json": "the v1 documents: the index, and each model's page at "
        "/api/v1/models/{slug}.json",
        "/api/v1/configurations.csv": "the configurations as CSV (or .parquet), filtered by "
        "the query parameters the `configurations` filter takes",
        "/data/index.json": "each release's upstream files, byte for byte (/data/tasks/..., "
        "/data/models/...); ?release=N for an older one",
        "/healthz": "is the process alive",
        "/readyz": "is it ready: the database answers and a release is read",
        "/metrics": "Prometheus metrics",
    },
}


async def test_the_root_says_where_things_are(synthetic_db, client) -> None:
    """A newcomer's first request: JSON for a client, a page of links for a browser."""
    answer = await client.get("/")
    page = await client.get("/", headers={"accept": "text/html,*/*;q=0.8"})
    assert (answer.status_code, answer.headers["content-type"], answer.json()) == (
        200,
        "application/json",
        HOME,
    )
    assert (page.status_code, page.headers["content-type"]) == (200, "text/html; charset=utf-8")
    links = re.findall(r'<a href="([^"]+)">', page.text)
    assert links == list(HOME["endpoints"])
    for path in links:  # each place answers (GraphiQL's page is not built here: JSON asked)
        found = await client.get(path, headers={"accept": "application/json"})
        assert found.status_code == (400 if path == "/graphql" else 200), path


async def test_healthz(synthetic_db, client) -> None:
    response = await client.get("/healthz")
    assert response.json() == {"status": "ok", "release": 1, "lastUpdated": "2030-01-02"}


async def test_healthz_on_an_empty_database(client) -> None:
    response = await client.get("/healthz")
    assert (response.status_code, response.json()) == (
        200,
        {"status": "ok", "release": None, "lastUpdated": None},
    )


async def test_healthz_is_liveness_and_readyz_asks_the_database() -> None:
    """A database out of reach does not make the process look dead (an orchestrator would
    restart every replica for it): /healthz is 200; /readyz says 503."""
    away = Settings(database_url="postgresql+asyncpg://postgres@127.0.0.1:9/none")
    async with app_client(away, started=False) as (_, client):
        health = await client.get("/healthz")
        ready = await client.get("/readyz")
    assert (health.status_code, health.json()) == (
        200,
        {"status": "ok", "release": None, "lastUpdated": None},
    )
    assert (ready.status_code, ready.json()) == (
        503,
        {"status": "unavailable", "reason": "database unreachable", "code": "DATABASE_UNAVAILABLE"},
    )


async def test_cors_for_configured_origins(synthetic_db, settings) -> None:
    configured = settings.model_copy(update={"cors_origins": ["https://app.example"]})
    async with app_client(configured) as (_, client):
        preflight = await client.options(
            "/graphql",
            headers={
                "origin": "https://app.example",
                "access-control-request-method": "POST",
                "access-control-request-headers": "content-type",
            },
        )
        other = await client.post(
            "/graphql",
            json={"query": "{ gpus { name } }"},
            headers={"origin": "https://evil.example"},
        )
    assert preflight.status_code == 204
    assert preflight.headers["access-control-allow-origin"] == "https://app.example"
    assert "access-control-allow-origin" not in other.headers


async def test_no_stack_trace_or_sql_in_errors(client) -> None:
    response = await client.post("/graphql", json={"query": "{ models { slug } }"})
    assert response.json() == {
        "data": None,
        "errors": [
            {
                "message": "The database holds no data yet: run `leadgreen ingest` first",
                "locations": [{"line": 1, "column": 3}],
                "path": ["models"],
                "extensions": {"code": "NO_DATA"},
            }
        ],
        "extensions": cost(51, 0),
    }


async def test_the_start_rehearses_the_first_pages(synthetic_db, settings) -> None:
    """Started as `leadgreen serve` starts it (`rehearse`), the app has answered the v1 index
    and its first model's page before it is ready: their first requests, and the model page's
    at /graphql, are answered from the documents (and their plans) the rehearsal prepared."""
    async with app_client(settings, rehearse=True, cache="off") as (app, client):
        documents = app.state.schema.engine.documents
        rehearsed = app.state.rehearsed
        kept = {"documents": len(documents), "plans": planned(documents, settings)}
        index = await client.get("/api/v1/index.json")
        first = index.json()["models"][0]["slug"]
        page = await client.get(f"/api/v1/models/{first}.json")
        asked = {"query": MODEL_PAGE, "variables": {"slug": first}}
        graphql = await client.post("/graphql", json=asked)
        after = {"documents": len(documents), "plans": planned(documents, settings)}
    assert rehearsed == ["/api/v1/index.json", f"/api/v1/models/{first}.json"]
    assert [r.status_code for r in (index, page, graphql)] == [200, 200, 200]
    assert graphql.json()["data"]["model"]["slug"] == first
    assert kept == after == {"documents": 2, "plans": 2}


def planned(documents, settings: Settings) -> int:
    """How many of the model page's and the index's documents hold their operation's plan."""
    tokens = Limits.of(settings).tokens
    found = [documents.get(text, tokens) for text in (MODEL_PAGE, INDEX_QUERY)]
    return sum(
        any(key[0] == "plan" for key in prepared.derived if isinstance(key, tuple))
        for prepared in found
        if prepared is not None
    )


async def test_an_app_not_started_as_served_rehearses_nothing(synthetic_db, settings) -> None:
    async with app_client(settings) as (app, _):
        assert (app.state.rehearsed, len(app.state.schema.engine.documents)) == ([], 0)
