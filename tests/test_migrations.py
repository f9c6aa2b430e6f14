"""The migrations build exactly the tables `db.tables` declares, on SQLite and PostgreSQL."""

from __future__ import annotations

import pytest
from sqlalchemy import text
from sqlalchemy.ext.asyncio import AsyncEngine

from db.engine import create_tables, schema_drift

pytestmark = pytest.mark.anyio


async def test_migrated_tables_match_the_declared_ones(engine: AsyncEngine) -> None:
    async with engine.connect() as conn:
        drift = await conn.run_sync(schema_drift)
        revision = await conn.scalar(text("SELECT version_num FROM alembic_version"))
    assert (drift, revision) == ([], "0004")


async def test_upgrading_a_current_database_changes_nothing(engine: AsyncEngine) -> None:
    await create_tables(engine)
    async with engine.connect() as conn:
        assert await conn.run_sync(schema_drift) == []
