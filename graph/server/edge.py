"""Where every HTTP request enters and leaves: its request id, its CORS headers (and the
preflights), the limits on its URL and header fields, the security headers, HEAD, its request
log line and metrics, its trace span when tracing is on, and a JSON answer for whatever fails.

Plain ASGI, as the /graphql handler is: a request pays for one pass over its headers, a note in
a context variable and its log line and tallies. /graphql's responses get the request's headers
from graph/server/responses.py (no wrapper around `send` on the hot path); every other route's
through a wrapper.

- **CORS**, for a public, read-only API without credentials: any origin by default, or the
  origins LEADGREEN_CORS_ORIGINS lists (none: no CORS header at all). With any origin every
  response carries the same two headers, made once (no `Vary: Origin`, so a cache may share
  them); with a list, a listed origin is echoed and every response says `Vary: Origin`.
  Preflights are answered here, before any routing, and browsers may keep them for a day
  (Access-Control-Max-Age).
- **Limits**: a URL past LEADGREEN_MAX_URL_BYTES is 414 URL_TOO_LONG; more header fields than
  LEADGREEN_MAX_HEADERS, or more bytes in them than LEADGREEN_MAX_HEADER_BYTES, is 431
  HEADERS_TOO_LARGE: JSON, on every route. `leadgreen serve` refuses them sooner, while reading
  the request (`BoundedHttp`, below).
- HEAD is answered as GET is, without the body, on every route that answers GET.
- Every response says `X-Content-Type-Options: nosniff` (a JSON answer is never run as a
  script), `Referrer-Policy: no-referrer`, and may not be framed by another site
  (`X-Frame-Options: DENY`, CSP `frame-ancestors 'none'`: GraphiQL is the one page, and it
  runs queries).
- **The request head off the wire** (`BoundedHttp`): uvicorn's httptools protocol reads a
  request's line and headers whole, however long (a 30 MB header was read and answered), and
  refuses what httptools cannot parse (a URL over 64 KB, say) with a plain-text 400.
  `BoundedHttp` is that protocol (its internals: graph/internals.py;
  tests/test_adversarial_http.py checks it against a live server) with the head bounded while
  it is read (414 or 431 at once, at most one read of the socket past the limit held), and
  every refusal of its own JSON with a code, as the app's are (400 BAD_REQUEST for a request
  that is not HTTP/1.1).
"""

from __future__ import annotations

import asyncio
import itertools
import logging
import os
import re
import time
from collections.abc import Awaitable, Callable
from typing import TYPE_CHECKING, Any, ClassVar

import orjson
from starlette.types import ASGIApp, Message, Receive, Scope, Send

from graph.errors import UNAVAILABLE_MESSAGE, Code, database_fault, internal_error
from graph.internals import HttpToolsReader
from graph.server.observability import (
    NOTE,
    Header,
    Metrics,
    Note,
    Noting,
    RequestLog,
    request_id,
    route_of,
)
from graph.server.protocol import error_body, negotiate
from graph.server.responses import SECURITY_HEADERS, error_response
from graph.settings import Settings

if TYPE_CHECKING:
    from graph.server.observability import Tracing

log = logging.getLogger("leadgreen")


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


# --- Request ids ----------------------------------------------------------------------------

# A request id a client may choose (X-Request-Id): short, and safe in any log or header.
_SANE_ID = re.compile(rb"[A-Za-z0-9._-]{1,128}")


class RequestIds:
    """Request ids: the client's X-Request-Id when it is sane (at most 128 characters of
    A-Z a-z 0-9 . _ -), else this process's random prefix and a counter (cheap, and unique
    across processes)."""

    def __init__(self) -> None:
        self.prefix = os.urandom(6).hex().encode()
        self.count = itertools.count(1)

    def __call__(self, given: bytes | None = None) -> bytes:
        if given is not None and _SANE_ID.fullmatch(given):
            return given
        return b"%s-%x" % (self.prefix, next(self.count))


# --- CORS -----------------------------------------------------------------------------------

ALLOW_ORIGIN = b"access-control-allow-origin"
# What a script may read besides the safelisted headers: the validators and the cache's word,
# how long to wait when throttled (graph/server/ratelimit.py sends Retry-After), the request id.
EXPOSED = (
    b"access-control-expose-headers",
    b"ETag, Retry-After, X-Request-Id, X-Cache, Content-Encoding",
)
METHODS = (b"access-control-allow-methods", b"GET, HEAD, POST")
VARY_ORIGIN = (b"vary", b"origin")
MAX_AGE_SECONDS = 86_400
# Header names a preflight may ask for (tokens, commas and spaces), echoed when they are sane.
_HEADER_LIST = re.compile(rb"[A-Za-z0-9!#$%&'*+.^_`|~, -]{1,1024}")


