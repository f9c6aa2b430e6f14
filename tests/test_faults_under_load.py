"""Faults of the parts around the service, while clients read (issue 22, item 4):

- the disk filling during an ingest (os.pwrite failing with ENOSPC as the ingest's spool
  writes each of the release's files in turn): the ingest fails saying "No space left on
  device" and which file it was writing where, nothing is changed, and the release served
  before is served throughout, on both databases;
- PostgreSQL going away under load (mark hostile: timed; the TCP proxy of tests/test_faults.py
  cut after a number of requests, as a restart, or turned into a black hole for longer than
  the request time limit; the shared server is never stopped): every answer is 200 from memory
  or 503 DATABASE_UNAVAILABLE with Retry-After, never a 500 nor a 504, and requests that read
  the database are answered again within two seconds of its return;
- Redis killed and started again while two `leadgreen serve` replicas serve (mark replicas):
  this test's own redis-server on a free port, never the shared one.
"""

from __future__ import annotations

import asyncio
import errno
import hashlib
import os
import shutil
import subprocess
import threading
import time
from pathlib import Path
from typing import Any

import anyio.to_thread
import httpx
import pytest
from click.testing import CliRunner

from graph.cli import main
from graph.settings import Settings
from tests import synthetic
from tests.conftest import app_client, ingest_dir
from tests.live import LEADGREEN, answering, free_port, stop, wait_until
from tests.test_faults import (  # noqa: F401  (pg_url and proxied: fixtures)
    UNAVAILABLE,
    codes,
    fault_settings,
    fresh_database_query,
    fresh_query,
    pg_url,
    proxied,
    second_release,
)

ANYIO = pytest.mark.anyio
READ = (
    "{ source { release { number lastUpdated } } "
    "models { slug configurations { maxNumSeqs energyPerTokenJoules } } }"
)
RECOVERY_SECONDS = 2.0


async def read(client: httpx.AsyncClient) -> dict[str, Any]:
    response = await client.post("/graphql", json={"query": READ})
    assert response.status_code == 200, response.text
    body = response.json()
    assert "errors" not in body, body
    return body["data"]  # type: ignore[no-any-return]


# ---------------------------------------------------------------------------------------------
# The disk fills during an ingest
# ---------------------------------------------------------------------------------------------


def failing_pwrite(after: int) -> tuple[Any, list[int]]:
    """os.pwrite that writes `after` times, then fails as a full disk does."""
    real = os.pwrite
    calls = [0]

    def pwrite(fd: int, data: Any, offset: int) -> int:
        calls[0] += 1
        if calls[0] > after:
            raise OSError(errno.ENOSPC, os.strerror(errno.ENOSPC))
        return real(fd, data, offset)

    return pwrite, calls


@ANYIO
@pytest.mark.parametrize("moment", [0, 1, 2, 3])
async def test_the_disk_filling_during_an_ingest(
    database_url, engine, synthetic_dir, tmp_path, monkeypatch, moment
) -> None:
    """The moment: how many of the second release's files were written before the disk filled
    (0: the first; the synthetic release has 4 files: each moment, a different file)."""
    manifest = synthetic_dir.parent / "manifest.json"
    await ingest_dir(engine, synthetic_dir, manifest)
    second = synthetic.write(tmp_path / "second", second_release())
    files = sorted(p for p in second.rglob("*.json"))
    assert len(files) > moment
    settings = Settings(database_url=database_url, manifest=None, release_poll_seconds=0)
    async with app_client(settings) as (_, client):
        before = await read(client)
        answers: list[dict[str, Any]] = []
        done = asyncio.Event()

        async def reader() -> None:
            while not done.is_set():
                answers.append(await read(client))
                await asyncio.sleep(0)

        readers = [asyncio.create_task(reader()) for _ in range(4)]
        pwrite, calls = failing_pwrite(moment)
        monkeypatch.setattr(os, "pwrite", pwrite)
        args = ["ingest", str(second), "--manifest", str(manifest), "--database-url", database_url]
        result = await anyio.to_thread.run_sync(lambda: CliRunner().invoke(main, args))
        monkeypatch.undo()
        for _ in range(8):  # the readers go on after the failure too
            answers.append(await read(client))
        done.set()
        await asyncio.gather(*readers)
        after = await read(client)
    assert calls[0] == moment + 1  # the failing write was the last one tried
    assert result.exit_code == 1, result.output
    # (the app's request log lines, written meanwhile, are in the captured output too)
    lines = [line for line in result.output.splitlines() if not line.startswith('{"timestamp"')]
    message = lines[lines.index(next(line for line in lines if line.startswith("error:"))) :]
    assert message[0].startswith("error: [Errno 28] No space left on device: writing "), message
    assert "to the spool, a temporary file in " in message[0], message
    assert message[1] == "nothing was changed; the data served before is still served."
    assert "Traceback" not in result.output
    assert before["source"]["release"]["number"] == 1
    assert after == before
    assert len(answers) > 8 and all(answer == before for answer in answers)
    # And the next ingest, with room on the disk, is served.
    await ingest_dir(engine, second, manifest)
    async with app_client(settings) as (_, client):
        assert (await read(client))["source"]["release"]["number"] == 2


