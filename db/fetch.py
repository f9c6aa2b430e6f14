"""Read the files of an upstream snapshot from a directory or an http(s) base URL, bounded.

Every path is checked before it is read (relative, inside the snapshot, no `..`, no link out of
it), every file is bounded in size, and JSON is parsed with orjson (any nesting error is a clear
IngestError, not a RecursionError).
"""

from __future__ import annotations

import asyncio
import json
import re
from collections.abc import Awaitable, Callable, Mapping
from dataclasses import dataclass, field
from pathlib import Path, PurePosixPath
from typing import TYPE_CHECKING, Any

import orjson

from db.errors import IngestError

if TYPE_CHECKING:
    import httpx

# The upstream leaderboard's published files, pinned to the commit of the 2026-02-16 data.
DEFAULT_SOURCE = "https://raw.githubusercontent.com/ml-energy/leaderboard/7885788/public/data"
_COMMIT_IN_URL = re.compile(r"raw\.githubusercontent\.com/[^/]+/[^/]+/([0-9a-f]{7,40})/")
# The largest file a snapshot may hold (the largest upstream file, at 50 times the data of
# 2026-02-16, is about 16 MB), and the most files a folder may list.
MAX_FILE_BYTES = 64 * 1024 * 1024
MAX_FILES = 100_000
_SAFE_PART = re.compile(r"^[A-Za-z0-9][A-Za-z0-9._-]*$")
# Connections to a URL's server at once.
CONNECTIONS = 8
# What a conditional request sends, as a request's headers: If-None-Match (the ETag answered
# last), If-Modified-Since (its Last-Modified).
Validators = Mapping[str, str]
_VALIDATORS = (("etag", "If-None-Match"), ("last-modified", "If-Modified-Since"))


@dataclass
class Fetched:
    """A parsed JSON document and the exact bytes it came from."""

    path: str
    data: Any
    raw: bytes = field(repr=False)


def parse_json(path: str, raw: bytes) -> Any:
    """The document (orjson); what it cannot read is read again with the standard library,
    whose errors say more (and which reads NaN and Infinity, for the shapes to refuse)."""
    try:
        return orjson.loads(raw)
    except orjson.JSONDecodeError:
        pass
    try:
        return json.loads(raw)
    except UnicodeDecodeError as exc:
        raise IngestError(path, f"not UTF-8 text ({exc.reason} at byte {exc.start})") from exc
    except RecursionError:
        raise IngestError(path, "malformed JSON: nested too deeply") from None
    except json.JSONDecodeError as exc:
        raise IngestError(
            # json's own message may end in "at" ("Unterminated string starting at").
            path,
            f"malformed JSON: {exc.msg.removesuffix(' at')} at line {exc.lineno} "
            f"column {exc.colno}",
        ) from exc


def upstream_commit(location: str) -> str | None:
    match = _COMMIT_IN_URL.search(location)
    return match.group(1) if match else None


def checked_path(path: str) -> str:
    """`path` when it is a relative path of safe names inside the snapshot; else IngestError."""
    parts = PurePosixPath(path).parts
    if not parts or path.startswith("/") or not all(_SAFE_PART.match(p) for p in parts):
        raise IngestError(path, "not a path inside the snapshot (names of letters, digits, . - _)")
    return path


# Local files up to this size are read on the event loop (tens of microseconds each: a snapshot
# at fifty times today's has some 3,000 files), larger ones in a thread.
INLINE_READ_BYTES = 256 * 1024


