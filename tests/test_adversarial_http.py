"""The HTTP edge given hostile requests (the issue's classes 5 and 6): limits on the URL and
the headers, JSON for every refusal, HEAD, the security headers, conditional GETs alike on
/graphql and the documents, per-client answers never publicly cacheable, and proxies trusted
only when named.

Through the ASGI app first; then (mark `hostile`) against `leadgreen serve` on 127.0.0.1 with
raw sockets, for what the server itself refuses while reading a request (graph/server/edge.py).
"""

from __future__ import annotations

import contextlib
import socket
from collections.abc import Iterator
from typing import Any

import httpx
import pytest

from graph.server.edge import uvicorn_settings
from graph.settings import Settings
from tests.conftest import app_client
from tests.live import serving

pytestmark = pytest.mark.anyio

QUERY = "/graphql?query=%7B%20gpus%20%7B%20name%20%7D%20%7D"
GET_ROUTES = [
    QUERY,
    "/healthz",
    "/readyz",
    "/api/v1/index.json",
    "/api/v1/models/tiny-1b.json",
    "/data/index.json",
]
SECURITY = {
    "x-content-type-options": "nosniff",
    "referrer-policy": "no-referrer",
    "x-frame-options": "DENY",
}


def code(response: httpx.Response) -> str:
    """The refusal's code, in either of the API's shapes (GraphQL's errors, the documents')."""
    assert response.headers["content-type"].startswith("application/"), response.text[:200]
    body = response.json()
    if "errors" in body:
        found: str = body["errors"][0]["extensions"]["code"]
    else:
        found = body["error"]["code"]
    return found


@pytest.mark.parametrize("path", ["/graphql?query={__typename}", "/api/v1/index.json", "/healthz"])
async def test_too_many_or_too_large_headers_are_431(synthetic_db, client, path) -> None:
    many = [(f"x-h{i}", "a") for i in range(101)]
    large = {"x-large": "a" * 17_000}
    for headers in (many, large):
        response = await client.get(path, headers=headers)
        assert (response.status_code, code(response)) == (431, "HEADERS_TOO_LARGE")


@pytest.mark.parametrize(
    "path", ["/graphql?query={__typename}&x=", "/api/v1/index.json?x=", "/data/x?y="]
)
async def test_a_long_url_is_414_on_every_route(synthetic_db, client, path) -> None:
    response = await client.get(path + "a" * 9000)
    assert (response.status_code, code(response)) == (414, "URL_TOO_LONG")


async def test_a_long_url_is_414_in_the_media_type_asked_for(synthetic_db, client) -> None:
    accept = "application/graphql-response+json"
    response = await client.get(
        "/graphql?query={__typename}&x=" + "a" * 9000, headers={"accept": accept}
    )
    assert (response.status_code, response.headers["content-type"]) == (414, accept)


@pytest.mark.parametrize("path", GET_ROUTES)
async def test_head_is_get_without_the_body(synthetic_db, client, path) -> None:
    got = await client.get(path)
    head = await client.head(path)
    same = ("content-type", "content-length", "etag", "cache-control")
    assert (head.status_code, head.content) == (got.status_code, b"")
    assert {k: head.headers.get(k) for k in same} == {k: got.headers.get(k) for k in same}


async def test_every_answer_has_the_security_headers(synthetic_db, client) -> None:
    """Answers, refusals and errors alike, on every route (a JSON answer is never sniffed
    into a script; no page of ours may be framed by another site)."""
    responses = [
        await client.get(QUERY),
        await client.post("/graphql", json={"query": "{ nope }"}),
        await client.post("/graphql", content=b"{", headers={"content-type": "application/json"}),
        await client.put("/graphql"),
        await client.get("/graphql", headers={"accept": "text/html"}),
        await client.get("/api/v1/index.json"),
        await client.get("/api/v1/models/none.json"),
        await client.get("/nowhere"),
        await client.get("/healthz", headers=[(f"x-{i}", "a") for i in range(200)]),
        await client.get("/data/index.json?x=" + "a" * 9000),
    ]
    for response in responses:
        assert {k: response.headers.get(k) for k in SECURITY} == SECURITY, response.url
        assert "frame-ancestors 'none'" in response.headers["content-security-policy"]


# --- conditional GETs ------------------------------------------------------------------------


@pytest.mark.parametrize("path", [QUERY, "/api/v1/index.json", "/data/index.json"])
async def test_conditional_gets_are_answered_alike(synthetic_db, client, path) -> None:
    """If-None-Match (weak comparison, lists, `*`) gets 304 on /graphql as on the documents,
    with the ETag; any other tag the answer."""
    first = await client.get(path)
    etag = first.headers["etag"]
    opaque = etag.removeprefix("W/")
    for if_none_match, status in [
        (etag, 304),
        (opaque, 304),
        (f"W/{opaque}", 304),
        (f'"other", {etag}', 304),
        ("*", 304),
        ('"other"', 200),
        ('W/"other"', 200),
    ]:
        response = await client.get(path, headers={"if-none-match": if_none_match})
        assert response.status_code == status, (if_none_match, response.status_code)
        assert response.headers["etag"] == etag
        if status == 304:
            assert response.content == b""


