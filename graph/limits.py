"""Query limits (size, tokens, depth, aliases, directives, cost) and the cost bucket, in one place.

`QueryLimits` reads them from the request's settings, so one schema serves apps with different
settings. It parses and validates itself (with a cache, as strawberry's ParserCache and
ValidationCache do) because its refusals carry codes of their own: strawberry's QueryDepthLimiter,
MaxAliasesLimiter and MaxTokensLimiter report bare errors, the depth limiter skips introspection,
and they walk every path through fragments (a few nested fragments are an exponential walk).
Here each fragment is walked once and counted wherever it is spread.
"""

from __future__ import annotations

import logging
import math
import re
import time
import uuid
from collections import Counter
from collections.abc import Iterator
from dataclasses import dataclass
from functools import lru_cache
from typing import Any

from graphql import (
    DocumentNode,
    FieldNode,
    FragmentDefinitionNode,
    FragmentSpreadNode,
    GraphQLError,
    GraphQLSchema,
    GraphQLSyntaxError,
    InlineFragmentNode,
    OperationDefinitionNode,
    SelectionSetNode,
    parse,
    validate,
)
from graphql.validation import ASTValidationRule
from strawberry.extensions import SchemaExtension
from strawberry.schema.validation_rules.maybe_null import MaybeNullValidationRule
from strawberry.schema.validation_rules.one_of import OneOfInputValidationRule

from graph.cost import Pages, actual_cost, requested_cost
from graph.errors import Code, refusal
from graph.settings import Settings

log = logging.getLogger("leadgreen")
# Fragments spread inside fragments deeper than this are refused (the walk is recursive).
MAX_FRAGMENT_NESTING = 64
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


@dataclass(frozen=True)
class Shape:
    """An operation with its fragments spread: how deep, how many aliases and directives."""

    depth: int = 0
    aliases: int = 0
    directives: int = 0

    def plus(self, other: Shape) -> Shape:
        return Shape(
            max(self.depth, other.depth),
            self.aliases + other.aliases,
            self.directives + other.directives,
        )


class FragmentsTooDeep(Exception):
    pass


class Measure:
    """Shapes of a document's operations, each fragment measured once.

    Depth is followed only to one level past `cap`, so the walk stays as shallow as the limit.
    A fragment is measured where it is first spread, with the room left there; when it is cut
    short the operation is too deep whatever its other counts.
    """

    def __init__(self, document: DocumentNode, cap: int) -> None:
        self.fragments = {
            d.name.value: d for d in document.definitions if isinstance(d, FragmentDefinitionNode)
        }
        self.cap = cap
        self._shapes: dict[str, Shape] = {}
        self._spreading: list[str] = []

    def operation(self, node: OperationDefinitionNode) -> Shape:
        own = Shape(directives=len(node.directives or ()))
        return own.plus(self.selections(node.selection_set, 0, self.cap))

    def selections(self, node: SelectionSetNode, level: int, cap: int) -> Shape:
        shape = Shape()
        for selection in node.selections:
            own = Shape(directives=len(selection.directives or ()))
            if isinstance(selection, FieldNode):
                own = own.plus(Shape(level + 1, 1 if selection.alias else 0))
                if selection.selection_set is not None and level < cap:
                    own = own.plus(self.selections(selection.selection_set, level + 1, cap))
            elif isinstance(selection, InlineFragmentNode):
                own = own.plus(self.selections(selection.selection_set, level, cap))
            elif isinstance(selection, FragmentSpreadNode):
                inner = self.fragment(selection.name.value, cap - level)
                own = own.plus(Shape(level + inner.depth, inner.aliases, inner.directives))
            shape = shape.plus(own)
        return shape

    def fragment(self, name: str, room: int) -> Shape:
        """The fragment's shape, its depth counted from where it is spread."""
        if name in self._shapes:
            return self._shapes[name]
        definition = self.fragments.get(name)
        if definition is None or name in self._spreading:  # unknown, or a cycle: validation says so
            return Shape()
        if len(self._spreading) >= MAX_FRAGMENT_NESTING:
            raise FragmentsTooDeep
        self._spreading.append(name)
        try:
            inner = self.selections(definition.selection_set, 0, room)
        finally:
            self._spreading.pop()
        shape = inner.plus(Shape(directives=len(definition.directives or ())))
        self._shapes[name] = shape
        return shape


