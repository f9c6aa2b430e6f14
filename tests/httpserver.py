"""A local HTTP server for tests: serves a snapshot directory, and fails on request.

Everything listens on 127.0.0.1 on an ephemeral port. Faults are set per path and are consumed
in order, one per request; a path with no fault left is served from the directory, with an ETag
(a 304 to a request whose If-None-Match names it, counted in `not_modified`).

    with SnapshotServer(root) as server:
        server.fail("index.json", Fault.status(500), times=2)
        ... server.url ... server.count("index.json") ...
"""

from __future__ import annotations

import hashlib
import socket
import struct
import threading
from collections import Counter, deque
from dataclasses import dataclass
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from types import TracebackType
from typing import Any


@dataclass(frozen=True)
class Fault:
    """What the server does instead of answering normally."""

    kind: str  # "status", "hang", "reset", "truncate", "body", "hold"
    status: int = 200
    body: bytes = b""
    most: int = 0
    seconds: float = 0.0

    @classmethod
    def http(cls, status: int) -> Fault:
        """Answer with this status and a short body."""
        return cls("status", status=status)

    @classmethod
    def hold(cls, most: int, seconds: float) -> Fault:
        """Hold the request, then answer it as usual: held until more than `most` requests are
        held at once, or for `seconds` (the most held at once is `most_held`)."""
        return cls("hold", most=most, seconds=seconds)

    @classmethod
    def hang(cls) -> Fault:
        """Accept the request and answer nothing until the server stops: only the client's time
        limit ends the wait."""
        return cls("hang")

    @classmethod
    def reset(cls) -> Fault:
        """Close the connection with a TCP reset before answering."""
        return cls("reset")

    @classmethod
    def truncate(cls) -> Fault:
        """Send half of the file's body, with a Content-Length for all of it, then close."""
        return cls("truncate")

    @classmethod
    def send(cls, body: bytes, status: int = 200) -> Fault:
        """Answer with these bytes instead of the file."""
        return cls("body", status=status, body=body)


def _etag(body: bytes) -> str:
    return '"' + hashlib.sha256(body).hexdigest()[:16] + '"'


class SnapshotServer:
    """Serves the files under `root` at `url`, with per-path faults, counting requests."""

    def __init__(self, root: Path | None = None) -> None:
        self.root = root
        self.requests: Counter[str] = Counter()
        # 304 answers, by path: a file is sent with its ETag, and not again to who names it.
        self.not_modified: Counter[str] = Counter()
        self._faults: dict[str, deque[Fault]] = {}
        self._always: dict[str, Fault] = {}
        self._lock = threading.Lock()
        self._held = threading.Condition()
        self.holding = self.most_held = 0
        self._stopping = threading.Event()
        self._server = ThreadingHTTPServer(("127.0.0.1", 0), self._handler())
        self._server.daemon_threads = True
        self._server.handle_error = lambda *_: None  # type: ignore[method-assign]
        # A short poll interval: stop() waits for serve_forever's next look at the flag.
        self._thread = threading.Thread(
            target=self._server.serve_forever, kwargs={"poll_interval": 0.02}, daemon=True
        )

    @property
    def url(self) -> str:
        host, port = self._server.server_address[:2]
        return f"http://{host!s}:{port}"

    def fail(self, path: str, fault: Fault, *, times: int | None = 1) -> None:
        """Answer the next `times` requests for `path` with `fault` (every one, if None)."""
        path = path.lstrip("/")
        with self._lock:
            if times is None:
                self._always[path] = fault
            else:
                self._faults.setdefault(path, deque()).extend([fault] * times)

    def count(self, path: str) -> int:
        with self._lock:
            return self.requests[path.lstrip("/")]

    def start(self) -> SnapshotServer:
        self._thread.start()
        return self

    def stop(self) -> None:
        self._stopping.set()  # wakes hanging handlers
        self._server.shutdown()
        self._server.server_close()
        self._thread.join(timeout=5)

    def __enter__(self) -> SnapshotServer:
        return self.start()

    def __exit__(
        self,
        _type: type[BaseException] | None,
        _value: BaseException | None,
        _tb: TracebackType | None,
    ) -> None:
        self.stop()

    def _next_fault(self, path: str) -> Fault | None:
        with self._lock:
            self.requests[path] += 1
            queue = self._faults.get(path)
            if queue:
                return queue.popleft()
            return self._always.get(path)

    def _hold(self, fault: Fault) -> None:
        with self._held:
            self.holding += 1
            self.most_held = max(self.most_held, self.holding)
            self._held.notify_all()
            self._held.wait_for(lambda: self.holding > fault.most, timeout=fault.seconds)
            self.holding -= 1

    def _file(self, path: str) -> bytes | None:
        if self.root is None:
            return None
        file = (self.root / path).resolve()
        if self.root.resolve() not in file.parents or not file.is_file():
            return None
        return file.read_bytes()

    def _handler(self) -> type[BaseHTTPRequestHandler]:
        server = self

        class Handler(BaseHTTPRequestHandler):
            protocol_version = "HTTP/1.1"
            disable_nagle_algorithm = True  # headers and body go out in separate writes

            def log_message(self, format: str, *args: Any) -> None:
                pass

            def do_GET(self) -> None:
                path = self.path.split("?", 1)[0].lstrip("/")
                fault = server._next_fault(path)
                if fault is not None and fault.kind == "hold":
                    server._hold(fault)
                    fault = None
                body = server._file(path)
                if fault is None:
                    if body is None:
                        self._answer(404, b"not found")
                    elif self.headers.get("If-None-Match") == _etag(body):
                        server.not_modified[path] += 1
                        self._answer(304, b"", etag=_etag(body))
                    else:
                        self._answer(200, body, etag=_etag(body))
                elif fault.kind == "status":
                    self._answer(fault.status, f"status {fault.status}".encode())
                elif fault.kind == "body":
                    self._answer(fault.status, fault.body)
                elif fault.kind == "hang":
                    server._stopping.wait()
                    self.close_connection = True
                elif fault.kind == "reset":
                    linger = struct.pack("ii", 1, 0)
                    self.connection.setsockopt(socket.SOL_SOCKET, socket.SO_LINGER, linger)
                    self.connection.close()
                    self.close_connection = True
                elif fault.kind == "truncate":
                    body = body or b'{"truncated": "body of some length"}'
                    self.send_response(200)
                    self.send_header("Content-Type", "application/json")
                    self.send_header("Content-Length", str(len(body)))
                    self.end_headers()
                    self.wfile.write(body[: len(body) // 2])
                    self.close_connection = True
                else:  # pragma: no cover
                    raise ValueError(fault.kind)

            def _answer(self, status: int, body: bytes, etag: str | None = None) -> None:
                self.send_response(status)
                self.send_header("Content-Type", "application/json")
                if etag is not None:
                    self.send_header("ETag", etag)
                if status != 304:
                    self.send_header("Content-Length", str(len(body)))
                self.end_headers()
                self.wfile.write(body)

        return Handler
