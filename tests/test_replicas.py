"""Many replicas, one truth: the topology of deploy/compose.yaml as processes on 127.0.0.1.

A PostgreSQL database of this run's own on the local server, a Redis database number of its
own on the local Redis, two `leadgreen serve` replicas (LEADGREEN_CACHE=redis, rate limiting
on, release poll 1 s) and nginx configured from deploy/nginx.conf (its upstream: the two
replicas). It shows that

(a) an ingest of a second snapshot, run while the replicas serve, is served by every replica
    within the poll interval, and no answer mixes releases; a subscriber of `releasePublished`
    on each replica and through nginx (the npm graphql-sse and graphql-ws clients, over SSE and
    WebSocket) gets it, with its changes, within the poll interval and a second;
(b) rate-limit buckets are shared: a client's spend through replica A is refused through B;
(c) a persisted query registered through A is found through B (and its answer is shared);
(e) warm GETs of the model page through nginx's cache (with the document in the URL, and as a
    persisted query) run at least at half the rate of a static file of the same bytes from the
    same nginx, asked with a URL as long (wrk -t1 -c32, interleaved rounds, median ratio), and
    an expired entry is revalidated with If-None-Match (the replica answers 304);
(d) SIGKILL of a replica under load through nginx costs the clients no failed request: nginx
    retries every request the dead replica had not begun to answer. A response whose header
    the replica had already written when it died (uvicorn writes header and body apart) cannot
    be retried by any proxy; such responses are counted and printed apart, anything else fails.
    (d) runs last: it leaves one replica.

LeadGreen is started only through its CLI; nothing of it is imported. Every wait is bounded,
every process started here is killed in a `finally`, the database is dropped and the Redis
database flushed. Run with
    .venv/bin/pytest -m replicas tests/test_replicas.py -p no:cacheprovider -s
"""

from __future__ import annotations

import asyncio
import contextlib
import hashlib
import http.client
import json
import os
import random
import re
import shutil
import signal
import subprocess
import sys
import tempfile
import threading
import time
import uuid
from collections import Counter
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any
from urllib.parse import quote, urlencode

import pytest
from graphql import parse
from graphql.utilities import strip_ignored_characters
from sqlalchemy.engine import make_url

from graph.engine.cost import actual_cost
from graph.engine.prepared import Prepared
from graph.server.documents import MODEL_PAGE as DOCUMENTED
from tests.live import free_port, subscriber, wait_until
from tests.reports import cost
from tests.test_cost import requested_cost

pytestmark = pytest.mark.replicas

ROOT = Path(__file__).resolve().parents[1]
DATA = ROOT.parent / "shared" / "data"
EARLIER = DATA / "ml-energy-leaderboard" / "2025-12-17"
LATER = DATA / "ml-energy-leaderboard" / "2026-02-16"
SEED = DATA / "seed" / "leadgreen-index-v1.json"
NGINX_CONF = ROOT / "deploy" / "nginx.conf"
POSTGRES_URL = os.environ.get(
    "LEADGREEN_TEST_POSTGRES_URL", "postgresql+asyncpg://postgres@127.0.0.1:5432/test"
)
REDIS_HOST, REDIS_PORT = "127.0.0.1", 6379

POLL_SECONDS = 1.0
# The watcher's bound is poll_seconds plus one SELECT; this much more for a busy 2-core machine.
POLL_SLACK = 0.5
CAPACITY = 4000  # a small bucket (the default is 250,000)
RESTORE_RATE = 2000.0
HTTP_MAX_AGE = 2  # short, so that the test sees nginx revalidate
WRK_SECONDS, WRK_ROUNDS = 2, 7
SLUG = "qwen-3-8b"
RELEASE_DATES = {1: "2025-12-17", 2: "2026-02-16"}
API_KEYS = [f"replicas-{name}" for name in ("a0", "a1", "a2", "b", "b-control", "c")] + [
    f"replicas-load-{i}" for i in range(8)
]

PROBE = """query Probe($slug: String!) {
  source { release { number lastUpdated } }
  model(slug: $slug) {
    modelId configurations { gpuModel numGpus maxNumSeqs outputThroughputTokensPerSec }
  }
}"""
SMALL = "{ gpus { name } }"
_NODE = (
    "id modelId gpuModel numGpus maxNumSeqs tensorParallel dataParallel expertParallel "
    "energyPerTokenJoules energyPerRequestJoules medianItlMs p90ItlMs p95ItlMs p99ItlMs "
    "outputThroughputTokensPerSec avgPowerWatts avgBatchSize avgOutputLen"
)
BIG = f"""{{ a: configurations(first: 500) {{ nodes {{ {_NODE} }} }}
  b: configurations(first: 500) {{ nodes {{ {_NODE} }} }} }}"""

# The app's model-page document as a client puts it in a GET's URL: without comments and
# insignificant whitespace (each space would be three bytes of the URL, every one of them read,
# hashed into nginx's cache key and logged per request).
MODEL_PAGE = strip_ignored_characters(DOCUMENTED)


def say(message: str) -> None:
    print(f"[replicas] {message}", flush=True)


# --- processes, ports, waits -------------------------------------------------------------


def leadgreen_command() -> list[str]:
    beside = Path(sys.executable).with_name("leadgreen")
    if beside.exists():
        return [str(beside)]
    found = shutil.which("leadgreen")
    if found:
        return [found]
    pytest.fail("the `leadgreen` command is not installed (pip install -e .)")


