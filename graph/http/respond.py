"""Sending answers over raw ASGI: JSON bytes, gzip when accepted, ETag and 304 for GET."""

from __future__ import annotations

import gzip

from starlette.types import Send

from graph.cache import Answer

Headers = list[tuple[bytes, bytes]]
JSON = (b"content-type", b"application/json")
NO_STORE = (b"cache-control", b"no-store")


async def send_response(send: Send, status: int, headers: Headers, body: bytes = b"") -> None:
    await send({"type": "http.response.start", "status": status, "headers": headers})
    await send({"type": "http.response.body", "body": body})


def accepts_gzip(accept_encoding: bytes) -> bool:
    for part in accept_encoding.lower().split(b","):
        coding, _, params = part.partition(b";")
        if coding.strip() in (b"gzip", b"*"):
            return params.replace(b" ", b"") not in (b"q=0", b"q=0.0", b"q=0.00", b"q=0.000")
    return False


def etag_matches(if_none_match: bytes, etag: bytes) -> bool:
    """Weak comparison, as If-None-Match asks for."""
    if if_none_match.strip() == b"*":
        return True
    opaque = etag.removeprefix(b"W/")
    return any(tag.strip().removeprefix(b"W/") == opaque for tag in if_none_match.split(b","))


class Responder:
    """How this server sends answers (settings that shape every response)."""

    def __init__(self, max_age: int, gzip_min_bytes: int) -> None:
        self.cache_control = b"public, max-age=%d" % max_age
        self.gzip_min_bytes = gzip_min_bytes

    async def answer(
        self,
        send: Send,
        answer: Answer,
        *,
        etag: bytes | None,
        if_none_match: bytes,
        gzip_ok: bool,
        cache: bytes,
    ) -> None:
        """A successful answer; with an ETag (GET) it is cacheable and may be a 304."""
        headers: Headers = [(b"x-cache", cache)]
        if etag is not None:
            headers += [(b"etag", etag), (b"cache-control", self.cache_control)]
        body = answer.body
        large = len(body) >= self.gzip_min_bytes
        if large:
            headers.append((b"vary", b"accept-encoding"))
        if etag is not None and if_none_match and etag_matches(if_none_match, etag):
            await send_response(send, 304, headers)
            return
        if large and gzip_ok:
            body = answer.gzipped or gzip.compress(body, compresslevel=6, mtime=0)
            headers.append((b"content-encoding", b"gzip"))
        headers += [JSON, (b"content-length", b"%d" % len(body))]
        await send_response(send, 200, headers, body)

    async def failure(self, send: Send, status: int, body: bytes, content_type: bytes) -> None:
        """An answer with errors, or a refusal: never stored by anyone."""
        headers = [
            (b"content-type", content_type),
            NO_STORE,
            (b"content-length", b"%d" % len(body)),
        ]
        await send_response(send, status, headers, body)
