"""The root Subscription type: `releasePublished`, each release a process begins to serve.

The events come from the context's `published` (graph/server/subscriptions.py gives it: the
releases the process's release watcher begins to serve); a context without it (an execution
that is not a subscription transport's) answers the field with a BAD_USER_INPUT error.
"""

from __future__ import annotations

from collections.abc import AsyncGenerator, AsyncIterator, Callable

import strawberry

from db import reads
from db.tables import ReleaseRow
from graph.errors import BadInput
from graph.schema.answers import listings
from graph.schema.context import Context
from graph.schema.types.changes import ReleaseChanges
from graph.schema.types.release import Release

Info = strawberry.Info[Context, None]
# The releases a process begins to serve, from when the subscriber subscribed.
Published = Callable[[], AsyncIterator[ReleaseRow]]
NO_TRANSPORT = (
    "Subscriptions are served over GraphQL over SSE (POST /graphql with "
    "`Accept: text/event-stream`) and graphql-transport-ws (a WebSocket to /graphql)."
)


@strawberry.type(
    description="A release a process began to serve, and what changed from the one before it."
)
class ReleasePublished:
    release: Release = strawberry.field(
        description="The release now served by default, as `releases` lists it."
    )
    previous: Release | None = strawberry.field(
        description="The release listed after it in `releases` (the one served before it); "
        "null when it is the first."
    )

    @strawberry.field(
        description="What changed from `previous` to `release`, as `changes(from: "
        "previous.number, to: release.number)` answers; null when there is no previous release."
    )
    async def changes(self, info: Info) -> ReleaseChanges | None:
        if self.previous is None:
            return None
        return await listings.changes(info.context, self.previous.number, self.release.number, None)


async def published(context: Context, row: ReleaseRow) -> ReleasePublished:
    """The event of a release begun to be served: it and the release listed after it."""
    rows = await context.read(reads.releases)
    ids = [r.id for r in rows]
    at = ids.index(row.id) if row.id in ids else -1
    before = rows[at + 1] if 0 <= at < len(rows) - 1 else None
    return ReleasePublished(
        release=Release.from_row(row),
        previous=Release.from_row(before) if before is not None else None,
    )


@strawberry.type(description="Notifications, over GraphQL over SSE and graphql-transport-ws.")
class Subscription:
    @strawberry.subscription(
        description="Each release the process begins to serve (after an ingest commits, within "
        "LEADGREEN_RELEASE_POLL_SECONDS), from when the subscription starts."
    )
    async def release_published(self, info: Info) -> AsyncGenerator[ReleasePublished, None]:
        events: Published | None = getattr(info.context, "published", None)
        if events is None:
            raise BadInput(NO_TRANSPORT)
        async for row in events():
            yield await published(info.context, row)
