"""LeadGreen on K-times snapshots (bench/scale.py): ingest, start-up, first answer, memory and
the latency of five questions, and how each grows with K; the deployment planner over the
whole task against the leaderboard, as a ratio within the same run.

For each K: write the K-times snapshot to a temporary directory, then for each backend: time
`leadgreen ingest` under /usr/bin/time -v (wall time, max RSS), start `leadgreen serve` on it
with the response cache off, time the start until /readyz answers 200, ask the model page at
once (the first answer), then each question `--asks` times in rounds (p50 of those), and read
the server's VmRSS. Prints a markdown table; everything it wrote is deleted afterwards
(PostgreSQL databases are created for the run and dropped). `--workers 1,2` also starts
`leadgreen serve --workers N` on the largest K and reports each worker's RSS and the cold model
page's requests per second under wrk (32 connections).

    python -m bench.scale_measure --k 1,10,50 --backends sqlite,postgres --workers 1,2
    python -m bench.scale_measure --quick          # K = 1, 3 on SQLite, a few minutes at most
"""

from __future__ import annotations

import argparse
import shlex
import sys
import tempfile
import time
from dataclasses import dataclass, field
from pathlib import Path
from statistics import median
from typing import Any

from bench import wrk
from bench.scale import write_scaled
from bench.scale_run import (
    Leadgreen,
    Question,
    ask,
    check,
    checkout,
    children,
    database,
    questions,
    rss_mb,
    serve,
    timed_ingest,
    wait_ready,
)
from bench.servers import ROOT, free_port

SNAPSHOT = ROOT.parent / "shared" / "data" / "ml-energy-leaderboard" / "2026-02-16"
# Costs that need not grow with the data: a later K's over K = 1's, at most (quick mode).
FLAT = ("first answer", "model page", "pareto")
ROOM = 3.0
SLACK_SECONDS = 0.010


@dataclass
class Timing:
    samples: list[float] = field(default_factory=list)
    items: int = 0
    bytes: int = 0

    @property
    def p50(self) -> float:
        return median(self.samples)


@dataclass
class Result:
    k: int
    backend: str
    configurations: int
    snapshot_bytes: int
    ingest_seconds: float = 0.0
    ingest_rss_mb: float = 0.0
    ready_seconds: float = 0.0
    first_answer: float = 0.0
    timings: dict[str, Timing] = field(default_factory=dict)
    server_rss_mb: float = 0.0

    def seconds(self, name: str) -> float:
        return self.first_answer if name == "first answer" else self.timings[name].p50


@dataclass
class Workers:
    workers: int
    ready_seconds: float
    rss_mb: list[float]
    rate: float
    p50_ms: float
    p99_ms: float
    failures: int


def ask_all(port: int, asked: list[Question], result: Result, asks: int) -> None:
    """The first answer (the model page, at once), then every question `asks` times."""
    status, body, result.first_answer = ask(port, asked[0])
    check(asked[0], status, body)
    result.timings = {q.name: Timing() for q in asked}
    for _ in range(asks):
        for question in asked:
            status, body, seconds = ask(port, question)
            timing = result.timings[question.name]
            timing.items, timing.bytes = check(question, status, body), len(body)
            timing.samples.append(seconds)


def measure(
    ks: list[int],
    backends: list[str],
    source: Path,
    leadgreen: Leadgreen,
    manifest: Path | None = None,
    log: Any = print,
    asks: int = 10,
    workers: list[int] | None = None,
) -> tuple[list[Result], list[Workers]]:
    results, scaled_out = [], []
    for k in ks:
        with tempfile.TemporaryDirectory(prefix=f"leadgreen-scale-k{k}-") as name:
            directory = Path(name)
            started = time.perf_counter()
            stats = write_scaled(source, directory / "snapshot", k)
            log(
                f"K={k}: snapshot of {stats.configurations} configurations, "
                f"{stats.bytes / 1e6:.1f} MB in {time.perf_counter() - started:.1f} s"
            )
            for backend in backends:
                result = Result(k, backend, stats.configurations, stats.bytes)
                with database(backend, directory) as url:
                    snapshot = directory / "snapshot"
                    result.ingest_seconds, result.ingest_rss_mb = timed_ingest(
                        leadgreen, snapshot, url, manifest
                    )
                    log(f"K={k} {backend}: ingest {result.ingest_seconds:.1f} s")
                    server = serve(leadgreen, url, snapshot, free_port(), 1)
                    server.start(directory)
                    try:
                        result.ready_seconds = wait_ready(server, timeout=900)
                        ask_all(server.port, questions(leadgreen.code), result, asks)
                        assert server.process is not None
                        result.server_rss_mb = rss_mb(server.process.pid)
                    finally:
                        server.stop()
                    log(f"K={k} {backend}: ready after {result.ready_seconds:.1f} s")
                    if workers and k == ks[-1] and backend == backends[0]:
                        for n in workers:
                            scaled_out.append(measure_workers(leadgreen, url, snapshot, n))
                            log(f"K={k} {backend}: {n} workers: {scaled_out[-1].rate:,.0f} req/s")
                results.append(result)
    return results, scaled_out


