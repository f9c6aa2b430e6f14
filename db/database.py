"""Engines and sessions for SQLite (the default) and PostgreSQL, a request's waits for them,
and the migrations that make their tables."""

from __future__ import annotations

import asyncio
import contextlib
import contextvars
import logging
from collections.abc import AsyncIterator, Callable, Coroutine
from pathlib import Path
from typing import TYPE_CHECKING, Any, TypeVar

from sqlalchemy import Connection, event, inspect
from sqlalchemy.engine import make_url
from sqlalchemy.ext.asyncio import (
    AsyncEngine,
    AsyncSession,
    async_sessionmaker,
    create_async_engine,
)
from sqlalchemy.pool import ConnectionPoolEntry

from db.tables import metadata

if TYPE_CHECKING:
    from alembic.config import Config

log = logging.getLogger("leadgreen")
T = TypeVar("T")
SQLITE_DRIVER = "sqlite+aiosqlite"
POSTGRES_DRIVER = "postgresql+asyncpg"


def normalize_url(url: str) -> str:
    """Accept a bare SQLite file path or a sync-style URL and return an async driver URL."""
    if "://" not in url:
        return f"{SQLITE_DRIVER}:///{url}"
    parsed = make_url(url)
    if parsed.drivername in ("sqlite", "sqlite+pysqlite"):
        return str(parsed.set(drivername=SQLITE_DRIVER))
    if parsed.drivername in ("postgresql", "postgres", "postgresql+psycopg2"):
        return parsed.set(drivername=POSTGRES_DRIVER).render_as_string(hide_password=False)
    return url


def create_engine(
    url: str,
    *,
    statement_timeout: float | None = None,
    wait_timeout: float | None = None,
    **kwargs: Any,
) -> AsyncEngine:
    """An engine for `url`.

    `wait_timeout` (seconds) bounds every wait for the database, so that one that stops
    answering (a network dropping packets, a server hung) is given up on in that time: opening
    a connection, waiting for one from the pool, each statement's answer (asyncpg's
    command_timeout, on the client: the server may never see the statement), and on SQLite the
    wait for another connection's lock. On PostgreSQL `statement_timeout` (seconds) also bounds
    every statement on the server, and connecting when `wait_timeout` is not given. A
    PostgreSQL connection given up on (invalidated) is dropped at once, not closed gracefully:
    closing would wait on the database again.
    """
    url = normalize_url(url)
    backend = make_url(url).get_backend_name()
    connect_args = dict(kwargs.pop("connect_args", {}))
    if backend == "postgresql":
        if statement_timeout is not None:
            milliseconds = str(max(1, round(statement_timeout * 1000)))
            connect_args["server_settings"] = {"statement_timeout": milliseconds}
        connect = wait_timeout if wait_timeout is not None else statement_timeout
        if connect is not None:
            connect_args["timeout"] = connect
        if wait_timeout is not None:
            connect_args["command_timeout"] = wait_timeout
    elif backend == "sqlite" and wait_timeout is not None:
        connect_args["timeout"] = wait_timeout  # how long a statement waits for a lock
    if wait_timeout is not None and (backend == "postgresql" or _a_file(url)):
        kwargs.setdefault("pool_timeout", wait_timeout)  # a queue pool's wait
    if connect_args:
        kwargs["connect_args"] = connect_args
    engine = create_async_engine(url, **kwargs)
    if engine.dialect.name == "sqlite":
        event.listen(engine.sync_engine, "connect", _sqlite_pragmas)
    elif engine.dialect.driver == "asyncpg":
        event.listen(engine.sync_engine, "invalidate", _terminate)
    return engine


def _terminate(
    _dbapi_connection: Any, record: ConnectionPoolEntry, _error: BaseException | None
) -> None:
    """Drop an invalidated connection at once. SQLAlchemy closes it gracefully first, which
    waits on a database that stopped answering (asyncpg's close, after a statement timed out,
    waits for the cancellation's answer without a bound: asyncpg issue 1356)."""
    driver = record.driver_connection
    if driver is not None:  # (None: closed already)
        driver.terminate()


def _a_file(url: str) -> bool:
    return make_url(url).database not in (None, "", ":memory:")


def _sqlite_pragmas(dbapi_connection: Any, _record: Any) -> None:
    cursor = dbapi_connection.cursor()
    cursor.execute("PRAGMA foreign_keys=ON")
    cursor.execute("PRAGMA journal_mode=WAL")
    cursor.close()


