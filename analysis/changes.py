"""What changed between two releases, computed from their files in the upstream layout.

A configuration is paired with its earlier self by its task, model, GPU, GPU count and the
settings that define the run (max_num_seqs; for diffusion, batch size, steps, resolution and
frames) — not by parallelism, which upstream corrects between releases. Repeated runs share
all of these; the k-th such row of one release pairs with the k-th of the other, in file order,
and is flagged `repeated` so a reader knows the pairing rests on that order. Rows beyond the
shorter group are reported as added or removed.
"""

from __future__ import annotations

from collections import defaultdict
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

Document = Mapping[str, Any]

# The row fields that identify a run, where a row has them, in the order a key names them
# (db.kinds.KEY_FIELDS): everything else may change.
KeyFields = Sequence[str]


@dataclass(frozen=True)
class RowKey:
    task: str
    settings: tuple[tuple[str, Any], ...]
    occurrence: int
    repeated: bool

    def value(self, name: str) -> Any:
        return dict(self.settings).get(name)

    @property
    def text(self) -> str:
        """The key as one string: a configuration's stable identity (`configuration_key`)."""
        return configuration_key(self.task, self.settings, self.occurrence)


def settings_of(row: Mapping[str, Any], key_fields: KeyFields) -> tuple[tuple[str, Any], ...]:
    """The fields of a row that identify its run (the key fields it has), in their order."""
    return tuple((k, row[k]) for k in key_fields if k in row)


def configuration_key(task: str, settings: Sequence[tuple[str, Any]], occurrence: int) -> str:
    """A configuration's identity in every release: its task, model, GPU type and count, the
    settings of the run and, among rows alike in all of these, its place in file order, e.g.
    `lm-arena-chat:Qwen/Qwen3-8B:H100x1:max_num_seqs=128:0`. Parallelism is not part of it:
    upstream corrects it between releases (tensor_parallel of 84 rows, 2026-02-16)."""
    values = dict(settings)
    rest = ",".join(
        f"{k}={v}" for k, v in settings if k not in ("model_id", "gpu_model", "num_gpus")
    )
    return (
        f"{task}:{values.get('model_id')}:{values.get('gpu_model')}x{values.get('num_gpus')}"
        f":{rest}:{occurrence}"
    )


def configuration_keys(
    task: str, rows: Sequence[Mapping[str, Any]], key_fields: KeyFields
) -> list[str]:
    """Each row's `configuration_key`, the rows in file order."""
    seen: dict[tuple[tuple[str, Any], ...], int] = defaultdict(int)
    # The key's text of each settings once (a release has many rows alike but for occurrence).
    texts: dict[tuple[tuple[str, Any], ...], str] = {}
    keys = []
    for row in rows:
        settings = tuple([(k, row[k]) for k in key_fields if k in row])
        text = texts.get(settings)
        if text is None:
            text = texts[settings] = configuration_key(task, settings, 0)[:-1]
        keys.append(f"{text}{seen[settings]}")
        seen[settings] += 1
    return keys


@dataclass(frozen=True)
class FieldChange:
    field: str
    old: Any
    new: Any


@dataclass(frozen=True)
class RowChange:
    key: RowKey
    old_row: int
    new_row: int
    fields: list[FieldChange]


@dataclass
class TaskChanges:
    task: str
    fields_added: list[str] = field(default_factory=list)
    fields_removed: list[str] = field(default_factory=list)
    added: list[RowKey] = field(default_factory=list)
    removed: list[RowKey] = field(default_factory=list)
    changed: list[RowChange] = field(default_factory=list)
    unchanged: int = 0


@dataclass(frozen=True)
class DocumentChange:
    """A document (an index.json model entry, or a per-model file's own fields) that changed."""

    name: str
    fields: list[FieldChange]


@dataclass
class Changes:
    files_added: list[str]
    files_removed: list[str]
    tasks_added: list[str]
    tasks_removed: list[str]
    models_added: list[str]
    models_removed: list[str]
    models_changed: list[DocumentChange]
    model_files_changed: list[DocumentChange]
    tasks: list[TaskChanges]


def _field_changes(old: Document, new: Document, skip: tuple[str, ...] = ()) -> list[FieldChange]:
    return [
        FieldChange(name, old.get(name), new.get(name))
        for name in sorted(set(old) | set(new))
        if name not in skip and old.get(name) != new.get(name)
    ]


