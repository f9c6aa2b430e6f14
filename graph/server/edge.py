"""Where every HTTP request enters and leaves: the app's first middleware. Each request gets
its request id and CORS headers (preflights are answered here), is refused past the limits of
its URL and header fields, is answered within its time limit, and gets a JSON answer for
whatever fails; HEAD is answered as GET; every response carries the security headers; the
request's log line, metrics and trace span are made here.

Ordinary ASGI middleware inside Starlette's stack (what a user adds with `app.add_middleware`,
then the edge, then Starlette's exception handling and the routes; Starlette's outermost
ServerErrorMiddleware is left out, graph/server/app.py `App`: the edge answers what fails),
so that what a user adds sees every route; /graphql's requests the edge hands to its handler
itself, past the routing and the exception handling (the handler answers its own errors). A
request pays for one pass over its headers, a note in a context variable (and its deadline
for the database in another), one timer, and its log line and tallies. /graphql's responses
get the request's headers from graph/server/responses.py (no wrapper around `send` on the hot
path); every other route's through a wrapper. The edge knows one thing of the routes: where
GraphQL is, whose refusals and errors are GraphQL's (in the media type the client asked for),
the others' `{"error": {"code", "message"}}`.

- **CORS**, for a public, read-only API without credentials: any origin by default, or the
  origins LEADGREEN_CORS_ORIGINS lists (none: no CORS header at all). With any origin every
  response carries the same two headers, made once (no `Vary: Origin`, so a cache may share
  them); with a list, a listed origin is echoed and every response says `Vary: Origin`.
  Browsers may keep a preflight's answer for a day (Access-Control-Max-Age).
- **Limits** (`HeadLimits`, the one check of each): a URL past its limit is 414 URL_TOO_LONG;
  more header fields than the limit, or more bytes in them, is 431 HEADERS_TOO_LARGE (the
  limits profile's `max_url_bytes`, `max_headers`, `max_header_bytes`). `leadgreen serve`
  applies them sooner, while reading the request (`BoundedHttp`, below); the edge applies them
  to the ASGI scope, for any server.
- **The time limit** (LEADGREEN_REQUEST_TIMEOUT_SECONDS): the whole request, from reading its
  body to sending, is stopped past it and answered 504 REQUEST_TIMEOUT; the database away is
  503 DATABASE_UNAVAILABLE with Retry-After; anything else 500 INTERNAL with the request id
  that the log's traceback has. No stack trace, SQL or path reaches the client. Its waits for
  the database end within `DATABASE_SHARE` of the limit (db/database.py `waiting`), so that a
  database that stopped answering (a black hole) is that 503, not the limit's 504.
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
- **Slow clients** (`BoundedHttp` too), as nginx's `client_header_timeout` and
  `client_body_timeout`: a request head not read within LEADGREEN_CLIENT_TIMEOUT_SECONDS of the
  connection's start (or of the request's first byte, on a kept-alive connection), or a body
  pausing longer between chunks (not while uvicorn itself has stopped reading), is answered 408
  REQUEST_TIMEOUT and closed, or only closed when another answer is being written on the
  connection. A request answered before its body came whole (its time limit passed, or it was
  refused) has its connection closed after the answer, the rest of the body dropped: a body
  that keeps coming, however slowly, holds a connection no longer than the request's time
  limit. Answers waiting for a client that reads none of them (writing paused) are timed as
  nginx's `send_timeout`: while it reads some within each client timeout it is kept, else it
  is dropped, with the requests it still had waiting (`abandon`). Past
  LEADGREEN_MAX_CONNECTIONS open connections a new one is answered 503 OVERLOADED with
  Retry-After at once and closed. (uvicorn's `limit_concurrency` is not used:
  it keeps such connections open, idle ones too, and answers each request in plain text;
  its `timeout_keep_alive`, 5 s, still closes a connection idle between requests.)
"""

from __future__ import annotations

import asyncio
import itertools
import logging
import os
import re
import time
import weakref
from collections.abc import Callable, Iterable
from typing import TYPE_CHECKING, Any, ClassVar, NamedTuple, cast

from starlette.types import ASGIApp, Message, Receive, Scope, Send