def sessionmaker(engine: AsyncEngine) -> async_sessionmaker[AsyncSession]:
    return async_sessionmaker(engine, expire_on_commit=False)


# --- A request's waits ------------------------------------------------------------------------

# When (the event loop's clock) the current request's waits for the database end: a share of
# its time limit, set by the server for each request (graph/server/edge.py); None outside one.
DEADLINE: contextvars.ContextVar[float | None] = contextvars.ContextVar(
    "database_deadline", default=None
)
BEYOND = "the database did not answer within the request's share of its time limit"


@contextlib.asynccontextmanager
async def waiting() -> AsyncIterator[None]:
    """Bound what is awaited within by the current request's `DEADLINE`: past it, TimeoutError
    (the database away: 503 DATABASE_UNAVAILABLE, graph/errors.py), before the request's own
    time limit runs out (504). Outside a request, unbounded (each wait has the engine's own
    bounds: `create_engine`'s `wait_timeout`)."""
    deadline = DEADLINE.get()
    if deadline is None:
        yield
        return
    timeout = asyncio.timeout_at(deadline)
    try:
        async with timeout:
            yield
    except TimeoutError:
        if not timeout.expired():  # the driver's own bound, not this one
            raise
        raise TimeoutError(BEYOND) from None


@contextlib.asynccontextmanager
async def request_session(sessions: Callable[[], AsyncSession]) -> AsyncIterator[AsyncSession]:
    """A session of `sessions` for one request's reads: what is awaited within is `waiting()`,
    and the session is closed quietly after it."""
    session = sessions()
    try:
        async with waiting():
            yield session
    finally:
        await close_quietly(session)


async def close_quietly(session: AsyncSession) -> None:
    """Close a request's session, within its wait. graphql-core cancels a sibling field's
    resolver in the middle of its SQL when an error nulls their parent, and a database that
    stopped answering leaves a connection waiting: then closing fails, and the connection is
    dropped."""
    try:
        async with waiting():
            await session.close()
    except Exception as exc:
        log.warning("could not close a session; its connection is dropped: %r", exc)
        with contextlib.suppress(Exception):
            await session.invalidate()


def shared(coroutine: Coroutine[Any, Any, T]) -> asyncio.Task[T]:
    """A task for work that requests share (a reading others join): it is not held to the
    deadline of the request that happens to start it; each request bounds its own wait for it
    (`waiting()`), and its failure is theirs who still wait (none left: it is dropped, not
    reported as an exception never retrieved)."""
    context = contextvars.copy_context()
    context.run(DEADLINE.set, None)
    task = asyncio.get_running_loop().create_task(coroutine, context=context)
    task.add_done_callback(_retrieved)
    return task


def _retrieved(task: asyncio.Task[Any]) -> None:
    if not task.cancelled():
        task.exception()


MIGRATIONS = Path(__file__).parent / "migrations"


def alembic_config(connection: Connection | None = None) -> Config:
    from alembic.config import Config

    config = Config()
    config.set_main_option("script_location", str(MIGRATIONS))
    config.attributes["connection"] = connection
    return config


# The newest revision: each migration's file is named by its revision and a few words
# (tests/test_migrations.py checks that this is Alembic's head).
HEAD = max(path.name.split("_", 1)[0] for path in (MIGRATIONS / "versions").glob("[0-9]*_*.py"))


async def create_tables(engine: AsyncEngine) -> None:
    """Bring the database's tables to the current revision (Alembic), creating them if new.

    A database at the newest revision already (every start of a server after the first) is
    left as it is without Alembic (nor its import): one look at its version."""
    async with engine.begin() as conn:
        if await conn.run_sync(at_head):
            return
        await conn.run_sync(_upgrade)


def at_head(connection: Connection) -> bool:
    """Whether the database's tables are at the newest revision."""
    if not inspect(connection).has_table("alembic_version"):
        return False
    found = connection.exec_driver_sql("SELECT version_num FROM alembic_version").all()
    return [tuple(row) for row in found] == [(HEAD,)]


def _upgrade(connection: Connection) -> None:
    from alembic import command

    command.upgrade(alembic_config(connection), "head")


def schema_drift(connection: Connection) -> list[Any]:
    """Differences between the migrated database and `db.tables` (empty when they agree)."""
    from alembic.autogenerate import compare_metadata
    from alembic.migration import MigrationContext

    context = MigrationContext.configure(connection)
    return list(compare_metadata(context, metadata))