def stop(process: subprocess.Popen[bytes] | None) -> None:
    """End a process started here (and its session), politely first."""
    if process is None or process.poll() is not None:
        return
    with contextlib.suppress(ProcessLookupError):
        os.killpg(process.pid, signal.SIGTERM)
    try:
        process.wait(timeout=8)
    except subprocess.TimeoutExpired:
        with contextlib.suppress(ProcessLookupError):
            os.killpg(process.pid, signal.SIGKILL)
        process.wait(timeout=5)


# --- HTTP ---------------------------------------------------------------------------------


@dataclass
class Reply:
    status: int
    headers: dict[str, str]
    body: bytes

    def json(self) -> Any:
        return json.loads(self.body)


def request(
    port: int,
    method: str,
    target: str,
    body: Any = None,
    headers: dict[str, str] | None = None,
    *,
    conn: http.client.HTTPConnection | None = None,
    timeout: float = 15.0,
) -> Reply:
    """One request; with no `headers`, only Host is sent (as wrk does)."""
    own = conn is None
    conn = conn or http.client.HTTPConnection("127.0.0.1", port, timeout=timeout)
    try:
        conn.putrequest(method, target, skip_accept_encoding=True)
        payload = b""
        if body is not None:
            payload = json.dumps(body).encode()
            conn.putheader("Content-Type", "application/json")
            conn.putheader("Content-Length", str(len(payload)))
        for name, value in (headers or {}).items():
            conn.putheader(name, value)
        conn.endheaders(payload or None)
        response = conn.getresponse()
        data = response.read()
        return Reply(response.status, {k.lower(): v for k, v in response.getheaders()}, data)
    finally:
        if own:
            conn.close()


def graphql(
    port: int, query: str, variables: dict[str, Any] | None = None, key: str | None = None
) -> Reply:
    return request(
        port,
        "POST",
        "/graphql",
        {"query": query, "variables": variables or {}},
        {"X-API-Key": key} if key else {},
    )


def get_target(params: dict[str, Any]) -> str:
    encoded = {
        k: v if isinstance(v, str) else json.dumps(v, separators=(",", ":"))
        for k, v in params.items()
    }
    return "/graphql?" + urlencode(encoded, quote_via=quote)


# --- the data, read from the snapshots ------------------------------------------------------


def expected_rows(snapshot: Path, model_id: str) -> list[tuple[Any, ...]]:
    task = json.loads((snapshot / "tasks" / "lm-arena-chat.json").read_text())
    return sorted(
        (r["gpu_model"], r["num_gpus"], r["max_num_seqs"], r["output_throughput_tokens_per_sec"])
        for r in task["configurations"]
        if r["model_id"] == model_id
    )


def answer_rows(model: dict[str, Any]) -> list[tuple[Any, ...]]:
    return sorted(
        (c["gpuModel"], c["numGpus"], c["maxNumSeqs"], c["outputThroughputTokensPerSec"])
        for c in model["configurations"]
    )


# --- the topology -------------------------------------------------------------------------


@dataclass
class Topology:
    tmp: Path
    database_url: str
    redis_db: int
    ports: list[int]
    replicas: list[subprocess.Popen[bytes]]
    logs: list[Path]
    nginx_port: int = 0
    nginx: subprocess.Popen[bytes] | None = None
    nginx_prefix: Path | None = None
    env: dict[str, str] = field(default_factory=dict)

    @property
    def access_log(self) -> Path:
        assert self.nginx_prefix is not None
        return self.nginx_prefix / "logs" / "access.log"

    def ingest(self, snapshot: Path, timeout: float = 300) -> subprocess.CompletedProcess[str]:
        return subprocess.run(
            [
                *leadgreen_command(),
                "ingest",
                str(snapshot),
                "--manifest",
                str(SEED),
                "--database-url",
                self.database_url,
            ],
            env=self.env,
            capture_output=True,
            text=True,
            timeout=timeout,
            check=False,
        )


def _admin_dsn() -> str:
    return re.sub(r"^postgresql\+\w+://", "postgresql://", POSTGRES_URL)


def _admin(statement: str) -> None:
    import asyncpg

    async def run() -> None:
        conn = await asyncpg.connect(_admin_dsn(), timeout=10)
        try:
            await conn.execute(statement)
        finally:
            await conn.close()

    asyncio.run(run())


def _redis(db: int, command: str, *args: Any) -> Any:
    """One command on Redis database `db`, on a connection closed afterwards."""
    import redis

    with redis.Redis(host=REDIS_HOST, port=REDIS_PORT, db=db, socket_timeout=5) as client:
        return client.execute_command(command, *args)


def _pick_redis_db() -> int:
    """An empty Redis database number other than 0 (0 is everybody's default)."""
    try:
        reply = _redis(0, "CONFIG", "GET", "databases")  # {b"databases": b"16"}
        count = int(reply.get(b"databases", reply.get("databases", 16)))
    except Exception:
        count = 16
    numbers = list(range(1, count))
    random.shuffle(numbers)
    for number in numbers:
        if _redis(number, "DBSIZE") == 0:
            return number
    pytest.skip("no empty Redis database number to use")


