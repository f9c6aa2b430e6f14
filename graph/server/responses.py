"""Sending answers: JSON bytes over raw ASGI, each with the request's own headers (request id,
CORS: graph/server/edge.py) and the security headers; ETag and 304 for GET; content codings
(brotli or gzip) and the compressed copies of an answer; and the documents' JSON errors.

The compression levels, measured on the model page (20 KB) and a task's whole table (570 KB) on
the benchmark machine (bench/compression.py prints the table):

- kept (a cached answer, a document, the GraphiQL page: compressed once, sent many times):
  gzip 6, brotli 5 — 0.23 / 0.22 of the model page, 0.13 / 0.12 of the table;
- per response (the cache off, an answer stamped per client): gzip 3, brotli 1 — 0.25 / 0.26
  of the page in 0.1 / 0.06 ms, 0.16 / 0.13 of the table in 8 / 1.4 ms, where gzip 6 and
  brotli 5 take 0.5 / 1.1 ms and 18 / 16 ms.

Every coding of a response has the same weak ETag (its content is the same; the validator says
so and no more), and a response that may be compressed says `Vary: Accept-Encoding`.
"""

from __future__ import annotations

import gzip
from collections.abc import Iterable
from dataclasses import dataclass, field
from typing import Final

import brotli
import orjson
from starlette.exceptions import HTTPException
from starlette.requests import Request
from starlette.responses import Response
from starlette.types import Send

from graph.caches import Bounded
from graph.errors import Code
from graph.server.observability import NOTE
from graph.server.protocol import remembered

Headers = list[tuple[bytes, bytes]]
# On every response (graph/server/edge.py adds them to the other routes' responses).
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


async def uncached(
    send: Send,
    status: int,
    body: bytes,
    content_type: tuple[bytes, bytes] = (b"content-type", b"application/json"),
    headers: Iterable[tuple[bytes, bytes]] = (),
) -> None:
    """An answer no one may store: one with errors, a refusal, or a batch's answers."""
    note = NOTE.get(None)
    if note is not None:
        note.refused(body)
    sent = [content_type, NO_STORE, (b"content-length", b"%d" % len(body)), *headers]
    await send_response(send, status, sent, body)


class Responder:
    """How this server sends answers (settings that shape every response)."""

    def __init__(self, max_age: int, compress_min_bytes: int) -> None:
        # Public: a GET answer holds nothing of the client's own (no throttle status), so a
        # shared cache may keep it and hand it to another client.
        self.cache_control = b"public, max-age=%d" % max_age
        self.compress_min_bytes = compress_min_bytes

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
    ) -> Headers | None:
        """A successful answer; with an ETag (GET) it is cacheable and may be a 304. The headers
        of a 200 as sent (the request's own included: graph/server/replay.py keeps them); None
        for a 304."""
        headers: Headers = [(b"x-cache", cache)]
        body = answer.body
        note = NOTE.get(None)
        if note is not None:
            note.answered(cache, answer.cost())
        large = len(body) >= self.compress_min_bytes
        if etag is not None:
            vary = VARY_GET_LARGE if large else VARY_GET
            headers += [(b"etag", etag), (b"cache-control", self.cache_control), vary]
        elif large:
            headers.append(VARY_LARGE)
        if etag is not None and if_none_match and etag_matches(if_none_match, etag):
            await send_response(send, 304, headers)
            return None
        if large and coding is not None:
            body = answer.encoded(coding)
            headers.append((b"content-encoding", coding))
        headers += [content_type, (b"content-length", b"%d" % len(body))]
        await send_response(send, 200, headers, body)
        return headers


# --- Content codings ------------------------------------------------------------------------

Coding = bytes | None  # b"br", b"gzip", or None: as is (identity)
BR: Final = b"br"
GZIP: Final = b"gzip"
KEPT_GZIP, KEPT_BROTLI = 6, 5
FRESH_GZIP, FRESH_BROTLI = 3, 1


def choose(accept_encoding: bytes) -> Coding:
    """The coding to send to a client whose Accept-Encoding is `accept_encoding`: brotli when
    it is accepted at least as much as gzip, else gzip when accepted, else none."""
    return _choose(accept_encoding) if accept_encoding else None


