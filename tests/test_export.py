"""Round trips: what was ingested exports byte for byte as it was published, written safely.

Each snapshot in ../shared/data is ingested into a fresh database (SQLite and PostgreSQL),
read back with `db.files.release_files` and compared, file by file, with the originals' bytes.
The CLI (`leadgreen export`) is checked on SQLite: byte-identical files, a new or empty folder
only (or --replace), no link followed, nothing left half-written when a write fails.
"""

from __future__ import annotations

import asyncio
import errno
import json
import os
from pathlib import Path

import pytest
from click.testing import CliRunner
from sqlalchemy.ext.asyncio import AsyncEngine

from db.database import create_engine, create_tables, sessionmaker
from db.files import release_files
from graph.cli import main
from tests.conftest import EARLIER, SEED, SNAPSHOT, ingest_dir

pytestmark = pytest.mark.anyio

ORPHAN = "models/nvidia__NVIDIA-Nemotron-Nano-12B-v2-VL-BF16__video-chat.json"


def read_files(root: Path) -> dict[str, bytes]:
    """Every file under `root`, by its path relative to it, as bytes."""
    return {
        path.relative_to(root).as_posix(): path.read_bytes()
        for path in root.rglob("*")
        if path.is_file()
    }


LATER_FILES = read_files(SNAPSHOT)
EARLIER_FILES = read_files(EARLIER)
CASES = {
    "2026-02-16": (SNAPSHOT, SEED, LATER_FILES),
    "2025-12-17": (EARLIER, None, EARLIER_FILES),
}


def test_the_snapshots_hold_the_files_the_round_trip_expects() -> None:
    """Counted on the directories: 62 and 63 model files, plus index.json and 7 task files."""
    for files, models in ((LATER_FILES, 62), (EARLIER_FILES, 63)):
        tasks = json.loads(files["index.json"])["tasks"]
        assert len(tasks) == 7
        assert sorted(p for p in files if not p.startswith("models/")) == sorted(
            ["index.json", *(f"tasks/{t}.json" for t in tasks)]
        )
        assert sum(p.startswith("models/") for p in files) == models
        assert len(files) == models + 8
    # The one extra file of 2025-12-17: a model file no task file refers to.
    assert set(EARLIER_FILES) - set(LATER_FILES) == {ORPHAN}
    assert set(LATER_FILES) < set(EARLIER_FILES)


def assert_same_files(exported: dict[str, bytes], published: dict[str, bytes]) -> None:
    assert sorted(exported) == sorted(published)
    assert [p for p in published if exported[p] != published[p]] == []


async def export(engine: AsyncEngine, release_id: int) -> dict[str, bytes]:
    async with sessionmaker(engine)() as session:
        return await release_files(session, release_id=release_id)


@pytest.mark.parametrize("snapshot", sorted(CASES))
async def test_round_trip_of_each_snapshot(engine: AsyncEngine, snapshot: str) -> None:
    root, manifest, published = CASES[snapshot]
    report = await ingest_dir(engine, root, manifest)
    assert not report.unchanged
    exported = await export(engine, report.release_id)
    assert len(exported) == len(published)
    assert_same_files(exported, published)


async def test_round_trip_of_both_snapshots_in_one_database(engine: AsyncEngine) -> None:
    later = await ingest_dir(engine, SNAPSHOT, SEED)
    earlier = await ingest_dir(engine, EARLIER)
    assert later.release_id != earlier.release_id
    assert_same_files(await export(engine, later.release_id), LATER_FILES)
    assert_same_files(await export(engine, earlier.release_id), EARLIER_FILES)


async def test_the_orphan_file_stays_with_its_release(engine: AsyncEngine) -> None:
    earlier = await ingest_dir(engine, EARLIER)
    later = await ingest_dir(engine, SNAPSHOT, SEED)
    assert (await export(engine, earlier.release_id))[ORPHAN] == EARLIER_FILES[ORPHAN]
    assert ORPHAN not in await export(engine, later.release_id)


def ingest_sync(url: str, root: Path, manifest: Path | None) -> int:
    async def run() -> int:
        engine = create_engine(url)
        try:
            await create_tables(engine)
            return (await ingest_dir(engine, root, manifest)).release_id
        finally:
            await engine.dispose()

    return asyncio.run(run())


