"""Read functions: every query the API runs, keyword-only and testable without GraphQL.

Requests are answered from a release's catalog (db/catalog.py), which these functions fill.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from sqlalchemy import Text, cast, select
from sqlalchemy.ext.asyncio import AsyncSession

from db.kinds import Kind
from db.rows import Row, RowMaker, columns
from db.tables import (
    GpuRow,
    ModelRow,
    ModelTaskRow,
    ReleaseFileRow,
    ReleaseRow,
    SourceRow,
    TaskRow,
)

# Configurations read per fetch, when a catalog is read.
ROWS_READ = 5_000


async def latest_release(session: AsyncSession) -> ReleaseRow | None:
    """The release with the newest data; of two with the same data date, the later ingest."""
    query = select(ReleaseRow).order_by(ReleaseRow.last_updated.desc(), ReleaseRow.id.desc())
    return await session.scalar(query.limit(1))


async def source(session: AsyncSession, *, release_id: int) -> SourceRow | None:
    return await session.get(SourceRow, release_id)


async def release(session: AsyncSession, *, release_id: int) -> ReleaseRow | None:
    return await session.get(ReleaseRow, release_id)


async def models(
    session: AsyncSession, *, release_id: int, in_manifest: bool | None = None
) -> list[ModelRow]:
    query = select(ModelRow).where(ModelRow.release_id == release_id)
    if in_manifest is not None:
        position = ModelRow.manifest_position
        query = query.where(position.is_not(None) if in_manifest else position.is_(None))
    order = ModelRow.manifest_position if in_manifest else ModelRow.slug
    return list(await session.scalars(query.order_by(order)))


async def gpus(session: AsyncSession, *, names: Sequence[str] | None = None) -> list[GpuRow]:
    query = select(GpuRow).order_by(GpuRow.name)
    if names is not None:
        query = query.where(GpuRow.name.in_(names))
    return list(await session.scalars(query))


async def tasks(session: AsyncSession, *, release_id: int | None = None) -> list[TaskRow]:
    """The tasks of a release, or of every release, by name."""
    query = select(TaskRow).order_by(TaskRow.release_id, TaskRow.name)
    if release_id is not None:
        query = query.where(TaskRow.release_id == release_id)
    return list(await session.scalars(query))


async def releases(session: AsyncSession) -> list[ReleaseRow]:
    """Every release, newest data first (the first is the one served by default)."""
    query = select(ReleaseRow).order_by(ReleaseRow.last_updated.desc(), ReleaseRow.id.desc())
    return list(await session.scalars(query))


async def release_files(session: AsyncSession, *, release_id: int) -> list[ReleaseFileRow]:
    """A release's files (path, size, digest), by path."""
    query = select(ReleaseFileRow).where(ReleaseFileRow.release_id == release_id)
    return list(await session.scalars(query.order_by(ReleaseFileRow.path)))


async def model_tasks(session: AsyncSession, *, release_id: int) -> list[ModelTaskRow]:
    """The release's models' per-task files, in ingest order."""
    query = select(ModelTaskRow).join(ModelRow).where(ModelRow.release_id == release_id)
    return list(await session.scalars(query.order_by(ModelTaskRow.id)))


async def all_configurations(session: AsyncSession, *, release_id: int, kind: Kind) -> list[Row]:
    """Every configuration of the release of one kind, in upstream order (task, then file row),
    as the kind's row objects (db.rows): no ORM, histograms as their JSON text, read a batch at
    a time (db.rows.RowMaker shares their repeated strings)."""
    table = kind.table
    selected = [
        cast(getattr(table, name.removesuffix("_json")), Text)
        if name.endswith("_json") or name == "extra"
        else getattr(table, name)
        for name in columns(kind.row_type)
    ]
    query = select(*selected).where(table.release_id == release_id)
    query = query.order_by(table.task_id, table.task_row).execution_options(yield_per=ROWS_READ)
    make = RowMaker(kind.row_type)
    rows: list[Row] = []
    result = await session.stream(query)
    async for values in result.partitions():
        rows += map(make, values)
    return rows


async def configuration_versions(
    session: AsyncSession, *, kind: Kind, key: str
) -> list[tuple[ReleaseRow, Any, str]]:
    """Every release's row of the configuration with this key: (release, row, model id)."""
    table = kind.table
    query = (
        select(ReleaseRow, table, ModelRow.model_id)
        .join(table, table.release_id == ReleaseRow.id)
        .join(ModelRow, ModelRow.id == table.model_id)
        .where(table.key == key)
    )
    return [(release, row, model_id) for release, row, model_id in await session.execute(query)]


async def release_by_key(session: AsyncSession, *, prefix: str) -> ReleaseRow | None:
    """The release whose digest starts with `prefix` (hex), if exactly one does."""
    if not prefix or any(c not in "0123456789abcdef" for c in prefix):
        return None
    found = list(
        await session.scalars(
            select(ReleaseRow).where(ReleaseRow.digest.startswith(prefix)).limit(2)
        )
    )
    return found[0] if len(found) == 1 else None
