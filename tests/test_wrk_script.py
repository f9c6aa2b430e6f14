"""bench/graphql.lua through bench/wrk.py against a small server on 127.0.0.1: what it counts
when it reads every answer, when it counts statuses only (bench/warm.py's workers part), and
the traceparent of its own it gives each request ("traced", bench/warm.py's traced part)."""

from __future__ import annotations

import re
import shutil
import socket
import threading
from collections.abc import Iterator
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import ClassVar

import pytest

from bench import wrk

pytestmark = [
    pytest.mark.bench,
    pytest.mark.skipif(shutil.which("wrk") is None, reason="wrk is not installed"),
]

ANSWERS = {
    "/ok": (200, b'{"data":{"a":1}}'),
    "/errors": (200, b'{"data":null,"errors":[{"message":"no"}]}'),
    "/refused": (400, b'{"errors":[{"message":"bad"}]}'),
}


TRACEPARENT = re.compile(r"00-[0-9a-f]{32}-[0-9a-f]{16}-01")


class Answering(BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"  # kept alive, as wrk's connections are
    traceparents: ClassVar[list[str | None]] = []  # each request's, in turn

    def setup(self) -> None:
        super().setup()  # the head and the body are two writes: not held for an ACK
        self.connection.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)

    def do_GET(self) -> None:
        Answering.traceparents.append(self.headers.get("traceparent"))
        status, body = ANSWERS[self.path]
        self.send_response(status)
        self.send_header("Content-Length", str(len(body)))
        self.end_headers()
        self.wfile.write(body)

    def log_message(self, format: str, *args: object) -> None:
        pass


class Server(ThreadingHTTPServer):
    daemon_threads = True

    def handle_error(self, request: object, client_address: object) -> None:
        pass  # wrk resets its connections when it stops


@pytest.fixture(scope="module")
def port() -> Iterator[int]:
    server = Server(("127.0.0.1", 0), Answering)
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    yield server.server_address[1]
    server.shutdown()
    server.server_close()


@pytest.fixture
def lines(tmp_path: Path) -> Path:
    path = tmp_path / "three.lines"
    path.write_text("".join(f"GET {target}\n" for target in ANSWERS))
    return path


def test_reading_every_answer_counts_graphql_errors_and_bad_statuses(
    port: int, lines: Path
) -> None:
    # One connection: the three requests in turn, so each is a third of those answered.
    run = wrk.run(port, lines, 1, 1)
    assert run.bodies_checked
    assert run.requests > 30
    assert abs(run.graphql_errors - run.requests / 3) <= 1
    assert abs(run.bad_status - run.requests / 3) <= 1
    assert run.socket_errors == 0


def test_counting_statuses_only_sees_the_refusals_and_no_answer(port: int, lines: Path) -> None:
    run = wrk.run(port, lines, 1, 1, bodies=False)
    assert not run.bodies_checked
    assert run.requests > 30
    assert run.graphql_errors == 0  # not read: a 200 with errors passes unseen
    assert abs(run.bad_status - run.requests / 3) <= 1


def test_traced_gives_each_request_a_traceparent_of_its_own(port: int, lines: Path) -> None:
    Answering.traceparents = []
    plain = wrk.run(port, lines, 1, 1)
    assert set(Answering.traceparents) == {None} and plain.requests > 30
    Answering.traceparents = []
    run = wrk.run(port, lines, 1, 1, traced=True)
    given = Answering.traceparents
    assert len(given) >= run.requests > 30
    assert len(set(given)) == len(given)
    assert all(TRACEPARENT.fullmatch(value or "") for value in given), given[:3]
    assert abs(run.graphql_errors - run.requests / 3) <= 1  # the answers read as ever
