"""Slow clients against `leadgreen serve` on 127.0.0.1 (the issue's class 2; mark `hostile`):
a request head or body that stalls is answered 408 and closed within the client timeout, a body
that keeps coming is not, and a process past its open connections refuses the next one."""

from __future__ import annotations

import asyncio
import contextlib
import json
import socket
import time
from collections.abc import AsyncIterator, Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import httpx
import pytest
from graphql import get_introspection_query
from uvicorn.config import Config
from uvicorn.server import ServerState

from bench.databases import database
from graph.server.edge import BoundedHttp, HeadLimits
from graph.settings import Settings
from tests.conftest import BACKENDS, POSTGRES_URL
from tests.live import serving, wait_until

pytestmark = pytest.mark.hostile

TIMEOUT = 1.0  # LEADGREEN_CLIENT_TIMEOUT_SECONDS of the served process
GUARD = TIMEOUT + 5  # a read waiting longer than this fails the test
LIMIT = 2.0  # LEADGREEN_REQUEST_TIMEOUT_SECONDS of the `hurried` process
MAX_CONNECTIONS = 4

GET = b"GET /healthz HTTP/1.1\r\nHost: t\r\nAccept: application/json\r\nX-Note: slow\r\n\r\n"
BODY = json.dumps({"query": "{ gpus { name } }"}).encode()
POST = (
    b"POST /graphql HTTP/1.1\r\nHost: t\r\nContent-Type: application/json\r\n"
    b"Content-Length: %d\r\n\r\n" % len(BODY)
)
CHUNKED = (
    b"POST /graphql HTTP/1.1\r\nHost: t\r\nContent-Type: application/json\r\n"
    b"Transfer-Encoding: chunked\r\n\r\n"
)


class Served(int):
    """A served process's port, and its log."""

    log: Path


@pytest.fixture(scope="module", params=BACKENDS)
def served(
    request: pytest.FixtureRequest, tmp_path_factory: pytest.TempPathFactory
) -> Iterator[Served]:
    directory = tmp_path_factory.mktemp("slow")
    with (
        database(request.param, directory, POSTGRES_URL) as url,
        serving(
            directory, LEADGREEN_DATABASE_URL=url, LEADGREEN_CLIENT_TIMEOUT_SECONDS=str(TIMEOUT)
        ) as port,
    ):
        served = Served(port)
        served.log = directory / "serve.log"
        yield served


@pytest.fixture(scope="module")
def hurried(tmp_path_factory: pytest.TempPathFactory) -> Iterator[int]:
    with serving(
        tmp_path_factory.mktemp("hurried"),
        LEADGREEN_CLIENT_TIMEOUT_SECONDS=str(TIMEOUT),
        LEADGREEN_REQUEST_TIMEOUT_SECONDS=str(LIMIT),
    ) as port:
        yield port


@pytest.fixture(scope="module")
def crowded(tmp_path_factory: pytest.TempPathFactory) -> Iterator[int]:
    with serving(
        tmp_path_factory.mktemp("crowded"),
        LEADGREEN_CLIENT_TIMEOUT_SECONDS="60",
        LEADGREEN_MAX_CONNECTIONS=str(MAX_CONNECTIONS),
    ) as port:
        yield port


def connect(port: int) -> socket.socket:
    sock = socket.create_connection(("127.0.0.1", int(port)), timeout=GUARD)
    sock.settimeout(GUARD)
    return sock


def read_to_close(sock: socket.socket) -> bytes:
    """What the server sends until it closes; a read waiting past GUARD raises."""
    data = b""
    while chunk := sock.recv(65536):
        data += chunk
    return data


def status_and_code(data: bytes) -> tuple[int, dict[str, str], str]:
    head, _, body = data.partition(b"\r\n\r\n")
    lines = head.decode("latin-1").split("\r\n")
    headers = dict(line.lower().split(": ", 1) for line in lines[1:])
    return int(lines[0].split()[1]), headers, json.loads(body)["errors"][0]["extensions"]["code"]


def read_one_answer(sock: socket.socket) -> bytes:
    """One whole response's head (the body read by its Content-Length) on a kept-alive
    connection."""
    data = b""
    while b"\r\n\r\n" not in data:
        data += sock.recv(65536)
    head, _, body = data.partition(b"\r\n\r\n")
    fields = dict(line.lower().split(b": ", 1) for line in head.split(b"\r\n")[1:])
    while len(body) < int(fields[b"content-length"]):
        body += sock.recv(65536)
    return head


