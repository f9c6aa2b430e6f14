"""Many rows into one table: PostgreSQL's COPY, or one compiled INSERT executed many times.

The configurations of a release at fifty times today's data are some 93,000 rows; SQLAlchemy's
per-row parameter processing would cost more than the database's own work. On PostgreSQL (the
asyncpg driver) the rows go to the table by COPY, in bounded batches, within the session's
transaction (asyncpg's `copy_records_to_table`, binary: the same encoding of each value as its
executemany). Elsewhere the statement is compiled once for the connection's dialect (its
placeholders and casts), and the rows go to the driver's executemany in bounded batches as
tuples of plain values. JSON columns take their values as JSON text, serialized by the caller
(`json_text`, as SQLAlchemy's JSON type would).
"""

from __future__ import annotations

import json
from collections.abc import Callable, Iterable, Iterator, Sequence
from operator import itemgetter
from typing import Any

from sqlalchemy import JSON, insert
from sqlalchemy.ext.asyncio import AsyncSession
from sqlalchemy.types import Boolean, Float, Integer, LargeBinary, String

# Rows per executemany: bounded, so that a batch's parameters stay small.
BATCH = 2_000
# The column types whose values the drivers take as they are (JSON as text).
_PLAIN = (Integer, Float, String, LargeBinary, Boolean, JSON)


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
    connection = await session.connection()
    if connection.dialect.driver == "asyncpg":
        raw = await connection.get_raw_connection()
        return await _copy(raw.driver_connection, table, columns, rows, batch)
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
