"""Cached answers sent again from the protocol: a request the same, byte for byte, as one that
was answered from the response cache is answered with the same response again by
`leadgreen serve`'s protocol (graph/server/edge.py's BoundedHttp), without an ASGI task, the
middleware, the edge or the handler: only its request id (and `date`) are new.

The same means the same method, path, query string, header fields (all of them, in order,
but X-Request-Id) and body: everything the edge and the handler read to answer it. What the
handler sent for the first one is kept (`keep`): the response-cache key of its answer, the
release it came from, its header lines and content coding, and what its log line says. A later
request is sent that (`answer`) while

- the release it came from is still the one served, as of the release watcher's last reading
  within LEADGREEN_RELEASE_POLL_SECONDS (graph/server/release.py `fresh`); else it goes the
  ordinary way, which reads the release again;
- the response cache still holds the answer (the body is read from it, so the answers' bytes
  are counted once, in the cache's budget, and a replay keeps an answer recently used there).

A request is kept on its second answer from the cache: the first leaves only its key's hash
among the last ones seen (a bounded set), so that requests which never come again the same (a
header of their own on each, such as a `traceparent`) cost a hash each, and evict nothing kept.

Each replayed request still gets its request id, its log line and its metrics (the request
log's, with `X-Cache: HIT`), as the edge gives them. Only 200 answers from the cache are kept;
never with rate limiting (each answer is charged to its client), tracing (a span per request)
or a request asked with HEAD. Kept requests are bounded by bytes, as every memo is
(graph/caches.py: their share of LEADGREEN_CACHE_MAX_BYTES).
"""

from __future__ import annotations

import time
from collections import deque
from collections.abc import Callable
from dataclasses import dataclass
from typing import TYPE_CHECKING

from graph.caches import Bounded
from graph.server.observability import Header, Note, RequestLog

if TYPE_CHECKING:
    from starlette.types import Scope

    from graph.server.release import ReleaseWatcher
    from graph.server.response_cache import ResponseCache

# What a request is: method, path, query string, header fields (but its id) and body.
Key = tuple[str, bytes, bytes, tuple[Header, ...], bytes]
# Most bytes of a request body kept (a larger request is always answered the ordinary way).
MAX_BODY_BYTES = 16 * 1024
# What a kept request costs besides its bytes: the tuples, the entry.
_ENTRY_BYTES = 400
# What a hash of a request seen once costs (the int, its places in the set and the queue); the
# hashes take an eighth of the bytes given, the kept requests the rest.
_SEEN_BYTES = 100
REQUEST_ID = b"x-request-id"
# The scope's entry holding a request's key once the protocol has made it (keep reads it).
SCOPE_KEY = "leadgreen.replay_key"


def request_key(scope: Scope, body: bytes) -> tuple[Key, bytes | None]:
    """The request's key, and the X-Request-Id it gave (None: none)."""
    given = None
    fields = []
    for field in scope["headers"]:
        if field[0] == REQUEST_ID:
            given = field[1]
        else:
            fields.append(field)
    raw_path = scope.get("raw_path") or scope["path"].encode()
    return (scope["method"], raw_path, scope["query_string"], tuple(fields), body), given


@dataclass(frozen=True, slots=True)
class Sent:
    """What a response from the cache said, but its request id."""

    answer: bytes  # the response cache's key of the answer
    token: bytes  # the release it came from (graph/server/release.py `Current.token`)
    coding: bytes | None  # its content coding (None: as it is)
    before: bytes  # the header lines before the request id's
    after: bytes  # and after it
    headers: tuple[Header, ...]  # the request's own headers after its id (CORS)
    operation: str | None
    cost: int | None
    size: int  # the bytes of its request


def lines(headers: list[Header]) -> bytes:
    return b"".join(b"%s: %s\r\n" % header for header in headers)


class Replays:
    """Requests answered from the response cache, and what was sent (see the module)."""

    def __init__(
        self,
        cache: ResponseCache,
        release: ReleaseWatcher,
        log: RequestLog,
        ids: Callable[[bytes | None], bytes],
        max_bytes: int,
    ) -> None:
        self.cache, self.release, self.log, self.ids = cache, release, log, ids
        seen_bytes = max_bytes // 8
        self._sent: Bounded[Key, Sent] = Bounded(max_bytes - seen_bytes, lambda sent: sent.size)
        # Hashes of the keys of requests answered from the cache once, oldest first.
        self._seen: set[int] = set()
        self._order: deque[int] = deque(maxlen=max(1, seen_bytes // _SEEN_BYTES))
        self.answered = 0  # requests replayed (tests and benchmarks look)

    def __len__(self) -> int:
        return len(self._sent)

    def forget(self) -> None:
        """Drop what is kept (its answers belong to a release no longer served)."""
        self._sent.clear()
        self._seen.clear()
        self._order.clear()

    def _second(self, key: Key) -> bool:
        """Whether the request of `key` was seen before (else it is, from now on)."""
        hashed = hash(key)
        seen = self._seen
        if hashed in seen:
            return True
        order = self._order
        if len(order) == order.maxlen:
            seen.discard(order[0])  # (the deque drops it as the new one comes)
        order.append(hashed)
        seen.add(hashed)
        return False

    def keep(
        self,
        scope: Scope,
        body: bytes,
        answer: bytes,
        token: bytes,
        headers: list[Header],
        note: Note,
    ) -> None:
        """The 200 answer `headers` (as sent, the request's own included) said to the request
        of `scope` and `body`, from the response cache's `answer` of release `token`."""
        if len(body) > MAX_BODY_BYTES:
            return
        key = scope.get(SCOPE_KEY) or request_key(scope, body)[0]
        if not self._second(key):
            return
        at = headers.index((REQUEST_ID, note.id))
        coding = next((value for name, value in headers if name == b"content-encoding"), None)
        size = _ENTRY_BYTES + len(body) + sum(len(n) + len(v) for n, v in key[3])
        size += len(key[1]) + len(key[2])
        self._sent[key] = Sent(
            answer,
            token,
            coding,
            lines(headers[:at]),
            lines(headers[at + 1 :]),
            tuple(headers[at + 1 :]),
            note.operation,
            note.cost,
            size,
        )

    def answer(self, scope: Scope, body: bytes) -> tuple[bytes, bytes] | None:
        """The response's head (but its status line and the server's own headers) and body
        for a request that was answered from the cache before, as then, with its own request
        id, logged; None when it goes the ordinary way (its key then left in `scope`)."""
        started = time.perf_counter()
        key, given = request_key(scope, body)
        sent = self._sent.get(key)
        if sent is None:
            scope[SCOPE_KEY] = key
            return None
        current = self.release.fresh
        if current is None or current.token != sent.token:
            return None
        answer = self.cache.lookup(sent.answer)
        if answer is None:
            return None
        request_id = self.ids(given)
        head = b"".join((sent.before, b"x-request-id: ", request_id, b"\r\n", sent.after, b"\r\n"))
        note = Note(request_id, ((REQUEST_ID, request_id), *sent.headers))
        note.status, note.operation = 200, sent.operation
        note.answered(b"HIT", sent.cost)
        self.log.add(note, scope["method"], scope["path"], "/graphql", started)
        self.answered += 1
        return head, answer.encoded(sent.coding) if sent.coding is not None else answer.body
