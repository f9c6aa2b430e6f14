"""Answers across releases: the timeline, a configuration's history, any object by its id."""

from __future__ import annotations

from collections.abc import Sequence

from db import reads
from db.kinds import KINDS
from db.timeline import data_order
from db.timeline import timeline as ordered
from graph.errors import BadInput, NoData
from graph.schema.context import Context
from graph.schema.types.gpu import Gpu
from graph.schema.types.model import Model, configuration
from graph.schema.types.node import Node, parse_id
from graph.schema.types.release import Release
from graph.schema.types.task import Task
from graph.schema.types.timeline import ReleaseSummary, TimelineEntry

# The most ids `nodes(ids:)` takes at once.
MAX_NODES = 100


async def timeline(context: Context) -> list[TimelineEntry]:
    entries = await context.read(ordered)
    answer, previous = [], None
    for release, summary in entries:
        answer.append(
            TimelineEntry(
                release=Release.from_row(release),
                previous=previous,
                changes=None if summary is None else ReleaseSummary.of(summary),
            )
        )
        previous = answer[-1].release
    return answer


async def node(context: Context, id: str) -> Node | None:
    """The object this global id names (Node.id), or None when there is none."""
    parsed = parse_id(id)
    if parsed is None:
        return None
    prefix, key = parsed
    if prefix == "Release":
        release = await context.read(reads.release_by_key, prefix=key)
        return None if release is None else Release.from_row(release)
    try:
        catalog = await context.catalog()
    except NoData:
        return None
    if prefix == "Configuration":
        found = catalog.by_key.get(key)
        if found is None:
            number = await _newest_with(context, key)
            if number is None:
                return None
            catalog = await context.catalog(number)
            found = catalog.by_key[key]
        kind, row = found
        made: Node = configuration(catalog, kind, row)
        return made
    if prefix == "Model":
        model = catalog.model(model_id=key)
        return None if model is None else Model.of(catalog, model)
    if prefix == "Gpu":
        return Gpu.of(catalog, key) if key in catalog.gpu_by_name else None
    task = catalog.task_by_name.get(key)
    return None if task is None else Task.of(catalog, task.id)


async def nodes(context: Context, ids: Sequence[str]) -> list[Node | None]:
    if len(ids) > MAX_NODES:
        raise BadInput(f"`ids` holds {len(ids)} ids; ask for at most {MAX_NODES} at once")
    return [await node(context, id) for id in ids]


async def _newest_with(context: Context, key: str) -> int | None:
    """The newest release (in data order) holding the configuration with this key."""
    for kind in KINDS:
        found = await context.read(reads.configuration_versions, kind=kind, key=key)
        if found:
            return max(found, key=lambda version: data_order(version[0]))[0].id
    return None
