"""Read an upstream snapshot: every file's bytes as published, its index checked, and each task
read (validated, its task-file rows paired with its per-model files' rows) one at a time.

A snapshot's files are kept as bytes in a spool (db.spool), not in memory; a task's rows are
parsed only when the ingest asks for that task, so that one task's rows are in memory at a
time, whatever the size of the data.
"""

from __future__ import annotations

import asyncio
import hashlib
from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Protocol

from db.content import digest_aside
from db.errors import IngestError
from db.fetch import Fetcher, parse_json, upstream_commit
from db.shapes import Manifest, TaskFile, UpstreamIndex, validate
from db.spool import Spool
from db.taskfile import (
    Measurement,
    TaskData,
    TaskReading,
    model_file_name,
    read_task,
    start_task,
)

# Files read at once (a directory's through threads, a URL's through the client's connections).
READING = 16

__all__ = ["Measurement", "Snapshot", "TaskData", "TaskReading", "load_snapshot", "model_file_name"]


class Source(Protocol):
    """Where a snapshot's files come from: db.fetch.Fetcher, db.history.GitFetcher."""

    location: str

    async def read(self, path: str) -> bytes: ...
    def listing(self, folder: str) -> list[str] | None: ...


@dataclass
class Snapshot:
    location: str
    commit: str | None
    index: UpstreamIndex
    # Every file of the snapshot, by its path in the upstream layout, as published (a Spool
    # when read by load_snapshot).
    files: Mapping[str, bytes] = field(repr=False)
    # SHA-256 over the files' paths and bytes: equal digests, equal files.
    digest: str
    warnings: list[str] = field(default_factory=list)
    # The tasks to read (those index.json lists, or the ones asked for).
    task_names: list[str] = field(default_factory=list)
    # Per-model files no task file refers to: kept as published, not served as measurements.
    orphans: list[str] = field(default_factory=list)

    def task(self, name: str) -> TaskData:
        """The task's rows, validated and paired (an IngestError names what is wrong)."""
        return read_task(self.files, self.index, name, self.warnings)

    def tasks(self) -> list[TaskData]:
        return [self.task(name) for name in self.task_names]

    def start_task(self, name: str) -> TaskReading:
        """The task's file read and validated; its models' files read as `models()` goes."""
        return start_task(self.files, self.index, name, self.warnings)

    async def content_digest(self) -> str:
        """SHA-256 over the files' content, whatever its formatting and row order: a release
        whose files differ from another's only in how they are written has the same. A large
        snapshot's is computed by a process of its own, while the caller goes on (db.content)."""
        return await digest_aside(self.files)

    def sha256(self, path: str) -> str:
        files = self.files
        return files.sha256(path) if isinstance(files, Spool) else sha256(files[path])

    def size(self, path: str) -> int:
        files = self.files
        return files.size(path) if isinstance(files, Spool) else len(files[path])


def sha256(raw: bytes) -> str:
    return hashlib.sha256(raw).hexdigest()


def files_digest(files: Mapping[str, bytes]) -> str:
    hasher = hashlib.sha256()
    for path in sorted(files):
        digest = files.sha256(path) if isinstance(files, Spool) else sha256(files[path])
        hasher.update(path.encode() + b"\0" + digest.encode() + b"\0")
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
    files = Spool()
    try:
        raw = await source.read("index.json")
        files.add("index.json", raw)
        index = validate(UpstreamIndex, parse_json("index.json", raw), "index.json")
        names = list(index.tasks if tasks is None else tasks)
        for name in names:
            if name not in index.tasks:
                raise IngestError("index.json", f"task {name!r} is not listed", field="tasks")
            path = f"tasks/{name}.json"
            raw = await source.read(path)
            files.add(path, raw)
            model_paths, unknown = [], None
            for model_id, row in _model_ids(path, raw):
                if model_id not in index.models:
                    message = f"model {model_id!r} is not in index.json"
                    unknown = IngestError(path, message, row=row, field="model_id")
                    break
                model_paths.append(model_file_name(model_id, name))
            await _read_all(source, model_paths, files)
            if unknown is not None:
                raise unknown
        del raw
        orphans = [p for p in source.listing("models") or [] if p not in files]
        await _read_all(source, orphans, files)
    except BaseException:
        files.close()
        raise
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
        warnings=warnings,
        task_names=names,
        orphans=orphans,
    )


async def _read_all(source: Source, paths: list[str], files: Spool) -> None:
    """Read `paths`, up to READING at a time, and keep them in order; a failure is raised as
    reading them one after the other would (the first in order)."""
    for start in range(0, len(paths), READING):
        chunk = paths[start : start + READING]
        read = await asyncio.gather(*(source.read(p) for p in chunk), return_exceptions=True)
        for path, data in zip(chunk, read, strict=True):
            if isinstance(data, BaseException):
                raise data
            files.add(path, data)


def _model_ids(path: str, raw: bytes) -> list[tuple[str, int]]:
    """The models a task file's rows name, each with its first row, in order of appearance
    (rows without a model id are left for the task's validation to name). A file whose rows
    are not a list of objects is refused here, as its validation says; the rest of what it says
    is validated when its task is read (db.taskfile.start_task): at fifty times today's data
    validating the task files twice took a fifth of a second."""
    doc = parse_json(path, raw)
    rows = doc.get("configurations") if isinstance(doc, dict) else None
    if not isinstance(rows, list) or not all(isinstance(row, dict) for row in rows):
        rows = validate(TaskFile, doc, path).configurations
    ids: dict[str, int] = {}
    for i, row in enumerate(rows):
        model_id = row.get("model_id")
        if isinstance(model_id, str):
            ids.setdefault(model_id, i)
    return list(ids.items())


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