def nginx_config(template: str, prefix: Path, listen: int, upstreams: list[int]) -> str:
    """deploy/nginx.conf with this run's listen port, upstream servers, log files, and a static
    file location for comparison; every other directive as deployed."""
    text = template
    logs = prefix / "logs"
    text = re.sub(r"(?m)^(\s*)error_log\s+[^;]+;", rf"\1error_log {logs}/error.log warn;", text)
    text = re.sub(
        r"(?m)^(\s*)access_log\s+/dev/stdout\s", rf"\1access_log {logs}/access.log ", text
    )
    text, listens = re.subn(
        r"(?m)^(\s*)listen\s+\d+([^;]*);", rf"\1listen 127.0.0.1:{listen}\2;", text
    )
    assert listens == 1, "deploy/nginx.conf: one `listen PORT;` expected"

    def servers(match: re.Match[str]) -> str:
        indent, params = match.group(1), match.group(2)
        return "".join(f"{indent}server 127.0.0.1:{port}{params};\n" for port in upstreams)

    text, count = re.subn(r"(?m)^(\s*)server\s+[\w.-]+:\d+([^;]*);\n", servers, text)
    assert count == 1, "deploy/nginx.conf: one upstream `server` line expected"
    static = (
        "        location /static/ {\n"
        f"            root {prefix};\n"
        "            default_type application/json;\n"
        "        }\n\n"
        "        location / {"
    )
    text, count = re.subn(r"(?m)^\s*location / \{", static, text, count=1)
    assert count == 1
    return text


@pytest.fixture(scope="module")
def topology() -> Iterator[Topology]:
    for tool in ("nginx", "wrk"):
        if shutil.which(tool) is None and not Path(f"/usr/sbin/{tool}").exists():
            pytest.skip(f"{tool} is not installed (apt-get install -y nginx-light wrk)")
    if not LATER.is_dir() or not EARLIER.is_dir():
        pytest.skip(f"no snapshots at {DATA}")
    try:
        _redis(0, "PING")
    except Exception as exc:
        pytest.skip(f"Redis is not reachable on {REDIS_HOST}:{REDIS_PORT}: {exc!r}")

    tmp = Path(tempfile.mkdtemp(prefix="leadgreen-replicas-"))
    tmp.chmod(0o755)  # nginx's workers read the static file
    name = f"leadgreen_replicas_{uuid.uuid4().hex[:10]}"
    created = False
    redis_db: int | None = None
    replicas: list[subprocess.Popen[bytes]] = []
    nginx: subprocess.Popen[bytes] | None = None
    topo: Topology | None = None
    try:
        _admin(f"CREATE DATABASE {name}")
        created = True
        database_url = make_url(POSTGRES_URL).set(database=name).render_as_string(False)
        redis_db = _pick_redis_db()
        env = {k: v for k, v in os.environ.items() if not k.startswith("LEADGREEN_")}
        env.update(
            LEADGREEN_CACHE="redis",
            LEADGREEN_REDIS_URL=f"redis://{REDIS_HOST}:{REDIS_PORT}/{redis_db}",
            LEADGREEN_RATE_LIMIT="true",
            # A small bucket; queries pay their cost only: the fee for reading a new document
            # is paid to each process that reads it (tests/test_adversarial_validation.py),
            # which would make the shared bucket's levels depend on which replica saw a
            # document first.
            LEADGREEN_LIMITS=f"standard,rate_limit_capacity={CAPACITY},"
            f"rate_limit_restore_rate={RESTORE_RATE},rate_limit_byte_cost=0",
            LEADGREEN_API_KEYS=",".join(API_KEYS),
            LEADGREEN_RELEASE_POLL_SECONDS=str(POLL_SECONDS),
            LEADGREEN_HTTP_MAX_AGE=str(HTTP_MAX_AGE),
            LEADGREEN_SOURCE=str(EARLIER),
            LEADGREEN_LOG_LEVEL="info",
            # nginx, as deploy/compose.yaml trusts it (tests/test_client_identity.py)
            LEADGREEN_TRUSTED_PROXIES="127.0.0.1",
        )
        say(f"database {name} on the local PostgreSQL; Redis database {redis_db}")
        topo = Topology(tmp, database_url, redis_db, [], [], [], env=env)

        started = time.monotonic()
        done = topo.ingest(EARLIER)
        assert done.returncode == 0, done.stderr
        summary = done.stdout.strip().splitlines()[-1]
        say(f"ingested 2025-12-17 in {time.monotonic() - started:.1f}s: {summary}")

        for index in range(2):
            port = free_port()
            log = tmp / f"replica-{index}.log"
            with log.open("wb") as out:
                replicas.append(
                    subprocess.Popen(
                        [
                            *leadgreen_command(),
                            "serve",
                            "--database-url",
                            database_url,
                            "--host",
                            "127.0.0.1",
                            "--port",
                            str(port),
                        ],
                        env=env,
                        stdout=out,
                        stderr=subprocess.STDOUT,
                        stdin=subprocess.DEVNULL,
                        start_new_session=True,
                    )
                )
            topo.ports.append(port)
            topo.logs.append(log)
        topo.replicas = replicas
        for port, process, log in zip(topo.ports, replicas, topo.logs, strict=True):

            def ready(
                port: int = port, process: subprocess.Popen[bytes] = process, log: Path = log
            ) -> bool:
                if process.poll() is not None:
                    raise AssertionError(f"replica on {port} exited:\n{log.read_text()[-3000:]}")
                return request(port, "GET", "/readyz", timeout=3).status == 200

            wait_until(ready, 60, f"the replica on port {port} to be ready")
        say(f"replicas A and B ready on ports {topo.ports}")

        prefix = tmp / "nginx"
        (prefix / "logs").mkdir(parents=True)
        (prefix / "static").mkdir()
        for path in (prefix, prefix / "logs", prefix / "static"):
            path.chmod(0o755)
        topo.nginx_prefix, topo.nginx_port = prefix, free_port()
        conf = prefix / "nginx.conf"
        conf.write_text(nginx_config(NGINX_CONF.read_text(), prefix, topo.nginx_port, topo.ports))
        nginx_bin = shutil.which("nginx") or "/usr/sbin/nginx"
        checked = subprocess.run(
            [nginx_bin, "-t", "-q", "-p", f"{prefix}/", "-c", str(conf)],
            capture_output=True,
            text=True,
            timeout=30,
            check=False,
        )
        assert checked.returncode == 0, checked.stderr
        with (prefix / "logs" / "stderr.log").open("wb") as errors:
            nginx = subprocess.Popen(
                [nginx_bin, "-p", f"{prefix}/", "-c", str(conf), "-g", "daemon off;"],
                stdout=subprocess.DEVNULL,
                stderr=errors,
                stdin=subprocess.DEVNULL,
                start_new_session=True,
            )
        topo.nginx = nginx

        def nginx_up() -> bool:
            if nginx.poll() is not None:
                raise AssertionError((prefix / "logs" / "error.log").read_text())
            return request(topo.nginx_port, "GET", "/readyz", timeout=3).status == 200

        wait_until(nginx_up, 20, "nginx")
        say(f"nginx (deploy/nginx.conf) on port {topo.nginx_port}, upstream {topo.ports}")
        yield topo
    finally:
        stop(nginx)
        for process in replicas:
            stop(process)
        if redis_db is not None:
            with contextlib.suppress(Exception):
                _redis(redis_db, "FLUSHDB")
        if created:
            _admin(f"DROP DATABASE IF EXISTS {name} WITH (FORCE)")
        if os.environ.get("LEADGREEN_REPLICAS_KEEP_LOGS"):
            say(f"logs kept in {tmp}")
        else:
            shutil.rmtree(tmp, ignore_errors=True)


