"""Validation within limits: how deep, how many aliases and directives (graph/engine/shape.py),
how broad (graph/engine/breadth.py), then graphql-core's rules with strawberry's and ours, once
per prepared document. The limits bound what those rules can cost, so they run first."""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Any

from graphql import (
    DocumentNode,
    FloatValueNode,
    GraphQLError,
    GraphQLSchema,
    OperationDefinitionNode,
    is_input_object_type,
    is_interface_type,
    is_object_type,
    validate,
)
from graphql.language import ParallelVisitor, visit
from graphql.validation import (
    ASTValidationContext,
    KnownFragmentNamesRule,
    NoFragmentCyclesRule,
    NoUnusedFragmentsRule,
    ValidationRule,
)

from graph import internals
from graph.caches import Bounded, fixed
from graph.engine.breadth import field_merges, fragment_problem, most_arguments, selected_fields
from graph.engine.cost import Pages
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
    fields: int
    field_merges: int
    cost: int
    pages: Pages
    field_suggestions: bool
    rate_limit: bool
    byte_cost: float

    @classmethod
    def of(cls, settings: Settings) -> Limits:
        return cls(
            document_bytes=settings.max_document_bytes,
            tokens=settings.max_tokens,
            depth=settings.max_depth,
            aliases=settings.max_aliases,
            directives=settings.max_directives,
            repeated_directives=settings.max_repeated_directives,
            fields=settings.max_fields,
            field_merges=settings.max_field_merges,
            cost=settings.max_cost,
            pages=Pages(settings.default_page_size, settings.max_page_size),
            field_suggestions=settings.field_suggestions,
            rate_limit=settings.rate_limit,
            byte_cost=settings.rate_limit_byte_cost,
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
        return [_fragments_too_deep()]
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


def too_many_fields(document: DocumentNode, limits: Limits) -> list[GraphQLError]:
    """TOO_MANY_FIELDS past the limit (counted in one visit of each node)."""
    try:
        fields = selected_fields(document, limits.fields)
    except FragmentsTooDeep:
        return [_fragments_too_deep()]
    if fields <= limits.fields:
        return []
    return [
        refusal(
            f"The query selects more than {limits.fields} fields (a fragment's counted "
            "wherever it is spread), the limit.",
            Code.TOO_MANY_FIELDS,
            maxFields=limits.fields,
        )
    ]


def too_many_merges(document: DocumentNode, limits: Limits) -> list[GraphQLError]:
    """TOO_MANY_FIELD_MERGES past the limit (graph/engine/breadth.py)."""
    if field_merges(document, limits.field_merges) <= limits.field_merges:
        return []
    return [
        refusal(
            "The query selects fields more than once at the same place (or spreads fragments "
            f"side by side) so often that merging them takes more than {limits.field_merges} "
            "comparisons, the limit: select each field once, or give repeats aliases of their "
            "own.",
            Code.TOO_MANY_FIELD_MERGES,
            maxFieldMerges=limits.field_merges,
        )
    ]


def too_many_arguments(document: DocumentNode, schema: GraphQLSchema) -> list[GraphQLError]:
    """An error when a field or directive is given more arguments, or an input object more
    fields, than any of the schema's takes: such a document is invalid, and validating it
    all would take long (one error per argument, each compared with the others)."""
    arguments, fields = most_arguments(document)
    declared_arguments, declared_fields = _declared(schema)
    if arguments > declared_arguments:
        return [
            refusal(
                f"A field or directive is given {arguments} arguments; none of this API's "
                f"takes more than {declared_arguments}.",
                Code.GRAPHQL_VALIDATION_FAILED,
            )
        ]
    if fields > declared_fields:
        return [
            refusal(
                f"An input object is given {fields} fields; none of this API's has more than "
                f"{declared_fields}.",
                Code.GRAPHQL_VALIDATION_FAILED,
            )
        ]
    return []


# What each schema lately validated against declares, by identity (one per app).
_DECLARED: Bounded[int, tuple[GraphQLSchema, tuple[int, int]]] = Bounded(64 * 1024, fixed(256))


def _declared(schema: GraphQLSchema) -> tuple[int, int]:
    """The most arguments a field or directive of the schema declares, and the most fields
    an input object type of it declares (once per schema)."""
    known = _DECLARED.get(id(schema))
    if known is None or known[0] is not schema:
        arguments = max((len(d.args) for d in schema.directives), default=0)
        fields = 0
        for named in schema.type_map.values():
            if is_object_type(named) or is_interface_type(named):
                arguments = max([arguments, *(len(f.args) for f in named.fields.values())])
            elif is_input_object_type(named):
                fields = max(fields, len(named.fields))
        known = _DECLARED[id(schema)] = (schema, (arguments, fields))
    return known[1]


# Validation's rules about fragments, none of which needs the schema's types.
FRAGMENT_RULES = (KnownFragmentNamesRule, NoFragmentCyclesRule, NoUnusedFragmentsRule)


def fragment_errors(document: DocumentNode) -> list[GraphQLError]:
    """Validation's errors for fragments unknown, unused or spread in a cycle, without the
    rest of validation (which would walk the cycles, and visits every node with its type)."""
    if not fragment_problem(document):
        return []
    errors: list[GraphQLError] = []
    context = ASTValidationContext(document, errors.append)
    visit(document, ParallelVisitor([rule(context) for rule in FRAGMENT_RULES]))  # type: ignore[arg-type]
    return errors or [
        refusal(
            "The document's fragments are unknown, unused or spread in a cycle.",
            Code.GRAPHQL_VALIDATION_FAILED,
        )
    ]


def _fragments_too_deep() -> GraphQLError:
    return refusal(
        f"Fragments are spread inside fragments more than {MAX_FRAGMENT_NESTING} deep.",
        Code.QUERY_TOO_DEEP,
    )


def validation_errors(
    document: DocumentNode, schema: Any, rules: tuple[Any, ...], limits: Limits
) -> tuple[GraphQLError, ...]:
    """The document's validation errors. The limits first, each costing a visit of the
    document's nodes at most: a document past them is not validated further (validation of
    many aliases, repeated fields or repeated directives is slow, and would answer one error
    per repeat); then fragments unknown, unused or cyclic, which leave the breadth undefined;
    then the merges their breadth takes. What validation then costs is bounded by the
    document's size and these limits (see graph/engine/breadth.py). Touches nothing shared: a
    worker thread may run it."""
    refused = (
        limit_errors(document, limits)
        or too_many_fields(document, limits)
        or too_many_arguments(document, schema)
        or fragment_errors(document)
        or too_many_merges(document, limits)
    )
    return tuple(refused) or tuple(
        validate(
            schema,
            document,
            (*rules, *internals.EXTRA_RULES, FiniteNumbers),
            max_errors=MAX_ERRORS,
            hide_suggestions=not limits.field_suggestions,
        )
    )


# Validation stops at this many errors (graphql-core's default is 100): each costs a lookup of
# its location and suggestions, and a client fixes its document a few errors at a time.
MAX_ERRORS = 20
