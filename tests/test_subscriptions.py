"""Change notifications: `releasePublished` over GraphQL over SSE and graphql-transport-ws.

ASGI-level tests drive the app with the protocols' own messages (`Connection` below: one ASGI
connection, messages in and out) and compare each event with what the queries `releases` and
`changes` answer; the bounds are checked over orders of subscribe and complete Hypothesis
writes; a live `leadgreen serve` is subscribed to by the `graphql-sse` and `graphql-ws` npm
clients (clients/) while `leadgreen ingest` runs in another process (mark `replicas`).
"""

from __future__ import annotations

import asyncio
import contextlib
import json
import os
import shutil
import subprocess
from collections.abc import AsyncIterator
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import anyio
import httpx
import pytest
from graphql import parse
from hypothesis import HealthCheck, given
from hypothesis import settings as hypothesis_settings
from hypothesis import strategies as st
from sqlalchemy.ext.asyncio import AsyncEngine, async_sessionmaker
from starlette.applications import Starlette

from db import reads
from graph.engine.cost import actual_cost
from graph.engine.prepared import Prepared
from graph.server.app import create_app
from graph.server.subscriptions import SubscriptionContext
from graph.settings import Settings
from tests import synthetic
from tests.conftest import examples, ingest_dir
from tests.live import LEADGREEN, answering, free_port, serving, subscriber
from tests.reports import cost
from tests.test_query_plans import REFERENCE

pytestmark = pytest.mark.anyio
# A guard against a hang, not a measurement: every awaited message comes at once or never.
GUARD = 20.0

SUBSCRIPTION = """subscription Published {
  releasePublished {
    release { id number lastUpdated digest }
    previous { id number lastUpdated digest }
    changes { from to filesAdded filesRemoved
      tasks { task unchanged changed { newRow fields { field old new } } } } } }"""
RELEASES = "query Releases { releases { id number lastUpdated digest } }"
CHANGES = """query Changes($from: Int!, $to: Int!) {
  changes(from: $from, to: $to) { from to filesAdded filesRemoved
    tasks { task unchanged changed { newRow fields { field old new } } } } }"""


def second_release(root: Path) -> Path:
    """The synthetic snapshot with one configuration's energy corrected, of later data."""
    rows = synthetic.ROWS[:]
    rows[0] = {**rows[0], "energy_per_token_joules": rows[0]["energy_per_token_joules"] * 2}
    files = synthetic.documents(rows)
    files["index.json"]["last_updated"] = "2030-02-01"
    return synthetic.write(root, files)


class Connection:
    """One ASGI connection to the app: what the client sends (`put`), what the app sends."""

    def __init__(self, app: Starlette, scope: dict[str, Any]) -> None:
        self.inbox: asyncio.Queue[dict[str, Any]] = asyncio.Queue()
        self.outbox: asyncio.Queue[dict[str, Any]] = asyncio.Queue()
        self.task = asyncio.ensure_future(app(scope, self.inbox.get, self.outbox.put))

    async def put(self, message: dict[str, Any]) -> None:
        await self.inbox.put(message)

    async def out(self) -> dict[str, Any]:
        """The app's next message (the app's exception, if it ended with one)."""
        async with asyncio.timeout(GUARD):
            getting = asyncio.ensure_future(self.outbox.get())
            await asyncio.wait({getting, self.task}, return_when=asyncio.FIRST_COMPLETED)
            if getting.done():
                return getting.result()
            getting.cancel()
            self.task.result()
            raise AssertionError("the app ended without sending")

    async def ended(self) -> None:
        async with asyncio.timeout(GUARD):
            await self.task

    async def close(self) -> None:
        if not self.task.done():
            self.task.cancel()
            with contextlib.suppress(asyncio.CancelledError):
                await self.task


def _scope(kind: str, headers: list[tuple[bytes, bytes]], **more: Any) -> dict[str, Any]:
    return {
        "type": kind,
        "asgi": {"version": "3.0"},
        "http_version": "1.1",
        "path": "/graphql",
        "raw_path": b"/graphql",
        "root_path": "",
        "query_string": b"",
        "headers": headers,
        "client": more.pop("client", ("127.0.0.1", 40000)),
        "server": ("test", 80),
        "scheme": "ws" if kind == "websocket" else "http",
        **more,
    }


class Ws:
    """A graphql-transport-ws client over one ASGI connection."""

    def __init__(self, connection: Connection) -> None:
        self.connection = connection

    async def send(self, message: dict[str, Any] | str) -> None:
        text = message if isinstance(message, str) else json.dumps(message)
        await self.connection.put({"type": "websocket.receive", "text": text})

    async def receive(self) -> dict[str, Any]:
        """The next protocol message (pings answered with pongs, as a client does)."""
        while True:
            message = await self.connection.out()
            if message["type"] == "websocket.close":
                return {"close": message["code"], "reason": message.get("reason", "")}
            assert message["type"] == "websocket.send", message
            parsed: dict[str, Any] = json.loads(message["text"])
            if parsed["type"] != "ping":
                return parsed
            await self.send({"type": "pong"})


