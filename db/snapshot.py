"""Read an upstream snapshot: every file's bytes as published, its index checked, and each task
read (validated, its task-file rows paired with its per-model files' rows) one at a time.

A snapshot's files are kept as bytes; a task's rows are parsed only when the ingest asks for
that task, so that one task's rows are in memory at a time, whatever the size of the data.
"""

from __future__ import annotations

import hashlib
from collections import defaultdict
from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Protocol

from db.content import content_digest
from db.errors import IngestError
from db.fetch import Fetcher, parse_json, upstream_commit
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


class Source(Protocol):
    """Where a snapshot's files come from: db.fetch.Fetcher, db.history.GitFetcher."""

    location: str

    async def read(self, path: str) -> bytes: ...
    def listing(self, folder: str) -> list[str] | None: ...


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


@dataclass
class Snapshot:
    location: str
    commit: str | None
    index: UpstreamIndex
    # Every file of the snapshot, by its path in the upstream layout, as published.
    files: dict[str, bytes] = field(repr=False)
    # SHA-256 over the files' paths and bytes: equal digests, equal files.
    digest: str
    # SHA-256 over the files' content, whatever its formatting and row order: a release whose
    # files differ from another's only in how they are written has the same.
    content_digest: str
    warnings: list[str] = field(default_factory=list)
    # The tasks to read (those index.json lists, or the ones asked for).
    task_names: list[str] = field(default_factory=list)
    # Per-model files no task file refers to: kept as published, not served as measurements.
    orphans: list[str] = field(default_factory=list)

    def task(self, name: str) -> TaskData:
        """The task's rows, validated and paired (an IngestError names what is wrong)."""
        return _read_task(self, name)

    def tasks(self) -> list[TaskData]:
        return [self.task(name) for name in self.task_names]


def model_file_name(model_id: str, task: str) -> str:
    return f"models/{model_id.replace('/', '__')}__{task}.json"


def sha256(raw: bytes) -> str:
    return hashlib.sha256(raw).hexdigest()


def files_digest(files: Mapping[str, bytes]) -> str:
    hasher = hashlib.sha256()
    for path in sorted(files):
        hasher.update(path.encode() + b"\0" + sha256(files[path]).encode() + b"\0")
    return hasher.hexdigest()


async def load_snapshot(
    location: str, *, tasks: tuple[str, ...] | None = None, source: Source | None = None
) -> Snapshot:
    """Read a snapshot's files and check its index: the given tasks, or every task it lists.

    `source` reads the files (by default a Fetcher of `location`: a directory or a URL).
    """
    if source is None:
        async with Fetcher(location) as fetcher:
            return await _load(location, fetcher, tasks)
    return await _load(location, source, tasks)


async def _load(location: str, source: Source, tasks: tuple[str, ...] | None) -> Snapshot:
    files = {"index.json": await source.read("index.json")}
    index = validate(UpstreamIndex, parse_json("index.json", files["index.json"]), "index.json")
    names = list(index.tasks if tasks is None else tasks)
    for name in names:
        if name not in index.tasks:
            raise IngestError("index.json", f"task {name!r} is not listed", field="tasks")
        path = f"tasks/{name}.json"
        files[path] = await source.read(path)
        for model_id, row in _model_ids(path, files[path]):
            if model_id not in index.models:
                message = f"model {model_id!r} is not in index.json"
                raise IngestError(path, message, row=row, field="model_id")
            model_path = model_file_name(model_id, name)
            files[model_path] = await source.read(model_path)
    orphans = [p for p in source.listing("models") or [] if p not in files]
    for path in orphans:
        files[path] = await source.read(path)
    warnings = [
        f"{path}: no task file refers to it; kept as published, not served as measurements"
        for path in orphans
    ]
    return Snapshot(
        location=location,
        commit=upstream_commit(location),
        index=index,
        files=files,
        digest=files_digest(files),
        content_digest=content_digest(files),
        warnings=warnings,
        task_names=names,
        orphans=orphans,
    )


def _model_ids(path: str, raw: bytes) -> list[tuple[str, int]]:
    """The models a task file's rows name, each with its first row, in order of appearance
    (rows without a model id are left for the task's validation to name)."""
    doc = validate(TaskFile, parse_json(path, raw), path)
    ids: dict[str, int] = {}
    for i, row in enumerate(doc.configurations):
        model_id = row.get("model_id") if isinstance(row, dict) else None
        if isinstance(model_id, str):
            ids.setdefault(model_id, i)
    return list(ids.items())


def _read_task(snapshot: Snapshot, task: str) -> TaskData:
    path = f"tasks/{task}.json"
    doc = validate(TaskFile, parse_json(path, snapshot.files[path]), path)
    if doc.task != task:
        raise IngestError(path, f"says task {doc.task!r}, expected {task!r}", field="task")
    index = snapshot.index
    architecture = next((a for a, ts in index.architectures.items() if task in ts), None)
    kind = kind_of(architecture, doc.architecture)
    variants = [kind.variant_of(raw) for raw in doc.configurations]
    rows = [
        validate(kind.task_shapes[v], raw, path, row=i, prefix=f"configurations[{i}].")
        for i, (raw, v) in enumerate(zip(doc.configurations, variants, strict=True))
    ]
    unknown: dict[str, int] = defaultdict(int)
    by_model: dict[str, list[int]] = defaultdict(list)
    for i, row in enumerate(rows):
        by_model[row.model_id].append(i)
        for key in row.model_extra or {}:
            unknown[key] += 1
    snapshot.warnings.extend(
        f"{path}: kept field {k!r}, unknown to LeadGreen, on {n} rows" for k, n in unknown.items()
    )
    model_files = {}
    measurements: list[Measurement] = []
    for model_id, own in by_model.items():
        model_path = model_file_name(model_id, task)
        model_doc = validate(
            ModelFile, parse_json(model_path, snapshot.files[model_path]), model_path
        )
        if model_doc.model_id != model_id:
            raise IngestError(
                model_path,
                f"says model {model_doc.model_id!r}, expected {model_id!r}",
                field="model_id",
            )
        model_files[model_id] = (model_path, model_doc)
        paired = [(i, rows[i], variants[i]) for i in own]
        measurements += _pair(kind, path, paired, model_path, model_doc)
    measurements.sort(key=lambda m: m.task_row)
    return TaskData(
        task, doc.task_display_name, architecture, doc.architecture, kind, measurements, model_files
    )


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
        extra = row.model_extra or {}
        for key, value in flat.items():
            if key not in row.model_fields_set and key not in extra:
                continue  # said by the model file only (a newer field): kept there
            stated = getattr(row, key, extra.get(key))
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
