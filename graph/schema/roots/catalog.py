"""Root fields about the catalog: provenance, releases and changes, models, GPUs, tasks, and
the configuration connections."""

from __future__ import annotations

from typing import Annotated

import strawberry

from db.kinds import DIFFUSION, LLM
from graph.schema.answers import catalog as answers
from graph.schema.context import Context
from graph.schema.inputs import (
    FILTER,
    ORDER,
    AfterArgument,
    ConfigurationFilterInput,
    ConfigurationOrder,
    DiffusionConfigurationFilterInput,
    DiffusionConfigurationOrder,
    FirstArgument,
    ReleaseArgument,
)
from graph.schema.types.changes import ReleaseChanges
from graph.schema.types.gpu import Gpu
from graph.schema.types.model import Configuration, Connection, DiffusionConfiguration, Model
from graph.schema.types.release import Release
from graph.schema.types.source import LeadGreenIndex, Source
from graph.schema.types.task import Task

Info = strawberry.Info[Context, None]


@strawberry.type
class CatalogFields:
    """Root fields: provenance, releases, models, GPUs, tasks and configurations."""

    @strawberry.field(description="Provenance and licence evidence of the data.")
    async def source(self, info: Info, release: ReleaseArgument = None) -> Source:
        return await answers.source(info.context, release)

    @strawberry.field(description="The LeadGreen v1 index, rebuilt from the database.")
    async def index(self, info: Info, release: ReleaseArgument = None) -> LeadGreenIndex:
        return await answers.index(info.context, release)

    @strawberry.field(
        description="Every ingested release, newest data first; the first is served by default."
    )
    async def releases(self, info: Info) -> list[Release]:
        return await answers.releases(info.context)

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
        return await answers.changes(info.context, from_release, to_release, task)

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
        return await answers.model(info.context, slug, model_id, release)

    @strawberry.field(description="Every model of the release, by slug.")
    async def models(self, info: Info, release: ReleaseArgument = None) -> list[Model]:
        return await answers.models(info.context, release)

    @strawberry.field(description="Every GPU type measured on, with reference facts.")
    async def gpus(self, info: Info) -> list[Gpu]:
        return await answers.gpus(info.context)

    @strawberry.field(description="The benchmark tasks of the release.")
    async def tasks(self, info: Info, release: ReleaseArgument = None) -> list[Task]:
        return await answers.tasks(info.context, release)

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
        return await answers.configurations(
            info.context, LLM, filter, order_by, first, after, release
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
        return await answers.configurations(
            info.context, DIFFUSION, filter, order_by, first, after, release
        )