@contextlib.asynccontextmanager
async def websocket(
    app: Starlette,
    *,
    protocols: tuple[str, ...] = ("graphql-transport-ws",),
    init: bool = True,
    client: tuple[str, int] = ("127.0.0.1", 40000),
) -> AsyncIterator[Ws]:
    connection = Connection(
        app, _scope("websocket", [], subprotocols=list(protocols), client=client)
    )
    await connection.put({"type": "websocket.connect"})
    accepted = await connection.out()
    assert accepted["type"] == "websocket.accept", accepted
    ws = Ws(connection)
    try:
        if init:
            assert accepted["subprotocol"] == "graphql-transport-ws"
            await ws.send({"type": "connection_init"})
            assert await ws.receive() == {"type": "connection_ack"}
        yield ws
    finally:
        await connection.close()


async def sse(
    app: Starlette, body: dict[str, Any], client: tuple[str, int] = ("127.0.0.1", 40000)
) -> Connection:
    """A POST asking for an event stream; its body sent."""
    raw = json.dumps(body).encode()
    headers = [
        (b"accept", b"text/event-stream"),
        (b"content-type", b"application/json"),
        (b"content-length", b"%d" % len(raw)),
    ]
    connection = Connection(app, _scope("http", headers, method="POST", client=client))
    await connection.put({"type": "http.request", "body": raw, "more_body": False})
    return connection


async def streaming(
    app: Starlette, query: str, client: tuple[str, int] = ("127.0.0.1", 40000)
) -> tuple[Connection, asyncio.Future[tuple[str, str]]]:
    """An SSE subscription begun: its connection, and its first event awaited."""
    connection = await sse(app, {"query": query}, client)
    return connection, asyncio.ensure_future(anext(sse_events(connection)))


async def refusal(app: Starlette, query: str) -> tuple[int, list[str]]:
    """The status and codes of an SSE request refused before its stream."""
    connection = await sse(app, {"query": query})
    start = await connection.out()
    body = json.loads((await connection.out())["body"])
    return start["status"], [e["extensions"]["code"] for e in body["errors"]]


async def sse_events(connection: Connection) -> AsyncIterator[tuple[str, str]]:
    """The stream's events, (event, data), comments as ("", comment)."""
    start = await connection.out()
    assert start["type"] == "http.response.start"
    assert start["status"] == 200, start
    assert dict(start["headers"])[b"content-type"].startswith(b"text/event-stream")
    buffer = b""
    while True:
        message = await connection.out()
        buffer += message.get("body", b"")
        while b"\n\n" in buffer:
            block, buffer = buffer.split(b"\n\n", 1)
            lines = block.decode().split("\n")
            if lines[0].startswith(":"):
                yield "", lines[0][1:]
                continue
            fields = dict(
                line.split(": ", 1) if ": " in line else (line.rstrip(":"), "") for line in lines
            )
            yield fields["event"], fields.get("data", "")
        if not message.get("more_body", False):
            return


@pytest.fixture
async def served(
    settings: Settings, synthetic_db: AsyncEngine, tmp_path: Path
) -> AsyncIterator[tuple[Starlette, httpx.AsyncClient, AsyncEngine, Path]]:
    """The app on the synthetic release (the release read when the test says: poll 0)."""
    app = create_app(settings.model_copy(update={"release_poll_seconds": 0}))
    transport = httpx.ASGITransport(app=app)
    async with (
        app.router.lifespan_context(app),
        httpx.AsyncClient(transport=transport, base_url="http://test") as client,
    ):
        yield app, client, synthetic_db, tmp_path


async def publish_second(app: Starlette, engine: AsyncEngine, tmp_path: Path) -> None:
    """Ingest the second release and let the watcher read it (as its poll would)."""
    await ingest_dir(engine, second_release(tmp_path / "second"))
    await app.state.graphql.release.refresh()


async def expected_event(client: httpx.AsyncClient) -> dict[str, Any]:
    """The event as the queries answer it: the first two of `releases`, and their changes."""
    releases = (await client.post("/graphql", json={"query": RELEASES})).json()["data"]["releases"]
    new, old = releases[0], releases[1]
    variables = {"from": old["number"], "to": new["number"]}
    answer = (await client.post("/graphql", json={"query": CHANGES, "variables": variables})).json()
    data = {
        "releasePublished": {
            "release": new,
            "previous": old,
            "changes": answer["data"]["changes"],
        }
    }
    # The subscription's estimate (charged once, when it began: its lists at their bounds), and
    # the event's actual cost: what it holds, walked.
    actual = actual_cost(Prepared(SUBSCRIPTION, parse(SUBSCRIPTION)), None, data)
    return {"data": data, "extensions": cost(71721, actual)}


async def test_a_websocket_subscriber_gets_the_release_and_its_changes(served: Any) -> None:
    app, client, engine, tmp_path = served
    async with websocket(app) as ws:
        await ws.send({"id": "1", "type": "subscribe", "payload": {"query": SUBSCRIPTION}})
        await asyncio.sleep(0)  # (the subscription reaches its stream before the ingest)
        await _subscribed(app, 1)
        await publish_second(app, engine, tmp_path)
        event = await ws.receive()
        assert event == {"id": "1", "type": "next", "payload": await expected_event(client)}
        changed = event["payload"]["data"]["releasePublished"]["changes"]["tasks"][0]["changed"]
        assert [c["fields"][0]["field"] for c in changed] == ["energy_per_token_joules"]
        await ws.send({"id": "1", "type": "complete"})
        await _subscribed(app, 0)


