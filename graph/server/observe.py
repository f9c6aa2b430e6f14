"""What the request log and the metrics say of a request, noted while it is answered: its id,
the response's own headers, status, operation name, cache result, cost and error.

The edge (graph/server/edge.py) makes the note and keeps it in a context variable for the
request's task; the /graphql handler and graph/server/respond.py fill it in.
"""

from __future__ import annotations

import itertools
import os
import re
import uuid
from contextvars import ContextVar

from starlette.types import Message, Send

Header = tuple[bytes, bytes]

# A request id a client may choose (X-Request-Id): short, and safe in any log or header.
_SANE_ID = re.compile(rb"[A-Za-z0-9._-]{1,128}")
# The name of a document's (first) operation, when the request does not name it.
_OPERATION = re.compile(r"\b(?:query|mutation|subscription)\s+([_A-Za-z][_0-9A-Za-z]*)")


class Note:
    """One request's facts, filled in as it is answered."""

    __slots__ = ("cache", "cost", "error", "headers", "id", "operation", "status")

    def __init__(self, request_id: bytes, headers: tuple[Header, ...]) -> None:
        self.id = request_id
        self.headers = headers  # sent with every response to the request
        self.status = 0  # 0: no response was sent
        self.operation: str | None = None  # None: no GraphQL operation; "": an anonymous one
        self.cache: bytes | None = None  # b"HIT" or b"MISS": answered through the cache
        self.cost: int | None = None  # the answer's actual cost
        self.error: bytes | None = None  # the body of an answer with errors, or a refusal

    def answered(self, cache: bytes, cost: int | None) -> None:
        self.cache, self.cost = cache, cost

    def refused(self, body: bytes) -> None:
        self.error = body


NOTE: ContextVar[Note | None] = ContextVar("leadgreen_note", default=None)


class Noting:
    """`send`, adding the request's headers to its response and noting the status (and, for
    an error, the body, whose code the request log shows)."""

    __slots__ = ("note", "send")

    def __init__(self, send: Send, note: Note) -> None:
        self.send, self.note = send, note

    async def __call__(self, message: Message) -> None:
        kind = message["type"]
        if kind == "http.response.start":
            self.note.status = message["status"]
            message = {**message, "headers": [*message.get("headers", ()), *self.note.headers]}
        elif kind == "http.response.body" and self.note.status >= 400 and self.note.error is None:
            self.note.error = message.get("body", b"")[:4096]
        await self.send(message)


def noted(send: Send) -> Send:
    """`send` for a response sent without graph/server/respond.py."""
    note = NOTE.get()
    return send if note is None else Noting(send, note)


class RequestIds:
    """Request ids: the client's X-Request-Id when it is sane (at most 128 characters of
    A-Z a-z 0-9 . _ -), else this process's random prefix and a counter (cheap, and unique
    across processes)."""

    def __init__(self) -> None:
        self.prefix = os.urandom(6).hex().encode()
        self.count = itertools.count(1)

    def __call__(self, given: bytes | None = None) -> bytes:
        if given is not None and _SANE_ID.fullmatch(given):
            return given
        return b"%s-%x" % (self.prefix, next(self.count))


def request_id() -> str:
    """The current request's id (one for the log and the client's error); a new one outside a
    request."""
    note = NOTE.get()
    return note.id.decode() if note is not None else uuid.uuid4().hex


# Documents' operation names, by their text (a plain dict: a lookup per request), within this
# many bytes of text; emptied when full.
_NAMES_MAX_BYTES = 1024 * 1024
_names: dict[str, str | None] = {}
_names_bytes = 0


def name_operation(name: str | None, query: str | None) -> None:
    """Note the request's operation name: as the request gives it, else its document's."""
    note = NOTE.get()
    if note is None:
        return
    if name is None and query:
        name = document_operation(query)
    note.operation = name or ""  # "": an anonymous operation


def document_operation(query: str) -> str | None:
    global _names_bytes
    try:
        return _names[query]
    except KeyError:
        pass
    match = _OPERATION.search(query)
    name = match.group(1) if match else None
    if _names_bytes + len(query) > _NAMES_MAX_BYTES:
        _names.clear()
        _names_bytes = 0
    _names[query] = name
    _names_bytes += len(query)
    return name
