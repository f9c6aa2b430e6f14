"""Rate limiting at /graphql: who pays, 429 with Retry-After, cache hits charged and re-stamped,
buckets in the process or shared through Redis."""

from __future__ import annotations

import uuid
from typing import Any

import orjson
import pytest

from graph.server.ratelimit import RateLimiter, stamp, stored_cost
from graph.settings import Settings
from tests.conftest import app_client
from tests.test_cache import needs_redis

pytestmark = pytest.mark.anyio

GPUS = "{ gpus { name } }"  # requested cost 5, actual 3 on the synthetic data
DATA = {"gpus": [{"name": "B200"}, {"name": "H100"}]}
# A point every 1,024 s: what a test's milliseconds restore never shows in the figures below.
STILL = 1 / 1024


def limited(capacity: int, **more: Any) -> dict[str, Any]:
    """Rate limiting with documents free to read (their fee: tests/test_adversarial_*.py)."""
    return {
        "rate_limit": True,
        "rate_limit_capacity": capacity,
        "rate_limit_restore_rate": STILL,
        "rate_limit_byte_cost": 0,
        **more,
    }


def status(available: int, capacity: int) -> dict[str, Any]:
    return {"maximumAvailable": capacity, "currentlyAvailable": available, "restoreRate": STILL}


def answered(available: int, capacity: int) -> dict[str, Any]:
    cost = {"requestedQueryCost": 5, "actualQueryCost": 3}
    return {
        "data": DATA,
        "extensions": {"cost": {**cost, "throttleStatus": status(available, capacity)}},
    }


@pytest.mark.parametrize(
    ("client", "api_key", "named"),
    [
        (("203.0.113.7", 5000), b"", "addr:203.0.113.7"),
        (("2001:db8:1:2:3:4:5:6", 5000), b"", "addr:2001:db8:1:2::/64"),
        (("::ffff:203.0.113.7", 5000), b"", "addr:203.0.113.7"),
        (None, b"", "addr:unknown"),
        (("203.0.113.7", 5000), b"secret-1", "key"),
    ],
    ids=["ipv4", "ipv6-prefix", "ipv4-mapped", "no-address", "known-key"],
)
def test_who_pays(client, api_key, named) -> None:
    """A known API key names the client (an unknown one is refused: tests/test_partner_keys.py,
    so inventing keys does not escape the limit); an IPv6 client is its /64."""
    limiter = RateLimiter(Settings(rate_limit=True, api_keys="secret-1, secret-2"))
    found = limiter.client({"client": client}, api_key)
    if named == "key":
        assert found.startswith("key:") and len(found) == 36 and "secret" not in found
    else:
        assert found == named


def test_stamping_a_stored_answer() -> None:
    body = orjson.dumps(
        {"data": DATA, "extensions": {"cost": {"requestedQueryCost": 5, "actualQueryCost": 3}}}
    )
    stamped = stamp(body, status(7, 10))
    assert stored_cost(body) == 3
    assert orjson.loads(stamped) == {
        "data": DATA,
        "extensions": {
            "cost": {"requestedQueryCost": 5, "actualQueryCost": 3, "throttleStatus": status(7, 10)}
        },
    }
    assert stored_cost(b'{"data":{"x":"actualQueryCost"}}') is None


async def test_a_miss_pays_its_actual_cost_and_a_hit_pays_it_again(synthetic_db, settings) -> None:
    async with app_client(settings, **limited(100)) as (_, client):
        miss = await client.post("/graphql", json={"query": GPUS})
        hit = await client.post("/graphql", json={"query": GPUS})
    assert (miss.headers["x-cache"], miss.json()) == ("MISS", answered(97, 100))
    assert (hit.headers["x-cache"], hit.json()) == ("HIT", answered(94, 100))


async def test_a_query_the_bucket_cannot_pay_for_is_429(synthetic_db, settings) -> None:
    """Refused before it runs (it needs its requested cost), with Retry-After."""
    async with app_client(settings, **limited(7)) as (_, client):
        first = await client.post("/graphql", json={"query": GPUS})  # takes 5, gives back 2
        second = await client.post("/graphql", json={"query": "{ tasks { name } }"})  # costs 9
    assert first.json() == answered(4, 7)
    assert (second.status_code, second.headers["retry-after"]) == (429, "3072")
    assert second.json() == {
        "data": None,
        "errors": [
            {
                "message": "Throttled: the query costs 9 and 4 of 7 points are available, "
                "restoring 0.000976562 a second.",
                "extensions": {"code": "THROTTLED", "cost": 9, "retryAfter": 3072.0},
            }
        ],
        "extensions": {
            "cost": {
                "requestedQueryCost": 9,
                "actualQueryCost": None,
                "throttleStatus": status(4, 7),
            }
        },
    }


