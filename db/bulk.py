"""Many rows into one table: PostgreSQL's COPY, or one compiled INSERT executed many times.

The configurations of a release at fifty times today's data are some 93,000 rows; SQLAlchemy's
per-row parameter processing would cost more than the database's own work. On PostgreSQL (the
asyncpg driver) the rows go to the table by COPY, in bounded batches, within the session's
transaction (asyncpg's `copy_records_to_table`, binary: the same encoding of each value as its
executemany). Elsewhere the statement is compiled once for the connection's dialect (its
placeholders and casts), and the rows go to the driver's executemany in bounded batches as
tuples of plain values. JSON columns take their values as JSON text, serialized by the caller
(`json_text`, as SQLAlchemy's JSON type would).

Within `writing(session)` on PostgreSQL, the COPYs are not waited for: one writer task sends
them, in the order given, while the ingest goes on reading the next files, so that the server
stores one task's rows while Python parses the next. SQLite, which runs in a thread
of this process and needs the GIL for every row, is written to as the rows come.
"""

from __future__ import annotations

import asyncio
import json
from collections.abc import AsyncIterator, Callable, Iterable, Iterator, Sequence
from contextlib import asynccontextmanager
from operator import itemgetter
from typing import Any

from sqlalchemy import JSON, event, insert
from sqlalchemy.ext.asyncio import AsyncConnection, AsyncSession
from sqlalchemy.types import Boolean, Float, Integer, LargeBinary, String

# Rows per executemany: bounded, so that a batch's parameters stay small.
BATCH = 2_000
# The column types whose values the drivers take as they are (JSON as text).
_PLAIN = (Integer, Float, String, LargeBinary, Boolean, JSON)
# Calls of `insert_rows` waiting to be sent, at most: the files read ahead of the server
# stay few (a call's files are at most db.files.BATCH_BYTES).
DEPTH = 4
# The bytes a connection's transport may hold before the writer waits for the server.
BUFFERED = 64 * 1024 * 1024
# Where a session keeps its writer, within `writing`.
_WRITER = "leadgreen.bulk.writer"


def json_text(value: Any) -> str:
    """`value` as SQLAlchemy's JSON type writes it (a None is JSON null, not SQL NULL)."""
    return json.dumps(value)


async def insert_rows(
    session: AsyncSession,
    mapped: type[Any],
    columns: Sequence[str],
    rows: Iterable[tuple[Any, ...]],
    *,
    batch: int = BATCH,
) -> int:
    """Insert `rows` (values in the order of `columns`) into the table of the mapped class
    `mapped`; the number inserted."""
    table = mapped.__table__
    for name in columns:
        if not isinstance(table.c[name].type, _PLAIN):
            raise TypeError(f"{table}.{name}: {table.c[name].type!r} is not a plain type")
    writer = writer_of(session)
    if writer is not None:
        return await writer.put(table, columns, rows)
    connection = await session.connection()
    if connection.dialect.driver == "asyncpg":
        return await _copy(await _begun(connection), table, columns, rows, batch)
    compiled = insert(table).compile(dialect=connection.dialect, column_keys=list(columns))
    order = compiled.positiontup
    if order is None:  # pragma: no cover - every dialect used here takes positional parameters
        raise TypeError(f"{connection.dialect.name}: not a positional paramstyle")
    places = [list(columns).index(name) for name in order]
    # The statement's parameters are in the table's order of columns: each row's values are
    # picked in that order (one C call), unless they are given so.
    pick: Callable[[tuple[Any, ...]], tuple[Any, ...]] | None = None
    if places != list(range(len(columns))):
        pick = itemgetter(*places) if len(places) > 1 else lambda row: (row[places[0]],)
    sql, count = str(compiled), 0
    for chunk in _chunks(rows if pick is None else map(pick, rows), batch):
        await connection.exec_driver_sql(sql, chunk)
        count += len(chunk)
    return count


async def _begun(connection: AsyncConnection) -> Any:
    """The asyncpg connection under `connection`, in the session's transaction. SQLAlchemy's
    adapter begins the transaction at its first statement, and a COPY by the driver is none: a
    statement first, else the rows would be committed on their own, whatever came after."""
    raw = await connection.get_raw_connection()
    driver: Any = raw.driver_connection
    if not driver.is_in_transaction():
        await connection.exec_driver_sql("SELECT 1")
    return driver


async def _copy(
    driver: Any, table: Any, columns: Sequence[str], rows: Iterable[tuple[Any, ...]], batch: int
) -> int:
    """`rows` into `table` by COPY on the asyncpg connection `driver`, `batch` rows at a time."""
    count = 0
    for chunk in _chunks(rows, batch):
        await driver.copy_records_to_table(table.name, records=chunk, columns=list(columns))
        count += len(chunk)
    return count


