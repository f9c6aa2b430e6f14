"""bench/observability.py --in-process: the request log's and the metrics' CPU cost per request,
measured on ASGI calls in this process (no server, no network, no other process's noise)."""

from __future__ import annotations

import asyncio
import json
import os
import time
import timeit
from collections.abc import Awaitable, Callable
from typing import Any

from bench.__main__ import MANIFEST
from bench.databases import slugs
from bench.queries import DEFAULT_SLUG
from graph.server.app import create_app
from graph.server.documents import MODEL_PAGE
from graph.server.observability import Metrics, Record, RequestLog
from graph.settings import Settings

MODES = {
    "on": {"log_level": "info", "metrics": True},
    "off": {"log_level": "warning", "metrics": False},
}
CALLS = {"warm": 3000, "cold": 300}  # per round and mode
RECORDS: dict[str, list[Record]] = {}  # the request log's records of real requests

Request = tuple[dict[str, Any], bytes]


def request(slug: str) -> Request:
    body = json.dumps({"query": MODEL_PAGE, "variables": {"slug": slug}}).encode()
    headers = [
        (b"host", b"127.0.0.1:8000"),
        (b"content-type", b"application/json"),
        (b"content-length", b"%d" % len(body)),
    ]
    scope = {
        "type": "http",
        "http_version": "1.1",
        "method": "POST",
        "scheme": "http",
        "path": "/graphql",
        "root_path": "",
        "query_string": b"",
        "headers": headers,
        "client": ("127.0.0.1", 40000),
        "server": ("127.0.0.1", 8000),
    }
    return scope, body


async def _drop(_message: Any) -> None:
    return None


async def cpu_per_request(
    app: Any, requests: list[Request], calls: int, kept: list[Record] | None = None
) -> float:
    """This thread's CPU seconds per request, the log written and the metrics folded (and
    the log's records kept in `kept`)."""
    started = time.thread_time()
    for n in range(calls):
        scope, body = requests[n % len(requests)]

        async def receive(body: bytes = body) -> dict[str, Any]:
            return {"type": "http.request", "body": body, "more_body": False}

        await app(dict(scope), receive, _drop)
    log, metrics = app.state.request_log, app.state.metrics
    if kept is not None:
        kept.extend(log.records)
    log.flush()
    if metrics is not None:
        metrics.fold()
    return (time.thread_time() - started) / calls


async def measure(database_url: str, rounds: int, first: str) -> dict[tuple[str, str], list[float]]:
    """CPU per request of each mode, `first`'s app made first (the app made first answers
    cold requests a little slower, whatever its mode: the ratio is taken both ways)."""
    found: dict[tuple[str, str], list[float]] = {}
    devnull = open(os.devnull, "w")
    for cache, requests in (
        ("warm", [request(DEFAULT_SLUG)]),
        ("cold", [request(slug) for slug in slugs(MANIFEST)]),
    ):
        apps: dict[str, Any] = {}
        closers: list[Callable[[], Awaitable[Any]]] = []
        for mode in sorted(MODES, key=lambda m: m != first):
            settings = MODES[mode]
            store = "memory" if cache == "warm" else "off"
            app = create_app(Settings(database_url=database_url, cache=store, **settings))
            lifespan = app.router.lifespan_context(app)
            await lifespan.__aenter__()
            closers.append(lambda lifespan=lifespan: lifespan.__aexit__(None, None, None))
            app.state.request_log.stream = devnull
            apps[mode] = app
            kept = RECORDS.setdefault(cache, []) if mode == "on" else None
            await cpu_per_request(app, requests, CALLS[cache] // 3, kept)  # warm up
        for round_ in range(rounds):
            for mode in ("on", "off") if round_ % 2 == 0 else ("off", "on"):
                seconds = await cpu_per_request(apps[mode], requests, CALLS[cache])
                found.setdefault((cache, mode), []).append(seconds)
        for close in closers:
            await close()
    return found


def own_cost(records: list[Record]) -> float:
    """CPU seconds per request of the request log and the metrics alone: each record added,
    then flushed (rendered, written, counted), and the metrics folded."""
    log = RequestLog(stream=open(os.devnull, "w"), metrics=Metrics())
    log.scheduled = True  # no event loop here: flushed once, below

    def run() -> None:
        for _started, _finished, note, method, path, route in records:
            log.add(note, method, path, route, time.perf_counter())
        log.flush()
        log.scheduled = True
        assert log.metrics is not None
        log.metrics.fold()

    return min(timeit.repeat(run, number=1, repeat=50)) / len(records)


def in_process(database_url: str, rounds: int) -> str:
    """The table: the least CPU per request of each mode, over the rounds of both orders."""
    found = [asyncio.run(measure(database_url, max(rounds, 10) // 2, first)) for first in MODES]
    lines = [
        "| model page, in process | CPU µs/request on | off | on/off | log and metrics "
        "alone, µs/request | their share of off |",
        "|---|---:|---:|---:|---:|---:|",
    ]
    for cache in ("warm", "cold"):
        ratios = [min(f[(cache, "on")]) / min(f[(cache, "off")]) for f in found]
        on = min(min(f[(cache, "on")]) for f in found) * 1e6
        off = min(min(f[(cache, "off")]) for f in found) * 1e6
        ratio = (ratios[0] * ratios[1]) ** 0.5  # the two orders' ratios, their bias cancelled
        own = own_cost(RECORDS[cache]) * 1e6
        lines.append(
            f"| {cache} | {on:.1f} | {off:.1f} | **{ratio:.3f}** | {own:.2f} "
            f"| **{own / off:.3f}** |"
        )
    return "\n".join(lines)