# ---------------------------------------------------------------------------------------------
# PostgreSQL away under load
# ---------------------------------------------------------------------------------------------


@ANYIO
@pytest.mark.hostile  # timed (the 2 s bound): CI's hostile step, with PostgreSQL
@pytest.mark.parametrize(
    ("fault", "after", "lasting", "database_timeout"),
    # A restart looks like a cut to the app (connections reset, new ones refused). A black hole
    # (every connection kept open, nothing answered) lasts past the 3 s request time limit, and
    # the database's own timeouts are as long as the limit: each request waiting on it is
    # answered 503 within its share of the limit for the database, not the limit's 504.
    [
        ("cut", 0, 1.5, 1.0),
        ("cut", 15, 1.5, 1.0),
        ("cut", 40, 1.5, 1.0),
        ("blackhole", 0, 4, 3.0),
        ("blackhole", 15, 4, 3.0),
    ],
    ids=["cut-at-once", "cut-after-15", "cut-after-40", "blackhole-at-once", "blackhole-after-15"],
)
async def test_postgresql_away_under_load(
    proxied,  # noqa: F811
    fault,
    after,
    lasting,
    database_timeout,
) -> None:
    """8 clients send requests that read the database and requests answered from memory, without
    pause; the fault comes after `after` answers, lasts `lasting` seconds, and is restored.
    While it lasts each answer is 200 (with data and no error) or 503 DATABASE_UNAVAILABLE with
    Retry-After; after it, a request that reads the database is answered within
    RECOVERY_SECONDS."""
    proxy, url = proxied
    settings = fault_settings(
        url, release_poll_seconds=0.5, database_timeout_seconds=database_timeout
    )
    outcomes: list[tuple[float, int, tuple[str, ...], bool]] = []
    stop = asyncio.Event()
    async with app_client(settings) as (_, client):

        async def load(index: int) -> None:
            while not stop.is_set():
                query = fresh_database_query() if index % 2 else fresh_query()
                response = await client.post("/graphql", json={"query": query})
                outcomes.append(
                    (
                        time.monotonic(),
                        response.status_code,
                        tuple(codes(response)),
                        "retry-after" in response.headers,
                    )
                )
                await asyncio.sleep(0.005)

        tasks = [asyncio.create_task(load(i)) for i in range(8)]
        async with asyncio.timeout(30):
            while len(outcomes) < after:
                await asyncio.sleep(0.01)
        await (proxy.cut() if fault == "cut" else proxy.blackhole())
        await asyncio.sleep(lasting)
        await proxy.restore()
        restored = time.monotonic()
        # Served again: the first answer of a request reading the database after the return.
        recovered = None
        async with asyncio.timeout(10):
            while recovered is None:
                response = await client.post("/graphql", json={"query": fresh_database_query()})
                if response.status_code == 200 and not codes(response):
                    recovered = time.monotonic() - restored
                else:
                    await asyncio.sleep(0.02)
        # The load goes on past the bound, every answer 200 from then on.
        await asyncio.sleep(max(0.0, restored + RECOVERY_SECONDS + 0.5 - time.monotonic()))
        stop.set()
        async with asyncio.timeout(10):
            await asyncio.gather(*tasks)
    statuses = {(status, code, retry) for _, status, code, retry in outcomes}
    assert statuses <= {(200, (), False), (503, (UNAVAILABLE,), True)}, statuses
    assert (503, (UNAVAILABLE,), True) in statuses  # the fault was seen
    print(f"{fault} after {after}: served again {recovered:.2f} s after the return")
    assert recovered <= RECOVERY_SECONDS
    late = [o for o in outcomes if o[0] > restored + RECOVERY_SECONDS]
    failed = [
        (round(t - restored, 2), status, code) for t, status, code, _ in late if status != 200
    ]
    assert late and not failed, f"{len(failed)} of {len(late)} failed: {failed[:10]}"


