"""The migrations build exactly the tables `db.tables` declares, on SQLite and PostgreSQL."""

from __future__ import annotations

import pytest
from alembic import command
from alembic.script import ScriptDirectory
from sqlalchemy import inspect, text
from sqlalchemy.ext.asyncio import AsyncEngine

from db.database import HEAD, alembic_config, at_head, create_tables, schema_drift

pytestmark = pytest.mark.anyio


def _newest() -> str:
    """The newest revision of db/migrations (one head: the revisions run in a line)."""
    heads = ScriptDirectory.from_config(alembic_config()).get_heads()
    assert len(heads) == 1, heads
    return heads[0]


async def test_migrated_tables_match_the_declared_ones(engine: AsyncEngine) -> None:
    async with engine.connect() as conn:
        drift = await conn.run_sync(schema_drift)
        revision = await conn.scalar(text("SELECT version_num FROM alembic_version"))
    assert (drift, revision) == ([], _newest())


async def test_upgrading_a_current_database_changes_nothing(engine: AsyncEngine) -> None:
    await create_tables(engine)
    async with engine.connect() as conn:
        assert await conn.run_sync(schema_drift) == []


def test_the_newest_revision_named_by_the_files_is_alembic_s_head() -> None:
    # create_tables leaves a database at HEAD without Alembic: HEAD must be the head.
    assert HEAD == _newest()


async def test_a_database_a_revision_behind_is_brought_to_the_newest(engine: AsyncEngine) -> None:
    async with engine.begin() as conn:
        await conn.run_sync(
            lambda sync: command.downgrade(alembic_config(sync), "-1")  # (catalogs: 0005)
        )
        assert not await conn.run_sync(at_head)
        assert await conn.run_sync(lambda sync: inspect(sync).has_table("catalogs")) is False
    await create_tables(engine)
    async with engine.connect() as conn:
        assert await conn.run_sync(at_head)
        assert await conn.run_sync(schema_drift) == []
