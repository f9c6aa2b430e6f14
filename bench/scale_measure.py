"""Today's figures on K-times snapshots (bench/scale.py): ingest, start-up, first answers, memory.

For each K: write the K-times snapshot to a temporary directory, then for each backend: time
`leadgreen ingest` under /usr/bin/time -v (wall time, max RSS), start `leadgreen serve` on it
with the response cache off, time the start until /readyz answers 200, then ask each of four
questions five times in rounds (round 1 gives each question's first answer, rounds 2-5 its
later ones) and read the server's VmRSS. Prints a markdown table; everything it wrote is
deleted afterwards (PostgreSQL databases are created for the run and dropped).

It drives LeadGreen only through its command line and HTTP, so it measures whatever code the
`leadgreen` command runs: the installed one, or with --code DIR the packages in DIR.

    python -m bench.scale_measure --k 1,10,50 --backends sqlite,postgres
    python -m bench.scale_measure --quick          # K = 1, 2 on SQLite, for CI
"""

from __future__ import annotations

import argparse
import ast
import asyncio
import json
import os
import re
import shlex
import shutil
import subprocess
import sys
import tempfile
import time
import urllib.error
import urllib.request
import uuid
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from pathlib import Path
from statistics import median
from typing import Any
from urllib.parse import urlsplit, urlunsplit

from bench.scale import write_scaled
from bench.servers import BIN, ROOT, Server, free_port

SNAPSHOT = ROOT.parent / "shared" / "data" / "ml-energy-leaderboard" / "2026-02-16"
POSTGRES_ADMIN_URL = os.environ.get(
    "LEADGREEN_BENCH_POSTGRES_URL", "postgresql+asyncpg://postgres@127.0.0.1:5432/postgres"
)
TASK = "lm-arena-chat"
SLUG = "qwen-3-8b"
ROUNDS = 5
LEADERBOARD = (
    '{ leaderboard(task: "lm-arena-chat") { entries { rank energyJoules model { slug } '
    "configuration { id gpuModel numGpus maxNumSeqs } } } }"
)
PARETO = (
    '{ paretoFrontier(task: "lm-arena-chat") { configurations { id medianItlMs '
    "energyPerTokenJoules } } }"
)


def model_page_query(code: Path) -> str:
    """MODEL_PAGE as the code in `code` defines it, read from its source (not imported)."""
    for path in sorted((code / "graph").rglob("*.py")):
        text = path.read_text()
        if "MODEL_PAGE" not in text:
            continue
        for node in ast.parse(text).body:
            if (
                isinstance(node, ast.Assign)
                and any(isinstance(t, ast.Name) and t.id == "MODEL_PAGE" for t in node.targets)
                and isinstance(node.value, ast.Constant)
                and isinstance(node.value.value, str)
            ):
                return node.value.value
    raise SystemExit(f"no MODEL_PAGE string under {code / 'graph'}")


@dataclass(frozen=True)
class Question:
    name: str
    method: str
    path: str
    body: bytes | None = None

    @staticmethod
    def graphql(name: str, query: str, variables: dict[str, Any] | None = None) -> Question:
        payload = {"query": query, **({"variables": variables} if variables else {})}
        return Question(name, "POST", "/graphql", json.dumps(payload).encode())


def questions(code: Path) -> list[Question]:
    return [
        Question.graphql("model page", model_page_query(code), {"slug": SLUG}),
        Question.graphql("leaderboard", LEADERBOARD),
        Question.graphql("pareto", PARETO),
        Question("task page", "GET", f"/data/tasks/{TASK}.json"),
    ]


def ask(port: int, question: Question, timeout: float = 600.0) -> tuple[int, bytes, float]:
    """Status, body and seconds of one request on a new connection."""
    request = urllib.request.Request(
        f"http://127.0.0.1:{port}{question.path}",
        data=question.body,
        headers={"content-type": "application/json"} if question.body else {},
        method=question.method,
    )
    started = time.perf_counter()
    try:
        with urllib.request.urlopen(request, timeout=timeout) as response:
            status, body = response.status, response.read()
    except urllib.error.HTTPError as error:
        status, body = error.code, error.read()
    return status, body, time.perf_counter() - started


def check(question: Question, status: int, body: bytes) -> int:
    """The number of items the answer holds; raises on an error answer."""
    if status != 200:
        raise RuntimeError(f"{question.name}: HTTP {status}: {body[:500]!r}")
    document = json.loads(body)
    if question.method == "GET":
        return len(document["configurations"])
    if document.get("errors") or not document.get("data"):
        raise RuntimeError(f"{question.name}: {json.dumps(document)[:500]}")
    data = document["data"]
    if "model" in data:
        if data["model"] is None:
            raise RuntimeError(f"model page: no model {SLUG!r}")
        return len(data["model"]["configurations"])
    if "leaderboard" in data:
        return len(data["leaderboard"]["entries"])
    return sum(len(frontier["configurations"]) for frontier in data["paretoFrontier"])


