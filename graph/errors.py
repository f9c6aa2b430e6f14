"""Errors a client may see, each with a stable `extensions.code`, and their builders."""

from __future__ import annotations

import math
import re
from enum import StrEnum
from typing import Any

from graphql import GraphQLError
from sqlalchemy.exc import DBAPIError, OperationalError
from sqlalchemy.exc import TimeoutError as PoolTimeout


class ApiError(Exception):
    code = "INTERNAL"


class BadInput(ApiError):
    """An argument is out of range or malformed."""

    code = "BAD_USER_INPUT"


class BadRepresentation(ApiError):
    """A federation representation (`_entities`) that names no entity of this subgraph by
    one of its keys."""

    code = "BAD_REPRESENTATION"


class NoData(ApiError):
    """The database holds no release yet."""

    code = "NO_DATA"


class Code(StrEnum):
    """Codes of requests refused before or instead of execution (the README lists them all)."""

    GRAPHQL_PARSE_FAILED = "GRAPHQL_PARSE_FAILED"
    DOCUMENT_TOO_LARGE = "DOCUMENT_TOO_LARGE"
    TOO_MANY_TOKENS = "TOO_MANY_TOKENS"
    QUERY_TOO_DEEP = "QUERY_TOO_DEEP"
    TOO_MANY_ALIASES = "TOO_MANY_ALIASES"
    TOO_MANY_DIRECTIVES = "TOO_MANY_DIRECTIVES"
    TOO_MANY_FIELDS = "TOO_MANY_FIELDS"
    TOO_MANY_FIELD_MERGES = "TOO_MANY_FIELD_MERGES"
    QUERY_TOO_COMPLEX = "QUERY_TOO_COMPLEX"
    # Validation's own errors (an unknown field, a wrong argument type, ...).
    GRAPHQL_VALIDATION_FAILED = "GRAPHQL_VALIDATION_FAILED"
    THROTTLED = "THROTTLED"
    # Partner keys (graph/server/partners.py): a key not configured, a document a trusted-only
    # key may not send, a query past the largest cost the key's tier allows per request.
    UNKNOWN_API_KEY = "UNKNOWN_API_KEY"
    DOCUMENT_NOT_TRUSTED = "DOCUMENT_NOT_TRUSTED"
    KEY_MAX_COST_EXCEEDED = "KEY_MAX_COST_EXCEEDED"
    # The HTTP layer's (graph/http): the request is not a GraphQL request it can run.
    BAD_REQUEST = "BAD_REQUEST"
    BAD_USER_INPUT = "BAD_USER_INPUT"
    BODY_TOO_LARGE = "BODY_TOO_LARGE"
    URL_TOO_LONG = "URL_TOO_LONG"
    HEADERS_TOO_LARGE = "HEADERS_TOO_LARGE"
    UNSUPPORTED_MEDIA_TYPE = "UNSUPPORTED_MEDIA_TYPE"
    METHOD_NOT_ALLOWED = "METHOD_NOT_ALLOWED"
    BATCHING_DISABLED = "BATCHING_DISABLED"
    BATCH_TOO_LARGE = "BATCH_TOO_LARGE"
    PERSISTED_QUERY_NOT_FOUND = "PERSISTED_QUERY_NOT_FOUND"
    PERSISTED_QUERY_NOT_SUPPORTED = "PERSISTED_QUERY_NOT_SUPPORTED"
    NOT_FOUND = "NOT_FOUND"
    NO_DATA = "NO_DATA"
    BAD_REPRESENTATION = "BAD_REPRESENTATION"  # `_entities`: not a representation of an entity
    # Faults: the request was fine, the service could not answer it now.
    DATABASE_UNAVAILABLE = "DATABASE_UNAVAILABLE"
    # A subscription past the bounds of its client or of the process (graph.server.subscriptions).
    TOO_MANY_SUBSCRIPTIONS = "TOO_MANY_SUBSCRIPTIONS"
    # GraphQL over SSE's single connection mode: a request naming no reservation, one no
    # reservation has (never made, expired, its stream ended), a second stream of one, an
    # operation without its id, an id in use.
    STREAM_TOKEN_REQUIRED = "STREAM_TOKEN_REQUIRED"
    STREAM_NOT_FOUND = "STREAM_NOT_FOUND"
    STREAM_ALREADY_OPEN = "STREAM_ALREADY_OPEN"
    OPERATION_ID_REQUIRED = "OPERATION_ID_REQUIRED"
    OPERATION_ID_IN_USE = "OPERATION_ID_IN_USE"
    OVERLOADED = "OVERLOADED"  # more requests executing than the process admits at once
    # More new documents in preparation than the process takes on at once (for this client)
    PREPARATION_BUSY = "PREPARATION_BUSY"
    STARTING = "STARTING"  # /readyz: the process is still reading its release into memory
    REQUEST_TIMEOUT = "REQUEST_TIMEOUT"
    INTERNAL = "INTERNAL"


