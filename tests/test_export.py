"""Round trips: what was ingested exports as files JSON-equal to the published ones.

Each snapshot in ../shared/data is ingested into a fresh database (SQLite and PostgreSQL),
exported with `db.export.export_documents` and compared, file by file, with the originals
read here with `json`. The CLI (`leadgreen export`) is checked on SQLite.
"""

from __future__ import annotations

import asyncio
import json
from pathlib import Path
from typing import Any

import pytest
from click.testing import CliRunner
from sqlalchemy.ext.asyncio import AsyncEngine

from db.engine import create_engine, create_tables, sessionmaker
from db.export import export_documents
from graph.cli import main
from tests.conftest import EARLIER, SEED, SNAPSHOT, ingest_dir

pytestmark = pytest.mark.anyio

ORPHAN = "models/nvidia__NVIDIA-Nemotron-Nano-12B-v2-VL-BF16__video-chat.json"


def read_files(root: Path) -> dict[str, Any]:
    """Every JSON file under `root`, by its path relative to it, parsed."""
    return {
        path.relative_to(root).as_posix(): json.loads(path.read_text())
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
        tasks = files["index.json"]["tasks"]
        assert len(tasks) == 7
        assert sorted(p for p in files if not p.startswith("models/")) == sorted(
            ["index.json", *(f"tasks/{t}.json" for t in tasks)]
        )
        assert sum(p.startswith("models/") for p in files) == models
        assert len(files) == models + 8
    # The one extra file of 2025-12-17: a model file no task file refers to.
    assert set(EARLIER_FILES) - set(LATER_FILES) == {ORPHAN}
    assert set(LATER_FILES) < set(EARLIER_FILES)


def typed(value: Any) -> Any:
    """`value` with every scalar tagged by its type, so 1 and 1.0 (or 1 and True) differ."""
    if isinstance(value, dict):
        return {k: typed(v) for k, v in value.items()}
    if isinstance(value, list):
        return [typed(v) for v in value]
    return (type(value).__name__, value)


def assert_same_files(exported: dict[str, Any], published: dict[str, Any]) -> None:
    assert sorted(exported) == sorted(published)
    # Compared through a JSON text round trip, so what a client would read is compared; an
    # integer stays an integer and a float a float.
    as_read = {p: json.loads(json.dumps(document)) for p, document in exported.items()}
    assert [p for p in published if as_read[p] != published[p]] == []
    assert [p for p in published if typed(as_read[p]) != typed(published[p])] == []


async def export(engine: AsyncEngine, release_id: int) -> dict[str, Any]:
    async with sessionmaker(engine)() as session:
        return await export_documents(session, release_id=release_id)


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
