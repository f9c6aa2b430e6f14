"""Subscriptions over GraphQL over SSE (the `graphql-sse` protocol's distinct connections mode)
and graphql-transport-ws (the `graphql-ws` protocol), both at /graphql, run by the engine.

- **Events**: `Releases` is told each release the process's release watcher begins to serve
  (graph/server/release.py) and hands it to every subscriber's `published()` (the schema's
  `releasePublished`, graph/schema/subscription.py). A subscriber slower than the releases
  gets the newest one (one pending event each).
- **Execution**: `Runner` gives each operation its context (the client who pays, the rate
  limiter, the events) and runs it through the engine's `subscribe` (graph/engine): limits
  and cost as a query's, charged when it starts; each event completed by the operation's
  plan, in a database session of its own that is closed after the event.
- **Bounds** (`Bounds`, the one check): `LEADGREEN_MAX_SUBSCRIPTIONS_PER_CLIENT` per client
  (its API key, else its address, as the rate limiter names it) and `LEADGREEN_MAX_SUBSCRIPTIONS`
  per process; past either, TOO_MANY_SUBSCRIPTIONS, and nothing else disturbed (over a WebSocket
  an `error` message for that operation, the connection and its other operations go on; over
  SSE a 429 or 503 answer). Every operation over a WebSocket counts while it runs.
- **SSE** (`Sse`): a POST to /graphql with `Accept: text/event-stream` (or a GET with the query
  in its query string) is answered `text/event-stream`: `event: next` for each result,
  `event: complete` at the end, a `:` comment every `LEADGREEN_SUBSCRIPTION_HEARTBEAT_SECONDS`.
  A request refused before its stream begins (validation, a limit, its cost, the bounds) is
  answered as /graphql answers it, JSON with its code and status. The stream is the
  subscription: it is not held to the request time limit (graph/server/edge.py's `endless`),
  and it ends when the client goes away.
- **graphql-transport-ws** (`transport_ws`): the protocol's messages and close codes:
  `connection_init` within `LEADGREEN_SUBSCRIPTION_INIT_SECONDS` else 4408, a second one 4429,
  `subscribe` before the ack 4401, an id in use 4409, a message that is not the protocol's
  4400; `ping` every heartbeat (the client's `pong`, like any message, counts as heard); a
  connection running no operation and heard nothing from for
  `LEADGREEN_SUBSCRIPTION_IDLE_SECONDS` is closed 1000. The API key may come in the upgrade's
  `X-API-Key` header or in `connection_init`'s payload (`{"x-api-key": ...}`: browsers cannot
  set a WebSocket's headers).
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import secrets
from collections.abc import AsyncGenerator, AsyncIterator, Awaitable, Callable
from dataclasses import dataclass
from typing import Any
from urllib.parse import parse_qsl

import orjson
from sqlalchemy.ext.asyncio import AsyncSession, async_sessionmaker
from starlette.types import ASGIApp, Receive, Scope, Send
from starlette.websockets import WebSocket, WebSocketDisconnect
from strawberry.schema.exceptions import CannotGetOperationTypeError, InvalidOperationTypeError
from strawberry.types import ExecutionResult

from db.database import close_quietly
from db.tables import ReleaseRow
from graph.engine.execution import Schema
from graph.errors import Code
from graph.schema.memory import Catalogs
from graph.schema.subscription import Published
from graph.server.edge import endless, on_stop
from graph.server.execute import RequestContext
from graph.server.observability import NOTE, Operation, Streams
from graph.server.protocol import (
    AS_JSON,
    GraphQLRequest,
    Reader,
    Refusal,
    from_item,
    media_of,
    read_json_body,
    request_error,
)
from graph.server.ratelimit import RateLimiter, identify
from graph.server.release import Current
from graph.server.responses import NO_STORE, SECURITY_HEADERS, send_response, uncached
from graph.settings import Settings

log = logging.getLogger("leadgreen")
PROTOCOL = "graphql-transport-ws"
_UNREAD = object()


class Releases:
    """The releases this process begins to serve, told to each subscriber."""

    def __init__(self) -> None:
        self._queues: set[asyncio.Queue[ReleaseRow]] = set()
        self._last: object = _UNREAD

    @property
    def subscribers(self) -> int:
        return len(self._queues)

    def served(self, current: Current | None) -> None:
        """The release watcher read `current`: a release other than the one served before is
        published (the first reading only says what is served)."""
        now = None if current is None else current.release.id
        last, self._last = self._last, now
        if last is _UNREAD or last == now or current is None:
            return
        for queue in self._queues:
            if queue.full():  # a slow subscriber gets the newest release
                queue.get_nowait()
            queue.put_nowait(current.release)

    def subscriber(self) -> Subscriber:
        """A subscriber, told of every release begun to be served from now on."""
        return Subscriber(self._queues)


class Subscriber:
    """One subscriber's releases, counted from its making until `close`."""

    def __init__(self, queues: set[asyncio.Queue[ReleaseRow]]) -> None:
        self.queues = queues
        self.queue: asyncio.Queue[ReleaseRow] = asyncio.Queue(maxsize=1)
        queues.add(self.queue)

    async def published(self) -> AsyncIterator[ReleaseRow]:
        while True:
            yield await self.queue.get()

    def close(self) -> None:
        self.queues.discard(self.queue)