def normalize(origin: str) -> str:
    """An origin as browsers send it: lower-case scheme and host, no trailing slash."""
    return origin.strip().rstrip("/").lower()


class Cors:
    """The CORS headers of a response, by the request's Origin; and preflight answers."""

    def __init__(self, origins: list[str]) -> None:
        self.any = "*" in origins
        self.off = not origins
        self.allowed = frozenset(normalize(o).encode() for o in origins if o != "*")
        # With any origin, these are the same for every response.
        self.simple: tuple[Header, ...] = ((ALLOW_ORIGIN, b"*"), EXPOSED) if self.any else ()
        self.max_age = (b"access-control-max-age", b"%d" % MAX_AGE_SECONDS)

    def headers(self, origin: bytes | None) -> tuple[Header, ...]:
        """The headers every response to a request from `origin` carries."""
        if self.any or self.off:
            return self.simple
        if origin is not None and origin.lower() in self.allowed:
            return ((ALLOW_ORIGIN, origin), EXPOSED, VARY_ORIGIN)
        return (VARY_ORIGIN,)

    def preflight(self, origin: bytes, request: dict[bytes, bytes]) -> list[Header]:
        """The headers of the answer (204) to a preflight from `origin` asking `request` (its
        Access-Control-Request-* headers); without grants for an origin not allowed."""
        vary = b"access-control-request-headers"
        if not self.any:
            vary = b"origin, " + vary
            if self.off or origin.lower() not in self.allowed:
                return [(b"vary", vary)]
        headers = [(ALLOW_ORIGIN, b"*" if self.any else origin), METHODS, self.max_age]
        asked = request.get(b"access-control-request-headers")
        if asked and _HEADER_LIST.fullmatch(asked):
            headers.append((b"access-control-allow-headers", asked))
        if request.get(b"access-control-request-private-network") == b"true":
            headers.append((b"access-control-allow-private-network", b"true"))
        headers.append((b"vary", vary))
        return headers


# --- Limits and security headers ------------------------------------------------------------


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
        if not self.graphql:  # (/graphql's answers carry them: graph/server/responses.py)
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
            body = error_body(message, code)
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


# --- Errors of the other routes -------------------------------------------------------------


class JSONErrors:
    """An exception from a route is answered as JSON and not raised further: no stack trace,
    SQL or path reaches the client, and the log has the details under the request id. A route
    taking longer than `timeout` seconds is stopped and answered 504 REQUEST_TIMEOUT."""

    def __init__(self, app: ASGIApp, timeout: float | None = None) -> None:
        self.app, self.timeout = app, timeout

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http":
            await self.app(scope, receive, send)
            return
        started = False

        async def watch(message: Message) -> None:
            nonlocal started
            started = started or message["type"] == "http.response.start"
            await send(message)

        try:
            async with asyncio.timeout(self.timeout) as deadline:
                await self.app(scope, receive, watch)
        except Exception as exc:
            if isinstance(exc, TimeoutError) and deadline.expired():
                log.info("%s took longer than %gs and was stopped", scope.get("path"), self.timeout)
                response = error_response(
                    504,
                    str(Code.REQUEST_TIMEOUT),
                    f"The request took longer than the limit of {self.timeout:g} s.",
                )
            elif database_fault(exc) is not None:
                log.warning("%s: database unreachable: %r", scope.get("path"), exc)
                response = error_response(
                    503, str(Code.DATABASE_UNAVAILABLE), UNAVAILABLE_MESSAGE, {"retry-after": "1"}
                )
            else:
                failed = request_id()  # the one in the X-Request-Id header
                log.error("request %s failed", failed, exc_info=True)
                error = internal_error(failed)
                response = error_response(
                    500, str(Code.INTERNAL), str(error["message"]), requestId=failed
                )
            if not started:
                await response(scope, receive, send)


# --- The request head off the wire ----------------------------------------------------------

# What a request line and the header block hold besides the URL and the fields' bytes.
HEAD_SLACK = 1024
# After a refusal, what the client still sends is read and dropped for this long (or this
# many bytes) before the connection is closed.
LINGER_SECONDS = 2.0
LINGER_BYTES = 1024 * 1024


class Refused(Exception):
    """Raised in a parser callback: httptools stops, and the refusal is answered."""


