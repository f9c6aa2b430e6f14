"""Query limits (size, tokens, depth, aliases, directives, cost) and their charging, in one place.

`QueryLimits` reads them from the request's settings, so one schema serves apps with different
settings. It parses and validates itself (each document once, see graph/engine/prepared.py)
because its refusals carry codes of their own: strawberry's QueryDepthLimiter,
MaxAliasesLimiter and MaxTokensLimiter report bare errors, the depth limiter skips
introspection, and they walk every path through fragments (a few nested fragments are an
exponential walk). Here each fragment is walked once and counted wherever it is spread.
"""

from __future__ import annotations

import inspect
import logging
import math
import re
import time
import uuid
from collections.abc import AsyncIterator, Iterator, Mapping
from typing import Any, ClassVar, Protocol

from graphql import GraphQLError, OperationDefinitionNode
from strawberry.extensions import SchemaExtension

from graph.engine.actual_cost import actual_cost
from graph.engine.cost import Size, requested_cost
from graph.engine.internals import core_schema, provided_operation_name
from graph.engine.prepared import Documents, Prepared, off_the_loop, parsed
from graph.engine.validation import Limits, validation_errors
from graph.errors import Code, internal_error, refusal, throttled
from graph.settings import Settings

log = logging.getLogger("leadgreen")
clock = time.monotonic  # the buckets' clock; tests set their own


class Bucket(Protocol):
    """Who pays for queries (the server's rate limiter): `take` and `refund` return, plain or
    awaitable, (allowed, available, retry after) and the points available afterwards."""

    capacity: int
    restore_rate: float

    def take(self, client: str, cost: float, now: float) -> Any: ...
    def refund(self, client: str, points: float, now: float) -> Any: ...


_SUGGESTION = re.compile(r"\s*Did you mean .*$", re.S)