class Bounds:
    """How many subscriptions (or single connection mode reservations) each client, and the
    process, holds open."""

    def __init__(self, per_client: int, per_process: int, held: str = "subscriptions") -> None:
        self.per_client, self.per_process, self.held = per_client, per_process, held
        self.clients: dict[str, int] = {}
        self.total = 0

    def enter(self, client: str) -> Refusal | None:
        """Count one more subscription of `client`, or the refusal past a bound."""
        held = self.clients.get(client, 0)
        if held >= self.per_client:
            return Refusal(
                429,
                f"This client holds {held} {self.held} already, the most one client may "
                f"(LEADGREEN_MAX_SUBSCRIPTIONS_PER_CLIENT={self.per_client}); complete one first.",
                Code.TOO_MANY_SUBSCRIPTIONS,
            )
        if self.total >= self.per_process:
            return Refusal(
                503,
                f"The server holds {self.total} {self.held}, the most it holds at once; "
                "try again later.",
                Code.TOO_MANY_SUBSCRIPTIONS,
                ((b"retry-after", b"30"),),
            )
        self.clients[client] = held + 1
        self.total += 1
        return None

    def leave(self, client: str) -> None:
        held = self.clients[client] - 1
        if held:
            self.clients[client] = held
        else:
            del self.clients[client]
        self.total -= 1


@dataclass
class SubscriptionContext(RequestContext):
    """A subscription's context: a request's, with the releases it is told of."""

    published: Published | None = None


class Runner:
    """Runs an operation sent over a subscription transport through the engine."""

    def __init__(
        self,
        schema: Schema,
        settings: Settings,
        make_session: async_sessionmaker[AsyncSession],
        catalogs: Catalogs,
        limiter: RateLimiter | None,
        releases: Releases,
        streams: Streams,
    ) -> None:
        self.schema, self.settings, self.make_session = schema, settings, make_session
        self.catalogs, self.limiter, self.releases = catalogs, limiter, releases
        self.streams = streams
        self.bounds = Bounds(settings.max_subscriptions_per_client, settings.max_subscriptions)

    def admit(self, client: str, operation: Operation) -> None:
        """Count the operation in the client's and the process's bounds (raises the refusal
        past one): it runs until `leave`."""
        refusal = self.bounds.enter(client)
        if refusal is not None:
            raise refusal
        self.streams.running(operation)

    def leave(
        self, client: str, operation: Operation, outcome: str, code: str | None = None
    ) -> None:
        self.bounds.leave(client)
        self.streams.ended(operation, outcome, code)

    def client(self, scope: Scope, api_key: bytes) -> str:
        return identify(scope, api_key, self.limiter)

    async def run(self, request: GraphQLRequest, client: str) -> Outcome:
        """The operation's events, or its one answer (a query's, or its refusal's). Raises
        Refusal for a request that names no operation, or one not run here (a mutation)."""
        # Told of releases from now, before the subscription's stream is made (a transport
        # may say the subscription runs once this returns).
        subscriber = self.releases.subscriber()
        context = SubscriptionContext(
            session=None,
            sessions=self.make_session,
            settings=self.settings,
            catalogs=self.catalogs,
            client=client,
            cost_bucket=self.limiter,
            published=subscriber.published,
        )
        try:
            outcome = await self.schema.subscribe(
                request.query,
                dict(request.variables or {}),
                context,
                operation_name=request.operation_name,
            )
        except InvalidOperationTypeError as exc:
            raise Refusal(
                400,
                "Subscriptions and queries are run here; send mutations with POST.",
                Code.METHOD_NOT_ALLOWED,
            ) from exc
        except CannotGetOperationTypeError as exc:
            raise Refusal(400, exc.as_http_error_reason(), Code.BAD_REQUEST) from exc
        except BaseException:
            subscriber.close()
            raise
        finally:
            if context.session is not None:
                await close_quietly(context.session)
                context.session = None
        if isinstance(outcome, ExecutionResult):
            subscriber.close()
            return outcome
        return Events(_each_in_its_session(outcome, context), subscriber)