async def test_an_sse_subscriber_gets_the_release_and_its_changes(served: Any) -> None:
    app, client, engine, tmp_path = served
    connection = await sse(app, {"query": SUBSCRIPTION})
    events = sse_events(connection)
    await _subscribed(app, 1)
    await publish_second(app, engine, tmp_path)
    event, data = await anext(events)
    assert event == "next"
    assert json.loads(data) == await expected_event(client)
    await connection.put({"type": "http.disconnect"})
    await connection.ended()
    assert app.state.subscriptions.total == 0


async def _subscribed(app: Starlette, count: int) -> None:
    """Wait (by turns of the loop, not time) until `count` subscribers listen for releases."""
    async with asyncio.timeout(GUARD):
        while app.state.releases.subscribers != count:
            await asyncio.sleep(0)


# --- graphql-transport-ws: the protocol's messages and close codes ---------------------------


@contextlib.asynccontextmanager
async def app_with(
    settings: Settings, synthetic_db: AsyncEngine, **overrides: Any
) -> AsyncIterator[Starlette]:
    app = create_app(settings.model_copy(update={"release_poll_seconds": 0, **overrides}))
    async with app.router.lifespan_context(app):
        yield app


async def test_a_query_over_a_websocket_is_answered_as_over_http(served: Any) -> None:
    app, client, _, _ = served
    async with websocket(app) as ws:
        await ws.send({"id": "q", "type": "subscribe", "payload": {"query": RELEASES}})
        over_http = (await client.post("/graphql", json={"query": RELEASES})).json()
        assert await ws.receive() == {"id": "q", "type": "next", "payload": over_http}
        assert await ws.receive() == {"id": "q", "type": "complete"}
        await ws.send({"type": "ping", "payload": {"n": 1}})
        assert await ws.receive() == {"type": "pong", "payload": {"n": 1}}


async def test_an_operation_refused_before_it_runs_is_an_error_and_the_connection_goes_on(
    served: Any,
) -> None:
    app, _, _, _ = served
    async with websocket(app) as ws:
        bad = {"query": "subscription Bad { releasePublished { nope } }"}
        await ws.send({"id": "a", "type": "subscribe", "payload": bad})
        error = await ws.receive()
        assert error["id"] == "a" and error["type"] == "error"
        assert [e["extensions"]["code"] for e in error["payload"]] == ["GRAPHQL_VALIDATION_FAILED"]
        mutation = {"query": "mutation M { x }"}
        await ws.send({"id": "b", "type": "subscribe", "payload": mutation})
        refused = await ws.receive()
        assert (refused["type"], refused["payload"][0]["extensions"]["code"]) == (
            "error",
            "METHOD_NOT_ALLOWED",
        )
        await ws.send({"id": "c", "type": "subscribe", "payload": {"query": RELEASES}})
        assert (await ws.receive())["type"] == "next"


@pytest.mark.parametrize(
    ("messages", "code", "reason"),
    [
        ([{"type": "connection_init"}], 4429, "Too many initialisation requests"),
        (["not json"], 4400, "Invalid message received"),
        ([{"type": "what"}], 4400, "Invalid message received"),
        ([{"id": 1, "type": "subscribe", "payload": {}}], 4400, "Invalid message received"),
        ([{"type": "complete"}], 4400, "Invalid message received"),
        (
            [{"id": "1", "type": "subscribe", "payload": {"query": SUBSCRIPTION}}] * 2,
            4409,
            "Subscriber for 1 already exists",
        ),
    ],
)
async def test_a_message_out_of_the_protocol_closes_the_connection_with_its_code(
    served: Any, messages: list[Any], code: int, reason: str
) -> None:
    app, _, _, _ = served
    async with websocket(app) as ws:
        for message in messages:
            await ws.send(message)
        assert await ws.receive() == {"close": code, "reason": reason}
        await ws.connection.ended()
    assert app.state.subscriptions.total == 0 and app.state.releases.subscribers == 0


async def test_subscribe_before_connection_init_is_unauthorized(served: Any) -> None:
    app, _, _, _ = served
    async with websocket(app, init=False) as ws:
        await ws.send({"id": "1", "type": "subscribe", "payload": {"query": RELEASES}})
        assert await ws.receive() == {"close": 4401, "reason": "Unauthorized"}


async def test_another_subprotocol_is_not_acceptable(served: Any) -> None:
    app, _, _, _ = served
    async with websocket(app, protocols=("graphql-ws",), init=False) as ws:
        assert await ws.receive() == {"close": 4406, "reason": "Subprotocol not acceptable"}


async def test_no_connection_init_in_time_closes_4408_and_an_idle_connection_closes(
    settings: Settings, synthetic_db: AsyncEngine
) -> None:
    async with app_with(
        settings, synthetic_db, subscription_init_seconds=0.05, subscription_idle_seconds=0.05
    ) as app:
        async with websocket(app, init=False) as ws:
            assert await ws.receive() == {
                "close": 4408,
                "reason": "Connection initialisation timeout",
            }
        async with websocket(app) as ws:  # acknowledged, then nothing: idle
            assert await ws.receive() == {"close": 1000, "reason": "Idle"}


async def test_a_websocket_is_pinged_at_the_heartbeat_and_a_stream_gets_comments(
    settings: Settings, synthetic_db: AsyncEngine
) -> None:
    async with app_with(settings, synthetic_db, subscription_heartbeat_seconds=0.02) as app:
        async with websocket(app) as ws:
            await ws.send({"id": "1", "type": "subscribe", "payload": {"query": SUBSCRIPTION}})
            message = await ws.connection.out()
            assert (message["type"], json.loads(message["text"])) == (
                "websocket.send",
                {"type": "ping"},
            )
        connection = await sse(app, {"query": SUBSCRIPTION})
        events = sse_events(connection)
        assert await anext(events) == ("", "")
        await connection.put({"type": "http.disconnect"})
        await connection.ended()


