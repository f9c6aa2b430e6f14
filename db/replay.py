"""The upstream history as releases: one per commit that changed the data, oldest first."""

from __future__ import annotations

from collections.abc import AsyncIterator, Callable
from pathlib import Path

from sqlalchemy.ext.asyncio import AsyncSession, async_sessionmaker

from db.history import Commit, GitFetcher, data_commits
from db.ingest import IngestReport, Origin, ingest
from db.shapes import Manifest
from db.snapshot import load_snapshot


async def ingest_history(
    make_session: async_sessionmaker[AsyncSession],
    git_dir: Path,
    manifest: Manifest | None = None,
    manifest_raw: bytes | None = None,
    manifest_name: str = "manifest",
    *,
    progress: Callable[[int, int, Commit], None] = lambda _n, _of, _commit: None,
) -> AsyncIterator[IngestReport]:
    """Ingest each commit of `git_dir` that changed `public/data`, oldest first, each in its own
    transaction (a commit already ingested changes nothing); the manifest is each release's
    provenance only where it describes that release's data."""
    commits = data_commits(git_dir)
    for n, commit in enumerate(commits, start=1):
        progress(n, len(commits), commit)
        async with GitFetcher(git_dir, commit.sha) as fetcher:
            snapshot = await load_snapshot(fetcher.location, source=fetcher)
        origin = Origin(commit=commit.sha, date=commit.date, subject=commit.subject)
        async with make_session() as session:
            yield await ingest(
                session, snapshot, manifest, manifest_raw, manifest_name, origin=origin
            )
