"""Where every HTTP request enters and leaves: its request id, its CORS headers (and the
preflights), its request log line and metrics, and its trace span when tracing is on.

Plain ASGI, as the /graphql handler is: a request pays for one pass over its headers, a note in
a context variable and its log line and tallies. /graphql's responses get the request's headers
from graph/server/respond.py (no wrapper around `send` on the hot path); every other route's
through a wrapper.
"""

from __future__ import annotations

import time
from collections.abc import Awaitable, Callable
from typing import TYPE_CHECKING

from starlette.types import ASGIApp, Receive, Scope, Send

from graph.server.cors import Cors
from graph.server.logs import RequestLog
from graph.server.metrics import Metrics, route_of
from graph.server.observe import NOTE, Note, Noting, RequestIds

if TYPE_CHECKING:
    from graph.server.tracing import Tracing


class Edge:
    """Wraps the app: `graphql` answers /graphql, `app` everything else."""

    def __init__(
        self,
        graphql: ASGIApp,
        app: Callable[[Scope, Receive, Send], Awaitable[None]],
        cors: Cors,
        log: RequestLog | None = None,
        metrics: Metrics | None = None,
        tracing: Tracing | None = None,
    ) -> None:
        self.graphql, self.app, self.cors = graphql, app, cors
        self.log, self.metrics, self.tracing = log, metrics, tracing
        self.ids = RequestIds()

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        started = time.perf_counter()
        given = origin = None
        for name, value in scope["headers"]:
            if name == b"x-request-id":
                given = value
            elif name == b"origin":
                origin = value
        request_id = self.ids(given)
        cors = self.cors.simple if self.cors.any else self.cors.headers(origin)
        note = Note(request_id, ((b"x-request-id", request_id), *cors))
        token = NOTE.set(note)
        path = route = scope["path"]
        try:
            if path == "/graphql" and scope["method"] != "OPTIONS" and self.tracing is None:
                await self.graphql(scope, receive, send)  # the hot path
            else:
                rooted = scope.get("root_path", "") + "/graphql"
                route = "/graphql" if path in ("/graphql", rooted) else route_of(path)
                await self.other(scope, receive, send, note, origin, route == "/graphql")
        finally:
            NOTE.reset(token)
            if self.log is not None:  # the request log, and the metrics it feeds
                self.log.add(note, scope["method"], path, route, started)

    async def other(
        self,
        scope: Scope,
        receive: Receive,
        send: Send,
        note: Note,
        origin: bytes | None,
        graphql: bool,
    ) -> None:
        """Answer any other request: a preflight, a route, or /graphql when traced."""
        answering: Awaitable[None]
        if scope["method"] == "OPTIONS" and origin is not None and _asks(scope):
            answering = self.preflight(send, note, origin, _asked(scope))
        elif graphql:
            answering = self.graphql(scope, receive, send)
        else:
            answering = self.app(scope, receive, Noting(send, note))
        if self.tracing is not None:
            await self.tracing.request(scope, note, answering)
        else:
            await answering

    async def preflight(
        self, send: Send, note: Note, origin: bytes, asked: dict[bytes, bytes]
    ) -> None:
        note.status = 204
        headers = [(b"x-request-id", note.id), *self.cors.preflight(origin, asked)]
        await send({"type": "http.response.start", "status": 204, "headers": headers})
        await send({"type": "http.response.body", "body": b""})


def _asks(scope: Scope) -> bool:
    return any(name == b"access-control-request-method" for name, _ in scope["headers"])


def _asked(scope: Scope) -> dict[bytes, bytes]:
    return {n: v for n, v in scope["headers"] if n.startswith(b"access-control-request-")}
