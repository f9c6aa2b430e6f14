"""The GraphQL schema: the root Query and its fields."""

from __future__ import annotations

from typing import Annotated

import strawberry
from strawberry.extensions import ParserCache, ValidationCache

from graph import resolvers
from graph.answers.ranking import RankingQuery
from graph.answers.statistics import StatisticsQuery
from graph.context import Context
from graph.errors import CodedErrors
from graph.resolvers import (
    ConfigurationFilterInput,
    ConfigurationOrder,
    DiffusionConfigurationFilterInput,
    DiffusionConfigurationOrder,
)
from graph.types.configuration import Configuration, Connection
from graph.types.diffusion import DiffusionConfiguration, ImageConfiguration, VideoConfiguration
from graph.types.gpu import Gpu
from graph.types.model import Model
from graph.types.source import LeadGreenIndex, Source
from graph.types.task import Task

Info = strawberry.Info[Context, None]


@strawberry.type(
    description="Measured energy of LLM inference (ML.ENERGY Leaderboard v3.0), "
    "with its provenance. Answers come from the latest ingested release."
)
class Query(RankingQuery, StatisticsQuery):
    @strawberry.field(description="Provenance and licence evidence of the current data.")
    async def source(self, info: Info) -> Source:
        return await resolvers.current_source(info.context)

    @strawberry.field(description="The LeadGreen v1 index, rebuilt from the database.")
    async def index(self, info: Info) -> LeadGreenIndex:
        return await resolvers.index(info.context)

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
    ) -> Model | None:
        return await resolvers.model(info.context, slug, model_id)

    @strawberry.field(description="Every measured model, by slug.")
    async def models(self, info: Info) -> list[Model]:
        return await resolvers.models(info.context)

    @strawberry.field(description="Every GPU type measured on, with reference facts.")
    async def gpus(self, info: Info) -> list[Gpu]:
        return await resolvers.gpus(info.context)

    @strawberry.field(description="The benchmark tasks of the current data.")
    async def tasks(self, info: Info) -> list[Task]:
        return await resolvers.tasks(info.context)

    @strawberry.field(
        description="Configurations matching a filter, ordered and paginated with cursors."
    )
    async def configurations(
        self,
        info: Info,
        filter: Annotated[
            ConfigurationFilterInput | None,
            strawberry.argument(description="Conditions every configuration returned meets."),
        ] = None,
        order_by: Annotated[
            ConfigurationOrder | None,
            strawberry.argument(description="Ordering; by id (upstream order) when not given."),
        ] = None,
        first: Annotated[
            int | None,
            strawberry.argument(
                description="Page size; the server's default when not given, at most its "
                "maximum (see the README's settings)."
            ),
        ] = None,
        after: Annotated[
            str | None,
            strawberry.argument(
                description="Return the configurations after this cursor (`endCursor`)."
            ),
        ] = None,
    ) -> Connection[Configuration]:
        return await resolvers.configurations(info.context, filter, order_by, first, after)

    @strawberry.field(
        description="Diffusion configurations (text-to-image, text-to-video) matching a filter, "
        "ordered and paginated with cursors."
    )
    async def diffusion_configurations(
        self,
        info: Info,
        filter: Annotated[
            DiffusionConfigurationFilterInput | None,
            strawberry.argument(description="Conditions every configuration returned meets."),
        ] = None,
        order_by: Annotated[
            DiffusionConfigurationOrder | None,
            strawberry.argument(description="Ordering; by id (upstream order) when not given."),
        ] = None,
        first: Annotated[
            int | None,
            strawberry.argument(
                description="Page size; the server's default when not given, at most its "
                "maximum (see the README's settings)."
            ),
        ] = None,
        after: Annotated[
            str | None,
            strawberry.argument(
                description="Return the configurations after this cursor (`endCursor`)."
            ),
        ] = None,
    ) -> Connection[DiffusionConfiguration]:
        return await resolvers.configurations(
            info.context, filter, order_by, first, after, diffusion=True
        )


def build_schema() -> strawberry.Schema:
    return strawberry.Schema(
        query=Query,
        types=[ImageConfiguration, VideoConfiguration],
        extensions=[
            CodedErrors,
            lambda: ParserCache(maxsize=256),
            lambda: ValidationCache(maxsize=256),
        ],
    )


schema = build_schema()