def _chunks(rows: Iterable[tuple[Any, ...]], size: int) -> Iterator[list[tuple[Any, ...]]]:
    """`rows` in lists of `size` (the last one shorter), read as they are needed."""
    chunk: list[tuple[Any, ...]] = []
    for row in rows:
        chunk.append(row)
        if len(chunk) == size:
            yield chunk
            chunk = []
    if chunk:
        yield chunk


Job = tuple[Any, Sequence[str], list[tuple[Any, ...]]]


class Writer:
    """One task sending COPYs on an asyncpg connection, in the order they are put. The first
    failure is kept, raised by the next `put` or `drain`, and nothing is sent after it."""

    def __init__(self, driver: Any, depth: int) -> None:
        self._driver = driver
        self._jobs: asyncio.Queue[Job] = asyncio.Queue(depth)
        # Jobs put and not yet done (sent, or skipped after a failure).
        self.pending = 0
        self.failure: BaseException | None = None
        self._skip = False
        self._task = asyncio.create_task(self._run(), name="leadgreen-bulk-writer")
        # A COPY's rows are in memory already: written to the connection's transport whole
        # (rather than waiting for room at each half megabyte), they go to the server at each
        # turn of the event loop, whatever the ingest is doing between turns.
        self._transport = getattr(driver, "_transport", None)
        self._limits: tuple[int, int] | None = None
        if self._transport is not None:
            self._limits = self._transport.get_write_buffer_limits()
            self._transport.set_write_buffer_limits(high=BUFFERED)

    async def put(self, table: Any, columns: Sequence[str], rows: Iterable[tuple[Any, ...]]) -> int:
        """Put the rows of one `insert_rows`, to be sent by one COPY (waiting while DEPTH calls
        wait already); their number."""
        self._raise()
        job = (table, columns, list(rows))
        self.pending += 1
        await self._jobs.put(job)
        # Let the writer start now rather than at the ingest's next wait.
        await asyncio.sleep(0)
        return len(job[2])

    async def drain(self) -> None:
        """Wait until all that was put is sent; raise the failure, if a COPY failed."""
        await self._jobs.join()
        self._raise()

    async def close(self, failed: BaseException | None) -> None:
        """Stop the writer: after all is sent, or (the ingest `failed`) once the rows being
        sent is done, the others skipped; a cancelled ingest does not wait for it."""
        if failed is not None:
            self._skip = True
            if not isinstance(failed, asyncio.CancelledError):
                await self._jobs.join()
        self._task.cancel()
        await asyncio.gather(self._task, return_exceptions=True)
        if self._transport is not None and self._limits is not None:
            low, high = self._limits
            self._transport.set_write_buffer_limits(high=high, low=low)

    def _raise(self) -> None:
        if self.failure is not None:
            raise self.failure

    async def _run(self) -> None:
        while True:
            table, columns, rows = await self._jobs.get()
            try:
                if self.failure is None and not self._skip:
                    await _copy(self._driver, table, columns, rows, max(len(rows), 1))
            except Exception as exc:
                self.failure = exc
            finally:
                self.pending -= 1
                self._jobs.task_done()


def writer_of(session: AsyncSession) -> Writer | None:
    writer: Writer | None = session.info.get(_WRITER)
    return writer


async def drain(session: AsyncSession) -> None:
    """Wait for the session's bulk writes put so far, raising the error of a failed one: done
    before any other statement on the session (which the connection could not run meanwhile)."""
    writer = writer_of(session)
    if writer is not None:
        await writer.drain()


@asynccontextmanager
async def writing(session: AsyncSession) -> AsyncIterator[None]:
    """Within it, `insert_rows` on PostgreSQL puts its rows to a writer task and returns; all is
    sent, or a failure raised, on leaving it. A statement on the session while rows wait to be
    sent is refused: `drain` first. Elsewhere (SQLite) it changes nothing."""
    connection = await session.connection()
    if connection.dialect.driver != "asyncpg" or writer_of(session) is not None:
        yield
        return
    writer = Writer(await _begun(connection), DEPTH)
    sync = connection.sync_connection

    def refuse(*_args: Any) -> None:
        if writer.pending:
            raise RuntimeError("a statement while bulk rows wait to be sent: drain them first")

    event.listen(sync, "before_cursor_execute", refuse)
    session.info[_WRITER] = writer
    failed: BaseException | None = None
    try:
        yield
        await writer.drain()
    except BaseException as exc:
        failed = exc
        raise
    finally:
        del session.info[_WRITER]
        event.remove(sync, "before_cursor_execute", refuse)
        await writer.close(failed)
