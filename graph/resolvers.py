"""Root-field resolvers: read the arguments, call a `db.reads` function, convert."""

from __future__ import annotations

from collections.abc import Callable
from enum import Enum
from typing import Any, cast

import strawberry

from analysis.changes import diff_releases
from db import reads
from db.export import export_documents
from db.reads import ConfigurationFilter
from db.tables import ConfigurationRow, DiffusionConfigurationRow
from graph import cursor
from graph.context import Context
from graph.errors import BadInput
from graph.types.changes import ReleaseChanges
from graph.types.configuration import Configuration, Connection, Edge, PageInfo
from graph.types.diffusion import diffusion_from_row
from graph.types.gpu import Gpu
from graph.types.model import Model
from graph.types.source import LeadGreenIndex, Release, Source
from graph.types.task import Task

# One member per orderable column, so the enums cannot drift from what db.reads accepts.
ConfigurationField: type[Enum] = strawberry.enum(  # type: ignore[call-overload]
    Enum("ConfigurationField", {name.upper(): name for name in ("id", *reads.ORDERABLE)}),
    description="A configuration field to order by (each named as the field of the same name).",
)
DiffusionConfigurationField: type[Enum] = strawberry.enum(  # type: ignore[call-overload]
    Enum(
        "DiffusionConfigurationField",
        {name.upper(): name for name in ("id", *reads.DIFFUSION_ORDERABLE)},
    ),
    description="A diffusion configuration field to order by. HEIGHT and WIDTH are the image's "
    "or video's; ENERGY_PER_OUTPUT_JOULES is energyPerImageJoules or energyPerVideoJoules; "
    "THROUGHPUT_OUTPUTS_PER_SEC is throughputImagesPerSec or throughputVideosPerSec.",
)


@strawberry.enum(description="Sort direction.")
class Direction(Enum):
    ASC = "asc"
    DESC = "desc"


@strawberry.input(description="How to order configurations; ties are broken by id.")
class ConfigurationOrder:
    field: ConfigurationField = strawberry.field(description="Field to order by.")  # type: ignore[valid-type]
    direction: Direction = strawberry.field(default=Direction.ASC, description="Direction.")


@strawberry.input(description="How to order diffusion configurations; ties are broken by id.")
class DiffusionConfigurationOrder:
    field: DiffusionConfigurationField = strawberry.field(description="Field to order by.")  # type: ignore[valid-type]
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


@strawberry.input(
    description="Which diffusion configurations to return; every condition given must hold."
)
class DiffusionConfigurationFilterInput:
    model: str | None = strawberry.field(default=None, description="Model slug.")
    model_id: str | None = strawberry.field(default=None, description="Hugging Face model id.")
    gpu: str | None = strawberry.field(default=None, description="GPU type, e.g. `B200`.")
    num_gpus: int | None = strawberry.field(default=None, description="Number of GPUs.")
    task: str | None = strawberry.field(
        default=None, description="`text-to-image` or `text-to-video`."
    )


async def current_source(context: Context, release_id: int | None = None) -> Source:
    release = await context.release(release_id)
    row = await context.sources.load(release.id)
    assert row is not None, "every release is ingested with its source"
    return Source.from_rows(row, release)


async def model(
    context: Context, slug: str | None, model_id: str | None, release: int | None = None
) -> Model | None:
    if (slug is None) == (model_id is None):
        raise BadInput("give exactly one of `slug` and `modelId`")
    row = await context.read(
        reads.model, release_id=await context.release_id(release), slug=slug, model_id=model_id
    )
    return Model.from_row(row) if row else None


async def models(context: Context, release: int | None = None) -> list[Model]:
    rows = await context.read(reads.models, release_id=await context.release_id(release))
    return [Model.from_row(row) for row in rows]


async def index(context: Context, release: int | None = None) -> LeadGreenIndex:
    row = await context.release(release)
    rows = await context.read(reads.models, release_id=row.id, in_manifest=True)
    return LeadGreenIndex(
        version=row.manifest_version,
        updated=row.manifest_updated,
        data_version=row.manifest_data_version,
        source=await current_source(context, row.id),
        models=[Model.from_row(model) for model in rows],
    )


async def gpus(context: Context) -> list[Gpu]:
    return [Gpu.from_row(row) for row in await context.read(reads.gpus)]


async def tasks(context: Context, release: int | None = None) -> list[Task]:
    release_id = await context.release_id(release)
    return [
        Task.from_row(row)
        for row in (await context.tasks()).values()
        if row.release_id == release_id
    ]


async def changes(
    context: Context, from_release: int, to_release: int, task: str | None
) -> ReleaseChanges:
    old, new = await context.release(from_release), await context.release(to_release)
    documents = [await context.read(export_documents, release_id=r.id) for r in (old, new)]
    return ReleaseChanges.of(old.id, new.id, diff_releases(*documents), task)


async def releases(context: Context) -> list[Release]:
    return [Release.from_row(row) for row in await context.read(reads.releases)]


async def _filter(
    context: Context,
    given: ConfigurationFilterInput | DiffusionConfigurationFilterInput | None,
    release_id: int,
) -> ConfigurationFilter | None:
    """The db filter for `given`, or None when it names a model that does not exist."""
    if given is None:
        return ConfigurationFilter()
    max_itl = getattr(given, "max_median_itl_ms", None)
    if max_itl is not None and not max_itl >= 0:
        raise BadInput(f"maxMedianItlMs must be a number >= 0, got {max_itl}")
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
        min_max_num_seqs=getattr(given, "max_num_seqs_at_least", None),
        max_max_num_seqs=getattr(given, "max_num_seqs_at_most", None),
        task=given.task,
        max_median_itl_ms=max_itl,
    )


async def configurations(
    context: Context,
    filter: ConfigurationFilterInput | DiffusionConfigurationFilterInput | None,
    order_by: ConfigurationOrder | DiffusionConfigurationOrder | None,
    first: int | None,
    after: str | None,
    *,
    diffusion: bool = False,
    release: int | None = None,
) -> Connection[Any]:
    settings = context.settings
    first = settings.default_page_size if first is None else first
    if not 0 <= first <= settings.max_page_size:
        raise BadInput(f"`first` must be between 0 and {settings.max_page_size}, got {first}")
    field = str(cast(Enum, order_by.field).value) if order_by else "id"
    descending = order_by is not None and order_by.direction is Direction.DESC
    table: reads.Table = DiffusionConfigurationRow if diffusion else ConfigurationRow
    convert: Callable[[Any], Any] = diffusion_from_row if diffusion else Configuration.from_row
    release_id = await context.release_id(release)
    where = await _filter(context, filter, release_id)
    if where is None:
        where, rows = ConfigurationFilter(model_ids=[]), []
    else:
        rows = await context.read(
            reads.configurations,
            release_id=release_id,
            table=table,
            where=where,
            order_by=field,
            descending=descending,
            after=cursor.decode(after, field) if after else None,
            first=first,
        )
    edges = [
        Edge(cursor=cursor.encode(field, getattr(row, field), row.id), node=convert(row))
        for row in rows[:first]
    ]
    return Connection(
        edges=edges,
        page_info=PageInfo(
            has_next_page=len(rows) > first, end_cursor=edges[-1].cursor if edges else None
        ),
        table=table,
        release_id=release_id,
        where=where,
    )