from db.database import DEADLINE
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
from graph.server.protocol import error_body, media_of
from graph.server.replay import MAX_BODY_BYTES
from graph.server.responses import SECURITY_HEADERS, error_response, uncached
from graph.settings import Settings

if TYPE_CHECKING:
    from uvicorn.protocols.http.httptools_impl import RequestResponseCycle

    from graph.server.observability import Tracing
    from graph.server.replay import Replays

log = logging.getLogger("leadgreen")
Headers = tuple[Header, ...]
RETRY_SOON = ((b"retry-after", b"1"),)  # the database being away: ask again in a second
# The share of its time limit a request may spend waiting for the database: past it, the
# database is answered as away (503), with time left to say so before the limit (504).
DATABASE_SHARE = 0.75
# Every app's Deadlines (one an app), for `endless`.
_DEADLINES: weakref.WeakSet[Deadlines] = weakref.WeakSet()
# What ends when the server begins to stop (`on_stop`).
_ON_STOP: set[Callable[[], None]] = set()


class Edge:
    """The app's first middleware (see the module); `graphql` is where GraphQL is served."""

    def __init__(
        self,
        app: ASGIApp,
        *,
        settings: Settings,
        log: RequestLog | None = None,
        metrics: Metrics | None = None,
        tracing: Tracing | None = None,
        graphql: str = "/graphql",
        graphql_app: ASGIApp | None = None,
        ids: RequestIds | None = None,
    ) -> None:
        self.app, self.graphql = app, graphql
        # /graphql's handler, called at once: its requests skip Starlette's routing and
        # exception middleware (the handler answers every error of its own, as JSON).
        self.graphql_app = graphql_app or app
        self.cors, self.limits = Cors(settings.cors_origins), HeadLimits(settings)
        self.timeout = settings.request_timeout_seconds
        self.database_seconds = self.timeout * DATABASE_SHARE
        self.deadlines = Deadlines(self.timeout)
        self.log, self.metrics, self.tracing = log, metrics, tracing
        self.ids = ids or RequestIds()  # (shared with graph/server/replay.py's Replays)

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http":
            await self.app(scope, receive, send)
            return
        started = time.perf_counter()
        given = origin = None
        size = 0
        for name, value in scope["headers"]:
            size += len(name) + len(value)
            if name == b"x-request-id":
                given = value
            elif name == b"origin":
                origin = value
        request_id = self.ids(given)
        cors = self.cors.simple if self.cors.any else self.cors.headers(origin)
        note = Note(request_id, ((b"x-request-id", request_id), *cors))
        token = NOTE.set(note)
        path = scope["path"]
        graphql = path == self.graphql or path == scope.get("root_path", "") + self.graphql
        try:
            if self.tracing is None:
                await self.enter(scope, receive, send, note, origin, size, graphql)
            else:
                entering = self.enter(scope, receive, send, note, origin, size, graphql)
                await self.tracing.request(scope, note, entering)
        finally:
            NOTE.reset(token)
            if self.log is not None:  # the request log, and the metrics it feeds
                route = "/graphql" if graphql else route_of(path)
                self.log.add(note, scope["method"], path, route, started)

    async def enter(
        self,
        scope: Scope,
        receive: Receive,
        send: Send,
        note: Note,
        origin: bytes | None,
        size: int,
        graphql: bool,
    ) -> None:
        """Refuse the request, answer its preflight, or hand it to the app within its time
        limit, answering what fails."""
        raw_path = scope.get("raw_path") or scope["path"].encode()
        past = self.limits.past(
            len(raw_path) + len(scope["query_string"]), len(scope["headers"]), size
        )
        method = scope["method"]
        if past is None and method == "OPTIONS" and origin is not None and _asks(scope):
            await self.preflight(send, note, origin, _asked(scope))
            return
        if not graphql:  # (/graphql's answers carry them: graph/server/responses.py)
            send = Noting(send, note, SECURITY_HEADERS)
        if past is not None:
            await self.refuse(scope, receive, send, graphql, *past)
            return
        if method == "HEAD":
            scope, send = {**scope, "method": "GET", ASKED_HEAD: True}, _without_body(send)
        task, started = self.deadlines.start()
        waits = DEADLINE.set(started + self.database_seconds)
        try:
            await (self.graphql_app if graphql else self.app)(scope, receive, send)
        except BaseException as exc:
            timed_out = self.deadlines.stop(task, exc)
            if not isinstance(exc, Exception) and not timed_out:
                raise
            status, code, message, extensions, headers = fault(exc, timed_out, self.timeout)
            if not note.status:  # (once the response has started, nothing more can be said)
                await self.refuse(
                    scope, receive, send, graphql, status, code, message, headers, extensions
                )
        else:
            self.deadlines.stop(task, None)
        finally:
            DEADLINE.reset(waits)

    async def refuse(
        self,
        scope: Scope,
        receive: Receive,
        send: Send,
        graphql: bool,
        status: int,
        code: Code,
        message: str,
        headers: Headers = (),
        extensions: dict[str, str] | None = None,
    ) -> None:
        """A JSON refusal in the route's own shape: GraphQL's errors, in the media type the
        client asked for, or the documents'."""
        extensions = extensions or {}
        if graphql:
            media = media_of(scope["headers"])
            body = error_body(message, code, **extensions)
            await uncached(send, status, body, media.content_type, headers)
            return
        extra = {name.decode(): value.decode() for name, value in headers}
        response = error_response(status, str(code), message, extra, **extensions)
        await response(scope, receive, send)

    async def preflight(
        self, send: Send, note: Note, origin: bytes, asked: dict[bytes, bytes]
    ) -> None:
        note.status = 204
        headers = [(b"x-request-id", note.id), *self.cors.preflight(origin, asked)]
        await send({"type": "http.response.start", "status": 204, "headers": headers})
        await send({"type": "http.response.body", "body": b""})


