"""The /graphql endpoint: an answer from the response cache without touching GraphQL, or one
executed (graph/server/execute.py) and kept.

Plain ASGI on purpose (no Request object): a cached answer costs a body read, two hashes, a
dict lookup and two `send` calls. Every request to /graphql ends here, GraphiQL included: each
answer or refusal is JSON with an `extensions.code`, in the media type the client asked for
(graph/server/protocol.py); the edge (graph/server/edge.py) holds the request within its time
limit and answers whatever fails unexpectedly.
"""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Awaitable, Callable
from typing import TYPE_CHECKING, Protocol

from starlette.types import Receive, Scope, Send
from strawberry.types import ExecutionResult

from db.tables import ReleaseRow
from graph.engine.prepared import CLIENT
from graph.errors import OVERLOADED_MESSAGE, UNAVAILABLE_MESSAGE, Code, database_fault
from graph.server import execute as run
from graph.server.edge import ASKED_HEAD
from graph.server.execute import RETRY_SOON, Produced
from graph.server.observability import NOTE, name_operation, noted
from graph.server.protocol import (
    AS_JSON,
    Batch,
    GraphQLRequest,
    Media,
    Reader,
    Refusal,
    answer_batch,
    joined,
    negotiate,
    read_json_body,
)
from graph.server.ratelimit import RateLimiter, identify, stamp
from graph.server.release import Current, ReleaseWatcher
from graph.server.response_cache import PersistedQueries, ResponseCache
from graph.server.responses import Answer, Coding, Headers, Responder, choose, uncached
from graph.settings import Settings

if TYPE_CHECKING:
    from graph.server.replay import Replays

log = logging.getLogger("leadgreen")
# HEAD: graph/server/edge.py; PUT and DELETE: graph/server/subscriptions.py (single connection
# mode of GraphQL over SSE)
ALLOW = ((b"allow", b"GET, HEAD, POST, PUT, DELETE"),)
# GraphiQL's page (graph/server/graphiql.py), sent to a browser's GET without a query.
Page = Callable[[Scope, Send], Awaitable[None]]


class Execute(Protocol):
    """Runs a request's document through the schema (graph/server/execute.py's `execute`, with
    the schema, settings, sessions, catalogs and rate limiter bound: graph/server/app.py)."""

    def __call__(
        self,
        query: str,
        request: GraphQLRequest,
        release: ReleaseRow | None,
        get: bool,
        client: str,
    ) -> Awaitable[ExecutionResult]: ...


OVERLOADED = Refusal(503, OVERLOADED_MESSAGE, Code.OVERLOADED, RETRY_SOON)
# A shared execution's outcome, for the requests that joined it: its answer, the exception it
# raised, or None when it was cancelled (each of them then produces its own).
Outcome = Produced | Exception | None
# An answer sent from the response cache: its key there, its release's token, its headers.
FromCache = tuple[bytes, bytes, Headers]


