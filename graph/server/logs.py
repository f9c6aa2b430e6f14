"""Structured logs: one JSON object per line on standard output.

Every log record (ours, uvicorn's, the libraries') is rendered by structlog, with the request
id of the request it was logged in. The request log, one line per request, is the hot path's:
each request appends its record to a list; at most `FLUSH_SECONDS` later the records are
counted in the metrics and their lines rendered in the same JSON shape (what is the same for
many requests made once) and written together (bench/observability.py measures the cost).

User errors (a refused request, an argument out of range, a limit) are that one line at INFO,
with their code and message; an internal error is logged at ERROR with its traceback where it
happens, and its request's line says 500.
"""

from __future__ import annotations

import asyncio
import logging
import sys
import time
from bisect import bisect_left
from collections.abc import Mapping, MutableMapping
from typing import IO, Any

import orjson
import structlog
from graphql import GraphQLError

from graph.errors import ApiError, database_fault
from graph.server.metrics import BOUNDS, Metrics
from graph.server.observe import NOTE, Note

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
    ) -> None:
        self.level, self.stream, self.metrics = level, stream, metrics
        self.records: list[Record] = []
        self.scheduled = False
        self._second, self._stamp = -1, ""
        self._kinds: dict[Kind, tuple[str | None, list[float] | None]] = {}

    def add(self, note: Note, method: str, path: str, route: str, started: float) -> None:
        self.records.append((started, time.perf_counter(), note, method, path, route))
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
        epoch = time.time() - time.perf_counter()
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
        "formatters": {"json": {"()": "graph.server.logs.formatter"}},
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
