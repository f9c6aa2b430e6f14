"""Root-field resolvers: read the arguments, look in the release's catalog, convert."""

from __future__ import annotations

from collections.abc import Callable
from enum import Enum
from typing import Any, cast

import strawberry

from analysis.changes import diff_releases
from db import reads
from db.catalog import Catalog, ConfigurationFilter
from db.export import export_documents
from db.tables import ConfigurationRow, DiffusionConfigurationRow
from graph import cursor
from graph.context import Context
from graph.errors import BadInput, NoData
from graph.types.changes import ReleaseChanges
from graph.types.configuration import Configuration, Connection, Edge, PageInfo
from graph.types.diffusion import diffusion_of
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
    return Source.of(await context.catalog(release_id))


async def model(
    context: Context, slug: str | None, model_id: str | None, release: int | None = None
) -> Model | None:
    if (slug is None) == (model_id is None):
        raise BadInput("give exactly one of `slug` and `modelId`")
    catalog = await context.catalog(release)
    row = catalog.model(slug=slug, model_id=model_id)
    return Model.of(catalog, row) if row else None


async def models(context: Context, release: int | None = None) -> list[Model]:
    catalog = await context.catalog(release)
    return [Model.of(catalog, row) for row in catalog.models]


async def index(context: Context, release: int | None = None) -> LeadGreenIndex:
    catalog = await context.catalog(release)
    row = catalog.release
    return LeadGreenIndex(
        version=row.manifest_version,
        updated=row.manifest_updated,
        data_version=row.manifest_data_version,
        source=Source.of(catalog),
        models=[Model.of(catalog, model) for model in catalog.in_manifest],
    )


async def gpus(context: Context) -> list[Gpu]:
    try:
        catalog = await context.catalog()
    except NoData:  # GPU types are not per release: list them even before the first one
        return [Gpu.from_row(row) for row in await context.read(reads.gpus)]
    return [Gpu.of(catalog, row.name) for row in catalog.gpus]


async def tasks(context: Context, release: int | None = None) -> list[Task]:
    catalog = await context.catalog(release)
    return [Task.of(catalog, row.id) for row in catalog.tasks]


async def changes(
    context: Context, from_release: int, to_release: int, task: str | None
) -> ReleaseChanges:
    old, new = await context.release(from_release), await context.release(to_release)
    documents = [await context.read(export_documents, release_id=r.id) for r in (old, new)]
    return ReleaseChanges.of(old.id, new.id, diff_releases(*documents), task)


async def releases(context: Context) -> list[Release]:
    return [Release.from_row(row) for row in await context.read(reads.releases)]


def _filter(
    catalog: Catalog, given: ConfigurationFilterInput | DiffusionConfigurationFilterInput | None
) -> ConfigurationFilter | None:
    """The filter for `given`, or None when it names a model that does not exist."""
    if given is None:
        return ConfigurationFilter()
    max_itl = getattr(given, "max_median_itl_ms", None)
    if max_itl is not None and not max_itl >= 0:
        raise BadInput(f"maxMedianItlMs must be a number >= 0, got {max_itl}")
    model_ids = None
    if given.model is not None or given.model_id is not None:
        row = catalog.model(slug=given.model, model_id=given.model_id)
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
    catalog = await context.catalog(release)
    where = _filter(catalog, filter)
    rows: list[Any] = []
    total = 0
    if where is not None:
        rows, total = catalog.page(
            table,
            where=where,
            order_by=field,
            descending=descending,
            after=cursor.decode(after, field) if after else None,
            first=first,
        )
    convert: Callable[[Catalog, Any], Any] = diffusion_of if diffusion else Configuration.of
    edges = [
        Edge(cursor=cursor.encode(field, getattr(row, field), row.id), node=convert(catalog, row))
        for row in rows[:first]
    ]
    return Connection(
        edges=edges,
        page_info=PageInfo(
            has_next_page=len(rows) > first, end_cursor=edges[-1].cursor if edges else None
        ),
        total_count=total,
    )