class Events:
    """A subscription's results; `aclose` (whether or not they were read) ends it."""

    def __init__(
        self, results: AsyncGenerator[ExecutionResult, None], subscriber: Subscriber
    ) -> None:
        self.results, self.subscriber = results, subscriber

    def __aiter__(self) -> Events:
        return self

    async def __anext__(self) -> ExecutionResult:
        return await anext(self.results)

    async def aclose(self) -> None:
        try:
            await self.results.aclose()
        finally:
            self.subscriber.close()


Outcome = ExecutionResult | Events


async def _each_in_its_session(
    events: AsyncIterator[ExecutionResult], context: SubscriptionContext
) -> AsyncGenerator[ExecutionResult, None]:
    """The events, the session an event opened closed after it."""
    try:
        async with contextlib.aclosing(events):  # type: ignore[type-var]
            async for result in events:
                if context.session is not None:
                    await close_quietly(context.session)
                    context.session = None
                yield result
    finally:
        if context.session is not None:
            await close_quietly(context.session)


def formatted(result: ExecutionResult) -> dict[str, Any]:
    """A result as the protocols send it (GraphQL's response shape)."""
    body: dict[str, Any] = {}
    if result.errors:
        body["errors"] = [error.formatted for error in result.errors]
    body["data"] = result.data
    if result.extensions:
        body["extensions"] = result.extensions
    return body


def refused(result: ExecutionResult) -> bool:
    """A result of errors raised before execution (no data, none has a path)."""
    return (
        bool(result.errors) and result.data is None and request_error(formatted(result)["errors"])
    )


async def _pump(events: Events, deliver: Callable[[ExecutionResult], Awaitable[None]]) -> None:
    async with contextlib.aclosing(events):
        async for result in events:
            await deliver(result)


def _first_code(result: ExecutionResult) -> str | None:
    for error in result.errors or ():
        if error.extensions and "code" in error.extensions:
            return str(error.extensions["code"])
    return None


def _refused_status(result: ExecutionResult) -> int:
    return 429 if _first_code(result) == Code.THROTTLED else 400


Write = Callable[[bytes], Awaitable[None]]


async def event_stream(
    receive: Receive, send: Send, heartbeat: float, produce: Callable[[Write], Awaitable[None]]
) -> bool:
    """Answer with an event stream: `produce` writes its events through the `write` it is
    given, and a `:` comment is written every `heartbeat` seconds, until `produce` returns
    (True), or the client goes away or the server stops (False)."""
    endless()
    sent = [
        (b"content-type", b"text/event-stream; charset=utf-8"),
        (b"cache-control", b"no-cache, no-transform"),
        (b"x-accel-buffering", b"no"),  # nginx: pass each event on at once
        *SECURITY_HEADERS,
    ]
    note = NOTE.get(None)
    if note is not None:
        note.status = 200
        sent.extend(note.headers)
    await send({"type": "http.response.start", "status": 200, "headers": sent})
    lock = asyncio.Lock()

    async def write(chunk: bytes) -> None:
        async with lock:
            await send({"type": "http.response.body", "body": chunk, "more_body": True})

    async def beat() -> None:
        while True:
            await asyncio.sleep(heartbeat)
            await write(b":\n\n")

    async def gone() -> None:
        while (await receive())["type"] != "http.disconnect":
            pass

    pump = asyncio.ensure_future(produce(write))
    stopped = asyncio.Event()  # the server stops: the stream ends (a client reconnects)
    forget = on_stop(stopped.set)
    tasks = [
        pump,
        asyncio.ensure_future(beat()),
        asyncio.ensure_future(gone()),
        asyncio.ensure_future(stopped.wait()),
    ]
    try:
        await asyncio.wait(tasks, return_when=asyncio.FIRST_COMPLETED)
    finally:
        forget()
        for task in tasks:
            task.cancel()
        await asyncio.gather(*tasks, return_exceptions=True)
    ended = pump.done() and not pump.cancelled() and pump.exception() is None
    with contextlib.suppress(OSError):
        await send({"type": "http.response.body", "body": b""})
    return ended


def _next(payload: dict[str, Any]) -> bytes:
    return b"event: next\ndata: " + orjson.dumps(payload) + b"\n\n"


