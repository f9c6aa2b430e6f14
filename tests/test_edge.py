"""The edge of every request: CORS (any origin by default, an allow-list, none) with preflights,
and the request id each response carries."""

from __future__ import annotations

import asyncio
import collections
import logging
from typing import Any

import pytest
from starlette.routing import Route

from graph.server.edge import BoundedHttp, Cors, RequestIds
from tests.conftest import app_client
from tests.test_cache import QUERY

pytestmark = pytest.mark.anyio

EXPOSED = (
    "ETag, Retry-After, X-Request-Id, X-Cache, Content-Encoding, X-LeadGreen-Source, "
    "X-LeadGreen-Source-Url, X-LeadGreen-Licence, X-LeadGreen-Release, "
    "X-LeadGreen-Upstream-Commit, X-LeadGreen-Files-Sha256"
)
ORIGIN = {"origin": "https://app.example"}
PREFLIGHT = {
    **ORIGIN,
    "access-control-request-method": "POST",
    "access-control-request-headers": "content-type, x-api-key",
}
PATHS = ["/graphql", "/api/v1/index.json", f"/data/models/acme__Tiny-1B__{'lm-arena-chat'}.json"]


def cors(response: Any) -> dict[str, str]:
    return {k: v for k, v in response.headers.items() if k.startswith("access-control-")}


async def test_any_origin_by_default(synthetic_db, settings) -> None:
    """A page on any origin reads every route, and the headers it needs, without a setting."""
    async with app_client(settings) as (_, client):
        graphql = await client.post("/graphql", json={"query": QUERY}, headers=ORIGIN)
        get = await client.get("/graphql", params={"query": QUERY}, headers=ORIGIN)
        documents = [await client.get(path, headers=ORIGIN) for path in PATHS[1:]]
        plain = await client.post("/graphql", json={"query": QUERY})  # no Origin: the same
    expected = {"access-control-allow-origin": "*", "access-control-expose-headers": EXPOSED}
    for response in (graphql, get, *documents, plain):
        assert response.status_code == 200
        assert cors(response) == expected
        assert "origin" not in response.headers.get("vary", "")


@pytest.mark.parametrize("path", PATHS)
async def test_preflights_are_answered_and_kept_a_day(synthetic_db, settings, path) -> None:
    async with app_client(settings) as (_, client):
        response = await client.options(path, headers=PREFLIGHT)
    assert (response.status_code, response.content) == (204, b"")
    assert cors(response) == {
        "access-control-allow-origin": "*",
        "access-control-allow-methods": "GET, HEAD, POST, PUT, DELETE",
        "access-control-allow-headers": "content-type, x-api-key",
        "access-control-max-age": "86400",
    }
    assert response.headers["x-request-id"]


async def test_an_allow_list_echoes_its_origins_only(synthetic_db, settings) -> None:
    listed = {"cors_origins": ["https://app.example/", "https://other.example"]}
    evil = {"origin": "https://evil.example"}
    async with app_client(settings, **listed) as (_, client):
        allowed = await client.post("/graphql", json={"query": QUERY}, headers=ORIGIN)
        refused = await client.post("/graphql", json={"query": QUERY}, headers=evil)
        document = await client.get(PATHS[1], headers=ORIGIN)
        preflight = await client.options("/graphql", headers=PREFLIGHT)
        refused_preflight = await client.options("/graphql", headers={**PREFLIGHT, **evil})
    for response in (allowed, document):
        assert cors(response) == {
            "access-control-allow-origin": "https://app.example",
            "access-control-expose-headers": EXPOSED,
        }
        assert "origin" in response.headers.get_list("vary")
    assert (refused.status_code, cors(refused)) == (200, {})
    assert "origin" in refused.headers.get_list("vary")
    assert cors(preflight)["access-control-allow-origin"] == "https://app.example"
    assert (refused_preflight.status_code, cors(refused_preflight)) == (204, {})


async def test_an_empty_list_turns_cors_off(synthetic_db, settings) -> None:
    async with app_client(settings, cors_origins=[]) as (_, client):
        response = await client.post("/graphql", json={"query": QUERY}, headers=ORIGIN)
        preflight = await client.options("/graphql", headers=PREFLIGHT)
    assert (cors(response), cors(preflight)) == ({}, {})


def test_preflight_headers_are_echoed_only_when_sane() -> None:
    asked = {b"access-control-request-headers": b"content-type\r\nx-evil: 1"}
    assert (b"access-control-allow-headers", asked[b"access-control-request-headers"]) not in (
        Cors(["*"]).preflight(b"https://a.example", asked)
    )
    private = {b"access-control-request-private-network": b"true"}
    assert (b"access-control-allow-private-network", b"true") in Cors(["*"]).preflight(
        b"https://a.example", private
    )


# --- Request ids ------------------------------------------------------------------------------


def test_request_ids_keep_a_sane_one_and_make_the_others() -> None:
    ids = RequestIds()
    made = [ids(), ids(), ids(b"x" * 129), ids(b"a b"), ids(b"")]
    assert len(set(made)) == len(made)
    assert all(i.startswith(ids.prefix + b"-") for i in made)
    assert ids(b"Req-1.2_3") == b"Req-1.2_3"
    assert ids(b"x" * 128) == b"x" * 128


