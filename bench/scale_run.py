"""The pieces of a scale run (bench/scale_measure.py, bench/warm.py): the questions asked, a
timed ingest, an empty database, and a `leadgreen serve` started, waited for and asked; the
code of another revision checked out, and the starts of two codes interleaved.

Everything goes through LeadGreen's command line and HTTP, so a run measures whatever code the
`leadgreen` command runs: the installed one, or with `Leadgreen(code)` the packages of `code`.
"""

from __future__ import annotations

import ast
import asyncio
import io
import json
import os
import re
import shutil
import subprocess
import sys
import tarfile
import time
import urllib.error
import urllib.request
import uuid
from collections.abc import Iterator, Sequence
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import Any, TypeVar
from urllib.parse import urlsplit, urlunsplit

from bench.servers import BIN, ROOT, Server

POSTGRES_ADMIN_URL = os.environ.get(
    "LEADGREEN_BENCH_POSTGRES_URL", "postgresql+asyncpg://postgres@127.0.0.1:5432/postgres"
)
TASK = "lm-arena-chat"
SLUG = "qwen-3-8b"
LEADERBOARD = (
    '{ leaderboard(task: "lm-arena-chat") { entries { rank energyJoules model { slug } '
    "configuration { id gpuModel numGpus maxNumSeqs } } } }"
)
PARETO = (
    '{ paretoFrontier(task: "lm-arena-chat") { configurations { id medianItlMs '
    "energyPerTokenJoules } } }"
)
# The deployment planner over the whole task: every configuration of every model sized to the
# demand, costed and ranked (the first 10 plans answered), as issue 19 asks it to cost about
# as much as the leaderboard's answer.
PLAN = (
    '{ deploymentPlan(task: "lm-arena-chat", demand: {requestsPerSecond: 10}, '
    "site: {pue: 1.2, carbonIntensityGramsPerKwh: 400, electricityPricePerKwh: 0.15}) { "
    "totalCount plans { rank paretoOptimal replicas gpuCount energyPerDayKwh { lower upper } "
    "carbonPerDayKg { upper } costPerDay configuration { id gpuModel numGpus } } } }"
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

    def line(self) -> str:
        """The request as bench/graphql.lua reads it."""
        body = "" if self.body is None else " " + self.body.decode()
        return f"{self.method} {self.path}{body}"


def questions(code: Path) -> list[Question]:
    """The model page first: the first answer after /readyz is its. The plan when the code
    has the planner (a run of older code with `--code` asks the rest)."""
    planner = "deploymentPlan(" in (code / "schema.graphql").read_text()
    return [
        Question.graphql("model page", model_page_query(code), {"slug": SLUG}),
        Question.graphql("leaderboard", LEADERBOARD),
        Question.graphql("pareto", PARETO),
        *([Question.graphql("plan", PLAN)] if planner else []),
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
    """The number of items the answer holds (a plan's: the configurations it planned); raises
    on an error answer."""
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
    if "deploymentPlan" in data:
        return int(data["deploymentPlan"]["totalCount"])
    return sum(len(frontier["configurations"]) for frontier in data["paretoFrontier"])


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


# What a checkout of another revision needs to run `leadgreen` (its packages) and to be asked
# (questions(): its schema).
CHECKED_OUT = ("analysis", "db", "graph", "schema.graphql")


def checkout(code: str, directory: Path) -> Path:
    """The checkout `code` names: a directory holding one, else a revision of this repository
    (a commit, branch or tag), its packages and schema written into `directory` by `git
    archive` (no worktree is made or registered)."""
    if Path(code).is_dir():
        return Path(code)
    archived = subprocess.run(
        ["git", "-C", str(ROOT), "archive", "--format=tar", code, *CHECKED_OUT],
        capture_output=True,
    )
    if archived.returncode:
        raise SystemExit(f"--code {code}: not a directory nor a revision: {archived.stderr!r}")
    target = directory / f"code-{re.sub(r'[^A-Za-z0-9._-]', '_', code)}"
    with tarfile.open(fileobj=io.BytesIO(archived.stdout)) as archive:
        archive.extractall(target, filter="data")
    return target


def byte_compiled(code: Path) -> None:
    """Compile the packages of `code` to bytecode beforehand, as an installed package is: a
    start then reads each module's bytecode, whether or not the environment lets Python write
    it (PYTHONDONTWRITEBYTECODE), in both codes of a comparison alike."""
    packages = [name for name in CHECKED_OUT if (code / name).is_dir()]
    subprocess.run([sys.executable, "-m", "compileall", "-q", *packages], cwd=code, check=True)


T = TypeVar("T")


def rotated(items: Sequence[T], by: int) -> list[T]:
    """`items` starting `by` places along (round `by` of interleaved runs: whatever the
    machine's load does over a run falls on each item alike)."""
    shift = by % len(items)
    return [*items[shift:], *items[:shift]]


@dataclass(frozen=True)
class Start:
    """One start of `leadgreen serve`: seconds from the process's start to the first 200 of
    /readyz, the CPU seconds it had used by then, and the first answer's milliseconds."""

    ready_s: float
    cpu_s: float
    first_ms: float


def timed_start(server: Server, directory: Path, first: Question, timeout: float = 120.0) -> Start:
    """Start `server`, wait until it is ready, ask `first` at once (checked), stop it."""
    server.start(directory)
    try:
        ready = wait_ready(server, timeout)
        cpu = server.cpu_seconds()
        status, body, seconds = ask(server.port, first)
        check(first, status, body)
        return Start(ready, cpu, seconds * 1000)
    finally:
        server.stop()


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
            for leftover in (
                path,
                path.with_name(path.name + "-wal"),
                path.with_name(path.name + "-shm"),
            ):
                leftover.unlink(missing_ok=True)
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


def serve(leadgreen: Leadgreen, url: str, snapshot: Path, port: int, workers: int) -> Server:
    """`leadgreen serve` on `url`, the response cache off (every answer computed)."""
    command = [*leadgreen.command, "serve", "--database-url", url, "--port", str(port)]
    env = {
        **leadgreen.env,
        "LEADGREEN_CACHE": "off",
        "LEADGREEN_RATE_LIMIT": "false",
        "LEADGREEN_WORKERS": str(workers),
        "LEADGREEN_LOG_LEVEL": "warning",
        # Code that reads a release on its first request must not time out doing so.
        "LEADGREEN_REQUEST_TIMEOUT_SECONDS": "300",
        # Never fetched (the database holds a release), but never the network either.
        "LEADGREEN_SOURCE": str(snapshot),
    }
    return Server(f"serve-w{workers}", command, port, env)


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


def rss_mb(pid: int) -> float:
    for line in Path(f"/proc/{pid}/status").read_text().splitlines():
        if line.startswith("VmRSS:"):
            return int(line.split()[1]) / 1024
    return float("nan")


def children(pid: int) -> list[int]:
    """The process's children that serve (uvicorn's workers, under its supervisor; not the
    multiprocessing resource tracker)."""
    found: list[int] = []
    for task in Path(f"/proc/{pid}/task").iterdir():
        found += [int(p) for p in (task / "children").read_text().split()]
    return [p for p in found if b"resource_tracker" not in Path(f"/proc/{p}/cmdline").read_bytes()]
