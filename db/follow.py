"""Follow the upstream data: each new data commit of its repository (a mirror of it, fetched
every round), or each new version of its published files (polled with conditional requests),
ingested once as a release, under a database lock, so that followers beside each other (two
replicas' sidecars) ingest each commit once.

A round that fails (the fetch, the repository, a commit's files, the database) changes nothing
that is served: every ingest is one transaction (db.ingest), and the mirror is replaced only by
a whole clone or updated by git's own fetch. `leadgreen follow` (graph.cli) runs the rounds,
logs each and counts it in its metrics.
"""

from __future__ import annotations

import asyncio
import contextlib
import fcntl
import hashlib
import os
import re
import shutil
import subprocess
import tempfile
from collections.abc import AsyncIterator
from dataclasses import dataclass, field
from pathlib import Path

from sqlalchemy import select, text
from sqlalchemy.engine import make_url
from sqlalchemy.exc import SQLAlchemyError
from sqlalchemy.ext.asyncio import AsyncEngine, AsyncSession, async_sessionmaker

from db.database import sessionmaker
from db.errors import IngestError
from db.fetch import CONNECTIONS, Fetcher, Validators, upstream_commit
from db.history import Commit, data_commits, git_environment, ingest_commit
from db.ingest import IngestReport, Origin, ingest
from db.shapes import Manifest
from db.snapshot import load_snapshot, sha256
from db.tables import ReleaseRow

# The PostgreSQL advisory lock every follower takes for a round (any 64-bit number of our own:
# the first eight bytes of sha256("leadgreen follow")).
LOCK_KEY = int.from_bytes(hashlib.sha256(b"leadgreen follow").digest()[:8], "big", signed=True)
# The transports a mirror may be fetched over: never plain http, nor `ext::` commands.
_PROTOCOLS = ("file", "https", "ssh")
_SLUG = re.compile(r"[^A-Za-z0-9._-]+")
_CREDENTIALS = re.compile(r"([a-z][a-z0-9+.-]*://)[^/@\s]+@", re.I)
# What fails a round (and leaves the data served as it was): the source, its files, the
# database, the cache directory.
FAILURES = (IngestError, SQLAlchemyError, OSError)
# Files a files follower asks about at once (as many as its connections).
POLLING = CONNECTIONS


class Busy(Exception):
    """Another follower holds the lock (only when not waiting for it)."""


@contextlib.asynccontextmanager
async def exclusive(engine: AsyncEngine, *, wait: bool = True) -> AsyncIterator[None]:
    """Hold the followers' lock of this database: on PostgreSQL a session advisory lock (on a
    connection of its own, released with it if the process dies), on a SQLite file an
    exclusive lock of the file `<database>.follow-lock` beside it. Without `wait`, Busy when
    another follower holds it."""
    if engine.dialect.name == "postgresql":
        async with engine.connect() as connection:
            if wait:
                await connection.execute(text("SELECT pg_advisory_lock(:key)"), {"key": LOCK_KEY})
            else:
                taken = await connection.scalar(
                    text("SELECT pg_try_advisory_lock(:key)"), {"key": LOCK_KEY}
                )
                if not taken:
                    raise Busy("another follower holds the database's lock")
            await connection.commit()  # the lock is the session's: it outlasts the transaction
            try:
                yield
            finally:
                await connection.execute(text("SELECT pg_advisory_unlock(:key)"), {"key": LOCK_KEY})
                await connection.commit()
        return
    database = make_url(engine.url).database
    if database in (None, "", ":memory:"):  # a database no other process can open
        yield
        return
    descriptor = os.open(f"{database}.follow-lock", os.O_RDWR | os.O_CREAT, 0o644)
    try:
        if wait:
            await asyncio.to_thread(fcntl.flock, descriptor, fcntl.LOCK_EX)
        else:
            try:
                fcntl.flock(descriptor, fcntl.LOCK_EX | fcntl.LOCK_NB)
            except BlockingIOError:
                raise Busy("another follower holds the database's lock") from None
        yield
    finally:
        os.close(descriptor)  # releases the lock


