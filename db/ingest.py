"""Write a snapshot and its provenance into the tables, in one transaction, one task at a time.

The release keeps its files as published (blobs, stored once whatever the releases holding
them), its rows with their stable keys, and what is known of its origin: the upstream commit,
its date and subject, where the files can be read, when they were retrieved, and the manifest's
statements only when they describe this data (db.provenance).
"""

from __future__ import annotations

import asyncio
import re
from dataclasses import asdict, dataclass, field
from datetime import UTC, datetime

from sqlalchemy import select
from sqlalchemy.ext.asyncio import AsyncSession

from analysis import identities
from db.bulk import writing
from db.catalog import store_catalog
from db.files import store_files
from db.layout import dumped
from db.provenance import (
    derived_source,
    manifest_applies,
    manifest_source,
    source_url,
)
from db.shapes import Manifest
from db.snapshot import Snapshot, combined_digest
from db.tables import ModelRow, ReleaseRow
from db.timeline import record_changes
from db.writes import add_models, add_task

# Rows written per statement.
BATCH = 2_000


@dataclass(frozen=True)
class Origin:
    """Where a snapshot came from, beyond its location: an upstream commit's date and subject."""

    commit: str | None = None
    date: str | None = None
    subject: str | None = None


@dataclass
class IngestReport:
    release_id: int
    unchanged: bool
    last_updated: str
    digest: str
    configurations: dict[str, int] = field(default_factory=dict)
    models: int = 0
    warnings: list[str] = field(default_factory=list)
    manifest_applies: bool = False
    same_data_as: int | None = None

    def summary(self) -> str:
        if self.unchanged:
            return (
                f"unchanged: this data is already stored as release {self.release_id} "
                f"(data of {self.last_updated}); nothing was written"
            )
        counts = ", ".join(f"{task}: {n}" for task, n in self.configurations.items())
        same = (
            f"; the same data as release {self.same_data_as}, written differently"
            if self.same_data_as is not None
            else ""
        )
        return (
            f"ingested release {self.release_id} (data of {self.last_updated}): "
            f"{self.models} models, configurations {counts}{same}"
        )


def slugify(text: str) -> str:
    return re.sub(r"[^a-z0-9]+", "-", text.lower()).strip("-")


async def ingest(
    session: AsyncSession,
    snapshot: Snapshot,
    manifest: Manifest | None = None,
    manifest_raw: bytes | None = None,
    manifest_name: str = "manifest",
    *,
    origin: Origin | None = None,
) -> IngestReport:
    """Store `snapshot` as a new release, unless identical data is stored already.

    A manifest whose statements do not describe the snapshot's data (db.provenance) still
    names the models (slugs, names) but is not the release's provenance; `manifest_name`
    (its path) is what warnings about it name.
    """
    origin = origin or Origin(commit=snapshot.commit)
    applies = manifest is not None and manifest_applies(manifest, snapshot).applies
    warnings = list(snapshot.warnings)
    if manifest is not None and not applies:
        why = manifest_applies(manifest, snapshot).reason
        warnings.append(f"{manifest_name}: not this release's provenance: {why}")
    digest = combined_digest(snapshot, manifest_raw if applies else None)
    async with session.begin():
        same = ReleaseRow.digest == digest
        if not applies:
            # Files without a manifest add nothing to a release that has the same files.
            same = same | (ReleaseRow.data_digest == snapshot.digest)
        existing = await session.scalar(select(ReleaseRow).where(same).limit(1))
        if existing is not None:
            if existing.upstream_commit is None and origin.commit is not None:
                # The same files, now known to be a commit's: that is what they are.
                existing.upstream_commit, existing.commit_date = origin.commit, origin.date
                existing.commit_subject = origin.subject
                existing.source_url = source_url(origin.commit, snapshot.location)
            return IngestReport(existing.id, True, existing.last_updated, digest)
        # The content digest is computed aside while the release is written (db.content).
        content = asyncio.create_task(snapshot.content_digest())
        try:
            report = IngestReport(
                0,
                False,
                snapshot.index.last_updated,
                digest,
                warnings=warnings,
                manifest_applies=applies,
            )
            release = await _add_release(
                session, snapshot, digest, manifest if applies else None, origin
            )
            report.release_id = release.id
            models = await add_models(
                session, release.id, snapshot, manifest, applies, manifest_name
            )
            report.models = len(models)
            checks = await _add_tasks(session, release.id, snapshot, models, report)
            release.checks = [asdict(v) for v in checks]
            report.warnings += [_describe(v) for v in checks]
            await _same_data(session, release, await content)
            report.same_data_as = release.same_data_as
            await record_changes(session, release)
            await store_catalog(session, release.id)  # what a server reads whole (db.catalog)
        finally:
            content.cancel()  # when the release was not written whole: its digest is not needed
            await asyncio.gather(content, return_exceptions=True)
    return report


async def _add_tasks(
    session: AsyncSession,
    release_id: int,
    snapshot: Snapshot,
    models: dict[str, ModelRow],
    report: IngestReport,
) -> list[identities.Violations]:
    """The release's files and tasks, written; what the rows' identities checks found. On
    PostgreSQL the files and each task's rows are stored while the next task is read."""
    checks: list[identities.Violations] = []
    async with writing(session):
        await store_files(session, release_id, snapshot)
        for name in snapshot.task_names:
            task = snapshot.start_task(name)
            written = await add_task(session, release_id, task, models, report.warnings)
            report.configurations[task.name] = written
            if task.kind.checks_identities:
                rows = [dumped(row) for row in task.rows]
                checks += identities.check(task.path, rows)
            del task
    return checks


async def _same_data(session: AsyncSession, release: ReleaseRow, content_digest: str) -> None:
    """The release's content digest, and the first release stored before with the same."""
    release.same_data_as = await session.scalar(
        select(ReleaseRow.id)
        .where(ReleaseRow.content_digest == content_digest, ReleaseRow.id != release.id)
        .order_by(ReleaseRow.id)
        .limit(1)
    )
    release.content_digest = content_digest


async def _add_release(
    session: AsyncSession,
    snapshot: Snapshot,
    digest: str,
    manifest: Manifest | None,
    origin: Origin,
) -> ReleaseRow:
    """The release row and its source: the manifest's when it describes the data."""
    now = datetime.now(UTC).replace(tzinfo=None)
    url = source_url(origin.commit, snapshot.location)
    retrieved = manifest.source.retrieved if manifest else now.date().isoformat()
    release = ReleaseRow(
        digest=digest,
        data_digest=snapshot.digest,
        location=snapshot.location,
        upstream_commit=origin.commit,
        commit_date=origin.date,
        commit_subject=origin.subject,
        source_url=url,
        last_updated=snapshot.index.last_updated,
        ingested_at=now,
        retrieved=retrieved,
        manifest_version=manifest.version if manifest else None,
        manifest_updated=manifest.updated if manifest else None,
        manifest_data_version=manifest.data_version if manifest else None,
        manifest_applies=manifest is not None,
        files_kept=True,
        checks=[],
    )
    session.add(release)
    await session.flush()
    session.add(
        manifest_source(release.id, manifest)
        if manifest is not None
        else derived_source(release.id, snapshot, url, retrieved)
    )
    return release


def _describe(v: identities.Violations) -> str:
    note = f" ({v.note})" if v.note else ""
    return (
        f"{v.file}: {len(v.rows)} of {v.checked} rows break {v.statement}, by up to "
        f"{v.max_relative_difference:.3g} relative; first rows {v.rows[:5]}{note}"
    )