async def test_get_answers_hold_nothing_of_the_client(synthetic_db, settings) -> None:
    """A GET answer is public (shared caches keep it), so it is the same bytes for every client:
    with rate limiting, two clients' GETs are equal and hold no throttle status, while a POST
    answer carries its client's."""
    for rate_limit in (True, False):
        update = {"rate_limit": rate_limit, "api_keys": ["key-a", "key-b"]}
        async with app_client(settings, **update) as (_, c):
            first = await c.get(QUERY, headers={"x-api-key": "key-a"})
            other = await c.get(QUERY, headers={"x-api-key": "key-b"})
            posted = await c.post("/graphql", json={"query": "{ gpus { name } }"})
        assert [r.headers["cache-control"] for r in (first, other)] == ["public, max-age=60"] * 2
        assert first.content == other.content
        assert "throttleStatus" not in first.json()["extensions"]["cost"]
        assert ("throttleStatus" in posted.json()["extensions"]["cost"]) is rate_limit


def test_uvicorn_reads_no_proxy_headers_itself() -> None:
    """The app believes X-Forwarded-For, from the trusted proxies only
    (tests/test_client_identity.py); uvicorn's own reading, trusting 127.0.0.1, stays off."""
    for settings in (Settings(), Settings(trusted_proxies="10.0.0.0/8, 192.0.2.1")):
        assert uvicorn_settings(settings)["proxy_headers"] is False
    assert uvicorn_settings(Settings())["server_header"] is False


# --- against `leadgreen serve` ---------------------------------------------------------------


@pytest.fixture(scope="module")
def served(tmp_path_factory: pytest.TempPathFactory) -> Iterator[int]:
    """`leadgreen serve` on the synthetic snapshot, rate limited, on a port of its own."""
    with serving(
        tmp_path_factory.mktemp("served"),
        LEADGREEN_RATE_LIMIT="true",
        LEADGREEN_LIMITS="standard,rate_limit_capacity=400,rate_limit_restore_rate=0.001",
    ) as port:
        yield port


def raw(port: int, request: bytes) -> tuple[int, dict[str, str], bytes]:
    """Send `request` whole, read the answer until the server closes (or 10 s)."""
    with socket.create_connection(("127.0.0.1", port), timeout=10) as sock:
        with contextlib.suppress(OSError):
            sock.sendall(request)
        data = b""
        with contextlib.suppress(OSError):
            while chunk := sock.recv(65536):
                data += chunk
    head, _, body = data.partition(b"\r\n\r\n")
    lines = head.decode("latin-1").split("\r\n")
    headers = dict(line.lower().split(": ", 1) for line in lines[1:])
    return int(lines[0].split()[1]), headers, body


@pytest.mark.hostile
@pytest.mark.parametrize(
    ("name", "request_bytes", "status", "expected"),
    [
        (
            "a 70 KB URL",
            b"GET /graphql?query={__typename}&x=" + b"a" * 70_000 + b" HTTP/1.1\r\nHost: t\r\n\r\n",
            414,
            "URL_TOO_LONG",
        ),
        (
            "a 1 MB URL",
            b"GET /data/x?y=" + b"a" * 1_000_000 + b" HTTP/1.1\r\nHost: t\r\n\r\n",
            414,
            "URL_TOO_LONG",
        ),
        (
            "a 30 MB header",
            b"GET /healthz HTTP/1.1\r\nHost: t\r\nX-Big: " + b"a" * 30_000_000 + b"\r\n\r\n",
            431,
            "HEADERS_TOO_LARGE",
        ),
        (
            "5,000 header fields",
            b"GET /healthz HTTP/1.1\r\nHost: t\r\n"
            + b"".join(b"X-%d: a\r\n" % i for i in range(5000))
            + b"\r\n",
            431,
            "HEADERS_TOO_LARGE",
        ),
        ("not HTTP", b"\x16\x03\x01\x02\x00\x01\x00\x01\xfc\x03\x03\r\n\r\n", 400, "BAD_REQUEST"),
        ("a bad request line", b"GET / HTTP/9.9 extra\r\n\r\n", 400, "BAD_REQUEST"),
    ],
)
def test_the_server_refuses_what_it_cannot_read_as_json(
    served, name, request_bytes, status, expected
) -> None:
    got, headers, body = raw(served, request_bytes)
    assert (got, headers["content-type"]) == (status, "application/json"), (name, body[:200])
    assert body.startswith(b'{"errors":[{"message":') and expected.encode() in body
    assert headers["x-content-type-options"] == "nosniff"
    assert "server" not in headers


@pytest.mark.hostile
def test_served_answers_say_no_server_and_the_security_headers(served) -> None:
    response = httpx.get(f"http://127.0.0.1:{served}{QUERY}")
    assert "server" not in response.headers
    assert {k: response.headers[k] for k in SECURITY} == SECURITY
    head = httpx.head(f"http://127.0.0.1:{served}{QUERY}")
    assert (head.status_code, head.content) == (200, b"")


@pytest.mark.hostile
def test_x_forwarded_for_is_not_believed_by_default(served) -> None:
    """Rate limited by the peer's address: naming other addresses in X-Forwarded-For does not
    get a client a fresh bucket."""

    def available(forwarded: str) -> Any:
        response = httpx.post(
            f"http://127.0.0.1:{served}/graphql",
            json={"query": "{ tasks { name } }"},
            headers={"x-forwarded-for": forwarded},
        )
        return response.json()["extensions"]["cost"]["throttleStatus"]["currentlyAvailable"]

    first, second = available("203.0.113.1"), available("203.0.113.2")
    assert second < first  # the same bucket, paying again
