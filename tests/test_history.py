"""Reading the upstream data's history from a git repository: the commits, the files, the bytes."""

from __future__ import annotations

import asyncio
import json
from pathlib import Path
from typing import Any

import pytest

from db.errors import IngestError
from db.history import Commit, GitFetcher, data_commits, list_files, read_blob
from tests import formats, synthetic
from tests.conftest import EARLIER, SNAPSHOT
from tests.history_repo import build_repository, git, snapshot_files

pytestmark = pytest.mark.anyio

TASK_FILE = f"tasks/{synthetic.TASK}.json"
TINY = f"models/acme__Tiny-1B__{synthetic.TASK}.json"
MIXTURE = f"models/acme__Mixture-8x2B__{synthetic.TASK}.json"
SHA = "0" * 40


def as_bytes(tmp_path: Path, name: str, docs: dict[str, Any]) -> dict[str, bytes]:
    return snapshot_files(formats.write_formatted(tmp_path / "docs" / name, docs))


@pytest.fixture
def history(tmp_path: Path) -> list[tuple[str, str, dict[str, bytes]]]:
    """Three data commits (the last drops a model file) with a README-only commit between."""
    first = as_bytes(tmp_path, "1", formats.launch_format(synthetic.documents()))
    second = snapshot_files(synthetic.write(tmp_path / "docs" / "2", synthetic.documents()))
    second["notes.txt"] = b"not JSON, \xff not even UTF-8"
    third = as_bytes(tmp_path, "3", formats.current_format(synthetic.documents(synthetic.ROWS[:3])))
    return [
        ("2025-11-29T08:00:00+00:00", "Launch the v3.0 data", first),
        ("2025-12-01T12:30:00-05:00", "Fix a typo in README", {"/README.md": b"# Leaderboard\n"}),
        ("2025-12-17T09:15:42+09:00", "Regenerate data\n\nWith the toolkit.", second),
        ("2026-02-16T10:03:11+00:00", "Drop the mixture model", third),
    ]


@pytest.fixture(params=[False, True], ids=["clone", "bare"])
def repository(request: pytest.FixtureRequest, tmp_path: Path, history: list[Any]) -> Path:
    return build_repository(tmp_path / "repo", history, bare=request.param)


def test_data_commits_oldest_first_and_readme_only_skipped(
    repository: Path, history: list[Any]
) -> None:
    every = git(repository, "rev-list", "--reverse", "HEAD").split()
    commits = data_commits(repository)
    assert [c.sha for c in commits] == [every[0], every[2], every[3]]
    assert commits[1] == Commit(
        every[2], "2025-12-17T09:15:42+09:00", "Regenerate data", "Test Author"
    )
    assert [(c.date, c.subject) for c in commits] == [
        (date, subject.split("\n")[0]) for date, subject, _ in (history[0], history[2], history[3])
    ]
    assert all(len(c.sha) == 40 and int(c.sha, 16) >= 0 for c in commits)
    assert data_commits(repository, "public/data/") == commits
    assert data_commits(repository, "public/data/models") == commits  # each changes models/
    assert [c.sha for c in data_commits(repository, "README.md")] == [every[1]]


def test_first_parents_only(tmp_path: Path, history: list[Any]) -> None:
    """A merged branch's own data commits are not releases; the merge that brings them in is."""
    work = build_repository(tmp_path / "repo", history[:1])
    git(work, "checkout", "--quiet", "-b", "side")
    (work / "public/data/index.json").write_text("{}")
    git(work, "commit", "--quiet", "-am", "Side change", date="2025-12-02T00:00:00+00:00")
    git(work, "checkout", "--quiet", "main")
    (work / "README.md").write_text("main moved on")
    git(work, "add", "README.md")
    git(work, "commit", "--quiet", "-m", "Readme", date="2025-12-03T00:00:00+00:00")
    git(
        work, "merge", "--quiet", "--no-ff", "-m", "Merge side", "side", date="2025-12-04T00:00:00Z"
    )
    assert [c.subject for c in data_commits(work)] == ["Launch the v3.0 data", "Merge side"]
    assert data_commits(work)[1].date == "2025-12-04T00:00:00+00:00"


