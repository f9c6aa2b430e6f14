"""Faults while serving: the database going away and coming back, an ingest while clients read.

PostgreSQL is shared on this machine, so it is never stopped: the app reaches it through a TCP
proxy on 127.0.0.1 that the test cuts (listener closed, every connection reset: what a stopped
server or a restart looks like to a client) or turns into a black hole (every connection, open
or new, kept open and nothing answered: a partitioned network), then restores.
"""

from __future__ import annotations

import asyncio
import contextlib
import json
import os
import subprocess
import sys
import time
from collections.abc import AsyncIterator, Iterator
from pathlib import Path
from typing import Any

import anyio.to_thread
import httpx
import pytest
from sqlalchemy import text
from sqlalchemy.engine import make_url

from db.database import create_engine, create_tables
from graph.settings import Settings
from tests import synthetic
from tests.conftest import BACKENDS, _in_thread, app_client, ingest_dir
from tests.live import answering, free_port, stop

pytestmark = pytest.mark.anyio

ROOT = Path(__file__).resolve().parents[1]
PG_HOST, PG_PORT = "127.0.0.1", 5432
# Fault codes (graph/errors.py) and the statuses the issue asks for.
UNAVAILABLE = "DATABASE_UNAVAILABLE"
# How long the app may take to notice the database is gone (it has to give up on it).
PROMPT_SECONDS = 5.0


