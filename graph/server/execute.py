"""Running one GraphQL request: its context and session, and its answer with the status and
headers its errors call for (graph/server/protocol.py says which)."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, cast

import orjson
from sqlalchemy.ext.asyncio import AsyncSession, async_sessionmaker
from strawberry import Schema
from strawberry.http import process_result
from strawberry.schema.exceptions import CannotGetOperationTypeError, InvalidOperationTypeError
from strawberry.types import ExecutionResult
from strawberry.types.graphql import OperationType

from db.database import close_quietly
from db.tables import ReleaseRow
from graph.errors import Code, retry_after_seconds
from graph.schema.context import Context
from graph.schema.memory import Catalogs
from graph.server.protocol import (
    FAULT_STATUS,
    GraphQLRequest,
    Headers,
    Media,
    Refusal,
    request_error,
)
from graph.server.ratelimit import RateLimiter, TierBucket
from graph.server.responses import Answer
from graph.settings import Settings

GET_TYPES = frozenset({OperationType.QUERY})
POST_TYPES = frozenset({OperationType.QUERY, OperationType.MUTATION})
RETRY_SOON = ((b"retry-after", b"1"),)  # the database being away: ask again in a second


@dataclass
class RequestContext(Context):
    """The context of a rate-limited request: who pays, and the buckets (graph/engine/limits.py)."""

    client: str = "anonymous"
    cost_bucket: RateLimiter | TierBucket | None = None  # the client's tier's


@dataclass(slots=True)
class Produced:
    """An executed answer: as stored (without a client's throttle status), and how to send it."""

    answer: Answer
    ok: bool  # no errors: stored, and sent as a success
    status: int = 200
    headers: Headers = ()
    throttle: dict[str, Any] | None = None  # the bucket of the client that ran it

    @property
    def body(self) -> bytes:
        return self.answer.body


async def execute(
    schema: Schema,
    settings: Settings,
    make_session: async_sessionmaker[AsyncSession],
    catalogs: Catalogs,
    limiter: RateLimiter | None,
    query: str,
    request: GraphQLRequest,
    release: ReleaseRow | None,
    get: bool,
    client: str,
) -> ExecutionResult:
    """The request run through the schema, in a session of its own (opened when a resolver
    first reads the database)."""
    shared: dict[str, Any] = {
        "session": None,
        "sessions": make_session,
        "settings": settings,
        "_release": release,
        "catalogs": catalogs,
    }
    context = (
        Context(**shared)
        if limiter is None
        else RequestContext(**shared, client=client, cost_bucket=limiter.bucket(client))
    )
    try:
        allowed = GET_TYPES if get else POST_TYPES
        variables = dict(request.variables or {})  # ours is shared
        try:
            return await schema.execute(
                query,
                variable_values=variables,
                context_value=context,
                operation_name=request.operation_name,
                allowed_operation_types=allowed,
            )
        except InvalidOperationTypeError as exc:
            if get:
                raise Refusal(
                    405,
                    "Only queries can be sent with GET; send other operations with POST.",
                    Code.METHOD_NOT_ALLOWED,
                    ((b"allow", b"POST"),),
                ) from exc
            raise Refusal.malformed(exc.as_http_error_reason("POST")) from exc
        except CannotGetOperationTypeError as exc:  # a request error, as a parse error is
            raise Refusal(200, exc.as_http_error_reason(), Code.BAD_REQUEST) from exc
    finally:
        if context.session is not None:
            await close_quietly(context.session)


def produced(result: ExecutionResult, media: Media, rate_limited: bool) -> Produced:
    """The answer to send for `result` (its body not yet stored anywhere)."""
    response = cast(dict[str, Any], process_result(result))
    errors = response.get("errors")
    if errors:
        return failed(response, errors, media)
    throttle = None
    if rate_limited and "extensions" in response:  # stored without it, stamped per client
        throttle = response["extensions"].get("cost", {}).pop("throttleStatus", None)
    return Produced(Answer(orjson.dumps(response)), True, throttle=throttle)


def failed(response: dict[str, Any], errors: list[dict[str, Any]], media: Media) -> Produced:
    """An answer with errors, with the status its errors call for."""
    codes = {(error.get("extensions") or {}).get("code") for error in errors}
    status, headers = 200, cast(Headers, ())
    for code, fault in FAULT_STATUS.items():
        if code in codes:
            status = fault
            break
    if status == 429:
        retry_after = next(
            e["extensions"].get("retryAfter", 1)
            for e in errors
            if (e.get("extensions") or {}).get("code") == Code.THROTTLED
        )
        headers = ((b"retry-after", b"%d" % retry_after_seconds(retry_after)),)
    elif status == 503:
        headers = RETRY_SOON
    if request_error(errors) and media.graphql_response:
        response.pop("data", None)
        if status == 200:
            status = 400
    return Produced(Answer(orjson.dumps(response)), False, status, headers)


def timed_out(settings: Settings) -> Produced:
    seconds = settings.request_timeout_seconds
    refusal = Refusal(
        504, f"The request took longer than the limit of {seconds:g} s.", Code.REQUEST_TIMEOUT
    )
    return Produced(Answer(refusal.body), False, 504)
