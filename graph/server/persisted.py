"""Apollo-compatible automatic persisted queries: a document registered once, then sent by hash."""

from __future__ import annotations

import logging
from typing import TYPE_CHECKING

from graph.caches import Bounded
from graph.errors import Code
from graph.server.request import GraphQLRequest, Refusal, document_hash

if TYPE_CHECKING:
    from redis.asyncio import Redis

log = logging.getLogger("leadgreen")
_REDIS_PREFIX = "leadgreen:apq:"


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
            found = await self.redis.get(_REDIS_PREFIX + sha)
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
            await self.redis.set(_REDIS_PREFIX + sha, query, ex=self.ttl)
        except Exception:
            log.warning("redis unreachable; persisted query kept in this process", exc_info=True)

    def _remember(self, sha: str, query: str) -> None:
        self._local[sha] = query
        while len(self._local) > self.max_entries:
            self._local.popitem()
