"""Databases for a run: a SQLite file, or a PostgreSQL database of its own, dropped afterwards."""

from __future__ import annotations

import asyncio
import json
import os
import subprocess
import time
import uuid
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

from sqlalchemy import text
from sqlalchemy.engine import make_url

from bench.servers import BIN, ROOT
from db.database import create_engine

POSTGRES_ADMIN_URL = os.environ.get(
    "LEADGREEN_BENCH_POSTGRES_URL", "postgresql+asyncpg://postgres@127.0.0.1:5432/postgres"
)


def _admin(statement: str, url: str) -> None:
    async def run() -> None:
        engine = create_engine(url, isolation_level="AUTOCOMMIT")
        try:
            async with engine.connect() as conn:
                await conn.execute(text(statement))
        finally:
            await engine.dispose()

    asyncio.run(run())


@contextmanager
def database(backend: str, directory: Path, server: str = POSTGRES_ADMIN_URL) -> Iterator[str]:
    """An empty database's URL: a SQLite file in `directory`, or a database of its own on the
    PostgreSQL `server` (a URL of one of its databases), dropped afterwards."""
    if backend == "sqlite":
        yield f"sqlite+aiosqlite:///{directory / 'leadgreen.db'}"
        return
    name = f"leadgreen_bench_{uuid.uuid4().hex[:8]}"
    _admin(f"CREATE DATABASE {name}", server)
    try:
        yield make_url(server).set(database=name).render_as_string(hide_password=False)
    finally:
        _admin(f"DROP DATABASE {name} WITH (FORCE)", server)


def ingest(database_url: str, snapshot: Path, manifest: Path) -> float:
    """Seconds `leadgreen ingest` takes for the whole snapshot (the command, start to exit)."""
    command = [str(BIN / "leadgreen"), "ingest", str(snapshot), "--manifest", str(manifest)]
    started = time.perf_counter()
    subprocess.run(
        [*command, "--database-url", database_url], cwd=ROOT, check=True, capture_output=True
    )
    return time.perf_counter() - started


def slugs(manifest: Path) -> list[str]:
    """The manifest's models: the model pages a front-end links to."""
    return [model["slug"] for model in json.loads(manifest.read_text())["models"]]