class Sse:
    """GraphQL over SSE, distinct connections mode: one subscription a request."""

    def __init__(self, runner: Runner, reader: Reader, settings: Settings) -> None:
        self.runner, self.reader, self.settings = runner, reader, settings
        self.heartbeat = settings.subscription_heartbeat_seconds

    @staticmethod
    def asked(scope: Scope) -> bool:
        """Whether the request asks for an event stream (prefers it to JSON: `negotiate`)."""
        return media_of(scope["headers"]).event_stream

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        headers = dict(scope["headers"])
        media = media_of(scope["headers"])
        operation = None
        try:
            request = await self.read(scope, receive, headers)
            client = self.runner.client(scope, headers.get(b"x-api-key", b""))
            operation = self.runner.streams.started("sse", request.label(request.query), None)
            self.runner.admit(client, operation)
            outcome_name, code = "failed", None
            try:
                outcome = await self.runner.run(request, client)
                if isinstance(outcome, ExecutionResult) and refused(outcome):
                    outcome_name, code = "refused", _first_code(outcome)
                    body = orjson.dumps(formatted(outcome))
                    await uncached(send, _refused_status(outcome), body, media.content_type)
                    return
                outcome_name = await self.stream(outcome, receive, send, operation)
            except Refusal as refusal:
                outcome_name, code = "refused", refusal.code
                raise
            finally:
                self.runner.leave(client, operation, outcome_name, code)
        except Refusal as refusal:
            if operation is not None:  # (refused by the bounds: never admitted)
                self.runner.streams.ended(operation, "refused", refusal.code)
            status, body = refusal.answer(media)
            await uncached(send, status, body, media.content_type, refusal.headers)

    async def read(
        self, scope: Scope, receive: Receive, headers: dict[bytes, bytes]
    ) -> GraphQLRequest:
        method = scope["method"]
        if method == "GET":
            found = self.reader.query_string(scope["query_string"])
            if found is None:
                raise Refusal.malformed("The request has no `query`.")
            return found
        if method != "POST":
            raise Refusal(
                405,
                "GraphQL over SSE is served over GET and POST.",
                Code.METHOD_NOT_ALLOWED,
                ((b"allow", b"GET, POST"),),
            )
        return self.parsed(await self.body(receive, headers))

    async def body(self, receive: Receive, headers: dict[bytes, bytes]) -> bytes:
        return await read_json_body(
            receive,
            headers.get(b"content-type", b""),
            headers.get(b"content-length"),
            self.settings.max_body_bytes,
        )

    def parsed(self, body: bytes) -> GraphQLRequest:
        read = self.reader.json_body(body)
        if isinstance(read, tuple):
            raise Refusal(400, "Batching is not supported over SSE.", Code.BAD_REQUEST)
        if read.query is None:  # (a persisted query's hash alone)
            raise Refusal(
                400, "Send the document's text over SSE.", Code.PERSISTED_QUERY_NOT_SUPPORTED
            )
        return read

    async def stream(
        self, outcome: Outcome, receive: Receive, send: Send, operation: Operation
    ) -> str:
        """The results as server-sent events, until the last (completed) or the client leaves
        (closed)."""
        sent = self.runner.streams.sent

        async def produce(write: Write) -> None:
            if isinstance(outcome, ExecutionResult):
                await write(_next(formatted(outcome)))
                sent(operation)
            else:

                async def deliver(result: ExecutionResult) -> None:
                    await write(_next(formatted(result)))
                    sent(operation)

                await _pump(outcome, deliver)
            await write(b"event: complete\ndata: \n\n")

        try:
            ended = await event_stream(receive, send, self.heartbeat, produce)
        finally:
            if isinstance(outcome, Events):
                await outcome.aclose()  # (also when the pump never began)
        return "completed" if ended else "closed"


TOKEN_HEADER = b"x-graphql-event-stream-token"
# Messages held for a reservation's stream: past it, its operations wait for the stream (a
# subscriber slower than the releases gets the newest: Releases).
OUTBOX = 16


class Reservation:
    """A single connection mode reservation: who made it, its operations (by the client's
    ids), and the messages for its stream, held until the stream reads them."""

    def __init__(self, token: str, client: str) -> None:
        self.token, self.client = token, client
        self.ids: set[str] = set()  # every id in use: being admitted, or running
        self.operations: dict[str, asyncio.Task[None]] = {}
        self.outbox: asyncio.Queue[bytes] = asyncio.Queue(OUTBOX)
        self.open = False
        self.expiry: asyncio.TimerHandle | None = None
        self.quiet = asyncio.Event()  # no operation runs (the idle timeout counts)
        self.quiet.set()