async def test_every_response_carries_its_request_id(synthetic_db, settings) -> None:
    async with app_client(settings, compress_min_bytes=0) as (_, client):
        responses = {
            "answer": await client.post("/graphql", json={"query": QUERY}),
            "refusal": await client.post("/graphql", content=b"{", headers=_json()),
            "method": await client.patch("/graphql", json={}),
            "document": await client.get(PATHS[1]),
            "missing": await client.get("/nowhere"),
            "health": await client.get("/healthz"),
            "metrics": await client.get("/metrics"),
            "preflight": await client.options("/graphql", headers=PREFLIGHT),
        }
        get = await client.get("/graphql", params={"query": QUERY})
        responses["304"] = await client.get(
            "/graphql", params={"query": QUERY}, headers={"if-none-match": get.headers["etag"]}
        )
        chosen = await client.post(
            "/graphql", json={"query": QUERY}, headers={"x-request-id": "trace-7.a_b"}
        )
    statuses = {name: r.status_code for name, r in responses.items()}
    assert statuses == {
        "answer": 200,
        "refusal": 400,
        "method": 405,
        "document": 200,
        "missing": 404,
        "health": 200,
        "metrics": 200,
        "preflight": 204,
        "304": 304,
    }
    ids = [r.headers.get_list("x-request-id") for r in responses.values()]
    assert all(len(one) == 1 for one in ids)
    assert len({one[0] for one in ids}) == len(ids)
    assert chosen.headers["x-request-id"] == "trace-7.a_b"


async def test_a_bug_answers_the_request_id_of_its_log(synthetic_db, settings, caplog) -> None:
    async def broken(*_args: Any) -> Any:
        raise RuntimeError("a bug")

    async with app_client(settings, execute=broken) as (_, client):
        with caplog.at_level(logging.ERROR, logger="leadgreen"):
            response = await client.post(
                "/graphql", json={"query": QUERY}, headers={"x-request-id": "bug-1"}
            )
    assert response.status_code == 500
    assert response.headers["x-request-id"] == "bug-1"
    assert response.json()["errors"][0]["extensions"]["requestId"] == "bug-1"
    assert any("bug-1" in r.getMessage() and r.exc_info for r in caplog.records)


async def test_a_bug_in_another_route_is_answered_by_the_edge(synthetic_db, settings, caplog):
    """Starlette's outermost error middleware is left out (graph/server/app.py `App`): what a
    route raises is still answered as JSON with its request id, and logged, by the edge."""

    async def broken(_request: Any) -> Any:
        raise RuntimeError("a bug")

    async with app_client(settings) as (app, client):
        app.router.routes.append(Route("/broken", broken))
        with caplog.at_level(logging.ERROR, logger="leadgreen"):
            response = await client.get("/broken", headers={"x-request-id": "bug-2"})
    assert (response.status_code, response.headers["x-request-id"]) == (500, "bug-2")
    assert response.json()["error"]["code"] == "INTERNAL"
    assert response.headers["x-content-type-options"] == "nosniff"
    assert any("bug-2" in r.getMessage() and r.exc_info for r in caplog.records)


async def test_only_the_time_limit_is_answered_504(synthetic_db, settings) -> None:
    """A request cancelled for another reason (its server stopping) is not answered as timed
    out: the cancellation goes on; and the next request is answered as usual."""
    started, executed = asyncio.Event(), []

    async def never(*_args: Any) -> Any:
        executed.append(1)
        started.set()
        await asyncio.Event().wait()

    async with app_client(settings, execute=never) as (_, client):
        request = asyncio.ensure_future(client.post("/graphql", json={"query": QUERY}))
        await started.wait()
        request.cancel()
        with pytest.raises(asyncio.CancelledError):
            await request
        other = await client.post("/graphql", content=b"{", headers=_json())
    assert (executed, other.status_code) == ([1], 400)


def _json() -> dict[str, str]:
    return {"content-type": "application/json"}


class _Buffer:
    """A transport whose write buffer holds `left` bytes; it records being dropped."""

    def __init__(self, left: int) -> None:
        self.left, self.aborted = left, False

    def get_write_buffer_size(self) -> int:
        return self.left

    def abort(self) -> None:
        self.aborted = True


class _Timers:
    def __init__(self) -> None:
        self.set: list[float] = []

    def call_later(self, delay: float, callback: Any) -> object:
        self.set.append(delay)
        return object()  # (never cancelled here)


@pytest.mark.parametrize(
    ("read", "dropped"), [([40, 0], [False, True]), ([10, 10, 0], [False, False, True])]
)
def test_a_client_is_timed_again_while_it_reads_its_answers(read, dropped) -> None:
    """Writing waits for the client: each client timeout, if it has read some of what waits
    (the buffer is smaller), it is timed again; if not, it is dropped (and its requests)."""
    protocol = object.__new__(BoundedHttp)
    protocol.transport, protocol.loop = _Buffer(100), _Timers()  # type: ignore[assignment]
    protocol.logger = logging.getLogger("test")
    protocol.pipeline, protocol.cycle, protocol.answering = collections.deque(), None, None
    protocol._left, protocol._unread = 100, None
    seen = []
    for bytes_read in read:
        protocol.transport.left -= bytes_read  # type: ignore[attr-defined]
        protocol._not_reading()
        seen.append(protocol.transport.aborted)  # type: ignore[attr-defined]
    assert seen == dropped
    assert protocol.loop.set == [BoundedHttp.client_timeout] * (len(read) - 1)  # type: ignore[attr-defined]