def _network_git(*args: str, where: str) -> None:
    """A git command that may reach the source (over the allowed transports only); its failure
    an IngestError naming `where` and git's own reason."""
    verb = next(arg for arg in args if not arg.startswith("-"))
    command = ["git", "-c", "protocol.allow=never"]
    for name in _PROTOCOLS:
        command += ["-c", f"protocol.{name}.allow=always"]
    # Never a prompt (a password, an unknown host key): a round fails instead of hanging.
    env = git_environment() | {"GIT_SSH_COMMAND": "ssh -o BatchMode=yes"}
    try:
        done = subprocess.run(
            [*command, *args],
            stdin=subprocess.DEVNULL,
            capture_output=True,
            env=env,
            check=False,
            timeout=600,
        )
    except FileNotFoundError as exc:
        raise IngestError(where, "git is not installed (no `git` on PATH)") from exc
    except subprocess.TimeoutExpired:
        raise IngestError(where, f"git {verb} took longer than 600 s") from None
    if done.returncode != 0:
        lines = done.stderr.decode(errors="replace").strip().splitlines()
        fatal = [line for line in lines if line.startswith("fatal:")]
        message = (fatal or lines[-1:] or ["no message"])[0]
        raise IngestError(redacted(where), f"git {verb} failed: {redacted(message)}")


def redacted(text: str) -> str:
    """`text` with the user and password of any URL in it replaced (logs must not carry them)."""
    return _CREDENTIALS.sub(r"\1***@", text)


class Mirror:
    """A mirror clone of a git repository (URL or path) in `cache`, brought up to date by
    `update`: cloned whole into a temporary directory and renamed at first, then fetched."""

    def __init__(self, source: str, cache: Path) -> None:
        self.source = source
        digest = hashlib.sha256(source.encode()).hexdigest()[:12]
        name = _SLUG.sub("-", source.rstrip("/").rsplit("/", 1)[-1])[:40] or "repository"
        self.path = cache / f"{name}-{digest}.git"

    def update(self) -> None:
        if self.path.is_dir():
            _network_git(
                f"--git-dir={self.path}", "fetch", "--quiet", "--prune", "origin", where=self.source
            )
            return
        self.path.parent.mkdir(parents=True, exist_ok=True)
        staging = Path(tempfile.mkdtemp(prefix=".clone-", dir=self.path.parent))
        try:
            _network_git(
                "clone", "--quiet", "--mirror", "--", self.source, str(staging), where=self.source
            )
            staging.rename(self.path)
        finally:
            shutil.rmtree(staging, ignore_errors=True)


@dataclass(frozen=True)
class Target:
    """Where a follower writes, and the manifest each release is ingested with."""

    engine: AsyncEngine
    manifest: Manifest | None = None
    manifest_raw: bytes | None = None
    manifest_name: str = "manifest"

    def sessions(self) -> async_sessionmaker[AsyncSession]:
        return sessionmaker(self.engine)


@dataclass
class Round:
    """What one round did: the releases it ingested (or found stored), the commits whose files
    were refused (with why), and what made it fail."""

    reports: list[IngestReport] = field(default_factory=list)
    commits: list[str] = field(default_factory=list)
    refused: dict[str, str] = field(default_factory=dict)
    error: Exception | None = None

    @property
    def outcome(self) -> str:
        if self.error is not None or self.refused:
            return "failed"
        return "ingested" if any(not r.unchanged for r in self.reports) else "unchanged"