class SingleConnection:
    """GraphQL over SSE, single connection mode (graphql-sse's PROTOCOL.md): a PUT makes a
    reservation and answers its token (201, text/plain); a GET or POST asking for an event
    stream with the token opens the reservation's one stream; a POST with the token sends an
    operation (its id in `extensions.operationId`; 202, its results then on the stream as
    `next` and `complete` events carrying the id); a DELETE with the token and
    `?operationId=` stops one. The token comes in the X-GraphQL-Event-Stream-Token header or
    the `token` parameter."""

    def __init__(self, runner: Runner, sse: Sse, settings: Settings) -> None:
        self.runner, self.sse = runner, sse
        self.reservations: dict[str, Reservation] = {}
        self.bounds = Bounds(
            settings.max_subscriptions_per_client, settings.max_subscriptions, "reservations"
        )
        self.expire_seconds = settings.subscription_init_seconds
        self.idle_seconds = settings.subscription_idle_seconds

    @staticmethod
    def token(scope: Scope) -> str | None:
        """The reservation's token the request carries, if any."""
        header: bytes
        value: bytes
        for header, value in scope["headers"]:
            if header == TOKEN_HEADER:
                return value.decode("latin-1")
        query: bytes = scope["query_string"]
        if b"token=" in query:
            for name, given in parse_qsl(query.decode("latin-1")):
                if name == "token":
                    return given
        return None

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        headers = dict(scope["headers"])
        media = media_of(scope["headers"])
        try:
            await self.answer(scope, receive, send, headers)
        except Refusal as refusal:
            status, body = refusal.answer(media)
            await uncached(send, status, body, media.content_type, refusal.headers)

    async def answer(
        self, scope: Scope, receive: Receive, send: Send, headers: dict[bytes, bytes]
    ) -> None:
        method = scope["method"]
        if method == "PUT":
            client = self.runner.client(scope, headers.get(b"x-api-key", b""))
            made = self.reserve(client)
            content = (b"content-type", b"text/plain; charset=utf-8")
            await send_response(send, 201, [content, NO_STORE], made.encode())
            return
        token = self.token(scope)
        if not token:
            raise Refusal(
                400,
                "Name the reservation: its token in the X-GraphQL-Event-Stream-Token header or "
                "the `token` parameter (a PUT to /graphql makes one).",
                Code.STREAM_TOKEN_REQUIRED,
            )
        reservation = self.reservations.get(token)
        if reservation is None:
            raise Refusal(
                404,
                "No reservation has this token: it was never made, expired before its stream "
                "opened, or its stream has ended. Make another with a PUT to /graphql.",
                Code.STREAM_NOT_FOUND,
            )
        if method == "DELETE":
            self.stop(reservation, scope["query_string"])
            await send_response(send, 200, [NO_STORE])
        elif Sse.asked(scope):
            await self.stream(reservation, receive, send)
        elif method == "POST":
            await self.operate(reservation, scope, receive, send, headers)
        else:
            raise Refusal(
                405,
                "With a reservation's token: GET or POST asking for text/event-stream opens its "
                "stream, POST sends an operation, DELETE stops one.",
                Code.METHOD_NOT_ALLOWED,
                ((b"allow", b"GET, POST, PUT, DELETE"),),
            )

    def reserve(self, client: str) -> str:
        refusal = self.bounds.enter(client)
        if refusal is not None:
            raise refusal
        token = secrets.token_urlsafe(24)
        reservation = self.reservations[token] = Reservation(token, client)
        loop = asyncio.get_running_loop()
        reservation.expiry = loop.call_later(self.expire_seconds, self.end, reservation)
        return token

    def end(self, reservation: Reservation) -> None:
        """The reservation is over (expired, or its stream ended): its token forgotten, its
        operations stopped."""
        if self.reservations.get(reservation.token) is not reservation:
            return
        del self.reservations[reservation.token]
        self.bounds.leave(reservation.client)
        if reservation.expiry is not None:
            reservation.expiry.cancel()
        reservation.ids.clear()
        for task in reservation.operations.values():
            task.cancel()

    async def stream(self, reservation: Reservation, receive: Receive, send: Send) -> None:
        if reservation.open:
            raise Refusal(
                409,
                "This reservation's stream is open already: one stream a reservation.",
                Code.STREAM_ALREADY_OPEN,
            )
        reservation.open = True
        if reservation.expiry is not None:
            reservation.expiry.cancel()
        idle = self.idle_seconds

        async def produce(write: Write) -> None:
            # Until no operation has run for the idle timeout (as an idle WebSocket).
            while True:
                getting = asyncio.ensure_future(reservation.outbox.get())
                try:
                    if not reservation.quiet.is_set():
                        await write(await getting)
                        continue
                    done, _ = await asyncio.wait({getting}, timeout=idle)
                    if not done and reservation.quiet.is_set():
                        return
                    await write(await getting)
                finally:
                    getting.cancel()

        try:
            await event_stream(receive, send, self.sse.heartbeat, produce)
        finally:
            self.end(reservation)
            tasks = list(reservation.operations.values())
            await asyncio.gather(*tasks, return_exceptions=True)

    def stop(self, reservation: Reservation, query_string: bytes) -> None:
        ident = dict(parse_qsl(query_string.decode("latin-1"))).get("operationId")
        if not ident:
            raise Refusal(
                400, "Name the operation to stop: `?operationId=`.", Code.OPERATION_ID_REQUIRED
            )
        reservation.ids.discard(ident)
        task = reservation.operations.get(ident)
        if task is not None:
            task.cancel()

    async def operate(
        self,
        reservation: Reservation,
        scope: Scope,
        receive: Receive,
        send: Send,
        headers: dict[bytes, bytes],
    ) -> None:
        body = await self.sse.body(receive, headers)
        request = self.sse.parsed(body)
        ident = _operation_id(body)
        if ident in reservation.ids:
            raise Refusal(
                409,
                f"An operation of this reservation has the id {ident!r} already.",
                Code.OPERATION_ID_IN_USE,
            )
        client = self.runner.client(scope, headers.get(b"x-api-key", b""))
        operation = self.runner.streams.started("sse_single", request.label(request.query), ident)
        try:
            self.runner.admit(client, operation)
        except Refusal as refusal:
            self.runner.streams.ended(operation, "refused", refusal.code)
            raise
        reservation.ids.add(ident)
        try:
            outcome = await self.runner.run(request, client)
        except BaseException as exc:
            reservation.ids.discard(ident)
            code = exc.code if isinstance(exc, Refusal) else None
            self.runner.leave(client, operation, "refused" if code else "failed", code)
            raise
        if isinstance(outcome, ExecutionResult) and refused(outcome):
            reservation.ids.discard(ident)
            self.runner.leave(client, operation, "refused", _first_code(outcome))
            body = orjson.dumps(formatted(outcome))
            await uncached(send, _refused_status(outcome), body, AS_JSON.content_type)
            return
        if ident not in reservation.ids:  # stopped, or its reservation ended, meanwhile
            if isinstance(outcome, Events):
                await outcome.aclose()
            self.runner.leave(client, operation, "stopped")
            await send_response(send, 204, [NO_STORE])
            return
        task = asyncio.ensure_future(self.deliver(reservation, ident, outcome, client, operation))
        reservation.operations[ident] = task
        reservation.quiet.clear()
        await send_response(send, 202, [NO_STORE])

    async def deliver(
        self,
        reservation: Reservation,
        ident: str,
        outcome: Outcome,
        client: str,
        operation: Operation,
    ) -> None:
        """The operation's results, onto its reservation's stream."""
        put, sent = reservation.outbox.put, self.runner.streams.sent
        outcome_name = "failed"
        try:
            if isinstance(outcome, ExecutionResult):
                await put(_next({"id": ident, "payload": formatted(outcome)}))
                sent(operation)
            else:

                async def next_result(result: ExecutionResult) -> None:
                    await put(_next({"id": ident, "payload": formatted(result)}))
                    sent(operation)

                try:
                    await _pump(outcome, next_result)
                finally:
                    await outcome.aclose()
            await put(b"event: complete\ndata: " + orjson.dumps({"id": ident}) + b"\n\n")
            outcome_name = "completed"
        except asyncio.CancelledError:
            stopped = ident not in reservation.ids and reservation.token in self.reservations
            outcome_name = "stopped" if stopped else "closed"
            raise
        except Exception:
            log.exception("subscription %r failed", ident)
        finally:
            self.runner.leave(client, operation, outcome_name)
            reservation.ids.discard(ident)
            if reservation.operations.get(ident) is asyncio.current_task():
                del reservation.operations[ident]
            if not reservation.operations:
                reservation.quiet.set()


