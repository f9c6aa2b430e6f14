"""Fetching a snapshot over HTTP: retries with backoff, clear errors, the same data as on disk.

Every request goes to a server of the test's own on 127.0.0.1 (tests/httpserver.py).
"""

from __future__ import annotations

import asyncio
import functools
import json
import os
from collections.abc import Awaitable, Callable, Iterator
from pathlib import Path
from typing import Any

import pytest
from click.testing import CliRunner
from sqlalchemy.ext.asyncio import AsyncEngine

import db.snapshot
from db.errors import IngestError
from db.fetch import Fetcher
from db.snapshot import load_snapshot
from graph.cli import main
from graph.settings import Settings
from tests import synthetic
from tests.conftest import ingest_dir, make_execute
from tests.httpserver import Fault, SnapshotServer
from tests.live import free_port

pytestmark = pytest.mark.anyio

TASK_FILE = f"tasks/{synthetic.TASK}.json"
TINY = f"models/acme__Tiny-1B__{synthetic.TASK}.json"
MIXTURE = f"models/acme__Mixture-8x2B__{synthetic.TASK}.json"
ALL_FILES = ["index.json", TASK_FILE, TINY, MIXTURE]

# Small enough that a test of every retry stays well under a second.
FAST: dict[str, Any] = {"timeout": 0.5, "attempts": 3, "backoff": 0.01}


@pytest.fixture(autouse=True)
def no_proxy(monkeypatch: pytest.MonkeyPatch) -> None:
    """httpx honours proxy variables; these tests talk to 127.0.0.1 directly."""
    for name in list(os.environ):
        if name.lower() in ("http_proxy", "https_proxy", "all_proxy"):
            monkeypatch.delenv(name)


@pytest.fixture
def fast_defaults(monkeypatch: pytest.MonkeyPatch) -> None:
    """load_snapshot builds its Fetcher with the production defaults; make them small."""
    monkeypatch.setattr(db.snapshot, "Fetcher", functools.partial(Fetcher, **FAST))


@pytest.fixture
def snapshot_root(tmp_path: Path) -> Path:
    return synthetic.write(tmp_path / "snapshot", synthetic.documents())


@pytest.fixture
def server(snapshot_root: Path) -> Iterator[SnapshotServer]:
    with SnapshotServer(snapshot_root) as server:
        yield server


@pytest.fixture
def closed_port() -> int:
    """A port on 127.0.0.1 nobody listens on (just released by us)."""
    return free_port()


async def fetch(url: str, path: str, **options: Any) -> bytes:
    # A hang guard: only the fetcher's own time limit ends a hang (Fault.hang answers nothing).
    async with asyncio.timeout(30), Fetcher(url, **(FAST | options)) as fetcher:
        return (await fetcher.get(path)).raw


def recording(waits: list[float]) -> Callable[[float], Awaitable[None]]:
    """A fetcher's `sleep` that keeps the backoff's waits instead of waiting them out."""

    async def sleep(seconds: float) -> None:
        waits.append(seconds)

    return sleep


async def fetch_error(url: str, path: str, **options: Any) -> IngestError:
    with pytest.raises(IngestError) as info:
        await fetch(url, path, **options)
    return info.value


# --- the same data as from the directory -----------------------------------------------------


async def test_url_gives_the_same_snapshot_as_the_directory(
    server: SnapshotServer, snapshot_root: Path, fast_defaults: None
) -> None:
    from_url = await load_snapshot(server.url)
    from_dir = await load_snapshot(str(snapshot_root))

    assert from_url.digest == from_dir.digest
    assert from_url.index == from_dir.index
    assert from_url.files == from_dir.files
    assert from_url.tasks() == from_dir.tasks()
    assert from_url.location == server.url
    assert from_url.warnings == []
    assert {path: server.count(path) for path in ALL_FILES} == dict.fromkeys(ALL_FILES, 1)


