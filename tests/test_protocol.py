"""GraphQL over HTTP at /graphql: media types and statuses, refusals as JSON with a code, the
request limits (body, URL, deadline, batches), masked failures, /readyz and the database away."""

from __future__ import annotations

import asyncio
import contextlib
import logging
import random
import re
import threading
from collections.abc import AsyncIterator, Awaitable, Callable
from dataclasses import dataclass, field
from typing import Any

import httpx
import pytest
from sqlalchemy import text
from sqlalchemy.engine import make_url
from strawberry.types import ExecutionResult

from db.database import create_engine
from graph.engine import limits
from graph.engine.prepared import PREPARING
from graph.errors import OVERLOADED_MESSAGE, Code, database_fault
from graph.server.protocol import negotiate
from graph.server.responses import choose
from tests.conftest import ROOT, app_client
from tests.reports import UNCOSTED, cost

pytestmark = pytest.mark.anyio

JSON = "application/json"
GQL = "application/graphql-response+json"
URQL_ACCEPT = (
    "application/graphql-response+json, application/graphql+json, application/json, "
    "text/event-stream, multipart/mixed"
)
GPUS = "{ gpus { name } }"
GPUS_ANSWER = {
    "data": {"gpus": [{"name": "B200"}, {"name": "H100"}]},
    "extensions": {"cost": {"requestedQueryCost": 5, "actualQueryCost": 3}},
}
UNKNOWN_FIELD = [
    {
        "message": "Cannot query field 'qqq' on type 'Query'.",
        "locations": [{"line": 1, "column": 3}],
        "extensions": {"code": "GRAPHQL_VALIDATION_FAILED"},
    }
]
BAD_VARIABLE = [
    {
        "message": "Variable '$n' has invalid value: Expected value of non-null type 'Int!' "
        "not to be None.",
        "locations": [{"line": 1, "column": 8}],
        "extensions": {"code": "BAD_USER_INPUT"},
    }
]


def refusal(message: str, code: str, **extensions: Any) -> dict[str, Any]:
    return {
        "errors": [{"message": message, "extensions": {"code": code, **extensions}}],
        "extensions": UNCOSTED,
    }


def seen(response: httpx.Response) -> tuple[int, str, Any]:
    return response.status_code, response.headers["content-type"], response.json()


@pytest.mark.parametrize(
    ("accept", "media"),
    [
        (None, JSON),
        ("application/json", JSON),
        ("*/*", JSON),
        ("text/html, */*;q=0.8", JSON),
        ("application/graphql-response+json", GQL),
        ("application/graphql-response+json, application/json;q=0.9", GQL),
        ("application/json, application/graphql-response+json;q=0.5", JSON),
        # urql's (and other clients that take a stream too, JSON first): a JSON answer.
        (URQL_ACCEPT, GQL),
        ("application/json, text/event-stream", JSON),
        ("text/event-stream;q=0.5, application/json", JSON),
    ],
)
async def test_the_media_type_follows_accept(synthetic_db, settings, accept, media) -> None:
    headers = {"accept": accept} if accept else {}
    async with app_client(settings) as (_, client):
        posted = await client.post("/graphql", json={"query": GPUS}, headers=headers)
        got = await client.get("/graphql", params={"query": GPUS}, headers=headers)
    assert seen(posted) == (200, media, GPUS_ANSWER)
    assert seen(got) == (200, media, GPUS_ANSWER)
    assert got.headers["vary"] == "accept"  # a shared cache must keep the two types apart


# Accept sent as several fields: the answer is the one for their values joined (RFC 9110,
# 5.3), not for the first field's alone nor the last's (each alone: JSON).
SPLIT_ACCEPT = ["application/json;q=0.4", "application/graphql-response+json;q=0.5", "*/*;q=0.3"]
SPLIT_STREAM = ["application/json;q=0.1", "text/event-stream", "application/json;q=0.1"]


async def test_accept_sent_as_several_fields_is_read_whole(synthetic_db, settings) -> None:
    """The answer's media type, a refusal's (past the URL's cap: the edge answers it) and the
    choice of an event stream all read every Accept field."""
    split = [("accept", each) for each in SPLIT_ACCEPT]
    async with app_client(settings, max_url_bytes=100) as (_, client):
        posted = await client.post("/graphql", json={"query": GPUS}, headers=split)
        long = await client.get("/graphql", params={"query": GPUS + " " * 100}, headers=split)
        streamed = await client.post(
            "/graphql", json={"query": GPUS}, headers=[("accept", f) for f in SPLIT_STREAM]
        )
    assert seen(posted) == (200, GQL, GPUS_ANSWER)
    assert (long.status_code, long.headers["content-type"]) == (414, GQL)
    assert streamed.status_code == 200
    assert streamed.headers["content-type"].startswith("text/event-stream")
    alone = [SPLIT_ACCEPT[0], SPLIT_ACCEPT[-1], SPLIT_STREAM[0], SPLIT_STREAM[-1]]
    assert {negotiate(f.encode()) for f in alone} == {negotiate(b"application/json")}


