"""The upstream data's history, read from a local clone (bare or not) of the leaderboard
repository, and ingested as releases: one per commit that changed the data, oldest first.

Only local git: every command runs with `--git-dir` (no discovery of a repository above the given
directory), without the caller's GIT_* variables, with lazy fetches and transports forbidden.
"""

from __future__ import annotations

import asyncio
import contextlib
import os
import re
import subprocess
from collections.abc import AsyncIterator, Callable
from dataclasses import dataclass
from pathlib import Path, PurePosixPath

from sqlalchemy.ext.asyncio import AsyncSession, async_sessionmaker

from db.errors import IngestError
from db.fetch import Fetched, parse_json
from db.ingest import IngestReport, Origin, ingest
from db.shapes import Manifest
from db.snapshot import load_snapshot

_OID = re.compile(r"[0-9a-f]{40}([0-9a-f]{24})?")  # SHA-1, or SHA-256 repositories


@dataclass(frozen=True)
class Commit:
    sha: str
    date: str  # committer date, ISO 8601 with its offset
    subject: str  # first line of the message
    author: str  # author name


def _git_command(git_dir: Path, *args: str) -> list[str]:
    """`git --git-dir=…`: the clone's .git (or the bare repository itself), never a parent's."""
    dot_git = git_dir / ".git"
    where = dot_git if dot_git.exists() else git_dir
    return ["git", f"--git-dir={where}", "--literal-pathspecs", "-c", "protocol.allow=never", *args]


def git_environment() -> dict[str, str]:
    """The environment of every git command: none of the caller's GIT_* variables, no prompt."""
    env = {k: v for k, v in os.environ.items() if not k.startswith("GIT_")}
    env |= {"GIT_NO_LAZY_FETCH": "1", "GIT_TERMINAL_PROMPT": "0", "GIT_NO_REPLACE_OBJECTS": "1"}
    return env | {"LC_ALL": "C"}


def _git(git_dir: Path, *args: str, where: str | None = None) -> bytes:
    where = where or str(git_dir)
    if not git_dir.is_dir():
        raise IngestError(where, "no such directory")
    try:
        done = subprocess.run(
            _git_command(git_dir, *args),
            stdin=subprocess.DEVNULL,
            capture_output=True,
            env=git_environment(),
            check=False,
        )
    except FileNotFoundError as exc:
        raise IngestError(where, "git is not installed (no `git` on PATH)") from exc
    if done.returncode != 0:
        detail = done.stderr.decode(errors="replace").strip().splitlines()
        raise IngestError(where, f"git {args[0]} failed: {detail[0] if detail else 'no message'}")
    return done.stdout


def _clean(path: str, what: str, where: str) -> str:
    """A relative POSIX path with no '..', '.', empty or backslashed part, without trailing /."""
    parts = path.rstrip("/").split("/")
    if path.startswith("/") or "\\" in path or any(p in ("", ".", "..") for p in parts):
        raise IngestError(where, f"unsafe {what} {path!r}: must be relative, without '..'")
    return "/".join(parts)


def _check_repository(git_dir: Path) -> None:
    if not git_dir.is_dir():
        raise IngestError(str(git_dir), "no such directory")
    try:
        _git(git_dir, "rev-parse", "--git-dir")
    except IngestError as exc:
        if "not a git repository" not in exc.message:
            raise
        raise IngestError(str(git_dir), "not a git repository (a clone or a bare one)") from None
    try:
        _git(git_dir, "rev-parse", "--verify", "--quiet", "HEAD^{commit}")
    except IngestError:
        raise IngestError(str(git_dir), "the repository has no commits (HEAD is unborn)") from None
    if _git(git_dir, "rev-parse", "--is-shallow-repository").strip() == b"true":
        # Its oldest commit would look as if it added every file: a release that never was.
        raise IngestError(str(git_dir), "a shallow clone: run `git fetch --unshallow` in it first")