async def test_trailing_slash_in_the_url(server: SnapshotServer, snapshot_root: Path) -> None:
    async with Fetcher(server.url + "/", **FAST) as fetcher:
        fetched = await fetcher.get("index.json")
    assert fetched.raw == (snapshot_root / "index.json").read_bytes()
    assert fetched.data == synthetic.index()


async def test_ingest_from_url_serves_the_same_data_as_from_directory(
    server: SnapshotServer,
    snapshot_root: Path,
    engine: AsyncEngine,
    settings: Settings,
    fast_defaults: None,
) -> None:
    report = await ingest_dir(engine, server.url)
    assert not report.unchanged
    data = await make_execute(engine, settings)(
        """{ source { name dataUrl release { number location digest } }
             configurations(first: 50) { nodes { modelId gpuModel maxNumSeqs
               energyPerTokenJoules medianItlMs } } }"""
    )
    assert data["source"] == {
        "name": "ML.ENERGY Leaderboard",
        "dataUrl": f"{server.url}/tasks/lm-arena-chat.json",
        "release": {"number": report.release_id, "location": server.url, "digest": report.digest},
    }
    assert data["configurations"]["nodes"] == [
        {
            "modelId": row["model_id"],
            "gpuModel": row["gpu_model"],
            "maxNumSeqs": row["max_num_seqs"],
            "energyPerTokenJoules": row["energy_per_token_joules"],
            "medianItlMs": row["median_itl_ms"],
        }
        for row in synthetic.ROWS
    ]

    # The same files from the directory are the same data: nothing new is stored.
    again = await ingest_dir(engine, snapshot_root)
    assert (again.unchanged, again.release_id, again.digest) == (
        True,
        report.release_id,
        report.digest,
    )


async def test_ingest_from_url_failing_midway_changes_nothing(
    server: SnapshotServer,
    snapshot_root: Path,
    engine: AsyncEngine,
    settings: Settings,
    tmp_path: Path,
    fast_defaults: None,
) -> None:
    await ingest_dir(engine, snapshot_root)
    query = "{ source { release { number digest } } configurations(first: 50) { nodes { id } } }"
    before = await make_execute(engine, settings)(query)

    # Another snapshot on the server, whose second model file is never served.
    files = synthetic.documents()
    files["index.json"]["last_updated"] = "2030-02-01"
    synthetic.write(snapshot_root / "next", files)
    server.fail(f"next/{MIXTURE}", Fault.http(503), times=None)
    with pytest.raises(IngestError) as info:
        await ingest_dir(engine, f"{server.url}/next")

    assert str(info.value) == f"{MIXTURE}: HTTP 503 from {server.url}/next/{MIXTURE}"
    assert server.count(f"next/{MIXTURE}") == FAST["attempts"]
    assert await make_execute(engine, settings)(query) == before


# --- retries ---------------------------------------------------------------------------------


@pytest.mark.parametrize("status", [500, 502, 503, 504, 429])
async def test_transient_status_is_retried(server: SnapshotServer, status: int) -> None:
    server.fail("index.json", Fault.http(status), times=2)
    assert json.loads(await fetch(server.url, "index.json")) == synthetic.index()
    assert server.count("index.json") == 3


async def test_connection_reset_is_retried(server: SnapshotServer) -> None:
    server.fail("index.json", Fault.reset(), times=2)
    assert json.loads(await fetch(server.url, "index.json")) == synthetic.index()
    assert server.count("index.json") == 3


async def test_truncated_body_is_retried(server: SnapshotServer) -> None:
    server.fail(TASK_FILE, Fault.truncate(), times=1)
    assert json.loads(await fetch(server.url, TASK_FILE))["task"] == synthetic.TASK
    assert server.count(TASK_FILE) == 2


async def test_timeout_is_retried(server: SnapshotServer) -> None:
    """The first request is never answered: its time limit ends it, and the second answers."""
    server.fail("index.json", Fault.hang(), times=1)
    assert json.loads(await fetch(server.url, "index.json", timeout=0.3)) == synthetic.index()
    assert server.count("index.json") == 2