class BoundedHttp(HttpToolsReader):
    """uvicorn's httptools protocol with the request head bounded (see the module)."""

    # (max URL bytes, max header bytes, max header fields), read once per process from the
    # environment `leadgreen serve` hands its workers.
    limits: ClassVar[tuple[int, int, int] | None] = None

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        if BoundedHttp.limits is None:
            settings = Settings()
            BoundedHttp.limits = (
                settings.max_url_bytes,
                settings.max_header_bytes,
                settings.max_headers,
            )
        self.max_url, self.max_header_bytes, self.max_headers = BoundedHttp.limits
        self.max_head = self.max_url + self.max_header_bytes + HEAD_SLACK
        self.refusal: tuple[int, Code, str] | None = None
        self._reading_head = True
        self._head_bytes = self._url_bytes = self._header_bytes = self._fields = 0
        self._dropped = 0

    def data_received(self, data: bytes) -> None:
        if self.refusal is not None:  # answered: what the client still sends is dropped
            self._dropped += len(data)
            if self._dropped > LINGER_BYTES:
                self.transport.close()
            return
        if not self.feed(data):  # a client's doing: one line at INFO, as refusals are
            self.logger.info("refused a request it could not read: %s", self._reason())
            self.answer_and_close()
            return
        if self.refusal is None and self._reading_head:
            self._head_bytes += len(data)
            if self._head_bytes > self.max_head:
                self._refuse_head()
                self.logger.info("refused a request: %s", self._reason())
                self.answer_and_close()

    def _refuse_head(self) -> None:
        if self._url_bytes > self.max_url:
            self._refuse(
                414,
                Code.URL_TOO_LONG,
                f"The URL is longer than the limit of {self.max_url} bytes; send the request "
                "with POST, or as a persisted query.",
            )
        else:
            self._refuse(
                431,
                Code.HEADERS_TOO_LARGE,
                f"The request's header fields hold more than the limit of "
                f"{self.max_header_bytes} bytes.",
            )

    def _reason(self) -> str:
        return f"{self.refusal[0]} {self.refusal[1]}" if self.refusal else "not HTTP/1.1"

    def _refuse(self, status: int, code: Code, message: str) -> None:
        self.refusal = (status, code, message)

    def on_message_begin(self) -> None:
        super().on_message_begin()
        self._reading_head = True
        self._head_bytes = self._url_bytes = self._header_bytes = self._fields = 0

    def on_url(self, url: bytes) -> None:
        self._url_bytes += len(url)
        if self._url_bytes > self.max_url:
            self._refuse_head()
            raise Refused
        super().on_url(url)

    def on_header(self, name: bytes, value: bytes) -> None:
        self._fields += 1
        self._header_bytes += len(name) + len(value)
        if self._fields > self.max_headers:
            self._refuse(
                431,
                Code.HEADERS_TOO_LARGE,
                f"The request has more than the limit of {self.max_headers} header fields.",
            )
            raise Refused
        if self._header_bytes > self.max_header_bytes:
            self._refuse_head()
            raise Refused
        super().on_header(name, value)

    def on_headers_complete(self) -> None:
        self._reading_head = False
        super().on_headers_complete()

    def answer_and_close(self) -> None:
        """The answer to a request httptools cannot read (or one past the limits), as JSON
        with a code; the connection is closed after it."""
        status, code, message = self.refusal or (
            400,
            Code.BAD_REQUEST,
            "The request is not a valid HTTP/1.1 request.",
        )
        self.refusal = (status, code, message)
        body = error_body(message, code)
        head = [self.status_line(status)]
        for name, value in self.server_state.default_headers:
            head += [name, b": ", value, b"\r\n"]
        head += [
            b"content-type: application/json\r\n",
            b"cache-control: no-store\r\n",
            *(b"%s: %s\r\n" % header for header in SECURITY_HEADERS),
            b"content-length: %d\r\n" % len(body),
            b"connection: close\r\n\r\n",
            body,
        ]
        self.transport.write(b"".join(head))
        # Closing with the client's bytes unread would reset the connection, and the client
        # could lose the answer: read (and drop) for a little while first, as nginx does.
        if self.transport.can_write_eof():
            self.transport.write_eof()
            self.loop.call_later(LINGER_SECONDS, self.transport.close)
        else:
            self.transport.close()


def uvicorn_settings(settings: Settings) -> dict[str, Any]:
    """uvicorn's settings for the HTTP edge of `leadgreen serve`: this protocol, no `server`
    banner, and X-Forwarded-For believed only from the trusted proxies (none by default)."""
    trusted = [p.strip() for p in settings.trusted_proxies.split(",") if p.strip()]
    return {
        "http": f"{BoundedHttp.__module__}:{BoundedHttp.__name__}",
        "server_header": False,
        "proxy_headers": bool(trusted),
        "forwarded_allow_ips": trusted or [],
    }