def _operation_id(body: bytes) -> str:
    """`extensions.operationId` of a single connection mode request."""
    try:
        extensions = orjson.loads(body).get("extensions")
    except (orjson.JSONDecodeError, AttributeError):
        extensions = None
    ident = extensions.get("operationId") if isinstance(extensions, dict) else None
    if not isinstance(ident, str) or not ident:
        raise Refusal(
            400,
            "Give the operation an id: `extensions.operationId`, a non-empty string, unique "
            "among the reservation's operations.",
            Code.OPERATION_ID_REQUIRED,
        )
    return ident


class EventStreams:
    """/graphql: GraphQL over SSE for a request asking for an event stream (single connection
    mode for one naming a reservation, or a PUT or DELETE), else `graphql` (an ASGI app, as
    Starlette's Route takes a class instance)."""

    def __init__(self, streams: Sse, single: SingleConnection, graphql: ASGIApp) -> None:
        self.streams, self.single, self.graphql = streams, single, graphql

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["method"] in ("PUT", "DELETE") or self.single.token(scope) is not None:
            await self.single(scope, receive, send)
        elif self.streams.asked(scope):
            await self.streams(scope, receive, send)
        else:
            await self.graphql(scope, receive, send)


def _api_key(payload: object) -> bytes:
    if isinstance(payload, dict):
        key = payload.get("x-api-key", payload.get("apiKey"))
        if isinstance(key, str):
            return key.encode()
    return b""