# --- (a) a new release --------------------------------------------------------------------


@dataclass
class Probe:
    started: float
    ended: float
    status: int
    release: int | None
    date: str | None
    consistent: bool
    error: str = ""


def probe_loop(
    send: Callable[[], Reply],
    expected: dict[int, list[tuple[Any, ...]]],
    stop_at: threading.Event,
    out: list[Probe],
    pause: float,
) -> None:
    deadline = time.monotonic() + 120  # bounded whatever happens
    while not stop_at.is_set() and time.monotonic() < deadline:
        started = time.monotonic()
        try:
            reply = send()
            ended = time.monotonic()
            body = reply.json()
            release = body["data"]["source"]["release"]
            number, date = release["number"], release["lastUpdated"]
            rows = answer_rows(body["data"]["model"])
            consistent = (
                reply.status == 200
                and "errors" not in body
                and RELEASE_DATES.get(number) == date
                and rows == expected.get(number)
            )
            out.append(Probe(started, ended, reply.status, number, date, consistent))
        except Exception as exc:  # recorded, and fails the test below
            out.append(Probe(started, time.monotonic(), 0, None, None, False, repr(exc)))
        time.sleep(pause)


# A subscriber's selection: small, as the real releases' whole changes are large.
PUBLISHED = """subscription Published { releasePublished {
  release { number lastUpdated } previous { number lastUpdated }
  changes { from to filesRemoved } } }"""


def subscribe(protocol: str, port: int, log: Path) -> subprocess.Popen[str] | None:
    """A subscriber for one event (tests/live.py); None without Node.js."""
    if shutil.which("node") is None:
        return None
    return subscriber(protocol, port, log, PUBLISHED)


@pytest.fixture
def subscribers() -> Iterator[dict[str, subprocess.Popen[str]]]:
    """The subscribers a test starts (clients/subscribe.mjs), each stopped afterwards."""
    started: dict[str, subprocess.Popen[str]] = {}
    yield started
    for process in started.values():
        stop(process)  # type: ignore[arg-type]


