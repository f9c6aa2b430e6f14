"""What /graphql keeps between requests, in this process or in Redis: finished answers (JSON
bytes) by request key, the response cache; and documents by their hash, Apollo-compatible
automatic persisted queries (a document registered once, then sent by hash)."""

from __future__ import annotations

import logging
from typing import TYPE_CHECKING, Protocol, cast

from graph.caches import Bounded
from graph.errors import Code
from graph.server.protocol import GraphQLRequest, Refusal, document_hash
from graph.server.responses import Answer

if TYPE_CHECKING:
    from redis.asyncio import Redis

    from graph.settings import Settings

log = logging.getLogger("leadgreen")

# v2: the body alone (v1 packed a gzipped copy after it).
_REDIS_PREFIX = b"leadgreen:answer:v2:"
# How long Redis keeps an answer or a persisted query (keys name the release: an entry never
# goes stale, it only stops being asked for).
REDIS_TTL_SECONDS = 86_400
# Most answers kept in a process (besides their share of LEADGREEN_CACHE_MAX_BYTES).
MAX_ANSWERS = 10_000


class ResponseCache(Protocol):
    async def get(self, key: bytes) -> Answer | None: ...
    def lookup(self, key: bytes) -> Answer | None:
        """The answer this process holds (nothing is asked of Redis)."""

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

    def lookup(self, key: bytes) -> Answer | None:
        return self.local.lookup(key)

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

    def lookup(self, key: bytes) -> Answer | None:
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
    local = MemoryCache(MAX_ANSWERS, max_bytes)
    if settings.cache == "redis":
        assert redis is not None, "LEADGREEN_CACHE=redis needs a Redis client"
        return RedisCache(redis, REDIS_TTL_SECONDS, local)
    return local


# --- Persisted queries ----------------------------------------------------------------------

_APQ_PREFIX = "leadgreen:apq:"


# What a kept document costs besides its text: its hash, the entry.
_ENTRY_BYTES = 200


class PersistedQueries:
    """Documents by SHA-256, least recently used first out, within `max_bytes` in this process;
    shared through Redis when given. `max_entries` 0 turns persisted queries off."""

    def __init__(
        self,
        max_entries: int,
        redis: Redis | None = None,
        ttl_seconds: int = 0,
        max_bytes: int = 8 * 1024 * 1024,
        max_document_bytes: int | None = None,
    ):
        self.max_entries, self.redis, self.ttl = max_entries, redis, ttl_seconds
        self.max_document_bytes = max_document_bytes
        self._local: Bounded[str, str] = Bounded(max_bytes, lambda text: len(text) + _ENTRY_BYTES)

    async def resolve(self, request: GraphQLRequest) -> str | None:
        """The request's document: its own text, or the text registered under its hash.

        None when only an unknown hash was sent (the client then sends the text with the hash,
        which registers it). A text whose hash is not the one sent is refused.
        """
        sha = request.persisted_hash
        if sha is None:
            return request.query
        if self.max_entries == 0:
            raise Refusal(200, "PersistedQueryNotSupported", Code.PERSISTED_QUERY_NOT_SUPPORTED)
        if request.query is None:
            return await self.get(sha)
        size = len(request.query.encode())
        if self.max_document_bytes is not None and size > self.max_document_bytes:
            # Refused before it is hashed or kept: it could never be run.
            raise Refusal(
                200,
                f"The document is {size} bytes, more than the limit of {self.max_document_bytes}.",
                Code.DOCUMENT_TOO_LARGE,
            )
        if document_hash(request.query) != sha:
            raise Refusal(400, "provided sha does not match query", Code.BAD_USER_INPUT)
        await self.put(sha, request.query)
        return request.query

    async def get(self, sha: str) -> str | None:
        query = self._local.get(sha)
        if query is not None:
            return query
        if self.redis is None:
            return None
        try:
            found = await self.redis.get(_APQ_PREFIX + sha)
        except Exception:
            log.warning("redis unreachable; persisted queries of this process only", exc_info=True)
            return None
        if found is None:
            return None
        query = found if isinstance(found, str) else found.decode()
        self._remember(sha, query)
        return query

    async def put(self, sha: str, query: str) -> None:
        known = sha in self._local
        self._remember(sha, query)
        if self.redis is None or known:
            return
        try:
            await self.redis.set(_APQ_PREFIX + sha, query, ex=self.ttl)
        except Exception:
            log.warning("redis unreachable; persisted query kept in this process", exc_info=True)

    def _remember(self, sha: str, query: str) -> None:
        self._local[sha] = query
        while len(self._local) > self.max_entries:
            self._local.popitem()