def on_stop(callback: Callable[[], None]) -> Callable[[], None]:
    """Call `callback` when `leadgreen serve` begins to stop (what would hold its graceful
    shutdown open forever: an event stream); returns what forgets it."""
    _ON_STOP.add(callback)
    return lambda: _ON_STOP.discard(callback)


def _stopping() -> None:
    for callback in list(_ON_STOP):
        callback()


def endless() -> None:
    """The current request streams (a subscription's events): its time limit, and its bound on
    waiting for the database, no longer apply from now on (graph/server/subscriptions.py)."""
    task = asyncio.current_task()
    for deadlines in _DEADLINES:
        deadlines.running.pop(task, None)  # type: ignore[arg-type]
    DEADLINE.set(None)


class Deadlines:
    """Every request's time limit, kept by one timer for all of them (a timer per request,
    `asyncio.timeout`'s, would cost a cached answer a sixth of its time): a request still
    running `seconds` after it started is cancelled at the timer's next tick, at most `tick`
    seconds later. As `asyncio.timeout` does, the cancellation is told from any other, and
    taken back once seen."""

    def __init__(self, seconds: float, tick: float = 0.05) -> None:
        self.seconds, self.tick = seconds, min(tick, seconds)
        self.running: dict[asyncio.Task[Any], float] = {}  # each request's task: its deadline
        self.cancelled: set[asyncio.Task[Any]] = set()  # those cancelled for passing it
        self.timer: asyncio.TimerHandle | None = None
        self.loop: asyncio.AbstractEventLoop | None = None
        _DEADLINES.add(self)

    def start(self) -> tuple[asyncio.Task[Any], float]:
        """The current request's task, its deadline kept; and when it started (the loop's
        clock)."""
        task = asyncio.current_task()
        assert task is not None
        loop = task.get_loop()
        now = loop.time()
        self.running[task] = now + self.seconds
        if self.timer is None or self.loop is not loop:  # (a test may run apps on new loops)
            self.loop, self.timer = loop, loop.call_at(now + self.tick, self._check)
        return task, now

    def stop(self, task: asyncio.Task[Any], exc: BaseException | None) -> bool:
        """Forget the request's deadline; whether it ended for passing it (`exc`, the
        cancellation, is then the time limit's, not another's)."""
        self.running.pop(task, None)
        if task not in self.cancelled:
            return False
        self.cancelled.discard(task)
        # The cancellation is taken back; the request ends for its time limit unless another
        # cancellation is pending.
        return task.uncancel() == 0 and isinstance(exc, asyncio.CancelledError)

    def _check(self) -> None:
        assert self.loop is not None
        now = self.loop.time()
        for task, deadline in list(self.running.items()):
            if deadline <= now:
                del self.running[task]
                self.cancelled.add(task)
                task.cancel()
        self.timer = self.loop.call_at(now + self.tick, self._check) if self.running else None