async def test_accept_encoding_sent_as_several_fields_is_read_whole(synthetic_db, settings):
    """gzip alone in the first field, nothing in the last: brotli, which the fields together
    rank above gzip."""
    split = [("accept-encoding", f) for f in ("gzip;q=0.5", "br;q=0.9", "identity")]
    async with app_client(settings, compress_min_bytes=0) as (_, client):
        response = await client.post("/graphql", json={"query": GPUS}, headers=split)
    assert (response.headers["content-encoding"], response.json()) == ("br", GPUS_ANSWER)
    assert [choose(b"gzip;q=0.5"), choose(b"identity")] == [b"gzip", None]


# Generated list-valued headers: media ranges (and codings) that negotiation reads, with
# q-values, cut into fields at commas chosen at random.
MEDIA_RANGES = [JSON, GQL, "text/event-stream", "*/*", "application/*", "text/html", "image/png"]
CODINGS = ["gzip", "br", "identity", "*", "deflate", "zstd"]
Q_VALUES = ["", ";q=0", ";q=0.1", ";q=0.5", ";q=0.9", ";q=1"]


def generated_fields(items: list[str], seed: int, count: int) -> list[tuple[str, list[str]]]:
    """`count` header values of 1-5 of `items` with q-values, each with its fields: the value
    cut at 0 or more of its commas."""
    rng = random.Random(seed)
    cases = []
    for _ in range(count):
        ranges = [rng.choice(items) + rng.choice(Q_VALUES) for _ in range(rng.randint(1, 5))]
        cuts = sorted(rng.sample(range(1, len(ranges)), rng.randint(0, len(ranges) - 1)))
        fields = [
            ", ".join(ranges[a:b]) for a, b in zip([0, *cuts], [*cuts, len(ranges)], strict=True)
        ]
        cases.append((", ".join(ranges), fields))
    return cases


def answered(response: httpx.Response) -> tuple[int, str | None, str | None, bytes]:
    headers = response.headers
    return (
        response.status_code,
        headers.get("content-type"),
        headers.get("content-encoding"),
        response.content,
    )


async def test_accept_cut_into_fields_anywhere_is_read_as_the_whole(synthetic_db, settings):
    """The handler's media type, the edge's refusal (past the URL's cap) and the choice of an
    event stream, for Accept values cut into fields: as for the value whole."""
    async with app_client(settings, max_url_bytes=100) as (_, client):
        for whole, fields in generated_fields(MEDIA_RANGES, seed=5, count=60):
            asked = []
            for headers in ([("accept", whole)], [("accept", field) for field in fields]):
                posted = await client.post("/graphql", json={"query": GPUS}, headers=headers)
                long = await client.get(
                    "/graphql", params={"query": GPUS + " " * 100}, headers=headers
                )
                asked.append((answered(posted), answered(long)))
            assert asked[1] == asked[0], (whole, fields)


async def test_accept_encoding_cut_into_fields_anywhere_is_read_as_the_whole(
    synthetic_db, settings
):
    async with app_client(settings, compress_min_bytes=0) as (_, client):
        for whole, fields in generated_fields(CODINGS, seed=7, count=60):
            asked = []
            for headers in ([("accept-encoding", whole)], [("accept-encoding", f) for f in fields]):
                posted = await client.post("/graphql", json={"query": GPUS}, headers=headers)
                asked.append(answered(posted))
            assert asked[1] == asked[0], (whole, fields)


@pytest.mark.parametrize(
    ("accept", "stream"),
    [
        ("text/event-stream", True),  # the graphql-sse client's
        ("TEXT/EVENT-STREAM; charset=utf-8", True),
        ("text/event-stream, application/json", True),
        ("application/json;q=0.5, text/event-stream", True),
        ("*/*, text/event-stream", True),  # the exact type above the wildcard
        ("text/event-stream;q=0.9, */*;q=0.8", True),
        (URQL_ACCEPT, False),
        ("application/json, text/event-stream", False),
        ("application/graphql-response+json, text/event-stream", False),
        ("text/event-stream;q=0.5, application/json", False),
        ("text/event-stream;q=0", False),
        ("text/event-stream;q=0, application/json", False),
        ("application/json", False),
        ("*/*", False),
    ],
)
def test_an_event_stream_only_where_preferred(accept: str, stream: bool) -> None:
    assert negotiate(accept.encode()).event_stream is stream


@pytest.mark.parametrize(
    ("query", "variables", "errors"),
    [
        ("{ qqq }", None, UNKNOWN_FIELD),
        (
            "query ($n: Int!) { configurations(first: $n) { totalCount } }",
            {"n": None},
            BAD_VARIABLE,
        ),
        (
            "{ gpus {",
            None,
            [
                {
                    "message": "Syntax Error: Expected Name, found <EOF>.",
                    "locations": [{"line": 1, "column": 9}],
                    "extensions": {"code": "GRAPHQL_PARSE_FAILED"},
                }
            ],
        ),
    ],
    ids=["validation", "variables", "parse"],
)
async def test_request_errors_by_media_type(
    synthetic_db, settings, query, variables, errors
) -> None:
    """application/json: 200 with `data: null`; graphql-response+json: 400 and no `data`."""
    body = {"query": query, "variables": variables}
    async with app_client(settings) as (_, client):
        legacy = await client.post("/graphql", json=body, headers={"accept": JSON})
        new = await client.post("/graphql", json=body, headers={"accept": GQL})
    assert seen(legacy) == (200, JSON, {"data": None, "errors": errors, "extensions": UNCOSTED})
    assert seen(new) == (400, GQL, {"errors": errors, "extensions": UNCOSTED})


