"""The response cache: finished answers (JSON bytes) by request key, in memory or in Redis."""

from __future__ import annotations

import logging
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Protocol, cast

from graph.caches import Bounded
from graph.server.compress import BR, GZIP, compress

if TYPE_CHECKING:
    from redis.asyncio import Redis

    from graph.settings import Settings

log = logging.getLogger("leadgreen")

# An entry's bookkeeping beyond its bytes (the dict slot, the object, the key).
_OVERHEAD = 200
# v2: the body alone (v1 packed a gzipped copy after it).
_REDIS_PREFIX = b"leadgreen:answer:v2:"


@dataclass(slots=True)
class Answer:
    """A successful answer as sent: its JSON bytes, and compressed copies made on demand.

    A kept answer (one stored in the cache) is compressed once per coding, at the kept level;
    any other is compressed per response, at the cheap level (graph/server/compress.py).
    """

    body: bytes
    kept: bool = field(default=False, compare=False)
    gzipped: bytes | None = field(default=None, compare=False)
    brotli: bytes | None = field(default=None, compare=False)
    reported: int | None = field(default=-1, compare=False, repr=False)  # -1: not read yet

    @classmethod
    def of(cls, body: bytes, gzip_min_bytes: int) -> Answer:
        """An answer to keep; its compressed copies (when it is at least `gzip_min_bytes`) are
        made once, for the first client that accepts each coding."""
        return cls(body, kept=len(body) >= gzip_min_bytes)

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


class ResponseCache(Protocol):
    async def get(self, key: bytes) -> Answer | None: ...
    async def put(self, key: bytes, answer: Answer) -> None: ...
    def forget_local(self) -> None:
        """Drop what this process holds (its answers belong to a release no longer served)."""


class MemoryCache:
    """Least-recently-used answers, bounded by bytes and by count."""

    def __init__(self, max_entries: int, max_bytes: int) -> None:
        self.max_entries = max_entries
        self._entries: Bounded[bytes, Answer] = Bounded(max_bytes, lambda answer: answer.size)

    def __len__(self) -> int:
        return len(self._entries)

    @property
    def size(self) -> float:
        """The bytes of the answers held."""
        return self._entries.bytes

    def lookup(self, key: bytes) -> Answer | None:
        return self._entries.get(key)

    def store(self, key: bytes, answer: Answer) -> None:
        if self.max_entries == 0:
            return
        self._entries[key] = answer
        while len(self._entries) > self.max_entries:
            self._entries.popitem()

    async def get(self, key: bytes) -> Answer | None:
        return self.lookup(key)

    async def put(self, key: bytes, answer: Answer) -> None:
        self.store(key, answer)

    def forget_local(self) -> None:
        self._entries.clear()


class RedisCache:
    """Answers shared by every process through Redis, with an in-process copy in front.

    Keys name the release, so an entry never changes: the local copy cannot go stale. When
    Redis is unreachable the cache degrades to the local copy (and says so in the log).
    """

    def __init__(self, redis: Redis, ttl_seconds: int, local: MemoryCache) -> None:
        self.redis, self.ttl, self.local = redis, ttl_seconds, local

    async def get(self, key: bytes) -> Answer | None:
        answer = self.local.lookup(key)
        if answer is not None:
            return answer
        try:
            packed = await self.redis.get(_REDIS_PREFIX + key)
        except Exception:
            log.warning("redis unreachable; answering without the shared cache", exc_info=True)
            return None
        if packed is None:
            return None
        answer = Answer.unpack(cast(bytes, packed))  # the client does not decode
        self.local.store(key, answer)
        return answer

    async def put(self, key: bytes, answer: Answer) -> None:
        self.local.store(key, answer)
        try:
            await self.redis.set(_REDIS_PREFIX + key, answer.pack(), ex=self.ttl)
        except Exception:
            log.warning("redis unreachable; answer kept in this process only", exc_info=True)

    def forget_local(self) -> None:
        self.local.forget_local()


class NoCache:
    async def get(self, key: bytes) -> Answer | None:
        return None

    async def put(self, key: bytes, answer: Answer) -> None:
        return None

    def forget_local(self) -> None:
        return None


def connect_redis(url: str) -> Redis:
    from redis.asyncio import Redis

    return Redis.from_url(url, socket_timeout=0.5, socket_connect_timeout=0.5)


def make_cache(settings: Settings, max_bytes: int, redis: Redis | None = None) -> ResponseCache:
    """The cache LEADGREEN_CACHE names (Redis: through the client given), holding at most
    `max_bytes` of answers in this process."""
    if settings.cache == "off":
        return NoCache()
    local = MemoryCache(settings.cache_max_entries, max_bytes)
    if settings.cache == "redis":
        assert redis is not None, "LEADGREEN_CACHE=redis needs a Redis client"
        return RedisCache(redis, settings.redis_ttl_seconds, local)
    return local
