"""A database that stops answering (the issue's class 3), on PostgreSQL through a TCP proxy on
127.0.0.1 turned into a black hole (connections accepted, packets dropped, never refused):
every request on every route is answered within its time limit (cached and in-memory answers
as usual, the rest 503 DATABASE_UNAVAILABLE with Retry-After or 504 REQUEST_TIMEOUT), and
/healthz stays 200. The database's timeouts themselves (connect, statement, pool, SQLite's
lock) are set on the engine.
"""

from __future__ import annotations

import asyncio
import gc
import socket
import sqlite3
import time
import warnings

import pytest
from sqlalchemy import text

from db.database import create_engine
from graph.errors import Code, database_fault
from tests.conftest import app_client
from tests.test_faults import after_the_poll, fault_settings, pg_url, proxied

pytestmark = pytest.mark.anyio
__all__ = ["pg_url", "proxied"]  # fixtures, used by name

UNAVAILABLE = "The database is unavailable; try again shortly."
GRAPHQL_UNAVAILABLE = {
    "data": None,
    "errors": [
        {
            "message": UNAVAILABLE,
            "locations": [{"line": 1, "column": 3}],
            "path": ["releases"],
            "extensions": {"code": "DATABASE_UNAVAILABLE"},
        }
    ],
    # releases (at most 16) and their numbers estimated; the answer holds nothing
    "extensions": {"cost": {"requestedQueryCost": 17, "actualQueryCost": 0}},
}
DOCUMENT_UNAVAILABLE = {"error": {"code": "DATABASE_UNAVAILABLE", "message": UNAVAILABLE}}
COST = {"cost": {"requestedQueryCost": 5, "actualQueryCost": 3}}
# Each route, and its answer while the database is a black hole: what is cached or in the
# release's catalog is served; what reads the database gives up after the database's time
# limit (1 s, well within the request's 3 s), 503 DATABASE_UNAVAILABLE with Retry-After.
ROUTES = [
    (
        "GET",
        "/graphql?query=%7B%20gpus%20%7B%20name%20%7D%20%7D",  # cached before
        None,
        200,
        {"data": {"gpus": [{"name": "B200"}, {"name": "H100"}]}, "extensions": COST},
    ),
    ("POST", "/graphql", {"query": "{ releases { number } }"}, 503, GRAPHQL_UNAVAILABLE),
    (
        "POST",
        "/graphql",
        {"query": "{ q1: models { slug } }"},
        200,
        {
            "data": {"q1": [{"slug": "mixture-8x2b"}, {"slug": "tiny-1b"}]},
            "extensions": {"cost": {"requestedQueryCost": 51, "actualQueryCost": 3}},
        },
    ),
    ("GET", "/api/v1/index.json", None, 503, DOCUMENT_UNAVAILABLE),
    ("GET", "/api/v1/models/tiny-1b.json", None, 503, DOCUMENT_UNAVAILABLE),
    ("GET", "/data/index.json", None, 503, DOCUMENT_UNAVAILABLE),
    ("GET", "/healthz", None, 200, {"status": "ok", "release": 1, "lastUpdated": "2030-01-02"}),
    (
        "GET",
        "/readyz",
        None,
        503,
        {"status": "unavailable", "reason": "database unreachable", "code": "DATABASE_UNAVAILABLE"},
    ),
]


async def test_every_route_is_answered_in_time_by_a_black_hole(proxied) -> None:
    proxy, url = proxied
    settings = fault_settings(url)  # requests 3 s, the database 1 s
    async with app_client(settings) as (_, client):
        await client.get(ROUTES[0][1])
        await proxy.blackhole()
        await after_the_poll(settings)
        for round_ in range(2):
            for method, path, body, status, answer in ROUTES:
                started = time.monotonic()
                async with asyncio.timeout(settings.request_timeout_seconds + 2):
                    response = await client.request(method, path, json=body)
                seconds = time.monotonic() - started
                assert seconds < settings.request_timeout_seconds + 1, (path, seconds)
                what = (round_, method, path)
                assert (response.status_code, response.json()) == (status, answer), what
                retry_after = "1" if status == 503 else None
                assert response.headers.get("retry-after") == retry_after, what
        cached = await client.get(ROUTES[0][1])
        assert (cached.status_code, cached.headers["x-cache"]) == (200, "HIT")


async def test_connecting_to_a_server_that_never_answers_is_given_up() -> None:
    """A listening socket that never answers (the handshake done, nothing said): connecting
    gives up after the wait timeout, as a database fault (503), not after asyncpg's default
    minute (the 30 s bound only keeps a regression from hanging the run)."""
    with socket.socket() as silent:
        silent.bind(("127.0.0.1", 0))
        silent.listen(8)
        port = silent.getsockname()[1]
        engine = create_engine(
            f"postgresql+asyncpg://postgres@127.0.0.1:{port}/none", wait_timeout=0.1
        )
        with pytest.raises(Exception) as raised:
            async with asyncio.timeout(30), engine.connect() as connection:
                await connection.execute(text("SELECT 1"))
        await engine.dispose()
    assert database_fault(raised.value) is Code.DATABASE_UNAVAILABLE
    with warnings.catch_warnings():  # asyncpg leaves the timed-out attempt's transport open
        warnings.simplefilter("ignore", ResourceWarning)
        gc.collect()


async def test_a_sqlite_lock_held_elsewhere_is_waited_for_at_most_the_wait_timeout(
    tmp_path,
) -> None:
    """SQLite waits for another connection's lock as long as its busy timeout, which is the
    wait timeout; then the write is a database fault."""
    path = tmp_path / "locked.db"
    holder = sqlite3.connect(path, isolation_level=None)
    holder.execute("CREATE TABLE t (x)")
    engine = create_engine(str(path), wait_timeout=0.3)
    async with engine.connect() as connection:
        busy = (await connection.execute(text("PRAGMA busy_timeout"))).scalar_one()
    holder.execute("BEGIN EXCLUSIVE")
    with pytest.raises(Exception) as raised:
        async with engine.begin() as connection:
            await connection.execute(text("INSERT INTO t VALUES (1)"))
    await engine.dispose()
    holder.close()
    assert busy == 300
    assert database_fault(raised.value) is Code.DATABASE_UNAVAILABLE
