"""Root-field resolvers: read the arguments, call a `db.reads` function, convert."""

from __future__ import annotations

from enum import Enum
from typing import cast

import strawberry

from db import reads
from db.reads import ConfigurationFilter
from graph import cursor
from graph.context import Context
from graph.errors import BadInput
from graph.types.configuration import (
    Configuration,
    ConfigurationConnection,
    ConfigurationEdge,
    PageInfo,
)
from graph.types.gpu import Gpu
from graph.types.model import Model
from graph.types.source import LeadGreenIndex, Source
from graph.types.task import Task

# One member per orderable column, so the enum cannot drift from what db.reads accepts.
ConfigurationField: type[Enum] = strawberry.enum(  # type: ignore[call-overload]
    Enum("ConfigurationField", {name.upper(): name for name in ("id", *reads.ORDERABLE)}),
    description="A configuration field to order by (each named as the field of the same name).",
)


@strawberry.enum(description="Sort direction.")
class Direction(Enum):
    ASC = "asc"
    DESC = "desc"


@strawberry.input(description="How to order configurations; ties are broken by id.")
class ConfigurationOrder:
    field: ConfigurationField = strawberry.field(description="Field to order by.")  # type: ignore[valid-type]
    direction: Direction = strawberry.field(default=Direction.ASC, description="Direction.")


@strawberry.input(description="Which configurations to return; every condition given must hold.")
class ConfigurationFilterInput:
    model: str | None = strawberry.field(default=None, description="Model slug.")
    model_id: str | None = strawberry.field(default=None, description="Hugging Face model id.")
    gpu: str | None = strawberry.field(default=None, description="GPU type, e.g. `H100`.")
    num_gpus: int | None = strawberry.field(default=None, description="Number of GPUs.")
    max_num_seqs_at_least: int | None = strawberry.field(
        default=None, description="Smallest max_num_seqs (inclusive)."
    )
    max_num_seqs_at_most: int | None = strawberry.field(
        default=None, description="Largest max_num_seqs (inclusive)."
    )
    task: str | None = strawberry.field(
        default=None, description="Task name, e.g. `lm-arena-chat`."
    )
    max_median_itl_ms: float | None = strawberry.field(
        default=None, description="Largest median inter-token latency, in ms (inclusive)."
    )


async def current_source(context: Context) -> Source:
    release = await context.release()
    row = await context.sources.load(release.id)
    assert row is not None, "every release is ingested with its source"
    return Source.from_rows(row, release)


async def model(context: Context, slug: str | None, model_id: str | None) -> Model | None:
    if (slug is None) == (model_id is None):
        raise BadInput("give exactly one of `slug` and `modelId`")
    row = await context.read(
        reads.model, release_id=await context.release_id(), slug=slug, model_id=model_id
    )
    return Model.from_row(row) if row else None


async def models(context: Context) -> list[Model]:
    rows = await context.read(reads.models, release_id=await context.release_id())
    return [Model.from_row(row) for row in rows]


async def index(context: Context) -> LeadGreenIndex:
    release = await context.release()
    rows = await context.read(reads.models, release_id=release.id, in_manifest=True)
    return LeadGreenIndex(
        version=release.manifest_version,
        updated=release.manifest_updated,
        data_version=release.manifest_data_version,
        source=await current_source(context),
        models=[Model.from_row(row) for row in rows],
    )


async def gpus(context: Context) -> list[Gpu]:
    return [Gpu.from_row(row) for row in await context.read(reads.gpus)]


async def tasks(context: Context) -> list[Task]:
    return [Task.from_row(row) for row in (await context.tasks()).values()]


async def _filter(
    context: Context, given: ConfigurationFilterInput | None, release_id: int
) -> ConfigurationFilter | None:
    """The db filter for `given`, or None when it names a model that does not exist."""
    if given is None:
        return ConfigurationFilter()
    if given.max_median_itl_ms is not None and not given.max_median_itl_ms >= 0:
        raise BadInput(f"maxMedianItlMs must be a number >= 0, got {given.max_median_itl_ms}")
    model_ids = None
    if given.model is not None or given.model_id is not None:
        row = await context.read(
            reads.model, release_id=release_id, slug=given.model, model_id=given.model_id
        )
        if row is None:
            return None
        model_ids = [row.id]
    return ConfigurationFilter(
        model_ids=model_ids,
        gpu=given.gpu,
        num_gpus=given.num_gpus,
        min_max_num_seqs=given.max_num_seqs_at_least,
        max_max_num_seqs=given.max_num_seqs_at_most,
        task=given.task,
        max_median_itl_ms=given.max_median_itl_ms,
    )


async def configurations(
    context: Context,
    filter: ConfigurationFilterInput | None,
    order_by: ConfigurationOrder | None,
    first: int | None,
    after: str | None,
) -> ConfigurationConnection:
    settings = context.settings
    first = settings.default_page_size if first is None else first
    if not 0 <= first <= settings.max_page_size:
        raise BadInput(f"`first` must be between 0 and {settings.max_page_size}, got {first}")
    field = str(cast(Enum, order_by.field).value) if order_by else "id"
    descending = order_by is not None and order_by.direction is Direction.DESC
    release_id = await context.release_id()
    where = await _filter(context, filter, release_id)
    if where is None:
        return ConfigurationConnection(
            edges=[],
            page_info=PageInfo(has_next_page=False, end_cursor=None),
            release_id=release_id,
            where=ConfigurationFilter(model_ids=[]),
        )
    rows = await context.read(
        reads.configurations,
        release_id=release_id,
        where=where,
        order_by=field,
        descending=descending,
        after=cursor.decode(after, field) if after else None,
        first=first,
    )
    edges = [
        ConfigurationEdge(
            cursor=cursor.encode(field, getattr(row, field), row.id),
            node=Configuration.from_row(row),
        )
        for row in rows[:first]
    ]
    return ConfigurationConnection(
        edges=edges,
        page_info=PageInfo(
            has_next_page=len(rows) > first, end_cursor=edges[-1].cursor if edges else None
        ),
        release_id=release_id,
        where=where,
    )
