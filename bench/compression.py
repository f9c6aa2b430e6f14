"""The compression levels' cost and size on real answers: the model page and a task's whole
table (graph/server/responses.py chose its levels from this table).

    .venv/bin/python -m bench.compression [--database-url URL]

Reads the answers from a database holding the real data (by default a new SQLite file with
the snapshot ingested), then times each level (the best of several runs).
"""

from __future__ import annotations

import argparse
import asyncio
import gzip
import sys
import tempfile
import timeit
from pathlib import Path

import brotli
import httpx

from bench import databases
from bench.__main__ import MANIFEST, SNAPSHOT
from bench.queries import DEFAULT_SLUG, TASK, TASK_TABLE
from graph.server.app import create_app
from graph.server.documents import MODEL_PAGE
from graph.settings import Settings

GZIP_LEVELS = (1, 3, 4, 5, 6, 9)
BROTLI_LEVELS = (0, 1, 2, 3, 4, 5, 6)


async def answers(database_url: str) -> dict[str, bytes]:
    app = create_app(Settings(database_url=database_url))
    transport = httpx.ASGITransport(app=app)
    identity = {"accept-encoding": "identity"}
    async with (
        app.router.lifespan_context(app),
        httpx.AsyncClient(transport=transport, base_url="http://bench") as client,
    ):
        page = {"query": MODEL_PAGE, "variables": {"slug": DEFAULT_SLUG}}
        table = {"query": TASK_TABLE, "variables": {"task": TASK}}
        return {
            "model page": (await client.post("/graphql", json=page, headers=identity)).content,
            "task table": (await client.post("/graphql", json=table, headers=identity)).content,
        }


def seconds(compress: object, body: bytes) -> float:
    runs = 20 if len(body) < 100_000 else 3
    timer = timeit.Timer(lambda: compress(body))  # type: ignore[operator]
    return min(timer.repeat(repeat=5, number=runs)) / runs


def row(name: str, body: bytes, coding: str, level: int, size: int, ms: float) -> str:
    return f"| {name} ({len(body):,} B) | {coding} | {level} | {size / len(body):.3f} | {ms:.2f} |"


def table(bodies: dict[str, bytes]) -> str:
    lines = ["| answer | coding | level | size / original | ms |", "|---|---|---:|---:|---:|"]
    for name, body in bodies.items():
        for level in GZIP_LEVELS:
            size = len(gzip.compress(body, compresslevel=level, mtime=0))
            ms = 1000 * seconds(lambda b, lv=level: gzip.compress(b, lv, mtime=0), body)
            lines.append(row(name, body, "gzip", level, size, ms))
        for quality in BROTLI_LEVELS:
            size = len(brotli.compress(body, quality=quality))
            ms = 1000 * seconds(lambda b, q=quality: brotli.compress(b, quality=q), body)
            lines.append(row(name, body, "br", quality, size, ms))
    return "\n".join(lines)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="bench.compression", description=__doc__.split("\n")[0])
    parser.add_argument("--database-url", help="a database holding the real data already")
    args = parser.parse_args(argv)
    with tempfile.TemporaryDirectory(prefix="leadgreen-compression-") as tmp:
        url = args.database_url
        if url is None:
            with databases.database("sqlite", Path(tmp)) as url:
                databases.ingest(url, SNAPSHOT, MANIFEST)
                bodies = asyncio.run(answers(url))
        else:
            bodies = asyncio.run(answers(url))
    print(table(bodies))
    return 0


if __name__ == "__main__":
    sys.exit(main())
