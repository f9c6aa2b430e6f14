"""Engines and sessions for SQLite (the default) and PostgreSQL."""

from __future__ import annotations

from typing import Any

from sqlalchemy import event
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


def create_engine(url: str, **kwargs: Any) -> AsyncEngine:
    engine = create_async_engine(normalize_url(url), **kwargs)
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


async def create_tables(engine: AsyncEngine) -> None:
    async with engine.begin() as conn:
        await conn.run_sync(metadata.create_all)
