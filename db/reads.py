"""Read functions: every query the API runs, keyword-only and testable without GraphQL."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

from sqlalchemy import ColumnElement, Select, func, select, tuple_
from sqlalchemy.ext.asyncio import AsyncSession

from db.documents import LLM_NUMBERS
from db.tables import (
    ConfigurationRow,
    DiffusionConfigurationRow,
    GpuRow,
    ModelRow,
    ModelTaskRow,
    ReleaseRow,
    SourceRow,
    TaskRow,
)

# Columns a client may order by (all measured or stated numbers), per configuration table.
ORDERABLE = LLM_NUMBERS
DIFFUSION_ORDERABLE = (
    "num_gpus",
    "batch_size",
    "inference_steps",
    "ulysses_degree",
    "ring_degree",
    "height",
    "width",
    "avg_power_watts",
    "batch_latency_s",
    "energy_per_output_joules",
    "throughput_outputs_per_sec",
)
AnyConfigurationRow = ConfigurationRow | DiffusionConfigurationRow
Table = type[ConfigurationRow] | type[DiffusionConfigurationRow]


@dataclass(frozen=True)
class ConfigurationFilter:
    """Which configurations to read; None means no constraint."""

    model_ids: Sequence[int] | None = None
    gpu: str | None = None
    num_gpus: int | None = None
    min_max_num_seqs: int | None = None
    max_max_num_seqs: int | None = None
    task: str | None = None
    max_median_itl_ms: float | None = None

    def clauses(self, table: Table = ConfigurationRow) -> list[ColumnElement[bool]]:
        checks: list[ColumnElement[bool]] = []
        if self.model_ids is not None:
            checks.append(table.model_id.in_(self.model_ids))
        if self.gpu is not None:
            checks.append(table.gpu == self.gpu)
        if self.num_gpus is not None:
            checks.append(table.num_gpus == self.num_gpus)
        if self.task is not None:
            task_id = select(TaskRow.id).where(
                TaskRow.release_id == table.release_id, TaskRow.name == self.task
            )
            checks.append(table.task_id == task_id.scalar_subquery())
        if table is ConfigurationRow:
            c = ConfigurationRow
            if self.min_max_num_seqs is not None:
                checks.append(c.max_num_seqs >= self.min_max_num_seqs)
            if self.max_max_num_seqs is not None:
                checks.append(c.max_num_seqs <= self.max_max_num_seqs)
            if self.max_median_itl_ms is not None:
                checks.append(c.median_itl_ms <= self.max_median_itl_ms)
        return checks


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


async def model(
    session: AsyncSession, *, release_id: int, slug: str | None = None, model_id: str | None = None
) -> ModelRow | None:
    query = select(ModelRow).where(ModelRow.release_id == release_id)
    if slug is not None:
        query = query.where(ModelRow.slug == slug)
    if model_id is not None:
        query = query.where(ModelRow.model_id == model_id)
    return await session.scalar(query)


async def models_by_id(session: AsyncSession, *, ids: Sequence[int]) -> dict[int, ModelRow]:
    rows = await session.scalars(select(ModelRow).where(ModelRow.id.in_(ids)))
    return {row.id: row for row in rows}


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


async def model_tasks(session: AsyncSession, *, model_ids: Sequence[int]) -> list[ModelTaskRow]:
    query = select(ModelTaskRow).where(ModelTaskRow.model_id.in_(model_ids))
    return list(await session.scalars(query.order_by(ModelTaskRow.id)))


def _configurations_query(table: Table, release_id: int, where: ConfigurationFilter) -> Select[Any]:
    return select(table).where(table.release_id == release_id, *where.clauses(table))


async def configurations_of_models(
    session: AsyncSession, *, model_ids: Sequence[int], table: Table = ConfigurationRow
) -> list[Any]:
    """All configurations of these models (of whatever release) in one table, in file order."""
    query = select(table).where(table.model_id.in_(model_ids))
    return list(await session.scalars(query.order_by(table.task_id, table.task_row)))


async def configurations(
    session: AsyncSession,
    *,
    release_id: int,
    table: Table = ConfigurationRow,
    where: ConfigurationFilter = ConfigurationFilter(),
    order_by: str = "id",
    descending: bool = False,
    after: tuple[Any, int] | None = None,
    first: int = 50,
) -> list[Any]:
    """One page (keyset) of configurations; reads `first + 1` rows so callers see a next page."""
    column = getattr(table, order_by)
    key = tuple_(column, table.id)
    query = _configurations_query(table, release_id, where)
    if after is not None:
        bound = tuple_(*after)
        query = query.where(key < bound if descending else key > bound)
    if descending:
        query = query.order_by(column.desc(), table.id.desc())
    else:
        query = query.order_by(column, table.id)
    return list(await session.scalars(query.limit(first + 1)))


async def count_configurations(
    session: AsyncSession,
    *,
    release_id: int,
    table: Table = ConfigurationRow,
    where: ConfigurationFilter = ConfigurationFilter(),
) -> int:
    query = (
        select(func.count())
        .select_from(table)
        .where(table.release_id == release_id, *where.clauses(table))
    )
    return int(await session.scalar(query) or 0)


async def all_configurations(
    session: AsyncSession,
    *,
    release_id: int,
    table: Table = ConfigurationRow,
    where: ConfigurationFilter = ConfigurationFilter(),
) -> list[Any]:
    """Every configuration matching `where`, in upstream order (task, then file row)."""
    query = _configurations_query(table, release_id, where)
    return list(await session.scalars(query.order_by(table.task_id, table.task_row)))


async def configuration(
    session: AsyncSession, *, release_id: int, id: int, table: Table = ConfigurationRow
) -> Any:
    """One configuration of the release by id, or None."""
    query = select(table).where(table.id == id, table.release_id == release_id)
    return await session.scalar(query)
