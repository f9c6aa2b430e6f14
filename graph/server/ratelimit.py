"""Cost-based rate limiting: who pays (an API key, else the address) and the leaky buckets,
in this process or in Redis; and the cost report a cached answer carries, re-stamped per client.

Who sends a request is said once, by `identify`, for every bound that keys on a client (its
bucket, its new documents in preparation, its subscriptions). Behind a reverse proxy the peer is
the proxy: `believed_proxies` is the app's first middleware, uvicorn's ProxyHeadersMiddleware,
which takes the client from X-Forwarded-For (the right-most address not of a trusted proxy) when
the peer is one of LEADGREEN_TRUSTED_PROXIES, and from nowhere else (see ARCHITECTURE.md).
"""

from __future__ import annotations

import ipaddress
import logging
import math
import time
from collections.abc import Mapping
from typing import TYPE_CHECKING, Any

import orjson
from starlette.middleware import Middleware
from uvicorn.middleware.proxy_headers import ProxyHeadersMiddleware

from graph.engine.cost import throttle_status
from graph.errors import Code, key_max_cost_exceeded, retry_after_seconds, throttled
from graph.server.partners import DEFAULT_TIER, PartnerKeys, Tier
from graph.server.protocol import Refusal, refusal_body, remembered

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

    def __init__(
        self, settings: Settings, redis: Redis | None = None, partners: PartnerKeys | None = None
    ) -> None:
        self.capacity = settings.rate_limit_capacity
        self.restore_rate = settings.rate_limit_restore_rate
        self.max_cost: int | None = None  # (a tier's: `bucket`)
        self.body_byte_cost = settings.rate_limit_byte_cost / 64
        self.local = CostBucket(self.capacity, self.restore_rate)
        self.redis = redis
        self.script = redis.register_script(_LUA) if redis is not None else None
        self.partners = partners if partners is not None else PartnerKeys(settings)
        # Each tier's buckets in this process, by tier name (a reloaded tier keeps its levels).
        self._locals: dict[str, CostBucket] = {DEFAULT_TIER: self.local}
        self._redis_down = False

    def client(self, scope: Mapping[str, Any], api_key: bytes) -> str:
        """`key:<digest>` for a configured API key, else `addr:<address>` (IPv6: its /64). With
        keys configured, a key not among them is refused (401 UNKNOWN_API_KEY); with none, a
        key is ignored."""
        if api_key and self.partners.configured:
            return self.partners.lookup(api_key)
        return address(scope)

    def tier(self, client: str) -> Tier:
        return self.partners.tier(client)

    def bucket(self, client: str) -> RateLimiter | TierBucket:
        """What the engine charges the client through: its tier's bucket."""
        tier = self.partners.tier(client)
        return self if tier is self.partners.default else TierBucket(self, tier)

    def _local(self, tier: Tier) -> CostBucket:
        bucket = self._locals.get(tier.name)
        if bucket is None:
            bucket = self._locals[tier.name] = CostBucket(tier.capacity, tier.restore_rate)
        bucket.capacity, bucket.restore_rate = tier.capacity, tier.restore_rate
        return bucket

    async def take(self, client: str, cost: float, now: float | None = None) -> Take:
        tier = self.partners.tier(client)
        if self.script is not None:
            found = await self._run(client, cost, "take", tier)
            if found is not None:
                allowed, available = found
                retry = (
                    0.0 if allowed else (min(cost, tier.capacity) - available) / tier.restore_rate
                )
                return allowed, available, retry
        return self._local(tier).take(client, cost, time.monotonic() if now is None else now)

    async def refund(self, client: str, points: float, now: float | None = None) -> float:
        tier = self.partners.tier(client)
        if self.script is not None:
            found = await self._run(client, points, "refund", tier)
            if found is not None:
                return found[1]
        return self._local(tier).refund(client, points, time.monotonic() if now is None else now)

    async def _run(
        self, client: str, amount: float, mode: str, tier: Tier
    ) -> tuple[bool, float] | None:
        assert self.script is not None
        try:
            allowed, available = await self.script(
                keys=[_REDIS_PREFIX + client],
                args=[tier.capacity, tier.restore_rate, amount, mode],
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
            tier = self.partners.tier(client)
            error = throttled(fee, available, tier.capacity, tier.restore_rate, retry_after)
            error.message = error.message.replace("the query costs", "reading this body costs")
            headers = ((b"retry-after", b"%d" % retry_after_seconds(retry_after)),)
            body = refusal_body([error.formatted], throttle=self.status(available, tier))
            raise Refusal.answered(429, body, Code.THROTTLED, headers)

    async def charge(self, body: bytes, client: str, graphql_response: bool) -> bytes | Refusal:
        """A stored answer charged to the client (its actual cost), stamped with the client's
        throttle status; a refusal when its tier's largest cost per request is less than the
        answer's requested cost (KEY_MAX_COST_EXCEEDED), or its bucket cannot pay (429)."""
        costs = stored_costs(body)
        if costs is None:
            return body
        requested, cost = costs
        tier = self.partners.tier(client)
        if tier.max_cost is not None and requested > tier.max_cost:
            error = key_max_cost_exceeded(requested, tier.max_cost, tier.name)
            refused = refusal_body([error.formatted], requested, data=not graphql_response)
            code = 400 if graphql_response else 200
            return Refusal.answered(code, refused, Code.KEY_MAX_COST_EXCEEDED)
        allowed, available, retry_after = await self.take(client, cost)
        status = self.status(available, tier)
        if allowed:
            return stamp(body, status)
        error = throttled(cost, available, tier.capacity, tier.restore_rate, retry_after)
        refused = refusal_body([error.formatted], cost, status, data=not graphql_response)
        headers = ((b"retry-after", b"%d" % retry_after_seconds(retry_after)),)
        return Refusal.answered(429, refused, Code.THROTTLED, headers)

    def status(self, available: float, tier: Tier | None = None) -> dict[str, Any]:
        """The tier's bucket's state, holding `available` points (`throttleStatus`)."""
        tier = tier or self.partners.default
        return throttle_status(tier.capacity, available, tier.restore_rate)


def identify(scope: Mapping[str, Any], api_key: bytes, limiter: RateLimiter | None) -> str:
    """Who sends the request, for every bound that keys on a client: with rate limiting, the
    client its API key names (a key not configured is refused), else `address(scope)`."""
    return limiter.client(scope, api_key) if limiter is not None else address(scope)


def address(scope: Mapping[str, Any]) -> str:
    """`addr:<address>` of the request's client (IPv6: its /64): the peer, or behind a trusted
    proxy the address it forwards (`believed_proxies`)."""
    peer = scope.get("client")
    return "addr:" + _network(peer[0] if peer else "unknown")


def believed_proxies(settings: Settings) -> list[Middleware]:
    """The app's first middleware: X-Forwarded-For (and X-Forwarded-Proto) believed from the
    trusted proxies only; none when there are none (the peer is the client)."""
    if not settings.trusted_proxies:
        return []
    return [Middleware(ProxyHeadersMiddleware, trusted_hosts=list(settings.trusted_proxies))]


class TierBucket:
    """The limiter as the engine sees it for one client of a tier (graph/engine/limits.py's
    `Bucket`): the tier's capacity, restore rate and largest cost per request."""

    __slots__ = ("capacity", "limiter", "max_cost", "restore_rate", "tier_name")

    def __init__(self, limiter: RateLimiter, tier: Tier) -> None:
        self.limiter, self.capacity, self.restore_rate = limiter, tier.capacity, tier.restore_rate
        self.max_cost, self.tier_name = tier.max_cost, tier.name

    async def take(self, client: str, cost: float, now: float | None = None) -> Take:
        return await self.limiter.take(client, cost, now)

    async def refund(self, client: str, points: float, now: float | None = None) -> float:
        return await self.limiter.refund(client, points, now)


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


# A stored answer ends with its cost report: `..."requestedQueryCost":R,"actualQueryCost":N}}}`
# (the engine puts `extensions.cost` last, and only answers without errors are stored).
_REQUESTED = b'"requestedQueryCost":'
_ACTUAL = b',"actualQueryCost":'
_TAIL = b"}}}"


def stored_costs(body: bytes) -> tuple[int, int] | None:
    """The requested and actual costs a stored answer reports, read from its last bytes."""
    at = body.rfind(_REQUESTED, max(0, len(body) - 80))
    if at < 0 or not body.endswith(_TAIL):
        return None
    requested, _, actual = body[at + len(_REQUESTED) : -len(_TAIL)].partition(_ACTUAL)
    try:
        return int(requested), int(actual)
    except ValueError:
        return None


def stored_cost(body: bytes) -> int | None:
    """The actual cost a stored answer reports."""
    costs = stored_costs(body)
    return None if costs is None else costs[1]


def stamp(body: bytes, status: dict[str, Any]) -> bytes:
    """The answer with `extensions.cost.throttleStatus` added (a body `stored_cost` reads)."""
    return b"".join((body[: -len(_TAIL)], b',"throttleStatus":', orjson.dumps(status), _TAIL))