# ---------------------------------------------------------------------------------------------
# Redis killed and started again while two replicas serve
# ---------------------------------------------------------------------------------------------

REDIS_QUERIES = [
    "{ gpus { name } }",
    READ,
    "{ models { slug } leaderboard(constraints: { maxItlMs: null }) { entries { rank energyJoules "
    "model { slug } } } }",
]
KEYS = ["redis-fault-0", "redis-fault-1", "redis-fault-2", "redis-fault-3", "redis-fault-apq"]


def start_redis(port: int, directory: Path) -> subprocess.Popen[bytes]:
    """A redis-server of this test's own (never the shared one on 6379), no persistence."""
    binary = shutil.which("redis-server")
    if binary is None:
        pytest.skip("redis-server is not installed")
    with (directory / "redis.log").open("ab") as log:
        process = subprocess.Popen(
            [
                binary,
                "--port",
                str(port),
                "--bind",
                "127.0.0.1",
                "--save",
                "",
                "--appendonly",
                "no",
            ],
            stdout=log,
            stderr=log,
            stdin=subprocess.DEVNULL,
            start_new_session=True,
        )
    wait_until(lambda: redis_command(port, "PING") is True, 10, "redis-server")
    return process


def redis_command(port: int, *command: Any) -> Any:
    import redis

    with redis.Redis(host="127.0.0.1", port=port, socket_timeout=2) as client:
        return client.execute_command(*command)


def apq(nonce: str) -> tuple[str, str]:
    query = f"# run {nonce}\nquery Apq {{ gpus {{ name }} }}"
    return query, hashlib.sha256(query.encode()).hexdigest()


def persisted(port: int, sha: str, query: str | None = None) -> httpx.Response:
    body: dict[str, Any] = {"extensions": {"persistedQuery": {"version": 1, "sha256Hash": sha}}}
    if query is not None:
        body["query"] = query
    return httpx.post(
        f"http://127.0.0.1:{port}/graphql",
        json=body,
        headers={"X-API-Key": KEYS[-1]},
        timeout=10,
    )


