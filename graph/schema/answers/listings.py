"""What a release lists: its source and index, the releases and their changes, models, GPUs,
tasks, and pages of configurations."""

from __future__ import annotations

from enum import Enum
from typing import Any, cast

from analysis.changes import diff_releases
from db import reads
from db.content import parsed
from db.files import ExportError, release_files
from db.kinds import KEY_FIELDS, Kind
from graph.errors import BadInput, NoData
from graph.schema import cursor
from graph.schema.answers.filters import page_size, to_filter
from graph.schema.context import Context, unknown
from graph.schema.inputs import AnyFilter, AnyOrder, Direction
from graph.schema.types.changes import ReleaseChanges
from graph.schema.types.gpu import Gpu
from graph.schema.types.model import Connection, Edge, Model, PageInfo, configuration
from graph.schema.types.release import Release
from graph.schema.types.source import LeadGreenIndex, Source
from graph.schema.types.task import Task


async def source(context: Context, release: int | None = None) -> Source:
    return Source.of(await context.catalog(release))


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
    documents = []
    for release in (old, new):
        try:
            files = await context.read(release_files, release_id=release.id)
        except ExportError as exc:
            raise BadInput(str(exc)) from None
        documents.append(parsed(files))
    found = diff_releases(documents[0], documents[1], KEY_FIELDS)
    # The task may be of either release (added or removed between them).
    if task is not None and task not in {t.task for t in found.tasks}:
        raise unknown("task", task, "task", "tasks")
    return ReleaseChanges.of(old.id, new.id, found, task)


async def releases(context: Context) -> list[Release]:
    return [Release.from_row(row) for row in await context.read(reads.releases)]


async def configurations(
    context: Context,
    kind: Kind,
    filter: AnyFilter | None,
    order_by: AnyOrder | None,
    first: int | None,
    after: str | None,
    release: int | None = None,
) -> Connection[Any]:
    """One page of the kind's configurations matching the filter, in the order asked for."""
    first = page_size(context.settings, first)
    field = str(cast(Enum, order_by.field).value) if order_by else "id"
    descending = order_by is not None and order_by.direction is Direction.DESC
    catalog = await context.catalog(release)
    rows, total = catalog.page(
        kind,
        where=to_filter(catalog, filter, kind, strict=False),
        order_by=field,
        descending=descending,
        after=cursor.decode(after, field) if after else None,
        first=first,
    )
    edges = [
        Edge(
            cursor=cursor.encode(field, getattr(row, field), row.id),
            node=configuration(catalog, kind, row),
        )
        for row in rows[:first]
    ]
    return Connection(
        edges=edges,
        page_info=PageInfo(
            has_next_page=len(rows) > first, end_cursor=edges[-1].cursor if edges else None
        ),
        total_count=total,
    )
