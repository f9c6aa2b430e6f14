"""The per-request context: one database session, the release it answers from and its catalog."""

from __future__ import annotations

import asyncio
from collections.abc import Awaitable, Callable
from dataclasses import dataclass, field
from typing import Any, TypeVar

from sqlalchemy.ext.asyncio import AsyncSession

from db import reads
from db.catalog import Catalog
from db.tables import ReleaseRow
from graph.errors import BadInput, NoData
from graph.schema.catalogs import Catalogs
from graph.settings import Settings

R = TypeVar("R")


@dataclass
class Context:
    """What a request's resolvers share.

    `session` is the request's database session, or None to open one from `sessions` when a
    resolver first reads the database (most answers come from the catalog in memory alone);
    whoever made the context closes it. `_release` is the release to answer from by default
    (the HTTP handler passes the one its release watcher read); without it, the latest is read
    once per request. `catalogs` are the process's (the app passes its own); a context made
    without them reads its own.
    """

    session: AsyncSession | None
    settings: Settings
    _release: ReleaseRow | None = None
    catalogs: Catalogs = field(default_factory=Catalogs)
    _lock: asyncio.Lock = field(default_factory=asyncio.Lock)
    _releases: dict[int, ReleaseRow] = field(default_factory=dict)
    sessions: Callable[[], AsyncSession] | None = None

    @property
    def db(self) -> AsyncSession:
        """The request's session, opened now if it is not yet."""
        if self.session is None:
            if self.sessions is None:
                raise RuntimeError("a Context needs a session or a way to open one")
            self.session = self.sessions()
        return self.session

    async def read(self, fn: Callable[..., Awaitable[R]], /, **kwargs: Any) -> R:
        """Run a `db.reads` function; one at a time, as an AsyncSession requires."""
        async with self._lock:
            return await fn(self.db, **kwargs)

    async def release(self, release_id: int | None = None) -> ReleaseRow:
        """The release asked for, or else the latest (each read at most once per request)."""
        if release_id is None:
            if self._release is None:
                async with self._lock:
                    if self._release is None:
                        self._release = await reads.latest_release(self.db)
            if self._release is None:
                raise NoData("The database holds no data yet: run `leadgreen ingest` first")
            return self._release
        if self._release is not None and self._release.id == release_id:
            return self._release
        if release_id not in self._releases:
            async with self._lock:
                if release_id not in self._releases:
                    asked = await reads.release(self.db, release_id=release_id)
                    if asked is None:
                        raise BadInput(f"there is no release {release_id}; `releases` lists them")
                    self._releases[release_id] = asked
        return self._releases[release_id]

    async def release_id(self, release_id: int | None = None) -> int:
        return (await self.release(release_id)).id

    async def catalog(self, release_id: int | None = None) -> Catalog:
        """The rows of the release asked for (or the latest), read once per process."""
        release = await self.release(release_id)
        default = release_id is None or release is self._release
        return await self.catalogs.get(lambda: self.db, release, default=default)
