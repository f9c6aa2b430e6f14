"""The per-request context: one database session, the current release and DataLoaders."""

from __future__ import annotations

import asyncio
from collections import defaultdict
from collections.abc import Awaitable, Callable, Hashable
from dataclasses import dataclass, field
from typing import Any, TypeVar, cast

from sqlalchemy.ext.asyncio import AsyncSession
from strawberry.dataloader import DataLoader

from db import reads
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
from graph.errors import BadInput, NoData
from graph.settings import Settings

R = TypeVar("R")


@dataclass
class Context:
    session: AsyncSession
    settings: Settings
    _lock: asyncio.Lock = field(default_factory=asyncio.Lock)
    _memo_lock: asyncio.Lock = field(default_factory=asyncio.Lock)
    _release: ReleaseRow | None = None
    _tasks: dict[int, TaskRow] | None = None
    _memo: dict[Hashable, asyncio.Future[Any]] = field(default_factory=dict)

    async def read(self, fn: Callable[..., Awaitable[R]], /, **kwargs: Any) -> R:
        """Run a `db.reads` function; one at a time, as an AsyncSession requires."""
        async with self._lock:
            return await fn(self.session, **kwargs)

    async def release(self, release_id: int | None = None) -> ReleaseRow:
        """The release asked for, or else the latest (read once per request)."""
        if release_id is not None:
            asked = await self.read(reads.release, release_id=release_id)
            if asked is None:
                raise BadInput(f"there is no release {release_id}; `releases` lists them")
            return asked
        async with self._memo_lock:
            if self._release is None:
                self._release = await self.read(reads.latest_release)
        if self._release is None:
            raise NoData("The database holds no data yet: run `leadgreen ingest` first")
        return self._release

    async def release_id(self, release_id: int | None = None) -> int:
        return (await self.release(release_id)).id

    def __post_init__(self) -> None:
        self.models = DataLoader(self._load_models)
        self.configurations = DataLoader(self._load_configurations)
        self.diffusion_configurations = DataLoader(self._load_diffusion_configurations)
        self.gpus = DataLoader(self._load_gpus)
        self.model_tasks = DataLoader(self._load_model_tasks)
        self.sources = DataLoader(self._load_sources)

    async def _load_models(self, ids: list[int]) -> list[ModelRow]:
        found = await self.read(reads.models_by_id, ids=ids)
        return [found[i] for i in ids]

    async def _load_configurations(self, model_ids: list[int]) -> list[list[ConfigurationRow]]:
        return await self._by_model(ConfigurationRow, model_ids)

    async def _load_diffusion_configurations(
        self, model_ids: list[int]
    ) -> list[list[DiffusionConfigurationRow]]:
        return await self._by_model(DiffusionConfigurationRow, model_ids)

    async def _by_model(self, table: reads.Table, model_ids: list[int]) -> list[list[Any]]:
        rows = await self.read(reads.configurations_of_models, model_ids=model_ids, table=table)
        by_model: dict[int, list[Any]] = defaultdict(list)
        for row in rows:
            by_model[row.model_id].append(row)
        return [by_model[i] for i in model_ids]

    async def _load_gpus(self, names: list[str]) -> list[GpuRow | None]:
        found = {gpu.name: gpu for gpu in await self.read(reads.gpus, names=names)}
        return [found.get(name) for name in names]

    async def _load_model_tasks(self, model_ids: list[int]) -> list[list[ModelTaskRow]]:
        by_model: dict[int, list[ModelTaskRow]] = defaultdict(list)
        for row in await self.read(reads.model_tasks, model_ids=model_ids):
            by_model[row.model_id].append(row)
        return [by_model[i] for i in model_ids]

    async def _load_sources(self, release_ids: list[int]) -> list[SourceRow | None]:
        return [await self.read(reads.source, release_id=r) for r in release_ids]

    async def tasks(self) -> dict[int, TaskRow]:
        """Every task of every release, by id (seven rows a release, read once)."""
        async with self._memo_lock:
            if self._tasks is None:
                self._tasks = {row.id: row for row in await self.read(reads.tasks)}
        return self._tasks

    async def memo(self, key: Hashable, compute: Callable[[], Awaitable[R]]) -> R:
        """`compute()` once per request and key; concurrent callers await the same result."""
        if key not in self._memo:
            self._memo[key] = asyncio.ensure_future(compute())
        return cast(R, await self._memo[key])

    async def all_configurations(
        self, table: reads.Table, where: reads.ConfigurationFilter, release_id: int
    ) -> list[Any]:
        """`reads.all_configurations`, read once per request, release and filter."""
        return await self.memo(
            ("all_configurations", table, where, release_id),
            lambda: self.read(
                reads.all_configurations, release_id=release_id, table=table, where=where
            ),
        )
