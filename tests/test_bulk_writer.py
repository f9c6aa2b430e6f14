"""Bulk rows within `db.bulk.writing`: on PostgreSQL a writer task sends them by COPY while the
caller goes on; the rows keep the order they were put in, a failed COPY is the caller's error,
a statement run while rows wait is refused, and a failure leaves the transaction to roll back
whole. On SQLite the rows are written as they come."""

from __future__ import annotations

import asyncio
from typing import Any

import pytest
from sqlalchemy import Column, Integer, LargeBinary, MetaData, Table, Text, select, text
from sqlalchemy.ext.asyncio import AsyncEngine, AsyncSession

from db import bulk
from db.database import sessionmaker

pytestmark = pytest.mark.anyio

_metadata = MetaData()
_numbers = Table(
    "bulk_numbers",
    _metadata,
    Column("id", Integer, primary_key=True, autoincrement=True),
    Column("n", Integer, nullable=False),
    Column("name", Text, nullable=False),
    Column("data", LargeBinary, nullable=True),
)


class Numbers:
    """A mapped-like class: what `insert_rows` needs of one is its table."""

    __table__ = _numbers


COLUMNS = ("n", "name", "data")


class Boom(RuntimeError):
    pass


def rows(start: int, count: int) -> list[tuple[Any, ...]]:
    return [(n, f"row {n}", bytes([n % 256]) * (n % 5)) for n in range(start, start + count)]


async def stored(engine: AsyncEngine) -> list[tuple[Any, ...]]:
    async with engine.connect() as conn:
        result = await conn.execute(select(_numbers).order_by(_numbers.c.id))
        return [(row.n, row.name, bytes(row.data)) for row in result]


@pytest.fixture
async def numbers(engine: AsyncEngine) -> AsyncEngine:
    async with engine.begin() as conn:
        await conn.run_sync(_metadata.create_all)
    return engine


def is_postgres(engine: AsyncEngine) -> bool:
    return engine.dialect.name == "postgresql"


