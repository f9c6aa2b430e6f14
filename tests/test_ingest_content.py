"""The content digest computed aside (db.content.digest_aside, a child process reading the spool)
is the one computed here, an ingest records it and the release of the same data as before; a
failed or cancelled child fails or stops the ingest, which leaves nothing behind. And on
PostgreSQL the files' column is compressed with lz4 (migration 0003), a server without it
keeping its own method."""

from __future__ import annotations

import asyncio
import importlib
import json
import sys
from pathlib import Path
from typing import Any

import pytest
from sqlalchemy import select, text
from sqlalchemy.ext.asyncio import AsyncEngine

from db import content
from db.content import content_digest, digest_aside
from db.database import sessionmaker
from db.snapshot import load_snapshot
from db.tables import ReleaseRow
from tests import synthetic
from tests.conftest import ingest_dir

pytestmark = pytest.mark.anyio


@pytest.fixture
def aside(monkeypatch: pytest.MonkeyPatch) -> None:
    """Every spool digested by a child process, however small."""
    monkeypatch.setattr(content, "ASIDE_BYTES", 0)


def reformatted(tmp_path: Path) -> Path:
    """The synthetic files written otherwise: indented, their keys in another order."""
    files = synthetic.documents()
    root = tmp_path / "reformatted"
    for path, doc in files.items():
        target = root / path
        target.parent.mkdir(parents=True, exist_ok=True)
        target.write_text(json.dumps(doc, indent=3, sort_keys=True))
    return root


@pytest.mark.usefixtures("aside")
async def test_the_child_computes_the_digest_computed_here(
    synthetic_dir: Path, tmp_path: Path
) -> None:
    for root in (synthetic_dir, reformatted(tmp_path)):
        snapshot = await load_snapshot(str(root))
        assert await digest_aside(snapshot.files) == content_digest(dict(snapshot.files))
    assert await digest_aside({"a.json": b"[1]"}) == content_digest({"a.json": b"[1]"})


async def stored_digests(engine: AsyncEngine) -> list[tuple[int, str | None, int | None]]:
    async with sessionmaker(engine)() as session:
        rows = await session.execute(
            select(ReleaseRow.id, ReleaseRow.content_digest, ReleaseRow.same_data_as).order_by(
                ReleaseRow.id
            )
        )
        return [tuple(row) for row in rows]


@pytest.mark.usefixtures("aside")
async def test_an_ingest_records_the_digest_and_the_same_data_before(
    engine: AsyncEngine, synthetic_dir: Path, tmp_path: Path
) -> None:
    first = await ingest_dir(engine, synthetic_dir)
    again = await ingest_dir(engine, reformatted(tmp_path))
    digest = content_digest(dict((await load_snapshot(str(synthetic_dir))).files))
    assert (first.same_data_as, again.same_data_as) == (None, first.release_id)
    assert await stored_digests(engine) == [
        (first.release_id, digest, None),
        (again.release_id, digest, first.release_id),
    ]


def child(
    monkeypatch: pytest.MonkeyPatch, tmp_path: Path, script: str
) -> tuple[list[Any], asyncio.Event]:
    """The child process is `script` (a shell script); the processes started, kept, and an
    event set once one is."""
    program = tmp_path / "child.sh"
    program.write_text(f"#!/bin/sh\n{script}\n")
    program.chmod(0o755)
    monkeypatch.setattr(sys, "executable", str(program))
    started: list[Any] = []
    running = asyncio.Event()
    start = asyncio.create_subprocess_exec

    async def starting(*args: Any, **kwargs: Any) -> Any:
        started.append(await start(*args, **kwargs))
        running.set()
        return started[-1]

    monkeypatch.setattr(asyncio, "create_subprocess_exec", starting)
    return started, running


@pytest.mark.usefixtures("aside")
async def test_a_failed_child_fails_the_ingest_and_changes_nothing(
    engine: AsyncEngine, synthetic_dir: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    await ingest_dir(engine, synthetic_dir)
    before = await stored_digests(engine)
    child(monkeypatch, tmp_path, "echo 'no digest today' >&2; exit 3")
    with pytest.raises(RuntimeError) as info:
        await ingest_dir(engine, reformatted(tmp_path))
    assert str(info.value) == "content digest: exit status 3: no digest today\n"
    assert await stored_digests(engine) == before


@pytest.mark.usefixtures("aside")
async def test_without_a_process_to_start_the_digest_is_made_here(
    synthetic_dir: Path, monkeypatch: pytest.MonkeyPatch, caplog: pytest.LogCaptureFixture
) -> None:
    async def refused(*_args: Any, **_kwargs: Any) -> Any:
        raise PermissionError(1, "Operation not permitted")

    monkeypatch.setattr(asyncio, "create_subprocess_exec", refused)
    snapshot = await load_snapshot(str(synthetic_dir))
    assert await digest_aside(snapshot.files) == content_digest(dict(snapshot.files))
    assert "computed in this process: [Errno 1] Operation not permitted" in caplog.text


@pytest.mark.usefixtures("aside")
async def test_a_cancelled_digest_kills_its_child(
    synthetic_dir: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    started, running = child(monkeypatch, tmp_path, "exec sleep 30")
    snapshot = await load_snapshot(str(synthetic_dir))
    task = asyncio.create_task(digest_aside(snapshot.files))
    await running.wait()
    task.cancel()
    with pytest.raises(asyncio.CancelledError):
        await task
    assert started[0].returncode == -9


# --- blobs compressed with lz4 on PostgreSQL --------------------------------------------------


def postgres_only(engine: AsyncEngine) -> None:
    if engine.dialect.name != "postgresql":
        pytest.skip("PostgreSQL's compression")


async def test_blobs_are_compressed_with_lz4(engine: AsyncEngine, synthetic_dir: Path) -> None:
    postgres_only(engine)
    await ingest_dir(engine, synthetic_dir)
    async with engine.connect() as conn:
        method = await conn.scalar(
            text(
                "SELECT attcompression::text FROM pg_attribute "
                "WHERE attrelid = 'blobs'::regclass AND attname = 'data'"
            )
        )
        # The files come as LZ4 frames already (migration 0004): the server's own compression
        # finds little left to take, and is lz4 for whatever it tries.
        large = await conn.scalar(text("SELECT encoding FROM blobs WHERE size > 4000 LIMIT 1"))
    assert (method, large) == ("l", "lz4")


async def test_a_server_without_lz4_keeps_its_compression(engine: AsyncEngine) -> None:
    """The migration's guard lets a refused method pass (as a server built without lz4 refuses
    it), and nothing else."""
    postgres_only(engine)
    migration = importlib.import_module("db.migrations.versions.0003_blobs_lz4")
    refused = "DO $x$ BEGIN RAISE EXCEPTION USING ERRCODE = 'feature_not_supported'; END $x$"
    missing = "ALTER TABLE nowhere ALTER COLUMN data SET COMPRESSION lz4"
    async with engine.begin() as conn:
        await conn.execute(text(migration.guarded(refused)))
        with pytest.raises(Exception, match='relation "nowhere" does not exist'):
            await conn.execute(text(migration.guarded(missing)))