# --- GraphQL over SSE: refusals answered before the stream -----------------------------------


async def test_an_sse_request_refused_before_its_stream_is_answered_as_graphql_answers(
    served: Any,
) -> None:
    app, _, _, _ = served
    connection = await sse(app, {"query": "subscription Bad { releasePublished { nope } }"})
    start = await connection.out()
    body = json.loads((await connection.out())["body"])
    assert start["status"] == 400
    assert [e["extensions"]["code"] for e in body["errors"]] == ["GRAPHQL_VALIDATION_FAILED"]
    await connection.ended()
    query = await sse(app, {"query": RELEASES})
    events = [e async for e in sse_events(query)]
    assert [e[0] for e in events] == ["next", "complete"]


async def test_a_subscription_over_plain_http_is_refused(served: Any) -> None:
    _, client, _, _ = served
    response = await client.post("/graphql", json={"query": SUBSCRIPTION})
    assert response.status_code == 400
    assert response.json()["errors"][0]["extensions"]["code"] == "BAD_REQUEST"


# --- Bounds: per client and per process, over generated orders of subscribe and complete -----

PER_CLIENT, PER_PROCESS, CLIENTS = 2, 3, 3


async def test_bounds_hold_over_any_order_of_subscribe_and_complete(
    settings: Settings, synthetic_db: AsyncEngine
) -> None:
    steps = st.lists(
        st.one_of(
            st.tuples(st.just("subscribe"), st.integers(0, CLIENTS - 1)),
            st.tuples(st.just("complete"), st.integers(0, 20)),
        ),
        max_size=14,
    )
    async with app_with(
        settings,
        synthetic_db,
        max_subscriptions_per_client=PER_CLIENT,
        max_subscriptions=PER_PROCESS,
    ) as app:
        bounds = app.state.subscriptions

        async def run(plan: list[tuple[str, int]]) -> None:
            async with contextlib.AsyncExitStack() as stack:
                sockets = [
                    await stack.enter_async_context(websocket(app, client=(f"10.0.0.{n}", 40000)))
                    for n in range(CLIENTS)
                ]
                open_: list[tuple[int, str]] = []  # (client, id) admitted, in order
                for number, (step, value) in enumerate(plan):
                    if step == "subscribe":
                        ident = str(number)
                        ws = sockets[value]
                        held = sum(1 for c, _ in open_ if c == value)
                        expected_refusal = held >= PER_CLIENT or len(open_) >= PER_PROCESS
                        await ws.send(
                            {"id": ident, "type": "subscribe", "payload": {"query": SUBSCRIPTION}}
                        )
                        await ws.send({"type": "ping"})
                        got = [await ws.receive()]
                        while got[-1] != {"type": "pong"}:
                            got.append(await ws.receive())
                        refusals = [m for m in got if m.get("type") == "error"]
                        if expected_refusal:
                            [refusal] = refusals
                            assert refusal["id"] == ident
                            codes = [e["extensions"]["code"] for e in refusal["payload"]]
                            assert codes == ["TOO_MANY_SUBSCRIPTIONS"]
                        else:
                            assert refusals == []
                            open_.append((value, ident))
                    elif open_:
                        client, ident = open_.pop(value % len(open_))
                        await sockets[client].send({"id": ident, "type": "complete"})
                    expected = {}
                    for c, _ in open_:
                        expected[f"addr:10.0.0.{c}"] = expected.get(f"addr:10.0.0.{c}", 0) + 1
                    async with asyncio.timeout(GUARD):
                        while bounds.clients != expected:
                            await asyncio.sleep(0)
                    assert bounds.total == len(open_)
            async with asyncio.timeout(GUARD):  # every connection gone: nothing held
                while bounds.total or app.state.releases.subscribers:
                    await asyncio.sleep(0)

        @hypothesis_settings(
            max_examples=examples(40),
            deadline=None,
            database=None,
            suppress_health_check=[HealthCheck.too_slow, HealthCheck.function_scoped_fixture],
        )
        @given(steps)
        def prop(plan: list[tuple[str, int]]) -> None:
            anyio.from_thread.run(run, plan)

        await anyio.to_thread.run_sync(prop)


async def test_an_sse_subscription_past_its_client_bound_is_refused_429(
    settings: Settings, synthetic_db: AsyncEngine
) -> None:
    async with app_with(settings, synthetic_db, max_subscriptions_per_client=1) as app:
        first, started = await streaming(app, SUBSCRIPTION)
        await _subscribed(app, 1)
        assert await refusal(app, SUBSCRIPTION) == (429, ["TOO_MANY_SUBSCRIPTIONS"])
        other, other_started = await streaming(app, SUBSCRIPTION, ("10.0.0.9", 1))
        await _subscribed(app, 2)  # another client is not disturbed
        for connection in (first, other):
            await connection.put({"type": "http.disconnect"})
            await connection.ended()
        for task in (started, other_started):
            task.cancel()
        assert app.state.subscriptions.total == 0


# --- Real clients against `leadgreen serve`, an ingest in another process ---------------------

