"""The response cache: finished answers (JSON bytes) by request key, in memory or in Redis."""

from __future__ import annotations

import gzip
import logging
from collections import OrderedDict
from dataclasses import dataclass
from typing import TYPE_CHECKING, Protocol, cast

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
    """Least-recently-used answers, bounded by count and by bytes."""

    def __init__(self, max_entries: int, max_bytes: int) -> None:
        self.max_entries, self.max_bytes = max_entries, max_bytes
        self._entries: OrderedDict[bytes, Answer] = OrderedDict()
        self.bytes = 0

    def __len__(self) -> int:
        return len(self._entries)

    def lookup(self, key: bytes) -> Answer | None:
        answer = self._entries.get(key)
        if answer is not None:
            self._entries.move_to_end(key)
        return answer

    def store(self, key: bytes, answer: Answer) -> None:
        if answer.size > self.max_bytes or self.max_entries == 0:
            return
        old = self._entries.pop(key, None)
        if old is not None:
            self.bytes -= old.size
        self._entries[key] = answer
        self.bytes += answer.size
        while len(self._entries) > self.max_entries or self.bytes > self.max_bytes:
            _, dropped = self._entries.popitem(last=False)
            self.bytes -= dropped.size

    async def get(self, key: bytes) -> Answer | None:
        return self.lookup(key)

    async def put(self, key: bytes, answer: Answer) -> None:
        self.store(key, answer)

    def forget_local(self) -> None:
        self._entries.clear()
        self.bytes = 0


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


def make_cache(settings: Settings, redis: Redis | None = None) -> ResponseCache:
    """The cache LEADGREEN_CACHE names (Redis: through the client given)."""
    if settings.cache == "off":
        return NoCache()
    local = MemoryCache(settings.cache_max_entries, settings.cache_max_bytes)
    if settings.cache == "redis":
        assert redis is not None, "LEADGREEN_CACHE=redis needs a Redis client"
        return RedisCache(redis, settings.redis_ttl_seconds, local)
    return local
