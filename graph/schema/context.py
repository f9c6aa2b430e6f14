"""The per-request context: one database session, the release it answers from and its catalog;
and the one check of each kind of name a client gives (a GPU type, a task, a model, a grid
zone)."""

from __future__ import annotations

import asyncio
import contextlib
from collections.abc import AsyncIterator, Awaitable, Callable
from dataclasses import dataclass, field
from typing import Any, TypeVar

from sqlalchemy.ext.asyncio import AsyncSession

from db import grid, reads
from db.catalog import Catalog
from db.database import waiting
from db.kinds import Kind
from db.tables import ModelRow, ReleaseRow, TaskRow
from graph.errors import BadInput, NoData
from graph.schema.memory import Catalogs
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

    @contextlib.asynccontextmanager
    async def _turn(self) -> AsyncIterator[None]:
        """The session's reader's turn: one at a time, as an AsyncSession requires; the wait
        for it and the read within the request's bound (db.database `waiting`)."""
        async with waiting(), self._lock:
            yield

    async def read(self, fn: Callable[..., Awaitable[R]], /, **kwargs: Any) -> R:
        """Run a `db.reads` function in its turn."""
        async with self._turn():
            return await fn(self.db, **kwargs)

    async def release(self, release_id: int | None = None) -> ReleaseRow:
        """The release asked for, or else the latest (each read at most once per request)."""
        if release_id is None:
            if self._release is None:
                async with self._turn():
                    if self._release is None:
                        self._release = await reads.latest_release(self.db)
            if self._release is None:
                raise NoData("The database holds no data yet: run `leadgreen ingest` first")
            return self._release
        if self._release is not None and self._release.id == release_id:
            return self._release
        if release_id not in self._releases:
            async with self._turn():
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


# The names a client may give in an argument, each checked here and nowhere else: an unknown one
# is a BadInput naming the value, the argument it came in and the root field that lists the
# valid ones, whatever field it was given to (a filter that silently selects nothing would
# pass a typo for "no data"). `argument` is as the client wrote it: `gpus`, `filter.task`.


def unknown(what: str, value: str, argument: str, listed_by: str) -> BadInput:
    """The one answer to a name the release does not know (`value` cut at 200 characters)."""
    return BadInput(f"unknown {what} {value[:200]!r} in `{argument}`; `{listed_by}` lists them")


def known_gpu(catalog: Catalog, name: str, argument: str) -> str:
    """`name`, a GPU type the catalog knows; else BadInput."""
    if name not in catalog.gpu_by_name:
        raise unknown("GPU", name, argument, "gpus")
    return name


def known_task(catalog: Catalog, name: str, argument: str, kind: Kind | None = None) -> TaskRow:
    """The release's task of this name, of `kind` when given; else BadInput."""
    task = catalog.task_by_name.get(name)
    if task is None:
        raise unknown("task", name, argument, "tasks")
    found = catalog.kind_of_task[task.id]
    if kind is not None and found is not kind:
        fits = sorted(t.name for t in catalog.tasks if catalog.kind_of_task[t.id] is kind)
        raise BadInput(
            f"task {name!r} in `{argument}` is {found.article} {found.called} task; this field "
            f"takes {kind.called} tasks: {', '.join(fits) or 'none'}"
        )
    return task


def known_model(catalog: Catalog, name: str, argument: str, *, by_id: bool = False) -> ModelRow:
    """The release's model with this slug (or Hugging Face id, `by_id`); else BadInput."""
    found = (catalog.model_by_model_id if by_id else catalog.model_by_slug).get(name)
    if found is None:
        raise unknown("model id" if by_id else "model slug", name, argument, "models")
    return found


def known_zone(name: str, argument: str) -> grid.Zone:
    """The grid zone of this code (db.grid), with its carbon intensity; else BadInput, also when
    the zone has no figure (nothing is made up for it)."""
    found = grid.zones().get(name)
    if found is None:
        raise unknown("grid zone", name, argument, "gridZones")
    if found.grams_per_kwh is None:
        raise BadInput(
            f"grid zone {name!r} in `{argument}` has no carbon intensity: {found.missing}; "
            "give carbonIntensityGramsPerKwh instead"
        )
    return found