async def test_a_hit_the_bucket_cannot_pay_for_is_429(synthetic_db, settings) -> None:
    async with app_client(settings, **limited(5)) as (_, client):
        miss = await client.post("/graphql", json={"query": GPUS})  # 5 taken, 2 given back
        hit = await client.post("/graphql", json={"query": GPUS})  # 3 of 2 available
        other = await client.post(
            "/graphql",
            json={"query": GPUS},
            headers={"accept": "application/graphql-response+json"},
        )
    assert miss.json() == answered(2, 5)
    assert (hit.status_code, hit.headers["retry-after"], hit.headers["cache-control"]) == (
        429,
        "1024",
        "no-store",
    )
    refused = {
        "errors": [
            {
                "message": "Throttled: the query costs 3 and 2 of 5 points are available, "
                "restoring 0.000976562 a second.",
                "extensions": {"code": "THROTTLED", "cost": 3, "retryAfter": 1024.0},
            }
        ],
        "extensions": {
            "cost": {
                "requestedQueryCost": 3,
                "actualQueryCost": None,
                "throttleStatus": status(2, 5),
            }
        },
    }
    assert hit.json() == {"data": None, **refused}
    assert (other.status_code, other.json()) == (429, refused)  # no data entry


async def test_each_client_has_its_own_bucket(synthetic_db, settings) -> None:
    async with app_client(settings, **limited(5, api_keys=["k1"])) as (_, client):
        by_address = await client.post("/graphql", json={"query": GPUS})
        by_key = await client.post("/graphql", json={"query": GPUS}, headers={"x-api-key": "k1"})
        invented = await client.post("/graphql", json={"query": GPUS}, headers={"x-api-key": "k2"})
    assert by_address.json() == answered(2, 5)
    assert by_key.json() == answered(2, 5)
    assert invented.status_code == 401  # UNKNOWN_API_KEY: neither its own nor a free bucket


async def test_get_answers_are_charged_too(synthetic_db, settings) -> None:
    async with app_client(settings, **limited(100)) as (_, client):
        miss = await client.get("/graphql", params={"query": GPUS})
        hit = await client.get("/graphql", params={"query": GPUS})
        revalidated = await client.get(
            "/graphql", params={"query": GPUS}, headers={"if-none-match": hit.headers["etag"]}
        )
        after = await client.get("/graphql", params={"query": GPUS})
        # What the three GETs and the 304 cost the client (3 each), as a POST's answer says.
        posted = await client.post("/graphql", json={"query": GPUS})
    assert [r.status_code for r in (miss, hit, revalidated, after)] == [200, 200, 304, 200]
    # GET answers are public (shared caches keep them): no client's throttle status in them.
    public = {"data": DATA, "extensions": {"cost": {"requestedQueryCost": 5, "actualQueryCost": 3}}}
    assert [r.json() for r in (miss, hit, after)] == [public] * 3
    assert posted.json() == answered(85, 100)


@needs_redis
async def test_buckets_are_shared_through_redis(synthetic_db, settings) -> None:
    """Two processes (two apps) with the buckets in Redis: one client, one bucket."""
    key = uuid.uuid4().hex  # a bucket no earlier run can have used
    extra = limited(100, api_keys=[key], cache="redis")
    headers = {"x-api-key": key}
    async with app_client(settings, **extra) as (_, first):
        one = await first.post("/graphql", json={"query": GPUS}, headers=headers)
    async with app_client(settings, **extra) as (_, second):
        two = await second.post("/graphql", json={"query": GPUS}, headers=headers)
    assert (one.json(), two.json()) == (answered(97, 100), answered(94, 100))


async def test_without_redis_the_buckets_stay_in_the_process(synthetic_db, settings) -> None:
    extra = limited(100, cache="redis", redis_url="redis://127.0.0.1:9/0")
    async with app_client(settings, **extra) as (_, client):
        one = await client.post("/graphql", json={"query": GPUS})
        two = await client.post("/graphql", json={"query": GPUS})
    assert (one.json(), two.json()) == (answered(97, 100), answered(94, 100))


async def test_rate_limiting_is_off_by_default(synthetic_db, settings) -> None:
    async with app_client(settings) as (_, client):
        response = await client.post("/graphql", json={"query": GPUS})
    assert response.json() == {
        "data": DATA,
        "extensions": {"cost": {"requestedQueryCost": 5, "actualQueryCost": 3}},
    }