@dataclass
class Timing:
    first: float = 0.0
    later: list[float] = field(default_factory=list)
    items: int = 0
    bytes: int = 0

    def cell(self) -> str:
        return f"{self.first * 1000:,.0f} / {median(self.later) * 1000:,.0f}"


@dataclass
class Result:
    k: int
    backend: str
    configurations: int
    snapshot_bytes: int
    ingest_seconds: float = 0.0
    ingest_rss_mb: float = 0.0
    ready_seconds: float = 0.0
    timings: dict[str, Timing] = field(default_factory=dict)
    server_rss_mb: float = 0.0


class Leadgreen:
    """The `leadgreen` command: the installed one, or the packages of another checkout."""

    def __init__(self, code: Path | None) -> None:
        self.code = code or ROOT
        if code is None:
            self.command = [str(BIN / "leadgreen")]
            self.env: dict[str, str] = {}
        else:
            self.command = [
                sys.executable,
                "-P",  # not the working directory first on sys.path: the packages of `code`
                "-c",
                "import sys; sys.argv[0] = 'leadgreen'; from graph.cli import main; main()",
            ]
            self.env = {"PYTHONPATH": str(code.resolve())}


def timed_ingest(
    leadgreen: Leadgreen, snapshot: Path, url: str, manifest: Path | None
) -> tuple[float, float]:
    """Wall seconds and max RSS (MB) of `leadgreen ingest`, as /usr/bin/time -v reports them."""
    command = [*leadgreen.command, "ingest", str(snapshot), "--database-url", url]
    if manifest is not None:
        command += ["--manifest", str(manifest)]
    env = {**os.environ, **leadgreen.env}
    time_binary = shutil.which("time", path="/usr/bin:/bin")
    if time_binary is None:  # no GNU time: the child's own rusage
        started = time.perf_counter()
        process = subprocess.Popen(command, env=env, cwd=ROOT, stdout=subprocess.DEVNULL)
        _, status, usage = os.wait4(process.pid, 0)
        if status:
            raise RuntimeError(f"leadgreen ingest failed ({status})")
        return time.perf_counter() - started, usage.ru_maxrss / 1024
    result = subprocess.run(
        [time_binary, "-v", *command], env=env, cwd=ROOT, capture_output=True, text=True
    )
    if result.returncode:
        raise RuntimeError(f"leadgreen ingest failed:\n{result.stdout}\n{result.stderr[-3000:]}")
    wall = re.search(r"Elapsed \(wall clock\) time.*: (?:(\d+):)?(\d+):([\d.]+)", result.stderr)
    rss = re.search(r"Maximum resident set size \(kbytes\): (\d+)", result.stderr)
    if wall is None or rss is None:
        raise RuntimeError(f"cannot read /usr/bin/time -v:\n{result.stderr[-2000:]}")
    hours, minutes, seconds = wall.groups()
    return int(hours or 0) * 3600 + int(minutes) * 60 + float(seconds), int(rss[1]) / 1024


def _postgres(statement: str) -> None:
    # A client of its own: bench/databases.py imports the db package.
    import asyncpg  # type: ignore[import-untyped]

    parts = urlsplit(POSTGRES_ADMIN_URL.replace("postgresql+asyncpg://", "postgresql://", 1))

    async def run() -> None:
        connection = await asyncpg.connect(urlunsplit(parts))
        try:
            await connection.execute(statement)
        finally:
            await connection.close()

    asyncio.run(run())


@contextmanager
def database(backend: str, directory: Path) -> Iterator[str]:
    """An empty database's URL: a SQLite file in `directory`, or a PostgreSQL database."""
    if backend == "sqlite":
        path = directory / "leadgreen.db"
        try:
            yield f"sqlite+aiosqlite:///{path}"
        finally:
            path.unlink(missing_ok=True)
        return
    if backend != "postgres":
        raise SystemExit(f"unknown backend {backend!r}")
    name = f"leadgreen_scale_{uuid.uuid4().hex[:8]}"
    _postgres(f"CREATE DATABASE {name}")
    try:
        parts = urlsplit(POSTGRES_ADMIN_URL)
        yield urlunsplit(parts._replace(path=f"/{name}"))
    finally:
        _postgres(f"DROP DATABASE {name} WITH (FORCE)")


