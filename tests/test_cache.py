"""The response cache, through HTTP: hits are the miss's bytes, a new release is served, errors
are never stored; the LRU bounds; the release watcher's bound; the Redis backend."""

from __future__ import annotations

import asyncio
import uuid
from pathlib import Path
from typing import Any

import httpx
import orjson
import pytest
from sqlalchemy.ext.asyncio import AsyncEngine
from strawberry.types import ExecutionResult

from db.database import sessionmaker
from graph.server.protocol import from_json_body
from graph.server.release import ReleaseWatcher
from graph.server.response_cache import MemoryCache
from graph.server.responses import Answer
from tests import synthetic
from tests.conftest import app_client, ingest_dir

pytestmark = pytest.mark.anyio

TINY_FILE = f"models/acme__Tiny-1B__{synthetic.TASK}.json"
QUERY = '{ model(slug: "tiny-1b") { name configurations { energyPerTokenJoules } } }'
ANSWER = {
    "data": {
        "model": {
            "name": "Tiny 1B",
            "configurations": [
                {"energyPerTokenJoules": 0.5},
                {"energyPerTokenJoules": 0.2},
                {"energyPerTokenJoules": 0.3},
            ],
        }
    }
}
NEWER = {
    "data": {
        "model": {
            "name": "Tiny 1B",
            "configurations": [
                {"energyPerTokenJoules": 0.25},
                {"energyPerTokenJoules": 0.2},
                {"energyPerTokenJoules": 0.3},
            ],
        }
    }
}


def cache_of(app: Any) -> Any:
    return app.state.graphql.cache


async def ingest_newer(engine: AsyncEngine, tmp_path: Path) -> None:
    """A new release: newer data date, the first configuration's energy per token changed."""
    files = synthetic.documents()
    files["index.json"]["last_updated"] = "2030-02-01"
    files[f"tasks/{synthetic.TASK}.json"]["configurations"][0]["energy_per_token_joules"] = 0.25
    files[TINY_FILE]["configurations"][0]["energy_per_token_joules"] = 0.25
    report = await ingest_dir(engine, synthetic.write(tmp_path / "newer", files))
    assert not report.unchanged


def answer(response: httpx.Response) -> Any:
    """The response's JSON, less `extensions.cost` (graph/limits.py's report, tested there)."""
    body = response.json()
    extensions = body.pop("extensions", {})
    assert set(extensions) <= {"cost"}, extensions
    return body


def seen(response: httpx.Response) -> tuple[int, str | None, Any]:
    return response.status_code, response.headers.get("x-cache"), answer(response)


async def test_a_hit_is_the_bytes_of_the_miss(synthetic_db, settings) -> None:
    async with app_client(settings) as (_, client):
        miss = await client.post("/graphql", json={"query": QUERY})
        hit = await client.post("/graphql", json={"query": QUERY})
    assert seen(miss) == (200, "MISS", ANSWER)
    assert seen(hit) == (200, "HIT", ANSWER)
    assert hit.content == miss.content
    assert hit.headers["content-type"] == "application/json"


async def test_the_key_is_the_query_variables_and_operation(synthetic_db, settings) -> None:
    """Variables in another order are the same request; other variables or operations are not."""
    query = "query A($slug: String!) { model(slug: $slug) { name } } query B { gpus { name } }"
    tiny = {"data": {"model": {"name": "Tiny 1B"}}}
    async with app_client(settings) as (_, client):

        async def ask(variables: dict[str, Any] | None, operation: str) -> Any:
            body = {"query": query, "variables": variables, "operationName": operation}
            return seen(await client.post("/graphql", json=body))

        first = await ask({"slug": "tiny-1b", "unused": 1}, "A")
        reordered = await ask({"unused": 1, "slug": "tiny-1b"}, "A")
        other = await ask({"slug": "mixture-8x2b"}, "A")
        operation = await ask(None, "B")
    assert first == (200, "MISS", tiny)
    assert reordered == (200, "HIT", tiny)
    assert other == (200, "MISS", {"data": {"model": {"name": "Mixture 8x2B"}}})
    assert operation == (200, "MISS", {"data": {"gpus": [{"name": "B200"}, {"name": "H100"}]}})


async def test_a_new_release_is_answered_from_at_once(synthetic_db, settings, tmp_path) -> None:
    async with app_client(settings, release_poll_seconds=0) as (app, client):
        before = await client.post("/graphql", json={"query": QUERY})
        assert seen(await client.post("/graphql", json={"query": QUERY}))[1] == "HIT"
        await ingest_newer(synthetic_db, tmp_path)
        after = await client.post("/graphql", json={"query": QUERY})
        again = await client.post("/graphql", json={"query": QUERY})
        assert len(cache_of(app)) == 1  # the old release's answer was dropped
    assert seen(before) == (200, "MISS", ANSWER)
    assert seen(after) == (200, "MISS", NEWER)
    assert seen(again) == (200, "HIT", NEWER)