async def test_load_snapshot_retries_each_file(
    server: SnapshotServer, snapshot_root: Path, fast_defaults: None
) -> None:
    for path in ALL_FILES:
        server.fail(path, Fault.http(500), times=2)
    snapshot = await load_snapshot(server.url)
    assert snapshot.digest == (await load_snapshot(str(snapshot_root))).digest
    assert {path: server.count(path) for path in ALL_FILES} == dict.fromkeys(ALL_FILES, 3)


async def test_backoff_grows_between_attempts(server: SnapshotServer) -> None:
    server.fail("index.json", Fault.http(500), times=None)
    waits: list[float] = []
    await fetch_error(server.url, "index.json", attempts=3, backoff=0.1, sleep=recording(waits))
    # Exponential: 0.1 s, then 0.2 s (tenacity's multiplier * 2^n), between the three attempts.
    assert (waits, server.count("index.json")) == ([0.1, 0.2], 3)


# --- failures --------------------------------------------------------------------------------


@pytest.mark.parametrize("status", [500, 503, 429])
async def test_persistent_status_fails_after_every_attempt(
    server: SnapshotServer, status: int
) -> None:
    server.fail("index.json", Fault.http(status), times=None)
    error = await fetch_error(server.url, "index.json")
    assert str(error) == f"index.json: HTTP {status} from {server.url}/index.json"
    assert (error.file, error.row, error.field) == ("index.json", None, None)
    assert server.count("index.json") == FAST["attempts"]


async def test_one_attempt_means_one_request(server: SnapshotServer) -> None:
    server.fail("index.json", Fault.http(500), times=None)
    await fetch_error(server.url, "index.json", attempts=1)
    assert server.count("index.json") == 1


@pytest.mark.parametrize("status", [400, 401, 403, 404, 410])
async def test_client_error_is_final(server: SnapshotServer, status: int) -> None:
    server.fail(TINY, Fault.http(status), times=None)
    error = await fetch_error(server.url, TINY)
    assert str(error) == f"{TINY}: HTTP {status} from {server.url}/{TINY}"
    assert server.count(TINY) == 1


async def test_missing_file_names_its_path(server: SnapshotServer, fast_defaults: None) -> None:
    with pytest.raises(IngestError) as info:
        await load_snapshot(f"{server.url}/no-such-snapshot")
    url = f"{server.url}/no-such-snapshot/index.json"
    assert str(info.value) == f"index.json: HTTP 404 from {url}"
    assert server.count("no-such-snapshot/index.json") == 1


async def test_missing_model_file_over_http(
    server: SnapshotServer, snapshot_root: Path, fast_defaults: None
) -> None:
    (snapshot_root / MIXTURE).unlink()
    with pytest.raises(IngestError) as info:
        await load_snapshot(server.url)
    assert str(info.value) == f"{MIXTURE}: HTTP 404 from {server.url}/{MIXTURE}"
    assert server.count(MIXTURE) == 1


async def test_unreachable(closed_port: int) -> None:
    """Refused: every attempt made, the backoff's waits between them, then the error."""
    url = f"http://127.0.0.1:{closed_port}"
    waits: list[float] = []
    error = await fetch_error(url, "index.json", sleep=recording(waits))
    assert str(error).startswith(f"index.json: unreachable: {url}/index.json (ConnectError: ")
    assert (error.file, waits) == ("index.json", [0.01, 0.02])


async def test_unreachable_snapshot(closed_port: int, fast_defaults: None) -> None:
    url = f"http://127.0.0.1:{closed_port}/data"
    with pytest.raises(IngestError, match=r"^index\.json: unreachable: http://127\.0\.0\.1:"):
        await load_snapshot(url)