POLL_SECONDS = 0.5


def real_clients() -> None:
    if shutil.which("node") is None or shutil.which("npm") is None:
        pytest.skip("needs Node.js and npm (clients/)")


def event_of(process: subprocess.Popen[str]) -> dict[str, Any]:
    """The subscriber's event (it exits after one), with when it came (ms since the epoch)."""
    out, _ = process.communicate(timeout=30)
    assert process.returncode == 0, out
    [line] = out.splitlines()
    found: dict[str, Any] = json.loads(line)
    return found


def ingest_in_another_process(database: str, source: Path) -> None:
    subprocess.run(
        [LEADGREEN, "ingest", str(source), "--database-url", database],
        check=True,
        capture_output=True,
        env={k: v for k, v in os.environ.items() if k != "LEADGREEN_MANIFEST"},
    )


def latency_seconds(event: dict[str, Any], ingested_at: str) -> float:
    """From the release's ingest time (before its commit) to the event's arrival: no less
    than the time from the commit."""
    started = datetime.fromisoformat(ingested_at)
    if started.tzinfo is None:
        started = started.replace(tzinfo=UTC)
    return float(event["at"]) / 1000 - started.timestamp()


@pytest.mark.replicas
def test_real_clients_get_an_ingest_of_another_process_within_the_poll_and_a_second(
    tmp_path: Path,
) -> None:
    real_clients()
    env = {"LEADGREEN_RELEASE_POLL_SECONDS": str(POLL_SECONDS)}
    with serving(tmp_path, **env) as port:
        url = f"http://127.0.0.1:{port}/graphql"
        subscribers = {
            protocol: subscriber(protocol, port, tmp_path / f"{protocol}.log")
            for protocol in ("sse", "sse-single", "ws")
        }
        ingest_in_another_process(str(tmp_path / "served.db"), second_release(tmp_path / "b"))
        events = {protocol: event_of(p) for protocol, p in subscribers.items()}
        releases = httpx.post(
            url, json={"query": "query R { releases { number ingestedAt } }"}
        ).json()["data"]["releases"]
        expected = asyncio.run(_expected_over_http(url))
    for protocol, event in events.items():
        assert event["event"] == expected, protocol
        seconds = latency_seconds(event, releases[0]["ingestedAt"])
        print(f"{protocol}: the event came {seconds:.3f} s after the ingest began")
        assert seconds <= POLL_SECONDS + 1, (protocol, seconds)


async def _expected_over_http(url: str) -> dict[str, Any]:
    async with httpx.AsyncClient(base_url=url.removesuffix("/graphql")) as client:
        return await expected_event(client)


@pytest.mark.replicas
def test_open_subscriptions_do_not_hold_the_server_when_it_stops(tmp_path: Path) -> None:
    """SIGTERM with an SSE stream and a WebSocket open: uvicorn waits for every response to
    end, and an event stream's would not; it is ended (the client sees the stream close and may
    reconnect), the WebSocket closed 1012, and the server exits."""
    real_clients()
    port = free_port()
    snapshot = synthetic.write(tmp_path / "snapshot", synthetic.documents())
    env = {
        **os.environ,
        "LEADGREEN_DATABASE_URL": str(tmp_path / "served.db"),
        "LEADGREEN_SOURCE": str(snapshot),
        "LEADGREEN_PORT": str(port),
        "LEADGREEN_LOG_LEVEL": "warning",
    }
    log = tmp_path / "serve.log"
    with log.open("wb") as out:
        server = subprocess.Popen([LEADGREEN, "serve"], env=env, stdout=out, stderr=out)
    subscribers = []
    try:
        answering(f"http://127.0.0.1:{port}/healthz", server, log)
        subscribers = [
            subscriber("sse", port, tmp_path / "sse.log"),
            subscriber("ws", port, tmp_path / "ws.log"),
        ]
        server.terminate()
        server.wait(timeout=10)  # raises when the server does not stop
        for process in subscribers:
            process.communicate(timeout=10)
        assert [s.returncode for s in subscribers] == [1, 1]  # each saw its connection end
        assert "1012" in (tmp_path / "ws.log").read_text()  # "service restart"
    finally:
        for process in (server, *subscribers):
            if process.poll() is None:
                process.kill()
                process.wait()


# --- The engine's events against strawberry's own subscription pipeline ----------------------

SELECTIONS = [
    SUBSCRIPTION,
    """subscription Aliased { r: releasePublished { __typename a: release { number }
      ...P changes { tasks { task changedFieldCounts } } } }
    fragment P on ReleasePublished { previous { lastUpdated } }""",
    """subscription Skipped($s: Boolean!) { releasePublished {
      release @skip(if: $s) { number } previous @include(if: $s) { number } } }""",
]


@pytest.mark.parametrize("query", SELECTIONS)
async def test_each_event_is_what_strawberrys_pipeline_answers(served: Any, query: str) -> None:
    """The events of the engine's `subscribe` equal those of strawberry's `subscribe` over
    graphql-core's executor, for the same releases published (the first has no previous)."""
    app, _, engine, tmp_path = served
    await ingest_dir(engine, second_release(tmp_path / "second"))
    sessions = async_sessionmaker(engine)
    async with sessions() as session:
        rows = list(reversed(await reads.releases(session)))  # the first, then the second

    async def published() -> AsyncIterator[Any]:
        for row in rows:
            yield row

    def context() -> SubscriptionContext:
        return SubscriptionContext(
            session=None,
            settings=app.state.graphql.settings,
            sessions=sessions,
            published=published,
        )

    variables = {"s": True} if "$s" in query else None
    contexts = [context(), context()]
    try:
        ours = await app.state.schema.subscribe(query, variables, contexts[0])
        theirs = await REFERENCE.subscribe(query, variables, contexts[1])
        got = [formatted(result) async for result in ours]
        expected = [formatted(result) async for result in theirs]
    finally:
        for made in contexts:
            if made.session is not None:
                await made.session.close()
    assert len(got) == 2 and got == expected
    assert [e.get("errors") for e in got] == [None, None]


