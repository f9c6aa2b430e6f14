"""Query limits (size, tokens, depth, aliases, directives, cost) and their charging, in one place.

`QueryLimits` reads them from the request's settings, so one schema serves apps with different
settings. It parses and validates itself (with a cache, as strawberry's ParserCache and
ValidationCache do) because its refusals carry codes of their own: strawberry's QueryDepthLimiter,
MaxAliasesLimiter and MaxTokensLimiter report bare errors, the depth limiter skips introspection,
and they walk every path through fragments (a few nested fragments are an exponential walk).
Here each fragment is walked once and counted wherever it is spread.
"""

from __future__ import annotations

import inspect
import logging
import math
import re
import time
import uuid
from collections.abc import AsyncIterator, Iterator
from dataclasses import dataclass
from functools import lru_cache
from typing import Any

from graphql import (
    DocumentNode,
    FloatValueNode,
    GraphQLError,
    GraphQLSchema,
    GraphQLSyntaxError,
    Lexer,
    OperationDefinitionNode,
    Source,
    TokenKind,
    parse,
    validate,
)
from graphql.validation import ASTValidationRule, ValidationRule
from strawberry.extensions import SchemaExtension
from strawberry.schema.validation_rules.maybe_null import MaybeNullValidationRule
from strawberry.schema.validation_rules.one_of import OneOfInputValidationRule

from graph.cost import Pages, actual_cost, requested_cost
from graph.errors import Code, refusal
from graph.http.ratelimit import CostBucket as CostBucket  # where it was: tests import it here
from graph.http.ratelimit import throttled
from graph.settings import Settings
from graph.shape import MAX_FRAGMENT_NESTING, FragmentsTooDeep, Measure, Shape, repeated_directives

log = logging.getLogger("leadgreen")
clock = time.monotonic  # the buckets' clock; tests set their own


@dataclass(frozen=True)
class Limits:
    document_bytes: int
    tokens: int
    depth: int
    aliases: int
    directives: int
    repeated_directives: int
    cost: int
    pages: Pages
    field_suggestions: bool
    rate_limit: bool
    rate_limit_capacity: int
    rate_limit_restore_rate: float

    @classmethod
    def of(cls, settings: Settings) -> Limits:
        return cls(
            document_bytes=settings.max_document_bytes,
            tokens=settings.max_tokens,
            depth=settings.max_depth,
            aliases=settings.max_aliases,
            directives=settings.max_directives,
            repeated_directives=settings.max_repeated_directives,
            cost=settings.max_cost,
            pages=Pages(settings.default_page_size, settings.max_page_size),
            field_suggestions=settings.field_suggestions,
            rate_limit=settings.rate_limit,
            rate_limit_capacity=settings.rate_limit_capacity,
            rate_limit_restore_rate=settings.rate_limit_restore_rate,
        )


DEFAULT_LIMITS = Limits.of(Settings.model_construct())


def limit_errors(document: DocumentNode, limits: Limits) -> list[GraphQLError]:
    """The limits the document goes past (depth, aliases, directives), each its own error."""
    try:
        measure = Measure(document, cap=limits.depth)
        shapes = [
            measure.operation(d)
            for d in document.definitions
            if isinstance(d, OperationDefinitionNode)
        ]
    except FragmentsTooDeep:
        return [
            refusal(
                f"Fragments are spread inside fragments more than {MAX_FRAGMENT_NESTING} deep.",
                Code.QUERY_TOO_DEEP,
            )
        ]
    shape = Shape()
    for each in shapes:
        shape = shape.plus(each)
    errors = []
    if shape.depth > limits.depth:
        errors.append(
            refusal(
                f"The query nests fields more than {limits.depth} deep, the limit.",
                Code.QUERY_TOO_DEEP,
            )
        )
    if shape.aliases > limits.aliases:
        errors.append(
            refusal(
                f"The query uses {shape.aliases} aliases, more than the limit of {limits.aliases}.",
                Code.TOO_MANY_ALIASES,
            )
        )
    if shape.directives > limits.directives:
        errors.append(
            refusal(
                f"The query uses {shape.directives} directives, more than the limit "
                f"of {limits.directives}.",
                Code.TOO_MANY_DIRECTIVES,
            )
        )
    for name, times, where in repeated_directives(document):
        if times > limits.repeated_directives:
            errors.append(
                refusal(
                    f"@{name} is used {times} times on {where}, more than the limit of "
                    f"{limits.repeated_directives}.",
                    Code.TOO_MANY_DIRECTIVES,
                )
            )
            break
    return errors


_TOKENS = re.compile(r"Document contains more than \d+ tokens")
_NESTED = "Document is nested too deeply"


