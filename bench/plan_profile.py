"""The deployment planner against the leaderboard in one process, at K times the data: the
scale run's two questions (bench/scale_run.py's PLAN and LEADERBOARD) through the schema, as
the HTTP handler runs them (the release given, the catalog in memory), with no server or
network between; optionally a cProfile of the plans.

    python -m bench.plan_profile --k 1,50 [--asks 50] [--profile]

Each K: the K-times snapshot (bench/scale.py) ingested into SQLite, then the two questions
asked in turn `--asks` times after one ask of each; the table gives each one's median wall
time and their ratio. `--code DIR` runs the analysis, db and graph packages of DIR (e.g. an
export of a commit) instead of this checkout's, for a before and after on the same snapshots.
"""

from __future__ import annotations

import argparse
import asyncio
import cProfile
import os
import pstats
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable
from pathlib import Path
from statistics import median
from typing import Any

from bench.scale import write_scaled
from bench.scale_run import LEADERBOARD, PLAN, Leadgreen
from bench.servers import ROOT

SNAPSHOT = ROOT.parent / "shared" / "data" / "ml-energy-leaderboard" / "2026-02-16"


async def in_process(url: str, **settings: Any) -> tuple[Any, Callable[[], Any], Any]:
    """The schema over the database at `url`, a function making each request's context as the
    HTTP handler makes it (the latest release given, the catalogs shared), and the database
    engine to dispose of. Imported here, so that `--code` can choose the packages."""
    from db.database import create_engine, sessionmaker
    from db.reads import latest_release
    from graph.schema import build_schema
    from graph.schema.context import Context
    from graph.schema.memory import Catalogs
    from graph.settings import Settings

    engine = create_engine(url)
    make_session = sessionmaker(engine)
    schema, chosen, catalogs = build_schema(), Settings(database_url=url, **settings), Catalogs()
    async with make_session() as session:
        release = await latest_release(session)

    def new_context() -> Any:
        return Context(
            session=None,
            sessions=make_session,
            settings=chosen,
            _release=release,
            catalogs=catalogs,
        )

    return schema, new_context, engine


async def measure(url: str, asks: int, profile: cProfile.Profile | None) -> dict[str, float]:
    """The median seconds of each question, `asks` asks each in turn after one of each; then
    `asks` plans under `profile`, when given."""
    schema, new_context, engine = await in_process(url, manifest=None)

    async def ask(query: str) -> float:
        context = new_context()
        started = time.perf_counter()
        result = await schema.execute(query, context_value=context)
        seconds = time.perf_counter() - started
        if result.errors:
            raise RuntimeError(result.errors)
        return seconds

    samples: dict[str, list[float]] = {"leaderboard": [], "plan": []}
    for query in (LEADERBOARD, PLAN):
        await ask(query)
    for _ in range(asks):
        samples["leaderboard"].append(await ask(LEADERBOARD))
        samples["plan"].append(await ask(PLAN))
    if profile is not None:  # apart from the timed asks, which it would slow
        profile.enable()
        for _ in range(asks):
            await ask(PLAN)
        profile.disable()
    await engine.dispose()
    return {name: median(seconds) for name, seconds in samples.items()}


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m bench.plan_profile", description=__doc__)
    parser.add_argument("--k", default="1,50", help="comma-separated K (default 1,50)")
    parser.add_argument("--asks", type=int, default=50, help="asks of each question (median)")
    parser.add_argument("--profile", action="store_true", help="print a cProfile of the plans")
    parser.add_argument("--code", type=Path, help="run the packages of this directory")
    args = parser.parse_args(argv)
    leadgreen = Leadgreen(args.code)
    if args.code is not None:
        sys.path.insert(0, str(args.code.resolve()))
    print("| K | leaderboard ms | plan ms | plan ÷ leaderboard |\n|---:|---:|---:|---:|")
    for k in (int(k) for k in args.k.split(",")):
        with tempfile.TemporaryDirectory(prefix="leadgreen-plan-") as tmp:
            snapshot, url = Path(tmp) / "snapshot", f"sqlite+aiosqlite:///{tmp}/leadgreen.db"
            write_scaled(SNAPSHOT, snapshot, k)
            command = [*leadgreen.command, "ingest", str(snapshot), "--database-url", url]
            env = {**os.environ, **leadgreen.env}
            subprocess.run(command, check=True, capture_output=True, env=env, cwd=ROOT)
            profile = cProfile.Profile() if args.profile else None
            p50 = asyncio.run(measure(url, args.asks, profile))
        board, plan = p50["leaderboard"] * 1000, p50["plan"] * 1000
        print(f"| {k} | {board:.2f} | {plan:.2f} | {plan / board:.2f} |", flush=True)
        if profile is not None:
            pstats.Stats(profile, stream=sys.stdout).sort_stats("tottime").print_stats(15)
    return 0


if __name__ == "__main__":
    sys.exit(main())
