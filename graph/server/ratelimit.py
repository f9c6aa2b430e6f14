"""Cost-based rate limiting: who pays (an API key, else the address) and the leaky buckets,
in this process or in Redis; and the cost report a cached answer carries, re-stamped per client.
"""

from __future__ import annotations

import hashlib
import ipaddress
import logging
import math
import time
from collections.abc import Mapping
from typing import TYPE_CHECKING, Any

import orjson

from graph.errors import Code, retry_after_seconds, throttled
from graph.server.protocol import Refusal, remembered

if TYPE_CHECKING:
    from redis.asyncio import Redis

    from graph.settings import Settings

log = logging.getLogger("leadgreen")
# Bodies up to this size are read for free (a request with its variables, even a large one).
FREE_BODY_BYTES = 16 * 1024
# (allowed, points available afterwards, seconds until the cost would be allowed)
Take = tuple[bool, float, float]


class CostBucket:
    """A leaky bucket of cost points per client, held in this process (Shopify's model).

    Each client's bucket holds up to `capacity` points and refills at `restore_rate` points a
    second. A query takes its requested cost before it runs and gives back what it did not use.
    A query costing more than the capacity runs once the bucket is full, and leaves it in debt.
    Buckets that have refilled are forgotten once more than `max_clients` are held.
    """

    def __init__(self, capacity: int, restore_rate: float, *, max_clients: int = 100_000) -> None:
        self.capacity, self.restore_rate, self.max_clients = capacity, restore_rate, max_clients
        self._levels: dict[str, tuple[float, float]] = {}  # client -> (points, at)

    def available(self, client: str, now: float) -> float:
        points, at = self._levels.get(client, (self.capacity, now))
        return min(float(self.capacity), points + max(0.0, now - at) * self.restore_rate)

    def take(self, client: str, cost: float, now: float) -> Take:
        available = self.available(client, now)
        needed = min(cost, self.capacity)
        if available < needed:
            self._levels[client] = (available, now)
            return False, available, (needed - available) / self.restore_rate
        self._levels[client] = (available - cost, now)
        if len(self._levels) > self.max_clients:
            self._forget_full(now)
        return True, available - cost, 0.0

    def refund(self, client: str, points: float, now: float) -> float:
        """Give back points a query did not use (negative: take what it used beyond its
        estimate); returns the points available afterwards."""
        available = min(float(self.capacity), self.available(client, now) + points)
        self._levels[client] = (available, now)
        return available

    def _forget_full(self, now: float) -> None:
        full = [c for c in self._levels if self.available(c, now) >= self.capacity]
        for client in full:
            del self._levels[client]


# The same bucket as CostBucket's, kept in a Redis hash per client; Redis's clock, so that
# every process agrees. The key expires when the bucket would be full again.
_LUA = """
local t = redis.call('TIME')
local now = tonumber(t[1]) + tonumber(t[2]) / 1000000
local capacity, rate, cost = tonumber(ARGV[1]), tonumber(ARGV[2]), tonumber(ARGV[3])
local level = redis.call('HMGET', KEYS[1], 'p', 't')
local points, at = tonumber(level[1]), tonumber(level[2])
if points == nil or at == nil then points, at = capacity, now end
local available = math.min(capacity, points + math.max(0, now - at) * rate)
local allowed = 1
if ARGV[4] == 'take' then
  if available < math.min(cost, capacity) then allowed = 0 else available = available - cost end
else
  available = math.min(capacity, available + cost)
end
redis.call('HSET', KEYS[1], 'p', tostring(available), 't', tostring(now))
redis.call('EXPIRE', KEYS[1], math.max(1, math.ceil((capacity - available) / rate) + 1))
return {allowed, tostring(available)}
"""
_REDIS_PREFIX = "leadgreen:bucket:"


