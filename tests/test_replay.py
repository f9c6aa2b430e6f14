"""Answers from the response cache sent again by the protocol (graph/server/replay.py): the app
on the synthetic data, served by BoundedHttp on 127.0.0.1 in the test's loop, asked over raw
sockets; each response compared with what the ordinary path (replay off) answers."""

from __future__ import annotations

import asyncio
import contextlib
import io
import json
import random
import re
from collections.abc import AsyncIterator
from typing import Any

import pytest
from starlette.applications import Starlette
from uvicorn.config import Config
from uvicorn.server import ServerState

from graph.server.app import create_app
from graph.server.documents import MODEL_PAGE
from graph.server.edge import BoundedHttp, HeadLimits, uvicorn_settings
from graph.server.observability import Note, RequestLog
from graph.server.release import Current
from graph.server.replay import MAX_BODY_BYTES, Replays
from graph.server.response_cache import MemoryCache
from graph.server.responses import Answer
from graph.settings import Settings

pytestmark = pytest.mark.anyio
GUARD = 10.0  # seconds a read may wait before the test fails


class Served:
    def __init__(self, app: Starlette, port: int) -> None:
        self.app, self.port = app, port

    @property
    def replayed(self) -> int:
        return self.app.replays.answered if self.app.replays is not None else 0  # type: ignore[attr-defined]


@contextlib.asynccontextmanager
async def serving(settings: Settings, **overrides: Any) -> AsyncIterator[Served]:
    """The app on `settings` with `overrides`, started, served by BoundedHttp on 127.0.0.1."""
    BoundedHttp.limits = HeadLimits(settings)
    update = {"release_poll_seconds": 60, "log_level": "warning", **overrides}
    app = create_app(settings.model_copy(update=update))
    config = Config(app=app, lifespan="off", log_level="warning", **uvicorn_settings(settings))
    config.load()
    loop = asyncio.get_running_loop()
    state = ServerState()
    protocols: list[BoundedHttp] = []

    def protocol() -> BoundedHttp:
        protocols.append(BoundedHttp(config=config, server_state=state, app_state={}, _loop=loop))
        return protocols[-1]

    async with app.router.lifespan_context(app):
        server = await loop.create_server(protocol, "127.0.0.1", 0)
        try:
            yield Served(app, server.sockets[0].getsockname()[1])
        finally:
            server.close()
            for each in protocols:
                each.transport.abort()


async def read_answer(reader: asyncio.StreamReader) -> tuple[bytes, bytes]:
    """One response's head and body (by its Content-Length)."""
    head = await asyncio.wait_for(reader.readuntil(b"\r\n\r\n"), GUARD)
    found = re.search(rb"\r\ncontent-length: (\d+)\r\n", head)
    size = int(found.group(1)) if found and not head.startswith(b"HTTP/1.1 304") else 0
    return head, await asyncio.wait_for(reader.readexactly(size), GUARD)


def without_ids(head: bytes) -> bytes:
    """A head without what differs between two answers of the same request: the date and a
    request id the server made (one the client gave is kept)."""
    head = re.sub(rb"\r\ndate: [^\r]*", b"", head)
    return re.sub(
        rb"\r\nx-request-id: [0-9a-f]{12}-[0-9a-f]+\r\n", b"\r\nx-request-id: -\r\n", head
    )


def post(
    document: str, variables: dict[str, Any], fields: list[tuple[str, str]], pad: int = 0
) -> bytes:
    """A POST of `document`, its JSON body followed by `pad` spaces."""
    body = json.dumps({"query": document, "variables": variables}).encode() + b" " * pad
    head = "".join(f"{name}: {value}\r\n" for name, value in fields)
    return b"POST /graphql HTTP/1.1\r\n%sContent-Length: %d\r\n\r\n%s" % (
        head.encode(),
        len(body),
        body,
    )


def get(document: str, fields: list[tuple[str, str]]) -> bytes:
    from urllib.parse import quote

    head = "".join(f"{name}: {value}\r\n" for name, value in fields)
    return b"GET /graphql?query=%s HTTP/1.1\r\n%s\r\n" % (quote(document).encode(), head.encode())


SMALL = "{ source { name licence } }"
OPTIONS = {
    "Accept": ["application/json", "application/graphql-response+json", "*/*"],
    "Accept-Encoding": ["gzip", "br", "br, gzip", "identity"],
    "Origin": ["https://a.example", "null"],
    "User-Agent": ["one/1", "two/2"],
    "X-Request-Id": ["given-1", "given-2"],
    "If-None-Match": ['W/"nothing"'],
}