UNAVAILABLE_MESSAGE = "The database is unavailable; try again shortly."
OVERLOADED_MESSAGE = (
    "The server is busy with as many requests as it runs at once; try again shortly."
)
TIMEOUT_MESSAGE = "The request took longer than its time limit."
# PostgreSQL's SQLSTATEs for a connection that failed, a server going away or starting up or
# out of connections, and a database, schema or table gone from under the server (dropped or
# not yet restored: not a request's fault, and over once the operator restores it); and a
# transaction that one of these aborted (a request's reads share one).
_UNAVAILABLE_STATES = (
    *("08", "57P01", "57P02", "57P03", "53300"),
    *("3D000", "3F000", "42P01", "25P02"),
)
_STATEMENT_TIMEOUT = "57014"
# SQLite's file cannot be opened or read, another process holds it too long, or its tables
# are gone.
_SQLITE_AWAY = re.compile(
    r"unable to open database file|database is locked|disk I/O error|no such table"
)


def refusal(message: str, code: Code, **extensions: object) -> GraphQLError:
    """An error refusing the whole request, with its code (the engine keeps a code it finds)."""
    return GraphQLError(message, extensions={"code": str(code), **extensions})


def database_fault(error: BaseException | None) -> Code | None:
    """DATABASE_UNAVAILABLE or REQUEST_TIMEOUT when `error`, or an error that led to it, is the
    database being out of reach or a statement past PostgreSQL's statement_timeout."""
    for _ in range(8):  # the chain of causes is short; never follow a cycle
        if error is None:
            return None
        state = getattr(error, "sqlstate", None)
        if state == _STATEMENT_TIMEOUT:
            return Code.REQUEST_TIMEOUT
        if (
            (isinstance(state, str) and state.startswith(_UNAVAILABLE_STATES))
            # refused, reset, timed out (past the request's share of its time limit too:
            # db/database.py `waiting`), host gone; no pooled connection free in time
            or isinstance(error, OSError | PoolTimeout)
            or (isinstance(error, DBAPIError) and error.connection_invalidated)
            or (isinstance(error, OperationalError) and _SQLITE_AWAY.search(str(error.orig)))
        ):
            return Code.DATABASE_UNAVAILABLE
        error = error.__cause__ or error.__context__
    return None


def internal_error(request_id: str) -> dict[str, Any]:
    """The error sent for anything unexpected: its request id is in the log with the details."""
    return {
        "message": "Internal server error",
        "extensions": {"code": str(Code.INTERNAL), "requestId": request_id},
    }


def throttled(
    cost: int, available: float, capacity: int, restore_rate: float, retry_after: float
) -> GraphQLError:
    """THROTTLED: the client's rate-limit bucket cannot pay for the query now."""
    return refusal(
        f"Throttled: the query costs {cost} and {math.floor(available)} of {capacity} points "
        f"are available, restoring {restore_rate:g} a second.",
        Code.THROTTLED,
        cost=cost,
        retryAfter=math.ceil(retry_after * 10) / 10,
    )


def key_max_cost_exceeded(cost: int, max_cost: int, tier: str) -> GraphQLError:
    """KEY_MAX_COST_EXCEEDED: the query costs more than the API key's tier allows a request."""
    return refusal(
        f"The query costs {cost}, more than the limit of {max_cost} of this API key's tier "
        f"({tier}).",
        Code.KEY_MAX_COST_EXCEEDED,
        cost=cost,
        maxCost=max_cost,
    )


def retry_after_seconds(seconds: float) -> int:
    """A Retry-After value: whole seconds, rounded up, at least 1."""
    return max(1, math.ceil(seconds))
