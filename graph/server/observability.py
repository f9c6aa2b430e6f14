"""What a request leaves behind: the note of it kept while it is answered, its log line, the
metrics it counts in, and its trace span.

- **The note** (`Note`): its id, the response's own headers, status, operation name, cache
  result, cost and error. The edge (graph/server/edge.py) makes it and keeps it in a context
  variable for the request's task; the /graphql handler and graph/server/responses.py fill it in.
- **Logs**: one JSON object per line on standard output. Every log record (ours, uvicorn's, the
  libraries') is rendered by structlog, with the request id of the request it was logged in.
  The request log, one line per request, is the hot path's: each request appends its record to
  a list; at most `FLUSH_SECONDS` later the records are counted in the metrics and their lines
  rendered in the same JSON shape (what is the same for many requests made once) and written
  together (bench/observability.py measures the cost). User errors (a refused request, an
  argument out of range, a limit) are that one line at INFO, with their code and message; an
  internal error is logged at ERROR with its traceback where it happens, and its request's
  line says 500.
- **Metrics** (prometheus-client, served at GET /metrics): a request adds to plain per-process
  tallies (a dict lookup, a bisect and two additions); the tallies are folded into the
  Prometheus metrics when /metrics is read and, with several worker processes, every second.
  Several workers (`leadgreen serve --workers N`) share their metrics through prometheus-client's
  multiprocess mode: PROMETHEUS_MULTIPROC_DIR names a directory every worker writes to
  (`leadgreen serve` makes one when it is not set), and /metrics, whichever worker answers,
  reads them all. Operation names are labels only when they look like names
  (`[_A-Za-z][_0-9A-Za-z]*`, at most 64 characters) and are among the first `MAX_OPERATIONS`
  seen by a process; the rest count as `other`, so that no client can grow the series without
  bound.
- **Tracing** (optional OpenTelemetry): a span per request and per database statement, never
  per field (the fast execution path stays as it is). On with LEADGREEN_OTEL=true, or when an
  OTLP endpoint is set (OTEL_EXPORTER_OTLP_ENDPOINT or OTEL_EXPORTER_OTLP_TRACES_ENDPOINT),
  unless OTEL_SDK_DISABLED=true; it needs the `otel` extra (`pip install 'leadgreen[otel]'`).
  Spans go to the process's tracer provider when one is set, else to an OTLP/HTTP exporter
  configured by the standard OTEL_* variables. A request's span continues the trace its
  `traceparent` header names.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import os
import re
import sys
import time
import uuid
from bisect import bisect_left
from collections.abc import Awaitable, Callable, Mapping, MutableMapping
from contextvars import ContextVar
from pathlib import Path
from typing import IO, TYPE_CHECKING, Any

import orjson
import structlog
from graphql import GraphQLError
from prometheus_client import (
    CONTENT_TYPE_LATEST,
    CollectorRegistry,
    Counter,
    Gauge,
    Histogram,
    ProcessCollector,
    generate_latest,
    start_http_server,
    write_to_textfile,
)
from prometheus_client.multiprocess import MultiProcessCollector
from starlette.types import Message, Scope, Send

from graph import internals
from graph.errors import ApiError, database_fault

if TYPE_CHECKING:
    from opentelemetry.trace import Tracer
    from sqlalchemy.ext.asyncio import AsyncEngine

    from graph.server.release import ReleaseWatcher
    from graph.settings import Settings

log = logging.getLogger("leadgreen")

# --- The note of a request -------------------------------------------------------------------

Header = tuple[bytes, bytes]


class Note:
    """One request's facts, filled in as it is answered."""

    __slots__ = ("cache", "cost", "error", "headers", "id", "operation", "status")

    def __init__(self, request_id: bytes, headers: tuple[Header, ...]) -> None:
        self.id = request_id
        self.headers = headers  # sent with every response to the request
        self.status = 0  # 0: no response was sent
        self.operation: str | None = None  # None: no GraphQL operation; "": an anonymous one
        self.cache: bytes | None = None  # b"HIT" or b"MISS": answered through the cache
        self.cost: int | None = None  # the answer's actual cost
        self.error: bytes | None = None  # the body of an answer with errors, or a refusal

    def answered(self, cache: bytes, cost: int | None) -> None:
        self.cache, self.cost = cache, cost

    def refused(self, body: bytes) -> None:
        self.error = body