async def test_an_older_release_ingested_later_shows_at_once(
    synthetic_db, settings, tmp_path
) -> None:
    """The latest release stays; the answers about every release change all the same."""
    query = "{ releases { lastUpdated } }"
    files = synthetic.documents()
    files["index.json"]["last_updated"] = "2029-12-01"
    async with app_client(settings, release_poll_seconds=0) as (_, client):
        before = await client.post("/graphql", json={"query": query})
        await ingest_dir(synthetic_db, synthetic.write(tmp_path / "older", files))
        after = await client.post("/graphql", json={"query": query})
    assert seen(before) == (200, "MISS", {"data": {"releases": [{"lastUpdated": "2030-01-02"}]}})
    assert seen(after) == (
        200,
        "MISS",
        {"data": {"releases": [{"lastUpdated": "2030-01-02"}, {"lastUpdated": "2029-12-01"}]}},
    )


@pytest.mark.parametrize(
    ("query", "code"),
    [
        ("{ model { name } }", "BAD_USER_INPUT"),
        ("{ model(slug: 1) { name } }", "GRAPHQL_VALIDATION_FAILED"),
        ("{ nothing }", "GRAPHQL_VALIDATION_FAILED"),
    ],
)
async def test_answers_with_errors_are_never_stored(synthetic_db, settings, query, code) -> None:
    async with app_client(settings) as (app, client):
        responses = [await client.post("/graphql", json={"query": query}) for _ in range(2)]
        assert len(cache_of(app)) == 0
    for response in responses:
        assert response.status_code == 200
        assert response.headers["cache-control"] == "no-store"
        assert "x-cache" not in response.headers
        assert [e["extensions"]["code"] for e in response.json()["errors"]] == [code]
    assert responses[0].content == responses[1].content


async def test_no_data_is_not_stored_and_data_shows_once_ingested(
    engine, settings, synthetic_dir
) -> None:
    async with app_client(settings, release_poll_seconds=0) as (_, client):
        empty = await client.post("/graphql", json={"query": QUERY})
        await ingest_dir(engine, synthetic_dir)
        full = await client.post("/graphql", json={"query": QUERY})
    assert empty.json()["errors"][0]["extensions"] == {"code": "NO_DATA"}
    assert seen(full) == (200, "MISS", ANSWER)


async def test_cache_off_executes_every_request(synthetic_db, settings) -> None:
    async with app_client(settings, cache="off") as (_, client):
        responses = [await client.post("/graphql", json={"query": QUERY}) for _ in range(2)]
    assert [seen(r) for r in responses] == [(200, "MISS", ANSWER)] * 2


async def test_rate_limited_answers_are_replayed_with_each_clients_bucket(
    synthetic_db, settings
) -> None:
    """A hit is charged its actual cost and reports the bucket of the client it is sent to."""
    async with app_client(
        settings, rate_limit=True, rate_limit_restore_rate=1e-9, rate_limit_byte_cost=0
    ) as (_, client):
        responses = [await client.post("/graphql", json={"query": QUERY}) for _ in range(2)]
    assert [seen(r) for r in responses] == [(200, "MISS", ANSWER), (200, "HIT", ANSWER)]
    assert [r.json()["extensions"]["cost"]["throttleStatus"] for r in responses] == [
        {"maximumAvailable": 250_000, "currentlyAvailable": 250_000 - 6, "restoreRate": 1e-9},
        {"maximumAvailable": 250_000, "currentlyAvailable": 250_000 - 12, "restoreRate": 1e-9},
    ]


async def test_the_watcher_answers_from_a_release_at_most_the_poll_interval_old(
    synthetic_db, tmp_path
) -> None:
    now = [100.0]
    changes: list[int] = []
    watcher = ReleaseWatcher(
        sessionmaker(synthetic_db), 10.0, on_change=lambda: changes.append(1), clock=lambda: now[0]
    )
    first = await watcher.current()
    await ingest_newer(synthetic_db, tmp_path)
    now[0] = 109.9
    within = await watcher.current()
    now[0] = 110.0
    at_bound = await watcher.current()
    assert first is not None and within is not None and at_bound is not None
    assert tuple(c.release.last_updated for c in (first, within, at_bound)) == (
        "2030-01-02",
        "2030-01-02",
        "2030-02-01",
    )
    assert changes == [1, 1]