class Closed(Exception):
    """The connection is to be closed with this code and reason."""

    def __init__(self, code: int, reason: str) -> None:
        super().__init__(code, reason)
        self.code, self.reason = code, reason


class TransportWs:
    """The graphql-transport-ws endpoint (an ASGI app for Starlette's WebSocketRoute)."""

    def __init__(self, runner: Runner, settings: Settings) -> None:
        self.runner, self.settings = runner, settings

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        websocket = WebSocket(scope, receive, send)
        streams = self.runner.streams
        if PROTOCOL not in scope.get("subprotocols", ()):
            await websocket.accept()
            await websocket.close(4406, "Subprotocol not acceptable")
            return
        await websocket.accept(subprotocol=PROTOCOL)
        connection = Connection(self.runner, self.settings, websocket)
        name, started = streams.opened()
        connection.name = name
        try:
            await connection.serve()
        except Closed as closed:
            connection.code = closed.code
            with contextlib.suppress(Exception):
                await websocket.close(closed.code, closed.reason)
        except WebSocketDisconnect as gone:
            connection.code = gone.code
        finally:
            await connection.end()
            streams.closed(name, started, connection.code, connection.count)


class Connection:
    """One graphql-transport-ws connection: its messages in, its operations' results out."""

    def __init__(self, runner: Runner, settings: Settings, websocket: WebSocket) -> None:
        self.runner, self.websocket = runner, websocket
        self.init_seconds = settings.subscription_init_seconds
        self.heartbeat = settings.subscription_heartbeat_seconds
        self.idle = settings.subscription_idle_seconds
        self.max_bytes = settings.max_body_bytes
        self.operations: dict[str, asyncio.Task[None]] = {}
        self.client = ""
        self.acked = False
        self.lock = asyncio.Lock()
        self.name = ""  # its id in the log
        self.code = 1005  # how it was closed (1005: no code given)
        self.count = 0  # operations it sent

    async def send(self, message: dict[str, Any]) -> None:
        async with self.lock:
            await self.websocket.send_text(orjson.dumps(message).decode())

    async def serve(self) -> None:
        loop = asyncio.get_running_loop()
        started = heard = loop.time()
        next_ping = started + self.heartbeat
        receiving: asyncio.Future[Any] | None = None
        try:
            while True:
                now = loop.time()
                if not self.acked:
                    due = started + self.init_seconds
                    if now >= due:
                        raise Closed(4408, "Connection initialisation timeout")
                else:
                    if now >= next_ping:
                        await self.send({"type": "ping"})
                        next_ping = now + self.heartbeat
                    due = next_ping
                    if not self.operations:
                        if now - heard >= self.idle:
                            raise Closed(1000, "Idle")
                        due = min(due, heard + self.idle)
                if receiving is None:
                    receiving = asyncio.ensure_future(self.websocket.receive())
                done, _ = await asyncio.wait({receiving}, timeout=max(0.0, due - loop.time()))
                if not done:
                    continue
                message, receiving = receiving.result(), None
                if message["type"] == "websocket.disconnect":
                    self.code = message.get("code", 1005)
                    return
                heard = loop.time()
                await self.handle(message)
        finally:
            if receiving is not None:
                receiving.cancel()

    async def handle(self, message: dict[str, Any]) -> None:
        raw = message.get("text")
        if raw is None:
            raw = message.get("bytes") or b""
        if len(raw) > self.max_bytes:
            raise Closed(4400, "Message too large")
        try:
            parsed = orjson.loads(raw)
        except orjson.JSONDecodeError:
            raise Closed(4400, "Invalid message received") from None
        kind = parsed.get("type") if isinstance(parsed, dict) else None
        if kind == "connection_init":
            if self.acked:
                raise Closed(4429, "Too many initialisation requests")
            headers = dict(self.websocket.scope["headers"])
            key = _api_key(parsed.get("payload")) or headers.get(b"x-api-key", b"")
            self.client = self.runner.client(self.websocket.scope, key)
            self.acked = True
            await self.send({"type": "connection_ack"})
        elif kind == "ping":
            pong: dict[str, Any] = {"type": "pong"}
            if "payload" in parsed:
                pong["payload"] = parsed["payload"]
            await self.send(pong)
        elif kind == "pong":
            pass
        elif kind == "subscribe":
            await self.subscribe(parsed)
        elif kind == "complete":
            ident = parsed.get("id")
            if not isinstance(ident, str):
                raise Closed(4400, "Invalid message received")
            task = self.operations.pop(ident, None)
            if task is not None:
                task.cancel()
        else:
            raise Closed(4400, "Invalid message received")

    async def subscribe(self, message: dict[str, Any]) -> None:
        ident, payload = message.get("id"), message.get("payload")
        if not isinstance(ident, str) or not isinstance(payload, dict):
            raise Closed(4400, "Invalid message received")
        if not self.acked:
            raise Closed(4401, "Unauthorized")
        if ident in self.operations:
            raise Closed(4409, f"Subscriber for {ident} already exists")
        try:
            request = from_item(payload)
            if request.query is None:
                raise Refusal(400, "Send the document's text.", Code.PERSISTED_QUERY_NOT_SUPPORTED)
        except Refusal as refusal:
            await self.send({"id": ident, "type": "error", "payload": _errors(refusal)})
            return
        self.operations[ident] = asyncio.ensure_future(self.operate(ident, request))

    async def operate(self, ident: str, request: GraphQLRequest) -> None:
        streams = self.runner.streams
        self.count += 1
        operation = streams.started("ws", request.label(request.query), ident, connection=self.name)
        # Counted once it runs: an operation completed before it started never counted.
        try:
            self.runner.admit(self.client, operation)
        except Refusal as past:
            streams.ended(operation, "refused", past.code)
            self.operations.pop(ident, None)
            await self.send({"id": ident, "type": "error", "payload": _errors(past)})
            return
        outcome_name, code = "failed", None
        try:
            try:
                outcome = await self.runner.run(request, self.client)
            except Refusal as refusal:
                outcome_name, code = "refused", refusal.code
                await self.send({"id": ident, "type": "error", "payload": _errors(refusal)})
                return
            if isinstance(outcome, ExecutionResult):
                if refused(outcome):
                    outcome_name, code = "refused", _first_code(outcome)
                    errors = formatted(outcome)["errors"]
                    await self.send({"id": ident, "type": "error", "payload": errors})
                    return
                await self.send({"id": ident, "type": "next", "payload": formatted(outcome)})
                streams.sent(operation)
            else:

                async def deliver(result: ExecutionResult) -> None:
                    await self.send({"id": ident, "type": "next", "payload": formatted(result)})
                    streams.sent(operation)

                try:
                    await _pump(outcome, deliver)
                finally:
                    await outcome.aclose()
            await self.send({"id": ident, "type": "complete"})
            outcome_name = "completed"
        except asyncio.CancelledError:
            # The client's `complete` took it out of the operations first; else the connection
            # ended.
            outcome_name = (
                "closed" if self.operations.get(ident) is asyncio.current_task() else "stopped"
            )
            raise
        except (WebSocketDisconnect, OSError):
            outcome_name = "closed"
        except Exception:
            log.exception("subscription %r failed", ident)
        finally:
            self.runner.leave(self.client, operation, outcome_name, code)
            if self.operations.get(ident) is asyncio.current_task():
                del self.operations[ident]

    async def end(self) -> None:
        tasks = list(self.operations.values())
        for task in tasks:  # (each says "closed": it is still among the operations)
            task.cancel()
        await asyncio.gather(*tasks, return_exceptions=True)
        self.operations.clear()


def _errors(refusal: Refusal) -> list[Any]:
    errors: list[Any] = orjson.loads(refusal.body)["errors"]
    return errors