@pytest.mark.parametrize("snapshot", sorted(CASES))
def test_cli_export_writes_the_published_files(tmp_path: Path, snapshot: str) -> None:
    published = CASES[snapshot][2]
    db = tmp_path / "leadgreen.db"
    # Both releases in the database, so --release has to pick the right one.
    ids = {
        name: ingest_sync(f"sqlite+aiosqlite:///{db}", source, man)
        for name, (source, man, _) in CASES.items()
    }
    target = tmp_path / "out"
    result = CliRunner().invoke(
        main,
        ["export", str(target), "--release", str(ids[snapshot]), "--database-url", str(db)],
    )
    assert result.exit_code == 0, result.output
    assert f"{len(published)} files" in result.output
    assert_same_files(read_files(target), published)


def test_cli_export_defaults_to_the_newest_data(tmp_path: Path) -> None:
    db = tmp_path / "leadgreen.db"
    ingest_sync(f"sqlite+aiosqlite:///{db}", SNAPSHOT, SEED)
    ingest_sync(f"sqlite+aiosqlite:///{db}", EARLIER, None)
    target = tmp_path / "out"
    result = CliRunner().invoke(main, ["export", str(target), "--database-url", str(db)])
    assert result.exit_code == 0, result.output
    assert_same_files(read_files(target), LATER_FILES)


def test_cli_export_of_an_unknown_release_fails_cleanly(tmp_path: Path) -> None:
    db = tmp_path / "leadgreen.db"
    release = ingest_sync(f"sqlite+aiosqlite:///{db}", SNAPSHOT, SEED)
    target = tmp_path / "out"
    result = CliRunner().invoke(
        main, ["export", str(target), "--release", str(release + 1), "--database-url", str(db)]
    )
    assert result.exit_code != 0
    assert f"no release {release + 1}" in result.output
    assert not target.exists()


@pytest.fixture
def exported_db(tmp_path: Path) -> Path:
    db = tmp_path / "leadgreen.db"
    ingest_sync(f"sqlite+aiosqlite:///{db}", SNAPSHOT, SEED)
    return db


def test_cli_export_refuses_a_folder_that_is_not_empty(tmp_path: Path, exported_db: Path) -> None:
    target = tmp_path / "out"
    target.mkdir()
    (target / "mine.txt").write_text("keep me")
    refused = CliRunner().invoke(main, ["export", str(target), "--database-url", str(exported_db)])
    assert refused.exit_code != 0 and "is not empty" in refused.output
    assert read_files(target) == {"mine.txt": b"keep me"}
    replaced = CliRunner().invoke(
        main, ["export", str(target), "--replace", "--database-url", str(exported_db)]
    )
    assert replaced.exit_code == 0, replaced.output
    assert_same_files(read_files(target), LATER_FILES)


def test_cli_export_never_writes_through_a_link(tmp_path: Path, exported_db: Path) -> None:
    elsewhere = tmp_path / "elsewhere"
    elsewhere.mkdir()
    link = tmp_path / "out"
    link.symlink_to(elsewhere, target_is_directory=True)
    result = CliRunner().invoke(main, ["export", str(link), "--database-url", str(exported_db)])
    assert result.exit_code != 0 and "is a link" in result.output
    assert list(elsewhere.iterdir()) == []


def test_a_failed_write_leaves_nothing_half_written(
    tmp_path: Path, exported_db: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A full disk on the tenth file: the target is not created, no staging folder is left."""
    real_open, opened = os.open, 0

    def full_disk(path: str, flags: int, mode: int = 0o777, **kwargs: object) -> int:
        nonlocal opened
        opened += 1
        if opened == 10:
            raise OSError(errno.ENOSPC, "No space left on device")
        return real_open(path, flags, mode, **kwargs)  # type: ignore[arg-type]

    monkeypatch.setattr(os, "open", full_disk)
    target = tmp_path / "out"
    result = CliRunner().invoke(main, ["export", str(target), "--database-url", str(exported_db)])
    assert result.exit_code != 0 and "No space left" in result.output
    assert sorted(p.name for p in tmp_path.iterdir()) == ["leadgreen.db"]
