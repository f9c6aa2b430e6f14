"""The Task type: a benchmark workload."""

from __future__ import annotations

import strawberry

from db.catalog import Catalog
from db.tables import TaskRow
from graph.schema.types.node import Node, entity_keys, global_id


@strawberry.type(
    directives=entity_keys("id", "name"),
    description="A benchmark workload of the ML.ENERGY Leaderboard, such as "
    "`lm-arena-chat` (LLM chat on LM Arena prompts).",
)
class Task(Node):
    name: str = strawberry.field(description="Task identifier, as in upstream `tasks/{name}.json`.")
    display_name: str = strawberry.field(
        description="Human-readable task name (upstream `task_display_name`)."
    )
    architecture: str | None = strawberry.field(
        description="Model family the task measures, from upstream index.json `architectures`: "
        "`llm`, `mllm` or `diffusion`."
    )

    @classmethod
    def from_row(cls, row: TaskRow) -> Task:
        return cls(
            id=global_id("Task", row.name),
            name=row.name,
            display_name=row.display_name,
            architecture=row.architecture,
        )

    @classmethod
    def of(cls, catalog: Catalog, task_id: int) -> Task:
        """The task of this id (one object per release)."""
        return catalog.once((cls, task_id), lambda: cls.from_row(catalog.task_by_id[task_id]))