async def test_files_round_trip(repository: Path, history: list[Any]) -> None:
    commits = data_commits(repository)
    for commit, (_, _, files) in zip(commits, (history[0], history[2], history[3]), strict=True):
        listed = list_files(repository, commit.sha)
        assert [path for path, _, _ in listed] == sorted(files)
        for path, blob, size in listed:
            assert size == len(files[path]) and read_blob(repository, blob) == files[path]
        async with GitFetcher(repository, commit.sha) as fetcher:
            assert fetcher.location == f"{repository}@{commit.sha}"
            json_files = sorted(p for p in files if p.endswith(".json"))
            fetched = await fetcher.get_many(json_files)
            assert [(f.path, f.raw) for f in fetched] == [(p, files[p]) for p in json_files]
            assert [f.data for f in fetched] == [json.loads(files[p]) for p in json_files]
            assert fetcher.listing("models") == sorted(p for p in files if p.startswith("models/"))
            assert fetcher.listing("tasks") == [TASK_FILE]
            assert fetcher.listing("nowhere") == []
    async with GitFetcher(repository, commits[1].sha) as fetcher:
        assert await fetcher.read("notes.txt") == history[2][2]["notes.txt"]
        with pytest.raises(IngestError, match="not UTF-8") as failed:
            await fetcher.get("notes.txt")
        assert failed.value.file == "notes.txt"
        assert (await fetcher.get("index.json")).data == synthetic.index()  # still in step
    async with GitFetcher(repository, commits[2].sha) as fetcher:
        assert MIXTURE not in fetcher.listing("models")  # the whole tree was replaced
        with pytest.raises(IngestError) as failed:
            await fetcher.get(MIXTURE)
        assert failed.value.file == MIXTURE
        assert failed.value.message == f"file not found in {repository}@{commits[2].sha}"
        assert (await fetcher.get(TINY)).raw == history[3][2][TINY]


async def test_unsafe_paths(repository: Path) -> None:
    unsafe = ["../README.md", "/etc/passwd", "tasks/../index.json", "./index.json", "a\\b", ""]
    async with GitFetcher(repository, data_commits(repository)[0].sha) as fetcher:
        for path in [*unsafe, "tasks/", "tasks//x.json"]:
            with pytest.raises(IngestError, match=r"unsafe path|file not found") as failed:
                await fetcher.get(path)
            assert failed.value.file == path
        with pytest.raises(IngestError, match="unsafe folder"):
            fetcher.listing("../public")


async def test_bad_commits_and_blobs(repository: Path) -> None:
    readme_only = git(repository, "rev-list", "--reverse", "HEAD").split()[1]
    with pytest.raises(IngestError, match="not a full commit id"):
        list_files(repository, "HEAD")
    with pytest.raises(IngestError, match="git cat-file failed"):
        list_files(repository, SHA)
    blob = list_files(repository, readme_only)[0][1]
    with pytest.raises(IngestError, match="is a blob, not a commit"):
        list_files(repository, blob)
    with pytest.raises(IngestError, match=r"public/data/index\.json is not a directory"):
        list_files(repository, readme_only, "public/data/index.json")
    with pytest.raises(IngestError, match=r"not a directory at this commit \(nothing there\)"):
        list_files(repository, readme_only, "public/other")
    with pytest.raises(IngestError, match="unsafe data path"):
        list_files(repository, readme_only, "public/../data")
    with pytest.raises(IngestError, match="not a blob id"):
        read_blob(repository, "HEAD:README.md")
    with pytest.raises(IngestError, match="failed"):
        read_blob(repository, SHA)
    with pytest.raises(IngestError, match="failed"):
        async with GitFetcher(repository, SHA):
            pass


