"""The HTTP edge's limits and headers, on the ASGI scope: whatever server runs the app.

- A URL past LEADGREEN_MAX_URL_BYTES is 414 URL_TOO_LONG; more header fields than
  LEADGREEN_MAX_HEADERS, or more bytes in them than LEADGREEN_MAX_HEADER_BYTES, is 431
  HEADERS_TOO_LARGE: JSON, on every route (`leadgreen serve` refuses them sooner, while reading
  the request: graph/server/wire.py).
- HEAD is answered as GET is, without the body, on every route that answers GET.
- Every response says `X-Content-Type-Options: nosniff` (a JSON answer is never run as a
  script), `Referrer-Policy: no-referrer`, and may not be framed by another site
  (`X-Frame-Options: DENY`, CSP `frame-ancestors 'none'`: GraphiQL is the one page, and it
  runs queries).
"""

from __future__ import annotations

import orjson
from starlette.types import ASGIApp, Message, Receive, Scope, Send

from graph.errors import Code
from graph.server.observe import NOTE
from graph.server.protocol import negotiate
from graph.server.respond import SECURITY_HEADERS
from graph.settings import Settings


class Shield:
    """Wraps an ASGI app (graph/server/edge.py hands it each request): refuses a request past
    the limits, answers HEAD as GET, and adds the security headers to the response."""

    def __init__(self, app: ASGIApp, settings: Settings, graphql: bool) -> None:
        self.app, self.graphql = app, graphql
        self.max_url = settings.max_url_bytes
        self.max_headers, self.max_header_bytes = settings.max_headers, settings.max_header_bytes

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http":
            await self.app(scope, receive, send)
            return
        headers = scope["headers"]
        if len(headers) > self.max_headers:
            message = f"The request has more than the limit of {self.max_headers} header fields."
            await self.refuse(scope, send, 431, Code.HEADERS_TOO_LARGE, message)
            return
        if sum(len(name) + len(value) for name, value in headers) > self.max_header_bytes:
            message = (
                f"The request's header fields hold more than the limit of "
                f"{self.max_header_bytes} bytes."
            )
            await self.refuse(scope, send, 431, Code.HEADERS_TOO_LARGE, message)
            return
        raw_path = scope.get("raw_path") or scope["path"].encode()
        if len(raw_path) + len(scope["query_string"]) > self.max_url:
            message = (
                f"The URL is longer than the limit of {self.max_url} bytes; send the request "
                "with POST, or as a persisted query."
            )
            await self.refuse(scope, send, 414, Code.URL_TOO_LONG, message)
            return
        if not self.graphql:  # (/graphql's answers carry them: graph/server/respond.py)
            send = _with_headers(send)
        if scope["method"] == "HEAD":
            await self.app({**scope, "method": "GET"}, receive, _without_body(send))
            return
        await self.app(scope, receive, send)

    async def refuse(self, scope: Scope, send: Send, status: int, code: Code, message: str) -> None:
        """A JSON refusal in the route's own shape (GraphQL's errors, in the media type the
        client asked for, or the documents')."""
        content_type = b"application/json"
        if self.graphql:
            body = refusal_body(message, code)
            accept = next((v for n, v in scope["headers"] if n == b"accept"), b"")
            content_type = negotiate(accept).content_type[1] if accept else content_type
        else:
            body = b'{"error":{"code":"%s","message":%s}}' % (
                str(code).encode(),
                _json_string(message),
            )
        note = NOTE.get(None)
        extra: tuple[tuple[bytes, bytes], ...] = ()
        if note is not None and self.graphql:  # (other routes' `send` adds them: edge.py)
            note.status, note.error, extra = status, body, note.headers
        headers = [
            (b"content-type", content_type),
            (b"cache-control", b"no-store"),
            (b"content-length", b"%d" % len(body)),
            *SECURITY_HEADERS,
            *extra,
        ]
        await send({"type": "http.response.start", "status": status, "headers": headers})
        await send({"type": "http.response.body", "body": body})


def refusal_body(message: str, code: Code) -> bytes:
    """A refusal as /graphql answers one."""
    return orjson.dumps({"errors": [{"message": message, "extensions": {"code": str(code)}}]})


def _json_string(text: str) -> bytes:
    return orjson.dumps(text)


def _with_headers(send: Send) -> Send:
    """`send`, adding the security headers a response does not set itself (GraphiQL's page
    sets a policy of its own)."""

    async def sending(message: Message) -> None:
        if message["type"] == "http.response.start":
            headers = list(message.get("headers", ()))
            present = {name.lower() for name, _ in headers}
            headers += [h for h in SECURITY_HEADERS if h[0] not in present]
            message = {**message, "headers": headers}
        await send(message)

    return sending


def _without_body(send: Send) -> Send:
    """`send` for HEAD: the response's status and headers (its Content-Length too), no body."""
    sent = False

    async def sending(message: Message) -> None:
        nonlocal sent
        if message["type"] == "http.response.body":
            if sent:
                return
            sent, message = True, {"type": "http.response.body", "body": b""}
        await send(message)

    return sending
