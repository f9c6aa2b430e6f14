"""Root fields across releases: the timeline, and any object by its global id (Relay)."""

from __future__ import annotations

from typing import Annotated

import strawberry

from graph.schema.answers import history as answers
from graph.schema.context import Context
from graph.schema.types.node import Node
from graph.schema.types.timeline import TimelineEntry

Info = strawberry.Info[Context, None]


@strawberry.type
class HistoryFields:
    """Root fields: the timeline, node and nodes."""

    @strawberry.field(
        description="Every release in the order of its data (its date, then its commit's), "
        "each with what changed from the one before: the history of corrections a number has "
        "been through."
    )
    async def timeline(self, info: Info) -> list[TimelineEntry]:
        return await answers.timeline(info.context)

    @strawberry.field(
        description="The object with this global id (any `Node`'s `id`), or null. A "
        "configuration comes from the release served by default, or else from the newest "
        "release that has it."
    )
    async def node(
        self,
        info: Info,
        id: Annotated[strawberry.ID, strawberry.argument(description="A global id.")],
    ) -> Node | None:
        return await answers.node(info.context, id)

    @strawberry.field(
        description=f"The objects with these global ids, in order (null where there is none); "
        f"at most {answers.MAX_NODES} at once."
    )
    async def nodes(
        self,
        info: Info,
        ids: Annotated[list[strawberry.ID], strawberry.argument(description="Global ids.")],
    ) -> list[Node | None]:
        return await answers.nodes(info.context, ids)