class GitFollower:
    """Each round: update the mirror, then under the lock ingest every data commit of its HEAD's
    first-parent line that no release holds yet, oldest first. A commit whose files are refused
    is reported and not tried again by this follower (later commits still are)."""

    def __init__(self, target: Target, source: str, cache: Path) -> None:
        self.target = target
        self.mirror = Mirror(source, cache)
        self.done: set[str] = set()  # ingested, found stored or refused by this follower

    async def round(self) -> Round:
        result = Round()
        try:
            await asyncio.to_thread(self.mirror.update)
            commits = await asyncio.to_thread(data_commits, self.mirror.path)
            async with exclusive(self.target.engine):
                stored = await self._stored()
                for commit in commits:
                    if commit.sha in stored or commit.sha in self.done:
                        continue
                    await self._ingest(commit, result)
        except FAILURES as exc:
            result.error = exc
        return result

    async def _stored(self) -> set[str]:
        async with self.target.sessions()() as session:
            found = await session.scalars(
                select(ReleaseRow.upstream_commit).where(ReleaseRow.upstream_commit.is_not(None))
            )
            return {sha for sha in found if sha is not None}

    async def _ingest(self, commit: Commit, result: Round) -> None:
        try:
            target = self.target
            report = await ingest_commit(
                target.sessions(),
                self.mirror.path,
                commit,
                target.manifest,
                target.manifest_raw,
                target.manifest_name,
            )
        except IngestError as exc:
            result.refused[commit.sha] = str(exc)
        else:
            result.reports.append(report)
            result.commits.append(commit.sha)
        self.done.add(commit.sha)


class FilesFollower:
    """Each round: a conditional GET (If-None-Match, If-Modified-Since with what it last
    answered) of index.json, then of every other file of the snapshot stored last, `polling` at
    a time; when one changed (answered with bytes other than those stored), the whole snapshot
    read and ingested (data already stored writes nothing), under the lock. What a round learnt
    is kept only once its snapshot is stored (or nothing changed), so a failed round is asked
    again in full."""

    def __init__(
        self, target: Target, url: str, *, timeout: float = 20.0, polling: int = POLLING
    ) -> None:
        self.target = target
        self.url = url.rstrip("/")
        self.timeout, self.polling = timeout, polling
        # Each file of the snapshot stored last: its sha256 and the validators answered with it.
        self.known: dict[str, tuple[str, Validators]] = {}

    async def round(self) -> Round:
        result = Round()
        try:
            # Asked once (the next round asks again); a snapshot is read with retries.
            async with Fetcher(self.url, timeout=self.timeout, attempts=1) as polled:
                if not await self._changed(polled):
                    self._learn(polled.validators)
                    return result
            target = self.target
            async with (
                exclusive(target.engine),
                Fetcher(self.url, timeout=self.timeout) as fetcher,
            ):
                snapshot = await load_snapshot(self.url, source=fetcher)
                origin = Origin(commit=upstream_commit(self.url))
                async with target.sessions()() as session:
                    report = await ingest(
                        session,
                        snapshot,
                        target.manifest,
                        target.manifest_raw,
                        target.manifest_name,
                        origin=origin,
                    )
            result.reports.append(report)
            self.known = {
                path: (snapshot.sha256(path), fetcher.validators.get(path, {}))
                for path in snapshot.files
            }
        except FAILURES as exc:
            result.error = exc
        return result

    async def _changed(self, fetcher: Fetcher) -> bool:
        """Whether index.json, or else any other file stored last, changed upstream."""
        if await self._file_changed(fetcher, "index.json"):
            return True
        others = [path for path in self.known if path != "index.json"]
        gate = asyncio.Semaphore(self.polling)

        async def changed(path: str) -> bool:
            async with gate:
                return await self._file_changed(fetcher, path)

        try:
            async with asyncio.TaskGroup() as group:
                tasks = [group.create_task(changed(path)) for path in others]
        except ExceptionGroup as failed:
            raise failed.exceptions[0] from None
        return any(task.result() for task in tasks)

    async def _file_changed(self, fetcher: Fetcher, path: str) -> bool:
        digest, asked = self.known.get(path, ("", {}))
        body = await fetcher.read_if_changed(path, asked)
        return body is not None and sha256(body) != digest

    def _learn(self, validators: dict[str, Validators]) -> None:
        """Keep the validators of files answered as stored (a server's new ETag for the same
        bytes, or the first one for a file read by the snapshot)."""
        for path, answered in validators.items():
            if path in self.known:
                self.known[path] = (self.known[path][0], answered)