def formatted(result: Any) -> dict[str, Any]:
    return {
        "data": result.data,
        "errors": [e.formatted for e in result.errors] if result.errors else None,
    }


SMALL = "subscription Small { releasePublished { release { number } } }"


async def test_a_subscription_costs_what_the_rate_limit_says(
    settings: Settings, synthetic_db: AsyncEngine
) -> None:
    """Its cost is charged to the client's bucket when it starts: with a bucket of one point
    the first runs (leaving the bucket in debt), the next is refused THROTTLED, over SSE (429)
    and over a WebSocket (an `error` message; the connection goes on)."""
    limits = {
        "rate_limit": True,
        "rate_limit_capacity": 1,
        "rate_limit_restore_rate": 1e-9,
        "rate_limit_byte_cost": 0,  # (no fee for reading the document: its cost alone)
    }
    async with app_with(settings, synthetic_db, **limits) as app:
        first, started = await streaming(app, SMALL)
        await _subscribed(app, 1)
        assert await refusal(app, SMALL) == (429, ["THROTTLED"])
        async with websocket(app) as ws:
            await ws.send({"id": "t", "type": "subscribe", "payload": {"query": SMALL}})
            refused = await ws.receive()
            assert (refused["id"], refused["type"]) == ("t", "error")
            assert [e["extensions"]["code"] for e in refused["payload"]] == ["THROTTLED"]
            await ws.send({"type": "ping"})
            assert await ws.receive() == {"type": "pong"}
        await first.put({"type": "http.disconnect"})
        await first.ended()
        started.cancel()
        assert app.state.subscriptions.total == 0


# --- GraphQL over SSE, single connection mode: a reservation, its stream, its operations -----

TOKEN = "x-graphql-event-stream-token"


async def reserve(client: httpx.AsyncClient) -> str:
    made = await client.put("/graphql")
    assert (made.status_code, made.headers["content-type"]) == (201, "text/plain; charset=utf-8")
    return made.text


def open_stream(app: Starlette, token: str, method: str = "GET") -> Connection:
    """The reservation's stream asked for (its request sent)."""
    headers = [(b"accept", b"text/event-stream"), (TOKEN.encode(), token.encode())]
    connection = Connection(app, _scope("http", headers, method=method))
    return connection


async def opened(connection: Connection) -> AsyncIterator[tuple[str, str]]:
    await connection.put({"type": "http.request", "body": b"", "more_body": False})
    return sse_events(connection)


async def operate(
    client: httpx.AsyncClient, token: str, ident: str | None, query: str, **given: str
) -> httpx.Response:
    extensions = {} if ident is None else {"operationId": ident}
    return await client.post(
        "/graphql",
        json={"query": query, "extensions": extensions},
        headers={TOKEN: token, **given},
    )


def code_of(response: httpx.Response) -> tuple[int, str]:
    return response.status_code, response.json()["errors"][0]["extensions"]["code"]


async def test_single_connection_mode_serves_operations_over_one_stream(served: Any) -> None:
    """PUT, the stream, a subscription and a query POSTed with the token (202 each), their
    results on the stream with their ids, a DELETE stopping the subscription; the stream's end
    ends the reservation."""
    app, client, engine, tmp_path = served
    token = await reserve(client)
    connection = open_stream(app, token)
    events = await opened(connection)
    assert (await operate(client, token, "s", SUBSCRIPTION)).status_code == 202
    assert (await operate(client, token, "q", RELEASES)).status_code == 202
    over_http = (await client.post("/graphql", json={"query": RELEASES})).json()
    assert [await anext(events), await anext(events)] == [
        ("next", json.dumps({"id": "q", "payload": over_http}, separators=(",", ":"))),
        ("complete", '{"id":"q"}'),
    ]
    await _subscribed(app, 1)
    await publish_second(app, engine, tmp_path)
    event, data = await anext(events)
    assert (event, json.loads(data)) == (
        "next",
        {"id": "s", "payload": await expected_event(client)},
    )
    stopped = await client.delete("/graphql", params={"operationId": "s"}, headers={TOKEN: token})
    assert stopped.status_code == 200
    await _subscribed(app, 0)
    assert app.state.subscriptions.total == 0
    await connection.put({"type": "http.disconnect"})
    await connection.ended()
    assert code_of(await operate(client, token, "t", RELEASES)) == (404, "STREAM_NOT_FOUND")
    assert app.state.reservations.bounds.total == 0