def test_a_new_release_reaches_every_replica_within_the_poll_interval(
    topology: Topology, subscribers: dict[str, subprocess.Popen[str]]
) -> None:
    seed = json.loads(SEED.read_text())
    model_id = next(m["model_id"] for m in seed["models"] if m["slug"] == SLUG)
    expected = {1: expected_rows(EARLIER, model_id), 2: expected_rows(LATER, model_id)}
    assert expected[1] and expected[2] and expected[1] != expected[2]

    port_a, port_b = topology.ports
    for port in (port_a, port_b):
        body = graphql(port, PROBE, {"slug": SLUG}, API_KEYS[0]).json()
        assert body["data"]["source"]["release"] == {"number": 1, "lastUpdated": "2025-12-17"}
        assert answer_rows(body["data"]["model"]) == expected[1]

    senders: dict[str, Callable[[], Reply]] = {
        "replica A": lambda: graphql(port_a, PROBE, {"slug": SLUG}, API_KEYS[0]),
        "replica B": lambda: graphql(port_b, PROBE, {"slug": SLUG}, API_KEYS[1]),
        "nginx (POST)": lambda: graphql(topology.nginx_port, PROBE, {"slug": SLUG}, API_KEYS[2]),
    }
    results: dict[str, list[Probe]] = {name: [] for name in senders}
    ready: list[tuple[float, float, int]] = []  # /readyz straight from the database
    halt = threading.Event()

    def ready_loop() -> None:
        deadline = time.monotonic() + 120
        while not halt.is_set() and time.monotonic() < deadline:
            started = time.monotonic()
            with contextlib.suppress(Exception):
                release = request(port_a, "GET", "/readyz", timeout=5).json()["release"]
                ready.append((started, time.monotonic(), release))
            time.sleep(0.02)

    threads = [
        threading.Thread(target=probe_loop, args=(send, expected, halt, results[name], 0.05))
        for name, send in senders.items()
    ] + [threading.Thread(target=ready_loop)]
    for thread in threads:
        thread.start()
    # A subscriber on each replica, and two through nginx (SSE and WebSocket).
    places = {"replica A": port_a, "replica B": port_b, "nginx": topology.nginx_port}
    for name, protocol in (
        ("replica A", "sse"),
        ("replica B", "ws"),
        ("nginx", "sse"),
        ("nginx", "ws"),
    ):
        log = topology.tmp / f"subscriber-{len(subscribers)}.log"
        started_subscriber = subscribe(protocol, places[name], log)
        if started_subscriber is not None:
            subscribers[f"{name} ({protocol})"] = started_subscriber
    epoch = time.time() - time.monotonic()  # the clients' clock (ms since the epoch) to ours
    try:
        time.sleep(1.0)
        ingest_started = time.monotonic()
        done = topology.ingest(LATER)
        ingest_exit = time.monotonic()
        assert done.returncode == 0, done.stderr
        say(
            f"(a) ingested 2026-02-16 while serving in {ingest_exit - ingest_started:.2f}s: "
            f"{done.stdout.strip().splitlines()[-1]}"
        )
        wait_until(
            lambda: all(r and r[-1].release == 2 for r in results.values()),
            10,
            "every poller to see release 2",
        )
        time.sleep(POLL_SECONDS + 1.0)
    finally:
        halt.set()
        for thread in threads:
            thread.join(timeout=30)

    # The commit lies between the last /readyz that read release 1 and the first that read 2
    # (or the ingest's exit, whichever is earlier).
    last_old_ready = max(s for s, _, r in ready if r == 1)
    first_new_ready = min(e for _, e, r in ready if r == 2)
    commit_lo, commit_hi = last_old_ready, min(first_new_ready, ingest_exit)
    say(
        f"(a) commit of release 2 within [{commit_lo - ingest_started:.3f}s, "
        f"{commit_hi - ingest_started:.3f}s] of the ingest's start (bracketed by /readyz)"
    )
    for name, probes in results.items():
        bad = [p for p in probes if not p.consistent]
        assert not bad, f"{name}: answers that are not wholly one release: {bad[:5]}"
        order = [p.release for p in sorted(probes, key=lambda p: p.started)]
        first_new_at = order.index(2)
        # Back to release 1 after release 2: an older answer from the other replica, still
        # within its poll interval (nginx alternates between them).
        flips = sum(1 for r in order[first_new_at:] if r == 1)
        if name.startswith("replica"):
            assert flips == 0, f"{name}: went back to release 1"
        old = [p for p in probes if p.release == 1]
        new = [p for p in probes if p.release == 2]
        last_old_start = max(p.started for p in old)
        first_new_end = min(p.ended for p in new)
        counts = Counter(p.release for p in probes)
        say(
            f"(a) {name}: {len(probes)} answers ({counts[1]} of release 1, "
            f"{counts[2]} of release 2), each wholly one release; last release-1 answer asked "
            f"{last_old_start - commit_lo:+.3f}s after the commit (lower bound), first "
            f"release-2 answer {first_new_end - commit_lo:.3f}s after it (poll interval "
            f"{POLL_SECONDS:g}s); release 1 again after release 2: {flips}"
        )
        assert last_old_start <= commit_hi + POLL_SECONDS + POLL_SLACK, (
            f"{name} answered from release 1 {last_old_start - commit_hi:.3f}s after the commit"
        )
        assert first_new_end - commit_lo <= POLL_SECONDS + POLL_SLACK + 0.5, name
    for port in (port_a, port_b):
        release = graphql(port, "{ releases { number lastUpdated } }").json()["data"]["releases"]
        assert [r["lastUpdated"] for r in release] == ["2026-02-16", "2025-12-17"]

    # Each subscriber got release 2 and its changes from release 1, as the queries say, within
    # the poll interval (and a second) of the commit.
    changes = graphql(port_a, "{ changes(from: 1, to: 2) { from to filesRemoved } }").json()
    data = {
        "releasePublished": {
            "release": {"number": 2, "lastUpdated": "2026-02-16"},
            "previous": {"number": 1, "lastUpdated": "2025-12-17"},
            "changes": changes["data"]["changes"],
        }
    }
    # The subscription's estimate (charged once, when it began) and what the event holds.
    actual = actual_cost(Prepared(PUBLISHED, parse(PUBLISHED)), None, data)
    expected_event = {"data": data, "extensions": cost(requested_cost(PUBLISHED, None), actual)}
    for name, process in subscribers.items():
        out, _ = process.communicate(timeout=30)
        assert process.returncode == 0, (name, out)
        [line] = out.splitlines()
        event = json.loads(line)
        assert event["event"] == expected_event, name
        came = event["at"] / 1000 - epoch
        say(
            f"(a) subscriber through {name}: release 2 came within "
            f"[{came - commit_hi:.3f}s, {came - commit_lo:.3f}s] of the commit"
        )
        # Never provably later than the poll interval and a second (the commit's bracket is as
        # wide as a /readyz round while the ingest loads the machine).
        assert came - commit_hi <= POLL_SECONDS + 1.0, (name, came - commit_hi)


