"""How broad a document is, measured before validation: the fields it selects with every
fragment counted wherever it is spread, and the comparisons that merging its repeated fields
takes. Both bound what graphql-core's validation can cost.

Validation is linear in the document except for one rule, OverlappingFieldsCanBeMerged: fields
that end up at one response path (repeated, or brought together by fragments) are compared in
pairs, and each compared pair of objects goes on to its subfields. `{ gpus { name } }` a
thousand times over is 17 KB, within every other limit, and took seconds there. Here each
operation is walked once with its fragments spread, and that walk is bounded too:

- `fields`: every field of every operation, a fragment's fields counted wherever it is spread.
  Counted per fragment first, so an expansion past the limit is never walked: the count costs
  one visit of each node of the document.
- `merges`: at each response path where g fields meet, g(g-1)/2 comparisons, and g-1 for each
  field gathered under the path (a compared pair goes through one side's subfields); plus s²
  for s fragment spreads gathered in one selection (fragments are compared in pairs). A
  document without repeated fields or fragments spread side by side makes none.

graphql-core compares only pairs of fields that meet at one response path, each at most once
(it remembers the fragments it compared), so its work is within a constant of
`fields + merges` (tests/test_adversarial_validation.py holds it to that), and the walk here
costs O(fields). A document whose fragments are unused, unknown or spread in a cycle is
invalid whatever its breadth: `fragment_problem` finds it first, in one visit of each node.
"""

from __future__ import annotations

from collections.abc import Iterable
from typing import Any

from graphql import (
    DocumentNode,
    FieldNode,
    FragmentDefinitionNode,
    FragmentSpreadNode,
    InlineFragmentNode,
    ListValueNode,
    ObjectValueNode,
    OperationDefinitionNode,
    SelectionSetNode,
)

from graph.engine.shape import MAX_FRAGMENT_NESTING, FragmentsTooDeep


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
    whose fields nest within the depth limit (checked before: graph/engine/shape.py)."""

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