def repeated_directives(document: DocumentNode) -> Iterator[tuple[str, int, str]]:
    """(directive, times, where) for every location that uses one directive more than once."""
    stack: list[Any] = list(document.definitions)
    while stack:
        node = stack.pop()
        counts = Counter(d.name.value for d in getattr(node, "directives", None) or ())
        for name, times in counts.items():
            if times > 1:
                yield name, times, _where(node)
        selection_set = getattr(node, "selection_set", None)
        if selection_set is not None:
            stack.extend(selection_set.selections)


def _where(node: Any) -> str:
    if isinstance(node, FieldNode):
        return f"field `{node.name.value}`"
    if isinstance(node, FragmentSpreadNode):
        return f"spread of fragment `{node.name.value}`"
    if isinstance(node, FragmentDefinitionNode):
        return f"fragment `{node.name.value}`"
    if isinstance(node, OperationDefinitionNode):
        return "the operation"
    return "an inline fragment"


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
        if _TOKENS.search(error.message):
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
    rules = (*rules, MaybeNullValidationRule, OneOfInputValidationRule)
    return tuple(validate(schema, document, rules, hide_suggestions=not limits.field_suggestions))


_SUGGESTION = re.compile(r"\s*Did you mean .*$", re.S)


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

    def take(self, client: str, cost: float, now: float) -> tuple[bool, float, float]:
        """(allowed, points available afterwards, seconds until the cost would be allowed)."""
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


_BUCKETS: dict[tuple[int, float], CostBucket] = {}


def process_bucket(capacity: int, restore_rate: float) -> CostBucket:
    """The bucket of this process for these settings (until the HTTP layer brings its own)."""
    key = (capacity, restore_rate)
    if key not in _BUCKETS:
        _BUCKETS[key] = CostBucket(capacity, restore_rate)
    return _BUCKETS[key]


@dataclass
class Throttle:
    bucket: CostBucket
    client: str

    def status(self, now: float) -> dict[str, Any]:
        return {
            "maximumAvailable": self.bucket.capacity,
            "currentlyAvailable": math.floor(self.bucket.available(self.client, now)),
            "restoreRate": self.bucket.restore_rate,
        }


class QueryLimits(SchemaExtension):
    """Parses and validates within the request's limits, refuses a query that costs too much
    (or that the client's bucket cannot pay for) before it runs, and reports `extensions.cost`.

    The context may carry `client` (who pays; "anonymous" otherwise) and `cost_bucket` (any
    object with CostBucket's `take`, `refund` and `available`; this process's otherwise).
    """

    limits = DEFAULT_LIMITS
    requested: int | None = None
    throttle: Throttle | None = None
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

    def on_validate(self) -> Iterator[None]:
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
                errors = self._charge()
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

    def _charge(self) -> list[GraphQLError]:
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
        if not self.limits.rate_limit:
            return []
        limits, now = self.limits, clock()
        bucket = getattr(context.context, "cost_bucket", None) or process_bucket(
            limits.rate_limit_capacity, limits.rate_limit_restore_rate
        )
        self.throttle = Throttle(bucket, getattr(context.context, "client", None) or "anonymous")
        allowed, available, retry_after = bucket.take(self.throttle.client, self.requested, now)
        if allowed:
            return []
        self.refused = True
        return [
            refusal(
                f"Throttled: the query costs {self.requested} and {math.floor(available)} of "
                f"{bucket.capacity} points are available, restoring "
                f"{bucket.restore_rate:g} a second.",
                Code.THROTTLED,
                cost=self.requested,
                retryAfter=math.ceil(retry_after * 10) / 10,
            )
        ]

    def get_results(self) -> dict[str, Any]:
        """`cost` for an answer without errors, or one refused for its cost; none otherwise.

        The bucket gets back what the query did not use, whatever the answer.
        """
        context, requested = self.execution_context, self.requested
        if requested is None:
            return {}
        result, actual, now = context.result, None, clock()
        if result is not None and context.graphql_document is not None:
            actual = actual_cost(context.graphql_document, context.operation_name, result.data)
            if self.throttle is not None:
                self.throttle.bucket.refund(self.throttle.client, requested - actual, now)
        if not self.refused and (result is None or result.errors):
            return {}
        report: dict[str, Any] = {"requestedQueryCost": requested, "actualQueryCost": actual}
        if self.throttle is not None:
            report["throttleStatus"] = self.throttle.status(now)
        return {"cost": report}
