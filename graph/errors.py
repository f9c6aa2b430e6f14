"""Errors a client may see, each with a stable `extensions.code`; anything else is masked."""

from __future__ import annotations

import logging
import uuid

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


def _expected(error: GraphQLError) -> bool:
    # Syntax and validation errors have no original error; ours carry a code.
    return error.original_error is None or isinstance(error.original_error, ApiError)


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
                original = error.original_error
                code = (
                    original.code if isinstance(original, ApiError) else "GRAPHQL_VALIDATION_FAILED"
                )
                error.extensions = {**(error.extensions or {}), "code": code}
        return processed
