"""Soak: a real `leadgreen serve` (uvicorn, one worker) on the real data, 32 connections on mixed
queries for LEADGREEN_SOAK_SECONDS (default 60), all on 127.0.0.1.

Marked `soak` and deselected by default: `LEADGREEN_SOAK_SECONDS=60 pytest -m soak -s`. It
asserts zero unexpected errors (a 5xx, a transport error, an `INTERNAL` or any error other than
the one the error-producing query asks for) and flat memory (server RSS from /proc/<pid>/status
every few seconds after a warm-up: the last third's maximum within 15 % of the first third's),
and prints req/s, p50 and p99 latency and the RSS samples for the README.
"""

from __future__ import annotations

import asyncio
import contextlib
import json
import os
import random
import statistics
import subprocess
import sys
import time
from collections import Counter
from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path

import httpx
import pytest

from graph.server.documents import MODEL_PAGE
from tests.live import answering, free_port, stop

pytestmark = pytest.mark.soak

ROOT = Path(__file__).resolve().parents[1]
DATA = ROOT.parent / "shared" / "data"
SNAPSHOT = DATA / "ml-energy-leaderboard" / "2026-02-16"
SEED = DATA / "seed" / "leadgreen-index-v1.json"
SECONDS = float(os.environ.get("LEADGREEN_SOAK_SECONDS", "60"))
CONNECTIONS = 32
WARMUP_SECONDS = min(15.0, max(3.0, SECONDS / 6))
SAMPLE_SECONDS = min(5.0, max(1.0, SECONDS / 30))
GROWTH = 1.15

LEADERBOARD = """query Board($task: String!, $itl: Float, $p: ItlPercentile!) {
  leaderboard(task: $task, constraints: { maxItlMs: $itl, itlPercentile: $p }) {
    task { name } entries { rank energyJoules latencyMs model { slug }
      configuration { gpuModel numGpus maxNumSeqs medianItlMs } }
  }
}"""
PAGE = """query Page($after: String, $field: ConfigurationField!, $task: String) {
  configurations(first: 25, after: $after, orderBy: { field: $field }, filter: { task: $task }) {
    totalCount pageInfo { hasNextPage endCursor }
    nodes { id modelId gpuModel numGpus maxNumSeqs energyPerTokenJoules medianItlMs }
  }
}"""
GPU = "{ gpus { name fullName architecture memoryGb tdpWatts } h100: gpus { name } }"
BAD = "query Bad($itl: Float) { leaderboard(constraints: { maxItlMs: $itl }) { maxItlMs } }"
TASKS = ["lm-arena-chat", "gpqa", "sourcegraph-fim", "image-chat", "video-chat"]
FIELDS = ["ID", "ENERGY_PER_TOKEN_JOULES", "MEDIAN_ITL_MS"]


@dataclass
class Tally:
    latencies: list[float] = field(default_factory=list)
    kinds: Counter[str] = field(default_factory=Counter)
    unexpected: list[str] = field(default_factory=list)
    rss_kib: list[tuple[float, int]] = field(default_factory=list)

    def fail(self, what: str) -> None:
        if len(self.unexpected) < 50:
            self.unexpected.append(what)
        self.kinds["unexpected"] += 1


def rss_kib(pid: int) -> int:
    for line in Path(f"/proc/{pid}/status").read_text().splitlines():
        if line.startswith("VmRSS:"):
            return int(line.split()[1])
    raise AssertionError(f"no VmRSS for {pid}")


@contextlib.contextmanager
def server(tmp: Path) -> Iterator[tuple[str, int]]:
    """`leadgreen serve` on a free port of 127.0.0.1 with the snapshot ingested; its URL and pid."""
    leadgreen = str(Path(sys.executable).parent / "leadgreen")
    db = tmp / "soak.db"
    subprocess.run(
        [leadgreen, "ingest", str(SNAPSHOT), "--manifest", str(SEED), "--database-url", str(db)],
        check=True,
        capture_output=True,
    )
    port = free_port()
    env = {**os.environ, "LEADGREEN_LOG_LEVEL": "warning"}
    log = tmp / "server.log"
    with log.open("wb") as out:
        process = subprocess.Popen(
            [leadgreen, "serve", "--database-url", str(db), "--source", str(SNAPSHOT),
             "--manifest", str(SEED), "--host", "127.0.0.1", "--port", str(port), "--workers", "1"],
            stdout=out,
            stderr=subprocess.STDOUT,
            env=env,
        )  # fmt: skip
    url = f"http://127.0.0.1:{port}"
    try:
        answering(f"{url}/healthz", process, log, timeout=60)
        yield url, process.pid
        assert process.poll() is None, "the server died: " + log.read_text()[-3000:]
    finally:
        stop(process, 15)


def check(tally: Tally, kind: str, response: httpx.Response, expect_error: str | None) -> None:
    where = f"{kind}: {response.status_code} {response.text[:300]}"
    if response.status_code != 200:
        tally.fail(where)
        return
    body = response.json()
    codes = [(e.get("extensions") or {}).get("code") for e in body.get("errors") or []]
    if expect_error is None and (codes or body.get("data") is None):
        tally.fail(where)
    elif expect_error is not None and codes != [expect_error]:
        tally.fail(where)


