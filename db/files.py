"""A release's files as they were published: stored once (blobs, shared by every release that
holds the same bytes; each an LZ4 frame, a fifth of the JSON's size), read back byte for byte,
and written to a folder safely (a temporary folder renamed into place; no link followed;
nothing left half-written)."""

from __future__ import annotations

import os
import shutil
import tempfile
import uuid
from collections.abc import Mapping
from pathlib import Path, PurePosixPath
from typing import TYPE_CHECKING

import lz4.frame
from sqlalchemy import select
from sqlalchemy.ext.asyncio import AsyncSession

from db.errors import IngestError
from db.tables import BlobRow, ReleaseFileRow, ReleaseRow

if TYPE_CHECKING:
    from db.snapshot import Snapshot

# Rows written per statement, and the most bytes of files one statement carries.
BATCH = 2_000
BATCH_BYTES = 8 * 1024 * 1024
BLOB_COLUMNS = ("sha256", "size", "data", "encoding")
# How blobs are written (BlobRow.encoding); null is read as the bytes as they are.
LZ4 = "lz4"


async def store_files(session: AsyncSession, release_id: int, snapshot: Snapshot) -> None:
    """Keep a snapshot's files for a release, each file's bytes stored once in all the database;
    the files are read one batch at a time, a batch bounded in bytes."""
    # The ingest's writer (imported here: a server, which reads files, never writes them).
    from db.bulk import insert_rows

    shas = {path: snapshot.sha256(path) for path in snapshot.files}
    known: set[str] = set()
    unique = sorted(set(shas.values()))
    for start in range(0, len(unique), BATCH):
        chunk = unique[start : start + BATCH]
        known.update(await session.scalars(select(BlobRow.sha256).where(BlobRow.sha256.in_(chunk))))
    new = {sha: path for path, sha in shas.items() if sha not in known}
    blobs: list[tuple[str, int, bytes, str]] = []
    size = 0
    for sha, path in new.items():
        data = snapshot.files[path]
        if blobs and size + len(data) > BATCH_BYTES:
            await insert_rows(session, BlobRow, BLOB_COLUMNS, blobs)
            blobs, size = [], 0
        blobs.append((sha, len(data), lz4.frame.compress(data), LZ4))
        size += len(data)
    if blobs:
        await insert_rows(session, BlobRow, BLOB_COLUMNS, blobs)
    del blobs
    await insert_rows(
        session,
        ReleaseFileRow,
        ("release_id", "path", "sha256", "size"),
        ((release_id, path, sha, snapshot.size(path)) for path, sha in shas.items()),
    )


class ExportError(Exception):
    pass


async def release_files(session: AsyncSession, *, release_id: int) -> dict[str, bytes]:
    """Every file of the release, by its path in the upstream layout, byte for byte."""
    release = await session.get(ReleaseRow, release_id)
    if release is None:
        raise ExportError(f"there is no release {release_id}")
    if not release.files_kept:
        raise ExportError(
            f"release {release_id} was ingested before LeadGreen kept files as published: "
            "ingest its source again to keep them"
        )
    rows = await session.execute(
        select(ReleaseFileRow.path, BlobRow.data, BlobRow.encoding)
        .join(BlobRow, BlobRow.sha256 == ReleaseFileRow.sha256)
        .where(ReleaseFileRow.release_id == release_id)
        .order_by(ReleaseFileRow.path)
    )
    return {path: decoded(data, encoding) for path, data, encoding in rows}


async def release_file(
    session: AsyncSession, *, release_id: int, path: str
) -> tuple[str, bytes] | None:
    """One file of the release with its SHA-256 (hex, as stored at ingest), or None."""
    row = (
        await session.execute(
            select(BlobRow.sha256, BlobRow.data, BlobRow.encoding)
            .join(ReleaseFileRow, BlobRow.sha256 == ReleaseFileRow.sha256)
            .where(ReleaseFileRow.release_id == release_id, ReleaseFileRow.path == path)
        )
    ).first()
    return None if row is None else (row.sha256, decoded(row.data, row.encoding))


def decoded(data: bytes, encoding: str | None) -> bytes:
    """A blob's file bytes: its data as `encoding` says (BlobRow.encoding)."""
    if encoding is None:
        return bytes(data)
    if encoding == LZ4:
        file: bytes = lz4.frame.decompress(data)
        return file
    raise ExportError(f"a file is stored as {encoding!r}, which this LeadGreen cannot read")


def write_files(files: Mapping[str, bytes], target: Path, *, replace: bool = False) -> None:
    """Write `files` under `target`, which must not exist or be an empty folder (or, with
    `replace`, is replaced whole). The files go to a temporary folder beside it first, which is
    renamed into place: a failure (a full disk) leaves `target` as it was."""
    if target.is_symlink():
        raise ExportError(f"{target} is a link: give a folder")
    if target.exists() and not target.is_dir():
        raise ExportError(f"{target} is not a folder")
    if target.exists() and any(target.iterdir()) and not replace:
        raise ExportError(f"{target} is not empty: give an empty folder, or --replace")
    target.parent.mkdir(parents=True, exist_ok=True)
    staging = Path(tempfile.mkdtemp(prefix=f".{target.name}.", dir=target.parent))
    try:
        for path, data in files.items():
            parts = PurePosixPath(path).parts
            if not parts or any(p in ("", ".", "..") for p in parts) or path.startswith("/"):
                raise IngestError(path, "not a path inside the release")
            file = staging.joinpath(*parts)
            file.parent.mkdir(parents=True, exist_ok=True)
            # O_EXCL: a file is created, never opened through something already there.
            fd = os.open(file, os.O_WRONLY | os.O_CREAT | os.O_EXCL | os.O_NOFOLLOW, 0o644)
            with os.fdopen(fd, "wb") as out:
                out.write(data)
        if target.exists():
            old = target.with_name(f".{target.name}.{uuid.uuid4().hex}")
            target.rename(old)
            staging.rename(target)
            shutil.rmtree(old)
        else:
            staging.rename(target)
    except BaseException:
        shutil.rmtree(staging, ignore_errors=True)
        raise
