"""JSON errors for the routes other than /graphql: unknown paths and methods, and exceptions
(the database away: 503 DATABASE_UNAVAILABLE; anything else: 500 INTERNAL with a request id
that is also logged). The documents' own answers say `{"error": {"code", "message"}}`: so do
these."""

from __future__ import annotations

import asyncio
import logging

import orjson
from starlette.exceptions import HTTPException
from starlette.requests import Request
from starlette.responses import Response
from starlette.types import ASGIApp, Message, Receive, Scope, Send

from graph.errors import UNAVAILABLE_MESSAGE, Code, database_fault, internal_error
from graph.server.observe import request_id
from graph.settings import Settings

log = logging.getLogger("leadgreen")
_CODES = {404: Code.NOT_FOUND, 405: Code.METHOD_NOT_ALLOWED}


def error_response(
    status: int, code: str, message: str, headers: dict[str, str] | None = None, **extra: str
) -> Response:
    body = orjson.dumps({"error": {"code": code, "message": message, **extra}})
    headers = {"cache-control": "no-store", **(headers or {})}
    return Response(body, status, headers=headers, media_type="application/json")


async def http_error(_request: Request, exc: Exception) -> Response:
    """Starlette's 404 and 405 (and any HTTPException), as JSON."""
    assert isinstance(exc, HTTPException)
    code = _CODES.get(exc.status_code, Code.BAD_REQUEST)
    return error_response(exc.status_code, str(code), exc.detail, dict(exc.headers or {}))


class JSONErrors:
    """An exception from a route is answered as JSON and not raised further: no stack trace,
    SQL or path reaches the client, and the log has the details under the request id. A route
    taking longer than `timeout` seconds is stopped and answered 504 REQUEST_TIMEOUT."""

    def __init__(self, app: ASGIApp, timeout: float | None = None) -> None:
        self.app, self.timeout = app, timeout

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http":
            await self.app(scope, receive, send)
            return
        started = False

        async def watch(message: Message) -> None:
            nonlocal started
            started = started or message["type"] == "http.response.start"
            await send(message)

        try:
            async with asyncio.timeout(self.timeout) as deadline:
                await self.app(scope, receive, watch)
        except Exception as exc:
            if isinstance(exc, TimeoutError) and deadline.expired():
                log.info("%s took longer than %gs and was stopped", scope.get("path"), self.timeout)
                response = error_response(
                    504,
                    str(Code.REQUEST_TIMEOUT),
                    f"The request took longer than the limit of {self.timeout:g} s.",
                )
            elif database_fault(exc) is not None:
                log.warning("%s: database unreachable: %r", scope.get("path"), exc)
                response = error_response(
                    503, str(Code.DATABASE_UNAVAILABLE), UNAVAILABLE_MESSAGE, {"retry-after": "1"}
                )
            else:
                failed = request_id()  # the one in the X-Request-Id header
                log.error("request %s failed", failed, exc_info=True)
                error = internal_error(failed)
                response = error_response(
                    500, str(Code.INTERNAL), str(error["message"]), requestId=failed
                )
            if not started:
                await response(scope, receive, send)


def failure(
    exc: Exception, timed_out: bool, settings: Settings
) -> tuple[int, bytes, tuple[tuple[bytes, bytes], ...]]:
    """The answer (status, GraphQL-shaped body, headers) to a /graphql request that raised
    `exc`: 504 past its time limit, 503 with Retry-After for the database, 500 for a bug."""
    if isinstance(exc, TimeoutError) and timed_out:
        seconds = settings.request_timeout_seconds
        log.info("a request took longer than %gs and was stopped", seconds)
        message = f"The request took longer than the limit of {seconds:g} s."
        return 504, _graphql_error(message, Code.REQUEST_TIMEOUT), ()
    if database_fault(exc) is not None:
        log.warning("the database failed a request: %r", exc)
        body = _graphql_error(UNAVAILABLE_MESSAGE, Code.DATABASE_UNAVAILABLE)
        return 503, body, ((b"retry-after", b"1"),)
    failed = request_id()  # the one in the X-Request-Id header
    log.error("request %s failed", failed, exc_info=exc)
    return 500, orjson.dumps({"errors": [internal_error(failed)]}), ()


def _graphql_error(message: str, code: Code) -> bytes:
    return orjson.dumps({"errors": [{"message": message, "extensions": {"code": str(code)}}]})