@lru_cache(maxsize=256)
def _parse(query: str, limits: Limits) -> DocumentNode:
    try:
        return parse(query, max_tokens=limits.tokens)
    except GraphQLSyntaxError as error:
        # graphql-core stops at its nesting limit before it has counted every token.
        if _TOKENS.search(error.message) or (
            _NESTED in error.message and _more_tokens_than(query, limits.tokens)
        ):
            raise refusal(
                f"The document has more than {limits.tokens} tokens, the limit.",
                Code.TOO_MANY_TOKENS,
            ) from None
        error.extensions = {
            "code": str(
                Code.QUERY_TOO_DEEP if _NESTED in error.message else Code.GRAPHQL_PARSE_FAILED
            )
        }
        raise


def _more_tokens_than(query: str, limit: int) -> bool:
    lexer = Lexer(Source(query))
    try:
        for _ in range(limit + 1):
            if lexer.advance().kind is TokenKind.EOF:
                return False
    except GraphQLSyntaxError:
        return False
    return True


class FiniteNumbers(ValidationRule):
    """A number literal must fit a double: `1e400` would be read as infinity."""

    def enter_float_value(self, node: FloatValueNode, *_args: object) -> None:
        if not math.isfinite(float(node.value)):
            self.report_error(
                GraphQLError(f"{node.value} is not a finite number a Float can hold.", node)
            )


@lru_cache(maxsize=256)
def _validate(
    schema: GraphQLSchema,
    document: DocumentNode,
    rules: tuple[type[ASTValidationRule], ...],
    limits: Limits,
) -> tuple[GraphQLError, ...]:
    """The limits first: a document past them is not validated further (validation of many
    aliases or repeated directives is slow, and would answer one error per repeat)."""
    refused = limit_errors(document, limits)
    if refused:
        return tuple(refused)
    rules = (*rules, MaybeNullValidationRule, OneOfInputValidationRule, FiniteNumbers)
    return tuple(validate(schema, document, rules, hide_suggestions=not limits.field_suggestions))


_SUGGESTION = re.compile(r"\s*Did you mean .*$", re.S)


class QueryLimits(SchemaExtension):
    """Parses and validates within the request's limits, refuses a query that costs too much
    (or that the client's bucket cannot pay for) before it runs, and reports `extensions.cost`.

    With rate limiting on, the context carries `cost_bucket` (CostBucket's `take` and `refund`,
    plain or awaitable, and its `capacity` and `restore_rate`: the HTTP layer's RateLimiter)
    and `client`, who pays. Without a bucket nothing is charged.
    """

    limits = DEFAULT_LIMITS
    requested: int | None = None
    bucket: Any = None
    client = "anonymous"
    available: float | None = None
    refused = False

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

    def on_parse(self) -> Iterator[None]:
        context = self.execution_context
        if context.graphql_document is None and context.query is not None:
            size = len(context.query.encode())
            if size > self.limits.document_bytes:
                raise refusal(
                    f"The document is {size} bytes, more than the limit of "
                    f"{self.limits.document_bytes}.",
                    Code.DOCUMENT_TOO_LARGE,
                )
            context.graphql_document = _parse(context.query, self.limits)
        yield

    async def on_validate(self) -> AsyncIterator[None]:
        context = self.execution_context
        assert context.graphql_document is not None
        try:
            errors = list(
                _validate(
                    context.schema._schema,
                    context.graphql_document,
                    tuple(context.validation_rules),
                    self.limits,
                )
            )
            if not errors:
                errors = _several_operations(context) or await self._charge()
        except Exception as error:  # a bug here must not reach the client unmasked
            request_id = uuid.uuid4().hex
            log.error("request %s failed checking limits", request_id, exc_info=error)
            errors = [
                GraphQLError(
                    "Internal server error",
                    extensions={"code": "INTERNAL", "requestId": request_id},
                )
            ]
        context.pre_execution_errors = errors
        yield

    async def _charge(self) -> list[GraphQLError]:
        """Errors refusing the query for its cost; none when it may run."""
        context = self.execution_context
        assert context.graphql_document is not None
        self.requested = requested_cost(
            context.schema._schema,
            context.graphql_document,
            context.operation_name,
            context.variables,
            self.limits.pages,
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

    async def get_results(self) -> dict[str, Any]:
        """`cost` for an answer without errors, or one refused for its cost; none otherwise.

        The bucket gets back what the query did not use, whatever the answer.
        """
        context, requested = self.execution_context, self.requested
        if requested is None:
            return {}
        result, actual = context.result, None
        if result is not None and context.graphql_document is not None:
            actual = actual_cost(context.graphql_document, context.operation_name, result.data)
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


def _several_operations(context: Any) -> list[GraphQLError]:
    """The spec's GetOperation() needs a name when a document has several operations;
    strawberry runs the first (it fills in the operation name it was not given)."""
    if getattr(context, "_provided_operation_name", None) is not None:
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
