"""The GraphQL schema: the root Query and its fields."""

from __future__ import annotations

from typing import Annotated

import strawberry

from graph import resolvers
from graph.answers.ranking import RankingQuery
from graph.answers.statistics import StatisticsQuery
from graph.context import Context
from graph.errors import CodedErrors
from graph.execution import PlainObjects
from graph.limits import QueryLimits
from graph.resolvers import (
    ConfigurationFilterInput,
    ConfigurationOrder,
    DiffusionConfigurationFilterInput,
    DiffusionConfigurationOrder,
)
from graph.types.changes import ReleaseChanges
from graph.types.configuration import Configuration, Connection
from graph.types.diffusion import DiffusionConfiguration, ImageConfiguration, VideoConfiguration
from graph.types.gpu import Gpu
from graph.types.model import Model
from graph.types.source import LeadGreenIndex, Release, Source
from graph.types.task import Task

Info = strawberry.Info[Context, None]
# The arguments both configuration connections take.
FILTER = strawberry.argument(description="Conditions every configuration returned meets.")
ORDER = strawberry.argument(description="Ordering; by id (upstream order) when not given.")
FirstArgument = Annotated[
    int | None,
    strawberry.argument(
        description="Page size; the server's default when not given, at most its maximum "
        "(see the README's settings)."
    ),
]
AfterArgument = Annotated[
    str | None,
    strawberry.argument(description="Return the configurations after this cursor (`endCursor`)."),
]
ReleaseArgument = Annotated[
    int | None,
    strawberry.argument(
        description="Answer from this release (an id from `releases`); the latest by default."
    ),
]


@strawberry.type(
    description="Measured energy of LLM inference (ML.ENERGY Leaderboard v3.0), "
    "with its provenance. Answers come from the release with the newest data unless a "
    "field's `release` argument names another."
)
class Query(RankingQuery, StatisticsQuery):
    @strawberry.field(description="Provenance and licence evidence of the data.")
    async def source(self, info: Info, release: ReleaseArgument = None) -> Source:
        return await resolvers.current_source(info.context, release)

    @strawberry.field(description="The LeadGreen v1 index, rebuilt from the database.")
    async def index(self, info: Info, release: ReleaseArgument = None) -> LeadGreenIndex:
        return await resolvers.index(info.context, release)

    @strawberry.field(
        description="Every ingested release, newest data first; the first is served by default."
    )
    async def releases(self, info: Info) -> list[Release]:
        return await resolvers.releases(info.context)

    @strawberry.field(
        description="What changed from one release to another: files, tasks, models, row-shape "
        "fields, and configurations added, removed or changed (with old and new values)."
    )
    async def changes(
        self,
        info: Info,
        from_release: Annotated[
            int, strawberry.argument(name="from", description="The earlier release's id.")
        ],
        to_release: Annotated[
            int, strawberry.argument(name="to", description="The later release's id.")
        ],
        task: Annotated[
            str | None, strawberry.argument(description="Only this task's changes.")
        ] = None,
    ) -> ReleaseChanges:
        return await resolvers.changes(info.context, from_release, to_release, task)

    @strawberry.field(
        description="One model, by slug or by Hugging Face id (give exactly one); "
        "null when there is no such model."
    )
    async def model(
        self,
        info: Info,
        slug: Annotated[
            str | None, strawberry.argument(description="Model slug, e.g. `qwen-3-8b`.")
        ] = None,
        model_id: Annotated[
            str | None, strawberry.argument(description="Hugging Face id, e.g. `Qwen/Qwen3-8B`.")
        ] = None,
        release: ReleaseArgument = None,
    ) -> Model | None:
        return await resolvers.model(info.context, slug, model_id, release)

    @strawberry.field(description="Every model of the release, by slug.")
    async def models(self, info: Info, release: ReleaseArgument = None) -> list[Model]:
        return await resolvers.models(info.context, release)

    @strawberry.field(description="Every GPU type measured on, with reference facts.")
    async def gpus(self, info: Info) -> list[Gpu]:
        return await resolvers.gpus(info.context)

    @strawberry.field(description="The benchmark tasks of the release.")
    async def tasks(self, info: Info, release: ReleaseArgument = None) -> list[Task]:
        return await resolvers.tasks(info.context, release)

    @strawberry.field(
        description="Configurations matching a filter, ordered and paginated with cursors."
    )
    async def configurations(
        self,
        info: Info,
        filter: Annotated[ConfigurationFilterInput | None, FILTER] = None,
        order_by: Annotated[ConfigurationOrder | None, ORDER] = None,
        first: FirstArgument = None,
        after: AfterArgument = None,
        release: ReleaseArgument = None,
    ) -> Connection[Configuration]:
        return await resolvers.configurations(
            info.context, filter, order_by, first, after, release=release
        )

    @strawberry.field(
        description="Diffusion configurations (text-to-image, text-to-video) matching a filter, "
        "ordered and paginated with cursors."
    )
    async def diffusion_configurations(
        self,
        info: Info,
        filter: Annotated[DiffusionConfigurationFilterInput | None, FILTER] = None,
        order_by: Annotated[DiffusionConfigurationOrder | None, ORDER] = None,
        first: FirstArgument = None,
        after: AfterArgument = None,
        release: ReleaseArgument = None,
    ) -> Connection[DiffusionConfiguration]:
        return await resolvers.configurations(
            info.context, filter, order_by, first, after, diffusion=True, release=release
        )


def build_schema() -> strawberry.Schema:
    return strawberry.Schema(
        query=Query,
        types=[ImageConfiguration, VideoConfiguration],
        # QueryLimits parses and validates (with their caches) within the request's limits.
        extensions=[CodedErrors, QueryLimits],
        execution_context_class=PlainObjects,
    )


schema = build_schema()
