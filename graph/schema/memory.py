"""The release catalogs a process keeps in memory: the default release's, and others' within a
byte budget."""

from __future__ import annotations

import asyncio
from collections.abc import Callable
from datetime import datetime

from sqlalchemy.ext.asyncio import AsyncSession

from db.catalog import Catalog, load_catalog
from db.database import shared, waiting
from db.derived import warm
from db.tables import ReleaseRow
from graph.caches import Bounded, fixed

# What names one ingest: its release id, and the digest and time of the ingest (so that another
# database, or the same one emptied and filled again, cannot be mistaken for it).
Key = tuple[int, str, datetime]
# A catalog's bytes, roughly: its rows as Python objects, and what is derived from them.
ROW_BYTES = 1_000
BASE_BYTES = 200_000
# The GraphQL objects made of a catalog's rows that it keeps (about this size each).
OBJECT_BYTES = 1_500
OBJECTS_MAX_BYTES = 32 * 1024 * 1024


def _key(release: ReleaseRow) -> Key:
    return (release.id, release.digest, release.ingested_at)


def catalog_bytes(catalog: Catalog) -> int:
    rows = sum(len(rows) for rows in catalog.rows.values())
    return BASE_BYTES + ROW_BYTES * (rows + len(catalog.models) + len(catalog.model_tasks))


# A session, or what opens one.
Session = AsyncSession | Callable[[], AsyncSession]


class Catalogs:
    """Each release's catalog, read once: the default release's is always kept, the others'
    within `max_bytes` (least recently used out first).

    Concurrent requests for a release not yet in memory share one read, made in a session of
    its own (so that a request cancelled meanwhile cannot break it for the others) and given
    up after `timeout` seconds (so that a database that stopped answering cannot hold every
    later request of the release; the next request after a failure reads again); a request
    waits for it within its own bound (db.database `waiting`).
    """

    def __init__(self, max_bytes: int = 64 * 1024 * 1024, timeout: float = 30.0) -> None:
        self.timeout = timeout
        self._default: tuple[Key, Catalog] | None = None
        self._others: Bounded[Key, Catalog] = Bounded(max_bytes, catalog_bytes)
        self._loading: dict[Key, asyncio.Future[Catalog]] = {}

    async def get(self, session: Session, release: ReleaseRow, *, default: bool) -> Catalog:
        """The release's catalog; `default` when it is the release answers come from unless a
        request names another. `session` (or the function that opens it, called only when the
        catalog is to be read) says which database."""
        key = _key(release)
        if self._default is not None and self._default[0] == key:
            return self._default[1]
        catalog = self._others.get(key)
        if catalog is None:
            catalog = await self._load_once(session, key)
        if default:
            if self._default is not None:  # the release served before: one of the others now
                self._others[self._default[0]] = self._default[1]
            self._others.pop(key, None)
            self._default = (key, catalog)
        return catalog

    async def prepare(self, sessions: Callable[[], AsyncSession], release: ReleaseRow) -> Catalog:
        """Read the release's catalog, unless it is held, and answer from it by default: what a
        server does before it says it is ready, and when a new release appears."""
        return await self.get(sessions, release, default=True)

    def holds(self, release: ReleaseRow) -> bool:
        """Whether the release's catalog is read and the one answers come from by default."""
        return self._default is not None and self._default[0] == _key(release)

    async def _load_once(self, session: Session, key: Key) -> Catalog:
        loading = self._loading.get(key)
        if loading is None or loading.get_loop() is not asyncio.get_running_loop():
            loading = shared(self._load(session, key))
            self._loading[key] = loading
            loading.add_done_callback(lambda done: self._loaded(key, done))
        async with waiting():
            return await asyncio.shield(loading)

    async def _load(self, session: Session, key: Key) -> Catalog:
        bind = (session() if callable(session) else session).bind
        async with asyncio.timeout(self.timeout), AsyncSession(bind, expire_on_commit=False) as own:
            catalog = await load_catalog(own, key[0])
        warm(catalog)
        catalog.objects = Bounded(OBJECTS_MAX_BYTES, fixed(OBJECT_BYTES))
        return catalog

    def _loaded(self, key: Key, done: asyncio.Future[Catalog]) -> None:
        if self._loading.get(key) is done:
            del self._loading[key]
        if not done.cancelled() and done.exception() is None:
            self._others[key] = done.result()

    def clear(self) -> None:
        self._default = None
        self._others.clear()
