"""Engines and sessions for SQLite (the default) and PostgreSQL."""

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
    url: str, *, statement_timeout: float | None = None, **kwargs: Any
) -> AsyncEngine:
    """An engine for `url`; on PostgreSQL, `statement_timeout` (seconds) bounds every statement
    and every connection attempt of its connections."""
    url = normalize_url(url)
    if statement_timeout is not None and make_url(url).get_backend_name() == "postgresql":
        milliseconds = str(max(1, round(statement_timeout * 1000)))
        kwargs["connect_args"] = {
            **kwargs.get("connect_args", {}),
            "timeout": statement_timeout,
            "server_settings": {"statement_timeout": milliseconds},
        }
    engine = create_async_engine(url, **kwargs)
    if engine.dialect.name == "sqlite":
        event.listen(engine.sync_engine, "connect", _sqlite_pragmas)
    return engine


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
