"""What `leadgreen serve` (and so `scripts/serve`) says as it starts: its database and GraphiQL;
and how it starts: without the ingest's modules, the garbage collector paused until it is ready."""

from __future__ import annotations

import gc
import json
import os
import signal
import subprocess
import sys
from pathlib import Path
from typing import Any

import anyio
import httpx
import pytest

import db.ingest
from graph.cli import run_ingest, where
from graph.settings import Settings
from tests.live import answering, free_port, stop, wait_until

ROOT = Path(__file__).resolve().parents[1]

# Every setting `where` reads, given (the environment may set any of them).
DEFAULTS = {"database_url": "leadgreen.db", "host": "127.0.0.1", "port": 8000, "graphiql": True}


@pytest.mark.parametrize(
    ("settings", "said"),
    [
        (
            {},
            [
                f"database: SQLite file {Path('leadgreen.db').resolve()}",
                "GraphiQL: http://127.0.0.1:8000/graphql",
            ],
        ),
        (
            {"database_url": "sqlite+aiosqlite:///data/lg.db", "host": "0.0.0.0", "port": 8080},
            [
                f"database: SQLite file {Path('data/lg.db').resolve()}",
                "GraphiQL: http://127.0.0.1:8080/graphql",
            ],
        ),
        (
            {"database_url": "postgresql://lg:secret@db.internal:5433/leadgreen", "host": "::"},
            [
                "database: postgresql+asyncpg://lg:***@db.internal:5433/leadgreen",
                "GraphiQL: http://[::1]:8000/graphql",
            ],
        ),
        (
            {"database_url": "sqlite+aiosqlite://", "host": "10.0.0.7", "graphiql": False},
            [
                "database: SQLite, in memory",
                "GraphQL: http://10.0.0.7:8000/graphql (GraphiQL is off)",
            ],
        ),
    ],
)
def test_serve_says_where_its_database_and_graphiql_are(
    settings: dict[str, object], said: list[str]
) -> None:
    """The SQLite file as an absolute path, a server's URL without its password, and the
    address a browser opens (the loopback one for a server listening on every interface)."""
    given = {**DEFAULTS, **settings}
    assert where(Settings(manifest=None, **given)) == said


# `leadgreen serve` (graph.cli's main, as the console script calls it) in a process that tells
# what its start did when it is sent SIGUSR1: the modules imported, and each pass of the garbage
# collector made after `serve` paused it (its first gc.disable) and before the start froze what
# it had made (gc.freeze), an explicit gc.collect() included.
PROBE = """
import gc, json, os, signal, sys

paused, early = [], []
disable = gc.disable
def pause():
    paused.append(True)
    disable()
gc.disable = pause
def seen(phase, info):
    if phase == "start" and paused and gc.get_freeze_count() == 0:
        early.append(info["generation"])
gc.callbacks.append(seen)

def tell(*_):
    with open(os.environ["PROBE_REPORT"], "w") as out:
        json.dump({"modules": sorted(sys.modules), "passes before frozen": early,
                   "frozen": gc.get_freeze_count(), "collecting": gc.isenabled()}, out)
signal.signal(signal.SIGUSR1, tell)

from graph.cli import main
sys.argv = ["leadgreen", "serve"]
main()
"""

# What only an ingest needs: a server whose database holds a release never imports them.
INGEST_MODULES = {"httpx", "tenacity", "db.ingest", "db.bulk", "db.history", "db.follow"}


@pytest.mark.slow
@pytest.mark.anyio
async def test_serve_is_ready_without_the_ingest_and_collects_only_once_ready(
    synthetic_db, database_url, synthetic_dir, tmp_path
) -> None:
    """Ready (/readyz 200, the first pages rehearsed) with no module of the ingest imported, and
    no pass of the collector between `serve`'s start and the freeze of what it made; the
    collector running again after it."""
    told = await anyio.to_thread.run_sync(probe_serve, database_url, synthetic_dir, tmp_path)
    modules = set(told["modules"])
    assert {"graph.server.app", "sqlalchemy", "strawberry"} <= modules  # (the app was loaded)
    assert modules & INGEST_MODULES == set()
    assert (told["passes before frozen"], told["frozen"] > 0, told["collecting"]) == (
        [],
        True,
        True,
    )


def probe_serve(database_url: str, synthetic_dir: Path, tmp_path: Path) -> dict[str, Any]:
    port, report, log = free_port(), tmp_path / "report.json", tmp_path / "serve.log"
    env = {
        **os.environ,
        "LEADGREEN_DATABASE_URL": database_url,
        "LEADGREEN_SOURCE": str(synthetic_dir),  # the database holds a release: not read
        "LEADGREEN_PORT": str(port),
        "LEADGREEN_LOG_LEVEL": "warning",
        "PROBE_REPORT": str(report),
    }
    with log.open("wb") as out:
        server = subprocess.Popen(
            [sys.executable, "-c", PROBE], env=env, cwd=ROOT, stdout=out, stderr=out
        )
    try:
        answering(f"http://127.0.0.1:{port}/readyz", server, log, timeout=60)
        server.send_signal(signal.SIGUSR1)
        wait_until(report.exists, 30, "the probe's report")
        told: dict[str, Any] = wait_until(lambda: json.loads(report.read_text()), 30, "its JSON")
        # The rehearsed page is answered (the probe's process serves as `leadgreen serve`).
        page = httpx.get(f"http://127.0.0.1:{port}/api/v1/index.json", timeout=10)
        assert page.status_code == 200
        return told
    finally:
        stop(server)


@pytest.mark.anyio
async def test_an_ingest_before_serving_runs_with_the_collector_on(
    database_url, synthetic_dir, monkeypatch
) -> None:
    """`serve` pauses the collector, but not for the ingest of an empty database (which drops
    as much as it makes): on while it runs, paused again after."""
    ingest = db.ingest.ingest
    seen: list[bool] = []

    async def watched(*args: Any) -> Any:
        seen.append(gc.isenabled())
        return await ingest(*args)

    monkeypatch.setattr(db.ingest, "ingest", watched)
    settings = Settings(database_url=database_url, manifest=None)
    gc.disable()
    try:
        report = await run_ingest(settings, str(synthetic_dir), only_if_empty=True, echo=print)
        after = gc.isenabled()
    finally:
        gc.enable()
    assert (report is not None, seen, after) == (True, [True], False)
