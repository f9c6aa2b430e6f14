"""What a snapshot's files say, whatever how they are written: parsed, and digested as content.

Two releases whose files differ only in formatting (indentation, key order, row order) have the
same content digest: the second is recorded as the same data as the first.

Digesting parses every file, a second of work at fifty times today's data: `digest_aside` has a
Python process of its own do it, on another core, reading the spool's file that it is handed,
while the ingest goes on reading and writing (`python -m db.content FD` is that process).
"""

from __future__ import annotations

import asyncio
import contextlib
import hashlib
import logging
import os
import re
import sys
from collections.abc import Iterator, Mapping
from pathlib import Path
from typing import Any

import orjson

from db.spool import Spool, read_at

log = logging.getLogger(__name__)
# A spool holding at least this many bytes is digested by a process of its own (a smaller one
# costs less than starting a Python process).
ASIDE_BYTES = 16 * 1024 * 1024

# A \u escape of a letter a-z (U+0061 to U+007A), as JSON may write one.
_LETTER_ESCAPE = re.compile(rb"\\u00[67][0-9a-fA-F]")


def parsed(files: Mapping[str, bytes]) -> dict[str, Any]:
    """Each JSON file's document, by path (a file that is not JSON is left out)."""
    documents = {}
    for path, raw in files.items():
        try:
            documents[path] = orjson.loads(raw)
        except orjson.JSONDecodeError:
            continue
    return documents


def _canonical(value: Any) -> Any:
    """The content of a document whatever its formatting: rows as a multiset (sorted)."""
    if isinstance(value, dict):
        canonical = {k: _canonical(v) for k, v in value.items()}
        rows = canonical.get("configurations")
        if isinstance(rows, list):
            canonical["configurations"] = sorted(
                rows, key=lambda r: orjson.dumps(r, option=orjson.OPT_SORT_KEYS)
            )
        return canonical
    if isinstance(value, list):
        return [_canonical(v) for v in value]
    return value


def _content(raw: bytes) -> Any:
    """`_canonical` of the document in `raw` (its text, when it is not JSON), its sorted rows
    as they are written (an orjson.Fragment) where the document has them."""
    try:
        value = orjson.loads(raw)
    except orjson.JSONDecodeError:
        return raw.decode("latin-1")
    # Without a \u escape of a lowercase letter, every "configurations" key is written as such:
    # when the text names it at most once, only the top level's rows (if any) need sorting,
    # and nothing else is rebuilt (the upstream files are so; others take the general way).
    named = raw.count(b'"configurations"')
    if named > 1 or _LETTER_ESCAPE.search(raw):
        return _canonical(value)
    if named == 0:
        return value
    rows = value.get("configurations") if isinstance(value, dict) else None
    if not isinstance(rows, list):
        return _canonical(value)
    # Each row is written once: its text is its sort key and its place in the document (each
    # copied to its own size: orjson's buffer for a row is some kilobytes, whatever its size).
    written = sorted(
        bytes(memoryview(orjson.dumps(row, option=orjson.OPT_SORT_KEYS))) for row in rows
    )
    return {**value, "configurations": orjson.Fragment(b"[" + b",".join(written) + b"]")}


def content_digest(files: Mapping[str, bytes]) -> str:
    """SHA-256 over each file's content (`_canonical`), the files by path, read one at a time."""
    hasher = hashlib.sha256()
    for path in sorted(files):
        content = _content(files[path])
        hasher.update(path.encode() + b"\0")
        hasher.update(orjson.dumps(content, option=orjson.OPT_SORT_KEYS) + b"\0")
    return hasher.hexdigest()


async def digest_aside(files: Mapping[str, bytes]) -> str:
    """`content_digest(files)`: computed by a child process when `files` is a Spool of at least
    ASIDE_BYTES, else here (and here when no process can be started). A failure of the child
    is raised as a RuntimeError; cancelled, the child is killed."""
    if not isinstance(files, Spool) or files.total < ASIDE_BYTES:
        return content_digest(files)
    places = orjson.dumps([(path, *files.place(path)) for path in files])
    # The child imports this very package, wherever the working directory is.
    paths = [str(Path(__file__).resolve().parent.parent), os.environ.get("PYTHONPATH", "")]
    try:
        process = await asyncio.create_subprocess_exec(
            sys.executable,
            "-P",
            "-m",
            "db.content",
            str(files.fileno()),
            env={**os.environ, "PYTHONPATH": os.pathsep.join(p for p in paths if p)},
            stdin=asyncio.subprocess.PIPE,
            stdout=asyncio.subprocess.PIPE,
            stderr=asyncio.subprocess.PIPE,
            pass_fds=(files.fileno(),),
        )
    except OSError as exc:  # no process to be had here (a sandbox, a limit): made here, slower
        log.warning("the content digest is computed in this process: %s", exc)
        return content_digest(files)
    try:
        out, err = await process.communicate(places)
    except BaseException:
        with contextlib.suppress(ProcessLookupError):
            process.kill()
        await process.wait()
        raise
    if process.returncode != 0:
        raise RuntimeError(f"content digest: exit status {process.returncode}: {err.decode()}")
    return out.decode().strip()


class _Slices(Mapping[str, bytes]):
    """Files by path, read from the descriptor `fd` at (offset, size) places."""

    def __init__(self, fd: int, places: list[tuple[str, int, int]]) -> None:
        self._fd = fd
        self._places = {path: (offset, size) for path, offset, size in places}

    def __getitem__(self, path: str) -> bytes:
        offset, size = self._places[path]
        return read_at(self._fd, offset, size, path)

    def __iter__(self) -> Iterator[str]:
        return iter(self._places)

    def __len__(self) -> int:
        return len(self._places)


if __name__ == "__main__":
    # The child of `digest_aside`: the places on standard input, the digest on standard output.
    print(content_digest(_Slices(int(sys.argv[1]), orjson.loads(sys.stdin.buffer.read()))))