@pytest.mark.replicas
def test_redis_killed_and_started_again_under_load(tmp_path: Path) -> None:
    """Two replicas on one database and this test's own Redis (LEADGREEN_CACHE=redis, rate
    limiting on); four clients ask three queries of both, without pause. Redis is SIGKILLed
    after a second of load and started again (empty) 2 s later; the load goes on 3 s more.
    Every answer is 200 with the data of the reference answers (asked before), none a 500;
    meanwhile the response cache, persisted queries and buckets are the process's own; after
    Redis's return, answers, buckets and a persisted query are shared through it again (one
    registered through A is found through B)."""
    snapshot = synthetic.write(tmp_path / "snapshot", synthetic.documents())
    database = tmp_path / "served.db"
    done = subprocess.run(
        [LEADGREEN, "ingest", str(snapshot), "--database-url", str(database)],
        capture_output=True,
        text=True,
        timeout=120,
        check=False,
    )
    assert done.returncode == 0, done.stderr
    redis_port = free_port()
    redis_server = start_redis(redis_port, tmp_path)
    env = {k: v for k, v in os.environ.items() if not k.startswith("LEADGREEN_")}
    env.update(
        LEADGREEN_DATABASE_URL=str(database),
        LEADGREEN_CACHE="redis",
        LEADGREEN_REDIS_URL=f"redis://127.0.0.1:{redis_port}/0",
        LEADGREEN_RATE_LIMIT="true",
        LEADGREEN_API_KEYS=",".join(KEYS),
        LEADGREEN_LOG_LEVEL="warning",
        LEADGREEN_HOST="127.0.0.1",
    )
    replicas: list[subprocess.Popen[bytes]] = []
    ports = [free_port(), free_port()]
    try:
        for index, port in enumerate(ports):
            with (tmp_path / f"replica-{index}.log").open("wb") as log:
                replicas.append(
                    subprocess.Popen(
                        [LEADGREEN, "serve", "--port", str(port)],
                        env={**env, "LEADGREEN_PORT": str(port)},
                        stdout=log,
                        stderr=subprocess.STDOUT,
                        stdin=subprocess.DEVNULL,
                    )
                )
        for index, (port, process) in enumerate(zip(ports, replicas, strict=True)):
            log_path = tmp_path / f"replica-{index}.log"
            answering(f"http://127.0.0.1:{port}/readyz", process, log_path)
        reference = {}
        for query in REDIS_QUERIES:
            answer = httpx.post(f"http://127.0.0.1:{ports[0]}/graphql", json={"query": query})
            assert answer.status_code == 200 and "errors" not in answer.json(), answer.text
            reference[query] = answer.json()["data"]
        assert redis_command(redis_port, "DBSIZE") > 0  # the answers are in the shared cache

        seen: list[tuple[float, int, str, bool]] = []  # time, status, code, data as expected
        stop_load = threading.Event()

        def load(index: int) -> None:
            with httpx.Client(timeout=10, headers={"X-API-Key": KEYS[index]}) as client:
                turn = 0
                while not stop_load.is_set():
                    port, query = ports[turn % 2], REDIS_QUERIES[turn % len(REDIS_QUERIES)]
                    turn += 1
                    try:
                        answer = client.post(
                            f"http://127.0.0.1:{port}/graphql", json={"query": query}
                        )
                        body = answer.json()
                    except (httpx.HTTPError, ValueError) as exc:
                        seen.append((time.monotonic(), 0, repr(exc), False))
                        continue
                    code = (body.get("errors") or [{}])[0].get("extensions", {}).get("code", "")
                    same = body.get("data") == reference[query] and not body.get("errors")
                    seen.append((time.monotonic(), answer.status_code, code, same))

        threads = [threading.Thread(target=load, args=(i,)) for i in range(4)]
        for thread in threads:
            thread.start()
        try:
            wait_until(lambda: len(seen) >= 50, 20, "the load to begin")
            redis_server.kill()
            redis_server.wait(10)
            killed = time.monotonic()
            # Persisted queries of the process while Redis is away: registered and used on A.
            query, sha = apq(f"away-{os.getpid()}")
            registered = persisted(ports[0], sha, query)
            again = persisted(ports[0], sha)
            wait_until(lambda: len([s for s in seen if s[0] > killed + 1]) >= 20, 20, "load")
            redis_server = start_redis(redis_port, tmp_path)
            back = time.monotonic()
            wait_until(lambda: len([s for s in seen if s[0] > back + 2]) >= 20, 30, "load")
        finally:
            stop_load.set()
            for thread in threads:
                thread.join(30)
        during = [s for s in seen if killed < s[0] < back]
        wrong = [s for s in seen if s[1] != 200 or not s[3]]
        assert len(during) >= 20, len(during)
        assert not wrong, f"{len(wrong)} of {len(seen)}: {wrong[:5]}"
        print(
            f"Redis away {back - killed:.1f} s: {len(seen)} answers, {len(during)} while away, "
            "every one 200 and equal to its reference"
        )
        for answer in (registered, again):
            assert (
                answer.status_code == 200
                and answer.json()["data"] == reference["{ gpus { name } }"]
            )

        # Recovered: a persisted query registered through A is found through B (through Redis).
        query, sha = apq(f"back-{os.getpid()}")
        assert persisted(ports[0], sha, query).status_code == 200
        found = persisted(ports[1], sha)
        assert found.status_code == 200, found.text
        assert found.json()["data"] == reference["{ gpus { name } }"]
        keys = [key.decode() for key in redis_command(redis_port, "KEYS", "leadgreen:*")]
        for prefix in ("leadgreen:answer:", "leadgreen:bucket:", "leadgreen:apq:"):
            assert any(key.startswith(prefix) for key in keys), (prefix, keys[:20])
        for process in replicas:
            assert process.poll() is None
    finally:
        for process in replicas:
            stop(process)
        stop(redis_server)