def fault(
    exc: BaseException, timed_out: bool, timeout: float
) -> tuple[int, Code, str, dict[str, str], Headers]:
    """What a request that raised `exc` is answered (status, code, message, the error's other
    fields, headers): 504 past its time limit, 503 for the database, 500 for a bug; logged."""
    if timed_out:
        log.info("a request took longer than %gs and was stopped", timeout)
        message = f"The request took longer than the limit of {timeout:g} s."
        return 504, Code.REQUEST_TIMEOUT, message, {}, ()
    if database_fault(exc) is not None:
        log.warning("the database failed a request: %r", exc)
        return 503, Code.DATABASE_UNAVAILABLE, UNAVAILABLE_MESSAGE, {}, RETRY_SOON
    failed = request_id()  # the one in the X-Request-Id header
    log.error("request %s failed", failed, exc_info=exc)
    message = str(internal_error(failed)["message"])
    return 500, Code.INTERNAL, message, {"requestId": failed}, ()


def _asks(scope: Scope) -> bool:
    return any(name == b"access-control-request-method" for name, _ in scope["headers"])


def _asked(scope: Scope) -> dict[bytes, bytes]:
    return {n: v for n, v in scope["headers"] if n.startswith(b"access-control-request-")}


# --- Limits ----------------------------------------------------------------------------------


class Past(NamedTuple):
    """A limit passed: the refusal's status, code and message."""

    status: int
    code: Code
    message: str


class HeadLimits:
    """The limits of a request's head, and the refusal past each (see the module)."""

    def __init__(self, settings: Settings) -> None:
        self.max_url, self.max_fields = settings.max_url_bytes, settings.max_headers
        self.max_header_bytes = settings.max_header_bytes

    def past(self, url: int, fields: int, header_bytes: int) -> Past | None:
        """The limit a head of `url` bytes and `fields` header fields of `header_bytes` passes
        (the fields' first), or None."""
        if (
            url <= self.max_url
            and fields <= self.max_fields
            and header_bytes <= self.max_header_bytes
        ):
            return None
        return self.fields(fields) or self.header_bytes(header_bytes) or self.url(url)

    def url(self, size: int) -> Past | None:
        if size <= self.max_url:
            return None
        message = (
            f"The URL is longer than the limit of {self.max_url} bytes; send the request with "
            "POST, or as a persisted query."
        )
        return Past(414, Code.URL_TOO_LONG, message)

    def fields(self, count: int) -> Past | None:
        if count <= self.max_fields:
            return None
        message = f"The request has more than the limit of {self.max_fields} header fields."
        return Past(431, Code.HEADERS_TOO_LARGE, message)

    def header_bytes(self, size: int) -> Past | None:
        if size <= self.max_header_bytes:
            return None
        message = (
            f"The request's header fields hold more than the limit of {self.max_header_bytes} "
            "bytes."
        )
        return Past(431, Code.HEADERS_TOO_LARGE, message)


# In the scope of a HEAD request answered as GET (an app that can say its length without
# writing its body looks for it).
ASKED_HEAD = "leadgreen.asked_head"


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
# how long to wait when throttled (graph/server/ratelimit.py sends Retry-After), the request id,
# and the provenance an export carries (graph/server/exports.py `provenance`).
EXPOSED = (
    b"access-control-expose-headers",
    b"ETag, Retry-After, X-Request-Id, X-Cache, Content-Encoding, X-LeadGreen-Source, "
    b"X-LeadGreen-Source-Url, X-LeadGreen-Licence, X-LeadGreen-Release, "
    b"X-LeadGreen-Upstream-Commit, X-LeadGreen-Files-Sha256",
)
# (PUT and DELETE: GraphQL over SSE's single connection mode, graph/server/subscriptions.py)
METHODS = (b"access-control-allow-methods", b"GET, HEAD, POST, PUT, DELETE")
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


