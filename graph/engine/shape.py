"""The shape of a GraphQL document's operations: how deep they nest, how many aliases and
directives they use, with fragments counted wherever they are spread and each walked once."""

from __future__ import annotations

from collections import Counter
from collections.abc import Iterator, Mapping
from dataclasses import dataclass
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
    VariableNode,
)

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


def reads_variables(
    operation: OperationDefinitionNode, fragments: Mapping[str, Any], any_directive: bool = False
) -> bool:
    """Whether a directive in the operation or its fragments (graphql-core's fragment details,
    by name) has a variable in its arguments (or, with `any_directive`, is there at all)."""
    stack: list[Any] = [operation, *(f.definition for f in fragments.values())]
    while stack:
        node = stack.pop()
        for directive in getattr(node, "directives", None) or ():
            if any_directive or any(has_variable(a.value) for a in directive.arguments or ()):
                return True
        selection_set = getattr(node, "selection_set", None)
        if selection_set is not None:
            stack.extend(selection_set.selections)
    return False


def has_variable(value: Any) -> bool:
    """Whether a value (an argument's) holds a variable."""
    if isinstance(value, VariableNode):
        return True
    if isinstance(value, ListValueNode):
        return any(has_variable(v) for v in value.values)
    if isinstance(value, ObjectValueNode):
        return any(has_variable(f.value) for f in value.fields)
    return False