NOTE: ContextVar[Note | None] = ContextVar("leadgreen_note", default=None)


class Noting:
    """`send`, adding the request's headers to its response (and the `missing` ones it does not
    set itself) and noting the status (and, for an error, the body, whose code the request log
    shows)."""

    __slots__ = ("missing", "note", "send")

    def __init__(self, send: Send, note: Note, missing: tuple[Header, ...] = ()) -> None:
        self.send, self.note, self.missing = send, note, missing

    async def __call__(self, message: Message) -> None:
        kind = message["type"]
        if kind == "http.response.start":
            self.note.status = message["status"]
            headers = [*message.get("headers", ()), *self.note.headers]
            if self.missing:
                present = {name.lower() for name, _ in headers}
                headers += [h for h in self.missing if h[0] not in present]
            message = {**message, "headers": headers}
        elif kind == "http.response.body" and self.note.status >= 400 and self.note.error is None:
            self.note.error = message.get("body", b"")[:4096]
        await self.send(message)


def noted(send: Send) -> Send:
    """`send` for a response sent without graph/server/responses.py."""
    note = NOTE.get()
    return send if note is None else Noting(send, note)


def request_id() -> str:
    """The current request's id (one for the log and the client's error); a new one outside a
    request."""
    note = NOTE.get()
    return note.id.decode() if note is not None else uuid.uuid4().hex


def name_operation(label: str) -> None:
    """Note the name of the request's operation ("": an anonymous one)."""
    note = NOTE.get()
    if note is not None:
        note.operation = label


# --- Metrics --------------------------------------------------------------------------------

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
        # Subscriptions (graph/server/subscriptions.py, through `Streams`)
        self.websockets = Gauge(
            "leadgreen_websocket_connections",
            "graphql-transport-ws connections open",
            registry=own,
            multiprocess_mode="livesum",
        )
        self.subscriptions = Gauge(
            "leadgreen_subscriptions",
            "Operations running over a subscription transport, by transport (sse: distinct "
            "connections mode, sse_single: single connection mode, ws: graphql-transport-ws)",
            ["transport"],
            registry=own,
            multiprocess_mode="livesum",
        )
        self.events = Counter(
            "leadgreen_subscription_events",
            "Results sent to subscribers (each `next`), by transport",
            ["transport"],
            registry=own,
        )
        for transport in TRANSPORTS:
            self.subscriptions.labels(transport)
            self.events.labels(transport)
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
            internals.add_to_histogram(self.latency.labels(route, operation), buckets, seconds)
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

    async def exposition(self) -> tuple[bytes, str]:
        """What /metrics shows, and its media type: the tallies folded first."""
        await self.refresh()
        return generate_latest(self.registry), CONTENT_TYPE_LATEST

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


TRANSPORTS = ("sse", "sse_single", "ws")
_STREAMS = logging.getLogger("leadgreen.subscription")


class Operation:
    """One operation sent over a subscription transport, from its start to its end."""

    __slots__ = ("events", "fields", "over", "running", "started", "transport")

    def __init__(self, transport: str, fields: dict[str, Any], started: float) -> None:
        self.transport, self.fields, self.started = transport, fields, started
        self.events = 0
        self.running = False  # admitted by the bounds: counted in the gauge
        self.over = False  # its end logged


