"""The /graphql handler: answers from the response cache without touching GraphQL, or executes.

Plain ASGI on purpose (no Request object, no middleware): a cached answer costs a body read,
two hashes, a dict lookup and two `send` calls. Every request to /graphql ends here, GraphiQL
included: each answer or refusal is JSON with an `extensions.code`, in the media type the client
asked for (graph/http/protocol.py), and nothing unexpected escapes as a bare 500.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import uuid
from typing import Any

import orjson
from sqlalchemy.ext.asyncio import AsyncSession, async_sessionmaker
from starlette.types import Message, Receive, Scope, Send
from strawberry.types import ExecutionResult

from db.tables import ReleaseRow
from graph.cache import Answer, ResponseCache
from graph.errors import UNAVAILABLE_MESSAGE, Code, database_fault, masked
from graph.http import request as parse
from graph.http import run
from graph.http.persisted import PersistedQueries
from graph.http.protocol import AS_JSON, Media, body_type_refusal, negotiate
from graph.http.ratelimit import RateLimiter, stamp, stored_cost, throttled
from graph.http.release import Current, ReleaseWatcher
from graph.http.request import Batch, GraphQLRequest, Refusal, document_hash
from graph.http.respond import Responder, accepts_gzip, send_response
from graph.http.run import RETRY_SOON, Produced
from graph.settings import Settings

log = logging.getLogger("leadgreen")
ALLOW = ((b"allow", b"GET, POST"),)
HTML = (b"content-type", b"text/html; charset=utf-8")


class BodyTooLarge(Exception):
    pass


async def read_body(receive: Receive, limit: int) -> bytes:
    message = await receive()
    body: bytes = message.get("body", b"")
    if not message.get("more_body"):
        if len(body) > limit:
            raise BodyTooLarge
        return body
    chunks = [body]
    size = len(body)
    while message.get("more_body"):
        message = await receive()
        chunk = message.get("body", b"")
        size += len(chunk)
        if size > limit:
            raise BodyTooLarge
        chunks.append(chunk)
    return b"".join(chunks)


class Collect:
    """A `send` that keeps the response, for the items of a batch."""

    def __init__(self) -> None:
        self.body = b""

    async def __call__(self, message: Message) -> None:
        self.body += message.get("body", b"")


class GraphQLHandler:
    def __init__(
        self,
        settings: Settings,
        make_session: async_sessionmaker[AsyncSession],
        *,
        cache: ResponseCache,
        release: ReleaseWatcher,
        persisted: PersistedQueries,
        limiter: RateLimiter | None = None,
        graphiql: bytes | None = None,
    ) -> None:
        self.settings, self.make_session = settings, make_session
        self.cache, self.release, self.persisted = cache, release, persisted
        self.limiter, self.graphiql = limiter, graphiql
        self.respond = Responder(settings.http_max_age, settings.gzip_min_bytes)
        self.caching = settings.cache != "off"
        self._flights: dict[tuple[bytes, bool, bool, str], asyncio.Future[Produced]] = {}

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        try:
            await self.handle(scope, receive, send)
        except Exception:  # a bug: the client gets a request id, the log the details
            request_id = uuid.uuid4().hex
            log.error("request %s failed", request_id, exc_info=True)
            body = orjson.dumps({"errors": [masked(request_id)]})
            with contextlib.suppress(Exception):  # the response may have started
                await self.respond.failure(send, 500, body, AS_JSON.content_type)

    async def handle(self, scope: Scope, receive: Receive, send: Send) -> None:
        method = scope["method"]
        content_type = accept = accept_encoding = if_none_match = api_key = b""
        length: bytes | None = None
        for name, value in scope["headers"]:
            if name == b"content-type":
                content_type = value
            elif name == b"accept":
                accept = value
            elif name == b"accept-encoding":
                accept_encoding = value
            elif name == b"if-none-match":
                if_none_match = value
            elif name == b"x-api-key":
                api_key = value
            elif name == b"content-length":
                length = value
        media = negotiate(accept) if accept else AS_JSON
        try:
            if len(scope["query_string"]) + len(scope["path"]) > self.settings.max_url_bytes:
                raise Refusal(
                    414,
                    f"The URL is longer than the limit of {self.settings.max_url_bytes} bytes; "
                    "send the request with POST, or as a persisted query.",
                    Code.URL_TOO_LONG,
                )
            request: GraphQLRequest | Batch | None
            if method == "GET":
                request = parse.from_query_string(scope["query_string"])
                if request is None:
                    if media.html and self.graphiql is not None:
                        await self.graphiql_page(send)
                        return
                    raise Refusal.malformed("The request has no `query`.")
            elif method == "POST":
                request = parse.from_json_body(await self.read(receive, content_type, length))
            else:
                raise Refusal(
                    405, "GraphQL is served over GET and POST.", Code.METHOD_NOT_ALLOWED, ALLOW
                )
            client = self.limiter.client(scope, api_key) if self.limiter is not None else ""
            if isinstance(request, tuple):
                await self.batch(request, media, client, send)
                return
            gzip_ok = accepts_gzip(accept_encoding) if accept_encoding else False
            await self.answer(request, method == "GET", if_none_match, gzip_ok, media, client, send)
        except Refusal as refusal:
            # A refusal that legacy clients get with 200 (a GraphQL error) is a 400 to others.
            status = 400 if refusal.status == 200 and media.graphql_response else refusal.status
            await self.respond.failure(
                send, status, refusal.body, media.content_type, refusal.headers
            )

    async def read(self, receive: Receive, content_type: bytes, length: bytes | None) -> bytes:
        """The body of a POST, once its type and size are known to be acceptable."""
        refused = body_type_refusal(content_type)
        if refused is not None:
            raise Refusal(*refused)
        limit = self.settings.max_body_bytes
        too_large = Refusal(
            413, f"The request body is larger than the limit of {limit} bytes.", Code.BODY_TOO_LARGE
        )
        if length is not None and (not length.isdigit() or int(length) > limit):
            raise too_large if length.isdigit() else Refusal.malformed("Bad Content-Length.")
        try:
            return await read_body(receive, limit)
        except BodyTooLarge:
            raise too_large from None

    async def graphiql_page(self, send: Send) -> None:
        assert self.graphiql is not None
        headers = [HTML, (b"content-length", b"%d" % len(self.graphiql))]
        await send_response(send, 200, headers, self.graphiql)

    async def answer(
        self,
        request: GraphQLRequest,
        get: bool,
        if_none_match: bytes,
        gzip_ok: bool,
        media: Media,
        client: str,
        send: Send,
    ) -> None:
        query = await self.persisted.resolve(request)
        if query is None:
            raise Refusal(200, "PersistedQueryNotFound", Code.PERSISTED_QUERY_NOT_FOUND)
        current = await self.current_release()
        key = None
        if current is not None:
            key = request.key(current.token, request.persisted_hash or document_hash(query))
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
                await self.respond.failure(
                    send,
                    produced.status,
                    produced.answer.body,
                    media.content_type,
                    produced.headers,
                )
                return
            answer = produced.answer
            if produced.throttle is not None and not joined:
                answer, unpaid = Answer(stamp(answer.body, produced.throttle)), False
        if unpaid:
            charged = await self.charge(answer, client, media, send)
            if charged is None:
                return
            answer = charged
        await self.respond.answer(
            send,
            answer,
            etag=b'W/"%s"' % key if get and key is not None else None,
            if_none_match=if_none_match,
            gzip_ok=gzip_ok,
            cache=b"HIT" if hit else b"MISS",
            content_type=media.content_type,
        )

    async def charge(self, answer: Answer, client: str, media: Media, send: Send) -> Answer | None:
        """A stored answer charged to the client (its actual cost), with the client's throttle
        status; None when the bucket cannot pay for it (the 429 is sent)."""
        limiter = self.limiter
        assert limiter is not None
        cost = stored_cost(answer.body)
        if cost is None:
            return answer
        allowed, available, retry_after = await limiter.take(client, cost)
        status = limiter.status(available)
        if allowed:
            return Answer(stamp(answer.body, status))
        error = throttled(cost, available, limiter.capacity, limiter.restore_rate, retry_after)
        body: dict[str, Any] = {} if media.graphql_response else {"data": None}
        body["errors"] = [error.formatted]
        body["extensions"] = {
            "cost": {"requestedQueryCost": cost, "actualQueryCost": None, "throttleStatus": status}
        }
        headers = ((b"retry-after", b"%d" % max(1, -int(-retry_after // 1))),)
        await self.respond.failure(send, 429, orjson.dumps(body), media.content_type, headers)
        return None

    async def batch(self, items: Batch, media: Media, client: str, send: Send) -> None:
        """Each operation of a batch in turn, answered as a JSON array."""
        limit = self.settings.batch_max
        if limit == 0:
            raise Refusal(
                400,
                "Batching is off: send one operation (a JSON object) per request.",
                Code.BATCHING_DISABLED,
            )
        if not 1 <= len(items) <= limit:
            raise Refusal(
                400,
                f"A batch holds 1 to {limit} operations; this one has {len(items)}.",
                Code.BATCH_TOO_LARGE,
            )
        requests = [parse.from_item(item) for item in items]
        bodies = []
        for request in requests:
            collect = Collect()
            try:
                await self.answer(request, False, b"", False, media, client, collect)
            except Refusal as refusal:
                collect.body = refusal.body
            bodies.append(collect.body)
        await self.respond.failure(send, 200, b"[%s]" % b",".join(bodies), media.content_type)

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

        With rate limiting each client runs its own (the runner pays for it while it runs)."""
        if key is None or not self.caching:
            return await self.produce(key, query, request, release, get, media, client), False
        flight = (key, get, media.graphql_response, client)
        pending = self._flights.get(flight)
        joined = pending is not None
        if pending is None:
            pending = asyncio.ensure_future(
                self.produce(key, query, request, release, get, media, client)
            )
            self._flights[flight] = pending
            pending.add_done_callback(lambda _: self._flights.pop(flight, None))
        return await asyncio.shield(pending), joined

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
        """Execute within the deadline; store the answer when it has no errors."""
        seconds = self.settings.request_timeout_seconds
        try:
            async with asyncio.timeout(seconds) as deadline:
                result = await self.execute(query, request, release, get, client)
        except TimeoutError:
            if not deadline.expired():
                raise
            log.warning("a request ran past %gs and was stopped", seconds)
            return run.timed_out(self.settings)
        answer = run.produced(result, media, self.limiter is not None)
        if answer.ok and key is not None and self.caching:
            answer.answer = Answer.of(answer.body, self.settings.gzip_min_bytes)
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

    async def execute(
        self,
        query: str,
        request: GraphQLRequest,
        release: ReleaseRow | None,
        get: bool,
        client: str,
    ) -> ExecutionResult:
        return await run.execute(
            self.settings, self.make_session, self.limiter, query, request, release, get, client
        )
