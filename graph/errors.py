"""Errors a client may see, each with a stable `extensions.code`; anything else is masked."""

from __future__ import annotations

import logging
import uuid
from enum import StrEnum

from graphql import GraphQLError
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
    """Codes of requests refused before execution; each limit in `graph.limits` has its own."""

    GRAPHQL_PARSE_FAILED = "GRAPHQL_PARSE_FAILED"
    DOCUMENT_TOO_LARGE = "DOCUMENT_TOO_LARGE"
    TOO_MANY_TOKENS = "TOO_MANY_TOKENS"
    QUERY_TOO_DEEP = "QUERY_TOO_DEEP"
    TOO_MANY_ALIASES = "TOO_MANY_ALIASES"
    TOO_MANY_DIRECTIVES = "TOO_MANY_DIRECTIVES"
    QUERY_TOO_COMPLEX = "QUERY_TOO_COMPLEX"
    THROTTLED = "THROTTLED"


def refusal(message: str, code: Code, **extensions: object) -> GraphQLError:
    """An error refusing the whole request, with its code (CodedErrors keeps a code it finds)."""
    return GraphQLError(message, extensions={"code": str(code), **extensions})


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


class CodedErrors(MaskErrors):
    """Adds `extensions.code` to every error and masks unexpected ones behind a request id."""

    def __init__(self) -> None:
        super().__init__(
            should_mask_error=lambda error: not _expected(error),
            error_message="Internal server error",
        )

    def anonymise_error(self, error: GraphQLError) -> GraphQLError:
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