class Streams:
    """What subscriptions leave behind: a log line (logger `leadgreen.subscription`) when a
    WebSocket opens and closes and when an operation over any transport starts and ends, with
    its outcome, and the metrics above. No key, token or address is logged: a connection is
    named by an id of its own, an operation by the client's id for it and its name."""

    def __init__(
        self, metrics: Metrics | None = None, clock: Callable[[], float] = time.perf_counter
    ) -> None:
        self.metrics, self.clock = metrics, clock

    def opened(self) -> tuple[str, float]:
        """A WebSocket accepted: its id, and when."""
        connection = uuid.uuid4().hex
        if self.metrics is not None:
            self.metrics.websockets.inc()
        _STREAMS.info("websocket opened", extra={"connection": connection})
        return connection, self.clock()

    def closed(self, connection: str, started: float, code: int, operations: int) -> None:
        if self.metrics is not None:
            self.metrics.websockets.dec()
        fields = {"connection": connection, "code": code, "operations": operations}
        _STREAMS.info("websocket closed", extra={**fields, **self._duration(started)})

    def started(
        self, transport: str, operation: str | None, ident: str | None, **more: Any
    ) -> Operation:
        fields = {"transport": transport, **more}
        if ident is not None:
            fields["id"] = ident[:100]
        if operation:
            fields["operation"] = operation[:200]
        _STREAMS.info("subscription started", extra=fields)
        return Operation(transport, fields, self.clock())

    def running(self, operation: Operation) -> None:
        """The operation is admitted (by the bounds), and counts as running until it ends."""
        operation.running = True
        if self.metrics is not None:
            self.metrics.subscriptions.labels(operation.transport).inc()

    def sent(self, operation: Operation) -> None:
        operation.events += 1
        if self.metrics is not None:
            self.metrics.events.labels(operation.transport).inc()

    def ended(self, operation: Operation, outcome: str, code: str | None = None) -> None:
        """`outcome`: completed (its last result sent), stopped (by its client), closed (its
        connection or stream ended), refused (with its code), failed (an internal error).
        Said once: the first end told is the one logged."""
        if operation.over:
            return
        operation.over = True
        if operation.running and self.metrics is not None:
            self.metrics.subscriptions.labels(operation.transport).dec()
        operation.running = False
        fields = {**operation.fields, "outcome": outcome, "events": operation.events}
        if code is not None:
            fields["code"] = code
        _STREAMS.info("subscription ended", extra={**fields, **self._duration(operation.started)})

    def _duration(self, started: float) -> dict[str, float]:
        return {"duration_ms": round((self.clock() - started) * 1000, 3)}


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


FOLLOW_OUTCOMES = ("ingested", "unchanged", "failed")
_FOLLOW: tuple[Counter, Gauge, Counter] | None = None


def follow_metrics() -> tuple[Counter, Gauge, Counter]:
    """The metrics of `leadgreen follow` (a process of its own: served on its --metrics-port,
    or written to its --metrics-file)."""
    global _FOLLOW
    if _FOLLOW is None:
        runs = Counter(
            "leadgreen_follow_runs",
            "Follow rounds, by outcome (ingested: a new release; unchanged: nothing new; "
            "failed: the fetch, a commit's files or the database failed)",
            ["outcome"],
            registry=None,
        )
        for outcome in FOLLOW_OUTCOMES:
            runs.labels(outcome)
        _FOLLOW = (
            runs,
            Gauge(
                "leadgreen_follow_last_success_timestamp_seconds",
                "When a follow round last ended without a failure (Unix time; 0: never)",
                registry=None,
                multiprocess_mode="max",
            ),
            Counter(
                "leadgreen_follow_releases",
                "Releases written by the follower (data already stored is not counted)",
                registry=None,
            ),
        )
    return _FOLLOW


def record_follow(outcome: str, releases: int, now: float) -> None:
    runs, last_success, written = follow_metrics()
    runs.labels(outcome).inc()
    written.inc(releases)
    if outcome != "failed":
        last_success.set(now)


def follow_registry() -> CollectorRegistry:
    registry = CollectorRegistry()
    for metric in follow_metrics():
        registry.register(metric)
    return registry


def serve_follow_metrics(host: str, port: int) -> None:
    """The follower's metrics at http://host:port/metrics, from a thread of prometheus-client's."""
    start_http_server(port, addr=host, registry=follow_registry())


def write_follow_metrics(path: Path) -> None:
    write_to_textfile(str(path), follow_registry())


# --- Logs -----------------------------------------------------------------------------------

FLUSH_SECONDS = 0.05
MAX_PENDING = 10_000  # records kept before a flush is forced
_MAX_KINDS = 1024
_LEVELS = {logging.INFO: "info", logging.WARNING: "warning", logging.ERROR: "error"}
# started and finished (perf_counter), the note, method, path and route label
Record = tuple[float, float, Note, str, str, str]
# What is the same for many requests (and their route): method, path, status, operation,
# cache result, cost.
Kind = tuple[str, str, int, str | None, bytes | None, int | None]
_THOUSANDTHS = [f"{n:03d}" for n in range(1000)]


