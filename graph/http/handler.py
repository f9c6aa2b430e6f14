"""The /graphql handler: answers from the response cache without touching GraphQL, or executes.

Plain ASGI on purpose (no Request object, no middleware): a cached answer costs a body read,
two hashes, a dict lookup and two `send` calls. Whatever is not one plain GraphQL request over
GET or JSON POST (GraphiQL, bad JSON, batches, other methods) goes to strawberry's view.
"""

from __future__ import annotations

import asyncio
import logging

import orjson
from sqlalchemy.ext.asyncio import AsyncSession, async_sessionmaker
from starlette.types import ASGIApp, Message, Receive, Scope, Send
from strawberry.exceptions import MissingQueryError
from strawberry.http import process_result
from strawberry.schema.exceptions import CannotGetOperationTypeError, InvalidOperationTypeError
from strawberry.types.graphql import OperationType

from db.tables import ReleaseRow
from graph.cache import Answer, ResponseCache
from graph.context import Context
from graph.http import request as parse
from graph.http.persisted import PersistedQueries
from graph.http.release import Current, ReleaseWatcher
from graph.http.request import BadRequest, GraphQLRequest, document_hash
from graph.http.respond import Responder, accepts_gzip
from graph.schema import schema
from graph.settings import Settings

log = logging.getLogger("leadgreen")
GET_TYPES = frozenset({OperationType.QUERY})
POST_TYPES = frozenset({OperationType.QUERY, OperationType.MUTATION})


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


def replay(body: bytes, receive: Receive) -> Receive:
    """A `receive` that gives `body` again, for the view the request is handed to."""
    sent = False

    async def replayed() -> Message:
        nonlocal sent
        if sent:
            return await receive()
        sent = True
        return {"type": "http.request", "body": body, "more_body": False}

    return replayed


class GraphQLHandler:
    def __init__(
        self,
        settings: Settings,
        make_session: async_sessionmaker[AsyncSession],
        *,
        cache: ResponseCache,
        release: ReleaseWatcher,
        persisted: PersistedQueries,
        fallback: ASGIApp,
    ) -> None:
        self.settings, self.make_session, self.fallback = settings, make_session, fallback
        self.cache, self.release, self.persisted = cache, release, persisted
        self.respond = Responder(settings.http_max_age, settings.gzip_min_bytes)
        # With rate limiting each answer is charged to its client and reports the client's
        # bucket (graph/limits.py): such answers must not be replayed to anyone.
        self.caching = settings.cache != "off" and not settings.rate_limit
        self._flights: dict[tuple[bytes, bool], asyncio.Future[tuple[Answer, bool]]] = {}

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        method, body = scope["method"], b""
        content_type = accept_encoding = if_none_match = b""
        for name, value in scope["headers"]:
            if name == b"content-type":
                content_type = value
            elif name == b"accept-encoding":
                accept_encoding = value
            elif name == b"if-none-match":
                if_none_match = value
        try:
            if method == "POST" and b"application/json" in content_type.lower():
                body = await read_body(receive, self.settings.max_body_bytes)
                request = parse.from_json_body(body)
            elif method == "GET":
                request = parse.from_query_string(scope["query_string"])
            else:
                request = None
            if request is None:
                await self.fallback(scope, replay(body, receive) if body else receive, send)
                return
            gzip_ok = accepts_gzip(accept_encoding) if accept_encoding else False
            await self.answer(request, method == "GET", if_none_match, gzip_ok, send)
        except BadRequest as refusal:
            await self.respond.failure(send, refusal.status, refusal.body, refusal.content_type)
        except BodyTooLarge:
            body = b"Request body too large"
            await self.respond.failure(send, 413, body, b"text/plain; charset=utf-8")

    async def answer(
        self, request: GraphQLRequest, get: bool, if_none_match: bytes, gzip_ok: bool, send: Send
    ) -> None:
        query = await self.persisted.resolve(request)
        if query is None:
            raise BadRequest.graphql(200, "PersistedQueryNotFound", "PERSISTED_QUERY_NOT_FOUND")
        current = await self.current_release()
        key = None
        if current is not None:
            key = request.key(current.token, request.persisted_hash or document_hash(query))
        answer = await self.cache.get(key) if key is not None and self.caching else None
        hit = answer is not None
        if answer is None:
            release = current.release if current is not None else None
            answer, ok = await self.produce_once(key, query, request, release, get)
            if not ok:
                await self.respond.failure(send, 200, answer.body, b"application/json")
                return
        await self.respond.answer(
            send,
            answer,
            etag=b'W/"%s"' % key if get and key is not None else None,
            if_none_match=if_none_match,
            gzip_ok=gzip_ok,
            cache=b"HIT" if hit else b"MISS",
        )

    async def produce_once(
        self,
        key: bytes | None,
        query: str,
        request: GraphQLRequest,
        release: ReleaseRow | None,
        get: bool,
    ) -> tuple[Answer, bool]:
        """`produce`, shared by concurrent requests with the same key (e.g. right after an
        ingest, when every request misses at once)."""
        if key is None or not self.caching:
            return await self.produce(key, query, request, release, get)
        flight = (key, get)
        pending = self._flights.get(flight)
        if pending is None:
            pending = asyncio.ensure_future(self.produce(key, query, request, release, get))
            self._flights[flight] = pending
            pending.add_done_callback(lambda _: self._flights.pop(flight, None))
        return await asyncio.shield(pending)

    async def produce(
        self,
        key: bytes | None,
        query: str,
        request: GraphQLRequest,
        release: ReleaseRow | None,
        get: bool,
    ) -> tuple[Answer, bool]:
        """Execute; store the answer when it has no errors. Returns it and whether it has none."""
        body, ok = await self.execute(query, request, release, get)
        if not ok or key is None or not self.caching:
            return Answer(body), ok
        answer = Answer.of(body, self.settings.gzip_min_bytes)
        await self.cache.put(key, answer)
        return answer, ok

    async def current_release(self) -> Current | None:
        """The release to answer from; None lets the schema find out (and say NO_DATA)."""
        try:
            return await self.release.current()
        except Exception:
            log.warning("could not read the current release", exc_info=True)
            return None

    async def execute(
        self, query: str, request: GraphQLRequest, release: ReleaseRow | None, get: bool
    ) -> tuple[bytes, bool]:
        """The answer's JSON bytes, and whether it has no errors."""
        async with self.make_session() as session:
            context = Context(session=session, settings=self.settings, _release=release)
            try:
                result = await schema.execute(
                    query,
                    variable_values=dict(request.variables or {}),  # ours is shared
                    context_value=context,
                    operation_name=request.operation_name,
                    allowed_operation_types=GET_TYPES if get else POST_TYPES,
                )
            except InvalidOperationTypeError as exc:
                raise BadRequest.text(
                    400, exc.as_http_error_reason("GET" if get else "POST")
                ) from exc
            except CannotGetOperationTypeError as exc:
                raise BadRequest.text(400, exc.as_http_error_reason()) from exc
            except MissingQueryError as exc:
                raise BadRequest.text(400, "No GraphQL query found in the request") from exc
        return orjson.dumps(process_result(result)), not result.errors