class Proxy:
    """A TCP proxy on 127.0.0.1 in front of PostgreSQL that can be cut, black-holed, restored.

    Cut: the listener closed and every connection reset (a stopped or restarting server). Black
    hole: every connection, open or new, kept open while every byte either way is dropped (a
    partitioned network: nothing refused, nothing answered); restored, the bytes flow again
    (a connection that lost bytes meanwhile is of no use, and its client drops it)."""

    def __init__(self, target: tuple[str, int]) -> None:
        self.target = target
        self.port = 0
        self.holing = False
        self.server: asyncio.Server | None = None
        self.writers: set[asyncio.StreamWriter] = set()

    async def start(self) -> None:
        self.server = await asyncio.start_server(self._client, "127.0.0.1", self.port)
        self.port = self.server.sockets[0].getsockname()[1]

    async def _client(self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        self.writers.add(writer)
        try:
            if self.holing:  # opened into the hole: never connected, whatever comes later
                while await reader.read(65536):
                    pass
                return
            try:
                up_reader, up_writer = await asyncio.open_connection(*self.target)
            except OSError:
                return
            self.writers.add(up_writer)
            await asyncio.gather(self._pipe(reader, up_writer), self._pipe(up_reader, writer))
        except (OSError, asyncio.CancelledError):
            pass
        finally:
            writer.transport.abort()
            self.writers.discard(writer)

    async def _pipe(self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        try:
            while data := await reader.read(65536):
                if not self.holing:
                    writer.write(data)
                    await writer.drain()
        except OSError:
            pass
        finally:
            writer.transport.abort()
            self.writers.discard(writer)

    async def cut(self) -> None:
        """Stop listening and reset every connection: new connections are refused."""
        if self.server is not None:
            self.server.close()
            self.server = None
        for writer in list(self.writers):
            writer.transport.abort()
        self.writers.clear()
        await asyncio.sleep(0.05)

    async def blackhole(self) -> None:
        """Drop every byte of every connection, open or new, and answer nothing."""
        self.holing = True

    async def restore(self) -> None:
        """Forward again: after a black hole the connections still open carry on; after a cut
        new ones are accepted."""
        self.holing = False
        if self.server is None:
            await self.start()


@pytest.fixture
def pg_url(request: pytest.FixtureRequest) -> str:
    if len(BACKENDS) == 1:  # ["sqlite"]: the PostgreSQL parameter is left out
        pytest.skip("PostgreSQL is off (LEADGREEN_TEST_POSTGRES=off)")
    url: str = request.getfixturevalue("postgres_url")
    return url


@pytest.fixture
async def proxied(pg_url: str, synthetic_dir: Path) -> AsyncIterator[tuple[Proxy, str]]:
    """The synthetic snapshot in an emptied PostgreSQL database, and a proxy in front of it."""
    engine = create_engine(pg_url)
    async with engine.begin() as conn:
        await conn.execute(text("DROP SCHEMA public CASCADE"))
        await conn.execute(text("CREATE SCHEMA public"))
    await create_tables(engine)
    await ingest_dir(engine, synthetic_dir, synthetic_dir.parent / "manifest.json")
    await engine.dispose()
    proxy = Proxy((PG_HOST, PG_PORT))
    await proxy.start()
    url = make_url(pg_url).set(host="127.0.0.1", port=proxy.port)
    try:
        yield proxy, url.render_as_string(hide_password=False)
    finally:
        await proxy.cut()


def fault_settings(url: str, **more: Any) -> Settings:
    """Short time limits, so that a black hole is noticed fast."""
    limits = {"request_timeout_seconds": 3.0, "database_timeout_seconds": 1.0}
    return Settings(database_url=url, manifest=None, **{**limits, **more})


N = iter(range(10**9))


def fresh_query() -> str:
    """A query no cache holds (an alias of its own), reading a few tables (then answered from
    the release's catalog, in memory)."""
    return f"{{ q{next(N)}: models {{ slug configurations {{ energyPerTokenJoules }} }} }}"


def fresh_database_query() -> str:
    """A query no cache holds that reads the database on every request."""
    return f"{{ q{next(N)}: releases {{ number }} }}"


async def timed(coroutine: Any, seconds: float = PROMPT_SECONDS) -> tuple[httpx.Response, float]:
    start = time.monotonic()
    async with asyncio.timeout(seconds):
        response = await coroutine
    return response, time.monotonic() - start


async def after_the_poll(settings: Settings) -> None:
    """Wait out the release watcher's bound: until then, answers may come from memory (the
    release's catalog), which is fine; after it, a request must find the database."""
    await asyncio.sleep(settings.release_poll_seconds + 0.5)


async def until_served(client: httpx.AsyncClient, attempts: int = 50) -> int:
    """Retry (0.2 s apart) until /readyz and a fresh query reading the database both answer;
    the attempts it took."""
    for attempt in range(1, attempts + 1):
        health = await client.get("/readyz")
        answer = await client.post("/graphql", json={"query": fresh_database_query()})
        if (
            health.status_code == 200
            and answer.status_code == 200
            and "errors" not in answer.json()
        ):
            return attempt
        await asyncio.sleep(0.2)
    raise AssertionError(f"not served again after {attempts} attempts: {answer.text[:300]}")


def codes(response: httpx.Response) -> list[str]:
    return [e["extensions"]["code"] for e in response.json().get("errors", [])]


# ---------------------------------------------------------------------------------------------
# The database goes away and comes back
# ---------------------------------------------------------------------------------------------


async def test_health_while_the_database_is_away(proxied) -> None:
    """/healthz is the process's liveness: 200 while the database is away (an outage must not
    get every replica restarted), promptly; /readyz says 503; both 200 again once it is back."""
    proxy, url = proxied
    async with app_client(fault_settings(url)) as (_, client):
        assert (await client.get("/healthz")).status_code == 200
        await proxy.cut()
        for _ in range(2):
            health, _seconds = await timed(client.get("/healthz"))
            ready, _seconds = await timed(client.get("/readyz"))
            assert (health.status_code, health.json()["status"]) == (200, "ok")
            assert (ready.status_code, ready.json()["status"]) == (503, "unavailable")
        await proxy.restore()
        await until_served(client)


async def test_graphql_while_the_database_is_away(proxied) -> None:
    """While the database is away every request is answered promptly: from memory (the
    release's catalog, the cached answers) with 200, or with a JSON error that has a code
    (never a crash, a hang or INTERNAL); what needs the database is 503. Once it is back,
    service resumes by itself within a few retries, and every request after that is answered
    (no connection broken by the fault is handed out again)."""
    proxy, url = proxied
    settings = fault_settings(url)
    async with app_client(settings) as (_, client):
        assert "errors" not in (await client.post("/graphql", json={"query": fresh_query()})).json()
        await proxy.cut()
        await after_the_poll(settings)
        # What the catalog holds is answered from memory; what needs the database is a 503.
        asked = [(fresh_query(), (200, [])), (fresh_database_query(), (503, [UNAVAILABLE]))]
        for query, expected in [*asked, (fresh_query(), (200, []))]:
            response, _seconds = await timed(client.post("/graphql", json={"query": query}))
            assert response.headers["content-type"].startswith("application/json")
            assert (response.status_code, codes(response)) == expected, response.text
        await proxy.restore()
        attempts = await until_served(client)
        assert attempts <= 25
        for _ in range(20):
            response = await client.post("/graphql", json={"query": fresh_database_query()})
            assert (response.status_code, "errors" in response.json()) == (200, False)


async def test_graphql_says_503_database_unavailable(proxied) -> None:
    """The issue: a request that needs the database gets a 503 with a code while it is away:
    HTTP 503 (with Retry-After), `extensions.code` DATABASE_UNAVAILABLE, no data, for either
    media type."""
    proxy, url = proxied
    settings = fault_settings(url)
    async with app_client(settings) as (_, client):
        await proxy.cut()
        await after_the_poll(settings)
        for accept in ("application/json", "application/graphql-response+json"):
            response, _seconds = await timed(
                client.post(
                    "/graphql",
                    json={"query": fresh_database_query()},
                    headers={"accept": accept},
                )
            )
            assert response.status_code == 503, response.text
            assert "retry-after" in response.headers
            assert set(codes(response)) == {UNAVAILABLE}
            assert response.json().get("data") is None


async def test_a_cached_answer_is_still_served(proxied) -> None:
    """An answer already in the response cache is served from it while the database is away,
    before the release watcher's poll and after it."""
    proxy, url = proxied
    query = {"query": "{ gpus { name } }"}
    settings = fault_settings(url)
    async with app_client(settings) as (_, client):
        first = await client.post("/graphql", json=query)
        await proxy.cut()
        again, _seconds = await timed(client.post("/graphql", json=query))
        await after_the_poll(settings)
        later, _seconds = await timed(client.post("/graphql", json=query))
    for answer in (again, later):
        assert (answer.status_code, answer.headers["x-cache"]) == (200, "HIT")
        assert answer.json()["data"] == first.json()["data"]


async def test_readyz(proxied) -> None:
    """/readyz: 200 when the database answers and holds a release, 503 while it is away, 200
    again by itself once it is back."""
    proxy, url = proxied
    async with app_client(fault_settings(url)) as (_, client):
        assert (await client.get("/readyz")).status_code == 200
        await proxy.cut()
        response, _seconds = await timed(client.get("/readyz"))
        assert response.status_code == 503
        assert response.headers["content-type"].startswith("application/json")
        await proxy.restore()
        for _ in range(50):
            if (await client.get("/readyz")).status_code == 200:
                break
            await asyncio.sleep(0.2)
        else:
            raise AssertionError("/readyz did not come back")


@pytest.mark.parametrize(
    "database_timeout",
    # The database's own timeouts (each wait's: connecting, the pool, a statement) shorter than
    # the request's time limit, or as long: then the request's share of its limit answers.
    [1.0, 3.0],
    ids=["database-timeouts-short", "database-timeouts-as-long-as-the-limit"],
)
async def test_a_database_that_does_not_answer(proxied, database_timeout) -> None:
    """A black hole (every connection, the pool's open ones too, kept open and nothing answered:
    a partitioned network): /healthz still 200; /readyz 503, and GraphQL that needs the
    database 503 DATABASE_UNAVAILABLE with Retry-After for either media type, each within the
    request's share of its time limit for the database (db/database.py `waiting`), never the
    limit's 504; a cached answer still served; and once the hole closes, the answers of before
    it."""
    proxy, url = proxied
    settings = fault_settings(url, database_timeout_seconds=database_timeout)
    limit = settings.request_timeout_seconds
    cached = {"query": "{ gpus { name } }"}
    async with app_client(settings) as (_, client):
        before = await client.post("/graphql", json={"query": fresh_database_query()})
        assert (await client.post("/graphql", json=cached)).status_code == 200
        await proxy.blackhole()
        health, _seconds = await timed(client.get("/healthz"))
        ready, seconds = await timed(client.get("/readyz"))
        assert (health.status_code, health.json()["status"]) == (200, "ok")
        assert (ready.status_code, ready.headers["retry-after"], ready.json()) == (
            503,
            "1",
            {"status": "unavailable", "reason": "database unreachable", "code": UNAVAILABLE},
        )
        assert seconds < limit
        await after_the_poll(settings)
        for accept in ("application/json", "application/graphql-response+json"):
            response, seconds = await timed(
                client.post(
                    "/graphql",
                    json={"query": fresh_database_query()},
                    headers={"accept": accept},
                )
            )
            assert (response.status_code, response.headers.get("retry-after")) == (503, "1"), (
                response.text
            )
            assert (codes(response), response.json().get("data")) == ([UNAVAILABLE], None)
            assert seconds < limit
        again, _seconds = await timed(client.post("/graphql", json=cached))
        assert (again.status_code, again.headers["x-cache"]) == (200, "HIT")
        await proxy.restore()
        assert await until_served(client) <= 25
        after = await client.post("/graphql", json={"query": fresh_database_query()})
    assert (before.status_code, after.status_code) == (200, 200)
    assert list(after.json()["data"].values()) == list(before.json()["data"].values())
    assert list(after.json()["data"].values()) == [[{"number": 1}]]


async def test_a_connection_given_up_on_in_a_black_hole_is_dropped_at_once(proxied) -> None:
    """A connection invalidated while the database is a black hole (a request gave up on it)
    is terminated: closing it gracefully first, as SQLAlchemy does, would wait on the hole (2 s;
    without a bound after a statement timed out: asyncpg issue 1356)."""
    proxy, url = proxied
    engine = create_engine(url)
    try:
        async with engine.connect() as connection:
            await connection.execute(text("SELECT 1"))
            await proxy.blackhole()
            async with asyncio.timeout(1.0):
                await connection.invalidate()
            assert connection.invalidated
    finally:
        await proxy.restore()
        await engine.dispose()


# ---------------------------------------------------------------------------------------------
# An ingest while clients read: every answer from one release
# ---------------------------------------------------------------------------------------------

# source.release and three tables' values: what a mix of two releases would show.
READ = """{
  source { release { number lastUpdated } }
  configurations(first: 50) { totalCount nodes { id modelId maxNumSeqs energyPerTokenJoules } }
  models { slug configurations { maxNumSeqs energyPerTokenJoules } }
  leaderboard(constraints: { maxItlMs: null }) { entries { rank energyJoules model { slug } } }
}"""


def second_release() -> dict[str, Any]:
    """A bigger release with other measurements and a later date: 7 x 40 rows, energies x 2."""
    rows = []
    for k in range(40):
        for row in synthetic.ROWS:
            rows.append(
                synthetic.row(
                    row["model_id"],
                    row["gpu_model"],
                    row["num_gpus"],
                    row["max_num_seqs"] + 1000 * k,
                    row["energy_per_token_joules"] * 2,
                    row["median_itl_ms"],
                    tp=row["tensor_parallel"],
                    ep=row["expert_parallel"],
                    power=row["avg_power_watts"],
                )
            )
    documents = synthetic.documents(rows)
    documents["index.json"]["last_updated"] = "2030-02-01"
    return documents


async def read(client: httpx.AsyncClient) -> dict[str, Any]:
    response = await client.post("/graphql", json={"query": READ})
    assert response.status_code == 200, response.text
    body = response.json()
    assert "errors" not in body, body
    return body["data"]


@pytest.mark.parametrize(
    "variant",
    [
        pytest.param({}, id="defaults"),
        pytest.param({"cache": "off", "release_poll_seconds": 0}, id="uncached-poll0"),
    ],
)
async def test_an_ingest_while_clients_read(
    database_url, engine, synthetic_dir, tmp_path, variant
) -> None:
    """16 readers query while a second release is ingested (in a thread of its own, with its
    own engine, as `leadgreen ingest` would from another process): every answer is entirely the
    first release's or entirely the second's."""
    manifest = synthetic_dir.parent / "manifest.json"
    await ingest_dir(engine, synthetic_dir, manifest)
    second = synthetic.write(tmp_path / "second", second_release())

    async def ingest_second() -> None:
        other = create_engine(database_url)
        try:
            await ingest_dir(other, second, manifest)
        finally:
            await other.dispose()

    settings = Settings(database_url=database_url, manifest=None, **variant)
    async with app_client(settings) as (_, client):
        before = await read(client)
        assert before["source"]["release"] == {"number": 1, "lastUpdated": "2030-01-02"}
        answers: list[dict[str, Any]] = []
        reading = asyncio.Event()

        async def reader() -> None:
            """Read until the second release is served, then once more."""
            while True:
                answers.append(await read(client))
                if len(answers) >= 16:
                    reading.set()
                if answers[-1]["source"]["release"]["number"] == 2:
                    answers.append(await read(client))
                    return
                await asyncio.sleep(0)

        readers = [asyncio.create_task(reader()) for _ in range(16)]
        await reading.wait()
        await anyio.to_thread.run_sync(_in_thread, ingest_second())
        # The new release is served within the poll interval (the bound: a hang guard).
        async with asyncio.timeout(settings.release_poll_seconds + 30):
            await asyncio.gather(*readers)
        after = await read(client)
    assert after["source"]["release"] == {"number": 2, "lastUpdated": "2030-02-01"}
    assert after["configurations"]["totalCount"] == 280
    mixed = [a for a in answers if a != before and a != after]
    assert not mixed, f"{len(mixed)} of {len(answers)} answers mix two releases: {mixed[0]}"
    seen = {a["source"]["release"]["number"] for a in answers}
    assert seen == {1, 2}, (seen, len(answers))


# ---------------------------------------------------------------------------------------------
# Starting
# ---------------------------------------------------------------------------------------------


@contextlib.contextmanager
def _serve(args: list[str], log: Path) -> Iterator[subprocess.Popen[bytes]]:
    env = {**os.environ, "LEADGREEN_LOG_LEVEL": "warning"}
    with log.open("wb") as out:
        process = subprocess.Popen(
            [str(Path(sys.executable).parent / "leadgreen"), *args],
            stdout=out,
            stderr=subprocess.STDOUT,
            env=env,
        )
    try:
        yield process
    finally:
        stop(process)


@pytest.mark.slow  # a `leadgreen serve` process of its own: scripts/test runs it
def test_serve_ingests_into_an_empty_database(synthetic_dir: Path, tmp_path: Path) -> None:
    """`leadgreen serve --source S` on an empty database (a first start, Docker's included)
    ingests S and serves it."""
    port = free_port()
    manifest = synthetic_dir.parent / "manifest.json"
    args = ["serve", "--database-url", str(tmp_path / "new.db"), "--source", str(synthetic_dir)]
    args += ["--manifest", str(manifest), "--host", "127.0.0.1", "--port", str(port)]
    log = tmp_path / "serve.log"
    with _serve(args, log) as process:
        health = answering(f"http://127.0.0.1:{port}/healthz", process, log, timeout=60)
    assert health.json()["release"] == 1
    assert (
        json.loads((synthetic_dir / "index.json").read_text())["last_updated"]
        == (health.json()["lastUpdated"])
    )