async def test_timeout(server: SnapshotServer) -> None:
    """Never answered: each attempt ends at the time limit (ReadTimeout), and so does the fetch."""
    server.fail("index.json", Fault.hang(), times=None)
    error = await fetch_error(server.url, "index.json", timeout=0.3, attempts=2)
    assert str(error).startswith(f"index.json: unreachable: {server.url}/index.json (ReadTimeout")
    assert server.count("index.json") == 2


async def test_timeout_message_has_a_detail(server: SnapshotServer) -> None:
    """An httpx error without a message of its own still reads as a sentence."""
    server.fail("index.json", Fault.hang(), times=None)
    error = await fetch_error(server.url, "index.json", timeout=0.3, attempts=1)
    assert str(error) == (
        f"index.json: unreachable: {server.url}/index.json (ReadTimeout: no detail)"
    )


async def test_connection_reset_every_time(server: SnapshotServer) -> None:
    server.fail("index.json", Fault.reset(), times=None)
    error = await fetch_error(server.url, "index.json")
    assert str(error).startswith(f"index.json: unreachable: {server.url}/index.json (")
    assert server.count("index.json") == FAST["attempts"]


async def test_truncated_body_every_time(server: SnapshotServer) -> None:
    server.fail(TASK_FILE, Fault.truncate(), times=None)
    error = await fetch_error(server.url, TASK_FILE)
    size = len((server.root or Path()).joinpath(TASK_FILE).read_bytes())
    assert str(error) == (
        f"{TASK_FILE}: unreachable: {server.url}/{TASK_FILE} (RemoteProtocolError: peer closed "
        f"connection without sending complete message body (received {size // 2} bytes, "
        f"expected {size}))"
    )
    assert server.count(TASK_FILE) == FAST["attempts"]


async def test_invalid_json_names_line_and_column(server: SnapshotServer) -> None:
    server.fail(TASK_FILE, Fault.send(b'{"task": "lm-arena-chat",\n "configurations": [,]}'))
    error = await fetch_error(server.url, TASK_FILE)
    assert str(error) == f"{TASK_FILE}: malformed JSON: Expecting value at line 2 column 21"
    assert server.count(TASK_FILE) == 1  # a bad document is not fetched again


async def test_invalid_json_in_a_snapshot(server: SnapshotServer, fast_defaults: None) -> None:
    server.fail(TINY, Fault.send(b'{"model_id": "acme/Tiny-1B", '))
    with pytest.raises(IngestError) as info:
        (await load_snapshot(server.url)).tasks()
    assert str(info.value) == (
        f"{TINY}: malformed JSON: Expecting property name enclosed in double quotes "
        "at line 1 column 30"
    )


async def test_not_utf8(server: SnapshotServer) -> None:
    server.fail("index.json", Fault.send(b'{"a": "\xff"}'))
    error = await fetch_error(server.url, "index.json")
    assert str(error) == "index.json: not UTF-8 text (invalid start byte at byte 7)"


async def test_error_status_with_a_json_body_is_still_an_error(server: SnapshotServer) -> None:
    server.fail(
        "index.json", Fault.send(json.dumps(synthetic.index()).encode(), status=500), times=None
    )
    error = await fetch_error(server.url, "index.json")
    assert str(error) == f"index.json: HTTP 500 from {server.url}/index.json"


async def test_validation_over_http_names_file_row_and_field(
    server: SnapshotServer, snapshot_root: Path, fast_defaults: None
) -> None:
    files = synthetic.documents()
    files[TASK_FILE]["configurations"][3]["energy_per_token_joules"] = -1.0
    synthetic.write(snapshot_root, files)
    with pytest.raises(IngestError) as info:
        (await load_snapshot(server.url)).tasks()
    assert str(info.value) == (
        f"{TASK_FILE}, row 3, field 'configurations[3].energy_per_token_joules': "
        "Input should be greater than or equal to 0 (got -1.0)"
    )


