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
from tests.test_faults import after_the_poll, fault_settings, pg_url, proxied, serving

pytestmark = pytest.mark.anyio
__all__ = ["pg_url", "proxied"]  # fixtures, used by name

ROUTES = [
    ("GET", "/graphql?query=%7B%20gpus%20%7B%20name%20%7D%20%7D", None),  # cached before
    ("POST", "/graphql", {"query": "{ releases { number } }"}),
    ("POST", "/graphql", {"query": "{ q1: models { slug } }"}),
    ("GET", "/api/v1/index.json", None),
    ("GET", "/api/v1/models/tiny-1b.json", None),
    ("GET", "/data/index.json", None),
    ("GET", "/healthz", None),
    ("GET", "/readyz", None),
]


async def test_every_route_is_answered_in_time_by_a_black_hole(proxied) -> None:
    proxy, url = proxied
    settings = fault_settings(url)  # requests 3 s, the database 1 s
    async with serving(settings) as client:
        await client.get(ROUTES[0][1])
        await proxy.blackhole()
        await after_the_poll(settings)
        for round_ in range(2):
            for method, path, body in ROUTES:
                started = time.monotonic()
                async with asyncio.timeout(settings.request_timeout_seconds + 2):
                    response = await client.request(method, path, json=body)
                seconds = time.monotonic() - started
                assert seconds < settings.request_timeout_seconds + 1, (path, seconds)
                what = (round_, method, path, response.status_code, response.text[:200])
                assert response.status_code in (200, 503, 504), what
                if response.status_code != 200:
                    body_ = response.json()
                    found = (
                        body_["errors"][0]["extensions"]["code"]
                        if "errors" in body_
                        else body_.get("code") or body_["error"]["code"]
                    )
                    assert found in ("DATABASE_UNAVAILABLE", "REQUEST_TIMEOUT"), what
                    if response.status_code == 503:
                        assert response.headers.get("retry-after") == "1", what
            health = await client.get("/healthz")
            assert health.status_code == 200
        cached = await client.get(ROUTES[0][1])
        assert (cached.status_code, cached.headers["x-cache"]) == (200, "HIT")


async def test_connecting_to_a_server_that_never_answers_is_given_up() -> None:
    """A listening socket that never answers (the handshake done, nothing said): connecting
    gives up after the wait timeout, as a database fault (503), not after minutes."""
    with socket.socket() as silent:
        silent.bind(("127.0.0.1", 0))
        silent.listen(8)
        port = silent.getsockname()[1]
        engine = create_engine(
            f"postgresql+asyncpg://postgres@127.0.0.1:{port}/none", wait_timeout=0.5
        )
        started = time.monotonic()
        with pytest.raises(Exception) as raised:
            async with engine.connect() as connection:
                await connection.execute(text("SELECT 1"))
        await engine.dispose()
    assert time.monotonic() - started < 3
    assert database_fault(raised.value) is Code.DATABASE_UNAVAILABLE
    with warnings.catch_warnings():  # asyncpg leaves the timed-out attempt's transport open
        warnings.simplefilter("ignore", ResourceWarning)
        gc.collect()


async def test_a_sqlite_lock_held_elsewhere_is_waited_for_at_most_the_wait_timeout(
    tmp_path,
) -> None:
    path = tmp_path / "locked.db"
    holder = sqlite3.connect(path, isolation_level=None)
    holder.execute("CREATE TABLE t (x)")
    holder.execute("BEGIN EXCLUSIVE")
    engine = create_engine(str(path), wait_timeout=0.3)
    started = time.monotonic()
    with pytest.raises(Exception) as raised:
        async with engine.begin() as connection:
            await connection.execute(text("INSERT INTO t VALUES (1)"))
    seconds = time.monotonic() - started
    await engine.dispose()
    holder.close()
    assert 0.2 < seconds < 3
    assert database_fault(raised.value) is Code.DATABASE_UNAVAILABLE
