"""A request's waits for the database (db/database.py `waiting`): bounded by its share of the
request's time limit, set by the edge, and past it the database is away (503), not the request
too slow (504). Time here is the event loop's: a deadline already passed, or far off; nothing
sleeps."""

from __future__ import annotations

import asyncio
import gc
from typing import Any

import pytest

from db.database import BEYOND, DEADLINE, shared, waiting
from graph.errors import Code, database_fault
from graph.server.edge import DATABASE_SHARE, endless
from tests.conftest import app_client
from tests.test_cache import QUERY

pytestmark = pytest.mark.anyio


def now() -> float:
    return asyncio.get_running_loop().time()


async def never() -> None:
    await asyncio.Event().wait()


async def test_a_wait_past_the_deadline_is_the_database_away() -> None:
    token = DEADLINE.set(now())
    try:
        with pytest.raises(TimeoutError) as raised:
            async with waiting():
                await never()
    finally:
        DEADLINE.reset(token)
    assert str(raised.value) == BEYOND
    assert database_fault(raised.value) is Code.DATABASE_UNAVAILABLE


async def test_waits_within_waits_end_once_at_the_deadline() -> None:
    """A document's session (`request_session`) holds the context's reads: one TimeoutError,
    and the request's task not left cancelled (its next await runs)."""
    token = DEADLINE.set(now())
    try:
        with pytest.raises(TimeoutError, match=BEYOND):
            async with waiting(), waiting():
                await never()
        cancelling = asyncio.current_task().cancelling()  # type: ignore[union-attr]
        await asyncio.sleep(0)
    finally:
        DEADLINE.reset(token)
    assert cancelling == 0


async def test_within_the_deadline_what_is_awaited_passes_through() -> None:
    """Its value, and its own errors as they were (a driver's own timeout is not renamed)."""
    token = DEADLINE.set(now() + 60)
    driver = TimeoutError("the driver's own")
    try:
        async with waiting():
            answered = await asyncio.sleep(0, "answer")
        with pytest.raises(TimeoutError) as raised:
            async with waiting():
                raise driver
    finally:
        DEADLINE.reset(token)
    assert (answered, raised.value) == ("answer", driver)


async def test_outside_a_request_nothing_is_bounded() -> None:
    """No deadline: a wait is the engine's own (its timeouts) alone."""
    assert DEADLINE.get() is None
    async with waiting():
        await asyncio.sleep(0)
        await asyncio.sleep(0)


async def test_a_subscriptions_events_are_not_held_to_it() -> None:
    """Once a request streams (graph/server/edge.py `endless`), its time limit no longer
    applies, nor its deadline for the database."""
    token = DEADLINE.set(now())
    try:
        endless()
        lifted = DEADLINE.get()
    finally:
        DEADLINE.reset(token)
    assert lifted is None


async def test_shared_work_is_not_held_to_the_deadline_of_the_request_that_starts_it() -> None:
    """A reading other requests join (the release, a catalog) goes on past the deadline of the
    request that started it; that request's own wait for it is bounded."""
    done = asyncio.Event()

    async def reading() -> str:
        async with waiting():
            await done.wait()
        return "read"

    token = DEADLINE.set(now())
    try:
        task = shared(reading())
        with pytest.raises(TimeoutError, match=BEYOND):
            async with waiting():
                await asyncio.shield(task)
    finally:
        DEADLINE.reset(token)
    done.set()
    assert await task == "read"


async def test_a_shared_failure_nobody_waits_for_is_dropped_quietly() -> None:
    """Every request that waited for it gave up (their deadlines passed): its failure is not
    reported as an exception never retrieved."""
    loop = asyncio.get_running_loop()
    reported: list[dict[str, Any]] = []
    previous = loop.get_exception_handler()
    loop.set_exception_handler(lambda _loop, context: reported.append(context))

    async def failing() -> None:
        raise OSError("the database went away")

    try:
        task = shared(failing())
        await asyncio.wait([task])
        del task
        gc.collect()
    finally:
        loop.set_exception_handler(previous)
    assert reported == []


async def test_a_request_waits_for_the_database_three_quarters_of_its_time_limit(
    synthetic_db, settings
) -> None:
    """The edge sets each request's deadline; the request's own, gone after it."""
    seen: list[tuple[float | None, float]] = []

    async def execute(*_args: Any) -> Any:
        seen.append((DEADLINE.get(), now()))
        raise RuntimeError("seen")

    async with app_client(settings, execute=execute) as (_, client):
        await client.post("/graphql", json={"query": QUERY})
    [(deadline, at)] = seen
    assert deadline is not None
    assert 0 < deadline - at <= DATABASE_SHARE * settings.request_timeout_seconds
    assert DATABASE_SHARE == 0.75
    assert DEADLINE.get() is None


async def test_a_wait_past_the_deadline_is_answered_503_with_retry_after(
    synthetic_db, settings
) -> None:
    async def execute(*_args: Any) -> Any:
        DEADLINE.set(now())  # (the request's own context: its deadline, passed)
        async with waiting():
            await never()

    async with app_client(settings, execute=execute) as (_, client):
        response = await client.post("/graphql", json={"query": QUERY})
    assert (response.status_code, response.headers["retry-after"]) == (503, "1")
    assert response.json() == {
        "errors": [
            {
                "message": "The database is unavailable; try again shortly.",
                "extensions": {"code": "DATABASE_UNAVAILABLE"},
            }
        ],
        "extensions": {"cost": {"requestedQueryCost": None, "actualQueryCost": None}},
    }