async def test_failed_fetch_leaves_no_request_running(server: SnapshotServer) -> None:
    """When one file fails, the requests for the others are cancelled, not left running."""
    server.fail(TINY, Fault.hang(), times=None)
    server.fail(MIXTURE, Fault.http(404), times=None)
    with pytest.raises(IngestError, match="HTTP 404"):
        async with Fetcher(server.url, **FAST) as fetcher:
            await fetcher.get_many([TINY, MIXTURE])
    running = [
        task
        for task in asyncio.all_tasks()
        if task is not asyncio.current_task()
        and getattr(task.get_coro(), "__qualname__", "") == "Fetcher.get"
    ]
    try:
        assert running == []
    finally:
        for task in running:
            task.cancel()
        await asyncio.gather(*running, return_exceptions=True)


async def test_fetcher_must_be_entered(server: SnapshotServer) -> None:
    fetcher = Fetcher(server.url, **FAST)
    with pytest.raises(AssertionError, match="async context manager"):
        await fetcher.get("index.json")


async def test_ingest_from_unreachable_url_changes_nothing(
    engine: AsyncEngine,
    snapshot_root: Path,
    settings: Settings,
    closed_port: int,
    fast_defaults: None,
) -> None:
    first = await ingest_dir(engine, snapshot_root)
    query = "{ source { release { number digest } } configurations(first: 50) { totalCount } }"
    before = await make_execute(engine, settings)(query)
    with pytest.raises(IngestError, match=r"^index\.json: unreachable: "):
        await ingest_dir(engine, f"http://127.0.0.1:{closed_port}/data")
    assert await make_execute(engine, settings)(query) == before
    # The stored release is still the only one: ingesting it again changes nothing.
    again = await ingest_dir(engine, snapshot_root)
    assert (again.unchanged, again.release_id) == (True, first.release_id)


# --- the command, against the server ---------------------------------------------------------


@pytest.fixture
def cli(monkeypatch: pytest.MonkeyPatch) -> CliRunner:
    for name in list(os.environ):
        if name.startswith("LEADGREEN_"):
            monkeypatch.delenv(name)
    monkeypatch.setattr(db.snapshot, "Fetcher", functools.partial(Fetcher, **FAST))
    return CliRunner()


def test_cli_ingest_from_url(cli: CliRunner, server: SnapshotServer, tmp_path: Path) -> None:
    url = f"sqlite+aiosqlite:///{tmp_path / 'cli.db'}"
    result = cli.invoke(main, ["ingest", server.url, "--database-url", url])
    assert result.exit_code == 0, result.output
    assert result.stdout == (
        f"reading {server.url} ...\n"
        "ingested release 1 (data of 2030-01-02): 2 models, configurations lm-arena-chat: 7\n"
    )


def test_cli_ingest_unreachable_url(cli: CliRunner, closed_port: int, tmp_path: Path) -> None:
    url = f"sqlite+aiosqlite:///{tmp_path / 'cli.db'}"
    source = f"http://127.0.0.1:{closed_port}/data"
    result = cli.invoke(main, ["ingest", source, "--database-url", url])
    assert result.exit_code == 1
    lines = result.stderr.splitlines()
    assert lines[0].startswith(
        f"error: ingest failed: index.json: unreachable: {source}/index.json (ConnectError: "
    )
    assert lines[1:] == ["nothing was changed; the data served before is still served."]


def test_cli_ingest_http_error(cli: CliRunner, server: SnapshotServer, tmp_path: Path) -> None:
    url = f"sqlite+aiosqlite:///{tmp_path / 'cli.db'}"
    server.fail(TASK_FILE, Fault.http(500), times=None)
    result = cli.invoke(main, ["ingest", server.url, "--database-url", url])
    assert result.exit_code == 1
    assert result.stderr.splitlines() == [
        f"error: ingest failed: {TASK_FILE}: HTTP 500 from {server.url}/{TASK_FILE}",
        "nothing was changed; the data served before is still served.",
    ]
    assert server.count(TASK_FILE) == FAST["attempts"]