async def test_a_field_error_is_200_for_either_media_type(synthetic_db, settings) -> None:
    query = '{ model(slug: "tiny-1b", modelId: "acme/Tiny-1B") { name } }'
    expected = {
        "data": {"model": None},
        "errors": [
            {
                "message": "give exactly one of `slug` and `modelId`",
                "locations": [{"line": 1, "column": 3}],
                "path": ["model"],
                "extensions": {"code": "BAD_USER_INPUT"},
            }
        ],
        # `model` and its `name` estimated; the answer holds `model: null` (1)
        "extensions": cost(2, 1),
    }
    async with app_client(settings) as (_, client):
        for accept in (JSON, GQL):
            response = await client.post(
                "/graphql", json={"query": query}, headers={"accept": accept}
            )
            assert seen(response) == (200, accept, expected)


@pytest.mark.parametrize(
    ("body", "content_type", "status", "expected"),
    [
        (
            b"",
            JSON,
            400,
            refusal("The body is empty; send a JSON object with a `query`.", "BAD_REQUEST"),
        ),
        (b'{"query": "\xff"}', JSON, 400, refusal("The body is not valid UTF-8.", "BAD_REQUEST")),
        (
            b"42",
            JSON,
            400,
            refusal("The body must be a JSON object (a GraphQL request).", "BAD_REQUEST"),
        ),
        (b'{"query": 1}', JSON, 400, refusal("`query` must be a string or null.", "BAD_REQUEST")),
        (
            b'{"query": "{ gpus { name } }", "variables": []}',
            JSON,
            400,
            refusal("`variables` must be an object or null.", "BAD_REQUEST"),
        ),
        (
            b'{"query": "{ gpus { name } }", "operationName": false}',
            JSON,
            400,
            refusal("`operationName` must be a string or null.", "BAD_REQUEST"),
        ),
        (
            b'{"query": "{ gpus { name } }", "extensions": "x"}',
            JSON,
            400,
            refusal("`extensions` must be an object or null.", "BAD_REQUEST"),
        ),
        (
            b"query=%7B+gpus+%7B+name+%7D+%7D",
            "application/x-www-form-urlencoded",
            415,
            refusal(
                "Send the request as application/json (the Content-Type was "
                "application/x-www-form-urlencoded).",
                "UNSUPPORTED_MEDIA_TYPE",
            ),
        ),
        (
            b'{"query": "{ gpus { name } }"}',
            "application/json; charset=latin-1",
            415,
            refusal("Send the request body in UTF-8.", "UNSUPPORTED_MEDIA_TYPE"),
        ),
        (
            b'{"query": "{ gpus { name } }"}',
            None,
            415,
            refusal(
                "Send the request as application/json (the Content-Type was none).",
                "UNSUPPORTED_MEDIA_TYPE",
            ),
        ),
    ],
    ids=[
        "empty",
        "invalid-utf8",
        "not-an-object",
        "query-not-a-string",
        "variables-not-an-object",
        "operation-name-not-a-string",
        "extensions-not-an-object",
        "form",
        "latin-1",
        "no-content-type",
    ],
)
async def test_malformed_posts_are_refused_as_json(
    synthetic_db, settings, body, content_type, status, expected
) -> None:
    headers = {"content-type": content_type} if content_type else {}
    async with app_client(settings) as (_, client):
        for accept, media in ((JSON, JSON), (GQL, GQL)):
            response = await client.post(
                "/graphql", content=body, headers={**headers, "accept": accept}
            )
            assert seen(response) == (status, media, expected)
            assert response.headers["cache-control"] == "no-store"


async def test_malformed_gets_are_refused_as_json(graphiql_assets, synthetic_db, settings) -> None:
    async with app_client(settings) as (_, client):
        no_query = await client.get("/graphql", headers={"accept": JSON})
        bad_utf8 = await client.get("/graphql?query=%FF")
        bad_variables = await client.get("/graphql", params={"query": GPUS, "variables": "{"})
        graphiql = await client.get("/graphql", headers={"accept": "text/html"})
    assert seen(no_query) == (400, JSON, refusal("The request has no `query`.", "BAD_REQUEST"))
    assert seen(bad_utf8) == (
        400,
        JSON,
        refusal("The query string is not valid UTF-8.", "BAD_REQUEST"),
    )
    assert seen(bad_variables) == (
        400,
        JSON,
        refusal("`variables` is not valid JSON.", "BAD_REQUEST"),
    )
    assert (graphiql.status_code, graphiql.headers["content-type"]) == (
        200,
        "text/html; charset=utf-8",
    )


@pytest.mark.parametrize("method", ["PATCH", "OPTIONS"])
async def test_other_methods_are_405_with_allow(synthetic_db, settings, method) -> None:
    """(HEAD is answered as GET is, without the body: tests/test_adversarial_http.py.)"""
    async with app_client(settings) as (_, client):
        response = await client.request(method, "/graphql")
    assert (response.status_code, response.headers["allow"]) == (
        405,
        "GET, HEAD, POST, PUT, DELETE",
    )
    assert response.json() == refusal(
        "GraphQL is served over GET and POST (PUT and DELETE: GraphQL over SSE).",
        "METHOD_NOT_ALLOWED",
    )


