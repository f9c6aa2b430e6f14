"""A release's files stored as LZ4 frames (db.files, migration 0004): what is stored says so and
is smaller, what is read back is byte for byte what was published, a blob
stored before (its bytes as they are) reads as it always did, and a blob of an encoding this
version cannot read is a clear error, never wrong bytes."""

from __future__ import annotations

from pathlib import Path

import lz4.frame
import pytest
from sqlalchemy import select, update
from sqlalchemy.ext.asyncio import AsyncEngine

from db.database import sessionmaker
from db.files import ExportError, release_file, release_files
from db.tables import BlobRow, ReleaseFileRow

pytestmark = pytest.mark.anyio


def published(root: Path) -> dict[str, bytes]:
    return {p.relative_to(root).as_posix(): p.read_bytes() for p in root.rglob("*.json")}


async def test_files_are_stored_as_lz4_frames_and_read_back_byte_for_byte(
    synthetic_db: AsyncEngine, synthetic_dir: Path
) -> None:
    files = published(synthetic_dir)
    async with sessionmaker(synthetic_db)() as session:
        blobs = (await session.execute(select(BlobRow))).scalars().all()
        assert {b.encoding for b in blobs} == {"lz4"}
        by_sha = {b.sha256: b for b in blobs}
        stored = await session.execute(select(ReleaseFileRow.path, ReleaseFileRow.sha256))
        for path, sha in stored:
            blob = by_sha[sha]
            assert blob.size == len(files[path])
            assert lz4.frame.decompress(blob.data) == files[path]
        assert await release_files(session, release_id=1) == files
        sha, data = await release_file(session, release_id=1, path="index.json") or ("", b"")
        assert data == files["index.json"] and sha == by_sha[sha].sha256
        raw = sum(len(f) for f in files.values())
        assert sum(len(b.data) for b in blobs) < raw / 2  # JSON compresses well


async def test_a_blob_stored_as_it_is_reads_as_before_and_an_unknown_encoding_is_refused(
    synthetic_db: AsyncEngine, synthetic_dir: Path
) -> None:
    files = published(synthetic_dir)
    async with sessionmaker(synthetic_db)() as session:
        sha = await session.scalar(
            select(ReleaseFileRow.sha256).where(ReleaseFileRow.path == "index.json")
        )
        as_before = update(BlobRow).where(BlobRow.sha256 == sha)
        await session.execute(as_before.values(data=files["index.json"], encoding=None))
        assert (await release_files(session, release_id=1))["index.json"] == files["index.json"]
        await session.execute(as_before.values(encoding="zstd"))
        with pytest.raises(ExportError, match="stored as 'zstd', which this LeadGreen cannot"):
            await release_file(session, release_id=1, path="index.json")
        await session.rollback()