@remembered(entries=256)
def _choose(accept_encoding: bytes) -> Coding:
    weights: dict[bytes, float] = {}
    for part in accept_encoding.lower().split(b","):
        coding, _, params = part.partition(b";")
        weight = 1.0
        for param in params.split(b";"):
            name, _, value = param.strip().partition(b"=")
            if name == b"q":
                try:
                    weight = float(value)
                except ValueError:
                    weight = 0.0
        weights[coding.strip()] = weight
    anything = weights.get(b"*", 0.0)
    br = weights.get(BR, anything)
    gz = weights.get(GZIP, weights.get(b"x-gzip", anything))
    if br > 0 and br >= gz:
        return BR
    return GZIP if gz > 0 else None


def compress(body: bytes, coding: bytes, *, kept: bool) -> bytes:
    """`body` in `coding`, at the level for a body kept (compressed once) or sent once."""
    if coding == BR:
        data: bytes = brotli.compress(body, quality=KEPT_BROTLI if kept else FRESH_BROTLI)
        return data
    return gzip.compress(body, compresslevel=KEPT_GZIP if kept else FRESH_GZIP, mtime=0)


class Encoded:
    """Compressed copies of bodies that do not change, by their ETag and coding, within a byte
    budget: each is compressed once."""

    def __init__(self, max_bytes: int) -> None:
        self._copies: Bounded[tuple[str, bytes], bytes] = Bounded(
            max_bytes, lambda data: len(data) + 200
        )

    def get(self, etag: str, body: bytes, coding: bytes) -> bytes:
        return self._copies.remember((etag, coding), lambda: compress(body, coding, kept=True))


def weak(etag: str) -> str:
    """The weak form of an entity tag: the same for every coding of a representation."""
    return etag if etag.startswith("W/") else "W/" + etag


# --- An answer and its compressed copies -----------------------------------------------------

# An entry's bookkeeping beyond its bytes (the dict slot, the object, the key).
_OVERHEAD = 200


@dataclass(slots=True)
class Answer:
    """A successful answer as sent: its JSON bytes, and compressed copies made on demand.

    A kept answer (one stored in the cache) is compressed once per coding, at the kept level;
    any other is compressed per response, at the cheap level (above).
    """

    body: bytes
    kept: bool = field(default=False, compare=False)
    gzipped: bytes | None = field(default=None, compare=False)
    brotli: bytes | None = field(default=None, compare=False)
    reported: int | None = field(default=-1, compare=False, repr=False)  # -1: not read yet

    @classmethod
    def of(cls, body: bytes, compress_min_bytes: int) -> Answer:
        """An answer to keep; its compressed copies (when it is at least `compress_min_bytes`) are
        made once, for the first client that accepts each coding."""
        return cls(body, kept=len(body) >= compress_min_bytes)

    def encoded(self, coding: bytes) -> bytes:
        """The body in `coding` (b"br" or b"gzip")."""
        if not self.kept:
            return compress(self.body, coding, kept=False)
        if coding == BR:
            if self.brotli is None:
                self.brotli = compress(self.body, BR, kept=True)
            return self.brotli
        if self.gzipped is None:
            self.gzipped = compress(self.body, GZIP, kept=True)
        return self.gzipped

    def cost(self) -> int | None:
        """The actual cost the answer reports (for the request log), read once."""
        if self.reported == -1:
            self.reported = actual_cost(self.body)
        return self.reported

    @property
    def size(self) -> int:
        # A kept answer's compressed copies, made later, are counted now (as at most half the
        # body: JSON answers compress to a quarter or less in each coding).
        return len(self.body) * (3 if self.kept else 2) // 2 + _OVERHEAD

    def pack(self) -> bytes:
        """For Redis: the body alone (each process compresses its copies once)."""
        return self.body

    @classmethod
    def unpack(cls, packed: bytes) -> Answer:
        return cls(packed, kept=True)


_ACTUAL = b'"actualQueryCost":'


def actual_cost(body: bytes) -> int | None:
    """`extensions.cost.actualQueryCost` of an answer (last in it), without parsing it all."""
    at = body.rfind(_ACTUAL, max(0, len(body) - 200))
    if at < 0:
        return None
    digits = body[at + len(_ACTUAL) : at + len(_ACTUAL) + 12].split(b"}")[0].split(b",")[0]
    return int(digits) if digits.isdigit() else None


# --- The documents' errors ------------------------------------------------------------------

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
