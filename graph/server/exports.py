"""Bulk exports: a release's configurations as CSV or Parquet, streamed.

`GET /api/v1/configurations.csv` and `.parquet` take the `configurations` field's filter as
query parameters (`task`, `model`, `modelId`, `gpu`, `numGpus`, the kind's ranges and bounds,
each named as in GraphQL) and `release`; the task's kind (LLM or diffusion) says which filter
and which columns. The columns are the task files' own (upstream names, in their rows' order,
db.kinds), after the stable id (`id`, the configuration's global id), the `release` and the
`task`. CSV is sent in chunks of rows (gzip for a client that accepts it), Parquet as one row
group per chunk; both carry a weak ETag of the release and the filter, and the release's
provenance: in response headers, and in the Parquet file's key-value metadata.

A client that asks for the size (HEAD) or for a part (`Range`), as polars and DuckDB's httpfs
read a URL, gets the export written to a file first (`Spool`: the last few exports, on disk,
by ETag) and sent from it with its length and byte ranges; the bytes are the same as streamed
(CSV without gzip).
"""

from __future__ import annotations

import asyncio
import csv
import functools
import hashlib
import io
import os
import shutil
import tempfile
import typing
import weakref
import zlib
from collections import OrderedDict
from collections.abc import Callable, Iterator, Mapping, Sequence
from dataclasses import dataclass, fields
from pathlib import Path
from typing import Any

from anyio import to_thread
from sqlalchemy.ext.asyncio import AsyncSession, async_sessionmaker
from starlette.requests import Request
from starlette.responses import FileResponse, Response, StreamingResponse
from starlette.routing import Route
from starlette.types import Message, Receive, Scope, Send
from strawberry.utils.str_converters import to_camel_case

from db.catalog import Catalog
from db.database import request_session
from db.fields import without_none
from db.kinds import LLM, Kind
from graph.errors import ApiError, BadInput, Code
from graph.schema.answers.filters import to_filter
from graph.schema.context import Context, known_task
from graph.schema.inputs import FILTER_INPUTS, AnyFilter
from graph.schema.memory import Catalogs
from graph.server.edge import ASKED_HEAD
from graph.server.responses import error_response, etag_matches, weak
from graph.settings import Settings

# Rows per CSV chunk and per Parquet row group.
CHUNK_ROWS = 2000
MEDIA_TYPES = {"csv": "text/csv; charset=utf-8", "parquet": "application/vnd.apache.parquet"}
# The columns before the task file's own.
LEADING: dict[str, type] = {"id": str, "release": int, "task": str}
# Each column's Arrow type by its Python type's name (pyarrow is imported by the first Parquet
# export, not at the server's start: a fifth of a second).
ARROW_TYPES = {str: "string", int: "int64", float: "float64", bool: "bool_"}


@dataclass(frozen=True)
class Parameter:
    """A query parameter of a kind's filter: its field in the filter input and its type."""

    field: str
    python: type


def parameters(kind: Kind) -> dict[str, Parameter]:
    """The query parameters of the kind's filter, by their GraphQL (camelCase) name."""
    cls = FILTER_INPUTS[kind]
    hints = typing.get_type_hints(cls)
    return {
        to_camel_case(f.name): Parameter(f.name, without_none(hints[f.name])) for f in fields(cls)
    }


PARAMETERS = {kind: parameters(kind) for kind in FILTER_INPUTS}


def _value(name: str, text: str, python: type) -> Any:
    """A query parameter's value as its type; a BadInput naming it when it is not one."""
    if python is str:
        return text
    try:
        if python is int:
            return int(text, 10)
        if python is float:
            value = float(text)
            if value == value and abs(value) != float("inf"):
                return value
    except ValueError:
        pass
    spelled = {int: "an integer", float: "a finite number"}[python]
    raise BadInput(f"query parameter `{name}` must be {spelled}, got {text[:40]!r}")


def release_asked(query: Mapping[str, str]) -> int | None:
    text = query.get("release") or None
    return None if text is None else _value("release", text, int)


def read_filter(catalog: Catalog, query: Sequence[tuple[str, str]]) -> tuple[Kind, AnyFilter]:
    """The kind (from `task`, LLM without one) and its filter input, from the query
    parameters; an unknown parameter, one given twice or a value of the wrong type is a
    BadInput naming it."""
    given: dict[str, str] = {}
    for name, text in query:
        if name in given:
            raise BadInput(f"query parameter `{name}` is given twice")
        given[name] = text
    given.pop("release", None)
    kind = LLM
    if "task" in given:
        task = known_task(catalog, given["task"], "task")
        kind = catalog.kind_of_task[task.id]
    known = PARAMETERS[kind]
    for name in given:
        if name not in known:
            raise BadInput(
                f"unknown query parameter `{name[:100]}`; {kind.article} {kind.called} "
                f"export takes release, {', '.join(known)}"
            )
    values = {
        known[name].field: _value(name, text, known[name].python) for name, text in given.items()
    }
    return kind, FILTER_INPUTS[kind](**values)


