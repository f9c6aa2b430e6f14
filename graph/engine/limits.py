"""What a request may ask and what it pays: its document read within the limits (size, tokens),
validated within them (graph/engine/validation.py), and its cost charged before it runs.

The limits come from the request's settings, so one schema serves apps with different
settings. Refusals carry codes of their own (strawberry's QueryDepthLimiter, MaxAliasesLimiter
and MaxTokensLimiter report bare errors and walk every path through fragments; here each
fragment is walked once and counted wherever it is spread). With rate limiting on, the context
carries `cost_bucket` (a `Bucket`) and `client`, who pays: a document this process has not read
yet is paid for before it is read, a query's estimated cost before it runs, and what the answer
did not use is given back after it.
"""

from __future__ import annotations

import asyncio
import inspect
import math
import re
import time
from collections.abc import Mapping
from typing import Any, Protocol

from graphql import GraphQLError, GraphQLSchema, OperationDefinitionNode

from graph.caches import Bounded, fixed
from graph.engine.cost import Size, actual_cost, report, requested_cost, throttle_status
from graph.engine.prepared import CLIENT, PREPARING, Documents, Prepared, off_the_loop, parsed
from graph.engine.validation import Limits, validation_errors
from graph.errors import Code, key_max_cost_exceeded, refusal, throttled
from graph.settings import Settings

clock = time.monotonic  # the buckets' clock; tests set their own


class Bucket(Protocol):
    """Who pays for queries (the server's rate limiter): `take` and `refund` return, plain or
    awaitable, (allowed, available, retry after) and the points available afterwards."""

    capacity: int
    restore_rate: float

    def take(self, client: str, cost: float, now: float) -> Any: ...
    def refund(self, client: str, points: float, now: float) -> Any: ...


DEFAULT = Limits.of(Settings.model_construct())
# The limits of each settings object lately seen (one per app), by identity.
_LIMITS: Bounded[int, tuple[Settings, Limits]] = Bounded(64 * 1024, fixed(1024))


def limits_of(context: Any) -> Limits:
    """The limits of the request's settings (the defaults for a context without settings)."""
    settings = getattr(context, "settings", None)
    if not isinstance(settings, Settings):
        return DEFAULT
    known = _LIMITS.get(id(settings))
    if known is None or known[0] is not settings:
        known = _LIMITS[id(settings)] = (settings, Limits.of(settings))
    return known[1]


_SUGGESTION = re.compile(r"\s*Did you mean .*$", re.S)


def without_suggestions(errors: list[GraphQLError]) -> None:
    """Validation's and coercion's errors without graphql-core's "Did you mean" (the setting
    `field_suggestions` off): they would list the schema's names to a client probing it."""
    for error in errors:
        if error.original_error is None or isinstance(error.original_error, GraphQLError):
            error.message = _SUGGESTION.sub("", error.message)


# The texts being read (parsed) now, each with what its readers wait for: a request for a
# text another is reading waits for that document instead of reading it again.
READING: dict[str, asyncio.Future[None]] = {}