async def test_rows_are_stored_in_the_order_they_were_put(
    numbers: AsyncEngine, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(bulk, "DEPTH", 2)  # the producer waits for the writer now and then
    sizes = [3, 1, 2500, 7, 0, 40, 1200]
    async with sessionmaker(numbers)() as session, session.begin():
        async with bulk.writing(session):
            counts, start = [], 0
            for size in sizes:
                counts.append(await bulk.insert_rows(session, Numbers, COLUMNS, rows(start, size)))
                start += size
                await asyncio.sleep(0)
    assert counts == sizes
    assert await stored(numbers) == rows(0, sum(sizes))


async def test_rows_are_sent_while_the_caller_goes_on(numbers: AsyncEngine) -> None:
    """On PostgreSQL `insert_rows` returns before its rows are stored; `drain` waits for them."""
    async with sessionmaker(numbers)() as session, session.begin():
        async with bulk.writing(session):
            await bulk.insert_rows(session, Numbers, COLUMNS, rows(0, 5000))
            writer = bulk.writer_of(session)
            assert (writer is not None) == is_postgres(numbers)
            await bulk.drain(session)
            assert writer is None or writer.pending == 0
            count = await session.scalar(select(_numbers.c.n).order_by(_numbers.c.id.desc()))
        assert count == 4999
        assert bulk.writer_of(session) is None


async def test_a_statement_while_rows_wait_is_refused(numbers: AsyncEngine) -> None:
    if not is_postgres(numbers):
        pytest.skip("SQLite's rows are written as they come")
    async with sessionmaker(numbers)() as session:
        with pytest.raises(RuntimeError) as info:
            async with session.begin(), bulk.writing(session):
                await bulk.insert_rows(session, Numbers, COLUMNS, rows(0, 20000))
                await session.execute(text("SELECT 1"))
    assert str(info.value) == "a statement while bulk rows wait to be sent: drain them first"
    assert await stored(numbers) == []


def failing_copy(
    monkeypatch: pytest.MonkeyPatch, fail_at: int, copied: asyncio.Event | None = None
) -> list[int]:
    """Make the `fail_at`-th COPY (counted from 1) fail after it ran; the sizes of those run.
    `copied` is set as each COPY ends."""
    copy, seen = bulk._copy, []

    async def copying(driver: Any, table: Any, columns: Any, rows_: Any, batch: int) -> int:
        try:
            count = await copy(driver, table, columns, rows_, batch)
            seen.append(count)
            if len(seen) == fail_at:
                raise Boom(f"COPY {fail_at} failed")
            return count
        finally:
            if copied is not None:
                copied.set()

    monkeypatch.setattr(bulk, "_copy", copying)
    return seen


async def committed_before(engine: AsyncEngine) -> list[tuple[Any, ...]]:
    """Rows stored by an earlier transaction: a failed one leaves them as they are."""
    async with sessionmaker(engine)() as session, session.begin():
        await bulk.insert_rows(session, Numbers, COLUMNS, rows(0, 3))
    return await stored(engine)


async def test_a_failed_copy_is_raised_and_nothing_of_the_transaction_is_kept(
    numbers: AsyncEngine, monkeypatch: pytest.MonkeyPatch
) -> None:
    if not is_postgres(numbers):
        pytest.skip("COPY is PostgreSQL's")
    before = await committed_before(numbers)
    copied = asyncio.Event()
    seen = failing_copy(monkeypatch, fail_at=2, copied=copied)
    reached = []
    async with sessionmaker(numbers)() as session:
        with pytest.raises(Boom) as info:
            async with session.begin(), bulk.writing(session):
                for start in range(10, 60, 10):
                    await bulk.insert_rows(session, Numbers, COLUMNS, rows(start, 10))
                    reached.append(start)
                    await copied.wait()  # the writer has sent the batch
                    copied.clear()
    assert str(info.value) == "COPY 2 failed"
    # The failure is raised by the first `insert_rows` after it; nothing is sent after it.
    assert (reached, seen) == ([10, 20], [10, 10])
    assert await stored(numbers) == before


async def test_a_failure_of_the_caller_stops_the_writer_and_rolls_back(
    numbers: AsyncEngine, monkeypatch: pytest.MonkeyPatch
) -> None:
    before = await committed_before(numbers)
    monkeypatch.setattr(bulk, "DEPTH", 8)
    seen = failing_copy(monkeypatch, fail_at=0)
    async with sessionmaker(numbers)() as session:
        with pytest.raises(Boom) as info:
            async with session.begin(), bulk.writing(session):
                for start in range(10, 60, 10):
                    await bulk.insert_rows(session, Numbers, COLUMNS, rows(start, 10))
                sent = len(seen)
                raise Boom("the next task is bad")
    assert str(info.value) == "the next task is bad"
    # Of the rows waiting when it failed, only those being sent were: the others were dropped.
    assert seen == [10] * len(seen)
    assert sent <= len(seen) <= sent + 1
    assert await stored(numbers) == before
    # The connection serves the next transaction as usual.
    async with sessionmaker(numbers)() as session, session.begin():
        async with bulk.writing(session):
            await bulk.insert_rows(session, Numbers, COLUMNS, rows(70, 2))
    assert await stored(numbers) == [*before, *rows(70, 2)]


async def test_writing_twice_nests_into_one_writer(numbers: AsyncEngine) -> None:
    async with sessionmaker(numbers)() as session, session.begin():
        async with bulk.writing(session):
            outer = bulk.writer_of(session)
            async with bulk.writing(session):
                assert bulk.writer_of(session) is outer
                await bulk.insert_rows(session, Numbers, COLUMNS, rows(0, 2))
            assert bulk.writer_of(session) is outer
    assert await stored(numbers) == rows(0, 2)


async def _session_rows(session: AsyncSession) -> int:
    return len((await session.execute(select(_numbers.c.id))).all())


async def test_sqlite_rows_are_written_as_they_come(numbers: AsyncEngine) -> None:
    if is_postgres(numbers):
        pytest.skip("PostgreSQL's are sent by the writer")
    async with sessionmaker(numbers)() as session, session.begin():
        async with bulk.writing(session):
            await bulk.insert_rows(session, Numbers, COLUMNS, rows(0, 4))
            assert bulk.writer_of(session) is None
            assert await _session_rows(session) == 4
