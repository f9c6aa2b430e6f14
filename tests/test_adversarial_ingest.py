"""Hostile files given to `leadgreen ingest` and `leadgreen export` (the issue's class 7): names
and dates validated, sizes and depths bounded, nothing read outside the source and nothing
written through a link; every failure the usual one-line error, the database as it was.
"""

from __future__ import annotations

import errno
import os
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest
from click.testing import CliRunner

from graph.cli import main
from tests import synthetic

TASK_FILE = f"tasks/{synthetic.TASK}.json"
Mutate = Callable[[dict[str, Any], Path], None]


def _set(path: str, key: str, value: Any) -> Mutate:
    def mutate(files: dict[str, Any], _root: Path) -> None:
        files[path][key] = value

    return mutate


def _raw(path: str, text: str) -> Mutate:
    def mutate(files: dict[str, Any], _root: Path) -> None:
        files[path] = text

    return mutate


def _after_writing(change: Callable[[Path], None]) -> Mutate:
    def mutate(files: dict[str, Any], root: Path) -> None:
        synthetic.write(root, files)
        files.clear()
        change(root)

    return mutate


def _link_out(root: Path) -> None:
    target = root / TASK_FILE
    target.unlink()
    target.symlink_to("/etc/hostname")


def _huge_orphan(root: Path) -> None:
    with (root / "models" / "orphan__x__lm-arena-chat.json").open("wb") as f:
        f.truncate(65 * 1024 * 1024)  # sparse: past the 64 MB limit without writing it


# name, how the synthetic snapshot is spoiled, what the one-line error says
CASES: list[tuple[str, Mutate, str]] = [
    ("task-name-traversal", _set("index.json", "tasks", ["../../x/gpqa"]), "'tasks.0'"),
    ("task-name-absolute", _set("index.json", "tasks", ["/etc/passwd"]), "'tasks.0'"),
    ("task-name-nul", _set("index.json", "tasks", ["a\x00b"]), "'tasks.0'"),
    ("task-name-long", _set("index.json", "tasks", ["a" * 500]), "'tasks.0'"),
    ("date-not-a-date", _set("index.json", "last_updated", "whenever"), "'last_updated'"),
    ("date-impossible", _set("index.json", "last_updated", "2030-02-30"), "'last_updated'"),
    ("date-sorts-above", _set("index.json", "last_updated", "9999-99-99"), "'last_updated'"),
    ("deep-json-task", _raw(TASK_FILE, "[" * 100_000 + "]" * 100_000), "nested too deeply"),
    ("deep-json-index", _raw("index.json", '{"a":' * 100_000 + "1" + "}" * 100_000), "nested"),
    ("not-json", _raw(TASK_FILE, "\x00\xff{"), "JSON"),
    ("nan", _raw(TASK_FILE, '{"task": NaN}'), TASK_FILE),
    ("link-out-of-the-source", _after_writing(_link_out), "a link"),
    ("huge-unreferenced-model-file", _after_writing(_huge_orphan), "more than the limit"),
]


@pytest.mark.parametrize(("name", "mutate", "says"), CASES, ids=[c[0] for c in CASES])
def test_a_hostile_snapshot_is_refused_in_one_line(
    tmp_path: Path, name: str, mutate: Mutate, says: str
) -> None:
    files = synthetic.documents()
    root = tmp_path / "snapshot"
    mutate(files, root)
    if files:
        synthetic.write(root, files)
    database = tmp_path / "db.sqlite"
    result = CliRunner().invoke(main, ["ingest", str(root), "--database-url", str(database)])
    lines = [line for line in result.output.splitlines() if line.startswith("error:")]
    assert result.exit_code == 1, result.output[-2000:]
    assert "Traceback" not in result.output
    assert len(lines) == 1 and says in lines[0] and len(lines[0]) < 600, result.output[-1000:]
    # Nothing was ingested (an empty database stays empty).
    health = CliRunner().invoke(
        main, ["export", str(tmp_path / "out"), "--database-url", str(database)]
    )
    assert "the database is empty" in health.output


@pytest.fixture
def ingested(tmp_path: Path) -> Path:
    root = synthetic.write(tmp_path / "snapshot", synthetic.documents())
    database = tmp_path / "db.sqlite"
    result = CliRunner().invoke(main, ["ingest", str(root), "--database-url", str(database)])
    assert result.exit_code == 0, result.output
    return database


def test_export_refuses_a_target_that_is_not_empty(tmp_path: Path, ingested: Path) -> None:
    target = tmp_path / "out"
    target.mkdir()
    (target / "keep.txt").write_text("mine")
    result = CliRunner().invoke(main, ["export", str(target), "--database-url", str(ingested)])
    assert result.exit_code != 0 and "Traceback" not in result.output
    assert sorted(p.name for p in target.iterdir()) == ["keep.txt"]


def test_export_never_writes_through_a_link(tmp_path: Path, ingested: Path) -> None:
    elsewhere = tmp_path / "elsewhere"
    elsewhere.mkdir()
    target = tmp_path / "out"
    target.symlink_to(elsewhere, target_is_directory=True)
    result = CliRunner().invoke(
        main, ["export", str(target), "--replace", "--database-url", str(ingested)]
    )
    assert result.exit_code != 0 and "Traceback" not in result.output
    assert list(elsewhere.iterdir()) == []


def test_export_writes_whole_or_not_at_all(
    tmp_path: Path, ingested: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A disk that fills up while the files are written leaves the target as it was (here
    absent) and nothing beside it."""
    real_fdopen = os.fdopen
    written = []

    def filling(fd: int, *args: Any, **kwargs: Any) -> Any:
        if len(written) == 2:
            os.close(fd)
            raise OSError(errno.ENOSPC, "No space left on device")
        written.append(fd)
        return real_fdopen(fd, *args, **kwargs)

    monkeypatch.setattr(os, "fdopen", filling)
    target = tmp_path / "out"
    result = CliRunner().invoke(main, ["export", str(target), "--database-url", str(ingested)])
    assert result.exit_code != 0 and "Traceback" not in result.output
    assert "No space left on device" in result.output
    assert not target.exists()
    assert sorted(p.name for p in tmp_path.iterdir()) == ["db.sqlite", "snapshot"]
