"""No 500 from input (the issue's class 4), on SQLite and PostgreSQL.

A property over every route the app serves (read from its router, so a new route is covered
as it comes) and every parameter of each: path parameters, `release`, the GraphQL-over-HTTP
parameters of /graphql in a GET query string, bodies of any JSON shape, and conditional and
content-negotiation headers, drawn from hostile values (tests/corpus/hostile/values.json) and
from any text. tests/test_fuzz.py draws the GraphQL arguments of every root field the same way.
Every answer is JSON with a code when it refuses, never 500 nor INTERNAL. Then the database's
own faults: its tables dropped under a running server, its connections terminated: 503 with
Retry-After, never INTERNAL.
"""

from __future__ import annotations

import base64
import json
import re
from pathlib import Path
from typing import Any
from urllib.parse import quote

import anyio.from_thread
import anyio.to_thread
import httpx
import pytest
from hypothesis import HealthCheck, given
from hypothesis import settings as hypothesis_settings
from hypothesis import strategies as st
from sqlalchemy import text
from starlette.routing import Route

from db.database import create_engine
from db.tables import metadata
from tests.conftest import app_client

pytestmark = pytest.mark.anyio

VALUES: list[str] = json.loads(
    (Path(__file__).parent / "corpus" / "hostile" / "values.json").read_text()
)
EXAMPLES = 150


def hostile() -> st.SearchStrategy[str]:
    """A hostile value of the corpus, or any text (no lone surrogates: they are not UTF-8)."""
    return st.one_of(
        st.sampled_from(VALUES),
        st.text(st.characters(exclude_categories=["Cs"]), max_size=40),
    )


def json_values() -> st.SearchStrategy[Any]:
    return st.recursive(
        st.none() | st.booleans() | st.integers() | st.floats(allow_nan=False) | hostile(),
        lambda inner: st.lists(inner, max_size=4) | st.dictionaries(hostile(), inner, max_size=4),
        max_leaves=12,
    )


def routes(app: Any) -> list[str]:
    """The paths the app's router serves with GET, /graphql with them."""
    paths = [r.path for r in app.routes if isinstance(r, Route) and "GET" in (r.methods or ())]
    return ["/graphql", *paths]


@st.composite
def http_requests(draw: Any, paths: list[str]) -> tuple[str, str, dict[str, str], bytes | None]:
    """(method, target, headers, body): a route with its parameters filled in hostile."""
    path = draw(st.sampled_from(paths))

    def fill(match: re.Match[str]) -> str:
        value = draw(hostile())
        return quote(value, safe="/" if match.group(2) == ":path" else "")

    target = re.sub(r"\{(\w+)(:\w+)?\}", fill, path)
    params: list[tuple[str, str]] = []
    if path == "/graphql":
        for name in ("query", "variables", "operationName", "extensions"):
            if draw(st.booleans()):
                value = draw(st.one_of(hostile(), json_values().map(json.dumps)))
                params.append((name, value))
    elif draw(st.booleans()):
        params.append(("release", draw(hostile())))
    if params:
        target += "?" + "&".join(f"{quote(k)}={quote(v, safe='')}" for k, v in params)
    headers: dict[str, str] = {}
    for name in ("if-none-match", "accept", "accept-encoding", "x-api-key"):
        if draw(st.integers(0, 3)) == 0:
            headers[name] = draw(hostile()).encode("ascii", "replace").decode()[:200]
    method = draw(st.sampled_from(["GET", "GET", "HEAD", "POST"]))
    body = None
    if method == "POST":
        headers["content-type"] = "application/json"
        body = json.dumps(draw(json_values())).encode()
    return method, target, headers, body


def check(method: str, response: httpx.Response) -> None:
    assert response.status_code != 500 and response.status_code < 600, response.text[:500]
    if method == "HEAD" or response.status_code in (204, 304):
        return
    what = (method, str(response.url)[:300], response.status_code, response.content[:300])
    media = response.headers.get("content-type", "").partition(";")[0]
    is_json = media == "application/json" or media.endswith("+json")
    if response.status_code < 400 and not is_json:  # /metrics, GraphiQL, assets, exports
        return
    assert is_json, what
    body = response.json()
    if response.status_code >= 400 or (isinstance(body, dict) and "errors" in body):
        if "errors" in body:
            found = [e["extensions"]["code"] for e in body["errors"]]
        else:  # the documents' shape, or a probe's (/readyz)
            found = [body["error"]["code"] if "error" in body else body["code"]]
        assert found and all(isinstance(c, str) for c in found), body
        assert "INTERNAL" not in found, body


@pytest.mark.slow
async def test_no_route_answers_500_whatever_it_is_sent(synthetic_db, settings) -> None:
    async with app_client(settings) as (app, client):

        async def send(
            method: str, target: str, headers: dict[str, str], body: bytes | None
        ) -> Any:
            return await client.request(method, target, headers=headers, content=body)

        @hypothesis_settings(
            max_examples=EXAMPLES,
            deadline=None,
            derandomize=True,
            database=None,
            suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large],
        )
        @given(http_requests(routes(app)))
        def prop(request: tuple[str, str, dict[str, str], bytes | None]) -> None:
            method, target, headers, body = request
            try:
                response = anyio.from_thread.run(send, method, target, headers, body)
            except httpx.InvalidURL:  # the client refuses to send it: nothing to check
                return
            check(method, response)

        await anyio.to_thread.run_sync(prop)