class Account:
    """What one request pays, and the cost report of its answer (`extensions.cost`)."""

    __slots__ = (
        "available",
        "bucket",
        "client",
        "context",
        "limits",
        "preparing",
        "refused",
        "requested",
    )

    def __init__(self, limits: Limits, context: Any) -> None:
        self.limits, self.context = limits, context
        self.requested: int | None = None
        self.bucket: Any = None
        self.client = "anonymous"
        self.available: float | None = None
        self.refused = False
        # The new document this request prepares (its client and size), while it does.
        self.preparing: tuple[str, int] | None = None

    async def prepare(self, documents: Documents, text: str) -> Prepared:
        """The document of `text`, prepared once per process: refused past the size limit; a
        new one paid for (with rate limiting), then parsed (off the loop when large) within
        the token limit. A GraphQLError when it is refused or not a document."""
        limits = self.limits
        size = len(text.encode())
        if size > limits.document_bytes:
            raise refusal(
                f"The document is {size} bytes, more than the limit of {limits.document_bytes}.",
                Code.DOCUMENT_TOO_LARGE,
            )
        prepared = documents.get(text, limits.tokens)
        reading = READING.get(text)
        if prepared is None and reading is not None:  # read for another request now: wait
            await asyncio.shield(reading)
            prepared = documents.get(text, limits.tokens)
        if prepared is None:
            self._enter(len(text))
            done = READING[text] = asyncio.get_running_loop().create_future()
            try:
                await self._pay_for_reading(text)
                parsing = await off_the_loop(len(text), parsed, text, limits.tokens)
                prepared = documents.keep(parsing, limits.tokens)
            finally:
                if READING.get(text) is done:
                    del READING[text]
                done.set_result(None)
        return prepared

    def _enter(self, size: int) -> None:
        """Begin preparing a new document of `size` characters, within the bounds on new
        documents (`PREPARING`): PREPARATION_BUSY past them."""
        client = CLIENT.get()
        if not PREPARING.enter(client, size):
            raise refusal(
                "The server is busy preparing new documents (this client's, or as many as it "
                "prepares at once); send it again shortly, or send a document it has run.",
                Code.PREPARATION_BUSY,
                retryAfter=1,
            )
        self.preparing = client, size

    def prepared(self) -> None:
        """The new document's preparation (parse, validation, cost, plan) is over."""
        if self.preparing is not None:
            PREPARING.leave(*self.preparing)
            self.preparing = None

    async def _pay_for_reading(self, text: str) -> None:
        """Charge the client for parsing and validating a document this process has not
        prepared (its bytes at the byte cost, spaces, newlines and commas at an eighth of it):
        THROTTLED when its bucket cannot pay. Work a client has not paid for is never done."""
        bucket = getattr(self.context, "cost_bucket", None)
        if not self.limits.rate_limit or bucket is None or not self.limits.byte_cost:
            return
        fee = math.ceil(_weighed_bytes(text) * self.limits.byte_cost)
        client = getattr(self.context, "client", None) or "anonymous"
        allowed, available, retry_after = await _maybe(bucket.take(client, fee, clock()))
        self.bucket, self.client, self.available = bucket, client, available
        if not allowed:
            raise refusal(
                f"Throttled: reading a new document of this size costs {fee} and "
                f"{math.floor(available)} of {bucket.capacity} points are available, restoring "
                f"{bucket.restore_rate:g} a second.",
                Code.THROTTLED,
                cost=fee,
                retryAfter=math.ceil(retry_after * 10) / 10,
            )

    async def admit(
        self,
        prepared: Prepared,
        schema: GraphQLSchema,
        rules: tuple[Any, ...],
        operation_name: str | None,
        provided_name: str | None,
        variables: Mapping[str, Any] | None,
        sizes: Mapping[str, Size],
    ) -> list[GraphQLError]:
        """The errors refusing the query before it runs: its validation's (once per document
        and limits, off the loop when large), several operations without a name, or its cost
        (past the limit, or more than the client's bucket holds); none when it may run."""
        errors = list(await self._validated(prepared, schema, rules))
        if errors:
            return errors
        if provided_name is None and _operations(prepared) > 1:
            # The spec's GetOperation() needs a name; strawberry would run the first.
            return [
                refusal(
                    "The document holds several operations: say which to run with `operationName`.",
                    Code.BAD_REQUEST,
                )
            ]
        return await self._charge(prepared, schema, operation_name, variables, sizes)

    async def _validated(
        self, prepared: Prepared, schema: GraphQLSchema, rules: tuple[Any, ...]
    ) -> tuple[GraphQLError, ...]:
        key = (rules, self.limits)  # a document belongs to one schema's documents
        errors = prepared.validated.get(key)
        if errors is None:
            errors = await off_the_loop(
                len(prepared.text), validation_errors, prepared.document, schema, rules, self.limits
            )
            prepared.validated[key] = errors
        return errors

    async def _charge(
        self,
        prepared: Prepared,
        schema: GraphQLSchema,
        operation_name: str | None,
        variables: Mapping[str, Any] | None,
        sizes: Mapping[str, Size],
    ) -> list[GraphQLError]:
        """Errors refusing the query for its cost; none when it may run."""
        limits = self.limits
        self.requested = requested_cost(
            prepared, schema, operation_name, variables, limits.pages, sizes
        )
        if self.requested is None:  # bad variables: execution says which
            return []
        if self.requested > limits.cost:
            self.refused = True
            return [
                refusal(
                    f"The query costs {self.requested}, more than the limit of {limits.cost}.",
                    Code.QUERY_TOO_COMPLEX,
                    cost=self.requested,
                    maxCost=limits.cost,
                )
            ]
        bucket = getattr(self.context, "cost_bucket", None)
        if not limits.rate_limit or bucket is None:
            return []
        self.bucket, self.client = bucket, getattr(self.context, "client", None) or "anonymous"
        key_max = getattr(bucket, "max_cost", None)  # an API key's tier's (a `TierBucket`)
        if key_max is not None and self.requested > key_max:
            self.refused = True
            return [key_max_cost_exceeded(self.requested, key_max, bucket.tier_name)]
        allowed, self.available, retry_after = await _maybe(
            bucket.take(self.client, self.requested, clock())
        )
        if allowed:
            return []
        self.refused = True
        return [
            throttled(
                self.requested, self.available, bucket.capacity, bucket.restore_rate, retry_after
            )
        ]

    async def report(
        self,
        prepared: Prepared | None,
        operation_name: str | None,
        executed: bool,
        data: Any = None,
        errors: bool = False,
        counted: int | None = None,
    ) -> dict[str, Any]:
        """The answer's `extensions` (`cost.report`): its requested cost once estimated, its
        actual cost once it ran (`counted` as the answer was built, else walked: an answer
        with errors), and the bucket's state once one was charged. The bucket gets back what
        an executed query did not use, whatever the answer."""
        requested, actual = self.requested, None
        if executed and prepared is not None and requested is not None:
            actual = _actual(prepared, operation_name, data, errors, counted)
            if self.bucket is not None and not self.refused:
                self.available = await _maybe(
                    self.bucket.refund(self.client, requested - actual, clock())
                )
        throttle = None
        if self.bucket is not None and self.available is not None:
            bucket = self.bucket
            throttle = throttle_status(bucket.capacity, self.available, bucket.restore_rate)
        return report(requested, actual, throttle)

    def event(
        self,
        prepared: Prepared,
        operation_name: str | None,
        data: Any,
        errors: bool,
        counted: int | None,
    ) -> dict[str, Any]:
        """A subscription event's `extensions`: the subscription's requested cost (charged
        once, when it began) and the event's actual cost; no bucket was charged for it."""
        return report(self.requested, _actual(prepared, operation_name, data, errors, counted))


def _actual(
    prepared: Prepared, operation_name: str | None, data: Any, errors: bool, counted: int | None
) -> int:
    """An answer's actual cost: as counted while it was built, else (with errors) walked."""
    if counted is not None and not errors:
        return counted
    return actual_cost(prepared, operation_name, data)


def _operations(prepared: Prepared) -> int:
    return sum(isinstance(d, OperationDefinitionNode) for d in prepared.document.definitions)


_NOT_SIGNIFICANT = str.maketrans("", "", " \t\n\r,")
# Reading a space, a newline or a comma costs the lexer about a tenth of a token's character.
IGNORED_WEIGHT = 0.125


def _weighed_bytes(text: str) -> float:
    """The document's bytes as reading them costs: those the lexer skips between tokens
    (spaces, newlines, commas) at IGNORED_WEIGHT."""
    size = len(text.encode())
    significant = len(text.translate(_NOT_SIGNIFICANT).encode())
    return significant + (size - significant) * IGNORED_WEIGHT


async def _maybe(value: Any) -> Any:
    return await value if inspect.isawaitable(value) else value
