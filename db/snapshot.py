"""Load an upstream snapshot and a manifest into validated, paired, plain values."""

from __future__ import annotations

import hashlib
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from db.errors import IngestError
from db.fetch import Fetched, Fetcher, parse_json, upstream_commit
from db.kinds import Kind, kind_of
from db.shapes import (
    Manifest,
    ModelFile,
    ModelFileRow,
    TaskFile,
    TaskRow,
    UpstreamIndex,
    validate,
)

# Keys of a model file's row that the task-file row does not repeat as they are.
_NESTED = ("parallelization", "output_length_distribution")


@dataclass(frozen=True)
class Measurement:
    """A task-file row paired with its row in the per-model file."""

    row: TaskRow
    task_row: int
    model_row: int
    detail: ModelFileRow
    variant: str


@dataclass(frozen=True)
class TaskData:
    name: str
    display_name: str
    architecture: str | None
    file_architecture: str | None
    kind: Kind
    measurements: list[Measurement]
    model_files: dict[str, tuple[str, ModelFile]]


@dataclass(frozen=True)
class Snapshot:
    location: str
    commit: str | None
    index: UpstreamIndex
    tasks: list[TaskData]
    digest: str
    warnings: list[str] = field(default_factory=list)
    # Per-model files no task file refers to, as published (directory sources only).
    orphans: dict[str, Any] = field(default_factory=dict)


def model_file_name(model_id: str, task: str) -> str:
    return f"models/{model_id.replace('/', '__')}__{task}.json"


def digest(files: list[Fetched]) -> str:
    hasher = hashlib.sha256()
    for fetched in sorted(files, key=lambda f: f.path):
        hasher.update(fetched.path.encode() + b"\0" + fetched.raw + b"\0")
    return hasher.hexdigest()


async def load_snapshot(location: str, *, tasks: tuple[str, ...] | None = None) -> Snapshot:
    """Fetch and check a snapshot: the given tasks, or every task its index.json lists."""
    async with Fetcher(location) as fetcher:
        index_file = await fetcher.get("index.json")
        index = validate(UpstreamIndex, index_file.data, "index.json")
        files, loaded, warnings = [index_file], [], list[str]()
        for task in index.tasks if tasks is None else tasks:
            if task not in index.tasks:
                raise IngestError("index.json", f"task {task!r} is not listed", field="tasks")
            data, task_files = await _load_task(fetcher, index, task, warnings)
            files += task_files
            loaded.append(data)
        referenced = {f.path for f in files}
        unreferenced = [p for p in fetcher.listing("models") or [] if p not in referenced]
        orphans = await fetcher.get_many(unreferenced)
    warnings += [
        f"{f.path}: no task file refers to it; kept as published, not served as measurements"
        for f in orphans
    ]
    return Snapshot(
        location,
        upstream_commit(location),
        index,
        loaded,
        digest(files + orphans),
        warnings,
        {f.path: f.data for f in orphans},
    )


async def _load_task(
    fetcher: Fetcher, index: UpstreamIndex, task: str, warnings: list[str]
) -> tuple[TaskData, list[Fetched]]:
    path = f"tasks/{task}.json"
    task_file = await fetcher.get(path)
    doc = validate(TaskFile, task_file.data, path)
    if doc.task != task:
        raise IngestError(path, f"says task {doc.task!r}, expected {task!r}", field="task")
    architecture = next((a for a, ts in index.architectures.items() if task in ts), None)
    kind = kind_of(architecture, doc.architecture)
    variants = [kind.variant_of(raw) for raw in doc.configurations]
    rows = [
        validate(kind.task_shapes[v], raw, path, row=i, prefix=f"configurations[{i}].")
        for i, (raw, v) in enumerate(zip(doc.configurations, variants, strict=True))
    ]
    unknown: dict[str, int] = {}
    for i, row in enumerate(rows):
        if row.model_id not in index.models:
            raise IngestError(
                path, f"model {row.model_id!r} is not in index.json", row=i, field="model_id"
            )
        for key in row.model_extra or {}:
            unknown[key] = unknown.get(key, 0) + 1
    warnings += [
        f"{path}: kept field {k!r}, unknown to LeadGreen, on {n} rows" for k, n in unknown.items()
    ]
    model_ids = list(dict.fromkeys(row.model_id for row in rows))
    fetched = await fetcher.get_many([model_file_name(m, task) for m in model_ids])
    model_files = {}
    measurements: list[Measurement] = []
    for model_id, file in zip(model_ids, fetched, strict=True):
        model_doc = validate(ModelFile, file.data, file.path)
        if model_doc.model_id != model_id:
            raise IngestError(
                file.path,
                f"says model {model_doc.model_id!r}, expected {model_id!r}",
                field="model_id",
            )
        model_files[model_id] = (file.path, model_doc)
        own = [(i, row, variants[i]) for i, row in enumerate(rows) if row.model_id == model_id]
        measurements += _pair(kind, path, own, file.path, model_doc)
    measurements.sort(key=lambda m: m.task_row)
    return TaskData(
        task, doc.task_display_name, architecture, doc.architecture, kind, measurements, model_files
    ), [
        task_file,
        *fetched,
    ]


def _pair(
    kind: Kind,
    task_path: str,
    own: list[tuple[int, TaskRow, str]],
    model_path: str,
    model_doc: ModelFile,
) -> list[Measurement]:
    """Pair the i-th task-file row of a model with the i-th row of its model file, checked."""
    if len(own) != len(model_doc.configurations):
        raise IngestError(
            model_path,
            f"{len(model_doc.configurations)} configurations, but "
            f"{task_path} has {len(own)} for this model",
            field="configurations",
        )
    paired = []
    for model_row, ((task_row, row, variant), raw) in enumerate(
        zip(own, model_doc.configurations, strict=True)
    ):
        detail = validate(
            kind.model_shape, raw, model_path, row=model_row, prefix=f"configurations[{model_row}]."
        )
        # Everything the model file says of the row, flattened as the task file writes it.
        flat = {k: v for k, v in raw.items() if k not in _NESTED}
        flat.update((k, v) for k, v in raw["parallelization"].items() if k != "notes")
        for key, value in flat.items():
            stated = getattr(row, key, (row.model_extra or {}).get(key))
            if stated != value:
                raise IngestError(
                    model_path,
                    f"{value!r} disagrees with {task_path} row {task_row} ({stated!r})",
                    row=model_row,
                    field=key,
                )
        paired.append(Measurement(row, task_row, model_row, detail, variant))
    return paired


def load_manifest(path: str | Path) -> tuple[Manifest, bytes]:
    name = str(path)
    try:
        raw = Path(path).read_bytes()
    except OSError as exc:
        raise IngestError(name, f"cannot read manifest: {exc.strerror}") from exc
    return validate(Manifest, parse_json(name, raw), name), raw


def manifest_digest(raw: bytes | None) -> str:
    return hashlib.sha256(raw or b"").hexdigest()


def combined_digest(snapshot: Snapshot, manifest_raw: bytes | None) -> str:
    return hashlib.sha256(f"{snapshot.digest}:{manifest_digest(manifest_raw)}".encode()).hexdigest()
