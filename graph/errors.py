"""Errors a client may see, each with a stable `extensions.code`; anything else is masked."""

from __future__ import annotations

import logging
import re
import uuid
from enum import StrEnum

from graphql import GraphQLError
from sqlalchemy.exc import DBAPIError, OperationalError
from strawberry.extensions import MaskErrors

log = logging.getLogger("leadgreen")


class ApiError(Exception):
    code = "INTERNAL"


class BadInput(ApiError):
    """An argument is out of range or malformed."""

    code = "BAD_USER_INPUT"


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
    QUERY_TOO_COMPLEX = "QUERY_TOO_COMPLEX"
    THROTTLED = "THROTTLED"
    # The HTTP layer's (graph/http): the request is not a GraphQL request it can run.
    BAD_REQUEST = "BAD_REQUEST"
    BAD_USER_INPUT = "BAD_USER_INPUT"
    BODY_TOO_LARGE = "BODY_TOO_LARGE"
    URL_TOO_LONG = "URL_TOO_LONG"
    UNSUPPORTED_MEDIA_TYPE = "UNSUPPORTED_MEDIA_TYPE"
    METHOD_NOT_ALLOWED = "METHOD_NOT_ALLOWED"
    BATCHING_DISABLED = "BATCHING_DISABLED"
    BATCH_TOO_LARGE = "BATCH_TOO_LARGE"
    PERSISTED_QUERY_NOT_FOUND = "PERSISTED_QUERY_NOT_FOUND"
    PERSISTED_QUERY_NOT_SUPPORTED = "PERSISTED_QUERY_NOT_SUPPORTED"
    NOT_FOUND = "NOT_FOUND"
    # Faults: the request was fine, the service could not answer it now.
    DATABASE_UNAVAILABLE = "DATABASE_UNAVAILABLE"
    REQUEST_TIMEOUT = "REQUEST_TIMEOUT"
    INTERNAL = "INTERNAL"


UNAVAILABLE_MESSAGE = "The database is unavailable; try again shortly."
TIMEOUT_MESSAGE = "The request took longer than its time limit."
# PostgreSQL's SQLSTATEs for a connection that failed or a server going away or starting up.
_UNAVAILABLE_STATES = ("08", "57P01", "57P02", "57P03", "53300")
_STATEMENT_TIMEOUT = "57014"
# SQLite's file cannot be opened or read, or another process holds it too long.
_SQLITE_AWAY = re.compile(r"unable to open database file|database is locked|disk I/O error")


def refusal(message: str, code: Code, **extensions: object) -> GraphQLError:
    """An error refusing the whole request, with its code (CodedErrors keeps a code it finds)."""
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
            or isinstance(error, OSError)  # refused, reset, timed out, host gone
            or (isinstance(error, DBAPIError) and error.connection_invalidated)
            or (isinstance(error, OperationalError) and _SQLITE_AWAY.search(str(error.orig)))
        ):
            return Code.DATABASE_UNAVAILABLE
        error = error.__cause__ or error.__context__
    return None


def _bad_variable(error: GraphQLError) -> bool:
    """A variable value that does not fit its type: a request error, with graphql-core's own
    error as the original (a field's errors have a path)."""
    return error.path is None and isinstance(error.original_error, GraphQLError)


def _expected(error: GraphQLError) -> bool:
    # Syntax and validation errors have no original error; ours carry a code.
    return (
        error.original_error is None
        or isinstance(error.original_error, ApiError)
        or _bad_variable(error)
    )


def _code(error: GraphQLError) -> str:
    if isinstance(error.original_error, ApiError):
        return error.original_error.code
    return "BAD_USER_INPUT" if _bad_variable(error) else "GRAPHQL_VALIDATION_FAILED"


def masked(request_id: str) -> dict[str, object]:
    """The error sent for anything unexpected: its request id is in the log with the details."""
    return {
        "message": "Internal server error",
        "extensions": {"code": "INTERNAL", "requestId": request_id},
    }


class CodedErrors(MaskErrors):
    """Adds `extensions.code` to every error and masks unexpected ones behind a request id; the
    database being away (or too slow) is said as such, without its details."""

    def __init__(self) -> None:
        super().__init__(
            should_mask_error=lambda error: not _expected(error),
            error_message="Internal server error",
        )

    def anonymise_error(self, error: GraphQLError) -> GraphQLError:
        fault = database_fault(error.original_error)
        if fault is not None:
            log.warning("database fault at %s: %r", error.path, error.original_error)
            message = UNAVAILABLE_MESSAGE if fault is Code.DATABASE_UNAVAILABLE else TIMEOUT_MESSAGE
            return GraphQLError(
                message,
                nodes=error.nodes,
                source=error.source,
                positions=error.positions,
                path=error.path,
                extensions={"code": str(fault)},
            )
        request_id = uuid.uuid4().hex
        log.error("request %s failed at %s", request_id, error.path, exc_info=error.original_error)
        masked = super().anonymise_error(error)
        masked.extensions = {"code": "INTERNAL", "requestId": request_id}
        return masked

    def _process_errors(self, errors: list[GraphQLError]) -> list[GraphQLError]:
        processed = super()._process_errors(errors)
        for error in processed:
            if error.extensions is None or "code" not in error.extensions:
                error.extensions = {**(error.extensions or {}), "code": _code(error)}
        return processed
