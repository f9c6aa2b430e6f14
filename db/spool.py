"""A snapshot's files, byte for byte, kept in a temporary file rather than in memory.

A snapshot fifty times the size of today's is some 100 MB of files: reading them once, keeping
each file's digest and place, and reading a file again only when it is asked for keeps the
ingest's memory to what one task needs, whatever the size of the data.
"""

from __future__ import annotations

import hashlib
import os
import tempfile
import weakref
from collections.abc import Iterator, Mapping
from dataclasses import dataclass


@dataclass(frozen=True, slots=True)
class Entry:
    offset: int
    size: int
    sha256: str


class Spool(Mapping[str, bytes]):
    """Files by path: each file's bytes written once to a temporary file that has no name
    (removed as soon as it is made; its space is freed when the spool is closed or collected),
    read back on each `spool[path]`."""

    def __init__(self) -> None:
        fd, name = tempfile.mkstemp(prefix="leadgreen-spool-")
        os.unlink(name)
        self._fd = fd
        self._close = weakref.finalize(self, os.close, fd)
        self._entries: dict[str, Entry] = {}
        self._end = 0

    def add(self, path: str, data: bytes) -> None:
        """Keep `data` as the file at `path` (a path kept before is replaced)."""
        view, offset = memoryview(data), self._end
        try:
            while view:
                written = os.pwrite(self._fd, view, offset)
                view, offset = view[written:], offset + written
        except OSError as exc:  # a full disk: say which file, and where the spool is
            where = f"{path} ({len(data)} bytes) to the spool, a temporary file in "
            raise OSError(
                exc.errno, f"{exc.strerror}: writing {where}{tempfile.gettempdir()}"
            ) from exc
        self._entries[path] = Entry(self._end, len(data), hashlib.sha256(data).hexdigest())
        self._end += len(data)

    def __getitem__(self, path: str) -> bytes:
        entry = self._entries[path]
        return read_at(self._fd, entry.offset, entry.size, path)

    def __iter__(self) -> Iterator[str]:
        return iter(self._entries)

    def __len__(self) -> int:
        return len(self._entries)

    def __contains__(self, path: object) -> bool:
        return path in self._entries

    def place(self, path: str) -> tuple[int, int]:
        """Where the file's bytes are in the spool's file (`fileno`): offset and size."""
        entry = self._entries[path]
        return entry.offset, entry.size

    def fileno(self) -> int:
        return self._fd

    @property
    def total(self) -> int:
        """The bytes written to the spool's file (a replaced file's too)."""
        return self._end

    def sha256(self, path: str) -> str:
        return self._entries[path].sha256

    def size(self, path: str) -> int:
        return self._entries[path].size

    def close(self) -> None:
        self._close()


def read_at(fd: int, offset: int, size: int, path: str) -> bytes:
    """The `size` bytes of the file `path` at `offset` in the spool's file `fd`."""
    data = os.pread(fd, size, offset)
    if len(data) != size:
        raise OSError(f"spool: read {len(data)} of {size} bytes of {path}")
    return data