class QueryLimits(SchemaExtension):
    """Parses and validates within the request's limits, refuses a query that costs too much
    (or that the client's bucket cannot pay for) before it runs, and reports `extensions.cost`.

    With rate limiting on, the context carries `cost_bucket` (a `Bucket`) and `client`, who
    pays. Without a bucket nothing is charged. The document, once prepared, is the context's
    `prepared` (the executor's memos live in it). A schema takes a subclass made by `of`.
    """

    sizes: ClassVar[Mapping[str, Size]] = {}
    documents: ClassVar[Documents] = Documents(0)
    limits = Limits.of(Settings.model_construct())
    prepared: Prepared | None = None
    requested: int | None = None
    bucket: Any = None
    client = "anonymous"
    available: float | None = None
    refused = False

    @classmethod
    def of(cls, sizes: Mapping[str, Size], documents: Documents) -> type[QueryLimits]:
        """The extension for a schema whose list fields have these sizes (see graph.engine.cost)
        and whose documents are kept in `documents`."""
        return type("QueryLimits", (cls,), {"sizes": sizes, "documents": documents})

    def on_operation(self) -> Iterator[None]:
        settings = getattr(self.execution_context.context, "settings", None)
        if isinstance(settings, Settings):
            self.limits = Limits.of(settings)
        yield
        result = self.execution_context.result
        if not self.limits.field_suggestions and result is not None:
            for error in getattr(result, "errors", None) or ():
                # Variable values are checked while executing; their errors have graphql-core's own.
                if error.original_error is None or isinstance(error.original_error, GraphQLError):
                    error.message = _SUGGESTION.sub("", error.message)

    async def on_parse(self) -> AsyncIterator[None]:
        """The document, prepared once per process: a new one is paid for first (with rate
        limiting), then parsed (off the loop when large: graph/engine/prepared.py)."""
        context = self.execution_context
        if context.graphql_document is None and context.query is not None:
            text = context.query
            size = len(text.encode())
            if size > self.limits.document_bytes:
                raise refusal(
                    f"The document is {size} bytes, more than the limit of "
                    f"{self.limits.document_bytes}.",
                    Code.DOCUMENT_TOO_LARGE,
                )
            prepared = self.documents.get(text, self.limits.tokens)
            if prepared is None:
                await self._pay_for_reading(text)
                parsing = await off_the_loop(len(text), parsed, text, self.limits.tokens)
                prepared = self.documents.keep(parsing, self.limits.tokens)
            self.prepared = prepared
            context.graphql_document = prepared.document
            _offer(context.context, prepared)
        yield

    async def _pay_for_reading(self, text: str) -> None:
        """Charge the client for parsing and validating a document this process has not
        prepared (its bytes at the byte cost, spaces, newlines and commas at an eighth of it):
        THROTTLED when its bucket cannot pay. Work a client has not paid for is never done."""
        bucket = getattr(self.execution_context.context, "cost_bucket", None)
        if not self.limits.rate_limit or bucket is None or not self.limits.byte_cost:
            return
        fee = math.ceil(_weighed_bytes(text) * self.limits.byte_cost)
        client = getattr(self.execution_context.context, "client", None) or "anonymous"
        allowed, available, retry_after = await _maybe(bucket.take(client, fee, clock()))
        if not allowed:
            raise refusal(
                f"Throttled: reading a new document of this size costs {fee} and "
                f"{math.floor(available)} of {bucket.capacity} points are available, restoring "
                f"{bucket.restore_rate:g} a second.",
                Code.THROTTLED,
                cost=fee,
                retryAfter=math.ceil(retry_after * 10) / 10,
            )

    async def on_validate(self) -> AsyncIterator[None]:
        context = self.execution_context
        assert context.graphql_document is not None
        if self.prepared is None or self.prepared.document is not context.graphql_document:
            self.prepared = Prepared(context.query or "", context.graphql_document)
        try:
            rules = tuple(context.validation_rules)
            schema = core_schema(context.schema)
            errors = list(await self._validated(schema, rules))
            if not errors:
                errors = _several_operations(context) or await self._charge()
        except Exception as error:  # a bug here must not reach the client unmasked
            request_id = uuid.uuid4().hex
            log.error("request %s failed checking limits", request_id, exc_info=error)
            body = internal_error(request_id)
            errors = [GraphQLError(str(body["message"]), extensions=body["extensions"])]
        context.pre_execution_errors = errors
        yield

    async def _validated(self, schema: Any, rules: tuple[Any, ...]) -> tuple[GraphQLError, ...]:
        """The document's validation errors, once per schema, rules and limits (off the loop
        for a large document)."""
        prepared = self.prepared
        assert prepared is not None
        key = (id(schema), rules, self.limits)
        errors = prepared.validated.get(key)
        if errors is None:
            errors = await off_the_loop(
                len(prepared.text), validation_errors, prepared.document, schema, rules, self.limits
            )
            prepared.validated[key] = errors
        return errors

    async def _charge(self) -> list[GraphQLError]:
        """Errors refusing the query for its cost; none when it may run."""
        context = self.execution_context
        assert self.prepared is not None
        self.requested = requested_cost(
            self.prepared,
            core_schema(context.schema),
            context.operation_name,
            context.variables,
            self.limits.pages,
            self.sizes,
        )
        if self.requested is None:  # bad variables: execution says which
            return []
        if self.requested > self.limits.cost:
            self.refused = True
            return [
                refusal(
                    f"The query costs {self.requested}, more than the limit of {self.limits.cost}.",
                    Code.QUERY_TOO_COMPLEX,
                    cost=self.requested,
                    maxCost=self.limits.cost,
                )
            ]
        bucket = getattr(context.context, "cost_bucket", None)
        if not self.limits.rate_limit or bucket is None:
            return []
        self.bucket, self.client = bucket, getattr(context.context, "client", None) or "anonymous"
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

    async def cancel(self) -> None:
        """The request is to run again from the start (graph/engine/direct.py gave it up): give
        back what its cost took from the bucket."""
        if self.bucket is not None and self.requested is not None and not self.refused:
            await _maybe(self.bucket.refund(self.client, self.requested, clock()))
        self.bucket, self.requested = None, None

    async def get_results(self) -> dict[str, Any]:
        """`cost` for an answer without errors, or one refused for its cost; none otherwise.

        The bucket gets back what the query did not use, whatever the answer.
        """
        context, requested = self.execution_context, self.requested
        if requested is None:
            return {}
        result, actual = context.result, None
        if result is not None and self.prepared is not None:
            actual = getattr(context.context, "counted_cost", None)
            if actual is None or result.errors:
                actual = actual_cost(self.prepared, context.operation_name, result.data)
            if self.bucket is not None and not self.refused:
                self.available = await _maybe(
                    self.bucket.refund(self.client, requested - actual, clock())
                )
        if not self.refused and (result is None or result.errors):
            return {}
        report: dict[str, Any] = {"requestedQueryCost": requested, "actualQueryCost": actual}
        if self.bucket is not None and self.available is not None:
            report["throttleStatus"] = {
                "maximumAvailable": self.bucket.capacity,
                "currentlyAvailable": math.floor(self.available),
                "restoreRate": self.bucket.restore_rate,
            }
        return {"cost": report}


_NOT_SIGNIFICANT = str.maketrans("", "", " \t\n\r,")
# Reading a space, a newline or a comma costs the lexer about a tenth of a token's character.
IGNORED_WEIGHT = 0.125


def _weighed_bytes(text: str) -> float:
    """The document's bytes as reading them costs: those the lexer skips between tokens
    (spaces, newlines, commas) at IGNORED_WEIGHT."""
    size = len(text.encode())
    significant = len(text.translate(_NOT_SIGNIFICANT).encode())
    return significant + (size - significant) * IGNORED_WEIGHT


def _offer(context: Any, prepared: Prepared) -> None:
    """Hand the prepared document to the executor, through a context that has room for it."""
    if hasattr(context, "prepared"):
        context.prepared = prepared


def _several_operations(context: Any) -> list[GraphQLError]:
    """The spec's GetOperation() needs a name when a document has several operations;
    strawberry runs the first (it fills in the operation name it was not given)."""
    if provided_operation_name(context) is not None:
        return []
    definitions = context.graphql_document.definitions
    if sum(isinstance(d, OperationDefinitionNode) for d in definitions) < 2:
        return []
    return [
        refusal(
            "The document holds several operations: say which to run with `operationName`.",
            Code.BAD_REQUEST,
        )
    ]


async def _maybe(value: Any) -> Any:
    return await value if inspect.isawaitable(value) else value
