"""Validation within limits, once per prepared document: how deep, how many aliases and
directives (a document's shape, its fragments counted wherever they are spread and each walked
once), how broad (the fields it selects and the comparisons merging its repeated fields makes,
measured before graphql-core's rules), then graphql-core's rules with strawberry's and ours. The
limits bound what those rules can cost, so they run first."""

from __future__ import annotations

import math
from collections import Counter
from collections.abc import Iterable, Iterator
from dataclasses import dataclass
from typing import Any

from graphql import (
    DocumentNode,
    FieldNode,
    FloatValueNode,
    FragmentDefinitionNode,
    FragmentSpreadNode,
    GraphQLError,
    GraphQLSchema,
    InlineFragmentNode,
    ListValueNode,
    ObjectValueNode,
    OperationDefinitionNode,
    SelectionSetNode,
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
from graph.engine.cost import Pages
from graph.errors import Code, refusal
from graph.settings import Settings

# The shape of a document's operations: how deep they nest, how many aliases and directives.

# Fragments spread inside fragments deeper than this are refused (the walk is recursive).
MAX_FRAGMENT_NESTING = 64


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


# How broad a document is, measured before validation: the fields it selects with every
# fragment counted wherever it is spread, and the comparisons that merging its repeated fields
# takes. Both bound what graphql-core's validation can cost.
#
# Validation is linear in the document except for one rule, OverlappingFieldsCanBeMerged: fields
# that end up at one response path (repeated, or brought together by fragments) are compared in
# pairs, and each compared pair of objects goes on to its subfields. `{ gpus { name } }` a
# thousand times over is 17 KB, within every other limit, and took seconds there. Here each
# operation is walked once with its fragments spread, and that walk is bounded too:
#
# - `fields`: every field of every operation, a fragment's fields counted wherever it is spread.
#   Counted per fragment first, so an expansion past the limit is never walked: the count costs
#   one visit of each node of the document.
# - `merges`: at each response path where g fields meet, g(g-1)/2 comparisons, and g-1 for each
#   field gathered under the path (a compared pair goes through one side's subfields); plus s²
#   for s fragment spreads gathered in one selection (fragments are compared in pairs). A
#   document without repeated fields or fragments spread side by side makes none.
#
# graphql-core compares only pairs of fields that meet at one response path, each at most once
# (it remembers the fragments it compared), so its work is within a constant of
# `fields + merges` (tests/test_adversarial_validation.py holds it to that), and the walk here
# costs O(fields). A document whose fragments are unused, unknown or spread in a cycle is
# invalid whatever its breadth: `fragment_problem` finds it first, in one visit of each node.


def fragment_problem(document: DocumentNode) -> bool:
    """Whether a fragment is spread but not defined, defined but never spread from an
    operation, or spread inside itself: found in one visit of each node."""
    fragments = {
        d.name.value: d for d in document.definitions if isinstance(d, FragmentDefinitionNode)
    }
    spreads = {name: _spreads(f.selection_set) for name, f in fragments.items()}
    reached: set[str] = set()
    for operation in document.definitions:
        if isinstance(operation, OperationDefinitionNode):
            stack = _spreads(operation.selection_set)
            while stack:
                name = stack.pop().name.value
                if name not in fragments:
                    return True
                if name not in reached:
                    reached.add(name)
                    stack.extend(spreads[name])
    if len(reached) != len(fragments):
        return True
    # Acyclic when every fragment can be put after all those spreading it (Kahn's algorithm).
    spread_by = dict.fromkeys(fragments, 0)
    for inner in spreads.values():
        for spread in inner:
            spread_by[spread.name.value] += 1
    ready = [name for name, count in spread_by.items() if count == 0]
    ordered = 0
    while ready:
        ordered += 1
        for spread in spreads[ready.pop()]:
            spread_by[spread.name.value] -= 1
            if spread_by[spread.name.value] == 0:
                ready.append(spread.name.value)
    return ordered != len(fragments)


def _spreads(selection_set: SelectionSetNode) -> list[FragmentSpreadNode]:
    found: list[FragmentSpreadNode] = []
    stack = [selection_set]
    while stack:
        for selection in stack.pop().selections:
            if isinstance(selection, FragmentSpreadNode):
                found.append(selection)
            elif isinstance(selection, FieldNode | InlineFragmentNode) and selection.selection_set:
                stack.append(selection.selection_set)
    return found


class _Over(Exception):
    """The merges went past their limit: the walk stops there."""


class _Counter:
    """Counts over a document. `merge` needs one whose fragments are all known and acyclic and
    whose fields nest within the depth limit (checked before: `Measure`)."""

    def __init__(self, document: DocumentNode, max_fields: int, max_merges: int) -> None:
        self.fragments = {
            d.name.value: d for d in document.definitions if isinstance(d, FragmentDefinitionNode)
        }
        self.max_fields, self.max_merges = max_fields, max_merges
        self._sizes: dict[str, int] = {}
        self._counting: set[str] = set()
        self.merges = 0

    def size(self, selection_set: SelectionSetNode) -> int:
        """Fields, fragments counted wherever spread (each fragment counted once; unknown ones
        and cycles as nothing), up to max_fields + 1."""
        total = 0
        for selection in selection_set.selections:
            if isinstance(selection, FieldNode):
                total += 1
                if selection.selection_set is not None:
                    total += self.size(selection.selection_set)
            elif isinstance(selection, InlineFragmentNode):
                total += self.size(selection.selection_set)
            elif isinstance(selection, FragmentSpreadNode):
                total += self.fragment_size(selection.name.value)
            if total > self.max_fields:  # a fragment may spread exponentially: stop here
                return self.max_fields + 1
        return total

    def fragment_size(self, name: str) -> int:
        size = self._sizes.get(name)
        if size is None:
            fragment = self.fragments.get(name)
            if fragment is None or name in self._counting:
                return 0
            if len(self._counting) >= MAX_FRAGMENT_NESTING:
                raise FragmentsTooDeep
            self._counting.add(name)
            try:
                size = self._sizes[name] = self.size(fragment.selection_set)
            finally:
                self._counting.discard(name)
        return size

    def merge(self, selection_sets: Iterable[SelectionSetNode]) -> int:
        """The comparisons merging the fields these selection sets gather at one response path
        (and below it) take, added to `merges`; returns how many fields they gather."""
        by_name: dict[str, list[FieldNode]] = {}
        spreads = 0
        stack = list(selection_sets)
        while stack:  # inline fragments and spreads flattened, as validation collects fields
            for selection in stack.pop().selections:
                if isinstance(selection, FieldNode):
                    name = selection.alias.value if selection.alias else selection.name.value
                    by_name.setdefault(name, []).append(selection)
                elif isinstance(selection, InlineFragmentNode):
                    stack.append(selection.selection_set)
                elif isinstance(selection, FragmentSpreadNode):
                    spreads += 1
                    stack.append(self.fragments[selection.name.value].selection_set)
        added = spreads * spreads
        gathered = 0
        for fields in by_name.values():
            gathered += len(fields)
            below = [f.selection_set for f in fields if f.selection_set is not None]
            under = self.merge(below) if below else 0
            repeats = len(fields) - 1
            added += repeats * len(fields) // 2 + repeats * under
        self.merges += added
        if self.merges > self.max_merges:
            raise _Over
        return gathered


def selected_fields(document: DocumentNode, max_fields: int) -> int:
    """How many fields the document's operations select, a fragment's counted wherever it is
    spread, up to max_fields + 1: one visit of each node (FragmentsTooDeep when fragments are
    spread inside fragments past MAX_FRAGMENT_NESTING)."""
    counter = _Counter(document, max_fields, 0)
    fields = 0
    for definition in document.definitions:
        if isinstance(definition, OperationDefinitionNode):
            fields += counter.size(definition.selection_set)
            if fields > max_fields:
                return max_fields + 1
    return fields


def field_merges(document: DocumentNode, max_merges: int) -> int:
    """The comparisons merging the document's repeated fields takes, up to max_merges + 1,
    for a document without `fragment_errors`, within the depth and field limits (the walk is
    as long as the fields selected)."""
    counter = _Counter(document, 0, max_merges)
    try:
        for definition in document.definitions:
            if isinstance(definition, OperationDefinitionNode):
                counter.merge([definition.selection_set])
    except _Over:
        return max_merges + 1
    return counter.merges


def most_arguments(document: DocumentNode) -> tuple[int, int]:
    """The most arguments given to one field or directive, and the most fields given in one
    input object literal, anywhere in the document (validation's work on one field's
    arguments grows with the square of their number)."""
    arguments = fields = 0
    stack: list[Any] = list(document.definitions)
    while stack:
        node = stack.pop()
        if isinstance(node, ObjectValueNode):
            fields = max(fields, len(node.fields))
            stack.extend(f.value for f in node.fields)
            continue
        if isinstance(node, ListValueNode):
            stack.extend(node.values)
            continue
        for directive in getattr(node, "directives", None) or ():
            arguments = max(arguments, len(directive.arguments or ()))
            stack.extend(a.value for a in directive.arguments or ())
        if isinstance(node, FieldNode):
            arguments = max(arguments, len(node.arguments or ()))
            stack.extend(a.value for a in node.arguments or ())
        if isinstance(node, OperationDefinitionNode):
            stack.extend(
                v.default_value for v in node.variable_definitions or () if v.default_value
            )
        selection_set = getattr(node, "selection_set", None)
        if selection_set is not None:
            stack.extend(selection_set.selections)
    return arguments, fields


# Validation: the limits first, then the rules.


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
    """TOO_MANY_FIELD_MERGES past the limit (`field_merges`)."""
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
    document's size and these limits (see `selected_fields` and `field_merges`). Touches
    nothing shared: a worker thread may run it."""
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
