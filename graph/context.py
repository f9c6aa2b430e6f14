"""The per-request context: one database session, the current release and DataLoaders."""

from __future__ import annotations

import asyncio
from collections import defaultdict
from collections.abc import Awaitable, Callable
from dataclasses import dataclass, field
from typing import Any, TypeVar

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
from graph.errors import NoData
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

    async def read(self, fn: Callable[..., Awaitable[R]], /, **kwargs: Any) -> R:
        """Run a `db.reads` function; one at a time, as an AsyncSession requires."""
        async with self._lock:
            return await fn(self.session, **kwargs)

    async def release(self) -> ReleaseRow:
        """The release this request answers from: the latest, read once per request."""
        async with self._memo_lock:
            if self._release is None:
                self._release = await self.read(reads.latest_release)
        if self._release is None:
            raise NoData("The database holds no data yet: run `leadgreen ingest` first")
        return self._release

    async def release_id(self) -> int:
        return (await self.release()).id

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
        rows = await self.read(
            reads.configurations_of_models,
            release_id=await self.release_id(),
            model_ids=model_ids,
            table=table,
        )
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
        """Every task of the current release, by id (a handful of rows, read once)."""
        release_id = await self.release_id()
        async with self._memo_lock:
            if self._tasks is None:
                rows = await self.read(reads.tasks, release_id=release_id)
                self._tasks = {row.id: row for row in rows}
        return self._tasks