# --- The request head off the wire ----------------------------------------------------------

# What a request line and the header block hold besides the URL and the fields' bytes.
HEAD_SLACK = 1024
# After a refusal, what the client still sends is read and dropped for this long (or this
# many bytes) before the connection is closed.
LINGER_SECONDS = 2.0
LINGER_BYTES = 1024 * 1024


CONNECTIONS_MESSAGE = "The server holds as many connections as it can; try again shortly."


class Refused(Exception):
    """Raised in a parser callback: httptools stops, and the refusal is answered."""


class BoundedHttp(HttpToolsReader):
    """uvicorn's httptools protocol with the request head bounded, slow clients timed out and
    open connections bounded (see the module)."""

    # Read once per process from the environment `leadgreen serve` hands its workers.
    limits: ClassVar[HeadLimits | None] = None
    client_timeout: ClassVar[float] = 10.0
    max_connections: ClassVar[int] = 1024

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        if BoundedHttp.limits is None:
            settings = Settings()
            BoundedHttp.limits = HeadLimits(settings)
            BoundedHttp.client_timeout = settings.client_timeout_seconds
            BoundedHttp.max_connections = settings.max_connections
        self.head = BoundedHttp.limits
        self.max_head = self.head.max_url + self.head.max_header_bytes + HEAD_SLACK
        self.refusal: Past | None = None
        self._reading_head = True
        self._reading_body = False
        self._head_bytes = self._url_bytes = self._header_bytes = self._fields = 0
        self._dropped = 0
        self._dropping = False  # answered before its request's body came whole
        self._began = False  # a request's head began in the bytes being fed
        self._refusing = False  # a refusal waits for the answers before it
        # One timer while the answers written wait for the client (writing paused), and how
        # much of them was still to be sent when it was set.
        self._unread: asyncio.TimerHandle | None = None
        self._left = 0
        # One timer per connection, for the head being read or the body's next chunk; it is
        # moved on when it fires early, not each time a chunk comes, nor each request: between
        # requests it is left to fire, and dropped then (`_between`: no request being read).
        self._waiting: asyncio.TimerHandle | None = None
        self._heard = 0.0  # when the head began, or the body's last chunk came
        self._between = False
        # Answers from the response cache sent again at once (graph/server/replay.py), and a
        # request that may be one of them, held until its body is whole.
        self.replays: Replays | None = getattr(self.app, "replays", None)
        self._held: tuple[RequestResponseCycle, Any] | None = None

    def shutdown(self) -> None:
        """uvicorn stops: this connection's graceful end, and the event streams' (a stream of
        subscription events has no end of its own to wait for)."""
        super().shutdown()
        _stopping()

    def connection_made(self, transport: asyncio.Transport) -> None:  # type: ignore[override]
        super().connection_made(transport)
        if self.open_connections() > self.max_connections:
            self.refusal = Past(503, Code.OVERLOADED, CONNECTIONS_MESSAGE)
            self.logger.info("refused a connection: %d open already", self.max_connections)
            self.forget()  # while it lingers, it takes no open connection's place
            self.answer_and_close()
            return
        self._wait()

    def connection_lost(self, exc: Exception | None) -> None:
        self._stop_waiting()
        if self._unread is not None:
            self._unread.cancel()
        super().connection_lost(exc)

    def pause_writing(self) -> None:
        super().pause_writing()
        if self._unread is None:
            self._time_unread()

    def resume_writing(self) -> None:
        super().resume_writing()
        if self._unread is not None:  # the client read: timed again from here
            self._unread.cancel()
        self._time_unread()

    def _time_unread(self) -> None:
        """What is written and not yet taken by the client, timed from now (nothing when all
        of it is taken): writing paused, or a response complete with some of it unsent (below
        the buffer's high-water mark writing never pauses, and uvicorn's close waits for it)."""
        self._left = self.transport.get_write_buffer_size()
        self._unread = (
            self.loop.call_later(self.client_timeout, self._not_reading) if self._left else None
        )

    def _not_reading(self) -> None:
        """The answers written wait for the client: while it reads some within each client
        timeout it is timed again; else it is dropped, with what it left unread."""
        left = self.transport.get_write_buffer_size()
        if left < self._left:
            self._time_unread()
            return
        self._unread = None
        self.logger.info("closed a connection whose client stopped reading its answers")
        self.abandon()
        self.transport.abort()

    def _wait(self) -> None:
        """Time the head (or the body) from now."""
        self._heard = self.loop.time()
        if self._waiting is None:
            self._waiting = self.loop.call_at(self._heard + self.client_timeout, self._waited)

    def _stop_waiting(self) -> None:
        if self._waiting is not None:
            self._waiting.cancel()
            self._waiting = None

    def _waited(self) -> None:
        self._waiting = None
        if self._between or self.refusal is not None or self.transport.is_closing():
            return
        now = self.loop.time()
        if self.reading_paused():  # not the client's wait: timed again from now
            self._heard = now
        due = self._heard + self.client_timeout
        if now < due:  # a chunk came since the timer was set (or reading was paused)
            self._waiting = self.loop.call_at(due, self._waited)
            return
        what = "body" if self._reading_body else "head"
        self.logger.info("closed a connection whose request %s stalled", what)
        if not self.answerable(self._reading_body):
            self.transport.close()
            return
        self.drop_request()
        message = f"The request's {what} did not come within {self.client_timeout:g} s."
        self.refusal = Past(408, Code.REQUEST_TIMEOUT, message)
        self.answer_and_close()

    def data_received(self, data: bytes) -> None:
        if self.refusal is not None or self._dropping:  # answered: the rest is dropped
            self._dropped += len(data)
            if self._dropped > LINGER_BYTES:
                self.transport.close()
            return
        self._began = False
        if not self.feed(data):  # a client's doing: one line at INFO, as refusals are
            self.logger.info("refused a request it could not read: %s", self._reason())
            self.answer_and_close()
            return
        if self.refusal is None and self._reading_head:
            # The head's bytes so far: where it began in these bytes (after requests read
            # whole, pipelined), what the parser has read of it; the bytes after, in full.
            began = self._url_bytes + self._header_bytes
            self._head_bytes = began if self._began else self._head_bytes + len(data)
            if self._head_bytes > self.max_head:  # a line or a field still being read
                past = self.head.url(self._url_bytes) or self.head.header_bytes(self._head_bytes)
                self.refusal = past
                self.logger.info("refused a request: %s", self._reason())
                self.answer_and_close()

    def _reason(self) -> str:
        return f"{self.refusal.status} {self.refusal.code}" if self.refusal else "not HTTP/1.1"

    def _refuse(self, past: Past | None) -> None:
        if past is not None:
            self.refusal = past
            raise Refused

    def on_message_begin(self) -> None:
        super().on_message_begin()
        self._reading_head, self._reading_body = True, False
        if self._between:  # a later request on the connection: timed from its first byte
            self._between = False
            self._heard = self.loop.time()
        if self._waiting is None:  # (the first request's timer runs from the connection's start)
            self._wait()
        self._head_bytes = self._url_bytes = self._header_bytes = self._fields = 0
        self._began = True

    def on_url(self, url: bytes) -> None:
        self._url_bytes += len(url)
        self._refuse(self.head.url(self._url_bytes))
        super().on_url(url)

    def on_header(self, name: bytes, value: bytes) -> None:
        self._fields += 1
        self._header_bytes += len(name) + len(value)
        self._refuse(self.head.fields(self._fields) or self.head.header_bytes(self._header_bytes))
        super().on_header(name, value)

    def on_headers_complete(self) -> None:
        self._reading_head, self._reading_body = False, True
        self._heard = self.loop.time()
        super().on_headers_complete()

    def on_body(self, body: bytes) -> None:
        self._heard = self.loop.time()
        super().on_body(body)

    def on_message_complete(self) -> None:
        self._reading_body, self._between = False, True
        super().on_message_complete()
        held = self._held
        if held is not None and held[0] is self.cycle:
            self._held = None
            if not self._replayed(held[0]):
                super()._start_asgi_task(*held)

    def _start_asgi_task(self, cycle: RequestResponseCycle, app: Any) -> None:
        # A request whose head was just read, which may be answered again from what was sent
        # (a small body at most; no 100-continue, which the app's read of the body would
        # send): it waits for its body, and then is either replayed or started.
        if (
            self.replays is not None
            and len(self.replays)
            and cycle.more_body
            and cycle.scope["method"] in ("GET", "POST")
            and not cycle.waiting_for_100_continue
            and _small_body(cycle.scope["headers"])
        ):
            self._held = (cycle, app)
            return
        super()._start_asgi_task(cycle, app)

    def _replayed(self, cycle: RequestResponseCycle) -> bool:
        """Whether the request was answered as one before it (graph/server/replay.py): only
        when its answer can be written now and the connection kept."""
        if self.replays is None or not cycle.keep_alive or self.flow.write_paused:
            return False
        scope = cast(Scope, cycle.scope)
        found = self.replays.answer(scope, bytes(cycle.body))
        if found is None:
            return False
        self.answering = cycle
        cycle.response_started = cycle.response_complete = True
        self.transport.writelines((b"".join(self._opening(200)), *found))
        self.on_response_complete()
        return True

    def _opening(self, status: int) -> list[bytes]:
        """A response's status line and the server's own headers, as uvicorn writes them."""
        opening = [self.status_line(status)]
        for name, value in self.server_state.default_headers:
            opening += [name, b": ", value, b"\r\n"]
        return opening

    def answer_and_close(self) -> None:
        """The answer to a request httptools cannot read (or one past the limits), as JSON
        with a code; the connection is closed after it. The answers to requests before it
        (pipelined) go first: it is written once the last of them is complete."""
        if self.refusal is None:
            self.refusal = Past(
                400, Code.BAD_REQUEST, "The request is not a valid HTTP/1.1 request."
            )
        self._refusing = not self.answerable(self._reading_body)
        if self._refusing:
            return  # (on_response_complete writes it)
        status, code, message = self.refusal
        body = error_body(message, code)
        head = self._opening(status)
        head += [
            b"content-type: application/json\r\n",
            b"cache-control: no-store\r\n",
            *(b"%s: %s\r\n" % header for header in SECURITY_HEADERS),
            *((b"retry-after: 1\r\n",) if status == 503 else ()),
            b"content-length: %d\r\n" % len(body),
            b"connection: close\r\n\r\n",
            body,
        ]
        self.transport.write(b"".join(head))
        self._close_lingering()

    def on_response_complete(self) -> None:
        # Answered before its body came whole (not a request pipelined after it).
        given_up = self._reading_body and self.answering is self.cycle
        super().on_response_complete()
        if self._unread is None:
            self._time_unread()
        if self._refusing and not self.transport.is_closing():
            self.answer_and_close()  # once the last request before it is answered
        elif given_up and not self.transport.is_closing():
            # (its time limit passed, or it was refused): the rest of it is not wanted, and
            # a client still sending it would hold the connection for as long as it sends
            self._dropping = True
            self._stop_waiting()
            self._close_lingering()

    def _close_lingering(self) -> None:
        """Close once the answer is written. Closing with the client's bytes unread would
        reset the connection, and the client could lose the answer: read (and drop) for a
        little while first, as nginx does."""
        if self.transport.can_write_eof():
            self.transport.write_eof()
            self.loop.call_later(LINGER_SECONDS, self.transport.close)
        else:
            self.transport.close()


def _small_body(headers: Iterable[tuple[bytes, bytes]]) -> bool:
    """Whether a request's body is at most MAX_BODY_BYTES, by its Content-Length (none: no
    body); not when it comes in chunks."""
    small = True
    for name, value in headers:
        if name == b"content-length":
            small = value.isdigit() and int(value) <= MAX_BODY_BYTES
        elif name == b"transfer-encoding":
            return False
    return small


def uvicorn_settings(settings: Settings) -> dict[str, Any]:
    """uvicorn's settings for the HTTP edge of `leadgreen serve`: this protocol, no `server`
    banner, and no proxy headers read by uvicorn itself (the app believes them from the trusted
    proxies only: graph/server/ratelimit.py's `believed_proxies`)."""
    return {
        "http": f"{BoundedHttp.__module__}:{BoundedHttp.__name__}",
        "server_header": False,
        "proxy_headers": False,
    }