async def test_a_mutation_over_get_is_405_for_either_media_type(synthetic_db, settings) -> None:
    async with app_client(settings) as (_, client):
        for accept in (JSON, GQL):
            response = await client.get(
                "/graphql", params={"query": "mutation { __typename }"}, headers={"accept": accept}
            )
            assert (response.status_code, response.headers["allow"]) == (405, "POST")
            assert seen(response) == (
                405,
                accept,
                refusal(
                    "Only queries can be sent with GET; send other operations with POST.",
                    "METHOD_NOT_ALLOWED",
                ),
            )


@pytest.mark.parametrize(
    ("body", "message"),
    [
        (
            {"query": "query A { gpus { name } } query B { tasks { name } }"},
            "The document holds several operations: say which to run with `operationName`.",
        ),
        (
            {"query": "query A { gpus { name } }", "operationName": "B"},
            'Unknown operation named "B".',
        ),
    ],
    ids=["several-without-a-name", "unknown-name"],
)
async def test_an_operation_that_cannot_be_chosen(synthetic_db, settings, body, message) -> None:
    """A request error, answered as one that fails validation is: 200 with `data: null` in
    application/json, 400 without `data` in application/graphql-response+json."""
    async with app_client(settings) as (_, client):
        legacy = await client.post("/graphql", json=body)
        new = await client.post("/graphql", json=body, headers={"accept": GQL})
    assert seen(legacy) == (200, JSON, {"data": None, **refusal(message, "BAD_REQUEST")})
    assert seen(new) == (400, GQL, refusal(message, "BAD_REQUEST"))


async def test_the_body_cap_is_checked_before_reading(synthetic_db, settings) -> None:
    """A declared Content-Length past the cap is refused without reading; so is a streamed body
    that grows past it."""

    async def chunks() -> AsyncIterator[bytes]:
        yield b'{"query": "' + b" " * 60
        yield b" " * 60 + b'{ gpus { name } }"}'

    expected = refusal("The request body is larger than the limit of 100 bytes.", "BODY_TOO_LARGE")
    async with app_client(settings, max_body_bytes=100) as (_, client):
        declared = await client.post(
            "/graphql",
            content=b"{}",
            headers={"content-type": JSON, "content-length": "1000000"},
        )
        streamed = await client.post("/graphql", content=chunks(), headers={"content-type": JSON})
    assert seen(declared) == (413, JSON, expected)
    assert seen(streamed) == (413, JSON, expected)


async def test_a_url_past_the_cap_is_414(synthetic_db, settings) -> None:
    async with app_client(settings, max_url_bytes=100) as (_, client):
        short = await client.get("/graphql", params={"query": GPUS})
        long = await client.get("/graphql", params={"query": GPUS + " " * 100})
    assert short.status_code == 200
    assert seen(long) == (
        414,
        JSON,
        refusal(
            "The URL is longer than the limit of 100 bytes; send the request with POST, or as "
            "a persisted query.",
            "URL_TOO_LONG",
        ),
    )


async def test_batches_when_enabled(synthetic_db, settings) -> None:
    batch = [{"query": GPUS}, {"query": "{ qqq }"}]
    async with app_client(settings, batch_max=2) as (_, client):
        answered = await client.post("/graphql", json=batch)
        too_many = await client.post("/graphql", json=[*batch, {"query": GPUS}])
        empty = await client.post("/graphql", json=[])
        malformed = await client.post("/graphql", json=[{"query": GPUS}, 7])
    assert seen(answered) == (
        200,
        JSON,
        [GPUS_ANSWER, {"data": None, "errors": UNKNOWN_FIELD, "extensions": UNCOSTED}],
    )
    assert seen(too_many) == (
        400,
        JSON,
        refusal("A batch holds 1 to 2 operations; this one has 3.", "BATCH_TOO_LARGE"),
    )
    assert seen(empty) == (
        400,
        JSON,
        refusal("A batch holds 1 to 2 operations; this one has 0.", "BATCH_TOO_LARGE"),
    )
    assert seen(malformed) == (
        400,
        JSON,
        refusal("The body must be a JSON object (a GraphQL request).", "BAD_REQUEST"),
    )


async def test_batches_are_off_by_default(synthetic_db, settings) -> None:
    async with app_client(settings) as (_, client):
        response = await client.post("/graphql", json=[{"query": GPUS}])
    assert seen(response) == (
        400,
        JSON,
        refusal(
            "Batching is off: send one operation (a JSON object) per request.",
            "BATCHING_DISABLED",
        ),
    )


async def test_a_request_past_the_deadline_is_504(synthetic_db, settings) -> None:
    """The deadline stops the execution (here one that would never end)."""

    async def never(*_args: Any) -> Any:
        await asyncio.Event().wait()

    async with app_client(settings, execute=never, request_timeout_seconds=0.05) as (_, client):
        response = await client.post("/graphql", json={"query": GPUS})
    assert seen(response) == (
        504,
        JSON,
        refusal("The request took longer than the limit of 0.05 s.", "REQUEST_TIMEOUT"),
    )


