"""Types for what changed between two releases (see analysis.changes for the pairing rule)."""

from __future__ import annotations

from typing import Any

import strawberry
from strawberry.scalars import JSON

from analysis import changes as c


@strawberry.type(description="One field whose value differs between the two releases.")
class FieldChange:
    field: str = strawberry.field(description="Upstream field name.")
    old: JSON | None = strawberry.field(description="Value in the earlier release (`from`).")
    new: JSON | None = strawberry.field(description="Value in the later release (`to`).")

    @classmethod
    def of(cls, change: c.FieldChange) -> FieldChange:
        return cls(field=change.field, old=change.old, new=change.new)


@strawberry.type(
    description="What pairs a configuration across releases: its task, and the settings that "
    "define the run (model, GPU, GPU count, max_num_seqs; for diffusion, batch size, steps, "
    "resolution, frames). Parallelism is not part of it: upstream corrects it between releases."
)
class ConfigurationKey:
    task: str = strawberry.field(description="Task name.")
    settings: JSON = strawberry.field(
        description="The identifying settings, by upstream field name."
    )
    occurrence: int = strawberry.field(
        description="Among rows with these settings, this one's position (from 0) in file order."
    )
    repeated: bool = strawberry.field(
        description="Several rows share these settings (repeated runs): they are paired in file "
        "order, first with first."
    )

    @classmethod
    def of(cls, key: c.RowKey) -> ConfigurationKey:
        settings: dict[str, Any] = dict(key.settings)
        return cls(
            task=key.task, settings=JSON(settings), occurrence=key.occurrence, repeated=key.repeated
        )


@strawberry.type(description="A configuration present in both releases whose fields differ.")
class ConfigurationChange:
    key: ConfigurationKey = strawberry.field(description="How the two rows were paired.")
    old_row: int = strawberry.field(description="Row (from 0) in the earlier task file.")
    new_row: int = strawberry.field(description="Row (from 0) in the later task file.")
    fields: list[FieldChange] = strawberry.field(
        description="The fields that differ. `output_length_distribution` and "
        "`parallelization_notes` come from the per-model file."
    )


@strawberry.type(description="Changes within one task's configurations.")
class TaskChanges:
    task: str = strawberry.field(description="Task name.")
    fields_added: list[str] = strawberry.field(description="Fields that joined the row shape.")
    fields_removed: list[str] = strawberry.field(description="Fields that left the row shape.")
    added: list[ConfigurationKey] = strawberry.field(
        description="Configurations only in the later release."
    )
    removed: list[ConfigurationKey] = strawberry.field(
        description="Configurations only in the earlier release."
    )
    changed: list[ConfigurationChange] = strawberry.field(
        description="Configurations in both whose fields differ (fields that joined or left the "
        "row shape are not repeated here)."
    )
    unchanged: int = strawberry.field(description="Configurations in both, equal in every field.")
    changed_field_counts: JSON = strawberry.field(
        description="For each field, on how many changed configurations it differs."
    )

    @classmethod
    def of(cls, t: c.TaskChanges) -> TaskChanges:
        counts: dict[str, int] = {}
        for change in t.changed:
            for f in change.fields:
                counts[f.field] = counts.get(f.field, 0) + 1
        return cls(
            task=t.task,
            fields_added=t.fields_added,
            fields_removed=t.fields_removed,
            added=[ConfigurationKey.of(k) for k in t.added],
            removed=[ConfigurationKey.of(k) for k in t.removed],
            changed=[
                ConfigurationChange(
                    key=ConfigurationKey.of(ch.key),
                    old_row=ch.old_row,
                    new_row=ch.new_row,
                    fields=[FieldChange.of(f) for f in ch.fields],
                )
                for ch in t.changed
            ],
            unchanged=t.unchanged,
            changed_field_counts=JSON(counts),
        )


@strawberry.type(description="A document whose own fields changed.")
class DocumentChange:
    name: str = strawberry.field(
        description="The model id (an index.json entry) or the per-model file's path."
    )
    fields: list[FieldChange] = strawberry.field(description="The fields that differ.")

    @classmethod
    def of(cls, d: c.DocumentChange) -> DocumentChange:
        return cls(name=d.name, fields=[FieldChange.of(f) for f in d.fields])


@strawberry.type(
    description="Everything that differs between the files of two releases, as a direct "
    "comparison of the upstream documents finds it."
)
class ReleaseChanges:
    from_release: int = strawberry.field(name="from", description="The earlier release's id.")
    to_release: int = strawberry.field(name="to", description="The later release's id.")
    files_added: list[str] = strawberry.field(description="Files only in `to`.")
    files_removed: list[str] = strawberry.field(description="Files only in `from`.")
    tasks_added: list[str] = strawberry.field(description="Tasks only in `to`.")
    tasks_removed: list[str] = strawberry.field(description="Tasks only in `from`.")
    models_added: list[str] = strawberry.field(description="Model ids only in `to`'s index.")
    models_removed: list[str] = strawberry.field(description="Model ids only in `from`'s index.")
    models_changed: list[DocumentChange] = strawberry.field(
        description="index.json model entries whose facts changed."
    )
    model_files_changed: list[DocumentChange] = strawberry.field(
        description="Per-model files whose own fields (not their rows) changed."
    )
    tasks: list[TaskChanges] = strawberry.field(description="Changes task by task.")

    @classmethod
    def of(
        cls, from_release: int, to_release: int, d: c.Changes, task: str | None
    ) -> ReleaseChanges:
        return cls(
            from_release=from_release,
            to_release=to_release,
            files_added=d.files_added,
            files_removed=d.files_removed,
            tasks_added=d.tasks_added,
            tasks_removed=d.tasks_removed,
            models_added=d.models_added,
            models_removed=d.models_removed,
            models_changed=[DocumentChange.of(m) for m in d.models_changed],
            model_files_changed=[DocumentChange.of(m) for m in d.model_files_changed],
            tasks=[TaskChanges.of(t) for t in d.tasks if task is None or t.task == task],
        )
