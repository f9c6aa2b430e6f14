"""Prometheus metrics at GET /metrics (prometheus-client).

A request adds to plain per-process tallies (a dict lookup, a bisect and two additions); the
tallies are folded into the Prometheus metrics when /metrics is read and, with several worker
processes, every second. Several workers (`leadgreen serve --workers N`) share their metrics
through prometheus-client's multiprocess mode: PROMETHEUS_MULTIPROC_DIR names a directory every
worker writes to (`leadgreen serve` makes one when it is not set), and /metrics, whichever
worker answers, reads them all.

Operation names are labels only when they look like names (`[_A-Za-z][_0-9A-Za-z]*`, at most
64 characters) and are among the first `MAX_OPERATIONS` seen by a process; the rest count as
`other`, so that no client can grow the series without bound.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import os
import re
from bisect import bisect_left
from collections.abc import Callable
from pathlib import Path
from typing import TYPE_CHECKING

from prometheus_client import (
    CONTENT_TYPE_LATEST,
    CollectorRegistry,
    Counter,
    Gauge,
    Histogram,
    ProcessCollector,
    generate_latest,
    write_to_textfile,
)
from prometheus_client.multiprocess import MultiProcessCollector
from starlette.requests import Request
from starlette.responses import Response

from graph.server.compress import choose, compress

if TYPE_CHECKING:
    from graph.server.release import ReleaseWatcher

log = logging.getLogger("leadgreen")
# Request latency buckets, in seconds: a cache hit is well under a millisecond, a cold model
# page a few milliseconds, a task's whole table some tens.
BOUNDS = (0.0005, 0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1.0, 2.5, 5.0, 10.0)
MAX_OPERATIONS = 200
_NAME = re.compile(r"[_A-Za-z][_0-9A-Za-z]{0,63}")
FOLD_SECONDS = 1.0
Key = tuple[str, str | None, int, bytes | None]


def multiprocess() -> bool:
    return bool(os.environ.get("PROMETHEUS_MULTIPROC_DIR"))


def route_of(path: str) -> str:
    """The route label of a request path (a bounded set)."""
    if path.startswith("/data/"):
        return "/data"
    if path.startswith("/api/v1/"):
        return "/api/v1"
    return path if path in ("/graphql", "/healthz", "/readyz", "/metrics") else "other"


class Metrics:
    """This process's metrics: the request tallies, and what /metrics shows."""

    def __init__(self, release: ReleaseWatcher | None = None) -> None:
        self.release = release
        self.multiprocess = multiprocess()
        self.registry = CollectorRegistry()
        own = None if self.multiprocess else self.registry
        self.requests = Counter(
            "leadgreen_requests",
            "HTTP requests answered, by route, GraphQL operation name and status",
            ["route", "operation", "status"],
            registry=own,
        )
        self.latency = Histogram(
            "leadgreen_request_duration_seconds",
            "Time from a request's arrival to its answer sent, by route and operation name",
            ["route", "operation"],
            buckets=BOUNDS,
            registry=own,
        )
        self.cache = Counter(
            "leadgreen_response_cache",
            "GraphQL answers by response cache result (hit: sent from the cache)",
            ["result"],
            registry=own,
        )
        self.refusals = Counter(
            "leadgreen_rate_limit_refusals",
            "Requests refused by the rate limiter (429 THROTTLED)",
            registry=own,
        )
        self.current = Gauge(
            "leadgreen_release",
            "The release number answers come from",
            registry=own,
            multiprocess_mode="max",
        )
        if self.multiprocess:
            MultiProcessCollector(self.registry)  # type: ignore[no-untyped-call]
        else:
            ProcessCollector(registry=self.registry)
            for metric in ingest_metrics():
                self.registry.register(metric)
        self._folded: dict[Key, list[float]] = {}
        self._operations: set[str] = set()
        self._task: asyncio.Task[None] | None = None
        # Counts the requests not counted yet (the request log's records).
        self.pending: Callable[[], None] = lambda: None

    def add(
        self, route: str, operation: str | None, status: int, cache: bytes | None, seconds: float
    ) -> None:
        """Count one request (the request log counts its records through `cell`)."""
        cell = self.cell(route, operation, status, cache)
        cell[bisect_left(BOUNDS, seconds)] += 1
        cell[-1] += seconds

    def cell(
        self, route: str, operation: str | None, status: int, cache: bytes | None
    ) -> list[float]:
        """The tally of requests of a kind: counts per latency bucket (BOUNDS, then +Inf),
        then their seconds."""
        key = (route, self.label(route, operation), status, cache)
        cell = self._folded.get(key)
        if cell is None:
            cell = self._folded[key] = [0.0] * (len(BOUNDS) + 2)
        return cell

    def label(self, route: str, operation: str | None) -> str:
        if route != "/graphql" or operation is None:  # no GraphQL operation: a preflight...
            return ""
        if not operation:
            return "anonymous"
        if operation in self._operations:
            return operation
        if len(self._operations) < MAX_OPERATIONS and _NAME.fullmatch(operation):
            self._operations.add(operation)
            return operation
        return "other"

    def fold(self) -> None:
        """Move the tallies into the Prometheus metrics."""
        for (route, operation, status, cache), cell in self._folded.items():
            *buckets, seconds = cell
            count = sum(buckets)
            if not count:
                continue
            self.requests.labels(route, operation, str(status)).inc(count)
            add_to_histogram(self.latency.labels(route, operation), buckets, seconds)
            if cache is not None:
                self.cache.labels(cache.decode().lower()).inc(count)
            if status == 429:
                self.refusals.inc(count)
            cell[:] = [0.0] * len(cell)

    async def refresh(self) -> None:
        """Fold the tallies, and read the release served."""
        self.pending()
        self.fold()
        if self.release is None:
            return
        try:
            current = await self.release.current()
        except Exception as exc:  # the database away: the gauge keeps its last value
            log.warning("metrics: could not read the current release: %r", exc)
            return
        if current is not None:
            self.current.set(current.release.id)

    async def endpoint(self, request: Request) -> Response:
        await self.refresh()
        body = generate_latest(self.registry)
        headers = {"cache-control": "no-store", "vary": "accept-encoding"}
        coding = choose(request.headers.get("accept-encoding", "").encode("latin-1"))
        if coding is not None:
            body = compress(body, coding, kept=False)
            headers["content-encoding"] = coding.decode()
        return Response(body, headers=headers, media_type=CONTENT_TYPE_LATEST)

    def start(self) -> None:
        """With several processes, fold every second (a scrape reaches one process)."""
        if self.multiprocess and self._task is None:
            self._task = asyncio.create_task(self._fold_often())

    async def stop(self) -> None:
        if self._task is not None:
            self._task.cancel()
            with contextlib.suppress(asyncio.CancelledError):
                await self._task
            self._task = None
        await self.refresh()

    async def _fold_often(self) -> None:
        while True:
            await asyncio.sleep(FOLD_SECONDS)
            await self.refresh()


