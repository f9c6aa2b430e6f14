"""Build a git repository whose history is a series of upstream `public/data` snapshots."""

from __future__ import annotations

import os
import shutil
import subprocess
from pathlib import Path

DATA = "public/data"


def _env(date: str | None = None) -> dict[str, str]:
    """No user or system git configuration, and the commit's dates when given."""
    env = {k: v for k, v in os.environ.items() if not k.startswith("GIT_")}
    env |= {"GIT_CONFIG_NOSYSTEM": "1", "GIT_CONFIG_GLOBAL": os.devnull, "LC_ALL": "C"}
    if date is not None:
        env |= {"GIT_AUTHOR_DATE": date, "GIT_COMMITTER_DATE": date}
    return env


def git(directory: Path, *args: str, date: str | None = None) -> str:
    done = subprocess.run(
        ["git", "-C", str(directory), *args],
        capture_output=True,
        text=True,
        env=_env(date),
        check=False,
    )
    assert done.returncode == 0, f"git {' '.join(args)}: {done.stderr}"
    return done.stdout


def _write(root: Path, name: str, data: bytes) -> None:
    assert not name.startswith("/") and ".." not in name.split("/"), name
    (root / name).parent.mkdir(parents=True, exist_ok=True)
    (root / name).write_bytes(data)


def build_repository(
    root: Path, commits: list[tuple[str, str, dict[str, bytes]]], *, bare: bool = False
) -> Path:
    """A repository at root/"work" (or its bare clone root/"bare.git") with one commit for each
    (ISO date, subject, files) given, oldest first.

    `files` maps paths under public/data to bytes and replaces that whole tree (so a file left
    out is deleted; {} removes public/data). Keys starting with "/" are paths from the
    repository's root, written besides; a commit whose keys all start with "/" leaves
    public/data as it was (e.g. {"/README.md": b"..."}). Every entry makes a commit, even one
    that changes nothing.
    """
    work = root / "work"
    work.mkdir(parents=True)
    git(work, "init", "--quiet", "--initial-branch=main")
    for key, value in {"user.name": "Test Author", "user.email": "author@example.org"}.items():
        git(work, "config", key, value)
    git(work, "config", "commit.gpgsign", "false")
    git(work, "config", "core.autocrlf", "false")
    for date, subject, files in commits:
        add_commit(work, date, subject, files)
    if not bare:
        return work
    git(root, "clone", "--quiet", "--bare", "--no-local", str(work), "bare.git")
    return root / "bare.git"


def add_commit(work: Path, date: str, subject: str, files: dict[str, bytes]) -> str:
    """One more commit in the repository at `work` (`files` as `build_repository` takes them);
    its id."""
    outside = {k[1:]: v for k, v in files.items() if k.startswith("/")}
    data = {k: v for k, v in files.items() if not k.startswith("/")}
    if data or not outside:
        shutil.rmtree(work / DATA, ignore_errors=True)
        for name, content in data.items():
            _write(work / DATA, name, content)
    for name, content in outside.items():
        _write(work, name, content)
    git(work, "add", "--all")
    git(work, "commit", "--quiet", "--allow-empty", "--no-verify", "-m", subject, date=date)
    return git(work, "rev-parse", "HEAD").strip()


def snapshot_files(directory: Path) -> dict[str, bytes]:
    """Every file under `directory`, by its POSIX path relative to it, as bytes."""
    return {
        p.relative_to(directory).as_posix(): p.read_bytes()
        for p in sorted(directory.rglob("*"))
        if p.is_file()
    }