class RateLimiter:
    """Names the client of a request and charges its bucket.

    The buckets are in this process, or in Redis (one Lua script per charge) with this
    process's buckets standing in while Redis is unreachable. `take` and `refund` have
    CostBucket's arguments (the clock is Redis's there), awaited: the engine charges through
    them (the context's `cost_bucket`), and so does a cache hit.
    """

    def __init__(self, settings: Settings, redis: Redis | None = None) -> None:
        self.capacity = settings.rate_limit_capacity
        self.restore_rate = settings.rate_limit_restore_rate
        self.body_byte_cost = settings.rate_limit_byte_cost / 64
        self.local = CostBucket(self.capacity, self.restore_rate)
        self.redis = redis
        self.script = redis.register_script(_LUA) if redis is not None else None
        self.keys = frozenset(_digest(key.encode()) for key in settings.api_keys)
        self._redis_down = False

    def client(self, scope: Mapping[str, Any], api_key: bytes) -> str:
        """`key:<digest>` for a known API key, else `addr:<address>` (IPv6: its /64)."""
        if api_key and self.keys:
            digest = _digest(api_key)
            if digest in self.keys:
                return "key:" + digest
        peer = scope.get("client")
        return "addr:" + _network(peer[0] if peer else "unknown")

    async def take(self, client: str, cost: float, now: float | None = None) -> Take:
        if self.script is not None:
            found = await self._run(client, cost, "take")
            if found is not None:
                allowed, available = found
                retry = (
                    0.0 if allowed else (min(cost, self.capacity) - available) / self.restore_rate
                )
                return allowed, available, retry
        return self.local.take(client, cost, time.monotonic() if now is None else now)

    async def refund(self, client: str, points: float, now: float | None = None) -> float:
        if self.script is not None:
            found = await self._run(client, points, "refund")
            if found is not None:
                return found[1]
        return self.local.refund(client, points, time.monotonic() if now is None else now)

    async def _run(self, client: str, amount: float, mode: str) -> tuple[bool, float] | None:
        assert self.script is not None
        try:
            allowed, available = await self.script(
                keys=[_REDIS_PREFIX + client],
                args=[self.capacity, self.restore_rate, amount, mode],
            )
        except Exception:
            if not self._redis_down:
                log.warning("redis unreachable; rate limiting in this process", exc_info=True)
            self._redis_down = True
            return None
        if self._redis_down:
            log.warning("redis reachable again; rate limiting through it")
            self._redis_down = False
        return bool(allowed), float(available)

    async def pay_for_body(self, client: str, body: bytes) -> None:
        """Charge the client for reading a request body past FREE_BODY_BYTES (decoding it and
        hashing its variables): a sixty-fourth of the byte cost a byte. A Refusal (429
        THROTTLED) when its bucket cannot pay."""
        if len(body) <= FREE_BODY_BYTES or not self.body_byte_cost:
            return
        fee = math.ceil(len(body) * self.body_byte_cost)
        allowed, available, retry_after = await self.take(client, fee)
        if not allowed:
            error = throttled(fee, available, self.capacity, self.restore_rate, retry_after)
            error.message = error.message.replace("the query costs", "reading this body costs")
            headers = ((b"retry-after", b"%d" % retry_after_seconds(retry_after)),)
            body = orjson.dumps({"errors": [error.formatted]})
            raise Refusal.answered(429, body, Code.THROTTLED, headers)

    async def charge(self, body: bytes, client: str, graphql_response: bool) -> bytes | Refusal:
        """A stored answer charged to the client (its actual cost), stamped with the client's
        throttle status; a 429 refusal when the bucket cannot pay for it."""
        cost = stored_cost(body)
        if cost is None:
            return body
        allowed, available, retry_after = await self.take(client, cost)
        status = self.status(available)
        if allowed:
            return stamp(body, status)
        error = throttled(cost, available, self.capacity, self.restore_rate, retry_after)
        answer: dict[str, Any] = {} if graphql_response else {"data": None}
        answer["errors"] = [error.formatted]
        answer["extensions"] = {
            "cost": {"requestedQueryCost": cost, "actualQueryCost": None, "throttleStatus": status}
        }
        headers = ((b"retry-after", b"%d" % retry_after_seconds(retry_after)),)
        return Refusal.answered(429, orjson.dumps(answer), Code.THROTTLED, headers)

    def status(self, available: float) -> dict[str, Any]:
        return {
            "maximumAvailable": self.capacity,
            "currentlyAvailable": math.floor(available),
            "restoreRate": self.restore_rate,
        }


def _digest(key: bytes) -> str:
    return hashlib.sha256(key).hexdigest()[:32]


@remembered(entries=4096, max_key=64)
def _network(host: str) -> str:
    """One IPv6 client holds a /64; elsewhere the address itself."""
    try:
        address = ipaddress.ip_address(host)
    except ValueError:
        return host
    if isinstance(address, ipaddress.IPv6Address):
        if address.ipv4_mapped is not None:
            return str(address.ipv4_mapped)
        return str(ipaddress.IPv6Network((address, 64), strict=False))
    return str(address)


# A stored answer ends with its cost report: `..."actualQueryCost":N}}}` (the engine puts
# `extensions.cost` last, and only answers without errors are stored).
_ACTUAL = b'"actualQueryCost":'
_TAIL = b"}}}"


def stored_cost(body: bytes) -> int | None:
    """The actual cost a stored answer reports, read from its last bytes."""
    at = body.rfind(_ACTUAL, max(0, len(body) - 48))
    if at < 0 or not body.endswith(_TAIL):
        return None
    try:
        return int(body[at + len(_ACTUAL) : -len(_TAIL)])
    except ValueError:
        return None


def stamp(body: bytes, status: dict[str, Any]) -> bytes:
    """The answer with `extensions.cost.throttleStatus` added (a body `stored_cost` reads)."""
    return b"".join((body[: -len(_TAIL)], b',"throttleStatus":', orjson.dumps(status), _TAIL))