async def one_client(
    client: httpx.AsyncClient, slugs: list[str], tally: Tally, stop: float, rng: random.Random
) -> None:
    """One connection's loop: a mix of the model page (POST and GET), the leaderboard, pages
    of configurations (following cursors), a GPU lookup and an error."""
    cursor: str | None = None
    order, task = rng.choice(FIELDS), rng.choice(TASKS)
    while time.monotonic() < stop:
        roll = rng.random()
        expect: str | None = None
        start = time.perf_counter()
        try:
            if roll < 0.30:
                kind = "model page"
                response = await client.post(
                    "/graphql",
                    json={"query": MODEL_PAGE, "variables": {"slug": rng.choice(slugs)}},
                )
            elif roll < 0.40:
                kind = "model page GET"
                response = await client.get(
                    "/graphql",
                    params={
                        "query": MODEL_PAGE,
                        "variables": json.dumps({"slug": rng.choice(slugs)}),
                    },
                )
            elif roll < 0.55:
                kind = "leaderboard"
                variables = {
                    "task": rng.choice(TASKS),
                    "itl": rng.choice([None, 50.0, 100.0, 250.0, 500.0]),
                    "p": rng.choice(["P50", "P90", "P99"]),
                }
                response = await client.post(
                    "/graphql", json={"query": LEADERBOARD, "variables": variables}
                )
            elif roll < 0.85:
                kind = "configurations page"
                variables = {"after": cursor, "field": order, "task": task}
                response = await client.post(
                    "/graphql", json={"query": PAGE, "variables": variables}
                )
                if response.status_code == 200 and "data" in response.json():
                    info = response.json()["data"]["configurations"]["pageInfo"]
                    cursor = info["endCursor"] if info["hasNextPage"] else None
                    if cursor is None:
                        order, task = rng.choice(FIELDS), rng.choice(TASKS)
            elif roll < 0.95:
                kind = "gpus"
                response = await client.get("/graphql", params={"query": GPU})
            else:
                kind, expect = "error", "BAD_USER_INPUT"
                response = await client.post(
                    "/graphql",
                    json={"query": BAD, "variables": {"itl": -rng.randint(1, 1000)}},
                )
        except httpx.HTTPError as exc:
            tally.fail(f"transport: {exc!r}")
            continue
        tally.latencies.append(time.perf_counter() - start)
        tally.kinds[kind] += 1
        check(tally, kind, response, expect)


async def sample_rss(pid: int, tally: Tally, start: float, stop: float) -> None:
    while time.monotonic() < stop:
        tally.rss_kib.append((time.monotonic() - start, rss_kib(pid)))
        await asyncio.sleep(SAMPLE_SECONDS)


async def drive(url: str, pid: int) -> tuple[Tally, Tally, float]:
    """Warm up, then soak; the warm-up's tally, the soak's, and the soak's duration."""
    limits = httpx.Limits(max_connections=CONNECTIONS, max_keepalive_connections=CONNECTIONS)
    timeout = httpx.Timeout(30.0)
    async with httpx.AsyncClient(base_url=url, limits=limits, timeout=timeout) as client:
        index = (await client.get("/api/v1/index.json")).json()
        models = (await client.post("/graphql", json={"query": "{ models { slug } }"})).json()
        slugs = [m["slug"] for m in index["models"]] + [m["slug"] for m in models["data"]["models"]]
        warm, soak = Tally(), Tally()
        for tally, seconds in ((warm, WARMUP_SECONDS), (soak, SECONDS)):
            start = time.monotonic()
            stop = start + seconds
            tasks = [
                one_client(client, slugs, tally, stop, random.Random(i)) for i in range(CONNECTIONS)
            ]
            await asyncio.gather(sample_rss(pid, tally, start, stop), *tasks)
            duration = time.monotonic() - start
    return warm, soak, duration


def test_soak(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    if not SNAPSHOT.is_dir():
        pytest.skip("the real data is not in ../shared/data")
    with server(tmp_path) as (url, pid):
        warm, soak, duration = asyncio.run(drive(url, pid))
    latencies = sorted(soak.latencies)
    p50 = statistics.median(latencies) * 1000
    p99 = latencies[min(len(latencies) - 1, int(len(latencies) * 0.99))] * 1000
    samples = [kib for _, kib in soak.rss_kib]
    third = max(1, len(samples) // 3)
    first, last = max(samples[:third]), max(samples[-third:])
    report = [
        f"soak: {CONNECTIONS} connections, {duration:.0f} s after a {WARMUP_SECONDS:.0f} s warm-up,"
        f" leadgreen serve (1 worker, SQLite, 2026-02-16 snapshot) on 127.0.0.1",
        f"  requests: {len(latencies)} ({len(latencies) / duration:.0f} req/s); "
        + ", ".join(f"{k} {n}" for k, n in sorted(soak.kinds.items())),
        f"  latency: p50 {p50:.1f} ms, p99 {p99:.1f} ms",
        f"  unexpected errors: {soak.kinds['unexpected'] + warm.kinds['unexpected']}",
        f"  server RSS (MiB) every {SAMPLE_SECONDS:.0f} s: "
        + " ".join(f"{kib / 1024:.0f}" for kib in samples),
        f"  RSS first third max {first / 1024:.1f} MiB, last third max {last / 1024:.1f} MiB"
        f" ({(last / first - 1) * 100:+.1f} %)",
    ]
    with capsys.disabled():
        print("\n" + "\n".join(report))
    assert not warm.unexpected and not soak.unexpected, warm.unexpected + soak.unexpected
    assert len(samples) >= 3, samples
    assert last <= first * GROWTH, report[-1]
