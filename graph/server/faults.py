"""JSON errors for the routes other than /graphql: unknown paths and methods, and exceptions
(the database away: 503 DATABASE_UNAVAILABLE; anything else: 500 INTERNAL with a request id
that is also logged). The documents' own answers say `{"error": {"code", "message"}}`: so do
these."""

from __future__ import annotations

import logging
import uuid

import orjson
from starlette.exceptions import HTTPException
from starlette.requests import Request
from starlette.responses import Response
from starlette.types import ASGIApp, Message, Receive, Scope, Send

from graph.errors import UNAVAILABLE_MESSAGE, Code, database_fault, internal_error

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
    SQL or path reaches the client, and the log has the details under the request id."""

    def __init__(self, app: ASGIApp) -> None:
        self.app = app

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
            await self.app(scope, receive, watch)
        except Exception as exc:
            if database_fault(exc) is not None:
                log.warning("%s: database unreachable: %r", scope.get("path"), exc)
                response = error_response(
                    503, str(Code.DATABASE_UNAVAILABLE), UNAVAILABLE_MESSAGE, {"retry-after": "1"}
                )
            else:
                request_id = uuid.uuid4().hex
                log.error("request %s failed", request_id, exc_info=True)
                error = internal_error(request_id)
                response = error_response(
                    500, str(Code.INTERNAL), str(error["message"]), requestId=request_id
                )
            if not started:
                await response(scope, receive, send)