class Fetcher:
    """Fetches snapshot files by their path relative to the snapshot's root; a remote file is
    tried `attempts` times, `sleep` waiting out the backoff between two (tests record it). The
    validators each remote file was answered with are kept in `validators`, by path."""

    def __init__(
        self,
        location: str,
        *,
        timeout: float = 20.0,
        attempts: int = 4,
        backoff: float = 0.5,
        max_file_bytes: int = MAX_FILE_BYTES,
        sleep: Callable[[float], Awaitable[None]] = asyncio.sleep,
    ) -> None:
        self.location = location.rstrip("/")
        self.remote = self.location.startswith(("http://", "https://"))
        self._timeout, self._attempts, self._backoff = timeout, attempts, backoff
        self.max_file_bytes, self._sleep = max_file_bytes, sleep
        self._client: httpx.AsyncClient | None = None
        self._root = None if self.remote else Path(self.location).resolve()
        self.validators: dict[str, Validators] = {}

    async def __aenter__(self) -> Fetcher:
        if self.remote:
            # Imported by the first remote read: a directory's files (and a server, which reads
            # none) never need an HTTP client.
            import httpx

            self._client = httpx.AsyncClient(
                timeout=httpx.Timeout(self._timeout),
                follow_redirects=True,
                limits=httpx.Limits(max_connections=CONNECTIONS),
            )
        elif self._root is None or not self._root.is_dir():
            raise IngestError(self.location, "no such directory")
        return self

    async def __aexit__(self, *_exc: object) -> None:
        if self._client is not None:
            await self._client.aclose()

    async def read(self, path: str) -> bytes:
        """A file's bytes, as published."""
        body = await self.read_if_changed(path, {})
        assert body is not None  # (asked unconditionally)
        return body

    async def read_if_changed(self, path: str, asked: Validators) -> bytes | None:
        """A file's bytes, or None when the server answers 304 Not Modified to the request
        conditional on `asked` (the validators of an earlier answer); a local file is read."""
        checked_path(path)
        if not self.remote:
            return await self._get_local(path)
        return await self._get_remote(path, asked)

    async def get(self, path: str) -> Fetched:
        raw = await self.read(path)
        return Fetched(path, parse_json(path, raw), raw)

    async def get_many(self, paths: list[str]) -> list[Fetched]:
        """Fetch concurrently; the first failure cancels the rest and is raised as it is."""
        try:
            async with asyncio.TaskGroup() as group:
                tasks = [group.create_task(self.get(p)) for p in paths]
        except ExceptionGroup as failed:
            raise failed.exceptions[0] from None
        return [task.result() for task in tasks]

    def listing(self, folder: str) -> list[str] | None:
        """The JSON files in `folder` of a directory source (links are not followed); None for
        a URL (no listing there)."""
        if self._root is None:
            return None
        found = sorted(
            f"{folder}/{p.name}"
            for p in (self._root / folder).glob("*.json")
            if not p.is_symlink() and _SAFE_PART.match(p.name)
        )
        if len(found) > MAX_FILES:
            raise IngestError(folder, f"{len(found)} files, more than the limit of {MAX_FILES}")
        return found

    async def _get_local(self, path: str) -> bytes:
        assert self._root is not None
        file = self._root / path
        try:
            if file.is_symlink() or not file.resolve().is_relative_to(self._root):
                raise IngestError(path, "a link: only files inside the snapshot are read")
            size = file.stat().st_size
            if size > self.max_file_bytes:
                raise IngestError(
                    path, f"{size} bytes, more than the limit of {self.max_file_bytes}"
                )
            if size <= INLINE_READ_BYTES:  # from the page cache: faster than a thread's hop
                return file.read_bytes()
            return await asyncio.to_thread(file.read_bytes)
        except FileNotFoundError as exc:
            raise IngestError(path, f"file not found in {self.location}") from exc
        except OSError as exc:
            raise IngestError(path, f"cannot read: {exc.strerror}") from exc

    async def _get_remote(self, path: str, asked: Validators) -> bytes | None:
        assert self._client is not None, "use the Fetcher as an async context manager"
        import httpx
        from tenacity import AsyncRetrying, retry_if_exception, stop_after_attempt, wait_exponential

        url = f"{self.location}/{path}"
        retrying = AsyncRetrying(
            stop=stop_after_attempt(self._attempts),
            wait=wait_exponential(multiplier=self._backoff, max=8),
            retry=retry_if_exception(_worth_retrying),
            reraise=True,
            sleep=self._sleep,
        )
        try:
            async for attempt in retrying:
                with attempt:
                    return await self._download(url, path, asked)
        except httpx.HTTPStatusError as exc:
            status = exc.response.status_code
            raise IngestError(path, f"HTTP {status} from {url}") from exc
        except httpx.HTTPError as exc:
            raise IngestError(
                path, f"unreachable: {url} ({type(exc).__name__}: {str(exc) or 'no detail'})"
            ) from exc
        raise AssertionError("unreachable")  # pragma: no cover

    async def _download(self, url: str, path: str, asked: Validators) -> bytes | None:
        """The body, read no further than the size limit (None: 304 to a conditional request)."""
        assert self._client is not None
        async with self._client.stream("GET", url, headers=asked) as response:
            answered = {
                name: response.headers[header]
                for header, name in _VALIDATORS
                if header in response.headers
            }
            if response.status_code == 304 and asked:
                self.validators[path] = answered or asked
                return None
            response.raise_for_status()
            chunks, size = [], 0
            async for chunk in response.aiter_bytes():
                size += len(chunk)
                if size > self.max_file_bytes:
                    raise IngestError(path, f"larger than the limit of {self.max_file_bytes} bytes")
                chunks.append(chunk)
            self.validators[path] = answered
            return b"".join(chunks)


def _worth_retrying(exc: BaseException) -> bool:
    """Retry network faults, timeouts, 429 and 5xx; a 404 or other 4xx is final."""
    import httpx

    if isinstance(exc, httpx.HTTPStatusError):
        return exc.response.status_code == 429 or exc.response.status_code >= 500
    return isinstance(exc, httpx.TransportError)
