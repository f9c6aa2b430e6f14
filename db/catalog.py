"""A release in memory: its models, tasks, GPUs, source and configurations, read once.

A release never changes once ingested and holds about 2,000 rows, so the API reads each
release once per process and answers every request from these rows: no SQL on the request
path. A new ingest is a new release, and so a new catalog.
"""

from __future__ import annotations

import asyncio
from collections import OrderedDict, defaultdict
from collections.abc import Callable, Hashable, Iterable, Sequence
from dataclasses import dataclass, field
from datetime import datetime
from operator import attrgetter
from typing import Any, TypeVar

from sqlalchemy.ext.asyncio import AsyncSession

from db import reads
from db.reads import AnyConfigurationRow, Table
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

T = TypeVar("T")


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

    def accepts(self, row: AnyConfigurationRow) -> bool:
        """Whether `row` meets every condition but `task` (the catalog picks the task's rows)."""
        if self.model_ids is not None and row.model_id not in self.model_ids:
            return False
        if self.gpu is not None and row.gpu != self.gpu:
            return False
        if self.num_gpus is not None and row.num_gpus != self.num_gpus:
            return False
        if isinstance(row, ConfigurationRow):
            if self.min_max_num_seqs is not None and row.max_num_seqs < self.min_max_num_seqs:
                return False
            if self.max_max_num_seqs is not None and row.max_num_seqs > self.max_max_num_seqs:
                return False
            if self.max_median_itl_ms is not None and not row.median_itl_ms <= (
                self.max_median_itl_ms
            ):
                return False
        return True


@dataclass(eq=False)
class Catalog:
    """One release's rows, in the order the read functions give them, with their indexes.

    The rows are detached from any session; nothing may change them. `once` keeps what the
    layers above derive from the rows, for as long as the catalog lives.
    """

    release: ReleaseRow
    source: SourceRow | None
    # The release's tasks and models by name and slug; every GPU type by name.
    tasks: Sequence[TaskRow]
    models: Sequence[ModelRow]
    gpus: Sequence[GpuRow]
    model_tasks: Sequence[ModelTaskRow]
    # In upstream order: by task, then by row of the task file.
    llm: Sequence[ConfigurationRow]
    diffusion: Sequence[DiffusionConfigurationRow]
    _derived: dict[Hashable, Any] = field(default_factory=dict, repr=False)

    def __post_init__(self) -> None:
        self.task_by_id = {t.id: t for t in self.tasks}
        self.task_by_name = {t.name: t for t in self.tasks}
        self.model_by_id = {m.id: m for m in self.models}
        self.model_by_slug = {m.slug: m for m in self.models}
        self.model_by_model_id = {m.model_id: m for m in self.models}
        self.gpu_by_name = {g.name: g for g in self.gpus}
        self.in_manifest = sorted(
            (m for m in self.models if m.manifest_position is not None),
            key=lambda m: m.manifest_position or 0,
        )
        self.tasks_of_model: dict[int, list[ModelTaskRow]] = defaultdict(list)
        for model_task in self.model_tasks:
            self.tasks_of_model[model_task.model_id].append(model_task)
        tables: list[tuple[Table, Sequence[Any]]] = [
            (ConfigurationRow, self.llm),
            (DiffusionConfigurationRow, self.diffusion),
        ]
        self._by_task = {
            (table, task_id): rows
            for table, all_rows in tables
            for task_id, rows in _grouped(all_rows, attrgetter("task_id")).items()
        }
        self._by_model = {
            (table, model_id): rows
            for table, all_rows in tables
            for model_id, rows in _grouped(all_rows, attrgetter("model_id")).items()
        }
        self.llm_by_id = {row.id: row for row in self.llm}

    def model(self, *, slug: str | None = None, model_id: str | None = None) -> ModelRow | None:
        """The model with this slug and/or Hugging Face id, or None."""
        found = None
        if slug is not None:
            found = self.model_by_slug.get(slug)
            if found is None:
                return None
        if model_id is not None:
            by_id = self.model_by_model_id.get(model_id)
            if by_id is None or (found is not None and by_id is not found):
                return None
            found = by_id
        return found

    def of_model(self, table: Table, model_id: int) -> Sequence[Any]:
        """A model's configurations in one table, in upstream order."""
        return self._by_model.get((table, model_id), ())

    def configurations(
        self, table: Table = ConfigurationRow, where: ConfigurationFilter = ConfigurationFilter()
    ) -> list[Any]:
        """Every configuration of the table matching `where`, in upstream order."""
        task_id = None
        if where.task is not None:
            task = self.task_by_name.get(where.task)
            if task is None:
                return []
            task_id = task.id
        rows: Sequence[Any]
        if where.model_ids is not None and len(where.model_ids) == 1:
            rows = self.of_model(table, where.model_ids[0])
            if task_id is not None:
                rows = [r for r in rows if r.task_id == task_id]
        elif task_id is not None:
            rows = self._by_task.get((table, task_id), ())
        else:
            rows = self.llm if table is ConfigurationRow else self.diffusion
        return [r for r in rows if where.accepts(r)]

    def page(
        self,
        table: Table = ConfigurationRow,
        *,
        where: ConfigurationFilter = ConfigurationFilter(),
        order_by: str = "id",
        descending: bool = False,
        after: tuple[Any, int] | None = None,
        first: int = 50,
    ) -> tuple[list[Any], int]:
        """One page (keyset, ties broken by id) of `first + 1` rows, so that callers see a next
        page, and how many rows match `where` over all pages."""
        rows = self.configurations(table, where)
        key = attrgetter(order_by, "id")
        ordered = sorted(rows, key=key, reverse=descending)
        if after is not None:
            if descending:
                ordered = [r for r in ordered if key(r) < after]
            else:
                ordered = [r for r in ordered if key(r) > after]
        return ordered[: first + 1], len(rows)

    def once(self, key: Hashable, make: Callable[[], T]) -> T:
        """`make()` the first time `key` is asked for; the same value every time after."""
        try:
            return self._derived[key]  # type: ignore[no-any-return]
        except KeyError:
            value = self._derived[key] = make()
            return value