async def test_the_token_may_come_as_a_parameter_and_the_stream_by_post(served: Any) -> None:
    app, client, _, _ = served
    token = await reserve(client)
    connection = Connection(
        app,
        _scope(
            "http",
            [(b"accept", b"text/event-stream")],
            method="POST",
            query_string=f"token={token}".encode(),
        ),
    )
    events = await opened(connection)
    answered = await client.post(
        "/graphql",
        params={"token": token},
        json={"query": RELEASES, "extensions": {"operationId": "1"}},
    )
    assert answered.status_code == 202
    assert [e for e, _ in [await anext(events), await anext(events)]] == ["next", "complete"]
    await connection.put({"type": "http.disconnect"})
    await connection.ended()


async def test_single_connection_mode_refusals(served: Any) -> None:
    """Each refusal its status and code, and nothing else disturbed: the stream goes on."""
    app, client, _, _ = served
    assert code_of(await client.delete("/graphql")) == (400, "STREAM_TOKEN_REQUIRED")
    unknown = await operate(client, "invented", "1", RELEASES)
    assert code_of(unknown) == (404, "STREAM_NOT_FOUND")
    by_parameter = await client.post("/graphql", params={"token": "invented"}, json={})
    assert code_of(by_parameter) == (404, "STREAM_NOT_FOUND")
    token = await reserve(client)
    connection = open_stream(app, token)
    events = await opened(connection)
    second = open_stream(app, token)
    await second.put({"type": "http.request", "body": b"", "more_body": False})
    start, body = await second.out(), await second.out()
    assert (start["status"], json.loads(body["body"])["errors"][0]["extensions"]["code"]) == (
        409,
        "STREAM_ALREADY_OPEN",
    )
    assert code_of(await operate(client, token, None, RELEASES)) == (400, "OPERATION_ID_REQUIRED")
    assert code_of(await operate(client, token, "", RELEASES)) == (400, "OPERATION_ID_REQUIRED")
    no_id = await client.delete("/graphql", headers={TOKEN: token})
    assert code_of(no_id) == (400, "OPERATION_ID_REQUIRED")
    assert (await operate(client, token, "s", SUBSCRIPTION)).status_code == 202
    assert code_of(await operate(client, token, "s", SUBSCRIPTION)) == (409, "OPERATION_ID_IN_USE")
    bad = await operate(client, token, "b", "subscription Bad { releasePublished { nope } }")
    assert code_of(bad) == (400, "GRAPHQL_VALIDATION_FAILED")
    put = await client.request("PATCH", "/graphql", headers={TOKEN: token})
    assert code_of(put) == (405, "METHOD_NOT_ALLOWED")
    assert put.headers["allow"] == "GET, POST, PUT, DELETE"
    # The stream is not disturbed: a query sent now is its next event.
    assert (await operate(client, token, "q", RELEASES)).status_code == 202
    assert [(await anext(events))[0], (await anext(events))[0]] == ["next", "complete"]
    async with asyncio.timeout(GUARD):  # "q" done: "s" alone runs
        while app.state.subscriptions.total != 1:
            await asyncio.sleep(0)
    await connection.put({"type": "http.disconnect"})
    await connection.ended()
    assert (app.state.subscriptions.total, app.state.releases.subscribers) == (0, 0)


async def test_reservations_and_their_operations_are_bounded_and_expire(
    settings: Settings, synthetic_db: AsyncEngine
) -> None:
    """Per client, reservations and operations past the bound are TOO_MANY_SUBSCRIPTIONS; a
    reservation whose stream has not opened within the init timeout is forgotten."""
    async with (
        app_with(settings, synthetic_db, max_subscriptions_per_client=1) as app,
        httpx.AsyncClient(transport=httpx.ASGITransport(app=app), base_url="http://t") as client,
    ):
        token = await reserve(client)
        assert code_of(await client.put("/graphql")) == (429, "TOO_MANY_SUBSCRIPTIONS")
        connection = open_stream(app, token)
        await opened(connection)
        assert (await operate(client, token, "1", SUBSCRIPTION)).status_code == 202
        past = await operate(client, token, "2", SUBSCRIPTION)
        assert code_of(past) == (429, "TOO_MANY_SUBSCRIPTIONS")
        await connection.put({"type": "http.disconnect"})
        await connection.ended()
        assert (app.state.subscriptions.total, app.state.reservations.bounds.total) == (0, 0)
    async with (
        app_with(settings, synthetic_db, subscription_init_seconds=0) as app,
        httpx.AsyncClient(transport=httpx.ASGITransport(app=app), base_url="http://t") as client,
    ):
        token = await reserve(client)
        async with asyncio.timeout(GUARD):  # expired at the loop's next turn
            while app.state.reservations.reservations:
                await asyncio.sleep(0)
        assert code_of(await operate(client, token, "1", RELEASES)) == (404, "STREAM_NOT_FOUND")
        assert app.state.reservations.bounds.total == 0


# --- What subscriptions leave behind: log lines and metrics ----------------------------------

STREAM_METRICS = (
    "leadgreen_websocket_connections",
    "leadgreen_subscriptions",
    "leadgreen_subscription_events_total",
)


async def stream_metrics(client: httpx.AsyncClient) -> dict[str, float]:
    """The subscription metrics /metrics shows, by series."""
    text = (await client.get("/metrics")).text
    return {
        series: float(value)
        for series, value in (line.rsplit(" ", 1) for line in text.splitlines() if line)
        if not series.startswith("#") and series.split("{")[0] in STREAM_METRICS
    }