class RequestLog:
    """Each request's record, kept until the next flush (at most FLUSH_SECONDS later): then
    counted in the metrics, and written as its log line when the level takes it."""

    def __init__(
        self,
        level: int = logging.INFO,
        stream: IO[Any] | None = None,
        metrics: Metrics | None = None,
        clock: Callable[[], float] = time.perf_counter,
    ) -> None:
        """`clock` is the one requests' `started` comes from (tests give their own)."""
        self.level, self.stream, self.metrics, self.clock = level, stream, metrics, clock
        self.records: list[Record] = []
        self.scheduled = False
        self._second, self._stamp = -1, ""
        self._kinds: dict[Kind, tuple[str | None, list[float] | None]] = {}

    def add(self, note: Note, method: str, path: str, route: str, started: float) -> None:
        self.records.append((started, self.clock(), note, method, path, route))
        if len(self.records) >= MAX_PENDING:
            self.flush()
        elif not self.scheduled:
            try:
                asyncio.get_running_loop().call_later(FLUSH_SECONDS, self.flush)
            except RuntimeError:  # no loop: now
                self.flush()
                return
            self.scheduled = True

    def flush(self) -> None:
        """Count the records in the metrics and write their lines, in one pass: what is the
        same for many requests (a line's shape, a metrics cell) is looked up once per kind."""
        self.scheduled = False
        if not self.records:
            return
        records, self.records = self.records, []
        epoch = time.time() - self.clock()
        lines = []
        kinds, kind_of = self._kinds, self._kind
        for started, finished, note, method, path, route in records:
            key = (method, path, note.status, note.operation, note.cache, note.cost)
            shape, cell = kinds.get(key) or kind_of(key, route)
            seconds = finished - started
            if cell is not None:
                cell[bisect_left(BOUNDS, seconds)] += 1
                cell[-1] += seconds
            if shape is None:
                continue
            if note.error is not None:
                shape += _error(note.error)
            at = epoch + started
            second = int(at)
            if second != self._second:
                self._second = second
                self._stamp = time.strftime("%Y-%m-%dT%H:%M:%S", time.gmtime(second))
            micros = int(seconds * 1_000_000)
            lines.append(
                f'{{"timestamp":"{self._stamp}.{_THOUSANDTHS[int((at - second) * 1000)]}Z",'
                f'"request_id":"{note.id.decode()}",{shape},'
                f'"duration_ms":{micros // 1000}.{_THOUSANDTHS[micros % 1000]}}}\n'
            )
        if lines:
            self.write("".join(lines).encode())

    def write(self, data: bytes) -> None:
        stream = self.stream or sys.stdout
        buffer = getattr(stream, "buffer", None)
        if buffer is not None:
            buffer.write(data)
            buffer.flush()
        else:
            stream.write(data.decode())
            stream.flush()

    def _kind(self, key: Kind, route: str) -> tuple[str | None, list[float] | None]:
        """A kind of request's line shape (None when the level leaves it out) and metrics
        cell (None without metrics)."""
        method, path, status, operation, cache, cost = key
        level = logging.INFO if 0 < status < 500 else _fault(status)
        cell = None if self.metrics is None else self.metrics.cell(route, operation, status, cache)
        if len(self._kinds) >= _MAX_KINDS:
            self._kinds.clear()
        if level < self.level:
            self._kinds[key] = (None, cell)
            return None, cell
        shape = (
            f'"level":"{_LEVELS[level]}","logger":"leadgreen.request","event":"request",'
            f'"method":{_json(method[:20])},"path":{_json(path[:300])},"status":{status}'
        )
        if operation:
            shape += f',"operation":{_json(operation[:200])}'
        if cache is not None:
            shape += f',"cache":"{cache.decode().lower()}"'
        if cost is not None:
            shape += f',"cost":{cost}'
        self._kinds[key] = (shape, cell)
        return shape, cell


