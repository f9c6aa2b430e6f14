"""The timeline: the releases in the order of their data, and what changed from each to the
next; and a configuration's own history through the releases."""

from __future__ import annotations

from typing import Any

import strawberry
from strawberry.scalars import JSON

from analysis.changes import FieldChange as Change
from db import reads
from db.kinds import Kind
from db.timeline import data_order
from graph.schema.context import Context
from graph.schema.types.changes import FieldChange
from graph.schema.types.release import Release


@strawberry.type(description="On how many of a task's rows one field changed.")
class FieldCount:
    field: str = strawberry.field(description="Upstream field name.")
    rows: int = strawberry.field(description="Rows (configurations) on which it changed.")


@strawberry.type(description="What changed in one task's rows from one release to the next.")
class TaskSummary:
    task: str = strawberry.field(description="Task name.")
    added: int = strawberry.field(description="Configurations only in the later release.")
    removed: int = strawberry.field(description="Configurations only in the earlier release.")
    changed: int = strawberry.field(description="Configurations in both whose fields differ.")
    unchanged: int = strawberry.field(description="Configurations in both, equal in every field.")
    fields_added: list[str] = strawberry.field(description="Fields that joined the row shape.")
    fields_removed: list[str] = strawberry.field(description="Fields that left the row shape.")
    field_changes: list[FieldCount] = strawberry.field(
        description="Each field that changed, with on how many rows, by name."
    )


@strawberry.type(
    description="What changed from one release to the next, counted (`changes(from:, to:)` "
    "lists every row)."
)
class ReleaseSummary:
    files_added: int = strawberry.field(description="Files only in the later release.")
    files_removed: int = strawberry.field(description="Files only in the earlier release.")
    files_changed: int = strawberry.field(description="Files in both whose bytes differ.")
    tasks_added: list[str] = strawberry.field(description="Tasks only in the later release.")
    tasks_removed: list[str] = strawberry.field(description="Tasks only in the earlier release.")
    models_added: list[str] = strawberry.field(description="Model ids only in the later one.")
    models_removed: list[str] = strawberry.field(description="Model ids only in the earlier one.")
    tasks: list[TaskSummary] = strawberry.field(description="Per task, by name.")
    sentences: list[str] = strawberry.field(
        description='The changes in words, one sentence each, e.g. "output_throughput_tokens_'
        'per_sec changed on 328 of 328 lm-arena-chat rows".'
    )

    @classmethod
    def of(cls, summary: dict[str, Any]) -> ReleaseSummary:
        tasks = [
            TaskSummary(
                task=t["task"],
                added=t["added"],
                removed=t["removed"],
                changed=t["changed"],
                unchanged=t["unchanged"],
                fields_added=t["fields_added"],
                fields_removed=t["fields_removed"],
                field_changes=[FieldCount(field=f, rows=n) for f, n in t["field_changes"].items()],
            )
            for t in summary["tasks"]
        ]
        return cls(
            files_added=summary["files_added"],
            files_removed=summary["files_removed"],
            files_changed=summary["files_changed"] or 0,
            tasks_added=summary["tasks_added"],
            tasks_removed=summary["tasks_removed"],
            models_added=summary["models_added"],
            models_removed=summary["models_removed"],
            tasks=tasks,
            sentences=sentences(summary),
        )


def sentences(summary: dict[str, Any]) -> list[str]:
    """The summary in words."""
    said = [f"task {t} added" for t in summary["tasks_added"]]
    said += [f"task {t} removed" for t in summary["tasks_removed"]]
    said += [f"model {m} added" for m in summary["models_added"]]
    said += [f"model {m} removed" for m in summary["models_removed"]]
    for t in summary["tasks"]:
        rows = t["changed"] + t["unchanged"]
        said += [f"{f} joined the {t['task']} rows" for f in t["fields_added"]]
        said += [f"{f} left the {t['task']} rows" for f in t["fields_removed"]]
        said += [
            f"{field} changed on {n} of {rows} {t['task']} rows"
            for field, n in t["field_changes"].items()
        ]
        if t["added"]:
            said.append(f"{_count(t['added'], t['task'] + ' configuration')} added")
        if t["removed"]:
            said.append(f"{_count(t['removed'], t['task'] + ' configuration')} removed")
    if not said and summary["files_changed"]:
        files = _count(summary["files_changed"], "file")
        said.append(f"{files} written differently; the data is the same")
    return said


def _count(n: int, noun: str) -> str:
    """`n` and `noun`, plural unless n is 1 ("1 file", "3 files")."""
    return f"{n} {noun}" if n == 1 else f"{n} {noun}s"


@strawberry.type(description="A release, and what changed from the one before it.")
class TimelineEntry:
    release: Release = strawberry.field(description="The release.")
    previous: Release | None = strawberry.field(
        description="The release before it in data order; null for the first."
    )
    changes: ReleaseSummary | None = strawberry.field(
        description="What changed from the previous release; null for the first, or when the "
        "files of either were not kept."
    )


@strawberry.type(description="A configuration as one release has it.")
class ConfigurationVersion:
    release: Release = strawberry.field(description="The release.")
    values: JSON = strawberry.field(
        description="The configuration's upstream fields in that release, by upstream name."
    )
    changed: list[FieldChange] = strawberry.field(
        description="The fields that differ from the version before (empty for the first)."
    )


async def versions(context: Context, kind: Kind, key: str) -> list[ConfigurationVersion]:
    """The configuration with this key in every release that has it, in data order."""
    found = await context.read(reads.configuration_versions, kind=kind, key=key)
    found.sort(key=lambda version: data_order(version[0]))
    answer: list[ConfigurationVersion] = []
    before: dict[str, Any] | None = None
    for release, row, model_id in found:
        values: dict[str, Any] = {"model_id": model_id, "gpu_model": row.gpu}
        values |= kind.upstream(row)
        if kind.detailed:
            values["parallelization_notes"] = row.parallel_notes
        changed: list[FieldChange] = (
            []
            if before is None
            else [
                FieldChange.of(Change(name, before.get(name), values.get(name)))
                for name in sorted(set(before) | set(values))
                if before.get(name) != values.get(name)
            ]
        )
        answer.append(
            ConfigurationVersion(
                release=Release.from_row(release), values=JSON(values), changed=changed
            )
        )
        before = values
    return answer
