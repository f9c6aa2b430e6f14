"""Engines and sessions for SQLite (the default) and PostgreSQL, and the migrations that make
their tables."""

from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING, Any

from sqlalchemy import Connection, event, inspect
from sqlalchemy.engine import make_url
from sqlalchemy.ext.asyncio import (
    AsyncEngine,
    AsyncSession,
    async_sessionmaker,
    create_async_engine,
)

from db.tables import metadata

if TYPE_CHECKING:
    from alembic.config import Config

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