def _fault(status: int) -> int:
    # 503 (the database away) and 504 (too slow) are the service's trouble, not a bug; a 500,
    # or no response at all, is one.
    return logging.WARNING if status in (502, 503, 504) else logging.ERROR


def _json(value: Any) -> str:
    return orjson.dumps(value).decode()


def _error(body: bytes) -> str:
    """The code and message of the first error an answer or refusal carries."""
    try:
        answer = orjson.loads(body)
    except orjson.JSONDecodeError:
        return ""
    if not isinstance(answer, dict):
        return ""
    errors = answer.get("errors")
    error = errors[0] if isinstance(errors, list) and errors else answer.get("error")
    if not isinstance(error, dict):
        return ""
    code = error.get("code") or (error.get("extensions") or {}).get("code")
    message = error.get("message")
    found = {"code": code, "message": message[:300] if isinstance(message, str) else None}
    return "," + _json({k: v for k, v in found.items() if v is not None})[1:-1]


# --- Every other record: the standard library's, rendered by structlog ----------------------


def _request_id(_logger: Any, _name: str, event: MutableMapping[str, Any]) -> Mapping[str, Any]:
    note = NOTE.get()
    if note is not None:
        event.setdefault("request_id", note.id.decode())
    return event


def _drop_color(_logger: Any, _name: str, event: MutableMapping[str, Any]) -> Mapping[str, Any]:
    event.pop("color_message", None)  # uvicorn's message again, with terminal colours
    return event


def _dumps(value: Any, **_kwargs: Any) -> str:
    return orjson.dumps(value, default=str).decode()


def formatter() -> logging.Formatter:
    """The JSON formatter of every standard-library record (named in `logging_config`)."""
    return structlog.stdlib.ProcessorFormatter(
        foreign_pre_chain=[
            structlog.stdlib.add_log_level,
            structlog.stdlib.add_logger_name,
            structlog.processors.TimeStamper(fmt="iso", utc=True),
            _request_id,
            structlog.stdlib.ExtraAdder(),
            _drop_color,
        ],
        processors=[
            structlog.stdlib.ProcessorFormatter.remove_processors_meta,
            structlog.processors.format_exc_info,
            structlog.processors.JSONRenderer(serializer=_dumps),
        ],
    )


def logging_config(level: str) -> dict[str, Any]:
    """The logging configuration of `leadgreen serve` (uvicorn applies it in every worker)."""
    return {
        "version": 1,
        "disable_existing_loggers": False,
        "formatters": {"json": {"()": "graph.server.observability.formatter"}},
        "handlers": {
            "stdout": {
                "class": "logging.StreamHandler",
                "stream": "ext://sys.stdout",
                "formatter": "json",
            }
        },
        "root": {"handlers": ["stdout"], "level": level.upper()},
        "loggers": {
            # uvicorn's own handlers are replaced by the JSON one; its access log by ours.
            "uvicorn": {"handlers": [], "propagate": True},
            "uvicorn.error": {"handlers": [], "propagate": True},
            "uvicorn.access": {"handlers": [], "propagate": False},
            "alembic": {"level": "WARNING"},
        },
    }


class ExpectedErrors(logging.Filter):
    """strawberry logs every error of a result, with its traceback; the ones a client caused
    (and each refusal) are the request line's, and unexpected ones are logged where they are
    masked (graph/engine/execution.py)."""

    def filter(self, record: logging.LogRecord) -> bool:
        error = record.msg  # strawberry logs the error itself, with its original's traceback
        if not isinstance(error, GraphQLError):
            return True
        original = error.original_error
        # A database fault is said once, as a warning without its traceback, where it is
        # masked: an outage must not write a traceback per request.
        return not (
            original is None
            or isinstance(original, ApiError | GraphQLError)
            or database_fault(original) is not None
        )


_EXPECTED = ExpectedErrors()


def quiet_expected_errors() -> None:
    logger = logging.getLogger("strawberry.execution")
    if _EXPECTED not in logger.filters:
        logger.addFilter(_EXPECTED)


# --- Tracing --------------------------------------------------------------------------------

_PROPAGATED = (b"traceparent", b"tracestate", b"baggage")
_SPAN = "_leadgreen_span"


