"""The releases in the order of their data, and what changed from each to the next.

Each pair of neighbours is compared once, at ingest (analysis.changes over their files), and
the summary kept in `release_changes`: the timeline reads it without parsing any file.
"""

from __future__ import annotations

from collections import Counter
from typing import Any

from sqlalchemy import select
from sqlalchemy.ext.asyncio import AsyncSession

from analysis.changes import Changes, diff_releases
from db.content import parsed
from db.files import release_files
from db.kinds import KEY_FIELDS
from db.tables import ReleaseChangesRow, ReleaseRow


def data_order(release: ReleaseRow) -> tuple[str, str, int]:
    """Releases in the order of their data: its date, then the commit's, then the ingest's."""
    return (release.last_updated, release.commit_date or "", release.id)


async def ordered_releases(session: AsyncSession) -> list[ReleaseRow]:
    return sorted(await session.scalars(select(ReleaseRow)), key=data_order)


def summary(changes: Changes) -> dict[str, Any]:
    """What changed, counted: per task the rows added, removed and changed, and on how many
    rows each field changed."""
    return {
        "files_added": len(changes.files_added),
        "files_removed": len(changes.files_removed),
        "files_changed": None,
        "tasks_added": changes.tasks_added,
        "tasks_removed": changes.tasks_removed,
        "models_added": changes.models_added,
        "models_removed": changes.models_removed,
        "tasks": [
            {
                "task": t.task,
                "added": len(t.added),
                "removed": len(t.removed),
                "changed": len(t.changed),
                "unchanged": t.unchanged,
                "fields_added": t.fields_added,
                "fields_removed": t.fields_removed,
                "field_changes": dict(
                    sorted(Counter(f.field for c in t.changed for f in c.fields).items())
                ),
            }
            for t in changes.tasks
        ],
    }


async def compare(session: AsyncSession, old: ReleaseRow, new: ReleaseRow) -> dict[str, Any]:
    """The summary of what changed from `old` to `new`, with how many files differ."""
    files = [await release_files(session, release_id=r.id) for r in (old, new)]
    result = summary(diff_releases(parsed(files[0]), parsed(files[1]), KEY_FIELDS))
    result["files_changed"] = sum(
        1 for path in set(files[0]) & set(files[1]) if files[0][path] != files[1][path]
    )
    return result


async def record_changes(session: AsyncSession, release: ReleaseRow) -> None:
    """Compare a new release with its neighbours in data order and keep what changed."""
    releases = [r for r in await ordered_releases(session) if r.files_kept]
    at = next((i for i, r in enumerate(releases) if r.id == release.id), None)
    if at is None:
        return
    pairs = [(releases[at - 1], release)] if at > 0 else []
    if at + 1 < len(releases):
        pairs.append((release, releases[at + 1]))
    for old, new in pairs:
        if await session.get(ReleaseChangesRow, (old.id, new.id)) is None:
            changed = await compare(session, old, new)
            session.add(ReleaseChangesRow(from_release=old.id, to_release=new.id, summary=changed))
    await session.flush()


async def timeline(session: AsyncSession) -> list[tuple[ReleaseRow, dict[str, Any] | None]]:
    """Every release in data order, with what changed from the one before (None for the first,
    or when no summary was kept: releases ingested before files were)."""
    releases = await ordered_releases(session)
    kept = {
        (row.from_release, row.to_release): row.summary
        for row in await session.scalars(select(ReleaseChangesRow))
    }
    return [
        (release, kept.get((releases[i - 1].id, release.id)) if i else None)
        for i, release in enumerate(releases)
    ]