@dataclass(frozen=True)
class Export:
    """What an export writes: its columns (name → type) and how to read a row's values."""

    catalog: Catalog
    kind: Kind
    columns: Mapping[str, type]
    rows: Sequence[Any]

    def records(self, rows: Sequence[Any]) -> Iterator[list[Any]]:
        """Each row's values, in the order of `columns`."""
        catalog, kind = self.catalog, self.kind
        names = list(self.columns)[len(LEADING) :]
        for row in rows:
            upstream = kind.task_file_row(row, catalog.model_by_id[row.model_id])
            yield [
                f"Configuration:{row.key}",
                catalog.release.id,
                catalog.task_by_id[row.task_id].name,
                *(upstream.get(name) for name in names),
            ]

    def chunks(self) -> Iterator[Sequence[Any]]:
        for start in range(0, len(self.rows), CHUNK_ROWS):
            yield self.rows[start : start + CHUNK_ROWS]


def make_export(catalog: Catalog, kind: Kind, given: AnyFilter) -> Export:
    """The rows the filter selects, and the columns of the variants of the task's rows (of
    the kind's rows without a task): an export of nothing has them too."""
    where = to_filter(catalog, given, kind, strict=False)
    task = catalog.task_by_name.get(given.task) if given.task is not None else None
    every = catalog.of_task(kind, task.id) if task is not None else catalog.rows.get(kind, ())
    variants = {kind.variant(row) for row in every} or set(kind.rows)
    columns: dict[str, type] = dict(LEADING)
    for variant in kind.rows:
        if variant in variants:
            columns.update(kind.task_fields[variant])
    return Export(catalog, kind, columns, catalog.configurations(kind, where))


def provenance(catalog: Catalog) -> dict[str, str]:
    """The release's provenance, as the export's headers and Parquet metadata name it."""
    release, source = catalog.release, catalog.source
    found = {
        "source": source.name if source else None,
        "source-url": source.url if source else None,
        "licence": source.licence if source else None,
        "release": str(release.id),
        "upstream-commit": release.upstream_commit,
        "files-sha256": release.data_digest,
    }
    return {name: value for name, value in found.items() if value}


def write_csv(export: Export) -> Iterator[bytes]:
    text = io.StringIO()
    writer = csv.writer(text, lineterminator="\n")
    writer.writerow(export.columns)
    for rows in export.chunks():
        writer.writerows(export.records(rows))
        yield text.getvalue().encode()
        text.seek(0)
        text.truncate()
    if text.tell():  # only the header: an export of nothing
        yield text.getvalue().encode()


def gzipped(chunks: Iterator[bytes]) -> Iterator[bytes]:
    packer = zlib.compressobj(6, zlib.DEFLATED, 31)  # 31: the gzip format
    for chunk in chunks:
        packed = packer.compress(chunk)
        if packed:
            yield packed
    yield packer.flush()


class _Sink:
    """A file the Parquet writer writes to: what it wrote since the last `take`, and where it
    is in the whole file (the footer's offsets count from the start)."""

    closed = False

    def __init__(self) -> None:
        self.parts: list[bytes] = []
        self.position = 0

    def write(self, data: Any) -> int:
        self.parts.append(bytes(data))
        self.position += len(data)
        return len(data)

    def tell(self) -> int:
        return self.position

    def flush(self) -> None:
        pass

    def take(self) -> bytes:
        data = b"".join(self.parts)
        self.parts.clear()
        return data


def write_parquet(export: Export, metadata: Mapping[str, str]) -> Iterator[bytes]:
    import pyarrow as pa
    import pyarrow.parquet as pq

    schema = pa.schema(
        [(name, getattr(pa, ARROW_TYPES[python])()) for name, python in export.columns.items()],
        metadata={f"leadgreen.{name}": value for name, value in metadata.items()},
    )
    sink = _Sink()
    with pq.ParquetWriter(sink, schema, compression="zstd") as writer:
        for rows in export.chunks():
            columns = list(zip(*export.records(rows), strict=True))
            writer.write_table(pa.Table.from_arrays(columns, schema=schema))
            yield sink.take()
    yield sink.take()


def etag_of(catalog: Catalog, fmt: str, given: AnyFilter) -> str:
    """A weak ETag for the release (its content) and the filter, as read (not as written)."""
    asked = sorted((f.name, repr(getattr(given, f.name))) for f in fields(given))
    key = repr((EXPORT_VERSION, fmt, catalog.release.id, catalog.release.digest, asked))
    return weak('"' + hashlib.sha256(key.encode()).hexdigest()[:32] + '"')


# Changed when what an export writes changes, so that the ETags change with it.
EXPORT_VERSION = 1