def metrics_of(
    connections: int, running: dict[str, int], events: dict[str, int]
) -> dict[str, float]:
    found = {"leadgreen_websocket_connections": float(connections)}
    for transport in ("sse", "sse_single", "ws"):
        label = f'{{transport="{transport}"}}'
        found[f"leadgreen_subscriptions{label}"] = float(running.get(transport, 0))
        found[f"leadgreen_subscription_events_total{label}"] = float(events.get(transport, 0))
    return found


@contextlib.contextmanager
def stream_log() -> Any:
    """The lines of logger `leadgreen.subscription`, rendered as `leadgreen serve` renders
    them (each parsed; its timestamp dropped, its duration checked and dropped)."""
    import io
    import logging

    from graph.server.observability import formatter

    out = io.StringIO()
    handler = logging.StreamHandler(out)
    handler.setFormatter(formatter())
    logger = logging.getLogger("leadgreen.subscription")
    logger.addHandler(handler)
    level, disabled = logger.level, logger.disabled
    logger.setLevel(logging.INFO)  # (setLevel: what the logger answered before is forgotten)
    logger.disabled = False  # (a logging config run before)
    lines: list[dict[str, Any]] = []
    try:
        yield lines
    finally:
        logger.removeHandler(handler)
        logger.setLevel(level)
        logger.disabled = disabled
    for line in out.getvalue().splitlines():
        parsed = json.loads(line)
        parsed.pop("timestamp")
        if "duration_ms" in parsed:
            assert isinstance(parsed.pop("duration_ms"), float)
        lines.append(parsed)


def _line(event: str, **fields: Any) -> dict[str, Any]:
    return {"event": event, "level": "info", "logger": "leadgreen.subscription", **fields}


async def test_a_websocket_and_its_operations_are_logged_and_counted(served: Any) -> None:
    app, client, _, _ = served
    assert await stream_metrics(client) == metrics_of(0, {}, {})
    with stream_log() as lines:
        async with websocket(app) as ws:
            await ws.send({"id": "q", "type": "subscribe", "payload": {"query": RELEASES}})
            assert [(await ws.receive())["type"], (await ws.receive())["type"]] == [
                "next",
                "complete",
            ]
            await ws.send({"id": "s", "type": "subscribe", "payload": {"query": SUBSCRIPTION}})
            await _subscribed(app, 1)
            assert await stream_metrics(client) == metrics_of(1, {"ws": 1}, {"ws": 1})
            await ws.send({"id": "s", "type": "complete"})
            await _subscribed(app, 0)
            bad = {"query": "subscription Bad { releasePublished { nope } }"}
            await ws.send({"id": "b", "type": "subscribe", "payload": bad})
            assert (await ws.receive())["type"] == "error"
            await ws.connection.put({"type": "websocket.disconnect", "code": 1001})
            await ws.connection.ended()
    [connection] = {line.get("connection") for line in lines}
    assert len(connection) == 32
    operation = {"transport": "ws", "connection": connection}
    assert lines == [
        _line("websocket opened", connection=connection),
        _line("subscription started", **operation, id="q", operation="Releases"),
        _line(
            "subscription ended",
            **operation,
            id="q",
            operation="Releases",
            outcome="completed",
            events=1,
        ),
        _line("subscription started", **operation, id="s", operation="Published"),
        _line(
            "subscription ended",
            **operation,
            id="s",
            operation="Published",
            outcome="stopped",
            events=0,
        ),
        _line("subscription started", **operation, id="b", operation="Bad"),
        _line(
            "subscription ended",
            **operation,
            id="b",
            operation="Bad",
            outcome="refused",
            events=0,
            code="GRAPHQL_VALIDATION_FAILED",
        ),
        _line("websocket closed", connection=connection, code=1001, operations=3),
    ]
    assert await stream_metrics(client) == metrics_of(0, {}, {"ws": 1})


async def test_sse_operations_of_either_mode_are_logged_and_counted(served: Any) -> None:
    app, client, engine, tmp_path = served
    with stream_log() as lines:
        distinct = await sse(app, {"query": SUBSCRIPTION})
        distinct_events = sse_events(distinct)
        await _subscribed(app, 1)
        token = await reserve(client)
        single = open_stream(app, token)
        single_events = await opened(single)
        assert (await operate(client, token, "s", SUBSCRIPTION)).status_code == 202
        await _subscribed(app, 2)
        assert await stream_metrics(client) == metrics_of(0, {"sse": 1, "sse_single": 1}, {})
        await publish_second(app, engine, tmp_path)
        assert [(await anext(distinct_events))[0], (await anext(single_events))[0]] == [
            "next",
            "next",
        ]
        for connection in (distinct, single):
            await connection.put({"type": "http.disconnect"})
            await connection.ended()
    distinct_line = {"transport": "sse", "operation": "Published"}
    single_line = {"transport": "sse_single", "id": "s", "operation": "Published"}
    ended = {"outcome": "closed", "events": 1}
    assert [(line["event"], line.get("transport")) for line in lines] == [
        ("subscription started", "sse"),
        ("subscription started", "sse_single"),
        ("subscription ended", "sse"),
        ("subscription ended", "sse_single"),
    ]
    assert [{k: v for k, v in line.items() if k != "request_id"} for line in lines] == [
        _line("subscription started", **distinct_line),
        _line("subscription started", **single_line),
        _line("subscription ended", **distinct_line, **ended),
        _line("subscription ended", **single_line, **ended),
    ]
    assert await stream_metrics(client) == metrics_of(0, {}, {"sse": 1, "sse_single": 1})
