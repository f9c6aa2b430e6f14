"""Read the files of an upstream snapshot from a directory or an http(s) base URL."""

from __future__ import annotations

import asyncio
import json
import re
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import httpx
from tenacity import (
    AsyncRetrying,
    retry_if_exception,
    stop_after_attempt,
    wait_exponential,
)

from db.errors import IngestError

# The upstream leaderboard's published files, pinned to the commit of the 2026-02-16 data.
DEFAULT_SOURCE = "https://raw.githubusercontent.com/ml-energy/leaderboard/7885788/public/data"
_COMMIT_IN_URL = re.compile(r"raw\.githubusercontent\.com/[^/]+/[^/]+/([0-9a-f]{7,40})/")


@dataclass
class Fetched:
    """A parsed JSON document and the exact bytes it came from."""

    path: str
    data: Any
    raw: bytes = field(repr=False)


def parse_json(path: str, raw: bytes) -> Any:
    try:
        return json.loads(raw)
    except UnicodeDecodeError as exc:
        raise IngestError(path, f"not UTF-8 text ({exc.reason} at byte {exc.start})") from exc
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


class Fetcher:
    """Fetches snapshot files by their path relative to the snapshot's root."""

    def __init__(
        self, location: str, *, timeout: float = 20.0, attempts: int = 4, backoff: float = 0.5
    ) -> None:
        self.location = location.rstrip("/")
        self.remote = self.location.startswith(("http://", "https://"))
        self._timeout, self._attempts, self._backoff = timeout, attempts, backoff
        self._client: httpx.AsyncClient | None = None

    async def __aenter__(self) -> Fetcher:
        if self.remote:
            self._client = httpx.AsyncClient(
                timeout=httpx.Timeout(self._timeout),
                follow_redirects=True,
                limits=httpx.Limits(max_connections=8),
            )
        elif not Path(self.location).is_dir():
            raise IngestError(self.location, "no such directory")
        return self

    async def __aexit__(self, *_exc: object) -> None:
        if self._client is not None:
            await self._client.aclose()

    async def get(self, path: str) -> Fetched:
        raw = await (self._get_remote(path) if self.remote else self._get_local(path))
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
        """The JSON files in `folder` of a directory source; None for a URL (no listing there)."""
        if self.remote:
            return None
        return sorted(f"{folder}/{p.name}" for p in (Path(self.location) / folder).glob("*.json"))

    async def _get_local(self, path: str) -> bytes:
        file = Path(self.location) / path
        try:
            return await asyncio.to_thread(file.read_bytes)
        except FileNotFoundError as exc:
            raise IngestError(path, f"file not found in {self.location}") from exc
        except OSError as exc:
            raise IngestError(path, f"cannot read: {exc.strerror}") from exc

    async def _get_remote(self, path: str) -> bytes:
        assert self._client is not None, "use the Fetcher as an async context manager"
        url = f"{self.location}/{path}"
        retrying = AsyncRetrying(
            stop=stop_after_attempt(self._attempts),
            wait=wait_exponential(multiplier=self._backoff, max=8),
            retry=retry_if_exception(_worth_retrying),
            reraise=True,
        )
        try:
            async for attempt in retrying:
                with attempt:
                    response = await self._client.get(url)
                    response.raise_for_status()
                    return response.content
        except httpx.HTTPStatusError as exc:
            status = exc.response.status_code
            raise IngestError(path, f"HTTP {status} from {url}") from exc
        except httpx.HTTPError as exc:
            raise IngestError(
                path, f"unreachable: {url} ({type(exc).__name__}: {str(exc) or 'no detail'})"
            ) from exc
        raise AssertionError("unreachable")  # pragma: no cover


def _worth_retrying(exc: BaseException) -> bool:
    """Retry network faults, timeouts, 429 and 5xx; a 404 or other 4xx is final."""
    if isinstance(exc, httpx.HTTPStatusError):
        return exc.response.status_code == 429 or exc.response.status_code >= 500
    return isinstance(exc, httpx.TransportError)