def add_to_histogram(child: Histogram, buckets: list[float], seconds: float) -> None:
    """Add counts per bucket (not cumulative, as `observe` keeps them) and their sum to a
    histogram at once. prometheus-client has no public call for it; tests/test_observe.py
    checks that this agrees with `observe`."""
    for value, count in zip(child._buckets, buckets, strict=True):
        if count:
            value.inc(count)
    child._sum.inc(seconds)


_INGEST: tuple[Counter, Histogram] | None = None


def ingest_metrics() -> tuple[Counter, Histogram]:
    """The ingest metrics of this process (an ingest runs before the app, or without one)."""
    global _INGEST
    if _INGEST is None:
        _INGEST = (
            Counter(
                "leadgreen_ingests",
                "Ingests run by this process, by outcome (ingested, unchanged, failed)",
                ["outcome"],
                registry=None,
            ),
            Histogram(
                "leadgreen_ingest_duration_seconds",
                "Time an ingest took, by outcome",
                ["outcome"],
                buckets=(0.5, 1, 2.5, 5, 10, 30, 60, 120, 300, 600),
                registry=None,
            ),
        )
    return _INGEST


def record_ingest(outcome: str, seconds: float) -> None:
    count, duration = ingest_metrics()
    count.labels(outcome).inc()
    duration.labels(outcome).observe(seconds)


def write_ingest_metrics(path: Path) -> None:
    """This process's ingest metrics, in Prometheus text format (a textfile collector's)."""
    registry = CollectorRegistry()
    for metric in ingest_metrics():
        registry.register(metric)
    write_to_textfile(str(path), registry)