def not_a_release(value: str) -> dict[str, Any]:
    message = f"`release` must be a release number (digits 0-9), got {value!r}"
    return {"error": {"code": "BAD_USER_INPUT", "message": message}}


def not_found(message: str) -> dict[str, Any]:
    return {"error": {"code": "NOT_FOUND", "message": message}}


@pytest.mark.parametrize(
    ("target", "status", "body"),
    [
        ("/api/v1/index.json?release=²", 400, not_a_release("²")),
        ("/api/v1/index.json?release=99999999999999999999999", 400, not_a_release("9" * 23)),
        ("/data/index.json?release=99999999999999999999999", 400, not_a_release("9" * 23)),
        ("/data/index.json?release=-1", 400, not_a_release("-1")),
        ("/api/v1/models/tiny-1b.json?release=%00", 400, not_a_release("\x00")),
        (
            "/data/%2e%2e/%2e%2e/etc/passwd",
            404,
            not_found("no file '../../etc/passwd' in release 1"),
        ),
        (
            "/data/tasks/..%2Findex.json",
            404,
            not_found("no file 'tasks/../index.json' in release 1"),
        ),
        (
            "/api/v1/models/%ff.json",
            404,
            not_found("no model '\ufffd'; /api/v1/index.json lists the models"),
        ),
    ],
)
async def test_hostile_document_parameters(synthetic_db, client, target, status, body) -> None:
    """A parameter that is not a release number is 400 BAD_USER_INPUT; a path that names no
    file or model (dot segments stay in the name, never leave the release) is 404 NOT_FOUND."""
    response = await client.get(target)
    assert (response.status_code, response.json()) == (status, body)
    check("GET", response)


async def test_a_forged_cursor_of_deep_json_is_bad_input(synthetic_db, client) -> None:
    for raw in ("[" * 100_000 + "]" * 100_000, '["energyPerTokenJoules",' * 300):
        cursor = base64.urlsafe_b64encode(raw.encode()).decode()
        query = "query($a: String) { configurations(first: 1, after: $a) { totalCount } }"
        response = await client.post("/graphql", json={"query": query, "variables": {"a": cursor}})
        assert [e["extensions"]["code"] for e in response.json()["errors"]] == ["BAD_USER_INPUT"]


# --- the database's faults -------------------------------------------------------------------


async def test_tables_dropped_under_a_running_server(synthetic_db, settings, database_url) -> None:
    """503 DATABASE_UNAVAILABLE with Retry-After for what needs the database; what the
    process holds in memory is still answered; never INTERNAL."""
    uncached = settings.model_copy(update={"cache": "off", "release_poll_seconds": 0})
    async with app_client(uncached) as (_, client):
        assert (
            await client.post("/graphql", json={"query": "{ gpus { name } }"})
        ).status_code == 200
        dropper = create_engine(database_url)
        async with dropper.begin() as connection:
            for table in reversed(metadata.sorted_tables):
                await connection.execute(text(f"DROP TABLE IF EXISTS {table.name}"))
        await dropper.dispose()
        answers = [
            await client.post("/graphql", json={"query": "{ releases { number } }"}),
            await client.get("/api/v1/index.json"),
            await client.get("/data/index.json"),
            await client.get("/readyz"),
        ]
        memory = await client.post("/graphql", json={"query": "{ gpus { name } }"})
        health = await client.get("/healthz")
    for response in answers:
        assert response.status_code == 503, response.text
        check("GET", response)
    for response in answers[:3]:
        assert response.headers["retry-after"] == "1"
    assert (memory.status_code, health.status_code) == (200, 200)


@pytest.mark.postgres
async def test_connections_terminated_under_a_running_server(
    synthetic_db, settings, database_url
) -> None:
    """Every connection of the server's database killed between requests (a restart, a
    failover): the next answers are served as before, a dead connection replaced (checked
    when it is taken from the pool), never refused."""
    if not database_url.startswith("postgresql"):
        pytest.skip("PostgreSQL only")
    uncached = settings.model_copy(update={"cache": "off", "release_poll_seconds": 0})
    admin = create_engine(database_url, isolation_level="AUTOCOMMIT")
    kill = text(
        "SELECT pg_terminate_backend(pid) FROM pg_stat_activity "
        "WHERE datname = current_database() AND pid <> pg_backend_pid()"
    )
    async with app_client(uncached) as (_, client):
        for _ in range(3):
            await client.post("/graphql", json={"query": "{ releases { number } }"})
            async with admin.connect() as connection:
                await connection.execute(kill)
            releases = await client.post("/graphql", json={"query": "{ releases { number } }"})
            index = await client.get("/api/v1/index.json")
            ready = await client.get("/readyz")
            assert (releases.status_code, releases.json()["data"]) == (
                200,
                {"releases": [{"number": 1}]},
            )
            assert (index.status_code, index.json()["updated"]) == (200, "2030-01-03")
            assert (ready.status_code, ready.json()) == (
                200,
                {"status": "ready", "release": 1, "lastUpdated": "2030-01-02"},
            )
    await admin.dispose()