def measure_workers(leadgreen: Leadgreen, url: str, snapshot: Path, n: int) -> Workers:
    """`leadgreen serve --workers n`: each worker's RSS once all answer, and the cold model
    page (the models of the first copy in turn) under wrk."""
    with tempfile.TemporaryDirectory(prefix="leadgreen-scale-workers-") as name:
        directory = Path(name)
        server = serve(leadgreen, url, snapshot, free_port(), n)
        server.start(directory)
        try:
            ready = wait_ready(server, timeout=900)
            assert server.process is not None
            supervisor = server.process.pid
            pids = children(supervisor) if n > 1 else [supervisor]
            page = questions(leadgreen.code)[0]
            for _ in range(4 * n):  # every worker has answered (the kernel spreads accepts)
                check(page, *ask(server.port, page)[:2])
            requests = directory / "requests.txt"
            requests.write_text(page.line() + "\n")
            wrk.run(server.port, requests, 2, 32)  # warm-up
            run = wrk.run(server.port, requests, 8, 32)
            rss = [rss_mb(p) for p in pids]
            if n > 1:
                rss.append(rss_mb(supervisor))
            return Workers(n, ready, rss, run.rate, run.p50_ms, run.p99_ms, run.failures)
        finally:
            server.stop()


def table(results: list[Result]) -> str:
    names = list(results[0].timings) if results else []
    header = [
        "K",
        "backend",
        "configurations",
        "snapshot MB",
        "ingest s",
        "ingest peak RSS MB",
        "start to ready s",
        "first answer ms",
        "server RSS MB",
        *(f"{n} p50 ms" for n in names),
        *(["plan ÷ leaderboard"] if "plan" in names else []),
    ]
    lines = ["| " + " | ".join(header) + " |", "|" + "---|" * len(header)]
    for r in results:
        cells = [
            str(r.k),
            r.backend,
            f"{r.configurations:,}",
            f"{r.snapshot_bytes / 1e6:.1f}",
            f"{r.ingest_seconds:.1f}",
            f"{r.ingest_rss_mb:,.0f}",
            f"{r.ready_seconds:.1f}",
            f"{r.first_answer * 1000:,.1f}",
            f"{r.server_rss_mb:,.0f}",
            *(f"{r.timings[n].p50 * 1000:,.1f}" for n in names),
            *([f"{r.seconds('plan') / r.seconds('leaderboard'):.2f}"] if "plan" in names else []),
        ]
        lines.append("| " + " | ".join(cells) + " |")
    sizes = ["", "Answers (items, bytes):", ""]
    for r in results:
        answered = ", ".join(f"{n} {t.items:,} / {t.bytes:,} B" for n, t in r.timings.items())
        sizes.append(f"- K={r.k} {r.backend}: {answered}")
    return "\n".join(lines + sizes)


def workers_table(runs: list[Workers]) -> str:
    lines = [
        "| workers | start to ready s | RSS per worker (and supervisor) MB | model page cold req/s "
        "| p50 ms "
        "| p99 ms | failures |",
        "|---|---|---|---|---|---|---|",
    ]
    for w in runs:
        rss = " / ".join(f"{m:,.0f}" for m in w.rss_mb)
        lines.append(
            f"| {w.workers} | {w.ready_seconds:.1f} | {rss} | {w.rate:,.0f} | {w.p50_ms:.1f} "
            f"| {w.p99_ms:.1f} | {w.failures} |"
        )
    return "\n".join(lines)


def grown(results: list[Result]) -> list[str]:
    """The costs of FLAT that grew past ROOM times (plus SLACK_SECONDS) their K = 1 value."""
    found = []
    for backend in {r.backend for r in results}:
        mine = sorted((r for r in results if r.backend == backend), key=lambda r: r.k)
        base = mine[0]
        for later in mine[1:]:
            for name in FLAT:
                limit = ROOM * base.seconds(name) + SLACK_SECONDS
                if later.seconds(name) > limit:
                    found.append(
                        f"{backend} K={later.k}: {name} {later.seconds(name) * 1000:.1f} ms > "
                        f"{limit * 1000:.1f} ms ({ROOM}x K={base.k}'s + {SLACK_SECONDS * 1000} ms)"
                    )
    return found


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(
        prog="python -m bench.scale_measure", description="LeadGreen on K-times snapshots."
    )
    parser.add_argument("--k", default="1,10,50", help="comma-separated K (default 1,10,50)")
    parser.add_argument(
        "--backends", default="sqlite", help="comma-separated: sqlite, postgres (default sqlite)"
    )
    parser.add_argument("--asks", type=int, default=10, help="asks of each question (p50)")
    parser.add_argument("--workers", help="comma-separated worker counts, on the largest K")
    parser.add_argument("--quick", action="store_true", help="K = 1, 3 on SQLite (for CI)")
    parser.add_argument("--source", type=Path, default=SNAPSHOT, help="the snapshot to scale")
    parser.add_argument("--manifest", type=Path, help="pass this manifest to leadgreen ingest")
    parser.add_argument(
        "--code",
        help="run the packages of this directory, or of this revision of the repository "
        "(checked out for the run), instead of the installed leadgreen",
    )
    args = parser.parse_args(argv)
    ks = [1, 3] if args.quick else [int(k) for k in args.k.split(",")]
    backends = ["sqlite"] if args.quick else args.backends.split(",")
    workers = [int(n) for n in args.workers.split(",")] if args.workers else None

    def log(message: str) -> None:
        print(message, file=sys.stderr, flush=True)

    with tempfile.TemporaryDirectory(prefix="leadgreen-code-") as code:
        leadgreen = Leadgreen(None if args.code is None else checkout(args.code, Path(code)))
        results, scaled_out = measure(
            ks, backends, args.source, leadgreen, args.manifest, log, args.asks, workers
        )
    print(f"`python -m bench.scale_measure {shlex.join(argv or sys.argv[1:])}`")
    print(f"code: {'leadgreen (installed)' if args.code is None else args.code}\n")
    print(table(results))
    if scaled_out:
        print(f"\n`leadgreen serve --workers N` at K={ks[-1]} ({backends[0]}):\n")
        print(workers_table(scaled_out))
    problems = grown(results)
    for problem in problems:
        print(f"grew: {problem}")
    return 1 if args.quick and problems else 0


if __name__ == "__main__":
    sys.exit(main())