async def test_a_bug_is_masked_with_a_logged_request_id(synthetic_db, settings, caplog) -> None:

    async def broken(*_args: Any) -> Any:
        raise RuntimeError("SELECT secret FROM /srv/app/db.py")

    async with app_client(settings, execute=broken) as (_, client):
        with caplog.at_level(logging.ERROR, logger="leadgreen"):
            response = await client.post("/graphql", json={"query": GPUS})
    body = response.json()
    request_id = body["errors"][0]["extensions"]["requestId"]
    assert seen(response) == (
        500,
        JSON,
        {
            "errors": [
                {
                    "message": "Internal server error",
                    "extensions": {"code": "INTERNAL", "requestId": request_id},
                }
            ],
            "extensions": UNCOSTED,
        },
    )
    [record] = [r for r in caplog.records if request_id in r.getMessage()]
    assert record.exc_info is not None and "SELECT secret" in str(record.exc_info[1])


async def test_other_routes_answer_json(synthetic_db, settings) -> None:
    async with app_client(settings) as (_, client):
        missing = await client.get("/nowhere")
        wrong_method = await client.post("/healthz")
    assert seen(missing) == (404, JSON, {"error": {"code": "NOT_FOUND", "message": "Not Found"}})
    assert seen(wrong_method) == (
        405,
        JSON,
        {"error": {"code": "METHOD_NOT_ALLOWED", "message": "Method Not Allowed"}},
    )


async def test_readyz(synthetic_db, settings) -> None:
    async with app_client(settings) as (_, client):
        response = await client.get("/readyz")
    assert seen(response) == (
        200,
        JSON,
        {"status": "ready", "release": 1, "lastUpdated": "2030-01-02"},
    )


async def test_readyz_without_a_release(settings) -> None:
    async with app_client(settings) as (_, client):
        response = await client.get("/readyz")
    assert seen(response) == (
        503,
        JSON,
        {
            "status": "unavailable",
            "reason": "no release loaded: run `leadgreen ingest`",
            "code": "NO_DATA",
        },
    )


# ---------------------------------------------------------------------------------------------
# PostgreSQL away: through a TCP proxy that is cut and restored (the shared server stays up)
# ---------------------------------------------------------------------------------------------


