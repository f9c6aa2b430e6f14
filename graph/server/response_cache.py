"""The response cache: finished answers (JSON bytes) by request key, in memory or in Redis."""

from __future__ import annotations

import gzip
import logging
from dataclasses import dataclass
from typing import TYPE_CHECKING, Protocol, cast

from graph.caches import Bounded

if TYPE_CHECKING:
    from redis.asyncio import Redis

    from graph.settings import Settings

log = logging.getLogger("leadgreen")

# An entry's bookkeeping beyond its bytes (the dict slot, the object, the key).
_OVERHEAD = 200
_REDIS_PREFIX = b"leadgreen:answer:"


@dataclass(frozen=True, slots=True)
class Answer:
    """A successful answer as sent: its JSON bytes, and gzipped when it is large enough."""

    body: bytes
    gzipped: bytes | None = None

    @classmethod
    def of(cls, body: bytes, gzip_min_bytes: int) -> Answer:
        large = len(body) >= gzip_min_bytes
        return cls(body, gzip.compress(body, compresslevel=6, mtime=0) if large else None)

    @property
    def size(self) -> int:
        return len(self.body) + len(self.gzipped or b"") + _OVERHEAD

    def pack(self) -> bytes:
        return len(self.body).to_bytes(4, "big") + self.body + (self.gzipped or b"")

    @classmethod
    def unpack(cls, packed: bytes) -> Answer:
        end = 4 + int.from_bytes(packed[:4], "big")
        return cls(packed[4:end], packed[end:] or None)


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
