"""The body of a POST: its media type checked, its size bounded, read in full."""

from __future__ import annotations

from starlette.types import Receive

from graph.errors import Code
from graph.server.protocol import body_type_refusal
from graph.server.request import Refusal


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


async def read_json_body(
    receive: Receive, content_type: bytes, length: bytes | None, limit: int
) -> bytes:
    """The body of a POST, once its type and size are known to be acceptable."""
    refused = body_type_refusal(content_type)
    if refused is not None:
        raise Refusal(*refused)
    too_large = Refusal(
        413, f"The request body is larger than the limit of {limit} bytes.", Code.BODY_TOO_LARGE
    )
    if length is not None and (not length.isdigit() or int(length) > limit):
        raise too_large if length.isdigit() else Refusal.malformed("Bad Content-Length.")
    try:
        return await read_body(receive, limit)
    except BodyTooLarge:
        raise too_large from None