def data_commits(git_dir: Path, data_path: str = "public/data") -> list[Commit]:
    """The commits of HEAD's first-parent line that changed `data_path`, oldest first."""
    data_path = _clean(data_path, "data path", str(git_dir))
    _check_repository(git_dir)
    # Each record: NUL, then sha, date, author and the message on lines of their own; git's own
    # "commit <sha>" header line comes after the message, so the message's first line is 4th.
    fmt = "--format=%x00%H%n%cI%n%an%n%B"
    out = _git(git_dir, "rev-list", "--first-parent", "--reverse", fmt, "HEAD", "--", data_path)
    commits = []
    for record in out.decode(errors="replace").split("\0")[1:]:
        sha, date, author, subject, *_ = [*record.split("\n"), "", "", "", ""]
        commits.append(Commit(sha, date, subject, author))
    if not commits:
        raise IngestError(str(git_dir), f"no commit on HEAD changed {data_path}")
    return commits


def list_files(
    git_dir: Path, sha: str, data_path: str = "public/data"
) -> list[tuple[str, str, int]]:
    """(path relative to data_path, blob id, size) of each regular file at `sha`, sorted by path."""
    where = f"{git_dir}@{sha}"
    data_path = _clean(data_path, "data path", where)
    if not _OID.fullmatch(sha):
        raise IngestError(where, "not a full commit id (40 or 64 lowercase hex digits)")
    found = _git(git_dir, "cat-file", "-t", sha, where=where).strip().decode()
    if found != "commit":
        raise IngestError(where, f"{sha} is a {found}, not a commit")
    spec = f"{sha}:{data_path}"
    try:
        found = _git(git_dir, "cat-file", "-t", spec, where=where).strip().decode()
    except IngestError:
        found = "nothing"
    if found != "tree":
        raise IngestError(where, f"{data_path} is not a directory at this commit ({found} there)")
    files = []
    for entry in _git(git_dir, "ls-tree", "-r", "-l", "-z", spec, where=where).split(b"\0"):
        if entry:
            meta, _, name = entry.partition(b"\t")
            mode, kind, oid, size = meta.decode().split()
            if kind == "blob" and mode.startswith("100"):  # not symlinks (120000)
                files.append((name.decode(errors="surrogateescape"), oid, int(size)))
    return sorted(files)


def read_blob(git_dir: Path, blob_id: str) -> bytes:
    """One blob's bytes (one git process each: use GitFetcher to read many)."""
    if not _OID.fullmatch(blob_id):
        raise IngestError(str(git_dir), f"not a blob id: {blob_id!r}")
    return _git(git_dir, "cat-file", "blob", blob_id, where=f"{git_dir}: blob {blob_id}")