def _keyed(
    task: str, rows: Sequence[Document], key_fields: KeyFields
) -> dict[RowKey, tuple[int, Document]]:
    groups: dict[tuple[tuple[str, Any], ...], list[int]] = defaultdict(list)
    for i, row in enumerate(rows):
        groups[settings_of(row, key_fields)].append(i)
    return {
        RowKey(task, settings, n, len(members) > 1): (i, rows[i])
        for settings, members in groups.items()
        for n, i in enumerate(members)
    }


def _shape(rows: Sequence[Document]) -> set[str]:
    return {name for row in rows for name in row}


def diff_task(
    task: str, old_rows: Sequence[Document], new_rows: Sequence[Document], key_fields: KeyFields
) -> TaskChanges:
    old_shape, new_shape = _shape(old_rows), _shape(new_rows)
    result = TaskChanges(task, sorted(new_shape - old_shape), sorted(old_shape - new_shape))
    # Fields that joined or left the row shape are reported once, not on every row.
    compared = sorted(old_shape & new_shape)
    old, new = _keyed(task, old_rows, key_fields), _keyed(task, new_rows, key_fields)
    # A key is the same run in both releases only if the repeated flag agrees on the settings.
    old_by = {(k.task, k.settings, k.occurrence): (k, v) for k, v in old.items()}
    new_by = {(k.task, k.settings, k.occurrence): (k, v) for k, v in new.items()}
    for ident, (key, (i, row)) in old_by.items():
        if ident not in new_by:
            result.removed.append(key)
            continue
        new_key, (j, new_row) = new_by[ident]
        changes = [
            FieldChange(name, row.get(name), new_row.get(name))
            for name in compared
            if row.get(name) != new_row.get(name)
        ]
        if changes:
            flagged = RowKey(
                key.task, key.settings, key.occurrence, key.repeated or new_key.repeated
            )
            result.changed.append(RowChange(flagged, i, j, changes))
        else:
            result.unchanged += 1
    result.added = [key for ident, (key, _) in new_by.items() if ident not in old_by]
    result.changed.sort(key=lambda c: c.new_row)
    return result


def full_rows(files: Mapping[str, Document], task: str) -> list[dict[str, Any]]:
    """A task file's rows, each with what only its per-model file says of it.

    The k-th row of a model in the task file is the k-th row of that model's file; it adds
    the output-length histogram and the parallelism notes, as `output_length_distribution`
    and `parallelization_notes`.
    """
    rows: list[dict[str, Any]] = [
        dict(row) for row in files.get(f"tasks/{task}.json", {}).get("configurations", [])
    ]
    seen: dict[str, int] = defaultdict(int)
    for row in rows:
        model_id = row["model_id"]
        path = f"models/{model_id.replace('/', '__')}__{task}.json"
        detail = files.get(path, {}).get("configurations", [])
        k = seen[model_id]
        seen[model_id] += 1
        if k < len(detail):
            if "output_length_distribution" in detail[k]:
                row["output_length_distribution"] = detail[k]["output_length_distribution"]
            if "notes" in detail[k].get("parallelization", {}):
                row["parallelization_notes"] = detail[k]["parallelization"]["notes"]
    return rows


def diff_releases(
    old: Mapping[str, Document], new: Mapping[str, Document], key_fields: KeyFields
) -> Changes:
    """Changes from the files of one release (`path -> document`) to another's, their rows
    paired by `key_fields`."""
    old_tasks, new_tasks = old["index.json"]["tasks"], new["index.json"]["tasks"]
    old_models, new_models = old["index.json"]["models"], new["index.json"]["models"]
    both = sorted(set(old) & set(new))
    return Changes(
        files_added=sorted(set(new) - set(old)),
        files_removed=sorted(set(old) - set(new)),
        tasks_added=sorted(set(new_tasks) - set(old_tasks)),
        tasks_removed=sorted(set(old_tasks) - set(new_tasks)),
        models_added=sorted(set(new_models) - set(old_models)),
        models_removed=sorted(set(old_models) - set(new_models)),
        models_changed=[
            DocumentChange(m, changes)
            for m in sorted(set(old_models) & set(new_models))
            if (changes := _field_changes(old_models[m], new_models[m]))
        ],
        model_files_changed=[
            DocumentChange(path, changes)
            for path in both
            if path.startswith("models/")
            and (changes := _field_changes(old[path], new[path], skip=("configurations",)))
        ],
        tasks=[
            diff_task(task, full_rows(old, task), full_rows(new, task), key_fields)
            for task in sorted(set(old_tasks) | set(new_tasks))
        ],
    )