# Where a request stops: the head cut after so many bytes (0: nothing sent at all), the body
# cut short, a chunked body stopping after a chunk.
STALLS = [
    *((f"head cut at {cut}", GET[:cut]) for cut in (0, 1, 4, 17, len(GET) // 2, len(GET) - 2)),
    *(
        (f"{name} field begun", GET[:-2] + field)
        for name, field in [
            ("a name", b"X-Lon"),
            ("a value", b"X-Long: aaaa"),
        ]
    ),
    ("body cut at 0", POST),
    ("body cut at half", POST + BODY[: len(BODY) // 2]),
    ("body short of one byte", POST + BODY[:-1]),
    (
        "chunked, after a chunk",
        CHUNKED + b"%x\r\n%s\r\n" % (len(BODY) // 2, BODY[: len(BODY) // 2]),
    ),
    ("chunked, within a chunk size", CHUNKED + b"1"),
]


@pytest.mark.parametrize(("name", "sent"), STALLS, ids=[name for name, _ in STALLS])
def test_a_stalled_request_is_answered_408_and_closed(served, name, sent) -> None:
    with connect(served) as sock:
        sock.sendall(sent)
        status, headers, code = status_and_code(read_to_close(sock))
    assert (status, headers["connection"], code) == (408, "close", "REQUEST_TIMEOUT")


@pytest.mark.parametrize("cut", [1, len(GET) // 2, len(GET) - 1])
def test_a_kept_alive_connection_stalling_in_its_next_head_is_closed(served, cut) -> None:
    """The next request's head is timed from its first byte."""
    with connect(served) as sock:
        sock.sendall(GET)
        first = read_one_answer(sock)
        sock.sendall(GET[:cut])
        status, _, code = status_and_code(read_to_close(sock))
    assert (first.split(b"\r\n", 1)[0], status, code) == (
        b"HTTP/1.1 200 OK",
        408,
        "REQUEST_TIMEOUT",
    )


@pytest.mark.parametrize("pieces", [3, 6])
def test_a_body_that_keeps_coming_is_not_timed_out(served, pieces) -> None:
    """Each piece within the timeout of the one before; the whole longer than it."""
    size = -(-len(BODY) // pieces)
    with connect(served) as sock:
        sock.sendall(POST)
        for start in range(0, len(BODY), size):
            time.sleep(TIMEOUT / 2)
            sock.sendall(BODY[start : start + size])
        head = read_one_answer(sock)
    assert head.split(b"\r\n", 1)[0] == b"HTTP/1.1 200 OK"


@pytest.mark.parametrize(
    ("name", "begun", "piece"),
    [
        ("chunked", CHUNKED, b"1\r\n \r\n"),
        ("of announced length", POST.replace(b"%d" % len(BODY), b"900000"), b" "),
    ],
)
def test_a_body_still_coming_at_the_time_limit_ends_its_connection(
    hurried, name, begun, piece
) -> None:
    """A body that keeps coming, each piece within the client timeout, for longer than the
    request's time limit: answered 504 REQUEST_TIMEOUT at the limit, and the connection closed
    (it was held for as long as the client kept sending)."""
    ended = None
    with connect(hurried) as sock:
        sock.sendall(begun)
        sock.settimeout(TIMEOUT / 2)  # a piece each half of the client timeout
        answer, started = b"", time.monotonic()
        while time.monotonic() - started < LIMIT + GUARD:
            try:
                sock.sendall(piece)
                chunk = sock.recv(65536)
            except TimeoutError:
                continue
            except OSError as error:  # the server gone while a piece was sent
                ended = type(error).__name__
                break
            if not chunk:
                ended = "closed"
                break
            answer += chunk
    status, _, code = status_and_code(answer)
    assert (status, code, ended) == (504, "REQUEST_TIMEOUT", "closed")


def statuses(data: bytes) -> list[int]:
    """The statuses of the whole responses in `data`, in order (each body read by its
    Content-Length; a response not yet whole ends the list)."""
    found = []
    while b"\r\n\r\n" in data:
        head, _, rest = data.partition(b"\r\n\r\n")
        lines = head.split(b"\r\n")
        fields = dict(line.lower().split(b": ", 1) for line in lines[1:])
        size = int(fields[b"content-length"])
        if len(rest) < size:
            break
        found.append(int(lines[0].split()[1]))
        data = rest[size:]
    return found


def read_answers(sock: socket.socket, count: int) -> list[int]:
    """The statuses of the next `count` responses on a kept-alive connection."""
    data = b""
    while len(found := statuses(data)) < count:
        data += sock.recv(65536)
    return found


# Requests refused in their head, each after requests pipelined before it (sent in the same
# write): the answers to those come first, in order, then the refusal, then the close.
LIMITS = Settings()
REFUSED_HEADS = [
    ("URL past its limit", b"GET /" + b"u" * LIMITS.max_url_bytes + b" HTTP/1.1\r\n\r\n", 414),
    (
        "header fields past their bytes",
        b"GET /healthz HTTP/1.1\r\nX-Big: " + b"b" * LIMITS.max_header_bytes + b"\r\n\r\n",
        431,
    ),
    ("not HTTP", b"GET /healthz HTTP/1.1\r\nno colon here\r\n\r\n", 400),
]


@pytest.mark.parametrize("before", [1, 7, 60])
@pytest.mark.parametrize(
    ("name", "refused", "status"), REFUSED_HEADS, ids=[name for name, _, _ in REFUSED_HEADS]
)
def test_a_refusal_after_pipelined_requests_follows_their_answers(
    served, before, name, refused, status
) -> None:
    with connect(served) as sock:
        sock.sendall(GET * before + refused)
        answered = statuses(read_to_close(sock))
    assert answered == [200] * before + [status]
    assert [line for line in served.log.read_text().splitlines() if '"error"' in line] == []


@pytest.mark.parametrize("cut", [1, 20, len(GET) - 1])
def test_pipelined_requests_past_the_head_limit_together_are_each_answered(served, cut) -> None:
    """Requests read whole are not counted in the head being read after them: a read of
    more bytes than a head may hold, the last request's head cut in it, is not refused."""
    many = -(-(LIMITS.max_url_bytes + LIMITS.max_header_bytes) // len(GET)) * 3
    with connect(served) as sock:
        sock.sendall(GET * many + GET[:cut])
        time.sleep(TIMEOUT / 4)
        sock.sendall(GET[cut:])
        answered = read_answers(sock, many + 1)
    assert answered == [200] * (many + 1)


@pytest.mark.parametrize("sent_first", [1, len(BODY) // 2, len(BODY) - 1])
def test_a_pipelined_request_whose_body_is_still_coming_is_answered(served, sent_first) -> None:
    """A request answered while the one pipelined after it still sends its body: the
    second is read whole and answered, not given up with the first."""
    with connect(served) as sock:
        sock.sendall(GET + POST + BODY[:sent_first])
        time.sleep(TIMEOUT / 2)
        sock.sendall(BODY[sent_first:])
        answered = read_answers(sock, 2)
    assert answered == [200, 200]


INTROSPECTION = json.dumps({"query": get_introspection_query(descriptions=True)}).encode()
ASKED = (
    b"POST /graphql HTTP/1.1\r\nHost: t\r\nContent-Type: application/json\r\n"
    b"Content-Length: %d\r\n\r\n%s" % (len(INTROSPECTION), INTROSPECTION)
)


def reader(port: int) -> socket.socket:
    """A connection whose client takes at most 4 KB at a time into its buffer."""
    sock = socket.socket()
    sock.setsockopt(socket.SOL_SOCKET, socket.SO_RCVBUF, 4096)
    sock.settimeout(GUARD)
    sock.connect(("127.0.0.1", int(port)))
    return sock


def test_a_client_that_stops_reading_its_answers_is_dropped(served) -> None:
    """Forty answers asked at once (several MB), none read: once they wait for the client
    longer than the client timeout, the connection is dropped with what it left unread, the
    requests still to be answered with it (nothing logged as failing)."""
    with reader(served) as sock:
        sock.sendall(ASKED * 40)
        time.sleep(3 * TIMEOUT)  # nothing read meanwhile
        received, ended = 0, "open"
        try:
            while chunk := sock.recv(65536):
                received += len(chunk)
            ended = "closed"
        except ConnectionResetError:
            ended = "reset"
        except TimeoutError:
            pass
    assert ended != "open" and received < 40 * answer_size(served), (ended, received)
    assert [line for line in served.log.read_text().splitlines() if '"error"' in line] == []


def answer_size(port: int) -> int:
    """The bytes of one whole answer to ASKED, its head and body."""
    with connect(port) as sock:
        sock.sendall(ASKED)
        head = read_one_answer(sock)
    fields = dict(line.lower().split(b": ", 1) for line in head.split(b"\r\n")[1:])
    return len(head) + 4 + int(fields[b"content-length"])


@pytest.mark.parametrize("more", [1, 3])
def test_past_max_connections_a_connection_is_refused_503(crowded, more) -> None:
    with contextlib.ExitStack() as stack:
        held = [stack.enter_context(connect(crowded)) for _ in range(MAX_CONNECTIONS)]
        for sock in held:  # each answered once, so each is open in the server
            sock.sendall(GET)
            assert read_one_answer(sock).split(b"\r\n", 1)[0] == b"HTTP/1.1 200 OK"
        refused = []
        for _ in range(more):
            with connect(crowded) as sock:
                refused.append(status_and_code(read_to_close(sock)))
    assert [(status, headers["retry-after"], code) for status, headers, code in refused] == [
        (503, "1", "OVERLOADED")
    ] * more
    # The held ones closed, a connection is served again (once the refused ones have gone).
    healthz = f"http://127.0.0.1:{crowded}/healthz"
    assert wait_until(lambda: httpx.get(healthz).status_code == 200, GUARD, "a connection")


# --- In process: BoundedHttp on 127.0.0.1 with a small app, its state looked at --------------


async def sized(scope: dict[str, Any], receive: Any, send: Any) -> None:
    """An app answering GET /N with N bytes."""
    if scope["type"] != "http":
        return
    size = int(scope["path"][1:])
    await send(
        {
            "type": "http.response.start",
            "status": 200,
            "headers": [(b"content-length", b"%d" % size)],
        }
    )
    await send({"type": "http.response.body", "body": b"x" * size})


@dataclass
class Wire:
    port: int
    state: ServerState
    protocols: list[BoundedHttp]


@contextlib.asynccontextmanager
async def wire(monkeypatch: pytest.MonkeyPatch, **limits: Any) -> AsyncIterator[Wire]:
    """BoundedHttp serving `sized` on 127.0.0.1 in this loop, with these class limits."""
    monkeypatch.setattr(BoundedHttp, "limits", HeadLimits(Settings()))
    for name, value in limits.items():
        monkeypatch.setattr(BoundedHttp, name, value)
    config = Config(app=sized, log_level="warning")
    config.load()
    loop = asyncio.get_running_loop()
    made = Wire(0, ServerState(), [])

    def protocol() -> BoundedHttp:
        made.protocols.append(
            BoundedHttp(config=config, server_state=made.state, app_state={}, _loop=loop)
        )
        return made.protocols[-1]

    server = await loop.create_server(protocol, "127.0.0.1", 0)
    made.port = server.sockets[0].getsockname()[1]
    try:
        yield made
    finally:
        server.close()
        for each in made.protocols:
            each.transport.abort()


async def until(condition: Any, seconds: float, what: str) -> None:
    deadline = asyncio.get_running_loop().time() + seconds
    while not condition():
        assert asyncio.get_running_loop().time() < deadline, f"not within {seconds} s: {what}"
        await asyncio.sleep(0.01)


async def asked_unread(made: Wire, size: int) -> tuple[socket.socket, BoundedHttp]:
    """GET /size from a client that reads nothing (a 4 KB receive buffer), once answered."""
    known = len(made.protocols)
    sock = reader(made.port)
    sock.sendall(b"GET /%d HTTP/1.1\r\nHost: t\r\n\r\n" % size)
    await until(lambda: len(made.protocols) > known, GUARD, "the connection")
    protocol = made.protocols[-1]
    await until(lambda: protocol.cycle and protocol.cycle.response_complete, GUARD, "the answer")
    return sock, protocol


@pytest.mark.anyio
@pytest.mark.parametrize("tail", [1, 10_000, 40_000])
async def test_an_unread_answer_tail_below_the_buffer_mark_is_dropped(monkeypatch, tail) -> None:
    """The rest of an answer the kernel does not take, too small to pause writing (and
    uvicorn's close waits for it): the client reading none of it is dropped within the
    client timeout, as one with more unread is."""
    async with wire(monkeypatch, client_timeout=0.2) as made:
        sock, probe = await asked_unread(made, 8_000_000)  # what the kernel takes
        taken = 8_000_000 - probe.transport.get_write_buffer_size()
        sock.close()
        sock, protocol = await asked_unread(made, taken + tail)
        with sock:
            unsent = protocol.transport.get_write_buffer_size()
            assert 0 < unsent < 65_536 and not protocol.flow.write_paused, unsent
            await until(lambda: protocol not in made.state.connections, GUARD, "the drop")


@pytest.mark.anyio
async def test_a_refused_connection_is_not_counted_while_it_lingers(monkeypatch) -> None:
    """Past max_connections, the refused connection (its client still connected, the server
    reading and dropping what it sends for a while) takes no open connection's place."""
    async with wire(monkeypatch, max_connections=1) as made:
        with connect(made.port) as served, connect(made.port) as refused:
            served.sendall(b"GET /2 HTTP/1.1\r\nHost: t\r\n\r\n")
            answers = [await asyncio.to_thread(read_one_answer, sock) for sock in (served, refused)]
            assert [answer.split(b" ", 2)[1] for answer in answers] == [b"200", b"503"]
            assert made.state.connections == {made.protocols[0]}