def _grouped(rows: Iterable[T], key: Callable[[T], Hashable]) -> dict[Hashable, list[T]]:
    groups: dict[Hashable, list[T]] = defaultdict(list)
    for row in rows:
        groups[key(row)].append(row)
    return groups


class NoSuchRelease(LookupError):
    pass


async def load_catalog(session: AsyncSession, release_id: int) -> Catalog:
    """Read a release's rows (eight statements); raises NoSuchRelease for an unknown id."""
    release = await reads.release(session, release_id=release_id)
    if release is None:
        raise NoSuchRelease(release_id)
    return Catalog(
        release=release,
        source=await reads.source(session, release_id=release_id),
        tasks=await reads.tasks(session, release_id=release_id),
        models=await reads.models(session, release_id=release_id),
        gpus=await reads.gpus(session),
        model_tasks=await reads.model_tasks(session, release_id=release_id),
        llm=await reads.all_configurations(session, release_id=release_id, table=ConfigurationRow),
        diffusion=await reads.all_configurations(
            session, release_id=release_id, table=DiffusionConfigurationRow
        ),
    )


# What names one ingest: its release id, and the digest and time of the ingest (so that another
# database, or the same one emptied and filled again, cannot be mistaken for it).
Key = tuple[int, str, datetime]


class Catalogs:
    """The catalogs of the last `size` releases asked for, each read once.

    Concurrent requests for a release not yet in memory share one read, made in a session of
    its own (so that a request cancelled meanwhile cannot break it for the others) and given
    up after `timeout` seconds (so that a database that stopped answering cannot hold every
    later request of the release; the next request after a failure reads again).
    """

    def __init__(self, size: int = 4, timeout: float = 30.0) -> None:
        self.size, self.timeout = size, timeout
        self._catalogs: OrderedDict[Key, Catalog] = OrderedDict()
        self._loading: dict[Key, asyncio.Future[Catalog]] = {}

    async def get(self, session: AsyncSession, release: ReleaseRow) -> Catalog:
        key = (release.id, release.digest, release.ingested_at)
        catalog = self._catalogs.get(key)
        if catalog is not None:
            self._catalogs.move_to_end(key)
            return catalog
        loading = self._loading.get(key)
        if loading is None or loading.get_loop() is not asyncio.get_running_loop():
            loading = asyncio.ensure_future(self._load(session, key))
            self._loading[key] = loading
            loading.add_done_callback(lambda done: self._loaded(key, done))
        return await asyncio.shield(loading)

    async def _load(self, session: AsyncSession, key: Key) -> Catalog:
        async with (
            asyncio.timeout(self.timeout),
            AsyncSession(session.bind, expire_on_commit=False) as own,
        ):
            return await load_catalog(own, key[0])

    def _loaded(self, key: Key, done: asyncio.Future[Catalog]) -> None:
        if self._loading.get(key) is done:
            del self._loading[key]
        if done.cancelled() or done.exception() is not None:
            return
        self._catalogs[key] = done.result()
        while len(self._catalogs) > self.size:
            self._catalogs.popitem(last=False)

    def clear(self) -> None:
        self._catalogs.clear()