def test_memory_cache_evicts_the_least_recently_used() -> None:
    cache = MemoryCache(max_entries=2, max_bytes=10_000)
    for key in (b"a", b"b"):
        cache.store(key, Answer(key * 10))
    assert cache.lookup(b"a") == Answer(b"a" * 10)  # now "b" is the least recently used
    cache.store(b"c", Answer(b"c" * 10))
    assert [cache.lookup(k) for k in (b"a", b"b", b"c")] == [
        Answer(b"a" * 10),
        None,
        Answer(b"c" * 10),
    ]


def test_memory_cache_is_bounded_by_bytes() -> None:
    entry = Answer(b"x" * 1000)
    cache = MemoryCache(max_entries=100, max_bytes=3 * entry.size)
    for key in (b"1", b"2", b"3", b"4"):
        cache.store(key, entry)
    cache.store(b"big", Answer(b"y" * 5000))  # larger than the whole cache: not kept
    assert (len(cache), cache.size, cache.lookup(b"1"), cache.lookup(b"big")) == (
        3,
        3 * entry.size,
        None,
        None,
    )


def test_answers_pack_for_redis() -> None:
    for answer in (Answer(b'{"data":{}}'), Answer.of(b'{"data":"' + b"z" * 2000 + b'"}', 1024)):
        assert Answer.unpack(answer.pack()) == answer


def test_keys_ignore_variable_order_and_name_the_release() -> None:
    def key(body: bytes, release: bytes = b"1") -> bytes:
        request = from_json_body(body)
        assert request is not None
        return request.key(release)

    assert key(b'{"query":"q","variables":{"a":1,"b":{"c":2,"d":3}}}') == key(
        b'{"variables":{"b":{"d":3,"c":2},"a":1},"query":"q"}'
    )
    assert key(b'{"query":"q"}') == key(b'{"query":"q","variables":{}}')
    assert key(b'{"query":"q"}') != key(b'{"query":"q"}', release=b"2")
    assert key(b'{"query":"q"}') != key(b'{"query":"q","operationName":""}')


# --- Redis ------------------------------------------------------------------------------------


# The tests marked `redis` need the server scripts/redis-up starts (127.0.0.1:6379); they are
# left out of the quick loop and run with `pytest -m redis`, where a missing server fails them.
needs_redis = pytest.mark.redis


@needs_redis
async def test_redis_shares_answers_between_processes(synthetic_db, settings) -> None:
    query = f"# {uuid.uuid4()}\n{QUERY}"  # a request no earlier run can have stored
    async with app_client(settings, cache="redis") as (_, first):
        miss = await first.post("/graphql", json={"query": query})
    async with app_client(settings, cache="redis") as (_, second):
        shared = await second.post("/graphql", json={"query": query})
        local = await second.post("/graphql", json={"query": query})
    assert seen(miss) == (200, "MISS", ANSWER)
    assert seen(shared) == (200, "HIT", ANSWER)
    assert seen(local) == (200, "HIT", ANSWER)
    assert shared.content == miss.content


@needs_redis
async def test_redis_answers_follow_a_new_release(synthetic_db, settings, tmp_path) -> None:
    async with app_client(settings, cache="redis", release_poll_seconds=0) as (_, client):
        before = await client.post("/graphql", json={"query": QUERY})
        await ingest_newer(synthetic_db, tmp_path)
        after = await client.post("/graphql", json={"query": QUERY})
    assert seen(before) == (200, "MISS", ANSWER)
    assert seen(after) == (200, "MISS", NEWER)


async def test_without_redis_the_cache_stays_in_the_process(synthetic_db, settings) -> None:
    """An unreachable Redis costs the sharing, not the answers."""
    async with app_client(settings, cache="redis", redis_url="redis://127.0.0.1:9/0") as (
        _,
        client,
    ):
        responses = [await client.post("/graphql", json={"query": QUERY}) for _ in range(2)]
    assert [seen(r) for r in responses] == [(200, "MISS", ANSWER), (200, "HIT", ANSWER)]


async def test_concurrent_misses_of_one_key_execute_once(synthetic_db, settings) -> None:
    executed, release = [], asyncio.Event()

    async def execute(*_args: Any) -> ExecutionResult:
        executed.append(1)
        await release.wait()
        return ExecutionResult(data=ANSWER["data"], errors=None)

    async with app_client(settings, execute=execute) as (app, _):
        handler = app.state.graphql
        request = from_json_body(orjson.dumps({"query": QUERY}))
        current = await handler.current_release()
        key = request.key(current.token)
        waiting = [
            asyncio.ensure_future(handler.produce_once(key, QUERY, request, current.release, False))
            for _ in range(5)
        ]
        await asyncio.sleep(0)
        release.set()
        answers = await asyncio.gather(*waiting)
    assert executed == [1]
    assert len({produced.body for produced, _ in answers}) == 1
    assert orjson.loads(answers[0][0].body)["data"] == ANSWER["data"]