def wanted(settings: Settings) -> bool:
    if os.environ.get("OTEL_SDK_DISABLED", "").lower() == "true":
        return False
    return settings.otel or any(
        os.environ.get(name)
        for name in ("OTEL_EXPORTER_OTLP_ENDPOINT", "OTEL_EXPORTER_OTLP_TRACES_ENDPOINT")
    )


def make_tracing(settings: Settings) -> Tracing | None:
    """Tracing as the settings and environment ask; None when off (or not installed)."""
    if not wanted(settings):
        return None
    try:
        from opentelemetry import trace
        from opentelemetry.sdk.trace import TracerProvider
    except ImportError:
        log.warning("tracing asked for, but OpenTelemetry is not installed: leadgreen[otel]")
        return None
    if not isinstance(trace.get_tracer_provider(), TracerProvider):  # nobody has set one
        from opentelemetry.exporter.otlp.proto.http.trace_exporter import OTLPSpanExporter
        from opentelemetry.sdk.resources import Resource
        from opentelemetry.sdk.trace.export import BatchSpanProcessor

        name = os.environ.get("OTEL_SERVICE_NAME", "leadgreen")
        provider = TracerProvider(resource=Resource.create({"service.name": name}))
        provider.add_span_processor(BatchSpanProcessor(OTLPSpanExporter()))
        trace.set_tracer_provider(provider)
    return Tracing(trace.get_tracer("leadgreen"))


class Tracing:
    def __init__(self, tracer: Tracer) -> None:
        self.tracer = tracer

    async def request(self, scope: Scope, note: Note, answering: Awaitable[None]) -> None:
        """Answer the request within its span."""
        from opentelemetry import propagate  # imported once, then looked up
        from opentelemetry.trace import SpanKind, Status, StatusCode

        carrier = {
            name.decode("latin-1"): value.decode("latin-1")
            for name, value in scope["headers"]
            if name in _PROPAGATED
        }
        method, route = scope["method"], route_of(scope["path"])
        with self.tracer.start_as_current_span(
            f"{method} {route}",
            context=propagate.extract(carrier),
            kind=SpanKind.SERVER,
            attributes={
                "http.request.method": method,
                "url.path": scope["path"][:300],
                "http.route": route,
                "leadgreen.request_id": note.id.decode(),
            },
        ) as span:
            await answering
            span.set_attribute("http.response.status_code", note.status)
            if note.operation:
                span.set_attribute("graphql.operation.name", note.operation[:200])
            if note.cache is not None:
                span.set_attribute("leadgreen.cache", note.cache.decode().lower())
            if note.status >= 500 or note.status == 0:
                span.set_status(Status(StatusCode.ERROR))

    def instrument(self, engine: AsyncEngine) -> None:
        """A span per statement the engine runs, child of the request's."""
        from opentelemetry.trace import SpanKind, Status, StatusCode
        from sqlalchemy import event

        system = engine.dialect.name

        def before(
            _conn: Any, _cursor: Any, statement: str, _params: Any, context: Any, _many: bool
        ) -> None:
            verb = statement.lstrip().split(None, 1)[0].upper() if statement.strip() else "SQL"
            span = self.tracer.start_span(
                f"{verb} {system}",
                kind=SpanKind.CLIENT,
                attributes={"db.system": system, "db.statement": statement[:2000]},
            )
            setattr(context, _SPAN, span)

        def after(
            _conn: Any, _cursor: Any, _statement: str, _params: Any, context: Any, _many: bool
        ) -> None:
            span = getattr(context, _SPAN, None)
            if span is not None:
                span.end()
                setattr(context, _SPAN, None)

        def failed(error: Any) -> None:
            span = getattr(error.execution_context, _SPAN, None)
            if span is not None:
                span.record_exception(error.original_exception)
                span.set_status(Status(StatusCode.ERROR))
                span.end()
                setattr(error.execution_context, _SPAN, None)

        event.listen(engine.sync_engine, "before_cursor_execute", before)
        event.listen(engine.sync_engine, "after_cursor_execute", after)
        event.listen(engine.sync_engine, "handle_error", failed)