# --- (b) shared rate-limit buckets ----------------------------------------------------------


def test_b_rate_limit_buckets_are_shared(topology: Topology) -> None:
    port_a, port_b = topology.ports
    spender, control = "replicas-b", "replicas-b-control"
    big = graphql(port_a, BIG, key=spender)
    assert big.status == 200, big.body[:500]
    cost = big.json()["extensions"]["cost"]
    after_a = cost["throttleStatus"]["currentlyAvailable"]
    assert cost["throttleStatus"]["maximumAvailable"] == CAPACITY
    assert after_a < 0, cost  # the big query ran on a full bucket and left it in debt
    at_b = time.monotonic()
    refused = graphql(port_b, SMALL, key=spender)
    body = refused.json()
    assert refused.status == 429, (refused.status, body)
    error = body["errors"][0]["extensions"]
    assert error["code"] == "THROTTLED"
    retry_after = float(refused.headers["retry-after"])
    seen_by_b = body["extensions"]["cost"]["throttleStatus"]["currentlyAvailable"]
    other = graphql(port_b, SMALL, key=control)
    assert other.status == 200, other.body[:300]
    other_available = other.json()["extensions"]["cost"]["throttleStatus"]["currentlyAvailable"]
    say(
        f"(b) capacity {CAPACITY}, restore {RESTORE_RATE:g}/s: a query of actual cost "
        f"{cost['actualQueryCost']} through A left the client's bucket at {after_a}; through B "
        f"the same client was refused 429 THROTTLED (B sees {seen_by_b} available, Retry-After "
        f"{retry_after:g}s, retryAfter {error.get('retryAfter')}); another client through B: "
        f"200 with {other_available} available"
    )
    assert seen_by_b < 0 and other_available > CAPACITY // 2
    time.sleep(max(0.0, at_b + retry_after + 0.2 - time.monotonic()))
    again = wait_until(
        lambda: (r := graphql(port_b, SMALL, key=spender)).status == 200 and r,
        10,
        "the bucket to refill",
    )
    say(
        f"(b) after Retry-After the client is served through B again "
        f"({again.json()['extensions']['cost']['throttleStatus']['currentlyAvailable']} available)"
    )


# --- (c) persisted queries ------------------------------------------------------------------


def apq_params(sha: str, variables: dict[str, Any]) -> dict[str, Any]:
    return {
        "variables": variables,
        "extensions": {"persistedQuery": {"version": 1, "sha256Hash": sha}},
    }


def apq_query(nonce: str) -> tuple[str, str]:
    """A document of this run's own (a comment makes it new), and its hash."""
    query = f"# run {nonce}\nquery Apq($slug: String!) {{ model(slug: $slug) {{ slug name }} }}"
    return query, hashlib.sha256(query.encode()).hexdigest()


def register_apq(port: int, nonce: str) -> str:
    query, sha = apq_query(nonce)
    reply = request(
        port,
        "POST",
        "/graphql",
        {"query": query, **apq_params(sha, {"slug": SLUG})},
        {"X-API-Key": "replicas-c"},
    )
    assert reply.status == 200, reply.body[:300]
    assert reply.json()["data"]["model"]["slug"] == SLUG
    return sha


def test_c_persisted_query_registered_through_one_replica_is_found_through_the_other(
    topology: Topology,
) -> None:
    port_a, port_b = topology.ports
    nonce = uuid.uuid4().hex
    _, sha = apq_query(nonce)
    unknown = request(port_b, "GET", get_target(apq_params(sha, {"slug": SLUG})))
    assert unknown.json()["errors"][0]["extensions"]["code"] == "PERSISTED_QUERY_NOT_FOUND"
    assert register_apq(port_a, nonce) == sha
    target = get_target(apq_params(sha, {"slug": SLUG}))
    found = request(port_b, "GET", target, headers={"X-API-Key": "replicas-c"})
    assert found.status == 200, found.body[:300]
    body = found.json()
    assert "errors" not in body and body["data"]["model"]["slug"] == SLUG
    say(
        f"(c) hash {sha[:12]}...: through B before registering: PERSISTED_QUERY_NOT_FOUND; "
        f"registered by POST through A; through B by GET with the hash alone: 200, "
        f"model {body['data']['model']['name']!r}, X-Cache {found.headers.get('x-cache')} "
        f"(the answer A stored, from Redis)"
    )
    assert found.headers.get("x-cache") == "HIT"


# --- (e) nginx's cache against a static file ------------------------------------------------


def wrk(url: str, seconds: int) -> tuple[float, str]:
    out = subprocess.run(
        ["wrk", "-t1", "-c32", f"-d{seconds}s", url],
        capture_output=True,
        text=True,
        timeout=seconds + 30,
        check=True,
    ).stdout
    rate = float(re.search(r"Requests/sec:\s+([\d.]+)", out).group(1))  # type: ignore[union-attr]
    assert "Non-2xx" not in out and "Socket errors" not in out, out
    return rate, out