class GitFetcher:
    """Fetcher's interface over one commit's data_path, read through one `git cat-file --batch`."""

    def __init__(self, git_dir: Path | str, sha: str, data_path: str = "public/data") -> None:
        self.git_dir, self.sha, self.data_path = Path(git_dir), sha, data_path
        self.location = f"{git_dir}@{sha}"
        self.remote = False
        self._files: dict[str, tuple[str, int]] | None = None
        self._process: asyncio.subprocess.Process | None = None
        self._lock = asyncio.Lock()

    async def __aenter__(self) -> GitFetcher:
        listed = await asyncio.to_thread(list_files, self.git_dir, self.sha, self.data_path)
        self._files = {path: (oid, size) for path, oid, size in listed}
        return self

    async def __aexit__(self, *_exc: object) -> None:
        await self._stop()

    async def get(self, path: str) -> Fetched:
        raw = await self.read(path)
        return Fetched(path, parse_json(path, raw), raw)

    async def get_many(self, paths: list[str]) -> list[Fetched]:
        """In order, one after the other (one pipe); the first failure is raised as it is."""
        return [await self.get(path) for path in paths]

    def listing(self, folder: str) -> list[str]:
        """The JSON files directly in `folder`, as paths relative to data_path, sorted."""
        folder = _clean(folder, "folder", self.location)
        return [
            p
            for p in self._listed()
            if p.endswith(".json") and str(PurePosixPath(p).parent) == folder
        ]

    async def read(self, path: str) -> bytes:
        """The exact bytes of the file at `path` (relative to data_path)."""
        clean = _clean(path, "path", path)
        if clean != path or clean not in self._listed():
            raise IngestError(path, f"file not found in {self.location}")
        oid, size = self._listed()[clean]
        async with self._lock:
            try:
                return await self._read_blob(oid, size)
            except BaseException:
                await self._stop(clean=False)  # the pipe is out of step: start anew
                raise

    def _listed(self) -> dict[str, tuple[str, int]]:
        assert self._files is not None, "use the GitFetcher as an async context manager"
        return self._files

    async def _read_blob(self, oid: str, size: int) -> bytes:
        if self._process is None:
            try:
                self._process = await asyncio.create_subprocess_exec(
                    *_git_command(self.git_dir, "cat-file", "--batch"),
                    stdin=asyncio.subprocess.PIPE,
                    stdout=asyncio.subprocess.PIPE,
                    stderr=asyncio.subprocess.DEVNULL,
                    env=git_environment(),
                )
            except FileNotFoundError as exc:
                raise IngestError(self.location, "git is not installed (no `git` on PATH)") from exc
        process = self._process
        assert process.stdin is not None and process.stdout is not None
        process.stdin.write(oid.encode() + b"\n")
        await process.stdin.drain()
        header = (await process.stdout.readline()).decode().split()
        if header != [oid, "blob", str(size)]:
            raise IngestError(self.location, f"git cat-file: blob {oid}: {' '.join(header)}")
        data = await process.stdout.readexactly(size + 1)
        return data[:-1]

    async def _stop(self, *, clean: bool = True) -> None:
        """End git: by closing its input, or by killing it when a read was cut short."""
        process, self._process = self._process, None
        if process is None:
            return
        assert process.stdin is not None and process.stdout is not None
        if clean:
            process.stdin.close()
        else:
            with contextlib.suppress(ProcessLookupError):
                process.kill()
        await process.stdout.read()  # to its end: a pipe left paused would never see it close
        await process.wait()


async def ingest_history(
    make_session: async_sessionmaker[AsyncSession],
    git_dir: Path,
    manifest: Manifest | None = None,
    manifest_raw: bytes | None = None,
    manifest_name: str = "manifest",
    *,
    progress: Callable[[int, int, Commit], None] = lambda _n, _of, _commit: None,
) -> AsyncIterator[IngestReport]:
    """Ingest each commit of `git_dir` that changed `public/data`, oldest first, each in its own
    transaction (a commit already ingested changes nothing); the manifest is each release's
    provenance only where it describes that release's data."""
    commits = data_commits(git_dir)
    for n, commit in enumerate(commits, start=1):
        progress(n, len(commits), commit)
        yield await ingest_commit(
            make_session, git_dir, commit, manifest, manifest_raw, manifest_name
        )


async def ingest_commit(
    make_session: async_sessionmaker[AsyncSession],
    git_dir: Path,
    commit: Commit,
    manifest: Manifest | None = None,
    manifest_raw: bytes | None = None,
    manifest_name: str = "manifest",
) -> IngestReport:
    """One commit's `public/data` as a release (in one transaction), with the commit's id, date
    and subject as its provenance."""
    async with GitFetcher(git_dir, commit.sha) as fetcher:
        snapshot = await load_snapshot(fetcher.location, source=fetcher)
    origin = Origin(commit=commit.sha, date=commit.date, subject=commit.subject)
    async with make_session() as session:
        return await ingest(session, snapshot, manifest, manifest_raw, manifest_name, origin=origin)
