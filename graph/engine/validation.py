"""Validation within limits: how deep, how many aliases and directives (graph/engine/shape.py),
then graphql-core's rules with strawberry's and ours, once per prepared document."""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Any

from graphql import (
    DocumentNode,
    FloatValueNode,
    GraphQLError,
    OperationDefinitionNode,
    validate,
)
from graphql.validation import ValidationRule

from graph.engine.cost import Pages
from graph.engine.internals import EXTRA_RULES
from graph.engine.prepared import Prepared
from graph.engine.shape import (
    MAX_FRAGMENT_NESTING,
    FragmentsTooDeep,
    Measure,
    Shape,
    repeated_directives,
)
from graph.errors import Code, refusal
from graph.settings import Settings


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
        )


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


class FiniteNumbers(ValidationRule):
    """A number literal must fit a double: `1e400` would be read as infinity."""

    def enter_float_value(self, node: FloatValueNode, *_args: object) -> None:
        if not math.isfinite(float(node.value)):
            self.report_error(
                GraphQLError(f"{node.value} is not a finite number a Float can hold.", node)
            )


def validated(
    prepared: Prepared, schema: Any, rules: tuple[Any, ...], limits: Limits
) -> tuple[GraphQLError, ...]:
    """The document's validation errors, once per schema, rules and limits. The limits first:
    a document past them is not validated further (validation of many aliases or repeated
    directives is slow, and would answer one error per repeat)."""
    key = (id(schema), rules, limits)
    errors = prepared.validated.get(key)
    if errors is None:
        refused = limit_errors(prepared.document, limits)
        errors = tuple(refused) or tuple(
            validate(
                schema,
                prepared.document,
                (*rules, *EXTRA_RULES, FiniteNumbers),
                hide_suggestions=not limits.field_suggestions,
            )
        )
        prepared.validated[key] = errors
    return errors