def wait_ready(server: Server, timeout: float) -> float:
    """Seconds from the process start to the first 200 from /readyz."""
    assert server.process is not None
    ready = Question("readyz", "GET", "/readyz")
    deadline = time.perf_counter() + timeout
    while time.perf_counter() < deadline:
        if server.process.poll() is not None:
            raise RuntimeError(f"leadgreen serve exited: {server.tail()}")
        try:
            status, _, _ = ask(server.port, ready, timeout=5)
        except OSError:
            status = 0
        if status == 200:
            return time.perf_counter() - server.started_at
        time.sleep(0.01)
    raise RuntimeError(f"/readyz not 200 within {timeout} s: {server.tail()}")


def serve_and_ask(
    leadgreen: Leadgreen, url: str, snapshot: Path, directory: Path, result: Result
) -> None:
    port = free_port()
    command = [*leadgreen.command, "serve", "--database-url", url, "--port", str(port)]
    env = {
        **leadgreen.env,
        "LEADGREEN_CACHE": "off",
        "LEADGREEN_WORKERS": "1",
        "LEADGREEN_LOG_LEVEL": "warning",
        # Never fetched (the database holds a release), but never the network either.
        "LEADGREEN_SOURCE": str(snapshot),
    }
    server = Server(f"serve-{result.backend}-k{result.k}", command, port, env)
    server.start(directory)
    try:
        result.ready_seconds = wait_ready(server, timeout=900)
        asked = questions(leadgreen.code)
        result.timings = {q.name: Timing() for q in asked}
        for round_ in range(ROUNDS):
            for question in asked:
                status, body, seconds = ask(port, question)
                timing = result.timings[question.name]
                timing.items, timing.bytes = check(question, status, body), len(body)
                if round_ == 0:
                    timing.first = seconds
                else:
                    timing.later.append(seconds)
        result.server_rss_mb = server.rss_mb()
    finally:
        server.stop()


def measure(
    ks: list[int],
    backends: list[str],
    source: Path,
    leadgreen: Leadgreen,
    manifest: Path | None,
    log: Any = print,
) -> list[Result]:
    results = []
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
                    serve_and_ask(leadgreen, url, snapshot, directory, result)
                    log(f"K={k} {backend}: ready after {result.ready_seconds:.1f} s")
                results.append(result)
    return results


def table(results: list[Result]) -> str:
    names = list(results[0].timings) if results else []
    header = [
        "K",
        "backend",
        "configurations",
        "snapshot MB",
        "ingest s",
        "ingest max RSS MB",
        "serve: /readyz 200 after s",
        *(f"{n} ms first / later" for n in names),
        "server RSS MB",
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
            *(r.timings[n].cell() for n in names),
            f"{r.server_rss_mb:,.0f}",
        ]
        lines.append("| " + " | ".join(cells) + " |")
    sizes = ["", "Answers (items, bytes):", ""]
    for r in results:
        answered = ", ".join(f"{n} {t.items:,} / {t.bytes:,} B" for n, t in r.timings.items())
        sizes.append(f"- K={r.k} {r.backend}: {answered}")
    return "\n".join(lines + sizes)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(
        prog="python -m bench.scale_measure", description="LeadGreen on K-times snapshots."
    )
    parser.add_argument("--k", default="1,10,50", help="comma-separated K (default 1,10,50)")
    parser.add_argument(
        "--backends", default="sqlite", help="comma-separated: sqlite, postgres (default sqlite)"
    )
    parser.add_argument("--quick", action="store_true", help="K = 1, 2 on SQLite (for CI)")
    parser.add_argument("--source", type=Path, default=SNAPSHOT, help="the snapshot to scale")
    parser.add_argument("--manifest", type=Path, help="pass this manifest to leadgreen ingest")
    parser.add_argument(
        "--code",
        type=Path,
        help="run the graph/db packages of this directory (e.g. an export of a commit) "
        "instead of the installed leadgreen",
    )
    args = parser.parse_args(argv)
    ks = [1, 2] if args.quick else [int(k) for k in args.k.split(",")]
    backends = ["sqlite"] if args.quick else args.backends.split(",")
    leadgreen = Leadgreen(args.code)

    def log(message: str) -> None:
        print(message, file=sys.stderr, flush=True)

    results = measure(ks, backends, args.source, leadgreen, args.manifest, log)
    print(f"`python -m bench.scale_measure {shlex.join(argv or sys.argv[1:])}`")
    print(f"code: {'leadgreen (installed)' if args.code is None else args.code}\n")
    print(table(results))
    return 0


if __name__ == "__main__":
    sys.exit(main())