class Spool:
    """Exports written to files, by ETag, for the clients that read a URL by its size and
    ranges. Holds the `keep` exports asked for last (in a temporary directory made when first
    needed, removed with the spool); one export is written once however many ask for it at a
    time."""

    def __init__(self, keep: int = 8) -> None:
        self.keep = keep
        self._directory: Path | None = None
        self._files: OrderedDict[str, Path] = OrderedDict()
        self._writing: dict[str, asyncio.Lock] = {}

    async def file(self, etag: str, chunks: Callable[[], Iterator[bytes]]) -> Path:
        """The export's file, written from `chunks` (in a worker thread) when not kept."""
        lock = self._writing.setdefault(etag, asyncio.Lock())
        async with lock:
            path = self._files.get(etag)
            if path is None:
                name = hashlib.sha256(etag.encode()).hexdigest()[:32]
                path = self.directory() / name
                await to_thread.run_sync(_write, path, chunks)
                self._files[etag] = path
                while len(self._files) > self.keep:
                    _, old = self._files.popitem(last=False)
                    old.unlink(missing_ok=True)
            self._files.move_to_end(etag)
        self._writing.pop(etag, None)
        return path

    def directory(self) -> Path:
        if self._directory is None:
            self._directory = Path(tempfile.mkdtemp(prefix="leadgreen-exports-"))
            weakref.finalize(self, shutil.rmtree, self._directory, ignore_errors=True)
        return self._directory


class SpooledFile(FileResponse):
    """An export's file, its length and byte ranges; Starlette's refusals of a `Range` (400
    malformed, 416 past the end, in plain text) sent as JSON errors, code BAD_REQUEST, with
    their message and Content-Range."""

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        refused: Message | None = None

        async def sending(message: Message) -> None:
            nonlocal refused
            if message["type"] == "http.response.start" and message["status"] in (400, 416):
                refused = message
                return
            if refused is None:
                await send(message)
                return
            said = bytes(message.get("body", b"")).decode("latin-1").strip()
            kept = {k.decode(): v.decode("latin-1") for k, v in refused["headers"]}
            headers = {"content-range": kept["content-range"]} if "content-range" in kept else {}
            reason = said or "no byte of the range asked for is in the export"
            answer = error_response(refused["status"], Code.BAD_REQUEST, reason, headers)
            await answer(scope, receive, send)

        await super().__call__(scope, receive, sending)


def _write(path: Path, chunks: Callable[[], Iterator[bytes]]) -> None:
    """Writes the file whole under a name of its own, then gives it its name."""
    partial = path.with_suffix(".partial")
    with partial.open("wb") as out:
        for chunk in chunks():
            out.write(chunk)
    os.replace(partial, path)


def export_routes(
    settings: Settings,
    make_session: async_sessionmaker[AsyncSession],
    catalogs: Catalogs,
    max_age: int = 60,
) -> list[Route]:
    """The export routes, answering from the release's catalog (read through `make_session`)."""
    spool = Spool()

    async def endpoint(request: Request, fmt: str) -> Response:
        try:
            async with request_session(make_session) as session:
                context = Context(session=session, settings=settings, catalogs=catalogs)
                catalog = await context.catalog(release_asked(request.query_params))
                kind, given = read_filter(catalog, request.query_params.multi_items())
                export = make_export(catalog, kind, given)
        except ApiError as exc:
            status = 503 if exc.code == Code.NO_DATA else 400
            return error_response(status, exc.code, str(exc))
        etag = etag_of(catalog, fmt, given)
        about = provenance(catalog)
        headers = {
            "etag": etag,
            "cache-control": f"public, max-age={max_age}",
            "vary": "accept-encoding",
            **{f"x-leadgreen-{name}": _latin1(value) for name, value in about.items()},
        }
        if_none_match = request.headers.get("if-none-match")
        if if_none_match and etag_matches(if_none_match.encode("latin-1"), etag.encode()):
            return Response(status_code=304, headers=headers)
        headers["content-disposition"] = f'attachment; filename="configurations.{fmt}"'
        media_type = MEDIA_TYPES[fmt]
        write: Callable[[], Iterator[bytes]] = functools.partial(write_csv, export)
        if fmt == "parquet":
            write = functools.partial(write_parquet, export, about)
        if ASKED_HEAD in request.scope or "range" in request.headers:
            path = await spool.file(etag, write)
            return SpooledFile(path, headers=headers, media_type=media_type)
        chunks = write()
        if fmt == "csv" and accepts_gzip(request.headers.get("accept-encoding", "")):
            chunks, headers["content-encoding"] = gzipped(chunks), "gzip"
        # Iterated in Starlette's thread pool: writing a chunk does not hold the event loop.
        return StreamingResponse(chunks, media_type=media_type, headers=headers)

    return [
        Route(
            f"/api/v1/configurations.{fmt}",
            functools.partial(endpoint, fmt=fmt),
            methods=["GET", "HEAD"],
        )
        for fmt in MEDIA_TYPES
    ]


def accepts_gzip(accept_encoding: str) -> bool:
    """Whether Accept-Encoding takes gzip (not with q=0)."""
    for item in accept_encoding.split(","):
        coding, _, params = item.strip().partition(";")
        if coding.strip().lower() == "gzip":
            return params.replace(" ", "").lower() not in ("q=0", "q=0.0", "q=0.00", "q=0.000")
    return False


def _latin1(value: str) -> str:
    """A header value: what latin-1 cannot write is replaced."""
    return value.encode("latin-1", "replace").decode("latin-1")