def test_not_a_repository(tmp_path: Path, history: list[Any]) -> None:
    (tmp_path / "empty").mkdir()
    with pytest.raises(IngestError, match="not a git repository") as failed:
        data_commits(tmp_path / "empty")
    assert failed.value.file == str(tmp_path / "empty")
    with pytest.raises(IngestError, match="no such directory"):
        data_commits(tmp_path / "missing")
    work = build_repository(tmp_path / "repo", history[:1])
    with pytest.raises(IngestError, match="not a git repository"):
        data_commits(work / "public")  # inside a clone is not the clone
    with pytest.raises(IngestError, match="unsafe data path"):
        data_commits(work, "/public/data")


def test_no_data_commits(tmp_path: Path, history: list[Any]) -> None:
    unborn = tmp_path / "unborn"
    git(tmp_path, "init", "--quiet", str(unborn))
    with pytest.raises(IngestError, match="no commits"):
        data_commits(unborn)
    shallow = tmp_path / "shallow"
    work = build_repository(tmp_path / "repo", history)
    git(tmp_path, "clone", "--quiet", "--depth=1", f"file://{work}", str(shallow))
    with pytest.raises(IngestError, match="shallow clone"):
        data_commits(shallow)
    readme = build_repository(tmp_path / "readme", [history[1]], bare=True)
    with pytest.raises(IngestError, match="no commit on HEAD changed public/data") as failed:
        data_commits(readme)
    assert failed.value.file == str(readme)


def test_git_missing(tmp_path: Path, monkeypatch: pytest.MonkeyPatch, history: list[Any]) -> None:
    work = build_repository(tmp_path / "repo", history[:1])
    monkeypatch.setenv("PATH", str(tmp_path / "no-bin"))
    with pytest.raises(IngestError, match="git is not installed"):
        data_commits(work)


async def test_read_cut_short_then_more_reads(tmp_path: Path) -> None:
    """A cancelled read leaves git's output half read: the fetcher starts a fresh git."""
    files = {"big.json": b'"' + b"x" * 8_000_000 + b'"', "index.json": b"{}"}
    repository = build_repository(tmp_path, [("2026-01-01T00:00:00Z", "Data", files)])
    async with GitFetcher(repository, data_commits(repository)[0].sha) as fetcher:
        assert (await fetcher.get("index.json")).data == {}
        reading = asyncio.create_task(fetcher.read("big.json"))
        for _ in range(3):  # 8 MB through a pipe takes far more turns of the loop than this
            await asyncio.sleep(0)
        assert not reading.done()
        reading.cancel()
        with pytest.raises(asyncio.CancelledError):
            await reading
        assert await fetcher.read("big.json") == files["big.json"]
        assert await fetcher.read("index.json") == b"{}"


@pytest.mark.realdata
async def test_real_snapshots_round_trip(tmp_path: Path) -> None:
    snapshots = [snapshot_files(EARLIER), snapshot_files(SNAPSHOT)]
    repository = build_repository(
        tmp_path,
        [
            ("2025-12-17T00:00:00+00:00", "2025-12-17 data", snapshots[0]),
            ("2026-02-16T00:00:00+00:00", "2026-02-16 data", snapshots[1]),
        ],
        bare=True,
    )
    commits = data_commits(repository)
    assert [c.subject for c in commits] == ["2025-12-17 data", "2026-02-16 data"]
    for commit, files in zip(commits, snapshots, strict=True):
        listed = list_files(repository, commit.sha)
        assert {path: size for path, _, size in listed} == {p: len(b) for p, b in files.items()}
        async with GitFetcher(repository, commit.sha) as fetcher:
            fetched = await fetcher.get_many(sorted(files))
            assert {f.path: f.raw for f in fetched} == files
            assert fetcher.listing("models") == sorted(p for p in files if p.startswith("models/"))
