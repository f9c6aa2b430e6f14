"""Sending answers over raw ASGI: JSON bytes, compressed when accepted (brotli or gzip), ETag
and 304 for GET; each with the request's own headers (request id, CORS: graph/server/edge.py)."""

from __future__ import annotations

from collections.abc import Iterable

from starlette.types import Send

from graph.server.compress import Coding
from graph.server.observe import NOTE
from graph.server.response_cache import Answer

Headers = list[tuple[bytes, bytes]]
# On every response (graph/server/shield.py adds them to the other routes' responses).
SECURITY_HEADERS = (
    (b"x-content-type-options", b"nosniff"),
    (b"referrer-policy", b"no-referrer"),
    (b"x-frame-options", b"DENY"),
    (b"content-security-policy", b"frame-ancestors 'none'"),
)

NO_STORE = (b"cache-control", b"no-store")
# GET answers depend on Accept (the media type) as well as on Accept-Encoding.
VARY_GET = (b"vary", b"accept")
VARY_GET_LARGE = (b"vary", b"accept, accept-encoding")
VARY_LARGE = (b"vary", b"accept-encoding")


async def send_response(send: Send, status: int, headers: Headers, body: bytes = b"") -> None:
    headers.extend(SECURITY_HEADERS)
    note = NOTE.get(None)
    if note is not None:  # the request's own headers, and what the request log says
        note.status = status
        headers.extend(note.headers)
    await send({"type": "http.response.start", "status": status, "headers": headers})
    await send({"type": "http.response.body", "body": body})


def etag_matches(if_none_match: bytes, etag: bytes) -> bool:
    """Weak comparison, as If-None-Match asks for."""
    if if_none_match.strip() == b"*":
        return True
    opaque = etag.removeprefix(b"W/")
    return any(tag.strip().removeprefix(b"W/") == opaque for tag in if_none_match.split(b","))


class Responder:
    """How this server sends answers (settings that shape every response)."""

    def __init__(self, max_age: int, gzip_min_bytes: int) -> None:
        # Public: a GET answer holds nothing of the client's own (no throttle status), so a
        # shared cache may keep it and hand it to another client.
        self.cache_control = b"public, max-age=%d" % max_age
        self.gzip_min_bytes = gzip_min_bytes

    async def answer(
        self,
        send: Send,
        answer: Answer,
        *,
        etag: bytes | None,
        if_none_match: bytes,
        coding: Coding,
        cache: bytes,
        content_type: tuple[bytes, bytes],
    ) -> None:
        """A successful answer; with an ETag (GET) it is cacheable and may be a 304."""
        headers: Headers = [(b"x-cache", cache)]
        body = answer.body
        note = NOTE.get(None)
        if note is not None:
            note.answered(cache, answer.cost())
        large = len(body) >= self.gzip_min_bytes
        if etag is not None:
            vary = VARY_GET_LARGE if large else VARY_GET
            headers += [(b"etag", etag), (b"cache-control", self.cache_control), vary]
        elif large:
            headers.append(VARY_LARGE)
        if etag is not None and if_none_match and etag_matches(if_none_match, etag):
            await send_response(send, 304, headers)
            return
        if large and coding is not None:
            body = answer.encoded(coding)
            headers.append((b"content-encoding", coding))
        headers += [content_type, (b"content-length", b"%d" % len(body))]
        await send_response(send, 200, headers, body)

    async def uncached(
        self,
        send: Send,
        status: int,
        body: bytes,
        content_type: tuple[bytes, bytes],
        headers: Iterable[tuple[bytes, bytes]] = (),
    ) -> None:
        """An answer no one may store: one with errors, a refusal, or a batch's answers."""
        note = NOTE.get(None)
        if note is not None:
            note.refused(body)
        sent = [content_type, NO_STORE, (b"content-length", b"%d" % len(body)), *headers]
        await send_response(send, status, sent, body)
