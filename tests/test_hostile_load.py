"""The hostile-load check (bench/hostile.py) in its short mode: several clients send the most
expensive requests the limits admit to `leadgreen serve` while a simple query's p99 stays under
100 ms and the server's memory within LEADGREEN_CACHE_MAX_BYTES of its baseline, during the
attack and after it; no hostile request gets a 500."""

from __future__ import annotations

import asyncio
import json
import subprocess
import sys
import time

import pytest

from graph.engine.prepared import off_the_loop
from tests.conftest import ROOT

pytestmark = pytest.mark.hostile


def test_the_hostile_load_check_passes(tmp_path) -> None:
    figures = tmp_path / "hostile.json"
    done = subprocess.run(
        [sys.executable, "-m", "bench.hostile", "--quick", "--json", str(figures)],
        cwd=ROOT,
        capture_output=True,
        text=True,
        timeout=300,
    )
    assert done.returncode == 0, done.stdout[-3000:] + done.stderr[-3000:]
    measured = json.loads(figures.read_text())
    assert measured["probe_ms"]["p99"] < 100
    assert measured["hostile_requests"] > 1000
    print(json.dumps(measured, indent=2))


def test_a_large_document_is_read_off_the_event_loop() -> None:
    """Parsing a large new document runs in the worker thread: the loop keeps ticking
    meanwhile, many times over (inline, it would tick once per document)."""
    from graphql import parse

    document = " ".join(f"query Q{i} {{ __typename }}" for i in range(1500))

    async def run() -> list[float]:
        gaps: list[float] = []
        done = asyncio.Event()

        async def tick() -> None:
            last = time.perf_counter()
            while not done.is_set():
                await asyncio.sleep(0.001)
                now = time.perf_counter()
                gaps.append(now - last)
                last = now

        ticker = asyncio.create_task(tick())
        for _ in range(3):
            await off_the_loop(len(document), parse, document)
        done.set()
        await ticker
        return sorted(gaps)

    gaps = asyncio.run(run())
    assert len(gaps) >= 10 and gaps[len(gaps) // 2] < 0.02, gaps
