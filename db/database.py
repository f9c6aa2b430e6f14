"""Engines and sessions for SQLite (the default) and PostgreSQL, and the migrations that make
their tables."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from alembic import command
from alembic.autogenerate import compare_metadata
from alembic.config import Config
from alembic.migration import MigrationContext
from sqlalchemy import Connection, event
from sqlalchemy.engine import make_url
from sqlalchemy.ext.asyncio import (
    AsyncEngine,
    AsyncSession,
    async_sessionmaker,
    create_async_engine,
)

from db.tables import metadata

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
    every statement on the server, and connecting when `wait_timeout` is not given.
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
    return engine


def _a_file(url: str) -> bool:
    return make_url(url).database not in (None, "", ":memory:")


def _sqlite_pragmas(dbapi_connection: Any, _record: Any) -> None:
    cursor = dbapi_connection.cursor()
    cursor.execute("PRAGMA foreign_keys=ON")
    cursor.execute("PRAGMA journal_mode=WAL")
    cursor.close()


def sessionmaker(engine: AsyncEngine) -> async_sessionmaker[AsyncSession]:
    return async_sessionmaker(engine, expire_on_commit=False)


MIGRATIONS = Path(__file__).parent / "migrations"


def alembic_config(connection: Connection | None = None) -> Config:
    config = Config()
    config.set_main_option("script_location", str(MIGRATIONS))
    config.attributes["connection"] = connection
    return config


async def create_tables(engine: AsyncEngine) -> None:
    """Bring the database's tables to the current revision (Alembic), creating them if new."""
    async with engine.begin() as conn:
        await conn.run_sync(lambda sync: command.upgrade(alembic_config(sync), "head"))


def schema_drift(connection: Connection) -> list[Any]:
    """Differences between the migrated database and `db.tables` (empty when they agree)."""
    context = MigrationContext.configure(connection)
    return list(compare_metadata(context, metadata))