class Proxy:
    """127.0.0.1:port forwarding to PostgreSQL; `cut` closes it and every connection."""

    def __init__(self) -> None:
        self.server: asyncio.Server | None = None
        self.port = 0
        self.open: set[asyncio.StreamWriter] = set()

    async def start(self) -> None:
        self.server = await asyncio.start_server(self.forward, "127.0.0.1", self.port)
        self.port = self.server.sockets[0].getsockname()[1]

    async def forward(self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        try:
            up_reader, up_writer = await asyncio.open_connection("127.0.0.1", 5432)
        except OSError:
            writer.transport.abort()
            return
        self.open |= {writer, up_writer}

        async def pipe(src: asyncio.StreamReader, dst: asyncio.StreamWriter) -> None:
            with contextlib.suppress(OSError):
                while data := await src.read(65536):
                    dst.write(data)
                    await dst.drain()
            dst.transport.abort()

        await asyncio.gather(pipe(reader, up_writer), pipe(up_reader, writer))

    async def cut(self) -> None:
        if self.server is not None:
            self.server.close()
            self.server = None
        for writer in self.open:
            writer.transport.abort()
        self.open.clear()


@pytest.fixture
async def proxied_settings(synthetic_db, settings) -> AsyncIterator[tuple[Proxy, Any]]:
    if not settings.database_url.startswith("postgresql"):
        pytest.skip("PostgreSQL only: the database is reached through a TCP proxy")
    proxy = Proxy()
    await proxy.start()
    url = make_url(settings.database_url).set(host="127.0.0.1", port=proxy.port)
    yield proxy, settings.model_copy(update={"database_url": url.render_as_string(False)})
    await proxy.cut()


async def test_the_database_away_is_503_and_service_resumes(proxied_settings) -> None:
    proxy, settings = proxied_settings
    unavailable = refusal("The database is unavailable; try again shortly.", "DATABASE_UNAVAILABLE")
    async with app_client(settings) as (_, client):
        before = await client.post("/graphql", json={"query": GPUS})
        await proxy.cut()
        # What the release in memory answers is still answered; what reads the database is not.
        from_memory = await client.post("/graphql", json={"query": "{ tasks { name } }"})
        during = await client.post("/graphql", json={"query": "{ releases { number } }"})
        ready = await client.get("/readyz")
        await proxy.start()
        for _ in range(50):  # the pool notices by itself; no request needs to fail for it
            after = await client.post("/graphql", json={"query": "{ tasks { name } }"})
            if after.status_code == 200:
                break
            await asyncio.sleep(0.1)
        ready_again = await client.get("/readyz")
    assert seen(before) == (200, JSON, GPUS_ANSWER)
    assert (from_memory.status_code, from_memory.json()["data"]["tasks"]) == (
        200,
        [{"name": "lm-arena-chat"}],
    )
    # The field that read the database has the error (data is null: `releases` is non-null).
    field_error = {**unavailable["errors"][0], "locations": [{"line": 1, "column": 3}]}
    assert seen(during) == (
        503,
        JSON,
        # releases (at most 16) and their numbers estimated; the answer holds nothing
        {
            "data": None,
            "errors": [{**field_error, "path": ["releases"]}],
            "extensions": cost(17, 0),
        },
    )
    assert during.headers["retry-after"] == "1"
    unreachable = {"status": "unavailable", "reason": "database unreachable"}
    assert seen(ready) == (503, JSON, {**unreachable, "code": "DATABASE_UNAVAILABLE"})
    assert (after.status_code, "errors" in after.json()) == (200, False)
    assert ready_again.status_code == 200


async def test_a_statement_past_the_timeout_is_request_timeout(synthetic_db, settings) -> None:
    """PostgreSQL's statement_timeout comes from the setting; its error is REQUEST_TIMEOUT."""
    if not settings.database_url.startswith("postgresql"):
        pytest.skip("PostgreSQL only")
    engine = create_engine(settings.database_url, statement_timeout=0.05)
    try:
        async with engine.connect() as conn:
            assert await conn.scalar(text("SHOW statement_timeout")) == "50ms"
            with pytest.raises(Exception) as raised:
                await conn.execute(text("SELECT pg_sleep(5)"))
    finally:
        await engine.dispose()
    assert database_fault(raised.value) is Code.REQUEST_TIMEOUT


# ---------------------------------------------------------------------------------------------
# The README's table of codes and statuses, row by row: each code of each row is brought about
# and answered with the row's status, for either media type
# ---------------------------------------------------------------------------------------------

Send = Callable[[httpx.AsyncClient, str], Awaitable[httpx.Response]]


def _post(body: Any, **headers: str) -> Send:
    async def send(client: httpx.AsyncClient, accept: str) -> httpx.Response:
        return await client.post("/graphql", json=body, headers={"accept": accept, **headers})

    return send


def _query(query: str, **variables: Any) -> Send:
    return _post({"query": query, "variables": variables or None})


def _request(method: str, path: str, headers: dict[str, str] | None = None, **options: Any) -> Send:
    async def send(client: httpx.AsyncClient, accept: str) -> httpx.Response:
        sent = {"accept": accept, **(headers or {})}
        return await client.request(method, path, headers=sent, **options)

    return send


def _twice(send: Send) -> Send:
    async def again(client: httpx.AsyncClient, accept: str) -> httpx.Response:
        await send(client, accept)
        return await send(client, accept)

    return again


async def _broken(*_args: Any) -> Any:
    raise RuntimeError("a bug")


async def _never(*_args: Any) -> Any:
    await asyncio.Event().wait()


class Held:
    """An `execute` that holds every request it runs until `release` is set; `all_in` is set
    once `admitted` of them are held."""

    def __init__(self, admitted: int) -> None:
        self.admitted = admitted
        self.start()

    def start(self) -> None:
        """A new round: nothing held, and events of the running test's loop (a case is made
        once and serves both databases' tests, each with its own loop)."""
        self.entered = 0
        self.all_in, self.release = asyncio.Event(), asyncio.Event()

    async def __call__(self, *_args: Any) -> ExecutionResult:
        self.entered += 1
        if self.entered == self.admitted:
            self.all_in.set()
        await self.release.wait()
        return ExecutionResult(data={"gpus": []}, errors=None)


async def held_round(
    client: httpx.AsyncClient, held: Held, more: int, accept: str = JSON
) -> tuple[list[httpx.Response], list[httpx.Response]]:
    """`held.admitted + more` requests at once, held in `execute`: (the `more` answered while
    the others are held, the others' answers once released)."""
    held.start()
    sent = [
        asyncio.create_task(
            client.post("/graphql", json={"query": GPUS}, headers={"accept": accept})
        )
        for _ in range(held.admitted + more)
    ]
    early: list[asyncio.Task[httpx.Response]] = []
    pending = set(sent)
    while len(early) < more:
        done, pending = await asyncio.wait(pending, return_when=asyncio.FIRST_COMPLETED)
        early += done
    await held.all_in.wait()
    held.release.set()
    late = await asyncio.gather(*pending)
    return [task.result() for task in early], list(late)


def _overloaded(held: Held) -> Send:
    async def send(client: httpx.AsyncClient, accept: str) -> httpx.Response:
        refused, _ = await held_round(client, held, 1, accept)
        return refused[0]

    return send


def _preparation_busy() -> Send:
    """A new document sent while the same client's last one is being prepared (its parsing
    held in the worker thread until the answer comes)."""
    sent: list[int] = []

    async def send(client: httpx.AsyncClient, accept: str) -> httpx.Response:
        release, reached, parsed = threading.Event(), asyncio.Event(), limits.parsed
        loop = asyncio.get_running_loop()

        def holding(text: str, max_tokens: int) -> Any:
            loop.call_soon_threadsafe(reached.set)
            release.wait(30)
            return parsed(text, max_tokens)

        sent.append(len(sent))  # a new document each time
        large = f"{{ a{len(sent)}: __typename }} # " + "x" * 600
        limits.parsed = holding  # type: ignore[assignment]
        per_client, PREPARING.per_client = PREPARING.per_client, 1
        try:
            first = asyncio.create_task(client.post("/graphql", json={"query": large}))
            await reached.wait()
            refused = await client.post(
                "/graphql",
                json={"query": f"{{ b{len(sent)}: gpus {{ name }} }}"},
                headers={"accept": accept},
            )
        finally:
            release.set()
            limits.parsed = parsed  # type: ignore[assignment]
            PREPARING.per_client = per_client
        await first
        return refused

    return send


@dataclass(frozen=True)
class Case:
    """A request that brings a code about, and what the app answering it needs."""

    send: Send
    settings: dict[str, Any] = field(default_factory=dict)
    execute: Any = None
    empty: bool = False  # on an empty database instead of the synthetic data's
    started: bool = True  # the app's lifespan run (its release read)


HASH = {"persistedQuery": {"version": 1, "sha256Hash": "ab" * 32}}
AWAY = "postgresql+asyncpg://postgres@127.0.0.1:9/none"
_HELD = Held(1)
# tests/keys/keys.toml: "trusted-key" may send only its one document, "capped-key" costs of 4.
PARTNER_KEYS = {"rate_limit": True, "partner_keys_file": ROOT / "tests" / "keys" / "keys.toml"}
# (code, the row's status) -> the case that brings it about.
CASES: dict[tuple[str, str], Case] = {
    ("BAD_REQUEST", "400"): Case(
        _request("POST", "/graphql", content=b"{", headers={"content-type": JSON})
    ),
    ("BAD_REQUEST", "200 / 400"): Case(_post({"query": GPUS, "operationName": "Other"})),
    ("GRAPHQL_PARSE_FAILED", "200 / 400"): Case(_query("{ gpus {")),
    ("GRAPHQL_VALIDATION_FAILED", "200 / 400"): Case(_query("{ qqq }")),
    ("BAD_USER_INPUT", "200 / 400"): Case(
        _query("query ($n: Int!) { configurations(first: $n) { totalCount } }", n="x")
    ),
    ("BAD_USER_INPUT", "200"): Case(_query("{ configurations(first: 100000) { totalCount } }")),
    ("BAD_REPRESENTATION", "200"): Case(
        _query('{ _entities(representations: [{__typename: "Nope"}]) { __typename } }')
    ),
    ("DOCUMENT_TOO_LARGE", "200 / 400"): Case(_query(GPUS), {"max_document_bytes": 10}),
    ("TOO_MANY_TOKENS", "200 / 400"): Case(_query(GPUS), {"max_tokens": 3}),
    ("QUERY_TOO_DEEP", "200 / 400"): Case(_query(GPUS), {"max_depth": 1}),
    ("TOO_MANY_ALIASES", "200 / 400"): Case(_query("{ g: gpus { name } }"), {"max_aliases": 0}),
    ("TOO_MANY_DIRECTIVES", "200 / 400"): Case(
        _query("{ gpus @skip(if: false) { name } }"), {"max_directives": 0}
    ),
    ("TOO_MANY_FIELDS", "200 / 400"): Case(_query(GPUS), {"max_fields": 1}),
    ("TOO_MANY_FIELD_MERGES", "200 / 400"): Case(
        _query("{ gpus { name } gpus { name } }"), {"max_field_merges": 0}
    ),
    ("QUERY_TOO_COMPLEX", "200 / 400"): Case(_query(GPUS), {"max_cost": 1}),
    ("PERSISTED_QUERY_NOT_FOUND", "200 / 400"): Case(_post({"extensions": HASH})),
    ("PERSISTED_QUERY_NOT_SUPPORTED", "200 / 400"): Case(
        _post({"extensions": HASH}), {"persisted_queries": 0}
    ),
    ("BATCHING_DISABLED", "400"): Case(_post([{"query": GPUS}])),
    ("BATCH_TOO_LARGE", "400"): Case(_post([{"query": GPUS}] * 2), {"batch_max": 1}),
    ("METHOD_NOT_ALLOWED", "405"): Case(_request("PATCH", "/graphql")),
    ("BODY_TOO_LARGE", "413, 414, 431"): Case(_query(GPUS), {"max_body_bytes": 10}),
    ("URL_TOO_LONG", "413, 414, 431"): Case(
        _request("GET", "/graphql", params={"query": GPUS + " " * 100}), {"max_url_bytes": 64}
    ),
    ("HEADERS_TOO_LARGE", "413, 414, 431"): Case(
        _request("GET", "/healthz", headers={f"x-{n}": "1" for n in range(8)}), {"max_headers": 8}
    ),
    ("UNSUPPORTED_MEDIA_TYPE", "415"): Case(
        _request("POST", "/graphql", content=GPUS, headers={"content-type": "text/plain"})
    ),
    ("NOT_FOUND", "404"): Case(_request("GET", "/nowhere")),
    ("THROTTLED", "429"): Case(
        _twice(_query(GPUS)),
        {"rate_limit": True, "rate_limit_capacity": 1, "rate_limit_restore_rate": 1e-9},
    ),
    ("TOO_MANY_SUBSCRIPTIONS", "429"): Case(
        _post(
            {"query": "subscription S { releasePublished { release { number } } }"},
            accept="text/event-stream, application/json",
        ),
        {"max_subscriptions_per_client": 0},
    ),
    ("UNKNOWN_API_KEY", "401, 403"): Case(
        _post({"query": GPUS}, **{"x-api-key": "invented"}), {"rate_limit": True, "api_keys": ["k"]}
    ),
    ("DOCUMENT_NOT_TRUSTED", "401, 403"): Case(
        _post({"query": GPUS}, **{"x-api-key": "trusted-key"}), PARTNER_KEYS
    ),
    ("KEY_MAX_COST_EXCEEDED", "200 / 400"): Case(
        _post({"query": GPUS}, **{"x-api-key": "capped-key"}), PARTNER_KEYS
    ),
    ("NO_DATA", "200"): Case(_query("{ models { slug } }"), empty=True),
    ("DATABASE_UNAVAILABLE", "503"): Case(_query(GPUS), {"database_url": AWAY}, started=False),
    ("OVERLOADED", "503"): Case(
        _overloaded(_HELD), {"max_in_flight": 1, "cache": "off"}, execute=_HELD
    ),
    ("PREPARATION_BUSY", "503"): Case(_preparation_busy(), {"cache": "off"}),
    ("STARTING", "503"): Case(_request("GET", "/readyz"), started=False),
    ("REQUEST_TIMEOUT", "504"): Case(_query(GPUS), {"request_timeout_seconds": 0.05}, _never),
    ("INTERNAL", "500"): Case(_query(GPUS), execute=_broken),
}


def _readme_rows() -> list[tuple[str, str, int]]:
    """The table's (code, status, the code's place in the row), one for each code of a row."""
    readme = (ROOT / "README.md").read_text(encoding="utf-8")
    table = readme.split("| code | status | when |", 1)[1].split("\n\n", 1)[0]
    return [
        (code, status.strip(), place)
        for codes, status in re.findall(
            r"^\| (`[A-Z_]+`(?:, `[A-Z_]+`)*) \| ([^|]+) \|", table, re.M
        )
        for place, code in enumerate(re.findall(r"`([A-Z_]+)`", codes))
    ]


ROWS = _readme_rows()


def test_every_row_of_the_table_is_checked() -> None:
    assert sorted((code, status) for code, status, _ in ROWS) == sorted(CASES)


def _expected(status: str, place: int) -> tuple[int, int]:
    """(the status for application/json, for application/graphql-response+json)."""
    if status == "200 / 400":
        return 200, 400
    one = int(status.split(", ")[place] if "," in status else status)
    return one, one


def _code(body: Any) -> str:
    if "errors" in body:
        return str(body["errors"][0]["extensions"]["code"])
    return str(body["error"]["code"] if "error" in body else body["code"])


@pytest.mark.parametrize(("code", "status", "place"), ROWS, ids=[f"{r[0]}-{r[1]}" for r in ROWS])
async def test_the_readme_table_row_by_row(
    synthetic_db, settings, tmp_path, code: str, status: str, place: int
) -> None:
    case = CASES[(code, status)]
    empty = {"database_url": f"sqlite+aiosqlite:///{tmp_path / 'empty.db'}"} if case.empty else {}
    update = {"release_poll_seconds": 0, **empty, **case.settings}
    updated = settings.model_copy(update=update)
    answers = []
    async with app_client(updated, execute=case.execute, started=case.started) as (_, client):
        for accept in (JSON, GQL):
            response = await case.send(client, accept)
            answers.append((response.status_code, _code(response.json()), response.json()))
    assert [(found, found_code) for found, found_code, _ in answers] == [
        (expected, code) for expected in _expected(status, place)
    ]
    if status == "200 / 400":  # the legacy client's `data: null`; none for the others
        assert [("data" in body, body.get("data")) for *_, body in answers] == [
            (True, None),
            (False, None),
        ]


@pytest.mark.parametrize("limit", [1, 3])
async def test_a_request_whose_body_is_still_coming_is_not_in_flight(
    synthetic_db, settings, limit: int
) -> None:
    """As many POSTs as LEADGREEN_MAX_IN_FLIGHT allows, each with its body begun and the rest
    still to come (a slow client's), take no place: a request sent meanwhile is answered, and
    each slow one is once its body is whole."""
    reading, go = [], asyncio.Event()
    all_reading = asyncio.Event()

    async def trickle() -> AsyncIterator[bytes]:
        yield b'{"query": '
        reading.append(1)  # the handler asked for the rest of the body
        if len(reading) == limit:
            all_reading.set()
        await go.wait()
        yield b'"{ gpus { name } }"}'

    async with app_client(settings, max_in_flight=limit, cache="off") as (_, client):
        slow = [
            asyncio.create_task(
                client.post(
                    "/graphql", content=trickle(), headers={"content-type": "application/json"}
                )
            )
            for _ in range(limit)
        ]
        await all_reading.wait()
        meanwhile = await client.post("/graphql", json={"query": GPUS})
        go.set()
        answered = await asyncio.gather(*slow)
    assert [(r.status_code, r.json()) for r in [meanwhile, *answered]] == [(200, GPUS_ANSWER)] * (
        limit + 1
    )


@pytest.mark.parametrize(("limit", "more"), [(1, 1), (2, 3), (4, 1), (3, 6)])
async def test_past_max_in_flight_requests_are_refused_at_once(
    synthetic_db, settings, limit: int, more: int
) -> None:
    """With `limit` requests executing, `more` arriving meanwhile are refused 503 OVERLOADED
    with Retry-After without waiting; the admitted complete, and the next is admitted."""
    held = Held(limit)
    update = {"max_in_flight": limit, "cache": "off"}
    async with app_client(settings, execute=held, **update) as (_, client):
        refused, admitted = await held_round(client, held, more)
        held.release.set()
        after = await client.post("/graphql", json={"query": GPUS})
    overloaded = {
        "errors": [
            {
                "message": OVERLOADED_MESSAGE,
                "extensions": {"code": "OVERLOADED"},
            }
        ],
        "extensions": UNCOSTED,
    }
    assert [(r.status_code, r.headers["retry-after"], r.json()) for r in refused] == [
        (503, "1", overloaded)
    ] * more
    assert [(r.status_code, r.json()) for r in [*admitted, after]] == [
        (200, {"data": {"gpus": []}})
    ] * (limit + 1)