def requests(seed: int, count: int) -> list[bytes]:
    """Generated requests: the model page of one model or none, a small answer, by POST or
    GET, with a random choice of the header fields that shape an answer (in random order)."""
    rng = random.Random(seed)
    made = []
    for _ in range(count):
        fields = [("Host", "t")]
        for name, values in OPTIONS.items():
            if rng.random() < 0.5:
                fields.append((name if rng.random() < 0.5 else name.lower(), rng.choice(values)))
        rng.shuffle(fields)
        kind = rng.randrange(3)
        if kind == 0:
            slug = rng.choice(["tiny-1b", "absent"])
            made.append(
                post(MODEL_PAGE, {"slug": slug}, [*fields, ("Content-Type", "application/json")])
            )
        elif kind == 1:
            made.append(post(SMALL, {}, [*fields, ("Content-Type", "application/json")]))
        else:
            made.append(get(SMALL, fields))
    return made


async def answers(port: int, sent: list[bytes]) -> list[tuple[bytes, bytes]]:
    """Each request's answer, in turn on one connection."""
    reader, writer = await asyncio.open_connection("127.0.0.1", port)
    try:
        got = []
        for request in sent:
            writer.write(request)
            got.append(await read_answer(reader))
        return got
    finally:
        writer.close()


async def test_a_request_asked_again_gets_the_answer_the_ordinary_way_gives(
    synthetic_db, settings
) -> None:
    """Generated requests, each asked four times in a shuffled order: every answer equals the
    ordinary path's (replay off) but for its date and request id, and the repeats after the
    second answer from the cache were sent again by the protocol."""
    distinct = requests(seed=21, count=40)
    order = [*distinct, *distinct, *distinct, *distinct]
    random.Random(3).shuffle(order)
    async with serving(settings, replay=False) as ordinary:
        expected = await answers(ordinary.port, order)
        assert ordinary.replayed == 0
    async with serving(settings) as replaying:
        got = await answers(replaying.port, order)
        replayed = replaying.replayed
    for (head, body), (want_head, want_body) in zip(got, expected, strict=True):
        assert (without_ids(head), body) == (without_ids(want_head), want_body)
    statuses = {head.split(b" ", 2)[1] for head, _ in got}
    assert statuses == {b"200"}
    hits = sum(b"x-cache: HIT" in head for head, _ in got)
    assert hits > len(distinct) and replayed > 0 and replayed <= hits
    assert any(b"content-encoding: br" in head for head, _ in got)


@pytest.mark.parametrize("own", ["header", "body"])
async def test_requests_never_the_same_twice_keep_nothing(synthetic_db, settings, own) -> None:
    """The same query, each request with a traceparent of its own (as a traced client sends)
    or a body spaced its own way: every answer from the cache is the same, none is kept nor
    sent again; the same request asked again after them is."""
    fields = [("Host", "t"), ("Content-Type", "application/json")]
    traced = [
        post(SMALL, {}, [*fields, ("traceparent", f"00-{n:032x}-{n:016x}-01")])
        if own == "header"
        else post(SMALL, {}, fields, pad=n)
        for n in range(1, 301)
    ]
    async with serving(settings) as served:
        got = await answers(served.port, traced)
        assert (served.replayed, len(served.app.replays)) == (0, 0)  # type: ignore[attr-defined]
        again = await answers(served.port, [traced[0]] * 3)
        assert (served.replayed, len(served.app.replays)) == (1, 1)  # type: ignore[attr-defined]
    assert [b"x-cache: HIT" in head for head, _ in got] == [False] + [True] * 299
    assert {body for _, body in got + again} == {got[0][1]}
    assert json.loads(got[0][1])["data"]["source"]["name"] == "Synthetic"


async def test_the_answer_sent_again_is_logged_and_counted_as_the_ordinary_hit(
    synthetic_db, settings
) -> None:
    sent = post(
        MODEL_PAGE, {"slug": "tiny-1b"}, [("Host", "t"), ("Content-Type", "application/json")]
    )
    async with serving(settings, log_level="info") as served:
        log = served.app.state.request_log
        log.stream = io.StringIO()
        got = await answers(served.port, [sent] * 4)
        assert served.replayed == 1
        metrics = (await answers(served.port, [b"GET /metrics HTTP/1.1\r\nHost: t\r\n\r\n"]))[0][1]
        log.flush()
    heads = [head for head, _ in got]
    ids = [re.search(rb"x-request-id: (\S+)", head).group(1) for head in heads]  # type: ignore[union-attr]
    assert len(set(ids)) == 4
    lines = [json.loads(line) for line in log.stream.getvalue().splitlines()]
    graphql = [line for line in lines if line["path"] == "/graphql"]
    assert [line["request_id"] for line in graphql] == [i.decode() for i in ids]
    for line in graphql:
        del line["request_id"], line["timestamp"], line["duration_ms"]
    assert graphql[3] == graphql[2] == graphql[1] and graphql[1]["cache"] == "hit"
    assert graphql[1]["operation"] == "ModelPage"
    assert b'leadgreen_response_cache_total{result="hit"} 3.0' in metrics


