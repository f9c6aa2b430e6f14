"""Which release a process answers from, re-read from the database at a bounded interval."""

from __future__ import annotations

import asyncio
import contextlib
import logging
import time
from collections.abc import Awaitable, Callable
from dataclasses import dataclass

from sqlalchemy import func, select
from sqlalchemy.ext.asyncio import AsyncSession, async_sessionmaker

from db import reads
from db.database import shared, waiting
from db.tables import ReleaseRow
from graph.errors import database_fault

log = logging.getLogger("leadgreen")


@dataclass(frozen=True, slots=True)
class Current:
    """The release answers come from, and a token naming what every answer may depend on."""

    release: ReleaseRow
    token: bytes


async def read_current(session: AsyncSession) -> Current | None:
    """The latest release, and the newest ingest (which `releases` and `changes` show even when
    its data is older than the latest's): a new ingest of any kind changes the token. The
    release id, digest and ingest time name it across databases sharing one Redis."""
    latest = await reads.latest_release(session)
    if latest is None:
        return None
    newest = await session.scalar(select(func.max(ReleaseRow.id)))
    token = f"{latest.id}:{latest.digest}:{latest.ingested_at.isoformat()}:{newest}"
    return Current(latest, token.encode())


class ReleaseWatcher:
    """The latest release, as of at most `poll_seconds` ago.

    A background task re-reads it every `poll_seconds / 2`; a request that finds the last
    reading older than `poll_seconds` (the task fell behind, or poll_seconds is 0) waits for a
    fresh one. So once an ingest commits, no answer comes from an older release after
    `poll_seconds` (plus the time of one SELECT).
    """

    def __init__(
        self,
        make_session: async_sessionmaker[AsyncSession],
        poll_seconds: float,
        *,
        on_change: Callable[[], None] = lambda: None,
        prepare: Callable[[Current], Awaitable[object]] | None = None,
        clock: Callable[[], float] = time.monotonic,
    ) -> None:
        self.make_session, self.poll_seconds, self.clock = make_session, poll_seconds, clock
        # What answers need of a release before they come from it (its catalog, read), done
        # before it is the current one: the release served changes when that is ready.
        self.on_change, self.prepare = on_change, prepare
        self._current: Current | None = None
        self._read_at = -float("inf")
        self._pending: asyncio.Task[Current | None] | None = None
        self._pending_since = -float("inf")
        self._task: asyncio.Task[None] | None = None
        self._retrying: asyncio.Future[None] | None = None
        self.failing = False  # the last reading failed for the database being away

    async def current(self) -> Current | None:
        """The release to answer from. While the database is away, the one last read: the
        answers cached for it are still served (and the catalog in memory answers what it
        can) while a reading in the background finds when it is back."""
        if self._read_lately():
            return self._current
        if self.failing and self._current is not None:
            self._retry()
            return self._current
        try:
            return await self.refresh()
        except Exception as exc:
            if database_fault(exc) is None or self._current is None:
                raise
            if not self.failing:
                log.warning(
                    "the database is away; answering from release %s: %r",
                    self._current.release.id,
                    exc,
                )
            self.failing = True
            return self._current

    @property
    def fresh(self) -> Current | None:
        """The release last read when that was within `poll_seconds` (what `current` answers
        at once); None when it is older, or none was read."""
        return self._current if self._read_lately() else None

    def _read_lately(self) -> bool:
        return self.clock() - self._read_at < self.poll_seconds

    @property
    def known(self) -> Current | None:
        """The release last read, however long ago (None before the first reading)."""
        return self._current

    def refresh_soon(self) -> None:
        """Read the latest release (and prepare it) in the background, if no reading is."""
        self._retry()

    def _retry(self) -> None:
        """Read the release again in the background (once at a time)."""
        if self._retrying is None or self._retrying.done():
            self._retrying = shared(self._quietly())

    async def _quietly(self) -> None:
        with contextlib.suppress(Exception):
            await self.refresh()

    async def refresh(self) -> Current | None:
        """Read the latest release (joining a reading that started within the bound)."""
        now, pending = self.clock(), self._pending
        if (
            pending is None
            or now - self._pending_since >= self.poll_seconds
            or (pending.done() and (pending.cancelled() or pending.exception() is not None))
        ):
            pending = self._pending = shared(self._read(now))
            self._pending_since = now
        async with waiting():  # (a request's wait is its own; the reading goes on)
            return await asyncio.shield(pending)

    async def _read(self, started: float) -> Current | None:
        async with self.make_session() as session:
            current = await read_current(session)
        if current is not None and self.prepare is not None:
            try:
                await self.prepare(current)
            except Exception as exc:
                if database_fault(exc) is not None:
                    raise
                # Answers will read what they need themselves, as they would without it.
                log.warning("could not prepare release %s: %r", current.release.id, exc)
        self.failing = False
        if started >= self._read_at:
            old = self._current
            self._current, self._read_at = current, started
            if (old and old.token) != (current and current.token):
                self.on_change()
        return current

    def start(self) -> None:
        if self.poll_seconds > 0 and self._task is None:
            self._task = asyncio.create_task(self._poll())

    async def stop(self) -> None:
        if self._task is not None:
            self._task.cancel()
            with contextlib.suppress(asyncio.CancelledError):
                await self._task
            self._task = None
        for reading in (self._pending, self._retrying):
            if reading is not None:  # let it finish and give its connection back
                with contextlib.suppress(Exception):
                    await reading

    async def _poll(self) -> None:
        failing = False
        while True:
            try:
                await self.refresh()
            except Exception as exc:  # the database is away for now; requests will say so
                if not failing:  # once per outage, not twice a second
                    log.warning("could not read the current release: %r", exc)
                else:
                    log.debug("still cannot read the current release: %r", exc)
                failing = True
                self.failing = self.failing or database_fault(exc) is not None
            else:
                if failing:
                    log.warning("the current release can be read again")
                failing = False
            await asyncio.sleep(self.poll_seconds / 2)