def test_e_warm_model_page_through_nginx_cache_runs_at_half_the_static_rate(
    topology: Topology,
) -> None:
    port = topology.nginx_port
    target = get_target({"query": MODEL_PAGE, "variables": {"slug": SLUG}})
    first = request(port, "GET", target)
    assert first.status == 200, first.body[:300]
    body = first.json()
    assert "errors" not in body and body["data"]["model"]["slug"] == SLUG
    assert body["data"]["source"]["release"]["lastUpdated"] in RELEASE_DATES.values()
    assert first.headers["cache-control"] == f"public, max-age={HTTP_MAX_AGE}"
    assert first.headers["etag"].startswith('W/"')
    second = request(port, "GET", target)
    assert second.headers.get("x-cache-status") == "HIT", second.headers
    assert second.body == first.body

    # An expired entry is revalidated: nginx asks with If-None-Match, the replica answers 304.
    def replica_304s() -> int:  # the replicas' request lines (JSON, graph/server/observability.py)
        lines = [line for log in topology.logs for line in log.read_text("utf-8").splitlines()]
        records = [json.loads(line) for line in lines if line.startswith("{")]
        wanted = ("request", "GET", "/graphql", 304)
        return sum(
            (r.get("event"), r.get("method"), r.get("path"), r.get("status")) == wanted
            for r in records
        )

    before = replica_304s()
    time.sleep(HTTP_MAX_AGE + 1.5)  # nginx's clock counts whole seconds
    stale = request(port, "GET", target)
    assert stale.status == 200 and stale.body == first.body
    assert stale.headers.get("x-cache-status") in ("STALE", "UPDATING", "REVALIDATED", "EXPIRED")
    revalidated = wait_until(
        lambda: (count := replica_304s()) > before and count, 10, "a 304 from a replica"
    )
    third = wait_until(
        lambda: (r := request(port, "GET", target)).headers.get("x-cache-status") == "HIT" and r,
        10,
        "the revalidated entry",
    )
    say(
        f"(e) model page GET through nginx: MISS, then HIT; after max-age ({HTTP_MAX_AGE}s) "
        f"{stale.headers.get('x-cache-status')}, nginx revalidated with If-None-Match "
        f"(304s from the replicas: {revalidated}), then {third.headers.get('x-cache-status')}"
    )
    # POST is never cached.
    posts = [graphql(port, SMALL, key="replicas-c") for _ in range(2)]
    assert all(p.status == 200 and p.headers.get("x-cache-status") != "HIT" for p in posts)
    # X-Request-Id is passed through (and returned).
    echoed = request(port, "GET", target, headers={"X-Request-Id": "replicas-e-1"})
    assert echoed.headers.get("x-request-id") == "replicas-e-1"

    # The same page as an automatic persisted query: a short URL (hash and variables).
    query_sha = hashlib.sha256(MODEL_PAGE.encode()).hexdigest()
    registered = request(
        topology.ports[1],
        "POST",
        "/graphql",
        {"query": MODEL_PAGE, **apq_params(query_sha, {"slug": SLUG})},
        {"X-API-Key": "replicas-c"},
    )
    assert registered.status == 200
    apq_target = get_target(apq_params(query_sha, {"slug": SLUG}))
    wait_until(
        lambda: request(port, "GET", apq_target).headers.get("x-cache-status") == "HIT",
        10,
        "the persisted model page in nginx's cache",
    )

    assert topology.nginx_prefix is not None
    static = topology.nginx_prefix / "static" / "model-page.json"
    static.write_bytes(first.body)
    static.chmod(0o644)
    assert request(port, "GET", "/static/model-page.json").body == first.body
    base = f"http://127.0.0.1:{port}"
    cached = {
        "model page (GET with the document) from nginx's cache": target,
        "model page (GET persisted query) from nginx's cache": apq_target,
    }
    # Each cached page is judged against the static file asked with a URL as long as its own
    # (a query string nginx ignores for a file): the same bytes both ways, so that the ratio
    # is what the cache costs, not what a longer request line costs wrk and nginx.
    static_name = "the same bytes as a static file"
    urls = {static_name: base + "/static/model-page.json"}
    against: dict[str, str] = {}
    for name, path in cached.items():
        padded = "/static/model-page.json?pad="
        urls[name] = base + path
        against[name] = f"{static_name}, a URL as long ({len(path)} bytes)"
        padded += "x" * max(0, len(path) - len(padded))
        assert request(port, "GET", padded).body == first.body
        urls[against[name]] = base + padded
    # Interleaved rounds (the order turned each round), each cached rate taken against the
    # static rate of its own round, and the median of those ratios judged: the machine is
    # shared, and another tenant's load comes and goes within seconds.
    rates: dict[str, list[float]] = {name: [] for name in urls}
    outputs: dict[str, str] = {}
    names = list(urls)
    for url in urls.values():  # warm-up, not counted: connections, buffers, page cache
        wrk(url, 1)
    for round_ in range(WRK_ROUNDS):
        for name in names[round_ % len(names) :] + names[: round_ % len(names)]:
            rate, outputs[name] = wrk(urls[name], WRK_SECONDS)
            rates[name].append(rate)
    medians: dict[str, float] = {}
    for name, values in rates.items():
        baseline = against.get(name, static_name)
        ratios = sorted(v / s for v, s in zip(values, rates[baseline], strict=True))
        medians[name] = ratios[len(ratios) // 2]
        say(
            f"(e) wrk -t1 -c32 -d{WRK_SECONDS}s, {WRK_ROUNDS} rounds, {len(first.body)} bytes: "
            f"{name}: "
            + ", ".join(f"{v:,.0f}" for v in values)
            + " req/s"
            + ("" if name not in against else f"; median ratio to {baseline} {medians[name]:.2f}")
        )
    for name, out in outputs.items():
        out = out.replace(urls[name], urls[name][:70] + ("..." if len(urls[name]) > 70 else ""))
        print(f"--- last wrk run: {name}\n{out.rstrip()}", flush=True)
    for name in against:
        assert medians[name] >= 0.5, f"{name}: median {medians[name]:.2f} of the static rate"


# --- (d) a replica killed under load --------------------------------------------------------


def test_d_replica_killed_under_load_costs_no_failed_request(topology: Topology) -> None:
    port_a, _ = topology.ports
    nonce = uuid.uuid4().hex
    sha = register_apq(port_a, nonce)
    port = topology.nginx_port
    duration, kill_at = 6.0, 2.0
    threads_n = 8
    results: list[list[tuple[float, bool, str, str]]] = [[] for _ in range(threads_n)]
    begin = time.monotonic()

    def load(index: int) -> None:
        conn = http.client.HTTPConnection("127.0.0.1", port, timeout=15)
        key = f"replicas-load-{index}"
        i = 0
        while time.monotonic() - begin < duration:
            i += 1
            slug = SLUG if i % 5 == 0 else f"no-such-model-{nonce[:8]}-{index}-{i}"
            target = get_target(apq_params(sha, {"slug": slug}))
            at = time.monotonic() - begin
            rid = f"replicas-d-{index}-{i}"
            try:
                headers = {"X-API-Key": key, "X-Request-Id": rid}
                reply = request(port, "GET", target, headers=headers, conn=conn)
                body = reply.json()
                ok = reply.status == 200 and "errors" not in body and "model" in body["data"]
                why = "" if ok else f"{reply.status} {reply.body[:200]!r}"
                results[index].append((at, ok, why, rid))
            except Exception as exc:
                results[index].append((at, False, repr(exc), rid))
                conn.close()
                conn = http.client.HTTPConnection("127.0.0.1", port, timeout=15)
        conn.close()

    threads = [threading.Thread(target=load, args=(i,)) for i in range(threads_n)]
    for thread in threads:
        thread.start()
    killed = topology.replicas[0]
    try:
        time.sleep(kill_at)
        os.kill(killed.pid, signal.SIGKILL)  # replica A, started by this test
        killed_at = time.monotonic() - begin
    finally:
        for thread in threads:
            thread.join(timeout=duration + 30)
    killed.wait(timeout=10)

    flat = [r for rs in results for r in rs]
    before = [r for r in flat if r[0] < killed_at]
    after = [r for r in flat if r[0] >= killed_at]

    def logged() -> list[str]:  # nginx writes its log buffer at least every second
        text = topology.access_log.read_text(errors="replace")
        return [line for line in text.splitlines() if " rid=replicas-d-" in line]

    lines = wait_until(lambda: len(found := logged()) >= len(flat) and found, 10, "nginx's log")
    entries: dict[str, tuple[list[str], list[str]]] = {}
    for line in lines:
        match = re.search(r'upstream="([^"]*)" ustatus="([^"]*)".* rid=(\S+)', line)
        if match:
            entries[match.group(3)] = (match.group(1).split(", "), match.group(2).split(", "))
    addr_a = f"127.0.0.1:{port_a}"
    retried = [e for e in entries.values() if len(e[0]) > 1]
    served_by_a = sum(1 for upstream, _ in entries.values() if upstream[-1] == addr_a)
    # A response whose header replica A had already written when it was killed (uvicorn writes
    # the header and the body separately) cannot be retried: nginx has forwarded the header.
    # Such responses are counted apart; any other failure fails the test.
    cut: list[tuple[Any, ...]] = []
    failed: list[tuple[Any, ...]] = []
    for at, _, why, rid in (r for r in flat if not r[1]):
        upstream, statuses = entries.get(rid, ([], []))
        mid_body = "IncompleteRead" in why or "RemoteDisconnected" in why
        if mid_body and upstream == [addr_a] and statuses == ["200"]:
            if killed_at - 1.0 <= at <= killed_at + 0.5:
                cut.append((round(at, 3), why, rid))
                continue
        failed.append((round(at, 3), why, rid, upstream, statuses))
    assert topology.nginx_prefix is not None
    error_log = (topology.nginx_prefix / "logs" / "error.log").read_text(errors="replace")
    premature = error_log.count("upstream prematurely closed connection while reading upstream")
    say(
        f"(d) {len(flat)} GET persisted-query requests through nginx from {threads_n} clients in "
        f"{duration:g}s; replica A SIGKILLed at {killed_at:.2f}s: {len(before)} before "
        f"({len(before) / killed_at:.0f}/s), {len(after)} after "
        f"({len(after) / (duration - killed_at):.0f}/s); nginx retried {len(retried)} on "
        f"replica B (e.g. {retried[:1]}); A had answered {served_by_a}; failed requests: "
        f"{len(failed)}; responses cut mid-body by the kill: {len(cut)} {cut} (nginx error log: "
        f"{premature} 'upstream prematurely closed connection while reading upstream')"
    )
    assert not failed, failed[:10]
    assert len(before) > 50 and len(after) > 50
    assert served_by_a > 0  # both replicas were serving before the kill