async def test_pipelined_requests_are_answered_in_order(synthetic_db, settings) -> None:
    """Many requests in one write, repeats and others mixed: each answer whole, in order."""
    one = post(SMALL, {}, [("Host", "t"), ("Content-Type", "application/json")])
    other = post(
        MODEL_PAGE, {"slug": "absent"}, [("Host", "t"), ("Content-Type", "application/json")]
    )
    async with serving(settings) as served:
        await answers(served.port, [one, other] * 3)
        before = served.replayed
        order = [one, other] * 40
        reader, writer = await asyncio.open_connection("127.0.0.1", served.port)
        writer.write(b"".join(order))
        got = [await read_answer(reader) for _ in order]
        writer.close()
        assert served.replayed - before == len(order)
        expected = [body for _, body in await answers(served.port, [one, other])]
    assert [body for _, body in got] == expected * 40
    assert json.loads(expected[0])["data"]["source"]["name"] == "Synthetic"
    assert json.loads(expected[1])["data"]["model"] is None


async def test_a_body_in_pieces_is_sent_again_once_whole(synthetic_db, settings) -> None:
    sent = post(SMALL, {}, [("Host", "t"), ("Content-Type", "application/json")])
    async with serving(settings) as served:
        first = await answers(served.port, [sent] * 3)
        reader, writer = await asyncio.open_connection("127.0.0.1", served.port)
        for at in range(0, len(sent), 7):
            writer.write(sent[at : at + 7])
            await writer.drain()
            await asyncio.sleep(0)
        head, body = await read_answer(reader)
        writer.close()
        assert served.replayed == 1
    assert (without_ids(head), body) == (without_ids(first[2][0]), first[2][1])


@pytest.mark.parametrize(
    "variant",
    ["expect", "chunked", "close", "head", "large"],
)
async def test_requests_the_protocol_leaves_to_the_app_are_answered_the_ordinary_way(
    synthetic_db, settings, variant
) -> None:
    """A request waiting for 100-continue, a chunked body, a connection to close, HEAD and a
    body past MAX_BODY_BYTES: answered as ever (the same answer as the cached one), none sent
    again by the protocol."""
    fields = [("Host", "t"), ("Content-Type", "application/json")]
    padding = {"pad": "x" * (MAX_BODY_BYTES if variant == "large" else 0)}
    plain = get(SMALL, [("Host", "t")]) if variant == "head" else post(SMALL, padding, fields)
    async with serving(settings) as served:
        cached = await answers(served.port, [plain] * 3)
        body = plain.split(b"\r\n\r\n", 1)[1]
        reader, writer = await asyncio.open_connection("127.0.0.1", served.port)
        if variant == "expect":
            head = plain.split(b"\r\n\r\n", 1)[0] + b"\r\nExpect: 100-continue\r\n\r\n"
            writer.write(head)
            assert await asyncio.wait_for(reader.readuntil(b"\r\n\r\n"), GUARD) == (
                b"HTTP/1.1 100 Continue\r\n\r\n"
            )
            writer.write(body)
        elif variant == "chunked":
            writer.write(
                b"POST /graphql HTTP/1.1\r\nHost: t\r\nContent-Type: application/json\r\n"
                b"Transfer-Encoding: chunked\r\n\r\n%x\r\n%s\r\n0\r\n\r\n" % (len(body), body)
            )
        elif variant == "close":
            writer.write(plain.replace(b"Host: t\r\n", b"Host: t\r\nConnection: close\r\n"))
        elif variant == "head":
            writer.write(b"HEAD" + plain[3:])
        else:
            writer.write(plain)
        if variant == "head":
            head, answer = await asyncio.wait_for(reader.readuntil(b"\r\n\r\n"), GUARD), b""
        else:
            head, answer = await read_answer(reader)
        writer.close()
        assert served.replayed == 0
    assert head.startswith(b"HTTP/1.1 200 ") and b"x-cache: HIT" in head
    assert answer == (b"" if variant == "head" else cached[1][1])


@pytest.mark.parametrize("overrides", [{"rate_limit": True}, {"cache": "off"}, {"replay": False}])
async def test_no_answer_is_sent_again_with_rate_limiting_without_a_cache_or_when_off(
    synthetic_db, settings, overrides
) -> None:
    async with serving(settings, **overrides) as served:
        assert served.app.replays is None  # type: ignore[attr-defined]


# --- Replays alone ----------------------------------------------------------------------------


class Watcher:
    """A release watcher's freshest reading, set by the test."""

    fresh: Current | None = None


def current(token: bytes) -> Current:
    return Current(release=None, token=token)  # type: ignore[arg-type]