class GraphQLHandler:
    def __init__(
        self,
        settings: Settings,
        *,
        execute: Execute,
        cache: ResponseCache,
        release: ReleaseWatcher,
        persisted: PersistedQueries,
        reader: Reader,
        limiter: RateLimiter | None = None,
        graphiql: Page | None = None,
        replays: Replays | None = None,
    ) -> None:
        self.settings, self.execute = settings, execute
        self.cache, self.release, self.persisted = cache, release, persisted
        self.reader, self.limiter, self.graphiql = reader, limiter, graphiql
        # What the cache's answers said, sent again by the protocol (graph/server/replay.py)
        self.replays = replays
        self.respond = Responder(settings.http_max_age, settings.compress_min_bytes)
        self.caching = settings.cache != "off"
        # Requests being answered now: admission control (past `max_in_flight`, OVERLOADED).
        # Counted from their start, as they wait for the loop too, not only in `execute`.
        self.running = 0
        self._flights: dict[tuple[bytes, bool, bool, str], asyncio.Future[Outcome]] = {}

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        method = scope["method"]
        content_type = accept = accept_encoding = if_none_match = api_key = body = b""
        length: bytes | None = None
        for name, value in scope["headers"]:
            if name == b"content-type":
                content_type = value
            elif name == b"accept":  # sent more than once: combined, as HTTP does
                accept = joined(accept, value)
            elif name == b"accept-encoding":
                accept_encoding = joined(accept_encoding, value)
            elif name == b"if-none-match":
                if_none_match = value
            elif name == b"x-api-key":
                api_key = value
            elif name == b"content-length":
                length = value
        media = negotiate(accept) if accept else AS_JSON
        admitted = False
        try:
            # Who sends it: an API key not configured is refused here, before a body is read.
            who = identify(scope, api_key, self.limiter)
            # Who prepares a new document, for its bounds (graph/engine/prepared.py).
            CLIENT.set(who)
            client = who if self.limiter is not None else ""  # who pays (no one: one flight)
            request: GraphQLRequest | Batch | None
            if method == "GET":
                request = self.reader.query_string(scope["query_string"])
                if request is None:
                    if media.html and self.graphiql is not None:
                        await self.graphiql(scope, noted(send))
                        return
                    raise Refusal.malformed("The request has no `query`.")
            elif method == "POST":
                body = await read_json_body(
                    receive, content_type, length, self.settings.max_body_bytes
                )
                if self.limiter is not None:  # a large body is paid for before it is read
                    await self.limiter.pay_for_body(client, body)
                request = self.reader.json_body(body)
            else:
                raise Refusal(
                    405,
                    "GraphQL is served over GET and POST (PUT and DELETE: GraphQL over SSE).",
                    Code.METHOD_NOT_ALLOWED,
                    ALLOW,
                )
            # In flight from here: a request whose body is still coming takes no place (a slow
            # client's is bounded by the client timeout and the open connections).
            if self.running >= self.settings.max_in_flight:
                status, body = OVERLOADED.answer(media)
                await uncached(send, status, body, media.content_type, OVERLOADED.headers)
                return
            admitted = True
            self.running += 1
            if isinstance(request, tuple):
                await self.batch(request, media, client, send)
                return
            coding = choose(accept_encoding)
            get = method == "GET"
            sent = await self.answer(request, get, if_none_match, coding, media, client, send)
            if sent is not None and self.replays is not None and ASKED_HEAD not in scope:
                note = NOTE.get(None)
                if note is not None:
                    self.replays.keep(scope, body, *sent, note)
        except Refusal as refusal:
            status, body = refusal.answer(media)
            await uncached(send, status, body, media.content_type, refusal.headers)
        finally:
            if admitted:
                self.running -= 1

    async def answer(
        self,
        request: GraphQLRequest,
        get: bool,
        if_none_match: bytes,
        coding: Coding,
        media: Media,
        client: str,
        send: Send,
    ) -> FromCache | None:
        """Answer; what was sent when it is a 200 from the response cache."""
        query = await (  # a key's tier may run only its registered documents
            self.persisted.resolve(request)
            if self.limiter is None
            else self.limiter.tier(client).resolve(request, self.persisted)
        )
        name_operation(request.label(query))
        if query is None:
            raise Refusal(200, "PersistedQueryNotFound", Code.PERSISTED_QUERY_NOT_FOUND)
        current = await self.current_release()
        key = None
        if current is not None:
            key = request.key(current.token)
        answer = await self.cache.get(key) if key is not None and self.caching else None
        hit = answer is not None
        # With rate limiting, an answer the client did not pay for while it ran pays now.
        unpaid = self.limiter is not None
        if answer is None:
            release = current.release if current is not None else None
            produced, joined = await self.produce_once(
                key, query, request, release, get, media, client
            )
            if not produced.ok:
                await uncached(
                    send,
                    produced.status,
                    produced.answer.body,
                    media.content_type,
                    produced.headers,
                )
                return None
            answer = produced.answer
            if produced.throttle is not None and not joined:
                unpaid = False  # a GET answer is public: no client's throttle status in it
                answer = answer if get else Answer(stamp(answer.body, produced.throttle))
        if unpaid:
            charged = await self.charge(answer, client, media, send)
            if charged is None:
                return None
            if not get:
                answer = charged
        headers = await self.respond.answer(
            send,
            answer,
            etag=b'W/"%s"' % key if get and key is not None else None,
            if_none_match=if_none_match,
            coding=coding,
            cache=b"HIT" if hit else b"MISS",
            content_type=media.content_type,
        )
        if hit and headers is not None and key is not None and current is not None:
            return key, current.token, headers
        return None

    async def charge(self, answer: Answer, client: str, media: Media, send: Send) -> Answer | None:
        """A stored answer charged to the client (its actual cost), with the client's throttle
        status; None when the bucket cannot pay for it (the 429 is sent)."""
        assert self.limiter is not None
        charged = await self.limiter.charge(answer.body, client, media.graphql_response)
        if isinstance(charged, Refusal):
            await uncached(send, charged.status, charged.body, media.content_type, charged.headers)
            return None
        return Answer(charged)

    async def batch(self, items: Batch, media: Media, client: str, send: Send) -> None:
        """Each operation of a batch in turn, answered as a JSON array."""

        async def one(request: GraphQLRequest, collect: Send) -> None:
            await self.answer(request, False, b"", None, media, client, collect)

        body = await answer_batch(items, self.settings.batch_max, media, one)
        await uncached(send, 200, body, media.content_type)

    async def produce_once(
        self,
        key: bytes | None,
        query: str,
        request: GraphQLRequest,
        release: ReleaseRow | None,
        get: bool,
        media: Media = AS_JSON,
        client: str = "",
    ) -> tuple[Produced, bool]:
        """`produce`, shared by concurrent requests with the same key (e.g. right after an
        ingest, when every request misses at once); and whether this one joined another's.

        The first request executes, within its own time limit; the others wait for its
        answer. With rate limiting each client runs its own (the runner pays for it)."""
        if key is None or not self.caching:
            return await self.produce(key, query, request, release, get, media, client), False
        flight = (key, get, media.graphql_response, client)
        pending = self._flights.get(flight)
        if pending is not None:
            shared = await asyncio.shield(pending)  # (a joiner's cancellation is its own)
            if isinstance(shared, Exception):
                raise shared
            if shared is not None:
                return shared, True
            return await self.produce_once(key, query, request, release, get, media, client)
        pending = self._flights[flight] = asyncio.get_running_loop().create_future()
        outcome: Outcome = None
        try:
            produced = outcome = await self.produce(
                key, query, request, release, get, media, client
            )
        except Exception as exc:
            outcome = exc
            raise
        finally:  # (cancelled, the outcome is None: the joiners produce their own)
            del self._flights[flight]
            pending.set_result(outcome)
        return produced, False

    async def produce(
        self,
        key: bytes | None,
        query: str,
        request: GraphQLRequest,
        release: ReleaseRow | None,
        get: bool,
        media: Media,
        client: str,
    ) -> Produced:
        """Execute; store the answer when it has no errors."""
        result = await self.execute(query, request, release, get, client)
        answer = run.produced(result, media, self.limiter is not None)
        if answer.ok and key is not None and self.caching:
            answer.answer = Answer.of(answer.body, self.settings.compress_min_bytes)
            await self.cache.put(key, answer.answer)
        return answer

    async def current_release(self) -> Current | None:
        """The release to answer from; None when there is none yet (the schema says NO_DATA).

        When the database cannot be reached the request is refused at once with a 503.
        """
        try:
            return await self.release.current()
        except Exception as exc:
            if database_fault(exc) is None:
                raise
            log.warning("could not read the current release: %r", exc)
            raise Refusal(503, UNAVAILABLE_MESSAGE, Code.DATABASE_UNAVAILABLE, RETRY_SOON) from None
