"""Every error an answer carries gets an `extensions.code`; anything unexpected is masked."""

from __future__ import annotations

import logging
import uuid
from collections.abc import Iterator

from graphql import GraphQLError
from strawberry.extensions import SchemaExtension

from graph.errors import (
    TIMEOUT_MESSAGE,
    UNAVAILABLE_MESSAGE,
    ApiError,
    Code,
    database_fault,
    internal_error,
)

log = logging.getLogger("leadgreen")


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


def coded(error: GraphQLError) -> GraphQLError:
    """The error as the client sees it: with its code, or masked behind a request id (the
    database being away, or too slow, is said as such, without its details)."""
    if _expected(error):
        if error.extensions is None or "code" not in error.extensions:
            error.extensions = {**(error.extensions or {}), "code": _code(error)}
        return error
    fault = database_fault(error.original_error)
    if fault is not None:
        log.warning("database fault at %s: %r", error.path, error.original_error)
        message = UNAVAILABLE_MESSAGE if fault is Code.DATABASE_UNAVAILABLE else TIMEOUT_MESSAGE
        extensions: dict[str, object] = {"code": str(fault)}
    else:
        request_id = uuid.uuid4().hex
        log.error("request %s failed at %s", request_id, error.path, exc_info=error.original_error)
        body = internal_error(request_id)
        message, extensions = str(body["message"]), dict(body["extensions"])
    return GraphQLError(
        message,
        nodes=error.nodes,
        source=error.source,
        positions=error.positions,
        path=error.path,
        extensions=extensions,
    )


class CodedErrors(SchemaExtension):
    """Adds `extensions.code` to every error of the result, and masks unexpected ones."""

    def on_operation(self) -> Iterator[None]:
        yield
        result = self.execution_context.result
        if result is not None and result.errors:
            result.errors = [coded(error) for error in result.errors]