SCOPE = {
    "method": "POST",
    "path": "/graphql",
    "raw_path": b"/graphql",
    "query_string": b"",
    "headers": [(b"host", b"t"), (b"x-request-id", b"abc")],
}
SENT = [
    (b"x-cache", b"HIT"),
    (b"content-length", b"2"),
    (b"x-request-id", b"first"),
    (b"access-control-allow-origin", b"*"),
]


def kept(watcher: Watcher, cache: MemoryCache) -> Replays:
    replays = Replays(
        cache, watcher, RequestLog(stream=io.StringIO()), lambda given: given or b"new", 1 << 20
    )  # type: ignore[arg-type]
    note = Note(b"first", ())
    note.operation = "Q"
    for _ in range(2):  # kept on the second answer from the cache
        replays.keep(SCOPE, b"{}", b"key", b"t1", list(SENT), note)
    return replays


def test_an_answer_is_sent_again_only_for_its_release_while_the_cache_holds_it() -> None:
    watcher, cache = Watcher(), MemoryCache(10, 1 << 20)
    cache.store(b"key", Answer(b"{}"))
    replays = kept(watcher, cache)
    assert replays.answer(dict(SCOPE), b"{}") is None  # no fresh reading of the release
    watcher.fresh = current(b"t2")
    assert replays.answer(dict(SCOPE), b"{}") is None  # another release
    watcher.fresh = current(b"t1")
    assert replays.answer(dict(SCOPE), b"{}") == (
        b"x-cache: HIT\r\ncontent-length: 2\r\nx-request-id: abc\r\n"
        b"access-control-allow-origin: *\r\n\r\n",
        b"{}",
    )
    assert replays.answer(dict(SCOPE), b"{ }") is None  # another body
    other = {**SCOPE, "headers": [(b"host", b"u")]}
    assert replays.answer(other, b"{}") is None  # another header field
    cache.forget_local()
    assert replays.answer(dict(SCOPE), b"{}") is None  # the answer left the cache


def test_what_is_kept_is_bounded_by_bytes() -> None:
    """At most its bytes of requests (each counted with its body and header fields), but the
    eighth of them its hashes of requests seen once take; a body past MAX_BODY_BYTES is never
    kept."""
    watcher, cache = Watcher(), MemoryCache(10, 1 << 20)
    watcher.fresh = current(b"t")
    cache.store(b"k", Answer(b"{}"))
    replays = Replays(cache, watcher, RequestLog(stream=io.StringIO()), lambda given: b"i", 4_000)  # type: ignore[arg-type]
    for n in range(100):
        scope = {**SCOPE, "query_string": b"%d" % n}
        for _ in range(2):
            replays.keep(scope, b"x" * 500, b"k", b"t", list(SENT), Note(b"first", ()))
    assert len(replays) == 3  # 3 * (500 + 400 + the fields' 5 + the path's 8 + 2) <= 3,500
    assert replays.answer({**SCOPE, "query_string": b"99"}, b"x" * 500) is not None
    assert replays.answer({**SCOPE, "query_string": b"97"}, b"x" * 500) is not None
    assert replays.answer({**SCOPE, "query_string": b"96"}, b"x" * 500) is None
    large = b"x" * (MAX_BODY_BYTES + 1)
    for _ in range(2):
        replays.keep(SCOPE, large, b"k", b"t", list(SENT), Note(b"first", ()))
    assert replays.answer(dict(SCOPE), large) is None


def test_a_request_is_kept_on_its_second_answer_among_the_last_seen() -> None:
    """The first answer leaves only the request's hash, among the last max_bytes / 8 / 100
    seen (here 4): a request seen again within them is kept, one pushed out by others is
    seen anew; requests never the same twice keep nothing."""
    watcher, cache = Watcher(), MemoryCache(10, 1 << 20)
    watcher.fresh = current(b"t")
    cache.store(b"k", Answer(b"{}"))
    replays = Replays(cache, watcher, RequestLog(stream=io.StringIO()), lambda given: b"i", 3_200)  # type: ignore[arg-type]

    def keep(n: int) -> int:
        scope = {**SCOPE, "query_string": b"%d" % n}
        replays.keep(scope, b"{}", b"k", b"t", list(SENT), Note(b"first", ()))
        return len(replays)

    assert [keep(n) for n in range(1000)] == [0] * 1000  # each once: none kept
    assert [keep(n) for n in (2000, 1, 2, 3, 2000)] == [0, 0, 0, 0, 1]  # 2000 seen 4 ago: kept
    assert [keep(n) for n in (3000, 4, 5, 6, 7, 3000)] == [1] * 6  # 3000 seen 5 ago: pushed out
    assert replays.answer({**SCOPE, "query_string": b"2000"}, b"{}") is not None
    assert replays.answer({**SCOPE, "query_string": b"3000"}, b"{}") is None
